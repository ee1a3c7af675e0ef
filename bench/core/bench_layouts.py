#!/usr/bin/env python3
"""Per-call cost of input layouts, and order-0 parity with Pinocchio, measured in one run.

On the shipped 12-DoF aerial manipulator it times ``gd.inverse_dynamics`` and
``gd.forward_dynamics`` (and the same two of a ``gd.Workspace``, the nodes' entry) at orders 0 and 5 with every array argument given as: C-contiguous
float64 (the reference), Fortran order, a transposed view, a strided slice, read-only, float32
and Python lists, and prints each layout's time divided by the C-contiguous float64 call (goal
<= 1.2x). Then it prints the order-0 calls (plain functions and the lean ``gd.Workspace``
entry) divided by ``pin.rnea`` / ``pin.aba`` on a free-flyer model of the same URDF.

The variants are timed round-robin (one batch of each in turn, ``--repeats`` times) and each
figure is the median over batches, so a burst of load on a shared machine hits all of them.
Figures, not assertions: nothing here fails on a slow machine.

    python bench/core/bench_layouts.py [--reps 2000] [--repeats 15] [--csv out/bench_layouts.csv]
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
from geodyn_ros.lie import exp_se3, matrix_to_quat  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import write_csv  # noqa: E402


def _transposed(a):
    return np.ascontiguousarray(a.T).T


def _strided(a):
    big = np.zeros((a.shape[0], 2 * a.shape[1]))
    big[:, ::2] = a
    return big[:, ::2]


def _readonly(a):
    b = a.copy()
    b.flags.writeable = False
    return b


LAYOUTS = {
    "C float64": lambda a: a,
    "Fortran": np.asfortranarray,
    "transposed": _transposed,
    "strided": _strided,
    "read-only": _readonly,
    "float32": lambda a: a.astype(np.float32),
    "list": lambda a: a.tolist(),
}
#: variants in which only ``q`` (the joint jet) comes in another form, the others C float64
ONLY_Q = {"float32 q": lambda a: a.astype(np.float32), "list q": lambda a: a.tolist()}
VARIANTS = list(LAYOUTS) + list(ONLY_Q)


def round_robin_us(fns: dict, reps: int, repeats: int) -> dict:
    """Median over ``repeats`` rounds of the mean time of ``reps`` calls of each function (µs);
    in each round every function runs one batch, in turn."""
    for fn in fns.values():
        for _ in range(min(reps, 200)):
            fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            times[k].append((time.perf_counter() - t0) / reps * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def setup(seed=0, order=5):
    urdf = REPO / "urdf" / "aerial_manipulator.urdf"
    model = gd.load_urdf(urdf)
    n = model.n_joints
    rng = np.random.default_rng(seed)
    C = exp_se3(rng.normal(size=6) * 0.5)
    V = rng.normal(size=(order + 2, 6)) * 0.5
    q = rng.normal(size=(order + 3, n)) * 0.5
    W = rng.normal(size=(order + 1, 6))
    T = rng.normal(size=(order + 1, n)) * 0.1
    return urdf, model, C, V, q, W, T


def layout_table(model, C, V, q, W, T, orders, reps, repeats):
    """Rows (function, order, layout, µs, ratio to C float64)."""
    rows = []
    for r in orders:
        ws = gd.Workspace(model, r)
        for name in ("inverse_dynamics", "forward_dynamics", "Workspace.inverse_dynamics",
                     "Workspace.forward_dynamics"):
            calls = {}
            for lay in VARIANTS:
                if lay in LAYOUTS:
                    a = [LAYOUTS[lay](x) for x in (C, V[:r + 2], q[:r + 3], W[:r + 1], T[:r + 1])]
                else:
                    a = [C, V[:r + 2], ONLY_Q[lay](q[:r + 3]), W[:r + 1], T[:r + 1]]
                if name == "inverse_dynamics":
                    calls[lay] = (lambda a=a, r=r: gd.inverse_dynamics(model, a[0], a[1], a[2], r))
                elif name == "forward_dynamics":
                    calls[lay] = (lambda a=a, r=r: gd.forward_dynamics(model, a[0], a[1], a[2], a[3], a[4], r))
                elif name == "Workspace.inverse_dynamics":   # (outputs owned by ws: the reference is copied)
                    calls[lay] = (lambda a=a: ws.inverse_dynamics(a[0], a[1], a[2]))
                else:
                    calls[lay] = (lambda a=a: ws.forward_dynamics(*a))
            ref_out = [x.copy() for x in calls["C float64"]()]
            for lay, fn in calls.items():   # the same answer in every layout (float32: close)
                out = fn()
                # float64 layouts run the C- or the any-layout specialisation of the same kernel;
                # with the fast-math contraction flags their last bits may differ (1e-12 bound)
                tol = 1e-5 if lay.startswith("float32") else 1e-12
                for x, y in zip(out, ref_out):
                    assert np.abs(x - y).max() <= tol * max(1.0, np.abs(y).max()), (name, r, lay)
            t = round_robin_us(calls, reps, repeats)
            for lay in VARIANTS:
                rows.append(dict(kind="layout", function=name, order=r, variant=lay, us=t[lay],
                                 ratio=t[lay] / t["C float64"], baseline="C float64"))
    return rows


def parity_table(urdf, model, C, V, q, W, T, reps, repeats):
    """Rows (function, order 0, variant, µs, ratio to pin.rnea / pin.aba), one round-robin run."""
    import pinocchio as pin
    pm = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
    pdat = pm.createData()
    qp = pin.neutral(pm)
    qp[:3], qp[3:7] = C[:3, 3], matrix_to_quat(C[:3, :3])
    qp[7:] = q[0]
    rng = np.random.default_rng(1)
    vp, ap = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    tp = pin.rnea(pm, pdat, qp, vp, ap)
    V0, q0, W0, T0 = V[:2].copy(), q[:3].copy(), W[:1].copy(), T[:1].copy()
    calls = {
        "pin.rnea": lambda: pin.rnea(pm, pdat, qp, vp, ap),
        "pin.aba": lambda: pin.aba(pm, pdat, qp, vp, tp),
        "gd.inverse_dynamics": lambda: gd.inverse_dynamics(model, C, V0, q0),
        "gd.forward_dynamics": lambda: gd.forward_dynamics(model, C, V0, q0, W0, T0),
    }
    if hasattr(gd, "Workspace"):
        ws = gd.Workspace(model, 0)
        calls["Workspace.inverse_dynamics"] = lambda: ws.inverse_dynamics(C, V0, q0)
        calls["Workspace.forward_dynamics"] = lambda: ws.forward_dynamics(C, V0, q0, W0, T0)
    t = round_robin_us(calls, reps, repeats)
    rows = []
    for k, us in t.items():
        base = None if k.startswith("pin.") else ("pin.rnea" if "inverse" in k else "pin.aba")
        rows.append(dict(kind="parity", function=k, order=0, variant="C float64", us=us,
                         ratio=us / t[base] if base else 1.0, baseline=base or "-"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--orders", type=int, nargs="+", default=[0, 5])
    ap.add_argument("--csv", default=str(REPO / "out" / "bench_layouts.csv"))
    args = ap.parse_args(argv)

    urdf, model, C, V, q, W, T = setup(order=max(args.orders))
    rows = layout_table(model, C, V, q, W, T, args.orders, args.reps, args.repeats)
    print("12-DoF aerial manipulator; median µs per Python call; every array argument in the layout "
          "(last two columns: only q)")
    print(f"{'function':<26} {'r':>2} " + " ".join(f"{k:>11}" for k in VARIANTS))
    for r in args.orders:
        for name in ("inverse_dynamics", "forward_dynamics", "Workspace.inverse_dynamics",
                     "Workspace.forward_dynamics"):
            sel = {x["variant"]: x for x in rows if x["function"] == name and x["order"] == r}
            print(f"{name:<26} {r:>2} " + " ".join(f"{sel[k]['us']:11.2f}" for k in VARIANTS))
            print(f"{'  / C float64':<26} {'':>2} " + " ".join(f"{sel[k]['ratio']:10.2f}x" for k in VARIANTS))
    prow = parity_table(urdf, model, C, V, q, W, T, args.reps, args.repeats)
    rows += prow
    print("\norder 0 vs Pinocchio (same run):")
    for x in prow:
        ratio = f"{x['ratio']:.2f}x {x['baseline']}" if x["baseline"] != "-" else ""
        print(f"  {x['function']:<28} {x['us']:7.2f} µs  {ratio}")
    if args.csv:
        write_csv(args.csv, rows)
    return rows


if __name__ == "__main__":
    main()
