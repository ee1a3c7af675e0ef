"""Wind in the simulator: a steady mean plus Dryden turbulence, and the drag it exerts (ROS-free).

All velocities are in world axes [m/s], z up; forces in newtons. Used by
:mod:`geodyn_ros.sim.world` (which applies the forces to MuJoCo bodies).

Mean wind (MIL-F-8785C, 3.7.2.1 "wind speeds"; the logarithmic profile of its wind-shear model)
    ``u(h) = W20 ln(h / z0) / ln(20 ft / z0)`` at height ``h`` above ground, with ``W20`` the
    wind speed at 20 ft (6.096 m) and the roughness length ``z0 = 0.15 ft`` (0.0457 m) of the
    "Category C" (terminal: take-off, approach, landing) flight phases, the phase of a vehicle
    hovering near the ground (``z0 = 2 ft`` for the others). :func:`log_profile`.

Turbulence (MIL-F-8785C 3.7.2.2 and 3.7.3.4, the Dryden form; the same in MIL-HDBK-1797)
    Three independent components along the turbulence axes: ``u`` along the horizontal mean wind
    (world ``+x`` when there is none), ``v`` horizontal across it, ``w`` vertical. Low altitude
    (10 ft <= h <= 1000 ft, ``h`` in ft; below 10 ft the 10 ft values are used, as the standard
    defines none)::

        L_w = h,   L_u = L_v = h / (0.177 + 0.000823 h)^1.2           [ft]
        sigma_w = 0.1 W20,   sigma_u = sigma_v = sigma_w / (0.177 + 0.000823 h)^0.4

    with ``W20`` = 15, 30, 45 kt for light, moderate and severe turbulence
    (:data:`INTENSITY_W20_KT`; MIL-F-8785C figure 9). The spectra of the spatial frequency
    ``Omega`` [rad/m], one-sided (``int_0^inf Phi dOmega = sigma^2``)::

        Phi_u(Omega) = sigma_u^2 (2 L_u / pi) / (1 + (L_u Omega)^2)
        Phi_v(Omega) = sigma_v^2 (L_v / pi) (1 + 3 (L_v Omega)^2) / (1 + (L_v Omega)^2)^2   (w alike)

    become spectra of time through Taylor's frozen field carried past at the speed ``V``:
    ``omega = V Omega``, ``Phi(omega) = Phi(omega / V) / V``. A hovering vehicle has no airspeed
    of its own; the field is carried past it by the mean wind, so ``V`` is the mean wind's speed
    (at least :data:`MIN_AIRSPEED`, which keeps the time scales ``L / V`` finite in calm air).

    :class:`DrydenTurbulence` samples the three processes **exactly** at the simulator's step
    ``dt``: each spectrum is the output of a strictly proper linear filter (the forming filters
    ``H_u = sigma_u sqrt(2 L_u / (pi V)) / (1 + tau_u s)`` and ``H_v = sigma_v sqrt(L_v / (pi V))
    (1 + sqrt(3) tau_v s) / (1 + tau_v s)^2``, ``tau = L / V``) driven by white noise; its state is
    propagated with the transition ``e^(A dt)`` and the exact covariance of the noise integrated
    over one step (Van Loan's matrix exponential), from a start drawn from the stationary
    covariance. The samples are those of the continuous process (no discretization error, no
    start-up transient), whatever ``dt``.

Onset
    A flight does not begin inside a steady wind on a vehicle trimmed for still air: it climbs
    through the profile, which is 0 at ``z0``. :class:`Wind` can raise the whole wind (mean and
    turbulence) from 0 over ``onset_steps`` with :func:`onset_profile` (a half cosine); the
    worlds' default is 2 s (:data:`geodyn_ros.sim.world.WIND_ONSET_S`).

Drag
    * body (parasitic) drag of a link, quadratic in the air-relative velocity
      ``v_r = v - w`` of a point on it: ``f = -1/2 rho |v_r| CdA o v_r`` in the link's axes
      (``CdA`` (3,) [m^2]: drag coefficient times reference area along each link axis; ``o`` the
      component-wise product; for equal entries the classical ``-1/2 rho C_D A |v_r| v_r``),
      :func:`quadratic_drag`;
    * rotor drag (the linear, rotor-induced drag of Faessler, Franchi and Scaramuzza, RA-L 3(2)
      2018, eq. (2)): ``f = -m R diag(d_x, d_y, d_z) R^T v_r`` with ``R`` the base attitude,
      ``m`` the vehicle's mass and ``d`` [1/s] the mass-normalised coefficients
      (:func:`rotor_drag`). It is the drag a controller can carry: the flat map of the paper
      inverts it exactly.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["FT", "KNOT", "INTENSITY_W20_KT", "Z0_CATEGORY_C", "MIN_AIRSPEED", "DrydenScales", "dryden_low_altitude",
           "log_profile", "DrydenTurbulence", "Wind", "onset_profile", "quadratic_drag", "rotor_drag", "turbulence_axes"]

FT = 0.3048                      #: [m] one foot
KNOT = 1852.0 / 3600.0           #: [m/s] one knot
#: ``W20`` [kt] of MIL-F-8785C figure 9 for light, moderate and severe low-altitude turbulence
INTENSITY_W20_KT = {"light": 15.0, "moderate": 30.0, "severe": 45.0}
#: [m] the roughness length of MIL-F-8785C's mean-wind profile for Category C flight phases (0.15 ft)
Z0_CATEGORY_C = 0.15 * FT
#: [m/s] the least speed the frozen turbulence field passes the vehicle at (calm mean wind)
MIN_AIRSPEED = 1.0
_H_MIN_FT, _H_MAX_FT = 10.0, 1000.0      # the low-altitude model's range (below 10 ft: the 10 ft values)
_BLOCK = 1024             # samples drawn at a time (fixed: the sequence does not depend on what is asked when)


class DrydenScales(NamedTuple):
    """Dryden's scale lengths [m] and intensities (standard deviations) [m/s] of ``u, v, w``."""

    L_u: float
    L_v: float
    L_w: float
    sigma_u: float
    sigma_v: float
    sigma_w: float


