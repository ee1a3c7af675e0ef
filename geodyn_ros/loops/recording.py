"""Flight recordings: MCAP files with ROS 2 schemas, written without ROS (``geodyn_fly --record``).

A recording is an `MCAP <https://mcap.dev>`_ file with the ``ros2`` profile: every schema is a
``ros2msg`` message definition and every message CDR, as ``ros2 bag record -s mcap`` writes them,
so Foxglove (and ``ros2 bag``, and the ``mcap`` readers) open it. The schema text of a type is its
``.msg`` file with the ``.msg`` files of every type it uses appended, each after a line of 80
``=`` and ``MSG: pkg/Type`` (rosbag2's and ``mcap_ros2``'s format). The ``.msg`` files are read
from the installed ROS message packages (``share/<pkg>/msg/``, :func:`message_search_dirs`),
never typed here. The in-process loops write through ``mcap_ros2``'s encoder
(:class:`McapRecording`); the ROS loops write the CDR bytes their messages travel as
(:class:`CdrRecording`, :mod:`geodyn_ros.ros.loops.loop_session`).

**Topics.** Every row (level) of a flight is in the one file, each under its own namespace, as if
its nodes had run with ``namespace:=<row>``: ``/ff2/odom``, ``/ff2/joint_states``, ... (the
names the ROS nodes use, :data:`TOPICS`). ``/diagnostics`` stays global, as the nodes' does: one
``DiagnosticArray`` at the end with a ``DiagnosticStatus`` per row (``name`` = ``geodyn_fly/<row>``,
level ``OK`` flown or ``ERROR`` diverged, the RMS figures as values).

**Time.** Log time = publish time = header stamp = simulated time, ``t = 0`` at the first recorded
sample (the start of the scored window; the pre-roll before it is not recorded), in every row;
rows overlay on one time axis. ``every`` records one control step in ``every``.

The writers (``mcap``, ``mcap-ros2-support``) are imported when a recording starts: importing
this module imports neither them nor rclpy.
"""
from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

import numpy as np

__all__ = ["TOPICS", "SEPARATOR", "message_search_dirs", "message_definition", "check_record_path",
           "open_recording_file", "partial_path", "RecordingError", "jet_layout", "McapRecording", "CdrRecording", "RowRecorder", "row_topic", "stamp"]

#: topic (relative, as the nodes name it) -> ROS 2 type, the five kinds of a recording
TOPICS = {
    # state (geodyn_actuated_sim)
    "odom": "nav_msgs/msg/Odometry", "joint_states": "sensor_msgs/msg/JointState",
    "motor_states": "sensor_msgs/msg/JointState",
    # reference (geodyn_reference): rank 6 base jet, rank 4 flat outputs (the typed geodyn_msgs)
    "reference": "geodyn_msgs/msg/ReferenceJet", "flat_reference": "geodyn_msgs/msg/FlatReference",
    # feedforward (geodyn_node)
    "feedforward/jet": "geodyn_msgs/msg/FeedforwardJet", "feedforward/wrench": "geometry_msgs/msg/WrenchStamped",
    "feedforward/joint_efforts": "sensor_msgs/msg/JointState", "feedforward/flat_jet": "geodyn_msgs/msg/FeedforwardJet",
    # commands (the controllers; cmd/rotor_speeds is actuator_msgs/Actuators, as over ROS)
    "cmd/rotor_speeds": "actuator_msgs/msg/Actuators", "cmd/motor_efforts": "sensor_msgs/msg/JointState",
    # diagnostics (every node; global)
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
}
#: the line between two message definitions of a schema (rosbag2's: 80 '=')
SEPARATOR = "=" * 80
_PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
               "int64", "uint64", "string", "wstring"}
# the row label of the jet layouts of geodyn_ros.ros.wire.jets (jet_layout)
_ROW_LABEL = "derivative"
_NS = 1_000_000_000


def message_search_dirs() -> list[Path]:
    """The ``share`` directories searched for ``<pkg>/msg/<Type>.msg``, in order: every prefix of
    ``AMENT_PREFIX_PATH`` (a sourced ROS 2), then the interpreter's prefix (the ``ros-*-msgs``
    wheels install there)."""
    dirs = [Path(p) / "share" for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return dirs + [Path(sys.prefix) / "share"]


def _split(datatype: str) -> tuple:
    parts = datatype.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"{datatype}: not a message type (pkg/msg/Type or pkg/Type)")


