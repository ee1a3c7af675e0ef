"""Trajectory evaluation: inverse and forward dynamics over a leading time axis.

:func:`geodyn_ros.inverse_dynamics` and :func:`geodyn_ros.forward_dynamics` dispatch here when
``base_pose`` has shape ``(T, 4, 4)``: every other state argument then carries the same leading
axis of ``T`` samples (``base_twist`` (T, rows, 6), ``q`` (T, rows, n), ...) and so does every
result array. Samples are independent; they are split into contiguous chunks evaluated on all
cores numba is allowed to use (``numba.set_num_threads`` / ``NUMBA_NUM_THREADS``), each chunk
with its own work buffer. A bad sample raises ``ValueError`` naming the argument and the
sample index, e.g. ``q[17]: contains NaN or Inf in the rows used``.
"""
from __future__ import annotations

import numba
import numpy as np

from .checks import _f64
from .kernels import batch as BK
from .kernels import common as K

#: samples per chunk below which a trajectory is evaluated on one thread (thread start-up
#: costs more than it saves on shorter runs)
MIN_SAMPLES_PER_THREAD = 16

_NO_WEXT_T = np.zeros((0, 0, 0, 6))


def _chunks(T: int) -> int:
    return max(1, min(numba.get_num_threads(), T // MIN_SAMPLES_PER_THREAD))


def _traj(x, name, T, rows, width, what):
    """(T, >= rows, width) float64 C-contiguous array."""
    if x is None:
        raise ValueError(f"{name}: required ({what}, with a leading time axis)")
    a = _f64(x, name)
    if a.ndim != 3 or a.shape[0] != T or a.shape[1] < rows or a.shape[2] != width:
        raise ValueError(f"{name}: expected shape ({T}, >= {rows}, {width}) ({what}; a leading time "
                         f"axis of T = {T} samples like base_pose), got {a.shape}")
    return a


def _poses(base_pose):
    C = _f64(base_pose, "base_pose")
    if C.ndim != 3 or C.shape[1:] != (4, 4) or C.shape[0] < 1:
        raise ValueError(f"base_pose: expected shape (T, 4, 4) with T >= 1, got {C.shape}")
    return C


def _ext(model, ext_wrench, ext_torque, order, T):
    rows = order + 1
    n = model.n_joints
    if ext_wrench is None or (hasattr(ext_wrench, "__len__") and len(ext_wrench) == 0):
        wext = _NO_WEXT_T
    else:
        if not hasattr(ext_wrench, "items"):
            raise ValueError("ext_wrench: expected a mapping {link_name: array (T, >= order+1, 6)}")
        wext = np.zeros((T, model.n_bodies, rows, 6))
        for link, w in ext_wrench.items():
            if link not in model.link_to_body:
                raise ValueError(f"ext_wrench: unknown link name {link!r}")
            a = _traj(w, f"ext_wrench[{link!r}]", T, rows, 6, "spatial wrench derivatives 0..order")
            wext[:, model.link_to_body[link]] += a[:, :rows]
    if ext_torque is None:
        text = np.zeros((0, 0, 0))
    else:
        text = _traj(ext_torque, "ext_torque", T, rows, n, "external joint torque derivatives 0..order")
    return wext, text


#: error codes about one sample's inputs: the message names the sample as ``arg[t]``
_PER_SAMPLE_CODES = frozenset((
    K.ERR_POSE_NONFINITE, K.ERR_POSE_NOT_RIGID, K.ERR_TWIST_NONFINITE, K.ERR_Q_NONFINITE,
    K.ERR_WRENCH_NONFINITE, K.ERR_TAU_NONFINITE, K.ERR_EXTW_NONFINITE, K.ERR_EXTT_NONFINITE))


def _raise(code, t, messages):
    arg, msg = messages.get(code, ("inputs", f"invalid (kernel error {code})"))
    if code in _PER_SAMPLE_CODES:
        arg = f"{arg}[{t}]"
    else:
        msg = f"{msg} (sample {t})"
    raise ValueError(f"{arg}: {msg}")


def inverse_dynamics_batch(model, base_pose, base_twist, q, order, g, ext_wrench, ext_torque, messages):
    """Inverse dynamics of T samples; arguments as :func:`geodyn_ros.inverse_dynamics` with a
    leading time axis. Returns (base_wrench (T, order+1, 6), tau (T, order+1, n))."""
    C = _poses(base_pose)
    T, n = C.shape[0], model.n_joints
    V = _traj(base_twist, "base_twist", T, order + 2, 6, "spatial twist derivatives 0..order+1")
    Q = _traj(q, "q", T, order + 3, n, "joint derivatives 0..order+2")
    wext, text = _ext(model, ext_wrench, ext_torque, order, T)
    w = np.empty((T, order + 1, 6))
    tau = np.empty((T, order + 1, n))
    code, t = BK.inverse_dynamics_batch(model.bodyi, model.bodyf, C, V, Q, order, g, wext, text, w, tau,
                                        _chunks(T))
    if code:
        _raise(code, t, messages)
    return w, tau


def forward_dynamics_batch(model, base_pose, base_twist, q, base_wrench, tau, order, g, ext_wrench,
                           ext_torque, messages):
    """Forward dynamics of T samples; arguments as :func:`geodyn_ros.forward_dynamics` with a
    leading time axis. Returns (base_twist (T, order+2, 6), q (T, order+3, n))."""
    C = _poses(base_pose)
    T, n = C.shape[0], model.n_joints
    V = _traj(base_twist, "base_twist", T, 1, 6, "row 0: the spatial base twist")
    Q = _traj(q, "q", T, 2, n, "joint positions and velocities")
    Wb = _traj(base_wrench, "base_wrench", T, order + 1, 6, "spatial wrench derivatives 0..order")
    Tq = _traj(tau, "tau", T, order + 1, n, "joint torque derivatives 0..order")
    wext, text = _ext(model, ext_wrench, ext_torque, order, T)
    Vo = np.empty((T, order + 2, 6))
    qo = np.empty((T, order + 3, n))
    code, t = BK.forward_dynamics_batch(model.bodyi, model.bodyf, C, V, Q, Wb, Tq, order, g, wext, text,
                                        Vo, qo, _chunks(T))
    if code:
        _raise(code, t, messages)
    return Vo, qo
