"""Flat map of a collinear multirotor carrying an arm: from the jets of the system centre of mass,
the base yaw and the joint angles to the base motion, the wrench, the thrust and the torques.
Internal; the public function and the math are in :mod:`geodyn_ros.algorithms.flat`, the
conventions in :mod:`.common`.

Every quantity is a truncated Taylor series (normalised coefficients ``x_k = x^(k) / k!``), so
the normalisation, the square roots, ``sin``/``cos`` of the yaw, the cross products and the
system CoM ``r(q)`` are differentiated exactly by the series recurrences below (no numerical
differentiation). With ``K3 = order + 3`` coefficients of the attitude:

1. ``f = m (c'' - g)``  (coefficients 0..K3-1 from the CoM coefficients 2..order+4);
2. ``T = sqrt(f . f)``, ``z_B = f / T``;
3. ``y_C = (-sin psi, cos psi, 0)``, ``x_B = (y_C x z_B) / |y_C x z_B|``, ``y_B = z_B x x_B``;
4. the spatial angular velocity ``w = 1/2 sum_i col_i x col_i'`` (``R' = hat(w) R``), 0..order+1;
5. ``r(q)``: the system CoM in base axes about the base origin, from a kinematics pass with the
   base at the identity (Alg. 1, joints only);
6. ``p = c - R r(q)`` and the spatial twist ``V = (w, p' + p x w)``, 0..order+1;
7. inverse dynamics of order ``order`` on these coefficients (:func:`.inverse._id_taylor`);
8. the body moment ``n_b = R^T (n - p x f)`` about the base origin, base axes.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange, types

from .common import (_all_finite, _carve, _F1, _F2, _factorials, _FAST, _model_header, _model_views, _NO_TEXT_K,
                     _NO_WEXT_K, ERR_COM_NONFINITE, ERR_FREE_FALL, ERR_GRAVITY_NONFINITE, ERR_Q_NONFINITE,
                     ERR_RESULT_NONFINITE, ERR_SHAPE, ERR_YAW_NONFINITE, ERR_YAW_SINGULAR, OK, work_offset)
from .inverse import _id_taylor, _id_views, _id_work_size
from .kinematics import _com_coeff, _kinematics

#: free fall: ``|c'' - g|`` below this fraction of ``max(|g|, 1 m/s^2)``. The attitude's sensitivity
#: to the CoM acceleration is ``1 / |c'' - g|`` and its k-th derivative grows like ``|c'' - g|^-k``:
#: closer to free fall the jets amplify the rounding of the inputs by more than 1e6.
FREE_FALL_RTOL = 1e-6
#: yaw singularity: ``|y_C x z_B|`` (the sine of the angle between the thrust axis and ``y_C``, a
#: 90 deg roll about the heading) below this value.
YAW_SINGULAR_TOL = 1e-6


# --------------------------------------------------------------------------- series algebra
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _dot_series(a, b, out, K):
    """``out_k = sum_j a_j . b_(k-j)`` for vector series a, b (K, 3)."""
    for k in range(K):
        s = 0.0
        for j in range(k + 1):
            m = k - j
            s += a[j, 0] * b[m, 0] + a[j, 1] * b[m, 1] + a[j, 2] * b[m, 2]
        out[k] = s


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _sqrt_series(s, y, K):
    """``y = sqrt(s)`` (y^2 = s): ``y_0 = sqrt(s_0)``, ``y_k = (s_k - sum_{0<j<k} y_j y_(k-j)) / (2 y_0)``."""
    y0 = np.sqrt(s[0])
    y[0] = y0
    for k in range(1, K):
        acc = s[k]
        for j in range(1, k):
            acc -= y[j] * y[k - j]
        y[k] = acc / (2.0 * y0)


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _div_series(a, y, out, K):
    """``out = a / y`` for a vector series a (K, 3) and a scalar series y (y_0 != 0)."""
    inv = 1.0 / y[0]
    for k in range(K):
        for c in range(3):
            acc = a[k, c]
            for j in range(1, k + 1):
                acc -= y[j] * out[k - j, c]
            out[k, c] = acc * inv


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _cross_series(a, b, out, K):
    """``out_k = sum_j a_j x b_(k-j)`` for vector series (K, 3)."""
    for k in range(K):
        x0 = x1 = x2 = 0.0
        for j in range(k + 1):
            m = k - j
            x0 += a[j, 1] * b[m, 2] - a[j, 2] * b[m, 1]
            x1 += a[j, 2] * b[m, 0] - a[j, 0] * b[m, 2]
            x2 += a[j, 0] * b[m, 1] - a[j, 1] * b[m, 0]
        out[k, 0] = x0
        out[k, 1] = x1
        out[k, 2] = x2


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _sincos_series(x, s, c, K):
    """``s = sin(x)``, ``c = cos(x)``: ``k s_k = sum_{j=1..k} j x_j c_(k-j)``, ``k c_k = -sum j x_j s_(k-j)``."""
    s[0] = np.sin(x[0])
    c[0] = np.cos(x[0])
    for k in range(1, K):
        a = 0.0
        b = 0.0
        for j in range(1, k + 1):
            a += j * x[j] * c[k - j]
            b += j * x[j] * s[k - j]
        s[k] = a / k
        c[k] = -b / k


# --------------------------------------------------------------------------- work buffer
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _flat_work_size(N, n, order):
    """Length of the flat map's work region: the inverse-dynamics region, then the flat one."""
    K3 = order + 3
    return _id_work_size(N, n, order) + (order + 6) + 3 * (order + 5) + 30 * K3 + 6 * K3


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _flat_views(ws, o, order):
    """(fct, ct, pt, f, T, z, sp, cp, yc, u, nu, x, y, w, rq, p, e, s) of the flat region at ``o``."""
    K3 = order + 3
    fct = _carve(ws, o, order + 6)
    o += order + 6
    ct = _carve(ws, o, (order + 5, 3))
    o += 3 * (order + 5)
    f = _carve(ws, o, (K3, 3))
    z = _carve(ws, o + 3 * K3, (K3, 3))
    yc = _carve(ws, o + 6 * K3, (K3, 3))
    u = _carve(ws, o + 9 * K3, (K3, 3))
    x = _carve(ws, o + 12 * K3, (K3, 3))
    y = _carve(ws, o + 15 * K3, (K3, 3))
    w = _carve(ws, o + 18 * K3, (K3, 3))
    rq = _carve(ws, o + 21 * K3, (K3, 3))
    p = _carve(ws, o + 24 * K3, (K3, 3))
    e = _carve(ws, o + 27 * K3, (K3, 3))
    o += 30 * K3
    pt = _carve(ws, o, K3)
    T = _carve(ws, o + K3, K3)
    sp = _carve(ws, o + 2 * K3, K3)
    cp = _carve(ws, o + 3 * K3, K3)
    nu = _carve(ws, o + 4 * K3, K3)
    s = _carve(ws, o + 5 * K3, K3)
    return fct, ct, pt, f, T, z, sp, cp, yc, u, nu, x, y, w, rq, p, e, s


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def flat_workspace(bodyi, bodyf, order, g):
    """Work buffer of :func:`flat_map_ws`: model header, gravity and both factorial tables filled in."""
    N = bodyi.shape[0]
    n = N - 1
    ws, o = _model_header(bodyi, bodyf, _flat_work_size(N, n, order))
    gv, fact = _id_views(ws, o, N, n, order)[:2]
    for a in range(3):
        gv[a] = g[a]
    f = _factorials(order + 6)
    for k in range(order + 4):
        fact[k] = f[k]
    fct = _flat_views(ws, o + _id_work_size(N, n, order), order)[0]
    for k in range(order + 6):
        fct[k] = f[k]
    return ws


