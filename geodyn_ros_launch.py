"""Helpers shared by the launch files in ``launch/`` (outside the package, like
``geodyn_ros_entry``: a launch file must not import the dynamics package and its kernels).

Installed as a top-level module by ``setup.py`` (``py_modules``), so ``ros2 launch`` finds it.
"""


def check_arguments(context):
    """Stop the launch, with one line naming the argument, if ROS would refuse ``namespace``
    (rclpy's validate_namespace, on the absolute form launch_ros gives it) or ``frame_prefix``
    (a tf2 frame id must not start with '/'). Use as ``OpaqueFunction(function=check_arguments)``
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
    return []
