"""What a controller commands while it cannot see: a predicted state and a bounded command.

ROS-free pieces of the controllers' failsafe (:mod:`geodyn_ros.ros.inputs.failsafe_inputs` uses
them; the state machine is :mod:`geodyn_ros.control.failsafe`).

**Why.** Without odometry the vehicle's state is not observed. Holding a *frozen* state (the last
pose, at rest) while the failsafe's reference moves (it brakes, then descends) makes the position
error of the feedback grow linearly with time, and so the command: with PD gains of 400 N/m a
reference sinking at 0.7 m/s asks 280 N more every second. A command must come from an *estimate*
that moves as the vehicle does.

:class:`PointMassPredictor`
    the base origin propagated as a point mass of the vehicle's total mass ``m`` under the force
    the controller commands, ``p'' = F / m + g`` (world axes), exactly for a force held over each
    cycle: ``p <- p + v dt + a dt^2 / 2``, ``v <- v + a dt``. The feedback then closes on what the
    vehicle does if the model is right, so the command converges to the feedforward of the
    failsafe's reference (hover, braking, the descent's ramp) instead of growing. It is the open
    loop a flight controller flies without an estimate; it is honest about one thing only: the
    vehicle's *model*. An IMU, where one is read, replaces it (:class:`~geodyn_ros.control.failsafe.DeadReckoning`).

:class:`ForceBound`
    the command's bound: the force ``F`` (world axes) the vehicle is asked for satisfies
    ``|F - m g_up| <= m a_max`` (``g_up = -g``): as a point mass it is never asked to accelerate by
    more than ``a_max`` in any direction, so ``m (|g| - a_max) <= |F| <= m (|g| + a_max)``; a descent
    never asks for more than ``a_max`` of deceleration, and never for less thrust than
    ``m (|g| - a_max)`` (no free fall). :meth:`ForceBound.clip_force` projects a force onto that
    ball (unchanged inside); :meth:`ForceBound.thrust_interval` is the interval of thrusts ``T``
    along a unit axis ``b`` with ``T b`` in it (a collinear vehicle can only scale its thrust); the
    torque bound ``m (|g| + a_max) r_g`` is that force at the vehicle's radius of gyration
    ``r_g = sqrt(lambda_max(I) / m)`` (:func:`torque_bound`).

:func:`resume_time`
    the length of the return to the live reference after a restore: ``max(ramp, 2.93 gap /
    speed)`` (the smooth step's peak slope is 2.93, so the return's peak speed is ``speed``).

:func:`hold_fields`, :func:`blend_fields`
    the held reference (braked along its velocity on a clock, lowered by an offset) and the blend
    from a held to a live reference with its Leibniz derivatives, on the ROS controllers' input
    fields (:mod:`geodyn_ros.ros.inputs.failsafe_inputs` describes the kinds).
"""
from __future__ import annotations

import math

import numpy as np

from ..lie import exp_so3, log_so3
from .sensing import propagate_base

__all__ = ["PointMassPredictor", "ForceBound", "torque_bound", "resume_time", "SMOOTH_SLOPE", "hold_fields",
           "blend_fields", "field_position"]

#: the peak slope of the smooth step (:func:`geodyn_ros.control.retiming.smoothstep`): a ramp of
#: height h over T peaks at 2.93 h / T
SMOOTH_SLOPE = 2.9326171875


def _finite_positive(name, v):
    if isinstance(v, bool) or not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v > 0):
        raise ValueError(f"{name}: expected a finite number > 0, got {v!r}")
    return float(v)


class PointMassPredictor:
    """The base origin as a point mass (module docstring).

    mass [kg] > 0, gravity (3,) [m/s^2] world axes. :meth:`reset` with a time [s], position (3,)
    [m] and velocity ``pdot`` (3,) [m/s]; :meth:`apply` the force (3,) [N, world axes] commanded at
    a time (held until the next one); :meth:`at` the predicted ``(p, pdot)`` at a later time."""

    def __init__(self, mass: float, gravity=(0.0, 0.0, -9.81)):
        self.mass = _finite_positive("mass", mass)
        self.g = np.asarray(gravity, float)
        if self.g.shape != (3,) or not np.isfinite(self.g).all():
            raise ValueError(f"gravity: expected 3 finite numbers, got {gravity!r}")
        self.t = None

    def reset(self, t: float, p, pdot) -> None:
        self.t = float(t)
        self.p, self.v = np.array(p, float), np.array(pdot, float)
        self.a = self.g.copy()   # no force known yet: the first apply() sets it

    def apply(self, t: float, force) -> None:
        """The force commanded at ``t`` (after :meth:`at` for ``t``), held until the next one."""
        self.at(t)
        self.a = np.asarray(force, float) / self.mass + self.g

    def at(self, t: float):
        """``(p, pdot)`` at ``t`` (not before the last time: a clock that went back is not integrated)."""
        dt = float(t) - self.t
        if dt > 0.0:
            self.p = self.p + self.v * dt + 0.5 * self.a * dt * dt
            self.v = self.v + self.a * dt
            self.t = float(t)
        return self.p.copy(), self.v.copy()


