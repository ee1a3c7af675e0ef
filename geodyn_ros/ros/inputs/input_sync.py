"""Stamp-matched inputs of ``geodyn_node`` (ROS-free: pure Python and numpy, unit-tested alone).

Every output of ``geodyn_node`` is computed from inputs whose stamps belong together, and carries
the stamp of the state it used. The rules (also in ``doc/reference/nodes.md``):

* **Per topic** (:class:`TopicBuffer`): a message is decoded into a scratch entry; only if it is
  accepted does it enter the topic's buffer, a bounded deque (``depth`` entries, the oldest
  dropped) in stamp order. Refused: a stamp earlier than the topic's newest accepted stamp (time
  went backwards), a stamp more than ``stale_timeout`` ahead of the node clock. A refused message
  changes nothing (it never becomes the topic's last stamp and never enters a match).
* **State pairs** (:class:`PairMatcher`, measured mode): ``odom`` and ``joint_states`` are matched
  by approximate time, as ``message_filters`` does: when a message arrives, its partner is the
  buffered message of the other topic whose stamp is nearest to it and within ``tolerance``
  (parameter ``sync_tolerance``). A matched pair is used once: it and everything older on both
  topics leave the buffers, and a later message stamped at or before the pair's stamp (a
  duplicate) is dropped. A message whose partner was lost, refused or is late by more than
  the buffer holds never matches: it costs the one cycle it belonged to, and never shifts the
  pairing (there is no "latest of each topic" state to go out of step). The pair's stamp is
  the newer of its two stamps.
* **Reference in measured mode** (:func:`select_reference`): the reference is *sampled*, not
  waited for (a feedforward must not wait for a slower reference stream): the newest buffered
  reference with ``stamp <= t + tolerance`` and ``stamp >= t - window``, where ``t`` is the pair's
  stamp and ``window`` is ``max_input_skew`` when that is > 0, else ``stale_timeout``. With
  ``max_input_skew > 0`` the reference may also be up to ``max_input_skew`` newer than ``t``.
  No such reference: the cycle is skipped and reported.
* **Reference and flat modes**: every accepted ``reference`` / ``flat_reference`` message is one
  input set (nothing to match).

The default ``sync_tolerance`` (0.4 ms) suits 1 kHz: it is below half the 1 ms period, so a
message has at most one candidate partner in a 1 kHz stream (two partners 1 ms apart cannot both
lie within +-0.4 ms of one stamp) and a neighbour sample can never be paired by mistake, while
producers that stamp the same instant with up to 0.4 ms of jitter still match. For a faster
stream choose a tolerance below half its period.

Buffer depth (:func:`buffer_depth`): the subscriptions' keep-last depth (``geodyn_node``'s
``input_depth``) + 2, at least 4. The transport holds at most ``input_depth`` undelivered samples
per topic, so a partner is either already buffered or among those; two more entries absorb the message being decoded and one of jitter. Memory and time per
message are O(depth).
"""
from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np

from ..wire.conversions import InputError

__all__ = ["DEFAULT_TOLERANCE", "TopicBuffer", "PairMatcher", "buffer_depth", "input_entry", "select_reference"]

#: Default ``sync_tolerance`` [s]: below half the period of a 1 kHz stream (module docstring).
DEFAULT_TOLERANCE = 0.0004


def buffer_depth(history_depth: int) -> int:
    """Entries kept per topic: the subscriptions' keep-last ``history_depth`` + 2, at least 4
    (module docstring)."""
    return max(4, int(history_depth) + 2)


def input_entry(topic: str, order: int, n: int, convert: bool = False) -> SimpleNamespace:
    """One buffer entry of ``geodyn_node``'s input ``topic`` at order ``order`` with ``n`` joints:
    the arrays its parser fills in place (``odom``: ``C`` (4, 4), ``V0`` (6,); ``joint_states``:
    ``q``, ``qd`` (n,); ``flat_reference``: ``com`` (r+5, 3), ``yaw`` (r+3,), ``Q`` (r+3, n);
    ``reference``: ``C``, ``V`` (r+2, 6), ``Q`` (r+3, n) and ``V_sp``, the spatial twist jet: ``V``
    itself unless ``convert`` (a non-spatial reference, converted once per message; ``converted``)."""
    r = order
    if topic == "odom":
        return SimpleNamespace(C=np.eye(4), V0=np.zeros(6))
    if topic == "joint_states":
        return SimpleNamespace(q=np.zeros(n), qd=np.zeros(n))
    if topic == "flat_reference":
        return SimpleNamespace(com=np.zeros((r + 5, 3)), yaw=np.zeros(r + 3), Q=np.zeros((r + 3, n)))
    V = np.zeros((r + 2, 6))
    return SimpleNamespace(C=np.eye(4), V=V, Q=np.zeros((r + 3, n)), converted=False,
                           V_sp=np.zeros((r + 2, 6)) if convert else V)


