"""Fly plants that are not the model, with the rejection options off and on: the table of issue 53.

Usage::

    python -m geodyn_ros.examples.rejection_table [--jobs N] [--seeds N] [--quick] [--json FILE]
        [--vehicles collinear actuated borinot] [--cases ...] [--levels ...] [--modes off on]
        [--preroll S] [--duration S] [--push N] [--no-observers]

Vehicles (MuJoCo with gz-sim's rotor lag, 1 kHz, perfect sensing; the controller keeps the
nominal URDF and vehicle file, the simulator flies the perturbed plant of
:mod:`geodyn_ros.sim.world`):

* ``collinear``: the hexarotor manipulator of :mod:`geodyn_ros.loops.underactuated` (elastic
  joints, default gains, the figure eight): levels ``rigid ff0 ff1 ff2`` (the flatness
  controller) and ``lqr`` (the TVLQR of :mod:`geodyn_ros.loops.lqr`, with three integral
  states when the options are on);
* ``actuated``: the TiltHex of :mod:`geodyn_ros.loops.actuated` (Table 3): ``pd ff0 ff1 ff2``;
* ``borinot``: ``config/vehicles/borinot_flying_arm_2.yaml`` as ``geodyn_fly`` flies it (gains
  designed from the model, its figure eight): ``rigid ff0 ff1 ff2``.

Cases (:data:`CASES`; the fixed ones are the presets of ``config/world.yaml``): ``exact``,
``arm+10`` (arm links +10 % mass and inertia), ``thrust-5`` (rotor thrust constant -5 %),
``com+5mm`` (base CoM +5 mm along its x), ``lag+30`` (rotor time constants +30 %), ``mass+10``,
``mass-10`` (every link +-10 %), ``combined`` (mass +10 %, thrust -5 % and the 5 mm CoM at once),
``push`` (``--push`` N, default 2, horizontal along world (0.8, -0.6, 0), on the end-effector
point, rising over 0.1 s at 60 % of the pre-roll and held), ``wind_light`` and ``wind_moderate``
(MIL-F-8785C light / moderate: W20 = 15 / 30 kt at 2 m, the logarithmic mean, Dryden
turbulence, body and rotor drag), and, on request only, ``model_error`` (CAD masses, thrust-stand
rotors and datasheet springs drawn per seed).

Modes: ``off`` (``rejection=None``: the controllers of the tables, bit for bit) and ``on``
(:func:`on_options`: :meth:`~geodyn_ros.control.rejection.RejectionOptions.all`, the whole-body
observer's feedforward, integral action, the thrust-scale and the CoM estimates, with the
end-effector as the observer's frame).

Per flight: the **steady offset** (the norm of the mean position error over the scored window:
the CoM for the collinear vehicles, the base origin for the actuated one) and the RMS error.
A seed draws the world (turbulence, drawn model errors); a fixed case with no wind flies the
same for every seed (MuJoCo is deterministic), so it is flown once and its spread is 0 by
construction. Over the seeds: the mean and the 95 % confidence half-width of the mean
(Student's t). The done-when check (issue 53): with the options on, under +-10 % mass, -5 %
thrust constant and the 5 mm CoM error, the offset is under 2 mm at every level, and the RMS
keeps the orders' ranking. For ``arm+10`` the command also gives the plant's CoM shift from the
model's along the flight (the part the base wrench cannot see, :func:`com_shift`).

``--observers`` (default on): per vehicle, free flight on the exact plant with the arm swinging
(level ff2, options off, so nothing feeds back), the whole-body and the rigid-body observers run
on the same data: the external wrench each reads (the true one is 0); then a 1 s push of
``--push`` N on the end-effector: the whole-body estimate against MuJoCo's applied generalized
force filtered at the observer's bandwidth (``test/control/rejection/test_observer.py`` asserts
1e-3 N and N m for the collinear vehicle).

``--json FILE`` is rewritten after every flight (a long run can be read while it runs).
Progress: one line per flight. ``--quick``: 1 s pre-roll, 0.5 s scored, 2 seeds (a smoke run).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

__all__ = ["VEHICLES", "CASES", "DONE_WHEN_CASES", "on_options", "fly_one", "observer_readings", "com_shift", "summarize",
           "done_when", "main"]

#: vehicle -> (description, levels)
VEHICLES = {"collinear": ("collinear hexarotor manipulator (config/hexarotor.yaml, elastic joints)",
                          ("rigid", "ff0", "ff1", "ff2", "lqr")),
            "actuated": ("fully actuated TiltHex (config/tilthex.yaml, elastic joints)", ("pd", "ff0", "ff1", "ff2")),
            "borinot": ("Borinot with its 2-DoF arm (config/vehicles/borinot_flying_arm_2.yaml)",
                        ("rigid", "ff0", "ff1", "ff2"))}
#: case -> (description, world preset or None (built here), drawn per seed)
CASES = {"exact": ("the plant is the model", "exact", False),
         "mass+10": ("every link +10 % mass", "mass_plus10", False),
         "mass-10": ("every link -10 % mass", "mass_minus10", False),
         "thrust-5": ("rotor thrust constant -5 %", "thrust_minus5", False),
         "com+5mm": ("base CoM +5 mm (x)", "base_com_5mm", False),
         "combined": ("mass +10 %, thrust -5 %, base CoM +5 mm", "combined_error", False),
         "arm+10": ("arm links +10 % mass", "arm_mass_plus10", False),
         "lag+30": ("rotor time constant +30 %", "lag_plus30", False),
         "push": ("a push held on the end-effector", None, False),
         "wind_light": ("MIL-F-8785C light turbulence", "wind_light", True),
         "wind_moderate": ("MIL-F-8785C moderate turbulence", "wind_moderate", True),
         "model_error": ("CAD, thrust stand and springs drawn", "model_error", True)}
DEFAULT_CASES = tuple(c for c in CASES if c != "model_error")
#: the cases of the done-when target (offset < DONE_WHEN_M with the options on, every level)
DONE_WHEN_CASES = ("mass+10", "mass-10", "thrust-5", "com+5mm", "combined")
DONE_WHEN_M = 2e-3
#: the end-effector point per vehicle: (link, point in the link frame [m]); the collinear and
#: actuated vehicles' tool point is the one of test/control/rejection/test_observer.py
END_EFFECTOR = {"collinear": ("link4", (0.03, 0.0, -0.12)), "actuated": ("link4", (0.03, 0.0, -0.12)),
                "borinot": ("flying_arm_2__ee", (0.0, 0.0, 0.0))}
PUSH_DIRECTION = (0.8, -0.6, 0.0)
PREROLL_S, DURATION_S = 5.0, 3.0

_cache: dict = {}


# ---------------------------------------------------------------------------------------------- flights
def _borinot():
    if "borinot" not in _cache:
        from geodyn_ros.loops.fly import prepare, shipped_vehicle
        _cache["borinot"] = prepare(*shipped_vehicle("borinot_flying_arm_2"))
    return _cache["borinot"]


def _push_world(vehicle, force, start, duration=math.inf):
    from geodyn_ros.sim.world import Push, World
    link, point = END_EFFECTOR[vehicle]
    f = tuple(float(force) * d for d in PUSH_DIRECTION)
    return World(name="push", pushes=(Push(link, f, point, start=start, duration=duration, ramp=0.1),),
                 description=f"{force:g} N on {link} at {point}")


def _world(vehicle, case, preroll, push):
    from geodyn_ros.sim.world_file import world_preset
    if case == "push":
        return _push_world(vehicle, push, -0.6 * preroll)
    return world_preset(CASES[case][1])


def _schedule(duration, preroll, integral):
    key = ("lqr", duration, preroll, integral)
    if key not in _cache:
        from geodyn_ros.control.rejection import RejectionOptions
        from geodyn_ros.loops.lqr import gain_schedule
        _cache[key] = gain_schedule(duration, preroll=preroll,
                                    rejection=RejectionOptions.all() if integral else None)
    return _cache[key]


def _flight(vehicle, level, world, seed, rejection, duration, preroll, wrap_command=None):
    """One row: the loop's result object (``log``, ``rejection``, ``world``, ``external``, ``diverged``)."""
    kw = dict(preroll=preroll, world=world, world_seed=seed, rejection=rejection)
    if vehicle == "collinear" and level == "lqr":
        from geodyn_ros.loops.lqr import simulate_case
        return simulate_case("lqr", "nominal", duration, schedule=_schedule(duration, preroll, rejection is not None),
                             **kw)
    if vehicle == "collinear":
        from geodyn_ros.loops.underactuated import simulate_underactuated
        return simulate_underactuated(level, duration, wrap_command=wrap_command, **kw)
    if vehicle == "actuated":
        from geodyn_ros.loops.actuated import simulate_actuated
        return simulate_actuated(level, duration, wrap_command=wrap_command, **kw)
    from geodyn_ros.loops.underactuated import simulate_underactuated
    p = _borinot()
    return simulate_underactuated(level, duration, config=p["cfg"], source=p["urdf"], gains=p["design"].gains,
                                  timestep=float(p["cfg"].control_period), reference=p["reference"],
                                  wrap_command=wrap_command, **kw)


