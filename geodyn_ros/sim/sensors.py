"""Sensor streams of a simulated vehicle, in simulated time and seeded: what a controller really gets.

The in-process loops used to hand the controller the exact MuJoCo state at every step. A vehicle
gets streams instead, each with its own rate, latency and errors (:class:`SensorSuite`):

* **odometry** (motion capture, or an onboard estimator): the base pose ``C`` (4, 4) and its
  spatial twist ``V = (w, pdot + p x w)`` (world axes, angular first; ``CONVENTIONS.md``), at
  ``rate`` [Hz], delivered ``latency`` [s] after it was taken, with one of two error models:

  - :class:`WhiteNoise` (motion capture): independent Gaussian errors per sample on the
    position [m, world axes], the attitude [rad, a rotation ``exp(n) R`` about world axes] and
    the body angular velocity [rad/s] (the flight controller's gyro, which a motion-capture
    controller uses for its rates); the linear velocity either with its own noise [m/s] or
    ``"difference"``: the difference of the last two noisy positions over their stamps (what a
    motion-capture driver computes). The attitude noise may be ``"markers"``: the rotation
    error of a rigid body of four markers on the rotor circle of radius ``L`` (the vehicle's
    size), ``sigma_att = sqrt(2) sigma_p / (L sqrt(4))`` (the in-plane axes, the worse ones);
  - :class:`EstimatorNoise` (a Kalman filter fusing the IMU with an aiding pose: PX4's EKF2
    with external vision or motion capture): the error of a steady-state Kalman filter per axis,
    updated at the odometry rate: position and velocity
    predicted with an accelerometer of noise ``accel_noise`` [m/s^2] (the velocity increment of
    an update period ``T`` has the standard deviation ``accel_noise T``, as EKF2's covariance
    prediction takes it) and corrected by a position aiding of noise ``aiding_position`` [m];
    the attitude (per axis) predicted with a gyro of noise ``gyro_noise`` [rad/s] and
    corrected by an attitude aiding of noise ``aiding_attitude`` [rad] (or ``"markers"``, as
    above); the angular velocity is the gyro's (white, ``gyro_noise``). The error is the filter's, not white: it is correlated
    over the filter's time constant, as a real estimator's is (:func:`estimator_steady_state`);

* **joints** (encoders on a servo bus): link angles ``q`` and rates ``qd`` (n,), quantized to
  ``position_step`` [rad] and ``velocity_step`` [rad/s] (rounded to the nearest count). The motor
  angles and rates ``theta``, ``theta'`` of the elastic joints are read by each joint's drive,
  which closes the motor loop locally (a series-elastic drive does: its motor mode, 70 rad/s here,
  is beyond what a bus at 200 Hz with 5 ms of latency can damp): quantized alike, but at every
  control step and without latency (:meth:`SensorSuite.motors`);
* **imu** (optional): the gyro and the accelerometer of the flight controller at ``rate``,
  each sample the mean over its interval ``dt``: angular velocity ``log(R_0^T R_1) / dt`` (body)
  and specific force ``R_1^T ((pdot_1 - pdot_0) / dt - g)`` (body), with white noise
  ``gyro_noise``, ``accel_noise``. The failsafe dead-reckons on it when odometry is lost
  (:mod:`geodyn_ros.control.failsafe`).

Timing. :meth:`SensorSuite.sample` is called at every simulator step ``t``; a stream takes a
sample at the first step at or after each of its sample instants ``t_0 + k / rate`` (``t_0``: a
seeded phase in the first period), stamped with that step's time (the state of that instant,
exact), and delivers it at the first step at or after ``stamp + latency``. Samples are never
reordered; :meth:`SensorSuite.drop` makes a window of samples never arrive (a lost link).
Every stream draws from its own generator (``numpy.random.SeedSequence(seed).spawn``), so one
seed gives the same errors whatever the other streams do.

The profiles (``perfect``, motion capture, onboard estimator) and their sources are in
``config/sensors.yaml`` (:mod:`geodyn_ros.sim.sensor_file` reads it).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..lie import exp_so3, log_so3

__all__ = ["WhiteNoise", "EstimatorNoise", "OdometrySpec", "JointSpec", "ImuSpec", "SensorProfile", "PERFECT",
           "OdometrySample", "JointSample", "ImuSample", "SensorSuite", "estimator_steady_state",
           "marker_attitude_sigma"]


@dataclass(frozen=True)
class WhiteNoise:
    """Independent Gaussian errors per sample (module docstring): position [m], attitude [rad] or
    ``"markers"``, velocity [m/s] or ``"difference"``, angular_velocity [rad/s]; standard deviations
    per axis."""
    position: float
    attitude: float | str
    velocity: float | str
    angular_velocity: float


@dataclass(frozen=True)
class EstimatorNoise:
    """The error of a steady-state Kalman filter (module docstring): accel_noise [m/s^2],
    gyro_noise [rad/s], aiding_position [m], aiding_attitude [rad] or ``"markers"`` (standard
    deviations per axis)."""
    accel_noise: float
    gyro_noise: float
    aiding_position: float
    aiding_attitude: float | str


@dataclass(frozen=True)
class OdometrySpec:
    """rate [Hz], latency [s] and the error model of the odometry stream."""
    rate: float
    latency: float
    noise: WhiteNoise | EstimatorNoise


@dataclass(frozen=True)
class JointSpec:
    """rate [Hz], latency [s], position_step [rad] and velocity_step [rad/s] (0: not quantized)."""
    rate: float
    latency: float
    position_step: float
    velocity_step: float


@dataclass(frozen=True)
class ImuSpec:
    """rate [Hz], latency [s], gyro_noise [rad/s], accel_noise [m/s^2] (white, per axis)."""
    rate: float
    latency: float
    gyro_noise: float
    accel_noise: float


@dataclass(frozen=True)
class SensorProfile:
    """A named set of streams; ``odometry`` and ``joints`` None: the exact state (``perfect``).
    ``failsafe``: a :class:`~geodyn_ros.control.failsafe.FailsafeConfig` or None (its defaults)."""
    name: str
    odometry: OdometrySpec | None = None
    joints: JointSpec | None = None
    imu: ImuSpec | None = None
    failsafe: object = None

    @property
    def perfect(self) -> bool:
        """True: no stream, the controller reads the exact state (the loops' lock-step path)."""
        return self.odometry is None and self.joints is None

    def with_latency(self, latency: float, name: str | None = None) -> "SensorProfile":
        """The same profile with the odometry ``latency`` [s] replaced."""
        if self.odometry is None:
            raise ValueError(f"latency: profile {self.name!r} has no odometry stream")
        if not (math.isfinite(latency) and latency >= 0):
            raise ValueError(f"latency: expected a finite time >= 0 [s], got {latency!r}")
        return replace(self, name=name or f"{self.name}+{latency * 1e3:g}ms",
                       odometry=replace(self.odometry, latency=float(latency)))


#: the exact state at every step (today's lock-step loops)
PERFECT = SensorProfile("perfect")


class OdometrySample(NamedTuple):
    """C (4, 4) base pose; V (6,) spatial twist ``(w, pdot + p x w)``."""
    C: np.ndarray
    V: np.ndarray


class JointSample(NamedTuple):
    """q, qd (n,) link angles and rates; theta, thetad: empty (the motors are read by their drives,
    :meth:`SensorSuite.motors`)."""
    q: np.ndarray
    qd: np.ndarray
    theta: np.ndarray
    thetad: np.ndarray


class ImuSample(NamedTuple):
    """dt [s] the interval; gyro (3,) mean body angular velocity [rad/s]; accel (3,) mean body
    specific force [m/s^2] over it."""
    dt: float
    gyro: np.ndarray
    accel: np.ndarray


def marker_attitude_sigma(position_sigma: float, size: float, markers: int = 4) -> float:
    """Attitude noise [rad] of a rigid body of ``markers`` markers on a circle of radius ``size`` [m],
    each with the position noise ``position_sigma`` [m]: ``sqrt(2) sigma_p / (size sqrt(markers))``
    (the least-squares rotation about an axis in the markers' plane)."""
    if not (size > 0 and markers > 0):
        raise ValueError(f"size: expected a vehicle size > 0 [m], got {size!r}")
    return math.sqrt(2.0) * position_sigma / (size * math.sqrt(markers))


def estimator_steady_state(period: float, noise: EstimatorNoise) -> dict:
    """The steady-state Kalman filter of :class:`EstimatorNoise` at the update ``period`` ``T`` [s],
    per axis, in closed form: ``{"F", "G", "K" (2,), "P" (2, 2) posterior covariance of (position,
    velocity), "k_att", "p_att" (attitude posterior variance)}``.

    Position and velocity: the constant-velocity model driven by white acceleration (``F = [[1, T],
    [0, 1]]``, ``G = (T^2 / 2, T)``, process noise ``G G^T accel_noise^2``), position aided with
    variance ``R = aiding_position^2``: the steady state depends only on the tracking index
    ``lam = accel_noise T^2 / aiding_position`` (Kalata 1984; Bar-Shalom, Li, Kirubarajan,
    *Estimation with Applications to Tracking and Navigation*, 2001, sec. 6.5): the gains ``K =
    (alpha, beta / T)`` and the posterior ``P = R [[alpha, beta / T], [beta / T, c / T^2]]`` with,
    for ``s = sqrt(lam^2 + 8 lam)`` and ``D = lam + 4 + s``, ``alpha = 2 s / D``, ``beta = 4 lam /
    D``, ``c = 4 lam^2 / (s + lam)`` (the textbook expressions, rewritten without cancellation:
    every ``lam`` of the sensors file's ranges, 1e-11 to 1e8, to rounding). Attitude, per axis: the
    random walk of the gyro's angle increments ``qa = (gyro_noise T)^2`` aided with ``ra =
    aiding_attitude^2``: the prior ``m = (qa + sqrt(qa^2 + 4 qa ra)) / 2`` solves ``m = m ra / (m
    + ra) + qa``, the gain ``k = m / (m + ra)``, the posterior ``m ra / (m + ra)``.

    (The Riccati recursion iterated to convergence, as this was computed before, needs about
    ``1 / alpha`` updates: 100,000 did not reach the steady state of a slow filter, ``lam`` below
    about 1e-6, and took seconds; test/control/test_sensors.py checks the closed form against
    scipy's DARE and the fixed point of the recursion.)"""
    T = float(period)
    F = np.array([[1.0, T], [0.0, 1.0]])
    G = np.array([0.5 * T * T, T])
    R = noise.aiding_position ** 2
    lam = noise.accel_noise * T * T / noise.aiding_position
    s = math.sqrt(lam * lam + 8.0 * lam)
    D = lam + 4.0 + s
    alpha, beta, c = 2.0 * s / D, 4.0 * lam / D, 4.0 * lam * lam / (s + lam)
    P = R * np.array([[alpha, beta / T], [beta / T, c / (T * T)]])
    qa, ra = (noise.gyro_noise * T) ** 2, noise.aiding_attitude ** 2
    m = 0.5 * (qa + math.sqrt(qa * qa + 4.0 * qa * ra))
    return {"F": F, "G": G, "K": np.array([alpha, beta / T]), "P": P, "k_att": m / (m + ra),
            "p_att": m * ra / (m + ra)}


def _quantize(x, step):
    """``x`` rounded to the nearest multiple of ``step`` (a copy; ``step`` 0: unquantized)."""
    x = np.array(x, float)
    return np.round(x / step) * step if step > 0 else x


class _Stream:
    """Timing of one stream: sample instants, stamps and the delivery queue."""

    def __init__(self, name, rate, latency, rng, start_ns):
        if not (math.isfinite(rate) and rate > 0 and math.isfinite(1e9 / rate)):   # (1e-300 Hz: an infinite period)
            raise ValueError(f"{name}.rate: expected a finite rate > 0 [Hz], got {rate!r}")
        if not (math.isfinite(latency) and 0 <= latency < 1e9):     # (stamps are int64 ns)
            raise ValueError(f"{name}.latency: expected a finite time >= 0 [s], got {latency!r}")
        self.name, self.period_ns = name, 1e9 / float(rate)
        self.latency_ns = int(round(latency * 1e9))
        self.rng = rng
        self.first_ns = start_ns + float(rng.uniform(0.0, self.period_ns))   # a seeded phase
        self.k = 0
        self.queue = deque()
        self.drops = []
        self.last_stamp_ns = None

    def due(self, t_ns: int) -> bool:
        return t_ns >= self.first_ns + self.k * self.period_ns - 0.5   # float instants on an integer grid

    def taken(self, t_ns):
        while self.due(t_ns):          # a period shorter than a step takes one sample per step
            self.k += 1

    def push(self, stamp_ns, data):
        if not any(a <= stamp_ns < b for a, b in self.drops):
            self.queue.append((stamp_ns + self.latency_ns, stamp_ns, data))
        self.last_stamp_ns = stamp_ns


class SensorSuite:
    """The streams of a :class:`SensorProfile` on one simulator (module docstring).

    profile : the streams (``perfect``: nothing to do, :meth:`delivered` stays empty);
    seed : the seed of every stream's generator; size : the vehicle's size ``L`` [m] (the
    ``"markers"`` attitude noise); gravity : (3,) [m/s^2] (the accelerometer's specific force);
    start : the time [s] of the first :meth:`sample` (streams start with a seeded phase after it).
    """

    def __init__(self, profile: SensorProfile, *, seed: int, size: float = 0.25,
                 gravity=(0.0, 0.0, -9.81), start: float = 0.0):
        if not isinstance(profile, SensorProfile):
            raise ValueError(f"profile: expected a SensorProfile, got {type(profile).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
        if not (math.isfinite(size) and size > 0):
            raise ValueError(f"size: expected a vehicle size > 0 [m], got {size!r}")
        self.profile, self.size = profile, float(size)
        self.gravity = np.asarray(gravity, float)
        ss = np.random.SeedSequence(int(seed)).spawn(3)
        start_ns = int(round(start * 1e9))
        self.streams = {}
        od = profile.odometry
        if od is not None:
            self.streams["odometry"] = _Stream("odometry", od.rate, od.latency, np.random.default_rng(ss[0]), start_ns)
            self._odo_init(od)
        if profile.joints is not None:
            js = profile.joints
            self.streams["joints"] = _Stream("joints", js.rate, js.latency, np.random.default_rng(ss[1]), start_ns)
        if profile.imu is not None:
            im = profile.imu
            self.streams["imu"] = _Stream("imu", im.rate, im.latency, np.random.default_rng(ss[2]), start_ns)
            self._imu_prev = None

    # ------------------------------------------------------------------ odometry errors
    def _odo_init(self, od):
        nz = od.noise
        self._prev_p = None
        if isinstance(nz, EstimatorNoise):
            if nz.aiding_attitude == "markers":
                nz = replace(nz, aiding_attitude=marker_attitude_sigma(nz.aiding_position, self.size))
            self._est = nz
            self._kf = estimator_steady_state(1.0 / od.rate, nz)
            rng = self.streams["odometry"].rng
            L = np.linalg.cholesky(self._kf["P"])
            self._e_pv = (L @ rng.standard_normal((2, 3)))          # (2, 3): position, velocity errors per axis
            self._e_att = math.sqrt(self._kf["p_att"]) * rng.standard_normal(3)
        else:
            self._kf = None
            att = nz.attitude
            self._att_sigma = (marker_attitude_sigma(nz.position, self.size) if att == "markers" else float(att))

    def _odometry(self, stream, t_ns, sim) -> OdometrySample:
        nz, rng = self.profile.odometry.noise, stream.rng
        if self._kf is not None:
            nz = self._est
        C, Vb = sim.base_pose(), sim.base_twist_body()
        R, p = C[:3, :3], C[:3, 3]
        pdot = R @ Vb[3:]
        if self._kf is not None:
            kf = self._kf
            n_a, n_m = rng.standard_normal(3), rng.standard_normal(3)
            em = kf["F"] @ self._e_pv + np.outer(kf["G"], nz.accel_noise * n_a)
            self._e_pv = em - np.outer(kf["K"], em[0]) + np.outer(kf["K"], nz.aiding_position * n_m)
            am = self._e_att + nz.gyro_noise / self.profile.odometry.rate * rng.standard_normal(3)
            self._e_att = (1.0 - kf["k_att"]) * am + kf["k_att"] * nz.aiding_attitude * rng.standard_normal(3)
            p_m, pdot_m = p + self._e_pv[0], pdot + self._e_pv[1]
            R_m = exp_so3(self._e_att) @ R
            wb_m = Vb[:3] + nz.gyro_noise * rng.standard_normal(3)
        else:
            p_m = p + nz.position * rng.standard_normal(3)
            R_m = exp_so3(self._att_sigma * rng.standard_normal(3)) @ R
            if nz.velocity == "difference":
                if self._prev_p is None:
                    pdot_m = pdot.copy()         # the first sample: no previous position to difference
                else:
                    pdot_m = (p_m - self._prev_p[1]) / ((t_ns - self._prev_p[0]) * 1e-9)
                self._prev_p = (t_ns, p_m)
            else:
                pdot_m = pdot + float(nz.velocity) * rng.standard_normal(3)
            wb_m = Vb[:3] + nz.angular_velocity * rng.standard_normal(3)
        C_m = np.eye(4)
        C_m[:3, :3], C_m[:3, 3] = R_m, p_m
        w = R_m @ wb_m
        return OdometrySample(C_m, np.concatenate([w, pdot_m + np.cross(p_m, w)]))

    # ------------------------------------------------------------------ joints and IMU
    def _joints(self, sim) -> JointSample:
        js = self.profile.joints
        empty = np.zeros(0)
        return JointSample(_quantize(sim.q(), js.position_step), _quantize(sim.qd(), js.velocity_step), empty, empty)

    def motors(self, sim) -> tuple:
        """``(theta, theta')`` of the elastic joints now, quantized like the joints (the drives'
        own encoders, module docstring); empty arrays without elastic joints."""
        if not getattr(sim, "elastic_joints", ()):
            return np.zeros(0), np.zeros(0)
        js = self.profile.joints
        return _quantize(sim.motor_angle(), js.position_step), _quantize(sim.motor_velocity(), js.velocity_step)

    def _imu(self, stream, t_ns, sim):
        im = self.profile.imu
        C, Vb = sim.base_pose(), sim.base_twist_body()
        R = C[:3, :3]
        pdot = R @ Vb[3:]
        prev, self._imu_prev = self._imu_prev, (t_ns, R, pdot)
        if prev is None:
            return None                       # the first instant only starts the first interval
        dt = (t_ns - prev[0]) * 1e-9
        gyro = log_so3(prev[1].T @ R) / dt + im.gyro_noise * stream.rng.standard_normal(3)
        f = R.T @ ((pdot - prev[2]) / dt - self.gravity) + im.accel_noise * stream.rng.standard_normal(3)
        return ImuSample(dt, gyro, f)

    # ------------------------------------------------------------------ the loop's calls
    def sample(self, t: float, sim) -> None:
        """Take the samples due at the simulator time ``t`` [s] (call once per step, in order)."""
        t_ns = int(round(t * 1e9))
        for name, st in self.streams.items():
            if not st.due(t_ns):
                continue
            st.taken(t_ns)
            if name == "odometry":
                st.push(t_ns, self._odometry(st, t_ns, sim))
            elif name == "joints":
                st.push(t_ns, self._joints(sim))
            else:
                s = self._imu(st, t_ns, sim)
                if s is not None:
                    st.push(t_ns, s)

    def delivered(self, t: float) -> list:
        """``[(stream, stamp [s], sample), ...]`` arrived by ``t`` [s] since the last call, oldest first."""
        t_ns = int(round(t * 1e9))
        out = []
        for name, st in self.streams.items():
            q = st.queue
            while q and q[0][0] <= t_ns:
                _, stamp, data = q.popleft()
                out.append((name, stamp * 1e-9, data))
        return out

    def drop(self, stream: str, t_from: float, t_to: float) -> None:
        """Samples of ``stream`` stamped in ``[t_from, t_to)`` [s] never arrive (a lost link)."""
        if stream not in self.streams:
            raise ValueError(f"stream: expected one of {tuple(self.streams)}, got {stream!r}")
        if not (math.isfinite(t_from) and math.isfinite(t_to) and t_to > t_from):
            raise ValueError(f"t_from, t_to: expected finite times with t_to > t_from, got {t_from!r}, {t_to!r}")
        self.streams[stream].drops.append((int(round(t_from * 1e9)), int(round(t_to * 1e9))))
