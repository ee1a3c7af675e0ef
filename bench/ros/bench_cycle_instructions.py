#!/usr/bin/env python3
"""Instructions per cycle of ``geodyn_node`` and of the rclpy floor node, by stage, under callgrind.

Seconds on a shared machine move with its load; instruction counts do not. This benchmark runs
the node and ``bench/ros/rclpy_floor_node.py`` **in one process** under ``valgrind
--tool=callgrind`` and feeds them pre-serialized messages through the very callables their
subscriptions hold (what rclpy's executor calls with the bytes it took), so every run executes
the same instructions:

* ``async``: the asynchronous sensors of ``bench_soak.py --pair --async`` (``async_sensors.Scenario``,
  seed 1: ``odom`` 250 Hz, ``joint_states`` 500 Hz, reference 100 Hz, their clocks, 1-5 % loss),
  ``input_policy: latest`` (the default): 3.4 messages per cycle;
* ``lockstep``: the 1 kHz stream of ``bench_soak.py --pair``: ``joint_states`` then ``odom`` of the
  same stamp every millisecond, a reference every tenth (the default ``input_policy``): 2.1;
* ``flat``: ``flat_reference`` every millisecond, the hexarotor manipulator with its
  ``actuation_config`` (every flat output published): 1.

The parameters are those of ``bench_soak.py --pair`` but ``stale_timeout`` (1e5 s: the stamps are
those of the scenario from the start of the run, and valgrind is slow; while every input is
fresh no rule depends on its value, so the same instructions run). Every output goes into Fast
DDS, to a subscriber of ``feedforward/jet`` in another process (as ``bench_soak.py --pair``'s
driver). Each measured part runs between a callgrind zero and dump of the Python thread (client
requests through a small C helper compiled here): the whole callback path over ``--cycles``
cycles, a loop of no-op calls with the same messages (the driver's own cost, subtracted), and with
``--stages`` each stage of the node's cycle alone on the same inputs (``cycle_stages.py``).

What the count leaves out is the same for both nodes: the executor's take of each message from
Fast DDS, Fast DDS's own threads and the kernel's work. So the ratio here is an upper bound of the
ratio of whole processes (``bench_soak.py --pair``): adding the same amount to both moves it
towards 1.

    python bench/ros/bench_cycle_instructions.py [--modes async lockstep flat] [--cycles 1000] [--stages]

Figures, not assertions. Per mode it prints instructions per cycle of node and floor, the ratio,
and (``--stages``) the stages. Measured with ``--cycles 500 --stages`` (issue 56; the table with
every stage: ``doc/explanation/performance.md``, "Issue 56"): node / floor before (``f6d59f1``)
async 231,201 / 62,146 = 3.72, lock-step 184,171 / 62,297 = 2.96, flat 195,654 / 100,103 = 1.95;
after (the latest and flat stores) async 83,612 / 62,330 = 1.34, lock-step 69,462 / 63,043 =
1.10, flat 104,816 / 100,072 = 1.05. Numba compiles under valgrind very slowly: run the script once
without it first (``GEODYN_BENCH_NO_VALGRIND=1``, a few cycles) after a change of the kernels.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MODES = ("async", "lockstep", "flat")

_CG_C = r"""
#include <valgrind/callgrind.h>
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *s) { CALLGRIND_DUMP_STATS_AT(s); }
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
int cg_on(void) { return RUNNING_ON_VALGRIND; }
"""


def _cg_lib(tmp: Path):
    src, so = tmp / "cg.c", tmp / "libcg.so"
    if not so.exists():
        src.write_text(_CG_C)
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    lib = ctypes.CDLL(str(so))
    lib.cg_dump.argtypes = [ctypes.c_char_p]
    return lib


# ----------------------------------------------------------------------------- the messages
def _events(mode: str, n_cycles: int, warm: int):
    """``[(clock ns, topic, bytes)]``: ``warm`` cycles, then ``n_cycles`` (the index of the first
    measured event is returned too)."""
    from rclpy.serialization import serialize_message
    t0 = time.time_ns()
    out = []
    if mode == "async":
        from async_sensors import Scenario
        sc = Scenario(1, "typed")
        odoms, mark = 0, None
        for at, stream, stamp, drop in sc.schedule(t0, (n_cycles + warm) / 250.0 * 1.2):
            if drop:
                continue
            if stream == "odom":
                if odoms == warm:
                    mark = len(out)
                if odoms == warm + n_cycles:
                    break
                odoms += 1
            out.append((at, stream, sc.serialized(stream, stamp)[0]))
        return out, mark
    from bench_node import flat_reference_message, set_stamp
    if mode == "flat":
        msg = flat_reference_message(2, True)
        for k in range(warm + n_cycles):
            stamp = t0 + k * 1_000_000
            set_stamp(msg, stamp)
            out.append((stamp + 300_000, "flat_reference", serialize_message(msg)))
        return out, warm
    from bench_soak import SoakDriver
    d = SoakDriver.__new__(SoakDriver)
    SoakDriver._messages(d, 2, True)
    mark = None
    for k in range(warm + n_cycles):
        stamp = t0 + k * 1_000_000
        if k == warm:
            mark = len(out)
        sec, nsec = divmod(stamp, 1_000_000_000)
        if k % 10 == 0:
            set_stamp(d.ref, stamp)
            out.append((stamp + 200_000, "reference", serialize_message(d.ref)))
        for m in (d.odom, d.js):
            m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
        out.append((stamp + 250_000, "joint_states", serialize_message(d.js)))
        out.append((stamp + 300_000, "odom", serialize_message(d.odom)))
    return out, mark


def _params(mode: str) -> dict:
    from geodyn_ros.model.resources import shipped_urdf
    # stale_timeout: the stamps are the scenario's, from the start of the run, and valgrind is slow (no
    # rule depends on its value while every input is fresh: the same instructions run)
    p = {"order": 2, "stale_timeout": 1e5, "message_types": "typed"}
    if mode == "flat":
        from geodyn_ros.loops.underactuated import hexarotor_source
        src = hexarotor_source()
        p.update(urdf_path=str(src), input_mode="flat", actuation_config=str(src.parents[1] / "config" / "hexarotor.yaml"))
    else:
        p.update(urdf_path=str(shipped_urdf()), input_mode="measured")
    return p


# ----------------------------------------------------------------------------- the child (under valgrind)
def _subject(kind: str, mode: str, ctx):
    """The node (``kind`` node or floor) of ``mode`` in namespace ``/<kind>_<mode>``."""
    from rclpy.parameter import Parameter
    overrides = [Parameter(k, value=v) for k, v in _params(mode).items()]
    ns = f"/{kind}_{mode}"
    if kind == "node":
        from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
        return GeodynNode(context=ctx, parameter_overrides=overrides, namespace=ns)
    from rclpy_floor_node import FloorNode
    return FloorNode(context=ctx, parameter_overrides=overrides, namespace=ns)


def _noop(raw):
    return None


def child(runs, n_cycles: int, warm: int, stages: bool, tmp: Path) -> int:
    """Every ``(mode, kind)`` of ``runs`` in this one process (one start-up under valgrind); a
    callgrind dump per measured part, named ``<mode>.<kind>.<part>``."""
    domain = os.environ["ROS_DOMAIN_ID"]
    sys.path[:0] = [str(REPO), str(HERE)]
    import bench_node  # noqa: F401  (sets its own ROS_DOMAIN_ID: the parent's is restored below)
    os.environ["ROS_DOMAIN_ID"] = domain
    import rclpy
    from rclpy.context import Context

    from geodyn_ros.ros.common.runtime import make_executor
    lib = _cg_lib(tmp)
    ctx = Context()
    rclpy.init(context=ctx)
    ex = make_executor(context=ctx)
    subjects = {}
    for mode, kind in runs:
        node = _subject(kind, mode, ctx)
        ex.add_node(node)
        events, mark = _events(mode, n_cycles, warm)
        ns = node.get_namespace()
        subs = {s.topic_name.rsplit("/", 1)[-1]: s.callback for s in node.subscriptions if s.topic_name.startswith(ns)}
        feed = [(subs[topic], raw) for _, topic, raw in events]
        jet = next(p for p in node.publishers if p.topic_name == f"{ns}/feedforward/jet")
        subjects[(mode, kind)] = (node, feed, mark, events, jet)
    end = time.monotonic() + 900
    while not all(s[4].get_subscription_count() for s in subjects.values()):   # the recorder matched
        ex.spin_once(timeout_sec=0.05)
        if time.monotonic() > end:
            print("no subscriber on feedforward/jet", file=sys.stderr)
            return 1
    results = {}
    for (mode, kind), (node, feed, mark, events, _) in subjects.items():
        def run(part):
            for cb, raw in part:
                cb(raw)

        run(feed[:mark])   # warm-up: shapes learned, kernels loaded
        measured = feed[mark:]
        counters = getattr(getattr(node, "diag", None), "counters", None)
        n0 = dict(counters) if counters else {}
        if not results:
            lib.cg_start()
        tag = f"{mode}.{kind}."
        res = {"messages": len(measured)}
        lib.cg_zero()   # the driver's own loop (a call of a no-op): subtracted from the parts
        run([(_noop, raw) for _, raw in measured])
        lib.cg_dump((tag + "loop").encode())
        lib.cg_zero()
        run(measured)
        lib.cg_dump((tag + "full").encode())
        if counters:
            res["outputs"] = counters["cycles_published"] - n0["cycles_published"]
            res["skipped"] = counters["cycles_skipped"] - n0["cycles_skipped"]
        else:   # the floor: one output per odom (a joint_states came in the warm-up) or flat reference
            res["outputs"] = sum(1 for _, t, _ in events[mark:] if t in ("odom", "flat_reference"))
        if stages and kind == "node":
            from cycle_stages import node_stages
            for name, fn in node_stages(node, mode, events[mark:], measured):
                lib.cg_zero()
                fn()
                lib.cg_dump((tag + name).encode())
                res.setdefault("stages", []).append(name)
        results[f"{mode}/{kind}"] = res
    (tmp / "result.json").write_text(json.dumps(results))
    for node, *_ in subjects.values():
        node.destroy_node()
    ctx.try_shutdown()
    return 0


# ----------------------------------------------------------------------------- the parent
_RECORDER = r"""
import sys, rclpy
from rclpy.context import Context
sys.path.insert(0, sys.argv[1])
from geodyn_ros.ros.common.runtime import control_qos, make_executor
from geodyn_msgs.msg import FeedforwardJet
ctx = Context(); rclpy.init(context=ctx)
n = rclpy.create_node("cycle_recorder", context=ctx)
for ns in sys.argv[2:]:
    n.create_subscription(FeedforwardJet, ns + "/feedforward/jet", lambda m: None, control_qos(100), raw=True)
