"""The time-varying LQR over ROS 2: ``geodyn_flat_controller`` with ``feedback: lqr``.

* **The node commands what the library commands:** one input set plus one linearization message
  (``gd.linearize`` at the flat nominal, body representation, as ``geodyn_node`` publishes it)
  gives the rotor speeds and motor torques of :class:`LqrController` with the DARE gain of
  :class:`ActuatedModel`'s discretization of that linearization, to 1e-9 relative (the inputs
  went through messages: a quaternion round trip, rounding only).
* **A republished state** (a lock-step simulator whose ``command_timeout`` ran out) is answered
  with the command already sent for it, the library's one command: computing it again would run
  the rotor-speed estimate a second step (it did, and the ROS loop left the in-process one under load).
* **Bad parameters** stop the node with one line naming them; the geometric gains and ``level``
  are refused live with the reason.
* **Bad linearizations** (wrong size, NaN, the spatial representation, the labels of another
  robot, another base link) are refused with one diagnostic and never produce a command; a seeded
  fuzz of 300 hostile linearization messages never makes the node publish a non-finite number; a
  gain older than ``gain_timeout`` stops the commands with a diagnostic saying so. The
  linearization is the typed ``geodyn_msgs/Linearization`` (its labels and representation in the
  message); with ``message_types: multiarray`` (deprecated) the ``Float64MultiArray`` blocks and
  the ``/labels`` topic, the same command.
* **The loop over ROS** (four nodes, lock-step): with the gains in the executor thread (row
  ``lqr``) it reproduces the in-process ``lqr_online`` loop of :mod:`geodyn_ros.loops.lqr`. The
  first gain is scipy's DARE solution, which amplifies last-bit differences of its input about
  1e4-fold (a 1e-16 relative change of ``A`` changes ``K`` by 6e-12; the ROS inputs went through a
  quaternion round trip): measured 2.5e-11 m and 6e-9 deg over 1 s; bound 1e-9 m and 1e-6 deg
  over 2 s. With the gains on the background thread (``lqr_thread``, as deployed) which gain a
  step uses depends on how far the thread got (wall clock, so the machine's load): the run records
  the chain of gains computed and the gain each step used, and the in-process loop replaying
  exactly those gains gives the same trajectory, to the same bounds; it tracks as well as the
  emulated schedule (CoM and attitude RMS within 1.5x; measured 4.4e-6 m apart over 1 s).
  test_ros_lock_step_load.py runs these loops with both cores busy and republished states.
"""
from __future__ import annotations


import numpy as np
import pytest
from ros_harness import (flat_controller_inputs, joint_states_msg, loop_problems,  # noqa: I100  (sets the ROS
                         odometry_msg)  # isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from geodyn_msgs.msg import Linearization

import geodyn_ros as gd
from geodyn_ros.control.lqr import ActuatedModel, LqrController, LqrWeights, dare_gain
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.lie import Ad_inv
from geodyn_ros.loops.lqr import simulate_case
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.ros.common.diagnostics import _reason
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.ros.wire.jets import LinearizationPacker, linearization_labels_json
from geodyn_ros.ros.wire.typed import TypedLinearizationPacker
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.loops.underactuated_closed_loop import run_ros_underactuated_loop
from geodyn_ros.trajectories import figure_eight_reference

XACRO = str(hexarotor_source())
CFG_PATH = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
CFG = load_actuation_config(CFG_PATH)
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MODEL = gd.load_urdf(XACRO, locked_joints=list(CFG.rotor_joints))
ALLOC = Allocation.from_frames(rotor_frames_from_model(MODEL)[1], CFG.rotors)
LIN = ActuatedModel(MODEL, ALLOC, CFG.rotors, CFG.elastic, 1e-3)
LQR = {"urdf_path": XACRO, "feedback": "lqr", "gain_thread": False, "input_policy": "exact"}   # sets of one stamp


def _messages(diag):
    out = []
    for arr in diag:
        for s in arr.status:
            out.append(s.message)
            out.extend(f"{kv.key}={kv.value}" for kv in s.values)
    return out


def _said(diag, words) -> bool:
    return any(words in t or _reason(words) in t for t in _messages(diag))


