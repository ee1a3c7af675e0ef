#!/usr/bin/env python3
"""The paper's Table 4 / Fig. 4 on this machine: geodyn_ros vs Pinocchio vs CasADi, one run.

Sections (each printed as it finishes, all rows written to ``<out>/bench_table4.csv``, figures
to ``<out>/bench_table4.png``):

1. **12-DoF** aerial manipulator (Sec. 7.1): ``gd.inverse_dynamics`` / ``gd.forward_dynamics``
   r = 0..5 next to ``pin.rnea`` / ``pin.aba`` (free-flyer model of the same URDF); ratios.
2. **Scaling in N**: the Table 4 tree, N = 1 + 5K bodies (5 branches of K), r = 0..5, with
   ``pin.rnea`` / ``pin.aba`` on the same trees; fitted exponent ``a`` of time ~ N^a.
3. **Scaling in r** at N = 101: r = 0..10; fitted exponent ``b`` of time ~ r^b (r >= 1).
4. **AD baseline** (as the paper ran it): the order-0 inverse dynamics map of the same model in
   CasADi SX, its r-th time derivative built once with nested ``jtimes`` outside the timed loop
   (in a child process with a time budget), evaluated with JIT off; optionally CasADi's
   generated C compiled with ``gcc -O3``. 12-DoF and N = 101.
5. **Trajectory batch**: the Table 3 reference, 3000 samples, ID and FD at r = 0..5 in one call
   (leading time axis, all cores) vs 3000 single calls of ``pin.rnea`` / ``pin.aba``.
6. **Cold start**: a fresh interpreter's import, URDF load and first call (numba's on-disk cache
   loaded) vs the warm per-call time.

Every figure is a median over repeated batches of calls in this process; the ratios compare
numbers measured in the same run. Nothing here is a pass/fail assertion.

    python bench/core/bench_table4.py            # short sweep (a few minutes)
    python bench/core/bench_table4.py --full     # K up to 199 (N = 996), CasADi up to r = 8
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "core"))

import geodyn_ros as gd  # noqa: E402
from geodyn_ros.lie import exp_se3, matrix_to_quat  # noqa: E402
from geodyn_ros.trajectories import table3_reference  # noqa: E402
from make_tree_urdf import branched_tree_urdf  # noqa: E402

SHORT_K = (1, 2, 4, 8, 20, 40)
FULL_K = (1, 2, 4, 8, 20, 40, 80, 120, 160, 199)
SECTIONS = ("N", "r", "casadi", "batch", "cold")


# ----------------------------------------------------------------------------- reporting
class Progress:
    """A one-line text progress bar on stderr (no dependency)."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.done, self.enabled = max(total, 1), 0, enabled and sys.stderr.isatty()
        self.t0 = time.perf_counter()

    def step(self, label: str, amount: int = 1):
        self.done += amount
        if not self.enabled:
            return
        frac = min(self.done / self.total, 1.0)
        bar = "#" * int(30 * frac) + "." * (30 - int(30 * frac))
        sys.stderr.write(f"\r[{bar}] {self.done}/{self.total} {time.perf_counter() - self.t0:6.1f} s "
                         f"{label[:40]:<40}")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")


class Rows:
    """Collects CSV rows: section, model, N, n_dof, r, impl, us_per_call, note."""

    FIELDS = ("section", "model", "N", "dof", "r", "impl", "us_per_call", "note")

    def __init__(self):
        self.rows = []

    def add(self, section, model, N, dof, r, impl, us, note=""):
        self.rows.append(dict(section=section, model=model, N=N, dof=dof, r=r, impl=impl,
                              us_per_call=(f"{us:.4f}" if us is not None and math.isfinite(us) else ""),
                              note=note))

    def write(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.FIELDS)
            w.writeheader()
            w.writerows(self.rows)


# ----------------------------------------------------------------------------- timing
def per_call_us(fn, target_s=0.02, repeats=7):
    """Median over ``repeats`` batches of the mean wall time of one call, in microseconds; the
    batch size is chosen so a batch lasts about ``target_s``."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    reps = int(min(20000, max(1, target_s / one)))
    for _ in range(min(reps, 50)):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - t0) / reps * 1e6)
    return statistics.median(out)


def fit_exponent(x, y):
    """Least-squares slope of log y against log x."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    return float(np.polyfit(lx, ly, 1)[0])


