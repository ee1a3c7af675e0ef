#!/usr/bin/env python3
"""Soak of ``geodyn_node`` in measured mode at 1 kHz: drops, latency and memory over time.

The node runs as a separate process (as ``bench_node.py`` starts it) with
``input_mode: measured``. A driver in this process publishes, every millisecond on a
``perf_counter`` schedule, an ``odom`` (REP 105) and a ``joint_states`` message stamped with
``time.time_ns()``, and a Table 3 ``reference`` every ``--ref-every`` sends, and records
``feedforward/jet``. Each odom + joint_states pair triggers one cycle; the latency of an output
is its receipt time minus its stamp (same machine clock). A "drop" is a state stamp with no
output of that stamp: a lost message, or a pair the node combined with a newer odom or
joint_states (the output then carries the newer stamp). The node's resident memory
(``VmRSS`` of ``/proc/<pid>/status``) is sampled every ``--rss-every`` seconds; the slope is a
least-squares fit over the run after the warm-up.

Figures, not assertions (the suite only runs a few seconds of it as a smoke test):

    python bench/bench_soak.py --minutes 10 [--rate 1000] [--order 2] [--csv out/soak_rss.csv]

On this 2-core machine, shared with other work, drops and tail latency vary by run; the figures
in the README say which run they come from.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_node import JOINT_NAMES, NodeProcess  # noqa: E402  (sets the ROS isolation env first)

import rclpy  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.context import Context  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from geodyn_ros.lie import Ad_inv, matrix_to_quat  # noqa: E402
from geodyn_ros.model.resources import shipped_urdf  # noqa: E402
from geodyn_ros.ros.jets import make_reference_msg  # noqa: E402
from geodyn_ros.ros.runtime import control_qos, make_executor  # noqa: E402
from geodyn_ros.trajectories import table3_reference  # noqa: E402


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class SoakDriver:
    def __init__(self, ctx, order):
        self.node = rclpy.create_node("soak_driver", context=ctx)
        self.ex = make_executor(context=ctx)
        self.ex.add_node(self.node)
        qos = control_qos(2)
        self.p_odom = self.node.create_publisher(Odometry, "odom", qos)
        self.p_js = self.node.create_publisher(JointState, "joint_states", qos)
        self.p_ref = self.node.create_publisher(Float64MultiArray, "reference", qos)
        self.node.create_subscription(Float64MultiArray, "feedforward/jet", self._on_jet, control_qos(100))
        self.recv: list[tuple[int, int]] = []   # (stamp, receipt) [ns]
        ref = table3_reference(4.0, order + 1)
        K1 = order + 3
        self.ref = make_reference_msg(0, ref.base_pose, ref.base_twist[:K1], ref.q[:K1], JOINT_NAMES)
        C = ref.base_pose
        Vb = Ad_inv(C) @ ref.base_twist[0]
        o = Odometry()
        o.header.frame_id, o.child_frame_id = "world", "base_link"
        o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = (float(v) for v in C[:3, 3])
        q = o.pose.pose.orientation
        q.x, q.y, q.z, q.w = (float(v) for v in matrix_to_quat(C[:3, :3], "xyzw"))
        t = o.twist.twist
        t.angular.x, t.angular.y, t.angular.z = (float(v) for v in Vb[:3])
        t.linear.x, t.linear.y, t.linear.z = (float(v) for v in Vb[3:])
        self.odom = o
        js = JointState()
        js.name = list(JOINT_NAMES)
        js.position = [float(v) for v in ref.q[0]]
        js.velocity = [float(v) for v in ref.q[1]]
        self.js = js

    def _on_jet(self, msg):
        d = msg.data
        self.recv.append((int(d[0]) * 1_000_000_000 + int(d[1]), time.time_ns()))

    def send(self, with_ref: bool, state: bool = True) -> int:
        stamp = time.time_ns()
        sec, nsec = divmod(stamp, 1_000_000_000)
        if with_ref:
            self.ref.data[0], self.ref.data[1] = sec, nsec
            self.p_ref.publish(self.ref)
        if state:
            for m in (self.odom, self.js):
                m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
            self.p_odom.publish(self.odom)
            self.p_js.publish(self.js)
        return stamp

    def spin_for(self, seconds, cond=None):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if cond is not None and cond():
                return True
            self.ex.spin_once(timeout_sec=0.01)
        return cond() if cond else False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--order", type=int, default=2)
    ap.add_argument("--ref-every", type=int, default=10, help="a reference every N state sends")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds excluded from the figures")
    ap.add_argument("--rss-every", type=float, default=10.0)
    ap.add_argument("--csv", default="")
    ap.add_argument("--mode", choices=("measured", "reference"), default="measured",
                    help="geodyn_node input_mode (reference: odom and joint_states are not subscribed; "
                         "one cycle per reference, sent every state period)")
    ap.add_argument("--profile", default="", help="run the node under cProfile, writing this file")
    ap.add_argument("--floor", action="store_true",
                    help="run bench/rclpy_floor_node.py instead of geodyn_node: the same topics, QoS and "
                         "executor, raw in and out, no decoding and no dynamics (the rclpy floor)")
    args = ap.parse_args(argv)
    if args.floor:
        import os
        os.environ["GEODYN_BENCH_NODE_SCRIPT"] = str(REPO / "bench" / "rclpy_floor_node.py")
    if args.profile:
        import os
        os.environ["GEODYN_BENCH_PROFILE"] = str(Path(args.profile).resolve())
    if args.mode == "reference":
        args.ref_every = 1
    ctx = Context()
    rclpy.init(context=ctx)
    node = NodeProcess(str(shipped_urdf()), args.order, (f"input_mode:={args.mode}", "stale_timeout:=0.5"))
    drv = SoakDriver(ctx, args.order)
    try:
        probe = drv.p_odom if args.mode == "measured" else drv.p_ref
        if not drv.spin_for(60.0, lambda: probe.get_subscription_count() > 0):
            print("node did not start:\n" + node.output(), file=sys.stderr)
            return 1
        while not drv.recv:   # until the first output (kernels loaded)
            drv.send(True)
            drv.spin_for(0.05)
            node.check()
        total = args.minutes * 60.0
        n = int(round(total * args.rate))
        period = 1.0 / args.rate
        sent = np.empty(n, dtype=np.int64)
        rss = []
        pc = time.perf_counter
        t0 = pc() + period
        next_rss = t0
        k = 0
        drv.recv.clear()
        cpu0, cpu_t0 = node.cpu_seconds(), None
        while k < n:
            now = pc()
            if now >= t0 + k * period:
                sent[k] = drv.send(k % args.ref_every == 0, state=args.mode == "measured")
                k += 1
                if cpu_t0 is None and now - t0 >= args.warmup:
                    cpu0, cpu_t0, n_warm = node.cpu_seconds(), now, len(drv.recv)
                if now >= next_rss:
                    rss.append((now - t0, rss_mb(node.pid)))
                    next_rss += args.rss_every
                    node.check()
                continue
            drv.ex.spin_once(timeout_sec=t0 + k * period - now)
        cpu1 = node.cpu_seconds()
        cpu_cycles = len(drv.recv) - n_warm if cpu_t0 is not None else 0
        cpu_wall = pc() - cpu_t0 if cpu_t0 is not None else float("nan")
        drv.spin_for(0.5)
        rss.append((pc() - t0, rss_mb(node.pid)))
    finally:
        code = node.stop()
    warm_ns = int(args.warmup * 1e9)
    start_ns = int(sent[0])
    keep = sent[sent >= start_ns + warm_ns]
    got = {s: r for s, r in drv.recv}
    lat = np.array([(got[s] - s) * 1e-6 for s in keep if s in got])
    dropped = len(keep) - len(lat)
    t, m = np.array(rss).T
    after = t >= args.warmup
    slope = float(np.polyfit(t[after] / 60.0, m[after], 1)[0]) if after.sum() >= 2 else float("nan")
    print(f"geodyn_node soak: {args.mode} mode, order {args.order}, {args.rate:g} Hz odom + joint_states, "
          f"reference every {args.ref_every}, {args.minutes:g} min ({args.warmup:g} s warm-up excluded)")
    window = (int(sent[-1]) - int(keep[0])) * 1e-9 if len(keep) else float("nan")
    outputs = sum(1 for s_, _ in drv.recv if s_ >= int(keep[0])) if len(keep) else 0
    print(f"  sent {len(keep)} state pairs, {outputs} outputs ({outputs / window:.0f} Hz); "
          f"state stamps without an output of that stamp {dropped} ({100.0 * dropped / max(1, len(keep)):.3f} %)")
    if len(lat):
        print(f"  latency ms: median {np.median(lat):.3f}, p99 {np.percentile(lat, 99):.3f}, "
              f"p99.9 {np.percentile(lat, 99.9):.3f}, max {lat.max():.3f}")
    if cpu_cycles:
        print(f"  node CPU: {(cpu1 - cpu0) / cpu_cycles * 1e6:.0f} us per output ({100 * (cpu1 - cpu0) / cpu_wall:.0f} % "
              f"of a core; utime + stime over the {cpu_wall:.0f} s after the warm-up)")
    print(f"  RSS MB: start {m[after][0] if after.any() else m[0]:.1f}, end {m[-1]:.1f}, "
          f"slope {slope:+.4f} MB/min over {len(m)} samples")
    print(f"  node exit status on SIGINT: {code}")
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", "rss_mb"])
            w.writerows(rss)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
