"""The simulator nodes' sensor streams (``sensing``, ``sensor_seed``) over ROS 2.

* The node's streams are the in-process ones: ``geodyn_sim`` with ``sensing: mocap``,
  ``sensor_seed: 1``, answered with zero commands, publishes exactly the samples a
  ``MujocoSim`` twin given the same start and commands gets from
  :class:`geodyn_ros.sim.sensors.SensorSuite` with the same seed (the first sample: the exact
  start state, stamped 0), each **at its simulated delivery time** (the step at or after
  measurement + latency) and stamped with its measurement time; bit for bit before the wire
  (same MuJoCo steps, same generator), to rounding on it (the quaternion and the body twist of
  ``odom``: 1e-12).
* Lock-step under sensor streams waits for the commands stamped with the odometry delivered at a
  step (what a controller under ``input_policy: latest`` answers) and steps on without one.
* Bad values of the new parameters are refused at start-up in one line naming the parameter.
* The closed loops (actuated on ``mocap``, under-actuated on ``onboard``) over ROS 2 with the step
  manifest and ``cycle: sim_steps`` reproduce the in-process loops on the same seeds to rounding.
"""
from __future__ import annotations

import numpy as np
import pytest
import ros_harness  # noqa: F401,I100  (imported first: it sets the ROS isolation env; fixture h: conftest)

from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from geodyn_ros.lie import Ad_inv, quat_to_matrix
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.loops.closed_loop import table3_start_parameters
from geodyn_ros.ros.nodes.sim_node import SimNode
from geodyn_ros.sim import MujocoSim
from geodyn_ros.sim.sensor_file import sensor_profile
from geodyn_ros.sim.sensors import SensorSuite

URDF = str(shipped_urdf())
STEPS = 120          # 0.12 s at 1 kHz: 28 odometry samples (240 Hz), 24 joint samples (200 Hz)


def _stamp(m) -> int:
    return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec


def _twin_samples(params, steps):
    """``[(delivery step [ns], stream, stamp [ns], sample), ...]`` of a MujocoSim twin with zero
    commands and the in-process SensorSuite of the same profile and seed."""
    sim = MujocoSim(URDF, timestep=0.001)
    C0, V0 = SimNode._initial_base(params)
    sim.reset(C0, V0, np.array(params["initial_joint_positions"]), np.array(params["initial_joint_velocities"]))
    suite = SensorSuite(sensor_profile("mocap"), seed=1, size=0.25, gravity=sim.gravity, start=0.0)
    n = sim.model.n_joints
    out = [(0, "odometry", 0, (sim.base_pose(), Ad_inv(sim.base_pose()) @ sim.base_twist())),
           (0, "joints", 0, (sim.q().copy(), sim.qd().copy()))]
    for k in range(steps + 1):
        t_ns = k * 1_000_000
        suite.sample(t_ns * 1e-9, sim)
        for name, s, d in suite.delivered(t_ns * 1e-9):
            if name == "odometry":
                out.append((t_ns, name, int(round(s * 1e9)), (d.C, Ad_inv(d.C) @ d.V)))
            elif name == "joints":
                out.append((t_ns, name, int(round(s * 1e9)), (d.q, d.qd)))
        sim.set_command(np.zeros(6), np.zeros(n))
        sim.step()
    return out


