"""Waypoints in flat outputs to a :class:`FlatTrajectory` the loops fly like the built-in references.

The flat outputs of the collinear multirotor manipulator are the system CoM ``c`` (world, 3), the
Z-Y-X base yaw ``psi`` and the joint angles ``q`` (n) (:func:`geodyn_ros.flat_inverse_dynamics`).
A feedforward of order ``r`` reads ``c^(0..r+4)``, ``psi^(0..r+2)`` and ``q^(0..r+2)``
(``FLATNESS.md``), so the planned jets must be continuous to those orders at every knot.

**Choice (per flat output, :func:`~geodyn_ros.planning.polynomial.objective_order`).** Minimum
``k``-th derivative piecewise polynomials of degree ``2k-1`` with free interior derivatives are
``C^(2k-2)`` at the knots (the Euler-Lagrange argument of :mod:`geodyn_ros.planning.polynomial`),
so the smallest sufficient ``k`` is taken:

* CoM: ``C^(r+4)`` -> ``k = ceil((r+6)/2)``: **minimum snap** (``k = 4``, degree 7, ``C^6``) for
  ``r = 1, 2`` (``r = 2``: elastic-joint feedforward); minimum jerk for ``r = 0``;
* yaw and joints: ``C^(r+2)`` -> ``k = ceil((r+4)/2)``: **minimum jerk** (``k = 3``, degree 5, ``C^4``)
  for ``r = 1, 2``;
* an interior derivative constraint of order ``m`` lets ``p^(2k-1-m)`` jump, so ``k`` grows by
  ``ceil(m/2)`` for that output (``C^(2k-2-m)`` kept ``>=`` the promise).

The end derivatives ``1..k-1`` are fixed (rest by default); outside ``[t_0, t_N]`` the trajectory
holds its end waypoints at rest. At the ends the jets are therefore continuous to ``k-1`` only
(snap and up jump at ``t_0`` for a minimum-snap CoM): start a loop on the trajectory at ``t_0``
(``preroll=0``), where the start state is the flat map's exact state.

The solve is one banded linear system per column (``O(N)`` in the number of segments); there is no
NLP. Times are given, or allocated per segment from velocity and acceleration limits
(:func:`allocate_times`: the rest-to-rest trapezoid time of the largest move; a heuristic, the
exact check and :func:`~geodyn_ros.planning.scaling.fastest_scaling` then set the speed).
"""
from __future__ import annotations

import math

import numpy as np

from ..trajectories import FlatReference
from .polynomial import PiecewisePolynomial, minimum_derivative, objective_order

__all__ = ["FlatTrajectory", "plan_mission", "allocate_times", "OUTPUTS", "MAX_OBJECTIVE_ORDER",
           "MAX_CONSTRAINT_ORDER"]

#: the highest objective order ``k`` (polynomials of degree ``2k - 1``) the planner solves: its
#: Hermite basis (factorials of ``2k - 1``) loses digits as ``k`` grows. Measured on three waypoints
#: with a constraint at the middle one (test/control/test_planning.py): the knots are met to 1e-10 m
#: at ``k = 7``, 1.5e-9 at 8, 6e-8 at 9, 3e-6 at 11, and from ``k = 12`` the system is singular (a
#: derivative order of 150 overflowed the factorials, 3000 did not finish in 100 s). 8 covers
#: ``order`` up to 10 without constraints (``k = ceil((order + 6) / 2)``), far above the feedforward's 2.
MAX_OBJECTIVE_ORDER = 8
#: the highest derivative order of an interior constraint: ``k >= m + 1``, so :data:`MAX_OBJECTIVE_ORDER`
#: - 1 (7, above the CoM's snap and the highest derivative a feedforward of order 2 reads, 6)
MAX_CONSTRAINT_ORDER = MAX_OBJECTIVE_ORDER - 1

#: the flat outputs, in order
OUTPUTS = ("com", "yaw", "q")


def _finite(name, a):
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf")
    return a


def _waypoints(name, x, width, rows=None):
    """(rows, width) float array (``width`` None: a 1-D array as one column)."""
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected an array of real numbers, got {type(x).__name__}") from None
    if width is None:
        if a.ndim != 1:
            raise ValueError(f"{name}: expected shape (n_waypoints,), got {a.shape}")
        a = a[:, None]
    elif a.ndim != 2 or a.shape[1] != width:
        raise ValueError(f"{name}: expected shape (n_waypoints, {width}), got {a.shape}")
    if rows is not None and a.shape[0] != rows:
        raise ValueError(f"{name}: {a.shape[0]} waypoints, but com has {rows}")
    return _finite(name, a)


