"""Shared by the launch-file tests (``test/ros/loops/test_launch_files.py``,
``test_launch_config.py``, ``test_gazebo_underactuated.py``) and ``test/vehicle/test_vehicle_xacro.py``:
the repository's launch, config and Gazebo files, the stub ``launch``/``launch_ros`` modules that
record what a launch file builds, and the facts read from the gz-sim and ros_gz sources.

``launch`` / ``launch_ros`` (and the ``ros2`` CLI) are not pip-installable, so each launch file is
executed against small stub modules put into ``sys.modules`` for the duration of one test: every
stub class only records its constructor arguments (:func:`install_stub_launch`, the
``stub_launch`` fixture of the test modules).
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
                "underactuated_sim.launch.py", "gazebo_underactuated.launch.py", "px4.launch.py"]

# executable (= node name) -> module holding its PARAMETERS table
NODE_MODULES = {
    "geodyn_node": "geodyn_ros.ros.nodes.geodyn_node",
    "geodyn_sim": "geodyn_ros.ros.nodes.sim_node",
    "geodyn_actuated_sim": "geodyn_ros.ros.nodes.actuated_sim_node",
    "geodyn_reference": "geodyn_ros.ros.nodes.reference_node",
    "geodyn_controller": "geodyn_ros.ros.nodes.controller_node",
    "geodyn_actuated_controller": "geodyn_ros.ros.nodes.actuated_controller_node",
    "geodyn_flat_controller": "geodyn_ros.ros.nodes.flat_controller_node",
    "geodyn_markers": "geodyn_ros.ros.nodes.markers_node",
    "geodyn_px4_bridge": "geodyn_ros.ros.px4.bridge_node",
    "geodyn_px4_sim": "geodyn_ros.ros.px4.standin_node",
}
EXPECTED_SCRIPTS = {"geodyn_node", "geodyn_sim", "geodyn_reference", "geodyn_controller",
                    "geodyn_closed_loop", "geodyn_actuated_controller", "geodyn_actuated_sim",
                    "geodyn_flat_controller", "geodyn_markers", "geodyn_px4_bridge", "geodyn_px4_sim"}
# packages outside geodyn_ros a launch file may start, with their executables
EXTERNAL_EXECUTABLES = {
    "robot_state_publisher": {"robot_state_publisher"},
    "ros_gz_sim": {"create"},
    "ros_gz_bridge": {"parameter_bridge"},
    "rviz2": {"rviz2"},
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
        "geodyn_nodes": {"geodyn_sim", "geodyn_reference", "geodyn_node", "geodyn_controller", "geodyn_markers"},
        "external": {("rviz2", "rviz2")},   # markers:=true / rviz:=true
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
        "geodyn_nodes": {"geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_actuated_controller",
                         "geodyn_markers"},
        "external": {("rviz2", "rviz2")},
        "sim_time": True,
        "wall_clock": {"geodyn_actuated_sim"},  # the /clock source refuses use_sim_time
        "arg_defaults": {"order": "2", "use_feedforward": "true", "feedforward_order": "2"},
        "share_defaults": {"urdf": "urdf/tilthex_manipulator.urdf.xacro", "config": "config/geodyn.yaml"},
    },
    "underactuated_sim.launch.py": {
        "geodyn_nodes": {"geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller",
                         "geodyn_markers"},
        "external": {("rviz2", "rviz2")},
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
        "arg_defaults": {"order": "2", "level": "ff1", "speed": "1.0", "world": "empty.sdf", "spawn_z": "1.104218",
                         "namespace": ""},
        "share_defaults": {"urdf": "urdf/hexarotor_manipulator_gazebo.xacro",
                           "config": "config/underactuated.yaml",
                           "actuation": "config/hexarotor.yaml",
                           "bridge_config": "config/gz_bridge.yaml"},   # shared with gazebo.launch.py
    },
    "px4.launch.py": {
        "geodyn_nodes": {"geodyn_px4_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller",
                         "geodyn_px4_bridge"},
        "external": set(),
        "sim_time": False,              # stand_in:=true puts the others on the stand-in's /clock
        "wall_clock": {"geodyn_px4_sim"},
        "arg_defaults": {"order": "2", "level": "ff2", "speed": "0.5", "px4_mode": "thrust_and_torque",
                         "arm": "false", "stand_in": "false", "sensing": "onboard", "namespace": "",
                         "frame_prefix": ""},
        "share_defaults": {"urdf": "urdf/hexarotor_manipulator.urdf.xacro", "config": "config/px4.yaml",
                           "actuation": "config/hexarotor_px4.yaml"},
    },
}

# setup.py data_files: what gets installed into share/geodyn_ros/<dir>
INSTALLED_SUFFIXES = {"urdf": (".urdf", ".xacro"), "launch": (".py",), "config": (".yaml", ".rviz")}


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
    "launch.event_handlers": ["OnProcessExit"],
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
    # gz-sim8 branch at 4ada862 (8.14.0): detachable_joint/DetachableJoint.cc and
    # triggered_publisher/TriggeredPublisher.cc, Configure; the start hold was run in gz-sim 8.14.0
    # (test/gazebo/test_gz_start.py)
    "gz-sim-detachable-joint-system": ("gz::sim::systems::DetachableJoint", {
        "parent_link", "child_model", "child_link", "topic", "detach_topic", "attach_topic", "output_topic",
        "suppress_child_warning"}),
    "gz-sim-triggered-publisher-system": ("gz::sim::systems::TriggeredPublisher", {
        "input", "output", "delay_ms", "service"}),
}
# ros_gz commit a4d00a9 (branch ros2), ros_gz_bridge/ros_gz_bridge/mappings.py: the (ROS, gz) pairs we
# use. Checked again on the jazzy branch at 739cb42 (2024-10-18; ROS 2 Jazzy, the Harmonic pairing):
# mappings.py is identical there and has every pair below (the snapshot has no kilted branch).
ROS_GZ_PAIRS = {
    ("rosgraph_msgs/msg/Clock", "gz.msgs.Clock"), ("nav_msgs/msg/Odometry", "gz.msgs.Odometry"),
    ("sensor_msgs/msg/JointState", "gz.msgs.Model"), ("std_msgs/msg/Float64", "gz.msgs.Double"),
    ("actuator_msgs/msg/Actuators", "gz.msgs.Actuators"),
    ("ros_gz_interfaces/msg/EntityWrench", "gz.msgs.EntityWrench"),
    ("std_msgs/msg/String", "gz.msgs.StringMsg"), ("tf2_msgs/msg/TFMessage", "gz.msgs.Pose_V"),
}


def _expand(path, **mappings):
    xacro = pytest.importorskip("xacro")
    return xacro.process_file(str(path), mappings=mappings or None).toxml()


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


def _urdf_joints():
    root = ET.parse(URDF).getroot()
    return [j.get("name") for j in root.iter("joint") if j.get("type") != "fixed"]
