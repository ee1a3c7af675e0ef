"""``input_policy`` and the sensor QoS of the three controllers (issue 42; rule in
:mod:`geodyn_ros.ros.inputs.latest_inputs`).

* ``latest`` (default), per controller: odometry at 250 Hz and joint states (and motor states) at
  500 Hz on their own stamps, interleaved: exactly one command per odometry, stamped with it, equal
  to the library's law (:func:`~geodyn_ros.control.feedback.tracking_command`,
  :class:`~geodyn_ros.control.actuated.ActuatedController`,
  :class:`~geodyn_ros.control.flatness.FlatnessController`) on the newest joint (and motor) sample
  propagated here by ``q + dt qdot`` to the odometry's stamp, including a sample newer than it
  (``dt < 0``); ``~/inputs_used`` names those samples. The comparison can fail: the law on the held
  samples differs by far more than the tolerance (checked).
* A joint sample older than ``joint_states_max_age`` (20 ms) at the odometry's stamp: no command,
  a ``/diagnostics`` line naming the stream and its age.
* ``exact``: today's rule, unchanged: odometry and joint states of different stamps give no command;
  the pair of one stamp gives the law on the unpropagated state.
* Bytes: truncated, random, huge and misaligned buffers on ``odom`` and ``joint_states`` never reach
  the law (rclpy refuses them before the callback); the next good samples give the library's
  command. Bad parameter values stop the node with one line naming the parameter.
* QoS: a best-effort publisher (sensor data, as PX4's) reaches every controller's ``odom``,
  ``joint_states`` and ``motor_states``; with ``sensor_reliability: reliable`` it does not.
* Typed references (``geodyn_msgs``, the default ``message_types``): one naming another base
  link, in another representation, with other joints (or, for the flat jet, a force off the base
  +z) is refused with its reason on the node's diagnostics and no cycle uses it; the good one
  after it gives the library's command. ``message_types: multiarray`` (deprecated, one warning):
  the layouts, the same command.

Tolerance 1e-9 relative: the inputs cross the messages as float64 (the odometry quaternion round
trip costs ~1e-15); one joint sample of another time changes the commands by >= 1e-4 here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ros_harness import (Harness, flat_jet_inputs, joint_states_msg, odometry_msg, refused,  # noqa: I100  (ROS env
                         rosout, said_deprecated)  # first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.feedback import TrackingGains, tracking_command
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.lie import Ad_inv, exp_so3
from geodyn_ros.loops.underactuated import hexarotor_source, rigid_effort_limits
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.common.runtime import control_qos
from geodyn_ros.ros.inputs.latest_inputs import decode_inputs_used
from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.ros.wire.jets import make_reference_msg
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.trajectories import figure_eight_reference, table3_reference

REPO = Path(__file__).resolve().parents[3]
URDF = str(shipped_urdf())
TILT = str(REPO / "urdf" / "tilthex_manipulator.urdf.xacro")
HEXA = str(hexarotor_source())
HEXA_CFG = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
TOL = 1e-9
MS = 1_000_000
KINDS = ("geodyn_controller", "geodyn_actuated_controller", "geodyn_flat_controller")
SENSORS = ("odom", "joint_states", "motor_states")


# ----------------------------------------------------------------------------- per controller
class Rig:
    """One controller under test: its node, the references it needs (published once, stamped
    ``t0``), its command recorder and the library law on a given state."""

    def __init__(self, h, kind, params=None):
        self.h, self.kind, self.t0 = h, kind, 1000 * 10**9
        # odom_timeout: these tests feed odometry sparsely (waiting for each sample) and check the
        # tracking law; the failsafe that a 40 ms silence starts is tested in test/ros/inputs/test_ros_failsafe.py
        p = {"stale_timeout": 2.0, "odom_timeout": 60.0, **(params or {})}
        self.multiarray = p.get("message_types") == "multiarray"
        if kind == "geodyn_controller":
            self.node = h.make(ControllerNode, {"urdf_path": URDF, "use_feedforward": False, **p})
            self.cmds = h.record(WrenchStamped, "cmd/wrench", depth=200)
            self.efforts = h.record(JointState, "cmd/joint_efforts", depth=200)
            self.elastic = False
        elif kind == "geodyn_actuated_controller":
            self.node = h.make(ActuatedControllerNode, {"urdf_path": TILT, "use_feedforward": False, **p})
            self.cmds = h.record(JointState, "cmd/motor_efforts", depth=200)
            self.elastic = True
        else:
            self.node = h.make(FlatControllerNode, {"urdf_path": HEXA, "actuation_config": HEXA_CFG, "level": "ff2",
                                                    **p})
            self.cmds = h.record(JointState, "cmd/motor_efforts", depth=200)
            self.elastic = True
        self.rotors = h.record(self.node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=200) \
            if kind != "geodyn_controller" else None
        self.used = h.record(Float64MultiArray, f"/{kind}/inputs_used", depth=200)
        self.diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
        self.model = self.node.model
        topics = [("odom", Odometry), ("joint_states", JointState)] + ([("motor_states", JointState)]
                                                                         if self.elastic else [])
        topics += [(t, type(m)) for t, m in self.jets(0).items()]
        # the sensors from best-effort publishers (sensor data, as PX4's and most drivers'), the rest reliable
        self.pubs = {t: (h.probe.create_publisher(m, t, control_qos(10, "best_effort")) if t in SENSORS
                         else h.publisher(m, t)) for t, m in topics}
        for t, pub in self.pubs.items():
            assert h.spin_until(lambda: pub.get_subscription_count() > 0), f"{t}: no subscription matched"
        self._references()

    def jets(self, stamp):
        """The reference inputs stamped ``stamp`` (topic -> message): typed (``ReferenceJet``; the
        flat controller's three, :func:`ros_harness.flat_jet_inputs`) or, with ``message_types:
        multiarray``, the layouts."""
        if self.kind != "geodyn_flat_controller":
            if not hasattr(self, "ref"):
                self.ref = table3_reference(4.2, 3)
            ref = self.ref
            make = make_reference_msg if self.multiarray else make_reference_jet
            return {"reference": make(stamp, ref.base_pose, ref.base_twist[:5], ref.q[:5], NAMES)}
        if not hasattr(self, "flat"):
            self.ref = figure_eight_reference(0.8, 2)
            self.ref0 = figure_eight_reference(0.8, 0)
            self.flat = gd.flat_inverse_dynamics(self.model, self.ref.com, self.ref.yaw, self.ref.q, 2)
        return flat_jet_inputs(self.model, NAMES, stamp, self.ref, self.flat, self.multiarray)

    def _references(self, t0=None):
        t0 = self.t0 if t0 is None else t0
        for t, m in self.jets(t0).items():
            self.pubs[t].publish(m)
        key = "reference" if self.kind != "geodyn_flat_controller" else "feedforward/flat_jet"
        assert self.h.spin_until(lambda: self.node._stamps[key] == t0)

    def state(self, k: int):
        """A seeded state near the reference: pose (4, 4), body twist (6,), q, qd, theta, thetad."""
        rng = np.random.default_rng(100 + k)
        base = self.ref.base_pose if self.kind != "geodyn_flat_controller" else self.flat.base_pose
        C = base.copy()
        C[:3, 3] += rng.normal(size=3) * 0.01
        C[:3, :3] = C[:3, :3] @ exp_so3(rng.normal(size=3) * 0.01)
        return (C, rng.normal(size=6) * 0.1, self.ref.q[0] + rng.normal(size=6) * 0.05,
                rng.normal(size=6), self.ref.q[0] + rng.normal(size=6) * 0.05, rng.normal(size=6))

    def law(self, C, Vb, q, qd, th, thd):
        """The library's command: (rotor speeds or the body wrench, joint or motor torques)."""
        if self.kind == "geodyn_controller":
            ref = self.ref
            W, tau = tracking_command(TrackingGains(400.0, 40.0, 60.0, 6.0, 40.0, 0.5), C, Vb, q, qd,
                                      ref.base_pose, Ad_inv(ref.base_pose) @ ref.base_twist[0], ref.q[0], ref.q[1])
            return W, tau
        if self.kind == "geodyn_actuated_controller":
            cfg = load_actuation_config()
            al = Allocation.from_frames(rotor_frames_from_model(self.model)[1], cfg.rotors)
            ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, self.model.joint_names, TrackingGains(), None,
                                      effort_limits=rigid_effort_limits(cfg, self.model, TILT), model=self.model)
            ref = self.ref
            cmd = ctrl.command(C, Vb, q, qd, th, thd, ref.base_pose, Ad_inv(ref.base_pose) @ ref.base_twist[0],
                               ref.q, np.zeros((1, 6)), np.zeros((1, 6)))
            return cmd.omega, cmd.u
        cfg = load_actuation_config(HEXA_CFG)
        al = Allocation.from_frames(rotor_frames_from_model(self.model)[1], cfg.rotors)
        lib = FlatnessController(self.model, al, cfg.rotors, cfg.elastic, FlatnessGains(), "ff2",
                                 effort_limits=rigid_effort_limits(cfg, self.model, HEXA))   # as the node
        cmd = lib.command(C, Vb, q, qd, th, thd, self.ref0.com, self.ref0.yaw, self.ref0.q, self.flat)
        return cmd.omega, cmd.u

    def got(self, stamp):
        """The command stamped ``stamp`` (as ``law`` returns it), or None."""
        def st(m):
            return m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
        c = next((m for m in self.cmds if st(m) == stamp), None)
        if c is None:
            return None
        if self.kind == "geodyn_controller":
            w = c.wrench
            e = next((m for m in self.efforts if st(m) == stamp), None)
            return (np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z]),
                    None if e is None else np.array(e.effort))
        r = self.rotors[self.cmds.index(c)] if len(self.rotors) > self.cmds.index(c) else None
        om = None if r is None else np.array(r.velocity)
        return om, np.array(c.effort)

    def send(self, topic, stamp, *values):
        if topic == "odom":
            C, Vb = values
            msg = odometry_msg(stamp, C, Vb[:3], Vb[3:])
        else:
            msg = joint_states_msg(stamp, NAMES, *values)
        self.pubs[topic].publish(msg)