# --------------------------------------------------------------------------- the map
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _flat_core(bodyi, bodyf, cd, psid, qd, order, g, out_C, out_V, out_q, out_w, out_tau, out_T, out_tb, ws, o):
    """The flat map (module docstring) of one sample in the work buffer ``ws`` (region at ``o``).

    cd (>= order+5, 3) CoM derivatives (world), psid (>= order+3,) yaw derivatives, qd
    (>= order+3, n) joint derivatives, g (3,) gravity. Writes out_C (4, 4) base pose, out_V
    (order+2, 6) spatial twist derivatives, out_q (order+3, n), out_w (order+1, 6) spatial base
    wrench, out_tau (order+1, n), out_T (order+1,) thrust, out_tb (order+1, 3) body moment about the
    base origin in base axes. Returns an error code.
    """
    N = bodyi.shape[0]
    n = N - 1
    K = order + 2
    K3 = order + 3
    if not _all_finite(cd, order + 5):
        return ERR_COM_NONFINITE
    for k in range(K3):
        if not np.isfinite(psid[k]):
            return ERR_YAW_NONFINITE
    if n > 0 and not _all_finite(qd, K3):
        return ERR_Q_NONFINITE
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    Vt, qt, R, P, S, V, W, c = _id_views(ws, o, N, n, order)[2:10]
    fct, ct, pt, f, T, z, sp, cp, yc, u, nu, x, y, w, rq, p, e, s = _flat_views(ws, o + _id_work_size(N, n, order),
                                                                                order)
    mtot = 0.0
    for i in range(N):
        mtot += bodyf[i, 6]
    # Taylor coefficients of the inputs
    for k in range(order + 5):
        inv = 1.0 / fct[k]
        for a in range(3):
            ct[k, a] = cd[k, a] * inv
    for k in range(K3):
        inv = 1.0 / fct[k]
        pt[k] = psid[k] * inv
        for j in range(n):
            qt[k, j] = qd[k, j] * inv

    # 1-2. thrust vector, thrust and thrust axis
    for k in range(K3):
        sc = mtot * (k + 1.0) * (k + 2.0)
        for a in range(3):
            f[k, a] = sc * ct[k + 2, a]
    for a in range(3):
        f[0, a] -= mtot * g[a]
    _dot_series(f, f, s, K3)
    _sqrt_series(s, T, K3)
    gn = max(np.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]), 1.0)
    if not T[0] > FREE_FALL_RTOL * mtot * gn:
        return ERR_FREE_FALL
    _div_series(f, T, z, K3)
    # 3. attitude from the Z-Y-X yaw
    _sincos_series(pt, sp, cp, K3)
    for k in range(K3):
        yc[k, 0] = -sp[k]
        yc[k, 1] = cp[k]
        yc[k, 2] = 0.0
    _cross_series(yc, z, u, K3)
    _dot_series(u, u, s, K3)
    _sqrt_series(s, nu, K3)
    if not nu[0] > YAW_SINGULAR_TOL:
        return ERR_YAW_SINGULAR
    _div_series(u, nu, x, K3)
    _cross_series(z, x, y, K3)
    # 4. spatial angular velocity w = 1/2 sum_i col_i x col_i'  (coefficients 0..K-1)
    for k in range(K):
        w0 = w1 = w2 = 0.0
        for j in range(k + 1):
            m = k - j + 1
            for col in (x, y, z):
                a0, a1, a2 = col[j, 0], col[j, 1], col[j, 2]
                b0, b1, b2 = m * col[m, 0], m * col[m, 1], m * col[m, 2]
                w0 += a1 * b2 - a2 * b1
                w1 += a2 * b0 - a0 * b2
                w2 += a0 * b1 - a1 * b0
        w[k, 0] = 0.5 * w0
        w[k, 1] = 0.5 * w1
        w[k, 2] = 0.5 * w2
    # 5. r(q): kinematics with the base at the identity and at rest (joint motion only)
    for a in range(4):
        for b in range(4):
            out_C[a, b] = 1.0 if a == b else 0.0
    for k in range(K):
        for a in range(6):
            Vt[k, a] = 0.0
    _kinematics(bodyi, bodyf, out_C, Vt, qt, K, R, P, S, V)
    for k in range(K3):
        for a in range(3):
            rq[k, a] = 0.0
    for i in range(N):
        mi = bodyf[i, 6]
        for a in range(3):
            c[i, 0, a] = P[i, a] + R[i, a, 0] * bodyf[i, 7] + R[i, a, 1] * bodyf[i, 8] + R[i, a, 2] * bodyf[i, 9]
        for k in range(1, K3):
            _com_coeff(c, V, i, k, True)
        for k in range(K3):
            for a in range(3):
                rq[k, a] += mi * c[i, k, a]
    for k in range(K3):
        for a in range(3):
            rq[k, a] /= mtot
    # 6. base position p = c - R r(q) and the spatial twist V = (w, p' + p x w)
    for k in range(K3):
        for a in range(3):
            acc = ct[k, a]
            for j in range(k + 1):
                m = k - j
                acc -= x[j, a] * rq[m, 0] + y[j, a] * rq[m, 1] + z[j, a] * rq[m, 2]
            p[k, a] = acc
    for k in range(K):
        v0 = (k + 1.0) * p[k + 1, 0]
        v1 = (k + 1.0) * p[k + 1, 1]
        v2 = (k + 1.0) * p[k + 1, 2]
        for j in range(k + 1):
            m = k - j
            v0 += p[j, 1] * w[m, 2] - p[j, 2] * w[m, 1]
            v1 += p[j, 2] * w[m, 0] - p[j, 0] * w[m, 2]
            v2 += p[j, 0] * w[m, 1] - p[j, 1] * w[m, 0]
        Vt[k, 0] = w[k, 0]
        Vt[k, 1] = w[k, 1]
        Vt[k, 2] = w[k, 2]
        Vt[k, 3] = v0
        Vt[k, 4] = v1
        Vt[k, 5] = v2
    for a in range(3):
        out_C[a, 0] = x[0, a]
        out_C[a, 1] = y[0, a]
        out_C[a, 2] = z[0, a]
        out_C[a, 3] = p[0, a]
    # 7. inverse dynamics on the coefficients (the base's subtree wrench stays in W[0])
    _id_taylor(bodyi, bodyf, out_C, order, g, _NO_WEXT_K, _NO_TEXT_K, out_w, out_tau, ws, o)
    # 8. body moment about the base origin: n_b = R^T (n - p x f)
    for k in range(order + 1):
        e0, e1, e2 = W[0, k, 0], W[0, k, 1], W[0, k, 2]
        for j in range(k + 1):
            m = k - j
            e0 -= p[j, 1] * W[0, m, 5] - p[j, 2] * W[0, m, 4]
            e1 -= p[j, 2] * W[0, m, 3] - p[j, 0] * W[0, m, 5]
            e2 -= p[j, 0] * W[0, m, 4] - p[j, 1] * W[0, m, 3]
        e[k, 0] = e0
        e[k, 1] = e1
        e[k, 2] = e2
    for k in range(order + 1):
        b0 = b1 = b2 = 0.0
        for j in range(k + 1):
            m = k - j
            b0 += x[j, 0] * e[m, 0] + x[j, 1] * e[m, 1] + x[j, 2] * e[m, 2]
            b1 += y[j, 0] * e[m, 0] + y[j, 1] * e[m, 1] + y[j, 2] * e[m, 2]
            b2 += z[j, 0] * e[m, 0] + z[j, 1] * e[m, 1] + z[j, 2] * e[m, 2]
        fk = fct[k]
        out_tb[k, 0] = b0 * fk
        out_tb[k, 1] = b1 * fk
        out_tb[k, 2] = b2 * fk
        out_T[k] = T[k] * fk
    # outputs as derivatives
    for k in range(K):
        fk = fct[k]
        for a in range(6):
            out_V[k, a] = Vt[k, a] * fk
    for k in range(K3):
        for j in range(n):
            out_q[k, j] = qd[k, j]
    for k in range(order + 1):
        if not np.isfinite(out_T[k]):
            return ERR_RESULT_NONFINITE
        for a in range(3):
            if not np.isfinite(out_tb[k, a]):
                return ERR_RESULT_NONFINITE
        for a in range(6):
            if not np.isfinite(out_w[k, a]):
                return ERR_RESULT_NONFINITE
        for j in range(n):
            if not np.isfinite(out_tau[k, j]):
                return ERR_RESULT_NONFINITE
    for k in range(K):
        for a in range(6):
            if not np.isfinite(out_V[k, a]):
                return ERR_RESULT_NONFINITE
    return OK


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def flat_map(bodyi, bodyf, cd, psid, qd, order, g, out_C, out_V, out_q, out_w, out_tau, out_T, out_tb):
    """General entry of :func:`_flat_core` (any gravity; makes its own work buffer)."""
    ws = flat_workspace(bodyi, bodyf, order, g)
    return _flat_core(bodyi, bodyf, cd, psid, qd, order, g, out_C, out_V, out_q, out_w, out_tau, out_T, out_tb,
                      ws, work_offset(bodyi.shape[0]))


