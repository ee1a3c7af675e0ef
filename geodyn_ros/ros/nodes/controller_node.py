"""``geodyn_controller``: example tracking controller closing the loop around ``geodyn_node``.

Law: :func:`geodyn_ros.loops.tracking_command` (feedforward + PD on SE(3) and joints).

Subscribes ``odom`` and ``joint_states`` (the measured state), ``reference``
(``geodyn_msgs/ReferenceJet``, spatial representation: desired pose, twist, joint positions and
velocities; the deprecated ``Float64MultiArray`` layout with ``message_types: multiarray``) and,
with ``use_feedforward``, ``feedforward/wrench`` and ``feedforward/joint_efforts`` from
``geodyn_node`` (reference mode: wrench in the desired base frame). Publishes ``cmd/wrench`` (``WrenchStamped``, base-link frame, about its origin)
and ``cmd/joint_efforts`` (``JointState`` with ``effort``), stamped with the state's stamp;
with ``per_joint_effort_topics`` also one ``std_msgs/Float64`` per joint on
``cmd/joint_effort/<joint>`` (the Gazebo joint-controller convention).

``input_policy`` (:mod:`geodyn_ros.ros.inputs.latest_inputs`): ``latest`` (default, real sensors)
computes one command per accepted ``odom``, stamped with it, from the newest ``joint_states``
propagated to that stamp (within ``joint_states_max_age``) and the newest reference and
feedforward (within ``stale_timeout``); ``exact`` (lock-step simulators): with ``sync_stamps``
(default) a command is computed only from a state, reference and feedforward that share one
stamp; otherwise each new state is combined with the latest other inputs if they are within
``stale_timeout``. ``~/inputs_used`` names the stamps each command used.

Failsafe (``input_policy: latest`` only; the rule, its defaults and their sources:
:mod:`geodyn_ros.ros.inputs.failsafe_inputs`): no odometry for ``odom_timeout`` and a watchdog at
``control_period`` commands ``hold``, then ``descend``, and back to ``tracking`` without a
jump; a command that cannot be computed (``commands_not_computed``) commands the hold
(under ``exact``: skipped, as before).

The model (joint names and base link) comes from ``robot_description`` / ``urdf_path`` or,
with neither set, from the ``robot_description`` topic, with the rules of
:mod:`geodyn_ros.ros.common.description` (no command before a valid description; a replacement must
have the same joints and base link).
"""
from __future__ import annotations

import array

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

import geodyn_ros as gd
from geodyn_ros.control.feedback import TrackingGains, tracking_command
from geodyn_ros.lie import Ad_inv

from ..wire.conversions import parse_body_wrench, set_stamp, stamp_to_ns, write_body_wrench
from ..common.diagnostics import DiagnosticsReporter, guard, guard_time_source
from ..common.description import TOPIC_PARAMETER, ModelSource
from ..common.params import FRAME_PREFIX_DESCRIPTION, ConfigurationError, check_frame_prefix, declare_parameters
from ..inputs.failsafe_inputs import FAILSAFE_PARAMETERS, CommandNotComputed, FailsafeInputs
from ..inputs.latest_inputs import POLICY_PARAMETERS, RELIABILITY_PARAMETERS
from ..inputs.step_cycles import CYCLE_PARAMETERS
from ..inputs.tracking_inputs import GAINS, TrackingInputs
from ..common.runtime import control_qos, run_nodes
from ..common.message_types import MESSAGE_TYPES_PARAMETER

__all__ = ["PARAMETERS", "ControllerNode", "main"]

_GAINS = GAINS

