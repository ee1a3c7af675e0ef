"""Replanning never stops ``geodyn_reference``'s stream (issue 41), on the wall clock.

Before, missions were decoded and planned on the thread that publishes the reference: 100
replans a second gave no ``flat_reference`` for 10 s, a 10,001-point mission 5.5 s of silence, a
``time_from_start`` of 2^31-1 s a MemoryError after which that plan flew while the status still
showed the old one. Now (``geodyn_ros.ros.nodes.replanning``) a worker process plans; the node
keeps publishing. Checked here, with the node and the recorder in this process and the worker
in its own:

* a storm of missions: the stream keeps flowing (the largest gap is bounded: on a loaded machine
  scheduling alone costs tens of ms, so the bound is 0.5 s, against the 10 s of silence before;
  the figure at 1 kHz in a separate process is ``bench/ros/bench_replan_storm.py``'s), the
  missions beyond what the worker can plan are coalesced and counted on ``/diagnostics``, and
  the plan flying at the end is the newest mission's, continuous at its switch;
* bounds refused in one line each, the plan in use kept and still described by the status:
  bytes (truncated, random, over the size limit, another message type), more points than
  :data:`MAX_WAYPOINTS`, a mission longer than :data:`MAX_DURATION_S`, a CoM waypoint at 1e300 m;
  after each, a good mission is planned and flies;
* a worker that dies is restarted and the next mission flies.
"""
from __future__ import annotations

import math
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.ros.nodes.replanning import MAX_DURATION_S, MAX_MISSION_BYTES, MAX_WAYPOINTS

REPO = Path(__file__).resolve().parents[3]
MISSION = REPO / "config" / "mission_example.yaml"
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
RATE = 200.0   # Hz: a loaded test machine keeps this rate; the 1 kHz figure is the benchmark's


def _mission(points, dt, names=NAMES):
    from builtin_interfaces.msg import Duration
    from geometry_msgs.msg import Transform
    from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,
                                     MultiDOFJointTrajectoryPoint)
    m, j = MultiDOFJointTrajectory(), JointTrajectory()
    m.header.frame_id = "world"
    m.joint_names = ["base_link"]
    j.joint_names = list(names)
    for i, p in enumerate(points):
        t = (i + 1) * dt
        d = Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))
        tr = Transform()
        tr.translation.x, tr.translation.y, tr.translation.z = (float(v) for v in p)
        tr.rotation.w = 1.0
        m.points.append(MultiDOFJointTrajectoryPoint(transforms=[tr], time_from_start=d))
        j.points.append(JointTrajectoryPoint(positions=[0.0] * len(names), time_from_start=d))
    return m, j


@pytest.fixture
def wall(h):
    """geodyn_reference on the wall clock at RATE with the file mission (no vehicle: the worker's
    start-up is the fastest), recording flat_reference (receive times) and /diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geodyn_msgs.msg import FlatReference
    from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    node = h.make(ReferenceNode, {"trajectory": "waypoints", "mission": str(MISSION), "rate_hz": RATE,
                                  "diagnostics_period": 0.2})
    times = []
    h.probe.create_subscription(FlatReference, "flat_reference", lambda m: times.append(time.monotonic()), 100,
                                raw=True)
    diags = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    pm = h.publisher(MultiDOFJointTrajectory, "mission/com_yaw")
    pj = h.publisher(JointTrajectory, "mission/joints")
    h.wait_matched("mission/com_yaw")
    h.wait_matched("mission/joints")
    assert h.spin_until(lambda: len(times) > 10, 30.0)
    assert h.spin_until(lambda: node.replanner._ready, 60.0), "the planner process did not start"
    return node, times, diags, pm, pj


#: [MiB] what a 10,000-point mission may add to the node's resident memory: the message (~3 MB),
#: its decoded arrays and planned_path (2,000 poses); measured 14 MiB, against
#: the 640 MB the node grew before the planner left its process
NODE_GROWTH_MIB = 128
#: [MiB] the planner process's peak (VmHWM) for that mission: measured 395 MiB here (the interpreter,
#: numpy, scipy, numba and the 10,000-segment solve); its address space is capped at
#: WORKER_MEMORY_BYTES (3 GiB), so this bound is the tighter, stated one
WORKER_PEAK_MIB = 1536


def _kib(key, pid="self"):
    """``key`` (VmRSS, VmHWM) of a process from /proc [KiB]; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith(key + ":"))
    except (OSError, StopIteration):
        return 0


def _statuses(diags):
    return [s for a in diags for s in a.status if "mission" in s.name]


def _largest_gap(times, since):
    t = np.array([x for x in times if x >= since])
    return float(np.diff(t).max()) if len(t) > 1 else math.inf


