"""The paper's Sec. 7 experiment: higher-order inverse -> forward dynamics round trip (Fig. 3).

Ali, Gabellieri, Franchi (2026), Sec. 7 / Table 3 / Fig. 3, on the 12-DoF aerial manipulator
``urdf/aerial_manipulator.urdf``:

1. sample the Table 3 reference (base circle + yaw, half-cosine joints; see
   :mod:`geodyn_ros.trajectories`) at ``t = 0, dt, ..., < T`` (3000 samples by default);
2. for every sample and order ``r = 0..orders`` run the higher-order inverse dynamics
   ``gd.inverse_dynamics(model, C, V^(0..r+1), q^(0..r+2), order=r)`` (H-GRNE-FBS, gravity
   ``(0, 0, -9.81)``), giving the base wrench ``W^(0..r)`` and joint torques ``tau^(0..r)``;
3. feed those to the higher-order forward dynamics
   ``gd.forward_dynamics(model, C, V^(0), q^(0..1), W, tau, order=r)`` (H-GABI-FBS) and compare
   its outputs ``V^(1..r+1)``, ``q^(2..r+2)`` with the reference: the round-trip error of order
   ``r`` is the maximum over samples and rows ``k`` of
   ``max_i |out_k,i - ref_k,i| / max(1, max_i |ref_k,i|)``.

Outputs (into ``--out``, default ``out/``):

* ``roundtrip_errors.csv``: per order, the round-trip errors, rounding floor, pass flag and
  median times per call;
* ``fig3_inputs_outputs.png``: like the paper's Fig. 3 -- (a) the highest derivative of each
  order given to inverse dynamics (solid: ``V^(r+1)``, ``q^(r+2)``) and returned by forward
  dynamics (dashed), (b) the highest derivative of the inverse-dynamics outputs (``W^(r)``,
  ``tau^(r)``), one row per order.

Pass/fail (exit status 1 on failure): each order's round-trip error must be ``<= 1e-9`` or,
where double precision cannot reach 1e-9, within ``FLOOR_SAFETY = 100`` times the
order's *rounding floor*: the largest error that one rounding (relative ``eps``) of the
forward-dynamics inputs ``W``, ``tau`` causes by itself, estimated by perturbing them. The
floor exceeds 1e-9 at orders 4-5 of Table 3 (errors in ``q^(k)`` re-enter ``q^(k+2)``
multiplied by ~``|M^-1 dg/dq|`` ~ 1e2 s^-2 while the reference rows shrink, see
:func:`_rounding_floor`); ``--strict`` applies the plain 1e-9 bound. In addition the
*backward* error, inverse dynamics of the forward-dynamics output against the wrench and
torques it was given (``max_k |ID(FD)_k - W_k| / max(1, |W_k|)``, rows 0..r), must be
``<= 1e-9`` at every order; it does not suffer from that amplification.

Usage::

    python -m geodyn_ros.examples.paper_experiment [--out DIR] [--orders 5] [--dt 0.01] [--T 30]
                                                   [--strict] [--no-plot]

``--T`` is the horizon and also the half-cosine duration of the joint trajectories (as in
Table 3, where both are T = 30 s): a shorter horizon gives faster joint motion.
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.trajectories import TABLE3_JOINT_NAMES, table3_reference, table3_times

__all__ = ["OrderResult", "run_experiment", "main", "TOLERANCE", "FLOOR_SAFETY"]

#: Largest acceptable relative round-trip error, unless the rounding floor is larger.
TOLERANCE = 1e-9
#: An order also passes when its round-trip error is within this factor of its rounding floor.
FLOOR_SAFETY = 100.0
#: Relative input perturbation and number of probes of the rounding-floor estimate.
FLOOR_DELTA = 1e-10
FLOOR_PROBES = 2
#: Average run time per call reported in the paper's Fig. 3 caption [us] (i7-12700H, MATLAB).
PAPER_ID_US = (2.326, 3.078, 2.867, 4.355, 5.960, 8.171)
PAPER_FD_US = (4.106, 4.802, 6.486, 6.461, 8.589, 11.085)

CSV_NAME = "roundtrip_errors.csv"
PNG_NAME = "fig3_inputs_outputs.png"


@dataclass
class OrderResult:
    """Round-trip result of one order ``r`` over all samples.

    Attributes
    ----------
    order : int
    twist_error : float
        Max relative error of the forward-dynamics base twist rows ``V^(1..r+1)``.
    q_error : float
        Max relative error of the forward-dynamics joint rows ``q^(2..r+2)``.
    rounding_floor : float
        Max over samples of the round-trip error that one rounding of the forward-dynamics
        inputs causes by itself (see :func:`_rounding_floor`): no double-precision
        implementation can be expected to beat it.
    backward_error : float
        Max relative error of ``inverse_dynamics`` applied to the forward-dynamics output
        against the base wrench and torques forward dynamics was given (rows ``0..r``).
    excess : float
        ``max_error / allowed`` with ``allowed = TOLERANCE`` (strict) or
        ``max(TOLERANCE, FLOOR_SAFETY * rounding_floor)``. The order passes when
        ``excess <= 1`` and ``backward_error <= TOLERANCE``.
    id_time_median, fd_time_median : float
        Median wall time per ``inverse_dynamics`` / ``forward_dynamics`` call [s].
    series : dict[str, ndarray]
        Per-sample highest rows for plotting, each (N, 6): ``ref_twist`` / ``fd_twist``
        (``V^(r+1)``), ``ref_qdd`` / ``fd_qdd`` (``q^(r+2)``), ``base_wrench`` (``W^(r)``),
        ``tau`` (``tau^(r)``).
    """

    order: int
    twist_error: float
    q_error: float
    rounding_floor: float
    backward_error: float
    excess: float
    id_time_median: float
    fd_time_median: float
    series: dict = field(default_factory=dict, repr=False)

    @property
    def max_error(self) -> float:
        """The order's round-trip error: ``max(twist_error, q_error)``."""
        return max(self.twist_error, self.q_error)

    @property
    def passed(self) -> bool:
        """Whether the order meets the pass test (see ``excess``)."""
        return self.excess <= 1.0 and self.backward_error <= TOLERANCE


