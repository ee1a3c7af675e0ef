"""A PX4 stand-in for the simulator (issue 44): what PX4 does with the offboard topics, ROS-free.

The simulator node ``geodyn_px4_sim`` (:mod:`geodyn_ros.ros.px4.standin_node`) feeds this module
what PX4's uXRCE-DDS client would receive (``OffboardControlMode``, ``VehicleCommand``, the
setpoints) and turns the result into rotor speeds for :class:`geodyn_ros.sim.ActuatedSim`.
Times are integers in microseconds of the simulated clock (PX4's ``hrt_absolute_time`` unit).

Every PX4 fact below was read in PX4-Autopilot main at commit
``b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf`` (:data:`~geodyn_ros.px4.allocation.PX4_COMMIT`,
2025-06-10, the line of release 1.16); paths are relative to that repository.

:class:`Commander` (the offboard part of ``src/modules/commander``)
    * **Proof of life.** Offboard is available while the newest ``OffboardControlMode`` has a
      mode flag set and ``now < timestamp + COM_OF_LOSS_T``
      (``HealthAndArmingChecks/checks/offboardCheck.cpp``); ``COM_OF_LOSS_T`` defaults to 1.0 s
      (``commander_params.c``). PX4 stamps a message whose ``timestamp`` is 0 on receipt, so
      the stand-in stamps every proof of life with its receive time.
    * **Engage.** ``VehicleCommand`` 176 (``DO_SET_MODE``) with ``param1`` bit 1 (custom mode) and
      ``param2`` 6 (``PX4_CUSTOM_MAIN_MODE_OFFBOARD``, ``px4_custom_mode.h``) sets the intended mode.
      While disarmed a mode change is always accepted (``UserModeIntention::change``: "Always
      allow mode change while disarmed"); armed, only if the mode can run, for offboard: a fresh
      proof of life (``ModeUtil/mode_requirements.cpp``: ``NAVIGATION_STATE_OFFBOARD`` requires the
      offboard signal). PX4 needs no more than one fresh message: there is no engage delay
      beyond the commander's cycle, ``COMMANDER_MONITORING_INTERVAL`` 10 ms (``Commander.hpp``),
      at which :meth:`Commander.update` is meant to run. (The bridge's 1 s of streaming before it
      asks for offboard is the bridge's own rule.)
    * **Arming.** ``VehicleCommand`` 400 with ``param1`` 1 arms if ``canArm(nav_state)``
      (``Commander::arm``): in offboard that needs the offboard signal, else "No offboard
      signal" (``HealthAndArmingChecks/checks/modeCheck.cpp``). ``param1`` 0 disarms. A command
      is handled when its ``target_system`` is the vehicle's or 0 (``Commander::handle_command``).
    * **Offboard loss.** Armed in offboard without the signal, the mode fallback takes
      ``COM_OBL_RC_ACT`` (default 0, ``commander_params.c``; ``Failsafe::checkModeFallback`` and
      ``fromOffboardLossActParam``, ``failsafe/failsafe.cpp``): 0 Position (``nav_state`` 2), 1
      Altitude (1), 2 Stabilized (15), 3 Return, 4 Land (18), 5 Hold (4), 6 Terminate (13), 7
      Disarm. The framework's check whether a mode can run ignores manual control
      (``failsafe/framework.cpp``), so 0, 1 and 2 do switch to their manual mode without RC;
      with no sticks that mode's flight task cannot run and PX4 flies its emergency *Descend*
      task instead (``FlightModeManager.cpp``; ``FlightTaskDescend.cpp``: level, heading kept,
      down at ``MPC_LAND_SPEED``, no position hold): the stand-in's ``"descend"``. 3 Return
      needs a global position and home, which a vision-only vehicle has not; the stand-in lands
      (not measured). The mode fallback is registered with user takeover ``Always``, so it acts
      at once: no ``COM_FAIL_ACT_T`` of Hold first (that delay is for ``Auto`` takeover actions,
      ``framework.cpp``). The offboard check runs in the commander's 10 Hz health checks
      (``Commander.cpp``; ``HealthAndArmingChecks/checks/offboardCheck.cpp``), so the loss is
      seen on that 100 ms grid after ``COM_OF_LOSS_T``. The fallback clears when its condition
      clears (``ActionOptions::clear_condition`` ``WhenConditionClears``, ``failsafe/framework.h``;
      the intended mode stays offboard): a fresh proof of life puts the vehicle back in offboard.
      Checked against PX4 SITL (SIH) at 289f3203 (``doc/reference/px4_standin.md``): action 0
      went to ``nav_state`` 2 and the vehicle descended and drifted; 4 to 18 at once; 5 to 4; the
      loss 1.04-1.13 s after the last proof of life with ``COM_OF_LOSS_T`` 1; back in offboard
      18-28 ms after the stream returned.
    * **Status.** ``vehicle_status`` is published at 2 Hz or at once on a change
      (``Commander::run``: "publish states ... at 2 Hz or immediately when changed"); ``system_id``
      and ``component_id`` 1 (``MAV_SYS_ID``, ``MAV_COMP_ID`` defaults, ``Commander.cpp``);
      ``nav_state`` 14 offboard, 4 ``AUTO_LOITER`` (Hold), 18 ``AUTO_LAND``, 13 ``TERMINATION``
      (``msg/versioned/VehicleStatus.msg``).

:func:`rotor_speeds` (the motors)
    ``thrust_and_torque``: :meth:`Px4Allocator.motor_commands` of the setpoints (PX4's
    effectiveness, normalised pseudo-inverse, sequential desaturation, clipping). ``direct_actuator``:
    ``ActuatorMotors.control`` itself (PX4's allocator is off, ``ModeUtil/control_mode.cpp``).
    Then the motor: PX4 outputs the signal ``s = thrust_curve_inverse(u)`` (``THR_MDL_FAC``,
    ``FunctionMotors.hpp``) and the vehicle is assumed to obey that model, so the commanded speed
    is ``omega = omega_max sqrt(thrust_curve(s)) = omega_max sqrt(u)``
    (:func:`~geodyn_ros.px4.allocation.signal_to_speed`); gz-sim's rotor lag is the simulator's
    (:class:`~geodyn_ros.sim.ActuatedSim`). Disarmed, terminated, or NaN (``ActuatorMotors``:
    "NaN maps to disarmed"): 0.

:class:`HoldController` (the failsafe flight; **not PX4's position controller**)
    PX4's Hold and Land run its cascaded position, velocity, attitude and rate controllers. The
    stand-in flies them with the proportional paths of that cascade and PX4's default gains
    (``MPC_XY_P`` 0.95, ``MPC_Z_P`` 1.0, ``MPC_XY_VEL_P_ACC`` 1.8, ``MPC_Z_VEL_P_ACC`` 4.0,
    ``mc_pos_control/multicopter_position_control_gain_params.c``; ``MC_ROLL_P`` = ``MC_PITCH_P``
    6.5, ``MC_YAW_P`` 2.8, ``mc_att_control_params.c``; ``MC_ROLLRATE_P`` = ``MC_PITCHRATE_P``
    0.15, ``MC_YAWRATE_P`` 0.2, ``mc_rate_control_params.c``; tilt limit ``MPC_TILTMAX_AIR`` 45
    deg, ``multicopter_position_control_limits_params.c``; Land descends at ``MPC_LAND_SPEED``
    0.7 m/s, ``multicopter_takeoff_land_params.c``). Left out: the integrators, the D terms,
    feed-forwards, slew limits, the hover-thrust estimator (the collective thrust uses the
    vehicle's true mass instead of ``MPC_THR_HOVER``), land detection and the auto-disarm.
"""
from __future__ import annotations

