"""The parameter file and the Gazebo files, checked without ROS launch.

config/geodyn.yaml is checked against the nodes' ``PARAMETERS`` tables (name ->
(default, description)) in ``geodyn_ros.ros.nodes.{geodyn_node, sim_node, reference_node,
controller_node}``, and against the ROS parameter-file parser (rcl) through rclpy, with the
nodes in the root namespace and under namespaces (its ``/**/<node>`` keys must reach both).
The Gazebo xacros and the bridge configuration are checked against the facts read from the
gz-sim and ros_gz sources (``test/launch_stubs.py``). The launch files: ``test_launch_files.py``.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import yaml

from launch_stubs import (ACTUATION, CONFIG, GZ_ACTUATED_XACRO, GZ_BRIDGE, GZ_XACRO, NODE_MODULES, PLUGIN_ELEMENTS, REPO, ROS_GZ_PAIRS, URDF, _config_sections, _expand, _node_parameters, _same_typed_value, _urdf_joints)


# ---------------------------------------------------------------------------------------
# config/geodyn.yaml
# ---------------------------------------------------------------------------------------








def test_config_structure():
    config = _config_sections()
    assert set(config) == set(NODE_MODULES)
    for node_name, section in config.items():
        assert set(section) == {"ros__parameters"}, node_name
        params = section["ros__parameters"]
        assert isinstance(params, dict) and params, node_name
        assert "robot_description" not in params, "robot_description comes from the launch file"


#: simulator parameters whose yaml values are the Table 3 initial state instead of the default.
TABLE3_START = {("geodyn_sim", k) for k in ("initial_base_pose", "initial_base_twist",
                                            "initial_joint_positions", "initial_joint_velocities")}
TABLE3_START |= {("geodyn_actuated_sim", k) for _, k in TABLE3_START} | {
    ("geodyn_actuated_sim", k) for k in ("initial_rotor_speeds", "initial_motor_positions",
                                         "initial_motor_velocities")}


def _table3_start(node_name="geodyn_sim"):
    if node_name == "geodyn_actuated_sim":   # plus the actuators on the reference
        from geodyn_ros.ros.loops.actuated_closed_loop import actuated_start_parameters
        return actuated_start_parameters()
    from geodyn_ros.ros.loops.closed_loop import table3_start_parameters
    return table3_start_parameters()


@pytest.mark.parametrize("node_name", sorted(NODE_MODULES))
def test_config_matches_node_parameters(node_name):
    params = _config_sections()[node_name]["ros__parameters"]
    declared = _node_parameters(node_name)
    unknown = set(params) - set(declared)
    assert not unknown, f"{node_name}: parameters not declared by the node: {sorted(unknown)}"
    for name, value in params.items():
        if (node_name, name) in TABLE3_START:
            # deliberately not the node default: the simulator starts on the Table 3 reference
            want = _table3_start(node_name)[name]
            # 15 significant digits in the yaml: 1e-12 relative (absolute below 1; rotor speeds ~750)
            assert len(value) == len(want) and max(abs(a - b) / max(1.0, abs(b))
                                                   for a, b in zip(value, want)) < 1e-12, name
            continue
        default = declared[name][0]
        if isinstance(default, tuple):
            default = list(default)
        assert _same_typed_value(value, default), (
            f"{node_name}.{name}: yaml {value!r} != node default {default!r}")


@pytest.mark.parametrize("namespace", ["", "robot1", "/fleet/robot_2"])
def test_config_parses_with_rcl(namespace):
    """The rcl parser (what a real node reads) accepts every value with a concrete type, and
    the ``/**/`` keys reach the nodes in any namespace (a plain ``geodyn_node:`` key fails here
    under a namespace: the node would get no value at all)."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.node import Node

    config = _config_sections()
    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", str(CONFIG)], context=context)
    try:
        for node_name, section in config.items():
            node = Node(node_name, namespace=namespace, context=context, enable_rosout=False,
                        start_parameter_services=False,
                        automatically_declare_parameters_from_overrides=True)
            try:
                want_fqn = "/" + "/".join(x for x in (namespace.strip("/"), node_name) if x)
                assert node.get_fully_qualified_name() == want_fqn
                for name, value in section["ros__parameters"].items():
                    got = node.get_parameter(name).value
                    got = list(got) if not isinstance(got, (str, bool, int, float)) else got
                    assert _same_typed_value(got, value), (node_name, name, got, value)
            finally:
                node.destroy_node()
    finally:
        context.try_shutdown()


# ---------------------------------------------------------------------------------------
# Gazebo files
# ---------------------------------------------------------------------------------------


def test_gz_bridge_config():
    with open(GZ_BRIDGE) as f:
        entries = yaml.safe_load(f)
    assert isinstance(entries, list) and entries
    keys = {"ros_topic_name", "gz_topic_name", "ros_type_name", "gz_type_name", "direction"}
    for entry in entries:
        assert set(entry) == keys, entry
        assert entry["direction"] in {"GZ_TO_ROS", "ROS_TO_GZ", "BIDIRECTIONAL"}, entry
        assert all(isinstance(entry[k], str) and entry[k] for k in keys), entry
        assert re.fullmatch(r"[a-z][a-z0-9_]*/msg/[A-Za-z0-9]+", entry["ros_type_name"]), entry
        assert entry["gz_type_name"].startswith("gz.msgs."), entry
    by_ros = {e["ros_topic_name"]: e for e in entries}
    assert len(by_ros) == len(entries), "duplicate ROS topic"
    assert by_ros["/clock"]["direction"] == "GZ_TO_ROS"
    efforts = {t.rsplit("/", 1)[1]: e for t, e in by_ros.items() if t.startswith("cmd/joint_effort/")}
    assert sorted(efforts) == sorted(_urdf_joints())
    for joint, e in efforts.items():
        assert e["gz_topic_name"] == f"/model/aerial_manipulator/joint/{joint}/cmd_force"
        assert (e["ros_type_name"], e["gz_type_name"], e["direction"]) == (
            "std_msgs/msg/Float64", "gz.msgs.Double", "ROS_TO_GZ")


