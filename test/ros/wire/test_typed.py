"""``geodyn_ros.ros.wire.typed``: every typed encoder/decoder against the ``Float64MultiArray``
layout it replaces (``geodyn_ros.ros.wire.jets``), through rclpy's serializer.

* The same arrays encoded both ways, serialized and deserialized by rclpy, decode to the same
  arrays and stamps **bit for bit** (no tolerance: both paths copy the doubles, and the pose
  quaternion is ``lie.matrix_to_quat`` in both encoders and ``pose_matrix`` in both decoders),
  with the joints matched by name (the message's joints shuffled, with extra joints).
* The same bad inputs (too few rows, NaN/Inf in a row used, a missing or repeated joint, a bad
  stamp, a non-unit quaternion) are refused by both with an ``InputError`` naming the topic; where
  the problem is worded the same, the line is the same.
* What only the typed message carries is checked: ``order`` against the entry counts, the
  frames, the representation (unknown, or not the one the consumer needs; empty = spatial), the
  flat feedforward's force ``(0, 0, T)``, the linearization's ``nx``/``nu`` against its labels.
"""
import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("geodyn_msgs")
from geodyn_msgs.msg import (DesiredState, FeedforwardJet, FlatReference, Linearization,  # noqa: E402
                             ReferenceJet, RotorSpeeds)
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from geodyn_ros.lie import quat_to_matrix  # noqa: E402
from geodyn_ros.ros.wire import jets  # noqa: E402
from geodyn_ros.ros.wire import typed as T  # noqa: E402
from geodyn_ros.ros.wire.conversions import InputError  # noqa: E402

MODEL = ("shoulder", "elbow", "wrist")
MSG_NAMES = ("wrist", "extra", "shoulder", "elbow")     # shuffled, with a joint the model does not have
STAMP = 1_700_000_123_456_789_012


def _wire(msg):
    """``msg`` after a trip through rclpy's serializer."""
    return deserialize_message(serialize_message(msg), type(msg))


def _pose(rng):
    q = rng.normal(size=4)
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(q / np.linalg.norm(q))
    C[:3, 3] = rng.normal(size=3)
    return C


def _outcome(f):
    try:
        return f()
    except InputError as exc:
        return exc


# ----------------------------------------------------------------------------- ReferenceJet / DesiredState
def _reference_pair(rng, K1, names=MSG_NAMES, cls=ReferenceJet, **kw):
    C, V, q = _pose(rng), rng.normal(size=(K1, 6)), rng.normal(size=(K1, len(names)))
    return (jets.make_reference_msg(STAMP, C, V, q, names),
            T.make_reference_jet(STAMP, C, V, q, names, cls=cls, **kw), (C, V, q))


@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("cls", [ReferenceJet, DesiredState])
def test_reference_decodes_as_the_layout(order, cls):
    rng = np.random.default_rng(order)
    topic = "reference" if cls is ReferenceJet else "desired/state"
    for extra in (0, 2):
        lay, typ, _ = _reference_pair(rng, order + 3 + extra, cls=cls)
        typ = _wire(typ)
        a = jets.ReferenceDecoder(MODEL, order, topic)
        b = T.TypedReferenceDecoder(MODEL, order, topic)
        outs = []
        for dec, m in ((a, _wire(lay)), (b, typ)):
            C, V, Q = np.zeros((4, 4)), np.zeros((order + 2, 6)), np.zeros((order + 3, 3))
            outs.append((dec.decode(m, C, V, Q), C, V, Q))
        assert outs[0][0] == outs[1][0] == STAMP
        for x, y in zip(outs[0][1:], outs[1][1:]):
            assert np.array_equal(x, y)
        assert b.representation == "spatial"
        full_a = jets.decode_reference_jet(lay, topic)
        full_b = T.decode_typed_reference(typ, topic)
        assert full_a[0] == full_b[0] and full_a[4] == full_b[4] == MSG_NAMES and full_b[5] == "spatial"
        for x, y in zip(full_a[1:4], full_b[1:4]):
            assert np.array_equal(x, y)
        assert T.decode_typed_reference(T.jet_fields(typ), topic)[0] == STAMP   # the fields namespace too


