"""Attacks on the bytes: ``geodyn_ros.ros.wire.cdr`` against rclpy's own deserializer.

The oracle is ``rclpy.serialization.deserialize_message`` (default RMW, Fast DDS / Fast CDR) on
the same bytes: for ``nav_msgs/Odometry``, ``sensor_msgs/JointState`` and
``std_msgs/Float64MultiArray`` (the reference and flat-reference layouts), every input below must
be accepted by both or refused by both, and accepted values must be equal bit for bit (NaN
payloads included). The inputs: truncation at every length (with the header's padding count set
as a writer does, and zero-padded to 4 without it as the transport does), every encapsulation
kind and option byte, both byte orders, XCDR2 alignment, ``frame_id`` lengths 0..8 (every
alignment), seeded random mutations and random bytes, huge counts, megabyte strings and the
joint-name cache attack (issue 32). The size limits (``cdr.MAX_*``) are the one intended
difference: over a limit the decoder refuses what rclpy accepts, naming the field and the limit;
the fuzz runs with the limits raised (exact agreement) and with the defaults.

Not compared: a padding count larger than the payload (the 4-byte ``00 01 00 01``): rclpy reads
out of bounds there (it returned garbage for ``00 01 00 01`` and crashed the process for
``00 06 00 01``), so it is never called on such a buffer; the decoder must refuse them.

The messages are written by ``_Writer`` below, an independent CDR writer (checked against
``serialize_message`` for XCDR1 little endian), so that big endian and XCDR2 can be made.
"""
import struct

import numpy as np
import pytest

pytest.importorskip("rclpy")
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402

from geodyn_ros.ros import cdr  # noqa: E402
from geodyn_ros.ros.wire.cdr import (CdrError, decode_float64_multiarray, decode_joint_state,  # noqa: E402
                                decode_odometry, name_cache)

CLS = {"odom": Odometry, "js": JointState, "ref": Float64MultiArray, "flat": Float64MultiArray}
KINDS = tuple(CLS)
ACCEPTED = (0, 1, 2, 3, 6, 7, 8, 9, 10, 11)   # byte 1 of the header (byte 0 is 0), as rclpy reads


# ----------------------------------------------------------------------------- an independent writer
class _Writer:
    """CDR bytes: ``kind`` = byte 1 of the header (odd: little endian; >= 6: XCDR2, 8-byte
    primitives aligned to 4), ``options`` = bytes 2-3, ``pad`` bytes of zeros appended."""

    def __init__(self, kind=1, options=b"\x00\x00"):
        self.e = "<" if kind & 1 else ">"
        self.a8 = 4 if kind >= 6 else 8
        self.head = bytes([0, kind]) + options
        self.b = bytearray()

    def _al(self, n):
        self.b += bytes(-len(self.b) % min(n, self.a8))

    def u32(self, v):
        self._al(4)
        self.b += struct.pack(self.e + "I", v)

    def i32(self, v):
        self._al(4)
        self.b += struct.pack(self.e + "i", v)

    def f64(self, *vs):
        if vs:                   # consecutive doubles: only the first needs aligning
            self._al(8)
            self.b += struct.pack(f"{self.e}{len(vs)}d", *vs)

    def string(self, s):
        raw = (s.encode() if isinstance(s, str) else s) + b"\x00"
        self.u32(len(raw))
        self.b += raw

    def header(self, sec, nsec, frame):
        self.i32(sec)
        self.u32(nsec)
        self.string(frame)

    def doubles(self, vs):
        self.u32(len(vs))
        self.f64(*vs)

    def bytes(self, pad=0):
        return self.head + bytes(self.b) + bytes(pad)


