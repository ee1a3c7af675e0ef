"""Compiled kernel of :mod:`geodyn_ros.algorithms.reduced`: joint screws and composite inertias in base axes.

With the base pose at the identity the world frame *is* the base frame ``{1}``, so the kernels'
world-axes quantities are the base-frame quantities of Mishra et al.: ``S[j]`` the screw of joint
``j`` (= ``Ad_{1k} J_k`` column, angular first) and ``Mc[i]`` the composite spatial inertia of the
subtree rooted at body ``i`` (``Mc[0] = M_b``, eq. (7)), both at the shape ``q``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .common import _FAST
from .hybrid import _spatial_inertia
from .kinematics import _body_inertia0, _body_pose


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def screws_and_composites(bodyi, bodyf, q, S, Mc):
    """Fill ``S`` (n, 6) joint screws and ``Mc`` (N, 6, 6) subtree composite inertias, base axes.

    Returns 0, or 1 if ``q`` has a non-finite entry (nothing is then guaranteed about the outputs).
    """
    N = bodyi.shape[0]
    for j in range(N - 1):
        if not np.isfinite(q[j]):
            return 1
    R = np.zeros((N, 3, 3))
    P = np.zeros((N, 3))
    Sk = np.zeros((N, 1, 6))
    c = np.empty((N, 1, 3))
    Ic = np.empty((N, 1, 3, 3))
    for a in range(3):
        R[0, a, a] = 1.0
    for i in range(1, N):
        _body_pose(bodyf, bodyi[i, 1], i, bodyi[i, 0], q[i - 1], R, P, Sk)
        for a in range(6):
            S[i - 1, a] = Sk[i, 0, a]
    for i in range(N):
        _body_inertia0(bodyf, i, R, P, c, Ic)
        _spatial_inertia(bodyf[i, 6], c, Ic, i, Mc)
    for i in range(N - 1, 0, -1):
        p = bodyi[i, 0]
        for a in range(6):
            for b in range(6):
                Mc[p, a, b] += Mc[i, a, b]
    return 0
