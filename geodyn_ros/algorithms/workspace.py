"""Lean entry for control loops: a per-(model, order) workspace with preallocated outputs.

:func:`geodyn_ros.inverse_dynamics` and :func:`geodyn_ros.forward_dynamics` already keep a work
buffer per model and order, but every call still checks its options, allocates two fresh result
arrays and builds a result tuple. A :class:`Workspace` does that once::

    ws = gd.Workspace(model, order=0)            # once, outside the loop
    while running:
        res = ws.inverse_dynamics(C, V, q)       # InverseDynamicsResult of arrays owned by ws
        tau_cmd = res.tau[0]

**Aliasing:** the arrays of a result are read-only views owned by the workspace; the next call of
the same method on the same workspace overwrites them (and returns the same result object). Copy
what must outlive the next call. Inverse and forward dynamics have separate outputs. One
workspace per thread: concurrent calls on one workspace would overwrite each other's results.

Inputs, checks, errors and answers are those of the plain functions with ``gravity`` fixed at
construction and no ``ext_wrench`` / ``ext_torque`` / ``representation`` (spatial): any input the
compiled entry declines (a wrong shape, NaN, a non-rigid pose, ...) is re-evaluated by the plain
function, which raises its ``ValueError`` naming the argument.
"""
from __future__ import annotations

import numpy as np

from .api import forward_dynamics, inverse_dynamics
from .checks import _F32, _F64, _ND, _check_model, _check_order, _f32_twin, _hot_args
from .dynamics import DEFAULT_GRAVITY, ForwardDynamicsResult, InverseDynamicsResult, _gravity
from .kernels import hybrid as KH
from .kernels import inverse as KI

__all__ = ["Workspace"]

_ID_INTO = KI.inverse_dynamics_into
_FD_INTO = KH.forward_dynamics_into
_ID_INTO32 = KI.inverse_dynamics_into32
_FD_INTO32 = KH.forward_dynamics_into32


def _owned(buf, start, shape):
    """Read-only view of ``buf[start:start + prod(shape)]`` (the kernel writes through ``buf``)."""
    v = buf[start:start + shape[0] * shape[1]].reshape(shape)
    v.flags.writeable = False
    return v