def _close(a, b) -> bool:
    scale = max(1.0, np.abs(b).max())
    return bool(np.abs(np.asarray(a) - b).max() <= TOL * scale)


def _wait_held(rig, topic, stamp):
    held = rig.node._held[topic]
    assert rig.h.spin_until(lambda: held.sample.stamp_ns == stamp), f"{topic} stamped {stamp} not taken"


@pytest.mark.parametrize("kind", KINDS)
def test_latest_one_command_per_odom_with_propagated_joints(h, kind):
    rig = Rig(h, kind)
    t0 = rig.t0
    # 8 joint samples (500 Hz, 1.3 ms before the odometry's on its clock), motor samples 0.7 ms after
    # them, 4 odometry samples (250 Hz); sent in stamp order, except that the last joint sample
    # (t0 + 12.7 ms) comes before the last odometry (t0 + 12 ms): propagated back over -0.7 ms
    js = [t0 - 13 * MS // 10 + 2 * MS * k for k in range(8)]
    mo = [s + 7 * MS // 10 for s in js]
    od = [t0 + 4 * MS * k for k in range(4)]
    events = sorted([(s, "joint_states", k) for k, s in enumerate(js)] + [(s, "odom", k) for k, s in enumerate(od)]
                    + ([(s, "motor_states", k) for k, s in enumerate(mo)] if rig.elastic else []))
    last_js = next(e for e in events if e[1] == "joint_states" and e[0] == js[-1])
    events.remove(last_js)
    events.insert(events.index((od[-1], "odom", 3)), last_js)
    newest = {}
    expected = {}
    ages = []
    for stamp, topic, k in events:
        C, Vb, q, qd, th, thd = rig.state(k if topic == "odom" else 10 + k)
        if topic == "odom":
            rig.send("odom", stamp, C, Vb)
            # 30 s: a loaded machine compiling the law's kernels on their first call (cold numba cache)
            assert h.spin_until(lambda: rig.got(stamp) is not None and all(g is not None for g in rig.got(stamp)),
                                30.0), f"no command for odom {stamp}: {rig.node.diag.last_problem}"
            t_js, (q0, qd0) = newest["joint_states"]
            dt = (stamp - t_js) * 1e-9
            ages.append(stamp - t_js)
            qs, ths, thds = q0 + dt * qd0, None, None
            if rig.elastic:
                t_mo, (th0, thd0) = newest["motor_states"]
                ths, thds = th0 + (stamp - t_mo) * 1e-9 * thd0, thd0
            want = rig.law(C, Vb, qs, qd0, ths, thds)
            held = rig.law(C, Vb, q0, qd0, None if not rig.elastic else th0, thds)
            expected[stamp] = (want, t_js, newest.get("motor_states", (None,))[0])
            got = rig.got(stamp)
            for g, w in zip(got, want):
                assert _close(g, w), f"{kind}: command for odom {stamp} is not the law on the propagated samples"
            assert not all(_close(w, o) for w, o in zip(want, held)), \
                "the propagation does not change the law here: the check means nothing"
        else:
            rig.send(topic, stamp, q if topic == "joint_states" else th, qd if topic == "joint_states" else thd)
            _wait_held(rig, topic, stamp)
            newest[topic] = (stamp, (q, qd) if topic == "joint_states" else (th, thd))
    # one command per odometry, each stamped with it; the record names the samples used
    stamps = sorted({m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in rig.cmds})
    assert stamps == od and len(rig.cmds) == len(od)
    assert min(ages) < 0 < max(ages), ages   # a newer joint sample was propagated back, older ones forward
    assert h.spin_until(lambda: len(rig.used) >= len(od))
    assert len(rig.used) == len(od)
    for m in rig.used:
        r = decode_inputs_used(m)
        _, t_js, t_mo = expected[r["cycle"]]
        assert r["odom"] == r["cycle"] and r["joint_states"] == t_js
        if rig.elastic:
            assert r["motor_states"] == t_mo


@pytest.mark.parametrize("kind", KINDS)
def test_latest_refuses_a_joint_sample_over_its_maximum_age(h, kind):
    rig = Rig(h, kind, {"joint_states_max_age": 0.02})
    t0 = rig.t0
    C, Vb, q, qd, th, thd = rig.state(0)
    rig.send("joint_states", t0, q, qd)
    _wait_held(rig, "joint_states", t0)
    if rig.elastic:
        rig.send("motor_states", t0 + 24 * MS, th, thd)
        _wait_held(rig, "motor_states", t0 + 24 * MS)
    rig.send("odom", t0 + 25 * MS, C, Vb)
    want = "joint_states: newest sample 25.000 ms older than the cycle time 1000.025000 s, over joint_states_max_age"
    assert h.spin_until(lambda: want in rig.node.diag.last_problem, 5.0), rig.node.diag.last_problem
    h.spin_for(0.2)
    assert not rig.cmds
    assert h.spin_until(lambda: any(want in s.message for d in rig.diag for s in d.status), 3.0)
    # 20 ms old is within it: the next odometry is answered
    rig.send("joint_states", t0 + 10 * MS, q, qd)
    _wait_held(rig, "joint_states", t0 + 10 * MS)
    rig.send("odom", t0 + 30 * MS, C, Vb)
    assert h.spin_until(lambda: rig.got(t0 + 30 * MS) is not None), rig.node.diag.last_problem


@pytest.mark.parametrize("types", ["typed", "multiarray"])
def test_exact_keeps_the_stamp_pairing(h, types):
    """``input_policy: exact`` (lock-step): joint states 1.3 ms before the odometry give no command
    (``sync_stamps``: one stamp for every input); the joint states of the odometry's stamp give
    the law on them, unpropagated. ``multiarray``: the same with the deprecated reference layout,
    and one WARN."""
    logs = rosout(h, "geodyn_controller")
    rig = Rig(h, "geodyn_controller", {"input_policy": "exact", "message_types": types})
    t0 = rig.t0
    C, Vb, q, qd, *_ = rig.state(0)
    rig.send("joint_states", t0 - 13 * MS // 10, q, qd)
    rig.send("odom", t0, C, Vb)
    h.spin_for(0.3)
    assert not rig.cmds
    rig.send("joint_states", t0, q, qd)
    assert h.spin_until(lambda: rig.got(t0) is not None and rig.got(t0)[1] is not None)
    assert _close(rig.got(t0)[1], rig.law(C, Vb, q, qd, None, None)[1])
    if types == "multiarray":
        assert said_deprecated(h, logs)


def _bad_jets(rig, stamp):
    """``[(topic, message, words of the refusal)]``: typed inputs of ``rig``'s controller, each
    wrong in one way (the base link, the representation, the joints; the flat jet's force)."""
    good = rig.jets(stamp)
    other = ("J2", "J3", "J4", "J5", "J6", "wrist")
    out = []
    if rig.kind != "geodyn_flat_controller":
        r = rig.ref
        out += [("reference", make_reference_jet(stamp, r.base_pose, r.base_twist[:5], r.q[:5], NAMES,
                                                 child_frame_id="robot2/base_link"),
                 "reference: child_frame_id 'robot2/base_link' is not the base link 'base_link'"),
                ("reference", make_reference_jet(stamp, r.base_pose, r.base_twist[:5], r.q[:5], NAMES,
                                                 representation="hybrid"),
                 "reference: representation 'hybrid', this node needs 'spatial' (reference_representation)"),
                ("reference", make_reference_jet(stamp, r.base_pose, r.base_twist[:5], r.q[:5], other),
                 "reference joint_names")]
        return out
    import copy
    for topic, field, value, words in (
            ("flat_reference", "child_frame_id", "robot2/base_link",
             "flat_reference: child_frame_id 'robot2/base_link' is not the base link 'base_link'"),
            ("flat_reference", "joint_names", list(other), "flat_reference joint_names"),
            ("desired/state", "representation", "body",
             "desired/state: representation 'body', this node needs 'spatial'"),
            ("desired/state", "child_frame_id", "robot2/base_link",
             "desired/state: child_frame_id 'robot2/base_link' is not the base link 'base_link'"),
            ("feedforward/flat_jet", "representation", "spatial",
             "feedforward/flat_jet: representation 'spatial', this node needs 'body'"),
            ("feedforward/flat_jet", "joint_names", list(NAMES[::-1]), "feedforward/flat_jet: joints ('J7', 'J6'"),
            ("feedforward/flat_jet", "force", None, "feedforward/flat_jet: force has x or y components")):
        m = copy.deepcopy(good[topic])
        if field == "force":
            m.base_wrench[0].force.x = 0.5
        else:
            setattr(m, field, value)
        out.append((topic, m, words))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_typed_references_of_another_frame_representation_or_joints_are_refused(h, kind):
    rig = Rig(h, kind)
    t1 = rig.t0 + 10 * MS
    for k, (topic, msg, words) in enumerate(_bad_jets(rig, t1)):
        rig.pubs[topic].publish(msg)
        assert refused(h, rig.node, words), (words, rig.node.diag.last_problem)
        C, Vb, q, qd, th, thd = rig.state(k)
        st = t1 + (k + 1) * MS
        if rig.elastic:
            rig.send("motor_states", st, th, thd)
        rig.send("joint_states", st, q, qd)
        rig.send("odom", st, C, Vb)
        assert h.spin_until(lambda: rig.node._stamps["odom"] == st)
        h.spin_for(0.05)
        assert rig.got(st) is None, f"{kind}: a cycle used the refused {topic} ({words})"
        rig._references(rig.t0 + (k + 1) * MS)     # the good inputs again (the refused one cleared its stamp)
    # the good ones: the library's command
    st = t1 + 100 * MS
    C, Vb, q, qd, th, thd = rig.state(50)
    if rig.elastic:
        rig.send("motor_states", st, th, thd)
        _wait_held(rig, "motor_states", st)
    rig.send("joint_states", st, q, qd)
    _wait_held(rig, "joint_states", st)
    rig.send("odom", st, C, Vb)
    assert h.spin_until(lambda: rig.got(st) is not None and all(g is not None for g in rig.got(st)), 30.0), \
        rig.node.diag.last_problem
    for g, w in zip(rig.got(st), rig.law(C, Vb, q, qd, th if rig.elastic else None, thd if rig.elastic else None)):
        assert _close(g, w)


def _byte_attacks(raw: bytes, seed: int):
    rng = np.random.default_rng(seed)
    yield "empty", b""
    for cut in (3, 9, 40, len(raw) // 2, len(raw) - 8):
        yield f"truncated to {cut}", raw[:cut]
    yield "random", bytes(rng.integers(0, 256, len(raw), dtype=np.uint8))
    yield "random header kept", raw[:4] + bytes(rng.integers(0, 256, len(raw) - 4, dtype=np.uint8))
    yield "huge", raw[:4] + b"\xff\xff\xff\x7f" + raw[8:] + bytes(1 << 20)
    yield "misaligned", raw[:4] + b"\x00" + raw[4:]


@pytest.mark.parametrize("topic", ["odom", "joint_states"])
def test_latest_survives_byte_attacks(h, topic):
    rig = Rig(h, "geodyn_controller")
    t = rig.t0
    raw = serialize_message(odometry_msg(t, np.eye(4), np.zeros(3), np.zeros(3)) if topic == "odom" else
                            joint_states_msg(t, NAMES, np.zeros(6), np.zeros(6)))
    for k, (name, bad) in enumerate(_byte_attacks(raw, 3 + len(topic))):
        rig.pubs[topic].publish(bad)
        C, Vb, q, qd, *_ = rig.state(k)
        t += 4 * MS
        rig.send("joint_states", t - MS, q, qd)
        _wait_held(rig, "joint_states", t - MS)
        rig.send("odom", t, C, Vb)
        assert h.spin_until(lambda: rig.got(t) is not None), f"{name} on {topic}: no command for the next odometry"
        assert h.spin_until(lambda: rig.got(t)[1] is not None)
        assert _close(rig.got(t)[1], rig.law(C, Vb, q + 1e-3 * qd, qd, None, None)[1]), \
            f"{name} on {topic}: the next command is not the library's"


@pytest.mark.parametrize("params,match", [
    ({"input_policy": "newest"}, r"^parameter 'input_policy': must be one of \('latest', 'exact'\), got 'newest'$"),
    ({"joint_states_max_age": 0.0}, r"^parameter 'joint_states_max_age': must be a finite number of seconds > 0"),
    ({"joint_states_max_age": float("nan")}, r"^parameter 'joint_states_max_age'"),
    ({"sensor_reliability": "sometimes"}, r"^parameter 'sensor_reliability': must be 'reliable' or 'best_effort'"),
    ({"input_reliability": ""}, r"^parameter 'input_reliability'"),
    ({"input_policy": 3}, r"^parameter 'input_policy': expected str"),
])
@pytest.mark.parametrize("kind", KINDS)
def test_bad_policy_parameters_stop_the_node(kind, params, match):
    h = Harness()
    try:
        cls = {"geodyn_controller": ControllerNode, "geodyn_actuated_controller": ActuatedControllerNode,
               "geodyn_flat_controller": FlatControllerNode}[kind]
        with pytest.raises(ConfigurationError, match=match):
            h.make(cls, {"urdf_path": {"geodyn_controller": URDF, "geodyn_actuated_controller": TILT}.get(kind, HEXA),
                         **params})
    finally:
        h.close()


@pytest.mark.parametrize("kind", KINDS)
def test_best_effort_sensor_publishers_reach_every_controller(h, kind):
    """A sensor-data publisher (best-effort, keep last 5: rclcpp's SensorDataQoS, PX4's) matches
    the default subscriptions of odom, joint_states and motor_states; with
    ``sensor_reliability: reliable`` the same publisher does not match (DDS request/offer)."""
    cls, urdf = {"geodyn_controller": (ControllerNode, URDF), "geodyn_actuated_controller": (ActuatedControllerNode, TILT),
                 "geodyn_flat_controller": (FlatControllerNode, HEXA)}[kind]
    topics = ("odom", "joint_states") + (("motor_states",) if kind != "geodyn_controller" else ())
    types = {"odom": Odometry, "joint_states": JointState, "motor_states": JointState}
    node = h.make(cls, {"urdf_path": urdf}, namespace="be")
    strict = h.make(cls, {"urdf_path": urdf, "sensor_reliability": "reliable"}, namespace="rel")
    assert node.latest and strict.latest
    for t in topics:
        sub = next(s for s in node.subscriptions if s.topic_name == f"/be/{t}")
        assert sub.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        be = h.probe.create_publisher(types[t], f"/be/{t}", control_qos(5, "best_effort"))
        assert h.spin_until(lambda: be.get_subscription_count() == 1, 5.0), f"{t}: best-effort publisher unmatched"
        be_rel = h.probe.create_publisher(types[t], f"/rel/{t}", control_qos(5, "best_effort"))
        rel = h.probe.create_publisher(types[t], f"/rel/{t}", control_qos(5, "reliable"))
        assert h.spin_until(lambda: rel.get_subscription_count() == 1, 5.0)   # discovery is done ...
        h.spin_for(0.2)
        assert be_rel.get_subscription_count() == 0, f"{t}: a reliable subscription matched a best-effort publisher"
    # the data path with best-effort sensors: test_latest_one_command_per_odom_with_propagated_joints
