#!/usr/bin/env python3
"""The lock-step ROS loop under a storm of future-dated step manifests (issue 51, item 7).

The loop runs as a user runs it, in its own process (on a ROS domain of its own, ``--no-isolate``
so that another process can reach it)::

    geodyn_closed_loop --actuated --rows ff2 --sensing mocap --seed 1 --duration <D> --no-isolate

twice: quiet, then with a **storm** from a second process (this script with ``--storm``, doing
nothing else): ``sim/delivered`` manifests in the actuated simulator's layout, stamped 1000 s and
more ahead, ``--rate`` a second or as fast as rclpy publishes them (reliable, keep-last 1000),
from before the loop starts until it ends. The storm process also listens to ``/diagnostics`` and reports the
controller's largest ``manifests_refused``.

It prints, per run, the simulated time per 100 s of wall time (the loop's own "done in X s wall"),
the manifests the storm sent and at what rate, and the count the controller refused. Figures, not
assertions. Before the fix the issue measured 0.35 to 0.73 s simulated per 100 s under 100,000
manifests; ``geodyn_closed_loop`` then ended with a RuntimeError traceback.

    python bench/ros/bench_manifest_storm.py [--duration 1.0] [--rate 0]
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time


def storm(out_path: str, rate: float) -> int:
    """Publish forged manifests (``rate`` a second; 0: as fast as rclpy does) until SIGTERM; then
    write ``sent seconds refused`` to ``out_path``."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from std_msgs.msg import Float64MultiArray

    from geodyn_ros.ros.common.runtime import control_qos
    from geodyn_ros.ros.inputs.step_cycles import MANIFEST_TOPIC, manifest_msg, set_manifest

    from rclpy.signals import SignalHandlerOptions
    stop = []
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)   # (rclpy's own would shut the context down)
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    node = rclpy.create_node("manifest_storm")
    pub = node.create_publisher(Float64MultiArray, MANIFEST_TOPIC, control_qos(1000))
    refused = [0]

    def on_diag(msg):
        for st in msg.status:
            for kv in st.values:
                if kv.key == "manifests_refused":
                    refused[0] = max(refused[0], int(kv.value))
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 100)
    from rclpy._rclpy_pybind11 import RCLError   # (not re-exported by rclpy.exceptions in these wheels)
    msg = manifest_msg(("odom", "joint_states", "motor_states"))
    sent, t0 = 0, time.monotonic()
    while not stop:
        if rate > 0 and sent >= rate * (time.monotonic() - t0):
            rclpy.spin_once(node, timeout_sec=0.0005)
            continue
        set_manifest(msg, 1000 * 10**9 + sent, [0, 0, 0])
        try:
            pub.publish(msg)
            sent += 1
        except RCLError:        # the writer's history is full (readers behind): try again
            rclpy.spin_once(node, timeout_sec=0.001)
        if sent % 100 == 0:
            rclpy.spin_once(node, timeout_sec=0.0)
    wall = time.monotonic() - t0
    for _ in range(50):
        rclpy.spin_once(node, timeout_sec=0.02)
    with open(out_path, "w") as f:
        f.write(f"{sent} {wall} {refused[0]}\n")
    node.destroy_node()
    rclpy.shutdown()
    return 0


def run_loop(duration: float, env: dict) -> float:
    """The loop's wall time [s] (its "done in X s wall" line)."""
    cmd = [sys.executable, "-m", "geodyn_ros.ros.loops.closed_loop", "--actuated", "--rows", "ff2", "--sensing",
           "mocap", "--seed", "1", "--duration", str(duration), "--no-isolate"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    m = re.search(r"done in ([0-9.]+) s wall", out.stdout)
    if out.returncode != 0 or m is None:
        print(f"  the loop failed (exit {out.returncode}): {out.stderr.strip().splitlines()[-1:]}")
        return float("nan")
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=1.0, help="simulated seconds per run (default 1)")
    ap.add_argument("--rate", type=float, default=0.0, help="forged manifests a second (default 0: as fast as "
                    "rclpy publishes, about 10,000 a second here)")
    ap.add_argument("--storm", metavar="OUT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.storm:
        return storm(args.storm, args.rate)
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 80), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    quiet = run_loop(args.duration, env)
    print(f"quiet: {args.duration:g} s simulated in {quiet:.1f} s wall: {100 * args.duration / quiet:.1f} s per 100 s")
    out_path = f"/tmp/manifest_storm_{os.getpid()}.txt"
    proc = subprocess.Popen([sys.executable, __file__, "--storm", out_path, "--rate", str(args.rate)], env=env)
    time.sleep(3.0)          # the storm is on before the loop starts
    stormy = run_loop(args.duration, env)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    sent, wall, refused = open(out_path).read().split()
    os.unlink(out_path)
    print(f"storm: {args.duration:g} s simulated in {stormy:.1f} s wall: {100 * args.duration / stormy:.1f} s per "
          f"100 s; {int(sent)} manifests sent in {float(wall):.1f} s ({int(sent) / float(wall):.0f} a second), "
          f"{refused} refused by the controller (its /diagnostics)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
