"""A small ``/diagnostics`` reporter shared by the geodyn nodes, and the callback guard.

A node reports each skipped cycle with :meth:`DiagnosticsReporter.problem`:

* the problem is logged as a throttled warning (at most once per ``log_period`` per distinct
  problem key);
* it is published on ``/diagnostics`` as a WARN ``DiagnosticStatus``, at most ``rate`` messages
  a second (parameter ``diagnostics_rate``, default 10): a hostile stream of hundreds of bad
  messages a second gives at most ``rate`` statuses, each carrying the message of the latest
  problem and, as ``KeyValue`` pairs ``skipped[<reason>]``, how many cycles each reason skipped
  since the previous status (the reason is the problem message with its numbers replaced by
  ``#``, e.g. ``skipped[reference: NaN or Inf in the derivative rows used]``) (plus the running totals ``cycles_published`` / ``cycles_skipped``, and those a node adds to
  ``live``, e.g. ``geodyn_node``'s ``accepted[odom]``: the messages of a topic it accepted).

A node event that is not a cycle (a refused or accepted ``robot_description``, see
:mod:`geodyn_ros.ros.common.description`) goes through :meth:`DiagnosticsReporter.report`: logged
(throttled per message) and published as one status with that message, under the same rate
limit, and not counted as a skipped cycle. ``notes`` (key -> text) are added as ``KeyValue``
pairs to every status (e.g. where the robot model came from).

A periodic summary (OK or the last problem, with counters) is published by
:meth:`publish_summary`, which the node calls from a wall-clock timer so diagnostics keep flowing
while simulated time is paused; it also flushes counts held back by the rate limit.

:func:`guard` wraps every subscription and timer callback: an unexpected exception becomes a
skipped cycle reported with its text (logged once per distinct cause, so an exception that
repeats every cycle cannot spin the log), and the node keeps running.

**Bounded output under any input.** A problem text can quote input (a frame id, joint names, an
exception about a malformed message). Code that quotes input cuts it with :func:`clip`
(:func:`geodyn_ros.model.validate.clip`, which the file refusals use too; at most
``QUOTE_CHARS`` = 200 characters, the total size said), and the reporter enforces the bound on
whatever it is given:

* each message is cut to ``MESSAGE_CHARS`` (512) characters (with :func:`clip`), each reason to
  120, each note, the status name and the hardware id to ``QUOTE_CHARS``;
* at most ``MAX_REASONS`` (20) ``skipped[<reason>]`` pairs per status (the rest are counted in
  ``skipped[other]``) and at most ``MAX_NOTES`` (8) notes; a status is at most
  ``STATUS_MAX_BYTES`` (8192) bytes serialized (reasons, then notes, are merged or dropped to fit);
* at most ``2 * rate`` statuses a second whatever the callers do (:meth:`publish_status`
  included; one held back is sent by the flush timer), so ``/diagnostics`` carries at most
  ``2 * rate * STATUS_MAX_BYTES`` bytes a second (164 kB/s at the default rate 10; ~1 kB a status
  in practice);
* at most ``LOG_LINES`` (10) log lines per ``log_period`` (1 s) from the reporter, each at most
  ``LOG_CHARS`` (1024) characters (a traceback: ``TRACEBACK_CHARS``, 2000), lines over the budget
  counted and said in the next line: at most 20 kB/s on ``/rosout``.
"""
from __future__ import annotations

import functools
import re
import time
import traceback

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from geodyn_ros.model.validate import QUOTE_CHARS, clip   # noqa: F401 (the one clipping helper, shared with the refusals)

__all__ = ["DiagnosticsReporter", "guard", "clip"]

MESSAGE_CHARS = 512      #: a status message (a problem text with its quotes and context)
MAX_REASONS = 20         #: distinct skipped[<reason>] pairs per status (then skipped[other])
MAX_NOTES = 8            #: notes (KeyValue pairs set by the node) per status
STATUS_MAX_BYTES = 8192  #: one serialized DiagnosticArray of one status, at most
LOG_LINES = 10           #: log lines per log_period from one reporter, at most
LOG_CHARS = 1024         #: one log line, at most (a traceback: TRACEBACK_CHARS)
TRACEBACK_CHARS = 2000
_MAX_KEYS = 1000         # throttling state kept per key, at most (then the oldest are forgotten)

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", re.IGNORECASE)


