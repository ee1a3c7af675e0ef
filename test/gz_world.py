"""Helpers of the tests that run real Gazebo (test/gazebo/): find ``gz`` and ros_gz on the machine,
build a probe world around a model, run ``gz sim -s`` (server only) in a private gz-transport
partition, and read gz topics and gz's model info through the ``gz`` command line.

Where Gazebo comes from:

* ``gz`` on ``PATH`` (a lab's ``apt install ros-<distro>-ros-gz`` with ``/opt/ros/<distro>`` sourced):
  the tests use the environment as it is;
* otherwise ``GEODYN_GZ_SETUP=/path/to/setup.sh`` names a shell file to source first (a ROS
  install's ``setup.bash``, or the environment file of a Gazebo built from source); the tests run
  every Gazebo process under the environment it exports, never the pytest process itself;
* otherwise the tests skip with one line saying so.

Facts about gz-sim 8 used here (read in its sources, gz-sim8 branch; checked by running gz-sim 8.14):

* ``gz-sim-forcetorque-system`` publishes a joint's transmitted wrench (``gz.msgs.Wrench``) on the
  sensor's ``<topic>``; it refuses a joint whose parent is ``world`` ("Parent link ... not found"),
  so the probe holds the base through an anchor link welded to the world.
* ``<measure_direction>child_to_parent``: the wrench the child (the base) applies to the parent;
  ``<frame>child``: in the child's axes, about the joint origin (the base origin).
* ``gz model -m <model>`` asks the SceneBroadcaster's ``/world/<world>/state`` service and prints
  each link's mass, inertial pose, inertia matrix and world pose with 6 decimals.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

import numpy as np

#: the one line the Gazebo tests skip with when no Gazebo is found
NEEDS = ("needs Gazebo (gz-sim 8): `gz` on PATH (apt install ros-<distro>-ros-gz and source ROS) or "
         "GEODYN_GZ_SETUP=<setup file that puts it there>")

#: the line they skip with in ``make test`` (run alone by ``make test-gazebo``)
DEFERRED = "GEODYN_GAZEBO=0: the Gazebo tests run alone in `make test-gazebo`"

_ENV: dict | None = None


def skip_reason() -> str | None:
    """Why the Gazebo tests do not run here (None: they run)."""
    if os.environ.get("GEODYN_GAZEBO") == "0":
        return DEFERRED
    return None if gz_env() is not None else NEEDS


def flight_skip_reason(*, robot_state_publisher: bool = False) -> str | None:
    """Why a Gazebo flight under the real launch (test/gz_flight.py) does not run here (None: it
    runs): Gazebo, a real launch (``launch_runner.can_launch``), ros_gz and, when asked,
    robot_state_publisher."""
    from launch_runner import CANNOT_RUN, can_launch
    if skip_reason():
        return skip_reason()
    if not can_launch():
        return CANNOT_RUN
    if ros_gz_executable("ros_gz_bridge", "parameter_bridge") is None:
        return ("needs ros_gz (ros_gz_bridge parameter_bridge, ros_gz_sim create) in the Gazebo environment's "
                "AMENT_PREFIX_PATH")
    if robot_state_publisher and ros_gz_executable("robot_state_publisher", "robot_state_publisher") is None:
        return ("needs robot_state_publisher in the Gazebo environment's AMENT_PREFIX_PATH "
                "(apt install ros-<distro>-robot-state-publisher)")
    return None


def gz_env() -> dict | None:
    """The environment the Gazebo processes run in, or None when no ``gz sim`` is found."""
    global _ENV
    if _ENV is not None:
        return _ENV or None
    env = dict(os.environ)
    setup = os.environ.get("GEODYN_GZ_SETUP", "")
    if not shutil.which("gz") and not setup:
        candidates = sorted(glob.glob("/opt/ros/*/setup.bash"))
        setup = next((c for c in candidates if glob.glob(str(Path(c).parent / "lib" / "ros_gz_bridge"))), "")
    if setup:
        res = subprocess.run(["bash", "-c", f'. "{setup}" >/dev/null 2>&1 && env -0'], capture_output=True,
                             env=os.environ)
        if res.returncode == 0:
            env = dict(kv.split("=", 1) for kv in res.stdout.decode().split("\0") if "=" in kv)
            env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    gz = shutil.which("gz", path=env.get("PATH", ""))
    ok = bool(gz) and subprocess.run([gz, "sim", "--versions"], env=env, capture_output=True).returncode == 0
    _ENV = env if ok else {}
    return _ENV or None


def ros_gz_executable(package: str, name: str) -> str | None:
    """``<prefix>/lib/<package>/<name>`` from the Gazebo environment's ``AMENT_PREFIX_PATH``, or None."""
    env = gz_env() or {}
    for prefix in env.get("AMENT_PREFIX_PATH", "").split(":"):
        path = Path(prefix) / "lib" / package / name
        if prefix and path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def gz_version() -> str:
    """gz-sim's version string (``gz sim --versions``)."""
    return subprocess.run(["gz", "sim", "--versions"], env=gz_env(), capture_output=True, text=True).stdout.strip()


