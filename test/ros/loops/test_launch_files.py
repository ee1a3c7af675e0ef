"""Launch files, checked without ROS launch.

``launch`` / ``launch_ros`` (and the ``ros2`` CLI) are not pip-installable, so each launch
file is executed against small stub modules put into ``sys.modules`` for the duration of
one test (``test/launch_stubs.py``): every stub class only records its constructor arguments. The
recorded tree is then checked: the nodes run executables that exist (setup.py console_scripts, or
the known external packages), the simulations run on sim time, every ``LaunchConfiguration`` used
is declared, default files exist in the package, and the parameters passed are declared by the
nodes. If the real ``launch_ros`` is importable, the files are also built with it. The parameter
file and the Gazebo files: ``test_launch_config.py``.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from launch_stubs import (EXPECTED, EXPECTED_SCRIPTS, EXTERNAL_EXECUTABLES, GZ_ACTUATED_XACRO, IMPLICIT_PARAMETERS, INSTALLED_SUFFIXES, LAUNCH_DIR, LAUNCH_FILES, REPO, _Launch, _config_sections, _console_scripts, _expand, _is_launch_config, _load_launch_file, _node_parameters, _of_type, _share_path)


def test_setup_py_console_scripts():
    scripts = _console_scripts()
    missing = EXPECTED_SCRIPTS - scripts
    assert not missing, f"setup.py console_scripts lacks {sorted(missing)} (has {sorted(scripts)})"


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_nodes_are_known_executables(stub_launch, filename):
    launch = _Launch(filename)
    scripts = _console_scripts()
    assert launch.nodes, "no Node in the launch description"
    started = set()
    for node in launch.nodes:
        package, executable = node.kwargs.get("package"), node.kwargs.get("executable")
        if package == "geodyn_ros":
            assert executable in scripts, (
                f"{executable!r} is not a geodyn_ros console script in setup.py ({sorted(scripts)})")
            # The node name is the key of its section in config/geodyn.yaml.
            assert node.kwargs.get("name") == executable
        else:
            assert executable in EXTERNAL_EXECUTABLES.get(package, set()), (package, executable)
            started.add((package, executable))
    expected = EXPECTED[filename]
    assert {n.kwargs["executable"] for n in launch.geodyn_nodes()} == expected["geodyn_nodes"]
    assert len(launch.geodyn_nodes()) == len(expected["geodyn_nodes"]), "a node is started twice"
    assert started == expected["external"]


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_arguments_declared_and_used(stub_launch, filename):
    launch = _Launch(filename)
    configs = _of_type(launch.objects, "LaunchConfiguration")
    used = {c.arg(0, "variable_name") for c in configs}
    undeclared = {c.arg(0, "variable_name") for c in configs
                  if c.arg(1, "default") is None} - set(launch.declared)
    assert not undeclared, f"LaunchConfiguration without DeclareLaunchArgument: {sorted(undeclared)}"
    unused = set(launch.declared) - used
    assert not unused, f"declared but never used: {sorted(unused)}"
    for name, value in EXPECTED[filename]["arg_defaults"].items():
        assert launch.declared[name].kwargs.get("default_value") == value, name


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_default_files_exist_and_are_installed(stub_launch, filename):
    launch = _Launch(filename)
    for name, relpath in EXPECTED[filename]["share_defaults"].items():
        assert _share_path(launch.declared[name].kwargs["default_value"]) == relpath, name
    for decl in launch.declared.values():
        default = decl.kwargs.get("default_value")
        if type(default).__name__ != "PathJoinSubstitution":
            continue
        relpath = _share_path(default)
        assert (REPO / relpath).is_file(), relpath
        directory, _, fname = relpath.partition("/")
        assert fname.endswith(INSTALLED_SUFFIXES[directory]), f"{relpath} is not installed by setup.py"


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_geodyn_nodes_get_config_and_model(stub_launch, filename):
    launch = _Launch(filename)
    sections = set(_config_sections())
    for node in launch.geodyn_nodes():
        params = node.kwargs.get("parameters", [])
        # the config file first, then the launch-file overrides
        assert _is_launch_config(params[0], "config"), params
        assert node.kwargs["name"] in sections
        description = _Launch.inline_params(node).get("robot_description")
        if node.kwargs["executable"] == "geodyn_reference":
            continue  # needs no model
        assert type(description).__name__ == "ParameterValue", node
        assert description.kwargs.get("value_type") is str
        command = description.arg(0, "value")
        assert type(command).__name__ == "Command"
        parts = list(command.arg(0, "command"))
        assert parts[0].strip() == "xacro" and _is_launch_config(parts[1], "urdf"), parts


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_use_sim_time(stub_launch, filename):
    launch = _Launch(filename)
    wall_clock = EXPECTED[filename].get("wall_clock", set())
    for node in launch.nodes:
        value = _Launch.inline_params(node).get("use_sim_time")
        if node.kwargs.get("package") == "geodyn_ros" and node.kwargs["executable"] in wall_clock:
            assert value is False, f"{node.kwargs['executable']}: use_sim_time={value!r}"
        elif EXPECTED[filename]["sim_time"]:
            assert value is True, f"{node.kwargs['executable']}: use_sim_time={value!r}"
        else:
            assert type(value).__name__ == "ParameterValue" and value.kwargs.get("value_type") is bool
            assert _is_launch_config(value.arg(0, "value"), "use_sim_time")


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_namespace_reaches_every_node(stub_launch, filename):
    """Every node runs in the ``namespace`` argument (its relative topics move with it), and the
    geodyn nodes that declare ``frame_prefix`` get the ``frame_prefix`` argument."""
    launch = _Launch(filename)
    for node in launch.nodes:
        assert _is_launch_config(node.kwargs.get("namespace"), "namespace"), node
    if "frame_prefix" not in launch.declared:
        return
    for node in launch.geodyn_nodes():
        if "frame_prefix" not in _node_parameters(node.kwargs["executable"]):
            continue
        value = _Launch.inline_params(node).get("frame_prefix")
        assert type(value).__name__ == "ParameterValue" and value.kwargs.get("value_type") is str, node
        assert _is_launch_config(value.arg(0, "value"), "frame_prefix")


def _check_arguments(launch):
    """The launch file's argument check (an OpaqueFunction), which must run before any node."""
    entities = launch.description.entities
    from geodyn_ros_launch import check_arguments
    checks = [i for i, e in enumerate(entities) if type(e).__name__ == "OpaqueFunction"
              and e.kwargs.get("function") is check_arguments]
    assert len(checks) == 1, "one OpaqueFunction checking the arguments"
    starts = [i for i, e in enumerate(entities) if type(e).__name__ in ("Node", "IncludeLaunchDescription")]
    assert checks[0] < min(starts), "the argument check must come before the first node"
    return entities[checks[0]].kwargs["function"]