def write(kind, m, enc=1, options=b"\x00\x00", pad=0):
    """The message ``m`` (a dict, see :func:`sample`) of ``kind`` as CDR bytes."""
    w = _Writer(enc, options)
    if kind == "odom":
        w.header(m["sec"], m["nsec"], m["frame"])
        w.string(m["child"])
        w.f64(*m["pose"], *m["pcov"], *m["twist"], *m["tcov"])
    elif kind == "js":
        w.header(m["sec"], m["nsec"], m["frame"])
        w.u32(len(m["names"]))
        for s in m["names"]:
            w.string(s)
        for f in ("position", "velocity", "effort"):
            w.doubles(m[f])
    else:
        w.u32(len(m["dims"]))
        for label, size, stride in m["dims"]:
            w.string(label)
            w.u32(size)
            w.u32(stride)
        w.u32(m["offset"])
        w.doubles(m["data"])
    return w.bytes(pad)


def sample(kind, rng, frame_len=5, n=3):
    """A random message of ``kind`` (frame_id / first label of ``frame_len`` characters)."""
    txt = "".join(rng.choice(list("abcxyz_/ö"), size=frame_len))
    g = [float(x) for x in rng.normal(size=90)]
    if kind == "odom":
        return dict(sec=int(rng.integers(-2**31, 2**31)), nsec=int(rng.integers(0, 2**32)), frame=txt,
                    child=txt[::-1] + "b", pose=g[:7], pcov=g[7:43], twist=g[43:49], tcov=g[49:85])
    if kind == "js":
        return dict(sec=12, nsec=34, frame=txt, names=[f"J{i}" + "x" * i for i in range(n)],
                    position=g[:n], velocity=g[n:2 * n], effort=g[2 * n:2 * n + 2])
    if kind == "ref":   # the reference layout (geodyn_ros.ros.wire.jets): rows x (6 twist + joints) + 9
        cols = 6 + n
        return dict(dims=[("derivative" + txt, 3, 3 * cols), ("w_x,w_y,w_z,v_x,v_y,v_z," +
                     ",".join(f"J{i}" for i in range(n)), cols, cols)], offset=9, data=g[:9 + 3 * cols])
    cols = 4 + n        # the flat reference: rows x (c_x, c_y, c_z, psi, joints) + 2
    return dict(dims=[(txt, 2, 2 * cols), ("c_x,c_y,c_z,psi," + ",".join(f"J{i}" for i in range(n)),
                                          cols, cols)], offset=2, data=g[:2 + 2 * cols])


# ----------------------------------------------------------------------------- the two decoders
def _bits(values):
    return np.asarray(values, dtype=np.float64).view(np.uint64).tolist()   # NaN payloads too


def ours(kind, buf, cache=None):
    """The decoder's result as comparable values, or the :class:`CdrError` text (any other
    exception fails the test)."""
    try:
        if kind == "odom":
            sec, nsec, f, c, pose, twist = decode_odometry(buf)
            return sec, nsec, f, c, _bits(pose), _bits(twist)
        if kind == "js":
            sec, nsec, names, pos, vel = decode_joint_state(buf, cache=cache)
            return sec, nsec, tuple(names), _bits(pos), _bits(vel)
        d = decode_float64_multiarray(buf, "reference")
        return [(x.label, x.size, x.stride) for x in d.layout.dim], d.layout.data_offset, _bits(d.data)
    except CdrError as exc:
        return str(exc)


def undefined_in_rclpy(buf) -> bool:
    """A padding count over the payload (Fast CDR honours it when the length is a multiple of 4):
    rclpy reads out of bounds (see the module docstring)."""
    return len(buf) % 4 == 0 and len(buf) >= 4 and (buf[3] & 3) > len(buf) - 4


def theirs(kind, buf):
    """rclpy's result as comparable values, or ``"refused"``."""
    assert not undefined_in_rclpy(buf)
    try:
        m = deserialize_message(bytes(buf), CLS[kind])
    except Exception:  # noqa: BLE001  rclpy's refusal (RMWError and friends)
        return "refused"
    if kind == "odom":
        p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
        return (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id, m.child_frame_id,
                _bits([p.x, p.y, p.z, o.x, o.y, o.z, o.w]),
                _bits([t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z]))
    if kind == "js":
        return m.header.stamp.sec, m.header.stamp.nanosec, tuple(m.name), _bits(m.position), _bits(m.velocity)
    return [(x.label, x.size, x.stride) for x in m.layout.dim], m.layout.data_offset, _bits(m.data)


