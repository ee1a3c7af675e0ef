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

    python bench/ros/bench_soak.py --minutes 10 [--rate 1000] [--order 2] [--csv out/soak_rss.csv]

``--pair`` instead compares the node's CPU per cycle with the rclpy floor's, in alternating
windows (:func:`run_pair`; method in ``doc/explanation/performance.md``)::

    python bench/ros/bench_soak.py --pair [--windows 3] [--window-seconds 30] [--best-effort] [--mode flat]
    python bench/ros/bench_soak.py --pair --async [--windows 3] [--window-seconds 30]
    python bench/ros/bench_soak.py --pair --message-types multiarray   (the deprecated layouts)

Both the node and the floor (and the driver) use the typed ``geodyn_msgs`` jets (the nodes'
default ``message_types``), or with ``--message-types multiarray`` the deprecated
``Float64MultiArray`` layouts.

``--async`` feeds both the node and the floor the asynchronous scenario of
``bench/ros/async_sensors.py`` (odom 250 Hz and joint_states 500 Hz best-effort on their own
clocks, reference 100 Hz reliable, 1-5 % of each dropped), both with their default
``input_policy: latest`` (a cycle per odom); "outputs/sends" is then outputs per odom sent.

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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "ros"))

from bench_node import (JOINT_NAMES, NodeProcess, add_message_types_option, flat_reference_message,  # noqa: E402,I100  (sets the ROS isolation env first)
                        reference_message, set_stamp, stamp_of, types_of)

import rclpy  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.context import Context  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from geodyn_ros.lie import Ad_inv, matrix_to_quat  # noqa: E402
from geodyn_ros.model.resources import shipped_urdf  # noqa: E402
from geodyn_ros.ros.common.runtime import control_qos, make_executor  # noqa: E402
from geodyn_ros.trajectories import table3_reference  # noqa: E402


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class SoakDriver:
    def __init__(self, ctx, order, typed=True):
        self.node = rclpy.create_node("soak_driver", context=ctx)
        self.ex = make_executor(context=ctx)
        self.ex.add_node(self.node)
        qos = control_qos(2)
        types = types_of(typed)
        self.p_odom = self.node.create_publisher(Odometry, "odom", qos)
        self.p_js = self.node.create_publisher(JointState, "joint_states", qos)
        self.p_ref = self.node.create_publisher(types["reference"], "reference", qos)
        self.node.create_subscription(types["jet"], "feedforward/jet", self._on_jet, control_qos(100))
        self.recv: list[tuple[int, int]] = []   # (stamp, receipt) [ns]
        self._messages(order, typed)

    def _messages(self, order, typed=True):
        """The reference, odom and joint_states messages the driver sends (stamps rewritten per send)."""
        ref = table3_reference(4.0, order + 1)
        self.ref = reference_message(order, typed)
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
        self.recv.append((stamp_of(msg), time.time_ns()))

    def send(self, with_ref: bool, state: bool = True) -> int:
        stamp = time.time_ns()
        sec, nsec = divmod(stamp, 1_000_000_000)
        if with_ref:
            set_stamp(self.ref, stamp)
            self.p_ref.publish(self.ref)
        if state:   # joint_states first: under input_policy latest the odom's cycle then uses it (age 0)
            for m in (self.odom, self.js):
                m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
            self.p_js.publish(self.js)
            self.p_odom.publish(self.odom)
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
    ap.add_argument("--mode", choices=("measured", "reference", "flat"), default="measured",
                    help="geodyn_node input_mode (reference: odom and joint_states are not subscribed; "
                         "one cycle per reference, sent every state period)")
    ap.add_argument("--node-param", action="append", default=[], metavar="NAME:=VALUE",
                    help="an extra geodyn_node parameter of the soak (repeatable), e.g. input_depth:=2")
    ap.add_argument("--profile", default="", help="run the node under cProfile, writing this file")
    ap.add_argument("--pair", action="store_true",
                    help="paired CPU comparison of geodyn_node and bench/ros/rclpy_floor_node.py in alternating "
                         "windows (--windows, --window-seconds, --best-effort, --mode flat)")
    ap.add_argument("--windows", type=int, default=3, help="--pair: windows per variant")
    ap.add_argument("--window-seconds", type=float, default=30.0, help="--pair: length of one window")
    ap.add_argument("--best-effort", action="store_true",
                    help="--pair: best-effort inputs and outputs on node, floor and driver alike")
    ap.add_argument("--async", dest="async_", action="store_true",
                    help="--pair: the asynchronous sensor scenario (bench/ros/async_sensors.py) instead of 1 kHz "
                         "odom + joint_states pairs")
    ap.add_argument("--seed", type=int, default=1, help="--pair --async: the scenario's seed")
    ap.add_argument("--subscribe-all", action="store_true",
                    help="--pair: the driver subscribes every output (default: feedforward/jet only, so "
                         "geodyn_node skips feedforward/wrench and joint_efforts, which the floor still publishes)")
    add_message_types_option(ap)
    ap.add_argument("--floor", action="store_true",
                    help="run bench/ros/rclpy_floor_node.py instead of geodyn_node: the same topics, QoS and "
                         "executor, raw in and out, no decoding and no dynamics (the rclpy floor)")
    args = ap.parse_args(argv)
    if args.pair or args.mode == "flat":
        return run_pair(args)
    if args.floor:
        import os
        os.environ["GEODYN_BENCH_NODE_SCRIPT"] = str(REPO / "bench" / "ros" / "rclpy_floor_node.py")
    if args.profile:
        import os
        os.environ["GEODYN_BENCH_PROFILE"] = str(Path(args.profile).resolve())
    if args.mode == "reference":
        args.ref_every = 1
    ctx = Context()
    rclpy.init(context=ctx)
    node = NodeProcess(str(shipped_urdf()), args.order, (f"input_mode:={args.mode}", "stale_timeout:=0.5",
                                                        f"message_types:={args.message_types}", *args.node_param))
    drv = SoakDriver(ctx, args.order, args.message_types == "typed")
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
    print(f"geodyn_node soak: {args.mode} mode{' (' + ', '.join(args.node_param) + ')' if args.node_param else ''}, "
          f"message_types {args.message_types}, order {args.order}, {args.rate:g} Hz odom + joint_states, "
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



# ---------------------------------------------------------------------------- --pair
_PROFILED_NODE = """
import cProfile, signal, sys
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.common.runtime import run_nodes
prof = cProfile.Profile()
signal.signal(signal.SIGUSR1, lambda *a: prof.enable())
def _dump(*a):
    prof.disable()
    prof.dump_stats(sys.argv[1])
signal.signal(signal.SIGUSR2, _dump)
sys.exit(run_nodes([GeodynNode], sys.argv[1:]))
"""


class _PairProcess(NodeProcess):
    """geodyn_node or the floor node as a subprocess in its own namespace (``ns``)."""

    def __init__(self, script_args, ros_args, name):   # noqa: D107  (NodeProcess.__init__ not called)
        import os
        import subprocess
        import tempfile
        self.order, self.name = 0, name
        self._log = tempfile.TemporaryFile(mode="w+b")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.cmd = [sys.executable, *script_args, "--ros-args", *ros_args]
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=str(REPO))
        self.pid = self.proc.pid