def urdf_to_sdf(urdf_text: str, tmp: Path) -> ET.Element:
    """gz's own URDF -> SDF conversion (``gz sdf -p``, sdformat's parser: what ``ros_gz_sim create``
    spawns from a URDF string), as the ``<model>`` element."""
    path = tmp / "model.urdf"
    path.write_text(urdf_text)
    res = subprocess.run(["gz", "sdf", "-p", str(path)], env=gz_env(), capture_output=True, text=True)
    assert res.returncode == 0, f"gz sdf -p {path}: {res.stderr.strip()[-500:]}"
    return ET.fromstring(res.stdout).find("model")


def add_force_torque_hold(model: ET.Element, topic: str, link: str = "base_link") -> None:
    """Weld ``link`` to the world through an anchor link, with a force-torque sensor on the weld that
    publishes, on ``topic``, the wrench ``link`` applies to the anchor (``link``'s axes, about its
    origin): with gravity off and the model at rest, the wrench the rest of the model (the rotors)
    applies to ``link``."""
    anchor = ET.SubElement(model, "link", name="probe_anchor")
    ET.SubElement(ET.SubElement(anchor, "inertial"), "mass").text = "1"
    weld = ET.SubElement(model, "joint", name="probe_anchor_weld", type="fixed")
    ET.SubElement(weld, "parent").text = "world"
    ET.SubElement(weld, "child").text = "probe_anchor"
    hold = ET.SubElement(model, "joint", name="probe_hold", type="fixed")
    ET.SubElement(hold, "parent").text = "probe_anchor"
    ET.SubElement(hold, "child").text = link
    sensor = ET.SubElement(hold, "sensor", name="ft", type="force_torque")
    ET.SubElement(sensor, "always_on").text = "1"
    ET.SubElement(sensor, "update_rate").text = "1000"
    ET.SubElement(sensor, "topic").text = topic
    ft = ET.SubElement(sensor, "force_torque")
    ET.SubElement(ft, "frame").text = "child"
    ET.SubElement(ft, "measure_direction").text = "child_to_parent"


def world_sdf(model: ET.Element, *, name: str = "probe", gravity=(0.0, 0.0, 0.0), z: float = 1.0,
              ground: bool = False, step: float = 0.001) -> str:
    """A world (DART, ``step`` s, real time) with Physics, SceneBroadcaster, UserCommands and
    ForceTorque, ``model`` at height ``z`` and, with ``ground``, a ground plane."""
    model = ET.fromstring(ET.tostring(model))
    for old in model.findall("pose"):
        model.remove(old)
    pose = ET.Element("pose")
    pose.text = f"0 0 {z} 0 0 0"
    model.insert(0, pose)
    plane = ("<model name='ground_plane'><static>true</static><link name='link'><collision name='c'><geometry>"
             "<plane><normal>0 0 1</normal><size>100 100</size></plane></geometry></collision></link></model>"
             if ground else "")
    systems = "".join(f"<plugin filename='gz-sim-{f}-system' name='gz::sim::systems::{c}'/>" for f, c in (
        ("physics", "Physics"), ("scene-broadcaster", "SceneBroadcaster"), ("user-commands", "UserCommands"),
        ("forcetorque", "ForceTorque")))
    return (f"<?xml version='1.0'?><sdf version='1.11'><world name='{name}'>"
            f"<physics name='fixed' type='dart'><max_step_size>{step}</max_step_size>"
            f"<real_time_factor>1</real_time_factor></physics>"
            f"<gravity>{' '.join(repr(float(g)) for g in gravity)}</gravity>{systems}{plane}"
            f"{ET.tostring(model, encoding='unicode')}</world></sdf>")