def _rigid_linearization(flat, ref):
    """``gd.linearize`` about the flat nominal, body representation (as geodyn_node publishes it)."""
    C = flat.base_pose
    Vb = Ad_inv(C) @ flat.base_twist[0]
    Wb = np.r_[flat.body_torque[0], 0.0, 0.0, flat.thrust[0]]
    return gd.linearize(MODEL, C, Vb[None], ref.q[:2], Wb[None], flat.tau[:1], representation="body")


def _packer(representation="body", model=MODEL, base="base_link"):
    """Typed ``Linearization`` messages of ``model``'s labels in ``representation``."""
    return TypedLinearizationPacker(gd.state_labels(model), gd.input_labels(model), representation,
                                    child_frame_id=base)


def _inputs(h, stamp, t=0.8, *, linearization=True, lin_stamp=None, multiarray=False):
    """Publish one consistent input set (a state perturbed from the reference) and its
    linearization (typed; ``multiarray``: the deprecated blocks); return what the library needs."""
    lins = []

    def linearization_first(pubs, ref, flat):
        lins.append(_rigid_linearization(flat, ref))
        if linearization:
            pack = LinearizationPacker(24, 12).pack if multiarray else _packer().pack
            pubs["geodyn_node/linearization"].publish(
                pack(stamp if lin_stamp is None else lin_stamp, lins[0].A, lins[0].B))
    ref, flat, C, Vb, q, qd, th, thd = flat_controller_inputs(
        h, MODEL, NAMES, stamp, t, multiarray=multiarray,
        extra_topics=(("geodyn_node/linearization", Float64MultiArray if multiarray else Linearization),),
        before_state=linearization_first)
    return ref, flat, lins[0], C, Vb, q, qd, th, thd


def _labels(h, representation="body", model=MODEL):
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = h.probe.create_publisher(String, "geodyn_node/linearization/labels", qos)
    pub.publish(String(data=linearization_labels_json(representation, gd.state_labels(model),
                                                      gd.input_labels(model))))
    return pub


def _omega(msg):
    return np.asarray(msg.velocity)


@pytest.mark.parametrize("gain_thread, types", [(False, "typed"), (True, "typed"), (False, "multiarray")])
def test_lqr_node_commands_what_the_library_commands(h, gain_thread, types):
    multiarray = types == "multiarray"
    node = h.make(FlatControllerNode, {**LQR, "gain_thread": gain_thread, "message_types": types})
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds")
    motors = h.record(JointState, "cmd/motor_efforts")
    if multiarray:   # the deprecated blocks carry no labels: the /labels topic
        _labels(h)
        assert h.spin_until(lambda: node._lin_labels_ok is True, 10.0)
    stamp = 1_500_000_000
    ref, flat, lin, C, Vb, q, qd, th, thd = _inputs(h, stamp, multiarray=multiarray)
    assert h.spin_until(lambda: len(rotors) and len(motors), 5.0)
    # the library: the DARE gain of the discretized composition of this linearization
    x = np.sqrt(ALLOC.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0]))
    w = LqrWeights()
    _, K = dare_gain(*LIN.discretize(*LIN.compose(lin.A, lin.B), x), w.Q(6, 6, 6), w.R(6, 6, 0))
    want = LqrController(LIN, lambda t: K).command(1.5, C, Vb, q, qd, th, thd, ref.q, flat)
    got = _omega(rotors[-1])
    assert np.abs(got - want.omega).max() < 1e-9 * np.abs(want.omega).max()
    assert np.abs(np.array(motors[-1].effort) - want.u).max() < 1e-9
    # the feedback is not zero here (the state is perturbed): the gain matters
    assert np.abs(want.omega - want.omega_raw).max() == 0 and np.abs(want.omega - x).max() > 1.0
    assert node.online.stats["updates"] == 1 and node.online.gain_stamp() == pytest.approx(1.5)


