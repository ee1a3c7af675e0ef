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


def run_child(module: str, *args: str, refusal: str = ""):
    """``python -m module args...`` in a child process (the launch process does not import the
    dynamics package), its ``subprocess.CompletedProcess`` (text stdout and stderr) on success. A
    refusal (non-zero exit) raises ``ValueError(refusal + the child's last stderr line)``, which
    LaunchService prints before exiting non-zero: the child's own one-line error, not a traceback."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["exit status " + str(res.returncode)])[-1]
        raise ValueError(refusal + last)
    return res


def _mission(context) -> None:
    """``mission:=FILE`` (``underactuated_sim.launch.py``): refuse a missing or invalid mission in
    one line, and set the launch configurations ``mission`` (absolute path), ``reference_trajectory``
    (``waypoints``) and ``mission_sim_start``: a parameter file that starts the simulator on the
    mission's plan, written by ``python -m geodyn_ros.ros.nodes.mission start-parameters`` in a child
    process (this process does not import the dynamics package)."""
    import os
    import tempfile

    cfg = context.launch_configurations
    path = os.path.abspath(cfg["mission"])     # a file that cannot be read: the child says so, as the loader does
    out = os.path.join(tempfile.mkdtemp(prefix="geodyn_mission_"), "sim_start.yaml")
    run_child("geodyn_ros.ros.nodes.mission", "start-parameters", path, cfg["urdf"], cfg["actuation"], out,
              refusal="launch argument 'mission': ")
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


#: the stand the Gazebo models' start hold welds the base to (urdf/multirotor_gazebo_plugins.xacro,
#: gz_start_hold): one massive link welded to the world, no collision, spawned before the robot
GZ_STAND_SDF = ("<sdf version='1.9'><model name='geodyn_stand'><link name='link'><inertial><mass>1</mass>"
                "</inertial></link><joint name='weld' type='fixed'><parent>world</parent><child>link</child>"
                "</joint></model></sdf>")


#: the ROS topic of the start hold's state (config/gz_bridge.yaml): geodyn_reference's start_topic
GZ_START_TOPIC = "gz/start_hold"


def gazebo_arguments() -> list:
    """The launch arguments of :func:`gazebo_actions`: ``headless`` (``gz sim -s``, no GUI),
    ``robot_state_publisher`` (start it for the joints' TF; false where it is not installed) and
    ``update_rate`` (``gz sim -z``; empty: the world's own rate)."""
    from launch.actions import DeclareLaunchArgument

    return [
        DeclareLaunchArgument("headless", default_value="false", choices=["true", "false"],
                              description="true: gz sim server only (-s), no GUI."),
        DeclareLaunchArgument("robot_state_publisher", default_value="true", choices=["true", "false"],
                              description="Start robot_state_publisher (the joints' TF for RViz)."),
        DeclareLaunchArgument("update_rate", default_value="",
                              description="gz sim -z: simulation steps per wall-clock second (empty: the world's "
                                          "own, real time). Lower it where the machine cannot run the nodes at the "
                                          "world's rate: e.g. 250 runs empty.sdf's 1 ms steps at a quarter of real "
                                          "time, and the loop's delays in simulated time shrink fourfold."),
    ]


def _gz_sim(context, resource, uses=None):
    """``gz sim -r [-s] [-z RATE] <world>`` from the launch configurations ``world``, ``headless`` and
    ``update_rate`` (refused in one line unless empty or a number > 0), read from ``context`` by
    those names; ``uses``: their ``LaunchConfiguration`` substitutions (unused here: passed so that
    the launch description shows the arguments used)."""
    import math

    from launch.actions import ExecuteProcess

    cfg = context.launch_configurations
    rate = cfg.get("update_rate", "").strip()
    if rate:
        try:
            ok = math.isfinite(float(rate)) and float(rate) > 0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"launch argument 'update_rate': {rate!r} is not a number > 0 [Hz] (gz sim -z); "
                             "leave it empty for the world's own rate")
    cmd = ["gz", "sim", "-r", *(["-s"] if cfg.get("headless", "false") == "true" else []),
           *(["-z", rate] if rate else []), cfg["world"]]
    return [ExecuteProcess(cmd=cmd, name="gz_sim", output="screen", additional_env={"GZ_SIM_RESOURCE_PATH": resource})]


def gazebo_actions(world, with_model: dict, namespace, model_name: str, spawn_z, bridge_config,
                   spawn: dict | None = None) -> list:
    """The Gazebo side shared by the Gazebo launch files (declare :func:`gazebo_arguments` first):

    * ``gz sim -r [-s] [-z RATE] <world>`` (running at once; ``-s`` with ``headless:=true``, ``-z`` with
      ``update_rate:=RATE``; the launch argument ``world`` is read), with this
      package's share folder's parent on ``GZ_SIM_RESOURCE_PATH`` (``package://geodyn_ros/...`` meshes
      are ``model://geodyn_ros/...`` to gz);
    * ``robot_state_publisher`` with ``with_model`` (the joints' TF; ``robot_state_publisher:=false``
      leaves it out: the spawner does not need it);
    * ``ros_gz_sim create`` spawning the stand ``geodyn_stand`` (:data:`GZ_STAND_SDF`), and once it has
      exited, ``model_name`` from ``with_model``'s ``robot_description`` (the ``string`` parameter) at
      height ``spawn_z`` (or, with ``spawn``, the pose ``{"x", "y", "z", "R", "P", "Y"}`` [m, rad] of
      ``ros_gz_sim create``, numbers or launch substitutions, which replaces it): the model's start hold welds its base to the stand until the loop commands
      the rotors (``gz_start_hold``), so it never falls while the nodes come up;
    * ``ros_gz_bridge parameter_bridge`` with ``bridge_config``.

    Every node in ``namespace``; the spawner and the bridge on simulated time."""
    import os

    from launch.actions import OpaqueFunction, RegisterEventHandler
    from launch.conditions import IfCondition
    from launch.event_handlers import OnProcessExit
    from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue
    from launch_ros.substitutions import FindPackageShare

    share_parent = PathJoinSubstitution([FindPackageShare("geodyn_ros"), ".."])
    resource = [share_parent] + ([":" + os.environ["GZ_SIM_RESOURCE_PATH"]] if os.environ.get("GZ_SIM_RESOURCE_PATH")
                                 else [])
    uses = {"world": world, "headless": LaunchConfiguration("headless"), "update_rate": LaunchConfiguration("update_rate")}
    gz = [OpaqueFunction(function=_gz_sim, args=[resource], kwargs={"uses": uses})]
    stand = Node(package="ros_gz_sim", executable="create", name="spawn_geodyn_stand", namespace=namespace,
                 output="screen", parameters=[{"string": GZ_STAND_SDF, "name": "geodyn_stand", "use_sim_time": True}])
    robot = Node(package="ros_gz_sim", executable="create", name="spawn_" + model_name, namespace=namespace,
                 output="screen", parameters=[{"string": with_model["robot_description"], "name": model_name,
                                               "use_sim_time": True,
                                               **{k: float(v) if isinstance(v, (int, float)) else
                                                  ParameterValue(v, value_type=float)
                                                  for k, v in ({"z": spawn_z} if spawn is None else spawn).items()}}])
    return [
        *gz,
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             namespace=namespace, output="screen", parameters=[with_model],
             condition=IfCondition(LaunchConfiguration("robot_state_publisher"))),
        stand,
        RegisterEventHandler(OnProcessExit(target_action=stand, on_exit=[robot])),
        Node(package="ros_gz_bridge", executable="parameter_bridge", name="gz_bridge", namespace=namespace,
             output="screen", parameters=[{"config_file": bridge_config, "use_sim_time": True}]),
    ]
