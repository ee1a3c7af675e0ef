"""The command path through PX4's offboard interface, ROS-free (issue 44): what happens to the
controller's rotor speeds between the controller and the rotors when they go through the bridge
and PX4 instead of straight to the motors.

:func:`px4_vehicle` builds what the bridge, the stand-in and this path know of a vehicle from its
file's ``px4:`` section (one source, both directions): PX4's allocator from the ``CA_ROTORn_*``
equivalent of its rotors, the rotors' maximum speeds and ``THR_MDL_FAC``.

:class:`OffboardPath` is the path itself, in the modes of ``geodyn_px4_bridge``
(:mod:`geodyn_ros.ros.px4.bridge_node`) and PX4's stand-in (:mod:`geodyn_ros.px4.standin`):

* ``rotor_speeds``: the speeds go to the rotors as they are (the package's own path,
  ``cmd/rotor_speeds`` to an ESC driver): the reference row;
* ``thrust_and_torque``: the bridge's relative thrusts ``u = omega |omega| / omega_max^2``
  (:func:`~geodyn_ros.px4.allocation.speed_to_command`) become the normalised torque and thrust
  PX4 allocates back to them (:meth:`~geodyn_ros.px4.allocation.Px4Allocator.setpoints`), rounded
  to float32 (``VehicleTorqueSetpoint.xyz``, ``VehicleThrustSetpoint.xyz``) and clipped to
  [-1, 1]; PX4 allocates them (normalised pseudo-inverse, sequential desaturation, clipping:
  :meth:`~geodyn_ros.px4.allocation.Px4Allocator.motor_commands`); its motor signal drives the
  rotors (:func:`~geodyn_ros.px4.standin.rotor_speeds`);
* ``direct_actuator``: ``u`` rounded to float32 (``ActuatorMotors.control``), then PX4's motor
  output as above (PX4's allocator is off in this mode).

What the path keeps of the command is all that differs between the modes: the normalisation's
round trip (exact to rounding while PX4 does not desaturate, PX4's own desaturation order when
it does), float32, and ``delay`` (the link's, from the bridge's publish to PX4's allocator).
The command rate is the caller's (the controller's cycle), the same for every mode.

:meth:`OffboardPath.wrap` puts the path and a command rate around an in-process loop's command
function (:func:`geodyn_ros.loops.underactuated.simulate_underactuated`'s ``wrap_command``): the
controller runs every ``period`` on the control grid, its command is held in between, and the
rotors get the path's output ``delay`` later (the arm's torques at once: they go to its own driver).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from .allocation import (Px4Allocator, allocation_problem, px4_rotor_parameters, rotor_effectiveness, speed_to_command,
                         zero_weak_rows)
from .standin import rotor_speeds

__all__ = ["MODES", "Px4Vehicle", "px4_vehicle", "torque_thrust_setpoints", "OffboardPath"]

#: the command paths: the package's own, then PX4's two offboard modes the bridge speaks
MODES = ("rotor_speeds", "thrust_and_torque", "direct_actuator")
#: PX4's CA_ROTORn_CT upper limit [N] (src/modules/control_allocator/module.yaml)
CT_LIMIT = 100.0
#: the setpoints' components must lie in [-1, 1] (VehicleThrustSetpoint.msg); the float64 maths'
#: rounding for commands at their bounds stays far below this, so only a real excess is counted
UNIT_SLACK = 1e-6
#: a motor output PX4 changed by more than this (relative thrust) was desaturated: float32
#: setpoints move an output by ~1e-7, a command of the rotors' own precision is far coarser
DESATURATION_TOL = 1e-5


@dataclass(frozen=True)
class Px4Vehicle:
    """What PX4 is told about a vehicle and what its motors do.

    allocator : PX4's allocator (effectiveness from ``CA_ROTORn_*`` with the file's ``px4.ct``
        when given; ``MC_AIRMODE``); phys : (6, n) the physical effectiveness (FRD, per unit motor
        command: full thrust ``k_f omega_max^2`` per rotor); omega_max : (n,) [rad/s];
        thr_mdl_fac : ``THR_MDL_FAC``; ca_rotor : the ``CA_ROTORn_*`` PX4 is given,
        ``{"position", "axis", "ct", "km"}`` (:func:`~geodyn_ros.px4.allocation.px4_rotor_parameters`,
        ``ct`` the file's ``px4.ct`` when given)."""
    allocator: Px4Allocator
    phys: np.ndarray
    omega_max: np.ndarray
    thr_mdl_fac: float
    ca_rotor: dict


def px4_vehicle(cfg, frames) -> Px4Vehicle:
    """The :class:`Px4Vehicle` of a vehicle file's config ``cfg`` (with its ``px4:`` section) and
    its rotor frames ``frames`` (n, 4, 4) FLU. ValueError, in the file-error form, when the file
    has no ``px4:`` section, when a rotor's full thrust exceeds PX4's ``CA_ROTORn_CT`` limit without
    ``px4.ct``, or when PX4's allocation of these rotors depends on float32 rounding
    (:func:`~geodyn_ros.px4.allocation.allocation_problem`: motors canted by a few degrees), so that
    no bridge could invert it."""
    where = getattr(cfg, "source_path", None) or "vehicle file"
    if getattr(cfg, "px4", None) is None:
        raise ValueError(f"{where}: px4: missing; PX4 needs the vehicle's PX4 section: add "
                         "'px4: {thr_mdl_fac: <THR_MDL_FAC of your motors>}' (doc/reference/vehicle_file.md, 'px4')")
    rp = px4_rotor_parameters(frames, cfg.rotors)
    # linear in each rotor's CT (ActuatorEffectivenessRotors::computeEffectivenessMatrix), so a
    # full thrust beyond PX4's parameter range is fine here: scale the unit-CT columns
    phys = rotor_effectiveness(rp["position"], rp["axis"], np.ones(len(rp["ct"])), rp["km"]) * rp["ct"]
    if cfg.px4.ct is not None:
        rp["ct"] = np.asarray(cfg.px4.ct, dtype=float)
    elif rp["ct"].max() > CT_LIMIT:
        raise ValueError(f"{where}: px4.ct: missing, and a rotor's full thrust {rp['ct'].max():.6g} N is above "
                         f"PX4's CA_ROTORn_CT limit {CT_LIMIT:g}; give px4.ct as set in PX4")
    n = len(frames)
    raw = rotor_effectiveness(**rp)
    problem = allocation_problem(raw)
    if problem is not None:
        raise ValueError(f"{where}: rotors: PX4 cannot allocate this vehicle exactly: {problem}; give PX4 and this "
                         "file rotor axes it can: upright (CA_ROTORn_AX = AY = 0, PX4's default; a cant of a few "
                         "degrees is then a small unmodelled side force) or tilted enough for PX4 to control "
                         "lateral thrust (doc/reference/px4_allocation.md, 'Vehicles PX4 cannot allocate exactly')")
    allocator = Px4Allocator(zero_weak_rows(raw), airmode=cfg.px4.mc_airmode)
    omega_max = np.broadcast_to(cfg.rotors.per_rotor("max_rot_velocity"), (n,)).astype(float)
    return Px4Vehicle(allocator, phys, omega_max, float(cfg.px4.thr_mdl_fac), rp)


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(float)


def torque_thrust_setpoints(allocator: Px4Allocator, u) -> tuple:
    """``(c, clipped, desaturated, motors)``: the ``thrust_and_torque`` setpoints of motor commands ``u``
    (n,): ``c`` (6,) ``(torque, thrust)`` FRD normalised
    (:meth:`~geodyn_ros.px4.allocation.Px4Allocator.setpoints`), rounded to float32 as the messages
    carry them and clipped to [-1, 1]; ``clipped`` whether a component was beyond it (by more than
    :data:`UNIT_SLACK`); ``desaturated`` whether PX4's motor outputs for them differ from its plain
    mix (``mix @ c``, clipped) by more than :data:`DESATURATION_TOL`: its desaturation changed them
    (a command at a motor limit that float32 rounding puts a hair beyond it is not counted). Without
    desaturation PX4 gives back ``u`` projected on the effectiveness' row space
    (:meth:`~geodyn_ros.px4.allocation.Px4Allocator.setpoints`): ``u`` itself for as many rotors
    as controlled axes, the least-norm commands of the same wrench otherwise. ``motors`` (n,): PX4's
    motor outputs for ``c`` (:meth:`~geodyn_ros.px4.allocation.Px4Allocator.motor_commands`)."""
    u = np.asarray(u, dtype=float)
    torque, thrust = allocator.setpoints(u)
    c = _f32(np.concatenate([torque, thrust]))
    clipped = bool(np.abs(c).max() > 1.0 + UNIT_SLACK)
    c = np.clip(c, -1.0, 1.0)
    plain = np.clip(allocator.mix @ c, allocator.u_min, allocator.u_max)     # PX4's mix, nothing desaturated
    motors = allocator.motor_commands(c[:3], c[3:])
    return c, clipped, bool(np.abs(motors - plain).max() > DESATURATION_TOL), motors


class OffboardPath:
    """The rotor speeds the rotors get for the controller's ``omega`` (module docstring).

    mode : one of :data:`MODES`; vehicle : a :class:`Px4Vehicle`; delay [s] : the link's delay
    (:meth:`wrap` rounds it to whole steps). ``counts``: ``commands`` (paths taken),
    ``desaturated`` (``thrust_and_torque`` setpoints PX4 desaturated), ``clipped`` (setpoints
    with a component beyond [-1, 1])."""

    def __init__(self, mode: str, vehicle: Px4Vehicle, *, delay: float = 0.0):
        if mode not in MODES:
            raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
        if not (isinstance(delay, (int, float)) and math.isfinite(delay) and delay >= 0.0):
            raise ValueError(f"delay: expected a finite time >= 0 [s], got {delay!r}")
        self.mode, self.vehicle, self.delay = mode, vehicle, float(delay)
        self.counts = {"commands": 0, "desaturated": 0, "clipped": 0}

    def __call__(self, omega) -> np.ndarray:
        """(n,) rotor speeds [rad/s] of the controller's (n,) speeds ``omega`` through the path."""
        omega = np.asarray(omega, dtype=float)
        self.counts["commands"] += 1
        if self.mode == "rotor_speeds":
            return omega.copy()
        v = self.vehicle
        u = speed_to_command(omega, v.omega_max)
        if self.mode == "thrust_and_torque":
            _, clipped, desaturated, u = torque_thrust_setpoints(v.allocator, u)
            self.counts["clipped"] += clipped
            self.counts["desaturated"] += desaturated
        else:
            u = _f32(u)
        return rotor_speeds(u, v.omega_max, v.thr_mdl_fac)

    def wrap(self, command, *, period: float, timestep: float):
        """``command(t, *inputs) -> FlatCommand`` run every ``period`` [s] (a whole number of
        ``timestep``, on the grid ``t = k period``), held in between. Its rotor speeds ``omega`` go
        through the path and reach the rotors ``delay`` later (whole steps; the rotors keep the
        previous speeds until then); the rest of the command (the arm's motor and joint torques,
        which go to the arm's own driver, not through PX4) is applied at once."""
        steps = period / timestep
        if not (math.isfinite(steps) and steps >= 1.0 - 1e-9 and abs(steps - round(steps)) < 1e-6):
            raise ValueError(f"period: expected a whole number >= 1 of timestep {timestep:g} s, got {period!r}")
        every, lag = int(round(steps)), int(round(self.delay / timestep))
        state = {"cmd": None, "omega": None, "queue": deque()}

        def wrapped(t, *inputs):
            k = int(round(t / timestep))
            if state["cmd"] is None or k % every == 0:
                state["cmd"] = command(t, *inputs)
                state["queue"].append((k + lag, self(state["cmd"].omega)))
                if state["omega"] is None:             # the first command: nothing older to hold
                    state["omega"] = state["queue"][-1][1]
            q = state["queue"]
            while q and q[0][0] <= k:
                state["omega"] = q.popleft()[1]
            return replace(state["cmd"], omega=state["omega"])
        return wrapped
