"""The robot model of a node: from a parameter at start-up, or from the ``robot_description`` topic.

One helper, :class:`ModelSource`, used by ``geodyn_node``, ``geodyn_sim``, ``geodyn_controller``
and ``geodyn_actuated_controller``. The rules:

* **Parameter.** ``robot_description`` (URDF XML) or ``urdf_path`` (a ``.urdf``/``.xacro``
  file) set: the model is loaded at start-up; a bad one stops the node with a one-line
  :class:`~geodyn_ros.ros.common.params.ConfigurationError`. The topic is not subscribed.
* **Topic.** Neither set: the node subscribes ``std_msgs/String`` on the topic named by the
  parameter ``robot_description_topic`` (default ``robot_description``, relative, so a namespace
  applies) with robot_state_publisher's QoS: reliable, transient local, keep last 1. A
  description published *before* the node started is therefore delivered too. Until a valid
  one arrives the node computes and publishes nothing, reports ``waiting for robot_description
  on <topic>`` (WARN) on ``/diagnostics`` every ``period`` wall seconds, and reports the inputs
  that arrive meanwhile as not used (:meth:`ModelSource.refuse_input`).
* **Background load.** Each description is loaded on a background thread (``load``; a big
  robot can take a while, and the executor keeps spinning meanwhile). If several arrive during
  one load, only the newest is loaded next. The result waits in a pending slot and is applied
  on the executor thread *between* callbacks: by a 20 Hz wall-clock timer and at the start of
  the node's input callbacks (:meth:`ModelSource.poll`). The node's model-dependent state is
  built from the complete result and swapped as a whole, so no cycle ever runs on half a model
  or publishes joint names that do not match the numbers.
* **Refused**, with a one-line report (log warning, WARN on ``/diagnostics``; the model in use
  stays, or the node keeps waiting): an empty message; a message that is not XML (it must start
  with ``<``: a file path is never read from the topic); a URDF the loader refuses; and, while a
  model is loaded, a different robot: other joint names (or the same ones in another order),
  another base link, or a fixed base where the model has a floating one (or back). A node may
  refuse more: the simulator builds its MuJoCo model once, from the first valid description,
  and refuses every later different one (``replace=False``); restart it to change the robot.
* **Accepted**: the first valid description, whatever the robot; and a replacement with the
  same joint names in the same order and the same base link (e.g. recalibrated masses or
  inertias). It takes effect between cycles and is logged and reported (OK) on ``/diagnostics``.
  A description identical to the one in use is ignored.

The diagnostics key ``robot_model`` (a ``KeyValue`` on every status of the node) says where the
model in use came from, or that the node is waiting; ``robot_description`` holds the last
report about a received description.
"""
from __future__ import annotations

import threading
import time

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from .diagnostics import guard
from .params import ConfigurationError, model_source

__all__ = ["ModelSource", "TOPIC_PARAMETER", "description_qos", "same_robot"]

#: The ``robot_description_topic`` entry of the nodes' ``PARAMETERS`` tables.
TOPIC_PARAMETER = ("robot_description", "Topic (std_msgs/String, transient local, as published by "
                   "robot_state_publisher) the URDF is read from when neither robot_description "
                   "nor urdf_path is set; relative, so a namespace applies.")

#: Wall-clock period [s] of the timer that applies a loaded description.
POLL_PERIOD = 0.05


