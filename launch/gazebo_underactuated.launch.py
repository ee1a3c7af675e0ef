"""The under-actuated loop in Gazebo (Harmonic / Ionic, through ros_gz): the collinear hexarotor
carrying the arm, flown along the figure eight by flatness, instead of MuJoCo.

    ros2 launch geodyn_ros gazebo_underactuated.launch.py                 # level ff1
    ros2 launch geodyn_ros gazebo_underactuated.launch.py level:=rigid    # rigid-body feedforward
    ros2 launch geodyn_ros gazebo_underactuated.launch.py speed:=0.5 namespace:=robot1

What runs: gz sim (the world), robot_state_publisher (robot_description for the spawner),
ros_gz_sim create (spawns the model as "aerial_manipulator"), ros_gz_bridge parameter_bridge
(config/gz_bridge.yaml, the same file as gazebo.launch.py), and geodyn_reference (trajectory
figure_eight, on flat_reference), geodyn_node (input_mode flat: desired/state,
feedforward/flat_jet, feedforward/rotor_speeds; rotor joints locked) and geodyn_flat_controller
(cmd/rotor_speeds -> the rotors' MulticopterMotorModel, cmd/joint_effort/J2..J7 -> ApplyJointForce).

Arguments
---------
urdf          robot model with the Gazebo plugins, run through xacro (with
              actuation_config:=<actuation>). Default:
              share/geodyn_ros/urdf/hexarotor_manipulator_gazebo.xacro.
config        parameter file keyed by node name. Default: share/geodyn_ros/config/underactuated.yaml
              (the MuJoCo loop's file: same gains and level section; its geodyn_actuated_sim
              section is not used here). trajectory figure_eight and input_mode flat are set by
              this launch file on top, so config/geodyn.yaml works too.
actuation     actuation YAML of the model (xacro), geodyn_node and the controller. Default:
              share/geodyn_ros/config/hexarotor.yaml (gz-sim's X4 rotors).
bridge_config ros_gz_bridge file. Default: share/geodyn_ros/config/gz_bridge.yaml.
world         SDF world for `gz sim` (default: empty.sdf; the bridge's joint_state topic assumes
              the world is named "empty").
spawn_z       initial base height [m] (default 1.104218: the base where the figure eight starts,
              CoM 1.0 m with the arms hanging; held there until the loop runs).
order         derivative order r of geodyn_node, geodyn_reference and the controller (default 2).
level         rigid, ff0, ff1 or ff2 (default ff1: + rotor-lag compensation). With the rigid
              joints of Gazebo (elastic_joints false here) ff2 commands the same as ff1: its
              elastic-joint term needs series-elastic joints, which gz-sim does not simulate.
speed         time scaling of the figure eight (default 1.0).
namespace     ROS namespace of every node this file starts (default empty: the root). The ROS side
              of the bridge moves with it; /clock and /diagnostics stay global. The Gazebo side
              does not (fixed model name and gz topics): one robot per Gazebo world. No
              frame_prefix: gz-sim's odometry publisher names the frames itself (world, base_link).

message_types    typed (default: geodyn_msgs on the jet topics) or multiarray (the deprecated
                 std_msgs/Float64MultiArray layouts, removed after release 0.2), for every geodyn node.

A namespace that ROS would refuse stops the launch with one line naming it.
"""

