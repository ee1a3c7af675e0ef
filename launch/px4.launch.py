"""Fly through PX4: the under-actuated loop with PX4 between the controller and the rotors.

    ros2 launch geodyn_ros px4.launch.py stand_in:=true arm:=true        # against the PX4 stand-in
    ros2 launch geodyn_ros px4.launch.py urdf:=my_robot.urdf.xacro actuation:=my_vehicle.yaml   # a real PX4
    ros2 launch geodyn_ros px4.launch.py px4_mode:=direct_actuator       # ActuatorMotors instead
    ros2 launch geodyn_ros px4.launch.py urdf:=U actuation:=V config:=DIR/px4_params.yaml stand_in:=true arm:=true
                                                                         # your vehicle (geodyn_vehicle --px4 --out DIR)

A real PX4 (SITL or a vehicle) is reached through the Micro XRCE-DDS Agent, which you start
yourself (``MicroXRCEAgent udp4 -p 8888`` for SITL; doc/howto/fly_on_px4.md gives the serial
form and PX4's parameters). With ``stand_in:=true`` the package's PX4 stand-in takes PX4's place.

Nodes (package geodyn_ros):

geodyn_px4_sim          stand_in:=true only: MuJoCo with the rotors and elastic joints behind a
                        PX4 stand-in (PX4's allocation, offboard rules and failsafe; doc/reference/
                        px4_standin.md); publishes /clock and PX4's /fmu/out topics with the
                        ``sensing`` profile; wall clock.
geodyn_reference        the figure eight (speed, from start_time) on flat_reference.
geodyn_node             input_mode flat: desired/state and feedforward/flat_jet.
geodyn_flat_controller  rotor speeds and motor torques (level rigid, ff0, ff1 or ff2), a command
                        per odometry sample; the gains of config/px4.yaml.
geodyn_px4_bridge       /fmu/out/vehicle_odometry -> odom; cmd/rotor_speeds -> PX4's setpoints in
                        px4_mode; the proof of life while commands are fresh; arm and offboard as
                        explicit logged actions (arm:=true: by itself once the proof of life has
                        streamed offboard_warmup; else call its ~/offboard then ~/arm).

Every node but the stand-in runs on the wall clock against a real PX4 and on the stand-in's
/clock with stand_in:=true (use_sim_time follows stand_in). cmd/motor_efforts (the arm's joint
torques) goes to the arm's own driver: nothing in this file listens to it but the stand-in.

Arguments
---------
urdf          the robot, run through xacro. Default: share/geodyn_ros/urdf/hexarotor_manipulator.urdf.xacro.
actuation     the vehicle file with its px4: section (doc/reference/vehicle_file.md), for the
              stand-in, geodyn_node, the controller and the bridge. Default:
              share/geodyn_ros/config/hexarotor_px4.yaml.
config        parameter file keyed by node name. Default: share/geodyn_ros/config/px4.yaml, the
              shipped hexarotor's (its start state, its gains); for your vehicle the file
              ``geodyn_vehicle --urdf U --vehicle V --px4 --out DIR`` writes, DIR/px4_params.yaml.
order         derivative order r of geodyn_node and geodyn_reference (default 2).
level         rigid, ff0, ff1 or ff2 (default ff2).
speed         time scaling of the figure eight (default 0.5).
px4_mode      thrust_and_torque (default) or direct_actuator.
arm           true: the bridge switches PX4 to offboard and arms it by itself (default false).
stand_in      true: start the PX4 stand-in (default false: a real PX4 through the agent).
sensing       the stand-in's odometry profile (default onboard: PX4's EKF2 at 100 Hz, 10 ms).
namespace, frame_prefix   as in the other launch files; PX4's /fmu topics are absolute.
message_types typed (default) or multiarray (deprecated), for every geodyn node.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from geodyn_ros_launch import message_types_argument, namespace_arguments, with_message_types


def generate_launch_description():
    share = FindPackageShare("geodyn_ros")
    config = LaunchConfiguration("config")
    actuation = ParameterValue(LaunchConfiguration("actuation"), value_type=str)
    order = ParameterValue(LaunchConfiguration("order"), value_type=int)
    sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    robot_description = ParameterValue(Command(["xacro ", LaunchConfiguration("urdf")]), value_type=str)
    frame_prefix = ParameterValue(LaunchConfiguration("frame_prefix"), value_type=str)
    with_model = {"use_sim_time": sim_time, "robot_description": robot_description, "frame_prefix": frame_prefix,
                  "actuation_config": actuation}

    def geodyn(executable, overrides, **kw):
        return Node(package="geodyn_ros", executable=executable, name=executable,
                    namespace=LaunchConfiguration("namespace"), output="screen",
                    parameters=[config, with_message_types(executable, overrides)], **kw)

    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf", default_value=PathJoinSubstitution([share, "urdf", "hexarotor_manipulator.urdf.xacro"]),
            description="The robot (run through xacro)."),
        DeclareLaunchArgument(
            "actuation", default_value=PathJoinSubstitution([share, "config", "hexarotor_px4.yaml"]),
            description="Vehicle file with its px4: section (rotors, PX4's thrust model)."),
        DeclareLaunchArgument(
            "config", default_value=PathJoinSubstitution([share, "config", "px4.yaml"]),
            description="Parameter YAML file keyed by node name."),
        DeclareLaunchArgument("order", default_value="2", description="Derivative order r of the dynamics node and "
                              "the reference."),
        DeclareLaunchArgument("level", default_value="ff2", choices=["rigid", "ff0", "ff1", "ff2"],
                              description="The flatness controller's level."),
        DeclareLaunchArgument("speed", default_value="0.5", description="Time scaling of the figure eight."),
        DeclareLaunchArgument("px4_mode", default_value="thrust_and_torque",
                              choices=["thrust_and_torque", "direct_actuator"],
                              description="PX4 offboard mode of the bridge's setpoints."),
        DeclareLaunchArgument("arm", default_value="false", choices=["true", "false"],
                              description="true: the bridge switches to offboard and arms by itself (logged)."),
        DeclareLaunchArgument("stand_in", default_value="false", choices=["true", "false"],
                              description="true: the PX4 stand-in (MuJoCo) instead of a real PX4."),
        DeclareLaunchArgument("use_sim_time", default_value=LaunchConfiguration("stand_in"),
                              description="The nodes' clock (default: stand_in's value: the stand-in's /clock)."),
        DeclareLaunchArgument("sensing", default_value="onboard",
                              description="The stand-in's sensor profile of vehicle_odometry (config/sensors.yaml)."),
        message_types_argument(),
        *namespace_arguments("ROS namespace of the nodes (empty = the root); PX4's /fmu topics, /clock and "
                             "/diagnostics stay global."),
        geodyn("geodyn_px4_sim", dict(with_model, use_sim_time=False,
                                      sensing=ParameterValue(LaunchConfiguration("sensing"), value_type=str)),
               condition=IfCondition(LaunchConfiguration("stand_in"))),
        geodyn("geodyn_reference", {"use_sim_time": sim_time, "order": order,
                                    "speed": ParameterValue(LaunchConfiguration("speed"), value_type=float)}),
        geodyn("geodyn_node", dict(with_model, order=order)),
        geodyn("geodyn_flat_controller", dict(with_model, order=order,
                                              level=ParameterValue(LaunchConfiguration("level"), value_type=str))),
        geodyn("geodyn_px4_bridge", dict(
            with_model, px4_mode=ParameterValue(LaunchConfiguration("px4_mode"), value_type=str),
            arm_and_offboard_on_start=ParameterValue(LaunchConfiguration("arm"), value_type=bool))),
    ])
