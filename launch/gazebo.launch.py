"""The actuated geodyn_ros loop in Gazebo (Harmonic / Ionic, through ros_gz) instead of MuJoCo.

    ros2 launch geodyn_ros gazebo.launch.py
    ros2 launch geodyn_ros gazebo.launch.py feedforward_order:=0 use_feedforward:=true
    ros2 launch geodyn_ros gazebo.launch.py namespace:=robot1

Arguments
---------
urdf               robot model, run through xacro. Default:
                   share/geodyn_ros/urdf/tilthex_manipulator_gazebo.xacro (the paper's robot on a
                   TiltHex base with six rotors driven by gz-sim's MulticopterMotorModel).
config             geodyn parameter file. Default: share/geodyn_ros/config/geodyn.yaml.
bridge_config      ros_gz_bridge file. Default: share/geodyn_ros/config/gz_bridge.yaml.
world              SDF world for `gz sim` (default: empty.sdf).
spawn_x, spawn_z   initial base position [m] (default 1.0, 0.0: where the Table 3 reference starts;
                   the base is held there until the loop runs, so it starts on its reference. The
                   models have no collisions: the paper's circle at z = 0 is flown through gz's
                   ground plane).
order              derivative order r of geodyn_node and geodyn_reference (default 2).
use_feedforward    add the feedforward in the controller (default true; false = the "pd" row).
feedforward_order  0: allocation of W_b only; 1: + rotor-lag compensation (default). The
                   elastic-joint level 2 needs series-elastic joints, which Gazebo does not
                   simulate: the arm joints are rigid here (elastic_joints false).
namespace          ROS namespace of every node this file starts (robot_state_publisher, the
                   spawner, the bridge and the geodyn nodes; default empty: the root). The ROS
                   side of the bridge moves with it (/robot1/odom, /robot1/cmd/rotor_speeds, ...;
                   /clock and /diagnostics stay global). The Gazebo side does not: the model name
                   and the gz topics of config/gz_bridge.yaml and the xacro are fixed, so this
                   runs one robot per Gazebo world. No frame_prefix here: gz-sim's odometry
                   publisher names the frames itself (world, base_link).

message_types    typed (default: geodyn_msgs on the jet topics) or multiarray (the deprecated
                 std_msgs/Float64MultiArray layouts, removed after release 0.2), for every geodyn node.

A namespace that ROS would refuse stops the launch with one line naming it.
"""

# ---------------------------------------------------------------------------------------
# FLOWN in gz-sim 8.14 with ros_gz 1.0.5 under the real launch_ros (test/gazebo/test_gz_fly.py:
# base RMS 0.22 mm on Table 3 at update_rate:=250; doc/howto/gazebo.md). Without Gazebo,
# test/ros/loops/test_launch_files.py checks the description against stub launch modules, the
# xacro's plugin element names against the gz-sim sources, and the bridge pairs.
#
# Gazebo side (needs ros_gz_sim, ros_gz_bridge, robot_state_publisher, actuator_msgs):
#   * urdf/tilthex_manipulator_gazebo.xacro: six rotor links on continuous joints, each with a
#     gz-sim-multicopter-motor-model-system (actuator_number 0..5, the constants of
#     config/tilthex.yaml, the same as the MuJoCo model), gz-sim-odometry-publisher-system
#     (1 kHz), gz-sim-joint-state-publisher-system and one gz-sim-apply-joint-force-system
#     per arm joint J2..J7.
#   * The rotors produce the base wrench: no ApplyLinkWrench world system and no
#     EntityWrench relay are needed any more (the former documented gap is gone).
#
# Bridged ROS topics (config/gz_bridge.yaml): /clock, odom, joint_states (read by the
# controller and geodyn_node), cmd/rotor_speeds (actuator_msgs/Actuators ->
# gz.msgs.Actuators on /aerial_manipulator/command/motor_speed) and cmd/joint_effort/J2..J7.
#
# Models: geodyn_node and geodyn_actuated_controller load the same xacro; the rotor joints
# are locked (rigid) in their dynamics model (geodyn_node: locked_joints below; the
# controller locks the actuation_config rotor joints itself). geodyn_node publishes the
# body-frame jet (output_representation body) that the allocation needs.
#
# Timing: Gazebo is not lock-stepped with the ROS nodes, so the controller runs with
# sync_stamps false, under input_policy exact (the pairing this loop was tuned with; Gazebo
# publishes odom and joint_states at the same steps). gz-sim's OdometryPublisher's first ~10 samples carry huge linear
# velocities: the controller ignores odometry for the first odom_startup_discard = 0.05 s.
# Its angular velocity is a 10-sample mean (~5 ms late at 1 kHz), not corrected.
# ---------------------------------------------------------------------------------------

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import GZ_START_TOPIC, gazebo_actions, gazebo_arguments, message_types_argument, namespace_arguments, with_message_types

MODEL_NAME = "aerial_manipulator"
# the continuous rotor joints of tilthex_manipulator_gazebo.xacro (config/tilthex.yaml rotor_prefix)
ROTOR_JOINTS = ",".join(f"rotor_{i}_joint" for i in range(1, 7))


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    bridge_config = LaunchConfiguration("bridge_config")
    world = LaunchConfiguration("world")
    spawn_z = LaunchConfiguration("spawn_z")
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    use_feedforward = ParameterValue(LaunchConfiguration("use_feedforward"), value_type=bool)
    feedforward_order = ParameterValue(LaunchConfiguration("feedforward_order"), value_type=int)

    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)
    with_model = {"use_sim_time": True, "robot_description": robot_description}
    namespace = LaunchConfiguration("namespace")

    def geodyn(executable, overrides):
        return Node(
            package="geodyn_ros",
            executable=executable,
            name=executable,
            namespace=namespace,
            output="screen",
            parameters=[config, with_message_types(executable, overrides)],
        )

    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf",
            default_value=PathJoinSubstitution(
                [share, "urdf", "tilthex_manipulator_gazebo.xacro"]),
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
            description="SDF world for gz sim.",
        ),
        DeclareLaunchArgument(
            "spawn_x", default_value="1.0",
            description="Initial x of the base [m] (default: where the Table 3 reference starts, (1, 0, 0)).",
        ),
        DeclareLaunchArgument(
            "spawn_z", default_value="0.0",
            description="Initial height of the base [m] (default: the Table 3 reference's, 0).",
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
            "feedforward_order", default_value="1",
            description="0: allocation only; 1: + rotor-lag compensation (2 needs elastic joints).",
        ),
        message_types_argument(),
        *gazebo_arguments(),
        *namespace_arguments("ROS namespace of every node (empty = the root); one robot per Gazebo world.",
                             frame_prefix=False),
        # gz sim, robot_state_publisher, the spawner and the bridge (config/gz_bridge.yaml)
        *gazebo_actions(world, with_model, namespace, MODEL_NAME, spawn_z, bridge_config,
                        spawn={"x": LaunchConfiguration("spawn_x"), "z": spawn_z}),
        geodyn("geodyn_reference", {"use_sim_time": True, "start_topic": GZ_START_TOPIC, "order": order}),
        geodyn("geodyn_node", dict(with_model, input_policy="exact", order=order, output_representation="body",
                                   locked_joints=ROTOR_JOINTS)),
        geodyn("geodyn_actuated_controller", dict(
            with_model, use_feedforward=use_feedforward, feedforward_order=feedforward_order,
            order=order, elastic_joints=False, per_joint_effort_topics=True, input_policy="exact", sync_stamps=False,
            odom_startup_discard=0.05)),
    ])
