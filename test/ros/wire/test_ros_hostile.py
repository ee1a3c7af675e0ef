"""The nodes survive hostile input (issue "The node survives anything").

Each breakage found by an outside hostile test has a test here that failed on the old code:

* ``test_absurd_stamp_numbers_are_refused_not_fatal``: a reference stamped 1e300 s raised
  ``OverflowError`` and killed the node; every number in a stamp field (1e300, negative, NaN,
  Inf, beyond int64, fractional) is now a refused message with a clear diagnostic.
* ``test_future_stamp_does_not_lock_the_topic_out``: a message stamped beyond
  ``stale_timeout`` in the future stored its stamp, and every later valid message was refused
  as "time went backwards"; now it is refused without becoming the topic's last stamp.
* ``test_absurd_magnitudes_are_refused``: a base at 1e15 m or rates of 1e20 were published as
  valid; now refused naming the field, the value and the limit; UTM-scale coordinates pass.
* ``test_diagnostics_are_rate_limited``: one WARN per rejected message (about 540/s); now at
  most ``diagnostics_rate`` a second, each with the counts by reason.
* ``test_max_input_skew``: measured mode can require consistent stamps (oldest stamp out).
* ``test_unexpected_exception_skips_the_cycle``: an exception inside a callback is a skipped
  cycle with its text on /diagnostics, logged once; the node keeps running.
* ``test_fuzz_*``: a seeded stream of 2,000 hostile messages interleaved with valid ones for each
  node (geodyn in both input modes, sim, controller, reference): the node stays alive, never
  publishes a non-finite number, and recovers to the exact output of a valid input.

Stopping at any moment and bad ``--ros-args`` are in ``test_ros_shutdown.py``.

``geodyn_node`` runs here with the deprecated ``message_types: multiarray``: these attacks are on
the ``Float64MultiArray`` layout's numbers (stamps as doubles, layout fields), which stays
supported through release 0.2. The typed inputs' stamps are integers checked by the strict byte
decoders; their attacks (and rclpy as the oracle) are in ``test_typed_raw.py`` and, through the
running node, ``test_ros_byte_attack.py``.
"""
from __future__ import annotations

import array
import math
import time

import numpy as np
import pytest
from ros_harness import joint_states_msg, odometry_msg  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from geodyn_msgs.msg import ReferenceJet

import geodyn_ros as gd
from geodyn_ros.lie import Ad
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.jets import decode_feedforward_jet, make_reference_msg
from geodyn_ros.ros.nodes.reference_node import ReferenceNode
from geodyn_ros.ros.nodes.sim_node import SimNode
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MODEL = gd.load_urdf(URDF)


def _ref_msg(t, order, stamp, pos_offset=None):
    """Table 3 reference at time t; ``pos_offset`` translates the whole motion (the spatial twist
    rows change by ``offset x w^(k)``, so the motion itself is the same)."""
    ref = table3_reference(t, order + 1)
    C, V = ref.base_pose.copy(), ref.base_twist.copy()
    if pos_offset is not None:
        C[:3, 3] += pos_offset
        V[:, 3:] += np.cross(pos_offset, V[:, :3])
    K1 = order + 3
    return make_reference_msg(stamp, C, V[:K1], ref.q[:K1], NAMES)


def _start(h, **params):
    p = {"urdf_path": URDF, "order": 1, "stale_timeout": 0.5, "message_types": "multiarray"}   # module docstring
    if params.get("input_mode") == "measured":   # these tests send odom and joint_states of one stamp
        p["input_policy"] = "exact"
    p.update(params)
    node = h.make(GeodynNode, p)
    jets = h.record(Float64MultiArray, "feedforward/jet", depth=1000)
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    h.publisher(Float64MultiArray, "reference")
    h.wait_matched("reference")
    return node, jets, diag


def _messages(diag):
    return [s.message for a in diag for s in a.status]


def _expected(msg, order):
    """Inverse dynamics of a reference message, decoded here (not by the node's decoder)."""
    from ros_harness import decode_reference
    C, V, Q = decode_reference(msg)
    return gd.inverse_dynamics(MODEL, C, V[: order + 2], Q[: order + 3], order)


