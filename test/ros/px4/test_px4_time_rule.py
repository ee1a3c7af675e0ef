"""The time rule of ``geodyn_px4_bridge`` (:class:`geodyn_ros.ros.px4.px4_wire.StampMapper`) and its
offboard protocol (:class:`geodyn_ros.ros.px4.offboard.OffboardProtocol`), without ROS traffic.

The references are constructed: samples taken at known times in the node's clock and delivered
after known delays, so the right stamp is known exactly (integers: exact comparisons). The attacks
of issue 51: one sample dated 0.3 s, 0.8 s and 10 s ahead, one dated 10 s back, a first sample
dated ahead, a sample that must not move the reference (a reset_counter change); and the world's
clocks: PX4's running 1.2 % fast or slow (PX4 SITL's SIH, measured), PX4 rebooting, its time sync
stepping."""
from __future__ import annotations

import numpy as np
import pytest

from geodyn_ros.ros.px4.offboard import OffboardProtocol
from geodyn_ros.ros.px4.px4_wire import AHEAD_NS, RESYNC_SAMPLES, StampMapper
from geodyn_ros.ros.wire.conversions import InputError

MS = 1_000_000   # ns


def _run(mapper, clock_offset_ns, delays_ms, period_us=10_000, start_us=5_000_000):
    """Feed samples taken every ``period_us`` of PX4's clock, PX4's clock = node clock -
    ``clock_offset_ns``, each delivered ``delays_ms[k]`` later; the stamps and the true times."""
    out = []
    for k, d in enumerate(delays_ms):
        sample_us = start_us + k * period_us
        true_ns = 1000 * sample_us + clock_offset_ns
        out.append((mapper(sample_us, true_ns + int(d * MS)), true_ns))
    return out


def test_the_stamp_is_late_by_the_second_smallest_delay_seen():
    """One sample never sets the reference: the stamp is late by the second smallest delay so far,
    or by the sample's own delay when that is smaller (the stamp is never after the receive time)."""
    rng = np.random.default_rng(1)
    delays = 2.0 + rng.exponential(3.0, 400)       # 2 ms at least, a tail of several ms
    delays[50], delays[90] = 1.5, 1.7               # the two smallest delays of the run
    out = _run(StampMapper(10_000 * MS), 1_700_000_000 * 10**9, delays)
    for k, (stamp, true) in enumerate(out):
        assert stamp <= true + int(delays[k] * MS)             # never after its receive time
        seen = sorted(int(d * MS) for d in delays[:k + 1])
        second = seen[1] if k else seen[0]
        assert stamp - true == min(second, int(delays[k] * MS)), k
    assert out[-1][0] - out[-1][1] == int(1.7 * MS)


def test_the_window_forgets_an_old_minimum():
    """A minimum older than two windows is forgotten: the offset follows a clock that drifts."""
    m = StampMapper(100 * MS)                      # 100 ms windows, samples every 10 ms
    delays = [1.0, 1.0] + [5.0] * 60               # two fast deliveries, then 5 ms
    out = _run(m, 0, delays)
    assert out[5][0] - out[5][1] == 1 * MS          # within the first window: the 1 ms minimum
    assert out[-1][0] - out[-1][1] == 5 * MS        # 600 ms later: the old minimum is gone


def _stream(n, rng, offset_ns=1_700_000_000 * 10**9, period_us=10_000, start_us=5_000_000):
    """``n`` honest samples at 100 Hz: (sample_us, true_ns, receive_ns), delays of 2 ms + exp(1 ms)."""
    out = []
    for k in range(n):
        s = start_us + k * period_us
        true = 1000 * s + offset_ns
        out.append((s, true, true + int((2.0 + rng.exponential(1.0)) * MS)))
    return out


@pytest.mark.parametrize("ahead_s", [0.3, 0.8, 10.0])
def test_one_future_dated_sample_is_refused_and_moves_nothing(ahead_s):
    """The issue's attack: one sample dated ahead of its real time (on main, 0.8 s ahead was
    forwarded, the next 67 good samples refused as 'not newer' and the 94 after them stamped 789 ms
    before their sample). Here it is refused, and every good sample, before and after, is forwarded
    with true sample time <= stamp <= receive time."""
    rng = np.random.default_rng(int(ahead_s * 10))
    m = StampMapper(1000 * MS)
    stream = _stream(400, rng)
    stamps = []
    for k, (s, true, rec) in enumerate(stream):
        if k == 150:
            before = (m.offset_ns, m.last_us)
            bad = s + int(ahead_s * 1e6)             # PX4 "took" it ahead_s later than it did
            with pytest.raises(InputError, match="ahead of the time rule's reference"):
                m(bad, rec)
            assert (m.offset_ns, m.last_us) == before
        stamp = m(s, rec)
        assert true <= stamp <= rec, k
        stamps.append(stamp)
    assert all(b > a for a, b in zip(stamps, stamps[1:]))        # increasing with the samples
    assert m.resets == 0


def test_a_sample_dated_10_s_back_is_refused_and_restarts_nothing():
    """On main a jump back of more than 1 s restarted the estimate at once: one stale sample did."""
    rng = np.random.default_rng(5)
    m = StampMapper(1000 * MS)
    for k, (s, true, rec) in enumerate(_stream(300, rng)):
        if k == 100:
            with pytest.raises(InputError, match="not newer"):
                m(s - 10_000_000, rec)
        assert true <= m(s, rec) <= rec
    assert m.resets == 0


