"""Stamp matching of ``geodyn_node``'s inputs (:mod:`geodyn_ros.ros.inputs.input_sync`), without ROS.

Generated 1 kHz streams of ``odom`` and ``joint_states`` (sample ``k`` stamped ``k`` ms plus a
seeded jitter of at most 0.15 ms per message), delivered through a model of the node's callback
(decode -> accept -> match), with every perturbation at every position: a message dropped, refused
by its decoder, duplicated, delivered late (after later messages of its own topic: refused as
"time went backwards") or late across topics, and gaps of 1 s.

The oracle is independent of the matcher: it knows the sample index ``k`` of every message (the
matcher only sees stamps) and says which samples are *complete* (both messages accepted: delivered,
decoded, stamp not earlier than the newest accepted one of its topic). Each complete sample must
give exactly one pair, of the two messages of that sample, in stamp order, and nothing else may
be paired: a lost or refused message costs its own sample only. The jitter (<= 0.15 ms, so two
messages of one sample differ by <= 0.3 ms and of neighbour samples by >= 0.7 ms) and the
tolerance (0.4 ms, the node's default) make "the same sample" decidable from stamps; the test
would fail on any pairing of neighbour samples.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from geodyn_ros.ros.wire.conversions import InputError
from geodyn_ros.ros.inputs.input_sync import (DEFAULT_TOLERANCE, PairMatcher, TopicBuffer, buffer_depth,
                                       select_reference)

MS = 1_000_000
TOL = int(round(DEFAULT_TOLERANCE * 1e9))
DEPTH = buffer_depth(2)      # a shallow input_depth: the buffer's bound is reached quickly
AHEAD = 10**18               # no future check here (the node clock is not modelled)
TOPICS = ("odom", "joint_states")


def _stream(n, seed, gap_at=None):
    """Delivery-ordered messages ``(topic, k, stamp, ok)`` of ``n`` samples; a 1 s gap before
    sample ``gap_at``; the two messages of a sample in a seeded order (cross-topic reorder)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        base = 1000 * MS + k * MS + (1000 * MS if gap_at is not None and k >= gap_at else 0)
        pair = [(t, k, base + int(rng.integers(-150_000, 150_001)), True) for t in TOPICS]
        if rng.random() < 0.5:
            pair.reverse()
        out += pair
    return out


def _run(events, depth=DEPTH):
    """The node's callback on ``events``; returns the pairs as ``(k_odom, k_js, stamp_odom, stamp_js)``."""
    bufs = {t: TopicBuffer(t, depth, make_entry=lambda: [None]) for t in TOPICS}
    matcher = PairMatcher(bufs["odom"], bufs["joint_states"], TOL)
    pairs = []
    for topic, k, stamp, ok in events:
        buf = bufs[topic]
        buf.scratch[0] = k               # "decode" into the scratch entry
        if not ok:
            continue                      # the decoder refused the message: nothing accepted
        try:
            buf.accept(stamp, 0, AHEAD)
        except InputError:
            continue
        m = matcher.match(buf)
        if m is not None:
            pairs.append((m[1][0], m[3][0], m[0], m[2]))
    return pairs


def _complete(events):
    """Oracle: the samples whose two messages were both accepted (ok, stamp not earlier than the
    newest accepted one of the topic), in order."""
    newest = {t: -1 for t in TOPICS}
    got = {t: set() for t in TOPICS}
    for topic, k, stamp, ok in events:
        if ok and stamp >= newest[topic]:
            newest[topic] = stamp
            got[topic].add(k)
    return sorted(got["odom"] & got["joint_states"])


def _check(events, depth=DEPTH):
    pairs = _run(events, depth)
    for ko, kj, so, sj in pairs:
        assert ko == kj, f"sample {ko} of odom paired with sample {kj} of joint_states"
        assert abs(so - sj) <= TOL
    ks = [p[0] for p in pairs]
    assert ks == _complete(events), (ks, _complete(events))
    return pairs


