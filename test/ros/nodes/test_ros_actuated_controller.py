"""``geodyn_actuated_controller`` (isolated rclpy, see ros_harness).

The node is a thin adapter: with the same inputs (odometry, joint and motor states, reference,
body-frame feedforward jet from a real ``geodyn_node`` with ``output_representation: body``),
its outputs must equal :class:`ActuatedController.command` on the decoded values (1e-9: the
inputs cross the messages as float64, the odometry quaternion round trip costs ~1e-15). The rotor
speeds are an ``actuator_msgs/Actuators``. Bad parameters stop
the node at start-up naming the parameter.

The jet inputs are the typed ``geodyn_msgs`` (``ReferenceJet``, ``FeedforwardJet``) by default:
one of another base link, representation or joints is refused with its reason on the node's
diagnostics and the next good set gets the library's command; ``message_types: multiarray``
(deprecated, one warning) takes the ``Float64MultiArray`` layouts and gives the same command.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ros_harness import Harness, joint_states_msg, odometry_msg, refused, rosout, said_deprecated  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from sensor_msgs.msg import JointState
from nav_msgs.msg import Odometry
from std_msgs.msg import Float64MultiArray
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.lie import Ad_inv, exp_so3
from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.jets import FeedforwardJetPacker, make_reference_msg
from geodyn_ros.ros.wire.typed import TypedFeedforwardPacker, decode_typed_feedforward, make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.trajectories import table3_reference

REPO = Path(__file__).resolve().parents[3]
XACRO = str(REPO / "urdf" / "tilthex_manipulator.urdf.xacro")
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")


from actuator_msgs.msg import Actuators  # noqa: E402


def test_outputs_equal_the_library_law(h):
    cfg = load_actuation_config()
    locked = list(cfg.rotor_joints)
    # geodyn_node loads the URDF as given (the rotors would be joints): give both nodes the URDF
    # with the rotor joints locked (lock_joints_xml, what load_urdf(locked_joints=...) does)
    import xacro
    from geodyn_ros.model.urdf import lock_joints_xml
    text = lock_joints_xml(xacro.process_file(XACRO).toxml(), locked)
    h.make(GeodynNode, {"robot_description": text, "order": 2, "stale_timeout": 2.0,
                              "output_representation": "body"}, namespace="g")
    node = h.make(ActuatedControllerNode, {"robot_description": text, "feedforward_order": 2, "order": 2,
                                           "input_policy": "exact"}, namespace="g")   # sets of one stamp
    rot = h.record(Actuators, "g/cmd/rotor_speeds")
    mot = h.record(JointState, "g/cmd/motor_efforts")
    jet = h.record(FeedforwardJet, "g/feedforward/jet")
    for t, ty in (("reference", ReferenceJet), ("odom", Odometry), ("joint_states", JointState),
                  ("motor_states", JointState)):
        h.publisher(ty, f"g/{t}")
        h.wait_matched(f"g/{t}")
    ref = table3_reference(4.2, 3)
    stamp = node.get_clock().now().nanoseconds
    h.publisher(ReferenceJet, "g/reference").publish(
        make_reference_jet(stamp, ref.base_pose, ref.base_twist[:5], ref.q[:5], NAMES, child_frame_id=node.base_frame))
    # generous waits: with numba's cache cold the first call compiles a kernel (tens of s on 2 busy cores)
    assert h.spin_until(lambda: len(jet) > 0, 60.0)
    rng = np.random.default_rng(2)
    C = ref.base_pose.copy()
    C[:3, 3] += rng.normal(size=3) * 0.01
    C[:3, :3] = C[:3, :3] @ exp_so3(rng.normal(size=3) * 0.01)
    w_b, v_b = rng.normal(size=3) * 0.1, rng.normal(size=3) * 0.1
    q, qd = ref.q[0] + rng.normal(size=6) * 0.01, ref.q[1] + rng.normal(size=6) * 0.01
    th, thd = q + 0.01, qd - 0.02
    h.publisher(Odometry, "g/odom").publish(odometry_msg(stamp, C, w_b, v_b))
    h.publisher(JointState, "g/joint_states").publish(joint_states_msg(stamp, NAMES, q, qd))
    h.publisher(JointState, "g/motor_states").publish(joint_states_msg(stamp, NAMES, th, thd))
    assert h.spin_until(lambda: len(rot) > 0 and len(mot) > 0, 60.0)

    _, Wb, tau, _, rep = decode_typed_feedforward(jet[0])
    assert rep == "body" and jet[0].child_frame_id == node.base_frame
    model = node.model
    al = Allocation.from_frames(rotor_frames_from_model(model)[1], cfg.rotors)
    ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=2)
    Vb = np.concatenate([w_b, v_b])
    cmd = ctrl.command(C, Vb, q, qd, th, thd, ref.base_pose, Ad_inv(ref.base_pose) @ ref.base_twist[0],
                       ref.q, Wb, tau)
    got = np.array(rot[0].velocity)
    assert np.abs(got - cmd.omega).max() < 1e-9 * np.abs(cmd.omega).max()
    assert np.abs(np.array(mot[0].effort) - cmd.u).max() < 1e-9
    assert list(mot[0].name) == list(cfg.elastic.joints)
    # and the jet really is the body jet of geodyn_node (not spatial)
    res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
    assert np.abs(Wb - gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial",
                                         "body")).max() < 1e-9


@pytest.mark.parametrize("params,match", [
    ({"feedforward_order": 3}, "parameter 'feedforward_order'"),
    ({"feedforward_order": 2, "order": 1}, "parameter 'order'"),
    ({"kp_joint": -1.0}, "kp_joint"),
    ({"actuation_config": "/nonexistent.yaml"}, "parameter 'actuation_config'"),
])
def test_bad_parameters_fail_at_startup(params, match):
    hh = Harness()
    try:
        with pytest.raises(ConfigurationError, match=match):
            hh.make(ActuatedControllerNode, {"urdf_path": XACRO, **params})
    finally:
        hh.close()


def test_collinear_geometry_fails_at_startup(tmp_path):
    """A flat hexarotor (alpha = 0): the URDF expanded from a config with zero tilt is a collinear,
    under-actuated vehicle, which this fully actuated controller refuses, naming the one that flies
    it (the rank-deficient geometries that are not collinear: test_actuation_core.py)."""
    import xacro
    import yaml
    cfg = yaml.safe_load((REPO / "config" / "tilthex.yaml").read_text())
    cfg["tilthex"]["alpha_deg"] = [0.0] * 6
    p = tmp_path / "flat.yaml"
    p.write_text(yaml.safe_dump(cfg))
    text = xacro.process_file(XACRO, mappings={"actuation_config": str(p)}).toxml()
    hh = Harness()
    try:
        with pytest.raises(ConfigurationError, match=r"parameter 'actuation_config': allocation: a collinear "
                                                     r"\(under-actuated\) rotor set.*FlatnessController"):
            hh.make(ActuatedControllerNode, {"robot_description": text})
    finally:
        hh.close()


@pytest.mark.parametrize("key,value,match", [
    ("time_constant_up", 0.0, "time_constant_up"),
    ("time_constant_down", -0.01, "time_constant_down"),
])
def test_bad_actuation_config_fails_at_startup(tmp_path, key, value, match):
    import yaml
    cfg = yaml.safe_load((REPO / "config" / "tilthex.yaml").read_text())
    cfg["tilthex"][key] = value
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(cfg))
    hh = Harness()
    try:
        with pytest.raises(ConfigurationError, match=f"parameter 'actuation_config'.*{match}"):
            hh.make(ActuatedControllerNode, {"urdf_path": XACRO, "actuation_config": str(p)})
    finally:
        hh.close()


def test_stiffness_must_be_positive(tmp_path):
    import yaml
    cfg = yaml.safe_load((REPO / "config" / "tilthex.yaml").read_text())
    cfg["elastic_joints"]["stiffness"] = [50.0, 50.0, -1.0, 50.0, 50.0, 50.0]
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(cfg))
    hh = Harness()
    try:
        with pytest.raises(ConfigurationError, match="parameter 'actuation_config'.*stiffness"):
            hh.make(ActuatedControllerNode, {"urdf_path": XACRO, "actuation_config": str(p)})
    finally:
        hh.close()


def test_odometry_startup_window_is_discarded(h):
    """With odom_startup_discard = 0.05 s, odometry stamped < 50 ms after the first one is
    ignored (gz-sim's OdometryPublisher start-up), later odometry is used."""
    node = h.make(ActuatedControllerNode, {"urdf_path": XACRO, "use_feedforward": False, "elastic_joints": False,
                                           "odom_startup_discard": 0.05, "stale_timeout": 2.0,
                                           "input_policy": "exact"})
    rot = h.record(Actuators, "cmd/rotor_speeds")
    for t, ty in (("reference", ReferenceJet), ("odom", Odometry), ("joint_states", JointState)):
        h.publisher(ty, t)
        h.wait_matched(t)
    ref = table3_reference(0.0, 1)
    s0 = node.get_clock().now().nanoseconds
    for k, st in enumerate((s0, s0 + 20_000_000, s0 + 60_000_000)):
        h.publisher(ReferenceJet, "reference").publish(
            make_reference_jet(st, ref.base_pose, ref.base_twist[:3], ref.q[:3], NAMES))
        h.publisher(Odometry, "odom").publish(odometry_msg(st, ref.base_pose, np.zeros(3), np.zeros(3)))
        h.publisher(JointState, "joint_states").publish(joint_states_msg(st, NAMES, ref.q[0], ref.q[1]))
        if k < 2:
            h.spin_for(0.3)
            assert not rot, "odometry inside the start-up window was used"
    assert h.spin_until(lambda: len(rot) == 1, 60.0)    # generous: a loaded machine, a cold numba cache
    assert node.diag.counters["odom_discarded"] == 2


# ------------------------------------------------------------------------------- typed inputs
def _law_case():
    """A reference, a body feedforward jet (seeded: not geodyn_node's, any values serve the
    adapter check) and a perturbed state; the command :class:`ActuatedController` gives for them
    (the oracle: the library law the node adapts, on the exact float64 values)."""
    cfg = load_actuation_config()
    model = cfg.load_model(XACRO)
    ref = table3_reference(4.2, 3)
    rng = np.random.default_rng(11)
    Wb = rng.normal(size=(3, 6)) + np.array([0, 0, 0, 0, 0, 40.0])     # about the hover thrust, N
    tau = rng.normal(size=(3, 6))
    C = ref.base_pose.copy()
    C[:3, 3] += rng.normal(size=3) * 0.01
    w_b, v_b = rng.normal(size=3) * 0.1, rng.normal(size=3) * 0.1
    q, qd = ref.q[0] + rng.normal(size=6) * 0.01, ref.q[1] + rng.normal(size=6) * 0.01
    th, thd = q + 0.01, qd - 0.02
    al = Allocation.from_frames(rotor_frames_from_model(model)[1], cfg.rotors)
    ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=2)
    cmd = ctrl.command(C, np.concatenate([w_b, v_b]), q, qd, th, thd, ref.base_pose,
                       Ad_inv(ref.base_pose) @ ref.base_twist[0], ref.q, Wb, tau)
    return ref, Wb, tau, (C, w_b, v_b, q, qd, th, thd), cmd


