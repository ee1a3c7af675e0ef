"""The ROS-free layers import and fly with no ROS 2 at all (issue 52.2: what a Humble or Jazzy lab can expect).

A lab on Humble or Jazzy cannot use the Kilted wheels of ``requirements.txt`` for the nodes, but
everything outside ``geodyn_ros/ros/`` (the dynamics, the flat map, the planner, the vehicle
report, the MuJoCo loops, ``geodyn_fly``) is meant to need no ROS. That is measured here, in a
child process whose import system refuses every ROS 2 module (rclpy, rosidl, rmw, rcl_*, ament,
launch, and every ``*_msgs``/``*_srvs``/``*_interfaces`` package: what a venv without any ROS 2
install lacks), as ``import rclpy`` fails where ROS is absent:

* every module of ``geodyn_ros`` outside ``geodyn_ros.ros`` imports;
* ``geodyn_vehicle`` prints the iris's report and ``geodyn_fly`` flies the iris (a vehicle that is
  not one of the shipped demo vehicles) on the figure eight, and the flight's numbers equal, to the
  last bit, those of the same flight in a process where ROS is importable: the ROS wheels change
  nothing in the core's answer.

The hiding can fail (so the test can): in the same child, ``import rclpy`` and a ROS node module
(``geodyn_ros.ros.nodes.geodyn_node``) raise ``ModuleNotFoundError``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the child's prologue: a meta-path finder first on sys.meta_path that refuses the ROS 2 modules
HIDE_ROS = r'''
import importlib, importlib.abc, pkgutil, sys
ROS_PREFIXES = ("rclpy", "rosidl", "rcl_", "rmw", "rpyutils", "ros", "ament", "launch")
ROS_SUFFIXES = ("_msgs", "_srvs", "_interfaces")
class HideRos(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top.startswith(ROS_PREFIXES) or top.endswith(ROS_SUFFIXES):
            raise ModuleNotFoundError(f"No module named {name!r} (no ROS 2 in this process)", name=name)
        return None
sys.meta_path.insert(0, HideRos())
BEFORE = set(sys.modules)      # the ROS wheels' .pth bootstrapper runs at start-up, before the hiding
'''

CHILD = HIDE_ROS + r'''
import json
failed = []
for probe in ("rclpy", "std_msgs.msg", "geodyn_ros.ros.nodes.geodyn_node"):
    try:
        importlib.import_module(probe)
        failed.append(probe)
    except ModuleNotFoundError:
        pass
assert not failed, f"the hiding let these import: {failed}"
import geodyn_ros
bad = []
for m in pkgutil.walk_packages(geodyn_ros.__path__, "geodyn_ros."):
    if m.name == "geodyn_ros.ros" or m.name.startswith("geodyn_ros.ros."):
        continue
    try:
        importlib.import_module(m.name)
    except Exception as exc:
        bad.append(f"{m.name}: {type(exc).__name__}: {exc}")
assert not bad, "modules outside geodyn_ros.ros that need ROS:\n" + "\n".join(bad)
from geodyn_ros.loops import vehicle_report
assert vehicle_report.main(["--vehicle", "iris"]) == 0
ros = sorted({k.split(".")[0] for k in set(sys.modules) - BEFORE if k.split(".")[0].startswith(ROS_PREFIXES)})
assert not ros, ros
print("WALKED", json.dumps(len([m for m in pkgutil.walk_packages(geodyn_ros.__path__, "geodyn_ros.")
                                if not m.name.startswith("geodyn_ros.ros")])))
'''

#: the flight: short (0.5 s pre-roll, 0.5 s scored, one level), its JSON on stdout
FLY = ["--vehicle", "iris", "--levels", "ff2", "--preroll", "0.5", "--duration", "0.5", "--json"]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=3600)


def _fly(hidden: bool) -> dict:
    code = (HIDE_ROS if hidden else "") + (
        "import sys\nfrom geodyn_ros.loops import fly\n"
        f"sys.exit(fly.main({FLY!r}))\n")
    out = _run(code)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    return json.loads(out.stdout[out.stdout.index("{"):])


def test_the_core_imports_and_reports_with_every_ros_module_hidden():
    out = _run(CHILD)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert "allocation rank 4 -> flatness controller" in out.stdout, out.stdout[-3000:]
    walked = int(out.stdout.split("WALKED ", 1)[1].split()[0])
    assert walked >= 50, walked       # the walk saw the package (about 120 modules outside ros/)


def test_geodyn_fly_without_ros_gives_the_same_flight():
    """Equal to the last bit but for the wall-clock ``real_time_factor``; the flight itself is
    checked loosely (1 mm RMS: the exact model at ff2 tracks the figure eight to about 3 um, a
    vehicle that falls or drifts is metres off) since the comparison is the test."""
    without, with_ros = _fly(hidden=True), _fly(hidden=False)
    for run in (without, with_ros):
        for row in run["rows"].values():
            row.pop("real_time_factor")
    assert without == with_ros, (without["rows"], with_ros["rows"])
    assert list(without["rows"]) == ["ff2"] and without["rows"]["ff2"]["position_rms_m"] < 1e-3, without["rows"]
