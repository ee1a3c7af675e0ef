"""Namespaces, several robots and ``frame_prefix`` (issue 18, item 2), with real rclpy nodes.

* Two robots on one ROS domain under ``/robot1`` and ``/robot2``, one ``geodyn_node`` each in
  measured mode, each fed its own reference and state (``geodyn_ros.examples.two_robots``): every
  output must carry the robot's own joint names, ``<frame_prefix><base link>`` and a stamp this
  robot was sent, and equal ``gd.inverse_dynamics`` of that robot's model, recomputed here from
  the recorded inputs (1e-12 relative: the node runs the same double-precision kernel on inputs
  that agree to rounding). Two pairs: different robots (aerial manipulator + quadruped: other
  joint names, so crosstalk would also be refused by name) and two aerial manipulators with the
  same joint names and base link but a heavier second arm (crosstalk would be accepted by the
  node, so only the values and stamps can tell); for both, the other robot's model gives values
  far from the outputs, so the value check can see crosstalk.
* ``frame_prefix`` in the nodes that publish or check link frame ids; refused values.
* ``/diagnostics`` stays global; the status name carries the namespace.
* The console scripts' ``--namespace`` option (``run_nodes``) and ``geodyn_closed_loop``'s.
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from ros_harness import Harness, joint_states_msg, odometry_msg, read_feedforward  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

import geodyn_ros as gd
from geodyn_ros.examples.two_robots import RobotSpec, run_two_robots
from geodyn_ros.lie import Ad
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.loops.closed_loop import run_ros_closed_loop, table3_start_parameters
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.nodes.sim_node import SimNode
from geodyn_ros.loops.tracking import simulate_tracking
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
QUADRUPED = str(shipped_urdf("quadruped.urdf"))
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
TOL = 1e-12


def _heavy_arm_copy(tmp_path):
    """The aerial manipulator with its second arm (links 5-7) 2.4x heavier: same joint names,
    same base link, other dynamics."""
    text = open(URDF).read().replace('<robot name="aerial_manipulator">', '<robot name="heavy_arm">')
    for link in ("link5", "link6", "link7"):
        text = re.sub(rf'(<link name="{link}">\s*<inertial>\s*<origin[^>]*/>\s*)<mass value="0.25"/>',
                      r'\1<mass value="0.6"/>', text)
    assert text.count('<mass value="0.6"/>') == 3
    path = tmp_path / "heavy_arm.urdf"
    path.write_text(text)
    return str(path)


def _expected(model, reference, state, order):
    _, Vr, Qr = reference
    C, V0, q, qd = state
    V, Q = Vr[: order + 2].copy(), Qr[: order + 3].copy()
    V[0], Q[0], Q[1] = V0, q, qd
    return gd.inverse_dynamics(model, C, V, Q, order)


@pytest.mark.parametrize("pair", ["quadruped", "same_joint_names"])
def test_two_robots_under_two_namespaces_no_crosstalk(pair, tmp_path):
    second = QUADRUPED if pair == "quadruped" else _heavy_arm_copy(tmp_path)
    robots = (RobotSpec("robot1", URDF, "robot1/"), RobotSpec("robot2", second, "robot2/"))
    order, samples = 2, 25
    records, stray = run_two_robots(samples, robots=robots, order=order, sample_timeout=10.0,
                                    wall_timeout=300.0)
    assert stray == 0, "a root-namespace subscriber heard feedforward/jet"
    models = [gd.load_urdf(URDF), gd.load_urdf(second)]
    for rec, model, other in zip(records, models, models[::-1]):
        names = tuple(model.joint_names)
        frame = rec.spec.frame_prefix + model.base_link
        assert len(rec.states) == samples + rec.warmup and rec.lost == 0, (rec.spec.namespace, rec.lost)
        # every counted sample (and the answered warm-up one) answered exactly once on each topic
        assert samples + 1 <= len(rec.jets) == len(rec.wrenches) == len(rec.efforts) <= len(rec.states)
        assert len({read_feedforward(m)[0] for m in rec.jets}) == len(rec.jets)
        for jet, wrench, efforts in zip(rec.jets, rec.wrenches, rec.efforts):
            stamp, W, tau, jet_names, _ = read_feedforward(jet)
            assert stamp in rec.states, "an output with a stamp this robot was never sent"
            assert jet_names == names and tuple(efforts.name) == names
            assert wrench.header.frame_id == frame
            assert wrench.header.stamp.sec * 10**9 + wrench.header.stamp.nanosec == stamp
            state = rec.states[stamp]
            want = _expected(model, rec.reference, state, order)
            scale = max(1.0, np.abs(want.base_wrench).max(), np.abs(want.tau).max())
            assert np.abs(W - want.base_wrench).max() <= TOL * scale
            assert np.abs(tau - want.tau).max() <= TOL * scale
            assert np.abs(np.array(efforts.effort) - want.tau[0]).max() <= TOL * scale
            Wb = Ad(state[0]).T @ want.base_wrench[0]
            got = [wrench.wrench.torque.x, wrench.wrench.torque.y, wrench.wrench.torque.z,
                   wrench.wrench.force.x, wrench.wrench.force.y, wrench.wrench.force.z]
            assert np.abs(np.array(got) - Wb).max() <= TOL * scale
        # the check can see crosstalk: the other robot's dynamics are far from these outputs
        if other.joint_names == model.joint_names:
            stamp = read_feedforward(rec.jets[0])[0]
            alien = _expected(other, rec.reference, rec.states[stamp], order)
            _, W, tau, _, _ = read_feedforward(rec.jets[0])
            assert np.abs(tau - alien.tau).max() > 1e-3 * max(1.0, np.abs(tau).max())
    # stamps are unique per robot
    assert not set(records[0].states) & set(records[1].states)


def test_two_robots_example_runs():
    proc = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.two_robots", "--samples", "10"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("/robot1") and "robot1/base_link" in line and line.endswith("PASS") for line in lines)
    assert any(line.startswith("/robot2") and "robot2/trunk" in line and line.endswith("PASS") for line in lines)
    assert lines[-1].startswith("PASS")


# ---------------------------------------------------------------------- frame_prefix
def test_geodyn_node_frame_prefix(h):
    """The wrench goes out in ``<prefix>base_link``; odometry must name it as its child frame
    (the unprefixed link name is refused, the prefixed one used); world_frame is not prefixed."""
    node = h.make(GeodynNode, {"urdf_path": URDF, "input_mode": "measured", "input_policy": "exact",
                               "frame_prefix": "robot1/",
                               "stale_timeout": 5.0})
    wrench = h.record(WrenchStamped, "feedforward/wrench")
    diag = h.record(DiagnosticArray, "/diagnostics")
    pr, po, pj = (h.publisher(ReferenceJet, "reference"), h.publisher(Odometry, "odom"),
                  h.publisher(JointState, "joint_states"))
    for t in ("reference", "odom", "joint_states"):
        h.wait_matched(t)
    now = node.get_clock().now().nanoseconds
    ref = table3_reference(2.0, 3)
    pr.publish(make_reference_jet(now, ref.base_pose, ref.base_twist[:5], ref.q[:5], NAMES,
                                  child_frame_id="robot1/base_link"))   # the reference names the prefixed base too
    h.spin_for(0.1)
    C = ref.base_pose
    po.publish(odometry_msg(now + 1, C, np.zeros(3), np.zeros(3), child="base_link"))
    pj.publish(joint_states_msg(now + 1, NAMES, np.zeros(6), np.zeros(6)))
    assert h.spin_until(lambda: any("robot1/base_link" in s.message for a in diag for s in a.status))
    assert not wrench
    po.publish(odometry_msg(now + 2, C, np.zeros(3), np.zeros(3), child="robot1/base_link"))
    pj.publish(joint_states_msg(now + 2, NAMES, np.zeros(6), np.zeros(6)))
    assert h.spin_until(lambda: len(wrench) == 1)
    assert wrench[0].header.frame_id == "robot1/base_link"


def test_sim_node_frame_prefix(h):
    sim = h.make(SimNode, {"urdf_path": URDF, "frame_prefix": "robot1/", **table3_start_parameters()})
    odom = h.record(Odometry, "odom")
    diag = h.record(DiagnosticArray, "/diagnostics")
    pw, pe = h.publisher(WrenchStamped, "cmd/wrench"), h.publisher(JointState, "cmd/joint_efforts")
    h.wait_matched("cmd/wrench")
    h.wait_matched("cmd/joint_efforts")
    assert h.spin_until(lambda: odom)
    assert (odom[-1].header.frame_id, odom[-1].child_frame_id) == ("world", "robot1/base_link")

    def cmd(frame):
        w, e = WrenchStamped(), JointState()
        w.header.frame_id = frame
        e.name, e.effort = list(NAMES), [0.0] * 6
        return w, e
    for frame, steps in (("base_link", 0), ("robot1/base_link", 1)):
        w, e = cmd(frame)
        pw.publish(w)
        pe.publish(e)
        h.spin_for(0.3)
        assert sim.steps == steps, frame
    assert any("'base_link' is not the base link 'robot1/base_link'" in s.message for a in diag for s in a.status)


@pytest.mark.parametrize("cls", [GeodynNode, SimNode, ControllerNode])
@pytest.mark.parametrize("prefix, keyword", [("/robot1/", "starts with '/'"), ("robot 1/", "whitespace")])
def test_bad_frame_prefix_fails_at_startup(cls, prefix, keyword):
    h = Harness()
    try:
        with pytest.raises(ConfigurationError, match=keyword) as info:
            h.make(cls, {"urdf_path": URDF, "frame_prefix": prefix})
        assert "frame_prefix" in str(info.value) and "\n" not in str(info.value)
    finally:
        h.close()


# ---------------------------------------------------------------------- namespaces
def test_diagnostics_are_global_and_name_the_namespace(h):
    """/diagnostics is absolute (diagnostic_aggregator convention): a probe in the root hears a
    node of /robot1, and the status names the namespace."""
    h.make(GeodynNode, {"urdf_path": URDF, "diagnostics_period": 0.1}, namespace="robot1")
    diag = h.record(DiagnosticArray, "/diagnostics")
    assert h.spin_until(lambda: diag)
    assert diag[-1].status[0].name == "robot1/geodyn_node: feedforward"


def test_console_script_namespace_option(monkeypatch):
    """``geodyn_node --namespace robot1`` (run_nodes): the node answers on /robot1/... and not
    in the root; SIGINT stops it with status 0."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    proc = subprocess.Popen([sys.executable, "-m", "geodyn_ros.ros.nodes.geodyn_node", "--namespace", "robot1",
                             "--ros-args", "-p", f"urdf_path:={URDF}", "-p", "order:=1", "-p",
                             "stale_timeout:=30.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    h = Harness()
    try:
        jets = h.record(FeedforwardJet, "/robot1/feedforward/jet")
        root_jets = h.record(FeedforwardJet, "feedforward/jet")
        pub = h.publisher(ReferenceJet, "/robot1/reference")
        assert h.spin_until(lambda: pub.get_subscription_count() > 0, 120.0), "node did not start"
        assert h.spin_until(lambda: ("geodyn_node", "/robot1") in h.probe.get_node_names_and_namespaces(), 30.0)
        # Nothing of /robot1 subscribes the root's topic. Judged by the subscriber's namespace, not
        # by a publisher's match count: another test's process on this worker's domain (CI once saw
        # two root subscribers while this node was correct) is not this node's defect.
        root_subs = h.probe.get_subscriptions_info_by_topic("/reference")
        assert not [s for s in root_subs if s.node_namespace == "/robot1"], root_subs
        ref = table3_reference(3.0, 2)
        msg = make_reference_jet(0, ref.base_pose, ref.base_twist[:4], ref.q[:4], NAMES)
        deadline = time.monotonic() + 60
        while not jets and time.monotonic() < deadline:
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 10**9)
            pub.publish(msg)
            h.spin_for(0.1)
        assert jets and not root_jets
        _, _, _, names, _ = read_feedforward(jets[-1])
        assert names == NAMES
        nodes = h.probe.get_node_names_and_namespaces()
        assert ("geodyn_node", "/robot1") in nodes
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        h.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("argv", [["--namespace", "robot 1"], ["--namespace=1robot"], ["--namespace"]])
def test_console_script_bad_namespace_one_line(argv):
    proc = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.nodes.geodyn_node", *argv, "--ros-args", "-p",
                           f"urdf_path:={URDF}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("[FATAL] geodyn_ros: option --namespace"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_closed_loop_under_a_namespace():
    """The in-process loop under /robot1 with frame_prefix robot1/ (simulator, reference,
    geodyn_node, controller, recorder): every node and topic is under /robot1 except /clock and
    /diagnostics, and the loop is the same as in the root, step for step (1e-12, as
    test_ros_closed_loop): a wrong frame prefix anywhere would stall it (the simulator refuses
    commands in another frame)."""
    info = {}
    ros = run_ros_closed_loop(0.3, use_feedforward=True, wall_timeout=120, namespace="robot1",
                              frame_prefix="robot1/", info=info)
    ref = simulate_tracking(0.3, use_feedforward=True)
    assert len(ros.t) == len(ref.t) == 301
    assert np.abs(ros.p - ref.p).max() < 1e-12 and np.abs(ros.q - ref.q).max() < 1e-12
    assert info["nodes"] == ["/robot1/geodyn_sim", "/robot1/geodyn_reference", "/robot1/geodyn_node",
                             "/robot1/geodyn_controller", "/robot1/geodyn_recorder"]
    topics = set(info["topics"])
    for t in ("odom", "joint_states", "reference", "feedforward/wrench", "feedforward/jet", "cmd/wrench",
              "cmd/joint_efforts"):
        assert f"/robot1/{t}" in topics and f"/{t}" not in topics, t
    assert {"/clock", "/diagnostics"} <= topics