N = 12    # samples per stream: every perturbation at every one of the 24 positions


def _perturbed(kind, pos, seed=0):
    """The stream with one perturbation of the message at ``pos``, and the samples it must cost."""
    ev = _stream(N, seed)
    cost = 1 if kind in ("drop", "refuse") else 0
    if kind == "drop":
        del ev[pos]
    elif kind == "refuse":
        ev[pos] = ev[pos][:3] + (False,)
    elif kind == "duplicate":
        ev.insert(pos + 1, ev[pos])
    elif kind == "late_in_topic":     # delivered after the next three messages of its own topic
        msg = ev.pop(pos)
        later = [i for i, e in enumerate(ev) if e[0] == msg[0] and i >= pos][:3]
        ev.insert((later[-1] + 1) if later else len(ev), msg)
        cost = 1 if later else 0      # the last message of its topic cannot be late
    elif kind == "late_across":       # delivered as late as possible without passing its own topic
        msg = ev.pop(pos)
        own = [i for i, e in enumerate(ev) if e[0] == msg[0] and i >= pos]
        ev.insert(own[0] if own else len(ev), msg)
    return ev, cost


@pytest.mark.parametrize("kind", ["drop", "refuse", "duplicate", "late_in_topic", "late_across"])
def test_one_perturbation_at_every_position_costs_only_its_sample(kind):
    for seed in range(3):
        for pos in range(2 * N):
            ev, cost = _perturbed(kind, pos, seed)
            pairs = _check(ev)
            # a message lost, refused or (within a topic) late costs its sample only; a duplicate
            # or a cross-topic delay within the buffer costs nothing
            assert N - len(pairs) == cost, (kind, pos, seed, N - len(pairs))


def test_two_perturbations_at_every_pair_of_positions():
    kinds = ("drop", "refuse", "duplicate")
    for k1, k2 in itertools.product(kinds, kinds):
        for p1 in range(0, 2 * N, 3):
            for p2 in range(p1 + 1, 2 * N, 2):
                ev2 = list(_perturbed(k1, p1)[0])
                j = min(p2, len(ev2) - 1)
                if k2 == "drop":
                    del ev2[j]
                elif k2 == "refuse":
                    ev2[j] = ev2[j][:3] + (False,)
                else:
                    ev2.insert(j + 1, ev2[j])
                _check(ev2)


@pytest.mark.parametrize("gap_at", range(1, N - 1))
def test_a_gap_of_one_second_never_locks_the_output_out(gap_at):
    for kind_pos in (None, 2 * gap_at - 1, 2 * gap_at):   # with the message before/after the gap lost
        ev = _stream(N, gap_at, gap_at=gap_at)
        if kind_pos is not None:
            del ev[kind_pos]
        pairs = _check(ev)
        assert pairs[-1][0] == N - 1    # the samples after the gap are paired


@pytest.mark.parametrize("lag", range(0, DEPTH + 3))
def test_one_topic_lagging_by_whole_samples(lag):
    """joint_states delivered ``lag`` samples ahead of odom: up to DEPTH - 1 samples every sample
    is paired (the buffer holds the partners); beyond, samples are lost but none is mispaired."""
    js = [e for e in _stream(N + lag, lag) if e[0] == "joint_states"]
    od = [e for e in _stream(N + lag, lag) if e[0] == "odom"]
    ev = js[:lag]
    for k in range(N + lag):
        if k < len(od):
            ev.append(od[k])
        if k + lag < len(js):
            ev.append(js[k + lag])
    pairs = _run(ev)
    assert all(ko == kj for ko, kj, _, _ in pairs)
    if lag < DEPTH:
        assert [p[0] for p in pairs] == list(range(N + lag))