def com_shift(row) -> np.ndarray:
    """(3,) [m] the mean, over the logged samples, of the plant's centre of mass minus the model's
    at the flown attitude and joints (world axes). What stays when the controller holds the
    model's CoM on the reference and the base wrench cannot see the difference: a CoM offset
    along the thrust (the heavier arm hangs below the base) moves neither the hover force nor,
    in hover, its moment."""
    import geodyn_ros as gd
    plant, model = row.world.build(timestep=1e-3).model, row.world.model
    out = np.zeros(3)
    for R, q in zip(row.log.R, row.log.q):
        C = np.eye(4)
        C[:3, :3] = R
        z = np.zeros((1, 6))
        qq = np.stack([q, np.zeros_like(q)])
        out += gd.center_of_mass(plant, C, z, qq)[0] - gd.center_of_mass(model, C, z, qq)[0]
    return out / max(len(row.log.R), 1)


def on_options(vehicle):
    """The ``on`` mode's options: every switch (:meth:`RejectionOptions.all`) with the vehicle's
    end-effector as the observer's frame (:data:`END_EFFECTOR`), as a lab with an arm sets
    ``rejection_frame``: the CoM estimate then reads the base's share of the residual, not a
    push at the tool."""
    from geodyn_ros.control.rejection import RejectionOptions
    link, point = END_EFFECTOR[vehicle]
    return RejectionOptions.all(frame=link, frame_point=point)


