"""Why the planner checks the whole body: three timings of one waypoint mission, flown in MuJoCo.

The mission (the tutorial's, ``doc/tutorials/plan_mission.md``): the hexarotor manipulator
(``urdf/hexarotor_manipulator.urdf.xacro``, ``config/hexarotor.yaml``, read by
:meth:`geodyn_ros.planning.Vehicle.from_files` with every limit of the file) flies its CoM through four
waypoints over 2 m while the yaw turns by 1 rad and all six arm joints swing by 40-60 deg between
waypoints, so the arm's reaction torque matters. :func:`geodyn_ros.planning.plan_mission` plans it
(minimum snap CoM, minimum jerk yaw and joints, ``C^6`` / ``C^4``, ``order=2``); then
:func:`geodyn_ros.planning.fastest_scaling` finds the fastest uniform timing that keeps a
``margin`` (default 0.1: 10 % of every limit's range left for the feedback) by each check:

* ``rigid_rates``: baseline (a), mav_trajectory_generation's rigid-body check (normalised thrust,
  body rates, its default rate limits);
* ``frozen_arm``: baseline (b), the rotor-speed and lag check on the rigid flat map with the arm
  frozen at its mean configuration;
* ``whole_body``: the exact flat map (rotor speeds, lag, elastic motor torques).

Each timing is then flown by the ``ff2`` loop (:func:`geodyn_ros.loops.underactuated.simulate_underactuated`,
rotor lag and elastic joints, started on the plan at ``t_0``). Columns: ``alpha`` (durations times
alpha), duration [s], the check's binding limit, the whole-body margin at that timing (negative:
a limit is exceeded), and the flight's rotor saturations (clipped rotor commands, counted per rotor
and step), CoM RMS and max [m], joint RMS [deg]; ``plan_ms`` the wall time of plan + check +
scaling (whole body).

    python -m geodyn_ros.examples.plan_mission            # the table
    python -m geodyn_ros.examples.plan_mission --json     # one JSON object

**The mission at the limit under sensing** (``--sensing``, issue 55 item 5): the whole-body timing
(the fastest the check accepts) and the same path at 75 % and 50 % of its speed (durations over
0.75 and 0.5), flown by every level of the flatness controller (``rigid``, ``ff0``, ``ff1``,
``ff2``) under each sensing profile of ``config/sensors.yaml``, as the sensing table flies its rows
(:mod:`geodyn_ros.loops.sensed`): from the ground, taken off, the mission, landed; the scored window
is the mission. Every cell flies the same seeds (a seed's sensor errors are the same draw for every
level and timing), ``perfect`` one seed (it is deterministic). The gains are the vehicle's, lowered
for a profile's delay as the sensing table lowers them (:func:`~geodyn_ros.examples.sensing_table.fit_gains`;
none is lowered on this vehicle). Per cell: the CoM RMS and max, the joint RMS and the rotor
saturations, mean and 95 % interval over the seeds; adjacent orders paired over the seeds.
``--world NAME`` flies a plant that is not the model (a world of ``config/world.yaml``: model
error, wind; :mod:`geodyn_ros.sim.world`), drawn per seed, and ``--rejection`` turns on every
rejection option of the controllers (the rejection table's ``on``), as a lab flying in wind would.
In a world the flight starts in a hover at the first waypoint, held :data:`WORLD_PREROLL_S`
before the mission, not on the ground: a take-off in the simulated wind tips over at lift-off.

    python -m geodyn_ros.examples.plan_mission --sensing --quick          # 2 seeds, mocap and onboard
    python -m geodyn_ros.examples.plan_mission --sensing --seeds 5 --jobs 2 --json-out out/mission.json
    python -m geodyn_ros.examples.plan_mission --sensing --profiles mocap --world wind_light --rejection --jobs 2
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from geodyn_ros.loops.underactuated import simulate_underactuated
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.planning import Vehicle, check_feasibility, fastest_scaling, plan_mission

__all__ = ["MISSION", "CHECKS", "SENSING_LEVELS", "PROFILES", "SPEEDS", "WORLD_PREROLL_S", "compare", "format_table", "mission_timings",
           "fly_mission", "format_mission", "main"]

_SWING = np.deg2rad([60.0, -40.0, 50.0, -60.0, 40.0, -50.0])
#: the mission: CoM waypoints [m] (world), yaw [rad], joints J2..J7 [rad], allocation limits
MISSION = {"com": [[0.0, 0.0, 1.0], [1.0, 0.5, 1.2], [2.0, 0.0, 1.0], [1.0, -0.5, 1.1]],
           "yaw": [0.0, 0.5, 1.0, 0.0],
           "q": [np.zeros(6), _SWING, -_SWING, np.zeros(6)],
           "max_velocity": 1.0, "max_acceleration": 1.0}
#: the rows: baseline (a), baseline (b), the whole body
CHECKS = ("rigid_rates", "frozen_arm", "whole_body")


def compare(margin: float = 0.1, *, fly: bool = True) -> dict:
    """The comparison (module docstring) as a JSON-ready dict: ``margin``, ``plan_ms``, ``rows``
    ``{check: {alpha, duration_s, binding_limit, whole_body_margin[, rotor_saturations, com_rms_m,
    com_max_m, joint_rms_deg]}}``. ``fly=False`` skips the MuJoCo flights."""
    vehicle = Vehicle.from_files(shipped_urdf("hexarotor_manipulator.urdf.xacro"), "hexarotor")
    check_feasibility(vehicle, plan_mission(**MISSION))   # warm-up: numba kernels loaded before the timing
    t0 = time.perf_counter()
    traj = plan_mission(**MISSION)
    whole = fastest_scaling(vehicle, traj, margin=margin)
    plan_ms = (time.perf_counter() - t0) * 1e3
    rows = {}
    for check in CHECKS:
        res = whole if check == "whole_body" else fastest_scaling(vehicle, traj, margin=margin, check=check)
        wb = check_feasibility(vehicle, res.trajectory)
        row = {"alpha": res.alpha, "duration_s": res.trajectory.duration, "binding_limit": res.report.limit,
               "whole_body_margin": wb.worst, "whole_body_limit": wb.limit}
        if fly:
            m = simulate_underactuated("ff2", duration=res.trajectory.duration, reference=res.trajectory,
                                       preroll=0.0).metrics()
            row.update(rotor_saturations=m["rotor_saturations"], com_rms_m=m["com_rms_m"], com_max_m=m["com_max_m"],
                       joint_rms_deg=m["joint_rms_deg"], rotor_speed_peak_rad_s=m["rotor_speed_peak_rad_s"])
        rows[check] = row
    return {"margin": float(margin), "plan_ms": plan_ms, "mission_duration_s": traj.duration, "rows": rows}


def format_table(obj: dict) -> str:
    """The rows of :func:`compare` as a text table (within 100 columns)."""
    hdr = (f"{'check':11s} {'alpha':>7s} {'T [s]':>6s} {'binding limit':>22s} {'WB margin':>9s} {'sat':>5s} "
           f"{'CoM RMS [m]':>11s} {'CoM max [m]':>11s} {'q RMS[deg]':>10s}")
    lines = [f"margin {obj['margin']:g}; plan + check + scaling {obj['plan_ms']:.1f} ms", hdr, "-" * len(hdr)]
    for name, r in obj["rows"].items():
        fl = (f"{r['rotor_saturations']:5d} {r['com_rms_m']:11.2e} {r['com_max_m']:11.2e} {r['joint_rms_deg']:10.2e}"
              if "com_rms_m" in r else "")
        lines.append(f"{name:11s} {r['alpha']:7.4f} {r['duration_s']:6.2f} {r['binding_limit'][-22:]:>22s} "
                     f"{r['whole_body_margin']:+9.4f} {fl}".rstrip())
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the mission under sensing
#: the levels flown (the flatness controller's), the sensing profiles (config/sensors.yaml) and the
#: timings: fractions of the fastest whole-body timing's speed
SENSING_LEVELS = ("rigid", "ff0", "ff1", "ff2")
PROFILES = ("perfect", "mocap", "onboard", "mocap_real", "onboard_real")
SPEEDS = (1.0, 0.75, 0.5)
QUICK = {"profiles": ("mocap", "onboard"), "seeds": 2, "speeds": (1.0, 0.5)}
#: [s] in a world, the flight starts in a hover at the first waypoint and holds it this long before
#: the mission (the rejection table's pre-roll): a take-off from the ground in the simulated wind
#: tips over at lift-off (wind_light, mocap, ff1: 90 deg at t = -3.19 s, with and without rejection)
WORLD_PREROLL_S = 5.0
_MISSION_CACHE: dict = {}


def mission_timings(margin: float = 0.1, speeds=SPEEDS) -> dict:
    """``{speed: (trajectory, whole-body margin, its binding limit)}``: the mission at the fastest
    whole-body timing keeping ``margin`` (speed 1) and the same path at a fraction of that speed
    (durations over ``speed``)."""
    key = (float(margin), tuple(speeds))
    if key not in _MISSION_CACHE:
        vehicle = Vehicle.from_files(shipped_urdf("hexarotor_manipulator.urdf.xacro"), "hexarotor")
        traj = plan_mission(**MISSION)
        fast = fastest_scaling(vehicle, traj, margin=margin)
        out = {}
        for f in speeds:
            tr = fast.trajectory if f == 1.0 else traj.scaled(fast.alpha / f)
            wb = check_feasibility(vehicle, tr)
            out[f] = (tr, float(wb.worst), wb.limit)
        _MISSION_CACHE[key] = out
    return _MISSION_CACHE[key]


def _mission_flight(args):
    """(profile, level, speed, seed, margin, speeds, world, rejection) -> (key, metrics or
    {"diverged"} or {"error"}); world: a preset of ``config/world.yaml`` or None (the plant is the
    model), drawn with the seed; rejection: the rejection table's ``on`` options or none."""
    prof_name, level, f, seed, margin, speeds, world, rejection = args
    key = (prof_name, f, level, seed)
    from geodyn_ros.examples.gain_sweep import ERROR_CHARS
    try:
        from geodyn_ros.examples.gain_sweep import base_gains
        from geodyn_ros.examples.sensing_table import _VEHICLE_CACHE, _rule_for, _Vehicle, condition_profile, loop_delay
        from geodyn_ros.loops.sensed import Sensing
        v = _VEHICLE_CACHE.get("underactuated") or _VEHICLE_CACHE.setdefault("underactuated", _Vehicle("underactuated"))
        prof = condition_profile(prof_name)
        traj = mission_timings(margin, speeds)[f][0]
        sensing = Sensing(prof, seed=seed, ground=world is None, log=None, rule=_rule_for(None, prof))
        kw = {}
        if world is not None:     # from a hover at the first waypoint (the plan holds its ends), see WORLD_PREROLL_S
            from geodyn_ros.sim.world_file import world_preset
            kw.update(world=world_preset(world), world_seed=seed, preroll=WORLD_PREROLL_S)
        if rejection:
            from geodyn_ros.examples.rejection_table import on_options
            kw.update(rejection=on_options("collinear"))
        res = v.run(level, traj.duration, gains=base_gains(v, loop_delay(prof)), sensing=sensing, reference=traj, **kw)
        if res.diverged:
            return key, {"diverged": str(res.diverged)[:ERROR_CHARS]}
        r = res.log.rms()
        return key, {"com_rms_m": float(r["position_m"]), "com_max_m": float(r["max_position_m"]),
                     "joint_rms_deg": float(r["joint_deg"]), "rotor_saturations": int(res.rotor_saturations)}
    except Exception as exc:      # a flight that cannot run is reported, the others go on
        return key, {"error": f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]}


