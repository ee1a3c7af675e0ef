"""Why the under-actuated table's ratios are what they are: a small model of the error sources.

The CoM error of every row of :mod:`geodyn_ros.examples.underactuated_loop` comes from a torque
(and thrust) the feedforward gets wrong, pushed through the same closed loop. This module computes
the three sources *exactly along the reference* with the flat map, and their CoM error through a
linear model of the closed loop, without the simulator:

* ``model``: what the rigid-body feedforward misses, ``tau(q) - tau_rigid(q)``: the whole-body
  flat map's body torque minus the rigid closed form with the arm frozen in its shape
  (:func:`geodyn_ros.control.quadrotor.rigid_flat_map`). The ``rigid`` level pays it.
* ``lag``: the rotor filter (time constant ``T``) delays the feedforward: what reaches the vehicle
  is about ``W - T W'``, so an order-0 feedforward misses ``T (T_d', tau_d')`` (ACTUATION.md).
  ``rigid`` and ``ff0`` pay it; ``ff1`` removes it.
* ``elastic``: a level that does not invert the springs holds the motor at ``q_d`` (``ff0``,
  ``ff1``) or at ``q_d - (tau_d - g(q)) / k_p`` (``rigid``: PD plus gravity compensation), so the
  link deflects by ``K^-1 tau_d`` more (quasi-static: the spring and motor loops, 35-70 rad/s,
  are far faster than the arm, <= 4.2 rad/s). The base then carries the torque of a *different*
  arm motion: the flat map's body torque along ``q_d + dq`` minus along ``q_d``. ``ff2`` removes it.

The closed loop per horizontal axis (tilt ``th`` about the body axis, CoM error ``x`` across it,
``J`` the rigid inertia about the CoM, ``T0 = m g``; Lee's law linearised about hover)::

    m x'' = T0 th,   th_c = -(k_x x + k_v x') / T0,   tau_c = -k_R (th - th_c) - k_W th'
    T p' = tau_c - p   (the rotors' first-order lag on the moment),   J th'' = p + e(t)

and vertically ``m z'' = f_p + e_T``, ``T f_p' = -k_x z - k_v z' - f_p``. A torque error about the
body x (y) axis moves the CoM along the body y (x) axis. The model omits the zero-order hold,
yaw-roll coupling and the arm's motion in the inertia, so it predicts magnitudes and ratios, not
the table to the digit: it reproduces the measured rows within a factor of about 1.3
(``test/loops/test_underactuated.py``), and shows what bounds each ratio:

* ``ff0 / rigid`` ~ ``model / lag``: the rigid model's error over the lag error of any order-0
  feedforward. The lag error grows with ``T`` and with the reference's frequency (it acts on the
  derivative), the model error does not, so the ratio falls as ``1 / (omega T)``.
* ``ff1 / ff0`` ~ ``(lag + elastic) / elastic``: bounded by how large the elastic deflection's
  torque is next to the lag's; stiffer joints raise it.

Usage::

    python -m geodyn_ros.examples.underactuated_budget            # the budget at speed 1
    python -m geodyn_ros.examples.underactuated_budget --speed 0.5 --json
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessGains
from geodyn_ros.control.quadrotor import rigid_flat_map
from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.trajectories import figure_eight_reference

__all__ = ["error_sources", "closed_loop_response", "predicted_rows", "main"]


def error_sources(duration=30.0, *, speed=1.0, dt=2e-3, config=None, gains=None, model=None, reference=None):
    """The error sources along the reference (module docstring), sampled every ``dt`` over
    ``[0, duration]``. Returns a dict of arrays: ``t`` (N,); ``model``, ``lag``, ``elastic``,
    ``elastic_rigid`` (N, 4) = (thrust error [N], body torque error [N m] (3)); ``dq``, ``dq_rigid``
    (N, n) the quasi-static link deflections [rad]; and the scalars ``mass``, ``inertia`` (3,) (the
    rigid inertia about the CoM, diagonal, at ``q = 0``)."""
    from geodyn_ros.examples.underactuated_loop import hexarotor_source
    cfg = load_actuation_config("hexarotor") if config is None else config
    g = FlatnessGains() if gains is None else gains
    if model is None:
        model = gd.load_urdf(hexarotor_source(), locked_joints=list(cfg.rotor_joints))
    if reference is None:
        def reference(t, order):
            return figure_eight_reference(t, order, speed=speed)
    n = model.n_joints
    el = cfg.elastic
    idx = np.array([model.joint_names.index(j) for j in el.joints])
    Kinv = np.zeros(n)
    Kinv[idx] = 1.0 / el.stiffness
    T_lag = 0.5 * (cfg.rotors.time_constant_up + cfg.rotors.time_constant_down)
    m = model.total_mass
    ts = np.arange(0.0, duration + 0.5 * dt, dt)
    out = {k: np.zeros((len(ts), 4)) for k in ("model", "lag", "elastic", "elastic_rigid")}
    dqs, dqrs = np.zeros((len(ts), n)), np.zeros((len(ts), n))
    for i, t in enumerate(ts):
        ref = reference(t, 2)
        fl = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
        tau_d = fl.tau
        # lag: the rotors deliver about W - T W'
        out["lag"][i, 0] = T_lag * fl.thrust[1]
        out["lag"][i, 1:] = T_lag * fl.body_torque[1]
        # elastic, ff levels: motor at q_d, link deflected by K^-1 tau_d (jets 0..2)
        dq = -Kinv * tau_d[:3]
        fe = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q[:3] + dq, 0)
        out["elastic"][i, 1:] = fe.body_torque[0] - fl.body_torque[0]
        dqs[i] = dq[0]
        # elastic, rigid level: motor at q_d - (tau_d - g(q)) / k_p, link K^-1 tau_d below the motor
        gq = np.array([gd.gravity_vector(model, fl.base_pose, ref.q[0])[6:]])
        dqr = dq.copy()
        dqr[0] -= (tau_d[0] - gq[0]) / max(g.kp_joint, 1e-300) * (Kinv > 0)
        fr = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q[:3] + dqr, 0)
        out["elastic_rigid"][i, 1:] = fr.body_torque[0] - fl.body_torque[0]
        dqrs[i] = dqr[0]
        # model: the rigid closed form with the arm frozen in its (deflected) shape
        qs = ref.q[0] + dqr[0]
        ct = gd.centroidal_locked_terms(model, qs)
        rf = rigid_flat_map(m, ct.M_b[:3, :3], ct.com, ref.com[2], ref.com[3], ref.com[4], *ref.yaw[:3])
        out["model"][i, 1:] = fr.body_torque[0] - rf.torque
    ct0 = gd.centroidal_locked_terms(model, np.zeros(n))
    out.update(t=ts, dq=dqs, dq_rigid=dqrs, mass=m, inertia=np.diag(ct0.M_b[:3, :3]).copy(), T_lag=T_lag)
    return out


def closed_loop_response(e, dt, *, mass, inertia, T_lag, gains=None, gravity=9.81, lag=True):
    """CoM error (N, 3) of the linear closed loop (module docstring) driven by the thrust and
    torque errors ``e`` (N, 4) sampled every ``dt``: body-x torque -> CoM along y, body-y torque ->
    CoM along x, thrust -> z. ``lag=False``: ideal actuators."""
    from scipy.signal import StateSpace, lsim
    g = FlatnessGains() if gains is None else gains
    T0 = mass * gravity
    ts = np.arange(len(e)) * dt
    out = np.zeros((len(e), 3))
    kx, kv = g.kp_position, g.kd_position
    a = 1.0 / T_lag if lag else None
    for axis, (col, J, kR, kW) in enumerate(((2, inertia[1], g.kp_rotation[1], g.kd_rotation[1]),
                                            (1, inertia[0], g.kp_rotation[0], g.kd_rotation[0]))):
        # states: x, x', th, th', p (rotor moment); input e
        # tau_c = -kR th + kR th_c - kW th',  th_c = -(kx x + kv x') / T0
        c_x, c_v = -kR * kx / T0, -kR * kv / T0
        if lag:
            A = np.array([[0, 1, 0, 0, 0],
                          [0, 0, T0 / mass, 0, 0],
                          [0, 0, 0, 1, 0],
                          [0, 0, 0, 0, 1.0 / J],
                          [a * c_x, a * c_v, -a * kR, -a * kW, -a]])
            B = np.array([[0], [0], [0], [1.0 / J], [0]])
            Cm = np.array([[1.0, 0, 0, 0, 0]])
        else:
            A = np.array([[0, 1, 0, 0],
                          [0, 0, T0 / mass, 0],
                          [0, 0, 0, 1],
                          [c_x / J, c_v / J, -kR / J, -kW / J]])
            B = np.array([[0], [0], [0], [1.0 / J]])
            Cm = np.array([[1.0, 0, 0, 0]])
        y = lsim(StateSpace(A, B, Cm, np.zeros((1, 1))), e[:, col], ts)[1]
        out[:, axis] = y
    if lag:
        A = np.array([[0, 1, 0], [0, 0, 1.0 / mass], [-kx / T_lag, -kv / T_lag, -1.0 / T_lag]])
        B = np.array([[0], [1.0 / mass], [0]])
        Cm = np.array([[1.0, 0, 0]])
    else:
        A = np.array([[0, 1], [-kx / mass, -kv / mass]])
        B = np.array([[0], [1.0 / mass]])
        Cm = np.array([[1.0, 0]])
    out[:, 2] = lsim(StateSpace(A, B, Cm, np.zeros((1, 1))), e[:, 0], ts)[1]
    return out


def predicted_rows(src, *, gains=None, settle=5.0) -> dict:
    """Predicted CoM RMS [m] and link joint RMS [deg] per row from the sources (``error_sources``),
    scored after ``settle`` seconds of the linear response (its own start-up transient)."""
    dt = float(src["t"][1] - src["t"][0])
    keep = src["t"] >= settle
    kw = dict(mass=src["mass"], inertia=src["inertia"], T_lag=src["T_lag"], gains=gains)
    combos = {"rigid": ("model", "lag", "elastic_rigid"), "rigid_ideal": ("model",), "ff0": ("lag", "elastic"),
              "ff0_rigid_arm": ("lag",), "ff1": ("elastic",)}
    out = {}
    for row, parts in combos.items():
        e = sum(src[p] for p in parts)
        x = closed_loop_response(e, dt, lag=row != "rigid_ideal", **kw)
        out[row] = {"com_rms_m": float(np.sqrt(np.mean(np.sum(x[keep] ** 2, axis=1))))}
    out["rigid"]["joint_rms_deg"] = float(np.degrees(np.sqrt(np.mean(src["dq_rigid"][keep] ** 2))))
    for row in ("ff0", "ff1"):
        out[row]["joint_rms_deg"] = float(np.degrees(np.sqrt(np.mean(src["dq"][keep] ** 2))))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speed", type=float, default=1.0, help="time scaling of the reference (default 1)")
    ap.add_argument("--duration", type=float, default=35.0, help="seconds of reference (first 5 s: settling)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not (math.isfinite(args.speed) and args.speed > 0 and math.isfinite(args.duration) and args.duration > 5):
        ap.error("--speed must be > 0 and --duration > 5")
    src = error_sources(args.duration, speed=args.speed)
    rows = predicted_rows(src)
    rms = {k: float(np.sqrt(np.mean(np.sum(src[k][:, 1:] ** 2, axis=1)))) for k in ("model", "lag", "elastic")}
    obj = {"torque_error_rms_nm": rms, "predicted": rows,
           "predicted_ratios": {"rigid/ff0": rows["rigid"]["com_rms_m"] / rows["ff0"]["com_rms_m"],
                                "ff0/ff1": rows["ff0"]["com_rms_m"] / rows["ff1"]["com_rms_m"]}}
    if args.json:
        print(json.dumps(obj))
        return 0
    print("error budget (make budget): each row's CoM error predicted from its feedforward's errors")
    print(f"error sources (figure eight x{args.speed:g}), RMS body torque [N m]: "
          + ", ".join(f"{k} {v:.3g}" for k, v in rms.items()))
    for r, m in rows.items():
        print(f"  predicted {r:14s} CoM RMS {m['com_rms_m']:.3e} m" + (
            f", joint RMS {m['joint_rms_deg']:.3f} deg" if "joint_rms_deg" in m else ""))
    print("  predicted ratios: " + ", ".join(f"{k} {v:.3g}" for k, v in obj["predicted_ratios"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
