"""The Gazebo files of the under-actuated (collinear hexarotor) aerial manipulator, checked without
Gazebo: urdf/hexarotor_manipulator_gazebo.xacro, the shared plugin macros
(urdf/multirotor_gazebo_plugins.xacro), config/gz_bridge.yaml (shared with the TiltHex).

Facts about gz-sim are from its gz-sim8 branch (Harmonic) at b81e26dab, read, not copied (the element
lists are ``PLUGIN_ELEMENTS`` in test_launch_files.py, recorded there with their files):

* MulticopterMotorModel (src/systems/multicopter_motor_model/MulticopterMotorModel.cc,
  UpdateForcesAndMoments, motorType velocity): thrust ``c_f w^2`` (w = the joint speed times
  rotorVelocitySlowdownSim) along the rotor link's z, through Link::AddWorldForce (at the link's centre
  of mass); drag torque ``(0, 0, -turningDirection * thrust * momentConstant)`` in the rotor link's
  axes, applied to the parent link; turningDirection ``ccw`` = +1, ``cw`` = -1; the command
  ``velocity[actuator_number]`` is limited to maxRotVelocity; it logs "Aliasing on motor" when
  ``joint speed / (2 pi) > 1 / (2 dt)``; it listens on ``<robotNamespace>/<commandSubTopic>``.
* OdometryPublisher publishes on ``/model/<model>/odometry``, JointStatePublisher on
  ``/world/<world>/model/<model>/joint_state``, ApplyJointForce listens on
  ``/model/<model>/joint/<joint_name>/cmd_force`` (when no topic element is given).
* examples/worlds/empty.sdf: world name ``empty``, max_step_size 0.001.

What none of this checks: anything that needs a running gz sim (the URDF -> SDF conversion, the
physics, the flight itself).
"""
from __future__ import annotations

import math
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.trajectories import figure_eight_reference
from launch_stubs import PLUGIN_ELEMENTS, install_stub_launch

REPO = Path(__file__).resolve().parents[3]
HEX_GZ = REPO / "urdf" / "hexarotor_manipulator_gazebo.xacro"
HEX = REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"
HEX_CFG = REPO / "config" / "hexarotor.yaml"
TILT_GZ = REPO / "urdf" / "tilthex_manipulator_gazebo.xacro"
TILT_CFG = REPO / "config" / "tilthex.yaml"
GZ_BRIDGE = REPO / "config" / "gz_bridge.yaml"
MODEL_NAME = "aerial_manipulator"   # ros_gz_sim create -name (both Gazebo launch files)
WORLD_NAME = "empty"                # gz-sim's empty.sdf
GZ_STEP = 0.001                     # its max_step_size [s]
MOTOR = "gz-sim-multicopter-motor-model-system"
FORCE = "gz-sim-apply-joint-force-system"
# the two Gazebo vehicles: (xacro, actuation YAML, rotor section)
VEHICLES = {"hexarotor": (HEX_GZ, HEX_CFG, "multirotor"), "tilthex": (TILT_GZ, TILT_CFG, "tilthex")}


@pytest.fixture
def stub_launch(monkeypatch):
    """The stub launch modules of test_launch_files, installed for one test."""
    return install_stub_launch(monkeypatch)


def _expand(path, **mappings):
    xacro = pytest.importorskip("xacro")
    return xacro.process_file(str(path), mappings=mappings or None).toxml()


def _bridge():
    return {e["ros_topic_name"]: e for e in yaml.safe_load(GZ_BRIDGE.read_text())}


def _plugins(root, filename):
    return [p for p in root.iter("plugin") if p.get("filename") == filename]


def _rotor_joints(cfg):
    return list(cfg.rotor_joints)


