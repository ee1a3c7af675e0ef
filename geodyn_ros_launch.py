"""Helpers shared by the launch files in ``launch/`` (outside the package, like
``geodyn_ros_entry``: a launch file must not import the dynamics package and its kernels).

Installed as a top-level module by ``setup.py`` (``py_modules``), so ``ros2 launch`` finds it.
"""

#: what the lock-step simulator launch files give geodyn_node and the controllers: the stamp pairing of
#: lock-step simulation over reliable sensor subscriptions (the same as
#: geodyn_ros.ros.loops.loop_session.LOCKSTEP_INPUTS, so a launched loop behaves as the ROS loop runners)
LOCKSTEP_INPUTS = {"input_policy": "exact", "sensor_reliability": "reliable"}


#: the nodes that declare ``message_types`` (their jet topics: geodyn_ros.ros.common.message_types)
MESSAGE_TYPES_NODES = ("geodyn_node", "geodyn_reference", "geodyn_controller", "geodyn_actuated_controller",
                       "geodyn_flat_controller", "geodyn_markers")
#: the values of ``message_types`` (geodyn_ros.ros.common.message_types.MESSAGE_TYPES; checked equal in a test)
MESSAGE_TYPES = ("typed", "multiarray")


def message_types_argument():
    """The ``message_types`` launch argument: ``typed`` (geodyn_msgs, default) or ``multiarray``
    (the deprecated std_msgs/Float64MultiArray layouts), given to every node of
    :data:`MESSAGE_TYPES_NODES` by :func:`with_message_types`."""
    from launch.actions import DeclareLaunchArgument

    return DeclareLaunchArgument(
        "message_types", default_value="typed", choices=list(MESSAGE_TYPES),
        description="Types of the jet topics: 'typed' (geodyn_msgs) or 'multiarray' (the std_msgs/"
                    "Float64MultiArray layouts, deprecated: kept for release 0.2, removed after it).")


def with_message_types(executable: str, overrides: dict) -> dict:
    """``overrides`` plus ``message_types`` (the launch argument) if ``executable`` declares it."""
    if executable not in MESSAGE_TYPES_NODES:
        return overrides
    from launch.substitutions import LaunchConfiguration
    from launch_ros.parameter_descriptions import ParameterValue

    return dict(overrides, message_types=ParameterValue(LaunchConfiguration("message_types"), value_type=str))


def check_arguments(context):
    """Stop the launch, with one line naming the argument, if ROS would refuse ``namespace``
    (rclpy's validate_namespace, on the absolute form launch_ros gives it), ``frame_prefix``
    (a tf2 frame id must not start with '/') or, where declared, ``mission`` (:func:`_mission`). Use as ``OpaqueFunction(function=check_arguments)``
    before the first node; LaunchService prints the refusal as
    ``[ERROR] [launch]: Caught exception in launch ...: launch argument 'namespace': ...``."""
    from rclpy.exceptions import InvalidNamespaceException
    from rclpy.validate_namespace import validate_namespace

    ns = context.launch_configurations.get("namespace", "")
    full = (ns if ns.startswith("/") else "/" + ns).rstrip("/") or "/"
    try:
        validate_namespace(full)
    except InvalidNamespaceException as exc:
        reason = str(exc).splitlines()[0].removeprefix("Invalid namespace: ").rstrip(":")
        raise ValueError(f"launch argument 'namespace': {ns!r} is not a valid ROS namespace ({reason})") from None
    prefix = context.launch_configurations.get("frame_prefix", "")
    if prefix.startswith("/") or any(c.isspace() or not c.isprintable() for c in prefix):
        raise ValueError(f"launch argument 'frame_prefix': {prefix!r} must not start with '/' nor contain "
                         "whitespace (tf2 frame ids are relative; e.g. robot1/)")
    if context.launch_configurations.get("mission"):
        _mission(context)
    return []


def _mission(context) -> None:
    """``mission:=FILE`` (``underactuated_sim.launch.py``): refuse a missing or invalid mission in
    one line, and set the launch configurations ``mission`` (absolute path), ``reference_trajectory``
    (``waypoints``) and ``mission_sim_start``: a parameter file that starts the simulator on the
    mission's plan, written by ``python -m geodyn_ros.ros.nodes.mission start-parameters`` in a child
    process (this process does not import the dynamics package)."""
    import os
    import subprocess
    import sys
    import tempfile

    cfg = context.launch_configurations
    path = os.path.abspath(cfg["mission"])     # a file that cannot be read: the child says so, as the loader does
    out = os.path.join(tempfile.mkdtemp(prefix="geodyn_mission_"), "sim_start.yaml")
    res = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.nodes.mission", "start-parameters", path, cfg["urdf"],
                          cfg["actuation"], out], capture_output=True, text=True)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["exit status " + str(res.returncode)])[-1]
        raise ValueError(f"launch argument 'mission': {last}")
    cfg["mission"], cfg["reference_trajectory"], cfg["mission_sim_start"] = path, "waypoints", out


def namespace_arguments(namespace_description: str, frame_prefix: bool = True) -> list:
    """The ``namespace`` (and, with ``frame_prefix``, the ``frame_prefix``) launch arguments and
    then :func:`check_arguments` as an ``OpaqueFunction``: splice the list into a launch
    description before its first node."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    out = [DeclareLaunchArgument("namespace", default_value="", description=namespace_description)]
    if frame_prefix:
        out.append(DeclareLaunchArgument(
            "frame_prefix", default_value="",
            description="Prefix of the URDF link names in frame ids, e.g. robot1/ (world_frame is not prefixed)."))
    return out + [OpaqueFunction(function=check_arguments)]


def gazebo_actions(world, with_model: dict, namespace, model_name: str, spawn_z, bridge_config) -> list:
    """The Gazebo side shared by ``gazebo.launch.py`` and ``gazebo_underactuated.launch.py``:
    gz sim (``-r``: running at once) with ``world``; ``robot_state_publisher`` with
    ``with_model`` (its ``robot_description``, latched, also for the spawner, and the joints' TF);
    ``ros_gz_sim create`` spawning ``model_name`` from the ``robot_description`` topic at height
    ``spawn_z``; and ``ros_gz_bridge parameter_bridge`` with ``bridge_config``. Every node in
    ``namespace``; the spawner and the bridge on simulated time."""
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch.substitutions import PathJoinSubstitution
    from launch_ros.actions import Node
    from launch_ros.substitutions import FindPackageShare

    return [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
            launch_arguments={"gz_args": ["-r ", world]}.items(),
        ),
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             namespace=namespace, output="screen", parameters=[with_model]),
        Node(package="ros_gz_sim", executable="create", name="spawn_" + model_name, namespace=namespace,
             output="screen", arguments=["-topic", "robot_description", "-name", model_name, "-z", spawn_z],
             parameters=[{"use_sim_time": True}]),
        Node(package="ros_gz_bridge", executable="parameter_bridge", name="gz_bridge", namespace=namespace,
             output="screen", parameters=[{"config_file": bridge_config, "use_sim_time": True}]),
    ]
