"""Closed loop with the MuJoCo simulator: simulator, reference, dynamics node, controller.

    ros2 launch geodyn_ros sim.launch.py
    ros2 launch geodyn_ros sim.launch.py use_feedforward:=false   # PD only, for comparison
    ros2 launch geodyn_ros sim.launch.py namespace:=robot1 frame_prefix:=robot1/

Nodes (all package geodyn_ros; all but geodyn_sim run on the simulated time that
geodyn_sim publishes on /clock; geodyn_sim itself must run on the wall clock):

geodyn_sim         MuJoCo model of the URDF; applies the commanded base wrench and joint
                   torques, publishes /clock, odom and joint_states (lock-step by default).
geodyn_reference   the reference trajectory jet (config: trajectory, rate_hz, ...).
geodyn_node        feedforward base wrench / joint torques (+ derivatives) for the reference.
geodyn_controller  PD tracking + the feedforward (if use_feedforward), commands the simulator.

Arguments
---------
urdf             URDF or xacro file (run through xacro -> robot_description).
                 Default: share/geodyn_ros/urdf/aerial_manipulator.urdf.
config           parameter file keyed by node name. Default: share/geodyn_ros/config/geodyn.yaml.
order            derivative order r for geodyn_node and geodyn_reference (default 2).
use_feedforward  add geodyn_node's feedforward in the controller (default true).
namespace        ROS namespace of the four nodes (default empty: the root); their topics are
                 relative and move with it. /clock (published by geodyn_sim) and /diagnostics
                 stay global, so run one simulation per ROS domain.
frame_prefix     prefixed to the URDF link names in frame ids (odometry child frame, wrench
                 frames) by geodyn_sim, geodyn_node and geodyn_controller (default empty);
                 world_frame is not prefixed.

markers            true: also geodyn_markers (RViz markers of the feedforward wrench, the rotor
                   thrusts and the CoM on ~/markers; doc/howto/rviz.md). Default false.
rviz               true: also rviz2 with share/geodyn_ros/config/geodyn.rviz (needs RViz, not
                   installable from PyPI). Default false.

message_types    typed (default: geodyn_msgs on the jet topics) or multiarray (the deprecated
                 std_msgs/Float64MultiArray layouts, removed after release 0.2), for every geodyn node.

A namespace or frame prefix that ROS would refuse stops the launch with one line naming it.

The same loop without ROS launch (one process, no DDS) is the console script
``geodyn_closed_loop``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import LOCKSTEP_INPUTS, message_types_argument, namespace_arguments, with_message_types


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    use_feedforward = ParameterValue(LaunchConfiguration("use_feedforward"), value_type=bool)

    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)
    # Overrides after the config file. geodyn_reference needs no model, so it gets no
    # robot_description. geodyn_sim is the /clock source: it refuses use_sim_time true.
    frame_prefix = ParameterValue(LaunchConfiguration("frame_prefix"), value_type=str)
    with_model = {"use_sim_time": True, "robot_description": robot_description, "frame_prefix": frame_prefix}

    def geodyn(executable, overrides, **kw):
        return Node(
            package="geodyn_ros",
            executable=executable,
            name=executable,
            namespace=LaunchConfiguration("namespace"),
            output="screen",
            parameters=[config, with_message_types(executable, overrides)],
            **kw,
        )

    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf",
            default_value=PathJoinSubstitution([share, "urdf", "aerial_manipulator.urdf"]),
            description="URDF or xacro file of the robot (run through xacro).",
        ),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution([share, "config", "geodyn.yaml"]),
            description="Parameter YAML file keyed by node name.",
        ),
        DeclareLaunchArgument(
            "order", default_value="2",
            description="Derivative order r of the dynamics node and the reference.",
        ),
        DeclareLaunchArgument(
            "use_feedforward", default_value="true",
            description="Add the geodyn_node feedforward in the controller (false = PD only).",
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
        geodyn("geodyn_sim", dict(with_model, use_sim_time=False)),
        geodyn("geodyn_reference", {"use_sim_time": True, "order": order}),
        geodyn("geodyn_node", dict(with_model, **LOCKSTEP_INPUTS, order=order)),
        geodyn("geodyn_controller", dict(with_model, **LOCKSTEP_INPUTS, use_feedforward=use_feedforward)),
        geodyn("geodyn_markers", dict(with_model),
               condition=IfCondition(LaunchConfiguration("markers"))),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
             namespace=LaunchConfiguration("namespace"), parameters=[{"use_sim_time": True}],
             arguments=["-d", PathJoinSubstitution([share, "config", "geodyn.rviz"])],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
