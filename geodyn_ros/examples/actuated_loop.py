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
from geodyn_ros.loops.actuated import (PREROLL_S, ROWS, SETTLE_S, RowResult, feedforward_speed_range,  # noqa: F401
                                       format_table as _table, scaled_reference, simulate_actuated,
                                       tilthex_source)

__all__ = ["ROWS", "RowResult", "simulate_actuated", "scaled_reference", "main"]


def _figure(results: dict, path: Path, speed: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for name, res in results.items():
        lg = res.log
        ax[0].semilogy(lg.t, np.maximum(lg.position_error(), 1e-12), label=name, lw=1)
        ax[1].semilogy(lg.t, np.maximum(np.degrees(np.abs(lg.joint_error()).max(axis=1)), 1e-12), label=name, lw=1)
    ax[0].set_ylabel("base position error |p - p_d| [m]")
    ax[1].set_ylabel("max link joint error [deg]")
    ax[1].set_xlabel("t [s]")
    ax[0].set_title(f"Actuated aerial manipulator on Table 3 (speed x{speed:g}): error per feedforward order")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(ncol=5, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    results = {r: simulate_actuated(r, args.duration, speed=args.speed, config=cfg, preroll=args.preroll)
               for r in rows}
    obj = {r: res.metrics(cfg.rotors.max_rot_velocity, cfg.elastic.max_motor_torque) for r, res in results.items()}
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(obj, indent=1) + "\n")
    if args.json:
        print(json.dumps(obj))
        return 0
    print(f"Table 3 x{args.speed:g}, {args.duration:g} s scored after a {args.preroll:g} s pre-roll, 1 kHz, "
          f"gains {TrackingGains()}")
    lo, hi, cond = feedforward_speed_range(args.duration, args.speed, cfg)
    wmax = cfg.rotors.max_rot_velocity
    print(f"allocation: cond(A) = {cond:.3g}; feedforward rotor speeds along the run: {lo:.0f} .. {hi:.0f} "
          f"rad/s ({'within' if 0 < lo and hi < wmax else 'OUTSIDE'} (0, {wmax:g}))")
    print(_table(results, cfg))
    if args.out:
        suffix = "" if args.speed == 1.0 else f"_speed{args.speed:g}"
        p = Path(args.out) / f"actuated_loop{suffix}.png"
        _figure(results, p, args.speed)
        print(f"figure: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
