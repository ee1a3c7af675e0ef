#!/usr/bin/env python3
"""Time from process start to the first published output of ``geodyn_node``, cold and warm.

* **cold**: numba's cache is empty (``NUMBA_CACHE_DIR`` pointed at a new empty folder, so the
  kernels compile in the process), as on a first start without ``geodyn_warmup``;
* **warm**: the cache the install filled (``make venv`` runs ``geodyn_warmup``).

The node runs as a separate process (``bench_node.NodeProcess``); a driver publishes Table 3
references every 10 ms from the moment the process starts and the time of the first
``feedforward/jet`` is taken. Figures, not assertions.

    python bench/ros/bench_first_start.py [--repeats 3] [--no-cold]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "ros"))

from bench_node import Driver, NodeProcess  # noqa: E402  (sets the ROS isolation env first)

import rclpy  # noqa: E402
from rclpy.context import Context  # noqa: E402

from geodyn_ros.model.resources import shipped_urdf  # noqa: E402


def first_output_seconds(ctx, cache_dir=None, order=2, timeout=600.0) -> float:
    old = os.environ.get("NUMBA_CACHE_DIR")
    if cache_dir is not None:
        os.environ["NUMBA_CACHE_DIR"] = cache_dir
    try:
        t0 = time.perf_counter()
        node = NodeProcess(str(shipped_urdf()), order)
    finally:
        if cache_dir is not None:
            if old is None:
                os.environ.pop("NUMBA_CACHE_DIR", None)
            else:
                os.environ["NUMBA_CACHE_DIR"] = old
    drv = Driver(ctx, order, 2, 10)
    try:
        while not drv.stamps:
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError("no output:\n" + node.output())
            node.check()
            drv.send()
            drv.spin_for(0.01)
        return time.perf_counter() - t0
    finally:
        drv.close()
        node.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true")
    args = ap.parse_args(argv)
    ctx = Context()
    rclpy.init(context=ctx)
    warm = [first_output_seconds(ctx) for _ in range(args.repeats)]
    print(f"geodyn_node, process start -> first feedforward/jet (order 2, {args.repeats} runs)")
    print(f"  warm (numba cache filled at install): median {statistics.median(warm):.2f} s "
          f"(runs: {', '.join(f'{w:.2f}' for w in warm)})")
    if not args.no_cold:
        with tempfile.TemporaryDirectory() as empty:
            cold = first_output_seconds(ctx, cache_dir=empty)
        print(f"  cold (empty numba cache, compiles in the process): {cold:.1f} s")
    ctx.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