def _row_errors(out: np.ndarray, ref: np.ndarray) -> float:
    """max_k max_i |out_k,i - ref_k,i| / max(1, max_i |ref_k,i|) over the rows of (rows, m) arrays."""
    scale = np.maximum(1.0, np.max(np.abs(ref), axis=1))
    err = float(np.max(np.max(np.abs(out - ref), axis=1) / scale))
    return err if math.isfinite(err) else math.inf  # NaN never passes silently


def _roundtrip_errors(fwd, twist: np.ndarray, q: np.ndarray, r: int) -> tuple[float, float]:
    """(twist error over rows 1..r+1, joint error over rows 2..r+2) of a forward-dynamics result."""
    return (_row_errors(fwd.base_twist[1 : r + 2], twist[1 : r + 2]),
            _row_errors(fwd.q[2 : r + 3], q[2 : r + 3]))


def _rounding_floor(gd, model, pose, twist, q, inv, fwd, r: int, rng) -> float:
    """Round-trip error caused by one rounding of the forward-dynamics inputs alone (estimate).

    Forward dynamics recovers ``q^(k+2)`` from ``W^(k)``, ``tau^(k)`` *and its own lower rows*;
    through the gravity and velocity terms an error in ``q^(k)`` re-enters ``q^(k+2)``
    multiplied by roughly ``|M^-1 dg/dq| ~ 1e2 s^-2`` for this robot, while the Table 3 rows
    shrink by ``(pi/30)^2 ~ 1e-2`` per two orders. The unavoidable rounding of the
    inverse-dynamics outputs (``|W^(0)| ~ 40 N``) therefore grows into absolute errors of
    ~1e-9 in ``q^(6)``, ``q^(7)`` however exactly both algorithms are implemented.

    Estimate: perturb every entry of ``base_wrench`` and ``tau`` by an independent random
    relative amount ``FLOOR_DELTA`` (linear regime), measure the change of the outputs with the
    round-trip metric, scale to a relative perturbation of ``eps``; max over ``FLOOR_PROBES``
    probes. A random probe can underestimate a single sample's floor (by up to ~20x seen); the
    maximum over all samples of an order, which the pass test uses, is stable.
    """
    eps = np.finfo(float).eps
    worst = 0.0
    for _ in range(FLOOR_PROBES):
        W = inv.base_wrench * (1.0 + FLOOR_DELTA * rng.uniform(-1.0, 1.0, inv.base_wrench.shape))
        tau = inv.tau * (1.0 + FLOOR_DELTA * rng.uniform(-1.0, 1.0, inv.tau.shape))
        probe = gd.forward_dynamics(model, pose, twist[:1], q[:2], W, tau, order=r)
        worst = max(worst, *_roundtrip_errors(probe, fwd.base_twist, fwd.q, r))
    return worst * eps / FLOOR_DELTA