def _msg_text(pkg: str, name: str, dirs) -> str:
    for d in dirs:
        p = d / pkg / "msg" / f"{name}.msg"
        if p.is_file():
            return p.read_text()
    raise FileNotFoundError(f"{pkg}/msg/{name}.msg: not found in {', '.join(str(d) for d in dirs)}; install the "
                            f"ROS 2 message package (pip install ros-{pkg.replace('_', '-')}, or source ROS 2)")


def _field_types(pkg: str, text: str) -> list:
    """The complex types (``pkg/Type``) of the fields of one ``.msg`` text, in order."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        base = re.sub(r"\[.*\]$", "", line.split()[0])       # arrays: T[], T[3], T[<=3]
        base = re.sub(r"<=\d+$", "", base)                     # bounded strings: string<=5
        if base in _PRIMITIVES:
            continue
        if "/" in base:
            p, _, n = base.partition("/")
            n = n.split("/")[-1]                               # pkg/msg/Type
        else:
            p, n = ("std_msgs", "Header") if base == "Header" else (pkg, base)
        out.append((p, n))
    return out


def message_definition(datatype: str, dirs=None) -> str:
    """The full ``ros2msg`` schema text of ``datatype`` (``pkg/msg/Type``): its ``.msg`` file, then
    each type it uses (depth first, once) after ``SEPARATOR`` and ``MSG: pkg/Type``."""
    dirs = message_search_dirs() if dirs is None else list(dirs)
    pkg, name = _split(datatype)
    text = _msg_text(pkg, name, dirs)
    seen, parts, todo = {(pkg, name)}, [text.rstrip("\n")], list(reversed(_field_types(pkg, text)))
    while todo:
        p, n = todo.pop()
        if (p, n) in seen:
            continue
        seen.add((p, n))
        sub = _msg_text(p, n, dirs)
        parts.append(f"{SEPARATOR}\nMSG: {p}/{n}\n{sub.rstrip(chr(10))}")
        todo.extend(reversed(_field_types(p, sub)))
    return "\n".join(parts) + "\n"


def check_record_path(path, key: str = "record") -> Path:
    """``path`` as a Path if a recording can be written there; else ValueError, one line
    ``<file>: <key>: <problem>; <fix>`` (not ``.mcap``, no such directory, not writable, a directory,
    or an existing path, a symlink followed, that is not a regular file: a FIFO, whose writer would
    wait for a reader, a device such as ``/dev/full``, a socket)."""
    p = Path(path)
    if p.suffix != ".mcap":
        raise ValueError(f"{p}: {key}: not an .mcap file name; give a path ending in .mcap")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{p}: {key}: directory {parent} does not exist; create it or record elsewhere")
    if p.is_dir():
        raise ValueError(f"{p}: {key}: is a directory; give a file name ending in .mcap")
    kind = _not_regular(p)
    if kind:
        raise ValueError(f"{p}: {key}: {kind}; {_REGULAR_FIX}")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"{p}: {key}: not writable; record to a directory you can write")
    return p


_REGULAR_FIX = "give the path of a regular file (or a new one) ending in .mcap"
#: what an existing path that is not a regular file is, by its stat mode (symlinks followed)
_KINDS = ((stat.S_ISFIFO, "is a FIFO, not a regular file (its writer would wait for a reader)"),
          (stat.S_ISCHR, "is a character device, not a regular file"),
          (stat.S_ISBLK, "is a block device, not a regular file"), (stat.S_ISSOCK, "is a socket, not a regular file"))


def _not_regular(p, mode=None) -> str | None:
    """What ``p`` (or a ``stat`` ``mode``) is if it exists and is not a regular file, else None."""
    if mode is None:
        try:
            mode = os.stat(p).st_mode
        except OSError:          # no such file (a new recording), or a dangling symlink: open says
            return None
    if stat.S_ISREG(mode):
        return None
    return next((w for test, w in _KINDS if test(mode)), "is not a regular file")


class RecordingError(Exception):
    """A recording that could not be written while flying (a full disk, a quota, a file size
    limit): one line ``<file>: record: <problem>; <fix>``, the partial file renamed
    ``<stem>.partial.mcap`` (:attr:`partial`; None if it could not be kept). The command lines
    print it and exit with status 2."""

    def __init__(self, line: str, partial: Path | None):
        super().__init__(line)
        self.partial = partial


def open_recording_file(path, key: str = "record"):
    """The binary file object a recording writes, for ``path``: opened without blocking (a FIFO
    swapped in after :func:`check_record_path` fails at once instead of waiting for a reader),
    then refused (ValueError, one line) unless it is a regular file, then truncated."""
    p = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags, 0o666)
    except OSError as exc:
        raise ValueError(f"{p}: {key}: cannot be opened ({exc.strerror or type(exc).__name__}); "
                         f"{_REGULAR_FIX}") from None
    try:
        kind = _not_regular(p, os.fstat(fd).st_mode)
        if kind:
            raise ValueError(f"{p}: {key}: {kind}; {_REGULAR_FIX}")
        os.ftruncate(fd, 0)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def partial_path(path) -> Path:
    """Where the partial file of a failed recording ``path`` is kept: ``<stem>.partial.mcap``."""
    p = Path(path)
    return p.with_name(f"{p.stem}.partial.mcap")


def stamp(t_ns: int) -> dict:
    """``builtin_interfaces/Time`` of ``t_ns`` [ns]."""
    s, n = divmod(int(t_ns), _NS)
    return {"sec": s, "nanosec": n}


def row_topic(row: str | None, topic: str) -> str:
    """The recorded name of the relative ``topic`` of ``row``: ``/<row>/<topic>`` (``/<topic>``
    without a row); an absolute topic (``/diagnostics``) stays as it is."""
    if topic.startswith("/"):
        return topic
    return f"/{row}/{topic}" if row else f"/{topic}"


def jet_layout(rows: int, columns, offset: int) -> dict:
    """``std_msgs/MultiArrayLayout`` of a row-major jet (:mod:`geodyn_ros.ros.wire.jets`)."""
    cols = len(columns)
    return {"dim": [{"label": _ROW_LABEL, "size": rows, "stride": rows * cols},
                    {"label": ",".join(columns), "size": cols, "stride": cols}], "data_offset": offset}


def _floats(a) -> list:
    return np.asarray(a, dtype=np.float64).ravel().tolist()


def _vec(v) -> dict:
    """``geometry_msgs/Vector3`` of a 3-vector."""
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


class _Counting:
    """Messages written per topic (``counts``), the file's path, closing (``with ... as rec:``), and
    what a write error does (:meth:`_failed`): the file closed, kept as ``<stem>.partial.mcap``,
    one :class:`RecordingError` line; ``error`` is it (None while the recording is good)."""

    def __init__(self, path):
        self.path = Path(path)
        self.counts: dict[str, int] = {}
        self._schemas: dict[str, object] = {}
        self.error: RecordingError | None = None
        self.last_ns = 0          # the newest log time written [ns] (said in a write error)

    def _count(self, topic: str, t_ns: int) -> None:
        self.counts[topic] = self.counts.get(topic, 0) + 1
        self.last_ns = max(self.last_ns, int(t_ns))

    def _failed(self, exc: OSError) -> RecordingError:
        """The :class:`RecordingError` of the write error ``exc``, once: the file closed (what it
        still buffers is dropped), renamed ``<stem>.partial.mcap`` (removed if that fails)."""
        if self.error is not None:
            return self.error
        try:
            self._file.close()
        except OSError:          # the buffer cannot be flushed either (the disk is still full)
            pass
        partial = partial_path(self.path)
        try:
            os.replace(self.path, partial)
            kept = f"the partial recording is {partial}"
        except OSError:
            partial = None
            try:
                os.unlink(self.path)
                kept = "the partial recording was removed"
            except OSError:
                kept = f"the partial recording is left as {self.path}"
        n = sum(self.counts.values())
        why = exc.strerror or type(exc).__name__
        self.error = RecordingError(f"{self.path}: record: cannot write ({why}) after {n} messages, at t = "
                                    f"{self.last_ns * 1e-9:.3f} s; {kept}; free space (or raise the quota or "
                                    "file size limit), or record elsewhere", partial)
        return self.error

    def _guarded(self, call, *a, **kw):
        """``call(*a, **kw)`` of the writer; an OSError becomes the :class:`RecordingError` (raised)."""
        if self.error is not None:
            raise self.error
        try:
            return call(*a, **kw)
        except OSError as exc:
            raise self._failed(exc) from None

    def close(self) -> None:
        """Write the file's summary and close it (once); a write error: :class:`RecordingError`
        (the partial file renamed). A failed recording closes without a second error."""
        if self.error is not None or self._file.closed:
            return
        try:
            self._w.finish()
            self._file.close()
        except OSError as exc:
            raise self._failed(exc) from None
        finally:
            if not self._file.closed and self.error is None:
                self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class McapRecording(_Counting):
    """An MCAP file written by ``mcap_ros2`` from plain dicts (no ROS): ``with McapRecording(path) as
    rec:``, one :meth:`row` per flown row, :meth:`diagnostics` at the end. every : record one control
    step in ``every`` (1: every step). ``summary`` (name -> dict of str) goes in the file's metadata
    ``geodyn_fly``."""

    def __init__(self, path, *, every: int = 1, summary: dict | None = None):
        from mcap_ros2.writer import Writer
        super().__init__(path)
        if int(every) < 1:
            raise ValueError(f"every: expected an integer >= 1, got {every!r}")
        self.every = int(every)
        # every schema read before the file is opened: a missing message package is said at once
        self._defs = {dt: message_definition(dt) for dt in sorted(set(TOPICS.values()))}
        self._file = open_recording_file(self.path)
        self._w = Writer(self._file)
        self.rows: dict[str, RowRecorder] = {}
        if summary:
            self._guarded(self._w.add_metadata, "geodyn_fly", {str(k): str(v) for k, v in summary.items()})

    def write(self, topic: str, datatype: str, msg: dict, t_ns: int) -> None:
        """Write ``msg`` (a dict of the type's fields; missing fields are zero) on ``topic`` at ``t_ns``."""
        schema = self._schemas.get(datatype)
        if schema is None:
            text = self._defs.get(datatype) or message_definition(datatype)
            schema = self._schemas[datatype] = self._guarded(self._w.register_msgdef, datatype, text)
        self._guarded(self._w.write_message, topic, schema, msg, log_time=int(t_ns), publish_time=int(t_ns))
        self._count(topic, t_ns)

    def row(self, name: str) -> "RowRecorder":
        """The :class:`RowRecorder` of row ``name`` (its topics under ``/<name>/``)."""
        r = self.rows[name] = RowRecorder(self, name)
        return r

    def diagnostics(self, statuses: list, t_ns: int | None = None) -> None:
        """``/diagnostics``: one ``DiagnosticArray`` of ``statuses`` (dicts of ``DiagnosticStatus``)
        at ``t_ns`` (default the last time recorded in any row)."""
        if t_ns is None:
            t_ns = max((r.last_ns for r in self.rows.values()), default=0)
        self.write("/diagnostics", TOPICS["/diagnostics"],
                   {"header": {"stamp": stamp(t_ns), "frame_id": ""}, "status": statuses}, t_ns)


class CdrRecording(_Counting):
    """An MCAP file of messages already serialized (CDR bytes, as they travel over ROS 2):
    :meth:`write_cdr`. Uses the ``mcap`` writer only; the schemas are :func:`message_definition`."""

    def __init__(self, path, summary: dict | None = None):
        from mcap.writer import Writer
        super().__init__(path)
        self._file = open_recording_file(self.path)
        self._w = Writer(self._file)
        self._guarded(self._w.start, profile="ros2", library="geodyn_ros")
        self._channels: dict[str, int] = {}
        if summary:
            self._guarded(self._w.add_metadata, "geodyn_fly", {str(k): str(v) for k, v in summary.items()})

    def write_cdr(self, topic: str, datatype: str, data: bytes, t_ns: int) -> None:
        """Write the serialized message ``data`` of type ``datatype`` on ``topic`` at ``t_ns``."""
        ch = self._channels.get(topic)
        if ch is None:
            sid = self._schemas.get(datatype)
            if sid is None:
                sid = self._schemas[datatype] = self._guarded(
                    self._w.register_schema, datatype, "ros2msg", message_definition(datatype).encode())
            ch = self._channels[topic] = self._guarded(self._w.register_channel, topic, "cdr", sid)
        self._guarded(self._w.add_message, ch, log_time=int(t_ns), data=bytes(data), publish_time=int(t_ns))
        self._count(topic, t_ns)


class RowRecorder:
    """What one row of an in-process loop writes into a :class:`McapRecording`, as its nodes would
    publish it (:data:`TOPICS`, under ``/<row>/``). The loops call :meth:`attach` once with the
    simulator, then per recorded step :meth:`state` and :meth:`reference` (where the row logs its
    sample) and :meth:`command` (the command held over the next step).

    * ``odom``: base pose in ``world``, body twist (REP 105, linear first, base axes), child frame the
      base link; ``joint_states``: ``q``, ``q'`` and the joint torques acting (held rigid-joint
      command plus the spring torque at an elastic joint); ``motor_states`` (elastic joints):
      ``theta``, ``theta'``, spring torque;
    * ``reference`` (rank 6, ``geodyn_msgs/ReferenceJet``: base pose in ``world``, spatial
      ``V^(k)``, ``q^(k)``) or ``flat_reference`` (rank 4, ``geodyn_msgs/FlatReference``:
      ``c^(k)``, ``psi^(k)``, ``q^(k)``): the jets the loop used, ``child_frame_id`` the base link;
    * ``feedforward/jet`` (``geodyn_msgs/FeedforwardJet``; rank 6: representation ``body``, the
      body wrench jet ``W_b^(0..2)`` in the desired base frame; rank 4: ``spatial``),
      ``feedforward/wrench`` (order 0, base axes: ``W_b`` or ``(tau_b, 0, 0, T)``),
      ``feedforward/joint_efforts`` (``tau^(0)``), rank 4 also ``feedforward/flat_jet``
      (``FeedforwardJet``, ``body``, force ``(0, 0, T^(k))``, torque ``tau_b^(k)``, ``tau^(k)``);
    * ``cmd/rotor_speeds`` (``actuator_msgs/Actuators``: ``velocity``, stamped) and ``cmd/motor_efforts`` (the
      elastic joints' motor torques, then the rigid joints' torques).
    """

    def __init__(self, rec: McapRecording, name: str):
        self.rec, self.name = rec, name
        self.last_ns = 0
        self._k = 0               # control steps seen (the decimation counter)
        self._sim = None

    def attach(self, sim) -> None:
        """The simulator of the row (an :class:`~geodyn_ros.sim.ActuatedSim`): joints, frames, motors."""
        m = sim.model
        self._sim = sim
        self.joints = list(m.joint_names)
        self.base = m.base_link
        self.elastic = list(getattr(sim, "elastic_joints", ()))
        self._el_idx = np.array([self.joints.index(j) for j in self.elastic], dtype=np.intp)
        self._rigid = [j for j in self.joints if j not in self.elastic]
        self._rigid_idx = np.array([self.joints.index(j) for j in self._rigid], dtype=np.intp)
        self._held = np.zeros(len(self.joints))     # the rigid joints' torques held over the step
        self._topics = {t: row_topic(self.name, t) for t in TOPICS}

    def _w(self, topic: str, msg: dict, t_ns: int) -> None:
        self.rec.write(self._topics[topic], TOPICS[topic], msg, t_ns)

    def _due(self) -> bool:
        return self._k % self.rec.every == 0

    def state(self, t: float, C, Vb, q, qd) -> None:
        """The true state at ``t`` [s]: base pose ``C`` (4, 4), body twist ``Vb`` (6,) (w, v), ``q``, ``qd``."""
        if not self._due():
            return
        from geodyn_ros.lie import matrix_to_quat
        ns = self.last_ns = int(round(t * _NS))
        h = {"stamp": stamp(ns), "frame_id": "world"}
        qx, qy, qz, qw = matrix_to_quat(C[:3, :3], "xyzw").tolist()
        x, y, z = C[:3, 3].tolist()
        w = Vb.tolist()
        self._w("odom", {"header": h, "child_frame_id": self.base,
                         "pose": {"pose": {"position": {"x": x, "y": y, "z": z},
                                           "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}}},
                         "twist": {"twist": {"linear": {"x": w[3], "y": w[4], "z": w[5]},
                                             "angular": {"x": w[0], "y": w[1], "z": w[2]}}}}, ns)
        sim = self._sim
        effort = self._held.copy()
        if self.elastic:
            spring = sim.spring_torque()
            effort[self._el_idx] += spring
        h = {"stamp": stamp(ns), "frame_id": ""}
        self._w("joint_states", {"header": h, "name": self.joints, "position": _floats(q), "velocity": _floats(qd),
                                 "effort": _floats(effort)}, ns)
        if self.elastic:
            self._w("motor_states", {"header": h, "name": self.elastic, "position": _floats(sim.motor_angle()),
                                     "velocity": _floats(sim.motor_velocity()), "effort": _floats(spring)}, ns)

    def reference(self, t: float, ref, ff) -> None:
        """The reference sample ``ref`` the loop used at ``t`` and its feedforward ``ff``: a
        ``(W_b jet, tau jet)`` pair (rank 6) or the flat map's ``FlatResult`` (rank 4)."""
        if not self._due():
            return
        from geodyn_ros.lie import matrix_to_quat
        ns = int(round(t * _NS))
        h = {"stamp": stamp(ns), "frame_id": "world"}
        if hasattr(ref, "com"):      # a FlatReference
            k1 = min(len(ref.com), len(ref.yaw), len(ref.q))
            self._w("flat_reference", {"header": h, "child_frame_id": self.base, "order": k1 - 1,
                                       "com": [_vec(c) for c in np.asarray(ref.com[:k1]).tolist()],
                                       "yaw": _floats(ref.yaw[:k1]), "joint_names": self.joints,
                                       "q": _floats(ref.q[:k1])}, ns)
        else:
            k1 = min(len(ref.base_twist), len(ref.q))
            x, y, z = ref.base_pose[:3, 3].tolist()
            qx, qy, qz, qw = matrix_to_quat(ref.base_pose[:3, :3], "xyzw").tolist()
            self._w("reference", {"header": h, "child_frame_id": self.base, "order": k1 - 1,
                                  "representation": "spatial",
                                  "base_pose": {"position": {"x": x, "y": y, "z": z},
                                                "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                                  "base_twist": [{"angular": _vec(v[:3]), "linear": _vec(v[3:])}
                                                 for v in np.asarray(ref.base_twist[:k1]).tolist()],
                                  "joint_names": self.joints, "q": _floats(ref.q[:k1])}, ns)
        if hasattr(ff, "thrust"):    # FlatResult: the spatial wrench jet, the flat jet, (tau_b, 0, 0, T)
            W, tau, rep = ff.base_wrench, ff.tau, "spatial"
            W0 = np.zeros(6)
            W0[:3], W0[5] = ff.body_torque[0], ff.thrust[0]
            Wf = np.zeros((len(ff.thrust), 6))
            Wf[:, :3], Wf[:, 5] = ff.body_torque, ff.thrust
            self._w("feedforward/flat_jet", self._jet(h, "body", Wf, tau), ns)
        else:
            (W, tau), rep = ff, "body"
            W0 = W[0]
        self._w("feedforward/jet", self._jet(h, rep, W, tau), ns)
        n, f = W0[:3].tolist(), W0[3:].tolist()
        self._w("feedforward/wrench", {"header": {"stamp": stamp(ns), "frame_id": self.base},
                                       "wrench": {"force": dict(zip("xyz", f)), "torque": dict(zip("xyz", n))}}, ns)
        self._w("feedforward/joint_efforts", {"header": {"stamp": stamp(ns), "frame_id": ""}, "name": self.joints,
                                              "effort": _floats(tau[0])}, ns)

    def _jet(self, header: dict, rep: str, W, tau) -> dict:
        """A ``FeedforwardJet`` of ``W^(0..r)`` (r+1, 6) ``(n, f)`` in ``rep`` and ``tau^(0..r)`` (r+1, n)."""
        return {"header": header, "child_frame_id": self.base, "order": len(W) - 1, "representation": rep,
                "base_wrench": [{"torque": _vec(w[:3]), "force": _vec(w[3:])} for w in np.asarray(W).tolist()],
                "joint_names": self.joints, "tau": _floats(tau)}

    def command(self, t: float, cmd) -> None:
        """The command ``cmd`` (a ``FlatCommand`` / ``ActuatedCommand``) held from ``t`` [s]."""
        jt = getattr(cmd, "joint_torque", None)
        if jt is not None and len(jt) == len(self.joints):
            self._held[:] = 0.0
            self._held[self._rigid_idx] = np.asarray(jt)[self._rigid_idx]
        due = self._due()
        self._k += 1
        if not due or not hasattr(cmd, "omega"):
            return
        ns = int(round(t * _NS))
        om = _floats(cmd.omega)
        if om:
            self._w("cmd/rotor_speeds", {"header": {"stamp": stamp(ns), "frame_id": ""}, "position": [],
                                         "velocity": om, "normalized": []}, ns)
        names = self.elastic + self._rigid        # the nodes' order: the motors, then the rigid joints
        effort = _floats(cmd.u)[:len(self.elastic)] + _floats(self._held[self._rigid_idx])
        if names:
            self._w("cmd/motor_efforts", {"header": {"stamp": stamp(ns), "frame_id": ""}, "name": names,
                                          "effort": effort}, ns)
