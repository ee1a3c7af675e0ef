"""``geodyn_px4_sim``: ``geodyn_actuated_sim`` behind a PX4 stand-in (issue 44, deliverable 3).

The vehicle of :mod:`geodyn_ros.ros.nodes.actuated_sim_node` (MuJoCo, gz-sim's rotor lag, the
series-elastic arm, the sensor streams), whose rotors are driven the way PX4 drives them from its
uXRCE-DDS topics instead of by ``cmd/rotor_speeds``. What PX4 does is
:mod:`geodyn_ros.px4.standin` (its commander's offboard rules and failsafe, its allocation and
thrust model, a Hold/Land flight that is **not** PX4's position controller); every PX4 fact is
cited there (PX4-Autopilot ``b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf``). The reference page is
doc/reference/px4_standin.md.

Why a subclass node and not a mode of ``geodyn_actuated_sim``: the stand-in replaces the rotor
input and the odometry output, adds seven PX4 topics and PX4's parameters, and needs ``px4_msgs``;
``geodyn_actuated_sim`` keeps none of that and stays usable without ``px4_msgs``.

Subscribes (best effort, volatile, as PX4's readers: ``create_data_reader`` in
``src/modules/uxrce_dds_client/utilities.hpp``)
    ``/fmu/in/offboard_control_mode``, ``/fmu/in/vehicle_command``, ``/fmu/in/vehicle_thrust_setpoint``,
    ``/fmu/in/vehicle_torque_setpoint``, ``/fmu/in/actuator_motors`` (px4_msgs 1.16.0; names:
    parameters); every message is stamped with its receive time in simulated time (PX4 stamps a
    ``timestamp`` of 0 on receipt; the stand-in does so for every message). ``cmd/motor_efforts``
    (the arm's driver, unchanged), ``cmd/wrench``, ``cmd/joint_efforts`` (disturbances) as
    ``geodyn_actuated_sim``. **Not** ``cmd/rotor_speeds``: the rotors listen to PX4 only.
Publishes
    ``/fmu/out/vehicle_odometry`` (``VehicleOdometry``: pose NED, ``q`` FRD -> NED, velocity NED,
    rates FRD, as EKF2's ``PublishOdometry``, ``src/modules/ekf2/EKF2.cpp``) for every odometry
    sample of the sensing profile (default ``onboard``: EKF2 with vision aiding, 100 Hz, 10 ms,
    config/sensors.yaml), ``timestamp_sample`` its measurement time and ``timestamp`` its delivery
    time, both in µs of simulated time: the clock the agent's side sees with ``UXRCE_DDS_SYNCT = 1``
    (doc/reference/px4_bridge.md, "PX4's timestamps"); ``/fmu/out/vehicle_status_v1``
    (``VehicleStatus``: ``arming_state``, ``nav_state``, ``nav_state_user_intention``, ``failsafe``,
    ``system_id``, ``component_id``) at 2 Hz and at once on a change; ``/clock``, ``joint_states``,
    ``motor_states``, ``/tf`` and ``/diagnostics`` as ``geodyn_actuated_sim``. Not ``odom``: the
    bridge makes it from ``vehicle_odometry``.

Time: free-running (``lockstep`` must be false: PX4 is not lock-step), one physics step per
wall-clock tick at ``real_time_factor``; the commander's cycle runs every 10 ms of simulated time.
Before the first arming the vehicle is held at its initial state (on a stand: the simulator has no
ground to stand on); once armed it flies, and a disarmed vehicle falls.
"""
from __future__ import annotations

import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from px4_msgs.msg import (ActuatorMotors, OffboardControlMode, VehicleCommand, VehicleOdometry, VehicleStatus,
                          VehicleThrustSetpoint, VehicleTorqueSetpoint)

from ...px4.offboard_path import px4_vehicle
from ...px4.frames import odometry_to_px4
from ...px4.standin import COMMANDER_PERIOD_US, FAILSAFE_FLIGHT, NAV_OFFBOARD, Commander, HoldController, rotor_speeds
from ..common.diagnostics import guard
from ..common.params import ConfigurationError
from ..common.runtime import control_qos, run_nodes
from ..nodes import actuated_sim_node
from ..nodes.actuated_sim_node import ActuatedSimNode

__all__ = ["PARAMETERS", "Px4SimNode", "main"]

