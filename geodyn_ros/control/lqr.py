"""A discrete-time, time-varying LQR on SE(3) x joints around a flat trajectory (ROS-free).

The flat map (:func:`geodyn_ros.flat_inverse_dynamics`) gives the nominal state and inputs; the
singularity-free linearization of Bos, Traversaro, Pucci & Saccon (:func:`geodyn_ros.linearize`,
body representation) gives the rigid-body floating-base dynamics about them, with every coupling
between the base and the arm. This module adds the actuators, discretizes, and computes the gains
by a backward Riccati recursion.

The linear model (one control period ``dt``, the simulator's zero-order hold)
-----------------------------------------------------------------------------
State ``s`` (``ns = 2 (6 + n) + 2 n_e + n_r``, 42 for the hexarotor manipulator)::

    s = (delta, dq, dV, dqd, dtheta, dthetad, dx)

* ``delta = log(C_d^-1 C)`` (6, angular first, base axes): Bos's perturbation ``C = C_d exp(hat(delta))``,
  so the gains act on the SE(3) error through the log map, with no Euler angles;
* ``dq = q - q_d``, ``dV = V_b - V_bd`` (body twists), ``dqd = qd - qd_d``;
* ``dtheta``, ``dthetad``: the motor angles and rates of the series-elastic joints minus Spong's
  ``theta_d = q_d + K^-1 tau_d`` and its rate;
* ``dx``: the rotor speed states of gz-sim's motor model minus their nominal ``x_d = omega_d``.

Input ``v = (domega, du, dtau_r)``: rotor speed commands (the motor model's filter input), motor
torques of the elastic joints, link torques of rigid joints (none on the hexarotor manipulator).

**Why the rotor lag and the joint elasticity are in the state.** Both are inside the feedback
bandwidth: the rotor filter's time constant is 18.2 ms (55 rad/s) against an attitude loop of
about 20 rad/s, and the spring modes are at 11-37 Hz (70-237 rad/s) with the motor inertia. An LQR
that ignored them would compute gains for inputs that reach the body 18 ms late and through
springs; with them, the gains are optimal for the plant that exists, and the measured motor
states (``motor_states``) and the rotor speeds (estimated by running the motor model on the
commands: it is deterministic) are simply part of the state.

The continuous part, rigid body plus motors (``B theta'' + K (theta - q) = u``, link torque
``K (theta - q)``), is discretized with the exact zero-order hold (matrix exponential of the
augmented ``[[A, B], [0, 0]] dt``). The rotors are appended as gz-sim steps them: the thrust of a
step uses the speed state at its start, held over the step, and the filter then advances,
``x+ = a x + (1 - a) omega_cmd``, ``a = exp(-dt / T)``; the body wrench is ``A6 x^2``, linearized
``A6 diag(2 x_d) dx``. So the discrete model mirrors the simulator's step structure exactly
(checked by a one-step prediction against MuJoCo with an ``O(eps^2)`` error,
``test/control/test_lqr.py``).

Gains
-----
``K_k`` minimizes ``sum s_k^T Q s_k + v_k^T R v_k`` along the reference: the backward Riccati
recursion ``P_k = Q + A^T P_(k+1) A - A^T P_(k+1) B (R + B^T P_(k+1) B)^-1 B^T P_(k+1) A`` from a
terminal ``P`` (the stationary DARE solution at the end of a tail past the last sample),
``v = -K s``. ``Q``, ``R`` are diagonal from Bryson's rule (``config/lqr.yaml``: the acceptable
deviation of each state and input, in the units the keys name). :func:`riccati_sweep` also
serves online use: a few warm-started recursion steps per new linearization converge to the
stationary gain of the current model (:class:`OnlineGains`).

The controller (:class:`LqrController`) feeds forward exactly what
:class:`~geodyn_ros.control.flatness.FlatnessController` feeds forward at level ``ff2`` (rotor
speeds with the exact inverse of the discrete filter, Spong's motor torques ``B theta_d'' +
tau_d``) and replaces its feedback by ``v = -K s``.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import scipy.linalg as sla

from ..algorithms.flat import FlatResult
from ..algorithms.linearization import linearize
from ..lie import Ad_inv, log_se3
from ..model.model import Model
from ..model.validate import FileKeys, as_floats, read_yaml, require_positive, short_repr
from .flatness import FlatCommand, FlatnessGains
from .rejection.lqr import lqr_nominal
from .rejection import INTEGRAL_FRACTION, Rejection, RejectionOptions
from .rotors import Allocation, ElasticJointParams, RotorParams

__all__ = ["LqrWeights", "load_lqr_weights", "ActuatedModel", "riccati_step", "riccati_sweep", "dare_gain",
           "GainSchedule", "tvlqr_schedule", "OnlineGains", "LqrController", "state_labels_lqr"]


# ----------------------------------------------------------------------------- weights
#: the weights given per base axis (x, y, z): a scalar or 3 values
PER_AXIS = ("base_attitude", "base_position", "base_angular_velocity", "base_velocity")


@dataclass(frozen=True)
class LqrWeights:
    """Bryson's rule: the acceptable deviation of each state and input (SI units, module docstring);
    the weights are their inverse squares. The four base entries (:data:`PER_AXIS`) are per base
    axis ``(x, y, z)`` (a scalar applies to all three). ``store_every`` [s] and ``tail`` [s]: gain
    storage and the recursion's tail past the last sample (:func:`tvlqr_schedule`).

    The defaults are ``config/lqr.yaml``'s: the base entries make the stationary gain at hover
    match the geometric controller's default static stiffness and damping on every base axis
    (within 1 %, :func:`geodyn_ros.loops.lqr.match_geometric_weights`), the arm and actuator entries are
    Bryson's rule on the errors the arm tolerates.
    """

    base_attitude: tuple = (0.0159, 0.00689, 0.000827)
    base_position: tuple = (0.00304, 0.00255, 0.0293)
    joint: float = 0.02
    base_angular_velocity: tuple = (0.0301, 0.0325, 0.00775)
    base_velocity: tuple = (0.00954, 0.00828, 0.104)
    joint_rate: float = 0.5
    motor_angle: float = 0.05
    motor_rate: float = 2.0
    rotor_speed: float = 50.0
    rotor_command: float = 100.0
    motor_torque: float = 1.0
    joint_torque: float = 1.0
    store_every: float = 0.01
    tail: float = 2.0

    def __post_init__(self):
        for f in fields(self):
            raw = getattr(self, f.name)
            if f.name in PER_AXIS:
                v = as_floats(f.name, raw, "expected a positive number or 3 (x, y, z)")
                if v.shape not in ((), (1,), (3,)):
                    raise ValueError(f"{f.name}: expected a positive number or 3 (x, y, z), got {short_repr(raw, 200)}")
                require_positive(f.name, raw, problem="expected finite positive values")
                object.__setattr__(self, f.name, tuple(float(a) for a in np.broadcast_to(v, (3,))))
            else:
                object.__setattr__(self, f.name, require_positive(f.name, raw, scalar=True,
                                                                  problem="expected a finite positive value"))

    def Q(self, n: int, n_el: int, n_rot: int) -> np.ndarray:
        """(ns, ns) state weight for ``n`` joints, ``n_el`` elastic joints and ``n_rot`` rotors."""
        d = np.concatenate([self.base_attitude, self.base_position, np.full(n, self.joint),
                            self.base_angular_velocity, self.base_velocity,
                            np.full(n, self.joint_rate), np.full(n_el, self.motor_angle),
                            np.full(n_el, self.motor_rate), np.full(n_rot, self.rotor_speed)])
        return np.diag(1.0 / d ** 2)

    def R(self, n_rot: int, n_el: int, n_rigid: int) -> np.ndarray:
        """(nu, nu) input weight."""
        d = np.concatenate([np.full(n_rot, self.rotor_command), np.full(n_el, self.motor_torque),
                            np.full(n_rigid, self.joint_torque)])
        return np.diag(1.0 / d ** 2)


_YAML_KEYS = {
    "state": {"base_attitude_rad": "base_attitude", "base_position_m": "base_position", "joint_rad": "joint",
              "base_angular_velocity_rad_s": "base_angular_velocity", "base_velocity_m_s": "base_velocity",
              "joint_rate_rad_s": "joint_rate", "motor_angle_rad": "motor_angle", "motor_rate_rad_s": "motor_rate",
              "rotor_speed_rad_s": "rotor_speed"},
    "input": {"rotor_command_rad_s": "rotor_command", "motor_torque_nm": "motor_torque",
              "joint_torque_nm": "joint_torque"},
}


def default_lqr_config_path() -> Path:
    """``config/lqr.yaml`` of the source tree, else of the installed share directory."""
    from .rotors import default_actuation_config_path
    return default_actuation_config_path().parent / "lqr.yaml"


def load_lqr_weights(path=None) -> LqrWeights:
    """Read ``config/lqr.yaml`` (or ``path``) into :class:`LqrWeights`. ValueError: one line
    ``"<file>: <key>: <problem>; <fix>"`` (:mod:`geodyn_ros.model.validate`), e.g.
    ``my_lqr.yaml: lqr.state.joint_rd: unknown key; did you mean 'joint_rad'?``."""
    p = default_lqr_config_path() if path is None else Path(os.fspath(path))
    doc = read_yaml(p, "LQR weights file")
    c = FileKeys(p)
    fix = "see config/lqr.yaml"
    c.mapping("", doc, "give a mapping lqr: {state: ..., input: ...} (config/lqr.yaml)")
    if "lqr" not in doc:
        c.keys("", doc, ("lqr",))     # a misspelt lqr: is named with a did-you-mean
        c.require("", doc, ("lqr",), "give a mapping lqr: {state: ..., input: ...} (config/lqr.yaml)")
    sec = doc["lqr"]
    c.keys("lqr", sec, tuple(_YAML_KEYS) + ("store_every_s", "tail_s"))
    kw = {}
    for group, keys in _YAML_KEYS.items():
        g = sec.get(group, {})
        c.mapping(f"lqr.{group}", g, f"give the {group} deviations by name ({fix})")
        c.keys(f"lqr.{group}", g, tuple(keys))
        for k, v in g.items():
            kw[keys[k]] = v
    for k, name in (("store_every_s", "store_every"), ("tail_s", "tail")):
        if k in sec:
            kw[name] = sec[k]
    try:
        return LqrWeights(**kw)
    except (TypeError, ValueError) as exc:
        field, _, rest = str(exc).partition(": ")
        key = {v: f"lqr.{g}.{k}" for g, keys in _YAML_KEYS.items() for k, v in keys.items()}.get(field)
        key = key or {"store_every": "lqr.store_every_s", "tail": "lqr.tail_s"}.get(field, "lqr")
        c.fail(key, rest or str(exc), "give a positive deviation in the key's unit (Bryson's rule; config/lqr.yaml)"
               if key.startswith(("lqr.state.", "lqr.input.")) else "give a positive time [s]")


def state_labels_lqr(joint_names, elastic_joints, rotor_names) -> list:
    """The names of the LQR state, in order (module docstring)."""
    out = [f"delta_{a}" for a in ("wx", "wy", "wz", "vx", "vy", "vz")] + [f"q:{j}" for j in joint_names]
    out += [f"V_{a}" for a in ("wx", "wy", "wz", "vx", "vy", "vz")] + [f"qd:{j}" for j in joint_names]
    out += [f"theta:{j}" for j in elastic_joints] + [f"thetad:{j}" for j in elastic_joints]
    return out + [f"x:{r}" for r in rotor_names]


# ----------------------------------------------------------------------------- the linear model
class ActuatedModel:
    """The discrete linear model ``s+ = A s + B v`` of the actuated vehicle (module docstring).

    model : the rigid-body model (rotor joints locked); allocation : ``W_b = A6 x^2``; rotors :
    time constants; elastic : the series-elastic joints (``None``: every joint rigid,
    torque-controlled); dt : the control period [s]; gravity : world gravity.
    """

    def __init__(self, model: Model, allocation: Allocation, rotors: RotorParams, elastic: ElasticJointParams | None,
                 dt: float, gravity=(0.0, 0.0, -9.81)):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a finite positive control period [s], got {dt!r}")
        self.model, self.allocation, self.rotors, self.elastic = model, allocation, rotors, elastic
        self.dt, self.gravity = float(dt), tuple(float(g) for g in gravity)
        n = model.n_joints
        names = model.joint_names
        self.el = np.array([names.index(j) for j in elastic.joints], dtype=np.int64) if elastic else \
            np.zeros(0, np.int64)
        self.rigid = np.array([j for j in range(n) if j not in set(self.el.tolist())], dtype=np.int64)
        self.K = elastic.stiffness if elastic else np.zeros(0)
        self.Bm = elastic.motor_inertia if elastic else np.zeros(0)
        self.n, self.ne, self.nr, self.nq = n, len(self.el), allocation.n_rotors, len(self.rigid)
        self.nv = 6 + n
        self.nc = 2 * self.nv + 2 * self.ne
        self.ns = self.nc + self.nr
        self.nu = self.nr + self.ne + self.nq
        self.a_up = float(np.exp(-dt / rotors.time_constant_up))
        self.a_down = float(np.exp(-dt / rotors.time_constant_down))

    def continuous(self, C, Vb, q, qd, Wb, tau):
        """``(Ac, Bc)``: the rigid body and the motors in continuous time about the nominal
        ``(C, V_b, q, qd)`` with the nominal body wrench ``Wb`` and link torques ``tau``; inputs
        ``(dW_b (6), du (n_e), dtau_r (n_rigid))``."""
        lin = linearize(self.model, C, np.asarray(Vb, float)[None], np.stack([q, qd]), np.asarray(Wb, float)[None],
                        np.asarray(tau, float)[None], gravity=self.gravity, representation="body")
        return self.compose(lin.A, lin.B)

    def compose(self, A_rb, B_rb):
        """``(Ac, Bc)`` of :meth:`continuous` from the rigid-body ``A`` (2 nv, 2 nv) and ``B`` (2 nv, nv)
        of ``gd.linearize(..., representation="body")`` (or ``geodyn_node``'s ``~/linearization``
        with ``linearization_representation: body``): the motors and springs appended."""
        A_rb, B_rb = np.asarray(A_rb, float), np.asarray(B_rb, float)
        nv, nc, ne, el = self.nv, self.nc, self.ne, self.el
        if A_rb.shape != (2 * nv, 2 * nv) or B_rb.shape != (2 * nv, nv):
            raise ValueError(f"A_rb, B_rb: expected ({2 * nv}, {2 * nv}) and ({2 * nv}, {nv}) for {self.n} joints, got "
                             f"{A_rb.shape} and {B_rb.shape}")
        Ac = np.zeros((nc, nc))
        Bc = np.zeros((nc, 6 + ne + self.nq))
        Ac[:2 * nv, :2 * nv] = A_rb
        Bt = B_rb[:, 6:]
        Bc[:2 * nv, :6] = B_rb[:, :6]
        for k, j in enumerate(el):
            Kk, Bk = self.K[k], self.Bm[k]
            Ac[:2 * nv, 6 + j] -= Bt[:, j] * Kk          # link torque K (theta - q): the dq part
            Ac[:2 * nv, 2 * nv + k] += Bt[:, j] * Kk      # ... and the dtheta part
            Ac[2 * nv + k, 2 * nv + ne + k] = 1.0         # dtheta' = dthetad
            Ac[2 * nv + ne + k, 2 * nv + k] = -Kk / Bk    # B dthetad' = du - K (dtheta - dq)
            Ac[2 * nv + ne + k, 6 + j] = Kk / Bk
            Bc[2 * nv + ne + k, 6 + k] = 1.0 / Bk
        for i, j in enumerate(self.rigid):
            Bc[:2 * nv, 6 + ne + i] = Bt[:, j]
        return Ac, Bc

    def discrete(self, C, Vb, q, qd, Wb, tau, x_rotor, up=None):
        """``(A, B)`` (ns, ns), (ns, nu) of one step about the nominal (:meth:`continuous`) with the
        nominal rotor speed states ``x_rotor`` (n_r,); ``up`` (n_r,) bool: the filter's direction
        (default: up, the X4's equal time constants make it irrelevant)."""
        return self.discretize(*self.continuous(C, Vb, q, qd, Wb, tau), x_rotor, up)

    def discretize(self, Ac, Bc, x_rotor, up=None):
        """``(A, B)`` of one step from the continuous ``(Ac, Bc)`` of :meth:`compose` (zero-order hold,
        then the rotors' discrete filter about the nominal rotor speeds ``x_rotor``)."""
        nc, m = self.nc, Bc.shape[1]
        E = np.zeros((nc + m, nc + m))
        E[:nc, :nc] = Ac * self.dt
        E[:nc, nc:] = Bc * self.dt
        F = sla.expm(E)
        Adc, Bdc = F[:nc, :nc], F[:nc, nc:]
        ns, nu, nr = self.ns, self.nu, self.nr
        a = np.full(nr, self.a_up) if up is None else np.where(np.asarray(up, bool), self.a_up, self.a_down)
        G = self.allocation.A @ np.diag(2.0 * np.asarray(x_rotor, float))   # dW_b = A6 diag(2 x) dx
        A = np.zeros((ns, ns))
        B = np.zeros((ns, nu))
        A[:nc, :nc] = Adc
        A[:nc, nc:] = Bdc[:, :6] @ G
        A[nc:, nc:] = np.diag(a)
        B[:nc, nr:] = Bdc[:, 6:]
        B[nc:, :nr] = np.diag(1.0 - a)
        return A, B

    def nominal(self, flat: FlatResult, q_jet):
        """``(C, V_b, q, qd, W_b, tau, theta, thetad, x)`` of the flat map's nominal at one sample."""
        C = flat.base_pose
        Vb = Ad_inv(C) @ flat.base_twist[0]
        Wb = np.r_[flat.body_torque[0], 0.0, 0.0, flat.thrust[0]]
        tau = flat.tau[0]
        el = self.el
        theta = q_jet[0, el] + tau[el] / self.K if self.ne else np.zeros(0)
        thetad = q_jet[1, el] + flat.tau[1, el] / self.K if self.ne else np.zeros(0)
        x = np.sqrt(np.clip(self.allocation.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0]), 0.0, None))
        return C, Vb, q_jet[0], q_jet[1], Wb, tau, theta, thetad, x

    def state_error(self, nominal, C, Vb, q, qd, theta, thetad, x) -> np.ndarray:
        """``s`` (ns,) of a measured state against a :meth:`nominal` (module docstring)."""
        Cd, Vbd, qd_, qdd_, _, _, thd, thdd, xd = nominal
        s = np.empty(self.ns)
        nv, ne = self.nv, self.ne
        s[:6] = log_se3(np.linalg.solve(Cd, C))
        s[6:nv] = q - qd_
        s[nv:nv + 6] = Vb - Vbd
        s[nv + 6:2 * nv] = qd - qdd_
        s[2 * nv:2 * nv + ne] = np.asarray(theta, float) - thd if ne else 0.0
        s[2 * nv + ne:2 * nv + 2 * ne] = np.asarray(thetad, float) - thdd if ne else 0.0
        s[self.nc:] = np.asarray(x, float) - xd
        return s