def _both_reference(lay, typ, order=1, topic="reference"):
    out = []
    for dec, m in ((jets.ReferenceDecoder(MODEL, order, topic), lay),
                   (T.TypedReferenceDecoder(MODEL, order, topic), typ)):
        bufs = (np.zeros((4, 4)), np.zeros((order + 2, 6)), np.zeros((order + 3, 3)))
        out.append(_outcome(lambda: dec.decode(m, *bufs)))
    return out


def test_reference_refusals_match_the_layout():
    rng = np.random.default_rng(5)
    same_text = []

    def check(lay, typ, same=True, order=1):
        a, b = _both_reference(lay, _wire(typ), order)
        assert isinstance(a, InputError) and isinstance(b, InputError), (a, b)
        assert str(b).startswith("reference: ") or str(b).startswith("reference ")
        if same:
            assert str(a) == str(b)
            same_text.append(str(b))

    lay, typ, _ = _reference_pair(rng, 3)
    check(lay, typ, order=1)                                  # 3 rows, order 1 needs 4
    for bad in (np.nan, np.inf):                              # NaN/Inf in a row used: refused; unused: fine
        C, V, q = _pose(rng), rng.normal(size=(5, 6)), rng.normal(size=(5, 4))
        V[1, 2] = bad
        check(jets.make_reference_msg(STAMP, C, V, q, MSG_NAMES), T.make_reference_jet(STAMP, C, V, q, MSG_NAMES))
        V[1, 2], V[4, 0], q[4, 1] = 0.0, bad, bad             # rows 4: beyond V^(0..2), q^(0..3)
        a, b = _both_reference(jets.make_reference_msg(STAMP, C, V, q, MSG_NAMES),
                               _wire(T.make_reference_jet(STAMP, C, V, q, MSG_NAMES)))
        assert a == b == STAMP
    for names in (("wrist", "shoulder"), ("wrist", "elbow", "shoulder", "wrist")):   # missing / repeated
        lay, typ, _ = _reference_pair(rng, 4, names)
        check(lay, typ, same=False)
    lay, typ, _ = _reference_pair(rng, 4)                     # a bad stamp
    lay.data[0], typ.header.stamp.sec = -1.0, -1
    check(lay, typ, same=False)
    lay, typ, _ = _reference_pair(rng, 4)                     # a non-unit quaternion
    lay.data[5:9] = __import__("array").array("d", [0.0, 0.0, 0.0, 2.0])
    o = typ.base_pose.orientation
    o.x, o.y, o.z, o.w = 0.0, 0.0, 0.0, 2.0
    check(lay, typ)
    assert len(same_text) == 4


def test_reference_typed_fields_are_checked():
    rng = np.random.default_rng(6)
    dec = T.TypedReferenceDecoder(MODEL, 0, frame_id="world", child_frame_id="base_link", representation="body")

    def refused(typ, match):
        with pytest.raises(InputError, match=match):
            dec.decode(_wire(typ), np.zeros((4, 4)), np.zeros((2, 6)), np.zeros((3, 3)))

    _, typ, _ = _reference_pair(rng, 3, representation="body")
    assert dec.decode(_wire(typ), np.zeros((4, 4)), np.zeros((2, 6)), np.zeros((3, 3))) == STAMP
    typ.header.frame_id, typ.child_frame_id = "", ""         # empty frames: accepted
    assert dec.decode(_wire(typ), np.zeros((4, 4)), np.zeros((2, 6)), np.zeros((3, 3))) == STAMP
    _, typ, _ = _reference_pair(rng, 3, representation="spatial")
    refused(typ, r"^reference: representation 'spatial', this node needs 'body' \(reference_representation\)$")
    typ.representation = ""
    refused(typ, "representation 'spatial', this node needs 'body'")        # empty means spatial
    typ.representation = "Body"
    refused(typ, r"^reference: unknown representation 'Body' \(one of spatial, body, hybrid, mixed")
    _, typ, _ = _reference_pair(rng, 3, frame_id="map", representation="body")
    refused(typ, r"^reference: header.frame_id 'map' is not the world frame 'world'$")
    _, typ, _ = _reference_pair(rng, 3, child_frame_id="r2/base_link", representation="body")
    refused(typ, r"^reference: child_frame_id 'r2/base_link' is not the base link 'base_link'$")
    _, typ, _ = _reference_pair(rng, 3, representation="body")
    typ.order = 3
    refused(typ, r"^reference: order 3 but base_twist has 3 entries \(4 expected\)$")
    typ.order = 2
    typ.q = typ.q[:-1]
    refused(typ, r"^reference: q has 11 values, order 2 and 4 joint_names need 12$")
    any_rep = T.TypedReferenceDecoder(MODEL, 0, representation=None)
    _, typ, _ = _reference_pair(rng, 3, representation="mixed")
    any_rep.decode(_wire(typ), np.zeros((4, 4)), np.zeros((2, 6)), np.zeros((3, 3)))
    assert any_rep.representation == "mixed"


