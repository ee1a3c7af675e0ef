"""The flat map over many samples on one thread (a numba loop over the flat kernel's core).

``gd.flat_inverse_dynamics`` with a leading time axis runs its samples in numba's thread pool. A
planner check evaluates a few hundred samples many times (time scaling, refinement), often in a
node's callback on a machine whose cores are busy: there the pool's start-up costs ~20 ms per call
whatever the size (measured with both cores loaded, ``bench/loops/bench_planning.py``), against ~3 us per
sample on one thread. This loop is that one thread. Same kernel (:mod:`geodyn_ros.algorithms.kernels.flat`),
same outputs and error codes as the batch path; models with enforced mimic joints go to the public
batch path.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..algorithms.dynamics import _G0
from ..algorithms.flat import FlatResult, _message, flat_inverse_dynamics
from ..algorithms.kernels.common import work_offset
from ..algorithms.kernels.flat import _flat_core, flat_workspace

__all__ = ["flat_map_serial", "poly_jets"]


@njit(cache=True, error_model="numpy")
def poly_jets(times, coef, t, F, out):
    """Derivatives ``p^(0..rows-1)`` of a piecewise polynomial (:class:`~geodyn_ros.planning.polynomial.PiecewisePolynomial`:
    ``coef`` (N, D, w) in each segment's normalised time) at the times ``t`` (T,) into ``out``
    (T, rows, w); outside ``[t_0, t_N]`` the end value with zero derivatives. Horner per derivative;
    ``F`` (rows, D) the factors ``m!/(m-r)!``."""
    N, D, w = coef.shape
    rows = out.shape[1]
    for i in range(t.shape[0]):
        x = t[i]
        if x < times[0] or x > times[N]:
            for r in range(rows):
                for c in range(w):
                    out[i, r, c] = 0.0
            for c in range(w):
                if x < times[0]:
                    out[i, 0, c] = coef[0, 0, c]
                else:
                    acc = 0.0
                    for m in range(D):
                        acc += coef[N - 1, m, c]
                    out[i, 0, c] = acc
            continue
        lo, hi = 0, N - 1                      # the segment: times[seg] <= x (< times[seg+1] but the last)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if times[mid] <= x:
                lo = mid
            else:
                hi = mid - 1
        seg = lo
        h = times[seg + 1] - times[seg]
        s = (x - times[seg]) / h
        hr = 1.0
        for r in range(rows):
            for c in range(w):
                acc = 0.0
                for m in range(D - 1, r - 1, -1):
                    acc = acc * s + F[r, m] * coef[seg, m, c]
                out[i, r, c] = acc / hr
            hr *= h


@njit(cache=True, error_model="numpy")
def _loop(bodyi, bodyf, cd, psid, qd, order, g, out_C, out_V, out_q, out_w, out_tau, out_T, out_tb):
    ws = flat_workspace(bodyi, bodyf, order, g)
    o = work_offset(bodyi.shape[0])
    for t in range(cd.shape[0]):
        code = _flat_core(bodyi, bodyf, cd[t], psid[t], qd[t], order, g, out_C[t], out_V[t], out_q[t], out_w[t],
                          out_tau[t], out_T[t], out_tb[t], ws, o)
        if code != 0:
            return code, t
    return 0, -1


def flat_map_serial(model, com, yaw, q, order: int) -> FlatResult:
    """``gd.flat_inverse_dynamics(model, com, yaw, q, order)`` for trajectories (T, ...), one thread,
    default gravity. Inputs as the batch path: com (T, >= r+5, 3), yaw (T, >= r+3), q (T, >= r+3, n)."""
    if model.mimic_enforced and model.mimic:
        return flat_inverse_dynamics(model, com, yaw, q, order)
    plain = model._plain
    T, n = com.shape[0], model.n_joints
    out = (np.empty((T, 4, 4)), np.empty((T, order + 2, 6)), np.empty((T, order + 3, n)), np.empty((T, order + 1, 6)),
           np.empty((T, order + 1, n)), np.empty((T, order + 1)), np.empty((T, order + 1, 3)))
    code, where = _loop(plain.bodyi, plain.bodyf, np.ascontiguousarray(com, dtype=float),
                        np.ascontiguousarray(yaw, dtype=float), np.ascontiguousarray(q, dtype=float), int(order), _G0,
                        *out)
    if code:
        raise ValueError(_message(int(code), int(where)))
    return FlatResult(*out)
