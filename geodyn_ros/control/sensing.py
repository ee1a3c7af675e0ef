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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import exp_so3

__all__ = ["propagate_base", "propagate_joints", "LatestSample", "AGILE", "error_bounds", "ERROR_BOUNDS"]


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


@dataclass(frozen=True)
class Motion:
    """Largest speeds and accelerations of a vehicle (SI: m/s, m/s^2, rad/s, rad/s^2)."""
    v: float
    a: float
    w: float
    alpha: float
    qd: float
    qdd: float


#: an agile aerial manipulator (the module docstring's numbers)
AGILE = Motion(v=2.0, a=10.0, w=3.0, alpha=20.0, qd=3.0, qdd=30.0)


def error_bounds(dt: float, m: Motion = AGILE) -> dict:
    """The error bounds of the module docstring at age ``dt`` [s]: ``{"hold": (position [m],
    attitude [rad], joint [rad]), "propagation": (...)}``."""
    dt = abs(float(dt))
    hold = (m.v * dt + 0.5 * m.a * dt * dt, m.w * dt + 0.5 * m.alpha * dt * dt, m.qd * dt + 0.5 * m.qdd * dt * dt)
    prop = (0.5 * m.a * dt * dt, 0.5 * m.alpha * dt * dt, 0.5 * m.qdd * dt * dt)
    return {"hold": hold, "propagation": prop}


#: the table of the module docstring: age [s] -> error_bounds(age)
ERROR_BOUNDS = {dt: error_bounds(dt) for dt in (0.004, 0.010, 0.020)}
