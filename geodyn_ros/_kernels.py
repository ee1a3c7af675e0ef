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
from numba import carray, njit, types
from numba.extending import intrinsic

#: LLVM fast-math flags of every kernel: fused multiply-add, reassociation, reciprocal
#: multiplication and signed-zero freedom. Not "nnan"/"ninf": the kernels test isfinite().
_FAST = {"contract", "reassoc", "arcp", "nsz"}

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
ERR_SHAPE = 13   #: hot-path entries only: shapes do not match (caller re-validates)

RIGID_TOL = 1e-6
SINGULAR_RTOL = 1e-12   #: articulated joint inertia below this fraction of the largest one: singular


# --------------------------------------------------------------------------- checks
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _all_finite(a, nrows):
    for i in range(nrows):
        for j in range(a.shape[1]):
            if not np.isfinite(a[i, j]):
                return False
    return True


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
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


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _check_state0(C, V0, q, qdot, g):
    """Order-0 state checks shared by the closed-form and derivative kernels: a finite rigid
    pose, finite base twist (6,), joint positions and rates (n,) and gravity (3,)."""
    code = _check_pose(C)
    if code != OK:
        return code
    for a in range(6):
        if not np.isfinite(V0[a]):
            return ERR_TWIST_NONFINITE
    for j in range(q.shape[0]):
        if not (np.isfinite(q[j]) and np.isfinite(qdot[j])):
            return ERR_Q_NONFINITE
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    return OK


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _check_common(g, wext, text, order):
    """Finite gravity, applied wrenches and external torques in the rows a call uses."""
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    for i in range(wext.shape[0]):
        if not _all_finite(wext[i], order + 1):
            return ERR_EXTW_NONFINITE
    if text.shape[0] > 0 and text.shape[1] > 0 and not _all_finite(text, order + 1):
        return ERR_EXTT_NONFINITE
    return OK


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _factorials(m):
    """k! for k = 0..m-1 (scales derivatives to and from Taylor coefficients)."""
    fact = np.empty(m)
    fact[0] = 1.0
    for k in range(1, m):
        fact[k] = fact[k - 1] * k
    return fact


# --------------------------------------------------------------------------- small algebra
# Helpers take whole arrays plus indices (no sub-array views: views are refcounted objects
# in numba and dominated the run time of small models) and return scalars/tuples.
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _cross(a0, a1, a2, b0, b1, b2):
    """a x b as a tuple."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


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


# --------------------------------------------------------------------------- inverse dynamics
# Work arrays live in one flat float64 buffer per (model, order) (Pinocchio's "data"): the
# per-call path allocates nothing. ``_id_views`` carves it; the layout is fixed by (N, n, order).
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _id_work_size(N, n, order):
    """Length of the inverse-dynamics work region of a work buffer (after the model header)."""
    K = order + 2
    r1 = order + 1
    return (3 + (K + 2) + K * 6 + (K + 1) * n + N * 12 + 2 * N * K * 6 + N * r1 * 6
            + N * (K + 1) * 3 + N * r1 * 9 + 2 * N * r1 * 3)


@intrinsic
def _f64_ptr(typingctx, addr):
    """Cast an address (uintp) to a float64 pointer (for :func:`_carve`)."""
    sig = types.CPointer(types.float64)(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))
    return sig, codegen


@intrinsic
def _i64_ptr(typingctx, addr):
    """Cast an address (uintp) to an int64 pointer (the model's int table inside a work buffer)."""
    sig = types.CPointer(types.int64)(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.int64)))
    return sig, codegen


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _carve(ws, o, shape):
    """View of ``ws[o:o + prod(shape)]`` with ``shape``, made without a reference-counted owner
    (numba would otherwise count references on every use of every work array; the caller keeps
    ``ws`` alive for the duration of the kernel)."""
    return carray(_f64_ptr(ws.ctypes.data + 8 * o), shape)


