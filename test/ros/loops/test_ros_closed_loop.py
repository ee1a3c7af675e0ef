"""The simulator in the loop: geodyn_sim, geodyn_reference, geodyn_controller and the closed loop.

* The ROS closed loop (four real rclpy nodes, lock-step) must reproduce the ROS-free loop of
  ``geodyn_ros.loops.tracking.simulate_tracking`` step for step: both run the same MuJoCo model with
  the same commands, so the only differences are the quaternion round trips in ``odom`` and the
  reference message (rounding, ~1e-16). Tolerance 1e-12 on positions over 1 s (1000 steps of a
  stable loop).
* The 30 s Table 3 acceptance figures (base RMS < 1 cm, joint RMS < 0.5 deg with feedforward;
  >= 10x larger without, same gains) are checked on the ROS-free twin, which the first test
  ties to the ROS loop (the full ROS run is ``geodyn_closed_loop``, see the README).
"""
from __future__ import annotations

import numpy as np
import ros_harness  # noqa: F401,I100  (imported first: it sets the ROS isolation env; fixture h: conftest)
from ros_harness import decode_reference

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from geodyn_msgs.msg import ReferenceJet

from geodyn_ros.lie import Ad_inv, quat_to_matrix
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.loops.closed_loop import table3_start_parameters, run_ros_closed_loop
from geodyn_ros.ros.nodes.reference_node import ReferenceNode
from geodyn_ros.ros.nodes.sim_node import SimNode
from geodyn_ros.sim import MujocoSim
from geodyn_ros.loops.tracking import simulate_tracking, table3_initial_state
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")


def test_ros_closed_loop_reproduces_the_rosfree_loop():
    ros = run_ros_closed_loop(1.0, use_feedforward=True, wall_timeout=120)
    ref = simulate_tracking(1.0, use_feedforward=True)
    assert len(ros.t) == len(ref.t) == 1001
    assert np.abs(ros.t - ref.t).max() < 1e-12
    assert np.abs(ros.p - ref.p).max() < 1e-12
    assert np.abs(ros.R - ref.R).max() < 1e-12
    assert np.abs(ros.q - ref.q).max() < 1e-12
    # and it is tracking, not merely agreeing
    assert ros.rms()["position_m"] < 1e-3


def test_table3_tracking_acceptance_with_and_without_feedforward():
    with_ff = simulate_tracking(30.0, use_feedforward=True).rms()
    without = simulate_tracking(30.0, use_feedforward=False).rms()
    assert with_ff["position_m"] < 0.01
    assert with_ff["joint_deg"] < 0.5
    assert without["position_m"] >= 10 * with_ff["position_m"]
    assert without["joint_deg"] >= 10 * with_ff["joint_deg"]


def _cmd(stamp, W, names, tau, frame="base_link"):
    w = WrenchStamped()
    w.header.stamp.sec, w.header.stamp.nanosec = divmod(stamp, 10**9)
    w.header.frame_id = frame
    w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = (float(v) for v in W[:3])
    w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in W[3:])
    e = JointState()
    e.header.stamp = w.header.stamp
    e.name = list(names)
    e.effort = [float(v) for v in tau]
    return w, e


