"""The rejection options on PX4's offboard path, in process: why PX4 SITL lost two of three flights
with them on (issue 53), and the settings that fly.

Every row flies the in-process under-actuated loop of the PX4 table (:mod:`geodyn_ros.examples.px4_table`:
the collinear hexarotor, ``onboard`` sensing at 100 Hz with EKF2's 10 ms latency, a command per
odometry sample through ``thrust_and_torque`` and PX4's allocation, from the ground and back) on a
plant whose rotors give 5 % less thrust than the model (``config/world.yaml``: ``thrust_minus5``),
with its rotors held stopped for the first ``--prearm`` seconds while the controller already
commands (PX4 disarmed: the offboard setpoints stream before arming). Rows:

* ``off``: no option;
* ``always@30`` / ``airborne@30``: observer feedforward, integral and thrust estimate, the observer
  at its default 30 rad/s, engaged from the first sample or once airborne
  (:class:`~geodyn_ros.control.rejection.RejectionOptions` ``engage``);
* ``always@rule`` / ``airborne@rule``: the same, the observer at the bandwidth of the delay-margin
  rule with the observer in the loop (:func:`geodyn_ros.control.delay_margin.observer_bandwidth`,
  the value ``geodyn_vehicle --px4`` writes);
* ``observer@rule``: the observer's feedforward and the thrust estimate only (no integral), at the
  rule's bandwidth, engaged once airborne;
* ``integral`` / ``integral+thrust``: the integral action alone (or with the thrust estimate),
  engaged once airborne (no observer feedforward).

Fairness: the same gains (the PX4 table's, fitted to the path's delay), seeds (the sensor errors),
start, pre-arm and scored window for every row; the spread is over seeds. A row that leaves a
physical bound is reported with its line (:class:`~geodyn_ros.loops.sensed.DivergenceGuard`), never
with numbers.

Usage::

    python -m geodyn_ros.examples.px4_rejection                  # 8 rows x 3 seeds, 10 s scored
    python -m geodyn_ros.examples.px4_rejection --seeds 5 --jobs 2 --json-out out/px4_rejection.json
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

import numpy as np

__all__ = ["ROWS", "run_rows", "format_table", "main"]

_ALL = ("wrench_feedforward", "integral_action", "thrust_estimate")
#: row -> (observer bandwidth: "default" or "rule", engage, switches); None: the options off
ROWS = {"off": None, "always@30": ("default", "always", _ALL), "airborne@30": ("default", "airborne", _ALL),
        "always@rule": ("rule", "always", _ALL), "airborne@rule": ("rule", "airborne", _ALL),
        "observer@rule": ("rule", "airborne", ("wrench_feedforward", "thrust_estimate")),
        "integral": ("default", "airborne", ("integral_action",)),
        "integral+thrust": ("default", "airborne", ("integral_action", "thrust_estimate"))}
WORLD = "thrust_minus5"
VEHICLE = "underactuated"


def _setup():
    from geodyn_ros.control.delay_margin import observer_bandwidth, rotor_lag
    from geodyn_ros.control.gain_design import model_inertias
    from geodyn_ros.examples.px4_table import PROFILE, _vehicle, design_delay
    from geodyn_ros.examples.sensing_table import condition_profile
    v = _vehicle(VEHICLE)
    profile = condition_profile(PROFILE)
    delay = design_delay(profile, v.timestep)
    v.design(delay)
    bw = observer_bandwidth(v.gains, model_inertias(v.model), rotor_lag(v.cfg.rotors), delay)
    return v, profile, delay, bw


def _options(row, bw):
    from geodyn_ros.control.rejection import RejectionOptions
    spec = ROWS[row]
    if spec is None:
        return None
    band, engage, switches = spec
    kw = {} if band == "default" else {"observer_bandwidth": bw}
    return RejectionOptions(**{k: True for k in switches}, engage=engage, **kw)


def _prearmed(wrapped, prearm):
    """The command function with the rotors held stopped for ``prearm`` s from its first call."""
    start = []

    def f(t, *inputs):
        cmd = wrapped(t, *inputs)
        if not start:
            start.append(t)
        if t - start[0] < prearm:
            return replace(cmd, omega=np.zeros_like(cmd.omega))
        return cmd
    return f


def _row(args):
    """One flight in a worker: (row, seed, duration, prearm) -> (row, seed, metrics)."""
    row, seed, duration, prearm = args
    from geodyn_ros.examples.px4_table import offboard_flight
    from geodyn_ros.sim.world_file import world_preset
    v, profile, _, bw = _setup()
    _, wrap, s, kw = offboard_flight(v, profile, "thrust_and_torque", seed=seed)
    res = v.run("ff2", duration, gains=v.gains, sensing=s, world=world_preset(WORLD), world_seed=seed,
                rejection=_options(row, bw["bandwidth"]), wrap_command=lambda c: _prearmed(wrap(c), prearm), **kw)
    if res.diverged:
        return row, seed, {"diverged": res.diverged}
    e = res.log.p - res.log.p_d
    return row, seed, {"offset_z_m": float(e[:, 2].mean()), "offset_m": float(np.linalg.norm(e.mean(axis=0))),
                       "rms_m": float(np.sqrt((e ** 2).sum(axis=1).mean())),
                       "rotor_saturations": int(res.rotor_saturations)}


def run_rows(rows=tuple(ROWS), seeds=3, *, duration=10.0, prearm=3.0, jobs=1, progress=None) -> dict:
    """The table as a JSON-able object: ``rows[row][seed]`` metrics (or ``{"diverged": line}``),
    with the path's figures and the rule's bandwidth."""
    _, profile, delay, bw = _setup()
    out = {"vehicle": VEHICLE, "world": WORLD, "profile": "onboard", "level": "ff2", "duration_s": duration,
           "prearm_s": prearm, "seeds": seeds, "delay_s": delay, "observer_rule_rad_s": bw["bandwidth"],
           "observer_limited_by": bw["limited_by"], "rows": {r: {} for r in rows}}
    tasks = [(r, s, duration, prearm) for r in rows for s in range(seeds)]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(jobs) as pool:
            results = pool.imap_unordered(_row, tasks)
            for k, (r, s, m) in enumerate(results, 1):
                out["rows"][r][s] = m
                if progress:
                    progress(f"[{k}/{len(tasks)}] {r} seed {s}: {_brief(m)}")
    else:
        for k, t in enumerate(tasks, 1):
            r, s, m = _row(t)
            out["rows"][r][s] = m
            if progress:
                progress(f"[{k}/{len(tasks)}] {r} seed {s}: {_brief(m)}")
    return out


def _brief(m):
    if "diverged" in m:
        return f"diverged ({m['diverged']})"
    return f"offset z {m['offset_z_m'] * 1e3:+.1f} mm, RMS {m['rms_m'] * 1e3:.1f} mm"


def _stat(values):
    a = np.asarray(values, float) * 1e3
    return f"{a.mean():+.1f} ± {a.std(ddof=1):.1f}" if a.size > 1 else f"{a.mean():+.1f}"


def format_table(obj: dict) -> str:
    """The table (rows, then each failing row's first line), within 100 columns."""
    lines = [f"PX4 path in process: {obj['vehicle']} at {obj['level']}, {obj['profile']} sensing, loop delay "
             f"{obj['delay_s'] * 1e3:.1f} ms;",
             f"plant {obj['world']}; rotors stopped for the first {obj['prearm_s']:g} s (disarmed) while the "
             f"controller commands;",
             f"{obj['duration_s']:g} s scored; {obj['seeds']} seeds (mean ± sample std); observer default 30 rad/s, "
             f"the rule's {obj['observer_rule_rad_s']:.3g} rad/s",
             f"(limited by the {obj['observer_limited_by']} axis)",
             "", "| row | flew | steady z offset [mm] | position RMS [mm] |", "|---|---|---|---|"]
    failures = []
    for r, per in obj["rows"].items():
        ok = [m for m in per.values() if "diverged" not in m]
        bad = [m["diverged"] for m in per.values() if "diverged" in m]
        off = _stat([m["offset_z_m"] for m in ok]) if ok else "-"
        rms = _stat([m["rms_m"] for m in ok]).lstrip("+") if ok else "-"
        lines.append(f"| {r} | {len(ok)}/{len(per)} | {off} | {rms} |")
        if bad:
            failures.append(f"  {r}: {bad[0]}")
    if failures:
        lines += ["", "first failure of each row that left a bound:"] + failures
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)}")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 of the sensor streams (default 3)")
    ap.add_argument("--duration", type=float, default=10.0, help="scored seconds per flight (default 10)")
    ap.add_argument("--prearm", type=float, default=3.0, help="seconds disarmed while commanding (default 3)")
    ap.add_argument("--jobs", type=int, default=1, help="flights run in parallel (default 1)")
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    a = ap.parse_args(argv)
    from geodyn_ros.loops.report import comma_subset
    rows = comma_subset(ap, "--rows", a.rows, ROWS)
    if not 1 <= a.seeds <= 100:
        ap.error("--seeds: expected 1 to 100")
    if not (math.isfinite(a.duration) and 0 < a.duration <= 600):
        ap.error("--duration: expected seconds in (0, 600]")
    if not (math.isfinite(a.prearm) and 0 <= a.prearm <= 60):
        ap.error("--prearm: expected seconds in [0, 60]")
    if not 1 <= a.jobs <= 64:
        ap.error("--jobs: expected 1 to 64")
    if not a.json:
        print(f"PX4 rejection table: {len(rows)} rows x {a.seeds} seeds of {a.duration:g} s scored; a line per "
              "flight", flush=True)
    obj = run_rows(rows, a.seeds, duration=a.duration, prearm=a.prearm, jobs=a.jobs,
                   progress=None if a.json else lambda s: print(s, flush=True))
    obj["rows"] = {r: {str(s): m for s, m in per.items()} for r, per in obj["rows"].items()}
    from geodyn_ros.loops.report import emit_table
    emit_table(obj, format_table, json_only=a.json, json_out=a.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