import math

import numpy as np

from .allocation import Px4Allocator, signal_to_speed, thrust_curve_inverse

__all__ = ["Commander", "HoldController", "rotor_speeds", "COM_OF_LOSS_T", "COM_OBL_RC_ACT",
           "NAV_OFFBOARD", "NAV_HOLD", "NAV_LAND", "NAV_TERMINATION", "NAV_POSCTL", "NAV_ALTCTL", "NAV_STAB", "ARMED",
           "DISARMED", "STATUS_PERIOD_US", "COMMANDER_PERIOD_US", "HEALTH_PERIOD_US", "MPC_LAND_SPEED", "OBL_ACTIONS",
           "FAILSAFE_FLIGHT"]

#: [s] commander_params.c defaults
COM_OF_LOSS_T, COM_OBL_RC_ACT = 1.0, 0
#: [m/s] multicopter_takeoff_land_params.c
MPC_LAND_SPEED = 0.7
#: VehicleStatus.arming_state
DISARMED, ARMED = 1, 2
#: VehicleStatus.nav_state
NAV_ALTCTL, NAV_POSCTL, NAV_HOLD, NAV_TERMINATION, NAV_OFFBOARD, NAV_STAB, NAV_LAND = 1, 2, 4, 13, 14, 15, 18
#: [µs] Commander.hpp COMMANDER_MONITORING_INTERVAL, the health checks' 10 Hz (Commander.cpp), and
#: vehicle_status's 2 Hz
COMMANDER_PERIOD_US, HEALTH_PERIOD_US, STATUS_PERIOD_US = 10_000, 100_000, 500_000
#: COM_OBL_RC_ACT value -> (what the stand-in flies without RC, nav_state) (module docstring)
OBL_ACTIONS = {0: ("descend", NAV_POSCTL), 1: ("descend", NAV_ALTCTL), 2: ("descend", NAV_STAB),
               3: ("land", NAV_LAND), 4: ("land", NAV_LAND), 5: ("hold", NAV_HOLD),
               6: ("terminate", NAV_TERMINATION), 7: ("disarm", None)}
