#!/usr/bin/env python3
"""The full-length tables of the third-party vehicles (doc/howto/fly_your_vehicle.md quotes them).

``geodyn_fly`` on each shipped third-party vehicle (config/vehicles, URDFs from
example-robot-data): the report's summary, then every level of its rank on the default
reference (the figure eight scaled to the vehicle), ``--duration`` scored seconds after
``--preroll`` seconds, exactly as the command prints them. Figures, not assertions (test/loops/test_fly.py
checks the short runs). The real-time factor column is per row; the machine's load shows in it.

    python bench/loops/bench_fly.py [--duration 16] [--preroll 5] [--vehicles iris,borinot_flying_arm_2]
"""
from __future__ import annotations

import argparse
import time

from geodyn_ros.loops.fly import main

VEHICLES = ("borinot_flying_arm_2", "hextilt_flying_arm_5", "iris")


def run(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration", type=float, default=16.0, help="scored seconds per level")
    p.add_argument("--preroll", type=float, default=5.0, help="seconds on the reference before scoring")
    p.add_argument("--vehicles", default=",".join(VEHICLES))
    p.add_argument("--reference", default="figure8")
    a = p.parse_args(argv)
    worst = 0
    for v in a.vehicles.split(","):
        cmd = ["--vehicle", v, "--reference", a.reference, "--duration", f"{a.duration:g}",
               "--preroll", f"{a.preroll:g}"]
        print(f"$ geodyn_fly {' '.join(cmd)}", flush=True)
        t0 = time.perf_counter()
        rc = main(cmd)
        print(f"(exit {rc}, {time.perf_counter() - t0:.0f} s wall)\n", flush=True)
        worst = max(worst, rc)
    return worst


if __name__ == "__main__":
    raise SystemExit(run())
