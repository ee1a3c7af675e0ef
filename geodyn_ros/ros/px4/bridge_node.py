"""``geodyn_px4_bridge``: the ROS side of PX4's uXRCE-DDS interface for the geodyn controllers.

PX4 facts are from PX4-Autopilot main at commit ``b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf``
(2025-06-10, the line of release 1.16) and px4_msgs 1.16.0; each is cited where it is used
(:mod:`.px4_wire`, :mod:`.offboard`, :mod:`geodyn_ros.px4.allocation`). The reference page is
doc/reference/px4_bridge.md.

Subscribes
    ``/fmu/out/vehicle_odometry`` (``px4_msgs/VehicleOdometry``, NED/FRD; parameter
    ``odometry_topic``) and ``/fmu/out/vehicle_status_v1`` (``px4_msgs/VehicleStatus``, version 1:
    PX4 appends ``_v<MESSAGE_VERSION>`` to a topic whose message version is not 0,
    ``generate_topic_name`` in ``src/modules/uxrce_dds_client/utilities.hpp``; parameter
    ``status_topic``), both best effort, volatile, keep last ``qos_depth``: PX4's writers are best
    effort, transient local, keep last (``create_data_writer``, same file), which a best-effort
    volatile reader matches and a reliable one does not. ``cmd/rotor_speeds`` (the controllers'
    ``actuator_msgs/Actuators`` ``velocity`` [rad/s], best effort so that it matches any
    publisher).

Services
    ``~/arm``, ``~/disarm``, ``~/offboard`` (``std_srvs/srv/Trigger``), always: a message on a
    topic could be replayed by ``ros2 bag play`` or any publisher, a service call cannot. Without
    ``std_srvs`` the node stops at start with one line saying what to install
    (:data:`STD_SRVS_MISSING`).

Publishes
    ``odom`` (``nav_msgs/Odometry``, REP 105: pose of ``frame_prefix`` + base link in
    ``world_frame`` (ENU for PX4's NED), twist in the base link (FLU); stamped by the rule of
    :class:`.px4_wire.StampMapper`); in ``px4_mode: thrust_and_torque``
    ``/fmu/in/vehicle_thrust_setpoint`` and ``/fmu/in/vehicle_torque_setpoint`` (FRD, normalised:
    :meth:`geodyn_ros.px4.allocation.Px4Allocator.setpoints` of the commands), in
    ``direct_actuator`` ``/fmu/in/actuator_motors`` (``control[i]`` the relative thrust
    ``u_i = omega_i^2 / omega_max,i^2`` of rotor ``i``, NaN for the unused channels: "NaN maps to
    disarmed", ``msg/versioned/ActuatorMotors.msg``); one per accepted command.
    ``armed`` (``std_msgs/Bool``, reliable, transient local: a late subscriber gets the last value):
    true while PX4 applies this bridge's commands (armed and in offboard), on every change of
    ``vehicle_status`` (false until the first): the controllers' ``rejection_engage: armed``.
    ``/fmu/in/offboard_control_mode`` (the chosen mode's flag) at ``proof_of_life_rate_hz`` while
    the commands are fresh; ``/fmu/in/vehicle_command`` for each action; ``/diagnostics``. Every
    message to PX4 has ``timestamp = 0``: PX4 stamps it on arrival (:mod:`.px4_wire`). The thrust
    setpoint goes before the torque setpoint: PX4 allocates when a torque setpoint arrives, with
    the thrust it has then.

**On the record.** Every command sent to PX4 (arm, disarm, mode) and every result of one
(confirmed or not by ``vehicle_status``) gets its own log line and its own ``/diagnostics``
status (name ``<node>: px4 bridge: commands``), outside the rate limits that bad input and status
lines share; at most one command per action every :data:`COMMAND_INTERVAL`. Status changes are
said at most once per :data:`STATUS_PERIOD`, then summarised (how many, the latest).

``cmd/motor_efforts`` (the arm's joint torques) is not touched: it goes to the arm's own driver.

Bad inputs are refused with a one-line problem on ``/diagnostics`` and never forwarded: NaN/Inf
(PX4's "invalid"), unknown frames, a non-unit quaternion, implausible values, a stale, repeated,
future-dated or inconsistent odometry sample (the time rule of :mod:`.px4_wire`: no sample can
poison it); a wrong rotor count, a negative speed or one above ``max_rot_velocity``. A vehicle
whose PX4 allocation depends on float32 rounding (motors canted a few degrees) is refused at
start (:func:`geodyn_ros.px4.allocation.allocation_problem`).
"""
from __future__ import annotations

