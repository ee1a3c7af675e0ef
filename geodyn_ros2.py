"""The few ``ros2`` commands the docs use, without the ``ros2`` CLI (issue 52.3).

The ROS 2 wheels on PyPI (``make venv``) bring rclpy but not the ``ros2`` command. This module
answers the verbs of the documentation with rclpy alone, with the ``ros2`` syntax::

    python -m geodyn_ros2 param get /geodyn_flat_controller level
    python -m geodyn_ros2 param set /geodyn_flat_controller kp_rotation "[30.0, 30.0, 8.0]"
    python -m geodyn_ros2 service call /geodyn_px4_bridge/arm std_srvs/srv/Trigger
    python -m geodyn_ros2 topic pub --once /mission/com_yaw trajectory_msgs/msg/MultiDOFJointTrajectory "{...}"
    python -m geodyn_ros2 topic hz /fmu/out/vehicle_odometry --duration 5
    python -m geodyn_ros2 pkg prefix geodyn_ros

Values and messages are YAML, as ``ros2`` reads them (``"[30.0, 30.0, 8.0]"``, ``"{joint_names:
[base_link], ...}"``). A parameter value of integers is sent as the floats the node declared
(``ros2 param set`` would refuse ``kp_joint 60``). A name that the graph does not have within
``--timeout`` seconds (default 10: discovery on a loaded machine) is one line and exit status 1;
a refused parameter prints the node's reason and exits 1; a bad command line exits 2.

It sits outside the package, like ``geodyn_ros_entry``: importing ``geodyn_ros`` would load the
dynamics kernels, and these commands need rclpy only. ``ros2 launch`` has no counterpart here (it
needs ``launch_ros``): every launch line of the docs has its launch-free commands beside it.
"""
from __future__ import annotations

import argparse
import importlib
import math
import sys
import time

__all__ = ["main", "fill_message", "message_class", "parameter_value"]


class CommandError(RuntimeError):
    """A one-line reason the command failed (exit status 1)."""


def message_class(name: str, kind: str = "msg"):
    """The class of ``pkg/msg/Type`` (or ``pkg/Type``; ``kind`` ``srv`` for services); CommandError
    naming it when the package or the type is not installed."""
    parts = name.split("/")
    if len(parts) == 2:
        parts = [parts[0], kind, parts[1]]
    if len(parts) != 3 or parts[1] != kind or not all(parts):
        raise CommandError(f"{name}: not a {kind} type (expected pkg/{kind}/Type)")
    try:
        return getattr(importlib.import_module(f"{parts[0]}.{kind}"), parts[2])
    except (ImportError, AttributeError):
        raise CommandError(f"{name}: no such {kind} type installed (import {parts[0]}.{kind}.{parts[2]})") from None


def _inner_type(field_type: str) -> str | None:
    """``geometry_msgs/Transform`` of ``sequence<geometry_msgs/Transform>`` or ``geometry_msgs/Transform[3]``
    (a sequence of messages), else None."""
    t = field_type
    if t.startswith("sequence<"):
        t = t[len("sequence<"):].rstrip(">").split(",")[0].strip()
    elif t.endswith("]"):
        t = t[:t.index("[")]
    else:
        return None
    return t if "/" in t else None


def fill_message(msg, data, where: str = ""):
    """Set the fields of ``msg`` from ``data`` (a dict, as YAML gives it); nested messages and
    sequences of messages are filled recursively. Returns ``msg``. CommandError naming the field
    for a field the type does not have or a value it does not take."""
    if data is None:
        return msg
    if not isinstance(data, dict):
        raise CommandError(f"{where or 'message'}: expected a mapping of fields, got {data!r}")
    types = msg.get_fields_and_field_types()
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in types:
            raise CommandError(f"{path}: {type(msg).__name__} has no field {key!r} (it has {', '.join(types)})")
        current = getattr(msg, key)
        inner = _inner_type(types[key])
        try:
            if hasattr(current, "get_fields_and_field_types"):
                fill_message(current, value, path)
            elif inner is not None:
                if not isinstance(value, list):
                    raise CommandError(f"{path}: expected a list of {inner}, got {value!r}")
                cls = message_class(inner)
                setattr(msg, key, [fill_message(cls(), item, f"{path}[{i}]") for i, item in enumerate(value)])
            else:
                if (types[key].startswith("sequence<") or types[key].endswith("]")) and not isinstance(value, list):
                    raise CommandError(f"{path}: {value!r} does not fit {types[key]} (expected a list)")
                setattr(msg, key, value)
        except (TypeError, ValueError, AssertionError) as exc:
            raise CommandError(f"{path}: {value!r} does not fit {types[key]} ({exc})") from None
    return msg


