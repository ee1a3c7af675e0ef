"""INDI for a collinear multirotor with an arm: thrust-vector and moment increments (ROS-free).

The collinear vehicle (every thrust along base ``+z``) cannot command a lateral force, so INDI
acts on the thrust *vector* and the moment (Tal and Karaman, T-CST 29(3), 2021, Sec. IV; the
moment loop of Smeur, Chu and de Croon, JGCD 39(3), 2016). With the filtered measurements of
:class:`~geodyn_ros.control.baselines.indi.IncrementalInversion` (the rotors' wrench ``W_f``, the
IMU's ``alpha_f`` and specific force ``s_f``; one first-order filter, in sync)::

    a_des = c_d'' - (k_x e_x + k_v e_v) / m                        (the CoM loop; world)
    F     = m (a_des - g) + R (W_f,lin - (M x_f)_lin)               (the thrust vector's increment)
    T     = F . R e3,   R_c = commanded_attitude(F, psi_d)          (as the flatness controller's)
    e_R   = 1/2 vee(R_c^T R - R^T R_c),   e_W = Omega - R^T R_c Omega_d
    tau   = W_f,ang - (M x_f)_ang + J R^T R_c alpha_d + M_al R^T F / m - k_R e_R - k_W e_W
    u     = A4^+ (T, tau),  omega = sqrt(u)

``x_f = (alpha_f, s_f)``; ``M`` the locked inertia of the whole body at the nominal joint angles
(about the base origin; ``J`` its rotational block, ``M_al = m hat(r_c)`` the coupling of the CoM
offset), the only model INDI uses with the allocation. ``(M x_f)_lin = m (s_f + alpha_f x r_c)``
is the measured specific force at the locked CoM: without the coupling, a base rotating about its
origin would read as a lateral force at the CoM and feed the attitude loop back through the thrust
vector (tried: it diverges on the demo hexarotor). The thrust vector's increment ``D = W_f,lin - (M
x_f)_lin`` is low-passed once more at the attitude loop's time constant ``1 / sqrt(k_R / J)``
(:attr:`IndiFlatController.outer_time_constant`; the slower tilt axis): a collinear vehicle
makes a lateral force by tilting, so the outer increment must be slower than the tilt (the
cascade's time-scale separation, Smeur, de Croon and Chu, "Cascaded incremental nonlinear dynamic
inversion for MAV disturbance rejection", CEP 73, 2018); unfiltered it feeds the arm's swing
back through the tilt (tried: a 10 Hz oscillation that grows). ``m (a_des - g) = T_d R_d e3 - k_x e_x - k_v
e_v`` is the flatness controller's force; ``R (W_f,lin - (M x_f)_lin)`` the measured increment
(the force the rotors make and the body's acceleration does not show: the arm's reaction, drag,
wind) in place of the model's. ``Omega_d`` and ``alpha_d`` are the reference's
kinematics, from the CoM's jerk and snap by the rigid flat map
(:func:`~geodyn_ros.control.quadrotor.rigid_flat_map`; its torque is not used). ``e_x, e_v``:
the CoM from the model's kinematics at the measured state (as every level). The joints: PD plus
gravity with Tomei's motor offset (:func:`~geodyn_ros.control.baselines.pd_gravity.joint_pd_gravity`).
The filter and the tuning procedure: :mod:`geodyn_ros.control.baselines.indi`. Without a measurement
yet (the first two IMU intervals), ``W_f = 0`` and ``s_f = alpha_f = 0``: the flatness force of a
rigid body and no moment feedforward.
"""
from __future__ import annotations

import numpy as np

from ...algorithms.api import center_of_mass
from ...algorithms.eom import gravity_vector, mass_matrix
from ..flatness import FlatCommand, FlatnessGains, commanded_attitude, effort_limit_array, joint_gain_array
from ..quadrotor import rigid_flat_map
from ..rotors import Allocation
from .indi import IncrementalInversion, IndiOptions, RotorSampleMean, first_order_gain
from .pd_gravity import joint_pd_gravity

__all__ = ["IndiFlatController"]


def _half_vee(S):
    return 0.5 * np.array([S[2, 1], S[0, 2], S[1, 0]])


