"""Compiled (numba) kernels of the higher-order recursions. Internal module.

All kernels take the packed model arrays ``bodyi`` (N, 2) = ``[parent, jtype]`` and
``bodyf`` (N, 19) = ``[Y(6), mass, com(3), inertia(9)]`` (see :mod:`geodyn_ros.model`)
and flat state arrays, and run one general-order code path.

Jets are stored internally as **normalised Taylor coefficients** ``x_k = x^(k) / k!``:
the Leibniz sums of the paper, ``sum_j binom(k, j) a^(j) b^(k-j)``, become plain Cauchy
products ``sum_j a_j b_(k-j)`` and a time derivative is ``(xdot)_k = (k+1) x_(k+1)``.
Inputs are scaled by ``1/k!`` on entry and outputs by ``k!`` on exit.

Per body the dynamics are written about the world origin but assembled from the
centre of mass ``c`` (world), the rotational inertia about it ``I`` (world axes) and
the mass ``m``; the spatial momentum is ``Pi = (I w + c x p, p)`` with ``p = m cdot``.
With ``cdot = v + w x c`` and ``Idot = [hat(w), I]``, the Newton–Euler wrench of the
paper, ``W = Pi^(1) - W_grav - W_app`` (Alg. 2 with (E3)–(E5)), is

    f = m (cddot - g) - f_app,
    n = d/dt(I w) + c x m (cddot - g) - n_app,    d/dt(I w) = I wdot + w x (I w),

whose derivatives of any order are Cauchy products of 3-vectors; this replaces the
6x6 matrix derivatives ``M^(k)`` of (E2) by O(r^2) cross products per body.

Error codes returned by the kernels (0 = success) are mapped to ``ValueError``
messages in :mod:`geodyn_ros.dynamics`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
ERR_POSE_NONFINITE = 1
ERR_POSE_NOT_RIGID = 2
ERR_TWIST_NONFINITE = 3
ERR_Q_NONFINITE = 4
ERR_WRENCH_NONFINITE = 5
ERR_TAU_NONFINITE = 6
ERR_EXTW_NONFINITE = 7
ERR_EXTT_NONFINITE = 8
ERR_GRAVITY_NONFINITE = 9
ERR_SINGULAR_JOINT = 10
ERR_SINGULAR_BASE = 11
ERR_RESULT_NONFINITE = 12

RIGID_TOL = 1e-6


# --------------------------------------------------------------------------- checks
@njit(cache=True)
def _all_finite(a, nrows):
    for i in range(nrows):
        for j in range(a.shape[1]):
            if not np.isfinite(a[i, j]):
                return False
    return True


@njit(cache=True)
def _check_pose(C):
    """0 if C is a finite rigid transform to RIGID_TOL, else an error code."""
    for i in range(4):
        for j in range(4):
            if not np.isfinite(C[i, j]):
                return ERR_POSE_NONFINITE
    if abs(C[3, 0]) > RIGID_TOL or abs(C[3, 1]) > RIGID_TOL or abs(C[3, 2]) > RIGID_TOL \
            or abs(C[3, 3] - 1.0) > RIGID_TOL:
        return ERR_POSE_NOT_RIGID
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += C[k, i] * C[k, j]
            if abs(s - (1.0 if i == j else 0.0)) > RIGID_TOL:
                return ERR_POSE_NOT_RIGID
    det = (C[0, 0] * (C[1, 1] * C[2, 2] - C[1, 2] * C[2, 1])
           - C[0, 1] * (C[1, 0] * C[2, 2] - C[1, 2] * C[2, 0])
           + C[0, 2] * (C[1, 0] * C[2, 1] - C[1, 1] * C[2, 0]))
    if det < 0.0:
        return ERR_POSE_NOT_RIGID
    return OK


# --------------------------------------------------------------------------- small algebra
@njit(cache=True, inline="always")
def _cross_acc(out, s, a0, a1, a2, b0, b1, b2):
    """out += s * (a x b)."""
    out[0] += s * (a1 * b2 - a2 * b1)
    out[1] += s * (a2 * b0 - a0 * b2)
    out[2] += s * (a0 * b1 - a1 * b0)


@njit(cache=True, inline="always")
def _ad_acc(out, s, V, X):
    """out(6) += s * ad_V X  with ad_V X = (w x xw, v x xw + w x xv)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    x0, x1, x2, y0, y1, y2 = X[0], X[1], X[2], X[3], X[4], X[5]
    out[0] += s * (w1 * x2 - w2 * x1)
    out[1] += s * (w2 * x0 - w0 * x2)
    out[2] += s * (w0 * x1 - w1 * x0)
    out[3] += s * (v1 * x2 - v2 * x1 + w1 * y2 - w2 * y1)
    out[4] += s * (v2 * x0 - v0 * x2 + w2 * y0 - w0 * y2)
    out[5] += s * (v0 * x1 - v1 * x0 + w0 * y1 - w1 * y0)


