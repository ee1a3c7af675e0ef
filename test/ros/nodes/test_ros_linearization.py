"""``geodyn_node``'s optional ``~/linearization`` output (real rclpy nodes, isolated, see ros_harness).

The published ``A``, ``B`` are compared with ``gd.linearize`` evaluated here on the same state
(decoded from the reference / odometry independently of the node's parsers) and the same input
(the order-0 feedforward the node published on ``feedforward/jet``). Tolerance 1e-12 relative
to the largest entry: it is the same double-precision computation on inputs that agree to
rounding.

The node runs the default ``message_types: typed`` (``geodyn_msgs/Linearization`` read here field
by field: ``a``, ``b`` row-major, the labels, frames and representation it carries); one legacy case
checks the deprecated ``Float64MultiArray`` blocks.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from ros_harness import Harness, decode_reference, read_feedforward  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geodyn_msgs.msg import FeedforwardJet, Linearization, ReferenceJet
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

import geodyn_ros as gd
from geodyn_ros.lie import Ad, Ad_inv, matrix_to_quat, quat_to_matrix
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.wire.conversions import InputError
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.jets import LinearizationPacker, decode_linearization, make_reference_msg
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
NX, NU = 24, 12
TOL = 1e-12
LIN_TOPIC = "/geodyn_node/linearization"
LABELS_TOPIC = "/geodyn_node/linearization/labels"
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _legacy(p) -> bool:
    return p.get("message_types") == "multiarray"


def _start(h, **params):
    p = {"urdf_path": URDF, "order": 1, "stale_timeout": 0.5}
    p.update(params)
    node = h.make(GeodynNode, p)
    legacy = _legacy(p)
    outs = {
        "lin": h.record(Float64MultiArray if legacy else Linearization, LIN_TOPIC),
        "jet": h.record(Float64MultiArray if legacy else FeedforwardJet, "feedforward/jet"),
        "diag": h.record(DiagnosticArray, "/diagnostics"),
        "labels": [],
    }
    h.probe.create_subscription(String, LABELS_TOPIC, outs["labels"].append, LATCHED)
    h.publisher(Float64MultiArray if legacy else ReferenceJet, "reference")
    h.wait_matched("reference")
    return node, outs


def _now(node) -> int:
    return node.get_clock().now().nanoseconds


def _ref_msg(t, order, stamp, legacy=False):
    ref = table3_reference(t, order + 1)
    make = make_reference_msg if legacy else make_reference_jet
    return make(stamp, ref.base_pose, ref.base_twist[:order + 3], ref.q[:order + 3], NAMES)


def _read_linearization(msg):
    """``(stamp_ns, A, B)`` of a ``Linearization`` read field by field (row-major ``a``, ``b``), or
    of the deprecated layout (its decoder, tested in test_pack_decode_round_trip_and_malformed_messages)."""
    if isinstance(msg, Float64MultiArray):
        return decode_linearization(msg)
    st = msg.header.stamp
    return (st.sec * 10**9 + st.nanosec, np.array(msg.a).reshape(msg.nx, msg.nx),
            np.array(msg.b).reshape(msg.nx, msg.nu))


def _expected(model, C, V0, q, qd, W0, tau0, representation):
    """``gd.linearize`` on the state and the feedforward input, converted like the node's contract."""
    if representation == "body":
        V0, W0 = Ad_inv(C) @ V0, Ad(C).T @ W0
    return gd.linearize(model, C, V0[None], np.vstack([q, qd]), W0[None], tau0[None],
                        representation=representation)


def _close(got, want, tol=TOL):
    return np.abs(got - want).max() <= tol * max(1.0, np.abs(want).max())


def _diag_messages(outs):
    return [(s.level, s.message) for a in outs["diag"] for s in a.status]


# ---------------------------------------------------------------------- off by default
def test_off_by_default_publishes_no_linearization(h):
    node, outs = _start(h)
    assert node.publish_linearization is False
    h.publisher(ReferenceJet, "reference").publish(_ref_msg(3.0, 1, _now(node)))
    assert h.spin_until(lambda: len(outs["jet"]) == 1)
    h.spin_for(0.2)
    assert outs["lin"] == [] and outs["labels"] == []
    assert h.probe.count_publishers(LIN_TOPIC) == 0
    assert h.probe.count_publishers(LABELS_TOPIC) == 0


