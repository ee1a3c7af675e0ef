"""Base twist and wrench representations and the conversion of their *jets* (Müller §2).

The four representations of the base velocity (angular first, as everywhere in geodyn_ros),
with base pose ``C = (R, r)`` (base axes -> world, base origin ``r`` in world):

=============  ==============================  ============================================
name           twist ``V^X``                    wrench ``W^X`` (dual: ``W^X . V^X`` = power)
=============  ==============================  ============================================
``"body"``     ``(w_b, v_b) = C^-1 dC/dt``      moment about the base origin, base axes; force
               (base axes; Pinocchio LOCAL)     in base axes (Pinocchio's ``rnea[:6]``)
``"spatial"``  ``(w, rdot + r x w)`` (world;    moment about the world origin and force, world
               CONVENTIONS.md, the core)        axes (CONVENTIONS.md, the core)
``"hybrid"``   ``(w, rdot)``: angular velocity  moment about the base origin and force, world
               and base-origin velocity, world  axes (Pinocchio LOCAL_WORLD_ALIGNED)
``"mixed"``    ``(w_b, rdot)``: body angular    moment about the base origin in base axes, force
               velocity, world linear velocity  in world axes (MuJoCo free joint, iDynTree)
=============  ==============================  ============================================

Every representation is ``V^X = T_X(C) V_b`` with ``T_body = I``, ``T_spatial = Ad_C``,
``T_hybrid = blkdiag(R, R)``, ``T_mixed = blkdiag(I, R)``, and wrenches map by the dual,
``W^X = T_X^-T W_b``. Along a motion ``T_X`` changes, ``dT_X/dt = T_X Omega_X(V_b)`` with
``Omega_body = 0``, ``Omega_spatial = ad_{V_b}``, ``Omega_hybrid = blkdiag(hat(w_b), hat(w_b))``,
``Omega_mixed = blkdiag(0, hat(w_b))``, so time derivatives convert with the Leibniz sums

    V^X(k) = sum_j binom(k, j) T_X^(j) V_b^(k-j),   T_X^(j) = sum_i binom(j-1, i) T_X^(j-1-i) Omega_X(V_b^(i)),

which this module evaluates exactly (converting row by row with ``T_X`` alone is wrong from the
second derivative on; the first happens to be right for ``spatial`` only, as ``ad_V V = 0``).
Jets follow the package convention: row ``k`` is the k-th time derivative.
"""
from __future__ import annotations

from math import comb

import numpy as np

from ..lie import Ad, Ad_inv, ad, hat
from .checks import _check_model, _check_order, _f64, _has_time_axis, _raise
from .checks import _jet as _jet_shape
from .checks import _pose as _check_pose_shape
from .kernels import common as K

__all__ = ["REPRESENTATIONS", "twist_transform", "convert_twist", "convert_wrench",
           "linear_first", "angular_first"]

#: the base twist / wrench representations
REPRESENTATIONS = ("spatial", "body", "hybrid", "mixed")


def _rep(name, arg):
    if name not in REPRESENTATIONS:
        raise ValueError(f"{arg}: expected one of {REPRESENTATIONS}, got {name!r}")
    return name


def _pose(C):
    """The validated pose, with the messages of the dynamics functions (``base_pose: ...``)."""
    C = _check_pose_shape(C)
    code = K._check_pose(C)
    if code:
        _raise(code)
    return C


def _jet(x, name, min_rows=1):
    a = _jet_shape(x, name, min_rows, 6, "rows: time derivatives")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: contains NaN or Inf")
    return a


def twist_transform(base_pose, representation: str) -> np.ndarray:
    """``T_X`` (6, 6) with ``V^X = T_X V_b`` for the base pose (4, 4) (values only)."""
    C = _pose(base_pose)
    return _T(C, _rep(representation, "representation"))


def _T(C, rep):
    if rep == "spatial":
        return Ad(C)
    R = C[:3, :3]
    T = np.eye(6)
    if rep == "hybrid":
        T[:3, :3] = R
        T[3:, 3:] = R
    elif rep == "mixed":
        T[3:, 3:] = R
    return T


def _T_inv(C, rep):
    """``T_X^-1`` in closed form (``Ad_C^-1``, ``blkdiag(R^T, R^T)``, ``blkdiag(I, R^T)``, ``I``)."""
    if rep == "spatial":
        return Ad_inv(C)
    Rt = C[:3, :3].T
    T = np.eye(6)
    if rep == "hybrid":
        T[:3, :3] = Rt
        T[3:, 3:] = Rt
    elif rep == "mixed":
        T[3:, 3:] = Rt
    return T


def _Omega(Vb, rep):
    O = np.zeros((6, 6))
    if rep == "spatial":
        return ad(Vb)
    if rep in ("hybrid", "mixed"):
        W = hat(Vb[:3])
        O[3:, 3:] = W
        if rep == "hybrid":
            O[:3, :3] = W
    return O


