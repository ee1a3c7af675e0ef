"""The under-actuated closed loop in MuJoCo: a collinear hexarotor carrying the arm, flown by flatness.

    ros2 launch geodyn_ros underactuated_sim.launch.py                 # level ff2
    ros2 launch geodyn_ros underactuated_sim.launch.py level:=rigid    # today's rigid-body practice
    ros2 launch geodyn_ros underactuated_sim.launch.py feedback:=lqr   # time-varying LQR feedback
    ros2 launch geodyn_ros underactuated_sim.launch.py namespace:=robot1 frame_prefix:=robot1/
    ros2 launch geodyn_ros underactuated_sim.launch.py mission:=mission.yaml   # a waypoint mission

Nodes (package geodyn_ros; all but geodyn_actuated_sim run on the simulated time that it
publishes on /clock; it must run on the wall clock):

geodyn_actuated_sim     MuJoCo model of the URDF with the rotors (gz-sim MulticopterMotorModel
                        lag) and the elastic joints of config/hexarotor.yaml; applies
                        cmd/rotor_speeds and cmd/motor_efforts, publishes /clock, odom,
                        joint_states and motor_states (lock-step), started on the reference.
geodyn_reference        trajectory figure_eight (or waypoints with mission:=FILE): the flat
                        outputs (CoM, yaw, joints) on flat_reference.
geodyn_node             input_mode flat: desired/state, feedforward/flat_jet (thrust, body
                        torque, joint torques) and feedforward/rotor_speeds, rotor joints locked;
                        with feedback lqr also ~/linearization (body representation).
geodyn_flat_controller  rotor speeds and motor torques (level rigid, ff0, ff1 or ff2; feedback
                        geometric or lqr).

Arguments
---------
urdf          robot with rotor links, run through xacro. Default:
              share/geodyn_ros/urdf/hexarotor_manipulator.urdf.xacro.
config        parameter file keyed by node name. Default: share/geodyn_ros/config/underactuated.yaml
              (starts the robot and its actuators on the figure eight; the other values are the
              nodes' defaults, documented in config/geodyn.yaml).
actuation     actuation YAML of the simulator, geodyn_node and the controller. Default:
              share/geodyn_ros/config/hexarotor.yaml (gz-sim's X4 rotors, elastic arm joints).
order         derivative order r of geodyn_node and geodyn_reference (default 2).
level         rigid, ff0, ff1 or ff2 (default ff2; ff1 needs order >= 1, ff2 order >= 2).
feedback      geometric (Lee's controller, default) or lqr (the time-varying LQR on geodyn_node's
              linearization, gains recomputed at 100 Hz on a background thread; needs level ff2;
              weights: the controller's lqr_weights, default config/lqr.yaml).
speed         time scaling of the figure eight (default 1.0).
mission       a waypoint mission YAML (e.g. share/geodyn_ros/config/mission_example.yaml; schema:
              geodyn_ros.planning.mission) instead of the figure eight: geodyn_reference plans it
              (trajectory waypoints, checked on the whole body with the actuation YAML) and the
              simulator starts on the plan's first knot. Default empty: the figure eight.
namespace     ROS namespace of the four nodes (default empty: the root); /clock and /diagnostics
              stay global, so run one simulation per ROS domain.
frame_prefix  prefixed to the URDF link names in frame ids by the simulator, geodyn_node and the
              controller (default empty); world_frame is not prefixed.
markers       true: also geodyn_markers (the feedforward wrench, the rotor thrusts of the actuation
              YAML, the CoM and the flat reference's; doc/howto/rviz.md). Default false.
rviz          true: also rviz2 with share/geodyn_ros/config/geodyn.rviz (with mission:=FILE it
              shows the planned path; needs RViz, not on PyPI). Default false.

message_types    typed (default: geodyn_msgs on the jet topics) or multiarray (the deprecated
                 std_msgs/Float64MultiArray layouts, removed after release 0.2), for every geodyn node.

A namespace or frame prefix that ROS would refuse stops the launch with one line naming it.

The same loop without ROS launch, in one process: ``geodyn_closed_loop --underactuated``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import LOCKSTEP_INPUTS, message_types_argument, namespace_arguments, with_message_types


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    actuation = ParameterValue(LaunchConfiguration("actuation"), value_type=str)
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    level = ParameterValue(LaunchConfiguration("level"), value_type=str)
    speed = ParameterValue(LaunchConfiguration("speed"), value_type=float)
    feedback = ParameterValue(LaunchConfiguration("feedback"), value_type=str)
    # geodyn_node publishes ~/linearization only for the LQR (it costs a linearization per cycle)
    linearize = ParameterValue(PythonExpression(["'", LaunchConfiguration("feedback"), "' == 'lqr'"]),
                               value_type=bool)

    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)
    frame_prefix = ParameterValue(LaunchConfiguration("frame_prefix"), value_type=str)
    # Overrides after the config file. geodyn_actuated_sim is the /clock source: it refuses
    # use_sim_time true.
    with_model = {"use_sim_time": True, "robot_description": robot_description, "frame_prefix": frame_prefix,
                  "actuation_config": actuation}

    # mission:=FILE: the argument check (geodyn_ros_launch) sets these two; without a mission the
    # simulator reads the config file a second time (no change) and the reference flies the figure eight
    sim_start = LaunchConfiguration("mission_sim_start", default=config)
    trajectory = ParameterValue(LaunchConfiguration("reference_trajectory", default="figure_eight"), value_type=str)
    mission = ParameterValue(LaunchConfiguration("mission"), value_type=str)

    def geodyn(executable, overrides, files=(), **kw):
        return Node(
            package="geodyn_ros",
            executable=executable,
            name=executable,
            namespace=LaunchConfiguration("namespace"),
            output="screen",
            parameters=[config, *files, with_message_types(executable, overrides)],
            **kw,
        )

    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf",
            default_value=PathJoinSubstitution([share, "urdf", "hexarotor_manipulator.urdf.xacro"]),
            description="Robot with rotor links (run through xacro).",
        ),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution([share, "config", "underactuated.yaml"]),
            description="Parameter YAML file keyed by node name.",
        ),
        DeclareLaunchArgument(
            "actuation",
            default_value=PathJoinSubstitution([share, "config", "hexarotor.yaml"]),
            description="Actuation YAML (rotor geometry and constants, elastic joints).",
        ),
        DeclareLaunchArgument(
            "order", default_value="2",
            description="Derivative order r of the dynamics node and the reference.",
        ),
        DeclareLaunchArgument(
            "level", default_value="ff2",
            description="rigid, ff0, ff1 (+ rotor-lag compensation) or ff2 (+ elastic-joint compensation).",
        ),
        DeclareLaunchArgument(
            "feedback", default_value="geometric",
            description="geometric (Lee's controller) or lqr (time-varying LQR on geodyn_node's linearization).",
        ),
        DeclareLaunchArgument(
            "speed", default_value="1.0",
            description="Time scaling of the figure-eight reference.",
        ),
        DeclareLaunchArgument(
            "mission", default_value="",
            description="Waypoint mission YAML flown instead of the figure eight (empty: the figure eight).",
        ),
        DeclareLaunchArgument(
            "markers", default_value="false",
            description="true: also geodyn_markers (RViz markers of the wrench, rotor thrusts and CoM).",
        ),
        DeclareLaunchArgument(
            "rviz", default_value="false",
            description="true: also rviz2 with config/geodyn.rviz (RViz must be installed).",
        ),
        message_types_argument(),
        *namespace_arguments("ROS namespace of the nodes (empty = the root); /clock and /diagnostics stay global."),
        geodyn("geodyn_actuated_sim", dict(with_model, use_sim_time=False), files=[sim_start]),
        geodyn("geodyn_reference", {"use_sim_time": True, "order": order, "speed": speed, "trajectory": trajectory,
                                    "mission": mission, "robot_description": robot_description,
                                    "actuation_config": actuation}),
        geodyn("geodyn_node", dict(with_model, **LOCKSTEP_INPUTS, order=order, publish_linearization=linearize)),
        geodyn("geodyn_flat_controller", dict(with_model, **LOCKSTEP_INPUTS, order=order, level=level,
                                              feedback=feedback)),
        # the rotors of the actuation file; the CoM reference is the flat reference's c
        geodyn("geodyn_markers", dict(with_model), condition=IfCondition(LaunchConfiguration("markers"))),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
             namespace=LaunchConfiguration("namespace"), parameters=[{"use_sim_time": True}],
             arguments=["-d", PathJoinSubstitution([share, "config", "geodyn.rviz"])],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
