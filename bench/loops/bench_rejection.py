#!/usr/bin/env python3
"""Fly a plant that is not the model: the steady CoM offset with the rejection options off and on,
and what the whole-body and rigid-body observers read (issue 53, items 2 and 3).

The collinear hexarotor manipulator of :mod:`geodyn_ros.loops.underactuated` (MuJoCo, gz-sim's
rotor lag, Spong's elastic joints, 1 kHz) flies the figure eight; the **plant** is perturbed, the
controller keeps the nominal model (``config/hexarotor.yaml``, ``urdf/hexarotor_manipulator.urdf.xacro``):

* ``exact``: no perturbation;
* ``mass+10``, ``mass-10``: every link's mass and inertia times 1.1 / 0.9 (total mass +-10 %);
* ``arm+10``: the six arm links' mass and inertia times 1.1 (the issue's case);
* ``thrust-5``: the rotors' thrust constant (and with it the drag torque) times 0.95;
* ``com+5mm``: the base link's CoM 5 mm along its x axis;
* ``combined``: mass+10, thrust-5 and com+5mm at once.

Per level (rigid, ff0, ff1, ff2) and case: the **steady offset** (the mean CoM error over the
scored window: its norm and its largest axis, signed) and the CoM RMS, options ``off``
(``rejection=None``) and ``on`` (:meth:`RejectionOptions.all`: observer feedforward, integral
action, thrust and CoM estimates), with the final thrust scale ``k`` and CoM offset ``delta``.
The CoM is the plant's (its own URDF's), the controller regulates its estimate.

``--observers``: free flight along the figure eight with the arm swinging (exact plant, ff2,
options off, so nothing feeds back), both observers run on the same data (measured state,
commanded rotor speeds through the rotor model, spring torques); the true external wrench is 0:
their largest and RMS force and moment. Then a push of ``--push`` N on the end-effector tool
point (link4, 3 cm off its axis, 12 cm down) for 1 s: the whole-body estimate against MuJoCo's
applied force filtered at the observer's bandwidth, the frame force it attributes to the tool.

``--actuated``, ``--lqr``: the same cases for the fully actuated TiltHex (ActuatedController ff2,
base position error) and for the LQR on the hexarotor (gains with and without integral states).

    python bench/loops/bench_rejection.py [--duration 3] [--preroll 5] [--levels rigid ff0 ff1 ff2]
        [--cases exact mass+10 ...] [--observers] [--actuated] [--lqr] [--json out.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import geodyn_ros as gd  # noqa: E402
from geodyn_ros.control.flatness import FLATNESS_LEVELS, FlatnessController  # noqa: E402
from geodyn_ros.control.rejection import Rejection, RejectionOptions  # noqa: E402
from geodyn_ros.control.rotors import Allocation, load_actuation_config  # noqa: E402
from geodyn_ros.loops.underactuated import (PREROLL_S, flat_start_state, hexarotor_source,  # noqa: E402
                                            rigid_effort_limits, run_loop)
from geodyn_ros.model.urdf import _read_source  # noqa: E402
from geodyn_ros.trajectories import figure_eight_reference  # noqa: E402

CASES = ("exact", "mass+10", "mass-10", "arm+10", "thrust-5", "com+5mm", "combined")
ARM_LINKS = ("link2", "link3", "link4", "link5", "link6", "link7")
#: the end-effector tool point: link4's frame, 3 cm off its joint axis, 12 cm down (the link's end)
TOOL = ("link4", (0.03, 0.0, -0.12))


def perturbed_plant(case: str, source, config):
    """``(urdf_text, sim_config)`` of the plant of ``case`` (module docstring) from the nominal
    ``source`` (URDF/xacro) and :class:`ActuationConfig`."""
    if case not in CASES:
        raise ValueError(f"case: expected one of {CASES}, got {case!r}")
    root = ET.fromstring(_read_source(str(source))[0])
    parts = ("mass+10", "thrust-5", "com+5mm") if case == "combined" else (case,)
    for part in parts:
        if part in ("mass+10", "mass-10", "arm+10"):
            s = 0.9 if part == "mass-10" else 1.1
            for link in root.iter("link"):
                inertial = link.find("inertial")
                if inertial is None or (part == "arm+10" and link.get("name") not in ARM_LINKS):
                    continue
                m = inertial.find("mass")
                m.set("value", repr(float(m.get("value")) * s))
                inertia = inertial.find("inertia")
                for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                    inertia.set(k, repr(float(inertia.get(k, "0")) * s))
        elif part == "com+5mm":
            base = config.base_link or "base_link"
            for link in root.iter("link"):
                if link.get("name") == base:
                    o = link.find("inertial").find("origin")
                    xyz = [float(v) for v in (o.get("xyz") or "0 0 0").split()]
                    xyz[0] += 0.005
                    o.set("xyz", " ".join(repr(v) for v in xyz))
        elif part == "thrust-5":
            config = dataclasses.replace(config, rotors=dataclasses.replace(
                config.rotors, motor_constant=np.asarray(config.rotors.motor_constant) * 0.95))
    return ET.tostring(root, encoding="unicode"), config


def steady(log):
    """``(offset norm [m], worst axis index, its signed mean [m], RMS [m])`` of a TrackingLog."""
    e = log.p - log.p_d
    mean = e.mean(axis=0)
    ax = int(np.argmax(np.abs(mean)))
    return float(np.linalg.norm(mean)), ax, float(mean[ax]), float(np.sqrt(np.mean(np.sum(e * e, axis=1))))


def fly_flatness(level="ff2", case="exact", rejection=None, duration=3.0, preroll=PREROLL_S, timestep=1e-3,
                 push=None, observers=None, reference=figure_eight_reference):
    """One flight of the hexarotor under :class:`FlatnessController` (module docstring).

    push: ``(t0, t1, force (3,) world [N])`` on the tool point, or None; observers: a list of
    :class:`Rejection` run passively on the flight's data (each ``observe`` / ``sent`` per cycle),
    whose estimates are appended to ``out["readings"]`` as ``(t, [estimate, ...])``. With a push,
    ``out["truth"]`` holds per cycle ``(t, W_end, W_start, F)``: MuJoCo's applied push as a spatial
    wrench (its ``xfrc_applied`` at the body's CoM) at the end of the last step and at the start
    of the next, and the force. reference: ``f(t, order) -> FlatReference`` (default the figure
    eight). Returns a dict with the row, the controller and the readings."""
    from geodyn_ros.sim import ActuatedSim
    cfg = load_actuation_config("hexarotor")
    src, scfg = perturbed_plant(case, hexarotor_source(), cfg)
    sim = ActuatedSim(src, scfg, timestep=timestep)
    model = cfg.load_model(hexarotor_source())
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    ctrl = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, level,
                              effort_limits=rigid_effort_limits(cfg, model, hexarotor_source()), rejection=rejection)

    def jets(t):
        ref = reference(t, 2)
        return ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)

    n_pre = int(round(preroll / timestep))
    ref, flat = jets(-n_pre * timestep)
    start = flat_start_state(ctrl, ref, flat)
    out = {"readings": [], "truth": []}
    m, d = sim.mj_model, sim.mj_data
    import mujoco
    bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, TOOL[0])
    plant_tool = sim.model.link_home[TOOL[0]]

    def tool_point():
        kin = gd.forward_kinematics(sim.model, sim.base_pose(), np.zeros((1, 6)), np.stack([sim.q(), sim.q() * 0]))
        b = sim.model.body_of_link(TOOL[0])
        T = kin.poses[b] @ np.linalg.solve(sim.model.link_home[sim.model.link_names[b]], plant_tool)
        return T[:3, :3] @ np.asarray(TOOL[1]) + T[:3, 3]

    def applied():
        """MuJoCo's push on the tool's body now, as a spatial wrench: its xfrc at the body's CoM."""
        f, n = d.xfrc_applied[bid, :3].copy(), d.xfrc_applied[bid, 3:].copy()
        return np.r_[np.cross(d.xipos[bid], f) + n, f]

    def command(t, C, Vb, q, qd, th, thd, ref, flat):
        cmd = ctrl.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat, t=t)
        for ob in observers or ():
            ob.observe(t, C, Vb, q, qd, th)
            ob.sent(cmd.omega, cmd.joint_torque)
        if observers:
            out["readings"].append((t, [ob.estimate for ob in observers]))
        if push is not None:          # the force at the tool point, as MuJoCo's xfrc at the CoM plus a moment
            F = np.asarray(push[2], float) if push[0] <= t < push[1] else np.zeros(3)
            mujoco.mj_kinematics(m, d)
            end = applied()                       # the last step's push, at its end
            d.xfrc_applied[bid, :3] = F
            d.xfrc_applied[bid, 3:] = np.cross(tool_point() - d.xipos[bid], F)
            out["truth"].append((t, end, applied(), F))
        return cmd

    row = run_loop(sim, sim.model, command, jets, start, duration, preroll, timestep, name=level, counters=ctrl)
    out.update(row=row, ctrl=ctrl, sim=sim, model=model)
    return out