# ----------------------------------------------------------------------------- models and states
def tree_urdf_path(K: int, tmp: Path) -> Path:
    p = tmp / f"tree_K{K}.urdf"
    if not p.exists():
        p.write_text(branched_tree_urdf(K))
    return p


def random_state(model, R, seed=0):
    rng = np.random.default_rng(seed)
    n = model.n_joints
    return dict(C=exp_se3(rng.normal(size=6) * 0.5), V=rng.normal(size=(R + 2, 6)) * 0.5,
                q=rng.normal(size=(R + 3, n)) * 0.5, W=rng.normal(size=(R + 1, 6)),
                tau=rng.normal(size=(R + 1, n)) * 0.1)


class PinModel:
    """Pinocchio free-flyer model of a URDF with the state of :func:`random_state` (body twist,
    linear first; see CONVENTIONS.md). Only timing is taken from it here."""

    def __init__(self, urdf: Path, s):
        import pinocchio as pin
        self.pin = pin
        self.m = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
        self.d = self.m.createData()
        n = self.m.nv - 6
        qp = pin.neutral(self.m)
        qp[:3], qp[3:7] = s["C"][:3, 3], matrix_to_quat(s["C"][:3, :3])
        qp[7:] = s["q"][0, :n]
        self.q = qp
        self.v = np.concatenate([s["V"][0, 3:], s["V"][0, :3], s["q"][1, :n]])
        self.a = np.concatenate([s["V"][1, 3:], s["V"][1, :3], s["q"][2, :n]])
        self.tau = np.concatenate([s["W"][0, 3:], s["W"][0, :3], s["tau"][0, :n]])

    def rnea(self):
        return self.pin.rnea(self.m, self.d, self.q, self.v, self.a)

    def aba(self):
        return self.pin.aba(self.m, self.d, self.q, self.v, self.tau)


def time_ours(model, s, r):
    C, V, q, W, T = s["C"], s["V"][:r + 2], s["q"][:r + 3], s["W"][:r + 1], s["tau"][:r + 1]
    tid = per_call_us(lambda: gd.inverse_dynamics(model, C, V, q, r))
    tfd = per_call_us(lambda: gd.forward_dynamics(model, C, V, q, W, T, r))
    return tid, tfd


# ----------------------------------------------------------------------------- sections
def section_12dof(rows, prog, R):
    urdf = REPO / "urdf" / "aerial_manipulator.urdf"
    model = gd.load_urdf(urdf)
    s = random_state(model, R)
    pm = PinModel(urdf, s)
    t_rnea, t_aba = per_call_us(pm.rnea), per_call_us(pm.aba)
    rows.add("12dof", "aerial_manipulator", model.n_bodies, model.nv, 0, "pin.rnea", t_rnea)
    rows.add("12dof", "aerial_manipulator", model.n_bodies, model.nv, 0, "pin.aba", t_aba)
    print(f"\n== 12-DoF aerial manipulator (N = {model.n_bodies}) ==")
    print(f"pin.rnea {t_rnea:7.2f} us   pin.aba {t_aba:7.2f} us")
    print(f"{'r':>2} {'ID us':>9} {'ID/rnea':>8} {'FD us':>9} {'FD/aba':>8}")
    out = {}
    for r in range(R + 1):
        tid, tfd = time_ours(model, s, r)
        out[r] = (tid, tfd)
        rows.add("12dof", "aerial_manipulator", model.n_bodies, model.nv, r, "geodyn.ID", tid)
        rows.add("12dof", "aerial_manipulator", model.n_bodies, model.nv, r, "geodyn.FD", tfd)
        print(f"{r:>2} {tid:9.2f} {tid / t_rnea:8.2f} {tfd:9.2f} {tfd / t_aba:8.2f}")
        prog.step(f"12-DoF r={r}")
    return model, s, out, (t_rnea, t_aba)