def dryden_low_altitude(altitude: float, w20: float) -> DrydenScales:
    """MIL-F-8785C's low-altitude Dryden scales (module docstring) at ``altitude`` [m] above ground
    for the wind speed ``w20`` [m/s] at 20 ft. Below 10 ft the 10 ft values; above 1000 ft refused
    (the low-altitude model ends there)."""
    h_ft = float(altitude) / FT
    if not (math.isfinite(h_ft) and h_ft > 0.0) or h_ft > _H_MAX_FT:
        raise ValueError(f"altitude: expected a height in (0, {_H_MAX_FT * FT:g}] m (the low-altitude model), "
                         f"got {altitude!r}")
    if not (math.isfinite(w20) and w20 >= 0.0):
        raise ValueError(f"w20: expected a finite wind speed >= 0 [m/s], got {w20!r}")
    h = max(h_ft, _H_MIN_FT)
    c = 0.177 + 0.000823 * h
    L_uv = h / c ** 1.2 * FT
    sigma_w = 0.1 * float(w20)
    sigma_uv = sigma_w / c ** 0.4
    return DrydenScales(L_uv, L_uv, h * FT, sigma_uv, sigma_uv, sigma_w)


def log_profile(w20: float, altitude: float, z0: float = Z0_CATEGORY_C) -> float:
    """Mean wind speed [m/s] at ``altitude`` [m]: ``w20 ln(h / z0) / ln(20 ft / z0)`` (MIL-F-8785C;
    0 at and below ``z0`` [m])."""
    if not (math.isfinite(z0) and 0.0 < z0 < 20.0 * FT):
        raise ValueError(f"z0: expected a roughness length in (0, 6.096) m, got {z0!r}")
    if altitude <= z0:
        return 0.0
    return float(w20) * math.log(altitude / z0) / math.log(20.0 * FT / z0)


def turbulence_axes(mean) -> np.ndarray:
    """(3, 3) the turbulence axes ``(u, v, w)`` as columns in world axes: ``u`` along the horizontal
    part of ``mean`` (world ``+x`` when it is below 1 mm/s), ``w`` world up, ``v = w x u``."""
    m = np.asarray(mean, float)
    hz = np.array([m[0], m[1], 0.0])
    n = float(np.linalg.norm(hz))
    u = hz / n if n > 1e-3 else np.array([1.0, 0.0, 0.0])
    w = np.array([0.0, 0.0, 1.0])
    return np.column_stack([u, np.cross(w, u), w])


def _forming_filter(kind: str, sigma: float, L: float, V: float):
    """``(A, B, C)`` of the forming filter (module docstring) of a ``"first"`` (u) or ``"second"``
    (v, w) order Dryden component, driven by white noise of two-sided intensity ``pi``
    (one-sided unit spectral density per rad/s: ``Phi_y = |H|^2``)."""
    tau = L / V
    if kind == "first":
        K = sigma * math.sqrt(2.0 * L / (math.pi * V))
        return np.array([[-1.0 / tau]]), np.array([[1.0]]), np.array([[K / tau]])
    K = sigma * math.sqrt(L / (math.pi * V))
    A = np.array([[0.0, 1.0], [-1.0 / tau ** 2, -2.0 / tau]])
    return A, np.array([[0.0], [1.0]]), np.array([[K / tau ** 2, K * math.sqrt(3.0) / tau]])