PARAMETERS = {
    "robot_description": ("", "URDF XML string (joint names and base link)."),
    "urdf_path": ("", "Path of a .urdf/.xacro file; used when robot_description is empty."),
    "robot_description_topic": TOPIC_PARAMETER,
    "base_link": ("", "Base link; empty = the URDF root."),
    "use_feedforward": (True, "Add geodyn_node's feedforward; false = PD only (same gains)."),
    "kp_position": (400.0, "Base position stiffness [N/m]."),
    "kd_position": (40.0, "Base velocity damping [N s/m]."),
    "kp_rotation": (60.0, "Base attitude stiffness [N m/rad]."),
    "kd_rotation": (6.0, "Base angular-velocity damping [N m s/rad]."),
    "kp_joint": (40.0, "Joint stiffness [N m/rad]."),
    "kd_joint": (0.5, "Joint damping [N m s/rad]."),
    **POLICY_PARAMETERS,
    **CYCLE_PARAMETERS,
    **RELIABILITY_PARAMETERS,
    **FAILSAFE_PARAMETERS,
    "control_period": (0.001, "Period [s] of the loop the controller runs in: a live gain change whose discrete "
                       "loop would be unstable at it is refused; the failsafe's cycles run at it."),
    "sync_stamps": (True, "input_policy exact: combine only inputs with the same stamp (lock-step simulation)."),
    "stale_timeout": (0.1, "input_policy latest, or exact without sync_stamps: oldest usable reference/feedforward "
                      "[s] relative to the state."),
    "per_joint_effort_topics": (False, "Also publish std_msgs/Float64 on cmd/joint_effort/<joint>."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: cmd/wrench header.frame_id and the odom "
                     "child_frame_id / feedforward/wrench frame_id checks."),
    "qos_depth": (2, "Keep-last depth of the control topics."),
    **MESSAGE_TYPES_PARAMETER,
}