def _thread_group(pid: int, tid: int, name: str) -> str:
    """Thread class for the split: the Python main thread, else the thread's name without digits
    (Fast DDS names its threads ``dds.<kind>.<number>``)."""
    if tid == pid:
        return "python main"
    return "".join(c for c in name if not c.isdigit()).rstrip(".") or "other"


def _qos(depth, best_effort):
    from rclpy.qos import ReliabilityPolicy
    qos = control_qos(depth)
    if best_effort:
        qos.reliability = ReliabilityPolicy.BEST_EFFORT
    return qos


class PairDriver:
    """Feeds one namespace at a time (``/node`` or ``/floor``) with the same messages, on the same
    schedule, and counts the ``feedforward/jet`` outputs of each."""

    def __init__(self, ctx, order, flat, best_effort, subscribe_all=False, scenario=None, typed=True):
        self.node = rclpy.create_node("pair_driver", context=ctx)
        types = types_of(typed)
        self.ex = make_executor(context=ctx)
        self.ex.add_node(self.node)
        self.flat = flat
        self.scenario = scenario   # async_sensors.Scenario (--async) or None
        qos = _qos(2, best_effort)
        self.count = {"node": 0, "floor": 0}
        self.pubs = {}
        for ns in ("node", "floor"):
            if flat:
                self.pubs[ns] = (self.node.create_publisher(types["flat_reference"], f"/{ns}/flat_reference", qos),)
            elif scenario is not None:   # sensors best-effort (as drivers publish), the reference reliable
                self.pubs[ns] = tuple(self.node.create_publisher(t, f"/{ns}/{topic}", _qos(10, topic != "reference"))
                                      for t, topic in ((Odometry, "odom"), (JointState, "joint_states"),
                                                       (types["reference"], "reference")))
            else:
                self.pubs[ns] = tuple(self.node.create_publisher(t, f"/{ns}/{topic}", qos) for t, topic in
                                      ((Odometry, "odom"), (JointState, "joint_states"),
                                       (types["reference"], "reference")))
            self.node.create_subscription(types["jet"], f"/{ns}/feedforward/jet",
                                          lambda m, ns=ns: self._count(ns), _qos(100, best_effort), raw=True)
            if subscribe_all:   # every other output too (received and dropped)
                from geometry_msgs.msg import WrenchStamped
                outs = [(WrenchStamped, "feedforward/wrench"), (JointState, "feedforward/joint_efforts")]
                if flat:
                    from geodyn_ros.ros.common.message_types import MessageTypes
                    kind = MessageTypes(None, "typed" if typed else "multiarray").type_of
                    outs += [(kind(k), t) for k, t in (("desired", "desired/state"), ("flat_jet", "feedforward/flat_jet"),
                                                       ("rotor_speeds", "feedforward/rotor_speeds"))]
                for t, topic in outs:
                    self.node.create_subscription(t, f"/{ns}/{topic}", lambda m: None, _qos(100, best_effort),
                                                  raw=True)
        if flat:
            self.flat_msg = flat_reference_message(order, typed)
        else:
            self.soak = SoakDriver.__new__(SoakDriver)   # reuse its message construction only
            SoakDriver._messages(self.soak, order, typed)

    def _count(self, ns):
        self.count[ns] += 1

    def ready(self) -> bool:
        return all(p.get_subscription_count() > 0 for pubs in self.pubs.values() for p in pubs[:2])

    def send(self, ns, k, ref_every):
        stamp = time.time_ns()
        sec, nsec = divmod(stamp, 1_000_000_000)
        pubs = self.pubs[ns]
        if self.flat:
            set_stamp(self.flat_msg, stamp)
            pubs[0].publish(self.flat_msg)
            return
        d = self.soak
        if k % ref_every == 0:
            set_stamp(d.ref, stamp)
            pubs[2].publish(d.ref)
        for m in (d.odom, d.js):
            m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
        pubs[1].publish(d.js)   # joint_states first (input_policy latest: a cycle per odom)
        pubs[0].publish(d.odom)

    def feed(self, ns, seconds, rate, ref_every):
        """Publish to ``ns`` at ``rate`` Hz for ``seconds`` on a perf_counter schedule; returns sends
        (``--async``: the scenario's schedule; returns the odom messages sent)."""
        if self.scenario is not None:
            return self._feed_async(ns, seconds)
        pc = time.perf_counter
        period = 1.0 / rate
        n = int(round(seconds * rate))
        t0 = pc() + period
        k = 0
        while k < n:
            now = pc()
            if now >= t0 + k * period:
                self.send(ns, k, ref_every)
                k += 1
                continue
            self.ex.spin_once(timeout_sec=t0 + k * period - now)
        return n

    def _feed_async(self, ns, seconds):
        sc, pubs = self.scenario, self.pubs[ns]
        index = {"odom": 0, "joint_states": 1, "reference": 2}
        odom = 0
        for at, stream, stamp, drop in sc.schedule(time.time_ns() + 2_000_000, seconds):
            while True:
                now = time.time_ns()
                if now >= at:
                    break
                self.ex.spin_once(timeout_sec=min(0.002, (at - now) * 1e-9))
            if drop:
                continue
            pubs[index[stream]].publish(sc.serialized(stream, stamp)[0])
            odom += stream == "odom"
        return odom

    def spin_for(self, seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.ex.spin_once(timeout_sec=0.01)


def _median_range(xs, fmt="{:.0f}"):
    xs = sorted(xs)
    return f"{fmt.format(float(np.median(xs)))} ({fmt.format(xs[0])}-{fmt.format(xs[-1])})"


def run_pair(args) -> int:
    """``--pair``: geodyn_node (namespace ``/node``) and the floor node (``/floor``) both alive for
    the whole run; the driver feeds one of them at a time, in alternating windows (node, floor,
    node, floor, ...). Per window: the fed process's utime + stime per thread
    (``/proc/<pid>/task/*/stat``) over the window, divided by the outputs received."""
    import os
    import signal
    flat = args.mode == "flat"
    if flat:
        from geodyn_ros.loops.underactuated import hexarotor_source
        urdf = str(hexarotor_source())
        cfg = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
        mode_params = ["input_mode:=flat", f"actuation_config:={cfg}"]
    else:
        urdf = str(shipped_urdf())
        mode_params = ["input_mode:=measured"]
    params = [f"urdf_path:={urdf}", f"order:={args.order}", "stale_timeout:=0.5", *mode_params,
              f"message_types:={args.message_types}"]
    if args.best_effort:
        params += ["input_reliability:=best_effort", "output_reliability:=best_effort"]
    ros = [a for p in params for a in ("-p", p)]
    prof = str(Path(args.profile).resolve()) if args.profile else ""
    node_script = ["-c", _PROFILED_NODE, prof] if prof else ["-m", "geodyn_ros.ros.nodes.geodyn_node"]
    procs = {"node": _PairProcess(node_script, ["-r", "__ns:=/node", *ros], "node"),
             "floor": _PairProcess([str(REPO / "bench" / "ros" / "rclpy_floor_node.py")], ["-r", "__ns:=/floor", *ros],
                                   "floor")}
    ctx = Context()
    rclpy.init(context=ctx)
    scenario = None
    if args.async_:
        from async_sensors import Scenario
        scenario = Scenario(args.seed, args.message_types)
        if args.order != 2:
            print("--async: the scenario's reference is of order 2", file=sys.stderr)
            return 2
    drv = PairDriver(ctx, args.order, flat, args.best_effort, args.subscribe_all, scenario,
                     args.message_types == "typed")
    ref_every = args.ref_every
    rows = {"node": [], "floor": []}   # per window: (us per cycle, {group: us per cycle}, outputs/sends, load)
    try:
        end = time.perf_counter() + 90.0
        while not drv.ready():
            drv.spin_for(0.1)
            for p in procs.values():
                p.check()
            if time.perf_counter() > end:
                print("nodes did not start:\n" + "\n".join(p.output() for p in procs.values()), file=sys.stderr)
                return 1
        for ns in procs:   # until the first output of each (kernels loaded)
            while drv.count[ns] == 0:
                drv.feed(ns, 0.05, args.rate, ref_every)
                drv.spin_for(0.05)
                procs[ns].check()
        if prof:
            os.kill(procs["node"].pid, signal.SIGUSR1)
        for w in range(args.windows):
            for ns, p in procs.items():
                drv.feed(ns, 1.0, args.rate, ref_every)   # settle (not measured)
                c0, n0 = p.thread_cpu_seconds(), drv.count[ns]
                sends = drv.feed(ns, args.window_seconds, args.rate, ref_every)
                drv.spin_for(0.05)
                c1, n1 = p.thread_cpu_seconds(), drv.count[ns]
                p.check()
                cycles = max(1, n1 - n0)
                groups = {}
                for key, t in c1.items():
                    g = _thread_group(p.pid, *key)
                    groups[g] = groups.get(g, 0.0) + (t - c0.get(key, 0.0)) / cycles * 1e6
                rows[ns].append((sum(groups.values()), groups, (n1 - n0) / sends, os.getloadavg()[0]))
                print(f"  window {w + 1} {ns:5s}: {rows[ns][-1][0]:6.0f} us/cycle, outputs/sends "
                      f"{rows[ns][-1][2]:.3f}, load {rows[ns][-1][3]:.2f}", flush=True)
        if prof:
            os.kill(procs["node"].pid, signal.SIGUSR2)
            drv.spin_for(1.0)
    finally:
        codes = {ns: p.stop() for ns, p in procs.items()}
    qos = "best-effort" if args.best_effort else "reliable"
    if args.async_:
        qos = "best-effort sensor (the nodes' default sensor_reliability), reliable reference"
    subs = "every output" if args.subscribe_all else "feedforward/jet"
    rate = "async: odom 250 Hz, joint_states 500 Hz, reference 100 Hz, own clocks, 1-5 % loss, a cycle per odom" \
        if args.async_ else f"{args.rate:g} Hz"
    print(f"geodyn_node vs rclpy floor: {args.mode} mode, message_types {args.message_types}, order {args.order}, "
          f"{rate}, {qos} inputs and "
          f"outputs, {subs} subscribed, {args.windows} alternating windows of {args.window_seconds:g} s each "
          f"(load average during the run: {_median_range([r[3] for r in rows['node'] + rows['floor']], '{:.2f}')})")
    for ns in procs:
        print(f"  {ns:5s}: CPU per cycle [us] median (min-max) {_median_range([r[0] for r in rows[ns]])}; "
              f"outputs/sends {min(r[2] for r in rows[ns]):.3f}")
        names = sorted({g for r in rows[ns] for g in r[1]}, key=lambda g: -np.median([r[1].get(g, 0) for r in rows[ns]]))
        print("         threads: " + ", ".join(f"{g} {np.median([r[1].get(g, 0.0) for r in rows[ns]]):.0f}"
                                       for g in names if np.median([r[1].get(g, 0.0) for r in rows[ns]]) >= 0.5))
    ratios = [a[0] / b[0] for a, b in zip(rows["node"], rows["floor"])]
    print(f"  ratio node/floor (per window pair): median (min-max) {_median_range(ratios, '{:.2f}')}")
    py = [a[1].get("python main", 0.0) / a[0] for a in rows["node"]]
    print(f"  node's Python main thread: {100 * float(np.median(py)):.0f} % of its CPU")
    if prof:
        print(f"  node profile (windows only): {prof}")
    print(f"  exit status on SIGINT: {codes}")
    return 0 if all(c == 0 for c in codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