def flatness_table(levels, cases, duration, preroll):
    res = {}
    for case in cases:
        for level in levels:
            for mode in ("off", "on"):
                t0 = time.perf_counter()
                o = fly_flatness(level, case, None if mode == "off" else RejectionOptions.all(), duration, preroll)
                off, ax, sgn, rms = steady(o["row"].log)
                rj = o["ctrl"].rejection
                res[f"{case}/{level}/{mode}"] = r = {
                    "offset_m": off, "axis": "xyz"[ax], "axis_mean_m": sgn, "rms_m": rms,
                    "thrust_scale": None if rj is None else rj.thrust_scale,
                    "com_offset_m": None if rj is None else rj.com_offset.tolist(),
                    "diverged": o["row"].diverged, "wall_s": time.perf_counter() - t0}
                print(f"{case:9s} {level:5s} {mode:3s}  offset {off * 1e3:7.3f} mm ({'xyz'[ax]} {sgn * 1e3:+8.3f})  "
                      f"RMS {rms * 1e3:7.3f} mm" + ("" if rj is None else
                                                   f"  k {rj.thrust_scale:.4f}  delta_x {rj.com_offset[0] * 1e3:+.2f} mm")
                      + (f"  DIVERGED {r['diverged']}" if r["diverged"] else ""), flush=True)
    return res