def _trapezoid_time(dist, vmax, amax):
    """Rest-to-rest time [s] of a trapezoidal speed profile over ``dist`` (array) with ``vmax``, ``amax``."""
    dist = np.asarray(dist, float)
    ramp = vmax * vmax / amax
    return np.where(dist >= ramp, dist / vmax + vmax / amax, 2.0 * np.sqrt(dist / amax))


def _limit(name, v):
    if v is None:
        return None
    x = float(v)
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name}: expected a finite value > 0, got {v!r}")
    return x


def allocate_times(com, yaw=None, q=None, *, max_velocity=None, max_acceleration=None, max_yaw_rate=None,
                   max_yaw_acceleration=None, max_joint_velocity=None, max_joint_acceleration=None,
                   start_time: float = 0.0) -> np.ndarray:
    """Knot times (N+1,) [s]: each segment lasts the longest rest-to-rest trapezoid time of its moves.

    com (N+1, 3) [m] with ``max_velocity`` [m/s] and ``max_acceleration`` [m/s^2] on the Euclidean
    distance; yaw (N+1,) [rad] with ``max_yaw_rate``, ``max_yaw_acceleration``; q (N+1, n) [rad]
    with ``max_joint_velocity``, ``max_joint_acceleration`` per joint (each pair optional). A
    segment without motion gets the shortest time of the others (none moving: ``ValueError``). The
    polynomial's peaks exceed the trapezoid's: this only sets the ratios of the durations.
    """
    c = _waypoints("com", com, 3)
    vmax, amax = _limit("max_velocity", max_velocity), _limit("max_acceleration", max_acceleration)
    if vmax is None or amax is None:
        raise ValueError("max_velocity: the time allocation needs max_velocity and max_acceleration")
    h = _trapezoid_time(np.linalg.norm(np.diff(c, axis=0), axis=1), vmax, amax)
    for nm, x, width, vn, an, v, a in (("yaw", yaw, None, "max_yaw_rate", "max_yaw_acceleration", max_yaw_rate,
                                        max_yaw_acceleration),
                                       ("q", q, np.ndim(q) and np.shape(q)[-1], "max_joint_velocity",
                                        "max_joint_acceleration", max_joint_velocity, max_joint_acceleration)):
        v, a = _limit(vn, v), _limit(an, a)
        if x is None or v is None or a is None:
            continue
        w = _waypoints(nm, x, width, len(c))
        h = np.maximum(h, _trapezoid_time(np.abs(np.diff(w, axis=0)).max(axis=1), v, a))
    pos = h[h > 0]
    if not len(pos):
        raise ValueError("com: no waypoint moves (with the limits given), so no time follows from them; give times")
    h = np.where(h > 0, h, pos.min())
    return float(start_time) + np.concatenate([[0.0], np.cumsum(h)])


