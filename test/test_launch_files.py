"""Launch files, parameter file and Gazebo files, checked without ROS launch.

``launch`` / ``launch_ros`` (and the ``ros2`` CLI) are not pip-installable, so each launch
file is executed against small stub modules put into ``sys.modules`` for the duration of
one test: every stub class only records its constructor arguments. The recorded tree is
then checked: the nodes run executables that exist (setup.py console_scripts, or the known
external packages), the simulations run on sim time, every ``LaunchConfiguration`` used is
declared, default files exist in the package, and the parameters passed are declared by
the nodes. If the real ``launch_ros`` is importable, the files are also built with it.

config/geodyn.yaml is checked against the nodes' ``PARAMETERS`` tables (name ->
(default, description)) in ``geodyn_ros.ros.{geodyn_node, sim_node, reference_node,
controller_node}``, and against the ROS parameter-file parser (rcl) through rclpy, with the
nodes in the root namespace and under namespaces (its ``/**/<node>`` keys must reach both).
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
import xml.etree.ElementTree as ET
from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAUNCH_DIR = REPO / "launch"
CONFIG = REPO / "config" / "geodyn.yaml"
GZ_BRIDGE = REPO / "config" / "gz_bridge.yaml"
URDF = REPO / "urdf" / "aerial_manipulator.urdf"
GZ_XACRO = REPO / "urdf" / "aerial_manipulator_gazebo_plugins.xacro"
GZ_ACTUATED_XACRO = REPO / "urdf" / "tilthex_manipulator_gazebo.xacro"
ACTUATION = REPO / "config" / "tilthex.yaml"

LAUNCH_FILES = ["geodyn.launch.py", "sim.launch.py", "gazebo.launch.py", "actuated_sim.launch.py",
                "underactuated_sim.launch.py", "gazebo_underactuated.launch.py"]

# executable (= node name) -> module holding its PARAMETERS table
NODE_MODULES = {
    "geodyn_node": "geodyn_ros.ros.geodyn_node",
    "geodyn_sim": "geodyn_ros.ros.sim_node",
    "geodyn_actuated_sim": "geodyn_ros.ros.actuated_sim_node",
    "geodyn_reference": "geodyn_ros.ros.reference_node",
    "geodyn_controller": "geodyn_ros.ros.controller_node",
    "geodyn_actuated_controller": "geodyn_ros.ros.actuated_controller_node",
    "geodyn_flat_controller": "geodyn_ros.ros.flat_controller_node",
}
EXPECTED_SCRIPTS = {"geodyn_node", "geodyn_sim", "geodyn_reference", "geodyn_controller",
                    "geodyn_closed_loop", "geodyn_actuated_controller", "geodyn_actuated_sim",
                    "geodyn_flat_controller"}
# packages outside geodyn_ros a launch file may start, with their executables
EXTERNAL_EXECUTABLES = {
    "robot_state_publisher": {"robot_state_publisher"},
    "ros_gz_sim": {"create"},
    "ros_gz_bridge": {"parameter_bridge"},
}
# parameters every ROS node has, or that the launch files add on top of the yaml
IMPLICIT_PARAMETERS = {"use_sim_time", "robot_description"}

EXPECTED = {
    "geodyn.launch.py": {
        "geodyn_nodes": {"geodyn_node"},
        "external": set(),
        "sim_time": False,
        "arg_defaults": {"use_sim_time": "false", "order": "2", "input_mode": "reference", "namespace": "",
                         "frame_prefix": ""},
        "share_defaults": {"urdf": "urdf/aerial_manipulator.urdf", "config": "config/geodyn.yaml"},
    },
    "sim.launch.py": {
        "geodyn_nodes": {"geodyn_sim", "geodyn_reference", "geodyn_node", "geodyn_controller"},
        "external": set(),
        "sim_time": True,
        "wall_clock": {"geodyn_sim"},  # the /clock source refuses use_sim_time
        "arg_defaults": {"order": "2", "use_feedforward": "true", "namespace": "", "frame_prefix": ""},
        "share_defaults": {"urdf": "urdf/aerial_manipulator.urdf", "config": "config/geodyn.yaml"},
    },
    "gazebo.launch.py": {
        "geodyn_nodes": {"geodyn_reference", "geodyn_node", "geodyn_actuated_controller"},
        "external": {("robot_state_publisher", "robot_state_publisher"),
                     ("ros_gz_sim", "create"), ("ros_gz_bridge", "parameter_bridge")},
        "sim_time": True,
        "arg_defaults": {"order": "2", "use_feedforward": "true", "world": "empty.sdf",
                         "feedforward_order": "1", "namespace": ""},
        "share_defaults": {"urdf": "urdf/tilthex_manipulator_gazebo.xacro",
                           "config": "config/geodyn.yaml",
                           "bridge_config": "config/gz_bridge.yaml"},
    },
    "actuated_sim.launch.py": {
        "geodyn_nodes": {"geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_actuated_controller"},
        "external": set(),
        "sim_time": True,
        "wall_clock": {"geodyn_actuated_sim"},  # the /clock source refuses use_sim_time
        "arg_defaults": {"order": "2", "use_feedforward": "true", "feedforward_order": "2"},
        "share_defaults": {"urdf": "urdf/tilthex_manipulator.urdf.xacro", "config": "config/geodyn.yaml"},
    },
    "underactuated_sim.launch.py": {
        "geodyn_nodes": {"geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"},
        "external": set(),
        "sim_time": True,
        "wall_clock": {"geodyn_actuated_sim"},
        "arg_defaults": {"order": "2", "level": "ff2", "speed": "1.0", "feedback": "geometric", "mission": ""},
        "share_defaults": {"urdf": "urdf/hexarotor_manipulator.urdf.xacro", "config": "config/underactuated.yaml",
                           "actuation": "config/hexarotor.yaml"},
    },
    "gazebo_underactuated.launch.py": {
        "geodyn_nodes": {"geodyn_reference", "geodyn_node", "geodyn_flat_controller"},
        "external": {("robot_state_publisher", "robot_state_publisher"),
                     ("ros_gz_sim", "create"), ("ros_gz_bridge", "parameter_bridge")},
        "sim_time": True,
        "arg_defaults": {"order": "2", "level": "ff1", "speed": "1.0", "world": "empty.sdf", "spawn_z": "1.1",
                         "namespace": ""},
        "share_defaults": {"urdf": "urdf/hexarotor_manipulator_gazebo.xacro",
                           "config": "config/underactuated.yaml",
                           "actuation": "config/hexarotor.yaml",
                           "bridge_config": "config/gz_bridge.yaml"},   # shared with gazebo.launch.py
    },
}

# setup.py data_files: what gets installed into share/geodyn_ros/<dir>
INSTALLED_SUFFIXES = {"urdf": (".urdf", ".xacro"), "launch": (".py",), "config": (".yaml",)}


# ---------------------------------------------------------------------------------------
# Stub launch modules
# ---------------------------------------------------------------------------------------
class _Stub:
    """Records its constructor arguments; nothing else."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def arg(self, index, keyword, default=None):
        if len(self.args) > index:
            return self.args[index]
        return self.kwargs.get(keyword, default)

    def __repr__(self):
        return f"{type(self).__name__}{self.args!r}{self.kwargs!r}"


