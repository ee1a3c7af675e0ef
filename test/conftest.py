"""Shared fixtures: the shipped aerial manipulator model (loaded once per test process)."""
from pathlib import Path

import pytest

import geodyn_ros as gd

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def aerial_manipulator():
    return gd.load_urdf(REPO / "urdf" / "aerial_manipulator.urdf")


@pytest.fixture
def h():
    """A ``ros_harness.Harness`` (private rclpy context, executor, probe node) closed after the test.

    Imported lazily: importing ``ros_harness`` sets the process's ROS isolation environment and
    imports rclpy, which the ROS-free tests must not need."""
    from ros_harness import Harness

    harness = Harness()
    yield harness
    harness.close()