def section_scaling_N(rows, prog, Ks, R, tmp):
    print(f"\n== Scaling in N (5 branches, N = 1 + 5K), r = 0..{R} ==")
    res = {}
    for K in Ks:
        path = tree_urdf_path(K, tmp)
        model = gd.load_urdf(path)
        N = model.n_bodies
        s = random_state(model, R, seed=K)
        pm = PinModel(path, s)
        t_rnea, t_aba = per_call_us(pm.rnea), per_call_us(pm.aba)
        rows.add("scaling_N", f"tree_K{K}", N, model.nv, 0, "pin.rnea", t_rnea)
        rows.add("scaling_N", f"tree_K{K}", N, model.nv, 0, "pin.aba", t_aba)
        line = [f"N={N:4d}  rnea {t_rnea:8.2f}  aba {t_aba:8.2f} |"]
        res[N] = {"rnea": t_rnea, "aba": t_aba}
        for r in range(R + 1):
            tid, tfd = time_ours(model, s, r)
            res[N][("ID", r)] = tid
            res[N][("FD", r)] = tfd
            rows.add("scaling_N", f"tree_K{K}", N, model.nv, r, "geodyn.ID", tid)
            rows.add("scaling_N", f"tree_K{K}", N, model.nv, r, "geodyn.FD", tfd)
            line.append(f" r{r} {tid:8.1f}/{tfd:8.1f}")
            prog.step(f"N={N} r={r}")
        print("".join(line) + "   (ID/FD us)")
    Ns = sorted(res)
    big = [N for N in Ns if N >= 21] if len([N for N in Ns if N >= 21]) >= 2 else Ns
    exps = {}
    print(f"fitted a (time ~ N^a) over N in {big}:")
    for kind in ("ID", "FD"):
        a = [fit_exponent(big, [res[N][(kind, r)] for N in big]) for r in range(R + 1)]
        exps[kind] = a
        print(f"  {kind}: " + "  ".join(f"r{r} {x:.3f}" for r, x in enumerate(a)))
        for r, x in enumerate(a):
            rows.add("fit_a", "tree", "", "", r, f"geodyn.{kind}", None, f"a={x:.4f}")
    for name in ("rnea", "aba"):
        x = fit_exponent(big, [res[N][name] for N in big])
        exps[name] = x
        print(f"  pin.{name}: {x:.3f}")
        rows.add("fit_a", "tree", "", "", 0, f"pin.{name}", None, f"a={x:.4f}")
    return res, exps


def section_scaling_r(rows, prog, rmax, tmp, K=20):
    path = tree_urdf_path(K, tmp)
    model = gd.load_urdf(path)
    s = random_state(model, rmax, seed=99)
    print(f"\n== Scaling in r at N = {model.n_bodies}, r = 0..{rmax} ==")
    res = {}
    for r in range(rmax + 1):
        tid, tfd = time_ours(model, s, r)
        res[r] = (tid, tfd)
        rows.add("scaling_r", f"tree_K{K}", model.n_bodies, model.nv, r, "geodyn.ID", tid)
        rows.add("scaling_r", f"tree_K{K}", model.n_bodies, model.nv, r, "geodyn.FD", tfd)
        print(f"r={r:2d}  ID {tid:9.1f} us  FD {tfd:9.1f} us")
        prog.step(f"N=101 r={r}")
    rs = [r for r in range(1, rmax + 1)]
    b = {kind: fit_exponent(rs, [res[r][i] for r in rs]) for i, kind in enumerate(("ID", "FD"))}
    print(f"fitted b (time ~ r^b over r = 1..{rmax}): ID {b['ID']:.3f}  FD {b['FD']:.3f}")
    for kind in b:
        rows.add("fit_b", f"tree_K{K}", model.n_bodies, model.nv, "", f"geodyn.{kind}", None, f"b={b[kind]:.4f}")
    return model, s, res, b