class _StubLaunchDescription(_Stub):
    def __init__(self, initial_entities=None, **kwargs):
        super().__init__(list(initial_entities or []), **kwargs)

    @property
    def entities(self):
        return self.args[0]

    def add_action(self, action):
        self.args[0].append(action)

    add_entity = add_action


_StubLaunchDescription.__name__ = _StubLaunchDescription.__qualname__ = "LaunchDescription"


_STUB_MODULES = {
    "launch": {"LaunchDescription": _StubLaunchDescription},
    "launch.actions": ["DeclareLaunchArgument", "IncludeLaunchDescription", "ExecuteProcess",
                       "GroupAction", "LogInfo", "SetEnvironmentVariable", "TimerAction",
                       "OpaqueFunction", "RegisterEventHandler", "Shutdown"],
    "launch.substitutions": ["LaunchConfiguration", "Command", "PathJoinSubstitution",
                             "TextSubstitution", "PythonExpression", "FindExecutable",
                             "EnvironmentVariable"],
    "launch.launch_description_sources": ["PythonLaunchDescriptionSource"],
    "launch.conditions": ["IfCondition", "UnlessCondition"],
    "launch_ros": [],
    "launch_ros.actions": ["Node"],
    "launch_ros.parameter_descriptions": ["ParameterValue", "ParameterFile"],
    "launch_ros.substitutions": ["FindPackageShare"],
    "ament_index_python": [],
    "ament_index_python.packages": [],
}