def agree(kind, buf, cache=None, limits=True):
    """Assert the decoder and rclpy agree on ``buf``; returns the common result. With ``limits``,
    a refusal naming a size limit is the allowed difference."""
    a = ours(kind, buf, cache)
    if undefined_in_rclpy(buf):
        assert isinstance(a, str), f"{kind}: padding over the payload accepted: {bytes(buf[:16]).hex()}"
        return a
    b = theirs(kind, buf)
    if isinstance(a, str):
        if limits and "over the limit" in a:
            return a
        if b != "refused" and kind in ("ref", "flat") and _rclpy_skipped_the_layout(buf, b):
            return a
        assert b == "refused", f"{kind}: refused ({a}) but rclpy accepts {bytes(buf[:64]).hex()}"
    else:
        assert a == b, f"{kind}: {a} != rclpy {b} for {bytes(buf[:64]).hex()}"
    return a


def _rclpy_skipped_the_layout(buf, result) -> bool:
    """rclpy's one known misreading: a ``layout.dim`` count larger than the bytes left makes the
    generated C typesupport return false from the nested ``MultiArrayLayout``, which its caller
    ignores: rclpy then reads ``data`` right after the count and returns ``dim = []``,
    ``data_offset = 0`` (checked here from the bytes: the count and what follows). The decoder
    refuses such a message."""
    e = "<" if buf[1] & 1 else ">"
    pad = buf[3] & 3 if len(buf) % 4 == 0 else 0
    count = struct.unpack_from(e + "I", buf, 4)[0]
    if not (count > len(buf) - pad - 8 and result[0] == [] and result[1] == 0):
        return False
    w = _Writer(buf[1])                  # what rclpy read: the data sequence after the count
    w.u32(0)
    w.doubles([v for v in np.asarray(result[2], dtype=np.uint64).view(np.float64)])
    return buf[:4] + buf[4:len(w.bytes())] == w.bytes()[:2] + buf[2:4] + struct.pack(e + "I", count) + \
        w.bytes()[8:]


@pytest.fixture
def no_limits(monkeypatch):
    for name in ("MAX_NAME_BYTES", "MAX_JOINTS", "MAX_DIMS", "MAX_LABEL_BYTES", "MAX_DOUBLES"):
        monkeypatch.setattr(cdr, name, 2 ** 40, raising=False)   # (raising: the test runs on old code too)


# ----------------------------------------------------------------------------- truncation
@pytest.mark.parametrize("kind", KINDS)
def test_truncated_at_every_length(kind):
    """Every prefix of messages serialized by rclpy (every alignment of the strings), as is, with
    the header's padding count set to the zeros a writer appends, and zero-padded to 4 with the
    count left 0 (what the transport delivers: then the zeros are read as data, by both)."""
    rng = np.random.default_rng(2)
    refused = 0
    for frame_len in range(9):
        m = sample(kind, rng, frame_len)
        full = write(kind, m)
        assert theirs(kind, full) != "refused"
        for k in range(len(full) + 1):
            cut = full[:k]
            pad = -k % 4
            refused += isinstance(agree(kind, cut), str)
            if k >= 4:
                declared = bytearray(cut + bytes(pad))
                declared[3] = pad
                refused += isinstance(agree(kind, bytes(declared)), str)
                agree(kind, cut + bytes(pad))
    assert refused > 0


@pytest.mark.parametrize("kind", KINDS)
def test_last_bytes_cut_with_declared_padding_is_refused(kind):
    """The issue-32 attack: the last 1-3 bytes cut and zero-padded back to the length, the
    padding count in the header: rclpy refuses, the decoder must too; so must it a cut inside
    the fields the node does not use (the covariances, ``effort``)."""
    m = sample(kind, np.random.default_rng(3))
    full = write(kind, m)
    for cut in (1, 2, 3):
        b = bytearray(full[:-cut] + bytes(cut))
        b[3] = cut
        assert isinstance(agree(kind, bytes(b), limits=False), str)      # (agree: rclpy refuses too)
    unused = {"odom": 36 * 8, "js": 2 * 8 + 4, "ref": 8, "flat": 8}[kind]   # tcov, effort, last data
    assert isinstance(agree(kind, full[:-unused]), str)


