"""The executables of geodyn_ros and the topics each node uses (ROS-free data: no rclpy import).

One table serves three consumers, so they cannot disagree:

* ``--help`` of every console script (:func:`help_text`, called by ``geodyn_ros_entry`` before
  anything heavy is imported);
* the documentation: the node list of ``doc/reference/nodes.md`` and the check that every topic
  name the docs mention exists (``test/package/test_docs.py``);
* ``test/ros/nodes/test_interfaces.py``, which starts each node and compares the topics it really
  subscribes and publishes with this table, mode by mode.

Topic names are relative (they follow the node's namespace) unless they start with ``/``; ``~/``
is the node's private namespace. ``when`` says under which parameters the topic exists
(empty: always). The types are those of the default ``message_types: typed``; under the deprecated
``message_types: multiarray`` every ``geodyn_msgs`` topic is ``std_msgs/Float64MultiArray``
(:mod:`geodyn_ros.ros.common.message_types`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Topic", "Executable", "NODES", "EXECUTABLES", "help_text", "all_topic_names"]


@dataclass(frozen=True)
class Topic:
    name: str
    type: str
    when: str = ""


@dataclass(frozen=True)
class Executable:
    name: str          #: console script
    module: str        #: Python module with ``main()`` (and ``PARAMETERS`` for a node)
    summary: str       #: one line
    subscribes: tuple = field(default_factory=tuple)
    publishes: tuple = field(default_factory=tuple)
    is_node: bool = True


_DIAG = Topic("/diagnostics", "diagnostic_msgs/DiagnosticArray")
_DESC = Topic("robot_description", "std_msgs/String",
              "robot_description and urdf_path empty (name: parameter robot_description_topic)")
_USED = Topic("~/inputs_used", "std_msgs/Float64MultiArray")   # the stamps each cycle used (latest_inputs)
# the observer's estimate of the rejection options (geodyn_ros.ros.inputs.rejection_inputs)
_REJECTION = (Topic("~/external_wrench", "geometry_msgs/WrenchStamped", "any rejection_* switch on"),
              Topic("~/external_wrench/frame", "geometry_msgs/WrenchStamped", "a switch on and rejection_frame set"))
_ARMED = Topic("armed", "std_msgs/Bool", "rejection_engage armed (geodyn_px4_bridge publishes it)")
_TF = (Topic("/tf", "tf2_msgs/TFMessage", "tf_rate_hz > 0"), Topic("/tf_static", "tf2_msgs/TFMessage", "tf_rate_hz > 0"),
       Topic("robot_description", "std_msgs/String", "robot_description or urdf_path set (latched)"))
_ROTOR_MSG = "actuator_msgs/Actuators"
# the jet topics: typed (geodyn_msgs) under message_types typed, the default; every one of them is
# std_msgs/Float64MultiArray under the deprecated message_types multiarray (message_types.py)
_REF, _FLAT, _JET = "geodyn_msgs/ReferenceJet", "geodyn_msgs/FlatReference", "geodyn_msgs/FeedforwardJet"
_DESIRED, _ROTOR_JET, _LIN = "geodyn_msgs/DesiredState", "geodyn_msgs/RotorSpeeds", "geodyn_msgs/Linearization"

#: every node executable, in the order of the docs
NODES = (
    Executable(
        "geodyn_node", "geodyn_ros.ros.nodes.geodyn_node",
        "the feedforward base wrench and joint torques and their time derivatives (inverse dynamics "
        "of order r, or the flat map in flat mode)",
        subscribes=(
            Topic("reference", _REF, "input_mode reference or measured"),
            Topic("odom", "nav_msgs/Odometry", "input_mode measured"),
            Topic("joint_states", "sensor_msgs/JointState", "input_mode measured"),
            Topic("flat_reference", _FLAT, "input_mode flat"),
            _DESC),
        publishes=(
            Topic("feedforward/wrench", "geometry_msgs/WrenchStamped"),
            Topic("feedforward/joint_efforts", "sensor_msgs/JointState"),
            Topic("feedforward/jet", _JET),
            Topic("desired/state", _DESIRED, "input_mode flat"),
            Topic("feedforward/flat_jet", _JET, "input_mode flat"),
            Topic("feedforward/rotor_speeds", _ROTOR_JET, "input_mode flat with actuation_config"),
            Topic("~/linearization", _LIN, "publish_linearization"),
            Topic("~/linearization/labels", "std_msgs/String", "publish_linearization"),
            Topic("~/inputs_used", "std_msgs/Float64MultiArray", "input_mode measured"),
            _DIAG)),
    Executable(
        "geodyn_reference", "geodyn_ros.ros.nodes.reference_node",
        "a reference jet along a built-in trajectory (the paper's Table 3, or the figure eight's flat outputs) "
        "or a planned waypoint mission",
        subscribes=(Topic("/clock", "rosgraph_msgs/Clock", "use_sim_time"),
                    Topic("mission/com_yaw", "trajectory_msgs/MultiDOFJointTrajectory", "trajectory waypoints"),
                    Topic("mission/joints", "trajectory_msgs/JointTrajectory", "trajectory waypoints")),
        publishes=(Topic("reference", _REF, "trajectory table3"),
                   Topic("flat_reference", _FLAT, "trajectory figure_eight or waypoints"),
                   Topic("planned_path", "nav_msgs/Path", "trajectory waypoints"),
                   Topic("/diagnostics", "diagnostic_msgs/DiagnosticArray", "trajectory waypoints"))),
    Executable(
        "geodyn_sim", "geodyn_ros.ros.nodes.sim_node",
        "MuJoCo simulator with ideal actuators (base wrench and joint efforts), speaking like Gazebo + ros_gz_bridge",
        subscribes=(Topic("cmd/wrench", "geometry_msgs/WrenchStamped"),
                    Topic("cmd/joint_efforts", "sensor_msgs/JointState"), _DESC),
        publishes=(Topic("/clock", "rosgraph_msgs/Clock"), Topic("odom", "nav_msgs/Odometry"),
                   Topic("joint_states", "sensor_msgs/JointState"), *_TF, _DIAG)),
    Executable(
        "geodyn_actuated_sim", "geodyn_ros.ros.nodes.actuated_sim_node",
        "MuJoCo simulator with rotors (gz-sim's motor model) and series-elastic arm joints",
        subscribes=(Topic("cmd/rotor_speeds", _ROTOR_MSG), Topic("cmd/motor_efforts", "sensor_msgs/JointState"),
                    Topic("cmd/wrench", "geometry_msgs/WrenchStamped", "inherited from geodyn_sim (ideal inputs)"),
                    Topic("cmd/joint_efforts", "sensor_msgs/JointState", "inherited from geodyn_sim (ideal inputs)"), _DESC),
        publishes=(Topic("/clock", "rosgraph_msgs/Clock"), Topic("odom", "nav_msgs/Odometry"),
                   Topic("joint_states", "sensor_msgs/JointState"), Topic("motor_states", "sensor_msgs/JointState"),
                   *_TF, _DIAG)),
    Executable(
        "geodyn_controller", "geodyn_ros.ros.nodes.controller_node",
        "geometric tracking controller for ideal actuators (base wrench and joint efforts), with the feedforward",
        subscribes=(Topic("odom", "nav_msgs/Odometry"), Topic("joint_states", "sensor_msgs/JointState"),
                    Topic("reference", _REF),
                    Topic("feedforward/wrench", "geometry_msgs/WrenchStamped"),
                    Topic("feedforward/joint_efforts", "sensor_msgs/JointState"), _DESC),
        publishes=(Topic("cmd/wrench", "geometry_msgs/WrenchStamped"),
                   Topic("cmd/joint_efforts", "sensor_msgs/JointState"),
                   Topic("cmd/joint_effort/<joint>", "std_msgs/Float64", "per_joint_effort_topics"), _USED, _DIAG)),
    Executable(
        "geodyn_actuated_controller", "geodyn_ros.ros.nodes.actuated_controller_node",
        "controller of the fully actuated multirotor manipulator (rotor speeds, motor torques of the elastic joints)",
        subscribes=(Topic("odom", "nav_msgs/Odometry"), Topic("joint_states", "sensor_msgs/JointState"),
                    Topic("reference", _REF),
                    Topic("motor_states", "sensor_msgs/JointState", "elastic joints in actuation_config"),
                    Topic("feedforward/jet", _JET), _DESC, _ARMED),
        publishes=(Topic("cmd/rotor_speeds", _ROTOR_MSG), Topic("cmd/motor_efforts", "sensor_msgs/JointState"),
                   Topic("cmd/joint_effort/<joint>", "std_msgs/Float64", "per_joint_effort_topics"), *_REJECTION,
                   _USED, _DIAG)),
    Executable(
        "geodyn_flat_controller", "geodyn_ros.ros.nodes.flat_controller_node",
        "flatness-based controller of the under-actuated (collinear) multirotor manipulator, geometric or LQR feedback",
        subscribes=(Topic("odom", "nav_msgs/Odometry"), Topic("joint_states", "sensor_msgs/JointState"),
                    Topic("motor_states", "sensor_msgs/JointState", "elastic joints in actuation_config"),
                    Topic("flat_reference", _FLAT),
                    Topic("desired/state", _DESIRED),
                    Topic("feedforward/flat_jet", _JET),
                    Topic("geodyn_node/linearization", _LIN,
                          "feedback lqr (name: parameter linearization_topic)"),
                    Topic("geodyn_node/linearization/labels", "std_msgs/String", "feedback lqr, message_types multiarray"), _DESC,
                    _ARMED),
        publishes=(Topic("cmd/rotor_speeds", _ROTOR_MSG), Topic("cmd/motor_efforts", "sensor_msgs/JointState"),
                   Topic("cmd/joint_effort/<joint>", "std_msgs/Float64", "per_joint_effort_topics"), *_REJECTION,
                   _USED, _DIAG)),
    Executable(
        "geodyn_markers", "geodyn_ros.ros.nodes.markers_node",
        "RViz markers of the feedforward wrench, the rotor thrusts and the CoM with its reference (only while subscribed)",
        subscribes=(Topic("odom", "nav_msgs/Odometry"), Topic("joint_states", "sensor_msgs/JointState"),
                    Topic("feedforward/jet", _JET),
                    Topic("reference", _REF),
                    Topic("flat_reference", _FLAT),
                    Topic("cmd/rotor_speeds", _ROTOR_MSG, "actuation_config set"), _DESC),
        publishes=(Topic("~/markers", "visualization_msgs/MarkerArray"), _DIAG)),
    Executable(
        "geodyn_px4_bridge", "geodyn_ros.ros.px4.bridge_node",
        "the ROS side of PX4's uXRCE-DDS interface: PX4's odometry as odom, the controllers' rotor speeds as PX4 "
        "offboard setpoints, the offboard proof of life and explicit arm/offboard actions (std_srvs/srv/Trigger "
        "services ~/arm, ~/disarm, ~/offboard)",
        subscribes=(Topic("/fmu/out/vehicle_odometry", "px4_msgs/VehicleOdometry", "name: parameter odometry_topic"),
                    Topic("/fmu/out/vehicle_status_v1", "px4_msgs/VehicleStatus", "name: parameter status_topic"),
                    Topic("cmd/rotor_speeds", _ROTOR_MSG)),
        publishes=(Topic("odom", "nav_msgs/Odometry"),
                   Topic("/fmu/in/offboard_control_mode", "px4_msgs/OffboardControlMode",
                         "while cmd/rotor_speeds is fresh (name: parameter offboard_control_mode_topic)"),
                   Topic("/fmu/in/vehicle_command", "px4_msgs/VehicleCommand",
                         "on an action (name: parameter vehicle_command_topic)"),
                   Topic("/fmu/in/vehicle_thrust_setpoint", "px4_msgs/VehicleThrustSetpoint",
                         "px4_mode thrust_and_torque (name: parameter thrust_setpoint_topic)"),
                   Topic("/fmu/in/vehicle_torque_setpoint", "px4_msgs/VehicleTorqueSetpoint",
                         "px4_mode thrust_and_torque (name: parameter torque_setpoint_topic)"),
                   Topic("/fmu/in/actuator_motors", "px4_msgs/ActuatorMotors",
                         "px4_mode direct_actuator (name: parameter actuator_motors_topic)"),
                   Topic("armed", "std_msgs/Bool", "on each change: PX4 armed and in offboard (latched)"), _DIAG)),
    Executable(
        "geodyn_px4_sim", "geodyn_ros.ros.px4.standin_node",
        "geodyn_actuated_sim behind a PX4 stand-in: the /fmu/in offboard topics drive the rotors through PX4's "
        "allocation and thrust model, with PX4's proof-of-life, arming and offboard-loss rules; PX4's odometry "
        "and status out",
        subscribes=(Topic("/fmu/in/offboard_control_mode", "px4_msgs/OffboardControlMode",
                          "name: parameter offboard_control_mode_topic"),
                    Topic("/fmu/in/vehicle_command", "px4_msgs/VehicleCommand", "name: parameter vehicle_command_topic"),
                    Topic("/fmu/in/vehicle_thrust_setpoint", "px4_msgs/VehicleThrustSetpoint",
                          "name: parameter thrust_setpoint_topic"),
                    Topic("/fmu/in/vehicle_torque_setpoint", "px4_msgs/VehicleTorqueSetpoint",
                          "name: parameter torque_setpoint_topic"),
                    Topic("/fmu/in/actuator_motors", "px4_msgs/ActuatorMotors", "name: parameter actuator_motors_topic"),
                    Topic("cmd/motor_efforts", "sensor_msgs/JointState"),
                    Topic("cmd/wrench", "geometry_msgs/WrenchStamped", "inherited from geodyn_sim (ideal inputs)"),
                    Topic("cmd/joint_efforts", "sensor_msgs/JointState", "inherited from geodyn_sim (ideal inputs)"),
                    _DESC),
        publishes=(Topic("/clock", "rosgraph_msgs/Clock"),
                   Topic("/fmu/out/vehicle_odometry", "px4_msgs/VehicleOdometry", "name: parameter odometry_topic"),
                   Topic("/fmu/out/vehicle_status_v1", "px4_msgs/VehicleStatus", "name: parameter status_topic"),
                   Topic("joint_states", "sensor_msgs/JointState"), Topic("motor_states", "sensor_msgs/JointState"),
                   *_TF, _DIAG)),
)

#: every console script: the nodes, then the whole-loop runner and the kernel warm-up
EXECUTABLES = NODES + (
    Executable("geodyn_closed_loop", "geodyn_ros.ros.loops.closed_loop",
               "a whole closed loop (simulator, reference, geodyn_node, controller) in one process", is_node=False),
    Executable("geodyn_warmup", "geodyn_ros.warmup",
               "compile the numba kernels ahead of time (make venv runs it)", is_node=False),
    Executable("geodyn_vehicle", "geodyn_ros.loops.vehicle_report",
               "the report of a vehicle (URDF + vehicle file): mass, allocation, hover, gains, discrete "
               "stability", is_node=False),
    Executable("geodyn_fly", "geodyn_ros.loops.fly",
               "fly a vehicle (URDF + vehicle file) in MuJoCo: its report, then every feedforward level and "
               "the error table", is_node=False),
)


def by_name(name: str) -> Executable:
    for e in EXECUTABLES:
        if e.name == name:
            return e
    raise ValueError(f"executable: unknown '{name}' (known: {', '.join(e.name for e in EXECUTABLES)})")


def all_topic_names() -> set[str]:
    """Every topic name of every node, as written in the table (``<joint>`` placeholders kept)."""
    return {t.name for e in NODES for t in e.subscribes + e.publishes}


def help_text(name: str, parameters: dict | None = None) -> str:
    """The ``--help`` text of a node executable: what it does, how to run it, its topics and its
    parameters (``parameters``: the module's ``PARAMETERS``, ``{name: (default, description)}``)."""
    e = by_name(name)
    lines = [f"{e.name}: {e.summary}.", "",
             f"usage: {e.name} [--namespace NS] [--ros-args -p name:=value ... -r from:=to ...]", ""]

    def topics(title, ts):
        lines.append(title)
        width = max(len(t.name) for t in ts)
        for t in ts:
            lines.append(f"  {t.name:<{width}}  {t.type}" + (f"  [{t.when}]" if t.when else ""))
        lines.append("")
    if e.subscribes:
        topics("subscribes:", e.subscribes)
    if e.publishes:
        topics("publishes:", e.publishes)
    if parameters:
        lines.append("parameters (--ros-args -p name:=value; reference: doc/reference/parameters.md):")
        for pname, (default, desc) in parameters.items():
            lines.append(f"  {pname} (default {default!r}): {desc}")
        lines.append("")
    lines.append("Topics, layouts and diagnostics: doc/reference/nodes.md.")
    return "\n".join(lines)
