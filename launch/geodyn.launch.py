"""The geodyn_ros dynamics node on its own.

    ros2 launch geodyn_ros geodyn.launch.py
    ros2 launch geodyn_ros geodyn.launch.py urdf:=/path/to/robot.urdf.xacro order:=3 \
        input_mode:=measured use_sim_time:=true
    ros2 launch geodyn_ros geodyn.launch.py namespace:=robot1 frame_prefix:=robot1/

Arguments
---------
urdf          URDF or xacro file; it is run through ``xacro`` and passed to the node as
              the ``robot_description`` parameter. Default: the shipped
              share/geodyn_ros/urdf/aerial_manipulator.urdf (a plain URDF is valid
              xacro input).
config        parameter file, keyed by node name. Default: share/geodyn_ros/config/geodyn.yaml.
use_sim_time  use /clock (true) or the wall clock (false, default).
order         derivative order r of the published wrench/torque jets (default 2).
input_mode    "reference" (default), "measured" or "flat" (a collinear multirotor's flat outputs on
              flat_reference; give actuation_config); see config/geodyn.yaml.
actuation_config  the vehicle file (or a shipped name such as hexarotor) for flat mode and for
              the joints a vehicle file locks; default empty (none).
input_policy  measured mode: "latest" (default: real sensors, a cycle per odom with the newest
              joint_states propagated to its stamp) or "exact" (stamp pairing: feeders of stamped
              sets, lock-step simulators); see doc/reference/nodes.md.
namespace     ROS namespace of the node (default empty: the root). Its topics are relative, so
              they move with it (/robot1/reference, /robot1/feedforward/jet, ...); /diagnostics
              stays global. The config file's `/**/geodyn_node` section applies in any namespace.
frame_prefix  prefixed to the URDF link names in frame ids (default empty), e.g. robot1/ ->
              feedforward/wrench in robot1/base_link; world_frame is not prefixed.
message_types "typed" (default: the geodyn_msgs messages on reference, feedforward/jet, ...) or
              "multiarray" (the std_msgs/Float64MultiArray layouts of release 0.1; deprecated,
              removed after release 0.2). Every node that talks to this one must use the same.

A namespace or frame prefix that ROS would refuse stops the launch with one line naming it.

The launch arguments override the values of the same name in the config file; every
other parameter comes from the config file.

This file installs to share/geodyn_ros/launch (setup.py data_files).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import message_types_argument, namespace_arguments


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    use_sim_time = LaunchConfiguration("use_sim_time")
    order = LaunchConfiguration("order")
    input_mode = LaunchConfiguration("input_mode")
    input_policy = LaunchConfiguration("input_policy")

    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)

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
            "use_sim_time", default_value="false",
            description="Use the /clock topic as time source.",
        ),
        DeclareLaunchArgument(
            "order", default_value="2",
            description="Derivative order r of the published wrench/torque jets.",
        ),
        DeclareLaunchArgument(
            "input_mode", default_value="reference",
            choices=["reference", "measured", "flat"],
            description="Motion source: the reference jet, the measured state, or the flat outputs (flat_reference; "
                        "needs actuation_config).",
        ),
        DeclareLaunchArgument(
            "input_policy", default_value="latest",
            choices=["latest", "exact"],
            description="Measured mode: 'latest' (real sensors: a cycle per odom, the newest joint_states "
                        "propagated to it) or 'exact' (stamp pairing, for feeders and lock-step simulators).",
        ),
        DeclareLaunchArgument(
            "actuation_config", default_value="",
            description="Vehicle file or shipped name (e.g. hexarotor): flat mode's rotors; the joints it locks.",
        ),
        message_types_argument(),
        *namespace_arguments("ROS namespace of the node (empty = the root); topics follow it."),
        Node(
            package="geodyn_ros",
            executable="geodyn_node",
            name="geodyn_node",
            namespace=LaunchConfiguration("namespace"),
            output="screen",
            parameters=[
                config,
                {
                    "robot_description": robot_description,
                    "use_sim_time": ParameterValue(use_sim_time, value_type=bool),
                    "order": ParameterValue(order, value_type=int),
                    "input_mode": ParameterValue(input_mode, value_type=str),
                    "input_policy": ParameterValue(input_policy, value_type=str),
                    "actuation_config": ParameterValue(LaunchConfiguration("actuation_config"), value_type=str),
                    "frame_prefix": ParameterValue(LaunchConfiguration("frame_prefix"), value_type=str),
                    "message_types": ParameterValue(LaunchConfiguration("message_types"), value_type=str),
                },
            ],
        ),
    ])
