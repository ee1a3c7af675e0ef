"""The ``--record FILE.mcap`` of the ROS loops: the messages as they travel, into one MCAP file.

:class:`McapTap` is a node of the loop's session that subscribes, with ``raw=True``, to every topic
a flight recording holds (:data:`geodyn_ros.loops.recording.TOPICS`, plus ``cmd/wrench``,
``cmd/joint_efforts``, ``feedforward/rotor_speeds`` and ``desired/state`` where a loop has them)
and writes the CDR bytes rclpy received, unchanged, into a
:class:`~geodyn_ros.loops.recording.CdrRecording`, so a ROS recording and a ``geodyn_fly
--record`` one look the same in Foxglove: the same types, the row's namespace ``/<row>/`` before
each topic (``/diagnostics`` global), log time = simulated time.

The jets are the typed ``geodyn_msgs`` messages the nodes publish by default (``reference``
``ReferenceJet``, ``flat_reference`` ``FlatReference``, ``feedforward/jet`` and
``feedforward/flat_jet`` ``FeedforwardJet``, ``feedforward/rotor_speeds`` ``RotorSpeeds``,
``desired/state`` ``DesiredState``); their schemas are the installed ``geodyn_msgs`` ``.msg`` files
(:func:`~geodyn_ros.loops.recording.message_definition`), so Foxglove decodes them.

Log time: a message's ``header.stamp`` (state, commands, the jets, ``feedforward/wrench``), or,
for a ``Float64MultiArray`` with a stamp in ``data[0:2]`` (a deprecated jet layout,
:mod:`geodyn_ros.ros.wire.jets`), that stamp;
``cmd/rotor_speeds`` is ``actuator_msgs/Actuators`` (stamped, :mod:`geodyn_ros.ros.wire.actuator_commands`);
a deprecated jet without a stamp is written with the stamp of the next ``cmd/motor_efforts``; ``/diagnostics``, whose nodes may stamp
with the wall clock, gets the newest simulated stamp received before it. The lock-step simulator
starts at ``t = 0``, so the times are those of the in-process recording with ``--preroll 0``.
:meth:`McapTap.stop_at` ends the recording where the in-process one ends: states, references and
feedforward up to the last step's stamp, commands up to the one before (the command of the last
state is never applied).

A write error (a full disk) raises in no callback: the recording keeps it
(:attr:`~geodyn_ros.loops.recording.CdrRecording.error`, the partial file renamed), nothing more
is written, and the session's spin ends the run with it
(:meth:`~geodyn_ros.ros.loops.loop_session.LockstepSession.spin`).
"""
from __future__ import annotations

__all__ = ["EXTRA_TOPICS", "McapTap", "row_diagnostics"]

#: topics of the ROS loops beyond the in-process recording's (relative name -> ROS 2 type)
EXTRA_TOPICS = {"cmd/wrench": "geometry_msgs/msg/WrenchStamped", "cmd/joint_efforts": "sensor_msgs/msg/JointState",
                "feedforward/rotor_speeds": "geodyn_msgs/msg/RotorSpeeds",
                "desired/state": "geodyn_msgs/msg/DesiredState"}


def _msg_class(datatype: str):
    import importlib
    pkg, _, name = datatype.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


