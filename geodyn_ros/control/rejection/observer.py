"""External-wrench observers of a floating-base robot (ROS-free): whole-body and rigid-body.

The **whole-body momentum observer** (:class:`MomentumObserver`) is the generalized-momentum
observer of De Luca & Mattone (ICRA 2003) and Haddadin, De Luca & Albu-Schäffer (T-RO 2017,
Sec. IV), on the full floating-base model of the package (base and arm); Tomić, Ott & Haddadin
(T-RO 2017, Sec. III) give the aerial form. Generalized velocity ``nu = (V, qd)`` (``V`` the
spatial base twist, angular first, world axes; ``qd`` the joint rates, ``model.joint_names``
order) and the equations of motion of :mod:`geodyn_ros.algorithms.eom`::

    M(x) nu' + C(x, nu) nu + g(x) = tau_a + tau_e                         (Prop. 1)

with ``tau_a = (W_a, tau_j)`` the applied generalized force (``W_a`` the rotors' wrench as a
spatial wrench about the world origin, ``tau_j`` the link-side joint torques) and ``tau_e`` the
unknown external one. With the momentum ``p = M nu`` and ``M' = C + C^T`` (Lemma 1:
``M' - 2 C`` is skew)::

    p' = tau_a + C^T nu - g + tau_e                                           (1)
    r  = K_O (p(t) - p(0) - int_0^t (tau_a + C^T nu - g + r) ds)              (2)

so ``r' = K_O (tau_e - r)``: ``r`` is ``tau_e`` through a first-order low-pass of bandwidth
``K_O`` [rad/s], a filter of the measured state and the applied forces only (no acceleration).

**Discrete form** (what :meth:`MomentumObserver.update` computes between samples ``k`` and
``k + 1``, ``h = t_(k+1) - t_k``)::

    d_k     = (p_(k+1) - p_k) / h - 1/2 (beta_k + beta_(k+1)) - tau_a,k        beta = C^T nu - g
    r_(k+1) = a r_k + (1 - a) d_k,       a = exp(-K_O h)                       (3)

``(p_(k+1) - p_k) / h`` is exact for the sampled states (the momentum is a function of the
state), so ``d_k`` is the mean external force over the step up to the trapezoid rule on
``beta`` (error ``h^2 / 12 max|beta''|``) and the mean applied force ``tau_a,k`` (below); (3) is
the exact zero-order-hold discretization of ``r' = K_O (d - r)``. For an external force constant
from sample ``j`` on, ``r_k = (1 - a^(k - j)) tau_e``, the continuous filter sampled.
``tau_a,k``: the base wrench is held constant in base axes over the step (rotor thrusts turn
with the base: MuJoCo's site actuators, gz-sim's rotors), so its spatial form at both ends is
averaged; the joint torque is the step mean the caller gives (a held command; for series-elastic
joints the trapezoid of the spring torques ``K (theta - q)`` at both ends).

Where the wrench acts. The base rows ``r[:6]`` are the **total** external wrench on the robot
(spatial, about the world origin), wherever it acts: the base rows of ``J_j^T F`` are ``F`` for
any link ``j`` in the spatial representation. The joint rows tell where. With a ``frame`` (e.g.
the end-effector link and a tool point on it), :class:`WrenchEstimate` also splits the estimate
into a **force at the frame's point** (least squares on the joint rows of the frame's chain,
``tau_chain = J_p^T f``, over the directions the chain's levers resolve) and the **remainder on
the base** (``r[:6]`` minus the frame force's wrench).

Bandwidth ``K_O``: default 30 rad/s (5 Hz). It must lie above the CoM loop (4 rad/s at the
defaults of :class:`~geodyn_ros.control.flatness.FlatnessGains`) so that its estimate serves as a
feedforward, and below the rotors (1 / 18.2 ms = 55 rad/s) and the elastic modes
(70-237 rad/s), whose unmodelled transients it would otherwise pass; Tomić et al. use 5-20 Hz
on their hexarotors. The estimate's jets: it is held constant over the feedforward horizon (its
derivatives are taken as 0; the filter derivative ``K_O (d - r)`` is noise-dominated on a real
vehicle).

The **rigid-body observer** (:class:`RigidBodyObserver`) is the anchors' version
(jsk_aerial_robot's wrench estimator, Tomić et al.'s rigid multirotor): the vehicle as one rigid
body with the arm frozen at the current ``q``, locked inertia ``M_b(q)`` (base axes,
:func:`geodyn_ros.algorithms.reduced.locked_inertia`), body momentum ``h = M_b V_b`` and
``h' = ad_(V_b)^T h + W_a + W_g + W_e`` (Newton-Euler in base axes, ``M_b`` constant), filtered as
(3). In free flight with the arm moving it reads the arm's own momentum exchange
``d/dt(M_bq qd) ...`` as an external wrench; the whole-body observer reads 0
(``test/control/rejection/test_observer.py``).

Rotor speeds: :class:`RotorSpeedModel` runs gz-sim's first-order filter (ACTUATION.md) on the
commands when no measured speeds are available; the rotor wrench is ``A x^2``
(:meth:`~geodyn_ros.control.rotors.Allocation.wrench`), scaled by a thrust-scale estimate where
one is kept (:mod:`geodyn_ros.control.rejection`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...algorithms.api import forward_kinematics
from ...algorithms.eom import coriolis_matrix, gravity_vector, mass_matrix
from ...algorithms.reduced import locked_inertia
from ...lie import Ad, ad
from ...model.model import Model
from ..rotors import RotorParams, per_rotor_constant

__all__ = ["WrenchEstimate", "MomentumObserver", "RigidBodyObserver", "RotorSpeedModel", "DEFAULT_BANDWIDTH",
           "wrench_to_body", "wrench_to_spatial"]

#: default observer bandwidth K_O [rad/s] (module docstring)
DEFAULT_BANDWIDTH = 30.0


def _cross(a, b) -> np.ndarray:
    """``a x b`` of two 3-vectors (``np.cross`` costs ten times more on one pair)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def wrench_to_body(C, W) -> np.ndarray:
    """Body wrench ``W_b = Ad_C^T W`` (6,): moment about the base origin then force, base axes, of the
    spatial wrench ``W`` (moment about the world origin, world axes)."""
    R, p = C[:3, :3], C[:3, 3]
    return np.concatenate([R.T @ (W[:3] - _cross(p, W[3:])), R.T @ W[3:]])


