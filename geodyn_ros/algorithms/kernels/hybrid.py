"""Forward and hybrid dynamics kernels (paper Alg. 3-4, Lemma 2): articulated inertias, the 6x6
base factorisation, the general, hot-path and lean entries. Internal; conventions in :mod:`.common`."""
from __future__ import annotations

import numpy as np
from numba import carray, njit, types

from .common import (_all_finite, _carve, _check_common, _check_pose, ERR_Q_NONFINITE, ERR_RESULT_NONFINITE,
                     ERR_SHAPE, ERR_SINGULAR_BASE, ERR_SINGULAR_JOINT, ERR_TAU_NONFINITE,
                     ERR_TWIST_NONFINITE, ERR_WRENCH_NONFINITE, _as_f64, _F2, _f32_sigs, _factorials, _FAST, _hot_sigs, _i64_ptr,
                     _model_header, _model_views, _NO_TEXT_K, _NO_WEXT_K, OK, SINGULAR_RTOL, work_offset)
from .kinematics import (_angmom_coeff, _body_inertia0, _body_pose, _com_coeff, _com_complete, _fm_coeff,
                         _inertia_coeff, _screw_coeff, _twist_coeff, _wrench_coeff)


# --------------------------------------------------------------------------- hybrid / forward dynamics
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _spatial_inertia(m, c, I, i, M):
    """M[i] = 6x6 spatial inertia about the world origin, angular first, from (m, c[i, 0], I[i, 0]):
    ``[[I + m hat(c) hat(c)^T, m hat(c)], [m hat(c)^T, m I3]]``."""
    c0, c1, c2 = c[i, 0, 0], c[i, 0, 1], c[i, 0, 2]
    # hat(c) hat(c)^T = |c|^2 I3 - c c^T
    cc = c0 * c0 + c1 * c1 + c2 * c2
    for a in range(3):
        for b in range(3):
            M[i, a, b] = I[i, 0, a, b] + m * ((cc if a == b else 0.0) - c[i, 0, a] * c[i, 0, b])
            M[i, 3 + a, 3 + b] = m if a == b else 0.0
    M[i, 0, 3] = 0.0
    M[i, 0, 4] = -m * c2
    M[i, 0, 5] = m * c1
    M[i, 1, 3] = m * c2
    M[i, 1, 4] = 0.0
    M[i, 1, 5] = -m * c0
    M[i, 2, 3] = -m * c1
    M[i, 2, 4] = m * c0
    M[i, 2, 5] = 0.0
    for a in range(3):
        for b in range(3):
            M[i, 3 + b, a] = M[i, a, 3 + b]


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _chol6(A, Lc):
    """Cholesky factor of a 6x6 SPD matrix; False if not positive definite."""
    for i in range(6):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= Lc[i, k] * Lc[j, k]
            if i == j:
                if s <= 0.0:
                    return False
                Lc[i, i] = np.sqrt(s)
            else:
                Lc[i, j] = s / Lc[j, j]
        for j in range(i + 1, 6):
            Lc[i, j] = 0.0
    return True


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _base_inertia_singular(A, C):
    """True if the base's articulated inertia ``A`` (spatial, about the world origin) is singular
    to rounding. Judged about the base origin ``p`` (so that the test does not depend on the
    distance from the world origin): ``A_p = T' A T'^T`` with ``T' = [[I, -hat(p)], [0, I]]``;
    singular when a Cholesky pivot of ``A_p`` is below ``SINGULAR_RTOL`` of its largest diagonal
    entry (a massless base carrying one revolute joint: rank 5 up to rounding)."""
    px, py, pz = C[0, 3], C[1, 3], C[2, 3]
    T = np.eye(6)
    T[0, 4], T[0, 5] = pz, -py      # -hat(p)
    T[1, 3], T[1, 5] = -pz, px
    T[2, 3], T[2, 4] = py, -px
    Ap = T @ A @ T.T
    dmax = 0.0
    for i in range(6):
        dmax = max(dmax, Ap[i, i])
    L = np.zeros((6, 6))
    if not _chol6(Ap, L):
        return True
    for i in range(6):
        if L[i, i] * L[i, i] <= SINGULAR_RTOL * dmax:
            return True
    return False


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _chol6_solve(Lc, b, x, y):
    """Solve (Lc Lc^T) x = b; ``y`` (6,) scratch."""
    for i in range(6):
        s = b[i]
        for k in range(i):
            s -= Lc[i, k] * y[k]
        y[i] = s / Lc[i, i]
    for i in range(5, -1, -1):
        s = y[i]
        for k in range(i + 1, 6):
            s -= Lc[k, i] * x[k]
        x[i] = s / Lc[i, i]


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _hybrid_core(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, wext, text,
                 presc, base_given_wrench, out_V, out_q, out_w, out_tau, ws, o):
    """H-GHYB-FBS (Algorithm 4; with nothing prescribed it is H-GABI-FBS, Algorithm 3).

    Work arrays are views of the buffer ``ws`` from offset ``o`` (:func:`_fd_views`).
    presc (n,) int64 (nonzero = prescribed): joints whose motion q^(0..order+2) is given (their torque is an output);
    the other joints take q^(0..1) and tau^(0..order) and return q^(2..order+2).
    base_given_wrench: True -> wd rows 0..order are the base wrench and the base motion
    V^(1..order+1) is an output; False -> Vd rows 0..order+1 are given, the wrench is an output.
    Orders are solved one after the other; the articulated inertias and the base Cholesky
    factor are computed once (Lemma 2) and each order reuses them with new bias terms.
    Writes out_V (order+2, 6), out_q (order+3, n), out_w (order+1, 6), out_tau (order+1, n).
    """
    N = bodyi.shape[0]
    n = N - 1
    K = order + 2
    code = _check_pose(C)
    if code != OK:
        return code
    nV = 1 if base_given_wrench else K
    if not _all_finite(Vd, nV):
        return ERR_TWIST_NONFINITE
    for j in range(n):
        nq = K + 1 if presc[j] else 2
        for k in range(nq):
            if not np.isfinite(qd[k, j]):
                return ERR_Q_NONFINITE
        if not presc[j]:
            for k in range(order + 1):
                if not np.isfinite(taud[k, j]):
                    return ERR_TAU_NONFINITE
    if base_given_wrench and not _all_finite(wd, order + 1):
        return ERR_WRENCH_NONFINITE
    code = _check_common(g, wext, text, order)
    if code != OK:
        return code
    has_wext = wext.shape[0] > 0
    has_text = text.shape[0] > 0
    (fact, qt, R, P, S, V, c, I, L, fm, mass, MA, U, D, Wsub, pa_, cb, up, A, tau_t, wb_t, Lc, tmp,
     ytmp) = _fd_views(ws, o, N, n, order)

    # Taylor coefficients; unknown entries are filled order by order
    qt[:, :] = 0.0
    V[:, :, :] = 0.0
    MA[:, :, :] = 0.0
    tau_t[:, :] = 0.0
    wb_t[:, :] = 0.0
    for j in range(n):
        nq = K + 1 if presc[j] else 2
        for k in range(nq):
            qt[k, j] = qd[k, j] / fact[k]
    for a in range(6):
        V[0, 0, a] = Vd[0, a]
    if not base_given_wrench:
        for k in range(1, K):
            for a in range(6):
                V[0, k, a] = Vd[k, a] / fact[k]
    # order-0 kinematics: poses, S_0, V_0
    for a in range(3):
        for b in range(3):
            R[0, a, b] = C[a, b]
        P[0, a] = C[a, 3]
    for i in range(1, N):
        pa = bodyi[i, 0]
        _body_pose(bodyf, bodyi[i, 1], i, pa, qt[0, i - 1], R, P, S)
        _twist_coeff(V, S, qt, i, pa, 0)

    for i in range(N):
        mass[i] = bodyf[i, 6]
        _body_inertia0(bodyf, i, R, P, c, I)
        _com_coeff(c, V, i, 1, True)
        _angmom_coeff(L, I, V, i, 0)
        _spatial_inertia(mass[i], c, I, i, MA)
    if base_given_wrench:
        for k in range(order + 1):
            for a in range(6):
                wb_t[k, a] = wd[k, a] / fact[k]
    for j in range(n):
        if not presc[j]:
            for k in range(order + 1):
                tau_t[k, j] = taud[k, j] / fact[k]

    # articulated inertias (Lemma 2: computed once, valid at every order)
    for i in range(N - 1, 0, -1):
        p = bodyi[i, 0]
        Si = S[i, 0]
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += MA[i, a, b] * Si[b]
            U[i, a] = s
        d = 0.0
        for a in range(6):
            d += Si[a] * U[i, a]
        D[i] = d
        if presc[i - 1]:
            for a in range(6):
                for b in range(6):
                    MA[p, a, b] += MA[i, a, b]
        else:
            if not (d > 1e-300):
                return ERR_SINGULAR_JOINT
            for a in range(6):
                for b in range(6):
                    MA[p, a, b] += MA[i, a, b] - U[i, a] * U[i, b] / d
    # relative test: an articulated joint inertia D_i (a frame-invariant scalar) that is rounding
    # noise next to the largest one of the same joint type (kg m^2 or kg) is singular (icub's neck
    # at home: 3e-17 vs O(1)); dividing by it would return garbage instead of an error
    dmax_r = 0.0
    dmax_p = 0.0
    for i in range(1, N):
        if not presc[i - 1]:
            if bodyi[i, 1] == 1:
                dmax_p = max(dmax_p, D[i])
            else:
                dmax_r = max(dmax_r, D[i])
    for i in range(1, N):
        if not presc[i - 1]:
            ref = dmax_p if bodyi[i, 1] == 1 else dmax_r
            if D[i] <= SINGULAR_RTOL * ref:
                return ERR_SINGULAR_JOINT
    if base_given_wrench:
        if not _chol6(MA[0], Lc):
            return ERR_SINGULAR_BASE
        if _base_inertia_singular(MA[0], C):
            return ERR_SINGULAR_BASE

    for k in range(order + 1):
        kf = k + 1.0
        uf = (k + 1.0) * (k + 2.0)
        # ---- known parts of order k: screws S_(k+1), bias twists, bias wrenches (V_(k+1) = 0)
        for i in range(N):
            if i > 0:
                p = bodyi[i, 0]
                _screw_coeff(S, V, i, p, k + 1)
                for a in range(6):
                    s = 0.0
                    for b in range(1, k + 2):
                        s += S[i, b, a] * (k + 2 - b) * qt[k + 2 - b, i - 1]
                    cb[i, a] = kf * s
            # partial c_(k+2), fm_k and wrench: the unknown V_(k+1) left out (Lemma 2)
            _com_coeff(c, V, i, k + 2, False)
            _fm_coeff(fm, c, mass[i], g, i, k)
            n0, n1, n2, f0, f1, f2 = _wrench_coeff(c, I, L, V, fm, i, k, 1)
            pa_[i, 0] = n0
            pa_[i, 1] = n1
            pa_[i, 2] = n2
            pa_[i, 3] = f0
            pa_[i, 4] = f1
            pa_[i, 5] = f2
            if has_wext:
                for a in range(6):
                    pa_[i, a] -= wext[i, k, a] / fact[k]
        # ---- backward sweep (Alg. 3/4 Backward) with the order-k bias
        for i in range(N - 1, 0, -1):
            p = bodyi[i, 0]
            j = i - 1
            # known part of the joint projection: sum_{a=1..k} S_a . Wsub_(k-a)
            tt = 0.0
            for a in range(1, k + 1):
                for b in range(6):
                    tt += S[i, a, b] * Wsub[i, k - a, b]
            if presc[j]:
                u = uf * qt[k + 2, j]
                for a in range(6):
                    tmp[a] = S[i, 0, a] * u + cb[i, a]
                for a in range(6):
                    s = pa_[i, a]
                    for b in range(6):
                        s += MA[i, a, b] * tmp[b]
                    pa_[p, a] += s
                up[i] = tt            # stored for the torque output
            else:
                Q = tau_t[k, j] - tt
                if has_text:
                    Q += text[k, j] / fact[k]
                s = Q
                for a in range(6):
                    s -= S[i, 0, a] * pa_[i, a]
                up[i] = s
                ucb = 0.0
                for a in range(6):
                    ucb += U[i, a] * cb[i, a]
                f = (s - ucb) / D[i]
                for a in range(6):
                    s2 = pa_[i, a] + U[i, a] * f
                    for b in range(6):
                        s2 += MA[i, a, b] * cb[i, b]
                    pa_[p, a] += s2
        # ---- base
        if base_given_wrench:
            for a in range(6):
                tmp[a] = wb_t[k, a] - pa_[0, a]
            _chol6_solve(Lc, tmp, A[0], ytmp)
            for a in range(6):
                V[0, k + 1, a] = A[0, a] / kf
        else:
            for a in range(6):
                A[0, a] = kf * V[0, k + 1, a]
        for a in range(6):
            s = pa_[0, a]
            for b in range(6):
                s += MA[0, a, b] * A[0, b]
            Wsub[0, k, a] = s
        if not base_given_wrench:
            for a in range(6):
                wb_t[k, a] = Wsub[0, k, a]
        # ---- forward sweep (Alg. 3/4 Forward)
        for i in range(1, N):
            p = bodyi[i, 0]
            j = i - 1
            if presc[j]:
                u = uf * qt[k + 2, j]
            else:
                s = up[i]
                for a in range(6):
                    s -= U[i, a] * (A[p, a] + cb[i, a])
                u = s / D[i]
                qt[k + 2, j] = u / uf
            for a in range(6):
                A[i, a] = A[p, a] + S[i, 0, a] * u + cb[i, a]
                V[i, k + 1, a] = A[i, a] / kf
            for a in range(6):
                s = pa_[i, a]
                for b in range(6):
                    s += MA[i, a, b] * A[i, b]
                Wsub[i, k, a] = s
            if presc[j]:
                s = up[i]
                for a in range(6):
                    s += S[i, 0, a] * Wsub[i, k, a]
                if has_text:
                    s -= text[k, j] / fact[k]
                tau_t[k, j] = s
        # ---- complete the order-k series for the next order: c_(k+2), fm_k, I_(k+1), L_(k+1)
        for i in range(N):
            _com_complete(c, V, i, k + 2)
            _fm_coeff(fm, c, mass[i], g, i, k)
            if k + 1 < K:
                _inertia_coeff(I, V, i, k + 1)
                _angmom_coeff(L, I, V, i, k + 1)

    # outputs (derivatives = k! x Taylor coefficients)
    for k in range(K):
        for a in range(6):
            out_V[k, a] = V[0, k, a] * fact[k]
    for k in range(K + 1):
        for j in range(n):
            out_q[k, j] = qt[k, j] * fact[k]
    for k in range(order + 1):
        for a in range(6):
            out_w[k, a] = wb_t[k, a] * fact[k]
        for j in range(n):
            out_tau[k, j] = tau_t[k, j] * fact[k]
    for k in range(K):
        for a in range(6):
            if not np.isfinite(out_V[k, a]):
                return ERR_RESULT_NONFINITE
    for k in range(K + 1):
        for j in range(n):
            if not np.isfinite(out_q[k, j]):
                return ERR_RESULT_NONFINITE
    return OK


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _fd_work_size(N, n, order):
    K = order + 2
    r1 = order + 1
    return ((K + 2) + (K + 1) * n + N * 12 + 2 * N * K * 6 + N * (K + 1) * 3 + N * K * 15 + N
            + N * 36 + N * 6 + N + N * r1 * 6 + 3 * N * 6 + N + r1 * n + r1 * 6 + 36 + 12)


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _fd_views(ws, o, N, n, order):
    """Work arrays of :func:`_hybrid_core` carved from ``ws`` at offset ``o`` (fact first)."""
    K = order + 2
    r1 = order + 1
    fact = _carve(ws, o, K + 2)
    o += K + 2
    qt = _carve(ws, o, (K + 1, n))
    o += (K + 1) * n
    R = _carve(ws, o, (N, 3, 3))
    o += N * 9
    P = _carve(ws, o, (N, 3))
    o += N * 3
    S = _carve(ws, o, (N, K, 6))
    o += N * K * 6
    V = _carve(ws, o, (N, K, 6))
    o += N * K * 6
    c = _carve(ws, o, (N, K + 1, 3))
    o += N * (K + 1) * 3
    I = _carve(ws, o, (N, K, 3, 3))
    o += N * K * 9
    L = _carve(ws, o, (N, K, 3))
    o += N * K * 3
    fm = _carve(ws, o, (N, K, 3))
    o += N * K * 3
    mass = _carve(ws, o, N)
    o += N
    MA = _carve(ws, o, (N, 6, 6))
    o += N * 36
    U = _carve(ws, o, (N, 6))
    o += N * 6
    D = _carve(ws, o, N)
    o += N
    Wsub = _carve(ws, o, (N, r1, 6))
    o += N * r1 * 6
    pa_ = _carve(ws, o, (N, 6))
    o += N * 6
    cb = _carve(ws, o, (N, 6))
    o += N * 6
    up = _carve(ws, o, N)
    o += N
    A = _carve(ws, o, (N, 6))
    o += N * 6
    tau_t = _carve(ws, o, (r1, n))
    o += r1 * n
    wb_t = _carve(ws, o, (r1, 6))
    o += r1 * 6
    Lc = _carve(ws, o, (6, 6))
    o += 36
    tmp = _carve(ws, o, 6)
    o += 6
    ytmp = _carve(ws, o, 6)
    return (fact, qt, R, P, S, V, c, I, L, fm, mass, MA, U, D, Wsub, pa_, cb, up, A, tau_t, wb_t,
            Lc, tmp, ytmp)


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _fd_hot_views(ws, o, N, n, order):
    """Hot-path extras after the work region: gravity (3), no-prescribed mask (n, int64 bits),
    echoed base wrench (order+1, 6) and torques (order+1, n)."""
    r1 = order + 1
    o += _fd_work_size(N, n, order)
    g = _carve(ws, o, 3)
    o += 3
    presc = carray(_i64_ptr(ws.ctypes.data + 8 * o), n)
    o += n
    out_w = _carve(ws, o, (r1, 6))
    o += r1 * 6
    out_tau = _carve(ws, o, (r1, n))
    return g, presc, out_w, out_tau


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def fd_workspace(bodyi, bodyf, order, g):
    """Work buffer of :func:`forward_dynamics_ws` / :func:`hybrid_dynamics`: model header,
    factorials, gravity ``g`` and an all-free joint mask filled in."""
    N = bodyi.shape[0]
    n = N - 1
    ws, o = _model_header(bodyi, bodyf, _fd_work_size(N, n, order) + 3 + n + (order + 1) * (6 + n))
    fact = _fd_views(ws, o, N, n, order)[0]
    f = _factorials(order + 4)
    for k in range(order + 4):
        fact[k] = f[k]
    gv, presc = _fd_hot_views(ws, o, N, n, order)[:2]
    for a in range(3):
        gv[a] = g[a]
    for j in range(n):
        presc[j] = 0
    return ws


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def hybrid_dynamics(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, wext, text,
                    presc, base_given_wrench, out_V, out_q, out_w, out_tau):
    """General entry of :func:`_hybrid_core` (allocates its work buffer)."""
    ws = fd_workspace(bodyi, bodyf, order, g)
    return _hybrid_core(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, wext, text, presc,
                        base_given_wrench, out_V, out_q, out_w, out_tau, ws, work_offset(bodyi.shape[0]))


