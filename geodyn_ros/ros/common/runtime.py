"""Executors, QoS, signal handling and the ``main()`` of the geodyn console scripts.

Stopping (SIGINT from Ctrl-C or ``ros2 launch``, SIGTERM) is clean at any moment: the
console scripts exit 0 without a traceback.

* Before and after spinning (imports, kernel compilation, model loading, teardown) both
  signals raise ``KeyboardInterrupt`` in the main thread, which the entry points catch.
* While spinning they only set a flag (:func:`stop_requested`): no exception can be raised
  inside a subscription or timer callback (rclpy's executors would log it as ``[FATAL]
  Exception in 'subscriptions' callback``), and the spin loop, which waits at most 0.1 s at
  a time, returns and the nodes are torn down.
* rclpy's own signal handler is not installed (``SignalHandlerOptions.NO``): it shuts the
  context down from inside the wait, which the EventsExecutor of the rclpy 9.1 wheels answers
  with ``RuntimeError: Unable to convert call argument '0' to Python object``.
"""
from __future__ import annotations

import signal
import sys
import threading
import time

import rclpy
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from .params import ConfigurationError

__all__ = ["control_qos", "make_executor", "run_nodes", "spin_forever", "stop_requested",
           "interrupt_on_signals", "flag_on_signals", "init_rclpy", "check_namespace",
           "split_namespace_option", "spin_lockstep", "LoopStalled"]

_STOP = threading.Event()
_WAKE: list = []   # the future the spin loop waits on: completed by a stop, so a busy executor returns


def stop_requested() -> bool:
    """True once SIGINT or SIGTERM arrived while the nodes were spinning."""
    return _STOP.is_set()


_STOPPING = [False]   # set first, without a lock: the signal handlers must not re-enter Event.set


def _raise_interrupt(signum, frame):
    # the first stop request raises; later ones only set the flag (raised again while the first
    # unwinds, they would land in clean-up callbacks and print "Exception ignored" tracebacks)
    _install(_set_flag)
    if not _STOPPING[0]:
        _STOPPING[0] = True
        _STOP.set()   # also a flag: a KeyboardInterrupt swallowed by C++ code still stops the spin loop
    raise KeyboardInterrupt


def _set_flag(signum, frame):
    if _STOPPING[0]:
        return   # already stopping: a burst of signals must not re-enter Event.set (its lock)
    _STOPPING[0] = True
    _STOP.set()
    for fut in list(_WAKE):
        if not fut.done():
            fut.set_result(True)


def _install(handler) -> None:
    if threading.current_thread() is not threading.main_thread():
        return   # signal handlers can only be installed from the main thread (tests)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