def test_sim_node_streams_are_the_in_process_streams(h):
    params = {"urdf_path": URDF, "sensing": "mocap", "sensor_seed": 1, "command_timeout": 5.0,
              **table3_start_parameters()}
    node = h.make(SimNode, params)
    assert node.suite is not None and node.steps == 0
    sent = {}          # (stream, stamp) -> (the node's step when it published it [ns], arrays)

    def tap(stream, fn):
        def wrapped(stamp, a, b):
            sent.setdefault((stream, stamp), (node.stamp_ns, np.array(a, float), np.array(b, float)))
            fn(stamp, a, b)
        return wrapped
    node._publish_odom = tap("odometry", node._publish_odom)
    node._publish_joints = tap("joints", node._publish_joints)
    odom = h.record(Odometry, "odom")
    js = h.record(JointState, "joint_states")
    pw, pe = h.publisher(WrenchStamped, "cmd/wrench"), h.publisher(JointState, "cmd/joint_efforts")
    h.wait_matched("cmd/wrench")
    h.wait_matched("cmd/joint_efforts")
    names = list(node.model.joint_names)
    answered = set()

    def answer(msg):   # the commands for each odometry sample, stamped with it (input_policy latest)
        s = _stamp(msg)
        if s in answered:
            return
        answered.add(s)
        assert s == node.command_stamp_ns and node.stamp_ns >= s   # lock-step waits on exactly this
        w = WrenchStamped()
        w.header.stamp = msg.header.stamp
        e = JointState(name=names, effort=[0.0] * len(names))
        e.header.stamp = msg.header.stamp
        pw.publish(w)
        pe.publish(e)
    h.probe.create_subscription(Odometry, "odom", answer, 100)
    node.publish_state()   # the start sample again, now that the probe listens (the same samples)
    assert h.spin_until(lambda: node.steps >= STEPS, 120.0), node.steps
    want = _twin_samples(params, STEPS)
    got = {k: v for k, v in sent.items() if v[0] <= STEPS * 1_000_000}
    assert [(w[1], w[2]) for w in want] == sorted(got, key=lambda k: (got[k][0], k[0] != "odometry", k[1])), \
        "not the same samples"
    assert sum(w[1] == "odometry" for w in want) >= 25 and sum(w[1] == "joints" for w in want) >= 20
    lat = {"odometry": 4_200_000, "joints": 5_000_000}
    for t_ns, stream, stamp, (a, b) in want:
        at, ga, gb = got[(stream, stamp)]
        assert at == t_ns                                            # published at its delivery step
        if stamp:
            assert t_ns - 1_000_000 < stamp + lat[stream] <= t_ns    # the first step at or after it
        assert np.array_equal(ga, a) and np.array_equal(gb, b), (stream, stamp)   # bit for bit
    # on the wire: the same numbers to rounding (quaternion, REP 105 twist)
    assert h.spin_until(lambda: len({_stamp(m) for m in odom}) >= sum(w[1] == "odometry" for w in want), 10.0)
    wire = {_stamp(m): m for m in odom}
    for t_ns, stream, stamp, (C, Vb) in want:
        if stream != "odometry":
            continue
        m = wire[stamp]
        p, o, v, w = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist.linear, m.twist.twist.angular
        assert np.abs(quat_to_matrix(np.array([o.x, o.y, o.z, o.w]), "xyzw") - C[:3, :3]).max() < 1e-12
        assert np.abs(np.array([p.x, p.y, p.z]) - C[:3, 3]).max() == 0.0
        assert np.abs(np.array([w.x, w.y, w.z, v.x, v.y, v.z]) - Vb).max() < 1e-12
    jw = {_stamp(m): m for m in js}
    for t_ns, stream, stamp, (q, qd) in want:
        if stream == "joints" and stamp in jw:
            assert np.array_equal(np.array(jw[stamp].position), q) and np.array_equal(np.array(jw[stamp].velocity), qd)


def test_perfect_is_the_default(h):
    node = h.make(SimNode, {"urdf_path": URDF, **table3_start_parameters()})
    assert node.profile is None and node.suite is None and node.command_stamp_ns == 0


@pytest.mark.parametrize("params, name", [
    ({"sensing": "mocapp"}, "sensing"),
    ({"sensing": "mocap", "sensor_seed": -1}, "sensor_seed"),
    ({"sensing": "mocap", "sensors_file": "/nonexistent/sensors.yaml"}, "sensors_file"),
    ({"sensing": "mocap", "vehicle_size": -0.1}, "vehicle_size"),
])
def test_bad_sensing_parameters_are_refused_in_one_line(h, params, name):
    with pytest.raises(ConfigurationError) as exc:
        h.make(SimNode, {"urdf_path": URDF, **params})
    text = str(exc.value)
    assert f"parameter '{name}'" in text and "\n" not in text, text