class McapTap:
    """Subscribe ``node`` (a node of the loop's session, in its namespace) to the recorded topics and
    write what arrives into ``recording`` (a :class:`~geodyn_ros.loops.recording.CdrRecording`) under
    ``/<row>/``. ``last_ns``: the newest simulated stamp seen."""

    def __init__(self, node, recording, row: str):
        from geodyn_ros.loops.recording import TOPICS, row_topic

        from ..common.runtime import control_qos
        from ..wire.actuator_commands import ROTOR_MSG_NAME, require_actuator_msgs

        self.rec, self.row, self.last_ns = recording, row, 0
        self.end_ns = self.cmd_end_ns = None
        self._last: dict[str, int] = {}        # newest stamp written per topic
        self._pending: list = []               # unstamped messages waiting for their stamp
        require_actuator_msgs()
        topics = {**TOPICS, **EXTRA_TOPICS, "cmd/rotor_speeds": ROTOR_MSG_NAME}
        qos = control_qos(100)
        for topic, datatype in topics.items():
            cls = _msg_class(datatype)
            name = node.resolve_topic_name(topic)          # the session's namespace
            written = row_topic(row, name.lstrip("/")) if not topic.startswith("/") else topic
            node.create_subscription(cls, topic, self._callback(topic, written, datatype, cls),
                                     100 if topic.startswith("/") else qos, raw=True)

    def stop_at(self, end_ns: int, dt_ns: int) -> None:
        """Write nothing stamped after ``end_ns`` (the last step), no command stamped at or after it."""
        self.end_ns, self.cmd_end_ns = int(end_ns), int(end_ns) - int(dt_ns)

    def complete(self) -> bool:
        """True once every stamped topic received has reached its end (:meth:`stop_at`)."""
        if self.end_ns is None:
            return False
        return not self._pending and all(
            last >= (self.cmd_end_ns if "/cmd/" in t else self.end_ns) for t, last in self._last.items())

    def _callback(self, relative: str, topic: str, datatype: str, cls):
        from rclpy.serialization import deserialize_message

        from geodyn_ros.loops.recording import RecordingError
        jet = datatype == "std_msgs/msg/Float64MultiArray"
        global_ = topic == "/diagnostics"
        command = relative.startswith("cmd/")
        efforts = relative == "cmd/motor_efforts"

        def on_message(data: bytes) -> None:
            if self.rec.error is not None:      # the recording failed: nothing more is written
                return
            try:
                write(data)
            except RecordingError:   # kept on the recording (rec.error): the session's spin raises it
                pass

        def write(data: bytes) -> None:
            if global_:
                self.rec.write_cdr(topic, datatype, data, self.last_ns)
                return
            m = deserialize_message(data, cls)
            if jet:
                d = m.data
                if not (m.layout.data_offset >= 2 and len(d) >= 2):     # unstamped
                    self._pending.append((topic, datatype, data))
                    return
                ns = int(d[0]) * 1_000_000_000 + int(d[1])
            else:
                ns = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
            end = self.cmd_end_ns if command else self.end_ns
            if efforts:      # the rotor speeds sent just before carry this stamp
                for item in self._pending:
                    if end is None or ns <= end:
                        self._write(*item, ns)
                self._pending.clear()
            if end is not None and ns > end:
                return
            self.last_ns = max(self.last_ns, ns)
            self._write(topic, datatype, data, ns)
        return on_message

    def _write(self, topic: str, datatype: str, data: bytes, ns: int) -> None:
        self._last[topic] = ns
        self.rec.write_cdr(topic, datatype, data, ns)

    def write_diagnostics(self, statuses: list) -> None:
        """``/diagnostics``: one ``DiagnosticArray`` of ``statuses`` (dicts of ``DiagnosticStatus``
        fields, :func:`row_diagnostics`) at the newest simulated stamp, serialized by rclpy."""
        from rclpy.serialization import serialize_message
        self.rec.write_cdr("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray",
                           serialize_message(row_diagnostics(statuses, self.last_ns)), self.last_ns)


def row_diagnostics(statuses: list, t_ns: int):
    """``diagnostic_msgs/DiagnosticArray`` stamped ``t_ns`` of ``statuses`` (dicts:
    ``level`` int, ``name``, ``message``, ``hardware_id``, ``values`` [{key, value}])."""
    from builtin_interfaces.msg import Time
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    arr = DiagnosticArray()
    arr.header.stamp = Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)
    for s in statuses:
        arr.status.append(DiagnosticStatus(level=bytes([s["level"]]), name=s["name"], message=s["message"],
                                           hardware_id=s["hardware_id"],
                                           values=[KeyValue(key=v["key"], value=v["value"]) for v in s["values"]]))
    return arr