# A work buffer starts with a copy of the model: ``[N, bodyi (2N int64 bits), bodyf (19N)]``,
# so the hot-path entries take one array for model and workspace (fewer arguments to dispatch).
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def work_offset(N):
    """Offset of the work region in a buffer made by :func:`_model_header` (N bodies)."""
    return 1 + 21 * N


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _model_header(bodyi, bodyf, work):
    """A work buffer holding the model header followed by ``work`` floats; returns (ws, offset)."""
    N = bodyi.shape[0]
    o = work_offset(N)
    ws = np.empty(o + work)
    ws[0] = N
    bi = carray(_i64_ptr(ws.ctypes.data + 8), (N, 2))
    bf = _carve(ws, 1 + 2 * N, (N, 19))
    for i in range(N):
        bi[i, 0] = bodyi[i, 0]
        bi[i, 1] = bodyi[i, 1]
        for a in range(19):
            bf[i, a] = bodyf[i, a]
    return ws, o


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _model_views(ws):
    """(N, bodyi, bodyf, offset of the work region) of a work buffer made by :func:`_model_header`."""
    N = int(ws[0])
    bodyi = carray(_i64_ptr(ws.ctypes.data + 8), (N, 2))
    bodyf = _carve(ws, 1 + 2 * N, (N, 19))
    return N, bodyi, bodyf, work_offset(N)


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _id_views(ws, o, N, n, order):
    """(g, fact, Vt, qt, R, P, S, V, W, c, I, L, fm) views of the work region starting at ``o``."""
    K = order + 2
    r1 = order + 1
    g = _carve(ws, o, 3)
    o += 3
    fact = _carve(ws, o, K + 2)
    o += K + 2
    Vt = _carve(ws, o, (K, 6))
    o += K * 6
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
    W = _carve(ws, o, (N, r1, 6))
    o += N * r1 * 6
    c = _carve(ws, o, (N, K + 1, 3))
    o += N * (K + 1) * 3
    I = _carve(ws, o, (N, r1, 3, 3))
    o += N * r1 * 9
    L = _carve(ws, o, (N, r1, 3))
    o += N * r1 * 3
    fm = _carve(ws, o, (N, r1, 3))
    return g, fact, Vt, qt, R, P, S, V, W, c, I, L, fm


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def id_workspace(bodyi, bodyf, order, g):
    """Work buffer of :func:`inverse_dynamics_ws`: model header, gravity ``g`` and factorials filled in."""
    N = bodyi.shape[0]
    ws, o = _model_header(bodyi, bodyf, _id_work_size(N, N - 1, order))
    gv, fact = _id_views(ws, o, N, N - 1, order)[:2]
    for a in range(3):
        gv[a] = g[a]
    f = _factorials(order + 4)
    for k in range(order + 4):
        fact[k] = f[k]
    return ws


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _id_shapes_ok(N, C, Vd, qd, order, out_w, out_tau):
    n = N - 1
    return (C.shape[0] == 4 and C.shape[1] == 4 and Vd.shape[0] >= order + 2 and Vd.shape[1] == 6
            and qd.shape[0] >= order + 3 and qd.shape[1] == n and out_w.shape[0] == order + 1
            and out_w.shape[1] == 6 and out_tau.shape[0] == order + 1 and out_tau.shape[1] == n)


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _id_core(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau, ws, o):
    """H-GRNE-FBS (Algorithms 1 and 2, Appendix E) at any order, in the work buffer ``ws``.

    Vd (>= order+2, 6) base spatial twist derivatives, qd (>= order+3, n) joint derivatives,
    g (3,) gravity, wext (N, >= order+1, 6) applied spatial wrench derivatives per body (or
    shape (0, 0, 6)), text (>= order+1, n) external joint torque derivatives (or (0, n)).
    Writes out_w (order+1, 6) base wrench derivatives and out_tau (order+1, n) joint torques.
    Returns an error code.
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
    code = _check_common(g, wext, text, order)
    if code != OK:
        return code
    has_wext = wext.shape[0] > 0
    has_text = text.shape[0] > 0
    _, fact, Vt, qt, R, P, S, V, W, c, I, L, fm = _id_views(ws, o, N, n, order)

    # Taylor coefficients of the inputs
    for k in range(K):
        inv = 1.0 / fact[k]
        for a in range(6):
            Vt[k, a] = Vd[k, a] * inv
    for k in range(K + 1):
        inv = 1.0 / fact[k]
        for j in range(n):
            qt[k, j] = qd[k, j] * inv
    _kinematics(bodyi, bodyf, C, Vt, qt, K, R, P, S, V)

    # per-body Newton-Euler wrench coefficients 0..order (subtree sums accumulate in W)
    for i in range(N):
        m = bodyf[i, 6]
        _body_inertia0(bodyf, i, R, P, c, I)
        for k in range(1, K + 1):
            _com_coeff(c, V, i, k, True)
        for k in range(1, order + 1):
            _inertia_coeff(I, V, i, k)
        for k in range(order + 1):
            _angmom_coeff(L, I, V, i, k)
        for k in range(order + 1):
            _fm_coeff(fm, c, m, g, i, k)
        for k in range(order + 1):
            n0, n1, n2, f0, f1, f2 = _wrench_coeff(c, I, L, V, fm, i, k, 0)
            W[i, k, 0] = n0
            W[i, k, 1] = n1
            W[i, k, 2] = n2
            W[i, k, 3] = f0
            W[i, k, 4] = f1
            W[i, k, 5] = f2
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


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def inverse_dynamics(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau):
    """General entry of :func:`_id_core` (any gravity, applied wrenches, external torques)."""
    ws = id_workspace(bodyi, bodyf, order, g)
    o = work_offset(bodyi.shape[0])
    return _id_core(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau, ws, o)


_NO_WEXT_K = np.zeros((0, 0, 6))   # "no applied wrenches" / "no external torques" (compile-time constants)
_NO_TEXT_K = np.zeros((0, 0))
_F1 = types.float64[::1]
_F2 = types.float64[:, ::1]


#: read-only float64 array of any layout (C, Fortran, strided; writeable arrays convert to it):
#: the second signature of each hot-path entry, so that every float64 array of the right number
#: of dimensions is dispatched by numba's type match, never by a failed dispatch (TypeError).
_A2 = types.Array(types.float64, 2, "A", readonly=True)


def _hot_sigs(n_in, tail):
    """[C-contiguous inputs, any-layout inputs] signatures of a hot-path entry: the work buffer,
    ``n_in`` 2-D float64 inputs, then ``tail`` (order, outputs)."""
    return [types.int64(_F1, *([x] * n_in), *tail) for x in (_F2, _A2)]


@njit(_hot_sigs(3, (types.int64, _F2, _F2)), cache=True, error_model="numpy", fastmath=_FAST)
def inverse_dynamics_ws(ws, C, Vd, qd, order, out_w, out_tau):
    """Hot-path entry over a buffer from :func:`id_workspace` (model, gravity and work arrays):
    no applied wrenches or external torques, float64 inputs of any layout (other dtypes do not
    match the signatures: the caller converts them first). Returns ERR_SHAPE on a
    shape mismatch. Not re-entrant on one buffer (calls hold the GIL)."""
    N, bodyi, bodyf, o = _model_views(ws)
    if not _id_shapes_ok(N, C, Vd, qd, order, out_w, out_tau):
        return ERR_SHAPE
    return _id_core(bodyi, bodyf, C, Vd, qd, order, _carve(ws, o, 3), _NO_WEXT_K, _NO_TEXT_K,
                    out_w, out_tau, ws, o)


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


# --------------------------------------------------------------------------- lean entries
# For :class:`geodyn_ros.Workspace`: the outputs live at the end of the work buffer (the Python
# side holds views of them), so a call passes only the buffer, the inputs and the order.
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def id_into_size(N, order):
    """Length of a lean inverse-dynamics buffer: :func:`id_workspace`, then out_w, out_tau."""
    n = N - 1
    return work_offset(N) + _id_work_size(N, n, order) + (order + 1) * (6 + n)


@njit(_hot_sigs(3, (types.int64,)), cache=True, error_model="numpy", fastmath=_FAST)
def inverse_dynamics_into(ws, C, Vd, qd, order):
    """:func:`inverse_dynamics_ws` writing into ``out_w`` (order+1, 6) and ``out_tau``
    (order+1, n) at the end of ``ws`` (length :func:`id_into_size`). ERR_SHAPE on a mismatch."""
    N, bodyi, bodyf, o = _model_views(ws)
    n = N - 1
    if ws.shape[0] != id_into_size(N, order):
        return ERR_SHAPE
    e = o + _id_work_size(N, n, order)
    out_w = _carve(ws, e, (order + 1, 6))
    out_tau = _carve(ws, e + (order + 1) * 6, (order + 1, n))
    if not _id_shapes_ok(N, C, Vd, qd, order, out_w, out_tau):
        return ERR_SHAPE
    return _id_core(bodyi, bodyf, C, Vd, qd, order, _carve(ws, o, 3), _NO_WEXT_K, _NO_TEXT_K,
                    out_w, out_tau, ws, o)


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


# --------------------------------------------------------------------------- closed-form EoM
@njit(cache=True, error_model="numpy", fastmath=_FAST)
def eom_terms(bodyi, bodyf, C, V0, q, qdot, g, want, Mout, Cout, gout):
    """Closed-form EoM blocks (Prop. 1, Lemma 1) with nu = (V_base spatial, qdot).

    want: bit 1 mass matrix (CRBA on composite spatial inertias), bit 2 Coriolis matrix
    C = sum_j J_j^T (M_j Jdot_j - ad_{V_j}^T M_j J_j) (Lemma 1), bit 4 gravity vector
    g = -sum_j J_j^T M_j G. Returns an error code.
    """
    N = bodyi.shape[0]
    n = N - 1
    code = _check_state0(C, V0, q, qdot, g)
    if code != OK:
        return code
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
    c = np.empty((N, 1, 3))
    I = np.empty((N, 1, 3, 3))
    for i in range(N):
        _body_inertia0(bodyf, i, R, P, c, I)
        _spatial_inertia(bodyf[i, 6], c, I, i, Mc)
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
            # Sdot_i = ad_{V_p} S_i
            w0, w1, w2, v0, v1, v2 = V[p, 0, 0], V[p, 0, 1], V[p, 0, 2], V[p, 0, 3], V[p, 0, 4], V[p, 0, 5]
            x0, x1, x2, y0, y1, y2 = Si[0], Si[1], Si[2], Si[3], Si[4], Si[5]
            Sd[0] = w1 * x2 - w2 * x1
            Sd[1] = w2 * x0 - w0 * x2
            Sd[2] = w0 * x1 - w1 * x0
            Sd[3] = v1 * x2 - v2 * x1 + w1 * y2 - w2 * y1
            Sd[4] = v2 * x0 - v0 * x2 + w2 * y0 - w0 * y2
            Sd[5] = v0 * x1 - v1 * x0 + w0 * y1 - w1 * y0
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