def _stub_share_directory(package_name):
    # The repository mirrors share/geodyn_ros (urdf/, launch/, config/).
    return str(REPO) if package_name == "geodyn_ros" else f"/stub/share/{package_name}"


@pytest.fixture
def stub_launch(monkeypatch):
    """The stub launch modules, installed for one test (:func:`install_stub_launch`)."""
    return install_stub_launch(monkeypatch)


def install_stub_launch(monkeypatch):
    """Install the stub modules in sys.modules (restored by monkeypatch afterwards); returns the
    stub classes by name."""
    classes = {}
    modules = {}
    for mod_name, names in _STUB_MODULES.items():
        module = types.ModuleType(mod_name)
        module.__stub__ = True
        if isinstance(names, Mapping):
            members = dict(names)
        else:
            members = {n: type(n, (_Stub,), {}) for n in names}
        for name, cls in members.items():
            setattr(module, name, cls)
            classes[name] = cls
        modules[mod_name] = module
    modules["ament_index_python.packages"].get_package_share_directory = _stub_share_directory
    modules["ament_index_python"].get_package_share_directory = _stub_share_directory
    for mod_name, module in modules.items():
        parent, _, child = mod_name.rpartition(".")
        if parent:
            setattr(modules[parent], child, module)
        monkeypatch.setitem(sys.modules, mod_name, module)
    return classes


def _load_launch_file(path):
    spec = importlib.util.spec_from_file_location(
        "_launch_under_test_" + path.name.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def _walk(obj, seen=None):
    """Every object reachable from obj through stub arguments and containers."""
    if seen is None:
        seen = set()
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, _Stub):
        children = [*obj.args, *obj.kwargs.values()]
    elif isinstance(obj, Mapping):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, (list, tuple, set, frozenset, ItemsView, KeysView, ValuesView)):
        children = list(obj)
    else:
        children = []
    for child in children:
        yield from _walk(child, seen)


def _of_type(objects, name):
    return [o for o in objects if isinstance(o, _Stub) and type(o).__name__ == name]


def _console_scripts():
    text = (REPO / "setup.py").read_text()
    # "name = geodyn_ros.module:main" or the clean-stop shims "name = geodyn_ros_entry:name"
    return set(re.findall(r"""["']\s*([A-Za-z_]\w*)\s*=\s*geodyn_ros(?:_entry|(?:\.\w+)*)\s*:\s*\w+\s*["']""",
                          text))


def _is_launch_config(obj, name):
    return type(obj).__name__ == "LaunchConfiguration" and obj.arg(0, "variable_name") == name


def _share_path(sub):
    """A PathJoinSubstitution([FindPackageShare('geodyn_ros'), 'dir', 'file']) -> repo path."""
    assert type(sub).__name__ == "PathJoinSubstitution", sub
    parts = list(sub.arg(0, "substitutions"))
    head, rest = parts[0], parts[1:]
    assert type(head).__name__ == "FindPackageShare" and head.arg(0, "package") == "geodyn_ros", sub
    assert all(isinstance(p, str) for p in rest), sub
    return "/".join(rest)


class _Launch:
    """The recorded launch description of one file."""

    def __init__(self, filename):
        self.filename = filename
        self.description = _load_launch_file(LAUNCH_DIR / filename)
        assert type(self.description).__name__ == "LaunchDescription"
        self.objects = list(_walk(self.description))
        self.nodes = _of_type(self.objects, "Node")
        self.declared = {d.arg(0, "name"): d for d in _of_type(self.objects, "DeclareLaunchArgument")}

    def geodyn_nodes(self):
        return [n for n in self.nodes if n.kwargs.get("package") == "geodyn_ros"]

    @staticmethod
    def param_dicts(node):
        return [p for p in node.kwargs.get("parameters", []) if isinstance(p, Mapping)]

    @classmethod
    def inline_params(cls, node):
        merged = {}
        for d in cls.param_dicts(node):
            merged.update(d)
        return merged


# ---------------------------------------------------------------------------------------
# Launch files
# ---------------------------------------------------------------------------------------
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
    checks = [i for i, e in enumerate(entities) if type(e).__name__ == "OpaqueFunction"]
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


