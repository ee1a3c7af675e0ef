"""The actuated loop over ROS: geodyn_actuated_sim + reference + geodyn_node + actuated controller.

* The ROS loop (four real rclpy nodes, lock-step, one process) must reproduce the in-process loop
  of ``geodyn_ros.examples.actuated_loop.simulate_actuated(row, preroll=0)`` step for step: same
  MuJoCo model, same start, same commands; the only differences are the quaternion round trip in
  ``odom``, the reference message and ``geodyn_node``'s jet (rounding, ~1e-16; measured over 2 s
  of ff2: 6e-17 m, 4e-16 rad). Tolerance 1e-12 m and 1e-12 rad over 2 s (2000 steps of a stable
  loop), as for the ideal-actuator loop in test_ros_closed_loop.py.
* Tracking over 2 s of Table 3 from t = 0 (measured on both loops, identical): ff2 base RMS
  2.21e-7 m, joint RMS 2.85e-6 deg; ff0 base RMS 2.06e-5 m, joint RMS 0.153 deg. Bounds: ff2 base
  RMS < 1e-6 m and joint RMS < 1e-5 deg (4.5x and 3.5x margins on the 1 ms zero-order hold that
  limits it; a one-step delay or a wrong jet gives 1e-5 m and 0.1 deg and more); ff0 / ff2 at
  least 1000x on the joints (measured 54 000x) and 10x on the base (measured 93x).
* The simulator node alone: bad commands refused, reported, never applied; ``motor_states``
  against an ``ActuatedSim`` twin given the same commands; the default start is hover.
"""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import loop_problems  # noqa: I100  (imported first: it sets the ROS isolation env; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from actuator_msgs.msg import Actuators

from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.loops.tracking import table3_initial_state
from geodyn_ros.loops.actuated import simulate_actuated, tilthex_source
from geodyn_ros.ros.loops.actuated_closed_loop import actuated_start_parameters, compare_logs, run_ros_actuated_loop
from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode
from geodyn_ros.ros.common.diagnostics import _reason
from geodyn_ros.sim import ActuatedSim
from geodyn_ros.sim.actuated import rotor_filter_step

XACRO = str(tilthex_source())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
CFG = load_actuation_config()

@pytest.fixture(scope="module")
def ros_ff2():
    info = {}
    res = run_ros_actuated_loop("ff2", 2.0, wall_timeout=240, info=info)
    return res, info


def test_ros_actuated_loop_reproduces_the_in_process_loop(ros_ff2):
    ros, info = ros_ff2
    twin = simulate_actuated("ff2", 2.0, preroll=0.0)
    assert len(ros.log.t) == len(twin.log.t) == 2001
    assert np.abs(ros.log.t - twin.log.t).max() < 1e-12
    assert np.abs(ros.log.p - twin.log.p).max() < 1e-12
    assert np.abs(ros.log.R - twin.log.R).max() < 1e-12
    assert np.abs(ros.log.q - twin.log.q).max() < 1e-12
    d = compare_logs(ros.log, twin.log)
    assert d["samples"] == 2001 and d["max_position_diff_m"] < 1e-12
    # the motor states seen on the topic are the springs' state at every stamp: effort = K (theta - q)
    motors = info["motor_states"]
    assert len(motors) >= 2001
    K = CFG.elastic.stiffness
    for k in (0, 1000, 2000):
        theta, _, effort = motors[k * 1_000_000]
        assert np.abs(effort - K * (theta - ros.log.q[k])).max() < 1e-12
    # nothing was refused or reported as a problem along the run
    assert not loop_problems(info["diagnostics"])
    assert ros.rotor_saturations == ros.motor_saturations == 0


def test_ros_actuated_loop_ff2_tracks_and_beats_ff0(ros_ff2):
    ff2 = ros_ff2[0].log.rms()
    ff0 = run_ros_actuated_loop("ff0", 2.0, wall_timeout=240).log.rms()
    assert ff2["position_m"] < 1e-6 and ff2["joint_deg"] < 1e-5, ff2
    assert ff0["joint_deg"] >= 1000 * ff2["joint_deg"], (ff0, ff2)
    assert ff0["position_m"] >= 10 * ff2["position_m"], (ff0, ff2)


