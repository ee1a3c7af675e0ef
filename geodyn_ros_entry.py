"""Console-script entry points of geodyn_ros that exit cleanly when stopped at any moment.

This module sits outside the ``geodyn_ros`` package on purpose: importing the package loads
rclpy and the compiled dynamics kernels, which takes about a minute on a first start (numba
compiles them; ``geodyn_warmup`` does it at install time). A SIGINT (Ctrl-C, ``ros2 launch``)
or SIGTERM during those imports must exit 0 with no traceback, like a stop at any later moment
(see ``geodyn_ros.ros.runtime``). Here both signals raise ``KeyboardInterrupt`` before
anything heavy is imported, and the entry catches it.
"""
import signal
import sys


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _run(module: str) -> int:
    signal.signal(signal.SIGINT, _raise_interrupt)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    import threading

    name = module.rsplit(".", 1)[-1]
    # a warm start imports in about a second and says nothing; a cold one says why it waits
    notice = threading.Timer(2.0, lambda: print(
        f"[INFO] {name}: compiling the dynamics kernels, first start only (about a minute; "
        "'geodyn_warmup' after installing does it ahead of time) ...", file=sys.stderr, flush=True))
    notice.daemon = True
    try:
        notice.start()
        import importlib
        mod = importlib.import_module(module)
        notice.cancel()
        return mod.main()
    except KeyboardInterrupt:
        return 0
    finally:
        notice.cancel()


def geodyn_node() -> int:
    return _run("geodyn_ros.ros.geodyn_node")


def geodyn_sim() -> int:
    return _run("geodyn_ros.ros.sim_node")


def geodyn_reference() -> int:
    return _run("geodyn_ros.ros.reference_node")


def geodyn_controller() -> int:
    return _run("geodyn_ros.ros.controller_node")


def geodyn_closed_loop() -> int:
    return _run("geodyn_ros.ros.closed_loop")
