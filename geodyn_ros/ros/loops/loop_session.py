"""The ROS set-up every closed-loop runner shares, in one process on one executor.

:class:`LockstepSession` holds what ``geodyn_closed_loop`` (:mod:`geodyn_ros.ros.loops.closed_loop`),
its ``--actuated`` and ``--underactuated`` loops (:mod:`geodyn_ros.ros.loops.actuated_closed_loop`,
:mod:`geodyn_ros.ros.loops.underactuated_closed_loop`) and :func:`geodyn_ros.ros.loops.fly_closed_loop.run_ros_fly`
do alike: a private rclpy context, the loop's nodes (lock-step simulator first), the recorder
(:class:`LoopRecorder`), one executor spun until the simulator has made its steps
(:func:`~geodyn_ros.ros.common.runtime.spin_lockstep`), and the teardown. :func:`add_ros_options`,
:func:`check_ros_options` and :func:`isolate_unless` are the ROS options of their command lines.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

__all__ = ["LOCKSTEP_INPUTS", "LockstepSession", "LoopRecorder", "add_ros_options", "check_ros_options",
           "isolate_unless", "add_record_option", "open_recording", "close_recording", "loop_failures",
           "loop_failure"]

#: the input parameters every lock-step runner gives geodyn_node and the controllers: the stamp pairing
#: (``input_policy: exact``, so a run is bit-identical to the in-process loop) over reliable sensor
#: subscriptions (the simulator's odom and joint_states are never lost; geodyn_ros.ros.inputs.latest_inputs)
LOCKSTEP_INPUTS = {"input_policy": "exact", "sensor_reliability": "reliable"}


class LoopRecorder:
    """The ``geodyn_recorder`` node of a closed-loop run and what it received.

    Always subscribes ``odom`` (``nav_msgs/Odometry``, REP 105) and ``joint_states`` (QoS
    :func:`~geodyn_ros.ros.common.runtime.control_qos` depth 100); optionally ``motor_states``,
    the published commands ``cmd/rotor_speeds`` and ``cmd/motor_efforts`` (their peaks) and
    ``/diagnostics``. Attributes, keyed by the message stamp [ns]:

    * ``odom``: ``(C, Vb)``, ``C`` (4, 4) base pose in ``odom``, ``Vb`` (6,) body twist ``(w, v)``
      (base axes; REP 105 sends it linear first, stored angular first);
    * ``joints``: (n,) joint positions in ``joint_names`` order;
    * ``motors``: ``(theta, theta', effort)`` arrays of ``motor_states`` (with ``motor_states``);
    * ``peaks``: ``{"omega": largest commanded rotor speed [rad/s], "u": largest |motor effort|
      [N m]}`` (with ``commands``); ``diagnostics``: every ``DiagnosticStatus`` received.
    """

    def __init__(self, node, joint_names, *, motor_states: bool = False, commands: bool = False,
                 diagnostics: bool = False):
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import JointState

        from ..wire.actuator_commands import require_actuator_msgs
        from ..common.runtime import control_qos

        self.node, self.joint_names = node, tuple(joint_names)
        self.odom: dict[int, tuple] = {}
        self.joints: dict[int, np.ndarray] = {}
        self.motors: dict[int, tuple] = {}
        self.diagnostics: list = []
        self.peaks = {"omega": 0.0, "u": 0.0}
        qos = control_qos(100)
        node.create_subscription(Odometry, "odom", self._on_odom, qos)
        node.create_subscription(JointState, "joint_states", self._on_joint_states, qos)
        if motor_states:
            node.create_subscription(JointState, "motor_states", self._on_motor_states, qos)
        if commands:
            node.create_subscription(require_actuator_msgs(), "cmd/rotor_speeds", self._on_rotors, qos)
            node.create_subscription(JointState, "cmd/motor_efforts", self._on_efforts, qos)
        if diagnostics:
            node.create_subscription(DiagnosticArray, "/diagnostics", lambda m: self.diagnostics.extend(m.status),
                                     100)

    def _on_odom(self, msg):
        from ..wire.conversions import pose_matrix, stamp_to_ns
        p, o, v, w = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist.linear, \
            msg.twist.twist.angular
        self.odom[stamp_to_ns(msg.header.stamp)] = (
            pose_matrix(p.x, p.y, p.z, o.x, o.y, o.z, o.w, np.eye(4), "odom"), np.array([w.x, w.y, w.z, v.x, v.y, v.z]))

    def _on_joint_states(self, msg):
        from ..wire.conversions import stamp_to_ns
        pos = dict(zip(msg.name, msg.position))
        self.joints[stamp_to_ns(msg.header.stamp)] = np.array([pos[j] for j in self.joint_names])

    def _on_motor_states(self, msg):
        from ..wire.conversions import stamp_to_ns
        self.motors[stamp_to_ns(msg.header.stamp)] = (np.array(msg.position), np.array(msg.velocity),
                                                      np.array(msg.effort))

    def _on_rotors(self, msg):
        from ..wire.conversions import as_float64
        v = as_float64(msg.velocity)
        if len(v):
            self.peaks["omega"] = max(self.peaks["omega"], float(v.max()))

    def _on_efforts(self, msg):
        from ..wire.conversions import as_float64
        if len(msg.effort):
            self.peaks["u"] = max(self.peaks["u"], float(np.abs(as_float64(msg.effort)).max()))

    def stamps(self, last_ns: int) -> list:
        """Sorted stamps [ns] up to ``last_ns`` at which both ``odom`` and ``joint_states`` arrived."""
        return sorted(s for s in set(self.odom) & set(self.joints) if s <= last_ns)

    def table3_log(self, last_ns: int):
        """:class:`~geodyn_ros.loops.tracking.TrackingLog` of the base pose and joints up to
        ``last_ns`` against the exact Table 3 reference at the same stamps."""
        from geodyn_ros.loops.tracking import TrackingLog
        stamps = self.stamps(last_ns)
        t = np.array(stamps, dtype=float) * 1e-9
        return TrackingLog.from_samples(t, [self.odom[s][0] for s in stamps], [self.joints[s] for s in stamps],
                                        self.joint_names)

    def reference_log(self, model, last_ns: int, reference, order: int, *, flat: bool, truth=None):
        """:class:`~geodyn_ros.loops.tracking.TrackingLog` up to ``last_ns`` against
        ``reference(t, order)`` at the same stamps. ``flat``: ``reference`` gives a
        ``FlatReference``; ``p`` is the system CoM of the received states
        (``gd.center_of_mass``, world frame) against ``c_d``, ``R_d`` the base attitude of the
        flat map (``gd.flat_inverse_dynamics``). Otherwise a base ``Reference``: ``p`` is the
        base origin against the reference base pose. ``truth``: ``{stamp [ns]: (C, q)}`` (the
        simulator's exact states, :attr:`SimNode.truth`, under sensor streams) instead of the
        received states (the CoM position needs no twist)."""
        import geodyn_ros as gd
        from geodyn_ros.lie import Ad
        from geodyn_ros.loops.tracking import TrackingLog
        stamps = self.stamps(last_ns) if truth is None else sorted(s for s in truth if s <= last_ns)
        n, nj = len(stamps), model.n_joints
        t = np.array(stamps, dtype=float) * 1e-9
        p, p_d, R, R_d = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((n, 3, 3))
        q, q_d = np.empty((n, nj)), np.empty((n, nj))
        for i, s in enumerate(stamps):
            (C, Vb), qi = (self.odom[s], self.joints[s]) if truth is None else ((truth[s][0], np.zeros(6)), truth[s][1])
            ref = reference(s * 1e-9, order)
            if flat:     # the system CoM, as the in-process log's p
                p[i] = gd.center_of_mass(model, C, (Ad(C) @ Vb)[None], qi[None])[0]
                fl = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, order)
                p_d[i], R_d[i] = ref.com[0], fl.base_pose[:3, :3]
            else:        # the base origin
                p[i], p_d[i], R_d[i] = C[:3, 3], ref.base_pose[:3, 3], ref.base_pose[:3, :3]
            R[i], q[i], q_d[i] = C[:3, :3], qi, ref.q[0]
        return TrackingLog(t, p, p_d, R, R_d, q, q_d, tuple(model.joint_names))


class LockstepSession:
    """The ROS set-up of every closed-loop runner (``with LockstepSession(namespace) as run:``).

    Checks ``namespace`` (:func:`~geodyn_ros.ros.common.runtime.check_namespace`, a
    :class:`~geodyn_ros.ros.common.params.ConfigurationError` for one ROS refuses), creates a private
    rclpy ``Context``, makes SIGINT/SIGTERM raise ``KeyboardInterrupt`` (a new run: an earlier
    stop request is cleared) and initializes rclpy on it. :meth:`add` starts the loop's nodes (the
    lock-step simulator first), :meth:`record` the :class:`LoopRecorder`, :meth:`spin` runs the
    loop on one executor (``EventsExecutor`` where available). Leaving the block restores the
    signal handling, destroys every node and shuts the context down, also after an error.
    """

    def __init__(self, namespace: str = ""):
        from rclpy.context import Context

        from ..common.runtime import check_namespace, init_rclpy, interrupt_on_signals

        self.ns = check_namespace(namespace)
        self.ctx = Context()
        interrupt_on_signals(reset=True)
        init_rclpy(context=self.ctx)
        self.nodes: list = []
        self.taps: list = []

    def __enter__(self) -> "LockstepSession":
        return self

    def __exit__(self, *exc) -> None:
        from ..common.runtime import interrupt_on_signals
        interrupt_on_signals()
        for nd in self.nodes:
            nd.destroy_node()
        self.ctx.try_shutdown()

    def add(self, cls, parameters: dict):
        """Create node class ``cls`` in the session's namespace and context with ``parameters``
        (name -> value, as parameter overrides); keep and return it."""
        from ..common.params import parameter_overrides
        node = cls(namespace=self.ns, context=self.ctx, parameter_overrides=parameter_overrides(parameters))
        self.nodes.append(node)
        return node

    def record(self, joint_names, **topics) -> LoopRecorder:
        """Add the ``geodyn_recorder`` node (after the loop's nodes) and return its
        :class:`LoopRecorder`; ``topics``: its optional subscriptions."""
        from rclpy.node import Node
        node = Node("geodyn_recorder", namespace=self.ns, context=self.ctx)
        self.nodes.append(node)
        return LoopRecorder(node, joint_names, **topics)

    def tap(self, recording, row: str):
        """Add the ``geodyn_mcap_recorder`` node (after the loop's nodes) that writes every recorded
        topic, as it travels, into ``recording`` under ``/<row>/``; its
        :class:`~geodyn_ros.ros.loops.mcap_recorder.McapTap`."""
        from rclpy.node import Node

        from .mcap_recorder import McapTap
        node = Node("geodyn_mcap_recorder", namespace=self.ns, context=self.ctx)
        self.nodes.append(node)
        tap = McapTap(node, recording, row)
        self.taps.append(tap)
        return tap

    def _recording_error(self):
        """The :class:`~geodyn_ros.loops.recording.RecordingError` of a tap's recording (a write
        error in its callback, kept there: a callback never raises), or None."""
        return next((tap.rec.error for tap in self.taps if tap.rec.error is not None), None)

    def spin(self, sim, duration: float, timestep: float, *, wall_timeout: float | None, progress=None,
             what: str = "closed loop", wall_per_second: float = 20.0) -> tuple:
        """Spin every node on one executor until the lock-step simulator ``sim`` has made
        ``round(duration / timestep)`` steps (:func:`~geodyn_ros.ros.common.runtime.spin_lockstep`;
        ``RuntimeError`` naming ``what`` and the first four nodes' last problems after
        ``wall_timeout`` wall seconds without a step, default ``60 + wall_per_second x duration``). Returns
        ``(end_steps, last_ns, wall)``: the steps, the stamp [ns] of the last one and the loop's
        wall time [s]."""
        from ..common.runtime import make_executor, spin_lockstep
        wall_timeout = 60.0 + wall_per_second * duration if wall_timeout is None else wall_timeout
        ex = make_executor(context=self.ctx)
        for nd in self.nodes:
            ex.add_node(nd)
        end_steps = int(round(duration / timestep))
        for tap in self.taps:
            tap.stop_at(end_steps * sim.dt_ns, sim.dt_ns)
        wall = spin_lockstep(ex, sim, end_steps, wall_timeout=wall_timeout, progress=progress, nodes=self.nodes[:4],
                             what=what, abort=self._recording_error if self.taps else None)
        t0 = time.monotonic()    # a recording: the last step's reference, feedforward and commands too (2 s at most)
        while self.taps and not all(tap.complete() for tap in self.taps) and time.monotonic() - t0 < 2.0:
            ex.spin_once(timeout_sec=0.01)
        if self._recording_error() is not None:
            raise self._recording_error()
        return end_steps, end_steps * sim.dt_ns, wall


def add_ros_options(ap, frame_prefix_help: str = "frame_prefix of the link frame ids, e.g. robot1/ (default: none)"):
    """Add the ROS options every closed-loop command line has to the ``argparse`` parser ``ap``:
    ``--no-isolate``, ``--namespace`` and ``--frame-prefix`` (help ``frame_prefix_help``)."""
    ap.add_argument("--no-isolate", action="store_true",
                    help="do not set ROS_AUTOMATIC_DISCOVERY_RANGE=OFF (lets other processes see the topics)")
    ap.add_argument("--namespace", default="", help="namespace of the nodes, e.g. robot1 (default: the root)")
    ap.add_argument("--frame-prefix", default="", help=frame_prefix_help)


def check_ros_options(ap, args) -> None:
    """``ap.error`` (exit status 2, one line naming the option) for a ``--namespace`` or
    ``--frame-prefix`` in ``args`` that ROS would refuse."""
    from ..common.params import ConfigurationError, check_frame_prefix
    from ..common.runtime import check_namespace
    try:
        check_namespace(args.namespace, "option --namespace")
        check_frame_prefix(args.frame_prefix)
    except ConfigurationError as exc:
        ap.error(str(exc).replace("parameter 'frame_prefix'", "option --frame-prefix"))


def isolate_unless(no_isolate: bool) -> None:
    """Unless ``no_isolate``: ``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF`` for this process (the run
    neither hears nor disturbs other ROS graphs)."""
    if not no_isolate:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "OFF"


def add_record_option(ap, what: str = "every row's messages") -> None:
    """Add ``--record FILE.mcap`` to the ``argparse`` parser ``ap`` (:func:`open_recording`)."""
    ap.add_argument("--record", metavar="FILE.mcap", help=f"write {what}, as they travel, to this MCAP file (ROS 2 "
                    "schemas, each row under /<row>/; Foxglove opens it; doc/howto/record.md)")


def open_recording(ap, args, summary: dict):
    """The :class:`~geodyn_ros.loops.recording.CdrRecording` of ``args.record`` (None without
    ``--record``) with ``summary`` as its metadata; ``ap.error`` (exit status 2, one line
    ``<file>: record: <problem>; <fix>``) for a path that cannot be written (a FIFO or a device
    too: :func:`~geodyn_ros.loops.recording.check_record_path`) or a missing writer.
    Call it before any run."""
    if getattr(args, "record", None) is None:
        return None
    from geodyn_ros.loops.recording import CdrRecording, check_record_path
    try:
        check_record_path(args.record)
        import mcap.writer  # noqa: F401
    except ValueError as exc:
        ap.error(str(exc))
    except ImportError:
        ap.error(f"{args.record}: record: the MCAP writer is not installed; pip install mcap")
    try:
        return CdrRecording(args.record, summary={"time_base": "simulated time, t = 0 at the simulator's start",
                                                  "rows": "each row under its namespace /<row>/; /diagnostics global",
                                                  **summary})
    except ValueError as exc:      # swapped for a FIFO or a device since the check
        ap.error(str(exc))


def close_recording(recording, prog: str = "geodyn_closed_loop") -> int:
    """Finish ``recording`` (None: nothing) and print its one line: path, messages, topics, size.
    Returns the exit status it asks for: 0, or 2 for a recording that could not be written (its
    :class:`~geodyn_ros.loops.recording.RecordingError` line printed on stderr here if the summary
    failed, by :func:`loop_failure` if a message did; the partial file renamed)."""
    from geodyn_ros.loops.recording import RecordingError
    if recording is None:
        return 0
    if recording.error is not None:
        return 2
    try:
        recording.close()
    except RecordingError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(f"recording: {recording.path} ({sum(recording.counts.values())} messages on "
          f"{len(recording.counts)} topics, {recording.path.stat().st_size / 1e6:.1f} MB)")
    return 0


def loop_failures() -> tuple:
    """The exceptions a ROS loop's command line ends with in one line (:func:`loop_failure`): a
    loop that stalled, a recording that could not be written."""
    from geodyn_ros.loops.recording import RecordingError

    from ..common.runtime import LoopStalled
    return (LoopStalled, RecordingError)


def loop_failure(prog: str, exc: BaseException) -> int:
    """Print ``exc`` (one of :func:`loop_failures`) as one line ``<prog>: <line>`` on stderr and
    return the exit status: 2 for a recording that could not be written (as every ``--record``
    error), 1 for a loop that stalled (a failure of the run, as a diverged row of ``geodyn_fly``)."""
    from geodyn_ros.loops.recording import RecordingError
    from geodyn_ros.model.validate import clip
    print(f"{prog}: {clip(str(exc), 600)}", file=sys.stderr)
    return 2 if isinstance(exc, RecordingError) else 1
