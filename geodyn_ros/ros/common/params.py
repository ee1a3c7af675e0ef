"""Parameter declaration and validation shared by the geodyn nodes (the robot model itself is
loaded by :mod:`geodyn_ros.ros.common.description`, from a parameter or the ``robot_description`` topic).

Each node module defines ``PARAMETERS = {name: (default, description)}``; the default's type
is the parameter's type (``bool``, ``int``, ``float``, ``str``, list of float). Parameters are
declared with dynamic typing and then checked here, so that a YAML file writing ``rate_hz: 0``
(an integer) for a float parameter works, and a wrong type fails at start-up with a message
naming the parameter instead of an rclpy type exception.
"""
from __future__ import annotations

import os

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter

__all__ = ["ConfigurationError", "FRAME_PREFIX_DESCRIPTION", "check_frame_prefix", "declare_parameters",
           "locked_joints_list", "model_source", "parameter_overrides"]

#: The ``frame_prefix`` parameter of the nodes that check or publish link frame ids.
FRAME_PREFIX_DESCRIPTION = (
    "Prefix of the URDF link names in the frame ids this node publishes and checks (like "
    "robot_state_publisher's frame_prefix), e.g. 'robot1/' gives 'robot1/base_link'; world_frame "
    "is not prefixed. Empty = the plain link names.")


class ConfigurationError(ValueError):
    """A bad parameter or URDF: the node cannot start. The message says which and why."""


def declare_parameters(node, table: dict, dynamic=()) -> dict:
    """Declare every parameter of ``table`` on ``node``; return ``{name: checked value}``.

    Parameters not named in ``dynamic`` are declared read-only: they are read once at start-up,
    so ``ros2 param set`` refuses them ("parameter is read-only") instead of silently doing
    nothing. Raises :class:`ConfigurationError` naming the parameter if a value has the wrong type.
    """
    values = {}
    for name, (default, description) in table.items():
        ro = name not in dynamic
        if isinstance(default, list) and not default:
            # an empty list has no type: declare the type, statically (rclpy requires that)
            node.declare_parameter(name, Parameter.Type.DOUBLE_ARRAY,
                                   ParameterDescriptor(description=description, read_only=ro))
        else:
            node.declare_parameter(name, default, ParameterDescriptor(description=description,
                                                                      dynamic_typing=True, read_only=ro))
        try:
            value = node.get_parameter(name).value
        except ParameterUninitializedException:  # an empty-list default that was not overridden
            value = None
        values[name] = _coerce(name, value, default)
    return values


def _coerce(name, value, default):
    if value is None and isinstance(default, list):
        return []
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, list):
        try:
            seq = list(value)
        except TypeError:
            seq = None
        if seq is not None and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seq):
            return [float(v) for v in seq]
    raise ConfigurationError(
        f"parameter '{name}': expected {type(default).__name__}"
        f"{' of float' if isinstance(default, list) else ''}, got {value!r}")


def check_frame_prefix(value: str) -> str:
    """The ``frame_prefix`` parameter, checked: prepended to URDF link names in frame ids, so
    it must not start with '/' (tf2 frame ids are relative) nor contain whitespace or control
    characters. Raises :class:`ConfigurationError` (one line) otherwise."""
    if value.startswith("/"):
        raise ConfigurationError(f"parameter 'frame_prefix': {value!r} starts with '/' (tf2 frame ids "
                                 "are relative; write e.g. 'robot1/')")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ConfigurationError(f"parameter 'frame_prefix': {value!r} contains whitespace or control "
                                 "characters")
    return value


def parameter_overrides(values: dict) -> list:
    """``rclpy.parameter.Parameter`` list for ``Node(parameter_overrides=...)`` from a dict."""
    return [Parameter(k, value=v) for k, v in values.items()]


def model_source(params: dict) -> tuple[str, str] | None:
    """``(source, what)``: the URDF source for the loaders and a phrase naming it, or ``None``
    when neither ``robot_description`` nor ``urdf_path`` is set: the model then comes from the
    ``robot_description`` topic (:mod:`geodyn_ros.ros.common.description`).

    At most one of ``robot_description`` (XML string) and ``urdf_path`` may be non-empty and a
    path must exist; raises :class:`ConfigurationError` otherwise.
    """
    desc = params.get("robot_description", "").strip()
    path = params.get("urdf_path", "").strip()
    if desc and path:
        raise ConfigurationError("parameters 'robot_description' and 'urdf_path' are both set; "
                                 "set at most one (neither = the robot_description topic)")
    if not desc and not path:
        return None
    if path and not os.path.isfile(path):
        raise ConfigurationError(f"parameter 'urdf_path': no such file: {path}")
    return (desc, "robot_description") if desc else (path, f"urdf_path ({path})")


def locked_joints_list(params: dict) -> list:
    """The comma-separated parameter ``locked_joints`` as a list of names (empty = none)."""
    return [j.strip() for j in params.get("locked_joints", "").split(",") if j.strip()]