def wrench_to_spatial(C, W_b) -> np.ndarray:
    """Spatial wrench ``W = Ad_C^-T W_b`` (6,) of the body wrench ``W_b`` (inverse of :func:`wrench_to_body`)."""
    R, p = C[:3, :3], C[:3, 3]
    f = R @ W_b[3:]
    return np.concatenate([R @ W_b[:3] + _cross(p, f), f])


def _vector(x, name, n):
    a = np.asarray(x, dtype=float)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf")
    return a


def _bandwidth(v):
    try:
        k = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"bandwidth: expected a finite positive rate [rad/s], got {v!r}") from None
    if not (np.isfinite(k) and k > 0):
        raise ValueError(f"bandwidth: expected a finite positive rate [rad/s], got {v!r}")
    return k


class WrenchEstimate(NamedTuple):
    """One observer output at time ``t`` [s] (zeros before the second sample).

    * ``generalized`` (6+n,): ``r``, the external generalized force (base rows spatial: moment
      about the world origin, world axes; then the joint rows [N m]); the rigid-body observer
      has no joint rows (6,).
    * ``wrench`` (6,): the total external wrench, spatial (``r[:6]``).
    * ``wrench_body`` (6,): the same as a body wrench (moment about the base origin, base axes).
    * ``joint_torque`` (n,): the external joint torques ``r[6:]`` (empty for the rigid body).
    * ``frame`` (str or None), ``frame_force`` (3,) world [N] at the frame's point (each step's
      split of the joint rows, filtered like ``r``) and ``base_wrench_body`` (6,): the remainder
      on the base, body wrench (module docstring); with
      no frame, ``frame_force`` is zeros and ``base_wrench_body`` equals ``wrench_body``;
      ``frame_rank``: the force directions the joint rows resolve (0..3, ``MomentumObserver``'s
      ``frame_rcond``).
    """

    t: float
    generalized: np.ndarray
    wrench: np.ndarray
    wrench_body: np.ndarray
    joint_torque: np.ndarray
    frame: str | None
    frame_force: np.ndarray
    base_wrench_body: np.ndarray
    frame_rank: int = 0