def _reason(message: str) -> str:
    """The reason of a problem message: the message with its numbers replaced by '#' (so one
    reason groups, e.g., every 'stamp ... in the future' whatever the stamp), at most 120 chars."""
    return _NUMBER.sub("#", message[:MESSAGE_CHARS])[:120]


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
        At most this many ``/diagnostics`` messages a second from :meth:`problem` (> 0); at most
        twice as many from all methods together (the module docstring gives every bound).
    """

    def __init__(self, node, name: str, hardware_id: str = "", *, log_period: float = 1.0,
                 rate: float = 10.0):
        self.node = node
        ns = node.get_namespace().strip("/")
        self.name = f"{ns}/{name}" if ns else name
        self.hardware_id = hardware_id
        self.log_period = log_period
        self.min_interval = 1.0 / float(rate)
        self.max_per_second = 2.0 * float(rate)
        self.pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.counters = {"cycles_published": 0, "cycles_skipped": 0}
        # key -> callable read when a status is published (running totals the node keeps itself,
        # e.g. geodyn_node's accepted[<topic>]: no per-message cost here)
        self.live: dict[str, object] = {}
        self.last_problem = ""
        self.since_last: dict[str, int] = {}   # reason -> skipped cycles since the last status
        self.published = 0                      # statuses sent (for tests and the soak bench)
        self.log_suppressed = 0                 # log lines over the LOG_LINES budget (for tests)
        self._last_log: dict[str, float] = {}
        self._log_window = (-1e18, 0)           # (start, lines logged) of the current log_period
        self._last_pub = -1e18
        self._pub_window = (-1e18, 0)           # (start, statuses sent) of the current second
        self._logged_causes: set[str] = set()
        self._pending = False   # a status held back by the rate limit, sent by the flush timer
        self._event = None      # (level, message) of a report() held back by the rate limit
        self.notes: dict[str, str] = {}   # key -> text, added to every status
        from rclpy.clock import Clock, ClockType
        node.create_timer(self.min_interval, self._flush, clock=Clock(clock_type=ClockType.STEADY_TIME))

    # ------------------------------------------------------------------ bounded logging
    def _log(self, key: str, text: str, level: str = "warning", limit: int = LOG_CHARS) -> bool:
        """Log ``text`` (cut to ``limit`` characters) unless ``key`` was logged within
        ``log_period`` or ``LOG_LINES`` lines were already logged in this ``log_period``."""
        now = time.monotonic()
        if now - self._last_log.get(key, -1e18) < self.log_period:
            return False
        start, lines = self._log_window
        if now - start >= self.log_period:
            start, lines = now, 0
        if lines >= LOG_LINES:
            self.log_suppressed += 1
            return False
        self._log_window = (start, lines + 1)
        if len(self._last_log) >= _MAX_KEYS:      # forget the throttling state of old keys
            self._last_log = {k: t for k, t in self._last_log.items() if now - t < self.log_period}
            if len(self._last_log) >= _MAX_KEYS:
                self._last_log.clear()
        self._last_log[key] = now
        if self.log_suppressed:
            text = f"{text} ({self.log_suppressed} more log lines suppressed: over {LOG_LINES} per " \
                   f"{self.log_period:g} s)"
            self.log_suppressed = 0
        if len(text) > limit:      # (the callers escaped what they quote: a traceback keeps its lines)
            text = f"{text[:limit]}... ({len(text)} characters)"
        logger = self.node.get_logger()    # one call site per severity: rclpy refuses a change
        if level == "info":
            logger.info(text)
        elif level == "error":
            logger.error(text)
        else:
            logger.warning(text)
        return True

    def ok(self) -> None:
        """Count a published cycle."""
        self.counters["cycles_published"] += 1

    def problem(self, key: str, message: str) -> None:
        """Count a skipped cycle; warn (throttled per ``key``) and publish a WARN status (rate-limited)."""
        self.counters["cycles_skipped"] += 1
        message = clip(message, MESSAGE_CHARS)
        reason = _reason(message)
        if reason in self.since_last or len(self.since_last) < MAX_REASONS:
            self.since_last[reason] = self.since_last.get(reason, 0) + 1
        else:
            self.since_last["other"] = self.since_last.get("other", 0) + 1
        self._log(clip(key), f"skipping cycle: {message}")
        self.last_problem = message
        if time.monotonic() - self._last_pub >= self.min_interval:
            self.publish_status(DiagnosticStatus.WARN, message)
        else:
            self._pending = True

    def report(self, level, message: str) -> None:
        """A node event that is not a cycle (e.g. a refused ``robot_description``): logged (a
        warning for WARN/ERROR, info for OK; at most once per ``log_period`` per message) and
        published as one status with ``level`` and ``message`` (rate-limited like
        :meth:`problem`: held back, the newest event goes out with the flush timer). The counters
        do not change."""
        message = clip(message, MESSAGE_CHARS)
        self._log(f"report {message}", message, "info" if level == DiagnosticStatus.OK else "warning")
        if time.monotonic() - self._last_pub >= self.min_interval:
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
        logged with its traceback once per distinct cause (at most 100 causes)."""
        text = f"{type(exc).__name__}: {clip(' '.join(str(exc)[:4 * MESSAGE_CHARS].split()), 300)}"
        cause = f"{where}: {text}"
        if cause not in self._logged_causes and len(self._logged_causes) < 100:
            self._logged_causes.add(cause)
            # the frames (code lines) and the cut text: not format_exception, whose chained
            # exceptions would quote their input in full
            tb = "".join(traceback.format_tb(exc.__traceback__, limit=4))
            self._log(f"traceback {cause}", f"unexpected exception in {where} (cycle skipped, node keeps "
                      f"running; reported once per cause):\n{tb}{text}", "error", TRACEBACK_CHARS)
        self._last_log[clip(f"exception {cause}")] = time.monotonic()   # the problem() log is the one above
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
        skipped cycles per reason since the previous status; cut to the bounds of the module
        docstring (a status over ``2 * rate`` a second is held back for the flush timer)."""
        now = time.monotonic()
        start, sent = self._pub_window
        if now - start >= 1.0:
            start, sent = now, 0
        if sent >= self.max_per_second:
            self._pending = True
            return
        self._pub_window = (start, sent + 1)
        self._last_pub = now
        self._pending = False
        self._event = None
        st = DiagnosticStatus(level=level, name=clip(self.name), message=clip(message, MESSAGE_CHARS + 32),
                              hardware_id=clip(self.hardware_id))
        fixed = [KeyValue(key=clip(k), value=str(v)) for k, v in self.counters.items()]
        fixed += [KeyValue(key=clip(k), value=str(f())) for k, f in self.live.items()]
        notes = [KeyValue(key=clip(k, 64), value=clip(v)) for k, v in list(self.notes.items())[:MAX_NOTES]]
        reasons = dict(self.since_last)
        self.since_last = {}
        budget = STATUS_MAX_BYTES - _STATUS_OVERHEAD - _size(st.name, st.message, st.hardware_id) - \
            sum(_size(kv.key, kv.value) + _PAIR_OVERHEAD for kv in fixed)
        while notes and sum(_size(kv.key, kv.value) + _PAIR_OVERHEAD for kv in notes) > budget // 2:
            notes.pop()                            # notes: at most half of what is left
        budget -= sum(_size(kv.key, kv.value) + _PAIR_OVERHEAD for kv in notes)
        pairs = [KeyValue(key=f"skipped[{k}]", value=str(v)) for k, v in reasons.items() if k != "other"]
        other = reasons.get("other", 0)
        # "skipped[other]" and its count: at most 24 bytes with the pair overhead
        while pairs and sum(_size(kv.key, kv.value) + _PAIR_OVERHEAD for kv in pairs) > budget - 40:
            other += int(pairs.pop().value)
        if other:
            pairs.append(KeyValue(key="skipped[other]", value=str(other)))
        st.values = fixed + pairs + notes
        arr = DiagnosticArray()
        arr.header.stamp = self.node.get_clock().now().to_msg()
        arr.status = [st]
        self.pub.publish(arr)
        self.published += 1


# CDR size of a DiagnosticArray with one status, without its strings: header (stamp 8, frame_id
# 4 + 1), status count 4, level 1 + padding 3, 3 string lengths + NULs 15, value count 4, and
# alignment: < 64 bytes; each KeyValue: 2 lengths, 2 NULs and up to 3 + 3 bytes of padding, 14.
_STATUS_OVERHEAD = 64
_PAIR_OVERHEAD = 14


def _size(*texts: str) -> int:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)


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
            elif len(logged) < 100 and clip(exc) not in logged:
                logged.add(clip(exc))
                node.get_logger().error(f"unexpected exception in {where}: {type(exc).__name__}: {clip(exc)}")
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