def _valid_then_published(h, node, jets, order=1):
    """Publish a valid reference stamped now; True when its exact feedforward comes out."""
    pub = h.publisher(Float64MultiArray, "reference")
    msg = _ref_msg(2.0, order, node.get_clock().now().nanoseconds)
    before = len(jets)
    pub.publish(msg)
    if not h.spin_until(lambda: len(jets) > before, 5.0):
        return False
    _, W, tau, _ = decode_feedforward_jet(jets[-1])
    want = _expected(msg, order)
    return (np.abs(W - want.base_wrench).max() <= 1e-12 * max(1.0, np.abs(want.base_wrench).max())
            and np.abs(tau - want.tau).max() <= 1e-12 * max(1.0, np.abs(want.tau).max()))


# ----------------------------------------------------------------------------- stamps

@pytest.mark.parametrize("sec, nsec", [(1e300, 0.0), (-1.0, 0.0), (math.nan, 0.0), (math.inf, 0.0),
                                       (2.0**63 * 4, 0.0), (1.5, 0.0), (10.0, 1e9), (10.0, -1.0)])
def test_absurd_stamp_numbers_are_refused_not_fatal(h, sec, nsec):
    node, jets, diag = _start(h)
    msg = _ref_msg(1.0, 1, 0)
    msg.data[0], msg.data[1] = sec, nsec
    h.publisher(Float64MultiArray, "reference").publish(msg)
    assert h.spin_until(lambda: any("is not a valid time" in m for m in _messages(diag)))
    assert not jets
    text = next(m for m in _messages(diag) if "is not a valid time" in m)
    assert text.startswith("reference (data[0:2]): stamp (sec ") and "0..2147483647" in text
    assert _valid_then_published(h, node, jets)   # the next good message is used at once


@pytest.mark.parametrize("ahead_s", [2.0, 3600.0, 2.0**31 - 1 - 1.0e9])
@pytest.mark.parametrize("mode", ["reference", "measured"])
def test_future_stamp_does_not_lock_the_topic_out(h, ahead_s, mode):
    node, jets, diag = _start(h, input_mode=mode)
    now = node.get_clock().now().nanoseconds
    bad = _ref_msg(1.0, 1, now + int(ahead_s * 1e9) if ahead_s < 1e8 else int(2**31 - 1) * 10**9)
    h.publisher(Float64MultiArray, "reference").publish(bad)
    assert h.spin_until(lambda: any("in the future of the node clock" in m for m in _messages(diag)))
    if mode == "reference":
        assert _valid_then_published(h, node, jets)
    else:
        # the next valid reference is accepted at once (no "time went backwards")
        good = node.get_clock().now().nanoseconds
        h.publisher(Float64MultiArray, "reference").publish(_ref_msg(2.0, 1, good))
        assert h.spin_until(lambda: node._bufs["reference"].last_stamp == good)
        assert not any("went backwards" in m for m in _messages(diag))


# ----------------------------------------------------------------------------- magnitudes

def test_absurd_magnitudes_are_refused(h):
    node, jets, diag = _start(h)
    pub = h.publisher(Float64MultiArray, "reference")
    pub.publish(_ref_msg(1.0, 1, node.get_clock().now().nanoseconds, pos_offset=np.array([1e15, 0, 0])))
    assert h.spin_until(lambda: any("|base position| = 1e+15 m exceeds the plausibility limit 1e+06 m "
                                    "(parameter 'max_position' = 1e+06)" in m for m in _messages(diag)))
    msg = _ref_msg(1.0, 1, node.get_clock().now().nanoseconds)
    ncol = 6 + len(NAMES)                              # rows (derivative k) of 6 twist + n joint columns
    msg.data[9 + ncol * 1 + 6 + 0] = 1e20              # row 1 (first derivatives), column J2: qdot
    pub.publish(msg)
    assert h.spin_until(lambda: any("max |qdot| = 1e+20 exceeds" in m and "max_joint_rate" in m
                                    for m in _messages(diag)))
    msg = _ref_msg(1.0, 1, node.get_clock().now().nanoseconds)
    msg.data[9 + 0] = 1e20                               # angular velocity x
    pub.publish(msg)
    assert h.spin_until(lambda: any("|base angular velocity| = 1e+20 rad/s exceeds" in m for m in _messages(diag)))
    assert not jets
    # UTM-scale coordinates (5e5 m east, 5e6 m north is beyond the default; 9e5 m is not) pass
    pub.publish(_ref_msg(1.0, 1, node.get_clock().now().nanoseconds, pos_offset=np.array([6e5, 7e5, 10.0])))
    assert h.spin_until(lambda: len(jets) > 0)


