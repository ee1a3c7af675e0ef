"""A controller that consumes the feedforward jets: rotor-lag and elastic-joint compensation.

ROS-free. Inputs are the jets that ``geodyn_node`` publishes (``gd.inverse_dynamics`` of the
reference at order ``r``): the desired body wrench jet ``W_b,d^(0..r)`` (base-link axes of the
*desired* pose, about its origin, moment first, exact derivatives of the moving frame:
``gd.convert_wrench(..., "spatial", "body")``) and the joint torque jet ``tau_d^(0..r)``.

Levels (``feedforward_order``; the rows of the README table)
-----------------------------------------------------------
``None`` ("pd")
    Feedback only: ``W = W_fb``, motor torque ``u = Kp (q_d - theta) + Kd (q_d' - theta')``.
``0`` ("ff0")
    ``u_rot = A^+ (W_b,d + W_fb)``, ``omega = sqrt(u_rot)``; ``u = tau_d + Kp (q_d - theta) +
    Kd (q_d' - theta')``: the rigid, lag-free actuator assumption.
``1`` ("ff1")
    Plus rotor-lag compensation from the first derivative (ACTUATION.md):
    ``omega_cmd = omega + T omega_d'`` with ``omega_d' = (A^+ W_b,d') / (2 omega_d)``, ``omega_d =
    sqrt(A^+ W_b,d)`` of the feedforward alone, ``T`` the up or down time constant by the sign of
    ``omega_d'``.
``2`` ("ff2")
    Plus Spong's elastic-joint inverse: ``theta_d = q_d + K^-1 tau_d``,
    ``theta_d' = q_d' + K^-1 tau_d'``, ``theta_d'' = q_d'' + K^-1 tau_d''`` and
    ``u = B theta_d'' + tau_d + Kp (theta_d - theta) + Kd (theta_d' - theta')``.

``W_fb`` is the SE(3) feedback of :func:`geodyn_ros.control.feedback.tracking_command` (same
gains for every level; its ``e_R = vee(R_d^T R - R^T R_d)`` is twice Lee's), added as a wrench before allocation. ``W_b,d`` is rotated from the
desired into the actual base frame as there. Commanded speeds are clipped to
``[0, max_rot_velocity]`` and motor torques to ``+-max_motor_torque``; the clips are counted.
Level ``k`` needs jets of order ``>= k`` (``ValueError`` naming ``order``).

Joints not in ``elastic`` are rigid and torque-controlled (``ActuatedCommand.joint_torque``):
``tau_d + Kp (q_d - q) + Kd (q_d' - q')`` at ff0..ff2, gravity + PD at pd, clipped to their
effort limits (doc/explanation/any_vehicle.md). Time constants and speed limits may differ per
rotor, ``Kp``/``Kd`` per joint.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..algorithms.eom import gravity_vector
from ..model.joint_losses import add_loss_jet, check_joint_losses, loss_jet_order
from .feedback import TrackingGains
from .flatness import effort_limit_array, joint_gain_array
from .rejection import Rejection, RejectionOptions
from .rotors import Allocation, ElasticJointParams, RotorParams, per_rotor_constant

__all__ = ["ActuatedController", "ActuatedCommand", "FEEDFORWARD_LEVELS", "level_name"]

#: feedforward levels: None = feedback only, 0, 1, 2 (module docstring)
FEEDFORWARD_LEVELS = (None, 0, 1, 2)


@njit(cache=True, error_model="numpy")
def _command_kernel(C, Vb, q, qd, th, thd, Cd, Vbd, Qd, W, tau, gains, kp_q, kd_q, level, Ainv, lag_up, lag_down,
                    Kinv, B, idx, wmin, wmax, umax, ridx, grav, tlim, om_out, u_out, om_raw, u_raw, jt_out, jt_raw,
                    Wx, has_x):
    """The law of the module docstring in one compiled pass (the same formulas as
    :func:`geodyn_ros.control.feedback.tracking_command` for the feedback). Returns
    ``(status, rotor clips, motor clips)``; status 1 = a non-finite input or command.

    gains (4,): kp_p, kd_p, kp_R, kd_R; kp_q, kd_q (n,): per model joint; lag_up, lag_down, wmin,
    wmax (n_rot,): per rotor; Kinv, B, umax (n_el,) and idx (n_el,): the elastic joints; ridx: the
    rigid joints, grav (n,) their gravity torques (used at level -1), tlim (n,) their limits;
    jt_out, jt_raw (n,): the rigid joints' torques (0 elsewhere; the motor clips count theirs); Wx (6,):
    a body wrench added to the commanded one when ``has_x`` (the rejection's, :mod:`.rejection`)."""
    # the rows the level reads must be finite
    r = 0 if level < 0 else level
    ok = True
    for a in (C.ravel(), Vb, q, qd, th, thd, Cd.ravel(), Vbd):
        for x in a:
            if not np.isfinite(x):
                ok = False
    for k in range(min(3, Qd.shape[0])):
        for x in Qd[k]:
            if not np.isfinite(x):
                ok = False
    for k in range(r + 1):
        for x in W[k]:
            if not np.isfinite(x):
                ok = False
        for x in tau[k]:
            if not np.isfinite(x):
                ok = False
    if not ok:
        return 1, 0, 0
    kp_p, kd_p, kp_R, kd_R = gains[0], gains[1], gains[2], gains[3]
    R = np.ascontiguousarray(C[:3, :3])
    Rd = np.ascontiguousarray(Cd[:3, :3])
    RtRd = R.T @ Rd
    e_p = C[:3, 3] - Cd[:3, 3]
    e_v = R @ Vb[3:] - Rd @ Vbd[3:]
    M = Rd.T @ R - R.T @ Rd
    e_R = 0.5 * np.array([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]])
    e_w = Vb[:3] - RtRd @ Vbd[:3]
    Wc = np.empty(6)
    Wc[3:] = R.T @ (-kp_p * e_p - kd_p * e_v)
    Wc[:3] = -kp_R * e_R - kd_R * e_w
    if level >= 0:
        Wc[:3] += RtRd @ W[0, :3]
        Wc[3:] += RtRd @ W[0, 3:]
    if has_x:
        for i in range(6):
            Wc[i] += Wx[i]
    u_rot = Ainv @ Wc
    n_rot = u_rot.shape[0]
    clips_r = 0
    for i in range(n_rot):
        if u_rot[i] < 0.0:
            clips_r += 1
            om_raw[i] = 0.0
        else:
            om_raw[i] = np.sqrt(u_rot[i])
    if level >= 1:
        # omega_d' = u_d' / (2 omega_d) of the feedforward alone (ACTUATION.md), not of the
        # feedback-included speed: a feedback driving a rotor's u to 0 must not blow the term up
        dW = np.empty(6)
        dW[:3] = RtRd @ W[1, :3]
        dW[3:] = RtRd @ W[1, 3:]
        du = Ainv @ dW
        W0 = np.empty(6)
        W0[:3] = RtRd @ W[0, :3]
        W0[3:] = RtRd @ W[0, 3:]
        ud = Ainv @ W0
        for i in range(n_rot):
            omd = du[i] / (2.0 * max(np.sqrt(max(ud[i], 0.0)), 1e-6))
            om_raw[i] += (lag_up[i] if omd > 0.0 else lag_down[i]) * omd
    ne = idx.shape[0]
    for k in range(ne):
        j = idx[k]
        if level == 2:
            th_d = Qd[0, j] + Kinv[k] * tau[0, j]
            thd_d = Qd[1, j] + Kinv[k] * tau[1, j]
            thdd_d = Qd[2, j] + Kinv[k] * tau[2, j]
            u_raw[k] = B[k] * thdd_d + tau[0, j] + kp_q[j] * (th_d - th[k]) + kd_q[j] * (thd_d - thd[k])
        else:
            u_raw[k] = kp_q[j] * (Qd[0, j] - th[k]) + kd_q[j] * (Qd[1, j] - thd[k])
            if level >= 0:
                u_raw[k] += tau[0, j]
    for j in range(jt_raw.shape[0]):
        jt_raw[j] = 0.0
    for k in range(ridx.shape[0]):
        j = ridx[k]
        jt_raw[j] = kp_q[j] * (Qd[0, j] - q[j]) + kd_q[j] * (Qd[1, j] - qd[j])
        jt_raw[j] += tau[0, j] if level >= 0 else grav[j]
    for i in range(n_rot):
        if not np.isfinite(om_raw[i]):
            return 1, 0, 0
        v = min(max(om_raw[i], wmin[i]), wmax[i])
        if v != om_raw[i]:
            clips_r += 1
        om_out[i] = v
    clips_m = 0
    for k in range(ne):
        if not np.isfinite(u_raw[k]):
            return 1, 0, 0
        v = min(max(u_raw[k], -umax[k]), umax[k])
        if v != u_raw[k]:
            clips_m += 1
        u_out[k] = v
    for j in range(jt_raw.shape[0]):
        if not np.isfinite(jt_raw[j]):
            return 1, 0, 0
        v = min(max(jt_raw[j], -tlim[j]), tlim[j])
        if v != jt_raw[j]:
            clips_m += 1
        jt_out[j] = v
    return 0, clips_r, clips_m


