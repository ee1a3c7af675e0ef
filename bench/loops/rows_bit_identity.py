"""Are the shipped loops' rows bit-identical between two source trees? (issue 33's "the shipped
tables must not move").

Runs every row of the under-actuated (``u_*``) and actuated (``a_*``) loops for ``--duration``
seconds after ``--preroll`` seconds, each row in a fresh process with ``PYTHONPATH`` set to the
tree, saves the logs (CoM or base position, attitude, joints, peaks and clip counts), and
compares them sample by sample.

Usage::

    mkdir /tmp/old && git archive <commit> | tar -x -C /tmp/old     # the old tree
    python bench/loops/rows_bit_identity.py --old /tmp/old --new . [--duration 2 --preroll 0.5]

The first run of a tree without a numba cache compiles its kernels and can differ from a cached
run at the 1e-12 level (seen once on the ``rigid`` row); run each tree once before comparing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROWS = {"u": ("rigid", "ff0", "ff1", "ff2", "ideal", "rigid_rigid_arm", "ff1_rigid_arm", "ff2_discrete_lag"),
        "a": ("pd", "ff0", "ff1", "ff2", "ideal", "ff1_rigid_arm", "ff2_discrete_lag")}

_ONE = """
import sys, numpy as np
kind, row, out, dur, pre = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
if kind == "u":
    from geodyn_ros.loops.underactuated import simulate_underactuated as f
else:
    from geodyn_ros.loops.actuated import simulate_actuated as f
r = f(row, dur, preroll=pre)
np.savez(out, p=r.log.p, q=r.log.q, R=r.log.R,
         pk=np.array([r.rotor_speed_peak, r.motor_torque_peak, r.rotor_saturations, r.motor_saturations]))
"""


def run_tree(tree: Path, out: Path, duration: float, preroll: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    for kind, rows in ROWS.items():
        for row in rows:
            subprocess.run([sys.executable, "-c", _ONE, kind, row, str(out / f"{kind}_{row}.npz"), str(duration),
                            str(preroll)], env=env, check=True, cwd=tree)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, type=Path)
    p.add_argument("--new", required=True, type=Path)
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--preroll", type=float, default=0.5)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "old", Path(tmp) / "new"
        run_tree(a.old, old, a.duration, a.preroll)
        run_tree(a.new, new, a.duration, a.preroll)
        n_diff = 0
        for f in sorted(os.listdir(old)):
            x, y = np.load(old / f), np.load(new / f)
            diff = [k for k in x.files if not np.array_equal(x[k], y[k])]
            n_diff += bool(diff)
            print(f"{f[:-4]:22s} " + ("bit-identical" if not diff else
                                       f"DIFFERS in {diff}, max {max(np.abs(x[k] - y[k]).max() for k in diff):.3g}"))
        print(f"{len(os.listdir(old)) - n_diff} of {len(os.listdir(old))} rows bit-identical")
    return 1 if n_diff else 0


if __name__ == "__main__":
    sys.exit(main())
