"""Constrained models: a base welded to the world, and enforced mimic joints.

A :class:`~geodyn_ros.model.Model` loaded with ``fixed_base`` or ``mimic=True`` keeps the
floating-base tree of the URDF (``model._plain``, the same arrays without the constraints) and
adds linear, constant constraints on the generalised velocity ``nu = (V, qdot)`` (spatial twist,
``CONVENTIONS.md``):

* **fixed base**: ``V^(k) = 0`` for every ``k``; the base pose is the ``base_pose`` argument (the
  weld). The base wrench returned is the reaction the weld exerts on the robot.
* **mimic**: ``q_m = a q_master + b``, so ``q^(k) = G q_r^(k)`` for ``k >= 1`` and
  ``q = G q_r + o``, with ``G`` (n, n_r) the constant map from the independent joints (the
  masters and unconstrained joints, columns of ``model.joint_names`` not in ``model.mimic``).

Because the constraints are constant and linear, every derivative order obeys them, and the
reduced equations follow by projection with ``Gf = blkdiag(I6 or nothing, G)``:

* inverse dynamics: the full tree's generalised force ``f^(k)`` is projected, ``f_r = Gf^T f``
  (a mimic joint's torque is carried by its master, ``tau_master += a tau_mimic``; the mimic
  columns of the returned ``tau`` are zero);
* forward/hybrid dynamics, order by order (``k = 0..r``): the k-th derivative of the equations of
  motion is ``M nu^(k+1) + b_k = f^(k)`` with the *same* mass matrix ``M`` at every order (Leibniz:
  every other term involves only ``nu^(0..k)``), and ``b_k`` is the full tree's inverse dynamics of
  order ``k`` with the unknown top derivatives set to zero. The reduced system
  ``(Gf^T M Gf)_UU x_U = (f_r - Gf^T b_k)_U`` gives the unknown top derivatives ``x_U``; the
  known coordinates' forces follow as ``(Gf^T M Gf)_K. x + (Gf^T b_k)_K``.

This costs one inverse-dynamics pass of order ``k`` per order (O(r^2 N) in all) plus one dense
Cholesky factorisation, against the recursive O(r N) of the unconstrained kernels: it is the
general path for constrained models, not the hot path. A fixed base without enforced mimic
joints uses the hybrid kernel directly (base motion given, joints free).
"""
from __future__ import annotations

import numpy as np

from . import dynamics as D
from .dynamics import _jet, singular_joints
from .eom import mass_matrix

__all__ = ["mimic_map", "expand_mimic", "project_mimic", "singular_joints"]


def mimic_map(model):
    """``(G, offset, independent)``: ``q = G q_r + offset`` with ``q_r = q[:, independent]``.

    ``G`` (n, n_r), ``offset`` (n,), ``independent`` (n_r,) int column indices (cached)."""
    cached = model._packed.get("mimic_map")
    if cached is not None:
        return cached
    n = model.n_joints
    mim = model.mimic if model.mimic_enforced else {}
    indep = np.array([j for j, nm in enumerate(model.joint_names) if nm not in mim], dtype=np.int64)
    col = {int(j): c for c, j in enumerate(indep)}
    G = np.zeros((n, len(indep)))
    off = np.zeros(n)
    for j in range(n):
        nm = model.joint_names[j]
        if nm in mim:
            master, a, b = mim[nm]
            G[j, col[model.joint_index(master)]] = a
            off[j] = b
        else:
            G[j, col[j]] = 1.0
    for a in (G, off, indep):
        a.setflags(write=False)
    model._packed["mimic_map"] = (G, off, indep)
    return G, off, indep


def expand_mimic(model, q):
    """Joint jet (rows, n) with the mimic columns rebuilt from their masters (row 0 gets the
    offset; higher rows are derivatives)."""
    return _from_reduced(model, q[:, mimic_map(model)[2]])


def _from_reduced(model, qr):
    """Full joint jet from the independent joints' jet (rows, n_r)."""
    G, off, _ = mimic_map(model)
    out = qr @ G.T
    out[0] += off
    return out


