"""Per-body kinematics terms (poses, screws, twists, centre of mass, inertia, momentum, wrench
coefficients) and forward kinematics (paper Alg. 1). Internal; conventions in :mod:`.common`."""
from __future__ import annotations

import numpy as np
from numba import njit

from .common import (_all_finite, _check_pose, _cross, ERR_Q_NONFINITE, ERR_RESULT_NONFINITE, ERR_TWIST_NONFINITE,
                     _factorials, _FAST, OK)


# --------------------------------------------------------------------------- per-body kinematics
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _body_pose(bodyf, jt, i, p, qi, R, P, S):
    """Pose R[i], P[i] of body i and its joint screw S[i, 0] = Ad_{F_parent} Y_i (Alg. 1, order 0).

    F_i = F_parent exp([Y_i] q_i), with F the map from the home pose to the current world pose.
    """
    e0, e1, e2 = bodyf[i, 0], bodyf[i, 1], bodyf[i, 2]
    y3, y4, y5 = bodyf[i, 3], bodyf[i, 4], bodyf[i, 5]
    # S0 = Ad_{Fp} Y : w = Rp e, v = Rp y_v + pp x (Rp e)
    for a in range(3):
        S[i, 0, a] = R[p, a, 0] * e0 + R[p, a, 1] * e1 + R[p, a, 2] * e2
        S[i, 0, 3 + a] = R[p, a, 0] * y3 + R[p, a, 1] * y4 + R[p, a, 2] * y5
    c0, c1, c2 = _cross(P[p, 0], P[p, 1], P[p, 2], S[i, 0, 0], S[i, 0, 1], S[i, 0, 2])
    S[i, 0, 3] += c0
    S[i, 0, 4] += c1
    S[i, 0, 5] += c2
    if jt == 1:  # prismatic: exp = (I, e q)
        for a in range(3):
            for b in range(3):
                R[i, a, b] = R[p, a, b]
            P[i, a] = P[p, a] + S[i, 0, 3 + a] * qi
        return
    # revolute: exp([Y] q) = (Rj, (I - Rj) pa), pa = e x y_v a point on the axis (home)
    c, s = np.cos(qi), np.sin(qi)
    t = 1.0 - c
    r00 = c + t * e0 * e0
    r01 = t * e0 * e1 - s * e2
    r02 = t * e0 * e2 + s * e1
    r10 = t * e0 * e1 + s * e2
    r11 = c + t * e1 * e1
    r12 = t * e1 * e2 - s * e0
    r20 = t * e0 * e2 - s * e1
    r21 = t * e1 * e2 + s * e0
    r22 = c + t * e2 * e2
    pa0, pa1, pa2 = _cross(e0, e1, e2, y3, y4, y5)
    t0 = pa0 - (r00 * pa0 + r01 * pa1 + r02 * pa2)
    t1 = pa1 - (r10 * pa0 + r11 * pa1 + r12 * pa2)
    t2 = pa2 - (r20 * pa0 + r21 * pa1 + r22 * pa2)
    for a in range(3):
        x0, x1, x2 = R[p, a, 0], R[p, a, 1], R[p, a, 2]
        R[i, a, 0] = x0 * r00 + x1 * r10 + x2 * r20
        R[i, a, 1] = x0 * r01 + x1 * r11 + x2 * r21
        R[i, a, 2] = x0 * r02 + x1 * r12 + x2 * r22
        P[i, a] = P[p, a] + x0 * t0 + x1 * t1 + x2 * t2


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _body_inertia0(bodyf, i, R, P, c, I):
    """Current CoM c[i, 0] (world) and rotational inertia I[i, 0] (world axes) of body i."""
    for a in range(3):
        c[i, 0, a] = P[i, a] + R[i, a, 0] * bodyf[i, 7] + R[i, a, 1] * bodyf[i, 8] + R[i, a, 2] * bodyf[i, 9]
    # I0 = R Ih R^T, Ih = bodyf[i, 10:19] row-major
    for a in range(3):
        t0 = R[i, a, 0] * bodyf[i, 10] + R[i, a, 1] * bodyf[i, 13] + R[i, a, 2] * bodyf[i, 16]
        t1 = R[i, a, 0] * bodyf[i, 11] + R[i, a, 1] * bodyf[i, 14] + R[i, a, 2] * bodyf[i, 17]
        t2 = R[i, a, 0] * bodyf[i, 12] + R[i, a, 1] * bodyf[i, 15] + R[i, a, 2] * bodyf[i, 18]
        for b in range(a, 3):
            v = t0 * R[i, b, 0] + t1 * R[i, b, 1] + t2 * R[i, b, 2]
            I[i, 0, a, b] = v
            I[i, 0, b, a] = v


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _screw_coeff(S, V, i, p, k):
    """S_k = 1/k sum_{j<k} ad_{Vp_j} S_(k-1-j)   (Alg. 1, Taylor form; Sdot = ad_{V_parent} S)."""
    s0 = s1 = s2 = s3 = s4 = s5 = 0.0
    for j in range(k):
        w0, w1, w2, v0, v1, v2 = V[p, j, 0], V[p, j, 1], V[p, j, 2], V[p, j, 3], V[p, j, 4], V[p, j, 5]
        m = k - 1 - j
        x0, x1, x2, y0, y1, y2 = S[i, m, 0], S[i, m, 1], S[i, m, 2], S[i, m, 3], S[i, m, 4], S[i, m, 5]
        s0 += w1 * x2 - w2 * x1
        s1 += w2 * x0 - w0 * x2
        s2 += w0 * x1 - w1 * x0
        s3 += v1 * x2 - v2 * x1 + w1 * y2 - w2 * y1
        s4 += v2 * x0 - v0 * x2 + w2 * y0 - w0 * y2
        s5 += v0 * x1 - v1 * x0 + w0 * y1 - w1 * y0
    S[i, k, 0] = s0 / k
    S[i, k, 1] = s1 / k
    S[i, k, 2] = s2 / k
    S[i, k, 3] = s3 / k
    S[i, k, 4] = s4 / k
    S[i, k, 5] = s5 / k


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _twist_coeff(V, S, qt, i, p, k):
    """V_k = Vp_k + sum_{a<=k} S_a (qdot)_(k-a),  (qdot)_m = (m+1) q_(m+1)   (Alg. 1 with the erratum)."""
    col = i - 1
    for b in range(6):
        V[i, k, b] = V[p, k, b]
    for a in range(k + 1):
        qd = (k - a + 1) * qt[k - a + 1, col]
        for b in range(6):
            V[i, k, b] += S[i, a, b] * qd


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _com_coeff(c, V, i, k, full):
    """c_k = 1/k (v_(k-1) + sum_{j<k} w_j x c_(k-1-j))   (cdot = v + w x c).

    With full=False the terms in the (still unknown) V_(k-1) are left out: v_(k-1) and
    w_(k-1) x c_0 (forward dynamics adds them once V_(k-1) is solved, Lemma 2)."""
    jmax = k if full else k - 1
    x0 = x1 = x2 = 0.0
    if full:
        x0, x1, x2 = V[i, k - 1, 3], V[i, k - 1, 4], V[i, k - 1, 5]
    for j in range(jmax):
        m = k - 1 - j
        d0, d1, d2 = _cross(V[i, j, 0], V[i, j, 1], V[i, j, 2], c[i, m, 0], c[i, m, 1], c[i, m, 2])
        x0 += d0
        x1 += d1
        x2 += d2
    c[i, k, 0] = x0 / k
    c[i, k, 1] = x1 / k
    c[i, k, 2] = x2 / k


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _com_complete(c, V, i, k):
    """Add the V_(k-1) terms left out by ``_com_coeff(..., full=False)``."""
    d0, d1, d2 = _cross(V[i, k - 1, 0], V[i, k - 1, 1], V[i, k - 1, 2], c[i, 0, 0], c[i, 0, 1], c[i, 0, 2])
    c[i, k, 0] += (V[i, k - 1, 3] + d0) / k
    c[i, k, 1] += (V[i, k - 1, 4] + d1) / k
    c[i, k, 2] += (V[i, k - 1, 5] + d2) / k


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _inertia_coeff(I, V, i, k):
    """I_k = 1/k sum_{j<k} [hat(w_j), I_(k-1-j)]   (Idot = hat(w) I - I hat(w), symmetric)."""
    for a in range(3):
        for b in range(3):
            I[i, k, a, b] = 0.0
    for j in range(k):
        w0, w1, w2 = V[i, j, 0], V[i, j, 1], V[i, j, 2]
        m = k - 1 - j
        for b in range(3):
            # column b of hat(w) J : w x J[:, b];  [hat(w), J] = hat(w) J + (hat(w) J)^T
            x0, x1, x2 = _cross(w0, w1, w2, I[i, m, 0, b], I[i, m, 1, b], I[i, m, 2, b])
            I[i, k, 0, b] += x0 / k
            I[i, k, 1, b] += x1 / k
            I[i, k, 2, b] += x2 / k
            I[i, k, b, 0] += x0 / k
            I[i, k, b, 1] += x1 / k
            I[i, k, b, 2] += x2 / k


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _angmom_coeff(L, I, V, i, k):
    """L_k = sum_{j<=k} I_j w_(k-j)  (L = I w, angular momentum about the CoM)."""
    for a in range(3):
        s = 0.0
        for j in range(k + 1):
            s += I[i, j, a, 0] * V[i, k - j, 0] + I[i, j, a, 1] * V[i, k - j, 1] + I[i, j, a, 2] * V[i, k - j, 2]
        L[i, k, a] = s


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _fm_coeff(fm, c, m, g, i, k):
    """fm_k = m ((k+1)(k+2) c_(k+2) - g delta_k0): Taylor coefficient k of m (cddot - g)."""
    s = m * (k + 1.0) * (k + 2.0)
    for a in range(3):
        fm[i, k, a] = s * c[i, k + 2, a]
    if k == 0:
        for a in range(3):
            fm[i, 0, a] -= m * g[a]


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _wrench_coeff(c, I, L, V, fm, i, k, j0):
    """Coefficient k of the body's Newton–Euler wrench W = Pi^(1) - W_grav, as a 6-tuple (n, f).

    n_k = sum_j I_j (wdot)_(k-j) + sum_j w_j x L_(k-j) + sum_j c_j x fm_(k-j),  f_k = fm_k.
    Terms ``I_j wdot_(k-j)`` with j < j0 are skipped: j0 = 0 gives the full wrench; j0 = 1 the
    bias with the unknown V_(k+1) set to zero (forward dynamics, Lemma 2; fm_k then partial too).
    """
    n0 = n1 = n2 = 0.0
    for j in range(j0, k + 1):
        s = k - j + 1.0
        m = k - j + 1
        w0, w1, w2 = s * V[i, m, 0], s * V[i, m, 1], s * V[i, m, 2]
        n0 += I[i, j, 0, 0] * w0 + I[i, j, 0, 1] * w1 + I[i, j, 0, 2] * w2
        n1 += I[i, j, 1, 0] * w0 + I[i, j, 1, 1] * w1 + I[i, j, 1, 2] * w2
        n2 += I[i, j, 2, 0] * w0 + I[i, j, 2, 1] * w1 + I[i, j, 2, 2] * w2
    for j in range(k + 1):
        m = k - j
        d0, d1, d2 = _cross(V[i, j, 0], V[i, j, 1], V[i, j, 2], L[i, m, 0], L[i, m, 1], L[i, m, 2])
        e0, e1, e2 = _cross(c[i, j, 0], c[i, j, 1], c[i, j, 2], fm[i, m, 0], fm[i, m, 1], fm[i, m, 2])
        n0 += d0 + e0
        n1 += d1 + e1
        n2 += d2 + e2
    return n0, n1, n2, fm[i, k, 0], fm[i, k, 1], fm[i, k, 2]


