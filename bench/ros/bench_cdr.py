#!/usr/bin/env python3
"""Decode cost of ``geodyn_ros.ros.wire.cdr`` against rclpy's own deserializer, measured in one run.

For each input (typical messages, messages at the size limits, adversarial ones: non-ASCII or
NUL-cut joint names, 50k names, megabyte strings) it times ``deserialize_message`` (rclpy, the
reference) and the decoder the node uses on the same bytes, and prints both and their ratio
(goal: <= 2x on large messages). The name cache is cold (a new cache each call) except in the
row marked ``cached``. Over a size limit the decoder refuses in O(1), rclpy decodes everything.

The two are timed round-robin (one batch of each in turn, ``--repeats`` times) and each figure
is the median over batches, so a burst of load on a shared machine hits both. Figures, not
assertions: nothing here fails on a slow machine.

    python bench/ros/bench_cdr.py [--repeats 15] [--budget 0.02]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402

from geodyn_ros.ros import cdr  # noqa: E402


def joint_states(n, name):
    m = JointState()
    m.header.frame_id = "world"
    m.name = [name(i) for i in range(n)]
    m.position = [0.1 * i for i in range(n)]
    m.velocity = [0.2 * i for i in range(n)]
    return serialize_message(m)


def odometry(frame):
    m = Odometry()
    m.header.frame_id, m.child_frame_id = frame, "base_link"
    return serialize_message(m)


def reference(joints, rows, label_len=16):
    m = Float64MultiArray()
    cols = 6 + joints
    label = ",".join(["w_x", "w_y", "w_z", "v_x", "v_y", "v_z"] + [f"j{i:0{label_len - 1}d}" for i in range(joints)])
    m.layout.dim = [MultiArrayDimension(label="derivative", size=rows, stride=rows * cols),
                    MultiArrayDimension(label=label, size=cols, stride=cols)]
    m.layout.data_offset = 9
    m.data = [0.5] * (9 + rows * cols)
    return serialize_message(m)


def flat_data(n):
    m = Float64MultiArray()
    m.data = [0.25] * n
    return serialize_message(m)


def cases():
    lim = cdr.MAX_JOINTS
    long = cdr.MAX_NAME_BYTES - 1
    yield "joint_states 12 names", joint_states(12, lambda i: f"joint_{i}"), JointState, "js"
    yield "joint_states 12 names, cached", joint_states(12, lambda i: f"joint_{i}"), JointState, "js cached"
    yield f"joint_states {lim} names x 16 B", joint_states(lim, lambda i: f"joint_{i:010d}"), JointState, "js"
    yield (f"joint_states {lim} names x {long} B", joint_states(lim, lambda i: f"{i:06d}".ljust(long, "x")),
           JointState, "js")
    yield (f"joint_states {lim} non-ASCII names x {long} B",
           joint_states(lim, lambda i: f"ö{i:06d}".ljust(long - 1, "x")), JointState, "js")
    yield (f"joint_states {lim} NUL-cut names x {long} B",
           joint_states(lim, lambda i: f"{i:06d}\x00".ljust(long, "x")), JointState, "js")
    yield "joint_states 50000 names (refused: limit)", joint_states(50_000, lambda i: f"joint_{i:010d}"), JointState, "js"
    yield "odometry", odometry("world"), Odometry, "odom"
    yield "odometry 1 MB frame_id (refused: limit)", odometry("w" * 2 ** 20), Odometry, "odom"
    yield f"reference {lim} joints, order 3 (1 MB label)", reference(lim, 6, long), Float64MultiArray, "ma"
    yield f"Float64MultiArray {cdr.MAX_DOUBLES} doubles", flat_data(cdr.MAX_DOUBLES), Float64MultiArray, "ma"


def decoder(kind):
    if kind == "js":
        return lambda b: cdr.decode_joint_state(b, "joint_states", cdr.name_cache())
    if kind == "js cached":
        cache = cdr.name_cache()
        return lambda b: cdr.decode_joint_state(b, "joint_states", cache)
    if kind == "odom":
        return cdr.decode_odometry
    return lambda b: cdr.decode_float64_multiarray(b, "reference")


def run(buf, f, budget):
    """Seconds per call of ``f(buf)`` over a batch of about ``budget`` seconds."""
    t0 = time.perf_counter()
    f(buf)
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(1, int(budget / one))
    t0 = time.perf_counter()
    for _ in range(n):
        f(buf)
    return (time.perf_counter() - t0) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="round-robin batches (median)")
    ap.add_argument("--budget", type=float, default=0.02, help="seconds per batch")
    a = ap.parse_args(argv)
    print(f"{'input':48s} {'bytes':>9s} {'rclpy [us]':>11s} {'cdr [us]':>10s} {'ratio':>7s}")
    for name, buf, cls, kind in cases():
        ours = decoder(kind)

        def refusing(b, ours=ours):
            try:
                ours(b)
            except cdr.CdrError:
                pass
        theirs = (lambda b, cls=cls: deserialize_message(b, cls))
        refusing(buf)                       # loads the compiled kernel before timing
        r, o = [], []
        for _ in range(a.repeats):
            r.append(run(buf, theirs, a.budget))
            o.append(run(buf, refusing, a.budget))
        tr, to = statistics.median(r), statistics.median(o)
        print(f"{name:48s} {len(buf):9d} {tr * 1e6:11.1f} {to * 1e6:10.1f} {to / tr:7.2f}", flush=True)


if __name__ == "__main__":
    main()