def fly_one(vehicle, level, case, mode, seed, preroll, duration, push) -> dict:
    """One flight (module docstring): a JSON-ready dict of its figures."""
    t0 = time.perf_counter()
    row = _flight(vehicle, level, _world(vehicle, case, preroll, push), seed,
                  on_options(vehicle) if mode == "on" else None, duration, preroll)
    out = {"vehicle": vehicle, "level": level, "case": case, "mode": mode, "seed": seed,
           "wall_s": time.perf_counter() - t0, "diverged": row.diverged or None}
    if row.diverged or not len(row.log.t):
        return out
    e = row.log.p - row.log.p_d
    mean = e.mean(axis=0)
    out.update(offset_m=float(np.linalg.norm(mean)), mean_error_m=mean.tolist(),
               rms_m=float(np.sqrt(np.mean(np.sum(e * e, axis=1)))))
    rj = row.rejection
    if rj is not None:
        out.update(thrust_scale=float(rj.thrust_scale), com_offset_m=np.asarray(rj.com_offset).tolist())
    if case == "arm+10" and vehicle != "actuated":
        out["com_shift_m"] = com_shift(row).tolist()
    return out


def _fly_job(args):
    try:
        return fly_one(*args)
    except Exception as exc:      # a flight that cannot run is reported, the others go on
        v, lv, c, m, s = args[:5]
        return {"vehicle": v, "level": lv, "case": c, "mode": m, "seed": s, "error": f"{type(exc).__name__}: {exc}"}


