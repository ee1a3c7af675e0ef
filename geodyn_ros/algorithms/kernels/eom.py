"""Closed-form equations-of-motion terms (mass matrix, Coriolis matrix, gravity vector).
Internal; conventions in :mod:`.common`."""
from __future__ import annotations

import numpy as np
from numba import njit

from .common import (_check_state0, _FAST, OK)
from .kinematics import (_body_inertia0, _kinematics)
from .hybrid import (_spatial_inertia)


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
