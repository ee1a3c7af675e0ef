"""Byte attacks on the typed inputs of the controllers, through the running nodes (issue 43).

Every typed jet a controller subscribes is attacked with the bytes of :mod:`typed_attacks`
(``test/typed_attacks.py``): a cut at every length of the good message's serialization (with and
without the declared padding), a huge count in every 4-aligned word, every encapsulation kind
(big endian, XCDR2: every later field misaligned, unknown kinds), random bytes and random
changes of the good bytes:

* ``geodyn_controller``, ``geodyn_actuated_controller``: ``reference`` (``ReferenceJet``); the
  actuated one also ``feedforward/jet`` (``FeedforwardJet``, body);
* ``geodyn_flat_controller``: ``flat_reference`` (``FlatReference``), ``desired/state``
  (``DesiredState``), ``feedforward/flat_jet`` (``FeedforwardJet``) and, with ``feedback: lqr``,
  ``geodyn_node/linearization`` (``Linearization``).

After each attack a state follows (``input_policy: latest``: one command per odometry): whatever
rclpy decoded from the bytes (rclpy's ``deserialize_message`` is the oracle of what the node may
have seen), a command that goes out is finite. Every tenth attack, and after the last, the good
input is sent again and the command of the second state after it (5 ms later) is the library's
law on the good inputs (``test_ros_input_policy.Rig.law``, 1e-9 relative: the inputs cross
messages as float64, the quaternion round trip costs ~1e-15). The second: bytes that decode to a
reference the law cannot fly (a yaw singularity, say) put the failsafe in hold, and the first
cycle with good inputs restores tracking through a blend from the held reference; its duration is
``max(failsafe_ramp, 2.93 gap / failsafe_descent_rate)``, so the rigs run with ``failsafe_ramp``
0.1 ms and ``failsafe_descent_rate`` 1e9 m/s (over within 3 ms for any gap up to 1e6 m). No callback raises (the node's diagnostics record no
unexpected exception). The linearization (about 7 kB) is cut at every length below 1,200 bytes
(its header, frames, representation, sizes and labels) and at a spread of lengths after; no state
is sent during its attacks (with ``gain_thread: false`` a cycle needs the linearization of its own
stamp), and the good input set after them gets the command of the DARE gain of the good
linearization (``test_ros_lqr``'s oracle).
"""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: it sets the ROS isolation env; fixture h: conftest)

from rclpy.serialization import serialize_message
from sibling import test_module
from typed_attacks import rclpy_view, typed_attacks

from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.lie import Ad_inv
from geodyn_ros.loops.underactuated import rigid_effort_limits
from geodyn_ros.ros.wire.typed import TypedFeedforwardPacker

policy = test_module("test_ros_input_policy")
Rig, MS, NAMES, TILT, _close, _wait_held = (policy.Rig, policy.MS, policy.NAMES, policy.TILT, policy._close,
                                            policy._wait_held)

#: the failsafe's restore blend over within a few ms (module docstring)
SHORT_RESTORE = {"failsafe_ramp": 1e-4, "failsafe_descent_rate": 1e9}
TARGETS = [("geodyn_controller", "reference"), ("geodyn_actuated_controller", "reference"),
           ("geodyn_actuated_controller", "feedforward/jet"), ("geodyn_flat_controller", "flat_reference"),
           ("geodyn_flat_controller", "desired/state"), ("geodyn_flat_controller", "feedforward/flat_jet")]


class FeedforwardRig(Rig):
    """The actuated controller with ``use_feedforward`` (level ff2): :class:`Rig` plus a seeded body
    feedforward jet ``W_b^(0..2)``, ``tau^(0..2)`` on ``feedforward/jet`` and the law with it."""

    def __init__(self, h):
        rng = np.random.default_rng(5)
        self.Wb = rng.normal(size=(3, 6)) + np.array([0, 0, 0, 0, 0, 40.0])   # about the hover thrust [N]
        self.tau = rng.normal(size=(3, 6))
        super().__init__(h, "geodyn_actuated_controller", {"use_feedforward": True, **SHORT_RESTORE})

    def jets(self, stamp):
        out = super().jets(stamp)
        out["feedforward/jet"] = TypedFeedforwardPacker(NAMES, 2, representation="body").pack(stamp, self.Wb, self.tau)
        return out

    def _references(self, t0=None):
        super()._references(t0)
        t0 = self.t0 if t0 is None else t0
        assert self.h.spin_until(lambda: self.node._stamps["jet"] == t0)

    def law(self, C, Vb, q, qd, th, thd):
        cfg = load_actuation_config()
        al = Allocation.from_frames(rotor_frames_from_model(self.model)[1], cfg.rotors)
        ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, self.model.joint_names, TrackingGains(), 2,
                                  effort_limits=rigid_effort_limits(cfg, self.model, TILT), model=self.model)
        ref = self.ref
        cmd = ctrl.command(C, Vb, q, qd, th, thd, ref.base_pose, Ad_inv(ref.base_pose) @ ref.base_twist[0],
                           ref.q, self.Wb, self.tau)
        return cmd.omega, cmd.u


def _commands_finite(rig) -> bool:
    def numbers(m):
        if hasattr(m, "wrench"):
            w = m.wrench
            return [w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z]
        if hasattr(m, "effort"):
            return list(m.effort)
        return list(m.velocity)
    msgs = list(rig.cmds) + list(rig.rotors or []) + list(getattr(rig, "efforts", None) or [])
    return all(np.isfinite(numbers(m)).all() for m in msgs)


