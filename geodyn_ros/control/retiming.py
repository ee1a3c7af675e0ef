"""Smooth re-timing of references with exact jets: frozen, slowed, resumed, lifted and lowered.

A flight that starts on the ground, a failsafe that holds the vehicle where it is and later
resumes the mission, a landing: each changes *when* the reference is read and *where* it sits
vertically, never its shape. Both changes are written here as smooth scalar functions of time
whose derivatives are exact, so every feedforward order (up to the snap of the CoM and its
derivatives the flat map needs) stays continuous:

* a **clock** ``s(t)``: the reference is read at ``s(t)`` instead of ``t``. ``s' = 1`` is the
  reference as it is, ``s' = 0`` freezes it (the vehicle holds the pose of that instant, at rest),
  and a ramp of ``s'`` between them starts or stops its motion smoothly;
* a **vertical offset** ``d(t)`` [m] added to the base origin (or the CoM), world ``z``: a
  take-off from ``-h`` to 0, a landing or a controlled descent at a rate.

Every ramp is the smooth step of order ``m = 6`` (:func:`smoothstep`): the polynomial of degree
``2m + 1 = 13`` going from 0 to 1 on ``[0, 1]`` with its first six derivatives zero at both ends,
so a clock or an offset built from ramps has six continuous derivatives (the order-2 flat map
reads the CoM up to its 6th derivative).

The warped reference ``r(s(t)) + d(t) e_z`` gets its jets by the chain rule of every order (Faà di
Bruno, written as the composition of truncated Taylor series, :func:`compose_jet`); the spatial
twist of a warped base pose is ``s' V_r(s)`` (the twist is a time derivative) plus the offset's
velocity ``d' e_z + d (e_z x w)`` (the ``p x w`` part of ``V = (w, pdot + p x w)``). Where the
clock is the identity (``s = t`` exactly, no offset) the reference is returned untouched.
"""
from __future__ import annotations

import math

import numpy as np

from ..trajectories import FlatReference, Reference

__all__ = ["SMOOTH_ORDER", "smoothstep", "compose_jet", "Schedule", "warp_reference"]

#: the order m of the ramps: 2m + 1 = 13, six derivatives continuous at both ends
SMOOTH_ORDER = 6


def _smooth_poly(m: int = SMOOTH_ORDER) -> np.polynomial.Polynomial:
    """The smooth step of order m: ``S(x) = x^(m+1) sum_k C(m+k, k) C(2m+1, m-k) (-x)^k``
    (S(0) = 0, S(1) = 1, S^(i)(0) = S^(i)(1) = 0 for i = 1..m)."""
    c = np.zeros(2 * m + 2)
    for k in range(m + 1):
        c[m + 1 + k] = math.comb(m + k, k) * math.comb(2 * m + 1, m - k) * (-1) ** k
    return np.polynomial.Polynomial(c)


_S = _smooth_poly()
_S_DERIV = [_S.deriv(i) for i in range(2 * SMOOTH_ORDER + 2)]
_S_INT = _S.integ()          # the integral from 0: int_0^1 S = 1/2


def smoothstep(x: float, n: int = 0) -> np.ndarray:
    """``(S(x), S'(x), ..., S^(n)(x))`` of the smooth step (module docstring); ``x`` clipped to
    [0, 1] (0 before, 1 after, every derivative 0 outside)."""
    out = np.zeros(n + 1)
    if x <= 0.0:
        return out
    if x >= 1.0:
        out[0] = 1.0
        return out
    for i in range(min(n, len(_S_DERIV) - 1) + 1):
        out[i] = _S_DERIV[i](x)
    return out


def compose_jet(f, s) -> np.ndarray:
    """The jet of ``f(s(t))``: ``f`` (N+1, ...) rows ``f^(j)`` at ``s(t)``, ``s`` (>= N+1,) rows
    ``s^(i)(t)``; returns (N+1, ...) rows ``(f o s)^(k)(t)``, k = 0..N (Faà di Bruno, as the
    composition of the truncated Taylor series ``sum_j f^(j)/j! delta^j``, ``delta = sum_{i>=1}
    s^(i)/i! h^i``)."""
    f = np.asarray(f, float)
    N = f.shape[0] - 1
    b = np.zeros(N + 1)
    for i in range(1, N + 1):
        b[i] = s[i] / math.factorial(i)
    out = np.zeros_like(f)
    power = np.zeros(N + 1)
    power[0] = 1.0                       # delta^0
    for j in range(N + 1):
        coef = f[j] / math.factorial(j)
        for k in range(j, N + 1):        # delta^j starts at h^j
            if power[k] != 0.0:
                out[k] += power[k] * coef
        nxt = np.zeros(N + 1)             # power *= delta, truncated at h^N
        for a in range(N + 1):
            if power[a] != 0.0:
                nxt[a + 1:] += power[a] * b[1:N + 1 - a]
        power = nxt
    for k in range(N + 1):
        out[k] *= math.factorial(k)
    return out