def description_qos() -> QoSProfile:
    """robot_state_publisher's QoS for ``robot_description``: reliable, transient local, keep
    last 1 (a late subscriber still gets the latest description)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    """The exception text on one line, without rclpy's caret lines, at most ``limit`` chars."""
    text = " ".join(" ".join(ln for ln in str(exc).splitlines() if ln.strip().strip("^")).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def same_robot(old, new) -> str | None:
    """``None`` if model ``new`` may replace ``old`` (same joint names in the same order, same base
    link, same floating/fixed base), else the reason, one line."""
    if new.base_link != old.base_link:
        return f"another robot: base link '{new.base_link}', the model in use has '{old.base_link}'"
    if bool(new.fixed_base) != bool(old.fixed_base):
        return "another robot: fixed base where the model in use has a floating one" if new.fixed_base \
            else "another robot: floating base where the model in use has a fixed one"
    if tuple(new.joint_names) != tuple(old.joint_names):
        missing = [j for j in old.joint_names if j not in new.joint_names]
        extra = [j for j in new.joint_names if j not in old.joint_names]
        if not missing and not extra:
            return f"another robot: joints {list(new.joint_names)} in another order than the model in use"
        return (f"another robot: joints differ from the model in use (missing {missing}, "
                f"not in the model {extra})")
    return None


class ModelSource:
    """Where a node's robot model comes from, and the hand-over of a new one (module docstring).

    Parameters
    ----------
    node : rclpy.node.Node
    params : dict
        The node's checked parameters (``robot_description``, ``urdf_path``,
        ``robot_description_topic``).
    diag : DiagnosticsReporter
        The node's reporter (created before this object).
    load : callable(source) -> result
        Builds everything model-dependent that is slow, from a URDF path or XML string, without
        touching the node (it runs on a background thread for the topic). Raises on a bad URDF.
    apply : callable(result, first: bool) -> None
        Installs ``result`` in the node, on the executor thread. ``first`` is True for the first
        model. It may raise ``ValueError`` (e.g. a parameter that does not fit this robot) before
        changing anything: the result is then refused (a ``ConfigurationError`` at start-up).
    model_of : callable(result) -> Model, optional
        The :class:`geodyn_ros.Model` inside ``result`` (default: ``result`` itself).
    replace : bool
        False: once a model is in use, every different description is refused (the simulator).
    period : float
        Wall seconds between the "waiting for robot_description" statuses.

    Raises
    ------
    ConfigurationError
        Bad ``robot_description``/``urdf_path`` (both set, missing file, invalid URDF) or
        ``robot_description_topic``.
    """

    def __init__(self, node, params: dict, diag, *, load, apply, model_of=None, replace: bool = True,
                 period: float = 1.0):
        self.node, self.diag = node, diag
        self._load, self._apply = load, apply
        self._model_of = model_of or (lambda result: result)
        self.replace = replace
        self.period = float(period)
        self.model = None          # the Model in use (None: waiting for the topic)
        self.text = None           # the description text in use (topic only)
        self.topic = None          # resolved topic name (None: model from a parameter)
        self.last_refusal = ""
        self.loads = 0             # descriptions loaded on the background thread (tests)
        self._lock = threading.Lock()
        self._incoming = None      # newest text waiting for the loader thread
        self._busy = False         # a loader thread is running
        self._done = []            # loaded outcomes waiting to be applied, in arrival order
        src = model_source(params)
        if src is not None:
            self._from_parameter(*src)
            return
        topic = params.get("robot_description_topic", TOPIC_PARAMETER[0])
        if not isinstance(topic, str) or not topic.strip():
            raise ConfigurationError("parameter 'robot_description_topic': must be a topic name, got "
                                     f"{topic!r}")
        try:
            self._sub = node.create_subscription(String, topic.strip(),
                                                 guard(node, self._on_message, "robot_description"),
                                                 description_qos())
        except Exception as exc:  # noqa: BLE001  rclpy raises InvalidTopicNameException & co.
            raise ConfigurationError(f"parameter 'robot_description_topic': {_one_line(exc)}") from None
        self.topic = self._sub.topic_name
        self._last_waiting = -1e18
        node.create_timer(POLL_PERIOD, guard(node, self._on_timer, "robot_description timer"),
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        diag.notes["robot_model"] = f"waiting for {self.topic}"
        node.get_logger().info(f"no robot_description or urdf_path parameter: waiting for the robot "
                               f"model on {self.topic}")

    # ------------------------------------------------------------------ parameter
    def _from_parameter(self, source: str, what: str) -> None:
        try:
            result = self._load(source)
            self._apply(result, True)
        except ConfigurationError:
            raise
        except Exception as exc:  # noqa: BLE001  the loaders raise ValueError with a precise message
            raise ConfigurationError(f"cannot load the robot model from {what}: {_one_line(exc)}") from None
        self.model = self._model_of(result)
        self.diag.notes["robot_model"] = f"'{self.model.name}' from parameter {what.split(' ')[0]}"

    # ------------------------------------------------------------------ topic
    @property
    def ready(self) -> bool:
        """True once a model is in use."""
        return self.model is not None

    def waiting_message(self) -> str:
        msg = f"waiting for robot_description on {self.topic}"
        return f"{msg} (last one refused: {self.last_refusal})" if self.last_refusal else msg

    def refuse_input(self, topic: str) -> None:
        """Report an input that arrived before any model (a skipped cycle on ``/diagnostics``)."""
        self.diag.problem(f"no model {topic}", f"{topic}: no robot model yet ({self.waiting_message()}); "
                          "input not used")

    def _on_message(self, msg) -> None:
        text = msg.data
        with self._lock:
            if text == self.text and not self._busy and not self._done:
                return   # the description in use, again (e.g. robot_state_publisher restarted)
            self._incoming = text
            start = not self._busy
            self._busy = True
        if start:
            threading.Thread(target=self._work, daemon=True,
                             name=f"{self.node.get_name()} robot_description loader").start()

    def _work(self) -> None:
        """Loader thread: load the newest waiting text until none is left; touches no node state."""
        while True:
            with self._lock:
                text, self._incoming = self._incoming, None
                if text is None:
                    self._busy = False
                    return
            outcome = self._load_text(text)
            with self._lock:
                self._done.append(outcome)

    def _load_text(self, text: str):
        """``(text, result, None)`` or ``(text, None, reason)``."""
        stripped = text.lstrip("\ufeff \t\r\n")
        if not stripped:
            return text, None, "empty message"
        if not stripped.startswith("<"):
            return text, None, f"not XML (starts with {stripped[:20]!r}; expected a URDF <robot> document)"
        self.loads += 1
        try:
            return text, self._load(text), None
        except Exception as exc:  # noqa: BLE001  any loader failure is a refused description
            return text, None, f"cannot load the robot model: {_one_line(exc)}"

    def _on_timer(self) -> None:
        self.poll()
        if self.model is None and time.monotonic() - self._last_waiting >= self.period:
            self._last_waiting = time.monotonic()
            self.diag.publish_status(DiagnosticStatus.WARN, self.waiting_message())

    def poll(self) -> None:
        """Apply the loaded descriptions waiting in the slot, in arrival order (executor thread,
        between callbacks). Cheap when there is none."""
        if not self._done:
            return
        with self._lock:
            outcomes, self._done = self._done, []
        for outcome in outcomes:
            self._take(*outcome)

    def _take(self, text, result, reason) -> None:
        if text == self.text:
            return
        if reason is None and self.model is not None:
            if not self.replace:
                reason = ("a different robot_description after the first one: the simulation was built "
                          "once from the first one (restart the node to change the robot)")
            else:
                reason = same_robot(self.model, self._model_of(result))
        first = self.model is None
        if reason is None:
            try:
                self._apply(result, first)
            except ValueError as exc:   # ConfigurationError included: does not fit the parameters
                reason = _one_line(exc)
        if reason is not None:
            self.last_refusal = reason
            keep = (f"keeping the model '{self.model.name}' in use" if self.model is not None
                    else "still waiting for a valid robot_description")
            msg = f"{self.topic}: description refused: {reason}; {keep}"
            self.diag.notes["robot_description"] = msg
            self.diag.report(DiagnosticStatus.WARN, msg)
            return
        self.model, self.text, self.last_refusal = self._model_of(result), text, ""
        m = self.model
        msg = (f"{self.topic}: robot model '{m.name}' ({m.n_joints} joints, base '{m.base_link}') "
               + ("loaded" if first else "replaced (same joints and base link); in use from the next cycle"))
        self.diag.notes["robot_model"] = f"'{m.name}' from {self.topic}"
        self.diag.notes["robot_description"] = msg
        self.diag.report(DiagnosticStatus.OK, msg)