@njit(_hot_sigs(5, (types.int64, _F2, _F2)), cache=True, error_model="numpy", fastmath=_FAST)
def forward_dynamics_ws(ws, C, Vd, qd, wd, taud, order, out_V, out_q):
    """Hot-path forward dynamics over a buffer from :func:`fd_workspace` (default gravity, no
    applied wrenches or external torques, float64 of any layout). ERR_SHAPE on shape mismatch."""
    N, bodyi, bodyf, o = _model_views(ws)
    n = N - 1
    if not (C.shape[0] == 4 and C.shape[1] == 4 and Vd.shape[0] >= 1 and Vd.shape[1] == 6
            and qd.shape[0] >= 2 and qd.shape[1] == n and wd.shape[0] >= order + 1
            and wd.shape[1] == 6 and taud.shape[0] >= order + 1 and taud.shape[1] == n
            and out_V.shape[0] == order + 2 and out_V.shape[1] == 6
            and out_q.shape[0] == order + 3 and out_q.shape[1] == n):
        return ERR_SHAPE
    g, presc, out_w, out_tau = _fd_hot_views(ws, o, N, n, order)
    return _hybrid_core(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, _NO_WEXT_K, _NO_TEXT_K, presc,
                        True, out_V, out_q, out_w, out_tau, ws, o)


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def fd_into_size(N, order):
    """Length of a lean forward-dynamics buffer: :func:`fd_workspace`, then out_V, out_q."""
    n = N - 1
    r1 = order + 1
    return (work_offset(N) + _fd_work_size(N, n, order) + 3 + n + r1 * (6 + n)
            + (order + 2) * 6 + (order + 3) * n)


