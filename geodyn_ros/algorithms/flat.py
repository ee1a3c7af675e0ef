"""Differential flatness of an under-actuated (collinear) multirotor carrying an arm.

A collinear multirotor (quadrotor, flat hexarotor, gz-sim's X3/X4) thrusts along its base link's
``+z`` axis only: in base axes it produces the force ``(0, 0, T)`` and any moment, never a lateral
force. Its flat outputs are the **system centre of mass** ``c`` (world), the **base yaw** ``psi``
and the **joint angles** ``q``: everything else follows from their jets
(:func:`flat_inverse_dynamics`).

The map (one instant; every line is pushed through exact truncated Taylor series, so the
results carry exact time derivatives of any order)
---------------------------------------------------------------------------------------------
1. The arm's forces are internal, so the total linear momentum obeys ``m c'' = T z_B + m g``
   (``g`` the gravity vector, ``(0, 0, -9.81)`` by default), wherever the arm is attached. Hence
   ``f = m (c'' - g)``, the thrust ``T = |f|`` and the thrust axis ``z_B = f / |f|``. Free fall
   (``c'' = g``) leaves ``z_B`` undefined.
2. **Yaw, Z-Y-X (REP 103):** ``psi = atan2(R[1, 0], R[0, 0])``, the heading of ``x_B``'s horizontal
   projection. With ``y_C = (-sin psi, cos psi, 0)``: ``x_B = (y_C x z_B) / |y_C x z_B|``,
   ``y_B = z_B x x_B``, ``R = [x_B y_B z_B]``. Singular where ``z_B`` is parallel to ``y_C`` (a
   90 deg roll). (Mellinger & Kumar 2011 use the Z-X-Y yaw, ``x_C = (cos psi, sin psi, 0)``: a
   different angle once the vehicle tilts.)
3. **Base position:** ``p = c - R r(q)``, with ``r(q)`` the system CoM in base axes relative to the
   base-link origin (a function of the joint angles only).
4. **Twist:** the spatial twist ``V = (w, p' + p x w)`` with ``hat(w) = R' R^T``. ``V^(k)`` needs
   ``R^(k+1)``, hence ``c^(k+3)`` and ``psi^(k+1)``, and ``p^(k+1)`` needs ``q^(k+1)``.
5. **Inputs:** inverse dynamics of order ``r`` (paper Alg. 1-2) of this motion gives the spatial
   base wrench jet and the joint torques. In base axes its force is ``(0, 0, T)`` at every order
   (a check, not an assumption: ``test/algorithms/test_flat.py``); its moment about the base origin is the
   torque the rotors must produce, ``n_b = R^T (n - p x f)``.

Derivative orders: order ``r`` reads ``c^(0..r+4)``, ``psi^(0..r+2)`` and ``q^(0..r+2)``; ``r = 0``
(thrust and torques) needs the snap of ``c``, ``r = 1`` (rotor-lag compensation) ``c^(5)``,
``r = 2`` (elastic joints) ``c^(6)``.

References: Wei, Hårderup & Burdick (arXiv 2111.01302), Yüksel, Buondonno & Franchi (IROS 2016),
Welde, Paulos & Kumar (RA-L 2021) for the flat outputs; the kernel is
:mod:`geodyn_ros.algorithms.kernels.flat`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model.model import Model
from .batch import _chunks
from .checks import _F64, _ND, _check_model, _check_order, _f64, _kernel_ready
from .constrained import expand_mimic, project_mimic
from .dynamics import DEFAULT_GRAVITY, _gravity
from .kernels import common as K
from .kernels import flat as KF

__all__ = ["FlatResult", "FlatWorkspace", "flat_inverse_dynamics", "FREE_FALL_RTOL", "YAW_SINGULAR_TOL", "yaw_of"]

FREE_FALL_RTOL = KF.FREE_FALL_RTOL
YAW_SINGULAR_TOL = KF.YAW_SINGULAR_TOL


class FlatResult(NamedTuple):
    """The state, inputs and their jets that follow from the flat outputs (order ``r``).

    * ``base_pose`` (4, 4): base-link pose in world.
    * ``base_twist`` (r+2, 6): spatial base twist derivatives ``V^(0..r+1)`` (angular first).
    * ``q`` (r+3, n): joint derivatives ``q^(0..r+2)`` (the input rows, echoed).
    * ``base_wrench`` (r+1, 6): spatial wrench derivatives that must act on the base (moment
      first, about the world origin, world axes); its body force is ``(0, 0, T)``.
    * ``tau`` (r+1, n): joint actuation torque derivatives.
    * ``thrust`` (r+1,): ``T^(0..r)`` [N] along the base link's ``+z``.
    * ``body_torque`` (r+1, 3): moment derivatives [N m] the rotors must produce, base axes, about
      the base-link origin (the time derivatives of the base-axes vector).

    With a leading trajectory axis every field gains it: ``base_pose`` (T, 4, 4), ``thrust``
    (T, r+1), ...
    """

    base_pose: np.ndarray
    base_twist: np.ndarray
    q: np.ndarray
    base_wrench: np.ndarray
    tau: np.ndarray
    thrust: np.ndarray
    body_torque: np.ndarray


def _ready(x):
    """A float64 array the hot entry takes as it is (C-contiguous, writeable, aligned)."""
    return type(x) is _ND and x.dtype is _F64 and _kernel_ready(x)


_new = tuple.__new__
_empty = np.empty
_HOT = KF.flat_map_ws


def _message(code, sample, com_acc=None):
    """The one-line ValueError message of a kernel error code (``sample``: index or None)."""
    at = "" if sample is None else f"[{sample}]"
    where = "" if sample is None else f" at sample {sample}"
    if code == K.ERR_FREE_FALL:
        return (f"com{at}: free fall{where}: the CoM acceleration c'' equals the gravity vector (|c'' - g| <= "
                f"{FREE_FALL_RTOL:g} max(|g|, 1 m/s^2)), so the thrust direction, and with it the attitude, is undefined")
    if code == K.ERR_YAW_SINGULAR:
        return (f"yaw{at}: yaw singularity{where}: the thrust axis z_B is parallel to y_C = (-sin psi, cos psi, 0) "
                f"(|y_C x z_B| <= {YAW_SINGULAR_TOL:g}, a 90 deg roll about the heading), where the Z-Y-X yaw does not "
                "fix the attitude")
    what = {K.ERR_COM_NONFINITE: ("com", "contains NaN or Inf in the rows used"),
            K.ERR_YAW_NONFINITE: ("yaw", "contains NaN or Inf in the rows used"),
            K.ERR_Q_NONFINITE: ("q", "contains NaN or Inf in the rows used"),
            K.ERR_GRAVITY_NONFINITE: ("gravity", "contains NaN or Inf"),
            K.ERR_RESULT_NONFINITE: ("inputs", "produce a non-finite result (overflow: magnitudes too large?)")}
    arg, msg = what.get(code, ("inputs", f"invalid (kernel error {code})"))
    if arg == "gravity":
        return f"gravity: {msg}"
    return f"{arg}{at}: {msg}"


def _array(x, name, batch, rows, width, what, T=None):
    """float64 C-contiguous array of shape (>= rows, width) or, with ``batch``, (T, >= rows, width)
    (``width`` None: no column axis, as the yaw)."""
    if x is None:
        raise ValueError(f"{name}: required ({what})")
    a = _f64(x, name)
    ndim = (2 if batch else 1) + (width is not None)
    ax = 1 if batch else 0
    ok = (a.ndim == ndim and a.shape[ax] >= rows and (width is None or a.shape[-1] == width)
          and (T is None or a.shape[0] == T))
    if not ok:
        lead = [] if not batch else [str(T) if T is not None else "T"]
        want = ", ".join([*lead, f">= {rows}", *([] if width is None else [str(width)])])
        extra = "" if T is None else f"; a leading time axis of T = {T} samples like com"
        raise ValueError(f"{name}: expected shape ({want}) ({what}{extra}), got {a.shape}")
    return a


def flat_inverse_dynamics(model: Model, com, yaw, q, order: int = 0, *, gravity=DEFAULT_GRAVITY) -> FlatResult:
    """The flat map of a collinear multirotor manipulator (module docstring): from the jets of the
    system CoM, the base yaw and the joint angles to the base motion, the base wrench, the joint
    torques, the thrust and the body torque, with their time derivatives to ``order``.

    Parameters
    ----------
    model : Model
        A floating-base model whose base link thrusts along its ``+z`` axis (rotor links locked
        into the base, e.g. ``load_urdf(..., locked_joints=rotor_joints)``); mimic joints enforced
        with ``mimic=True`` are supported. A fixed-base model raises ``ValueError``.
    com : (>= r+5, 3) the system CoM ``c^(0..r+4)`` in world [m, m/s, ...].
    yaw : (>= r+3,) the Z-Y-X yaw ``psi^(0..r+2)`` [rad, rad/s, ...], ``psi = atan2(R[1,0], R[0,0])``.
    q : (>= r+3, n) the joint jets ``q^(0..r+2)``, columns ``model.joint_names`` (``None`` if n = 0).
    order : r >= 0, the derivative order of the wrench, torque, thrust and body-torque jets.
    gravity : (3,) gravity acceleration in world, default ``(0, 0, -9.81)``.

    Returns
    -------
    FlatResult
        ``base_pose`` (4, 4), ``base_twist`` (r+2, 6) spatial, ``q`` (r+3, n), ``base_wrench``
        (r+1, 6) spatial, ``tau`` (r+1, n), ``thrust`` (r+1,), ``body_torque`` (r+1, 3).

    Notes
    -----
    Trajectories: ``com`` (T, >= r+5, 3), ``yaw`` (T, >= r+3) and ``q`` (T, >= r+3, n) give every
    field a leading axis of T samples (evaluated in parallel, as :func:`geodyn_ros.inverse_dynamics`).

    Raises
    ------
    ValueError
        naming the argument: a fixed-base model, too few rows, NaN/Inf; free fall (``c'' = g``) or
        the yaw singularity (``z_B`` parallel to ``y_C``), naming the sample.

    Example
    -------
    >>> com = np.zeros((5, 3)); yaw = np.zeros(3); q = np.zeros((3, model.n_joints))
    >>> res = flat_inverse_dynamics(model, com, yaw, q)      # hover with the arm at rest
    >>> res.thrust[0]                                        # the weight: m * 9.81
    """
    # hot path: a work buffer of this order exists and the default gravity; inputs that are not
    # C-contiguous float64 arrays (lists, float32, Fortran order, views) are converted once here
    if type(order) is int and gravity is DEFAULT_GRAVITY and type(model) is Model:
        hot = model._flat_ws.get(order)
        if hot is not None:
            if not _ready(com):
                com = _f64(com, "com")
            if not _ready(yaw):
                yaw = _f64(yaw, "yaw")
            if not _ready(q) and q is not None:
                q = _f64(q, "q")
            n = model._n
            out = (_empty((4, 4)), _empty((order + 2, 6)), _empty((order + 3, n)), _empty((order + 1, 6)),
                   _empty((order + 1, n)), _empty(order + 1), _empty((order + 1, 3)))
            try:
                code = _HOT(hot, com, yaw, q, order, *out)
            except TypeError:   # None, a trajectory or a wrong number of dimensions: the validating path
                code = -1
            if code == 0:
                return _new(FlatResult, out)
    return _flat_checked(model, com, yaw, q, order, gravity)


def _flat_checked(model, com, yaw, q, order, gravity):
    """The validating path of :func:`flat_inverse_dynamics` (any input the hot path declines)."""
    _check_model(model, constrained_ok=True)
    if model.fixed_base:
        raise ValueError("model: loaded with fixed_base=True; the flat map needs a floating base (a multirotor "
                         "whose base moves), load the URDF without fixed_base")
    order = _check_order(order)
    g = _gravity(gravity)
    plain = model._plain
    n = model.n_joints
    rows = order + 3
    batch = np.ndim(com) == 3
    c = _array(com, "com", batch, order + 5, 3, "the system CoM jet c^(0..r+4)" + (" per sample" if batch else "")
               + ", world")
    T = c.shape[0] if batch else None
    if batch and T < 1:
        raise ValueError("com: expected at least one sample")
    y = _array(yaw, "yaw", batch, rows, None, "the Z-Y-X yaw jet psi^(0..r+2)", T)
    if n == 0 and q is None:
        Q = np.zeros(((T,) if batch else ()) + (rows, 0))
    else:
        Q = _array(q, "q", batch, rows, n, "the joint jets q^(0..r+2), columns model.joint_names", T)
    if model.mimic_enforced and model.mimic:   # mimic columns follow their masters at every order
        Q = np.ascontiguousarray(np.stack([expand_mimic(model, Qt[:rows]) for Qt in Q]) if batch
                                 else expand_mimic(model, Q[:rows]))
    lead = (c.shape[0],) if batch else ()
    out = (np.empty(lead + (4, 4)), np.empty(lead + (order + 2, 6)), np.empty(lead + (order + 3, n)),
           np.empty(lead + (order + 1, 6)), np.empty(lead + (order + 1, n)), np.empty(lead + (order + 1,)),
           np.empty(lead + (order + 1, 3)))
    if batch:
        code, where = KF.flat_map_batch(plain.bodyi, plain.bodyf, c, y, Q, order, g, *out, _chunks(c.shape[0]))
        if code:
            raise ValueError(_message(code, int(where)))
    else:
        # the hot path's compiled entry on a work buffer of this gravity: one machine code for
        # FlatWorkspace, the hot path and this one (a helper compiled into two callers can differ in
        # its last bits under fastmath, and which copy runs depended on the cache state)
        ws = KF.flat_workspace(plain.bodyi, plain.bodyf, order, g)
        code = _HOT(ws, np.ascontiguousarray(c), np.ascontiguousarray(y), np.ascontiguousarray(Q), order, *out)
        if code:
            raise ValueError(_message(code, None))
        if gravity is DEFAULT_GRAVITY and model is plain and order not in model._flat_ws:
            model._flat_ws[order] = ws          # (g is the default gravity here)
    out = list(out)
    if model.mimic_enforced and model.mimic:
        out[4] = np.stack([project_mimic(model, t) for t in out[4]]) if batch else project_mimic(model, out[4])
    return FlatResult(*out)


class FlatWorkspace:
    """Preallocated order-``order`` flat map of one model (:func:`flat_inverse_dynamics` without
    a per-call allocation): a work buffer and the seven result arrays are made once, and
    :meth:`compute` overwrites them in one compiled call.

    ``result`` is the :class:`FlatResult` of the arrays every call writes (valid until the next
    call; copy what must outlive it). The values are bit-identical to
    :func:`flat_inverse_dynamics` (one compiled entry, ``flat_map_ws``, for both, on a work buffer
    of the same gravity; ``test/algorithms/test_flat.py``, also with an empty cache).

    Parameters
    ----------
    model : Model
        Floating base; a mimic-enforced model takes the general path every call.
    order : int
        Derivative order ``r >= 0`` of every call on this workspace.
    gravity : (3,) array_like
        Gravity acceleration in world, fixed for the workspace.
    """

    __slots__ = ("model", "order", "gravity", "result", "_ws", "_out")

    def __init__(self, model: Model, order: int = 0, *, gravity=DEFAULT_GRAVITY):
        _check_model(model, constrained_ok=True)
        if model.fixed_base:
            raise ValueError("model: loaded with fixed_base=True; the flat map needs a floating base")
        order = _check_order(order)
        g = _gravity(gravity)
        if not np.all(np.isfinite(g)):
            raise ValueError("gravity: contains NaN or Inf")
        self.model, self.order, self.gravity = model, order, gravity
        n = model.n_joints
        self._out = (np.empty((4, 4)), np.empty((order + 2, 6)), np.empty((order + 3, n)), np.empty((order + 1, 6)),
                     np.empty((order + 1, n)), np.empty(order + 1), np.empty((order + 1, 3)))
        self.result = FlatResult(*self._out)
        plain = model._plain
        # the hot kernel on the plain model only (a mimic-enforced model expands and projects: general path)
        g = g.copy()
        g.flags.writeable = False   # the type the kernels are compiled for (the default gravity's)
        self._ws = KF.flat_workspace(plain.bodyi, plain.bodyf, order, g) if model is plain else None

    def compute(self, com, yaw, q) -> FlatResult:
        """The flat map of ``com`` (>= r+5, 3), ``yaw`` (>= r+3,), ``q`` (>= r+3, n) (as
        :func:`flat_inverse_dynamics`) into :attr:`result`, which is returned. Raises the same
        ``ValueError`` as :func:`flat_inverse_dynamics` (then :attr:`result` is undefined)."""
        ws = self._ws
        if ws is not None and _ready(com) and _ready(yaw) and _ready(q):
            try:
                code = _HOT(ws, com, yaw, q, self.order, *self._out)
            except TypeError:   # a wrong number of dimensions: the validating path
                code = -1
            if code == 0:
                return self.result
        res = flat_inverse_dynamics(self.model, com, yaw, q, self.order, gravity=self.gravity)   # raises, or:
        for dst, src in zip(self._out, res):
            dst[...] = src
        return self.result


def yaw_of(base_pose) -> float:
    """The Z-Y-X yaw ``psi = atan2(R[1, 0], R[0, 0])`` [rad] of a pose (4, 4) or rotation (3, 3)."""
    R = np.asarray(base_pose, float)
    if R.shape not in ((4, 4), (3, 3)):
        raise ValueError(f"base_pose: expected shape (4, 4) or (3, 3), got {R.shape}")
    return float(np.arctan2(R[1, 0], R[0, 0]))