# ----------------------------------------------------------------------------- Riccati
def riccati_step(P, A, B, Q, R):
    """One backward step: ``(P_k, K_k)`` from ``P_(k+1)`` (module docstring); ``v_k = -K_k s_k``."""
    BtP = B.T @ P
    S = R + BtP @ B
    K = np.linalg.solve(S, BtP @ A)
    Pk = Q + A.T @ P @ A - (BtP @ A).T @ K
    return 0.5 * (Pk + Pk.T), K


def riccati_sweep(P, A, B, Q, R, steps: int):
    """``steps`` backward steps with the same ``(A, B)`` from ``P``: ``(P, K)`` (warm-started online
    use: converges to the stationary solution of ``(A, B)``)."""
    K = None
    for _ in range(max(int(steps), 1)):
        P, K = riccati_step(P, A, B, Q, R)
    return P, K


def dare_gain(A, B, Q, R):
    """``(P, K)`` of the stationary discrete algebraic Riccati equation (``scipy``'s solver)."""
    P = sla.solve_discrete_are(A, B, Q, R)
    K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
    return P, K


@dataclass
class GainSchedule:
    """Gains ``K(t)`` (nu, ns) stored at ``times`` (M,) [s], linearly interpolated between."""

    times: np.ndarray
    gains: np.ndarray

    def __call__(self, t: float) -> np.ndarray:
        ts = self.times
        if t <= ts[0]:
            return self.gains[0]
        if t >= ts[-1]:
            return self.gains[-1]
        i = int(np.searchsorted(ts, t, side="right")) - 1
        w = (t - ts[i]) / (ts[i + 1] - ts[i])
        return (1.0 - w) * self.gains[i] + w * self.gains[i + 1]


