"""``geodyn_node`` parameter ``reference_representation`` (isolated rclpy, see ros_harness).

Two nodes run side by side in one process, in namespaces: one reads a spatial reference (the
default), the other the *same physical reference* with its twist jet converted to another
representation by ``gd.convert_twist`` and ``reference_representation`` set accordingly. Their
published feedforward (``feedforward/jet``: ``W^(0..r)`` spatial and ``tau^(0..r)``;
``feedforward/wrench``: the order-0 body wrench) must agree to 1e-10 relative: the node
converts the jet back to spatial (Leibniz terms included) at the reference pose, so only
rounding separates the two. The converted jets differ from the spatial one by O(1) from row 0
on, so a node that ignored the parameter would fail by far more than the tolerance.

In measured mode the higher rows come from the reference, converted at the reference's own
pose, and the measured ``V^(0)`` then replaces row 0: both nodes get the same odometry (at a
pose different from the reference's) and must agree as well.

The typed ``ReferenceJet`` names its representation: a node refuses one that is not its
``reference_representation`` (empty counts as spatial) and answers the next good message. The
legacy case runs the same comparison on the deprecated ``Float64MultiArray`` layout, which carries
no representation (the parameter alone says what it is).
"""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import Harness, joint_states_msg, odometry_msg, read_feedforward  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import geodyn_ros as gd
from geodyn_ros.lie import exp_so3
from geodyn_ros.algorithms.representations import REPRESENTATIONS
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.geodyn_node import PARAMETERS, GeodynNode
from geodyn_ros.ros.wire.jets import make_reference_msg
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
ORDER = 3   # V^(0..4) used: the Leibniz terms of every representation matter from row 2 on
TOL = 1e-10


def _start(h, ns, **params):
    p = {"urdf_path": URDF, "order": ORDER, "stale_timeout": 2.0, "input_policy": "exact"}   # sets of one stamp
    p.update(params)
    node = h.make(GeodynNode, p, namespace=ns)
    legacy = p.get("message_types") == "multiarray"
    outs = {"jet": h.record(Float64MultiArray if legacy else FeedforwardJet, f"{ns}/feedforward/jet"),
            "wrench": h.record(WrenchStamped, f"{ns}/feedforward/wrench")}
    return node, outs


def _wrench_vec(m):
    w = m.wrench
    return np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])


def _assert_same_outputs(a, b, k):
    sa, Wa, ta, _, _ = read_feedforward(a["jet"][k])
    sb, Wb, tb, _, _ = read_feedforward(b["jet"][k])
    assert sa == sb
    assert Wa.shape == (ORDER + 1, 6) and ta.shape == (ORDER + 1, 6)
    scale = max(1.0, np.abs(Wa).max(), np.abs(ta).max())
    assert np.abs(Wb - Wa).max() <= TOL * scale, np.abs(Wb - Wa).max()
    assert np.abs(tb - ta).max() <= TOL * scale, np.abs(tb - ta).max()
    wa, wb = _wrench_vec(a["wrench"][k]), _wrench_vec(b["wrench"][k])
    assert np.abs(wb - wa).max() <= TOL * max(1.0, np.abs(wa).max())
    assert a["wrench"][k].header.frame_id == b["wrench"][k].header.frame_id == "base_link"
    return Wa, ta


def _reference(stamp, C, V, Q, representation, message_types):
    """The reference message of ``message_types``: a ``ReferenceJet`` naming ``representation``,
    or the deprecated layout (no representation field)."""
    if message_types == "multiarray":
        return make_reference_msg(stamp, C, V, Q, NAMES)
    return make_reference_jet(stamp, C, V, Q, NAMES, representation=representation)


