"""``geodyn_reference``: publishes a reference trajectory with exact derivatives.

``trajectory: table3`` (default; a fully actuated base): topic ``reference``
(``geodyn_msgs/ReferenceJet``, :mod:`geodyn_ros.ros.wire.typed`): base pose, spatial twist
jet ``V^(0..order+2)`` and joint jets ``q^(0..order+2)`` of
:func:`geodyn_ros.trajectories.table3_reference` at trajectory time ``t - start_time`` (clamped at
0 before the start), stamped with ``t``.

``trajectory: figure_eight`` (an under-actuated, collinear multirotor): topic ``flat_reference``
(``geodyn_msgs/FlatReference``): the flat outputs of
:func:`geodyn_ros.trajectories.figure_eight_reference` -- system CoM, Z-Y-X base yaw and joints --
with rows ``0..order+4`` (what ``geodyn_node`` in ``input_mode: flat`` of order ``order`` reads), at
trajectory time ``speed (t - start_time)`` (not clamped: the formulas hold before the start too).

``trajectory: waypoints`` (an under-actuated, collinear multirotor): topic ``flat_reference``, the
same layout and rows as ``figure_eight``, along a planned mission
(:func:`geodyn_ros.planning.plan_mission`: minimum-snap CoM, minimum-jerk yaw and joints, ``C^6`` /
``C^4`` at ``order`` 2), and ``planned_path`` (``nav_msgs/Path``, frame ``world_frame``, reliable and
transient local: the planned CoM from the switch to the end, for RViz). Missions come from

* the file ``mission`` (YAML, schema in :mod:`geodyn_ros.planning.mission`), planned at start-up
  from its first waypoint at rest, starting at ``start_time`` or at the node's start if later;
* the topic pair ``mission/com_yaw`` (``trajectory_msgs/MultiDOFJointTrajectory``: CoM and yaw)
  and ``mission/joints`` (``trajectory_msgs/JointTrajectory``: the arm), decoded by
  :func:`geodyn_ros.ros.nodes.mission.mission_from_messages`. **Pairing:** two messages with the same
  non-zero ``header.stamp`` are one mission; a message with stamp 0, or one whose partner has not
  come when the node's clock reaches its stamp, is a mission alone (the other outputs hold their
  current values). **Start:** a mission starts at its stamp (0: at once), or at once if that is
  past; its ``time_from_start`` count from there.

**Replanning.** A mission that arrives while a plan flies replans from the current reference
state at its start time ``t_s`` (:meth:`geodyn_ros.planning.mission.Mission.plan`): the first
waypoint is replaced by the running jets at ``t_s``, and the derivatives ``1..k-1`` of the new plan
start at theirs, so the published jets are continuous at the switch up to derivative ``k-1`` (CoM
to jerk, yaw and joints to acceleration; the higher rows jump, as at any plan's start).

**Off the publishing path.** Topic missions are decoded, planned and checked in a worker process
(:mod:`geodyn_ros.ros.nodes.replanning`); the node reads only their header stamps and keeps
publishing the plan in use, whatever the planning costs (a replan storm, 10,000 waypoints). On the
wall clock a mission asked for "now" switches in after a planning lead (at least 50 ms: twice the
planning time predicted from the last plans); missions that come faster than they are planned are
coalesced, the newest winning (``missions_coalesced`` on ``/diagnostics``). With ``use_sim_time``
every mission is planned in arrival order and the ``/clock`` at its switch waits for it (the same
plans as planning on the spot). A mission is refused in one line, and the plan in use kept, for a
message over 8 MiB, more than 10,000 points, a length over a day, a CoM waypoint beyond
``max_position`` or a planned CoM speed beyond ``max_speed``, bytes that do not decode, or any
planning failure. ``planned_path`` (at most 2,000 poses) and the status describe the plan flying:
both change when a plan switches in, not when it is accepted.

**Feasibility.** With ``actuation_config`` and a robot (``urdf_path`` or ``robot_description``)
every mission is checked on the whole body (:func:`geodyn_ros.planning.check_feasibility` on
:meth:`geodyn_ros.planning.Vehicle.from_files`: every limit of the vehicle file, i.e. rotor speeds,
rotor lag, elastic motor torques and rigid joint torques). A worst margin below ``min_margin`` refuses it: one log
line, a WARN on ``/diagnostics`` with the margin, where and which limit, and the last feasible plan
keeps flying (the file's mission at start-up: the node does not start); with ``slow_down`` it is
slowed down instead to the fastest uniform timing that keeps ``min_margin``
(:func:`geodyn_ros.planning.mission.slow_down`, re-planned from the same start state, so the
switch stays continuous). An accepted mission is
reported as an OK status with its margin. The last of these events is repeated every
``diagnostics_period`` (wall clock), so a late ``/diagnostics`` listener sees it. Without
``actuation_config`` nothing is checked.

With ``use_sim_time`` the node publishes one sample for every new simulated time it receives on
``/clock`` (so a lock-step simulator gets a reference for each of its steps); otherwise it
publishes at ``rate_hz`` on the wall clock. In ``waypoints`` mode nothing is published before the
first mission starts.

**Message types** (``message_types``, :mod:`geodyn_ros.ros.common.message_types`): ``typed``
(default) publishes ``ReferenceJet`` / ``FlatReference`` with ``header.frame_id`` = ``world_frame``,
``child_frame_id`` empty (this node knows no robot's base link and frame prefix; the consumers
accept an empty one) and ``representation`` ``spatial``; ``multiarray`` (deprecated) the
``std_msgs/Float64MultiArray`` layouts of :mod:`geodyn_ros.ros.wire.jets` (reference jet,
flat-reference jet), with the same rows.
"""
from __future__ import annotations