import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
from px4_msgs.msg import (ActuatorMotors, OffboardControlMode, VehicleCommand, VehicleOdometry, VehicleStatus,
                          VehicleThrustSetpoint, VehicleTorqueSetpoint)
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from ...px4.allocation import float32_accuracy, rotor_effectiveness, speed_to_command
from ...px4.offboard_path import px4_vehicle, torque_thrust_setpoints
from ..common.diagnostics import DiagnosticsReporter, guard, guard_time_source
from ..common.params import (FRAME_PREFIX_DESCRIPTION, ConfigurationError, check_frame_prefix, declare_parameters,
                             model_source)
from ..common.runtime import control_qos, run_nodes
from ..wire.actuator_commands import require_actuator_msgs
from ..wire.conversions import InputError
from .offboard import ARMED, NAV_OFFBOARD, OffboardProtocol
from .px4_wire import MAX_CONTROLS, StampMapper, odometry_msg, odometry_state, rotor_speeds

#: the start-up refusal where std_srvs is missing (the package declares it: package.xml, requirements.txt)
STD_SRVS_MISSING = ("std_srvs is not installed: geodyn_px4_bridge's ~/arm, ~/disarm and ~/offboard are std_srvs/srv/"
                    "Trigger services; install it (pip install -r requirements.txt, which pins ros-std-srvs, or apt "
                    "install ros-$ROS_DISTRO-std-srvs)")
#: [s, steady clock] at most one command of each action this often (a request sooner is refused and
#: said): a flood of service calls cannot flood PX4 with commands, nor the log with their lines
COMMAND_INTERVAL = 0.1
#: [s, steady clock] vehicle_status changes are logged at most once in this period; the others are
#: counted and said in one summary line when it ends
STATUS_PERIOD = 1.0


def _trigger_type():
    try:
        from std_srvs.srv import Trigger
    except ImportError:
        raise ConfigurationError(STD_SRVS_MISSING) from None
    return Trigger

__all__ = ["PARAMETERS", "MODES", "Px4BridgeNode", "main"]