def _joint_permutation(model) -> list[int]:
    """Columns of the Table 3 joint arrays in the order of ``model.joint_names``."""
    names = tuple(model.joint_names)
    if sorted(names) != sorted(TABLE3_JOINT_NAMES):
        raise ValueError(
            f"model joints {names} are not the Table 3 joints {TABLE3_JOINT_NAMES} "
            "(the experiment needs urdf/aerial_manipulator.urdf)"
        )
    return [TABLE3_JOINT_NAMES.index(n) for n in names]


def run_experiment(
    out_dir: str | Path = "out",
    orders: int = 5,
    dt: float = 0.01,
    T: float = 30.0,
    *,
    model=None,
    strict: bool = False,
    plot: bool = True,
    verbose: bool = True,
) -> list[OrderResult]:
    """Run the Sec. 7 round trip for ``r = 0..orders`` and write the CSV (and PNG) to ``out_dir``.

    Parameters
    ----------
    out_dir : path
        Output directory (created if missing).
    orders : int >= 0
        Highest order ``r``.
    dt, T : float > 0
        Time step and horizon [s]; ``T`` is also the joints' half-cosine duration.
    model : geodyn_ros model, optional
        Defaults to ``gd.load_urdf(shipped_urdf("aerial_manipulator.urdf"))``.
    strict : bool
        Pass/fail on ``error <= TOLERANCE`` alone. By default a sample also passes when its
        error is within ``FLOOR_SAFETY`` times the order's rounding floor (max over samples of
        :func:`_rounding_floor`).
    plot : bool
        Write the Fig. 3 PNG.
    verbose : bool
        Print the result table.

    Returns
    -------
    list[OrderResult]
        One entry per order ``0..orders``.
    """
    import geodyn_ros as gd

    if isinstance(orders, bool) or not isinstance(orders, int) or orders < 0:
        raise ValueError(f"orders must be a non-negative integer, got {orders!r}")
    times = table3_times(dt, T)  # validates dt, T
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if model is None:
        model = gd.load_urdf(str(shipped_urdf("aerial_manipulator.urdf")))
    perm = _joint_permutation(model)
    rng = np.random.default_rng(2026)

    refs = []
    for t in times:
        ref = table3_reference(t, orders, T=T)
        refs.append((ref.base_pose, ref.base_twist, ref.q[:, perm]))

    results = []
    for r in range(orders + 1):
        # warm-up (JIT compilation, caches) outside the timed loop
        pose, twist, q = refs[0]
        warm = gd.inverse_dynamics(model, pose, twist[: r + 2], q[: r + 3], order=r)
        gd.forward_dynamics(model, pose, twist[:1], q[:2], warm.base_wrench, warm.tau, order=r)

        n = len(times)
        t_id = np.empty(n)
        t_fd = np.empty(n)
        tw_err = q_err = floor = back_err = 0.0
        series = {k: np.empty((n, model.n_joints if k in ("ref_qdd", "fd_qdd", "tau") else 6))
                  for k in ("ref_twist", "fd_twist", "ref_qdd", "fd_qdd", "base_wrench", "tau")}
        for i, (pose, twist, q) in enumerate(refs):
            tic = time.perf_counter()
            inv = gd.inverse_dynamics(model, pose, twist[: r + 2], q[: r + 3], order=r)
            tac = time.perf_counter()
            fwd = gd.forward_dynamics(model, pose, twist[:1], q[:2], inv.base_wrench, inv.tau,
                                      order=r)
            toc = time.perf_counter()
            t_id[i] = tac - tic
            t_fd[i] = toc - tac
            e_tw, e_q = _roundtrip_errors(fwd, twist, q, r)
            tw_err, q_err = max(tw_err, e_tw), max(q_err, e_q)
            floor = max(floor, _rounding_floor(gd, model, pose, twist, q, inv, fwd, r, rng))
            back = gd.inverse_dynamics(model, pose, fwd.base_twist, fwd.q, order=r)
            back_err = max(back_err, _row_errors(back.base_wrench, inv.base_wrench),
                           _row_errors(back.tau, inv.tau))
            series["ref_twist"][i] = twist[r + 1]
            series["fd_twist"][i] = fwd.base_twist[r + 1]
            series["ref_qdd"][i] = q[r + 2]
            series["fd_qdd"][i] = fwd.q[r + 2]
            series["base_wrench"][i] = inv.base_wrench[r]
            series["tau"][i] = inv.tau[r]
        # a non-finite floor (NaN/Inf from a probe) must not widen the bound
        widen = not strict and math.isfinite(floor)
        allowed = max(TOLERANCE, FLOOR_SAFETY * floor) if widen else TOLERANCE
        excess = max(tw_err, q_err) / allowed
        results.append(OrderResult(r, tw_err, q_err, floor, back_err, excess,
                                   float(np.median(t_id)), float(np.median(t_fd)), series))

    _write_csv(out_dir / CSV_NAME, results, len(times))
    if plot:
        _plot_fig3(out_dir / PNG_NAME, times, results, model.joint_names)
    if verbose:
        _print_table(results, len(times), out_dir, plot, strict)
    return results


