"""``geodyn_flat_controller``: rotor speeds and motor torques of a collinear (under-actuated)
multirotor manipulator from its flat reference and ``geodyn_node``'s flat-mode jets.

A thin ROS adapter around :class:`geodyn_ros.control.flatness.FlatnessController` (Lee's
geometric controller on the system CoM and the yaw; levels ``rigid``, ``ff0``, ``ff1``, ``ff2``;
the law, its units and gains are documented there and in the README, "The under-actuated aerial
manipulator").

Subscribes
    ``odom`` (``nav_msgs/Odometry``, REP 105), ``joint_states`` (link angles and rates, by name),
    ``motor_states`` (motor angles and rates of the elastic joints, by name; only with
    ``elastic_joints``), ``flat_reference`` (``geodyn_msgs/FlatReference``: ``c_d``, ``psi_d``,
    ``q_d``; rows ``0..4`` of the CoM, ``0..2`` of the yaw and joints are read), and from
    ``geodyn_node`` run with ``input_mode: flat``: ``desired/state`` (``geodyn_msgs/DesiredState``,
    spatial: the desired base pose and twist rows ``V^(0..1)``) and ``feedforward/flat_jet``
    (``geodyn_msgs/FeedforwardJet``, body representation, force ``(0, 0, T)``: ``T^(0..r)``,
    ``tau_b^(0..r)``, ``tau^(0..r)``, ``r >=`` the level's order). A typed input naming another base
    link in ``child_frame_id`` (``frame_prefix`` + base link; empty is accepted), in another
    representation or with other joints than the model's is refused with the reason on
    ``/diagnostics``. With ``message_types: multiarray`` (deprecated) every jet input is the
    ``Float64MultiArray`` layout of :mod:`geodyn_ros.ros.wire.jets`.
Publishes (:mod:`geodyn_ros.ros.wire.actuator_commands`)
    ``cmd/rotor_speeds`` (``actuator_msgs/Actuators``, on every install), ``cmd/motor_efforts`` (``sensor_msgs/JointState``: the elastic joints' motor
    torques, then the torques of the joints the actuation file leaves rigid -- a vehicle file with
    mixed joints; or every joint's torque without ``elastic_joints``), ``cmd/joint_effort/<joint>`` with
    ``per_joint_effort_topics``; ``/diagnostics`` with the counters ``rotor_saturations`` and
    ``motor_saturations`` and a WARN while clipping.

Feedback ``lqr`` (``feedback: lqr``): the time-varying LQR of :mod:`geodyn_ros.control.lqr`
replaces Lee's feedback; the feedforward is level ``ff2`` with the exact inverse of the discrete
rotor filter (``control_period``). Its gains come from ``geodyn_node``'s SE(3) linearization:
subscribes ``linearization_topic`` (default ``geodyn_node/linearization``, relative: it follows
the namespace; ``geodyn_node`` with ``publish_linearization: true`` and
``linearization_representation: body``; ``geodyn_msgs/Linearization``, whose representation and
``state_labels`` are checked: body, this model's state) and, with ``message_types: multiarray``
(the ``Float64MultiArray`` blocks, deprecated), its ``/labels`` (the same checks). Each cycle
hands the newest linearization with the nominal rotor speeds of ``feedforward/flat_jet`` to :class:`~geodyn_ros.control.lqr.OnlineGains`, which composes it with
the rotors and motors (:class:`~geodyn_ros.control.lqr.ActuatedModel`), discretizes it and runs
``riccati_steps`` warm-started Riccati steps at most ``gain_rate_hz`` times a second, on a
background thread (``gain_thread: true``) or, for a lock-step simulation that must be
reproducible, in the executor thread every ``1 / gain_rate_hz`` s of stamps with the
linearization as a required input of the same stamp (``gain_thread: false``). The first gain is
the DARE of the first linearization, computed synchronously (as is the first gain after a stale
one). No command before a gain exists, nor with a gain whose linearization is older than
``gain_timeout`` (reported). ``/diagnostics``
adds ``lqr_updates``, ``lqr_compute_ms`` and ``lqr_latency_ms`` (hand-in to gain, wall clock).
The rotor speed states of the LQR are estimated by running the rotor filter on the commands
sent, starting at the nominal speeds.

Live tuning: the gains (``kp_rotation``/``kd_rotation`` are per-axis arrays of 3) and ``level``
are dynamic parameters (with ``feedback: lqr`` they are refused: the weights are ``lqr_weights``), checked in the parameter callback (a bad value is refused with the
reason, the old one kept).

Start-up errors (one line naming the parameter): a rotor set that is not collinear or fully
actuated, an ``order`` below the level's, bad gains or ``level``, an unknown ``feedback``, a bad
``lqr_weights`` file, ``gain_rate_hz``, ``riccati_steps``, ``control_period`` or ``gain_timeout``. Nothing NaN is published: a
cycle whose inputs are not finite is skipped and reported; a command that is not is replaced (Failsafe). Inputs are combined as in
``geodyn_actuated_controller``: ``input_policy`` ``latest`` (default: a command per ``odom``, the
newest ``joint_states`` and ``motor_states`` propagated to its stamp) or ``exact`` (by stamp with
``sync_stamps``, lock-step, or by age, ``stale_timeout``); :mod:`geodyn_ros.ros.inputs.latest_inputs`.

Failsafe (``input_policy: latest`` only; the rule, its defaults and their sources:
:mod:`geodyn_ros.ros.inputs.failsafe_inputs`): no odometry for ``odom_timeout`` and a watchdog at
``control_period`` commands ``hold``, then ``descend``, and back to ``tracking`` without a
jump; a command that cannot be computed (``commands_not_computed``) commands the hold (with
``feedback: lqr`` the hold uses the last gain whatever its age; under ``exact``: skipped, as before).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState

from geodyn_ros.algorithms.flat import FlatResult
from geodyn_ros.control.flatness import FLATNESS_LEVELS, FlatnessController, FlatnessGains
from geodyn_ros.control.lqr import ActuatedModel, LqrController, OnlineGains, load_lqr_weights
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.loops.underactuated import rigid_effort_limits

from ..wire.actuator_commands import ActuatorCommandPublisher, require_actuator_msgs
from ..inputs.actuator_inputs import (INPUT_OUTPUT_PARAMETERS, JOINT_GAIN_ARRAYS, JOINT_LOSS_PARAMETERS,
                                      ROBOT_PARAMETERS, ActuatorInputs, node_joint_losses, rotor_output_type)
from ..wire.conversions import InputError, JointNameMatcher
from ..common.diagnostics import guard
from ..wire.jets import FlatReferenceDecoder, decode_flat_feedforward_jet, decode_linearization, decode_reference_jet
from ..wire.typed import (TypedFlatReferenceDecoder, decode_typed_flat_feedforward, decode_typed_linearization,
                          decode_typed_reference)
from ..common.message_types import MESSAGE_TYPES_PARAMETER
from ..common.params import ConfigurationError, check_frame_prefix, declare_parameters
from ..common.runtime import control_qos, run_nodes
from ..inputs.failsafe_inputs import FAILSAFE_PARAMETERS, CommandNotComputed, FailsafeInputs
from ..inputs.gain_origin_inputs import GAIN_ORIGIN_PARAMETERS, check_gain_origin
from ..inputs.rejection_inputs import REJECTION_PARAMETERS, RejectionInputs
from ..inputs.tracking_inputs import TrackingInputs

__all__ = ["PARAMETERS", "FlatControllerNode", "GAINS", "main"]

_DEFAULT = FlatnessGains()
#: the feedback gains (parameter names = FlatnessGains fields), dynamic
GAINS = ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint")
_ORDER = {"rigid": 0, "ff0": 0, "ff1": 1, "ff2": 2}
FEEDBACKS = ("geometric", "lqr")
#: flat jets whose nominal rotor speeds are kept to pair with a linearization of the same stamp
_NOMINAL_KEEP = 16

PARAMETERS = {
    "robot_description": ("", "URDF with the rotor links (e.g. hexarotor_manipulator.urdf.xacro expanded)."),
    **ROBOT_PARAMETERS,
    "actuation_config": ("", "Actuation YAML (rotor constants and names, elastic joints); empty = the shipped "
                         "config/hexarotor.yaml."),
    "level": ("ff2", "Feedforward level: 'rigid' (rigid-body model of today's practice), 'ff0' (whole-body flat "
              "map), 'ff1' (+ rotor-lag compensation), 'ff2' (+ elastic-joint compensation); dynamic."),
    "order": (2, "Order r of geodyn_node's feedforward/flat_jet; must be >= the level's (ff1: 1, ff2: 2)."),
    "elastic_joints": (True, "Series-elastic arm joints: read motor_states, command motor torques; false = rigid "
                       "joints, cmd/motor_efforts carries the joint torques of every joint."),
    "odom_startup_discard": (0.0, "Ignore odometry stamped less than this [s] after the first odometry message "
                             "(gz-sim OdometryPublisher start-up); 0 = keep all."),
    "kp_position": (_DEFAULT.kp_position, "CoM position stiffness k_x [N/m]."),
    "kd_position": (_DEFAULT.kd_position, "CoM velocity damping k_v [N s/m]."),
    "kp_rotation": (list(_DEFAULT.kp_rotation), "Attitude stiffness k_R [N m/rad] per base axis (x, y, z)."),
    "kd_rotation": (list(_DEFAULT.kd_rotation), "Body-rate damping k_W [N m s/rad] per base axis (x, y, z)."),
    "kp_joint": (_DEFAULT.kp_joint, "Motor-angle (or joint-angle) stiffness [N m/rad]."),
    "kd_joint": (_DEFAULT.kd_joint, "Motor-angle (or joint-angle) damping [N m s/rad]."),
    **JOINT_GAIN_ARRAYS,
    **JOINT_LOSS_PARAMETERS,
    **GAIN_ORIGIN_PARAMETERS,
    "lag_timestep": (0.0, "0: continuous rotor-lag compensation omega + T omega'; > 0: the exact inverse of the "
                     "discrete rotor filter of this step [s]."),
    "feedback": ("geometric", "Feedback law: 'geometric' (Lee's controller, the gains above) or 'lqr' (time-varying "
                 "LQR from geodyn_node's ~/linearization; level ff2, order >= 2)."),
    "lqr_weights": ("", "LQR weights YAML (Bryson's rule, units in the keys); empty = the shipped config/lqr.yaml."),
    "linearization_topic": ("geodyn_node/linearization", "With feedback lqr: geodyn_node's ~/linearization (body "
                            "representation); relative names follow the namespace."),
    "gain_rate_hz": (100.0, "With feedback lqr: LQR gain recomputations per second (at most)."),
    "riccati_steps": (20, "With feedback lqr: warm-started Riccati steps per recomputation."),
    "gain_thread": (True, "With feedback lqr: recompute on a background thread (true) or in the executor thread "
                    "every 1/gain_rate_hz s of stamps with the linearization as a required input (false: "
                    "deterministic, for lock-step simulation)."),
    "gain_timeout": (0.5, "With feedback lqr: no command with a gain whose linearization is older than this [s]."),
    "control_period": (0.001, "With feedback lqr: the command period dt [s] of the discrete model and of the "
                       "rotor-lag inverse; the failsafe's cycles run at it (input_policy latest)."),
    "gravity": ([0.0, 0.0, -9.81], "Gravity acceleration in the world frame [m/s^2]."),
    **REJECTION_PARAMETERS,
    **INPUT_OUTPUT_PARAMETERS,
    **FAILSAFE_PARAMETERS,
    **MESSAGE_TYPES_PARAMETER,
}


def _gains(values: dict) -> FlatnessGains:
    """FlatnessGains from parameter values (``ValueError`` naming the gain); ``kp_joints`` /
    ``kd_joints``, when given, are the per-joint ``kp_joint`` / ``kd_joint``."""
    return FlatnessGains(**{k: (tuple(values[k]) if k in ("kp_rotation", "kd_rotation")
                                else tuple(values[k + "s"]) if values.get(k + "s") else values[k])
                            for k in GAINS})


class FlatControllerNode(RejectionInputs, FailsafeInputs, ActuatorInputs, TrackingInputs, Node):
    """See the module docstring."""

    def __init__(self, node_name: str = "geodyn_flat_controller", **kwargs):
        super().__init__(node_name, **kwargs)
        require_actuator_msgs()   # cmd/rotor_speeds' type: stop at start, not at the model's arrival
        p = declare_parameters(self, PARAMETERS, dynamic=GAINS + ("level",))
        if p["level"] not in FLATNESS_LEVELS:
            raise ConfigurationError(f"parameter 'level': must be one of {FLATNESS_LEVELS}, got '{p['level']}'")
        if p["order"] < _ORDER[p["level"]]:
            raise ConfigurationError(f"parameter 'order': level '{p['level']}' needs geodyn_node's flat jets of "
                                     f"order >= {_ORDER[p['level']]}, got order {p['order']}")
        try:
            self.gains = _gains(p)
        except ValueError as exc:
            raise ConfigurationError(f"parameter {exc}") from exc
        try:
            self.cfg = load_actuation_config(p["actuation_config"] or "hexarotor")
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {exc}") from exc
        if not (np.isfinite(p["lag_timestep"]) and p["lag_timestep"] >= 0):
            raise ConfigurationError(f"parameter 'lag_timestep': must be >= 0 s, got {p['lag_timestep']}")
        if len(p["gravity"]) != 3 or not np.isfinite(p["gravity"]).all():
            raise ConfigurationError(f"parameter 'gravity': must be 3 finite numbers, got {p['gravity']}")
        self._init_odom_discard(p["odom_startup_discard"])
        self.lqr = p["feedback"] == "lqr"
        if p["feedback"] not in FEEDBACKS:
            raise ConfigurationError(f"parameter 'feedback': must be one of {FEEDBACKS}, got '{p['feedback']}'")
        if self.lqr:
            self._check_lqr_parameters(p)
        self._p = p
        self._init_rejection(p)     # rejection_* (issue 53): ConfigurationError in one line
        self.level = p["level"]
        self.use_ff = True   # TrackingInputs' live-tuning hook (not a parameter here)
        self.model = self.ctrl = None   # set by _setup_model (at start-up, or from the topic)
        self.frame_prefix = check_frame_prefix(p["frame_prefix"])
        self.base_frame = None
        self.elastic = p["elastic_joints"]
        self.stale_ns = int(round(p["stale_timeout"] * 1e9))
        self._stamps = {k: None for k in ("odom", "joint_states", "motor_states", "flat_reference",
                                           "desired/state", "feedforward/flat_jet", "linearization")}
        qos_sensor, qos_in = self._init_input_policy(p, {k: k for k in self._stamps}, p["qos_depth"])
        self.gain_thread = p["gain_thread"]
        self.gain_timeout_ns = int(round(p["gain_timeout"] * 1e9))
        self.online = None   # OnlineGains (feedback lqr), set with the model
        self._lin = None     # (stamp, A, B) of the newest linearization, until handed to the gains
        self._nominal_x = {}  # stamp -> nominal rotor speeds of that stamp's flat jet (the last few)
        self._lin_labels_ok = None
        self._last_cmd_stamp = None
        self._last_cmd = None   # (stamp, omega, u) last published: re-sent to a republished state
        qos = control_qos(p["qos_depth"])
        self.create_subscription(Odometry, "odom", guard(self, self._on_odom, "odom"), qos_sensor)
        self.create_subscription(JointState, "joint_states", guard(self, self._on_joint_states, "joint_states"),
                                 qos_sensor)
        if self.elastic:
            self.create_subscription(JointState, "motor_states", guard(self, self._on_motor_states, "motor_states"),
                                     qos_sensor)
        ty = self.types.type_of
        self.create_subscription(ty("flat_reference"), "flat_reference",
                                 guard(self, self._on_flat_reference, "flat_reference"), qos_in)
        self.create_subscription(ty("desired"), "desired/state", guard(self, self._on_desired, "desired/state"),
                                 qos_in)
        self.create_subscription(ty("flat_jet"), "feedforward/flat_jet",
                                 guard(self, self._on_flat_jet, "feedforward/flat_jet"), qos_in)
        self._subscribe_manifest(qos_in)   # cycle sim_steps (step_cycles)
        if self.lqr:
            from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
            from std_msgs.msg import String
            topic = p["linearization_topic"]
            self.create_subscription(ty("linearization"), topic,
                                     guard(self, self._on_linearization, "linearization"), qos_in)
            if not self.types.typed:   # the typed message carries its labels and representation
                latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
                self.create_subscription(String, topic.rstrip("/") + "/labels",
                                         guard(self, self._on_linearization_labels, "linearization/labels"), latched)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # the driven joints are known with the model: the elastic joints' motors, then the rigid joints
        self._per_joint, self._qos = p["per_joint_effort_topics"], qos
        self.commands = None
        self._rigid_idx = np.zeros(0, dtype=np.intp)   # model indices of the rigid joints after the motors
        self._start_diagnostics("flatness", p)
        if not (np.isfinite(p["control_period"]) and p["control_period"] > 0):
            raise ConfigurationError(f"parameter 'control_period': must be a finite number > 0, got "
                                     f"{p['control_period']}")
        self._init_failsafe(p, p["control_period"])

    # ------------------------------------------------------------------ the model
    def _load_model(self, source):
        """Model (rotor joints locked), allocation and control law of ``source``; touches no node
        state (for the topic it runs on the loader thread)."""
        cfg, p = self.cfg, self._p
        base = p["base_link"] or None
        model = cfg.load_model(source, base_link=base)
        self._check_rejection_model(model)   # rejection_frame: a link of this model
        losses = None if self.lqr else node_joint_losses(p, source, model, cfg.elastic.joints if self.elastic else (),
                                                         order2=self.level == "ff2")   # one line
        try:
            _, frames = cfg.rotor_frames(model)
            al = Allocation.from_frames(frames, cfg.rotors)
            # the rigid joints' torque limits as the in-process loop (the file's max_torque, else the URDF's)
            eff = rigid_effort_limits(cfg, model, source) if self.elastic else None
            ctrl = FlatnessController(model, al, cfg.rotors, cfg.elastic if self.elastic else None, self.gains,
                                      self.level, gravity=p["gravity"], lag_timestep=p["lag_timestep"] or None,
                                      effort_limits=eff, rejection=None if self.lqr else self.rejection_options,
                                      joint_losses=losses)
            lin = ActuatedModel(model, al, cfg.rotors, cfg.elastic if self.elastic else None, p["control_period"],
                                gravity=p["gravity"]) if self.lqr else None
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {cfg.refusal(model, exc)}") from exc
        check_gain_origin(self, self.gains, model, al, cfg, rigid_joints=not self.elastic)   # issue 52
        return SimpleNamespace(model=model, allocation=al, ctrl=ctrl, lin=lin)

    def _setup_model(self, loaded, first: bool = True) -> None:
        """Install a loaded model and its law; ``first``: buffers and decoders for its joints. A
        replacement (same joints and base link) keeps them and the saturation counts."""
        if self.lqr:
            lin = loaded.lin
            if self.online is not None:
                self.online.close()
            ctrl = LqrController(lin, None, rejection=self.rejection_options)
            Q = self._Q_of(lin)

            def prepare(A, B, x):
                return lin.discretize(*lin.compose(A, B), x)
            if ctrl.rejection is not None and ctrl.rejection.options.integral_action:
                # three integral states on the base position (rejection.lqr), weighted at the controller's bandwidth
                from geodyn_ros.control.rejection.lqr import integral_model, integral_weights
                Q = integral_weights(Q, self.weights.base_position, ctrl.integral_bandwidth)

                def prepare(A, B, x):   # noqa: F811
                    return integral_model(*lin.discretize(*lin.compose(A, B), x), lin.dt)
            self.online = OnlineGains(Q, self._R_of(lin), self._p["gain_rate_hz"], self._p["riccati_steps"],
                                      threaded=self.gain_thread, prepare=prepare)
            ctrl.gains = self.online
            loaded.ctrl = ctrl
            self._lin = None
        self._install_model(loaded, first)
        if not first:
            return
        model = self.model
        n = model.n_joints
        self.base_frame = self.frame_prefix + model.base_link
        self._matcher = JointNameMatcher(model.joint_names)
        self._C, self._V, self._Vb = np.eye(4), np.zeros(6), np.zeros(6)
        self._q, self._qd = np.zeros(n), np.zeros(n)
        self._hold("joint_states", n)
        self._setup_motor_inputs(self.cfg.elastic.joints)
        self._flat_decoder = (TypedFlatReferenceDecoder(model.joint_names, 0, child_frame_id=self.base_frame)
                              if self.types.typed else FlatReferenceDecoder(model.joint_names, 0))
        self._com, self._yaw, self._Qd = np.zeros((5, 3)), np.zeros(3), np.zeros((3, n))
        self._desired = None
        self._ff = None
        if self.commands is None:
            if self.elastic:   # the motors of the elastic joints, then the torques of the others (mixed joints)
                rigid = [j for j in model.joint_names if j not in self.cfg.elastic.joints]
                self._rigid_idx = np.array([model.joint_names.index(j) for j in rigid], dtype=np.intp)
                names = list(self.cfg.elastic.joints) + rigid
            else:              # rigid joints: every model joint is driven
                names = model.joint_names
            self.commands = ActuatorCommandPublisher(self, names, self._qos, self._per_joint)
        al = loaded.allocation
        self.get_logger().info(
            f"model '{model.name}', {al.n_rotors} rotors ({'collinear' if al.collinear else 'fully actuated'}, "
            f"cond = {al.condition_number():.3g}), elastic joints {self.cfg.elastic.joints if self.elastic else 'off'}, "
            f"level {self.level}, feedback {self._p['feedback']}"
            + (f" (gains at <= {self._p['gain_rate_hz']:g} Hz, {self._p['riccati_steps']} Riccati steps, "
               f"{'background thread' if self.gain_thread else 'executor thread'})" if self.lqr else "")
            + f", rotor output {rotor_output_type()}")

    # ------------------------------------------------------------------ inputs (odom, motor_states: ActuatorInputs)
    def _on_flat_reference(self, msg):
        self._take("flat_reference", lambda: self._flat_decoder.decode(msg, self._com, self._yaw, self._Qd))

    def _on_desired(self, msg):
        def parse():
            if self.types.typed:   # geodyn_node's desired state: spatial twist rows
                stamp, C, V, _, _, _ = decode_typed_reference(msg, "desired/state", representation="spatial",
                                                              child_frame_id=self.base_frame)
            else:
                stamp, C, V, _, _ = decode_reference_jet(msg, "desired/state")
            if V.shape[0] < 2:
                raise InputError(f"desired/state: {V.shape[0]} derivative rows, the controller needs 2 (V, V')")
            self._desired = (C, V)
            return stamp
        self._take("desired/state", parse)

    def _on_flat_jet(self, msg):
        def parse():
            if self.types.typed:   # body representation, force (0, 0, T), this model's joints
                stamp, T, tb, tau, names = decode_typed_flat_feedforward(msg, joint_names=self.model.joint_names,
                                                                         child_frame_id=self.base_frame)
            else:
                stamp, T, tb, tau, names = decode_flat_feedforward_jet(msg)
            need = _ORDER[self.level] + 1
            if T.shape[0] < need:
                raise InputError(f"feedforward/flat_jet: {T.shape[0]} rows, level '{self.level}' needs {need} "
                                 "(geodyn_node order too low)")
            if tuple(names) != tuple(self.model.joint_names):
                raise InputError(f"feedforward/flat_jet: joints {names} are not {self.model.joint_names}")
            self._ff = (T, tb, tau)
            if self.lqr:   # the nominal rotor speeds of this stamp, for its linearization
                al = self.ctrl.lin.allocation
                self._nominal_x[stamp] = np.sqrt(np.clip(al.allocate_thrust_torque(T[0], tb[0]), 0.0, None))
                while len(self._nominal_x) > _NOMINAL_KEEP:
                    del self._nominal_x[min(self._nominal_x)]
            return stamp
        self._take("feedforward/flat_jet", parse)

    def _on_linearization(self, msg):
        def parse():
            if self.types.typed:   # representation body (checked here) and the labels (below), in the message
                stamp, A, B, state, _, _ = decode_typed_linearization(msg, representation="body",
                                                                      child_frame_id=self.base_frame)
            else:
                stamp, A, B = decode_linearization(msg)
            nv = 6 + self.model.n_joints
            if A.shape != (2 * nv, 2 * nv) or B.shape != (2 * nv, nv):
                raise InputError(f"linearization: A {A.shape[0]} x {A.shape[1]}, B {B.shape[0]} x {B.shape[1]}; the "
                                 f"model '{self.model.name}' ({self.model.n_joints} joints, rotor joints locked) needs "
                                 f"{2 * nv} x {2 * nv} and {2 * nv} x {nv}")
            if self.types.typed:
                problem = self._labels_problem("body", list(state))
                if problem:
                    raise InputError(f"linearization: not used: {problem}")
            if self._lin_labels_ok is False:
                raise InputError(f"linearization: not used: {self._lin_labels_problem}")
            if not (np.isfinite(A).all() and np.isfinite(B).all()):
                raise InputError("linearization: A or B contains NaN or Inf")
            self._lin = (stamp, A.copy(), B.copy())
            return stamp
        self._take("linearization", parse)

    def _on_linearization_labels(self, msg):
        """``<linearization_topic>/labels``: the body representation and this model's state, else
        every linearization is refused with the reason."""
        import json
        if self.model is None:
            return
        try:
            doc = json.loads(msg.data)
            rep, state = doc.get("representation"), doc.get("state")
        except (ValueError, AttributeError):
            rep = state = None
        problem = self._labels_problem(rep, state)
        if problem is None:
            self._lin_labels_ok = True
            return
        self._lin_labels_problem = problem
        self._lin_labels_ok = False
        self.diag.problem("linearization", f"linearization: not used: {self._lin_labels_problem}")

    def _labels_problem(self, rep, state):
        """Why a linearization of representation ``rep`` and state labels ``state`` (list) does not
        fit this node (None: it does): the LQR needs ``body`` and this model's ``gd.state_labels``."""
        import geodyn_ros as gd
        want = list(gd.state_labels(self.model))
        if rep != "body":
            return (f"the labels say representation '{rep}'; the LQR needs geodyn_node's "
                    "linearization_representation: body")
        if state != want:   # the first difference only: the lists are long (42 for the hexarotor)
            got = state if isinstance(state, list) else []
            i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            first = f", first difference at {i}: {str(got[i])[:40]!r} vs {want[i]!r}" if i < min(len(got),
                                                                                                 len(want)) else ""
            return (f"the labels' state ({len(got)} entries) is not this model's ({len(want)}{first}); geodyn_node "
                    "must load the same robot with the rotor joints locked")
        return None

    # ------------------------------------------------------------------ live tuning
    def _on_set_parameters(self, params):
        """``ros2 param set`` of the gains and ``level``; a bad value is refused with the reason."""
        from rcl_interfaces.msg import SetParametersResult
        values = {k: getattr(self.gains, k) for k in GAINS}
        level = self.level
        for prm in params:
            if self.lqr and prm.name in GAINS + ("level",):
                return SetParametersResult(successful=False, reason=f"{prm.name}: not used with feedback 'lqr' "
                                                                    "(level ff2; weights: lqr_weights)")
            if prm.name in GAINS:
                v = prm.value
                if prm.name in ("kp_rotation", "kd_rotation"):
                    ok = isinstance(v, (list, tuple)) or (hasattr(v, "__len__") and not isinstance(v, str))
                    if not ok or len(v) != 3:
                        return SetParametersResult(successful=False,
                                                   reason=f"{prm.name}: expected 3 numbers (x, y, z), got {v!r}")
                    values[prm.name] = tuple(float(x) for x in v)
                else:
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        return SetParametersResult(successful=False, reason=f"{prm.name}: expected a number, "
                                                                            f"got {v!r}")
                    values[prm.name] = float(v)
            elif prm.name == "level":
                if prm.value not in FLATNESS_LEVELS:
                    return SetParametersResult(successful=False,
                                               reason=f"level: expected one of {FLATNESS_LEVELS}, got {prm.value!r}")
                if _ORDER[prm.value] > self._p["order"]:
                    return SetParametersResult(successful=False, reason=f"level: '{prm.value}' needs order >= "
                                                                        f"{_ORDER[prm.value]}, the node has order "
                                                                        f"{self._p['order']}")
                level = prm.value
        try:
            gains = FlatnessGains(**values)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        reason = self._live_gain_refusal(gains)     # a changed loop unstable at the control period
        if reason:
            return SetParametersResult(successful=False, reason=reason)
        self.gains, self.level = gains, level
        if self.ctrl is not None:
            self.ctrl.set_gains(gains)
            self.ctrl.set_level(level)
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ command
    def _try_command(self) -> None:
        needed = ["odom", "joint_states", "flat_reference", "desired/state", "feedforward/flat_jet"] + \
            (["motor_states"] if self.elastic else [])
        if self.lqr and (not self.gain_thread or self.online.gain() is None):
            needed.append("linearization")   # every cycle's, or (gain thread) the first one
        state = self._due_latest(needed) if self.latest else self._due_state(needed)
        if state is None:
            return
        try:
            if self.lqr and not self._lqr_gains(state, self._ff[0], self._ff[1]):
                if self._fs is not None and self._good is not None:   # no usable gain: the failsafe's hold
                    self._lost("linearization", state, self.diag.last_problem)
                return
        except ValueError as exc:
            self.diag.problem("command", f"no command: {exc}")
            return
        self._cycle(state, needed)

    # ------------------------------------------------------------------ the failsafe's hooks (failsafe_inputs)
    def _fs_fields(self):
        def put(a):
            return lambda v: a.__setitem__(Ellipsis, v)

        def put_ff(i):
            def f(v):
                ff = list(self._ff)
                ff[i] = np.asarray(v).reshape(-1) if i == 0 else v
                self._ff = tuple(ff)
            return f
        return [("jet_z", lambda: self._com, put(self._com)), ("jet", lambda: self._yaw, put(self._yaw)),
                ("jet", lambda: self._Qd, put(self._Qd)),
                ("pose", lambda: self._desired, lambda v: setattr(self, "_desired", v)),
                ("ff", lambda: np.asarray(self._ff[0]).reshape(-1, 1), put_ff(0)),
                ("ff", lambda: self._ff[1], put_ff(1)), ("ff", lambda: self._ff[2], put_ff(2))]

    def _fs_compute(self, t_ns: int):
        """The law's command of the current inputs, or :class:`CommandNotComputed`."""
        C_d, V_d = self._desired
        T, tb, tau = self._ff
        flat = FlatResult(C_d, V_d, self._Qd, None, tau, T, tb)
        th, thd = (self._th, self._thd) if self.elastic else (None, None)
        try:
            if self.lqr:
                cmd = self.ctrl.command(self._rejection_time(t_ns), self._C, self._Vb, self._q, self._qd, th, thd,
                                        self._Qd, flat)
            elif self.ctrl.rejection is not None:    # the observer's sample time: the state's stamp
                cmd = self.ctrl.command(self._C, self._Vb, self._q, self._qd, th, thd, self._com, self._yaw,
                                        self._Qd, flat, t=self._rejection_time(t_ns))
            else:
                cmd = self.ctrl.command(self._C, self._Vb, self._q, self._qd, th, thd, self._com, self._yaw,
                                        self._Qd, flat)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            raise CommandNotComputed(f"the flatness law failed: {exc}") from None
        if not (np.isfinite(cmd.omega).all() and np.isfinite(cmd.u).all()):
            raise CommandNotComputed("the rotor speeds or motor torques are not finite (absurd inputs or gains?)")
        self._rejection_publish(t_ns)
        return cmd

    def _fs_publish(self, state: int, cmd) -> None:
        self._publish_command(state, cmd)

    # ------------------------------------------------------------------ LQR
    def _check_lqr_parameters(self, p) -> None:
        if p["level"] != "ff2":
            raise ConfigurationError(f"parameter 'level': feedback 'lqr' uses the ff2 feedforward; set level ff2 "
                                     f"(got '{p['level']}')")
        if p["order"] < 2:
            raise ConfigurationError(f"parameter 'order': feedback 'lqr' needs geodyn_node's flat jets of order >= 2, "
                                     f"got {p['order']}")
        for name, low in (("gain_rate_hz", 0.0), ("control_period", 0.0), ("gain_timeout", 0.0)):
            if not (np.isfinite(p[name]) and p[name] > low):
                raise ConfigurationError(f"parameter '{name}': must be a finite number > 0, got {p[name]}")
        if p["riccati_steps"] < 1:
            raise ConfigurationError(f"parameter 'riccati_steps': must be >= 1, got {p['riccati_steps']}")
        if not p["linearization_topic"]:
            raise ConfigurationError("parameter 'linearization_topic': must not be empty")
        try:
            self.weights = load_lqr_weights(p["lqr_weights"] or None)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'lqr_weights': {exc}") from exc

    def _Q_of(self, lin):
        return self.weights.Q(lin.n, lin.ne, lin.nr)

    def _R_of(self, lin):
        return self.weights.R(lin.nr, lin.ne, lin.nq)

    def _lqr_gains(self, state_ns: int, T, tb) -> bool:
        """Hand the newest linearization to the gains, with the nominal rotor speeds of the flat jet
        of its own stamp (with ``sync_stamps`` a linearization waits for that jet; without, the
        newest jet's serve when its own is not there); make sure a usable gain exists; False
        (reported) when none does. Which linearization a gain thread gets is decided by arrival
        order and the thread's progress (wall clock); the model it is given is always consistent."""
        online = self.online
        if self._lin is not None:
            stamp, A, B = self._lin
            x = self._nominal_x.get(stamp)
            if x is None and not self.sync:
                x = np.sqrt(np.clip(self.ctrl.lin.allocation.allocate_thrust_torque(T[0], tb[0]), 0.0, None))
            if x is not None and (self.gain_thread or not self.sync or stamp == state_ns):
                self._lin = None
                if self.gain_thread and (online.gain() is None or self._gain_age(state_ns) > self.gain_timeout_ns):
                    online.compute(A, B, x, stamp=stamp * 1e-9)   # the first (a DARE) or a stale gain: synchronously
                else:
                    online.update(A, B, x, stamp=stamp * 1e-9)
        err = online.stats.get("error")
        if err:
            self.diag.problem("lqr", f"LQR gains: {err}")
        if online.gain() is None:
            self.diag.problem("lqr", f"no command: waiting for the first linearization on "
                              f"'{self._p['linearization_topic']}' (geodyn_node publish_linearization: true)")
            return False
        age = self._gain_age(state_ns)
        if age > self.gain_timeout_ns:
            self.diag.problem("lqr", f"no command: the LQR gain is from a linearization {age * 1e-9:.3f} s old "
                              f"(gain_timeout {self.gain_timeout_ns * 1e-9:g} s); is geodyn_node publishing "
                              f"'{self._p['linearization_topic']}'?")
            return False
        st, c = online.stats, self.diag.counters
        c["lqr_updates"] = st["updates"]
        c["lqr_compute_ms"] = round(st["compute_s"] * 1e3, 3)
        c["lqr_latency_ms"] = round(st["latency_s"] * 1e3, 3)
        return True

    def _gain_age(self, state_ns: int) -> int:
        """Nanoseconds from the linearization of the current gain to ``state_ns`` (0 without a gain)."""
        st = self.online.gain_entry()[2]
        return 0 if st is None else state_ns - int(round(st * 1e9))

    def destroy_node(self):
        online = getattr(self, "online", None)      # absent when the constructor refused a parameter
        if online is not None:
            online.close()
        return super().destroy_node()


def main(args=None) -> int:
    """Console script ``geodyn_flat_controller``."""
    return run_nodes([FlatControllerNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
