"""The LQR's share of the rejection options (ROS-free): its integral states and its moved nominal.

:class:`~geodyn_ros.control.lqr.LqrController` with ``rejection``
(:class:`~geodyn_ros.control.rejection.RejectionOptions`) uses :func:`lqr_nominal` every cycle; a
gain schedule for ``integral_action`` is computed on :func:`integral_model` with
:func:`integral_weights` (``doc/explanation/observer.md``)::

    models_i = lambda t: integral_model(*models(t), dt)
    Q_i = integral_weights(weights.Q(n, n_el, n_rot), weights.base_position, ctrl.integral_bandwidth)
    schedule = tvlqr_schedule(models_i, t0, t1, dt, Q_i, weights.R(n_rot, n_el, n_rigid))
"""
from __future__ import annotations

import numpy as np

from ...algorithms.api import center_of_mass
from ...algorithms.flat import yaw_of
from ...lie import Ad_inv
from ..flatness import commanded_attitude
from .options import Rejection

__all__ = ["integral_model", "integral_weights", "lqr_nominal", "limit_moment_feedforward", "FEEDBACK_HEADROOM"]

#: the share of the rotor speed range ``[min_rot_velocity, max_rot_velocity]`` the moved nominal
#: leaves free at each end for the LQR's feedback (:func:`limit_moment_feedforward`): 0.1 of the
#: hexarotor's 1000 rad/s is 100 rad/s, ``LqrWeights.rotor_command``, the command deviation its
#: Bryson weights accept
FEEDBACK_HEADROOM = 0.1
def integral_model(A, B, dt, rows=(3, 4, 5)):
    """``(A_a, B_a)`` of the discrete model ``s+ = A s + B v`` with integral states
    ``z+ = z + dt s[rows]`` appended (default the base position part of the LQR's ``delta``)."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    ns, ni = A.shape[0], len(rows)
    Aa = np.zeros((ns + ni, ns + ni))
    Aa[:ns, :ns] = A
    Aa[ns:, ns:] = np.eye(ni)
    Aa[ns + np.arange(ni), np.asarray(rows)] = dt
    Ba = np.zeros((ns + ni, B.shape[1]))
    Ba[:ns] = B
    return Aa, Ba


def integral_weights(Q, position_deviation, bandwidth):
    """``Q`` (ns, ns) with the integral states' Bryson weights appended: the acceptable integral
    ``position_deviation / bandwidth`` [m s] per axis (the integral of the acceptable position
    error over the integral time constant ``1 / bandwidth``). The closed loop's three integral
    modes then sit at about ``-bandwidth``: -1.04 to -1.06 rad/s for 1 rad/s, -0.401 for 0.4,
    on the hexarotor at hover (the eigenvalues of the DARE's closed loop)."""
    Q = np.asarray(Q, float)
    dev = np.broadcast_to(np.asarray(position_deviation, float), (3,)) / float(bandwidth)
    ns = Q.shape[0]
    Qa = np.zeros((ns + 3, ns + 3))
    Qa[:ns, :ns] = Q
    Qa[ns:, ns:] = np.diag(1.0 / dev ** 2)
    return Qa


def lqr_nominal(rj: Rejection, lin, flat, q_d, nom, lag_gain):
    """The LQR's nominal and feedforward with the rejection estimates (:class:`~geodyn_ros.control.lqr.LqrController`).

    The flat map's nominal ``nom`` (:meth:`~geodyn_ros.control.lqr.ActuatedModel.nominal`) is moved
    to where the plant needs it: the thrust vector ``T_d R_d e3 - f_e`` (the residual force, world)
    sets the nominal attitude (the Z-Y-X yaw kept) and thrust, the body torque loses the residual
    moment, the base position puts the estimated true CoM (model CoM plus ``delta``) on the
    reference CoM, the rotor speeds are those of this wrench through the allocation divided by the
    thrust scale ``k`` (the lag term of the flat jet scaled too), and the motors' Spong references
    take ``tau_d - r_q``. The residual moment is cancelled only as far as the rotors leave the
    feedback room (:func:`limit_moment_feedforward`; the scales used are ``rj.moment_scale``).
    Returns ``(nom, omega_ff, u_ff)``.
    """
    C_d, _, qn, qdn, Wb, tau, _, _, _ = nom
    al, k = lin.allocation, rj.thrust_scale
    We = rj.wrench_body()
    re = rj.joint_torque()
    R_d, p_d = C_d[:3, :3], C_d[:3, 3]
    T, tb = float(flat.thrust[0]), np.asarray(flat.body_torque[0], float)
    R_n = R_d
    if We is not None:
        F = T * R_d[:, 2] - R_d @ We[3:]
        R_n = commanded_attitude(F, yaw_of(R_d))
        T = float(F @ R_n[:, 2])
        tb, rj.moment_scale = limit_moment_feedforward(al, k, T, tb, We[:3])
    Cn = C_d
    if We is not None or rj.options.com_estimate:
        rc = R_d.T @ (center_of_mass(lin.model, C_d, None, qn)[0] - p_d)       # the model's CoM, base axes
        Cn = np.eye(4)
        Cn[:3, :3] = R_n
        Cn[:3, 3] = p_d + R_d @ rc - R_n @ (rc + rj.com_offset)
    u0 = al.allocate_thrust_torque(T, tb) / k
    x = np.sqrt(np.clip(u0, 0.0, None))
    du = al.allocate_thrust_torque(flat.thrust[1], flat.body_torque[1]) / k
    omd = du / (2.0 * np.maximum(x, 1e-6))
    om_ff = x + np.where(omd > 0.0, lag_gain[0], lag_gain[1]) * omd
    tau_n = tau if re is None else tau - re
    el = lin.el
    th = q_d[0, el] + tau_n[el] / lin.K if lin.ne else np.zeros(0)
    thd = q_d[1, el] + flat.tau[1, el] / lin.K if lin.ne else np.zeros(0)
    u_ff = np.concatenate([lin.Bm * (q_d[2, el] + flat.tau[2, el] / lin.K) + tau_n[el] if lin.ne else np.zeros(0),
                           tau_n[lin.rigid]])
    Vbn = Ad_inv(Cn) @ flat.base_twist[0]
    Wn = np.r_[tb, 0.0, 0.0, T]
    return (Cn, Vbn, qn, qdn, Wn, tau_n, th, thd, x), om_ff, u_ff


def limit_moment_feedforward(al, k, T, tb, moment, headroom=FEEDBACK_HEADROOM):
    """``(tb - s * moment, (s_roll_pitch, s_yaw))``: the body torque [N m] (3,) of the LQR's moved
    nominal, with the residual ``moment`` [N m] (3,, base axes about the base origin) cancelled as
    far as every rotor's nominal input ``u = A4^+ (T, tb - s moment) / k`` stays within
    ``[(w_min + h)^2, (w_max - h)^2]``, ``h = headroom (w_max - w_min)`` (``al``: the
    :class:`~geodyn_ros.control.rotors.Allocation`, ``k`` the thrust scale).

    Yaw gives way first, then roll and pitch (each scale is the largest in [0, 1] that fits, in
    closed form: ``u`` is linear in it), as a multirotor mixer gives up yaw before attitude
    (PX4's control allocator desaturates yaw last-priority). Why: the LQR's feedback ``v = -K s``
    is linear about the nominal's rotor speeds. A nominal at a rotor's limit leaves it no room,
    the clipped command then moves thrust and roll/pitch as well, and the loop diverges: the
    collinear hexarotor's yaw authority at hover is about 0.61 N m, and a 2 N push at its tool
    was read as up to 0.6 N m of yaw (``doc/howto/model_error.md``). A nominal torque ``tb``
    that already leaves no room is kept as it is (scales 0): the moment is not cancelled."""
    w_lo, w_hi = float(al.min_rot_velocity), float(al.max_rot_velocity)
    h = headroom * (w_hi - w_lo)
    lo, hi = (w_lo + h) ** 2, (w_hi - h) ** 2
    m = np.asarray(moment, float)
    m_rp = np.array([m[0], m[1], 0.0])
    m_y = np.array([0.0, 0.0, m[2]])

    def largest(a, b):          # the largest s in [0, 1] with lo <= a + s b <= hi, rotor by rotor
        if np.any(a < lo) or np.any(a > hi):
            return 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(b > 0.0, (hi - a) / b, np.where(b < 0.0, (lo - a) / b, np.inf))
        return float(np.clip(bound.min(), 0.0, 1.0))

    s_rp = largest(al.allocate_thrust_torque(T, tb) / k, al.allocate_thrust_torque(0.0, -m_rp) / k)
    tb_rp = tb - s_rp * m_rp
    s_y = largest(al.allocate_thrust_torque(T, tb_rp) / k, al.allocate_thrust_torque(0.0, -m_y) / k)
    return tb_rp - s_y * m_y, (s_rp, s_y)
