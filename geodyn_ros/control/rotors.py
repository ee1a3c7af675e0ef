"""Rotor geometry, the allocation matrix and its (weighted) pseudo-inverse; the actuation config.

ROS-free and MuJoCo-free. Conventions of ``CONVENTIONS.md``: wrenches moment first
``W = (n, f)``; the *body* wrench ``W_b`` is in base-link axes about the base-link origin.

Rotor model (paper Sec. 7.1, eq. (28); gz-sim ``MulticopterMotorModel``)
-----------------------------------------------------------------------
Rotor ``i`` has the frame ``C_i = (R_i, p_i)`` in the base link and spins about its z axis at
``omega_i`` [rad/s]. Its wrench in its own frame, moment first, is
``W_i^{p_i} = (0, 0, s_i c_d, 0, 0, c_f) omega_i^2`` with ``c_f`` = ``motor_constant``
[N s^2/rad^2], ``c_d = moment_constant * c_f`` [N m s^2/rad^2] and ``s_i = -1`` for a ``ccw``
rotor, ``+1`` for ``cw`` (gz-sim applies ``-turningDirection * thrust * momentConstant`` to the
parent, ``ccw`` -> +1). In the base frame, ``W_i^{B} = Ad*_{C_i^-1} W_i^{p_i}``, i.e.
``f = R_i f_p``, ``n = R_i n_p + p_i x (R_i f_p)``. Stacking the columns gives the allocation
(effectiveness) matrix ``A`` (6, n):  ``W_b = A u``, ``u = omega^2`` (paper eq. (28)).

The TiltHex frames are ``C_{B,p_i} = Rz((2-i) pi/3) Tx(a) Rx(alpha_i) Ry(beta_i)``, i = 1..6
(:func:`tilthex_rotor_frames`). In practice ``A`` is built from a URDF's rotor links
(:func:`rotor_frames_from_model`) so that a user's own multirotor gives its own ``A``.

Inverse: :class:`Allocation` solves ``A u = W_b`` with the weighted pseudo-inverse
``A^+_Q = Q^-1 A^T (A Q^-1 A^T)^-1``, the ``u`` of least ``u^T Q u`` (``Q`` diagonal positive,
default identity; for n = 6 it is ``A^-1``). A **collinear** vehicle (a flat quadrotor or
hexarotor: every thrust along base ``+z``) has ``A`` of rank 4: it is allocated through the 4 x n
map ``A4`` to ``(T, tau_x, tau_y, tau_z)`` (FLATNESS.md; gz-sim's multicopter control does the
same). Any other rank-deficient set is refused with the wrench directions it cannot produce.
"""
from __future__ import annotations

import numpy as np

# the actuation config and the rotor geometry live in geodyn_ros.vehicle (layer 1); re-exported here
from ..vehicle.geometry import rotor_frames_from_model, rotor_wrench_columns, tilthex_rotor_frames
from ..vehicle.params import (ROTOR_SECTIONS, ActuationConfig, ElasticJointParams, RotorParams, _pos,
                              default_actuation_config_path)
from ..vehicle.schema import load_actuation_config

__all__ = ["RotorParams", "ElasticJointParams", "ActuationConfig", "load_actuation_config", "ROTOR_SECTIONS",
           "default_actuation_config_path", "tilthex_rotor_frames", "rotor_frames_from_model",
           "rotor_wrench_columns", "Allocation", "FULL_ACTUATION_RTOL", "COLLINEAR_RTOL", "LATERAL_FORCE_RTOL"]

#: a rotor set is collinear when the lateral-force rows of ``A`` are below this fraction of its largest
#: thrust entry (rounding of the rotor frames gives ~1e-16; a 0.1 deg tilt already gives 2e-3).
COLLINEAR_RTOL = 1e-9
#: :meth:`Allocation.allocate` of a collinear set refuses a wrench whose lateral force exceeds this
#: fraction of its force (a wrench computed for the vehicle carries rounding of ~1e-15 there).
LATERAL_FORCE_RTOL = 1e-9
#: ``A`` counts as rank deficient when its smallest singular value is below this fraction of the
#: largest: 1e-9 is far above rounding of A's entries (1e-16 relative) and far below any real
#: vehicle (the TiltHex here: sigma_min / sigma_max = 0.11, ``Allocation.condition_number``).
FULL_ACTUATION_RTOL = 1e-9