import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Path
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

from geodyn_ros.trajectories import (TABLE3_JOINT_NAMES, figure_eight_reference, start_ramp, table3_reference, warp_jet,
                                     warp_twist_jet)

from ..wire.conversions import stamp_to_ns
from ..common.diagnostics import DiagnosticsReporter, guard, guard_time_source
from ..wire.jets import make_flat_reference_msg, make_reference_msg
from ..wire.typed import make_flat_reference, make_reference_jet
from ..common.message_types import MESSAGE_TYPES_PARAMETER, MessageTypes
from .replanning import PlannerConfig, Replanner, _check_kinematics, _path_bytes, check_bounds, header_stamp_ns
from ..common.params import ConfigurationError, declare_parameters, model_source
from ..common.runtime import control_qos, run_nodes

__all__ = ["PARAMETERS", "ReferenceNode", "main"]

TRAJECTORIES = ("table3", "figure_eight", "waypoints", "vehicle")
#: [s] lock-step (use_sim_time): the longest a /clock waits for a mission switching in by then
LOCKSTEP_PLAN_TIMEOUT_S = 120.0
#: missions held while waiting for their partner message (older ones are dropped)
MAX_PENDING = 8

PARAMETERS = {
    "trajectory": ("table3", "Trajectory to publish: 'table3' (paper Sec. 7, Table 3; topic reference), "
                   "'figure_eight' (flat outputs of the under-actuated vehicle: CoM figure eight, yaw sweep, "
                   "swinging arms; topic flat_reference) or 'waypoints' (planned missions from the file "
                   "'mission' and the topics mission/com_yaw, mission/joints; topics flat_reference, "
                   "planned_path) or 'vehicle' (a user's vehicle: vehicle_reference for the robot and the "
                   "actuation_config vehicle file; topic flat_reference at allocation rank 4, reference at rank 6)."),
    "vehicle_reference": ("figure8", "vehicle: 'figure8', 'hover' or a mission YAML file, scaled to the vehicle "
                          "(geodyn_ros.loops.fly_references, the references of geodyn_fly)."),
    "order": (2, "Dynamics order r of the consumers: table3 publishes V^(0..r+2), q^(0..r+2); figure_eight "
              "rows 0..r+4 of the CoM, yaw and joints."),
    "speed": (1.0, "figure_eight: time scaling of the reference (2 = twice as fast); table3 ignores it."),
    "rate_hz": (1000.0, "Publication rate on the wall clock (ignored with use_sim_time)."),
    "start_time": (0.0, "Node-clock time [s] at which the trajectory time is 0 (with start_topic: the delay [s] "
                   "after the start message)."),
    "start_topic": ("", "Empty: start at start_time. Else a std_msgs/String topic: the trajectory waits at its "
                    "time 0 until a message on it reads start_value, and starts start_time seconds after it "
                    "(the Gazebo launch files: the release of the start hold, gz-sim's DetachableJoint state)."),
    "start_value": ("detached", "start_topic: the text of the message that starts the trajectory."),
    "start_ramp": (3.0, "start_topic: seconds over which the trajectory speeds up from rest after the start "
                   "(a time warp exact in every derivative, geodyn_ros.trajectories.start_ramp: at rest at its "
                   "start point while waiting, full speed after start_ramp, then start_ramp/2 late); 0 = "
                   "start at full speed (a step in velocity; held, a moving reference winds the loops up)."),
    "world_frame": ("world", "Frame of the published base pose (typed: header.frame_id of reference / "
                    "flat_reference)."),
    "qos_depth": (2, "Keep-last depth of the reference topic."),
    "mission": ("", "waypoints: mission YAML file (schema: geodyn_ros.planning.mission) flown from start_time; "
                "empty: missions from the topics only."),
    "urdf_path": ("", "waypoints: robot (.urdf/.xacro) of the feasibility check, with actuation_config."),
    "robot_description": ("", "waypoints: robot URDF XML of the feasibility check (instead of urdf_path)."),
    "actuation_config": ("", "waypoints: vehicle file (or a shipped name) of the feasibility check, which checks "
                         "every limit it gives (rotor speeds and lag, joint and motor torques); empty: missions are "
                         "not checked."),
    "min_margin": (0.0, "waypoints: a mission whose whole-body worst margin is below this (dimensionless, a "
                   "fraction of each limit's range) is refused."),
    "slow_down": (False, "waypoints: a mission below min_margin is slowed down uniformly to the fastest timing "
                  "that keeps it (re-planned from the same start state) instead of refused."),
    "path_dt": (0.05, "waypoints: time step [s] between the poses of planned_path (larger for long plans: at most "
                "2000 poses)."),
    "max_position": (1e6, "waypoints: a mission whose CoM waypoints or plan go farther than this from the origin [m] "
                     "is refused (geodyn_node's plausibility limit of the same name)."),
    "max_speed": (1e3, "waypoints: a mission whose planned CoM speed exceeds this [m/s] is refused (geodyn_node's "
                  "plausibility limit of the same name)."),
    "diagnostics_period": (1.0, "waypoints: wall-clock period [s] of the /diagnostics status (the last mission "
                           "event: waiting, accepted or refused, with the worst margin)."),
    **MESSAGE_TYPES_PARAMETER,
}


