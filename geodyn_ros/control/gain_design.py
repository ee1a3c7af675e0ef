"""Feedback gains from the model, and the discrete-time check that refuses unstable ones.

ROS-free and simulator-free (layer 2: imports ``model``, ``algorithms`` and ``control`` only).

Scaling (every loop is a PD on a second-order axis ``I x'' = u``: ``k_p = I w^2``,
``k_d = 2 zeta I w``, with ``w`` the loop's natural frequency [rad/s], called its *bandwidth*,
and ``zeta`` its damping ratio):

* **CoM / base position**: ``I = m``, the total mass [kg];
* **attitude**, per base axis (x, y, z): ``I = I_c,ii``, the diagonal of the inertia about the
  system CoM at the home configuration ``q = 0`` (base axes, arm locked; parallel-axis theorem on
  the locked inertia, :func:`model_inertias`). The flatness controller has one gain per axis
  (roll, pitch from ``attitude``, yaw from ``yaw``); the actuated controller's rotation gain is
  one scalar, scaled by the largest of the three (its slowest axis gets the asked bandwidth);
* **rigid (torque-controlled) joints**: ``I = 1 / (M^-1)_jj``, the apparent inertia of joint j
  with every other degree of freedom free (the floating base and the other joints: at the
  sampling rate their PD loops are springs, not locks), from the joint-space inertia ``M`` at
  home (``gd`` mass matrix). It is the smallest of the candidate inertias (``M_jj`` with
  everything else locked is the largest), hence the safe one for the discrete check: on
  example-robot-data's Borinot arm the distal joint has ``M_jj = 1.7e-3`` but ``1 / (M^-1)_jj
  = 2.7e-4 kg m^2``: with one step of delay ``kd_joint = 0.5`` at 1 ms is unstable with the latter
  (radius 1.39) but would pass with the former (0.88);
* **series-elastic joints** (the PD acts on the motor angle): ``I = B``, the motor inertia.

Caps (a requested bandwidth above a cap is lowered to it, and the design says so in
``GainDesign.notes``):

* CoM and attitude loops act through the rotors: ``w <= ROTOR_LAG_FRACTION / T_up``
  (0.5: the first-order rotor lag then costs at most ``atan(0.5) = 27 deg`` of phase at ``w``);
* every loop: ``w <= 2 pi / (SAMPLES_PER_PERIOD dt)``: at least 20 control steps per period of
  the loop (Franklin, Powell & Workman, *Digital Control*, Sec. 11: sample 20 to 40 times the
  closed-loop bandwidth).

Discrete check (:func:`discrete_radius`): the axis ``I x'' = -k x + f`` (``k``: a physical
stiffness, the elastic joint's ``K`` with the link locked; 0 otherwise), driven through the rotor
lag ``T f' = u - f`` for the CoM and attitude loops, with ``u`` held over one period ``dt`` (zero-order
hold) and computed from the state sampled one period earlier (one step of delay: measurement,
computation, transport). The loop is accepted when the spectral radius of the closed loop stays
below 1 with both gains multiplied by ``GAIN_MARGIN`` (1.5, i.e. 3.5 dB: it tolerates an inertia
2/3 of the modelled one). The delay is that of a ROS 2 loop or of hardware; the in-process MuJoCo loop
applies joint torques without it, so a joint gain refused here may still fly there
(doc/explanation/gains.md has the measurement). A refused gain is named with the bound found by bisection on that gain.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..model.validate import FileKeys, file_error, file_number, short_repr
from ..vehicle.plausible import RANGES

__all__ = ["DEFAULTS", "ROTOR_LAG_FRACTION", "SAMPLES_PER_PERIOD", "GAIN_MARGIN", "GainDesign",
           "design_gains", "check_gains", "live_gain_refusals", "discrete_radius", "loop_matrix", "model_inertias", "gain_bound"]

#: default (bandwidth [rad/s], damping) per loop and controller kind. Flatness (collinear
#: vehicle): the CoM loop 4 rad/s, 0.9; roll/pitch 17 rad/s, 0.7, four times faster than the CoM
#: (the attitude is the CoM loop's actuator) and below half the rotor corner (1 / 0.0182 s = 55
#: rad/s); yaw 12 rad/s, critically damped (drag torques give a collinear vehicle little yaw
#: authority). Actuated (rank 6): the position acts directly through the rotors (no attitude
#: cascade): 10 rad/s, 0.5; rotation 20 rad/s, 1.0. Joints 30 rad/s, 0.7 for both. On the shipped
#: 4.03 kg vehicles the CoM and attitude defaults give today's explicit numbers within 7 %
#: (``doc/explanation/gains.md`` has the comparison).
DEFAULTS = {
    "flatness": {"com": (4.0, 0.9), "attitude": (17.0, 0.7), "yaw": (12.0, 1.0), "joints": (30.0, 0.7)},
    "actuated": {"com": (10.0, 0.5), "attitude": (20.0, 1.0), "joints": (30.0, 0.7)},
}
#: attitude / CoM bandwidth cap as a fraction of the rotor corner frequency ``1 / T_up``
ROTOR_LAG_FRACTION = 0.5
#: every loop's bandwidth is at most ``2 pi / (SAMPLES_PER_PERIOD * dt)``
SAMPLES_PER_PERIOD = 20
#: the discrete loop must stay stable with both gains multiplied by this factor (3.5 dB: an
#: effective inertia 2/3 of the modelled one). The one-step delay assumed is a margin of its own for
#: the in-process loops, which apply a command in the step it is computed. (At 2x, 6 dB, today's
#: kd_joint 0.5 on the shipped arm's rigid wrist joints J4/J7 would be refused: bound 0.469.)
GAIN_MARGIN = 1.5
#: the damping at which a refused stiffness is bounded (the kp bound is taken with kd = 2 zeta sqrt(kp I))
_BOUND_DAMPING = 0.7
_EXPLICIT = ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint")
_UNITS = {"position": ("N/m", "N s/m"), "rotation": ("N m/rad", "N m s/rad"), "joint": ("N m/rad", "N m s/rad")}


# ----------------------------------------------------------------------------- the discrete loop
def loop_matrix(inertia, kp, kd, dt, *, lag=None, stiffness=0.0, delay=True) -> np.ndarray:
    """Closed-loop transition matrix of one PD axis under zero-order hold (module docstring).

    Plant (continuous): ``x' = v``, ``I v' = -stiffness x + f``; with ``lag`` = T [s]:
    ``T f' = u - f``, else ``f = u``. ``u`` is held over ``[k dt, (k+1) dt)``; with ``delay`` it is
    ``u_k = -kp x_{k-1} - kd v_{k-1}`` (one step old), else ``-kp x_k - kd v_k``. The state is
    ``(x, v[, f][, u_prev])``; returns the square matrix ``Phi`` with ``z_{k+1} = Phi z_k``.
    """
    from scipy.linalg import expm
    inertia, dt = float(inertia), float(dt)
    if not (inertia > 0 and math.isfinite(inertia)):
        raise ValueError(f"inertia: expected a finite positive value, got {inertia!r}")
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt: expected a finite positive period [s], got {dt!r}")
    ns = 2 if lag is None else 3
    Ac = np.zeros((ns, ns))
    Bc = np.zeros(ns)
    Ac[0, 1] = 1.0
    Ac[1, 0] = -float(stiffness) / inertia
    if lag is None:
        Bc[1] = 1.0 / inertia
    else:
        Ac[1, 2] = 1.0 / inertia
        Ac[2, 2] = -1.0 / float(lag)
        Bc[2] = 1.0 / float(lag)
    E = np.zeros((ns + 1, ns + 1))
    E[:ns, :ns] = Ac
    E[:ns, ns] = Bc
    Ed = expm(E * dt)
    Ad, Bd = Ed[:ns, :ns], Ed[:ns, ns]
    K = np.zeros(ns)
    K[0], K[1] = kp, kd
    if not delay:
        return Ad - np.outer(Bd, K)
    Phi = np.zeros((ns + 1, ns + 1))
    Phi[:ns, :ns] = Ad
    Phi[:ns, ns] = Bd
    Phi[ns, :ns] = -K
    return Phi


def discrete_radius(inertia, kp, kd, dt, *, lag=None, stiffness=0.0, delay=True) -> float:
    """Spectral radius of :func:`loop_matrix` (< 1: the discrete loop is asymptotically stable);
    ``inf`` when the matrix itself overflows (a gain of 1e308 times the margin: unstable, not an
    error)."""
    with np.errstate(over="ignore", invalid="ignore"):
        Phi = loop_matrix(inertia, kp, kd, dt, lag=lag, stiffness=stiffness, delay=delay)
    if not np.all(np.isfinite(Phi)):
        return math.inf
    return float(np.max(np.abs(np.linalg.eigvals(Phi))))


def _ok(I, kp, kd, dt, lag, k):
    return discrete_radius(I, GAIN_MARGIN * kp, GAIN_MARGIN * kd, dt, lag=lag, stiffness=k) < 1.0


def _bisect(f, good, bad, iters=60):
    """``f(good)`` True, ``f(bad)`` False: the boundary between them (geometric bisection)."""
    for _ in range(iters):
        mid = math.sqrt(good) * math.sqrt(bad) if good > 0 and bad > 0 else 0.5 * good + 0.5 * bad
        if f(mid):
            good = mid
        else:
            bad = mid
        if abs(bad - good) <= 1e-6 * max(abs(good), abs(bad)):
            break
    return good


def gain_bound(I, kp, kd, dt, *, lag=None, stiffness=0.0):
    """Why a PD axis is refused: ``(which, relation, bound)`` with ``which`` "kp" or "kd" and
    ``relation`` "<" or ">": the gain to change and the limit (the other gain kept), found by
    bisection on that gain with the margin of :data:`GAIN_MARGIN`. For the stiffness the damping
    gain follows it at damping :data:`_BOUND_DAMPING`. ``None`` if the loop is accepted."""
    if _ok(I, kp, kd, dt, lag, stiffness):
        return None
    if kp <= 0.0 and stiffness <= 0.0:
        return "kp", ">", 0.0       # no restoring force: the position drifts (a pole at z = 1)
    # the grid and the search start at most at the loop's own scales (I / dt for kd, I / dt^2 for kp: a
    # discrete loop is unstable well before), so an absurd gain (1e308) is still bounded
    grid = (min(kd, I / dt) if kd > 0 else np.sqrt(max(min(kp, I / dt ** 2), 1e-12) * I)) * np.logspace(-4, 2, 61)
    good = [g for g in grid if _ok(I, kp, g, dt, lag, stiffness)]
    if good:
        below = [g for g in good if g < kd]
        if below:
            return "kd", "<", _bisect(lambda g: _ok(I, kp, g, dt, lag, stiffness), max(below), kd)
        return "kd", ">", _bisect(lambda g: _ok(I, kp, g, dt, lag, stiffness), min(good), kd)

    def ok_kp(p):
        return _ok(I, p, 2 * _BOUND_DAMPING * math.sqrt(p * I), dt, lag, stiffness)
    lo = min(kp, I / dt ** 2)
    for _ in range(60):
        lo *= 0.1
        if ok_kp(lo):
            return "kp", "<", _bisect(ok_kp, lo, kp)
    return "kp", "<", 0.0


# ----------------------------------------------------------------------------- the model's inertias
def model_inertias(model, q=None) -> dict:
    """The inertias the loops are scaled by, at the configuration ``q`` (default home, ``q = 0``).

    Returns a dict: ``mass`` [kg]; ``com`` (3,) [m] the system CoM in the base link;
    ``inertia_com`` (3, 3) [kg m^2] about the CoM, base axes (parallel-axis theorem on the locked
    inertia ``M_b`` about the base origin); ``joint_inertia`` (n,) [kg m^2 or kg] each joint's
    apparent inertia ``1 / (M^-1)_jj`` with every other degree of freedom free (module
    docstring); ``joint_inertia_locked`` (n,) the diagonal ``M_jj`` (everything else locked).
    """
    from ..algorithms.eom import mass_matrix
    n = model.n_joints
    q = np.zeros(n) if q is None else np.asarray(q, float)
    if q.shape != (n,):
        raise ValueError(f"q: expected shape ({n},), got {q.shape}")
    M = mass_matrix(model, np.eye(4), q)
    Mb = M[:6, :6]
    m = float(Mb[3, 3])
    c = np.array([Mb[2, 4], Mb[0, 5], Mb[1, 3]]) / m          # M_b[:3, 3:] = m hat(c)
    Ic = Mb[:3, :3] - m * (float(c @ c) * np.eye(3) - np.outer(c, c))
    eff = 1.0 / np.diag(np.linalg.inv(M))[6:]
    return {"mass": m, "com": c, "inertia_com": Ic, "joint_inertia": eff, "joint_inertia_locked": np.diag(M)[6:].copy()}


# ----------------------------------------------------------------------------- design
@dataclass
class GainDesign:
    """The result of :func:`design_gains`.

    kind: "flatness" or "actuated"; kp_position, kd_position (floats); kp_rotation, kd_rotation
    ((3,) per base axis for flatness; floats for actuated); kp_joint, kd_joint ((n,) per model
    joint); loops: one dict per loop and axis (loop, axis, inertia, kp, kd, bandwidth, damping,
    spectral_radius, ok, bound); refusals: one line per refused loop; notes: the caps applied.
    """

    kind: str
    kp_position: float
    kd_position: float
    kp_rotation: object
    kd_rotation: object
    kp_joint: np.ndarray
    kd_joint: np.ndarray
    joint_names: tuple
    loops: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def gains(self):
        """The controller's gains object: :class:`~geodyn_ros.control.flatness.FlatnessGains` or
        :class:`~geodyn_ros.control.feedback.TrackingGains`, with per-joint tuples (scalars for
        TrackingGains when every joint has the same gain)."""
        kw = {k: getattr(self, k) for k in _EXPLICIT}
        if self.kind == "flatness":
            from .flatness import FlatnessGains
            kw["kp_rotation"], kw["kd_rotation"] = tuple(kw["kp_rotation"]), tuple(kw["kd_rotation"])
            return FlatnessGains(**kw)
        from .feedback import TrackingGains
        for k in ("kp_joint", "kd_joint"):   # a uniform array is the scalar (TrackingGains takes either form)
            a = np.asarray(kw[k], float)
            if a.size and np.all(a == a.flat[0]):
                kw[k] = float(a.flat[0])
        return TrackingGains(**kw)

    def as_dict(self) -> dict:
        """JSON-ready: the gains as lists/floats, the loops, refusals and notes."""
        def j(v):
            return np.asarray(v, float).tolist()
        return {"kind": self.kind, **{k: j(getattr(self, k)) for k in _EXPLICIT},
                "joint_names": list(self.joint_names),
                "loops": [{k: (j(v) if isinstance(v, (np.ndarray, np.floating)) else v) for k, v in lp.items()}
                          for lp in self.loops],
                "refusals": list(self.refusals), "notes": list(self.notes)}


def _elastic_map(config, rigid_joints):
    el = getattr(config, "elastic", None)
    if rigid_joints or el is None or not len(el.joints):
        return {}
    return {j: (float(B), float(K)) for j, B, K in zip(el.joints, np.broadcast_to(el.motor_inertia, (len(el.joints),)),
                                                        np.broadcast_to(el.stiffness, (len(el.joints),)))}


def _t_up(config):
    """The slowest rotor's time constant [s]; None without rotors (ideal actuators: no lag)."""
    r = getattr(config, "rotors", None)
    if r is None:
        return None
    t = r.per_rotor("time_constant_up") if hasattr(r, "per_rotor") else np.asarray(r.time_constant_up, float)
    return float(np.max(t))


