"""Compiled trajectory (batch) entries: the single-sample kernels of :mod:`.inverse` and :mod:`.hybrid`
run over a leading time axis, split into contiguous chunks evaluated in parallel (numba
``prange``, one work buffer per chunk). Internal module; see :mod:`geodyn_ros.algorithms.batch`.

Every entry returns ``(code, t)``: the first error code met and the sample it was met at
(``(0, -1)`` on success). Chunks stop at their first error.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import common as K
from . import hybrid as KH
from . import inverse as KI


@njit(cache=True, error_model="numpy")
def _first_error(codes, where):
    """(code, sample) of the first chunk that stopped on an error, else (OK, -1)."""
    for ch in range(codes.shape[0]):
        if codes[ch] != K.OK:
            return codes[ch], where[ch]
    return K.OK, -1


@njit(cache=True, parallel=True, error_model="numpy", fastmath=K._FAST)
def inverse_dynamics_batch(bodyi, bodyf, C, Vd, qd, order, g, wext, text, out_w, out_tau, nchunks):
    """C (T, 4, 4), Vd (T, >= order+2, 6), qd (T, >= order+3, n); wext (T, N, >= order+1, 6) or
    (0, 0, 0, 6); text (T, >= order+1, n) or (0, 0, 0). Writes out_w (T, order+1, 6) and
    out_tau (T, order+1, n)."""
    T = C.shape[0]
    N = bodyi.shape[0]
    codes = np.zeros(nchunks, np.int64)
    where = np.full(nchunks, -1, np.int64)
    for ch in prange(nchunks):
        ws = KI.id_workspace(bodyi, bodyf, order, g)
        o = K.work_offset(N)
        for t in range(ch * T // nchunks, (ch + 1) * T // nchunks):
            we = wext[t] if wext.shape[0] > 0 else wext[0:0, 0]
            te = text[t] if text.shape[0] > 0 else text[0:0, 0]
            code = KI._id_core(bodyi, bodyf, C[t], Vd[t], qd[t], order, g, we, te, out_w[t], out_tau[t],
                              ws, o)
            if code != K.OK:
                codes[ch] = code
                where[ch] = t
                break
    return _first_error(codes, where)


@njit(cache=True, parallel=True, error_model="numpy", fastmath=K._FAST)
def forward_dynamics_batch(bodyi, bodyf, C, Vd, qd, wd, taud, order, g, wext, text, out_V, out_q,
                           nchunks):
    """C (T, 4, 4), Vd (T, >= 1, 6), qd (T, >= 2, n), wd (T, >= order+1, 6), taud
    (T, >= order+1, n); wext/text as in :func:`inverse_dynamics_batch`. Writes out_V
    (T, order+2, 6) and out_q (T, order+3, n)."""
    T = C.shape[0]
    N = bodyi.shape[0]
    n = N - 1
    codes = np.zeros(nchunks, np.int64)
    where = np.full(nchunks, -1, np.int64)
    for ch in prange(nchunks):
        ws = KH.fd_workspace(bodyi, bodyf, order, g)
        o = K.work_offset(N)
        # all-free joint mask and the (unused) echoed wrench/torque outputs live in the buffer
        presc, ow, ot = KH._fd_hot_views(ws, o, N, n, order)[1:]
        for t in range(ch * T // nchunks, (ch + 1) * T // nchunks):
            we = wext[t] if wext.shape[0] > 0 else wext[0:0, 0]
            te = text[t] if text.shape[0] > 0 else text[0:0, 0]
            code = KH._hybrid_core(bodyi, bodyf, C[t], Vd[t], qd[t], wd[t], taud[t], order, g, we, te,
                                  presc, True, out_V[t], out_q[t], ow, ot, ws, o)
            if code != K.OK:
                codes[ch] = code
                where[ch] = t
                break
    return _first_error(codes, where)