def test_encoders_refuse_what_the_layout_encoders_refuse():
    C = np.eye(4)
    for args in ((np.zeros((3, 6)), np.zeros((2, 2)), ("a", "b")), (np.zeros((3, 6)), np.zeros((3, 1)), ("a", "b"))):
        with pytest.raises(ValueError) as ea:
            jets.make_reference_msg(0, C, *args)
        with pytest.raises(ValueError) as eb:
            T.make_reference_jet(0, C, *args)
        assert str(ea.value) == str(eb.value)
    with pytest.raises(ValueError, match="uint8 order"):
        T.make_reference_jet(0, C, np.zeros((257, 6)), np.zeros((257, 0)), ())
    with pytest.raises(ValueError, match="representation"):
        T.make_reference_jet(0, C, np.zeros((1, 6)), np.zeros((1, 0)), (), representation="world")
    bad = (np.zeros((3, 3)), np.zeros(2), np.zeros((3, 1)), ("a",))
    with pytest.raises(ValueError) as ea:
        jets.make_flat_reference_msg(0, *bad)
    with pytest.raises(ValueError) as eb:
        T.make_flat_reference(0, *bad)
    assert str(ea.value) == str(eb.value)
    with pytest.raises(ValueError, match="base_wrench, tau"):
        T.TypedFeedforwardPacker(("a",), 1).pack(0, np.zeros((2, 6)), np.zeros((2, 2)))


# ----------------------------------------------------------------------------- FlatReference
@pytest.mark.parametrize("order", [0, 2])
def test_flat_reference_decodes_as_the_layout(order):
    rng = np.random.default_rng(10 + order)
    K1 = order + 6
    com, yaw, q = rng.normal(size=(K1, 3)), rng.normal(size=K1), rng.normal(size=(K1, 4))
    lay = _wire(jets.make_flat_reference_msg(STAMP, com, yaw, q, MSG_NAMES))
    typ = _wire(T.make_flat_reference(STAMP, com, yaw, q, MSG_NAMES))
    outs = []
    for dec, m in ((jets.FlatReferenceDecoder(MODEL, order), lay), (T.TypedFlatReferenceDecoder(MODEL, order), typ)):
        c, y, Q = np.zeros((order + 5, 3)), np.zeros(order + 3), np.zeros((order + 3, 3))
        outs.append((dec.decode(m, c, y, Q), c, y, Q))
    assert outs[0][0] == outs[1][0] == STAMP
    for x, y in zip(outs[0][1:], outs[1][1:]):
        assert np.array_equal(x, y)
    dec = T.TypedFlatReferenceDecoder(MODEL, order + 2)           # too few rows: the same line
    with pytest.raises(InputError) as eb:
        dec.decode(typ, np.zeros((order + 7, 3)), np.zeros(order + 5), np.zeros((order + 5, 3)))
    with pytest.raises(InputError) as ea:
        jets.FlatReferenceDecoder(MODEL, order + 2).decode(lay, np.zeros((order + 7, 3)), np.zeros(order + 5),
                                                           np.zeros((order + 5, 3)))
    assert str(ea.value) == str(eb.value)
    typ.yaw = typ.yaw[:-1]
    with pytest.raises(InputError, match=r"^flat_reference: order \d+ but yaw has"):
        T.TypedFlatReferenceDecoder(MODEL, order).decode(typ, np.zeros((order + 5, 3)), np.zeros(order + 3),
                                                         np.zeros((order + 3, 3)))
    com[0, 0] = np.nan
    typ = _wire(T.make_flat_reference(STAMP, com, yaw, q, MSG_NAMES, frame_id="odom"))
    with pytest.raises(InputError, match="NaN or Inf in the derivative rows used"):
        T.TypedFlatReferenceDecoder(MODEL, order).decode(typ, np.zeros((order + 5, 3)), np.zeros(order + 3),
                                                         np.zeros((order + 3, 3)))
    with pytest.raises(InputError, match="header.frame_id 'odom' is not the world frame 'world'"):
        T.TypedFlatReferenceDecoder(MODEL, order, frame_id="world").decode(
            typ, np.zeros((order + 5, 3)), np.zeros(order + 3), np.zeros((order + 3, 3)))


