"""The under-actuated vehicle over ROS 2: ``geodyn_reference`` (figure_eight), ``geodyn_node``
(``input_mode: flat``), ``geodyn_flat_controller`` and the loop of the four nodes.

* **geodyn_node's flat outputs** equal ``gd.flat_inverse_dynamics`` of the published reference
  (decoded independently here) to 1e-12 relative; ``feedforward/wrench`` is ``(tau_b, 0, 0, T)``;
  the rotor-speed jet's row 0 is ``sqrt(A4^+ (T, tau_b))`` of an allocation built here and its
  rows 1, 2 equal central differences of ``omega_d`` along the reference (step 1e-3 s, 4th-order
  stencils: truncation ~1e-9 relative; bound 1e-6 relative).
* **Hostile flat references** (NaN, too few rows, missing joints, wrong columns, time going
  backwards, free fall, the yaw singularity, absurd magnitudes) are refused with one diagnostic
  naming the topic; nothing is published for them, and the next valid message is used at once.
  A seeded fuzz of 2,000 hostile messages never makes the node publish a non-finite number.
* **The flat controller node** commands exactly what :class:`FlatnessController` commands for the
  same inputs; bad parameters stop it with one line naming them; gains and level are live.
* **The loop over ROS** (four nodes, lock-step, one process) reproduces the in-process loop of
  :mod:`geodyn_ros.loops.underactuated` (``preroll=0``) to rounding (measured 6.7e-16 m, 5.6e-14
  deg over 1 s): bound 1e-12 m and 1e-10 deg over 2 s, no diagnostics above OK.

Every jet is a typed ``geodyn_msgs`` message (``FlatReference``, ``DesiredState``,
``FeedforwardJet``, ``RotorSpeeds``); the flat controller with ``message_types: multiarray``
(deprecated, one warning) still takes the ``Float64MultiArray`` layouts and commands the same.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ros_harness import flat_controller_inputs, loop_problems, odometry_msg, rosout, said_deprecated  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: F401
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from geodyn_msgs.msg import DesiredState, FeedforwardJet, FlatReference, RotorSpeeds

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.loops.underactuated import hexarotor_source, simulate_underactuated
from geodyn_ros.ros.common.diagnostics import _reason
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.typed import (TypedFeedforwardPacker, decode_typed_feedforward,
                                      decode_typed_flat_feedforward, decode_typed_reference, decode_typed_rotor_speeds,
                                      jet_fields, make_flat_reference, make_reference_jet)
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.nodes.reference_node import ReferenceNode
from geodyn_ros.ros.loops.underactuated_closed_loop import run_ros_underactuated_loop
from geodyn_ros.trajectories import figure_eight_reference

XACRO = str(hexarotor_source())
CFG_PATH = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
CFG = load_actuation_config(CFG_PATH)
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MODEL = gd.load_urdf(XACRO, locked_joints=list(CFG.rotor_joints))
ALLOC = Allocation.from_frames(rotor_frames_from_model(MODEL)[1], CFG.rotors)


def _flat_msg(t, order, stamp, rows=None):
    ref = figure_eight_reference(t, order + 2)
    K1 = order + 5 if rows is None else rows
    return make_flat_reference(stamp, ref.com[:K1], ref.yaw[:K1], ref.q[:K1], NAMES)


def _decode_flat(msg):
    """Independent decoding of a ``FlatReference`` (not the node's decoder): com, yaw, q."""
    com = np.array([[c.x, c.y, c.z] for c in msg.com])
    return com, np.array(msg.yaw), np.array(msg.q).reshape(len(com), len(msg.joint_names))


def _finite(msg) -> bool:
    """Every number a typed jet carries is finite."""
    f = jet_fields(msg)
    return all(np.isfinite(a).all() for a in (f.rows, f.values, f.pose, f.yaw) if a is not None)


def _spoil(msg, rng, values=(np.nan, np.inf, -np.inf, 1e300, -1e30, 0.0, 1e6)):
    """One number of a typed jet ``msg`` replaced by a hostile value (in place; seeded by ``rng``)."""
    f = jet_fields(msg)
    fields = [k for k, a in (("rows", f.rows), ("values", f.values), ("yaw", f.yaw)) if a is not None and a.size]
    k = fields[int(rng.integers(0, len(fields)))]
    v = float(rng.choice(values))
    if k == "values":
        name = "q" if hasattr(msg, "q") else "tau"
        a = np.array(getattr(msg, name))
        a[int(rng.integers(0, len(a)))] = v
        setattr(msg, name, a.tolist())
    elif k == "yaw":
        a = np.array(msg.yaw)
        a[int(rng.integers(0, len(a)))] = v
        msg.yaw = a.tolist()
    else:
        entries = msg.com if hasattr(msg, "com") else msg.base_twist if hasattr(msg, "base_twist") else \
            msg.base_wrench
        e = entries[int(rng.integers(0, len(entries)))]
        vec = [getattr(e, a) for a in ("force", "torque", "linear", "angular") if hasattr(e, a)] or [e]
        setattr(vec[int(rng.integers(0, len(vec)))], "xyz"[int(rng.integers(0, 3))], v)
    return msg


def _start(h, order=2, **params):
    p = {"urdf_path": XACRO, "order": order, "input_mode": "flat", "actuation_config": CFG_PATH,
         "stale_timeout": 0.5}
    p.update(params)
    node = h.make(GeodynNode, p)
    out = {t: h.record(ty, t, depth=1000) for t, ty in
           (("desired/state", DesiredState), ("feedforward/flat_jet", FeedforwardJet),
            ("feedforward/rotor_speeds", RotorSpeeds), ("feedforward/jet", FeedforwardJet))}
    out["wrench"] = h.record(WrenchStamped, "feedforward/wrench", depth=1000)
    out["efforts"] = h.record(JointState, "feedforward/joint_efforts", depth=1000)
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    h.publisher(FlatReference, "flat_reference")
    h.wait_matched("flat_reference")
    return node, out, diag


def _messages(diag):
    return [s.message for a in diag for s in a.status] + [kv.key for a in diag for s in a.status for kv in s.values]


def _said(diag, words) -> bool:
    """``words`` is in a /diagnostics message or counter key (where numbers read '#')."""
    return any(words in t or _reason(words) in t for t in _messages(diag))


def _omega(t):
    ref = figure_eight_reference(t, 0)
    f = gd.flat_inverse_dynamics(MODEL, ref.com, ref.yaw, ref.q, 0)
    return np.sqrt(ALLOC.allocate_thrust_torque(f.thrust[0], f.body_torque[0]))


def test_flat_mode_outputs_equal_the_library(h):
    node, out, diag = _start(h)
    stamp = node.get_clock().now().nanoseconds
    t = 1.3
    msg = _flat_msg(t, 2, stamp)
    h.publisher(FlatReference, "flat_reference").publish(msg)
    assert h.spin_until(lambda: all(len(out[k]) for k in out), 5.0), {k: len(v) for k, v in out.items()}
    com, yaw, q = _decode_flat(msg)
    want = gd.flat_inverse_dynamics(MODEL, com, yaw, q, 2)

    def close(a, b, rel=1e-12):
        return np.abs(np.asarray(a) - b).max() <= rel * max(1.0, np.abs(b).max())

    st, C, V, Q, names, rep = decode_typed_reference(out["desired/state"][-1], "desired/state")
    assert rep == "spatial" and out["desired/state"][-1].header.frame_id == "world"
    assert st == stamp and names == NAMES and V.shape == (4, 6) and Q.shape == (4, 6)
    assert close(C, want.base_pose) and close(V, want.base_twist) and close(Q, want.q[:4])
    st, T, tb, tau, names = decode_typed_flat_feedforward(out["feedforward/flat_jet"][-1])
    assert st == stamp and names == NAMES
    assert close(T, want.thrust) and close(tb, want.body_torque) and close(tau, want.tau)
    _, W, tau2, _, _ = decode_typed_feedforward(out["feedforward/jet"][-1], representation="spatial")
    assert close(W, want.base_wrench) and close(tau2, want.tau)
    w = out["wrench"][-1].wrench
    assert close([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z],
                 np.r_[want.body_torque[0], 0.0, 0.0, want.thrust[0]])
    assert close(out["efforts"][-1].effort, want.tau[0])
    # rotor speeds: the allocation built here, and central differences for the derivatives
    st, om, rotors = decode_typed_rotor_speeds(out["feedforward/rotor_speeds"][-1])
    assert st == stamp and rotors == CFG.rotor_links and om.shape == (3, 6)
    assert close(om[0], np.sqrt(ALLOC.allocate_thrust_torque(want.thrust[0], want.body_torque[0])))
    hs = 1e-3
    w_ = {k: _omega(t + k * hs) for k in (-2, -1, 1, 2)}
    w_[0] = om[0]
    d1 = (w_[-2] - 8 * w_[-1] + 8 * w_[1] - w_[2]) / (12 * hs)
    d2 = (-w_[-2] + 16 * w_[-1] - 30 * w_[0] + 16 * w_[1] - w_[2]) / (12 * hs ** 2)
    assert close(om[1], d1, 1e-6) and close(om[2], d2, 1e-6)
    assert node.diag.counters["cycles_skipped"] == 0


def _hostile_cases(stamp):
    cases = {}
    m = _flat_msg(1.0, 2, stamp)
    m.com[3].y = float("nan")
    cases["NaN or Inf in the derivative rows used"] = m
    cases["4 derivative rows, order 2 needs 7"] = _flat_msg(1.0, 2, stamp, rows=4)
    m = _flat_msg(1.0, 2, stamp)
    m.joint_names = [n.replace("J7", "J9") for n in m.joint_names]
    cases["missing"] = m
    m = _flat_msg(1.0, 2, stamp)
    m.yaw = list(m.yaw)[:6]
    cases["order 6 but yaw has 6 entries (7 expected)"] = m
    # free fall: c'' = g at every row used
    com, yaw, q = np.zeros((7, 3)), np.zeros(7), np.zeros((7, 6))
    com[0] = (0, 0, 1)
    com[2] = (0, 0, -9.81)
    cases["free fall"] = make_flat_reference(stamp, com, yaw, q, NAMES)
    com2 = com.copy()
    com2[2] = (0.0, 9.81, -9.81)             # c'' - g along +y with yaw 0: z_B = y_C
    cases["yaw singularity"] = make_flat_reference(stamp, com2, yaw, q, NAMES)
    com3 = np.zeros((7, 3))
    com3[0] = (2e6, 0, 0)
    cases["|CoM position| = 2e+06 m exceeds the plausibility limit"] = make_flat_reference(stamp, com3, yaw, q, NAMES)
    return cases


def test_hostile_flat_references_are_refused(h):
    node, out, diag = _start(h)
    pub = h.publisher(FlatReference, "flat_reference")
    stamp = node.get_clock().now().nanoseconds
    cases = _hostile_cases(stamp)
    for k, m in enumerate(cases.values()):
        pub.publish(m)
        assert h.spin_until(lambda: node.diag.counters["cycles_skipped"] >= k + 1, 5.0), k
    h.spin_for(0.2)
    assert not any(out[k] for k in out), {k: len(v) for k, v in out.items()}
    assert h.spin_until(lambda: all(_said(diag, w) for w in cases), 3.0), "\n".join(sorted(set(_messages(diag))))
    assert _said(diag, "flat_reference: the flat map refused the sample: com: free fall")
    assert _said(diag, "flat_reference: the flat map refused the sample: yaw: yaw singularity")
    # time going backwards is refused too, and the next good message is used at once
    good = _flat_msg(2.0, 2, stamp + 1000)
    pub.publish(good)
    assert h.spin_until(lambda: len(out["feedforward/flat_jet"]) == 1)
    pub.publish(_flat_msg(2.0, 2, stamp))
    assert h.spin_until(lambda: _said(diag, "time went backwards"), 3.0)
    pub.publish(_flat_msg(2.5, 2, stamp + 2000))
    assert h.spin_until(lambda: len(out["feedforward/flat_jet"]) == 2)
    _, T, _, _, _ = decode_typed_flat_feedforward(out["feedforward/flat_jet"][-1])
    ref = figure_eight_reference(2.5, 2)
    assert abs(T[0] - gd.flat_inverse_dynamics(MODEL, ref.com, ref.yaw, ref.q, 2).thrust[0]) < 1e-12


def test_infeasible_rotor_feedforward_is_reported_not_published(h):
    node, out, diag = _start(h)
    com, yaw, q = np.zeros((7, 3)), np.zeros(7), np.zeros((7, 6))
    com[2] = (0.0, 0.0, 30.0)        # 4.03 kg accelerating up at 30 m/s^2: 161 N > 76 N of six X4 rotors
    pub = h.publisher(FlatReference, "flat_reference")
    pub.publish(make_flat_reference(node.get_clock().now().nanoseconds, com, yaw, q, NAMES))
    assert h.spin_until(lambda: len(out["feedforward/flat_jet"]) == 1, 5.0)
    h.spin_for(0.2)
    assert not out["feedforward/rotor_speeds"]
    assert len(out["desired/state"]) == 1 and len(out["feedforward/jet"]) == 1
    assert h.spin_until(lambda: _said(diag, "feedforward/rotor_speeds not published: rotor rotor_"), 3.0)


def test_flat_mode_parameters(h, tmp_path):
    with pytest.raises(ConfigurationError, match=r"^parameter 'actuation_config': /no/such\.yaml: cannot be read "
                                                 r"\(No such file or directory\); give the path of an existing "
                                                 r"vehicle file or a shipped name \(borinot_flying_arm_2, "):
        h.make(GeodynNode, {"urdf_path": XACRO, "input_mode": "flat", "actuation_config": "/no/such.yaml"})
    # a vehicle that cannot yaw: the file's line (rotors: ...), not the allocation's argument (A: ...)
    ccw = tmp_path / "ccw.yaml"
    ccw.write_text(Path(CFG_PATH).read_text().replace('"cw"', '"ccw"'))
    with pytest.raises(ConfigurationError) as info:
        h.make(GeodynNode, {"urdf_path": XACRO, "input_mode": "flat", "actuation_config": str(ccw)})
    assert str(info.value) == (f"parameter 'actuation_config': {ccw}: turning_direction: every rotor turns ccw, so "
                               "the rotors cannot make a yaw moment (a collinear allocation of rank 3 < 4); give half "
                               "of them turning_direction cw (neighbours turning opposite ways)")
    with pytest.raises(ConfigurationError, match=r"parameter 'input_mode': must be one of \('reference', "
                                                 r"'measured', 'flat'\)"):
        h.make(GeodynNode, {"urdf_path": XACRO, "input_mode": "flatness"})
    # without actuation_config: no rotor feedforward, the rest as usual
    node = h.make(GeodynNode, {"urdf_path": XACRO, "input_mode": "flat", "order": 1,
                               "locked_joints": ",".join(CFG.rotor_joints)})
    assert node.allocation is None and node._pub_rotors is None


N_FUZZ = 2000


def test_fuzz_flat_mode(h):
    node, out, diag = _start(h, order=1, stale_timeout=5.0)
    pub = h.publisher(FlatReference, "flat_reference")
    rng = np.random.default_rng(20261125)
    for i in range(N_FUZZ):
        stamp = node.get_clock().now().nanoseconds
        if i % 5 == 4:
            pub.publish(_flat_msg(float(rng.uniform(0, 20)), 1, stamp))
        else:
            m = _spoil(_flat_msg(float(rng.uniform(0, 20)), 1, stamp), rng)
            if i % 7 == 0:
                m.order = int(rng.integers(0, 12))
            if i % 11 == 0:
                m.q = list(m.q)[:int(rng.integers(0, len(m.q)))]
            pub.publish(m)
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.5)
    for k in ("desired/state", "feedforward/flat_jet", "feedforward/rotor_speeds", "feedforward/jet"):
        for m in out[k]:
            assert _finite(m), k
    assert node.diag.counters["cycles_skipped"] > 0 and len(out["feedforward/flat_jet"]) > 0
    before = len(out["feedforward/flat_jet"])
    pub.publish(_flat_msg(3.0, 1, node.get_clock().now().nanoseconds))
    assert h.spin_until(lambda: len(out["feedforward/flat_jet"]) > before)
    _, T, tb, tau, _ = decode_typed_flat_feedforward(out["feedforward/flat_jet"][-1])
    ref = figure_eight_reference(3.0, 1)
    want = gd.flat_inverse_dynamics(MODEL, ref.com, ref.yaw, ref.q, 1)
    assert np.abs(tau - want.tau).max() <= 1e-12 * max(1.0, np.abs(want.tau).max())