# ------------------------------------------------------------------------------- the closed loop
def _both(kind, profile, seed=1, duration=0.5):
    """The ROS loop (``cycle: sim_steps``) and the in-process loop of ``kind`` on ``profile``."""
    from geodyn_ros.loops.sensed import Sensing
    sensing = Sensing(sensor_profile(profile), seed=seed, log=None, rule="twist")   # the ROS controllers' rule
    info = {}
    if kind == "actuated":
        from geodyn_ros.loops.actuated import simulate_actuated
        from geodyn_ros.ros.loops.actuated_closed_loop import run_ros_actuated_loop
        ros = run_ros_actuated_loop("ff2", duration, wall_timeout=600, sensing=profile, sensor_seed=seed, info=info)
        ip = simulate_actuated("ff2", duration, preroll=0.0, sensing=sensing)
    else:
        from geodyn_ros.loops.underactuated import simulate_underactuated
        from geodyn_ros.ros.loops.underactuated_closed_loop import run_ros_underactuated_loop
        ros = run_ros_underactuated_loop("ff2", duration, wall_timeout=600, sensing=profile, sensor_seed=seed,
                                         info=info)
        ip = simulate_underactuated("ff2", duration, preroll=0.0, sensing=sensing)
    return ros, ip, info


@pytest.mark.parametrize("kind, profile", [("actuated", "mocap"), ("underactuated", "onboard")])
def test_ros_sensed_loop_reproduces_the_in_process_loop(kind, profile):
    """Over ROS 2 (the simulator's step manifest, the controller's ``cycle: sim_steps``) and in
    process, 0.5 s of ff2 on the same seeded streams: the same trajectory to rounding. Measured:
    largest differences 6e-17 m / 2e-14 deg / 3e-14 deg (actuated, mocap) and 7e-16 m / 7e-14 deg
    / 3e-13 deg (under-actuated, onboard): the quaternion round trip of ``odom`` (1e-16) carried
    through 500 closed-loop steps. Bounds 1e-9 m and 1e-7 deg, six orders above that and five below
    what any difference of rule gives: with a command per odometry sample at its stamp (``cycle:
    odom``) the trajectories were 0.376 mm, 0.147 deg and 0.113 deg apart; one sample delivered a
    step late moves them by ~1e-6 m. Every step is scored (501 samples), nothing was refused but
    the start samples sent again while the loop comes up."""
    from geodyn_ros.ros.loops.actuated_closed_loop import compare_logs
    from ros_harness import loop_problems

    ros, ip, info = _both(kind, profile)
    assert len(ros.log.t) == len(ip.log.t) == 501
    d = compare_logs(ros.log, ip.log)
    assert d["samples"] == 501
    assert d["max_position_diff_m"] < 1e-9 and d["max_attitude_diff_deg"] < 1e-7 and d["max_joint_diff_deg"] < 1e-7, d
    r, ri = ros.log.rms(), ip.log.rms()
    assert abs(r["position_m"] - ri["position_m"]) <= 1e-9, (r, ri)
    # the same clipping, but for the ROS controller's answer to the last state (t = duration), a
    # step the in-process loop does not command
    assert 0 <= ros.rotor_saturations - ip.rotor_saturations <= 1
    assert 0 <= ros.motor_saturations - ip.motor_saturations <= 1
    assert not [m for m in loop_problems(info["diagnostics"])
                if "is not newer than the newest accepted" not in m and not m.startswith("saturated")]


def test_closed_loop_cli_sensing_compare_prints_rounding_differences():
    """``python -m geodyn_ros.ros.loops.closed_loop --underactuated ... --sensing mocap --compare``
    as a user runs it: the comparison row's differences are at rounding level (< 1e-9 in every
    column, as the test above); an lqr row with --sensing is refused in one line, exit 2."""
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "geodyn_ros.ros.loops.closed_loop", "--underactuated", "--duration", "0.2",
           "--rows", "ff2", "--sensing", "mocap", "--seed", "1", "--compare"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "sensing mocap (seed 1)" in out.stdout
    row = [ln for ln in out.stdout.splitlines() if ln.startswith("ff2 ") and "e-" in ln][-1].split()
    assert row[1] == "201" and all(float(v) < 1e-9 for v in row[2:5]), row
    bad = subprocess.run(cmd[:5] + ["0.2", "--rows", "lqr", "--sensing", "mocap"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "--sensing: the lqr rows run on the exact state only" in bad.stderr
    assert len([ln for ln in bad.stderr.splitlines() if "error" in ln]) == 1, bad.stderr
