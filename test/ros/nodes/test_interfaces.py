"""The executables' table (``geodyn_ros.ros.common.interfaces``) against the code, and ``--help``.

* setup.py's console scripts are exactly the table's executables, each running the module the
  table names;
* ``<exe> --help`` prints the executable's topics and parameters and exits 0 at once (before this,
  ``geodyn_node --help`` printed nothing and waited for input, issue 31);
* each node, started with parameter sets that switch on every optional topic, subscribes and
  publishes exactly the topics of the table (the union over the sets): a renamed topic, a new one
  or a stale table entry fails here, and the docs' topic names are checked against the same
  table (test_docs.py).
"""
from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geodyn_ros.ros.common import interfaces

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def test_console_scripts_are_the_table():
    setup = (ROOT / "setup.py").read_text()
    scripts = dict(re.findall(r'"(geodyn_\w+) = (\S+?)"', setup))
    assert set(scripts) == {e.name for e in interfaces.EXECUTABLES}
    entry = (ROOT / "geodyn_ros_entry.py").read_text()
    for e in interfaces.EXECUTABLES:
        target = scripts[e.name]
        if target.startswith("geodyn_ros_entry:"):
            fn = target.split(":")[1]
            body = entry.split(f"def {fn}()")[1].split("\ndef ")[0]
            assert f'_run("{e.module}", "{e.name}")' in body, f"{e.name}: the entry passes its name for --help"
        else:
            assert target == f"{e.module}:main", e.name
        assert callable(getattr(importlib.import_module(e.module), "main")), e.module