def test_sim_node_applies_commands_by_name_and_publishes_rep105_state(h):
    """One lock-step: commands with shuffled joint names (plus an unknown extra joint) step the
    simulator exactly like MujocoSim with the same command; odom carries the pose and the
    REP 105 child-frame twist; /clock advances by one timestep."""
    params = {"urdf_path": URDF, "timestep": 0.002, **table3_start_parameters()}
    sim_node = h.make(SimNode, params)
    clock = h.record(ClockMsg, "/clock")
    odom = h.record(Odometry, "odom")
    js = h.record(JointState, "joint_states")
    pw, pe = h.publisher(WrenchStamped, "cmd/wrench"), h.publisher(JointState, "cmd/joint_efforts")
    h.wait_matched("cmd/wrench")
    h.wait_matched("cmd/joint_efforts")
    rng = np.random.default_rng(11)
    W, tau = rng.normal(size=6), rng.normal(size=6)
    perm = [2, 5, 0, 4, 1, 3]
    w, e = _cmd(0, W, ["gripper"] + [NAMES[i] for i in perm], np.r_[100.0, tau[perm]])
    pw.publish(w)
    pe.publish(e)
    assert h.spin_until(lambda: sim_node.steps == 1 and any(m.header.stamp.nanosec == 2_000_000 for m in odom)
                        and any(m.header.stamp.nanosec == 2_000_000 for m in js))

    twin = MujocoSim(URDF, timestep=0.002)
    twin.reset(*table3_initial_state())
    twin.set_command(W, tau)
    twin.step()
    o = next(m for m in odom if m.header.stamp.nanosec == 2_000_000)
    j = next(m for m in js if m.header.stamp.nanosec == 2_000_000)
    assert any(c.clock.nanosec == 2_000_000 for c in clock)
    assert (o.header.frame_id, o.child_frame_id) == ("world", "base_link")
    pp, po = o.pose.pose.position, o.pose.pose.orientation
    C = np.eye(4)
    C[:3, 3] = (pp.x, pp.y, pp.z)
    C[:3, :3] = quat_to_matrix((po.x, po.y, po.z, po.w), "xyzw")
    assert np.abs(C - twin.base_pose()).max() < 1e-14
    lin, ang = o.twist.twist.linear, o.twist.twist.angular
    Vb = np.array([ang.x, ang.y, ang.z, lin.x, lin.y, lin.z])
    assert np.abs(Vb - Ad_inv(twin.base_pose()) @ twin.base_twist()).max() < 1e-12
    assert tuple(j.name) == NAMES
    assert np.abs(np.array(j.position) - twin.q()).max() < 1e-15
    assert np.abs(np.array(j.velocity) - twin.qd()).max() < 1e-15
    assert np.abs(np.array(j.effort) - tau).max() == 0.0


def test_sim_node_rejects_bad_commands_without_stepping(h):
    sim_node = h.make(SimNode, {"urdf_path": URDF})
    diag = h.record(DiagnosticArray, "/diagnostics")
    pw, pe = h.publisher(WrenchStamped, "cmd/wrench"), h.publisher(JointState, "cmd/joint_efforts")
    h.wait_matched("cmd/wrench")
    h.wait_matched("cmd/joint_efforts")
    w, e = _cmd(0, np.r_[0, 0, np.nan, 0, 0, 1], NAMES, np.zeros(6))
    pw.publish(w)
    pe.publish(e)
    w2, e2 = _cmd(0, np.zeros(6), NAMES, np.zeros(6), frame="world")
    pw.publish(w2)
    assert h.spin_until(lambda: sum("frame_id" in s.message for a in diag for s in a.status) > 0)
    h.spin_for(0.2)
    assert sim_node.steps == 0
    msgs = [s.message for a in diag for s in a.status]
    assert any("NaN" in m for m in msgs) and any("frame_id" in m for m in msgs)


def test_reference_node_publishes_table3_at_the_simulated_time(h):
    node = h.make(ReferenceNode, {"use_sim_time": True, "order": 3, "start_time": 2.0})
    out = h.record(ReferenceJet, "reference")
    cp = h.publisher(ClockMsg, "/clock")
    h.wait_matched("/clock")
    c = ClockMsg()
    c.clock.sec, c.clock.nanosec = 7, 250_000_000
    cp.publish(c)
    assert h.spin_until(lambda: len(out) >= 1)
    m = out[-1]
    assert (m.header.stamp.sec, m.header.stamp.nanosec) == (7, 250_000_000)
    assert m.header.frame_id == "world" and m.representation == "spatial"
    C, V, Q = decode_reference(m)           # independent decoding (ros_harness)
    rows = V.shape[0]
    assert rows == 3 + 3 and m.order == rows - 1 and Q.shape == (rows, 6)
    ref = table3_reference(5.25, 4)   # trajectory time = 7.25 - start_time
    assert np.abs(V - ref.base_twist[:rows]).max() < 1e-13
    assert np.abs(Q - ref.q[:rows]).max() < 1e-13
    assert np.abs(C[:3, 3] - ref.base_pose[:3, 3]).max() < 1e-15
    assert node.get_clock().now().nanoseconds == 7_250_000_000
