#!/usr/bin/env python3
"""Compute cost of the actuated controller and real-time factor of the in-process actuated loop.

Figures, not assertions (the issue's targets are printed next to them; nothing fails on a slow
or shared machine):

* ``ActuatedController.command`` at ``feedforward_order`` 0, 1, 2 (the controller alone: the
  jets are precomputed, as the controller node receives them from geodyn_node): median and p99
  over ``--calls`` calls along Table 3. Target at order 2: <= 50 us.
* the whole in-process loop of ``geodyn_ros.examples.actuated_loop`` (reference, order-2 inverse
  dynamics, body-frame jet, controller, MuJoCo with rotors and elastic joints) over
  ``--seconds`` of simulated time: simulated time / wall time. Target: >= 1x real time.

    python bench/loops/bench_actuated.py [--calls 5000] [--seconds 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.loops.actuated import simulate_actuated, tilthex_source
from geodyn_ros.lie import Ad_inv
from geodyn_ros.trajectories import table3_reference


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args(argv)
    cfg = load_actuation_config()
    model = gd.load_urdf(tilthex_source(), locked_joints=list(cfg.rotor_joints))
    al = Allocation.from_frames(rotor_frames_from_model(model)[1], cfg.rotors)
    inputs = []
    for t in np.linspace(0.0, 30.0, 200):
        ref = table3_reference(t, 2)
        res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
        Wb = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body")
        C = ref.base_pose.copy()
        C[:3, 3] += 1e-3
        Vb = Ad_inv(ref.base_pose) @ ref.base_twist[0]
        inputs.append((C, Vb, ref.q[0], ref.q[1], ref.q[0], ref.q[1], ref.base_pose, Vb, ref.q, Wb, res.tau))
    print(f"controller compute per cycle ({args.calls} calls, jets precomputed); target at order 2: <= 50 us")
    for lvl in (0, 1, 2):
        c = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=lvl)
        for x in inputs[:50]:
            c.command(*x)
        ts = np.empty(args.calls)
        for k in range(args.calls):
            x = inputs[k % len(inputs)]
            t0 = time.perf_counter_ns()
            c.command(*x)
            ts[k] = time.perf_counter_ns() - t0
        print(f"  feedforward_order {lvl}: median {np.median(ts) / 1e3:6.1f} us   p99 {np.percentile(ts, 99) / 1e3:6.1f} us")
    for row in ("ff0", "ff2"):
        res = simulate_actuated(row, args.seconds, preroll=0.0)
        rtf = res.simulated_s / res.wall_time_s
        print(f"in-process actuated loop ({row}, {args.seconds:g} s simulated): {res.wall_time_s:.2f} s wall, "
              f"{rtf:.2f}x real time; target >= 1x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
