"""The under-actuated aerial manipulator: what whole-body flatness buys over today's rigid model.

The vehicle (``urdf/hexarotor_manipulator.urdf.xacro``, ``config/hexarotor.yaml``): the paper's
robot, two 3-DoF arms on a 2.5 kg base, on a flat hexarotor with gz-sim's X4 rotors, so every
thrust is along the base ``+z`` axis. The loop (in-process, 1 kHz, zero-order hold):
``ActuatedSim`` (rotors with gz-sim's MulticopterMotorModel lag, series-elastic arm joints) <-
``FlatnessController`` (Lee's geometric controller on the CoM and yaw) <- ``gd.flat_inverse_dynamics``
(order 2) of the flat-output reference :func:`geodyn_ros.trajectories.figure_eight_reference`:

* the CoM flies a figure eight 1.2 m x 0.6 m with a 0.1 m vertical wave, period 8 s;
* the yaw sweeps +-45 deg over 12 s;
* every arm joint swings +-35 deg, with periods 2, 3, 1.5, 2.5, 4 and 1.75 s (J2..J7).

Rows (same feedback gains, same start on the reference at ``t = -preroll``: state, rotor speeds
``omega_d``, motor angles ``theta_d`` and rates ``theta_d'`` of that instant; the loop runs
``preroll`` seconds (default 5 s) along the reference before the scored window starts at 0):

* ``rigid``: today's best practice, the vehicle as one rigid body with the arm frozen in its
  current shape (omega_d from the jerk, omega_d' from the snap, closed form); joints PD plus
  gravity compensation;
* ``ff0``: the whole-body flat map at order 0 (thrust, omega_d, omega_d', body and joint torques);
* ``ff1``: plus rotor-lag compensation (order-1 thrust and torque rates);
* ``ff2``: plus elastic-joint compensation (order 2, Spong's inverse);
* ``ideal``: ideal actuators (thrust and moment applied directly, rigid torque-controlled
  joints) with the ``ff0`` law, for reference.

Diagnostic rows (not in ``--json``), one actuator model at a time: ``rigid_ideal`` (the rigid law
with ideal actuators: its model error alone), ``rigid_rigid_arm``, ``ff0_rigid_arm`` and
``ff1_rigid_arm`` (rotors modelled, arm joints rigid and torque-controlled: the lag alone) and
``ff2_discrete_lag`` (``ff2`` with the exact inverse of the discrete rotor filter).

Columns: CoM RMS and max [m], attitude RMS [deg] (against the flat map's ``R_d``), link joint RMS
[deg], rotor speed peak [rad/s] and saturation count, motor torque peak [N m] and saturation
count, real-time factor (simulated time, pre-roll included, over wall time).

Usage::

    python -m geodyn_ros.examples.underactuated_loop --json         # one JSON object, rows as keys
    python -m geodyn_ros.examples.underactuated_loop --out out       # table + figure
    python -m geodyn_ros.examples.underactuated_loop --duration 5 --rows ff1,ff2 --speed 1.5
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.control.tracking import TrackingLog
from geodyn_ros.lie import Ad
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.trajectories import figure_eight_reference

__all__ = ["ROWS", "MAIN_ROWS", "TARGETS", "UnderactuatedRow", "simulate_underactuated", "hexarotor_source", "main"]

#: row -> (controller level, ideal rotors, ideal (rigid, torque-controlled) joints[, discrete lag inverse])
_SPEC = {"rigid": ("rigid", False, False), "ff0": ("ff0", False, False), "ff1": ("ff1", False, False),
         "ff2": ("ff2", False, False), "ideal": ("ff0", True, True),
         # diagnostic rows: one actuator model at a time
         "rigid_ideal": ("rigid", True, True), "rigid_rigid_arm": ("rigid", False, True),
         "ff0_rigid_arm": ("ff0", False, True), "ff1_rigid_arm": ("ff1", False, True),
         "ff2_discrete_lag": ("ff2", False, False, True)}
#: the rows of the table, in order (``--json`` and the targets use the first five)
ROWS = tuple(_SPEC)
MAIN_ROWS = ROWS[:5]
#: default pre-roll [s] before the scored window (the loop starts at t = -PREROLL_S on the reference)
PREROLL_S = 5.0
#: the issue's targets: (numerator row, denominator row, column, factor): num <= den / factor
TARGETS = (("ff0", "rigid", "com_rms_m", 10.0), ("ff1", "ff0", "com_rms_m", 5.0),
           ("ff2", "ff1", "joint_rms_deg", 10.0))


def hexarotor_source() -> Path:
    """``urdf/hexarotor_manipulator.urdf.xacro`` (source tree or installed share)."""
    return shipped_urdf("hexarotor_manipulator.urdf.xacro")


@dataclass
class UnderactuatedRow:
    """One row: the log (CoM as ``p``), peaks, saturation counts and timing."""

    name: str
    log: TrackingLog
    rotor_speed_peak: float
    motor_torque_peak: float
    rotor_saturations: int
    motor_saturations: int
    wall_time_s: float
    simulated_s: float

    def metrics(self) -> dict:
        """The JSON columns of the table (module docstring)."""
        r = self.log.rms()
        return {"com_rms_m": r["position_m"], "com_max_m": r["max_position_m"],
                "attitude_rms_deg": r["attitude_deg"], "joint_rms_deg": r["joint_deg"],
                "rotor_speed_peak_rad_s": self.rotor_speed_peak, "rotor_saturations": self.rotor_saturations,
                "motor_torque_peak_nm": self.motor_torque_peak, "motor_saturations": self.motor_saturations,
                "real_time_factor": self.simulated_s / self.wall_time_s if self.wall_time_s > 0 else float("inf")}


def simulate_underactuated(row: str = "ff2", duration: float = 30.0, *, speed: float = 1.0, timestep: float = 1e-3,
                           gains: FlatnessGains | None = None, config=None, source=None,
                           preroll: float = PREROLL_S, reference=None) -> UnderactuatedRow:
    """Run one row of the table (module docstring) and return its :class:`UnderactuatedRow`.

    duration [s] scored; speed: time scaling of the reference; timestep [s]: simulator and control
    period; config: :class:`~geodyn_ros.control.rotors.ActuationConfig` (default
    ``config/hexarotor.yaml``); source: URDF/xacro with the rotor links (default the hexarotor
    xacro); preroll [s] run along the reference before ``t = 0``; reference: ``f(t, order) ->
    FlatReference`` (default :func:`figure_eight_reference` at ``speed``).
    """
    from geodyn_ros.sim import ActuatedSim

    if row not in ROWS:
        raise ValueError(f"row: expected one of {ROWS}, got {row!r}")
    for name, v, lo in (("duration", duration, 0.0), ("speed", speed, 0.0), ("timestep", timestep, 0.0)):
        if not (math.isfinite(v) and v > lo):
            raise ValueError(f"{name}: expected a finite value > {lo:g}, got {v!r}")
    if not (math.isfinite(preroll) and preroll >= 0):
        raise ValueError(f"preroll: expected a finite time >= 0 [s], got {preroll!r}")
    cfg = load_actuation_config("hexarotor") if config is None else config
    level, ideal, rigid_joints = _SPEC[row][:3]
    discrete = len(_SPEC[row]) > 3
    sim = ActuatedSim(hexarotor_source() if source is None else source, cfg, timestep=timestep,
                      ideal_rotors=ideal, ideal_joints=rigid_joints)
    model = sim.model
    al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
    ctrl = FlatnessController(model, al, cfg.rotors, None if rigid_joints else cfg.elastic, gains, level,
                              ideal_rotors=ideal, lag_timestep=timestep if discrete else None)
    if reference is None:
        def reference(t, order):
            return figure_eight_reference(t, order, speed=speed)

    def jets(t):
        ref = reference(t, 2)
        return ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)

    n_pre = int(round(preroll / timestep))
    ref, flat = jets(-n_pre * timestep)
    C0, V0, q0, qd0 = flat.base_pose, flat.base_twist[0], ref.q[0], ref.q[1]
    start = {}
    if not ideal:
        start["rotor_speed"] = ctrl.rotor_reference(flat)[0]
    if not rigid_joints:
        start["motor_angle"], start["motor_velocity"] = ctrl.motor_reference(ref.q, flat.tau)
    sim.reset(C0, V0, q0, qd0, **start)
    steps = int(round(duration / timestep))
    n = model.n_joints
    t_log = np.empty(steps + 1)
    c_log, cd_log = np.empty((steps + 1, 3)), np.empty((steps + 1, 3))
    R_log, Rd_log = np.empty((steps + 1, 3, 3)), np.empty((steps + 1, 3, 3))
    q_log, qd_log = np.empty((steps + 1, n)), np.empty((steps + 1, n))
    om_peak = u_peak = 0.0
    W = np.zeros(6)
    wall = time.perf_counter()
    for i in range(n_pre + steps + 1):
        k = i - n_pre            # k < 0: pre-roll, not logged
        t = k * timestep
        if k == 0:               # the scored window starts: peaks and clip counts from here on
            om_peak = u_peak = 0.0
            ctrl.rotor_saturations = ctrl.motor_saturations = 0
        C, Vb, q, qd = sim.base_pose(), sim.base_twist_body(), sim.q(), sim.qd()
        if i:
            ref, flat = jets(t)
        if k >= 0:
            Vs = Ad(C) @ Vb
            c_log[k] = gd.center_of_mass(model, C, Vs[None], q[None])[0]
            t_log[k], cd_log[k], q_log[k], qd_log[k] = t, ref.com[0], q, ref.q[0]
            R_log[k], Rd_log[k] = C[:3, :3], flat.base_pose[:3, :3]
        if k == steps:
            break
        th, thd = (None, None) if rigid_joints else (sim.motor_angle(), sim.motor_velocity())
        cmd = ctrl.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat)
        if ideal:
            W[:3], W[5] = cmd.torque, cmd.thrust
        else:
            sim.set_rotor_command(cmd.omega)
            om_peak = max(om_peak, float(cmd.omega_raw.max()))
        if rigid_joints:
            sim.set_command(W, cmd.u)       # the ideal body wrench (zero with rotors) and the joint torques
        else:
            sim.set_motor_torque(cmd.u)
        u_peak = max(u_peak, float(np.abs(cmd.u_raw).max()))
        sim.step()
    wall = time.perf_counter() - wall
    log = TrackingLog(t_log, c_log, cd_log, R_log, Rd_log, q_log, qd_log, tuple(model.joint_names))
    return UnderactuatedRow(row, log, om_peak, u_peak, ctrl.rotor_saturations, ctrl.motor_saturations, wall,
                            (n_pre + steps) * timestep)


def targets_report(obj: dict) -> list:
    """``[(text, met), ...]`` for the issue's targets (:data:`TARGETS`) and 'no saturation'."""
    out = []
    for num, den, col, fac in TARGETS:
        if num in obj and den in obj:
            ratio = obj[den][col] / obj[num][col] if obj[num][col] > 0 else float("inf")
            out.append((f"{num} {col} <= {den} / {fac:g}: ratio {ratio:.3g}", ratio >= fac))
    for r, m in obj.items():
        if r in MAIN_ROWS and r != "ideal":
            out.append((f"{r}: no saturation ({m['rotor_saturations']} rotor, {m['motor_saturations']} motor)",
                        m["rotor_saturations"] == 0 and m["motor_saturations"] == 0))
    return out