# ---------------------------------------------------------------------------------------
# The xacro
# ---------------------------------------------------------------------------------------
def test_hexarotor_gazebo_xacro_plugins_match_gz_sim8_and_config():
    root = ET.fromstring(_expand(HEX_GZ))
    assert root.get("name") == MODEL_NAME
    raw = yaml.safe_load(HEX_CFG.read_text())["multirotor"]
    cfg = load_actuation_config(HEX_CFG)
    plugins = list(root.iter("plugin"))
    counts = {}
    for p in plugins:
        name, elements = PLUGIN_ELEMENTS[p.get("filename")]   # KeyError: a system not checked against gz-sim
        assert p.get("name") == name
        unknown = {c.tag for c in p} - elements
        assert not unknown, f"{p.get('filename')}: elements gz-sim 8 does not read: {sorted(unknown)}"
        counts[p.get("filename")] = counts.get(p.get("filename"), 0) + 1
    assert counts == {"gz-sim-odometry-publisher-system": 1, "gz-sim-joint-state-publisher-system": 1,
                      FORCE: 6, MOTOR: 6, "gz-sim-detachable-joint-system": 1, "gz-sim-triggered-publisher-system": 1}
    odom = _plugins(root, "gz-sim-odometry-publisher-system")[0]
    assert [odom.findtext(k) for k in ("odom_frame", "robot_base_frame", "dimensions", "odom_publish_frequency")] \
        == ["world", "base_link", "3", "1000"]

    joints = {j.get("name"): j for j in root.findall("joint")}
    links = {lk.get("name") for lk in root.findall("link")}
    motors = sorted(_plugins(root, MOTOR), key=lambda p: int(p.findtext("actuator_number")))
    assert [int(p.findtext("actuator_number")) for p in motors] == list(range(6))
    for k, p in enumerate(motors):
        # velocity[k] drives the controller's rotor k (its column k of the allocation)
        assert p.findtext("jointName") == cfg.rotor_joints[k] and p.findtext("linkName") == cfg.rotor_links[k]
        joint = joints[p.findtext("jointName")]
        assert joint.get("type") == "continuous"
        assert joint.find("child").get("link") == p.findtext("linkName") in links
        assert p.findtext("turningDirection") == cfg.rotors.turning_direction[k]
        assert p.findtext("motorType") == "velocity"
        # the constants are the YAML's, exactly (xacro writes repr(float): tolerance 0)
        for tag, key in (("motorConstant", "motor_constant"), ("momentConstant", "moment_constant"),
                         ("timeConstantUp", "time_constant_up"), ("timeConstantDown", "time_constant_down"),
                         ("maxRotVelocity", "max_rot_velocity"), ("rotorDragCoefficient", "rotor_drag_coefficient"),
                         ("rollingMomentCoefficient", "rolling_moment_coefficient"),
                         ("rotorVelocitySlowdownSim", "rotor_velocity_slowdown_sim")):
            assert float(p.findtext(tag)) == float(raw[key]), tag
        # ... and the controller's (load_actuation_config of the same file)
        assert float(p.findtext("motorConstant")) == cfg.rotors.motor_constant
        assert float(p.findtext("momentConstant")) == cfg.rotors.moment_constant
        assert float(p.findtext("maxRotVelocity")) == cfg.rotors.max_rot_velocity
    # the arm joints: one torque input each, the joints the controller commands (rotors locked)
    forced = [p.findtext("joint_name") for p in _plugins(root, FORCE)]
    model = gd.load_urdf(_expand(HEX_GZ), locked_joints=_rotor_joints(cfg))
    assert forced == list(model.joint_names) == ["J2", "J3", "J4", "J5", "J6", "J7"]
    assert all(joints[j].get("type") == "revolute" for j in forced)


def test_hexarotor_gazebo_xacro_follows_the_actuation_config_argument(tmp_path):
    """actuation_config:=<yaml> (the launch file passes its `actuation` argument) changes the plugin
    constants and the rotor geometry together."""
    doc = yaml.safe_load(HEX_CFG.read_text())
    doc["multirotor"]["motor_constant"] = 2.5e-05
    doc["multirotor"]["arm_length"] = 0.3
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(doc))
    root = ET.fromstring(_expand(HEX_GZ, actuation_config=str(mine)))
    assert {float(p.findtext("motorConstant")) for p in _plugins(root, MOTOR)} == {2.5e-05}
    origin = next(j for j in root.findall("joint") if j.get("name") == "rotor_1_arm_joint").find("origin")
    assert abs(math.hypot(*map(float, origin.get("xyz").split()[:2])) - 0.3) < 1e-12