# ----------------------------------------------------------------------------- FeedforwardJet
@pytest.mark.parametrize("order", [0, 3])
def test_feedforward_decodes_as_the_layout(order):
    rng = np.random.default_rng(20 + order)
    r1 = order + 1
    W, tau = rng.normal(size=(r1, 6)), rng.normal(size=(r1, 3))
    lay = _wire(jets.FeedforwardJetPacker(MODEL, order).pack(STAMP, W, tau))
    typ = _wire(T.TypedFeedforwardPacker(MODEL, order, representation="hybrid").pack(STAMP, W, tau))
    a = jets.decode_feedforward_jet(lay)
    b = T.decode_typed_feedforward(typ, representation="hybrid", joint_names=MODEL)
    assert a[0] == b[0] == STAMP and a[3] == b[3] == MODEL and b[4] == "hybrid"
    assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]) and np.array_equal(b[1], W)
    with pytest.raises(InputError, match=r"^feedforward/jet: representation 'hybrid', this node needs 'body' "
                                         r"\(geodyn_node's output_representation\)$"):
        T.decode_typed_feedforward(typ, representation="body")
    with pytest.raises(InputError, match=r"^feedforward/jet: joints \('shoulder', 'elbow', 'wrist'\) are not"):
        T.decode_typed_feedforward(typ, joint_names=MODEL[::-1])
    typ.tau[0] = float("inf")
    with pytest.raises(InputError, match="^feedforward/jet: NaN or Inf$"):
        T.decode_typed_feedforward(typ)
    typ.base_wrench = typ.base_wrench[:-1]
    with pytest.raises(InputError, match=rf"^feedforward/jet: order {order} but base_wrench has {order} entries"):
        T.decode_typed_feedforward(typ)


@pytest.mark.parametrize("order", [0, 2])
def test_flat_feedforward_decodes_as_the_layout(order):
    rng = np.random.default_rng(30 + order)
    r1 = order + 1
    Tt, tb, tau = rng.normal(size=r1), rng.normal(size=(r1, 3)), rng.normal(size=(r1, 3))
    lay = _wire(jets.FlatFeedforwardPacker(MODEL, order).pack(STAMP, Tt, tb, tau))
    packer = T.TypedFeedforwardPacker(MODEL, order)
    typ = _wire(packer.pack_flat(STAMP, Tt, tb, tau))
    assert typ.representation == "body" and typ.base_wrench[0].force.z == Tt[0]
    a = jets.decode_flat_feedforward_jet(lay)
    b = T.decode_typed_flat_feedforward(typ, joint_names=MODEL)
    assert a[0] == b[0] == STAMP and a[4] == b[4]
    for x, y in zip(a[1:4], b[1:4]):
        assert np.array_equal(x, y)
    assert packer.pack(STAMP, np.zeros((r1, 6)), tau).representation == "spatial"   # pack restores the packer's
    typ.base_wrench[0].force.y = 1e-300
    with pytest.raises(InputError, match="^feedforward/flat_jet: force has x or y components"):
        T.decode_typed_flat_feedforward(typ)
    typ.representation = "spatial"
    with pytest.raises(InputError, match="^feedforward/flat_jet: representation 'spatial', this node needs 'body'"):
        T.decode_typed_flat_feedforward(typ)