class ForceBound:
    """The failsafe's bound on the commanded force and torque (module docstring).

    mass [kg], max_accel ``a_max`` [m/s^2] > 0, gravity (3,) [m/s^2], max_torque [N m] > 0."""

    def __init__(self, mass: float, max_accel: float, gravity=(0.0, 0.0, -9.81), max_torque: float = math.inf):
        self.mass = _finite_positive("mass", mass)
        self.max_accel = _finite_positive("max_accel", max_accel)
        g = np.asarray(gravity, float)
        if g.shape != (3,) or not np.isfinite(g).all() or not np.any(g):
            raise ValueError(f"gravity: expected 3 finite numbers, not all 0, got {gravity!r}")
        if not (max_torque > 0):
            raise ValueError(f"max_torque: expected a number > 0, got {max_torque!r}")
        self.center = -self.mass * g          # the hover force
        self.radius = self.mass * self.max_accel
        self.max_torque = float(max_torque)

    def contains(self, F, rtol: float = 1e-9) -> bool:
        return float(np.linalg.norm(np.asarray(F, float) - self.center)) <= self.radius * (1.0 + rtol)

    def clip_force(self, F) -> np.ndarray:
        """``F`` (3,) [N, world axes] projected onto the ball ``|F - m g_up| <= m a_max``."""
        F = np.asarray(F, float)
        e = F - self.center
        n = float(np.linalg.norm(e))
        if n <= self.radius:
            return F.copy()
        return self.center + e * (self.radius / n)

    def thrust_interval(self, b) -> tuple:
        """``(T_lo, T_hi)`` [N]: the thrusts ``T`` along the unit axis ``b`` (3,) (world axes) with
        ``T b`` in the ball; where the axis is tilted beyond it (``|m g_up x b| > m a_max``) the
        single thrust closest to it, ``(c, c)`` with ``c = m g_up . b`` (then clipped at 0)."""
        b = np.asarray(b, float)
        b = b / np.linalg.norm(b)
        c = float(self.center @ b)
        disc = self.radius ** 2 - (float(self.center @ self.center) - c * c)
        if disc <= 0.0:
            c = max(c, 0.0)
            return c, c
        r = math.sqrt(disc)
        return max(c - r, 0.0), max(c + r, 0.0)

    def clip_torque(self, tau) -> np.ndarray:
        """``tau`` (3,) [N m] scaled to a norm of at most ``max_torque``."""
        tau = np.asarray(tau, float)
        n = float(np.linalg.norm(tau))
        return tau.copy() if n <= self.max_torque else tau * (self.max_torque / n)


def torque_bound(mass: float, max_accel: float, inertia, gravity=(0.0, 0.0, -9.81)) -> float:
    """``m (|g| + a_max) r_g`` [N m], ``r_g = sqrt(lambda_max(inertia) / m)`` for the (3, 3)
    rotational inertia [kg m^2] of the vehicle (module docstring)."""
    lam = float(np.max(np.linalg.eigvalsh(0.5 * (np.asarray(inertia, float) + np.asarray(inertia, float).T))))
    return float(mass) * (float(np.linalg.norm(gravity)) + float(max_accel)) * math.sqrt(max(lam, 0.0) / float(mass))


def resume_time(gap: float, speed: float, ramp: float) -> float:
    """``max(ramp, 2.93 gap / speed)`` [s] (module docstring)."""
    return max(float(ramp), SMOOTH_SLOPE * float(gap) / float(speed))


# ----------------------------------------------------------------------------- the held and blended inputs
def _rows(a, kind: str = "jet"):
    """``a`` as rows of derivatives: a 1-D jet is a column of scalars, a 1-D feedforward one row."""
    a = np.asarray(a, float)
    if a.ndim == 1:
        return a.reshape(1, -1) if kind == "ff" else a.reshape(-1, 1)
    return a