def fly_mission(profiles=PROFILES, *, levels=SENSING_LEVELS, speeds=SPEEDS, seeds: int = 5, margin: float = 0.1,
                jobs: int = 1, world: str | None = None, rejection: bool = False, progress=None) -> dict:
    """The mission at the limit under sensing (module docstring): ``{"settings", "timings": {speed:
    {"duration_s", "whole_body_margin", "binding_limit"}}, "cells": {profile: {speed: {level:
    {"seeds": [...], "com_rms_m": [...], ..., "diverged": [...], "failed": [...], "mean_m", "ci_m"}}}}}``
    (``mean_m``/``ci_m`` of the CoM RMS; ``ci_m`` 0 for ``perfect`` without a world, flown once).
    world: a preset of ``config/world.yaml`` the plant flies in (drawn per seed; ``perfect`` then
    flies every seed too), or None; rejection: the controllers with every rejection option on
    (:func:`geodyn_ros.examples.rejection_table.on_options`)."""
    from geodyn_ros.examples.gain_sweep import fly_tasks, mean_ci
    from geodyn_ros.sim.sensor_file import sensor_profile
    for name, val, allowed in (("profiles", profiles, None), ("levels", levels, SENSING_LEVELS), ("speeds", speeds, None)):
        if isinstance(val, (str, bytes)) or not len(val):
            raise ValueError(f"{name}: expected a non-empty list, got {val!r}")
        if allowed is not None and any(x not in allowed for x in val):
            raise ValueError(f"{name}: expected some of {', '.join(allowed)}, got {list(val)!r}")
    for p in profiles:
        sensor_profile(p)           # an unknown profile fails here, in one line, before any flight
    for f in speeds:
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not (math.isfinite(f) and 0 < f <= 1):
            raise ValueError(f"speeds: expected fractions of the fastest timing's speed in (0, 1], got {f!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ValueError(f"seeds: expected an integer >= 2 (an interval needs two), got {seeds!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected an integer >= 1, got {jobs!r}")
    if world is not None:
        from geodyn_ros.sim.world_file import world_preset
        world_preset(world)         # an unknown world fails here, in one line (with the file's names)
    once = world is None            # perfect sensing on the model's plant is deterministic: one flight
    speeds = tuple(sorted({float(f) for f in speeds}, reverse=True))
    tim = mission_timings(margin, speeds)
    out = {"settings": {"profiles": list(profiles), "levels": list(levels), "speeds": list(speeds), "seeds": seeds,
                        "margin": float(margin), "world": world, "rejection": bool(rejection)},
           "timings": {f: {"duration_s": tr.duration, "whole_body_margin": w, "binding_limit": lim}
                       for f, (tr, w, lim) in tim.items()},
           "cells": {p: {f: {lv: {"seeds": [], "com_rms_m": [], "com_max_m": [], "joint_rms_deg": [],
                                  "rotor_saturations": [], "diverged": [], "failed": []} for lv in levels}
                         for f in speeds} for p in profiles}}
    tasks = [(p, lv, f, seed, margin, speeds, world, bool(rejection)) for p in profiles for f in speeds
             for lv in levels for seed in range(1 if p == "perfect" and once else seeds)]

    def record(k, key, res):
        p, f, lv, seed = key
        cell = out["cells"][p][f][lv]
        if "error" in res:
            cell["failed"].append((seed, res["error"]))
        elif "diverged" in res:
            cell["diverged"].append((seed, res["diverged"]))
        else:
            cell["seeds"].append(seed)
            for m in ("com_rms_m", "com_max_m", "joint_rms_deg", "rotor_saturations"):
                cell[m].append(res[m])
        if progress:
            what = (f"CoM {res['com_rms_m'] * 1e3:.3f} mm, {res['rotor_saturations']} saturations" if "com_rms_m" in res
                    else f"failed: {res['error']}" if "error" in res else f"diverged: {res['diverged']}")
            progress(f"[{k}/{len(tasks)}] {p} {f:g}x {lv} seed {seed}: {what}")

    for k, (key, res) in fly_tasks(_mission_flight, tasks, jobs):
        record(k, key, res)
    for p, per in out["cells"].items():
        for f, row in per.items():
            for lv, cell in row.items():
                order = np.argsort(cell["seeds"])
                for m in ("seeds", "com_rms_m", "com_max_m", "joint_rms_deg", "rotor_saturations"):
                    cell[m] = [cell[m][i] for i in order]
                cell["failed"].sort()
                full = not cell["diverged"] and not cell["failed"] and cell["com_rms_m"]
                if full:
                    cell["mean_m"], cell["ci_m"] = (cell["com_rms_m"][0], 0.0) if len(cell["com_rms_m"]) == 1 \
                        else mean_ci(cell["com_rms_m"])
    return out


def format_mission(obj: dict) -> str:
    """:func:`fly_mission` as markdown tables: the timings, then per profile the CoM RMS [mm] (mean ±
    95 % CI) of each level at each timing, the saturations, and adjacent orders paired over the seeds."""
    from geodyn_ros.examples.gain_sweep import mean_ci
    st = obj["settings"]
    speeds = [float(f) for f in st["speeds"]]
    plant = (f"in the world {st['world']!r} (drawn per seed)" if st.get("world") else "the plant is the model") + \
        ("; every rejection option on" if st.get("rejection") else "")
    lines = [f"the mission at the whole-body limit (margin {st['margin']:g}) and slower; {st['seeds']} seeds per "
             "cell" + ("" if st.get("world") else " (perfect: 1)"), plant, "", "| speed | duration [s] | whole-body margin | binding limit |", "|---|---|---|---|"]
    for f in speeds:
        t = obj["timings"][f]
        lines.append(f"| {f:g}x | {t['duration_s']:.2f} | {t['whole_body_margin']:+.4f} | {t['binding_limit']} |")

    def cell_txt(c, n):
        if c["failed"]:
            return f"{len(c['failed'])}/{n} failed"
        if c["diverged"]:
            return f"{len(c['diverged'])}/{n} diverged"
        return f"{c['mean_m'] * 1e3:.3f} ± {c['ci_m'] * 1e3:.3f}" if "mean_m" in c else "-"

    for p, per in obj["cells"].items():
        n = 1 if p == "perfect" and not st.get("world") else st["seeds"]
        lines += ["", f"{p}: CoM RMS [mm] (rotor saturations, summed over the seeds)", "",
                  "| level | " + " | ".join(f"{f:g}x" for f in speeds) + " |", "|---|" + "---|" * len(speeds)]
        for lv in st["levels"]:
            row = [lv]
            for f in speeds:
                c = per[f][lv]
                row.append(cell_txt(c, n) + (f" ({sum(c['rotor_saturations'])})" if "mean_m" in c else ""))
            lines.append("| " + " | ".join(row) + " |")
        pairs = list(zip(st["levels"], st["levels"][1:]))
        rows = []
        for f in speeds:
            row = [f"{f:g}x"]
            for a, b in pairs:
                ca, cb = per[f][a], per[f][b]
                if "mean_m" not in ca or "mean_m" not in cb or ca["seeds"] != cb["seeds"]:
                    row.append("-")
                    continue
                d = np.array(ca["com_rms_m"]) - np.array(cb["com_rms_m"])
                m, h = (float(d[0]), 0.0) if len(d) == 1 else mean_ci(d)
                row.append(f"{m * 1e3:+.3f} ± {h * 1e3:.3f} (x{ca['mean_m'] / cb['mean_m']:.2f})")
            rows.append(row)
        if pairs:
            lines += ["", "| speed | " + " | ".join(f"{a} - {b}" for a, b in pairs) + " |",
                      "|---|" + "---|" * len(pairs)] + ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m geodyn_ros.examples.plan_mission", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--margin", type=float, default=0.1, help="margin kept by every check (default 0.1)")
    g = ap.add_argument_group("the mission at the limit under sensing (--sensing)")
    g.add_argument("--sensing", action="store_true", help="fly the mission under the sensing profiles")
    g.add_argument("--profiles", nargs="+", default=None, help=f"sensing profiles (default {' '.join(PROFILES)})")
    g.add_argument("--levels", nargs="+", default=list(SENSING_LEVELS), choices=SENSING_LEVELS)
    g.add_argument("--speeds", nargs="+", type=float, default=None,
                   help="fractions of the fastest timing's speed (default 1 0.75 0.5)")
    g.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 5; --quick 2)")
    g.add_argument("--jobs", type=int, default=1, help="flights in parallel (processes; default 1)")
    g.add_argument("--quick", action="store_true", help="2 seeds, mocap and onboard, speeds 1 and 0.5")
    g.add_argument("--world", default=None, help="a world of config/world.yaml the plant flies in (default: none)")
    g.add_argument("--rejection", action="store_true", help="every rejection option on (the rejection table's on)")
    g.add_argument("--json-out", help="write every figure here (with --sensing)")
    args = ap.parse_args(argv)
    if not args.sensing:
        for flag in ("profiles", "speeds", "seeds", "json_out", "world", "rejection"):
            if getattr(args, flag) not in (None, False):
                ap.error(f"--{flag.replace('_', '-')}: only with --sensing")
        obj = compare(args.margin)
        print(json.dumps(obj) if args.json else format_table(obj))
        return 0
    q = QUICK if args.quick else {}
    t0 = time.perf_counter()
    try:
        obj = fly_mission(args.profiles or q.get("profiles", PROFILES), levels=args.levels,
                          speeds=args.speeds or q.get("speeds", SPEEDS),
                          seeds=args.seeds if args.seeds is not None else q.get("seeds", 5), margin=args.margin,
                          jobs=args.jobs, world=args.world, rejection=args.rejection,
                          progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ValueError as exc:
        print(f"plan_mission: {exc}", file=sys.stderr)
        return 2
    cells = [c for per in obj["cells"].values() for row in per.values() for c in row.values()]
    failed = [e for c in cells for _, e in c["failed"]]
    n = sum(len(c["seeds"]) + len(c["diverged"]) + len(c["failed"]) for c in cells)
    print(json.dumps(obj, default=str) if args.json else format_mission(obj), end="" if not args.json else "\n")
    if not args.json:
        print(f"\n{n} flights in {time.perf_counter() - t0:.0f} s" + (f"; {len(failed)} failed (first: {failed[0]})"
                                                                     if failed else ""))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(obj, f, indent=1, default=str)
    return 1 if failed else 0

if __name__ == "__main__":
    raise SystemExit(main())