# ----------------------------------------------------------------------------- RotorSpeeds
def test_rotor_speeds_decode_as_the_layout():
    rng = np.random.default_rng(40)
    rotors = ("r0", "r1", "r2", "r3", "r4", "r5")
    om = rng.normal(size=(3, 6))
    a = jets.decode_rotor_speed_jet(_wire(jets.RotorSpeedPacker(rotors, 2).pack(STAMP, om)))
    typ = _wire(T.TypedRotorSpeedPacker(rotors, 2, frame_id="hex/base_link").pack(STAMP, om))
    b = T.decode_typed_rotor_speeds(typ, rotor_names=rotors, frame_id="hex/base_link")
    assert a[0] == b[0] == STAMP and a[2] == b[2] == rotors and np.array_equal(a[1], b[1])
    with pytest.raises(InputError, match="^feedforward/rotor_speeds: header.frame_id 'hex/base_link' is not the "
                                         "base link 'b'$"):
        T.decode_typed_rotor_speeds(typ, frame_id="b")
    with pytest.raises(InputError, match="rotors .* are not"):
        T.decode_typed_rotor_speeds(typ, rotor_names=rotors[::-1])
    typ.order = 1
    with pytest.raises(InputError, match="^feedforward/rotor_speeds: angular_velocities has 18 values, order 1 and 6 "
                                         "rotor_names need 12$"):
        T.decode_typed_rotor_speeds(typ)
    typ.order, typ.header.stamp.nanosec = 2, 1_000_000_000
    with pytest.raises(InputError, match="^feedforward/rotor_speeds \\(header.stamp\\): stamp"):
        T.decode_typed_rotor_speeds(typ)


# ----------------------------------------------------------------------------- Linearization
def test_linearization_decodes_as_the_layout():
    rng = np.random.default_rng(50)
    nx, nu = 8, 4
    A, B = rng.normal(size=(nx, nx)), rng.normal(size=(nx, nu))
    state, inputs = [f"s{i}" for i in range(nx)], [f"u{i}" for i in range(nu)]
    a = jets.decode_linearization(_wire(jets.LinearizationPacker(nx, nu).pack(STAMP, A, B)))
    typ = _wire(T.TypedLinearizationPacker(state, inputs, "body").pack(STAMP, A, B))
    b = T.decode_typed_linearization(typ, representation="body")
    assert a[0] == b[0] == STAMP and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    assert b[3:] == (tuple(state), tuple(inputs), "body")
    with pytest.raises(InputError, match=r"^linearization: representation 'body', this node needs 'spatial'"):
        T.decode_typed_linearization(typ, representation="spatial")
    typ.representation = "hybrid"                              # a jet representation, not a linearization's
    with pytest.raises(InputError, match="^linearization: unknown representation 'hybrid' \\(one of spatial, body;"):
        T.decode_typed_linearization(typ)
    typ.representation, typ.nu = "body", 5
    with pytest.raises(InputError, match="^linearization: 8 state_labels and 4 input_labels for nx = 8, nu = 5$"):
        T.decode_typed_linearization(typ)
    typ.nu, typ.b = 4, typ.b[:-1]
    with pytest.raises(InputError, match="^linearization: a has 64 values and b 31"):
        T.decode_typed_linearization(typ)
    with pytest.raises(ValueError, match="representation"):
        T.TypedLinearizationPacker(state, inputs, "mixed")


def test_jet_fields_refuses_other_types():
    with pytest.raises(TypeError, match="Float64MultiArray"):
        T.jet_fields(Float64MultiArray())
    for cls in (FeedforwardJet, FlatReference, RotorSpeeds, ReferenceJet, DesiredState):
        assert T.jet_fields(cls()).names == ()
    assert isinstance(Linearization(), Linearization)
