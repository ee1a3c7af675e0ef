"""Closed-form equations of motion (paper Prop. 1 and Lemma 1).

With the generalised velocity ``nu = (V_base, qdot)`` (spatial base twist, angular
first, then the joint rates in ``model.joint_names`` order):

    M(C, q) nudot + C(C, q, nu) nu + g(C, q) = (W_base, tau)

equals the order-0 output of :func:`geodyn_ros.inverse_dynamics` without external
wrenches, and ``dM/dt - 2 C`` is skew-symmetric.
"""
from __future__ import annotations

import numpy as np

from ..model.model import Model
from .checks import _check_model, _f64, _pose, _raise
from .dynamics import DEFAULT_GRAVITY, _gravity
from .kernels import eom as K

__all__ = ["mass_matrix", "coriolis_matrix", "gravity_vector"]

_ZERO3 = np.zeros(3)


def _vec(x, name, n):
    a = _f64(x, name)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    return a


def _eom(model, base_pose, base_twist, q, qd, gravity, want):
    _check_model(model)
    n = model.n_joints
    C = _pose(base_pose)
    V = _vec(base_twist, "base_twist", 6) if base_twist is not None else np.zeros(6)
    Q = _vec(q, "q", n)
    QD = _vec(qd, "qd", n) if qd is not None else np.zeros(n)
    if qd is not None and not np.isfinite(QD).all():   # the kernel's code covers q and qd together
        raise ValueError("qd: contains NaN or Inf")
    g = _gravity(gravity) if gravity is not None else _ZERO3
    nv = 6 + n
    M = np.empty((nv, nv)) if want & 1 else np.empty((0, 0))
    Cm = np.empty((nv, nv)) if want & 2 else np.empty((0, 0))
    gv = np.empty(nv) if want & 4 else np.empty(0)
    code = K.eom_terms(model.bodyi, model.bodyf, C, V, Q, QD, g, want, M, Cm, gv)
    if code:
        _raise(code)
    return M, Cm, gv


def mass_matrix(model: Model, base_pose, q) -> np.ndarray:
    """Joint-space inertia ``M`` (6+n, 6+n), symmetric positive definite (Prop. 1, composite
    rigid-body form ``S^T G_c M G_p S``). ``base_pose`` (4, 4), ``q`` (n,)."""
    return _eom(model, base_pose, None, q, None, None, 1)[0]


def coriolis_matrix(model: Model, base_pose, base_twist, q, qd) -> np.ndarray:
    """Admissible Coriolis matrix ``C`` (6+n, 6+n) of Lemma 1,
    ``C = sum_j J_j^T (M_j Jdot_j - ad_{V_j}^T M_j J_j)``, with ``dM/dt - 2 C`` skew-symmetric.
    ``base_twist`` (6,) spatial, ``q``, ``qd`` (n,)."""
    return _eom(model, base_pose, base_twist, q, qd, None, 2)[1]


def gravity_vector(model: Model, base_pose, q, gravity=DEFAULT_GRAVITY) -> np.ndarray:
    """Generalised gravity ``g = -sum_j J_j^T M_j G`` (6+n,), ``G = (0, gravity)``."""
    return _eom(model, base_pose, None, q, None, gravity, 4)[2]