def project_mimic(model, tau):
    """Generalised joint forces (rows, n) projected onto the independent joints: master columns
    carry ``G^T tau``, mimic columns are zero."""
    G, _, indep = mimic_map(model)
    out = np.zeros_like(tau)
    out[:, indep] = tau @ G
    return out


# ------------------------------------------------------------------ argument handling

def _zero_base_twist(model, base_twist, rows):
    """The base twist jet of a welded base: ``None`` or an array that is zero in the rows used."""
    if base_twist is not None:
        V = _jet(base_twist, "base_twist", 1, 6, "zero: the base is welded (fixed_base); pass None")
        if np.any(V[:rows] != 0.0):
            raise ValueError("base_twist: the model's base is welded to the world (fixed_base=True): its twist "
                             "is zero at every order; pass base_twist=None")
    return np.zeros((rows, 6))


def _joint_jet(model, q, rows, what):
    Q = _jet(q, "q", rows, model.n_joints, what)[:rows]
    return expand_mimic(model, Q) if model.mimic_enforced else Q.copy()


def _kw(gravity, ext_wrench, ext_torque):
    return dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque)


def _check_plain_options(representation, base_pose):
    if representation != "spatial":
        raise ValueError(f"representation: {representation!r} is not supported for fixed-base or mimic-enforced "
                         "models (their base twist is zero or unconstrained): use 'spatial'")
    if np.ndim(base_pose) == 3:
        raise ValueError("base_pose: a time axis (T, 4, 4) is not supported for fixed-base or mimic-enforced "
                         "models; call per sample")


# ------------------------------------------------------------------ inverse dynamics

def inverse_dynamics(model, base_pose, base_twist, q, order, gravity, ext_wrench, ext_torque, representation):
    """Inverse dynamics of a constrained model (see the module docstring)."""
    _check_plain_options(representation, base_pose)
    order = D._check_order(order)
    V = (_zero_base_twist(model, base_twist, order + 2) if model.fixed_base else base_twist)
    Q = _joint_jet(model, q, order + 3, "joint derivatives 0..order+2")
    res = D._inverse_dynamics(model._plain, base_pose, V, Q, order, **_kw(gravity, ext_wrench, ext_torque))
    tau = project_mimic(model, res.tau) if model.mimic_enforced else res.tau
    return D.InverseDynamicsResult(res.base_wrench, tau)


# ------------------------------------------------------------------ forward / hybrid dynamics

