"""Decode serialized (CDR) ROS 2 messages with numpy, for raw subscriptions (ROS-free).

``geodyn_node`` subscribes its inputs with ``raw=True``: rclpy then hands the callback the
serialized bytes instead of building a Python message (for ``nav_msgs/Odometry`` that is eight
nested message objects and two 36-element covariance arrays, ~40 % of the node's input cost).
These functions read the few fields the node uses straight from the bytes.

The format is OMG CDR (XCDR1) as every ROS 2 RMW on the wire writes it for these types: a 4-byte
encapsulation header (``00 01`` little endian, ``00 00`` big endian, then 2 option bytes), then
the fields in declaration order, each primitive aligned to its size counted from the end of the
header; a string is a ``uint32`` length including the terminating NUL, then its bytes; a
sequence a ``uint32`` count, then its elements. Everything is bounds-checked: a truncated or
inconsistent buffer raises :class:`CdrError` (an ``InputError``, a ``ValueError``) naming the field; values are
returned as read (NaN and plausibility are the caller's checks). Tested against rclpy's own
``serialize_message`` and ``deserialize_message`` (``test/test_cdr.py``).
"""
from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np

from .conversions import InputError

__all__ = ["CdrError", "CdrReader", "decode_odometry", "decode_joint_state", "decode_float64_multiarray",
           "name_cache", "CdrTemplate", "wrench_stamped_template", "joint_state_template", "multiarray_template"]


class CdrError(InputError):
    """A serialized message that cannot be decoded (truncated, bad header or lengths): an
    :class:`~geodyn_ros.ros.conversions.InputError`, so a node refuses it like any bad message."""


_LE = (b"\x00\x01", b"\x00\x03")   # CDR_LE, PL_CDR_LE
_BE = (b"\x00\x00", b"\x00\x02")


class CdrReader:
    """A cursor over one serialized message (``buf``: bytes-like)."""

    __slots__ = ("buf", "pos", "end", "_e", "pads")

    def __init__(self, buf, what: str = "message"):
        if len(buf) < 4:
            raise CdrError(f"{what}: {len(buf)} bytes, shorter than the CDR header")
        head = bytes(buf[:2])
        if head in _LE:
            self._e = "<"
        elif head in _BE:
            self._e = ">"
        else:
            raise CdrError(f"{what}: unknown CDR encapsulation {head.hex()}")
        self.buf = memoryview(buf)[4:]
        self.pos = 0
        self.end = len(self.buf)
        self.pads = None          # a list to record the alignment padding (templates zero it)

    def _take(self, size: int, align: int, what: str) -> int:
        p = (self.pos + align - 1) & ~(align - 1)
        if self.pads is not None and p > self.pos:
            self.pads.append((self.pos, p))
        if p + size > self.end:
            raise CdrError(f"{what}: message truncated ({self.end} bytes of payload)")
        self.pos = p + size
        return p

    def u32(self, what: str) -> int:
        p = self._take(4, 4, what)
        return struct.unpack_from(self._e + "I", self.buf, p)[0]

    def i32(self, what: str) -> int:
        p = self._take(4, 4, what)
        return struct.unpack_from(self._e + "i", self.buf, p)[0]

    def string(self, what: str) -> str:
        n = self.u32(what)
        if n == 0:                        # some writers encode "" as length 0
            return ""
        p = self._take(n, 1, what)
        raw = bytes(self.buf[p:p + n])
        if raw[-1:] != b"\x00":
            raise CdrError(f"{what}: string without its terminating NUL")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CdrError(f"{what}: not UTF-8 ({exc})") from None

    def doubles(self, count: int, what: str) -> np.ndarray:
        """``count`` float64 as a read-only array (a view of the buffer when little endian)."""
        if count == 0:
            return np.empty(0)
        p = self._take(8 * count, 8, what)
        return np.frombuffer(self.buf, dtype=self._e + "f8", count=count, offset=p)

    def double_sequence(self, what: str) -> np.ndarray:
        n = self.u32(what)
        if 8 * n > self.end - self.pos:
            raise CdrError(f"{what}: {n} elements announced, message truncated")
        return self.doubles(n, what)

    def stamp_header(self, what: str) -> tuple[int, int, str]:
        """``std_msgs/Header``: ``(sec, nanosec, frame_id)``."""
        sec = self.i32(what + ".stamp.sec")
        nsec = self.u32(what + ".stamp.nanosec")
        return sec, nsec, self.string(what + ".frame_id")


def decode_odometry(buf, what: str = "odom"):
    """``nav_msgs/Odometry`` bytes -> ``(sec, nanosec, frame_id, child_frame_id, pose, twist)``.

    ``pose`` = position x, y, z, orientation x, y, z, w; ``twist`` = linear x, y, z, angular x, y,
    z, as the message orders them (tuples of floats; the covariances are skipped)."""
    r = CdrReader(buf, what)
    sec, nsec, frame = r.stamp_header(what + ".header")
    child = r.string(what + ".child_frame_id")
    p = r._take(8 * (7 + 36 + 6), 8, what + ".pose/.twist")
    v = struct.unpack_from(r._e + "7d288x6d", r.buf, p)      # pose, (pose covariance), twist
    return sec, nsec, frame, child, v[:7], v[7:]


class _NameCache:
    """The joint-name list of the last message, keyed by its serialized bytes (a publisher sends
    the same names every time: decoding them once is enough)."""

    __slots__ = ("key", "names")

    def __init__(self):
        self.key, self.names = None, ()


