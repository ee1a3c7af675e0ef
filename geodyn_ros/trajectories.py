"""Reference trajectories with exact analytic time derivatives of any order.

The main entry point is :func:`table3_reference`, the smooth test trajectories of the
Ali-Gabellieri-Franchi paper (Sec. 7, Table 3) for the 12-DoF aerial manipulator of
``urdf/aerial_manipulator.urdf``:

* base position, a horizontal circle: ``p(t) = (R cos(w1 t), R sin(w1 t), 0)``,
  ``R = 1.0 m``, ``w1 = 2 pi / 20 rad/s``;
* base attitude, a pure yaw: ``C(t) = [[Rz(psi(t)), p(t)], [0, 1]]``,
  ``psi(t) = A sin(w2 t)``, ``A = 25 deg``, ``w2 = 2 pi / 30 rad/s``;
* joints J2..J7 (half-cosine): ``q_j(t) = q0_j + eta_j / 2 (1 - cos(pi t / T))``, ``T = 30 s``,
  ``q0 = deg2rad([10, -5, 15, -10, 7, -12])``, ``eta = deg2rad([60, 50, 40, 55, 45, 35])``.

Conventions (``CONVENTIONS.md``): world frame z-up; twists are angular first, ``V = (w, v)``;
the base twist is the *spatial* (right-invariant) twist ``V = vee(dC/dt C^-1) =
(w, pdot + p x w)`` in world axes; in every derivative array row ``k`` holds the k-th time
derivative itself (not divided by ``k!``), row 0 is the value. The arrays returned by
:func:`table3_reference` have exactly the rows ``gd.inverse_dynamics(..., order=order)``
reads: ``base_twist`` rows ``V^(0..order+1)`` and ``q`` rows ``q^(0..order+2)``.

Every derivative is evaluated in closed form (no finite differences, no Taylor truncation),
so the trajectories are exact references for round-trip checks at any order.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from math import comb
from typing import Sequence

import numpy as np

__all__ = [
    "Reference",
    "FlatReference",
    "figure_eight_reference",
    "FIGURE8_Q_AMPLITUDE",
    "FIGURE8_Q_PERIOD",
    "TABLE3_JOINT_NAMES",
    "TABLE3_Q0",
    "TABLE3_ETA",
    "spatial_twist_jet",
    "table3_reference",
    "table3_times",
    "START_RAMP_SMOOTHNESS",
    "start_ramp",
    "warp_jet",
    "warp_twist_jet",
]

#: Joint columns of the Table 3 joint trajectories (``model.joint_names`` of the shipped URDF).
TABLE3_JOINT_NAMES: tuple[str, ...] = ("J2", "J3", "J4", "J5", "J6", "J7")
#: Initial joint angles q0 [rad] of Table 3, columns :data:`TABLE3_JOINT_NAMES`.
TABLE3_Q0 = np.deg2rad([10.0, -5.0, 15.0, -10.0, 7.0, -12.0])
#: Half-cosine amplitudes eta [rad] of Table 3, columns :data:`TABLE3_JOINT_NAMES`.
TABLE3_ETA = np.deg2rad([60.0, 50.0, 40.0, 55.0, 45.0, 35.0])
TABLE3_Q0.flags.writeable = False
TABLE3_ETA.flags.writeable = False

#: Joint swing amplitudes [rad] of :func:`figure_eight_reference` (J2..J7): 35 deg each, so every
#: joint swings +-35 deg (70 deg peak to peak).
FIGURE8_Q_AMPLITUDE = np.deg2rad([35.0, 35.0, 35.0, 35.0, 35.0, 35.0])
#: Joint swing periods [s] of :func:`figure_eight_reference` (J2..J7), all in 1.5..4 s and
#: pairwise incommensurate over the run, so the two arms never move as a mirror image.
FIGURE8_Q_PERIOD = np.array([2.0, 3.0, 1.5, 2.5, 4.0, 1.75])
FIGURE8_Q_AMPLITUDE.flags.writeable = False
FIGURE8_Q_PERIOD.flags.writeable = False


@dataclass(frozen=True)
class Reference:
    """One sample of a reference trajectory, ready for ``gd.inverse_dynamics``.

    Attributes
    ----------
    base_pose : ndarray, shape (4, 4)
        Homogeneous transform ``C`` of the base link frame in the world frame.
    base_twist : ndarray, shape (order+2, 6)
        Row ``k`` = ``V^(k)``, the k-th time derivative of the spatial base twist
        ``V = (w, pdot + p x w)`` (angular first, world axes), ``k = 0..order+1``.
    q : ndarray, shape (order+3, n)
        Row ``k`` = ``q^(k)``, the k-th time derivative of the joint positions,
        ``k = 0..order+2``; columns in the order of the joint parameters (for Table 3:
        :data:`TABLE3_JOINT_NAMES`).
    """

    base_pose: np.ndarray
    base_twist: np.ndarray
    q: np.ndarray


@dataclass(frozen=True)
class FlatReference:
    """One sample of a flat-output reference, ready for ``gd.flat_inverse_dynamics``.

    Attributes
    ----------
    com : ndarray, shape (order+5, 3)
        Row ``k`` = ``c^(k)``, the k-th time derivative of the system centre of mass (world).
    yaw : ndarray, shape (order+3,)
        Row ``k`` = ``psi^(k)``, the Z-Y-X base yaw ``psi = atan2(R[1,0], R[0,0])`` [rad].
    q : ndarray, shape (order+3, n)
        Row ``k`` = ``q^(k)``, the joint angles, columns in the order of the joint parameters.
    """

    com: np.ndarray
    yaw: np.ndarray
    q: np.ndarray


# --------------------------------------------------------------------------------------------
# scalar jets
# --------------------------------------------------------------------------------------------
def _cos_jet(t: float, omega: float, n: int) -> np.ndarray:
    """Derivatives 0..n-1 of ``cos(omega t)``: ``omega^k cos(omega t + k pi/2)``.

    The phase shift is applied through the exact 4-cycle (cos, -sin, -cos, sin) instead of
    adding ``k pi/2`` to the argument, so no rounding is introduced beyond ``cos``/``sin``.
    """
    c, s = math.cos(omega * t), math.sin(omega * t)
    cycle = (c, -s, -c, s)
    return np.array([omega**k * cycle[k % 4] for k in range(n)])


def _sin_jet(t: float, omega: float, n: int) -> np.ndarray:
    """Derivatives 0..n-1 of ``sin(omega t)``: ``omega^k sin(omega t + k pi/2)``."""
    c, s = math.cos(omega * t), math.sin(omega * t)
    cycle = (s, c, -s, -c)
    return np.array([omega**k * cycle[k % 4] for k in range(n)])


# --------------------------------------------------------------------------------------------
# general helper
# --------------------------------------------------------------------------------------------
def spatial_twist_jet(p_jet, w_jet) -> np.ndarray:
    """Derivatives of the spatial twist of a body from those of its position and angular velocity.

    For a pose ``C(t) = [[R(t), p(t)], [0, 1]]`` with angular velocity ``w`` (world axes,
    ``dR/dt R^T = hat(w)``) the spatial (right-invariant) twist is
    ``V = vee(dC/dt C^-1) = (w, pdot + p x w)``. By the Leibniz rule its k-th derivative is::

        V^(k) = ( w^(k),  p^(k+1) + sum_{j=0..k} binom(k, j) p^(j) x w^(k-j) ).

    Parameters
    ----------
    p_jet : array_like, shape (K+2, 3)
        Rows ``p^(0..K+1)``: the base position and its derivatives, world frame.
    w_jet : array_like, shape (K+1, 3)
        Rows ``w^(0..K)``: the angular velocity (world axes) and its derivatives.

    Returns
    -------
    ndarray, shape (K+1, 6)
        Rows ``V^(0..K)``, angular part first.

    Example
    -------
    >>> import numpy as np
    >>> p = np.array([[1.0, 0, 0], [0, 2.0, 0]])      # p = (1,0,0), pdot = (0,2,0)
    >>> w = np.array([[0, 0, 3.0]])                   # w = (0,0,3)
    >>> spatial_twist_jet(p, w)                        # v = pdot + p x w = (0, 2-3, 0)
    array([[ 0.,  0.,  3.,  0., -1.,  0.]])
    """
    p_jet = np.asarray(p_jet, dtype=float)
    w_jet = np.asarray(w_jet, dtype=float)
    if w_jet.ndim != 2 or w_jet.shape[1] != 3 or w_jet.shape[0] < 1:
        raise ValueError(f"w_jet must have shape (K+1, 3) with K >= 0, got {w_jet.shape}")
    n_rows = w_jet.shape[0]
    if p_jet.ndim != 2 or p_jet.shape != (n_rows + 1, 3):
        raise ValueError(
            f"p_jet must have shape (K+2, 3) = ({n_rows + 1}, 3) to match w_jet {w_jet.shape}, "
            f"got {p_jet.shape}"
        )
    if not (np.all(np.isfinite(p_jet))):
        raise ValueError("p_jet contains NaN or Inf")
    if not (np.all(np.isfinite(w_jet))):
        raise ValueError("w_jet contains NaN or Inf")
    out = np.empty((n_rows, 6))
    out[:, :3] = w_jet
    P, W = p_jet.tolist(), w_jet.tolist()   # small fixed-size crosses: plain floats beat np.cross
    for k in range(n_rows):
        vx, vy, vz = P[k + 1]
        for j in range(k + 1):
            c = math.comb(k, j)
            (px, py, pz), (wx, wy, wz) = P[j], W[k - j]
            vx += c * (py * wz - pz * wy)
            vy += c * (pz * wx - px * wz)
            vz += c * (px * wy - py * wx)
        out[k, 3:] = vx, vy, vz
    return out


# --------------------------------------------------------------------------------------------
# Table 3
# --------------------------------------------------------------------------------------------
def _check_order(order) -> int:
    if isinstance(order, bool) or not isinstance(order, numbers.Integral):
        raise ValueError(f"order must be a non-negative integer, got {order!r}")
    if order < 0:
        raise ValueError(f"order must be a non-negative integer, got {order!r}")
    return int(order)


def _check_scalar(name: str, value, *, positive: bool = False, nonneg: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and not x > 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if nonneg and not x >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return x


def _check_vector(name: str, value) -> np.ndarray:
    try:
        v = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers, got {value!r}") from None
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or Inf")
    return v


def table3_reference(
    t: float,
    order: int,
    *,
    radius: float = 1.0,
    omega_position: float = 2.0 * math.pi / 20.0,
    omega_yaw: float = 2.0 * math.pi / 30.0,
    yaw_amplitude: float = math.radians(25.0),
    q0: Sequence[float] | np.ndarray = TABLE3_Q0,
    eta: Sequence[float] | np.ndarray = TABLE3_ETA,
    T: float = 30.0,
) -> Reference:
    """The paper's Table 3 reference (base circle + yaw, half-cosine joints) at time ``t``.

    Parameters
    ----------
    t : float
        Time [s]; any finite value (the formulas are smooth everywhere).
    order : int >= 0
        Dynamics order ``r``: enough rows are returned for ``gd.inverse_dynamics(order=r)``.
    radius : float
        Circle radius R [m] of the base position ``(R cos(w1 t), R sin(w1 t), 0)``.
    omega_position : float
        Angular rate w1 [rad/s] along the circle (Table 3: ``2 pi / 20``).
    omega_yaw : float
        Angular frequency w2 [rad/s] of the yaw oscillation (Table 3: ``2 pi / 30``).
    yaw_amplitude : float
        Yaw amplitude A [rad] of ``psi(t) = A sin(w2 t)`` (Table 3: 25 deg).
    q0, eta : array_like, shape (n,)
        Initial joint angles and half-cosine amplitudes [rad] (defaults: Table 3, joints J2..J7).
    T : float > 0
        Half-cosine duration [s]: ``q(t) = q0 + eta/2 (1 - cos(pi t / T))`` reaches ``q0 + eta``
        at ``t = T``.

    Returns
    -------
    Reference
        ``base_pose`` (4, 4); ``base_twist`` (order+2, 6), rows ``V^(0..order+1)`` of the
        spatial twist ``(w, pdot + p x w)``; ``q`` (order+3, n), rows ``q^(0..order+2)``.

    Raises
    ------
    ValueError
        Negative or non-integer ``order``; non-finite ``t`` or parameter; ``T <= 0``;
        ``q0`` / ``eta`` not 1-D or of different lengths.

    Example
    -------
    >>> ref = table3_reference(0.0, order=2)
    >>> ref.base_pose.shape, ref.base_twist.shape, ref.q.shape
    ((4, 4), (4, 6), (5, 6))
    """
    order = _check_order(order)
    t = _check_scalar("t", t)
    radius = _check_scalar("radius", radius)
    w1 = _check_scalar("omega_position", omega_position)
    w2 = _check_scalar("omega_yaw", omega_yaw)
    amp = _check_scalar("yaw_amplitude", yaw_amplitude)
    T = _check_scalar("T", T, positive=True)
    q0 = _check_vector("q0", q0)
    eta = _check_vector("eta", eta)
    if q0.shape != eta.shape:
        raise ValueError(f"q0 and eta must have the same length, got {q0.shape} and {eta.shape}")

    n_twist = order + 2  # rows V^(0..order+1)
    # base position p^(0..order+2), world frame
    p_jet = np.zeros((n_twist + 1, 3))
    p_jet[:, 0] = radius * _cos_jet(t, w1, n_twist + 1)
    p_jet[:, 1] = radius * _sin_jet(t, w1, n_twist + 1)
    # yaw psi^(0..order+2); w = (0, 0, psidot) for a rotation about the fixed world z axis
    psi_jet = amp * _sin_jet(t, w2, n_twist + 1)
    w_jet = np.zeros((n_twist, 3))
    w_jet[:, 2] = psi_jet[1:]

    cpsi, spsi = math.cos(psi_jet[0]), math.sin(psi_jet[0])
    pose = np.eye(4)
    pose[:3, :3] = [[cpsi, -spsi, 0.0], [spsi, cpsi, 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = p_jet[0]

    # joints: q^(0) = q0 + eta/2 (1 - cos(pi t/T)), q^(k) = -eta/2 d^k cos(pi t/T), k >= 1
    c_jet = _cos_jet(t, math.pi / T, order + 3)
    q = -0.5 * np.outer(c_jet, eta)
    q[0] = q0 + 0.5 * eta * (1.0 - c_jet[0])

    return Reference(base_pose=pose, base_twist=spatial_twist_jet(p_jet, w_jet), q=q)


def table3_times(dt: float = 0.01, T: float = 30.0) -> np.ndarray:
    """Sample times ``t_i = i dt`` with ``0 <= t_i < T`` (Table 3: 3000 samples, 0 .. 29.99 s).

    The count is ``ceil(T/dt)`` with a relative tolerance of 1e-9 on ``T/dt`` so that, e.g.,
    ``T = 30, dt = 0.01`` gives exactly 3000 samples despite binary rounding of 0.01.

    Parameters
    ----------
    dt : float > 0
        Time step [s].
    T : float > 0
        Horizon [s] (excluded).

    Returns
    -------
    ndarray, shape (N,)
    """
    dt = _check_scalar("dt", dt, positive=True)
    T = _check_scalar("T", T, positive=True)
    ratio = T / dt
    # number of i >= 0 with i dt < T; the tolerance keeps t = T excluded when T/dt is an integer
    n = math.ceil(ratio * (1.0 - 1e-9))
    return np.arange(n) * dt


def figure_eight_reference(
    t: float,
    order: int,
    *,
    center: Sequence[float] = (0.0, 0.0, 1.0),
    amplitude: Sequence[float] = (0.6, 0.3, 0.1),
    period: float = 8.0,
    yaw_amplitude: float = math.radians(45.0),
    yaw_period: float = 12.0,
    q0: Sequence[float] | np.ndarray | None = None,
    q_amplitude: Sequence[float] | np.ndarray = FIGURE8_Q_AMPLITUDE,
    q_period: Sequence[float] | np.ndarray = FIGURE8_Q_PERIOD,
    speed: float = 1.0,
) -> FlatReference:
    """The flat-output reference of the under-actuated aerial manipulator at time ``t``.

    * **CoM, a figure eight** (a 1:2 Lissajous curve) with a vertical wave, ``w = 2 pi / period``::

          c(t) = center + (A_x sin(w t), A_y sin(2 w t), A_z sin(w t))

      defaults ``A = (0.6, 0.3, 0.1) m``, ``period = 8 s``: 1.2 m wide, 0.6 m across, peak
      horizontal acceleration 0.74 m/s^2 (4.3 deg of tilt);
    * **yaw sweep** ``psi(t) = yaw_amplitude sin(2 pi t / yaw_period)``, default +-45 deg over 12 s;
    * **joints** ``q_j(t) = q0_j + a_j sin(2 pi t / T_j)``: defaults :data:`FIGURE8_Q_AMPLITUDE`
      (35 deg each) and :data:`FIGURE8_Q_PERIOD` (1.5..4 s), ``q0 = 0`` (arms hanging down).

    ``speed`` scales time (every frequency times ``speed``). Every derivative is closed form; the
    formulas hold for every ``t`` (negative too: a loop can start before 0 on the reference).

    Returns
    -------
    FlatReference
        ``com`` (order+5, 3), ``yaw`` (order+3,), ``q`` (order+3, n): exactly the rows
        ``gd.flat_inverse_dynamics(..., order=order)`` reads.
    """
    order = _check_order(order)
    t = _check_scalar("t", t)
    speed = _check_scalar("speed", speed, positive=True)
    c0 = _check_vector("center", center)
    amp = _check_vector("amplitude", amplitude)
    if c0.shape != (3,) or amp.shape != (3,):
        raise ValueError(f"center and amplitude must have 3 entries, got {c0.shape} and {amp.shape}")
    w = 2.0 * math.pi / _check_scalar("period", period, positive=True) * speed
    wy = 2.0 * math.pi / _check_scalar("yaw_period", yaw_period, positive=True) * speed
    ya = _check_scalar("yaw_amplitude", yaw_amplitude)
    qa = _check_vector("q_amplitude", q_amplitude)
    qp = _check_vector("q_period", q_period)
    q0v = np.zeros_like(qa) if q0 is None else _check_vector("q0", q0)
    if not (qa.shape == qp.shape == q0v.shape):
        raise ValueError(f"q0, q_amplitude and q_period must have the same length, got {q0v.shape}, {qa.shape}, "
                         f"{qp.shape}")
    if np.any(qp <= 0):
        raise ValueError(f"q_period must be > 0, got {qp}")
    rc = order + 5
    com = np.zeros((rc, 3))
    s1 = _sin_jet(t, w, rc)
    com[:, 0] = amp[0] * s1
    com[:, 1] = amp[1] * _sin_jet(t, 2.0 * w, rc)
    com[:, 2] = amp[2] * s1
    com[0] += c0
    rq = order + 3
    yaw = ya * _sin_jet(t, wy, rq)
    q = np.empty((rq, qa.shape[0]))
    for j in range(qa.shape[0]):
        q[:, j] = qa[j] * _sin_jet(t, 2.0 * math.pi / qp[j] * speed, rq)
    q[0] += q0v
    return FlatReference(com=com, yaw=yaw, q=q)


# ---- a trajectory started from rest: the start ramp ---------------------------------------
# A reference that begins in motion (the figure eights leave ``t = 0`` at 0.4-0.6 m/s with the arm
# joints at 1-2.6 rad/s) cannot be *held* at its start: held, its position stays while its
# velocity does not, and a controller facing that reference on a vehicle that cannot move (the
# Gazebo launch files' start hold) winds every loop up. Flown through a time warp ``tau(t)`` instead,
#
#     x_t(t) = x(tau(t)),  tau(t) = T Sigma(t / T) for 0 <= t <= T,  tau = 0 before, t - T/2 after,
#
# the reference is at rest, at its start point, until ``t = 0`` and reaches full speed at ``t = T``
# with every derivative continuous: ``tau' = S(u)`` is the regularized incomplete beta function
# ``I_u(m+1, m+1)`` (``S' ~ u^m (1 - u)^m``, :data:`SMOOTHNESS` ``m = 8``), so ``tau^(k)`` is
# continuous for ``k <= m + 1`` at both ends. After the ramp the trajectory is the original one,
# ``T/2`` late.
#
# The derivatives of ``x(tau(t))`` are Faa di Bruno's formula with the partial Bell polynomials
# ``B_{n,k}(tau', tau'', ...)``:
#
#     d^n/dt^n x(tau(t)) = sum_{k=1..n} x^(k)(tau) B_{n,k}(tau', ..., tau^(n-k+1)),
#
# exact (no finite difference). A twist jet (body or spatial, ``V_t = tau' V(tau)`` either way, as
# ``dC/dt = tau' dC/dtau``) is warped as the derivatives of a position whose first derivative is
# ``V`` (:func:`warp_twist_jet`).


#: ``m``: tau' = S(u) with S' proportional to u^m (1 - u)^m; tau^(k) continuous for k <= m + 1
START_RAMP_SMOOTHNESS = 6


@lru_cache(maxsize=1)
def _polys():
    """``(P, S, Sigma)``: S' = P = u^m (1-u)^m / B(m+1, m+1), S = int_0^u P, Sigma = int_0^u S."""
    from numpy.polynomial import Polynomial
    u = Polynomial([0.0, 1.0])
    P = u ** START_RAMP_SMOOTHNESS * (1 - u) ** START_RAMP_SMOOTHNESS
    P = P / P.integ()(1.0)
    S = P.integ()
    return P, S, S.integ()