def observer_readings(duration, preroll, push_n):
    """Free flight (no push) and a push: each observer's readings (module docstring)."""
    cfg = load_actuation_config("hexarotor")
    model = cfg.load_model(hexarotor_source())
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)

    def observers():
        return [Rejection(RejectionOptions(wrench_feedforward=True, observer=kind, frame=TOOL[0], frame_point=TOOL[1]),
                          model, al, cfg.rotors, cfg.elastic, gravity=(0.0, 0.0, -9.81))
                for kind in ("whole_body", "rigid_body")]

    out = {}
    o = fly_flatness("ff2", "exact", None, duration, preroll, observers=observers())
    for j, kind in enumerate(("whole_body", "rigid_body")):
        est = [e[j] for t, e in o["readings"] if t >= 0 and e[j] is not None]
        f = np.array([np.linalg.norm(e.wrench[3:]) for e in est])
        n = np.array([np.linalg.norm(e.wrench_body[:3]) for e in est])
        out[f"free_flight/{kind}"] = {"force_max_n": float(f.max()), "force_rms_n": float(np.sqrt(np.mean(f * f))),
                                      "moment_max_nm": float(n.max()), "moment_rms_nm": float(np.sqrt(np.mean(n * n)))}
        print(f"free flight, arm swinging, {kind:10s}: |f| max {f.max():.2e} N RMS {np.sqrt(np.mean(f * f)):.2e} N, "
              f"|n_b| max {n.max():.2e} N m RMS {np.sqrt(np.mean(n * n)):.2e} N m (true: 0)")
    F = np.array([push_n * 0.8, -push_n * 0.6, 0.0])      # horizontal, |F| = push_n (a force along the arm is
    #                                                        seen by its joints through mm levers only)
    o = fly_flatness("ff2", "exact", None, duration, preroll, push=(0.5, 1.5, F), observers=observers()[:1])
    errs, ff_err = filtered_truth_errors(o, 0, (1.0, 1.5))
    errs = np.array(errs)
    out["push"] = {"force_n": F.tolist(), "force_error_max_n": float(errs[:, 3:].max()),
                   "moment_error_max_nm": float(errs[:, :3].max()), "frame_force_error_max_n": float(max(ff_err)),
                   "frame_rank_min": int(min(e[0].frame_rank for t, e in o["readings"] if e[0] is not None))}
    print(f"push of {push_n:g} N on the tool for 1 s, whole body vs MuJoCo's force filtered at K_O: force error max "
          f"{errs[:, 3:].max():.2e} N, moment {errs[:, :3].max():.2e} N m; tool force once settled: error max "
          f"{max(ff_err):.2e} N (directions resolved >= {out['push']['frame_rank_min']} of 3)")
    return out