PARAMETERS = {
    **actuated_sim_node.PARAMETERS,
    "actuation_config": ("", "Vehicle file with its px4: section (doc/reference/vehicle_file.md): the rotors, "
                         "PX4's CA_ROTORn_* (px4.ct), THR_MDL_FAC and MC_AIRMODE; the bridge's file. Required."),
    "lockstep": (False, "Must be false: PX4 is not lock-step; the simulator free-runs at real_time_factor."),
    "sensing": ("onboard", "Sensor profile of sensors_file for vehicle_odometry (default 'onboard': PX4's EKF2 with "
                "vision aiding, 100 Hz, 10 ms; config/sensors.yaml); 'perfect' = every step."),
    "com_of_loss_t": (1.0, "COM_OF_LOSS_T [s]: offboard is lost when the newest proof of life is this old "
                      "(commander_params.c default 1.0)."),
    "com_obl_rc_act": (0, "COM_OBL_RC_ACT: the offboard-loss action (commander_params.c default 0): 0 Position, "
                       "1 Altitude, 2 Stabilized (without sticks PX4 flies its emergency Descend: level, down at "
                       "MPC_LAND_SPEED, no position hold), 3 Return (lands: no global position), 4 Land, 5 Hold, "
                       "6 Terminate, 7 Disarm; at once (as PX4 SITL at 289f3203)."),
    "mav_sys_id": (1, "MAV_SYS_ID: vehicle_status.system_id; commands for another system are ignored (default 1)."),
    "mav_comp_id": (1, "MAV_COMP_ID: vehicle_status.component_id (default 1)."),
    "odometry_topic": ("/fmu/out/vehicle_odometry", "PX4's VehicleOdometry (dds_topics.yaml)."),
    "status_topic": ("/fmu/out/vehicle_status_v1", "PX4's VehicleStatus (version 1: suffix _v1, PX4 1.16)."),
    "offboard_control_mode_topic": ("/fmu/in/offboard_control_mode", "PX4's OffboardControlMode (dds_topics.yaml)."),
    "vehicle_command_topic": ("/fmu/in/vehicle_command", "PX4's VehicleCommand (dds_topics.yaml)."),
    "thrust_setpoint_topic": ("/fmu/in/vehicle_thrust_setpoint", "PX4's VehicleThrustSetpoint (dds_topics.yaml)."),
    "torque_setpoint_topic": ("/fmu/in/vehicle_torque_setpoint", "PX4's VehicleTorqueSetpoint (dds_topics.yaml)."),
    "actuator_motors_topic": ("/fmu/in/actuator_motors", "PX4's ActuatorMotors (dds_topics.yaml)."),
}


class _Px4Vehicle:
    """What the stand-in needs of the vehicle, built with the simulation (off the node's state)."""

    def __init__(self, sim, gravity):
        try:
            px4 = px4_vehicle(sim.config, sim.rotor_frames)      # refuses a file without its px4: section
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self.allocator, self.phys, self.fac, self.omega_max = px4.allocator, px4.phys, px4.thr_mdl_fac, px4.omega_max
        g = float(-np.asarray(gravity, float)[2])
        self.hold = HoldController(self.allocator, self.phys, float(sim.model.total_mass), g if g > 0 else 9.81)