def tvlqr_schedule(models, t0: float, t1: float, dt: float, Q, R, store_every: float = 0.01, tail: float = 2.0,
                   progress=None) -> GainSchedule:
    """The time-varying gains on ``[t0, t1]`` by the backward Riccati recursion.

    models : callable ``t -> (A, B)``, the discrete model of the step starting at ``t``; dt : the
    step [s]; the recursion starts at ``t1 + tail`` from the stationary DARE solution of the
    model there; gains are stored every ``store_every`` s. ``progress(fraction)`` optional.
    """
    steps = int(round((t1 - t0) / dt))
    tail_steps = int(round(tail / dt))
    every = max(1, int(round(store_every / dt)))
    A, B = models(t0 + (steps + tail_steps) * dt)
    P, _ = dare_gain(A, B, Q, R)
    keep_t, keep_K = [], []
    total = steps + tail_steps
    for k in range(total, -1, -1):
        t = t0 + k * dt
        A, B = models(t)
        P, K = riccati_step(P, A, B, Q, R)
        if k <= steps and (k % every == 0 or k == steps):
            keep_t.append(t)
            keep_K.append(K)
        if progress is not None and k % 1000 == 0:
            progress(1.0 - k / max(total, 1))
    return GainSchedule(np.array(keep_t[::-1]), np.array(keep_K[::-1]))


