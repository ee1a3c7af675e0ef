"""Public dynamics API: inverse, forward and hybrid dynamics of any order, and kinematics.

Every function validates its inputs at the boundary (``ValueError`` naming the
argument), converts them to flat float64 arrays and calls one compiled kernel of
:mod:`geodyn_ros._kernels`. Conventions (``CONVENTIONS.md``): spatial twists
``(w, v)`` and spatial wrenches ``(n, f)`` in world axes about the world origin; row
``k`` of every derivative array is the k-th time derivative; joint columns follow
``model.joint_names``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _kernels as K
from .model import Model

__all__ = [
    "inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "forward_kinematics",
    "InverseDynamicsResult", "ForwardDynamicsResult", "HybridDynamicsResult", "KinematicsResult",
    "DEFAULT_GRAVITY", "MAX_ORDER",
]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
MAX_ORDER = 60   #: factorials of order + 3 must stay well inside float64


class InverseDynamicsResult(NamedTuple):
    """``base_wrench`` (order+1, 6) spatial base wrench derivatives (the paper's W^0_{1,prop});
    ``tau`` (order+1, n) joint actuation torque derivatives."""
    base_wrench: np.ndarray
    tau: np.ndarray


class ForwardDynamicsResult(NamedTuple):
    """``base_twist`` (order+2, 6) spatial twist derivatives V^(0..order+1) (row 0 echoes the
    input); ``q`` (order+3, n) joint derivatives q^(0..order+2) (rows 0, 1 echo the input)."""
    base_twist: np.ndarray
    q: np.ndarray


class HybridDynamicsResult(NamedTuple):
    """All four jets after hybrid dynamics: ``base_twist`` (order+2, 6), ``base_wrench``
    (order+1, 6), ``q`` (order+3, n), ``tau`` (order+1, n); given entries are echoed."""
    base_twist: np.ndarray
    base_wrench: np.ndarray
    q: np.ndarray
    tau: np.ndarray


class KinematicsResult(NamedTuple):
    """Algorithm 1. ``poses`` (N, 4, 4) world pose of every body frame (``model.link_names``);
    ``twists`` (N, order+1, 6) spatial twist derivatives of every body; ``screws`` (n, order+1, 6)
    derivatives of the current joint screws S_j (world axes)."""
    poses: np.ndarray
    twists: np.ndarray
    screws: np.ndarray


_ID_HOT = K.inverse_dynamics_ws
_FD_HOT = K.forward_dynamics_ws
_new_tuple = tuple.__new__
_empty = np.empty
_ND = np.ndarray
_NO_WEXT = np.zeros((0, 0, 6))
_ZERO_W = np.zeros((1, 6))
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


def _has_time_axis(base_pose) -> bool:
    """True for a (T, 4, 4) stack of poses: the call evaluates a trajectory (:mod:`.batch`)."""
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


def _singular_error(code, model, C, Q, mask):
    """ValueError for a singular articulated inertia at this state, naming the joints."""
    if code == K.ERR_SINGULAR_JOINT:
        from .constrained import singular_joints
        try:
            names = singular_joints(model, C, Q[:1], mask)
        except Exception:   # the message must not hide the error
            names = []
        raise ValueError(f"model: the articulated inertia of joint(s) {', '.join(names) or '(unidentified)'} vanished at "
                         "this state (the mass matrix is singular here), so forward dynamics is undefined; a joint "
                         "whose moving subtree has no mass or inertia needs an <inertial> or a fixed joint")
    raise ValueError(f"model: the base's articulated inertia is singular at this state (total mass "
                     f"{model.total_mass:g} kg), so forward dynamics of the base is undefined")


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


def _hot_args(*named):
    """The hot path's inputs with every argument that is not a float64 ndarray converted once by
    :func:`_f64` (float64 arrays of any layout are taken as they are by the compiled entries;
    None is left for the validating path to report)."""
    out = []
    for name, x in named:
        if type(x) is _ND:
            if x.dtype is not _F64:
                x = x.astype(_F64, order="C") if x.dtype.kind in "iuf" else _f64(x, name)
        elif x is not None:
            x = _f64(x, name)
        out.append(x)
    return out


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


_G0 = np.array(DEFAULT_GRAVITY)
_G0.setflags(write=False)


def _gravity(g):
    if g is DEFAULT_GRAVITY:
        return _G0
    a = _f64(g, "gravity")
    if a.shape != (3,):
        raise ValueError(f"gravity: expected a 3-vector (world frame, m/s^2), got shape {a.shape}")
    return a


def _ext(model, ext_wrench, ext_torque, order):
    if ext_wrench is None and ext_torque is None:   # fast path
        return _NO_WEXT, model._no_ext_torque
    rows = order + 1
    if ext_wrench is None or (hasattr(ext_wrench, "__len__") and len(ext_wrench) == 0):
        wext = _NO_WEXT
    else:
        if not hasattr(ext_wrench, "items"):
            raise ValueError("ext_wrench: expected a mapping {link_name: array (>= order+1, 6)}")
        wext = np.zeros((model.n_bodies, rows, 6))
        for link, w in ext_wrench.items():
            if link not in model.link_to_body:
                raise ValueError(f"ext_wrench: unknown link name {link!r}")
            a = _jet(w, f"ext_wrench[{link!r}]", rows, 6, "spatial wrench derivatives 0..order")
            wext[model.link_to_body[link]] += a[:rows]
    n = model.n_joints
    if ext_torque is None:
        text = model._no_ext_torque
    else:
        text = _jet(ext_torque, "ext_torque", rows, n, "external joint torque derivatives 0..order")
    return wext, text


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
        :mod:`geodyn_ros.representations`; time derivatives are those of the represented
        vectors, Leibniz terms included). ``ext_wrench`` and ``gravity`` stay in world axes.

    Returns
    -------
    InverseDynamicsResult
        ``base_wrench`` (order+1, 6): derivatives of the wrench that must act on the base
        (gravity and ``ext_wrench`` accounted for), spatial unless ``representation`` says
        otherwise; ``tau`` (order+1, n): actuation torques ``Q - ext_torque``.

    Trajectories: with ``base_pose`` of shape (T, 4, 4) every state argument takes a leading time
    axis of T samples (``base_twist`` (T, >= order+2, 6), ``q`` (T, >= order+3, n), ``ext_torque``
    (T, >= order+1, n), ``ext_wrench`` values (T, >= order+1, 6)) and so do the results
    (``base_wrench`` (T, order+1, 6), ``tau`` (T, order+1, n)); samples are evaluated in parallel
    (see :mod:`geodyn_ros.batch`).

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
        if hot is not None and not (type(base_pose) is _ND and base_pose.dtype is _F64 and base_pose.ndim == 2
                                    and type(base_twist) is _ND and base_twist.dtype is _F64
                                    and type(q) is _ND and q.dtype is _F64):
            if _has_time_axis(base_pose):
                hot = None   # a trajectory: straight to the batch kernels
            else:
                base_pose, base_twist, q = _hot_args(("base_pose", base_pose), ("base_twist", base_twist),
                                                     ("q", q))
        if hot is not None:
            w = _empty(hot[1])
            tau = _empty(hot[2])
            try:
                code = _ID_HOT(hot[0], base_pose, base_twist, q, order, w, tau)
            except TypeError:   # a wrong number of dimensions (the validating path names it)
                code = -1
            if code == 0:
                return _new_tuple(InverseDynamicsResult, (w, tau))
    if getattr(model, "_constrained", False):   # fixed base or enforced mimic joints
        from . import constrained
        return constrained.inverse_dynamics(model, base_pose, base_twist, q, order, gravity, ext_wrench,
                                            ext_torque, representation)
    if representation != "spatial":
        from .representations import _dynamics_in
        return _dynamics_in(representation, _id_as_hybrid, model, base_pose, base_twist, q, None, None,
                            order, dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque),
                            lambda V, W, Q, tau: InverseDynamicsResult(W, tau))
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


def _inverse_dynamics_checked(model, base_pose, base_twist, q, order, gravity, ext_wrench, ext_torque):
    """The validating path of :func:`inverse_dynamics` (any input the hot path declines)."""
    _check_model(model)
    order = _check_order(order)
    if _has_time_axis(base_pose):
        from . import batch as _batch   # imported here: batch reuses this module's validators
        w, tau = _batch.inverse_dynamics_batch(model, base_pose, base_twist, q, order, _gravity(gravity),
                                               ext_wrench, ext_torque, _ERRORS)
        return InverseDynamicsResult(w, tau)
    n = model.n_joints
    C = _pose(base_pose)
    V = _jet(base_twist, "base_twist", order + 2, 6, "spatial twist derivatives 0..order+1")
    Q = _jet(q, "q", order + 3, n, "joint derivatives 0..order+2")
    g = _gravity(gravity)
    wext, text = _ext(model, ext_wrench, ext_torque, order)
    w = np.empty((order + 1, 6))
    tau = np.empty((order + 1, n))
    code = K.inverse_dynamics(model.bodyi, model.bodyf, C, V, Q, order, g, wext, text, w, tau)
    if code:
        _raise(code)
    if (gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and order not in model._id_ws):   # later calls of this order take the hot path
        model._id_ws[order] = (K.id_workspace(model.bodyi, model.bodyf, order, _G0), (order + 1, 6),
                               (order + 1, n))
    return InverseDynamicsResult(w, tau)


def forward_dynamics(model: Model, base_pose, base_twist, q, base_wrench, tau, order: int = 0, *,
                     gravity=DEFAULT_GRAVITY, ext_wrench=None, ext_torque=None,
                     representation: str = "spatial") -> ForwardDynamicsResult:
    """Higher-order forward dynamics, H-GABI-FBS (paper Alg. 3, Lemma 2).

    Parameters
    ----------
    base_pose : (4, 4) base pose; base_twist : (>= 1, 6), row 0 (the spatial twist) is used;
    q : (>= 2, n), rows 0 (position) and 1 (velocity) are used;
    base_wrench : (>= order+1, 6) spatial wrench derivatives acting on the base (e.g. propellers);
    tau : (>= order+1, n) joint actuation torque derivatives; gravity, ext_wrench, ext_torque,
    representation as in :func:`inverse_dynamics` (``representation`` applies to ``base_twist``
    and ``base_wrench``, inputs and outputs; a non-spatial wrench jet converts causally, so the
    kernel then runs about ``order/2 + 1`` times).

    Returns
    -------
    ForwardDynamicsResult
        ``base_twist`` (order+2, 6) = V^(0..order+1) and ``q`` (order+3, n) = q^(0..order+2).
        The articulated inertias and the base factorisation are computed once per call and reused
        at every order (Lemma 2).

    Trajectories: with ``base_pose`` (T, 4, 4) every state argument and result takes a leading
    time axis of T samples, as in :func:`inverse_dynamics`.
    """
    if (type(order) is int and gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and type(model) is Model and representation == "spatial"):   # hot path, as inverse_dynamics
        hot = model._fd_ws.get(order)
        if hot is not None and not (type(base_pose) is _ND and base_pose.dtype is _F64 and base_pose.ndim == 2
                                    and type(base_twist) is _ND and base_twist.dtype is _F64
                                    and type(q) is _ND and q.dtype is _F64
                                    and type(base_wrench) is _ND and base_wrench.dtype is _F64
                                    and type(tau) is _ND and tau.dtype is _F64):
            if _has_time_axis(base_pose):
                hot = None   # a trajectory: straight to the batch kernels
            else:
                base_pose, base_twist, q, base_wrench, tau = _hot_args(
                    ("base_pose", base_pose), ("base_twist", base_twist), ("q", q),
                    ("base_wrench", base_wrench), ("tau", tau))
        if hot is not None:
            Vo = _empty(hot[1])
            qo = _empty(hot[2])
            try:
                code = _FD_HOT(hot[0], base_pose, base_twist, q, base_wrench, tau, order, Vo, qo)
            except TypeError:   # None, or a wrong number of dimensions
                code = -1
            if code == 0:
                return _new_tuple(ForwardDynamicsResult, (Vo, qo))
    if getattr(model, "_constrained", False):   # fixed base or enforced mimic joints
        from . import constrained
        _check_model(model, constrained_ok=True)
        res = constrained.hybrid_dynamics(model, base_pose, base_twist, q, tau, order,
                                          np.zeros(model.n_joints, bool), base_wrench, gravity, ext_wrench,
                                          ext_torque, representation)
        return ForwardDynamicsResult(res.base_twist, res.q)
    if representation != "spatial":
        if base_wrench is None:
            raise ValueError("base_wrench: required (>= order+1, 6) base wrench derivatives")
        from .representations import _dynamics_in
        return _dynamics_in(representation, _fd_as_hybrid, model, base_pose, base_twist, q, base_wrench,
                            tau, order, dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque),
                            lambda V, W, Q, T: ForwardDynamicsResult(V, Q))
    _check_model(model)
    order = _check_order(order)
    if _has_time_axis(base_pose):
        from . import batch as _batch
        Vo, qo = _batch.forward_dynamics_batch(model, base_pose, base_twist, q, base_wrench, tau, order,
                                               _gravity(gravity), ext_wrench, ext_torque, _ERRORS)
        return ForwardDynamicsResult(Vo, qo)
    res = _hybrid(model, base_pose, base_twist, q, tau, order, model._no_prescribed,
                  base_wrench, gravity, ext_wrench, ext_torque, forward=True)
    if (gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and order not in model._fd_ws):
        model._fd_ws[order] = (K.fd_workspace(model.bodyi, model.bodyf, order, _G0), (order + 2, 6),
                               (order + 3, model.n_joints))
    return res


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
    HybridDynamicsResult with ``base_twist`` (order+2, 6), ``base_wrench`` (order+1, 6),
    ``q`` (order+3, n), ``tau`` (order+1, n).
    """
    _check_model(model, constrained_ok=True)
    order = _check_order(order)
    mask = _prescribed_mask(model, prescribed)
    if model._constrained:   # fixed base or enforced mimic joints
        from . import constrained
        return constrained.hybrid_dynamics(model, base_pose, base_twist, q, tau, order, mask, base_wrench,
                                           gravity, ext_wrench, ext_torque, representation)
    if representation != "spatial":
        from .representations import _dynamics_in

        def run(model, C, V, q, W, tau, order, **kw):
            return _hybrid(model, C, V, q, tau, order, mask, W, forward=False, **kw)
        return _dynamics_in(representation, run, model, base_pose, base_twist, q, base_wrench, tau, order,
                            dict(gravity=gravity, ext_wrench=ext_wrench, ext_torque=ext_torque),
                            HybridDynamicsResult)
    return _hybrid(model, base_pose, base_twist, q, tau, order, mask, base_wrench, gravity,
                   ext_wrench, ext_torque, forward=False)


def _prescribed_mask(model, prescribed):
    n = model.n_joints
    if prescribed is None:
        raise ValueError("prescribed: required (boolean mask (n,) or iterable of joint names; empty = none)")
    if isinstance(prescribed, str):
        prescribed = [prescribed]
    arr = np.asarray(prescribed) if not isinstance(prescribed, (set, frozenset)) else np.asarray(list(prescribed))
    if arr.dtype == np.bool_:
        if arr.shape != (n,):
            raise ValueError(f"prescribed: boolean mask must have shape ({n},), got {arr.shape}")
        return np.ascontiguousarray(arr)
    mask = np.zeros(n, dtype=np.bool_)
    if arr.size == 0:
        return mask
    if arr.dtype.kind not in "US":
        raise ValueError("prescribed: expected a boolean mask or joint names")
    for name in arr.ravel():
        name = str(name)
        if name not in model.joint_names:
            raise ValueError(f"prescribed: unknown joint name {name!r}")
        mask[model.joint_index(name)] = True
    return mask


def _hybrid(model, base_pose, base_twist, q, tau, order, mask, base_wrench, gravity, ext_wrench,
            ext_torque, forward):
    n = model.n_joints
    C = base_pose
    if not (_fast(C) and C.shape == (4, 4)):
        C = _pose(C)
    given_wrench = base_wrench is not None
    if forward and not given_wrench:
        raise ValueError("base_wrench: required (>= order+1, 6) spatial base wrench derivatives")
    V, Wb = base_twist, base_wrench
    if given_wrench:
        if not (_fast(V) and V.ndim == 2 and V.shape[0] >= 1 and V.shape[1] == 6):
            V = _jet(V, "base_twist", 1, 6, "row 0: the spatial base twist")
        if not (_fast(Wb) and Wb.ndim == 2 and Wb.shape[0] >= order + 1 and Wb.shape[1] == 6):
            Wb = _jet(Wb, "base_wrench", order + 1, 6, "spatial wrench derivatives 0..order")
    else:
        V = _jet(V, "base_twist", order + 2, 6, "spatial twist derivatives 0..order+1 (base motion given)")
        Wb = _ZERO_W
    any_presc = mask is not model._no_prescribed and bool(mask.any())
    mask = mask.astype(np.int64) if mask.dtype != np.int64 else mask
    qrows = order + 3 if any_presc else 2
    Q = q
    if not (_fast(Q) and Q.ndim == 2 and Q.shape[0] >= qrows and Q.shape[1] == n):
        Q = _jet(Q, "q", qrows, n, "joint derivatives 0..order+2 for prescribed joints, else 0..1")
    T = tau
    if T is None:
        if not mask.all():
            raise ValueError("tau: required (>= order+1, n) torques of the joints that are not prescribed")
        T = np.zeros((order + 1, n))
    elif not (_fast(T) and T.ndim == 2 and T.shape[0] >= order + 1 and T.shape[1] == n):
        T = _jet(T, "tau", order + 1, n, "joint torque derivatives 0..order")
    g = _gravity(gravity)
    wext, text = _ext(model, ext_wrench, ext_torque, order)
    out_V = np.empty((order + 2, 6))
    out_q = np.empty((order + 3, n))
    out_w = np.empty((order + 1, 6))
    out_tau = np.empty((order + 1, n))
    code = K.hybrid_dynamics(model.bodyi, model.bodyf, C, V, Q, Wb, T, order, g, wext, text, mask,
                             given_wrench, out_V, out_q, out_w, out_tau)
    if code in (K.ERR_SINGULAR_JOINT, K.ERR_SINGULAR_BASE):
        _singular_error(code, model, C, Q, mask)
    if code:
        _raise(code)
    if forward:
        return ForwardDynamicsResult(out_V, out_q)
    return HybridDynamicsResult(out_V, out_w, out_q, out_tau)


def forward_kinematics(model: Model, base_pose, base_twist, q, order: int = 0) -> KinematicsResult:
    """Higher-order forward kinematics (paper Alg. 1, with the full Leibniz sum of ERRATA.md).

    ``base_twist`` (>= order+1, 6) spatial twist derivatives, ``q`` (>= order+2, n) joint
    derivatives. Returns body poses (N, 4, 4), body spatial twist derivatives (N, order+1, 6) and
    joint screw derivatives S_j^(0..order) (n, order+1, 6), all in world axes.
    """
    _check_model(model, constrained_ok=True)
    order = _check_order(order)
    n, N = model.n_joints, model.n_bodies
    C = _pose(base_pose)
    if model.fixed_base and base_twist is None:
        base_twist = np.zeros((order + 1, 6))
    V = _jet(base_twist, "base_twist", order + 1, 6, "spatial twist derivatives 0..order")
    Q = _jet(q, "q", order + 2, n, "joint derivatives 0..order+1")
    if model.mimic_enforced:
        from .constrained import expand_mimic
        Q = expand_mimic(model, Q[:order + 2])
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S = np.zeros((N, order + 1, 6))
    Vout = np.empty((N, order + 1, 6))
    code = K.forward_kinematics(model.bodyi, model.bodyf, C, V, Q, order, R, P, S, Vout)
    if code:
        _raise(code)
    poses = np.zeros((N, 4, 4))
    poses[:, :3, :3] = R
    poses[:, :3, 3] = P
    poses[:, 3, 3] = 1.0
    # body frames: F_i maps home to current world pose, the link frame's home pose is link_home
    for i, name in enumerate(model.link_names):
        poses[i] = poses[i] @ model.link_home[name]
    return KinematicsResult(poses, Vout, S[1:])