# --------------------------------------------------------------------------- per-body kinematics
@njit(cache=True)
def _body_pose(bodyf, jtype, i, Rp, pp, qi, R, p, S0):
    """Pose (R, p) of body i and its joint screw S0 = Ad_{F_parent} Y_i (Alg. 1, order 0).

    F_i = F_parent exp([Y_i] q_i), with F the map from home to current world pose.
    """
    y = bodyf[i]
    # S0 = Ad_{Fp} Y : w = Rp e, v = Rp y_v + pp x (Rp e)
    for a in range(3):
        S0[a] = Rp[a, 0] * y[0] + Rp[a, 1] * y[1] + Rp[a, 2] * y[2]
        S0[3 + a] = Rp[a, 0] * y[3] + Rp[a, 1] * y[4] + Rp[a, 2] * y[5]
    _cross_acc(S0[3:], 1.0, pp[0], pp[1], pp[2], S0[0], S0[1], S0[2])
    if jtype == 1:  # prismatic: exp = (I, e q)
        for a in range(3):
            for b in range(3):
                R[a, b] = Rp[a, b]
            p[a] = pp[a] + S0[3 + a] * qi
        return
    # revolute: exp([Y] q) = (Rj, (I - Rj) pa), pa = e x y_v a point on the axis (home)
    e0, e1, e2 = y[0], y[1], y[2]
    c, s = np.cos(qi), np.sin(qi)
    t = 1.0 - c
    Rj = np.empty((3, 3))
    Rj[0, 0] = c + t * e0 * e0
    Rj[0, 1] = t * e0 * e1 - s * e2
    Rj[0, 2] = t * e0 * e2 + s * e1
    Rj[1, 0] = t * e0 * e1 + s * e2
    Rj[1, 1] = c + t * e1 * e1
    Rj[1, 2] = t * e1 * e2 - s * e0
    Rj[2, 0] = t * e0 * e2 - s * e1
    Rj[2, 1] = t * e1 * e2 + s * e0
    Rj[2, 2] = c + t * e2 * e2
    pa0 = e1 * y[5] - e2 * y[4]
    pa1 = e2 * y[3] - e0 * y[5]
    pa2 = e0 * y[4] - e1 * y[3]
    tj0 = pa0 - (Rj[0, 0] * pa0 + Rj[0, 1] * pa1 + Rj[0, 2] * pa2)
    tj1 = pa1 - (Rj[1, 0] * pa0 + Rj[1, 1] * pa1 + Rj[1, 2] * pa2)
    tj2 = pa2 - (Rj[2, 0] * pa0 + Rj[2, 1] * pa1 + Rj[2, 2] * pa2)
    for a in range(3):
        for b in range(3):
            R[a, b] = Rp[a, 0] * Rj[0, b] + Rp[a, 1] * Rj[1, b] + Rp[a, 2] * Rj[2, b]
        p[a] = pp[a] + Rp[a, 0] * tj0 + Rp[a, 1] * tj1 + Rp[a, 2] * tj2


@njit(cache=True)
def _body_inertia0(bodyf, i, R, p, c0, I0):
    """Current CoM c0 (world) and rotational inertia I0 (world axes) of body i."""
    y = bodyf[i]
    for a in range(3):
        c0[a] = p[a] + R[a, 0] * y[7] + R[a, 1] * y[8] + R[a, 2] * y[9]
    # I0 = R Ih R^T, Ih = y[10:19] row-major
    T = np.empty((3, 3))
    for a in range(3):
        for b in range(3):
            T[a, b] = R[a, 0] * y[10 + b] + R[a, 1] * y[13 + b] + R[a, 2] * y[16 + b]
    for a in range(3):
        for b in range(a, 3):
            v = T[a, 0] * R[b, 0] + T[a, 1] * R[b, 1] + T[a, 2] * R[b, 2]
            I0[a, b] = v
            I0[b, a] = v


