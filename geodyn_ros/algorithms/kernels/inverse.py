"""Inverse dynamics kernels (paper Alg. 1-2, App. E): work buffers, the general entry, the hot-path
entry and the lean entry of :class:`geodyn_ros.Workspace`. Internal; conventions in :mod:`.common`."""
from __future__ import annotations

from numba import njit, types

from .common import (_all_finite, _carve, _check_common, _check_pose, ERR_Q_NONFINITE, ERR_SHAPE,
                     ERR_TWIST_NONFINITE, _as_f64, _F2, _f32_sigs, _factorials, _FAST, _hot_sigs, _model_header, _model_views,
                     _NO_TEXT_K, _NO_WEXT_K, OK, work_offset)
from .kinematics import (_angmom_coeff, _body_inertia0, _com_coeff, _fm_coeff, _inertia_coeff, _kinematics,
                         _wrench_coeff)


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
    _, fact, Vt, qt = _id_views(ws, o, N, n, order)[:4]
    # Taylor coefficients of the inputs
    for k in range(K):
        inv = 1.0 / fact[k]
        for a in range(6):
            Vt[k, a] = Vd[k, a] * inv
    for k in range(K + 1):
        inv = 1.0 / fact[k]
        for j in range(n):
            qt[k, j] = qd[k, j] * inv
    _id_taylor(bodyi, bodyf, C, order, g, wext, text, out_w, out_tau, ws, o)
    return OK


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _id_taylor(bodyi, bodyf, C, order, g, wext, text, out_w, out_tau, ws, o):
    """The recursion of :func:`_id_core` once the inputs are checked and the Taylor coefficients
    ``Vt`` (order+2, 6) and ``qt`` (order+3, n) of the work buffer are filled in (also the entry of
    the flat map, :mod:`.flat`, which builds them itself). Leaves the base's subtree wrench
    coefficients in ``W[0]`` of the buffer."""
    N = bodyi.shape[0]
    n = N - 1
    K = order + 2
    has_wext = wext.shape[0] > 0
    has_text = text.shape[0] > 0
    _, fact, Vt, qt, R, P, S, V, W, c, I, L, fm = _id_views(ws, o, N, n, order)
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


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def inverse_dynamics(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau):
    """General entry of :func:`_id_core` (any gravity, applied wrenches, external torques)."""
    ws = id_workspace(bodyi, bodyf, order, g)
    o = work_offset(bodyi.shape[0])
    return _id_core(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau, ws, o)


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


# --------------------------------------------------------------------------- float32 twins
# float32 inputs (every one, or only q) copied to float64 inside the compiled call, then the entry
# above: the same bits as converting first, without a numpy conversion per argument in Python
# (0.25 us each, as much as the whole lean call at order 0; bench/core/bench_layouts.py).
@njit(_f32_sigs(3, (types.int64, _F2, _F2)), cache=True, error_model="numpy", fastmath=_FAST)
def inverse_dynamics_ws32(ws, C, Vd, qd, order, out_w, out_tau):
    """:func:`inverse_dynamics_ws` of float32 inputs (:func:`~.common._f32_sigs`)."""
    return inverse_dynamics_ws(ws, _as_f64(C), _as_f64(Vd), _as_f64(qd), order, out_w, out_tau)


@njit(_f32_sigs(3, (types.int64,)), cache=True, error_model="numpy", fastmath=_FAST)
def inverse_dynamics_into32(ws, C, Vd, qd, order):
    """:func:`inverse_dynamics_into` of float32 inputs (:func:`~.common._f32_sigs`)."""
    return inverse_dynamics_into(ws, _as_f64(C), _as_f64(Vd), _as_f64(qd), order)