@njit(_hot_sigs(5, (types.int64,)), cache=True, error_model="numpy", fastmath=_FAST)
def forward_dynamics_into(ws, C, Vd, qd, wd, taud, order):
    """:func:`forward_dynamics_ws` writing into ``out_V`` (order+2, 6) and ``out_q``
    (order+3, n) at the end of ``ws`` (length :func:`fd_into_size`). ERR_SHAPE on a mismatch."""
    N, bodyi, bodyf, o = _model_views(ws)
    n = N - 1
    if ws.shape[0] != fd_into_size(N, order):
        return ERR_SHAPE
    e = o + _fd_work_size(N, n, order) + 3 + n + (order + 1) * (6 + n)
    out_V = _carve(ws, e, (order + 2, 6))
    out_q = _carve(ws, e + (order + 2) * 6, (order + 3, n))
    if not (C.shape[0] == 4 and C.shape[1] == 4 and Vd.shape[0] >= 1 and Vd.shape[1] == 6
            and qd.shape[0] >= 2 and qd.shape[1] == n and wd.shape[0] >= order + 1
            and wd.shape[1] == 6 and taud.shape[0] >= order + 1 and taud.shape[1] == n):
        return ERR_SHAPE
    g, presc, out_w, out_tau = _fd_hot_views(ws, o, N, n, order)
    return _hybrid_core(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, _NO_WEXT_K, _NO_TEXT_K, presc,
                        True, out_V, out_q, out_w, out_tau, ws, o)


# --------------------------------------------------------------------------- float32 twins (as in .inverse)
@njit(_f32_sigs(5, (types.int64, _F2, _F2)), cache=True, error_model="numpy", fastmath=_FAST)
def forward_dynamics_ws32(ws, C, Vd, qd, wd, taud, order, out_V, out_q):
    """:func:`forward_dynamics_ws` of float32 inputs (:func:`~.common._f32_sigs`)."""
    return forward_dynamics_ws(ws, _as_f64(C), _as_f64(Vd), _as_f64(qd), _as_f64(wd), _as_f64(taud), order,
                               out_V, out_q)


@njit(_f32_sigs(5, (types.int64,)), cache=True, error_model="numpy", fastmath=_FAST)
def forward_dynamics_into32(ws, C, Vd, qd, wd, taud, order):
    """:func:`forward_dynamics_into` of float32 inputs (:func:`~.common._f32_sigs`)."""
    return forward_dynamics_into(ws, _as_f64(C), _as_f64(Vd), _as_f64(qd), _as_f64(wd), _as_f64(taud), order)
