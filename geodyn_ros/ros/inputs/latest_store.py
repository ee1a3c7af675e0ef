"""``geodyn_node``'s measured inputs under ``input_policy: latest`` in arrays: one compiled call per message.

The rules are those of :mod:`.latest_inputs` and :mod:`.input_sync` (a cycle per accepted ``odom`` at
its stamp; the newest ``joint_states`` propagated to it within ``joint_states_max_age``; the newest
reference stamped at most ``sync_tolerance`` after the cycle and at most ``stale_timeout`` before
it; each topic's stamps never going back, none more than ``stale_timeout`` ahead of the node
clock). :class:`LatestStore` keeps everything those rules read in three arrays, so that one
compiled call per message applies them:

* ``I`` (int64): per topic its newest accepted stamp, its counts and its held sample; the
  reference ring (stamps and entry slots, as :class:`.input_sync.TopicBuffer` holds them, ``depth``
  entries); the learned shapes of the fast decoders; the ages of the inputs used
  (:class:`ArrayAgeStats`); what the last cycle used or why it stopped;
* ``F`` (float64): the inverse-dynamics work buffer with its outputs (``W^(0..r)``,
  ``tau^(0..r)``), the cycle's inputs (``C``, ``V^(0..r+1)``, ``Q^(0..r+2)``), two entries for
  ``odom`` (``C``, spatial ``V^(0)``) and ``joint_states`` (``q``, ``qd``), ``depth + 1`` reference
  entries (``C``, ``V``, the spatial ``V_sp`` of a converted one, ``Q``), the plausibility limits
  and the decoders' scratch;
* ``K`` (uint8, read-only to the kernels): the learned shapes' bytes.

:func:`js_message` and :func:`ref_message` decode a message of the learned shape
(:mod:`geodyn_ros.ros.wire.fast_inputs`, :mod:`geodyn_ros.ros.wire.typed_raw`: the same kernels and
checks as the node's other paths) and accept it; :func:`odom_message` also runs the cycle
(:func:`cycle`): the state at the odom stamp (:mod:`geodyn_ros.control.sensing`'s ``q + dt qd``),
the reference, the freshness rules, inverse dynamics
(:func:`geodyn_ros.algorithms.kernels.inverse.inverse_dynamics_into`, H-GRNE-FBS, paper Alg. 1-2)
and the ``feedforward/jet`` written into its serialized template with its NaN/Inf check. Each
returns a code (:data:`OK` and the others below): the kernels only ever accept. A message they do
not accept changes nothing but its topic's ``received`` flag, and the node takes its full path,
which decodes, refuses with the one precise line of before, or accepts through :func:`accept` and
:func:`cycle`, the same compiled rules. A cycle that stops says why (the code, and in ``I`` the
numbers of the line the node reports). The views (:attr:`LatestStore.topics`,
:meth:`LatestStore.entry`, ...) are for those paths and the node's summaries.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import njit, types

from ...algorithms.kernels import inverse as KI
from ..wire.conversions import InputError
from ..wire.fast_inputs import _joint_state, _odometry, _reference
from ..wire.raw_outputs import _fill_jet
from ..wire.rcl_counts import count_into
from ..wire.typed_raw import _fill_typed_jet, _typed_reference

__all__ = ["LatestStore", "ArrayAgeStats", "OK", "DECLINED", "REFUSED", "SUBS", "NO_CYCLE", "JS_NONE", "JS_AGE",
           "ODOM_FRESH", "NO_REF", "REF_FRESH", "CONVERT", "ID_DECLINED", "NONFINITE", "NOT_WRITTEN"]

# ----------------------------------------------------------------------------- codes
OK = 0            #: accepted (odom: the cycle ran, the jet is written, no other output has a subscriber)
DECLINED = 1      #: not the learned shape, or a check failed: the full path decides
REFUSED = 2       #: a stamp that goes back, or too far ahead of the node clock: nothing accepted
SUBS = 3          #: odom: as OK, but another output has a subscriber (or the counts are not known)
NO_CYCLE = 10     #: odom accepted, no cycle (rate_hz > 0: the timer runs them)
JS_NONE = 11      #: no joint_states yet
JS_AGE = 12       #: the newest joint_states is over its maximum age (``I[C_DETAIL]``: its age)
ODOM_FRESH = 13   #: the cycle's odom is stale or ahead of the node clock
NO_REF = 14       #: no reference in the window (``I[C_DETAIL]``: 1 if one was ever accepted)
REF_FRESH = 15    #: the reference is stale or ahead of the node clock
CONVERT = 16      #: the reference (slot ``I[C_SLOT]``) needs its conversion to spatial first
ID_DECLINED = 17  #: the inverse dynamics kernel declined the inputs (the validating path says why)
NONFINITE = 18    #: NaN/Inf in the outputs (nothing to publish)
NOT_WRITTEN = 19  #: the dynamics ran; the jet is not the spatial one the kernel writes

ODOM, JS, REF = 0, 1, 2
TOPICS = ("odom", "joint_states", "reference")
# I: per topic t at 8 t: newest accepted stamp, accepted count, received flag, held stamp, held slot,
# max |age| of the held sample [ns], entry size and first entry in F
T_LAST, T_ACCEPTED, T_RECEIVED, T_HELD, T_SLOT, T_MAX_AGE, T_SIZE, T_BASE = range(8)
G_STALE, G_AFTER, G_RATE_ZERO, G_CONVERT, G_JET, G_ORDER, G_N, G_DEPTH = range(24, 32)
R_COUNT, R_HEAD, R_SCRATCH, R_NFREE, R_STAMPS, R_SLOTS, R_FREE, R_CONV = range(32, 40)
C_T, C_ODOM, C_JS, C_REF, C_SLOT, C_DETAIL, M_STAMP = range(40, 47)   # M_STAMP: the last decoded stamp
A_TOTAL, A_COUNT, A_LARGEST = 48, 51, 54
F_ID, F_ID_SIZE, F_W, F_TAU, F_CIN, F_VIN, F_QIN, F_LIM = range(58, 66)
T_STAMP, T_ROWS, T_VALUES, T_KIND = range(68, 72)   # jet template: offsets in T; kind 0 typed, 1 layout
# the learned shapes (16 each): learned flag, then per decoder (offsets of keys in K, of int arrays in I,
# of the scratch in F)
D_ODOM = 72    # learned, key off, key len, start, total, pose, tmp off, tmp size
D_JS = 88      # learned, key off, key len, start, total, lay off (7), idx off, idx len, tmp off, tmp size
D_REF = 104    # learned, kind (0 typed, 1 layout), k1 off, len, k2 off, len, k3 off, len, lay off (7), ncol,
#                cols off, cols len, tmp off, tmp size
P_FN, P_PUB, S_COUNT = 120, 121, 124   # rcl's count function, the publishers asked (3), their counts (3)
HEADER = 128
#: clamp of the time windows [ns] (2^62: stamps and clocks stay below 2^61 until 2043, so sums cannot overflow)
_CLAMP = 2 ** 62

_B = types.Bytes(types.uint8, 1, "C", readonly=True)
_I8 = types.Array(types.int64, 1, "C")
_F8 = types.Array(types.float64, 1, "C")
_K8 = types.Array(types.uint8, 1, "C", readonly=True)
_T8 = types.Array(types.uint8, 1, "C")


# ----------------------------------------------------------------------------- compiled rules
@njit(types.int64(_I8, types.int64, types.int64, types.int64), cache=True, nogil=True)
def _accept(I, t, stamp, now):  # pragma: no cover (compiled)
    """Accept ``stamp`` on topic ``t`` (its entry decoded into the scratch slot): REFUSED (nothing
    changes) if it goes back or lies more than stale_timeout ahead of ``now``, else OK: the topic's
    newest stamp and count; odom / joint_states: the entry is held if newer than the held one;
    reference: it enters the ring (the oldest leaves beyond ``depth``)."""
    b = 8 * t
    I[M_STAMP] = stamp
    if stamp < I[b + T_LAST] or stamp - now > I[G_STALE]:
        return REFUSED
    I[b + T_LAST] = stamp
    I[b + T_ACCEPTED] += 1
    if t != REF:
        if I[b + T_HELD] < 0 or stamp > I[b + T_HELD]:   # an equal stamp keeps the sample held
            I[b + T_HELD] = stamp
            I[b + T_SLOT] = 1 - I[b + T_SLOT]             # the scratch slot becomes the held one
        return OK
    depth, count, head = I[G_DEPTH], I[R_COUNT], I[R_HEAD]
    slot = I[R_SCRATCH]
    I[I[R_CONV] + slot] = 0                                 # not converted (a new message)
    if count == depth:                                      # the oldest leaves; its slot is the next scratch
        I[R_SCRATCH] = I[I[R_SLOTS] + head]
        I[I[R_STAMPS] + head] = stamp
        I[I[R_SLOTS] + head] = slot
        I[R_HEAD] = (head + 1) % depth
    else:
        k = (head + count) % depth
        I[I[R_STAMPS] + k] = stamp
        I[I[R_SLOTS] + k] = slot
        I[R_COUNT] = count + 1
        I[R_NFREE] -= 1
        I[R_SCRATCH] = I[I[R_FREE] + I[R_NFREE]]
    return OK


@njit(types.int64(_I8, types.int64, types.int64), cache=True, nogil=True)
def _select(I, lo, hi):  # pragma: no cover (compiled)
    """The ring position of the newest reference stamped ``<= hi``, if it is ``>= lo``; else -1
    (:func:`.input_sync.select_reference`)."""
    depth, count, head = I[G_DEPTH], I[R_COUNT], I[R_HEAD]
    st = I[R_STAMPS]
    for i in range(count - 1, -1, -1):
        k = (head + i) % depth
        s = I[st + k]
        if s <= hi:
            return k if s >= lo else -1
    return -1


@njit(types.void(_I8, types.int64), cache=True, nogil=True, inline="always")
def _add_ages(I, t):  # pragma: no cover (compiled)
    """Count the ages ``t - stamp`` of the inputs used (:class:`ArrayAgeStats`)."""
    for i in range(3):
        a = t - I[C_ODOM + i]
        I[A_TOTAL + i] += a
        I[A_COUNT + i] += 1
        a = a if a >= 0 else -a
        if a > I[A_LARGEST + i]:
            I[A_LARGEST + i] = a


@njit(types.int64(_I8, _F8, _T8, types.int64, types.int64, types.boolean), cache=True, nogil=True)
def cycle(I, F, T, t, now, timer):  # pragma: no cover (compiled)
    """The measured cycle at time ``t`` [ns] (the odom stamp; ``timer``: the node clock, the
    cycle's ``C`` and ``V^(0)`` already written from the propagated odom): OK with the jet written,
    NOT_WRITTEN, or why it stops (module docstring); what it used in ``I[C_*]``."""
    stale = I[G_STALE]
    r, n = I[G_ORDER], I[G_N]
    cin, vin, qin = I[F_CIN], I[F_VIN], I[F_QIN]
    I[C_T] = t
    if not timer:   # the odom stamped t is the held one (equal stamps keep the first)
        o = I[T_BASE] + I[T_SLOT] * I[T_SIZE]
        for i in range(16):
            F[cin + i] = F[o + i]
        for i in range(6):
            F[vin + i] = F[o + 16 + i]
        I[C_ODOM] = I[T_HELD]
    js_stamp = I[8 + T_HELD]
    if js_stamp < 0:
        return JS_NONE
    age = t - js_stamp
    I[C_JS] = js_stamp
    I[C_DETAIL] = age
    if age > I[8 + T_MAX_AGE] or age < -I[8 + T_MAX_AGE]:
        return JS_AGE
    if not timer and (now - t > stale or t - now > stale):
        return ODOM_FRESH
    k = _select(I, t - stale, t + I[G_AFTER])
    if k < 0:
        I[C_DETAIL] = 1 if I[16 + T_ACCEPTED] > 0 else 0
        return NO_REF
    t_ref = I[I[R_STAMPS] + k]
    slot = I[I[R_SLOTS] + k]
    I[C_REF] = t_ref
    I[C_SLOT] = slot
    if now - t_ref > stale or t_ref - now > stale:
        return REF_FRESH
    if I[G_CONVERT] and I[I[R_CONV] + slot] == 0:
        return CONVERT
    # the state: q = q_js + dt qd_js (sensing.propagate_joints: qd dt, then + q), qd held; above
    # them the reference's rows: its spatial twist jet above V^(0), its joint jet above q, qd
    dt = np.float64(age) * 1e-9
    j = I[8 + T_BASE] + I[8 + T_SLOT] * I[8 + T_SIZE]
    for i in range(n):
        F[qin + i] = F[j + n + i] * dt + F[j + i]
        F[qin + n + i] = F[j + n + i]
    e = I[16 + T_BASE] + slot * I[16 + T_SIZE]
    v = e + 16 + (6 * (r + 2) if I[G_CONVERT] else 0)   # V_sp of a converted reference, else V
    for i in range(6, 6 * (r + 2)):
        F[vin + i] = F[v + i]
    q = e + 16 + 12 * (r + 2)
    for i in range(2 * n, n * (r + 3)):
        F[qin + i] = F[q + i]
    ws = F[I[F_ID]:I[F_ID] + I[F_ID_SIZE]]
    C = F[cin:cin + 16].reshape((4, 4))
    V = F[vin:vin + 6 * (r + 2)].reshape((r + 2, 6))
    Q = F[qin:qin + n * (r + 3)].reshape((r + 3, n))
    if KI.inverse_dynamics_into(ws, C, V, Q, r) != 0:
        return ID_DECLINED
    if not I[G_JET]:
        return NOT_WRITTEN
    W = F[I[F_W]:I[F_W] + 6 * (r + 1)].reshape((r + 1, 6))
    tau = F[I[F_TAU]:I[F_TAU] + n * (r + 1)].reshape((r + 1, n))
    if I[T_KIND] == 0:
        ok = _fill_typed_jet(T[I[T_STAMP]:I[T_STAMP] + 8].view(np.uint32),
                             T[I[T_ROWS]:I[T_ROWS] + 48 * (r + 1)].view(np.float64).reshape((r + 1, 6)),
                             T[I[T_VALUES]:I[T_VALUES] + 8 * n * (r + 1)].view(np.float64), t, W, tau)
    else:
        ok = _fill_jet(T[I[T_VALUES]:I[T_VALUES] + 8 * (2 + (6 + n) * (r + 1))].view(np.float64), t, W, tau)
    if not ok:
        return NONFINITE
    _add_ages(I, t)
    return OK


@njit(types.void(_I8, types.int64), cache=True, nogil=True)
def add_ages(I, t):  # pragma: no cover (compiled)
    """:func:`_add_ages` from Python (the cycles the node finishes itself)."""
    _add_ages(I, t)


@njit(types.int64(_I8), cache=True, nogil=True)
def quiet(I):  # pragma: no cover (compiled)
    """OK if none of the publishers of ``I[P_PUB:P_PUB + 3]`` (0: none) has a subscriber
    (:mod:`geodyn_ros.ros.wire.rcl_counts`), else SUBS (also when the counts cannot be asked)."""
    fn = I[P_FN]
    if fn == 0:
        return SUBS
    base = I.ctypes.data
    for k in range(3):
        pub = I[P_PUB + k]
        if pub != 0 and (count_into(fn, pub, base + 8 * (S_COUNT + k)) != 0 or I[S_COUNT + k] != 0):
            return SUBS
    return OK


@njit(types.int64(_I8, types.int64, types.int64, types.int64), cache=True, nogil=True)
def accept(I, t, stamp, now):  # pragma: no cover (compiled)
    """:func:`_accept` from Python (a message the full path decoded)."""
    return _accept(I, t, stamp, now)


@njit(types.int64(_B, types.int64, _I8, _F8, _K8), cache=True, nogil=True)
def js_message(raw, now, I, F, K):  # pragma: no cover (compiled)
    """A ``joint_states`` message of the learned shape into the scratch entry, then accepted."""
    I[8 + T_RECEIVED] = 1
    if not I[D_JS]:
        return DECLINED
    n = I[G_N]
    o = I[8 + T_BASE] + (1 - I[8 + T_SLOT]) * I[8 + T_SIZE]
    d = D_JS
    lay, idx, tmp = I[d + 5], I[d + 6], I[d + 8]
    stamp = _joint_state(raw, K[I[d + 1]:I[d + 1] + I[d + 2]], I[d + 3], I[d + 4], I[lay:lay + 7],
                         I[idx:idx + I[d + 7]], F[I[F_LIM]:I[F_LIM] + 4], F[o:o + n], F[o + n:o + 2 * n],
                         F[tmp:tmp + I[d + 9]])
    if stamp < 0:
        return DECLINED
    return _accept(I, JS, stamp, now)


@njit(types.int64(_B, types.int64, _I8, _F8, _K8), cache=True, nogil=True)
def ref_message(raw, now, I, F, K):  # pragma: no cover (compiled)
    """A ``reference`` message of the learned shape into the scratch entry, then accepted."""
    I[16 + T_RECEIVED] = 1
    d = D_REF
    if not I[d]:
        return DECLINED
    r, n = I[G_ORDER], I[G_N]
    e = I[16 + T_BASE] + I[R_SCRATCH] * I[16 + T_SIZE]
    C = F[e:e + 16].reshape((4, 4))
    V = F[e + 16:e + 16 + 6 * (r + 2)].reshape((r + 2, 6))
    q = e + 16 + 12 * (r + 2)
    Q = F[q:q + n * (r + 3)].reshape((r + 3, n))
    lay, cols, tmp = I[d + 8], I[d + 10], I[d + 12]
    k1 = K[I[d + 2]:I[d + 2] + I[d + 3]]
    if I[d + 1] == 0:
        stamp = _typed_reference(raw, k1, K[I[d + 4]:I[d + 4] + I[d + 5]], K[I[d + 6]:I[d + 6] + I[d + 7]],
                                 I[lay:lay + 7], I[d + 9], I[cols:cols + I[d + 11]], F[I[F_LIM]:I[F_LIM] + 4],
                                 C, V, Q, F[tmp:tmp + I[d + 13]])
    else:
        stamp = _reference(raw, k1, I[lay], I[lay + 1], I[lay + 2], I[d + 9], I[cols:cols + I[d + 11]],
                           F[I[F_LIM]:I[F_LIM] + 4], C, V, Q, F[tmp:tmp + I[d + 13]])
    if stamp < 0:
        return DECLINED
    return _accept(I, REF, stamp, now)


@njit(types.int64(_B, types.int64, _I8, _F8, _K8, _T8), cache=True, nogil=True)
def odom_message(raw, now, I, F, K, T):  # pragma: no cover (compiled)
    """An ``odom`` message of the learned shape into the scratch entry, accepted, then (rate_hz 0)
    the cycle at its stamp (:func:`cycle`)."""
    I[T_RECEIVED] = 1
    if not I[D_ODOM]:
        return DECLINED
    o = I[T_BASE] + (1 - I[T_SLOT]) * I[T_SIZE]
    d = D_ODOM
    tmp = I[d + 6]
    stamp = _odometry(raw, K[I[d + 1]:I[d + 1] + I[d + 2]], I[d + 3], I[d + 4], I[d + 5], F[I[F_LIM]:I[F_LIM] + 4],
                      F[o:o + 16].reshape((4, 4)), F[o + 16:o + 22], F[tmp:tmp + I[d + 7]])
    if stamp < 0:
        return DECLINED
    code = _accept(I, ODOM, stamp, now)
    if code != OK:
        return code
    if not I[G_RATE_ZERO]:
        return NO_CYCLE
    code = cycle(I, F, T, stamp, now, False)
    return code if code != OK else quiet(I)


# ----------------------------------------------------------------------------- Python side
class _TopicView:
    """The :class:`.input_sync.TopicBuffer` attributes the node reads, on a topic of the store."""

    __slots__ = ("topic", "_s", "_b")

    def __init__(self, store, t: int, name: str | None = None):
        self.topic, self._s, self._b = name or TOPICS[t], store, 8 * t

    @property
    def received(self) -> bool:
        return bool(self._s.I[self._b + T_RECEIVED])

    @property
    def accepted(self) -> int:
        return int(self._s.I[self._b + T_ACCEPTED])

    def accepted_count(self) -> int:
        """:meth:`.input_sync.TopicBuffer.accepted_count` (``accepted[<topic>]`` on ``/diagnostics``)."""
        return self.accepted

    @property
    def last_stamp(self) -> int:
        return int(self._s.I[self._b + T_LAST])

    def newest(self):
        """``(stamp, None)`` of the newest reference buffered, or None (the reference only)."""
        I = self._s.I
        if self._b != 16 or I[R_COUNT] == 0:
            return None
        k = (I[R_HEAD] + I[R_COUNT] - 1) % I[G_DEPTH]
        return int(I[I[R_STAMPS] + k]), None

    def check(self, stamp_ns: int, now_ns: int, ahead_ns: int) -> None:
        """Raise the :class:`InputError` of :meth:`.input_sync.TopicBuffer.check`."""
        last = self.last_stamp
        if stamp_ns < last:
            raise InputError(f"{self.topic}: time went backwards (stamp {stamp_ns * 1e-9:.9f} s "
                             f"< previous {last * 1e-9:.9f} s)")
        if stamp_ns - now_ns > ahead_ns:
            raise InputError(f"{self.topic}: stamp {(stamp_ns - now_ns) * 1e-9:.4f} s in the future of the "
                             f"node clock (more than stale_timeout {ahead_ns * 1e-9:g} s; use_sim_time mismatch?)")

    def reset(self) -> None:
        """Forget the newest stamp (and the buffered references): simulated time was reset."""
        self._s.I[self._b + T_LAST] = -1
        if self._b == 16:
            self._s._reset_ring()


class ArrayAgeStats:
    """:class:`.latest_inputs.AgeStats` of the store's counts (the cycles add them compiled)."""

    __slots__ = ("streams", "_s")

    def __init__(self, streams, store):
        self.streams, self._s = tuple(streams), store

    def notes(self) -> dict:
        I, out = self._s.I, {}
        for i, s in enumerate(self.streams):
            n = int(I[A_COUNT + i])
            out[f"input_age[{s}]"] = (f"mean {int(I[A_TOTAL + i]) / n * 1e-6:.3f} ms, max |age| "
                                      f"{int(I[A_LARGEST + i]) * 1e-6:.3f} ms over {n} cycles" if n
                                      else "no cycle in this period")
            I[A_TOTAL + i] = I[A_COUNT + i] = I[A_LARGEST + i] = 0
        return out


def _clamp(ns: int) -> int:
    return min(int(ns), _CLAMP)


class LatestStore:
    """The arrays of the module docstring for a model of ``n`` joints at order ``order``.

    Parameters
    ----------
    order, n : the derivative order and the model's joint count
    depth : references kept (:func:`.input_sync.buffer_depth`)
    limits : the plausibility limits (``LIMIT_NAMES`` -> value)
    stale_ns, after_ns : ``stale_timeout``; how much newer than the cycle a reference may be [ns]
    odom_max_age_ns, js_max_age_ns : the held samples' largest |age| [ns]
    rate_zero : a cycle per odom (``rate_hz`` 0)
    convert : the reference twist jet is not spatial (converted once per reference, by the node)
    jet : ``(bytearray, stamp, rows, values, kind)`` of the spatial ``feedforward/jet`` template the
        cycle writes (``stamp``: byte offset of (sec, nanosec); ``rows``, ``values``: byte offsets
        of the doubles; kind 0 typed, 1 the layout, ``values`` its data), or None (not written)
    """

    def __init__(self, order: int, n: int, depth: int, limits: dict, stale_ns: int, after_ns: int,
                 odom_max_age_ns: int, js_max_age_ns: int, rate_zero: bool, convert: bool, jet=None):
        self.order, self.n, self.depth, self.convert = order, n, int(depth), bool(convert)
        r = order
        self._sizes = (22, 2 * n, 16 + 12 * (r + 2) + n * (r + 3))
        self._spec = [None, None, None]             # the learned shapes (the fast decoders' spec())
        self._tmp = [13, 0, 0]                      # scratch capacity per decoder
        self._id = np.zeros(0)                      # the inverse dynamics buffer (set_model)
        self._id_out = (0, 0)
        self._lim = np.array([limits["max_position"], limits["max_speed"], limits["max_joint_rate"],
                              limits["max_input_magnitude"]], dtype=np.float64)
        self._extra = HEADER + 4 * depth + 1        # js lay (7), idx (n), reference lay (7), cols (n)
        self.I = np.zeros(self._extra + 14 + 2 * n, dtype=np.int64)
        I = self.I
        I[G_STALE], I[G_AFTER] = _clamp(stale_ns), _clamp(after_ns)
        I[G_RATE_ZERO], I[G_CONVERT], I[G_ORDER], I[G_N], I[G_DEPTH] = int(rate_zero), int(convert), r, n, depth
        I[T_MAX_AGE], I[8 + T_MAX_AGE] = _clamp(odom_max_age_ns), _clamp(js_max_age_ns)
        I[R_STAMPS], I[R_SLOTS], I[R_FREE], I[R_CONV] = HEADER, HEADER + depth, HEADER + 2 * depth, HEADER + 3 * depth
        for t in range(3):
            I[8 * t + T_LAST] = I[8 * t + T_HELD] = -1
            I[8 * t + T_SIZE] = self._sizes[t]
        self._reset_ring()
        self.T = np.zeros(1, dtype=np.uint8) if jet is None else np.frombuffer(jet[0], dtype=np.uint8)
        if jet is not None:
            I[G_JET], I[T_STAMP], I[T_ROWS], I[T_VALUES], I[T_KIND] = 1, jet[1], jet[2], jet[3], jet[4]
        self.K = np.zeros(0, dtype=np.uint8)
        self.K.flags.writeable = False
        self.F = None
        self.topics = {t: _TopicView(self, i) for i, t in enumerate(TOPICS)}
        self.ages = ArrayAgeStats(TOPICS, self)
        self._layout()

    # -- arrays
    def _layout(self) -> None:
        """(Re)allocate ``F`` for the current work buffer and scratch capacities, keeping the entries
        and the cycle's inputs, and make the views."""
        r, n, depth = self.order, self.n, self.depth
        I, old = self.I, self.F
        sizes = [self._id.shape[0], 16, 6 * (r + 2), n * (r + 3), 4, 2 * self._sizes[0], 2 * self._sizes[1],
                 (depth + 1) * self._sizes[2], *self._tmp]
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        F = np.zeros(offs[-1])
        if old is not None:   # everything between the work buffer and the scratch stays
            a, b = int(I[F_CIN]), int(I[16 + T_BASE]) + (depth + 1) * self._sizes[2]
            F[offs[1]:offs[1] + b - a] = old[a:b]
        F[:offs[1]] = self._id
        F[offs[4]:offs[4] + 4] = self._lim
        I[F_ID], I[F_ID_SIZE] = 0, sizes[0]
        I[F_W], I[F_TAU] = self._id_out
        I[F_CIN], I[F_VIN], I[F_QIN], I[F_LIM] = offs[1], offs[2], offs[3], offs[4]
        I[T_BASE], I[8 + T_BASE], I[16 + T_BASE] = offs[5], offs[6], offs[7]
        I[D_ODOM + 6], I[D_JS + 8], I[D_REF + 12] = offs[8], offs[9], offs[10]
        self.F = F
        e, f = int(I[F_W]), int(I[F_TAU])
        self.C = F[offs[1]:offs[1] + 16].reshape(4, 4)
        self.V = F[offs[2]:offs[3]].reshape(r + 2, 6)
        self.Q = F[offs[3]:offs[4]].reshape(r + 3, n)
        self.W = F[e:e + 6 * (r + 1)].reshape(r + 1, 6)
        self.tau = F[f:f + n * (r + 1)].reshape(r + 1, n)
        self.arrays = (self.I, self.F, self.K)

    def set_model(self, model, gravity) -> None:
        """The inverse-dynamics work buffer of ``model`` at the store's order and ``gravity`` (as
        :class:`geodyn_ros.Workspace` makes it); the inputs held stay."""
        r1, n = self.order + 1, model.n_joints
        if n != self.n:
            raise ValueError(f"model: {n} joints, the store was made for {self.n}")
        idb = KI.id_workspace(model.bodyi, model.bodyf, self.order, np.asarray(gravity, dtype=np.float64))
        e = idb.shape[0]
        self._id = np.concatenate([idb, np.zeros(r1 * (6 + n))])
        assert self._id.shape[0] == KI.id_into_size(model.n_bodies, self.order)
        self._id_out = (e, e + 6 * r1)
        self._layout()

    def learn(self, t: int, spec) -> None:
        """The learned shape of topic ``t``'s fast decoder (its ``spec()``; None: it learned none):
        odom ``(key, start, total, pose, tmp size)``; joint_states ``(key, start, total, lay (7),
        idx (n), tmp size)``; reference ``(kind, keys, lay (7), ncol, cols (n), tmp size)``."""
        self._spec[t] = spec
        I = self.I
        I[(D_ODOM, D_JS, D_REF)[t]] = 0
        if spec is not None and spec[-1] > self._tmp[t]:
            self._tmp[t] = spec[-1]
            self._layout()
        keys, pos = [], 0

        def key(k):
            nonlocal pos
            keys.append(np.asarray(k, dtype=np.uint8))
            pos += keys[-1].shape[0]
            return pos - keys[-1].shape[0], keys[-1].shape[0]

        x = self._extra
        sp = self._spec
        if sp[ODOM] is not None:
            k, start, total, pose, size = sp[ODOM]
            I[D_ODOM + 1], I[D_ODOM + 2] = key(k)
            I[D_ODOM + 3], I[D_ODOM + 4], I[D_ODOM + 5], I[D_ODOM + 7] = start, total, pose, size
        if sp[JS] is not None:
            k, start, total, lay, idx, size = sp[JS]
            I[D_JS + 1], I[D_JS + 2] = key(k)
            I[D_JS + 3], I[D_JS + 4], I[D_JS + 9] = start, total, size
            I[x:x + 7] = lay
            I[x + 7:x + 7 + len(idx)] = idx
            I[D_JS + 5], I[D_JS + 6], I[D_JS + 7] = x, x + 7, len(idx)
        if sp[REF] is not None:
            kind, ks, lay, ncol, cols, size = sp[REF]
            I[D_REF + 1] = kind
            for i, k in enumerate(ks):
                I[D_REF + 2 + 2 * i], I[D_REF + 3 + 2 * i] = key(k)
            y = x + 7 + self.n
            I[y:y + 7] = lay
            I[y + 7:y + 7 + len(cols)] = cols
            I[D_REF + 8], I[D_REF + 9], I[D_REF + 10], I[D_REF + 11], I[D_REF + 13] = y, ncol, y + 7, len(cols), size
        K = np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint8)
        K.flags.writeable = False
        self.K = K
        for tt in range(3):
            I[(D_ODOM, D_JS, D_REF)[tt]] = int(sp[tt] is not None)
        self.arrays = (self.I, self.F, self.K)

    def _reset_ring(self) -> None:
        I, depth = self.I, self.depth
        I[R_COUNT] = I[R_HEAD] = 0
        I[R_SCRATCH] = depth
        I[R_NFREE] = depth
        I[I[R_FREE]:I[R_FREE] + depth] = np.arange(depth)

    def reset(self) -> None:
        """Forget the held samples (simulated time was reset; the topics' :meth:`_TopicView.reset`
        forget their stamps)."""
        self.I[T_HELD] = self.I[8 + T_HELD] = -1

    # -- views for the node's full path
    def entry(self, t: int, slot: int | None = None) -> SimpleNamespace:
        """Views of an entry of topic ``t`` (default: its scratch entry, where a message is
        decoded): odom ``C``, ``V0``; joint_states ``q``, ``qd``; reference ``C``, ``V``, ``V_sp``,
        ``Q`` (the attributes of :func:`.input_sync.input_entry`) and ``slot``."""
        I, F, r, n = self.I, self.F, self.order, self.n
        b = 8 * t
        if slot is None:
            slot = int(I[R_SCRATCH]) if t == REF else 1 - int(I[b + T_SLOT])
        o = int(I[b + T_BASE]) + slot * int(I[b + T_SIZE])
        if t == ODOM:
            return SimpleNamespace(C=F[o:o + 16].reshape(4, 4), V0=F[o + 16:o + 22], slot=slot)
        if t == JS:
            return SimpleNamespace(q=F[o:o + n], qd=F[o + n:o + 2 * n], slot=slot)
        k = 6 * (r + 2)
        V = F[o + 16:o + 16 + k].reshape(r + 2, 6)
        return SimpleNamespace(C=F[o:o + 16].reshape(4, 4), V=V, converted=False,
                               V_sp=F[o + 16 + k:o + 16 + 2 * k].reshape(r + 2, 6) if self.convert else V,
                               Q=F[o + 16 + 2 * k:o + 16 + 2 * k + n * (r + 3)].reshape(r + 3, n), slot=slot)

    def held(self, t: int):
        """``(stamp, entry)`` of the held odom / joint_states sample, or None."""
        s = int(self.I[8 * t + T_HELD])
        return None if s < 0 else (s, self.entry(t, int(self.I[8 * t + T_SLOT])))

    def max_age(self, t: int) -> int:
        return int(self.I[8 * t + T_MAX_AGE])

    def set_counts(self, fn: int, publishers) -> None:
        """Ask rcl's count function at address ``fn`` (0: do not ask: every cycle is SUBS) for the
        subscribers of up to three publishers (``rcl_publisher_t`` addresses; 0: none)."""
        pubs = list(publishers) + [0] * (3 - len(publishers))
        self.I[P_PUB:P_PUB + 3] = pubs
        self.I[P_FN] = fn if all(p >= 0 for p in pubs) else 0

    def set_converted(self, slot: int) -> None:
        self.I[self.I[R_CONV] + slot] = 1

    def stamp(self) -> int:
        """The stamp [ns] of the last message a kernel decoded (refused: :meth:`_TopicView.check` says why)."""
        return int(self.I[M_STAMP])

    def used(self) -> tuple:
        """``(t, t_odom, t_js, t_ref)`` of the last cycle [ns]."""
        I = self.I
        return int(I[C_T]), int(I[C_ODOM]), int(I[C_JS]), int(I[C_REF])