class ReferenceNode(Node):
    """Reference generator: Table 3, the flat figure eight or planned missions (see the module docstring)."""

    def __init__(self, node_name: str = "geodyn_reference", **kwargs):
        super().__init__(node_name, **kwargs)
        p = declare_parameters(self, PARAMETERS)
        if p["trajectory"] not in TRAJECTORIES:
            raise ConfigurationError(f"parameter 'trajectory': must be one of {TRAJECTORIES}, got "
                                     f"'{p['trajectory']}'")
        if not (p["speed"] > 0 and p["speed"] < float("inf")):
            raise ConfigurationError(f"parameter 'speed': must be a finite number > 0, got {p['speed']}")
        if not (0.0 <= p["start_ramp"] < float("inf")):
            raise ConfigurationError(f"parameter 'start_ramp': must be a finite number >= 0 [s], got {p['start_ramp']}")
        self.flat = p["trajectory"] in ("figure_eight", "waypoints")
        self.waypoints = p["trajectory"] == "waypoints"
        self._vehicle_ref = None
        if p["trajectory"] == "vehicle":   # geodyn_fly's reference for this vehicle (rank 4: flat outputs)
            from geodyn_ros.loops.fly import prepare
            src = model_source(p)
            if src is None or not p["actuation_config"]:
                raise ConfigurationError("parameter 'trajectory': 'vehicle' needs actuation_config (the vehicle file) "
                                         "and urdf_path or robot_description")
            try:
                prep = prepare(src[0], p["actuation_config"], reference=p["vehicle_reference"],
                               hint="fly it slower with trajectory:=waypoints mission:=<file> slow_down:=true")
                self._vehicle_ref, rank = prep["reference"], prep["rank"]
                self.joint_names = tuple(prep["model"].joint_names)
            except ValueError as exc:
                raise ConfigurationError(f"parameter 'vehicle_reference': {str(exc).splitlines()[0]}") from None
            self.flat = rank == 4
        self.speed = float(p["speed"])
        if p["order"] < 0:
            raise ConfigurationError(f"parameter 'order': must be >= 0, got {p['order']}")
        if not p["rate_hz"] > 0:
            raise ConfigurationError(f"parameter 'rate_hz': must be > 0, got {p['rate_hz']}")
        self.order = p["order"]
        self.start_ns = int(round(p["start_time"] * 1e9))
        self._start_delay_ns, self._waiting_start = self.start_ns, bool(p["start_topic"])
        #: the start ramp [s] (start_topic only; 0: none, the jets as they are)
        self._ramp_s = float(p["start_ramp"]) if p["start_topic"] else 0.0
        if self._waiting_start:
            if self.waypoints:
                raise ConfigurationError("parameter 'start_topic': not with trajectory 'waypoints' (a mission sets "
                                         "its own start)")
            from std_msgs.msg import String
            self._start_value = str(p["start_value"])
            self.create_subscription(String, p["start_topic"], guard(self, self._on_start, p["start_topic"]),
                                     control_qos(10))
        self.types = MessageTypes(self, p["message_types"])
        self.frame = p["world_frame"]
        kind = "flat_reference" if self.flat else "reference"
        self._msg = self.types.type_of(kind)()   # one message, reused
        self.pub = self.create_publisher(self.types.type_of(kind), kind, control_qos(p["qos_depth"]))
        if self.waypoints:
            self._setup_waypoints(p)
        if self.get_parameter("use_sim_time").value:
            self.create_subscription(ClockMsg, "/clock", guard(self, self._on_clock, "/clock"), control_qos(10))
        else:
            self.create_timer(1.0 / p["rate_hz"], guard(self, self._on_timer, "publish timer"))
        guard_time_source(self)

    # ------------------------------------------------------------------ waypoints mode
    def _setup_waypoints(self, p) -> None:
        from geodyn_ros.planning import Vehicle
        if not (math.isfinite(p["path_dt"]) and p["path_dt"] > 0):
            raise ConfigurationError(f"parameter 'path_dt': must be a finite number > 0, got {p['path_dt']}")
        if not math.isfinite(p["min_margin"]) or p["min_margin"] >= 1.0:
            raise ConfigurationError(f"parameter 'min_margin': must be a finite number < 1, got {p['min_margin']}")
        for name in ("max_position", "max_speed"):
            if not (math.isfinite(p[name]) and p[name] > 0):
                raise ConfigurationError(f"parameter '{name}': must be a finite number > 0, got {p[name]}")
        self.world_frame, self.path_dt, self.min_margin = p["world_frame"], p["path_dt"], p["min_margin"]
        self.slow_down = bool(p["slow_down"])
        self.vehicle = None
        src = model_source(p)
        if p["actuation_config"]:
            if src is None:
                raise ConfigurationError("parameter 'actuation_config': the feasibility check also needs urdf_path or "
                                         "robot_description")
            try:
                self.vehicle = Vehicle.from_files(src[0], p["actuation_config"])
            except ValueError as exc:
                raise ConfigurationError(f"parameter 'actuation_config': {str(exc).splitlines()[0]}") from None
        self.joint_names = tuple(self.vehicle.model.joint_names) if self.vehicle is not None else None
        self.plans = []           # [(t_switch_ns, FlatTrajectory)], the last one with t_switch <= t flies
        self._paths = {}          # id(plan) -> serialized planned_path, published when the plan switches in
        self._flying = None       # the plan whose path and status were last published
        self._pending = {}        # stamp_ns -> {"com_yaw": raw bytes, "joints": raw bytes}
        self.refused = 0
        self._cfg = PlannerConfig(self.order, self.world_frame, float(p["path_dt"]), float(p["min_margin"]),
                                  self.slow_down, float(p["max_position"]), float(p["max_speed"]),
                                  (src[0], p["actuation_config"]) if self.vehicle is not None else None)
        self.lockstep = bool(self.get_parameter("use_sim_time").value)
        self.replanner = None     # the worker process, started once the configuration is accepted
        if not (math.isfinite(p["diagnostics_period"]) and p["diagnostics_period"] > 0):
            raise ConfigurationError(f"parameter 'diagnostics_period': must be a finite number > 0, got "
                                     f"{p['diagnostics_period']}")
        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: mission")
        self._event = (DiagnosticStatus.OK, "waiting for a mission (file parameter mission, or the topics "
                       "mission/com_yaw and mission/joints)")
        from rclpy.clock import Clock, ClockType
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(p["diagnostics_period"], guard(self, self._status, "diagnostics timer"), clock=steady)
        # results of the worker are taken in also when no sample is due (a paused simulation)
        self.create_timer(0.01, guard(self, lambda: self._take_plans(self.get_clock().now().nanoseconds)
                                      if self.replanner is not None else None, "planner results"), clock=steady)
        latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_path = self.create_publisher(Path, "planned_path", latched)
        if p["mission"]:
            from geodyn_ros.planning.mission import load_mission
            try:
                mission = load_mission(p["mission"])
            except ValueError as exc:
                raise ConfigurationError(f"parameter 'mission': {str(exc).splitlines()[0]}") from None
            start_ns = max(self.start_ns, self.get_clock().now().nanoseconds)
            reason = self._fly(mission, start_ns)
            if reason:
                raise ConfigurationError(f"parameter 'mission': {reason}")
        qos = control_qos(10)
        self.replanner = Replanner(self._cfg, lockstep=self.lockstep)
        # raw: the node reads only the header stamp (O(1)); the worker decodes and plans
        self.create_subscription(MultiDOFJointTrajectory, "mission/com_yaw",
                                 guard(self, lambda m: self._on_part("com_yaw", m), "mission/com_yaw"), qos, raw=True)
        self.create_subscription(JointTrajectory, "mission/joints",
                                 guard(self, lambda m: self._on_part("joints", m), "mission/joints"), qos, raw=True)

    def _active(self, t_ns: int):
        for ts, traj in reversed(self.plans):
            if ts <= t_ns:
                return traj
        return None

    def _fly(self, mission, t_ns: int) -> str:
        """Plan ``mission`` from ``t_ns`` (from the plan flying then, if any), check it and install
        it; return '' or the reason of a refusal (also reported: one log line and /diagnostics)."""
        names = tuple(mission.joint_names)
        if self.joint_names is not None and sorted(names) != sorted(self.joint_names):
            return self._refuse(f"joints {list(names)} are not the plan's joints {list(self.joint_names)}")
        if self.joint_names is not None and names != self.joint_names:      # the plan's column order
            col = [names.index(j) for j in self.joint_names]
            mission.q, mission.joint_names = mission.q[:, col], self.joint_names
        current = self._active(t_ns)
        t_s = t_ns * 1e-9
        try:
            check_bounds(mission, self._cfg)
            traj = mission.plan(t_s, self.order, None if current is None else current(t_s, self.order))
            _check_kinematics(traj, self._cfg)
        except ValueError as exc:
            return self._refuse(str(exc).splitlines()[0])
        note = ""
        if self.vehicle is not None:
            from geodyn_ros.planning import check_feasibility
            try:
                rep = check_feasibility(self.vehicle, traj)
            except ValueError as exc:
                return self._refuse(f"the flat map is undefined along it ({str(exc).splitlines()[0]})")
            self.diag.notes["worst_margin"] = f"{rep.worst:+.4f}"
            self.diag.notes["worst_limit"] = f"{rep.limit} at t = {rep.t_worst:.3f} s"
            if rep.worst < self.min_margin:
                why = (f"worst margin {rep.worst:+.4f} < min_margin {self.min_margin:g} at t = {rep.t_worst:.3f} s "
                       f"({rep.limit})")
                if not self.slow_down:
                    return self._refuse(why)
                from geodyn_ros.planning.mission import slow_down
                found = slow_down(mission, traj, self.vehicle, self.min_margin,
                                  None if current is None else current(t_s, self.order))
                if found is None:
                    return self._refuse(f"{why}, and 1024 times slower too")
                alpha, traj, rep = found
                note = f"; slowed down {alpha!r} times ({why})"
            note += f"; worst margin {rep.worst:+.4f} at t = {rep.t_worst:.3f} s ({rep.limit})"
            self.diag.notes["worst_margin"] = f"{rep.worst:+.4f}"
            self.diag.notes["worst_limit"] = f"{rep.limit} at t = {rep.t_worst:.3f} s"
        self.joint_names = names if self.joint_names is None else self.joint_names
        self._install(t_ns, traj, _path_bytes(traj, t_s, self._cfg), len(traj.times), current is not None, note)
        return ""

    def _install(self, t_ns: int, traj, path: bytes, waypoints: int, replanned: bool, note: str) -> None:
        """Switch ``traj`` in at ``t_ns``: the plans before the switch stay (the one flying now, the
        one before it, and every plan still waiting for its own switch time), later ones are
        replaced. Its path and status go out when it flies.

        (Keeping only the last three before the switch dropped the plan flying *now* when more than
        three accepted plans were waiting for their switch times, as in a storm of replans: the
        stream then stopped until the next switch, up to 0.7 s, measured.)"""
        before = [(ts, tr) for ts, tr in self.plans if ts < t_ns]
        now = self.get_clock().now().nanoseconds
        flying = [i for i, (ts, _) in enumerate(before) if ts <= now]
        self.plans = before[max(flying[-1] - 1, 0) if flying else 0:] + [(t_ns, traj)]
        self._paths = {id(tr): self._paths[id(tr)] for _, tr in self.plans if id(tr) in self._paths}
        self._paths[id(traj)] = (path, f"mission flying: {waypoints} waypoints from t = {t_ns * 1e-9:.3f} s to "
                                 f"{traj.end_time:.3f} s" + (" (replanned from the current reference)" if replanned
                                                              else "") + note)
        self.diag.report(DiagnosticStatus.OK, f"mission accepted: {waypoints} waypoints, switching in at t = "
                         f"{t_ns * 1e-9:.3f} s" + note)

    def _switched(self, t_ns: int) -> None:
        """When another plan flies from ``t_ns`` on: its planned_path and its status."""
        traj = self._active(t_ns)
        if traj is None or traj is self._flying:
            return
        self._flying = traj
        path, summary = self._paths[id(traj)]
        self.pub_path.publish(path)
        self._event = (DiagnosticStatus.OK, summary)
        self.diag.report(*self._event)

    def _status(self) -> None:
        if self.replanner is not None:
            self.diag.notes["missions_coalesced"] = str(self.replanner.coalesced)
            self.diag.notes["missions_planning"] = str(self.replanner.pending)
        self.diag.publish_status(*self._event)

    def _current_at(self, t_ns: int):
        traj = self._active(t_ns)
        return None if traj is None else traj(t_ns * 1e-9, self.order)

    def _take_plans(self, now_ns: int, wait: float = 0.0) -> None:
        """Install the plans the worker accepted and report the ones it refused (module docstring)."""
        for job, res in self.replanner.poll(now_ns, self._current_at, self.joint_names, wait=wait):
            if res[0] == "ok":
                _, _, t_ns, traj, path, note, notes, waypoints, names = res
                self.diag.notes.update(notes)
                self.joint_names = self.joint_names if self.joint_names is not None else names
                self._install(t_ns, traj, path, waypoints, job.current is not None, note)
            else:
                self.diag.notes.update(res[3])
                self._refuse(res[2])

    def _refuse(self, reason: str) -> str:
        self.refused += 1
        self._event = (DiagnosticStatus.WARN, f"mission refused: {reason}" +
                       ("; the last feasible plan keeps flying" if self.plans else ""))
        self.diag.report(*self._event)
        return reason

    def _on_part(self, kind: str, raw: bytes) -> None:
        """A mission message, serialized: only its header stamp is read here (pairing); the worker
        decodes and plans it (:mod:`geodyn_ros.ros.nodes.replanning`)."""
        try:
            stamp = header_stamp_ns(raw, f"mission/{kind}")
        except ValueError as exc:
            self._refuse(str(exc))
            return
        now = self.get_clock().now().nanoseconds
        if stamp == 0:
            self.replanner.submit({kind: raw}, 0, now)
            return
        entry = self._pending.setdefault(stamp, {})
        entry[kind] = raw
        if len(entry) == 2:
            del self._pending[stamp]
            self.replanner.submit(entry, stamp, now)
        while len(self._pending) > MAX_PENDING:
            self._pending.pop(min(self._pending))

    def _due(self, now: int) -> None:
        """Missions alone whose stamp the clock reached (their partner did not come)."""
        for stamp in sorted(s for s in self._pending if s <= now):
            self.replanner.submit(self._pending.pop(stamp), stamp, now)

    def destroy_node(self):
        if getattr(self, "replanner", None) is not None:
            self.replanner.close()
        return super().destroy_node()

    def _flat(self, stamp_ns, com, yaw, q, names):
        """The flat reference message: ``com`` (K+1, 3) [m/s^k] in ``world_frame``, ``yaw`` (K+1,), ``q`` (K+1, m)."""
        if self.types.typed:
            return make_flat_reference(stamp_ns, com, yaw, q, names, frame_id=self.frame, child_frame_id="",
                                       msg=self._msg)
        return make_flat_reference_msg(stamp_ns, com, yaw, q, names, self._msg)

    def _base(self, stamp_ns, pose, twist, q, names):
        """The reference message: ``pose`` (4, 4) in ``world_frame``, spatial ``twist`` (K+1, 6) ``(w, v)``,
        ``q`` (K+1, m)."""
        if self.types.typed:
            return make_reference_jet(stamp_ns, pose, twist, q, names, frame_id=self.frame, child_frame_id="",
                                      representation="spatial", msg=self._msg)
        return make_reference_msg(stamp_ns, pose, twist, q, names, self._msg)

    def sample_msg(self, stamp_ns: int):
        """The reference message for node-clock time ``stamp_ns`` (None: no mission flies yet):
        ``ReferenceJet`` / ``FlatReference`` (typed) or the ``Float64MultiArray`` layout."""
        if self.waypoints:
            traj = self._active(stamp_ns)
            if traj is None:
                return None
            # rows 0..r+4 of every output (the layout's one row count); consumers read the yaw and
            # joints to r+2 only, the rows above are exact within a segment and jump at its knots
            t, K1 = np.array([stamp_ns * 1e-9]), self.order + 5
            q = traj.q.jets(t, K1)[0] if traj.q is not None else np.zeros((K1, 0))
            return self._flat(stamp_ns, traj.com.jets(t, K1)[0], traj.yaw.jets(t, K1)[0, :, 0], q, self.joint_names)
        t = (stamp_ns - self.start_ns) * 1e-9
        tau = start_ramp(t, self._ramp_s, self.order + 5) if self._ramp_s else None
        t = t if tau is None else float(tau[0])
        if self._vehicle_ref is not None:   # the same jets as the in-process loop's reference(t, order)
            if self.flat:
                ref, K1 = self._vehicle_ref(t, self.order + 2), self.order + 5
                return self._flat_ramped(stamp_ns, tau, ref, K1, self.joint_names)
            ref, K1 = self._vehicle_ref(t, self.order + 1), self.order + 3
            return self._base_ramped(stamp_ns, tau, ref, K1, self.joint_names)
        if self.flat:
            ref = figure_eight_reference(t, self.order + 2, speed=self.speed)
            return self._flat_ramped(stamp_ns, tau, ref, self.order + 5, TABLE3_JOINT_NAMES)
        ref = table3_reference(max(0.0, t), self.order + 1)
        return self._base_ramped(stamp_ns, tau, ref, self.order + 3, TABLE3_JOINT_NAMES)

    def _flat_ramped(self, stamp_ns, tau, ref, K1, names):
        """:meth:`_flat` of rows ``0..K1-1`` of a ``FlatReference``, through the start ramp's time warp
        ``tau`` (None: as they are)."""
        com, yaw, q = ref.com[:K1], ref.yaw[:K1], ref.q[:K1]
        if tau is not None:
            com, yaw, q = warp_jet(com, tau), warp_jet(yaw, tau), warp_jet(q, tau)
        return self._flat(stamp_ns, com, yaw, q, names)

    def _base_ramped(self, stamp_ns, tau, ref, K1, names):
        """:meth:`_base` of rows ``0..K1-1`` of a base ``Reference``, through the time warp ``tau``."""
        V, q = ref.base_twist[:K1], ref.q[:K1]
        if tau is not None:
            V, q = warp_twist_jet(V, tau), warp_jet(q, tau)
        return self._base(stamp_ns, ref.base_pose, V, q, names)

    def _on_start(self, msg) -> None:
        """start_topic: the first message reading start_value starts the trajectory start_time later."""
        if self._waiting_start and msg.data == self._start_value:
            self._waiting_start = False
            self.start_ns = self.get_clock().now().nanoseconds + self._start_delay_ns
            self.get_logger().info(f"trajectory starts at node time {self.start_ns * 1e-9:.3f} s "
                                   f"('{msg.data}' on start_topic)")

    def _on_clock(self, msg) -> None:
        # A repeated /clock (the lock-step simulator republishing while it waits) is answered
        # again, so a consumer that missed the first sample still gets it.
        self._publish(stamp_to_ns(msg.clock))

    def _on_timer(self) -> None:
        self._publish(self.get_clock().now().nanoseconds)

    def _publish(self, stamp_ns: int) -> None:
        if self._waiting_start:       # held at trajectory time 0 until the start message
            self.start_ns = stamp_ns
        if self.waypoints:
            self._due(stamp_ns)
            if self.lockstep:     # the clock waits for the missions switching in by now (deterministic)
                deadline = time.monotonic() + LOCKSTEP_PLAN_TIMEOUT_S
                while self.replanner.due(stamp_ns) and time.monotonic() < deadline:
                    self._take_plans(stamp_ns, wait=0.1)
            else:
                self._take_plans(stamp_ns)
            self._switched(stamp_ns)
        msg = self.sample_msg(stamp_ns)
        if msg is not None:
            self.pub.publish(msg)


def main(args=None) -> int:
    """Console script ``geodyn_reference``."""
    return run_nodes([ReferenceNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