# ---------------------------------------------------------------------------------------------- observers
def observer_readings(vehicle, preroll, duration, push) -> dict:
    """Free flight (exact plant, ff2, options off, both observers passive on the loop's data) and
    a push of ``push`` N on the end-effector from ``0.2 duration`` for 1 s (at most half the
    scored window): what each observer reads
    (module docstring). Returns a JSON-ready dict."""
    from geodyn_ros.control.rejection import Rejection, RejectionOptions
    if vehicle == "collinear":
        from geodyn_ros.control.rotors import Allocation, load_actuation_config
        from geodyn_ros.loops.underactuated import hexarotor_source
        cfg = load_actuation_config("hexarotor")
        model = cfg.load_model(hexarotor_source())
    elif vehicle == "actuated":
        from geodyn_ros.control.rotors import Allocation, load_actuation_config
        from geodyn_ros.loops.actuated import tilthex_source
        cfg = load_actuation_config()
        model = cfg.load_model(tilthex_source())
    else:
        from geodyn_ros.control.rotors import Allocation
        p = _borinot()
        cfg, model = p["cfg"], p["model"]
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    h = float(cfg.control_period) if vehicle == "borinot" else 1e-3
    kinds = ("whole_body", "rigid_body")
    out = {}
    for what in ("free_flight", "push"):
        obs = [Rejection(RejectionOptions(wrench_feedforward=True, observer=k), model, al, cfg.rotors, cfg.elastic,
                         gravity=(0.0, 0.0, -9.81)) for k in kinds]
        readings = {}

        def wrap(command, obs=obs, readings=readings):
            def wrapped(t, C, Vb, q, qd, th, thd, *rest):
                cmd = command(t, C, Vb, q, qd, th, thd, *rest)
                # the torques the joints' drives apply (0 at the elastic joints, whose springs the
                # observer reads from the motor angles), as the controllers' own Rejection.sent
                jt = cmd.joint_torque if np.size(cmd.joint_torque) == model.n_joints else cmd.u
                for ob in obs:
                    ob.observe(t, C, Vb, q, qd, th)
                    ob.sent(cmd.omega, jt)
                if t >= -1e-9:
                    readings[int(round(t / h))] = ([ob.estimate for ob in obs], np.array(C, float))
                return cmd
            return wrapped

        world = None if what == "free_flight" else _push_world(vehicle, push, 0.2 * duration, min(1.0, 0.5 * duration))
        row = _flight(vehicle, "ff2", world, 0, None, duration, preroll, wrap_command=wrap)
        if row.diverged:
            out[what] = {"diverged": row.diverged}
            continue
        if what == "free_flight":
            for j, k in enumerate(kinds):
                est = [e[j] for e, _ in readings.values() if e[j] is not None]
                f = np.array([np.linalg.norm(x.wrench_body[3:]) for x in est])
                n = np.array([np.linalg.norm(x.wrench_body[:3]) for x in est])
                out[f"free_flight/{k}"] = {"force_max_n": float(f.max()), "force_rms_n": float(np.sqrt(np.mean(f * f))),
                                           "moment_max_nm": float(n.max()),
                                           "moment_rms_nm": float(np.sqrt(np.mean(n * n)))}
            continue
        # the truth: the generalized force the world applied over each step (row.external[k]: from
        # sample k on), its base rows as a spatial wrench (the observer filters in world axes: a body-
        # axes filter would lag the base's rotation), filtered as the observer's eq. (3) at its bandwidth
        ext = row.external
        a = math.exp(-RejectionOptions().observer_bandwidth * h)
        rf = np.zeros(ext.shape[1])
        err_f = err_n = err_q = 0.0
        peak = {k: 0.0 for k in kinds}
        for k in range(1, len(ext)):
            prev, cur = readings.get(k - 1), readings.get(k)
            if prev is None or cur is None:
                continue
            R, p0 = prev[1][:3, :3], prev[1][:3, 3]
            f = R @ ext[k - 1, 3:6]
            rf = a * rf + (1 - a) * np.concatenate([R @ ext[k - 1, :3] + np.cross(p0, f), f, ext[k - 1, 6:]])
            est = cur[0]
            if est[0] is None:
                continue
            w = est[0]
            err_f = max(err_f, float(np.linalg.norm(w.wrench[3:] - rf[3:6])))
            err_n = max(err_n, float(np.linalg.norm(w.wrench[:3] - rf[:3])))
            if w.joint_torque.size:
                err_q = max(err_q, float(np.abs(w.joint_torque - rf[6:]).max()))
            for j, kk in enumerate(kinds):
                if est[j] is not None:
                    peak[kk] = max(peak[kk], float(np.linalg.norm(est[j].wrench[3:])))
        out["push"] = {"force_n": push, "applied_force_max_n": float(np.abs(np.linalg.norm(ext[:, 3:6], axis=1)).max()),
                       "whole_body_force_error_max_n": err_f, "whole_body_moment_error_max_nm": err_n,
                       "whole_body_joint_error_max_nm": err_q,
                       "whole_body_force_max_n": peak["whole_body"], "rigid_body_force_max_n": peak["rigid_body"]}
    return out


