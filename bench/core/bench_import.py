#!/usr/bin/env python3
"""What keying numba's cache on every source a kernel compiled in costs at ``import geodyn_ros``.

Fresh interpreters with warm caches, the two sides interleaved, medians over ``--repeats``:

* **before**: numba's own locators (``geodyn_ros._kernel_cache.install`` replaced by a no-op
  ahead of the import), cache in ``<cache-root>/before``;
* **after**: the package as it is (its locators stamp each kernel with
  ``_kernel_cache.sources_digest``), cache in ``<cache-root>/after``;
* **stamps**: the stamp computation alone, in a fresh interpreter: ``sources_digest`` of every
  module whose kernels ``import geodyn_ros`` defines, each file read and hashed once.

Each side's first run fills its cache if it is empty (not timed: about a minute per side on a
quiet 2-core machine; later runs of this script reuse the caches). Printed: the medians and their
ratios to the ``before`` import measured in the same run. Figures, not assertions.

    python bench/core/bench_import.py [--repeats 9] [--cache-root DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = r'''
import json, sys, time
mode = sys.argv[1]
if mode == "before":                      # numba's own locators: the package's install() does nothing
    import types
    stub = types.ModuleType("geodyn_ros._kernel_cache")
    stub.install = lambda *args, **kwargs: False
    sys.modules["geodyn_ros._kernel_cache"] = stub
if mode == "stamps":
    import importlib.util
    root, files = sys.argv[2], json.loads(sys.argv[3])
    spec = importlib.util.spec_from_file_location("_kc", root + "/_kernel_cache.py")
    kc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kc)
    t = time.perf_counter()
    for f in files:
        kc.sources_digest(f, root)
    print(json.dumps({"seconds": time.perf_counter() - t}))
    raise SystemExit
t = time.perf_counter()
import geodyn_ros
seconds = time.perf_counter() - t
from numba.core.registry import CPUDispatcher
misses = sum(sum(v.stats.cache_misses.values()) for name, m in list(sys.modules.items())
             if name.startswith("geodyn_ros") for v in list(vars(m).values()) if isinstance(v, CPUDispatcher))
kc = sys.modules["geodyn_ros._kernel_cache"]
files = sorted(p for (r, p) in getattr(kc, "_digests", {}))
print(json.dumps({"seconds": seconds, "misses": misses, "files": files,
                  "root": str(getattr(kc, "_ROOT", ""))}))
'''


def child(mode: str, cache: Path | None, *extra: str) -> dict:
    env = dict(os.environ)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    out = subprocess.run([sys.executable, "-c", CHILD, mode, *extra], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{mode}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--cache-root", type=Path, default=Path(tempfile.gettempdir()) / "geodyn_bench_import")
    args = ap.parse_args(argv)
    caches = {side: args.cache_root / side for side in ("before", "after")}
    for side, cache in caches.items():
        for _ in range(2):                           # fill the cache (not timed)
            if child(side, cache)["misses"] == 0:
                break
            print(f"{side}: cache filled in {cache}", file=sys.stderr, flush=True)
    times = {"before": [], "after": [], "stamps": []}
    files = root = None
    for i in range(args.repeats):
        for side in (("before", "after") if i % 2 == 0 else ("after", "before")):
            got = child(side, caches[side])
            if got["misses"]:
                raise RuntimeError(f"{side}: {got['misses']} kernels compiled in a timed run (cache not warm)")
            times[side].append(got["seconds"])
            if side == "after":
                files, root = got["files"], got["root"]
        times["stamps"].append(child("stamps", None, root, json.dumps(files))["seconds"])
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = med["before"]
    print(f"import geodyn_ros, warm cache, {args.repeats} fresh interpreters per side (median, range), "
          f"{len(files)} kernel modules stamped:")
    for k, label in (("before", "numba's locators (reference)"), ("after", "the package's locators"),
                     ("stamps", "stamp computation alone")):
        lo, hi = min(times[k]), max(times[k])
        print(f"  {label:32s} {1e3 * med[k]:8.1f} ms  ({1e3 * lo:.1f}-{1e3 * hi:.1f})  ratio {med[k] / ref:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