@njit(types.int64(_F1, _F2, _F1, _F2, types.int64, _F2, _F2, _F2, _F2, _F2, _F1, _F2), cache=True,
      error_model="numpy", fastmath=_FAST)
def flat_map_ws(ws, cd, psid, qd, order, out_C, out_V, out_q, out_w, out_tau, out_T, out_tb):
    """Hot-path entry over a buffer from :func:`flat_workspace` (C-contiguous float64 arrays; the
    caller converts anything else once). Returns ERR_SHAPE on a shape mismatch."""
    N, bodyi, bodyf, o = _model_views(ws)
    n = N - 1
    if not (cd.shape[0] >= order + 5 and cd.shape[1] == 3 and psid.shape[0] >= order + 3
            and qd.shape[0] >= order + 3 and qd.shape[1] == n and out_C.shape[0] == 4 and out_C.shape[1] == 4
            and out_V.shape[0] == order + 2 and out_V.shape[1] == 6 and out_q.shape[0] == order + 3
            and out_q.shape[1] == n and out_w.shape[0] == order + 1 and out_w.shape[1] == 6
            and out_tau.shape[0] == order + 1 and out_tau.shape[1] == n and out_T.shape[0] == order + 1
            and out_tb.shape[0] == order + 1 and out_tb.shape[1] == 3):
        return ERR_SHAPE
    return _flat_core(bodyi, bodyf, cd, psid, qd, order, _carve(ws, o, 3), out_C, out_V, out_q, out_w, out_tau,
                      out_T, out_tb, ws, o)


