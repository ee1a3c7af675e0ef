"""Incremental nonlinear dynamic inversion (INDI): the model-light baseline (ROS-free).

INDI (Smeur, Chu and de Croon, "Adaptive incremental nonlinear dynamic inversion for attitude
control of micro air vehicles", JGCD 39(3), 2016; Tal and Karaman, "Accurate tracking of
aggressive quadrotor trajectories using incremental nonlinear dynamic inversion and
differential flatness", IEEE T-CST 29(3), 2021) does not model what acts on the body: it
measures it. The body's acceleration ``x = (alpha, s)`` (angular acceleration, specific force;
base axes) responds to the rotors' wrench ``W_rot`` and to everything else ``W_ext`` (the arm's
reactions, drag, model error, wind) through the rigid body's inertia ``M`` (6 x 6, about the base
origin)::

    M x = W_rot + W_ext - (velocity terms)         so    W_ext ~ M x_f - W_rot,f

with ``x_f`` and ``W_rot,f`` measured and filtered alike. The command is the increment on the
measured wrench that reaches the desired acceleration ``x_des``::

    W_cmd = W_rot,f + M (x_des - x_f)                                   (Smeur 2016, eq. 11)

so the unmodelled wrench is cancelled as it is measured, with the filter's lag and nothing else.

Measurements. The IMU's samples (:class:`~geodyn_ros.sim.sensors.ImuSample`: the mean body angular
velocity and specific force over each interval ``dt``), and the rotor speeds (ESC telemetry, Tal
and Karaman's RPM feedback) averaged over the same interval, ``u_bar = mean(omega^2)``:

* ``alpha_k = (gyro_k - gyro_{k-1}) / dt``: the gyro's derivative, the difference of two interval
  means, is the mean of ``alpha`` over the two intervals' centres; the rotor moment in sync with it
  is ``A_ang (u_bar_k + u_bar_{k-1}) / 2``;
* ``s_k``: the accelerometer's interval mean; the rotor force in sync is ``A_lin u_bar_k``.

Filter. The same first-order low-pass on every channel (``alpha``, ``s`` and the two rotor
wrenches), time constant ``T_f`` (:attr:`IndiOptions.filter_time_constant`), discretized exactly
for each sample's ``dt``: ``y <- y + (1 - exp(-dt / T_f)) (x - y)``. One filter on both sides keeps
them in sync (Smeur 2016, Sec. III.B), so on a rigid body ``M x_f - W_rot,f`` is the low-passed
external wrench: a constant unknown torque is estimated as ``tau_d (1 - exp(-t / T_f))`` (the
closed form ``test_baselines`` asserts, sample by sample).

Desired acceleration: the reference's (kinematic only: ``p_d''`` and the desired body angular
acceleration, rotated into the actual base axes; ``s_des = R^T (p_d'' - g)``) plus ``M^-1 W_fb``,
``W_fb`` the feedback of the other levels (same gains, :func:`~geodyn_ros.control.feedback.tracking_command`).
With ``M`` exact, the loop then has the PD's stiffness and the measured wrench in place of the
modelled one. ``M`` is the locked inertia of the whole body at the nominal joint angles (the only
model INDI uses, with the allocation ``A`` as its control effectiveness). ``W_cmd`` goes through
``A^+``; speeds clipped to the rotors' limits (counted). The arm: PD plus gravity on its joints
(:func:`~geodyn_ros.control.baselines.pd_gravity.joint_pd_gravity`), as the PD-plus-gravity baseline's.

Tuning procedure (stated; the rows use it): ``T_f`` is the largest of the rotors' time constant
and two IMU periods (:func:`filter_time_constant_for`): a filter faster than the rotors buys no
bandwidth (the increment acts through the rotor lag), and one faster than two IMU samples passes
the difference quotient's noise. The outer gains are the other rows' (the same stiffness), so the
comparison is at equal feedback bandwidth.

INDI needs no integral or observer: its increment is the disturbance rejection (Smeur 2016, Sec.
IV: no steady error under a constant disturbance), so :class:`IndiController` refuses the
rejection options in one line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...algorithms.eom import gravity_vector, mass_matrix
from ...lie import log_so3
from ..actuated import ActuatedCommand
from ..feedback import TrackingGains
from ..flatness import effort_limit_array, joint_gain_array
from ..rotors import Allocation, per_rotor_constant
from .pd_gravity import joint_pd_gravity

__all__ = ["DEFAULT_FILTER_TIME_CONSTANT", "IndiOptions", "IncrementalInversion", "ImuIntervals", "IndiController",
           "first_order_gain", "filter_time_constant_for"]

#: [s] the filter time constant when neither the rotors nor the IMU rate are known: 20 ms (Smeur
#: 2016 flies a second-order filter of 25 rad/s natural frequency on the Bebop: about 40 ms of lag)
DEFAULT_FILTER_TIME_CONSTANT = 0.02


def first_order_gain(dt: float, time_constant: float) -> float:
    """``1 - exp(-dt / T)``: the exact discrete gain of a first-order low-pass over a step ``dt``."""
    return -math.expm1(-dt / time_constant)


def filter_time_constant_for(rotors, imu_rate: float) -> float:
    """The tuning procedure's ``T_f`` [s] (module docstring): the largest of the rotors' up time
    constants and two IMU periods ``2 / imu_rate`` [Hz]."""
    if not (isinstance(imu_rate, (int, float)) and math.isfinite(imu_rate) and imu_rate > 0):
        raise ValueError(f"imu_rate: expected a finite positive rate [Hz], got {imu_rate!r}")
    return max(float(np.max(per_rotor_constant(rotors, "time_constant_up"))), 2.0 / imu_rate)


@dataclass(frozen=True)
class IndiOptions:
    """``filter_time_constant`` [s] (> 0, finite) of the one low-pass on every channel."""

    filter_time_constant: float = DEFAULT_FILTER_TIME_CONSTANT

    def __post_init__(self):
        v = self.filter_time_constant
        if isinstance(v, (bool, str, bytes)) or not isinstance(v, (int, float, np.floating, np.integer)) \
                or not (math.isfinite(v) and v > 0):
            raise ValueError(f"filter_time_constant: expected a finite positive time [s], got {v!r}")
        object.__setattr__(self, "filter_time_constant", float(v))


class ImuIntervals:
    """The exact IMU of the perfect-sensing rows: from the true base rotation ``R`` (3, 3) and
    origin velocity ``pdot`` (3,) (world) at successive times, the interval means
    ``gyro = log(R_prev^T R) / dt`` and ``accel = R^T ((pdot - pdot_prev) / dt - g)`` (the
    formulas of :class:`~geodyn_ros.sim.sensors.SensorSuite`'s IMU, without its noise)."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = np.asarray(gravity, float)
        self._prev = None

    def sample(self, t: float, R, pdot):
        """``(dt, gyro, accel)`` of the interval ending at ``t`` [s], or None at the first call."""
        R, pdot = np.asarray(R, float), np.asarray(pdot, float)
        prev, self._prev = self._prev, (float(t), R.copy(), pdot.copy())
        if prev is None:
            return None
        dt = float(t) - prev[0]
        if not dt > 0:
            raise ValueError(f"t: expected a time after the last sample's ({prev[0]!r} s), got {t!r}")
        return dt, log_so3(prev[1].T @ R) / dt, R.T @ ((pdot - prev[2]) / dt - self.gravity)


class IncrementalInversion:
    """The INDI core of one rigid body (module docstring): the filtered measurements and the increment.

    inertia : (6, 6) ``M`` about the base origin, base axes, angular first (symmetric, positive
    definite); allocation : (6, n_rot) ``A`` (``W_rot = A omega^2``); options : :class:`IndiOptions`.
    Feed :meth:`imu` with each IMU interval and the mean ``omega^2`` over it; read
    :meth:`disturbance` (``M x_f - W_rot,f``) and :meth:`command` (``W_rot,f + M (x_des - x_f)``).
    """

    def __init__(self, inertia, allocation, options: IndiOptions | None = None):
        M = np.array(inertia, dtype=float)
        if M.shape != (6, 6) or not np.all(np.isfinite(M)) or not np.allclose(M, M.T, rtol=1e-9, atol=1e-12):
            raise ValueError(f"inertia: expected a finite symmetric (6, 6) matrix, got shape {M.shape}")
        if np.linalg.eigvalsh(M).min() <= 0:
            raise ValueError("inertia: not positive definite")
        A = np.array(allocation, dtype=float)
        if A.ndim != 2 or A.shape[0] != 6 or not np.all(np.isfinite(A)):
            raise ValueError(f"allocation: expected a finite (6, n_rot) matrix, got shape {A.shape}")
        if options is None:
            options = IndiOptions()
        if not isinstance(options, IndiOptions):
            raise ValueError(f"options: expected IndiOptions, got {type(options).__name__}")
        self.M, self.A, self.options = M, A, options
        self.reset()

    def reset(self) -> None:
        """Forget the measurements (the next two IMU intervals start the filters)."""
        self._gyro = self._u = None
        self.x_f = None            # (6,) filtered (alpha, s)
        self.W_f = None            # (6,) filtered rotor wrench, each half in sync with its channel

    @property
    def ready(self) -> bool:
        """True once the filters hold a measurement (two IMU intervals)."""
        return self.x_f is not None

    def imu(self, dt: float, gyro, accel, u_mean) -> None:
        """One IMU interval: ``dt`` [s], mean ``gyro`` (3,) [rad/s] and specific force ``accel`` (3,)
        [m/s^2] (base axes), and the mean ``omega^2`` (n_rot,) [rad^2/s^2] of the rotors over it."""
        dt = float(dt)
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a finite positive interval [s], got {dt!r}")
        g = np.asarray(gyro, float)
        a = np.asarray(accel, float)
        u = np.asarray(u_mean, float)
        for name, v, n in (("gyro", g, 3), ("accel", a, 3), ("u_mean", u, self.A.shape[1])):
            if v.shape != (n,) or not np.all(np.isfinite(v)):
                raise ValueError(f"{name}: expected {n} finite values, got {v!r}")
        if self._gyro is not None:
            x = np.concatenate([(g - self._gyro) / dt, a])
            Wr = np.concatenate([self.A[:3] @ (0.5 * (u + self._u)), self.A[3:] @ u])
            if self.x_f is None:
                self.x_f, self.W_f = x, Wr
            else:
                k = first_order_gain(dt, self.options.filter_time_constant)
                self.x_f = self.x_f + k * (x - self.x_f)
                self.W_f = self.W_f + k * (Wr - self.W_f)
        self._gyro, self._u = g.copy(), u.copy()

    def disturbance(self) -> np.ndarray:
        """(6,) ``M x_f - W_rot,f``: the filtered wrench the rotors do not explain (zeros before ready)."""
        return np.zeros(6) if self.x_f is None else self.M @ self.x_f - self.W_f

    def command(self, x_des) -> np.ndarray:
        """(6,) ``W_rot,f + M (x_des - x_f)``; before :attr:`ready`, ``M x_des`` (a rigid-body inversion)."""
        x_des = np.asarray(x_des, float)
        if self.x_f is None:
            return self.M @ x_des
        return self.W_f + self.M @ (x_des - self.x_f)


class RotorSampleMean:
    """The mean squared rotor speed (n_rot,) [rad^2/s^2] over one IMU interval: the control steps'
    measured speeds averaged into the interval the IMU's increment spans (both INDI controllers)."""

    def __init__(self, n_rotors: int):
        self._sum, self._n = np.zeros(n_rotors), 0

    @property
    def pending(self) -> bool:
        """True when a sample is waiting for the next IMU interval."""
        return self._n > 0

    def reset(self) -> None:
        self._sum[:] = 0.0
        self._n = 0

    def add(self, rotor_speed) -> None:
        """One control step's measured rotor speeds (n_rot,) [rad/s]."""
        w = np.asarray(rotor_speed, float)
        if w.shape != self._sum.shape or not np.all(np.isfinite(w)):
            raise ValueError(f"rotor_speed: expected {self._sum.size} finite speeds [rad/s], got {rotor_speed!r}")
        self._sum += w * w
        self._n += 1

    def take(self) -> np.ndarray:
        """The interval's mean of the squared speeds; the next interval starts empty."""
        if self._n == 0:
            raise ValueError("rotor_speed: no rotor sample in this IMU interval (call rotor_sample every step)")
        mean = self._sum / self._n
        self.reset()
        return mean


class IndiController:
    """INDI for a fully actuated multirotor with an arm (module docstring).

    allocation, rotors, elastic, joint_names, gains, effort_limits, model, gravity: as for
    :class:`~geodyn_ros.control.actuated.ActuatedController` (``model`` required: the locked
    inertia at ``q_nominal`` (n,) (default zeros) and the arm's gravity). options: :class:`IndiOptions`.
    ``rejection`` must be None (the increment is the rejection; module docstring).

    Each cycle: :meth:`imu` with every IMU interval delivered since the last cycle (or none), then
    :meth:`command` with the state, the reference, its base acceleration and the measured rotor
    speeds. Clip counters as the actuated controller's.
    """

    def __init__(self, allocation: Allocation, rotors, elastic, joint_names, gains: TrackingGains | None = None, *,
                 model, options: IndiOptions | None = None, effort_limits=None, gravity=(0.0, 0.0, -9.81),
                 q_nominal=None, rejection=None):
        if rejection is not None:
            raise ValueError("rejection: INDI takes no rejection option (its increment rejects the disturbance); "
                             "pass None")
        if not isinstance(allocation, Allocation):
            raise ValueError(f"allocation: expected an Allocation, got {type(allocation).__name__}")
        if allocation.collinear or allocation.A_pinv is None:
            raise ValueError("allocation: a collinear rotor set; this INDI commands the full body wrench")
        if model is None:
            raise ValueError("model: INDI needs the model's locked inertia and the arm's gravity; pass model=")
        self.allocation, self.model = allocation, model
        self.gains = TrackingGains() if gains is None else gains
        if not isinstance(self.gains, TrackingGains):
            raise ValueError(f"gains: expected TrackingGains, got {type(self.gains).__name__}")
        self.joint_names = tuple(joint_names)
        if tuple(model.joint_names) != self.joint_names:
            raise ValueError(f"model: its joints {tuple(model.joint_names)} differ from joint_names {self.joint_names}")
        n = len(self.joint_names)
        self.gravity = np.array(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ValueError(f"gravity: expected a finite 3-vector, got {gravity!r}")
        qn = np.zeros(n) if q_nominal is None else np.asarray(q_nominal, float)
        if qn.shape != (n,) or not np.all(np.isfinite(qn)):
            raise ValueError(f"q_nominal: expected {n} finite joint angles [rad], got {q_nominal!r}")
        M = mass_matrix(model, np.eye(4), qn)[:6, :6]
        self.core = IncrementalInversion(0.5 * (M + M.T), allocation.A, options)
        self._Minv = np.linalg.inv(self.core.M)
        el = () if elastic is None else elastic.joints
        self.idx = np.array([self.joint_names.index(j) for j in el], dtype=np.int64)
        self._K = np.zeros(0) if elastic is None else np.asarray(elastic.stiffness, float) * np.ones(len(el))
        self._umax = np.broadcast_to(np.asarray(10.0 if elastic is None else elastic.max_motor_torque, float),
                                     (len(el),)).copy()
        self._tlim = effort_limit_array(effort_limits, n)
        self._kpj = joint_gain_array("kp_joint", self.gains.kp_joint, n)
        self._kdj = joint_gain_array("kd_joint", self.gains.kd_joint, n)
        nr = allocation.n_rotors
        self._wmax = np.broadcast_to(np.asarray(allocation.max_rot_velocity, float), (nr,)).copy()
        self._wmin = np.broadcast_to(np.asarray(allocation.min_rot_velocity, float), (nr,)).copy()
        self.elastic = elastic
        self.rotor_saturations = self.motor_saturations = 0
        self._rotors = RotorSampleMean(nr)

    def rotor_reference(self, W_b_jet) -> tuple:
        """``(omega_d, 0)`` of a body wrench (the loop's start state)."""
        u = self.allocation.A_pinv @ np.asarray(W_b_jet[0], float)
        om = np.sqrt(np.clip(u, 0.0, None))
        return om, np.zeros_like(om)

    def motor_reference(self, q_d, tau_d) -> tuple:
        """``(theta_d, theta_d')`` of the elastic joints (``q_d + K^-1 tau_d``, as the actuated controller's)."""
        i = self.idx
        return q_d[0, i] + tau_d[0, i] / self._K, q_d[1, i] + tau_d[1, i] / self._K

    def hold(self) -> None:
        """Forget the measurements (the increment restarts from the next two IMU intervals): on the
        ground, where the accelerometer reads the contact and an increment would wind up."""
        self.core.reset()
        self._rotors.reset()

    @property
    def has_rotor_sample(self) -> bool:
        """True when a rotor sample is waiting for the next IMU interval."""
        return self._rotors.pending

    def rotor_sample(self, rotor_speed) -> None:
        """The measured rotor speeds (n_rot,) [rad/s] of this control step (averaged into the IMU interval)."""
        self._rotors.add(rotor_speed)

    def imu(self, dt, gyro, accel) -> None:
        """One IMU interval (:meth:`IncrementalInversion.imu`) with the mean of the rotor samples since the last."""
        self.core.imu(dt, gyro, accel, self._rotors.take())

    def command(self, C, V_body, q, qd, theta, thetad, C_d, V_body_d, q_d, accel_d) -> ActuatedCommand:
        """Rotor speeds and joint/motor torques for one cycle.

        C, C_d (4, 4) actual and desired base pose; V_body, V_body_d (6,) body twists (w_b, v_b);
        q, qd (n,); theta, thetad (n_el,); q_d (>= 2, n) rows q_d, q_d'; accel_d (6,): the desired
        base acceleration ``(alpha_d, p_d'')``: body angular acceleration in the desired base axes,
        origin acceleration in world axes [rad/s^2, m/s^2].
        """
        f = np.asarray
        C, Vb, Cd, Vbd, ad = (f(C, dtype=float), f(V_body, dtype=float), f(C_d, dtype=float),
                              f(V_body_d, dtype=float), f(accel_d, dtype=float))
        q, qd, Qd = f(q, dtype=float), f(qd, dtype=float), f(q_d, dtype=float)
        n = len(self.joint_names)
        for name, v, shp in (("C", C, (4, 4)), ("V_body", Vb, (6,)), ("C_d", Cd, (4, 4)), ("V_body_d", Vbd, (6,)),
                             ("accel_d", ad, (6,)), ("q", q, (n,)), ("qd", qd, (n,))):
            if v.shape != shp or not np.all(np.isfinite(v)):
                raise ValueError(f"{name}: expected finite values of shape {shp}, got shape {v.shape}")
        if Qd.ndim != 2 or Qd.shape[0] < 2 or Qd.shape[1] != n or not np.all(np.isfinite(Qd[:2])):
            raise ValueError(f"q_d: expected finite rows q_d, q_d' of shape (>= 2, {n}), got shape {Qd.shape}")
        g = self.gains
        R, Rd = C[:3, :3], Cd[:3, :3]
        RtRd = R.T @ Rd
        e_p = C[:3, 3] - Cd[:3, 3]
        e_v = R @ Vb[3:] - Rd @ Vbd[3:]
        Me = Rd.T @ R - R.T @ Rd
        e_R = 0.5 * np.array([Me[2, 1] - Me[1, 2], Me[0, 2] - Me[2, 0], Me[1, 0] - Me[0, 1]])
        e_w = Vb[:3] - RtRd @ Vbd[:3]
        W_fb = np.concatenate([-g.kp_rotation * e_R - g.kd_rotation * e_w,
                               R.T @ (-g.kp_position * e_p - g.kd_position * e_v)])
        x_des = np.concatenate([RtRd @ ad[:3], R.T @ (ad[3:] - self.gravity)]) + self._Minv @ W_fb
        W = self.core.command(x_des)
        u = self.allocation.A_pinv @ W
        om_raw = np.sqrt(np.clip(u, 0.0, None))
        clips = int(np.sum(u < 0.0))
        om = np.clip(om_raw, self._wmin, self._wmax)
        clips += int(np.sum(om != om_raw))
        grav = gravity_vector(self.model, C, q, gravity=tuple(self.gravity))[6:]
        th = np.zeros(0) if self.elastic is None else f(theta, dtype=float)
        thd = np.zeros(0) if self.elastic is None else f(thetad, dtype=float)
        ne = self.idx.size
        if th.shape != (ne,) or thd.shape != (ne,) or not (np.all(np.isfinite(th)) and np.all(np.isfinite(thd))):
            raise ValueError(f"theta, thetad: expected {ne} finite motor angles and rates, got {th!r}, {thd!r}")
        jt_raw, u_raw = joint_pd_gravity(self._kpj, self._kdj, grav, q, qd, th, thd, Qd[0], Qd[1], self.idx, self._K)
        jt = np.clip(jt_raw, -self._tlim, self._tlim)
        um = np.clip(u_raw, -self._umax, self._umax)
        mclips = int(np.sum(jt != jt_raw)) + int(np.sum(um != u_raw))
        self.rotor_saturations += clips
        self.motor_saturations += mclips
        if self.elastic is None:
            return ActuatedCommand(om, jt, om_raw, jt_raw, clips, mclips, jt, jt_raw)
        return ActuatedCommand(om, um, om_raw, u_raw, clips, mclips, jt, jt_raw)
