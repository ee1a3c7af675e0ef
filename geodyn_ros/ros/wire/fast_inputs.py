"""Compiled fast path of ``geodyn_node``'s measured inputs: one call per message, no Python objects.

A message on ``odom`` or ``joint_states`` is normally decoded field by field
(:mod:`geodyn_ros.ros.wire.cdr`), converted (:mod:`geodyn_ros.ros.wire.conversions`) and checked
(:mod:`geodyn_ros.ros.inputs.plausibility`): about twenty Python calls. At 1 kHz a robot's driver
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
``test/ros/wire/test_fast_inputs.py`` compares the two on random and hostile inputs).

Only little-endian plain CDR (encapsulation ``0x0001``, what Fast DDS and rclpy write) is
learned; any other encoding always takes the slow path.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from .cdr import CdrReader
from .conversions import QUATERNION_TOLERANCE, unit_pose_into

__all__ = ["FastOdometry", "FastJointState", "FastFlatReference", "FastReference"]

_U8 = types.Array(types.uint8, 1, "C", readonly=True)
_B = types.Bytes(types.uint8, 1, "C", readonly=True)   # a message as rclpy hands it over (no numpy view per call)
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


@njit(types.void(_U8, types.int64, types.int64, _F1), cache=True, nogil=True, inline="always")
def _doubles(buf, start, count, out):  # pragma: no cover (compiled)
    """``count`` little-endian float64 from byte ``start`` of ``buf`` into ``out[:count]``."""
    b = out.view(np.uint8)
    for i in range(8 * count):
        b[i] = buf[start + i]


@njit(types.int64(_U8, _U8, types.int64, types.int64), cache=True, nogil=True, inline="always")
def _header(buf, key, start, total):  # pragma: no cover (compiled)
    """Stamp [ns] of a message with a ``std_msgs/Header`` whose shape (all but the stamp, bytes 12
    to ``start``) matches ``key`` (:func:`_same`), or -1 (another shape, or an invalid stamp)."""
    if not _same(buf, key, 12, start, total):
        return -1
    return _stamp(buf)


@njit(types.int64(_U8, _U8, types.int64, types.int64, types.int64, types.int64, _F1), cache=True, nogil=True, inline="always")
def _array_head(buf, key, kend, total, start, count, tmp):  # pragma: no cover (compiled)
    """``count`` doubles of a ``Float64MultiArray`` whose layout and data count (bytes 4 to
    ``kend``) match ``key``, from byte ``start`` into ``tmp``; the stamp [ns] its first two
    doubles hold (sec, nanosec), or -1 (another shape, or not a valid time: sec an integer in
    0..2^31-1, nanosec an integer in 0..999999999, as ``checked_stamp_ns``)."""
    if not _same(buf, key, 4, kend, total):
        return -1
    _doubles(buf, start, count, tmp)
    sec, nsec = tmp[0], tmp[1]
    if not (sec >= 0.0 and sec <= _MAX_SEC and sec == math.floor(sec) and nsec >= 0.0 and nsec < 1e9
            and nsec == math.floor(nsec)):
        return -1
    return np.int64(sec) * 1_000_000_000 + np.int64(nsec)


@njit(types.float64(_F1, types.int64, types.int64, types.int64, types.int64, types.int64, types.int64),
      cache=True, nogil=True, inline="always")
def _rows_max(tmp, o, ncol, k0, k1, c0, c1):  # pragma: no cover (compiled)
    """``max |tmp[o + k ncol + j]|`` over the rows ``k0 <= k < k1`` and columns ``c0 <= j < c1`` of
    a row-major block at ``o`` (0.0 if empty), or -1.0 if any of them is NaN or Inf."""
    m = 0.0
    for k in range(k0, k1):
        for j in range(c0, c1):
            v = tmp[o + k * ncol + j]
            if not math.isfinite(v):
                return -1.0
            m = max(m, abs(v))
    return m


@njit(types.float64(_F1, types.int64, types.int64, types.int64, types.int64, _I1), cache=True, nogil=True, inline="always")
def _cols_max(tmp, o, ncol, k0, k1, cols):  # pragma: no cover (compiled)
    """As :func:`_rows_max` over the columns ``cols`` (the model's joints)."""
    m = 0.0
    for k in range(k0, k1):
        for j in range(cols.shape[0]):
            v = tmp[o + k * ncol + cols[j]]
            if not math.isfinite(v):
                return -1.0
            m = max(m, abs(v))
    return m


@njit(types.float64(types.float64, types.float64, types.float64, types.float64), cache=True, nogil=True, inline="always")
def _unit_norm(qx, qy, qz, qw):  # pragma: no cover (compiled)
    """The norm of a quaternion, or -1.0 if it is off 1 by more than ``QUATERNION_TOLERANCE`` (or NaN)."""
    nrm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    return nrm if abs(nrm - 1.0) <= QUATERNION_TOLERANCE else -1.0


@njit(types.int64(_B, _U8, types.int64, types.int64, types.int64, _F1, _F2, _F1, _F1), cache=True, nogil=True)
def _odometry(raw, key, start, total, pose, lim, C, V, tmp):  # pragma: no cover (compiled)
    """The odometry of the message ``raw`` (bytes) (numbers from byte ``pose``) into ``C`` (4, 4) and ``V`` (6,)
    spatial twist; the stamp, or -1."""
    buf = np.frombuffer(raw, np.uint8)
    stamp = _header(buf, key, start, total)
    if stamp < 0:
        return -1
    _doubles(buf, pose, 7, tmp)                        # position, quaternion xyzw
    _doubles(buf, pose + 43 * 8, 6, tmp[7:])          # twist: linear, angular (child frame)
    for i in range(13):
        if not math.isfinite(tmp[i]):
            return -1
    px, py, pz, qx, qy, qz, qw = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6]
    nrm = _unit_norm(qx, qy, qz, qw)
    if nrm < 0.0:
        return -1
    P = np.empty((4, 4))   # the pose, written into C once every check has passed
    unit_pose_into(px, py, pz, qx / nrm, qy / nrm, qz / nrm, qw / nrm, P)
    wr = np.empty(3)
    vr = np.empty(3)
    for i in range(3):
        wr[i] = P[i, 0] * tmp[10] + P[i, 1] * tmp[11] + P[i, 2] * tmp[12]
        vr[i] = P[i, 0] * tmp[7] + P[i, 1] * tmp[8] + P[i, 2] * tmp[9]
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
    for i in range(4):
        for j in range(4):
            C[i, j] = P[i, j]
    V[0], V[1], V[2], V[3], V[4], V[5] = wr[0], wr[1], wr[2], sx, sy, sz
    return stamp