@pytest.mark.parametrize("filename", LAUNCH_FILES)
@pytest.mark.parametrize("namespace, frame_prefix, complaint", [
    ("", "", None), ("robot1", "robot1/", None), ("/fleet/robot_2/", "fleet_robot_2_", None),
    ("robot 1", "", "launch argument 'namespace': 'robot 1' is not a valid ROS namespace"),
    ("robot-1", "", "launch argument 'namespace': 'robot-1'"),
    ("2robot", "", "token that starts with a number"),
    ("a//b", "", "repeated '/'"),
    ("robot1", "/robot1/", "launch argument 'frame_prefix': '/robot1/' must not start with '/'"),
    ("robot1", "robot 1/", "launch argument 'frame_prefix'"),
])
def test_launch_refuses_bad_namespace_in_one_line(stub_launch, filename, namespace, frame_prefix, complaint):
    pytest.importorskip("rclpy")
    launch = _Launch(filename)
    check = _check_arguments(launch)
    configs = {"namespace": namespace}
    if "frame_prefix" in launch.declared:
        configs["frame_prefix"] = frame_prefix
    elif frame_prefix.startswith("/") or " " in frame_prefix:
        complaint = None   # gazebo.launch.py has no frame_prefix argument
    context = types.SimpleNamespace(launch_configurations=configs)
    if complaint is None:
        assert check(context) == []
        return
    with pytest.raises(Exception) as info:
        check(context)
    text = str(info.value)
    assert complaint in text and "\n" not in text, text