def test_gazebo_launch_wiring(stub_launch):
    launch = _Launch("gazebo.launch.py")
    includes = _of_type(launch.objects, "IncludeLaunchDescription")
    assert len(includes) == 1
    source = includes[0].arg(0, "launch_description_source")
    path = source.arg(0, "launch_file_path")
    head, *rest = path.arg(0, "substitutions")
    assert head.arg(0, "package") == "ros_gz_sim" and rest == ["launch", "gz_sim.launch.py"]
    gz_args = dict(includes[0].kwargs["launch_arguments"])["gz_args"]
    assert any(_is_launch_config(a, "world") for a in gz_args)

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
    create_args = list(nodes["create"].kwargs["arguments"])
    assert create_args[create_args.index("-topic") + 1] == "robot_description"
    assert create_args[create_args.index("-name") + 1] == "aerial_manipulator"


def test_gazebo_underactuated_launch_wiring(stub_launch):
    """gazebo_underactuated.launch.py: the Gazebo pieces of gazebo.launch.py, the flat loop's nodes in
    their flat modes, one actuation YAML for the xacro and the nodes, and the Gazebo settings of the
    controller (rigid joints, no lock-step, per-joint effort topics, odometry start-up discard)."""
    from geodyn_ros.control.flatness import FLATNESS_LEVELS
    from geodyn_ros.ros.flat_controller_node import _ORDER
    launch = _Launch("gazebo_underactuated.launch.py")
    includes = _of_type(launch.objects, "IncludeLaunchDescription")
    assert len(includes) == 1
    path = includes[0].arg(0, "launch_description_source").arg(0, "launch_file_path")
    head, *rest = path.arg(0, "substitutions")
    assert head.arg(0, "package") == "ros_gz_sim" and rest == ["launch", "gz_sim.launch.py"]
    assert any(_is_launch_config(a, "world") for a in dict(includes[0].kwargs["launch_arguments"])["gz_args"])

    nodes = {n.kwargs["executable"]: n for n in launch.nodes}
    params = {exe: _Launch.inline_params(n) for exe, n in nodes.items()}
    assert _is_launch_config(params["parameter_bridge"]["config_file"], "bridge_config")
    create_args = list(nodes["create"].kwargs["arguments"])
    assert create_args[create_args.index("-topic") + 1] == "robot_description"
    assert create_args[create_args.index("-name") + 1] == "aerial_manipulator"
    assert _is_launch_config(create_args[create_args.index("-z") + 1], "spawn_z")

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
    # the spawn height: the figure eight's base height at t = 0 (base 0.104 m above the CoM), to 1 cm
    from geodyn_ros.ros.underactuated_closed_loop import flat_start_parameters
    z0 = flat_start_parameters()["initial_base_pose"][2]
    assert abs(float(launch.declared["spawn_z"].kwargs["default_value"]) - z0) < 0.01, z0


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
    from geodyn_ros.ros.mission import start_parameters
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
    with pytest.raises(ValueError, match=r"^launch argument 'mission': no such file: nope\.yaml$"):
        run("nope.yaml")
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


def test_underactuated_config_keys_and_start_state():
    """config/underactuated.yaml: declared parameters of the right type, the loop's modes, and the
    simulator started on the figure eight (flat_start_parameters, to 1e-12 relative)."""
    from geodyn_ros.ros.underactuated_closed_loop import flat_start_parameters
    sections = _underactuated_sections()
    assert set(sections) == {"geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"}
    for node_name, params in sections.items():
        declared = _node_parameters(node_name)
        assert not set(params) - set(declared), (node_name, sorted(set(params) - set(declared)))
        for name, value in params.items():
            default = declared[name][0]
            default = list(default) if isinstance(default, tuple) else default
            assert type(value) is type(default) or (isinstance(value, list) and isinstance(default, list)), name
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


# ---------------------------------------------------------------------------------------
# config/geodyn.yaml
# ---------------------------------------------------------------------------------------
def _node_parameters(executable):
    module = importlib.import_module(NODE_MODULES[executable])
    table = getattr(module, "PARAMETERS", None)
    assert isinstance(table, Mapping), f"{NODE_MODULES[executable]} has no PARAMETERS dict"
    for name, entry in table.items():
        assert isinstance(entry, tuple) and len(entry) == 2, (name, entry)
    return table


def _load_config():
    with open(CONFIG) as f:
        return yaml.safe_load(f)