# ------------------------------------------------------------------------------- the node alone
def _rotor_msg(values, stamp_ns=0):
    m = Actuators()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 10**9)
    m.velocity = [float(v) for v in values]
    return m


def _motor_msg(stamp_ns, names, u):
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 10**9)
    m.name = list(names)
    m.effort = [float(v) for v in u]
    return m


def _wire(h, node):
    pr = h.publisher(Actuators, "cmd/rotor_speeds")
    pm = h.publisher(JointState, "cmd/motor_efforts")
    h.wait_matched("cmd/rotor_speeds")
    h.wait_matched("cmd/motor_efforts")
    return pr, pm


def test_bad_commands_are_refused_reported_and_never_applied(h):
    start = actuated_start_parameters()
    node = h.make(ActuatedSimNode, {"urdf_path": XACRO, "max_command": 5000.0, **start})
    diag = h.record(DiagnosticArray, "/diagnostics")
    pr, pm = _wire(h, node)
    assert h.spin_until(lambda: node.diag.pub.get_subscription_count() > 0)   # no report lost to discovery
    om0, u0 = node._rotor_cmd.copy(), node._motor_cmd.copy()
    good_om = np.full(6, 740.0)
    # key: what the report says (the reasons on /diagnostics have their numbers replaced by '#')
    bad_rotors = {
        "cmd/rotor_speeds: NaN or Inf": _rotor_msg([740.0, np.nan, 740.0, 740.0, 740.0, 740.0]),
        "cmd/rotor_speeds: 5 speeds, the simulator has 6 rotors": _rotor_msg([740.0] * 5),
        "cmd/rotor_speeds: negative speed": _rotor_msg([740.0, 740.0, -1.0, 740.0, 740.0, 740.0]),
        "cmd/rotor_speeds: |component|": _rotor_msg([740.0, 740.0, 740.0, 740.0, 740.0, 1e4]),
    }
    bad_motors = {
        "cmd/motor_efforts: model joints ['J7'] missing": _motor_msg(0, NAMES[:5] + ("J8",), np.zeros(6)),
        "cmd/motor_efforts: NaN or Inf": _motor_msg(0, NAMES, [0.0, 0.0, np.inf, 0.0, 0.0, 0.0]),
        "cmd/motor_efforts: 5 values for 6 joint names": _motor_msg(0, NAMES, np.zeros(5)),
        "cmd/motor_efforts: |component|": _motor_msg(0, NAMES, [0.0, 0.0, 0.0, 0.0, 0.0, -6000.0]),
    }
    # each bad rotor message arrives with a good motor message of the current stamp (and the other
    # way round): lock-step must not step on either, and the held commands must not change
    # (one at a time: the command subscriptions keep the last 2 messages)
    for k, m in enumerate(bad_rotors.values()):
        pr.publish(m)
        pm.publish(_motor_msg(0, NAMES, u0))
        assert h.spin_until(lambda: node.diag.counters["cycles_skipped"] == k + 1)
    for k, m in enumerate(bad_motors.values()):
        pm.publish(m)
        assert h.spin_until(lambda: node.diag.counters["cycles_skipped"] == len(bad_rotors) + k + 1)
    h.spin_for(0.2)
    assert node.steps == 0
    assert np.array_equal(node._rotor_cmd, om0) and np.array_equal(node._motor_cmd, u0)
    texts = set()

    def reported():
        for a in diag:
            for st in a.status:
                texts.add(st.message)
                texts.update(kv.key for kv in st.values)
        return all(any(w in t or _reason(w) in t for t in texts) for w in [*bad_rotors, *bad_motors])
    assert h.spin_until(reported, 3.0), "\n".join(sorted(texts))
    assert node.diag.counters["cycles_skipped"] == len(bad_rotors) + len(bad_motors)
    # the node is alive and a good pair steps it once, with exactly these commands
    x0 = node.sim.rotor_speed()
    u = np.linspace(-0.5, 0.5, 6)
    pm.publish(_motor_msg(0, NAMES, u))
    assert h.spin_until(lambda: np.array_equal(node._motor_cmd, u))
    assert node.steps == 0                      # still waiting for the rotor speeds
    pr.publish(_rotor_msg(good_om))
    assert h.spin_until(lambda: node.steps == 1)
    rp = CFG.rotors
    want = rotor_filter_step(x0, good_om, 1e-3, rp.time_constant_up, rp.time_constant_down, rp.max_rot_velocity)
    assert np.abs(node.sim.rotor_speed() - want).max() < 1e-9
    assert np.array_equal(node.sim._u, u)


