"""The spatial single-sample core of the dynamics: inverse, forward and hybrid dynamics of any
order and forward kinematics, for one sample in the spatial representation.

Every function validates its inputs (:mod:`.checks`: ``ValueError`` naming the argument),
converts them to flat float64 arrays and calls one compiled kernel of :mod:`.kernels`. The
public entry points (hot path, then dispatch to constrained models, representations and
trajectories) are in :mod:`.api`; the modules of :mod:`geodyn_ros.algorithms` above this one
call the private functions here, never :mod:`.api`. Conventions (``CONVENTIONS.md``): spatial
twists ``(w, v)`` and spatial wrenches ``(n, f)`` in world axes about the world origin; row ``k``
of every derivative array is the k-th time derivative; joint columns follow ``model.joint_names``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model.model import Model
from .checks import (_F64, _ND, MAX_ORDER, _check_model, _check_order, _check_regular, _f64, _fast, _has_time_axis,
                     _hot_args, _jet, _pose, _raise)
from .kernels import common as K
from .kernels import hybrid as KH
from .kernels import inverse as KI
from .kernels import kinematics as KK

__all__ = [
    "InverseDynamicsResult", "ForwardDynamicsResult", "HybridDynamicsResult", "KinematicsResult",
    "DEFAULT_GRAVITY", "MAX_ORDER", "singular_joints",
]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


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


_ID_HOT = KI.inverse_dynamics_ws
_FD_HOT = KH.forward_dynamics_ws
_new_tuple = tuple.__new__
_empty = np.empty
_NO_WEXT = np.zeros((0, 0, 6))
_ZERO_W = np.zeros((1, 6))


def _singular_error(code, model, C, Q, mask):
    """ValueError for a singular articulated inertia at this state, naming the joints (with nothing
    prescribed, the loader's reason when the mass matrix is singular at every configuration)."""
    if not mask.any():
        _check_regular(model)
    if code == K.ERR_SINGULAR_JOINT:
        try:
            names = singular_joints(model, C, Q[:1], mask)
        except Exception:   # the message must not hide the error
            names = []
        raise ValueError(f"model: the articulated inertia of joint(s) {', '.join(names) or '(unidentified)'} vanished at "
                         "this state (the mass matrix is singular here), so forward dynamics is undefined; a joint "
                         "whose moving subtree has no mass or inertia needs an <inertial> or a fixed joint")
    raise ValueError(f"model: the base's articulated inertia is singular at this state (total mass "
                     f"{model.total_mass:g} kg), so forward dynamics of the base is undefined")


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


def _inverse_dynamics_checked(model, base_pose, base_twist, q, order, gravity, ext_wrench, ext_torque):
    """The validating path of inverse dynamics (one sample, spatial, plain model): any input the hot
    path of :func:`geodyn_ros.algorithms.api.inverse_dynamics` declines."""
    _check_model(model)
    order = _check_order(order)
    n = model.n_joints
    C = _pose(base_pose)
    V = _jet(base_twist, "base_twist", order + 2, 6, "spatial twist derivatives 0..order+1")
    Q = _jet(q, "q", order + 3, n, "joint derivatives 0..order+2")
    g = _gravity(gravity)
    wext, text = _ext(model, ext_wrench, ext_torque, order)
    w = np.empty((order + 1, 6))
    tau = np.empty((order + 1, n))
    code = KI.inverse_dynamics(model.bodyi, model.bodyf, C, V, Q, order, g, wext, text, w, tau)
    if code:
        _raise(code)
    if (gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and order not in model._id_ws):   # later calls of this order take the hot path
        model._id_ws[order] = (KI.id_workspace(model.bodyi, model.bodyf, order, _G0), (order + 1, 6),
                               (order + 1, n))
    return InverseDynamicsResult(w, tau)


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
    code = KH.hybrid_dynamics(model.bodyi, model.bodyf, C, V, Q, Wb, T, order, g, wext, text, mask,
                             given_wrench, out_V, out_q, out_w, out_tau)
    if code in (K.ERR_SINGULAR_JOINT, K.ERR_SINGULAR_BASE):
        _singular_error(code, model, C, Q, mask)
    if code:
        _raise(code)
    if forward:
        return ForwardDynamicsResult(out_V, out_q)
    return HybridDynamicsResult(out_V, out_w, out_q, out_tau)


def _forward_kinematics(model, base_pose, base_twist, q, order=0, expand=None) -> KinematicsResult:
    """Forward kinematics, the core of :func:`geodyn_ros.algorithms.api.forward_kinematics`; ``expand``
    (e.g. ``constrained.expand_mimic``) rebuilds the joint columns of a mimic-enforced model.

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
    if expand is not None:
        Q = expand(model, Q[:order + 2])
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    S = np.zeros((N, order + 1, 6))
    Vout = np.empty((N, order + 1, 6))
    code = KK.forward_kinematics(model.bodyi, model.bodyf, C, V, Q, order, R, P, S, Vout)
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


def _forward_dynamics_checked(model, base_pose, base_twist, q, base_wrench, tau, order, gravity, ext_wrench,
                              ext_torque):
    """The validating path of forward dynamics (one sample, spatial, plain model, ``model`` and
    ``order`` already checked): any input the hot path of
    :func:`geodyn_ros.algorithms.api.forward_dynamics` declines."""
    res = _hybrid(model, base_pose, base_twist, q, tau, order, model._no_prescribed,
                  base_wrench, gravity, ext_wrench, ext_torque, forward=True)
    if (gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and order not in model._fd_ws):
        model._fd_ws[order] = (KH.fd_workspace(model.bodyi, model.bodyf, order, _G0), (order + 2, 6),
                               (order + 3, model.n_joints))
    return res


def _inverse_dynamics(model, base_pose, base_twist, q, order, gravity=DEFAULT_GRAVITY, ext_wrench=None,
                      ext_torque=None):
    """Spatial inverse dynamics of one sample of a plain model, for the layers above (as the public
    function with ``representation="spatial"``: the hot entry when the model has a work buffer of
    this order and the call uses the defaults, else the validating path)."""
    if (type(order) is int and gravity is DEFAULT_GRAVITY and ext_wrench is None and ext_torque is None
            and type(model) is Model):
        hot = model._id_ws.get(order)
        if hot is not None and not _has_time_axis(base_pose):
            if (type(base_pose) is _ND and base_pose.dtype is _F64 and type(base_twist) is _ND
                    and base_twist.dtype is _F64 and type(q) is _ND and q.dtype is _F64):
                C, V, Q = base_pose, base_twist, q   # float64 of any layout: as they are, no call
            else:
                C, V, Q = _hot_args(("base_pose", base_pose), ("base_twist", base_twist), ("q", q))
            w = _empty(hot[1])
            tau = _empty(hot[2])
            try:
                code = _ID_HOT(hot[0], C, V, Q, order, w, tau)
            except TypeError:
                code = -1
            if code == 0:
                return _new_tuple(InverseDynamicsResult, (w, tau))
    return _inverse_dynamics_checked(model, base_pose, base_twist, q, order, gravity, ext_wrench, ext_torque)


def _hybrid_dynamics(model, base_pose, base_twist, q, tau, order, prescribed, base_wrench=None,
                     gravity=DEFAULT_GRAVITY, ext_wrench=None, ext_torque=None):
    """Spatial hybrid dynamics of one sample of a plain model, for the layers above (as the public
    function with ``representation="spatial"``)."""
    _check_model(model)
    order = _check_order(order)
    mask = _prescribed_mask(model, prescribed)
    return _hybrid(model, base_pose, base_twist, q, tau, order, mask, base_wrench, gravity,
                   ext_wrench, ext_torque, forward=False)


# ------------------------------------------------------------------ singular articulated inertia

def singular_joints(model, base_pose, q, prescribed=None, rtol=1e-12):
    """Names of the joints whose articulated inertia about their axis vanishes at this state
    (relative to the largest of the same joint type; the kernels' test), from a NumPy
    articulated-body pass over the plain tree. Used to name the joints in forward/hybrid dynamics errors."""
    n, N = model.n_joints, model.n_bodies
    Qz = np.zeros((2, n))
    Qz[0] = np.asarray(q, float)[0] if np.ndim(q) == 2 else np.asarray(q, float)
    kin = _forward_kinematics(model, base_pose, np.zeros((1, 6)), Qz, 0)
    presc = np.zeros(n, bool) if prescribed is None else np.asarray(prescribed, bool)
    MA = np.zeros((N, 6, 6))
    S = np.zeros((N, 6))
    for i in range(N):
        F = kin.poses[i] @ np.linalg.inv(model.link_home[model.link_names[i]])   # home -> current
        R, p = F[:3, :3], F[:3, 3]
        c = R @ model.com[i] + p
        Ic = R @ model.inertia[i] @ R.T
        m = model.mass[i]
        cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        MA[i, :3, :3] = Ic - m * cx @ cx
        MA[i, :3, 3:] = m * cx
        MA[i, 3:, :3] = -m * cx
        MA[i, 3:, 3:] = m * np.eye(3)
        if i:
            S[i] = kin.screws[i - 1, 0]
    D = np.zeros(N)
    for i in range(N - 1, 0, -1):
        p = model.parent[i]
        Ui = MA[i] @ S[i]
        D[i] = S[i] @ Ui
        if presc[i - 1] or D[i] <= 1e-300:
            MA[p] += MA[i]
        else:
            MA[p] += MA[i] - np.outer(Ui, Ui) / D[i]
    out = []
    for typ in (0, 1):
        idx = [i for i in range(1, N) if not presc[i - 1] and model.jtype[i] == typ]
        if idx:
            ref = max(D[i] for i in idx)
            out += [model.joint_names[i - 1] for i in idx if D[i] <= max(rtol * ref, 1e-300)]
    return out
