"""YOUR aerial manipulator over ROS 2 in MuJoCo: a URDF and one vehicle file, the loop of ``geodyn_fly``.

    ros2 launch geodyn_ros fly.launch.py urdf:=my_robot.urdf vehicle:=my_vehicle.yaml
    ros2 launch geodyn_ros fly.launch.py urdf:=my_robot.urdf vehicle:=my_vehicle.yaml reference:=hover level:=ff1
    ros2 launch geodyn_ros fly.launch.py urdf:=my_robot.urdf vehicle:=my_vehicle.yaml reference:=mission.yaml

At launch, once (``python -m geodyn_ros.ros.loops.fly_closed_loop launch-parameters`` in a child
process: a launch file does not import the dynamics package), the vehicle is loaded and checked
(a vehicle that cannot fly -- allocation rank below 4, thrust-to-weight below 1.2, a joint or rotor
link not in the URDF, a bad key -- stops the launch with ONE line and a non-zero exit status), the
gains are designed from the model (or taken from the file's ``gains:``) and refused if unstable,
and the start state on the reference is computed. The allocation rank picks the composition:

rank 4 (collinear)        geodyn_reference (flat outputs), geodyn_node (input_mode flat),
                          geodyn_flat_controller (level rigid, ff0, ff1 or ff2)
rank 6 (fully actuated)   geodyn_reference (base reference), geodyn_node (output_representation
                          body, rotor joints locked), geodyn_actuated_controller (level pd, ff0,
                          ff1 or ff2)

plus geodyn_actuated_sim (MuJoCo: gz-sim's rotor lag, the file's rigid or series-elastic joints,
lock-step at the file's control_period, publishes /clock; the others run on simulated time). Every
node gets the URDF as robot_description (run through xacro) and the vehicle file as
actuation_config.

Arguments
---------
urdf       the robot's URDF or xacro (required). Rotor links are optional: the file's rotor list
           or its ``from_urdf`` links give the rotors.
vehicle    the vehicle file (YAML, schema 1: doc/reference/vehicle_file.md; required).
reference  figure8 (default), hover, or a mission YAML file -- geodyn_fly's references, scaled to
           the vehicle (geodyn_ros.loops.fly_references).
level      rigid|pd, ff0, ff1 or ff2 (default ff2): the controller's level (rigid at rank 4 and
           pd at rank 6 are the feedback-only baselines).
message_types  typed (default: geodyn_msgs on the jet topics) or multiarray (the deprecated
           std_msgs/Float64MultiArray layouts, removed after release 0.2).

The same loop in one process, with the comparison to the in-process loop:
``python -m geodyn_ros.ros.loops.fly_closed_loop --urdf X --vehicle Y --compare``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import Command
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from geodyn_ros_launch import message_types_argument, run_child, with_message_types


def _nodes(context):
    """Load, check and design in a child process; the nodes of the vehicle's rank. A refusal
    raises ValueError with the child's one line (LaunchService prints it and exits non-zero)."""
    import json
    import os
    import tempfile

    cfg = context.launch_configurations
    for name in ("urdf", "vehicle"):
        if not cfg.get(name):
            raise ValueError(f"launch argument '{name}': required (fly.launch.py urdf:=my_robot.urdf "
                             "vehicle:=my_vehicle.yaml)")
    urdf, vehicle = os.path.abspath(cfg["urdf"]), os.path.abspath(cfg["vehicle"])
    out = os.path.join(tempfile.mkdtemp(prefix="geodyn_fly_"), "parameters.yaml")
    res = run_child("geodyn_ros.ros.loops.fly_closed_loop", "launch-parameters", urdf, vehicle,
                    cfg.get("reference", "figure8"), cfg.get("level", "ff2"), out)
    setup = json.loads(res.stdout.strip().splitlines()[-1])
    robot_description = ParameterValue(Command(["xacro ", urdf]), value_type=str)
    return [Node(package="geodyn_ros", executable=name, name=name, output="screen",
                 parameters=[setup["parameters"], with_message_types(name, {"robot_description": robot_description})])
            for name in ("geodyn_actuated_sim", "geodyn_reference", "geodyn_node", setup["controller"])]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="", description="The robot's URDF or xacro (required)."),
        DeclareLaunchArgument("vehicle", default_value="",
                              description="The vehicle file (YAML, schema 1; required)."),
        DeclareLaunchArgument("reference", default_value="figure8",
                              description="figure8, hover or a mission YAML file (scaled to the vehicle)."),
        DeclareLaunchArgument("level", default_value="ff2",
                              description="rigid|pd, ff0, ff1 or ff2 (rank 4: rigid; rank 6: pd)."),
        message_types_argument(),
        OpaqueFunction(function=_nodes),
    ])
