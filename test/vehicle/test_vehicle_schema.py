"""The vehicle file (geodyn_ros.vehicle, doc/reference/vehicle_file.md): every rotor form gives the
allocation it should, checked against independent references (the paper's eq. (28) written out
by hand, PX4's own effectiveness formula and airframe numbers, the URDF's joint origins); every
refusal is one line naming the file and the key; the old files load to the same values."""
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import geodyn_ros as gd
from geodyn_ros.control.rotors import load_actuation_config as old_name_loader
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.vehicle import (ActuationConfig, ElasticJointParams, RotorParams, load_vehicle, rotor_frames_from_model,
                                rotor_wrench_columns, tilthex_rotor_frames)
from geodyn_ros.vehicle.geometry import multirotor_frames, rotation_from_axis

ROOT = Path(__file__).resolve().parents[2]
IRIS = (ROOT / ".venv/lib/python3.11/site-packages/cmeel.prefix/share/example-robot-data/robots/iris_description/"
        "robots/iris.urdf")
CONST = {"motor_constant": 1e-5, "moment_constant": 0.02, "time_constant_up": 0.02, "time_constant_down": 0.02,
         "max_rot_velocity": 1000.0}


def urdf(mass=1.5, joints=(), com_x=0.0):
    """A floating base of ``mass`` kg (CoM at (com_x, 0, 0)) with a chain of revolute joints
    ``(name, effort or None)``, each carrying a 0.1 kg link."""
    def link(name, m, x=0.0):
        return (f'<link name="{name}"><inertial><origin xyz="{x} 0 0"/><mass value="{m}"/>'
                '<inertia ixx="0.01" iyy="0.01" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    out, parent = [link("base", mass, com_x)], "base"
    for k, (name, effort) in enumerate(joints):
        lim = "" if effort is None else f'<limit effort="{effort}" lower="-3" upper="3" velocity="5"/>'
        out.append(link(f"l{k}", 0.1))
        out.append(f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
                   f'<origin xyz="0 0 -0.1"/><axis xyz="0 1 0"/>{lim}</joint>')
        parent = f"l{k}"
    return '<robot name="r">' + "".join(out) + "</robot>"


def write(tmp_path, doc, name="v.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc) if isinstance(doc, dict) else doc)
    return p


def quad_x(arm=0.2, **over):
    """An X quadrotor, rotor list form, thrust +z (FLU)."""
    rs = [{"position": [arm, -arm, 0.0], "axis": [0, 0, 1], "turning_direction": "ccw"},
          {"position": [-arm, arm, 0.0], "axis": [0, 0, 1], "turning_direction": "ccw"},
          {"position": [arm, arm, 0.0], "axis": [0, 0, 1], "turning_direction": "cw"},
          {"position": [-arm, -arm, 0.0], "axis": [0, 0, 1], "turning_direction": "cw"}]
    return {"rotors": rs, "constants": dict(CONST), **over}


def A_of(cfg, model):
    rp = cfg.rotors
    cf = rp.per_rotor("motor_constant")
    return rotor_wrench_columns(cfg.rotor_frames(model)[1], cf, rp.spin * rp.per_rotor("moment_constant") * cf)


def refused(tmp_path, doc, key, *, model_urdf=None, extra=None):
    """Load (and check against ``model_urdf``) and return the one-line refusal naming ``key``."""
    p = write(tmp_path, doc)
    with pytest.raises(ValueError) as ei:
        cfg = load_vehicle(p)
        cfg.check(cfg.load_model(model_urdf if model_urdf is not None else urdf()))
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{p}: {key}: "), msg
    if extra:
        assert extra in msg, msg
    return msg


# ----------------------------------------------------------------------------- old files
@pytest.mark.parametrize("name, section, xacro", [("tilthex", "tilthex", "tilthex_manipulator.urdf.xacro"),
                                                   ("hexarotor", "multirotor", "hexarotor_manipulator.urdf.xacro")])
def test_old_files_load_to_the_values_they_hold_and_the_same_frames(name, section, xacro):
    raw = yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())   # read independently of the loader
    t, e = raw[section], raw["elastic_joints"]
    cfg = load_vehicle(name)
    assert old_name_loader is load_vehicle
    rp = cfg.rotors
    assert rp.turning_direction == tuple(t["turning_direction"])
    for k in ("motor_constant", "moment_constant", "time_constant_up", "time_constant_down", "max_rot_velocity",
              "rotor_drag_coefficient", "rolling_moment_coefficient"):
        assert type(getattr(rp, k)) is float and getattr(rp, k) == t[k], k     # scalars, as before schema 1
    assert rp.min_rot_velocity == 0.0
    assert cfg.arm_length == t["arm_length"] and cfg.rotor_prefix == t["rotor_prefix"]
    assert np.array_equal(cfg.alpha, np.radians(t["alpha_deg"])) and np.array_equal(cfg.beta, np.radians(t["beta_deg"]))
    assert cfg.rotor_velocity_slowdown_sim == t["rotor_velocity_slowdown_sim"] and cfg.rotor_mass == t["rotor_mass"]
    el = cfg.elastic
    assert el.joints == tuple(e["joints"]) and el.max_motor_torque == e["max_motor_torque"]
    assert np.array_equal(el.stiffness, e["stiffness"]) and np.array_equal(el.motor_inertia, e["motor_inertia"])
    assert cfg.joint_actuation == {j: {"type": "elastic", "stiffness": e["stiffness"][k],
                                       "motor_inertia": e["motor_inertia"][k], "max_torque": e["max_motor_torque"]}
                                   for k, j in enumerate(e["joints"])}
    assert cfg.control_period == 0.001 and cfg.base_link is None and cfg.rotor_geometry == "tilthex"
    # the frames: bit for bit those of the path every call site used before schema 1
    src = str(shipped_urdf(xacro))
    before = gd.load_urdf(src, locked_joints=[f"rotor_{i}_joint" for i in range(1, 7)])
    names0, F0 = rotor_frames_from_model(before, [f"rotor_{i}" for i in range(1, 7)])
    model = cfg.load_model(src)
    assert model.joint_names == before.joint_names
    names, F = cfg.rotor_frames(model)
    assert names == names0 and np.array_equal(F, F0)
    cfg.check(model)
    # the generator (a URDF without rotor links) gives eq. (28) to rounding of the xacro's rpy (1e-15)
    assert np.allclose(multirotor_frames(cfg.arm_length, cfg.alpha, cfg.beta), F0, rtol=0, atol=1e-12)


def test_the_generator_for_six_rotors_is_the_tilthex_function_to_the_last_bit():
    a, b = np.radians([20.0, -20.0] * 3), np.radians([1.0, 2.0, 3.0, -4.0, 5.0, 0.0])
    assert np.array_equal(multirotor_frames(0.25, a, b), tilthex_rotor_frames(0.25, a, b))


# ----------------------------------------------------------------------------- the list form
def test_tilthex_written_out_by_hand_from_eq_28_gives_the_urdf_link_allocation(tmp_path):
    """Eq. (28) by hand: rotor i at Rz(th_i) (a, 0, 0), thrust Rz(th_i) Rx(alpha_i) e3 =
    (sin th sin alpha, -cos th sin alpha, cos alpha), th_i = (2 - i) pi / 3."""
    a, rs = 0.25, []
    for i in range(1, 7):
        th, al = (2 - i) * math.pi / 3, math.radians(20.0 if i % 2 else -20.0)
        rs.append({"position": [a * math.cos(th), a * math.sin(th), 0.0],
                   "axis": [math.sin(th) * math.sin(al), -math.cos(th) * math.sin(al), math.cos(al)],
                   "turning_direction": "ccw" if i % 2 else "cw"})
    const = {"motor_constant": 1.269e-05, "moment_constant": 0.016754, "time_constant_up": 0.0182,
             "time_constant_down": 0.0182, "max_rot_velocity": 1000.0}
    cfg = load_vehicle(write(tmp_path, {"rotors": rs, "constants": const}))
    ref = load_vehicle("tilthex")
    src = str(shipped_urdf("tilthex_manipulator.urdf.xacro"))
    A_list = A_of(cfg, cfg.load_model(src))
    A_urdf = A_of(ref, ref.load_model(src))
    # 1e-12 of the largest entry: the two paths differ by rounding of sin/cos and the xacro's rpy (1e-16)
    assert np.allclose(A_list, A_urdf, rtol=0, atol=1e-12 * np.abs(A_urdf).max())
    F_list, F_urdf = cfg.rotor_frames(None)[1], ref.rotor_frames(ref.load_model(src))[1]
    assert np.allclose(F_list[:, :3, 3], F_urdf[:, :3, 3], rtol=0, atol=1e-12)      # positions [m]
    assert np.allclose(F_list[:, :3, 2], F_urdf[:, :3, 2], rtol=0, atol=1e-12)      # thrust axes
    assert cfg.rotors.turning_direction == ref.rotors.turning_direction


def test_the_rotation_from_an_axis_is_minimal_and_the_wrench_ignores_the_roll():
    rng = np.random.default_rng(3)
    for _ in range(20):
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        R = rotation_from_axis(ax)
        # R e3 = axis, R a rotation, and its angle is the angle between e3 and the axis (minimal)
        assert np.allclose(R[:, 2], ax, atol=1e-15 * 10) and np.allclose(R.T @ R, np.eye(3), atol=1e-14)
        assert np.isclose(np.linalg.det(R), 1.0, atol=1e-14)
        assert np.isclose(np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)), np.arccos(ax[2]), atol=1e-7)
        # any roll about the axis: the same allocation column (the drag torque is along the axis)
        T0, T1 = np.eye(4), np.eye(4)
        T0[:3, :3], T0[:3, 3] = R, rng.normal(size=3)
        g = rng.uniform(-np.pi, np.pi)
        T1[:3, :3], T1[:3, 3] = R @ np.array([[np.cos(g), -np.sin(g), 0], [np.sin(g), np.cos(g), 0], [0, 0, 1]]), T0[:3, 3]
        c0 = rotor_wrench_columns(T0[None], 1e-5, [2e-7])
        c1 = rotor_wrench_columns(T1[None], 1e-5, [2e-7])
        assert np.allclose(c0, c1, rtol=0, atol=1e-20)     # entries ~1e-5: 1e-20 is rounding (1e-16 relative)
    assert np.array_equal(rotation_from_axis([0, 0, 1]), np.eye(3))
    assert np.array_equal(rotation_from_axis([0, 0, -1]), np.diag([1.0, -1.0, -1.0]))