def test_limits_are_parameters(h):
    node, jets, diag = _start(h, max_position=1e8)
    h.publisher(Float64MultiArray, "reference").publish(
        _ref_msg(1.0, 1, node.get_clock().now().nanoseconds, pos_offset=np.array([5e6, 0, 0])))
    assert h.spin_until(lambda: len(jets) > 0)


# ----------------------------------------------------------------------------- diagnostics

def test_diagnostics_are_rate_limited(h):
    """A hostile stream whose reason changes with every message (the old reporter published on
    every change: ~540 statuses/s) gives at most ``diagnostics_rate`` (10) statuses a second."""
    node, jets, diag = _start(h)
    pub = h.publisher(Float64MultiArray, "reference")
    bad_stamp = _ref_msg(1.0, 1, 0)
    bad_stamp.data[0] = math.nan
    bad_quat = _ref_msg(1.0, 1, 0)
    bad_quat.data[5:9] = array.array("d", [0.0, 0.0, 0.0, 0.0])
    bad_rows = _ref_msg(1.0, 1, 0)
    bad_rows.layout.dim[0].size = 1
    h.spin_for(0.3)
    n0 = len(diag)
    t0 = time.monotonic()
    sent = 0
    while time.monotonic() - t0 < 1.0:
        pub.publish((bad_stamp, bad_quat, bad_rows)[sent % 3])
        sent += 1
        h.ex.spin_once(timeout_sec=0.0005)
    h.spin_for(0.3)
    statuses = [s for a in diag[n0:] for s in a.status]
    assert sent >= 200
    # 1.3 s of window at <= 10/s, +1 for the window edges, +1 summary timer (diagnostics_period 1 s)
    assert len(statuses) <= 15, len(statuses)
    reasons = {kv.key for s in statuses for kv in s.values if kv.key.startswith("skipped[")}
    assert len(reasons) == 3, reasons     # stamp, quaternion, rows: counted separately
    assert any("is not a valid time" in r for r in reasons)
    counted = sum(int(kv.value) for s in statuses for kv in s.values if kv.key.startswith("skipped["))
    assert counted == node.diag.counters["cycles_skipped"]   # every skipped cycle is counted once


# ----------------------------------------------------------------------------- skew

def test_max_input_skew(h):
    node, jets, diag = _start(h, input_mode="measured", max_input_skew=0.002, stale_timeout=1.0)
    po, pj, pr = (h.publisher(Odometry, "odom"), h.publisher(JointState, "joint_states"),
                  h.publisher(Float64MultiArray, "reference"))
    h.wait_matched("odom")
    h.wait_matched("joint_states")
    ref = table3_reference(2.0, 2)
    C, V, q = ref.base_pose, ref.base_twist, ref.q
    Vb = np.linalg.solve(Ad(C), V[0])

    def send(t_ref, t_state):
        pr.publish(_ref_msg(2.0, 1, t_ref))
        h.spin_for(0.05)
        po.publish(odometry_msg(t_state, C, Vb[:3], Vb[3:]))
        pj.publish(joint_states_msg(t_state, NAMES, q[0], q[1]))

    now = node.get_clock().now().nanoseconds
    send(now - 5_000_000, now)            # 5 ms apart: skipped
    assert h.spin_until(lambda: any("not within max_input_skew" in m for m in _messages(diag)))
    assert not jets
    now = node.get_clock().now().nanoseconds
    send(now - 1_000_000, now)            # 1 ms apart: combined, stamped with the oldest
    assert h.spin_until(lambda: len(jets) > 0)
    stamp, _, _, _ = decode_feedforward_jet(jets[-1])
    assert stamp == now - 1_000_000


# ----------------------------------------------------------------------------- exceptions

def test_unexpected_exception_skips_the_cycle(h):
    node, jets, diag = _start(h)
    calls = []

    def boom(*a, **k):
        calls.append(1)
        raise RuntimeError("injected fault")
    real = node._ref_decoder.decode
    node._ref_decoder.decode = boom
    pub = h.publisher(Float64MultiArray, "reference")
    for _ in range(20):
        pub.publish(_ref_msg(1.0, 1, node.get_clock().now().nanoseconds))
        h.spin_for(0.02)
    assert h.spin_until(lambda: any("unexpected exception in reference: RuntimeError: injected fault" in m
                                    for m in _messages(diag)))
    assert len(calls) >= 10 and not jets
    assert len(node.diag._logged_causes) == 1        # logged once, not per message
    node._ref_decoder.decode = real
    assert _valid_then_published(h, node, jets)


