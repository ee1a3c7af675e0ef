"""PD plus gravity compensation of the whole body: the honest feedback-only baseline (ROS-free).

The ``pd`` level of :class:`~geodyn_ros.control.actuated.ActuatedController` is feedback alone:
under gravity it sags by ``m g / kp_position`` (4.03 kg x 9.81 m/s^2 / 400 N/m = 9.9 cm on the
TiltHex), so a ratio against it mostly measures gravity compensation. A lab's baseline is PD plus
gravity (or PID). This law, at the measured state ``(C, q)``::

    g = gd.gravity_vector(model, C, q)              # (6 + n,): base spatial wrench, joint torques
    W = W_fb + Ad(C)^T g[:6]                        # the whole body's weight, base axes, base origin
    rigid joint j:    tau_j = g_j + Kp (q_d - q) + Kd (q_d' - q')
    elastic joint j:  u_j   = g_j + Kp (q_d + g_j / K_j - theta) + Kd (q_d' - theta')

``W_fb`` is the feedback of the other levels (same gains, :func:`~geodyn_ros.control.feedback.tracking_command`).
The elastic joints get Tomei's motor offset (Tomei, IEEE TAC 36(10), 1991: PD on the motor with
the link's gravity and the spring's deflection ``K^-1 g`` added): at rest the spring carries
``g_j`` and the link sits at ``q_d``; without it the link sags ``K^-1 g_j``. Nothing of the
trajectory is fed forward (no reference acceleration, no inverse dynamics, no lag compensation).

Steady state on the exact model (a hover reference): the base error is 0 (PD alone: ``-m g /
kp_position`` in z, the closed form ``test_baselines`` asserts).

It runs through the actuated controller's compiled law at level 2 with the jets ``W_b = (Rd^T R Ad(C)^T
g[:6], 0, 0)``, ``tau = (g[6:], 0, 0)`` and the reference's acceleration row zeroed: level 2 then
computes exactly the law above (its lag term is 0 with ``W_b' = 0``, its ``B theta_d''`` is 0).
``integral=True`` adds the rejection's integral action on the base position and attitude
(:class:`~geodyn_ros.control.rejection.RejectionOptions`, ``integral_action``; its gains a tenth
of the loop's bandwidth): the PID a lab turns on when a steady offset remains (model error, wind).
"""
from __future__ import annotations

import numpy as np

from ...algorithms.eom import gravity_vector
from ...lie import Ad
from ..actuated import ActuatedCommand, ActuatedController
from ..feedback import TrackingGains
from ..rejection import RejectionOptions

__all__ = ["PdGravityController", "joint_pd_gravity"]


def joint_pd_gravity(gains_kp, gains_kd, grav, q, qd, theta, thetad, q_d, qd_d, elastic_idx, stiffness) -> tuple:
    """``(rigid (n,), elastic (n_el,))`` joint torques [N m] of the law in the module docstring
    (unclipped): ``gains_kp``/``gains_kd`` (n,), ``grav`` (n,) the joints' gravity torques, ``q``,
    ``qd``, ``q_d``, ``qd_d`` (n,), ``theta``, ``thetad`` (n_el,) the motors of the elastic joints
    ``elastic_idx`` (n_el,) of stiffness ``stiffness`` (n_el,) [N m/rad]. The rigid entries at the
    elastic joints are 0."""
    tau = gains_kp * (q_d - q) + gains_kd * (qd_d - qd) + grav
    tau[elastic_idx] = 0.0
    g_el = grav[elastic_idx]
    u = g_el + gains_kp[elastic_idx] * (q_d[elastic_idx] + g_el / stiffness - theta) \
        + gains_kd[elastic_idx] * (qd_d[elastic_idx] - thetad)
    return tau, u