# ---------------------------------------------------------------------- on: values and layout
@pytest.mark.parametrize("representation,message_types", [("body", "typed"), ("spatial", "typed"),
                                                          ("body", "multiarray")])
def test_linearization_equals_gd_linearize_reference_mode(h, representation, message_types):
    legacy = message_types == "multiarray"
    node, outs = _start(h, publish_linearization=True, linearization_representation=representation,
                        message_types=message_types)
    assert h.probe.count_publishers(LIN_TOPIC) == 1
    pub = h.publisher(Float64MultiArray if legacy else ReferenceJet, "reference")
    for k, t in enumerate((0.0, 7.3)):
        stamp = _now(node) + k
        msg = _ref_msg(t, 1, stamp, legacy)
        pub.publish(msg)
        assert h.spin_until(lambda: len(outs["lin"]) > k and len(outs["jet"]) > k)
        st, A, B = _read_linearization(outs["lin"][k])
        assert st == stamp and A.shape == (NX, NX) and B.shape == (NX, NU)
        st_ff, W, tau, _, _ = read_feedforward(outs["jet"][k])
        assert st_ff == stamp
        C, V, Q = decode_reference(msg)
        want = _expected(node.model, C, V[0], Q[0], Q[1], W[0], tau[0], representation)
        assert _close(A, want.A) and _close(B, want.B)
        # the input is the feedforward, so the linearization point reproduces the reference
        # accelerations (forward dynamics of the inverse dynamics; looser: an M^-1 solve)
        acc = Ad_inv(C) @ V[1] if representation == "body" else V[1]
        assert _close(want.base_accel, acc, 1e-9) and _close(want.qdd, Q[2], 1e-9)
    if legacy:   # the layout is self-describing
        lay = outs["lin"][0].layout
        assert [(d.label, d.size, d.stride) for d in lay.dim] == [
            (f"A:rows={NX};cols={NX}", NX * NX, NX * NX), (f"B:rows={NX};cols={NU}", NX * NU, NX * NU)]
        assert lay.data_offset == 2 and len(outs["lin"][0].data) == 2 + NX * NX + NX * NU
    else:        # the typed message carries its labels, frames and representation
        m = outs["lin"][0]
        assert (m.nx, m.nu, len(m.a), len(m.b)) == (NX, NU, NX * NX, NX * NU)
        assert list(m.state_labels) == list(gd.state_labels(node.model))
        assert list(m.input_labels) == list(gd.input_labels(node.model))
        assert (m.representation, m.header.frame_id, m.child_frame_id) == (representation, "world", "base_link")
    # the latched labels (the probe subscribed after the node published them once)
    assert h.spin_until(lambda: outs["labels"])
    labels = json.loads(outs["labels"][0].data)
    assert labels["representation"] == representation
    assert labels["state"] == list(gd.state_labels(node.model))
    assert labels["input"] == list(gd.input_labels(node.model))
    assert (labels["nx"], labels["nu"], labels["data_offset"]) == (NX, NU, 2)
    assert "row-major" in labels["layout"] and labels["model"] == node.model.name


def _odom(stamp, C, w_b, v_b):
    m = Odometry()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(stamp, 10**9)
    m.header.frame_id, m.child_frame_id = "world", "base_link"
    m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z = (float(v) for v in C[:3, 3])
    o = m.pose.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quat(C[:3, :3], "xyzw"))
    m.twist.twist.angular.x, m.twist.twist.angular.y, m.twist.twist.angular.z = (float(v) for v in w_b)
    m.twist.twist.linear.x, m.twist.twist.linear.y, m.twist.twist.linear.z = (float(v) for v in v_b)
    return m


