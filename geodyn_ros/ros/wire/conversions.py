"""Conversions between ROS messages and the arrays of the dynamics core.

Every parser here validates what it reads and raises :class:`InputError` (a ``ValueError``)
with a message naming the topic field, so a node can skip the cycle and report why. Parsers
write into caller-owned buffers where the data is per-cycle, so the hot path allocates little.

Frames (``CONVENTIONS.md``, REP 103/105)
---------------------------------------
* ``nav_msgs/Odometry``: ``pose`` is the base-link frame in ``header.frame_id`` (the world),
  ``twist`` is expressed in ``child_frame_id`` (the base link), **linear first**: the velocity
  of the base-link origin and the angular velocity, both in base axes. That body twist, angular
  first, is ``V_b = (w_b, v_b)`` and the spatial twist of the core is ``V = Ad_C V_b``.
* Quaternions in ROS messages are ``(x, y, z, w)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

__all__ = ["odometry_from_fields", 
    "InputError",
    "JointNameMatcher",
    "QUATERNION_TOLERANCE",
    "stamp_to_ns",
    "set_stamp",
    "as_float64",
    "pose_matrix",
    "body_to_spatial_twist",
    "spatial_to_body_wrench",
    "parse_odometry",
    "parse_body_wrench",
    "write_body_wrench",
]

#: Largest accepted deviation of a quaternion's norm from 1 (float64 sources are exact to
#: ~1e-16; this also admits quaternions that were normalized in float32 and widened).
QUATERNION_TOLERANCE = 1e-6


class InputError(ValueError):
    """An input message that must not be used (the message says which field and why)."""


#: builtin_interfaces/Time: sec is int32; a stamp must lie in [0, 2^31) s
MAX_STAMP_SEC = 2**31 - 1


def checked_stamp_ns(sec, nanosec, topic: str) -> int:
    """Integer nanoseconds of a stamp ``(sec, nanosec)`` given as numbers of any type; raises
    :class:`InputError` (never an arithmetic exception) unless ``sec`` is an integer in
    ``0..2^31-1`` and ``nanosec`` an integer in ``0..999999999`` (NaN, Inf, 1e300, negative,
    fractional and beyond-int64 values are all refused)."""
    try:
        fs, fn = float(sec), float(nanosec)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{topic}: stamp ({sec!r}, {nanosec!r}) is not a pair of numbers") from None
    if not (math.isfinite(fs) and math.isfinite(fn) and fs == int(fs) and fn == int(fn)
            and 0 <= fs <= MAX_STAMP_SEC and 0 <= fn < 1e9):
        raise InputError(f"{topic}: stamp (sec {fs:.6g}, nanosec {fn:.6g}) is not a valid time: sec must be "
                         f"an integer in 0..{MAX_STAMP_SEC}, nanosec an integer in 0..999999999")
    return int(fs) * 1_000_000_000 + int(fn)


def stamp_to_ns(stamp) -> int:
    """``builtin_interfaces/Time`` -> integer nanoseconds (exact); :class:`InputError` for a
    negative time."""
    if stamp.sec < 0:
        raise InputError(f"stamp sec {stamp.sec} is negative")
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def set_stamp(stamp, ns: int) -> None:
    """Write integer nanoseconds into a ``builtin_interfaces/Time`` (in place, exact)."""
    stamp.sec, stamp.nanosec = divmod(int(ns), 1_000_000_000)


def pose_matrix(px, py, pz, qx, qy, qz, qw, out: np.ndarray, what: str) -> np.ndarray:
    """Write the 4x4 transform of a position and an ``xyzw`` quaternion into ``out``.

    Raises :class:`InputError` naming ``what`` if a value is not finite or the quaternion's
    norm differs from 1 by more than :data:`QUATERNION_TOLERANCE`; an accepted quaternion is
    normalized, so the matrix is a rigid transform to rounding.
    """
    vals = (px, py, pz, qx, qy, qz, qw)
    if not all(math.isfinite(v) for v in vals):
        raise InputError(f"{what}: NaN or Inf in position/orientation")
    nrm = math.hypot(qx, qy, qz, qw)   # no overflow for absurd (finite) components
    if abs(nrm - 1.0) > QUATERNION_TOLERANCE:
        raise InputError(f"{what}: orientation quaternion is not unit (norm {nrm:.9g})")
    unit_pose_into(px, py, pz, qx / nrm, qy / nrm, qz / nrm, qw / nrm, out)
    return out


@njit(types.void(types.float64, types.float64, types.float64, types.float64, types.float64, types.float64,
                 types.float64, types.Array(types.float64, 2, "A")), cache=True, nogil=True, inline="always")
def unit_pose_into(px, py, pz, x, y, z, w, out):  # pragma: no cover (compiled)
    """``out`` (4, 4) = the rigid transform of the position ``(px, py, pz)`` and the **unit**
    quaternion ``(x, y, z, w)`` (normalized by the caller; not checked), compiled: the one
    formula of :func:`pose_matrix` and of :mod:`geodyn_ros.ros.wire.fast_inputs`' decoders."""
    if out.shape[0] != 4 or out.shape[1] != 4:   # the kernel does not check bounds
        raise ValueError("out: a (4, 4) array expected")
    out[0, 0] = 1 - 2 * (y * y + z * z)
    out[0, 1] = 2 * (x * y - z * w)
    out[0, 2] = 2 * (x * z + y * w)
    out[1, 0] = 2 * (x * y + z * w)
    out[1, 1] = 1 - 2 * (x * x + z * z)
    out[1, 2] = 2 * (y * z - x * w)
    out[2, 0] = 2 * (x * z - y * w)
    out[2, 1] = 2 * (y * z + x * w)
    out[2, 2] = 1 - 2 * (x * x + y * y)
    out[0, 3], out[1, 3], out[2, 3] = px, py, pz
    out[3, 0] = out[3, 1] = out[3, 2] = 0.0
    out[3, 3] = 1.0


