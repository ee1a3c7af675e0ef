"""YOUR aerial manipulator in Gazebo (Harmonic, through ros_gz): a URDF and one vehicle file.

    ros2 launch geodyn_ros gazebo_vehicle.launch.py urdf:=my_robot.urdf vehicle:=my_vehicle.yaml
    ros2 launch geodyn_ros gazebo_vehicle.launch.py vehicle:=borinot_flying_arm_2 headless:=true
    ros2 launch geodyn_ros gazebo_vehicle.launch.py urdf:=my_robot.urdf vehicle:=my_vehicle.yaml reference:=hover level:=ff0

The Gazebo twin of ``fly.launch.py``. At launch, once (``python -m geodyn_ros.ros.loops.gazebo_vehicle``
in a child process: a launch file does not import the dynamics package), the vehicle is loaded and
checked (a vehicle that cannot fly stops the launch with ONE line and a non-zero exit status), and
four files are written to a temporary folder: the Gazebo model (``urdf/vehicle_gazebo.urdf.xacro``
on the two files: rotor links, gz-sim's motor, odometry, joint-state and joint-force plugins, the
start hold), the vehicle file the nodes load (a rotor list's generated rotor joints locked), the
bridge file of THIS vehicle's joints (``geodyn_vehicle --gz-bridge``'s entries) and the nodes'
parameters (the gains designed from the model, as ``fly.launch.py``). Then:

* ``gz sim -r [-s]`` on ``world``, the stand, and the model spawned at the reference's start pose
  and held there (welded to the stand) until 1 s after the controller's first rotor command;
* ``ros_gz_bridge`` with the generated bridge file, ``robot_state_publisher`` (optional);
* rank 4 (collinear): ``geodyn_reference`` (flat outputs), ``geodyn_node`` (``input_mode flat``),
  ``geodyn_flat_controller``; rank 6 (fully actuated): ``geodyn_reference`` (base reference),
  ``geodyn_node`` (``output_representation body``, rotor joints locked),
  ``geodyn_actuated_controller``. The reference waits at ``t = 0`` for the release.

Arguments
---------
urdf       the robot's URDF or xacro (may be left out for a shipped vehicle name).
vehicle    the vehicle file (YAML, schema 1: doc/reference/vehicle_file.md), or a shipped
           vehicle's name (borinot_flying_arm_2, hextilt_flying_arm_5, iris). Required.
reference  figure8 (default), hover, or a mission YAML file (geodyn_fly's references).
level      rank 4: rigid, ff0, ff1 (default) or ff2 (= ff1 on gz's rigid joints); rank 6: pd,
           ff0 or ff1 (default; order 2 needs series-elastic joints, which gz-sim lacks).
world      SDF world for gz sim (default empty.sdf; the bridge's topics name the world "empty").
headless   true: gz sim server only (-s). robot_state_publisher: false leaves it out.
message_types  typed (default) or multiarray (deprecated), for every geodyn node.

One robot per Gazebo world (model name aerial_manipulator, as config/gz_bridge.yaml).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from geodyn_ros_launch import gazebo_actions, gazebo_arguments, message_types_argument, run_child, with_message_types

MODEL_NAME = "aerial_manipulator"


def _actions(context):
    """Load, check and write the files in a child process; then the Gazebo side and the nodes. A
    refusal raises ValueError with the child's one line (LaunchService prints it and exits non-zero)."""
    import json
    import os
    import sys
    import tempfile

    cfg = context.launch_configurations
    if not cfg.get("vehicle"):
        raise ValueError("launch argument 'vehicle': required (gazebo_vehicle.launch.py urdf:=my_robot.urdf "
                         "vehicle:=my_vehicle.yaml, or vehicle:=borinot_flying_arm_2)")
    urdf = os.path.abspath(cfg["urdf"]) if cfg.get("urdf") else ""
    vehicle = cfg["vehicle"]
    vehicle = os.path.abspath(vehicle) if os.path.exists(vehicle) else vehicle
    out = tempfile.mkdtemp(prefix="geodyn_gazebo_vehicle_")
    res = run_child("geodyn_ros.ros.loops.gazebo_vehicle", urdf, vehicle, cfg.get("reference", "figure8"),
                    cfg.get("level", "ff1"), out)
    for line in res.stderr.strip().splitlines():      # the model's corrections, one line each
        print(line, file=sys.stderr)
    setup = json.loads(res.stdout.strip().splitlines()[-1])
    with open(setup["model"]) as f:
        robot_description = f.read()
    with_model = {"use_sim_time": True, "robot_description": robot_description}
    spawn = setup["spawn"]
    nodes = [Node(package="geodyn_ros", executable=name, name=name, output="screen",
                  parameters=[setup["parameters"], with_message_types(name, {"robot_description": robot_description})])
             for name in ("geodyn_reference", "geodyn_node", setup["controller"])]
    return [*gazebo_actions(LaunchConfiguration("world"), with_model, "", MODEL_NAME, None, setup["bridge"],
                            spawn=spawn), *nodes]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="",
                              description="The robot's URDF or xacro (may be left out for a shipped vehicle name)."),
        DeclareLaunchArgument("vehicle", default_value="",
                              description="The vehicle file (YAML, schema 1) or a shipped vehicle's name (required)."),
        DeclareLaunchArgument("reference", default_value="figure8",
                              description="figure8, hover or a mission YAML file (scaled to the vehicle)."),
        DeclareLaunchArgument("level", default_value="ff1",
                              description="rank 4: rigid, ff0, ff1 or ff2; rank 6: pd, ff0 or ff1."),
        DeclareLaunchArgument("world", default_value="empty.sdf", description="SDF world for gz sim."),
        message_types_argument(),
        *gazebo_arguments(),
        OpaqueFunction(function=_actions),
    ])
