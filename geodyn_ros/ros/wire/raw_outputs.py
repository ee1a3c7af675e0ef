"""``geodyn_node``'s ``Float64MultiArray`` outputs as serialized templates rewritten in place.

Each output message is built once by :mod:`geodyn_ros.ros.wire.jets` (the layout, labels and length of
the topic), serialized once by rclpy (:func:`geodyn_ros.ros.wire.cdr.multiarray_template`), and every
cycle only its numbers are written into the bytes that ``Publisher.publish`` sends: no Python
message, no ``array.array`` and no serialization per cycle. ``test/ros/nodes/test_ros_geodyn_node.py`` and
``test/ros/nodes/test_ros_flat.py`` decode what the node publishes with rclpy's own deserializer.

Also :func:`sqrt_jet`, the derivatives of a square root (the rotor speeds of flat mode), compiled.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from ...lie import rotation_to_wxyz

from .cdr import multiarray_template
from .jets import (FEEDFORWARD_OFFSET, REFERENCE_OFFSET, FeedforwardJetPacker, FlatFeedforwardPacker,
                   RotorSpeedPacker, make_reference_msg)

__all__ = ["JetOutput", "DesiredStateOutput", "FlatJetOutput", "RotorSpeedOutput", "quat_xyzw", "readonly_views",
           "rotor_speed_jet", "sqrt_jet"]


class _RawArray:
    """A serialized ``Float64MultiArray`` (of ``msg``'s layout and length); ``body`` is the
    writable (rows, cols) view of its data after ``offset`` leading values (the stamp first)."""

    __slots__ = ("_raw", "data", "body")

    def __init__(self, msg, offset: int, rows: int, cols: int):
        self._raw = multiarray_template(msg)
        self.data = self._raw.fields["data"]
        self.body = self.data[offset:].reshape(rows, cols)

    def _stamp(self, stamp_ns: int) -> None:
        self.data[0], self.data[1] = divmod(int(stamp_ns), 1_000_000_000)


class JetOutput(_RawArray):
    """``feedforward/jet`` (layout of :class:`geodyn_ros.ros.wire.jets.FeedforwardJetPacker`)."""

    def __init__(self, joint_names, order: int):
        r1, n = order + 1, len(joint_names)
        super().__init__(FeedforwardJetPacker(joint_names, order).pack(0, np.zeros((r1, 6)), np.zeros((r1, n))),
                         FEEDFORWARD_OFFSET, r1, 6 + n)

    def template(self) -> tuple:
        """``(buffer, 0, 0, data, 1)``: the template's bytearray and the byte offset of its ``data``
        (stamp, then the rows), for a compiled writer (``latest_store``; kind 1: the layout)."""
        buf = self._raw._buf
        return buf, 0, 0, self.data.ctypes.data - np.frombuffer(buf, dtype=np.uint8).ctypes.data, 1

    def write(self, stamp_ns: int, W: np.ndarray, tau: np.ndarray) -> bytes:
        """The serialized message of ``W^(0..r)`` (r+1, 6) and ``tau^(0..r)`` (r+1, n) stamped ``stamp_ns``."""
        self._stamp(stamp_ns)
        self.body[:, :6] = W
        self.body[:, 6:] = tau
        return self._raw.payload()

    def write_finite(self, stamp_ns: int, W: np.ndarray, tau: np.ndarray):
        """As :meth:`write` in one compiled call (no numpy call per cycle), which also checks the
        values: the serialized message, or None if ``W`` or ``tau`` holds a NaN or an Inf (then
        the template holds them until the next write, and nothing should be published)."""
        if _fill_jet(self.data, stamp_ns, W, tau):
            return self._raw.payload()
        return None


_F1W = types.Array(types.float64, 1, "C")
_F2R = types.Array(types.float64, 2, "A", readonly=True)   # writable arrays convert to it: one signature


@njit(types.boolean(_F1W, types.int64, _F2R, _F2R), cache=True, nogil=True)
def _fill_jet(data, stamp_ns, W, tau):  # pragma: no cover (compiled)
    """``data`` = (sec, nanosec, then rows ``(W^(k), tau^(k))``) of a ``feedforward/jet``
    (``FEEDFORWARD_OFFSET`` = 2); True if every written value is finite (an overflowing sum counts
    as not finite, as ``math.isfinite(W.sum() + tau.sum())`` does)."""
    data[0] = stamp_ns // 1_000_000_000
    data[1] = stamp_ns % 1_000_000_000
    r1, nw = W.shape
    n = tau.shape[1]
    if tau.shape[0] != r1 or data.shape[0] != 2 + r1 * (nw + n):   # the kernel does not check bounds
        raise ValueError("W, tau: shapes do not fit the feedforward/jet template")
    o = 2
    s = 0.0
    for k in range(r1):
        for j in range(nw):
            x = W[k, j]
            data[o + j] = x
            s += x
        o += nw
        for j in range(n):
            x = tau[k, j]
            data[o + j] = x
            s += x
        o += n
    return s - s == 0.0   # NaN and Inf propagate into the sum; Inf - Inf is NaN


class DesiredStateOutput(_RawArray):
    """``desired/state`` (the reference-jet layout of :func:`geodyn_ros.ros.wire.jets.make_reference_msg`:
    stamp, base position, ``xyzw`` quaternion, then rows ``(V^(k), q^(k))``)."""

    def __init__(self, joint_names, order: int):
        K1, n = order + 2, len(joint_names)
        super().__init__(make_reference_msg(0, np.eye(4), np.zeros((K1, 6)), np.zeros((K1, n)), joint_names),
                         REFERENCE_OFFSET, K1, 6 + n)

    def write(self, stamp_ns: int, C: np.ndarray, V: np.ndarray, q: np.ndarray) -> bytes:
        """The serialized message of the pose ``C`` (4, 4), twist jet ``V`` (r+2, 6) and joint jet
        ``q`` (r+2, n), as ``make_reference_msg`` would pack them (the quaternion to rounding)."""
        self._stamp(stamp_ns)
        self.data[2:5] = C[:3, 3]
        self.data[5:9] = quat_xyzw(C)
        self.body[:, :6] = V
        self.body[:, 6:] = q
        return self._raw.payload()

    def write_ro(self, stamp_ns: int, C: np.ndarray, V: np.ndarray, q: np.ndarray) -> bytes:
        """As :meth:`write` in one compiled call (the same quaternion kernel, so the same bytes);
        ``C``, ``V``, ``q`` read-only float64 views (made once: the compiled signature), ``q``
        with at least ``V``'s rows (the first are written)."""
        _fill_desired(self.data, stamp_ns, C, V, q)
        return self._raw.payload()


class FlatJetOutput(_RawArray):
    """``feedforward/flat_jet`` (layout of :class:`geodyn_ros.ros.wire.jets.FlatFeedforwardPacker`)."""

    def __init__(self, joint_names, order: int):
        r1, n = order + 1, len(joint_names)
        msg = FlatFeedforwardPacker(joint_names, order).pack(0, np.zeros(r1), np.zeros((r1, 3)), np.zeros((r1, n)))
        super().__init__(msg, FEEDFORWARD_OFFSET, r1, 4 + n)

    def write(self, stamp_ns: int, thrust: np.ndarray, torque: np.ndarray, tau: np.ndarray) -> bytes:
        """``T^(0..r)`` (r+1,), ``tau_b^(0..r)`` (r+1, 3), ``tau^(0..r)`` (r+1, n), serialized."""
        self._stamp(stamp_ns)
        self.body[:, 0] = thrust
        self.body[:, 1:4] = torque
        self.body[:, 4:] = tau
        return self._raw.payload()

    def write_ro(self, stamp_ns: int, thrust: np.ndarray, torque: np.ndarray, tau: np.ndarray) -> bytes:
        """As :meth:`write` in one compiled call (the same bytes); read-only float64 views (made
        once: the compiled signature)."""
        _fill_flat(self.data, stamp_ns, thrust, torque, tau)
        return self._raw.payload()


class RotorSpeedOutput(_RawArray):
    """``feedforward/rotor_speeds`` (layout of :class:`geodyn_ros.ros.wire.jets.RotorSpeedPacker`)."""

    __slots__ = ("_al", "_A", "_umax")

    def __init__(self, rotor_names, order: int):
        r1, m = order + 1, len(rotor_names)
        super().__init__(RotorSpeedPacker(rotor_names, order).pack(0, np.zeros((r1, m))), FEEDFORWARD_OFFSET, r1, m)

    def write(self, stamp_ns: int, omega: np.ndarray) -> bytes:
        """``omega_d^(0..r)`` (r+1, n_r), serialized."""
        self._stamp(stamp_ns)
        self.body[:] = omega
        return self._raw.payload()

    def write_flat(self, stamp_ns: int, allocation, rotor_names, thrust: np.ndarray, torque: np.ndarray):
        """:func:`rotor_speed_jet` written into the template in one compiled call: ``(payload, "")``,
        or ``(None, problem)`` with its refusal line. The allocation ``u = A4^+ (T, tau_b)`` is
        summed in a loop (numpy's product may round the last bit otherwise); on a refusal the numpy
        path decides and words it. ``thrust`` (r+1,), ``torque`` (r+1, 3): read-only float64 views."""
        if allocation is not getattr(self, "_al", None):   # a new allocation (a new model): its constants once
            self._al = allocation
            self._A = np.ascontiguousarray(allocation.A4_pinv, dtype=np.float64)
            self._A.flags.writeable = False
            lim = np.broadcast_to(np.asarray(allocation.max_rot_velocity, dtype=np.float64), self._A.shape[:1])
            self._umax = np.array(lim ** 2)   # as rotor_speed_jet's max_rot_velocity ** 2
            self._umax.flags.writeable = False
        if _fill_rotor(self.data, stamp_ns, self._A, self._umax, thrust, torque):
            return self._raw.payload(), ""
        omega, problem = rotor_speed_jet(allocation, rotor_names, thrust, torque)
        return (None, problem) if omega is None else (self.write(stamp_ns, omega), "")


_F2R = types.Array(types.float64, 2, "C", readonly=True)
_F2A = types.Array(types.float64, 2, "A", readonly=True)


_R1 = types.Array(types.float64, 1, "A", readonly=True)


@njit(types.void(_F1W, types.int64, _R1, _F2A, _F2A), cache=True, nogil=True)
def _fill_flat(data, stamp_ns, T, tb, tau):  # pragma: no cover (compiled)
    """``data`` = (sec, nanosec, then rows ``(T^(k), tau_b^(k), tau^(k))``) of a ``feedforward/flat_jet``."""
    r1, n = tau.shape
    if T.shape[0] != r1 or tb.shape[0] != r1 or tb.shape[1] != 3 or data.shape[0] != 2 + r1 * (4 + n):
        raise ValueError("thrust, torque, tau: shapes do not fit the feedforward/flat_jet template")
    data[0] = stamp_ns // 1_000_000_000
    data[1] = stamp_ns % 1_000_000_000
    o = 2
    for k in range(r1):
        data[o] = T[k]
        data[o + 1] = tb[k, 0]
        data[o + 2] = tb[k, 1]
        data[o + 3] = tb[k, 2]
        for j in range(n):
            data[o + 4 + j] = tau[k, j]
        o += 4 + n


@njit(types.void(_F1W, types.int64, _F2A, _F2A, _F2A), cache=True, nogil=True)
def _fill_desired(data, stamp_ns, C, V, q):  # pragma: no cover (compiled)
    """``data`` of a ``desired/state`` (``REFERENCE_OFFSET`` = 9: stamp, position, ``xyzw``, then
    rows ``(V^(k), q^(k))`` for the rows of ``V``)."""
    K1 = V.shape[0]
    n = q.shape[1]
    if V.shape[1] != 6 or q.shape[0] < K1 or data.shape[0] != 9 + K1 * (6 + n):
        raise ValueError("C, V, q: shapes do not fit the desired/state template")
    data[0] = stamp_ns // 1_000_000_000
    data[1] = stamp_ns % 1_000_000_000
    for a in range(3):
        data[2 + a] = C[a, 3]
    w, x, y, z = rotation_to_wxyz(C)   # the one implementation of lie.matrix_to_quat
    data[5], data[6], data[7], data[8] = x, y, z, w
    o = 9
    for k in range(K1):
        for j in range(6):
            data[o + j] = V[k, j]
        for j in range(n):
            data[o + 6 + j] = q[k, j]
        o += 6 + n


@njit(types.void(_F2A, types.Array(types.float64, 2, "C")), cache=True, nogil=True, inline="always")
def _sqrt_series(u, w):  # pragma: no cover (compiled)
    """``w`` (K, m) = the derivatives ``w^(0..K-1)`` of ``w = sqrt(u)`` from ``u^(0..K-1)`` (K, m)
    (:func:`sqrt_jet`'s series; ``u^(0) > 0`` checked by the caller); the one series of
    :func:`_sqrt_jet` and :func:`_fill_rotor`."""
    K, m = u.shape
    if w.shape[0] != K or w.shape[1] != m:   # the kernel does not check bounds
        raise ValueError("u, w: shapes differ")
    fact = 1.0
    for j in range(m):
        w[0, j] = np.sqrt(u[0, j])
    for k in range(1, K):   # Taylor coefficients u_k = u^(k)/k!: w_k = (u_k - sum_{j=1}^{k-1} w_j w_(k-j)) / (2 w_0)
        fact *= k
        for j in range(m):
            s = u[k, j] / fact
            for i in range(1, k):
                s -= w[i, j] * w[k - i, j]
            w[k, j] = s / (2.0 * w[0, j])
    fact = 1.0
    for k in range(1, K):   # back from Taylor coefficients to derivatives
        fact *= k
        for j in range(m):
            w[k, j] *= fact


@njit(types.boolean(_F1W, types.int64, _F2A, _R1, _R1, _F2A), cache=True, nogil=True)
def _fill_rotor(data, stamp_ns, A, umax, T, tb):  # pragma: no cover (compiled)
    """``data`` of a ``feedforward/rotor_speeds``: ``u^(k) = A (T^(k), tb^(k))`` (``A`` = A4^+,
    (m, 4)), then ``omega = sqrt(u)`` by :func:`_sqrt_series`; False (``data`` partly
    written) unless every ``0 < u^(0)_i < umax_i``."""
    r1, m = T.shape[0], A.shape[0]
    if tb.shape[0] != r1 or tb.shape[1] != 3 or A.shape[1] != 4 or umax.shape[0] != m \
            or data.shape[0] != 2 + r1 * m:
        raise ValueError("thrust, torque: shapes do not fit the feedforward/rotor_speeds template")
    u = np.empty((r1, m))
    for k in range(r1):
        for i in range(m):
            u[k, i] = T[k] * A[i, 0] + (tb[k, 0] * A[i, 1] + tb[k, 1] * A[i, 2] + tb[k, 2] * A[i, 3])
    for i in range(m):
        if not (u[0, i] > 0.0 and u[0, i] < umax[i]):
            return False
    _sqrt_series(u, data[2:].reshape(r1, m))   # straight into the template, after the stamp
    data[0] = stamp_ns // 1_000_000_000
    data[1] = stamp_ns % 1_000_000_000
    return True


def readonly_views(arrays) -> tuple:
    """Read-only views of ``arrays`` (the compiled writers' signature), made once per buffer."""
    views = tuple(a.view() for a in arrays)
    for v in views:
        v.flags.writeable = False
    return views


def quat_xyzw(C: np.ndarray) -> np.ndarray:
    """Unit quaternion ``xyzw`` (w >= 0) of the rotation of the pose ``C`` (4, 4) (or of ``C`` (3, 3)):
    :func:`geodyn_ros.lie.rotation_to_wxyz`, the kernel of ``matrix_to_quat`` (the same bytes)."""
    C = np.asarray(C, dtype=np.float64)
    if C.shape not in ((3, 3), (4, 4)):
        raise ValueError(f"C: a (4, 4) pose or a (3, 3) rotation expected, got shape {C.shape}")
    w, x, y, z = rotation_to_wxyz(C)
    return np.array([x, y, z, w])


@njit(types.Array(types.float64, 2, "C")(_F2R), cache=True, nogil=True)
def _sqrt_jet(u):  # pragma: no cover (compiled)
    w = np.empty(u.shape)
    _sqrt_series(u, w)
    return w


def sqrt_jet(u: np.ndarray) -> np.ndarray:
    """Derivatives ``w^(0..K-1)`` (K, m) of ``w = sqrt(u)`` column by column from ``u^(0..K-1)``
    (K, m) with ``u^(0) > 0`` (the caller checks), by the Taylor series of the square root
    (``w_0 = sqrt(u_0)``, ``w_k = (u_k - sum_{j=1}^{k-1} w_j w_{k-j}) / (2 w_0)`` on the
    coefficients ``x_k = x^(k) / k!``)."""
    u = np.ascontiguousarray(u, dtype=np.float64).view()   # a read-only view (the compiled signature)
    u.flags.writeable = False
    return _sqrt_jet(u)


def rotor_speed_jet(allocation, rotor_names, thrust, torque):
    """``(omega, "")``: ``omega_d^(0..r)`` (r+1, n_r) of ``u = A4^+ (T, tau_b)`` (u = omega^2; the
    allocation is constant, so ``u^(k) = A4^+ (T^(k), tau_b^(k))``) by the square-root series
    (:func:`sqrt_jet`); or ``(None, problem)`` (one line naming the rotor) when a rotor would need
    ``u <= 0`` or more than ``allocation.max_rot_velocity``. ``thrust`` (r+1,), ``torque`` (r+1, 3)."""
    al = allocation
    u = al.allocate_thrust_torque(thrust, torque)            # (r+1, n_r), row k = u^(k)
    if not (u[0] > 0.0).all() or not (u[0] < al.max_rot_velocity ** 2).all():
        i = int(np.argmin(u[0])) if not (u[0] > 0.0).all() else int(np.argmax(u[0]))
        lim = float(np.broadcast_to(al.max_rot_velocity, u[0].shape)[i])   # a float, or one per rotor
        return None, (f"feedforward/rotor_speeds not published: rotor {rotor_names[i]} would need omega^2 = "
                      f"{u[0, i]:.6g} (outside (0, {lim:g}^2) rad^2/s^2); the other outputs "
                      "are published")
    return sqrt_jet(u), ""
