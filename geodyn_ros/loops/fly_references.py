"""References for any vehicle (``geodyn_fly --reference hover|figure8|FILE``), scaled to the vehicle.

A user's vehicle is not the shipped 4 kg hexarotor, so the built-in references are scaled:

* **size** ``L`` [m]: the largest horizontal distance of a rotor from the base origin (the
  vehicle's radius; 0.25 m for the shipped vehicles, 0.185 m for Borinot, 0.39 m for Hextilt);
* **figure eight**: :func:`~geodyn_ros.trajectories.figure_eight_reference`'s curve with its
  amplitudes times ``s = L / 0.25 m`` (the shipped vehicle's (0.6, 0.3, 0.1) m) and its periods
  times ``sqrt(s)``, so the peak acceleration, and with it the tilt (4.3 deg), is that of the
  shipped figure eight for every size; the yaw sweep (+-45 deg) over ``12 sqrt(s)`` s;
* **hover**: the CoM and the yaw still at the centre ``(0, 0, 1) m``, the arm swinging;
* **arm joints** (any count ``n >= 0``): ``q_j(t) = c_j + a_j sin(2 pi t / T_j)`` with
  ``a_j = min(35 deg, 0.4 (upper_j - lower_j))`` and ``c_j`` the joint's zero clipped to
  ``[lower_j + a_j, upper_j - a_j]``, so the swing stays inside the URDF limits (joints
  without limits: ``c_j = 0``, ``a_j = 35 deg``; a joint pinned by lower = upper, which the
  vehicle file's consumers lock, would get ``a_j = 0`` at ``c_j = lower``); periods ``T_j`` cycle through
  :data:`~geodyn_ros.trajectories.FIGURE8_Q_PERIOD` (1.5..4 s);
* **FILE**: a mission YAML (:mod:`geodyn_ros.planning.mission`, e.g.
  ``config/mission_example.yaml``) planned at order 2 from ``t = 0``; before its start and
  after its end it holds its end points at rest (the polynomial's own rule). For a collinear
  vehicle :func:`check_mission` checks it on the whole body first (every limit of the vehicle
  file) and refuses it, or slows it down, when a limit is exceeded.

Two forms of the same reference (``kind``):

* ``"flat"`` (rank 4 vehicles, the flatness controller): ``f(t, order) -> FlatReference``
  (CoM, yaw and joint jets, :func:`gd.flat_inverse_dynamics`' input);
* ``"base"`` (rank 6 vehicles, the actuated controller): ``f(t, order) -> Reference`` with the
  base link's origin on the same curve, the base level (roll = pitch = 0) and the yaw and joints
  as above (:func:`gd.inverse_dynamics`' input). A mission FILE's ``com`` waypoints are then the
  base origin's (a fully actuated vehicle holds its base level; the docs say so).
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from geodyn_ros.model.validate import clip, file_error
from geodyn_ros.trajectories import (FIGURE8_Q_PERIOD, FlatReference, Reference, _sin_jet,
                                     spatial_twist_jet)

__all__ = ["REFERENCES", "vehicle_size", "joint_swing", "fly_reference", "mission_reference", "check_mission",
           "SHIPPED_SIZE_M", "joint_torque_peaks", "effort_shortfall", "losses_shortfall"]

#: the built-in reference names (anything else is a mission file)
REFERENCES = ("figure8", "hover")
#: the shipped vehicles' rotor radius [m], the size the built-in figure eight was designed for
SHIPPED_SIZE_M = 0.25
#: the figure eight of the shipped vehicle (trajectories.figure_eight_reference's defaults)
_AMPLITUDE = np.array([0.6, 0.3, 0.1])
_PERIOD, _YAW_AMPLITUDE, _YAW_PERIOD = 8.0, math.radians(45.0), 12.0
_CENTER = np.array([0.0, 0.0, 1.0])
#: the largest joint swing [rad] (the shipped figure eight's 35 deg)
_Q_AMPLITUDE = math.radians(35.0)


def vehicle_size(rotor_frames) -> float:
    """The vehicle's radius ``L`` [m]: the largest horizontal distance of a rotor frame's origin
    from the base origin. rotor_frames: (n_r, 4, 4) in the base link (``ActuationConfig.rotor_frames``)."""
    F = np.asarray(rotor_frames, float)
    if F.ndim != 3 or F.shape[1:] != (4, 4) or F.shape[0] < 1 or not np.all(np.isfinite(F)):
        raise ValueError(f"rotor_frames: expected finite (n, 4, 4) transforms, n >= 1, got shape {F.shape}")
    size = float(np.max(np.hypot(F[:, 0, 3], F[:, 1, 3])))
    if size <= 0:
        raise ValueError("rotor_frames: every rotor is on the base's z axis; the vehicle has no size")
    return size


def _urdf_limits(source, joint_names) -> dict:
    """``{joint: (lower, upper)}`` [rad or m] of the URDF's ``<limit>`` (continuous, no limit or
    lower > upper: absent from the dict)."""
    from geodyn_ros.model.urdf import _read_source
    text, _ = _read_source(os.fspath(source) if isinstance(source, os.PathLike) else source)
    out = {}
    for je in ET.fromstring(text).iter("joint"):
        name, lim = je.get("name"), je.find("limit")
        if name in joint_names and je.get("type") != "continuous" and lim is not None \
                and lim.get("lower") is not None and lim.get("upper") is not None:
            lo, hi = float(lim.get("lower")), float(lim.get("upper"))
            if hi >= lo:      # lower = upper: a pinned joint (ActuationConfig locks it), held still
                out[name] = (lo, hi)
    return out


def joint_swing(source, joint_names) -> tuple:
    """``(center (n,), amplitude (n,), period (n,))`` of the arm's swing (module docstring) for the
    joints ``joint_names`` of the URDF/xacro ``source``; n = 0 gives three empty arrays."""
    names = tuple(joint_names)
    n = len(names)
    limits = _urdf_limits(source, names) if n else {}
    c, a = np.zeros(n), np.full(n, _Q_AMPLITUDE)
    for j, nm in enumerate(names):
        if nm in limits:
            lo, hi = limits[nm]
            a[j] = min(_Q_AMPLITUDE, 0.4 * (hi - lo))
            c[j] = min(max(0.0, lo + a[j]), hi - a[j])
    period = np.array([FIGURE8_Q_PERIOD[j % len(FIGURE8_Q_PERIOD)] for j in range(n)])
    return c, a, period


def _curve(t: float, rows: int, size: float, hover: bool):
    """CoM (or base origin) jet (rows, 3) and yaw jet (rows,) of the scaled figure eight (or hover)."""
    p = np.zeros((rows, 3))
    y = np.zeros(rows)
    p[0] = _CENTER
    if hover:
        return p, y
    s = size / SHIPPED_SIZE_M
    w = 2.0 * math.pi / (_PERIOD * math.sqrt(s))
    amp = _AMPLITUDE * s
    s1 = _sin_jet(t, w, rows)
    p[:, 0] += amp[0] * s1
    p[:, 1] += amp[1] * _sin_jet(t, 2.0 * w, rows)
    p[:, 2] += amp[2] * s1
    y[:] = _YAW_AMPLITUDE * _sin_jet(t, 2.0 * math.pi / (_YAW_PERIOD * math.sqrt(s)), rows)
    return p, y


def _joints(t: float, rows: int, swing) -> np.ndarray:
    c, a, period = swing
    q = np.zeros((rows, len(c)))
    for j in range(len(c)):
        q[:, j] = a[j] * _sin_jet(t, 2.0 * math.pi / period[j], rows)
    q[0] += c
    return q


def fly_reference(name: str, size: float, swing, *, kind: str = "flat"):
    """The built-in reference ``name`` (``"figure8"`` or ``"hover"``) for a vehicle of radius
    ``size`` [m] (:func:`vehicle_size`) and arm swing ``swing`` (:func:`joint_swing`), as
    ``f(t, order)`` returning a :class:`FlatReference` (``kind="flat"``: com (order+5, 3), yaw
    (order+3,), q (order+3, n)) or a :class:`Reference` (``kind="base"``: base_pose (4, 4),
    base_twist (order+2, 6) spatial, q (order+3, n)). Closed-form jets, valid for every t."""
    if name not in REFERENCES:
        raise ValueError(f"reference: expected one of {REFERENCES} or a mission file, got {name!r}")
    if kind not in ("flat", "base"):
        raise ValueError(f"kind: expected 'flat' or 'base', got {kind!r}")
    if not (math.isfinite(size) and size > 0):
        raise ValueError(f"size: expected a finite length > 0 [m], got {size!r}")
    hover = name == "hover"

    def flat(t, order):
        p, y = _curve(t, order + 5, size, hover)
        return FlatReference(com=p, yaw=y[:order + 3], q=_joints(t, order + 3, swing))

    def base(t, order):
        p, y = _curve(t, order + 3, size, hover)
        return _base_reference(p, y, _joints(t, order + 3, swing))

    return flat if kind == "flat" else base


def _base_reference(p_jet, yaw_jet, q) -> Reference:
    """A level base (roll = pitch = 0) at ``p_jet`` (order+3, 3) with yaw ``yaw_jet`` (order+3,):
    the angular velocity is ``(0, 0, psi')``, the spatial twist jet from
    :func:`~geodyn_ros.trajectories.spatial_twist_jet` (as Table 3's reference builds it)."""
    rows = p_jet.shape[0] - 1
    w = np.zeros((rows, 3))
    w[:, 2] = yaw_jet[1:rows + 1]
    cy, sy = math.cos(yaw_jet[0]), math.sin(yaw_jet[0])
    pose = np.eye(4)
    pose[:3, :3] = [[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = p_jet[0]
    return Reference(base_pose=pose, base_twist=spatial_twist_jet(p_jet, w), q=q)


def _mission_in(path, joint_names):
    """The mission file ``path`` with its q columns in the order of ``joint_names`` (the model's)."""
    from geodyn_ros.planning.mission import load_mission
    mission = load_mission(path)
    names = tuple(joint_names)
    given = tuple(mission.joint_names)
    if set(given) != set(names) or len(given) != len(names):
        raise file_error(os.fspath(path), "joint_names", f"{clip(list(given))} are not the model's joints "
                         f"{clip(list(names))}", "list the model's joints and give one q value per joint")
    if names:
        mission.q, mission.joint_names = mission.q[:, [given.index(nm) for nm in names]], names
    return mission


#: how the caller asks for the slow-down (geodyn_fly's option; nodes say their own)
SLOW_DOWN_HINT = "give --slow-down to fly it slower"


def check_mission(path, joint_names, vehicle, *, slow_down: bool = False, hint: str = SLOW_DOWN_HINT):
    """The whole-body check of a mission file before it flies: ``(plan, note, summary)``.

    ``plan`` the mission planned at order 2 from t = 0 (columns in ``joint_names`` order), checked
    by :func:`geodyn_ros.planning.check_feasibility` on ``vehicle`` (a
    :class:`~geodyn_ros.planning.Vehicle`, :meth:`~geodyn_ros.planning.Vehicle.from_files`: every
    limit of the vehicle file); ``note`` the text saying so (1 line, 3 when slowed down);
    ``summary`` a JSON-ready dict (worst
    margin, limit, time [s], ``slowed_down`` alpha, 1 if not). A worst margin below 0 raises
    ValueError in one line naming the margin, the limit and the time, unless ``slow_down``: then
    the plan is slowed down uniformly to the fastest timing that keeps 0
    (:func:`geodyn_ros.planning.mission.slow_down`, as ``geodyn_reference``'s ``slow_down``) and
    the note says by how much (ValueError if 1024 times slower does not keep it either)."""
    from geodyn_ros.planning import check_feasibility
    from geodyn_ros.planning.mission import slow_down as slower
    mission = _mission_in(path, joint_names)
    traj = mission.plan(0.0, 2)
    where = f"reference: {os.fspath(path)}"
    try:
        rep = check_feasibility(vehicle, traj)
    except ValueError as exc:
        raise ValueError(f"{where}: the flat map is undefined along it ({str(exc).splitlines()[0]})") from None
    why = (f"worst margin {rep.worst:+.4f} at t = {rep.t_worst:.3f} s ({rep.limit}, limit {rep.worst_bound()})")
    alpha = 1.0
    if rep.worst < 0.0:
        if not slow_down:
            raise ValueError(f"{where}: {why}: beyond the vehicle's limits; {hint}, or a slower mission")
        found = slower(mission, traj, vehicle, 0.0)
        if found is None:
            raise ValueError(f"{where}: {why}, and 1024 times slower too; give a mission within the limits")
        alpha, slow, rep2 = found
        note = (f"{where}: slowed down {alpha:.4g} times ({traj.duration:.4g} s -> {slow.duration:.4g} s) to keep "
                f"every limit of the vehicle file\n  as given: {why}\n  slowed down: worst margin {rep2.worst:+.4f} at "
                f"t = {rep2.t_worst:.3f} s ({rep2.limit})")
        traj, rep = slow, rep2
    else:
        note = f"{where}: whole-body check passed, {why}"
    summary = {"worst_margin": rep.worst, "limit": rep.limit, "t_worst_s": rep.t_worst, "slowed_down": alpha}
    return traj, note, summary


def mission_reference(path, joint_names, *, kind: str = "flat", plan=None):
    """A mission YAML (:func:`geodyn_ros.planning.load_mission`) planned at order 2 from t = 0, as
    ``(f(t, order), duration [s])`` in the form ``kind`` (:func:`fly_reference`). The mission's
    ``joint_names`` must be the model's joints (any order; columns are reordered to
    ``joint_names``); ValueError naming the file and the joints otherwise. ``plan``: that plan
    already made (e.g. checked and slowed down by :func:`check_mission`)."""
    if kind not in ("flat", "base"):
        raise ValueError(f"kind: expected 'flat' or 'base', got {kind!r}")
    traj = _mission_in(path, joint_names).plan(0.0, 2) if plan is None else plan

    def flat(t, order):
        r = traj(t, order)
        return FlatReference(com=r.com, yaw=r.yaw, q=r.q)

    def base(t, order):
        r = traj(t, order)         # com order+5, yaw and q order+3 rows: the base form takes order+3
        return _base_reference(r.com[:order + 3], r.yaw[:order + 3], r.q[:order + 3])

    return (flat if kind == "flat" else base), traj.duration


def joint_torque_peaks(model, reference, rank: int, losses=None, *, duration: float = 16.0,
                       step: float = 0.01) -> tuple:
    """``(peak, loss_peak)`` (n,) each [N m]: the largest ``|tau_d + tau_loss|`` the reference ``f(t,
    order)`` asks of each joint over ``0 <= t <= duration`` (every ``step`` s), and the largest
    ``|tau_loss|`` alone (zeros without ``losses``, a :class:`~geodyn_ros.model.joint_losses.JointLosses`).
    ``tau_d``: ``gd.inverse_dynamics`` of a base reference (``rank`` 6) or ``gd.flat_inverse_dynamics``
    of a flat one (4), order 0 (the feedforward every level above the baseline sends)."""
    import geodyn_ros as gd
    from geodyn_ros.model.joint_losses import loss_torque_jet
    n = model.n_joints
    peak, loss_peak = np.zeros(n), np.zeros(n)
    for t in np.arange(0.0, duration + 0.5 * step, step):
        ref = reference(float(t), 0)
        if rank == 4:
            tau = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 0).tau[0]
        else:
            tau = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 0).tau[0]
        loss = np.zeros(n) if losses is None else loss_torque_jet(losses, ref.q, 0)[0]
        peak = np.maximum(peak, np.abs(tau + loss))
        loss_peak = np.maximum(loss_peak, np.abs(loss))
    return peak, loss_peak


def effort_shortfall(joint_names, peak, loss_peak, limits) -> str | None:
    """One line naming each joint whose ``peak`` (:func:`joint_torque_peaks`) exceeds its effort
    limit (``limits`` (n,) [N m], ``inf`` for none), with the share of its losses; None if all fit."""
    over = [f"{j} {p:.3g} N m ({lp:.3g} of it losses) > {lim:.3g} N m" for j, p, lp, lim
            in zip(joint_names, peak, loss_peak, limits) if np.isfinite(lim) and p > lim]
    if not over:
        return None
    return ("the reference asks more than the effort limit of " + "; ".join(over) +
            ": those joints saturate and lag (a slower arm swing fits)")


def losses_shortfall(model, reference, rank: int, losses, limits, *, duration=None) -> str | None:
    """:func:`effort_shortfall` of ``reference`` flown with the joint ``losses`` (a
    :class:`~geodyn_ros.model.joint_losses.JointLosses`) against the joints' effort ``limits`` (n,)
    [N m] (``inf`` for none; the rigid joints' of
    :func:`~geodyn_ros.loops.underactuated.rigid_effort_limits`), over ``duration`` [s] (None: 16 s,
    the figure eight's period); None if every joint fits. The one check ``geodyn_fly``'s report and
    ``gazebo_vehicle`` share."""
    peak, loss_peak = joint_torque_peaks(model, reference, rank, losses, duration=duration or 16.0)
    return effort_shortfall(model.joint_names, peak, loss_peak, limits)
