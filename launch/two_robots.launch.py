"""Two robots on one ROS domain: geodyn.launch.py twice, under two namespaces.

    ros2 launch geodyn_ros two_robots.launch.py
    python -m geodyn_ros.examples.two_robots --external    # feeds both, checks every output

Starts

/robot1/geodyn_node  robot1_urdf (default: the paper's aerial manipulator), frame_prefix robot1/
/robot2/geodyn_node  robot2_urdf (default: share/geodyn_ros/urdf/quadruped.urdf, 12 joints,
                     base link `trunk`), frame_prefix robot2/

both in input_mode measured (input_policy exact: the example's feeder sends stamped sets): each reads reference, odom and joint_states in its own namespace
and publishes feedforward/* there (/robot1/feedforward/jet, /robot2/feedforward/jet, ...).
Both read the `/**/geodyn_node` section of the same config file; /diagnostics is shared, with
status names robot1/geodyn_node: ... and robot2/geodyn_node: ...

Arguments
---------
robot1_urdf, robot2_urdf   URDF or xacro files of the two robots.
config                     parameter file (default share/geodyn_ros/config/geodyn.yaml).
order                      derivative order r of both nodes (default 2).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

#: (namespace, URDF argument) of each robot; frame_prefix is "<namespace>/"
ROBOTS = (("robot1", "robot1_urdf"), ("robot2", "robot2_urdf"))


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")

    def robot(namespace, urdf_argument):
        # a scoped group: the arguments given to this include do not leak into the other one
        return GroupAction([IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "geodyn.launch.py"])),
            launch_arguments={
                "namespace": namespace,
                "frame_prefix": namespace + "/",
                "urdf": LaunchConfiguration(urdf_argument),
                "config": LaunchConfiguration("config"),
                "order": LaunchConfiguration("order"),
                "input_mode": "measured",
                "input_policy": "exact",   # the example's feeder sends odom and joint_states of one stamp
            }.items(),
        )])

    return LaunchDescription([
        DeclareLaunchArgument(
            "robot1_urdf",
            default_value=PathJoinSubstitution([share, "urdf", "aerial_manipulator.urdf"]),
            description="URDF or xacro file of robot 1 (namespace robot1).",
        ),
        DeclareLaunchArgument(
            "robot2_urdf",
            default_value=PathJoinSubstitution([share, "urdf", "quadruped.urdf"]),
            description="URDF or xacro file of robot 2 (namespace robot2).",
        ),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution([share, "config", "geodyn.yaml"]),
            description="Parameter YAML file keyed by node name (/**/geodyn_node applies to both).",
        ),
        DeclareLaunchArgument(
            "order", default_value="2",
            description="Derivative order r of both dynamics nodes.",
        ),
        *(robot(ns, arg) for ns, arg in ROBOTS),
    ])
