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

__all__ = ["ScalingResult", "fastest_scaling", "CHECKS"]

#: the checks a scaling can be computed for: the whole body, baseline (b), baseline (a)
CHECKS = ("whole_body", "frozen_arm", "rigid_rates")
#: bracketing towards faster flight stops after this many steps (x = alpha^-2 times 4: alpha >= 2^-30)
_MAX_BRACKET = 30
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