def test_reference_node_publishes_the_figure_eight(h):
    h.make(ReferenceNode, {"use_sim_time": True, "order": 1, "trajectory": "figure_eight", "speed": 2.0})
    refs = h.record(FlatReference, "flat_reference")
    pc = h.publisher(ClockMsg, "/clock")
    h.wait_matched("/clock")
    c = ClockMsg()
    c.clock.sec, c.clock.nanosec = 3, 250_000_000
    pc.publish(c)
    assert h.spin_until(lambda: len(refs) > 0)
    com, yaw, q = _decode_flat(refs[-1])
    want = figure_eight_reference(3.25, 1 + 2, speed=2.0)
    assert com.shape == (6, 3)
    assert np.array_equal(com, want.com[:6]) and np.array_equal(yaw, want.yaw[:6]) and np.array_equal(q, want.q[:6])
    with pytest.raises(ConfigurationError,
                       match=r"parameter 'trajectory': must be one of \('table3', 'figure_eight', 'waypoints', 'vehicle'\)"):
        h.make(ReferenceNode, {"trajectory": "circle"})
    with pytest.raises(ConfigurationError, match=r"parameter 'speed': must be a finite number > 0"):
        h.make(ReferenceNode, {"trajectory": "figure_eight", "speed": 0.0})