def parameter_value(text: str, declared=None):
    """The Python value of ``text`` (YAML, as ``ros2 param set`` reads it); integers become floats
    where the node's parameter is a double or a double array (``declared``: its current
    ``rcl_interfaces/ParameterValue``)."""
    import yaml
    from rcl_interfaces.msg import ParameterType

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CommandError(f"value {text!r}: not YAML ({str(exc).splitlines()[0]})") from None
    if value is None:
        value = ""
    kind = getattr(declared, "type", None)
    if kind == ParameterType.PARAMETER_DOUBLE and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    elif kind == ParameterType.PARAMETER_DOUBLE_ARRAY and isinstance(value, list) \
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        value = [float(v) for v in value]
    return value


def _absolute(name: str) -> str:
    return name if name.startswith("/") else "/" + name


def _show(value) -> str:
    """A parameter value as ``ros2 param get`` says it: ``Double value is: 60.0``."""
    from rcl_interfaces.msg import ParameterType
    from rclpy.parameter import parameter_value_to_python

    kinds = {ParameterType.PARAMETER_BOOL: "Boolean", ParameterType.PARAMETER_INTEGER: "Integer",
             ParameterType.PARAMETER_DOUBLE: "Double", ParameterType.PARAMETER_STRING: "String",
             ParameterType.PARAMETER_BYTE_ARRAY: "Byte values", ParameterType.PARAMETER_BOOL_ARRAY: "Boolean values",
             ParameterType.PARAMETER_INTEGER_ARRAY: "Integer values", ParameterType.PARAMETER_DOUBLE_ARRAY: "Double values",
             ParameterType.PARAMETER_STRING_ARRAY: "String values"}
    if value.type == ParameterType.PARAMETER_NOT_SET:
        return "Parameter not set."
    v = parameter_value_to_python(value)
    return f"{kinds.get(value.type, 'Value')} {'are' if isinstance(v, list) else 'is'}: {list(v) if isinstance(v, list) else v}"


class _Session:
    """An rclpy context and one node, spun until a future completes or the time is up."""

    def __init__(self, timeout: float):
        import rclpy

        self.rclpy, self.timeout = rclpy, timeout
        self.ctx = rclpy.Context()
        rclpy.init(args=[], context=self.ctx)
        self.node = rclpy.create_node(f"geodyn_ros2_{int(time.time() * 1e3) % 10**9}", context=self.ctx,
                                      start_parameter_services=False)
        from rclpy.executors import SingleThreadedExecutor
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)

    def wait(self, cond, what: str) -> None:
        end = time.monotonic() + self.timeout
        while not cond():
            if time.monotonic() > end:
                raise CommandError(f"{what} within {self.timeout:g} s (is it running, on this ROS_DOMAIN_ID?)")
            self.ex.spin_once(timeout_sec=0.05)

    def result(self, future, what: str):
        self.wait(future.done, what)
        return future.result()

    def close(self) -> None:
        self.ex.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.ctx)


def _param(s: _Session, args) -> int:
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    node = _absolute(args.node)
    client = AsyncParameterClient(s.node, node)
    s.wait(lambda: client.services_are_ready(), f"no parameter services of node {node}")
    got = s.result(client.get_parameters([args.name]), f"no answer from {node}")
    current = got.values[0] if got.values else None
    if args.action == "get":
        print(_show(current) if current is not None else "Parameter not set.")
        return 0 if current is not None else 1
    value = parameter_value(args.value, current)
    try:
        param = Parameter(args.name, value=value)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"value {args.value!r} of {args.name}: not a parameter value ({exc})") from None
    res = s.result(client.set_parameters([param]), f"no answer from {node}").results[0]
    if res.successful:
        print("Set parameter successful")
        return 0
    print(f"Setting parameter failed: {res.reason}")
    return 1


def _service(s: _Session, args) -> int:
    import yaml

    cls = message_class(args.type, "srv")
    request = fill_message(cls.Request(), yaml.safe_load(args.values) if args.values else None)
    client = s.node.create_client(cls, args.service)
    s.wait(client.service_is_ready, f"service {args.service} is not available")
    print(f"requester: making request: {request}")
    response = s.result(client.call_async(request), f"no response from {args.service}")
    print(f"response:\n{response}")
    return 0


