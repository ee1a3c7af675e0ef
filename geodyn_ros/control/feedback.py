"""An example tracking law for floating-base robots: feedforward plus PD on SE(3) and joints.

This is the control law of the ``geodyn_controller`` node, kept ROS-free so it can be tested
and run in a plain simulation loop (:mod:`geodyn_ros.loops.tracking`).

Law (all quantities at one instant; ``C = (R, p)`` actual base pose, ``C_d = (R_d, p_d)``
desired; body twists ``(w_b, v_b)`` are angular velocity and base-origin velocity in base axes)::

    e_p = p - p_d,                       e_v = R v_b - R_d v_bd            (world)
    e_R = vee(R_d^T R - R^T R_d),        e_w = w_b - R^T R_d w_bd          (base axes)
    f_b = R^T (-Kp_p e_p - Kd_p e_v) + R^T R_d f_ff
    n_b = -Kp_R e_R - Kd_R e_w          + R^T R_d n_ff
    tau = tau_ff + Kp_q (q_d - q) + Kd_q (qd_d - qd)

``(n_b, f_b)`` is the commanded base wrench in base-link axes about the base-link origin (what
``geometry_msgs/WrenchStamped`` with ``frame_id`` = base link carries); ``(n_ff, f_ff)`` is the
feedforward base wrench expressed in the *desired* base frame (``geodyn_node``'s
``feedforward/wrench`` in reference mode), rotated into the actual base frame. The rotation
error is the geometric one on SO(3) of Lee, Leok, McClamroch (2010) without its factor 1/2
(``e_R ~ 2 theta`` for a small rotation ``theta``), so ``Kp_R`` here is twice Lee's ``k_R``; the
published tables use this form. :class:`geodyn_ros.control.flatness.FlatnessController` uses
Lee's ``1/2 vee(...)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.validate import require_positive

__all__ = ["TrackingGains", "tracking_command"]


@dataclass(frozen=True)
class TrackingGains:
    """PD gains of :func:`tracking_command` (SI units; scalars apply to every axis/joint).

    kp_position [N/m], kd_position [N s/m], kp_rotation [N m/rad], kd_rotation [N m s/rad],
    kp_joint [N m/rad], kd_joint [N m s/rad]: a scalar (kept as a float) or one per joint (an (n,)
    sequence, kept as a tuple of floats).
    """

    kp_position: float = 400.0
    kd_position: float = 40.0
    kp_rotation: float = 60.0
    kd_rotation: float = 6.0
    kp_joint: float = 40.0
    kd_joint: float = 0.5

    def __post_init__(self):
        from .flatness import joint_gain     # kp_joint/kd_joint: a scalar (float) or one per joint (tuple)
        for name in ("kp_joint", "kd_joint"):
            object.__setattr__(self, name, joint_gain(name, getattr(self, name)))
        for name in ("kp_position", "kd_position", "kp_rotation", "kd_rotation"):
            object.__setattr__(self, name, require_positive(name, getattr(self, name), allow_zero=True, scalar=True,
                                                            problem="gains must be finite and >= 0"))


def _vee_skew(M: np.ndarray) -> np.ndarray:
    return np.array([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]]) * 0.5


def tracking_command(gains: TrackingGains, C, V_body, q, qd, C_d, V_body_d, q_d, qd_d,
                     W_ff_body=None, tau_ff=None):
    """Base wrench (6,) and joint torques (n,) of the tracking law in the module docstring.

    Parameters
    ----------
    gains : TrackingGains
    C, C_d : (4, 4) actual and desired base pose in world.
    V_body, V_body_d : (6,) actual and desired base body twist ``(w_b, v_b)``, angular first.
    q, qd, q_d, qd_d : (n,) actual and desired joint positions and velocities.
    W_ff_body : (6,) or None
        Feedforward base wrench ``(n_ff, f_ff)`` in the desired base frame; None = no feedforward.
    tau_ff : (n,) or None
        Feedforward joint torques; None = none.

    Returns
    -------
    W_cmd_body : (6,) commanded base wrench ``(n_b, f_b)``, base axes, about the base origin.
    tau_cmd : (n,) commanded joint torques.
    """
    R, p = C[:3, :3], C[:3, 3]
    Rd, pd = C_d[:3, :3], C_d[:3, 3]
    e_p = p - pd
    e_v = R @ V_body[3:] - Rd @ V_body_d[3:]
    RtRd = R.T @ Rd
    e_R = _vee_skew(Rd.T @ R - R.T @ Rd)
    e_w = V_body[:3] - RtRd @ V_body_d[:3]
    W = np.empty(6)
    W[3:] = R.T @ (-gains.kp_position * e_p - gains.kd_position * e_v)
    W[:3] = -gains.kp_rotation * e_R - gains.kd_rotation * e_w
    tau = gains.kp_joint * (np.asarray(q_d) - q) + gains.kd_joint * (np.asarray(qd_d) - qd)
    if W_ff_body is not None:
        W[:3] += RtRd @ W_ff_body[:3]
        W[3:] += RtRd @ W_ff_body[3:]
    if tau_ff is not None:
        tau = tau + tau_ff
    return W, tau
