"""The public entry points of the algorithms: inverse, forward and hybrid dynamics, kinematics.

The top of :mod:`geodyn_ros.algorithms` below :mod:`.workspace`. Each function first tries the
hot path (one compiled call over a work buffer the model keeps per order: the per-cycle path of
control loops, nothing runs before it), then dispatches, in this order, to

* :mod:`.constrained` for a model loaded with ``fixed_base=True`` or ``mimic=True``;
* :mod:`.representations` for a base twist and wrench not in the spatial representation;
* :mod:`.batch` for a trajectory (a leading time axis, ``base_pose`` of shape (T, 4, 4));
* the validating spatial single-sample core of :mod:`.dynamics`.

The modules below never import this one: they call the core of :mod:`.dynamics`.
Conventions (``CONVENTIONS.md``): spatial twists ``(w, v)`` and spatial wrenches ``(n, f)`` in
world axes about the world origin; row ``k`` of every derivative array is the k-th time
derivative; joint columns follow ``model.joint_names``.
"""
from __future__ import annotations

import numpy as np

from ..model.model import Model
from . import constrained
from .batch import forward_dynamics_batch, inverse_dynamics_batch
from .checks import (_ERRORS, _F64, _ND, _check_model, _check_order, _check_regular, _f32_twin, _has_time_axis,
                     _hot_args, _jet, _pose, _raise)
from .constrained import expand_mimic
from .dynamics import (_FD_HOT, _ID_HOT, DEFAULT_GRAVITY, ForwardDynamicsResult, HybridDynamicsResult,
                       InverseDynamicsResult, KinematicsResult, _empty, _forward_dynamics_checked,
                       _forward_kinematics, _gravity, _hybrid, _inverse_dynamics_checked, _new_tuple,
                       _prescribed_mask)
from .kernels import common as K
from .kernels import hybrid as _KH
from .kernels import inverse as _KI
from .kernels.kinematics import center_of_mass as _COM
from .representations import _dynamics_in

_ID_HOT32 = _KI.inverse_dynamics_ws32
_FD_HOT32 = _KH.forward_dynamics_ws32