#: the nav states the stand-in's own flight (HoldController) flies, and how
FAILSAFE_FLIGHT = {NAV_HOLD: "hold", NAV_LAND: "land", NAV_POSCTL: "descend", NAV_ALTCTL: "descend",
                   NAV_STAB: "descend"}
_MAIN_OFFBOARD, _MAIN_AUTO, _SUB_LOITER, _SUB_LAND = 6, 4, 3, 6   # px4_custom_mode.h
_MODE_FLAGS = ("position", "velocity", "acceleration", "attitude", "body_rate", "thrust_and_torque",
               "direct_actuator")


def _time(name, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"{name}: expected an integer time >= 0 [µs], got {v!r}")
    return int(v)


class Commander:
    """PX4's commander reduced to offboard, arming and the offboard-loss failsafe (module docstring).

    Parameters
    ----------
    of_loss_t : float
        ``COM_OF_LOSS_T`` [s], in [0, 60] (commander_params.c).
    obl_rc_act : int
        ``COM_OBL_RC_ACT``, 0 to 7 (:data:`OBL_ACTIONS`).
    system_id, component_id : int
        ``MAV_SYS_ID``, ``MAV_COMP_ID`` (1, 1).

    Attributes
    ----------
    armed : bool
    intended : int
        ``nav_state_user_intention``: :data:`NAV_OFFBOARD` or :data:`NAV_HOLD` (the start mode).
    nav_state : int
    failsafe : str or None
        ``"descend"``, ``"hold"``, ``"land"``, ``"terminate"`` while an offboard-loss failsafe acts.
    mode : str or None
        The offboard mode of the newest proof of life (``"thrust_and_torque"``, ``"direct_actuator"``,
        or another flag's name, which the stand-in does not fly).
    """

    def __init__(self, of_loss_t=COM_OF_LOSS_T, obl_rc_act=COM_OBL_RC_ACT, system_id=1, component_id=1):
        for name, v, hi in (("of_loss_t", of_loss_t, 60.0),):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= hi:
                raise ValueError(f"{name}: expected a time in [0, {hi:g}] s (commander_params.c), got {v!r}")
        if isinstance(obl_rc_act, bool) or obl_rc_act not in OBL_ACTIONS:
            raise ValueError(f"obl_rc_act: expected COM_OBL_RC_ACT 0 to 7, got {obl_rc_act!r}")
        for name, v in (("system_id", system_id), ("component_id", component_id)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 255:
                raise ValueError(f"{name}: expected an integer in [1, 255], got {v!r}")
        self.of_loss_us = int(round(of_loss_t * 1e6))
        self.action, self.fallback_nav = OBL_ACTIONS[obl_rc_act]
        self.obl_rc_act = obl_rc_act
        self.system_id, self.component_id = system_id, component_id
        self.armed = False
        self.intended = self.nav_state = NAV_HOLD
        self.failsafe = None
        self.mode = None
        self.proof_us = None          # receive time of the newest proof of life with a flag set
        self.lost_since_us = None     # start of the current offboard-loss failsafe
        self.signal_ok = False        # the offboard signal as the newest 10 Hz health check saw it
        self._health_us = None        # time of that health check
        self.changed = True           # a status field changed since the last status published

    # ------------------------------------------------------------------ inputs
    def proof_of_life(self, now_us: int, **flags) -> None:
        """An ``OffboardControlMode`` received at ``now_us`` with its boolean flags (the fields of
        px4_msgs 1.16.0 ``msg/OffboardControlMode.msg``); one without any flag set is no proof of
        life (offboardCheck.cpp)."""
        now_us = _time("now_us", now_us)
        unknown = set(flags) - set(_MODE_FLAGS)
        if unknown:
            raise ValueError(f"flags: unknown OffboardControlMode fields {sorted(unknown)}")
        on = [f for f in _MODE_FLAGS if flags.get(f)]
        if on:
            self.proof_us = now_us
            # the stand-in flies the two low-level modes; a message naming another is kept as such
            low = [f for f in ("direct_actuator", "thrust_and_torque") if f in on]
            self.mode = low[0] if low else on[0]

    def offboard_available(self, now_us: int) -> bool:
        """offboardCheck.cpp: a proof of life with a flag and ``now < timestamp + COM_OF_LOSS_T``."""
        return self.proof_us is not None and _time("now_us", now_us) < self.proof_us + self.of_loss_us

    def command(self, now_us: int, command: int, param1: float, param2: float = 0.0, param3: float = 0.0,
                target_system: int = 0) -> tuple:
        """A ``VehicleCommand``: ``(accepted, line)``; the line says what happened and why."""
        now_us = _time("now_us", now_us)
        if target_system not in (0, self.system_id):
            return False, f"command {command} for system {target_system} ignored (this is system {self.system_id})"
        if command == 400:
            if not math.isfinite(param1):
                return False, "VEHICLE_CMD_COMPONENT_ARM_DISARM: param1 is not finite; denied"
            if round(param1) == 0:
                return self._disarm("disarmed by command")
            if round(param1) != 1:
                return False, f"VEHICLE_CMD_COMPONENT_ARM_DISARM: param1 {param1:g} is neither 0 nor 1; denied"
            if self.armed:
                return True, "already armed"
            if self.intended != NAV_OFFBOARD:
                return False, ("Arming denied: the stand-in arms only in offboard (PX4's other modes are not "
                               f"modelled; nav_state {self.nav_state})")
            if not self.offboard_available(now_us):
                return False, "Arming denied: No offboard signal (modeCheck.cpp: offboard needs a fresh proof of life)"
            self.armed, self.changed = True, True
            self.update(now_us)
            return True, "armed by command"
        if command == 176:
            if not (math.isfinite(param1) and int(param1) & 1):
                return False, "VEHICLE_CMD_DO_SET_MODE without the custom-mode flag (param1 bit 1): not modelled; denied"
            main, sub = round(param2), round(param3)
            target = {(_MAIN_OFFBOARD, None): NAV_OFFBOARD, (_MAIN_AUTO, _SUB_LOITER): NAV_HOLD,
                      (_MAIN_AUTO, _SUB_LAND): NAV_LAND}.get((main, sub if main == _MAIN_AUTO else None))
            if target is None:
                return False, f"VEHICLE_CMD_DO_SET_MODE main mode {main} sub mode {sub}: not modelled by the stand-in; denied"
            if self.armed and target == NAV_OFFBOARD and not self.offboard_available(now_us):
                return False, "offboard denied: No offboard signal (armed: the mode must be able to run)"
            if target != self.intended:
                self.intended, self.changed = target, True
            self.update(now_us)
            return True, f"mode set: nav_state {self.nav_state}"
        return False, f"command {command}: not modelled by the stand-in; ignored"

    def _disarm(self, why) -> tuple:
        was = self.armed
        self.armed, self.failsafe, self.lost_since_us = False, None, None
        self.changed |= was
        return True, why if was else "already disarmed"

    # ------------------------------------------------------------------ the cycle
    def health_check(self, now_us: int) -> bool:
        """The offboard signal as PX4 sees it at ``now_us`` (module docstring): a fresh proof of
        life counts at once, its loss only at a 10 Hz health check (every
        :data:`HEALTH_PERIOD_US`)."""
        due = self._health_us is None or now_us >= self._health_us + HEALTH_PERIOD_US or now_us < self._health_us
        if due:
            self._health_us = now_us
        if self.offboard_available(now_us):
            self.signal_ok = True
        elif due:
            self.signal_ok = False
        return self.signal_ok

    def update(self, now_us: int) -> list:
        """One commander cycle at ``now_us``: the offboard-loss failsafe on the health checks' view
        of the signal (a fresh proof of life clears it at once). Returns the lines to log."""
        now_us = _time("now_us", now_us)
        out = []
        old = (self.armed, self.nav_state, self.failsafe)
        if self.armed and self.intended == NAV_OFFBOARD and not self.health_check(now_us):
            if self.lost_since_us is None:
                self.lost_since_us = now_us
                out.append(f"offboard signal lost (no proof of life for COM_OF_LOSS_T {self.of_loss_us * 1e-6:g} s): "
                           f"failsafe COM_OBL_RC_ACT {self.obl_rc_act} -> {self.action}")
            if self.action == "disarm":
                self._disarm("disarmed by the offboard-loss failsafe")
            else:
                self.failsafe, self.nav_state = self.action, self.fallback_nav
        else:
            if self.lost_since_us is not None and self.armed:
                out.append("offboard signal back: failsafe cleared, offboard again")
            if self.failsafe != "terminate":     # termination is final (until disarmed)
                self.lost_since_us, self.failsafe = None, None
                self.nav_state = self.intended
        if (self.armed, self.nav_state, self.failsafe) != old:
            self.changed = True
        return out

    @property
    def arming_state(self) -> int:
        return ARMED if self.armed else DISARMED

    def status_due(self, now_us: int, last_us) -> bool:
        """Whether to publish ``vehicle_status`` at ``now_us`` (2 Hz or at once on a change); the
        caller publishes and clears :attr:`changed`."""
        return self.changed or last_us is None or now_us >= last_us + STATUS_PERIOD_US


# ----------------------------------------------------------------------------- the motors
def rotor_speeds(commands, omega_max, thr_mdl_fac) -> np.ndarray:
    """(n,) commanded rotor speeds [rad/s] of PX4's motor commands ``u`` (n,) (relative thrust,
    NaN = disarmed): PX4's signal ``s = thrust_curve_inverse(u)``, then the vehicle's motor
    ``omega = omega_max sqrt(thrust_curve(s))`` (module docstring). ``u`` outside ``[0, 1]`` is
    clipped there first (non-reversible motors); NaN gives 0."""
    u = np.array(commands, dtype=float)
    if u.ndim != 1:
        raise ValueError(f"commands: expected one motor command per rotor, got shape {u.shape}")
    if np.isinf(u).any():
        raise ValueError("commands: Inf (NaN = disarmed is allowed)")
    off = np.isnan(u)
    u = np.clip(np.where(off, 0.0, u), 0.0, 1.0)
    om = signal_to_speed(thrust_curve_inverse(u, thr_mdl_fac), omega_max, thr_mdl_fac)
    return np.where(off, 0.0, om)


# ----------------------------------------------------------------------------- the failsafe flight
class HoldController:
    """Hold and Land without the companion computer: PX4's cascade, proportional paths only, with
    PX4's default gains (module docstring); the output goes through PX4's allocation like any
    ``thrust_and_torque`` setpoint.

    Parameters
    ----------
    allocator : Px4Allocator
        PX4's allocation of the vehicle (its ``CA_ROTORn_*``).
    phys_effectiveness : (6, n)
        The vehicle's true effectiveness, FRD, per unit motor command: ``rotor_effectiveness`` of
        :func:`~geodyn_ros.px4.allocation.px4_rotor_parameters` (``ct`` in newtons, torques in N m).
    mass : float
        The vehicle's mass [kg] (the collective thrust; PX4 estimates its hover thrust instead).
    gravity : float
        [m/s^2], > 0.
    """

    XY_P, Z_P, XY_VEL_P, Z_VEL_P = 0.95, 1.0, 1.8, 4.0
    ATT_P = np.array([6.5, 6.5, 2.8])
    RATE_P = np.array([0.15, 0.15, 0.2])
    TILT_MAX = math.radians(45.0)

    def __init__(self, allocator: Px4Allocator, phys_effectiveness, mass: float, gravity: float = 9.81):
        if not isinstance(allocator, Px4Allocator):
            raise ValueError(f"allocator: expected a Px4Allocator, got {type(allocator).__name__}")
        B = np.asarray(phys_effectiveness, dtype=float)
        if B.shape != allocator.effectiveness.shape or not np.isfinite(B).all():
            raise ValueError(f"phys_effectiveness: expected finite {allocator.effectiveness.shape}, got {B.shape}")
        for name, v in (("mass", mass), ("gravity", gravity)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: expected a finite number > 0, got {v!r}")
        self.allocator, self.mass, self.g = allocator, float(mass), float(gravity)
        self._pinv = np.linalg.pinv(B)
        self.target = None       # (p (3,) ENU [m], yaw [rad] about z up)

    def engage(self, position, yaw: float) -> None:
        """Hold ``position`` (3,) [m, ENU] at heading ``yaw`` [rad, ENU, about z up]."""
        self.target = (np.array(position, dtype=float), float(yaw))

    def setpoints(self, C, w_b, v_b, *, mode: str = "hold", dt: float = 0.0) -> tuple:
        """``(torque (3,), thrust (3,))``, FRD, normalised, for the state ``C`` (4, 4) ENU/FLU,
        ``w_b``, ``v_b`` (3,) FLU [rad/s, m/s]. ``mode``: ``"hold"`` (the engaged position),
        ``"land"`` (the target sinks at ``MPC_LAND_SPEED``, advanced by ``dt`` [s]) or ``"descend"``
        (PX4's emergency Descend task, ``FlightTaskDescend.cpp``: level, heading kept, down at
        ``MPC_LAND_SPEED``, no horizontal position or velocity hold)."""
        if self.target is None:
            raise ValueError("engage() first: no hold target")
        if mode not in ("hold", "land", "descend"):
            raise ValueError(f"mode: expected 'hold', 'land' or 'descend', got {mode!r}")
        C = np.asarray(C, float)
        R, p = C[:3, :3], C[:3, 3]
        v = R @ np.asarray(v_b, float)
        p_d, yaw = self.target
        if mode == "descend":                  # the velocity loop alone, vertical only: level flight
            a = np.array([0.0, 0.0, self.Z_VEL_P * (-MPC_LAND_SPEED - v[2]) + self.g])
            return self._attitude(a, R, yaw, w_b)
        v_ff = np.zeros(3)
        if mode == "land":
            p_d[2] -= MPC_LAND_SPEED * dt
            p_d[2] = max(p_d[2], p[2] - 1.0)   # the setpoint never runs away from a vehicle that cannot follow
            v_ff[2] = -MPC_LAND_SPEED
        kp = np.array([self.XY_P, self.XY_P, self.Z_P])
        kv = np.array([self.XY_VEL_P, self.XY_VEL_P, self.Z_VEL_P])
        a = kv * (kp * (p_d - p) + v_ff - v) + np.array([0.0, 0.0, self.g])
        return self._attitude(a, R, yaw, w_b)

    def _attitude(self, a, R, yaw, w_b) -> tuple:
        """The attitude and rate paths and the collective thrust for the acceleration ``a`` (3,)
        [m/s^2, ENU, gravity included]: ``(torque, thrust)`` FRD normalised."""
        a = np.array(a, dtype=float)
        a[2] = max(a[2], 0.1 * self.g)
        horiz = np.hypot(a[0], a[1])
        if horiz > a[2] * math.tan(self.TILT_MAX):
            a[:2] *= a[2] * math.tan(self.TILT_MAX) / horiz
        z_d = a / np.linalg.norm(a)
        x_c = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        y_d = np.cross(z_d, x_c)
        y_d /= np.linalg.norm(y_d)
        R_d = np.column_stack([np.cross(y_d, z_d), y_d, z_d])
        E = R_d.T @ R - R.T @ R_d
        e = 0.5 * np.array([E[2, 1], E[0, 2], E[1, 0]])      # attitude error, body FLU
        rate_sp = -self.ATT_P * e
        torque_flu = self.RATE_P * (rate_sp - np.asarray(w_b, float))
        T = self.mass * float(a @ R[:, 2])                   # collective thrust along body z [N]
        u = self._pinv @ np.array([0.0, 0.0, 0.0, 0.0, 0.0, -max(T, 0.0)])
        _, thrust = self.allocator.setpoints(u)
        torque = torque_flu * np.array([1.0, -1.0, -1.0])    # FLU -> FRD
        return np.clip(torque, -1.0, 1.0), np.clip(thrust, -1.0, 1.0)

