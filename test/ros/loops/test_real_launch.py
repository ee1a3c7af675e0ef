"""The launch files under the real ``launch`` / ``launch_ros`` (not the stubs of
test_launch_files.py), as ``ros2 launch geodyn_ros <file>`` runs them, with and without a namespace.

* Where ``launch_ros`` is importable (a real ROS 2 install with this package built and sourced),
  ``ros2 launch`` itself is used.
* Otherwise, when the steering folder's ``../shared/tools/real_launch.sh`` is beside the
  repository, it colcon-builds the project and runs the file through the vendored upstream
  ``LaunchService`` (launch 3.7.1, launch_ros 0.28.0).
* Otherwise the tests skip, saying how to run them (``GEODYN_REAL_LAUNCH_SCRIPT=/path/to/real_launch.sh``
  names the script when the clone is not beside the steering folder): a user's clone has neither,
  and the vendored sources are an optional extra. ``GEODYN_REAL_LAUNCH=0`` skips them on request:
  ``make test`` does, because ``make test-real-launch`` runs them alone right after (as ``.ci/run``
  does), not beside two pytest workers on a two-core machine.

numba's cache for the launched nodes lives in ``NUMBA_CACHE_DIR`` (default a fixed temporary
folder, shared by every launch of a run, so the kernels compile once): the first node that starts
compiles them (a few minutes on two cores), later ones load them.

Robust under load: every launch gets a copy of ``config/geodyn.yaml`` (same ``/**/<node>`` keys)
with ``geodyn_node``'s ``stale_timeout`` at 30 s (the shipped 0.1 s makes wall-clock references
stale on a loaded machine); the tests wait for outputs (up to 15 minutes, a cold start) instead of
sleeping, and give the launch 5 minutes to stop after SIGINT. That the copy is applied *under a
namespace* is itself checked: the reference is stamped 5 s in the past, which the default
``stale_timeout`` would refuse.

Checks, each with and without ``namespace:=robot1 frame_prefix:=robot1/``:

* ``geodyn.launch.py``: the node answers a reference on ``<ns>/reference`` with the feedforward
  on ``<ns>/feedforward/*`` (joint names = the model's, values = ``gd.inverse_dynamics``, 1e-12
  relative as the node tests, wrench in ``<frame_prefix>base_link``); nothing in the root when
  namespaced; the node is ``<ns>/geodyn_node`` and its ``/diagnostics`` status names the namespace.
* ``sim.launch.py``: the loop closes (``/clock`` advances 1 s, ``<ns>/odom`` with child frame
  ``<frame_prefix>base_link``, joint states, commands and the feedforward flow with the right names).
* ``actuated_sim.launch.py`` and ``underactuated_sim.launch.py`` (in a namespace): the actuated and
  the under-actuated loops close in MuJoCo and their outputs flow.
* ``underactuated_sim.launch.py mission:=config/mission_example.yaml``: the waypoint mission
  flies (the reference's jets equal the plan, the system CoM stays within 1 mm of it).
* ``fly.launch.py urdf:=... vehicle:=test/data/hex_list.yaml``: a user's vehicle (rotor list, mixed
  joints) flies geodyn_fly's figure eight (system CoM within 1 mm); a vehicle that cannot fly
  stops the launch in one line.
* ``two_robots.launch.py``: ``geodyn.launch.py`` twice, ``/robot1`` (aerial manipulator) and
  ``/robot2`` (quadruped), fed and checked by ``geodyn_ros.examples.two_robots`` (no crosstalk).
* ``px4.launch.py stand_in:=true arm:=true``: the chain through PX4's offboard interface against
  the PX4 stand-in (the bridge switches to offboard and arms, the vehicle leaves its stand and flies
  the figure eight on PX4's 100 Hz onboard odometry, the CoM within 0.3 m of the reference).
* A namespace ROS refuses stops the launch with one line naming the argument, no traceback.

SIGINT to the launch stops every node cleanly (launch reports "process has finished cleanly",
never "process has died").
"""
from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from launch_runner import CANNOT_RUN, HAVE_LAUNCH_ROS, SCRIPT, START_TIMEOUT, _clean_stop, _launch, _stop
from ros_harness import Harness, decode_reference

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from geodyn_msgs.msg import DesiredState, FeedforwardJet, FlatReference, ReferenceJet, RotorSpeeds