def test_motor_states_carry_the_elastic_joints(h):
    """motor_states: name = the elastic joints, position/velocity = theta, theta' of an ActuatedSim
    twin given the same start and commands, effort = K (theta - q) = joint_states.effort."""
    start = actuated_start_parameters()
    node = h.make(ActuatedSimNode, {"urdf_path": XACRO, "timestep": 0.002, **start})
    ms = h.record(JointState, "motor_states")
    js = h.record(JointState, "joint_states")
    pr, pm = _wire(h, node)
    assert h.spin_until(lambda: any(m.header.stamp.nanosec == 0 for m in ms))   # watchdog republish
    m0 = next(m for m in ms if m.header.stamp.nanosec == 0)
    assert tuple(m0.name) == NAMES == CFG.elastic.joints
    assert np.array_equal(np.array(m0.position), start["initial_motor_positions"])
    assert np.array_equal(np.array(m0.velocity), start["initial_motor_velocities"])
    assert np.array_equal(node.sim.rotor_speed(), start["initial_rotor_speeds"])
    rng = np.random.default_rng(5)
    om, u = 700.0 + 100.0 * rng.random(6), rng.normal(size=6)
    pr.publish(_rotor_msg(om))
    pm.publish(_motor_msg(0, NAMES[::-1], u[::-1]))       # by name, in any order
    stamp = 2_000_000
    assert h.spin_until(lambda: any(m.header.stamp.nanosec == stamp for m in ms)
                        and any(m.header.stamp.nanosec == stamp for m in js))
    m = next(m for m in ms if m.header.stamp.nanosec == stamp)
    j = next(m for m in js if m.header.stamp.nanosec == stamp)

    twin = ActuatedSim(XACRO, CFG, timestep=0.002)
    C, V, q, qd = table3_initial_state()
    twin.reset(C, V, q, qd, rotor_speed=start["initial_rotor_speeds"],
               motor_angle=start["initial_motor_positions"], motor_velocity=start["initial_motor_velocities"])
    twin.set_rotor_command(om)
    twin.set_motor_torque(u)
    twin.step()
    theta, thetad = np.array(m.position), np.array(m.velocity)
    assert np.abs(theta - twin.motor_angle()).max() < 1e-13
    assert np.abs(thetad - twin.motor_velocity()).max() < 1e-10
    assert np.abs(np.array(j.position) - twin.q()).max() < 1e-13
    K = CFG.elastic.stiffness
    assert np.abs(np.array(m.effort) - K * (theta - np.array(j.position))).max() < 1e-12
    assert np.abs(np.array(j.effort) - np.array(m.effort)).max() < 1e-12
    # the commands moved the motors (the twin check is not comparing two unmoved states)
    assert np.abs(theta - start["initial_motor_positions"]).max() > 1e-6


def test_default_start_is_hover(h):
    """Without initial_rotor_speeds / initial_motor_*: the static feedforward of the initial state,
    held as the first command, keeps the robot still (0.2 s of steps, drift at rounding level)."""
    q0 = [0.3, -0.2, 0.5, 0.1, 0.2, -0.3]
    node = h.make(ActuatedSimNode, {"urdf_path": XACRO, "initial_joint_positions": q0})
    C0 = node.sim.base_pose().copy()
    assert 700.0 < node.sim.rotor_speed().min() and node.sim.rotor_speed().max() < 800.0   # hover ~743 rad/s
    assert np.abs(node.sim.spring_torque()).max() > 0.05          # the springs hold the arm
    for _ in range(200):
        node.step()
    assert np.abs(node.sim.base_pose() - C0).max() < 1e-12
    assert np.abs(node.sim.q() - q0).max() < 1e-12
    assert np.abs(node.sim.qd()).max() < 1e-10
