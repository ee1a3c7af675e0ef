"""urdf/vehicle_gazebo.urdf.xacro: a user's vehicle for gz-sim from the URDF and ONE vehicle file,
expanded with the real xacro (PyPI) and checked without Gazebo (none on this machine).

For every vehicle (the shipped TiltHex-generator files and the list-form files of test/data: a PX4-form
X quadrotor with no arm, a collinear hexarotor with mixed joints, a tilted hexarotor): one
MulticopterMotorModel per rotor with actuator numbers 0..n-1; every element a gz-sim 8 element
(PLUGIN_ELEMENTS of test_launch_files, read from the gz-sim sources); each plugin's constants equal
the file's (per-rotor overrides honoured), read here with plain yaml; one ApplyJointForce per arm
joint; each generated rotor link's pose (from the joint origin's xyz/rpy the xacro computed)
against the file read here (PX4 FRD -> FLU, axis or rpy) and against the rotor frames of the
project's loader on the expanded URDF. What is not checked: anything a running gz sim does.
"""
from __future__ import annotations

import re
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

import geodyn_ros as gd
from launch_stubs import PLUGIN_ELEMENTS

xacro = pytest.importorskip("xacro")   # a test dependency (requirements.txt); never absent in CI

REPO = Path(__file__).resolve().parents[2]
XACRO = REPO / "urdf" / "vehicle_gazebo.urdf.xacro"
DATA = REPO / "test" / "data"
ARM = REPO / "urdf" / "aerial_manipulator.urdf"
VEH = REPO / "config" / "vehicles"
ERD = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
MOTOR = "gz-sim-multicopter-motor-model-system"
FORCE = "gz-sim-apply-joint-force-system"
# (URDF, vehicle file, the arm joints that get a torque input)
VEHICLES = {
    "hexarotor": (REPO / "urdf" / "hexarotor_manipulator.urdf.xacro", REPO / "config" / "hexarotor.yaml",
                  ["J2", "J3", "J4", "J5", "J6", "J7"]),
    "tilthex": (REPO / "urdf" / "tilthex_manipulator.urdf.xacro", REPO / "config" / "tilthex.yaml",
                ["J2", "J3", "J4", "J5", "J6", "J7"]),
    "quad_x": (DATA / "quad_x.urdf", DATA / "quad_x.yaml", []),
    "hex_list": (ARM, DATA / "hex_list.yaml", ["J2", "J3", "J4"]),
    "tilted_list": (ARM, DATA / "tilted_list.yaml", []),
    # the third-party vehicles of config/vehicles (example-robot-data's URDFs, installed in the venv)
    "iris": (ERD / "iris_description" / "robots" / "iris.urdf", VEH / "iris.yaml", []),
    "borinot_flying_arm_2": (ERD / "borinot_description" / "urdf" / "borinot_flying_arm_2.urdf",
                             VEH / "borinot_flying_arm_2.yaml", None),
    "hextilt_flying_arm_5": (ERD / "hextilt_description" / "urdf" / "hextilt_flying_arm_5.urdf",
                             VEH / "hextilt_flying_arm_5.yaml", None),
}
DEFAULTS = {"rotor_drag_coefficient": 0.0, "rolling_moment_coefficient": 0.0, "rotor_velocity_slowdown_sim": 10.0,
            "rotor_mass": 0.005}
TAGS = {"motorConstant": "motor_constant", "momentConstant": "moment_constant", "timeConstantUp": "time_constant_up",
        "timeConstantDown": "time_constant_down", "maxRotVelocity": "max_rot_velocity",
        "rotorDragCoefficient": "rotor_drag_coefficient", "rollingMomentCoefficient": "rolling_moment_coefficient",
        "rotorVelocitySlowdownSim": "rotor_velocity_slowdown_sim"}


def _expand(urdf, vehicle, **extra):
    rot = yaml.safe_load(Path(vehicle).read_text()).get("rotors")
    if isinstance(rot, dict) and "from_urdf" in rot and "rotor_links" not in extra:
        extra["rotor_links"] = ",".join(_urdf_links_matching(urdf, rot["from_urdf"]))
    return xacro.process_file(str(XACRO), mappings={"urdf": str(urdf), "vehicle": str(vehicle), **extra}).toxml()


