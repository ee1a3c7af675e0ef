#!/usr/bin/env python3
"""Per-call time of geodyn_ros inverse/forward dynamics vs Pinocchio, measured in one run.

For the shipped 12-DoF aerial manipulator (paper Sec. 7.1) and r = 0..5 it prints the
median wall time per Python call of ``gd.inverse_dynamics`` / ``gd.forward_dynamics``
next to ``pin.rnea`` / ``pin.aba`` (free-flyer model of the same URDF), the ratios, and
the paper's reported times (Fig. 3 caption, i7-12700H laptop, their implementation).

Figures, not assertions: nothing here fails on a slow machine.

    python bench/core/bench_core.py [--reps 2000] [--repeats 15] [--csv out/bench_core.csv]
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import geodyn_ros as gd  # noqa: E402
from geodyn_ros.lie import exp_se3, matrix_to_quat  # noqa: E402

PAPER_ID_US = (2.326, 3.078, 2.867, 4.355, 5.960, 8.171)
PAPER_FD_US = (4.106, 4.802, 6.486, 6.461, 8.589, 11.085)


def median_call_us(fn, reps, repeats):
    """Median over ``repeats`` batches of the mean time of ``reps`` calls, in microseconds."""
    for _ in range(min(reps, 200)):
        fn()
    batches = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        batches.append((time.perf_counter() - t0) / reps * 1e6)
    return statistics.median(batches)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--orders", type=int, default=5)
    ap.add_argument("--csv", default=str(REPO / "out" / "bench_core.csv"))
    args = ap.parse_args(argv)

    urdf = REPO / "urdf" / "aerial_manipulator.urdf"
    t0 = time.perf_counter()
    model = gd.load_urdf(urdf)
    n = model.n_joints
    rng = np.random.default_rng(0)
    C = exp_se3(rng.normal(size=6) * 0.5)
    R = args.orders
    V = rng.normal(size=(R + 2, 6)) * 0.5
    q = rng.normal(size=(R + 3, n)) * 0.5
    W = rng.normal(size=(R + 1, 6))
    T = rng.normal(size=(R + 1, n)) * 0.1
    # cold start: first call of each order includes loading the numba cache (or compiling)
    cold = time.perf_counter()
    gd.inverse_dynamics(model, C, V, q, order=0)
    gd.forward_dynamics(model, C, V, q, W, T, order=0)
    cold = time.perf_counter() - cold
    print(f"cold start: URDF load + first ID/FD calls {1e3 * (time.perf_counter() - t0):.0f} ms "
          f"(of which first calls {1e3 * cold:.0f} ms: numba cache load, or compile on a fresh checkout)")

    import pinocchio as pin
    pm = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
    pd = pm.createData()
    qp = pin.neutral(pm)
    qp[:3], qp[3:7] = C[:3, 3], matrix_to_quat(C[:3, :3])
    qp[7:] = q[0]
    vp, ap_ = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    tp = pin.rnea(pm, pd, qp, vp, ap_)
    t_rnea = median_call_us(lambda: pin.rnea(pm, pd, qp, vp, ap_), args.reps, args.repeats)
    t_aba = median_call_us(lambda: pin.aba(pm, pd, qp, vp, tp), args.reps, args.repeats)

    rows = []
    print(f"\n12-DoF aerial manipulator, {os.cpu_count()} CPUs; median per Python call (us)")
    print(f"pin.rnea {t_rnea:.2f} us   pin.aba {t_aba:.2f} us   (Pinocchio {pin.__version__}, same run)\n")
    hdr = f"{'r':>2} {'ID us':>8} {'ID/rnea':>8} {'paper ID':>9} {'FD us':>8} {'FD/aba':>8} {'paper FD':>9}"
    print(hdr)
    print("-" * len(hdr))
    for r in range(R + 1):
        tid = median_call_us(lambda: gd.inverse_dynamics(model, C, V, q, order=r), args.reps, args.repeats)
        tfd = median_call_us(lambda: gd.forward_dynamics(model, C, V, q, W, T, order=r), args.reps, args.repeats)
        pid = PAPER_ID_US[r] if r < len(PAPER_ID_US) else float("nan")
        pfd = PAPER_FD_US[r] if r < len(PAPER_FD_US) else float("nan")
        rows.append(dict(order=r, id_us=tid, id_over_rnea=tid / t_rnea, paper_id_us=pid,
                         fd_us=tfd, fd_over_aba=tfd / t_aba, paper_fd_us=pfd, rnea_us=t_rnea, aba_us=t_aba))
        print(f"{r:>2} {tid:8.2f} {tid / t_rnea:8.2f} {pid:9.2f} {tfd:8.2f} {tfd / t_aba:8.2f} {pfd:9.2f}")
    print(f"\nr={R} / r=0: inverse {rows[-1]['id_us'] / rows[0]['id_us']:.2f}x, "
          f"forward {rows[-1]['fd_us'] / rows[0]['fd_us']:.2f}x")
    if args.csv:
        write_csv(args.csv, rows)


def write_csv(path, rows) -> None:
    """Write the rows (dicts with the same keys) to ``path`` as CSV and say so."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