# ----------------------------------------------------------------------------- fuzz

def _hostile_reference(rng, stamp):
    msg = _ref_msg(float(rng.uniform(0, 20)), 1, stamp)
    k = int(rng.integers(0, 10))
    d = list(msg.data)
    if k == 0:
        d[int(rng.integers(0, len(d)))] = float(rng.choice([math.nan, math.inf, -math.inf]))
    elif k == 1:
        d[int(rng.integers(0, 2))] = float(rng.choice([1e300, -5.0, 2.0**70, 0.5, math.nan]))
    elif k == 2:
        d[int(rng.integers(2, 9))] = float(rng.choice([1e15, -1e20, 1e300]))
    elif k == 3:
        d[5:9] = [0.0, 0.0, 0.0, 0.0]          # zero quaternion
    elif k == 4:
        d = d[: int(rng.integers(0, len(d)))]  # truncated
    elif k == 5:
        msg.layout.dim[1].label = "wx,wy,wz,vx,vy,vz,J2,J2,J3,J4,J5,J6"   # duplicate names
    elif k == 6:
        msg.layout.dim[0].size = int(rng.integers(0, 3))
    elif k == 7:
        d[0] = float(stamp // 10**9 + int(rng.integers(2, 10**6)))     # far future
    elif k == 8:
        d[9 + int(rng.integers(0, 12 * 4))] = float(rng.choice([1e20, -1e25]))
    else:
        d = [float(x) for x in rng.normal(size=len(d)) * 10.0**rng.integers(0, 30)]
    msg.data = d
    return msg


def _hostile_odom(rng, stamp):
    m = odometry_msg(stamp, np.eye(4), np.zeros(3), np.zeros(3))
    k = int(rng.integers(0, 6))
    if k == 0:
        m.pose.pose.position.x = float(rng.choice([math.nan, 1e300, -1e15]))
    elif k == 1:
        m.pose.pose.orientation.w = 0.0
    elif k == 2:
        m.header.frame_id = "elsewhere"
    elif k == 3:
        m.twist.twist.linear.y = float(rng.choice([math.inf, 1e20]))
    elif k == 4:
        m.header.stamp.sec = int(rng.choice([-5, 2**31 - 1]))
    else:
        m.child_frame_id = "not_the_base"
    return m


def _hostile_joints(rng, stamp):
    m = joint_states_msg(stamp, NAMES, np.zeros(6), np.zeros(6))
    k = int(rng.integers(0, 6))
    if k == 0:
        m.name = list(NAMES[:3])
    elif k == 1:
        m.name = list(NAMES[:5]) + ["J2"]
    elif k == 2:
        m.velocity = [float(v) for v in rng.choice([math.nan, 1e20, 0.0], size=6)]
    elif k == 3:
        m.position = [0.0]
    elif k == 4:
        m.velocity = []
    else:
        m.name = ["x"] * 6
    return m


def _typed_ref_msg(t, order, stamp):
    """Table 3 reference at time t as a typed ``ReferenceJet`` (geodyn_controller's and
    geodyn_reference's type)."""
    from geodyn_ros.ros.wire.typed import make_reference_jet
    ref = table3_reference(t, order + 1)
    K1 = order + 3
    return make_reference_jet(stamp, ref.base_pose, ref.base_twist[:K1], ref.q[:K1], NAMES)


def _hostile_typed_reference(rng, stamp):
    """:func:`_hostile_reference`'s kinds of damage on the fields of a typed ``ReferenceJet``."""
    msg = _typed_ref_msg(float(rng.uniform(0, 20)), 1, stamp)
    k = int(rng.integers(0, 10))
    q = list(msg.q)
    tw = msg.base_twist[int(rng.integers(0, len(msg.base_twist)))]
    if k == 0:
        q[int(rng.integers(0, len(q)))] = float(rng.choice([math.nan, math.inf, -math.inf]))
    elif k == 1:
        msg.header.stamp.sec = int(rng.choice([-5, -(2**31), 2**31 - 1]))
        msg.header.stamp.nanosec = int(rng.choice([0, 10**9, 2**32 - 1]))
    elif k == 2:
        msg.base_pose.position.x = float(rng.choice([1e15, -1e20, 1e300, math.nan]))
    elif k == 3:
        o = msg.base_pose.orientation
        o.x = o.y = o.z = o.w = 0.0                 # zero quaternion
    elif k == 4:
        q = q[: int(rng.integers(0, len(q)))]       # truncated
    elif k == 5:
        msg.joint_names = ["J2", "J2", "J3", "J4", "J5", "J6"]   # duplicate names
    elif k == 6:
        msg.order = int(rng.integers(0, 3))
    elif k == 7:
        msg.header.stamp.sec = int(stamp // 10**9 + int(rng.integers(2, 10**6)))     # far future
    elif k == 8:
        tw.angular.x = float(rng.choice([1e20, -1e25, math.inf]))
    else:
        q = [float(x) for x in rng.normal(size=len(q)) * 10.0**rng.integers(0, 30)]
    msg.q = q
    return msg


def _typed_no_nan(msgs):
    from geodyn_ros.ros.wire.typed import jet_fields
    for m in msgs:
        f = jet_fields(m)
        assert all(np.isfinite(a).all() for a in (f.rows, f.values, f.pose) if a is not None)


def _no_nan(msgs):
    for m in msgs:
        if isinstance(m, Float64MultiArray):
            assert np.isfinite(np.asarray(m.data)).all()
        elif isinstance(m, WrenchStamped):
            w = m.wrench
            assert np.isfinite([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]).all()
        elif isinstance(m, JointState):
            assert np.isfinite(np.asarray(m.effort)).all() and np.isfinite(np.asarray(m.position)).all()
        elif isinstance(m, Odometry):
            p = m.pose.pose.position
            assert np.isfinite([p.x, p.y, p.z]).all()


N_FUZZ = 2000


@pytest.mark.parametrize("mode", ["reference", "measured"])
def test_fuzz_geodyn_node(h, mode):
    node, jets, diag = _start(h, input_mode=mode, stale_timeout=5.0)
    rng = np.random.default_rng(20261123)
    pr = h.publisher(Float64MultiArray, "reference")
    po, pj = h.publisher(Odometry, "odom"), h.publisher(JointState, "joint_states")
    if mode == "measured":
        h.wait_matched("odom")
        h.wait_matched("joint_states")
    for i in range(N_FUZZ):
        stamp = node.get_clock().now().nanoseconds
        if i % 5 == 4:
            pr.publish(_ref_msg(float(rng.uniform(0, 20)), 1, stamp))   # valid ones interleaved
        elif mode == "measured" and i % 3 == 0:
            (po.publish(_hostile_odom(rng, stamp)) if i % 2 else pj.publish(_hostile_joints(rng, stamp)))
        else:
            pr.publish(_hostile_reference(rng, stamp))
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.5)
    _no_nan(jets)
    assert node.diag.counters["cycles_skipped"] > 0
    if mode == "reference":
        assert _valid_then_published(h, node, jets)
    else:
        ref = table3_reference(2.0, 2)
        C, V, q = ref.base_pose, ref.base_twist, ref.q
        Vb = np.linalg.solve(Ad(C), V[0])
        before = len(jets)
        stamp = node.get_clock().now().nanoseconds
        pr.publish(_ref_msg(2.0, 1, stamp))
        h.spin_for(0.05)
        po.publish(odometry_msg(stamp, C, Vb[:3], Vb[3:]))
        pj.publish(joint_states_msg(stamp, NAMES, q[0], q[1]))
        assert h.spin_until(lambda: len(jets) > before)
        _, W, tau, _ = decode_feedforward_jet(jets[-1])
        want = gd.inverse_dynamics(MODEL, C, V[:3], q[:4], 1)
        assert np.abs(tau - want.tau).max() <= 1e-10 * max(1.0, np.abs(want.tau).max())


def test_fuzz_sim_node(h):
    sim = h.make(SimNode, {"urdf_path": URDF})
    odoms = h.record(Odometry, "odom", depth=1000)
    states = h.record(JointState, "joint_states", depth=1000)
    pw, pe = h.publisher(WrenchStamped, "cmd/wrench"), h.publisher(JointState, "cmd/joint_efforts")
    h.wait_matched("cmd/wrench")
    h.wait_matched("cmd/joint_efforts")
    rng = np.random.default_rng(7)
    for i in range(N_FUZZ):
        w = WrenchStamped()
        w.header.frame_id = str(rng.choice(["base_link", "world", ""]))
        w.header.stamp.sec = int(rng.choice([0, -3, 2**31 - 1]))
        vals = rng.choice([math.nan, math.inf, 1e300, 1.0, -1e20], size=6)
        w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in vals[:3])
        w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = (float(v) for v in vals[3:])
        pw.publish(w)
        pe.publish(_hostile_joints(rng, 0))
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.5)
    _no_nan(odoms)
    _no_nan(states)
    # recovery: a valid command pair for the current step makes the lock-step simulator step
    steps = sim.steps
    stamp = sim.stamp_ns          # lock-step: the command for the simulator's current time
    w = WrenchStamped()
    w.header.stamp.sec, w.header.stamp.nanosec = divmod(stamp, 10**9)
    w.header.frame_id = "base_link"
    w.wrench.force.z = float(MODEL.total_mass * 9.81)
    e = JointState()
    e.header.stamp = w.header.stamp
    e.name = list(NAMES)
    e.effort = [0.0] * 6
    pw.publish(w)
    pe.publish(e)
    assert h.spin_until(lambda: sim.steps > steps)


