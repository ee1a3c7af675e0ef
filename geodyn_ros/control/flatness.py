"""A flatness-based geometric controller for a collinear multirotor carrying an arm (ROS-free).

The vehicle thrusts along its base ``+z`` only (quadrotor, flat hexarotor, gz-sim's X3/X4), so
its flat outputs are the system CoM ``c``, the base yaw ``psi`` and the joint angles ``q``
(:func:`geodyn_ros.flat_inverse_dynamics`). The law is the geometric SE(3) tracking controller of
Lee, Leok & McClamroch (2010) on the CoM and yaw, with the feedforward of the flat map; the
feedback gains are the same at every feedforward level.

Law (one instant; ``C = (R, p)`` the measured base pose, ``Omega`` the measured body rates,
``c, c'`` the measured system CoM and its rate, from :func:`geodyn_ros.center_of_mass`)::

    e_x = c - c_d,   e_v = c' - c_d'                                              (world)
    F   = T_d R_d e3 - k_x e_x - k_v e_v        (T_d R_d e3 = m (c_d'' - g): exact for the whole body)
    T   = F . R e3                                                                (thrust command)
    R_c = [x_c y_c z_c]:  z_c = F / |F|, x_c = (y_C x z_c) / |y_C x z_c|, y_c = z_c x x_c   (Z-Y-X yaw psi_d)
    e_R = 1/2 vee(R_c^T R - R^T R_c),   e_W = Omega - R^T R_c Omega_d                 (base axes)
    tau = R^T R_c tau_ff - k_R e_R - k_W e_W                  (moment about the base origin, base axes)
    u   = A4^+ (T, tau),  omega_rot = sqrt(u)                   (collinear allocation, Allocation)

Feedforward levels (``level``; the rows of the README table)
------------------------------------------------------------
``"rigid"`` (today's best practice)
    The vehicle is one rigid body with the arm frozen in its *current* shape: mass ``m``, CoM
    offset ``r_c(q)`` and inertia ``J(q)`` about the CoM (:func:`geodyn_ros.centroidal_locked_terms`).
    ``Omega_d`` from the jerk and ``alpha_d`` from the snap by the closed form of
    :func:`geodyn_ros.control.quadrotor.rigid_flat_map`;
    ``tau_ff = J alpha_d + Omega_d x J Omega_d + r_c x (0, 0, T_d)``. Joints: motor-side PD plus
    gravity compensation, ``u_j = g_j(q) + k_p (q_d - theta) + k_d (q_d' - theta')``.
``"ff0"``
    The whole-body flat map at order 0: ``Omega_d``, ``alpha_d``, ``tau_ff`` = its body torque,
    joint motors ``u = tau_d + k_p (q_d - theta) + k_d (q_d' - theta')``.
``"ff1"``
    Plus rotor-lag compensation from the order-1 jets: ``u_d' = A4^+ (T_d', tau_d')``,
    ``omega_cmd = omega_rot + T_lag omega_d'`` with ``omega_d' = u_d' / (2 omega_d)`` of the
    feedforward speeds ``omega_d = sqrt(A4^+ (T_d, tau_ff))`` (ACTUATION.md; ``T_lag`` the up or
    down time constant by the sign).
``"ff2"``
    Plus elastic-joint compensation from order 2 (Spong): ``theta_d = q_d + K^-1 tau_d`` (and its
    two derivatives), ``u = B theta_d'' + tau_d + k_p (theta_d - theta) + k_d (theta_d' - theta')``.

With ideal actuators (no rotor model, rigid joints: the ``ideal`` row) the thrust and moment are
applied directly and the joint torque is ``tau_d + k_p (q_d - q) + k_d (q_d' - q')``.

An arm may mix the two kinds of joint (doc/explanation/any_vehicle.md): the joints of
``elastic`` get the motor laws above, every other joint is rigid and torque-controlled
(``FlatCommand.joint_torque``: ``tau_d`` + PD at ``ff0``..``ff2``, gravity + PD at ``rigid``).
Rotor constants (time constants, speed limits) may differ per rotor; joint gains per joint.

Commanded rotor speeds are clipped to ``[0, max_rot_velocity]`` and motor torques to
``+-max_motor_torque``; the clips are counted. Bad input raises ``ValueError`` naming the argument.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..algorithms.api import center_of_mass
from ..algorithms.eom import gravity_vector
from ..algorithms.flat import FlatResult
from ..algorithms.reduced import centroidal_locked_terms
from ..model.joint_losses import add_loss_jet, check_joint_losses, loss_jet_order
from ..model.model import Model
from .quadrotor import rigid_flat_map
from .rejection import Rejection, RejectionOptions
from .rotors import Allocation, ElasticJointParams, RotorParams, per_rotor_constant

__all__ = ["FlatnessGains", "FlatnessController", "FlatCommand", "FLATNESS_LEVELS", "commanded_attitude"]

#: feedforward levels (module docstring), in the order of the README table
FLATNESS_LEVELS = ("rigid", "ff0", "ff1", "ff2")
_ORDER = {"rigid": 0, "ff0": 0, "ff1": 1, "ff2": 2}
_E3 = np.array([0.0, 0.0, 1.0])


def _gain(name, v, size=None):
    a = np.array(v, dtype=float)
    if size is not None and a.ndim == 0:
        a = np.full(size, float(a))
    if (size is not None and a.shape != (size,)) or (size is None and a.ndim != 0):
        raise ValueError(f"{name}: expected {'a scalar or ' + str(size) + ' values' if size else 'a scalar'}, got {v!r}")
    if not (np.all(np.isfinite(a)) and np.all(a >= 0)):
        raise ValueError(f"{name}: gains must be finite and >= 0, got {v!r}")
    return a


@dataclass(frozen=True)
class FlatnessGains:
    """Feedback gains of :class:`FlatnessController` (SI units).

    kp_position ``k_x`` [N/m], kd_position ``k_v`` [N s/m] on the CoM; kp_rotation ``k_R``
    [N m/rad] and kd_rotation ``k_W`` [N m s/rad] per base axis (x, y, z; a scalar applies to all
    three); kp_joint [N m/rad], kd_joint [N m s/rad] on the motor (or link) angles: a scalar for
    every joint (kept as a float) or one per model joint (an (n,) sequence, kept as a tuple of
    floats, model joint order).

    Defaults for the 4 kg hexarotor manipulator: a CoM loop of ``sqrt(k_x / m) = 4 rad/s`` with
    damping 0.9; roll/pitch ``sqrt(k_R / J) = 20 rad/s`` (J ~ 0.1 kg m^2 with the arms), damping
    0.8, five times faster than the CoM loop and slower than the rotors (1 / 0.0182 s = 55 rad/s);
    a softer yaw (drag torques give the collinear vehicle little yaw authority); the joint gains
    of the actuated loop (``config/geodyn.yaml``).
    """

    kp_position: float = 64.0
    kd_position: float = 29.0
    kp_rotation: tuple = (40.0, 40.0, 10.0)
    kd_rotation: tuple = (3.2, 3.2, 1.6)
    kp_joint: float = 40.0
    kd_joint: float = 0.5

    def __post_init__(self):
        for name in ("kp_position", "kd_position"):
            object.__setattr__(self, name, float(_gain(name, getattr(self, name))))
        for name in ("kp_rotation", "kd_rotation"):
            object.__setattr__(self, name, tuple(_gain(name, getattr(self, name), 3).tolist()))
        for name in ("kp_joint", "kd_joint"):
            object.__setattr__(self, name, joint_gain(name, getattr(self, name)))


def joint_gain(name, v):
    """A joint gain: a finite ``>= 0`` scalar (returned as a float) or a 1-D sequence of them, one per
    joint (returned as a tuple of floats); ValueError naming ``name`` otherwise."""
    a = np.array(v, dtype=float) if not isinstance(v, (str, bytes)) else np.array(np.nan)
    if a.ndim > 1:
        raise ValueError(f"{name}: expected a scalar or one value per joint, got {v!r}")
    if not (np.all(np.isfinite(a)) and np.all(a >= 0)):
        raise ValueError(f"{name}: gains must be finite and >= 0, got {v!r}")
    return float(a) if a.ndim == 0 else tuple(a.tolist())


def joint_gain_array(name, v, n) -> np.ndarray:
    """(n,) array of the joint gain ``v`` (a scalar repeated, or ``n`` values; ValueError naming ``name``)."""
    a = np.asarray(v, dtype=float)
    if a.ndim == 0:
        return np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: {a.size} values but the model has {n} joints (give a scalar or one per joint)")
    return a.copy()


def effort_limit_array(effort_limits, n) -> np.ndarray:
    """(n,) torque limits [N m] of the rigid joints (``None``: +-inf; ValueError naming ``effort_limits``)."""
    if effort_limits is None:
        return np.full(n, np.inf)
    e = np.array(effort_limits, dtype=float).reshape(-1)
    if e.size == 1 and n != 1:
        e = np.full(n, e[0])
    if e.shape != (n,) or np.any(np.isnan(e)) or np.any(e <= 0):
        raise ValueError(f"effort_limits: expected {n} positive values (inf: no limit), got {effort_limits!r}")
    return e


@dataclass
class FlatCommand:
    """One cycle's output: ``omega`` (n_rot,) rotor speed commands [rad/s] (clipped; empty with
    ideal rotors), ``u`` (n_el,) motor torques [N m] of the elastic joints (clipped; with
    ``elastic=None`` the joint torques (n,), as ``joint_torque``), ``thrust`` [N] and ``torque``
    (3,) [N m] (the body wrench asked of the rotors), the unclipped values, the clip counts of this
    cycle (``motor_saturations`` counts motor and rigid-joint clips), and ``joint_torque`` (n,)
    [N m]: the torques of the rigid (torque-controlled) joints, model joint order, 0 at the
    elastic joints (clipped to the effort limits; ``joint_torque_raw`` unclipped)."""

    omega: np.ndarray
    u: np.ndarray
    thrust: float
    torque: np.ndarray
    omega_raw: np.ndarray
    u_raw: np.ndarray
    rotor_saturations: int
    motor_saturations: int
    joint_torque: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_torque_raw: np.ndarray = field(default_factory=lambda: np.zeros(0))


def commanded_attitude(F, yaw) -> np.ndarray:
    """``R_c`` (3, 3) whose ``z`` axis is along ``F`` (3,) with the Z-Y-X yaw ``yaw`` [rad]
    (ValueError when ``F`` is zero or parallel to ``y_C``)."""
    nF = float(np.linalg.norm(F))
    if not nF > 0.0:
        raise ValueError("F: the commanded force vanished (the thrust direction is undefined)")
    z = F / nF
    yc = np.array([-np.sin(yaw), np.cos(yaw), 0.0])
    u = np.cross(yc, z)
    nu = float(np.linalg.norm(u))
    if not nu > 1e-9:
        raise ValueError("yaw: the commanded thrust axis is parallel to y_C (yaw singularity)")
    x = u / nu
    return np.column_stack([x, np.cross(z, x), z])


def _half_vee(S):
    """``1/2 vee(S)`` of a skew matrix S (3, 3): Lee's attitude error, ``~ theta`` for a small
    rotation ``theta`` between the two frames."""
    return 0.5 * np.array([S[2, 1], S[0, 2], S[1, 0]])


class FlatnessController:
    """The law of the module docstring for one model, allocation and level.

    Rigid joints get ``tau_d + k_p (q_d - q) + k_d (q_d' - q')`` at ``ff0``..``ff2`` and gravity
    compensation ``g_j(q) + k_p (q_d - q) + k_d (q_d' - q')`` at ``rigid``; elastic joints the motor
    laws of the module docstring. A model without joints (n = 0) is accepted.

    Parameters
    ----------
    model : Model
        The vehicle with its rotor joints locked (``load_urdf(..., locked_joints=rotor_joints)``),
        the model the flat map and the measured CoM are evaluated on.
    allocation : Allocation
        Collinear or fully actuated; :meth:`Allocation.allocate_thrust_torque` maps ``(T, tau)``.
    rotors : RotorParams
        Time constants for the lag compensation (``ff1``, ``ff2``), per rotor when they differ.
    elastic : ElasticJointParams or None
        ``K``, ``B`` and the motor torque limit of the elastic joints, which may be any subset of
        the model's joints (or none); every other joint is rigid and torque-controlled, its torque
        in :attr:`FlatCommand.joint_torque`. ``None``: every joint rigid, and
        :attr:`FlatCommand.u` is the joint torque (n,) too (as before mixed joints existed).
    gains : FlatnessGains, optional
    level : ``"rigid"``, ``"ff0"``, ``"ff1"`` or ``"ff2"``.
    ideal_rotors : bool
        The thrust and moment are applied directly (no rotor speeds, no lag compensation).
    gravity : (3,) world gravity [m/s^2].
    lag_timestep : float, optional
        ``None`` (default): the continuous-time lag compensation ``omega + T omega'``. A step ``dt``
        [s]: the exact inverse of gz-sim's discrete filter to first order in the jet, the gain
        ``dt / (1 - exp(-dt / T))`` (~ ``T + dt/2``) in place of ``T`` (as
        :class:`~geodyn_ros.control.actuated.ActuatedController`).
    effort_limits : (n,) or None
        Torque limits [N m] of the rigid joints (model joint order; e.g.
        ``config.effort_limits(model)``); their commands are clipped to ``+-`` these. ``None``: no
        limit.
    rejection : RejectionOptions or None
        What the model misses, rejected (:mod:`geodyn_ros.control.rejection`): the observer's
        wrench as feedforward (``F -= f_e``, ``tau -= n_e`` in base axes, joint torques ``-= r_q``,
        elastic joints' ``theta_d`` shifted by ``-K^-1 r_q`` at ff2), integral action on the CoM
        error (``F -= k_i int e_x``), the thrust-scale estimate (the allocation divided by ``k``, the
        lag jets too) and the CoM estimate (the regulated CoM is ``c + R delta``). None (default)
        or every switch off: the law above, bit for bit. :attr:`rejection` holds the state.
    joint_losses : JointLosses or None
        The joints' damping and dry friction (:mod:`geodyn_ros.model.joint_losses`): their torque
        jet of the reference joint rates is added to ``flat.tau`` (ff0..ff2; rows 0..2 where ff2
        drives a lossy elastic joint, which then needs ``q_d`` rows 0..3). The base rows are
        unchanged (the loss is internal). None (default) or no loss: the law above, bit for bit.
    """

    def __init__(self, model: Model, allocation: Allocation, rotors: RotorParams, elastic: ElasticJointParams | None,
                 gains: FlatnessGains | None = None, level: str = "ff2", *, ideal_rotors: bool = False,
                 gravity=(0.0, 0.0, -9.81), lag_timestep=None, effort_limits=None, rejection=None,
                 joint_losses=None):
        if not isinstance(model, Model):
            raise ValueError(f"model: expected a geodyn_ros Model, got {type(model).__name__}")
        if not isinstance(allocation, Allocation):
            raise ValueError(f"allocation: expected an Allocation, got {type(allocation).__name__}")
        if allocation.n_rotors != rotors.n_rotors:
            raise ValueError(f"rotors: {rotors.n_rotors} rotors but the allocation has {allocation.n_rotors}")
        self.model, self.allocation, self.rotors, self.elastic = model, allocation, rotors, elastic
        self.set_level(level)
        self._effort = effort_limit_array(effort_limits, model.n_joints)
        self.set_gains(FlatnessGains() if gains is None else gains)
        self.ideal_rotors = bool(ideal_rotors)
        self.gravity = np.array(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ValueError(f"gravity: expected a finite 3-vector, got {gravity!r}")
        names = model.joint_names
        if elastic is not None:
            missing = [j for j in elastic.joints if j not in names]
            if missing:
                raise ValueError(f"elastic: joints {missing} are not joints of the model {names}")
            self.idx = np.array([names.index(j) for j in elastic.joints], dtype=np.int64)
            self._Kinv = 1.0 / elastic.stiffness
        else:
            self.idx = np.arange(len(names), dtype=np.int64)
            self._Kinv = np.zeros(len(names))
        #: model indices of the rigid (torque-controlled) joints
        self.rigid_idx = (np.arange(len(names), dtype=np.int64) if elastic is None else
                          np.array([k for k, j in enumerate(names) if j not in elastic.joints], dtype=np.int64))
        self.mass = model.total_mass
        Tu, Td = per_rotor_constant(rotors, "time_constant_up"), per_rotor_constant(rotors, "time_constant_down")
        if lag_timestep is None:
            self._lag_gain = (Tu, Td)
        else:
            dt = float(lag_timestep)
            if not (np.isfinite(dt) and dt > 0):
                raise ValueError(f"lag_timestep: expected a finite positive step [s], got {lag_timestep!r}")
            self._lag_gain = (dt / -np.expm1(-dt / Tu), dt / -np.expm1(-dt / Td))
        self.rotor_saturations = 0
        self.motor_saturations = 0
        self.joint_losses = check_joint_losses(joint_losses, names)
        #: the loss jet's order: 2 where ff2 drives a lossy elastic joint's motor (tau''), else 0
        self._loss_order = loss_jet_order(self.joint_losses, self.idx if elastic is not None else ())
        if rejection is not None and not isinstance(rejection, RejectionOptions):
            raise ValueError(f"rejection: expected RejectionOptions or None, got {type(rejection).__name__}")
        #: the :class:`~geodyn_ros.control.rejection.Rejection` state (None: every option off)
        self.rejection = None
        if rejection is not None and rejection.active:
            self.rejection = Rejection(rejection, model, allocation, rotors, elastic, gravity=self.gravity,
                                       ideal_rotors=self.ideal_rotors, position_gain=self.gains.kp_position)

    # ------------------------------------------------------------------ configuration
    def set_gains(self, gains: FlatnessGains) -> None:
        """Replace the feedback gains (live tuning); the next :meth:`command` uses them."""
        if not isinstance(gains, FlatnessGains):
            raise ValueError(f"gains: expected FlatnessGains, got {type(gains).__name__}")
        n = self.model.n_joints
        self._kpj = joint_gain_array("kp_joint", gains.kp_joint, n)
        self._kdj = joint_gain_array("kd_joint", gains.kd_joint, n)
        self.gains = gains
        self._kR = np.array(gains.kp_rotation)
        self._kW = np.array(gains.kd_rotation)
        if getattr(self, "rejection", None) is not None:
            self.rejection.set_gains(gains.kp_position)

    def set_level(self, level) -> None:
        """Switch the feedforward level (``"rigid"``, ``"ff0"``, ``"ff1"`` or ``"ff2"``)."""
        if level not in FLATNESS_LEVELS:
            raise ValueError(f"level: expected one of {FLATNESS_LEVELS}, got {level!r}")
        self.level = level

    @property
    def required_order(self) -> int:
        """The order of the flat-map jets the level reads (0, 0, 1, 2)."""
        return _ORDER[self.level]

    # ------------------------------------------------------------------ references
    def rotor_reference(self, flat: FlatResult) -> tuple:
        """``(omega_d, omega_d')`` [rad/s, rad/s^2] of the feedforward thrust and moment alone."""
        u = self.allocation.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0])
        om = np.sqrt(np.clip(u, 0.0, None))
        if len(flat.thrust) > 1:
            du = self.allocation.allocate_thrust_torque(flat.thrust[1], flat.body_torque[1])
            return om, du / (2.0 * np.maximum(om, 1e-9))
        return om, np.zeros_like(om)

    def motor_reference(self, q_d, tau_d) -> tuple:
        """``(theta_d, theta_d')`` of the elastic joints (Spong's inverse; rows q_d, q_d' and tau_d, tau_d';
        with ``joint_losses`` their jet added to ``tau_d``, and ``q_d`` needs rows 0..2)."""
        i = self.idx
        if self.joint_losses is not None:
            tau_d = add_loss_jet(self.joint_losses, q_d, tau_d, 1)
        return q_d[0, i] + self._Kinv * tau_d[0, i], q_d[1, i] + self._Kinv * tau_d[1, i]

    # ------------------------------------------------------------------ the law
    def command(self, C, V_body, q, qd, theta, thetad, com_d, yaw_d, q_d, flat: FlatResult, *, t=None,
                rotor_speed=None) -> FlatCommand:
        """Rotor speeds (or thrust and moment) and motor torques for one cycle.

        Parameters
        ----------
        C : (4, 4) measured base pose; V_body : (6,) measured body twist ``(w_b, v_b)``.
        q, qd : (n,) link angles and rates; theta, thetad : (n_el,) motor angles and rates
            (ignored without elastic joints).
        com_d : (>= 2, 3) desired CoM jet ``c_d, c_d'`` (``rigid``: >= 5 rows, up to the snap).
        yaw_d : (>= 1,) desired yaw jet (``rigid``: >= 3 rows).
        q_d : (>= 3, n) desired joint jet.
        flat : FlatResult of the reference (``gd.flat_inverse_dynamics`` of ``com_d, yaw_d, q_d``)
            of order ``>= required_order``.
        t : float, optional
            The sample time [s] (with ``rejection``: its period; else ``RejectionOptions.timestep``).
        rotor_speed : (n_rot,), optional
            Measured rotor speeds [rad/s] for the observer (default: the rotor model on the commands).
        """
        lvl, g = self.level, self.gains
        r = self.required_order
        if len(flat.thrust) < r + 1:
            raise ValueError(f"flat: level {lvl!r} needs the flat-map jets of order >= {r}, got order "
                             f"{len(flat.thrust) - 1}")
        C = np.asarray(C, float)
        R, p = C[:3, :3], C[:3, 3]
        Vb = np.asarray(V_body, float)
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        com_d, yaw_d, q_d = np.asarray(com_d, float), np.asarray(yaw_d, float), np.asarray(q_d, float)
        for name, a in (("C", C), ("V_body", Vb), ("q", q), ("qd", qd), ("com_d", com_d), ("yaw_d", yaw_d),
                        ("q_d", q_d)):
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: contains NaN or Inf")
        model = self.model
        rj = self.rejection
        if rj is not None:
            t, dt = rj.step_time(t)
            rj.observe(t, C, Vb, q, qd, theta, rotor_speed)
        # measured CoM and its rate (exact kinematics)
        Vs = np.empty((1, 6))
        Vs[0, :3] = R @ Vb[:3]
        Vs[0, 3:] = R @ Vb[3:] + np.cross(p, Vs[0, :3])
        cm = center_of_mass(model, C, Vs, np.stack([q, qd]), order=1)
        if rj is not None and rj.options.com_estimate:      # the plant's CoM: the model's plus delta
            cm[0] += R @ rj.com_offset
            cm[1] += R @ np.cross(Vb[:3], rj.com_offset)
        # desired attitude and rates
        R_d = flat.base_pose[:3, :3]
        T_d = float(flat.thrust[0])
        if lvl == "rigid":
            ct = _centroidal(model, q)
            rf = rigid_flat_map(self.mass, ct[1], ct[0], com_d[2], com_d[3], com_d[4], yaw_d[0], yaw_d[1], yaw_d[2],
                                self.gravity)
            W_d, tau_ff = rf.omega, rf.torque
        else:
            W_d = R_d.T @ flat.base_twist[0, :3]
            tau_ff = flat.body_torque[0]
        # CoM loop -> thrust and commanded attitude
        e_x = cm[0] - com_d[0]
        e_v = cm[1] - com_d[1]
        F = T_d * R_d[:, 2] - g.kp_position * e_x - g.kd_position * e_v
        if rj is not None:
            We = rj.wrench_body()
            if We is not None:
                F = F - R @ We[3:]
            F = F - rj.integral_force(e_x, dt)
        T = float(F @ R[:, 2])
        R_c = commanded_attitude(F, float(yaw_d[0]))
        RtRc = R.T @ R_c
        e_R = _half_vee(R_c.T @ R - R.T @ R_c)
        e_W = Vb[:3] - RtRc @ W_d
        tau = RtRc @ tau_ff - self._kR * e_R - self._kW * e_W
        re = None
        if rj is not None:
            if We is not None:
                tau = tau - We[:3]
            re = rj.joint_torque()
        # joints: rigid ones torque-controlled, elastic ones through their motors
        tau_d = flat.tau
        if self.joint_losses is not None and lvl != "rigid":
            tau_d = add_loss_jet(self.joint_losses, q_d, tau_d, self._loss_order if lvl == "ff2" else 0)
        i, ri = self.idx, self.rigid_idx
        kp, kd = self._kpj, self._kdj
        grav = _gravity_torque(model, C, q, self.gravity) if lvl == "rigid" else None
        jt_raw = np.zeros(model.n_joints)
        if ri.size:
            v = kp[ri] * (q_d[0, ri] - q[ri]) + kd[ri] * (q_d[1, ri] - qd[ri])
            jt_raw[ri] = v + (grav[ri] if lvl == "rigid" else tau_d[0, ri])
            if re is not None:
                jt_raw[ri] -= re[ri]
        jt = np.clip(jt_raw, -self._effort, self._effort)
        n_mot = int(np.sum(jt != jt_raw))
        if self.elastic is None:            # every joint rigid: u is the joint torque (as before mixed joints)
            u_raw, u = jt_raw, jt
        else:
            th = np.zeros(0) if theta is None and not i.size else np.asarray(theta, float)
            thd = np.zeros(0) if thetad is None and not i.size else np.asarray(thetad, float)
            if not (np.all(np.isfinite(th)) and np.all(np.isfinite(thd))):
                raise ValueError("theta: contains NaN or Inf" if not np.all(np.isfinite(th)) else
                                 "thetad: contains NaN or Inf")
            if th.shape != (i.size,) or thd.shape != (i.size,):
                raise ValueError(f"theta, thetad: expected {i.size} motor angles and rates (one per elastic joint), "
                                 f"got shapes {th.shape} and {thd.shape}")
            if lvl == "ff2":
                K = self._Kinv
                th_d = q_d[0, i] + K * tau_d[0, i]
                thd_d = q_d[1, i] + K * tau_d[1, i]
                thdd_d = q_d[2, i] + K * tau_d[2, i]
                u_raw = (self.elastic.motor_inertia * thdd_d + tau_d[0, i] + kp[i] * (th_d - th)
                         + kd[i] * (thd_d - thd))
            else:
                u_raw = kp[i] * (q_d[0, i] - th) + kd[i] * (q_d[1, i] - thd)
                u_raw = u_raw + (grav[i] if lvl == "rigid" else tau_d[0, i])
            if re is not None:       # the external torque, cancelled (ff2: theta_d shifted by -K^-1 r_q too)
                u_raw = u_raw - re[i] - (kp[i] * self._Kinv * re[i] if lvl == "ff2" else 0.0)
            umax = self.elastic.max_motor_torque
            u = np.clip(u_raw, -umax, umax)
            n_mot += int(np.sum(u != u_raw))
        # rotors
        k = 1.0 if rj is None else rj.thrust_scale     # the plant's rotors give k A omega^2
        if self.ideal_rotors:
            om_raw = om = np.zeros(0)
            n_rot = 0
            if k != 1.0:
                T, tau = T / k, tau / k
        else:
            al = self.allocation
            ur = al.allocate_thrust_torque(T, tau)
            if k != 1.0:
                ur = ur / k
            om_raw = np.sqrt(np.clip(ur, 0.0, None))
            if r >= 1 and lvl != "rigid":
                # omega_d' = u_d' / (2 omega_d) of the feedforward alone (ACTUATION.md): a feedback that
                # drives a rotor's u to 0 must not put the rotor speed in the denominator
                du = al.allocate_thrust_torque(float(flat.thrust[1]), RtRc @ flat.body_torque[1])
                om_d = np.sqrt(np.clip(al.allocate_thrust_torque(T_d, RtRc @ tau_ff), 0.0, None))
                if k != 1.0:
                    du, om_d = du / k, om_d / np.sqrt(k)
                omd = du / (2.0 * np.maximum(om_d, 1e-6))
                om_raw = om_raw + np.where(omd > 0.0, self._lag_gain[0], self._lag_gain[1]) * omd
            om = np.clip(om_raw, al.min_rot_velocity, al.max_rot_velocity)
            n_rot = int(np.sum((ur < 0.0) | (om != om_raw)))   # a negative u^2 or a speed clipped
        if not (np.all(np.isfinite(om)) and np.all(np.isfinite(u)) and np.isfinite(T) and np.all(np.isfinite(tau))
                and np.all(np.isfinite(jt))):
            raise ValueError("inputs: the command is not finite")
        self.rotor_saturations += n_rot
        self.motor_saturations += n_mot
        if rj is not None:
            rj.sent(om, jt if self.elastic is not None else u, T, tau, n_rot > 0)
        return FlatCommand(om, u, T, tau, om_raw, u_raw, n_rot, n_mot, jt, jt_raw)


def _centroidal(model, q):
    """(CoM offset r_c (3,), inertia about the CoM (3, 3)), base axes, of the robot frozen at ``q``."""
    t = centroidal_locked_terms(model, q)
    return t.com, t.M_b[:3, :3]


def _gravity_torque(model, C, q, gravity):
    """(n,) joint torques that hold the arm against gravity at ``(C, q)``: the joint rows of the
    gravity vector of the equations of motion (``gd.gravity_vector``)."""
    return gravity_vector(model, C, q, gravity=tuple(gravity))[6:]
