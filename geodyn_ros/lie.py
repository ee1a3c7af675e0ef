"""SE(3) / se(3) helpers in the conventions of the Ali–Gabellieri–Franchi paper.

Small pure numpy functions (no ROS), used by the URDF loader, the public API, examples and
tests. The hot loops live in :mod:`geodyn_ros.algorithms.kernels`; the one compiled function
here, :func:`rotation_to_wxyz`, is the single implementation of :func:`matrix_to_quat`, which
``geodyn_node``'s compiled output writer (:mod:`geodyn_ros.ros.wire.raw_outputs`) calls too.

Conventions (see ``CONVENTIONS.md``):

* twists are 6-vectors **angular first** ``V = (w, v)``; the *spatial* twist of a
  body with pose ``C`` is ``vee(dC/dt C^-1) = (w, pdot + p x w)``;
* wrenches are **moment first** ``W = (n, f)``; power is ``W . V``;
* ``Ad_C = [[R, 0], [hat(p) R, R]]``, ``ad_V = [[hat(w), 0], [hat(v), hat(w)]]``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

__all__ = [
    "hat", "vee3", "hat6", "vee6", "Ad", "Ad_inv", "ad", "exp_so3", "exp_se3", "log_so3", "log_se3",
    "dexp_inv_body", "inv_se3", "rpy_to_matrix", "quat_to_matrix", "matrix_to_quat", "spatial_inertia",
]


def hat(w) -> np.ndarray:
    """3x3 skew matrix of a 3-vector: ``hat(w) @ x == cross(w, x)``."""
    w = np.asarray(w, dtype=float)
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def vee3(W) -> np.ndarray:
    """Inverse of :func:`hat` (reads the skew part of a 3x3 matrix)."""
    W = np.asarray(W, dtype=float)
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def hat6(V) -> np.ndarray:
    """4x4 se(3) matrix ``[[hat(w), v], [0, 0]]`` of a twist ``V = (w, v)``."""
    V = np.asarray(V, dtype=float)
    out = np.zeros((4, 4))
    out[:3, :3] = hat(V[:3])
    out[:3, 3] = V[3:]
    return out


def vee6(X) -> np.ndarray:
    """Inverse of :func:`hat6`: ``(w, v)`` of a 4x4 se(3) matrix."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([vee3(X[:3, :3]), X[:3, 3]])


def Ad(C) -> np.ndarray:
    """6x6 adjoint of a 4x4 rigid transform: ``[[R, 0], [hat(p) R, R]]``.

    ``Ad(C) @ V_body`` is the spatial twist; ``Ad(C).T @ W_spatial`` the body wrench.
    """
    C = np.asarray(C, dtype=float)
    R, p = C[:3, :3], C[:3, 3]
    out = np.zeros((6, 6))
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = hat(p) @ R
    return out


def Ad_inv(C) -> np.ndarray:
    """``Ad(C)^-1 = Ad(C^-1)`` without a matrix inverse."""
    return Ad(inv_se3(C))


def ad(V) -> np.ndarray:
    """6x6 Lie bracket matrix ``[[hat(w), 0], [hat(v), hat(w)]]`` of ``V = (w, v)``."""
    V = np.asarray(V, dtype=float)
    out = np.zeros((6, 6))
    out[:3, :3] = hat(V[:3])
    out[3:, 3:] = out[:3, :3]
    out[3:, :3] = hat(V[3:])
    return out


def inv_se3(C) -> np.ndarray:
    """Inverse of a 4x4 rigid transform."""
    C = np.asarray(C, dtype=float)
    out = np.eye(4)
    out[:3, :3] = C[:3, :3].T
    out[:3, 3] = -C[:3, :3].T @ C[:3, 3]
    return out


def exp_so3(w) -> np.ndarray:
    """Rotation matrix ``expm(hat(w))`` (Rodrigues, with a Taylor branch near 0)."""
    w = np.asarray(w, dtype=float)
    th2 = float(w @ w)
    K = hat(w)
    if th2 < 1e-16:
        return np.eye(3) + K + 0.5 * K @ K
    th = np.sqrt(th2)
    return np.eye(3) + (np.sin(th) / th) * K + ((1.0 - np.cos(th)) / th2) * (K @ K)


def log_so3(R) -> np.ndarray:
    """Rotation vector ``w`` with ``exp_so3(w) == R`` (angle in [0, pi])."""
    R = np.asarray(R, dtype=float)
    c = np.clip(0.5 * (np.trace(R) - 1.0), -1.0, 1.0)
    th = np.arccos(c)
    if th < 1e-8:
        return vee3(R - R.T) * (1.0 + th * th / 6.0)  # sin(th) a * th / sin(th)
    if np.pi - th < 1e-6:
        # axis from the symmetric part: R = 2 a a^T - I near pi
        B = 0.5 * (R + np.eye(3))
        a = np.sqrt(np.clip(np.diag(B), 0.0, None))
        i = int(np.argmax(a))
        a = B[:, i] / a[i]
        a /= np.linalg.norm(a)
        if vee3(R - R.T) @ a < 0:
            a = -a
        return th * a
    return th / (2.0 * np.sin(th)) * np.array(
        [R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])