class IndiFlatController:
    """INDI for a collinear multirotor (module docstring).

    model : the vehicle's (required: the CoM kinematics, the locked inertia at ``q_nominal`` (n,)
    (default zeros), the arm's gravity); allocation : a collinear :class:`Allocation`; rotors,
    elastic : as :class:`~geodyn_ros.control.flatness.FlatnessController`'s; gains :
    :class:`FlatnessGains`; options : :class:`IndiOptions`; ``rejection`` must be None.
    Each cycle: :meth:`rotor_sample` (the rotor speeds), :meth:`imu` (every IMU interval since the
    last cycle), :meth:`command`.
    """

    def __init__(self, model, allocation: Allocation, rotors, elastic, gains: FlatnessGains | None = None, *,
                 options: IndiOptions | None = None, effort_limits=None, gravity=(0.0, 0.0, -9.81),
                 q_nominal=None, rejection=None):
        if rejection is not None:
            raise ValueError("rejection: INDI takes no rejection option (its increment rejects the disturbance); "
                             "pass None")
        if model is None:
            raise ValueError("model: INDI needs the model's CoM kinematics and locked inertia; pass model=")
        if not isinstance(allocation, Allocation) or not allocation.collinear:
            raise ValueError("allocation: expected a collinear Allocation (use IndiController for a fully actuated one)")
        self.model, self.allocation, self.elastic = model, allocation, elastic
        self.gains = FlatnessGains() if gains is None else gains
        if not isinstance(self.gains, FlatnessGains):
            raise ValueError(f"gains: expected FlatnessGains, got {type(self.gains).__name__}")
        n = model.n_joints
        self.gravity = np.array(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ValueError(f"gravity: expected a finite 3-vector, got {gravity!r}")
        qn = np.zeros(n) if q_nominal is None else np.asarray(q_nominal, float)
        if qn.shape != (n,) or not np.all(np.isfinite(qn)):
            raise ValueError(f"q_nominal: expected {n} finite joint angles [rad], got {q_nominal!r}")
        M = mass_matrix(model, np.eye(4), qn)[:6, :6]
        self.core = IncrementalInversion(0.5 * (M + M.T), allocation.A, options)
        self.mass = float(model.total_mass)
        self.J = self.core.M[:3, :3]
        names = tuple(model.joint_names)
        el = () if elastic is None else elastic.joints
        self.idx = np.array([names.index(j) for j in el], dtype=np.int64)
        self._K = np.zeros(0) if elastic is None else np.asarray(elastic.stiffness, float) * np.ones(len(el))
        self._umax = np.broadcast_to(np.asarray(10.0 if elastic is None else elastic.max_motor_torque, float),
                                     (len(el),)).copy()
        self._tlim = effort_limit_array(effort_limits, n)
        self._kpj = joint_gain_array("kp_joint", self.gains.kp_joint, n)
        self._kdj = joint_gain_array("kd_joint", self.gains.kd_joint, n)
        self._kR = np.asarray(self.gains.kp_rotation, float)
        self._kW = np.asarray(self.gains.kd_rotation, float)
        nr = allocation.n_rotors
        self._wmax = np.broadcast_to(np.asarray(allocation.max_rot_velocity, float), (nr,)).copy()
        self._wmin = np.broadcast_to(np.asarray(allocation.min_rot_velocity, float), (nr,)).copy()
        self.rotor_saturations = self.motor_saturations = 0
        self._rotors = RotorSampleMean(nr)
        # the cascade's separation: the thrust vector's increment low-passed at the attitude loop's
        # time constant 1 / sqrt(k_R / J) of its slowest tilt axis (module docstring)
        w_att = float(np.min(np.sqrt(self._kR[:2] / np.diag(self.J)[:2])))
        self.outer_time_constant = 1.0 / w_att
        self._D, self._t_last = None, None

    def hold(self) -> None:
        """Forget the measurements (the increment restarts from the next two IMU intervals): on the
        ground, where the accelerometer reads the contact and an increment would wind up."""
        self.core.reset()
        self._rotors.reset()
        self._D = None

    @property
    def has_rotor_sample(self) -> bool:
        """True when a rotor sample is waiting for the next IMU interval."""
        return self._rotors.pending

    def rotor_sample(self, rotor_speed) -> None:
        """The measured rotor speeds (n_rot,) [rad/s] of this control step (averaged into the IMU interval)."""
        self._rotors.add(rotor_speed)

    def imu(self, dt, gyro, accel) -> None:
        """One IMU interval with the mean of the rotor samples since the last."""
        self.core.imu(dt, gyro, accel, self._rotors.take())
        if self.core.ready:
            D = self.core.W_f[3:] - (self.core.M @ self.core.x_f)[3:]
            k = first_order_gain(float(dt), self.outer_time_constant)
            self._D = D if self._D is None else self._D + k * (D - self._D)

    def command(self, C, V_body, q, qd, theta, thetad, com_d, yaw_d, q_d) -> FlatCommand:
        """One cycle: C (4, 4), V_body (6,) measured; q, qd (n,); theta, thetad (n_el,); com_d (>= 5, 3)
        the CoM jet up to the snap; yaw_d (>= 3,); q_d (>= 2, n)."""
        f = np.asarray
        C, Vb, q, qd = f(C, dtype=float), f(V_body, dtype=float), f(q, dtype=float), f(qd, dtype=float)
        cd, yd, Qd = f(com_d, dtype=float), f(yaw_d, dtype=float), f(q_d, dtype=float)
        n = self.model.n_joints
        for name, v, ok in (("C", C, C.shape == (4, 4)), ("V_body", Vb, Vb.shape == (6,)), ("q", q, q.shape == (n,)),
                            ("qd", qd, qd.shape == (n,)), ("com_d", cd, cd.ndim == 2 and cd.shape[0] >= 5
                                                            and cd.shape[1] == 3),
                            ("yaw_d", yd, yd.ndim == 1 and yd.shape[0] >= 3),
                            ("q_d", Qd, Qd.ndim == 2 and Qd.shape[0] >= 2 and Qd.shape[1] == n)):
            if not ok or not np.all(np.isfinite(v)):
                raise ValueError(f"{name}: expected finite values of the documented shape, got shape {v.shape}")
        g = self.gains
        R, p = C[:3, :3], C[:3, 3]
        Vs = np.empty((1, 6))
        Vs[0, :3] = R @ Vb[:3]
        Vs[0, 3:] = R @ Vb[3:] + np.cross(p, Vs[0, :3])
        cm = center_of_mass(self.model, C, Vs, np.stack([q, qd]), order=1)
        e_x, e_v = cm[0] - cd[0], cm[1] - cd[1]
        m = self.mass
        F = m * (cd[2] - self.gravity) - g.kp_position * e_x - g.kd_position * e_v
        core = self.core
        Mx = core.M @ core.x_f if core.ready else None
        if self._D is not None:     # the measured force the rotors do not explain, at the (locked) CoM
            F = F + R @ self._D
        T = float(F @ R[:, 2])
        R_c = commanded_attitude(F, float(yd[0]))
        rf = rigid_flat_map(m, np.eye(3), np.zeros(3), cd[2], cd[3], cd[4], yd[0], yd[1], yd[2], self.gravity)
        RtRc = R.T @ R_c
        e_R = _half_vee(R_c.T @ R - R.T @ R_c)
        e_W = Vb[:3] - RtRc @ rf.omega
        tau = self.J @ (RtRc @ rf.alpha) - self._kR * e_R - self._kW * e_W
        if core.ready:          # the increment on the measured moment (with the CoM offset's coupling)
            tau = tau + core.W_f[:3] - Mx[:3] + core.M[:3, 3:] @ (R.T @ F / m)
        u = self.allocation.A4_pinv @ np.concatenate([[T], tau])
        om_raw = np.sqrt(np.clip(u, 0.0, None))
        clips = int(np.sum(u < 0.0))
        om = np.clip(om_raw, self._wmin, self._wmax)
        clips += int(np.sum(om != om_raw))
        grav = gravity_vector(self.model, C, q, gravity=tuple(self.gravity))[6:]
        ne = self.idx.size
        th = np.zeros(0) if self.elastic is None else f(theta, dtype=float)
        thd = np.zeros(0) if self.elastic is None else f(thetad, dtype=float)
        if th.shape != (ne,) or thd.shape != (ne,) or not (np.all(np.isfinite(th)) and np.all(np.isfinite(thd))):
            raise ValueError(f"theta, thetad: expected {ne} finite motor angles and rates, got {th!r}, {thd!r}")
        jt_raw, u_raw = joint_pd_gravity(self._kpj, self._kdj, grav, q, qd, th, thd, Qd[0], Qd[1], self.idx, self._K)
        jt = np.clip(jt_raw, -self._tlim, self._tlim)
        um = np.clip(u_raw, -self._umax, self._umax)
        mclips = int(np.sum(jt != jt_raw)) + int(np.sum(um != u_raw))
        self.rotor_saturations += clips
        self.motor_saturations += mclips
        if self.elastic is None:
            return FlatCommand(om, jt, T, tau, om_raw, jt_raw, clips, mclips, jt, jt_raw)
        return FlatCommand(om, um, T, tau, om_raw, u_raw, clips, mclips, jt, jt_raw)
