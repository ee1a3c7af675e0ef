"""What a controller does when its odometry stops: hold, then descend, and resume when it returns.

ROS-free; the in-process loops use it (:mod:`geodyn_ros.loops.sensed`) and the ROS nodes can
reuse it (it sees only times, ages and IMU samples).

:class:`Failsafe` is a state machine over the age of the newest odometry sample:

``tracking``
    the odometry is fresh (age ``<= timeout``): the controller tracks the reference.
``hold``
    no odometry for more than ``timeout``: one log line, and the reference *stops*: its clock
    ``s`` (:class:`~geodyn_ros.control.retiming.Schedule`) ramps from ``s' = 1`` to ``s' = 0`` over
    ``ramp`` seconds with the smooth step, so the vehicle brakes along its path and holds the
    reference pose where the ramp ends (about ``ramp / 2 x`` the speed ahead of the pose of the
    loss), at rest, arm included. The state it is held with is dead-reckoned from the last good
    odometry sample on the flight controller's IMU (:class:`DeadReckoning`).
``descend``
    still nothing ``hold`` seconds after the loss (``then: descend``): one log line, and the
    reference sinks at ``descent_rate`` (its vertical offset's rate ramps to ``-descent_rate``);
    ``then: hold`` holds until the odometry returns.

On restore (a sample of age ``<= timeout`` again): one log line, the clock ramps back to
``s' = 1`` (the reference resumes from where it stopped, later by the outage: no jump), and a
descent is undone (the offset's rate ramps to 0, then the offset back to its value at the loss).
A restore during a ramp cuts the ramp where it is (the reference's acceleration jumps there, its
position and velocity stay continuous).

Defaults (:class:`FailsafeConfig`), each with its source:

* ``timeout``: the odometry's latency plus three sample periods (three samples in a row
  missing; one late or dropped sample does not trip it); None in the file means this;
* ``hold`` = 5 s: PX4's ``EKF2_NOAID_TOUT`` (5,000,000 us), the longest time EKF2 trusts its
  inertial dead reckoning before it declares the horizontal position invalid;
* ``descent_rate`` = 0.7 m/s: PX4's ``MPC_LAND_SPEED`` (landing descent rate);
* ``ramp`` = 1 s: the braking time of the reference; at the figure eight's 0.6 m/s the
  reference decelerates at most ``2.93 v / ramp`` = 1.8 m/s^2 (2.93: the peak slope of the
  smooth step), within the vehicle's tilt authority.

:class:`DeadReckoning` integrates IMU samples (mean body angular velocity and specific force
over each interval, the force in the body frame at the interval's end) from an odometry sample:
``R <- R exp(w dt)``, ``v <- v + (R f + g) dt`` with the new ``R``, ``p <- p + (v_0 + v_1) dt / 2``; with PX4's ``EKF2_GYR_NOISE`` (0.015 rad/s) and
``EKF2_ACC_NOISE`` (0.35 m/s^2) at 200 Hz, half a second drifts about 1 mrad and 5 mm (random
walks ``sigma sqrt(dt t)``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..lie import exp_so3
from .retiming import Schedule

__all__ = ["FailsafeConfig", "Failsafe", "DeadReckoning", "MODES"]

MODES = ("tracking", "hold", "descend")


@dataclass(frozen=True)
class FailsafeConfig:
    """timeout [s] (None: the odometry's latency + 3 periods), hold [s], then ("descend" or
    "hold"), descent_rate [m/s], ramp [s] (module docstring)."""
    timeout: float | None = None
    hold: float = 5.0
    then: str = "descend"
    descent_rate: float = 0.7
    ramp: float = 1.0

    def __post_init__(self):
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout: expected a finite time > 0 [s] or None, got {self.timeout!r}")
        for name in ("hold", "descent_rate", "ramp"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: expected a finite number > 0, got {v!r}")
        if self.then not in ("descend", "hold"):
            raise ValueError(f"then: expected 'descend' or 'hold', got {self.then!r}")

    def timeout_for(self, rate: float, latency: float) -> float:
        """The timeout [s] for an odometry stream of ``rate`` [Hz] and ``latency`` [s]."""
        return self.timeout if self.timeout is not None else latency + 3.0 / rate


class Failsafe:
    """The state machine of the module docstring.

    config : FailsafeConfig; timeout : [s] (``config.timeout_for(...)``); clock, offset : the
    reference's :class:`Schedule` objects it ramps (the clock ``s(t)`` and the vertical offset
    ``d(t)`` [m]; None: fresh ones, ``s = t`` and ``d = 0``); log : ``f(line)`` for the one line per
    transition (default ``print``); name : the stream's name in the lines.

    ``update(t, age)`` (time [s], age [s] of the newest odometry sample, None if there never was
    one) returns the mode; :attr:`mode`, :meth:`status`, :attr:`events` (``(t, mode)`` per
    transition) tell what happened.
    """

    def __init__(self, config: FailsafeConfig, timeout: float, *, clock: Schedule | None = None,
                 offset: Schedule | None = None, log=print, name: str = "odometry"):
        if not isinstance(config, FailsafeConfig):
            raise ValueError(f"config: expected a FailsafeConfig, got {type(config).__name__}")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout: expected a finite time > 0 [s], got {timeout!r}")
        self.config, self.timeout, self.name = config, float(timeout), name
        self.clock = Schedule(0.0, 1.0, 0.0) if clock is None else clock
        self.offset = Schedule(0.0, 0.0, 0.0) if offset is None else offset
        self.log = log
        self.mode = "tracking"
        self.t_loss = self.t_mode = None
        self._offset_at_loss = 0.0
        self.events = []
        self.losses = 0

    @staticmethod
    def _cut(sch: Schedule, t: float) -> None:
        """Rebase ``sch`` at ``t``: its value and rate there, no ramp in progress."""
        x, r = sch.value_rate(t)
        sch.t0, sch.x0, sch.rate0, sch._segs = float(t), x, r, []

    def _enter(self, t, mode, line):
        self.mode, self.t_mode = mode, t
        self.events.append((t, mode))
        if self.log is not None:
            self.log(f"failsafe: t = {t:.3f} s: {line}")

    def update(self, t: float, age: float | None) -> str:
        lost = age is None or age > self.timeout
        c = self.config
        if self.mode == "tracking":
            if lost:
                self.t_loss, self.losses = t, self.losses + 1
                self._offset_at_loss = self.offset.value_rate(t)[0]
                self._cut(self.clock, t)
                self.clock.ramp_rate(t, c.ramp, 0.0)
                what = "never received" if age is None else f"none for {age * 1e3:.0f} ms"
                self._enter(t, "hold", f"{self.name} {what} (timeout {self.timeout * 1e3:.0f} ms): "
                            f"holding the reference (stops in {c.ramp:g} s) on inertial dead reckoning")
        elif not lost:
            out = t - self.t_loss
            self._cut(self.clock, t)
            self.clock.ramp_rate(t, c.ramp, 1.0)
            d, r = self.offset.value_rate(t)
            if r != 0.0 or d != self._offset_at_loss:
                self._cut(self.offset, t)
                back = max(c.ramp, abs(d - self._offset_at_loss) * 2.93 / c.descent_rate)
                if r != 0.0:
                    self.offset.ramp_rate(t, c.ramp, 0.0)
                    self.offset.ramp_value(t + c.ramp, back, self._offset_at_loss)
                else:
                    self.offset.ramp_value(t, back, self._offset_at_loss)
            self._enter(t, "tracking", f"{self.name} restored after {out:.3f} s: resuming the reference")
        elif self.mode == "hold" and c.then == "descend" and t - self.t_loss >= c.hold:
            self._cut(self.offset, t)
            self.offset.ramp_rate(t, c.ramp, -c.descent_rate)
            self._enter(t, "descend", f"{self.name} lost for {t - self.t_loss:.1f} s: descending at "
                        f"{c.descent_rate:g} m/s")
        return self.mode

    def status(self) -> dict:
        """``{"mode", "since" [s] (the last transition, None: never), "losses" (count)}``."""
        return {"mode": self.mode, "since": self.t_mode, "losses": self.losses}


class DeadReckoning:
    """Strapdown integration of IMU samples from an odometry sample (module docstring).

    gravity : (3,) [m/s^2], world axes. :meth:`reset` with an odometry sample (stamp [s], pose
    ``C`` (4, 4), spatial twist ``V`` (6,)); :meth:`imu` with each IMU sample (stamp [s] of its
    end, interval ``dt`` [s], mean body angular velocity ``gyro`` (3,) [rad/s], mean body specific
    force ``accel`` (3,) [m/s^2]); :meth:`state` returns ``(stamp, C, V)``, the pose and spatial
    twist at the newest stamp integrated (None before a reset)."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.g = np.asarray(gravity, float)
        self.stamp = None

    def reset(self, stamp: float, C, V) -> None:
        C = np.asarray(C, float)
        V = np.asarray(V, float)
        self.stamp = float(stamp)
        self.R, self.p = C[:3, :3].copy(), C[:3, 3].copy()
        self.w_body = self.R.T @ V[:3]
        self.v = V[3:] - np.cross(self.p, V[:3])           # pdot = v - p x w

    def imu(self, stamp: float, dt: float, gyro, accel) -> None:
        if self.stamp is None or stamp <= self.stamp:
            return                                         # before the last odometry: already in it
        h = min(float(dt), stamp - self.stamp)             # the part of the interval after the reset
        gyro, accel = np.asarray(gyro, float), np.asarray(accel, float)
        R1 = self.R @ exp_so3(h * gyro)                   # the sample's specific force is in the end frame
        v1 = self.v + (R1 @ accel + self.g) * h
        self.p = self.p + 0.5 * (self.v + v1) * h
        self.v = v1
        self.R = R1
        self.w_body = gyro
        self.stamp = float(stamp)

    def state(self):
        if self.stamp is None:
            return None
        C = np.eye(4)
        C[:3, :3], C[:3, 3] = self.R, self.p
        w = self.R @ self.w_body
        return self.stamp, C, np.concatenate([w, self.v + np.cross(self.p, w)])