import geodyn_ros as gd
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.trajectories import table3_reference

ROOT = Path(__file__).resolve().parents[3]
FORCE_SKIP = os.environ.get("GEODYN_REAL_LAUNCH") == "0"
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
STALE_TIMEOUT = 30.0    # geodyn_node's stale_timeout in the test config
NAMESPACES = [pytest.param("", id="root"), pytest.param("robot1", id="robot1")]

pytestmark = [
    pytest.mark.skipif(FORCE_SKIP, reason="GEODYN_REAL_LAUNCH=0: skipped on request (make test does this; "
                       "make test-real-launch runs them, as .ci/run does)"),
    pytest.mark.skipif(not FORCE_SKIP and not HAVE_LAUNCH_ROS and not SCRIPT.exists(), reason=CANNOT_RUN),
]


def _graph_nodes(h, names, ns):
    """The probe's view of the ROS graph once every one of ``names`` is in ``ns`` (or after 10 s, load
    scaled): node names reach the probe through DDS discovery, which can trail a node's first data."""
    want = {(n, ns) for n in names}
    h.spin_until(lambda: want <= set(h.probe.get_node_names_and_namespaces()), 10.0)
    return h.probe.get_node_names_and_namespaces()


@pytest.fixture(scope="module")
def test_config(tmp_path_factory):
    """config/geodyn.yaml with geodyn_node's stale_timeout at 30 s, same keys."""
    config = yaml.safe_load((ROOT / "config" / "geodyn.yaml").read_text())
    assert config["/**/geodyn_node"]["ros__parameters"]["stale_timeout"] == 0.1
    config["/**/geodyn_node"]["ros__parameters"]["stale_timeout"] = STALE_TIMEOUT
    path = tmp_path_factory.mktemp("real_launch") / "geodyn_test.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(path)