# ------------------------------------------------------------------------------- the controller node
def _ctrl_inputs(h, node, stamp, t=0.8, multiarray=False):
    """Publish one consistent input set stamped ``stamp`` (a perturbed state near the reference)."""
    return flat_controller_inputs(h, MODEL, NAMES, stamp, t, multiarray=multiarray)


@pytest.mark.parametrize("level, types", [("rigid", "typed"), ("ff2", "typed"), ("ff2", "multiarray")])
def test_flat_controller_node_commands_what_the_library_commands(h, level, types):
    logs = rosout(h, "geodyn_flat_controller")
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "level": level, "input_policy": "exact",
                                       "message_types": types})
    rotor_type = node.commands.rotors.msg_type
    rotors = h.record(rotor_type, "cmd/rotor_speeds")
    motors = h.record(JointState, "cmd/motor_efforts")
    stamp = 1_500_000_000
    ref, flat, C, Vb, q, qd, th, thd = _ctrl_inputs(h, node, stamp, multiarray=types == "multiarray")
    assert h.spin_until(lambda: len(rotors) and len(motors), 30.0)     # 30 s: a cold numba cache compiles
    lib = FlatnessController(MODEL, ALLOC, CFG.rotors, CFG.elastic, FlatnessGains(), level)
    ref0 = figure_eight_reference(0.8, 0)
    want = lib.command(C, Vb, q, qd, th, thd, ref0.com, ref0.yaw, ref0.q, flat)
    got_om = np.array(rotors[-1].velocity)
    # the node's inputs went through messages (quaternion round trip): rounding, not law
    assert np.abs(got_om - want.omega).max() < 1e-9 * max(1.0, np.abs(want.omega).max())
    assert np.abs(np.array(motors[-1].effort) - want.u).max() < 1e-9
    assert tuple(motors[-1].name) == CFG.elastic.joints
    assert motors[-1].header.stamp.sec == 1 and motors[-1].header.stamp.nanosec == 500_000_000
    if types == "multiarray":
        assert said_deprecated(h, logs)


