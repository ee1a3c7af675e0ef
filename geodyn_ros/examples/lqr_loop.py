"""The linearization in the loop: the time-varying LQR against the geometric controller.

Both controllers fly the collinear hexarotor manipulator (gz-sim's rotor lag, Spong's elastic
joints, MuJoCo at 1 kHz) along the figure eight with the same ``ff2`` feedforward; they differ in
the feedback only (:mod:`geodyn_ros.loops.lqr`). Cases: ``nominal``; ``mass`` (the arm 10 %
heavier than the model); ``gust`` (20 % of the weight sideways for 1 s); ``offset`` (0.3 m and
20 deg at ``t = 0``). Columns: CoM, attitude and joint RMS, peak rotor speed, rotor saturations,
recovery time (CoM error below 1 cm and attitude below 1 deg for good).

Usage::

    python -m geodyn_ros.examples.lqr_loop --json        # one JSON object: {case: {controller: metrics}}
    python -m geodyn_ros.examples.lqr_loop --cases gust,offset --duration 6
    python -m geodyn_ros.examples.lqr_loop --match       # the base weights matched to the geometric gains
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from geodyn_ros.control.lqr import load_lqr_weights
from geodyn_ros.loops.report import table_line, text_table
from geodyn_ros.loops.lqr import (CASES, CONTROLLERS, EQUIVALENT_GAINS, equivalent_stiffness, gain_schedule,
                                  geometric_equivalent, match_geometric_weights, simulate_case)

__all__ = ["run", "main"]


def run(cases=CASES, controllers=CONTROLLERS, duration: float = 10.0, preroll: float = 2.0, weights=None,
        progress=None) -> dict:
    """``{case: {controller: metrics}}`` (one precomputed gain schedule serves every case)."""
    sched = gain_schedule(duration, preroll=preroll, weights=weights) if "lqr" in controllers else None
    out = {}
    for case in cases:
        out[case] = {}
        for c in controllers:
            r = simulate_case(c, case, duration, preroll=preroll, weights=weights, schedule=sched)
            out[case][c] = r.metrics()
            if progress is not None:
                progress(case, c, out[case][c])
    return out


#: the table's columns (name, unit, width): :func:`geodyn_ros.loops.report.text_table`, within 100 columns
COLUMNS = [("case", "", 8), ("controller", "", 10), ("CoM RMS", "[m]", 9), ("CoM max", "[m]", 9),
           ("att RMS", "[deg]", 9), ("joint RMS", "[deg]", 9), ("omega pk", "[rad/s]", 5), ("clips", "rotor", 5),
           ("recovery", "[s]", 5)]


def _cells(case, c, m) -> list:
    rec = "-" if m["recovery_s"] is None else f"{m['recovery_s']:.2f}"
    return [case, c, f"{m['com_rms_m']:.3e}", f"{m['com_max_m']:.3e}", f"{m['attitude_rms_deg']:.3e}",
            f"{m['joint_rms_deg']:.3e}", f"{m['rotor_speed_peak_rad_s']:.0f}", f"{m['rotor_saturations']}", rec]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object {case: {controller: metrics}}")
    ap.add_argument("--duration", type=float, default=10.0, help="scored seconds per run (default 10)")
    ap.add_argument("--preroll", type=float, default=2.0, help="seconds on the reference before t = 0 (default 2)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    ap.add_argument("--controllers", default=",".join(CONTROLLERS),
                    help=f"comma-separated subset of {','.join(CONTROLLERS)}")
    ap.add_argument("--weights", default=None, help="LQR weights YAML (default config/lqr.yaml)")
    ap.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    ap.add_argument("--match", action="store_true",
                    help="print the base weights matched to the geometric controller at hover, and stop")
    args = ap.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    ctrls = [c.strip() for c in args.controllers.split(",") if c.strip()]
    if not cases or any(c not in CASES for c in cases):
        ap.error(f"--cases: choose from {CASES}")
    if not ctrls or any(c not in CONTROLLERS for c in ctrls):
        ap.error(f"--controllers: choose from {CONTROLLERS}")
    if not (math.isfinite(args.duration) and args.duration > 2.5):
        ap.error("--duration: must be > 2.5 s (the gust ends at 2 s)")
    if not (math.isfinite(args.preroll) and args.preroll >= 0):
        ap.error("--preroll: must be >= 0")
    try:
        weights = load_lqr_weights(args.weights)
    except ValueError as exc:
        ap.error(f"--weights: {exc}")
    if args.match:
        w, err = match_geometric_weights(weights=weights)
        print("base weights whose stationary LQR gain at hover matches the geometric controller's "
              f"(largest mismatch {err:.1%}); config/lqr.yaml keys:")
        for k, unit in (("base_attitude", "rad"), ("base_position", "m"), ("base_angular_velocity", "rad_s"),
                        ("base_velocity", "m_s")):
            print(f"    {k}_{unit}: [{', '.join(f'{v:.3g}' for v in getattr(w, k))}]")
        return 0
    if not args.json:
        k, g = equivalent_stiffness(weights), geometric_equivalent()
        print("the LQR's stationary gain at hover read as the geometric controller's gains:")
        print(f"  {'':28s} {'LQR':>9s} {'geometric':>9s}")
        for name, unit in EQUIVALENT_GAINS.items():
            print(f"  {name:28s} {k[name]:9.2f} {g[name]:9.2f}  {unit}")
        print("\none line per run as it finishes (recovery: CoM error below 1 cm and attitude below 1 deg "
              "for good)")
        print(text_table(COLUMNS, []))
    t0 = time.perf_counter()

    def progress(case, c, m):
        if not args.json:
            print(table_line(COLUMNS, _cells(case, c, m)), flush=True)
    obj = run(cases, ctrls, args.duration, args.preroll, weights, progress)
    if args.json_out:
        from pathlib import Path
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(obj, indent=1) + "\n")
    if args.json:
        print(json.dumps(obj))
    else:
        print(f"\n{args.duration:g} s scored after {args.preroll:g} s on the reference, 1 kHz; {time.perf_counter() - t0:.0f} s "
              "wall (the TVLQR schedule included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