def section_casadi(rows, prog, models, rmax, budget_s, use_gcc, tmp, c_budget_s):
    """models: list of (label, model, state). Returns {label: {r: dict}}."""
    try:
        import casadi as ca
        import casadi_baseline as cb
    except ImportError as exc:
        print(f"\n== CasADi baseline skipped: {exc} ==")
        return {}
    print(f"\n== AD baseline: CasADi {ca.__version__} SX, nested jtimes, JIT off "
          f"(build budget {budget_s:g} s per order) ==")
    xs = ca.SX.sym("x")
    floor = ca.Function("identity", [xs], [xs * 1.0])
    t_floor = cb.time_eval(floor, np.ones(1), reps=2000)
    print(f"CasADi Python call floor (1-input function): {t_floor:.2f} us")
    rows.add("casadi", "-", "", "", "", "casadi.call_floor", t_floor)
    out = {}
    for label, model, s in models:
        print(f"-- {label} (N = {model.n_bodies}) --")
        print(f"{'r':>2} {'build s':>8} {'nodes':>10} {'SX us':>10} {'C us':>9} {'ours us':>9} "
              f"{'SX/ours':>8} {'C/ours':>8}")
        out[label] = {}
        stop = ""
        c_stop = "" if use_gcc else "not requested"
        for r in range(rmax + 1):
            if stop:
                prog.step(f"{label} CasADi r={r} skipped")
                continue
            b = cb.build_with_budget(model, r, budget_s)
            if b.status != "ok":
                stop = b.message
                print(f"{r:>2} {b.message}")
                rows.add("casadi", label, model.n_bodies, model.nv, r, "casadi.SX", None, b.message)
                prog.step(f"{label} CasADi r={r}")
                continue
            x = cb.pack_inputs(model, s["C"], s["V"], s["q"], r)
            # correctness first: the AD derivative must equal our row r
            ours = gd.inverse_dynamics(model, s["C"], s["V"][:r + 2], s["q"][:r + 3], r)
            ref = np.concatenate([ours.base_wrench[r], ours.tau[r]])
            val = np.asarray(b.f(x)).ravel()
            err = float(np.abs(val - ref).max() / max(1.0, np.abs(ref).max()))
            t_sx = cb.time_eval(b.f, x, reps=cb._reps_for(50 * (r + 1)), repeats=5)
            t_c = None
            if not c_stop:
                t0 = time.perf_counter()
                fc = cb.compile_c(b.f, tmp / f"cgen_{label}_{r}", timeout_s=c_budget_s)
                if fc is None:   # gcc missing, failed, or over budget: larger orders only grow
                    c_stop = f"gcc -O3 did not finish within {c_budget_s:g} s at r={r}"
                    print(f"   ({c_stop}; no compiled-C figures from here on)")
                    rows.add("casadi", label, model.n_bodies, model.nv, r, "casadi.C_O3", None, c_stop)
                else:
                    rows.add("casadi", label, model.n_bodies, model.nv, r, "casadi.C_O3.compile_s", None,
                             f"compile_s={time.perf_counter() - t0:.1f}")
                    t_c = cb.time_eval(fc, x, reps=cb._reps_for(5 * (r + 1)), repeats=5)
            t_ours = per_call_us(lambda: gd.inverse_dynamics(model, s["C"], s["V"][:r + 2], s["q"][:r + 3], r))
            out[label][r] = dict(build=b.build_s, nodes=b.n_nodes, sx=t_sx, c=t_c, ours=t_ours, err=err)
            rows.add("casadi", label, model.n_bodies, model.nv, r, "casadi.SX", t_sx,
                     f"build_s={b.build_s:.3f};nodes={b.n_nodes};rel_err_vs_geodyn={err:.1e}")
            if t_c is not None:
                rows.add("casadi", label, model.n_bodies, model.nv, r, "casadi.C_O3", t_c)
            rows.add("casadi", label, model.n_bodies, model.nv, r, "geodyn.ID", t_ours)
            cstr = f"{t_c:9.2f}" if t_c is not None else f"{'-':>9}"
            crat = f"{t_c / t_ours:8.2f}" if t_c is not None else f"{'-':>8}"
            print(f"{r:>2} {b.build_s:8.2f} {b.n_nodes:10d} {t_sx:10.2f} {cstr} {t_ours:9.2f} "
                  f"{t_sx / t_ours:8.1f} {crat}   (AD vs ours rel. diff {err:.1e})")
            prog.step(f"{label} CasADi r={r}")
    return out


def _table3_trajectory(T, R):
    ts = np.linspace(0.0, 30.0, T, endpoint=False)
    refs = [table3_reference(t, R) for t in ts]
    return (np.stack([x.base_pose for x in refs]), np.stack([x.base_twist for x in refs]),
            np.stack([x.q for x in refs]))


