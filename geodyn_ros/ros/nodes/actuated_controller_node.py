"""``geodyn_actuated_controller``: rotor speeds and motor torques from the feedforward jets.

A thin ROS adapter around :class:`geodyn_ros.control.actuated.ActuatedController` (the law, its
levels and units are documented there and in the README, "The actuated aerial manipulator").

Subscribes
    ``odom`` (``nav_msgs/Odometry``, REP 105), ``joint_states`` (link angles and rates, by name),
    ``motor_states`` (``sensor_msgs/JointState``: ``position`` = motor angles ``theta``,
    ``velocity`` = ``theta'`` of the elastic joints, by name; only with ``elastic_joints``),
    ``reference`` (``geodyn_msgs/ReferenceJet``, spatial; ``q_d^(0..2)`` used) and
    ``feedforward/jet`` (``geodyn_msgs/FeedforwardJet``) from ``geodyn_node`` run with
    ``output_representation: body`` and ``order >= feedforward_order`` (the body wrench jet
    ``W_b^(0..r)`` in the desired base frame and ``tau^(0..r)``): a jet in another
    ``representation``, naming another base link in ``child_frame_id`` or other joints than the
    model's is refused with the reason on ``/diagnostics``. With ``message_types: multiarray``
    (deprecated) both are the ``Float64MultiArray`` layouts of :mod:`geodyn_ros.ros.wire.jets`, the
    jet's representation unchecked (it carries none).
Publishes
    ``cmd/rotor_speeds``: ``actuator_msgs/msg/Actuators`` (``velocity[i]`` = commanded speed of
    rotor ``i`` [rad/s], the order of ``actuator_number`` 0..n-1; what gz-sim's
    MulticopterMotorModel reads through ros_gz_bridge; stamped), on every install (without
    ``actuator_msgs`` the node stops at start saying what to install);
    ``cmd/motor_efforts``: ``sensor_msgs/JointState`` (``name`` = elastic joints, ``effort`` = motor
    torques ``u`` [N m]); with ``per_joint_effort_topics`` also ``std_msgs/Float64`` on
    ``cmd/joint_effort/<joint>`` (gz ApplyJointForce);
    ``/diagnostics``: counters ``rotor_saturations`` and ``motor_saturations`` (commands clipped
    to ``[0, max_rot_velocity]`` and ``+-max_motor_torque``), and WARN while clipping.
``input_policy`` (:mod:`geodyn_ros.ros.inputs.latest_inputs`): ``latest`` (default) computes a command
per accepted ``odom``, stamped with it, with the newest ``joint_states`` and ``motor_states``
propagated to that stamp (within ``joint_states_max_age`` / ``motor_states_max_age``) and the newest
reference and jet (within ``stale_timeout``); ``exact`` keeps the stamp pairing (``sync_stamps``) of
lock-step simulators. ``~/inputs_used`` names the stamps each command used.
``odom_startup_discard`` [s] ignores the first odometry after start-up (gz-sim's
OdometryPublisher differentiates poses with a moving window that starts from a zero pose: its
first ~10 messages carry linear velocities of 100-1000 m/s; its angular velocity is a 10-sample
mean, about 5 ms late at 1 kHz, which this node does not correct).

Failsafe (``input_policy: latest`` only; the rule, its defaults and their sources:
:mod:`geodyn_ros.ros.inputs.failsafe_inputs`): no odometry for ``odom_timeout`` and a watchdog at
the actuation file's ``control_period`` commands ``hold``, then ``descend``, and back to ``tracking`` without a
jump; a command that cannot be computed (``commands_not_computed``) commands the hold
(under ``exact``: skipped, as before).

Live tuning (as ``geodyn_controller``, :mod:`geodyn_ros.ros.inputs.tracking_inputs`): the six gains and
``use_feedforward`` are dynamic parameters, validated in the parameter callback; switching
``use_feedforward`` off gives the feedback-only level ("pd"), on again ``feedforward_order``.

Start-up errors (one line naming the parameter): a singular rotor geometry, non-positive time
constants, stiffnesses or motor inertias (keys of ``actuation_config``), ``feedforward_order``
outside 0..2, ``order < feedforward_order``. Nothing NaN is published: a cycle whose inputs are
not finite is skipped and reported; a command that is not is replaced (Failsafe).

The robot comes from ``robot_description`` / ``urdf_path`` or, with neither set, from the
``robot_description`` topic (:mod:`geodyn_ros.ros.common.description`; no command before a valid
description). A replacement with the same joints and base link rebuilds the allocation from
its rotor frames; a description whose rotors do not fit ``actuation_config`` is refused like an
invalid URDF.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState

from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.loops.underactuated import rigid_effort_limits
from geodyn_ros.lie import Ad_inv

from ..wire.actuator_commands import HAVE_ACTUATOR_MSGS, ActuatorCommandPublisher
from ..inputs.actuator_inputs import (INPUT_OUTPUT_PARAMETERS, JOINT_GAIN_ARRAYS, JOINT_LOSS_PARAMETERS,
                                      ROBOT_PARAMETERS, ActuatorInputs, node_joint_losses, rotor_output_type)
from ..wire.conversions import InputError
from ..common.diagnostics import guard
from ..wire.jets import decode_feedforward_jet
from ..wire.typed import decode_typed_feedforward
from ..common.message_types import MESSAGE_TYPES_PARAMETER
from ..common.params import ConfigurationError, check_frame_prefix, declare_parameters
from ..common.runtime import control_qos, run_nodes
from ..inputs.failsafe_inputs import FAILSAFE_PARAMETERS, CommandNotComputed, FailsafeInputs
from ..inputs.rejection_inputs import REJECTION_PARAMETERS, RejectionInputs
from ..inputs.tracking_inputs import GAINS, TrackingInputs

__all__ = ["PARAMETERS", "ActuatedControllerNode", "main", "HAVE_ACTUATOR_MSGS"]

PARAMETERS = {
    "robot_description": ("", "URDF with the rotor links (e.g. tilthex_manipulator.urdf.xacro expanded)."),
    **ROBOT_PARAMETERS,
    "actuation_config": ("", "Actuation YAML (rotor constants and names, elastic joints); empty = the "
                         "shipped config/tilthex.yaml."),
    "feedforward_order": (2, "0: u = A^+ W_b, motor torque tau; 1: + rotor-lag compensation (needs W_b'); "
                          "2: + elastic-joint inverse (needs tau'')."),
    "use_feedforward": (True, "false = feedback only (the 'pd' row), same gains; dynamic (ros2 param set)."),
    "order": (2, "Order r of the feedforward/jet geodyn_node publishes; must be >= feedforward_order."),
    "elastic_joints": (True, "Read motor angles on motor_states (series-elastic joints); false = rigid joints "
                       "(motor angle = link angle)."),
    "odom_startup_discard": (0.0, "Ignore odometry stamped less than this [s] after the first odometry "
                             "message (gz-sim OdometryPublisher start-up); 0 = keep all."),
    "kp_position": (400.0, "Base position stiffness [N/m]."),
    "kd_position": (40.0, "Base velocity damping [N s/m]."),
    "kp_rotation": (60.0, "Base attitude stiffness [N m/rad]."),
    "kd_rotation": (6.0, "Base angular-velocity damping [N m s/rad]."),
    "kp_joint": (40.0, "Motor-angle stiffness [N m/rad]."),
    "kd_joint": (0.5, "Motor-angle damping [N m s/rad]."),
    **JOINT_GAIN_ARRAYS,
    **JOINT_LOSS_PARAMETERS,
    **REJECTION_PARAMETERS,
    **INPUT_OUTPUT_PARAMETERS,
    **FAILSAFE_PARAMETERS,
    **MESSAGE_TYPES_PARAMETER,
}


class ActuatedControllerNode(RejectionInputs, FailsafeInputs, ActuatorInputs, TrackingInputs, Node):
    """See the module docstring."""

    def __init__(self, node_name: str = "geodyn_actuated_controller", **kwargs):
        super().__init__(node_name, **kwargs)
        p = declare_parameters(self, PARAMETERS, dynamic=GAINS + ("use_feedforward",))
        ffo = p["feedforward_order"]
        if ffo not in (0, 1, 2):
            raise ConfigurationError(f"parameter 'feedforward_order': must be 0, 1 or 2, got {ffo}")
        if p["order"] < ffo:   # also without use_feedforward: it can be switched on at run time
            raise ConfigurationError(f"parameter 'order': feedforward_order {ffo} needs geodyn_node's jet of "
                                     f"order >= {ffo}, got order {p['order']}")
        level = ffo if p["use_feedforward"] else None
        try:
            gains = TrackingGains(*(tuple(p[k + "s"]) if k in ("kp_joint", "kd_joint") and p[k + "s"] else p[k]
                                    for k in GAINS))
        except ValueError as exc:
            raise ConfigurationError(f"parameter {exc}") from exc
        try:
            cfg = load_actuation_config(p["actuation_config"] or None)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {exc}") from exc
        self.cfg = cfg
        self._p, self.gains, self._level, self._ffo = p, gains, level, ffo
        self.use_ff = p["use_feedforward"]
        self._init_rejection(p)     # rejection_* (issue 53): ConfigurationError in one line
        self.model = self.ctrl = None   # set by _setup_model (at start-up, or from the topic)
        self.frame_prefix = check_frame_prefix(p["frame_prefix"])
        self.base_frame = None   # frame_prefix + base link, set by _setup_model
        self.elastic = p["elastic_joints"]
        self.stale_ns = int(round(p["stale_timeout"] * 1e9))
        self._stamps = {k: None for k in ("odom", "joint_states", "motor_states", "reference", "jet")}
        qos_sensor, qos_in = self._init_input_policy(p, {"odom": "odom", "joint_states": "joint_states",
                                                         "motor_states": "motor_states", "reference": "reference",
                                                         "jet": "feedforward/jet"}, p["qos_depth"])
        self._init_odom_discard(p["odom_startup_discard"])
        self._setup_motor_inputs(cfg.elastic.joints)
        self._last_cmd_stamp = None
        self._last_cmd = None   # (stamp, omega, u) last published: re-sent to a republished state
        self._rigid_idx = np.zeros(0, dtype=np.intp)   # model indices of the rigid joints after the motors

        qos = control_qos(p["qos_depth"])
        self._subscribe_tracking_inputs(qos_sensor, qos_in)
        if self.elastic:
            self.create_subscription(JointState, "motor_states", guard(self, self._on_motor_states, "motor_states"),
                                     qos_sensor)
        # subscribed even without use_feedforward, which can be switched on at run time
        self.create_subscription(self.types.type_of("jet"), "feedforward/jet",
                                 guard(self, self._on_jet, "feedforward/jet"), qos_in)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.commands = ActuatorCommandPublisher(self, cfg.elastic.joints, qos, p["per_joint_effort_topics"])
        self.pub_rotors, self.pub_motors = self.commands.rotors, self.commands.motors
        self._start_diagnostics("actuated", p)
        self._init_failsafe(p, cfg.control_period)   # the failsafe's cycles: the vehicle's control period

    # ------------------------------------------------------------------ the model
    def _load_model(self, source):
        """Model (rotor joints locked), allocation and control law of ``source`` (path or URDF
        XML), as a namespace ``model, allocation, ctrl``; touches no node state (for the topic it
        runs on the loader thread). Raises ``ValueError`` (bad URDF or rotor links) or
        :class:`ConfigurationError` (the actuation config does not fit the robot)."""
        cfg, base = self.cfg, self._p["base_link"] or None
        # lock the rotor joints that the URDF has as moving joints (a Gazebo URDF: continuous)
        model = cfg.load_model(source, base_link=base)
        _, frames = cfg.rotor_frames(model)
        self._check_rejection_model(model)   # rejection_frame: a link of this model
        losses = node_joint_losses(self._p, source, model, cfg.elastic.joints,
                                   order2=self._ffo == 2)     # joint_losses: ConfigurationError in one line
        try:
            al = Allocation.from_frames(frames, cfg.rotors)
            # mixed joints: the rigid ones' limits and gravity (pd) as the in-process loop
            ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, self.gains, self._level,
                                      effort_limits=rigid_effort_limits(cfg, model, source), model=model,
                                      rejection=self.rejection_options, joint_losses=losses)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {cfg.refusal(model, exc)}") from exc
        return SimpleNamespace(model=model, allocation=al, ctrl=ctrl)

    def _setup_model(self, loaded, first: bool = True) -> None:
        """Install a loaded model and its control law (executor thread, between commands).
        ``first``: build the joint matcher, reference decoder and buffers for its joints and log
        the set-up. A replacement (same joints and base link) swaps the model and the law (new
        rotor geometry, masses...) and keeps the buffers and the saturation counts."""
        self._install_model(loaded, first)
        if not first:
            return
        self.base_frame = self.frame_prefix + self.model.base_link   # frame id of the base link
        self.need_rows = self._ffo + 1   # what use_feedforward needs, whether it is on now or later
        n = self.model.n_joints
        self._setup_tracking_inputs(self.model)
        self._Wb, self._tau = np.zeros((1, 6)), np.zeros((1, n))
        # the joints the actuation file leaves rigid (mixed joints; every joint of a Gazebo vehicle file, whose
        # series-elastic joints gazebo_vehicle makes rigid): their torques on cmd/motor_efforts after the motors'.
        # Also with elastic_joints: false, which only reads the motors' angles from joint_states: without them
        # here the rigid joints' torques were never published (hextilt_flying_arm_5's arm stalled in gz-sim)
        rigid = [j for j in self.model.joint_names if j not in self.cfg.elastic.joints]
        self._rigid_idx = np.array([self.model.joint_names.index(j) for j in rigid], dtype=np.intp)
        if rigid:
            for pub in (self.commands.rotors, self.commands.motors, *self.commands.per_joint):
                self.destroy_publisher(pub)
            self.commands = ActuatorCommandPublisher(self, list(self.cfg.elastic.joints) + rigid,
                                                     control_qos(self._p["qos_depth"]),
                                                     self._p["per_joint_effort_topics"])
            self.pub_rotors, self.pub_motors = self.commands.rotors, self.commands.motors
        al, level = loaded.allocation, self._level
        self.get_logger().info(
            f"model '{self.model.name}', {al.n_rotors} rotors (cond(A) = {al.condition_number():.3g}), "
            f"elastic joints {self.cfg.elastic.joints if self.elastic else 'off'}, level "
            f"{'pd' if level is None else f'ff{level}'}, rotor output {rotor_output_type()}")

    # ------------------------------------------------------------------ inputs (odom, motor_states: ActuatorInputs)
    def _on_jet(self, msg):
        def parse():
            if self.types.typed:   # the body wrench jet of geodyn_node's output_representation body
                stamp, W, tau, names, _ = decode_typed_feedforward(msg, representation="body",
                                                                   joint_names=self.model.joint_names,
                                                                   child_frame_id=self.base_frame)
            else:
                stamp, W, tau, names = decode_feedforward_jet(msg)
            if W.shape[0] < self.need_rows:
                raise InputError(f"feedforward/jet: {W.shape[0]} rows, feedforward_order needs "
                                 f"{self.need_rows} (geodyn_node order too low)")
            if tuple(names) != tuple(self.model.joint_names):
                raise InputError(f"feedforward/jet: joints {names} are not {self.model.joint_names}")
            if not (np.isfinite(W).all() and np.isfinite(tau).all()):
                raise InputError("feedforward/jet: NaN or Inf")
            self._Wb, self._tau = W, tau
            return stamp
        self._take("jet", parse)

    # ------------------------------------------------------------------ live tuning
    def _apply_live(self, gains, use_ff):
        """Live gains and ``use_feedforward`` (feedback only = the 'pd' level); the new law takes
        effect at the next command (the controller keeps its saturation counts)."""
        self.gains, self.use_ff = gains, use_ff
        self._level = self._ffo if use_ff else None
        if self.ctrl is not None:
            self.ctrl.set_gains(gains)
            self.ctrl.set_level(self._level)
        return None

    # ------------------------------------------------------------------ command
    def _try_command(self) -> None:
        needed = ["odom", "joint_states", "reference"] + (["motor_states"] if self.elastic else []) + \
            (["jet"] if self.use_ff else [])
        state = self._due_latest(needed) if self.latest else self._due_state(needed)
        if state is None:
            return
        self._cycle(state, needed)

    # ------------------------------------------------------------------ the failsafe's hooks (failsafe_inputs)
    def _fs_fields(self):
        def put_pose(v):
            self._Cd[...], self._Vd[...] = v

        def put_qd(v):
            self._Qd[...] = v
        return [("pose", lambda: (self._Cd, self._Vd), put_pose), ("jet", lambda: self._Qd, put_qd),
                ("ff", lambda: self._Wb, lambda v: setattr(self, "_Wb", v)),
                ("ff", lambda: self._tau, lambda v: setattr(self, "_tau", v))]

    def _fs_compute(self, t_ns: int):
        """The law's command of the current inputs, or :class:`CommandNotComputed`."""
        th, thd = (self._th, self._thd) if self.elastic else (self._q[self.ctrl.idx], self._qd[self.ctrl.idx])
        Vbd = Ad_inv(self._Cd) @ self._Vd[0]
        try:
            if self.ctrl.rejection is not None:    # the observer's sample time: the state's stamp
                cmd = self.ctrl.command(self._C, self._Vb, self._q, self._qd, th, thd, self._Cd, Vbd, self._Qd,
                                        self._Wb, self._tau, t=self._rejection_time(t_ns))
            else:
                cmd = self.ctrl.command(self._C, self._Vb, self._q, self._qd, th, thd, self._Cd, Vbd, self._Qd,
                                        self._Wb, self._tau)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            raise CommandNotComputed(f"the actuated law failed: {exc}") from None
        if not (np.isfinite(cmd.omega).all() and np.isfinite(cmd.u).all() and np.isfinite(cmd.joint_torque).all()):
            raise CommandNotComputed("the rotor speeds or motor torques are not finite (absurd inputs or gains?)")
        self._rejection_publish(t_ns)
        return cmd

    def _fs_publish(self, state: int, cmd) -> None:
        self._publish_command(state, cmd)


def main(args=None) -> int:
    """Console script ``geodyn_actuated_controller``."""
    return run_nodes([ActuatedControllerNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