def test_flat_controller_bad_parameters_and_live_tuning(h):
    for params, pattern in (({"level": "ff3"}, r"parameter 'level': must be one of"),
                            ({"level": "ff2", "order": 1}, r"parameter 'order': level 'ff2' needs geodyn_node's flat"),
                            ({"kp_rotation": [1.0, 2.0]}, r"parameter kp_rotation: expected a scalar or 3 values"),
                            ({"kd_position": -1.0}, r"parameter kd_position: gains must be finite and >= 0"),
                            ({"lag_timestep": -0.001}, r"parameter 'lag_timestep': must be >= 0 s"),
                            ({"actuation_config": "/no/such.yaml"},
                             r"^parameter 'actuation_config': /no/such\.yaml: cannot be read \(No such file")):
        with pytest.raises(ConfigurationError, match=pattern):
            h.make(FlatControllerNode, {"urdf_path": XACRO, **params})
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "order": 1, "level": "ff1"})
    ok = node.set_parameters([Parameter("kp_rotation", value=[10.0, 20.0, 5.0]), Parameter("level", value="rigid")])
    assert all(r.successful for r in ok)
    assert node.ctrl.gains.kp_rotation == (10.0, 20.0, 5.0) and node.ctrl.level == "rigid"
    bad = node.set_parameters([Parameter("kp_rotation", value=[1.0, 2.0])])
    assert not bad[0].successful and "kp_rotation: expected 3 numbers" in bad[0].reason
    bad = node.set_parameters([Parameter("level", value="ff2")])
    assert not bad[0].successful and "needs order >= 2" in bad[0].reason
    bad = node.set_parameters([Parameter("kp_position", value=-5.0)])
    assert not bad[0].successful and "kp_position" in bad[0].reason
    assert node.ctrl.gains.kp_rotation == (10.0, 20.0, 5.0) and node.ctrl.gains.kp_position == 64.0


