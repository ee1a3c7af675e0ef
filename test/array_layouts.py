"""Array layouts and a random state for the tests of the hot entries' array handling.

Shared by ``test/model/test_layouts.py``, ``test/algorithms/test_workspace.py`` and
``test/algorithms/test_float32_twins.py`` (one copy, so that a layout means the same everywhere).
"""
import numpy as np

from geodyn_ros.lie import exp_se3


def strided(a):
    """``a``'s values in a view that steps 2 along every axis of a NaN-filled array twice the size
    (same dtype): non-contiguous in every dimension, and a read past the view reads NaN."""
    a = np.asarray(a)
    big = np.full(tuple(2 * s for s in a.shape), np.nan, dtype=a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def readonly(a):
    """A read-only copy of ``a``."""
    b = np.array(a, copy=True)
    b.flags.writeable = False
    return b


def hot_state(model, r, seed):
    """(C, V jet, q jet, W jet, tau jet) of order ``r`` for ``model``: C a pose (4, 4), V
    (r + 2, 6), q (r + 3, n), W (r + 1, 6), tau (r + 1, n), from ``seed``."""
    rng = np.random.default_rng(seed)
    n = model.n_joints
    return (exp_se3(rng.normal(size=6) * 0.5), rng.normal(size=(r + 2, 6)) * 0.5,
            rng.normal(size=(r + 3, n)) * 0.5, rng.normal(size=(r + 1, 6)), rng.normal(size=(r + 1, n)) * 0.1)