def _state(h, stamp, state):
    C, w_b, v_b, q, qd, th, thd = state
    h.publisher(JointState, "motor_states").publish(joint_states_msg(stamp, NAMES, th, thd))
    h.publisher(Odometry, "odom").publish(odometry_msg(stamp, C, w_b, v_b))
    h.publisher(JointState, "joint_states").publish(joint_states_msg(stamp, NAMES, q, qd))


def _omega(m):
    return np.array(m.velocity)


@pytest.mark.parametrize("types", ["typed", "multiarray"])
def test_typed_jets_are_checked_and_a_good_set_gets_the_library_command(h, types):
    """Sets of one stamp (``input_policy: exact``): each bad typed input (another base link in
    ``child_frame_id``, another representation, other joint names; on the reference and on the
    feedforward jet) is refused with its reason on the node's diagnostics and gives no command;
    the good set after them gives :func:`_law_case`'s command (1e-9, as above). ``multiarray``:
    the deprecated layouts, one WARN, the same command."""
    logs = rosout(h, "geodyn_actuated_controller")
    node = h.make(ActuatedControllerNode, {"urdf_path": XACRO, "feedforward_order": 2, "order": 2,
                                           "input_policy": "exact", "message_types": types})
    typed = types == "typed"
    rot = h.record(Actuators, "cmd/rotor_speeds")
    mot = h.record(JointState, "cmd/motor_efforts")
    rtype, jtype = (ReferenceJet, FeedforwardJet) if typed else (Float64MultiArray, Float64MultiArray)
    for t, ty in (("reference", rtype), ("feedforward/jet", jtype), ("odom", Odometry), ("joint_states", JointState),
                  ("motor_states", JointState)):
        h.publisher(ty, t)
        h.wait_matched(t)
    ref, Wb, tau, state, cmd = _law_case()
    base = node.base_frame
    assert base == "base_link"

    def reference(stamp, **kw):
        if not typed:
            return make_reference_msg(stamp, ref.base_pose, ref.base_twist[:3], ref.q[:3], NAMES)
        return make_reference_jet(stamp, ref.base_pose, ref.base_twist[:3], ref.q[:3], kw.pop("names", NAMES),
                                  **{"child_frame_id": base, **kw})

    def jet(stamp, names=NAMES, **kw):
        if not typed:
            return FeedforwardJetPacker(NAMES, 2).pack(stamp, Wb, tau)
        return TypedFeedforwardPacker(names, 2, **{"child_frame_id": base, "representation": "body", **kw}).pack(
            stamp, Wb, tau)
    s0 = node.get_clock().now().nanoseconds
    bad = [] if not typed else [
        ("reference", reference(0, child_frame_id="robot2/base_link"),
         "reference: child_frame_id 'robot2/base_link' is not the base link 'base_link'"),
        ("reference", reference(0, representation="body"),
         "reference: representation 'body', this node needs 'spatial' (reference_representation)"),
        ("reference", reference(0, names=("J2", "J3", "J4", "J5", "J6", "wrist")), "reference joint_names"),
        ("feedforward/jet", jet(0, representation="spatial"),
         "feedforward/jet: representation 'spatial', this node needs 'body' (geodyn_node's output_representation)"),
        ("feedforward/jet", jet(0, child_frame_id="robot2/base_link"),
         "feedforward/jet: child_frame_id 'robot2/base_link' is not the base link 'base_link'"),
        ("feedforward/jet", jet(0, names=NAMES[::-1]), "feedforward/jet: joints ('J7', 'J6'"),
    ]
    for k, (topic, msg, words) in enumerate(bad, 1):
        st = s0 + k * 1_000_000
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(st, 10**9)
        h.publisher(rtype, "reference").publish(msg if topic == "reference" else reference(st))
        h.publisher(jtype, "feedforward/jet").publish(msg if topic == "feedforward/jet" else jet(st))
        _state(h, st, state)
        assert refused(h, node, words), (words, node.diag.last_problem)
    h.spin_for(0.2)
    assert not rot and not mot, "a set with a refused input was commanded"
    st = s0 + 100_000_000
    h.publisher(rtype, "reference").publish(reference(st))
    h.publisher(jtype, "feedforward/jet").publish(jet(st))
    _state(h, st, state)
    assert h.spin_until(lambda: rot and mot, 60.0)    # generous: a cold numba cache compiles first
    assert np.abs(_omega(rot[0]) - cmd.omega).max() < 1e-9 * np.abs(cmd.omega).max()
    assert np.abs(np.array(mot[0].effort) - cmd.u).max() < 1e-9
    assert len(rot) == 1
    if not typed:
        assert said_deprecated(h, logs)