def test_hexarotor_gazebo_xacro_is_the_plain_model_plus_gazebo_tags():
    """Links and joints of the gz xacro are those of hexarotor_manipulator.urdf.xacro (same XML), so
    the rigid-body model with the rotor joints locked is the controller's / MuJoCo's model."""
    gz, plain = ET.fromstring(_expand(HEX_GZ)), ET.fromstring(_expand(HEX))
    body = [ET.tostring(e) for e in gz if e.tag != "gazebo"]
    assert body == [ET.tostring(e) for e in plain]
    assert [e.tag for e in gz if e.tag == "gazebo"] and all(e.tag != "gazebo" for e in plain)
    locked = _rotor_joints(load_actuation_config(HEX_CFG))
    a = gd.load_urdf(_expand(HEX_GZ), locked_joints=locked)
    b = gd.load_urdf(HEX, locked_joints=locked)
    assert a.joint_names == b.joint_names and a.base_link == b.base_link == "base_link"
    assert abs(a.total_mass - b.total_mass) < 1e-12 and abs(a.total_mass - 4.03) < 1e-9   # 4.0 kg + 6 x 5 g
    rng = np.random.default_rng(3)
    C = np.eye(4)
    C[:3, 3] = rng.normal(size=3)
    q = rng.uniform(-1, 1, a.n_joints)
    # the same inertia everywhere, to rounding (1e-12 relative to the largest entry)
    Ma, Mb = gd.mass_matrix(a, C, q), gd.mass_matrix(b, C, q)
    assert np.max(np.abs(Ma - Mb)) <= 1e-12 * np.max(np.abs(Mb))


# ---------------------------------------------------------------------------------------
# What the gz plugins apply vs what the controller inverts
# ---------------------------------------------------------------------------------------
def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx   # URDF: fixed-axis roll, pitch, yaw


