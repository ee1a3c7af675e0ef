"""Input checks shared by every algorithm (the bottom of :mod:`geodyn_ros.algorithms`).

Validation at the boundary of the public functions: the model and order checks, conversion of
array-likes to the flat float64 arrays the kernels take, shape checks that raise a
``ValueError`` naming the argument, and the messages of the kernels' error codes. Imports only
the model and the kernels' error codes; every algorithm module above imports from here.
"""
from __future__ import annotations

import numpy as np

from ..model.model import Model
from .kernels import common as K

MAX_ORDER = 60   #: factorials of order + 3 must stay well inside float64


_ND = np.ndarray


_ERRORS = {
    K.ERR_POSE_NONFINITE: ("base_pose", "contains NaN or Inf"),
    K.ERR_POSE_NOT_RIGID: ("base_pose", f"is not a rigid transform (R^T R = I, det R = +1, last row "
                                        f"[0, 0, 0, 1], to {K.RIGID_TOL:g})"),
    K.ERR_TWIST_NONFINITE: ("base_twist", "contains NaN or Inf in the rows used"),
    K.ERR_Q_NONFINITE: ("q", "contains NaN or Inf in the rows used"),
    K.ERR_WRENCH_NONFINITE: ("base_wrench", "contains NaN or Inf in the rows used"),
    K.ERR_TAU_NONFINITE: ("tau", "contains NaN or Inf in the rows used"),
    K.ERR_EXTW_NONFINITE: ("ext_wrench", "contains NaN or Inf in the rows used"),
    K.ERR_EXTT_NONFINITE: ("ext_torque", "contains NaN or Inf in the rows used"),
    K.ERR_GRAVITY_NONFINITE: ("gravity", "contains NaN or Inf"),
    K.ERR_SINGULAR_JOINT: ("model", "has a joint with zero articulated inertia about its axis"),
    K.ERR_SINGULAR_BASE: ("model", "has a singular articulated base inertia"),
    K.ERR_RESULT_NONFINITE: ("inputs", "produce a non-finite result (overflow: magnitudes too large?)"),
}


def _raise(code: int):
    arg, msg = _ERRORS.get(code, ("inputs", f"invalid (kernel error {code})"))
    raise ValueError(f"{arg}: {msg}")


def _check_regular(model):
    """Refuse the forward dynamics of a model whose mass matrix is singular at every configuration
    (``model.singular``, found by the loader), with that reason."""
    why = getattr(model, "singular", "")
    if why:
        raise ValueError(f"model: forward dynamics is undefined: {why}")


def _has_time_axis(base_pose) -> bool:
    """True for a (T, 4, 4) stack of poses: the call evaluates a trajectory (:mod:`.batch`)."""
    if type(base_pose) is _ND:   # (the hot paths' case: np.ndim costs ~4 attribute lookups more)
        return base_pose.ndim == 3
    try:
        return np.ndim(base_pose) == 3
    except Exception:
        return False


def _check_model(model, constrained_ok=False):
    if type(model) is not Model and not isinstance(model, Model):
        raise ValueError(f"model: expected a geodyn_ros Model (from load_urdf), got {type(model).__name__}")
    if model._constrained and not constrained_ok:
        raise ValueError("model: loaded with fixed_base=True or mimic=True, which inverse_dynamics, forward_dynamics, "
                         "hybrid_dynamics and forward_kinematics support; load it without these options for this "
                         "function")


def _check_order(order) -> int:
    if type(order) is int and 0 <= order <= MAX_ORDER:   # fast path
        return order
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)):
        raise ValueError(f"order: expected a non-negative integer, got {order!r}")
    order = int(order)
    if order < 0:
        raise ValueError(f"order: must be >= 0, got {order}")
    if order > MAX_ORDER:
        raise ValueError(f"order: at most {MAX_ORDER} is supported, got {order}")
    return order


def _fast(x):
    """True if ``x`` can go to a kernel as it is (:func:`_kernel_ready`); anything else would
    make numba compile a new specialisation on the first call, so it is converted by :func:`_f64`."""
    return type(x) is np.ndarray and x.dtype is _F64 and _kernel_ready(x)


_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def _f32_twin(q, a, b, *more) -> bool:
    """True when the compiled float32 twins of the hot entries (``kernels.common._f32_sigs``) take
    the arguments as they are: ``q`` a float32 ndarray and the others (``a``, ``b``, ``more``) all
    float32 or all float64 ndarrays (the caller has already found that they are not all float64)."""
    if type(q) is not _ND or q.dtype is not _F32 or type(a) is not _ND or type(b) is not _ND:
        return False
    d = a.dtype
    if (d is not _F32 and d is not _F64) or b.dtype is not d:
        return False
    for x in more:
        if type(x) is not _ND or x.dtype is not d:
            return False
    return True


def _f64(x, name):
    """float64 C-contiguous array view/copy of ``x`` (never modifies the caller's array).

    Accepts any array-like of integers or real floats (lists, float32, Fortran order, strided
    views); rejects booleans, complex numbers, strings and objects with ``ValueError`` naming
    the argument."""
    if type(x) is np.ndarray:
        if x.dtype is _F64:
            if _kernel_ready(x):
                return x
            return np.array(x, order="C")   # a C-contiguous, writeable copy
        if x.dtype.kind in "iuf":
            return x.astype(_F64, order="C")   # always a new array
    try:
        a = np.asarray(x)
    except Exception as exc:  # ragged lists etc.
        raise ValueError(f"{name}: cannot convert to a float array ({exc})") from None
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{name}: expected real numbers, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a if _kernel_ready(a) else np.array(a, order="C")


def _kernel_ready(a):
    """A float64 ndarray the general kernels are compiled for as it is: C-contiguous, writeable
    and aligned (a read-only or unaligned array would make numba compile a new specialisation,
    tens of seconds on the first call)."""
    f = a.flags
    return f.c_contiguous and f.writeable and f.aligned


def _hot_arg(x, name):
    """The hot path's input ``x`` as the compiled entries take it: a float64 ndarray as it is (any
    layout), another real ndarray converted once by ``astype``, anything else by :func:`_f64`
    (None is left for the validating path to report). Call sites test ``type(x) is _ND and
    x.dtype is _F64`` inline first, so a float64 argument costs no call (a float32 ``q`` cost
    1.5x the float64 call through the older generic helper, ``bench/core/bench_layouts.py``)."""
    if type(x) is _ND:
        if x.dtype is _F64:
            return x
        if x.dtype.kind in "iuf":
            return x.astype(_F64)
    return x if x is None else _f64(x, name)


def _hot_args(*named):
    """:func:`_hot_arg` over ``(name, x)`` pairs: the conversion paths (lists, integers, mixes the
    float32 twins do not take), after the float64 and float32 calls are dispatched."""
    return [_hot_arg(x, name) for name, x in named]


def _pose(x):
    a = _f64(x, "base_pose")
    if a.shape != (4, 4):
        raise ValueError(f"base_pose: expected shape (4, 4), got {a.shape}")
    return a


def _jet(x, name, rows, width, what):
    """A derivative array with at least ``rows`` rows of ``width`` columns (1-D allowed if rows == 1)."""
    if x is None:
        raise ValueError(f"{name}: required ({what})")
    a = _f64(x, name)
    if a.ndim == 1 and rows == 1 and a.shape[0] == width:
        a = a.reshape(1, width)
    if a.ndim != 2 or a.shape[1] != width or a.shape[0] < rows:
        raise ValueError(f"{name}: expected shape (>= {rows}, {width}) ({what}), got {a.shape}")
    return a
