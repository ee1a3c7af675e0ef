"""Executors, QoS and the ``main()`` of the geodyn console scripts."""
from __future__ import annotations

import sys

import rclpy
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from .params import ConfigurationError

__all__ = ["control_qos", "make_executor", "run_nodes", "spin_forever"]


def control_qos(depth: int) -> QoSProfile:
    """QoS for control data: keep last ``depth`` (small), reliable, volatile.

    Keep-last with a small depth means a slow consumer sees the newest samples rather than a
    growing backlog; reliable delivery keeps the lock-step simulator from losing a command.
    """
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(1, int(depth)),
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def make_executor(context=None):
    """``rclpy.experimental.EventsExecutor`` when available (it keeps up at 1 kHz on two
    cores), else a ``SingleThreadedExecutor``."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # older rclpy
        from rclpy.executors import SingleThreadedExecutor
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def spin_forever(executor) -> None:
    """Spin ``executor`` until shutdown or Ctrl-C.

    ``executor.spin()`` is not used: with the rclpy 9.1 (Kilted) wheels the
    ``EventsExecutor``'s untimed wait busy-loops at 100 % CPU and never runs callbacks (found
    by ``bench/bench_node.py``). Waiting with a finite timeout behaves: idle CPU ~0 %, timers
    fire, Ctrl-C interrupts.
    """
    from rclpy.executors import ExternalShutdownException
    from rclpy.task import Future

    never = Future()
    try:
        while rclpy.ok(context=executor.context):
            executor.spin_until_future_complete(never, timeout_sec=1.0)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


def run_nodes(factories, args=None) -> int:
    """Create nodes with ``factories`` (callables returning nodes) and spin them until shutdown.

    A :class:`ConfigurationError` at start-up is printed as one clear line on stderr and the
    process exits with status 2.
    """
    rclpy.init(args=args)
    nodes = []
    try:
        try:
            nodes = [f() for f in factories]
        except ConfigurationError as exc:
            print(f"[FATAL] geodyn_ros: {exc}", file=sys.stderr)
            return 2
        ex = make_executor()
        for nd in nodes:
            ex.add_node(nd)
        spin_forever(ex)
        return 0
    finally:
        for nd in nodes:
            nd.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
