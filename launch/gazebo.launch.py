"""The geodyn_ros loop in Gazebo (Harmonic / Ionic, through ros_gz) instead of MuJoCo.

    ros2 launch geodyn_ros gazebo.launch.py
    ros2 launch geodyn_ros gazebo.launch.py world:=/path/to/my_world.sdf use_feedforward:=false

Arguments
---------
urdf             robot model, run through xacro. Default:
                 share/geodyn_ros/urdf/aerial_manipulator_gazebo_plugins.xacro.
config           geodyn parameter file. Default: share/geodyn_ros/config/geodyn.yaml.
bridge_config    ros_gz_bridge file. Default: share/geodyn_ros/config/gz_bridge.yaml.
world            SDF world for `gz sim` (default: empty.sdf; read the notes below).
spawn_z          initial base height [m] (default 1.0, as initial_base_pose in the config).
order            derivative order r of geodyn_node and geodyn_reference (default 2).
use_feedforward  add the geodyn_node feedforward in the controller (default true).
"""

# ---------------------------------------------------------------------------------------
# NOT TESTED ON THE DEVELOPMENT MACHINE: it has no Gazebo and no ros_gz. The only check
# (test/test_launch_files.py) is that this file builds a launch description against stub
# launch modules and that its nodes and arguments are consistent. Please report problems.
#
# What the Gazebo side needs (requires the packages ros_gz_sim, ros_gz_bridge,
# ros_gz_interfaces and robot_state_publisher):
#
# Model plugins, in urdf/aerial_manipulator_gazebo_plugins.xacro (the shipped
# aerial_manipulator.urdf has no <gazebo> tags; that .xacro includes it and adds them, and
# is the default `urdf` here):
#   * gz-sim-odometry-publisher-system: odom_frame world, robot_base_frame base_link,
#     dimensions 3 -> /model/aerial_manipulator/odometry (gz.msgs.Odometry). Its twist
#     is in the base frame (REP 105) but is a finite difference of poses, and the linear
#     part is a 10-sample rolling mean, i.e. delayed: fine for the demo, not a true state.
#   * gz-sim-joint-state-publisher-system -> /world/<world>/model/aerial_manipulator/joint_state.
#   * one gz-sim-apply-joint-force-system per joint J2..J7: raw joint effort from
#     /model/aerial_manipulator/joint/<J>/cmd_force (gz.msgs.Double), held until the next
#     message. (gz-sim-joint-controller-system is NOT a substitute: its "force mode" is a
#     velocity PID that outputs a force, it does not apply a commanded torque.)
#
# World plugin, needed for the base wrench:
#   * gz-sim-apply-link-wrench-system must be attached to the WORLD (it refuses to load
#     inside a model), so it cannot come from the URDF. Gazebo's stock empty.sdf (the
#     default `world`) does NOT have it: without it nothing applies the base wrench and
#     the robot falls. Use a copy of empty.sdf with, inside <world name="empty">,
#         <plugin filename="gz-sim-apply-link-wrench-system"
#                 name="gz::sim::systems::ApplyLinkWrench"/>
#     and pass it as world:=/path/to/that.sdf. Keep the world name "empty" or edit the
#     wrench and joint_state topics in config/gz_bridge.yaml (they contain it).
#   * The system's /world/empty/wrench topic applies each gz.msgs.EntityWrench for ONE
#     physics step (world-frame force and torque, at the link's centre of mass), and
#     wrenches received during the same step are summed. The publisher must therefore
#     send exactly one wrench per physics step (default step 1 ms), with entity
#     {name: "aerial_manipulator::base_link", type: LINK}. (Its /wrench/persistent topic
#     is no alternative for a time-varying command: each message is added to a list and
#     applied forever, until cleared on /wrench/clear.)
#
# Bridged ROS topics (config/gz_bridge.yaml): /clock, odom, joint_states (what the
# controller and geodyn_node read), and the commands cmd/joint_effort/J2..J7
# (std_msgs/Float64; the controller publishes them with per_joint_effort_topics, set
# below) and cmd/entity_wrench (ros_gz_interfaces/EntityWrench).
#
# MISSING PIECE: the controller publishes the base wrench as cmd/wrench
# (geometry_msgs/WrenchStamped, base-link frame, about the base-link origin), while
# Gazebo needs an EntityWrench in WORLD coordinates, one per physics step. ros_gz_bridge
# does not convert message types or frames, and geodyn_ros has no relay node for it yet:
# until one is written (rotate force and torque by the base orientation from odom, fill
# entity {name: "aerial_manipulator::base_link", type: LINK}, publish on
# cmd/entity_wrench once per step), the base wrench is NOT applied in Gazebo.
#
# Timing: Gazebo is not lock-stepped with the ROS nodes, so the controller runs with
# sync_stamps false (latest inputs within its stale_timeout) instead of waiting for a
# state, reference and feedforward with one common stamp.
#
# Gravity: Gazebo's default is (0, 0, -9.81), the same as config/geodyn.yaml. The model
# has no collision geometry, so it does not touch the ground plane. It is spawned at
# (0, 0, spawn_z) with the base frame aligned with the world.
# ---------------------------------------------------------------------------------------

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

