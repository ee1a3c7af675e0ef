"""The under-actuated aerial manipulator's closed loop, in process (ROS-free): the collinear
hexarotor of ``config/hexarotor.yaml`` in MuJoCo (:class:`~geodyn_ros.sim.ActuatedSim`: gz-sim's rotor
lag, Spong's elastic joints) under :class:`~geodyn_ros.control.flatness.FlatnessController`, fed
by ``gd.flat_inverse_dynamics`` (order 2) of a flat-output reference, at 1 kHz with a zero-order
hold. It is the loop of the README table (:mod:`geodyn_ros.examples.underactuated_loop` prints
it) and the twin the ROS loop (``geodyn_closed_loop --underactuated``) is compared with.
With ``config`` (a vehicle file's :class:`~geodyn_ros.vehicle.params.ActuationConfig`),
``source`` (its URDF) and ``reference`` it flies any collinear vehicle: per-rotor constants,
rigid and elastic joints mixed (rigid joints get ``FlatCommand.joint_torque``), or no joints.

Rows (same feedback gains, same start on the reference at ``t = -preroll``: state, rotor speeds
``omega_d``, motor angles ``theta_d`` and rates ``theta_d'`` of that instant; only ``0 <= t <=
duration`` is scored):

* ``rigid``, ``ff0``, ``ff1``, ``ff2``: the controller's levels with lagging rotors and elastic joints;
* ``ideal``: ideal actuators (thrust and moment applied directly, rigid torque-controlled joints)
  with the ``ff0`` law;
* diagnostic rows, one actuator model at a time: ``rigid_ideal`` (the rigid law with ideal
  actuators: its model error alone), ``rigid_rigid_arm``, ``ff0_rigid_arm``, ``ff1_rigid_arm``
  (rotors modelled, arm joints rigid and torque-controlled: the lag alone) and
  ``ff2_discrete_lag`` (``ff2`` with the exact inverse of the discrete rotor filter);
* ``indi``: the baseline INDI (:class:`~geodyn_ros.control.baselines.IndiFlatController`: the
  thrust vector's and the moment's increments on the measured rotor speeds and the IMU, the exact
  IMU at every step with perfect sensing, the profile's IMU stream with sensing; same gains).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.loops.tracking import TrackingLog
from geodyn_ros.lie import Ad
from geodyn_ros.model.joint_losses import PLANT_INTEGRATOR, check_loss_mode, losses_for_mode
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.trajectories import figure_eight_reference

__all__ = ["ROWS", "MAIN_ROWS", "PREROLL_S", "UnderactuatedRow", "simulate_underactuated", "hexarotor_source",
           "flat_start_state", "format_table", "run_loop"]

#: row -> (controller level, ideal rotors, ideal (rigid, torque-controlled) joints[, discrete lag inverse])
_SPEC = {"rigid": ("rigid", False, False), "ff0": ("ff0", False, False), "ff1": ("ff1", False, False),
         "ff2": ("ff2", False, False), "ideal": ("ff0", True, True),
         # diagnostic rows: one actuator model at a time
         "rigid_ideal": ("rigid", True, True), "rigid_rigid_arm": ("rigid", False, True),
         "ff0_rigid_arm": ("ff0", False, True), "ff1_rigid_arm": ("ff1", False, True),
         "ff2_discrete_lag": ("ff2", False, False, True),
         # the model-light baseline (geodyn_ros.control.baselines.indi_flat)
         "indi": ("ff0", False, False)}
#: the rows of the table, in order (``--json`` and the targets use the first five)
ROWS = tuple(_SPEC)
MAIN_ROWS = ROWS[:5]
#: default pre-roll [s] before the scored window (the loop starts at t = -PREROLL_S on the reference)
PREROLL_S = 5.0
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
    diverged: str | None = None         # the one line of a row that left a physical bound (loops.sensed)
    session: object = field(default=None, repr=False, compare=False)   # the run's loops.sensed.Session, if any
    #: the draw of the world flown in (geodyn_ros.sim.world.Perturbation), or None (the exact plant)
    world: object = field(default=None, repr=False, compare=False)
    #: (T, 6 + n) the generalized external force the world applied at each logged sample
    #: (ExternalWrench.generalized: base body wrench, then joint torques), or None (no world forces)
    external: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the controller's rejection state at the end of the run (geodyn_ros.control.rejection.Rejection:
    #: thrust scale, CoM offset, integrators, last estimate), or None (no rejection options)
    rejection: object = field(default=None, repr=False, compare=False)

    def metrics(self) -> dict:
        """The JSON columns of the table (module docstring)."""
        r = self.log.rms()
        out = {"com_rms_m": r["position_m"], "com_max_m": r["max_position_m"],
               "attitude_rms_deg": r["attitude_deg"], "joint_rms_deg": r["joint_deg"],
               "rotor_speed_peak_rad_s": self.rotor_speed_peak, "rotor_saturations": self.rotor_saturations,
               "motor_torque_peak_nm": self.motor_torque_peak, "motor_saturations": self.motor_saturations,
               "real_time_factor": self.simulated_s / self.wall_time_s if self.wall_time_s > 0 else float("inf")}
        if self.diverged:            # a row stopped at a physical bound: its line, never its numbers as a result
            out["diverged"] = self.diverged
        return out


def simulate_underactuated(row: str = "ff2", duration: float = 30.0, *, speed: float = 1.0, timestep: float = 1e-3,
                           gains: FlatnessGains | None = None, config=None, source=None,
                           preroll: float = PREROLL_S, reference=None, progress=None,
                           sensing=None, record=None, wrap_command=None, world=None,
                           world_seed: int = 0, rejection=None, joint_losses: str = "off") -> UnderactuatedRow:
    """Run one row of the table (module docstring) and return its :class:`UnderactuatedRow`.

    duration [s] scored; speed: time scaling of the reference; timestep [s]: simulator and control
    period; config: :class:`~geodyn_ros.control.rotors.ActuationConfig` (default
    ``config/hexarotor.yaml``); source: URDF/xacro with the rotor links (default the hexarotor
    xacro); preroll [s] run along the reference before ``t = 0``; reference: ``f(t, order) ->
    FlatReference`` (default :func:`figure_eight_reference` at ``speed``); progress: ``f(done,
    total)`` called every 100 simulator steps and at the end (:func:`run_loop`), or None.
    sensing: a :class:`geodyn_ros.loops.sensed.Sensing` (sensor streams, failsafe, a flight from
    the ground and back); None (or its trivial form): the exact state at every step, as always.
    record: a :class:`geodyn_ros.loops.recording.RowRecorder` or None (:func:`run_loop`).
    wrap_command: ``f(command) -> command`` around the controller's command function (e.g. PX4's
    offboard path and a command rate, :meth:`geodyn_ros.px4.offboard_path.OffboardPath.wrap`), or None.
    world: a :class:`geodyn_ros.sim.world.World` the simulator flies in (model error, wind, drag,
    pushes), drawn for this vehicle with ``world_seed`` (:meth:`~geodyn_ros.sim.world.World.draw`):
    the simulator is the perturbed plant, the controller keeps the nominal model and ``config``,
    and the logged CoM is the plant's (the true one). The row's ``world`` holds the draw
    (:meth:`~geodyn_ros.sim.world.Perturbation.lines`), its ``external`` the applied external
    wrench of every logged sample. None, or an exact world: the simulator is the model, bit for bit.
    rejection: a :class:`~geodyn_ros.control.rejection.RejectionOptions` the controller rejects what
    its model misses with (observer feedforward, integral action, thrust and CoM estimates; the
    command gets the loop's time ``t``), or None: the controller of the tables, bit for bit. The
    controller's :class:`~geodyn_ros.control.rejection.Rejection` state at the end of the run is
    the row's ``rejection`` (None without).
    joint_losses: ``"off"`` (default: the plant is the model), ``"plant"`` (the simulator keeps the
    URDF's joint damping and dry friction, which the controller ignores: what gz-sim does) or
    ``"compensated"`` (the controller adds their torque jet, :mod:`geodyn_ros.model.joint_losses`).
    """
    from geodyn_ros.sim import ActuatedSim
    from .fly_references import vehicle_size
    from .sensed import Session

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
    if sensing is not None and sensing.trivial:
        sensing = None
    src = hexarotor_source() if source is None else source
    check_loss_mode(joint_losses)      # before any work
    sim_kw = dict(timestep=timestep, ideal_rotors=ideal, ideal_joints=rigid_joints,
                  **({"ground": True} if sensing is not None and sensing.ground else {}),
                  **({"joint_dynamics": True, "integrator": PLANT_INTEGRATOR} if joint_losses != "off" else {}))
    pert = None
    if world is not None and not world.exact:
        pert = world.draw(world_seed, src, cfg)
        sim = pert.build(**sim_kw)
        model = pert.model               # the controller's: nominal
    else:
        sim = ActuatedSim(src, cfg, **sim_kw)
        model = sim.model
    al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
    ctrl = FlatnessController(model, al, cfg.rotors, None if rigid_joints else cfg.elastic, gains, level,
                              ideal_rotors=ideal, lag_timestep=timestep if discrete else None,
                              effort_limits=rigid_effort_limits(cfg, model, hexarotor_source() if source is None
                                                                else source), rejection=rejection,
                              joint_losses=losses_for_mode(joint_losses, src, model.joint_names)[1])
    indi = None
    if row == "indi":
        if rejection is not None:
            raise ValueError("rejection: the indi row takes no rejection options (its increment is its "
                             "disturbance rejection)")
        from geodyn_ros.control.baselines import IndiFlatController, IndiOptions
        from geodyn_ros.control.baselines.indi import filter_time_constant_for
        imu = None if sensing is None else sensing.profile.imu
        rate = 1.0 / timestep if sensing is None or sensing.profile.perfect or imu is None else imu.rate
        indi = IndiFlatController(model, al, cfg.rotors, cfg.elastic, gains,
                                  options=IndiOptions(filter_time_constant_for(cfg.rotors, rate)),
                                  effort_limits=rigid_effort_limits(cfg, model, src))
    if reference is None:
        def reference(t, order):
            return figure_eight_reference(t, order, speed=speed)

    size = vehicle_size(sim.rotor_frames)
    sess = None
    if sensing is not None:
        sess = Session(sensing, sim, reference, size=size, max_rot_velocity=cfg.rotors.max_rot_velocity,
                       preroll=preroll, duration=duration, timestep=timestep)
        reference, preroll = sess.reference, sess.preroll

    def jets(t):
        ref = reference(t, 2)
        return ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)

    n_pre = int(round(preroll / timestep))
    ref, flat = jets(-n_pre * timestep)
    st = flat_start_state(ctrl, ref, flat)
    if sess is not None and sess.start(st["base_pose"], model):
        st["rotor_speed"] = st["rotor_speed"] * 0.0      # on the ground, rotors stopped
    if ideal:
        st.pop("rotor_speed")
    if rigid_joints:
        st.pop("motor_angle")
        st.pop("motor_velocity")

    def command(t, C, Vb, q, qd, th, thd, ref, flat):
        return ctrl.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat, t=t)

    if indi is not None:
        from geodyn_ros.control.baselines import ImuIntervals
        imu_state = {"exact": ImuIntervals(sim.gravity) if sess is None or sensing.profile.perfect else None,
                     "seen": -math.inf}

        def command(t, C, Vb, q, qd, th, thd, ref, flat):     # noqa: F811 (INDI's, with its measurements)
            imu_state["seen"] = indi_measure(indi, sim, sess, imu_state["exact"], t, imu_state["seen"])
            return indi.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q)

    if wrap_command is not None:
        command = wrap_command(command)
    res = run_loop(sim, sim.model, command, jets, st, duration, preroll, timestep, name=row,
                   counters=ctrl if indi is None else indi,
                   ideal=ideal, rigid_joints=rigid_joints, progress=progress, session=sess, size=size,
                   max_rot_velocity=cfg.rotors.max_rot_velocity, record=record)
    res.world = pert
    res.rejection = ctrl.rejection
    return res


_NO_WRENCH = np.zeros(6)
_NO_WRENCH.setflags(write=False)


def indi_measure(ctrl, sim, sess, exact_imu, t, seen):
    """Feed an INDI controller this step's IMU intervals (``exact_imu``, an
    :class:`~geodyn_ros.control.baselines.ImuIntervals` on the simulator's state, or the sensing
    profile's stream delivered since ``seen``) and the rotor speeds of the step that starts (ESC
    telemetry); returns the newest IMU stamp used. On the ground (a flight from the ground: any
    contact force) the increment is held (``ctrl.hold()``): the accelerometer reads the contact, and
    an increment would wind up until lift-off; a flight stack runs its INDI in flight only."""
    if sess is not None and sess.plan and sim.ground_force() > 0.0:
        ctrl.hold()
        if exact_imu is not None:
            C, Vb = sim.base_pose(), sim.base_twist_body()
            exact_imu.sample(t, C[:3, :3], C[:3, :3] @ Vb[3:])
        elif sess.inputs is not None:
            seen = max([seen] + [s[0] for s in sess.inputs.imu_since(seen)])
        return seen
    if exact_imu is not None:
        C, Vb = sim.base_pose(), sim.base_twist_body()
        s = exact_imu.sample(t, C[:3, :3], C[:3, :3] @ Vb[3:])
        if s is not None and ctrl.has_rotor_sample:
            ctrl.imu(*s)
    elif sess is not None and sess.inputs is not None:
        for stamp, dt, gyro, accel in sess.inputs.imu_since(seen):
            if ctrl.has_rotor_sample:
                ctrl.imu(dt, gyro, accel)
            seen = stamp
    ctrl.rotor_sample(sim.rotor_speed())
    return seen


def _zeros_n(n):
    return np.zeros(n)


def _peak(a) -> float:
    """max |a| (0 for an empty array: no joint, or no motor)."""
    return float(np.abs(a).max()) if np.size(a) else 0.0


def rigid_effort_limits(cfg, model, source) -> np.ndarray:
    """(n,) torque limits [N m] of the joints the vehicle file makes rigid:
    ``cfg.effort_limits(model, source)`` (the file's ``max_torque``, else the URDF effort limit);
    ``inf`` for the elastic joints (their motors have ``max_motor_torque``; a diagnostic row that
    makes them rigid keeps them unlimited, as before) and for a URDF effort of 0 (unset)."""
    n = model.n_joints
    lim = np.asarray(cfg.effort_limits(model, source), float) if hasattr(cfg, "effort_limits") else np.full(n, np.inf)
    el = set(cfg.elastic.joints)
    return np.array([np.inf if (j in el or not lim[k] > 0) else lim[k] for k, j in enumerate(model.joint_names)],
                    dtype=float).reshape(n)


def run_loop(sim, plant, command, jets, start: dict, duration: float, preroll: float, timestep: float, *,
             name: str, counters, ideal: bool = False, rigid_joints: bool = False, disturbance=None,
             at_zero=None, progress=None, session=None, size: float | None = None,
             max_rot_velocity=None, record=None) -> UnderactuatedRow:
    """The closed loop shared by the tables: ``sim`` (an :class:`~geodyn_ros.sim.ActuatedSim`) reset to
    ``start`` (the keywords of :meth:`ActuatedSim.reset`) at ``t = -preroll``, then at every step
    ``command(t, C, V_b, q, qd, theta, theta', ref, flat) -> FlatCommand`` with ``jets(t) -> (ref,
    flat)`` (the reference sample and its flat map), commands held for one step.

    plant : the model whose CoM is logged (the simulated robot's: it differs from the controller's
    under a model mismatch); counters : the object with ``rotor_saturations`` /
    ``motor_saturations`` (zeroed at ``t = 0``); disturbance : ``f(t, sim) -> (6,)`` body wrench
    added to the actuators' (moment first, base axes), or None; at_zero : ``f(sim)`` called at
    ``t = 0`` before the first scored step (e.g. an initial offset). Logs ``0 <= t <= duration``.
    ``disturbance`` returns zeros when it is off (its wrench is applied at every step).
    progress : ``f(done, total)`` called every 100 simulator steps and at the end (``total`` =
    pre-roll + scored steps; e.g. :meth:`geodyn_ros.loops.report.RowProgress.step`), or None.
    session : a :class:`geodyn_ros.loops.sensed.Session` (sensed inputs, failsafe, the landing after
    the window: ``preroll`` is then the session's) or None (the exact state at every step);
    size [m], max_rot_velocity [rad/s]: the divergence bounds (:class:`~geodyn_ros.loops.sensed.DivergenceGuard`;
    size None: the rotors' radius from ``sim``); a row that leaves them stops with
    ``UnderactuatedRow.diverged`` set and its log cut before.
    record : a :class:`geodyn_ros.loops.recording.RowRecorder` (``geodyn_fly --record``): every logged
    sample's true state, reference and flat map, and every scored command (not with ``ideal``); or None.
    A ``sim`` with a world attached (:meth:`~geodyn_ros.sim.MujocoSim.attach_world`) also logs the
    generalized external force of every logged sample (``UnderactuatedRow.external``: the force the
    world applies from that sample's time over the next step).
    """
    from .fly_references import vehicle_size
    from .sensed import Diverged, DivergenceGuard
    n_pre = int(round(preroll / timestep))
    # a world's clock is the loop's (its pushes and wind are timed from t = 0, the scored window's start);
    # without one the simulator's clock starts at 0 as it always did
    clock = {"time": -n_pre * timestep} if getattr(sim, "world", None) is not None else {}
    sim.reset(start["base_pose"], start["base_twist"], start["q"], start["qd"], **clock,
              **{k: v for k, v in start.items() if k not in ("base_pose", "base_twist", "q", "qd")})
    steps = int(round(duration / timestep))
    n_post = 0 if session is None else session.n_post
    if session is not None:
        session.begin(-n_pre * timestep)
    if record is not None:
        record.attach(sim)
    guard = DivergenceGuard(vehicle_size(sim.rotor_frames) if size is None else size,
                            sim.config.rotors.max_rot_velocity if max_rot_velocity is None else max_rot_velocity)
    stopped = np.zeros(len(sim.rotor_names))
    n = plant.n_joints
    t_log = np.empty(steps + 1)
    c_log, cd_log = np.empty((steps + 1, 3)), np.empty((steps + 1, 3))
    R_log, Rd_log = np.empty((steps + 1, 3, 3)), np.empty((steps + 1, 3, 3))
    q_log, qd_log = np.empty((steps + 1, n)), np.empty((steps + 1, n))
    ext_log = np.empty((steps + 1, 6 + n)) if getattr(sim, "world", None) is not None else None
    om_peak = u_peak = 0.0
    W = np.zeros(6)
    mixed = not rigid_joints and bool(getattr(sim, "rigid_joints", ()))   # some joints rigid, the others elastic
    ref, flat = jets(-n_pre * timestep)
    total = n_pre + steps + n_post
    n_log, diverged, sat = 0, None, None
    t = -n_pre * timestep
    wall = time.perf_counter()
    try:
        for i in range(total + 1):
            k = i - n_pre            # k < 0: pre-roll, not logged; k > steps: the landing, not logged
            t = k * timestep
            if progress is not None and i % 100 == 0:
                progress(i, total)
            if k == 0:               # the scored window starts: peaks and clip counts from here on
                om_peak = u_peak = 0.0
                counters.rotor_saturations = counters.motor_saturations = 0
                if at_zero is not None:
                    at_zero(sim)
            if session is not None:
                session.tick(k, steps, t)
                sensed = session.read(t)
            C, Vb, q, qd = sim.base_pose(), sim.base_twist_body(), sim.q(), sim.qd()
            if i:
                ref, flat = jets(t)
            if session is not None:
                session.model_rate(flat.base_twist[1])   # the imu_model input rule's acceleration (next step)
            if 0 <= k <= steps:
                Vs = Ad(C) @ Vb
                c_log[k] = gd.center_of_mass(plant, C, Vs[None], q[None])[0]
                t_log[k], cd_log[k], q_log[k], qd_log[k] = t, ref.com[0], q, ref.q[0]
                R_log[k], Rd_log[k] = C[:3, :3], flat.base_pose[:3, :3]
                if ext_log is not None:
                    ext_log[k] = sim.external_wrench().generalized
                n_log = k + 1
                if record is not None:     # the true state (the controller may read sensed values)
                    record.state(t, C, Vb, q, qd)
                    record.reference(t, ref, flat)
            if k == steps:
                sat = (counters.rotor_saturations, counters.motor_saturations)
                if not n_post:
                    break
            if i == total:
                break
            guard.check(t, C, flat.base_pose, q, ref.q[0])
            if session is not None and sensed is not None:   # the controller's inputs: sensed, not exact
                C, Vb, q, qd, th, thd = sensed
                if rigid_joints:
                    th = thd = None
            else:
                th, thd = (None, None) if rigid_joints else (sim.motor_angle(), sim.motor_velocity())
            cmd = command(t, C, Vb, q, qd, th, thd, ref, flat)
            scored = k < steps
            off = session is not None and session.disarmed
            if ideal:
                W[:3], W[5] = cmd.torque, cmd.thrust
                if off:
                    W[:] = 0.0
            else:
                guard.check(t, C, flat.base_pose, q, ref.q[0], cmd.omega_raw)
                sim.set_rotor_command(stopped if off else cmd.omega)
                if scored:
                    om_peak = max(om_peak, float(cmd.omega_raw.max()))
            extra = _NO_WRENCH if disturbance is None else disturbance(t, sim)
            if rigid_joints:
                sim.set_command(W + extra, cmd.u)   # the ideal body wrench (zero with rotors) and the joint torques
            else:
                if mixed:                           # the rigid joints' torques (0 at the elastic ones)
                    sim.set_command(W + extra, cmd.joint_torque)
                elif disturbance is not None:
                    sim.set_command(extra, _zeros_n(n))
                sim.set_motor_torque(cmd.u)
                if mixed and scored:
                    u_peak = max(u_peak, _peak(cmd.joint_torque_raw))
            if scored:
                u_peak = max(u_peak, _peak(cmd.u_raw))
            if record is not None and 0 <= k < steps:
                record.command(t, cmd)
            sim.step()
    except Diverged as exc:
        diverged = str(exc)
    except RuntimeError as exc:      # MuJoCo's non-finite state
        diverged = f"t = {t:.3f} s: {str(exc).splitlines()[0]}"
    wall = time.perf_counter() - wall
    if progress is not None:
        progress(total, total)
    if sat is None:
        sat = (counters.rotor_saturations, counters.motor_saturations)
    m = n_log
    log = TrackingLog(t_log[:m], c_log[:m], cd_log[:m], R_log[:m], Rd_log[:m], q_log[:m], qd_log[:m],
                      tuple(plant.joint_names))
    res = UnderactuatedRow(name, log, om_peak, u_peak, sat[0], sat[1], wall, (n_pre + steps) * timestep,
                           diverged=diverged)
    res.session = session
    res.external = None if ext_log is None else ext_log[:m]
    return res


def flat_start_state(ctrl: FlatnessController, ref, flat) -> dict:
    """The state that starts a row on the reference: ``base_pose`` (4, 4), ``base_twist`` (6,)
    spatial, ``q``, ``qd`` (n,) of the flat map ``flat`` of the reference sample ``ref``, the rotor
    speeds ``omega_d`` (``rotor_speed``) and the motors at Spong's ``theta_d``, ``theta_d'``
    (``motor_angle``, ``motor_velocity``) -- the keywords of :meth:`ActuatedSim.reset`."""
    th, thd = ctrl.motor_reference(ref.q, flat.tau)
    return {"base_pose": flat.base_pose, "base_twist": flat.base_twist[0], "q": ref.q[0], "qd": ref.q[1],
            "rotor_speed": ctrl.rotor_reference(flat)[0], "motor_angle": th, "motor_velocity": thd}


def format_table(obj: dict) -> str:
    """The rows' metrics (``{row: UnderactuatedRow.metrics()}``) as the README's text table, within
    100 columns: CoM RMS and max, attitude and link joint RMS, peak rotor speed (``-``: ideal
    rotors) and motor torque, clip counts (rotor/motor), real-time factor. A row that stopped at a
    physical bound (``"diverged"`` in its metrics) gets its one line below the table, no numbers."""
    from .report import text_table
    cols = [("row", "", 3), ("CoM RMS", "[m]", 9), ("CoM max", "[m]", 9), ("att RMS", "[deg]", 9),
            ("joint RMS", "[deg]", 9), ("omega pk", "[rad/s]", 5), ("u peak", "[N m]", 6), ("clips", "rot/mot", 5),
            ("realtime", "[x]", 5)]
    rows = [[r, f"{m['com_rms_m']:.3e}", f"{m['com_max_m']:.3e}", f"{m['attitude_rms_deg']:.3e}",
             f"{m['joint_rms_deg']:.3e}",
             "-" if r in _SPEC and _SPEC[r][1] else f"{m['rotor_speed_peak_rad_s']:.0f}",
             f"{m['motor_torque_peak_nm']:.3f}", f"{m['rotor_saturations']}/{m['motor_saturations']}",
             f"{m['real_time_factor']:.2f}"] for r, m in obj.items() if not m.get("diverged")]
    text = text_table(cols, rows)
    return text + "".join(f"\n{r}  diverged: {m['diverged']}" for r, m in obj.items() if m.get("diverged"))