def _fly_and_check(h, node, pm, pj, goal, diags):
    """A good mission after an attack: planned, switched in, and the goal is where it ends."""
    m, _ = _mission([goal], 0.5)
    n_plans = len(node.plans)
    pm.publish(m)      # stamp 0: a mission alone, now (the joints hold)
    assert h.spin_until(lambda: len(node.plans) > n_plans, 30.0), [s.message for s in _statuses(diags)]
    end = node.plans[-1][1]
    assert np.allclose(end(end.end_time, 0).com[0], goal, atol=1e-9)


def test_a_replan_storm_never_stops_the_stream(h, wall):
    node, times, diags, pm, pj = wall
    t0 = time.monotonic()
    rng = np.random.default_rng(3)
    goals = []
    for _ in range(100):                       # ~100 missions a second for ~1 s
        goal = [*rng.uniform(-0.3, 0.3, 2), 1.0]
        goals.append(goal)
        m, _ = _mission([goal], 0.5)
        pm.publish(m)      # stamp 0: a mission alone, now (the joints hold)
        h.spin_for(0.01)
    assert h.spin_until(lambda: node.replanner.pending == 0, 30.0)
    h.spin_for(0.5)
    span = time.monotonic() - t0
    got = [x for x in times if x >= t0]
    assert len(got) >= 0.5 * RATE * span, (len(got), span)          # before: none during the storm
    assert _largest_gap(times, t0) < 0.5, _largest_gap(times, t0)   # before: 10 s without a sample
    # the missions beyond what the worker plans were dropped for newer ones, and counted
    assert node.replanner.coalesced > 0
    assert h.spin_until(lambda: any(kv.key == "missions_coalesced" and int(kv.value) > 0
                                    for s in _statuses(diags) for kv in s.values), 5.0)
    # the newest mission flies last, and the status describes it
    last = node.plans[-1][1]
    assert np.allclose(last(last.end_time, 0).com[0], goals[-1], atol=1e-9)
    assert h.spin_until(lambda: _statuses(diags)[-1].message.startswith("mission flying: 2 waypoints"), 5.0)
    assert np.allclose(node._flying(node._flying.end_time, 0).com[0], goals[-1], atol=1e-9)


def test_a_huge_mission_is_planned_while_the_stream_flows(h, wall):
    """MAX_WAYPOINTS points (a slow spiral, 0.5 s apart): accepted by the worker while the node keeps
    publishing; one point more is refused in one line, the plan in use kept."""
    node, times, diags, pm, pj = wall
    th = np.linspace(0, 20 * math.pi, MAX_WAYPOINTS)
    m, _ = _mission(np.c_[0.5 * np.cos(th), 0.5 * np.sin(th), np.ones_like(th)], 0.5)
    rss0 = _kib("VmRSS")
    t0 = time.monotonic()
    n_plans = len(node.plans)
    pm.publish(m)      # stamp 0: a mission alone, now (the joints hold)
    worker_peak = 0
    def planned():
        nonlocal worker_peak
        worker_peak = max(worker_peak, _kib("VmHWM", node.replanner._proc.pid))
        return len(node.plans) > n_plans
    assert h.spin_until(planned, 120.0)
    assert _largest_gap(times, t0) < 0.5, _largest_gap(times, t0)   # before: 5.5 s of silence
    # memory: the node's process (this one) grows by the mission message, its decoded arrays and
    # planned_path's 2,000 poses, not by the plan (before: 269 -> 908 MB in the node); the planner's
    # own peak stays below its bound (WORKER_MEMORY_BYTES is the hard limit)
    grown = (_kib("VmRSS") - rss0) / 1024
    print(f"\nnode process grew {grown:.1f} MiB; planner peak {worker_peak / 1024:.0f} MiB")
    assert grown < NODE_GROWTH_MIB, grown
    assert worker_peak / 1024 < WORKER_PEAK_MIB, worker_peak
    assert len([x for x in times if x >= t0]) >= 0.5 * RATE * (time.monotonic() - t0)
    flying = node.plans[-1][1]
    m, _ = _mission(np.r_[np.c_[0.5 * np.cos(th), 0.5 * np.sin(th), np.ones_like(th)], [[0, 0, 1.0]]], 0.5)
    pm.publish(m)
    want = f"mission/com_yaw: {MAX_WAYPOINTS + 1} points, over the limit of {MAX_WAYPOINTS}"
    assert h.spin_until(lambda: any(want in s.message for s in _statuses(diags)), 60.0)
    assert node.plans[-1][1] is flying


