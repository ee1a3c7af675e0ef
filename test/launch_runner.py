"""Running a launch file for real, shared by test/ros/loops/test_real_launch.py and the Gazebo flights
(test/gazebo/test_gz_fly.py): ``ros2 launch`` where ``launch_ros`` and the ``ros2`` CLI are installed,
else the steering folder's ``../shared/tools/real_launch.sh`` (``GEODYN_REAL_LAUNCH_SCRIPT=<path>``
names it elsewhere), which colcon-builds the project into a workspace of its own and runs the file
through the vendored upstream ``LaunchService`` (launch 3.7.1, launch_ros 0.28.0).

numba's cache for the launched nodes lives in ``NUMBA_CACHE_DIR`` (default a fixed temporary folder,
shared by every launch of a run, so the kernels compile once)."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(os.environ.get("GEODYN_REAL_LAUNCH_SCRIPT") or ROOT.parent / "shared" / "tools" / "real_launch.sh")
HAVE_LAUNCH_ROS = importlib.util.find_spec("launch_ros") is not None and shutil.which("ros2") is not None
CANNOT_RUN = ("needs launch_ros: a ROS 2 install with this package built and sourced (colcon build; "
              "source install/setup.bash; make test-real-launch), or the steering folder's "
              "../shared/tools/real_launch.sh beside the repository (or GEODYN_REAL_LAUNCH_SCRIPT=<path>)")
START_TIMEOUT = 900.0   # s: a cold start (script venv, colcon build, kernel compile) on a loaded 2-core machine
STOP_TIMEOUT = 300.0    # s after SIGINT


def can_launch() -> bool:
    """A real launch can run here (``ros2 launch``, or the script)."""
    return HAVE_LAUNCH_ROS or SCRIPT.exists()


_INTERFACES_READY = []


def _script_interfaces(env: dict) -> None:
    """Build ``geodyn_msgs`` (and the ``tf2_msgs``, ``actuator_msgs`` and ``px4_msgs`` stand-ins) into the
    script's venv, once, as ``make
    venv`` does for the clone's (``tools/build_interfaces.py``: the CMake path fix-up, then the
    build). The script's ``colcon build`` builds the root package alone (colcon's default crawl
    stops at it), as a user's bare ``colcon build`` would; the nodes' default ``message_types:
    typed`` needs the messages. A venv the script has not made yet is made by one short launch; one
    made from older requirements is brought up to date first."""
    if _INTERFACES_READY:
        return
    venv = Path(env.get("REAL_LAUNCH_VENV", "/tmp/real-launch-venv"))
    py = venv / "bin" / "python"
    if not (venv / "bin" / "colcon").exists():
        subprocess.run(["bash", str(SCRIPT), str(ROOT), "geodyn.launch.py", "1"], env=env, capture_output=True,
                       timeout=START_TIMEOUT)
    probe = subprocess.run([str(py), "-c", "import geodyn_msgs.msg, tf2_msgs.msg, px4_msgs.msg, actuator_msgs.msg, "
                            "std_srvs.srv"], env=env,
                           capture_output=True)
    if probe.returncode != 0:
        # the script makes its venv once, from the requirements of that day: bring it to today's
        # (the interface build's wheels), then build
        for argv in ([str(py), "-m", "pip", "install", "-q", "-r", str(ROOT / "requirements.txt")],
                     [str(py), str(ROOT / "tools" / "build_interfaces.py")]):
            res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=START_TIMEOUT)
            assert res.returncode == 0, f"{' '.join(argv[1:])} in {venv} failed:\n{res.stdout[-3000:]}{res.stderr[-3000:]}"
    _INTERFACES_READY.append(True)


def _launch(file, *args, env: dict | None = None):
    """Start ``file`` with ``args`` (``name:=value``) in its own process group, stdout and stderr
    together; ``env``: the environment (default this process's)."""
    env = dict(os.environ if env is None else env)
    env.setdefault("NUMBA_CACHE_DIR", "/tmp/geodyn-real-launch-numba-cache")
    env.setdefault("REAL_LAUNCH_WS", "/tmp/geodyn-real-launch-ws")   # one path: the numba cache stays valid
    if HAVE_LAUNCH_ROS:
        cmd = ["ros2", "launch", "geodyn_ros", file, *args]
    else:
        _script_interfaces(env)
        venv = env.get("REAL_LAUNCH_VENV", "/tmp/real-launch-venv")
        env["AMENT_PREFIX_PATH"] = venv + (":" + env["AMENT_PREFIX_PATH"] if env.get("AMENT_PREFIX_PATH") else "")
        cmd = ["bash", str(SCRIPT), str(ROOT), file, str(int(START_TIMEOUT + 600)), *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


def _stop(proc, timeout=STOP_TIMEOUT):
    """Ctrl-C as a terminal gives it: SIGINT to the launch's whole process group. (Sent to the launch
    process alone, LaunchService takes the SIGINT for the user's, assumes its children got it too
    (``Shutdown(due_to_sigint=True)``: no SIGINT of its own) and SIGTERMs them 5 s later.)"""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the launch did not stop within {timeout:g} s of SIGINT:\n" + out[-4000:])
    return proc.returncode, out


def _clean_stop(out, processes):
    assert "process has died" not in out, out[-4000:]
    assert "failed to terminate" not in out, "a process outlived SIGINT by 5 s (SIGTERMed):\n" + out[-4000:]
    for p in processes:
        assert re.search(rf"\[INFO\] \[{p}-\d+\]: process has finished cleanly", out), out[-4000:]
    assert "Traceback" not in out, out[-4000:]


