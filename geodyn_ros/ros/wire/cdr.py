"""Decode serialized (CDR) ROS 2 messages with numpy, for raw subscriptions (ROS-free).

``geodyn_node`` subscribes its inputs with ``raw=True``: rclpy then hands the callback the
serialized bytes instead of building a Python message (for ``nav_msgs/Odometry`` that is eight
nested message objects and two 36-element covariance arrays, ~40 % of the node's input cost).
These functions decode those bytes and accept exactly what rclpy's own
``rclpy.serialization.deserialize_message`` (default RMW: Fast DDS / Fast CDR) accepts, with the
same values, on every input within the size limits below (``test/ros/wire/test_cdr_attack.py`` compares
the two on truncations at every length, random bytes, both byte orders, every encapsulation
kind and option value, alignment-shifting strings and megabyte fields). The decoding rule:

* **Encapsulation header** (4 bytes): byte 0 is 0; byte 1 is one of 0/1 (CDR, XCDR1), 2/3
  (PL_CDR), 6/7 (CDR2, XCDR2), 8/9 (D_CDR2), 10/11 (PL_CDR2), odd = little endian; anything
  else is refused. These ROS types are final structs without optional members: every kind has
  the plain layout (no parameter list, no DHEADER, as rclpy reads them), except that XCDR2
  aligns the 8-byte primitives to 4 instead of 8. Alignment counts from the end of the header.
* **Options** (bytes 2-3): the low 2 bits of byte 3 are the number of padding bytes appended at
  the end, not part of the message, when the buffer length is a multiple of 4 (a writer pads to
  4; Fast CDR ignores the count for other lengths, and so does this decoder); the other option
  bits are ignored (as rclpy does). A padding count larger than the payload (a 4-byte buffer) is
  refused (rclpy reads out of bounds there). The transport pads every payload to a multiple of 4
  with zeros *without* setting the count: a message cut by 1-3 bytes then arrives complete with
  zero bytes, which no decoder can tell (rclpy accepts it too).
* **Every field is read**, also those the node does not use (covariances, ``effort``): the
  message is accepted only if all its fields lie within the payload minus the padding. Bytes
  after the last field are allowed, as rclpy allows them (its own ``serialize_message`` emits a
  few: ``JointState()`` is 44 bytes for 36 of fields).
* **Strings**: ``uint32`` length (including the NUL; 0 is ``""``), then the bytes; the value is
  the bytes up to the first NUL (the C string rclpy builds), decoded as UTF-8 with invalid
  sequences replaced by U+FFFD (as rclpy). **Sequences**: ``uint32`` count, then the elements;
  an empty sequence of doubles has no alignment padding.
* **Size limits** (module constants ``MAX_*``, far above any real robot): a count or string
  length over its limit is refused in O(1), before any work, naming the field and the limit.
  rclpy has no such limits.
* The one other difference: a ``layout.dim`` count larger than the bytes left. rclpy's generated
  C typesupport then returns false from the nested ``MultiArrayLayout``, which its caller
  ignores: it reads ``data`` right after the count and returns ``dim = []``,
  ``data_offset = 0``. This decoder refuses the message.

A refused buffer raises :class:`CdrError` (an ``InputError``, a ``ValueError``) naming the field;
the error text never quotes the input. Values are returned as read (NaN and plausibility are the
caller's checks).
"""
from __future__ import annotations

import codecs
import struct
from types import SimpleNamespace

import numpy as np
from numba import njit, types

from .conversions import InputError

__all__ = ["CdrError", "CdrReader", "decode_odometry", "decode_joint_state", "decode_float64_multiarray",
           "name_cache", "CdrTemplate", "wrench_stamped_template", "joint_state_template", "multiarray_template",
           "MAX_NAME_BYTES", "MAX_JOINTS", "MAX_DIMS", "MAX_LABEL_BYTES", "MAX_DOUBLES"]

#: Bytes on the wire (with the NUL) of a frame id or a joint name: 256. ROS frame and joint names
#: are identifiers (``robot1/arm/wrist_3_link`` is 23); URDF and tf impose no limit, 256 is
#: ten times the longest names of common robot descriptions.
MAX_NAME_BYTES = 256
#: Entries of ``joint_states.name`` and of each of ``position``/``velocity``/``effort``: 4096,
#: about 60 times a humanoid (~70 joints), so a whole fleet fits in one message.
MAX_JOINTS = 4096
#: ``layout.dim`` entries of a ``Float64MultiArray``: 16 (the node's layouts use 2).
MAX_DIMS = 16
#: Bytes of a ``layout.dim[i].label``: the reference layouts list every column name, comma
#: separated (:mod:`geodyn_ros.ros.wire.jets`), so ``(MAX_JOINTS + 16) * MAX_NAME_BYTES`` = 1052672.
MAX_LABEL_BYTES = (MAX_JOINTS + 16) * MAX_NAME_BYTES
#: Elements of ``Float64MultiArray.data``: 2**20 (8 MiB); a reference of order 60 (the largest,
#: ``algorithms.checks.MAX_ORDER``) for ``MAX_JOINTS`` joints has 65 x 4102 = 266630.
MAX_DOUBLES = 2 ** 20