def section_batch(rows, prog, model, T=3000, R=5):
    import numba
    urdf = REPO / "urdf" / "aerial_manipulator.urdf"
    C, V, q = _table3_trajectory(T, R)
    s0 = dict(C=C[0], V=V[0], q=q[0], W=np.zeros((R + 1, 6)), tau=np.zeros((R + 1, model.n_joints)))
    pm = PinModel(urdf, s0)
    t_rnea = per_call_us(lambda: [pm.rnea() for _ in range(T)], repeats=5) / 1e3
    t_aba = per_call_us(lambda: [pm.aba() for _ in range(T)], repeats=5) / 1e3
    print(f"\n== Trajectory batch: Table 3, T = {T} samples, {numba.get_num_threads()} threads ==")
    print(f"{T} x pin.rnea {t_rnea:7.2f} ms    {T} x pin.aba {t_aba:7.2f} ms")
    rows.add("batch", "aerial_manipulator", model.n_bodies, model.nv, 0, f"pin.rnea x{T}", t_rnea * 1e3)
    rows.add("batch", "aerial_manipulator", model.n_bodies, model.nv, 0, f"pin.aba x{T}", t_aba * 1e3)
    print(f"{'r':>2} {'ID batch ms':>12} {'/rnea':>7} {'ID loop ms':>11} {'FD batch ms':>12} {'/aba':>7}")
    res = {}
    for r in range(R + 1):
        Cr, Vr, qr = C, np.ascontiguousarray(V[:, :r + 2]), np.ascontiguousarray(q[:, :r + 3])
        inv = gd.inverse_dynamics(model, Cr, Vr, qr, r)
        W, Tq = inv.base_wrench, inv.tau
        t_id = per_call_us(lambda: gd.inverse_dynamics(model, Cr, Vr, qr, r), repeats=5) / 1e3
        t_fd = per_call_us(lambda: gd.forward_dynamics(model, Cr, Vr, qr, W, Tq, r), repeats=5) / 1e3
        t_loop = per_call_us(lambda: [gd.inverse_dynamics(model, Cr[t], Vr[t], qr[t], r) for t in range(T)],
                             target_s=0.05, repeats=3) / 1e3
        res[r] = (t_id, t_fd, t_loop)
        rows.add("batch", "aerial_manipulator", model.n_bodies, model.nv, r, f"geodyn.ID batch T={T}", t_id * 1e3)
        rows.add("batch", "aerial_manipulator", model.n_bodies, model.nv, r, f"geodyn.FD batch T={T}", t_fd * 1e3)
        rows.add("batch", "aerial_manipulator", model.n_bodies, model.nv, r, f"geodyn.ID loop T={T}", t_loop * 1e3)
        print(f"{r:>2} {t_id:12.2f} {t_id / t_rnea:7.2f} {t_loop:11.2f} {t_fd:12.2f} {t_fd / t_aba:7.2f}")
        prog.step(f"batch r={r}")
    return res, (t_rnea, t_aba)


_COLD_SCRIPT = r"""
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
import numpy as np
import geodyn_ros as gd
t1 = time.perf_counter()
m = gd.load_urdf({urdf!r})
t2 = time.perf_counter()
C = np.eye(4); V = np.zeros((2, 6)); q = np.zeros((3, m.n_joints)); W = np.zeros((1, 6)); T = np.zeros((1, m.n_joints))
gd.inverse_dynamics(m, C, V, q, 0)
t3 = time.perf_counter()
gd.forward_dynamics(m, C, V, q, W, T, 0)
t4 = time.perf_counter()
print(json.dumps(dict(import_s=t1 - t0, load_s=t2 - t1, first_id_s=t3 - t2, first_fd_s=t4 - t3)))
"""


