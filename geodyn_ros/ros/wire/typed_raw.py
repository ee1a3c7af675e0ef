"""Serialized (CDR) typed messages: ``geodyn_node``'s output templates and the strict input decoders.

**Outputs** (:class:`TypedJetOutput`, :class:`TypedDesiredStateOutput`,
:class:`TypedRotorSpeedOutput`): the raw fast path of :mod:`.raw_outputs` for
``geodyn_msgs/FeedforwardJet`` (also the typed ``feedforward/flat_jet``: ``write_flat``),
``DesiredState`` and ``RotorSpeeds``. The
message of a layout (frames, representation, order, joint names) is built once by
:mod:`.typed`, serialized once by rclpy and walked once by :class:`~.cdr.CdrReader`, which finds
where the stamp and every double lie (and the alignment padding, which rclpy leaves
uninitialized: the template zeroes it). Each cycle one compiled call writes the stamp and the
numbers into those bytes (``geometry_msgs/Wrench`` is ``(force, torque)``, ``Twist``
``(linear, angular)``: the kernels swap the halves of the package's moment-first / angular-first
rows) and ``Publisher.publish(bytes)`` sends them. The bytes are rclpy's ``serialize_message``
of the same message everywhere except on the padding (``test/ros/wire/test_typed_raw.py``).

**Inputs** (:func:`decode_feedforward_jet_cdr`, :func:`decode_reference_jet_cdr`,
:func:`decode_flat_reference_cdr`): strict decoders of ``FeedforwardJet``, ``ReferenceJet`` /
``DesiredState`` and ``FlatReference`` bytes with the rules of
:mod:`.cdr` (encapsulation kinds, padding count, XCDR2 alignment, every field read, strings to
their first NUL, UTF-8 with replacement; the joint names by :mod:`.cdr`'s compiled walk, with a
cache of the last name list). They accept exactly what rclpy's ``deserialize_message`` accepts,
with the same values, except over the size limits below (refused naming the field and the limit).
They return the namespace of :func:`.typed.jet_fields`, so the typed decoders
(:func:`.typed.decode_typed_feedforward`, :class:`.typed.TypedReferenceDecoder`) apply the same
checks to bytes and to messages. :class:`FastTypedFeedforward`, :class:`FastTypedReference` and :class:`FastTypedFlatReference`
then decode a message of a learned shape in one compiled call (they only ever accept; anything else takes the full path).
"""
from __future__ import annotations

import math
import struct
from types import SimpleNamespace

import numpy as np
from numba import njit, types

from ...lie import rotation_to_wxyz
from . import cdr
from .cdr import CdrError, CdrReader, CdrTemplate, _names, _NameCache, _serialize
from .fast_inputs import _bytes, _doubles, _key, _limits, _same, _stamp, checked_flat_reference, checked_reference
from .raw_outputs import _sqrt_series, rotor_speed_jet
from .typed import DesiredState, TypedFeedforwardPacker, TypedRotorSpeedPacker, make_reference_jet

__all__ = ["TypedJetOutput", "TypedDesiredStateOutput", "TypedRotorSpeedOutput", "decode_feedforward_jet_cdr",
           "decode_reference_jet_cdr", "decode_flat_reference_cdr", "FastTypedFeedforward", "MAX_JET_ENTRIES", "typed_name_cache"]

#: Entries of ``base_wrench`` / ``base_twist`` / ``com``: 256 (``order`` is a uint8: at most 255).
MAX_JET_ENTRIES = 256

_TEMPLATE_LIMIT = "MAX_LABEL_BYTES"   # the templates read the node's own messages: the largest limit


def _over(what: str, n: int, unit: str, name: str, limit: int) -> CdrError:
    mod = "typed_raw" if name == "MAX_JET_ENTRIES" else "cdr"
    return CdrError(f"{what}: {n} {unit} announced, over the limit of {limit} (geodyn_ros.ros.wire.{mod}.{name})")


# ----------------------------------------------------------------------------- walking one message
def _u8(r: CdrReader, what: str) -> int:
    return r.buf[r._take(1, 1, what)]


def _entries(r: CdrReader, width: int, what: str) -> tuple[int, int]:
    """A sequence of ``width``-double structs (``Wrench``, ``Twist``: 6; ``Vector3``: 3): its count
    and the position of its first double (``r.pos`` when empty: no alignment, as Fast CDR)."""
    n = r.u32(what)
    if n > MAX_JET_ENTRIES:
        raise _over(what, n, "entries", "MAX_JET_ENTRIES", MAX_JET_ENTRIES)
    if 8 * width * n > r.end - r.pos:
        raise CdrError(f"{what}: {n} entries announced, message truncated")
    return n, (r.f64_block(width * n, what) if n else r.pos)