def _attacks():
    from rclpy.serialization import serialize_message
    m, _ = _mission([[0.2, 0.1, 1.0]], 0.5)
    good = serialize_message(m)
    rng = np.random.default_rng(1)
    far, _ = _mission([[1e300, 0.0, 1.0]], 0.5)
    long_, _ = _mission([[0.1, 0.0, 1.0]], float(2 ** 31 - 1))
    return {   # name -> (raw bytes on mission/com_yaw, the start of the one-line refusal)
        "truncated": (good[: len(good) // 2], "mission/com_yaw: not a valid serialized message"),
        # stamp 0 ("now"), then random bytes: to the worker, whose decoder refuses them
        "random": (bytes([0, 1, 0, 0]) + bytes(8) + rng.bytes(200), "mission/com_yaw"),
        "too_short": (good[:6], "mission/com_yaw: not a serialized message (6 bytes)"),
        "over_the_size_limit": (good[:12] + bytes(MAX_MISSION_BYTES), f"over the limit of {MAX_MISSION_BYTES} bytes"),
        "com_at_1e300": (serialize_message(far), "mission: a CoM waypoint 1e+300 m from the origin, over max_position"),
        "time_from_start_2e31": (serialize_message(long_), f"over the limit of {MAX_DURATION_S:g} s"),
    }


@pytest.mark.parametrize("attack", list(_attacks()))
def test_attacks_are_refused_in_one_line_and_the_plan_in_use_flies(h, wall, attack):
    from rclpy.qos import QoSProfile
    from trajectory_msgs.msg import MultiDOFJointTrajectory
    node, times, diags, pm, pj = wall
    raw, want = _attacks()[attack]
    flying = node.plans[-1][1]
    n0 = node.refused
    # a raw publisher: the bytes go out as they are
    pub = h.probe.create_publisher(MultiDOFJointTrajectory, "mission/com_yaw", QoSProfile(depth=10))
    h.wait_matched("mission/com_yaw")
    pub.publish(raw)
    assert h.spin_until(lambda: node.refused > n0, 30.0), attack
    assert h.spin_until(lambda: any("mission refused" in s.message for s in _statuses(diags)), 10.0)
    st = [s for s in _statuses(diags) if "mission refused" in s.message][-1]
    assert want in st.message and "\n" not in st.message and len(st.message) < 600, st.message
    t_refused = time.monotonic()
    assert node.plans[-1][1] is flying
    assert h.spin_until(lambda: any(x >= t_refused for x in times), 10.0)   # the plan in use still flows
    _fly_and_check(h, node, pm, pj, [0.1, -0.1, 1.1], diags)      # the next good mission flies


def test_a_planner_that_dies_is_restarted(h, wall):
    node, times, diags, pm, pj = wall
    pid = node.replanner._proc.pid
    os.kill(pid, signal.SIGKILL)
    assert h.spin_until(lambda: node.replanner.restarts == 1 and node.replanner._ready, 60.0)
    assert node.replanner._proc.pid != pid
    _fly_and_check(h, node, pm, pj, [-0.2, 0.0, 1.0], diags)


@pytest.mark.parametrize("last_time, want", [(1.0e12, "1e+12 s, over the limit of 86400 s"),
                                             (1.0e5, "100000 s, over the limit of 86400 s")])
def test_a_mission_file_beyond_a_day_is_refused_at_once(h, tmp_path, last_time, want):
    """The file's last waypoint at 1e12 s made planned_path allocate 146 TiB; at 1e5 s the start-up
    took 32 s (2 million path poses). Both are now refused in one line at start-up, before planning."""
    from geodyn_ros.ros.common.params import ConfigurationError
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    f = tmp_path / "long.yaml"
    f.write_text(MISSION.read_text().replace("time: 4.0", f"time: {last_time!r}"))
    # the mission file's own line (planning.mission's bound, checked on the waypoint's time)
    want = f"{f}: waypoints[2].time: {want} (a day, as geodyn_reference's topic missions); split the mission"
    with pytest.raises(ConfigurationError, match=rf"^parameter 'mission': {re.escape(want)}$"):
        h.make(ReferenceNode, {"trajectory": "waypoints", "mission": str(f), "use_sim_time": True})


def test_plans_waiting_for_their_switch_never_drop_the_one_flying(h):
    """In a storm many accepted plans wait for their switch times (each a planning lead ahead).
    Keeping only the last three plans before a switch dropped the one flying now: the stream
    stopped until the next switch (up to 0.7 s at 1 kHz in bench/ros/bench_replan_storm.py, with
    the node publishing 32 % of its samples). The plan flying stays until a later one switches in."""
    import copy

    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    node = h.make(ReferenceNode, {"trajectory": "waypoints", "mission": str(MISSION), "rate_hz": RATE})
    now = node.get_clock().now().nanoseconds
    flying = node._active(now)
    assert flying is not None
    waiting = [copy.copy(flying) for _ in range(5)]
    for k, traj in enumerate(waiting, 1):                  # five accepted plans, 1..5 s ahead
        node._install(now + k * 1_000_000_000, traj, b"", 2, True, "")
    assert node._active(node.get_clock().now().nanoseconds) is flying
    assert node._active(now + 3_500_000_000) is waiting[2]   # and each flies at its own switch time
    assert node._active(now + 9_000_000_000) is waiting[4]