def _obs_job(args):
    try:
        return args[0], observer_readings(*args)
    except Exception as exc:
        return args[0], {"error": f"{type(exc).__name__}: {exc}"}


# ---------------------------------------------------------------------------------------------- tables
def _ci95(x) -> float:
    """The 95 % confidence half-width of the mean of ``x`` (Student's t; 0 for one sample)."""
    x = np.asarray(x, float)
    if x.size < 2:
        return 0.0
    from scipy.stats import t
    return float(t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


def summarize(flights) -> dict:
    """``{"vehicle/case/level/mode": {offset_mean_m, offset_ci95_m, rms_mean_m, rms_ci95_m, n, ...}}``
    over the seeds of each cell (flights that diverged or failed are counted, not averaged)."""
    cells: dict = {}
    for f in flights:
        cells.setdefault(f"{f['vehicle']}/{f['case']}/{f['level']}/{f['mode']}", []).append(f)
    out = {}
    for key, fs in cells.items():
        ok = [f for f in fs if "offset_m" in f]
        s = {"n": len(ok), "failed": [f.get("diverged") or f.get("error") for f in fs if "offset_m" not in f]}
        if ok:
            off, rms = [f["offset_m"] for f in ok], [f["rms_m"] for f in ok]
            s.update(offset_mean_m=float(np.mean(off)), offset_ci95_m=_ci95(off), rms_mean_m=float(np.mean(rms)),
                     rms_ci95_m=_ci95(rms), mean_error_m=np.mean([f["mean_error_m"] for f in ok], axis=0).tolist())
            for k in ("thrust_scale", "com_shift_m"):
                if k in ok[0]:
                    s[k] = np.mean([f[k] for f in ok], axis=0).tolist()
        out[key] = s
    return out


def _mm(s, what) -> str:
    if not s or f"{what}_mean_m" not in s:
        return "fail" if s and s["failed"] else "-"
    m, c = 1e3 * s[f"{what}_mean_m"], 1e3 * s[f"{what}_ci95_m"]
    txt = f"{m:.3g}" if m < 100 else f"{m:.0f}"
    return txt + (f" ± {c:.2g}" if c > 0 else "")


def format_tables(summary, vehicles, cases, levels_of, modes) -> str:
    """One markdown table per vehicle: case rows, level columns, ``offset off → on (RMS off → on)`` [mm]."""
    lines = []
    for v in vehicles:
        lv = levels_of[v]
        lines += ["", f"{v}: {VEHICLES[v][0]}; steady offset [mm] " + " → ".join(modes) + " (RMS [mm])", "",
                  "| case | " + " | ".join(lv) + " |", "|---|" + "---|" * len(lv)]
        for c in cases:
            cells = []
            for level in lv:
                ss = [summary.get(f"{v}/{c}/{level}/{m}") for m in modes]
                if not any(ss):
                    cells.append("")
                    continue
                off = " → ".join(("**" + _mm(s, "offset") + "**") if m == "on" else _mm(s, "offset")
                                 for s, m in zip(ss, modes))
                cells.append(off + " (" + " → ".join(_mm(s, "rms") for s in ss) + ")")
            lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def done_when(summary, vehicles, levels_of) -> list:
    """The done-when verdicts (module docstring): one line each."""
    out = []
    for v in vehicles:
        worst, missing, rank_bad = None, [], []
        for c in DONE_WHEN_CASES:
            for lv in levels_of[v]:
                s = summary.get(f"{v}/{c}/{lv}/on")
                if not s or "offset_mean_m" not in s:
                    missing.append(f"{c}/{lv}")
                    continue
                if worst is None or s["offset_mean_m"] > worst[0]:
                    worst = (s["offset_mean_m"], c, lv)
            ff = [lv for lv in levels_of[v] if lv != "lqr"]
            r = [summary.get(f"{v}/{c}/{lv}/on", {}).get("rms_mean_m") for lv in ff]
            if all(x is not None for x in r) and any(a < b for a, b in zip(r, r[1:])):
                rank_bad.append(c)
        if worst is None:
            continue
        ok = worst[0] < DONE_WHEN_M and not missing
        out.append(f"{v}: options on, {', '.join(DONE_WHEN_CASES)}: largest steady offset {worst[0] * 1e3:.3g} mm "
                   f"({worst[1]}, {worst[2]}) {'<' if worst[0] < DONE_WHEN_M else '>='} {DONE_WHEN_M * 1e3:g} mm"
                   + (f"; not flown: {', '.join(missing)}" if missing else "") + ("  PASS" if ok else "  FAIL")
                   + ("; RMS ranking kept" if not rank_bad else f"; RMS ranking broken in {', '.join(rank_bad)}"))
    return out


# ---------------------------------------------------------------------------------------------- CLI
class _Parser(argparse.ArgumentParser):
    def error(self, message):        # one line, exit code 2
        self.exit(2, f"{self.prog}: {message}\n")


def _positive(kind, allow_zero=False):
    def conv(s):
        try:
            v = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {'non-negative' if allow_zero else 'positive'} "
                                             f"{kind.__name__}, got {s!r}") from None
        if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
            raise argparse.ArgumentTypeError(f"expected a {'non-negative' if allow_zero else 'positive'} "
                                             f"{kind.__name__}, got {s!r}")
        return v
    return conv