MODES = ("thrust_and_torque", "direct_actuator")
PARAMETERS = {
    "actuation_config": ("", "Vehicle file (doc/reference/vehicle_file.md) with a px4: section: the rotors and "
                         "PX4's thrust model, the one source in both directions. Required."),
    "urdf_path": ("", "URDF/xacro of the vehicle; needed only when the vehicle file takes its rotors from the URDF "
                  "(from_urdf, tilthex) or to name the base link (its root) when neither base_link nor the file does."),
    "robot_description": ("", "URDF XML string; instead of urdf_path."),
    "base_link": ("", "Child frame of odom (before frame_prefix); empty = the vehicle file's base_link, else the "
                  "URDF root, else 'base_link'."),
    "world_frame": ("world", "Frame of odom's pose: PX4's local NED origin turned z-up (ENU); not prefixed."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: odom's child frame."),
    "px4_mode": ("thrust_and_torque", "PX4 offboard mode: thrust_and_torque (normalised body thrust and torque "
                 "through PX4's allocator) or direct_actuator (ActuatorMotors, PX4's allocator off)."),
    "proof_of_life_rate_hz": (10.0, "Rate of /fmu/in/offboard_control_mode while the commands are fresh [Hz, node "
                              "clock]; PX4 requires at least 2 Hz (docs.px4.io, Offboard mode), 10 Hz is the rate "
                              "of PX4's ROS 2 offboard example and gives 10 messages per COM_OF_LOSS_T (1 s)."),
    "command_timeout": (0.5, "No cmd/rotor_speeds for this long [s, node clock]: the proof of life and setpoints "
                        "stop, so PX4's own offboard-loss failsafe acts COM_OF_LOSS_T (default 1 s) later; 0.5 s "
                        "keeps that total at 1.5 s and is 50 periods of a 100 Hz controller."),
    "offboard_warmup": (1.0, "The proof of life must have streamed this long [s] before ~/offboard is sent (PX4 "
                        "refuses offboard without one; its ROS 2 example streams 1 s, 10 messages, first)."),
    "action_timeout": (2.0, "An action not confirmed by vehicle_status within this long [s] is logged as not "
                       "confirmed (PX4's commander answers within one of its 100 Hz cycles plus the link)."),
    "arm_and_offboard_on_start": (False, "Once the proof of life has streamed offboard_warmup: switch to offboard, "
                                  "then arm, each logged (default false: only through ~/arm and ~/offboard)."),
    "stamp_window": (1.0, "Window [s] of the time rule: the second smallest receive time - timestamp_sample over "
                     "this window and the previous one maps PX4 times to ROS time (doc/reference/px4_bridge.md, "
                     "'The rule'); short, because PX4 SITL's SIH clock runs 1.2 % slow: the error is the drift over "
                     "two windows, 24 ms there."),
    "qos_depth": (5, "Keep-last depth of the subscriptions (5: ROS's sensor-data profile, PX4's ROS 2 examples)."),
    "odometry_topic": ("/fmu/out/vehicle_odometry", "PX4's VehicleOdometry (version 0: no suffix; "
                       "dds_topics.yaml, PX4 1.16)."),
    "status_topic": ("/fmu/out/vehicle_status_v1", "PX4's VehicleStatus (MESSAGE_VERSION 1 in px4_msgs 1.16.0: "
                     "suffix _v1; before PX4 1.16: /fmu/out/vehicle_status)."),
    "offboard_control_mode_topic": ("/fmu/in/offboard_control_mode", "PX4's OffboardControlMode (dds_topics.yaml)."),
    "vehicle_command_topic": ("/fmu/in/vehicle_command", "PX4's VehicleCommand (dds_topics.yaml)."),
    "thrust_setpoint_topic": ("/fmu/in/vehicle_thrust_setpoint", "PX4's VehicleThrustSetpoint (dds_topics.yaml)."),
    "torque_setpoint_topic": ("/fmu/in/vehicle_torque_setpoint", "PX4's VehicleTorqueSetpoint (dds_topics.yaml)."),
    "actuator_motors_topic": ("/fmu/in/actuator_motors", "PX4's ActuatorMotors (dds_topics.yaml)."),
}


def _positive(p, name) -> float:
    v = p[name]
    if not (math.isfinite(v) and v > 0):
        raise ConfigurationError(f"parameter '{name}': expected a finite value > 0, got {v!r}")
    return v


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


class Px4BridgeNode(Node):
    """See the module docstring."""

    def __init__(self, node_name: str = "geodyn_px4_bridge", **kwargs):
        super().__init__(node_name, **kwargs)
        trigger = _trigger_type()      # before anything else: one line saying what to install
        p = declare_parameters(self, PARAMETERS)
        self._p = p
        self.frame_prefix = check_frame_prefix(p["frame_prefix"])
        self.world_frame = p["world_frame"]
        for k in ("proof_of_life_rate_hz", "command_timeout", "offboard_warmup", "action_timeout", "stamp_window"):
            _positive(p, k)
        if p["proof_of_life_rate_hz"] < 2.0:
            raise ConfigurationError(f"parameter 'proof_of_life_rate_hz': {p['proof_of_life_rate_hz']:g} Hz is below "
                                     "the 2 Hz PX4 requires for offboard; give at least 2")
        if p["px4_mode"] not in MODES:
            raise ConfigurationError(f"parameter 'px4_mode': must be one of {', '.join(MODES)}, got {p['px4_mode']!r}")
        if p["qos_depth"] < 1:
            raise ConfigurationError(f"parameter 'qos_depth': must be >= 1, got {p['qos_depth']}")
        self.mode = p["px4_mode"]
        self._configure_vehicle(p)
        self.mapper = StampMapper(_ns(p["stamp_window"]))
        self._reset_counter = None     # VehicleOdometry.reset_counter of the previous accepted sample
        self.protocol = OffboardProtocol(_ns(p["command_timeout"]), _ns(p["offboard_warmup"]), _ns(p["action_timeout"]))
        self.auto_stage = 0 if p["arm_and_offboard_on_start"] else None
        self.last_setpoints = None     # (torque, thrust) or the ActuatorMotors controls last sent (tests)
        self.counts = {"odom": 0, "setpoints": 0, "proof_of_life": 0, "commands": 0, "desaturated": 0, "clipped": 0,
                       "status_changes": 0}
        self._last_command = {}        # action -> steady time [s] of its last command sent
        self._status_window = None     # (start [s, steady], changes held back, the latest line) of STATUS_PERIOD

        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: px4 bridge", self.hardware_id)
        self.diag.notes.update({"px4_mode": self.mode, "px4": "no vehicle_status yet", "proof_of_life": "stopped",
                                "thr_mdl_fac": f"{self.vehicle.px4.thr_mdl_fac:g} (PX4's THR_MDL_FAC must be this)"})
        px4_in = control_qos(p["qos_depth"], "best_effort")
        out = control_qos(p["qos_depth"])
        self.odom_pub = self.create_publisher(Odometry, "odom", control_qos(10))
        self.mode_pub = self.create_publisher(OffboardControlMode, p["offboard_control_mode_topic"], out)
        self.command_pub = self.create_publisher(VehicleCommand, p["vehicle_command_topic"], out)
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import Bool
        self.armed_pub = self.create_publisher(Bool, "armed", QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._armed_msg, self._armed = Bool(), None
        self._publish_armed(False)
        if self.mode == "thrust_and_torque":
            self.thrust_pub = self.create_publisher(VehicleThrustSetpoint, p["thrust_setpoint_topic"], out)
            self.torque_pub = self.create_publisher(VehicleTorqueSetpoint, p["torque_setpoint_topic"], out)
        else:
            self.motors_pub = self.create_publisher(ActuatorMotors, p["actuator_motors_topic"], out)
        for msg_type, topic, fn in ((VehicleOdometry, p["odometry_topic"], self._on_odometry),
                                    (VehicleStatus, p["status_topic"], self._on_status),
                                    (require_actuator_msgs(), "cmd/rotor_speeds", self._on_rotor_speeds)):
            self.create_subscription(msg_type, topic, guard(self, self._checked(topic, fn), topic), px4_in)
        for action in ("arm", "disarm", "offboard"):
            self.create_service(trigger, f"~/{action}", guard(self, self._service(action), f"~/{action}"))
        self.create_timer(1.0 / p["proof_of_life_rate_hz"], guard(self, self._on_timer, "proof-of-life timer"))
        self.create_timer(0.1, guard(self, self._flush_status, "status summary timer"),
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        guard_time_source(self)
        self.get_logger().info(
            f"PX4 bridge: {self.mode}, {self.n} rotors from {self.vehicle.source_path} (PX4 must have THR_MDL_FAC "
            f"{self.vehicle.px4.thr_mdl_fac:g}, MC_AIRMODE {self.vehicle.px4.mc_airmode} and the CA_ROTORn_* of this "
            f"file; its float32 mix replays within {self.mix_accuracy:.2g} of full thrust); arming and offboard only on "
            "request" +
            (" and arm_and_offboard_on_start" if self.auto_stage is not None else ""))

    # ------------------------------------------------------------------ the vehicle
    def _configure_vehicle(self, p) -> None:
        from ...vehicle import load_vehicle
        path = p["actuation_config"]
        if not path:
            raise ConfigurationError("parameter 'actuation_config': empty; give the vehicle file (with its px4: "
                                     "section, doc/reference/vehicle_file.md)")
        try:
            cfg = load_vehicle(path)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {exc}") from None
        if cfg.px4 is None:     # before the model is loaded: one line
            raise ConfigurationError(f"{cfg.source_path}: px4: missing; the PX4 bridge needs the vehicle's PX4 "
                                     "section: add 'px4: {thr_mdl_fac: <THR_MDL_FAC of your motors>}' "
                                     "(doc/reference/vehicle_file.md, 'px4')")
        source = model_source(p)
        model = None
        if cfg.rotor_geometry != "list" or not (p["base_link"] or cfg.base_link):
            if source is None:
                if cfg.rotor_geometry != "list":
                    raise ConfigurationError(f"parameter 'urdf_path': {cfg.source_path} takes its rotors from the URDF "
                                             f"({cfg.rotor_geometry}); give urdf_path or robot_description")
            else:
                try:
                    model = cfg.load_model(source[0])
                except ValueError as exc:
                    raise ConfigurationError(f"parameter '{source[1].split()[0]}': {exc}") from None
        names, frames = cfg.rotor_frames(model)
        self.n = len(names)
        if self.mode == "direct_actuator" and self.n > MAX_CONTROLS:
            raise ConfigurationError(f"parameter 'actuation_config': {self.n} rotors; ActuatorMotors carries at "
                                     f"most {MAX_CONTROLS}")
        try:
            px4 = px4_vehicle(cfg, frames)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {exc}") from None
        self.allocator, self.omega_max = px4.allocator, px4.omega_max
        self.mix_accuracy = float32_accuracy(rotor_effectiveness(**px4.ca_rotor))     # (for the start-up line)
        self.vehicle = cfg
        self.hardware_id = model.name if model is not None else str(cfg.source_path.stem)
        base = p["base_link"] or cfg.base_link or (model.base_link if model is not None else "base_link")
        self.child_frame = self.frame_prefix + base

    # ------------------------------------------------------------------ inputs
    def _now(self) -> int:
        return self.get_clock().now().nanoseconds

    def _checked(self, topic, fn):
        def callback(msg):
            try:
                fn(msg)
            except InputError as exc:
                self.diag.problem(topic, str(exc))
        return callback

    def _on_odometry(self, msg) -> None:
        sample_us, C, w_b, v_b = odometry_state(msg)
        counter, last = int(msg.reset_counter), self._reset_counter
        jumped = last is not None and counter != last
        resets = self.mapper.resets
        stamp = self.mapper(sample_us, self._now(), reference=not jumped)
        self._reset_counter = counter
        if self.mapper.resets != resets:
            self.diag.report(DiagnosticStatus.WARN, f"vehicle_odometry: {self.mapper.resync} samples in a row on "
                             "another clock (PX4 restarted, or its time sync or the node's clock stepped): the time "
                             "rule restarted from them")
        if jumped:
            what = "PX4's estimator reset its state" if (counter - last) % 256 == 1 else "a jump"
            self.diag.report(DiagnosticStatus.WARN, f"vehicle_odometry: reset_counter {last} -> {counter} ({what}: the "
                             "pose or velocity may step); forwarded, not used for the time rule")
        self.odom_pub.publish(odometry_msg(stamp, C, w_b, v_b, self.world_frame, self.child_frame))
        self.counts["odom"] += 1
        self.diag.ok()
        self.diag.clear()

    def _on_status(self, msg) -> None:
        arming = int(msg.arming_state)
        if arming not in (1, 2):
            raise InputError(f"vehicle_status: arming_state {arming} is neither DISARMED (1) nor ARMED (2)")
        lines = self.protocol.on_status(arming, int(msg.nav_state), bool(msg.failsafe), int(msg.system_id),
                                        int(msg.component_id))
        self.diag.notes["px4"] = self.protocol.describe()
        self._publish_armed(arming == ARMED and int(msg.nav_state) == NAV_OFFBOARD)
        for line in lines:
            if line.startswith("PX4: "):
                self._status_line(line)
            else:                       # an action's result: on the record, like the action
                self._record(line)

    def _publish_armed(self, flag: bool) -> None:
        """``armed``: PX4 applies the commands (armed, offboard); published when it changes."""
        if flag != self._armed:
            self._armed = self._armed_msg.data = bool(flag)
            self.armed_pub.publish(self._armed_msg)

    def _status_line(self, line: str) -> None:
        """A change of PX4's status: said at once when nothing was said for STATUS_PERIOD, else
        held; the changes held are said in one line (how many, the latest) when the period ends
        (:meth:`_flush_status`). At most one status line per STATUS_PERIOD after the first."""
        self.counts["status_changes"] += 1
        now = time.monotonic()
        w = self._status_window
        if w is None or (now - w[0] >= STATUS_PERIOD and not w[1]):
            self._status_window = (now, 0, line)
            self._say(line)
        else:
            self._status_window = (w[0], w[1] + 1, line)
            self._flush_status()

    def _flush_status(self) -> None:
        """Say the status changes held once their STATUS_PERIOD is over (also a steady timer's)."""
        w = self._status_window
        now = time.monotonic()
        if w is not None and w[1] and now - w[0] >= STATUS_PERIOD:
            self._status_window = (now, 0, w[2])
            self._say(f"{w[2]} (the latest of {w[1]} status changes in {now - w[0]:.1f} s)")

    def _on_rotor_speeds(self, msg) -> None:
        omega = rotor_speeds(msg, self.n, self.omega_max)
        u = speed_to_command(omega, self.omega_max)
        if self.mode == "thrust_and_torque":
            c, clipped, desaturated, _ = torque_thrust_setpoints(self.allocator, u)
            if clipped:
                self.counts["clipped"] += 1
                self.diag.notes["clipped"] = f"{self.counts['clipped']} setpoints had a component beyond [-1, 1]"
            if desaturated:
                self.counts["desaturated"] += 1
                self.diag.notes["desaturated"] = (f"{self.counts['desaturated']} setpoints PX4 will desaturate "
                                                  "(its motor outputs differ from the commanded speeds)")
            # thrust first: PX4's allocator runs when a torque setpoint arrives, with the thrust it has
            # then (ControlAllocator::Run, "Run allocator on torque changes"), as PX4's own rate
            # controller publishes them (MulticopterRateControl::Run: thrust, then torque)
            self.thrust_pub.publish(VehicleThrustSetpoint(xyz=[float(x) for x in c[3:]]))
            self.torque_pub.publish(VehicleTorqueSetpoint(xyz=[float(x) for x in c[:3]]))
            self.last_setpoints = c
        else:
            control = np.full(MAX_CONTROLS, np.nan)
            control[:self.n] = u
            self.motors_pub.publish(ActuatorMotors(control=[float(x) for x in control]))
            self.last_setpoints = control
        self.counts["setpoints"] += 1
        for line in self.protocol.command(self._now()):
            self._say(line)
            self.diag.notes["proof_of_life"] = "streaming"
            self._send_proof_of_life()

    # ------------------------------------------------------------------ the protocol
    def _say(self, line: str, level=DiagnosticStatus.OK) -> None:
        """One line to the log and ``/diagnostics``."""
        self.diag.report(level, line)

    def _send_proof_of_life(self) -> None:
        m = OffboardControlMode()
        setattr(m, self.mode, True)
        self.mode_pub.publish(m)
        self.counts["proof_of_life"] += 1

    def _on_timer(self) -> None:
        now = self._now()
        for line in self.protocol.tick(now):
            if "confirmed" in line:     # an action's result: on the record, like the action
                self._record(line, level=DiagnosticStatus.WARN)
            else:
                self._say(line, DiagnosticStatus.WARN)
        self.diag.notes["proof_of_life"] = "streaming" if self.protocol.streaming else "stopped"
        if self.protocol.streaming:
            self._send_proof_of_life()
        if self.auto_stage is not None:
            self._auto(now)

    def _auto(self, now: int) -> None:
        """``arm_and_offboard_on_start``: offboard once the proof of life has streamed
        ``offboard_warmup``, then arm once PX4 reports offboard; each step once."""
        pr = self.protocol
        if self.auto_stage == 0 and pr.status is not None and (pr.streamed_for(now) or 0) >= pr.warmup_ns:
            self.auto_stage = 1
            self.request("offboard", "arm_and_offboard_on_start")
        elif self.auto_stage == 1 and pr.offboard:
            self.auto_stage = 2
            self.request("arm", "arm_and_offboard_on_start")
        elif self.auto_stage == 1 and "offboard" not in pr.pending and not pr.offboard:
            self.auto_stage = 2
            self._say("arm_and_offboard_on_start: offboard not confirmed, so not arming", DiagnosticStatus.WARN)

    def request(self, action: str, by: str = "request") -> tuple:
        """Send ``action`` (``arm``, ``disarm``, ``offboard``) if the protocol allows it:
        ``(sent, the line logged)``. A command sent is on the record (:meth:`_record`); a refusal
        is said through the rate-limited diagnostics."""
        now = time.monotonic()
        last = self._last_command.get(action)
        if last is not None and now - last < COMMAND_INTERVAL:
            result = (f"{action} refused: the previous {action} command was sent {now - last:.3f} s ago (at most one "
                      f"every {COMMAND_INTERVAL:g} s)")
        else:
            result = self.protocol.request(action, self._now())
        if isinstance(result, str):
            line = f"{result} ({by})"
            self._say(line, DiagnosticStatus.WARN)
            return False, line
        command, p1, p2, sysid, compid = result
        m = VehicleCommand(command=command, param1=p1, param2=p2, target_system=sysid, target_component=compid,
                           source_system=1, source_component=1, from_external=True)
        self.command_pub.publish(m)
        self._last_command[action] = now
        self.counts["commands"] += 1
        name = {400: "VEHICLE_CMD_COMPONENT_ARM_DISARM", 176: "VEHICLE_CMD_DO_SET_MODE"}[command]
        line = (f"{action}: sent {name} param1={p1:g} param2={p2:g} to system {sysid} component {compid} ({by}); "
                f"now {self.protocol.describe()}")
        self._record(line, {"action": action, "command": str(command), "param1": f"{p1:g}", "param2": f"{p2:g}",
                            "target_system": str(sysid), "target_component": str(compid), "by": by})
        return True, line

    def _record(self, line: str, values=None, level=DiagnosticStatus.OK) -> None:
        """A command sent to PX4, or its result: its own log line and its own ``/diagnostics``
        status, outside the reporter's rate limits and log budget (which status lines and bad
        input share). Bounded all the same: at most one command per action every
        COMMAND_INTERVAL, and at most one result per command."""
        if level == DiagnosticStatus.OK:
            self.get_logger().info(line)
        else:
            self.get_logger().warning(line)
        st = DiagnosticStatus(level=level, name=f"{self.diag.name}: commands", message=line,
                              hardware_id=self.diag.hardware_id)
        st.values = [KeyValue(key=k, value=v) for k, v in (values or {}).items()] + \
            [KeyValue(key="commands_sent", value=str(self.counts["commands"]))]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.diag.pub.publish(arr)

    def _service(self, action):
        def call(request, response):
            response.success, response.message = self.request(action, f"service ~/{action}")
            return response
        return call


def main(args=None) -> int:
    """Console script ``geodyn_px4_bridge``."""
    return run_nodes([Px4BridgeNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
