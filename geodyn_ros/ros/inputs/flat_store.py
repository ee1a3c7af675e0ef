"""``geodyn_node``'s flat mode in arrays: one compiled call from a ``flat_reference`` message to its outputs.

With typed messages and ``rate_hz`` 0, each ``flat_reference`` is one input set (:mod:`.input_sync`).
:class:`FlatStore` keeps what its cycle reads and writes in arrays, so that one compiled call,
:func:`flat_message`, does all of it: the message decoded and checked by the kernel of the node's
other path (:class:`geodyn_ros.ros.wire.typed_raw.FastTypedFlatReference`: NaN/Inf, the plausibility
limits), its stamp accepted (never back in time, at most ``stale_timeout`` ahead of the node clock)
and fresh (at most ``stale_timeout`` old), the flat map
(:func:`geodyn_ros.algorithms.kernels.flat.flat_map_ws`, the kernel of
:class:`geodyn_ros.algorithms.flat.FlatWorkspace`), and the four outputs written into their
serialized templates by the writers' own kernels (:mod:`geodyn_ros.ros.wire.typed_raw`):
``feedforward/jet`` with its NaN/Inf check, ``desired/state``, ``feedforward/flat_jet`` and, with an
allocation, ``feedforward/rotor_speeds`` with its range check. It returns :data:`OK` or why it did
not finish (the codes of :mod:`.latest_store`: ``OK`` with nobody subscribing wrench or efforts, and :data:`FLAT_DECLINED`, :data:`ROTOR`); the node
then takes its full path (``GeodynNode._flat_cycle``), which finishes or reports the cycle exactly
as before. Nothing is accepted by a call that declines the message.

Arrays: ``I`` (int64: the topic's stamps and counts, the learned shape, offsets), ``F`` (float64:
the flat map's work buffer, the entry ``c^(0..r+4)``, ``psi^(0..r+2)``, ``q^(0..r+2)``, the seven
results, the limits, the scratch, the allocation ``A4^+`` and ``omega_max^2``), ``K`` (uint8, the
learned shape's bytes) and the four templates' bytes.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import njit, types

from ...algorithms.kernels import flat as KF
from ..wire.typed_raw import _fill_typed_desired, _fill_typed_flat, _fill_typed_jet, _fill_typed_rotor, _typed_flat
from .latest_store import DECLINED, NO_CYCLE, NOT_WRITTEN, P_FN, REFUSED, T_ACCEPTED, T_LAST, T_RECEIVED, \
    _clamp, _TopicView, quiet

__all__ = ["FlatStore", "flat_message", "FRESH", "FLAT_DECLINED", "ROTOR"]

FRESH = 20          #: the reference is stale or ahead of the node clock (``_fresh`` reports it)
FLAT_DECLINED = 21  #: the flat map's kernel declined (free fall, the yaw singularity, ...: the full path says why)
ROTOR = 22          #: a rotor's omega^2 out of range: the other outputs are written, the full path reports it

G_STALE, G_ORDER, G_N, G_M, G_JET, G_LEARNED, M_STAMP, G_RATE_ZERO = range(8, 16)
F_WS, F_WS_SIZE, F_COM, F_YAW, F_QIN, F_OC, F_OV, F_OQ, F_OW, F_OTAU, F_OT, F_OTB, F_LIM, F_TMP, F_TMP_SIZE, \
    F_A, F_UMAX = range(16, 33)
D_KEYS, D_NCOL, D_LAY, D_COLS, D_NCOLS = 40, 46, 47, 48, 49
P_JET, P_DES, P_FLAT, P_ROT = 56, 59, 63, 66   # template offsets: jet (stamp, rows, values), desired
#                                               (stamp, pose, rows, values), flat jet (stamp, rows, values), rotors (stamp, values)
HEADER = 128   # (P_FN, P_PUB, S_COUNT of latest_store at 120..127: the subscription counts)

_B = types.Bytes(types.uint8, 1, "C", readonly=True)
_I8 = types.Array(types.int64, 1, "C")
_F8 = types.Array(types.float64, 1, "C")
_K8 = types.Array(types.uint8, 1, "C", readonly=True)
_T8 = types.Array(types.uint8, 1, "C")


@njit(types.int64(_B, types.int64, _I8, _F8, _K8, _T8, _T8, _T8, _T8), cache=True, nogil=True)
def flat_message(raw, now, I, F, K, T1, T2, T3, T4):  # pragma: no cover (compiled)
    """A ``flat_reference`` of the learned shape: decoded, accepted, its cycle run and every output
    written (``T1`` jet, ``T2`` desired state, ``T3`` flat jet, ``T4`` rotor speeds); the code."""
    I[T_RECEIVED] = 1
    if not I[G_LEARNED]:
        return DECLINED
    r, n = I[G_ORDER], I[G_N]
    com = F[I[F_COM]:I[F_COM] + 3 * (r + 5)].reshape((r + 5, 3))
    yaw = F[I[F_YAW]:I[F_YAW] + r + 3]
    Q = F[I[F_QIN]:I[F_QIN] + n * (r + 3)].reshape((r + 3, n))
    d = D_KEYS
    lay, cols = I[D_LAY], I[D_COLS]
    stamp = _typed_flat(raw, K[I[d]:I[d] + I[d + 1]], K[I[d + 2]:I[d + 2] + I[d + 3]], K[I[d + 4]:I[d + 4] + I[d + 5]],
                        I[lay:lay + 7], I[D_NCOL], I[cols:cols + I[D_NCOLS]], F[I[F_LIM]:I[F_LIM] + 4], com, yaw, Q,
                        F[I[F_TMP]:I[F_TMP] + I[F_TMP_SIZE]])
    if stamp < 0:
        return DECLINED
    I[M_STAMP] = stamp
    stale = I[G_STALE]
    if stamp < I[T_LAST] or stamp - now > stale:
        return REFUSED
    I[T_LAST] = stamp
    I[T_ACCEPTED] += 1
    if not I[G_RATE_ZERO]:
        return NO_CYCLE
    if now - stamp > stale or stamp - now > stale:
        return FRESH
    if not I[G_JET]:
        return NOT_WRITTEN
    oC = F[I[F_OC]:I[F_OC] + 16].reshape((4, 4))
    oV = F[I[F_OV]:I[F_OV] + 6 * (r + 2)].reshape((r + 2, 6))
    oq = F[I[F_OQ]:I[F_OQ] + n * (r + 3)].reshape((r + 3, n))
    ow = F[I[F_OW]:I[F_OW] + 6 * (r + 1)].reshape((r + 1, 6))
    otau = F[I[F_OTAU]:I[F_OTAU] + n * (r + 1)].reshape((r + 1, n))
    oT = F[I[F_OT]:I[F_OT] + r + 1]
    otb = F[I[F_OTB]:I[F_OTB] + 3 * (r + 1)].reshape((r + 1, 3))
    if KF.flat_map_ws(F[I[F_WS]:I[F_WS] + I[F_WS_SIZE]], com, yaw, Q, r, oC, oV, oq, ow, otau, oT, otb) != 0:
        return FLAT_DECLINED
    p = P_JET
    if not _fill_typed_jet(T1[I[p]:I[p] + 8].view(np.uint32),
                           T1[I[p + 1]:I[p + 1] + 48 * (r + 1)].view(np.float64).reshape((r + 1, 6)),
                           T1[I[p + 2]:I[p + 2] + 8 * n * (r + 1)].view(np.float64), stamp, ow, otau):
        return NOT_WRITTEN   # (the flat map refuses results that are not finite: the full path decides)
    p = P_DES
    _fill_typed_desired(T2[I[p]:I[p] + 8].view(np.uint32), T2[I[p + 1]:I[p + 1] + 56].view(np.float64),
                        T2[I[p + 2]:I[p + 2] + 48 * (r + 2)].view(np.float64).reshape((r + 2, 6)),
                        T2[I[p + 3]:I[p + 3] + 8 * n * (r + 2)].view(np.float64), stamp, oC, oV, oq)
    p = P_FLAT
    _fill_typed_flat(T3[I[p]:I[p] + 8].view(np.uint32),
                     T3[I[p + 1]:I[p + 1] + 48 * (r + 1)].view(np.float64).reshape((r + 1, 6)),
                     T3[I[p + 2]:I[p + 2] + 8 * n * (r + 1)].view(np.float64), stamp, oT, otb, otau)
    m = I[G_M]
    if m:
        p = P_ROT
        if not _fill_typed_rotor(T4[I[p]:I[p] + 8].view(np.uint32), T4[I[p + 1]:I[p + 1] + 8 * m * (r + 1)].view(np.float64),
                                 stamp, F[I[F_A]:I[F_A] + 4 * m].reshape((m, 4)), F[I[F_UMAX]:I[F_UMAX] + m], oT, otb):
            return ROTOR
    return quiet(I)


class FlatStore:
    """The arrays of the module docstring for the flat map of a model of ``n`` joints at order
    ``order`` (``limits``: the plausibility limits; ``stale_ns``: ``stale_timeout`` [ns]).

    ``outputs``: the writers whose templates the call fills (``TypedJetOutput`` of the jet,
    ``TypedDesiredStateOutput``, the body ``TypedJetOutput`` of the flat jet, ``TypedRotorSpeedOutput``
    or None), or None (the outputs are not the spatial typed ones: the node writes them);
    ``allocation``: the vehicle's (with ``A4_pinv``, ``max_rot_velocity``), or None."""

    def __init__(self, order: int, n: int, limits: dict, stale_ns: int, rate_zero: bool, outputs=None,
                 allocation=None):
        self.order, self.n = order, n
        r = order
        self._tmp, self._ws = 0, np.zeros(0)
        self._lim = np.array([limits["max_position"], limits["max_speed"], limits["max_joint_rate"],
                              limits["max_input_magnitude"]], dtype=np.float64)
        self.I = I = np.zeros(HEADER + 7 + n, dtype=np.int64)
        I[T_LAST] = -1
        I[G_STALE], I[G_ORDER], I[G_N], I[G_RATE_ZERO] = _clamp(stale_ns), r, n, int(rate_zero)
        self.K = np.zeros(0, dtype=np.uint8)
        self.K.flags.writeable = False
        self.bufs = [bytearray(1)] * 4
        self._A = np.zeros((0, 4))
        self._umax = np.zeros(0)
        if outputs is not None:
            jet, des, flat, rot = outputs
            b1, s1, w1, v1, _ = jet._t.offsets()
            b2, s2, w2, v2, p2 = des._t.offsets()
            b3, s3, w3, v3, _ = flat._t.offsets()
            I[P_JET:P_JET + 3] = s1, w1, v1
            I[P_DES:P_DES + 4] = s2, p2, w2, v2
            I[P_FLAT:P_FLAT + 3] = s3, w3, v3
            self.bufs = [b1, b2, b3, bytearray(1)]
            if rot is not None and allocation is not None:
                b4, s4, v4 = rot.template()
                I[P_ROT:P_ROT + 2] = s4, v4
                self.bufs[3] = b4
                I[G_M] = np.asarray(allocation.A4_pinv).shape[0]
                self._A, self._umax = np.zeros((I[G_M], 4)), np.zeros(I[G_M])   # (set_model)
            I[G_JET] = 1
        self.T = tuple(np.frombuffer(b, dtype=np.uint8) for b in self.bufs)
        self.F = None
        self.topic = _TopicView(self, 0, "flat_reference")
        self._layout()

    def _layout(self) -> None:
        r, n, I, old = self.order, self.n, self.I, self.F
        m = self._A.shape[0]
        sizes = [self._ws.shape[0], 3 * (r + 5), r + 3, n * (r + 3), 16, 6 * (r + 2), n * (r + 3), 6 * (r + 1),
                 n * (r + 1), r + 1, 3 * (r + 1), 4, self._tmp, 4 * m, m]
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        F = np.zeros(offs[-1])
        if old is not None:   # the entry stays
            a = int(I[F_COM])
            F[offs[1]:offs[4]] = old[a:a + offs[4] - offs[1]]
        F[:offs[1]] = self._ws
        F[offs[11]:offs[12]] = self._lim
        F[offs[13]:offs[14]] = self._A.ravel()
        F[offs[14]:offs[15]] = self._umax
        I[F_WS], I[F_WS_SIZE] = 0, sizes[0]
        I[F_COM:F_COM + 11] = offs[1:12]
        I[F_LIM], I[F_TMP], I[F_TMP_SIZE], I[F_A], I[F_UMAX] = offs[11], offs[12], self._tmp, offs[13], offs[14]
        self.F = F
        self.arrays = (self.I, self.F, self.K)

    def set_model(self, model, gravity, allocation=None) -> None:
        """The flat map's work buffer of ``model`` (a plain model: a mimic-enforced one is not for
        this path) at the store's order and ``gravity``, and the vehicle's ``allocation``."""
        g = np.asarray(gravity, dtype=np.float64).copy()
        g.flags.writeable = False   # the type the kernels are compiled for (FlatWorkspace's)
        self._ws = KF.flat_workspace(model.bodyi, model.bodyf, self.order, g)
        if allocation is not None and self.I[G_M]:
            self._A = np.ascontiguousarray(allocation.A4_pinv, dtype=np.float64)
            lim = np.broadcast_to(np.asarray(allocation.max_rot_velocity, dtype=np.float64), self._A.shape[:1])
            self._umax = np.array(lim ** 2)
        self._layout()

    def accept(self, stamp: int, now: int, stale_ns: int) -> None:
        """Accept a message the full path decoded, or raise the :class:`InputError` of
        :meth:`.input_sync.TopicBuffer.check` (nothing changes)."""
        self.topic.check(stamp, now, stale_ns)
        self.I[T_LAST] = stamp
        self.I[T_ACCEPTED] += 1

    def learn(self, spec) -> None:
        """The learned shape (``FastTypedFlatReference.spec()``; None: it learned none)."""
        I = self.I
        I[G_LEARNED] = 0
        if spec is None:
            return
        keys, lay, ncol, cols, size = spec
        if size != self._tmp:
            self._tmp = size
            self._layout()
        pos, parts = 0, []
        for i, k in enumerate(keys):
            k = np.asarray(k, dtype=np.uint8)
            I[D_KEYS + 2 * i], I[D_KEYS + 2 * i + 1] = pos, k.shape[0]
            parts.append(k)
            pos += k.shape[0]
        K = np.concatenate(parts)
        K.flags.writeable = False
        self.K = K
        I[HEADER:HEADER + 7] = lay
        I[HEADER + 7:HEADER + 7 + len(cols)] = cols
        I[D_NCOL], I[D_LAY], I[D_COLS], I[D_NCOLS] = ncol, HEADER, HEADER + 7, len(cols)
        I[G_LEARNED] = 1
        self.arrays = (self.I, self.F, self.K)

    def set_counts(self, fn: int, publishers) -> None:
        """As :meth:`.latest_store.LatestStore.set_counts`."""
        pubs = list(publishers) + [0] * (3 - len(publishers))
        self.I[P_FN + 1:P_FN + 4] = pubs
        self.I[P_FN] = fn

    def entry(self) -> SimpleNamespace:
        """Views of the entry (``com``, ``yaw``, ``Q``: :func:`.input_sync.input_entry`'s)."""
        I, F, r, n = self.I, self.F, self.order, self.n
        c, y, q = int(I[F_COM]), int(I[F_YAW]), int(I[F_QIN])
        return SimpleNamespace(com=F[c:c + 3 * (r + 5)].reshape(r + 5, 3), yaw=F[y:y + r + 3],
                               Q=F[q:q + n * (r + 3)].reshape(r + 3, n))

    def stamp(self) -> int:
        return int(self.I[M_STAMP])

    def carry(self, last_stamp: int, accepted: int, received: bool) -> None:
        """Continue the topic of a former buffer (a model change): its newest stamp, its count of
        accepted messages and whether any message came."""
        self.I[T_LAST], self.I[T_ACCEPTED], self.I[T_RECEIVED] = int(last_stamp), int(accepted), int(received)

    def reset(self) -> None:
        """Forget the newest stamp (simulated time was reset)."""
        self.I[T_LAST] = -1