def _topic(s: _Session, args) -> int:
    import yaml
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    if args.action == "pub":
        cls = message_class(args.type)
        msg = fill_message(cls(), yaml.safe_load(args.values) if args.values else None)
        pub = s.node.create_publisher(cls, args.topic, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        s.wait(lambda: pub.get_subscription_count() > 0, f"no subscriber on {args.topic}")
        pub.publish(msg)
        s.ex.spin_once(timeout_sec=0.2)
        print(f"published once on {args.topic}: {msg}")
        return 0
    # hz: the type from the graph; raw bytes (no decoding: the rate is what is measured)
    found = []

    def typed():
        found[:] = [t for n, ts in s.node.get_topic_names_and_types() if n == _absolute(args.topic) for t in ts]
        return bool(found)
    s.wait(typed, f"no publisher of {args.topic}")
    stamps = []
    from rclpy.qos import qos_profile_sensor_data
    s.node.create_subscription(message_class(found[0]), args.topic, lambda _m: stamps.append(time.monotonic()),
                               qos_profile_sensor_data, raw=True)
    end = time.monotonic() + args.duration
    next_report = time.monotonic() + 1.0
    while time.monotonic() < end:
        s.ex.spin_once(timeout_sec=0.05)
        if time.monotonic() >= next_report:
            next_report += 1.0
            window = stamps[-args.window:]
            if len(window) < 2:
                print(f"no messages on {args.topic} yet")
                continue
            dt = [b - a for a, b in zip(window, window[1:])]
            mean = sum(dt) / len(dt)
            sd = math.sqrt(sum((d - mean) ** 2 for d in dt) / len(dt))
            print(f"average rate: {1.0 / mean:.3f}\n\tmin: {min(dt):.3f}s max: {max(dt):.3f}s "
                  f"std dev: {sd:.5f}s window: {len(window)}", flush=True)
    if len(stamps) < 2:
        raise CommandError(f"fewer than 2 messages on {args.topic} in {args.duration:g} s")
    return 0


def _pkg(args) -> int:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        print(get_package_prefix(args.package))
    except PackageNotFoundError:
        raise CommandError(f"package {args.package!r} not found in AMENT_PREFIX_PATH (make venv installs "
                           "geodyn_ros' share/ files into the venv; a ROS 2 install: source it)") from None
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m geodyn_ros2", description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the node, service or "
                    "topic (default 10)")
    verbs = ap.add_subparsers(dest="verb", required=True)
    param = verbs.add_parser("param", help="get or set a node's parameter")
    pa = param.add_subparsers(dest="action", required=True)
    for action in ("get", "set"):
        p = pa.add_parser(action)
        p.add_argument("node")
        p.add_argument("name")
        if action == "set":
            p.add_argument("value", help="YAML, as ros2 param set reads it")
    service = verbs.add_parser("service", help="call a service")
    sa = service.add_subparsers(dest="action", required=True)
    call = sa.add_parser("call")
    call.add_argument("service")
    call.add_argument("type", help="e.g. std_srvs/srv/Trigger")
    call.add_argument("values", nargs="?", default="", help="the request's fields (YAML)")
    topic = verbs.add_parser("topic", help="publish once on a topic, or measure its rate")
    ta = topic.add_subparsers(dest="action", required=True)
    pub = ta.add_parser("pub")
    pub.add_argument("--once", action="store_true", required=True, help="publish one message (the only mode)")
    pub.add_argument("topic")
    pub.add_argument("type", help="e.g. trajectory_msgs/msg/MultiDOFJointTrajectory")
    pub.add_argument("values", nargs="?", default="", help="the message's fields (YAML)")
    hz = ta.add_parser("hz")
    hz.add_argument("topic")
    hz.add_argument("--duration", type=float, default=10.0, help="seconds to measure (default 10)")
    hz.add_argument("--window", type=int, default=10000, help="messages per average (default 10000)")
    pkg = verbs.add_parser("pkg", help="where a package is installed")
    ka = pkg.add_subparsers(dest="action", required=True)
    ka.add_parser("prefix").add_argument("package")
    return ap


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.verb == "pkg":
            return _pkg(args)
        s = _Session(args.timeout)
        try:
            return {"param": _param, "service": _service, "topic": _topic}[args.verb](s, args)
        finally:
            s.close()
    except CommandError as exc:
        print(f"geodyn_ros2: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
