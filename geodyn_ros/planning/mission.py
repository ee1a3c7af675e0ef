"""A mission: waypoints of the flat outputs with their timing, from a YAML file or a dict (ROS-free).

The ROS reference node flies missions (``geodyn_reference`` with ``trajectory: waypoints``,
:mod:`geodyn_ros.ros.nodes.reference_node`); this module is its file format and its replanning rule.

**The YAML schema** (``config/mission_example.yaml``)::

    joint_names: [J2, J3, J4, J5, J6, J7]   # columns of every waypoint's q (omit with no joints)
    waypoints:                               # at least 2; the first is the start (time 0)
      - {com: [0.0, 0.0, 1.0], yaw: 0.0, q: [0, 0, 0, 0, 0, 0]}
      - {com: [0.6, 0.3, 1.1], yaw: 0.4, q: [0.5, -0.3, 0.4, -0.5, 0.3, -0.4], time: 2.5}
    timing:                                  # when the waypoints have no 'time' (all or none have one)
      max_velocity: 0.5                      # [m/s]   CoM (required with timing)
      max_acceleration: 0.5                  # [m/s^2] CoM (required with timing)
      max_yaw_rate: 1.0                      # [rad/s]   optional, with max_yaw_acceleration
      max_yaw_acceleration: 1.0              # [rad/s^2]
      max_joint_velocity: 1.0                # [rad/s]   optional, with max_joint_acceleration
      max_joint_acceleration: 2.0            # [rad/s^2]
    constraints:                             # optional, interior waypoints only
      - {waypoint: 1, output: com, order: 1, values: [0.3, 0.0, 0.0]}

* ``com`` (3) [m]: the system centre of mass in the world frame (REP 103: x forward/east, z up);
  ``yaw`` [rad]: the Z-Y-X yaw of the base link (default 0), not wrapped; ``q`` [rad]: one value
  per ``joint_names`` entry.
* ``time`` [s]: from the mission's start, 0 for the first waypoint, strictly increasing; or no
  ``time`` anywhere and a ``timing`` block: :func:`~geodyn_ros.planning.allocate_times`.
* ``constraints``: :func:`~geodyn_ros.planning.plan_mission`'s ``(waypoint, output, order,
  values)`` (``output`` one of com, yaw, q; ``values`` the output's width, ``.nan`` for free).

Every error is one ``ValueError`` line ``<file>: <key>: <problem>; <fix>``, the vehicle file's
format (:mod:`geodyn_ros.model.validate`), e.g. ``missions/a.yaml: waypoints[2].com: expected 3
numbers, got shape (2,); give a list of 3 numbers``; a document given as a dict stands as
``mission`` in place of the file.

**Replanning** (:meth:`Mission.plan` with ``start``). A mission that replaces a running plan at
time ``t_s`` starts from the running plan's state there: its first waypoint is replaced by the
running jets' values at ``t_s`` and the plan's start derivatives ``1..k-1`` are the running jets'
(``k`` the objective order per output, ``traj.k``: 4 for the CoM, 3 for the yaw and joints at
``order`` 1 or 2). The published jets are therefore continuous at the switch up to derivative
``k-1``: CoM position to jerk, yaw and joints position to acceleration. The higher derivatives
(the CoM's snap and up, read by a feedforward of order ``r >= 0``) jump there, as they do at the
plan's own start (:mod:`~geodyn_ros.planning.planner`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.validate import FileKeys, clip, file_number, format_against, plural, read_yaml, short_repr
from ..trajectories import FlatReference
from .planner import MAX_CONSTRAINT_ORDER, OUTPUTS, FlatTrajectory, allocate_times, plan_mission

__all__ = ["Mission", "load_mission", "mission_from_dict", "slow_down", "TIMING_KEYS", "MAX_WAYPOINTS",
           "MAX_DURATION_S", "MIN_SEGMENT_S", "MAX_POSITION_M", "MAX_ANGLE_RAD"]

#: points of a mission after its start: a file has at most ``MAX_WAYPOINTS + 1`` waypoints, as a
#: topic mission of ``geodyn_reference`` has at most this many points (the minimum-derivative
#: solve is banded: linear in the points; 10,000 plan in about 5 s)
MAX_WAYPOINTS = 10_000
#: [s] a mission's length (a day: beyond any battery; stamps keep nanosecond resolution)
MAX_DURATION_S = 86_400.0
#: [s] the shortest segment between two waypoints: one step of the package's default control period.
#: A minimum-snap segment's derivatives scale as ``1 / h^k``: between waypoints 1 m apart a 1 ms
#: segment already asks for jerks of 1e9 m/s^3, and a 1e-300 s one overflows the plan to NaN.
MIN_SEGMENT_S = 1e-3
#: [m] the farthest a CoM waypoint may be from the origin: ``geodyn_reference``'s default
#: ``max_position`` (1000 km, beyond any flight; a CoM of 1e300 m overflowed the plan)
MAX_POSITION_M = 1e6
#: [rad] the largest yaw or joint angle of a waypoint: a yaw is not wrapped (a mission may turn many
#: times) and a continuous joint may too, but 1e4 rad is 1,592 turns; 1e300 is no angle
MAX_ANGLE_RAD = 1e4

#: the keys of a ``timing`` block (:func:`~geodyn_ros.planning.allocate_times`' limits)
TIMING_KEYS = ("max_velocity", "max_acceleration", "max_yaw_rate", "max_yaw_acceleration", "max_joint_velocity",
               "max_joint_acceleration")
_WAYPOINT_KEYS = ("com", "yaw", "q", "time")


@dataclass
class Mission:
    """Waypoints (``com`` (N+1, 3) [m], ``yaw`` (N+1,) [rad], ``q`` (N+1, n) [rad] or None),
    ``joint_names`` (n,), ``times`` (N+1,) [s] from the mission's start (``times[0] = 0``) or None
    with ``timing`` (the allocation limits), ``constraints`` (plan_mission's tuples)."""

    com: np.ndarray
    yaw: np.ndarray
    q: np.ndarray | None
    joint_names: tuple = ()
    times: np.ndarray | None = None
    timing: dict = field(default_factory=dict)
    constraints: list = field(default_factory=list)

    def plan(self, start_time: float, order: int, start: FlatReference | None = None) -> FlatTrajectory:
        """The plan of this mission starting at ``start_time`` [s] (its first knot).

        ``start`` None: from the first waypoint at rest. ``start`` a :class:`FlatReference` (the
        running plan's jets at ``start_time``, rows at least ``k``, joints in ``joint_names``
        order): from that state, continuous to derivative ``k-1`` (module docstring). Raises
        ValueError (plan_mission's line naming the argument)."""
        com, yaw = self.com.copy(), self.yaw.copy()
        q = None if self.q is None else self.q.copy()
        if start is not None:
            com[0], yaw[0] = start.com[0], start.yaw[0]
            if q is not None:
                q[0] = start.q[0]
        kw = {"times": float(start_time) + self.times} if self.times is not None else \
            dict(self.timing, start_time=float(start_time))
        traj = plan_mission(com, yaw, q, order=order, constraints=self.constraints or None, **kw)
        if start is None:
            return traj
        jets = {"com": np.asarray(start.com), "yaw": np.asarray(start.yaw), "q": np.asarray(start.q)}
        given = {nm: jets[nm][1:traj.k[nm]] for nm in traj.k}
        for nm, g in given.items():
            if g.shape[0] != traj.k[nm] - 1:
                raise ValueError(f"start: {nm} jets have {jets[nm].shape[0]} rows, the plan needs {traj.k[nm]}")
        if self.times is None:      # the allocation of the first segment changes with the start position
            kw = {"times": traj.times}
        return plan_mission(com, yaw, q, order=order, constraints=self.constraints or None, start=given, **kw)


def slow_down(mission: Mission, traj: FlatTrajectory, vehicle, margin: float, start: FlatReference | None = None,
              *, tol: float = 1e-3, max_alpha: float = 1024.0):
    """The fastest uniform slow-down of ``traj`` (``mission.plan(t_0, order, start)``) whose
    whole-body worst margin keeps ``margin``: ``(alpha, plan, report)``, the knots
    ``t_0 + alpha (t_i - t_0)``, or None when ``alpha = max_alpha`` does not keep it either.

    Unlike :func:`~geodyn_ros.planning.fastest_scaling` (which scales the derivatives, start ones
    included), every candidate is planned again from the same ``start`` state, so a replanned
    mission stays continuous at its switch. Bisection on ``alpha`` in ``[1, max_alpha]`` (first
    doubling from 1 until feasible), until ``alpha_below >= alpha (1 - tol)`` with ``alpha_below``
    infeasible: the result touches its binding limit to ``tol``. A sample where the flat map is
    undefined counts as infeasible."""
    from .feasibility import check_feasibility
    t0, rel, order = traj.start_time, traj.times - traj.start_time, traj.order
    held = Mission(mission.com, mission.yaw, mission.q, mission.joint_names, None, {}, mission.constraints)

    def attempt(alpha):
        held.times = alpha * rel
        plan = held.plan(t0, order, start)
        try:
            rep = check_feasibility(vehicle, plan)
        except ValueError:
            return None, plan
        return (rep if rep.worst >= margin else None), plan

    lo, hi = 1.0, 2.0
    rep, plan = attempt(hi)
    while rep is None:
        if hi >= max_alpha:
            return None
        lo, hi = hi, min(2.0 * hi, max_alpha)
        rep, plan = attempt(hi)
    best = (hi, plan, rep)
    while lo < hi * (1.0 - tol):
        mid = 0.5 * (lo + hi)
        r, p = attempt(mid)
        if r is None:
            lo = mid
        else:
            hi, best = mid, (mid, p, r)
    return best


def _numbers(c: FileKeys, key: str, value, width: int | None, want=None, fix=None):
    """A float (``width`` None) or a (width,) array at ``key``; refused with ``c`` (the file's line).
    Strict (:func:`~geodyn_ros.model.validate.file_number`): a bool (``true``) or a string is not a
    number; a list's length is checked before its entries."""
    want = want or ("a number" if width is None else plural(width, "number"))
    fix = fix or ("give a number" if width is None else f"give a list of {plural(width, 'number')}")
    if width is None:
        x = file_number(value)
        if x is None:
            c.fail(key, f"expected {want}, got {short_repr(value)}", fix)
        xs = [x]
    else:
        if not isinstance(value, (list, tuple, np.ndarray)) or np.ndim(value) != 1:
            c.fail(key, f"expected {want}, got {short_repr(value)}", fix)
        if len(value) != width:
            c.fail(key, f"expected {want}, got shape ({len(value)},)", fix)
        xs = [file_number(v) for v in value]
        for i, x in enumerate(xs):
            if x is None:
                c.fail(f"{key}[{i}]", f"expected a number, got {short_repr(value[i])}", "give a number")
    a = np.array(xs, dtype=float)
    if not np.all(np.isfinite(a)):
        c.fail(key, "contains NaN or Inf", "give finite numbers")
    return a[0] if width is None else a


#: the mission key a plan_mission argument comes from (its refusals are reworded to name it)
_PLAN_KEY = {"com": "waypoints", "yaw": "waypoints", "q": "waypoints", "times": "waypoints",
             "waypoints": "waypoints", "constraints": "constraints", **{k: f"timing.{k}" for k in TIMING_KEYS}}


def _bounded(c: FileKeys, key: str, a, bound: float, unit: str, why: str):
    """``a`` (a number or an array) unless an entry's magnitude exceeds ``bound`` [``unit``]."""
    big = np.abs(np.atleast_1d(a))
    if big.max() > bound:
        i = int(np.argmax(big))
        at = f"{key}[{i}]" if np.ndim(a) else key
        c.fail(at, f"{format_against(np.atleast_1d(a)[i], bound)} {unit} is beyond +-{bound:g} {unit} ({why})",
               "give the value in SI units")
    return a


def mission_from_dict(doc, where: str = "mission") -> Mission:
    """A :class:`Mission` from the parsed YAML (module docstring). ValueError: one line
    ``"<where>: <key>: <problem>; <fix>"`` (``where`` the file, or ``mission`` for a document)."""
    c = FileKeys(where)
    c.keys("", doc, ("joint_names", "waypoints", "timing", "constraints"))
    c.require("", doc, ("waypoints",), "give a list of at least 2 waypoints {com: [x, y, z], ...}")
    names = doc.get("joint_names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        c.fail("joint_names", f"expected a list of distinct joint names, got {short_repr(names)}",
               "give the model's joint names, once each")
    wps = doc["waypoints"]
    if not isinstance(wps, list) or len(wps) < 2:
        c.fail("waypoints", "expected a list of at least 2 waypoints, got "
               f"{len(wps) if isinstance(wps, list) else type(wps).__name__}", "give the start and at least one more")
    if len(wps) > MAX_WAYPOINTS + 1:
        c.fail("waypoints", f"{len(wps)} waypoints, over the limit of {MAX_WAYPOINTS + 1} (the start and "
               f"{MAX_WAYPOINTS} more, as geodyn_reference's topic missions)", "split the mission")
    n = len(names)
    q_want = f"{plural(n, 'number')}, one per joint of joint_names ({clip(', '.join(names), 100)})"
    q_fix = f"give {plural(n, 'joint position')} [rad] in the order of joint_names"
    com, yaw, q, times = [], [], [], []
    for i, wp in enumerate(wps):
        w = f"waypoints[{i}]"
        c.keys(w, wp, _WAYPOINT_KEYS)
        c.require(w, wp, ("com",), "give the system CoM [x, y, z] in m (world)")
        com.append(_bounded(c, f"{w}.com", _numbers(c, f"{w}.com", wp["com"], 3), MAX_POSITION_M, "m",
                            "geodyn_reference's default max_position: 1000 km"))
        yaw.append(float(_bounded(c, f"{w}.yaw", _numbers(c, f"{w}.yaw", wp.get("yaw", 0.0), None), MAX_ANGLE_RAD,
                                  "rad", "1,592 turns")))
        if n:
            c.require(w, wp, ("q",), f"give {n} joint positions, one per joint_names entry")
            q.append(_bounded(c, f"{w}.q", _numbers(c, f"{w}.q", wp["q"], n, q_want, q_fix), MAX_ANGLE_RAD,
                              "rad or m", "1,592 turns"))
        elif "q" in wp:
            c.fail(f"{w}.q", "given, but joint_names is empty", "list the joints in joint_names or drop q")
        if "time" in wp:
            times.append(float(_numbers(c, f"{w}.time", wp["time"], None)))
    timing = doc.get("timing")
    if times:
        if len(times) != len(wps):
            c.fail("waypoints", f"{len(times)} of {len(wps)} have a 'time'", "give all or none")
        if timing is not None:
            c.fail("timing", "given together with waypoint times", "give one")
        t = np.array(times)
        if t[0] != 0.0:
            c.fail("waypoints[0].time", f"the first waypoint is the start, time 0, got {t[0]!r}", "give time: 0")
        d = np.diff(t)
        if not np.all(d > 0):
            i = int(np.argmax(~(d > 0))) + 1
            c.fail(f"waypoints[{i}].time", f"must be after waypoints[{i - 1}].time ({t[i]!r} <= {t[i - 1]!r})",
                   "give strictly increasing times")
        if t[-1] > MAX_DURATION_S:
            c.fail(f"waypoints[{len(t) - 1}].time", f"{t[-1]:.6g} s, over the limit of {MAX_DURATION_S:g} s (a day, as "
                   "geodyn_reference's topic missions)", "split the mission")
        if d.min() < MIN_SEGMENT_S:
            i = int(np.argmin(d)) + 1
            c.fail(f"waypoints[{i}].time", f"{d.min():.6g} s after waypoints[{i - 1}].time, under the shortest segment "
                   f"of {MIN_SEGMENT_S:g} s (one step of the default control period)", "space the waypoints further")
        timing = {}
    else:
        t = None
        if timing is None:
            c.fail("timing", "the waypoints have no 'time', so a timing block with max_velocity and max_acceleration "
                   "is needed", "give the waypoints times or add timing:")
        c.keys("timing", timing, TIMING_KEYS)
        c.require("timing", timing, ("max_velocity", "max_acceleration"), "give the CoM's limit (> 0)")
        for key, v in timing.items():
            x = float(_numbers(c, f"timing.{key}", v, None))
            if not x > 0:
                c.fail(f"timing.{key}", f"expected a number > 0, got {short_repr(v)}", "give a positive limit")
        timing = {k: float(v) for k, v in timing.items()}
        try:
            t_alloc = allocate_times(np.array(com), np.array(yaw), np.array(q) if n else None, **timing)
        except ValueError as exc:
            arg, _, problem = str(exc).partition(": ")
            c.fail(_PLAN_KEY.get(arg, arg), problem, "give the waypoints times")
        d = np.diff(t_alloc)
        if not t_alloc[-1] <= MAX_DURATION_S:
            c.fail("timing", f"these limits make the mission {t_alloc[-1]:.6g} s long, over the limit of "
                   f"{MAX_DURATION_S:g} s (a day, as geodyn_reference's topic missions)", "raise the limits or split "
                   "the mission")
        if not d.min() >= MIN_SEGMENT_S:
            c.fail("timing", f"these limits give a segment of {d.min():.6g} s, under the shortest segment of "
                   f"{MIN_SEGMENT_S:g} s (one step of the default control period)", "lower the limits to what the "
                   "vehicle can fly")
    cons = []
    raw = doc.get("constraints") or []
    if not isinstance(raw, list):
        c.fail("constraints", f"expected a list, got {type(raw).__name__}",
               "give a list of {waypoint, output, order, values}")
    widths = {"com": 3, "yaw": 1, "q": n}
    for j, cn in enumerate(raw):
        w = f"constraints[{j}]"
        c.keys(w, cn, ("waypoint", "output", "order", "values"))
        c.require(w, cn, ("waypoint", "output", "order", "values"), "give waypoint, output, order and values")
        if cn["output"] not in OUTPUTS or not widths[cn["output"]]:
            c.fail(f"{w}.output", f"expected one of com, yaw{', q' if n else ''}, got {short_repr(cn['output'])}",
                   "name a flat output")
        for key in ("waypoint", "order"):
            if isinstance(cn[key], bool) or not isinstance(cn[key], int):
                c.fail(f"{w}.{key}", f"expected an integer, got {short_repr(cn[key])}", "give an integer")
        if not 1 <= cn["order"] <= MAX_CONSTRAINT_ORDER:
            c.fail(f"{w}.order", f"{short_repr(cn['order'])} is outside 1..{MAX_CONSTRAINT_ORDER}, the derivative "
                   "orders the planner supports (its polynomials lose their digits beyond)",
                   f"give 1 (velocity) to {MAX_CONSTRAINT_ORDER}")
        vals = cn["values"] if isinstance(cn["values"], list) else [cn["values"]]
        want = f"{plural(widths[cn['output']], 'number')} (.nan: free)"
        if len(vals) != widths[cn["output"]]:
            c.fail(f"{w}.values", f"expected {want}, got {len(vals)}", f"give {widths[cn['output']]} values")
        xs = [file_number(x) for x in vals]
        if None in xs:
            c.fail(f"{w}.values", f"expected {want}, got {short_repr(cn['values'])}", "give numbers or .nan")
        v = np.array(xs, dtype=float)
        cons.append((cn["waypoint"], cn["output"], cn["order"], v))
    m = Mission(np.array(com), np.array(yaw), np.array(q) if n else None, tuple(names), t, timing, cons)
    try:     # plan once: the planner's own checks (constraint indices, allocation) name their argument
        m.plan(0.0, 2)
    except ValueError as exc:
        arg, _, problem = str(exc).partition(": ")
        key = _PLAN_KEY.get(arg, arg)
        c.fail(key, problem, None if "; " in problem else f"fix {key} (the planner refuses them)")
    return m


def load_mission(path) -> Mission:
    """Read a mission YAML file (module docstring). ValueError: one line
    ``"<file>: <key>: <problem>; <fix>"``; a file that cannot be read or is not YAML:
    :func:`~geodyn_ros.model.validate.read_yaml`'s ``"<file>: cannot be read (<reason>); give the
    path of an existing mission file"`` or ``"<file>: line L, column C, in <key>: <problem>; <fix>"``."""
    return mission_from_dict(read_yaml(path, "mission file"), where=str(path))