ex = make_executor(context=ctx); ex.add_node(n)
while True:
    ex.spin_once(timeout_sec=0.1)
"""


def _parse_dumps(out_dir: Path) -> dict:
    """``{part: {thread: Ir}}`` of the callgrind dumps in ``out_dir``."""
    parts: dict = {}
    for f in sorted(out_dir.glob("cg.*")):
        text = f.read_text(errors="replace")
        m = re.search(r"^desc: Trigger: (?:Client Request: )?(.+)$", text, re.M)
        if m is None:
            continue
        tm = re.search(r"^thread: (\d+)", text, re.M)
        tot = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        thread = int(tm.group(1)) if tm else 1
        d = parts.setdefault(m.group(1), {})
        d[thread] = d.get(thread, 0) + int(tot.group(1))
    return parts


def measure(runs, n_cycles: int, warm: int, stages: bool, keep: Path | None) -> dict:
    """Run the child under callgrind for ``runs`` [(mode, kind)]; ``{"mode/kind": result}``."""
    tmp = Path(tempfile.mkdtemp(prefix="cgcycle-"))
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 100)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(HERE), env.get("PYTHONPATH", "")]))
    rec = subprocess.Popen([sys.executable, "-c", _RECORDER, str(REPO), *(f"/{k}_{m}" for m, k in runs)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cmd = [] if os.environ.get("GEODYN_BENCH_NO_VALGRIND") else [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
            f"--callgrind-out-file={tmp}/cg.%p", "--dump-line=no", "--compress-strings=no"]
        cmd += [sys.executable, str(Path(__file__).resolve()), "--child", ",".join(f"{m}:{k}" for m, k in runs),
                str(n_cycles), str(warm), str(int(stages)), str(tmp)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"exit {proc.returncode}\n{proc.stderr[-4000:]}")
        results = json.loads((tmp / "result.json").read_text())
        parts = _parse_dumps(tmp)
        for key, res in results.items():
            tag = key.replace("/", ".") + "."
            res["parts"] = {p[len(tag):]: v for p, v in parts.items() if p.startswith(tag)}
        return results
    finally:
        rec.kill()
        rec.wait()
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for f in tmp.iterdir():
                shutil.copy(f, keep / f.name)
        shutil.rmtree(tmp, ignore_errors=True)


def per_cycle(res: dict, part: str, threads: str = "all", loop: bool = True) -> float:
    """Instructions per output of ``part`` (``loop``: minus the driver's loop; ``threads``: all,
    main (the Python thread) or other)."""
    def ir(p):
        d = res["parts"].get(p, {})
        if threads == "main":
            return d.get(1, 0)
        if threads == "other":
            return sum(v for k, v in d.items() if k != 1)
        return sum(d.values())
    return (ir(part) - (ir("loop") if loop else 0)) / res["outputs"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--subjects", nargs="+", choices=("node", "floor"), default=["node", "floor"])
    ap.add_argument("--cycles", type=int, default=1000, help="measured cycles (outputs) per run")
    ap.add_argument("--warmup", type=int, default=200, help="cycles before the measurement")
    ap.add_argument("--stages", action="store_true", help="also each stage of the node's cycle alone")
    ap.add_argument("--keep", default="", help="copy the callgrind dumps into this folder")
    ap.add_argument("--json", default="", help="write the results to this file")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        runs, n, w, st, tmp = args.child
        return child([tuple(r.split(":")) for r in runs.split(",")], int(n), int(w), st == "1", Path(tmp))
    t = time.monotonic()
    runs = [(m, k) for m in args.modes for k in args.subjects]
    results = measure(runs, args.cycles, args.warmup, args.stages, Path(args.keep) if args.keep else None)
    print(f"instructions per cycle (callgrind, the Python thread; {time.monotonic() - t:.0f} s)")
    for mode in args.modes:
        for kind in args.subjects:
            r = results[f"{mode}/{kind}"]
            print(f"{mode:8s} {kind:5s}: {per_cycle(r, 'full'):9.0f}; {r['outputs']} outputs of {r['messages']} "
                  f"messages" + (f", {r['skipped']} skipped" if r.get("skipped") else ""), flush=True)
            for name in r.get("stages", []):
                print(f"    {name:34s} {per_cycle(r, name, loop=False):9.0f}")
        if f"{mode}/node" in results and f"{mode}/floor" in results and per_cycle(results[f"{mode}/floor"], "full"):
            a, b = results[f"{mode}/node"], results[f"{mode}/floor"]
            print(f"{mode:8s} node/floor: {per_cycle(a, 'full') / per_cycle(b, 'full'):.3f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