def test_flat_controller_refuses_bad_inputs(h):
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "level": "ff2"})
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds")
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    pj = h.publisher(FeedforwardJet, "feedforward/flat_jet")
    h.wait_matched("feedforward/flat_jet")
    low = TypedFeedforwardPacker(NAMES, 1).pack_flat(0, np.ones(2), np.zeros((2, 3)), np.zeros((2, 6)))
    pj.publish(low)
    assert h.spin_until(lambda: _said(diag, "feedforward/flat_jet: 2 rows, level 'ff2' needs 3"), 3.0)
    bad = TypedFeedforwardPacker(NAMES, 2).pack_flat(0, [1.0, np.nan, 0.0], np.zeros((3, 3)), np.zeros((3, 6)))
    pj.publish(bad)
    assert h.spin_until(lambda: _said(diag, "feedforward/flat_jet: NaN or Inf"), 3.0)
    assert not rotors


# ------------------------------------------------------------------------------- the loop
@pytest.mark.parametrize("row", ["ff2", "rigid"])
def test_ros_loop_reproduces_the_in_process_loop(row):
    info = {}
    ros = run_ros_underactuated_loop(row, 2.0, wall_timeout=300, info=info)
    twin = simulate_underactuated(row, 2.0, preroll=0.0)
    assert len(ros.log.t) == len(twin.log.t) == 2001
    assert np.abs(ros.log.t - twin.log.t).max() < 1e-12
    assert np.abs(ros.log.p - twin.log.p).max() < 1e-12        # the CoM
    assert np.abs(ros.log.R - twin.log.R).max() < 1e-12
    assert np.abs(ros.log.q - twin.log.q).max() < 1e-12
    assert not loop_problems(info["diagnostics"])
    assert ros.rotor_saturations == ros.motor_saturations == 0
    # the rotor feedforward on the topic is the flat map's, at every stamp
    ffw = info["rotor_feedforward"]
    assert len(ffw) >= 2001
    for k in (0, 1000, 2000):
        assert np.abs(ffw[k * 1_000_000][0] - _omega(k * 1e-3)).max() < 1e-9


