#!/usr/bin/env python3
"""Cost of a 10-waypoint plan with its whole-body feasibility check and time scaling, against the
flat map's own per-sample cost measured in the same run (issue 34, item 6; goal: plan + check +
scaling <= 50 ms, so a replan fits between reference updates).

Figures, not assertions (nothing fails on a slow or shared machine). Medians over ``--repeats``:

* ``plan``: :func:`geodyn_ros.planning.plan_mission` with the time allocation (CoM, yaw and six
  joints through 10 waypoints: 9 segments, 10 banded solves);
* ``check``: one :func:`~geodyn_ros.planning.check_feasibility` (32 samples per segment, order 2,
  refined worst);
* ``scaling``: :func:`~geodyn_ros.planning.fastest_scaling` to a 10 % margin (all its checks);
* ``total`` = plan + scaling (the scaling's last check is the plan's check);
* the reference: ``gd.flat_inverse_dynamics`` at order 2 per sample, one call per sample (hot
  path) and batched (the thread pool), and the planner's one-thread loop of the same kernel;
* the per-segment timing (:func:`~geodyn_ros.planning.fastest_segment_times`, offline);
* ratios: total over the per-sample cost (how many flat-map samples the whole plan costs), and the
  scaling's overhead over the flat-map samples it evaluates.

    python bench/loops/bench_planning.py [--repeats 20]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import geodyn_ros as gd
from geodyn_ros.planning import (Vehicle, check_feasibility, fastest_scaling, fastest_segment_times, plan_mission,
                                 sample_times)
from geodyn_ros.planning._serial import flat_map_serial
from geodyn_ros.planning.feasibility import ZOOM_POINTS, ZOOM_ROUNDS


def mission(n_wp=10, seed=7):
    """10 waypoints in a 4 m x 4 m x 1.5 m volume; the yaw and the six arm joints move at every one."""
    rng = np.random.default_rng(seed)
    com = np.c_[rng.uniform(-2.0, 2.0, (n_wp, 2)), rng.uniform(0.5, 2.0, (n_wp, 1))]
    yaw = rng.uniform(-1.0, 1.0, n_wp)
    q = rng.uniform(-0.8, 0.8, (n_wp, 6))
    return com, yaw, q


def median_time(f, repeats):
    ts = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    v = Vehicle.hexarotor()
    com, yaw, q = mission()
    limits = dict(max_velocity=1.0, max_acceleration=1.0, max_yaw_rate=1.0, max_yaw_acceleration=2.0,
                  max_joint_velocity=1.0, max_joint_acceleration=2.0)
    margin = 0.1
    # warm-up (numba compilation, caches)
    traj = plan_mission(com, yaw, q, **limits)
    fastest_scaling(v, traj, margin=margin)

    t_plan, traj = median_time(lambda: plan_mission(com, yaw, q, **limits), args.repeats)
    t_check, rep = median_time(lambda: check_feasibility(v, traj), args.repeats)
    t_scale, res = median_time(lambda: fastest_scaling(v, traj, margin=margin), args.repeats)
    total = t_plan + t_scale

    # the flat map's own cost per sample, same samples, order 2
    ts = sample_times(traj)
    c, y, qq = traj.jets(ts, 2)
    n = len(ts)

    def one_by_one():
        for j in range(n):
            gd.flat_inverse_dynamics(v.model, c[j], y[j], qq[j], 2)

    t_single = median_time(one_by_one, args.repeats)[0] / n
    t_batch = median_time(lambda: gd.flat_inverse_dynamics(v.model, c, y, qq, 2), args.repeats)[0] / n
    t_serial = median_time(lambda: flat_map_serial(v.model, c, y, qq, 2), args.repeats)[0] / n
    per_check = n + ZOOM_POINTS * ZOOM_ROUNDS
    evaluated = res.evaluations * per_check

    print(f"10-waypoint mission ({traj.com.n_segments} segments, {traj.duration:.2f} s as allocated), hexarotor "
          f"manipulator, order-2 check, {n} samples per check (+{ZOOM_POINTS * ZOOM_ROUNDS} refining); medians of "
          f"{args.repeats}")
    print(f"  plan (allocation + 10 banded solves)   {t_plan * 1e3:8.2f} ms")
    print(f"  one whole-body check                   {t_check * 1e3:8.2f} ms   ({rep.summary()})")
    print(f"  fastest scaling, margin {margin:.2f}          {t_scale * 1e3:8.2f} ms   ({res.evaluations} checks, "
          f"alpha = {res.alpha:.4f}: {res.trajectory.duration:.2f} s; binding: {res.report.limit})")
    print(f"  total plan + check + scaling           {total * 1e3:8.2f} ms   (goal <= 50 ms: "
          f"{'met' if total <= 0.05 else 'NOT met'})")
    print("flat map per sample, order 2 (same samples):")
    print(f"  one call per sample (hot path)         {t_single * 1e6:8.2f} us")
    print(f"  batched (thread pool)                  {t_batch * 1e6:8.2f} us")
    print(f"  planner's one-thread loop              {t_serial * 1e6:8.2f} us")
    print("ratios:")
    print(f"  total / hot-path sample                {total / t_single:8.0f} samples' worth")
    print(f"  scaling / (its {evaluated} samples x one-thread cost) {t_scale / (evaluated * t_serial):6.2f}x "
          "(overhead of jets, allocation and margins)")
    print(f"  check / ({per_check} samples x one-thread cost)   {t_check / (per_check * t_serial):6.2f}x")
    t_seg, rs = median_time(lambda: fastest_segment_times(v, traj, margin=margin), max(3, args.repeats // 4))
    print(f"per-segment timing (offline) {t_seg * 1e3:7.1f} ms: {rs.trajectory.duration:.2f} s against the uniform "
          f"{rs.uniform.trajectory.duration:.2f} s ({rs.evaluations} checks; segment factors "
          f"{np.array2string(rs.factors, precision=2)})")
    for chk in ("frozen_arm", "rigid_rates"):
        t_b, rb = median_time(lambda: fastest_scaling(v, traj, margin=margin, check=chk), max(3, args.repeats // 4))
        wb = check_feasibility(v, rb.trajectory)
        print(f"baseline {chk:12s} scaling {t_b * 1e3:7.2f} ms: alpha = {rb.alpha:.4f} ({rb.report.limit}); the "
              f"whole body there: {wb.worst:+.4f} ({wb.limit})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