@njit(types.int64(_U8, types.int64), cache=True, nogil=True)
def _u32(buf, p):  # pragma: no cover (compiled)
    return np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16) | (np.int64(buf[p + 3]) << 24)


@njit(types.int64(_B, _U8, types.int64, types.int64, _I8, _I1, _F1, _F1, _F1, _F1), cache=True, nogil=True)
def _joint_state(raw, key, start, total, lay, idx, lim, q, qd, tmp):  # pragma: no cover (compiled)
    """Positions and velocities of the message ``raw`` (bytes) reordered by ``idx`` into ``q``, ``qd``; the stamp, or -1.
    ``lay``: byte offsets and counts (position count at lay[0] = lay[1], numbers at lay[2];
    velocity count at lay[3] = lay[1], numbers at lay[4]; effort count at lay[5] = lay[6])."""
    buf = np.frombuffer(raw, np.uint8)
    stamp = _header(buf, key, start, total)
    k = lay[1]
    if stamp < 0 or _u32(buf, lay[0]) != k or _u32(buf, lay[3]) != k or _u32(buf, lay[5]) != lay[6]:
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


def _bytes(raw) -> bytes:
    """``raw`` as ``bytes`` (what rclpy's raw subscriptions give, the kernels' type; a copy otherwise)."""
    return raw if raw.__class__ is bytes else bytes(raw)