__all__ = ["inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "forward_kinematics", "center_of_mass"]


def inverse_dynamics(model: Model, base_pose, base_twist, q, order: int = 0, *,
                     gravity=DEFAULT_GRAVITY, ext_wrench=None, ext_torque=None,
                     representation: str = "spatial") -> InverseDynamicsResult:
    """Higher-order inverse dynamics, H-GRNE-FBS (paper Alg. 1–2, Appendix E).

    Parameters
    ----------
    model : Model
    base_pose : (4, 4) world pose ``C`` of the base link.
    base_twist : (>= order+2, 6) spatial base twist derivatives ``V^(0..order+1)`` (angular first).
    q : (>= order+3, n) joint derivatives ``q^(0..order+2)``, columns ``model.joint_names``.
    order : derivative order ``r >= 0`` of the outputs.
    gravity : (3,) gravity acceleration in world, default ``(0, 0, -9.81)``.
    ext_wrench : optional ``{link: (>= order+1, 6)}`` spatial wrench derivatives applied to a link
        by the environment (merged links act on their body).
    ext_torque : optional (>= order+1, n) non-actuator joint torque derivatives.
    representation : ``"spatial"`` (default), ``"body"``, ``"hybrid"`` or ``"mixed"``: the
        representation of ``base_twist`` and of the returned ``base_wrench`` (see
        :mod:`geodyn_ros.algorithms.representations`; time derivatives are those of the represented
        vectors, Leibniz terms included). ``ext_wrench`` and ``gravity`` stay in world axes.

    Returns
    -------
    InverseDynamicsResult
        ``base_wrench`` (order+1, 6): derivatives of the wrench that must act on the base
        (gravity and ``ext_wrench`` accounted for), spatial unless ``representation`` says
        otherwise; ``tau`` (order+1, n): actuation torques ``Q - ext_torque``.

    Notes
    -----
    Trajectories: with ``base_pose`` of shape (T, 4, 4) every state argument takes a leading time
    axis of T samples (``base_twist`` (T, >= order+2, 6), ``q`` (T, >= order+3, n), ``ext_torque``
    (T, >= order+1, n), ``ext_wrench`` values (T, >= order+1, 6)) and so do the results
    (``base_wrench`` (T, order+1, 6), ``tau`` (T, order+1, n)); samples are evaluated in parallel
    (see :mod:`geodyn_ros.algorithms.batch`).

    Example
    -------
    >>> res = inverse_dynamics(model, np.eye(4), np.zeros((2, 6)), np.zeros((3, model.n_joints)))
    >>> res.base_wrench[0]   # hovering: the base must carry the weight
    """
    # Hot path (runs every control cycle): default gravity, no applied wrenches and a work buffer
    # made by an earlier call. Arrays that are not float64 ndarrays (float32, int, lists, ...) are
    # converted once here; float64 arrays of any layout (Fortran order, transposed, strided,
    # read-only) match one of the compiled entry's two signatures as they are. The entry checks
    # shapes itself; anything unusual takes the validating path, which raises the precise error.
    if (type(order) is int and gravity is DEFAULT_GRAVITY and ext_wrench is None
            and ext_torque is None and type(model) is Model and representation == "spatial"):
        hot = model._id_ws.get(order)
        entry = _ID_HOT
        if hot is not None and not (type(base_pose) is _ND and base_pose.dtype is _F64 and base_pose.ndim == 2
                                    and type(base_twist) is _ND and base_twist.dtype is _F64
                                    and type(q) is _ND and q.dtype is _F64):
            if _has_time_axis(base_pose):
                hot = None   # a trajectory: straight to the batch kernels
            elif _f32_twin(q, base_pose, base_twist):
                entry = _ID_HOT32   # float32 (all, or q alone): converted inside the compiled call
            else:
                base_pose, base_twist, q = _hot_args(("base_pose", base_pose), ("base_twist", base_twist),
                                                     ("q", q))
        if hot is not None:
            w = _empty(hot[1])
            tau = _empty(hot[2])
            try:
                code = entry(hot[0], base_pose, base_twist, q, order, w, tau)
            except TypeError:   # a wrong number of dimensions (the validating path names it)
                code = -1
            if code == 0:
                return _new_tuple(InverseDynamicsResult, (w, tau))
    if getattr(model, "_constrained", False):   # fixed base or enforced mimic joints
        return constrained.inverse_dynamics(model, base_pose, base_twist, q, order, gravity, ext_wrench,
                                            ext_torque, representation)
    if representation != "spatial":
        return _dynamics_in(representation, _id_as_hybrid, model, base_pose, base_twist, q, None, None,
                            order, dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque),
                            lambda V, W, Q, tau: InverseDynamicsResult(W, tau))
    if _has_time_axis(base_pose):   # a trajectory: the batch kernels
        _check_model(model)
        order = _check_order(order)
        w, tau = inverse_dynamics_batch(model, base_pose, base_twist, q, order, _gravity(gravity), ext_wrench,
                                        ext_torque, _ERRORS)
        return InverseDynamicsResult(w, tau)
    return _inverse_dynamics_checked(model, base_pose, base_twist, q, order, gravity, ext_wrench,
                                     ext_torque)


def _id_as_hybrid(model, C, V, q, W, tau, order, **kw):
    """Spatial inverse dynamics with the result as a :class:`HybridDynamicsResult`."""
    res = inverse_dynamics(model, C, V, q, order, **kw)
    return HybridDynamicsResult(V, res.base_wrench, q, res.tau)


def _fd_as_hybrid(model, C, V, q, W, tau, order, **kw):
    """Spatial forward dynamics with the result as a :class:`HybridDynamicsResult`."""
    res = forward_dynamics(model, C, V, q, W, tau, order, **kw)
    return HybridDynamicsResult(res.base_twist, W, res.q, tau)