def test_a_partner_later_than_the_buffer_costs_that_sample_only():
    ev = _stream(N, 7)
    i = next(i for i, e in enumerate(ev) if e[0] == "odom" and e[1] == 3)
    msg = ev.pop(i)
    j = max(i for i, e in enumerate(ev) if e[0] == "joint_states" and e[1] == 3 + DEPTH + 2)
    ev.insert(j + 1, msg)         # odom(3) arrives after joint_states 4..3+DEPTH+2: js(3) evicted
    pairs = _run(ev)
    assert all(ko == kj for ko, kj, _, _ in pairs)
    assert 3 not in [p[0] for p in pairs]


def test_random_lossy_streams():
    """Seeded streams with 1-5 % of the messages dropped, refused or duplicated, and random
    cross-topic delays up to the buffer: every pair right, every complete sample paired."""
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        ev = _stream(500, seed)
        p = rng.uniform(0.01, 0.05)
        out = []
        for e in ev:
            u = rng.random()
            if u < p / 3:
                continue
            if u < 2 * p / 3:
                e = e[:3] + (False,)
            out.append(e)
            if u > 1 - p / 3:
                out.append(e)
        _check(out)


def test_stamps_of_one_sample_beyond_the_tolerance_never_pair():
    a, b = TopicBuffer("odom", 4), TopicBuffer("joint_states", 4)
    m = PairMatcher(a, b, TOL)
    a.accept(10 * MS, 0, AHEAD)
    assert m.match(a) is None
    b.accept(10 * MS + TOL + 1, 0, AHEAD)
    assert m.match(b) is None
    b.accept(11 * MS, 0, AHEAD)
    a.accept(11 * MS + TOL, 0, AHEAD)   # 0.4 ms from 11 ms (matched), 1 ms from 10.4 ms
    s_a, _, s_b, _ = m.match(a)
    assert (s_a, s_b) == (11 * MS + TOL, 11 * MS)


def test_buffer_is_bounded_and_reuses_its_entries():
    made = []

    def make():
        made.append(object())
        return made[-1]

    buf = TopicBuffer("odom", 3, make)
    for k in range(100):
        buf.accept(k, 0, AHEAD)
    assert len(buf.items) == 3 and [s for s, _ in buf.items] == [97, 98, 99]
    assert len(made) == 4           # depth entries plus the scratch, reused ever after
    with pytest.raises(InputError, match="odom: time went backwards"):
        buf.accept(50, 0, AHEAD)
    assert buf.last_stamp == 99 and len(buf.items) == 3   # a refusal changes nothing
    with pytest.raises(InputError, match="in the future of the node clock"):
        buf.accept(10**9 + 1, 0, 10**9)
    assert buf.last_stamp == 99
    buf.reset()                     # simulated time reset: earlier stamps are accepted again
    buf.accept(5, 0, AHEAD)
    assert [s for s, _ in buf.items] == [5]
    with pytest.raises(ValueError, match="depth"):
        TopicBuffer("x", 0)
    with pytest.raises(ValueError, match="tolerance_ns"):
        PairMatcher(buf, buf, -1)


def test_buffer_depth_follows_input_depth():
    assert [buffer_depth(d) for d in (1, 2, 5, 10)] == [4, 4, 7, 12]


def test_reference_is_the_newest_within_the_window():
    """``select_reference`` against a brute-force filter of the buffered stamps, on random stamps."""
    rng = np.random.default_rng(1)
    for trial in range(200):
        buf = TopicBuffer("reference", DEPTH)
        stamps = np.cumsum(rng.integers(0, 3 * MS, size=rng.integers(0, 10)))
        for s in stamps:
            buf.accept(int(s), 0, AHEAD)
        kept = [int(s) for s in stamps][-DEPTH:]
        t = int(rng.integers(-MS, 30 * MS))
        before, after = int(rng.integers(0, 10 * MS)), int(rng.integers(0, MS))
        want = [s for s in kept if t - before <= s <= t + after]
        got = select_reference(buf, t, before, after)
        if not want:
            assert got is None
        else:
            assert got[0] == max(want)
            # only the newest reference not after t + after is a candidate: an older one is never
            # used when a newer one (within the bound) was received
            newest_ok = max(s for s in kept if s <= t + after)
            assert got[0] == newest_ok
