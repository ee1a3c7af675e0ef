"""A small ``/diagnostics`` reporter shared by the geodyn nodes, and the callback guard.

A node reports each skipped cycle with :meth:`DiagnosticsReporter.problem`:

* the problem is logged as a throttled warning (at most once per ``log_period`` per distinct
  problem key);
* it is published on ``/diagnostics`` as a WARN ``DiagnosticStatus``, at most ``rate`` messages
  a second (parameter ``diagnostics_rate``, default 10): a hostile stream of hundreds of bad
  messages a second gives at most ``rate`` statuses, each carrying the message of the latest
  problem and, as ``KeyValue`` pairs ``skipped[<reason>]``, how many cycles each reason skipped
  since the previous status (the reason is the problem message with its numbers replaced by
  ``#``, e.g. ``skipped[reference: NaN or Inf in the derivative rows used]``) (plus the running totals ``cycles_published`` / ``cycles_skipped``).

A node event that is not a cycle (a refused or accepted ``robot_description``, see
:mod:`geodyn_ros.ros.description`) goes through :meth:`DiagnosticsReporter.report`: logged
(throttled per message) and published as one status with that message, under the same rate
limit, and not counted as a skipped cycle. ``notes`` (key -> text) are added as ``KeyValue``
pairs to every status (e.g. where the robot model came from).

A periodic summary (OK or the last problem, with counters) is published by
:meth:`publish_summary`, which the node calls from a wall-clock timer so diagnostics keep flowing
while simulated time is paused; it also flushes counts held back by the rate limit.

:func:`guard` wraps every subscription and timer callback: an unexpected exception becomes a
skipped cycle reported with its text (logged once per distinct cause, so an exception that
repeats every cycle cannot spin the log), and the node keeps running.
"""
from __future__ import annotations

import functools
import re
import time
import traceback

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

__all__ = ["DiagnosticsReporter", "guard"]


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", re.IGNORECASE)


def _reason(message: str) -> str:
    """The reason of a problem message: the message with its numbers replaced by '#' (so one
    reason groups, e.g., every 'stamp ... in the future' whatever the stamp), at most 120 chars."""
    return _NUMBER.sub("#", message)[:120]