class Schedule:
    """A scalar ``x(t)`` made of smooth ramps, with exact jets (module docstring).

    Starts at ``x0`` with the constant rate ``rate0`` (``x = x0 + rate0 (t - t0)``); then, in
    time order, :meth:`ramp_value` (x goes to a value, the rate being 0 before and after) and
    :meth:`ramp_rate` (the rate goes to a new value; x integrates it). Between and after ramps
    the rate is constant. ``jets(t, n)`` returns ``x^(0..n)(t)``."""

    def __init__(self, x0: float = 0.0, rate0: float = 0.0, t0: float = 0.0):
        for name, v in (("x0", x0), ("rate0", rate0), ("t0", t0)):
            if not math.isfinite(v):
                raise ValueError(f"{name}: expected a finite number, got {v!r}")
        self.t0, self.x0, self.rate0 = float(t0), float(x0), float(rate0)
        self._segs = []                   # (t_start, duration, kind, x_start, rate_start, target)

    def _end(self):
        """(t, x, rate) where the last ramp ends (or the start)."""
        if not self._segs:
            return self.t0, self.x0, self.rate0
        ts, T, kind, xs, rs, to = self._segs[-1]
        if kind == "value":
            return ts + T, to, 0.0
        return ts + T, xs + T * (rs + (to - rs) * float(_S_INT(1.0))), to

    def value_rate(self, t: float) -> tuple:
        """``(x(t), x'(t))``."""
        j = self.jets(t, 1)
        return float(j[0]), float(j[1])

    def _check(self, t_start, duration):
        te = self._end()[0]
        if not (math.isfinite(t_start) and t_start >= te - 1e-12):
            raise ValueError(f"t_start: a ramp starts at or after the previous one ends ({te:g} s), got {t_start!r}")
        if not (math.isfinite(duration) and duration > 0):
            raise ValueError(f"duration: expected a finite time > 0 [s], got {duration!r}")

    def ramp_value(self, t_start: float, duration: float, to: float) -> "Schedule":
        """``x`` goes smoothly to ``to`` over ``[t_start, t_start + duration]``; the rate must be 0 there."""
        self._check(t_start, duration)
        te, xe, re = self._end()
        if re != 0.0:
            raise ValueError("ramp_value: the rate is not 0 where the ramp starts; ramp the rate to 0 first")
        self._segs.append((float(t_start), float(duration), "value", xe, 0.0, float(to)))
        return self

    def ramp_rate(self, t_start: float, duration: float, to: float) -> "Schedule":
        """The rate ``x'`` goes smoothly to ``to`` over ``[t_start, t_start + duration]``."""
        self._check(t_start, duration)
        te, xe, re = self._end()
        x_at = xe + re * (t_start - te)
        self._segs.append((float(t_start), float(duration), "rate", x_at, re, float(to)))
        return self

    def end_time(self) -> float:
        """When the last ramp ends (the start time without ramps)."""
        return self._end()[0]

    def jets(self, t: float, n: int) -> np.ndarray:
        """(n+1,) ``x^(0..n)(t)``."""
        out = np.zeros(n + 1)
        t_prev, x_prev, r_prev = self.t0, self.x0, self.rate0
        for ts, T, kind, xs, rs, to in self._segs:
            if t < ts:
                break
            if kind == "value":
                if t < ts + T:
                    u = (t - ts) / T
                    S = smoothstep(u, n)
                    out[0] = xs + (to - xs) * S[0]
                    for i in range(1, n + 1):
                        out[i] = (to - xs) * S[i] / T ** i
                    return out
                t_prev, x_prev, r_prev = ts + T, to, 0.0
            else:
                if t < ts + T:
                    u = (t - ts) / T
                    S = smoothstep(u, max(n - 1, 0))
                    out[0] = xs + rs * (t - ts) + (to - rs) * T * float(_S_INT(u))
                    if n >= 1:
                        out[1] = rs + (to - rs) * S[0]
                    for i in range(2, n + 1):
                        out[i] = (to - rs) * S[i - 1] / T ** (i - 1)
                    return out
                t_prev, x_prev, r_prev = ts + T, xs + T * (rs + (to - rs) * float(_S_INT(1.0))), to
        out[0] = x_prev + r_prev * (t - t_prev)
        if n >= 1:
            out[1] = r_prev
        return out


def _offset_base(ref: Reference, d) -> Reference:
    """``ref`` with its base origin raised by ``d[0]`` (jets ``d`` (>= order+3,)), world z."""
    C = ref.base_pose.copy()
    C[2, 3] += d[0]
    V = ref.base_twist.copy()
    ez = np.array([0.0, 0.0, 1.0])
    for k in range(V.shape[0]):
        V[k, 5] += d[k + 1]
        for i in range(k + 1):
            if d[i] != 0.0:
                V[k, 3:] += math.comb(k, i) * d[i] * np.cross(ez, ref.base_twist[k - i, :3])
    return Reference(C, V, ref.q)


def warp_reference(reference, order: int, s_jets, d_jets=None):
    """The reference ``reference(s(t), order)`` read on the clock ``s`` (jets ``s^(0..)`` at t,
    >= order + 6 rows) and raised by ``d`` (jets ``d^(0..)``, same length; None: no offset):
    a :class:`~geodyn_ros.trajectories.Reference` (base pose, spatial twist and joint jets) or a
    :class:`~geodyn_ros.trajectories.FlatReference` (CoM, yaw, joint jets), as ``reference``
    returns. ``s' = 1`` with no higher derivative and no offset: ``reference(s, order)`` itself."""
    s = np.asarray(s_jets, float)
    r = reference(float(s[0]), order)
    plain = s[1] == 1.0 and not np.any(s[2:])
    if not plain:
        if isinstance(r, FlatReference):
            r = FlatReference(compose_jet(r.com, s), compose_jet(r.yaw, s), compose_jet(r.q, s))
        else:
            g = compose_jet(r.base_twist, s)
            V = np.zeros_like(g)
            for k in range(V.shape[0]):
                for i in range(k + 1):
                    V[k] += math.comb(k, i) * s[i + 1] * g[k - i]
            r = Reference(r.base_pose, V, compose_jet(r.q, s))
    if d_jets is not None and np.any(np.asarray(d_jets) != 0.0):
        d = np.asarray(d_jets, float)
        if isinstance(r, FlatReference):
            com = r.com.copy()
            com[:, 2] += d[:com.shape[0]]
            r = FlatReference(com, r.yaw, r.q)
        else:
            r = _offset_base(r, d)
    return r
