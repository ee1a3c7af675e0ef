"""Bringing sensor samples taken at different times to one time: the input rule of the nodes and loops.

On a vehicle the state arrives as streams with their own rates, clocks and latencies: odometry
from motion capture or an onboard estimator at 100-250 Hz, joint states from a servo bus at
its own rate. A cycle at time ``t`` takes the newest accepted sample of each stream (stamped
``t_i <= t``, or a little after) and brings it to ``t`` by **propagation over its age**
``dt = t - t_i``:

* the base pose with its spatial twist ``V = (w, v)`` (world axes, about the world origin;
  ``CONVENTIONS.md``), held constant: the base origin moves on a straight line with its velocity
  ``pdot = v + w x p`` and the attitude turns about the fixed world axis of ``w``:
  ``p(t) = p + dt pdot``, ``R(t) = exp(dt hat(w)) R`` (a constant-velocity model, as estimators
  predict between updates); the twist itself is held (:func:`propagate_base`);
* each joint with its rate: ``q(t) = q(t_i) + dt qdot(t_i)``; the rate is held
  (:func:`propagate_joints`).

**Why propagation, not a zero-order hold** (the hold of ``message_filters``' LatestTime policy).
Over an age ``dt`` the held value is off by the motion in ``dt``; the propagated one only by
the change of the velocity in ``dt``. With ``a`` the largest linear acceleration, ``alpha`` the
largest angular acceleration and ``v``, ``w`` the largest speeds:

* zero-order hold: position error ``<= v dt + a dt^2 / 2``, attitude ``<= w dt + alpha dt^2 / 2``;
* propagation: position error ``<= a dt^2 / 2`` (``a``: the base origin's acceleration),
  attitude ``<= alpha dt^2 / 2`` (the Taylor remainders); joints alike with ``qdot`` and
  ``qddot``.

For an agile aerial manipulator (``v`` = 2 m/s, ``a`` = 10 m/s^2, ``w`` = 3 rad/s, ``alpha`` = 20
rad/s^2, joints 3 rad/s and 30 rad/s^2) these are, at the ages the sensor profiles give
(:data:`ERROR_BOUNDS`, recomputed by ``test/control/test_sensing.py``):

=========================  =========================  ===============================
age                        hold: position, attitude   propagation: position, attitude
=========================  =========================  ===============================
4 ms (250 Hz mocap)        8.1 mm, 12.2 mrad          0.08 mm, 0.16 mrad
10 ms (100 Hz estimator)   20.5 mm, 31 mrad           0.5 mm, 1.0 mrad
20 ms                      42 mm, 64 mrad             2.0 mm, 4.0 mrad
=========================  =========================  ===============================

Propagation is two orders of magnitude better at the ages that matter, costs one rotation
exponential per cycle, and, on a sample delayed by a known latency, compensates that latency to
first order. Samples older than a per-stream maximum age are refused (:class:`LatestSample`):
beyond it the bound above grows past what the feedforward is worth.

**The held twist** is what the table above leaves out, and what the controllers feel most: the
twist itself is ``dt`` old, off by ``a dt`` (linear) and ``alpha dt`` (angular). On the collinear
vehicle under motion capture (``dt`` = 6.3 ms on average) the small model of
``geodyn_ros.examples.sensing_table`` puts 1.64 mm of its 1.76 mm CoM floor there.

The rules (:data:`RULES`; the in-process loops' ``Sensing(rule=...)``):

* ``"twist"``: the rule above (the pose propagated at the sample's twist, the twist held);
* ``"imu"`` (the default where an IMU stream exists): **an output predictor**, as PX4's EKF2 runs
  one (``src/modules/ekf2/EKF/output_predictor``: a strapdown integration of the newest IMU data
  ahead of the delayed estimate, corrected towards it). :class:`ImuPropagator` re-anchors a
  strapdown integration at every odometry sample (its stamp, pose and twist) and integrates every
  IMU sample stamped after it (:class:`~geodyn_ros.control.failsafe.DeadReckoning`: ``R <- R
  exp(w dt)``, ``v <- v + (R f + g) dt``, ``p`` by the trapezoid); the newest IMU sample is then
  ``r = t - s_k`` old (``r < T + step`` for an IMU of period ``T`` without latency, whatever the
  odometry's age), and the rest is propagated as above, the base origin's integrated velocity
  and the newest gyro sample's angular velocity held (not the spatial twist: its base-origin
  velocity would turn by ``w x pdot r``). PX4 corrects its predictor towards each estimate through a
  complementary filter (time constants ``EKF2_TAU_VEL``, ``EKF2_TAU_POS``: 0.25 s), which smooths
  the output but lags it; here the correction is complete at every sample (a reset), which adds no
  lag: the jumps at a reset are the predictor's drift over the sample's age, far below the noise;
* ``"imu_model"``: as ``"imu"``, and the remaining ``r`` (and the gyro sample's own half period:
  it is the mean over its interval) propagated with **the model's acceleration jets**: the
  reference's spatial twist rate ``V'`` that the feedforward inverts (:func:`propagate_base_rate`),
  so only the model's acceleration error ``delta a`` is held.

Error bounds of the IMU rules, noise-free (the simulator's IMU, mean rate and mean specific force
per interval, is integrated exactly; :func:`imu_error_bounds`), with ``j`` the largest jerk,
``zeta`` the largest angular jerk: ``"imu"``: velocity ``a r + j T^2 / 8``, angular velocity ``alpha
(r + T / 2)``, position ``a r^2 / 2 + 5 j T^2 dt / 24``, attitude ``alpha (T^2 / 8 + T r / 2 + r^2 / 2)``
(``T^2 / 8``: an odometry stamp inside an IMU interval, whose attitude error also tilts the specific
force: ``(g + a) alpha T^2 / 8`` more, times ``dt`` on the velocity; ``r`` the age of the newest IMU
sample, at most ``min(dt, T)``); ``"imu_model"``: the same with ``a`` and ``alpha`` replaced by the model's errors
``delta a``, ``delta alpha`` in the held part, plus ``j r^2 / 2`` and ``zeta (r + T / 2)^2 / 2``. The
IMU's own errors add, per axis: white noise ``sigma_a``, ``sigma_g`` per sample give the velocity
``sigma_a sqrt(T dt)`` and the attitude ``sigma_g sqrt(T dt)`` (random walks over ``dt / T``
samples); biases ``b_a``, ``b_g`` give ``b_a dt`` and ``b_g dt`` (the rule integrates the raw IMU).
For the agile motion above (``j`` = 100 m/s^3, ``zeta`` = 400 rad/s^3) and the 200 Hz IMU of
PX4's ``IMU_INTEG_RATE`` (``T`` = 5 ms, the worst ``r`` = ``T``), the held twist's error
(:data:`TWIST_BOUNDS`, recomputed by ``test/control/test_sensing.py``; ``imu_model`` with ``delta a``
= 1 m/s^2 and ``delta alpha`` = 2 rad/s^2, a tenth of the motion's):

=========================  =======================  =======================  =======================
age                        twist: v, w              imu: v, w                imu_model: v, w
=========================  =======================  =======================  =======================
4 ms (250 Hz mocap)        40 mm/s, 80 mrad/s       40 mm/s, 130 mrad/s      5.1 mm/s, 21 mrad/s
10 ms (100 Hz estimator)   100 mm/s, 200 mrad/s     50 mm/s, 150 mrad/s      6.6 mm/s, 26 mrad/s
20 ms                      200 mm/s, 400 mrad/s     50 mm/s, 150 mrad/s      6.6 mm/s, 26 mrad/s
=========================  =======================  =======================  =======================

The ``"imu"`` rule caps the held velocity at one IMU period, whatever the odometry's age or
latency: on average ``a T / 2`` against ``a dt``; its angular velocity, the mean over the last
interval, is no fresher than a 4 ms old sample's (a faster gyro stream is, PX4's
``IMU_GYRO_RATEMAX``). With the IMU noise of the ``mocap`` profile (``sigma_a`` = 0.35 m/s^2 per
5 ms sample) the velocity's noise over 6 ms is 1.9 mm/s, half the motion-capture filter's own
4 mm/s.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..lie import exp_so3
from .failsafe import DeadReckoning

__all__ = ["propagate_base", "propagate_base_rate", "propagate_joints", "LatestSample", "ImuPropagator", "RULES",
           "AGILE", "error_bounds", "imu_error_bounds", "ERROR_BOUNDS", "TWIST_BOUNDS"]

#: the input rules (module docstring): the pose at the held twist; the output predictor on the IMU;
#: and the same with the model's acceleration over the newest IMU sample's age
RULES = ("twist", "imu", "imu_model")


def propagate_base(C, V, dt: float, out: np.ndarray | None = None) -> np.ndarray:
    """The base pose (4, 4) ``dt`` [s] after ``C`` (world <- base) at the spatial twist ``V`` (6,)
    = (w, v), held: ``p + dt (v + w x p)`` and ``exp(dt hat(w)) R`` (module docstring). ``dt`` may
    be negative (a sample newer than the cycle). Written into ``out`` when given."""
    C = np.asarray(C, float)
    V = np.asarray(V, float)
    w, p = V[:3], C[:3, 3]
    if out is None:
        out = np.eye(4)
    out[:3, :3] = exp_so3(float(dt) * w) @ C[:3, :3]
    out[:3, 3] = p + float(dt) * (V[3:] + np.cross(w, p))
    out[3] = (0.0, 0.0, 0.0, 1.0)
    return out


def propagate_base_rate(C, V, dV, dt: float, w_lag: float = 0.0):
    """``(C (4, 4), V (6,))``: the base pose and spatial twist ``dt`` [s] after ``C`` and ``V`` =
    (w, v) with the spatial twist rate ``dV`` = (w', v') held (the model's acceleration jets; module
    docstring), to second order: with ``pdot = v + w x p`` and ``pddot = v' + w' x p + w x pdot``,
    ``p(dt) = p + dt pdot + dt^2 / 2 pddot``, ``w(dt) = w + dt w'``, ``R(dt) = exp(dt w + dt^2 / 2 w') R``.
    ``w_lag`` [s]: the angular velocity in ``V`` describes the instant ``w_lag`` before ``C`` (a gyro
    sample's mean over its interval: half its period), so ``w + w_lag w'`` is used at ``C``."""
    C = np.asarray(C, float)
    V = np.asarray(V, float)
    dV = np.asarray(dV, float)
    dt, w_lag = float(dt), float(w_lag)
    p, R = C[:3, 3], C[:3, :3]
    w = V[:3] + w_lag * dV[:3]
    pdot = V[3:] + np.cross(V[:3], p)                  # the base origin's velocity (the sample's own)
    pddot = dV[3:] + np.cross(dV[:3], p) + np.cross(w, pdot)
    out = np.eye(4)
    out[:3, :3] = exp_so3(dt * w + 0.5 * dt * dt * dV[:3]) @ R
    p1 = p + dt * pdot + 0.5 * dt * dt * pddot
    out[:3, 3] = p1
    w1 = w + dt * dV[:3]
    return out, np.concatenate([w1, pdot + dt * pddot - np.cross(w1, p1)])


def propagate_joints(q, qd, dt: float, out: np.ndarray | None = None) -> np.ndarray:
    """Joint positions ``dt`` [s] after ``q`` (n,) moving with the constant rates ``qd`` (n,)."""
    if out is None:
        return np.asarray(q, float) + float(dt) * np.asarray(qd, float)
    np.multiply(qd, float(dt), out=out)
    out += q
    return out


class LatestSample:
    """The newest accepted sample of one stream, refused when older than ``max_age_ns``.

    ``offer(stamp_ns, data)`` keeps the sample if it is newer than the one held (an older or
    equal stamp is not kept: returns False); ``take(t_ns)`` returns ``(stamp_ns, data, age_ns)``
    of the sample held if its age ``t_ns - stamp_ns`` lies in ``[-max_ahead_ns, max_age_ns]``,
    else None (too old, or from the future of the cycle)."""

    def __init__(self, name: str, max_age_ns: int, max_ahead_ns: int = 0):
        if max_age_ns <= 0 or max_ahead_ns < 0:
            raise ValueError(f"{name}: max_age_ns must be > 0 and max_ahead_ns >= 0, got {max_age_ns}, {max_ahead_ns}")
        self.name, self.max_age_ns, self.max_ahead_ns = name, int(max_age_ns), int(max_ahead_ns)
        self.stamp_ns = None
        self.data = None

    def offer(self, stamp_ns: int, data) -> bool:
        if self.stamp_ns is not None and stamp_ns <= self.stamp_ns:
            return False
        self.stamp_ns, self.data = int(stamp_ns), data
        return True

    def take(self, t_ns: int):
        if self.stamp_ns is None:
            return None
        age = int(t_ns) - self.stamp_ns
        if age > self.max_age_ns or age < -self.max_ahead_ns:
            return None
        return self.stamp_ns, self.data, age

    def reset(self) -> None:
        self.stamp_ns = self.data = None


class ImuPropagator:
    """The ``"imu"`` input rule (module docstring): an output predictor on the IMU stream.

    gravity : (3,) [m/s^2]; buffer : the IMU samples kept for re-integration (512: 2.5 s at 200 Hz).
    :meth:`reset` with an odometry sample (stamp [s], pose ``C`` (4, 4), spatial twist ``V`` (6,)):
    the integration restarts there and re-integrates the buffered IMU samples stamped after it (a
    late sample is brought forward too); :meth:`imu` with each IMU sample (stamp [s] of its end,
    interval [s], mean body rate (3,) [rad/s], mean body specific force (3,) [m/s^2]);
    :meth:`predict` the pose and spatial twist at ``t``. The same integration is the failsafe's
    dead reckoning (:class:`~geodyn_ros.control.failsafe.DeadReckoning`)."""

    def __init__(self, gravity=(0.0, 0.0, -9.81), buffer: int = 512):
        g = np.asarray(gravity, float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: expected 3 finite numbers [m/s^2], got {gravity!r}")
        if isinstance(buffer, bool) or not isinstance(buffer, (int, np.integer)) or buffer < 1:
            raise ValueError(f"buffer: expected a whole number of IMU samples >= 1 (512: 2.5 s at 200 Hz), got {buffer!r}")
        self.dr = DeadReckoning(gravity)
        self.buf = deque(maxlen=int(buffer))
        self.last_dt = 0.0               # the interval of the newest IMU sample integrated (0: none since the reset)

    def reset(self, stamp: float, C, V) -> None:
        self.dr.reset(stamp, C, V)
        self.last_dt = 0.0
        buf = self.buf
        i = len(buf)
        while i and buf[i - 1][0] > stamp:           # the samples after the stamp (the buffer is in stamp order)
            i -= 1
        for k in range(i, len(buf)):
            s, dt, g, a = buf[k]
            self.dr.imu(s, dt, g, a)
            self.last_dt = dt

    def imu(self, stamp: float, dt: float, gyro, accel) -> None:
        self.buf.append((stamp, dt, gyro, accel))
        if self.dr.stamp is not None and stamp > self.dr.stamp:
            self.last_dt = dt
        self.dr.imu(stamp, dt, gyro, accel)

    def state(self):
        """``(stamp, C, V)`` integrated to the newest IMU sample (or the reset's), None before a reset."""
        return self.dr.state()

    def predict(self, t: float, rate=None):
        """``(C, V)`` at ``t`` [s]: the integrated state brought over its remaining age ``r`` with its
        base-origin velocity and angular velocity held (``rate`` None: the pose of
        :func:`propagate_base`, and the twist whose base-origin velocity is the integrated one at the
        new pose: ``V = (w, pdot - w x p(t))``, where holding the spatial twist itself would turn the
        velocity by ``w x pdot r``), or with the model's spatial twist rate ``rate`` (6,)
        (:func:`propagate_base_rate`, the gyro sample's half interval included)."""
        stamp, C, V = self.dr.state()
        if rate is not None:
            return propagate_base_rate(C, V, rate, t - stamp, 0.5 * self.last_dt)
        w = V[:3]
        pdot = V[3:] + np.cross(w, C[:3, 3])
        C1 = propagate_base(C, V, t - stamp)
        return C1, np.concatenate([w, pdot - np.cross(w, C1[:3, 3])])


@dataclass(frozen=True)
class Motion:
    """Largest speeds, accelerations and jerks of a vehicle (SI: m/s, m/s^2, rad/s, rad/s^2, m/s^3,
    rad/s^3)."""
    v: float
    a: float
    w: float
    alpha: float
    qd: float
    qdd: float
    j: float = 100.0
    zeta: float = 400.0


#: an agile aerial manipulator (the module docstring's numbers)
AGILE = Motion(v=2.0, a=10.0, w=3.0, alpha=20.0, qd=3.0, qdd=30.0)


def error_bounds(dt: float, m: Motion = AGILE) -> dict:
    """The error bounds of the module docstring at age ``dt`` [s]: ``{"hold": (position [m],
    attitude [rad], joint [rad]), "propagation": (...)}``."""
    dt = abs(float(dt))
    hold = (m.v * dt + 0.5 * m.a * dt * dt, m.w * dt + 0.5 * m.alpha * dt * dt, m.qd * dt + 0.5 * m.qdd * dt * dt)
    prop = (0.5 * m.a * dt * dt, 0.5 * m.alpha * dt * dt, 0.5 * m.qdd * dt * dt)
    return {"hold": hold, "propagation": prop}


def _number(name: str, x, bound):
    """``x`` as a finite float, ``> 0`` or ``>= 0`` as ``bound`` says (None: any), else a ValueError naming it."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v) or (bound == "> 0" and v <= 0) or (bound == ">= 0" and v < 0):
        raise ValueError(f"{name}: expected a finite number{'' if bound is None else ' ' + bound} (SI units), got {x!r}")
    return v


def imu_error_bounds(dt: float, period: float, m: Motion = AGILE, *, r: float | None = None, da: float = 1.0,
                     dalpha: float = 2.0, g: float = 9.81) -> dict:
    """The noise-free error bounds of the module docstring for a sample ``dt`` [s] old and an IMU of
    ``period`` ``T`` [s] whose newest sample is ``r`` [s] old (``r >= dt``: no IMU sample after the
    odometry's yet, the state is the sample's; None: the worst over ``0 <= r <= min(dt, T)``), with
    the model's acceleration errors ``da`` [m/s^2], ``dalpha`` [rad/s^2] and gravity ``g`` [m/s^2]:
    ``{rule: (velocity [m/s], angular velocity [rad/s], position [m], attitude [rad])}`` for every
    rule of :data:`RULES`. The IMU rules' terms besides the docstring's: the attitude error of the
    stamp's interval (``alpha T^2 / 8``) tilts the specific force (at most ``g + a``) over the age,
    ``(g + a) alpha T^2 / 8`` times ``dt`` (velocity) and ``dt^2 / 2`` (position)."""
    dt = _number("dt", dt, None)
    period = _number("period", period, "> 0")
    da, dalpha, g = _number("da", da, ">= 0"), _number("dalpha", dalpha, ">= 0"), _number("g", g, ">= 0")
    if r is not None:
        r = _number("r", r, ">= 0")
    dt, T = abs(float(dt)), float(period)
    twist = (m.a * dt, m.alpha * dt, 0.5 * m.a * dt * dt, 0.5 * m.alpha * dt * dt)
    if r is None:
        if dt > T:
            return imu_error_bounds(dt, T, m, r=T, da=da, dalpha=dalpha, g=g)
        after = imu_error_bounds(dt, T, m, r=dt * (1.0 - 1e-12), da=da, dalpha=dalpha, g=g)
        none = imu_error_bounds(dt, T, m, r=dt, da=da, dalpha=dalpha, g=g)
        return {k: tuple(max(x, y) for x, y in zip(after[k], none[k])) for k in after}
    r = float(r)
    if r >= dt:                            # no IMU sample after the odometry's: the sample's own state
        return {"twist": twist, "imu": twist, "imu_model": (da * dt + 0.5 * m.j * dt * dt,
                                                            dalpha * dt + 0.5 * m.zeta * dt * dt,
                                                            0.5 * da * dt * dt, 0.5 * dalpha * dt * dt)}
    part = 0.125 * T * T                   # an odometry stamp inside an IMU interval (the interval's mean)
    lag = r + 0.5 * T
    tilt = (g + m.a) * m.alpha * part      # that interval's attitude error on the specific force [m/s^2]
    v_ins = m.j * part + tilt * dt
    pos_ins = (5.0 / 24.0) * m.j * T * T * dt + 0.5 * tilt * dt * dt
    imu = (m.a * r + v_ins, m.alpha * lag, 0.5 * m.a * r * r + pos_ins,
           m.alpha * (part + 0.5 * T * r + 0.5 * r * r))
    model = (da * r + 0.5 * m.j * r * r + v_ins, dalpha * lag + 0.5 * m.zeta * lag * lag,
             0.5 * da * r * r + pos_ins, m.alpha * part + dalpha * (0.5 * T * r + 0.5 * r * r))
    return {"twist": twist, "imu": imu, "imu_model": model}


#: the table of the module docstring: age [s] -> error_bounds(age)
ERROR_BOUNDS = {dt: error_bounds(dt) for dt in (0.004, 0.010, 0.020)}
#: the held twist's table of the module docstring: age [s] -> imu_error_bounds(age, 5 ms)
TWIST_BOUNDS = {dt: imu_error_bounds(dt, 0.005) for dt in (0.004, 0.010, 0.020)}