@pytest.mark.parametrize("input_mode,representations,message_types", [
    ("reference", ("mixed", "body", "hybrid"), "typed"),
    ("measured", ("mixed",), "typed"),
    ("reference", ("mixed",), "multiarray"),
])
def test_same_physical_reference_gives_same_feedforward(h, input_mode, representations, message_types):
    mt = {"message_types": message_types}
    ref_type = Float64MultiArray if message_types == "multiarray" else ReferenceJet
    ref_node, ref_outs = _start(h, "spatial", input_mode=input_mode, **mt)
    others = {rep: _start(h, rep, input_mode=input_mode, reference_representation=rep, **mt)
              for rep in representations}
    for rep, (node, _) in others.items():
        assert node.reference_representation == rep
    assert ref_node.reference_representation == "spatial"
    topics = ["reference"] + (["odom", "joint_states"] if input_mode == "measured" else [])
    types = {"reference": ref_type, "odom": Odometry, "joint_states": JointState}
    for ns in ("spatial", *representations):
        for t in topics:
            h.publisher(types[t], f"{ns}/{t}")
            h.wait_matched(f"{ns}/{t}")

    rng = np.random.default_rng(7)
    for k, t in enumerate((1.3, 12.7)):
        ref = table3_reference(t, ORDER + 1)
        C, Vs, Q = ref.base_pose, ref.base_twist[:ORDER + 3], ref.q[:ORDER + 3]
        stamp = ref_node.get_clock().now().nanoseconds
        h.publisher(ref_type, "spatial/reference").publish(_reference(stamp, C, Vs, Q, "spatial", message_types))
        for rep in representations:
            Vx = gd.convert_twist(C, Vs, "spatial", rep)
            # the test means something: the jets differ, and read as spatial they would give
            # another wrench (rows 0..ORDER+1 are the ones the dynamics use)
            assert np.abs(Vx[:ORDER + 2] - Vs[:ORDER + 2]).max() > 1e-2
            h.publisher(ref_type, f"{rep}/reference").publish(_reference(stamp, C, Vx, Q, rep, message_types))
        if input_mode == "measured":
            # a measured state away from the reference's: pose, twist, q, qdot all differ
            Cm = C.copy()
            Cm[:3, 3] += rng.normal(size=3) * 0.05
            Cm[:3, :3] = Cm[:3, :3] @ exp_so3(rng.normal(size=3) * 0.1)
            w_b, v_b, q, qd = rng.normal(size=3), rng.normal(size=3), rng.normal(size=6), rng.normal(size=6)
            for ns in ("spatial", *representations):
                h.publisher(Odometry, f"{ns}/odom").publish(odometry_msg(stamp, Cm, w_b, v_b))
                h.publisher(JointState, f"{ns}/joint_states").publish(joint_states_msg(stamp, NAMES, q, qd))
        everyone = [ref_outs] + [o for _, o in others.values()]
        assert h.spin_until(lambda: all(len(o["jet"]) > k and len(o["wrench"]) > k for o in everyone))
        for rep, (_, outs) in others.items():
            W, tau = _assert_same_outputs(ref_outs, outs, k)
        if input_mode == "reference":
            # and the spatial node itself computes the dynamics of the reference
            want = gd.inverse_dynamics(ref_node.model, C, Vs, Q, ORDER)
            scale = max(1.0, np.abs(want.base_wrench).max())
            assert np.abs(W - want.base_wrench).max() <= TOL * scale
            assert np.abs(tau - want.tau).max() <= TOL * scale
            wrong = gd.inverse_dynamics(ref_node.model, C, gd.convert_twist(C, Vs, "spatial", "mixed"),
                                        Q, ORDER)
            assert np.abs(wrong.base_wrench - want.base_wrench).max() > 1e-3 * scale


def test_reference_in_another_representation_is_refused(h):
    """A ``ReferenceJet`` whose ``representation`` is not the node's ``reference_representation``
    is refused (a WARN naming both, no output: the node does not convert on the message's word);
    an empty field counts as spatial; the next good message is answered with the library's
    feedforward of the physical reference."""
    node, outs = _start(h, "mixed", reference_representation="mixed")
    diags = h.record(DiagnosticArray, "/diagnostics")
    pub = h.publisher(ReferenceJet, "mixed/reference")
    h.wait_matched("mixed/reference")
    ref = table3_reference(4.2, ORDER + 1)
    C, Vs, Q = ref.base_pose, ref.base_twist[:ORDER + 3], ref.q[:ORDER + 3]
    Vm = gd.convert_twist(C, Vs, "spatial", "mixed")
    problems = lambda: [s.message for a in diags for s in a.status if s.level == DiagnosticStatus.WARN]  # noqa: E731
    stamp = node.get_clock().now().nanoseconds
    pub.publish(make_reference_jet(stamp, C, Vs, Q, NAMES, representation="spatial"))
    want = "reference: representation 'spatial', this node needs 'mixed' (reference_representation)"
    assert h.spin_until(lambda: any(want in m for m in problems()), 5.0), problems()
    bad = make_reference_jet(stamp + 1, C, Vs, Q, NAMES)
    bad.representation = ""                         # empty: spatial, refused as well
    pub.publish(bad)
    assert h.spin_until(lambda: node.diag.counters["cycles_skipped"] >= 2 or len(outs["jet"]) > 0, 5.0)
    h.spin_for(0.2)
    assert outs["jet"] == [] and outs["wrench"] == []
    pub.publish(make_reference_jet(stamp + 2, C, Vm, Q, NAMES, representation="mixed"))
    assert h.spin_until(lambda: len(outs["jet"]) == 1, 5.0)
    st, W, tau, _, _ = read_feedforward(outs["jet"][0])
    expected = gd.inverse_dynamics(node.model, C, Vs, Q, ORDER)   # the physical reference, spatial
    scale = max(1.0, np.abs(expected.base_wrench).max(), np.abs(expected.tau).max())
    assert st == stamp + 2
    assert np.abs(W - expected.base_wrench).max() <= TOL * scale
    assert np.abs(tau - expected.tau).max() <= TOL * scale


def test_default_is_spatial():
    assert PARAMETERS["reference_representation"][0] == "spatial"
    assert set(REPRESENTATIONS) == {"spatial", "body", "hybrid", "mixed"}


@pytest.mark.parametrize("value", ["Mixed", "world", "", 3])
def test_bad_reference_representation_fails_at_startup(value):
    h = Harness()
    try:
        with pytest.raises(ConfigurationError, match="reference_representation"):
            h.make(GeodynNode, {"urdf_path": URDF, "reference_representation": value})
    finally:
        h.close()