def _plain_cdr(raw: bytes) -> bool:
    """``raw`` is little-endian plain CDR (encapsulation ``0x0001``) with at least a header stamp."""
    return len(raw) >= 12 and raw[0] == 0 and raw[1] == 1


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
        if not _plain_cdr(raw):
            return
        r = CdrReader(raw)
        r.pads = []
        r.stamp_header("odom")
        r.string("odom.child_frame_id")
        end = 4 + r.pos
        p = r.f64_block(7 + 36 + 6 + 36, "odom")
        self._start, self._total, self._pose = end, len(raw), 4 + p
        self._key = _key(raw, end, r.pads)

    def spec(self):
        """The learned shape for a compiled caller (``latest_store``): ``(key, start, total, pose,
        scratch size)``, or None."""
        return None if self._key is None else (self._key, self._start, self._total, self._pose, 13)

    def decode(self, raw, C: np.ndarray, V: np.ndarray) -> int:
        """Stamp [ns] with ``C`` (4, 4) and ``V`` (6,) written, or -1 (declined: nothing written)."""
        if self._key is None:
            return -1
        return _odometry(_bytes(raw), self._key, self._start, self._total, self._pose,
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
        if not _plain_cdr(raw):
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

    def spec(self):
        """The learned shape for a compiled caller: ``(key, start, total, lay (7), idx, scratch
        size)``, or None."""
        if self._key is None:
            return None
        return self._key, self._start, self._total, self._lay, self._idx, self._tmp.shape[0]

    def decode(self, raw, q: np.ndarray, qd: np.ndarray) -> int:
        """Stamp [ns] with ``q``, ``qd`` (n,) written in model order, or -1 (declined)."""
        if self._key is None:
            return -1
        return _joint_state(_bytes(raw), self._key, self._start, self._total,
                            self._lay, self._idx, self._lim, q, qd, self._tmp)


@njit(types.int64(types.int64, types.int64, _I1, _F1, _F2, _F1, _F2, _F1), cache=True, nogil=True, inline="always")
def checked_flat_reference(stamp, ncol, cols, lim, com, yaw, Q, tmp):  # pragma: no cover (compiled)
    """The checks and writes of :func:`_flat_reference` on ``tmp`` (rows x ``ncol`` from
    ``tmp[2]``): ``stamp`` with ``com``, ``yaw``, ``Q`` written, or -1 (nothing written); also
    the typed flat reference's (:mod:`geodyn_ros.ros.wire.typed_raw`)."""
    r5, r3, n = com.shape[0], yaw.shape[0], Q.shape[1]
    # each max is -1 if a value is NaN or Inf; columns: CoM 0..2, yaw 3, the joints cols
    c01 = _rows_max(tmp, 2, ncol, 0, 2, 0, 3)       # CoM, CoM' (their norms are checked below)
    c2 = _rows_max(tmp, 2, ncol, 2, r5, 0, 3)       # higher CoM derivatives
    y0, y1 = _rows_max(tmp, 2, ncol, 0, 1, 3, 4), _rows_max(tmp, 2, ncol, 1, 2, 3, 4)
    y2 = _rows_max(tmp, 2, ncol, 2, r3, 3, 4)
    q0, qd, q2 = _cols_max(tmp, 2, ncol, 0, 1, cols), _cols_max(tmp, 2, ncol, 1, 2, cols), \
        _cols_max(tmp, 2, ncol, 2, r3, cols)
    if min(c01, c2, y0, y1, y2, q0, qd, q2) < 0.0:
        return -1
    hi = max(c2, y0, y2, q0, q2)   # max |higher CoM derivative|, |yaw| and |yaw^(2..)|, |q| and |q^(2..)|
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
    return stamp


@njit(types.int64(_B, _U8, types.int64, types.int64, types.int64, types.int64, _I1, _F1, _F2, _F1, _F2,
                  _F1), cache=True, nogil=True)
def _flat_reference(raw, key, kend, start, total, ncol, cols, lim, com, yaw, Q, tmp):  # pragma: no cover
    """Flat reference of the message ``raw`` (bytes; doubles from byte ``start``: stamp, then ``rows`` x
    ``ncol``) into ``com`` (r+5, 3), ``yaw`` (r+3,), ``Q`` (r+3, n) (joint columns ``cols``), checked as
    ``FlatReferenceDecoder.decode`` and ``check_plausible_flat`` check them; the stamp, or -1.
    ``raw[4:kend]`` (the layout and the data count) must match ``key``."""
    buf = np.frombuffer(raw, np.uint8)
    stamp = _array_head(buf, key, kend, total, start, 2 + com.shape[0] * ncol, tmp)
    if stamp < 0:
        return -1
    return checked_flat_reference(stamp, ncol, cols, lim, com, yaw, Q, tmp)


class _FastArray:
    """The shape (layout bytes, row and column counts) of the last ``Float64MultiArray`` of
    ``_TOPIC`` the full path accepted: ``_HEAD`` leading doubles (the stamp first), then at least
    ``order + _ROWS`` rows of at least ``_MIN_COLS`` columns (module docstring)."""

    __slots__ = ("_key", "_kend", "_start", "_total", "_ncol", "_cols", "_lim", "_tmp", "_r")
    _TOPIC, _HEAD, _ROWS, _MIN_COLS = "", 0, 0, 0

    def __init__(self, limits: dict, order: int):
        self._key = None
        self._lim = _limits(limits)
        self._r = order

    def learn(self, raw, cols: np.ndarray) -> None:
        """Record the shape of ``raw`` (a message of ``_TOPIC`` the full path just accepted) and
        its joint columns ``cols`` (model order)."""
        raw = bytes(raw)
        self._key = None
        if not _plain_cdr(raw):
            return
        t = self._TOPIC
        r = CdrReader(raw)
        r.pads = []
        nd = r.u32(t + ".layout.dim")
        sizes = []
        for _ in range(nd):
            r.string(t + ".layout.dim.label", "MAX_LABEL_BYTES")
            sizes.append(r.u32(t + ".layout.dim.size"))
            r.u32(t + ".layout.dim.stride")
        r.u32(t + ".layout.data_offset")
        count = r.u32(t + ".data")
        key_end = 4 + r.pos
        start = 4 + r.f64_block(count, t + ".data")
        if nd != 2 or count != self._HEAD + sizes[0] * sizes[1] or sizes[0] < self._r + self._ROWS \
                or sizes[1] < self._MIN_COLS:
            return
        self._ncol = sizes[1]
        self._kend, self._start, self._total = key_end, start, len(raw)
        self._cols = np.ascontiguousarray(cols, dtype=np.intp)
        self._tmp = np.zeros(self._HEAD + (self._r + self._ROWS) * self._ncol)
        # the key runs to the end of the data count; the padding before the doubles is not compared
        self._key = _key(raw, key_end, r.pads, lo=4)


class FastFlatReference(_FastArray):
    """The shape of the last ``flat_reference`` message the full path accepted (joint columns
    ``cols`` in :meth:`learn`: ``FlatReferenceDecoder``'s); then one compiled call per message of
    that shape (module docstring)."""

    __slots__ = ()
    _TOPIC, _HEAD, _ROWS, _MIN_COLS = "flat_reference", 2, 5, 0

    def decode(self, raw, com: np.ndarray, yaw: np.ndarray, Q: np.ndarray) -> int:
        """Stamp [ns] with ``com[:r+5]``, ``yaw[:r+3]``, ``Q[:r+3]`` written, or -1 (declined)."""
        if self._key is None:
            return -1
        r = self._r
        return _flat_reference(_bytes(raw), self._key, self._kend, self._start,
                               self._total, self._ncol, self._cols, self._lim, com[:r + 5], yaw[:r + 3],
                               Q[:r + 3], self._tmp)


@njit(types.int64(types.int64, types.int64, _I1, _F1, _F2, _F2, _F2, _F1), cache=True, nogil=True, inline="always")
def checked_reference(stamp, ncol, cols, lim, C, V, Q, tmp):  # pragma: no cover (compiled)
    """The checks and writes of :func:`_reference` on ``tmp`` (``tmp[2:9]`` position and ``xyzw``,
    then rows x ``ncol`` from ``tmp[9]``): ``stamp`` with ``C``, ``V``, ``Q`` written, or -1 (nothing
    written); also the typed reference's (:mod:`geodyn_ros.ros.wire.typed_raw`)."""
    r2, r3, n = V.shape[0], Q.shape[0], Q.shape[1]
    for i in range(2, 9):
        if not math.isfinite(tmp[i]):
            return -1
    px, py, pz, qx, qy, qz, qw = tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7], tmp[8]
    nrm = _unit_norm(qx, qy, qz, qw)
    if nrm < 0.0:
        return -1
    v0, hi = _rows_max(tmp, 9, ncol, 0, 1, 0, 6), _rows_max(tmp, 9, ncol, 1, r2, 0, 6)   # V; hi: |V^(1..r+1)|
    q0, qd, q2 = _cols_max(tmp, 9, ncol, 0, 1, cols), _cols_max(tmp, 9, ncol, 1, 2, cols), \
        _cols_max(tmp, 9, ncol, 2, r3, cols)
    if min(v0, hi, q0, qd, q2) < 0.0:   # a NaN or an Inf
        return -1
    qhi = max(q0, q2)   # max |q|, |q^(2..r+2)|
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
    unit_pose_into(px, py, pz, qx / nrm, qy / nrm, qz / nrm, qw / nrm, C)
    for k in range(r2):
        for j in range(6):
            V[k, j] = tmp[9 + k * ncol + j]
    for k in range(r3):
        for j in range(n):
            Q[k, j] = tmp[9 + k * ncol + cols[j]]
    return stamp


