"""Shared fixtures: the shipped aerial manipulator model (loaded once per test process).

The tests live in folders that mirror the package's layers (``model``, ``algorithms``, ``vehicle``,
``control``, ``world`` (the simulator's worlds), ``loops``, ``ros/{wire,nodes,loops}``,
``package``); the helpers they share (``ros_harness``, ``reference_models``) and ``data/`` stay here, and this folder is put on
``sys.path`` so that ``import ros_harness`` works from every one of them."""
import sys
from pathlib import Path

import pytest

import geodyn_ros as gd

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "test") not in sys.path:
    sys.path.insert(0, str(REPO / "test"))


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


@pytest.fixture
def stub_launch(monkeypatch):
    """The stub ``launch``/``launch_ros`` modules, installed for one test
    (``launch_stubs.install_stub_launch``)."""
    from launch_stubs import install_stub_launch

    return install_stub_launch(monkeypatch)
