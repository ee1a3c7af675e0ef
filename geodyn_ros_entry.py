"""Console-script entry points of geodyn_ros that exit cleanly when stopped at any moment.

This module sits outside the ``geodyn_ros`` package on purpose: importing the package loads
rclpy and the compiled dynamics kernels, which takes about a minute on a first start (numba
compiles them; ``geodyn_warmup`` does it at install time). A SIGINT (Ctrl-C, ``ros2 launch``)
or SIGTERM during those imports must exit 0 with no traceback, like a stop at any later moment
(see ``geodyn_ros.ros.common.runtime``). Here both signals raise ``KeyboardInterrupt`` before
anything heavy is imported, and the entry catches it.
"""
import os
import signal
import sys
import time


_STOP_REQUESTED = False
_LAST_RAISE = [float("-inf")]


def _raise_interrupt(signum, frame):
    global _STOP_REQUESTED
    _STOP_REQUESTED = True   # kept even if the KeyboardInterrupt is swallowed (see _unraisable)
    now = time.monotonic()
    if now - _LAST_RAISE[0] < 1.0:
        # the previous KeyboardInterrupt is still unwinding: raised again it would land in its
        # clean-up (or escape the handlers below); a burst of signals raises once a second
        return
    _LAST_RAISE[0] = now
    raise KeyboardInterrupt


