"""The fastest uniform time scaling of a plan that keeps every limit with a stated margin.

A uniform time scaling ``x_alpha(t) = x(t_0 + (t - t_0) / alpha)`` (``alpha`` multiplies every
duration; ``alpha < 1`` is faster) keeps the path and the waypoints and scales the ``k``-th
derivative by ``alpha^-k`` (:meth:`~geodyn_ros.planning.FlatTrajectory.scaled`: the same normalised
polynomial coefficients), so continuity is kept exactly. The worst margin ``w(alpha)`` of a check
(:func:`~geodyn_ros.planning.check_feasibility`, whole body or a baseline) is a continuous function
of ``alpha`` (the samples sit at fixed normalised times of each segment and the worst one is
refined). The fastest feasible scaling solves ``w(alpha) = margin``:

1. the unknown is ``x = alpha^-2`` (accelerations, hence thrust and torques, scale with it; jerk
   and snap terms with ``x^1.5``, ``x^2``), in which ``w`` is close to linear: the search needs few
   checks. Bracket: ``x = 1`` (the plan as timed) and hover ``x = 0`` when ``x = 1`` misses the
   margin, else ``x`` times 4 until it does; a sample where the flat map is undefined (free fall,
   yaw singularity) counts as infeasible;
2. Illinois regula falsi on ``x``, bisecting whenever two steps did not halve the bracket (safe at
   kinks where the binding limit changes), and probing one tolerance inside the bracket once the
   estimate is that close to an end, until ``alpha_lo >= alpha_hi (1 - tol)``;
3. the result is the feasible end ``alpha_hi``: ``w(alpha_hi) >= margin`` and
   ``w(alpha_lo) < margin`` with ``alpha_lo >= alpha_hi (1 - tol)``: it touches its binding limit to
   ``tol`` (:class:`ScalingResult` keeps both values as the proof).

Hover is the limit ``alpha -> inf``: if the hover along the path misses the margin (e.g. a margin
larger than the hover's), ``ValueError`` names the margin.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .feasibility import SAMPLES_PER_SEGMENT, FeasibilityReport, RateLimits, Vehicle, _check
from .planner import FlatTrajectory

__all__ = ["ScalingResult", "fastest_scaling", "SegmentTimesResult", "fastest_segment_times", "CHECKS"]

#: the checks a scaling can be computed for: the whole body, baseline (b), baseline (a)
CHECKS = ("whole_body", "frozen_arm", "rigid_rates")
#: bracketing towards faster flight stops after this many steps (x = alpha^-2 times 4: alpha >= 2^-30)
_MAX_BRACKET = 30
#: the smallest factor one re-allocation step of :func:`fastest_segment_times` applies to a segment
#: (the segments are coupled through the re-plan; larger steps oscillate)
MIN_SEGMENT_STEP = 0.8
#: the time scale that stands for hover (x = 0): derivatives k >= 1 below 1e-12 of their values at alpha = 1
HOVER_ALPHA = 1e6


@dataclass
class ScalingResult:
    """``alpha`` the time scale (durations times ``alpha``), ``trajectory`` the scaled plan,
    ``report`` its check; tightness proof: ``worst_at_alpha = w(alpha) >= margin`` and
    ``worst_below = w(alpha_below) < margin`` with ``alpha_below = alpha (1 - tol)`` or closer;
    ``evaluations`` checks run."""

    alpha: float
    trajectory: FlatTrajectory
    report: FeasibilityReport
    margin: float
    alpha_below: float
    worst_at_alpha: float
    worst_below: float
    evaluations: int

    @property
    def speedup(self) -> float:
        return 1.0 / self.alpha


def fastest_scaling(vehicle: Vehicle, traj: FlatTrajectory, *, margin: float, check: str = "whole_body",
                    tol: float = 1e-3, samples: int = SAMPLES_PER_SEGMENT, limits: RateLimits | None = None,
                    refine: bool = True) -> ScalingResult:
    """The fastest uniform time scaling of ``traj`` whose ``check`` keeps ``margin`` (module docstring).

    Parameters
    ----------
    vehicle, traj : the :class:`~geodyn_ros.planning.Vehicle` and the plan.
    margin : the dimensionless margin to keep (0: touch the limits; 0.1: keep 10 % of every range).
    check : ``"whole_body"`` (default), ``"frozen_arm"`` (baseline b) or ``"rigid_rates"`` (baseline a,
        with ``limits``).
    tol : relative width of the final bracket on ``alpha``.
    samples, refine : as :func:`~geodyn_ros.planning.check_feasibility`.

    Returns
    -------
    ScalingResult
    """
    if check not in CHECKS:
        raise ValueError(f"check: expected one of {CHECKS}, got {check!r}")
    m = float(margin)
    if not (math.isfinite(m) and m < 1.0):
        raise ValueError(f"margin: expected a finite margin < 1 (a fraction of each limit's range), got {margin!r}")
    if not (math.isfinite(float(tol)) and 0 < tol < 0.5):
        raise ValueError(f"tol: expected 0 < tol < 0.5, got {tol!r}")
    count = [0]
    reports = {}

    def alpha_of(x):                 # x = alpha^-2; x = 0 is hover (derivatives below 1e-12 of theirs)
        return HOVER_ALPHA if x == 0.0 else x ** -0.5

    def w(x):                        # worst margin minus the margin at alpha = x^-1/2
        count[0] += 1
        try:
            rep = _check(vehicle, traj.scaled(alpha_of(x)), check, samples, refine, limits)
        except ValueError as exc:
            if "free fall" in str(exc) or "yaw singularity" in str(exc):
                return -np.inf
            raise
        reports[x] = rep
        return rep.worst - m

    f1 = w(1.0)
    if f1 < 0:
        f0 = w(0.0)
        if f0 < 0:
            raise ValueError(f"margin: {m:g} is not kept even in hover along the path (worst margin {f0 + m:+.4f} at "
                             f"t = {reports[0.0].t_worst:.3f} s, {reports[0.0].limit})")
        (xl, fl), (xh, fh) = (1.0, f1), (0.0, f0)
    else:
        xh, fh = 1.0, f1
        for _ in range(_MAX_BRACKET):
            x = 4.0 * xh
            f = w(x)
            if f < 0:
                xl, fl = x, f
                break
            xh, fh = x, f
        else:
            raise ValueError(f"margin: {m:g} is kept even {2 ** _MAX_BRACKET:g} times faster: the limits do not bind")
    shrink = (1.0 - tol) ** 2        # converged when alpha_lo >= alpha_hi (1 - tol), i.e. x_hi >= x_lo shrink
    side, hist = 0, [xl - xh]
    while xh < xl * shrink:
        if len(hist) >= 3 and hist[-1] > 0.5 * hist[-3] or not np.isfinite(fl):
            x = 0.5 * (xl + xh)      # safeguard: two steps without halving the bracket -> bisect
        else:
            x = xh - fh * (xh - xl) / (fh - fl)
            x = min(max(x, xh + 0.01 * (xl - xh)), xl - 0.01 * (xl - xh))
            if x <= xh / shrink:     # the root is next to the feasible end: probe one tolerance faster
                x = xh / shrink
            elif x >= xl * shrink:   # ... or next to the infeasible end: probe one tolerance slower
                x = xl * shrink
        f = w(x)
        if f >= 0:
            xh, fh = x, f
            if side == 1:
                fl *= 0.5            # Illinois: the stale end's value is halved
            side = 1
        else:
            xl, fl = x, f
            if side == -1:
                fh *= 0.5
            side = -1
        hist.append(xl - xh)
    rep = reports[xh]                # fh / fl may have been halved: report the checks' own values
    below = reports.get(xl)
    return ScalingResult(alpha_of(xh), traj.scaled(alpha_of(xh)), rep, m, alpha_of(xl), rep.worst,
                         below.worst if below is not None else -np.inf, count[0])


def _segment_worst(traj, rep):
    """(N,) the worst sampled margin inside each segment of ``traj`` (the report's samples)."""
    seg = np.clip(np.searchsorted(traj.times, rep.times, side="right") - 1, 0, len(traj.times) - 2)
    w = rep.margins.min(axis=1)
    out = np.full(len(traj.times) - 1, np.inf)
    np.minimum.at(out, seg, w)
    return out


@dataclass
class SegmentTimesResult:
    """Per-segment timing: ``trajectory`` (re-planned at its knots, then uniformly scaled to touch the
    margin: ``scaling`` is that :class:`ScalingResult`, with its tightness proof), ``factors`` (N,)
    each segment's duration over its duration in the uniform result ``uniform``, ``report`` its
    check, ``segment_margins`` (N,) the worst margin inside each segment (the more segments at
    ``margin``, the better balanced), ``iterations`` and ``evaluations`` (checks run)."""

    trajectory: FlatTrajectory
    factors: np.ndarray
    report: FeasibilityReport
    scaling: ScalingResult
    uniform: ScalingResult
    segment_margins: np.ndarray
    iterations: int
    evaluations: int

    @property
    def speedup(self) -> float:
        """Duration of the uniform result over this one's."""
        return self.uniform.trajectory.duration / self.trajectory.duration


def fastest_segment_times(vehicle: Vehicle, traj: FlatTrajectory, *, margin: float, check: str = "whole_body",
                          iterations: int = 4, samples: int = SAMPLES_PER_SEGMENT,
                          limits: RateLimits | None = None) -> SegmentTimesResult:
    """Per-segment time scaling: the uniform one (:func:`fastest_scaling`), then a re-allocation of
    the segment durations by their slack, each time re-planned and scaled uniformly again.

    A segment whose worst margin ``w_i`` is above the margin ``m`` carries less dynamic load than
    the binding one. The load above hover grows as ``alpha^-2`` (accelerations), so the segment
    could be ``beta_i = sqrt((h_i - w_i) / (h_i - m))`` times as long, with ``h_i`` the segment's
    worst margin in hover. The durations are multiplied by ``sqrt(beta_i)``, at least
    ``MIN_SEGMENT_STEP`` (damped, since the
    segments are coupled through the re-plan: :meth:`FlatTrajectory.replan`, the
    minimum-derivative solve at the new knots, so the continuity is kept; the path changes), the
    re-plan is scaled uniformly to touch the margin (tight, as :func:`fastest_scaling`), and the
    shortest of the ``iterations`` results (the uniform one included) is returned.
    """
    if traj.plan_inputs is None:
        raise ValueError("traj: not made by plan_mission (per-segment timing re-plans the waypoints)")
    if not (isinstance(iterations, (int, np.integer)) and iterations >= 1):
        raise ValueError(f"iterations: expected an integer >= 1, got {iterations!r}")
    uni = fastest_scaling(vehicle, traj, margin=margin, check=check, samples=samples, limits=limits)
    m = uni.margin
    hover = _check(vehicle, traj.scaled(HOVER_ALPHA), check, samples, False, limits)
    h_hover = _segment_worst(traj.scaled(HOVER_ALPHA), hover)
    best = uni
    evaluations = uni.evaluations + 1
    cur = uni
    for _ in range(iterations):
        w = _segment_worst(cur.trajectory, cur.report)
        load = np.maximum(h_hover - w, 1e-12)
        beta = np.sqrt(np.clip(load / np.maximum(h_hover - m, 1e-12), 0.0, 1.0))
        h = np.diff(cur.trajectory.times) * np.clip(np.sqrt(beta), MIN_SEGMENT_STEP, 1.0)
        plan = traj.replan(traj.times[0] + np.concatenate([[0.0], np.cumsum(h)]))
        try:
            cur = fastest_scaling(vehicle, plan, margin=m, check=check, samples=samples, limits=limits)
        except ValueError:           # a re-allocation too uneven for the margin even in hover: stop here
            break
        evaluations += cur.evaluations
        if cur.trajectory.duration < best.trajectory.duration:
            best = cur
    factors = np.diff(best.trajectory.times) / np.diff(uni.trajectory.times)
    return SegmentTimesResult(best.trajectory, factors, best.report, best, uni,
                              _segment_worst(best.trajectory, best.report), iterations, evaluations)