MODEL_NAME = "aerial_manipulator"


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    bridge_config = LaunchConfiguration("bridge_config")
    world = LaunchConfiguration("world")
    spawn_z = LaunchConfiguration("spawn_z")
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    use_feedforward = ParameterValue(LaunchConfiguration("use_feedforward"), value_type=bool)

    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)
    with_model = {"use_sim_time": True, "robot_description": robot_description}

    def geodyn(executable, overrides):
        return Node(
            package="geodyn_ros",
            executable=executable,
            name=executable,
            output="screen",
            parameters=[config, overrides],
        )

    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf",
            default_value=PathJoinSubstitution(
                [share, "urdf", "aerial_manipulator_gazebo_plugins.xacro"]),
            description="Robot model with the Gazebo plugins (run through xacro).",
        ),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution([share, "config", "geodyn.yaml"]),
            description="geodyn parameter YAML file keyed by node name.",
        ),
        DeclareLaunchArgument(
            "bridge_config",
            default_value=PathJoinSubstitution([share, "config", "gz_bridge.yaml"]),
            description="ros_gz_bridge YAML configuration.",
        ),
        DeclareLaunchArgument(
            "world", default_value="empty.sdf",
            description="SDF world; needs the ApplyLinkWrench world system (see the notes above).",
        ),
        DeclareLaunchArgument(
            "spawn_z", default_value="1.0",
            description="Initial height of the base [m].",
        ),
        DeclareLaunchArgument(
            "order", default_value="2",
            description="Derivative order r of the dynamics node and the reference.",
        ),
        DeclareLaunchArgument(
            "use_feedforward", default_value="true",
            description="Add the geodyn_node feedforward in the controller (false = PD only).",
        ),
        # Gazebo server + GUI; -r starts the simulation immediately.
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
            launch_arguments={"gz_args": ["-r ", world]}.items(),
        ),
        # Publishes robot_description (latched) for the spawner, and TF of the joints.
        Node(
            package="robot_state_publisher",
            executable="robot_state_publisher",
            name="robot_state_publisher",
            output="screen",
            parameters=[with_model],
        ),
        # Spawns the model from the robot_description topic.
        Node(
            package="ros_gz_sim",
            executable="create",
            name="spawn_" + MODEL_NAME,
            output="screen",
            arguments=["-topic", "robot_description", "-name", MODEL_NAME, "-z", spawn_z],
            parameters=[{"use_sim_time": True}],
        ),
        # ROS <-> Gazebo topics, see config/gz_bridge.yaml.
        Node(
            package="ros_gz_bridge",
            executable="parameter_bridge",
            name="gz_bridge",
            output="screen",
            parameters=[{"config_file": bridge_config, "use_sim_time": True}],
        ),
        geodyn("geodyn_reference", {"use_sim_time": True, "order": order}),
        geodyn("geodyn_node", dict(with_model, order=order)),
        geodyn("geodyn_controller", dict(
            with_model, use_feedforward=use_feedforward,
            per_joint_effort_topics=True, sync_stamps=False)),
    ])
