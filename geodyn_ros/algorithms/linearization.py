"""Derivatives of the dynamics and the singularity-free SE(3) linearization (Bos et al.).

State and perturbation convention (the same for every function here)
----------------------------------------------------------------------
The state is ``x = (C, q, V, qd)``: base pose ``C`` (4, 4), joint positions ``q`` (n,),
base twist ``V`` (6,) and joint rates ``qd`` (n,). A perturbation is the vector
``z = (delta, dq, dV, dqd)`` of length ``2 (6 + n)`` acting as::

    C -> C exp(hat(delta)),  q -> q + dq,  V -> V + dV,  qd -> qd + dqd

``delta = (dw, dv)`` is angular first and in **base axes** (left-trivialized, Bos eq. (28);
Pinocchio's ``integrate`` of a free-flyer does the same with linear first).

``representation`` selects what ``V``, the base acceleration and the base wrench are:

* ``"spatial"`` (default, CONVENTIONS.md): spatial twist ``(w, pdot + p x w)`` in world axes,
  its time derivative, and the spatial base wrench (moment about the world origin, world axes);
* ``"body"`` (the paper's choice): body twist ``Ad_C^-1 V`` (base axes), its time derivative,
  and the body wrench ``Ad_C^T W`` (moment about the base origin, base axes).

Generalised accelerations ``nudot = (Vdot, qdd)`` and forces ``(W, tau)`` use the same
representation. Gravity and ``ext_wrench`` (spatial, world axes, as everywhere in geodyn_ros)
are held fixed in the world under every perturbation; ``ext_torque`` is held fixed.

Functions
---------
* :func:`inverse_dynamics_derivatives` -- ``ID(x, nudot) = M nudot + h`` (Bos eq. (39)) and
  ``d ID / d(delta, q, V, qd)``, at *arbitrary* (not necessarily consistent) inputs; the
  derivative with respect to ``nudot`` is the mass matrix.
* :func:`forward_dynamics_derivatives` -- ``nudot = FD(x, u)`` and ``d FD / dz = -M^-1 d ID / dz``
  evaluated at the consistent point (Bos Prop. 3), ``d FD / du = M^-1``.
* :func:`inverse_mass_matrix` -- ``M^-1`` by an articulated-body recursion (O(N n)).
* :func:`linearize` -- ``A``, ``B`` of ``dz/dt = A z + B w`` (Bos Props. 1–2) along any state and
  input, with ``w = d(W, tau)`` the input perturbation.

All derivatives are computed by one recursive pass (:mod:`geodyn_ros.algorithms.kernels.derivatives`),
not by finite differences.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model.model import Model
from .checks import _check_model, _check_regular, _jet, _pose, _raise
from .dynamics import DEFAULT_GRAVITY, _ext, _gravity, _singular_error
from .kernels import common as K
from .kernels import derivatives as DK

__all__ = [
    "inverse_dynamics_derivatives", "forward_dynamics_derivatives", "inverse_mass_matrix",
    "linearize", "IDDerivatives", "FDDerivatives", "Linearization", "REPRESENTATIONS",
    "state_labels", "input_labels",
]

#: base twist / wrench representations accepted by this module
REPRESENTATIONS = ("spatial", "body")

_NO_WEXT = np.zeros((0, 6))
_NO_TEXT = np.zeros(0)
_EMPTY2 = np.zeros((0, 0))
_EMPTY1 = np.zeros(0)
_ZERO_TWIST = np.zeros((1, 6))


class IDDerivatives(NamedTuple):
    """Derivatives of the extended inverse dynamics ``(W, tau) = ID(x, nudot)``.

    ``base_wrench`` (6,), ``tau`` (n,): the value (``base_wrench`` is the virtual wrench
    Bos calls ``tau_b``; zero exactly when the inputs are consistent with a free base).
    ``d_base_pose`` (6+n, 6), ``d_q`` (6+n, n), ``d_base_twist`` (6+n, 6), ``d_qd`` (6+n, n):
    partial derivatives of ``(W, tau)`` (rows: 6 wrench components, then ``model.joint_names``).
    ``mass_matrix`` (6+n, 6+n): the derivative with respect to ``nudot``.
    """
    base_wrench: np.ndarray
    tau: np.ndarray
    d_base_pose: np.ndarray
    d_q: np.ndarray
    d_base_twist: np.ndarray
    d_qd: np.ndarray
    mass_matrix: np.ndarray

    @property
    def d_state(self) -> np.ndarray:
        """(6+n, 2(6+n)) ``[d_base_pose, d_q, d_base_twist, d_qd]`` (columns in state order)."""
        return np.concatenate([self.d_base_pose, self.d_q, self.d_base_twist, self.d_qd], axis=1)


class FDDerivatives(NamedTuple):
    """Forward dynamics ``nudot = FD(x, u)`` and its derivatives (Bos Prop. 3).

    ``base_accel`` (6,), ``qdd`` (n,): the value. ``d_base_pose`` (6+n, 6), ``d_q`` (6+n, n),
    ``d_base_twist`` (6+n, 6), ``d_qd`` (6+n, n): derivatives of ``nudot`` with respect to the
    state; ``d_input`` (6+n, 6+n) = ``M^-1``: with respect to ``u = (base_wrench, tau)``.
    """
    base_accel: np.ndarray
    qdd: np.ndarray
    d_base_pose: np.ndarray
    d_q: np.ndarray
    d_base_twist: np.ndarray
    d_qd: np.ndarray
    d_input: np.ndarray

    @property
    def d_state(self) -> np.ndarray:
        """(6+n, 2(6+n)) ``[d_base_pose, d_q, d_base_twist, d_qd]``."""
        return np.concatenate([self.d_base_pose, self.d_q, self.d_base_twist, self.d_qd], axis=1)


class Linearization(NamedTuple):
    """``dz/dt = A z + B w`` about a state and input (Bos Props. 1–2).

    ``A`` (2(6+n), 2(6+n)) and ``B`` (2(6+n), 6+n); ``z = (delta, dq, dV, dqd)`` (see the module
    docstring), ``w = (dW, dtau)`` in the chosen ``representation``. For a robot without base
    actuation use ``B[:, 6:]`` (= ``[0; 0; M^-1 S]`` of Prop. 2). ``base_accel`` (6,), ``qdd`` (n,):
    the nominal accelerations (the vector field at the point). ``representation``: as given.
    """
    A: np.ndarray
    B: np.ndarray
    base_accel: np.ndarray
    qdd: np.ndarray
    representation: str


def state_labels(model: Model) -> tuple:
    """Names of the ``2 (6+n)`` entries of ``z``: ``delta_wx .. delta_vz``, ``q:<joint>``,
    ``V_wx .. V_vz``, ``qd:<joint>`` (the row/column labels of ``A``)."""
    axes = ("wx", "wy", "wz", "vx", "vy", "vz")
    return (tuple(f"delta_{a}" for a in axes) + tuple(f"q:{j}" for j in model.joint_names)
            + tuple(f"V_{a}" for a in axes) + tuple(f"qd:{j}" for j in model.joint_names))


def input_labels(model: Model) -> tuple:
    """Names of the ``6+n`` inputs ``(W, tau)``: ``W_nx .. W_fz``, ``tau:<joint>`` (columns of ``B``)."""
    return (tuple(f"W_{a}" for a in ("nx", "ny", "nz", "fx", "fy", "fz"))
            + tuple(f"tau:{j}" for j in model.joint_names))


def _representation(rep) -> bool:
    """True for the body representation."""
    if rep == "spatial":
        return False
    if rep == "body":
        return True
    raise ValueError(f"representation: expected one of {REPRESENTATIONS}, got {rep!r}")


def _ext_row0(model, ext_wrench, ext_torque):
    wext, text = _ext(model, ext_wrench, ext_torque, 0)
    w = np.ascontiguousarray(wext[:, 0, :]) if wext.shape[0] else _NO_WEXT
    t = np.ascontiguousarray(text[0]) if text.shape[0] else _NO_TEXT
    return w, t


def _call(model, mode, C, Vj, Qj, Wj, Tj, gravity, ext_wrench, ext_torque, body):
    n = model.n_joints
    nv = 6 + n
    g = _gravity(gravity)
    if ext_wrench is None and ext_torque is None:
        wext, text = _NO_WEXT, _NO_TEXT
    else:
        wext, text = _ext_row0(model, ext_wrench, ext_torque)
    lin = mode == DK.MODE_LINEARIZE
    minv_only = mode == DK.MODE_MINV     # the kernel returns right after M^-1
    val = np.empty(nv) if not minv_only else _EMPTY1
    D = np.empty((nv, 2 * nv)) if not minv_only else _EMPTY2
    M = np.empty((nv, nv)) if not minv_only else _EMPTY2
    Minv = np.empty((nv, nv)) if mode != DK.MODE_ID else _EMPTY2
    out_acc = np.empty(nv)
    A = np.empty((2 * nv, 2 * nv)) if lin else _EMPTY2
    B = np.empty((2 * nv, nv)) if lin else _EMPTY2
    if mode != DK.MODE_ID:
        _check_regular(model)
    code = DK.derivatives(model.bodyi, model.bodyf, C, Vj, Qj, Wj, Tj, g, wext, text,
                          mode, body, val, D, M, Minv, out_acc, A, B)
    if code in (K.ERR_SINGULAR_JOINT, K.ERR_SINGULAR_BASE):
        _singular_error(code, model, C, Qj, model._no_prescribed)
    if code:
        _raise(code)
    return val, D, M, Minv, out_acc, A, B


def _split(D, n):
    return D[:, :6], D[:, 6:6 + n], D[:, 6 + n:12 + n], D[:, 12 + n:]


def _state(model, base_pose, base_twist, q, twist_rows, q_rows, twist_what, q_what):
    _check_model(model)
    n = model.n_joints
    C = _pose(base_pose)
    V = _jet(base_twist, "base_twist", twist_rows, 6, twist_what)
    Q = _jet(q, "q", q_rows, n, q_what)
    return C, V, Q


def inverse_dynamics_derivatives(model: Model, base_pose, base_twist, q, *, gravity=DEFAULT_GRAVITY,
                                 ext_wrench=None, ext_torque=None,
                                 representation: str = "spatial") -> IDDerivatives:
    """Derivatives of the extended inverse dynamics (Bos eq. (39), Tables 4–8) at any inputs.

    Parameters
    ----------
    base_pose : (4, 4) base pose ``C``.
    base_twist : (>= 2, 6) rows ``V``, ``Vdot`` in ``representation`` (angular first).
    q : (>= 3, n) rows ``q``, ``qd``, ``qdd`` (columns ``model.joint_names``).
    gravity, ext_wrench, ext_torque : as :func:`geodyn_ros.inverse_dynamics` (row 0 used).
    representation : ``"spatial"`` or ``"body"`` (module docstring).

    Returns
    -------
    IDDerivatives
        The value ``(base_wrench, tau)`` and its derivatives with respect to ``delta`` (pose,
        ``C exp(hat(delta))``), ``q``, ``V``, ``qd`` and ``nudot`` (``mass_matrix``). The inputs
        need not be consistent (``base_wrench`` is then the virtual base wrench).
    """
    body = _representation(representation)
    C, V, Q = _state(model, base_pose, base_twist, q, 2, 3, "rows V, Vdot", "rows q, qd, qdd")
    n = model.n_joints
    val, D, M, _, _, _, _ = _call(model, DK.MODE_ID, C, V, Q, _EMPTY2, _EMPTY2, gravity, ext_wrench,
                                  ext_torque, body)
    return IDDerivatives(val[:6], val[6:], *_split(D, n), M)


def forward_dynamics_derivatives(model: Model, base_pose, base_twist, q, base_wrench, tau, *,
                                 gravity=DEFAULT_GRAVITY, ext_wrench=None, ext_torque=None,
                                 representation: str = "spatial") -> FDDerivatives:
    """Forward dynamics and its derivatives, ``d FD = -M^-1 d ID`` at the consistent point (Prop. 3).

    Parameters
    ----------
    base_pose : (4, 4); base_twist : (>= 1, 6) row 0 ``V``; q : (>= 2, n) rows ``q``, ``qd``;
    base_wrench : (>= 1, 6) row 0, the wrench acting on the base (e.g. propellers);
    tau : (>= 1, n) row 0, joint torques.
    representation : ``"spatial"`` or ``"body"`` (for ``V``, ``base_wrench`` and the outputs).
    gravity, ext_wrench, ext_torque : as elsewhere.

    Returns
    -------
    FDDerivatives
        ``base_accel``, ``qdd`` and the derivatives with respect to the state and to the input
        ``(base_wrench, tau)`` (``d_input = M^-1``).
    """
    body = _representation(representation)
    C, V, Q = _state(model, base_pose, base_twist, q, 1, 2, "row 0: the base twist", "rows q, qd")
    n = model.n_joints
    W = _jet(base_wrench, "base_wrench", 1, 6, "row 0: the base wrench")
    T = _jet(tau, "tau", 1, n, "row 0: the joint torques")
    _, D, _, Minv, acc, _, _ = _call(model, DK.MODE_FD, C, V, Q, W, T, gravity, ext_wrench, ext_torque, body)
    return FDDerivatives(acc[:6], acc[6:], *_split(D, n), Minv)


def linearize(model: Model, base_pose, base_twist, q, base_wrench, tau, *, gravity=DEFAULT_GRAVITY,
              ext_wrench=None, ext_torque=None, representation: str = "spatial") -> Linearization:
    """Left-trivialized linearization ``dz/dt = A z + B w`` of the floating-base dynamics
    (Bos Props. 1–3) about the state ``(C, q, V, qd)`` and input ``(base_wrench, tau)``.

    Arguments as :func:`forward_dynamics_derivatives`. The point need not be an equilibrium:
    ``A`` and ``B`` are the matrices of the time-varying linear system along any trajectory.

    ``A = [[A_dd, 0, A_dV, 0], [0, 0, 0, I], -M^-1 [D_delta ID, D_q ID, D_V ID, D_qd ID]]`` with
    ``A_dd = -ad_V, A_dV = I`` (body) or ``A_dd = 0, A_dV = Ad_C^-1`` (spatial), and
    ``B = [0; 0; M^-1]``. Rows and columns: :func:`state_labels`, :func:`input_labels`.
    """
    body = _representation(representation)
    C, V, Q = _state(model, base_pose, base_twist, q, 1, 2, "row 0: the base twist", "rows q, qd")
    n = model.n_joints
    W = _jet(base_wrench, "base_wrench", 1, 6, "row 0: the base wrench")
    T = _jet(tau, "tau", 1, n, "row 0: the joint torques")
    _, _, _, _, acc, A, B = _call(model, DK.MODE_LINEARIZE, C, V, Q, W, T, gravity, ext_wrench,
                                  ext_torque, body)
    return Linearization(A, B, acc[:6], acc[6:], "body" if body else "spatial")


def inverse_mass_matrix(model: Model, base_pose, q, *, representation: str = "spatial") -> np.ndarray:
    """``M^-1`` (6+n, 6+n) by an articulated-body recursion with one right-hand side per unit
    generalised force (Bos Table 9, every block filled; O(N n)). ``q`` (n,) or (>= 1, n) row 0.
    ``representation`` ``"body"`` gives the inverse of the body-representation mass matrix
    ``T^T M T``, ``T = blkdiag(Ad_C, I)``."""
    body = _representation(representation)
    _check_model(model)
    n = model.n_joints
    C = _pose(base_pose)
    Q = _jet(q, "q", 1, n, "joint positions")
    Q2 = np.zeros((2, n))
    Q2[0] = Q[0]
    _, _, _, Minv, _, _, _ = _call(model, DK.MODE_MINV, C, _ZERO_TWIST, Q2, _EMPTY2, _EMPTY2, (0.0, 0.0, 0.0),
                                   None, None, body)
    return Minv
