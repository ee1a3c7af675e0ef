"""The controllers' failsafe over ROS (issue 42 item 4, issue 41 item 3;
:mod:`geodyn_ros.ros.inputs.failsafe_inputs`).

* Odometry dropped for 0.6 s mid-stream, then restored, for each controller under ``input_policy:
  latest``: the controller keeps publishing (no gap between commands longer than the timeout plus
  a generous scheduling margin), says ``hold`` on ``/diagnostics`` and in one ``/rosout`` line, its
  commands stay finite and bounded, and on restore it says ``tracking`` (one line) and tracks again.
* Without odometry for longer than ``failsafe_hold`` it says ``descend``.
* A command that cannot be computed, on a real path (``geodyn_controller``: a finite feedforward
  wrench of 1e308 N, which its transformation to the measured base frame overflows when the state
  is 10 m from the desired pose): counted in ``commands_not_computed``, logged at most once per
  second, WARN on ``/diagnostics``; the controller commands the hold and resumes when the inputs
  are good again.
* Under ``input_policy: exact`` no failsafe command is published (today's behaviour).

The timeouts are generous (``odom_timeout`` 0.15 s here) and no assertion times the machine: the
gaps are bounded by the timeout plus 1 s of scheduling slack on a loaded machine (measured unloaded: about one
control period, 10 ms, see the report).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from ros_harness import flat_jet_inputs, joint_states_msg, odometry_msg  # noqa: I100  (ROS env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Log
from sensor_msgs.msg import JointState

import geodyn_ros as gd
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.common.runtime import control_qos
from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.trajectories import figure_eight_reference, table3_reference

REPO = Path(__file__).resolve().parents[3]
URDF = str(shipped_urdf())
TILT = str(REPO / "urdf" / "tilthex_manipulator.urdf.xacro")
HEXA = str(hexarotor_source())
HEXA_CFG = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
KINDS = ("geodyn_controller", "geodyn_actuated_controller", "geodyn_flat_controller")
TIMEOUT = 0.15
SLACK = 1.0   # scheduling slack of a loaded machine (the test process itself may stall)


class Rig:
    """A controller fed at about 100 Hz with odometry and joint (motor) samples stamped with the
    node clock, its references published once; records its commands with their receipt times and
    the failsafe's lines on /rosout."""

    def __init__(self, h, kind, params=None, use_ff=False):
        self.h, self.kind = h, kind
        p = {"stale_timeout": 60.0, "odom_timeout": TIMEOUT, "control_period": 0.01, **(params or {})}
        if kind == "geodyn_controller":
            self.node = h.make(ControllerNode, {"urdf_path": URDF, "use_feedforward": use_ff, **p})
            topic, mtype = "cmd/wrench", WrenchStamped
            self.elastic = False
        elif kind == "geodyn_actuated_controller":
            p.pop("control_period")   # the vehicle file's
            self.node = h.make(ActuatedControllerNode, {"urdf_path": TILT, "use_feedforward": False, **p})
            topic, mtype = "cmd/rotor_speeds", self.node.commands.rotors.msg_type
            self.elastic = True
        else:
            self.node = h.make(FlatControllerNode, {"urdf_path": HEXA, "actuation_config": HEXA_CFG, "level": "ff2",
                                                    **p})
            topic, mtype = "cmd/rotor_speeds", self.node.commands.rotors.msg_type
            self.elastic = True
        self.cmds = []
        h.probe.create_subscription(mtype, topic, lambda m: self.cmds.append((time.monotonic(), m)),
                                    control_qos(1000))
        self.diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
        self.log = []
        h.probe.create_subscription(Log, "/rosout", lambda m: self.log.append(
            (m.stamp.sec * 10**9 + m.stamp.nanosec, m.msg)) if m.name.endswith(kind) else None, control_qos(1000))
        topics = [("odom", Odometry), ("joint_states", JointState)] + ([("motor_states", JointState)]
                                                                         if self.elastic else [])
        topics += [(t, type(m)) for t, m in self._jets(0).items()]
        if use_ff:
            topics += [("feedforward/wrench", WrenchStamped), ("feedforward/joint_efforts", JointState)]
        self.pubs = {t: h.publisher(m, t) for t, m in topics}
        for t, pub in self.pubs.items():
            assert h.spin_until(lambda: pub.get_subscription_count() > 0, 10.0), f"{t}: no subscription matched"
        self._references()

    def now(self) -> int:
        return self.node.get_clock().now().nanoseconds

    def _jets(self, t0):
        """The typed reference inputs stamped ``t0`` (topic -> message); sets ``pose``, ``q``."""
        if self.kind != "geodyn_flat_controller":
            ref = table3_reference(4.2, 3)
            self.pose, self.q = ref.base_pose, ref.q[0]
            return {"reference": make_reference_jet(t0, ref.base_pose, ref.base_twist[:5], ref.q[:5], NAMES)}
        ref = figure_eight_reference(0.8, 2)
        f = gd.flat_inverse_dynamics(self.node.model, ref.com, ref.yaw, ref.q, 2)
        self.pose, self.q = f.base_pose, ref.q[0]
        return flat_jet_inputs(self.node.model, NAMES, t0, ref, f)

    def _references(self):
        t0 = self.now()
        for t, m in self._jets(t0).items():
            self.pubs[t].publish(m)
        key = "reference" if self.kind != "geodyn_flat_controller" else "feedforward/flat_jet"
        assert self.h.spin_until(lambda: self.node._stamps[key] == t0, 10.0)

    def feed(self, seconds: float, odom: bool = True, offset=(0.0, 0.0, 0.0)) -> None:
        """``seconds`` of samples at about 100 Hz (joints always; odometry if ``odom``), the state at
        the reference's pose (moved by ``offset`` [m]) with a small twist."""
        end = time.monotonic() + seconds
        C = self.pose.copy()
        C[:3, 3] += offset
        while time.monotonic() < end:
            t = self.now()
            self.pubs["joint_states"].publish(joint_states_msg(t, NAMES, self.q, np.zeros(6)))
            if self.elastic:
                self.pubs["motor_states"].publish(joint_states_msg(t, NAMES, self.q, np.zeros(6)))
            if odom:
                self.pubs["odom"].publish(odometry_msg(t, C, (0.0, 0.0, 0.01), (0.05, 0.0, 0.0)))
            self.h.spin_for(0.01)

    def values(self, m) -> np.ndarray:
        if self.kind == "geodyn_controller":
            w = m.wrench
            return np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])
        return np.array(m.velocity)

    def statuses(self, text: str):
        return [s for a in self.diag for s in a.status if text in s.message and s.name.endswith(self._diag_name())]

    def modes(self):
        """The failsafe_mode of each of the node's statuses on /diagnostics, in order."""
        return [kv.value for a in self.diag for s in a.status if s.name.endswith(self._diag_name())
                for kv in s.values if kv.key == "failsafe_mode"]

    def _diag_name(self):
        return self.node.diag.name

    def lines(self, text: str, start: int = 0, end: int = 2**63):
        """The node's /rosout lines containing ``text``, stamped (node clock) in [start, end]."""
        return [line for t, line in self.log if text in line and start <= t <= end]


