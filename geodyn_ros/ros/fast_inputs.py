"""Compiled fast path of ``geodyn_node``'s measured inputs: one call per message, no Python objects.

A message on ``odom`` or ``joint_states`` is normally decoded field by field
(:mod:`geodyn_ros.ros.cdr`), converted (:mod:`geodyn_ros.ros.conversions`) and checked
(:mod:`geodyn_ros.ros.plausibility`): about twenty Python calls. At 1 kHz a robot's driver
sends the same *shape* every time: the same header bytes, frame names, joint-name list and
sequence lengths; only the stamp and the numbers change. So after a message has passed that full
(slow) path, :meth:`FastOdometry.learn` / :meth:`FastJointState.learn` record its
**shape**: the CDR encapsulation, the total length, every byte from the end of the stamp to the
first number (frame ids, child frame id, joint names, sequence counts) and where the numbers lie.
A later message with exactly that shape is decoded, converted and checked in **one compiled
call** (numba, ``nogil``), which writes the same arrays the slow path writes.

The fast path only ever *accepts*: any message it does not recognise byte for byte, or whose
numbers fail any check (NaN/Inf, a quaternion off unit norm by more than
``QUATERNION_TOLERANCE``, a plausibility limit, a stamp that is not a valid time), is declined
(``-1``) and goes through the slow path, which accepts it or refuses it with its one precise
line. So no input the slow path refuses is ever accepted here, and what is accepted is computed
with the slow path's formulas (``pose_matrix``, ``body_to_spatial_twist``, ``check_plausible``;
``test/test_fast_inputs.py`` compares the two on random and hostile inputs).

Only little-endian plain CDR (encapsulation ``0x0001``, what Fast DDS and rclpy write) is
learned; any other encoding always takes the slow path.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from .cdr import CdrReader
from .conversions import QUATERNION_TOLERANCE

__all__ = ["FastOdometry", "FastJointState", "FastFlatReference", "FastReference"]

_U8 = types.Array(types.uint8, 1, "C", readonly=True)
_U8W = types.Array(types.uint8, 1, "C")
_F1 = types.Array(types.float64, 1, "C")
_F2 = types.Array(types.float64, 2, "C")
_I1 = types.Array(types.intp, 1, "C")
_I8 = types.Array(types.int64, 1, "C")
_MAX_SEC = 2 ** 31 - 1


@njit(types.boolean(_U8, _U8, types.int64, types.int64, types.int64), cache=True, nogil=True)
def _same(buf, key, lo, start, total):  # pragma: no cover (compiled)
    """``buf`` has ``total`` bytes, its first 4 equal ``key[:4]`` and ``buf[lo:start]`` equals
    ``key[4:4 + start - lo]`` except where masked (``key[4 + start - lo + i - lo]`` = 0: alignment
    padding, which serializers leave uninitialized)."""
    if buf.shape[0] != total:
        return False
    for i in range(4):
        if buf[i] != key[i]:
            return False
    d = 4 - lo
    m = 4 + start - 2 * lo
    for i in range(lo, start):
        if buf[i] != key[d + i] and key[m + i]:
            return False
    return True


@njit(types.int64(_U8), cache=True, nogil=True)
def _stamp(buf):  # pragma: no cover (compiled)
    """Stamp [ns] of a little-endian header at byte 4, or -1 (negative sec or nanosec >= 1e9)."""
    sec = np.int64(buf[4]) | (np.int64(buf[5]) << 8) | (np.int64(buf[6]) << 16) | (np.int64(buf[7]) << 24)
    nsec = np.int64(buf[8]) | (np.int64(buf[9]) << 8) | (np.int64(buf[10]) << 16) | (np.int64(buf[11]) << 24)
    if sec > _MAX_SEC or nsec >= 1_000_000_000:   # sec > 2^31-1: a negative int32
        return -1
    return sec * 1_000_000_000 + nsec


@njit(types.void(_U8, types.int64, types.int64, _F1), cache=True, nogil=True)
def _doubles(buf, start, count, out):  # pragma: no cover (compiled)
    """``count`` little-endian float64 from byte ``start`` of ``buf`` into ``out[:count]``."""
    b = out.view(np.uint8)
    for i in range(8 * count):
        b[i] = buf[start + i]


@njit(types.int64(_U8, _U8, types.int64, types.int64, types.int64, _F1, _F2, _F1, _F1), cache=True, nogil=True)
def _odometry(buf, key, start, total, pose, lim, C, V, tmp):  # pragma: no cover (compiled)
    """The odometry of ``buf`` (numbers from byte ``pose``) into ``C`` (4, 4) and ``V`` (6,)
    spatial twist; the stamp, or -1."""
    if not _same(buf, key, 12, start, total):
        return -1
    stamp = _stamp(buf)
    if stamp < 0:
        return -1
    _doubles(buf, pose, 7, tmp)                        # position, quaternion xyzw
    _doubles(buf, pose + 43 * 8, 6, tmp[7:])          # twist: linear, angular (child frame)
    for i in range(13):
        if not math.isfinite(tmp[i]):
            return -1
    px, py, pz, qx, qy, qz, qw = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6]
    nrm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if not abs(nrm - 1.0) <= QUATERNION_TOLERANCE:
        return -1
    x, y, z, w = qx / nrm, qy / nrm, qz / nrm, qw / nrm
    R = np.empty((3, 3))
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - z * w)
    R[0, 2] = 2 * (x * z + y * w)
    R[1, 0] = 2 * (x * y + z * w)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - x * w)
    R[2, 0] = 2 * (x * z - y * w)
    R[2, 1] = 2 * (y * z + x * w)
    R[2, 2] = 1 - 2 * (x * x + y * y)
    wr = np.empty(3)
    vr = np.empty(3)
    for i in range(3):
        wr[i] = R[i, 0] * tmp[10] + R[i, 1] * tmp[11] + R[i, 2] * tmp[12]
        vr[i] = R[i, 0] * tmp[7] + R[i, 1] * tmp[8] + R[i, 2] * tmp[9]
    # plausibility (check_plausible): |p|, |w|, |v_origin| = |R v_b|
    if not (math.sqrt(px * px + py * py + pz * pz) <= lim[0]):
        return -1
    if not (math.sqrt(wr[0] ** 2 + wr[1] ** 2 + wr[2] ** 2) <= lim[1]):
        return -1
    sx = py * wr[2] - pz * wr[1] + vr[0]
    sy = pz * wr[0] - px * wr[2] + vr[1]
    sz = px * wr[1] - py * wr[0] + vr[2]
    ox = sx - (py * wr[2] - pz * wr[1])
    oy = sy - (pz * wr[0] - px * wr[2])
    oz = sz - (px * wr[1] - py * wr[0])
    if not (math.sqrt(ox * ox + oy * oy + oz * oz) <= lim[1]):
        return -1
    for i in range(3):
        for j in range(3):
            C[i, j] = R[i, j]
    C[0, 3], C[1, 3], C[2, 3] = px, py, pz
    C[3, 0] = C[3, 1] = C[3, 2] = 0.0
    C[3, 3] = 1.0
    V[0], V[1], V[2], V[3], V[4], V[5] = wr[0], wr[1], wr[2], sx, sy, sz
    return stamp


@njit(types.int64(_U8, types.int64), cache=True, nogil=True)
def _u32(buf, p):  # pragma: no cover (compiled)
    return np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16) | (np.int64(buf[p + 3]) << 24)


@njit(types.int64(_U8, _U8, types.int64, types.int64, _I8, _I1, _F1, _F1, _F1, _F1), cache=True, nogil=True)
def _joint_state(buf, key, start, total, lay, idx, lim, q, qd, tmp):  # pragma: no cover (compiled)
    """Positions and velocities of ``buf`` reordered by ``idx`` into ``q``, ``qd``; the stamp, or -1.
    ``lay``: byte offsets and counts (position count at lay[0] = lay[1], numbers at lay[2];
    velocity count at lay[3] = lay[1], numbers at lay[4]; effort count at lay[5] = lay[6])."""
    if not _same(buf, key, 12, start, total):
        return -1
    k = lay[1]
    if _u32(buf, lay[0]) != k or _u32(buf, lay[3]) != k or _u32(buf, lay[5]) != lay[6]:
        return -1
    stamp = _stamp(buf)
    if stamp < 0:
        return -1
    m = idx.shape[0]
    _doubles(buf, lay[2], k, tmp)
    _doubles(buf, lay[4], k, tmp[k:])
    mq = 0.0
    mqd = 0.0
    for i in range(m):
        a, b = tmp[idx[i]], tmp[k + idx[i]]
        if not (math.isfinite(a) and math.isfinite(b)):
            return -1
        mq = max(mq, abs(a))
        mqd = max(mqd, abs(b))
    if not (mqd <= lim[2] and mq <= lim[3]):
        return -1
    for i in range(m):
        q[i] = tmp[idx[i]]
        qd[i] = tmp[k + idx[i]]
    return stamp


def _key(raw: bytes, start: int, pads, lo: int = 12) -> np.ndarray:
    """Bytes 0..3 and lo..start-1 of ``raw`` (the shape; lo = 12 skips a header stamp), then the
    mask of bytes lo..start-1 (0 on the alignment padding ``pads``: (from, to) payload positions)."""
    mask = np.ones(start - lo, dtype=np.uint8)
    for a, b in pads:
        mask[max(0, 4 + a - lo):max(0, 4 + b - lo)] = 0
    return np.concatenate([np.frombuffer(raw[:4] + raw[lo:start], dtype=np.uint8), mask])


def _limits(limits: dict) -> np.ndarray:
    return np.array([limits["max_position"], limits["max_speed"], limits["max_joint_rate"],
                     limits["max_input_magnitude"]], dtype=np.float64)


class FastOdometry:
    """The shape of the last ``odom`` message accepted by the slow path (module docstring).

    ``limits``: the plausibility limits (``LIMIT_NAMES`` -> value)."""

    __slots__ = ("_key", "_start", "_total", "_pose", "_lim", "_tmp")

    def __init__(self, limits: dict):
        self._key = None
        self._lim = _limits(limits)
        self._tmp = np.zeros(13)

    def learn(self, raw) -> None:
        """Record the shape of ``raw`` (an ``Odometry`` the slow path just accepted)."""
        raw = bytes(raw)
        self._key = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        r.stamp_header("odom")
        r.string("odom.child_frame_id")
        end = 4 + r.pos
        p = r.f64_block(7 + 36 + 6 + 36, "odom")
        self._start, self._total, self._pose = end, len(raw), 4 + p
        self._key = _key(raw, end, r.pads)

    def decode(self, raw, C: np.ndarray, V: np.ndarray) -> int:
        """Stamp [ns] with ``C`` (4, 4) and ``V`` (6,) written, or -1 (declined: nothing written)."""
        if self._key is None:
            return -1
        return _odometry(np.frombuffer(raw, dtype=np.uint8), self._key, self._start, self._total, self._pose,
                         self._lim, C, V, self._tmp)


class FastJointState:
    """The shape of the last ``joint_states`` message accepted by the slow path; ``idx``: the
    model column order of its names (``JointNameMatcher.indices``)."""

    __slots__ = ("_key", "_start", "_total", "_lay", "_idx", "_lim", "_tmp")

    def __init__(self, limits: dict):
        self._key = None
        self._lim = _limits(limits)

    def learn(self, raw, idx: np.ndarray) -> None:
        """Record the shape of ``raw`` (a ``JointState`` the slow path just accepted, with
        velocities) and its name order ``idx``."""
        raw = bytes(raw)
        self._key = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        r.stamp_header("joint_states")
        n = r.u32("joint_states.name")
        for _ in range(n):
            r.string("joint_states.name")
        start = r.pos
        lay = []
        for field in ("position", "velocity", "effort"):
            c = r.u32("joint_states." + field)
            lay += [4 + r.pos - 4, c]
            lay.append(4 + r.f64_block(c, "joint_states." + field) if c else 0)
        if lay[1] != n or lay[4] != n or max(idx, default=-1) >= n:
            return
        self._lay = np.array([lay[0], n, lay[2], lay[3], lay[5], lay[6], lay[7]], dtype=np.int64)
        self._start, self._total = 4 + start, len(raw)
        self._idx = np.ascontiguousarray(idx, dtype=np.intp)
        self._tmp = np.zeros(2 * max(n, 1))
        self._key = _key(raw, self._start, r.pads)

    def decode(self, raw, q: np.ndarray, qd: np.ndarray) -> int:
        """Stamp [ns] with ``q``, ``qd`` (n,) written in model order, or -1 (declined)."""
        if self._key is None:
            return -1
        return _joint_state(np.frombuffer(raw, dtype=np.uint8), self._key, self._start, self._total,
                            self._lay, self._idx, self._lim, q, qd, self._tmp)


@njit(types.int64(_U8, _U8, types.int64, types.int64, types.int64, types.int64, _I1, _F1, _F2, _F1, _F2,
                  _F1), cache=True, nogil=True)
def _flat_reference(buf, key, kend, start, total, ncol, cols, lim, com, yaw, Q, tmp):  # pragma: no cover
    """Flat reference of ``buf`` (doubles from byte ``start``: stamp, then ``rows`` x ``ncol``) into
    ``com`` (r+5, 3), ``yaw`` (r+3,), ``Q`` (r+3, n) (joint columns ``cols``), checked as
    ``FlatReferenceDecoder.decode`` and ``check_plausible_flat`` check them; the stamp, or -1.
    ``buf[4:kend]`` (the layout and the data count) must match ``key``."""
    if not _same(buf, key, 4, kend, total):
        return -1
    r5, r3, n = com.shape[0], yaw.shape[0], Q.shape[1]
    _doubles(buf, start, 2 + r5 * ncol, tmp)
    sec, nsec = tmp[0], tmp[1]
    if not (sec >= 0.0 and sec <= _MAX_SEC and sec == math.floor(sec) and nsec >= 0.0 and nsec < 1e9
            and nsec == math.floor(nsec)):
        return -1
    hi = 0.0      # max |higher CoM derivative|, |yaw| and |yaw^(2..)|, |q| and |q^(2..)|
    for k in range(r5):
        for j in range(3):
            v = tmp[2 + k * ncol + j]
            if not math.isfinite(v):
                return -1
            if k >= 2:
                hi = max(hi, abs(v))
    qd = 0.0
    for k in range(r3):
        v = tmp[2 + k * ncol + 3]
        if not math.isfinite(v):
            return -1
        if k != 1:
            hi = max(hi, abs(v))
        for j in range(n):
            v = tmp[2 + k * ncol + cols[j]]
            if not math.isfinite(v):
                return -1
            if k == 1:
                qd = max(qd, abs(v))
            else:
                hi = max(hi, abs(v))
    c0 = math.sqrt(tmp[2] ** 2 + tmp[3] ** 2 + tmp[4] ** 2)
    c1 = math.sqrt(tmp[2 + ncol] ** 2 + tmp[3 + ncol] ** 2 + tmp[4 + ncol] ** 2)
    if not (c0 <= lim[0] and c1 <= lim[1] and abs(tmp[5 + ncol]) <= lim[1] and qd <= lim[2] and hi <= lim[3]):
        return -1
    for k in range(r5):
        for j in range(3):
            com[k, j] = tmp[2 + k * ncol + j]
    for k in range(r3):
        yaw[k] = tmp[2 + k * ncol + 3]
        for j in range(n):
            Q[k, j] = tmp[2 + k * ncol + cols[j]]
    return np.int64(sec) * 1_000_000_000 + np.int64(nsec)


class FastFlatReference:
    """The shape (layout bytes, row and column counts) of the last ``flat_reference`` message the
    full path accepted; then one compiled call per message of that shape (module docstring)."""

    __slots__ = ("_key", "_kend", "_start", "_total", "_ncol", "_cols", "_lim", "_tmp", "_r")

    def __init__(self, limits: dict, order: int):
        self._key = None
        self._lim = _limits(limits)
        self._r = order

    def learn(self, raw, cols: np.ndarray) -> None:
        """Record the shape of ``raw`` (a ``Float64MultiArray`` flat reference the full path just
        accepted) and its joint columns ``cols`` (model order; ``FlatReferenceDecoder``)."""
        raw = bytes(raw)
        self._key = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        nd = r.u32("flat_reference.layout.dim")
        sizes = []
        for _ in range(nd):
            r.string("flat_reference.layout.dim.label", "MAX_LABEL_BYTES")
            sizes.append(r.u32("flat_reference.layout.dim.size"))
            r.u32("flat_reference.layout.dim.stride")
        r.u32("flat_reference.layout.data_offset")
        count = r.u32("flat_reference.data")
        key_end = 4 + r.pos
        start = 4 + r.f64_block(count, "flat_reference.data")
        if nd != 2 or count != 2 + sizes[0] * sizes[1] or sizes[0] < self._r + 5:
            return
        self._ncol = sizes[1]
        self._kend, self._start, self._total = key_end, start, len(raw)
        self._cols = np.ascontiguousarray(cols, dtype=np.intp)
        self._tmp = np.zeros(2 + (self._r + 5) * self._ncol)
        # the key runs to the end of the data count; the padding before the doubles is not compared
        self._key = _key(raw, key_end, r.pads, lo=4)

    def decode(self, raw, com: np.ndarray, yaw: np.ndarray, Q: np.ndarray) -> int:
        """Stamp [ns] with ``com[:r+5]``, ``yaw[:r+3]``, ``Q[:r+3]`` written, or -1 (declined)."""
        if self._key is None:
            return -1
        r = self._r
        return _flat_reference(np.frombuffer(raw, dtype=np.uint8), self._key, self._kend, self._start,
                               self._total, self._ncol, self._cols, self._lim, com[:r + 5], yaw[:r + 3],
                               Q[:r + 3], self._tmp)


@njit(types.int64(_U8, _U8, types.int64, types.int64, types.int64, types.int64, _I1, _F1, _F2, _F2, _F2,
                  _F1), cache=True, nogil=True)
def _reference(buf, key, kend, start, total, ncol, cols, lim, C, V, Q, tmp):  # pragma: no cover (compiled)
    """Reference jet of ``buf`` (doubles from byte ``start``: stamp, position, ``xyzw`` quaternion,
    then rows x ``ncol``) into ``C`` (4, 4), ``V`` (r+2, 6), ``Q`` (r+3, n) (joint columns ``cols``),
    checked as ``ReferenceDecoder.decode`` and ``check_plausible`` (with the twist jet) check them;
    the stamp, or -1. ``buf[4:kend]`` (the layout and the data count) must match ``key``."""
    if not _same(buf, key, 4, kend, total):
        return -1
    r2, r3, n = V.shape[0], Q.shape[0], Q.shape[1]
    _doubles(buf, start, 9 + r3 * ncol, tmp)
    sec, nsec = tmp[0], tmp[1]
    if not (sec >= 0.0 and sec <= _MAX_SEC and sec == math.floor(sec) and nsec >= 0.0 and nsec < 1e9
            and nsec == math.floor(nsec)):
        return -1
    for i in range(2, 9):
        if not math.isfinite(tmp[i]):
            return -1
    px, py, pz, qx, qy, qz, qw = tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7], tmp[8]
    nrm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if not abs(nrm - 1.0) <= QUATERNION_TOLERANCE:
        return -1
    hi = 0.0   # max |V^(1..r+1)|
    for k in range(r2):
        for j in range(6):
            v = tmp[9 + k * ncol + j]
            if not math.isfinite(v):
                return -1
            if k >= 1:
                hi = max(hi, abs(v))
    qd = 0.0
    qhi = 0.0   # max |q|, |q^(2..r+2)|
    for k in range(r3):
        for j in range(n):
            v = tmp[9 + k * ncol + cols[j]]
            if not math.isfinite(v):
                return -1
            if k == 1:
                qd = max(qd, abs(v))
            else:
                qhi = max(qhi, abs(v))
    # plausibility (check_plausible): |p|, |w|, |v - p x w|, the higher twist rows, qdot, the rest
    pn = math.sqrt(px * px + py * py + pz * pz)
    o = 9
    wx, wy, wz = tmp[o], tmp[o + 1], tmp[o + 2]
    ox = tmp[o + 3] - (py * wz - pz * wy)
    oy = tmp[o + 4] - (pz * wx - px * wz)
    oz = tmp[o + 5] - (px * wy - py * wx)
    if not (pn <= lim[0] and math.sqrt(wx * wx + wy * wy + wz * wz) <= lim[1]
            and math.sqrt(ox * ox + oy * oy + oz * oz) <= lim[1] and (r2 < 2 or hi <= lim[3] * (1.0 + pn))
            and qd <= lim[2] and qhi <= lim[3]):
        return -1
    x, y, z, w = qx / nrm, qy / nrm, qz / nrm, qw / nrm
    C[0, 0] = 1 - 2 * (y * y + z * z)
    C[0, 1] = 2 * (x * y - z * w)
    C[0, 2] = 2 * (x * z + y * w)
    C[1, 0] = 2 * (x * y + z * w)
    C[1, 1] = 1 - 2 * (x * x + z * z)
    C[1, 2] = 2 * (y * z - x * w)
    C[2, 0] = 2 * (x * z - y * w)
    C[2, 1] = 2 * (y * z + x * w)
    C[2, 2] = 1 - 2 * (x * x + y * y)
    C[0, 3], C[1, 3], C[2, 3] = px, py, pz
    C[3, 0] = C[3, 1] = C[3, 2] = 0.0
    C[3, 3] = 1.0
    for k in range(r2):
        for j in range(6):
            V[k, j] = tmp[9 + k * ncol + j]
    for k in range(r3):
        for j in range(n):
            Q[k, j] = tmp[9 + k * ncol + cols[j]]
    return np.int64(sec) * 1_000_000_000 + np.int64(nsec)


class FastReference:
    """The shape (layout bytes, row and column counts) of the last ``reference`` message the full
    path accepted; then one compiled call per message of that shape (module docstring). Stricter
    than the full path in one respect: the twist jet's plausibility is always checked (the node
    checks a non-spatial jet only after converting it), so such a message may be declined and
    then take the full path."""

    __slots__ = ("_key", "_kend", "_start", "_total", "_ncol", "_cols", "_lim", "_tmp", "_r")

    def __init__(self, limits: dict, order: int):
        self._key = None
        self._lim = _limits(limits)
        self._r = order

    def learn(self, raw, cols: np.ndarray) -> None:
        """Record the shape of ``raw`` (a ``Float64MultiArray`` reference jet the full path just
        accepted) and its joint columns ``cols`` (model order, counted from column 0)."""
        raw = bytes(raw)
        self._key = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        nd = r.u32("reference.layout.dim")
        sizes = []
        for _ in range(nd):
            r.string("reference.layout.dim.label", "MAX_LABEL_BYTES")
            sizes.append(r.u32("reference.layout.dim.size"))
            r.u32("reference.layout.dim.stride")
        r.u32("reference.layout.data_offset")
        count = r.u32("reference.data")
        key_end = 4 + r.pos
        start = 4 + r.f64_block(count, "reference.data")
        if nd != 2 or count != 9 + sizes[0] * sizes[1] or sizes[0] < self._r + 3 or sizes[1] < 6:
            return
        self._ncol = sizes[1]
        self._kend, self._start, self._total = key_end, start, len(raw)
        self._cols = np.ascontiguousarray(cols, dtype=np.intp)
        self._tmp = np.zeros(9 + (self._r + 3) * self._ncol)
        self._key = _key(raw, key_end, r.pads, lo=4)   # to the data count; the padding is not compared

    def decode(self, raw, C: np.ndarray, V: np.ndarray, Q: np.ndarray) -> int:
        """Stamp [ns] with ``C`` (4, 4), ``V[:r+2]``, ``Q[:r+3]`` written, or -1 (declined)."""
        if self._key is None:
            return -1
        r = self._r
        return _reference(np.frombuffer(raw, dtype=np.uint8), self._key, self._kend, self._start, self._total,
                          self._ncol, self._cols, self._lim, C, V[:r + 2], Q[:r + 3], self._tmp)