def test_a_future_dated_first_sample_costs_resync_samples_only():
    """No reference yet: the first sample is taken as it comes, 0.8 s ahead. The good samples after it
    are not newer; RESYNC_SAMPLES of them in a row restart the rule from them, and from then on the
    bound holds. The poisoned sample's own stamp is its receive time (never before the sample)."""
    rng = np.random.default_rng(8)
    m = StampMapper(1000 * MS)
    stream = _stream(200, rng)
    s0, true0, rec0 = stream[0]
    assert m(s0 + 800_000, rec0) == rec0
    refused = 0
    for s, true, rec in stream[1:]:
        try:
            stamp = m(s, rec)
        except InputError:
            refused += 1
            continue
        assert true <= stamp <= rec
    assert refused == RESYNC_SAMPLES - 1 and m.resets == 1


def test_a_sample_outside_the_reference_moves_nothing():
    """``reference=False`` (the bridge's reset_counter change): stamped, its offset not used, even
    ahead by less than AHEAD_NS (forwarded, stamped at its receive time)."""
    rng = np.random.default_rng(9)
    m = StampMapper(1000 * MS)
    stream = _stream(200, rng)
    for k, (s, true, rec) in enumerate(stream):
        if k == 100:
            before = m.offset_ns
            early = rec - (AHEAD_NS // 2)            # it arrives 10 ms before the delay the rule knows
            assert m(s, early, reference=False) == early
            assert m.offset_ns == before
            continue
        assert true <= m(s, rec) <= rec


def test_two_samples_slightly_ahead_move_the_reference_by_at_most_ahead_ns():
    rng = np.random.default_rng(10)
    m = StampMapper(1000 * MS)
    for k, (s, true, rec) in enumerate(_stream(300, rng)):
        if k in (100, 101):
            rec -= AHEAD_NS - 3 * MS                 # 2 ms + delay - 17 ms: 15 ms ahead of its real time at most
        stamp = m(s, rec)
        assert true - AHEAD_NS <= stamp <= rec


@pytest.mark.parametrize("rate", [1.012, 1 / 1.012])
def test_a_drifting_px4_clock_is_followed_without_refusals(rate):
    """PX4's clock 1.2 % fast or slow of the node's (SIH, measured): no sample is refused, none is
    stamped after its receive time, and none earlier than the drift over two windows before it."""
    rng = np.random.default_rng(11)
    m = StampMapper(1000 * MS)
    for k in range(1500):
        true = 2_000_000_000 + k * 10 * MS
        s = int(true * rate) // 1000
        rec = true + int((2.0 + rng.exponential(1.0)) * MS)
        stamp = m(s, rec)
        assert true - 2 * 1000 * MS * abs(rate - 1) - MS <= stamp <= rec
    assert m.resets == 0


@pytest.mark.parametrize("step_us", [-30_000_000, 5_000_000])
def test_a_real_clock_change_restarts_the_rule_after_resync_samples(step_us):
    """PX4 rebooted without time sync (its clock 30 s back) or its time sync stepped 5 s forward:
    the samples after it agree with each other, not with the reference; RESYNC_SAMPLES in a row
    restart the rule, and the stamps are right again (the true time <= stamp <= receive)."""
    rng = np.random.default_rng(12)
    m = StampMapper(1000 * MS)
    stream = _stream(300, rng)
    refused = 0
    for k, (s, true, rec) in enumerate(stream):
        if k >= 100:
            s += step_us
        try:
            stamp = m(s, rec)
        except InputError:
            refused += 1
            continue
        assert true <= stamp <= rec, k
    assert refused == RESYNC_SAMPLES - 1 and m.resets == 1


def test_repeated_samples_never_resync():
    """A replayed sample (the same timestamp_sample, again and again) is not a clock change."""
    m = StampMapper(1000 * MS)
    m(3_000_000, 2_000_000_000)
    m(3_010_000, 2_010_000_000)
    for k in range(3 * RESYNC_SAMPLES):
        with pytest.raises(InputError, match="not newer"):
            m(3_000_000, 2_020_000_000 + k * 10 * MS)
    assert m.resets == 0


def test_protocol_streams_only_while_commands_are_fresh():
    pr = OffboardProtocol(300 * MS, 1000 * MS, 2000 * MS)
    assert not pr.streaming and pr.tick(0) == []
    assert "streaming" in pr.command(0)[0] and pr.streaming
    assert pr.command(100 * MS) == [] and pr.tick(350 * MS) == [] and pr.streaming
    lines = pr.tick(401 * MS)                       # 301 ms after the last command
    assert not pr.streaming and "STOPPED" in lines[0] and "COM_OF_LOSS_T" in lines[0]
    assert pr.tick(500 * MS) == []                  # said once
    assert pr.command(600 * MS) and pr.streaming    # resumes


def test_protocol_actions_and_their_results():
    pr = OffboardProtocol(300 * MS, 1000 * MS, 2000 * MS)
    assert "no vehicle_status" in pr.request("offboard", 0)
    assert pr.request("disarm", 0)[:3] == (400, 0.0, 0.0)          # always sent (broadcast target 0)
    pr.on_status(1, 2, False, 7, 3)
    assert "no fresh cmd/rotor_speeds" in pr.request("arm", 0)
    pr.command(0)
    assert "less than offboard_warmup" in pr.request("offboard", 500 * MS)
    for t in range(0, 1100, 100):
        pr.command(t * MS)
    assert pr.request("offboard", 1100 * MS) == (176, 1.0, 6.0, 7, 3)
    assert any("offboard: confirmed" in s for s in pr.on_status(1, 14, False, 7, 3))
    assert pr.request("arm", 1100 * MS) == (400, 1.0, 0.0, 7, 3)
    pr.command(3000 * MS)
    lines = pr.tick(3200 * MS)                       # 2.1 s after the arm request
    assert any("arm: NOT confirmed" in s for s in lines)
    with pytest.raises(ValueError, match="action"):
        pr.request("takeoff", 0)