def _hextilt_gazebo(tmp_path):
    """hextilt_flying_arm_5's Gazebo files (arm rigid) and its own vehicle file (arm series-elastic)."""
    from geodyn_ros.ros.loops.gazebo_vehicle import gazebo_parameters
    from geodyn_ros.vehicle.shipped import shipped_vehicle_files
    res = gazebo_parameters("", "hextilt_flying_arm_5", "figure8", "ff1", tmp_path)
    return res["model"], res["vehicle"], str(shipped_vehicle_files("hextilt_flying_arm_5")[1])


def test_joint_losses_parameter_gives_the_law_the_urdfs_losses(tmp_path):
    """joint_losses: true hands the URDF's <dynamics> (0.1 N m s/rad, 0.1 N m on each arm joint) to the
    law; false (default) none; a bad friction_velocity and lossy elastic joints at order 2 stop the
    node at start-up in one line naming the parameter."""
    model, rigid_vehicle, elastic_vehicle = _hextilt_gazebo(tmp_path)
    hh = Harness()
    try:
        base = {"urdf_path": model, "actuation_config": rigid_vehicle, "elastic_joints": False, "feedforward_order": 1,
                "order": 1}
        node = hh.make(ActuatedControllerNode, {**base, "joint_losses": True, "friction_velocity": 0.02})
        jl = node.ctrl.joint_losses
        assert jl is not None and jl.friction_velocity == 0.02
        np.testing.assert_array_equal(jl.damping, np.full(5, 0.1))
        np.testing.assert_array_equal(jl.friction, np.full(5, 0.1))
        assert hh.make(ActuatedControllerNode, base, namespace="off").ctrl.joint_losses is None
        with pytest.raises(ConfigurationError, match=r"^parameter 'friction_velocity': friction_velocity: expected a "
                                                     r"finite rate > 0"):
            hh.make(ActuatedControllerNode, {**base, "joint_losses": True, "friction_velocity": 0.0}, namespace="b1")
        with pytest.raises(ConfigurationError, match=r"^parameter 'joint_losses': the series-elastic joints "
                                                     r"flying_arm_5__j_base_link_link_1, .* have losses, and at order 2"):
            hh.make(ActuatedControllerNode, {"urdf_path": model, "actuation_config": elastic_vehicle,
                                             "feedforward_order": 2, "order": 2, "joint_losses": True},
                    namespace="b2")
    finally:
        hh.close()