class _GainKeys(FileKeys):
    """The checks of a ``gains:`` mapping: refusals name the vehicle file (``where``) when the
    mapping is its ``gains:`` section, else the argument: ``"gains.<key>: <problem>; <fix>"``."""

    def fail(self, key, problem, fix=None):
        raise file_error(self.where, key, problem, fix) if self.where else file_error(key, "", problem, fix)


def _bw_spec(spec, key, default, c):
    if spec is None or key not in spec:
        return default
    s = spec[key]
    c.mapping(f"gains.{key}", s, "give {bandwidth: <rad/s>, damping: <ratio>} (either or both)")
    c.keys(f"gains.{key}", s, ("bandwidth", "damping"))
    out = []
    for name, d in zip(("bandwidth", "damping"), default):
        v = s.get(name, d)
        x = file_number(v)          # strict: "5" (a string) or true is no number
        if x is None or not (math.isfinite(x) and x > 0):
            c.fail(f"gains.{key}.{name}", f"expected a finite positive number, got {short_repr(v)}",
                   "give the " + ("natural frequency [rad/s]" if name == "bandwidth" else "damping ratio (0.7: "
                                  "well damped)"))
        out.append(c.within(f"gains.{key}.{name}", x, RANGES[name]))
    return tuple(out)


def _loop_axes(kind, inertias, joint_names, elastic, t_up):
    """[(loop, axis, inertia, lag, stiffness, gain-name stem, index)] of every loop axis."""
    Ic = np.diag(inertias["inertia_com"])
    axes = [("com", "xyz", inertias["mass"], t_up, 0.0, "position", None)]
    if kind == "flatness":
        axes += [("attitude", a, Ic[i], t_up, 0.0, "rotation", i) for i, a in enumerate(("roll", "pitch"))]
        axes += [("yaw", "yaw", Ic[2], t_up, 0.0, "rotation", 2)]
    else:
        axes += [("attitude", a, Ic[i], t_up, 0.0, "rotation", None) for i, a in enumerate(("roll", "pitch", "yaw"))]
    for j, name in enumerate(joint_names):
        if name in elastic:
            B, K = elastic[name]
            axes.append(("joint", name, B, None, K, "joint", j))
        else:
            axes.append(("joint", name, float(inertias["joint_inertia"][j]), None, 0.0, "joint", j))
    return axes


