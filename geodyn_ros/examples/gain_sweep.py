"""Each feedforward level at its own best gains, under one robustness rule common to every level
(issue 55 item 4).

The sensing table flies every level with the same gains: the right ablation, but not the
engineering comparison. Here each level (and, with ``baselines``, each baseline: PD plus gravity
and INDI on the TiltHex, INDI on the collinear vehicles) flies a grid of bandwidth scales ``s``:
the CoM (or base position) loop and the base rotation loop get ``kp x s^2`` and ``kd x s`` (their
damping ratios kept; the joint gains stay the vehicle's). ``x1`` is the gains the sensing table
flies under the condition (:func:`base_gains`: the vehicle's, with the rotation loop lowered by
the table's design where the delay demands it; the TiltHex's x0.85 under mocap). A scale is **admissible** when every loop the
delay-margin rule covers (the CoM and roll, pitch and yaw, :func:`geodyn_ros.control.delay_margin.delay_loops`)
has a delay margin of at least :data:`~geodyn_ros.control.delay_margin.MARGIN_RATIO` times the
condition's loop delay (:func:`geodyn_ros.examples.sensing_table.loop_delay`). That rule, the
same for every level, is the one stated constraint. A scale at which any seed diverges does not
win either.

Fairness: every cell (level, scale) flies the same seeds (the sensor errors of a seed are the same
draw for every level and scale), from the same start on the ground, scored over the same window.
Per cell: the mean of the position RMS over the seeds with its 95 % confidence interval (Student's
t). Per level: the winner (the admissible scale of least mean RMS), the same-gains row (``s = 1``,
the vehicle's gains) and their paired difference over the seeds, with its interval.

Usage::

    python -m geodyn_ros.examples.gain_sweep                      # collinear hexarotor, mocap, 10 seeds
    python -m geodyn_ros.examples.gain_sweep --quick              # 2 seeds, 1 s scored, 3 scales
    python -m geodyn_ros.examples.gain_sweep --vehicles underactuated borinot_flying_arm_2 \\
        --conditions mocap onboard --scales 0.5 0.71 1 1.41 2 --seeds 10 --jobs 2 --json out/gains.json
    python -m geodyn_ros.examples.gain_sweep --vehicles actuated --baselines --jobs 2   # the TiltHex, pd_g, indi
    python -m geodyn_ros.examples.gain_sweep --worlds exact model_error --speeds 1 1.5 --seeds 20 --jobs 2
    python -m geodyn_ros.examples.gain_sweep --vehicles borinot_flying_arm_2 --worlds exact --rejection integral \
        --scales 1 --seeds 20 --jobs 2      # the exact plant with the integral action alone
    python -m geodyn_ros.examples.gain_sweep --quick --json out/g.json --plot out/g.png   # the RMS-scale plot
    python -m geodyn_ros.examples.gain_sweep --replot out/g.json --plot out/g.png        # re-plot, fly nothing

``--worlds`` (config/world.yaml) and ``--speeds`` cross every condition (:func:`cell_label`); a world
other than ``exact`` flies with the disturbance rejection a lab turns on (:data:`LAB_REJECTION`: the
integral action and the thrust and CoM estimates; the observer's wrench feedforward costs under
motion capture); ``--rejection lab|integral|off`` flies every world with one set instead, the
exact plant included (:data:`REJECTION_SETS`). A world whose air moves
(``wind_light``, ``disturbed``) starts in flight, after the loops' pre-roll, as issue 53's
rejection table does: from the ground, every level tips over during the take-off. The rotor drag
(0.544 1/s x 4 kg x 6 m/s = 13 N at the rotors, a third of the weight) pushes the vehicle over its
feet before it lifts: the world's wind is the one at 2 m, also at the feet (the log profile would
give a sixth of it at 0.1 m), and the plant's rotor drag acts at its hover strength whatever the
rotors' speed. (Scaling it with the rotors' mean speed was tried: it does not stop the tip-over,
and it changes issue 53's measured wind table, so it was left out.)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace

import numpy as np

__all__ = ["DEFAULT_SCALES", "ERROR_CHARS", "LAB_REJECTION", "REJECTION_SETS", "cell_label", "scale_gains", "admissible", "mean_ci",
           "fly_tasks", "run_sweep", "format_sweep", "plot_sweep", "main"]

#: the bandwidth scales of the grid: factors of sqrt(2) from 0.5 to 2
DEFAULT_SCALES = (0.5, 0.71, 1.0, 1.41, 2.0)
#: the vehicles whose gains the rule covers: the CoM (or base position) loop and the rotation axes of
#: FlatnessGains (the collinear vehicles) and of TrackingGains (the fully actuated TiltHexes)
VEHICLES = ("actuated", "underactuated", "borinot_flying_arm_2", "hextilt_flying_arm_5")
QUICK = {"seeds": 2, "duration": 1.0, "scales": (0.71, 1.0, 1.41)}


def scale_gains(gains, s: float):
    """``gains`` (a FlatnessGains) with the CoM and rotation loops' bandwidth times ``s``:
    ``kp x s^2``, ``kd x s`` (the damping ratio kept); the joint gains unchanged."""
    if not (isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and s > 0):
        raise ValueError(f"scale: expected a finite number > 0, got {s!r}")

    def sc(v, c):
        return tuple(float(x) * c for x in v) if isinstance(v, (tuple, list, np.ndarray)) else float(v) * c
    return replace(gains, kp_position=gains.kp_position * s * s, kd_position=gains.kd_position * s,
                   kp_rotation=sc(gains.kp_rotation, s * s), kd_rotation=sc(gains.kd_rotation, s))


def admissible(gains, inertias, lag, delay):
    """``(ok, margin_s, loop)``: whether every loop of ``gains`` keeps the delay-margin rule at
    ``delay`` [s], with the smallest margin [s] and the loop that sets it."""
    from geodyn_ros.control.delay_margin import delay_loops
    loops = delay_loops(gains, inertias, lag, delay)
    worst = min(loops, key=lambda e: e["margin_s"])
    return all(e["ok"] for e in loops), float(worst["margin_s"]), f"{worst['loop']} {worst['axis']}"


def mean_ci(x, level: float = 0.95):
    """``(mean, half_width)`` of the ``level`` confidence interval of the mean of ``x`` (Student's
    t with ``n - 1`` degrees of freedom; half-width nan for one sample)."""
    from scipy.stats import t
    a = np.asarray(x, float)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"x: expected a non-empty 1-D array of finite numbers, got {x!r}")
    if a.size == 1:
        return float(a[0]), math.nan
    return float(a.mean()), float(t.ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))


# ----------------------------------------------------------------------------- flights
def base_gains(v, delay):
    """The gains ``x1`` stands for: the vehicle's, with the rotation loop lowered as the sensing
    table lowers it for ``delay`` [s] (:func:`~geodyn_ros.examples.sensing_table.fit_gains`), so
    that the same-gains column is the sensing table's row. (The collinear vehicles keep their own
    gains under mocap and onboard; the TiltHex flies its rotation loop x0.85 under mocap.)"""
    from geodyn_ros.examples.sensing_table import fit_gains
    return fit_gains(v.gains0, v.kind, v.inertias, v.lag, delay)[0]


#: the disturbance rejection a world other than ``exact`` flies with: the integral action and the
#: thrust and CoM estimates, not the observer's wrench feedforward. Measured (collinear hexarotor,
#: mocap, from flight, 2 seeds): the wrench feedforward at its default 30 rad/s takes ff1 from 1.28
#: to 7-14 mm and ff2 to 106-114 mm (ff2 cancels the joint estimate through K^-1 k_p, amplifying the
#: estimate's sensing noise); at 10 rad/s 2.0-2.2 mm, at 3 rad/s 1.3-1.5 mm, never better than off.
#: The integral alone: 0.78-0.98 mm. (With perfect sensing the feedforward is exact: 0.029 mm.)
LAB_REJECTION = {"integral_action": True, "thrust_estimate": True, "com_estimate": True}
#: ``--rejection``: the options a column flies with, for every world, the exact plant included (None,
#: the default: :data:`LAB_REJECTION` in a world other than ``exact``, none in ``exact``, as before).
#: ``integral`` is the integral action alone; ``off`` flies a drawn world with no rejection at all.
REJECTION_SETS = {"lab": LAB_REJECTION, "integral": {"integral_action": True}, "off": {}}


def cell_label(cond: str, world: str = "exact", speed: float = 1.0, rejection: str | None = None) -> str:
    """The key of a (sensing condition, world, speed[, rejection]) column: the condition alone for
    the exact world at speed 1 (the sweep as it was), else ``"<condition> | <world> | x<speed>"``;
    with a ``rejection`` set (:data:`REJECTION_SETS`) given, ``" | rejection <name>"`` after it."""
    if rejection is not None:
        return f"{cond} | {world} | x{float(speed):g} | rejection {rejection}"
    return cond if (world, float(speed)) == ("exact", 1.0) else f"{cond} | {world} | x{float(speed):g}"


def _flight(args):
    """(vehicle, level, condition, scale, seed, duration[, world, speed[, rejection]]) -> (key, position
    RMS [m] or the divergence). A world other than ``exact`` (config/world.yaml) is drawn by the seed
    and flown with the disturbance rejection a lab turns on there (:data:`LAB_REJECTION`), or with
    the set ``rejection`` names (:data:`REJECTION_SETS`, any world); ``speed`` scales the reference's
    time."""
    vname, level, cond, s, seed, duration, *rest = args
    world, speed, rejection = (tuple(rest) + (None,))[:3] if rest else ("exact", 1.0, None)
    from geodyn_ros.examples.sensing_table import _VEHICLE_CACHE, _rule_for, _Vehicle, condition_profile, loop_delay
    from geodyn_ros.loops.sensed import Sensing
    v = _VEHICLE_CACHE.get(vname) or _VEHICLE_CACHE.setdefault(vname, _Vehicle(vname))
    prof = condition_profile(cond)
    kw, ground = dict(v.kw), True
    if world != "exact" or rejection is not None:
        from geodyn_ros.control.rejection import RejectionOptions
        from geodyn_ros.sim.world_file import world_preset
        w = world_preset(world)
        opts = LAB_REJECTION if rejection is None else REJECTION_SETS[rejection]
        kw.update(world=w, world_seed=seed, **({"rejection": RejectionOptions(**opts)} if opts else {}))
        ground = w.wind is None      # in wind: from flight (module docstring: a take-off in it tips over)
    sensing = Sensing(prof, seed=seed, ground=ground, log=None, rule=_rule_for(None, prof))
    if float(speed) != 1.0:
        kw["speed"] = float(speed)
    res = v.run(level, duration, gains=scale_gains(base_gains(v, loop_delay(prof)), s), sensing=sensing, **kw)
    out = {"diverged": res.diverged} if res.diverged else {"rms_m": float(res.log.rms()["position_m"])}
    return (vname, cell_label(cond, world, speed, rejection), level, s, seed), out


def fly_tasks(job, tasks, jobs: int):
    """``(k, job(task))`` for every task, ``k`` counting from 1 in the order they finish: in
    ``jobs`` forked processes when ``jobs > 1``, else here, in order."""
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(jobs) as pool:
            yield from enumerate(pool.imap_unordered(job, tasks), 1)
    else:
        yield from enumerate(map(job, tasks), 1)


#: the longest error message a failed flight keeps (the report stays bounded)
ERROR_CHARS = 200


def _flight_job(args):
    """:func:`_flight`, with a flight that cannot run (an exception) reported as ``{"error": ...}``
    and the others flown on, as ``rejection_table`` does."""
    try:
        return _flight(args)
    except Exception as exc:      # a flight that cannot run is reported, the others go on
        vname, level, cond, s, seed, _, *rest = args
        return (vname, cell_label(cond, *rest), level, s, seed), {"error": f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]}


def run_sweep(vehicles=("underactuated",), conditions=("mocap",), *, scales=DEFAULT_SCALES, seeds=10,
              duration=3.0, jobs=1, progress=None, baselines=False, worlds=("exact",), speeds=(1.0,),
              rejection=None) -> dict:
    """Every admissible (level, scale) cell of each vehicle and condition over ``seeds`` seeds
    (module docstring): ``{"settings", "vehicles": {v: {c: {"delay_s", "scales": {s: {"admissible",
    "margin_s", "loop"}}, "levels": {lv: {"cells": {s: {"rms_m": [...], "diverged": [...], "failed": [...],
    "mean_m", "ci_m"}}, "best", "same", "paired"}}}}}}``. A flight that raises is kept in its cell's
    ``failed`` as ``(seed, "Type: message")`` (at most :data:`ERROR_CHARS`); its cell wins nothing.

    ``worlds`` (names of config/world.yaml) and ``speeds`` (time scalings of the reference) cross
    every condition: each (condition, world, speed) is one column of the result, keyed
    :func:`cell_label` (the condition alone for ``exact`` at 1, so the defaults give the sweep as it
    was, bit for bit), with its ``"sensing"``, ``"world"`` and ``"speed"``. A seed draws the sensor
    errors and the world alike, the same draw for every level and scale. ``rejection`` (a name of
    :data:`REJECTION_SETS`, or None for the rule above) flies every column with that set, the exact
    plant included; its columns are keyed with it (:func:`cell_label`)."""
    from geodyn_ros.examples.sensing_table import BASELINE_ROWS, _VEHICLE_CACHE, _Vehicle, condition_profile, loop_delay
    for name, v in (("vehicles", vehicles), ("conditions", conditions), ("scales", scales), ("worlds", worlds),
                    ("speeds", speeds)):
        if isinstance(v, (str, bytes)) or not len(v):
            raise ValueError(f"{name}: expected a non-empty list, got {v!r}")
    for sp in speeds:
        if isinstance(sp, bool) or not isinstance(sp, (int, float)) or not (math.isfinite(sp) and sp > 0):
            raise ValueError(f"speeds: expected finite numbers > 0, got {sp!r}")
    from geodyn_ros.sim.world_file import world_preset
    for w in worlds:
        if not isinstance(w, str):
            raise ValueError(f"worlds: expected names of config/world.yaml, got {w!r}")
        world_preset(w)       # an unknown name: the world file's one-line refusal
    if rejection is not None and rejection not in REJECTION_SETS:
        raise ValueError(f"rejection: expected one of {', '.join(sorted(REJECTION_SETS))} or None, got {rejection!r}")
    for vn in vehicles:
        if vn not in VEHICLES:
            raise ValueError(f"vehicles: expected some of {', '.join(VEHICLES)}, got {vn!r}")
    for s in scales:
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not (math.isfinite(s) and s > 0):
            raise ValueError(f"scales: expected finite numbers > 0, got {s!r}")
    scales = tuple(sorted(set(float(s) for s in scales)))
    if 1.0 not in scales:
        raise ValueError(f"scales: must hold 1 (the same-gains row), got {scales!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ValueError(f"seeds: expected an integer >= 2 (an interval needs two), got {seeds!r}")
    if not (isinstance(duration, (int, float)) and math.isfinite(duration) and duration > 0):
        raise ValueError(f"duration: expected a finite time > 0 [s], got {duration!r}")
    out = {"settings": {"scales": list(scales), "seeds": seeds, "duration_s": duration,
                        "rule": "delay margin >= MARGIN_RATIO x loop delay on the CoM and rotation axes",
                        "worlds": list(worlds), "speeds": [float(x) for x in speeds], "rejection": rejection},
           "vehicles": {}}
    tasks = []
    for vn in vehicles:
        v = _VEHICLE_CACHE.get(vn) or _VEHICLE_CACHE.setdefault(vn, _Vehicle(vn))
        if "reference" in v.kw and any(float(sp) != 1.0 for sp in speeds):
            raise ValueError(f"speeds: {vn} flies geodyn_fly's scaled reference, which has no time scaling here; "
                             "give it speed 1 only")
        out["vehicles"][vn] = {}
        for c, w, sp in ((c, w, float(sp)) for c in conditions for w in worlds for sp in speeds):
            label = cell_label(c, w, sp, rejection)
            delay = loop_delay(condition_profile(c))
            sc = {}
            for s in scales:
                ok, m, loop = admissible(scale_gains(base_gains(v, delay), s), v.inertias, v.lag, delay)
                sc[s] = {"admissible": ok, "margin_s": m, "loop": loop}
            rows = tuple(v.levels) + (BASELINE_ROWS["actuated" if v.kind == "actuated" else "underactuated"]
                                      if baselines else ())
            levels = {lv: {"cells": {s: {"rms_m": [], "diverged": [], "failed": []} for s in scales if sc[s]["admissible"]}}
                      for lv in rows}
            out["vehicles"][vn][label] = {"delay_s": delay, "scales": sc, "levels": levels, "what": v.what,
                                          "orders": list(v.levels), "baselines": list(rows[len(v.levels):]),
                                          "sensing": c, "world": w, "speed": sp, "rejection": rejection}
            extra = (w, sp, rejection) if rejection is not None else () if (w, sp) == ("exact", 1.0) else (w, sp)
            tasks += [(vn, lv, c, s, seed, duration, *extra) for lv in rows for s in scales if sc[s]["admissible"]
                      for seed in range(seeds)]
    if not tasks:
        raise ValueError("scales: no scale is admissible under the delay-margin rule; add smaller scales")

    def record(key, res, k):
        vn, c, lv, s, seed = key
        cell = out["vehicles"][vn][c]["levels"][lv]["cells"][s]
        if "rms_m" in res:
            cell["rms_m"].append((seed, res["rms_m"]))
        elif "error" in res:
            cell["failed"].append((seed, res["error"]))
        else:
            cell["diverged"].append((seed, res["diverged"]))
        if progress:
            what = (f"{res['rms_m'] * 1e3:.3f} mm" if "rms_m" in res else f"failed: {res['error']}" if "error" in res
                    else f"diverged: {res['diverged']}")
            progress(f"[{k}/{len(tasks)}] {vn} {c} {lv} x{s:g} seed {seed}: {what}")

    for k, (key, res) in fly_tasks(_flight_job, tasks, jobs):
        record(key, res, k)
    for vn, per in out["vehicles"].items():
        for c, d in per.items():
            for lv, L in d["levels"].items():
                _summarize(L, seeds)
    return out


def _summarize(L, seeds):
    for cell in L["cells"].values():
        cell["rms_m"] = [r for _, r in sorted(cell["rms_m"])]
        cell["seeds_flown"] = len(cell["rms_m"])
        cell["failed"] = sorted(cell["failed"])
        if cell["rms_m"] and not cell["diverged"] and not cell["failed"]:
            cell["mean_m"], cell["ci_m"] = mean_ci(cell["rms_m"])
    ok = {s: c for s, c in L["cells"].items() if not c["diverged"] and not c["failed"] and c["seeds_flown"] == seeds}
    L["best"] = min(ok, key=lambda s: ok[s]["mean_m"]) if ok else None
    L["same"] = 1.0 if 1.0 in ok else None
    L["paired"] = None
    if L["best"] is not None and L["same"] is not None:
        d = np.array(L["cells"][L["best"]]["rms_m"]) - np.array(L["cells"][1.0]["rms_m"])
        L["paired"] = (0.0, 0.0) if L["best"] == 1.0 else mean_ci(d)


# ----------------------------------------------------------------------------- the report
def _ratio():
    from geodyn_ros.control.delay_margin import MARGIN_RATIO
    return MARGIN_RATIO


def _mm(m, ci):
    return f"{m * 1e3:.3f} ± {ci * 1e3:.3f}"


def format_sweep(res: dict) -> str:
    """The sweep as markdown: per vehicle and condition, the grid (mean ± 95 % CI of the position
    RMS [mm] per level and scale) and each level's winner against the same gains."""
    lines = []
    st = res["settings"]
    for vn, per in res["vehicles"].items():
        for c, d in per.items():
            lines.append(f"\n{vn} ({d['what']}), {c}: loop delay {d['delay_s'] * 1e3:.1f} ms")
            lines.append(f"position RMS [mm], mean ± 95 % CI over {st['seeds']} seeds, {st['duration_s']:g} s scored")
            lines.append(f"margin: the smallest delay margin of the CoM and rotation loops (>= {_ratio():g} x the delay)")
            scales = [float(s) for s in st["scales"]]
            lines.append("")
            lines.append("| level | " + " | ".join(f"x{s:g}" for s in scales) + " |")
            lines.append("|---|" + "---|" * len(scales))
            row = ["margin"]
            for s in scales:
                e = d["scales"][s]
                row.append(f"{e['margin_s'] * 1e3:.1f} ms{'' if e['admissible'] else ' (refused)'}")
            lines.append("| " + " | ".join(row) + " |")
            for lv, L in d["levels"].items():
                row = [lv]
                for s in scales:
                    cell = L["cells"].get(s)
                    if cell is None:
                        row.append("refused")
                    elif cell["failed"]:
                        row.append(f"{len(cell['failed'])}/{st['seeds']} failed")
                    elif cell["diverged"]:
                        row.append(f"{len(cell['diverged'])}/{st['seeds']} diverged")
                    else:
                        txt = _mm(cell["mean_m"], cell["ci_m"])
                        row.append(f"**{txt}**" if s == L["best"] else txt)
                lines.append("| " + " | ".join(row) + " |")
            lines.append("")
            lines.append("| level | same gains (x1) | best | best - same, paired |")
            lines.append("|---|---|---|---|")
            for lv, L in d["levels"].items():
                same = L["cells"].get(1.0) if L["same"] is not None else None
                best = L["cells"].get(L["best"]) if L["best"] is not None else None
                lines.append(f"| {lv} | {_mm(same['mean_m'], same['ci_m']) if same else '-'} | "
                             + (f"x{L['best']:g}: {_mm(best['mean_m'], best['ci_m'])}" if best else "-") + " | "
                             + (_mm(*L["paired"]) if L["paired"] else "-") + " |")
            lvs = d.get("orders", list(d["levels"]))
            pairs = list(zip(lvs, lvs[1:]))
            lines.append("")
            lines.append("adjacent orders at the same scale, paired over the seeds: lower - higher [mm] (ratio of means)")
            lines.append("")
            lines.append("| scale | " + " | ".join(f"{a} - {b}" for a, b in pairs) + " |")
            lines.append("|---|" + "---|" * len(pairs))
            for sc in scales:
                row = [f"x{sc:g}"]
                for a, b in pairs:
                    ca, cb = d["levels"][a]["cells"].get(sc), d["levels"][b]["cells"].get(sc)
                    if not ca or not cb or "mean_m" not in ca or "mean_m" not in cb or len(ca["rms_m"]) < 2:
                        row.append("-")
                        continue
                    m, h = mean_ci(np.array(ca["rms_m"]) - np.array(cb["rms_m"]))
                    row.append(f"{m * 1e3:+.3f} ± {h * 1e3:.3f} (x{ca['mean_m'] / cb['mean_m']:.2f})")
                if len(row) > 1 and any(c != "-" for c in row[1:]):
                    lines.append("| " + " | ".join(row) + " |")
            order = [lv for lv in lvs if d["levels"][lv]["best"] is not None]
            ratios = []
            for a, b in zip(order, order[1:]):
                ma = d["levels"][a]["cells"][d["levels"][a]["best"]]["mean_m"]
                mb = d["levels"][b]["cells"][d["levels"][b]["best"]]["mean_m"]
                ratios.append(f"{a} -> {b} x{ma / mb:.2f}")
            if ratios:
                lines.append("\nat each level's best gains: " + ", ".join(ratios))
            ref = next((lv for lv in ("ff0",) if lv in order), None)
            for b in d.get("baselines", ()):
                L = d["levels"][b]
                if ref is None or L["best"] is None:
                    continue
                mb = L["cells"][L["best"]]["mean_m"]
                mr = d["levels"][ref]["cells"][d["levels"][ref]["best"]]["mean_m"]
                lines.append(f"baseline {b} at its best (x{L['best']:g}) against {ref} at its best "
                             f"(x{d['levels'][ref]['best']:g}): x{mb / mr:.2f}")
    return "\n".join(lines).lstrip("\n") + "\n"


