"""URDF load time: this tree's ``load_urdf`` (through urdf_parser_py) against a previous loader, in
the same process (issue 40, deliverable 3: at most 1.5x).

Each source is loaded ``--reps`` times by each loader, alternating (old, new, old, new, ...) so
that a change in the machine's load hits both alike; the median of each and the ratio new/old are
printed, then where the new loader's time goes on the largest source (lxml parse, pruning,
urdf_parser_py, the records and the tree builder). Warnings are silenced (the sources are loaded
as they are; the bit-identity bench compares the warnings). The previous loader is ``--old REV``
(``geodyn_ros/model`` of git revision REV, as in ``urdf_bit_identity.py`` beside this file) or ``--old legacy``
(this tree's ElementTree reader).

Usage::

    python bench/core/bench_urdf_load.py --old be931c0 [--reps 21]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "core"))

from make_tree_urdf import branched_tree_urdf  # noqa: E402
from urdf_bit_identity import erd_dir, loaders  # noqa: E402

#: example-robot-data's largest robots: talos (humanoid, 118 kB), tiago_dual (210 kB), pr2
ERD = ("talos_data/robots/talos_full_v2.urdf", "tiago_description/robots/tiago_dual.urdf",
       "pr2_description/urdf/pr2.urdf")
TREE_K = 40   # bodies per branch of the generated 5-branch tree: 1 + 5 * 40 = 201 bodies


def sources():
    """``[(label, source)]``: the shipped URDFs, example-robot-data's largest, a generated tree."""
    out = [(f"urdf/{p.name}", p) for p in sorted((REPO / "urdf").glob("*.urdf"))]
    out.append(("urdf/hexarotor_manipulator.urdf.xacro (xacro included)", REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"))
    root = erd_dir()
    out += [(f"erd {f}", Path(root) / f) for f in ERD if root and (Path(root) / f).is_file()]
    out.append((f"make_tree_urdf K={TREE_K} x 5 branches ({1 + 5 * TREE_K} bodies)", branched_tree_urdf(TREE_K, 5)))
    return out


def timed(load, src) -> float:
    t0 = time.perf_counter()
    load(src)
    return time.perf_counter() - t0


def profile_new(src, reps):
    """Median seconds of the new path's stages on one source (``geodyn_ros.model.urdf_dom``)."""
    from geodyn_ros.model import urdf, urdf_dom
    text, desc = urdf._read_source(src)
    text = text.lstrip("\ufeff \t\r\n")
    stages = {"lxml parse": [], "prune": [], "urdf_parser_py": [], "records + index": [], "whole load_urdf": []}
    for _ in range(reps):
        t0 = time.perf_counter()
        root = urdf_dom._parse(text)
        t1 = time.perf_counter()
        urdf_dom._prune(root)
        t2 = time.perf_counter()
        saved = urdf_dom._core.on_error, urdf_dom._xmlr.on_error
        urdf_dom._core.on_error = urdf_dom._xmlr.on_error = urdf_dom._ignore
        try:
            robot = urdf_dom._urdf.Robot.from_xml(root, urdf_dom._core.Path("robot"))
        finally:
            urdf_dom._core.on_error, urdf_dom._xmlr.on_error = saved
        t3 = time.perf_counter()
        links = [urdf_dom._link(lk) for lk in robot.links]
        joints = [(urdf_dom._joint(jo, k), je) for k, (jo, je) in enumerate(zip(robot.joints, root.findall("joint")))]
        urdf_dom.index_tree(links, joints, desc)
        t4 = time.perf_counter()
        urdf.load_urdf(src)
        t5 = time.perf_counter()
        for k, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            stages[k].append(dt)
    return {k: float(np.median(v)) for k, v in stages.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="git revision of the previous loader, or 'legacy'")
    p.add_argument("--reps", type=int, default=21)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        from geodyn_ros.model.urdf import load_urdf as new_load    # as users call it (no path recording)
        old_load = loaders(a.old, tmp)[1]
        srcs = sources()
        print(f"load time, median of {a.reps} alternating runs, old = {a.old} (load average "
              f"{os.getloadavg()[0]:.1f})")
        print(f"{'source':62s} {'old ms':>8s} {'new ms':>8s} {'new/old':>8s}")
        ratios = []
        for label, src in srcs:
            old_load(src), new_load(src)                   # first use: imports, xacro's caches
            t_old, t_new = [], []
            for _ in range(a.reps):
                t_old.append(timed(old_load, src))
                t_new.append(timed(new_load, src))
            mo, mn = np.median(t_old), np.median(t_new)
            ratios.append(mn / mo)
            print(f"{label[:62]:62s} {mo * 1e3:8.2f} {mn * 1e3:8.2f} {mn / mo:8.2f}")
        print(f"largest ratio {max(ratios):.2f} (goal: at most 1.5)")
        label, src = max(srcs[:-1], key=lambda s: len(Path(s[1]).read_bytes()) if isinstance(s[1], Path) else 0)
        print(f"where the new path's time goes on {label} (median ms):")
        for k, v in profile_new(src, a.reps).items():
            print(f"  {k:20s} {v * 1e3:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