class TopicBuffer:
    """Accepted messages of one topic, newest last, at most ``depth`` of them.

    ``make_entry()`` builds one entry (any object, e.g. preallocated arrays a decoder fills in
    place). Decode into :attr:`scratch`, then call :meth:`accept`: the scratch entry enters the
    buffer and a free entry becomes the new scratch, so no message is copied. Entries are reused
    (at most ``depth + 1`` exist): an entry returned by :meth:`newest` or a match is valid until
    the next :meth:`accept` on this topic.
    """

    __slots__ = ("topic", "depth", "scratch", "items", "last_stamp", "received", "accepted", "_free",
                 "_make")

    def __init__(self, topic: str, depth: int, make_entry=dict):
        if int(depth) < 1:
            raise ValueError(f"depth: must be >= 1, got {depth}")
        self.topic = topic
        self.depth = int(depth)
        self._make = make_entry
        self._free: list = []
        self.scratch = make_entry()
        self.items: deque = deque()     # (stamp_ns, entry), ascending stamps
        self.last_stamp = -1            # newest accepted stamp [ns]; -1 = none
        self.received = False           # any message (good or bad) arrived
        self.accepted = 0               # messages accepted so far

    def check(self, stamp_ns: int, now_ns: int, ahead_ns: int) -> None:
        """Raise :class:`InputError` (naming the topic) if ``stamp_ns`` goes back in time on this
        topic or lies more than ``ahead_ns`` in the future of ``now_ns``."""
        if stamp_ns < self.last_stamp:
            raise InputError(f"{self.topic}: time went backwards (stamp {stamp_ns * 1e-9:.9f} s "
                             f"< previous {self.last_stamp * 1e-9:.9f} s)")
        if stamp_ns - now_ns > ahead_ns:
            raise InputError(f"{self.topic}: stamp {(stamp_ns - now_ns) * 1e-9:.4f} s in the future of the "
                             f"node clock (more than stale_timeout {ahead_ns * 1e-9:g} s; use_sim_time mismatch?)")

    def accept(self, stamp_ns: int, now_ns: int, ahead_ns: int):
        """Check the stamp (:meth:`check`), then move the scratch entry into the buffer under
        ``stamp_ns``; returns that entry. On a refusal nothing changes."""
        if stamp_ns < self.last_stamp or stamp_ns - now_ns > ahead_ns:   # (inline: one call less per message)
            self.check(stamp_ns, now_ns, ahead_ns)   # raises
        entry = self.scratch
        self.items.append((stamp_ns, entry))
        if len(self.items) > self.depth:
            self._free.append(self.items.popleft()[1])
        self.scratch = self._free.pop() if self._free else self._make()
        self.last_stamp = stamp_ns
        self.accepted += 1
        return entry

    def accepted_count(self) -> int:
        """The messages accepted so far (``geodyn_node``'s ``accepted[<topic>]`` on ``/diagnostics``)."""
        return self.accepted

    def newest(self):
        """``(stamp_ns, entry)`` of the newest buffered message, or None."""
        return self.items[-1] if self.items else None

    def drop_through(self, stamp_ns: int) -> None:
        """Remove every buffered message stamped ``<= stamp_ns`` (their entries are reused)."""
        items = self.items
        while items and items[0][0] <= stamp_ns:
            self._free.append(items.popleft()[1])

    def reset(self) -> None:
        """Forget every message and the last stamp (simulated time was reset; also call
        :meth:`PairMatcher.reset`)."""
        self.drop_through(2 ** 63)
        self.last_stamp = -1


class PairMatcher:
    """Approximate-time matching of two topics (``odom``, ``joint_states``), module docstring.

    ``tolerance_ns``: the largest stamp difference of a pair [ns].
    """

    __slots__ = ("a", "b", "tolerance_ns", "last")

    def __init__(self, a: TopicBuffer, b: TopicBuffer, tolerance_ns: int):
        if int(tolerance_ns) < 0:
            raise ValueError(f"tolerance_ns: must be >= 0, got {tolerance_ns}")
        self.a, self.b, self.tolerance_ns = a, b, int(tolerance_ns)
        self.last = -1    # stamp of the last pair (the newer of its two stamps) [ns]; -1 = none

    def match(self, new: TopicBuffer):
        """Match the newest message of ``new`` (one of the two buffers, just accepted) with the
        nearest buffered message of the other topic within the tolerance.

        Returns ``(stamp_a, entry_a, stamp_b, entry_b)`` (in the order of the constructor's
        topics) and removes the pair and everything older from both buffers; or None (the message
        stays buffered for a partner still to come). Entries stay valid until the next accept.
        """
        other = self.b if new is self.a else self.a
        s_new, e_new = new.items[-1]
        if s_new <= self.last:   # a repeat of a stamp already used in a pair: never a second output
            new.drop_through(s_new)
            return None
        best = None
        best_gap = self.tolerance_ns + 1
        for s, e in other.items:
            gap = abs(s - s_new)
            if gap < best_gap:   # strict: on a tie the older partner (the first seen) wins
                best, best_gap = (s, e), gap
        if best is None:
            return None
        s_other, e_other = best
        new.drop_through(s_new)
        other.drop_through(s_other)
        self.last = max(s_new, s_other)
        if new is self.a:
            return s_new, e_new, s_other, e_other
        return s_other, e_other, s_new, e_new

    def reset(self) -> None:
        """Forget the last pair's stamp (simulated time was reset)."""
        self.last = -1


def select_reference(ref: TopicBuffer, stamp_ns: int, before_ns: int, after_ns: int):
    """The reference for a state stamped ``stamp_ns``: the newest buffered message with
    ``stamp_ns - before_ns <= stamp <= stamp_ns + after_ns``, as ``(stamp, entry)``, or None."""
    hi, lo = stamp_ns + after_ns, stamp_ns - before_ns
    for s, e in reversed(ref.items):
        if s <= hi:
            return (s, e) if s >= lo else None
    return None
