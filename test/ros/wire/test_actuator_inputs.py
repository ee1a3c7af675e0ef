"""The input handling both actuated controllers share (:mod:`geodyn_ros.ros.inputs.actuator_inputs`).

No ROS graph: the mixin runs on a small stand-in node whose parent ``_on_odom`` and command
publisher only record what they get. Each behaviour is checked against a statement of the rule
written independently of the mixin's code (a brute-force reading of the module docstring):
which state is commanded under ``sync_stamps`` / ``stale_timeout``, which odometry the start-up
window drops, and what reaches ``cmd/rotor_speeds`` / ``cmd/motor_efforts``. Both controller
nodes inherit it (their ROS tests: test_ros_actuated_controller.py, test_ros_flat.py).
"""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from builtin_interfaces.msg import Time

from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
from geodyn_ros.ros.inputs.actuator_inputs import ActuatorInputs
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.ros.common.params import ConfigurationError


class _Parent:
    """What the mixin calls ``super()._on_odom`` on: records the stamps passed through."""

    def _on_odom(self, msg):
        self.passed.append(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)


class _Diag:
    def __init__(self):
        self.counters, self.oks, self.statuses = {}, 0, []

    def ok(self):
        self.oks += 1

    def publish_status(self, level, text):
        self.statuses.append((level, text))


class _Node(ActuatorInputs, _Parent):
    def __init__(self, sync=True, stale_ns=0):
        self.passed, self.diag, self.sync, self.stale_ns = [], _Diag(), sync, stale_ns
        self._stamps, self._last_cmd_stamp = {}, None
        self.published = []
        self.commands = SimpleNamespace(publish=lambda *a: self.published.append(a))
        self.ctrl = SimpleNamespace(rotor_saturations=0, motor_saturations=0)
        self._rigid_idx = np.zeros(0, dtype=np.intp)


def _odom(ns: int):
    return SimpleNamespace(header=SimpleNamespace(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)))


def test_both_controllers_use_the_shared_input_handling():
    for cls in (ActuatedControllerNode, FlatControllerNode):
        for name in ("_on_odom", "_on_motor_states", "_due_state", "_publish_command", "_install_model",
                     "_start_diagnostics"):
            assert getattr(cls, name) is getattr(ActuatorInputs, name), (cls.__name__, name)


@pytest.mark.parametrize("sync", [True, False])
def test_due_state_is_the_rule_of_the_docstring(sync):
    """Every assignment of stamps in {None, 1, 2, 3} [ns] to three inputs (joint_states first),
    with and without a command already given for stamp 2, against the rule read literally:
    all present; sync: all equal; else no input more than stale_ns older than the state (a
    newer one is fresh); the state not yet commanded."""
    keys = ("joint_states", "odom", "reference")
    stale = 1
    for values in itertools.product((None, 1, 2, 3), repeat=3):
        for last in (None, 2):
            node = _Node(sync=sync, stale_ns=stale)
            node._stamps, node._last_cmd_stamp = dict(zip(keys, values)), last
            got = node._due_state(list(keys))
            present = all(v is not None for v in values)
            state = values[0]
            if not present or state == last:
                want = None
            elif sync:
                want = state if len(set(values)) == 1 else None
            else:
                want = state if min(values) >= state - stale else None
            assert got == want, (values, last, sync)
            # a commanded state is remembered, a refused one leaves the record alone
            assert node._last_cmd_stamp == (want if want is not None else last)


def test_odometry_start_up_window_drops_what_the_parameter_says():
    """Window 0.05 s, odometry every 10 ms from t = 2 s: the stamps 2.00..2.04 s (5 messages,
    closed form: those with t - t_first < 0.05 s) are dropped and counted, the rest pass in order."""
    node = _Node()
    node._init_odom_discard(0.05)
    stamps = [2_000_000_000 + 10_000_000 * i for i in range(12)]
    for s in stamps:
        node._on_odom(_odom(s))
    want = [s for s in stamps if s - stamps[0] >= 50_000_000]
    assert node.passed == want and len(want) == 7
    assert node.diag.counters["odom_discarded"] == 5
    zero = _Node()
    zero._init_odom_discard(0.0)         # 0: keep all
    for s in stamps:
        zero._on_odom(_odom(s))
    assert zero.passed == stamps and "odom_discarded" not in zero.diag.counters


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_a_bad_odometry_window_is_refused_naming_the_parameter(bad):
    with pytest.raises(ConfigurationError, match="odom_startup_discard"):
        _Node()._init_odom_discard(bad)


def test_published_command_carries_the_rigid_joint_torques_after_the_motors():
    node = _Node()
    node._rigid_idx = np.array([2, 0], dtype=np.intp)
    cmd = SimpleNamespace(omega=[1.0, 2.0], u=np.array([0.5]), joint_torque=np.array([7.0, 8.0, 9.0]),
                          rotor_saturations=0, motor_saturations=0)
    node._publish_command(42, cmd)
    (stamp, omega, u), = node.published
    assert stamp == 42 and list(omega) == [1.0, 2.0]
    assert list(u) == [0.5, 9.0, 7.0]               # u, then the joint torques of model joints 2 and 0
    assert node._last_cmd[0] == 42 and list(node._last_cmd[2]) == [0.5, 9.0, 7.0]
    assert node.diag.oks == 1 and not node.diag.statuses
    node.ctrl.rotor_saturations, node.ctrl.motor_saturations = 3, 1
    cmd.rotor_saturations, cmd.motor_saturations = 2, 1
    node._publish_command(43, cmd)
    assert node.diag.counters == {"rotor_saturations": 3, "motor_saturations": 1}
    (level, text), = node.diag.statuses
    from diagnostic_msgs.msg import DiagnosticStatus
    assert level == DiagnosticStatus.WARN
    assert "2 rotor speed(s), 1 motor torque(s) clipped" in text