def _urdf_links_matching(urdf, pattern):
    """The URDF's links whose names match the file's from_urdf regex, in name order (the schema's order)."""
    return sorted(lk.get("name") for lk in ET.parse(urdf).getroot().iter("link") if re.search(pattern, lk.get("name")))


def _expected_rotors(path):
    """Per rotor, from the file read with plain yaml (the schema's rules, api33): (position FLU,
    thrust axis FLU or None, rpy or None, turning direction, constants)."""
    v = yaml.safe_load(Path(path).read_text())
    rot = v.get("rotors")
    if isinstance(rot, dict):   # from_urdf: the URDF's links (no poses here)
        return [(None, None, None, d, {**DEFAULTS, **v.get("constants", {})}) for d in rot["turning_direction"]]
    if rot is None:   # the TiltHex generator: no poses here (the URDF has the links), constants per section
        sec = v.get("tilthex") or v.get("multirotor")
        return [(None, None, None, d, {**DEFAULTS, **v.get("constants", {}), **sec})
                for d in sec["turning_direction"]]
    out = []
    for r in rot:
        c = {**DEFAULTS, **v.get("constants", {})}
        if "px4" in r:
            x = r["px4"]
            p, a = np.array([x["PX"], -x["PY"], -x["PZ"]], float), np.array([x["AX"], -x["AY"], -x["AZ"]], float)
            d = "ccw" if x["KM"] > 0 else "cw"
            c["moment_constant"] = abs(x["KM"])
        else:
            p = np.array(r["position"], float)
            a = np.array(r["axis"], float) if "axis" in r else None
            d = r["turning_direction"]
        c.update({k: r[k] for k in c if k in r})
        out.append((p, a, np.array(r["rpy"], float) if "rpy" in r else None, d, c))
    return out


def _rpy_matrix(r, p, y):
    """URDF: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return Rz @ Ry @ Rx


@pytest.mark.parametrize("name", sorted(VEHICLES))
def test_one_motor_model_per_rotor_with_the_files_constants(name):
    urdf, vehicle, arm = VEHICLES[name]
    root = ET.fromstring(_expand(urdf, vehicle))
    expected = _expected_rotors(vehicle)
    if arm is None:   # the file's joints: section
        arm = list(yaml.safe_load(Path(vehicle).read_text())["joints"])
    plugins = list(root.iter("plugin"))
    for p in plugins:   # only elements gz-sim 8 reads
        cls, elements = PLUGIN_ELEMENTS[p.get("filename")]
        assert p.get("name") == cls
        assert not {c.tag for c in p} - elements, p.get("filename")
    motors = sorted((p for p in plugins if p.get("filename") == MOTOR), key=lambda p: int(p.findtext("actuator_number")))
    assert [int(p.findtext("actuator_number")) for p in motors] == list(range(len(expected)))
    joints = {j.get("name"): j for j in root.iter("joint")}
    links = {lk.get("name") for lk in root.iter("link")}
    for p, (_, _, _, direction, c) in zip(motors, expected):
        joint = joints[p.findtext("jointName")]
        # the xacro's rotor joints are continuous; a from_urdf URDF's own may be revolute with limits
        # that never bind (iris.urdf: +-1e16 rad, the SDF export of a continuous joint)
        lim = joint.find("limit")
        assert joint.get("type") == "continuous" or (
            joint.get("type") == "revolute" and min(-float(lim.get("lower")), float(lim.get("upper"))) >= 1e15)
        assert joint.find("child").get("link") == p.findtext("linkName") in links
        assert p.findtext("turningDirection") == direction
        assert p.findtext("motorType") == "velocity"
        assert p.findtext("robotNamespace") == "aerial_manipulator"   # config/gz_bridge.yaml's model name
        for tag, key in TAGS.items():
            assert float(p.findtext(tag)) == float(c[key]), (tag, p.findtext("linkName"))
    assert sorted(p.findtext("joint_name") for p in plugins if p.get("filename") == FORCE) == sorted(arm)
    odom = [p for p in plugins if p.get("filename") == "gz-sim-odometry-publisher-system"]
    base = yaml.safe_load(Path(vehicle).read_text()).get("base_link", "base_link")
    assert [p.findtext("robot_base_frame") for p in odom] == [base]


@pytest.mark.parametrize("name", ["quad_x", "hex_list", "tilted_list", "borinot_flying_arm_2", "hextilt_flying_arm_5"])
def test_rotor_link_poses_are_the_files(name):
    """The rotor joint origin (xyz, rpy) the xacro wrote: its position is the file's (FLU) and its z
    axis the file's thrust axis (1e-12: the xacro's atan2/sqrt and the text round trip of a double,
    repr-exact, leave a few ulp); with rpy given, the whole rotation is the file's."""
    urdf, vehicle, _ = VEHICLES[name]
    root = ET.fromstring(_expand(urdf, vehicle))
    joints = {j.get("name"): j for j in root.iter("joint")}
    for k, (p, a, rpy, _, _) in enumerate(_expected_rotors(vehicle), start=1):
        o = joints[f"rotor_{k}_joint"].find("origin")
        base = yaml.safe_load(Path(vehicle).read_text()).get("base_link", "base_link")
        assert joints[f"rotor_{k}_joint"].find("parent").get("link") == base
        xyz, R = np.array(o.get("xyz").split(), float), _rpy_matrix(*np.array(o.get("rpy").split(), float))
        np.testing.assert_allclose(xyz, p, rtol=0, atol=1e-15)
        if rpy is not None:
            np.testing.assert_allclose(R, _rpy_matrix(*rpy), rtol=0, atol=1e-12)
        else:
            np.testing.assert_allclose(R[:, 2], a / np.linalg.norm(a), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(VEHICLES))