# ----------------------------------------------------------------------------- header, XCDR2, byte order
@pytest.mark.parametrize("kind", KINDS)
def test_every_encapsulation_kind(kind):
    """Byte 0 and byte 1 of the header over their whole range (each message written in the
    layout that byte 1 names, little endian XCDR1 when it names none), for every frame_id length
    0..8: the accepted kinds and their values are rclpy's (XCDR2 aligns doubles to 4)."""
    rng = np.random.default_rng(4)
    accepted = set()
    for frame_len in range(9):
        m = sample(kind, rng, frame_len)
        r = theirs(kind, write(kind, m))     # the test writer is CDR: rclpy reads the message back
        if kind == "odom":
            assert r[2:4] == (m["frame"], m["child"]) and r[5] == _bits(m["twist"])
        elif kind == "js":
            assert r[2] == tuple(m["names"]) and r[4] == _bits(m["velocity"])
        else:
            assert r[0][1][0] == m["dims"][1][0] and r[2] == _bits(m["data"])
        for enc in range(256):
            layout = enc if enc in ACCEPTED else 1
            b = bytearray(write(kind, m, layout))
            b[1] = enc
            if not isinstance(agree(kind, bytes(b)), str):
                accepted.add(enc)
            b[0] = 1 + enc % 255
            assert isinstance(agree(kind, bytes(b)), str)
            if enc in ACCEPTED:      # the other byte order's layout, read with this one's
                other = write(kind, m, enc ^ 1)
                agree(kind, bytes([0, enc]) + other[2:])
    assert accepted == set(ACCEPTED)


@pytest.mark.parametrize("kind", KINDS)
def test_option_bytes(kind):
    """Every value of option byte 3 (its low 2 bits: padding count) and two of byte 2, with 0..3
    bytes appended, for every accepted kind: accepted exactly as rclpy accepts."""
    rng = np.random.default_rng(5)
    m = sample(kind, rng, 3)
    for enc in ACCEPTED:
        base = write(kind, m, enc)
        for o3 in range(256):
            for o2 in (0, 0xff):
                for extra in range(4):
                    agree(kind, base[:2] + bytes([o2, o3]) + base[4:] + bytes(extra))


def test_header_only_and_padding_over_the_payload_are_refused():
    for kind in KINDS:
        for n in range(4):
            assert isinstance(agree(kind, b"\x00\x01\x00\x00"[:n]), str)
        for head in (b"\x00\x01\x00\x01", b"\x00\x06\x00\x01", b"\x00\x07\x00\x03", b"\x00\x0b\x00\x02"):
            assert "padding" in ours(kind, head)
            assert isinstance(agree(kind, head), str)
        for head in (b"\x00\x01\x00\x03\x00\x00", b"\x00\x07\x00\x01\x00", b"\x00\x01\x00\x03\x00\x00\x00\x00"):
            assert isinstance(agree(kind, head), str)


