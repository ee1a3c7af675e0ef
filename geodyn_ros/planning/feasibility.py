"""Whole-body feasibility of a planned flat trajectory, through the exact flat map; two rigid baselines.

**Whole body** (:func:`check_feasibility`). At samples along the trajectory the flat map
(:func:`geodyn_ros.flat_inverse_dynamics`'s kernel looped on one thread, :mod:`._serial`; order 2
with elastic joints, else 1) gives the thrust ``T``, the body torque ``tau_b`` (base axes, about
the base origin) and the joint torques ``tau`` with their time derivatives. From them:

* **rotor speeds** ``omega = sqrt(u)``, ``u = A4^+ (T, tau_b)`` (collinear allocation,
  :class:`~geodyn_ros.control.rotors.Allocation`; a negative ``u`` counts as ``-sqrt(-u)``), against
  ``[omega_min, omega_max]`` per rotor;
* **rotor accelerations** against the lag: the first-order rotor ``omega' = (omega_c - omega) /
  T_lag`` needs the command ``omega_c = omega + T_lag omega'`` (``T_lag`` the up or down time
  constant by the sign of ``omega' = u' / (2 omega)``; ACTUATION.md, the ``ff1`` law), which must lie
  in ``[omega_min, omega_max]``;
* **elastic joints** (Spong): the motor torque ``u_m = B theta'' + tau``, ``theta = q + K^-1 tau``,
  against ``max_motor_torque``; **rigid joints** with a limit: ``|tau|`` against it (an infinite
  limit, "none", gives no column).

These are every limit of a vehicle file (:data:`geodyn_ros.vehicle.LIMIT_KEYS`);
:meth:`Vehicle.from_files` takes them all from the file, and each margin column names the file's
keys it checks (``FeasibilityReport.keys``, :data:`COLUMN_KEYS`).

Every margin is dimensionless: ``(limit - value) / scale`` with ``scale = omega_max`` (rotor
limits) or the torque limit, so ``0`` is the limit and ``0.1`` is 10 % of the range left.

**Sampling and its bound.** ``samples`` points per segment, uniform in each segment's normalised
time (so the same points follow a time scaling). Between samples a margin ``m`` can dip below the
sampled minimum by at most ``dt^2 / 8 max|m''|``; ``max|m''| dt^2`` is estimated by the largest
second difference of the sampled margins, and ``sample_bound = max|Delta^2 m| / 8`` is reported.
The worst sample is then refined on the exact margin between its neighbours (3 rounds of 33 points,
each zooming onto the best one's neighbours), so the reported worst is the local minimum located
to ``2 (1/16)^3 < 5e-4`` of the sample spacing.

**Baselines on the same trajectory.**

* (a) :func:`check_rigid_rates`: mav_trajectory_generation's input check
  (``mav_trajectory_generation_ros/src/feasibility_sampling.cpp``, ethz-asl): normalised thrust
  ``|c'' - g|`` in ``[f_min, f_max]``, speed ``|c'|``, roll/pitch rate ``|(w_x, w_y)|``, yaw rate and
  yaw acceleration, "assuming a rigid body". Defaults: the rate limits of its
  ``InputConstraints::setDefaultValues`` (pi/2, pi/2 rad/s, 2 pi rad/s^2, 3 m/s) and the thrust range
  of the vehicle (``n c_f omega_min^2 / m .. n c_f omega_max^2 / m``). The body rates are the
  attitude's, which does not depend on the arm.
* (b) :func:`check_feasibility` with ``frozen_arm=True``: the same rotor-speed and lag check on the
  rigid flat map with the arm frozen at its mean waypoint configuration (its jets are the
  constant ``q_mean``; the flat map of a locked arm is the rigid multirotor's,
  :func:`geodyn_ros.control.quadrotor.rigid_flat_map`, as ``test/algorithms/test_flat.py`` shows).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..control.rotors import Allocation, ElasticJointParams, RotorParams
from ..model.model import Model
from ..model.resources import shipped_urdf
from ._serial import flat_map_serial
from .planner import FlatTrajectory

__all__ = ["Vehicle", "FeasibilityReport", "check_feasibility", "check_rigid_rates", "RateLimits", "sample_times",
           "COLUMN_KEYS"]

#: default samples per segment: the dip bound ``dt^2/8 max|m''|`` is then 1/8192 of the segment's
#: ``h^2 max|m''|`` (reported per check as ``sample_bound``)
SAMPLES_PER_SEGMENT = 32

#: the vehicle-file limits (:data:`~geodyn_ros.vehicle.LIMIT_KEYS`) each kind of margin column checks;
#: together they are all of them (test/control/test_vehicle_limits.py tightens each in turn)
COLUMN_KEYS = {"rotor speed max": ("constants.max_rot_velocity",),
               "rotor speed min": ("constants.min_rot_velocity",),
               "rotor lag max": ("constants.max_rot_velocity", "constants.time_constant_up"),
               "rotor lag min": ("constants.min_rot_velocity", "constants.time_constant_down"),
               "motor torque": ("joints.<elastic>.max_torque",),
               "joint torque": ("joints.<rigid>.max_torque",)}


@dataclass
class Vehicle:
    """The vehicle a plan is checked for. Build it from your files with :meth:`from_files`.

    model : the flat-map model (rotor joints locked); allocation : collinear :class:`Allocation`;
    rotors : :class:`RotorParams` (``max_rot_velocity``, lag time constants); elastic :
    :class:`ElasticJointParams` or None; omega_min [rad/s] the lowest rotor speed allowed, a float
    or (n_rotors,) (default None: the rotors' ``min_rot_velocity``, 0 unless given: a rotor may not
    reverse); joint_torque_limit : (n,) [N m, N if prismatic] per joint of the model (a float:
    the same for all; ``inf``: none), read for the rigid joints, or None (not checked).
    """

    model: Model
    allocation: Allocation
    rotors: RotorParams
    elastic: ElasticJointParams | None = None
    omega_min: float | np.ndarray | None = None
    joint_torque_limit: np.ndarray | None = None
    _el: np.ndarray = field(init=False, repr=False)
    _rigid: np.ndarray = field(init=False, repr=False)
    _wmin: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.model, Model):
            raise ValueError(f"model: expected a geodyn_ros Model, got {type(self.model).__name__}")
        if not isinstance(self.allocation, Allocation):
            raise ValueError(f"allocation: expected an Allocation, got {type(self.allocation).__name__}")
        if not isinstance(self.rotors, RotorParams) or self.rotors.n_rotors != self.allocation.n_rotors:
            raise ValueError(f"rotors: expected RotorParams of the allocation's {self.allocation.n_rotors} rotors")
        names = self.model.joint_names
        if self.elastic is not None:
            miss = [j for j in self.elastic.joints if j not in names]
            if miss:
                raise ValueError(f"elastic: joints {miss} are not joints of the model")
            self._el = np.array([names.index(j) for j in self.elastic.joints], dtype=np.int64)
        else:
            self._el = np.zeros(0, dtype=np.int64)
        self._rigid = np.array([i for i in range(len(names)) if i not in set(self._el.tolist())], dtype=np.int64)
        if self.joint_torque_limit is not None:
            lim = np.array(self.joint_torque_limit, float).reshape(-1)
            if lim.size == 1:
                lim = np.full(len(names), lim[0])
            if lim.shape != (len(names),) or np.any(~(lim > 0)):
                raise ValueError(f"joint_torque_limit: expected {len(names)} positive values (inf: none), got "
                                 f"{self.joint_torque_limit!r}")
            self.joint_torque_limit = lim
        n, wmax = self.rotors.n_rotors, self.rotors.per_rotor("max_rot_velocity")
        raw = self.rotors.min_rot_velocity if self.omega_min is None else self.omega_min
        try:
            w = np.array(np.broadcast_to(np.asarray(raw, float), (n,)))
        except (TypeError, ValueError):
            w = np.full(n, np.nan)
        if not np.all((w >= 0.0) & (w < wmax)):
            raise ValueError(f"omega_min: expected 0 <= omega_min < max_rot_velocity (a number or {n}, one per "
                             f"rotor), got {self.omega_min!r}")
        self._wmin = w
        if self.omega_min is not None:
            self.omega_min = float(w[0]) if np.all(w == w[0]) else w

    @classmethod
    def from_files(cls, urdf, vehicle_file) -> "Vehicle":
        """The vehicle of a URDF and a vehicle file, with every limit the file gives.

        urdf : path of a URDF or xacro, or the URDF XML itself; vehicle_file : path of a vehicle
        file (doc/reference/vehicle_file.md, or an old actuation YAML), or a shipped name as
        every tool takes it (``hexarotor``, ``tilthex``, ``borinot_flying_arm_2``, ...:
        :func:`geodyn_ros.vehicle.load_vehicle`). The rotor joints are locked and the rotor frames
        come from the file or the URDF (``ActuationConfig.load_model``, ``rotor_frames``); the
        vehicle is refused as ``geodyn_fly`` refuses it (``ActuationConfig.check``: e.g. a
        ``joints:`` entry not in the URDF, whose limit would otherwise go unchecked).

        The limits (:data:`geodyn_ros.vehicle.LIMIT_KEYS`): the rotors' ``max_rot_velocity`` and
        ``min_rot_velocity`` [rad/s] (per rotor when they differ) and lag time constants [s]; the
        elastic joints' motor torque ``max_torque`` [N m]; the rigid joints' ``max_torque``, default
        the URDF ``<limit effort>`` (``ActuationConfig.effort_limits``; neither: not checked).

        Raises ValueError (one line naming the file and the key) for a file or URDF that cannot
        be read, or a vehicle that cannot fly or is not collinear (the flat map needs every
        thrust along base z)."""
        from ..vehicle.schema import load_vehicle
        return cls._from_config(load_vehicle(vehicle_file), urdf)

    @classmethod
    def _from_config(cls, cfg, urdf) -> "Vehicle":
        model = cfg.load_model(urdf)
        cfg.check(model)
        try:
            al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
        except ValueError as exc:      # the file's line (rotors: ...), not the allocation's argument (A: ...)
            raise cfg.refusal(model, exc) from None
        if not al.collinear:
            raise ValueError(f"{cfg.source_path or 'vehicle'}: rotors: not a collinear set (a thrust is tilted off "
                             "base z), and the planner's flat map is that of a collinear multirotor; plan for a "
                             "vehicle whose thrusts are all along base +z")
        return cls(model, al, cfg.rotors, cfg.elastic, joint_torque_limit=cfg.effort_limits(model))

    @classmethod
    def hexarotor(cls, config=None) -> "Vehicle":
        """The shipped under-actuated vehicle: ``urdf/hexarotor_manipulator.urdf.xacro`` with
        ``config/hexarotor.yaml`` (rotor limits, lag, elastic arm joints), or with ``config`` (an
        ``ActuationConfig``) instead; as :meth:`from_files`."""
        urdf = str(shipped_urdf("hexarotor_manipulator.urdf.xacro"))
        if config is None:
            return cls.from_files(urdf, "hexarotor")
        return cls._from_config(config, urdf)

    @property
    def check_order(self) -> int:
        """The flat-map order the check needs: 2 with elastic joints (``theta''`` reads ``tau''``), else 1."""
        return 2 if len(self._el) else 1


@dataclass
class FeasibilityReport:
    """Result of a check. ``worst`` the smallest margin (dimensionless, module docstring), at time
    ``t_worst`` [s] for the limit ``limit`` (e.g. ``"rotor 3 speed max"``); ``per_limit``
    ``{kind: (margin, t)}`` the worst of each kind; ``sample_bound`` how far a margin may dip
    between samples below the sampled values (module docstring); ``times`` (T,) and ``margins``
    (T, L) the sampled margins, columns ``names``; ``omega`` (T, n_rot) the feedforward rotor
    speeds [rad/s] (signed square root), ``omega_command`` (T, n_rot) the lag-compensated
    commands, ``motor_torque`` (T, n_el) [N m] (whole-body check); ``keys`` (L,) per column the
    vehicle-file limits it checks (:data:`COLUMN_KEYS`; ``()`` for the rigid-rate baseline),
    ``bounds`` (L,) per column the limit's value [rad/s for a rotor, N m (N if prismatic) for a
    joint or motor; nan for the rigid-rate baseline]."""

    worst: float
    t_worst: float
    limit: str
    per_limit: dict
    sample_bound: float
    times: np.ndarray
    margins: np.ndarray
    names: tuple
    omega: np.ndarray | None = None
    omega_command: np.ndarray | None = None
    motor_torque: np.ndarray | None = None
    keys: tuple = ()
    bounds: np.ndarray | None = None

    def feasible(self, margin: float = 0.0) -> bool:
        return self.worst >= margin

    def worst_keys(self) -> tuple:
        """The vehicle-file limits (:data:`~geodyn_ros.vehicle.LIMIT_KEYS`) the worst column checks."""
        return self.keys[self.names.index(self.limit)] if self.keys else ()

    def worst_bound(self) -> str:
        """The worst column's limit as text, e.g. ``"0.9 N m"`` or ``"2236 rad/s"`` ('' for the
        rigid-rate baseline)."""
        if self.bounds is None:
            return ""
        b = float(self.bounds[self.names.index(self.limit)])
        unit = "rad/s" if self.limit.startswith("rotor ") else ("N" if self.limit.endswith(" force") else "N m")
        return f"{b:.4g} {unit}"

    def summary(self) -> str:
        return (f"worst margin {self.worst:+.4f} at t = {self.t_worst:.3f} s ({self.limit}); "
                f"sampling bound {self.sample_bound:.1e}")


def sample_times(traj: FlatTrajectory, samples: int = SAMPLES_PER_SEGMENT) -> np.ndarray:
    """``samples`` points per segment at ``s = j / samples`` of each segment, and ``t_N``."""
    if not (isinstance(samples, (int, np.integer)) and samples >= 2):
        raise ValueError(f"samples: expected an integer >= 2 per segment, got {samples!r}")
    t = traj.times
    s = np.arange(samples) / samples
    return np.concatenate([(t[:-1, None] + np.diff(t)[:, None] * s[None]).ravel(), t[-1:]])


def _signed_sqrt(u):
    return np.sign(u) * np.sqrt(np.abs(u))


def _rotor_margins(vehicle, thrust, torque):
    """(margins (T, 4 n), names, omega, omega_c) of the rotor speed and lag limits from the thrust
    jet (T, >= 2) and the body-torque jet (T, >= 2, 3)."""
    al, rot = vehicle.allocation, vehicle.rotors
    P = al.A4_pinv
    u = thrust[:, 0, None] * P[:, 0] + torque[:, 0] @ P[:, 1:].T
    du = thrust[:, 1, None] * P[:, 0] + torque[:, 1] @ P[:, 1:].T
    om = _signed_sqrt(u)
    omd = du / (2.0 * np.maximum(np.abs(om), 1e-9))
    omc = om + np.where(omd > 0, rot.time_constant_up, rot.time_constant_down) * omd
    wmax, wmin = rot.max_rot_velocity, vehicle._wmin
    M = np.concatenate([(wmax - om) / wmax, (om - wmin) / wmax, (wmax - omc) / wmax, (omc - wmin) / wmax], axis=1)
    n = al.n_rotors
    names = tuple(f"rotor {i + 1} {kind}" for kind in ("speed max", "speed min", "lag max", "lag min")
                  for i in range(n))
    wm = rot.per_rotor("max_rot_velocity")
    return M, names, om, omc, np.concatenate([wm, wmin, wm, wmin])


def _joint_margins(vehicle, q, tau):
    """(margins (T, L), names, motor torques (T, n_el), limits (L,)) of the elastic motors and the
    rigid joints with a finite limit."""
    cols, names, bounds = [], [], []
    um = None
    jn, kinds = vehicle.model.joint_names, vehicle.model.joint_types
    if len(vehicle._el):
        el, i = vehicle.elastic, vehicle._el
        um = el.motor_inertia * (q[:, 2, i] + tau[:, 2, i] / el.stiffness) + tau[:, 0, i]
        lim = np.broadcast_to(np.asarray(el.max_motor_torque, float), (len(i),))
        ok = np.isfinite(lim)
        cols.append((lim[ok] - np.abs(um[:, ok])) / lim[ok])
        names += [f"motor {jn[j]} torque" for j in i[ok]]
        bounds += list(lim[ok])
    if vehicle.joint_torque_limit is not None and len(vehicle._rigid):
        i = vehicle._rigid[np.isfinite(vehicle.joint_torque_limit[vehicle._rigid])]
        lim = vehicle.joint_torque_limit[i]
        cols.append((lim - np.abs(tau[:, 0, i])) / lim)
        names += [f"joint {jn[j]} {'force' if kinds[j] == 'prismatic' else 'torque'}" for j in i]
        bounds += list(lim)
    M = np.concatenate(cols, axis=1) if cols else np.zeros((len(q), 0))
    return M, tuple(names), um, np.array(bounds, float)


def _evaluate(vehicle, traj, t, kind, limits=None):
    """(margins (T, L), names, (omega, omega_command, motor_torque)) at the times t (T,) for the check
    ``kind``: ``"whole_body"``, ``"frozen_arm"`` (baseline b) or ``"rigid_rates"`` (baseline a)."""
    if kind == "rigid_rates":
        return _rigid_rates(vehicle, traj, t, limits)
    order = vehicle.check_order
    com, yaw, q = traj.jets(t, order)
    if kind == "frozen_arm":
        q = _frozen(traj, len(t), order)
    res = flat_map_serial(vehicle.model, com, yaw, q, order)
    M, names, om, omc, bounds = _rotor_margins(vehicle, res.thrust, res.body_torque)
    um = None
    if kind == "whole_body":
        MJ, nj, um, bj = _joint_margins(vehicle, q, res.tau)
        M, names, bounds = np.concatenate([M, MJ], axis=1), names + nj, np.concatenate([bounds, bj])
    return M, names, (om, omc, um, bounds)


def _frozen(traj, T, order):
    """The arm frozen at the mean of its joint waypoints: constant jets (T, order+3, n)."""
    q = np.zeros((T, order + 3, traj.n_joints))
    if traj.q is not None:
        q[:, 0] = traj.q.jets(traj.times, 1)[:, 0].mean(axis=0)
    return q


def _kind(name):
    """The limit kind of a margin column: ``rotor 3 speed max`` -> ``rotor speed max``, ``motor J2
    torque`` -> ``motor torque``, ``rigid yaw rate`` -> itself."""
    w = name.split(" ")
    if w[0] in ("rotor", "motor", "joint"):
        return " ".join([w[0]] + w[2:]).replace("joint force", "joint torque")
    return name


#: zoom refinement of the worst sample: rounds of ``ZOOM_POINTS`` points between the neighbours of
#: the current best; each round shrinks the interval 16 times, so after ``ZOOM_ROUNDS`` the minimum
#: is located to ``2 (1/16)^3 < 5e-4`` of the sample spacing (the margin's error is quadratic in it)
ZOOM_POINTS, ZOOM_ROUNDS = 33, 3


def _refine(evaluate, col, a, b):
    """(margin, t): the minimum of column ``col`` of ``evaluate(t) -> (T, L)`` on [a, b], by zooming."""
    best = (np.inf, a)
    for _ in range(ZOOM_ROUNDS):
        x = np.linspace(a, b, ZOOM_POINTS)
        m = evaluate(x)[:, col]
        i = int(np.argmin(m))
        if m[i] < best[0]:
            best = (float(m[i]), float(x[i]))
        a, b = x[max(i - 1, 0)], x[min(i + 1, ZOOM_POINTS - 1)]
    return best


def _check(vehicle, traj, kind, samples, refine, limits=None):
    if not isinstance(vehicle, Vehicle):
        raise ValueError(f"vehicle: expected a Vehicle, got {type(vehicle).__name__}")
    if not isinstance(traj, FlatTrajectory):
        raise ValueError(f"traj: expected a FlatTrajectory, got {type(traj).__name__}")
    if traj.n_joints != vehicle.model.n_joints:
        raise ValueError(f"traj: {traj.n_joints} joint columns, the model has {vehicle.model.n_joints}")
    t = sample_times(traj, samples)
    try:
        M, names, extras = _evaluate(vehicle, traj, t, kind, limits)
    except ValueError as exc:            # free fall / yaw singularity at a sample: say when
        m = re.match(r"^\w+\[(\d+)\]: ", str(exc))
        if m is None:
            raise
        raise ValueError(f"traj: at t = {t[int(m.group(1))]:.4f} s the flat map is undefined: {exc}") from None
    j, col = divmod(int(np.argmin(M)), M.shape[1])
    worst, tw = float(M[j, col]), float(t[j])
    if refine:
        m, tr = _refine(lambda x: _evaluate(vehicle, traj, x, kind, limits)[0], col, t[max(j - 1, 0)],
                        t[min(j + 1, len(t) - 1)])
        if m < worst:
            worst, tw = m, tr
    d2 = np.abs(M[2:] - 2.0 * M[1:-1] + M[:-2]).max() if len(t) > 2 else 0.0
    kinds = {}
    for c, nm in enumerate(names):
        i = int(np.argmin(M[:, c]))
        k = _kind(nm)
        if k not in kinds or M[i, c] < kinds[k][0]:
            kinds[k] = (float(M[i, c]), float(t[i]))
    kinds[_kind(names[col])] = (worst, tw)
    om, omc, um, bounds = extras
    keys = tuple(COLUMN_KEYS[_kind(nm)] for nm in names) if bounds is not None else ()
    return FeasibilityReport(worst, tw, names[col], kinds, float(d2) / 8.0, t, M, names, om, omc, um, keys, bounds)


def check_feasibility(vehicle: Vehicle, traj: FlatTrajectory, *, samples: int = SAMPLES_PER_SEGMENT,
                      frozen_arm: bool = False, refine: bool = True) -> FeasibilityReport:
    """The whole-body check (module docstring), or baseline (b) with ``frozen_arm=True`` (rotor limits
    only, the arm frozen at its mean waypoint configuration). ``refine``: locate the worst sample's
    local minimum (module docstring). Raises ``ValueError`` where the flat map is undefined (free
    fall, yaw singularity), naming the sample."""
    return _check(vehicle, traj, "frozen_arm" if frozen_arm else "whole_body", samples, refine)


@dataclass(frozen=True)
class RateLimits:
    """mav_trajectory_generation's input constraints (module docstring): normalised thrust
    ``f_min``, ``f_max`` [m/s^2] (None: the vehicle's rotor range), ``v_max`` [m/s], ``omega_xy_max``
    [rad/s], ``omega_z_max`` [rad/s], ``omega_z_dot_max`` [rad/s^2]."""

    f_min: float | None = None
    f_max: float | None = None
    v_max: float = 3.0
    omega_xy_max: float = np.pi / 2
    omega_z_max: float = np.pi / 2
    omega_z_dot_max: float = 2 * np.pi


_RIGID_NAMES = ("rigid thrust max", "rigid thrust min", "rigid velocity", "rigid roll-pitch rate", "rigid yaw rate",
                "rigid yaw acceleration")


def _rigid_rates(vehicle, traj, t, limits, gravity=(0.0, 0.0, -9.81)):
    lim = RateLimits() if limits is None else limits
    rot = vehicle.rotors
    n = vehicle.allocation.n_rotors
    m = vehicle.model.total_mass
    # per-rotor constants (scalars or (n,) arrays): the collective thrust at every rotor's max / min speed
    c_f = rot.per_rotor("motor_constant")
    if np.ndim(rot.motor_constant) or np.ndim(rot.max_rot_velocity):
        f_top = float(np.sum(c_f * rot.per_rotor("max_rot_velocity") ** 2))
    else:
        f_top = n * rot.motor_constant * rot.max_rot_velocity ** 2
    fmax = lim.f_max if lim.f_max is not None else f_top / m
    fmin = lim.f_min if lim.f_min is not None else float(np.sum(c_f * vehicle._wmin ** 2)) / m
    com, yaw, _ = traj.jets(t, 0)
    res = flat_map_serial(vehicle.model, com, yaw, _frozen(traj, len(t), 0), 0)
    R = res.base_pose[:, :3, :3]
    wb = np.einsum("tji,tj->ti", R, res.base_twist[:, 0, :3])        # body rates R^T w
    ab = np.einsum("tji,tj->ti", R, res.base_twist[:, 1, :3])        # body angular acceleration R^T w'
    f = np.linalg.norm(com[:, 2] - np.asarray(gravity, float), axis=1)
    M = np.stack([(fmax - f) / fmax, (f - fmin) / fmax,
                  (lim.v_max - np.linalg.norm(com[:, 1], axis=1)) / lim.v_max,
                  (lim.omega_xy_max - np.linalg.norm(wb[:, :2], axis=1)) / lim.omega_xy_max,
                  (lim.omega_z_max - np.abs(wb[:, 2])) / lim.omega_z_max,
                  (lim.omega_z_dot_max - np.abs(ab[:, 2])) / lim.omega_z_dot_max], axis=1)
    return M, _RIGID_NAMES, (None, None, None, None)


def check_rigid_rates(vehicle: Vehicle, traj: FlatTrajectory, limits: RateLimits | None = None, *,
                      samples: int = SAMPLES_PER_SEGMENT, refine: bool = True) -> FeasibilityReport:
    """Baseline (a): mav_trajectory_generation's rigid-body check on the same samples (module
    docstring). Margins ``(limit - value) / limit`` (thrust: over ``f_max``)."""
    return _check(vehicle, traj, "rigid_rates", samples, refine, limits)