@pytest.fixture
def harness(monkeypatch):
    """A probe on LOCALHOST discovery; one real launch at a time on this machine (the script's
    shared virtual environment is built on first use, and two launches would share the CPU)."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    with open("/tmp/geodyn-real-launch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        h = Harness()
        try:
            yield h
        finally:
            h.close()


def _ns_args(ns):
    return [f"namespace:={ns}", f"frame_prefix:={ns}/"] if ns else []


def _topic(ns, name):
    return f"/{ns}/{name}" if ns else name


def _wait(h, proc, cond, what, timeout=START_TIMEOUT, step=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if step is not None:
            step()
        h.spin_for(0.2)
        if cond():
            return
    out = "" if proc.poll() is None else proc.communicate()[0][-4000:]
    pytest.fail(f"{what} within {timeout:g} s (launch {'running' if proc.poll() is None else 'exited'})\n{out}")



def _record_flight(h):
    """The recorders of a flight (root namespace): ``/clock``, ``odom`` and ``joint_states`` (room
    for the last 200 odometry samples and their joint states)."""
    return (h.record(ClockMsg, "/clock", depth=10), h.record(Odometry, "odom", depth=1000),
            h.record(JointState, "joint_states", depth=1000))


def _flown(clocks, odom, js, seconds):
    """True once odometry and joint states flow and ``/clock`` reached ``seconds`` of simulated time."""
    return bool(odom and js and clocks and clocks[-1].clock.sec * 10**9 + clocks[-1].clock.nanosec
                >= round(seconds * 1e9))


def _check_com_tracks(model, odom, js, com_at, tol):
    """The system CoM (``gd.center_of_mass`` of the pose in ``odom`` and the ``joint_states`` of the
    same stamp) of the last 200 odometry samples is within ``tol`` [m] of ``com_at(t)``; at least
    50 of them pair with a joint state (the lock-step loop publishes both every step)."""
    from geodyn_ros.lie import quat_to_matrix
    by_stamp = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in js}
    checked = 0
    for o in odom[-200:]:
        j = by_stamp.get((o.header.stamp.sec, o.header.stamp.nanosec))
        if j is None:
            continue
        p, r = o.pose.pose.position, o.pose.pose.orientation
        C = np.eye(4)
        C[:3, 3], C[:3, :3] = (p.x, p.y, p.z), quat_to_matrix([r.x, r.y, r.z, r.w], "xyzw")
        q = np.array([dict(zip(j.name, j.position))[n] for n in model.joint_names])
        com = gd.center_of_mass(model, C, None, q[None])[0]
        t = o.header.stamp.sec + o.header.stamp.nanosec * 1e-9
        assert np.linalg.norm(com - com_at(t)) < tol, (t, com, com_at(t))
        checked += 1
    assert checked >= 50, checked

@pytest.mark.parametrize("ns", NAMESPACES)
def test_geodyn_launch_serves_the_feedforward(harness, test_config, ns):
    h = harness
    proc = _launch("geodyn.launch.py", "order:=1", f"config:={test_config}", *_ns_args(ns))
    try:
        jets = h.record(FeedforwardJet, _topic(ns, "feedforward/jet"))
        wrenches = h.record(WrenchStamped, _topic(ns, "feedforward/wrench"))
        diag = h.record(DiagnosticArray, "/diagnostics")
        root_jets = h.record(FeedforwardJet, "/feedforward/jet") if ns else []
        pub = h.publisher(ReferenceJet, _topic(ns, "reference"))
        ref = table3_reference(3.0, 2)
        prefix = f"{ns}/" if ns else ""
        msg = make_reference_jet(0, ref.base_pose, ref.base_twist[:4], ref.q[:4], NAMES,
                                 child_frame_id=prefix + "base_link")

        def send():   # 5 s old: only a stale_timeout above it (the test config's 30 s) accepts it
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns() - 5 * 10**9, 10**9)
            pub.publish(msg)
        _wait(h, proc, lambda: jets and wrenches, "no feedforward from the launched node", step=send)
        last = jets[-1]
        assert list(last.joint_names) == list(NAMES) and last.representation in ("", "spatial")
        assert last.header.frame_id == "world" and last.child_frame_id == prefix + "base_link"
        W = np.array([[w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z]
                      for w in last.base_wrench])
        tau = np.array(last.tau).reshape(len(W), len(NAMES))
        C, V, Q = decode_reference(msg)   # every reference sent differs only by its stamp
        want = gd.inverse_dynamics(gd.load_urdf(shipped_urdf()), C, V[:3], Q[:4], 1)
        scale = max(1.0, np.abs(want.tau).max(), np.abs(want.base_wrench).max())
        assert np.abs(tau - want.tau).max() <= 1e-12 * scale
        assert np.abs(W - want.base_wrench).max() <= 1e-12 * scale
        assert wrenches[-1].header.frame_id == (f"{ns}/" if ns else "") + "base_link"
        assert ("geodyn_node", f"/{ns}" if ns else "/") in _graph_nodes(h, ("geodyn_node",), f"/{ns}" if ns else "/")
        status = f"{ns}/geodyn_node: feedforward" if ns else "geodyn_node: feedforward"
        _wait(h, proc, lambda: any(s.name == status for a in diag for s in a.status),
              f"no /diagnostics status named {status!r}", timeout=60)
        assert not root_jets, "a namespaced launch published in the root namespace"
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_node"])


@pytest.mark.parametrize("ns", NAMESPACES)
def test_sim_launch_closes_the_loop(harness, test_config, ns):
    h = harness
    proc = _launch("sim.launch.py", f"config:={test_config}", *_ns_args(ns))
    try:
        clocks = h.record(ClockMsg, "/clock", depth=10)
        odom = h.record(Odometry, _topic(ns, "odom"), depth=10)
        js = h.record(JointState, _topic(ns, "joint_states"), depth=10)
        cmds = h.record(WrenchStamped, _topic(ns, "cmd/wrench"), depth=10)
        jets = h.record(FeedforwardJet, _topic(ns, "feedforward/jet"), depth=10)
        _wait(h, proc, lambda: cmds and jets and odom and js and clocks and clocks[-1].clock.sec >= 1,
              "the loop did not run 1 s of simulated time")
        prefix = f"{ns}/" if ns else ""
        assert odom[-1].child_frame_id == prefix + "base_link" and odom[-1].header.frame_id == "world"
        assert tuple(js[-1].name) == NAMES
        assert cmds[-1].header.frame_id == prefix + "base_link"
        assert tuple(jets[-1].joint_names) == NAMES and jets[-1].child_frame_id == prefix + "base_link"
        assert np.isfinite(odom[-1].pose.pose.position.z)
        nodes = _graph_nodes(h, ("geodyn_sim", "geodyn_reference", "geodyn_node", "geodyn_controller"),
                             f"/{ns}" if ns else "/")
        for name in ("geodyn_sim", "geodyn_reference", "geodyn_node", "geodyn_controller"):
            assert (name, f"/{ns}" if ns else "/") in nodes, (name, nodes)
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_sim", "geodyn_reference", "geodyn_node", "geodyn_controller"])


def test_actuated_sim_launch_closes_the_loop(harness, test_config):
    """actuated_sim.launch.py under a namespace: the actuated simulator, reference, geodyn_node
    (body jet) and the actuated controller close the loop: /clock advances 1 s, motor_states
    names the elastic joints, rotor speeds (Float64MultiArray here: no actuator_msgs) are
    finite and inside (0, max_rot_velocity], motor efforts carry the elastic joints' names."""
    h = harness
    ns = "robot1"
    proc = _launch("actuated_sim.launch.py", f"config:={test_config}", *_ns_args(ns))
    try:
        clocks = h.record(ClockMsg, "/clock", depth=10)
        odom = h.record(Odometry, _topic(ns, "odom"), depth=10)
        motors = h.record(JointState, _topic(ns, "motor_states"), depth=10)
        from actuator_msgs.msg import Actuators as rotor_type
        rotors = h.record(rotor_type, _topic(ns, "cmd/rotor_speeds"), depth=10)
        efforts = h.record(JointState, _topic(ns, "cmd/motor_efforts"), depth=10)
        _wait(h, proc, lambda: rotors and efforts and motors and odom and clocks and clocks[-1].clock.sec >= 1,
              "the actuated loop did not run 1 s of simulated time")
        assert odom[-1].child_frame_id == f"{ns}/base_link"
        assert tuple(motors[-1].name) == NAMES and tuple(efforts[-1].name) == NAMES
        om = np.array(rotors[-1].velocity)
        assert om.shape == (6,) and np.isfinite(om).all() and (om > 0).all() and (om <= 1000.0).all(), om
        nodes = _graph_nodes(h, ("geodyn_actuated_sim", "geodyn_reference", "geodyn_node",
                                 "geodyn_actuated_controller"), f"/{ns}")
        for name in ("geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_actuated_controller"):
            assert (name, f"/{ns}") in nodes, (name, nodes)
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_actuated_controller"])