def _same_typed_value(a, b):
    """Equal, and of the same ROS parameter type (bool, int, float, str, arrays of those)."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_same_typed_value(x, y) for x, y in zip(a, b)))
    return type(a) is type(b) and a == b


def _config_sections():
    """node name -> section of config/geodyn.yaml; every key must be ``/**/<node name>`` (any
    namespace: a plain ``geodyn_node`` key means ``/geodyn_node`` only)."""
    config = _load_config()
    assert isinstance(config, dict)
    bad = [k for k in config if not k.startswith("/**/")]
    assert not bad, f"keys without the any-namespace wildcard '/**/': {bad}"
    return {k[len("/**/"):]: v for k, v in config.items()}


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
        from geodyn_ros.ros.actuated_closed_loop import actuated_start_parameters
        return actuated_start_parameters()
    from geodyn_ros.ros.closed_loop import table3_start_parameters
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
def _urdf_joints():
    root = ET.parse(URDF).getroot()
    return [j.get("name") for j in root.iter("joint") if j.get("type") != "fixed"]


def test_gz_bridge_config():
    with open(GZ_BRIDGE) as f:
        entries = yaml.safe_load(f)
    assert isinstance(entries, list) and entries
    keys = {"ros_topic_name", "gz_topic_name", "ros_type_name", "gz_type_name", "direction"}
    for entry in entries:
        assert set(entry) == keys, entry
        assert entry["direction"] in {"GZ_TO_ROS", "ROS_TO_GZ", "BIDIRECTIONAL"}, entry
        assert all(isinstance(entry[k], str) and entry[k] for k in keys), entry
        assert re.fullmatch(r"[a-z_]+/msg/[A-Za-z0-9]+", entry["ros_type_name"]), entry
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


# ---------------------------------------------------------------------------------------
# The actuated Gazebo model (urdf/tilthex_manipulator_gazebo.xacro)
# ---------------------------------------------------------------------------------------
# Facts read from the upstream sources (read, not copied), with where:
# gz-sim commit 93bbf3ed1 (main), src/systems/multicopter_motor_model/MulticopterMotorModel.cc,
# MulticopterMotorModel::Configure: the SDF elements it reads. Checked again on the gz-sim8
# branch (Harmonic) at b81e26dab (2026-07-01): the same element sets in all four files below, the
# same GZ_ADD_PLUGIN_ALIAS names and gz_add_system library names; no list changed.
MOTOR_MODEL_ELEMENTS = {
    "robotNamespace", "jointName", "linkName", "actuator_number", "motorNumber", "turningDirection",
    "motorType", "commandSubTopic", "rotorDragCoefficient", "rollingMomentCoefficient", "maxRotVelocity",
    "motorConstant", "momentConstant", "timeConstantUp", "timeConstantDown", "rotorVelocitySlowdownSim",
}
# odometry_publisher/OdometryPublisher.cc, apply_joint_force/ApplyJointForce.cc,
# joint_state_publisher/JointStatePublisher.cc (same commits).
PLUGIN_ELEMENTS = {
    "gz-sim-multicopter-motor-model-system": ("gz::sim::systems::MulticopterMotorModel", MOTOR_MODEL_ELEMENTS),
    "gz-sim-odometry-publisher-system": ("gz::sim::systems::OdometryPublisher", {
        "odom_frame", "xyz_offset", "rpy_offset", "gaussian_noise", "robot_base_frame", "dimensions",
        "odom_publish_frequency", "odom_topic", "odom_covariance_topic", "tf_topic"}),
    "gz-sim-apply-joint-force-system": ("gz::sim::systems::ApplyJointForce", {"joint_name"}),
    "gz-sim-joint-state-publisher-system": ("gz::sim::systems::JointStatePublisher",
                                            {"joint_name", "topic", "update_rate"}),
}
# ros_gz commit a4d00a9 (branch ros2), ros_gz_bridge/ros_gz_bridge/mappings.py: the (ROS, gz) pairs we
# use. Checked again on the jazzy branch at 739cb42 (2024-10-18; ROS 2 Jazzy, the Harmonic pairing):
# mappings.py is identical there and has every pair below (the snapshot has no kilted branch).
ROS_GZ_PAIRS = {
    ("rosgraph_msgs/msg/Clock", "gz.msgs.Clock"), ("nav_msgs/msg/Odometry", "gz.msgs.Odometry"),
    ("sensor_msgs/msg/JointState", "gz.msgs.Model"), ("std_msgs/msg/Float64", "gz.msgs.Double"),
    ("actuator_msgs/msg/Actuators", "gz.msgs.Actuators"),
    ("ros_gz_interfaces/msg/EntityWrench", "gz.msgs.EntityWrench"),
}


def _expand(path, **mappings):
    xacro = pytest.importorskip("xacro")
    return xacro.process_file(str(path), mappings=mappings or None).toxml()


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
