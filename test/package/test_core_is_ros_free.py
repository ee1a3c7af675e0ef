"""``import geodyn_ros`` (and the ROS-free modules) must not pull in rclpy or MuJoCo."""
import subprocess
import sys


def test_core_imports_without_ros_or_mujoco():
    code = ("import sys, geodyn_ros, geodyn_ros.control, geodyn_ros.loops.tracking, geodyn_ros.trajectories;"
            "bad = [m for m in ('rclpy', 'mujoco', 'std_msgs') if m in sys.modules];"
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