def section_cold(rows, warm, compile_too):
    import json
    urdf = REPO / "urdf" / "aerial_manipulator.urdf"
    script = _COLD_SCRIPT.format(repo=str(REPO), urdf=str(urdf))
    print("\n== Cold start (fresh interpreter) vs warm calls, 12-DoF ==")
    runs = [("cache", dict(os.environ))]
    if compile_too:
        env = dict(os.environ)
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba_cold_")
        runs.append(("compile", env))
    for label, env in runs:
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            print(f"{label}: failed: {out.stderr[-500:]}")
            continue
        d = json.loads(out.stdout.strip().splitlines()[-1])
        what = "numba cache loaded from disk" if label == "cache" else "empty numba cache: compiles"
        print(f"{label:>7} ({what}): import {d['import_s'] * 1e3:.0f} ms, URDF load {d['load_s'] * 1e3:.0f} ms, "
              f"first ID {d['first_id_s'] * 1e3:.0f} ms, first FD {d['first_fd_s'] * 1e3:.0f} ms "
              f"(process wall {wall:.1f} s)")
        for k, v in d.items():
            rows.add("cold_start", "aerial_manipulator", 7, 12, 0, f"{label}.{k}", v * 1e6)
        if env is not os.environ and label == "compile":
            shutil.rmtree(env["NUMBA_CACHE_DIR"], ignore_errors=True)
    print(f"   warm: ID r=0 {warm[0]:.2f} us, FD r=0 {warm[1]:.2f} us per call")


