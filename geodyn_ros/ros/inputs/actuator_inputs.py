"""Input handling and command output shared by the two controllers of rotors and elastic joints.

``geodyn_actuated_controller`` (:mod:`geodyn_ros.ros.nodes.actuated_controller_node`, fully actuated)
and ``geodyn_flat_controller`` (:mod:`geodyn_ros.ros.nodes.flat_controller_node`, collinear) read
their state the same way and publish the same commands; this mixin holds that part once. It
sits before :class:`~geodyn_ros.ros.inputs.tracking_inputs.TrackingInputs` in the node's bases
(``class Node(ActuatorInputs, TrackingInputs, rclpy.node.Node)``) and uses its ``_take``.

* ``odom``: the start-up window ``odom_startup_discard`` [s] (gz-sim's OdometryPublisher: its
  first messages carry wrong velocities): odometry stamped less than that after the first one
  received is dropped and counted in the diagnostics counter ``odom_discarded``; later odometry
  goes to :meth:`TrackingInputs._on_odom`.
* ``motor_states`` (``sensor_msgs/JointState``, by name): ``position`` -> ``_th`` (motor angles
  ``theta`` [rad]), ``velocity`` -> ``_thd`` (``theta'`` [rad/s]), both in the order of the
  actuation file's elastic joints.
* :meth:`ActuatorInputs._due_state`: the stamp of the state to command now, from the stamps of
  the required inputs (``sync_stamps``: all equal; else none older than ``stale_timeout``).
* :meth:`ActuatorInputs._publish_command`: rotor speeds and motor torques (then the torques of
  the joints the file leaves rigid) on the command topics, the saturation counters and a WARN
  while clipping on ``/diagnostics``.
* :meth:`ActuatorInputs._start_diagnostics` and :meth:`ActuatorInputs._install_model`: the
  diagnostics and model source at start-up, and a (re)loaded model and law installed.
* :data:`ROBOT_PARAMETERS`, :data:`JOINT_GAIN_ARRAYS`, :data:`INPUT_OUTPUT_PARAMETERS`: the
  parameters both nodes declare alike, spliced into their ``PARAMETERS`` tables.

The node provides ``diag``, ``commands`` (:class:`~geodyn_ros.ros.wire.actuator_commands.ActuatorCommandPublisher`),
``ctrl`` (its law, with ``rotor_saturations`` / ``motor_saturations``), ``sync``, ``stale_ns``,
``_stamps``, ``_last_cmd_stamp`` and ``_rigid_idx``.
"""
from __future__ import annotations

import numpy as np

from ..wire.conversions import JointNameMatcher, stamp_to_ns
from ..common.description import TOPIC_PARAMETER
from ..common.params import FRAME_PREFIX_DESCRIPTION, ConfigurationError
from .latest_inputs import POLICY_PARAMETERS, RELIABILITY_PARAMETERS, max_age_parameter
from .step_cycles import CYCLE_PARAMETERS
from ...model.joint_losses import DEFAULT_FRICTION_VELOCITY, joint_losses_from_urdf

__all__ = ["ActuatorInputs", "rotor_output_type", "ROBOT_PARAMETERS", "JOINT_GAIN_ARRAYS", "INPUT_OUTPUT_PARAMETERS"]

# Parameters both nodes declare with the same meaning, default and description (name ->
# (default, description), spliced into each node's PARAMETERS in its order).
#: where the robot comes from (after ``robot_description``)
#: the joints' damping and dry friction in the joint feedforward (geodyn_ros.model.joint_losses)
JOINT_LOSS_PARAMETERS = {
    "joint_losses": (False, "Add the URDF's joint <dynamics damping friction> to the joint feedforward "
                     "(d q_d' + f tanh(q_d'/friction_velocity)): what gz-sim simulates; false = ignored, as by "
                     "the model."),
    "friction_velocity": (DEFAULT_FRICTION_VELOCITY, "Boundary layer [rad/s] of the smoothed sign of the dry "
                          "friction (joint_losses)."),
}

