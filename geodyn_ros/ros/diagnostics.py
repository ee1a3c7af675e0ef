"""A small ``/diagnostics`` reporter shared by the geodyn nodes.

A node reports each skipped cycle with :meth:`DiagnosticsReporter.problem`: the problem is
logged as a throttled warning (at most once per ``log_period`` per distinct problem key) and
published on ``/diagnostics`` as a WARN ``DiagnosticStatus`` right away when the problem
changes, else at most every ``publish_period``. A periodic summary (OK or the last problem,
with counters) is published by :meth:`publish_summary`, which the node calls from a wall-clock
timer so diagnostics keep flowing while simulated time is paused.
"""
from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

__all__ = ["DiagnosticsReporter"]


class DiagnosticsReporter:
    """Throttled warnings plus ``diagnostic_msgs/DiagnosticArray`` on ``/diagnostics``.

    Parameters
    ----------
    node : rclpy.node.Node
    name : str
        ``DiagnosticStatus.name`` (e.g. ``"geodyn_node: feedforward"``).
    hardware_id : str
        ``DiagnosticStatus.hardware_id`` (the robot name).
    """

    def __init__(self, node, name: str, hardware_id: str = "", *, log_period: float = 1.0,
                 publish_period: float = 0.1):
        self.node = node
        self.name = name
        self.hardware_id = hardware_id
        self.log_period = log_period
        self.publish_period = publish_period
        self.pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.counters = {"cycles_published": 0, "cycles_skipped": 0}
        self.last_problem = ""
        self._last_log: dict[str, float] = {}
        self._last_pub = 0.0

    def ok(self) -> None:
        """Count a published cycle."""
        self.counters["cycles_published"] += 1

    def problem(self, key: str, message: str) -> None:
        """Count a skipped cycle; warn (throttled per ``key``) and publish a WARN status."""
        self.counters["cycles_skipped"] += 1
        now = time.monotonic()
        if now - self._last_log.get(key, -1e18) >= self.log_period:
            self._last_log[key] = now
            self.node.get_logger().warning(f"skipping cycle: {message}")
        changed = message != self.last_problem
        self.last_problem = message
        if changed or now - self._last_pub >= self.publish_period:
            self.publish_status(DiagnosticStatus.WARN, message)

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
            self.publish_status(DiagnosticStatus.OK, "publishing")

    def publish_status(self, level, message: str) -> None:
        """Publish one ``DiagnosticStatus`` with ``level`` and ``message`` and the counters."""
        self._last_pub = time.monotonic()
        st = DiagnosticStatus(level=level, name=self.name, message=message,
                              hardware_id=self.hardware_id)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in self.counters.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.node.get_clock().now().to_msg()
        arr.status = [st]
        self.pub.publish(arr)