def _exact_step(A, B, q, dt):
    """``(Phi, Qd, P)``: the transition ``e^(A dt)``, the covariance of the noise integrated over one
    step ``int_0^dt e^(A s) B q B^T e^(A^T s) ds`` (Van Loan 1978) and the stationary covariance
    ``P`` (``A P + P A^T + B q B^T = 0``)."""
    from scipy.linalg import expm, solve_continuous_lyapunov
    n = A.shape[0]
    BQB = q * (B @ B.T)
    M = np.zeros((2 * n, 2 * n))
    M[:n, :n] = -A
    M[:n, n:] = BQB
    M[n:, n:] = A.T
    E = expm(M * dt)
    Phi = E[n:, n:].T
    Qd = Phi @ E[:n, n:]
    Qd = 0.5 * (Qd + Qd.T)
    P = solve_continuous_lyapunov(A, -BQB)
    return Phi, Qd, 0.5 * (P + P.T)


def _chol(S):
    """A factor ``L`` with ``L L^T = S`` for a symmetric positive semidefinite ``S`` (eigen-decomposition:
    tolerant of a singular or round-off-negative ``S``)."""
    w, V = np.linalg.eigh(S)
    return V * np.sqrt(np.clip(w, 0.0, None))


class DrydenTurbulence:
    """The three Dryden components ``(u, v, w)`` [m/s] sampled exactly every ``timestep`` [s]
    (module docstring), seeded.

    Parameters
    ----------
    scales : DrydenScales (:func:`dryden_low_altitude`)
    airspeed : float
        ``V`` [m/s] the frozen field passes the vehicle at (> 0).
    timestep : float
        Sample period [s] (> 0), the simulator's step.
    seed : int or numpy.random.SeedSequence
        The seed of the white noise (``numpy.random.default_rng(seed)``).

    Notes
    -----
    Samples are indexed by the integer step ``k`` (time ``k * timestep``): :meth:`at` ``(k)``. The
    first index asked for starts the sequence (from the stationary distribution); later indices
    continue it, so a seed gives the same wind at the same step whatever is asked in between. An
    index before the start restarts the sequence there (the same seed: a run started at the same
    step gets the same wind).
    """

    def __init__(self, scales: DrydenScales, airspeed: float, timestep: float, seed=0):
        if not (math.isfinite(airspeed) and airspeed > 0.0):
            raise ValueError(f"airspeed: expected a finite speed > 0 [m/s], got {airspeed!r}")
        if not (math.isfinite(timestep) and timestep > 0.0):
            raise ValueError(f"timestep: expected a finite period > 0 [s], got {timestep!r}")
        self.scales, self.airspeed, self.timestep = scales, float(airspeed), float(timestep)
        self._seed = seed
        self._parts = []          # per component: (Phi, chol(Qd), C, chol(P), sigma)
        for kind, sigma, L in (("first", scales.sigma_u, scales.L_u), ("second", scales.sigma_v, scales.L_v),
                               ("second", scales.sigma_w, scales.L_w)):
            A, B, C = _forming_filter(kind, max(sigma, 1e-300), L, self.airspeed)
            Phi, Qd, P = _exact_step(A, B, math.pi, self.timestep)
            self._parts.append((Phi, _chol(Qd), C, _chol(P), sigma))
        self._start(None)

    def _start(self, k0) -> None:
        """A fresh sequence from step ``k0`` (None: the first index asked for)."""
        self._rng = np.random.default_rng(self._seed)
        self._k0 = k0
        self._x = None            # per component: state at the last generated index
        self._y = np.zeros((0, 3))

    def stationary_std(self) -> np.ndarray:
        """(3,) the standard deviations of ``u, v, w`` of the sampled processes (from the filters'
        stationary covariance; the spec's sigmas, up to round-off)."""
        out = []
        for Phi, Lq, C, Lp, sigma in self._parts:
            P = Lp @ Lp.T
            out.append(math.sqrt(float((C @ P @ C.T)[0, 0])) if sigma > 0 else 0.0)
        return np.array(out)

    def _extend(self, n: int) -> None:
        """Append the next ``n`` samples (the first call: the stationary start, then ``n - 1``)."""
        rng = self._rng
        if self._x is None:
            self._x = [Lp @ rng.standard_normal(Lp.shape[1]) for _, _, _, Lp, _ in self._parts]
            first = np.array([float((C @ x)[0]) if s > 0 else 0.0
                              for (_, _, C, _, s), x in zip(self._parts, self._x)])
            self._y = first[None]
            n -= 1
        if n <= 0:
            return
        block = np.zeros((n, 3))
        for j, (Phi, Lq, C, _, s) in enumerate(self._parts):
            noise = rng.standard_normal((n, Lq.shape[1])) @ Lq.T        # the (n, dim) step noises
            if s <= 0:
                continue
            col = block[:, j]
            x = self._x[j]
            if Phi.shape[0] == 1:        # plain float arithmetic: 10x faster than 1x1 numpy products
                a, c, x0 = float(Phi[0, 0]), float(C[0, 0]), float(x[0])
                for i, e in enumerate(noise[:, 0].tolist()):
                    x0 = a * x0 + e
                    col[i] = c * x0
                self._x[j] = np.array([x0])
            else:
                (p11, p12), (p21, p22) = Phi.tolist()
                c1, c2 = C[0].tolist()
                x1, x2 = float(x[0]), float(x[1])
                for i, (e1, e2) in enumerate(noise.tolist()):
                    x1, x2 = p11 * x1 + p12 * x2 + e1, p21 * x1 + p22 * x2 + e2
                    col[i] = c1 * x1 + c2 * x2
                self._x[j] = np.array([x1, x2])
        self._y = np.concatenate([self._y, block])

    def at(self, k: int) -> np.ndarray:
        """(3,) ``(u, v, w)`` [m/s] at step ``k`` (time ``k * timestep``; class docstring)."""
        k = int(k)
        if self._k0 is None or k < self._k0:
            self._start(k)
        i = k - self._k0
        while i >= len(self._y):
            self._extend(_BLOCK)
        return self._y[i].copy()

    def sequence(self, n: int, k0: int = 0) -> np.ndarray:
        """(n, 3) the samples at steps ``k0 .. k0 + n - 1``."""
        self.at(k0)
        self.at(k0 + int(n) - 1)
        i = k0 - self._k0
        return self._y[i:i + int(n)].copy()