def test_lqr_node_answers_a_republished_state_with_the_same_command(h):
    node = h.make(FlatControllerNode, LQR)
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds")
    motors = h.record(JointState, "cmd/motor_efforts")
    stamp = 1_500_000_000
    ref, flat, lin, C, Vb, q, qd, th, thd = _inputs(h, stamp)
    assert h.spin_until(lambda: len(rotors) and len(motors), 5.0)
    # the simulator republishes the state it waits on: odom and joint_states again, same stamp
    h.publisher(Odometry, "odom").publish(odometry_msg(stamp, C, Vb[:3], Vb[3:]))
    h.publisher(JointState, "joint_states").publish(joint_states_msg(stamp, NAMES, q, qd))
    assert h.spin_until(lambda: len(rotors) == len(motors) == 3, 5.0)     # one answer per state message
    h.spin_for(0.2)
    x = np.sqrt(ALLOC.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0]))
    w = LqrWeights()
    _, K = dare_gain(*LIN.discretize(*LIN.compose(lin.A, lin.B), x), w.Q(6, 6, 6), w.R(6, 6, 0))
    lib = LqrController(LIN, lambda t: K)
    want = lib.command(1.5, C, Vb, q, qd, th, thd, ref.q, flat)
    assert len(rotors) == len(motors) == 3
    for r, m in zip(rotors, motors):    # each is the library's one command (1e-9: as the first test)
        assert np.abs(_omega(r) - want.omega).max() < 1e-9 * np.abs(want.omega).max()
        assert np.abs(np.array(m.effort) - want.u).max() < 1e-9
        assert m.header.stamp.sec == 1 and m.header.stamp.nanosec == 500_000_000
    # the rotor-speed estimate ran one step, as the library's after its one command
    assert np.abs(node.ctrl._x - lib._x).max() < 1e-9 * np.abs(lib._x).max()


def test_lqr_node_bad_parameters_and_live_tuning(h, tmp_path):
    bad_yaml = tmp_path / "w.yaml"
    bad_yaml.write_text("lqr:\n  state:\n    base_position_m: -1\n")
    for params, pattern in (({"feedback": "pid"}, r"parameter 'feedback': must be one of \('geometric', 'lqr'\)"),
                            ({"level": "ff1"}, r"parameter 'level': feedback 'lqr' uses the ff2 feedforward"),
                            ({"order": 1, "level": "ff2"}, r"parameter 'order': level 'ff2' needs"),
                            ({"gain_rate_hz": 0.0}, r"parameter 'gain_rate_hz': must be a finite number > 0"),
                            ({"control_period": float("nan")}, r"parameter 'control_period': must be a finite"),
                            ({"gain_timeout": -1.0}, r"parameter 'gain_timeout': must be a finite number > 0"),
                            ({"riccati_steps": 0}, r"parameter 'riccati_steps': must be >= 1"),
                            ({"linearization_topic": ""}, r"parameter 'linearization_topic': must not be empty"),
                            ({"lqr_weights": "/no/such.yaml"}, r"^parameter 'lqr_weights': /no/such\.yaml: cannot be "
                             r"read \(No such file or directory\); give the path of an existing LQR weights file$"),
                            ({"lqr_weights": str(bad_yaml)}, rf"^parameter 'lqr_weights': {bad_yaml}: "
                             r"lqr\.state\.base_position_m: expected finite positive values, got -1; give a positive "
                             r"deviation")):
        with pytest.raises(ConfigurationError, match=pattern):
            h.make(FlatControllerNode, {**LQR, **params})
    node = h.make(FlatControllerNode, LQR)
    for prm in (Parameter("kp_position", value=10.0), Parameter("level", value="ff1")):
        res = node.set_parameters([prm])[0]
        assert not res.successful and "not used with feedback 'lqr'" in res.reason


