"""Shared fixtures: the shipped aerial manipulator model (loaded once per test process)."""
from pathlib import Path

import pytest

import geodyn_ros as gd

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def aerial_manipulator():
    return gd.load_urdf(REPO / "urdf" / "aerial_manipulator.urdf")