class FlatTrajectory:
    """The planned flat outputs: exact jets at any time, as the built-in references give them.

    ``traj(t, order)`` returns a :class:`~geodyn_ros.trajectories.FlatReference` with ``com``
    (order+5, 3), ``yaw`` (order+3,), ``q`` (order+3, n): exactly the rows
    ``gd.flat_inverse_dynamics(..., order=order)`` reads, so it is a ``reference`` for
    :func:`~geodyn_ros.loops.underactuated.simulate_underactuated` and the ROS reference node.
    :meth:`jets` evaluates T times at once (the batch flat map's input layout). Jets of a higher
    order than the plan's ``order`` exist (exact on each segment) but jump at the knots beyond
    ``continuity``.

    Attributes: ``times`` (N+1,) knots [s]; ``com``, ``yaw``, ``q`` the :class:`PiecewisePolynomial`
    of each output (``q`` None without joints); ``order`` the feedforward order ``r`` the
    continuity was chosen for; ``k`` the objective order per output (dict); ``continuity`` the
    guaranteed ``C^m`` per output at the interior knots (dict).
    """

    def __init__(self, com: PiecewisePolynomial, yaw: PiecewisePolynomial, q: PiecewisePolynomial | None,
                 order: int, k: dict, continuity: dict):
        self.com, self.yaw, self.q = com, yaw, q
        self.order, self.k, self.continuity = order, dict(k), dict(continuity)
        self.times = com.times
        self.n_joints = 0 if q is None else q.width
        self.plan_inputs = None          # plan_mission's inputs (times excluded): what replan() re-solves

    @property
    def start_time(self) -> float:
        return float(self.times[0])

    @property
    def end_time(self) -> float:
        return float(self.times[-1])

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0])

    def __call__(self, t: float, order: int | None = None) -> FlatReference:
        r = self.order if order is None else int(order)
        if r < 0:
            raise ValueError(f"order: expected a non-negative integer, got {order!r}")
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"t: expected a finite time, got {t!r}")
        c, y, q = self.jets(np.array([t]), r)
        return FlatReference(com=c[0], yaw=y[0], q=q[0])

    def jets(self, t, order: int | None = None) -> tuple:
        """``(com (T, r+5, 3), yaw (T, r+3), q (T, r+3, n))`` at the times ``t`` (T,)."""
        r = self.order if order is None else int(order)
        t = np.atleast_1d(np.asarray(t, float))
        if t.ndim != 1 or not np.all(np.isfinite(t)):
            raise ValueError(f"t: expected finite times (T,), got shape {t.shape}" + ("" if t.ndim != 1 else
                                                                                          " with NaN or Inf"))
        c = self.com.jets(t, r + 5)
        y = self.yaw.jets(t, r + 3)[:, :, 0]
        q = self.q.jets(t, r + 3) if self.q is not None else np.zeros((len(t), r + 3, 0))
        return np.ascontiguousarray(c), np.ascontiguousarray(y), np.ascontiguousarray(q)

    def scaled(self, alpha: float) -> "FlatTrajectory":
        """The same path ``alpha`` times slower (``alpha < 1``: faster), from the same start time:
        ``x_alpha(t) = x(t_0 + (t - t_0) / alpha)``, so the k-th derivative scales by ``alpha^-k``."""
        a = float(alpha)
        if not (math.isfinite(a) and a > 0):
            raise ValueError(f"alpha: expected a finite time scale > 0, got {alpha!r}")
        out = FlatTrajectory(self.com.scaled(a), self.yaw.scaled(a), None if self.q is None else self.q.scaled(a),
                             self.order, self.k, self.continuity)
        out.plan_inputs = self.plan_inputs
        return out

    def replan(self, times) -> "FlatTrajectory":
        """The same waypoints, end conditions and constraints planned at new knot ``times`` (N+1,)
        (:func:`plan_mission`; per-segment timing, :func:`~geodyn_ros.planning.fastest_segment_times`)."""
        if self.plan_inputs is None:
            raise ValueError("traj: not made by plan_mission, so there are no waypoints to replan")
        return plan_mission(times=times, **self.plan_inputs)


def _constraints(constraints, n_wp, widths):
    """{output: {(knot, order): values}} from a list of (waypoint, output, order, values)."""
    out = {nm: {} for nm in OUTPUTS}
    for item in constraints or ():
        try:
            i, nm, m, v = item
        except (TypeError, ValueError):
            raise ValueError(f"constraints: expected (waypoint, output, order, values) tuples, got {item!r}") from None
        if nm not in OUTPUTS or widths[nm] == 0:
            raise ValueError(f"constraints: unknown or empty output {nm!r} (one of {OUTPUTS})")
        if not (isinstance(i, (int, np.integer)) and 0 < i < n_wp - 1):
            raise ValueError(f"constraints: waypoint {i!r} is not an interior waypoint (1..{n_wp - 2}); the end "
                             "derivatives are start and end")
        if not (isinstance(m, (int, np.integer)) and 1 <= m <= MAX_CONSTRAINT_ORDER):
            raise ValueError(f"constraints: derivative order {m!r} must be an integer in 1..{MAX_CONSTRAINT_ORDER} "
                             "(the planner's supported range)")
        val = np.array(v, dtype=float).reshape(-1)
        if val.shape != (widths[nm],) or np.all(np.isnan(val)) or np.any(np.isinf(val)):
            raise ValueError(f"constraints: {nm} derivative {m} at waypoint {i}: expected {widths[nm]} finite values "
                             f"(NaN: free), got {v!r}")
        out[nm][(int(i), int(m))] = val
    return out