class Px4SimNode(ActuatedSimNode):
    """The simulator behind a PX4 stand-in (module docstring)."""

    PARAMETERS = PARAMETERS
    COMMAND_TOPICS = "the /fmu/in topics"

    def __init__(self, node_name: str = "geodyn_px4_sim", **kwargs):
        self.px4 = None
        self._odometry_pub = self._status_pub = None
        self._torque = np.zeros(3)
        self._thrust = np.zeros(3)
        self._motors = None            # the newest ActuatorMotors controls (n,)
        self._next_cycle_us = 0
        self._status_us = None
        self._released = False         # armed once: the vehicle left its stand
        self._est = None               # the newest odometry published (C, w_b, v_b): PX4's estimate
        self._hold_mode = None         # the nav_state the hold controller was engaged for
        self.counts = {"odometry": 0, "status": 0, "commands": 0, "refused": 0}
        super().__init__(node_name, **kwargs)
        p = self._p
        if p["lockstep"]:
            raise ConfigurationError("parameter 'lockstep': must be false: PX4 is not lock-step (the stand-in "
                                     "free-runs at real_time_factor)")
        for name, hi in (("com_of_loss_t", 60.0),):
            if not (math.isfinite(p[name]) and 0.0 <= p[name] <= hi):
                raise ConfigurationError(f"parameter '{name}': expected [0, {hi:g}] s, got {p[name]!r}")
        try:
            self.commander = Commander(float(p["com_of_loss_t"]), int(p["com_obl_rc_act"]),
                                       int(p["mav_sys_id"]), int(p["mav_comp_id"]))
        except ValueError as exc:
            raise ConfigurationError(f"parameter '{str(exc).split(':')[0].replace('obl_rc_act', 'com_obl_rc_act')}"
                                     f"': {exc}") from None
        # the rotors listen to PX4 only, and odom is the bridge's: drop the parent's rotor input and odom output
        for sub in list(self.subscriptions):
            if sub.topic_name.endswith("cmd/rotor_speeds"):
                self.destroy_subscription(sub)
        self.destroy_publisher(self.pub_odom)
        px4_in, out = control_qos(p["qos_depth"], "best_effort"), control_qos(max(p["qos_depth"], 5))
        self._odometry_pub = self.create_publisher(VehicleOdometry, p["odometry_topic"], out)
        self._status_pub = self.create_publisher(VehicleStatus, p["status_topic"], out)
        for msg_type, key, fn in ((OffboardControlMode, "offboard_control_mode_topic", self._on_mode),
                                  (VehicleCommand, "vehicle_command_topic", self._on_command),
                                  (VehicleThrustSetpoint, "thrust_setpoint_topic", self._on_thrust),
                                  (VehicleTorqueSetpoint, "torque_setpoint_topic", self._on_torque),
                                  (ActuatorMotors, "actuator_motors_topic", self._on_motors)):
            self.create_subscription(msg_type, p[key], guard(self, fn, p[key]), px4_in)
        self.diag.notes["px4"] = self._describe()
        self.get_logger().info("PX4 stand-in: rotors driven from the /fmu/in topics through PX4's allocation "
                               f"(COM_OF_LOSS_T {p['com_of_loss_t']:g} s, COM_OBL_RC_ACT {p['com_obl_rc_act']}); "
                               "disarmed and held on its stand until armed")

    # ------------------------------------------------------------------ the simulation
    def _build_sim(self, source):
        sim = super()._build_sim(source)
        sim.px4 = _Px4Vehicle(sim, self._p["gravity"])
        return sim

    def _setup_model(self, sim, first: bool = True) -> None:
        self.px4 = sim.px4
        n = sim.model.n_joints
        self._q0 = self._joint_param(self._p, "initial_joint_positions", n)
        self._qd0 = self._joint_param(self._p, "initial_joint_velocities", n)
        super()._setup_model(sim, first)

    def _describe(self) -> str:
        c = self.commander
        s = f"{'armed' if c.armed else 'disarmed'}, nav_state {c.nav_state}"
        return s + (f", FAILSAFE {c.failsafe}" if c.failsafe else "") + ("" if self._released else ", on its stand")

    def _now_us(self) -> int:
        return self.stamp_ns // 1000

    def step(self) -> None:
        """The commander's cycle when due, PX4's motor outputs as rotor commands, one physics step."""
        now = self._now_us()
        if now >= self._next_cycle_us:
            self._next_cycle_us = now - now % COMMANDER_PERIOD_US + COMMANDER_PERIOD_US
            self._cycle(now)
        self._rotor_cmd[:] = self._rotor_speeds()
        if not self._released:      # on the stand: back to the initial state before each step
            self.sim.reset(self._C0, self._V0, self._q0, self._qd0, time=self.sim.time)
        super().step()

    def _cycle(self, now: int) -> None:
        c = self.commander
        for line in c.update(now):
            self.diag.report(DiagnosticStatus.WARN, f"PX4 stand-in: {line}")
        if c.armed and not self._released:
            self._released = True
        if c.armed and c.nav_state in FAILSAFE_FLIGHT and self._hold_mode is None and self._est is not None:
            C = self._est[0]
            self.px4.hold.engage(C[:3, 3], math.atan2(C[1, 0], C[0, 0]))
            self._hold_mode = c.nav_state
        elif c.nav_state not in FAILSAFE_FLIGHT or not c.armed:
            self._hold_mode = None
        if c.status_due(now, self._status_us):
            self._publish_status(now)

    def _rotor_speeds(self) -> np.ndarray:
        c, v = self.commander, self.px4
        n = len(self.rotor_names)
        if not c.armed or c.failsafe == "terminate":
            return np.zeros(n)
        if self._hold_mode is not None:
            torque, thrust = v.hold.setpoints(*self._est, mode=FAILSAFE_FLIGHT[c.nav_state], dt=self._p["timestep"])
            u = v.allocator.motor_commands(torque, thrust)
        elif c.nav_state == NAV_OFFBOARD and c.mode == "direct_actuator":
            u = self._motors if self._motors is not None else np.full(n, np.nan)
        elif c.nav_state == NAV_OFFBOARD and c.mode == "thrust_and_torque":
            u = v.allocator.motor_commands(self._torque, self._thrust)
        else:                       # another offboard mode (position, attitude ...): not modelled
            u = np.zeros(n)
        return rotor_speeds(u, v.omega_max, v.fac)

    # ------------------------------------------------------------------ outputs
    def _publish_odom(self, stamp: int, C, Vb) -> None:
        """One odometry sample (measured at ``stamp`` [ns]) as PX4's ``VehicleOdometry``."""
        self._est = (np.array(C, float), np.array(Vb[:3], float), np.array(Vb[3:], float))
        if self._odometry_pub is None or stamp <= 0:   # PX4's clock is never 0: no sample at t = 0 on the wire
            return
        pos, q, vel, rates = odometry_to_px4(C, Vb[:3], Vb[3:], velocity_frame=1)
        m = VehicleOdometry(timestamp=self._now_us(), timestamp_sample=stamp // 1000, pose_frame=1, velocity_frame=1)
        m.position = [float(x) for x in pos]
        m.q = [float(x) for x in q]
        m.velocity = [float(x) for x in vel]
        m.angular_velocity = [float(x) for x in rates]
        self._odometry_pub.publish(m)
        self.counts["odometry"] += 1

    def _publish_status(self, now: int) -> None:
        c = self.commander
        m = VehicleStatus(timestamp=now, arming_state=c.arming_state, nav_state=c.nav_state,
                          nav_state_user_intention=c.intended, failsafe=c.failsafe is not None,
                          system_id=c.system_id, component_id=c.component_id)
        self._status_pub.publish(m)
        self._status_us, c.changed = now, False
        self.counts["status"] += 1
        self.diag.notes["px4"] = self._describe()

    # ------------------------------------------------------------------ inputs
    def _refuse(self, topic: str, why: str) -> None:
        self.counts["refused"] += 1
        self.diag.problem(topic, f"{topic}: {why}; not applied")

    def _on_mode(self, msg) -> None:
        if self.sim is None:
            return
        self.commander.proof_of_life(self._now_us(), **{f: bool(getattr(msg, f)) for f in (
            "position", "velocity", "acceleration", "attitude", "body_rate", "thrust_and_torque", "direct_actuator")})

    def _on_command(self, msg) -> None:
        if self.sim is None:
            return
        now = self._now_us()
        ok, line = self.commander.command(now, int(msg.command), float(msg.param1), float(msg.param2),
                                          float(msg.param3), int(msg.target_system))
        self.counts["commands"] += 1
        self.diag.report(DiagnosticStatus.OK if ok else DiagnosticStatus.WARN,
                         f"PX4 stand-in: VehicleCommand {msg.command} param1={msg.param1:g}: {line}")
        if self.commander.changed:
            self._cycle(now)

    def _setpoint(self, topic, xyz):
        a = np.array(xyz, dtype=float)
        if a.shape != (3,) or not np.isfinite(a).all():
            self._refuse(topic, f"NaN or Inf in xyz {list(xyz)}")
            return None
        return a

    def _on_thrust(self, msg) -> None:
        a = self._setpoint("vehicle_thrust_setpoint", msg.xyz)
        if a is not None:
            self._thrust = a

    def _on_torque(self, msg) -> None:
        a = self._setpoint("vehicle_torque_setpoint", msg.xyz)
        if a is not None:
            self._torque = a

    def _on_motors(self, msg) -> None:
        n = len(self.rotor_names) if self.sim is not None else 0
        u = np.array(msg.control, dtype=float)[:n]
        if np.isinf(u).any():
            self._refuse("actuator_motors", "Inf in control (NaN = disarmed is allowed)")
            return
        self._motors = u


def main(args=None) -> int:
    """Console script ``geodyn_px4_sim``."""
    return run_nodes([Px4SimNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
