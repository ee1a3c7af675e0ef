#!/usr/bin/env python3
"""Per-call time of the derivative / linearization API vs Pinocchio's derivatives, one run.

Sections (each printed as it finishes; all rows written to ``<out>/bench_linearize.csv``, the
scaling plot to ``<out>/bench_linearize.png``):

1. **12-DoF** aerial manipulator (``urdf/aerial_manipulator.urdf``): every call of
   :mod:`geodyn_ros.algorithms.linearization` (spatial and body representation) next to the Pinocchio call it
   corresponds to, on the same state (Pinocchio free-flyer model of the same URDF):

   ==================================== =========================================
   ``gd.inverse_dynamics_derivatives``  ``pin.computeRNEADerivatives``
   ``gd.forward_dynamics_derivatives``  ``pin.computeABADerivatives``
   ``gd.linearize``                     ``pin.computeABADerivatives``
   ``gd.inverse_mass_matrix``           ``pin.computeMinverse``
   ``gd.inverse_dynamics`` (r = 0)      ``pin.rnea``  (for scale)
   ``gd.forward_dynamics`` (r = 0)      ``pin.aba``   (for scale)
   ==================================== =========================================

   ``linearize`` does strictly more than ``computeABADerivatives``: it also assembles the dense
   state-space ``A`` (2(6+n))^2 -- including the SE(3) pose rows ``[-ad_V, 0, I, 0]`` (body) or
   ``[0, 0, Ad_C^-1, 0]`` (spatial) and the ``dq/dt = qd`` rows -- and ``B``. For reference the
   section also times ``computeABADerivatives`` followed by the same assembly in NumPy ("pin
   ABAD + A,B"), and checks that this matrix equals ``gd.linearize(..., representation="body")``
   after the (orthogonal) reordering of Pinocchio's tangent space (linear first, joints by
   ``idx_v``).
2. **Scaling in N**: the Table 4 tree (``bench/core/make_tree_urdf.py``, 5 branches of K bodies,
   N = 1 + 5K); ``linearize``, ``inverse_dynamics_derivatives``, ``forward_dynamics_derivatives``,
   ``inverse_mass_matrix`` vs ``computeABADerivatives`` / ``computeRNEADerivatives`` /
   ``computeMinverse``; fitted exponent ``a`` of time ~ N^a (least squares on log-log, over all
   sizes and over the largest three).

Timing: median over repeated batches of the mean wall time of one Python call (a batch lasts
about ``--target-ms``), every call warmed up first (numba's on-disk cache load, or compile on a
fresh checkout). Ratios compare numbers measured in this run. States are random but bounded
(uniform rotation from a random unit quaternion, position ~ U(-1, 1), velocities ~ N(0, 1);
never ``pin.randomConfiguration``, whose free-flyer translation is unbounded). Figures, not
assertions: nothing here fails on a slow machine.

    python bench/core/bench_linearize.py              # well under a minute
    python bench/core/bench_linearize.py --full       # adds K = 80, 120, 199 (N up to 996); a few minutes
    python bench/core/bench_linearize.py --quick      # smoke test: two sizes, few repeats
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO, REPO / "bench" / "core", REPO / "test"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import geodyn_ros as gd  # noqa: E402
from make_tree_urdf import branched_tree_urdf  # noqa: E402
from reference_models import Ad, Ad_inv, PinRef, random_state  # noqa: E402  (test/reference_models.py)

URDF_12DOF = REPO / "urdf" / "aerial_manipulator.urdf"
SHORT_K = (2, 4, 8, 20, 40)
FULL_K = (2, 4, 8, 20, 40, 80, 120, 199)
QUICK_K = (2, 8)
SECTIONS = ("12dof", "N")
TARGET_RATIO = 3.0  # issue: linearize within 3x of computeABADerivatives on the 12-DoF model


# ----------------------------------------------------------------------------- timing
class Timing:
    """Batch length ``target_s`` and number of batches ``repeats`` for :func:`per_call_us`."""

    def __init__(self, target_s=0.05, repeats=9):
        self.target_s, self.repeats = target_s, repeats


def per_call_us(fn, timing: Timing):
    """Median over ``timing.repeats`` batches of the mean wall time of one call of ``fn``, in
    microseconds; the batch size is chosen so that a batch lasts about ``timing.target_s``.
    ``fn`` is called (warmed up) a few times before the first batch."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    reps = int(min(20000, max(1, timing.target_s / one)))
    for _ in range(min(reps, 50)):
        fn()
    out = []
    for _ in range(max(1, timing.repeats)):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - t0) / reps * 1e6)
    return statistics.median(out)


