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

from ..model.validate import FileKeys, as_floats, clip, plural, read_yaml, short_repr
from ..trajectories import FlatReference
from .planner import OUTPUTS, FlatTrajectory, plan_mission

__all__ = ["Mission", "load_mission", "mission_from_dict", "slow_down", "TIMING_KEYS"]

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
    """A float (``width`` None) or a (width,) array at ``key``; refused with ``c`` (the file's line)."""
    want = want or ("a number" if width is None else plural(width, "number"))
    fix = fix or ("give a number" if width is None else f"give a list of {plural(width, 'number')}")
    try:
        a = as_floats(key, value)
    except ValueError:
        c.fail(key, f"expected {want}, got {short_repr(value)}", fix)
    if (width is None and a.ndim != 0) or (width is not None and a.shape != (width,)):
        c.fail(key, f"expected {want}, got shape {a.shape}", fix)
    if not np.all(np.isfinite(a)):
        c.fail(key, "contains NaN or Inf", "give finite numbers")
    return a


#: the mission key a plan_mission argument comes from (its refusals are reworded to name it)
_PLAN_KEY = {"com": "waypoints", "yaw": "waypoints", "q": "waypoints", "times": "waypoints",
             "waypoints": "waypoints", "constraints": "constraints", **{k: f"timing.{k}" for k in TIMING_KEYS}}


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
    n = len(names)
    q_want = f"{plural(n, 'number')}, one per joint of joint_names ({clip(', '.join(names), 100)})"
    q_fix = f"give {plural(n, 'joint position')} [rad] in the order of joint_names"
    com, yaw, q, times = [], [], [], []
    for i, wp in enumerate(wps):
        w = f"waypoints[{i}]"
        c.keys(w, wp, _WAYPOINT_KEYS)
        c.require(w, wp, ("com",), "give the system CoM [x, y, z] in m (world)")
        com.append(_numbers(c, f"{w}.com", wp["com"], 3))
        yaw.append(float(_numbers(c, f"{w}.yaw", wp.get("yaw", 0.0), None)))
        if n:
            c.require(w, wp, ("q",), f"give {n} joint positions, one per joint_names entry")
            q.append(_numbers(c, f"{w}.q", wp["q"], n, q_want, q_fix))
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
        vals = cn["values"] if isinstance(cn["values"], list) else [cn["values"]]
        want = f"{plural(widths[cn['output']], 'number')} (.nan: free)"
        try:
            v = np.array(vals, dtype=float)
        except (TypeError, ValueError):
            c.fail(f"{w}.values", f"expected {want}, got {short_repr(cn['values'])}", "give numbers or .nan")
        if v.shape != (widths[cn["output"]],):
            c.fail(f"{w}.values", f"expected {want}, got {v.size}", f"give {widths[cn['output']]} values")
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
