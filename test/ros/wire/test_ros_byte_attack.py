"""Attacks on the bytes of ``geodyn_node``'s inputs, through ROS (issue 32).

Raw malformed serialized messages are published (an rclpy publisher's ``publish`` takes the
bytes as they are) on ``odom``, ``joint_states``, ``reference`` (measured mode), ``flat_reference``
(flat mode) and ``robot_description``. The decoder-level comparison with rclpy on thousands of
buffers is ``test_cdr_attack.py``; here each kind of attack goes through the running node once
or a few times, inside an input set:

* truncation at a spread of lengths (the typed inputs: at every length), including the last 1-3 bytes (cut with the header's padding
  count set as a writer sets it, and cut without it, zero-padded as the transport does);
* seeded random bytes, and random bytes after a valid header;
* huge counts (names, data, frame_id length);
* big endian headers on little-endian bodies, XCDR2 and unknown encapsulation kinds, option bits;
* ``frame_id`` lengths 0..8 (every alignment of what follows);
* megabyte strings;
* one message of a pair dropped.

The oracle is rclpy's own deserializer on the same bytes plus ``gd.inverse_dynamics`` (or the
flat map) evaluated here: for the attacked set stamped ``t``, an output stamped ``t`` may exist
only if rclpy accepts the bytes and the output equals the library's answer on the values rclpy
decoded; the good set that follows (stamp ``t + 1 ms``) must give the library's answer of its own
inputs to rounding; no output may carry any other stamp. Cases marked ``needs_strict_cdr`` (a
message cut by 1-3 bytes with the padding count set: rclpy refuses it, the decoder of HEAD
accepted it with zeroed bytes) pass once the strict decoder lands (another change of issue 32).

The typed inputs (issue 43: ``geodyn_msgs/ReferenceJet`` on ``reference``, ``FlatReference`` on
``flat_reference``, the node's default ``message_types: typed``) get the same attacks (the
generator :func:`_attacks` works on any serialization; huge counts are written into every count
field), and besides them the good message re-encoded by the independent CDR writer of
``test_typed_raw.py`` in every header kind rclpy accepts (big endian, XCDR2 with its 4-byte
alignment of doubles) with frame ids and representation empty or named (every alignment the node
accepts): rclpy accepts those, so the node must answer them with the library's values. The
deprecated ``Float64MultiArray`` inputs (``message_types: multiarray``) keep their attacks.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from ros_harness import decode_reference, joint_states_msg, odometry_msg, read_feedforward  # noqa: I100 (ROS env first; fixture h: conftest)

from geodyn_msgs.msg import FeedforwardJet, FlatReference, ReferenceJet
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from sibling import test_module
from std_msgs.msg import Float64MultiArray, String

import geodyn_ros as gd
from geodyn_ros.lie import Ad, quat_to_matrix
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.jets import make_flat_reference_msg, make_reference_msg
from geodyn_ros.ros.wire.typed import jet_fields, make_flat_reference, make_reference_jet
from geodyn_ros.trajectories import figure_eight_reference, table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MODEL = gd.load_urdf(URDF)
ORDER = 1
MS = 1_000_000
# Same double-precision kernel on inputs equal to rounding (the pose through the same quaternion):
# ~1e-15 relative; any decoding or pairing error moves the outputs by many orders more.
TOL = 1e-12
TYPES = {"odom": Odometry, "joint_states": JointState, "reference": ReferenceJet, "flat_reference": FlatReference}
LEGACY = {**TYPES, "reference": Float64MultiArray, "flat_reference": Float64MultiArray}
# the independent CDR writer of the typed messages and the header kinds rclpy accepts (test_typed_raw)
TYPED_RAW = test_module("test_typed_raw")


# ----------------------------------------------------------------------------- attacks on bytes
def _cut(raw: bytes, k: int, with_count: bool) -> bytes:
    """``raw`` without its last ``k`` payload bytes (after any padding the writer declared), padded
    back to a multiple of 4 with zeros; ``with_count``: the pad count in the options (byte 3, low 2
    bits) as a writer sets it, else 0 (what the transport's own zero padding looks like)."""
    declared = raw[3] & 3 if len(raw) % 4 == 0 else 0
    body = raw[:len(raw) - declared - k]
    pad = (-len(body)) % 4
    head = bytearray(body[:4])
    if len(head) == 4:
        head[3] = (head[3] & ~3) | (pad if with_count else 0)
    return bytes(head) + body[4:] + b"\0" * pad


def _attacks(raw: bytes, topic: str, seed: int, legacy: bool = True, counts=()):
    """(name, bytes, needs_strict_cdr) of every attack on the good serialization ``raw``
    (``legacy``: a ``Float64MultiArray``, else a message with a header; ``counts``: the positions
    of its count fields)."""
    rng = np.random.default_rng(seed)
    L = len(raw) - (raw[3] & 3)
    out = []
    for k in (1, 2, 3):
        out.append((f"cut {k} (count set)", _cut(raw, k, True), True))
        out.append((f"cut {k} (transport padding)", _cut(raw, k, False), False))
    spread = {0, 1, 2, 3, 4, 5, 8, 11, 12, 13, 16, 20, L // 3, L // 2, L - 8, L - 5, L - 4}
    for n in sorted(spread) if legacy or topic in ("odom", "joint_states") else range(L):   # typed: every length
        if 0 <= n < L:
            out.append((f"first {n} bytes", raw[:n], False))
    for i in range(3):
        out.append((f"random bytes {i}", rng.integers(0, 256, int(rng.integers(1, 2 * L))).astype(np.uint8).tobytes(),
                    False))
        out.append((f"header + random {i}", raw[:4] + rng.integers(0, 256, L - 4).astype(np.uint8).tobytes(), False))
    for kind in (0x00, 0x02, 0x03, 0x06, 0x07, 0x09, 0x0B, 0x0C, 0x11, 0xFF):
        out.append((f"encapsulation kind {kind:#04x}", raw[:1] + bytes([kind]) + raw[2:], False))
    out.append(("encapsulation byte 0 = 1", b"\x01" + raw[1:], False))
    for opt in (0x01, 0x80, 0xFF):
        out.append((f"option byte 2 = {opt:#04x}", raw[:2] + bytes([opt]) + raw[3:], False))
    out.append(("option pad count 3", raw[:3] + bytes([(raw[3] & ~3) | 3]) + raw[4:], False))
    # huge counts: the first uint32 after the stamp (frame_id length, or layout.dim count), and
    # with ``counts`` (the typed messages) at every count field
    first = 4 if legacy else 12
    for at in sorted({first, *counts}):
        for big in (0xFFFFFFFF, 0x7FFFFFFF, 1 << 20):
            out.append((f"count {big:#x} at byte {at}", raw[:at] + struct.pack("<I", big) + raw[at + 4:], False))
    return out


def _count_fields(raw: bytes, values) -> list:
    """The 4-aligned payload positions of ``raw`` past the header whose uint32 is one of ``values``
    (the sequence counts of a typed message: entries, names, values)."""
    return [i for i in range(12, len(raw) - 3, 4) if struct.unpack_from("<I", raw, i)[0] in values]


def _typed_encodings(msg, kind: str):
    """(name, bytes) of the good typed ``msg`` (``kind`` "ref" or "flat" of test_typed_raw) re-encoded
    by the independent writer in every header kind rclpy accepts, with ``header.frame_id``,
    ``child_frame_id`` and ``representation`` empty or as the node expects (each shifts the
    alignment of what follows; XCDR2 aligns doubles to 4)."""
    f = jet_fields(msg)
    out = []
    for frame, child, rep in (("", "", ""), ("world", "", "spatial"), ("", "base_link", ""),
                              ("world", "base_link", "spatial")):
        m = dict(sec=f.sec, nsec=f.nanosec, frame=frame, child=child, order=f.order, rep=rep,
                 pose=(list(f.pose) if kind == "ref" else list(f.yaw) + [0.0] * (7 - len(f.yaw))),
                 rows=[list(r) + [0.0] * (6 - len(r)) for r in f.rows.tolist()], names=list(f.names),
                 values=list(f.values))
        for enc in TYPED_RAW.ACCEPTED:
            out.append((f"encoding {enc:#04x}, frame '{frame}', child '{child}', representation '{rep}'",
                        TYPED_RAW.write(kind, m, enc)))
    return out


def _frame_id_variants(topic: str, v):
    """The good message of ``v`` with ``frame_id`` of every length 0..8 (each alignment of the
    fields after it) and of one megabyte."""
    out = []
    for n in (*range(9), 1 << 20):
        m = v.odom_msg(0) if topic == "odom" else v.js_msg(0)
        m.header.frame_id = "w" * n if topic == "joint_states" else ("world" if n == 5 else "x" * n)
        out.append((f"frame_id of {n} bytes", m))
    return out


# ----------------------------------------------------------------------------- input sets
class Inputs:
    """A seeded measured input set: reference (Table 3 at ``t``; a ``ReferenceJet``, or with
    ``legacy`` the deprecated layout), odometry and joint states."""

    def __init__(self, i: int, legacy: bool = False):
        rng = np.random.default_rng(50 + i)
        ref = table3_reference(0.7 * i, ORDER + 1)
        K1 = ORDER + 3
        make = make_reference_msg if legacy else make_reference_jet
        self.ref = make(0, ref.base_pose, ref.base_twist[:K1], ref.q[:K1], NAMES)
        self.C = ref.base_pose.copy()
        self.C[:3, 3] += rng.normal(size=3) * 0.05
        self.w_b, self.v_b = rng.normal(size=3), rng.normal(size=3)
        self.q, self.qd = rng.normal(size=6), rng.normal(size=6)

    def odom_msg(self, stamp):
        return odometry_msg(stamp, self.C, self.w_b, self.v_b)

    def js_msg(self, stamp):
        return joint_states_msg(stamp, NAMES, self.q, self.qd)

    def ref_msg(self, stamp):
        return _with_stamp(self.ref, stamp)


def _answer(odom, js, ref):
    """``gd.inverse_dynamics`` of measured-mode messages (Python objects), decoded here."""
    _, Vr, Qr = decode_reference(ref)
    o = odom.pose.pose.orientation
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix([o.x, o.y, o.z, o.w], "xyzw")
    p = odom.pose.pose.position
    C[:3, 3] = p.x, p.y, p.z
    t = odom.twist.twist
    V, Q = Vr[: ORDER + 2].copy(), Qr[: ORDER + 3].copy()
    V[0] = Ad(C) @ np.r_[t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z]
    idx = [list(js.name).index(n) for n in NAMES]
    Q[0], Q[1] = np.array(js.position)[idx], np.array(js.velocity)[idx]
    return gd.inverse_dynamics(MODEL, C, V, Q, ORDER)


def _equal(jet, want) -> bool:
    _, W, tau, _, _ = read_feedforward(jet)
    scale = max(1.0, np.abs(want.base_wrench).max(), np.abs(want.tau).max())
    return bool(np.abs(W - want.base_wrench).max() <= TOL * scale and np.abs(tau - want.tau).max() <= TOL * scale)


def _stamp(msg) -> int:
    """The stamp [ns] of a message with a header, or of a deprecated layout (``data[0:2]``)."""
    if isinstance(msg, Float64MultiArray):
        return int(msg.data[0]) * 1_000_000_000 + int(msg.data[1])
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def _rclpy(raw: bytes, msg_type):
    """rclpy's decoding of ``raw`` or None if it refuses (never called on buffers of 4 bytes or
    fewer, nor with a padding count over the payload: rclpy reads out of bounds there, see
    test_cdr_attack)."""
    if len(raw) <= 4 or TYPED_RAW.undefined_in_rclpy(raw):
        return None
    try:
        return deserialize_message(raw, msg_type)
    except Exception:  # noqa: BLE001  any refusal
        return None


def _with_stamp(msg, stamp):
    if isinstance(msg, Float64MultiArray):
        msg.data[0], msg.data[1] = divmod(stamp, 10**9)
    else:
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10**9)
    return msg


def measured(h, legacy: bool):
    """geodyn_node in measured mode (``legacy``: ``message_types: multiarray``), its jet, the publishers."""
    node = h.make(GeodynNode, {"urdf_path": URDF, "order": ORDER, "input_mode": "measured", "input_policy": "exact",
                               "stale_timeout": 1e6, "message_types": "multiarray" if legacy else "typed"})
    types = LEGACY if legacy else TYPES
    jets = h.record(Float64MultiArray if legacy else FeedforwardJet, "feedforward/jet", depth=1000)
    pubs = {t: h.publisher(types[t], t) for t in ("reference", "odom", "joint_states")}
    for t in pubs:
        h.wait_matched(t)
    return node, jets, pubs


class Run:
    """Attacked set, then good set, for one node: the bookkeeping of stamps and expected answers."""

    def __init__(self, h, node, jets, pubs, legacy=False):
        self.h, self.node, self.jets, self.pubs = h, node, jets, pubs
        self.legacy, self.types = legacy, (LEGACY if legacy else TYPES)
        self.t = node.get_clock().now().nanoseconds - 10**9    # fresh for stale_timeout 1e6 s
        self.allowed = {}     # stamp -> the library answers an output of that stamp may equal
        self.i = 0
        self.prev_ref = None  # (Inputs index, stamp) of the last good set's reference

    def case(self, name, topic, bad: bytes | None, needs_strict=False, answered=False):
        """The set stamped ``t`` with ``bad`` (bytes, or None: dropped) on ``topic``, then a good
        set at ``t + 1 ms``, whose output must come and be right; checks every output so far.
        ``answered``: ``bad`` is a good message in another encoding, whose set must be answered."""
        v = Inputs(self.i % 7, self.legacy)
        self.i += 1
        t, self.t = self.t + MS, self.t + 2 * MS
        good = {"reference": v.ref_msg(t), "odom": v.odom_msg(t), "joint_states": v.js_msg(t)}
        decoded = dict(good)
        for topic_ in ("reference", "odom", "joint_states"):
            if topic_ != topic:
                self.pubs[topic_].publish(good[topic_])
            elif bad is not None:
                self.pubs[topic_].publish(bad)
                decoded[topic_] = _rclpy(bad, self.types[topic_])
        answers = self.allowed.setdefault(t, [])
        if topic == "reference" and self.prev_ref is not None:
            # the attacked reference refused: the state of t with the newest earlier reference (the rule)
            answers.append(_answer(good["odom"], good["joint_states"],
                                   Inputs(self.prev_ref[0], self.legacy).ref_msg(self.prev_ref[1])))
        if all(m is not None for m in decoded.values()):
            try:
                s = {k: _stamp(m) for k, m in decoded.items()}
                if s["odom"] == s["joint_states"] == t:
                    answers.append(_answer(decoded["odom"], decoded["joint_states"], decoded["reference"]))
            except (ValueError, IndexError, OverflowError):
                pass    # rclpy decoded values the node must refuse (names, lengths, layout)
        j_w = self.i % 7 + 7
        w = Inputs(j_w, self.legacy)
        t2 = t + MS
        self.prev_ref = (j_w, t2)
        for topic_, m in (("reference", w.ref_msg(t2)), ("odom", w.odom_msg(t2)), ("joint_states", w.js_msg(t2))):
            self.pubs[topic_].publish(m)
        self.allowed[t2] = [_answer(w.odom_msg(t2), w.js_msg(t2), w.ref_msg(t2))]
        got = lambda: any(_stamp(j) == t2 for j in self.jets)   # noqa: E731
        assert self.h.spin_until(got, 10.0), f"{name} on {topic}: no output for the next good set " \
                                             f"({self.node.diag.last_problem})"
        if answered:
            assert any(_stamp(j) == t for j in self.jets), f"{name} on {topic}: a good message not answered " \
                                                            f"({self.node.diag.last_problem})"
        for j in self.jets:
            s = _stamp(j)
            assert s in self.allowed, f"{name} on {topic}: an output stamped {s}, no input set of that stamp"
            assert any(_equal(j, a) for a in self.allowed[s]), \
                f"{name} on {topic}: the output stamped {s} is not the library's answer for its inputs"


@pytest.mark.parametrize("topic,legacy", [("odom", False), ("joint_states", False), ("reference", False),
                                          ("reference", True)])
def test_measured_mode_survives_byte_attacks(h, topic, legacy):
    """``legacy``: the deprecated Float64MultiArray reference (``message_types: multiarray``)."""
    node, jets, pubs = measured(h, legacy)
    run = Run(h, node, jets, pubs, legacy)
    v = Inputs(0, legacy)
    good = {"odom": v.odom_msg(0), "joint_states": v.js_msg(0), "reference": v.ref_msg(0)}[topic]
    raw = serialize_message(good)
    typed_ref = topic == "reference" and not legacy
    counts = _count_fields(raw, (ORDER + 3, len(NAMES), (ORDER + 3) * len(NAMES))) if typed_ref else ()
    strict_failures = []
    for name, bad, needs_strict in _attacks(raw, topic, seed=sum(map(ord, topic)) % 1000,
                                            legacy=topic == "reference" and legacy, counts=counts):
        bad = _restamp(bad, topic, run.t + MS, legacy)
        try:
            run.case(name, topic, bad)
        except AssertionError as exc:
            if not needs_strict:
                raise
            strict_failures.append(str(exc).splitlines()[0])
    if topic != "reference":
        for name, msg in _frame_id_variants(topic, Inputs(3)):
            run.case(name, topic, serialize_message(_with_stamp(msg, run.t + MS)))
    if typed_ref:   # the good reference of the next set, re-encoded: big endian, XCDR2, every alignment
        for name, raw_good in _typed_encodings(Inputs(run.i % 7).ref_msg(run.t + MS), "ref"):
            run.case(name, topic, raw_good, answered=True)
    run.case("message dropped", topic, None)
    assert not strict_failures, "needs the strict cdr decoder (issue 32): " + "; ".join(strict_failures)


def _restamp(bad: bytes, topic: str, stamp: int, legacy: bool = False) -> bytes:
    """Write ``stamp`` into an attacked buffer where the good message had its stamp (header bytes
    4..12; the deprecated reference's data[0..1]), if the buffer reaches that far, so that the
    attack is part of the set stamped ``stamp``."""
    sec, nsec = divmod(stamp, 10**9)
    e = "<" if len(bad) < 2 or bad[1] & 1 else ">"   # the byte order the header names
    if legacy and topic in ("reference", "flat_reference"):
        off = _REF_OFFSET[topic]
        if len(bad) >= off + 16:
            return bad[:off] + struct.pack(e + "dd", sec, nsec) + bad[off + 16:]
        return bad
    if len(bad) >= 12:
        return bad[:4] + struct.pack(e + "iI", sec, nsec) + bad[12:]
    return bad


def _data_offset(msg) -> int:
    marker = 0.123456789012345
    msg.data[0] = marker
    return serialize_message(msg).index(struct.pack("<d", marker))


_REF_OFFSET = {"reference": _data_offset(Inputs(0, legacy=True).ref_msg(0))}


# ----------------------------------------------------------------------------- flat mode
def _flat_thrust_torque(jet):
    """``[T^(k), tau_b^(k)]`` rows of a ``feedforward/flat_jet``: the typed ``FeedforwardJet``
    (force ``(0, 0, T)``, read field by field) or the deprecated layout (its first four columns)."""
    if isinstance(jet, Float64MultiArray):
        d = np.array(jet.data)
        return d[jet.layout.data_offset:].reshape(jet.layout.dim[0].size, jet.layout.dim[1].size)[:, :4]
    _, W, _, _, _ = read_feedforward(jet)
    return np.c_[W[:, 5], W[:, :3]]


@pytest.mark.parametrize("legacy", [False, True])
def test_flat_mode_survives_byte_attacks(h, legacy):
    """``legacy``: the deprecated Float64MultiArray flat reference (``message_types: multiarray``)."""
    urdf = str(shipped_urdf().parent / "hexarotor_manipulator.urdf.xacro")
    node = h.make(GeodynNode, {"urdf_path": urdf, "order": 2, "input_mode": "flat", "stale_timeout": 1e6,
                               "message_types": "multiarray" if legacy else "typed"})
    ref_type = Float64MultiArray if legacy else FlatReference
    jets = h.record(Float64MultiArray if legacy else FeedforwardJet, "feedforward/flat_jet", depth=1000)
    pub = h.publisher(ref_type, "flat_reference")
    h.wait_matched("flat_reference")
    names = node.model.joint_names
    model = node.model

    def flat_msg(i, stamp):
        ref = figure_eight_reference(0.3 + 0.5 * i, 6)
        q = np.zeros((7, len(names)))
        q[:, :6] = ref.q[:7]
        make = make_flat_reference_msg if legacy else make_flat_reference
        return make(stamp, ref.com[:7], ref.yaw[:7], q, names)

    def answer(msg):
        """The flat map of a message rclpy decoded (read here, by column or field name)."""
        if legacy:
            d = np.array(msg.data)
            rows = msg.layout.dim[0].size
            cols = msg.layout.dim[1].size
            body = d[msg.layout.data_offset:].reshape(rows, cols)
            com, yaw, q = body[:7, :3], body[:5, 3], body[:5, 4:]
        else:
            if tuple(msg.joint_names) != tuple(names):
                raise ValueError("joint names")    # (the node gathers by name; the attacks keep them or break them)
            com = np.array([(c.x, c.y, c.z) for c in msg.com])[:7]
            q = np.array(msg.q).reshape(len(msg.com), len(names))[:5]
            yaw = np.array(msg.yaw)[:5]
        res = gd.flat_inverse_dynamics(model, com, yaw, q, 2)
        return res.thrust, res.body_torque

    raw0 = serialize_message(flat_msg(0, 0))
    K1 = 7
    counts = () if legacy else _count_fields(raw0, (K1, len(names), K1 * len(names)))
    if legacy:
        _REF_OFFSET["flat_reference"] = _data_offset(flat_msg(0, 0))
    t = node.get_clock().now().nanoseconds - 10**9
    allowed = {}
    strict_failures = []
    cases = [(n, b, s, False) for n, b, s in _attacks(raw0, "flat_reference", 5, legacy, counts)]
    if not legacy:   # good messages re-encoded (big endian, XCDR2, every alignment): must be answered
        cases += [(n, b, False, True) for n, b in _typed_encodings(flat_msg(1, 0), "flat")]
    for name, bad, needs_strict, answered in [*cases, ("dropped", None, False, False)]:
        t += MS
        if bad is not None:
            bad = _restamp(bad, "flat_reference", t, legacy)
            pub.publish(bad)
            dec = _rclpy(bad, ref_type)
            if dec is not None and (not legacy or len(dec.data) >= 2) and _stamp(dec) == t:
                try:
                    allowed[t] = answer(dec)
                except (ValueError, IndexError):
                    pass
            if answered:
                assert t in allowed, f"{name}: rclpy refuses a good message"
                t_bad = t
                assert h.spin_until(lambda: any(_stamp(j) == t_bad for j in jets), 10.0), \
                    f"{name}: a good message not answered ({node.diag.last_problem})"
        t += MS
        good = flat_msg(len(allowed) % 5, t)
        pub.publish(good)
        allowed[t] = answer(good)
        t_good = t
        assert h.spin_until(lambda: any(_stamp(j) == t_good for j in jets), 10.0), f"{name}: no output for the good message"
        for j in jets:
            s = _stamp(j)
            ok = s in allowed
            if ok:
                thrust, torque = allowed[s]
                want = np.c_[thrust[:, None], torque]
                ok = np.abs(_flat_thrust_torque(j) - want).max() <= TOL * max(1.0, np.abs(want).max())
            if not ok:
                msg = f"{name}: output stamped {s} is not the flat map's answer of an input of that stamp"
                if needs_strict and s == t_good - MS:
                    strict_failures.append(msg)
                    continue
                raise AssertionError(msg)
        jets.clear()
    assert not strict_failures, "needs the strict cdr decoder (issue 32): " + "; ".join(strict_failures)


# ----------------------------------------------------------------------------- robot_description
def test_robot_description_survives_byte_attacks(h):
    """Malformed bytes on robot_description (a plain rclpy subscription: rclpy's own deserializer)
    while the node waits for it: refused without killing the node; then a valid description is
    loaded and the next reference gives the library's answer."""
    from geodyn_ros.ros.common.description import description_qos
    node = h.make(GeodynNode, {"urdf_path": "", "order": ORDER, "stale_timeout": 1e6})
    jets = h.record(FeedforwardJet, "feedforward/jet", depth=100)
    pub = h.probe.create_publisher(String, "/robot_description", description_qos())
    ref_pub = h.publisher(ReferenceJet, "reference")
    h.wait_matched("reference")
    assert h.spin_until(lambda: pub.get_subscription_count() > 0)
    text = open(URDF).read()
    raw = serialize_message(String(data=text))
    rng = np.random.default_rng(9)
    attacks = [raw[:n] for n in (0, 3, 4, 5, 8, len(raw) // 2, len(raw) - 3)]
    attacks += [raw[:4] + struct.pack("<I", 0xFFFFFFFF) + raw[8:], raw[:1] + b"\x00" + raw[2:],
                rng.integers(0, 256, 300).astype(np.uint8).tobytes(),
                serialize_message(String(data="x" * (1 << 20))), serialize_message(String(data="<robot"))]
    for bad in attacks:
        pub.publish(bad)
        h.spin_for(0.05)
        assert node.model is None
    pub.publish(String(data=text))
    assert h.spin_until(lambda: node.model is not None, 30.0), node.diag.last_problem
    v = Inputs(1)
    stamp = node.get_clock().now().nanoseconds
    msg = v.ref_msg(stamp)
    ref_pub.publish(msg)
    assert h.spin_until(lambda: any(_stamp(j) == stamp for j in jets), 10.0)
    C, V, Q = decode_reference(msg)
    want = gd.inverse_dynamics(MODEL, C, V[:ORDER + 2], Q[:ORDER + 3], ORDER)
    assert all(_equal(j, want) for j in jets)