def test_two_robots_launch_includes_geodyn_launch_twice(stub_launch):
    """two_robots.launch.py: geodyn.launch.py twice, each in its own scoped group, with distinct
    namespaces and frame prefixes, measured mode, its own URDF (shipped defaults); every argument
    it passes is one geodyn.launch.py declares."""
    launch = _Launch("two_robots.launch.py")
    geodyn_args = set(_Launch("geodyn.launch.py").declared)
    groups = _of_type(launch.description.entities, "GroupAction")
    assert len(groups) == 2
    seen = []
    for g in groups:
        (include,) = g.arg(0, "actions")
        assert type(include).__name__ == "IncludeLaunchDescription"
        path = include.arg(0, "launch_description_source").arg(0, "launch_file_path")
        assert _share_path(path) == "launch/geodyn.launch.py"
        args = dict(include.kwargs["launch_arguments"])
        assert set(args) <= geodyn_args, set(args) - geodyn_args
        assert args["input_mode"] == "measured" and args["frame_prefix"] == args["namespace"] + "/"
        assert _is_launch_config(args["config"], "config") and _is_launch_config(args["order"], "order")
        seen.append((args["namespace"], args["urdf"].arg(0, "variable_name")))
    assert seen == [("robot1", "robot1_urdf"), ("robot2", "robot2_urdf")]
    assert _share_path(launch.declared["robot1_urdf"].kwargs["default_value"]) == "urdf/aerial_manipulator.urdf"
    assert _share_path(launch.declared["robot2_urdf"].kwargs["default_value"]) == "urdf/quadruped.urdf"
    for decl in launch.declared.values():
        default = decl.kwargs.get("default_value")
        if type(default).__name__ == "PathJoinSubstitution":
            assert (REPO / _share_path(default)).is_file()


def test_sim_launch_feedforward_and_order(stub_launch):
    launch = _Launch("sim.launch.py")
    by_exe = {n.kwargs["executable"]: _Launch.inline_params(n) for n in launch.geodyn_nodes()}
    ff = by_exe["geodyn_controller"]["use_feedforward"]
    assert ff.kwargs.get("value_type") is bool
    assert _is_launch_config(ff.arg(0, "value"), "use_feedforward")
    for exe in ("geodyn_node", "geodyn_reference"):
        order = by_exe[exe]["order"]
        assert order.kwargs.get("value_type") is int
        assert _is_launch_config(order.arg(0, "value"), "order")


def _check_gazebo_side(launch):
    """The Gazebo side of both Gazebo launch files (geodyn_ros_launch.gazebo_actions): ``gz sim -r``
    (``-s`` under ``headless``) on the world argument with the package's share parent on
    GZ_SIM_RESOURCE_PATH; the stand spawned first, then (on its exit) the robot from
    robot_description at spawn_z; the reference starting on the start hold's release."""
    from geodyn_ros_launch import GZ_STAND_SDF, GZ_START_TOPIC
    from geodyn_ros_launch import _gz_sim
    (gz,) = [o for o in _of_type(launch.objects, "OpaqueFunction") if o.kwargs.get("function") is _gz_sim]
    assert {"headless", "update_rate", "world"} <= set(launch.declared)

    def cmd(**cfg):
        ctx = types.SimpleNamespace(launch_configurations={"world": "w.sdf", **cfg})
        (e,) = gz.kwargs["function"](ctx, *gz.kwargs["args"])
        assert e.kwargs["name"] == "gz_sim" and "GZ_SIM_RESOURCE_PATH" in e.kwargs["additional_env"]
        return e.kwargs["cmd"]
    assert cmd(headless="false", update_rate="") == ["gz", "sim", "-r", "w.sdf"]
    assert cmd(headless="true", update_rate="") == ["gz", "sim", "-r", "-s", "w.sdf"]
    assert cmd(headless="true", update_rate="250") == ["gz", "sim", "-r", "-s", "-z", "250", "w.sdf"]
    for bad in ("fast", "0", "-5", "nan"):
        with pytest.raises(ValueError, match=rf"^launch argument 'update_rate': '{bad}' is not a number > 0"):
            cmd(headless="true", update_rate=bad)
    creates = [n for n in launch.nodes if n.kwargs["executable"] == "create"]
    stand = next(n for n in creates if n.kwargs["name"] == "spawn_geodyn_stand")
    robot = next(n for n in creates if n.kwargs["name"] == "spawn_aerial_manipulator")
    assert _Launch.inline_params(stand)["string"] == GZ_STAND_SDF
    handler = _of_type(launch.objects, "OnProcessExit")[0]
    assert handler.kwargs["target_action"] is stand and handler.kwargs["on_exit"] == [robot]
    rp = _Launch.inline_params(robot)
    assert rp["name"] == "aerial_manipulator" and _is_launch_config(rp["z"].arg(0, "value"), "spawn_z")
    if "spawn_x" in launch.declared:
        assert _is_launch_config(rp["x"].arg(0, "value"), "spawn_x")
    assert type(rp["string"]).__name__ == "ParameterValue"
    assert all(_Launch.inline_params(n)["use_sim_time"] is True for n in creates)
    ref = _Launch.inline_params(next(n for n in launch.nodes if n.kwargs["executable"] == "geodyn_reference"))
    assert ref["start_topic"] == GZ_START_TOPIC
    rsp = next(n for n in launch.nodes if n.kwargs["executable"] == "robot_state_publisher")
    assert _is_launch_config(rsp.kwargs["condition"].arg(0, "predicate_expression"), "robot_state_publisher")


