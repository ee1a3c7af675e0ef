"""The fastest uniform time scaling of a plan that keeps every limit with a stated margin.

A uniform time scaling ``x_alpha(t) = x(t_0 + (t - t_0) / alpha)`` (``alpha`` multiplies every
duration; ``alpha < 1`` is faster) keeps the path and the waypoints and scales the ``k``-th
derivative by ``alpha^-k`` (:meth:`~geodyn_ros.planning.FlatTrajectory.scaled`: the same normalised
polynomial coefficients), so continuity is kept exactly. The worst margin ``w(alpha)`` of a check
(:func:`~geodyn_ros.planning.check_feasibility`, whole body or a baseline) is a continuous function
of ``alpha`` (the samples sit at fixed normalised times of each segment and the worst one is
refined). The fastest feasible scaling solves ``w(alpha) = margin``:

1. bracket: from ``alpha = 1``, halve (or double) until the check changes sign; a sample where the
   flat map is undefined (free fall, yaw singularity) counts as infeasible;
2. Illinois regula falsi on ``log alpha`` (superlinear on the smooth pieces), bisecting whenever two
   steps did not halve the bracket (safe at kinks where the binding limit changes), and probing one
   tolerance inside the bracket once the estimate is that close to an end, until the bracket is
   narrower than ``tol`` (relative);
3. the result is the feasible end ``alpha_hi``: ``w(alpha_hi) >= margin`` and
   ``w(alpha_hi (1 - tol)) < margin`` -- it touches its binding limit to ``tol``
   (:class:`ScalingResult` keeps both values as the proof).

Hover is the limit ``alpha -> inf``: if even very slow flight misses the margin (the hover itself
does, e.g. a margin larger than the hover's), ``ValueError`` names the margin.
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
#: bracketing stops after this many halvings / doublings (alpha in [2^-30, 2^30])
_MAX_BRACKET = 30


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

    margin : the dimensionless margin to keep (0: touch the limits; 0.1: keep 10 % of every range).
    check : ``"whole_body"`` (default), ``"frozen_arm"`` (baseline b) or ``"rigid_rates"`` (baseline a,
        with ``limits``).
    tol : relative width of the final bracket on ``alpha``.
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

    def w(x):                        # worst margin minus the margin at alpha = exp(x)
        count[0] += 1
        try:
            rep = _check(vehicle, traj.scaled(math.exp(x)), check, samples, refine, limits)
        except ValueError as exc:
            if "free fall" in str(exc) or "yaw singularity" in str(exc):
                return -np.inf
            raise
        reports[x] = rep
        return rep.worst - m

    x0 = 0.0
    f0 = w(x0)
    step = -math.log(2.0) if f0 >= 0 else math.log(2.0)
    xa, fa = x0, f0
    for _ in range(_MAX_BRACKET):
        xb = xa + step
        fb = w(xb)
        if (fb >= 0) != (fa >= 0):
            break
        xa, fa = xb, fb
    else:
        if f0 < 0:
            raise ValueError(f"margin: {m:g} is not kept even {2 ** _MAX_BRACKET:g} times slower (worst margin "
                             f"{fa + m:+.4f}: the hover itself misses it)")
        raise ValueError(f"margin: {m:g} is kept even {2 ** _MAX_BRACKET:g} times faster: the limits do not bind")
    (xl, fl), (xh, fh) = ((xa, fa), (xb, fb)) if fa < 0 else ((xb, fb), (xa, fa))
    width = -math.log1p(-tol)        # bracket width in log alpha: alpha_lo = alpha_hi (1 - tol)
    side, hist = 0, [abs(xh - xl)]
    while abs(xh - xl) > width:
        d = math.copysign(1.0, xh - xl)
        if len(hist) >= 3 and hist[-1] > 0.5 * hist[-3] or not np.isfinite(fl):
            x = 0.5 * (xl + xh)      # safeguard: two steps without halving the bracket -> bisect
        else:
            x = xh - fh * (xh - xl) / (fh - fl)
            x = min(max(x, min(xl, xh) + 0.01 * abs(xh - xl)), max(xl, xh) - 0.01 * abs(xh - xl))
            if abs(x - xh) < width:      # the root is next to the feasible end: probe one tolerance below it
                x = xh - d * width
            elif abs(x - xl) < width:    # ... or next to the infeasible end: probe one tolerance above it
                x = xl + d * width
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
        hist.append(abs(xh - xl))
    # fh was possibly halved: report the true values
    rep = reports[xh]
    below = reports.get(xl)
    return ScalingResult(math.exp(xh), traj.scaled(math.exp(xh)), rep, m, math.exp(xl), rep.worst,
                         below.worst if below is not None else -np.inf, count[0])