def _name_list(r: CdrReader, what: str, cache: _NameCache | None) -> tuple:
    """A ``string[]`` (count, then the strings; the names of the last message reused from ``cache``
    when the bytes and their layout are the same, as :func:`.cdr.decode_joint_state`)."""
    start = r._take(4, 4, what)
    n = struct.unpack_from(r._e + "I", r.buf, start)[0]
    if n > cdr.MAX_JOINTS:
        raise _over(what, n, "names", "MAX_JOINTS", cdr.MAX_JOINTS)
    if 4 * n > r.end - r.pos:
        raise CdrError(f"{what}: {n} names announced, message truncated")
    layout = (r._e, r._a8, start & 7)
    if cache is not None and cache.key is not None and cache.layout == layout:
        stop = start + len(cache.key)
        if stop <= r.end and bytes(r.buf[start:stop]) == cache.key:
            r.pos = stop
            return cache.names
    names = _names(r, n, what)
    if cache is not None:
        cache.key, cache.layout, cache.names = bytes(r.buf[start:r.pos]), layout, names
    return names


def _doubles_at(r: CdrReader, p: int, count: int) -> np.ndarray:
    if count == 0:
        return np.empty(0)
    return np.frombuffer(r.buf, dtype=r._e + "f8", count=count, offset=p).astype(np.float64)


def typed_name_cache() -> _NameCache:
    """A cache of the last joint-name list, for :func:`decode_feedforward_jet_cdr` and
    :func:`decode_reference_jet_cdr` (one per subscription)."""
    return _NameCache()


_SWAP = np.array([3, 4, 5, 0, 1, 2])   # (force|linear, torque|angular) <-> (moment|angular, force|linear)


def decode_feedforward_jet_cdr(buf, what: str = "feedforward/jet", cache: _NameCache | None = None) -> SimpleNamespace:
    """``geodyn_msgs/FeedforwardJet`` bytes -> the fields of :func:`.typed.jet_fields` (``rows``
    moment first); :class:`CdrError` for bytes rclpy would refuse or over a size limit."""
    r = CdrReader(buf, what)
    sec, nsec, frame = r.stamp_header(what + ".header")
    child = r.string(what + ".child_frame_id")
    order = _u8(r, what + ".order")
    rep = r.string(what + ".representation")
    k, p = _entries(r, 6, what + ".base_wrench")
    names = _name_list(r, what + ".joint_names", cache)
    tau = r.double_sequence(what + ".tau", "MAX_DOUBLES")
    rows = _doubles_at(r, p, 6 * k).reshape(k, 6)[:, _SWAP]
    return SimpleNamespace(sec=sec, nanosec=nsec, frame_id=frame, child_frame_id=child, order=order,
                           representation=rep, rows=rows, pose=None, yaw=None, names=names,
                           values=np.asarray(tau, dtype=np.float64))


def decode_reference_jet_cdr(buf, what: str = "reference", cache: _NameCache | None = None) -> SimpleNamespace:
    """``geodyn_msgs/ReferenceJet`` or ``DesiredState`` bytes (the same fields) -> the fields of
    :func:`.typed.jet_fields` (``rows`` angular first, ``pose`` position and ``xyzw``)."""
    r = CdrReader(buf, what)
    sec, nsec, frame = r.stamp_header(what + ".header")
    child = r.string(what + ".child_frame_id")
    order = _u8(r, what + ".order")
    rep = r.string(what + ".representation")
    pose = r.f64_block(7, what + ".base_pose")
    k, p = _entries(r, 6, what + ".base_twist")
    names = _name_list(r, what + ".joint_names", cache)
    q = r.double_sequence(what + ".q", "MAX_DOUBLES")
    rows = _doubles_at(r, p, 6 * k).reshape(k, 6)[:, _SWAP]
    return SimpleNamespace(sec=sec, nanosec=nsec, frame_id=frame, child_frame_id=child, order=order,
                           representation=rep, rows=rows, pose=_doubles_at(r, pose, 7), yaw=None, names=names,
                           values=np.asarray(q, dtype=np.float64))


def decode_flat_reference_cdr(buf, what: str = "flat_reference", cache: _NameCache | None = None) -> SimpleNamespace:
    """``geodyn_msgs/FlatReference`` bytes -> the fields of :func:`.typed.jet_fields` (``rows`` the
    CoM entries (K+1, 3), ``yaw``)."""
    r = CdrReader(buf, what)
    sec, nsec, frame = r.stamp_header(what + ".header")
    child = r.string(what + ".child_frame_id")
    order = _u8(r, what + ".order")
    k, p = _entries(r, 3, what + ".com")
    yaw = r.double_sequence(what + ".yaw", "MAX_DOUBLES")
    names = _name_list(r, what + ".joint_names", cache)
    q = r.double_sequence(what + ".q", "MAX_DOUBLES")
    return SimpleNamespace(sec=sec, nanosec=nsec, frame_id=frame, child_frame_id=child, order=order,
                           representation=None, rows=_doubles_at(r, p, 3 * k).reshape(k, 3), pose=None,
                           yaw=np.asarray(yaw, dtype=np.float64), names=names, values=np.asarray(q, dtype=np.float64))


# ----------------------------------------------------------------------------- output templates
def _walk_head(r: CdrReader, with_pose: bool):
    """Header, child frame, order, representation (and the pose): the pose position or None."""
    r.stamp_header("header", _TEMPLATE_LIMIT)
    r.string("child_frame_id", _TEMPLATE_LIMIT)
    _u8(r, "order")
    r.string("representation", _TEMPLATE_LIMIT)
    return r.f64_block(7, "base_pose") if with_pose else None