def filtered_truth_errors(o, j, settled, bandwidth=RejectionOptions().observer_bandwidth, timestep=1e-3):
    """Observer ``j``'s estimates of a :func:`fly_flatness` run with a push against MuJoCo's push
    averaged over each step (trapezoid of its two ends) and filtered as eq. (3) at the observer's
    bandwidth [rad/s]: ``(|error| per scored sample (N, 6), frame-force errors inside settled (t0, t1))``."""
    a = np.exp(-bandwidth * timestep)
    truth = {round(t, 9): (end, start, f) for t, end, start, f in o["truth"]}
    rf, prev, errs, ff_err = np.zeros(6), None, [], []
    for t, ests in o["readings"]:
        end, start, f = truth[round(t, 9)]
        est = ests[j]
        if prev is not None and est is not None:
            rf = a * rf + (1 - a) * 0.5 * (prev[0] + end)
            if t >= 0:
                errs.append(np.abs(est.wrench - rf))
                if settled[0] <= t < settled[1]:
                    ff_err.append(np.linalg.norm(est.frame_force - prev[1]))
        prev = (start, f)
    return np.array(errs), ff_err


def fly_actuated(case="exact", rejection=None, duration=3.0, preroll=5.0, timestep=1e-3, reference=None):
    """The TiltHex under ActuatedController ff2 on a perturbed plant: ``(steady(...), controller)``;
    reference ``f(t, order)`` of the base (default Table 3's, ``scaled_reference(1.0)``)."""
    from geodyn_ros.control.actuated import ActuatedController
    from geodyn_ros.lie import Ad_inv
    from geodyn_ros.loops.actuated import scaled_reference, tilthex_source
    from geodyn_ros.loops.tracking import TrackingLog
    from geodyn_ros.sim import ActuatedSim
    cfg = load_actuation_config()
    src, scfg = perturbed_plant(case, tilthex_source(), cfg)
    sim = ActuatedSim(src, scfg, timestep=timestep)
    model = cfg.load_model(tilthex_source())
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, None, 2,
                              effort_limits=rigid_effort_limits(cfg, model, tilthex_source()), model=model,
                              rejection=rejection)
    ref_f = scaled_reference(1.0) if reference is None else reference

    def jets(t):
        ref = ref_f(t, 2)
        res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
        return ref, gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body"), res.tau

    n_pre, steps = int(round(preroll / timestep)), int(round(duration / timestep))
    ref, Wb, tau = jets(-n_pre * timestep)
    om0, _ = ctrl.rotor_reference(Wb)
    th0, thd0 = ctrl.motor_reference(ref.q, tau)
    sim.reset(ref.base_pose, ref.base_twist[0], ref.q[0], ref.q[1], rotor_speed=om0, motor_angle=th0,
              motor_velocity=thd0)
    P, Pd = [], []
    for i in range(n_pre + steps + 1):
        t = (i - n_pre) * timestep
        ref, Wb, tau = jets(t)
        C, Vb, q, qd = sim.base_pose(), sim.base_twist_body(), sim.q(), sim.qd()
        if t >= 0:
            P.append(C[:3, 3])
            Pd.append(ref.base_pose[:3, 3])
        cmd = ctrl.command(C, Vb, q, qd, sim.motor_angle(), sim.motor_velocity(), ref.base_pose,
                           Ad_inv(ref.base_pose) @ ref.base_twist[0], ref.q, Wb, tau, t=t)
        sim.set_rotor_command(cmd.omega)
        sim.set_motor_torque(cmd.u)
        sim.step()
    z = np.zeros((len(P), 3, 3))
    log = TrackingLog(np.zeros(len(P)), np.array(P), np.array(Pd), z, z, np.zeros((len(P), 0)),
                      np.zeros((len(P), 0)), ())
    return steady(log), ctrl


def lqr_schedules(duration, preroll, timestep=1e-3):
    """(plain, with integral states) TVLQR gain schedules along the figure eight, and the bandwidth used."""
    from geodyn_ros.control.lqr import LqrController, LqrWeights, tvlqr_schedule
    from geodyn_ros.control.rejection.lqr import integral_model, integral_weights
    from geodyn_ros.loops.lqr import _discrete_model, _vehicle, gain_schedule
    cfg, model, al, lin = _vehicle(None, timestep)
    w = LqrWeights()
    plain = gain_schedule(duration, preroll=preroll, timestep=timestep, weights=w)
    wi = LqrController(lin, plain, rejection=RejectionOptions(integral_action=True)).integral_bandwidth
    models = _discrete_model(model, lin, 1.0)
    t0 = -int(round(preroll / timestep)) * timestep
    aug = tvlqr_schedule(lambda t: integral_model(*models(t), timestep), t0, duration, timestep,
                         integral_weights(w.Q(lin.n, lin.ne, lin.nr), w.base_position, wi),
                         w.R(lin.nr, lin.ne, lin.nq), w.store_every, w.tail)
    return plain, aug