class OnlineGains:
    """Gains recomputed online from the latest linear model.

    ``update(*model, stamp=...)`` hands in the model of a new sample (by default the discrete
    ``(A, B)``; with ``prepare``, whatever ``prepare(*model) -> (A, B)`` takes, e.g. the rigid-body
    ``A``, ``B`` of ``~/linearization`` and the nominal rotor speeds, composed and discretized by
    :class:`ActuatedModel`). Each recomputation runs ``steps`` warm-started Riccati steps
    (:func:`riccati_sweep`) on that frozen model; the first solves its DARE. ``gain()`` returns
    the latest gain (None until the first).

    threaded : True: a background thread recomputes from the newest model at most ``rate_hz``
        times per wall-clock second (older models are dropped); the caller never waits. False:
        ``update`` recomputes in the calling thread when ``stamp`` [s] is at least ``1 / rate_hz``
        after the last recomputation's (deterministic in simulated time; a lock-step loop).

    ``stats``: ``updates`` (recomputations), ``compute_s`` (the last one's duration, prepare
    included) and ``compute_s_max``, ``latency_s`` (wall time from the hand-in of the model used
    to its gain being available; the thread's wait included) and ``latency_s_max``, the sums
    ``compute_s_sum`` and ``latency_s_sum`` (means: divide by ``updates``),
    ``gain_stamp`` (the stamp of the model of the current gain), ``dropped`` (models replaced
    before use).

    Which gain a threaded loop used is decided by the wall clock (how far the thread got), so it
    varies with the machine's load; it is recorded exactly instead: the ``n``-th gain computed
    has the sequence number ``n`` (= ``stats["updates"]`` when it became current),
    :meth:`gain_entry` returns a gain with its number and stamp, and ``history`` (None, or a list
    the caller sets) receives the stamp of every gain computed, in order. Replaying that chain of
    stamps (the first a DARE, each next ``steps`` Riccati steps from the previous) gives the same
    gains (:func:`geodyn_ros.loops.lqr.simulate_case` with ``gain_record``).
    """

    def __init__(self, Q, R, rate_hz: float = 100.0, steps: int = 20, *, prepare=None, threaded: bool = True):
        if not (np.isfinite(rate_hz) and rate_hz > 0):
            raise ValueError(f"rate_hz: expected a finite positive rate [Hz], got {rate_hz!r}")
        if int(steps) < 1:
            raise ValueError(f"steps: expected >= 1 Riccati steps per update, got {steps!r}")
        self.Q, self.R, self.period, self.steps = Q, R, 1.0 / rate_hz, int(steps)
        self.prepare = prepare
        self.threaded = bool(threaded)
        self._lock = threading.Lock()
        self._compute_lock = threading.Lock()   # one recomputation at a time (thread or caller)
        self._model = None
        self._P = None
        self._K = None
        self._entry = (None, 0, None)            # (K, sequence number, stamp), replaced atomically
        self.history = None                      # a list: the stamp of every gain computed, in order
        self._next_stamp = -np.inf
        self.stats = {"updates": 0, "compute_s": 0.0, "compute_s_max": 0.0, "latency_s": 0.0, "latency_s_max": 0.0,
                      "compute_s_sum": 0.0, "latency_s_sum": 0.0, "gain_stamp": None, "dropped": 0}
        self._thread = None
        if self.threaded:
            self._stop = threading.Event()
            self._new = threading.Event()
            self._thread = threading.Thread(target=self._run, name="lqr-gains", daemon=True)
            self._thread.start()

    def update(self, *model, stamp=None) -> None:
        """Hand in the model of the sample at ``stamp`` (seconds; required when not threaded)."""
        if not self.threaded:
            if stamp is None:
                raise ValueError("stamp: required when the gains are not computed on a thread")
            if stamp >= self._next_stamp - 1e-12:
                self._compute((model, stamp, time.perf_counter()))
                self._next_stamp = stamp + self.period
            return
        with self._lock:
            if self._model is not None:
                self.stats["dropped"] += 1
            self._model = (model, stamp, time.perf_counter())
        self._new.set()

    def gain(self):
        """The latest gain ``K`` (nu, ns), or None before the first."""
        with self._lock:
            return self._K

    def gain_entry(self):
        """``(K, n, stamp)``: the latest gain, its sequence number (1 for the first gain computed)
        and the stamp of its model, read together (``(None, 0, None)`` before the first)."""
        with self._lock:
            return self._entry

    def gain_stamp(self):
        """The stamp handed in with the model of the current gain (None before the first)."""
        return self.stats["gain_stamp"]

    def compute(self, *model, stamp=None) -> None:
        """Recompute from ``model`` now, in the calling thread (e.g. a synchronous first gain)."""
        self._compute((model, stamp, time.perf_counter()))

    def _compute(self, item):
        with self._compute_lock:
            self._compute_locked(item)

    def _compute_locked(self, item):
        model, stamp, handed = item
        t0 = time.perf_counter()
        A, B = self.prepare(*model) if self.prepare is not None else model
        if self._P is None:
            P, K = dare_gain(A, B, self.Q, self.R)
        else:
            P, K = riccati_sweep(self._P, A, B, self.Q, self.R, self.steps)
        t1 = time.perf_counter()
        st = self.stats
        if not (np.isfinite(P).all() and np.isfinite(K).all()):
            st["error"] = f"the Riccati recursion on the model of stamp {stamp} is not finite; gain kept"
            if not self.threaded:
                raise ValueError(st["error"])
            return
        with self._lock:
            self._P, self._K = P, K
            self._entry = (K, self._entry[1] + 1, stamp)
            if self.history is not None:
                self.history.append(stamp)
        st.pop("error", None)
        st["updates"] += 1
        st["compute_s"] = t1 - t0
        st["compute_s_max"] = max(st["compute_s_max"], t1 - t0)
        st["latency_s"] = t1 - handed
        st["latency_s_max"] = max(st["latency_s_max"], t1 - handed)
        st["compute_s_sum"] += t1 - t0
        st["latency_s_sum"] += t1 - handed
        st["gain_stamp"] = stamp

    def _run(self):
        next_t = time.monotonic()
        while not self._stop.is_set():
            if not self._new.wait(timeout=0.05):
                continue
            self._new.clear()
            with self._lock:
                item, self._model = self._model, None
            if item is None:
                continue
            try:
                self._compute(item)
            except Exception as exc:  # noqa: BLE001  a bad model must not kill the thread; reported
                self.stats["error"] = f"{type(exc).__name__}: {exc}"
            next_t += self.period
            delay = next_t - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_t = time.monotonic()

    def close(self) -> None:
        """Stop the thread (if any); idempotent."""
        if self._thread is not None:
            self._stop.set()
            self._new.set()
            self._thread.join(timeout=2.0)
            self._thread = None