def test_fuzz_controller_node(h):
    ctl = h.make(ControllerNode, {"urdf_path": URDF, "use_feedforward": False, "sync_stamps": False,
                                  "input_policy": "exact"})
    cmds = h.record(WrenchStamped, "cmd/wrench", depth=1000)
    efforts = h.record(JointState, "cmd/joint_efforts", depth=1000)
    po, pj, pr = (h.publisher(Odometry, "odom"), h.publisher(JointState, "joint_states"),
                  h.publisher(ReferenceJet, "reference"))
    h.wait_matched("odom")
    h.wait_matched("reference")
    rng = np.random.default_rng(11)
    for i in range(N_FUZZ):
        stamp = ctl.get_clock().now().nanoseconds
        k = i % 3
        if k == 0:
            po.publish(_hostile_odom(rng, stamp))
        elif k == 1:
            pj.publish(_hostile_joints(rng, stamp))
        else:
            pr.publish(_hostile_typed_reference(rng, stamp))
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.5)
    _no_nan(cmds)
    _no_nan(efforts)
    before = len(cmds)
    stamp = ctl.get_clock().now().nanoseconds
    ref = table3_reference(2.0, 1)
    pr.publish(_typed_ref_msg(2.0, 0, stamp))
    h.spin_for(0.05)
    po.publish(odometry_msg(stamp, ref.base_pose, np.zeros(3), np.zeros(3)))
    pj.publish(joint_states_msg(stamp, NAMES, ref.q[0], np.zeros(6)))
    assert h.spin_until(lambda: len(cmds) > before)
    _no_nan(cmds[before:])


