#!/usr/bin/env python3
"""Asynchronous sensor streams for ``geodyn_node`` and the controllers: the scenario of issue 42.

Three streams, each on its own clock, published at their own rates in real time:

* ``odom`` (``nav_msgs/Odometry``, REP 105) at 250 Hz (a motion-capture or estimator stream);
* ``joint_states`` (``sensor_msgs/JointState``, the six joints of the shipped aerial manipulator)
  at 500 Hz, its samples 1.3 ms after the odom's;
* ``reference`` (order 2: 5 rows; a ``geodyn_msgs/ReferenceJet``, or with ``--message-types
  multiarray`` the deprecated reference-jet ``Float64MultiArray``) at 100 Hz.

Each stream's stamps run on its own clock: a fixed offset from the machine clock (odom +0.2 ms,
joint_states +0.5 ms, reference +0.2 ms), a rate error (+20, -30, +10 ppm) and a seeded jitter
(0.1 ms standard deviation, clipped to 0.3 ms), so no two stamps of different streams are
equal: a joint_states stamp lies about 1.6 ms after an odom stamp and 0.4 ms before the next one
(jitter and rate errors move it by tenths of a millisecond), about the 0.4 ms ``sync_tolerance`` of
``geodyn_node``'s stamp pairing (``input_policy: exact``), which answers 17 % of the odom
messages of a 6 s run (seed 5; ``input_policy: latest``: 100 %). Each message is published at its sample's time on the machine clock plus a seeded
latency (0.2-1.0 ms) and is dropped with a per-stream probability drawn from 1-5 % (seeded); a
sample whose turn comes more than 20 ms late (the publisher was descheduled: a loaded machine) is
not published either, and logged apart, as a stalled driver loses samples. The
values are a function of the stamp: the Table 3 motion at ``tau = (stamp mod 20 s)`` plus a seeded
perturbation (1 cm, 0.05 rad, 0.05 rad/s...), so a sample taken for another one changes the
answer by far more than rounding.

Used in three ways:

* ``publish`` (a process of its own): publishes the scenario (odom and joint_states best-effort, as
  sensor drivers do, or ``--reliability reliable``; the reference reliable, as ``geodyn_reference``) for ``--seconds`` into ``--ns`` once
  every stream has a subscriber and writes what it published (and what it dropped) to ``--log``
  (``.npz``: per stream the stamps and the values exactly as published, and the dropped stamps);
* ``record``: subscribes ``feedforward/jet`` (and ``~/inputs_used`` with ``--used``) of the node
  under ``--node`` for ``--seconds`` (or until SIGINT) and writes the stamps it received to ``--log`` (a recorder in
  a process of its own, for ``bench_async.py``);
* :class:`Scenario` in-process (``bench_soak.py --pair --async``): the same schedule and bytes.

    python bench/ros/async_sensors.py publish --seconds 5 --seed 1 --log /tmp/sent.npz [--ns /]
    python bench/ros/async_sensors.py record --seconds 6 --log /tmp/got.npz [--node /geodyn_node] [--used]
    (both: [--message-types typed|multiarray], the node's message_types; default typed)

Units: stamps and times in integer nanoseconds; positions m, angles rad, rates rad/s, m/s.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

JOINTS = ("J2", "J3", "J4", "J5", "J6", "J7")
ORDER = 2
#: stream -> (period [ns], first sample after the start [ns], clock offset [ns], rate error [ppm])
STREAMS = {"odom": (4_000_000, 0, 200_000, 20.0),
           "joint_states": (2_000_000, 1_300_000, 500_000, -30.0),
           "reference": (10_000_000, 0, 200_000, 10.0)}
JITTER_NS, JITTER_CLIP_NS = 100_000, 300_000
LATENCY_NS = (200_000, 1_000_000)
LOSS = (0.01, 0.05)
#: a sample this late [ns] when its turn comes (the publisher was descheduled) is not published: a
#: driver that stalls loses samples rather than flooding the subscribers' queues with a burst
LATE_SKIP_NS = 20_000_000


class Scenario:
    """The seeded schedule and the messages (module docstring)."""

    def __init__(self, seed: int, message_types: str = "typed"):
        self.seed = int(seed)
        self.typed = message_types == "typed"
        rng = np.random.default_rng(self.seed)
        self.loss = {s: float(rng.uniform(*LOSS)) for s in STREAMS}

    def schedule(self, t0_ns: int, seconds: float):
        """``[(publish time, stream, stamp, dropped)]`` [ns] of the samples taken in
        ``[t0_ns, t0_ns + seconds)``, in publish-time order."""
        rng = np.random.default_rng(self.seed + 1)
        events = []
        for s, (period, first, offset, ppm) in STREAMS.items():
            n = int((seconds * 1e9 - first) // period)
            k = np.arange(n)
            true = t0_ns + first + k * period
            jitter = np.clip(rng.normal(0.0, JITTER_NS, n), -JITTER_CLIP_NS, JITTER_CLIP_NS)
            stamps = true + offset + np.round(k * period * ppm * 1e-6 + jitter).astype(np.int64)
            sent = true + rng.integers(*LATENCY_NS, n)
            dropped = rng.random(n) < self.loss[s]
            events += [(int(a), s, int(b), bool(c)) for a, b, c in zip(sent, stamps, dropped)]
        events.sort()
        return events

    @staticmethod
    def values(stream: str, stamp: int):
        """The values of the sample of ``stream`` stamped ``stamp``: odom ``(p (3), quat xyzw (4),
        w_b (3), v_b (3))``, joint_states ``(q (6), qd (6))``, reference the doubles of the
        deprecated layout (stamp, pose: position and ``xyzw``, then 5 rows of ``V^(k)`` (6) and
        ``q^(k)`` (6)), whichever type carries them; exactly what is published."""
        from geodyn_ros.lie import Ad_inv, matrix_to_quat
        from geodyn_ros.trajectories import table3_reference
        tau = (stamp % 20_000_000_000) * 1e-9
        ref = table3_reference(tau, ORDER + 1)
        rng = np.random.default_rng([stamp % (2**32), stamp // (2**32)])
        if stream == "reference":
            from geodyn_ros.ros.wire.jets import make_reference_msg
            K1 = ORDER + 3
            return np.array(make_reference_msg(stamp, ref.base_pose, ref.base_twist[:K1], ref.q[:K1], JOINTS).data)
        if stream == "odom":
            C = ref.base_pose
            Vb = Ad_inv(C) @ ref.base_twist[0] + rng.normal(size=6) * 0.05
            p = C[:3, 3] + rng.normal(size=3) * 0.01
            return np.r_[p, matrix_to_quat(C[:3, :3], "xyzw"), Vb]
        return np.r_[ref.q[0] + rng.normal(size=6) * 0.05, ref.q[1] + rng.normal(size=6) * 0.05]

    def message(self, stream: str, stamp: int, vals):
        """The rclpy message of ``stream`` with ``vals`` (:meth:`values`) stamped ``stamp``."""
        sec, nsec = divmod(int(stamp), 1_000_000_000)
        if stream == "reference" and self.typed:   # the same doubles, field by field (the quaternion as is)
            from geodyn_msgs.msg import ReferenceJet
            from geometry_msgs.msg import Twist
            m = ReferenceJet()
            m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
            m.header.frame_id, m.child_frame_id, m.order, m.representation = "world", "base_link", ORDER + 2, "spatial"
            p, o = m.base_pose.position, m.base_pose.orientation
            p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(v) for v in vals[2:9])
            body = np.asarray(vals[9:], dtype=float).reshape(ORDER + 3, 12)
            twists = []
            for row in body[:, :6].tolist():
                t = Twist()
                t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z = row
                twists.append(t)
            m.base_twist = twists
            m.joint_names = list(JOINTS)
            m.q = [float(v) for v in body[:, 6:].ravel()]
            return m
        if stream == "reference":
            from geodyn_ros.ros.wire.jets import make_reference_msg
            m = make_reference_msg(0, np.eye(4), np.zeros((ORDER + 3, 6)), np.zeros((ORDER + 3, 6)), JOINTS)
            m.data = [float(v) for v in vals]
            return m
        if stream == "odom":
            from nav_msgs.msg import Odometry
            m = Odometry()
            m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
            m.header.frame_id, m.child_frame_id = "world", "base_link"
            pos, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
            pos.x, pos.y, pos.z = (float(v) for v in vals[:3])
            o.x, o.y, o.z, o.w = (float(v) for v in vals[3:7])
            t.angular.x, t.angular.y, t.angular.z = (float(v) for v in vals[7:10])
            t.linear.x, t.linear.y, t.linear.z = (float(v) for v in vals[10:13])
            return m
        from sensor_msgs.msg import JointState
        m = JointState()
        m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
        m.name = list(JOINTS)
        m.position = [float(v) for v in vals[:6]]
        m.velocity = [float(v) for v in vals[6:]]
        return m

    def serialized(self, stream: str, stamp: int):
        """``(bytes, values)`` of the sample (:meth:`values`, :meth:`message`)."""
        from rclpy.serialization import serialize_message
        vals = self.values(stream, stamp)
        return serialize_message(self.message(stream, stamp, vals)), vals


def _types(message_types: str = "typed"):
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    if message_types == "typed":
        from geodyn_msgs.msg import ReferenceJet as Reference
    else:
        from std_msgs.msg import Float64MultiArray as Reference
    return {"odom": Odometry, "joint_states": JointState, "reference": Reference}


def publish(args) -> int:
    import rclpy
    from rclpy.context import Context

    from geodyn_ros.ros.common.runtime import control_qos, make_executor
    ctx = Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("async_sensors", namespace=args.ns, context=ctx)
    ex = make_executor(context=ctx)
    ex.add_node(node)
    pubs = {s: node.create_publisher(t, s, control_qos(10, "reliable" if s == "reference" else args.reliability))
            for s, t in _types(args.message_types).items()}
    end = time.monotonic() + args.wait
    while not all(p.get_subscription_count() > 0 for p in pubs.values()):
        ex.spin_once(timeout_sec=0.05)
        if time.monotonic() > end:
            print("async_sensors: no subscriber on every stream", file=sys.stderr)
            return 1
    sc = Scenario(args.seed, args.message_types)
    for s in STREAMS:   # the first call imports and builds what the later ones reuse: not on the schedule
        sc.serialized(s, time.time_ns())
    t0 = time.time_ns() + 50_000_000
    events = sc.schedule(t0, args.seconds)
    sent = {s: ([], []) for s in STREAMS}
    dropped = {s: [] for s in STREAMS}
    skipped = {s: [] for s in STREAMS}   # not published: over LATE_SKIP_NS late
    late = 0
    for at, s, stamp, drop in events:
        while True:
            now = time.time_ns()
            if now >= at:
                break
            ex.spin_once(timeout_sec=min(0.002, (at - now) * 1e-9))
        lag = time.time_ns() - at
        late = max(late, lag)
        if drop or lag > LATE_SKIP_NS:
            (dropped if drop else skipped)[s].append(stamp)
            continue
        b, vals = sc.serialized(s, stamp)   # (~0.1 ms: built when due, so a late start never bursts)
        pubs[s].publish(b)
        sent[s][0].append(stamp)
        sent[s][1].append(vals)
    t_end = time.monotonic() + 0.3
    while time.monotonic() < t_end:
        ex.spin_once(timeout_sec=0.01)
    out = {"t0": np.int64(t0), "seconds": np.float64(args.seconds), "seed": np.int64(args.seed),
           "max_late_ns": np.int64(late)}
    for s in STREAMS:
        out[f"{s}_stamps"] = np.array(sent[s][0], dtype=np.int64)
        out[f"{s}_values"] = np.array(sent[s][1], dtype=float)
        out[f"{s}_dropped"] = np.array(dropped[s], dtype=np.int64)
        out[f"{s}_late_skipped"] = np.array(skipped[s], dtype=np.int64)
        out[f"{s}_loss"] = np.float64(sc.loss[s])
    np.savez(args.log, **out)
    node.destroy_node()
    ctx.try_shutdown()
    return 0


def record(args) -> int:
    import rclpy
    from rclpy.context import Context
    from std_msgs.msg import Float64MultiArray

    from geodyn_ros.ros.common.runtime import control_qos, make_executor
    ctx = Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("async_recorder", context=ctx)
    ex = make_executor(context=ctx)
    ex.add_node(node)
    jets, used = [], []
    base = args.node.rstrip("/")
    ns = base.rsplit("/", 1)[0]
    if args.message_types == "typed":
        from geodyn_msgs.msg import FeedforwardJet
        node.create_subscription(FeedforwardJet, f"{ns}/feedforward/jet",
                                 lambda m: jets.append(m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec),
                                 control_qos(1000))
    else:
        node.create_subscription(Float64MultiArray, f"{ns}/feedforward/jet",
                                 lambda m: jets.append(int(m.data[0]) * 1_000_000_000 + int(m.data[1])),
                                 control_qos(1000))
    if args.used:
        node.create_subscription(Float64MultiArray, f"{base}/inputs_used", lambda m: used.append(list(m.data)),
                                 control_qos(1000))
    from diagnostic_msgs.msg import DiagnosticArray
    counters = {}   # the node's own counts (its last /diagnostics status), to tell its skips from losses here

    def on_diag(msg):
        for st in msg.status:
            if st.name.endswith(base.rsplit("/", 1)[-1] + ": feedforward"):
                for kv in st.values:
                    if kv.key in ("cycles_published", "cycles_skipped") or kv.key.startswith("skipped["):
                        counters[kv.key] = (int(kv.value) if kv.key.startswith("cycles") else
                                            counters.get(kv.key, 0) + int(kv.value))
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, control_qos(100))
    end = time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
    except KeyboardInterrupt:   # SIGINT ends the recording early: the log is still written
        pass
    np.savez(args.log, jet_stamps=np.array(jets, dtype=np.int64), inputs_used=np.array(used, dtype=float),
             counters=np.array(repr(counters)))
    node.destroy_node()
    ctx.try_shutdown()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("publish")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ns", default="/")
    p.add_argument("--log", required=True)
    p.add_argument("--wait", type=float, default=120.0, help="longest wait for the subscribers [s]")
    p.add_argument("--reliability", choices=("reliable", "best_effort"), default="best_effort",
                   help="the sensor publishers' QoS (default best_effort, as sensor drivers); the reference is "
                        "reliable, as geodyn_reference publishes it")
    for q in (p, r := sub.add_parser("record")):
        q.add_argument("--message-types", choices=("typed", "multiarray"), default="typed",
                       help="the node's message_types: typed geodyn_msgs (default) or the deprecated layouts")
    r.add_argument("--seconds", type=float, default=6.0)
    r.add_argument("--node", default="/geodyn_node")
    r.add_argument("--used", action="store_true")
    r.add_argument("--log", required=True)
    args = ap.parse_args(argv)
    return publish(args) if args.cmd == "publish" else record(args)


if __name__ == "__main__":
    sys.exit(main())