@njit(types.int64(_B, _U8, types.int64, types.int64, types.int64, types.int64, _I1, _F1, _F2, _F2, _F2,
                  _F1), cache=True, nogil=True)
def _reference(raw, key, kend, start, total, ncol, cols, lim, C, V, Q, tmp):  # pragma: no cover (compiled)
    """Reference jet of the message ``raw`` (bytes; doubles from byte ``start``: stamp, position, ``xyzw``
    quaternion, then rows x ``ncol``) into ``C`` (4, 4), ``V`` (r+2, 6), ``Q`` (r+3, n) (joint columns ``cols``),
    checked as ``ReferenceDecoder.decode`` and ``check_plausible`` (with the twist jet) check them;
    the stamp, or -1. ``raw[4:kend]`` (the layout and the data count) must match ``key``."""
    buf = np.frombuffer(raw, np.uint8)
    stamp = _array_head(buf, key, kend, total, start, 9 + Q.shape[0] * ncol, tmp)
    if stamp < 0:
        return -1
    return checked_reference(stamp, ncol, cols, lim, C, V, Q, tmp)


class FastReference(_FastArray):
    """The shape of the last ``reference`` message the full path accepted (joint columns ``cols``
    in :meth:`learn`, counted from column 0); then one compiled call per message of that shape
    (module docstring). Stricter than the full path in one respect: the twist jet's plausibility
    is always checked (the node checks a non-spatial jet only after converting it), so such a
    message may be declined and then take the full path."""

    __slots__ = ()
    _TOPIC, _HEAD, _ROWS, _MIN_COLS = "reference", 9, 3, 6

    def spec(self):
        """The learned shape for a compiled caller: ``(1, (key,), (kend, start, total, 0, 0, 0, 0),
        ncol, cols, scratch size)``, or None (the layout's kind is 1)."""
        if self._key is None:
            return None
        return 1, (self._key,), (self._kend, self._start, self._total, 0, 0, 0, 0), self._ncol, self._cols, \
            self._tmp.shape[0]

    def decode(self, raw, C: np.ndarray, V: np.ndarray, Q: np.ndarray) -> int:
        """Stamp [ns] with ``C`` (4, 4), ``V[:r+2]``, ``Q[:r+3]`` written, or -1 (declined)."""
        if self._key is None:
            return -1
        r = self._r
        return _reference(_bytes(raw), self._key, self._kend, self._start, self._total,
                          self._ncol, self._cols, self._lim, C, V[:r + 2], Q[:r + 3], self._tmp)