def _T_derivatives(C, Vb, rep, m):
    """[T^(0), ..., T^(m-1)] along the motion with body twist jet ``Vb`` (needs rows 0..m-2)."""
    Ts = [_T(C, rep)]
    if rep == "body":
        return Ts + [np.zeros((6, 6))] * (m - 1)
    Om = [_Omega(Vb[i], rep) for i in range(m - 1)]
    for j in range(1, m):
        Ts.append(sum(comb(j - 1, i) * Ts[j - 1 - i] @ Om[i] for i in range(j)))
    return Ts


def _to_body(C, V, rep):
    """Body twist jet from the jet ``V`` in ``rep`` (solved row by row)."""
    K = V.shape[0]
    if rep == "body":
        return V.copy()
    T0inv = _T_inv(C, rep)
    Vb = np.empty_like(V)
    Ts = [_T(C, rep)]
    Om = []
    for k in range(K):
        if k >= 1:   # T^(k) needs Omega(V_b^(0..k-1))
            Om.append(_Omega(Vb[k - 1], rep))
            Ts.append(sum(comb(k - 1, i) * Ts[k - 1 - i] @ Om[i] for i in range(k)))
        rhs = V[k] - sum(comb(k, j) * Ts[j] @ Vb[k - j] for j in range(1, k + 1))
        Vb[k] = T0inv @ rhs
    return Vb


def _from_body(C, Vb, rep):
    K = Vb.shape[0]
    Ts = _T_derivatives(C, Vb, rep, K)
    return np.array([sum(comb(k, j) * Ts[j] @ Vb[k - j] for j in range(k + 1)) for k in range(K)])


def convert_twist(base_pose, base_twist, from_rep: str, to_rep: str) -> np.ndarray:
    """Convert a base twist jet between representations.

    Parameters
    ----------
    base_pose : (4, 4) base pose ``C`` at the instant of the jet.
    base_twist : (K, 6) or (6,) rows ``V^(0..K-1)`` in ``from_rep`` (angular first).
    from_rep, to_rep : one of ``REPRESENTATIONS``.

    Returns
    -------
    ndarray
        (K, 6) rows ``V^(0..K-1)`` in ``to_rep`` (Leibniz terms of the moving transform included).
    """
    C = _pose(base_pose)
    V = _jet(base_twist, "base_twist")
    a, b = _rep(from_rep, "from_rep"), _rep(to_rep, "to_rep")
    if a == b:
        return V.copy()
    return _from_body(C, _to_body(C, V, a), b)


def convert_wrench(base_pose, base_wrench, base_twist, from_rep: str, to_rep: str, *,
                   twist_representation: str = "spatial") -> np.ndarray:
    """Convert a base wrench jet between representations (the duals of the twists).

    Parameters
    ----------
    base_pose : (4, 4).
    base_wrench : (K, 6) or (6,) rows ``W^(0..K-1)`` in ``from_rep`` (moment first).
    base_twist : (>= K-1, 6) the base twist jet of the motion (in ``twist_representation``):
        the transform's derivatives up to ``K-1`` need ``V^(0..K-2)``. May be None if K == 1.
    from_rep, to_rep, twist_representation : one of ``REPRESENTATIONS``.

    Returns
    -------
    ndarray
        (K, 6) rows ``W^(0..K-1)`` in ``to_rep``; ``W^X = T_X^-T W_b`` differentiated exactly.
    """
    C = _pose(base_pose)
    W = _jet(base_wrench, "base_wrench")
    a, b = _rep(from_rep, "from_rep"), _rep(to_rep, "to_rep")
    tr = _rep(twist_representation, "twist_representation")
    K = W.shape[0]
    if a == b:
        return W.copy()
    if K > 1:
        V = _jet(base_twist, "base_twist", K - 1)[:K - 1]
        Vb = _to_body(C, V, tr)
    else:
        Vb = np.zeros((0, 6))
    return _convert_wrench_body(C, W, Vb, a, b)


def _convert_wrench_body(C, W, Vb, a, b):
    """``W`` (K, 6) from ``a`` to ``b`` given the body twist jet ``Vb`` (>= K-1 rows)."""
    K = W.shape[0]
    if a == b:
        return W.copy()
    # W_b = T_a^T W^a (the dual map):  W_b^(k) = sum_j binom(k, j) (T_a^(j))^T W^a^(k-j)
    Ta = _T_derivatives(C, Vb, a, K)
    Wb = np.array([sum(comb(k, j) * Ta[j].T @ W[k - j] for j in range(k + 1)) for k in range(K)])
    if b == "body":   # T_body = I for all t
        return Wb
    # W^b solves W_b = T_b^T W^b row by row
    Tb = _T_derivatives(C, Vb, b, K)
    T0T_inv = _T_inv(C, b).T
    out = np.empty_like(W)
    for k in range(K):
        rhs = Wb[k] - sum(comb(k, j) * Tb[j].T @ out[k - j] for j in range(1, k + 1))
        out[k] = T0T_inv @ rhs
    return out