def _walk_tail(r: CdrReader, entries: int, values: int):
    """The struct sequence (its doubles' position), the names and the values (their position)."""
    k, p = _entries(r, 6, "entries")
    assert k == entries
    for i in range(r.u32("joint_names")):
        r.string(f"joint_names[{i}]", _TEMPLATE_LIMIT)
    n = r.u32("values")
    assert n == values
    return p, (r.f64_block(n, "values") if n else r.pos)


class _Template:
    """A serialized typed message (:class:`~.cdr.CdrTemplate`) with a (2,) uint32 view of its
    stamp (sec, nanosec: sec >= 0 is the same bits as int32)."""

    __slots__ = ("_raw", "stamp", "rows", "values", "pose")

    def __init__(self, msg, with_pose: bool, entries: int, values: int):
        raw = _serialize(msg)
        r = CdrReader(raw)
        r.pads = []
        pose = _walk_head(r, with_pose)
        p, v = _walk_tail(r, entries, values)
        fields = {"rows": (p, 6 * entries), "values": (v, values)}
        if with_pose:
            fields["pose"] = (pose, 7)
        self._raw = CdrTemplate(raw, 0, fields, r.pads)
        buf = self._raw._buf
        e = "<" if raw[1] & 1 else ">"
        if e != "<" or np.dtype(np.float64).byteorder == ">":   # pragma: no cover (big-endian hosts)
            raise RuntimeError("the typed templates need a little-endian host and serializer")
        self.stamp = np.frombuffer(buf, dtype=np.uint32, count=2, offset=4)
        self.rows = self._raw.fields["rows"].reshape(entries, 6).view(np.float64)
        self.values = self._raw.fields["values"].view(np.float64)
        self.pose = self._raw.fields["pose"].view(np.float64) if with_pose else np.empty(7)

    def payload(self) -> bytes:
        return self._raw.payload()

    def args(self) -> tuple:
        """``(stamp, rows, values, pose, buffer)``: what a writer keeps to call its kernel and copy
        the bytes without attribute lookups on the hot path."""
        return self.stamp, self.rows, self.values, self.pose, self._raw._buf

    def offsets(self) -> tuple:
        """``(buffer, stamp, rows, values, pose)``: the bytearray and the byte offsets in it of the stamp
        and of the doubles (``pose`` -1 without one), for a compiled writer."""
        buf, pose = self._raw._buf, self._raw.fields.get("pose")
        base = np.frombuffer(buf, dtype=np.uint8).ctypes.data
        return (buf, self.stamp.ctypes.data - base, self.rows.ctypes.data - base, self.values.ctypes.data - base,
                -1 if pose is None else pose.ctypes.data - base)


_U8 = types.Array(types.uint8, 1, "C", readonly=True)
_B = types.Bytes(types.uint8, 1, "C", readonly=True)   # a message as rclpy hands it over (no numpy view per call)
_I8 = types.Array(types.int64, 1, "C")
_I1 = types.Array(types.intp, 1, "C")
_U32W = types.Array(types.uint32, 1, "C")
_F1W = types.Array(types.float64, 1, "C")
_F2W = types.Array(types.float64, 2, "C")
_F2A = types.Array(types.float64, 2, "A", readonly=True)   # writable arrays convert to it: one signature