class ControllerNode(FailsafeInputs, TrackingInputs, Node):
    """Example tracking controller (see the module docstring)."""

    def __init__(self, node_name: str = "geodyn_controller", **kwargs):
        super().__init__(node_name, **kwargs)
        p = declare_parameters(self, PARAMETERS, dynamic=_GAINS + ("use_feedforward",))
        try:
            self.gains = TrackingGains(*(p[k] for k in _GAINS))
        except ValueError as exc:
            raise ConfigurationError(f"parameter {exc}") from exc
        if not (np.isfinite(p["control_period"]) and 1e-4 <= p["control_period"] <= 0.1):
            raise ConfigurationError(f"parameter 'control_period': must be in [0.0001, 0.1] s (a flight controller's "
                                     f"rate loop runs at 10 Hz to 10 kHz), got {p['control_period']}")
        self._p = p
        self.model = None   # set by _setup_model (at start-up, or from the robot_description topic)
        self.use_ff = p["use_feedforward"]
        self.frame_prefix = check_frame_prefix(p["frame_prefix"])
        self.base_frame = None   # frame_prefix + base link, set by _setup_model
        self.stale_ns = int(round(p["stale_timeout"] * 1e9))
        self._stamps = {"odom": None, "joint_states": None, "reference": None,
                        "ff_wrench": None, "ff_efforts": None}
        self._last_cmd_stamp = None
        qos_sensor, qos_in = self._init_input_policy(p, {"odom": "odom", "joint_states": "joint_states",
                                                         "reference": "reference", "ff_wrench": "feedforward/wrench",
                                                         "ff_efforts": "feedforward/joint_efforts"}, p["qos_depth"])
        qos = control_qos(p["qos_depth"])
        self._subscribe_tracking_inputs(qos_sensor, qos_in)
        # subscribed even without use_feedforward, which can be switched on at run time
        self.create_subscription(WrenchStamped, "feedforward/wrench",
                                 guard(self, self._on_ff_wrench, "feedforward/wrench"), qos_in)
        self.create_subscription(JointState, "feedforward/joint_efforts",
                                 guard(self, self._on_ff_efforts, "feedforward/joint_efforts"), qos_in)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.pub_wrench = self.create_publisher(WrenchStamped, "cmd/wrench", qos)
        self.pub_efforts = self.create_publisher(JointState, "cmd/joint_efforts", qos)
        self._per_joint = p["per_joint_effort_topics"]
        self.pub_per_joint = []
        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: tracking", "")
        self._init_failsafe(p, p["control_period"])
        self.model_source = ModelSource(self, p, self.diag, load=self._load_model, apply=self._setup_model)
        guard_time_source(self)

    # ------------------------------------------------------------------ the model
    def _load_model(self, source):
        return gd.load_urdf(source, base_link=self._p["base_link"] or None)

    def _setup_model(self, model, first: bool = True) -> None:
        """Install ``model`` (executor thread, between commands). ``first``: build the input
        buffers, joint matcher, reference decoder, output messages and per-joint publishers for
        its joints. A replacement has the same joint names, order and base link
        (:func:`geodyn_ros.ros.common.description.same_robot`), and this law uses nothing else of the
        model, so all of that stays."""
        self.model = model
        self.diag.hardware_id = model.name
        if not first:
            return
        self.base_frame = self.frame_prefix + model.base_link   # frame id of the base link
        n = model.n_joints
        names = model.joint_names
        self._setup_tracking_inputs(model)
        self._Wff, self._tau_ff = np.zeros(6), np.zeros(n)
        qos = control_qos(self._p["qos_depth"])
        self.pub_per_joint = [self.create_publisher(Float64, f"cmd/joint_effort/{j}", qos)
                              for j in names] if self._per_joint else []
        self._wmsg = WrenchStamped()
        self._wmsg.header.frame_id = self.base_frame
        self._emsg = JointState()
        self._emsg.name = list(names)

    # ------------------------------------------------------------------ feedforward inputs
    def _on_ff_wrench(self, msg):
        def parse():
            parse_body_wrench(msg, self.base_frame, self._Wff, "feedforward/wrench")
            return stamp_to_ns(msg.header.stamp)
        self._take("ff_wrench", parse)

    def _on_ff_efforts(self, msg):
        def parse():
            self._matcher.gather(msg.name, msg.effort, self._tau_ff, "feedforward/joint_efforts")
            return stamp_to_ns(msg.header.stamp)
        self._take("ff_efforts", parse)

    # ------------------------------------------------------------------ command
    def _try_command(self) -> None:
        s = self._stamps
        needed = ["odom", "joint_states", "reference"] + (["ff_wrench", "ff_efforts"] if self.use_ff else [])
        if self.latest:
            state = self._due_latest(needed)
            if state is None:
                return
        else:
            if any(s[k] is None for k in needed):
                return
            state = s["joint_states"]
            if self.sync:
                if any(s[k] != state for k in needed) or state == self._last_cmd_stamp:
                    return
            else:
                if state == self._last_cmd_stamp:
                    return
                if any(state - s[k] > self.stale_ns for k in needed):
                    return
            self._last_cmd_stamp = state
        self._cycle(state, needed)

    # ------------------------------------------------------------------ the failsafe's hooks (failsafe_inputs)
    def _fs_fields(self):
        def put_pose(v):
            self._Cd[...], self._Vd[...] = v

        def put(a):
            return lambda v: a.__setitem__(Ellipsis, v)
        return [("pose", lambda: (self._Cd, self._Vd), put_pose), ("jet", lambda: self._Qd, put(self._Qd)),
                ("ff", lambda: self._Wff, put(self._Wff)), ("ff", lambda: self._tau_ff, put(self._tau_ff))]

    def _fs_compute(self, t_ns: int):
        """``(W, tau)`` of the current inputs, or :class:`CommandNotComputed`."""
        try:
            Vbd = Ad_inv(self._Cd) @ self._Vd[0]
            W, tau = tracking_command(self.gains, self._C, self._Vb, self._q, self._qd, self._Cd, Vbd,
                                      self._Qd[0], self._Qd[1],
                                      self._Wff if self.use_ff else None,
                                      self._tau_ff if self.use_ff else None)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            raise CommandNotComputed(f"the tracking law failed: {exc}") from None
        if not (np.isfinite(W).all() and np.isfinite(tau).all()):
            raise CommandNotComputed("the tracking command is not finite (absurd inputs or gains?)")
        return W, tau

    def _fs_force_body(self, cmd) -> np.ndarray:
        """The force (3,) [N, base axes] of the commanded wrench."""
        return cmd[0][3:]

    def _fs_limit(self, cmd, R):
        """The command with its force (world axes, base attitude ``R``) and torque within the
        failsafe's bound (:mod:`geodyn_ros.ros.inputs.failsafe_inputs`); unchanged when within."""
        W, tau = cmd
        b = self._bound
        F = R @ W[3:]
        Fc, tc = b.clip_force(F), b.clip_torque(W[:3])
        if np.array_equal(Fc, F) and np.array_equal(tc, W[:3]):
            return cmd
        return np.r_[tc, R.T @ Fc], tau

    def _fs_publish(self, state: int, cmd) -> None:
        W, tau = cmd
        w = self._wmsg
        write_body_wrench(w, state, W)
        e = self._emsg
        set_stamp(e.header.stamp, state)
        e.effort = array.array("d", np.ascontiguousarray(tau).tobytes())
        self.pub_wrench.publish(w)
        self.pub_efforts.publish(e)
        for pub, v in zip(self.pub_per_joint, tau):
            pub.publish(Float64(data=float(v)))
        self.diag.ok()


def main(args=None) -> int:
    """Console script ``geodyn_controller``."""
    return run_nodes([ControllerNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
