"""Issue 53's measured baseline, reproduced with the package's worlds: the collinear hexarotor
(``config/hexarotor.yaml``), perfect sensing, default gains, ``--duration`` s scored after
``--preroll`` s, the plant perturbed by a world of ``config/world.yaml`` and the controller on the
nominal model. Prints the CoM RMS and the mean error along its worst axis per level.

Usage::

    python bench/loops/world_baseline.py                       # exact + the issue's four cases
    python bench/loops/world_baseline.py --worlds thrust_minus5,mass_plus10 --levels ff2 --json out.json

Each (world, level) runs in this process; about 10 s each on one core.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

CASES = ("exact", "arm_mass_plus10", "thrust_minus5", "base_com_5mm", "lag_plus30")
LEVELS = ("rigid", "ff0", "ff1", "ff2")


def run(world: str, level: str, duration: float, preroll: float, seed: int) -> dict:
    from geodyn_ros.loops.underactuated import simulate_underactuated
    from geodyn_ros.sim.world_file import world_preset
    r = simulate_underactuated(level, duration, preroll=preroll, world=world_preset(world), world_seed=seed)
    e = (r.log.p - r.log.p_d).mean(axis=0)
    k = int(np.argmax(np.abs(e)))
    return {"com_rms_m": r.log.rms()["position_m"], "mean_error_m": [float(x) for x in e], "worst_axis": "xyz"[k],
            "worst_mean_m": float(e[k]), "diverged": r.diverged}


def cell(m: dict) -> str:
    if m["diverged"]:
        return "diverged"
    rms = m["com_rms_m"]
    s = f"{1e3 * rms:.3g} mm" if rms >= 1e-3 else f"{1e6 * rms:.3g} um"
    return s + (f" ({m['worst_axis']} {1e3 * m['worst_mean_m']:+.1f})" if abs(m["worst_mean_m"]) >= 1e-3 else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", default=",".join(CASES))
    p.add_argument("--levels", default=",".join(LEVELS))
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--preroll", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the numbers to this file")
    a = p.parse_args(argv)
    worlds, levels = a.worlds.split(","), a.levels.split(",")
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.underactuated import hexarotor_source
    from geodyn_ros.sim.world_file import world_preset
    cfg = load_actuation_config("hexarotor")
    for w in worlds:                      # what each world drew for this seed (the same for every level)
        print("\n".join(world_preset(w).draw(a.seed, hexarotor_source(), cfg).lines()))
    out = {w: {lv: run(w, lv, a.duration, a.preroll, a.seed) for lv in levels} for w in worlds}
    print("| plant vs model | " + " | ".join(levels) + " |")
    print("|---|" + "---|" * len(levels))
    for w in worlds:
        print(f"| {w} | " + " | ".join(cell(out[w][lv]) for lv in levels) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