def test_linearization_measured_mode_uses_measured_state(h):
    node, outs = _start(h, publish_linearization=True, input_mode="measured", input_policy="exact")
    assert node.lin_representation == "body"
    rng = np.random.default_rng(7)
    C = table3_reference(4.0, 0).base_pose.copy()
    C[:3, 3] += rng.normal(size=3) * 0.05
    w_b, v_b, q, qd = (rng.normal(size=k) for k in (3, 3, 6, 6))
    h.publisher(Odometry, "odom")
    h.publisher(JointState, "joint_states")
    h.wait_matched("odom")
    h.wait_matched("joint_states")
    s0 = _now(node)
    h.publisher(ReferenceJet, "reference").publish(_ref_msg(11.0, 1, s0))
    h.publisher(Odometry, "odom").publish(_odom(s0 + 1000, C, w_b, v_b))
    js = JointState()
    js.header.stamp.sec, js.header.stamp.nanosec = divmod(s0 + 2000, 10**9)
    js.name, js.position, js.velocity = list(NAMES), [float(v) for v in q], [float(v) for v in qd]
    h.publisher(JointState, "joint_states").publish(js)
    assert h.spin_until(lambda: outs["lin"] and outs["jet"])
    st, A, B = _read_linearization(outs["lin"][0])
    assert st == s0 + 2000
    _, W, tau, _, _ = read_feedforward(outs["jet"][0])
    Cm = np.eye(4)  # the pose as the odometry carries it (quaternion round trip)
    Cm[:3, 3] = C[:3, 3]
    Cm[:3, :3] = quat_to_matrix(matrix_to_quat(C[:3, :3], "xyzw"), "xyzw")
    V0 = Ad(Cm) @ np.r_[w_b, v_b]  # REP 105 body twist -> spatial
    want = _expected(node.model, Cm, V0, q, qd, W[0], tau[0], "body")
    assert _close(A, want.A) and _close(B, want.B)


# ---------------------------------------------------------------------- failures
@pytest.mark.parametrize("failure", ["raises", "nan"])
def test_failed_linearization_is_reported_and_not_published(h, monkeypatch, failure):
    node, outs = _start(h, publish_linearization=True)
    real = gd.linearize

    def broken(*args, **kwargs):
        if failure == "raises":
            raise ValueError("base_pose: not rigid (injected)")
        lin = real(*args, **kwargs)
        lin.A[3, 5] = np.nan
        return lin

    monkeypatch.setattr(gd, "linearize", broken)
    pub = h.publisher(ReferenceJet, "reference")
    pub.publish(_ref_msg(2.0, 1, _now(node)))
    assert h.spin_until(lambda: any("linearization" in m for _, m in _diag_messages(outs)), 3.0)
    h.spin_for(0.1)
    assert len(outs["jet"]) == 1 and outs["lin"] == []  # feedforward still out, no linearization
    assert all(level == DiagnosticStatus.WARN for level, m in _diag_messages(outs) if "linearization" in m)
    assert node.diag.counters["cycles_skipped"] == 1
    # recovery: the next good cycle publishes both and clears the warning
    monkeypatch.setattr(gd, "linearize", real)
    pub.publish(_ref_msg(2.1, 1, _now(node)))
    assert h.spin_until(lambda: len(outs["lin"]) == 1 and len(outs["jet"]) == 2)
    assert h.spin_until(lambda: _diag_messages(outs)[-1] == (DiagnosticStatus.OK, "publishing"))


@pytest.mark.parametrize("params,keyword", [
    ({"linearization_representation": "world"}, "linearization_representation"),
    ({"linearization_representation": "Body"}, "linearization_representation"),
    ({"publish_linearization": "yes"}, "publish_linearization"),
])
def test_bad_linearization_parameters_fail_at_startup(params, keyword):
    h = Harness()
    try:
        with pytest.raises(ConfigurationError, match=keyword):
            h.make(GeodynNode, {"urdf_path": URDF, **params})
    finally:
        h.close()


# ---------------------------------------------------------------------- pack / unpack
def test_pack_decode_round_trip_and_malformed_messages():
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(NX, NX)), rng.normal(size=(NX, NU))
    stamp = 1_700_000_000_123_456_789
    msg = LinearizationPacker(NX, NU).pack(stamp, A, B)
    st, A2, B2 = decode_linearization(msg)
    assert st == stamp and np.array_equal(A2, A) and np.array_equal(B2, B)
    d = np.asarray(msg.data)  # the documented index rule
    assert d[2 + 5 * NX + 7] == A[5, 7] and d[2 + NX * NX + 5 * NU + 7] == B[5, 7]

    def bad(mutate, keyword):
        m = LinearizationPacker(NX, NU).pack(stamp, A, B)
        mutate(m)
        with pytest.raises(InputError, match=keyword):
            decode_linearization(m)

    bad(lambda m: setattr(m, "data", list(m.data)[:-1]), "data has")
    bad(lambda m: setattr(m.layout, "data_offset", 0), "data_offset")
    bad(lambda m: setattr(m.layout.dim[0], "label", "A"), "label")
    bad(lambda m: setattr(m.layout.dim[1], "size", 5), "size")
    bad(lambda m: setattr(m.layout, "dim", m.layout.dim[:1]), "2 dims")