@njit(cache=True, parallel=True, error_model="numpy", fastmath=_FAST)
def flat_map_batch(bodyi, bodyf, cd, psid, qd, order, g, out_C, out_V, out_q, out_w, out_tau, out_T, out_tb,
                   nchunks):
    """Samples ``t`` of cd (T, >= order+5, 3), psid (T, >= order+3), qd (T, >= order+3, n) in
    ``nchunks`` parallel chunks (one work buffer each), outputs with the same leading axis.
    Returns ``(code, t)`` of the first error (``(OK, -1)`` on success)."""
    nt = cd.shape[0]
    N = bodyi.shape[0]
    codes = np.zeros(nchunks, np.int64)
    where = np.full(nchunks, -1, np.int64)
    for ch in prange(nchunks):
        ws = flat_workspace(bodyi, bodyf, order, g)
        o = work_offset(N)
        for t in range(ch * nt // nchunks, (ch + 1) * nt // nchunks):
            code = _flat_core(bodyi, bodyf, cd[t], psid[t], qd[t], order, g, out_C[t], out_V[t], out_q[t],
                              out_w[t], out_tau[t], out_T[t], out_tb[t], ws, o)
            if code != OK:
                codes[ch] = code
                where[ch] = t
                break
    for ch in range(nchunks):
        if codes[ch] != OK:
            return codes[ch], where[ch]
    return OK, -1
