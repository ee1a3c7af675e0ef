"""Inertia-decoupled (reduced Euler–Lagrange) floating-base dynamics (Mishra et al.).

Everything here lives in the **base frame** ``{1}`` (Mishra's body formulation) and is
left-invariant: it depends on the shape ``q`` (and velocities), not on the base pose, except the
spatial momentum, gravity and the pose reconstruction. Vectors are angular first like the rest of
geodyn_ros (Mishra's Appendix uses ``(w, v)`` too; his Sec. VI-B counts components 1-3 as
translational, see ``examples/falling_cat.py``).

Notation (``n`` joints, ``V_b`` the body twist of the base, ``qd`` the joint rates):

* ``M = [[M_b, M_bq], [M_bq^T, M_q]]`` the mass matrix for ``nu_b = (V_b, qd)`` (eq. 4, 7);
  ``M_b`` (6, 6) is the **locked inertia**: the composite inertia of the whole robot, base axes.
* ``A_l = M_b^-1 M_bq`` (6, n) the **local connection** (Def. 4); ``mu = V_b + A_l qd`` the
  **locked velocity** (Def. 3); the **spatial momentum** ``J = Ad_C^-T M_b mu`` (Def. 2, world
  axes, moment about the world origin) is conserved without external wrenches.
* ``xi = (mu, qd) = L^-1 nu_b``, ``L = [[I, -A_l], [0, I]]``; ``Lambda = L^T M L =
  blkdiag(M_b, Lambda_q)``, ``Lambda_q = M_q - A_l^T M_b A_l`` (eq. 8, 15a).
* ``P(x) = sum_j x_j dM_b/dq_j`` (6, 6), the **locked inertia velocity** (Def. 5, eq. 15b/19):
  ``P(qd) = dM_b/dt``.
* ``S(x)`` (n, 6), the **locked inertia derivative** (Def. 6, eq. 15c/20): row ``j`` is
  ``(dM_b/dq_j x)^T``, so ``d/dq <mu, mu>_{M_b} = S(mu) mu``; ``S(x) y = S(y) x`` and
  ``P(z) y = S(y)^T z`` (Prop. 1; ERRATA: S is n x 6).
* ``adbar(h)`` (6, 6) with ``adbar(h) a = ad_a^T h`` (Mishra's velocity-exchange operator of
  eq. 3, skew-symmetric); ``interaction_matrix(y) = adbar(M_b y) A_l`` (Def. 7).
* ``DA_l(X) Y = dA_l(X, Y) - [A_l X, A_l Y]`` the **curvature** of the connection (Thm. 2, eq. 39,
  41), ``dA_l(X, Y) = (d_X A_l) Y - (d_Y A_l) X``; returned as a tensor ``F`` (6, n, n) with
  ``DA_l(X) Y = F[:, a, b] X_a Y_b``. For ``mu = 0`` the base moves with ``V_b = -A_l qd`` and a
  small shape loop of signed area ``a`` (in the ``(q_a, q_b)`` plane) displaces it by about
  ``-a F[:, a, b]`` (eq. 37).
* Theorem 1 (eq. 14): ``Lambda xi_dot + D_qdot xi = D_mu xi + F_xi`` with
  ``F_xi = L^T (W_b, tau)`` and

  - ``D_qdot = blkdiag(P(qd)/2, Gamma_q(qd))`` (depends on ``qd`` only; ``dM_b/dt - P`` = 0 and
    ``dLambda_q/dt - 2 Gamma_q`` skew: passivity),
  - ``D_mu = [[adbar(h), -S(mu)^T/2 - adbar(h) A_l], [S(mu)/2 - A_l^T adbar(h), Btilde(mu)]]``,
    ``h = M_b mu``, skew-symmetric and dependent on ``mu`` only, with
    ``Btilde(mu) X = -DA_l(X)^T M_b mu`` (ERRATA: eq. 15e's printed sign is flipped).

  ``Gamma_q(qd)`` is the shape block of the transformed Coriolis matrix ``Gamma = L^T (M Ldot +
  C_b L)`` at ``mu = 0`` (``C_b`` the body-representation form of the admissible Coriolis matrix of
  Ali et al. Lemma 1), which is Mishra's eq. (15d) with a skew-consistent velocity exchange (the
  form of ERRATA's eq. (6) fix); ``Gamma xi = (D_qdot - D_mu) xi`` holds for every ``xi``.

Frames and units: base wrench ``W_b`` is the body wrench (moment about the base origin, base axes,
as ``representation="body"`` of :func:`geodyn_ros.inverse_dynamics`); gravity is world, like the
rest of the package (``(0, 0, 0)`` for a space robot).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..lie import Ad, ad, dexp_inv_body, exp_se3, hat
from .checks import _check_model, _check_regular
from .dynamics import DEFAULT_GRAVITY, _gravity
from .eom import _vec as _eom_vec
from .eom import coriolis_matrix, gravity_vector
from .kernels import reduced as RK
from .representations import _pose

__all__ = [
    "ReducedTerms", "CoriolisDecomposition", "DecoupledForwardResult", "DecoupledInverseResult",
    "CentroidalLockedTerms", "DecoupledTrajectory",
    "reduced_terms", "locked_inertia", "local_connection", "locked_velocity", "base_twist_from_locked",
    "spatial_momentum", "decoupled_inertia", "locked_inertia_velocity", "locked_inertia_derivative",
    "interaction_matrix", "adbar", "coriolis_decomposition", "connection_curvature",
    "decoupled_forward_dynamics", "decoupled_inverse_dynamics", "integrate_decoupled",
    "centroidal_locked_terms",
]

_I4 = np.eye(4)


class ReducedTerms(NamedTuple):
    """Shape-dependent terms at one ``q`` (base frame, angular first; ``n`` joints).

    ``M_b`` (6, 6) locked inertia; ``M_bq`` (6, n); ``M_q`` (n, n); ``A_l`` (6, n) local
    connection; ``Lambda_q`` (n, n) shape inertia; ``dM_b`` (n, 6, 6) with ``dM_b[j] =
    dM_b/dq_j``; ``dA_l`` (n, 6, n) with ``dA_l[j] = dA_l/dq_j``; ``screws`` (n, 6) joint screws
    in base axes (the columns ``Ad_{1k} J_k``)."""
    M_b: np.ndarray
    M_bq: np.ndarray
    M_q: np.ndarray
    A_l: np.ndarray
    Lambda_q: np.ndarray
    dM_b: np.ndarray
    dA_l: np.ndarray
    screws: np.ndarray


class CoriolisDecomposition(NamedTuple):
    """Theorem 1: ``D_qdot`` (6+n, 6+n) passive part (``qd`` only), ``D_mu`` (6+n, 6+n) skew part
    (``mu`` only); the transformed Coriolis matrix acts as ``Gamma xi = (D_qdot - D_mu) xi``."""
    D_qdot: np.ndarray
    D_mu: np.ndarray


class DecoupledForwardResult(NamedTuple):
    """``mu_dot`` (6,) locked acceleration, ``qdd`` (n,), and ``base_twist`` (6,) the body twist
    ``V_b = mu - A_l qd`` that reconstructs the pose, ``dC/dt = C hat(V_b)`` (eq. 13)."""
    mu_dot: np.ndarray
    qdd: np.ndarray
    base_twist: np.ndarray


class DecoupledInverseResult(NamedTuple):
    """``base_wrench`` (6,) body wrench on the base (moment about its origin, base axes) and
    ``tau`` (n,) joint torques that produce the given ``(mu_dot, qdd)``."""
    base_wrench: np.ndarray
    tau: np.ndarray


class CentroidalLockedTerms(NamedTuple):
    """Prop. 3 at the centre of mass: ``com`` (3,) CoM in base axes; ``X`` (6, 6) =
    ``Ad_{g_1c}`` for ``g_1c = (I, com)``; ``M_b`` (6, 6) = ``X^T M_b X`` = blkdiag(centroidal
    rotational inertia, total mass I3) in base axes; ``A_l`` (6, n) = ``X^-1 A_l``; ``mu`` (6,)
    = ``X^-1 mu`` (the locked twist at the CoM, base axes)."""
    com: np.ndarray
    X: np.ndarray
    M_b: np.ndarray
    A_l: np.ndarray
    mu: np.ndarray


class DecoupledTrajectory(NamedTuple):
    """Samples of :func:`integrate_decoupled`: ``t`` (T,), ``base_pose`` (T, 4, 4), ``q``,
    ``qd`` (T, n), ``mu`` (T, 6), ``base_twist`` (T, 6) body twist."""
    t: np.ndarray
    base_pose: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    mu: np.ndarray
    base_twist: np.ndarray


# ----------------------------------------------------------------------------------- helpers
def adbar(h) -> np.ndarray:
    """``adbar(h)`` (6, 6), skew-symmetric, with ``adbar(h) a = ad_a^T h`` for a wrench ``h``
    ``= (n, f)`` (Mishra's eq. (3) exchange: ``ad*_V M W = adbar(M W) V``)."""
    h = np.asarray(h, dtype=float)
    out = np.zeros((6, 6))
    out[:3, :3] = hat(h[:3])
    out[:3, 3:] = hat(h[3:])
    out[3:, :3] = hat(h[3:])
    return out


def _ancestors(model) -> np.ndarray:
    """``anc[j, i]``: joint ``j`` is joint ``i`` or one of its ancestors (cached per model)."""
    anc = model._packed.get("reduced_anc")
    if anc is None:
        n = model.n_joints
        anc = np.zeros((n, n), dtype=bool)
        for i in range(n):
            b = i + 1
            while b > 0:
                anc[b - 1, i] = True
                b = int(model.parent[b])
        anc.setflags(write=False)
        model._packed["reduced_anc"] = anc
    return anc


def _vec(x, name, n):
    """:func:`geodyn_ros.algorithms.eom._vec` (float64, shape ``(n,)``) plus finiteness."""
    a = _eom_vec(x, name, n)
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: contains NaN or Inf")
    return a


def _ad_stack(S):
    """``ad`` matrices (n, 6, 6) of the rows of ``S`` (n, 6)."""
    out = np.zeros((S.shape[0], 6, 6))
    for a, b, c in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        for off in (0, 3):
            # hat(w) blocks on the diagonal, hat(v) below
            out[:, off + b, off + c] -= S[:, a]
            out[:, off + c, off + b] += S[:, a]
        out[:, 3 + b, c] -= S[:, 3 + a]
        out[:, 3 + c, b] += S[:, 3 + a]
    return out


def _terms(model, q, derivatives=True) -> ReducedTerms:
    """The terms at a validated ``q``; ``derivatives=False`` skips ``dM_b`` and the O(n^2)
    ``dA_l`` (left None) for the callers that only need the blocks and ``A_l``."""
    n, N = model.n_joints, model.n_bodies
    S = np.empty((n, 6))
    Mc = np.empty((N, 6, 6))
    RK.screws_and_composites(model.bodyi, model.bodyf, q, S, Mc)
    Mb = Mc[0]
    Mcj = Mc[1:]                                        # composite of the subtree of joint j
    hj = np.einsum("jab,jb->ja", Mcj, S)                # Mc_j S_j (n, 6)
    Mbq = hj.T.copy()
    anc = _ancestors(model)
    # M_q[i, j] = S_i^T Mc_{deeper of i, j} S_j for related joints (CRBA), 0 otherwise
    Mq = np.where(anc, S @ hj.T, 0.0)                   # (i <= j ancestor): S_i . Mc_j S_j
    Mq = np.where(anc.T, (S @ hj.T).T, Mq)
    if not _regular(Mb):
        raise ValueError(f"model: the locked inertia M_b is singular (total mass {model.total_mass:g} kg), so the "
                         "reduced terms (M_b^-1) are undefined; give the links a <mass>")
    Mb_inv = np.linalg.inv(Mb)
    Al = Mb_inv @ Mbq
    Lq = Mq - Al.T @ Mb @ Al
    Lq = 0.5 * (Lq + Lq.T)
    if not derivatives:
        return ReducedTerms(Mb, Mbq, Mq, Al, Lq, None, None, S)
    adS = _ad_stack(S)
    # moving joint j moves its subtree rigidly with twist S_j:  d Mc = -(ad^T Mc + Mc ad)
    dMc = -(np.transpose(adS, (0, 2, 1)) @ Mcj + Mcj @ adS)   # (n, 6, 6) = dM_b/dq_j
    # dM_bq/dq_j, column i: j ancestor-or-equal of i -> -ad_{S_j}^T Mc_i S_i (momentum of a
    # rigidly moved subtree); i strict ancestor of j -> (dMc_j) S_i; unrelated -> 0
    dMbq = np.where(anc[:, None, :], -np.einsum("jba,ib->jai", adS, hj), 0.0)
    strict = anc.T & ~np.eye(n, dtype=bool)             # strict[j, i]: i strict ancestor of j
    dMbq += np.where(strict[:, None, :], np.einsum("jab,ib->jai", dMc, S), 0.0)
    dAl = Mb_inv @ (dMbq - dMc @ Al)                    # (n, 6, n)
    return ReducedTerms(Mb, Mbq, Mq, Al, Lq, dMc, dAl, S)


def reduced_terms(model, q) -> ReducedTerms:
    """All shape-dependent terms at the shape ``q`` (n,) in one pass (see :class:`ReducedTerms`).

    One compiled pass builds the joint screws and subtree composite inertias in base axes
    (eq. 7 with ``Ad_{1k}``, ``J_k`` folded into the composites); the rest is dense algebra,
    O(n^2) for ``dA_l``."""
    return _checked_terms(model, q)


def _checked_terms(model, q, derivatives=True):
    _check_model(model)
    return _terms(model, _vec(q, "q", model.n_joints), derivatives)


def locked_inertia(model, q) -> np.ndarray:
    """Locked inertia ``M_b`` (6, 6) (eq. 7): the whole robot as one rigid body, base axes."""
    return _checked_terms(model, q, derivatives=False).M_b


def local_connection(model, q) -> np.ndarray:
    """Local (mechanical) connection ``A_l = M_b^-1 M_bq`` (6, n) (Def. 3, 4)."""
    return _checked_terms(model, q, derivatives=False).A_l


def decoupled_inertia(model, q) -> np.ndarray:
    """``Lambda = L^T M L = blkdiag(M_b, Lambda_q)`` (6+n, 6+n) (eq. 8, 15a)."""
    t = _checked_terms(model, q, derivatives=False)
    n = model.n_joints
    Lam = np.zeros((6 + n, 6 + n))
    Lam[:6, :6] = t.M_b
    Lam[6:, 6:] = t.Lambda_q
    return Lam


def locked_velocity(model, base_twist, q, qd) -> np.ndarray:
    """Locked velocity ``mu = V_b + A_l qd`` (6,) (Def. 3) from the body twist ``V_b`` (6,)."""
    n = model.n_joints
    t = _checked_terms(model, q, derivatives=False)
    return _vec(base_twist, "base_twist", 6) + t.A_l @ _vec(qd, "qd", n)


def base_twist_from_locked(model, mu, q, qd) -> np.ndarray:
    """Body twist ``V_b = mu - A_l qd`` (6,) of the base: the reconstruction ``dC/dt = C hat(V_b)``
    (eq. 13)."""
    n = model.n_joints
    t = _checked_terms(model, q, derivatives=False)
    return _vec(mu, "mu", 6) - t.A_l @ _vec(qd, "qd", n)


def spatial_momentum(model, base_pose, base_twist, q, qd) -> np.ndarray:
    """Total spatial momentum ``J = Ad_C^-T (M_b V_b + M_bq qd) = Ad_C^-T M_b mu`` (6,) (Def. 2):
    angular momentum about the world origin then linear momentum, world axes. ``base_twist`` is
    the body twist ``V_b``."""
    C = _pose(base_pose)
    n = model.n_joints
    t = _checked_terms(model, q, derivatives=False)
    h = t.M_b @ _vec(base_twist, "base_twist", 6) + t.M_bq @ _vec(qd, "qd", n)
    return np.linalg.solve(Ad(C).T, h)


def locked_inertia_velocity(model, q, x) -> np.ndarray:
    """``P(q, x) = sum_j x_j dM_b/dq_j`` (6, 6), symmetric (Def. 5, eq. 15b); ``P(qd) = dM_b/dt``."""
    t = reduced_terms(model, q)
    return np.einsum("j,jab->ab", _vec(x, "x", model.n_joints), t.dM_b)


def locked_inertia_derivative(model, q, x) -> np.ndarray:
    """``S(q, x)`` (n, 6), row ``j`` = ``(dM_b/dq_j x)^T`` (Def. 6, eq. 15c, 20):
    ``d/dq (mu^T M_b mu) = S(mu) mu``, ``S(x) y = S(y) x``, ``P(z) y = S(y)^T z`` (Prop. 1)."""
    t = reduced_terms(model, q)
    return t.dM_b @ _vec(x, "x", 6)


def interaction_matrix(model, q, y) -> np.ndarray:
    """Interaction matrix ``adbar(M_b y) A_l`` (6, n) (Def. 7): ``ad_{A_l x}^T M_b y`` for
    every shape velocity ``x``."""
    t = _checked_terms(model, q, derivatives=False)
    return adbar(t.M_b @ _vec(y, "y", 6)) @ t.A_l


def connection_curvature(model, q) -> np.ndarray:
    """Curvature of the mechanical connection, ``F`` (6, n, n), antisymmetric in the last two
    axes: ``DA_l(X) Y = einsum('kab,a,b', F, X, Y) = dA_l(X, Y) - [A_l X, A_l Y]`` (Thm. 2,
    eq. 39–41) with ``dA_l(X, Y) = (d_X A_l) Y - (d_Y A_l) X`` and ``[a, b] = ad_a b``."""
    t = reduced_terms(model, q)
    return _curvature(t)


def _curvature(t):
    dA = np.transpose(t.dA_l, (1, 0, 2))                 # dA[:, a, b] = d A_l[:, b] / dq_a
    bracket = np.einsum("aij,jb->iab", _ad_stack(t.A_l.T), t.A_l)   # ad_{A_l e_a} A_l e_b
    F = dA - np.transpose(dA, (0, 2, 1)) - bracket
    return 0.5 * (F - np.transpose(F, (0, 2, 1)))        # exactly antisymmetric (rounding of [.,.])


def _decomposition(model, t, q, qd, mu):
    n = model.n_joints
    Al = t.A_l
    P = np.einsum("j,jab->ab", qd, t.dM_b)
    Smu = t.dM_b @ mu                                    # (n, 6)
    h = t.M_b @ mu
    Hb = adbar(h)
    F = _curvature(t)
    Bt = -np.einsum("kab,k->ba", F, h)                   # Btilde[i, a] = -(DA_l(e_a) e_i) . h
    Dmu = np.zeros((6 + n, 6 + n))
    Dmu[:6, :6] = Hb
    Dmu[:6, 6:] = -0.5 * Smu.T - Hb @ Al
    Dmu[6:, :6] = 0.5 * Smu - Al.T @ Hb
    Dmu[6:, 6:] = Bt
    Dqd = np.zeros((6 + n, 6 + n))
    Dqd[:6, :6] = 0.5 * P
    Dqd[6:, 6:] = _shape_coriolis(model, t, q, qd)
    return Dqd, Dmu


def _shape_coriolis(model, t, q, qd):
    """``Gamma_q(qd)``: shape block of ``Gamma = L^T (M Ldot + C_b L)`` at ``mu = 0``."""
    n = model.n_joints
    Al = t.A_l
    Vb = -Al @ qd
    M = np.zeros((6 + n, 6 + n))
    M[:6, :6], M[:6, 6:], M[6:, :6], M[6:, 6:] = t.M_b, t.M_bq, t.M_bq.T, t.M_q
    Cb = coriolis_matrix(model, _I4, Vb, q, qd)   # base pose I: spatial = body values
    Cb[:, :6] += M[:, :6] @ ad(Vb)                     # body form: C_b = C_s + M Tdot, Tdot = ad_Vb
    Al_dot = np.einsum("j,jai->ai", qd, t.dA_l)
    # bottom-right block of L^T (M Ldot + C_b L) with L = [[I, -A_l], [0, I]], Ldot = [[0, -Al_dot], [0, 0]]
    X = -M[:, :6] @ Al_dot + Cb[:, 6:] - Cb[:, :6] @ Al     # (M Ldot + C_b L)[:, 6:]
    return X[6:] - Al.T @ X[:6]


def coriolis_decomposition(model, q, qd, mu) -> CoriolisDecomposition:
    """Theorem 1's two Coriolis matrices at shape ``q`` (n,), shape velocity ``qd`` (n,) and locked
    velocity ``mu`` (6,): ``D_qdot`` (passive, ``qd`` only) and ``D_mu`` (skew, ``mu`` only), see
    the module docstring for the blocks (eq. 14, 15a–e, signs per ERRATA)."""
    _check_model(model)
    n = model.n_joints
    q = _vec(q, "q", n)
    t = _terms(model, q)
    return CoriolisDecomposition(*_decomposition(model, t, q, _vec(qd, "qd", n), _vec(mu, "mu", 6)))


def _generalized_force(model, C, q, base_wrench, tau, gravity):
    """``(W_b, tau)`` minus generalised gravity, body representation (6+n,)."""
    n = model.n_joints
    f = np.concatenate([_vec(base_wrench, "base_wrench", 6), _vec(tau, "tau", n)])
    g = _gravity(gravity)
    if np.any(g):
        gs = gravity_vector(model, C, q, g)              # spatial representation
        gs[:6] = Ad(C).T @ gs[:6]                        # body: f_b = T^T f_s, T = blkdiag(Ad_C, I)
        f -= gs
    return f


def decoupled_forward_dynamics(model, base_pose, q, qd, mu, base_wrench, tau, *,
                               gravity=DEFAULT_GRAVITY) -> DecoupledForwardResult:
    """Forward dynamics in the decoupled coordinates ``xi = (mu, qd)`` (Theorem 1, eq. 14):

        M_b mu_dot = F_b - P(qd) mu / 2 + [D_mu xi]_b,
        Lambda_q qdd = tau - A_l^T F_b - Gamma_q(qd) qd + [D_mu xi]_q   (F_b, tau: minus gravity)

    ``base_pose`` (4, 4) is used for gravity only; ``base_wrench`` (6,) body wrench on the base;
    ``tau`` (n,); ``gravity`` (3,) world (``(0, 0, 0)`` for a space robot). Also returns the body
    twist ``V_b = mu - A_l qd`` for the pose reconstruction (eq. 13)."""
    _check_model(model)
    _check_regular(model)
    n = model.n_joints
    C = _pose(base_pose)
    q, qd, mu = _vec(q, "q", n), _vec(qd, "qd", n), _vec(mu, "mu", 6)
    t = _terms(model, q)
    if not _regular(t.Lambda_q):
        raise ValueError("model: the joint-space inertia Lambda_q is singular at this shape q (a motion of the joints "
                         "with the base free moves no mass), so the decoupled forward dynamics is undefined here")
    Dqd, Dmu = _decomposition(model, t, q, qd, mu)
    xi = np.concatenate([mu, qd])
    Fxi = _to_xi(t, _generalized_force(model, C, q, base_wrench, tau, gravity))
    rhs = Dmu @ xi - Dqd @ xi + Fxi
    mu_dot = np.linalg.solve(t.M_b, rhs[:6])
    qdd = np.linalg.solve(t.Lambda_q, rhs[6:])
    return DecoupledForwardResult(mu_dot, qdd, mu - t.A_l @ qd)


def _regular(A, rtol=1e-12) -> bool:
    """True if the symmetric positive semi-definite ``A`` is positive definite beyond rounding: every
    Cholesky pivot of its Jacobi scaling ``D^-1/2 A D^-1/2`` (a unit-free test) above ``rtol``, the
    relative threshold of the forward dynamics kernels."""
    if A.shape[0] == 0:
        return True
    d = np.diag(A)
    if not np.all(d > 0.0):
        return False
    s = 1.0 / np.sqrt(d)
    try:
        L = np.linalg.cholesky(A * s[:, None] * s[None, :])
    except np.linalg.LinAlgError:
        return False
    return bool(np.min(np.diag(L)) ** 2 > rtol)


def _to_xi(t, f):
    """``L^T f`` (eq. 17): ``(F_b, tau - A_l^T F_b)``."""
    out = f.copy()
    out[6:] -= t.A_l.T @ f[:6]
    return out


def decoupled_inverse_dynamics(model, base_pose, q, qd, mu, mu_dot, qdd, *,
                               gravity=DEFAULT_GRAVITY) -> DecoupledInverseResult:
    """Inverse of :func:`decoupled_forward_dynamics`: the body base wrench (6,) and joint torques
    (n,) that produce ``mu_dot`` (6,) and ``qdd`` (n,) at ``(q, qd, mu)``:
    ``F_xi = Lambda xi_dot + (D_qdot - D_mu) xi``, ``(W_b, tau) = L^-T F_xi`` plus gravity."""
    _check_model(model)
    n = model.n_joints
    C = _pose(base_pose)
    q, qd, mu = _vec(q, "q", n), _vec(qd, "qd", n), _vec(mu, "mu", 6)
    mu_dot, qdd = _vec(mu_dot, "mu_dot", 6), _vec(qdd, "qdd", n)
    t = _terms(model, q)
    Dqd, Dmu = _decomposition(model, t, q, qd, mu)
    xi = np.concatenate([mu, qd])
    Fxi = np.concatenate([t.M_b @ mu_dot, t.Lambda_q @ qdd]) + (Dqd - Dmu) @ xi
    f = Fxi.copy()
    f[6:] += t.A_l.T @ Fxi[:6]                          # L^-T
    f -= _generalized_force(model, C, q, np.zeros(6), np.zeros(n), gravity)
    return DecoupledInverseResult(f[:6], f[6:])


def integrate_decoupled(model, base_pose, q, qd, mu, duration, dt, *, tau=None, base_wrench=None,
                        gravity=DEFAULT_GRAVITY, samples=None) -> DecoupledTrajectory:
    """Simulate with :func:`decoupled_forward_dynamics` and the reconstruction ``dC/dt = C hat(V_b)``
    (eq. 13): fixed-step Runge–Kutta–Munthe-Kaas of order 4 (the pose stays exactly on SE(3);
    global error O(dt^4)).

    ``tau``, ``base_wrench``: None (zero), a constant array, or a function ``f(t, state)`` with
    ``state = (C, q, qd, mu)``. ``duration`` and ``dt`` in seconds (``duration/dt`` steps, rounded
    up); ``samples``: keep every k-th step (default: all). Returns a :class:`DecoupledTrajectory`."""
    _check_model(model)
    _check_regular(model)
    n = model.n_joints
    C0 = _pose(base_pose)
    x0 = (np.zeros(6), _vec(q, "q", n).copy(), _vec(qd, "qd", n).copy(), _vec(mu, "mu", 6).copy())
    dt = float(dt)
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"dt: expected a positive step, got {dt}")
    duration = float(duration)
    if not (np.isfinite(duration) and duration >= 0):
        raise ValueError(f"duration: expected a non-negative time, got {duration}")
    steps = int(np.ceil(duration / dt - 1e-9))
    every = 1 if samples is None else int(samples)
    if every < 1:
        raise ValueError(f"samples: expected a positive integer, got {samples}")

    def inp(u, t, state, m, name):
        if u is None:
            return np.zeros(m)
        return _vec(u(t, state) if callable(u) else u, name, m)

    for u, name, m in ((tau, "tau", n), (base_wrench, "base_wrench", 6)):
        if u is not None and not callable(u):
            _vec(u, name, m)          # a constant input is checked once, before the first step

    def f(t, C, x):
        th, qq, qqd, mm = x
        state = (C, qq, qqd, mm)
        r = decoupled_forward_dynamics(model, C, qq, qqd, mm, inp(base_wrench, t, state, 6, "base_wrench"),
                                       inp(tau, t, state, n, "tau"), gravity=gravity)
        return (dexp_inv_body(th, r.base_twist), qqd, r.qdd, r.mu_dot)

    def shift(x, k, c):
        return (c * k[0], x[1] + c * k[1], x[2] + c * k[2], x[3] + c * k[3])

    C, x, tt = C0, x0, 0.0
    out = {k: [] for k in ("t", "C", "q", "qd", "mu", "Vb")}

    def record(C, x, tt):
        out["t"].append(tt)
        out["C"].append(C)
        out["q"].append(x[1])
        out["qd"].append(x[2])
        out["mu"].append(x[3])
        out["Vb"].append(base_twist_from_locked(model, x[3], x[1], x[2]))

    record(C, x, tt)
    for s in range(steps):
        h = min(dt, duration - tt) if s == steps - 1 else dt
        k1 = f(tt, C, x)
        k2 = f(tt + h / 2, C @ exp_se3(h / 2 * k1[0]), shift(x, k1, h / 2))
        k3 = f(tt + h / 2, C @ exp_se3(h / 2 * k2[0]), shift(x, k2, h / 2))
        k4 = f(tt + h, C @ exp_se3(h * k3[0]), shift(x, k3, h))
        inc = [h / 6 * (a + 2 * b + 2 * c + d) for a, b, c, d in zip(k1, k2, k3, k4)]
        C = C @ exp_se3(inc[0])
        x = (np.zeros(6), x[1] + inc[1], x[2] + inc[2], x[3] + inc[3])
        tt += h
        if (s + 1) % every == 0 or s == steps - 1:
            record(C, x, tt)
    return DecoupledTrajectory(np.array(out["t"]), np.array(out["C"]), np.array(out["q"]),
                               np.array(out["qd"]), np.array(out["mu"]), np.array(out["Vb"]))


def centroidal_locked_terms(model, q, mu=None) -> CentroidalLockedTerms:
    """Prop. 3 with ``g_1c = (I, c)`` the right translation to the centre of mass ``c`` (base
    axes) at the shape ``q``: the locked inertia becomes block diagonal, ``X^T M_b X = blkdiag(I_c,
    m I3)`` (``X = Ad_{g_1c}``), the connection ``X^-1 A_l`` and the locked velocity ``X^-1 mu``
    (ERRATA: Prop. 3 treats ``g_1c`` as constant; here it is evaluated at the given ``q``)."""
    t = _checked_terms(model, q, derivatives=False)
    m = t.M_b[3, 3]
    c = np.array([t.M_b[2, 4], t.M_b[0, 5], t.M_b[1, 3]]) / m   # M_b[:3, 3:] = m hat(c)
    g = np.eye(4)
    g[:3, 3] = c
    X = Ad(g)
    Xinv = np.linalg.inv(X)
    mu_c = Xinv @ _vec(mu, "mu", 6) if mu is not None else np.zeros(6)
    return CentroidalLockedTerms(c, X, X.T @ t.M_b @ X, Xinv @ t.A_l, mu_c)
