"""The actuated aerial manipulator on Table 3 in one process (ROS-free): the loop and its rows.

Used by ``python -m geodyn_ros.examples.actuated_loop`` (the table and figure) and by
``geodyn_closed_loop --actuated`` (its in-process twin).

The loop (in-process, the ROS-free twin of the ROS nodes; 1 kHz, zero-order hold):
``ActuatedSim`` (TiltHex rotors with gz-sim's MulticopterMotorModel lag, series-elastic arm
joints) <- ``ActuatedController`` <- jets of ``gd.inverse_dynamics`` (order 2) on the Table 3
reference, the body-frame wrench jet by ``gd.convert_wrench(..., "spatial", "body")``.
With ``config``, ``source`` and ``reference`` it flies any fully actuated vehicle: per-rotor
constants, rigid and elastic joints mixed (rigid joints get ``ActuatedCommand.joint_torque``,
clipped to ``config.effort_limits``), or no joints.

Rows (same feedback gains, same initial state on the reference at ``t = -preroll``: rotors at
``omega_d``, motors at ``theta_d``, ``theta_d'`` of that instant; the loop then runs ``preroll``
seconds (default 5 s) along the reference before the scored 30 s start at ``t = 0``). The
pre-roll is the usual experimental protocol (the vehicle is already tracking when the
measurement starts). Without it (``--preroll 0``) the first ~2 s of ``pd``/``ff0``/``ff1`` are a
transient that has nothing to do with what the rows compare: their controllers do not hold the
motor angles ``theta_d = q_d + K^-1 tau_d`` the arm starts at, so the elastic arm swings to
their own equilibrium, ``theta = q_d`` (link deflected by ``-K^-1 tau_d``), and its ringing
disturbs the base 10x more than the rotor lag does. The docs give both.

* ``pd``: feedback only, **no gravity compensation** (it sags ``m g / kp``: 9.9 cm);  ``ff0``: ``u = A^+ W_b``, motor torque ``tau``;
* ``ff1``: plus rotor-lag compensation;  ``ff2``: plus elastic-joint compensation;
* ``ideal``: today's ideal-actuator loop (body wrench and joint torques applied directly,
  order-0 feedforward) on the same model, for reference;
* ``ff0_rigid_arm``, ``ff1_rigid_arm``: rotors modelled, arm joints rigid and torque-controlled,
  which isolates what the lag compensation targets (with elastic joints, the uncompensated
  elastic deflection of ``ff0``/``ff1`` disturbs the base more than the rotor lag does);
* ``ff2_discrete_lag``: ``ff2`` with the exact inverse of the discrete rotor filter
  (``lag_timestep``) in place of the continuous ``omega_d + T omega_d'``;
* the baselines (:mod:`geodyn_ros.control.baselines`, same gains): ``pd_g`` PD plus gravity
  compensation of the whole body (the honest feedback-only baseline), ``pid_g`` the same with the
  rejection's integral action (a lab's PID), ``indi`` incremental nonlinear dynamic inversion on
  the rotor speeds and the IMU (the exact IMU at every step with perfect sensing, the profile's
  IMU stream with sensing; its filter by :func:`~geodyn_ros.control.baselines.indi.filter_time_constant_for`).

Columns: base position RMS and max [m], attitude RMS [deg], link joint RMS [deg], rotor speed
peak [rad/s] and motor torque peak [N m] against their limits, saturation counts.

Usage::

    python -m geodyn_ros.examples.actuated_loop --json              # one JSON object, keys pd, ff0, ff1, ff2
    python -m geodyn_ros.examples.actuated_loop --speed 3 --out out  # table + figure, 3x faster Table 3
    python -m geodyn_ros.examples.actuated_loop --duration 5 --rows ff1,ff2
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.feedback import TrackingGains, tracking_command
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from .tracking import TrackingLog
from .underactuated import _NO_WRENCH, _peak, indi_measure, rigid_effort_limits
from geodyn_ros.lie import Ad, Ad_inv
from geodyn_ros.model.joint_losses import PLANT_INTEGRATOR, check_loss_mode, losses_for_mode
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.trajectories import table3_reference

__all__ = ["ROWS", "BASELINES", "RowResult", "simulate_actuated", "scaled_reference", "tilthex_source", "format_table",
           "feedforward_speed_range", "PREROLL_S", "SETTLE_S"]

#: row -> (feedforward level, rigid arm joints, discrete lag inverse); "ideal" is separate
_SPEC = {"pd": (None, False, False), "ff0": (0, False, False), "ff1": (1, False, False), "ff2": (2, False, False),
         "ideal": (0, False, False),
         "ff0_rigid_arm": (0, True, False), "ff1_rigid_arm": (1, True, False),
         "ff2_discrete_lag": (2, False, True),
         # the baselines (geodyn_ros.control.baselines): PD + gravity, its PID, INDI
         "pd_g": (None, False, False), "pid_g": (None, False, False), "indi": (None, False, False)}
ROWS = tuple(_SPEC)
#: the baseline rows (a controller of geodyn_ros.control.baselines in place of ActuatedController)
BASELINES = ("pd_g", "pid_g", "indi")
#: start-up window [s] excluded from the ``*_after_<SETTLE_S>s`` columns
SETTLE_S = 5.0
#: default pre-roll [s]: the loop runs from t = -PREROLL_S, scored from t = 0 (simulate_actuated)
PREROLL_S = 5.0


def tilthex_source() -> Path:
    """``urdf/tilthex_manipulator.urdf.xacro`` (source tree or installed share)."""
    return shipped_urdf("tilthex_manipulator.urdf.xacro")


def scaled_reference(speed: float = 1.0):
    """Table 3 reference time-scaled by ``speed`` (base rates x speed, joint duration / speed)."""
    if not (math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed: expected a finite positive factor, got {speed!r}")

    def ref(t, order):
        return table3_reference(t, order, omega_position=speed * 2 * math.pi / 20.0,
                                omega_yaw=speed * 2 * math.pi / 30.0, T=30.0 / speed)
    return ref


@dataclass
class RowResult:
    """One row: the log, the metrics of the README table and the error curves for the figure."""

    name: str
    log: TrackingLog
    rotor_speed_peak: float
    motor_torque_peak: float
    rotor_saturations: int
    motor_saturations: int
    wall_time_s: float
    simulated_s: float = float("nan")   # pre-roll included (the real-time factor's numerator)
    diverged: str | None = None         # the one line of a row that left a physical bound (loops.sensed)
    session: object = field(default=None, repr=False, compare=False)   # the run's loops.sensed.Session, if any
    #: the draw of the world flown in (geodyn_ros.sim.world.Perturbation), or None (the exact plant)
    world: object = field(default=None, repr=False, compare=False)
    #: (T, 6 + n) the generalized external force the world applied at each logged sample, or None
    external: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the controller's rejection state at the end of the run (geodyn_ros.control.rejection.Rejection), or None
    rejection: object = field(default=None, repr=False, compare=False)

    def metrics(self, max_rot_velocity: float, max_motor_torque: float, settle: float = SETTLE_S) -> dict:
        """The README columns. ``*_after_<settle>s``: the same RMS over ``t >= settle`` only (without
        the start-up transient of the rows whose controller starts off its own equilibrium)."""
        r = self.log.rms()
        lg = self.log
        keep = lg.t >= min(settle, lg.t[-1])
        tag = f"after_{settle:g}s"
        return {"base_rms_m": r["position_m"], "base_max_m": r["max_position_m"],
                "attitude_rms_deg": r["attitude_deg"], "joint_rms_deg": r["joint_deg"],
                f"base_rms_m_{tag}": float(np.sqrt(np.mean(lg.position_error()[keep] ** 2))),
                f"joint_rms_deg_{tag}": (float(np.degrees(np.sqrt(np.mean(lg.joint_error()[keep] ** 2))))
                                         if lg.q.shape[1] else 0.0),
                "rotor_speed_peak_rad_s": self.rotor_speed_peak, "max_rot_velocity_rad_s": max_rot_velocity,
                "motor_torque_peak_nm": self.motor_torque_peak, "max_motor_torque_nm": max_motor_torque,
                "rotor_saturations": self.rotor_saturations, "motor_saturations": self.motor_saturations,
                "real_time_factor": self._simulated() / self.wall_time_s if self.wall_time_s > 0 else float("inf"),
                **({"diverged": self.diverged} if self.diverged else {})}

    def _simulated(self) -> float:
        return self.log.t[-1] if math.isnan(self.simulated_s) else self.simulated_s


def simulate_actuated(row: str = "ff2", duration: float = 30.0, *, speed: float = 1.0, timestep: float = 1e-3,
                      gains: TrackingGains | None = None, config=None, source=None,
                      gravity=(0.0, 0.0, -9.81), rigid_joints: bool = False, lag_discrete: bool = False,
                      preroll: float = PREROLL_S, progress=None, reference=None, sensing=None,
                      record=None, world=None, world_seed: int = 0, rejection=None,
                      wrap_command=None, joint_losses: str = "off") -> RowResult:
    """Run one row of the table (module docstring) and return its :class:`RowResult`.

    duration [s] of simulated time; speed: time scaling of Table 3; timestep [s]: simulator and
    control period; config: :class:`~geodyn_ros.control.rotors.ActuationConfig` (default
    ``config/tilthex.yaml``); source: URDF/xacro with rotor links (default the TiltHex xacro);
    rigid_joints: ideal (rigid, torque-controlled) arm joints with the rotor model, which isolates
    the rotor lag (the motor torque is then the joint torque ``tau_d`` + PD on the link angles).
    preroll [s]: the loop starts at ``t = -preroll`` on the reference (Table 3's formulas hold for
    every t) and only ``0 <= t <= duration`` is logged and scored (errors, peaks, saturations), so
    each row is measured in its own tracking regime, not in the start-up transient of an actuator
    state its controller does not hold (module docstring). ``preroll=0``: scored from the start.
    progress: ``f(done, total)`` called every 100 simulator steps and at the end (``total`` =
    pre-roll + scored steps), e.g. :meth:`geodyn_ros.loops.report.RowProgress.step`; None: silent.
    reference: ``f(t, order) -> Reference`` (base pose, spatial twist jet, joint jets; e.g.
    :func:`geodyn_ros.loops.fly_references.fly_reference` with ``kind="base"``) in place of Table 3
    (``speed`` is then unused); None: Table 3 at ``speed``.
    sensing: a :class:`geodyn_ros.loops.sensed.Sensing` (sensor streams, failsafe, a flight from
    the ground and back); None (or its trivial form): the exact state at every step, as always.
    A row whose state leaves a physical bound stops there: ``RowResult.diverged`` holds its line
    (:class:`geodyn_ros.loops.sensed.DivergenceGuard`) and the log ends before it.
    record: a :class:`geodyn_ros.loops.recording.RowRecorder` (``geodyn_fly --record``): every
    logged sample's true state, reference and feedforward, and every scored command; None: nothing.
    world: a :class:`geodyn_ros.sim.world.World` the simulator flies in (model error, wind, drag,
    pushes), drawn for this vehicle with ``world_seed``: the simulator is the perturbed plant, the
    controller keeps the nominal model and ``config`` (``RowResult.world``: the draw;
    ``RowResult.external``: the generalized external force of every logged sample). None, or an
    exact world: the simulator is the model, bit for bit.
    rejection: a :class:`~geodyn_ros.control.rejection.RejectionOptions` the controller rejects what
    its model misses with (observer feedforward, integral action on the base pose, thrust estimate;
    the command gets the loop's time ``t``), or None: the controller of the tables, bit for bit
    (``RowResult.rejection``: the controller's rejection state at the end). Not used by the
    ``ideal`` row (its law is :func:`~geodyn_ros.control.feedback.tracking_command`, no controller).
    wrap_command: ``f(command) -> command`` around the controller's call
    ``command(t, C, V_b, q, qd, theta, theta', C_d, V_b_d, q_d, W_b_jet, tau_jet) -> ActuatedCommand``
    (e.g. observers run on the loop's data), or None; not used by the ``ideal`` row.
    joint_losses: ``"off"`` (default: the plant is the model), ``"plant"`` (the simulator keeps the
    URDF's joint damping and dry friction, which the controller ignores: what gz-sim does) or
    ``"compensated"`` (the controller adds their torque jet, :mod:`geodyn_ros.model.joint_losses`).
    """
    from geodyn_ros.sim import ActuatedSim
    from .fly_references import vehicle_size
    from .sensed import Diverged, DivergenceGuard, Session

    if row not in ROWS:
        raise ValueError(f"row: expected one of {ROWS}, got {row!r}")
    level, rigid_row, discrete_row = _SPEC[row]
    rigid_joints = rigid_joints or rigid_row
    lag_discrete = lag_discrete or discrete_row
    cfg = load_actuation_config() if config is None else config
    gains = TrackingGains() if gains is None else gains
    ideal = row == "ideal"
    if sensing is not None and sensing.trivial:
        sensing = None
    check_loss_mode(joint_losses)      # before any work
    plant_losses = joint_losses != "off"
    sim_kw = dict(timestep=timestep, gravity=gravity, ideal_rotors=ideal, ideal_joints=ideal or rigid_joints,
                  **({"ground": True} if sensing is not None and sensing.ground else {}),
                  **({"joint_dynamics": True, "integrator": PLANT_INTEGRATOR} if plant_losses else {}))
    pert = None
    if world is not None and not world.exact:
        pert = world.draw(world_seed, tilthex_source() if source is None else source, cfg)
        sim = pert.build(**sim_kw)
        model = pert.model               # the controller's: nominal
    else:
        sim = ActuatedSim(tilthex_source() if source is None else source, cfg, **sim_kw)
        model = sim.model
    al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
    eff = rigid_effort_limits(cfg, model, tilthex_source() if source is None else source)
    losses = losses_for_mode(joint_losses, tilthex_source() if source is None else source, model.joint_names)[1]
    if rigid_joints:     # the diagnostic rows: the elastic joints made rigid keep their motors' limit (as before)
        umax = np.broadcast_to(np.asarray(cfg.elastic.max_motor_torque, float), (len(cfg.elastic.joints),))
        for j, lim in zip(cfg.elastic.joints, umax):
            eff[model.joint_names.index(j)] = lim
    indi = row == "indi"
    if row in BASELINES:
        if rejection is not None:
            raise ValueError(f"rejection: the baseline row {row!r} takes no rejection options (pid_g has its "
                             "integral built in; INDI's increment is its disturbance rejection)")
        ctrl, imu_rate = _baseline_controller(row, al, cfg, model, gains, eff, gravity, timestep, sensing)

        def command(t, C, Vb, q, qd, th, thd, Cd, Vbd, q_d, Wb, tau):
            return ctrl.command(C, Vb, q, qd, th, thd, Cd, Vbd, q_d, Wb, tau)
    else:
        ctrl = ActuatedController(al, cfg.rotors, None if rigid_joints else cfg.elastic, model.joint_names, gains,
                                  feedforward_order=level, lag_timestep=timestep if lag_discrete else None,
                                  effort_limits=eff, model=model, gravity=gravity, rejection=rejection,
                                  joint_losses=losses)

        def command(t, C, Vb, q, qd, th, thd, Cd, Vbd, q_d, Wb, tau):
            return ctrl.command(C, Vb, q, qd, th, thd, Cd, Vbd, q_d, Wb, tau, t=t)

    if wrap_command is not None:
        command = wrap_command(command)
    mixed = not (ideal or rigid_joints) and bool(sim.rigid_joints)   # some joints rigid, the others elastic
    reference = scaled_reference(speed) if reference is None else reference
    g = np.asarray(gravity, float)
    size = vehicle_size(sim.rotor_frames)
    guard = DivergenceGuard(size, cfg.rotors.max_rot_velocity)

    def jets(t):
        ref = reference(t, 2)
        res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2, gravity=g)
        Wb = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body")
        return ref, Wb, res.tau

    if not (math.isfinite(preroll) and preroll >= 0):
        raise ValueError(f"preroll: expected a finite time >= 0 [s], got {preroll!r}")
    steps = int(round(duration / timestep))
    sess = None
    if sensing is not None:
        sess = Session(sensing, sim, reference, size=size, max_rot_velocity=cfg.rotors.max_rot_velocity,
                       preroll=preroll, duration=duration, timestep=timestep)
        reference = sess.reference
    n_pre = int(round(preroll / timestep)) if sess is None else sess.n_pre
    n_post = 0 if sess is None else sess.n_post
    t0 = -n_pre * timestep
    ref, Wb, tau = jets(t0)
    C0, V0, q0, qd0 = ref.base_pose, ref.base_twist[0], ref.q[0], ref.q[1]
    on_ground = {} if sess is None else sess.start(C0, model)
    clock = {"time": t0} if sim.world is not None else {}    # a world's clock is the loop's (run_loop)
    if ideal:
        sim.reset(C0, V0, q0, qd0, **clock)
    elif rigid_joints:
        om0, _ = ctrl.rotor_reference(Wb)
        sim.reset(C0, V0, q0, qd0, **clock, rotor_speed=om0 * 0.0 if on_ground else om0)
    else:
        om0, _ = ctrl.rotor_reference(Wb)
        th0, thd0 = ctrl.motor_reference(ref.q, tau)
        sim.reset(C0, V0, q0, qd0, **clock, rotor_speed=om0 * 0.0 if on_ground else om0, motor_angle=th0,
                  motor_velocity=thd0)
    if sess is not None:
        sess.begin(t0)
        stopped = np.zeros(len(sim.rotor_names))
    if record is not None:
        record.attach(sim)
    if indi:
        from geodyn_ros.control.baselines import ImuIntervals
        exact_imu = ImuIntervals(gravity) if sess is None or sess.inputs is None else None
        imu_seen = -math.inf
    t_log = np.empty(steps + 1)
    poses = np.empty((steps + 1, 4, 4))
    q_log = np.empty((steps + 1, model.n_joints))
    Cd_log = np.empty((steps + 1, 4, 4))
    qd_log = np.empty((steps + 1, model.n_joints))
    ext_log = np.empty((steps + 1, 6 + model.n_joints)) if sim.world is not None else None
    om_peak = u_peak = 0.0
    total = n_pre + steps + n_post
    n_log, diverged, sat = 0, None, None
    wall = time.perf_counter()
    t = t0
    try:
        for i in range(total + 1):
            k = i - n_pre   # k < 0: pre-roll, not logged; k > steps: the landing, not logged
            t = k * timestep
            if progress is not None and i % 100 == 0:
                progress(i, total)
            if k == 0:      # the scored window starts: peaks and clip counts from here on
                om_peak = u_peak = 0.0
                ctrl.rotor_saturations = ctrl.motor_saturations = 0
            if sess is not None:
                sess.tick(k, steps, t)
                sensed = sess.read(t)
            C, Vb, q, qd = sim.base_pose(), sim.base_twist_body(), sim.q(), sim.qd()
            if i:
                ref, Wb, tau = jets(t)
            if sess is not None:
                sess.model_rate(ref.base_twist[1])      # the imu_model input rule's acceleration (next step)
            if 0 <= k <= steps:
                t_log[k], poses[k], q_log[k] = t, C, q
                Cd_log[k], qd_log[k] = ref.base_pose, ref.q[0]
                if ext_log is not None:
                    ext_log[k] = sim.external_wrench().generalized
                n_log = k + 1
                if record is not None:     # the true state (the controller may read sensed values)
                    record.state(t, C, Vb, q, qd)
                    record.reference(t, ref, (Wb, tau))
            if k == steps:
                sat = (ctrl.rotor_saturations, ctrl.motor_saturations)
                if not n_post:
                    break
            if i == total:
                break
            Cd = ref.base_pose
            guard.check(t, C, Cd, q, ref.q[0])
            if sess is not None and sensed is not None:   # the controller's inputs: sensed, not exact
                C, Vb, q, qd, th_s, thd_s = sensed
            Vbd = Ad_inv(Cd) @ ref.base_twist[0]
            scored = k < steps
            if ideal:
                W, tq = tracking_command(gains, C, Vb, q, qd, Cd, Vbd, ref.q[0], ref.q[1], Wb[0], tau[0])
                if sess is not None and sess.disarmed:
                    W = np.zeros(6)
                sim.set_command(W, tq)
                if scored:
                    u_peak = max(u_peak, _peak(tq))
            elif rigid_joints:
                cmd = command(t, C, Vb, q, qd, q, qd, Cd, Vbd, ref.q, Wb, tau)
                guard.check(t, C, Cd, q, ref.q[0], cmd.omega_raw)
                sim.set_rotor_command(stopped if sess is not None and sess.disarmed else cmd.omega)
                sim.set_command(np.zeros(6), cmd.u)
                if scored:
                    om_peak = max(om_peak, float(cmd.omega_raw.max()))
                    u_peak = max(u_peak, _peak(cmd.u_raw))
            else:
                if sess is not None and sensed is not None:
                    th, thd = th_s, thd_s
                else:
                    th, thd = sim.motor_angle(), sim.motor_velocity()
                if indi:
                    imu_seen = indi_measure(ctrl, sim, sess, exact_imu, t, imu_seen)
                    cmd = ctrl.command(C, Vb, q, qd, th, thd, Cd, Vbd, ref.q, _base_acceleration(ref))
                else:
                    cmd = command(t, C, Vb, q, qd, th, thd, Cd, Vbd, ref.q, Wb, tau)
                guard.check(t, C, Cd, q, ref.q[0], cmd.omega_raw)
                sim.set_rotor_command(stopped if sess is not None and sess.disarmed else cmd.omega)
                if mixed:         # the rigid joints' torques (0 at the elastic joints, driven by their springs)
                    sim.set_command(_NO_WRENCH, cmd.joint_torque)
                    if scored:
                        u_peak = max(u_peak, _peak(cmd.joint_torque_raw))
                sim.set_motor_torque(cmd.u)
                if scored:
                    om_peak = max(om_peak, float(cmd.omega_raw.max()))
                    u_peak = max(u_peak, _peak(cmd.u_raw))
            if record is not None and 0 <= k < steps and not ideal:
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
        sat = (ctrl.rotor_saturations, ctrl.motor_saturations)
    # the desired samples are the ones the loop used (no second evaluation of the reference)
    n = n_log
    log = TrackingLog(t_log[:n], poses[:n, :3, 3].copy(), Cd_log[:n, :3, 3].copy(), poses[:n, :3, :3].copy(),
                      Cd_log[:n, :3, :3].copy(), q_log[:n], qd_log[:n], tuple(model.joint_names))
    res = RowResult(row, log, om_peak, u_peak, sat[0], sat[1], wall, simulated_s=(n_pre + steps) * timestep,
                    diverged=diverged)
    res.session = sess
    res.world, res.external = pert, None if ext_log is None else ext_log[:n]
    res.rejection = getattr(ctrl, "rejection", None)   # (the baseline rows have none)
    return res


def _baseline_controller(row, al, cfg, model, gains, eff, gravity, timestep, sensing):
    """``(controller, imu_rate)`` of a baseline row (module docstring)."""
    from geodyn_ros.control.baselines import IndiController, IndiOptions, PdGravityController
    from geodyn_ros.control.baselines.indi import filter_time_constant_for
    if row in ("pd_g", "pid_g"):
        return PdGravityController(al, cfg.rotors, cfg.elastic, model.joint_names, gains, model=model,
                                   effort_limits=eff, gravity=gravity, integral=row == "pid_g",
                                   timestep=timestep), None
    imu = None if sensing is None else sensing.profile.imu
    rate = 1.0 / timestep if sensing is None or sensing.profile.perfect or imu is None else imu.rate
    opts = IndiOptions(filter_time_constant_for(cfg.rotors, rate))
    return IndiController(al, cfg.rotors, cfg.elastic, model.joint_names, gains, model=model, options=opts,
                          effort_limits=eff, gravity=gravity), rate


def _base_acceleration(ref) -> np.ndarray:
    """(6,) ``(alpha_d, p_d'')`` of a reference sample: the desired body angular acceleration (desired
    base axes) and origin acceleration (world): ``V_b' = Ad(C_d)^-1 V'``, ``p'' = R_d (v_b' + w_b x v_b)``."""
    Cd = ref.base_pose
    Vb = Ad_inv(Cd) @ ref.base_twist[0]
    dVb = Ad_inv(Cd) @ ref.base_twist[1]
    return np.concatenate([dVb[:3], Cd[:3, :3] @ (dVb[3:] + np.cross(Vb[:3], Vb[3:]))])


def feedforward_speed_range(duration: float = 30.0, speed: float = 1.0, config=None, dt: float = 0.02) -> tuple:
    """``(min, max, cond)``: the extremes of the feedforward rotor speeds ``sqrt(A^+ W_b,d)``
    [rad/s] along the time-scaled Table 3 (no feedback; a negative ``u`` gives a negative min,
    ``-sqrt(-u)``) and the (unit-scaled) condition number of the allocation matrix A."""
    cfg = load_actuation_config() if config is None else config
    model = cfg.load_model(tilthex_source())
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    reference = scaled_reference(speed)
    us = []
    for t in np.arange(0.0, duration + 1e-12, dt):
        ref = reference(t, 0)
        W = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 0).base_wrench[0]
        us.append(al.allocate(Ad(ref.base_pose).T @ W))
    us = np.array(us)
    lo, hi = float(us.min()), float(us.max())
    return (math.copysign(math.sqrt(abs(lo)), lo), math.sqrt(hi), al.condition_number())


def format_table(results: dict, cfg, *, settled: bool = False) -> str:
    """The table of the rows (``{row: RowResult}``) as printed by the example, within 100 columns:
    base position RMS and max, attitude and link joint RMS, peak rotor speed and motor torque (a
    first line gives their limits from ``cfg``), clip counts (rotor/motor), real-time factor.
    settled: the base and joint RMS over ``t >= SETTLE_S`` replace the base max and attitude RMS
    (for a run scored from the start, ``preroll=0``). A row that stopped at a physical bound gets its
    one line below the table, no numbers."""
    from .report import text_table
    tag = f"after_{SETTLE_S:g}s"
    two = (("base RMS", "base max", "att RMS", "joint RMS") if not settled else
           ("base RMS", f"base t>{SETTLE_S:g}s", "joint RMS", f"joint t>{SETTLE_S:g}s"))
    keys = (("base_rms_m", "base_max_m", "attitude_rms_deg", "joint_rms_deg") if not settled else
            ("base_rms_m", f"base_rms_m_{tag}", "joint_rms_deg", f"joint_rms_deg_{tag}"))
    cols = ([("row", "", 3)] + [(name, "[m]" if k.startswith("base") else "[deg]", 9) for name, k in zip(two, keys)]
            + [("omega pk", "[rad/s]", 5), ("u peak", "[N m]", 6), ("clips", "rot/mot", 5), ("realtime", "[x]", 5)])
    rows = []
    # the largest limits when they differ per rotor / per motor (nan: no elastic joint)
    wmax = float(np.max(cfg.rotors.max_rot_velocity))
    mt = np.asarray(cfg.elastic.max_motor_torque, float)
    umax = float(mt.max()) if mt.size and cfg.elastic.joints else float("nan")
    for name, res in results.items():
        if res.diverged:
            continue
        m = res.metrics(wmax, umax)
        rows.append([name] + [f"{m[k]:.3e}" for k in keys]
                    + ["-" if name == "ideal" else f"{m['rotor_speed_peak_rad_s']:.0f}",
                       f"{m['motor_torque_peak_nm']:.3f}", f"{m['rotor_saturations']}/{m['motor_saturations']}",
                       f"{m['real_time_factor']:.2f}"])
    limits = (f"limits: rotor speed {wmax:g} rad/s, motor torque "
              f"{umax:g} N m (clips: commands cut to them; ideal: no rotors)")
    return (limits + "\n" + text_table(cols, rows)
            + "".join(f"\n{n}  diverged: {r.diverged}" for n, r in results.items() if r.diverged))