def _parser():
    p = _Parser(prog="rejection_table", description=__doc__.splitlines()[0])
    p.add_argument("--vehicles", nargs="+", default=list(VEHICLES), choices=list(VEHICLES))
    p.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES), choices=list(CASES),
                   help="default: all but model_error")
    lv = sorted({x for _, levels in VEHICLES.values() for x in levels})
    p.add_argument("--levels", nargs="+", choices=lv, help="default: every level of each vehicle")
    p.add_argument("--modes", nargs="+", default=["off", "on"], choices=["off", "on"])
    p.add_argument("--seeds", type=_positive(int), default=None, help="seeds of the drawn cases (default 10; "
                   "--quick 2)")
    p.add_argument("--jobs", type=_positive(int), default=1, help="flights in parallel (processes; default 1)")
    p.add_argument("--preroll", type=_positive(float, True), default=None, help=f"[s] default {PREROLL_S:g}")
    p.add_argument("--duration", type=_positive(float), default=None, help=f"[s] scored, default {DURATION_S:g}")
    p.add_argument("--push", type=_positive(float), default=2.0, help="[N] the end-effector push (default 2)")
    p.add_argument("--quick", action="store_true", help="1 s pre-roll, 0.5 s scored, 2 seeds")
    p.add_argument("--no-observers", action="store_true", help="skip the observers' readings")
    p.add_argument("--json", type=Path, help="write every figure here (rewritten after each flight)")
    return p