def test_lqr_node_refuses_bad_linearizations(h):
    node = h.make(FlatControllerNode, LQR)
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=1000)
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    pl = h.publisher(Linearization, "geodyn_node/linearization")
    h.wait_matched("geodyn_node/linearization")
    small = TypedLinearizationPacker([f"z{i}" for i in range(10)], [f"w{i}" for i in range(4)], "body")
    pl.publish(small.pack(0, np.eye(10), np.zeros((10, 4))))
    assert h.spin_until(lambda: _said(diag, "linearization: A 10 x 10, B 10 x 4; the model 'aerial_manipulator' "
                                            "(6 joints, rotor joints locked) needs 24 x 24 and 24 x 12"), 3.0)
    A = np.eye(24)
    A[3, 4] = np.nan
    pl.publish(_packer().pack(0, A, np.zeros((24, 12))))
    assert h.spin_until(lambda: _said(diag, "linearization: NaN or Inf"), 3.0)
    # an input set without a linearization of its stamp: no command (gain_thread false)
    _inputs(h, 2_000_000_000, linearization=False)
    h.spin_for(0.3)
    assert not rotors
    # a spatial linearization, or one of another base link: refused, with the reason
    lin = _rigid_linearization(*(lambda r: (gd.flat_inverse_dynamics(MODEL, r.com, r.yaw, r.q, 2), r))(
        figure_eight_reference(0.8, 2)))
    pl.publish(_packer("spatial").pack(3_000_000_000, lin.A, lin.B))
    assert h.spin_until(lambda: _said(diag, "linearization: representation 'spatial', this node needs 'body' "
                                            "(linearization_representation)"), 3.0)
    pl.publish(_packer(base="robot2/base_link").pack(3_000_000_000, lin.A, lin.B))
    assert h.spin_until(lambda: _said(diag, "linearization: child_frame_id 'robot2/base_link' is not the base link "
                                            "'base_link'"), 3.0)
    _inputs(h, 3_000_000_000, linearization=False)
    h.spin_for(0.3)
    assert not rotors
    # a seeded fuzz of hostile linearizations, then a valid set is answered
    rng = np.random.default_rng(24)
    for i in range(300):
        m = _packer().pack(4_000_000_000 + i, lin.A, lin.B)
        name = ("a", "b")[int(rng.integers(0, 2))]
        data = np.array(getattr(m, name))
        data[int(rng.integers(0, len(data)))] = rng.choice([np.nan, np.inf, -np.inf])
        setattr(m, name, data.tolist())
        if i % 5 == 0:
            setattr(m, ("nx", "nu")[int(rng.integers(0, 2))], int(rng.integers(0, 700)))
        pl.publish(m)
        if i % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    h.spin_for(0.3)
    assert not rotors
    _inputs(h, 5_000_000_000)
    assert h.spin_until(lambda: len(rotors) == 1, 5.0)
    assert all(np.isfinite(_omega(m)).all() for m in rotors)


def test_lqr_node_refuses_labels_of_another_robot_and_stale_gains(h):
    node = h.make(FlatControllerNode, {**LQR, "gain_thread": True, "sync_stamps": False, "stale_timeout": 5.0})
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=100)
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    # a linearization of the right size whose state labels are another robot's (a joint renamed)
    pl = h.publisher(Linearization, "geodyn_node/linearization")
    h.wait_matched("geodyn_node/linearization")
    state = [s.replace("J7", "J7b") for s in gd.state_labels(MODEL)]
    lin = _rigid_linearization(*(lambda r: (gd.flat_inverse_dynamics(MODEL, r.com, r.yaw, r.q, 2), r))(
        figure_eight_reference(0.8, 2)))
    pl.publish(TypedLinearizationPacker(state, gd.input_labels(MODEL), "body").pack(500_000_000, lin.A, lin.B))
    assert h.spin_until(lambda: _said(diag, "linearization: not used: the labels' state"), 3.0)
    assert "geodyn_node must load the same robot with the rotor joints locked" in " ".join(_messages(diag))
    assert node.online.gain() is None
    _inputs(h, 1_000_000_000)
    assert h.spin_until(lambda: len(rotors) == 1, 5.0)
    # 1 s later, no new linearization: the gain is 1 s old > gain_timeout 0.5 s
    _inputs(h, 2_000_000_000, linearization=False)
    assert h.spin_until(lambda: _said(diag, "no command: the LQR gain is from a linearization 1.000 s old "
                                            "(gain_timeout 0.5 s)"), 3.0)
    assert len(rotors) == 1
    # a linearization arrives: commands resume, from the background thread's new gain
    _inputs(h, 2_001_000_000, lin_stamp=2_001_000_000)
    assert h.spin_until(lambda: len(rotors) == 2, 5.0)