def _period(config, period):
    dt = period if period is not None else getattr(config, "control_period", 1e-3)
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"period: expected a finite positive control period [s], got {period!r}")
    return dt


def design_gains(model, allocation, config, *, kind=None, spec=None, period=None, rigid_joints=False,
                 q=None) -> GainDesign:
    """Gains of the ``kind`` controller for this vehicle (module docstring).

    model : the loaded model (rotor joints locked); allocation :
    :class:`~geodyn_ros.control.rotors.Allocation` (its rank picks ``kind`` when None: collinear
    -> "flatness", rank 6 -> "actuated"); config : the vehicle's ``ActuationConfig`` (rotor time
    constants, elastic joints, ``gains_spec`` and ``control_period`` when present); spec : the
    ``gains:`` mapping (default ``config.gains_spec``; absent: :data:`DEFAULTS`): per loop
    ``{bandwidth, damping}`` (loops ``com``, ``attitude``, ``yaw``, ``joints``) and/or explicit
    gains (``kp_position`` ... ``kd_joint``; scalars, per-axis triples for the rotation of the
    flatness controller, per-joint lists), which win; period : control period [s] (default
    ``config.control_period``, else 1 ms); rigid_joints : treat every joint as rigid
    (torque-controlled) even if the config lists it elastic; q : reference configuration (home).

    Never raises for an unstable loop: it is listed in ``refusals`` (:func:`check_gains` raises).
    """
    if kind is None:
        kind = "flatness" if allocation.collinear else "actuated"
    if kind not in DEFAULTS:
        raise ValueError(f"kind: expected 'flatness' or 'actuated', got {kind!r}")
    dt = _period(config, period)
    c = _GainKeys("")
    if spec is None:         # the vehicle file's gains: its refusals name the file
        spec = getattr(config, "gains_spec", None)
        c = _GainKeys(getattr(config, "source_path", None) or "")
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        c.fail("gains", f"expected a mapping, got {type(spec).__name__}", "give loops and/or gains by name")
    known = list(DEFAULTS[kind]) + list(_EXPLICIT) + (["yaw"] if kind == "actuated" else [])
    c.keys("gains", spec, known)
    inertias = model_inertias(model, q)
    joint_names = tuple(model.joint_names)
    notes = []
    if kind == "actuated" and "yaw" in spec:
        notes.append("yaw: not used (the actuated controller has one rotation gain, set by attitude)")
    n = len(joint_names)
    elastic = _elastic_map(config, rigid_joints)
    t_up = _t_up(config)
    w_rate = 2 * math.pi / (SAMPLES_PER_PERIOD * dt)
    w_rotor = math.inf if t_up is None else ROTOR_LAG_FRACTION / t_up

    def bw(key):
        w, z = _bw_spec(spec, key, DEFAULTS[kind][key], c)
        cap, why = (w_rate, f"{SAMPLES_PER_PERIOD} steps per period at {dt * 1e3:g} ms")
        if key != "joints" and w_rotor < cap:
            cap, why = w_rotor, f"{ROTOR_LAG_FRACTION:g} / T_up = {ROTOR_LAG_FRACTION:g} / {t_up:g} s"
        if w > cap:
            notes.append(f"{key}: bandwidth {w:g} rad/s capped to {cap:.4g} rad/s ({why})")
            w = cap
        return w, z

    Ic = np.diag(inertias["inertia_com"])
    m = inertias["mass"]
    w, z = bw("com")
    kp_p, kd_p = m * w * w, 2 * z * m * w
    w, z = bw("attitude")
    if kind == "flatness":
        wy, zy = bw("yaw")
        W = np.array([w, w, wy])
        Z = np.array([z, z, zy])
        kp_r, kd_r = Ic * W ** 2, 2 * Z * Ic * W
    else:
        Jr = float(np.max(Ic))
        kp_r, kd_r = Jr * w * w, 2 * z * Jr * w
    wj, zj = bw("joints") if n else (0.0, 0.0)
    Ij = np.array([elastic[nm][0] if nm in elastic else inertias["joint_inertia"][i]
                   for i, nm in enumerate(joint_names)], float)
    kp_j, kd_j = Ij * wj ** 2, 2 * zj * Ij * wj
    # explicit numbers win
    g = {"kp_position": kp_p, "kd_position": kd_p, "kp_rotation": kp_r, "kd_rotation": kd_r,
         "kp_joint": kp_j, "kd_joint": kd_j}
    for k in _EXPLICIT:
        if k in spec:
            g[k] = _explicit(k, spec[k], kind, n, c)
    d = GainDesign(kind, float(g["kp_position"]), float(g["kd_position"]), g["kp_rotation"], g["kd_rotation"],
                   np.broadcast_to(np.asarray(g["kp_joint"], float), (n,)).copy(),
                   np.broadcast_to(np.asarray(g["kd_joint"], float), (n,)).copy(), joint_names, notes=notes)
    _evaluate(d, inertias, elastic, t_up, dt)
    return d