def test_rigid_vehicle_joints_get_their_torques_with_elastic_joints_off(tmp_path):
    """A vehicle file whose arm joints are all rigid, flown with ``elastic_joints: false`` and
    ``per_joint_effort_topics`` (the Gazebo loop of hextilt_flying_arm_5, whose series-elastic joints
    gazebo_vehicle makes rigid): every arm joint's torque goes out on ``cmd/motor_efforts`` and on
    ``cmd/joint_effort/<joint>``, equal to the law's joint torque on the same inputs (1e-9 N m: float64
    on the wire). Before 2026-12-04 the node published no joint torque at all here (its arm stalled
    in gz-sim)."""
    import copy
    from geodyn_ros.ros.wire.typed import make_reference_jet as ref_jet
    from std_msgs.msg import Float64
    model_file, rigid_vehicle, _ = _hextilt_gazebo(tmp_path)
    hh = Harness()
    try:
        node = hh.make(ActuatedControllerNode, {"urdf_path": model_file, "actuation_config": rigid_vehicle,
                                                "elastic_joints": False, "per_joint_effort_topics": True,
                                                "feedforward_order": 1, "order": 1, "input_policy": "exact"})
        model, names = node.model, tuple(node.model.joint_names)
        assert len(names) == 5 and not node.cfg.elastic.joints
        mot = hh.record(JointState, "cmd/motor_efforts")
        per = {j: hh.record(Float64, f"cmd/joint_effort/{j}") for j in names}
        for t, ty in (("reference", ReferenceJet), ("feedforward/jet", FeedforwardJet), ("odom", Odometry),
                      ("joint_states", JointState)):
            hh.publisher(ty, t)
            hh.wait_matched(t)
        rng = np.random.default_rng(5)
        Cd = np.eye(4)
        Cd[:3, 3] = (0.0, 0.0, 1.0)
        Vd = np.zeros((3, 6))
        qd_rows = np.vstack([rng.normal(size=5) * 0.3, rng.normal(size=5) * 0.5, rng.normal(size=5),
                            rng.normal(size=5)])
        res = gd.inverse_dynamics(model, Cd, Vd, qd_rows, 1)
        Wb, tau = gd.convert_wrench(Cd, res.base_wrench, Vd, "spatial", "body"), res.tau   # geodyn_node's body jet
        C = Cd.copy()
        C[:3, 3] += rng.normal(size=3) * 0.01
        w_b, v_b = rng.normal(size=3) * 0.1, rng.normal(size=3) * 0.1
        q, qd = qd_rows[0] + rng.normal(size=5) * 0.05, qd_rows[1] + rng.normal(size=5) * 0.05
        ctrl = copy.deepcopy(node.ctrl)
        cmd = ctrl.command(C, np.concatenate([w_b, v_b]), q, qd, q[:0], qd[:0], Cd, Vd[0], qd_rows[:3], Wb, tau)
        assert np.abs(cmd.joint_torque).max() > 1e-3       # a torque to see, not zeros
        st = node.get_clock().now().nanoseconds
        hh.publisher(ReferenceJet, "reference").publish(ref_jet(st, Cd, Vd, qd_rows[:3], names,
                                                                child_frame_id=node.base_frame))
        hh.publisher(FeedforwardJet, "feedforward/jet").publish(
            TypedFeedforwardPacker(names, 1, child_frame_id=node.base_frame, representation="body").pack(st, Wb, tau))
        hh.publisher(Odometry, "odom").publish(odometry_msg(st, C, w_b, v_b, child=node.base_frame))
        hh.publisher(JointState, "joint_states").publish(joint_states_msg(st, names, q, qd))
        assert hh.spin_until(lambda: mot and all(per.values()), 60.0), (
            len(mot), {j: len(v) for j, v in per.items()}, node.diag.last_problem)
        assert list(mot[0].name) == list(names)
        assert np.abs(np.array(mot[0].effort) - cmd.joint_torque).max() < 1e-9
        for k, j in enumerate(names):
            assert abs(per[j][0].data - cmd.joint_torque[k]) < 1e-9, j
    finally:
        hh.close()