def fly_lqr(case, schedule, rejection=None, duration=3.0, preroll=5.0, timestep=1e-3, reference=figure_eight_reference):
    """The LQR on the perturbed hexarotor: ``(steady(...), controller)`` (reference as :func:`fly_flatness`)."""
    from geodyn_ros.control.lqr import LqrController
    from geodyn_ros.loops.lqr import _vehicle
    from geodyn_ros.sim import ActuatedSim
    cfg, model, al, lin = _vehicle(None, timestep)
    src, scfg = perturbed_plant(case, hexarotor_source(), cfg)
    sim = ActuatedSim(src, scfg, timestep=timestep)
    geo = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2", lag_timestep=timestep)
    ctrl = LqrController(lin, schedule, rejection=rejection)

    def jets(t):
        ref = reference(t, 2)
        return ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)

    ref, flat = jets(-int(round(preroll / timestep)) * timestep)
    start = flat_start_state(geo, ref, flat)
    ctrl.reset_rotors(start["rotor_speed"])

    def command(t, C, Vb, q, qd, th, thd, ref, flat):
        return ctrl.command(t, C, Vb, q, qd, th, thd, ref.q, flat)

    row = run_loop(sim, sim.model, command, jets, start, duration, preroll, timestep, name="lqr", counters=ctrl)
    return steady(row.log), ctrl


def _print_pair(name, case, res_off, res_on, ctrl_on, store):
    for mode, (off, ax, sgn, rms) in (("off", res_off), ("on", res_on)):
        store[f"{name}/{case}/{mode}"] = {"offset_m": off, "axis": "xyz"[ax], "axis_mean_m": sgn, "rms_m": rms}
        extra = "" if mode == "off" else f"  k {ctrl_on.rejection.thrust_scale:.4f}"
        print(f"{name:8s} {case:9s} {mode:3s}  offset {off * 1e6:9.1f} um ({'xyz'[ax]} {sgn * 1e6:+9.1f})  "
              f"RMS {rms * 1e6:9.1f} um{extra}", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=3.0, help="scored seconds (default 3)")
    p.add_argument("--preroll", type=float, default=PREROLL_S, help=f"seconds before scoring (default {PREROLL_S:g})")
    p.add_argument("--levels", nargs="*", default=list(FLATNESS_LEVELS), choices=FLATNESS_LEVELS)
    p.add_argument("--cases", nargs="*", default=["exact", "mass+10", "mass-10", "thrust-5", "com+5mm"],
                   choices=CASES)
    p.add_argument("--observers", action="store_true", help="the observers' free-flight and push readings")
    p.add_argument("--push", type=float, default=2.0, help="the push on the tool [N] (default 2)")
    p.add_argument("--actuated", action="store_true", help="the TiltHex under ActuatedController ff2")
    p.add_argument("--lqr", action="store_true", help="the LQR on the hexarotor")
    p.add_argument("--no-flatness", action="store_true", help="skip the flatness table")
    p.add_argument("--json", type=Path, help="write every figure here")
    a = p.parse_args(argv)
    res = {}
    if not a.no_flatness:
        res.update(flatness_table(a.levels, a.cases, a.duration, a.preroll))
    if a.observers:
        res.update(observer_readings(a.duration, a.preroll, a.push))
    if a.actuated:
        for case in a.cases:
            r0, _ = fly_actuated(case, None, a.duration, a.preroll)
            r1, c1 = fly_actuated(case, RejectionOptions.all(), a.duration, a.preroll)
            _print_pair("actuated", case, r0, r1, c1, res)
    if a.lqr:
        plain, aug = lqr_schedules(a.duration, a.preroll)
        for case in a.cases:
            r0, _ = fly_lqr(case, plain, None, a.duration, a.preroll)
            r1, c1 = fly_lqr(case, aug, RejectionOptions.all(), a.duration, a.preroll)
            _print_pair("lqr", case, r0, r1, c1, res)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