def test_underactuated_sim_launch_closes_the_loop(harness):
    """underactuated_sim.launch.py under a namespace, with its own config/underactuated.yaml: the
    collinear hexarotor in MuJoCo, the figure-eight flat reference, geodyn_node in flat mode and
    the flat controller close the loop (/clock advances 1 s); the flat-mode outputs flow
    (desired/state, the thrust-torque jet, the rotor-speed feedforward with the rotor links'
    names); rotor commands are finite and inside (0, max_rot_velocity]; it stops cleanly."""
    h = harness
    ns = "robot1"
    proc = _launch("underactuated_sim.launch.py", "level:=ff1", *_ns_args(ns))
    try:
        clocks = h.record(ClockMsg, "/clock", depth=10)
        odom = h.record(Odometry, _topic(ns, "odom"), depth=10)
        motors = h.record(JointState, _topic(ns, "motor_states"), depth=10)
        desired = h.record(DesiredState, _topic(ns, "desired/state"), depth=10)
        flat_jet = h.record(FeedforwardJet, _topic(ns, "feedforward/flat_jet"), depth=10)
        rotor_ff = h.record(RotorSpeeds, _topic(ns, "feedforward/rotor_speeds"), depth=10)
        from actuator_msgs.msg import Actuators as rotor_type
        rotors = h.record(rotor_type, _topic(ns, "cmd/rotor_speeds"), depth=10)
        _wait(h, proc, lambda: rotors and motors and odom and desired and flat_jet and rotor_ff and clocks
              and clocks[-1].clock.sec >= 1, "the under-actuated loop did not run 1 s of simulated time")
        assert odom[-1].child_frame_id == f"{ns}/base_link"
        assert tuple(motors[-1].name) == NAMES
        assert flat_jet[-1].representation == "body" and tuple(flat_jet[-1].joint_names) == NAMES
        assert list(rotor_ff[-1].rotor_names) == [f"rotor_{i}" for i in range(1, 7)]
        assert list(desired[-1].joint_names) == list(NAMES)
        om = np.array(rotors[-1].velocity)
        assert om.shape == (6,) and np.isfinite(om).all() and (om > 0).all() and (om <= 1000.0).all(), om
        nodes = _graph_nodes(h, ("geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"),
                             f"/{ns}")
        for name in ("geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"):
            assert (name, f"/{ns}") in nodes, (name, nodes)
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"])