@pytest.mark.parametrize("exe", [e.name for e in interfaces.EXECUTABLES])
def test_help_prints_topics_and_parameters_and_exits(exe):
    """The installed console script, as a user runs it; stdin closed, so a node that started
    instead of printing help would not exit by itself (timeout: the command's own import time,
    seconds warm, with a wide margin for a loaded machine)."""
    e = interfaces.by_name(exe)
    t0 = time.monotonic()
    out = subprocess.run([str(BIN / exe), "--help"], capture_output=True, text=True, timeout=240,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "usage" in text.lower(), text
    for t in e.subscribes + e.publishes:
        assert t.name in text, (exe, t.name)
    if e.is_node:
        for name in importlib.import_module(e.module).PARAMETERS:
            assert name in text, (exe, name)
    assert time.monotonic() - t0 < 240


# ----------------------------------------------------------------------------- the real topics
def _sets():
    from geodyn_ros.loops.actuated import tilthex_source
    from geodyn_ros.loops.underactuated import hexarotor_source
    from geodyn_ros.model.resources import shipped_urdf
    urdf, hexa, tilt = str(shipped_urdf()), str(hexarotor_source()), str(tilthex_source())
    hexa_cfg = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
    return {
        "geodyn_node": [{"urdf_path": urdf}, {"urdf_path": urdf, "input_mode": "measured",
                                               "publish_linearization": True},
                        {"urdf_path": hexa, "input_mode": "flat", "actuation_config": hexa_cfg}, {}],
        "geodyn_reference": [{"use_sim_time": True}, {"trajectory": "figure_eight"}, {"trajectory": "waypoints"}],
        "geodyn_sim": [{"urdf_path": urdf}, {}],
        "geodyn_actuated_sim": [{"urdf_path": tilt}, {}],
        "geodyn_controller": [{"urdf_path": urdf, "per_joint_effort_topics": True}, {}],
        "geodyn_actuated_controller": [{"urdf_path": tilt, "per_joint_effort_topics": True,
                                        "rejection_wrench_feedforward": True, "rejection_frame": "link4",
                                        "rejection_engage": "armed"}, {}],
        # (the linearization's /labels topic: only with the deprecated multiarray blocks)
        "geodyn_flat_controller": [{"urdf_path": hexa, "feedback": "lqr", "gain_thread": False,
                                    "per_joint_effort_topics": True},
                                   {"urdf_path": hexa, "feedback": "lqr", "message_types": "multiarray"},
                                   {"urdf_path": hexa, "rejection_integral_action": True, "rejection_frame": "link4",
                                    "rejection_engage": "armed"}, {}],
        "geodyn_markers": [{"urdf_path": tilt, "actuation_config": "config/tilthex.yaml"}, {}],
        "geodyn_px4_bridge": [{"actuation_config": str(ROOT / "test" / "data" / "quad_x_px4.yaml")},
                              {"actuation_config": str(ROOT / "test" / "data" / "quad_x_px4.yaml"),
                               "px4_mode": "direct_actuator"}],
        "geodyn_px4_sim": [{"urdf_path": str(ROOT / "test" / "data" / "quad_x.urdf"),
                            "actuation_config": str(ROOT / "test" / "data" / "quad_x_px4.yaml")},
                           {"actuation_config": str(ROOT / "test" / "data" / "quad_x_px4.yaml")}],
    }


def _node_class(module: str):
    mod = importlib.import_module(module)
    from rclpy.node import Node
    classes = [v for v in vars(mod).values()
               if isinstance(v, type) and issubclass(v, Node) and v.__module__ == module]
    assert len(classes) == 1, (module, classes)
    return classes[0]


def _matches(declared: str, real: str, node) -> bool:
    """``real`` (fully qualified, as the graph reports it) is the declared name ``declared`` for the
    node ``(name, namespace)``."""
    name, ns = node[0], node[1].rstrip("/")
    if declared.startswith("~/"):
        full = f"{ns}/{name}/{declared[2:]}"
    elif declared.startswith("/"):
        full = declared
    else:
        full = f"{ns}/{declared}"
    pattern = re.escape(full).replace(re.escape("<joint>"), r"[A-Za-z0-9_]+")
    return re.fullmatch(pattern, real) is not None


@pytest.mark.parametrize("exe", [e.name for e in interfaces.NODES])
def test_nodes_create_exactly_the_topics_of_the_table(exe, h):
    e = interfaces.by_name(exe)
    cls = _node_class(e.module)
    real_sub, real_pub, types = set(), set(), set()
    nodes = []
    for params in _sets()[exe]:
        node = h.make(cls, params)
        nodes.append(node)
        name, ns = node.get_name(), node.get_namespace()
        # the node's own graph entries: rcl knows them locally at once (no discovery involved)
        got_sub = {(t, tuple(ty)) for t, ty in node.get_subscriber_names_and_types_by_node(name, ns)}
        got_pub = {(t, tuple(ty)) for t, ty in node.get_publisher_names_and_types_by_node(name, ns)}
        ignored = {"/rosout", "/parameter_events"}
        for got, bucket in ((got_sub, real_sub), (got_pub, real_pub)):
            bucket |= {(t, (name, ns)) for t, _ in got if t not in ignored}
            if params.get("message_types") != "multiarray":   # the default types (the multiarray test below)
                types |= {(t, (name, ns), ty) for t, ty in got if t not in ignored}
        h.nodes.remove(node)
        node.destroy_node()
    for kind, declared, real in (("subscribes", e.subscribes, real_sub), ("publishes", e.publishes, real_pub)):
        unknown = sorted(t for t, nd in real if not any(_matches(d.name, t, nd) for d in declared))
        assert not unknown, f"{exe} {kind} topics missing from geodyn_ros.ros.common.interfaces: {unknown}"
        unused = [d.name for d in declared if not any(_matches(d.name, t, nd) for t, nd in real)]
        assert not unused, f"{exe}: geodyn_ros.ros.common.interfaces says it {kind} {unused}, no parameter set does"
    # the types: a declared single type ("pkg/Name", no alternatives) is the graph's "pkg/msg/Name"
    for d in e.subscribes + e.publishes:
        if " " in d.type:
            continue
        pkg, name = d.type.split("/")
        wrong = sorted({ty for t, nd, ty in types if _matches(d.name, t, nd) and ty != (f"{pkg}/msg/{name}",)})
        assert not wrong, f"{exe}: {d.name} has types {wrong}, the table says {d.type}"


@pytest.mark.parametrize("exe", [e.name for e in interfaces.NODES
                                 if "message_types" in importlib.import_module(e.module).PARAMETERS])
def test_message_types_multiarray_turns_every_jet_topic_into_the_layouts(exe, h):
    """Issue 43: the deprecated layouts stay behind ONE parameter. With ``message_types:
    multiarray`` every topic the table types as ``geodyn_msgs/*`` is ``std_msgs/Float64MultiArray``
    on the graph, and the other topics keep their types (each parameter set of the table check)."""
    e = interfaces.by_name(exe)
    cls = _node_class(e.module)
    typed = {d.name for d in e.subscribes + e.publishes if d.type.startswith("geodyn_msgs/")}
    assert typed, exe
    seen = set()
    for params in _sets()[exe]:
        node = h.make(cls, dict(params, message_types="multiarray"))
        name, ns = node.get_name(), node.get_namespace()
        got = (node.get_subscriber_names_and_types_by_node(name, ns)
               + node.get_publisher_names_and_types_by_node(name, ns))
        for t, ty in got:
            for d in typed:
                if _matches(d, t, (name, ns)):
                    assert tuple(ty) == ("std_msgs/msg/Float64MultiArray",), (exe, t, ty)
                    seen.add(d)
            assert not any(x.startswith("geodyn_msgs/") for x in ty), (exe, t, ty)
        h.nodes.remove(node)
        node.destroy_node()
    assert seen == typed, f"{exe}: {sorted(typed - seen)} not created by any parameter set"


_HIDE = "import sys; sys.modules['geodyn_msgs'] = None; sys.modules['geodyn_msgs.msg'] = None; "


@pytest.mark.parametrize("exe", [e.name for e in interfaces.NODES
                                 if "message_types" in importlib.import_module(e.module).PARAMETERS])
def test_without_geodyn_msgs_typed_refuses_in_one_line_and_multiarray_runs(exe, tmp_path):
    """A colcon workspace that built this package without geodyn_msgs (its nested interface
    package): every node still imports; with the default ``message_types: typed`` it stops at once
    with ONE line saying how to build geodyn_msgs (no traceback); with the deprecated
    ``multiarray`` it starts (stopped here by SIGINT after its start-up line)."""
    e = interfaces.by_name(exe)
    urdf = str(ROOT / "urdf" / "aerial_manipulator.urdf")
    args = ["--ros-args", "-p", f"urdf_path:={urdf}"] if "urdf_path" in importlib.import_module(e.module).PARAMETERS \
        else ["--ros-args"]
    code = _HIDE + f"from {e.module} import main; sys.exit(main({args!r}))"
    env = dict(os.environ, ROS_DOMAIN_ID=str(100 + os.getpid() % 50), ROS_AUTOMATIC_DISCOVERY_RANGE="OFF")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode != 0, out.stdout[-2000:] + out.stderr[-2000:]
    text = out.stdout + out.stderr
    assert "Traceback" not in text, text[-3000:]
    lines = [ln for ln in text.splitlines() if "geodyn_msgs" in ln]
    assert len(lines) == 1 and "message_types" in lines[0] and "colcon build" in lines[0], text[-3000:]
    # the deprecated layouts need no geodyn_msgs: the node starts and runs until stopped
    code = _HIDE + (f"from {e.module} import main; sys.exit(main({args + ['-p', 'message_types:=multiarray']!r}))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        seen = ""
        while time.monotonic() < deadline and "deprecated" not in seen:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        assert "deprecated" in seen, seen[-3000:]
        assert proc.poll() is None, seen[-3000:]   # still running: it started
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in seen, seen[-3000:]


_HIDE_ACTUATORS = "import sys; sys.modules['actuator_msgs'] = None; sys.modules['actuator_msgs.msg'] = None; "
_ROTOR_TOPIC = "cmd/rotor_speeds"


@pytest.mark.parametrize("exe", [e.name for e in interfaces.NODES
                                 if any(d.name == _ROTOR_TOPIC for d in e.subscribes + e.publishes)])
def test_without_actuator_msgs_every_rotor_node_stops_in_one_line(exe):
    """Issue 51: ``cmd/rotor_speeds`` is ``actuator_msgs/Actuators`` on every install (no
    ``Float64MultiArray`` fallback that a Gazebo bridge entry never matches). Where actuator_msgs
    cannot be imported, each node that publishes or reads it stops at start (exit != 0) with ONE
    line naming the package and how to install it, and no traceback; with it, the same parameters
    start the node (test_nodes_create_exactly_the_topics_of_the_table above)."""
    params = _sets()[exe][0]
    args = ["--ros-args"] + [a for k, v in params.items() for a in ("-p", f"{k}:={v}")]
    code = _HIDE_ACTUATORS + f"from {interfaces.by_name(exe).module} import main; sys.exit(main({args!r}))"
    env = dict(os.environ, ROS_DOMAIN_ID=str(100 + os.getpid() % 50), ROS_AUTOMATIC_DISCOVERY_RANGE="OFF")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                         cwd=ROOT)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    lines = [ln for ln in text.splitlines() if "actuator_msgs" in ln]
    assert len(lines) == 1, text[-3000:]
    assert "apt install ros-$ROS_DISTRO-actuator-msgs" in lines[0] and "build_interfaces.py" in lines[0], lines
