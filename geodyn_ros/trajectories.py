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
from typing import Sequence

import numpy as np

__all__ = [
    "Reference",
    "TABLE3_JOINT_NAMES",
    "TABLE3_Q0",
    "TABLE3_ETA",
    "spatial_twist_jet",
    "table3_reference",
    "table3_times",
]

#: Joint columns of the Table 3 joint trajectories (``model.joint_names`` of the shipped URDF).
TABLE3_JOINT_NAMES: tuple[str, ...] = ("J2", "J3", "J4", "J5", "J6", "J7")
#: Initial joint angles q0 [rad] of Table 3, columns :data:`TABLE3_JOINT_NAMES`.
TABLE3_Q0 = np.deg2rad([10.0, -5.0, 15.0, -10.0, 7.0, -12.0])
#: Half-cosine amplitudes eta [rad] of Table 3, columns :data:`TABLE3_JOINT_NAMES`.
TABLE3_ETA = np.deg2rad([60.0, 50.0, 40.0, 55.0, 45.0, 35.0])
TABLE3_Q0.flags.writeable = False
TABLE3_ETA.flags.writeable = False


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