def test_two_robots_launch_no_crosstalk(harness, test_config):
    from geodyn_ros.examples.two_robots import ROBOTS, check_record, run_two_robots
    proc = _launch("two_robots.launch.py", f"config:={test_config}")
    try:
        records, stray = run_two_robots(20, robots=ROBOTS, start_nodes=False, wait_timeout=START_TIMEOUT,
                                        sample_timeout=30.0)
        assert stray == 0
        for rec in records:
            summary = check_record(rec, 2)
            assert not summary["problems"], (rec.spec.namespace, summary["problems"])
            # the 20 samples and the answered warm-up one (readiness handshake, see two_robots)
            assert rec.lost == 0 and 21 <= summary["outputs"] <= len(rec.states), \
                (rec.spec.namespace, summary, rec.lost, rec.warmup)
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_node", "geodyn_node"])
    assert len(re.findall(r"\[geodyn_node-\d+\]: process has finished cleanly", out)) == 2, out[-4000:]


def test_bad_namespace_stops_the_launch_in_one_line(harness):
    proc = _launch("geodyn.launch.py", "namespace:=robot 1")
    try:
        out, _ = proc.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail("the launch with a bad namespace did not stop:\n" + out[-4000:])
    assert proc.returncode != 0
    errors = [ln for ln in out.splitlines() if "[ERROR]" in ln]
    assert len(errors) == 1, out[-4000:]
    assert "launch argument 'namespace': 'robot 1' is not a valid ROS namespace" in errors[0]
    assert "Traceback" not in out and "process started" not in out, out[-4000:]