class CdrError(InputError):
    """A serialized message that cannot be decoded (truncated, bad header or lengths, over a size
    limit): an :class:`~geodyn_ros.ros.wire.conversions.InputError`, so a node refuses it like any bad
    message."""


_KINDS = frozenset((0, 1, 2, 3, 6, 7, 8, 9, 10, 11))   # byte 1 of the header that rclpy accepts
_KIND_NAMES = {0: "CDR", 2: "PL_CDR", 6: "CDR2", 8: "D_CDR2", 10: "PL_CDR2"}


def _over(what: str, n: int, unit: str, name: str) -> CdrError:
    return CdrError(f"{what}: {n} {unit} announced, over the limit of {globals()[name]} "
                    f"(geodyn_ros.ros.wire.cdr.{name})")


class CdrReader:
    """A cursor over one serialized message (``buf``: bytes-like), positions counted from the end
    of the 4-byte header; ``end`` is where the payload ends without the declared padding."""

    __slots__ = ("raw", "buf", "pos", "end", "_e", "_a8", "pads")

    def __init__(self, buf, what: str = "message"):
        n = len(buf)
        if n < 4:
            raise CdrError(f"{what}: {n} bytes, shorter than the CDR header (4 bytes)")
        b0, b1, b3 = buf[0], buf[1], buf[3]
        if b0 != 0 or b1 not in _KINDS:
            raise CdrError(f"{what}: unknown CDR encapsulation 0x{b0:02x}{b1:02x}")
        pad = b3 & 3 if n % 4 == 0 else 0       # as Fast CDR's read_encapsulation
        if pad > n - 4:
            raise CdrError(f"{what}: the encapsulation options announce {pad} padding bytes in a "
                           f"payload of {n - 4}")
        self._e = "<" if b1 & 1 else ">"
        self._a8 = 4 if b1 >= 6 else 8        # XCDR2 aligns 8-byte primitives to 4
        self.raw = buf if isinstance(buf, (bytes, bytearray)) else bytes(buf)
        self.buf = memoryview(self.raw)[4:]
        self.pos = 0
        self.end = n - 4 - pad
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

    def string(self, what: str, limit: str = "MAX_NAME_BYTES") -> str:
        """A string of at most ``globals()[limit]`` bytes on the wire (rclpy's value: up to the
        first NUL, UTF-8 with replacement)."""
        n = self.u32(what)
        if n > globals()[limit]:
            raise _over(what, n, "bytes", limit)
        if n == 0:                        # Fast CDR reads "" for length 0
            return ""
        p = self._take(n, 1, what)
        k = self.raw.find(b"\x00", 4 + p, 4 + p + n)          # no copy: raw is bytes-like
        return codecs.utf_8_decode(self.buf[p:p + n if k < 0 else k - 4], "replace", True)[0]

    def f64_block(self, count: int, what: str) -> int:
        """The position of ``count`` consecutive float64 (aligned to 8, or 4 in XCDR2)."""
        return self._take(8 * count, self._a8, what)

    def doubles(self, count: int, what: str) -> np.ndarray:
        """``count`` float64 as a read-only array (a view of the buffer)."""
        if count == 0:
            return np.empty(0)
        p = self.f64_block(count, what)
        return np.frombuffer(self.buf, dtype=self._e + "f8", count=count, offset=p)

    def double_sequence(self, what: str, limit: str) -> np.ndarray:
        n = self.u32(what)
        if n > globals()[limit]:
            raise _over(what, n, "elements", limit)
        if 8 * n > self.end - self.pos:
            raise CdrError(f"{what}: {n} elements announced, message truncated")
        return self.doubles(n, what)

    def stamp_header(self, what: str, limit: str = "MAX_NAME_BYTES") -> tuple[int, int, str]:
        """``std_msgs/Header``: ``(sec, nanosec, frame_id)``."""
        sec = self.i32(what + ".stamp.sec")
        nsec = self.u32(what + ".stamp.nanosec")
        return sec, nsec, self.string(what + ".frame_id", limit)


def decode_odometry(buf, what: str = "odom"):
    """``nav_msgs/Odometry`` bytes -> ``(sec, nanosec, frame_id, child_frame_id, pose, twist)``.

    ``pose`` = position x, y, z, orientation x, y, z, w; ``twist`` = linear x, y, z, angular x, y,
    z, as the message orders them (tuples of floats). The two covariances are not returned but
    must be in the message (as for rclpy)."""
    r = CdrReader(buf, what)
    sec, nsec, frame = r.stamp_header(what + ".header")
    child = r.string(what + ".child_frame_id")
    p = r.f64_block(7 + 36 + 6 + 36, what + ".pose/.twist")
    v = struct.unpack_from(r._e + "7d288x6d", r.buf, p)      # pose, (pose covariance), twist
    return sec, nsec, frame, child, v[:7], v[7:]