def level_name(level) -> str:
    """``"pd"``, ``"ff0"``, ``"ff1"`` or ``"ff2"``."""
    return "pd" if level is None else f"ff{level}"


@dataclass
class ActuatedCommand:
    """One cycle's output: ``omega`` (n_rot,) rotor speed commands [rad/s] (clipped), ``u`` (n_el,)
    motor torques [N m] of the elastic joints (clipped; with ``elastic=None`` the joint torques
    (n,), as ``joint_torque``), the unclipped values, the clip counts of this cycle
    (``motor_saturations`` counts motor and rigid-joint clips), and ``joint_torque`` (n,) [N m]:
    the torques of the rigid (torque-controlled) joints, model joint order, 0 at the elastic
    joints (clipped to the effort limits; ``joint_torque_raw`` unclipped)."""

    omega: np.ndarray
    u: np.ndarray
    omega_raw: np.ndarray
    u_raw: np.ndarray
    rotor_saturations: int
    motor_saturations: int
    joint_torque: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_torque_raw: np.ndarray = field(default_factory=lambda: np.zeros(0))


class ActuatedController:
    """Feedforward (orders 0..2) + feedback for a fully actuated multirotor with elastic joints.

    Parameters
    ----------
    allocation : Allocation
        ``W_b = A omega^2`` of the base (fully actuated, checked by :class:`Allocation`).
    rotors : RotorParams
        Time constants [s] (``> 0``) for the lag compensation, per rotor when they differ.
    elastic : ElasticJointParams or None
        ``K`` [N m/rad], ``B`` [kg m^2] (``> 0``) and the motor torque limit of the elastic joints:
        any subset of ``joint_names`` (or none). Every other joint is rigid and torque-controlled:
        ``tau_d + Kp (q_d - q) + Kd (q_d' - q')`` at ff0..ff2, gravity ``g_j(q)`` + the PD at
        ``pd``, clipped to ``effort_limits``, in :attr:`ActuatedCommand.joint_torque`. ``None``:
        every joint rigid (and :attr:`ActuatedCommand.u` is the joint torque (n,) too).
    joint_names : sequence of str
        The model's joint order (the columns of ``q``, ``tau``); every elastic joint must be in it.
    gains : TrackingGains
        Feedback gains, the same for every level. The joint gains act on the motor angles (elastic
        joints) or the link angles (rigid joints); ``kp_joint``/``kd_joint`` scalar or one per joint.
    feedforward_order : None, 0, 1 or 2
        The level (module docstring).
    lag_timestep : float, optional
        ``None`` (default): the continuous-time compensation ``omega_d + T omega_d'``. A step
        ``dt`` [s]: the exact inverse of the discrete filter (ACTUATION.md) to first order in the
        jet, ``u(k) = (omega_d(t_k + dt) - a omega_d(t_k)) / (1 - a)`` with
        ``omega_d(t_k + dt) ~ omega_d + dt omega_d'``, i.e. the gain ``dt / (1 - a)`` ~
        ``T + dt/2`` in place of ``T`` (``a = exp(-dt/T)``).
    effort_limits : (n,) or None, keyword
        Torque limits [N m] of the rigid joints (e.g. ``config.effort_limits(model)``); None: none.
    model : Model, keyword
        Needed when there are rigid joints: their gravity torques at the ``pd`` level
        (``gd.gravity_vector`` at the measured state); ``gravity`` (3,) [m/s^2] is the world's.
    rejection : RejectionOptions or None, keyword
        What the model misses, rejected (:mod:`geodyn_ros.control.rejection`; needs ``model``): the
        observer's body wrench subtracted from the commanded one and its joint rows from
        ``tau_d`` (ff0..ff2; the pd level feeds nothing forward), integral action on the base
        position (world) and attitude (``e_R``), the thrust scale dividing the allocation (the lag
        jets too). The CoM estimate does not apply (the base pose is tracked; a CoM error needs
        only the moment, which the observer gives). None or every switch off: the law above, bit
        for bit. :attr:`rejection` holds the state.
    joint_losses : JointLosses or None, keyword
        The joints' damping and dry friction (:mod:`geodyn_ros.model.joint_losses`, e.g.
        ``joint_losses_from_urdf(urdf, model.joint_names)``): their torque jet of the reference
        joint rates is added to ``tau_d`` (ff0..ff2; rows 0..2 where ff2 drives a lossy elastic
        joint, which then needs ``q_d`` rows 0..3). None (default) or no loss: the law above, bit for bit.
    """

    def __init__(self, allocation: Allocation, rotors: RotorParams, elastic: ElasticJointParams | None, joint_names,
                 gains: TrackingGains | None = None, feedforward_order=2, lag_timestep=None, *,
                 effort_limits=None, model=None, gravity=(0.0, 0.0, -9.81), rejection=None, joint_losses=None):
        if not isinstance(allocation, Allocation):
            raise ValueError(f"allocation: expected an Allocation, got {type(allocation).__name__}")
        if feedforward_order not in FEEDFORWARD_LEVELS or isinstance(feedforward_order, bool):
            raise ValueError(f"feedforward_order: expected None, 0, 1 or 2, got {feedforward_order!r}")
        if allocation.collinear:
            raise ValueError("allocation: a collinear (under-actuated) rotor set, which cannot produce the lateral "
                             "forces this controller feeds forward; use geodyn_ros.control.FlatnessController")
        if allocation.n_rotors != rotors.n_rotors:
            raise ValueError(f"rotors: {rotors.n_rotors} rotors but the allocation has {allocation.n_rotors}")
        self.allocation, self.rotors, self.elastic = allocation, rotors, elastic
        self.gains = TrackingGains() if gains is None else gains
        self.level = feedforward_order
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        el_joints = () if elastic is None else elastic.joints
        missing = [j for j in el_joints if j not in self.joint_names]
        if missing:
            raise ValueError(f"elastic: joints {missing} are not in joint_names {self.joint_names}")
        self.idx = np.array([self.joint_names.index(j) for j in el_joints], dtype=np.int64)
        #: model indices of the rigid (torque-controlled) joints
        self.rigid_idx = np.array([k for k, j in enumerate(self.joint_names) if j not in el_joints], dtype=np.int64)
        if self.rigid_idx.size and model is None:
            raise ValueError(f"model: the rigid joints {[self.joint_names[k] for k in self.rigid_idx]} need the model "
                             "(their gravity torques at the pd level); pass model=")
        if model is not None and tuple(model.joint_names) != self.joint_names:
            raise ValueError(f"model: its joints {tuple(model.joint_names)} differ from joint_names {self.joint_names}")
        self.model = model
        self.gravity = np.array(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ValueError(f"gravity: expected a finite 3-vector, got {gravity!r}")
        self._Kinv = np.ascontiguousarray(np.zeros(0) if elastic is None else 1.0 / elastic.stiffness)
        self._B = np.ascontiguousarray(np.zeros(0) if elastic is None else elastic.motor_inertia, dtype=float)
        self._umax = np.ascontiguousarray(np.broadcast_to(np.asarray(
            10.0 if elastic is None else elastic.max_motor_torque, float), (len(el_joints),)))
        self._tlim = effort_limit_array(effort_limits, n)
        self._zeros_n = np.zeros(n)
        self._Ainv = allocation.A_pinv
        nr = allocation.n_rotors
        self._wmax = np.ascontiguousarray(np.broadcast_to(np.asarray(allocation.max_rot_velocity, float), (nr,)))
        self._wmin = np.ascontiguousarray(np.broadcast_to(np.asarray(allocation.min_rot_velocity, float), (nr,)))
        self.rotor_saturations = 0
        self.motor_saturations = 0
        self.set_gains(self.gains)
        self._Ainv = np.ascontiguousarray(self._Ainv)
        Tu, Td = per_rotor_constant(rotors, "time_constant_up"), per_rotor_constant(rotors, "time_constant_down")
        if lag_timestep is None:
            self._lag_gain = (Tu, Td)
        else:
            dt = float(lag_timestep)
            if not (np.isfinite(dt) and dt > 0):
                raise ValueError(f"lag_timestep: expected a finite positive step [s], got {lag_timestep!r}")
            self._lag_gain = (dt / -np.expm1(-dt / Tu), dt / -np.expm1(-dt / Td))
        self._no_x = np.zeros(6)
        self.joint_losses = check_joint_losses(joint_losses, self.joint_names)
        #: the loss jet's order the level needs: 2 where an elastic joint's motor reads tau'' (ff2), else 0
        self._loss_order = loss_jet_order(self.joint_losses, self.idx)
        if rejection is not None and not isinstance(rejection, RejectionOptions):
            raise ValueError(f"rejection: expected RejectionOptions or None, got {type(rejection).__name__}")
        #: the :class:`~geodyn_ros.control.rejection.Rejection` state (None: every option off)
        self.rejection = None
        if rejection is not None and rejection.active:
            if model is None:
                raise ValueError("model: the rejection options need the model (its observer); pass model=")
            from ..algorithms.reduced import centroidal_locked_terms
            J = float(np.trace(centroidal_locked_terms(model, np.zeros(n)).M_b[:3, :3])) / 3.0
            # e_R = vee(R_d^T R - R^T R_d) is twice the angle: kp_rotation acts as 2 kp per rad (J / 2)
            self.rejection = Rejection(rejection, model, allocation, rotors, elastic, gravity=self.gravity,
                                       position_gain=self.gains.kp_position, rotation_gain=self.gains.kp_rotation,
                                       rotation_inertia=0.5 * J)

    def set_gains(self, gains: TrackingGains) -> None:
        """Replace the feedback gains (live tuning); the next :meth:`command` uses them."""
        if not isinstance(gains, TrackingGains):
            raise ValueError(f"gains: expected TrackingGains, got {type(gains).__name__}")
        n = len(self.joint_names)
        self._kpj = joint_gain_array("kp_joint", gains.kp_joint, n)
        self._kdj = joint_gain_array("kd_joint", gains.kd_joint, n)
        self.gains = gains
        self._gains = np.array([gains.kp_position, gains.kd_position, gains.kp_rotation, gains.kd_rotation],
                               dtype=float)
        if getattr(self, "rejection", None) is not None:
            self.rejection.set_gains(gains.kp_position, gains.kp_rotation)

    def set_level(self, feedforward_order) -> None:
        """Switch the level (``None``, 0, 1 or 2; e.g. feedforward on/off at run time)."""
        if feedforward_order not in FEEDFORWARD_LEVELS or isinstance(feedforward_order, bool):
            raise ValueError(f"feedforward_order: expected None, 0, 1 or 2, got {feedforward_order!r}")
        self.level = feedforward_order

    @property
    def required_order(self) -> int:
        """Jet order the level needs (0 for pd and ff0)."""
        return 0 if self.level is None else self.level

    # ------------------------------------------------------------------ references
    def motor_reference(self, q_d, tau_d) -> tuple:
        """``(theta_d, theta_d')`` of the elastic joints (Spong's inverse; needs ``tau_d`` rows 0, 1).

        q_d : (>= 2, n) rows q_d, q_d'; tau_d : (>= 2, n) rows tau_d, tau_d'.
        With ``joint_losses``: their jet is added to ``tau_d`` (``q_d`` then needs rows 0..2).
        """
        i = self.idx
        if self.joint_losses is not None:
            tau_d = add_loss_jet(self.joint_losses, q_d, tau_d, 1)
        return q_d[0, i] + self._Kinv * tau_d[0, i], q_d[1, i] + self._Kinv * tau_d[1, i]

    def rotor_reference(self, W_b_jet) -> tuple:
        """``(omega_d, omega_d')`` of the feedforward wrench alone (rows W_b,d, W_b,d')."""
        u = self._Ainv @ W_b_jet[0]
        om = np.sqrt(np.clip(u, 0.0, None))
        omd = (self._Ainv @ W_b_jet[1]) / (2.0 * np.maximum(om, 1e-9)) if len(W_b_jet) > 1 else np.zeros_like(om)
        return om, omd

    # ------------------------------------------------------------------ the law
    def command(self, C, V_body, q, qd, theta, thetad, C_d, V_body_d, q_d, W_b_jet, tau_jet, *, t=None,
                rotor_speed=None) -> ActuatedCommand:
        """Rotor speed commands and motor torques for one cycle.

        Parameters
        ----------
        C, C_d : (4, 4) actual and desired base pose.
        V_body, V_body_d : (6,) actual and desired body twists ``(w_b, v_b)``.
        q, qd : (n,) link angles and rates; theta, thetad : (n_el,) motor angles and rates.
        q_d : (>= 3, n) rows ``q_d^(0..2)`` (row 2 used by ff2).
        W_b_jet : (>= r+1, 6) desired body wrench jet (desired base frame).
        tau_jet : (>= r+1, n) desired joint torque jet. ``r`` is :attr:`required_order`; fewer
            rows raise ``ValueError`` naming the argument.
        t : float, optional
            The sample time [s] (with ``rejection``: its period; else ``RejectionOptions.timestep``).
        rotor_speed : (n_rot,), optional
            Measured rotor speeds [rad/s] for the observer (default: the rotor model on the commands).
        """
        lvl = self.level
        r = self.required_order
        if len(W_b_jet) < r + 1:
            raise ValueError(f"W_b_jet: feedforward_order {lvl} needs {r + 1} rows (order >= {r}), got {len(W_b_jet)}")
        if len(tau_jet) < r + 1:
            raise ValueError(f"tau_jet: feedforward_order {lvl} needs {r + 1} rows (order >= {r}), got {len(tau_jet)}")
        f64 = np.ascontiguousarray
        args = [f64(C, dtype=float), f64(V_body, dtype=float), f64(q, dtype=float), f64(qd, dtype=float),
                f64(theta, dtype=float), f64(thetad, dtype=float), f64(C_d, dtype=float),
                f64(V_body_d, dtype=float), f64(q_d, dtype=float), f64(W_b_jet, dtype=float),
                f64(tau_jet, dtype=float)]
        nr, ne, n = self._Ainv.shape[0], len(self.idx), len(self.joint_names)
        om_c, u_c, om, u = np.empty(nr), np.empty(ne), np.empty(nr), np.empty(ne)
        jt_c, jt = np.empty(n), np.empty(n)
        if self.elastic is None:     # theta is unused: any (0,) array will do
            args[4] = args[5] = np.zeros(0)
        for k, (nm, size) in enumerate((("q", n), ("qd", n), ("theta", ne), ("thetad", ne))):
            if args[2 + k].shape != (size,):      # the compiled kernel does not check bounds
                raise ValueError(f"{nm}: expected shape ({size},), got {args[2 + k].shape}")
        if args[8].ndim != 2 or args[8].shape[0] < 3 or args[8].shape[1] != n or args[10].ndim != 2 \
                or args[10].shape[1] != n:
            raise ValueError(f"q_d, tau_jet: expected (>= 3, {n}) and (>= {r + 1}, {n}), got {args[8].shape} and "
                             f"{args[10].shape}")
        grav = self._zeros_n
        if lvl is None and self.rigid_idx.size and np.all(np.isfinite(args[0])) and np.all(np.isfinite(args[2])):
            grav = np.ascontiguousarray(gravity_vector(self.model, args[0], args[2], gravity=tuple(self.gravity))[6:])
        rj, Wx, Ainv = self.rejection, self._no_x, self._Ainv
        if rj is not None:
            Wx, Ainv, args[10] = self._rejection_terms(rj, t, rotor_speed, args)
        if self.joint_losses is not None and lvl is not None:
            args[10] = add_loss_jet(self.joint_losses, args[8], args[10], self._loss_order if lvl == 2 else 0)
        status, ns_r, ns_m = _command_kernel(*args, self._gains, self._kpj, self._kdj, -1 if lvl is None else lvl,
                                             Ainv, self._lag_gain[0], self._lag_gain[1], self._Kinv, self._B,
                                             self.idx, self._wmin, self._wmax, self._umax, self.rigid_idx, grav,
                                             self._tlim, om_c, u_c, om, u, jt_c, jt, Wx, rj is not None)
        if status:
            names = ("C", "V_body", "q", "qd", "theta", "thetad", "C_d", "V_body_d", "q_d", "W_b_jet", "tau_jet")
            rows = {"q_d": 3, "W_b_jet": r + 1, "tau_jet": r + 1}
            bad = [nm for nm, a in zip(names, args) if not np.all(np.isfinite(a[:rows[nm]] if nm in rows else a))]
            raise ValueError(f"{bad[0] if bad else 'inputs'}: contains NaN or Inf (the command is not finite)")
        self.rotor_saturations += ns_r
        self.motor_saturations += ns_m
        if rj is not None:
            rj.sent(om_c, jt_c, saturated=ns_r > 0)
        if self.elastic is None:
            return ActuatedCommand(om_c, jt_c, om, jt, ns_r, ns_m, jt_c, jt)
        return ActuatedCommand(om_c, u_c, om, u, ns_r, ns_m, jt_c, jt)

    def _rejection_terms(self, rj, t, rotor_speed, args):
        """``(Wx, Ainv, tau_jet)`` of the rejection options for this cycle (the observer updated with
        this sample): the body wrench added to the command, the allocation divided by the thrust
        scale, the joint torque jet with the observer's joint rows subtracted (row 0)."""
        C, Vb, q, qd, theta, _, Cd = args[:7]
        if not (np.all(np.isfinite(C)) and np.all(np.isfinite(Vb)) and np.all(np.isfinite(q))
                and np.all(np.isfinite(qd)) and np.all(np.isfinite(Cd))):
            return self._no_x, self._Ainv, args[10]          # the kernel names the bad input
        t, dt = rj.step_time(t)
        rj.observe(t, C, Vb, q, qd, theta if self.idx.size else None, rotor_speed)
        Wx = np.zeros(6)
        We = rj.wrench_body()
        if We is not None:
            Wx -= We
        R, Rd = C[:3, :3], Cd[:3, :3]
        Wx[3:] -= R.T @ rj.integral_force(C[:3, 3] - Cd[:3, 3], dt)
        M = Rd.T @ R - R.T @ Rd
        Wx[:3] -= rj.integral_moment(0.5 * np.array([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]]), dt)
        tau = args[10]
        re = rj.joint_torque()
        if re is not None and self.level is not None:
            tau = tau.copy()
            tau[0] = tau[0] - re
        k = rj.thrust_scale
        return Wx, (self._Ainv if k == 1.0 else np.ascontiguousarray(self._Ainv / k)), tau
