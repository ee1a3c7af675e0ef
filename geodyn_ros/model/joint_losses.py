"""Joint losses: the URDF's ``<dynamics damping friction>`` as a torque jet the actuators must add.

The rigid-body recursions (paper Alg. 1-2) give the torque that moves the links,
``tau_id = M(q) q'' + h(q, q', V)``. A joint that also loses torque to viscous damping ``d``
[N m s/rad] and dry (Coulomb) friction ``f`` [N m] needs, from its actuator,

    tau = tau_id + tau_loss,     tau_loss(q') = d q' + f tanh(q' / v_f),

with ``q'`` the joint rate of the *reference* (a feedforward: the measured rate would feed its noise
back, and a stalled joint would never get the torque to break away). ``tanh(q'/v_f)`` is the sign
of ``q'`` smoothed over a boundary layer ``|q'| < v_f`` (Slotine and Li, *Applied Nonlinear
Control*, 1991, Sec. 7.1.3): without it, the loss and its derivatives jump at every velocity
reversal, and an elastic joint's motor (``theta_d = q_d + K^-1 tau``) would have to jump by
``2 f / K``. Inside the layer the friction is compensated in part; the joint's feedback carries
the rest. Its derivatives are bounded: ``|d/dt tanh(q'/v_f)| <= |q''| / v_f``.

The loss is internal to the robot: the motor's torque and the friction both act between the same
two links, so the base wrench of the recursions is unchanged and only the joint rows of the
feedforward move (``gd.inverse_dynamics``' ``ext_torque = -tau_loss`` gives the same ``tau``).

The jet (``tau_loss^(0..r)``, ``r <= 3``) follows from the reference's ``q^(1..r+1)`` by the chain
rule (Faa di Bruno): with ``x = q'/v_f``, ``s = tanh x``, ``a = 1 - s^2``,

    s' = a x',   s'' = -2 s a x'^2 + a x'',   s''' = (4 s^2 a - 2 a^2) x'^3 - 6 s a x' x'' + a x'''.

This is what gz-sim simulates of the URDF (DART's joint damping and Coulomb friction), and MuJoCo
with ``joint_dynamics=True`` (``damping`` and ``frictionloss``); the package's model ignores them
(:mod:`geodyn_ros.model.urdf`), so a controller adds this jet where the plant has them
(``joint_losses=`` of the controllers).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

__all__ = ["JointLosses", "DEFAULT_FRICTION_VELOCITY", "joint_losses_from_urdf", "loss_torque_jet", "MAX_ORDER",
           "check_joint_losses", "add_loss_jet", "JOINT_LOSS_MODES", "losses_for_mode", "PLANT_INTEGRATOR",
           "check_loss_mode", "loss_jet_order"]

#: the in-process loops' ``joint_losses`` modes: ``"off"`` (the plant has no losses: the package's
#: model, as always), ``"plant"`` (the simulator keeps the URDF's damping and friction, as gz-sim does,
#: and the controller ignores them), ``"compensated"`` (the plant keeps them and the controller adds
#: their torque jet)
JOINT_LOSS_MODES = ("off", "plant", "compensated")

#: the MuJoCo integrator of a plant with joint losses: damping ``d`` on a joint of inertia ``I`` is a
#: pole at ``-d/I``, and RK4 (the loops' default) is stable only for ``timestep < 2.78 I / d``:
#: hextilt_flying_arm_5's last link (about 1e-5 kg m^2, 0.1 N m s/rad) needs 0.3 ms, and its flight
#: at 1 ms diverged in 3 ms. ``implicitfast`` integrates the damping implicitly.
PLANT_INTEGRATOR = "implicitfast"

#: the boundary layer v_f [rad/s] of the smoothed sign (module docstring): 0.05 rad/s (2.9 deg/s),
#: a twentieth of the 1 rad/s an arm joint of the shipped vehicles' figure eight reaches; its reversal
#: (|q''| about 2 rad/s^2 there) crosses the layer in about 0.05 s, 50 control periods at 1 kHz.
DEFAULT_FRICTION_VELOCITY = 0.05

#: the highest derivative of the loss the jet gives (the controllers read up to 2)
MAX_ORDER = 3


@dataclass(frozen=True)
class JointLosses:
    """Per-joint viscous damping ``damping`` (n,) [N m s/rad, N s/m if prismatic] and dry friction
    ``friction`` (n,) [N m, or N], model joint order ``joint_names``, and the smoothed sign's
    boundary layer ``friction_velocity`` [rad/s] (> 0). Every value finite and >= 0
    (``ValueError`` naming the field)."""

    joint_names: tuple
    damping: np.ndarray
    friction: np.ndarray
    friction_velocity: float = DEFAULT_FRICTION_VELOCITY

    def __post_init__(self):
        names = tuple(self.joint_names)
        object.__setattr__(self, "joint_names", names)
        for field in ("damping", "friction"):
            v = np.array(getattr(self, field), dtype=float).reshape(-1)
            if v.shape != (len(names),):
                raise ValueError(f"{field}: expected {len(names)} values (one per joint), got {v.size}")
            if not (np.all(np.isfinite(v)) and np.all(v >= 0)):
                bad = next(k for k in range(v.size) if not (np.isfinite(v[k]) and v[k] >= 0))
                raise ValueError(f"{field}: joint {names[bad]!r}: {float(v[bad])!r} is not a finite value >= 0")
            v.setflags(write=False)
            object.__setattr__(self, field, v)
        vf = self.friction_velocity
        if isinstance(vf, bool) or not isinstance(vf, (int, float, np.floating)) or not (math.isfinite(vf) and vf > 0):
            raise ValueError(f"friction_velocity: expected a finite rate > 0 [rad/s], got {vf!r}")
        object.__setattr__(self, "friction_velocity", float(vf))

    @property
    def active(self) -> bool:
        """True when some joint has damping or friction."""
        return bool(np.any(self.damping > 0) or np.any(self.friction > 0))

    def describe(self) -> str:
        """One line: the lossy joints with their damping and friction (``"none"`` without)."""
        parts = [f"{j} (damping {d:g}, friction {f:g})" for j, d, f in zip(self.joint_names, self.damping, self.friction)
                 if d > 0 or f > 0]
        return ", ".join(parts) if parts else "none"


def joint_losses_from_urdf(source, joint_names, *, friction_velocity: float = DEFAULT_FRICTION_VELOCITY) -> JointLosses:
    """The ``<dynamics damping friction>`` of the joints ``joint_names`` (a model's order) in the URDF
    ``source`` (a path, a .xacro or the XML text, as :func:`geodyn_ros.load_urdf` takes); 0 where
    absent. A value that is not a finite number >= 0 raises ``ValueError`` as
    ``<file>: joint <name>: dynamics <key>: <problem>; <fix>``; a joint not in the URDF too."""
    from .urdf import _read_source
    text, where = _read_source(source)
    try:
        root = ET.fromstring(text.lstrip("\ufeff \t\r\n"))
    except ET.ParseError as exc:
        raise ValueError(f"source: {where} is not valid XML ({exc})") from None
    found = {je.get("name"): je for je in root.findall("joint")}
    names = tuple(joint_names)
    vals = {"damping": np.zeros(len(names)), "friction": np.zeros(len(names))}
    for k, name in enumerate(names):
        je = found.get(name)
        if je is None:
            raise ValueError(f"{where}: joint {name}: not a joint of this URDF; load the model from the same file")
        dyn = je.find("dynamics")
        if dyn is None:
            continue
        for key, arr in vals.items():
            raw = dyn.get(key)
            if raw is None or not raw.strip():
                continue
            try:
                v = float(raw)
            except ValueError:
                v = float("nan")
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{where}: joint {name}: dynamics {key}: {raw!r} is not a finite number >= 0; "
                                 f"give {key}=\"0\" or a positive value")
            arr[k] = v
    return JointLosses(names, vals["damping"], vals["friction"], friction_velocity)


def loss_torque_jet(losses: JointLosses, q_jet, order: int) -> np.ndarray:
    """``tau_loss^(0..order)`` (order+1, n) of the reference joint jet ``q_jet`` (>= order+2, n):
    rows ``q, q', ..., q^(order+1)`` (row 0, the position, is not used). Module docstring for the
    formula. ``ValueError`` naming the argument for an order outside ``0..MAX_ORDER``, too few rows,
    the wrong width or a value that is not finite."""
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or not 0 <= order <= MAX_ORDER:
        raise ValueError(f"order: expected an integer 0..{MAX_ORDER}, got {order!r}")
    q = np.asarray(q_jet, dtype=float)
    n = len(losses.joint_names)
    if q.ndim != 2 or q.shape[1] != n or q.shape[0] < order + 2:
        raise ValueError(f"q_jet: expected (>= {order + 2}, {n}) rows q^(0..{order + 1}), got shape {q.shape}")
    rates = q[1:order + 2]
    if not np.all(np.isfinite(rates)):
        raise ValueError("q_jet: contains NaN or Inf")
    d, f, vf = losses.damping, losses.friction, losses.friction_velocity
    out = d * rates[:order + 1]                       # d q^(k+1)
    x = rates / vf                                    # x, x', x'', x''' (as many as the order needs)
    s = np.tanh(x[0])
    a = 1.0 - s * s
    sj = np.empty((order + 1, n))
    sj[0] = s
    if order >= 1:
        sj[1] = a * x[1]
    if order >= 2:
        sj[2] = -2.0 * s * a * x[1] ** 2 + a * x[2]
    if order >= 3:
        sj[3] = (4.0 * s * s * a - 2.0 * a * a) * x[1] ** 3 - 6.0 * s * a * x[1] * x[2] + a * x[3]
    return out + f * sj


def check_joint_losses(losses, joint_names) -> JointLosses | None:
    """A controller's ``joint_losses`` argument: None (also for losses that are all zero, so the law
    stays bit for bit the lossless one) or the :class:`JointLosses` of exactly ``joint_names``
    (``ValueError`` naming ``joint_losses`` otherwise)."""
    if losses is None:
        return None
    if not isinstance(losses, JointLosses):
        raise ValueError(f"joint_losses: expected JointLosses or None, got {type(losses).__name__}")
    if tuple(losses.joint_names) != tuple(joint_names):
        raise ValueError(f"joint_losses: its joints {losses.joint_names} differ from the controller's {tuple(joint_names)}")
    return losses if losses.active else None


def add_loss_jet(losses: JointLosses, q_d, tau_jet, order: int) -> np.ndarray:
    """``tau_jet`` (copy) with ``tau_loss^(0..order)`` of ``q_d`` added to its rows ``0..order``.
    ``q_d`` needs ``order + 2`` finite rows (``ValueError`` naming ``q_d``); a ``tau_jet`` with fewer
    rows than ``order + 1`` or of another width is returned as it is, for the controller to refuse
    by its own rule."""
    tau = np.array(tau_jet, dtype=float)
    if tau.ndim != 2 or tau.shape[0] < order + 1 or tau.shape[1] != len(losses.joint_names):
        return np.ascontiguousarray(tau_jet, dtype=float)
    q = np.asarray(q_d, dtype=float)
    if q.ndim != 2 or q.shape[0] < order + 2:
        raise ValueError(f"q_d: the joint losses at this level need the reference rows q_d^(0..{order + 1}), got "
                         f"{q.shape[0] if q.ndim == 2 else 0} rows")
    if not np.all(np.isfinite(q[1:order + 2])):
        raise ValueError("q_d: contains NaN or Inf (the joint losses' rates)")
    tau[:order + 1] += loss_torque_jet(losses, q, order)
    return tau


def check_loss_mode(mode) -> str:
    """``mode`` if it is one of :data:`JOINT_LOSS_MODES`, else ``ValueError`` naming ``joint_losses``
    (the loops check it before any work)."""
    if not isinstance(mode, str) or mode not in JOINT_LOSS_MODES:
        raise ValueError(f"joint_losses: expected one of {JOINT_LOSS_MODES}, got {mode!r}")
    return mode


def loss_jet_order(losses, elastic_idx) -> int:
    """The highest derivative of the loss jet a controller's top level reads: 2 where one of the
    joints ``elastic_idx`` (indices into the losses' joints) is elastic and lossy, since its motor's
    reference ``theta_d = q_d + K^-1 tau`` is flown to its second derivative (ff2's ``tau''``); else 0
    (a rigid joint reads ``tau`` alone). ``losses``: :class:`JointLosses` or None."""
    idx = np.asarray(elastic_idx, dtype=np.intp).reshape(-1)
    if losses is None or not idx.size:
        return 0
    return 2 if np.any((losses.damping + losses.friction)[idx] > 0) else 0


def losses_for_mode(mode, source, joint_names) -> tuple:
    """``(plant_losses, controller_losses)`` of a loop's ``joint_losses`` mode (:data:`JOINT_LOSS_MODES`):
    whether the simulator keeps the URDF's ``<dynamics>`` (``joint_dynamics=True``), and the
    controller's :class:`JointLosses` of ``source`` (None unless ``"compensated"``). ``ValueError``
    naming ``joint_losses`` for another mode."""
    check_loss_mode(mode)
    if mode == "off":
        return False, None
    return True, (joint_losses_from_urdf(source, joint_names) if mode == "compensated" else None)