def _explicit(name, v, kind, n, c):
    if isinstance(v, (list, tuple)):      # strict (file_number): a bool or a string is no gain
        xs = [file_number(x) for x in v]
        a = np.array([np.nan if x is None else x for x in xs], float) if v else np.zeros(0)
    elif isinstance(v, np.ndarray) and v.dtype.kind in "iuf":
        a = v.astype(float)
    else:
        x = file_number(v)
        a = np.array(np.nan if x is None else x)
    size = 3 if (name.endswith("rotation") and kind == "flatness") else (n if name.endswith("joint") else None)
    per = "per base axis (roll, pitch, yaw)" if size == 3 else "per joint"
    if a.ndim == 1 and size is not None and a.shape != (size,):
        c.fail(f"gains.{name}", f"expected a scalar or {size} values ({per}), got {short_repr(v)}",
               f"give one number or {size}")
    if a.ndim > 1 or (a.ndim == 1 and size is None) or not np.all(np.isfinite(a)) or np.any(a < 0):
        c.fail(f"gains.{name}", f"expected a finite non-negative {'scalar' if size is None else 'scalar or list'}, got "
               f"{short_repr(v)}", "give gains >= 0")
    if size == 3:
        return np.broadcast_to(a, (3,)).astype(float)
    return a if size is not None else float(a)   # size 0 (no joints): an empty per-joint gain stays an array