def test_fuzz_flat_controller_node(h):
    """2,000 hostile inputs on every topic of the controller: it stays alive, never commands a
    non-finite number, and answers a valid input set afterwards with the library's command."""
    from sibling import test_module
    _hostile_joints, _hostile_odom = (getattr(test_module("test_ros_hostile"), n) for n in ("_hostile_joints", "_hostile_odom"))
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "level": "ff2", "input_policy": "exact"})
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=1000)
    motors = h.record(JointState, "cmd/motor_efforts", depth=1000)
    ref, flat, *_ = _ctrl_inputs(h, node, 1_000_000)    # also matches every publisher
    assert h.spin_until(lambda: len(motors) == 1, 5.0)
    pubs = {t: h.publisher(ty, t) for t, ty in (("flat_reference", FlatReference), ("desired/state", DesiredState),
                                                 ("feedforward/flat_jet", FeedforwardJet))}
    po, pj, pm = h.publisher(type(odometry_msg(0, np.eye(4), np.zeros(3), np.zeros(3))), "odom"), \
        h.publisher(JointState, "joint_states"), h.publisher(JointState, "motor_states")
    rng = np.random.default_rng(99)
    for i in range(N_FUZZ):
        stamp = 2_000_000 + i * 1_000_000
        k = i % 6
        if k == 0:
            po.publish(_hostile_odom(rng, stamp))
        elif k == 1:
            pj.publish(_hostile_joints(rng, stamp))
        elif k == 2:
            pm.publish(_hostile_joints(rng, stamp))
        else:
            topic = ("flat_reference", "desired/state", "feedforward/flat_jet")[k - 3]
            m = {"flat_reference": lambda: _flat_msg(1.0, 0, stamp),
                 "desired/state": lambda: make_reference_jet(stamp, flat.base_pose, flat.base_twist, flat.q[:4], NAMES,
                                                             cls=DesiredState),
                 "feedforward/flat_jet": lambda: TypedFeedforwardPacker(NAMES, 2).pack_flat(
                     stamp, flat.thrust, flat.body_torque, flat.tau)}[topic]()
            _spoil(m, rng, (np.nan, np.inf, 1e300, -1e30, 0.0))
            if i % 7 == 0:
                m.order = int(rng.integers(0, 9))
            pubs[topic].publish(m)
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.5)
    for m in rotors:
        assert np.isfinite(np.asarray(m.velocity)).all()
    for m in motors:
        assert np.isfinite(np.asarray(m.effort)).all()
    assert node.diag.counters["cycles_skipped"] > 0
    before = len(motors)
    ref, flat, C, Vb, q, qd, th, thd = _ctrl_inputs(h, node, 5_000_000_000)
    assert h.spin_until(lambda: len(motors) > before and motors[-1].header.stamp.sec == 5, 5.0)
    lib = FlatnessController(MODEL, ALLOC, CFG.rotors, CFG.elastic, FlatnessGains(), "ff2")
    ref0 = figure_eight_reference(0.8, 0)
    want = lib.command(C, Vb, q, qd, th, thd, ref0.com, ref0.yaw, ref0.q, flat)
    assert np.abs(np.array(motors[-1].effort) - want.u).max() < 1e-9