class PdGravityController:
    """PD plus gravity compensation of the whole body (module docstring) for a fully actuated base.

    The arguments of :class:`~geodyn_ros.control.actuated.ActuatedController` (``model`` required:
    the gravity), plus ``integral`` (bool): the rejection's integral action on (the PID).
    ``timestep`` [s]: the control period the integral uses when :meth:`command` gets no ``t``.
    :meth:`command` takes the actuated controller's arguments (the feedforward jets are ignored)
    and returns its :class:`~geodyn_ros.control.actuated.ActuatedCommand`; the clip counters are
    :attr:`rotor_saturations` and :attr:`motor_saturations`.
    """

    def __init__(self, allocation, rotors, elastic, joint_names, gains: TrackingGains | None = None, *, model,
                 effort_limits=None, gravity=(0.0, 0.0, -9.81), integral: bool = False, timestep: float | None = None):
        if model is None:
            raise ValueError("model: PD plus gravity needs the model (its gravity torques); pass model=")
        if not isinstance(integral, (bool, np.bool_)):
            raise ValueError(f"integral: expected True or False, got {integral!r}")
        rej = RejectionOptions(integral_action=True, timestep=timestep) if integral else None
        self._ctrl = ActuatedController(allocation, rotors, elastic, joint_names, gains, feedforward_order=2,
                                        effort_limits=effort_limits, model=model, gravity=gravity, rejection=rej)
        self.model, self.integral = model, bool(integral)
        self.gravity = tuple(self._ctrl.gravity)
        n = len(self._ctrl.joint_names)
        self._zero_jet = np.zeros((3, n))

    # the loop's counters and references (the actuated controller's)
    @property
    def rotor_saturations(self) -> int:
        return self._ctrl.rotor_saturations

    @rotor_saturations.setter
    def rotor_saturations(self, v) -> None:
        self._ctrl.rotor_saturations = v

    @property
    def motor_saturations(self) -> int:
        return self._ctrl.motor_saturations

    @motor_saturations.setter
    def motor_saturations(self, v) -> None:
        self._ctrl.motor_saturations = v

    @property
    def rejection(self):
        """The integral's state (:class:`~geodyn_ros.control.rejection.Rejection`), or None."""
        return self._ctrl.rejection

    def rotor_reference(self, W_b_jet) -> tuple:
        return self._ctrl.rotor_reference(W_b_jet)

    def motor_reference(self, q_d, tau_d) -> tuple:
        return self._ctrl.motor_reference(q_d, tau_d)

    def command(self, C, V_body, q, qd, theta, thetad, C_d, V_body_d, q_d, W_b_jet=None, tau_jet=None, *, t=None,
                rotor_speed=None) -> ActuatedCommand:
        """One cycle (the arguments of :meth:`ActuatedController.command`; ``W_b_jet``, ``tau_jet`` unused)."""
        C = np.asarray(C, dtype=float)
        q = np.asarray(q, dtype=float)
        Qd = np.array(q_d, dtype=float, copy=True)
        if Qd.ndim != 2 or Qd.shape[0] < 2:
            raise ValueError(f"q_d: expected rows q_d, q_d' (>= 2, n), got shape {Qd.shape}")
        Qd = np.vstack([Qd[:2], np.zeros((1, Qd.shape[1]))])
        n = Qd.shape[1]
        W = np.zeros((3, 6))
        tau = self._zero_jet.copy() if n == self._zero_jet.shape[1] else np.zeros((3, n))
        if C.shape == (4, 4) and q.shape == (n,) and np.all(np.isfinite(C)) and np.all(np.isfinite(q)):
            g = gravity_vector(self.model, C, q, gravity=self.gravity)
            Wg = Ad(C).T @ g[:6]         # its base rows are a spatial wrench (world axes, world origin)
            Cd = np.asarray(C_d, dtype=float)
            if Cd.shape == (4, 4):
                RdR = Cd[:3, :3].T @ C[:3, :3]
                W[0] = np.concatenate([RdR @ Wg[:3], RdR @ Wg[3:]])
            tau[0] = g[6:]
        return self._ctrl.command(C, V_body, q, qd, theta, thetad, C_d, V_body_d, Qd, W, tau, t=t,
                                  rotor_speed=rotor_speed)
