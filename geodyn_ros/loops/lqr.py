"""The time-varying LQR against the geometric controller on the under-actuated vehicle (ROS-free).

Both controllers fly the collinear hexarotor manipulator of :mod:`geodyn_ros.loops.underactuated`
(MuJoCo with gz-sim's rotor lag and Spong's elastic joints, 1 kHz) along the figure eight with
the **same feedforward**: the flat map at order 2 with the exact inverse of the discrete rotor
filter and Spong's inverse (level ``ff2`` of :class:`~geodyn_ros.control.flatness.FlatnessController`
with ``lag_timestep``). They differ only in the feedback:

* ``geometric``: Lee's controller on the CoM and yaw, motor-side PD (``FlatnessGains``);
* ``lqr``: ``v = -K(t) s`` with the time-varying gains of :func:`geodyn_ros.control.lqr.tvlqr_schedule`
  along the reference (precomputed by the backward Riccati recursion);
* ``lqr_online``: the same law with the gains a node would compute online
  (:class:`~geodyn_ros.control.lqr.OnlineGains`: 20 warm-started Riccati steps on the frozen model
  of the current sample, 100 times a second), emulated in simulated time.

Cases (every run starts on the reference at ``t = -preroll`` with the actuators on it; scored
over ``0 <= t <= duration``):

* ``nominal``: no disturbance;
* ``mass``: the simulated arm's six links carry 10 % more mass and inertia than the controllers'
  model (the feedforward is wrong by that much);
* ``gust``: a lateral force of 20 % of the weight along world ``+y`` on the base for 1 s
  (``1 <= t < 2``);
* ``offset``: at ``t = 0`` the base is displaced by 0.3 m (along ``(1, 1, 0)/sqrt 2``) and rotated by
  20 deg about the world ``x`` axis, velocities and actuators kept.

Recovery time: from the end of the disturbance (the gust's end, ``t = 0`` for the offset) until
the CoM error stays below :data:`RECOVERY_COM_M` and the attitude error below
:data:`RECOVERY_ATT_DEG` for the rest of the run (None if it never does; not defined for
``nominal`` and ``mass``).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.lqr import ActuatedModel, LqrController, LqrWeights, OnlineGains, tvlqr_schedule
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.lie import Ad, exp_so3
from geodyn_ros.trajectories import figure_eight_reference

from .underactuated import UnderactuatedRow, flat_start_state, hexarotor_source, run_loop

__all__ = ["CASES", "CONTROLLERS", "RECOVERY_COM_M", "RECOVERY_ATT_DEG", "simulate_case", "recovery_time",
           "heavier_arm_urdf", "LqrCaseResult", "gain_schedule", "equivalent_stiffness", "geometric_equivalent",
           "match_geometric_weights", "EQUIVALENT_GAINS"]

CASES = ("nominal", "mass", "gust", "offset")
CONTROLLERS = ("geometric", "lqr", "lqr_online")
#: recovery thresholds: CoM error [m] and attitude error [deg]
RECOVERY_COM_M = 0.01
RECOVERY_ATT_DEG = 1.0
ARM_LINKS = ("link2", "link3", "link4", "link5", "link6", "link7")
GUST = (1.0, 2.0, 0.2)          # start [s], end [s], fraction of the weight
OFFSET = (0.3, 20.0)            # [m], [deg]


def heavier_arm_urdf(source=None, factor: float = 1.1) -> str:
    """The robot's URDF (xacro expanded) with the arm links' mass and inertia times ``factor``."""
    from geodyn_ros.model.urdf import _read_source
    text = _read_source(str(hexarotor_source() if source is None else source))[0]
    root = ET.fromstring(text)
    for link in root.iter("link"):
        if link.get("name") in ARM_LINKS:
            inertial = link.find("inertial")
            m = inertial.find("mass")
            m.set("value", repr(float(m.get("value")) * factor))
            I = inertial.find("inertia")
            for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                I.set(k, repr(float(I.get(k, "0")) * factor))
    return ET.tostring(root, encoding="unicode")


def _vehicle(config, timestep):
    """(config, nominal model, allocation, ActuatedModel) of the hexarotor manipulator."""
    cfg = load_actuation_config("hexarotor") if config is None else config
    model = cfg.load_model(hexarotor_source())
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    return cfg, model, al, ActuatedModel(model, al, cfg.rotors, cfg.elastic, timestep)


def _discrete_model(model, lin, speed):
    """``t -> (A, B)`` of the step starting at ``t`` along the figure eight."""
    def at(t):
        ref = figure_eight_reference(t, 2, speed=speed)
        flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
        C, Vb, q, qd, Wb, tau, _, _, x = lin.nominal(flat, ref.q)
        return lin.discrete(C, Vb, q, qd, Wb, tau, x)
    return at


def gain_schedule(duration: float = 10.0, *, preroll: float = 2.0, timestep: float = 1e-3, speed: float = 1.0,
                  weights: LqrWeights | None = None, config=None, progress=None):
    """The TVLQR gains along the figure eight on ``[-preroll, duration]`` (they depend on the reference
    and the nominal model only: one schedule serves every case)."""
    cfg, model, al, lin = _vehicle(config, timestep)
    w = LqrWeights() if weights is None else weights
    t0 = -int(round(preroll / timestep)) * timestep
    return tvlqr_schedule(_discrete_model(model, lin, speed), t0, duration, timestep, w.Q(lin.n, lin.ne, lin.nr),
                          w.R(lin.nr, lin.ne, lin.nq), w.store_every, w.tail, progress=progress)


class LqrCaseResult(UnderactuatedRow):
    """An :class:`UnderactuatedRow` with the recovery time of its case (``recovery_s``)."""

    recovery_s = None

    def metrics(self) -> dict:
        m = super().metrics()
        m["recovery_s"] = self.recovery_s
        return m


def recovery_time(log, t_from: float, com_m: float = RECOVERY_COM_M, att_deg: float = RECOVERY_ATT_DEG):
    """Seconds from ``t_from`` until the CoM and attitude errors stay below the thresholds (None: never)."""
    ok = (log.position_error() < com_m) & (np.degrees(log.attitude_error()) < att_deg)
    after = log.t >= t_from
    bad = np.nonzero(after & ~ok)[0]
    if len(bad) == 0:
        return 0.0
    last_bad = bad[-1]
    if last_bad == len(log.t) - 1:
        return None
    return float(log.t[last_bad + 1] - t_from)


def simulate_case(controller: str = "lqr", case: str = "nominal", duration: float = 10.0, *, preroll: float = 2.0,
                  timestep: float = 1e-3, speed: float = 1.0, weights: LqrWeights | None = None,
                  gains: FlatnessGains | None = None, schedule=None, online_rate_hz: float = 100.0,
                  online_steps: int = 20, config=None, gain_record=None, world=None,
                  world_seed: int = 0) -> LqrCaseResult:
    """One controller in one case (module docstring); ``schedule``: precomputed TVLQR gains to reuse
    (they depend on the reference and the nominal model only, not on the case).

    ``gain_record`` (``lqr_online`` only): ``(chain, used)`` of a run whose gains were computed on
    a thread (``run_ros_underactuated_loop(..., info=...)``'s ``lqr_gain_chain`` and
    ``lqr_gains_used``): ``chain`` the stamps [s] of the models of every gain computed, in order
    (the first a DARE, each next ``online_steps`` Riccati steps warm-started from the previous);
    ``used`` maps each step's stamp [ns] to the sequence number (1-based index in ``chain``) of
    the gain that step used. The loop then uses exactly those gains instead of emulating the
    schedule (:class:`~geodyn_ros.control.lqr.OnlineGains`).

    ``world`` (a :class:`geodyn_ros.sim.world.World`, drawn with ``world_seed``): the simulator flies
    in it (on top of the case: the ``mass`` case's heavier arm is perturbed further); the controllers
    keep the nominal model. None, or an exact world: as without.
    """
    from geodyn_ros.sim import ActuatedSim

    if controller not in CONTROLLERS:
        raise ValueError(f"controller: expected one of {CONTROLLERS}, got {controller!r}")
    if gain_record is not None and controller != "lqr_online":
        raise ValueError(f"gain_record: only for controller 'lqr_online', got {controller!r}")
    if case not in CASES:
        raise ValueError(f"case: expected one of {CASES}, got {case!r}")
    cfg, model, al, lin = _vehicle(config, timestep)
    plant_src = heavier_arm_urdf() if case == "mass" else hexarotor_source()
    pert = None
    if world is not None and not world.exact:
        pert = world.draw(world_seed, plant_src, cfg)
        sim = pert.build(timestep=timestep)
    else:
        sim = ActuatedSim(plant_src, cfg, timestep=timestep)
    geo = FlatnessController(model, al, cfg.rotors, cfg.elastic, gains, "ff2", lag_timestep=timestep)

    def jets(t):
        ref = figure_eight_reference(t, 2, speed=speed)
        return ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)

    t0 = -int(round(preroll / timestep)) * timestep
    ref0, flat0 = jets(t0)
    start = flat_start_state(geo, ref0, flat0)
    if controller == "geometric":
        ctrl = geo

        def command(t, C, Vb, q, qd, th, thd, ref, flat):
            return geo.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat)
    else:
        w = LqrWeights() if weights is None else weights
        if controller == "lqr":
            if schedule is None:
                schedule = gain_schedule(duration, preroll=preroll, timestep=timestep, speed=speed, weights=w,
                                         config=cfg)
            ctrl = LqrController(lin, schedule)
        elif gain_record is not None:
            ctrl = LqrController(lin, _ReplayedOnline(w.Q(lin.n, lin.ne, lin.nr), w.R(lin.nr, lin.ne, lin.nq),
                                                      _discrete_model(model, lin, speed), online_rate_hz, online_steps,
                                                      *gain_record))
        else:
            ctrl = LqrController(lin, _EmulatedOnline(w.Q(lin.n, lin.ne, lin.nr), w.R(lin.nr, lin.ne, lin.nq),
                                                      _discrete_model(model, lin, speed), online_rate_hz, online_steps))
        ctrl.reset_rotors(start["rotor_speed"])

        def command(t, C, Vb, q, qd, th, thd, ref, flat):
            return ctrl.command(t, C, Vb, q, qd, th, thd, ref.q, flat)

    disturbance = at_zero = None
    t_from = None
    if case == "gust":
        g0, g1, frac = GUST
        f = np.array([0.0, frac * sim.model.total_mass * 9.81, 0.0])
        zero = np.zeros(6)

        def disturbance(t, s):
            if g0 <= t < g1:
                W = np.zeros(6)
                W[3:] = s.base_pose()[:3, :3].T @ f      # a world-fixed force at the base origin, in base axes
                return W
            return zero
        t_from = g1
    elif case == "offset":
        dist, ang = OFFSET

        def at_zero(s):
            C = s.base_pose().copy()
            Vb = s.base_twist_body().copy()     # the body velocities are kept
            C[:3, 3] += dist * np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0)
            C[:3, :3] = exp_so3(np.radians(ang) * np.array([1.0, 0.0, 0.0])) @ C[:3, :3]
            s.reset(C, Ad(C) @ Vb, s.q().copy(), s.qd().copy(), time=s.state().time, rotor_speed=s.rotor_speed(),
                    motor_angle=s.motor_angle().copy(), motor_velocity=s.motor_velocity().copy())
        t_from = 0.0
    row = run_loop(sim, sim.model, command, jets, start, duration, preroll, timestep, name=f"{controller}/{case}",
                   counters=ctrl, disturbance=disturbance, at_zero=at_zero)
    row.world = pert
    out = LqrCaseResult(**row.__dict__)
    out.recovery_s = recovery_time(row.log, t_from) if t_from is not None else None
    return out


class _EmulatedOnline:
    """The node's online gains in simulated time: :class:`OnlineGains` without its thread, handed the
    current sample at every step (its model is built only when a recomputation is due)."""

    def __init__(self, Q, R, discrete_model, rate_hz, steps):
        self.online = OnlineGains(Q, R, rate_hz, steps, prepare=discrete_model, threaded=False)

    def __call__(self, t):
        self.online.update(t, stamp=t)
        return self.online.gain()


class _ReplayedOnline:
    """The gains a threaded :class:`OnlineGains` actually used (``simulate_case``'s ``gain_record``):
    the chain of models recomputed in the same order, each step handed the gain it used."""

    def __init__(self, Q, R, discrete_model, rate_hz, steps, chain, used):
        if not len(chain):
            raise ValueError("gain_record: the chain of gain stamps is empty")
        self.online = OnlineGains(Q, R, rate_hz, steps, prepare=discrete_model, threaded=False)
        self.chain, self.used, self.K = [float(s) for s in chain], dict(used), []

    def __call__(self, t):
        key = int(round(t * 1e9))
        if key not in self.used:
            raise ValueError(f"gain_record: no gain recorded for the step at t = {t:.6f} s")
        n = self.used[key]
        if not 1 <= n <= len(self.chain):
            raise ValueError(f"gain_record: step t = {t:.6f} s used gain {n}, the chain has {len(self.chain)}")
        while len(self.K) < n:
            s = self.chain[len(self.K)]
            self.online.compute(s, stamp=s)
            self.K.append(self.online.gain())
        return self.K[n - 1]


#: the base-axis gains compared at hover (:func:`equivalent_stiffness`), with their units
EQUIVALENT_GAINS = {
    "roll_nm_per_rad": "N m/rad", "pitch_nm_per_rad": "N m/rad", "yaw_nm_per_rad": "N m/rad",
    "roll_damping_nms_per_rad": "N m s/rad", "pitch_damping_nms_per_rad": "N m s/rad",
    "yaw_damping_nms_per_rad": "N m s/rad", "thrust_n_per_m": "N/m", "thrust_damping_ns_per_m": "N s/m",
    "roll_nm_per_m_lateral": "N m/m", "pitch_nm_per_m_lateral": "N m/m",
    "roll_nms_per_m_lateral": "N m s/m", "pitch_nms_per_m_lateral": "N m s/m",
}


#: where :func:`match_geometric_weights` starts (Bryson values of attitude [rad], position [m],
#: angular velocity [rad/s], velocity [m/s], every axis)
MATCH_START = (0.05, 0.02, 0.5, 0.2)


def _hover(config, timestep):
    """(lin, allocation, discrete (A, B) and nominal rotor speeds at hover, hover thrust)."""
    cfg, model, al, lin = _vehicle(config, timestep)
    hover = figure_eight_reference(0.0, 2, amplitude=(0, 0, 0), yaw_amplitude=0.0, q_amplitude=np.zeros(6))
    flat = gd.flat_inverse_dynamics(model, hover.com, hover.yaw, hover.q, 2)
    C, Vb, q, qd, Wb, tau, _, _, x = lin.nominal(flat, hover.q)
    return lin, al, lin.discrete(C, Vb, q, qd, Wb, tau, x), x, float(flat.thrust[0])


def _equivalent(K, lin, al, x) -> dict:
    """The LQR gain ``K`` read as the geometric controller's gains (:data:`EQUIVALENT_GAINS`): the static
    body wrench per unit base error (or base velocity error), with the joints on their reference and
    the actuators in their steady state under the feedback -- the rotor speed ``x`` equal to its
    command, the motors at rest with the spring torque equal to theirs. ``K`` feeds back the rotor
    and motor states too, so that steady state is not the nominal one (the rotor-speed feedback
    alone would otherwise be missed: it resists the change of speed a disturbance needs)."""
    nr, ne, nc, nv = lin.nr, lin.ne, lin.nc, lin.nv
    th, xs = slice(2 * nv, 2 * nv + ne), slice(nc, nc + nr)
    Kr, Km = K[:nr], K[nr:nr + ne]
    # unknowns (dx, dtheta): (I + K_rx) dx + K_rth dtheta = -K_r,i ; K_mx dx + (k + K_mth) dtheta = -K_m,i
    M = np.block([[np.eye(nr) + Kr[:, xs], Kr[:, th]], [Km[:, xs], np.diag(lin.K) + Km[:, th]]])
    cols = (0, 1, 2, nv, nv + 1, nv + 2, 5, nv + 5, 4, 3, nv + 4, nv + 3)
    rhs = -np.vstack([Kr[:, cols], Km[:, cols]])
    dx = np.linalg.solve(M, rhs)[:nr]
    G = al.A @ np.diag(2.0 * x) @ dx          # (6, 12): the wrench per unit error of each column
    vals = (-G[0, 0], -G[1, 1], -G[2, 2], -G[0, 3], -G[1, 4], -G[2, 5], -G[5, 6], -G[5, 7],
            G[0, 8], -G[1, 9], G[0, 10], -G[1, 11])
    return {k: float(a) for k, a in zip(EQUIVALENT_GAINS, vals)}


def geometric_equivalent(gains: FlatnessGains | None = None, thrust: float | None = None) -> dict:
    """The geometric controller's gains at hover in the terms of :func:`equivalent_stiffness`: ``k_R``,
    ``k_W`` per axis, ``k_x``, ``k_v`` on the height, and per metre (and m/s) of lateral error the
    moment ``k_R k_x / T`` (``k_R k_v / T``) of the tilt its CoM loop commands (hover thrust ``T``)."""
    g = FlatnessGains() if gains is None else gains
    T = _hover(None, 1e-3)[4] if thrust is None else float(thrust)
    kR, kW = g.kp_rotation, g.kd_rotation
    vals = (kR[0], kR[1], kR[2], kW[0], kW[1], kW[2], g.kp_position, g.kd_position, kR[0] * g.kp_position / T,
            kR[1] * g.kp_position / T, kR[0] * g.kd_position / T, kR[1] * g.kd_position / T)
    return {k: float(a) for k, a in zip(EQUIVALENT_GAINS, vals)}


def equivalent_stiffness(weights: LqrWeights | None = None, config=None, timestep: float = 1e-3) -> dict:
    """The stationary LQR gain at hover read as the geometric controller's gains
    (:data:`EQUIVALENT_GAINS`; rotor speeds in steady state, no lag), for the README's comparison."""
    from geodyn_ros.control.lqr import dare_gain
    lin, al, (A, B), x, _ = _hover(config, timestep)
    w = LqrWeights() if weights is None else weights
    _, K = dare_gain(A, B, w.Q(lin.n, lin.ne, lin.nr), w.R(lin.nr, lin.ne, lin.nq))
    return _equivalent(K, lin, al, x)


def match_geometric_weights(gains: FlatnessGains | None = None, weights: LqrWeights | None = None, config=None,
                            timestep: float = 1e-3):
    """The per-axis base weights (:data:`~geodyn_ros.control.lqr.PER_AXIS`, 12 values) whose stationary
    LQR gain at hover has the geometric controller's gains (:func:`geometric_equivalent`), by least
    squares on the logarithms; the other weights are kept from ``weights``. Returns
    ``(LqrWeights, largest relative mismatch)``. A diagonal ``Q`` cannot match all 12 exactly."""
    import dataclasses

    import scipy.optimize as so

    from geodyn_ros.control.lqr import PER_AXIS, dare_gain
    lin, al, (A, B), x, T = _hover(config, timestep)
    w0 = LqrWeights() if weights is None else weights
    target = np.array(list(geometric_equivalent(gains, T).values()))
    R = w0.R(lin.nr, lin.ne, lin.nq)

    def weights_of(lp):
        v = np.exp(lp).reshape(4, 3)
        return dataclasses.replace(w0, **{k: tuple(v[i]) for i, k in enumerate(PER_AXIS)})

    # the start, and a weak pull towards it (1 % per unit of log): some weights barely act on the 12
    # gains (roll and pitch attitude, once the lateral position weight sets the tilt), and the pull
    # makes the answer unique instead of drifting along those directions
    p0 = np.log(np.repeat(MATCH_START, 3))

    def mismatch(lp):
        _, K = dare_gain(A, B, weights_of(lp).Q(lin.n, lin.ne, lin.nr), R)
        got = np.array(list(_equivalent(K, lin, al, x).values()))
        return np.log(np.maximum(got, 1e-12) / target)

    sol = so.least_squares(lambda lp: np.r_[mismatch(lp), 0.01 * (lp - p0)], p0, max_nfev=500, xtol=1e-10,
                           ftol=1e-10)
    return weights_of(sol.x), float(np.expm1(np.abs(mismatch(sol.x))).max())
