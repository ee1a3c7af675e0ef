"""A user's vehicle over ROS 2 (launch/fly.launch.py's nodes, geodyn_ros.ros.loops.fly_closed_loop).

* The ROS loop (four real rclpy nodes, lock-step, one process, the parameters the launch file
  gives them) reproduces the in-process loop of ``geodyn_fly`` (:func:`geodyn_ros.loops.fly.fly`,
  ``preroll 0``) step for step, for vehicles that are not the shipped ones: the collinear
  hexarotor with mixed rigid/elastic joints of test/data/hex_list.yaml (rotor list, per-rotor
  constant, no rotor links in the URDF) and three of config/vehicles on example-robot-data's URDFs:
  Borinot (rigid 2-DoF arm) and iris (X quadrotor, n = 0 joints), rank 4 (flatness), and Hextilt
  (tilted rotors, 5 series-elastic joints), rank 6 (the actuated controller). Measured over 2 s of
  ff2: 7.0e-16, 6.7e-16, 5.0e-16 and 2.5e-16 m apart. Same MuJoCo model, same
  start, same commands; the differences are the quaternion round trip in ``odom``, the reference
  message and ``geodyn_node``'s jet (rounding, ~1e-16). Tolerance 1e-12 m and 1e-12 rad over 2 s
  (2000 steps of a stable loop), as test_ros_actuated_loop.py's; a one-step delay, a wrong gain
  or a wrong start gives 1e-6 and more.
* ``launch-parameters`` (what the launch file runs in a child process): one line and exit 2 for
  a vehicle that cannot fly; for one that can, a parameter file rcl's own parser reads, naming
  the rank's controller, the per-joint gains as arrays and the vehicle file as actuation_config.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from ros_harness import loop_problems  # noqa: I100  (imported first: it sets the ROS isolation env)

from geodyn_ros.loops.fly import example_robot_data_dir, fly
from geodyn_ros.ros.loops.actuated_closed_loop import compare_logs
from geodyn_ros.ros.loops.fly_closed_loop import run_ros_fly

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "test" / "data"
ERD = example_robot_data_dir()
VEHICLES = {
    "hex_list": (ROOT / "urdf" / "aerial_manipulator.urdf", DATA / "hex_list.yaml"),
    "borinot_flying_arm_2": (ERD / "borinot_description" / "urdf" / "borinot_flying_arm_2.urdf",
                             ROOT / "config" / "vehicles" / "borinot_flying_arm_2.yaml"),
    "iris": (ERD / "iris_description" / "robots" / "iris.urdf", ROOT / "config" / "vehicles" / "iris.yaml"),
    "hextilt_flying_arm_5": (ERD / "hextilt_description" / "urdf" / "hextilt_flying_arm_5.urdf",
                             ROOT / "config" / "vehicles" / "hextilt_flying_arm_5.yaml"),
}
DURATION = 2.0


@pytest.mark.parametrize("name", sorted(VEHICLES))
def test_ros_fly_loop_reproduces_the_in_process_loop(name):
    urdf, vehicle = VEHICLES[name]
    info = {}
    ros = run_ros_fly(urdf, vehicle, "figure8", "ff2", DURATION, wall_timeout=600, info=info)
    twin = fly(info["setup"]["prep"], ["ff2"], duration=DURATION, preroll=0.0)["ff2"]
    n = int(round(DURATION / 1e-3)) + 1
    assert len(ros.log.t) == len(twin.log.t) == n
    assert np.abs(ros.log.t - twin.log.t).max() < 1e-12
    assert np.abs(ros.log.p - twin.log.p).max() < 1e-12
    assert np.abs(ros.log.R - twin.log.R).max() < 1e-12
    if ros.log.q.size:
        assert np.abs(ros.log.q - twin.log.q).max() < 1e-12
    d = compare_logs(ros.log, twin.log)
    assert d["samples"] == n and d["max_position_diff_m"] < 1e-12
    # it tracks (not two identical divergences): the CoM (rank 4) or base (rank 6) within 1 mm of
    # the reference all along (measured RMS 1.6e-6..2.4e-5 m; 1 mm = a loop that works, 40x above)
    assert np.linalg.norm(ros.log.p - ros.log.p_d, axis=1).max() < 1e-3
    assert not loop_problems(info["diagnostics"])


def _launch_parameters(tmp_path, urdf, vehicle, reference="figure8", level="ff2"):
    out = tmp_path / "p.yaml"
    res = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.loops.fly_closed_loop", "launch-parameters", str(urdf),
                          str(vehicle), reference, level, str(out)], capture_output=True, text=True, timeout=600)
    return res, out


def test_launch_parameters_refuse_a_vehicle_that_cannot_fly_in_one_line(tmp_path):
    urdf, vehicle = VEHICLES["hex_list"]
    weak = tmp_path / "weak.yaml"   # motor constant / 4: thrust-to-weight 1.95 -> 0.49
    weak.write_text(vehicle.read_text().replace("motor_constant: 1.269e-05", "motor_constant: 3.17e-06")
                    .replace("motor_constant: 1.3e-05", "motor_constant: 3.2e-06"))
    res, out = _launch_parameters(tmp_path, urdf, weak)
    assert res.returncode == 2 and not out.exists()
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fly.launch.py: refused: ") and "thrust-to-weight" in lines[0]
    res, _ = _launch_parameters(tmp_path, urdf, vehicle, level="pd")   # pd is a rank-6 level
    assert res.returncode == 2 and "level: 'pd' is not a level of a rank 4 vehicle" in res.stderr
    res, _ = _launch_parameters(tmp_path, urdf, vehicle, reference=str(tmp_path / "none.yaml"))
    assert res.returncode == 2 and res.stderr == (f"fly.launch.py: refused: {tmp_path / 'none.yaml'}: cannot be read "
                                                  "(No such file or directory); give the path of an existing mission "
                                                  "file\n"), res.stderr
    res, _ = _launch_parameters(tmp_path, urdf, tmp_path / "none.yaml")      # geodyn_fly's line for the vehicle
    assert res.returncode == 2 and res.stderr.startswith(f"fly.launch.py: refused: {tmp_path / 'none.yaml'}: cannot be "
                                                         "read (No such file or directory); give the path of an "
                                                         "existing vehicle file"), res.stderr


def test_launch_parameters_of_a_vehicle(tmp_path):
    """The parameter file: read by rcl's own YAML parser (rclpy's parameter_dict_from_yaml_file),
    one section per node of the rank-4 composition, the vehicle file everywhere, the per-joint gains
    as arrays (one per joint of the URDF), the simulator at the file's control period."""
    from rclpy.parameter import Parameter, parameter_dict_from_yaml_file

    def params(node):
        return {k: Parameter.from_parameter_msg(v).value
                for k, v in parameter_dict_from_yaml_file(str(out), target_nodes=[node]).items()}

    urdf, vehicle = VEHICLES["hex_list"]
    res, out = _launch_parameters(tmp_path, urdf, vehicle, level="ff1")
    assert res.returncode == 0, res.stderr
    meta = json.loads(res.stdout.strip().splitlines()[-1])
    assert meta == {"rank": 4, "controller": "geodyn_flat_controller", "parameters": str(out)}
    nodes = ("geodyn_actuated_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller")
    doc = yaml.safe_load(out.read_text())
    assert tuple(doc) == nodes
    for name in nodes:
        p = params(name)
        assert p["actuation_config"] == str(vehicle.resolve())
        assert ("robot_description" not in p) and ("urdf_path" not in p)   # the launch file's robot_description
    ctrl = params("geodyn_flat_controller")
    assert ctrl["level"] == "ff1" and len(ctrl["kp_joints"]) == len(ctrl["kd_joints"]) == 6
    sim = params("geodyn_actuated_sim")
    assert sim["timestep"] == 0.001 and sim["lockstep"] is True
    assert len(sim["initial_rotor_speeds"]) == 6 and len(sim["initial_motor_positions"]) == 2   # J2, J4 elastic
    ref = params("geodyn_reference")
    assert ref["trajectory"] == "vehicle" and ref["vehicle_reference"] == "figure8"


def test_reference_node_vehicle_mode_refusals(h):
    """geodyn_reference trajectory 'vehicle': without the vehicle file or the robot, and with a
    reference that is neither built in nor a file, the node does not start (one line naming the
    parameter)."""
    from geodyn_ros.ros.common.params import ConfigurationError
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    urdf, vehicle = VEHICLES["hex_list"]
    with pytest.raises(ConfigurationError, match="parameter 'trajectory': 'vehicle' needs actuation_config"):
        h.make(ReferenceNode, {"trajectory": "vehicle", "urdf_path": str(urdf)})
    with pytest.raises(ConfigurationError, match="parameter 'vehicle_reference': "):
        h.make(ReferenceNode, {"trajectory": "vehicle", "urdf_path": str(urdf), "actuation_config": str(vehicle),
                               "vehicle_reference": "/nonexistent/mission.yaml"})