def linear_first(x) -> np.ndarray:
    """Swap the 3-blocks of twists/wrenches (..., 6): ``(w, v) -> (v, w)``, ``(n, f) -> (f, n)``
    (Pinocchio's ``Motion``/``Force`` vectors, ROS ``Twist``/``Wrench`` field order, MuJoCo
    ``qvel[:6]`` of a free joint with ``mixed``)."""
    a = _f64(x, "x")
    if a.ndim == 0 or a.shape[-1] != 6:
        raise ValueError(f"x: expected a last axis of length 6, got shape {a.shape}")
    return np.concatenate([a[..., 3:], a[..., :3]], axis=-1)


def angular_first(x) -> np.ndarray:
    """Inverse of :func:`linear_first` (the same swap)."""
    return linear_first(x)


# --- dynamics with the base twist and wrench in another representation -------------------------
# (called by ``inverse_dynamics`` / ``forward_dynamics`` / ``hybrid_dynamics`` when
# ``representation != "spatial"``; the core runs in the spatial representation and only the base
# jets cross this boundary. ``ext_wrench`` and ``gravity`` stay in world axes.)

def _slice(x, t):
    """Sample ``t`` of a trajectory argument (array, ``{link: array}`` or None)."""
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: np.asarray(v)[t] for k, v in x.items()}
    return np.asarray(x)[t]


def _used_rows(x, name, rows, what):
    """The first ``rows`` rows of the (>= rows, 6) jet ``x``, finite (later rows are not read)."""
    a = _jet_shape(x, name, rows, 6, what)[:rows]
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: contains NaN or Inf in the rows used")
    return a


def _dynamics_in(rep, run, model, base_pose, base_twist, q, base_wrench, tau, order, kw, result):
    """Run ``run(model, C, V_spatial, q, W_spatial, tau, order, **kw)`` (a spatial-representation
    dynamics call returning a :class:`HybridDynamicsResult`-like tuple) with the base twist and
    wrench jets given and returned in ``rep``.

    * Base motion given (``base_wrench is None``): ``V^X`` (order+2 rows) -> spatial, one call,
      the spatial wrench (order+1 rows) -> ``X`` (needs ``V^(0..order-1)``, known).
    * Base wrench given: ``W^(k)`` converts with ``V^(0..k-1)``, which the dynamics produce from
      ``W^(0..k-2)``, so the call is repeated causally at orders 0, 2, 4, ... (each call of order
      ``m`` yields ``V^(0..m+1)``, enough to convert two more wrench rows), then at ``order``.
    """
    _check_model(model)
    order = _check_order(order)
    rep = _rep(rep, "representation")
    if _has_time_axis(base_pose):
        Cs = np.asarray(base_pose)
        outs = [_dynamics_in(rep, run, model, Cs[t], _slice(base_twist, t), _slice(q, t),
                             _slice(base_wrench, t), _slice(tau, t), order,
                             {k: (_slice(v, t) if k in ("ext_wrench", "ext_torque") else v)
                              for k, v in kw.items()}, result)
                for t in range(Cs.shape[0])]
        return type(outs[0])(*(np.stack(f) for f in zip(*outs)))
    C = _pose(base_pose)
    if base_wrench is None:
        Vx = _used_rows(base_twist, "base_twist", order + 2,
                        f"{rep} twist derivatives 0..order+1 (base motion given)")
        Vb = _to_body(C, Vx, rep)
        res = run(model, C, _from_body(C, Vb, "spatial"), q, None, tau, order, **kw)
        W = _convert_wrench_body(C, res.base_wrench, Vb, "spatial", rep)
        return result(Vx.copy(), W, res.q, res.tau)
    Vx0 = _used_rows(base_twist, "base_twist", 1, f"{rep} twist derivatives row 0 (base wrench given)")
    Wx = _used_rows(base_wrench, "base_wrench", order + 1, f"{rep} wrench derivatives 0..order")
    V0 = _from_body(C, _to_body(C, Vx0, rep), "spatial")
    rows = 1
    Vb = np.zeros((0, 6))
    while True:
        Ws = _convert_wrench_body(C, Wx[:rows], Vb, rep, "spatial")
        res = run(model, C, V0, q, Ws, tau, rows - 1, **kw)
        Vb = _to_body(C, res.base_twist, "spatial")   # rows 0..rows
        if rows == order + 1:
            break
        rows = min(order + 1, rows + 2)
    Vout = _from_body(C, Vb, rep)
    Vout[0] = Vx0[0]                                   # row 0 echoes the input exactly
    return result(Vout, Wx.copy(), res.q, res.tau)