def test_rpy_form_is_the_urdf_rotation(tmp_path):
    doc = quad_x()
    doc["rotors"][0] = {"position": [0.2, -0.2, 0.0], "rpy": [0.0, 0.0, 0.7], "turning_direction": "ccw"}
    F = load_vehicle(write(tmp_path, doc)).rotor_frames(None)[1]
    c, s = math.cos(0.7), math.sin(0.7)
    assert np.allclose(F[0, :3, :3], [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-15)


# ----------------------------------------------------------------------------- PX4
#: PX4-Autopilot ROMFS/px4fmu_common/init.d-posix/airframes/10040_sihsim_quadx ("Square quadrotor X
#: PX4 numbering"): CA_ROTOR0..3 (PX, PY) = (1, 1), (-1, -1), (1, -1), (-1, 1); KM: 0.05 (the
#: module.yaml default, "positive for CCW") for rotors 0 and 1, -0.05 for 2 and 3; PZ 0, axis the
#: default (0, 0, -1) (FRD).
PX4_QUAD = [(1.0, 1.0, 0.05), (-1.0, -1.0, 0.05), (1.0, -1.0, -0.05), (-1.0, 1.0, -0.05)]


def test_px4_x_quad_gives_the_hand_derived_mixer_and_px4s_own_effectiveness(tmp_path):
    cf = 1e-5
    rs = [{"px4": {"PX": px, "PY": py}} if km == 0.05 else {"px4": {"PX": px, "PY": py, "KM": km}}
          for px, py, km in PX4_QUAD]                       # rotors 0, 1 leave KM at PX4's default
    cfg = load_vehicle(write(tmp_path, {"rotors": rs, "constants": dict(CONST, motor_constant=cf)}))
    assert cfg.rotors.turning_direction == ("ccw", "ccw", "cw", "cw")
    assert cfg.rotors.moment_constant == 0.05               # |KM| (moment_constant not given)
    model = cfg.load_model(urdf(mass=1.5))
    assert model.n_joints == 0
    cfg.check(model)
    A = A_of(cfg, model)
    # the hand-derived mixer in FLU, rows (f_z, n_x, n_y, n_z): rotor at FRD (x, y) sits at FLU (x, -y):
    # n_x = -y c_f, n_y = -x c_f, n_z = -KM c_f (a ccw rotor's drag turns the body cw)
    mixer = cf * np.array([[1, 1, 1, 1], [-1, 1, 1, -1], [-1, 1, -1, 1], [-0.05, -0.05, 0.05, 0.05]])
    assert np.allclose(A[[5, 0, 1, 2]], mixer, rtol=0, atol=1e-20)
    assert np.allclose(A[3:5], 0.0, atol=1e-20)
    # PX4's own formula (ActuatorEffectivenessRotors::computeEffectivenessMatrix) in FRD, ct = c_f:
    # thrust = ct axis, moment = ct p x axis - ct km axis; FRD -> FLU flips y and z of both vectors
    flip = np.diag([1.0, -1.0, -1.0])
    for i, (px, py, km) in enumerate(PX4_QUAD):
        p, axis = np.array([px, py, 0.0]), np.array([0.0, 0.0, -1.0])
        m = cf * np.cross(p, axis) - cf * km * axis
        assert np.allclose(A[:3, i], flip @ m, rtol=0, atol=1e-20) and np.allclose(A[3:, i], flip @ (cf * axis))


def test_px4_contradicting_turning_direction_and_zero_km_are_refused(tmp_path):
    doc = {"rotors": [{"px4": {"PX": 1, "PY": 1, "KM": 0.05}, "turning_direction": "cw"}], "constants": CONST}
    refused(tmp_path, doc, "rotors[0].turning_direction", extra="contradicts")
    doc = {"rotors": [{"px4": {"PX": 1, "PY": 1, "KM": 0}}], "constants": CONST}
    refused(tmp_path, doc, "rotors[0].px4.KM")
    doc = {"rotors": [{"px4": {"PX": 1, "PY": 1, "AZ": -0.5}}], "constants": CONST}
    refused(tmp_path, doc, "rotors[0].px4.A*", extra="not a unit vector")


# ----------------------------------------------------------------------------- from_urdf
def test_from_urdf_on_example_robot_datas_iris(tmp_path):
    doc = {"base_link": "iris__base_link", "rotors": {"from_urdf": r"^iris__rotor_\d+$",
                                                      "turning_direction": ["ccw", "ccw", "cw", "cw"]},
           "constants": dict(CONST, motor_constant=8.54858e-06, max_rot_velocity=1100.0)}
    cfg = load_vehicle(write(tmp_path, doc))
    assert cfg.locked_joints(IRIS) == tuple(f"iris__rotor_{i}_joint" for i in range(4))
    model = cfg.load_model(IRIS)
    assert model.n_joints == 0 and model.base_link == "iris__base_link"
    names, F = cfg.rotor_frames(model)
    assert names == tuple(f"iris__rotor_{i}" for i in range(4))
    # the joint origins of iris.urdf (read by eye from the file), rotation identity
    assert np.allclose(F[:, :3, 3], [[0.13, -0.22, 0.023], [-0.13, 0.2, 0.023], [0.13, 0.22, 0.023],
                                     [-0.13, -0.2, 0.023]], rtol=0, atol=1e-15)
    assert np.allclose(F[:, :3, :3], np.eye(3), atol=1e-15)
    cfg.check(model)
    assert np.array_equal(cfg.effort_limits(model), np.zeros(0))


def test_from_urdf_refusals(tmp_path):
    doc = {"rotors": {"from_urdf": r"^nope_\d+$", "turning_direction": ["ccw"] * 4}, "constants": CONST}
    refused(tmp_path, doc, "rotors.from_urdf", model_urdf=IRIS, extra="matches no link")
    doc = {"rotors": {"from_urdf": r"^iris__rotor_\d+$", "turning_direction": ["ccw"] * 3}, "constants": CONST}
    refused(tmp_path, doc, "rotors.turning_direction", model_urdf=IRIS, extra="matches 4 links")
    doc = {"rotors": {"from_urdf": "([", "turning_direction": ["ccw"]}, "constants": CONST}
    refused(tmp_path, doc, "rotors.from_urdf", extra="not a regular expression")


# ----------------------------------------------------------------------------- constants, joints
def test_per_rotor_constants_become_arrays_only_where_they_differ(tmp_path):
    doc = quad_x()
    doc["rotors"][2]["motor_constant"] = 2e-5
    doc["rotors"][1]["time_constant_up"] = 0.02          # equal to the default: stays scalar
    cfg = load_vehicle(write(tmp_path, doc))
    rp = cfg.rotors
    assert np.array_equal(rp.motor_constant, [1e-5, 1e-5, 2e-5, 1e-5]) and rp.time_constant_up == 0.02
    assert np.array_equal(rp.per_rotor("max_rot_velocity"), [1000.0] * 4)
    A = A_of(cfg, cfg.load_model(urdf()))
    # the rotor at FLU (0.2, 0.2): thrust 2e-5, n_x = y f = 0.2 * 2e-5, n_y = -x f, n_z = +c_d (cw)
    assert np.allclose(A[:, 2], [0.2 * 2e-5, -0.2 * 2e-5, 0.02 * 2e-5, 0, 0, 2e-5], rtol=0, atol=1e-20)
    with pytest.raises(ValueError, match="^max_rot_velocity: expected a real number or 4"):
        RotorParams(turning_direction=("ccw", "cw", "ccw", "cw"), max_rot_velocity=[1.0, 2.0])


def test_joints_rigid_and_elastic_and_effort_limits(tmp_path):
    doc = quad_x(joints={"J1": {"type": "rigid"}, "J2": {"type": "elastic", "stiffness": 50.0, "motor_inertia": 0.01},
                         "J3": {"type": "elastic", "stiffness": 20.0, "motor_inertia": 0.02, "max_torque": 4.0}})
    cfg = load_vehicle(write(tmp_path, doc))
    assert cfg.elastic.joints == ("J2", "J3")
    assert np.array_equal(cfg.elastic.stiffness, [50.0, 20.0]) and np.array_equal(cfg.elastic.motor_inertia, [0.01, 0.02])
    assert np.array_equal(cfg.elastic.max_motor_torque, [np.inf, 4.0])
    assert cfg.joint_actuation["J1"] == {"type": "rigid", "max_torque": None}
    src = urdf(joints=[("J1", 3.0), ("J2", 7.0), ("J3", 9.0), ("J4", None)])
    model = cfg.load_model(src)
    assert model.joint_names == ("J1", "J2", "J3", "J4") and cfg.locked_joints(src) == ()
    cfg.check(model)
    # file first (J3: 4), else the URDF (J1: 3, J2: 7), else inf (J4 has no limit)
    assert np.array_equal(cfg.effort_limits(model), [3.0, 7.0, 4.0, np.inf])
    assert np.array_equal(cfg.effort_limits(gd.load_urdf(src), src), [3.0, 7.0, 4.0, np.inf])
    assert np.array_equal(cfg.effort_limits(gd.load_urdf(src)), [np.inf, np.inf, 4.0, np.inf])  # URDF unknown


def test_no_joints_gives_an_empty_elastic_set(tmp_path):
    cfg = load_vehicle(write(tmp_path, quad_x()))
    assert cfg.elastic.joints == () and cfg.elastic.stiffness.shape == (0,) and cfg.joint_actuation == {}
    assert isinstance(cfg, ActuationConfig) and isinstance(cfg.elastic, ElasticJointParams)


def test_locked_joints_key_and_gains_and_period(tmp_path):
    doc = quad_x(locked_joints=["J2"], gains={"com": {"bandwidth": 4.0, "damping": 0.9}}, control_period=0.002)
    cfg = load_vehicle(write(tmp_path, doc))
    src = urdf(joints=[("J1", None), ("J2", None)])
    assert cfg.locked_joints(src) == ("J2",) and cfg.load_model(src).joint_names == ("J1",)
    assert cfg.gains_spec == {"com": {"bandwidth": 4.0, "damping": 0.9}} and cfg.control_period == 0.002


# ----------------------------------------------------------------------------- refusals
def test_refusals_of_the_schema(tmp_path):
    d = quad_x()
    d["rotors"][2]["axis"] = [0, 0, 0.9]
    assert "(0, 0, 0.9) is not a unit vector (norm 0.9); give a unit vector" in refused(tmp_path, d, "rotors[2].axis")
    assert "did you mean 'constants'" in refused(tmp_path, {"rotors": quad_x()["rotors"], "constans": CONST},
                                                 "constans", extra="unknown key")
    d = quad_x()
    d["rotors"][1]["turning_directon"] = "cw"
    refused(tmp_path, d, "rotors[1].turning_directon", extra="did you mean 'turning_direction'")
    d = quad_x()
    d["rotors"][0]["turning_direction"] = "left"
    refused(tmp_path, d, "rotors[0].turning_direction", extra="give ccw or cw")
    d = quad_x()
    d["rotors"][0]["position"] = "abc"
    refused(tmp_path, d, "rotors[0].position", extra="3 numbers")
    d = quad_x()
    d["constants"]["motor_constant"] = "x"
    refused(tmp_path, d, "constants.motor_constant", extra="expected a finite number")
    d = quad_x()
    d["constants"]["motor_constant"] = -1e-5
    refused(tmp_path, d, "constants.motor_constant", extra="negative")
    d = quad_x()
    d["rotors"][3]["time_constant_down"] = -0.1
    refused(tmp_path, d, "rotors[3].time_constant_down", extra="negative")
    d = quad_x()
    del d["constants"]["max_rot_velocity"]
    refused(tmp_path, d, "constants.max_rot_velocity", extra="missing")
    d = quad_x(joints={"J1": {"type": "springy"}})
    refused(tmp_path, d, "joints.J1.type", extra="rigid or elastic")
    d = quad_x(joints={"J1": {"type": "rigid", "stiffness": 3.0}})
    refused(tmp_path, d, "joints.J1.stiffness", extra="unknown key")
    d = quad_x(joints={"J1": {"type": "elastic", "stiffness": 3.0}})
    refused(tmp_path, d, "joints.J1.motor_inertia", extra="missing")
    d = quad_x()
    d["rotors"][0]["axis"], d["rotors"][0]["rpy"] = [0, 0, 1], [0, 0, 0]
    refused(tmp_path, d, "rotors[0]", extra="exactly one of axis")


def test_refusals_of_the_model_check(tmp_path):
    refused(tmp_path, quad_x(joints={"J9": {"type": "rigid"}}), "joints.J9", model_urdf=urdf(joints=[("J1", None)]),
            extra="not a movable joint")
    old = (ROOT / "config" / "tilthex.yaml").read_text()
    p = write(tmp_path, old.replace('joints: ["J2"', 'joints: ["J22"'), "old.yaml")
    cfg = load_vehicle(p)
    with pytest.raises(ValueError, match=rf"^{p}: elastic_joints.joints: 'J22' is not a movable joint.*did you mean"):
        cfg.check(cfg.load_model(str(shipped_urdf("tilthex_manipulator.urdf.xacro"))))
    # rank < 4: three collinear rotors
    d = quad_x()
    del d["rotors"][3]
    refused(tmp_path, d, "rotors", extra="rank 3 < 4")
    # every rotor ccw: the same rank 3, said as what to change (not the allocation's "A: ...")
    d = quad_x()
    for r in d["rotors"]:
        r["turning_direction"] = "ccw"
    assert refused(tmp_path, d, "rotors").endswith(": rotors: every rotor turns ccw, so the rotors cannot make a yaw "
                                                   "moment (a collinear allocation of rank 3 < 4); give half of them "
                                                   "turning_direction cw (neighbours turning opposite ways)")
    # rank 5: five TiltHex rotors (no collinear set, six directions needed)
    rs = []
    for i in range(1, 6):
        th, al = (2 - i) * math.pi / 3, math.radians(20.0 if i % 2 else -20.0)
        rs.append({"position": [0.25 * math.cos(th), 0.25 * math.sin(th), 0.0],
                   "axis": [math.sin(th) * math.sin(al), -math.cos(th) * math.sin(al), math.cos(al)],
                   "turning_direction": "ccw" if i % 2 else "cw"})
    refused(tmp_path, {"rotors": rs, "constants": CONST}, "rotors", extra="rank 5 (neither 6 nor a collinear 4)")
    # thrust-to-weight: 4 c_f max^2 = 40 N against 1.5 kg * 9.81 * 1.2 = 17.7 N holds; 300 rad/s gives 3.6 N
    d = quad_x()
    d["constants"]["max_rot_velocity"] = 300.0
    refused(tmp_path, d, "constants.max_rot_velocity", extra="thrust-to-weight 0.2446 < 1.2")
    # the CoM 0.15 m ahead of the centre of a 0.2 m X: pitch balance 0.4 (F_front - F_rear) = 0.15 W with
    # 2 (F_front + F_rear) = W gives F_front = 0.4375 W = 6.44 N per front rotor: omega = sqrt(6.44 / 1e-5)
    # = 802 rad/s > 700 (thrust-to-weight 19.6 N / 14.7 N = 1.33 still holds)
    d = quad_x()
    d["constants"]["max_rot_velocity"] = 700.0
    msg = refused(tmp_path, d, "rotors[0]", model_urdf=urdf(mass=1.5, com_x=0.15), extra="hover needs omega")
    assert "> max_rot_velocity 700;" in msg
    p = write(tmp_path, quad_x(base_link="nope"))
    with pytest.raises(ValueError, match=rf"^{p}: base_link: 'nope' but the model's base is 'base'; "):
        load_vehicle(p).check(gd.load_urdf(urdf()))


def test_file_level_refusals_name_the_file_first(tmp_path):
    """The former ``config: cannot read ...`` / ``config: ... misses the rotor section`` lines."""
    with pytest.raises(ValueError, match=rf"^{tmp_path}/none\.yaml: cannot be read \(No such file or directory\); "
                                         "give the path of an existing vehicle file or a shipped name"):
        load_vehicle(tmp_path / "none.yaml")
    p = write(tmp_path, "constants: {}\n")
    with pytest.raises(ValueError, match=rf"^{p}: rotors: missing; add rotors: "):
        load_vehicle(p)
    with pytest.raises(ValueError, match=r": rotors: expected a list of rotors"):
        load_vehicle(write(tmp_path, {"rotors": 3}))


def test_a_rotor_list_flies_in_the_simulator_without_rotor_links(tmp_path):
    """The call sites use the file's frames: ActuatedSim and Allocation on a URDF with no rotor link."""
    from geodyn_ros.control.rotors import Allocation
    from geodyn_ros.sim.actuated import ActuatedSim
    cfg = load_vehicle(write(tmp_path, quad_x(joints={"J1": {"type": "rigid"}})))
    src = urdf(joints=[("J1", 2.0)])
    sim = ActuatedSim(src, cfg)
    assert sim.rotor_names == ("rotor_1", "rotor_2", "rotor_3", "rotor_4") and sim.model.joint_names == ("J1",)
    assert np.array_equal(sim.rotor_frames, cfg.rotor_frames(sim.model)[1])
    al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
    assert al.collinear and np.allclose(al.A, A_of(cfg, sim.model), rtol=0, atol=1e-20)


def test_a_bare_name_is_a_shipped_vehicle_file():
    p = ROOT / "config" / "vehicles" / "iris.yaml"
    assert load_vehicle("iris").source_path == p and load_vehicle(p).rotor_regex == load_vehicle("iris").rotor_regex