def forward_dynamics(model: Model, base_pose, base_twist, q, base_wrench, tau, order: int = 0, *,
                     gravity=DEFAULT_GRAVITY, ext_wrench=None, ext_torque=None,
                     representation: str = "spatial") -> ForwardDynamicsResult:
    """Higher-order forward dynamics, H-GABI-FBS (paper Alg. 3, Lemma 2).

    Parameters
    ----------
    base_pose : (4, 4)
        base pose.
    base_twist : (>= 1, 6)
        row 0 (the spatial twist) is used.
    q : (>= 2, n)
        rows 0 (position) and 1 (velocity) are used.
    base_wrench : (>= order+1, 6)
        spatial wrench derivatives acting on the base (e.g. propellers).
    tau : (>= order+1, n)
        joint actuation torque derivatives.
    gravity, ext_wrench, ext_torque, representation
        as in :func:`inverse_dynamics` (``representation`` applies to ``base_twist`` and
        ``base_wrench``, inputs and outputs; a non-spatial wrench jet converts causally, so the
        kernel then runs about ``order/2 + 1`` times).

    Returns
    -------
    ForwardDynamicsResult
        ``base_twist`` (order+2, 6) = V^(0..order+1) and ``q`` (order+3, n) = q^(0..order+2).
        The articulated inertias and the base factorisation are computed once per call and reused
        at every order (Lemma 2).

    Notes
    -----
    Trajectories: with ``base_pose`` (T, 4, 4) every state argument and result takes a leading
    time axis of T samples, as in :func:`inverse_dynamics`.
    """
    if (type(order) is int and gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and type(model) is Model and representation == "spatial"):   # hot path, as inverse_dynamics
        hot = model._fd_ws.get(order)
        entry = _FD_HOT
        if hot is not None and not (type(base_pose) is _ND and base_pose.dtype is _F64 and base_pose.ndim == 2
                                    and type(base_twist) is _ND and base_twist.dtype is _F64
                                    and type(q) is _ND and q.dtype is _F64
                                    and type(base_wrench) is _ND and base_wrench.dtype is _F64
                                    and type(tau) is _ND and tau.dtype is _F64):
            if _has_time_axis(base_pose):
                hot = None   # a trajectory: straight to the batch kernels
            elif _f32_twin(q, base_pose, base_twist, base_wrench, tau):
                entry = _FD_HOT32   # as in inverse_dynamics
            else:
                base_pose, base_twist, q, base_wrench, tau = _hot_args(
                    ("base_pose", base_pose), ("base_twist", base_twist), ("q", q),
                    ("base_wrench", base_wrench), ("tau", tau))
        if hot is not None:
            Vo = _empty(hot[1])
            qo = _empty(hot[2])
            try:
                code = entry(hot[0], base_pose, base_twist, q, base_wrench, tau, order, Vo, qo)
            except TypeError:   # None, or a wrong number of dimensions
                code = -1
            if code == 0:
                return _new_tuple(ForwardDynamicsResult, (Vo, qo))
    # a model singular at every configuration never reaches _forward_dynamics_checked, so it never
    # gets the hot path's work buffer: every call comes here and is refused with the reason
    _check_regular(model)
    if getattr(model, "_constrained", False):   # fixed base or enforced mimic joints
        _check_model(model, constrained_ok=True)
        res = constrained.hybrid_dynamics(model, base_pose, base_twist, q, tau, order,
                                          np.zeros(model.n_joints, bool), base_wrench, gravity, ext_wrench,
                                          ext_torque, representation)
        return ForwardDynamicsResult(res.base_twist, res.q)
    if representation != "spatial":
        if base_wrench is None:
            raise ValueError("base_wrench: required (>= order+1, 6) base wrench derivatives")
        return _dynamics_in(representation, _fd_as_hybrid, model, base_pose, base_twist, q, base_wrench,
                            tau, order, dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque),
                            lambda V, W, Q, T: ForwardDynamicsResult(V, Q))
    _check_model(model)
    order = _check_order(order)
    if _has_time_axis(base_pose):
        Vo, qo = forward_dynamics_batch(model, base_pose, base_twist, q, base_wrench, tau, order,
                                        _gravity(gravity), ext_wrench, ext_torque, _ERRORS)
        return ForwardDynamicsResult(Vo, qo)
    return _forward_dynamics_checked(model, base_pose, base_twist, q, base_wrench, tau, order, gravity,
                                     ext_wrench, ext_torque)