def _table(obj: dict) -> str:
    w = max(6, max(len(r) for r in obj))
    hdr = (f"{'row':{w}s} {'CoM RMS [m]':>12s} {'CoM max [m]':>12s} {'att RMS [deg]':>13s} {'joint RMS [deg]':>15s} "
           f"{'omega peak [rad/s]':>18s} {'u peak [N m]':>12s} {'sat rot/mot':>11s} {'x real time':>11s}")
    lines = [hdr, "-" * len(hdr)]
    for r, m in obj.items():
        om = "-" if _SPEC[r][1] else f"{m['rotor_speed_peak_rad_s']:.0f}"
        lines.append(f"{r:{w}s} {m['com_rms_m']:12.3e} {m['com_max_m']:12.3e} {m['attitude_rms_deg']:13.3e} "
                     f"{m['joint_rms_deg']:15.3e} {om:>18s} {m['motor_torque_peak_nm']:12.3f} "
                     f"{m['rotor_saturations']:>5d}/{m['motor_saturations']:<5d} {m['real_time_factor']:11.2f}")
    return "\n".join(lines)


def _figure(results: dict, path: Path, speed: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for name, res in results.items():
        lg = res.log
        ax[0].semilogy(lg.t, np.maximum(lg.position_error(), 1e-12), label=name, lw=1)
        ax[1].semilogy(lg.t, np.maximum(np.degrees(lg.attitude_error()), 1e-12), label=name, lw=1)
        ax[2].semilogy(lg.t, np.maximum(np.degrees(np.abs(lg.joint_error()).max(axis=1)), 1e-12), label=name, lw=1)
    ax[0].set_ylabel("CoM error |c - c_d| [m]")
    ax[1].set_ylabel("attitude error [deg]")
    ax[2].set_ylabel("max link joint error [deg]")
    ax[2].set_xlabel("t [s]")
    ax[0].set_title(f"Under-actuated aerial manipulator, figure eight (speed x{speed:g}): error per feedforward level")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(ncol=5, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_table(rows=MAIN_ROWS, duration: float = 30.0, speed: float = 1.0, preroll: float = PREROLL_S,
              config=None) -> tuple:
    """``(results, obj)``: the rows' :class:`UnderactuatedRow` and the JSON object of their metrics."""
    results = {r: simulate_underactuated(r, duration, speed=speed, preroll=preroll, config=config) for r in rows}
    return results, {r: res.metrics() for r, res in results.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object (rows as keys) and nothing else")
    ap.add_argument("--duration", type=float, default=30.0, help="scored simulated time [s] (default 30)")
    ap.add_argument("--speed", type=float, default=1.0, help="time scaling of the reference (default 1)")
    ap.add_argument("--preroll", type=float, default=PREROLL_S,
                    help=f"seconds run along the reference before the scored window (default {PREROLL_S:g})")
    ap.add_argument("--rows", default=None, help=f"comma-separated subset of {','.join(ROWS)} (default: all; with "
                    f"--json: {','.join(MAIN_ROWS)})")
    ap.add_argument("--out", default=None, help="directory for the figure underactuated_loop[_speedS].png")
    ap.add_argument("--config", default=None, help="actuation YAML (default config/hexarotor.yaml)")
    ap.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    args = ap.parse_args(argv)
    if args.rows is None:
        args.rows = ",".join(MAIN_ROWS if args.json else ROWS)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    bad = [r for r in rows if r not in ROWS]
    if bad or not rows:
        ap.error(f"--rows: unknown rows {bad}; choose from {ROWS}")
    for name in ("duration", "speed"):
        v = getattr(args, name)
        if not (math.isfinite(v) and v > 0):
            ap.error(f"--{name}: must be > 0")
    if not (math.isfinite(args.preroll) and args.preroll >= 0):
        ap.error("--preroll: must be >= 0")
    try:
        cfg = load_actuation_config("hexarotor" if args.config is None else args.config)
    except ValueError as exc:
        ap.error(f"--config: {exc}")
    results, obj = run_table(rows, args.duration, args.speed, args.preroll, cfg)
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(obj, indent=1) + "\n")
    if args.json:
        print(json.dumps(obj))
        return 0
    print(f"Figure eight x{args.speed:g}, {args.duration:g} s scored after a {args.preroll:g} s pre-roll, 1 kHz, "
          f"gains {FlatnessGains()}")
    print(_table(obj))
    for text, met in targets_report(obj):
        print(f"  {'met   ' if met else 'MISSED'}  {text}")
    if args.out:
        suffix = "" if args.speed == 1.0 else f"_speed{args.speed:g}"
        p = Path(args.out) / f"underactuated_loop{suffix}.png"
        _figure(results, p, args.speed)
        print(f"figure: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