def interrupt_on_signals(reset: bool = False) -> None:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` (start-up and teardown); ``reset`` clears
    a stop requested earlier in this process (a new run starts)."""
    if reset:
        _STOP.clear()
        _STOPPING[0] = False
    _install(_raise_interrupt)


def flag_on_signals() -> None:
    """SIGINT and SIGTERM only set the stop flag (while callbacks may run). A stop requested
    during start-up stays requested."""
    _install(_set_flag)


def init_rclpy(args=None, context=None):
    """``rclpy.init`` without rclpy's signal handler; a bad ``--ros-args`` becomes a
    :class:`ConfigurationError` of one line."""
    import os
    import tempfile

    from rclpy.signals import SignalHandlerOptions
    # rcl logs its own "[ERROR] ... Failed to parse global arguments" on the C stderr before
    # rclpy raises: hold fd 2 during init, replay it on success, drop it on failure
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)
            failure = None
        except Exception as exc:  # noqa: BLE001  rclpy raises RCLError for unparsable arguments
            failure = exc
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if failure is None:
            held.seek(0)
            data = held.read()
            if data:
                sys.stderr.write(data.decode(errors="replace"))
                sys.stderr.flush()
            return
    if failure is not None:
        exc = failure
        text = " ".join(str(exc).split())
        text = text.split(", at /")[0]   # drop the C source location
        raise ConfigurationError(f"bad ROS arguments ({text}); see 'ros2 run --help' / --ros-args "
                                 "syntax: -p name:=value") from None


def check_namespace(namespace: str, what: str = "namespace") -> str:
    """The absolute form of a node namespace (``""`` -> ``"/"``, ``"robot1"`` -> ``"/robot1"``,
    trailing ``/`` dropped, as launch_ros does); raises :class:`ConfigurationError` of one line
    naming ``what`` if ROS would refuse it (rclpy's ``validate_namespace``: characters other than
    alphanumerics, ``_`` and ``/``, a token starting with a digit, ``//``, ...)."""
    from rclpy.exceptions import InvalidNamespaceException
    from rclpy.validate_namespace import validate_namespace

    full = namespace if namespace.startswith("/") else "/" + namespace
    full = full.rstrip("/") or "/"
    try:
        validate_namespace(full)
    except InvalidNamespaceException as exc:
        reason = str(exc).splitlines()[0].removeprefix("Invalid namespace: ").rstrip(":")
        raise ConfigurationError(f"{what}: {namespace!r} is not a valid ROS namespace ({reason})") from None
    return full


def split_namespace_option(argv):
    """``(namespace or None, argv without the option)``: the ``--namespace NS`` (or
    ``--namespace=NS``) option of the console scripts, looked for before ``--ros-args`` only
    (what follows belongs to ROS). A missing value is a :class:`ConfigurationError`."""
    argv = list(argv)
    end = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    namespace, out, i = None, [], 0
    while i < len(argv):
        a = argv[i]
        if i < end and a == "--namespace":
            if i + 1 >= end:
                raise ConfigurationError("option --namespace: needs a value, e.g. --namespace robot1")
            namespace = argv[i + 1]
            i += 2
            continue
        if i < end and a.startswith("--namespace="):
            namespace = a.split("=", 1)[1]
        else:
            out.append(a)
        i += 1
    return namespace, out


def control_qos(depth: int, reliability: str = "reliable") -> QoSProfile:
    """QoS for control data: keep last ``depth`` (small), reliable, volatile.

    Keep-last with a small depth means a slow consumer sees the newest samples rather than a
    growing backlog; reliable delivery keeps the lock-step simulator from losing a command.
    ``reliability="best_effort"`` (``geodyn_node``'s ``input_reliability`` /
    ``output_reliability``): no acknowledgements or resending, less CPU per message; a
    best-effort subscription matches any publisher, a best-effort publisher only best-effort
    subscriptions.
    """
    if reliability not in ("reliable", "best_effort"):
        raise ValueError(f"reliability: must be 'reliable' or 'best_effort', got {reliability!r}")
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(1, int(depth)),
                      reliability=(ReliabilityPolicy.RELIABLE if reliability == "reliable"
                                   else ReliabilityPolicy.BEST_EFFORT),
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
    """Spin ``executor`` until the context shuts down or a stop is requested.

    ``executor.spin()`` is not used: with the rclpy 9.1 (Kilted) wheels the
    ``EventsExecutor``'s untimed wait busy-loops at 100 % CPU and never runs callbacks (found
    by ``bench/ros/bench_node.py``). Waiting with a finite timeout (0.1 s, the worst-case delay of
    a stop) behaves: idle CPU ~0 %, timers fire.
    """
    from rclpy.executors import ExternalShutdownException
    from rclpy.task import Future

    never = Future()
    _WAKE.append(never)
    try:
        while rclpy.ok(context=executor.context) and not _STOP.is_set():
            executor.spin_until_future_complete(never, timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        _WAKE.remove(never)


class LoopStalled(RuntimeError):
    """A lock-step loop that stopped advancing (:func:`spin_lockstep`): its message is one line
    naming the loop, the simulated time reached, the wall time waited and the nodes' last problems;
    the command lines print it as it is and exit with status 1 (no traceback)."""


def spin_lockstep(executor, sim, end_steps: int, *, wall_timeout: float, progress=None, nodes=(),
                  what: str = "closed loop", abort=None) -> float:
    """Spin ``executor`` until the lock-step simulator node ``sim`` (``steps``, ``dt_ns``) has made
    ``end_steps`` steps, then deliver the last messages; return the wall time [s] of the loop.

    SIGINT/SIGTERM while callbacks run only set the stop flag, which raises ``KeyboardInterrupt``
    here. ``progress(t)`` is called about once per simulated second. ``abort()`` (optional), called
    after every spin, returns an exception to raise at once (a recording that could not be written)
    or None. After ``wall_timeout`` wall seconds **without a step** a :class:`LoopStalled` names
    ``what``, the simulated time reached and the last problem of each of ``nodes`` (their ``diag``),
    in one line. A loop that advances is never stopped, however slowly it runs (a loaded machine:
    measured at load 18 on 2 cores, 2 simulated seconds of the under-actuated loop took over 100 s
    of wall time, which the former total-time limit reported as a stall).
    """
    dt = sim.dt_ns * 1e-9
    t0 = time.monotonic()
    t_step, steps = t0, sim.steps   # the wall time of the last step seen
    next_report = 1.0
    flag_on_signals()   # a stop while callbacks run only sets a flag, checked here
    while sim.steps < end_steps:
        if stop_requested():
            raise KeyboardInterrupt
        executor.spin_once(timeout_sec=0.05)
        if abort is not None:
            exc = abort()
            if exc is not None:
                raise exc
        if progress is not None and sim.steps * dt >= next_report:
            progress(sim.steps * dt)
            next_report += 1.0
        now = time.monotonic()
        if sim.steps != steps:
            t_step, steps = now, sim.steps
        elif now - t_step > wall_timeout:
            from geodyn_ros.model.validate import clip
            problems = "; ".join(p for p in (_last_problem(nd) for nd in nodes) if p and not p.endswith(": "))
            raise LoopStalled(clip(f"{what} stalled at t = {sim.steps * dt:.3f} s of {end_steps * dt:g} s: no step "
                                   f"for {wall_timeout:.0f} s of wall time (last problems: {problems or 'none'}); see "
                                   "the nodes' /diagnostics (another publisher on the loop's topics? run isolated)", 600))
    wall = time.monotonic() - t0
    for _ in range(20):  # deliver the last state messages to the recorders
        executor.spin_once(timeout_sec=0.01)
    return wall


def _last_problem(node):
    """The last problem a node's diagnostics reported (``"<name>: ..."``; nodes without a reporter: None)."""
    diag = getattr(node, "diag", None)
    return None if diag is None else f"{node.get_name()}: {diag.last_problem}"


def _caused_by_interrupt(exc: BaseException) -> bool:
    """True if ``KeyboardInterrupt`` is in the cause/context chain of ``exc`` (a stop that landed
    inside a C extension's initialisation surfaces as ``ImportError: initialization failed``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def run_nodes(factories, args=None, namespace: str | None = None) -> int:
    """Create nodes with ``factories`` (callables returning nodes, called with ``namespace=`` when
    one is given) and spin them until shutdown.

    The namespace is ``namespace`` or else the ``--namespace NS`` option in ``args`` (default
    ``sys.argv``) before ``--ros-args``; relative names are made absolute (``robot1`` ->
    ``/robot1``). It is what ``-r __ns:=/NS`` after ``--ros-args`` does (that remapping, which
    ``ros2 launch`` uses, wins over both). A :class:`ConfigurationError` at start-up (a bad
    namespace, parameter, URDF or ``--ros-args``) is printed as one clear line on stderr and the
    process exits with status 2. SIGINT/SIGTERM at any moment exit 0 without a traceback (module
    docstring).
    """
    interrupt_on_signals(reset=True)
    nodes = []
    try:
        try:
            option, argv = split_namespace_option(sys.argv if args is None else args)
            ns = namespace if namespace is not None else option
            extra = {} if ns is None else {"namespace": check_namespace(
                ns, "namespace" if namespace is not None else "option --namespace")}
            init_rclpy(argv)
            nodes = [f(**extra) for f in factories]
        except ConfigurationError as exc:
            print(f"[FATAL] geodyn_ros: {exc}", file=sys.stderr)
            return 2
        ex = make_executor()
        for nd in nodes:
            ex.add_node(nd)
        flag_on_signals()
        spin_forever(ex)
        return 0
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        # a stop inside a C extension's import surfaces as an ImportError, chained to the
        # KeyboardInterrupt or not at all (geodyn_ros_entry): after a stop request it is a stop
        if _STOP.is_set() or _caused_by_interrupt(exc):
            return 0
        raise
    finally:
        _install(_set_flag)   # a second signal during teardown changes nothing
        for nd in nodes:
            try:
                nd.destroy_node()
            except Exception:  # noqa: BLE001  teardown must not print a traceback
                pass
        try:
            rclpy.try_shutdown()
        except Exception:  # noqa: BLE001
            pass