def hybrid_dynamics(model: Model, base_pose, base_twist, q, tau, order: int = 0, *, prescribed,
                    base_wrench=None, gravity=DEFAULT_GRAVITY, ext_wrench=None,
                    ext_torque=None, representation: str = "spatial") -> HybridDynamicsResult:
    """Higher-order hybrid dynamics, H-GHYB-FBS (paper Alg. 4).

    Parameters
    ----------
    prescribed : boolean mask (n,) or iterable of joint names whose motion is given. For those,
        ``q`` rows 0..order+2 are inputs and their ``tau`` is an output; for the others ``q`` rows
        0, 1 and ``tau`` rows 0..order are inputs and ``q`` rows 2..order+2 are outputs. An empty
        iterable means no joint is prescribed.
    base_wrench : None -> the base motion is given (``base_twist`` rows 0..order+1) and the base
        wrench is an output; an array (>= order+1, 6) -> the wrench is given, ``base_twist`` row 0
        is used and the base motion is an output.
    tau : (>= order+1, n) torques of the non-prescribed joints (may be None if all are prescribed).
    representation : of ``base_twist`` and ``base_wrench`` (inputs and outputs), as in
        :func:`inverse_dynamics` and :func:`forward_dynamics`.

    Returns
    -------
    HybridDynamicsResult
        ``base_twist`` (order+2, 6), ``base_wrench`` (order+1, 6), ``q`` (order+3, n), ``tau``
        (order+1, n).
    """
    _check_model(model, constrained_ok=True)
    order = _check_order(order)
    mask = _prescribed_mask(model, prescribed)
    if model._constrained:   # fixed base or enforced mimic joints
        return constrained.hybrid_dynamics(model, base_pose, base_twist, q, tau, order, mask, base_wrench,
                                           gravity, ext_wrench, ext_torque, representation)
    if representation != "spatial":
        def run(model, C, V, q, W, tau, order, **kw):
            return _hybrid(model, C, V, q, tau, order, mask, W, forward=False, **kw)
        return _dynamics_in(representation, run, model, base_pose, base_twist, q, base_wrench, tau, order,
                            dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque),
                            HybridDynamicsResult)
    return _hybrid(model, base_pose, base_twist, q, tau, order, mask, base_wrench, gravity,
                   ext_wrench, ext_torque, forward=False)


def forward_kinematics(model: Model, base_pose, base_twist, q, order: int = 0) -> KinematicsResult:
    """Higher-order forward kinematics (paper Alg. 1, with the full Leibniz sum of ERRATA.md).

    ``base_twist`` (>= order+1, 6) spatial twist derivatives, ``q`` (>= order+2, n) joint
    derivatives. Returns body poses (N, 4, 4), body spatial twist derivatives (N, order+1, 6) and
    joint screw derivatives S_j^(0..order) (n, order+1, 6), all in world axes.
    """
    # a mimic-enforced model: the mimic joints' columns are rebuilt from their masters
    return _forward_kinematics(model, base_pose, base_twist, q, order,
                               expand_mimic if getattr(model, "mimic_enforced", False) else None)


def center_of_mass(model: Model, base_pose, base_twist, q, order: int = 0) -> np.ndarray:
    """The system centre of mass and its time derivatives, ``c^(0..order)`` (order+1, 3), world [m].

    ``base_twist`` (>= order, 6) spatial twist derivatives ``V^(0..order-1)`` (unused, may be None,
    at order 0), ``q`` (>= order+1, n) joint derivatives ``q^(0..order)``. Exact jets (Alg. 1 and
    ``c' = v + w x c`` per body); ``order=2`` gives what Pinocchio's ``centerOfMass(q, v, a)`` gives.
    A mimic-enforced model rebuilds its mimic columns from their masters first.
    """
    _check_model(model, constrained_ok=True)
    order = _check_order(order)
    n = model.n_joints
    C = _pose(base_pose)
    if order == 0 and base_twist is None:
        V = np.zeros((1, 6))
    else:
        V = _jet(base_twist, "base_twist", max(order, 1), 6, "spatial twist derivatives 0..order-1")
    Q = np.zeros((order + 1, 0)) if (n == 0 and q is None) else _jet(q, "q", order + 1, n,
                                                                      "joint derivatives 0..order")
    if getattr(model, "mimic_enforced", False) and model.mimic:
        Q = np.ascontiguousarray(expand_mimic(model, Q[:order + 1]))
    out = np.empty((order + 1, 3))
    code = _COM(model.bodyi, model.bodyf, C, V, Q, order, out)
    if code == K.ERR_RESULT_NONFINITE:
        raise ValueError("model: has no mass, so its centre of mass is undefined")
    if code:
        _raise(code)
    return out
