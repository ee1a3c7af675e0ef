"""What the vehicle layer changes in a third-party URDF (issue 40), against hand computations.

* A joint whose URDF limits pin it (revolute or prismatic, lower = upper to PIN_TOL) is locked at
  that position by ``ActuationConfig`` (``locked_joints``, ``locked_positions``, ``load_model``, so
  every consumer of the vehicle file): the RotorS IMU mount is no arm joint, and a joint pinned
  off zero puts its child where a hand-written rotation does.
* A link inertia MuJoCo refuses is corrected in the model as in the simulator (``flight_urdf``).
* Nothing changes for the shipped vehicles: no pinned joint, no correction, and ``load_model``'s
  model is ``load_urdf``'s with the rotor joints locked, bit for bit.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.vehicle import load_vehicle
from geodyn_ros.vehicle.params import PIN_TOL
from geodyn_ros.vehicle.shipped import SHIPPED_URDFS, shipped_vehicle_files

DATA = Path(__file__).resolve().parents[1] / "data"
ROTORS = tuple(f"firefly/rotor_{i}_joint" for i in range(6))


def _quiet(f, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **kw)


@pytest.mark.parametrize("urdf, arm", [("firefly.urdf", ()), ("firefly_arm.urdf", ("arm_joint_1", "arm_joint_2"))])
def test_the_rotors_imu_mount_is_locked_not_an_arm_joint(urdf, arm):
    cfg = load_vehicle(DATA / "firefly.yaml")
    src = DATA / urdf
    assert cfg.pinned_joints(src) == {"firefly/imu_joint": 0.0}
    assert cfg.locked_joints(src) == ROTORS + ("firefly/imu_joint",)
    assert cfg.locked_positions(src) == dict.fromkeys(ROTORS + ("firefly/imu_joint",), 0.0)
    with pytest.warns(gd.URDFWarning, match="inertia corrected for MuJoCo"):
        model = cfg.load_model(src)
    assert model.joint_names == arm
    cfg.check(model)
    # the IMU's 0.015 kg is in the base: 1.5 body + 6 x 0.005 rotors + 0.015 (+ 0.13 kg of arm)
    assert model.mass[0] == pytest.approx(1.545, rel=1e-12)


def _one_joint(jtype, lower, upper, axis="0 0 1"):
    return (f'<robot name="p"><link name="base"><inertial><mass value="1"/>'
            f'<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<joint name="j" type="{jtype}"><parent link="base"/><child link="c"/><origin xyz="0.1 0 0"/>'
            f'<axis xyz="{axis}"/><limit lower="{lower!r}" upper="{upper!r}" effort="1" velocity="1"/></joint>'
            f'<link name="c"><inertial><origin xyz="0.2 0 0"/><mass value="0.5"/>'
            f'<inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>')


def _cfg(tmp_path):
    p = tmp_path / "v.yaml"
    p.write_text("rotors:\n" + "".join(f"  - {{position: [{0.2 * math.cos(k * math.pi / 2)!r}, "
                                         f"{0.2 * math.sin(k * math.pi / 2)!r}, 0], axis: [0, 0, 1], "
                                         f"turning_direction: {('ccw', 'cw')[k % 2]}}}\n" for k in range(4))
                 + "constants: {motor_constant: 1.0e-5, moment_constant: 0.016, time_constant_up: 0.01, "
                   "time_constant_down: 0.02, max_rot_velocity: 1000}\n")
    return load_vehicle(p)


def test_a_joint_pinned_off_zero_puts_its_child_where_its_limits_say(tmp_path):
    cfg = _cfg(tmp_path)
    for jtype, x in (("revolute", 0.3), ("prismatic", 0.05)):
        urdf = _one_joint(jtype, x, x)
        assert cfg.locked_positions(urdf) == {"j": x}
        model = cfg.load_model(urdf)
        assert model.joint_names == ()
        # the child's CoM by hand: joint at (0.1, 0, 0), the child's CoM 0.2 m along its x axis,
        # turned by x about z (revolute) or moved by x along z (prismatic)
        c = (np.array([0.1 + 0.2 * math.cos(x), 0.2 * math.sin(x), 0.0]) if jtype == "revolute"
             else np.array([0.3, 0.0, x]))
        np.testing.assert_allclose(model.com[0], 0.5 * c / 1.5, rtol=0, atol=1e-15)
        # a list given to load_model (locked at 0 otherwise) does not move a pinned joint
        np.testing.assert_array_equal(cfg.load_model(urdf, locked_joints=["j"]).com[0], model.com[0])


def test_what_is_not_pinned_stays_an_arm_joint(tmp_path):
    cfg = _cfg(tmp_path)
    assert cfg.locked_positions(_one_joint("revolute", 0.0, PIN_TOL / 2)) == {"j": PIN_TOL / 4}
    for urdf in (_one_joint("revolute", 0.0, 1e-6),          # a micro-radian range: 1000 x PIN_TOL, it moves
                 _one_joint("continuous", 0.0, 0.0),         # a continuous joint's limits mean nothing
                 _one_joint("revolute", 0.5, -0.5)):         # lower > upper: the URDF's problem, not a pin
        assert cfg.pinned_joints(urdf) == {} and cfg.load_model(urdf).joint_names == ("j",)


def test_a_vehicle_file_that_drives_a_pinned_joint_is_refused_by_name(tmp_path):
    p = tmp_path / "f.yaml"
    p.write_text((DATA / "firefly.yaml").read_text() + "joints:\n  firefly/imu_joint: {type: rigid}\n")
    cfg = load_vehicle(p)
    model = _quiet(cfg.load_model, DATA / "firefly.urdf")
    with pytest.raises(ValueError, match=r"f\.yaml: joints\.firefly/imu_joint: 'firefly/imu_joint' is pinned by its "
                                         r"URDF limits \(lower = upper = 0\) and locked there, not an arm joint; "
                                         r"remove it"):
        cfg.check(model)


@pytest.mark.parametrize("name", list(SHIPPED_URDFS))
def test_the_shipped_vehicles_load_as_before(name):
    urdf, vehicle = shipped_vehicle_files(name)
    cfg = load_vehicle(vehicle)
    assert cfg.pinned_joints(urdf) == {}
    src, corr = cfg.flight_urdf(urdf)
    assert src is urdf and corr == ()
    a = _quiet(cfg.load_model, urdf)
    b = _quiet(gd.load_urdf, urdf, base_link=cfg.base_link, locked_joints=list(cfg.locked_joints(urdf)))
    assert a.joint_names == b.joint_names and a.link_names == b.link_names
    for k in ("mass", "com", "inertia", "Y", "parent", "jtype"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