class GzServer:
    """A running ``gz sim -s -r`` in its own gz-transport partition; ``cmd(...)`` runs ``gz``
    sub-commands in the same partition."""

    def __init__(self, world_file: Path, log: Path, extra_env: dict | None = None):
        self.env = dict(gz_env(), GZ_PARTITION=f"geodyn_test_{os.getpid()}_{time.monotonic_ns()}")
        for key, value in (extra_env or {}).items():   # path lists are prepended to the environment's
            self.env[key] = value + (":" + self.env[key] if key.endswith("_PATH") and self.env.get(key) else "")
        self.log = log
        self._fh = open(log, "w")
        self.proc = subprocess.Popen(["nice", "-n", "5", "gz", "sim", "-s", "-r", "-v", "3", str(world_file)],
                                     env=self.env, stdout=self._fh, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def cmd(self, *args, timeout: float = 60.0) -> str:
        res = subprocess.run(["gz", *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        return res.stdout

    def echo(self, topic: str, timeout: float = 60.0) -> str:
        """One message of ``topic`` (``gz topic -e -n 1``), in protobuf text ("" if none came)."""
        try:
            return self.cmd("topic", "-e", "-n", "1", "-t", topic, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ""

    def publish(self, topic: str, msg_type: str, text: str) -> None:
        self.cmd("topic", "-t", topic, "-m", msg_type, "-p", text)

    def log_text(self) -> str:
        self._fh.flush()
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._fh.close()


@contextmanager
def gz_server(world_text: str, tmp: Path, extra_env: dict | None = None):
    path = tmp / "world.sdf"
    path.write_text(world_text)
    server = GzServer(path, tmp / "gz.log", extra_env)
    try:
        yield server
    finally:
        server.stop()


def parse_wrench(text: str) -> np.ndarray | None:
    """(torque, force) of a ``gz.msgs.Wrench`` in protobuf text (moment first, as the allocation), or None."""
    def vec(name):
        m = re.search(name + r"\s*\{([^}]*)\}", text)
        if not m:
            return None
        body = m.group(1)
        return np.array([float((re.search(ax + r":\s*(\S+)", body) or [None, 0.0])[1]) for ax in "xyz"])
    f, t = vec(r"\bforce"), vec(r"\btorque")
    return None if f is None or t is None else np.concatenate([t, f])


def _rpy_matrix(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return (np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
            @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]]))


def parse_model_info(text: str) -> dict:
    """``gz model -m <model>``'s links: name -> (mass, R_inertial (link axes), p_inertial (link frame),
    I (3x3, inertial axes), R_world, p_world)."""
    out = {}
    num = r"(-?[\d.]+(?:e-?\d+)?)"
    vec3 = r"\[" + r"\s+".join([num] * 3) + r"\]"
    pat = re.compile(
        r"- Name: (\S+)\s+- Parent: [^\n]*\n\s+- Mass \(kg\): " + num + r"\s+- Inertial Pose[^\n]*\n\s+"
        + vec3 + r"\s+" + vec3 + r"\s+- Inertial Matrix[^\n]*\n\s+" + vec3 + r"\s+" + vec3 + r"\s+" + vec3
        + r"\s+- Pose[^\n]*\n\s+" + vec3 + r"\s+" + vec3)
    for m in pat.finditer(text):
        g = [float(v) for v in m.groups()[1:]]
        out[m.group(1)] = (g[0], _rpy_matrix(*g[4:7]), np.array(g[1:4]), np.array(g[7:16]).reshape(3, 3),
                           _rpy_matrix(*g[19:22]), np.array(g[16:19]))
    return out


def parse_joint_velocities(text: str) -> dict:
    """joint name -> velocity of a ``gz.msgs.Model`` joint-state message (protobuf text omits zeros)."""
    out = {}
    for chunk in re.split(r"(?m)^joint \{", text)[1:]:
        name = re.search(r'name:\s*"([^"]+)"', chunk)
        vel = re.search(r"\bvelocity:\s*(\S+)", chunk)
        if name:
            out[name.group(1)] = float(vel.group(1)) if vel else 0.0
    return out