def _bounded(rig, values) -> None:
    v = np.array(values)
    assert np.isfinite(v).all()
    if rig.kind == "geodyn_controller":   # the hover wrench is about 20 N here; PD on a held state
        assert np.abs(v).max() < 1e3, np.abs(v).max()
    else:                                  # rotor speeds within [0, max_rot_velocity]
        top = float(np.max(rig.node.cfg.rotors.max_rot_velocity))
        assert v.min() >= 0.0 and v.max() <= top + 1e-9


@pytest.mark.parametrize("kind", KINDS)
def test_odometry_dropped_then_restored(h, kind):
    rig = Rig(h, kind)
    rig.feed(0.6)
    assert rig.cmds, f"{kind}: no command before the drop: {rig.node.diag.last_problem}"
    assert rig.node._fs.mode == "tracking"
    t_drop, n_drop = time.monotonic(), rig.now()
    rig.feed(0.6, odom=False)
    t_back, n_back = time.monotonic(), rig.now()
    assert rig.node._fs.mode == "hold"
    rig.feed(1.9)                        # restored: the blend (1 s) and tracking again
    assert rig.node._fs.mode == "tracking"
    assert "hold" in rig.modes(), "no hold status on /diagnostics"
    # no gap in the commands longer than the timeout (plus scheduling slack) around the outage
    times = [t for t, _ in rig.cmds if t_drop - 0.2 <= t <= t_back + 0.5]
    gaps = np.diff([t_drop] + times + [t_back + 0.5])
    assert gaps.max() <= TIMEOUT + SLACK, f"{kind}: a gap of {gaps.max():.3f} s in the commands"
    held = [t for t in times if t_drop + TIMEOUT < t < t_back]
    assert len(held) >= 5, f"{kind}: only {len(held)} commands in the hold"
    _bounded(rig, [rig.values(m) for _, m in rig.cmds])
    modes = rig.modes()
    assert modes[-1] == "tracking" and "hold" in modes
    # one line per transition: the outage's hold and its restore (a stall of the test's own feeding
    # on a loaded machine may add a pair, each with its line)
    assert len(rig.lines("failsafe: hold", n_drop, n_back)) == 1, rig.log
    # after the restore: its line, plus one more per stall pair (a stall's hold has its own line)
    after = (n_back, n_back + 10**9)
    assert len(rig.lines("failsafe: tracking", *after)) == 1 + len(rig.lines("failsafe: hold", *after)), rig.log
    events = [m for _, m in rig.node._fs.events]
    assert events == ["hold", "tracking"] * (len(events) // 2)
    assert len(rig.lines("failsafe: hold")) == len(events) // 2 == rig.node.diag.counters["failsafe_losses"]
    assert len(rig.lines("failsafe: tracking")) == len(events) // 2
    assert rig.node.diag.counters["commands_not_computed"] == 0


def test_descends_after_failsafe_hold(h):
    rig = Rig(h, "geodyn_controller", {"failsafe_hold": 0.3})
    rig.feed(0.4)
    rig.feed(1.0, odom=False)
    assert rig.node._fs.mode == "descend"
    assert h.spin_until(lambda: "descend" in rig.modes() and rig.lines("failsafe: descend"), 5.0)
    assert [m for _, m in rig.node._fs.events] == ["hold", "descend"]
    assert len(rig.lines("failsafe: descend")) == 1
    # the held reference sinks: the commanded force pulls down relative to the hold
    _bounded(rig, [rig.values(m) for _, m in rig.cmds])
    rig.feed(0.5)
    assert rig.node._fs.mode == "tracking"


def test_command_not_computable_is_counted_logged_and_held(h):
    rig = Rig(h, "geodyn_controller")
    rig.feed(0.5)
    assert rig.cmds and rig.node._fs.mode == "tracking", rig.node.diag.last_problem
    n0 = len(rig.cmds)
    rig.feed(2.2, offset=(1e306, 0.0, 0.0))   # finite, accepted; kp_position x 1e306 m overflows
    c = rig.node.diag.counters
    assert c["commands_not_computed"] >= 20, c
    assert rig.node._fs.mode in ("hold", "descend")
    assert len(rig.cmds) - n0 >= 20, "the controller stopped commanding"
    _bounded(rig, [rig.values(m) for _, m in rig.cmds])     # the hold of the last good state
    rig.feed(0.3, offset=(1e306, 0.0, 0.0))
    bad = rig.statuses("command not computable")
    assert bad and all(s.level == b"\x01" for s in bad)
    assert any(kv.key == "commands_not_computed" and int(kv.value) > 0 for s in bad for kv in s.values)
    lines = rig.lines("command not computable")
    assert 1 <= len(lines) <= 4, lines          # at most once per second over 2.5 s
    assert "in all" in lines[0]
    assert len(rig.lines("failsafe: hold")) == rig.node.diag.counters["failsafe_losses"] >= 1
    rig.feed(1.5)
    assert rig.node._fs.mode == "tracking"


def test_a_loss_during_the_blend_holds_from_the_blended_reference(h):
    rig = Rig(h, "geodyn_controller")
    rig.feed(0.4)
    rig.feed(0.5, odom=False)
    rig.feed(0.3)                          # restored: blending (1 s) from the held to the live reference
    assert rig.node._fs.mode == "tracking" and rig.node._blend is not None
    Cd_live = rig.node._Cd.copy()
    held = rig.node._good[7][0][1][0]      # the pose the next hold starts from
    rig.feed(0.4, odom=False)              # lost again mid-blend
    assert [m for _, m in rig.node._fs.events] == ["hold", "tracking", "hold"]
    gap = np.linalg.norm(held[:3, 3] - Cd_live[:3, 3])
    assert gap > 1e-3, "the hold would start from the live reference (a jump)"
    _bounded(rig, [rig.values(m) for _, m in rig.cmds])


def test_exact_policy_has_no_failsafe(h):
    rig = Rig(h, "geodyn_controller", {"input_policy": "exact", "sync_stamps": False})
    rig.feed(0.3)
    assert rig.cmds and rig.node._fs is None
    rig.feed(0.6, odom=False)      # exact without sync_stamps: a command per joint state, as before
    h.spin_for(0.2)
    assert not rig.lines("failsafe") and not rig.statuses("failsafe") and not rig.modes()
    assert "failsafe_losses" not in rig.node.diag.counters


def test_an_input_that_never_arrives_is_said_once(h):
    """A vehicle whose joint_states never come (PX4 SITL's first flight here: no arm driver): the
    controller commands nothing, and once odometry has flowed 1 s it says which input it waits
    for, one WARN line, not one per cycle."""
    node = h.make(FlatControllerNode, {"urdf_path": HEXA, "actuation_config": HEXA_CFG, "level": "ff2"})
    diags = h.record(DiagnosticArray, "/diagnostics", 100)
    odom = h.publisher(Odometry, "odom")
    h.wait_matched("odom")
    C = np.eye(4)
    C[2, 3] = 1.0
    for k in range(13):                                # 1.2 s of odometry at 10 Hz, no joint_states
        odom.publish(odometry_msg(1_000_000_000 + k * 100_000_000, C, np.zeros(3), np.zeros(3)))
        h.spin_for(0.02)

    def said():
        return [s.message for m in diags for s in m.status if "none received" in s.message]
    assert h.spin_until(lambda: said(), 10.0)
    lines = said()
    assert lines[0].startswith("joint_states: none received in 1.") and "nothing is commanded" in lines[0]
    assert len(set(lines)) == 1 and node.diag.counters["cycles_published"] == 0