def test_rotor_frames_agree_with_the_project_loader(name):
    """The expanded URDF loaded by the project (rotor joints locked): the rotor links' frames in the
    base link equal the frames the vehicle loader gives for the user's URDF (geodyn_ros.vehicle:
    cfg.rotor_frames) -- position and thrust axis to 1e-12 (the same doubles through two chains of
    trigonometry); the plugins' constants and turning directions are the loader's per rotor."""
    from geodyn_ros.control.rotors import rotor_frames_from_model
    from geodyn_ros.vehicle import load_vehicle
    urdf, vehicle, _ = VEHICLES[name]
    cfg = load_vehicle(vehicle)
    xml = _expand(urdf, vehicle)
    motors = sorted((p for p in ET.fromstring(xml).iter("plugin") if p.get("filename") == MOTOR),
                    key=lambda p: int(p.findtext("actuator_number")))
    gz = gd.load_urdf(xml, locked_joints=[p.findtext("jointName") for p in motors])
    _, frames_gz = rotor_frames_from_model(gz, [p.findtext("linkName") for p in motors])
    _, frames = cfg.rotor_frames(cfg.load_model(str(urdf)))
    np.testing.assert_allclose(frames_gz[:, :3, 3], frames[:, :3, 3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(frames_gz[:, :3, 2], frames[:, :3, 2], rtol=0, atol=1e-12)
    # the plugins' constants are the loader's per-rotor values (exactly: the same decimal text)
    for tag in ("motorConstant", "momentConstant", "timeConstantUp", "timeConstantDown", "maxRotVelocity"):
        np.testing.assert_array_equal([float(p.findtext(tag)) for p in motors], cfg.rotors.per_rotor(TAGS[tag]),
                                      err_msg=tag)
    # spin s_i = -1 for ccw, +1 for cw (the allocation's drag-torque sign; config/hexarotor.yaml)
    np.testing.assert_array_equal([-1.0 if p.findtext("turningDirection") == "ccw" else 1.0 for p in motors],
                                  cfg.rotors.spin)


def test_from_urdf_without_rotor_links_is_refused_in_one_line():
    with pytest.raises(xacro.XacroException, match="rotors.from_urdf: xacro cannot match the regex; give the URDF's"):
        _expand(VEHICLES["iris"][0], VEHICLES["iris"][1], rotor_links="")


def test_arguments_override_the_file():
    """base_link:= and arm_joints:= win over the file; rotor_prefix:= renames the generated rotors."""
    root = ET.fromstring(_expand(ARM, DATA / "hex_list.yaml", arm_joints="J5, J6", rotor_prefix="prop_"))
    plugins = list(root.iter("plugin"))
    assert sorted(p.findtext("joint_name") for p in plugins if p.get("filename") == FORCE) == ["J5", "J6"]
    assert [p.findtext("linkName") for p in plugins if p.get("filename") == MOTOR] == [f"prop_{k}" for k in range(1, 7)]