def plan_mission(com, yaw=None, q=None, times=None, *, order: int = 2, start=None, end=None, constraints=None,
                 **allocation) -> FlatTrajectory:
    """Plan the flat outputs through waypoints (module docstring): a :class:`FlatTrajectory`.

    Parameters
    ----------
    com : (N+1, 3) CoM waypoints [m], world (N >= 1 segments).
    yaw : (N+1,) Z-Y-X yaw waypoints [rad] (default zeros); not wrapped: give the yaw you want.
    q : (N+1, n) joint waypoints [rad], columns ``model.joint_names`` (default: no joints).
    times : (N+1,) strictly increasing waypoint times [s]; ``None``: :func:`allocate_times` with the
        keywords ``max_velocity``, ``max_acceleration`` (required then) and the optional yaw and
        joint limits.
    order : the feedforward order ``r`` whose continuity the plan guarantees (default 2, ``ff2``).
    start, end : dict ``{output: (k-1, width) derivatives 1..k-1}`` at the first / last waypoint
        (default rest: zeros; NaN entries free). ``k`` per output is ``traj.k`` (see the module docstring).
    constraints : iterable of ``(waypoint, output, derivative_order, values)``, e.g.
        ``(3, "com", 1, (0.5, 0, 0))`` for a CoM velocity at waypoint 3 (interior waypoints only;
        NaN values free).

    Returns
    -------
    FlatTrajectory

    Raises
    ------
    ValueError
        one line naming the argument: fewer than 2 waypoints, wrong widths, NaN/Inf,
        non-increasing times, bad constraints.
    """
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise ValueError(f"order: expected a non-negative integer, got {order!r}")
    c = _waypoints("com", com, 3)
    n_wp = c.shape[0]
    if n_wp < 2:
        raise ValueError(f"com: at least 2 waypoints are needed, got {n_wp}")
    y = np.zeros((n_wp, 1)) if yaw is None else _waypoints("yaw", yaw, None, n_wp)
    if q is not None and np.ndim(q) != 2:
        raise ValueError(f"q: expected shape (n_waypoints, n_joints), got {np.shape(q)}")
    qq = None if q is None else _waypoints("q", q, np.shape(q)[1], n_wp)
    if times is None:
        t = allocate_times(c, None if yaw is None else y[:, 0], qq, **allocation)
    else:
        if allocation:
            raise ValueError(f"times: given together with the allocation limits {sorted(allocation)}; give one")
        t = _waypoints("times", times, None, n_wp)[:, 0]
    if not np.all(np.diff(t) > 0):
        i = int(np.argmax(~(np.diff(t) > 0)))
        raise ValueError(f"times: must be strictly increasing, but times[{i + 1}] = {float(t[i + 1])!r} <= "
                         f"times[{i}] = {float(t[i])!r}")
    widths = {"com": 3, "yaw": 1, "q": 0 if qq is None else qq.shape[1]}
    for label, given in (("start", start), ("end", end)):
        if given is not None and (not hasattr(given, "items") or set(given) - {nm for nm in OUTPUTS if widths[nm]}):
            raise ValueError(f"{label}: expected a mapping {{output: end derivatives}} with outputs among "
                             f"{[nm for nm in OUTPUTS if widths[nm]]}, got "
                             f"{sorted(map(str, given)) if hasattr(given, 'items') else type(given).__name__}")
    cons = _constraints(constraints, n_wp, widths)
    need = {"com": order + 4, "yaw": order + 2, "q": order + 2}
    k, cont, polys = {}, {}, {}
    for nm, W in (("com", c), ("yaw", y), ("q", qq)):
        if W is None or W.shape[1] == 0:
            continue
        m = max((o for (_, o) in cons[nm]), default=0)
        k[nm] = kk = objective_order(need[nm], m)
        if kk > MAX_OBJECTIVE_ORDER:
            raise ValueError(f"order: {order} asks the {nm} for a minimum-derivative objective of order {kk}, over the "
                             f"planner's {MAX_OBJECTIVE_ORDER} (its polynomials lose their digits beyond); give an "
                             f"order of at most {2 * MAX_OBJECTIVE_ORDER - 6}")
        cont[nm] = 2 * kk - 2 - m
        ends = []
        for label, given in (("start", start), ("end", end)):
            g = None if given is None else given.get(nm)
            if g is not None:
                g = np.array(g, dtype=float)
                if g.shape not in ((kk - 1, W.shape[1]),) + (((kk - 1,),) if nm == "yaw" else ()):
                    raise ValueError(f"{label}: {nm} end derivatives 1..{kk - 1}: expected shape ({kk - 1}, "
                                     f"{W.shape[1]}), got {g.shape}")
                if np.any(np.isinf(g)):
                    raise ValueError(f"{label}: {nm} contains Inf")
            ends.append(g)
        polys[nm] = minimum_derivative(t, W, kk, ends[0], ends[1], cons[nm])
    traj = FlatTrajectory(polys["com"], polys["yaw"], polys.get("q"), int(order), k, cont)
    traj.plan_inputs = {"com": c, "yaw": y[:, 0], "q": qq, "order": int(order), "start": start, "end": end,
                        "constraints": constraints}
    return traj
