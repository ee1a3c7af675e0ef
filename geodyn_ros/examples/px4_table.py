"""What flying through PX4's offboard interface costs: the controllers' rotor speeds straight to the
rotors against PX4's ``thrust_and_torque`` and ``direct_actuator`` modes (issue 44, the table).

Every row flies the in-process under-actuated loop (:func:`geodyn_ros.loops.underactuated.simulate_underactuated`)
under the ``onboard`` sensing profile (PX4's EKF2 with a vision aiding: 100 Hz, 10 ms, the
estimator's error; ``config/sensors.yaml``), from the ground and back, with the command path of
:class:`geodyn_ros.px4.offboard_path.OffboardPath` between the controller and the rotors:

* ``speeds_1khz``: the rotor speeds to the rotors at every 1 ms step, on the newest samples
  propagated to the step (the sensing table's loop): what the rate costs;
* ``speeds``: the rotor speeds to the rotors, the controller run once per odometry sample (100 Hz,
  a command per ``odom``, as the ROS nodes' ``input_policy: latest`` does) and held;
* ``thrust_and_torque``: the same commands through the bridge's ``thrust_and_torque`` setpoints and PX4's
  allocation (:mod:`geodyn_ros.px4.allocation`);
* ``direct_actuator``: the same commands through ``direct_actuator`` (``ActuatorMotors``).

Fairness. For one vehicle every row has the same gains, the same seed (the same sensor errors),
the same start on the ground and the same scored window. The gains are the vehicle's, with the
rotation loop lowered by the sensing table's delay-margin rule
(:func:`geodyn_ros.examples.sensing_table.fit_gains`) for the harshest delay of a command per
odometry sample: the latency, a whole period (the command is computed at a sample and held until
the next) and 1.5 simulator steps. The vehicles' files have no ``px4:`` section; PX4's defaults
are used (``THR_MDL_FAC`` 0, ``MC_AIRMODE`` 0, ``CA_ROTORn_CT`` each rotor's full thrust).

Usage::

    python -m geodyn_ros.examples.px4_table                       # the whole table (2 vehicles, 32 rows)
    python -m geodyn_ros.examples.px4_table --vehicles underactuated --levels ff2 --duration 3
    python -m geodyn_ros.examples.px4_table --json-out out/px4.json --jobs 2
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

__all__ = ["VEHICLES", "PATHS", "design_delay", "offboard_flight", "run_table", "format_tables", "main"]

VEHICLES = ("underactuated", "borinot_flying_arm_2")
#: column -> (the path's mode, run at the odometry rate (True) or at every step (False))
PATHS = {"speeds_1khz": ("rotor_speeds", False), "speeds": ("rotor_speeds", True),
         "thrust_and_torque": ("thrust_and_torque", True), "direct_actuator": ("direct_actuator", True)}
PROFILE = "onboard"
_VEHICLE_CACHE: dict = {}


def design_delay(profile, dt: float) -> float:
    """The harshest loop delay [s] of a command per odometry sample (module docstring): ``latency
    + 1 / rate + 1.5 dt``."""
    od = profile.odometry
    return od.latency + 1.0 / od.rate + 1.5 * dt


def _vehicle(name: str):
    from geodyn_ros.examples.sensing_table import _Vehicle
    from geodyn_ros.vehicle.params import Px4Section
    v = _VEHICLE_CACHE.get(name)
    if v is None:
        v = _VEHICLE_CACHE[name] = _Vehicle(name)
        if v.cfg.px4 is None:
            v.cfg = replace(v.cfg, px4=Px4Section(thr_mdl_fac=0.0))
            if "config" in v.kw:
                v.kw["config"] = v.cfg
        v.timestep = float(v.kw.get("timestep", 1e-3))
    return v


def offboard_flight(v, profile, mode: str, *, at_odometry: bool = True, link_delay: float = 0.0, seed: int = 0):
    """The pieces of one flight through PX4's offboard path (module docstring), for the loaded
    vehicle ``v`` (:func:`_vehicle`) under the sensing ``profile``: ``(path, wrap, sensing, kw)``:
    the :class:`~geodyn_ros.px4.offboard_path.OffboardPath` of ``mode`` (its link delay only for the
    PX4 modes), ``wrap(command)`` that runs the command every odometry period (``at_odometry``) or
    every step and sends it through the path, the :class:`~geodyn_ros.loops.sensed.Sensing` of a
    flight from the ground (seeded, the ``twist`` rule its published rows flew), and the run's
    keywords (the vehicle's, with its config)."""
    from geodyn_ros.loops.sensed import Sensing
    from geodyn_ros.px4.offboard_path import OffboardPath, px4_vehicle
    _, frames = v.cfg.rotor_frames(v.model)
    path = OffboardPath(mode, px4_vehicle(v.cfg, frames), delay=0.0 if mode == "rotor_speeds" else link_delay)
    period = 1.0 / profile.odometry.rate if at_odometry else v.timestep
    kw = dict(v.kw)
    kw.setdefault("config", v.cfg)
    sensing = Sensing(profile, seed=seed, ground=True, log=None, rule="twist")
    return path, (lambda c: path.wrap(c, period=period, timestep=v.timestep)), sensing, kw


def _row(args):
    """One row in a worker: (vehicle, level, column, duration, seed, delay) -> metrics."""
    vname, level, column, duration, seed, link_delay = args
    from geodyn_ros.examples.sensing_table import condition_profile
    v = _vehicle(vname)
    profile = condition_profile(PROFILE)
    v.design(design_delay(profile, v.timestep))
    mode, at_odometry = PATHS[column]
    path, wrap, s, kw = offboard_flight(v, profile, mode, at_odometry=at_odometry, link_delay=link_delay, seed=seed)
    res = v.run(level, duration, gains=v.gains, sensing=s, wrap_command=wrap, **kw)
    if res.diverged:
        return vname, level, column, {"diverged": res.diverged}
    r = res.log.rms()
    return vname, level, column, {"position_rms_m": r["position_m"], "attitude_rms_deg": r["attitude_deg"],
                                  "joint_rms_deg": r["joint_deg"], "rotor_saturations": int(res.rotor_saturations),
                                  "commands": path.counts["commands"], "desaturated": path.counts["desaturated"],
                                  "clipped": path.counts["clipped"]}


def run_table(vehicles=VEHICLES, levels=None, columns=tuple(PATHS), *, duration=10.0, seed=0, link_delay=0.0,
              jobs=1, progress=None) -> dict:
    """The table as a JSON-able object: per vehicle its gains line, levels, columns and rows
    ``{column: {level: metrics}}``; ``levels`` None: every level of the vehicle's controller."""
    from geodyn_ros.examples.sensing_table import condition_profile
    profile = condition_profile(PROFILE)
    out = {"profile": PROFILE, "duration_s": duration, "seed": seed, "link_delay_s": link_delay, "vehicles": {}}
    tasks = []
    for vn in vehicles:
        v = _vehicle(vn)
        d = design_delay(profile, v.timestep)
        lv = [x for x in v.levels if levels is None or x in levels]
        out["vehicles"][vn] = {"what": v.what, "gains": v.design(d), "levels": lv, "columns": list(columns),
                               "rows": {c: {} for c in columns}}
        tasks += [(vn, x, c, duration, seed, link_delay) for c in columns for x in lv]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(jobs) as pool:
            results = list(_collect(pool.imap_unordered(_row, tasks), out, progress))
    else:
        results = list(_collect(map(_row, tasks), out, progress))
    assert len(results) == len(tasks)
    return out


def _collect(results, out, progress):
    for vn, lv, c, m in results:
        out["vehicles"][vn]["rows"][c][lv] = m
        if progress:
            progress(f"  {vn} {c} {lv}: " + (f"diverged: {m['diverged']}" if "diverged" in m else
                                               f"position RMS {m['position_rms_m']:.3e} m, joints "
                                               f"{m['joint_rms_deg']:.3e} deg"))
        yield vn


def _cell(m, key, fmt="{:.3e}"):
    if m is None:
        return "-"
    return "diverged" if "diverged" in m else fmt.format(m[key])


def format_tables(obj: dict) -> str:
    """The text of :func:`run_table`'s object within 100 columns: per vehicle position and joint RMS
    per level (rows) and path (columns), and the PX4 path's counts."""
    from geodyn_ros.loops.report import text_table
    lines = [f"sensing {obj['profile']}; scored {obj['duration_s']:g} s per row after a take-off from the ground; "
             f"seed {obj['seed']}",
             f"PX4 link delay {obj['link_delay_s'] * 1e3:g} ms; per vehicle the same gains, seed, start and window"]
    for vn, v in obj["vehicles"].items():
        cols, rows = v["columns"], v["rows"]
        lines += ["", f"{vn}: {v['what']}", v["gains"]]
        for key, title, unit in (("position_rms_m", "position RMS", "[m]"), ("joint_rms_deg", "joint RMS", "[deg]"),
                                 ("attitude_rms_deg", "attitude RMS", "[deg]")):
            body = [[lv] + [_cell(rows[c].get(lv), key) for c in cols] for lv in v["levels"]]
            lines += [f"{title} {unit} per level and command path",
                      text_table([("level", "", 5)] + [(c, unit, 9) for c in cols], body)]
        counts = [[lv] + [_cell(rows[c].get(lv), "rotor_saturations", "{:d}") + "/" +
                          _cell(rows[c].get(lv), "desaturated", "{:d}") for c in cols] for lv in v["levels"]]
        lines += ["controller's rotor clips (per rotor and step) / setpoints PX4 desaturated",
                  text_table([("level", "", 5)] + [(c, "clip/desat", 9) for c in cols], counts)]
        for c in cols:
            for lv in v["levels"]:
                m = rows[c].get(lv)
                if m and "diverged" in m:
                    lines.append(f"  {c} {lv} diverged: {m['diverged']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vehicles", default=",".join(VEHICLES), help=f"comma-separated subset of {','.join(VEHICLES)}")
    ap.add_argument("--levels", default=None, help="comma-separated levels (default: every level)")
    ap.add_argument("--columns", default=",".join(PATHS), help=f"comma-separated subset of {','.join(PATHS)}")
    ap.add_argument("--duration", type=float, default=10.0, help="scored seconds per row (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sensor streams (default 0)")
    ap.add_argument("--link-delay-ms", type=float, default=0.0,
                    help="delay of the PX4 columns' link, bridge to PX4's allocator [ms] (default 0)")
    ap.add_argument("--jobs", type=int, default=1, help="rows run in parallel (default 1)")
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    a = ap.parse_args(argv)
    from geodyn_ros.loops.report import comma_subset
    vehicles = comma_subset(ap, "--vehicles", a.vehicles, VEHICLES)
    columns = comma_subset(ap, "--columns", a.columns, PATHS)
    levels = None if a.levels is None else comma_subset(ap, "--levels", a.levels, ("rigid", "ff0", "ff1", "ff2"))
    if not (math.isfinite(a.duration) and 0 < a.duration <= 600):
        ap.error("--duration: expected seconds in (0, 600]")
    if not (math.isfinite(a.link_delay_ms) and 0 <= a.link_delay_ms <= 100):
        ap.error("--link-delay-ms: expected milliseconds in [0, 100]")
    if not 1 <= a.jobs <= 64 or a.seed < 0:
        ap.error("--jobs: expected 1 to 64; --seed: expected >= 0")
    if not a.json:
        n = len(vehicles) * len(columns) * (4 if levels is None else len(levels))
        print(f"PX4 table: {len(vehicles)} vehicles x paths {','.join(columns)}, {n} rows of {a.duration:g} s "
              f"scored; a line per row", flush=True)
    obj = run_table(vehicles, levels, columns, duration=a.duration, seed=a.seed, link_delay=a.link_delay_ms * 1e-3,
                    jobs=a.jobs, progress=None if a.json else lambda s: print(s, flush=True))
    from geodyn_ros.loops.report import emit_table
    emit_table(obj, format_tables, json_only=a.json, json_out=a.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