def test_underactuated_sim_launch_flies_a_mission(harness):
    """underactuated_sim.launch.py mission:=config/mission_example.yaml (root namespace): the
    simulator starts on the plan, geodyn_reference (trajectory waypoints) publishes the plan's jets
    (equal, to rounding, to plan_mission of the file's waypoints read here with PyYAML), accepts
    the mission after its whole-body check (/diagnostics OK with the margin), latches the planned
    CoM on planned_path, and the ff2 loop flies it: 2.5 s of simulated time (through the middle
    waypoint at 2 s) with the system CoM (gd.center_of_mass of odom and joint_states) within 1 mm
    of the plan (the in-process ff2 flight of a plan tracks to ~1e-4 m, test_planning)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from geodyn_ros.planning import plan_mission
    from nav_msgs.msg import Path as PathMsg
    h = harness
    mission = ROOT / "config" / "mission_example.yaml"
    wps = yaml.safe_load(mission.read_text())["waypoints"]
    plan = plan_mission([w["com"] for w in wps], [w["yaw"] for w in wps], [w["q"] for w in wps],
                        [w["time"] for w in wps], order=2)
    proc = _launch("underactuated_sim.launch.py", f"mission:={mission}")
    try:
        clocks, odom, js = _record_flight(h)
        refs = h.record(FlatReference, "flat_reference", depth=10)
        diag = h.record(DiagnosticArray, "/diagnostics")
        paths = []
        h.probe.create_subscription(PathMsg, "planned_path", paths.append,
                                    QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                               durability=DurabilityPolicy.TRANSIENT_LOCAL))
        _wait(h, proc, lambda: refs and paths and _flown(clocks, odom, js, 2.5),
              "the mission did not fly 2.5 s of simulated time")
        for m in refs[-3:]:
            t = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
            com = np.array([[c.x, c.y, c.z] for c in m.com])
            q = np.array(m.q).reshape(len(com), len(m.joint_names))
            want = plan(t, 2)
            # rounding: the same plan solved twice, jets up to ~1e2 (test_ros_mission's tolerance)
            assert np.all(np.abs(com - want.com) <= 1e-9 * np.maximum(1.0, np.abs(want.com))), t
            assert np.all(np.abs(q[:5] - want.q) <= 1e-9 * np.maximum(1.0, np.abs(want.q))), t
        assert paths[-1].header.frame_id == "world" and len(paths[-1].poses) == 81
        # the node repeats its last mission event every diagnostics_period (1 s): "mission accepted"
        # is reported once, at the acceptance (at start-up for the file's mission, possibly before
        # this recorder subscribed to the volatile /diagnostics), then "mission flying" once the plan
        # switches in; both are OK and carry the whole-body check's worst margin
        events = ("mission accepted", "mission flying")
        _wait(h, proc, lambda: any(s.message.startswith(events) for a in diag for s in a.status),
              "no 'mission accepted' or 'mission flying' status on /diagnostics", timeout=60)
        accepted = [s for a in diag for s in a.status if s.message.startswith(events)]
        assert accepted[-1].level == DiagnosticStatus.OK, accepted[-1]
        assert "worst margin +0.2488 at t = 1.952 s (rotor 5 lag max)" in accepted[-1].message, accepted[-1]
        model = gd.load_urdf(str(ROOT / "urdf" / "hexarotor_manipulator.urdf.xacro"),
                             locked_joints=[f"rotor_{i}_joint" for i in range(1, 7)])
        # 1 mm: measured 1.4e-5 m (t = 2.35..2.55 s); the lock-step loop does not depend on the load
        _check_com_tracks(model, odom, js, lambda t: plan(t, 0).com[0], tol=1e-3)
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"])


def test_fly_launch_flies_a_users_vehicle_and_refuses_one_that_cannot(harness, tmp_path):
    """fly.launch.py urdf:=urdf/aerial_manipulator.urdf vehicle:=test/data/hex_list.yaml (a rotor
    list, no rotor links in the URDF, mixed rigid/elastic joints): the rank-4 composition starts
    (geodyn_flat_controller, not the actuated one), geodyn_reference publishes geodyn_fly's
    figure eight for this vehicle, and 1.5 s of simulated time fly with the system CoM within 1 mm
    of it (the lock-step loop equals the in-process one, test_ros_fly, which tracks at ~1e-5 m).
    The same vehicle with a quarter of the motor constant (thrust-to-weight 0.49) stops the launch
    with one [ERROR] line naming thrust-to-weight, a non-zero exit and no node started."""
    from geodyn_ros.ros.loops.fly_closed_loop import vehicle_reference
    h = harness
    urdf, vehicle = ROOT / "urdf" / "aerial_manipulator.urdf", ROOT / "test" / "data" / "hex_list.yaml"
    ref, rank, names = vehicle_reference(str(urdf), str(vehicle), "figure8")
    assert rank == 4
    proc = _launch("fly.launch.py", f"urdf:={urdf}", f"vehicle:={vehicle}")
    try:
        clocks, odom, js = _record_flight(h)
        _wait(h, proc, lambda: _flown(clocks, odom, js, 1.5), "fly.launch.py did not fly 1.5 s of simulated time")
        # 1 mm: the in-process loop (test_ros_fly) tracks at ~1e-5 m; the lock-step loop equals it
        _check_com_tracks(gd.load_urdf(str(urdf)), odom, js, lambda t: ref(t, 0).com[0], tol=1e-3)
    finally:
        code, out = _stop(proc)
    _clean_stop(out, ["geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller"])
    assert "geodyn_actuated_controller" not in out
    weak = tmp_path / "weak.yaml"
    weak.write_text(vehicle.read_text().replace("motor_constant: 1.269e-05", "motor_constant: 3.17e-06")
                    .replace("motor_constant: 1.3e-05", "motor_constant: 3.2e-06"))
    proc = _launch("fly.launch.py", f"urdf:={urdf}", f"vehicle:={weak}")
    try:
        out, _ = proc.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail("the launch of a vehicle that cannot fly did not stop:\n" + out[-4000:])
    assert proc.returncode != 0
    errors = [ln for ln in out.splitlines() if "[ERROR]" in ln]
    assert len(errors) == 1 and "fly.launch.py: refused: " in errors[0] and "thrust-to-weight" in errors[0], out[-4000:]
    assert "Traceback" not in out and "process started" not in out, out[-4000:]


def test_px4_launch_flies_through_the_stand_in(harness):
    """px4.launch.py stand_in:=true arm:=true (issue 44's user path without a PX4): the bridge's
    start sequence (offboard, then armed) confirmed by PX4's stand-in on /fmu/out/vehicle_status_v1;
    the vehicle then flies the figure eight on the stand-in's onboard odometry (100 Hz, 10 ms, the
    estimator's error), its base within 0.3 m of the reference's base over the last odometry
    samples (the estimator's 4 cm floor, and the take-off from the stand; a divergence goes metres
    away); every node stops cleanly."""
    from px4_msgs.msg import VehicleStatus
    from geodyn_ros.trajectories import figure_eight_reference
    from geodyn_ros.control.rotors import load_actuation_config
    h = harness
    proc = _launch("px4.launch.py", "stand_in:=true", "arm:=true")
    nodes = ["geodyn_px4_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller", "geodyn_px4_bridge"]
    try:
        clocks = h.record(ClockMsg, "/clock", depth=10)
        status = h.record(VehicleStatus, "/fmu/out/vehicle_status_v1", depth=1000)
        odom = h.record(Odometry, "odom", depth=1000)
        _wait(h, proc, lambda: clocks and clocks[-1].clock.sec >= 5 and len(odom) > 100,
              "px4.launch.py did not fly 5 s of simulated time")
        armed = [m for m in status if m.arming_state == 2]
        assert armed and armed[0].nav_state == 14 and not any(m.failsafe for m in status), \
            [(m.arming_state, m.nav_state, m.failsafe) for m in status]
        # the figure eight (speed 0.5 from start_time 2 s, config/px4.yaml): the base reference of
        # its flat map, against the bridge's odom (PX4's estimate) of the last 100 samples
        cfg = load_actuation_config(ROOT / "config" / "hexarotor_px4.yaml")
        model = cfg.load_model(str(shipped_urdf("hexarotor_manipulator.urdf.xacro")))
        far = 0.0
        for o in list(odom)[-100:]:
            t = o.header.stamp.sec + o.header.stamp.nanosec * 1e-9
            ref = figure_eight_reference(max(t - 2.0, 0.0), 2, speed=0.5)
            flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 0)
            p = o.pose.pose.position
            far = max(far, float(np.linalg.norm(np.array([p.x, p.y, p.z]) - flat.base_pose[:3, 3])))
        assert far < 0.3, far
    finally:
        code, out = _stop(proc)
    _clean_stop(out, nodes)