def body_to_spatial_twist(C: np.ndarray, w_b, v_b, out: np.ndarray) -> np.ndarray:
    """Spatial twist ``V = Ad_C (w_b, v_b)`` (angular first) of a body twist, into ``out`` (6,).

    ``w_b`` is the angular velocity and ``v_b`` the velocity of the frame origin, both in
    body axes. Then ``w = R w_b`` and ``v = p x w + R v_b`` (the velocity of the body point at
    the world origin), the spatial twist of ``CONVENTIONS.md``.
    """
    R = C[:3, :3]
    w = R @ np.asarray(w_b, dtype=float)
    v = R @ np.asarray(v_b, dtype=float)
    px, py, pz = C[0, 3], C[1, 3], C[2, 3]
    out[:3] = w
    out[3] = py * w[2] - pz * w[1] + v[0]          # p x w + R v_b (np.cross costs ~10 us here)
    out[4] = pz * w[0] - px * w[2] + v[1]
    out[5] = px * w[1] - py * w[0] + v[2]
    return out


def spatial_to_body_wrench(C: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Body wrench ``W_b = Ad_C^T W`` (moment first) of a spatial wrench ``W`` (6,).

    ``W = (n, f)`` is the moment about the world origin and the force in world axes;
    ``W_b = (R^T (n - p x f), R^T f)`` is the moment about the body-frame origin and the force,
    both in body axes (what ``geometry_msgs/WrenchStamped`` with ``frame_id`` = body carries).
    """
    R = C[:3, :3]
    px, py, pz = C[0, 3], C[1, 3], C[2, 3]
    fx, fy, fz = W[3], W[4], W[5]
    m = np.array([W[0] - (py * fz - pz * fy), W[1] - (pz * fx - px * fz), W[2] - (px * fy - py * fx)])
    out = np.empty(6)
    out[:3] = R.T @ m          # moment about the body origin, body axes
    out[3:] = R.T @ W[3:]
    return out


def parse_odometry(msg, C_out: np.ndarray, V_out: np.ndarray, child_frame: str | None = None,
                   Vb_out: np.ndarray | None = None):
    """Base pose and spatial twist from a ``nav_msgs/Odometry`` (REP 105), into the buffers.

    Parameters
    ----------
    msg : nav_msgs/Odometry
        ``pose.pose`` is the base in ``header.frame_id``; ``twist.twist`` is in
        ``child_frame_id``, linear first (velocity of the base-link origin, angular velocity).
    C_out : ndarray (4, 4)
        Receives the base pose ``C``.
    V_out : ndarray (6,)
        Receives the spatial twist ``V = Ad_C (w_b, v_b)``, angular first.
    child_frame : str or None
        If given and ``msg.child_frame_id`` is non-empty, it must equal this name (the twist
        would otherwise be in some other frame).
    Vb_out : ndarray (6,), optional
        Also receives the body twist ``(w_b, v_b)`` as carried by the message (angular first).

    Raises
    ------
    InputError
        NaN/Inf, a non-unit quaternion, or a mismatching ``child_frame_id``.
    """
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    return odometry_from_fields(msg.child_frame_id, (p.x, p.y, p.z, o.x, o.y, o.z, o.w),
                                (lin.x, lin.y, lin.z, ang.x, ang.y, ang.z), C_out, V_out, child_frame, Vb_out)


def odometry_from_fields(child_frame_id: str, pose, twist, C_out: np.ndarray, V_out: np.ndarray,
                         child_frame: str | None = None, Vb_out: np.ndarray | None = None):
    """:func:`parse_odometry` from the fields: ``pose`` (7,) = position, ``xyzw`` quaternion;
    ``twist`` (6,) = linear, angular (the message's order, child frame). Same checks and outputs."""
    if child_frame and child_frame_id and child_frame_id != child_frame:
        raise InputError(f"odom: child_frame_id '{child_frame_id}' is not the base link "
                         f"'{child_frame}' (the twist must be in the base-link frame, REP 105)")
    pose_matrix(*pose, C_out, "odom.pose")
    lx, ly, lz, ax, ay, az = twist
    tw = (ax, ay, az, lx, ly, lz)
    if not all(math.isfinite(v) for v in tw):
        raise InputError("odom.twist: NaN or Inf")
    body_to_spatial_twist(C_out, tw[:3], tw[3:], V_out)
    if Vb_out is not None:
        Vb_out[:] = tw
    return C_out, V_out


def parse_body_wrench(msg, base_link: str, out: np.ndarray, what: str) -> np.ndarray:
    """Body wrench ``(n_b, f_b)`` (moment first) of a ``geometry_msgs/WrenchStamped``, into ``out``.

    The message must be in the base-link frame (``frame_id`` = ``base_link`` or empty): moment
    about the base-link origin and force, base axes. Raises :class:`InputError` naming ``what``
    for another frame or NaN/Inf; ``out`` is only written for a good message.
    """
    if msg.header.frame_id and msg.header.frame_id != base_link:
        raise InputError(f"{what}: frame_id '{msg.header.frame_id}' is not the base link '{base_link}'")
    t, f = msg.wrench.torque, msg.wrench.force
    w = (t.x, t.y, t.z, f.x, f.y, f.z)
    if not all(math.isfinite(v) for v in w):
        raise InputError(f"{what}: NaN or Inf")
    out[:] = w
    return out


def write_body_wrench(msg, stamp_ns: int, W_body) -> None:
    """Fill a ``geometry_msgs/WrenchStamped`` (in place) with ``W_body = (n_b, f_b)`` and the stamp."""
    set_stamp(msg.header.stamp, stamp_ns)
    t, f = msg.wrench.torque, msg.wrench.force
    t.x, t.y, t.z = float(W_body[0]), float(W_body[1]), float(W_body[2])
    f.x, f.y, f.z = float(W_body[3]), float(W_body[4]), float(W_body[5])


class JointNameMatcher:
    """Map the joint names of a message to the model's column order, by name.

    Extra names in a message are ignored; every model joint must be present exactly once.
    The index array for a given name list is cached, so a stream of messages with the same
    names costs one dictionary lookup per message.

    Parameters
    ----------
    joint_names : sequence of str
        The model's joint names (``model.joint_names``), the column order of joint arrays.
    """

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        self._cache: dict[tuple, np.ndarray] = {}

    def indices(self, names, what: str) -> np.ndarray:
        """Indices ``idx`` such that ``values[idx]`` is in model column order.

        Raises :class:`InputError` naming ``what`` if a model joint is missing or a name is
        repeated.
        """
        key = tuple(names)
        idx = self._cache.get(key)
        if idx is not None:
            return idx
        pos = {}
        for i, name in enumerate(key):
            if name in pos:
                raise InputError(f"{what}: joint name '{name}' appears twice")
            pos[name] = i
        missing = [j for j in self.joint_names if j not in pos]
        if missing:
            unknown = [nm for nm in key if nm not in self.joint_names]
            extra = f" (it has names the model does not know: {unknown})" if unknown else ""
            raise InputError(f"{what}: model joints {missing} missing{extra}")
        idx = np.array([pos[j] for j in self.joint_names], dtype=np.intp)
        if len(self._cache) > 64:  # a misbehaving publisher must not grow memory without bound
            self._cache.clear()
        self._cache[key] = idx
        return idx

    def gather(self, names, values, out: np.ndarray, what: str) -> np.ndarray:
        """Reorder ``values`` (same length as ``names``) into ``out`` (n,), by name.

        Raises :class:`InputError` for a length mismatch, missing joints or NaN/Inf.
        """
        if len(values) != len(names):
            raise InputError(f"{what}: {len(values)} values for {len(names)} joint names")
        idx = self.indices(names, what)
        np.take(as_float64(values), idx, out=out)
        if not np.isfinite(out).all():
            raise InputError(f"{what}: NaN or Inf")
        return out


def as_float64(values) -> np.ndarray:
    """A float64 array view of a message sequence field (zero-copy for ``array.array('d')``,
    which is how rclpy stores ``float64[]``; a copy for lists)."""
    if getattr(values, "typecode", None) == "d":
        return np.frombuffer(values, dtype=np.float64)
    return np.asarray(values, dtype=np.float64)
