"""The actuated aerial manipulator on Table 3: what each feedforward order buys (the docs' table).

Prints the table of the rows of :mod:`geodyn_ros.loops.actuated` (the loop, the rows, the
pre-roll protocol and the columns are described there) and saves a figure of the errors.

Usage::

    python -m geodyn_ros.examples.actuated_loop --json              # one JSON object, keys pd, ff0, ff1, ff2
    python -m geodyn_ros.examples.actuated_loop --speed 3 --out out  # table + figure, 3x faster Table 3
    python -m geodyn_ros.examples.actuated_loop --duration 5 --rows ff1,ff2
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.loops.report import RowProgress, gains_text
from geodyn_ros.loops.actuated import (PREROLL_S, ROWS, SETTLE_S, RowResult, feedforward_speed_range,  # noqa: F401
                                       format_table as _table, scaled_reference, simulate_actuated,
                                       tilthex_source)

__all__ = ["ROWS", "RowResult", "simulate_actuated", "scaled_reference", "main"]


#: the rows a reader compares (the figure's coloured rows); the others are diagnostic (grey)
HEADLINE = ("pd", "ff0", "ff1", "ff2")


def _figure(results: dict, metrics: dict, path: Path, speed: float) -> Path:
    """The error figure (:func:`geodyn_ros.examples.figures.error_figure`): base position, attitude
    and the largest link joint error against time, and their RMS per row."""
    from geodyn_ros.examples.figures import error_figure
    lg = {r: res.log for r, res in results.items()}
    panels = [("base position error [m]", {r: g.position_error() for r, g in lg.items()},
               "base position RMS [m]", {r: m["base_rms_m"] for r, m in metrics.items()}),
              ("attitude error [deg]", {r: np.degrees(g.attitude_error()) for r, g in lg.items()},
               "attitude RMS [deg]", {r: m["attitude_rms_deg"] for r, m in metrics.items()}),
              ("largest link joint error [deg]", {r: np.degrees(np.abs(g.joint_error()).max(axis=1))
                                                  for r, g in lg.items()},
               "joint RMS (all joints) [deg]", {r: m["joint_rms_deg"] for r, m in metrics.items()})]
    return error_figure(path, f"Actuated aerial manipulator (TiltHex, elastic joints) on Table 3 x{speed:g}: "
                        "error per feedforward order, same gains", {r: g.t for r, g in lg.items()}, panels, HEADLINE)


def _headline(m: dict) -> str:
    return f"base {m['base_rms_m']:.2e} m, joints {m['joint_rms_deg']:.2e} deg"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object (rows as keys) and nothing else")
    ap.add_argument("--duration", type=float, default=30.0, help="simulated time [s] (default 30)")
    ap.add_argument("--speed", type=float, default=1.0, help="time scaling of Table 3 (default 1; 3 = 3x faster)")
    ap.add_argument("--preroll", type=float, default=PREROLL_S,
                    help=f"seconds run along the reference before the scored window (default {PREROLL_S:g}; 0 = "
                         "score the start-up transient too)")
    ap.add_argument("--rows", default=None,
                    help=f"comma-separated subset of {','.join(ROWS)} (default: all; with --json: pd,ff0,ff1,ff2)")
    ap.add_argument("--out", default=None, help="directory for the figure actuated_loop[_speedS].png")
    ap.add_argument("--config", default=None, help="actuation YAML (default config/tilthex.yaml)")
    ap.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    args = ap.parse_args(argv)
    if args.rows is None:
        args.rows = "pd,ff0,ff1,ff2" if args.json else ",".join(ROWS)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    bad = [r for r in rows if r not in ROWS]
    if bad:
        ap.error(f"--rows: unknown rows {bad}; choose from {ROWS}")
    if not (math.isfinite(args.duration) and args.duration > 0):
        ap.error("--duration: must be > 0")
    if not (math.isfinite(args.speed) and args.speed > 0):
        ap.error("--speed: must be > 0")
    cfg = load_actuation_config(args.config)
    if not (math.isfinite(args.preroll) and args.preroll >= 0):
        ap.error("--preroll: must be >= 0")
    if args.json:
        results = {r: simulate_actuated(r, args.duration, speed=args.speed, config=cfg, preroll=args.preroll)
                   for r in rows}
    else:
        print(f"Table 3 x{args.speed:g}: {len(rows)} rows, each {args.preroll:g} s pre-roll + {args.duration:g} s "
              "scored at 1 kHz (MuJoCo);\na line per row as it finishes: wall time, x real time, RMS errors", flush=True)
        results = {}
        steps = int(round(args.preroll / 1e-3)) + int(round(args.duration / 1e-3))
        with RowProgress(rows, steps) as prog:
            for r in rows:
                results[r] = simulate_actuated(r, args.duration, speed=args.speed, config=cfg, preroll=args.preroll,
                                               progress=prog.step)
                prog.done(r, results[r].simulated_s, _headline(results[r].metrics(
                    cfg.rotors.max_rot_velocity, cfg.elastic.max_motor_torque)))
        print(prog.summary())
    obj = {r: res.metrics(cfg.rotors.max_rot_velocity, cfg.elastic.max_motor_torque) for r, res in results.items()}
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(obj, indent=1) + "\n")
    if args.json:
        print(json.dumps(obj))
        return 0
    print(f"\nTable 3 x{args.speed:g}, {args.duration:g} s scored after a {args.preroll:g} s pre-roll, 1 kHz")
    print(gains_text(TrackingGains()))
    lo, hi, cond = feedforward_speed_range(args.duration, args.speed, cfg)
    wmax = cfg.rotors.max_rot_velocity
    print(f"allocation: cond(A) = {cond:.3g}; feedforward rotor speeds {lo:.0f} .. {hi:.0f} rad/s "
          f"({'within' if 0 < lo and hi < wmax else 'OUTSIDE'} (0, {wmax:g}))")
    print(_table(results, cfg))
    if args.preroll < SETTLE_S < args.duration:
        print(f"\nscored from t = {SETTLE_S:g} s only (without the start-up transient):")
        print(_table(results, cfg, settled=True).split("\n", 1)[1])
    if args.out:
        suffix = "" if args.speed == 1.0 else f"_speed{args.speed:g}"
        p = Path(args.out) / f"actuated_loop{suffix}.png"
        _figure(results, obj, p, args.speed)
        print(f"figure: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
