#!/usr/bin/env python3
"""``geodyn_reference``'s reference stream through a replan storm and a huge mission (issue 41).

The node runs as a separate process, as a user runs it (waypoints mode, the shipped mission file
and hexarotor, so every mission is also checked on the whole body)::

    geodyn_reference --ros-args -p trajectory:=waypoints -p mission:=config/mission_example.yaml
        -p rate_hz:=<rate> -p urdf_path:=<hexarotor xacro> -p actuation_config:=config/hexarotor.yaml

A **recorder in a separate process** (this script with ``--recorder FILE``, doing nothing else)
records ``flat_reference``: each sample's receive time (``time.monotonic``, one clock for every
process of the machine) and its own stamp (the node's clock when it published it). The node runs
with ``qos_depth:=1000`` (keep-last 1000 on ``flat_reference``, 1 s at 1 kHz): with the default 2 a
recorder descheduled for 2 ms loses samples, which would show as gaps of the node's stream that
the node never had. This process (the driver) publishes the missions on ``mission/com_yaw``
(stamp 0: "now", each a mission alone; the joints hold):

0. **quiet**: 3 s without missions, the reference for the gaps of the machine itself;
1. **storm**: ``--replans`` missions a second for ``--seconds`` s, each a short hop from the
   origin (three waypoints, 2 s), then 2 s of quiet;
2. **huge**: one mission of ``--waypoints`` points (1 s apart, a slow spiral), then ``--after`` s.

It prints, per phase, the samples received against the rate, the largest gaps (in periods)
between the samples' own stamps (the node's clock when it published them: the node's stream) and
between their receipts here (the stream as a consumer sees it), the missions accepted, refused and coalesced (the node's ``/diagnostics``), and the
peak resident memory (VmHWM) of the node and of its planner process. Figures, not assertions.

    python bench/ros/bench_replan_storm.py [--rate 1000] [--replans 100] [--seconds 10] [--waypoints 10000]
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DOMAIN_ID = int(os.environ.get("STORM_DOMAIN_ID", 1 + os.getpid() % 100))   # the recorder: its parent's
os.environ["ROS_DOMAIN_ID"] = str(DOMAIN_ID)
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

import rclpy  # noqa: E402
from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Transform  # noqa: E402
from rclpy.context import Context  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,  # noqa: E402
                                 MultiDOFJointTrajectoryPoint)

from geodyn_ros.ros.common.runtime import control_qos, make_executor  # noqa: E402

JOINTS = ("J2", "J3", "J4", "J5", "J6", "J7")


def mission(points, dt: float):
    """The pair (stamp 0) through ``points`` [(x, y, z)], one every ``dt`` s after the start."""
    m, j = MultiDOFJointTrajectory(), JointTrajectory()
    m.header.frame_id = "world"
    m.joint_names = ["base_link"]
    j.joint_names = list(JOINTS)
    for i, p in enumerate(points):
        t = (i + 1) * dt
        d = Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))
        tr = Transform()
        tr.translation.x, tr.translation.y, tr.translation.z = (float(v) for v in p)
        tr.rotation.w = 1.0
        m.points.append(MultiDOFJointTrajectoryPoint(transforms=[tr], time_from_start=d))
        j.points.append(JointTrajectoryPoint(positions=[0.0] * len(JOINTS), time_from_start=d))
    return m, j


def vm_hwm_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def children(pid: int) -> list:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def gaps_report(times, rate: float, name: str, stamps=None) -> dict:
    """Gaps between receipts (this process) and, with ``stamps``, between the samples' own stamps
    (the node's publishing: a slow recorder cannot fake those)."""
    if stamps is not None:
        out = gaps_report(stamps, rate, name + ", by stamp")
        gaps_report(times, rate, name + ", by receipt")
        return out
    t = np.asarray(times)
    g = np.diff(t) if len(t) > 1 else np.zeros(1)
    period = 1.0 / rate
    span = t[-1] - t[0] if len(t) > 1 else 0.0
    out = {"samples": len(t), "expected": int(round(span * rate)) + 1, "max_gap_periods": float(g.max() / period),
           "p999_gap_periods": float(np.percentile(g, 99.9) / period), "gaps_over_2": int(np.sum(g > 2 * period))}
    print(f"  {name}: {out['samples']} samples over {span:.2f} s (rate {rate:g} Hz: {out['expected']} expected); "
          f"largest gap {out['max_gap_periods']:.1f} periods, p99.9 {out['p999_gap_periods']:.2f}, "
          f"gaps over 2 periods: {out['gaps_over_2']}")
    return out


def record(path: str) -> int:
    """The recorder process: ``flat_reference``'s receive times and stamps until SIGINT, into ``path``."""
    ctx = Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("storm_recorder", context=ctx)
    ex = make_executor(ctx)
    ex.add_node(node)
    times, stamps = [], []

    def on_ref(msg):
        times.append(time.monotonic())
        stamps.append(msg.data[0] + msg.data[1] * 1e-9)    # the node's clock when it published the sample
    node.create_subscription(Float64MultiArray, "flat_reference", on_ref, control_qos(1000))
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    while not stop:
        ex.spin_once(timeout_sec=0.05)
    np.savez(path, times=np.asarray(times), stamps=np.asarray(stamps))
    ex.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=1000.0, help="geodyn_reference rate_hz (default 1000)")
    ap.add_argument("--replans", type=float, default=100.0, help="missions a second in the storm (default 100)")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the storm (default 10)")
    ap.add_argument("--waypoints", type=int, default=10_000, help="points of the huge mission (default 10000)")
    ap.add_argument("--after", type=float, default=15.0, help="seconds recorded after the huge mission (default 15)")
    ap.add_argument("--no-check", action="store_true", help="no whole-body check (no actuation_config)")
    ap.add_argument("--recorder", help=argparse.SUPPRESS)   # the recorder process: record into this .npz
    a = ap.parse_args(argv)

    exe = Path(sys.executable).with_name("geodyn_reference")
    if a.recorder:
        return record(a.recorder)
    params = ["trajectory:=waypoints", f"mission:={REPO / 'config' / 'mission_example.yaml'}", f"rate_hz:={a.rate}",
              "qos_depth:=1000"]
    if not a.no_check:
        params += [f"urdf_path:={REPO / 'urdf' / 'hexarotor_manipulator.urdf.xacro'}",
                   f"actuation_config:={REPO / 'config' / 'hexarotor.yaml'}"]
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    args = [str(exe), "--ros-args"] + [x for p in params for x in ("-p", p)]
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    print(f"geodyn_reference pid {proc.pid} (ROS_DOMAIN_ID={DOMAIN_ID}), log {log.name}")
    rec_file = Path(log.name).with_suffix(".npz")
    rec = subprocess.Popen([sys.executable, __file__, "--recorder", str(rec_file)], stdin=subprocess.DEVNULL,
                           env=dict(os.environ, STORM_DOMAIN_ID=str(DOMAIN_ID)))
    windows = {}
    ctx = Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("storm_driver", context=ctx)
    ex = make_executor(ctx)
    ex.add_node(node)
    times, diags = [], {}

    def on_ref(_msg):      # start-up only (the recorder process measures)
        times.append(time.monotonic())

    def on_diag(msg):
        for s in msg.status:
            if "mission" in s.name:
                diags.update({kv.key: kv.value for kv in s.values})
                diags["message"] = s.message
    node.create_subscription(Float64MultiArray, "flat_reference", on_ref, control_qos(100), raw=True)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, control_qos(100))
    pm = node.create_publisher(MultiDOFJointTrajectory, "mission/com_yaw", control_qos(100))

    def spin_for(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=min(0.01, max(0.0, end - time.monotonic())))

    try:
        t0 = time.monotonic()
        while not times and time.monotonic() - t0 < 300:   # start-up (kernels from the cache, the worker)
            spin_for(0.1)
            if proc.poll() is not None:
                print(Path(log.name).read_text()[-3000:])
                return 1
        spin_for(6.0)                                        # the planner process starts
        print(f"first sample after {time.monotonic() - t0:.1f} s")
        rng = np.random.default_rng(0)
        results = {}
        # ---- quiet: the machine's own gaps, the reference for the phases below
        w0 = time.monotonic()
        spin_for(3.0)
        windows["quiet"] = (w0, time.monotonic(), "flat_reference, no mission (reference)")
        # ---- storm
        t_storm = time.monotonic()
        n_sent, k = 0, 0
        while time.monotonic() - t_storm < a.seconds:
            due = t_storm + k / a.replans
            spin_for(max(0.0, due - time.monotonic()))
            hop = rng.uniform(-0.3, 0.3, 3) + [0, 0, 1.0]
            m, _ = mission([hop, hop * [1, 1, 0] + [0, 0, 1.0], [0.0, 0.0, 1.0]], 0.7)
            pm.publish(m)     # stamp 0: a mission alone, now (the joints hold)
            n_sent += 1
            k += 1
        spin_for(2.0)
        print(f"storm: {n_sent} missions in {a.seconds:g} s ({a.replans:g}/s); node says: {diags.get('message', '')[:120]}"
              f"; coalesced {diags.get('missions_coalesced', '?')}")
        windows["storm"] = (t_storm, time.monotonic(), "flat_reference during the storm and 2 s after")
        # ---- huge mission
        n = a.waypoints
        th = np.linspace(0, 20 * math.pi, n)
        pts = np.c_[0.5 * np.cos(th), 0.5 * np.sin(th), 1.0 + 0.2 * np.sin(th / 7)]
        m, _ = mission(pts, 1.0)
        t_h = time.monotonic()
        pm.publish(m)
        accepted = None
        end = t_h + a.after
        while time.monotonic() < end:
            spin_for(0.05)
            if accepted is None and f"{n + 1} waypoints" in diags.get("message", ""):
                accepted = time.monotonic() - t_h
        print(f"huge mission: {n} points; " + (f"accepted after {accepted:.1f} s" if accepted is not None else
                                              f"not accepted in {a.after:g} s: {diags.get('message', '')[:160]}"))
        windows["huge"] = (t_h, time.monotonic(), f"flat_reference for {a.after:g} s after it")
        kids = children(proc.pid)
        print(f"peak memory (VmHWM): node {vm_hwm_mb(proc.pid):.0f} MB"
              + "".join(f", planner process {vm_hwm_mb(c):.0f} MB" for c in kids))
        rec.send_signal(signal.SIGINT)
        rec.wait(30)
        got = np.load(rec_file)
        for name, (lo, hi, what) in windows.items():
            sel = (got["times"] >= lo) & (got["times"] <= hi)
            results[name] = gaps_report(got["times"][sel], a.rate, what, got["stamps"][sel])
    finally:
        if rec.poll() is None:
            rec.kill()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