def _unraisable(info):
    """A KeyboardInterrupt raised inside a clean-up callback (importlib's module-lock weakref
    callback, a destructor) cannot propagate; Python would print "Exception ignored in ..." with a
    traceback. The stop is recorded in ``_STOP_REQUESTED`` and honoured after the import, so
    say nothing."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(info)


def _wants_help(argv, executable: str) -> bool:
    """``--help`` that the stored text answers: ``-h``/``--help`` among a node's options before
    ``--ros-args`` (after it, arguments are ROS's), or as a tool's only argument (a tool's other
    options may change its help, e.g. ``geodyn_closed_loop --actuated --help``: that one runs the tool)."""
    args = list(argv[1:])
    if "--ros-args" in args:
        args = args[:args.index("--ros-args")]
    if executable in _TOOLS:
        return args in (["-h"], ["--help"])
    return "-h" in args or "--help" in args


#: the executables that are tools (argparse), not nodes (geodyn_ros.ros.common.interfaces)
_TOOLS = ("geodyn_closed_loop", "geodyn_warmup", "geodyn_vehicle", "geodyn_fly")


def _stored_help(executable: str) -> str | None:
    """The help text of ``executable`` from ``geodyn_ros/cli_help.json`` (generated from the
    executables, ``geodyn_ros.cli_help``), read without importing the package: ``find_spec`` of a
    top-level package only locates it. None if the file or the entry is missing."""
    import importlib.util
    import json
    import os

    spec = importlib.util.find_spec("geodyn_ros")
    if spec is None or not spec.origin:
        return None
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "cli_help.json"), encoding="utf-8") as f:
            return json.load(f).get(executable)
    except (OSError, ValueError):
        return None


def _print_help(module: str, executable: str) -> int:
    """``--help`` of an executable: the stored text (about 0.05 s: no rclpy, no numba), else from
    the module itself (its topics and parameters for a node, argparse for a tool), then exit 0
    without starting ROS."""
    text = _stored_help(executable)
    if text is None:
        import importlib
        mod = importlib.import_module(module)
        if executable in _TOOLS:
            return mod.main(["--help"])
        from geodyn_ros.ros.common.interfaces import help_text
        text = help_text(executable, getattr(mod, "PARAMETERS", None))
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:      # `geodyn_fly --help | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _run(module: str, executable: str) -> int:
    if _wants_help(sys.argv, executable):
        return _print_help(module, executable)
    signal.signal(signal.SIGINT, _raise_interrupt)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    sys.unraisablehook = _unraisable
    name = module.rsplit(".", 1)[-1]
    mod = None
    try:
        # a warm start (kernels in numba's cache) imports in about a second and says nothing; a
        # cold one says why it waits, and again every PROGRESS_EVERY s while it compiles
        progress = None
        if not _kernels_cached():
            if executable == "geodyn_warmup":
                label, stream = "[geodyn warmup]", sys.stdout
                print(f"{label} importing geodyn_ros: numba compiles every kernel once (5-8 minutes on a quiet "
                      f"2-core machine, up to 2 hours when both cores are busy; a line every {PROGRESS_EVERY:.0f} s) ...", flush=True)
            else:
                label, stream = f"[INFO] {name}:", sys.stderr
                print(f"{label} compiling the dynamics kernels, first start only (a minute or more; "
                      "'geodyn_warmup' after installing does it ahead of time) ...", file=sys.stderr, flush=True)
            progress = _compile_progress(label, stream)
        import importlib
        try:
            mod = importlib.import_module(module)
        finally:
            if progress is not None:
                progress.set()
        if _STOP_REQUESTED:   # a stop whose KeyboardInterrupt was swallowed during the imports
            _exit_during_start()
        return mod.main()
    except KeyboardInterrupt:
        if mod is None:
            _exit_during_start()
        return 0
    except Exception as exc:
        # A stop that lands inside a C extension's initialisation surfaces as an ImportError:
        # ``initialization failed`` caused by the KeyboardInterrupt (``import mujoco``), or a
        # message with no chain at all (numpy: 'PyCapsule_Import could not import module
        # "datetime"'), both seen on a loaded machine. After a stop request it is a stop.
        if _STOP_REQUESTED or _caused_by_interrupt(exc):
            if mod is None:
                _exit_during_start()
            return 0
        raise
    finally:
        # The run is over and the interpreter exits next. CPython resets Python-level handlers
        # to SIG_DFL while finalizing (but keeps SIG_IGN), so a late SIGINT/SIGTERM (a second
        # Ctrl-C, ros2 launch escalating) would kill the exiting process with -2/-15.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


#: seconds between two "still compiling" lines of a cold start (numba compiles the kernels while the
#: package is imported, silently: 20 minutes on a loaded 2-core machine looked hung)
PROGRESS_EVERY = 30.0


def _compile_progress(label: str, stream):
    """Start a daemon thread that prints ``<label> still compiling the dynamics kernels, 2 min 30 s
    so far (importing geodyn_ros.algorithms.workspace)`` every :data:`PROGRESS_EVERY` s; returns the
    ``threading.Event`` that stops it."""
    import threading

    stop, t0 = threading.Event(), time.monotonic()

    def beat():
        while not stop.wait(PROGRESS_EVERY):
            now = _importing()
            print(f"{label} still compiling the dynamics kernels, {_duration(time.monotonic() - t0)} so far"
                  + (f" (importing {now})" if now else ""), file=stream, flush=True)

    threading.Thread(target=beat, name="geodyn-compile-progress", daemon=True).start()
    return stop


def _importing() -> str | None:
    """The innermost ``geodyn_ros`` module being imported now: the newest entry of ``sys.modules``
    (insertion order is import order) whose spec is still initializing."""
    try:
        names = [n for n, m in list(sys.modules.items()) if n.startswith("geodyn_ros.")
                 and getattr(getattr(m, "__spec__", None), "_initializing", False)]
    except RuntimeError:     # sys.modules changed size while being copied: no name this time
        return None
    return names[-1] if names else None


def _duration(seconds: float) -> str:
    """``42 s`` or ``3 min 05 s``."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def _exit_during_start() -> None:
    """A stop during the imports: nothing was started, so end the process now (``os._exit(0)``)
    rather than through the interpreter's finalization of the half-imported numba/LLVM/rclpy
    modules, which takes about a second more (the nodes answer a stop within 2 s)."""
    import os
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _caused_by_interrupt(exc: BaseException) -> bool:
    """True if ``KeyboardInterrupt`` is in the cause/context chain of ``exc``."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _kernels_cached() -> bool:
    """True if numba's cache holds the compiled kernels of geodyn_ros *for the current sources*:
    ``geodyn_ros._kernel_cache.kernels_cached``, every index in the directory numba uses (beside
    the package, ``NUMBA_CACHE_DIR`` or numba's per-user cache) carries the stamp of what its kernel
    compiled in, so a start after an update that changed them says why it takes a minute. That
    module is loaded by its path: importing it through the package would run the package's
    ``__init__`` (numba and every kernel), and the check reads files only."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("geodyn_ros")
    if spec is None or not spec.origin:
        return False
    root = os.path.dirname(os.path.abspath(spec.origin))
    probe = importlib.util.spec_from_file_location("_geodyn_ros_kernel_cache", os.path.join(root, "_kernel_cache.py"))
    module = importlib.util.module_from_spec(probe)
    probe.loader.exec_module(module)
    return module.kernels_cached(root)


def geodyn_node() -> int:
    return _run("geodyn_ros.ros.nodes.geodyn_node", "geodyn_node")


def geodyn_sim() -> int:
    return _run("geodyn_ros.ros.nodes.sim_node", "geodyn_sim")


def geodyn_markers() -> int:
    return _run("geodyn_ros.ros.nodes.markers_node", "geodyn_markers")


def geodyn_px4_bridge() -> int:
    return _run("geodyn_ros.ros.px4.bridge_node", "geodyn_px4_bridge")


def geodyn_px4_sim() -> int:
    return _run("geodyn_ros.ros.px4.standin_node", "geodyn_px4_sim")


def geodyn_actuated_sim() -> int:
    return _run("geodyn_ros.ros.nodes.actuated_sim_node", "geodyn_actuated_sim")


def geodyn_reference() -> int:
    return _run("geodyn_ros.ros.nodes.reference_node", "geodyn_reference")


def geodyn_controller() -> int:
    return _run("geodyn_ros.ros.nodes.controller_node", "geodyn_controller")


def geodyn_actuated_controller() -> int:
    return _run("geodyn_ros.ros.nodes.actuated_controller_node", "geodyn_actuated_controller")


def geodyn_flat_controller() -> int:
    return _run("geodyn_ros.ros.nodes.flat_controller_node", "geodyn_flat_controller")


def geodyn_closed_loop() -> int:
    return _run("geodyn_ros.ros.loops.closed_loop", "geodyn_closed_loop")


def geodyn_fly() -> int:
    return _run("geodyn_ros.loops.fly", "geodyn_fly")


def geodyn_vehicle() -> int:
    return _run("geodyn_ros.loops.vehicle_report", "geodyn_vehicle")


def geodyn_warmup() -> int:
    return _run("geodyn_ros.warmup", "geodyn_warmup")