@njit(cache=True)
def _screw_coeff(S, Vp, k):
    """S_k = 1/k sum_{i<k} ad_{Vp_i} S_(k-1-i)   (Alg. 1, Taylor form; Sdot = ad_{V_parent} S)."""
    for a in range(6):
        S[k, a] = 0.0
    for i in range(k):
        _ad_acc(S[k], 1.0 / k, Vp[i], S[k - 1 - i])


@njit(cache=True)
def _twist_coeff(V, Vp, S, qt, col, k):
    """V_k = Vp_k + sum_{a<=k} S_a (qdot)_(k-a),  (qdot)_m = (m+1) q_(m+1)   (Alg. 1 with the erratum)."""
    for a in range(6):
        V[k, a] = Vp[k, a]
    for a in range(k + 1):
        qd = (k - a + 1) * qt[k - a + 1, col]
        for b in range(6):
            V[k, b] += S[a, b] * qd


@njit(cache=True)
def _com_coeff(c, V, k):
    """c_k = 1/k (v_(k-1) + sum_{i<k} w_i x c_(k-1-i))   (cdot = v + w x c)."""
    for a in range(3):
        c[k, a] = V[k - 1, 3 + a]
    for i in range(k):
        w = V[i]
        x = c[k - 1 - i]
        _cross_acc(c[k], 1.0, w[0], w[1], w[2], x[0], x[1], x[2])
    for a in range(3):
        c[k, a] /= k


@njit(cache=True)
def _inertia_coeff(I, V, k):
    """I_k = 1/k sum_{i<k} [hat(w_i), I_(k-1-i)]   (Idot = hat(w) I - I hat(w), symmetric)."""
    for a in range(3):
        for b in range(3):
            I[k, a, b] = 0.0
    for i in range(k):
        w0, w1, w2 = V[i, 0], V[i, 1], V[i, 2]
        J = I[k - 1 - i]
        for b in range(3):
            # column b of hat(w) J : w x J[:, b]
            x0 = w1 * J[2, b] - w2 * J[1, b]
            x1 = w2 * J[0, b] - w0 * J[2, b]
            x2 = w0 * J[1, b] - w1 * J[0, b]
            # hat(w) J + (hat(w) J)^T
            I[k, 0, b] += x0 / k
            I[k, 1, b] += x1 / k
            I[k, 2, b] += x2 / k
            I[k, b, 0] += x0 / k
            I[k, b, 1] += x1 / k
            I[k, b, 2] += x2 / k


@njit(cache=True)
def _angmom_coeff(L, I, V, k):
    """L_k = sum_{i<=k} I_i w_(k-i)  (L = I w, angular momentum about the CoM)."""
    for a in range(3):
        s = 0.0
        for i in range(k + 1):
            s += I[i, a, 0] * V[k - i, 0] + I[i, a, 1] * V[k - i, 1] + I[i, a, 2] * V[k - i, 2]
        L[k, a] = s


@njit(cache=True)
def _wrench_coeff(out, m, c, I, L, V, fm, g, k, i0):
    """Coefficient k of the body's Newton–Euler wrench W = Pi^(1) - W_grav (no applied wrench).

    Terms with index i < i0 of ``I_i wdot_(k-i)`` are skipped, and ``fm_k`` must already hold
    the (possibly partial) coefficient k of m (cddot - g): i0 = 0 gives the full wrench,
    i0 = 1 the bias with the unknown V_(k+1) set to zero (forward dynamics, Lemma 2).
    """
    # fm_k itself is computed by the caller (it depends on c_(k+2)).
    for a in range(3):
        out[3 + a] = fm[k, a]
    # d/dt(I w) coefficient k = sum_i I_i (wdot)_(k-i) + sum_i w_i x L_(k-i)
    n0 = 0.0
    n1 = 0.0
    n2 = 0.0
    for i in range(i0, k + 1):
        s = k - i + 1.0
        w0, w1, w2 = V[k - i + 1, 0], V[k - i + 1, 1], V[k - i + 1, 2]
        n0 += s * (I[i, 0, 0] * w0 + I[i, 0, 1] * w1 + I[i, 0, 2] * w2)
        n1 += s * (I[i, 1, 0] * w0 + I[i, 1, 1] * w1 + I[i, 1, 2] * w2)
        n2 += s * (I[i, 2, 0] * w0 + I[i, 2, 1] * w1 + I[i, 2, 2] * w2)
    out[0] = n0
    out[1] = n1
    out[2] = n2
    for i in range(k + 1):
        w = V[i]
        x = L[k - i]
        _cross_acc(out, 1.0, w[0], w[1], w[2], x[0], x[1], x[2])
        y = c[i]
        z = fm[k - i]
        _cross_acc(out, 1.0, y[0], y[1], y[2], z[0], z[1], z[2])