class DiagnosticsReporter:
    """Throttled warnings plus rate-limited ``diagnostic_msgs/DiagnosticArray`` on ``/diagnostics``.

    Parameters
    ----------
    node : rclpy.node.Node
    name : str
        ``DiagnosticStatus.name`` (e.g. ``"geodyn_node: feedforward"``). Under a namespace it is
        prefixed with it (``"robot1/geodyn_node: feedforward"``): ``/diagnostics`` is one global
        topic (ROS convention, what ``diagnostic_aggregator`` reads), so the name tells robots apart.
    hardware_id : str
        ``DiagnosticStatus.hardware_id`` (the robot name).
    rate : float
        At most this many ``/diagnostics`` messages a second from :meth:`problem` (> 0).
    """

    def __init__(self, node, name: str, hardware_id: str = "", *, log_period: float = 1.0,
                 rate: float = 10.0):
        self.node = node
        ns = node.get_namespace().strip("/")
        self.name = f"{ns}/{name}" if ns else name
        self.hardware_id = hardware_id
        self.log_period = log_period
        self.min_interval = 1.0 / float(rate)
        self.pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.counters = {"cycles_published": 0, "cycles_skipped": 0}
        self.last_problem = ""
        self.since_last: dict[str, int] = {}   # reason -> skipped cycles since the last status
        self.published = 0                      # statuses sent (for tests and the soak bench)
        self._last_log: dict[str, float] = {}
        self._last_pub = -1e18
        self._logged_causes: set[str] = set()
        self._pending = False   # a status held back by the rate limit, sent by the flush timer
        self._event = None      # (level, message) of a report() held back by the rate limit
        self.notes: dict[str, str] = {}   # key -> text, added to every status
        from rclpy.clock import Clock, ClockType
        node.create_timer(self.min_interval, self._flush, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def ok(self) -> None:
        """Count a published cycle."""
        self.counters["cycles_published"] += 1

    def problem(self, key: str, message: str) -> None:
        """Count a skipped cycle; warn (throttled per ``key``) and publish a WARN status (rate-limited)."""
        self.counters["cycles_skipped"] += 1
        reason = _reason(message)
        if reason in self.since_last or len(self.since_last) < 50:
            self.since_last[reason] = self.since_last.get(reason, 0) + 1
        else:
            self.since_last["other"] = self.since_last.get("other", 0) + 1
        now = time.monotonic()
        if now - self._last_log.get(key, -1e18) >= self.log_period:
            self._last_log[key] = now
            self.node.get_logger().warning(f"skipping cycle: {message}")
        self.last_problem = message
        if now - self._last_pub >= self.min_interval:
            self.publish_status(DiagnosticStatus.WARN, message)
        else:
            self._pending = True

    def report(self, level, message: str) -> None:
        """A node event that is not a cycle (e.g. a refused ``robot_description``): logged (a
        warning for WARN/ERROR, info for OK; at most once per ``log_period`` per message) and
        published as one status with ``level`` and ``message`` (rate-limited like
        :meth:`problem`: held back, the newest event goes out with the flush timer). The counters
        do not change."""
        now = time.monotonic()
        key = f"report {message}"
        if now - self._last_log.get(key, -1e18) >= self.log_period:
            self._last_log[key] = now
            # two call sites: rclpy refuses one call site with two severities
            if level == DiagnosticStatus.OK:
                self.node.get_logger().info(message)
            else:
                self.node.get_logger().warning(message)
        if now - self._last_pub >= self.min_interval:
            self.publish_status(level, message)
        else:
            self._event = (level, message)
            self._pending = True

    def _flush(self) -> None:
        """Wall-clock timer: publish what the rate limit held back (within 1/rate s)."""
        if self._pending and time.monotonic() - self._last_pub >= self.min_interval:
            if self._event is not None:
                self.publish_status(*self._event)
            else:
                self.publish_status(DiagnosticStatus.WARN if self.last_problem else DiagnosticStatus.OK,
                                    self.last_problem or "publishing")

    def exception(self, where: str, exc: BaseException) -> None:
        """An unexpected exception in a callback: one skipped cycle, reported with its text;
        logged with its traceback once per distinct cause."""
        text = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        cause = f"{where}: {text}"
        if cause not in self._logged_causes and len(self._logged_causes) < 100:
            self._logged_causes.add(cause)
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=4))
            self.node.get_logger().error(f"unexpected exception in {where} (cycle skipped, node keeps "
                                         f"running; reported once per cause):\n{tb}")
        self._last_log[f"exception {cause}"] = time.monotonic()   # the problem() log is the one above
        self.problem(f"exception {cause}", f"unexpected exception in {where}: {text}")

    def publish_summary(self) -> None:
        """Publish the current state: OK if the last cycle was published, else WARN."""
        if self.last_problem:
            self.publish_status(DiagnosticStatus.WARN, self.last_problem)
        else:
            self.publish_status(DiagnosticStatus.OK, "publishing")

    def clear(self) -> None:
        """Mark the problem state resolved (a cycle was published after a problem)."""
        if self.last_problem:
            self.last_problem = ""
            if time.monotonic() - self._last_pub >= self.min_interval:
                self.publish_status(DiagnosticStatus.OK, "publishing")
            else:
                self._pending = True

    def publish_status(self, level, message: str) -> None:
        """Publish one ``DiagnosticStatus`` with ``level``, ``message``, the counters and the
        skipped cycles per reason since the previous status."""
        self._last_pub = time.monotonic()
        self._pending = False
        self._event = None
        st = DiagnosticStatus(level=level, name=self.name, message=message,
                              hardware_id=self.hardware_id)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in self.counters.items()]
        st.values += [KeyValue(key=f"skipped[{k}]", value=str(v)) for k, v in self.since_last.items()]
        st.values += [KeyValue(key=k, value=str(v)) for k, v in self.notes.items()]
        self.since_last = {}
        arr = DiagnosticArray()
        arr.header.stamp = self.node.get_clock().now().to_msg()
        arr.status = [st]
        self.pub.publish(arr)
        self.published += 1


def guard(node, fn, where: str):
    """Wrap callback ``fn`` of ``node``: an exception skips this call and is reported through
    ``node.diag`` (a :class:`DiagnosticsReporter`, made later in the constructor) or, before it
    exists, logged once. ``KeyboardInterrupt``/``SystemExit`` pass through."""
    logged = set()

    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001  no input may kill a node
            diag = getattr(node, "diag", None)
            if diag is not None:
                diag.exception(where, exc)
            elif repr(exc) not in logged:
                logged.add(repr(exc))
                node.get_logger().error(f"unexpected exception in {where}: {type(exc).__name__}: {exc}")
            return None
    return wrapper


def guard_time_source(node) -> None:
    """Guard rclpy's own ``/clock`` subscription of a ``use_sim_time`` node: a ``/clock``
    message rclpy cannot take (a negative time raises ``ValueError`` inside rclpy) is reported
    like any bad input instead of escaping from the executor."""
    ts = getattr(node, "_time_source", None)
    sub = getattr(ts, "_clock_sub", None)
    if sub is not None and not getattr(sub.callback, "_geodyn_guarded", False):
        sub.callback = guard(node, sub.callback, "/clock (use_sim_time)")
        sub.callback._geodyn_guarded = True