def test_closed_loop_bad_namespace_one_line():
    proc = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.loops.closed_loop", "--namespace", "robot-1",
                           "--duration", "0.1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "option --namespace: 'robot-1' is not a valid ROS namespace" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_actuated_loop_under_a_namespace():
    """geodyn_closed_loop --actuated's runner under /robot1 with frame_prefix robot1/: the same
    trajectory as the in-process actuated loop, step for step (1e-12, as test_ros_actuated_loop).
    The controller checks the odometry's child frame against its prefixed base frame, so a
    prefix missing anywhere stalls the loop (RuntimeError) instead of passing."""
    from geodyn_ros.loops.actuated import simulate_actuated
    from geodyn_ros.ros.loops.actuated_closed_loop import run_ros_actuated_loop

    info = {}
    ros = run_ros_actuated_loop("ff2", 0.3, wall_timeout=240, namespace="robot1", frame_prefix="robot1/",
                                info=info).log
    ref = simulate_actuated("ff2", 0.3, preroll=0.0).log
    assert len(ros.t) == len(ref.t) == 301
    assert np.abs(ros.p - ref.p).max() < 1e-12 and np.abs(ros.q - ref.q).max() < 1e-12
    assert info["sim"].base_frame == "robot1/base_link"
    proc = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.loops.closed_loop", "--actuated", "--namespace",
                           "robot-1", "--duration", "0.1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "option --namespace: 'robot-1' is not a valid ROS namespace" in proc.stderr
    assert "Traceback" not in proc.stderr