def test_gazebo_launch_wiring(stub_launch):
    launch = _Launch("gazebo.launch.py")
    _check_gazebo_side(launch)
    # spawned (and held) where the Table 3 reference starts: it was spawned 1.41 m away, at (0, 0, 1),
    # and the held loops wound up until the release flipped it (seen in gz-sim 8.14)
    from geodyn_ros.trajectories import table3_reference
    start = table3_reference(0.0, 0).base_pose[:3, 3]
    spawn = [float(launch.declared[f"spawn_{a}"].kwargs["default_value"]) if f"spawn_{a}" in launch.declared else 0.0
             for a in "xyz"]
    np.testing.assert_allclose(spawn, start, atol=1e-12)

    nodes = {n.kwargs["executable"]: n for n in launch.nodes}
    bridge = _Launch.inline_params(nodes["parameter_bridge"])
    assert _is_launch_config(bridge["config_file"], "bridge_config")
    rsp = _Launch.inline_params(nodes["robot_state_publisher"])
    assert type(rsp["robot_description"]).__name__ == "ParameterValue"
    controller = _Launch.inline_params(nodes["geodyn_actuated_controller"])
    # the bridge takes one std_msgs/Float64 per joint; Gazebo is not lock-stepped; gz joints are
    # rigid; the odometry's first samples are discarded
    assert controller["per_joint_effort_topics"] is True and controller["sync_stamps"] is False
    assert controller["elastic_joints"] is False and controller["odom_startup_discard"] > 0.0
    dyn = _Launch.inline_params(nodes["geodyn_node"])
    # the allocation needs the body-frame jet; the dynamics model has the rotors locked
    assert dyn["output_representation"] == "body"
    rotor_joints = {j.get("name") for j in ET.fromstring(_expand(GZ_ACTUATED_XACRO)).iter("joint")
                    if j.get("type") == "continuous"}
    assert set(dyn["locked_joints"].split(",")) == rotor_joints and len(rotor_joints) == 6


def test_gazebo_underactuated_launch_wiring(stub_launch):
    """gazebo_underactuated.launch.py: the Gazebo pieces of gazebo.launch.py, the flat loop's nodes in
    their flat modes, one actuation YAML for the xacro and the nodes, and the Gazebo settings of the
    controller (rigid joints, no lock-step, per-joint effort topics, odometry start-up discard)."""
    from geodyn_ros.control.flatness import FLATNESS_LEVELS
    from geodyn_ros.ros.nodes.flat_controller_node import _ORDER
    launch = _Launch("gazebo_underactuated.launch.py")
    _check_gazebo_side(launch)

    nodes = {n.kwargs["executable"]: n for n in launch.nodes}
    params = {exe: _Launch.inline_params(n) for exe, n in nodes.items()}
    assert _is_launch_config(params["parameter_bridge"]["config_file"], "bridge_config")

    # one robot_description for robot_state_publisher (-> the spawner), geodyn_node and the
    # controller: xacro of the urdf argument with actuation_config:=<actuation>, an argument the
    # default xacro declares (so the gz plugin constants and the nodes read one YAML)
    for exe in ("robot_state_publisher", "geodyn_node", "geodyn_flat_controller"):
        desc = params[exe]["robot_description"]
        assert type(desc).__name__ == "ParameterValue" and desc.kwargs.get("value_type") is str, exe
        parts = list(desc.arg(0, "value").arg(0, "command"))
        assert parts[0].strip() == "xacro" and _is_launch_config(parts[1], "urdf"), parts
        assert parts[2].strip() == "actuation_config:=" and _is_launch_config(parts[3], "actuation"), parts
    default_xacro = REPO / _share_path(launch.declared["urdf"].kwargs["default_value"])
    assert '<xacro:arg name="actuation_config"' in default_xacro.read_text()

    ref, dyn, ctrl = params["geodyn_reference"], params["geodyn_node"], params["geodyn_flat_controller"]
    assert ref["trajectory"] == "figure_eight" and dyn["input_mode"] == "flat"
    for exe, p in (("geodyn_node", dyn), ("geodyn_flat_controller", ctrl)):
        assert _is_launch_config(p["actuation_config"].arg(0, "value"), "actuation"), exe
    for exe, p in (("geodyn_reference", ref), ("geodyn_node", dyn), ("geodyn_flat_controller", ctrl)):
        assert p["order"].kwargs.get("value_type") is int and _is_launch_config(p["order"].arg(0, "value"), "order")
    assert _is_launch_config(ref["speed"].arg(0, "value"), "speed")
    assert ctrl["level"].kwargs.get("value_type") is str and _is_launch_config(ctrl["level"].arg(0, "value"), "level")
    # Gazebo: rigid joints (one std_msgs/Float64 per joint through the bridge), not lock-stepped,
    # the odometry publisher's first samples discarded (0.05 s, as gazebo.launch.py)
    assert ctrl["elastic_joints"] is False and ctrl["per_joint_effort_topics"] is True
    assert ctrl["sync_stamps"] is False and ctrl["odom_startup_discard"] == 0.05
    # the defaults the controller accepts: a level it knows, of order <= the default order
    level, order = launch.declared["level"].kwargs["default_value"], launch.declared["order"].kwargs["default_value"]
    assert level in FLATNESS_LEVELS and _ORDER[level] <= int(order)
    # the spawn height: the figure eight's base height at t = 0 (base 0.104 m above the CoM), to
    # 1 um: the base is held there, and an offset would wind the loops up while held
    from geodyn_ros.ros.loops.underactuated_closed_loop import flat_start_parameters
    z0 = flat_start_parameters()["initial_base_pose"][2]
    assert abs(float(launch.declared["spawn_z"].kwargs["default_value"]) - z0) < 1e-6, z0