def plot_sweep(res: dict, path):
    """RMS against the gain scale (issue 55 item 6's plot): one panel per vehicle and column
    (condition, world, speed), one line per level and baseline, the mean of the position RMS [mm]
    over the seeds with its 95 % interval as error bars, the winner ringed; a scale the delay-margin
    rule refuses is shaded and flies nothing. ``res``: :func:`run_sweep`'s result, or the same read
    back from ``--json`` (its scale keys are then strings). Writes a PNG to ``path`` (parents made)."""
    from pathlib import Path
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(vn, c, d) for vn, per in res["vehicles"].items() for c, d in per.items()]
    if not panels:
        raise ValueError("res: no vehicle or column to plot")
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for ax, (vn, c, d) in zip(axes.ravel(), panels):
        scales = sorted(float(k) for k in d["scales"])
        refused = [x for x in scales if not d["scales"][_key(d["scales"], x)]["admissible"]]
        for x in refused:
            ax.axvspan(x / 2 ** 0.25, x * 2 ** 0.25, color="0.9", zorder=0)
        for lv, L in d["levels"].items():
            pts = [(float(k), cell["mean_m"] * 1e3, cell["ci_m"] * 1e3) for k, cell in L["cells"].items()
                   if "mean_m" in cell]
            if not pts:
                continue
            pts.sort()
            x, m, e = (np.array(v) for v in zip(*pts))
            line = ax.errorbar(x, m, yerr=e, marker="o", ms=3, capsize=2, lw=1.2, label=lv)
            if L.get("best") is not None:
                b = float(L["best"])
                cell = L["cells"][_key(L["cells"], b)]
                ax.plot([b], [cell["mean_m"] * 1e3], "o", ms=9, mfc="none", color=line[0].get_color())
        ax.set_xscale("log")
        ax.set_xticks(scales)
        ax.set_xticklabels([f"{x:g}" for x in scales])
        ax.minorticks_off()
        ax.set_xlabel("bandwidth scale s (kp x s^2, kd x s)")
        ax.set_ylabel("position RMS [mm], mean ± 95 % CI")
        ax.set_title(f"{vn}, {c}", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    st = res.get("settings", {})
    fig.suptitle(f"{st.get('seeds', '?')} seeds, {st.get('duration_s', '?')} s scored\n"
                 "shaded: refused by the delay-margin rule; ringed: each level's winner", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _key(d: dict, x: float):
    """The key of ``d`` for the scale ``x``: the float itself, or its string read back from JSON."""
    return x if x in d else next(k for k in d if float(k) == x)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m geodyn_ros.examples.gain_sweep",
                                description="Each level at its own best gains under the delay-margin rule (issue 55).")
    p.add_argument("--vehicles", nargs="+", default=["underactuated"], choices=VEHICLES)
    p.add_argument("--conditions", nargs="+", default=["mocap"], help="sensing profiles (default mocap)")
    p.add_argument("--scales", nargs="+", type=float, default=None, help=f"default {' '.join(map(str, DEFAULT_SCALES))}")
    p.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 10; --quick 2)")
    p.add_argument("--duration", type=float, default=None, help="[s] scored after take-off (default 3; --quick 1)")
    p.add_argument("--jobs", type=int, default=1, help="flights in parallel (processes; default 1)")
    p.add_argument("--quick", action="store_true", help="2 seeds, 1 s scored, scales 0.71 1 1.41")
    p.add_argument("--baselines", action="store_true",
                   help="also the baselines (actuated: pd_g PD plus gravity, indi INDI; collinear: indi)")
    p.add_argument("--worlds", nargs="+", default=["exact"],
                   help="worlds of config/world.yaml crossed with every condition (default exact; e.g. exact "
                        "disturbed: the model error and light wind, flown with the disturbance rejection on)")
    p.add_argument("--speeds", nargs="+", type=float, default=[1.0],
                   help="time scalings of the reference crossed with every condition (default 1)")
    p.add_argument("--rejection", choices=sorted(REJECTION_SETS), default=None,
                   help="fly every world with this rejection set, the exact plant included: lab (integral, thrust "
                        "and CoM estimates), integral (the integral action alone) or off (default: lab in a world "
                        "other than exact, none in exact)")
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--plot", metavar="FILE.png", help="plot RMS against the gain scale, per level and column")
    p.add_argument("--replot", metavar="FILE.json", help="plot a --json of an earlier sweep (with --plot) and fly nothing")
    a = p.parse_args(argv)
    if a.jobs < 1:
        p.error(f"--jobs: expected an integer >= 1, got {a.jobs}")
    if a.replot:
        if not a.plot:
            p.error("--replot: needs --plot FILE.png")
        try:
            with open(a.replot) as f:
                old = json.load(f)
            print(f"plot: {plot_sweep(old, a.plot)}")
        except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
            why = f"{type(exc).__name__}: {exc}" if isinstance(exc, (KeyError, TypeError, StopIteration)) else str(exc)
            print(f"gain_sweep: {a.replot}: {why.splitlines()[0] if why else type(exc).__name__}; give a --json "
                  "file of gain_sweep", file=sys.stderr)
            return 2
        return 0
    q = QUICK if a.quick else {}
    try:
        t0 = time.perf_counter()
        res = run_sweep(a.vehicles, a.conditions, scales=a.scales or q.get("scales", DEFAULT_SCALES),
                        seeds=a.seeds if a.seeds is not None else q.get("seeds", 10),
                        duration=a.duration if a.duration is not None else q.get("duration", 3.0), jobs=a.jobs,
                        baselines=a.baselines, worlds=a.worlds, speeds=a.speeds, rejection=a.rejection,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ValueError as exc:
        print(f"gain_sweep: {exc}", file=sys.stderr)
        return 2
    print(format_sweep(res), end="")
    cells = [c for per in res["vehicles"].values() for d in per.values() for L in d["levels"].values()
             for c in L["cells"].values()]
    n = sum(c["seeds_flown"] + len(c["diverged"]) + len(c["failed"]) for c in cells)
    failed = [e for c in cells for _, e in c["failed"]]
    print(f"\n{n} flights in {time.perf_counter() - t0:.0f} s" + (f"; {len(failed)} failed (first: {failed[0]})"
                                                                 if failed else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, default=str)
    if a.plot:
        print(f"plot: {plot_sweep(res, a.plot)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