# --------------------------------------------------------------------------- forward kinematics
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _kinematics(bodyi, bodyf, C, Vt, qt, K, R, P, S, V):
    """Algorithm 1: poses (R, P), screws S[:, 0..K-1] and twists V[:, 0..K-1] (Taylor coefficients).

    ``Vt`` base twist coefficients (>= K rows), ``qt`` joint coefficients (>= K+1 rows).
    """
    N = bodyi.shape[0]
    for a in range(3):
        for b in range(3):
            R[0, a, b] = C[a, b]
        P[0, a] = C[a, 3]
    for k in range(K):
        for a in range(6):
            V[0, k, a] = Vt[k, a]
    for i in range(1, N):
        p = bodyi[i, 0]
        _body_pose(bodyf, bodyi[i, 1], i, p, qt[0, i - 1], R, P, S)
        for k in range(1, K):
            _screw_coeff(S, V, i, p, k)
        for k in range(K):
            _twist_coeff(V, S, qt, i, p, k)




@njit(cache=True, error_model="numpy", fastmath=_FAST)
def forward_kinematics(bodyi, bodyf, C, Vd, qd, order, R, P, Sd, Vout):
    """Algorithm 1 as derivatives: poses (R, P) (N,3,3)/(N,3), screws Sd (N, order+1, 6), twists
    Vout (N, order+1, 6). Vd (>= order+1, 6), qd (>= order+2, n)."""
    N = bodyi.shape[0]
    n = N - 1
    K = order + 1
    code = _check_pose(C)
    if code != OK:
        return code
    if not _all_finite(Vd, K):
        return ERR_TWIST_NONFINITE
    if n > 0 and not _all_finite(qd, K + 1):
        return ERR_Q_NONFINITE
    fact = _factorials(K + 1)
    Vt = np.empty((K, 6))
    for k in range(K):
        for a in range(6):
            Vt[k, a] = Vd[k, a] / fact[k]
    qt = np.empty((K + 1, n))
    for k in range(K + 1):
        for j in range(n):
            qt[k, j] = qd[k, j] / fact[k]
    _kinematics(bodyi, bodyf, C, Vt, qt, K, R, P, Sd, Vout)
    for i in range(N):
        for k in range(K):
            for a in range(6):
                Sd[i, k, a] *= fact[k]
                Vout[i, k, a] *= fact[k]
    return OK