def first_call_ms(fn):
    """Wall time of one call in milliseconds (the first call: numba cache load or compile)."""
    t0 = time.perf_counter()
    fn()
    return 1e3 * (time.perf_counter() - t0)


def fit_exponent(x, y):
    """Least-squares slope of log y against log x."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    return float(np.polyfit(lx, ly, 1)[0])


# ----------------------------------------------------------------------------- CSV rows
class Rows:
    """CSV rows: section, model, N, dof, impl, representation, us_per_call, ref_impl, ratio, note."""

    FIELDS = ("section", "model", "N", "dof", "impl", "representation", "us_per_call", "ref_impl",
              "ratio", "note")

    def __init__(self):
        self.rows = []

    def add(self, section, model, N, dof, impl, rep, us, ref_impl="", ratio=None, note=""):
        def fmt(x):
            return f"{x:.4f}" if x is not None and math.isfinite(x) else ""
        self.rows.append(dict(section=section, model=model, N=N, dof=dof, impl=impl, representation=rep,
                              us_per_call=fmt(us), ref_impl=ref_impl, ratio=fmt(ratio), note=note))

    def write(self, path: Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.FIELDS)
            w.writeheader()
            w.writerows(self.rows)


# ----------------------------------------------------------------------------- one model, one state
def _ad_pin(v):
    """Pinocchio-ordered (linear first) ad of a motion v = (v_lin, w): [[hat w, hat v], [0, hat w]]."""
    def hat(x):
        return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])
    out = np.zeros((6, 6))
    hw = hat(v[3:])
    out[:3, :3] = hw
    out[3:, 3:] = hw
    out[:3, 3:] = hat(v[:3])
    return out


class Case:
    """A model (ours and Pinocchio's) and one random bounded state, with every timed call as a
    zero-argument closure. ``source``: URDF path or XML string."""

    def __init__(self, source, label, seed=0):
        self.label = label
        self.model = m = gd.load_urdf(source)
        self.ref = ref = PinRef(str(source), m.joint_names)
        self.N, self.n = m.n_bodies, m.n_joints
        self.nv = 6 + self.n
        rng = np.random.default_rng(seed)
        s = random_state(rng, self.n)          # bounded: see test/reference_models.py
        W = rng.standard_normal(6)             # spatial base wrench (n, f), world axes
        tau = rng.standard_normal(self.n)
        C = s.C
        self.C = C
        # our inputs, spatial and body representation
        Vb, Vdb, Wb = Ad_inv(C) @ s.V, Ad_inv(C) @ s.Vd, Ad(C).T @ W
        self.ours = {
            "spatial": dict(Vj=np.array([s.V, s.Vd]), W=W[None]),
            "body": dict(Vj=np.array([Vb, Vdb]), W=Wb[None]),
        }
        self.qj3 = np.array([s.q, s.qd, s.qdd])
        self.qj2 = np.ascontiguousarray(self.qj3[:2])
        self.tau = tau[None]
        # Pinocchio's state: the same point (reference_models.PinRef conventions)
        self.qp = ref.q_pin(C, s.q)
        self.vp = ref.v_pin(C, s.V, s.qd)
        self.ap = ref.a_pin(C, s.Vd, s.qdd)
        self.tp = ref.force_to_pin(C, W, tau)
        self.state = s

    # -- ours
    def id_derivs(self, rep):
        o = self.ours[rep]
        return lambda: gd.inverse_dynamics_derivatives(self.model, self.C, o["Vj"], self.qj3, representation=rep)

    def fd_derivs(self, rep):
        o = self.ours[rep]
        V1 = np.ascontiguousarray(o["Vj"][:1])
        return lambda: gd.forward_dynamics_derivatives(self.model, self.C, V1, self.qj2, o["W"], self.tau,
                                                       representation=rep)

    def linearize(self, rep):
        o = self.ours[rep]
        V1 = np.ascontiguousarray(o["Vj"][:1])
        return lambda: gd.linearize(self.model, self.C, V1, self.qj2, o["W"], self.tau, representation=rep)

    def minv(self, rep):
        q = self.state.q
        return lambda: gd.inverse_mass_matrix(self.model, self.C, q, representation=rep)

    def id0(self):
        Vj = self.ours["spatial"]["Vj"]
        return lambda: gd.inverse_dynamics(self.model, self.C, Vj, self.qj3, 0)

    def fd0(self):
        V1 = np.ascontiguousarray(self.ours["spatial"]["Vj"][:1])
        W = self.ours["spatial"]["W"]
        return lambda: gd.forward_dynamics(self.model, self.C, V1, self.qj2, W, self.tau, 0)

    # -- Pinocchio
    def pin_calls(self):
        import pinocchio as pin
        pm, pd, q, v, a, t = self.ref.model, self.ref.data, self.qp, self.vp, self.ap, self.tp
        return {
            "pin.rnea": lambda: pin.rnea(pm, pd, q, v, a),
            "pin.aba": lambda: pin.aba(pm, pd, q, v, t),
            "pin.computeRNEADerivatives": lambda: pin.computeRNEADerivatives(pm, pd, q, v, a),
            "pin.computeABADerivatives": lambda: pin.computeABADerivatives(pm, pd, q, v, t),
            "pin.computeMinverse": lambda: pin.computeMinverse(pm, pd, q),
            "pin ABAD + A,B": self.pin_linearize,
        }

    def pin_linearize(self):
        """computeABADerivatives and the dense A, B in Pinocchio's tangent coordinates
        (linear first, joints by idx_v): dz/dt = A z + B dtau with z = (dq_pin, dv_pin)."""
        import pinocchio as pin
        nv = self.nv
        ddq_dq, ddq_dv, Minv = pin.computeABADerivatives(self.ref.model, self.ref.data, self.qp, self.vp, self.tp)
        A = np.zeros((2 * nv, 2 * nv))
        A[:6, :6] = -_ad_pin(self.vp[:6])
        A[:nv, nv:] = np.eye(nv)
        A[nv:, :nv] = ddq_dq
        A[nv:, nv:] = ddq_dv
        B = np.zeros((2 * nv, nv))
        B[nv:] = Minv
        return A, B

    # -- consistency of the two sides (not timed)
    def check(self):
        """Relative differences: ID value vs pin.rnea, and the body-representation A, B vs the
        Pinocchio assembly reordered into our coordinates."""
        s = self.state
        d = gd.inverse_dynamics_derivatives(self.model, self.C, self.ours["spatial"]["Vj"], self.qj3)
        Wr, tr = self.ref.rnea(self.C, s.V, s.Vd, s.q, s.qd, s.qdd)
        ref = np.concatenate([Wr, tr])
        e_id = np.abs(np.concatenate([d.base_wrench, d.tau]) - ref).max() / max(1.0, np.abs(ref).max())
        lin = self.linearize("body")()
        Ap, Bp = self.pin_linearize()
        Pb = self.ref.P(np.eye(4))                 # (dq_pin or dv_pin) = Pb (our body-rep block)
        Q = np.zeros((2 * self.nv, 2 * self.nv))
        Q[:self.nv, :self.nv] = Pb
        Q[self.nv:, self.nv:] = Pb
        A_ref, B_ref = Q.T @ Ap @ Q, Q.T @ Bp @ Pb
        e_A = np.abs(lin.A - A_ref).max() / max(1.0, np.abs(A_ref).max())
        e_B = np.abs(lin.B - B_ref).max() / max(1.0, np.abs(B_ref).max())
        return e_id, e_A, e_B


# ----------------------------------------------------------------------------- sections
def section_12dof(rows, timing: Timing, verbose=True):
    """Section 1. Returns ``{(impl, representation): us}`` with Pinocchio's entries under
    representation ``"-"``, plus ``"ratios"``: ``{(impl, rep): (ref_impl, ratio)}`` and ``"check"``."""
    out = lambda *a, **k: print(*a, **k) if verbose else None  # noqa: E731
    case = Case(URDF_12DOF, "aerial_manipulator", seed=0)
    label, N, dof = case.label, case.N, case.nv
    ours = []  # (impl, rep, closure, pinocchio counterpart)
    for rep in ("spatial", "body"):
        ours += [("gd.inverse_dynamics_derivatives", rep, case.id_derivs(rep), "pin.computeRNEADerivatives"),
                 ("gd.forward_dynamics_derivatives", rep, case.fd_derivs(rep), "pin.computeABADerivatives"),
                 ("gd.linearize", rep, case.linearize(rep), "pin.computeABADerivatives"),
                 ("gd.inverse_mass_matrix", rep, case.minv(rep), "pin.computeMinverse")]
    ours = ([("gd.inverse_dynamics r=0", "spatial", case.id0(), "pin.rnea"),
             ("gd.forward_dynamics r=0", "spatial", case.fd0(), "pin.aba")] + ours)
    cold = {(i, r): first_call_ms(f) for i, r, f, _ in ours}   # warm-up: numba cache load / compile
    e_id, e_A, e_B = case.check()
    res = {}
    for name, fn in case.pin_calls().items():
        res[(name, "-")] = per_call_us(fn, timing)
        rows.add("12dof", label, N, dof, name, "-", res[(name, "-")])
    import pinocchio
    out(f"\n== 12-DoF aerial manipulator (N = {N} bodies, nv = {dof}); median per Python call ==")
    out(f"same state both sides: ID value vs pin.rnea rel. diff {e_id:.1e}; linearize(body) A, B vs "
        f"pin ABAD + assembly (reordered) {e_A:.1e}, {e_B:.1e}")
    hdr = (f"{'call':<34} {'repr':<8} {'us':>9} {'first ms':>9}  {'Pinocchio counterpart':<28} "
           f"{'pin us':>8} {'ratio':>6}")
    out(hdr)
    out("-" * len(hdr))
    ratios = {}
    for impl, rep, fn, ref in ours:
        t = per_call_us(fn, timing)
        res[(impl, rep)] = t
        tr = res[(ref, "-")]
        ratios[(impl, rep)] = (ref, t / tr)
        rows.add("12dof", label, N, dof, impl, rep, t, ref, t / tr, note=f"first_call_ms={cold[(impl, rep)]:.1f}")
        out(f"{impl:<34} {rep:<8} {t:9.2f} {cold[(impl, rep)]:9.1f}  {ref:<28} {tr:8.2f} {t / tr:6.2f}")
    tl = res[("pin ABAD + A,B", "-")]
    for rep in ("spatial", "body"):
        t = res[("gd.linearize", rep)]
        ratios[("gd.linearize", rep, "assembled")] = ("pin ABAD + A,B", t / tl)
        rows.add("12dof", label, N, dof, "gd.linearize", rep, t, "pin ABAD + A,B", t / tl)
    out(f"{'(pin ABAD + NumPy A,B assembly)':<34} {'body':<8} {tl:9.2f} {'':>9}  "
        f"{'gd.linearize / this:':<28} {'':>8} "
        f"{res[('gd.linearize', 'body')] / tl:6.2f}")
    out(f"(Pinocchio {pinocchio.__version__}; computeABADerivatives returns ddq/dq, ddq/dv, M^-1 only: "
        f"gd.linearize also assembles A ({2 * dof}x{2 * dof}, incl. the SE(3) pose rows) and B)")
    worst = max(ratios[("gd.linearize", r)][1] for r in ("spatial", "body"))
    met = worst <= TARGET_RATIO
    out(f"target 'linearize within {TARGET_RATIO:g}x of computeABADerivatives on the 12-DoF model': "
        f"{'MET' if met else 'NOT MET'} (spatial {ratios[('gd.linearize', 'spatial')][1]:.2f}x, "
        f"body {ratios[('gd.linearize', 'body')][1]:.2f}x)")
    rows.add("12dof", label, N, dof, "target linearize/ABAD<=3", "max", None, "pin.computeABADerivatives",
             worst, note="met" if met else "not met")
    res["ratios"] = ratios
    res["check"] = (e_id, e_A, e_B)
    res["target_met"] = met
    return res


SCALING_OURS = ("gd.linearize", "gd.inverse_dynamics_derivatives", "gd.forward_dynamics_derivatives",
                "gd.inverse_mass_matrix")
SCALING_PIN = ("pin.computeABADerivatives", "pin.computeRNEADerivatives", "pin.computeMinverse")


def section_scaling_N(rows, timing: Timing, Ks, rep="spatial", verbose=True):
    """Section 2. Returns ``({N: {impl: us}}, {impl: (a_all, a_tail)})``."""
    out = lambda *a, **k: print(*a, **k) if verbose else None  # noqa: E731
    out(f"\n== Scaling in N (Table 4 tree, 5 branches of K bodies, N = 1 + 5K), representation {rep!r} ==")
    short = {"gd.linearize": "lin", "gd.inverse_dynamics_derivatives": "ID'", "gd.forward_dynamics_derivatives": "FD'",
             "gd.inverse_mass_matrix": "Minv", "pin.computeABADerivatives": "pABAD",
             "pin.computeRNEADerivatives": "pRNEAD", "pin.computeMinverse": "pMinv"}
    hdr = f"{'N':>5} {'nv':>5} " + " ".join(f"{short[i]:>10}" for i in SCALING_OURS + SCALING_PIN) + \
        f" {'lin/pABAD':>10} {'ID/pRNEAD':>10}   (us)"
    out(hdr)
    res = {}
    for K in Ks:
        case = Case(branched_tree_urdf(K), f"tree_K{K}", seed=K)
        N, dof = case.N, case.nv
        calls = {"gd.linearize": case.linearize(rep), "gd.inverse_dynamics_derivatives": case.id_derivs(rep),
                 "gd.forward_dynamics_derivatives": case.fd_derivs(rep), "gd.inverse_mass_matrix": case.minv(rep)}
        pc = case.pin_calls()
        calls.update({k: pc[k] for k in SCALING_PIN})
        r = {}
        for impl, fn in calls.items():
            fn()  # warm-up (numba: same signature for every tree, so compiled once)
            r[impl] = per_call_us(fn, timing)
            rows.add("scaling_N", case.label, N, dof, impl, rep if impl.startswith("gd.") else "-", r[impl])
        res[N] = r
        la, ir = r["gd.linearize"] / r["pin.computeABADerivatives"], \
            r["gd.inverse_dynamics_derivatives"] / r["pin.computeRNEADerivatives"]
        rows.add("scaling_N", case.label, N, dof, "gd.linearize", rep, r["gd.linearize"], "pin.computeABADerivatives", la)
        rows.add("scaling_N", case.label, N, dof, "gd.inverse_dynamics_derivatives", rep,
                 r["gd.inverse_dynamics_derivatives"], "pin.computeRNEADerivatives", ir)
        out(f"{N:5d} {dof:5d} " + " ".join(f"{r[i]:10.1f}" for i in SCALING_OURS + SCALING_PIN)
            + f" {la:10.2f} {ir:10.2f}", flush=True)
    Ns = sorted(res)
    tail = Ns[-3:] if len(Ns) >= 3 else Ns
    exps = {}
    if len(Ns) >= 2:
        out(f"fitted a (time ~ N^a, least squares on log-log): over N = {Ns} | over N = {tail}")
        for impl in SCALING_OURS + SCALING_PIN:
            a_all = fit_exponent(Ns, [res[N][impl] for N in Ns])
            a_tail = fit_exponent(tail, [res[N][impl] for N in tail])
            exps[impl] = (a_all, a_tail)
            out(f"  {impl:<34} a = {a_all:.3f} | {a_tail:.3f}")
            rows.add("fit_a", "tree", "", "", impl, rep if impl.startswith("gd.") else "-", None,
                     note=f"a_all={a_all:.4f};a_tail={a_tail:.4f};N_all={'/'.join(map(str, Ns))};"
                          f"N_tail={'/'.join(map(str, tail))}")
    return res, exps


# ----------------------------------------------------------------------------- plot
def plot(path, resN, exps):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    Ns = sorted(resN)
    fig, ax = plt.subplots(1, 2, figsize=(13, 5))
    style = {"gd.linearize": ("C0", "o-"), "pin.computeABADerivatives": ("C0", "o--"),
             "gd.inverse_dynamics_derivatives": ("C1", "s-"), "pin.computeRNEADerivatives": ("C1", "s--"),
             "gd.inverse_mass_matrix": ("C2", "^-"), "pin.computeMinverse": ("C2", "^--"),
             "gd.forward_dynamics_derivatives": ("C3", "v-")}
    for impl, (c, ls) in style.items():
        if Ns and impl in resN[Ns[0]]:
            a = exps.get(impl, (float("nan"),))[0]
            ax[0].loglog(Ns, [resN[N][impl] for N in Ns], ls, color=c, label=f"{impl} (a={a:.2f})")
    ax[0].set(xlabel="bodies N", ylabel="time per call [us]",
              title="Scaling in N (solid: geodyn_ros, dashed: Pinocchio)")
    ax[0].legend(fontsize=7)
    ax[0].grid(True, which="both", alpha=0.3)
    if Ns:
        ax[1].loglog(Ns, [resN[N]["gd.linearize"] / resN[N]["pin.computeABADerivatives"] for N in Ns], "o-",
                       label="gd.linearize / pin.computeABADerivatives")
        ax[1].loglog(Ns, [resN[N]["gd.inverse_dynamics_derivatives"] / resN[N]["pin.computeRNEADerivatives"]
                            for N in Ns], "s-", label="gd.inverse_dynamics_derivatives / pin.computeRNEADerivatives")
        ax[1].loglog(Ns, [resN[N]["gd.inverse_mass_matrix"] / resN[N]["pin.computeMinverse"] for N in Ns], "^-",
                       label="gd.inverse_mass_matrix / pin.computeMinverse")
        ax[1].axhline(TARGET_RATIO, color="k", ls=":", label=f"{TARGET_RATIO:g}x")
    ax[1].set(xlabel="bodies N", ylabel="time ratio ours / Pinocchio", title="Ratio, same run")
    ax[1].legend(fontsize=7)
    ax[1].grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="K up to 199 (N = 996)")
    ap.add_argument("--quick", action="store_true", help="smoke test: K = 2, 8 and short batches")
    ap.add_argument("--target-ms", type=float, default=None, help="batch length (default 50, quick 5)")
    ap.add_argument("--repeats", type=int, default=None, help="batches per figure (default 9, quick 3)")
    ap.add_argument("--representation", default="spatial", choices=("spatial", "body"),
                    help="representation in the N sweep (default spatial)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--out", default=str(REPO / "out"))
    args = ap.parse_args(argv)
    want = set(args.sections.split(","))
    if want - set(SECTIONS):
        ap.error(f"--sections: unknown {sorted(want - set(SECTIONS))}; choose from {','.join(SECTIONS)}")
    Ks = QUICK_K if args.quick else (FULL_K if args.full else SHORT_K)
    timing = Timing(target_s=(args.target_ms if args.target_ms is not None else (5.0 if args.quick else 50.0)) / 1e3,
                    repeats=args.repeats if args.repeats is not None else (3 if args.quick else 9))
    out = Path(args.out)
    import numba
    import pinocchio
    print(f"geodyn_ros vs pinocchio {pinocchio.__version__}; numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads; {os.cpu_count()} CPUs; batches of ~{1e3 * timing.target_s:g} ms, "
          f"median of {timing.repeats}")
    t0 = time.perf_counter()
    rows = Rows()
    res12, resN, exps = None, {}, {}
    if "12dof" in want:
        res12 = section_12dof(rows, timing)
    if "N" in want:
        resN, exps = section_scaling_N(rows, timing, Ks, rep=args.representation)
    csv_path = out / "bench_linearize.csv"
    rows.write(csv_path)
    written = [str(csv_path)]
    if resN:
        png = out / "bench_linearize.png"
        plot(png, resN, exps)
        written.append(str(png))
    print("\n== Summary (ratios measured in this run) ==")
    if res12:
        r = res12["ratios"]
        print(f"12-DoF: linearize / computeABADerivatives = {r[('gd.linearize', 'spatial')][1]:.2f} (spatial), "
              f"{r[('gd.linearize', 'body')][1]:.2f} (body): target <= {TARGET_RATIO:g} "
              f"{'met' if res12['target_met'] else 'NOT met'}")
    if exps:
        print("exponents a (all sizes | largest three): " + "; ".join(
            f"{k} {v[0]:.2f} | {v[1]:.2f}" for k, v in exps.items()))
    print(f"wrote {' and '.join(written)} ({time.perf_counter() - t0:.0f} s)")
    return dict(res12=res12, resN=resN, exps=exps)


if __name__ == "__main__":
    main()