def onset_profile(x: float) -> float:
    """The onset's rise: 0 for ``x <= 0``, ``(1 - cos(pi x)) / 2`` on ``[0, 1]``, 1 after (``x`` the
    time since the start over the onset's duration)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return 0.5 - 0.5 * math.cos(math.pi * x)


class Wind:
    """The wind at the vehicle: ``mean`` (3,) [m/s] world axes, plus ``turbulence`` (a
    :class:`DrydenTurbulence` or None) along :func:`turbulence_axes` of the mean.
    :meth:`velocity` ``(k)`` [m/s] at step ``k``: uniform in space (the vehicle is small against
    the scale lengths, tens of metres at low altitude).

    ``onset_steps`` (int >= 0): the whole wind (mean and turbulence) rises from 0 over this many
    steps from the first step asked for, by :func:`onset_profile` (0: at full strength from the
    first step, a step of the whole mean wind on a vehicle that was trimmed in still air). As
    :class:`DrydenTurbulence`, an index before the start restarts the onset there."""

    def __init__(self, mean, turbulence: DrydenTurbulence | None = None, onset_steps: int = 0):
        self.mean = np.array(mean, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.mean)):
            raise ValueError(f"mean: expected 3 finite velocities [m/s], got {mean!r}")
        if isinstance(onset_steps, bool) or not isinstance(onset_steps, (int, np.integer)) or onset_steps < 0:
            raise ValueError(f"onset_steps: expected an integer >= 0, got {onset_steps!r}")
        self.turbulence = turbulence
        self.axes = turbulence_axes(self.mean)
        self.onset_steps = int(onset_steps)
        self._k_start = None

    def velocity(self, k: int) -> np.ndarray:
        """(3,) wind velocity [m/s] in world axes at step ``k``."""
        if self.turbulence is None:
            v = self.mean.copy()
        else:
            v = self.mean + self.axes @ self.turbulence.at(k)
        if self.onset_steps:
            k = int(k)
            if self._k_start is None or k < self._k_start:
                self._k_start = k
            v *= onset_profile((k - self._k_start) / self.onset_steps)
        return v


def quadratic_drag(v_rel_link, cda, air_density: float) -> np.ndarray:
    """(3,) the drag force [N] in the link's axes: ``-1/2 rho |v_r| CdA o v_r`` for the
    air-relative velocity ``v_rel_link`` (3,) [m/s] in link axes and ``cda`` (3,) [m^2]."""
    v = np.asarray(v_rel_link, float)
    return -0.5 * air_density * float(np.linalg.norm(v)) * np.asarray(cda, float) * v


def rotor_drag(R, v_rel, d, mass: float) -> np.ndarray:
    """(3,) the linear rotor drag [N] in world axes: ``-m R diag(d) R^T v_r`` (Faessler et al. 2018),
    ``R`` (3, 3) the base attitude, ``v_rel`` (3,) [m/s] world, ``d`` (3,) [1/s], ``mass`` [kg]."""
    R = np.asarray(R, float)
    return -mass * (R @ (np.asarray(d, float) * (R.T @ np.asarray(v_rel, float))))