_RO_U8 = types.Array(types.uint8, 1, "C", readonly=True)
_RO_U64 = types.Array(types.uint64, 1, "C", readonly=True)
_ONES, _HIGHS = np.uint64(0x0101010101010101), np.uint64(0x8080808080808080)


@njit(types.int64(_RO_U8, _RO_U64, types.int64, types.int64), cache=True, nogil=True)
def _first_nul(buf, words, p, e):  # pragma: no cover (compiled)
    """The first index in ``[p, e)`` where ``buf`` is 0, else ``e``; 8 bytes at a time
    (``words`` = ``buf`` as uint64: a word has a zero byte iff ``(v - 0x01..) & ~v & 0x80..``)."""
    while p < e and p & 7:
        if buf[p] == 0:
            return p
        p += 1
    while p + 8 <= e:
        v = words[p >> 3]
        if (v - _ONES) & ~v & _HIGHS:
            break
        p += 8
    while p < e:
        if buf[p] == 0:
            return p
        p += 1
    return e


@njit(types.int64(_RO_U8, _RO_U64, types.int64, types.int64, types.int64, types.int64, types.boolean,
                  types.Array(types.int64, 1, "C"), types.Array(types.int64, 1, "C")),
      cache=True, nogil=True)
def _walk_strings(buf, words, pos, end, count, max_bytes, big, spans, info):  # pragma: no cover
    """Walk ``count`` CDR strings of ``buf`` (the whole message, header included) from ``pos``
    (4-aligned) to at most ``end``: ``spans[2i], spans[2i+1]`` = where string ``i``'s bytes start
    and where they stop (its first NUL, else its end). Returns the position after the last string,
    or -1 with ``info`` = (string index, 1 truncated / 2 over ``max_bytes``, announced length)."""
    p = pos
    for i in range(count):
        p = (p + 3) & -4
        if p + 4 > end:
            info[0], info[1], info[2] = i, 1, 0
            return -1
        b0, b1, b2, b3 = np.int64(buf[p]), np.int64(buf[p + 1]), np.int64(buf[p + 2]), np.int64(buf[p + 3])
        n = (b0 << 24 | b1 << 16 | b2 << 8 | b3) if big else (b3 << 24 | b2 << 16 | b1 << 8 | b0)
        p += 4
        if n > max_bytes:
            info[0], info[1], info[2] = i, 2, n
            return -1
        if p + n > end:
            info[0], info[1], info[2] = i, 1, n
            return -1
        spans[2 * i] = p
        spans[2 * i + 1] = _first_nul(buf, words, p, p + n)
        p += n
    return p


def _names(r: CdrReader, n: int, what: str) -> tuple:
    """The ``n`` strings of a ``string[]`` from ``r.pos`` (after its count): the compiled walk
    finds them; if the region is ASCII they are slices of it decoded as Latin-1 (one C pass;
    equal to UTF-8 for ASCII), else each is decoded as UTF-8."""
    if n == 0:
        return ()
    raw = r.raw
    arr = np.frombuffer(raw, dtype=np.uint8)
    arr.flags.writeable = False               # one compiled signature (read-only buffer)
    words = arr[:len(arr) & -8].view(np.uint64)
    spans = np.empty(2 * n, dtype=np.int64)
    info = np.zeros(3, dtype=np.int64)
    base = 4 + r.pos
    p = _walk_strings(arr, words, base, 4 + r.end, n, MAX_NAME_BYTES, r._e == ">", spans, info)
    if p < 0:
        i, kind, m = (int(x) for x in info)
        if kind == 2:
            raise _over(f"{what}[{i}]", m, "bytes", "MAX_NAME_BYTES")
        raise CdrError(f"{what}[{i}]: message truncated ({r.end} bytes of payload)")
    r.pos = p - 4
    text = codecs.latin_1_decode(arr[base:p])[0]
    if not text.isascii():       # (also when a length has a byte >= 0x80: names of 128-191 bytes)
        sp = spans.tolist()
        return tuple([raw[a:b].decode("utf-8", "replace") for a, b in zip(sp[0::2], sp[1::2])])
    sp = (spans - base).tolist()
    return tuple([text[a:b] for a, b in zip(sp[0::2], sp[1::2])])