def _gain_name(stem, which, axis, idx, kind, joint_names):
    base = f"{which}_{stem}"
    if stem == "joint":
        return f"{base}[{joint_names[idx]}]"
    if stem == "rotation" and kind == "flatness":
        return f"{base}[{axis}]"
    return base


def _evaluate(d: GainDesign, inertias, elastic, t_up, dt):
    d.loops, d.refusals = [], []
    for loop, axis, I, lag, k, stem, idx in _loop_axes(d.kind, inertias, d.joint_names, elastic, t_up):
        kp, kd = getattr(d, f"kp_{stem}"), getattr(d, f"kd_{stem}")
        if idx is not None or stem == "joint":
            kp, kd = float(np.asarray(kp)[idx]), float(np.asarray(kd)[idx])
        else:
            kp, kd = float(np.asarray(kp).reshape(-1)[0]), float(np.asarray(kd).reshape(-1)[0])
        rad = discrete_radius(I, kp, kd, dt, lag=lag, stiffness=k)
        rad_m = discrete_radius(I, GAIN_MARGIN * kp, GAIN_MARGIN * kd, dt, lag=lag, stiffness=k)
        bound = gain_bound(I, kp, kd, dt, lag=lag, stiffness=k)
        w = math.sqrt(kp) / math.sqrt(I)
        entry = {"loop": loop, "axis": axis, "inertia": float(I), "kp": kp, "kd": kd, "bandwidth": w,
                 "damping": kd / (2 * math.sqrt(kp * I)) if kp > 0 else None,   # None: no stiffness
                 "spectral_radius": rad, "spectral_radius_at_margin": rad_m, "ok": bound is None,
                 "elastic": loop == "joint" and axis in elastic, "bound": None}
        if bound is not None:
            which, rel, b = bound
            name = _gain_name(stem, which, axis, idx, d.kind, d.joint_names)
            unit = _UNITS[stem][0 if which == "kp" else 1]
            val = kp if which == "kp" else kd
            what = ("motor inertia B" if entry["elastic"] else
                    {"com": "mass", "joint": "apparent inertia"}.get(loop, "inertia about the CoM"))
            iu = "kg" if loop == "com" else "kg m^2"
            tail = f" at damping {_BOUND_DAMPING}" if which == "kp" else ""
            d.refusals.append(f"{name}: {val:.4g} {unit} makes the discrete {loop} loop ({axis}) unstable at "
                              f"{dt * 1e3:g} ms with the {GAIN_MARGIN:g}x gain margin ({what} {I:.3g} {iu}; "
                              f"need {name} {rel} {b:.3g}{tail})")
            entry["bound"] = {"gain": name, "relation": rel, "value": b, "refusal": d.refusals[-1]}
        d.loops.append(entry)