def start_ramp(t: float, duration: float, n: int) -> np.ndarray:
    """``(n + 1,)`` the trajectory time ``tau`` and its derivatives ``tau', ..., tau^(n)`` at node
    time ``t`` [s] (0 = the start) for a ramp of ``duration`` [s] (module docstring): rest before 0,
    full speed after ``duration``, ``tau = t - duration / 2`` then. ``duration`` 0: no ramp
    (``tau = max(t, 0)``, ``tau' = 1`` from 0 on)."""
    t, T = float(t), float(duration)
    if not (np.isfinite(t) and np.isfinite(T) and T >= 0.0):
        raise ValueError(f"start_ramp: t and duration must be finite, duration >= 0; got t={t!r}, duration={T!r}")
    out = np.zeros(n + 1)
    if t <= 0.0:
        return out
    if T == 0.0 or t >= T:
        out[0] = t - 0.5 * T
        if n >= 1:
            out[1] = 1.0
        return out
    P, S, Sig = _polys()
    u = t / T
    out[0] = T * Sig(u)
    if n >= 1:
        out[1] = S(u)
    d = P
    for k in range(2, n + 1):
        out[k] = d(u) / T ** (k - 1)
        d = d.deriv()
    return out


def _bell(d: np.ndarray, n: int) -> np.ndarray:
    """``B[i, k]`` (i, k = 0..n), the partial Bell polynomials of ``d = (tau', tau'', ...)``."""
    B = np.zeros((n + 1, n + 1))
    B[0, 0] = 1.0
    for i in range(1, n + 1):
        for k in range(1, i + 1):
            B[i, k] = sum(comb(i - 1, j - 1) * d[j - 1] * B[i - j, k - 1] for j in range(1, i - k + 2))
    return B


