"""Bytes per second that geodyn_node puts on ``/diagnostics`` and ``/rosout`` under attack.

geodyn_node (measured mode, in this process) receives ``odom`` with a 1 MB ``frame_id`` and
``joint_states`` with 50 000 unknown joint names, ``--rate`` of each per second, for
``--seconds``; a probe records the serialized size of everything on ``/diagnostics`` and
``/rosout``. Before the bound (issue 32) the 1 MB ``frame_id`` went verbatim into every status:
43 MB over 30 s. Run: ``python bench/ros/bench_diag_attack.py``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test"))

import numpy as np  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Log  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from geodyn_ros.model.resources import shipped_urdf  # noqa: E402
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode  # noqa: E402
from ros_harness import Harness, joint_states_msg, odometry_msg  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rate", type=float, default=20.0, help="attack messages per second and topic")
    args = ap.parse_args(argv)
    h = Harness()
    try:
        h.make(GeodynNode, {"urdf_path": str(shipped_urdf()), "input_mode": "measured"})
        sizes = {"/diagnostics": 0, "/rosout": 0}

        def counter(topic):
            def cb(raw):
                sizes[topic] += len(raw)
            return cb
        h.probe.create_subscription(DiagnosticArray, "/diagnostics", counter("/diagnostics"), 1000, raw=True)
        h.probe.create_subscription(Log, "/rosout", counter("/rosout"), 1000, raw=True)
        po, pj = h.publisher(Odometry, "odom"), h.publisher(JointState, "joint_states")
        h.wait_matched("odom")
        h.wait_matched("joint_states")
        h.spin_for(1.0)
        sizes.update({k: 0 for k in sizes})
        big = "x" * 1_000_000
        names = [f"unknown_joint_{i}" for i in range(50_000)]
        js = joint_states_msg(0, names, np.zeros(len(names)), np.zeros(len(names)))
        t0, i = time.monotonic(), 0
        while time.monotonic() - t0 < args.seconds:
            i += 1
            m = odometry_msg(i * 10**7, np.eye(4), np.zeros(3), np.zeros(3))
            m.header.frame_id = big
            po.publish(m)
            js.header.stamp.sec, js.header.stamp.nanosec = divmod(i * 10**7, 10**9)
            pj.publish(js)
            h.spin_for(1.0 / args.rate)
        h.spin_for(1.5)     # what the attack caused, flushed
        el = time.monotonic() - t0
        print(f"{2 * i} attack messages in {el:.1f} s (1 MB frame_id odom + 50k-name joint_states): "
              f"/diagnostics {sizes['/diagnostics'] / el:.0f} B/s, /rosout {sizes['/rosout'] / el:.0f} B/s")
    finally:
        h.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