# ------------------------------------------------------------------------------- the loop
def test_replayed_gain_record_of_the_emulated_schedule_is_that_schedule():
    """``simulate_case``'s ``gain_record`` (how a gain thread's run is replayed) against the
    emulated schedule it must reproduce when handed that schedule: a DARE at t = 0, then 20
    Riccati steps on the model of every 10 ms, each step using the newest."""
    emulated = simulate_case("lqr_online", "nominal", 0.2, preroll=0.0)
    chain = [0.01 * k for k in range(21)]
    used = {k * 1_000_000: k // 10 + 1 for k in range(201)}
    replay = simulate_case("lqr_online", "nominal", 0.2, preroll=0.0, gain_record=(chain, used))
    # the chain's stamps are 0.01 k, the emulation's the loop's own floats (equal to the last bit or
    # one ulp apart); the DARE amplifies that ~1e4-fold: the ROS loop's bound
    assert np.abs(replay.log.p - emulated.log.p).max() < 1e-9
    assert np.abs(replay.log.q - emulated.log.q).max() < 1e-8
    # a shifted schedule is a different loop (the record matters)
    late = {k: min(n + 1, len(chain)) for k, n in used.items()}
    other = simulate_case("lqr_online", "nominal", 0.2, preroll=0.0, gain_record=(chain, late))
    assert np.abs(other.log.p - emulated.log.p).max() > 1e-9
    with pytest.raises(ValueError, match="gain_record: only for controller 'lqr_online'"):
        simulate_case("lqr", "nominal", 0.2, preroll=0.0, gain_record=(chain, used))
    with pytest.raises(ValueError, match="gain_record: no gain recorded for the step at t = 0.100000 s"):
        simulate_case("lqr_online", "nominal", 0.2, preroll=0.0,
                      gain_record=(chain, {k: n for k, n in used.items() if k != 100_000_000}))


def test_ros_lqr_loop_reproduces_the_in_process_loop():
    info = {}
    ros = run_ros_underactuated_loop("lqr", 2.0, wall_timeout=300, info=info)
    twin = simulate_case("lqr_online", "nominal", 2.0, preroll=0.0)
    assert len(ros.log.t) == len(twin.log.t) == 2001
    assert np.abs(ros.log.p - twin.log.p).max() < 1e-9        # the CoM (measured 2.5e-11 m over 1 s)
    assert np.degrees(np.abs(ros.log.R - twin.log.R).max()) < 1e-6
    assert np.abs(ros.log.q - twin.log.q).max() < 1e-8
    assert not loop_problems(info["diagnostics"])
    assert info["lqr_stats"]["updates"] == 201               # every 10 ms of stamps, t = 0 .. 2 s


def test_ros_lqr_loop_with_the_gain_thread_tracks():
    info = {}
    ros = run_ros_underactuated_loop("lqr_thread", 2.0, wall_timeout=300, info=info)
    chain, used = info["lqr_gain_chain"], info["lqr_gains_used"]
    # the gains the thread computed and each step used (wall clock), replayed in-process: the same
    # trajectory to the bounds of the deterministic row above (the first gain is a DARE solution)
    replay = simulate_case("lqr_online", "nominal", 2.0, preroll=0.0, gain_record=(chain, used))
    assert len(ros.log.t) == len(replay.log.t) == 2001
    assert np.abs(ros.log.p - replay.log.p).max() < 1e-9
    assert np.degrees(np.abs(ros.log.R - replay.log.R).max()) < 1e-6
    assert np.abs(ros.log.q - replay.log.q).max() < 1e-8
    assert all(k * 1_000_000 in used for k in range(2000)) and max(used.values()) <= len(chain)
    # and it tracks as well as the gains of the schedule in stamps (the lag of the thread is small)
    twin = simulate_case("lqr_online", "nominal", 2.0, preroll=0.0)
    m, mt = ros.metrics(), twin.metrics()
    assert m["com_rms_m"] < 1.5 * mt["com_rms_m"] and m["attitude_rms_deg"] < 1.5 * mt["attitude_rms_deg"]
    assert not loop_problems(info["diagnostics"])
    assert ros.rotor_saturations == ros.motor_saturations == 0


def test_lqr_node_multiarray_refuses_the_labels_of_another_robot(h):
    """``message_types: multiarray`` (deprecated, one warning): the labels come on
    ``<linearization_topic>/labels``; another robot's refuse every linearization, this model's
    accept them."""
    from ros_harness import rosout, said_deprecated
    logs = rosout(h, "geodyn_flat_controller")
    node = h.make(FlatControllerNode, {**LQR, "message_types": "multiarray"})
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=100)
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    assert said_deprecated(h, logs)
    other = gd.load_urdf(XACRO)      # rotor joints not locked: 12 joints
    pub = _labels(h, "body", other)
    assert h.spin_until(lambda: _said(diag, "linearization: not used: the labels' state"), 3.0)
    pub.publish(String(data=linearization_labels_json("body", gd.state_labels(MODEL), gd.input_labels(MODEL))))
    assert h.spin_until(lambda: node._lin_labels_ok is True, 3.0)
    _inputs(h, 1_000_000_000, multiarray=True)
    assert h.spin_until(lambda: len(rotors) == 1, 30.0)