class Workspace:
    """Preallocated order-``order`` inverse and forward dynamics of one model (module docstring).

    Parameters
    ----------
    model : Model
    order : derivative order ``r >= 0`` of every call on this workspace.
    gravity : (3,) gravity acceleration in world, fixed for the workspace.
    """

    __slots__ = ("model", "order", "gravity", "_grav_arg", "_idb", "_fdb", "_id_res", "_fd_res")

    def __init__(self, model, order: int = 0, *, gravity=DEFAULT_GRAVITY):
        _check_model(model)
        order = _check_order(order)
        g = _gravity(gravity)
        if not np.all(np.isfinite(g)):
            raise ValueError("gravity: contains NaN or Inf")
        self.model = model
        self.order = order
        self.gravity = g.copy()
        self.gravity.flags.writeable = False
        self._grav_arg = gravity if gravity is DEFAULT_GRAVITY else self.gravity
        N, n, r1 = model.n_bodies, model.n_joints, order + 1
        idb = KI.id_workspace(model.bodyi, model.bodyf, order, g)
        self._idb = np.concatenate([idb, np.zeros(r1 * (6 + n))])
        assert self._idb.shape[0] == KI.id_into_size(N, order)
        e = idb.shape[0]
        self._id_res = InverseDynamicsResult(_owned(self._idb, e, (r1, 6)), _owned(self._idb, e + 6 * r1, (r1, n)))
        fdb = KH.fd_workspace(model.bodyi, model.bodyf, order, g)
        self._fdb = np.concatenate([fdb, np.zeros((order + 2) * 6 + (order + 3) * n)])
        assert self._fdb.shape[0] == KH.fd_into_size(N, order)
        e = fdb.shape[0]
        self._fd_res = ForwardDynamicsResult(_owned(self._fdb, e, (order + 2, 6)),
                                             _owned(self._fdb, e + 6 * (order + 2), (order + 3, n)))
        if model.singular:   # no compiled entry: every call goes to forward_dynamics, which refuses with the reason
            self._fdb = None

    def __repr__(self):
        return f"Workspace(model with {self.model.n_joints} joints, order={self.order})"

    def inverse_dynamics(self, base_pose, base_twist, q) -> InverseDynamicsResult:
        """:func:`geodyn_ros.inverse_dynamics` at this workspace's order and gravity, written into
        the workspace's outputs: ``base_wrench`` (order+1, 6), ``tau`` (order+1, n). The returned
        arrays are overwritten by the next call (module docstring)."""
        # Fast path: the compiled entry takes float64 2-D arrays (any layout) and nothing else (its
        # signatures are fixed, so numba compiles no new ones); float32 (every input, or q alone) goes
        # to its compiled twin, which converts inside the call. Anything else is converted first:
        # numba's TypeError for an unmatched signature costs ~0.5 ms to build (a float32 q took 75x
        # the float64 call before this check; bench/core/bench_layouts.py times the workspace too).
        if not (type(q) is _ND and q.dtype is _F64 and type(base_twist) is _ND and base_twist.dtype is _F64
                and type(base_pose) is _ND and base_pose.dtype is _F64):
            d = base_pose.dtype if type(base_pose) is _ND else None   # _f32_twin, inline (a call is 7 % here)
            if (type(q) is _ND and q.dtype is _F32 and type(base_twist) is _ND and base_twist.dtype is d
                    and (d is _F32 or d is _F64)):   # float32: the compiled twin converts inside
                try:
                    code = _ID_INTO32(self._idb, base_pose, base_twist, q, self.order)
                except TypeError:   # a wrong number of dimensions
                    code = -1
                return self._declined_id(base_pose, base_twist, q) if code else self._id_res
            return self._converted_id(base_pose, base_twist, q)
        try:
            code = _ID_INTO(self._idb, base_pose, base_twist, q, self.order)
        except TypeError:   # a wrong number of dimensions
            return self._converted_id(base_pose, base_twist, q)
        if code:
            return self._declined_id(base_pose, base_twist, q)
        return self._id_res

    def _converted_id(self, base_pose, base_twist, q):
        """Inputs of another type than float64 and the float32 twin's (lists, integers, other
        mixes): one conversion here, then the kernel."""
        base_pose, base_twist, q = _hot_args(("base_pose", base_pose), ("base_twist", base_twist), ("q", q))
        try:
            code = _ID_INTO(self._idb, base_pose, base_twist, q, self.order)
        except TypeError:   # a wrong number of dimensions
            code = -1
        if code:
            return self._declined_id(base_pose, base_twist, q)
        return self._id_res

    def forward_dynamics(self, base_pose, base_twist, q, base_wrench, tau) -> ForwardDynamicsResult:
        """:func:`geodyn_ros.forward_dynamics` at this workspace's order and gravity, written into
        the workspace's outputs: ``base_twist`` (order+2, 6), ``q`` (order+3, n). The returned
        arrays are overwritten by the next call (module docstring)."""
        if not (type(q) is _ND and q.dtype is _F64 and type(base_twist) is _ND and base_twist.dtype is _F64
                and type(base_pose) is _ND and base_pose.dtype is _F64 and type(base_wrench) is _ND
                and base_wrench.dtype is _F64 and type(tau) is _ND and tau.dtype is _F64):   # as in inverse_dynamics
            if _f32_twin(q, base_pose, base_twist, base_wrench, tau):
                try:
                    code = _FD_INTO32(self._fdb, base_pose, base_twist, q, base_wrench, tau, self.order)
                except TypeError:   # None (a singular model), or a wrong number of dimensions
                    code = -1
                return self._declined_fd(base_pose, base_twist, q, base_wrench, tau) if code else self._fd_res
            return self._converted_fd(base_pose, base_twist, q, base_wrench, tau)
        try:       # fast path, as in inverse_dynamics
            code = _FD_INTO(self._fdb, base_pose, base_twist, q, base_wrench, tau, self.order)
        except TypeError:
            return self._converted_fd(base_pose, base_twist, q, base_wrench, tau)
        if code:
            return self._declined_fd(base_pose, base_twist, q, base_wrench, tau)
        return self._fd_res

    def _converted_fd(self, base_pose, base_twist, q, base_wrench, tau):
        base_pose, base_twist, q, base_wrench, tau = _hot_args(
            ("base_pose", base_pose), ("base_twist", base_twist), ("q", q), ("base_wrench", base_wrench),
            ("tau", tau))
        try:
            code = _FD_INTO(self._fdb, base_pose, base_twist, q, base_wrench, tau, self.order)
        except TypeError:   # None, or a wrong number of dimensions
            code = -1
        if code:
            return self._declined_fd(base_pose, base_twist, q, base_wrench, tau)
        return self._fd_res

    # Inputs the compiled entry declines: the plain function raises the precise ValueError; if it
    # returns instead, its answer is copied into the workspace's outputs.
    def _declined_id(self, base_pose, base_twist, q):
        _one_sample(base_pose)
        res = inverse_dynamics(self.model, base_pose, base_twist, q, self.order, gravity=self._grav_arg)
        _copy_into(self._id_res, res)
        return self._id_res

    def _declined_fd(self, base_pose, base_twist, q, base_wrench, tau):
        _one_sample(base_pose)
        res = forward_dynamics(self.model, base_pose, base_twist, q, base_wrench, tau, self.order,
                               gravity=self._grav_arg)
        _copy_into(self._fd_res, res)
        return self._fd_res


def _one_sample(base_pose):
    if np.ndim(base_pose) == 3:
        raise ValueError(f"base_pose: expected shape (4, 4), got {np.shape(base_pose)} (a Workspace "
                         "evaluates one sample; pass trajectories to gd.inverse_dynamics / "
                         "gd.forward_dynamics)")


def _copy_into(dst, src):
    for d, s in zip(dst, src):
        d.flags.writeable = True   # a view of the workspace buffer, which owns its data
        d[...] = s
        d.flags.writeable = False