def test_fuzz_reference_node(h):
    h.make(ReferenceNode, {"use_sim_time": True, "order": 1})
    refs = h.record(ReferenceJet, "reference", depth=1000)
    pc = h.publisher(ClockMsg, "/clock")
    h.wait_matched("/clock")
    rng = np.random.default_rng(3)
    for i in range(N_FUZZ // 4):
        c = ClockMsg()
        c.clock.sec = int(rng.choice([-1, 0, 5, 2**31 - 1, -(2**31)]))
        c.clock.nanosec = int(rng.integers(0, 10**9))
        pc.publish(c)
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.5)
    _typed_no_nan(refs)
    before = len(refs)
    c = ClockMsg()
    c.clock.sec = 3
    pc.publish(c)
    assert h.spin_until(lambda: len(refs) > before)
    assert refs[-1].header.stamp.sec == 3


@pytest.mark.parametrize("cut", [0, 3, 9, 40])
def test_undecodable_bytes_are_refused_not_fatal(h, cut):
    """geodyn_node decodes its inputs from the serialized bytes (geodyn_ros.ros.wire.cdr): a truncated
    message, sent raw as a misbehaving publisher could, is refused naming the topic (no output,
    a /diagnostics line), and the next good message is used at once."""
    from rclpy.serialization import serialize_message
    node, jets, diag = _start(h)
    raw = serialize_message(_ref_msg(1.0, 1, node.get_clock().now().nanoseconds))[:cut]
    h.publisher(Float64MultiArray, "reference").publish(raw)
    assert h.spin_until(lambda: any(m.startswith("reference") and ("truncated" in m or "shorter than the CDR header"
                                                                     in m) for m in _messages(diag)))
    assert not jets
    assert _valid_then_published(h, node, jets)
