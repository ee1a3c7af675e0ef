#!/usr/bin/env python3
"""The share of ``odom`` messages ``geodyn_node`` answers on asynchronous sensor streams (issue 42).

Three processes besides this one, all on a private ``ROS_DOMAIN_ID`` (localhost discovery):

* ``geodyn_node`` (measured mode, order 2, ``stale_timeout`` 0.5 s, ``qos_depth`` 200: a recorder
  descheduled on a loaded machine then loses no output, which the default keep-last 2 would drop
  before it is acknowledged) with ``--policy`` (``latest``, the default, and/or ``exact``, the
  stamp pairing of before); the node's own counts (``/diagnostics``) are printed next to the
  recorder's;
* the recorder (``bench/ros/async_sensors.py record``): ``feedforward/jet`` and ``~/inputs_used``;
* the publisher (``bench/ros/async_sensors.py publish``): odom 250 Hz and joint_states 500 Hz
  (1.3 ms apart, best-effort), reference 100 Hz, each on its own clock (offset, rate error,
  jitter), 1-5 % of each dropped (seeded); it logs what it sent.

Per policy and seed it prints the odom messages sent in the window (0.2 s after the start to
0.05 s before the end), the share of them answered (an output whose ``~/inputs_used`` record
names that odom: ``latest`` stamps it with the odom, ``exact`` with the newer stamp of its pair),
and the joint_states ages of the records.
Figures, not assertions::

    python bench/ros/bench_async.py [--seconds 20] [--seeds 1 2] [--policy latest exact] [--load]

``--load``: two busy-loop processes keep both cores busy for the run.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
os.environ["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 100)
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
SCRIPT = str(REPO / "bench" / "ros" / "async_sensors.py")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def _stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run_one(policy: str, seed: int, seconds: float, tmp: Path) -> dict:
    from geodyn_ros.model.resources import shipped_urdf
    node = subprocess.Popen([sys.executable, "-m", "geodyn_ros.ros.nodes.geodyn_node", "--ros-args",
                             "-p", f"urdf_path:={shipped_urdf()}", "-p", "order:=2", "-p", "input_mode:=measured",
                             "-p", "stale_timeout:=0.5", "-p", f"input_policy:={policy}", "-p", "qos_depth:=200"],
                            env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sent, got = tmp / f"sent_{policy}_{seed}.npz", tmp / f"got_{policy}_{seed}.npz"
    try:
        # the recorder first, for the whole run; the publisher waits for the node's subscriptions
        rec = subprocess.Popen([sys.executable, SCRIPT, "record", "--seconds", str(seconds + 90.0), "--used",
                                "--log", str(got)], env=_env(), cwd=REPO)
        pub = subprocess.run([sys.executable, SCRIPT, "publish", "--seconds", str(seconds), "--seed", str(seed),
                              "--log", str(sent)], env=_env(), cwd=REPO, capture_output=True, text=True)
        if pub.returncode != 0:
            raise RuntimeError(pub.stderr)
        time.sleep(1.0)
        _stop(rec)   # (SIGINT: the recorder writes its log before exiting)
    finally:
        _stop(node)
    s, g = np.load(sent), np.load(got)
    odom = s["odom_stamps"]
    t0 = int(s["t0"])
    window = odom[(odom >= t0 + 200_000_000) & (odom <= t0 + int(seconds * 1e9) - 50_000_000)]
    outs = set(g["jet_stamps"].tolist())
    used = g["inputs_used"]
    # an odom is answered when an output's ~/inputs_used record names it (under exact the output
    # carries the newer stamp of its pair, often the joint_states')
    named = set((used[:, 2].astype(np.int64) * 1_000_000_000 + used[:, 3].astype(np.int64)).tolist()) if len(used) \
        else set()
    answered = sum(1 for t in window.tolist() if t in named)
    ages = (used[:, 0] * 1e9 + used[:, 1] - (used[:, 4] * 1e9 + used[:, 5])) * 1e-6 if len(used) else np.zeros(0)
    import ast
    return {"policy": policy, "seed": seed, "sent": len(window), "answered": answered,
            "node": ast.literal_eval(str(g["counters"])),
            "outputs": len(outs), "losses": tuple(float(s[f"{k}_loss"]) for k in ("odom", "joint_states", "reference")),
            "js_age_ms": (float(np.mean(ages)) if len(ages) else float("nan"),
                          float(np.max(np.abs(ages))) if len(ages) else float("nan"))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--policy", nargs="+", default=["latest", "exact"], choices=("latest", "exact"))
    ap.add_argument("--load", action="store_true", help="two busy-loop processes for the run")
    args = ap.parse_args(argv)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)] if args.load else []
    rows = []
    try:
        with tempfile.TemporaryDirectory() as d:
            for seed in args.seeds:
                for policy in args.policy:
                    r = run_one(policy, seed, args.seconds, Path(d))
                    rows.append(r)
                    print(f"  {policy:6s} seed {seed}: {r['answered']} of {r['sent']} odom answered "
                          f"({100 * r['answered'] / max(1, r['sent']):.2f} %), {r['outputs']} outputs; link losses "
                          f"odom/joint_states/reference {r['losses'][0]:.3f}/{r['losses'][1]:.3f}/{r['losses'][2]:.3f}; "
                          f"joint_states age mean {r['js_age_ms'][0]:.3f} ms, max |age| {r['js_age_ms'][1]:.3f} ms; "
                          f"the node's own counts {r['node']}", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print(f"geodyn_node on asynchronous streams (odom 250 Hz, joint_states 500 Hz, reference 100 Hz, own clocks, "
          f"1-5 % loss), {args.seconds:g} s per run{', both cores busy' if args.load else ''}, load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    for policy in args.policy:
        rs = [r for r in rows if r["policy"] == policy]
        print(f"  {policy:6s}: {100 * sum(r['answered'] for r in rs) / max(1, sum(r['sent'] for r in rs)):.2f} % of "
              f"{sum(r['sent'] for r in rs)} odom messages answered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