def test_gazebo_plugins_xacro_expands():
    xacro = pytest.importorskip("xacro")
    doc = xacro.process_file(str(GZ_XACRO))
    root = ET.fromstring(doc.toxml())
    base = ET.parse(URDF).getroot()
    assert root.get("name") == base.get("name") == "aerial_manipulator"
    for tag in ("link", "joint"):
        assert [e.get("name") for e in root.findall(tag)] == [e.get("name") for e in base.findall(tag)]
    plugins = [p.get("filename") for p in root.iter("plugin")]
    assert "gz-sim-odometry-publisher-system" in plugins
    assert "gz-sim-joint-state-publisher-system" in plugins
    forced = sorted(p.findtext("joint_name") for p in root.iter("plugin")
                    if p.get("filename") == "gz-sim-apply-joint-force-system")
    assert forced == sorted(_urdf_joints())
    odom = next(p for p in root.iter("plugin")
                if p.get("filename") == "gz-sim-odometry-publisher-system")
    assert [odom.findtext(k) for k in ("odom_frame", "robot_base_frame", "dimensions")] == [
        "world", "base_link", "3"]





def test_actuated_gazebo_xacro_plugins_match_gz_sources_and_config():
    root = ET.fromstring(_expand(GZ_ACTUATED_XACRO))
    cfg = yaml.safe_load(ACTUATION.read_text())["tilthex"]
    plugins = list(root.iter("plugin"))
    for p in plugins:
        name, elements = PLUGIN_ELEMENTS[p.get("filename")]
        assert p.get("name") == name
        unknown = {c.tag for c in p} - elements
        assert not unknown, f"{p.get('filename')}: elements gz-sim does not read: {sorted(unknown)}"
    motors = [p for p in plugins if p.get("filename") == "gz-sim-multicopter-motor-model-system"]
    assert sorted(int(p.findtext("actuator_number")) for p in motors) == list(range(6))
    joints = {j.get("name"): j for j in root.iter("joint")}
    links = {lk.get("name") for lk in root.iter("link")}
    for p in motors:
        k = int(p.findtext("actuator_number"))
        assert joints[p.findtext("jointName")].get("type") == "continuous"
        assert joints[p.findtext("jointName")].find("child").get("link") == p.findtext("linkName") in links
        assert p.findtext("turningDirection") == cfg["turning_direction"][k]
        assert p.findtext("motorType") == "velocity"
        for tag, key in (("motorConstant", "motor_constant"), ("momentConstant", "moment_constant"),
                         ("timeConstantUp", "time_constant_up"), ("timeConstantDown", "time_constant_down"),
                         ("maxRotVelocity", "max_rot_velocity"), ("rotorDragCoefficient", "rotor_drag_coefficient"),
                         ("rollingMomentCoefficient", "rolling_moment_coefficient")):
            assert float(p.findtext(tag)) == float(cfg[key]), tag
        # the topic the bridge publishes on: <robotNamespace>/<commandSubTopic>
        topic = "/" + p.findtext("robotNamespace") + "/" + p.findtext("commandSubTopic")
        with open(GZ_BRIDGE) as f:
            bridge = {e["ros_topic_name"]: e for e in yaml.safe_load(f)}
        assert bridge["cmd/rotor_speeds"]["gz_topic_name"] == topic
    forced = sorted(p.findtext("joint_name") for p in plugins if p.get("filename") == "gz-sim-apply-joint-force-system")
    assert forced == sorted(_urdf_joints())
    # the rigid-body model of the gz URDF, rotors locked, is the MuJoCo/controller model
    import geodyn_ros as gd
    a = gd.load_urdf(_expand(GZ_ACTUATED_XACRO), locked_joints=[f"rotor_{i}_joint" for i in range(1, 7)])
    b = gd.load_urdf(REPO / "urdf" / "tilthex_manipulator.urdf.xacro",
                     locked_joints=[f"rotor_{i}_joint" for i in range(1, 7)])
    assert a.joint_names == b.joint_names and abs(a.total_mass - b.total_mass) < 1e-12
    # the URDF effort limit (a torque clamp in gz) is above the arm's Table 3 peak (1.1 N m)
    for j in _urdf_joints():
        assert float(joints[j].find("limit").get("effort")) >= 5.0


def test_gz_bridge_pairs_are_ros_gz_pairs():
    with open(GZ_BRIDGE) as f:
        entries = yaml.safe_load(f)
    for e in entries:
        assert (e["ros_type_name"], e["gz_type_name"]) in ROS_GZ_PAIRS, e
    by_ros = {e["ros_topic_name"]: e for e in entries}
    e = by_ros["cmd/rotor_speeds"]
    assert (e["ros_type_name"], e["gz_type_name"], e["direction"]) == (
        "actuator_msgs/msg/Actuators", "gz.msgs.Actuators", "ROS_TO_GZ")
    assert "cmd/entity_wrench" not in by_ros, "the rotors replace the EntityWrench relay"