class _FirstOrder:
    """The sampled observer of eq. (3): the exact ZOH filter of the step means ``d_k``."""

    def __init__(self, model: Model, bandwidth, gravity):
        if not isinstance(model, Model):
            raise ValueError(f"model: expected a geodyn_ros Model, got {type(model).__name__}")
        self.model = model
        self.bandwidth = _bandwidth(bandwidth)
        g = np.array(gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: expected a finite 3-vector, got {gravity!r}")
        self.gravity = g
        self._prev = None          # (t, C, momentum, beta) of the last sample
        self.r = None

    def _state(self, C, V_body, q, qd):
        n = self.model.n_joints
        C = np.asarray(C, dtype=float)
        if C.shape != (4, 4) or not np.all(np.isfinite(C)):
            raise ValueError(f"C: expected a finite (4, 4) pose, got shape {C.shape}")
        return C, _vector(V_body, "V_body", 6), _vector(q, "q", n), _vector(qd, "qd", n)

    def reset(self, t, C, V_body, q, qd) -> None:
        """Start at the sample ``t`` [s] with ``r = 0`` (eq. (2) with ``p(0)`` of this state)."""
        C, Vb, q, qd = self._state(C, V_body, q, qd)
        self._prev = (float(t), C) + self._momentum(C, Vb, q, qd)
        self.r = np.zeros(self._size)
        self._t = float(t)

    def update(self, t, C, V_body, q, qd, base_wrench_body, joint_torque=None) -> WrenchEstimate:
        """Advance to the sample at ``t`` [s] with the state ``(C, V_body, q, qd)`` (pose (4, 4), body
        twist (6,), joint angles and rates (n,)) and the forces applied since the last sample:
        ``base_wrench_body`` (6,) held in base axes (about the base origin), ``joint_torque`` (n,)
        the step mean of the link-side joint torques (ignored by the rigid body; None: zeros).
        The first call (or one after :meth:`reset`'s state is missing) starts the observer."""
        C, Vb, q, qd = self._state(C, V_body, q, qd)
        t = float(t)
        if self._prev is None:
            self.reset(t, C, Vb, q, qd)
            return self.estimate(C)
        t0, C0, p0, b0 = self._prev
        h = t - t0
        if not (np.isfinite(h) and h > 0):
            raise ValueError(f"t: expected a time after the last sample ({t0!r} s), got {t!r}")
        Wb = _vector(base_wrench_body, "base_wrench_body", 6)
        n = self.model.n_joints
        tj = np.zeros(n) if joint_torque is None else _vector(joint_torque, "joint_torque", n)
        p1, b1 = self._momentum(C, Vb, q, qd)
        d = (p1 - p0) / h - 0.5 * (b0 + b1) - self._applied(C0, C, Wb, tj)
        a = math.exp(-self.bandwidth * h)
        self.r = a * self.r + (1.0 - a) * d
        self._prev = (t, C, p1, b1)
        self._t = t
        self._absorb(d, a, C, q)
        return self.estimate(C)

    def _absorb(self, d, a, C, q):
        """Hook: the step mean ``d`` of this sample (the frame split filters its own share)."""


class MomentumObserver(_FirstOrder):
    """The whole-body generalized-momentum observer (module docstring, eq. (2)-(3)).

    Call ``update`` once per sample; every call costs ``M``, ``C`` and ``g`` of the model
    (:mod:`geodyn_ros.algorithms.eom`).

    Parameters
    ----------
    model : Model
        The controller's model (rotor joints locked).
    bandwidth : float
        ``K_O`` [rad/s] (default :data:`DEFAULT_BANDWIDTH`).
    gravity : (3,) world gravity [m/s^2].
    frame : str or None
        A link of the URDF (merged links too) at which the external force is also estimated
        (:class:`WrenchEstimate`), e.g. the end-effector.
    frame_point : (3,)
        The point of ``frame`` where that force acts, in the frame's axes [m] (default its
        origin). A force through a joint's axis exerts no torque on it, so the joint rows cannot
        see it: the force is the least-squares solution of ``tau_chain = J_p^T f`` over the
        directions whose lever (singular value of the chain's point Jacobian ``J_p``, (k, 3)) is
        at least ``frame_rcond`` times the largest; a direction with a shorter lever is left out
        (0 in ``frame_force``, its share stays in ``base_wrench_body``) and
        :attr:`WrenchEstimate.frame_rank` counts the directions kept. (The paper's arm, axes y, x,
        z meeting on the link line at home, sees a force along the arm only through the tool's
        offset from that line: a lever of a few mm.)
    frame_rcond : float
        Default 0.05: a lever below 5 % of the largest (an error of 1 mN m in the joint rows
        would become 20 times the error of the best direction) is not trusted.
    """

    def __init__(self, model: Model, bandwidth=DEFAULT_BANDWIDTH, *, gravity=(0.0, 0.0, -9.81), frame=None,
                 frame_point=(0.0, 0.0, 0.0), frame_rcond=0.05):
        super().__init__(model, bandwidth, gravity)
        rc = float(frame_rcond) if isinstance(frame_rcond, (int, float, np.floating)) else float("nan")
        if not 0.0 <= rc < 1.0:
            raise ValueError(f"frame_rcond: expected a fraction in [0, 1), got {frame_rcond!r}")
        self.frame_rcond = rc
        self._size = model.nv
        self.frame = None if frame is None else str(frame)
        if self.frame is not None:
            b = model.body_of_link(self.frame)          # ValueError naming the link if unknown
            home_b = model.link_home[model.link_names[b]]
            self._frame_body = b
            self._frame_offset = np.linalg.solve(home_b, model.link_home[self.frame])
            self._frame_offset[:3, 3] += self._frame_offset[:3, :3] @ _vector(frame_point, "frame_point", 3)
            chain, k = [], b
            while k > 0:
                chain.append(k - 1)                       # body k hangs on joint k - 1
                k = int(model.parent[k])
            self._chain = np.array(sorted(chain), dtype=np.int64)

    def _momentum(self, C, Vb, q, qd):
        V = Ad(C) @ Vb
        nu = np.concatenate([V, qd])
        M = mass_matrix(self.model, C, q)
        Cm = coriolis_matrix(self.model, C, V, q, qd)
        g = gravity_vector(self.model, C, q, gravity=tuple(self.gravity))
        return M @ nu, Cm.T @ nu - g

    def _applied(self, C0, C1, Wb, tj):
        W = 0.5 * (wrench_to_spatial(C0, Wb) + wrench_to_spatial(C1, Wb))
        return np.concatenate([W, tj])

    def _split(self, C, q, rq):
        """``(x, f, rank)``: the frame point (world) and the force there that explains the chain's
        joint rows ``rq`` (n,) at the configuration ``(C, q)`` (``frame_point``, ``frame_rcond``)."""
        kin = forward_kinematics(self.model, C, np.zeros((1, 6)), np.stack([q, np.zeros_like(q)]))
        x = (kin.poses[self._frame_body] @ self._frame_offset)[:3, 3]
        S = kin.screws[self._chain, 0, :]                       # (k, 6) spatial screws, world axes
        Jp = S[:, 3:] + np.cross(S[:, :3], x)                   # (k, 3): point velocity per joint rate
        U, sv, Vt = np.linalg.svd(Jp, full_matrices=False)
        keep = sv > self.frame_rcond * sv[0] if sv.size and sv[0] > 0 else np.zeros(sv.size, bool)
        return x, Vt[keep].T @ ((U[:, keep].T @ rq[self._chain]) / sv[keep]), int(np.sum(keep))

    def _absorb(self, d, a, C, q):
        # the split of each step's mean, then filtered like r: a force fixed in the world stays
        # itself while the Jacobian turns with the arm and the base (splitting the filtered rows
        # with this sample's Jacobian would mix configurations 1 / K_O apart)
        if self.frame is not None and self._chain.size:
            x, f, self._rank = self._split(C, q, d[6:])
            self._f = a * self._f + (1.0 - a) * f
            self._x = x

    def estimate(self, C=None) -> WrenchEstimate:
        """The current :class:`WrenchEstimate` (``C``: the pose of the last sample, default it)."""
        C = self._prev[1] if C is None else C
        r = self.r.copy()
        W = r[:6]
        Wb = wrench_to_body(C, W)
        f, rest, rank = np.zeros(3), Wb, 0
        if self.frame is not None and self._chain.size:
            f, rank = self._f.copy(), self._rank
            rest = wrench_to_body(C, W - np.concatenate([_cross(self._x, f), f]))
        return WrenchEstimate(self._t, r, W.copy(), Wb, r[6:].copy(), self.frame, f, rest, rank)

    def reset(self, t, C, V_body, q, qd) -> None:
        super().reset(t, C, V_body, q, qd)
        if self.frame is not None and self._chain.size:
            self._f = np.zeros(3)
            self._x, _, self._rank = self._split(np.asarray(C, float), np.asarray(q, float), np.zeros(self.model.n_joints))

    reset.__doc__ = _FirstOrder.reset.__doc__


class RigidBodyObserver(_FirstOrder):
    """The anchors' rigid-body momentum observer (module docstring): one rigid body with the
    locked inertia ``M_b(q)`` of the current shape, the joint rates ignored. Same interface and
    filter as :class:`MomentumObserver`; its :class:`WrenchEstimate` has no joint rows and no
    frame split."""

    def __init__(self, model: Model, bandwidth=DEFAULT_BANDWIDTH, *, gravity=(0.0, 0.0, -9.81)):
        super().__init__(model, bandwidth, gravity)
        self._size = 6

    def _momentum(self, C, Vb, q, qd):
        Mb = locked_inertia(self.model, q)
        h = Mb @ Vb
        m = Mb[3, 3]
        mc = np.array([Mb[2, 4], Mb[0, 5], Mb[1, 3]])             # M_b[:3, 3:] = m hat(c)
        fg = m * C[:3, :3].T @ self.gravity                        # gravity in base axes, at the CoM
        Wg = np.concatenate([_cross(mc / m, fg), fg])
        return h, ad(Vb).T @ h + Wg

    def _applied(self, C0, C1, Wb, tj):
        return Wb

    def estimate(self, C=None) -> WrenchEstimate:
        """The current :class:`WrenchEstimate` (``wrench_body`` is ``r``; ``C``: the last pose)."""
        C = self._prev[1] if C is None else C
        Wb = self.r.copy()
        W = wrench_to_spatial(C, Wb)
        return WrenchEstimate(self._t, Wb.copy(), W, Wb, np.zeros(0), None, np.zeros(3), Wb.copy(), 0)


class RotorSpeedModel:
    """gz-sim's rotor speed filter run on the commands (the speeds the thrust of each step uses).

    Per step of ``dt``: the thrust uses the state ``x(k)``; then ``r = min(command,
    max_rot_velocity)``, ``x <- a x + (1 - a) r`` with ``a = exp(-dt / T)``, ``T`` the up or down
    time constant (per rotor when they differ), as :func:`geodyn_ros.sim.actuated.rotor_filter_step`.
    """

    def __init__(self, rotors: RotorParams):
        if not isinstance(rotors, RotorParams):
            raise ValueError(f"rotors: expected RotorParams, got {type(rotors).__name__}")
        self.Tu = per_rotor_constant(rotors, "time_constant_up")
        self.Td = per_rotor_constant(rotors, "time_constant_down")
        self.wmax = np.broadcast_to(np.asarray(rotors.max_rot_velocity, float), self.Tu.shape)
        self.x = None

    def reset(self, x) -> None:
        """Set the speed state [rad/s] (n,)."""
        self.x = _vector(x, "x", self.Tu.size).copy()

    def advance(self, command, dt) -> np.ndarray:
        """One step: the filter fed ``command`` (n,) [rad/s] for ``dt`` [s]; returns the new state."""
        r = np.minimum(np.asarray(command, float), self.wmax)
        if self.x is None:
            self.x = r.copy()
        a = np.where(r > self.x, np.exp(-dt / self.Tu), np.exp(-dt / self.Td))
        self.x = a * self.x + (1.0 - a) * r
        return self.x