def test_actuated_sim_launch_wiring(stub_launch):
    launch = _Launch("actuated_sim.launch.py")
    by_exe = {n.kwargs["executable"]: _Launch.inline_params(n) for n in launch.geodyn_nodes()}
    controller = by_exe["geodyn_actuated_controller"]
    for key, arg, typ in (("use_feedforward", "use_feedforward", bool), ("feedforward_order", "feedforward_order", int),
                          ("order", "order", int)):
        assert controller[key].kwargs.get("value_type") is typ and _is_launch_config(controller[key].arg(0, "value"), arg)
    for exe in ("geodyn_node", "geodyn_reference"):
        assert _is_launch_config(by_exe[exe]["order"].arg(0, "value"), "order")
    # lock-step with the MuJoCo sim (the yaml defaults: sync_stamps true, elastic joints read on
    # motor_states); nothing Gazebo-specific is switched on
    assert not {"sync_stamps", "elastic_joints", "per_joint_effort_topics", "odom_startup_discard"} & set(controller)
    dyn = by_exe["geodyn_node"]
    # the allocation needs the body-frame jet; the dynamics model has the rotor joints locked
    assert dyn["output_representation"] == "body"
    rotor_joints = {j.get("name") for j in ET.fromstring(_expand(REPO / "urdf" / "tilthex_manipulator.urdf.xacro"))
                    .iter("joint") if j.get("type") == "continuous"}
    assert set(dyn["locked_joints"].split(",")) == rotor_joints and len(rotor_joints) == 6
    # the simulator: the yaml section starts it on the Table 3 reference with the actuators on it
    section = _config_sections()["geodyn_actuated_sim"]["ros__parameters"]
    assert {"initial_rotor_speeds", "initial_motor_positions", "initial_motor_velocities"} <= set(section)
    assert set(by_exe["geodyn_actuated_sim"]) == {"use_sim_time", "robot_description", "frame_prefix"}


def test_underactuated_sim_launch_wiring(stub_launch):
    launch = _Launch("underactuated_sim.launch.py")
    by_exe = {n.kwargs["executable"]: _Launch.inline_params(n) for n in launch.geodyn_nodes()}
    for exe in ("geodyn_actuated_sim", "geodyn_node", "geodyn_flat_controller"):
        # one actuation YAML for the simulator, the rotor feedforward and the controller
        assert _is_launch_config(by_exe[exe]["actuation_config"].arg(0, "value"), "actuation"), exe
    ctrl = by_exe["geodyn_flat_controller"]
    assert ctrl["level"].kwargs.get("value_type") is str and _is_launch_config(ctrl["level"].arg(0, "value"), "level")
    for exe in ("geodyn_node", "geodyn_reference", "geodyn_flat_controller"):
        assert _is_launch_config(by_exe[exe]["order"].arg(0, "value"), "order")
    assert _is_launch_config(by_exe["geodyn_reference"]["speed"].arg(0, "value"), "speed")
    # feedback:=lqr: the controller's feedback, and geodyn_node's linearization switched on with it
    assert ctrl["feedback"].kwargs.get("value_type") is str and \
        _is_launch_config(ctrl["feedback"].arg(0, "value"), "feedback")
    lin = by_exe["geodyn_node"]["publish_linearization"]
    assert lin.kwargs.get("value_type") is bool
    expr = lin.arg(0, "value")
    assert type(expr).__name__ == "PythonExpression"
    parts = expr.arg(0, "expression")
    assert parts[0] == "'" and _is_launch_config(parts[1], "feedback") and parts[2] == "' == 'lqr'"