@njit(types.void(_U32W, types.int64), cache=True, nogil=True, inline="always")
def _put_stamp(stamp, stamp_ns):  # pragma: no cover (compiled)
    stamp[0] = np.uint32(stamp_ns // 1_000_000_000)
    stamp[1] = np.uint32(stamp_ns % 1_000_000_000)


@njit(types.boolean(_U32W, _F2W, _F1W, types.int64, _F2A, _F2A), cache=True, nogil=True)
def _fill_typed_jet(stamp, rows, values, stamp_ns, W, tau):  # pragma: no cover (compiled)
    """A ``FeedforwardJet`` template: the stamp, ``rows[k]`` = ``(f, n)`` of ``W[k] = (n, f)``,
    ``values`` = ``tau`` row-major; True if every value is finite (as :func:`.raw_outputs._fill_jet`)."""
    r1, n = tau.shape
    if W.shape[0] != r1 or W.shape[1] != 6 or rows.shape[0] != r1 or values.shape[0] != r1 * n:
        raise ValueError("W, tau: shapes do not fit the FeedforwardJet template")
    _put_stamp(stamp, stamp_ns)
    s = 0.0
    for k in range(r1):
        for j in range(3):
            a, b = W[k, j + 3], W[k, j]
            rows[k, j] = a
            rows[k, j + 3] = b
            s += a + b
        for j in range(n):
            x = tau[k, j]
            values[k * n + j] = x
            s += x
    return s - s == 0.0   # NaN and Inf propagate into the sum; Inf - Inf is NaN


_R1 = types.Array(types.float64, 1, "A", readonly=True)


@njit(types.void(_U32W, _F2W, _F1W, types.int64, _R1, _F2A, _F2A), cache=True, nogil=True)
def _fill_typed_flat(stamp, rows, values, stamp_ns, T, tb, tau):  # pragma: no cover (compiled)
    """A ``FeedforwardJet`` template (``body``): ``rows[k]`` = force ``(0, 0, T[k])``, torque ``tb[k]``."""
    r1, n = tau.shape
    if T.shape[0] != r1 or tb.shape[0] != r1 or tb.shape[1] != 3 or rows.shape[0] != r1 \
            or values.shape[0] != r1 * n:
        raise ValueError("thrust, torque, tau: shapes do not fit the FeedforwardJet template")
    _put_stamp(stamp, stamp_ns)
    for k in range(r1):
        rows[k, 0] = 0.0
        rows[k, 1] = 0.0
        rows[k, 2] = T[k]
        for j in range(3):
            rows[k, 3 + j] = tb[k, j]
        for j in range(n):
            values[k * n + j] = tau[k, j]


@njit(types.void(_U32W, _F1W, _F2W, _F1W, types.int64, _F2A, _F2A, _F2A), cache=True, nogil=True)
def _fill_typed_desired(stamp, pose, rows, values, stamp_ns, C, V, q):  # pragma: no cover (compiled)
    """A ``DesiredState`` template: the stamp, the pose of ``C`` (position, ``xyzw`` of
    :func:`~geodyn_ros.lie.rotation_to_wxyz`), ``rows[k]`` = ``(v, w)`` of ``V[k] = (w, v)``,
    ``values`` = the first ``K+1`` rows of ``q`` row-major."""
    K1, n = V.shape[0], q.shape[1]
    if V.shape[1] != 6 or q.shape[0] < K1 or rows.shape[0] != K1 or values.shape[0] != K1 * n:
        raise ValueError("C, V, q: shapes do not fit the DesiredState template")
    _put_stamp(stamp, stamp_ns)
    for a in range(3):
        pose[a] = C[a, 3]
    w, x, y, z = rotation_to_wxyz(C)
    pose[3], pose[4], pose[5], pose[6] = x, y, z, w
    for k in range(K1):
        for j in range(3):
            rows[k, j] = V[k, j + 3]
            rows[k, j + 3] = V[k, j]
        for j in range(n):
            values[k * n + j] = q[k, j]


class TypedJetOutput:
    """``feedforward/jet`` as a serialized ``FeedforwardJet`` rewritten in place (module
    docstring): :class:`.raw_outputs.JetOutput` for the typed message."""

    __slots__ = ("_t", "order", "n", "body", "_s", "_w", "_v", "_b")

    def __init__(self, joint_names, order: int, *, frame_id: str = "world", child_frame_id: str = "base_link",
                 representation: str = "spatial"):
        r1, n = order + 1, len(joint_names)
        packer = TypedFeedforwardPacker(joint_names, order, frame_id=frame_id, child_frame_id=child_frame_id,
                                        representation=representation)
        self._t = _Template(packer.pack(0, np.zeros((r1, 6)), np.zeros((r1, n))), False, r1, r1 * n)
        self._s, self._w, self._v, _, self._b = self._t.args()
        self.order, self.n, self.body = order, n, representation == "body"

    def template(self) -> tuple:
        """``(buffer, stamp, rows, values, 0)``: the bytearray :meth:`write_finite` publishes and the byte
        offsets of its stamp and doubles, for a compiled writer (``latest_store``; kind 0: typed)."""
        base = np.frombuffer(self._b, dtype=np.uint8).ctypes.data
        return (self._b, self._s.ctypes.data - base, self._w.ctypes.data - base, self._v.ctypes.data - base, 0)

    def write(self, stamp_ns: int, W: np.ndarray, tau: np.ndarray) -> bytes:
        """The serialized message of ``W^(0..r)`` (r+1, 6) and ``tau^(0..r)`` (r+1, n) (numpy)."""
        t = self._t
        t.stamp[:] = divmod(int(stamp_ns), 1_000_000_000)
        t.rows[:, :3], t.rows[:, 3:] = W[:, 3:], W[:, :3]
        t.values[:] = np.asarray(tau, dtype=np.float64).ravel()
        return t.payload()

    def write_finite(self, stamp_ns: int, W: np.ndarray, tau: np.ndarray):
        """As :meth:`write` in one compiled call that also checks the values: the bytes, or None
        if ``W`` or ``tau`` holds a NaN or an Inf (then nothing should be published)."""
        if _fill_typed_jet(self._s, self._w, self._v, stamp_ns, W, tau):
            return bytes(self._b)
        return None

    def write_flat(self, stamp_ns: int, thrust: np.ndarray, torque: np.ndarray, tau: np.ndarray) -> bytes:
        """The typed ``feedforward/flat_jet`` (a template made with ``representation="body"``):
        ``T^(0..r)`` (r+1,), ``tau_b^(0..r)`` (r+1, 3), ``tau^(0..r)`` (r+1, n) in one compiled call,
        the bytes of :meth:`.typed.TypedFeedforwardPacker.pack_flat`."""
        if not self.body:
            raise ValueError("write_flat: the template's representation is not 'body'")
        _fill_typed_flat(self._s, self._w, self._v, stamp_ns, thrust, torque, tau)
        return bytes(self._b)


class TypedDesiredStateOutput:
    """``desired/state`` as a serialized ``DesiredState`` rewritten in place:
    :class:`.raw_outputs.DesiredStateOutput` for the typed message (order ``r``: ``K = r + 1``)."""

    __slots__ = ("_t", "_a")

    def __init__(self, joint_names, order: int, *, frame_id: str = "world", child_frame_id: str = "base_link",
                 representation: str = "spatial"):
        K1, n = order + 2, len(joint_names)
        msg = make_reference_jet(0, np.eye(4), np.zeros((K1, 6)), np.zeros((K1, n)), joint_names, frame_id=frame_id,
                                 child_frame_id=child_frame_id, representation=representation, cls=DesiredState)
        self._t = _Template(msg, True, K1, K1 * n)
        self._a = self._t.args()

    def write(self, stamp_ns: int, C: np.ndarray, V: np.ndarray, q: np.ndarray) -> bytes:
        """The serialized message of the pose ``C`` (4, 4), ``V`` (r+2, 6), ``q`` (>= r+2, n) (the
        first rows); the same bytes as :meth:`write_ro`."""
        V, q = np.asarray(V, dtype=np.float64), np.asarray(q, dtype=np.float64)
        t = self._t
        t.stamp[:] = divmod(int(stamp_ns), 1_000_000_000)
        t.pose[:3] = C[:3, 3]
        w, x, y, z = rotation_to_wxyz(np.ascontiguousarray(C, dtype=np.float64))
        t.pose[3:] = x, y, z, w
        t.rows[:, :3], t.rows[:, 3:] = V[:, 3:], V[:, :3]
        t.values[:] = q[:V.shape[0]].ravel()
        return t.payload()

    def write_ro(self, stamp_ns: int, C: np.ndarray, V: np.ndarray, q: np.ndarray) -> bytes:
        """As :meth:`write` in one compiled call; ``C``, ``V``, ``q`` float64 (read-only views
        made once keep one compiled signature)."""
        s, w, v, p, b = self._a
        _fill_typed_desired(s, p, w, v, stamp_ns, C, V, q)
        return bytes(b)


@njit(types.boolean(_U32W, _F1W, types.int64, _F2A, _R1, _R1, _F2A), cache=True, nogil=True)
def _fill_typed_rotor(stamp, values, stamp_ns, A, umax, T, tb):  # pragma: no cover (compiled)
    """A ``RotorSpeeds`` template: ``u^(k) = A (T^(k), tb^(k))`` summed as
    :func:`.raw_outputs._fill_rotor` sums it, then ``omega = sqrt(u)`` by the one series
    :func:`.raw_outputs._sqrt_series`; False (nothing usable written) unless every
    ``0 < u^(0)_i < umax_i``."""
    r1, m = T.shape[0], A.shape[0]
    if tb.shape[0] != r1 or tb.shape[1] != 3 or A.shape[1] != 4 or umax.shape[0] != m or values.shape[0] != r1 * m:
        raise ValueError("thrust, torque: shapes do not fit the RotorSpeeds template")
    u = np.empty((r1, m))
    for k in range(r1):
        for i in range(m):
            u[k, i] = T[k] * A[i, 0] + (tb[k, 0] * A[i, 1] + tb[k, 1] * A[i, 2] + tb[k, 2] * A[i, 3])
    for i in range(m):
        if not (u[0, i] > 0.0 and u[0, i] < umax[i]):
            return False
    _sqrt_series(u, values.reshape(r1, m))
    _put_stamp(stamp, stamp_ns)
    return True


class TypedRotorSpeedOutput:
    """``feedforward/rotor_speeds`` as a serialized ``RotorSpeeds`` rewritten in place:
    :class:`.raw_outputs.RotorSpeedOutput` for the typed message (``header.frame_id`` the base link)."""

    __slots__ = ("_raw", "stamp", "values", "_al", "_A", "_umax", "shape")

    def __init__(self, rotor_names, order: int, *, frame_id: str = "base_link"):
        r1, m = order + 1, len(rotor_names)
        msg = TypedRotorSpeedPacker(rotor_names, order, frame_id=frame_id).pack(0, np.zeros((r1, m)))
        raw = _serialize(msg)
        r = CdrReader(raw)
        r.pads = []
        r.stamp_header("header", _TEMPLATE_LIMIT)
        _u8(r, "order")
        for i in range(r.u32("rotor_names")):
            r.string(f"rotor_names[{i}]", _TEMPLATE_LIMIT)
        n = r.u32("angular_velocities")
        self._raw = CdrTemplate(raw, 0, {"values": (r.f64_block(n, "values") if n else r.pos, n)}, r.pads)
        self.stamp = np.frombuffer(self._raw._buf, dtype=np.uint32, count=2, offset=4)
        self.values = self._raw.fields["values"].view(np.float64)
        self.shape, self._al = (r1, m), None

    def template(self) -> tuple:
        """``(buffer, stamp, values)``: the bytearray and the byte offsets of its stamp and doubles."""
        buf = self._raw._buf
        return buf, *(a.ctypes.data - np.frombuffer(buf, dtype=np.uint8).ctypes.data for a in (self.stamp, self.values))

    def write(self, stamp_ns: int, omega: np.ndarray) -> bytes:
        """``omega_d^(0..r)`` (r+1, n_r), serialized."""
        omega = np.asarray(omega, dtype=np.float64)
        if omega.shape != self.shape:
            raise ValueError(f"omega: expected {self.shape}, got {omega.shape}")
        self.stamp[:] = divmod(int(stamp_ns), 1_000_000_000)
        self.values[:] = omega.ravel()
        return self._raw.payload()

    def write_flat(self, stamp_ns: int, allocation, rotor_names, thrust: np.ndarray, torque: np.ndarray):
        """As :meth:`.raw_outputs.RotorSpeedOutput.write_flat`: ``(payload, "")`` or
        ``(None, problem)`` (the refusal line of :func:`.raw_outputs.rotor_speed_jet`)."""
        if allocation is not self._al:
            self._al = allocation
            self._A = np.ascontiguousarray(allocation.A4_pinv, dtype=np.float64)
            self._A.flags.writeable = False
            lim = np.broadcast_to(np.asarray(allocation.max_rot_velocity, dtype=np.float64), self._A.shape[:1])
            self._umax = np.array(lim ** 2)
            self._umax.flags.writeable = False
        if _fill_typed_rotor(self.stamp, self.values, stamp_ns, self._A, self._umax, thrust, torque):
            return self._raw.payload(), ""
        omega, problem = rotor_speed_jet(allocation, rotor_names, thrust, torque)
        return (None, problem) if omega is None else (self.write(stamp_ns, omega), "")


# ----------------------------------------------------------------------------- the compiled input path
@njit(types.int64(_B, _U8, _U8, _I8, _F2W, _F2W, _F1W), cache=True, nogil=True)
def _typed_jet(raw, key1, key2, lay, W, tau, tmp):  # pragma: no cover (compiled)
    """A ``FeedforwardJet`` of the learned shape into ``W`` (r+1, 6) (moment first) and ``tau``
    (r+1, n); the stamp, or -1 (another shape, an invalid stamp, a NaN or an Inf: nothing written).
    ``lay`` = (total length, start of the wrench doubles, their end, start of the tau doubles):
    ``buf[12:lay[1]]`` must match ``key1`` and ``buf[lay[2]:lay[3]]`` ``key2`` (padding masked)."""
    buf = np.frombuffer(raw, np.uint8)
    total, w0, w1, t0 = lay[0], lay[1], lay[2], lay[3]
    r1, n = tau.shape
    if W.shape[0] != r1 or W.shape[1] != 6 or tmp.shape[0] != r1 * (6 + n) or w1 - w0 != 48 * r1:
        raise ValueError("W, tau: shapes do not fit the learned FeedforwardJet")
    if not (_same(buf, key1, 12, w0, total) and _same(buf, key2, w1, t0, total)):
        return -1
    stamp = _stamp(buf)
    if stamp < 0:
        return -1
    _doubles(buf, w0, 6 * r1, tmp)
    _doubles(buf, t0, r1 * n, tmp[6 * r1:])
    for i in range(tmp.shape[0]):
        if not math.isfinite(tmp[i]):
            return -1
    for k in range(r1):
        for j in range(3):
            W[k, j] = tmp[6 * k + 3 + j]
            W[k, 3 + j] = tmp[6 * k + j]
        for j in range(n):
            tau[k, j] = tmp[6 * r1 + k * n + j]
    return stamp


class FastTypedFeedforward:
    """The shape of the last ``FeedforwardJet`` that the full path (:func:`decode_feedforward_jet_cdr`
    then :func:`.typed.decode_typed_feedforward` with the consumer's checks) accepted: every byte
    but the stamp and the doubles (frames, order, representation, counts, joint names; the
    alignment padding masked). A later message of exactly that shape is decoded and checked
    (stamp, NaN/Inf) in one compiled call, as :class:`.fast_inputs.FastJointState` does for its
    input; anything else is declined (-1) and takes the full path, which accepts or refuses it.
    Only little-endian plain CDR (``0x0001``, what rclpy writes) is learned."""

    __slots__ = ("_key1", "_key2", "_lay", "_tmp", "rows", "n")

    def __init__(self):
        self._key1 = None

    def learn(self, raw) -> None:
        """Record the shape of ``raw``, a message the full path just accepted."""
        raw = bytes(raw)
        self._key1 = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        _walk_head(r, False)
        k = struct.unpack_from("<I", raw, 4 + ((r.pos + 3) & ~3))[0]
        c = CdrReader(raw)                       # the counts, from a second walk
        c.pos = r.pos
        c.u32("entries")
        if k:
            c.f64_block(6 * k, "entries")
        for i in range(c.u32("joint_names")):
            c.string("joint_names", _TEMPLATE_LIMIT)
        v = c.u32("tau")
        if k == 0 or v % k:
            return
        w0, t0 = _walk_tail(r, k, v)
        n = v // k
        w0, w1 = 4 + w0, 4 + w0 + 48 * k
        t0 = 4 + t0 if v else 4 + r.pos
        self._lay = np.array([len(raw), w0, w1, t0], dtype=np.int64)
        self._tmp = np.zeros(k * (6 + n))
        self.rows, self.n = k, n
        key2 = _key(raw, t0, r.pads, lo=w1)
        self._key1 = _key(raw, w0, r.pads, lo=12)
        self._key2 = key2

    def decode(self, raw, W: np.ndarray, tau: np.ndarray) -> int:
        """Stamp [ns] with ``W`` (rows, 6) and ``tau`` (rows, n) written, or -1 (declined: nothing
        written). ``rows``, ``n``: those of the learned message (attributes)."""
        if self._key1 is None:
            return -1
        return _typed_jet(_bytes(raw), self._key1, self._key2, self._lay, W, tau, self._tmp)


@njit(types.int64(_B, _U8, _U8, _U8, _I8, types.int64, _I1, _F1W, _F2W, _F2W, _F2W, _F1W), cache=True, nogil=True)
def _typed_reference(raw, key1, key2, key3, lay, ncol, cols, lim, C, V, Q, tmp):  # pragma: no cover (compiled)
    """A ``ReferenceJet`` of the learned shape into ``C``, ``V`` (r+2, 6), ``Q`` (r+3, n): its
    numbers gathered into the layout's row order (``tmp[2:9]`` pose, then rows of ``ncol`` = 6 + m:
    ``(w, v)``, the m joint values) and checked by the one kernel of the layout's path,
    :func:`.fast_inputs.checked_reference`; the stamp, or -1. ``lay`` = (total, pose start, pose
    end, twist start, twist end, q start, m); the bytes between must match the keys."""
    buf = np.frombuffer(raw, np.uint8)
    total, p0, p1, t0, t1, q0, m = lay[0], lay[1], lay[2], lay[3], lay[4], lay[5], lay[6]
    r3 = Q.shape[0]
    if tmp.shape[0] != 9 + r3 * ncol or ncol != 6 + m or V.shape[0] + 1 != r3 or 48 * r3 > t1 - t0:
        raise ValueError("C, V, Q: shapes do not fit the learned ReferenceJet")
    if not (_same(buf, key1, 12, p0, total) and _same(buf, key2, p1, t0, total) and _same(buf, key3, t1, q0, total)):
        return -1
    stamp = _stamp(buf)
    if stamp < 0:
        return -1
    _doubles(buf, p0, 7, tmp[2:])
    for k in range(r3):
        o = 9 + k * ncol
        _doubles(buf, t0 + 48 * k + 24, 3, tmp[o:])          # angular
        _doubles(buf, t0 + 48 * k, 3, tmp[o + 3:])           # linear
        _doubles(buf, q0 + 8 * m * k, m, tmp[o + 6:])
    return checked_reference(stamp, ncol, cols, lim, C, V, Q, tmp)


class FastTypedReference:
    """The shape of the last ``ReferenceJet`` the full path accepted (:func:`decode_reference_jet_cdr`,
    :class:`.typed.TypedReferenceDecoder`, the node's plausibility check), then one compiled call
    per message of that shape: :class:`.fast_inputs.FastReference` for the typed message, with its
    checks (the same kernel) and its one strictness (the twist jet's plausibility always checked).
    ``limits``: the plausibility limits; ``order``: ``r``."""

    __slots__ = ("_keys", "_lay", "_ncol", "_cols", "_lim", "_tmp", "_r")

    def __init__(self, limits: dict, order: int):
        self._keys, self._lim, self._r = None, _limits(limits), order

    def learn(self, raw, cols: np.ndarray) -> None:
        """Record the shape of ``raw`` and its joint order ``cols`` (``JointNameMatcher.indices``
        of its ``joint_names``: the message column of each model joint)."""
        raw = bytes(raw)
        self._keys = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        p0 = 4 + _walk_head(r, True)
        p1 = 4 + r.pos
        k = struct.unpack_from("<I", raw, 4 + ((r.pos + 3) & ~3))[0]
        c = CdrReader(raw)
        c.pos = r.pos
        c.u32("entries")
        if k:
            c.f64_block(6 * k, "entries")
        for _ in range(c.u32("joint_names")):
            c.string("joint_names", _TEMPLATE_LIMIT)
        v = c.u32("q")
        if k < self._r + 3 or v % k:
            return
        t0, q0 = _walk_tail(r, k, v)
        m = v // k
        t0, t1 = 4 + t0, 4 + t0 + 48 * k
        q0 = 4 + q0 if v else 4 + r.pos
        self._lay = np.array([len(raw), p0, p1, t0, t1, q0, m], dtype=np.int64)
        self._ncol, self._cols = 6 + m, np.ascontiguousarray(np.asarray(cols) + 6, dtype=np.intp)
        self._tmp = np.zeros(9 + (self._r + 3) * (6 + m))
        self._keys = (_key(raw, p0, r.pads, lo=12), _key(raw, t0, r.pads, lo=p1), _key(raw, q0, r.pads, lo=t1))

    def spec(self):
        """The learned shape for ``latest_store``: ``(0, keys (3), lay (7), ncol, cols, scratch size)`` or None."""
        return None if self._keys is None else (0, self._keys, self._lay, self._ncol, self._cols, self._tmp.shape[0])

    def decode(self, raw, C: np.ndarray, V: np.ndarray, Q: np.ndarray) -> int:
        """Stamp [ns] with ``C`` (4, 4), ``V[:r+2]``, ``Q[:r+3]`` written, or -1 (declined)."""
        if self._keys is None:
            return -1
        r = self._r
        k1, k2, k3 = self._keys
        return _typed_reference(_bytes(raw), k1, k2, k3, self._lay, self._ncol, self._cols,
                                self._lim, C, V[:r + 2], Q[:r + 3], self._tmp)


@njit(types.int64(_B, _U8, _U8, _U8, _I8, types.int64, _I1, _F1W, _F2W, _F1W, _F2W, _F1W), cache=True, nogil=True)
def _typed_flat(raw, key1, key2, key3, lay, ncol, cols, lim, com, yaw, Q, tmp):  # pragma: no cover (compiled)
    """A ``FlatReference`` of the learned shape into ``com`` (r+5, 3), ``yaw`` (r+3,), ``Q`` (r+3, n):
    its first r+5 rows gathered into the layout's order (rows of ``ncol`` = 4 + m from ``tmp[2]``:
    CoM, yaw, the m joint values) and checked by :func:`.fast_inputs.checked_flat_reference`; the
    stamp, or -1. ``lay`` = (total, CoM start, CoM end, yaw start, yaw end, q start, m)."""
    buf = np.frombuffer(raw, np.uint8)
    total, c0, c1, y0, y1, q0, m = lay[0], lay[1], lay[2], lay[3], lay[4], lay[5], lay[6]
    r5 = com.shape[0]
    if tmp.shape[0] != 2 + r5 * ncol or ncol != 4 + m or 24 * r5 > c1 - c0 or 8 * r5 > y1 - y0 \
            or yaw.shape[0] + 2 != r5 or Q.shape[0] + 2 != r5:
        raise ValueError("com, yaw, Q: shapes do not fit the learned FlatReference")
    if not (_same(buf, key1, 12, c0, total) and _same(buf, key2, c1, y0, total) and _same(buf, key3, y1, q0, total)):
        return -1
    stamp = _stamp(buf)
    if stamp < 0:
        return -1
    for k in range(r5):
        o = 2 + k * ncol
        _doubles(buf, c0 + 24 * k, 3, tmp[o:])
        _doubles(buf, y0 + 8 * k, 1, tmp[o + 3:])
        _doubles(buf, q0 + 8 * m * k, m, tmp[o + 4:])
    return checked_flat_reference(stamp, ncol, cols, lim, com, yaw, Q, tmp)


class FastTypedFlatReference:
    """:class:`.fast_inputs.FastFlatReference` for ``FlatReference``: the shape of the last message
    the full path accepted, then one compiled call per message of that shape, checked by the same
    kernel (NaN/Inf and the plausibility limits of ``check_plausible_flat``)."""

    __slots__ = ("_keys", "_lay", "_ncol", "_cols", "_lim", "_tmp", "_r")

    def __init__(self, limits: dict, order: int):
        self._keys, self._lim, self._r = None, _limits(limits), order

    def learn(self, raw, cols: np.ndarray) -> None:
        """Record the shape of ``raw`` and its joint order ``cols`` (the message column of each
        model joint, ``JointNameMatcher.indices``)."""
        raw = bytes(raw)
        self._keys = None
        if len(raw) < 12 or raw[0] != 0 or raw[1] != 1:
            return
        r = CdrReader(raw)
        r.pads = []
        r.stamp_header("header", _TEMPLATE_LIMIT)
        r.string("child_frame_id", _TEMPLATE_LIMIT)
        _u8(r, "order")
        k, c0 = _entries(r, 3, "com")
        ny = r.u32("yaw")
        y0 = r.f64_block(ny, "yaw") if ny else r.pos
        for _ in range(r.u32("joint_names")):
            r.string("joint_names", _TEMPLATE_LIMIT)
        v = r.u32("q")
        if k < self._r + 5 or ny != k or v % k:
            return
        q0 = r.f64_block(v, "q") if v else r.pos
        m = v // k
        c0, c1, y0, y1, q0 = 4 + c0, 4 + c0 + 24 * k, 4 + y0, 4 + y0 + 8 * k, 4 + q0
        self._lay = np.array([len(raw), c0, c1, y0, y1, q0, m], dtype=np.int64)
        self._ncol, self._cols = 4 + m, np.ascontiguousarray(np.asarray(cols) + 4, dtype=np.intp)
        self._tmp = np.zeros(2 + (self._r + 5) * (4 + m))
        self._keys = (_key(raw, c0, r.pads, lo=12), _key(raw, y0, r.pads, lo=c1), _key(raw, q0, r.pads, lo=y1))

    def spec(self):
        """The learned shape for ``flat_store``: ``(keys (3), lay (7), ncol, cols, scratch size)``, or None."""
        return None if self._keys is None else (self._keys, self._lay, self._ncol, self._cols, self._tmp.shape[0])

    def decode(self, raw, com: np.ndarray, yaw: np.ndarray, Q: np.ndarray) -> int:
        """Stamp [ns] with ``com[:r+5]``, ``yaw[:r+3]``, ``Q[:r+3]`` written, or -1 (declined)."""
        if self._keys is None:
            return -1
        r = self._r
        k1, k2, k3 = self._keys
        return _typed_flat(_bytes(raw), k1, k2, k3, self._lay, self._ncol, self._cols,
                           self._lim, com[:r + 5], yaw[:r + 3], Q[:r + 3], self._tmp)