def hold_fields(fields, s, d):
    """The held values of ``fields`` (``[(kind, value)]``, the values at the loss) with the clock's
    progress ``s = (sigma, s', s'', ...)`` since the loss (``sigma = s(t) - s(t_loss)``) and the vertical
    offset's jet ``d = (d, d', d'', ...)`` relative to the loss; returns ``[value]`` (module docstring)."""
    out = []
    for kind, v in fields:
        if kind == "pose":
            C0, V0 = v
            V0 = np.asarray(V0, float)
            C = propagate_base(C0, V0[0], s[0])
            V = np.zeros_like(V0)
            for k in range(V.shape[0]):
                V[k] = (s[k + 1] if k + 1 < len(s) else 0.0) * V0[0]
            p = C[:3, 3]
            C[2, 3] += d[0]
            for k in range(V.shape[0]):   # v = pdot - w x p with p += d e_z, pdot += d' e_z
                dk = d[k + 1] if k + 1 < len(d) else 0.0
                V[k, 5] += dk
                V[k, 3:] -= np.cross(V[k, :3], (0.0, 0.0, d[0])) if k == 0 else 0.0
            del p
            out.append((C, V))
        elif kind in ("jet", "jet_z"):
            a = np.asarray(v, float)
            r = _rows(a)
            h = np.zeros_like(r)
            h[0] = r[0] + (s[0] * r[1] if r.shape[0] > 1 else 0.0)
            for k in range(1, r.shape[0]):
                h[k] = (s[k] if k < len(s) else 0.0) * r[1]
            if kind == "jet_z":
                for k in range(r.shape[0]):
                    h[k, 2] += d[k] if k < len(d) else 0.0
            out.append(h.reshape(a.shape))
        else:   # ff: held, derivatives zero
            a = np.array(v, float)
            r = _rows(a, "ff")
            r[1:] = 0.0
            out.append(r.reshape(a.shape))
    return out


def _leibniz(h, l, w, kind: str = "jet"):
    """Rows of ``h + w (l - h)`` (rows = derivatives) with the blend weight's jet ``w``."""
    h, l = _rows(h, kind), _rows(l, kind)
    out = h + w[0] * (l - h)
    for k in range(1, h.shape[0]):
        for j in range(1, k + 1):
            out[k] += math.comb(k, j) * (w[j] if j < len(w) else 0.0) * (l[k - j] - h[k - j])
    return out


def blend_fields(kinds, held, live, w):
    """``held`` -> ``live`` values (lists in the order of ``kinds``) by the weight jet ``w`` (module
    docstring). A pose blends its position jet (``pdot = v + w x p``) by Leibniz and its rotation on
    SO(3) (``R_h exp(w phi)``), its angular rate rows with the first-order terms in ``w'``, ``w''``."""
    out = []
    for kind, h, l in zip(kinds, held, live):
        if kind == "pose":
            (Ch, Vh), (Cl, Vl) = h, l
            Vh, Vl = np.asarray(Vh, float), np.asarray(Vl, float)
            k = Vh.shape[0]

            def pjet(C, V):
                p = C[:3, 3]
                rows = [p, V[0, 3:] + np.cross(V[0, :3], p)]
                if k > 1:
                    rows.append(V[1, 3:] + np.cross(V[1, :3], p) + np.cross(V[0, :3], rows[1]))
                return np.array(rows)
            P = _leibniz(pjet(Ch, Vh), pjet(Cl, Vl), w)
            phi = log_so3(Ch[:3, :3].T @ Cl[:3, :3])
            dphi = Ch[:3, :3] @ phi
            C = np.eye(4)
            C[:3, :3] = Ch[:3, :3] @ exp_so3(w[0] * phi)
            C[:3, 3] = P[0]
            V = np.zeros_like(Vh)
            om = (1 - w[0]) * Vh[0, :3] + w[0] * Vl[0, :3] + (w[1] if len(w) > 1 else 0.0) * dphi
            V[0, :3], V[0, 3:] = om, P[1] - np.cross(om, P[0])
            if k > 1:
                al = (1 - w[0]) * Vh[1, :3] + w[0] * Vl[1, :3] + 2 * w[1] * (Vl[0, :3] - Vh[0, :3]) + w[2] * dphi
                V[1, :3], V[1, 3:] = al, P[2] - np.cross(al, P[0]) - np.cross(om, P[1])
            out.append((C, V))
        else:
            a = np.asarray(h, float)
            out.append(_leibniz(a, l, w, kind).reshape(a.shape))
    return out


def field_position(kind, v):
    """The position a field puts the vehicle at (pose origin, or row 0 of a point jet), else None."""
    if kind == "pose":
        return np.asarray(v[0])[:3, 3]
    if kind == "jet_z":
        return _rows(v)[0]
    return None