def exp_se3(V) -> np.ndarray:
    """4x4 ``expm(hat6(V))`` for a twist ``V = (w, v)`` (closed form)."""
    V = np.asarray(V, dtype=float)
    w, v = V[:3], V[3:]
    th2 = float(w @ w)
    K = hat(w)
    out = np.eye(4)
    out[:3, :3] = exp_so3(w)
    if th2 < 1e-16:
        Jl = np.eye(3) + 0.5 * K + K @ K / 6.0
    else:
        th = np.sqrt(th2)
        Jl = np.eye(3) + ((1.0 - np.cos(th)) / th2) * K + ((th - np.sin(th)) / (th2 * th)) * (K @ K)
    out[:3, 3] = Jl @ v
    return out


def log_se3(C) -> np.ndarray:
    """Twist ``V = (w, v)`` with ``exp_se3(V) == C`` for a 4x4 pose (rotation angle < pi)."""
    C = np.asarray(C, dtype=float)
    w = log_so3(C[:3, :3])
    th2 = float(w @ w)
    K = hat(w)
    if th2 < 1e-12:
        Jinv = np.eye(3) - 0.5 * K + K @ K / 12.0
    else:
        th = np.sqrt(th2)
        Jinv = np.eye(3) - 0.5 * K + (1.0 / th2 - (1 + np.cos(th)) / (2 * th * np.sin(th))) * (K @ K)
    return np.concatenate([w, Jinv @ C[:3, 3]])


def dexp_inv_body(theta, V) -> np.ndarray:
    """``d theta/dt`` for ``C = C0 exp_se3(theta)`` moving with body twist ``V`` (``C^-1 dC/dt =
    hat6(V)``): ``dexp_{-theta}^-1 V = V + [theta, V]/2 + [theta, [theta, V]]/12 + O(|theta|^4)``,
    the truncation Runge–Kutta–Munthe-Kaas of order 4 needs (``theta = O(h)``)."""
    a = ad(theta)
    V = np.asarray(V, dtype=float)
    return V + 0.5 * a @ V + a @ (a @ V) / 12.0


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z): ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def quat_to_matrix(q, order: str = "xyzw") -> np.ndarray:
    """Rotation matrix of a unit quaternion given as ``xyzw`` (ROS, Pinocchio) or ``wxyz`` (MuJoCo)."""
    q = np.asarray(q, dtype=float)
    if order == "xyzw":
        x, y, z, w = q
    elif order == "wxyz":
        w, x, y, z = q
    else:
        raise ValueError("order must be 'xyzw' or 'wxyz'")
    n = np.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


@njit(types.UniTuple(types.float64, 4)(types.Array(types.float64, 2, "A", readonly=True)), cache=True, nogil=True,
      inline="always")
def rotation_to_wxyz(R):  # pragma: no cover (compiled)
    """Unit quaternion ``(w, x, y, z)`` (``w >= 0``) of the rotation ``R[:3, :3]`` (a (3, 3)
    rotation or a (4, 4) pose; writable arrays convert to the read-only signature; no bounds
    check: the caller passes at least 3x3), compiled: the implementation of
    :func:`matrix_to_quat`. Shepperd's branches: on the trace when it is positive, else on the
    largest diagonal entry (the divisor ``s = 4 |q_i|`` is then at least 2: no cancellation),
    then the sign made ``w >= 0`` and the norm divided out (``sqrt(w^2 + x^2 + y^2 + z^2)``,
    summed in that order)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        w, x, y, z = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        w, x, y, z = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        w, x, y, z = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    nrm = np.sqrt(w * w + x * x + y * y + z * z)
    return w / nrm, x / nrm, y / nrm, z / nrm


def matrix_to_quat(R, order: str = "xyzw") -> np.ndarray:
    """Unit quaternion (``w >= 0``) of a rotation matrix ``R`` (3, 3), ``xyzw`` or (any other
    ``order``) ``wxyz``; computed by the compiled :func:`rotation_to_wxyz`. Raises ValueError
    naming ``R`` unless it is (3, 3)."""
    R = np.asarray(R, dtype=np.float64)
    if R.shape != (3, 3):
        raise ValueError(f"R: a (3, 3) rotation matrix expected, got shape {R.shape}")
    w, x, y, z = rotation_to_wxyz(R)
    return np.array([x, y, z, w]) if order == "xyzw" else np.array([w, x, y, z])


def spatial_inertia(mass, com, inertia_com) -> np.ndarray:
    """6x6 spatial inertia (angular first) about the frame origin.

    ``mass`` scalar, ``com`` the centre of mass and ``inertia_com`` the 3x3 rotational
    inertia about the centre of mass, both in the axes of the frame the result is
    expressed in: ``[[I + m hat(c) hat(c)^T, m hat(c)], [m hat(c)^T, m I3]]``.
    """
    c = hat(com)
    out = np.zeros((6, 6))
    out[:3, :3] = np.asarray(inertia_com, dtype=float) + mass * c @ c.T
    out[:3, 3:] = mass * c
    out[3:, :3] = mass * c.T
    out[3:, 3:] = mass * np.eye(3)
    return out