class _NameCache:
    """The joint-name list of the last message, keyed by its serialized bytes (a publisher sends
    the same names every time: decoding them once is enough). The key starts after the alignment
    padding, at the name count, and includes the byte order, the XCDR version and the start
    position modulo 8: equal keys are the same bytes read with the same layout."""

    __slots__ = ("key", "layout", "names")

    def __init__(self):
        self.key, self.layout, self.names = None, None, ()


def decode_joint_state(buf, what: str = "joint_states", cache: _NameCache | None = None):
    """``sensor_msgs/JointState`` bytes -> ``(sec, nanosec, names (tuple), position, velocity)``.

    ``position`` and ``velocity`` are read-only float64 arrays (views of ``buf``); ``effort`` is
    not returned but must be in the message. ``cache`` (from :func:`name_cache`) skips
    re-decoding an unchanged name list."""
    r = CdrReader(buf, what)
    sec, nsec, _ = r.stamp_header(what + ".header")
    start = r._take(4, 4, what + ".name")          # the aligned position of the name count
    n = struct.unpack_from(r._e + "I", r.buf, start)[0]
    if n > MAX_JOINTS:
        raise _over(what + ".name", n, "names", "MAX_JOINTS")
    if 4 * n > r.end - r.pos:
        raise CdrError(f"{what}.name: {n} names announced, message truncated")
    names = None
    layout = (r._e, r._a8, start & 7)
    if cache is not None and cache.key is not None and cache.layout == layout:
        stop = start + len(cache.key)
        if stop <= r.end and bytes(r.buf[start:stop]) == cache.key:
            names, r.pos = cache.names, stop
    if names is None:
        names = _names(r, n, what + ".name")
        if cache is not None:
            cache.key, cache.layout, cache.names = bytes(r.buf[start:r.pos]), layout, names
    position = r.double_sequence(what + ".position", "MAX_JOINTS")
    velocity = r.double_sequence(what + ".velocity", "MAX_JOINTS")
    r.double_sequence(what + ".effort", "MAX_JOINTS")
    return sec, nsec, names, position, velocity


def name_cache() -> _NameCache:
    return _NameCache()


def decode_float64_multiarray(buf, what: str):
    """``std_msgs/Float64MultiArray`` bytes -> an object with the message's attributes
    (``layout.dim[i].label/size/stride``, ``layout.data_offset``, ``data``: a float64 array)."""
    r = CdrReader(buf, what)
    nd = r.u32(what + ".layout.dim")
    if nd > MAX_DIMS:
        raise _over(what + ".layout.dim", nd, "dimensions", "MAX_DIMS")
    if 12 * nd > r.end - r.pos:
        raise CdrError(f"{what}.layout.dim: {nd} dimensions announced, message truncated")
    dims = []
    for i in range(nd):
        label = r.string(f"{what}.layout.dim[{i}].label", "MAX_LABEL_BYTES")
        dims.append(SimpleNamespace(label=label, size=r.u32(f"{what}.layout.dim[{i}].size"),
                                    stride=r.u32(f"{what}.layout.dim[{i}].stride")))
    offset = r.u32(what + ".layout.data_offset")
    data = r.double_sequence(what + ".data", "MAX_DOUBLES")
    return SimpleNamespace(layout=SimpleNamespace(dim=dims, data_offset=offset), data=data)


# ----------------------------------------------------------------------------- writing
class CdrTemplate:
    """A serialized message whose stamp and float64 fields are rewritten in place, for
    ``Publisher.publish(bytes)`` (rclpy's raw publish: no Python message is converted).

    Made from a message serialized by rclpy itself (so every other byte is rclpy's); ``fields``
    maps a name to a writable float64 view of the buffer. :meth:`payload` returns the bytes to
    publish. The result is what ``serialize_message`` gives for the same message, except that
    the alignment padding, which rclpy leaves uninitialized, is zero (``test/ros/wire/test_cdr.py`` reads
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
    r.stamp_header("header", _OWN)
    off = r._take(48, 8, "wrench")
    return CdrTemplate(raw, 0, {"force": (off, 3), "torque": (off + 24, 3)}, r.pads)


def joint_state_template(msg) -> CdrTemplate:
    """``sensor_msgs/JointState`` (names and sequence lengths fixed): fields ``position``,
    ``velocity``, ``effort`` (those that are not empty)."""
    raw = _serialize(msg)
    r = _padded_reader(raw)
    r.stamp_header("header", _OWN)
    for i in range(r.u32("name")):
        r.string(f"name[{i}]", _OWN)
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
        d.string("label", _OWN)
        d.u32("size")
        d.u32("stride")
    d.u32("data_offset")
    n = d.u32("data")
    return CdrTemplate(raw, None, {"data": (d._take(8 * n, 8, "data") if n else d.pos, n)}, d.pads)


_OWN = "MAX_LABEL_BYTES"   # the templates read the node's own messages: only the largest limit


def _padded_reader(raw) -> CdrReader:
    r = CdrReader(raw)
    r.pads = []
    return r