def _cycle(rig, k: int, t: int):
    """Send the seeded state ``k`` stamped ``t`` (joints and motors first, held); return it."""
    C, Vb, q, qd, th, thd = rig.state(k % 7)
    if rig.elastic:
        rig.send("motor_states", t, th, thd)
        _wait_held(rig, "motor_states", t)
    rig.send("joint_states", t, q, qd)
    _wait_held(rig, "joint_states", t)
    rig.send("odom", t, C, Vb)
    return C, Vb, q, qd, th, thd


@pytest.mark.parametrize("kind, topic", TARGETS)
def test_typed_input_under_byte_attack(h, kind, topic):
    rig = FeedforwardRig(h) if topic == "feedforward/jet" else Rig(h, kind, SHORT_RESTORE)
    node, h_ = rig.node, h
    good = rig.jets(rig.t0)[topic]
    msg_type = type(good)
    raw = serialize_message(good)
    t = rig.t0 + MS
    attacks = typed_attacks(raw, seed=len(topic) + len(kind))
    decoded = 0
    for i, (name, bad) in enumerate(attacks):
        decoded += rclpy_view(bad, msg_type) is not None
        rig.pubs[topic].publish(bad)
        t += MS
        _cycle(rig, i, t)
        # the odometry taken: its cycle ran (a command, or none for a refused or stale input)
        assert h_.spin_until(lambda: node._stamps["odom"] == t, 10.0), f"{name}: the odometry {t} was not taken"
        if i % 10 == 9 or i == len(attacks) - 1:
            assert _commands_finite(rig), f"{name}: a non-finite command"
            t += MS
            rig._references(t)                       # the good inputs again
            t += MS
            _cycle(rig, i, t)                        # (restores tracking if an attack caused a hold)
            assert h_.spin_until(lambda: node._stamps["odom"] == t, 10.0)
            t += 5 * MS
            C, Vb, q, qd, th, thd = _cycle(rig, i + 1, t)
            assert h_.spin_until(lambda: rig.got(t) is not None and all(g is not None for g in rig.got(t)), 30.0), \
                f"after {name}: no command for the good inputs ({node.diag.last_problem})"
            want = rig.law(C, Vb, q, qd, th if rig.elastic else None, thd if rig.elastic else None)
            for g, w in zip(rig.got(t), want):
                assert _close(g, w), f"after {name}: the command is not the library's on the good inputs"
    assert _commands_finite(rig)
    assert not node.diag._logged_causes, f"a callback raised: {sorted(node.diag._logged_causes)[:3]}"
    assert node.diag.counters["cycles_skipped"] > 0
    assert 0 < decoded < len(attacks)          # rclpy took some of the bytes and refused others


def test_linearization_under_byte_attack(h):
    lqr = test_module("test_ros_lqr")
    from geodyn_msgs.msg import Linearization

    import geodyn_ros as gd
    from geodyn_ros.control.lqr import LqrController, LqrWeights, dare_gain
    from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
    from geodyn_ros.trajectories import figure_eight_reference
    node = h.make(FlatControllerNode, lqr.LQR)
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=1000)
    pl = h.publisher(Linearization, "geodyn_node/linearization")
    h.wait_matched("geodyn_node/linearization")
    r = figure_eight_reference(0.8, 2)
    lin = lqr._rigid_linearization(gd.flat_inverse_dynamics(lqr.MODEL, r.com, r.yaw, r.q, 2), r)
    raw = serialize_message(lqr._packer().pack(1_000_000_000, lin.A, lin.B))
    attacks = typed_attacks(raw, seed=43, every=1200, flips=60)
    taken = 0
    for name, bad in attacks:
        seen = rclpy_view(bad, Linearization)
        skipped, held = node.diag.counters["cycles_skipped"], node._lin
        pl.publish(bad)
        if seen is None:                  # rclpy refuses the bytes: no callback
            h.ex.spin_once(timeout_sec=0.0)
            continue
        taken += 1                        # its callback: refused (a skipped cycle) or held as the newest
        assert h.spin_until(lambda: node.diag.counters["cycles_skipped"] > skipped or node._lin is not held, 10.0), \
            name
    h.spin_for(0.2)
    assert not rotors, "a command without a state"
    assert taken > 0 and not node.diag._logged_causes, sorted(node.diag._logged_causes)[:3]
    # the good input set: the command of the DARE gain of the good linearization
    stamp = 1_500_000_000
    ref, flat, lin, C, Vb, q, qd, th, thd = lqr._inputs(h, stamp)
    assert h.spin_until(lambda: len(rotors) == 1, 30.0), node.diag.last_problem
    x = np.sqrt(lqr.ALLOC.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0]))
    w = LqrWeights()
    _, K = dare_gain(*lqr.LIN.discretize(*lqr.LIN.compose(lin.A, lin.B), x), w.Q(6, 6, 6), w.R(6, 6, 0))
    want = LqrController(lqr.LIN, lambda t: K).command(1.5, C, Vb, q, qd, th, thd, ref.q, flat)
    got = lqr._omega(rotors[-1])
    assert np.abs(got - want.omega).max() < 1e-9 * np.abs(want.omega).max()     # test_ros_lqr's bound