def check_gains(gains, model, allocation=None, config=None, period=None, *, rigid_joints=False,
                q=None) -> GainDesign:
    """Evaluate explicit ``gains`` (FlatnessGains -> flatness loops, TrackingGains -> actuated,
    scalars or per-joint arrays) on this model at ``period`` [s] (default the config's, else 1 ms).
    ``config`` None (and ``allocation`` None): an ideal-actuator controller (``geodyn_controller``:
    forces, torques and joint efforts applied as commanded), whose loops have no rotor lag and
    every joint rigid.

    Returns the :class:`GainDesign` with the loops' radii; raises ``ValueError`` with one line per
    refused loop, each naming the gain and the bound (module docstring).
    """
    d = _evaluated(gains, model, allocation, config, period, rigid_joints, q)
    if d.refusals:
        raise ValueError("; ".join(d.refusals))
    return d


def _evaluated(gains, model, allocation, config, period, rigid_joints, q=None) -> GainDesign:
    from .flatness import FlatnessGains
    kind = "flatness" if isinstance(gains, FlatnessGains) else "actuated"
    spec = {k: np.asarray(getattr(gains, k), float).tolist() for k in _EXPLICIT}
    return design_gains(model, allocation, config, kind=kind, spec=spec, period=period, rigid_joints=rigid_joints, q=q)


def live_gain_refusals(old, new, model, allocation=None, config=None, period=None, *, rigid_joints=False) -> list:
    """Why a controller's live gain update from ``old`` to ``new`` (both FlatnessGains or both
    TrackingGains) is refused: :func:`check_gains`'s line of every loop whose ``kp`` or ``kd`` the
    update changes and whose discrete loop (with the :data:`GAIN_MARGIN`) is then unstable at
    ``period`` [s] (``config`` None: ideal actuators, as in :func:`check_gains`). A loop the update
    does not touch is not judged (its gains were the node's start-up values). Empty: accepted.

    The controllers (``geodyn_controller``, ``geodyn_actuated_controller``, ``geodyn_flat_controller``)
    refuse a ``ros2 param set`` with these lines: a gain of 1e308 was accepted, its command then
    overflowed and nothing was published."""
    was = _evaluated(old, model, allocation, config, period, rigid_joints)
    now = _evaluated(new, model, allocation, config, period, rigid_joints)
    return [b["bound"]["refusal"] for a, b in zip(was.loops, now.loops)
            if not b["ok"] and (a["kp"], a["kd"]) != (b["kp"], b["kd"])]