def decode_joint_state(buf, what: str = "joint_states", cache: _NameCache | None = None):
    """``sensor_msgs/JointState`` bytes -> ``(sec, nanosec, names (tuple), position, velocity)``.

    ``cache`` (from :func:`name_cache`) skips re-decoding an unchanged name list."""
    r = CdrReader(buf, what)
    sec, nsec, _ = r.stamp_header(what + ".header")
    start = r.pos
    n = r.u32(what + ".name")
    if 4 * n > r.end - r.pos:
        raise CdrError(f"{what}.name: {n} names announced, message truncated")
    names = None
    if cache is not None and cache.key is not None:
        k = len(cache.key)
        if r.end >= start + k and r.buf[start:start + k] == cache.key:
            names, r.pos = cache.names, start + k
    if names is None:
        names = tuple(r.string(f"{what}.name[{i}]") for i in range(n))
        if cache is not None:
            cache.key, cache.names = bytes(r.buf[start:r.pos]), names
    position = r.double_sequence(what + ".position")
    velocity = r.double_sequence(what + ".velocity")
    return sec, nsec, names, position, velocity


def name_cache() -> _NameCache:
    return _NameCache()


def decode_float64_multiarray(buf, what: str):
    """``std_msgs/Float64MultiArray`` bytes -> an object with the message's attributes
    (``layout.dim[i].label/size/stride``, ``layout.data_offset``, ``data``: a float64 array)."""
    r = CdrReader(buf, what)
    nd = r.u32(what + ".layout.dim")
    if 12 * nd > r.end - r.pos:
        raise CdrError(f"{what}.layout.dim: {nd} dimensions announced, message truncated")
    dims = []
    for i in range(nd):
        label = r.string(f"{what}.layout.dim[{i}].label")
        dims.append(SimpleNamespace(label=label, size=r.u32(f"{what}.layout.dim[{i}].size"),
                                    stride=r.u32(f"{what}.layout.dim[{i}].stride")))
    offset = r.u32(what + ".layout.data_offset")
    data = r.double_sequence(what + ".data")
    return SimpleNamespace(layout=SimpleNamespace(dim=dims, data_offset=offset), data=data)


# ----------------------------------------------------------------------------- writing
class CdrTemplate:
    """A serialized message whose stamp and float64 fields are rewritten in place, for
    ``Publisher.publish(bytes)`` (rclpy's raw publish: no Python message is converted).

    Made from a message serialized by rclpy itself (so every other byte is rclpy's); ``fields``
    maps a name to a writable float64 view of the buffer. :meth:`payload` returns the bytes to
    publish. The result is what ``serialize_message`` gives for the same message, except that
    the alignment padding, which rclpy leaves uninitialized, is zero (``test/test_cdr.py`` reads
    it back with ``deserialize_message``)."""

    __slots__ = ("_buf", "_e", "_stamp", "fields")

    def __init__(self, serialized: bytes, stamp_offset: int | None, fields: dict, pads=()):
        r = CdrReader(serialized)
        self._e = r._e
        self._buf = bytearray(serialized)
        for a, b in pads:                 # rclpy leaves the alignment padding uninitialized
            self._buf[4 + a:4 + b] = bytes(b - a)
        self._stamp = None if stamp_offset is None else 4 + stamp_offset
        self.fields = {k: np.frombuffer(self._buf, dtype=self._e + "f8", count=n, offset=4 + off)
                       for k, (off, n) in fields.items()}

    def set_stamp(self, stamp_ns: int) -> None:
        """``std_msgs/Header.stamp`` (``int32 sec``, ``uint32 nanosec``) from integer nanoseconds."""
        sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
        struct.pack_into(self._e + "iI", self._buf, self._stamp, sec, nsec)

    def payload(self) -> bytes:
        return bytes(self._buf)


def _serialize(msg) -> bytes:
    from rclpy.serialization import serialize_message     # the ROS layer only
    return serialize_message(msg)


def wrench_stamped_template(msg) -> CdrTemplate:
    """``geometry_msgs/WrenchStamped`` (its ``frame_id`` fixed): fields ``force``, ``torque`` (3,)."""
    raw = _serialize(msg)
    r = _padded_reader(raw)
    r.stamp_header("header")
    off = r._take(48, 8, "wrench")
    return CdrTemplate(raw, 0, {"force": (off, 3), "torque": (off + 24, 3)}, r.pads)


def joint_state_template(msg) -> CdrTemplate:
    """``sensor_msgs/JointState`` (names and sequence lengths fixed): fields ``position``,
    ``velocity``, ``effort`` (those that are not empty)."""
    raw = _serialize(msg)
    r = _padded_reader(raw)
    r.stamp_header("header")
    for i in range(r.u32("name")):
        r.string(f"name[{i}]")
    fields = {}
    for f in ("position", "velocity", "effort"):
        n = r.u32(f)
        if n:
            fields[f] = (r._take(8 * n, 8, f), n)
    return CdrTemplate(raw, 0, fields, r.pads)


def multiarray_template(msg) -> CdrTemplate:
    """``std_msgs/Float64MultiArray`` (layout and length fixed): field ``data``."""
    raw = _serialize(msg)
    d = _padded_reader(raw)
    for i in range(d.u32("layout.dim")):
        d.string("label")
        d.u32("size")
        d.u32("stride")
    d.u32("data_offset")
    n = d.u32("data")
    return CdrTemplate(raw, None, {"data": (d._take(8 * n, 8, "data") if n else d.pos, n)}, d.pads)


def _padded_reader(raw) -> CdrReader:
    r = CdrReader(raw)
    r.pads = []
    return r
