"""The closed-form flat map of a rigid multirotor: attitude, body rates from the jerk, angular
acceleration from the snap, and the moment about the base origin (ROS-free, NumPy).

This is today's best practice (Mellinger & Kumar 2011; Faessler et al. 2018), written for the
Z-Y-X yaw of REP 103 that :func:`geodyn_ros.flat_inverse_dynamics` uses, and for a rigid body
whose centre of mass is offset from the base origin. It is derived by hand here, independently of
the jet recursions of :mod:`geodyn_ros.algorithms.flat`, which it equals when the arm is locked
(``test/algorithms/test_flat.py``). The ``rigid`` level of :class:`~geodyn_ros.control.flatness.FlatnessController`
uses it with the arm frozen in its current shape.

Derivation (``a = c'' - g``, ``j = c'''``, ``s = c''''``; ``R = [x y z]``; body rates
``w_b = (p, q, r)`` with ``R' = R hat(w_b)``; ``x_C = (cos psi, sin psi, 0)``, ``y_C = (-sin psi,
cos psi, 0)``)::

    T = m |a|,  z = a / |a|,  x = (y_C x z) / |y_C x z|,  y = z x x
    T' = m z.j,                 h = (m / T) (j - (z.j) z) = z'  ->  p = -h.y,  q = h.x
    x.y_C = 0 for all t         ->  r = (q z.y_C + psi' x.x_C) / (y.y_C)
    m s = T'' z + 2 T' z' + T z'',  z'' = R (alpha_b x e3 + w_b x (w_b x e3))
        ->  alpha_x = q r - (m s.y + 2 T' p) / T,   alpha_y = (m s.x - 2 T' q) / T - p r,
            T'' = m s.z + T (p^2 + q^2)
    (x.y_C)'' = 0               ->  alpha_z = ((alpha_y - p r) z.y_C + 2 psi' (r y.x_C - q z.x_C)
                                               + psi'' x.x_C) / (y.y_C) - p q

The often-quoted yaw rate ``r = psi' (z_W . z_B)`` is only an approximation of the above.
Moment about the base origin in base axes (CoM offset ``r_c`` from the base origin, inertia ``J``
about the CoM, base axes): ``tau = J alpha_b + w_b x J w_b + r_c x (0, 0, T)``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["RigidFlatState", "rigid_flat_map"]


class RigidFlatState(NamedTuple):
    """Output of :func:`rigid_flat_map` (base axes unless stated).

    rotation (3, 3) ``R = [x_B y_B z_B]`` (world from base); thrust (3,) ``T, T', T''`` [N, N/s,
    N/s^2]; omega (3,) body rates ``w_b``; alpha (3,) ``w_b'``; torque (3,) the moment about the
    base origin that the rotors must produce.
    """

    rotation: np.ndarray
    thrust: np.ndarray
    omega: np.ndarray
    alpha: np.ndarray
    torque: np.ndarray


def _vec3(x, name):
    a = np.asarray(x, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected a finite 3-vector, got {np.asarray(x).shape}")
    return a


def rigid_flat_map(mass, inertia, com_offset, acc, jerk, snap, yaw, yaw_rate, yaw_acc,
                   gravity=(0.0, 0.0, -9.81)) -> RigidFlatState:
    """The flat map of a rigid multirotor thrusting along its base ``+z`` (module docstring).

    Parameters
    ----------
    mass : total mass m [kg].
    inertia : (3, 3) rotational inertia about the CoM [kg m^2], base axes.
    com_offset : (3,) CoM relative to the base origin [m], base axes.
    acc, jerk, snap : (3,) ``c''``, ``c'''``, ``c''''`` of the CoM [m/s^2, m/s^3, m/s^4], world.
    yaw, yaw_rate, yaw_acc : the Z-Y-X yaw ``psi`` [rad] and its first two derivatives.
    gravity : (3,) gravity acceleration [m/s^2], world.

    Raises
    ------
    ValueError
        In free fall (``c'' = g``) and at the yaw singularity (``z_B`` parallel to ``y_C``).
    """
    m = float(mass)
    if not (np.isfinite(m) and m > 0):
        raise ValueError(f"mass: expected a finite positive mass, got {mass!r}")
    J = np.asarray(inertia, dtype=float)
    if J.shape != (3, 3) or not np.all(np.isfinite(J)):
        raise ValueError(f"inertia: expected a finite (3, 3) matrix, got shape {J.shape}")
    rc = _vec3(com_offset, "com_offset")
    a = _vec3(acc, "acc") - _vec3(gravity, "gravity")
    jv, sv = _vec3(jerk, "jerk"), _vec3(snap, "snap")
    na = float(np.linalg.norm(a))
    if not na > 1e-6 * max(float(np.linalg.norm(gravity)), 1.0):
        raise ValueError("acc: free fall (c'' equals the gravity vector): the thrust direction is undefined")
    z = a / na
    cps, sps = np.cos(yaw), np.sin(yaw)
    xc, yc = np.array([cps, sps, 0.0]), np.array([-sps, cps, 0.0])
    u = np.cross(yc, z)
    nu = float(np.linalg.norm(u))
    if not nu > 1e-6:
        raise ValueError("yaw: yaw singularity (z_B parallel to y_C = (-sin psi, cos psi, 0))")
    x = u / nu
    y = np.cross(z, x)
    T = m * na
    Td = m * float(z @ jv)
    h = (m / T) * (jv - (z @ jv) * z)
    p, q = -float(h @ y), float(h @ x)
    yyc, zyc, xxc = float(y @ yc), float(z @ yc), float(x @ xc)
    r = (q * zyc + yaw_rate * xxc) / yyc
    ax = q * r - (m * float(sv @ y) + 2.0 * Td * p) / T
    ay = (m * float(sv @ x) - 2.0 * Td * q) / T - p * r
    Tdd = m * float(sv @ z) + T * (p * p + q * q)
    yxc, zxc = float(y @ xc), float(z @ xc)
    az = ((ay - p * r) * zyc + 2.0 * yaw_rate * (r * yxc - q * zxc) + yaw_acc * xxc) / yyc - p * q
    w = np.array([p, q, r])
    al = np.array([ax, ay, az])
    tau = J @ al + np.cross(w, J @ w) + np.cross(rc, np.array([0.0, 0.0, T]))
    return RigidFlatState(np.column_stack([x, y, z]), np.array([T, Td, Tdd]), w, al, tau)