def _write_csv(path: Path, results: list[OrderResult], n_samples: int) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["order", "max_rel_error", "twist_rel_error", "q_rel_error", "rounding_floor",
                    "backward_rel_error", "excess", "passed", "id_median_us", "fd_median_us",
                    "samples"])
        for res in results:
            w.writerow([res.order, f"{res.max_error:.6e}", f"{res.twist_error:.6e}",
                        f"{res.q_error:.6e}", f"{res.rounding_floor:.6e}",
                        f"{res.backward_error:.6e}", f"{res.excess:.4g}",
                        int(res.passed), f"{res.id_time_median * 1e6:.3f}",
                        f"{res.fd_time_median * 1e6:.3f}", n_samples])


def _print_table(results: list[OrderResult], n_samples: int, out_dir: Path, plot: bool,
                 strict: bool) -> None:
    gate = (f"error <= {TOLERANCE:g}" if strict else
            f"error <= max({TOLERANCE:g}, {FLOOR_SAFETY:g} x rounding floor), per order")
    gate += f"; backward error <= {TOLERANCE:g}"
    print(f"Sec. 7 round trip (ID -> FD), {n_samples} samples; pass: {gate}")
    print(f"{'order':>5}  {'max rel. error':>14}  {'rounding floor':>14}  {'backward err.':>13}  "
          f"{'pass':>4}  "
          f"{'ID median [us]':>14}  {'FD median [us]':>14}  {'paper ID [us]':>13}  "
          f"{'paper FD [us]':>13}")
    for res in results:
        pid = f"{PAPER_ID_US[res.order]:.3f}" if res.order < len(PAPER_ID_US) else "-"
        pfd = f"{PAPER_FD_US[res.order]:.3f}" if res.order < len(PAPER_FD_US) else "-"
        print(f"{res.order:>5}  {res.max_error:>14.3e}  {res.rounding_floor:>14.3e}  "
              f"{res.backward_error:>13.3e}  "
              f"{'yes' if res.passed else 'NO':>4}  {res.id_time_median * 1e6:>14.2f}  "
              f"{res.fd_time_median * 1e6:>14.2f}  {pid:>13}  {pfd:>13}")
    print("(rounding floor: the error one rounding of the FD inputs causes by itself; "
          "paper times: mean per call, MATLAB on an i7-12700H, not comparable one to one)")
    print(f"wrote {out_dir / CSV_NAME}" + (f" and {out_dir / PNG_NAME}" if plot else ""))


