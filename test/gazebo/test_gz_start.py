"""The safe start in a real gz sim (gz-sim 8): the Gazebo models' start hold
(``urdf/multirotor_gazebo_plugins.xacro``, ``gz_start_hold``) welds the base to the launch files' stand
(``geodyn_ros_launch.GZ_STAND_SDF``) until the first rotor command, then lets go.

Before it, ``gz sim -r`` dropped the model (no collisions) the moment it was spawned, while the ROS
nodes still compiled their kernels: this test fails there (the base is not where it was spawned).
Skips in one line without Gazebo (``gz_world.NEEDS``).
"""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gz_world import gz_server, skip_reason, urdf_to_sdf, world_sdf

xacro = pytest.importorskip("xacro")
if skip_reason():
    pytest.skip(skip_reason(), allow_module_level=True)

from geodyn_ros_launch import GZ_STAND_SDF  # noqa: E402  (the launch helper module, after the skip)

REPO = Path(__file__).resolve().parents[2]
SPAWN_Z = 1.0


def _z(server) -> float | None:
    m = re.search(r"position\s*\{[^}]*?z:\s*(\S+)", server.echo("/model/aerial_manipulator/odometry", timeout=30))
    return float(m.group(1)) if m else None


def _sim_time(server) -> float:
    text = server.echo("/stats", timeout=30)
    m = re.search(r"sim_time\s*\{([^}]*)\}", text)
    if not m:
        return 0.0
    sec = re.search(r"\bsec:\s*(\d+)", m.group(1))
    nsec = re.search(r"nsec:\s*(\d+)", m.group(1))
    return (int(sec.group(1)) if sec else 0) + (int(nsec.group(1)) if nsec else 0) * 1e-9


@pytest.mark.parametrize("xacro_file", ["tilthex_manipulator_gazebo.xacro", "hexarotor_manipulator_gazebo.xacro"])
def test_held_until_the_first_rotor_command_then_released(xacro_file, tmp_path):
    """Gravity on, no collisions, nothing commanded: the base stays at its spawn height (to 1e-4 m: the
    one step before the weld is made) for 2 s of simulated time; a single rotor command (all rotors
    at 0 rad/s, the hold releases 1 s later whatever the speeds) releases it and it falls
    (more than 0.1 m within a few simulated seconds)."""
    xml = xacro.process_file(str(REPO / "urdf" / xacro_file)).toxml()
    model = urdf_to_sdf(xml, tmp_path)
    world = world_sdf(model, name="empty", gravity=(0.0, 0.0, -9.8), z=SPAWN_Z)
    stand = ET.tostring(ET.fromstring(GZ_STAND_SDF).find("model"), encoding="unicode")
    world = world.replace("<model name=\"aerial_manipulator\"", stand + "<model name=\"aerial_manipulator\"", 1)
    assert "geodyn_stand" in world
    with gz_server(world, tmp_path) as server:
        deadline = time.monotonic() + 600
        while _sim_time(server) < 2.0 and time.monotonic() < deadline:
            assert server.proc.poll() is None, server.log_text()[-2000:]
            time.sleep(1.0)
        z_held = _z(server)
        assert z_held is not None and abs(z_held - SPAWN_Z) <= 1e-4, (z_held, server.log_text()[-2000:])
        t_cmd = _sim_time(server)
        z = z_held
        while time.monotonic() < deadline and (z is None or z > SPAWN_Z - 0.1):
            server.publish("/aerial_manipulator/command/motor_speed", "gz.msgs.Actuators",
                           "velocity: [0, 0, 0, 0, 0, 0]")
            time.sleep(1.0)
            z = _z(server)
        assert z is not None and z < SPAWN_Z - 0.1, (z, server.log_text()[-2000:])
        assert _sim_time(server) >= t_cmd + 1.0   # not before the release delay