# ---------------------------------------------------------------------------------------
# FLOWN in gz-sim 8.14 with ros_gz 1.0.5 under the real launch_ros (test/gazebo/test_gz_fly.py:
# CoM RMS 1.3 mm at ff1, 2.8 mm at ff0, 11.3 mm rigid, at update_rate:=250; doc/howto/gazebo.md).
# Without Gazebo, test/ros/loops/test_launch_files.py and test/ros/gazebo/test_gazebo_underactuated.py
# check the description against stub launch modules, the parameters against the nodes' tables, the
# xacro's plugin element names against the gz-sim 8 sources, and the bridge pairs.
#
# Differences from the MuJoCo loop (underactuated_sim.launch.py):
#   * rigid arm joints: elastic_joints false, cmd/joint_effort/<joint> per joint
#     (per_joint_effort_topics true), level ff1 by default;
#   * no lock-step: sync_stamps false (inputs combined by age, stale_timeout);
#   * gz-sim's OdometryPublisher's first ~10 samples carry huge linear velocities: the controller
#     ignores odometry for its first odom_startup_discard = 0.05 s; its angular velocity is a
#     10-sample mean (~5 ms late at 1 kHz), not corrected;
#   * the robot is spawned at rest at (0, 0, spawn_z), where the figure eight starts, and held
#     there; the reference waits at rest at its start and, on the release, speeds up from rest
#     over geodyn_reference's start_ramp (3 s: a time warp, exact in every derivative).
# ---------------------------------------------------------------------------------------

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import GZ_START_TOPIC, gazebo_actions, gazebo_arguments, message_types_argument, namespace_arguments, with_message_types

MODEL_NAME = "aerial_manipulator"


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    actuation = LaunchConfiguration("actuation")
    bridge_config = LaunchConfiguration("bridge_config")
    world = LaunchConfiguration("world")
    spawn_z = LaunchConfiguration("spawn_z")
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    level = ParameterValue(LaunchConfiguration("level"), value_type=str)
    speed = ParameterValue(LaunchConfiguration("speed"), value_type=float)
    actuation_config = ParameterValue(actuation, value_type=str)
    namespace = LaunchConfiguration("namespace")

    # One actuation YAML for the gz plugins (xacro arg) and the nodes (actuation_config).
    robot_description = ParameterValue(Command(["xacro ", urdf, " actuation_config:=", actuation]),
                                       value_type=str)
    with_model = {"use_sim_time": True, "robot_description": robot_description}

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
            default_value=PathJoinSubstitution([share, "urdf", "hexarotor_manipulator_gazebo.xacro"]),
            description="Robot model with the Gazebo plugins (run through xacro with actuation_config:=<actuation>).",
        ),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution([share, "config", "underactuated.yaml"]),
            description="Parameter YAML file keyed by node name.",
        ),
        DeclareLaunchArgument(
            "actuation",
            default_value=PathJoinSubstitution([share, "config", "hexarotor.yaml"]),
            description="Actuation YAML (rotor geometry and constants) of the model and the nodes.",
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
            "spawn_z", default_value="1.104218",
            description="Initial height of the base [m] (default: where the figure eight starts, "
                        "config/underactuated.yaml's start state).",
        ),
        DeclareLaunchArgument(
            "order", default_value="2",
            description="Derivative order r of the dynamics node, the reference and the controller.",
        ),
        DeclareLaunchArgument(
            "level", default_value="ff1",
            description="rigid, ff0 or ff1 (+ rotor-lag compensation); ff2 = ff1 on Gazebo's rigid joints.",
        ),
        DeclareLaunchArgument(
            "speed", default_value="1.0",
            description="Time scaling of the figure-eight reference.",
        ),
        message_types_argument(),
        *gazebo_arguments(),
        *namespace_arguments("ROS namespace of every node (empty = the root); one robot per Gazebo world.",
                             frame_prefix=False),
        # gz sim, robot_state_publisher, the spawner and the bridge (config/gz_bridge.yaml)
        *gazebo_actions(world, with_model, namespace, MODEL_NAME, spawn_z, bridge_config),
        geodyn("geodyn_reference", {"use_sim_time": True, "start_topic": GZ_START_TOPIC, "trajectory": "figure_eight", "order": order,
                                    "speed": speed}),
        geodyn("geodyn_node", dict(with_model, input_policy="exact", input_mode="flat", order=order,
                                   actuation_config=actuation_config)),
        geodyn("geodyn_flat_controller", dict(
            with_model, level=level, order=order, actuation_config=actuation_config, elastic_joints=False,
            input_policy="exact", sync_stamps=False, odom_startup_discard=0.05, per_joint_effort_topics=True)),
    ])