@njit(cache=True)
def _fm_coeff(fm, m, c, g, k):
    """fm_k = m ((k+1)(k+2) c_(k+2) - g delta_k0): Taylor coefficient k of m (cddot - g)."""
    s = (k + 1.0) * (k + 2.0)
    for a in range(3):
        fm[k, a] = m * s * c[k + 2, a]
    if k == 0:
        for a in range(3):
            fm[0, a] -= m * g[a]


# --------------------------------------------------------------------------- forward kinematics
@njit(cache=True)
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
        pa = bodyi[i, 0]
        _body_pose(bodyf, bodyi[i, 1], i, R[pa], P[pa], qt[0, i - 1], R[i], P[i], S[i, 0])
        for k in range(1, K):
            _screw_coeff(S[i], V[pa], k)
        for k in range(K):
            _twist_coeff(V[i], V[pa], S[i], qt, i - 1, k)


# --------------------------------------------------------------------------- inverse dynamics
@njit(cache=True)
def inverse_dynamics(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau):
    """H-GRNE-FBS (Algorithms 1 and 2, Appendix E) at any order.

    Vd (>= order+2, 6) base spatial twist derivatives, qd (>= order+3, n) joint derivatives,
    g (3,) gravity, wext (N, >= order+1, 6) applied spatial wrench derivatives per body (or
    shape (0, 0, 6)), text (>= order+1, n) external joint torque derivatives (or (0, n)).
    Writes out_w (order+1, 6) base wrench derivatives and out_tau (order+1, n). Returns an error code.
    """
    N = bodyi.shape[0]
    n = N - 1
    K = order + 2
    code = _check_pose(C)
    if code != OK:
        return code
    if not _all_finite(Vd, K):
        return ERR_TWIST_NONFINITE
    if n > 0 and not _all_finite(qd, K + 1):
        return ERR_Q_NONFINITE
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    has_wext = wext.shape[0] > 0
    has_text = text.shape[0] > 0
    if has_wext:
        for i in range(N):
            if not _all_finite(wext[i], order + 1):
                return ERR_EXTW_NONFINITE
    if has_text and n > 0 and not _all_finite(text, order + 1):
        return ERR_EXTT_NONFINITE

    # Taylor coefficients of the inputs
    fact = np.empty(K + 2)
    fact[0] = 1.0
    for k in range(1, K + 2):
        fact[k] = fact[k - 1] * k
    Vt = np.empty((K, 6))
    for k in range(K):
        for a in range(6):
            Vt[k, a] = Vd[k, a] / fact[k]
    qt = np.empty((K + 1, n))
    for k in range(K + 1):
        for j in range(n):
            qt[k, j] = qd[k, j] / fact[k]

    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S = np.empty((N, K, 6))
    V = np.empty((N, K, 6))
    _kinematics(bodyi, bodyf, C, Vt, qt, K, R, P, S, V)

    # per-body Newton-Euler wrench coefficients 0..order (subtree sums accumulate in W)
    W = np.zeros((N, order + 1, 6))
    c = np.empty((K + 1, 3))
    I = np.empty((order + 1, 3, 3))
    L = np.empty((order + 1, 3))
    fm = np.empty((order + 1, 3))
    tmp = np.empty(6)
    for i in range(N):
        m = bodyf[i, 6]
        _body_inertia0(bodyf, i, R[i], P[i], c[0], I[0])
        for k in range(1, K + 1):
            _com_coeff(c, V[i], k)
        for k in range(1, order + 1):
            _inertia_coeff(I, V[i], k)
        for k in range(order + 1):
            _angmom_coeff(L, I, V[i], k)
        for k in range(order + 1):
            _fm_coeff(fm, m, c, g, k)
        for k in range(order + 1):
            _wrench_coeff(tmp, m, c, I, L, V[i], fm, g, k, 0)
            for a in range(6):
                W[i, k, a] += tmp[a]
            if has_wext:
                for a in range(6):
                    W[i, k, a] -= wext[i, k, a] / fact[k]
    # backward pass (Alg. 2): subtree wrenches and joint torques
    for i in range(N - 1, 0, -1):
        pa = bodyi[i, 0]
        for k in range(order + 1):
            s = 0.0
            for a in range(k + 1):
                for b in range(6):
                    s += S[i, a, b] * W[i, k - a, b]
            out_tau[k, i - 1] = s * fact[k]
            if has_text:
                out_tau[k, i - 1] -= text[k, i - 1]
            for b in range(6):
                W[pa, k, b] += W[i, k, b]
    for k in range(order + 1):
        for b in range(6):
            out_w[k, b] = W[0, k, b] * fact[k]
    return OK