def per_rotor_constant(rotors, name) -> np.ndarray:
    """(n,) rotor constant ``name`` of :class:`RotorParams` (a scalar is repeated for every rotor)."""
    v = np.asarray(getattr(rotors, name), float)
    if v.ndim == 0:
        return np.full(rotors.n_rotors, float(v))
    if v.shape != (rotors.n_rotors,):
        raise ValueError(f"{name}: expected a scalar or {rotors.n_rotors} values (one per rotor), got shape {v.shape}")
    return v


def _speed_limit(name, v, n, *, allow_zero=False):
    """A speed limit [rad/s]: a float (every rotor), or a (n,) array of them (one per rotor)."""
    a = np.asarray(v, float) if not isinstance(v, (str, bytes)) else None
    if a is None or a.ndim > 1 or (a.ndim == 1 and a.shape != (n,)):
        raise ValueError(f"{name}: expected a number or {n} numbers (one per rotor), got {v!r}")
    if a.ndim == 0:
        return _pos(name, v, allow_zero=allow_zero)
    for x in a:
        _pos(name, x, allow_zero=allow_zero)
    return a.copy()


class Allocation:
    """Allocation ``W_b = A u`` (``u = omega^2``) and its weighted pseudo-inverse.

    Two kinds of rotor sets are accepted:

    * **fully actuated** (``A`` of rank 6, e.g. the TiltHex): any body wrench,
      ``u = A^+_Q W_b`` (:meth:`allocate`);
    * **collinear** (every thrust along the base ``+z`` axis: quadrotor, flat hexarotor, gz-sim's
      X3/X4): the rows ``f_x``, ``f_y`` of ``A`` vanish and the 4 x n map
      ``A4 = A[(f_z, n_x, n_y, n_z)]`` to ``(T, tau_x, tau_y, tau_z)`` has rank 4;
      ``u = A4^+_Q (T, tau)`` (:meth:`allocate_thrust_torque`). A 6-D wrench with a lateral force
      is refused by :meth:`allocate`, naming the force it cannot produce.

    Parameters
    ----------
    A : (6, n) allocation matrix, body wrench moment first per unit ``omega^2``.
    max_rot_velocity : float or (n,)
        Rotor speed limit [rad/s] for :meth:`speeds` and :meth:`check_speeds`, one for every rotor
        or one per rotor (kept as given: a float stays a float).
    weights : (n,) positive, optional
        ``Q = diag(weights)`` of the weighted pseudo-inverse (module docstring); default ones.
    min_rot_velocity : float or (n,), keyword
        Idle speed [rad/s] (``0 <= min < max``), the lower limit of :meth:`speeds` and
        :meth:`check_speeds`; default 0.

    Raises
    ------
    ValueError
        For a set that is neither (the message names the wrench directions that cannot be
        produced).

    Attributes
    ----------
    A : (6, n)
    collinear : bool
    A_pinv : (n, 6), fully actuated only (None otherwise)
    A4, A4_pinv : (4, n) and (n, 4), both kinds
        For a fully actuated set ``A4_pinv`` allocates ``(T, tau)`` with zero lateral force.
    singular_values : of ``A`` (fully actuated) or ``A4`` (collinear)
    rotor_points : (n, 3) [m] or None
        The rotors' origins in the base frame when built by :meth:`from_frames` (else None).
    """

    def __init__(self, A, max_rot_velocity=1000.0, weights=None, *, min_rot_velocity=0.0):
        A = np.array(A, dtype=float)
        if A.ndim != 2 or A.shape[0] != 6 or not np.all(np.isfinite(A)):
            raise ValueError(f"A: expected a finite (6, n) matrix, got shape {A.shape}")
        n = A.shape[1]
        self.max_rot_velocity = _speed_limit("max_rot_velocity", max_rot_velocity, n)
        self.min_rot_velocity = _speed_limit("min_rot_velocity", min_rot_velocity, n, allow_zero=True)
        if np.any(np.asarray(self.min_rot_velocity) >= np.asarray(self.max_rot_velocity)):
            raise ValueError(f"min_rot_velocity: must be below max_rot_velocity for every rotor, got "
                             f"{min_rot_velocity!r} and {max_rot_velocity!r}")
        w = np.ones(n) if weights is None else np.array(weights, float).reshape(-1)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights: expected {n} finite positive values, got {weights!r}")
        self.A = A
        self.weights = w
        self.rotor_points = None      # (n, 3) [m] the rotors' origins in the base frame (from_frames only)
        Qi = np.diag(1.0 / w)
        fz_scale = np.abs(A[5]).max() if n else 0.0
        collinear = n > 0 and fz_scale > 0 and np.abs(A[3:5]).max() <= COLLINEAR_RTOL * fz_scale
        U, s, Vt = np.linalg.svd(A)
        if n >= 6 and s[-1] >= FULL_ACTUATION_RTOL * s[0]:
            self.collinear = False
            self.A_pinv = Qi @ A.T @ np.linalg.inv(A @ Qi @ A.T)
            self.singular_values = s
        elif collinear:
            A4 = A[[5, 0, 1, 2]]
            s4 = np.linalg.svd(A4, compute_uv=False)
            if n < 4 or s4[-1] < FULL_ACTUATION_RTOL * s4[0]:
                raise ValueError(f"A: a collinear rotor set of rank {int(np.sum(s4 >= FULL_ACTUATION_RTOL * s4[0]))} "
                                 "< 4: the rotors cannot produce an independent thrust and three moments (e.g. "
                                 "rotors on one line, or too few of them); a collinear vehicle needs >= 4 rotors "
                                 "whose positions span the base plane and both spin directions")
            self.collinear = True
            self.A_pinv = None
            self.singular_values = s4
        else:
            rank = int(np.sum(s >= FULL_ACTUATION_RTOL * s[0])) if n else 0
            missing = U[:, rank:]          # the wrench directions no u reaches
            labels = ("n_x", "n_y", "n_z", "f_x", "f_y", "f_z")
            dirs = "; ".join(" + ".join(f"{c:.2f} {labels[k]}" for k, c in enumerate(col) if abs(c) > 1e-6)
                             for col in missing.T)
            raise ValueError(f"A: rank {rank} < 6 and the thrusts are not all along the base z "
                             f"axis: the rotors cannot produce the body wrench direction(s) [{dirs}]; a fully "
                             "actuated base (rank 6) or a collinear multirotor (every thrust along base +z, rank 4) "
                             "is needed")
        self.A4 = np.ascontiguousarray(A[[5, 0, 1, 2]])
        if self.collinear:
            self.A4_pinv = Qi @ self.A4.T @ np.linalg.inv(self.A4 @ Qi @ self.A4.T)
        else:   # (T, tau) of a fully actuated set: the 6-D allocation with zero lateral force
            self.A4_pinv = self.A_pinv[:, [5, 0, 1, 2]]

    @classmethod
    def from_frames(cls, frames, rotors: RotorParams, weights=None) -> "Allocation":
        """Build ``A`` from rotor frames (n, 4, 4) in the base link and :class:`RotorParams`.

        Column i uses rotor i's own constants: ``c_f,i`` and ``s_i c_d,i = s_i moment_constant_i
        c_f,i`` (a constant given once applies to every rotor); the speed limits are
        ``max_rot_velocity`` and ``min_rot_velocity`` (per rotor when they differ)."""
        n = rotors.n_rotors
        if len(frames) != n:
            raise ValueError(f"frames: {len(frames)} rotor frames but {n} turning directions")
        cf = np.asarray(rotors.motor_constant, float)
        if cf.ndim == 0:     # one constant for every rotor: today's single call (bit-identical A)
            A = rotor_wrench_columns(frames, rotors.motor_constant, rotors.spin * rotors.drag_constant)
        else:                # column i from c_f,i (rotor_wrench_columns takes one c_f per call)
            cf = per_rotor_constant(rotors, "motor_constant")
            cd = rotors.spin * per_rotor_constant(rotors, "moment_constant") * cf
            F = np.asarray(frames, float)
            A = np.column_stack([rotor_wrench_columns(F[i:i + 1], cf[i], cd[i:i + 1])[:, 0] for i in range(n)])
        vmin = getattr(rotors, "min_rot_velocity", 0.0)
        out = cls(A, rotors.max_rot_velocity, weights, min_rot_velocity=vmin)
        out.rotor_points = np.array(np.asarray(frames, float)[:, :3, 3])
        return out

    @property
    def n_rotors(self) -> int:
        return self.A.shape[1]

    def condition_number(self, *, scaled=True) -> float:
        """``sigma_max / sigma_min`` of ``A`` (of ``A4`` for a collinear set). ``scaled``: with the
        moment rows divided by the length ``max|A_moment| / max|A_force|`` (about the rotor
        distance), so that moments and forces have the same unit."""
        M = self.A4[[1, 2, 3, 0]] if self.collinear else self.A   # moment rows first, then force rows
        nm = 3
        if not scaled:
            s = np.linalg.svd(M, compute_uv=False)
            return float(s[0] / s[-1])
        L = max(np.abs(M[:nm]).max() / max(np.abs(M[nm:]).max(), 1e-300), 1e-300)
        s = np.linalg.svd(np.vstack([M[:nm] / L, M[nm:]]), compute_uv=False)
        return float(s[0] / s[-1])

    def allocate(self, W_b) -> np.ndarray:
        """(n,) or (T, n) ``u = A^+ W_b`` [rad^2/s^2] for body wrenches ``(n, f)`` (6,) or (T, 6).

        A collinear set takes the wrench's ``(f_z, n)`` and refuses a lateral force ``(f_x, f_y)``
        larger than ``LATERAL_FORCE_RTOL`` of the wrench's force (``ValueError`` naming it)."""
        W = np.asarray(W_b, float)
        if W.shape[-1:] != (6,):
            raise ValueError(f"W_b: expected a body wrench (6,) or (T, 6), got shape {W.shape}")
        if not self.collinear:
            return W @ self.A_pinv.T
        lat = W[..., 3:5]
        bound = LATERAL_FORCE_RTOL * np.maximum(np.linalg.norm(W[..., 3:], axis=-1), 1e-300)
        bad = np.linalg.norm(lat, axis=-1) > bound
        if np.any(bad):
            i = int(np.argmax(bad)) if W.ndim > 1 else None
            f = lat[i] if i is not None else lat
            at = "" if i is None else f"[{i}]"
            raise ValueError(f"W_b{at}: a lateral force (f_x, f_y) = ({f[0]:.6g}, {f[1]:.6g}) N in base axes, which this "
                             "collinear vehicle cannot produce (every rotor thrusts along base +z); allocate "
                             "(T, tau) with allocate_thrust_torque, or tilt the vehicle to point its thrust")
        return W[..., [5, 0, 1, 2]] @ self.A4_pinv.T

    def allocate_thrust_torque(self, thrust, torque) -> np.ndarray:
        """(n,) or (T, n) ``u = A4^+ (T, tau)`` [rad^2/s^2] for the thrust [N] (scalar or (T,)) along
        base ``+z`` and the body moment ``tau`` [N m] (3,) or (T, 3) about the base origin."""
        T = np.asarray(thrust, float)
        tq = np.asarray(torque, float)
        if tq.shape[-1:] != (3,) or T.shape != tq.shape[:-1]:
            raise ValueError(f"thrust, torque: expected shapes () and (3,) (or (T,) and (T, 3)), got {T.shape} and "
                             f"{tq.shape}")
        return T[..., None] * self.A4_pinv[:, 0] + tq @ self.A4_pinv[:, 1:].T

    def wrench(self, u) -> np.ndarray:
        """The body wrench ``A u`` (6,) or (T, 6) of rotor inputs ``u = omega^2`` (n,) or (T, n)."""
        return np.asarray(u, float) @ self.A.T

    def speeds(self, u) -> tuple:
        """``(omega, n_saturated)``: ``sqrt(u)`` clipped to ``[min_rot_velocity, max_rot_velocity]``
        (per rotor: the last axis of ``u`` (n,) or (T, n) is the rotor), and how many entries were
        clipped (below the idle speed, e.g. a negative ``u``, or above the limit)."""
        u = np.asarray(u, float)
        lo2, hi2 = np.square(self.min_rot_velocity), np.square(self.max_rot_velocity)
        lo, hi = u < lo2, u > hi2
        return np.sqrt(np.clip(u, lo2, hi2)), int(np.sum(lo) + np.sum(hi))

    def check_speeds(self, u) -> None:
        """ValueError unless every ``u`` gives ``min_rot_velocity < omega < max_rot_velocity``
        (``min`` 0 by default; per rotor; ``u``: (n,) or (T, n)), naming the first rotor out of range."""
        u = np.asarray(u, float)
        if not np.all(np.isfinite(u)):
            raise ValueError("u: contains NaN or Inf")
        lo2, hi2 = np.square(self.min_rot_velocity), np.square(self.max_rot_velocity)
        bad = (u <= lo2) | (u >= hi2)
        if np.any(bad):
            om = np.sqrt(np.clip(u, 0, None))
            k = int(np.nonzero(bad)[-1][0])
            lo_k, hi_k = np.broadcast_to(self.min_rot_velocity, (self.n_rotors,))[k], \
                np.broadcast_to(self.max_rot_velocity, (self.n_rotors,))[k]
            raise ValueError(f"u: rotor speeds leave ({lo_k:g}, {hi_k:g}) rad/s (rotor {k}): min u = {u.min():.4g}, "
                             f"max omega = {om.max():.4g} rad/s")