# --------------------------------------------------------------------------- centre of mass
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def center_of_mass(bodyi, bodyf, C, Vd, qd, order, out):
    """System centre of mass and its derivatives ``c^(0..order)`` (world) into ``out`` (order+1, 3).

    Vd (>= order, 6) spatial base twist derivatives ``V^(0..order-1)``, qd (>= order+1, n) joint
    derivatives; per body ``c_k = 1/k (v_(k-1) + sum_j w_j x c_(k-1-j))`` (:func:`_com_coeff`), summed
    with the masses. Returns an error code (ERR_RESULT_NONFINITE for a massless model)."""
    N = bodyi.shape[0]
    n = N - 1
    K = order
    code = _check_pose(C)
    if code != OK:
        return code
    if K > 0 and not _all_finite(Vd, K):
        return ERR_TWIST_NONFINITE
    if n > 0 and not _all_finite(qd, K + 1):
        return ERR_Q_NONFINITE
    fact = _factorials(K + 2)
    Vt = np.zeros((max(K, 1), 6))
    for k in range(K):
        for a in range(6):
            Vt[k, a] = Vd[k, a] / fact[k]
    qt = np.empty((K + 1, n))
    for k in range(K + 1):
        for j in range(n):
            qt[k, j] = qd[k, j] / fact[k]
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S = np.empty((N, max(K, 1), 6))
    V = np.empty((N, max(K, 1), 6))
    c = np.empty((N, K + 1, 3))
    _kinematics(bodyi, bodyf, C, Vt, qt, K, R, P, S, V)
    mtot = 0.0
    for k in range(K + 1):
        for a in range(3):
            out[k, a] = 0.0
    for i in range(N):
        mi = bodyf[i, 6]
        mtot += mi
        for a in range(3):
            c[i, 0, a] = P[i, a] + R[i, a, 0] * bodyf[i, 7] + R[i, a, 1] * bodyf[i, 8] + R[i, a, 2] * bodyf[i, 9]
        for k in range(1, K + 1):
            _com_coeff(c, V, i, k, True)
        for k in range(K + 1):
            for a in range(3):
                out[k, a] += mi * c[i, k, a]
    if not mtot > 0.0:
        return ERR_RESULT_NONFINITE
    for k in range(K + 1):
        for a in range(3):
            out[k, a] *= fact[k] / mtot
    return OK