# ----------------------------------------------------------------------------- the controller
class LqrController:
    """``ff2``'s feedforward plus ``v = -K s`` (module docstring).

    lin : :class:`ActuatedModel`; gains : a :class:`GainSchedule` or a callable ``t -> K``, or an
    object with ``gain()`` (:class:`OnlineGains`). Commands are clipped like the geometric
    controller's and counted. The rotor speed states are estimated by running gz-sim's filter on
    the commands sent; the estimate starts at ``reset_rotors(x)``, or at the nominal speeds of the
    first command. The estimate is state: ``command`` must be called once per control step (a
    second call for the same step advances the filter again).

    ``gain_log``: None, or a dict the caller sets; with an :class:`OnlineGains`, each command at
    ``t`` then stores ``gain_log[round(t * 1e9)] = n``, the sequence number of the gain it used
    (:meth:`OnlineGains.gain_entry`).

    ``rejection`` (:class:`~geodyn_ros.control.rejection.RejectionOptions` or None): the nominal
    and feedforward moved by the observer's wrench, the thrust scale and the CoM offset
    (:func:`~geodyn_ros.control.rejection.lqr.lqr_nominal`), and with ``integral_action`` three integral
    states ``z+ = z + dt delta[3:6]``: the gains must then be those of the augmented model
    (ns + 3 columns; :func:`~geodyn_ros.control.rejection.lqr.integral_model` and
    :func:`~geodyn_ros.control.rejection.lqr.integral_weights` for the schedule). Anti-windup: ``z``
    holds while a rotor clipped on the last cycle and is clamped to ``integral_limit g /
    (omega_n^2 omega_i)`` per axis (the PID-equivalent bound, ``omega_n = sqrt(k_x / m)`` of the
    default :class:`~geodyn_ros.control.flatness.FlatnessGains`, which the default weights match).
    None or every switch off: the law above, bit for bit.
    """

    gain_log = None

    def __init__(self, lin: ActuatedModel, gains, *, rejection=None):
        self.lin = lin
        self.gains = gains
        al, rp = lin.allocation, lin.rotors
        dt = lin.dt
        # the exact inverse of the discrete filter to first order in the jet (as ff2_discrete_lag)
        self._lag_gain = (dt / -np.expm1(-dt / rp.time_constant_up), dt / -np.expm1(-dt / rp.time_constant_down))
        self._x = np.zeros(lin.nr)
        self._x_set = False
        self.rotor_saturations = 0
        self.motor_saturations = 0
        self.wmax = al.max_rot_velocity
        self.umax = lin.elastic.max_motor_torque if lin.elastic else np.inf
        self.rejection = None
        if rejection is not None and not isinstance(rejection, RejectionOptions):
            raise ValueError(f"rejection: expected RejectionOptions or None, got {type(rejection).__name__}")
        if rejection is not None and rejection.active:
            self.rejection = Rejection(rejection, lin.model, al, rp, lin.elastic, gravity=lin.gravity)
            wn = np.sqrt(FlatnessGains().kp_position / lin.model.total_mass)
            #: the integral bandwidth [rad/s] (the schedule's integral_weights must use it) and z's clamp [m s]
            self.integral_bandwidth = rejection.integral_bandwidth or INTEGRAL_FRACTION * wn
            self.z = np.zeros(3)
            self.z_limit = rejection.integral_limit * np.linalg.norm(lin.gravity) / (wn ** 2 * self.integral_bandwidth)

    def reset_rotors(self, x) -> None:
        """Set the rotor speed estimate (the simulator's start state)."""
        self._x[:] = x
        self._x_set = True

    def _gain(self, t):
        g = self.gains
        if hasattr(g, "gain_entry"):
            K, n, _ = g.gain_entry()
            if self.gain_log is not None and K is not None:
                self.gain_log[int(round(t * 1e9))] = n
            return K
        return g.gain() if hasattr(g, "gain") else g(t)

    def command(self, t, C, Vb, q, qd, theta, thetad, q_d, flat: FlatResult, *, rotor_speed=None) -> FlatCommand:
        """Rotor speeds and motor torques at time ``t`` for the measured state and the reference
        (``q_d`` (>= 3, n) joint jet, ``flat`` the flat map of order >= 2; ``rotor_speed``: measured
        speeds for the rejection's observer, default its rotor model)."""
        lin = self.lin
        if len(flat.thrust) < 3:
            raise ValueError(f"flat: the LQR's feedforward (ff2) needs the flat-map jets of order >= 2, got "
                             f"{len(flat.thrust) - 1}")
        for name, a in (("C", C), ("Vb", Vb), ("q", q), ("qd", qd)):
            if not np.all(np.isfinite(np.asarray(a, float))):
                raise ValueError(f"{name}: contains NaN or Inf")
        nom = lin.nominal(flat, q_d)
        al = lin.allocation
        # feedforward (ff2): rotor speeds with the discrete lag inverse, Spong's motor torques
        u0 = al.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0])
        om_d = np.sqrt(np.clip(u0, 0.0, None))
        du = al.allocate_thrust_torque(flat.thrust[1], flat.body_torque[1])
        omd = du / (2.0 * np.maximum(om_d, 1e-6))
        om_ff = om_d + np.where(omd > 0.0, self._lag_gain[0], self._lag_gain[1]) * omd
        el = lin.el
        if lin.ne:
            thdd = q_d[2, el] + flat.tau[2, el] / lin.K
            u_ff = lin.Bm * thdd + flat.tau[0, el]
        else:
            u_ff = np.zeros(0)
        rj = self.rejection
        if rj is not None:
            tr, dt = rj.step_time(t)
            rj.observe(tr, C, Vb, q, qd, theta if lin.ne else None, rotor_speed)
            nom, om_ff, u_ff = lqr_nominal(rj, lin, flat, q_d, nom, self._lag_gain)
        K = self._gain(t)
        if not self._x_set:
            self.reset_rotors(nom[-1])
        s = lin.state_error(nom, C, Vb, q, qd, theta if lin.ne else np.zeros(0), thetad if lin.ne else np.zeros(0),
                            self._x)
        if rj is not None and rj.options.integral_action:
            if K is not None and K.shape[1] != lin.ns + 3:
                raise ValueError(f"gains: integral_action needs the gains of the model with 3 integral states "
                                 f"({lin.ns + 3} columns, rejection.lqr.integral_model), got {K.shape[1]}")
            if not rj.engaged:           # held at zero while disengaged (rejection.options: engage)
                self.z = np.zeros(3)
            elif dt is not None and not rj.saturated:
                self.z = np.clip(self.z + dt * s[3:6], -self.z_limit, self.z_limit)
            s = np.concatenate([s, self.z])
        v = -K @ s if K is not None else np.zeros(lin.nu)
        if not np.all(np.isfinite(v)):
            raise ValueError("inputs: the feedback is not finite")
        om_raw = om_ff + v[:lin.nr]
        if rj is None:
            u_raw = np.concatenate([u_ff + v[lin.nr:lin.nr + lin.ne], flat.tau[0, lin.rigid] + v[lin.nr + lin.ne:]])
        else:                    # u_ff of lqr_nominal: the elastic motors' then the rigid joints' torques
            u_raw = u_ff + v[lin.nr:]
        om = np.clip(om_raw, 0.0, self.wmax)
        u = np.clip(u_raw, -self.umax, self.umax)
        n_rot, n_mot = int(np.sum(om != om_raw)), int(np.sum(u != u_raw))
        self.rotor_saturations += n_rot
        self.motor_saturations += n_mot
        # the rotor model on the clipped command (the simulator's filter, clipped to the limit)
        r = np.minimum(om, self.wmax)
        a = np.where(r > self._x, lin.a_up, lin.a_down)
        self._x = a * self._x + (1.0 - a) * r
        T = float(flat.thrust[0])
        if rj is not None:
            jt = np.zeros(lin.n)
            jt[lin.rigid] = u[lin.ne:]
            rj.sent(om, jt, saturated=n_rot > 0)
        return FlatCommand(om, u, T, flat.body_torque[0], om_raw, u_raw, n_rot, n_mot)