ROBOT_PARAMETERS = {
    "urdf_path": ("", "Path of a .urdf/.xacro file; used when robot_description is empty."),
    "robot_description_topic": TOPIC_PARAMETER,
    "base_link": ("", "Base link; empty = the URDF root."),
}
#: per-joint joint gains (model joint order)
JOINT_GAIN_ARRAYS = {
    "kp_joints": ([], "Per-joint kp_joint [N m/rad], model joint order (e.g. designed from the model: "
                  "fly.launch.py); empty = kp_joint for every joint."),
    "kd_joints": ([], "Per-joint kd_joint [N m s/rad], model joint order; empty = kd_joint for every joint."),
}
#: input pairing, command topics, frame prefix and QoS depth
INPUT_OUTPUT_PARAMETERS = {
    **POLICY_PARAMETERS,
    **CYCLE_PARAMETERS,
    "motor_states_max_age": max_age_parameter("motor_states"),
    **RELIABILITY_PARAMETERS,
    "sync_stamps": (True, "input_policy exact: combine only inputs with the same stamp (lock-step simulation)."),
    "stale_timeout": (0.1, "input_policy latest, or exact without sync_stamps: oldest usable reference/feedforward "
                      "[s] relative to the state."),
    "per_joint_effort_topics": (False, "Also publish std_msgs/Float64 on cmd/joint_effort/<joint>."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: the odom child_frame_id check."),
    "qos_depth": (2, "Keep-last depth of the control topics."),
}


def rotor_output_type() -> str:
    """The message type published on ``cmd/rotor_speeds`` (for the start-up log line):
    ``actuator_msgs/msg/Actuators`` on every install (:mod:`geodyn_ros.ros.wire.actuator_commands`)."""
    from ..wire.actuator_commands import ROTOR_MSG_NAME
    return ROTOR_MSG_NAME


class ActuatorInputs:
    """Mixin of the two actuated controller nodes (module docstring)."""

    latest = False   # input_policy latest (TrackingInputs._init_input_policy)

    def _start_diagnostics(self, what: str, p: dict) -> None:
        """``diag`` (``/diagnostics``, name ``"<node name>: <what>"``, counters
        ``rotor_saturations`` and ``motor_saturations`` at 0), the guard of the time source, and
        ``model_source`` (:class:`~geodyn_ros.ros.common.description.ModelSource` of the parameters
        ``p``, loading with the node's ``_load_model`` and installing with ``_setup_model``)."""
        from ..common.description import ModelSource
        from ..common.diagnostics import DiagnosticsReporter, guard_time_source
        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: {what}", "")
        guard_time_source(self)
        self.diag.counters.update(rotor_saturations=0, motor_saturations=0)
        self.model_source = ModelSource(self, p, self.diag, load=self._load_model, apply=self._setup_model,
                                        model_of=lambda loaded: loaded.model)

    def _install_model(self, loaded, first: bool) -> None:
        """Make ``loaded.model`` and ``loaded.ctrl`` the node's model and law (executor thread,
        between commands) and the diagnostics' hardware id the model's name; a replacement
        (``first`` false) carries the saturation counts of the law it replaces over."""
        if not first:
            loaded.ctrl.rotor_saturations = self.ctrl.rotor_saturations
            loaded.ctrl.motor_saturations = self.ctrl.motor_saturations
        self.model, self.ctrl = loaded.model, loaded.ctrl
        self._alloc = loaded.allocation   # the failsafe's force of a rotor command (failsafe_inputs)
        self.diag.hardware_id = self.model.name

    def _init_odom_discard(self, seconds: float) -> None:
        """Set the start-up window of ``odom`` from the parameter ``odom_startup_discard``
        (``seconds`` >= 0, finite; else :class:`ConfigurationError` naming it)."""
        if not (np.isfinite(seconds) and seconds >= 0):
            raise ConfigurationError(f"parameter 'odom_startup_discard': must be >= 0 s, got {seconds}")
        self.odom_discard_ns = int(round(seconds * 1e9))
        self._odom_first = None

    def _setup_motor_inputs(self, joints) -> None:
        """Matcher and buffers ``_th``, ``_thd`` (len(joints),) of ``motor_states`` for the elastic
        ``joints`` (in that order); under ``input_policy: latest`` also its held sample."""
        self._motor_matcher = JointNameMatcher(joints)
        self._th, self._thd = np.zeros(len(joints)), np.zeros(len(joints))
        if getattr(self, "latest", False):
            self._hold("motor_states", len(joints))

    def _on_odom(self, msg):
        """Odometry after the start-up window ``odom_startup_discard`` (module docstring)."""
        if self.odom_discard_ns:
            st = stamp_to_ns(msg.header.stamp)
            if self._odom_first is None:
                self._odom_first = st
            if st - self._odom_first < self.odom_discard_ns:
                self.diag.counters["odom_discarded"] = self.diag.counters.get("odom_discarded", 0) + 1
                return
        super()._on_odom(msg)

    def _on_motor_states(self, msg):
        def parse():
            th, thd = self._held["motor_states"].scratch if self.latest else (self._th, self._thd)
            self._motor_matcher.gather(msg.name, msg.position, th, "motor_states.position")
            self._motor_matcher.gather(msg.name, msg.velocity, thd, "motor_states.velocity")
            return stamp_to_ns(msg.header.stamp)
        self._take("motor_states", parse)

    def _due_state(self, needed) -> int | None:
        """The ``joint_states`` stamp [ns] to command now, or None: every input of ``needed``
        (keys of ``_stamps``) has arrived; with ``sync_stamps`` all carry that stamp, without
        none is older than ``stale_timeout``; and that state has no command yet. A returned
        stamp is marked as commanded (``_last_cmd_stamp``)."""
        s = self._stamps
        if any(s[k] is None for k in needed):
            return None
        state = s["joint_states"]
        if self.sync:
            if any(s[k] != state for k in needed) or state == self._last_cmd_stamp:
                return None
        elif state == self._last_cmd_stamp or any(state - s[k] > self.stale_ns for k in needed):
            return None
        self._last_cmd_stamp = state
        return state

    def _publish_command(self, state: int, cmd) -> None:
        """Publish ``cmd`` (``omega`` rotor speeds [rad/s], ``u`` motor torques [N m],
        ``joint_torque`` (n,)) stamped ``state``: ``u`` then the torques of the rigid joints
        (``_rigid_idx``) on ``cmd/motor_efforts``; keep it in ``_last_cmd`` (re-sent to a
        republished state); update the saturation counters, report OK, and WARN when this
        cycle clipped."""
        u = np.r_[cmd.u, cmd.joint_torque[self._rigid_idx]] if self._rigid_idx.size else cmd.u
        self.commands.publish(state, cmd.omega, u)
        self._last_cmd = (state, np.array(cmd.omega, dtype=float), np.array(u, dtype=float))
        c = self.diag.counters
        c["rotor_saturations"] = self.ctrl.rotor_saturations
        c["motor_saturations"] = self.ctrl.motor_saturations
        self.diag.ok()
        if cmd.rotor_saturations or cmd.motor_saturations:
            from diagnostic_msgs.msg import DiagnosticStatus
            self.diag.publish_status(DiagnosticStatus.WARN, f"saturated: {cmd.rotor_saturations} rotor speed(s), "
                                     f"{cmd.motor_saturations} motor torque(s) clipped this cycle")


def node_joint_losses(p: dict, source, model, elastic_joints=(), order2: bool = False):
    """The controller's :class:`~geodyn_ros.model.joint_losses.JointLosses` of the URDF ``source`` (path or
    XML) for ``model``'s joints, or None with ``joint_losses: false``. :class:`ConfigurationError` in one
    line for a bad ``<dynamics>`` value or ``friction_velocity``, and for lossy ``elastic_joints`` at order 2
    (``order2``): their motors need the third joint rate, which the reference topic's decoder does not keep."""
    if not p["joint_losses"]:
        return None
    try:
        losses = joint_losses_from_urdf(source, model.joint_names, friction_velocity=float(p["friction_velocity"]))
    except ValueError as exc:
        name = "friction_velocity" if str(exc).startswith("friction_velocity") else "joint_losses"
        raise ConfigurationError(f"parameter '{name}': {str(exc).splitlines()[0]}") from None
    idx = [model.joint_names.index(j) for j in elastic_joints if j in model.joint_names]
    lossy = [model.joint_names[k] for k in idx if losses.damping[k] > 0 or losses.friction[k] > 0]
    if order2 and lossy:
        raise ConfigurationError(f"parameter 'joint_losses': the series-elastic joints {', '.join(lossy)} have losses, "
                                 "and at order 2 their motors need the third joint rate (not on the reference "
                                 "topic); use order 1, elastic_joints: false, or the in-process loop "
                                 "(geodyn_fly --joint-losses)")
    return losses