def hybrid_dynamics(model, base_pose, base_twist, q, tau, order, mask, base_wrench, gravity, ext_wrench,
                    ext_torque, representation):
    """Hybrid (and, with nothing prescribed, forward) dynamics of a constrained model.

    ``mask`` (n,) bool marks prescribed joints; a mimic joint follows its master. ``base_wrench``
    None means the base motion is given (always so for a welded base). Returns a
    :class:`~geodyn_ros.algorithms.dynamics.HybridDynamicsResult` with full joint columns."""
    _check_plain_options(representation, base_pose)
    order = D._check_order(order)
    n = model.n_joints
    plain = model._plain
    if model.fixed_base:
        if base_wrench is not None:
            raise ValueError("base_wrench: the model's base is welded to the world (fixed_base=True); the base "
                             "wrench is an output (the weld's reaction): pass None")
        V = _zero_base_twist(model, base_twist, order + 2)
    else:
        V = base_twist
    if not model.mimic_enforced:   # welded base only: the hybrid kernel with the base motion given
        return D._hybrid_dynamics(plain, base_pose, V, q, tau, order, mask, None,
                                  **_kw(gravity, ext_wrench, ext_torque))
    G, off, indep = mimic_map(model)
    nr = len(indep)
    mask = np.asarray(mask, dtype=bool)
    for nm, (master, _, _) in model.mimic.items():
        j, mj = model.joint_index(nm), model.joint_index(master)
        if mask[j] and not mask[mj]:
            raise ValueError(f"prescribed: mimic joint {nm!r} follows its master {master!r}; prescribe the master")
    presc_r = mask[indep]
    base_known = base_wrench is None
    C = D._pose(base_pose)
    if base_known:
        Vj = D._jet(V, "base_twist", order + 2, 6, "spatial twist derivatives 0..order+1 (base motion given)")
        Vj = Vj[:order + 2].copy()
        W = np.zeros((order + 1, 6))
    else:
        Vj = np.zeros((order + 2, 6))
        Vj[0] = D._jet(V, "base_twist", 1, 6, "row 0: the spatial base twist")[0]
        W = D._jet(base_wrench, "base_wrench", order + 1, 6, "spatial wrench derivatives 0..order")[:order + 1].copy()
    qrows = order + 3 if presc_r.any() else 2
    Qin = D._jet(q, "q", qrows, n, "joint derivatives 0..order+2 for prescribed joints, else 0..1")
    qr = np.zeros((order + 3, nr))
    qr[:2] = Qin[:2, indep]
    if presc_r.any():
        qr[:, presc_r] = Qin[:order + 3, indep[presc_r]]
    if tau is None:
        if not presc_r.all():
            raise ValueError("tau: required (>= order+1, n) torques of the joints that are not prescribed")
        T = np.zeros((order + 1, n))
    else:
        T = D._jet(tau, "tau", order + 1, n, "joint torque derivatives 0..order")[:order + 1]
    fr = np.zeros((order + 1, 6 + nr))
    fr[:, :6] = W
    fr[:, 6:] = T @ G
    known = np.concatenate([np.full(6, base_known), presc_r])
    U, K = np.flatnonzero(~known), np.flatnonzero(known)
    Gf = np.zeros((6 + n, 6 + nr))
    Gf[:6, :6] = np.eye(6)
    Gf[6:, 6:] = G
    q0 = _from_reduced(model, qr[:1])[0]
    A = Gf.T @ mass_matrix(plain, C, q0) @ Gf
    AUU = A[np.ix_(U, U)]
    if len(U):
        try:
            L = np.linalg.cholesky(AUU)
        except np.linalg.LinAlgError:
            L = None
        d = np.diag(L) ** 2 if L is not None else None
        if L is None or d.min() <= 1e-12 * d.max():
            names = ["base"] * 6 + [model.joint_names[j] for j in indep]
            ev, vec = np.linalg.eigh(AUU)
            null = vec[:, ev <= 1e-12 * max(ev[-1], 1e-300)]
            who = sorted({names[U[i]] for i in np.flatnonzero(np.abs(null).max(axis=1) > 0.1)}) if null.size else []
            raise ValueError(f"model: the mass matrix reduced by the mimic constraints is singular at this state "
                             f"(no inertia along the motion of {', '.join(who) or 'some joints'}); forward dynamics is "
                             "undefined here")
    kw = _kw(gravity, ext_wrench, ext_torque)
    fK = np.zeros((order + 1, len(K)))
    for k in range(order + 1):
        qfull = _from_reduced(model, qr[:k + 3])
        res = D._inverse_dynamics(plain, C, Vj[:k + 2], qfull, k, **kw)
        b = Gf.T @ np.concatenate([res.base_wrench[k], res.tau[k]])
        if len(U):
            x = np.linalg.solve(L.T, np.linalg.solve(L, fr[k, U] - b[U]))
            for u, xu in zip(U, x):
                if u < 6:
                    Vj[k + 1, u] = xu
                else:
                    qr[k + 2, u - 6] = xu
            b = b + A[:, U] @ x
        fK[k] = b[K]
        fr[k, K] = b[K]
    q_out = _from_reduced(model, qr)
    tau_out = np.zeros((order + 1, n))
    tau_out[:, indep] = fr[:, 6:]
    return D.HybridDynamicsResult(Vj, fr[:, :6].copy(), q_out, tau_out)
