"""The actuated closed loop in MuJoCo: rotors with motor lag, series-elastic arm joints.

    ros2 launch geodyn_ros actuated_sim.launch.py                        # ff2
    ros2 launch geodyn_ros actuated_sim.launch.py feedforward_order:=0   # the ff0 row
    ros2 launch geodyn_ros actuated_sim.launch.py use_feedforward:=false # the pd row
    ros2 launch geodyn_ros actuated_sim.launch.py namespace:=robot1 frame_prefix:=robot1/

Nodes (package geodyn_ros; all but geodyn_actuated_sim run on the simulated time that it
publishes on /clock; it must run on the wall clock):

geodyn_actuated_sim         MuJoCo model of the URDF with the rotors (gz-sim
                            MulticopterMotorModel lag) and the elastic joints of
                            config/tilthex.yaml; applies cmd/rotor_speeds and
                            cmd/motor_efforts, publishes /clock, odom, joint_states and
                            motor_states (lock-step by default).
geodyn_reference            the Table 3 reference jet.
geodyn_node                 the feedforward jet in the body frame (output_representation
                            body, what the rotor allocation needs), rotor joints locked.
geodyn_actuated_controller  rotor speeds and motor torques from the jet (feedforward_order).

Arguments
---------
urdf               robot with rotor links, run through xacro. Default:
                   share/geodyn_ros/urdf/tilthex_manipulator.urdf.xacro.
config             parameter file keyed by node name (the geodyn_actuated_sim section starts
                   the robot and its actuators on the Table 3 reference). Default:
                   share/geodyn_ros/config/geodyn.yaml.
order              derivative order r of geodyn_node and geodyn_reference (default 2).
feedforward_order  0, 1 or 2 (default 2; must be <= order): the ff0 / ff1 / ff2 rows of the
                   README table.
use_feedforward    false = feedback only (the pd row); default true.
namespace          ROS namespace of the four nodes (default empty: the root); their topics are
                   relative and move with it. /clock and /diagnostics stay global, so run one
                   simulation per ROS domain.
frame_prefix       prefixed to the URDF link names in frame ids by the simulator, geodyn_node
                   and the controller (default empty); world_frame is not prefixed.

markers            true: also geodyn_markers (RViz markers of the feedforward wrench, the rotor
                   thrusts and the CoM on ~/markers; doc/howto/rviz.md). Default false.
rviz               true: also rviz2 with share/geodyn_ros/config/geodyn.rviz (needs RViz, not
                   installable from PyPI). Default false.

message_types    typed (default: geodyn_msgs on the jet topics) or multiarray (the deprecated
                 std_msgs/Float64MultiArray layouts, removed after release 0.2), for every geodyn node.

A namespace or frame prefix that ROS would refuse stops the launch with one line naming it.

The same loop without ROS launch, in one process: ``geodyn_closed_loop --actuated``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import LOCKSTEP_INPUTS, message_types_argument, namespace_arguments, with_message_types

# the continuous rotor joints of tilthex_manipulator.urdf.xacro (config/tilthex.yaml rotor_prefix);
# geodyn_actuated_sim and geodyn_actuated_controller lock them themselves (actuation_config)
ROTOR_JOINTS = ",".join(f"rotor_{i}_joint" for i in range(1, 7))


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    urdf = LaunchConfiguration("urdf")
    config = LaunchConfiguration("config")
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    use_feedforward = ParameterValue(LaunchConfiguration("use_feedforward"), value_type=bool)
    feedforward_order = ParameterValue(LaunchConfiguration("feedforward_order"), value_type=int)

    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)
    # Overrides after the config file. geodyn_actuated_sim is the /clock source: it refuses
    # use_sim_time true.
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
            default_value=PathJoinSubstitution([share, "urdf", "tilthex_manipulator.urdf.xacro"]),
            description="Robot with rotor links (run through xacro).",
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
            "feedforward_order", default_value="2",
            description="0: allocation only; 1: + rotor-lag compensation; 2: + elastic-joint inverse.",
        ),
        DeclareLaunchArgument(
            "use_feedforward", default_value="true",
            description="Add the feedforward in the controller (false = feedback only, the pd row).",
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
        geodyn("geodyn_actuated_sim", dict(with_model, use_sim_time=False)),
        geodyn("geodyn_reference", {"use_sim_time": True, "order": order}),
        geodyn("geodyn_node", dict(with_model, **LOCKSTEP_INPUTS, order=order, output_representation="body",
                                   locked_joints=ROTOR_JOINTS)),
        geodyn("geodyn_actuated_controller", dict(
            with_model, **LOCKSTEP_INPUTS, use_feedforward=use_feedforward, feedforward_order=feedforward_order,
            order=order)),
        # the jet is geodyn_node's body wrench here; the rotors of the simulator's default actuation file
        geodyn("geodyn_markers", dict(with_model, wrench_representation="body",
                                      actuation_config=PathJoinSubstitution([share, "config", "tilthex.yaml"])),
               condition=IfCondition(LaunchConfiguration("markers"))),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
             namespace=LaunchConfiguration("namespace"), parameters=[{"use_sim_time": True}],
             arguments=["-d", PathJoinSubstitution([share, "config", "geodyn.rviz"])],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