def _plot_fig3(path: Path, times: np.ndarray, results: list[OrderResult], joint_names) -> None:
    """Fig. 3 of the paper: (a) ID inputs (solid) vs FD outputs (dashed), (b) ID outputs."""
    from matplotlib.figure import Figure  # no pyplot: no global backend state, Agg on savefig

    n_orders = len(results)
    fig = Figure(figsize=(20, 2.1 * n_orders + 1.2), layout="constrained")
    sub_a, sub_b = fig.subfigures(1, 2, wspace=0.02)
    sub_a.suptitle("(a) input to inverse dynamics (solid) and output of forward dynamics (dashed)")
    sub_b.suptitle("(b) output of inverse dynamics (input to forward dynamics)")
    axes_a = sub_a.subplots(n_orders, 2, sharex=True, squeeze=False)
    axes_b = sub_b.subplots(n_orders, 2, sharex=True, squeeze=False)
    twist_labels = [r"$\omega_x$", r"$\omega_y$", r"$\omega_z$", "$v_x$", "$v_y$", "$v_z$"]
    wrench_labels = ["$n_x$", "$n_y$", "$n_z$", "$f_x$", "$f_y$", "$f_z$"]
    colors = [f"C{i}" for i in range(10)]

    def draw(ax, data, labels, dashed=None):
        for c in range(data.shape[1]):
            ax.plot(times, data[:, c], color=colors[c % 10], lw=1.2, label=labels[c])
            if dashed is not None:
                ax.plot(times, dashed[:, c], color="k", lw=0.8, ls=(0, (3, 3)))
        ax.grid(True, lw=0.3)
        ax.tick_params(labelsize=7)

    for res in results:
        r, s = res.order, res.series
        a_tw, a_q = axes_a[r]
        draw(a_tw, s["ref_twist"], twist_labels, s["fd_twist"])
        a_tw.set_ylabel(f"$V^{{({r + 1})}}$", fontsize=9)
        draw(a_q, s["ref_qdd"], list(joint_names), s["fd_qdd"])
        a_q.set_ylabel(f"$q^{{({r + 2})}}$", fontsize=9)
        a_tw.set_title(f"r = {r}", fontsize=9, loc="left")
        a_q.set_title(f"round-trip error {res.max_error:.1e}", fontsize=8, loc="right")
        b_w, b_t = axes_b[r]
        draw(b_w, s["base_wrench"], wrench_labels)
        b_w.set_ylabel(f"$W^{{({r})}}$", fontsize=9)
        b_w.set_title(f"r = {r}", fontsize=9, loc="left")
        draw(b_t, s["tau"], [rf"$\tau_{{{n}}}$" for n in joint_names])
        b_t.set_ylabel(rf"$\tau^{{({r})}}$", fontsize=9)
    for sub, axes in ((sub_a, axes_a), (sub_b, axes_b)):
        for ax in axes[-1]:
            ax.set_xlabel("t [s]")
        handles, labels = [], []
        for ax in axes[0]:
            h, l = ax.get_legend_handles_labels()
            handles += h
            labels += l
        sub.legend(handles, labels, loc="outside lower center", ncol=12, fontsize=7, frameon=False)
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    """Command-line entry point; returns the exit status (1 if an error exceeds the tolerance)."""
    parser = argparse.ArgumentParser(
        prog="python -m geodyn_ros.examples.paper_experiment",
        description="Ali et al. (2026) Sec. 7: higher-order ID -> FD round trip on the 12-DoF "
                    "aerial manipulator along the Table 3 trajectories (Fig. 3).")
    parser.add_argument("--out", default="out", help="output directory (default: out/)")
    parser.add_argument("--orders", type=int, default=5, help="highest order r (default: 5)")
    parser.add_argument("--dt", type=float, default=0.01, help="time step [s] (default: 0.01)")
    parser.add_argument("--T", type=float, default=30.0,
                        help="horizon and half-cosine duration [s] (default: 30)")
    parser.add_argument("--strict", action="store_true",
                        help=f"fail on any round-trip error > {TOLERANCE:g}, even below the "
                             "rounding floor of the high orders")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    args = parser.parse_args(argv)
    if args.orders < 0:
        parser.error("--orders must be >= 0")
    try:
        table3_times(args.dt, args.T)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        results = run_experiment(args.out, args.orders, args.dt, args.T, strict=args.strict,
                                 plot=not args.no_plot)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad = [res for res in results if not res.passed]
    for res in bad:
        if not res.excess <= 1.0:
            limit = (f"{TOLERANCE:g}" if args.strict else
                     f"max({TOLERANCE:g}, {FLOOR_SAFETY:g} x rounding floor "
                     f"{res.rounding_floor:.1e})")
            print(f"FAIL: order {res.order}: round-trip error {res.max_error:.3e} exceeds {limit} "
                  f"(by a factor {res.excess:.3g})", file=sys.stderr)
        if not res.backward_error <= TOLERANCE:
            print(f"FAIL: order {res.order}: backward error {res.backward_error:.3e} exceeds "
                  f"{TOLERANCE:g}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