def _link_poses(root):
    """Pose (R, p) in base_link of every link at zero joint angles, from the URDF XML alone."""
    parent = {}
    for j in root.findall("joint"):
        o = j.find("origin")
        xyz = np.array([float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()])
        rpy = [float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
        parent[j.find("child").get("link")] = (j.find("parent").get("link"), _rpy(*rpy), xyz)

    def pose(link):
        if link == "base_link":
            return np.eye(3), np.zeros(3)
        up, R_j, p_j = parent[link]
        R_up, p_up = pose(up)
        return R_up @ R_j, p_up + R_up @ p_j
    return {lk.get("name"): pose(lk.get("name")) for lk in root.findall("link")}


@pytest.mark.parametrize("vehicle", sorted(VEHICLES))
def test_gz_rotor_wrench_equals_the_controller_allocation(vehicle):
    """Column k of the controller's allocation A (W_b = A w^2, moment first, base axes about the
    base origin) equals the wrench gz-sim 8's MulticopterMotorModel k applies at unit w^2 (formula in
    the module docstring), computed from the expanded XML and the plugin elements only. To 1e-12
    relative to A's largest entry (rounding of the rotor frames)."""
    xacro_path, cfg_path, _ = VEHICLES[vehicle]
    root = ET.fromstring(_expand(xacro_path))
    poses = _link_poses(root)
    inertial = {lk.get("name"): lk.find("inertial") for lk in root.findall("link")}
    cols = {}
    for p in _plugins(root, MOTOR):
        link = p.findtext("linkName")
        R, pos = poses[link]
        com_local = np.array([float(v) for v in inertial[link].find("origin").get("xyz").split()])
        thrust = float(p.findtext("motorConstant"))                     # c_f * 1
        direction = {"ccw": 1.0, "cw": -1.0}[p.findtext("turningDirection")]
        f = R @ np.array([0.0, 0.0, thrust])                            # AddWorldForce at the link's CoM
        n = R @ np.array([0.0, 0.0, -direction * thrust * float(p.findtext("momentConstant"))])
        n = n + np.cross(pos + R @ com_local, f)                       # moment about the base origin
        cols[int(p.findtext("actuator_number"))] = np.concatenate([n, f])
    A_gz = np.column_stack([cols[k] for k in range(len(cols))])
    cfg = load_actuation_config(cfg_path)
    model = gd.load_urdf(_expand(xacro_path), locked_joints=_rotor_joints(cfg))
    _, frames = rotor_frames_from_model(model, cfg.rotor_links)
    al = Allocation.from_frames(frames, cfg.rotors)
    assert A_gz.shape == al.A.shape == (6, 6)
    assert np.max(np.abs(A_gz - al.A)) <= 1e-12 * np.max(np.abs(al.A))
    assert al.collinear == (vehicle == "hexarotor")


def test_gz_rotor_speeds_do_not_alias_at_1ms():
    """gz-sim logs 'Aliasing on motor' when the rotor joint turns faster than half a turn per step;
    at maxRotVelocity / rotorVelocitySlowdownSim and empty.sdf's 1 ms step it must not (both vehicles)."""
    for xacro_path, _, _ in VEHICLES.values():
        for p in _plugins(ET.fromstring(_expand(xacro_path)), MOTOR):
            joint_speed = float(p.findtext("maxRotVelocity")) / float(p.findtext("rotorVelocitySlowdownSim"))
            assert joint_speed / (2 * math.pi) < 1 / (2 * GZ_STEP), (xacro_path.name, joint_speed)


def test_figure_eight_feedforward_within_the_gz_clamps():
    """The figure eight's feedforward (flat map, speed 1) stays inside what Gazebo clamps: the arm
    torques below half the URDF effort limit (ApplyJointForce's joints clamp at it; the feedback adds
    on top; peak 0.65 N m vs 10 N m) and the rotor speeds below maxRotVelocity (the plugin limits the
    command; peak ~824 rad/s vs 1000). Sampled every 0.05 s over 840 s, the common period of every
    component (CoM 8 s, yaw 12 s, joints 1.5..4 s)."""
    root = ET.fromstring(_expand(HEX_GZ))
    cfg = load_actuation_config(HEX_CFG)
    model = gd.load_urdf(_expand(HEX_GZ), locked_joints=_rotor_joints(cfg))
    refs = [figure_eight_reference(t, 0) for t in np.arange(0.0, 840.0, 0.05)]
    res = gd.flat_inverse_dynamics(model, np.stack([r.com for r in refs]), np.stack([r.yaw for r in refs]),
                                   np.stack([r.q for r in refs]), order=0)
    joints = {j.get("name"): j for j in root.findall("joint")}
    limits = np.array([float(joints[j].find("limit").get("effort")) for j in model.joint_names])
    peak = np.max(np.abs(res.tau[:, 0, :]), axis=0)
    assert np.all(peak < 0.5 * limits), (peak, limits)
    _, frames = rotor_frames_from_model(model, cfg.rotor_links)
    u = Allocation.from_frames(frames, cfg.rotors).allocate_thrust_torque(res.thrust[:, 0], res.body_torque[:, 0])
    assert np.all(u > 0.0)
    max_rot = {float(p.findtext("maxRotVelocity")) for p in _plugins(root, MOTOR)}
    assert len(max_rot) == 1 and np.sqrt(u.max()) < max_rot.pop()


def test_ff2_commands_as_ff1_on_rigid_joints():
    """The launch file's claim: with elastic_joints false (Gazebo's rigid joints) level ff2 commands
    exactly what ff1 does (bitwise), while ff0 differs (so the comparison can tell levels apart)."""
    cfg = load_actuation_config(HEX_CFG)
    model = gd.load_urdf(_expand(HEX_GZ), locked_joints=_rotor_joints(cfg))
    _, frames = rotor_frames_from_model(model, cfg.rotor_links)
    al = Allocation.from_frames(frames, cfg.rotors)
    ref = figure_eight_reference(1.3, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, order=2)
    rng = np.random.default_rng(7)
    C = flat.base_pose.copy()
    C[:3, 3] += rng.normal(scale=0.05, size=3)
    Vb = rng.normal(scale=0.1, size=6)
    q, qd = ref.q[0] + rng.normal(scale=0.05, size=6), ref.q[1] + rng.normal(scale=0.1, size=6)
    out = {}
    for level in ("ff0", "ff1", "ff2"):
        ctrl = FlatnessController(model, al, cfg.rotors, None, FlatnessGains(), level)
        out[level] = ctrl.command(C, Vb, q, qd, np.zeros(0), np.zeros(0), ref.com, ref.yaw, ref.q, flat)
    for field in ("omega", "u", "torque", "omega_raw", "u_raw"):
        assert np.array_equal(getattr(out["ff1"], field), getattr(out["ff2"], field)), field
    assert out["ff1"].thrust == out["ff2"].thrust
    assert np.max(np.abs(out["ff1"].omega - out["ff0"].omega)) > 1e-3


# ---------------------------------------------------------------------------------------
# The bridge, shared by both vehicles
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("vehicle", sorted(VEHICLES))
def test_gz_bridge_serves_the_vehicle(vehicle):
    """config/gz_bridge.yaml is right for both Gazebo vehicles: the motor command topic is the
    plugins' <robotNamespace>/<commandSubTopic>, the odometry and joint-state topics are the ones the
    publishers use for the model and world names of the launch files, and there is one Float64 effort
    topic per joint the controller commands, on the topic its ApplyJointForce listens to."""
    xacro_path, cfg_path, _ = VEHICLES[vehicle]
    root = ET.fromstring(_expand(xacro_path))
    bridge = _bridge()
    motor_topics = {"/" + p.findtext("robotNamespace") + "/" + p.findtext("commandSubTopic")
                    for p in _plugins(root, MOTOR)}
    assert motor_topics == {bridge["cmd/rotor_speeds"]["gz_topic_name"]}
    e = bridge["cmd/rotor_speeds"]
    assert (e["ros_type_name"], e["gz_type_name"], e["direction"]) == (
        "actuator_msgs/msg/Actuators", "gz.msgs.Actuators", "ROS_TO_GZ")
    odom = _plugins(root, "gz-sim-odometry-publisher-system")[0]
    assert odom.find("odom_topic") is None and bridge["odom"]["gz_topic_name"] == f"/model/{MODEL_NAME}/odometry"
    jsp = _plugins(root, "gz-sim-joint-state-publisher-system")[0]
    assert jsp.find("topic") is None
    assert bridge["joint_states"]["gz_topic_name"] == f"/world/{WORLD_NAME}/model/{MODEL_NAME}/joint_state"
    cfg = load_actuation_config(cfg_path)
    commanded = gd.load_urdf(_expand(xacro_path), locked_joints=_rotor_joints(cfg)).joint_names
    efforts = {t.rsplit("/", 1)[1]: e for t, e in bridge.items() if t.startswith("cmd/joint_effort/")}
    assert sorted(efforts) == sorted(commanded)
    forced = {p.findtext("joint_name") for p in _plugins(root, FORCE)}
    for joint, e in efforts.items():
        assert joint in forced
        assert e["gz_topic_name"] == f"/model/{MODEL_NAME}/joint/{joint}/cmd_force"


# ---------------------------------------------------------------------------------------
# The ROS side of the Gazebo loop, with the launch file's parameters, on gz-shaped inputs
# ---------------------------------------------------------------------------------------
def _resolve(value, declared):
    """A recorded launch substitution with the declared defaults: LaunchConfiguration -> its default,
    share paths -> files of this repository, Command(xacro ...) -> the expansion (as the xacro CLI:
    file then name:=value arguments), ParameterValue -> cast to its value_type."""
    import shlex

    from launch_stubs import _share_path
    kind = type(value).__name__
    if kind == "LaunchConfiguration":
        return _resolve(declared[value.arg(0, "variable_name")].kwargs["default_value"], declared)
    if kind == "PathJoinSubstitution":
        return str(REPO / _share_path(value))
    if kind == "Command":
        argv = shlex.split("".join(_resolve(p, declared) for p in value.arg(0, "command")))
        assert argv[0] == "xacro", argv
        return _expand(argv[1], **dict(a.split(":=", 1) for a in argv[2:]))
    if kind == "ParameterValue":
        raw, typ = _resolve(value.arg(0, "value"), declared), value.kwargs.get("value_type")
        if typ is bool and isinstance(raw, str):
            return {"true": True, "false": False}[raw.lower()]
        return typ(raw) if typ is not None else raw
    assert isinstance(value, (bool, int, float, str)), value
    return value


def test_gazebo_loop_nodes_answer_gz_inputs_with_the_launch_parameters(stub_launch):
    """geodyn_reference, geodyn_node and geodyn_flat_controller started in-process with exactly the
    parameters gazebo_underactuated.launch.py gives them (its default config file's sections, then its
    overrides, with the argument defaults and the xacro expansion substituted), fed what the bridge
    brings from Gazebo (/clock; odom stamped on sim time, twist in base_link; joint_states with the
    spinning rotor joints too): they answer with cmd/rotor_speeds (6 speeds) and one
    cmd/joint_effort/<joint> per bridged joint, and only on odometry older than the 0.05 s start-up
    window. With the robot on the reference the speeds are those of its thrust and moment: between
    600 and 850 rad/s (hover ~720) and the joint torques below 2 N m."""
    pytest.importorskip("rclpy")
    from ros_harness import Harness, joint_states_msg, odometry_msg
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64

    from geodyn_ros.lie import Ad_inv
    from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_TYPE
    from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
    from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    from launch_stubs import _Launch

    launch = _Launch("gazebo_underactuated.launch.py")
    config_file = _resolve(launch.declared["config"].kwargs["default_value"], launch.declared)
    sections = {k[len("/**/"):]: v["ros__parameters"] for k, v in yaml.safe_load(Path(config_file).read_text()).items()}
    params = {}
    for node in launch.geodyn_nodes():
        exe = node.kwargs["executable"]
        params[exe] = dict(sections.get(exe, {}))
        params[exe].update({k: _resolve(v, launch.declared) for k, v in _Launch.inline_params(node).items()})
    assert params["geodyn_flat_controller"]["level"] == "ff1" and params["geodyn_node"]["input_mode"] == "flat"
    # the start hold's gate (gz/start_hold, tested in test_gazebo_reference_start.py): here the states
    # follow the figure eight from the clock's time, as once the hold has let go
    assert params["geodyn_reference"].pop("start_topic") == "gz/start_hold"
    efforts = sorted(t.rsplit("/", 1)[1] for t in _bridge() if t.startswith("cmd/joint_effort/"))

    h = Harness()
    try:
        classes = {"geodyn_reference": ReferenceNode, "geodyn_node": GeodynNode,
                   "geodyn_flat_controller": FlatControllerNode}
        nodes = {exe: h.make(cls, params[exe]) for exe, cls in classes.items()}
        ctrl = nodes["geodyn_flat_controller"]
        rot = h.record(ROTOR_MSG_TYPE, "cmd/rotor_speeds")
        eff = {j: h.record(Float64, f"cmd/joint_effort/{j}") for j in efforts}
        for topic, ty in (("/clock", Clock), ("odom", Odometry), ("joint_states", JointState)):
            h.publisher(ty, topic)
            h.wait_matched(topic)
        model = ctrl.model
        assert model is not None and list(model.joint_names) == efforts
        rotor_joints = [f"rotor_{i}_joint" for i in range(1, 7)]
        t0_ns, dt_ns = 2_000_000_000, 2_000_000     # sim time from 2 s, 2 ms per step
        first_cmd_ns = None
        deadline = time.monotonic() + 120.0   # cold numba caches compile kernels first
        k = 0
        while time.monotonic() < deadline:
            st = t0_ns + k * dt_ns
            ref = figure_eight_reference(st * 1e-9, 2)
            flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, order=0)
            Vb = Ad_inv(flat.base_pose) @ flat.base_twist[0]
            clock = Clock()
            clock.clock.sec, clock.clock.nanosec = divmod(st, 10**9)
            h.publisher(Clock, "/clock").publish(clock)
            h.publisher(Odometry, "odom").publish(odometry_msg(st, flat.base_pose, Vb[:3], Vb[3:]))
            h.publisher(JointState, "joint_states").publish(joint_states_msg(
                st, efforts + rotor_joints, np.concatenate([ref.q[0], np.full(6, 1.0)]),
                np.concatenate([ref.q[1], np.full(6, 360.0)])))
            h.spin_for(0.02)
            if rot and first_cmd_ns is None:
                first_cmd_ns = st
            if len(rot) >= 3 and all(eff.values()):
                break
            k += 1
        assert len(rot) >= 3 and all(eff.values()), (len(rot), {j: len(v) for j, v in eff.items()})
        # nothing before the 0.05 s odometry start-up window has passed
        assert first_cmd_ns - t0_ns >= 50_000_000
        for msg in rot[-3:]:
            om = np.array(msg.velocity if hasattr(msg, "velocity") else msg.data)
            assert om.shape == (6,) and np.all((om > 600.0) & (om < 850.0)), om
        for j, msgs in eff.items():
            assert abs(msgs[-1].data) < 2.0, (j, msgs[-1].data)
    finally:
        h.close()
