"""The time rule of ``geodyn_px4_bridge`` (:class:`geodyn_ros.ros.px4.px4_wire.StampMapper`) and its
offboard protocol (:class:`geodyn_ros.ros.px4.offboard.OffboardProtocol`), without ROS traffic.

The references are constructed: samples taken at known times in the node's clock and delivered
after known delays, so the right stamp is known exactly (integers: exact comparisons)."""
from __future__ import annotations

import numpy as np
import pytest

from geodyn_ros.ros.px4.offboard import OffboardProtocol
from geodyn_ros.ros.px4.px4_wire import RESET_US, StampMapper
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


def test_the_stamp_is_late_by_the_smallest_delay_seen():
    rng = np.random.default_rng(1)
    delays = 2.0 + rng.exponential(3.0, 400)       # 2 ms at least, a tail of several ms
    delays[50] = 1.5                                # the smallest delay of the run, at sample 50
    out = _run(StampMapper(10_000 * MS), 1_700_000_000 * 10**9, delays)
    for k, (stamp, true) in enumerate(out):
        assert stamp <= true + int(delays[k] * MS)             # never after its receive time
        smallest = min(delays[:k + 1])
        assert stamp - true == int(smallest * MS), k          # exactly the smallest delay so far
    assert out[-1][0] - out[-1][1] == int(1.5 * MS)


def test_the_window_forgets_an_old_minimum():
    """A minimum older than two windows is forgotten: the offset follows a clock that drifts."""
    m = StampMapper(100 * MS)                      # 100 ms windows, samples every 10 ms
    delays = [1.0] + [5.0] * 60                    # one fast delivery, then 5 ms
    out = _run(m, 0, delays)
    assert out[5][0] - out[5][1] == 1 * MS          # within the first window: the 1 ms minimum
    assert out[-1][0] - out[-1][1] == 5 * MS        # 600 ms later: the old minimum is gone


def test_stale_repeated_and_restarted_samples():
    m = StampMapper(10_000 * MS)
    m(3_000_000, 2_000_000_000)
    with pytest.raises(InputError, match="not newer"):
        m(3_000_000, 2_010_000_000)                # repeated
    with pytest.raises(InputError, match="not newer"):
        m(2_000_000, 2_020_000_000)                # 1 s back (RESET_US): refused
    # PX4 restarted without time sync: its clock starts again near 0, more than RESET_US back
    s = m(500, 2_030_000_000)
    assert m.resets == 1 and s == 2_030_000_000     # a new estimate: the receive time itself
    assert RESET_US == 1_000_000


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