def main(argv=None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    seeds = a.seeds if a.seeds is not None else (2 if a.quick else 10)
    preroll = a.preroll if a.preroll is not None else (1.0 if a.quick else PREROLL_S)
    duration = a.duration if a.duration is not None else (0.5 if a.quick else DURATION_S)
    levels_of = {v: tuple(x for x in VEHICLES[v][1] if a.levels is None or x in a.levels) for v in a.vehicles}
    if not any(levels_of.values()):
        p.error(f"--levels: none of {a.levels} is a level of {', '.join(a.vehicles)}")
    if a.json is not None:
        try:
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text("{}\n")
        except OSError as exc:
            p.error(f"--json: {a.json}: {exc.strerror or exc}")
    cases = list(dict.fromkeys(a.cases))
    # the options-on flights first (the done-when cases lead CASES), then the observers, then off
    jobs = [(v, lv, c, m, s, preroll, duration, a.push)
            for m in sorted(a.modes, key=lambda m: m != "on") for c in cases for v in a.vehicles
            for lv in levels_of[v] for s in (range(seeds) if CASES[c][2] else (0,))]
    obs_jobs = [] if a.no_observers else [(v, preroll, duration, a.push) for v in a.vehicles]
    print(f"rejection table: {len(jobs)} flights ({preroll:g} s pre-roll + {duration:g} s scored, 1 kHz MuJoCo), "
          f"{len(obs_jobs)} observer runs, {a.jobs} at a time; seeds 0..{seeds - 1} for the drawn cases "
          "(a fixed case flies the same for every seed: once)", flush=True)
    res = {"settings": {"preroll_s": preroll, "duration_s": duration, "seeds": seeds, "push_n": a.push,
                        "push_direction": PUSH_DIRECTION, "end_effector": END_EFFECTOR, "command": sys.argv},
           "flights": [], "observers": {}}

    def save():
        if a.json is not None:
            res["summary"] = summarize(res["flights"])
            a.json.write_text(json.dumps(res, indent=1) + "\n")

    t_start = time.perf_counter()
    first = [j for j in jobs if j[3] == "on" and not CASES[j[2]][2]]     # on, fixed cases
    todo = ([("fly", j) for j in first] + [("obs", j) for j in obs_jobs]
            + [("fly", j) for j in jobs if j not in first])

    def report(kind, job, r, i):
        el = time.perf_counter() - t_start
        if kind == "obs":
            res["observers"][r[0]] = r[1]
            print(f"[{i}/{len(todo)} {el:.0f} s] observers {r[0]}: " + _obs_line(r[1]), flush=True)
        else:
            res["flights"].append(r)
            what = (f"offset {r['offset_m'] * 1e3:.3g} mm, RMS {r['rms_m'] * 1e3:.3g} mm" if "offset_m" in r
                    else f"FAILED: {r.get('diverged') or r.get('error')}")
            print(f"[{i}/{len(todo)} {el:.0f} s] {r['vehicle']} {r['case']} {r['level']} {r['mode']} seed "
                  f"{r['seed']}: {what}", flush=True)
        save()

    if a.jobs == 1:
        for i, (kind, job) in enumerate(todo, 1):
            report(kind, job, (_obs_job if kind == "obs" else _fly_job)(job), i)
    else:
        import multiprocessing as mp
        with ProcessPoolExecutor(a.jobs, mp_context=mp.get_context("spawn")) as ex:
            futs = {ex.submit(_obs_job if kind == "obs" else _fly_job, job): (kind, job) for kind, job in todo}
            for i, f in enumerate(as_completed(futs), 1):
                report(*futs[f], f.result(), i)
    summary = summarize(res["flights"])
    res["summary"] = summary
    print(format_tables(summary, a.vehicles, cases, levels_of, a.modes))
    verdicts = done_when(summary, a.vehicles, levels_of) if "on" in a.modes else []
    for v in a.vehicles:
        s = summary.get(f"{v}/arm+10/{levels_of[v][-1]}/on") if levels_of[v] else None
        if s and "com_shift_m" in s:
            verdicts.append(f"{v} arm+10: the plant's CoM sits {1e3 * s['com_shift_m'][2]:+.2f} mm (z) from the "
                            f"model's along the flight, unobservable along the thrust; the offset left: "
                            f"{1e3 * s['mean_error_m'][2]:+.2f} mm (z)")
    if verdicts:
        print("\n" + "\n".join(verdicts))
    res["done_when"] = verdicts
    save()
    print(f"\n{len(res['flights'])} flights in {time.perf_counter() - t_start:.0f} s"
          + (f"; figures in {a.json}" if a.json else ""))
    failed = [f for f in res["flights"] if "error" in f]
    return 1 if failed else 0


def _obs_line(o) -> str:
    if "error" in o:
        return "FAILED: " + o["error"]
    parts = []
    for k in ("whole_body", "rigid_body"):
        r = o.get(f"free_flight/{k}")
        if r:
            parts.append(f"{k} reads |f| max {r['force_max_n']:.2g} N, |n| max {r['moment_max_nm']:.2g} N m")
    pu = o.get("push", {})
    if "whole_body_force_error_max_n" in pu:
        parts.append(f"push {pu['force_n']:g} N: whole-body error max {pu['whole_body_force_error_max_n']:.2g} N, "
                     f"{pu['whole_body_moment_error_max_nm']:.2g} N m")
    return "free flight (truth 0): " + "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