# ----------------------------------------------------------------------------- plot
def plot(path, resN, R, resr, cas, batch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(17, 5))
    Ns = sorted(resN)
    cmap = plt.get_cmap("viridis")
    for r in (range(R + 1) if Ns else ()):
        ax[0].loglog(Ns, [resN[N][("ID", r)] for N in Ns], "o-", color=cmap(r / max(R, 1)), label=f"ID r={r}")
        ax[0].loglog(Ns, [resN[N][("FD", r)] for N in Ns], "s--", color=cmap(r / max(R, 1)), alpha=0.6)
    if Ns:
        ax[0].loglog(Ns, [resN[N]["rnea"] for N in Ns], "k^-", label="pin.rnea (r=0)")
        ax[0].loglog(Ns, [resN[N]["aba"] for N in Ns], "kv--", label="pin.aba (r=0)")
    ax[0].set(xlabel="bodies N", ylabel="time per call [us]", title="Scaling in N (solid ID, dashed FD)")
    ax[0].legend(fontsize=7, ncol=2)
    rs = sorted(resr)
    ax[1].plot(rs, [resr[r][0] for r in rs], "o-", label="geodyn ID")
    ax[1].plot(rs, [resr[r][1] for r in rs], "s--", label="geodyn FD")
    for label, d in cas.items():
        if "101" in label and d:
            rr = sorted(d)
            ax[1].plot(rr, [d[r]["sx"] for r in rr], "x-", label="CasADi SX (jtimes)")
            cc = [r for r in rr if d[r]["c"] is not None]
            if cc:
                ax[1].plot(cc, [d[r]["c"] for r in cc], "+-", label="CasADi C -O3")
    ax[1].set_yscale("log")
    ax[1].set(xlabel="derivative order r", ylabel="time per call [us]", title="Scaling in r, N = 101")
    ax[1].legend(fontsize=8)
    if batch:
        res, (t_rnea, t_aba) = batch
        rb = sorted(res)
        ax[2].plot(rb, [res[r][0] for r in rb], "o-", label="geodyn ID batch")
        ax[2].plot(rb, [res[r][1] for r in rb], "s-", label="geodyn FD batch")
        ax[2].plot(rb, [res[r][2] for r in rb], "o:", label="geodyn ID, single calls")
        ax[2].axhline(t_rnea, color="k", label="3000 x pin.rnea (r=0)")
        ax[2].axhline(t_aba, color="k", ls="--", label="3000 x pin.aba (r=0)")
        ax[2].set(xlabel="derivative order r", ylabel="time for 3000 samples [ms]",
                  title="Table 3 trajectory, 3000 samples")
        ax[2].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="K up to 199 (N = 996) and CasADi up to r = 8")
    ap.add_argument("--orders", type=int, default=5, help="r = 0..ORDERS in the N sweep (default 5)")
    ap.add_argument("--r-max", type=int, default=10, help="r sweep at N = 101 up to R_MAX (default 10)")
    ap.add_argument("--casadi-r-max", type=int, default=None, help="default 5 (short) / 8 (--full)")
    ap.add_argument("--casadi-budget", type=float, default=None,
                    help="seconds allowed per CasADi build (default 60 short / 600 full)")
    ap.add_argument("--no-gcc", action="store_true", help="skip the compiled-C CasADi baseline")
    ap.add_argument("--c-budget", type=float, default=None,
                    help="seconds allowed per gcc -O3 compile (default 120 short / 1200 full)")
    ap.add_argument("--no-casadi", action="store_true")
    ap.add_argument("--cold-compile", action="store_true",
                    help="also time a first call with an empty numba cache (compiles; ~1-2 min)")
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help=f"comma-separated subset of {','.join(SECTIONS)} (12dof always runs)")
    ap.add_argument("--out", default=str(REPO / "out"))
    args = ap.parse_args(argv)
    Ks = FULL_K if args.full else SHORT_K
    cas_r = args.casadi_r_max if args.casadi_r_max is not None else (8 if args.full else 5)
    budget = args.casadi_budget if args.casadi_budget is not None else (600.0 if args.full else 60.0)
    c_budget = args.c_budget if args.c_budget is not None else (1200.0 if args.full else 120.0)
    out = Path(args.out)
    R = args.orders
    total = (R + 1) * (1 + len(Ks)) + args.r_max + 1 + (0 if args.no_casadi else 2 * (cas_r + 1)) + R + 1
    prog = Progress(total)
    rows = Rows()
    import numba
    import pinocchio
    print(f"geodyn_ros vs pinocchio {pinocchio.__version__}; numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads; {os.cpu_count()} CPUs")
    want = set(args.sections.split(","))
    unknown = want - set(SECTIONS)
    if unknown:
        ap.error(f"--sections: unknown {sorted(unknown)}; choose from {','.join(SECTIONS)}")
    resN, exps, resr, b, cas, batch, t12 = {}, {}, {}, {}, {}, None, None
    with tempfile.TemporaryDirectory(prefix="bench_table4_") as td:
        tmp = Path(td)
        model12, s12, t12, (t_rnea, t_aba) = section_12dof(rows, prog, R)
        if "N" in want:
            resN, exps = section_scaling_N(rows, prog, Ks, R, tmp)
        if "r" in want or "casadi" in want:
            model101, s101, resr, b = section_scaling_r(rows, prog, args.r_max, tmp)
        if "casadi" in want and not args.no_casadi:
            s12c = random_state(model12, cas_r, seed=7)
            cas = section_casadi(rows, prog, [("12dof", model12, s12c), ("N101", model101, s101)],
                                 cas_r, budget, not args.no_gcc, tmp, c_budget)
        if "batch" in want:
            batch = section_batch(rows, prog, model12, R=R)
        prog.close()
        if "cold" in want:
            section_cold(rows, t12[0], args.cold_compile)
    stem = "bench_table4" + ("" if want == set(SECTIONS) else "_" + "_".join(sorted(want)))
    rows.write(out / f"{stem}.csv")
    plot(out / f"{stem}.png", resN, R, resr, cas, batch)

    print("\n== Targets (issue 4), ratios measured in this run ==")
    print(f"12-DoF r=0: ID / pin.rnea = {t12[0][0] / t_rnea:.2f} (target <= 1.5); "
          f"FD / pin.aba = {t12[0][1] / t_aba:.2f} (target <= 1.5)")
    for label, need in (("12dof", 10), ("N101", 20)):
        d = cas.get(label, {})
        if 5 in d:
            c = d[5]
            cs = f", C -O3 / ours = {c['c'] / c['ours']:.2f}" if c["c"] is not None else ""
            print(f"{label} r=5: CasADi SX / ours = {c['sx'] / c['ours']:.1f} (target >= {need}){cs}")
    if exps and b:
        print(f"exponents: a (N, r=0..{R}) ID max {max(exps['ID']):.3f}, FD max {max(exps['FD']):.3f} "
              f"(target <= 1.1); b (r) ID {b['ID']:.3f}, FD {b['FD']:.3f} (target <= 2.0)")
    if batch:
        res, (tr, ta) = batch
        print(f"batch r={R}: ID {res[R][0]:.2f} ms vs 3000 x pin.rnea {tr:.2f} ms "
              f"(ratio {res[R][0] / tr:.2f}, target < 1)")
    print(f"\nwrote {out / (stem + '.csv')} and {out / (stem + '.png')}")


if __name__ == "__main__":
    main()