# --------------------------------------------------------------------------- hybrid / forward dynamics
@njit(cache=True)
def _spatial_inertia(m, c, I, M):
    """6x6 spatial inertia about the world origin, angular first, from (m, c, I)."""
    cx = np.empty((3, 3))
    cx[0, 0] = 0.0
    cx[0, 1] = -c[2]
    cx[0, 2] = c[1]
    cx[1, 0] = c[2]
    cx[1, 1] = 0.0
    cx[1, 2] = -c[0]
    cx[2, 0] = -c[1]
    cx[2, 1] = c[0]
    cx[2, 2] = 0.0
    for a in range(3):
        for b in range(3):
            s = 0.0
            for k in range(3):
                s -= cx[a, k] * cx[k, b]     # hat(c) hat(c)^T = -hat(c)^2
            M[a, b] = I[a, b] + m * s
            M[a, 3 + b] = m * cx[a, b]
            M[3 + a, b] = -m * cx[a, b]
            M[3 + a, 3 + b] = m if a == b else 0.0


@njit(cache=True)
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


@njit(cache=True)
def _chol6_solve(Lc, b, x):
    y = np.empty(6)
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


@njit(cache=True)
def hybrid_dynamics(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, wext, text,
                    presc, base_given_wrench, out_V, out_q, out_w, out_tau):
    """H-GHYB-FBS (Algorithm 4; with nothing prescribed it is H-GABI-FBS, Algorithm 3).

    presc (n,) bool: joints whose motion q^(0..order+2) is given (their torque is an output);
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
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    has_wext = wext.shape[0] > 0
    has_text = text.shape[0] > 0
    if has_wext:
        for i in range(N):
            if not _all_finite(wext[i], order + 1):
                return ERR_EXTW_NONFINITE
    if has_text and n > 0 and not _all_finite(text, order + 1):
        return ERR_EXTT_NONFINITE

    fact = np.empty(K + 2)
    fact[0] = 1.0
    for k in range(1, K + 2):
        fact[k] = fact[k - 1] * k
    # Taylor coefficients; unknown entries are filled order by order
    qt = np.zeros((K + 1, n))
    for j in range(n):
        nq = K + 1 if presc[j] else 2
        for k in range(nq):
            qt[k, j] = qd[k, j] / fact[k]
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S = np.empty((N, K, 6))
    V = np.zeros((N, K, 6))
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
        _body_pose(bodyf, bodyi[i, 1], i, R[pa], P[pa], qt[0, i - 1], R[i], P[i], S[i, 0])
        _twist_coeff(V[i], V[pa], S[i], qt, i - 1, 0)

    c = np.empty((N, K + 1, 3))
    I = np.empty((N, K, 3, 3))
    L = np.empty((N, K, 3))
    fm = np.empty((N, K, 3))
    mass = np.empty(N)
    MA = np.zeros((N, 6, 6))
    U = np.empty((N, 6))
    D = np.empty(N)
    Wsub = np.empty((N, order + 1, 6))
    pa_ = np.empty((N, 6))
    cb = np.empty((N, 6))
    up = np.empty(N)
    A = np.empty((N, 6))
    tau_t = np.zeros((order + 1, n))    # Taylor coefficients of the torques
    wb_t = np.zeros((order + 1, 6))     # Taylor coefficients of the base wrench
    Lc = np.empty((6, 6))
    tmp = np.empty(6)
    for i in range(N):
        mass[i] = bodyf[i, 6]
        _body_inertia0(bodyf, i, R[i], P[i], c[i, 0], I[i, 0])
        _com_coeff(c[i], V[i], 1)
        _angmom_coeff(L[i], I[i], V[i], 0)
        _spatial_inertia(mass[i], c[i, 0], I[i, 0], MA[i])
    if not base_given_wrench:
        for k in range(order + 1):
            for a in range(6):
                wb_t[k, a] = 0.0
    else:
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
    if base_given_wrench:
        if not _chol6(MA[0], Lc):
            return ERR_SINGULAR_BASE

    for k in range(order + 1):
        kf = k + 1.0
        uf = (k + 1.0) * (k + 2.0)
        # ---- known parts of order k: screws S_(k+1), bias twists, bias wrenches (V_(k+1) = 0)
        for i in range(N):
            if i > 0:
                p = bodyi[i, 0]
                _screw_coeff(S[i], V[p], k + 1)
                for a in range(6):
                    s = 0.0
                    for b in range(1, k + 2):
                        s += S[i, b, a] * (k + 2 - b) * qt[k + 2 - b, i - 1]
                    cb[i, a] = kf * s
            # partial c_(k+2) = 1/(k+2) sum_{ii<=k} w_ii x c_(k+1-ii): without v_(k+1) and w_(k+1) x c_0
            for a in range(3):
                c[i, k + 2, a] = 0.0
            for ii in range(k + 1):
                w = V[i, ii]
                x = c[i, k + 1 - ii]
                _cross_acc(c[i, k + 2], 1.0 / (k + 2.0), w[0], w[1], w[2], x[0], x[1], x[2])
            _fm_coeff(fm[i], mass[i], c[i], g, k)
            _wrench_coeff(pa_[i], mass[i], c[i], I[i], L[i], V[i], fm[i], g, k, 1)
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
            _chol6_solve(Lc, tmp, A[0])
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
            w = V[i, k + 1]
            x = c[i, 0]
            for a in range(3):
                c[i, k + 2, a] += w[3 + a] / (k + 2.0)
            _cross_acc(c[i, k + 2], 1.0 / (k + 2.0), w[0], w[1], w[2], x[0], x[1], x[2])
            _fm_coeff(fm[i], mass[i], c[i], g, k)
            if k + 1 < K:
                _inertia_coeff(I[i], V[i], k + 1)
                _angmom_coeff(L[i], I[i], V[i], k + 1)

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


# --------------------------------------------------------------------------- closed-form EoM
@njit(cache=True)
def eom_terms(bodyi, bodyf, C, V0, q, qdot, g, want, Mout, Cout, gout):
    """Closed-form EoM blocks (Prop. 1, Lemma 1) with nu = (V_base spatial, qdot).

    want: bit 1 mass matrix (CRBA on composite spatial inertias), bit 2 Coriolis matrix
    C = sum_j J_j^T (M_j Jdot_j - ad_{V_j}^T M_j J_j) (Lemma 1), bit 4 gravity vector
    g = -sum_j J_j^T M_j G. Returns an error code.
    """
    N = bodyi.shape[0]
    n = N - 1
    code = _check_pose(C)
    if code != OK:
        return code
    for a in range(6):
        if not np.isfinite(V0[a]):
            return ERR_TWIST_NONFINITE
    for j in range(n):
        if not (np.isfinite(q[j]) and np.isfinite(qdot[j])):
            return ERR_Q_NONFINITE
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    qt = np.zeros((2, n))
    for j in range(n):
        qt[0, j] = q[j]
        qt[1, j] = qdot[j]
    Vt = np.zeros((1, 6))
    for a in range(6):
        Vt[0, a] = V0[a]
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S = np.empty((N, 1, 6))
    V = np.empty((N, 1, 6))
    _kinematics(bodyi, bodyf, C, Vt, qt, 1, R, P, S, V)
    Mc = np.empty((N, 6, 6))
    Kc = np.zeros((N, 6, 6))
    c0 = np.empty(3)
    I0 = np.empty((3, 3))
    for i in range(N):
        _body_inertia0(bodyf, i, R[i], P[i], c0, I0)
        _spatial_inertia(bodyf[i, 6], c0, I0, Mc[i])
        if want & 2:
            # K_i = ad_{V_i}^T M_i : column b of K = ad_V^T M[:, b]
            Vi = V[i, 0]
            for b in range(6):
                x0, x1, x2, y0, y1, y2 = Mc[i, 0, b], Mc[i, 1, b], Mc[i, 2, b], Mc[i, 3, b], Mc[i, 4, b], Mc[i, 5, b]
                w0, w1, w2, v0, v1, v2 = Vi[0], Vi[1], Vi[2], Vi[3], Vi[4], Vi[5]
                # ad_V^T (n, f) = (-(w x n) - (v x f), -(w x f))
                Kc[i, 0, b] = -(w1 * x2 - w2 * x1) - (v1 * y2 - v2 * y1)
                Kc[i, 1, b] = -(w2 * x0 - w0 * x2) - (v2 * y0 - v0 * y2)
                Kc[i, 2, b] = -(w0 * x1 - w1 * x0) - (v0 * y1 - v1 * y0)
                Kc[i, 3, b] = -(w1 * y2 - w2 * y1)
                Kc[i, 4, b] = -(w2 * y0 - w0 * y2)
                Kc[i, 5, b] = -(w0 * y1 - w1 * y0)
    # composites over subtrees
    for i in range(N - 1, 0, -1):
        p = bodyi[i, 0]
        for a in range(6):
            for b in range(6):
                Mc[p, a, b] += Mc[i, a, b]
                Kc[p, a, b] += Kc[i, a, b]
    G = np.zeros(6)
    for a in range(3):
        G[3 + a] = g[a]
    nv = 6 + n
    F = np.empty(6)
    Fd = np.empty(6)
    Sd = np.empty(6)
    if want & 1:
        for a in range(nv):
            for b in range(nv):
                Mout[a, b] = 0.0
        for a in range(6):
            for b in range(6):
                Mout[a, b] = Mc[0, a, b]
        for i in range(1, N):
            Si = S[i, 0]
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += Mc[i, a, b] * Si[b]
                F[a] = s
            # walk up: rows of ancestors-or-self
            jj = i
            while jj > 0:
                s = 0.0
                for a in range(6):
                    s += S[jj, 0, a] * F[a]
                Mout[5 + jj, 5 + i] = s
                Mout[5 + i, 5 + jj] = s
                jj = bodyi[jj, 0]
            for a in range(6):
                Mout[a, 5 + i] = F[a]
                Mout[5 + i, a] = F[a]
    if want & 2:
        for a in range(nv):
            for b in range(nv):
                Cout[a, b] = 0.0
        # base columns (S = I, Sdot = 0): C[a, base] = -S_a^T Kc_(body a)
        for a in range(6):
            for b in range(6):
                Cout[a, b] = -Kc[0, a, b]
        for i in range(1, N):
            for b in range(6):
                s = 0.0
                for a in range(6):
                    s -= S[i, 0, a] * Kc[i, a, b]
                Cout[5 + i, b] = s
        for i in range(1, N):
            p = bodyi[i, 0]
            Si = S[i, 0]
            for a in range(6):
                Sd[a] = 0.0
            _ad_acc(Sd, 1.0, V[p, 0], Si)        # Sdot_i = ad_{V_p} S_i
            # column i, rows of ancestors-or-self (incl. base): S_a^T (Mc_i Sdot_i - Kc_i S_i)
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += Mc[i, a, b] * Sd[b] - Kc[i, a, b] * Si[b]
                Fd[a] = s
            for a in range(6):
                Cout[a, 5 + i] = Fd[a]
            jj = i
            while jj > 0:
                s = 0.0
                for a in range(6):
                    s += S[jj, 0, a] * Fd[a]
                Cout[5 + jj, 5 + i] = s
                jj = bodyi[jj, 0]
            # rows of strict descendants d of i: S_d^T (Mc_d Sdot_i - Kc_d S_i)
            for d in range(i + 1, N):
                anc = bodyi[d, 0]
                while anc > i:
                    anc = bodyi[anc, 0]
                if anc != i:
                    continue
                s = 0.0
                for a in range(6):
                    t = 0.0
                    for b in range(6):
                        t += Mc[d, a, b] * Sd[b] - Kc[d, a, b] * Si[b]
                    s += S[d, 0, a] * t
                Cout[5 + d, 5 + i] = s
    if want & 4:
        for a in range(6):
            s = 0.0
            for b in range(6):
                s -= Mc[0, a, b] * G[b]
            gout[a] = s
        for i in range(1, N):
            s = 0.0
            for a in range(6):
                t = 0.0
                for b in range(6):
                    t += Mc[i, a, b] * G[b]
                s -= S[i, 0, a] * t
            gout[5 + i] = s
    return OK


@njit(cache=True)
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
    fact = np.empty(K + 1)
    fact[0] = 1.0
    for k in range(1, K + 1):
        fact[k] = fact[k - 1] * k
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
