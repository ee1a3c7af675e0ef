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
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from geodyn_ros.loops.underactuated import simulate_underactuated
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.planning import Vehicle, check_feasibility, fastest_scaling, plan_mission

__all__ = ["MISSION", "CHECKS", "compare", "format_table", "main"]

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--margin", type=float, default=0.1, help="margin kept by every check (default 0.1)")
    args = ap.parse_args(argv)
    obj = compare(args.margin)
    print(json.dumps(obj) if args.json else format_table(obj))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