def test_underactuated_sim_launch_mission(stub_launch, tmp_path):
    """mission:=FILE: the reference gets trajectory and mission, its check the model and actuation;
    the simulator reads the start file after the config; the argument check refuses a missing or
    bad mission in one line and writes a start that equals start_parameters (the mission's plan
    through the flat map, computed here in process) and flat_start_parameters' layout."""
    import yaml as _yaml

    from geodyn_ros.planning.mission import load_mission
    from geodyn_ros.ros.nodes.mission import start_parameters
    launch = _Launch("underactuated_sim.launch.py")
    by_exe = {n.kwargs["executable"]: n for n in launch.geodyn_nodes()}
    ref = _Launch.inline_params(by_exe["geodyn_reference"])
    assert _is_launch_config(ref["mission"].arg(0, "value"), "mission")
    traj = ref["trajectory"].arg(0, "value")
    assert traj.arg(0, "variable_name") == "reference_trajectory" and traj.kwargs["default"] == "figure_eight"
    assert _is_launch_config(ref["actuation_config"].arg(0, "value"), "actuation")
    sim_files = by_exe["geodyn_actuated_sim"].kwargs["parameters"]
    assert _is_launch_config(sim_files[0], "config") and sim_files[1].arg(0, "variable_name") == "mission_sim_start"
    assert _is_launch_config(sim_files[1].kwargs["default"], "config")
    check = _check_arguments(launch)
    urdf, act = str(REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"), str(REPO / "config" / "hexarotor.yaml")

    def run(mission):
        ctx = types.SimpleNamespace(launch_configurations={"namespace": "", "frame_prefix": "", "mission": mission,
                                                           "urdf": urdf, "actuation": act})
        return check(ctx), ctx.launch_configurations
    with pytest.raises(ValueError) as info:       # the mission loader's line (start-parameters says it)
        run("nope.yaml")
    assert str(info.value) == (f"launch argument 'mission': {os.path.abspath('nope.yaml')}: cannot be read (No such "
                               "file or directory); give the path of an existing mission file")
    bad = tmp_path / "bad.yaml"
    bad.write_text("waypoints: [{com: [0, 0, 1]}]\n")
    with pytest.raises(ValueError) as info:
        run(str(bad))
    assert str(info.value) == f"launch argument 'mission': {bad}: waypoints: expected a list of at least 2 " \
                              "waypoints, got 1; give the start and at least one more"
    example = str(REPO / "config" / "mission_example.yaml")
    assert run(example)[0] == []
    cfg = run(example)[1]
    assert cfg["reference_trajectory"] == "waypoints" and cfg["mission"] == example
    written = _yaml.safe_load(Path(cfg["mission_sim_start"]).read_text())["/**/geodyn_actuated_sim"]["ros__parameters"]
    want = start_parameters(load_mission(example), urdf, act)
    assert set(written) == set(_underactuated_sections()["geodyn_actuated_sim"]) == set(want)
    for name, v in want.items():
        assert written[name] == pytest.approx(v, rel=0, abs=1e-12), name   # the YAML round trip of doubles
    # at rest: zero twist and joint velocities; level at the first yaw (0), and the system CoM of
    # that base pose and those joints (gd.center_of_mass, Alg. 1) is the mission's first waypoint
    import numpy as np

    import geodyn_ros as gd
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.lie import quat_to_matrix
    assert written["initial_base_twist"] == [0.0] * 6 and written["initial_joint_velocities"] == [0.0] * 6
    pose = np.array(written["initial_base_pose"])
    C = np.eye(4)
    C[:3, 3], C[:3, :3] = pose[:3], quat_to_matrix(pose[3:], "xyzw")
    assert np.allclose(C[:3, :3], np.eye(3), atol=1e-12)
    model = gd.load_urdf(urdf, locked_joints=list(load_actuation_config(act).rotor_joints))
    com = gd.center_of_mass(model, C, None, np.array([written["initial_joint_positions"]]))[0]
    assert np.abs(com - load_mission(example).com[0]).max() < 1e-12      # rounding of a ~1 m position


def _underactuated_sections():
    with open(REPO / "config" / "underactuated.yaml") as f:
        config = yaml.safe_load(f)
    assert all(k.startswith("/**/") for k in config), list(config)
    return {k[len("/**/"):]: v["ros__parameters"] for k, v in config.items()}


def _declared_with_their_types(sections: dict) -> None:
    """Every key of a launch config's ``{node: params}`` is a parameter the node declares, with a
    value of its default's type (a list for an array)."""
    for node_name, params in sections.items():
        declared = _node_parameters(node_name)
        assert not set(params) - set(declared), (node_name, sorted(set(params) - set(declared)))
        for name, value in params.items():
            default = declared[name][0]
            default = list(default) if isinstance(default, tuple) else default
            assert type(value) is type(default) or (isinstance(value, list) and isinstance(default, list)), name


def test_underactuated_config_keys_and_start_state():
    """config/underactuated.yaml: declared parameters of the right type, the loop's modes, and the
    simulator started on the figure eight (flat_start_parameters, to 1e-12 relative)."""
    from geodyn_ros.ros.loops.underactuated_closed_loop import flat_start_parameters
    sections = _underactuated_sections()
    assert set(sections) == {"geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"}
    _declared_with_their_types(sections)
    assert sections["geodyn_reference"]["trajectory"] == "figure_eight"
    assert sections["geodyn_node"]["input_mode"] == "flat"
    want = flat_start_parameters()
    for name, value in sections["geodyn_actuated_sim"].items():
        assert len(value) == len(want[name]) and max(abs(a - b) / max(1.0, abs(b))
                                                     for a, b in zip(value, want[name])) < 1e-12, name


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_parameters_are_declared_by_nodes(stub_launch, filename):
    launch = _Launch(filename)
    for node in launch.geodyn_nodes():
        exe = node.kwargs["executable"]
        declared = _node_parameters(exe)
        extra = set(_Launch.inline_params(node)) - set(declared) - IMPLICIT_PARAMETERS
        assert not extra, f"{filename}: {exe} is given undeclared parameters {sorted(extra)}"


if importlib.util.find_spec("launch_ros") is not None:  # only where ROS launch is installed

    @pytest.mark.parametrize("filename", LAUNCH_FILES)
    def test_launch_file_builds_with_real_launch_ros(filename):
        import launch
        import launch_ros.actions

        description = _load_launch_file(LAUNCH_DIR / filename)
        assert isinstance(description, launch.LaunchDescription)
        nodes = [e for e in description.entities if isinstance(e, launch_ros.actions.Node)]
        assert {n.node_package for n in nodes} <= {"geodyn_ros", *EXTERNAL_EXECUTABLES}




def test_geodyn_launch_offers_every_input_mode_of_the_node(stub_launch):
    """Issue 43's packaging gap: geodyn.launch.py's input_mode left out 'flat'. Its choices are the
    node's modes, and flat mode's actuation_config is a launch argument that reaches the node."""
    from geodyn_ros.ros.nodes.geodyn_params import _MODES
    launch = _Launch("geodyn.launch.py")
    assert tuple(launch.declared["input_mode"].kwargs["choices"]) == _MODES
    assert "actuation_config" in launch.declared
    (node,) = launch.geodyn_nodes()
    assert any("actuation_config" in p for p in node.kwargs["parameters"] if isinstance(p, dict))


@pytest.mark.parametrize("filename", [f for f in LAUNCH_FILES if f not in ("fly.launch.py", "two_robots.launch.py")])
def test_launch_message_types_reaches_every_node_that_declares_it(stub_launch, filename):
    """Issue 43: ``message_types`` is a launch argument listing the node parameter's values, and it
    reaches every geodyn node that declares the parameter (two nodes that talk must agree); the
    nodes that do not declare it (the simulators) do not get it. (fly.launch.py makes its nodes in
    an OpaqueFunction at launch: its argument is checked below; two_robots.launch.py includes
    geodyn.launch.py.)"""
    from geodyn_ros.ros.common.message_types import MESSAGE_TYPES
    launch = _Launch(filename)
    assert tuple(launch.declared["message_types"].kwargs["choices"]) == MESSAGE_TYPES
    assert launch.declared["message_types"].kwargs["default_value"] == MESSAGE_TYPES[0]
    for node in launch.geodyn_nodes():
        exe = node.kwargs["executable"]
        given = "message_types" in _Launch.inline_params(node)
        assert given == ("message_types" in _node_parameters(exe)), (filename, exe)


def test_fly_launch_declares_message_types(stub_launch):
    from geodyn_ros.ros.common.message_types import MESSAGE_TYPES
    import geodyn_ros_launch
    assert geodyn_ros_launch.MESSAGE_TYPES == MESSAGE_TYPES
    launch = _Launch("fly.launch.py")
    assert tuple(launch.declared["message_types"].kwargs["choices"]) == MESSAGE_TYPES
    from launch_stubs import NODE_MODULES
    assert set(geodyn_ros_launch.MESSAGE_TYPES_NODES) == {
        e for e in NODE_MODULES if "message_types" in _node_parameters(e)}


def test_px4_launch_wiring(stub_launch):
    """px4.launch.py (issue 44): one vehicle file for the stand-in, geodyn_node, the controller and
    the bridge; the stand-in only with stand_in:=true and on the wall clock, the others on the
    clock use_sim_time names (default: stand_in's value); px4_mode, arm, level, speed and order
    reach their nodes."""
    launch = _Launch("px4.launch.py")
    nodes = {n.kwargs["executable"]: n for n in launch.geodyn_nodes()}
    by_exe = {e: _Launch.inline_params(n) for e, n in nodes.items()}
    for exe in ("geodyn_px4_sim", "geodyn_node", "geodyn_flat_controller", "geodyn_px4_bridge"):
        assert _is_launch_config(by_exe[exe]["actuation_config"].arg(0, "value"), "actuation"), exe
    cond = nodes["geodyn_px4_sim"].kwargs["condition"]
    assert type(cond).__name__ == "IfCondition" and _is_launch_config(cond.arg(0, "predicate_expression"), "stand_in")
    assert all("condition" not in n.kwargs for e, n in nodes.items() if e != "geodyn_px4_sim")
    default = launch.declared["use_sim_time"].kwargs["default_value"]
    assert _is_launch_config(default, "stand_in")
    bridge = by_exe["geodyn_px4_bridge"]
    assert _is_launch_config(bridge["px4_mode"].arg(0, "value"), "px4_mode")
    assert bridge["arm_and_offboard_on_start"].kwargs.get("value_type") is bool
    assert _is_launch_config(bridge["arm_and_offboard_on_start"].arg(0, "value"), "arm")
    from geodyn_ros.ros.px4.bridge_node import MODES
    assert tuple(launch.declared["px4_mode"].kwargs["choices"]) == MODES
    assert _is_launch_config(by_exe["geodyn_flat_controller"]["level"].arg(0, "value"), "level")
    assert _is_launch_config(by_exe["geodyn_reference"]["speed"].arg(0, "value"), "speed")
    assert _is_launch_config(by_exe["geodyn_px4_sim"]["sensing"].arg(0, "value"), "sensing")


def test_px4_config_keys_start_state_and_gains():
    """config/px4.yaml: declared parameters of the right type; the stand-in started on the figure
    eight at the launch's speed 0.5 (flat_start_parameters, 1e-12 relative); the controller's gains
    are the vehicle file's (one set of gains, in two files)."""
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.underactuated import hexarotor_source
    from geodyn_ros.ros.loops.underactuated_closed_loop import flat_start_parameters
    with open(REPO / "config" / "px4.yaml") as f:
        config = yaml.safe_load(f)
    sections = {k[len("/**/"):]: v["ros__parameters"] for k, v in config.items()}
    assert set(sections) == {"geodyn_px4_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller",
                             "geodyn_px4_bridge"}
    _declared_with_their_types(sections)
    cfg = load_actuation_config(REPO / "config" / "hexarotor_px4.yaml")
    want = flat_start_parameters(cfg, hexarotor_source(), speed=0.5)
    for name, value in sections["geodyn_px4_sim"].items():
        if name.startswith("initial_"):
            assert len(value) == len(want[name]) and max(abs(a - b) / max(1.0, abs(b))
                                                         for a, b in zip(value, want[name])) < 1e-12, name
    ctrl = dict(sections["geodyn_flat_controller"])
    assert ctrl.pop("joint_states_max_age") == ctrl.pop("motor_states_max_age") == 0.05
    # the stamp of what the gains were designed for (issue 52): this vehicle at PX4's 10 ms
    from geodyn_ros.control.gain_origin import designed_for
    assert ctrl.pop("gains_designed_for") == designed_for(cfg.load_model(hexarotor_source()), 0.01)
    assert ctrl == cfg.gains_spec
