#!/usr/bin/env python3
"""The flat map's cost against inverse dynamics of the same order, measured in one run.

For the under-actuated aerial manipulator (``urdf/hexarotor_manipulator.urdf.xacro`` with the rotor
joints locked: the paper's 12-DoF robot plus six rotor masses) and r = 0..3 (``--orders``) it
prints the median wall time per Python call of ``gd.flat_inverse_dynamics`` (CoM, yaw and joint
jets -> pose, twist, wrench, tau, thrust and body-torque jets) and of ``gd.inverse_dynamics`` at the
same order on the state the map returns, their ratio (goal: <= 3), ``pin.rnea`` of the same model
for scale, and the 3000-sample trajectory form of both. Calls are timed round-robin (A, B, A, B,
...) so that load on the machine hits both alike.

Figures, not assertions: nothing here fails on a slow machine.

    python bench/core/bench_flat.py [--reps 2000] [--repeats 15] [--orders 3] [--csv out/bench_flat.csv]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import geodyn_ros as gd  # noqa: E402
from bench_core import write_csv  # noqa: E402
from geodyn_ros.control.rotors import load_actuation_config  # noqa: E402
from geodyn_ros.lie import matrix_to_quat  # noqa: E402
from geodyn_ros.trajectories import figure_eight_reference  # noqa: E402


def round_robin_us(fns, reps, repeats):
    """Median (over ``repeats`` rounds) of the mean time of ``reps`` calls of each function, the
    functions taking turns in every round; microseconds."""
    for f in fns:
        for _ in range(min(reps, 200)):
            f()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for k, f in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            times[k].append((time.perf_counter() - t0) / reps * 1e6)
    return [statistics.median(t) for t in times]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--orders", type=int, default=3)
    ap.add_argument("--samples", type=int, default=3000, help="samples of the trajectory form (0: skip)")
    ap.add_argument("--csv", default=str(REPO / "out" / "bench_flat.csv"))
    args = ap.parse_args(argv)
    cfg = load_actuation_config("hexarotor")
    src = REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"
    model = gd.load_urdf(src, locked_joints=list(cfg.rotor_joints))
    n = model.n_joints
    import pinocchio as pin
    import xacro
    urdf_xml = xacro.process_file(str(src)).toxml()
    pm = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
    pdata = pm.createData()
    rng = np.random.default_rng(0)
    qp = pin.neutral(pm)
    vp, ap_ = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    print(f"{model}\nmedian per Python call [us], {args.repeats} rounds of {args.reps} calls, round-robin")
    hdr = f"{'r':>2} {'flat map':>9} {'ID':>8} {'flat/ID':>8} {'pin.rnea':>9} {'flat/rnea':>10}"
    print(hdr + "\n" + "-" * len(hdr))
    rows = []
    for r in range(args.orders + 1):
        ref = figure_eight_reference(1.234, r)
        com, yaw, q = ref.com, ref.yaw, ref.q
        res = gd.flat_inverse_dynamics(model, com, yaw, q, r)
        C, V = res.base_pose, res.base_twist
        gd.inverse_dynamics(model, C, V, q, r)
        qp[:3], qp[3:7] = C[:3, 3], matrix_to_quat(C[:3, :3])
        qp[7:7 + n] = q[0]
        tf, ti, tp = round_robin_us([lambda: gd.flat_inverse_dynamics(model, com, yaw, q, r),
                                     lambda: gd.inverse_dynamics(model, C, V, q, r),
                                     lambda: pin.rnea(pm, pdata, qp, vp, ap_)], args.reps, args.repeats)
        rows.append(dict(order=r, flat_us=tf, id_us=ti, flat_over_id=tf / ti, rnea_us=tp, flat_over_rnea=tf / tp))
        print(f"{r:>2} {tf:9.2f} {ti:8.2f} {tf / ti:8.2f} {tp:9.2f} {tf / tp:10.2f}")
    worst = max(x["flat_over_id"] for x in rows)
    print(f"\nflat map / inverse dynamics, worst over r = 0..{args.orders}: {worst:.2f} (goal <= 3: "
          f"{'met' if worst <= 3 else 'MISSED'})")
    if args.samples:
        T = args.samples
        ts = np.linspace(0.0, 30.0, T)
        r = 2
        refs = [figure_eight_reference(t, r) for t in ts]
        com = np.array([x.com for x in refs])
        yaw = np.array([x.yaw for x in refs])
        q = np.array([x.q for x in refs])
        res = gd.flat_inverse_dynamics(model, com, yaw, q, r)
        tf, ti = round_robin_us([lambda: gd.flat_inverse_dynamics(model, com, yaw, q, r),
                                 lambda: gd.inverse_dynamics(model, res.base_pose, res.base_twist, q, r)], 3, 5)
        print(f"trajectory form, {T} samples, r = {r}: flat map {tf / 1e3:.2f} ms, ID {ti / 1e3:.2f} ms "
              f"({tf / ti:.2f}x)")
        rows.append(dict(order=f"batch{T}_r{r}", flat_us=tf, id_us=ti, flat_over_id=tf / ti, rnea_us=float("nan"),
                         flat_over_rnea=float("nan")))
    if args.csv:
        write_csv(args.csv, rows)


if __name__ == "__main__":
    main()
