"""Compiled (numba) kernels of the first-order derivatives of the dynamics. Internal module.

One kernel, :func:`derivatives`, evaluates in a single pass over the tree (Bos et al.,
Secs. 3–4, with the recursions written in the spatial frame of the Ali et al. core):

* the extended inverse dynamics ``ID(x, nudot) = M nudot + h`` (Bos eq. (39)) and its
  derivatives with respect to the base pose, the joint positions, the base twist and the
  joint rates (the derivative with respect to ``nudot`` is ``M``);
* the inverse mass matrix (articulated-body form with one right-hand side per unit input,
  O(N n); the counterpart of Bos Table 9 with every block filled);
* the forward dynamics ``nudot = M^-1 (u - h)`` and its derivatives ``-M^-1 D ID``
  (Bos Prop. 3) and the left-trivialized linearization ``A``, ``B`` (Props. 1–2).

Derivation (all vectors spatial: world axes, about the world origin, angular first)
----------------------------------------------------------------------------------
Bodies ``i`` with parent ``p``, world joint screw ``S_i``, ``psi_i = ad_{V_p} S_i`` (the
joint screw rate per unit joint rate), spatial inertia ``I_i``, momentum ``h_i = I_i V_i``::

    V_i = V_p + S_i qd_i,    A_i = A_p + psi_i qd_i + S_i qdd_i,   A_0 = Vdot_0 - (0, g)
    f_i = I_i A_i + ad*_{V_i} h_i,   F_i = f_i + sum_children F_c - w_ext,i,   tau_i = S_i^T F_i

(``ad*_x = -ad_x^T``; gravity enters as the fictitious base acceleration ``(0, -g)``.)
A change ``dq_j`` moves the subtree of ``j`` rigidly along ``S_j``: body-fixed quantities
change by ``ad_{S_j}`` (``dI = ad*_S I - I ad_S``), and with ``Ibar := sum I`` (composite
inertia) and ``Bc := sum (ad*_V I - hbar - I ad_V)`` over a subtree (``ad*_x h = -hbar x``,
``hbar = [[hat(n), hat(f)], [hat(f), 0]]`` for ``h = (n, f)``) one finds, with
``c_j = ad_{A_p} S_j + ad_{V_p} psi_j``::

    dF_k/dq_j  = ad*_{S_j} Fin_j + Ibar_j c_j + Bc_j psi_j       (k an ancestor of j; also the base)
    dtau_k/dq_j = S_k^T (Ibar_k c_j + Bc_k psi_j - Fextbar_k S_j)  (k in the subtree of j)
    dF_k/dqd_j = 2 Ibar_j psi_j + Bc_j S_j ;   dtau_k/dqd_j = S_k^T (2 Ibar_k psi_j + Bc_k S_j)
    dF/dV_0    = Bc + Ibar ad_{V_0}

(``Fin`` the subtree sum of the inertial wrenches ``f``, ``Fext`` that of the applied ones;
the ``tau`` rows of subtree bodies lose the ``ad_{S_j}`` terms because ``S_k`` moves with them.)
A rigid motion of the whole tree by the spatial screw ``sigma`` at fixed base twist and
acceleration is the same formula with ``S_j -> sigma``, ``V_p -> V_0``, ``A_p -> A_0``.

Pose perturbation and representations
-------------------------------------
The pose is perturbed as ``C exp(hat(delta))`` (left-trivialized, ``delta`` in base axes), so
``sigma = Ad_C delta``. *Spatial*: inputs and outputs as the core (spatial twist, spatial
wrench) and ``d/d delta = d/d sigma Ad_C``. *Body*: the recursion runs in the base frame
(``C = I``, gravity ``R^T g``, applied wrenches ``Ad_C^T w``) with body twist and acceleration;
holding *those* fixed while ``delta`` moves the base adds the chain-rule terms::

    d/d delta = d/d sigma - d/dV ad_{V_b} - M[:, :6] ad_{Vdot_b} + [Wbar_b; 0]

(``Ad_exp(delta) = I + ad_delta``; the last term converts the output wrench to the moved frame.)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .common import (_FAST, ERR_EXTT_NONFINITE, ERR_EXTW_NONFINITE, ERR_Q_NONFINITE, ERR_RESULT_NONFINITE,
                     ERR_SINGULAR_BASE, ERR_SINGULAR_JOINT, ERR_TAU_NONFINITE, ERR_TWIST_NONFINITE,
                     ERR_WRENCH_NONFINITE, OK, SINGULAR_RTOL, _check_state0)
from .hybrid import _base_inertia_singular, _chol6, _chol6_solve, _spatial_inertia
from .kinematics import _body_inertia0, _body_pose

MODE_ID = 0          #: derivatives of the extended inverse dynamics at a given acceleration
MODE_FD = 1          #: forward dynamics, its derivatives and the inverse mass matrix
MODE_LINEARIZE = 2   #: MODE_FD plus the A and B matrices of Props. 1-2
MODE_MINV = 3        #: the inverse mass matrix only

#: above this size the dense products use BLAS (np.dot) instead of the inlined loops
_BLAS_NV = 48


# --------------------------------------------------------------------------- 6-vector algebra
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _ad(x, y, out):
    """out = ad_x y (the spatial cross product, angular first)."""
    out[0] = x[1] * y[2] - x[2] * y[1]
    out[1] = x[2] * y[0] - x[0] * y[2]
    out[2] = x[0] * y[1] - x[1] * y[0]
    out[3] = x[1] * y[5] - x[2] * y[4] + x[4] * y[2] - x[5] * y[1]
    out[4] = x[2] * y[3] - x[0] * y[5] + x[5] * y[0] - x[3] * y[2]
    out[5] = x[0] * y[4] - x[1] * y[3] + x[3] * y[1] - x[4] * y[0]


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _ad_matrix(x, out):
    """out (6, 6) = ad_x = [[hat(w), 0], [hat(v), hat(w)]]."""
    for a in range(6):
        for b in range(6):
            out[a, b] = 0.0
    for blk in range(2):
        r = 3 * blk
        out[r + 0, r + 1] = -x[2]
        out[r + 0, r + 2] = x[1]
        out[r + 1, r + 0] = x[2]
        out[r + 1, r + 2] = -x[0]
        out[r + 2, r + 0] = -x[1]
        out[r + 2, r + 1] = x[0]
    out[3, 1] = -x[5]
    out[3, 2] = x[4]
    out[4, 0] = x[5]
    out[4, 2] = -x[3]
    out[5, 0] = -x[4]
    out[5, 1] = x[3]


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _bar_matrix(h, out):
    """out (6, 6) = hbar = [[hat(n), hat(f)], [hat(f), 0]] for h = (n, f): ad*_x h = -hbar x."""
    for a in range(6):
        for b in range(6):
            out[a, b] = 0.0
    for blk in range(3):
        r, c, o = (0, 0, 0) if blk == 0 else ((0, 3, 3) if blk == 1 else (3, 0, 3))
        out[r + 0, c + 1] = -h[o + 2]
        out[r + 0, c + 2] = h[o + 1]
        out[r + 1, c + 0] = h[o + 2]
        out[r + 1, c + 2] = -h[o + 0]
        out[r + 2, c + 0] = -h[o + 1]
        out[r + 2, c + 1] = h[o + 0]


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _adstar_sub(x, h, out):
    """out -= hbar x, i.e. out += ad*_x h = (x_w x n + x_v x f, x_w x f)."""
    out[0] += x[1] * h[2] - x[2] * h[1] + x[4] * h[5] - x[5] * h[4]
    out[1] += x[2] * h[0] - x[0] * h[2] + x[5] * h[3] - x[3] * h[5]
    out[2] += x[0] * h[1] - x[1] * h[0] + x[3] * h[4] - x[4] * h[3]
    out[3] += x[1] * h[5] - x[2] * h[4]
    out[4] += x[2] * h[3] - x[0] * h[5]
    out[5] += x[0] * h[4] - x[1] * h[3]


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _matvec_add(Mx, i, x, s, out):
    """out += s * Mx[i] @ x for a stack of 6x6 matrices."""
    for a in range(6):
        t = 0.0
        for b in range(6):
            t += Mx[i, a, b] * x[b]
        out[a] += s * t


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _row_times(t, Mx, out):
    """out (6,) = t^T Mx for one 6x6 matrix ``Mx``."""
    for b in range(6):
        s = 0.0
        for a in range(6):
            s += t[a] * Mx[a, b]
        out[b] = s


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _adjoint(C, Ad):
    """Ad (6, 6) = Ad_C = [[R, 0], [hat(p) R, R]]."""
    for a in range(3):
        for b in range(3):
            Ad[a, b] = C[a, b]
            Ad[3 + a, 3 + b] = C[a, b]
            Ad[a, 3 + b] = 0.0
    p0, p1, p2 = C[0, 3], C[1, 3], C[2, 3]
    for b in range(3):
        r0, r1, r2 = C[0, b], C[1, b], C[2, b]
        Ad[3, b] = p1 * r2 - p2 * r1
        Ad[4, b] = p2 * r0 - p0 * r2
        Ad[5, b] = p0 * r1 - p1 * r0


# --------------------------------------------------------------------------- the kernel
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def derivatives(bodyi, bodyf, C, Vj, Qj, Wj, Tj, g, wext, text, mode, body,
                out_val, out_D, out_M, out_Minv, out_acc, out_A, out_B):
    """Derivatives of the dynamics at one state (see the module docstring).

    Inputs (rows as the public API; the caller checked the shapes): ``C`` (4, 4) base pose;
    ``Vj`` rows ``V`` (base twist, spatial or body if ``body``) and [MODE_ID] ``Vdot``;
    ``Qj`` rows ``q``, ``qd`` and [MODE_ID] ``qdd``; ``Wj`` row 0 the base wrench and ``Tj``
    row 0 the joint torques [MODE_FD/LINEARIZE; wrench spatial or body];
    ``g`` (3,) gravity (world); ``wext`` (N, 6) applied spatial wrenches (world), ``text`` (n,).

    Outputs: ``out_val`` (6+n,) the extended ID ``(W, tau)`` at the (given or computed)
    acceleration; ``out_D`` (6+n, 2(6+n)) its derivative ``[d/d delta, d/dq, d/dV, d/dqd]``
    (MODE_ID) or that of the forward dynamics ``-M^-1 D ID`` (other modes); ``out_M`` (6+n, 6+n);
    ``out_Minv`` (6+n, 6+n) [FD/LINEARIZE]; ``out_acc`` (6+n,) [FD/LINEARIZE];
    ``out_A`` (2(6+n), 2(6+n)), ``out_B`` (2(6+n), 6+n) [LINEARIZE]. Returns an error code.
    """
    N = bodyi.shape[0]
    n = N - 1
    nv = 6 + n
    V0 = np.empty(6)
    q = np.empty(n)
    qd = np.empty(n)
    acc = np.zeros(nv)
    u = np.zeros(nv)
    for a in range(6):
        V0[a] = Vj[0, a]
        if mode == MODE_ID:
            acc[a] = Vj[1, a]
        elif mode != MODE_MINV:
            u[a] = Wj[0, a]
    for j in range(n):
        q[j] = Qj[0, j]
        qd[j] = Qj[1, j]
        if mode == MODE_ID:
            acc[6 + j] = Qj[2, j]
        elif mode != MODE_MINV:
            u[6 + j] = Tj[0, j]
    code = _check_state0(C, V0, q, qd, g)
    if code != OK:
        return code
    if mode == MODE_ID:
        for a in range(6):
            if not np.isfinite(acc[a]):
                return ERR_TWIST_NONFINITE
        for j in range(n):
            if not np.isfinite(acc[6 + j]):
                return ERR_Q_NONFINITE
    else:
        for a in range(6):
            if not np.isfinite(u[a]):
                return ERR_WRENCH_NONFINITE
        for j in range(n):
            if not np.isfinite(u[6 + j]):
                return ERR_TAU_NONFINITE
    for i in range(wext.shape[0]):
        for a in range(6):
            if not np.isfinite(wext[i, a]):
                return ERR_EXTW_NONFINITE
    for j in range(text.shape[0]):
        if not np.isfinite(text[j]):
            return ERR_EXTT_NONFINITE

    # ---- frame of the recursion: world (spatial) or the base frame (body representation)
    Ad = np.empty((6, 6))
    _adjoint(C, Ad)
    Ck = np.empty((4, 4))
    gk = np.empty(3)
    Fx = np.zeros((N, 6))   # applied wrenches in the recursion frame, then subtree sums
    if body:
        for a in range(4):
            for b in range(4):
                Ck[a, b] = 1.0 if a == b else 0.0
        for a in range(3):
            gk[a] = C[0, a] * g[0] + C[1, a] * g[1] + C[2, a] * g[2]
        for i in range(wext.shape[0]):   # Ad_C^T w = (R^T (n - p x f), R^T f)
            for b in range(6):
                s = 0.0
                for a in range(6):
                    s += Ad[a, b] * wext[i, a]
                Fx[i, b] = s
    else:
        for a in range(4):
            for b in range(4):
                Ck[a, b] = C[a, b]
        for a in range(3):
            gk[a] = g[a]
        for i in range(wext.shape[0]):
            for a in range(6):
                Fx[i, a] = wext[i, a]

    # ---- kinematics and body inertias (Alg. 1, order 0)
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S3 = np.zeros((N, 1, 6))
    for a in range(3):
        for b in range(3):
            R[0, a, b] = Ck[a, b]
        P[0, a] = Ck[a, 3]
    V = np.empty((N, 6))
    psi = np.zeros((N, 6))
    for a in range(6):
        V[0, a] = V0[a]
    for i in range(1, N):
        p = bodyi[i, 0]
        _body_pose(bodyf, bodyi[i, 1], i, p, q[i - 1], R, P, S3)
        for a in range(6):
            V[i, a] = V[p, a] + S3[i, 0, a] * qd[i - 1]
    S = np.zeros((N, 6))
    for i in range(1, N):
        for a in range(6):
            S[i, a] = S3[i, 0, a]
        _ad(V[bodyi[i, 0]], S[i], psi[i])
    cm = np.empty((N, 1, 3))
    Ir = np.empty((N, 1, 3, 3))
    Ib = np.empty((N, 6, 6))
    for i in range(N):
        _body_inertia0(bodyf, i, R, P, cm, Ir)
        _spatial_inertia(bodyf[i, 6], cm, Ir, i, Ib)
    # subtree ranges (depth-first pre-order: the subtree of j is j..last[j])
    last = np.arange(N)
    for i in range(N - 1, 0, -1):
        p = bodyi[i, 0]
        if last[i] > last[p]:
            last[p] = last[i]

    A = np.empty((N, 6))
    tmp = np.empty(6)
    tmp2 = np.empty(6)

    # ---- inverse mass matrix and forward dynamics (articulated bodies, all unit inputs at once)
    if mode != MODE_ID:
        IA = Ib.copy()
        U = np.zeros((N, 6))
        Dinv = np.zeros(N)
        for i in range(N - 1, 0, -1):
            p = bodyi[i, 0]
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += IA[i, a, b] * S[i, b]
                U[i, a] = s
            d = _dot6(S[i], U[i])
            if not d > 1e-300:
                return ERR_SINGULAR_JOINT
            Dinv[i] = 1.0 / d
            for a in range(6):
                for b in range(6):
                    IA[p, a, b] += IA[i, a, b] - U[i, a] * U[i, b] * Dinv[i]
        # the forward dynamics kernel's relative tests (kernels.hybrid): an articulated joint inertia
        # that is rounding noise next to the largest of its joint type, or a base articulated inertia
        # with a pivot that is rounding noise, is singular (PyBullet's cart-pole: the massless base's
        # x translation against its prismatic joint); dividing by it returns garbage, not an answer
        dmax_r = 0.0
        dmax_p = 0.0
        for i in range(1, N):
            if bodyi[i, 1] == 1:
                dmax_p = max(dmax_p, 1.0 / Dinv[i])
            else:
                dmax_r = max(dmax_r, 1.0 / Dinv[i])
        for i in range(1, N):
            if 1.0 / Dinv[i] <= SINGULAR_RTOL * (dmax_p if bodyi[i, 1] == 1 else dmax_r):
                return ERR_SINGULAR_JOINT
        if _base_inertia_singular(IA[0], Ck):
            return ERR_SINGULAR_BASE
        Pm = np.zeros((N, 6, nv))    # articulated bias wrench of every unit input
        urow = np.zeros((N, nv))
        for i in range(N - 1, 0, -1):
            p = bodyi[i, 0]
            for c in range(nv):
                s = 0.0
                for a in range(6):
                    s += S[i, a] * Pm[i, a, c]
                urow[i, c] = -s
            urow[i, 5 + i] += 1.0
            for a in range(6):
                ua = U[i, a] * Dinv[i]
                for c in range(nv):
                    Pm[p, a, c] += Pm[i, a, c] + ua * urow[i, c]
        Lc = np.empty((6, 6))
        if not _chol6(IA[0], Lc):
            return ERR_SINGULAR_BASE
        Acc = np.empty((N, 6, nv))   # body accelerations of every unit input
        rhs = np.empty(6)
        col = np.empty(6)
        for c in range(nv):
            for a in range(6):
                rhs[a] = (1.0 if a == c else 0.0) - Pm[0, a, c]
            _chol6_solve(Lc, rhs, col, tmp)
            for a in range(6):
                Acc[0, a, c] = col[a]
                out_Minv[a, c] = col[a]
        for i in range(1, N):
            p = bodyi[i, 0]
            for c in range(nv):
                s = urow[i, c]
                for a in range(6):
                    s -= U[i, a] * Acc[p, a, c]
                s *= Dinv[i]
                out_Minv[5 + i, c] = s
                for a in range(6):
                    Acc[i, a, c] = Acc[p, a, c] + S[i, a] * s
        if mode == MODE_MINV:
            return OK
        # bias h = ID(x, 0): RNEA with zero accelerations
        hb = np.empty(nv)
        Fb = np.zeros((N, 6))
        for a in range(6):
            A[0, a] = 0.0
        for a in range(3):
            A[0, 3 + a] = -gk[a]
        for i in range(N):
            if i > 0:
                p = bodyi[i, 0]
                for a in range(6):
                    A[i, a] = A[p, a] + psi[i, a] * qd[i - 1]
            for a in range(6):
                tmp2[a] = 0.0
            _matvec_add(Ib, i, V[i], 1.0, tmp2)          # h_i = I V
            for a in range(6):
                Fb[i, a] = -Fx[i, a]
            _matvec_add(Ib, i, A[i], 1.0, Fb[i])
            _adstar_sub(V[i], tmp2, Fb[i])                # + ad*_V h
        for i in range(N - 1, 0, -1):
            p = bodyi[i, 0]
            for a in range(6):
                Fb[p, a] += Fb[i, a]
        for a in range(6):
            hb[a] = Fb[0, a]
        for i in range(1, N):
            hb[5 + i] = _dot6(S[i], Fb[i]) - (text[i - 1] if text.shape[0] > 0 else 0.0)
        for r in range(nv):
            s = 0.0
            for c in range(nv):
                s += out_Minv[r, c] * (u[c] - hb[c])
            out_acc[r] = s
    else:
        for r in range(nv):
            out_acc[r] = acc[r]

    # ---- accelerations, wrenches, composites (RNEA at nudot = out_acc)
    for a in range(6):
        A[0, a] = out_acc[a]
    for a in range(3):
        A[0, 3 + a] -= gk[a]
    Fin = np.zeros((N, 6))       # inertial wrench f_i, then subtree sums
    IC = Ib.copy()               # composite inertia
    BC = np.empty((N, 6, 6))     # ad*_V I - hbar - I ad_V, then subtree sums
    adV = np.empty((6, 6))
    hbar = np.empty((6, 6))
    for i in range(N):
        if i > 0:
            p = bodyi[i, 0]
            for a in range(6):
                A[i, a] = A[p, a] + psi[i, a] * qd[i - 1] + S[i, a] * out_acc[5 + i]
        for a in range(6):
            tmp2[a] = 0.0
        _matvec_add(Ib, i, V[i], 1.0, tmp2)
        _matvec_add(Ib, i, A[i], 1.0, Fin[i])
        _adstar_sub(V[i], tmp2, Fin[i])
        _ad_matrix(V[i], adV)
        _bar_matrix(tmp2, hbar)
        for a in range(6):
            for b in range(6):
                s = -hbar[a, b]
                for k in range(6):
                    s -= adV[k, a] * Ib[i, k, b] + Ib[i, a, k] * adV[k, b]
                BC[i, a, b] = s
    for i in range(N - 1, 0, -1):
        p = bodyi[i, 0]
        for a in range(6):
            Fin[p, a] += Fin[i, a]
            Fx[p, a] += Fx[i, a]
            for b in range(6):
                IC[p, a, b] += IC[i, a, b]
                BC[p, a, b] += BC[i, a, b]
    for a in range(6):
        out_val[a] = Fin[0, a] - Fx[0, a]
    T1 = np.zeros((N, 6))   # S_k^T Ibar_k
    T2 = np.zeros((N, 6))   # S_k^T Bc_k
    T3 = np.zeros((N, 6))   # -S_k^T Fextbar_k
    for k in range(1, N):
        for a in range(6):
            tmp[a] = Fin[k, a] - Fx[k, a]
        out_val[5 + k] = _dot6(S[k], tmp) - (text[k - 1] if text.shape[0] > 0 else 0.0)
        _row_times(S[k], IC[k], T1[k])
        _row_times(S[k], BC[k], T2[k])
        _bar_matrix(Fx[k], hbar)
        _row_times(S[k], hbar, T3[k])
        for a in range(6):
            T3[k, a] = -T3[k, a]

    # ---- mass matrix (composite rigid bodies)
    for a in range(nv):
        for b in range(nv):
            out_M[a, b] = 0.0
    for a in range(6):
        for b in range(6):
            out_M[a, b] = IC[0, a, b]
    for j in range(1, N):
        for a in range(6):
            tmp[a] = 0.0
        _matvec_add(IC, j, S[j], 1.0, tmp)
        for a in range(6):
            out_M[a, 5 + j] = tmp[a]
            out_M[5 + j, a] = tmp[a]
        k = j
        while k > 0:
            s = _dot6(S[k], tmp)
            out_M[5 + k, 5 + j] = s
            out_M[5 + j, 5 + k] = s
            k = bodyi[k, 0]

    # ---- derivative of the extended ID: D = [d/dsigma | d/dq | d/dV0 | d/dqd]
    D = out_D if mode == MODE_ID else np.empty((nv, 2 * nv))
    oq, oV, oqd = 6, 6 + n, 12 + n
    adV0 = np.empty((6, 6))
    adA0 = np.empty((6, 6))
    _ad_matrix(V[0], adV0)
    _ad_matrix(A[0], adA0)
    Xs = np.empty((6, 6))   # ad_{A0} + ad_{V0}^2
    for a in range(6):
        for b in range(6):
            s = adA0[a, b]
            for k in range(6):
                s += adV0[a, k] * adV0[k, b]
            Xs[a, b] = s
    _bar_matrix(Fin[0], hbar)
    for a in range(6):
        for b in range(6):
            sx = -hbar[a, b]
            sv = BC[0, a, b]
            for k in range(6):
                sx += IC[0, a, k] * Xs[k, b] + BC[0, a, k] * adV0[k, b]
                sv += IC[0, a, k] * adV0[k, b]
            D[a, b] = sx
            D[a, oV + b] = sv
    for k in range(1, N):
        for b in range(6):
            sx = T3[k, b]
            sv = T2[k, b]
            for a in range(6):
                sx += T1[k, a] * Xs[a, b] + T2[k, a] * adV0[a, b]
                sv += T1[k, a] * adV0[a, b]
            D[5 + k, b] = sx
            D[5 + k, oV + b] = sv
    cj = np.empty(6)
    Gq = np.empty(6)
    Gd = np.empty(6)
    for j in range(1, N):
        p = bodyi[j, 0]
        _ad(A[p], S[j], cj)
        _ad(V[p], psi[j], tmp)
        for a in range(6):
            cj[a] += tmp[a]
            Gq[a] = 0.0
            Gd[a] = 0.0
        _adstar_sub(S[j], Fin[j], Gq)
        _matvec_add(IC, j, cj, 1.0, Gq)
        _matvec_add(BC, j, psi[j], 1.0, Gq)
        _matvec_add(IC, j, psi[j], 2.0, Gd)
        _matvec_add(BC, j, S[j], 1.0, Gd)
        cq, cd = oq + j - 1, oqd + j - 1
        for a in range(6):
            D[a, cq] = Gq[a]
            D[a, cd] = Gd[a]
        # rows of the joints between the base and j (exclusive): S_k^T G
        k = p
        while k > 0:
            D[5 + k, cq] = _dot6(S[k], Gq)
            D[5 + k, cd] = _dot6(S[k], Gd)
            k = bodyi[k, 0]
        # rows of the other joints: zero unless in the subtree of j
        for k in range(1, N):
            if k < j or k > last[j]:
                if not (k < j and (last[k] >= j)):   # not an ancestor either
                    D[5 + k, cq] = 0.0
                    D[5 + k, cd] = 0.0
                continue
            D[5 + k, cq] = _dot6(T1[k], cj) + _dot6(T2[k], psi[j]) + _dot6(T3[k], S[j])
            D[5 + k, cd] = 2.0 * _dot6(T1[k], psi[j]) + _dot6(T2[k], S[j])

    # ---- pose column block: left-trivialized delta
    Xd = np.empty((nv, 6))
    if body:
        # d/d delta = d/d sigma - d/dV ad_{V_b} - M[:, :6] ad_{Vdot_b} + [Wbar_b; 0]
        for a in range(6):
            tmp[a] = out_acc[a]
        _ad_matrix(tmp, adA0)
        _bar_matrix(out_val, hbar)
        for r in range(nv):
            for b in range(6):
                s = D[r, b]
                for k in range(6):
                    s -= D[r, oV + k] * adV0[k, b] + out_M[r, k] * adA0[k, b]
                if r < 6:
                    s += hbar[r, b]
                Xd[r, b] = s
    else:
        for r in range(nv):
            for b in range(6):
                s = 0.0
                for k in range(6):
                    s += D[r, k] * Ad[k, b]
                Xd[r, b] = s
    for r in range(nv):
        for b in range(6):
            D[r, b] = Xd[r, b]

    for r in range(nv):
        if not np.isfinite(out_val[r]):
            return ERR_RESULT_NONFINITE
    if mode == MODE_ID:
        return OK

    # ---- forward dynamics derivatives: -M^-1 D ID (Prop. 3), a dense (nv, nv) x (nv, 2 nv) product
    if nv >= _BLAS_NV:
        out_D[:, :] = np.dot(out_Minv, D)
        for r in range(nv):
            for c in range(2 * nv):
                out_D[r, c] = -out_D[r, c]
    else:
        for r in range(nv):
            for c in range(2 * nv):
                out_D[r, c] = 0.0
            for k in range(nv):
                a = out_Minv[r, k]
                for c in range(2 * nv):     # contiguous inner loop (vectorises)
                    out_D[r, c] -= a * D[k, c]
    for r in range(nv):
        for c in range(2 * nv):
            if not np.isfinite(out_D[r, c]):
                return ERR_RESULT_NONFINITE
    if mode != MODE_LINEARIZE:
        return OK

    # ---- left-trivialized linearization (Props. 1-2)
    m2 = 2 * nv
    for r in range(m2):
        for c in range(m2):
            out_A[r, c] = 0.0
        for c in range(nv):
            out_B[r, c] = 0.0
    if body:   # d delta/dt = -ad_{V_b} delta + dV_b
        for a in range(6):
            for b in range(6):
                out_A[a, b] = -adV0[a, b]
            out_A[a, nv + a] = 1.0
    else:      # d delta/dt = Ad_C^-1 dV,  Ad_C^-1 = [[R^T, 0], [-R^T hat(p), R^T]]
        for a in range(3):
            for b in range(3):
                out_A[a, nv + b] = C[b, a]
                out_A[3 + a, nv + 3 + b] = C[b, a]
                out_A[3 + a, nv + b] = Ad[3 + b, a]   # -R^T hat(p) = (hat(p) R)^T
    for j in range(n):
        out_A[6 + j, nv + 6 + j] = 1.0
    for r in range(nv):
        for c in range(m2):
            out_A[nv + r, c] = out_D[r, c]
        for c in range(nv):
            out_B[nv + r, c] = out_Minv[r, c]
    return OK
