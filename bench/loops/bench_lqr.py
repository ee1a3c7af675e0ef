#!/usr/bin/env python3
"""What the time-varying LQR costs online, and how late its gains are, measured in one run.

The under-actuated aerial manipulator (``urdf/hexarotor_manipulator.urdf.xacro``, rotor joints
locked: 6 + 6 DoF), at a sample of the figure eight:

1. **Per cycle, in geodyn_node:** ``gd.linearize`` (body representation, what ``~/linearization``
   carries) against Pinocchio's ``computeABADerivatives`` on the same model and state (the
   Pinocchio model is built from the same URDF with the rotor joints locked by
   ``buildReducedModel``).
2. **Per gain update, on the controller's gain thread** (:class:`OnlineGains` with the node's
   ``prepare``): composing the rigid-body ``A``, ``B`` with the motors and springs
   (``ActuatedModel.compose``), the zero-order-hold discretization (``discretize``: one 48 x 48
   matrix exponential, plus the rotor filter), ``riccati_steps`` = 20 warm-started Riccati steps,
   and their sum; against scipy's ``solve_discrete_are`` on the same discrete model (what a
   cold solve per update would cost).
3. **Per command, in the controller's executor thread:** ``LqrController.command`` against
   ``FlatnessController.command`` (level ff2) on the same inputs.
4. **Online, over ROS** (``--ros-seconds``, 0 skips): the lock-step loop of four nodes with the
   gains on the background thread (row ``lqr_thread`` of ``geodyn_closed_loop --underactuated``)
   for a few simulated seconds; printed: gain updates per wall second, mean and max latency
   from the hand-in of a linearization to its gain (wall clock, the thread's rate wait
   included), mean compute time per update and the fraction of one core the gain thread uses,
   and the loop's real-time factor against the geometric row's in the same run.

Calls are timed round-robin (A, B, A, B, ...) so that load hits both alike; medians of the mean
time per call. Figures, not assertions: nothing here fails on a slow machine.

    python bench/loops/bench_lqr.py [--reps 300] [--repeats 9] [--ros-seconds 3] [--csv out/bench_lqr.csv]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "core"))   # bench_core.write_csv, bench_flat.round_robin_us

import geodyn_ros as gd  # noqa: E402
from bench_core import write_csv  # noqa: E402
from bench_flat import round_robin_us  # noqa: E402
from geodyn_ros.control.flatness import FlatnessController  # noqa: E402
from geodyn_ros.control.lqr import LqrController, LqrWeights, dare_gain, riccati_sweep  # noqa: E402
from geodyn_ros.loops.lqr import _vehicle  # noqa: E402
from geodyn_ros.loops.underactuated import hexarotor_source  # noqa: E402
from geodyn_ros.trajectories import figure_eight_reference  # noqa: E402


def _pinocchio(model, cfg):
    """Pinocchio model of the same robot (free flyer, rotor joints locked) and the state map."""
    import pinocchio as pin
    from geodyn_ros.model.urdf import _read_source
    xml = _read_source(str(hexarotor_source()))[0]
    full = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    lock = [full.getJointId(j) for j in cfg.rotor_joints]
    red = pin.buildReducedModel(full, lock, pin.neutral(full))
    return pin, red, red.createData()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--ros-seconds", type=float, default=3.0, help="simulated seconds of the ROS loops (0: skip)")
    ap.add_argument("--csv", default=str(REPO / "out" / "bench_lqr.csv"))
    args = ap.parse_args(argv)
    cfg, model, al, lin = _vehicle(None, 1e-3)
    w = LqrWeights()
    Q, R = w.Q(lin.n, lin.ne, lin.nr), w.R(lin.nr, lin.ne, lin.nq)
    ref = figure_eight_reference(1.3, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    C, Vb, q, qd, Wb, tau, th, thd, x = lin.nominal(flat, ref.q)
    rows = []

    def row(section, ours, ours_us, other, other_us, note=""):
        rows.append({"section": section, "ours": ours, "ours_us": round(ours_us, 2), "reference": other,
                     "reference_us": round(other_us, 2), "ratio": round(ours_us / other_us, 3), "note": note})
        print(f"  {ours:38s} {ours_us:10.1f} us   {other:34s} {other_us:10.1f} us   ratio {ours_us / other_us:6.2f}"
              + (f"   {note}" if note else ""), flush=True)

    print(f"model '{model.name}': {model.n_joints} joints (rotor joints locked), LQR state {lin.ns}, inputs {lin.nu}")
    # 1. the per-cycle linearization vs Pinocchio
    print("1. per cycle in geodyn_node (median of the mean per call)")
    pin, pm, pd = _pinocchio(model, cfg)
    rng = np.random.default_rng(0)
    qp = pin.neutral(pm)
    qp[:3] = C[:3, 3]
    qp[3:7] = pin.Quaternion(C[:3, :3]).coeffs()
    qp[7:] = q
    vp = np.r_[Vb[3:], Vb[:3], qd]
    tp = rng.normal(size=pm.nv)
    Q2 = np.stack([q, qd])
    lin_call = lambda: gd.linearize(model, C, Vb[None], Q2, Wb[None], tau[None], representation="body")  # noqa: E731
    t_lin, t_pin = round_robin_us([lin_call, lambda: pin.computeABADerivatives(pm, pd, qp, vp, tp)], args.reps,
                                  args.repeats)
    row("per cycle", "gd.linearize (body)", t_lin, "pin.computeABADerivatives", t_pin,
        "linearize also assembles the dense A (24 x 24) and B (24 x 12) with the SE(3) rows")
    # 2. per gain update
    print("2. per gain update (gain thread)")
    L = lin_call()
    Ac, Bc = lin.compose(L.A, L.B)
    Ad_, Bd_ = lin.discretize(Ac, Bc, x)
    P0, _ = dare_gain(Ad_, Bd_, Q, R)
    t_comp, t_disc, t_sweep, t_dare = round_robin_us(
        [lambda: lin.compose(L.A, L.B), lambda: lin.discretize(Ac, Bc, x),
         lambda: riccati_sweep(P0, Ad_, Bd_, Q, R, 20), lambda: dare_gain(Ad_, Bd_, Q, R)],
        max(args.reps // 3, 20), args.repeats)
    total = t_comp + t_disc + t_sweep
    row("per update", "compose (motors, springs)", t_comp, "scipy solve_discrete_are + K", t_dare)
    row("per update", "discretize (expm 48 x 48, rotors)", t_disc, "scipy solve_discrete_are + K", t_dare)
    row("per update", "20 warm-started Riccati steps", t_sweep, "scipy solve_discrete_are + K", t_dare)
    row("per update", "total online update", total, "scipy solve_discrete_are + K", t_dare,
        f"at 100 Hz: {total * 100 / 1e4:.1f} % of one core")
    # 3. per command
    print("3. per command (executor thread)")
    geo = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2", lag_timestep=1e-3)
    _, K = dare_gain(Ad_, Bd_, Q, R)
    lqr = LqrController(lin, lambda t: K)
    Cm = C.copy()
    Cm[:3, 3] += 0.01
    t_lqr, t_geo = round_robin_us([lambda: lqr.command(1.3, Cm, Vb, q, qd, th, thd, ref.q, flat),
                                   lambda: geo.command(Cm, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat)],
                                  args.reps, args.repeats)
    row("per command", "LqrController.command", t_lqr, "FlatnessController.command (ff2)", t_geo)
    # 4. online over ROS
    if args.ros_seconds > 0:
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")
        from geodyn_ros.ros.loops.underactuated_closed_loop import run_ros_underactuated_loop
        print(f"4. online over ROS: the lock-step loop, {args.ros_seconds:g} s simulated")
        info = {}
        r_lqr = run_ros_underactuated_loop("lqr_thread", args.ros_seconds, info=info, wall_timeout=600)
        r_geo = run_ros_underactuated_loop("ff2", args.ros_seconds, wall_timeout=600)
        st = info["lqr_stats"]
        wall = r_lqr.wall_time_s
        n = max(st["updates"], 1)
        print(f"  gain updates: {st['updates']} in {wall:.1f} s wall ({st['updates'] / wall:.0f} per s, limit 100); "
              f"linearizations dropped unused: {st['dropped']}")
        print(f"  latency hand-in -> gain: mean {st['latency_s_sum'] / n * 1e3:.2f} ms, max "
              f"{st['latency_s_max'] * 1e3:.2f} ms; compute per update: mean {st['compute_s_sum'] / n * 1e3:.2f} ms, "
              f"max {st['compute_s_max'] * 1e3:.2f} ms (the first: the DARE)")
        print(f"  gain thread: {st['compute_s_sum'] / wall * 100:.1f} % of one core; loop real-time factor "
              f"{r_lqr.metrics()['real_time_factor']:.2f} (geometric ff2 in the same run: {r_geo.metrics()['real_time_factor']:.2f})")
        rows.append({"section": "online ROS", "ours": "lqr_thread loop", "ours_us": round(wall * 1e6, 0),
                     "reference": "ff2 (geometric) loop", "reference_us": round(r_geo.wall_time_s * 1e6, 0),
                     "ratio": round(wall / r_geo.wall_time_s, 3),
                     "note": (f"updates {st['updates']}, latency mean {st['latency_s_sum'] / n * 1e3:.2f} ms max "
                              f"{st['latency_s_max'] * 1e3:.2f} ms, thread CPU {st['compute_s_sum'] / wall * 100:.1f} %")})
    write_csv(args.csv, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