def warp_jet(jet, tau) -> np.ndarray:
    """The rows ``d^i/dt^i x(tau(t))``, ``i = 0..K-1``, of a jet ``jet`` (K, ...) holding
    ``x^(i)(tau)`` (row i = the i-th derivative with respect to tau, at ``tau[0]``), given
    ``tau`` (at least K,) = ``tau, tau', ...`` (:func:`start_ramp`). Faa di Bruno; exact."""
    x = np.asarray(jet, float)
    K = x.shape[0]
    tau = np.asarray(tau, float)
    if tau.shape[0] < K:
        raise ValueError(f"tau: needs {K} rows (tau and its derivatives to order {K - 1}), got {tau.shape[0]}")
    B = _bell(tau[1:K], K - 1)
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, K):
        out[i] = np.tensordot(B[i, 1:i + 1], x[1:i + 1], axes=1)
    return out


def warp_twist_jet(twist_jet, tau) -> np.ndarray:
    """A twist jet (K, 6) ``V^(0..K-1)`` with respect to tau (body or spatial) as the jet of the
    same motion in t: the derivatives 1..K of a position whose tau-derivative is ``V``."""
    V = np.asarray(twist_jet, float)
    return warp_jet(np.concatenate([np.zeros((1,) + V.shape[1:]), V]), tau)[1:]