# ----------------------------------------------------------------------------- random bytes
def _mutations(kind, rng, count):
    for _ in range(count):
        m = sample(kind, rng, int(rng.integers(0, 9)), int(rng.integers(0, 5)))
        enc = int(rng.choice(ACCEPTED))
        b = bytearray(write(kind, m, enc, bytes([0, int(rng.integers(0, 4))]), int(rng.integers(0, 4))))
        what = rng.integers(0, 4)
        if what == 0:        # a few random bytes anywhere (lengths and counts included)
            for p in rng.integers(0, len(b), size=int(rng.integers(1, 5))):
                b[p] = int(rng.integers(0, 256))
        elif what == 1:      # one byte of a length or count: small and large values
            p = int(rng.integers(4, len(b)))
            b[p] = int(rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 0x7f, 0x80, 0xff]))
        elif what == 2:      # random tail
            k = int(rng.integers(4, len(b)))
            b[k:] = rng.integers(0, 256, size=int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
        else:                # random bytes after a valid header
            b[4:] = rng.integers(0, 256, size=int(rng.integers(0, 200)), dtype=np.uint8).tobytes()
        yield bytes(b)


@pytest.mark.parametrize("kind", KINDS)
def test_random_bytes_without_limits(kind, no_limits):
    """Seeded mutations of valid messages and random payloads: exact agreement (limits raised)."""
    outcomes = set()
    for b in _mutations(kind, np.random.default_rng(6), 3000):
        outcomes.add(isinstance(agree(kind, b, limits=False), str))
    assert outcomes == {True, False}


@pytest.mark.parametrize("kind", KINDS)
def test_random_bytes_with_limits(kind):
    for b in _mutations(kind, np.random.default_rng(7), 1500):
        agree(kind, b)


def test_random_utf8_and_embedded_nul_in_names():
    """Joint names and frame ids of random bytes (invalid UTF-8, embedded NULs, no NUL at all):
    rclpy keeps the bytes before the first NUL and replaces invalid UTF-8; so must the decoder
    (both paths: the compiled walk for names and the reader for frame ids)."""
    rng = np.random.default_rng(8)
    alphabet = np.frombuffer(b"\x00\x01\x7f\x80\xbf\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80\xffaZ", dtype=np.uint8)
    for _ in range(400):
        raw = [rng.choice(alphabet, size=int(rng.integers(0, 12))).tobytes() for _ in range(int(rng.integers(0, 6)))]
        w = _Writer(int(rng.choice(ACCEPTED)))
        w.header(1, 2, rng.choice(alphabet, size=int(rng.integers(0, 9))).tobytes())
        w.u32(len(raw))
        for r in raw:
            if rng.integers(0, 2):
                w.string(r)               # with its NUL
            else:
                w.u32(len(r))             # no NUL
                w.b += r
        for _ in range(3):
            w.doubles([1.5])
        agree("js", w.bytes())
        odom = sample("odom", rng)
        odom["frame"] = rng.choice(alphabet, size=int(rng.integers(0, 9))).tobytes()
        agree("odom", write("odom", odom, int(rng.choice(ACCEPTED))))


# ----------------------------------------------------------------------------- counts and limits
def test_huge_counts_are_refused_naming_the_field():
    rng = np.random.default_rng(9)
    js = sample("js", rng, 1)
    js["frame"] = "x"
    b = write("js", js)
    p = 4 + 12 + 2 + 2                   # header, stamp, frame_id length, "x\0", padding
    assert struct.unpack_from("<I", b, p)[0] == 3
    for n in (cdr.MAX_JOINTS + 1, 10 ** 6, 2 ** 31, 2 ** 32 - 1):
        bad = b[:p] + struct.pack("<I", n) + b[p + 4:]
        assert "joint_states.name" in agree("js", bad)
    rm = sample("ref", rng, 1)
    nd = len(rm["data"])
    ref = write("ref", rm)
    for n in (cdr.MAX_DIMS + 1, 2 ** 32 - 1):
        assert "reference.layout.dim" in agree("ref", ref[:4] + struct.pack("<I", n) + ref[8:])
    p = ref.rindex(struct.pack("<I", nd), 0, len(ref) - 8 * nd)      # the data count
    for n in (nd + 1, cdr.MAX_DOUBLES + 1, 2 ** 32 - 1):
        assert "reference.data" in agree("ref", ref[:p] + struct.pack("<I", n) + ref[p + 4:])
    odom = write("odom", sample("odom", rng, 1))
    for n in (cdr.MAX_NAME_BYTES + 1, 2 ** 32 - 1):
        assert "odom.header.frame_id" in agree("odom", odom[:12] + struct.pack("<I", n) + odom[16:])


def _over(kind, m, field):
    """A complete message over a limit: rclpy accepts it, the decoder refuses naming ``field``
    and the limit in a short text (the input is not quoted)."""
    b = write(kind, m)
    assert theirs(kind, b) != "refused"
    err = ours(kind, b)
    assert isinstance(err, str) and field in err and "over the limit" in err and len(err) < 200, err
    return err


def test_limits_at_and_over():
    rng = np.random.default_rng(10)
    js, odom, ref = sample("js", rng), sample("odom", rng), sample("ref", rng)
    at = cdr.MAX_NAME_BYTES - 1                                  # characters, with the NUL: the limit
    for frame, ok in ((("f" * at), True), ("f" * (at + 1), False), ("f" * 2 ** 20, False)):
        js["frame"] = odom["frame"] = frame
        if ok:
            agree("js", write("js", js), limits=False)
            agree("odom", write("odom", odom), limits=False)
        else:
            assert "MAX_NAME_BYTES" in _over("js", js, "joint_states.header.frame_id")
            _over("odom", odom, "odom.header.frame_id")
    js["frame"] = odom["frame"] = "w"
    odom["child"] = "c" * 2 ** 20                               # a megabyte child frame
    _over("odom", odom, "odom.child_frame_id")
    for names, ok in ((["j" * at], True), (["j" * 150, "k" * 190, "ö" * 70], True),   # lengths with a byte >= 0x80
                      (["j" * (at + 1)], False), (["a", "j" * 2 ** 20], False)):
        js.update(names=names, position=[1.0] * len(names), velocity=[2.0] * len(names))
        if ok:
            agree("js", write("js", js), limits=False)
        else:
            _over("js", js, f"joint_states.name[{len(names) - 1}]")
    for n, ok in ((cdr.MAX_JOINTS, True), (cdr.MAX_JOINTS + 1, False), (50_000, False)):
        js.update(names=[f"joint_{i}" for i in range(n)], position=[0.5] * n, velocity=[0.25] * n)
        if ok:
            agree("js", write("js", js), limits=False)
        else:
            assert "MAX_JOINTS" in _over("js", js, "joint_states.name")
    js.update(names=["a"], position=[0.0] * (cdr.MAX_JOINTS + 1), velocity=[0.0])
    _over("js", js, "joint_states.position")
    js.update(position=[0.0], effort=[0.0] * (cdr.MAX_JOINTS + 1))
    _over("js", js, "joint_states.effort")
    ref["dims"] = [("d", 1, 1)] * cdr.MAX_DIMS
    agree("ref", write("ref", ref), limits=False)
    ref["dims"] = [("d", 1, 1)] * (cdr.MAX_DIMS + 1)
    _over("ref", ref, "reference.layout.dim")
    ref["dims"] = [("derivative", 3, 3), ("l" * (cdr.MAX_LABEL_BYTES - 1), 1, 1)]
    agree("ref", write("ref", ref), limits=False)                # a label listing MAX_JOINTS long names
    ref["dims"] = [("derivative", 3, 3), ("l" * cdr.MAX_LABEL_BYTES, 1, 1)]
    _over("ref", ref, "reference.layout.dim[1].label")
    ref["dims"], ref["data"] = [], [0.0] * (cdr.MAX_DOUBLES + 1)
    _over("ref", ref, "reference.data")


# ----------------------------------------------------------------------------- the name cache
def _names_start(frame_len):
    """Payload position right after a frame_id of ``frame_len`` ASCII characters (unaligned)."""
    return 8 + 4 + frame_len + 1


def test_name_cache_does_not_match_another_layout():
    """Issue 32: warm the cache with a joint_states whose frame_id has one length, then feed the
    bytes of its name list (from the end of the frame_id, alignment padding included, or from the
    count) after a frame_id of another length. rclpy reads the count at the aligned position and
    refuses (or reads other names); the decoder with the warm cache must give rclpy's answer, and
    valid messages of any frame_id length must still decode as rclpy (cache hit or not)."""
    rng = np.random.default_rng(11)
    names = ["J2", "J3x", "joint_four", ""]
    refused = 0
    for l1 in range(9):
        a = write("js", dict(sec=1, nsec=2, frame="a" * l1, names=names, position=[], velocity=[], effort=[]))
        w = _Writer()
        w.header(1, 2, "a" * l1)
        w.u32(len(names))
        for n in names:
            w.string(n)
        stop, s1 = 4 + len(w.b), 4 + _names_start(l1)            # where the names end / start
        for l2 in range(9):
            for key in (a[s1:stop], a[(s1 + 3) // 4 * 4:stop]):
                cache = name_cache()
                assert ours("js", a, cache)[2] == tuple(names)
                b = bytearray(write("js", dict(sec=1, nsec=2, frame="b" * l2, names=[], position=[],
                                               velocity=[], effort=[])))
                del b[4 + _names_start(l2):]
                b += key + bytes(-(len(b) + len(key)) % 4) + struct.pack("<3I", 0, 0, 0)
                r = agree("js", bytes(b), cache)
                refused += isinstance(r, str)
                assert agree("js", bytes(b), name_cache()) == r      # a cold cache: the same
            m = dict(sec=3, nsec=4, frame="c" * l2, names=names, position=list(rng.normal(size=4)),
                     velocity=list(rng.normal(size=4)), effort=[1.0])
            for enc in (1, 0, 7, 6):
                assert not isinstance(agree("js", write("js", m, enc), cache), str)
    assert refused > 0


# ----------------------------------------------------------------------------- rclpy-made messages
def _relabelled(b):
    """``b`` and its bytes under every other accepted header kind (read with that kind's rules)."""
    return [b] + [b[:1] + bytes([k]) + b[2:] for k in ACCEPTED if k != b[1]]


def test_rclpy_serialized_messages_with_alignment_shifts():
    """Messages made by rclpy's serializer (its padding bytes are uninitialized, its length has
    trailing bytes): frame_id lengths 0..8, names and labels of every length mod 4; and the same
    bytes relabelled with every other header kind (XCDR2: the doubles are then read 4-aligned)."""
    rng = np.random.default_rng(12)
    cache = name_cache()
    for frame_len in range(9):
        f = "w" * frame_len
        o = Odometry()
        o.header.frame_id, o.child_frame_id = f, f + "c"
        o.twist.twist.angular.z = float(rng.normal())
        o.pose.covariance = [float(x) for x in rng.normal(size=36)]
        for b in _relabelled(serialize_message(o)):
            agree("odom", b)
        j = JointState()
        j.header.frame_id = f
        j.name = [("n" * k) for k in range(frame_len + 1)]
        j.position = [float(x) for x in rng.normal(size=frame_len + 1)]
        j.velocity = j.position[::-1]
        for b in _relabelled(serialize_message(j)):
            agree("js", b, cache)
        a = Float64MultiArray()
        a.layout.dim = [MultiArrayDimension(label=f, size=frame_len, stride=2)]
        a.data = [float(x) for x in rng.normal(size=frame_len)]
        for b in _relabelled(serialize_message(a)):
            agree("ref", b)


# ----------------------------------------------------------------------------- bounded diagnostics
def test_diagnostics_and_logs_are_bounded_under_megabyte_input(h, monkeypatch):
    """Issue 32: megabyte frame ids, a 50k-name unknown-joint list, a new problem key and a new
    reason every message, megabyte exceptions, notes and hardware id, and a caller publishing a
    status every message, at 1 kHz for 3 s (a simulated monotonic clock: no sleeping). Every
    status serialized by rclpy is at most STATUS_MAX_BYTES, at most 2 * rate statuses and
    LOG_LINES log lines a second (+ one window for the edges), no log line longer than a
    traceback's bound, and every skipped cycle is still counted once."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticStatus
    from types import SimpleNamespace

    from geodyn_ros.ros import diagnostics as D
    clock = SimpleNamespace(t=1000.0)
    monkeypatch.setattr(D, "time", SimpleNamespace(monotonic=lambda: clock.t))
    node = h.add(rclpy.create_node("attacked", context=h.ctx))
    lines = []
    logger = SimpleNamespace(**{lv: (lambda text, lv=lv: lines.append((clock.t, lv, text)))
                                for lv in ("info", "warning", "error")})
    monkeypatch.setattr(node, "get_logger", lambda: logger)
    rate, seconds = 10.0, 3
    rep = D.DiagnosticsReporter(node, "attacked: feedforward", rate=rate)
    statuses = []
    monkeypatch.setattr(rep.pub, "publish", lambda arr: statuses.append((clock.t, len(serialize_message(arr)), arr)))
    big = "x" * 2 ** 20
    unknown = str([f"unknown_joint_{i}" for i in range(50_000)])          # ~1 MB
    for i in range(1000 * seconds):
        clock.t += 0.001
        rep.problem("odom", f"odom: header.frame_id '{big}{i}' is not the world frame 'world'")
        rep.problem(f"joint_states {i}", f"joint_states: names the model does not know: {unknown}")
        rep.problem("reasons", "bad " + f"{i:b}".replace("0", "a").replace("1", "b"))   # a new reason each time
        if i % 10 == 0:
            rep.report(DiagnosticStatus.WARN, f"robot_description refused: {big}{i}")
            rep._flush()                                                    # the flush timer
        if i % 50 == 0:
            rep.exception("odom", ValueError(f"{i} {big}"))
        rep.publish_status(DiagnosticStatus.WARN, big)                      # a careless caller
        rep.notes[f"note {i % 20}"] = big
        rep.hardware_id = big
    windows = seconds + 1          # fixed 1 s windows: a window may straddle two seconds
    assert statuses and lines
    assert max(size for _, size, _ in statuses) <= D.STATUS_MAX_BYTES
    assert len(statuses) <= 2 * rate * windows, len(statuses)
    assert sum(size for _, size, _ in statuses) <= 2 * rate * windows * D.STATUS_MAX_BYTES
    assert len(lines) <= D.LOG_LINES * windows, len(lines)
    assert max(len(text) for _, _, text in lines) <= D.TRACEBACK_CHARS + 40      # + "... (N characters)"
    assert any("... (1048576 characters)" in arr.status[0].message for _, _, arr in statuses)   # the size is said
    assert any("more log lines suppressed" in text for _, _, text in lines)
    counted = sum(int(kv.value) for _, _, arr in statuses for kv in arr.status[0].values
                  if kv.key.startswith("skipped[")) + sum(rep.since_last.values())
    assert counted == rep.counters["cycles_skipped"] == 3 * 1000 * seconds + seconds * 1000 // 50


def test_clip():
    assert D_clip("x" * 1_000_000) == "x" * 200 + "... (1000000 characters)"
    assert D_clip("short") == "short" and D_clip(12) == "12"
    assert D_clip("a\nb\x00") == "a\\x0ab\\x00"              # one line stays one line
    t = D_clip("\n" * 1000)
    assert len(t) <= 200 + 32 and D_clip(t, 232) == t


def D_clip(*a):
    from geodyn_ros.ros.common.diagnostics import clip
    return clip(*a)


def test_geodyn_node_diagnostics_stay_bounded_on_a_megabyte_label(h):
    """End to end: a reference whose row label is a megabyte (within MAX_LABEL_BYTES, so it is
    decoded, then refused by the layout check quoting it) is refused; every /diagnostics status
    stays within STATUS_MAX_BYTES (rclpy's serialized size) and says the quoted size; the next
    valid reference is used."""
    from sibling import test_module
    hostile = test_module("test_ros_hostile")
    _ref_msg, _start, _valid_then_published = hostile._ref_msg, hostile._start, hostile._valid_then_published

    from geodyn_ros.ros import diagnostics as D
    node, jets, diag = _start(h)
    msg = _ref_msg(1.0, 1, node.get_clock().now().nanoseconds)
    msg.layout.dim[0].label = "d" * 2 ** 20
    h.publisher(Float64MultiArray, "reference").publish(msg)
    assert h.spin_until(lambda: any(s.message.startswith("reference") for a in diag for s in a.status))
    assert not jets
    assert max(len(serialize_message(a)) for a in diag) <= D.STATUS_MAX_BYTES
    assert any(s.message.endswith("characters)") for a in diag for s in a.status)
    assert _valid_then_published(h, node, jets)
