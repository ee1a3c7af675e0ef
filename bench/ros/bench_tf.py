#!/usr/bin/env python3
"""Cost of the simulators' ``/tf`` (geodyn_ros.ros.nodes.sim_transforms) per step, measured in one run.

Three ``geodyn_actuated_sim`` nodes (the TiltHex: the base and six arm joints on ``/tf``, the
locked rotor joints on ``/tf_static``) with ``tf_rate_hz`` 0, 100 and 1000 at a 1 ms step are
stepped in process (``node.step()``, the lock-step simulator's whole step: MuJoCo, ``/clock``,
``odom``, ``joint_states``, ``motor_states`` and ``/tf`` when due), round-robin in batches so a
burst of load hits all three, optionally with a ``/tf`` subscriber in the process (``--subscriber``,
as RViz). Then the parts of one publication: the joints' transforms, the base pose, the bytes,
``publish``, and a step at which nothing is due. Figures, not assertions.

    python bench/ros/bench_tf.py [--subscriber] [--batches 8] [--steps 500]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")   # this process's graph only

import rclpy  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from geodyn_ros.loops.actuated import tilthex_source  # noqa: E402
from geodyn_ros.ros.common.runtime import make_executor  # noqa: E402
from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode  # noqa: E402
from geodyn_ros.ros.wire.tf_messages import tf_qos  # noqa: E402

RATES = (0.0, 100.0, 1000.0)


def _us(fn, n=3000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subscriber", action="store_true", help="a /tf subscriber in the process")
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--steps", type=int, default=500, help="steps per batch")
    a = ap.parse_args(argv)
    ctx = Context()
    rclpy.init(context=ctx)
    ex = make_executor(context=ctx)
    nodes = {}
    for r in RATES:
        nodes[r] = ActuatedSimNode(f"sim{int(r)}", namespace=f"r{int(r)}", context=ctx, parameter_overrides=[
            Parameter("urdf_path", value=str(tilthex_source())), Parameter("tf_rate_hz", value=r),
            Parameter("command_timeout", value=1e3)])
        ex.add_node(nodes[r])
    if a.subscriber:
        probe = rclpy.create_node("probe", context=ctx)
        probe.create_subscription(TFMessage, "/tf", lambda m: None, tf_qos())
        ex.add_node(probe)

    def spin(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)

    spin(1.0)
    per_step = {r: [] for r in RATES}
    for _ in range(a.batches):
        for r, node in nodes.items():
            t0 = time.perf_counter()
            for _ in range(a.steps):
                node.step()
            per_step[r].append((time.perf_counter() - t0) / a.steps * 1e6)
            spin(0.05)
    out = {f"step_us[tf_rate_hz={r:g}]": statistics.median(v) for r, v in per_step.items()}
    tf, sim = nodes[1000.0].tf, nodes[1000.0].sim
    q = sim.q()
    b = tf._writer.write(1, tf._t, tf._q)

    def whole():
        tf._last_ns, tf._next_ns = None, 0
        tf.publish(5, sim)
    out.update({
        "joints_us": _us(lambda: tf.frames.moving_transforms(q, tf._t[1:], tf._q[1:])),
        "base_pose_us": _us(lambda: sim.base_position_quaternion(tf._t[0], tf._q[0])),
        "bytes_us": _us(lambda: tf._writer.write(123, tf._t, tf._q)),
        "publish_us": _us(lambda: tf.pub_tf.publish(b)),
        "not_due_us": _us(lambda: tf.publish(tf._last_ns, sim)),
        "publication_us": _us(whole),
    })
    print(f"subscriber: {a.subscriber}")
    for k, v in out.items():
        print(f"  {k:28s} {v:8.2f}")
    for nd in ex.get_nodes():
        nd.destroy_node()
    ctx.try_shutdown()
    return out


if __name__ == "__main__":
    main()
