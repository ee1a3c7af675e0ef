"""Minimum-derivative piecewise polynomials through waypoints: one banded linear solve.

Problem (per output column ``p(t)``, knots ``t_0 < ... < t_N``, ``N`` segments)::

    minimise  J = integral_{t_0}^{t_N} (p^(k)(t))^2 dt
    subject to p(t_i) = w_i (every knot), p^(j)(t_0), p^(j)(t_N) given for j = 1..k-1 (rest: 0),
               and optional p^(j)(t_i) = v_ij at interior knots (1 <= j <= k-1).

**Why degree 2k-1 and continuity C^(2k-2).** The Euler-Lagrange equation of ``J`` is
``p^(2k) = 0`` on every segment, so the optimum is a polynomial of degree ``2k-1`` there. At an
interior knot where only the position is fixed, the natural conditions make ``p^(k) .. p^(2k-2)``
continuous besides ``p .. p^(k-1)`` (shared unknowns here): the optimum is ``C^(2k-2)``; only
``p^(2k-1)`` jumps (by the multiplier of the position constraint). Fixing ``p^(m)`` at an interior
knot as well releases the natural condition of ``p^(2k-1-m)``, which may then jump: continuity
drops to ``C^(2k-2-m)``. Hence :func:`objective_order`: ``k = ceil((C + 2 + m) / 2)`` for a
promised continuity ``C`` with interior constraints up to order ``m``. (Pinning the interior knot
derivatives, or degree-``2k-1`` polynomials with fewer free derivatives, loses this; the
minimum-snap polynomials ``k = 4`` with free interior derivatives are ``C^6``.)

**Method (closed form, Hermite parametrisation).** The unknowns are the knot derivatives
``p^(j)(t_i)``, ``j = 0..k-1``; on segment ``i`` (duration ``h``, normalised time ``s = (t - t_i) / h``)
the degree-``2k-1`` Hermite polynomial of its two end jets has the cost ``h^(1-2k) y^T S M S y`` with
``S = diag(h^j)`` and ``M = B^-T Q B^-1`` (``B``: monomials to end derivatives on ``[0, 1]``,
``Q_mn = m!/(m-k)! n!/(n-k)! / (m+n-2k+1)``). The global Hessian is block tridiagonal (bandwidth
``2k-1`` in ``k (N+1)`` unknowns); with the fixed unknowns eliminated, ``H_ff x_f = -H_fp x_p`` is
solved by a banded Cholesky (``scipy.linalg.solveh_banded``): ``O(N k^3)``. The unknowns are scaled
by a time unit (the mean segment duration) so the system is well conditioned for any durations.

Evaluation: the segment polynomials are stored as monomial coefficients in the normalised time
``s`` (``coef`` (N, 2k, width)); the ``r``-th derivative is ``h^-r sum_m m!/(m-r)! a_m s^(m-r)``. Outside
``[t_0, t_N]`` the polynomial holds its end value with zero derivatives (the rest it ends in).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, solveh_banded

from ._serial import poly_jets

__all__ = ["PiecewisePolynomial", "objective_order", "minimum_derivative"]


def objective_order(continuity: int, constrained_order: int = 0) -> int:
    """The smallest objective order ``k`` whose optimum is ``C^continuity`` at every knot when
    interior knots also fix derivatives up to ``constrained_order`` (module docstring):
    ``2k - 2 - m >= C`` and ``k - 1 >= m``."""
    C, m = int(continuity), int(constrained_order)
    return max(1, math.ceil((C + 2 + m) / 2), m + 1)


@lru_cache(maxsize=None)
def _hermite(k: int):
    """(Binv (2k, 2k), M (2k, 2k)) on [0, 1]: coefficients = Binv @ end jets (scaled by h^j), and
    the cost matrix of the end jets ``M = Binv^T Q Binv`` (module docstring)."""
    D = 2 * k
    B = np.zeros((D, D))
    for j in range(k):
        B[j, j] = math.factorial(j)                               # P^(j)(0) = j! a_j
        for m in range(j, D):
            B[k + j, m] = math.factorial(m) / math.factorial(m - j)   # P^(j)(1)
    Q = np.zeros((D, D))
    for m in range(k, D):
        for n in range(k, D):
            Q[m, n] = (math.factorial(m) / math.factorial(m - k) * math.factorial(n) / math.factorial(n - k)
                       / (m + n - 2 * k + 1))
    Binv = np.linalg.inv(B)
    M = Binv.T @ Q @ Binv
    M = 0.5 * (M + M.T)
    Binv.setflags(write=False)
    M.setflags(write=False)
    return Binv, M


@lru_cache(maxsize=None)
def _falling(D: int, rows: int) -> np.ndarray:
    """(rows, D) ``m!/(m-r)!`` (0 where m < r): the derivative factors of the monomials ``s^m``."""
    F = np.zeros((rows, D))
    for r in range(rows):
        for m in range(r, D):
            F[r, m] = math.factorial(m) / math.factorial(m - r)
    F.setflags(write=False)
    return F


class PiecewisePolynomial:
    """A piecewise polynomial ``p: R -> R^width`` with exact derivatives of any order; ``p(t)``
    outside ``[t_0, t_N]`` is the end value with zero derivatives.

    Parameters
    ----------
    times : (N+1,) strictly increasing knot times [s].
    coef : (N, D, width) monomial coefficients of each segment in the normalised time
        ``s = (t - t_i) / (t_{i+1} - t_i)`` (degree ``D - 1``).
    """

    def __init__(self, times, coef):
        self.times = np.ascontiguousarray(times, dtype=float)
        self.coef = np.ascontiguousarray(coef, dtype=float)
        self.h = np.diff(self.times)
        N, D, w = self.coef.shape
        if self.times.shape != (N + 1,):
            raise ValueError(f"times: expected {N + 1} knots for {N} segments, got {self.times.shape}")
        self.width, self.degree = w, D - 1

    @property
    def n_segments(self) -> int:
        return len(self.h)

    def scaled(self, alpha: float) -> "PiecewisePolynomial":
        """The time-scaled polynomial ``p(t_0 + (t - t_0) / alpha)``: durations times ``alpha``, the
        ``r``-th derivative times ``alpha^-r`` (same normalised coefficients)."""
        t0 = self.times[0]
        return PiecewisePolynomial(t0 + alpha * (self.times - t0), self.coef)

    def jets(self, t, rows: int) -> np.ndarray:
        """(T, rows, width) derivatives ``p^(0..rows-1)`` at the times ``t`` (T,), vectorised (a
        one-thread numba loop, Horner per derivative: :func:`geodyn_ros.planning._serial.poly_jets`)."""
        t = np.ascontiguousarray(np.atleast_1d(np.asarray(t, float)))
        out = np.empty((len(t), int(rows), self.width))
        poly_jets(self.times, self.coef, t, _falling(self.degree + 1, int(rows)), out)
        return out

    def jet(self, t: float, rows: int) -> np.ndarray:
        """(rows, width) derivatives ``p^(0..rows-1)`` at one time ``t``."""
        return self.jets(np.array([float(t)]), rows)[0]


def minimum_derivative(times, values, k: int, start=None, end=None, fixed=None) -> PiecewisePolynomial:
    """The minimum-``k``-th-derivative piecewise polynomial (degree ``2k-1``) through the waypoints.

    Parameters
    ----------
    times : (N+1,) strictly increasing knot times [s].
    values : (N+1, w) waypoint values (one column per output coordinate).
    k : objective order (2 acceleration, 3 jerk, 4 snap, ...), ``>= 1``.
    start, end : (k-1, w) derivatives ``p^(1..k-1)`` at ``t_0`` / ``t_N``; ``None`` means rest (zeros);
        NaN entries are free (natural end conditions).
    fixed : mapping ``{(knot, order): (w,) values}`` of interior derivative constraints
        (``1 <= order <= k-1``, ``0 < knot < N``); NaN entries are free.

    Returns
    -------
    PiecewisePolynomial

    Raises
    ------
    ValueError
        when the free unknowns are not determined (e.g. free end derivatives on too few waypoints).
    """
    t = np.asarray(times, float)
    W = np.asarray(values, float)
    N = len(t) - 1
    w = W.shape[1]
    Binv, M = _hermite(k)
    h = np.diff(t)
    tau = float(np.mean(h))
    nk = (N + 1) * k
    # fixed values per unknown (knot, order), NaN = free; unknowns scaled: z_ij = p^(j)(t_i) tau^j
    X = np.full((N + 1, k, w), np.nan)
    X[:, 0] = W
    zero = np.zeros((max(k - 1, 0), w))
    for knot, given in ((0, start), (N, end)):
        if k > 1:
            X[knot, 1:] = zero if given is None else np.asarray(given, float).reshape(k - 1, w)
    for (knot, order), v in (fixed or {}).items():
        X[knot, order] = np.asarray(v, float).reshape(w)
    X *= (tau ** np.arange(k))[None, :, None]
    X = X.reshape(nk, w)
    # block-tridiagonal Hessian in the scaled unknowns (objective times tau^(2k-1))
    rows, cols, vals = [], [], []
    ii, jj = np.meshgrid(np.arange(2 * k), np.arange(2 * k), indexing="ij")
    for i in range(N):
        r = h[i] / tau
        sc = r ** np.arange(k)
        sc = np.concatenate([sc, sc])
        Hi = (r ** (1 - 2 * k)) * (sc[:, None] * M * sc[None, :])
        rows.append(ii.ravel() + i * k)
        cols.append(jj.ravel() + i * k)
        vals.append(Hi.ravel())
    H = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nk, nk))
    Z = X.copy()
    bw = 2 * k - 1
    groups = {}                                   # columns sharing a free set share one factorisation
    for c in range(w):
        groups.setdefault(np.isnan(X[:, c]).tobytes(), []).append(c)
    for key, cs in groups.items():
        free = np.frombuffer(key, dtype=bool)
        if not free.any():
            continue
        fi, pi = np.flatnonzero(free), np.flatnonzero(~free)
        Hf = H[fi]
        Hff = Hf[:, fi]
        rhs = -(Hf[:, pi] @ X[np.ix_(pi, cs)])
        nf = len(fi)
        u = min(bw, nf - 1)
        ab = np.zeros((u + 1, nf))
        for d in range(u + 1):
            ab[u - d, d:] = Hff.diagonal(d)
        try:
            Z[np.ix_(fi, cs)] = solveh_banded(ab, rhs)
        except LinAlgError:
            raise ValueError(f"waypoints: the minimum-derivative problem (k = {k}) is not determined by the given "
                             "constraints (free end derivatives with too few waypoints?)") from None
    Z = Z.reshape(N + 1, k, w) / (tau ** np.arange(k))[None, :, None]     # physical derivatives
    coef = np.empty((N, 2 * k, w))
    for i in range(N):
        sc = (h[i] ** np.arange(k))[:, None]
        ends = np.concatenate([Z[i] * sc, Z[i + 1] * sc])                  # (2k, w) scaled end jets
        coef[i] = Binv @ ends
    return PiecewisePolynomial(t, coef)
