"""A user's vehicle in Gazebo without Gazebo: ``launch/gazebo_vehicle.launch.py`` and its child
``python -m geodyn_ros.ros.loops.gazebo_vehicle`` (the files it writes, checked against the vehicle
layer and the xacro independently of the module; the launch file against the stub ``launch``).
The same files in a real gz-sim: test/gazebo/test_gz_fly.py."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from geodyn_ros.control.rotors import Allocation
from geodyn_ros.lie import quat_to_matrix
from geodyn_ros.vehicle import load_vehicle
from geodyn_ros.vehicle.shipped import shipped_vehicle_files
from geodyn_ros.vehicle.gz_bridge import arm_joints, bridge_entries

REPO = Path(__file__).resolve().parents[3]
MOTOR = "gz-sim-multicopter-motor-model-system"
# shipped vehicle -> its allocation rank
VEHICLES = {"borinot_flying_arm_2": 4, "hextilt_flying_arm_5": 6, "iris": 4, "tilthex": 6, "hexarotor": 4}


def _expanded(urdf: Path) -> ET.Element:
    """The user's URDF (a xacro expanded: the shipped TiltHex and hexarotor files are xacros)."""
    import xacro
    return ET.fromstring(xacro.process_file(str(urdf)).toxml())


def _child(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "geodyn_ros.ros.loops.gazebo_vehicle", *map(str, args)],
                          capture_output=True, text=True, cwd=tmp_path)


@pytest.fixture(scope="module", params=sorted(VEHICLES))
def written(request, tmp_path_factory):
    """(name, urdf, vehicle, the child's JSON line, stderr) for a shipped vehicle given by name."""
    name = request.param
    out = tmp_path_factory.mktemp(name)
    res = _child(out, "", name, "figure8", "", out / "files")
    assert res.returncode == 0, res.stderr
    urdf, vehicle = shipped_vehicle_files(name)
    return name, Path(urdf), Path(vehicle), json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def test_model_drives_the_vehicles_rotors_in_the_controllers_order(written):
    """The motor plugins' actuator_number k drives the rotor the controller calls k: the rotor
    frames the nodes take from the Gazebo model and its vehicle file give the allocation of the
    user's own files (1e-12: the same poses through other code paths)."""
    name, urdf, vehicle, res, _ = written
    assert res["rank"] == VEHICLES[name]
    root = ET.parse(res["model"]).getroot()
    motors = [p for p in root.iter("plugin") if p.get("filename") == MOTOR]
    cfg = load_vehicle(vehicle)
    assert [int(p.findtext("actuator_number")) for p in motors] == list(range(cfg.rotors.n_rotors))
    own = Allocation.from_frames(cfg.rotor_frames(cfg.load_model(str(urdf)))[1], cfg.rotors)
    gz_cfg = load_vehicle(res["vehicle"])
    gz_model = gz_cfg.load_model(res["model"])
    gz = Allocation.from_frames(gz_cfg.rotor_frames(gz_model)[1], gz_cfg.rotors)
    np.testing.assert_allclose(gz.A, own.A, rtol=0, atol=1e-12 * np.abs(own.A).max())
    # every node locks exactly the joints the motor plugins spin, and nothing of the arm
    locked = set(gz_cfg.locked_joints(res["model"]))
    assert {p.findtext("jointName") for p in motors} <= locked
    assert gz_model.joint_names == cfg.load_model(str(urdf)).joint_names


def test_nodes_model_is_the_spawned_model(written):
    """The nodes' model (the vehicle file's load_model of the Gazebo model) has the mass gz spawns:
    the URDF's links plus the rotor links the xacro adds (test/gazebo checks gz's lumped model equals
    the package's model of the same file, rotor joints locked)."""
    name, urdf, vehicle, res, _ = written
    root = ET.parse(res["model"]).getroot()
    masses = sum(float(m.get("value")) for m in root.iter("mass"))
    gz_cfg = load_vehicle(res["vehicle"])
    model = gz_cfg.load_model(res["model"])
    assert model.total_mass == pytest.approx(masses, rel=1e-12)
    own = sum(float(m.get("value")) for m in _expanded(urdf).iter("mass"))
    cfg = load_vehicle(vehicle)
    added = cfg.rotors.n_rotors * cfg.rotor_mass if cfg.rotor_geometry == "list" else 0.0
    assert masses == pytest.approx(own + added, rel=1e-12)


def test_bridge_parameters_and_spawn(written):
    """The bridge file bridges this vehicle's arm joints; the parameters are fly.launch.py's nodes
    without the MuJoCo simulator, with the Gazebo loop's settings; the spawn pose is the reference's
    base pose at t = 0 (its rotation rebuilt from R, P, Y about fixed x, y, z)."""
    from geodyn_ros.ros.loops.fly_closed_loop import vehicle_reference
    name, urdf, vehicle, res, _ = written
    cfg = load_vehicle(vehicle)
    assert yaml.safe_load(Path(res["bridge"]).read_text()) == bridge_entries(arm_joints(cfg))
    params = {k: v["ros__parameters"] for k, v in yaml.safe_load(Path(res["parameters"]).read_text()).items()}
    ctrl = {4: "geodyn_flat_controller", 6: "geodyn_actuated_controller"}[res["rank"]]
    assert set(params) == {"geodyn_reference", "geodyn_node", ctrl} and res["controller"] == ctrl
    assert all(p["use_sim_time"] is True and "lockstep" not in p for p in params.values())
    assert params["geodyn_reference"]["start_topic"] == "gz/start_hold"
    c = params[ctrl]
    assert (c["elastic_joints"], c["per_joint_effort_topics"], c["sync_stamps"], c["input_policy"]) == \
        (False, True, False, "exact")
    assert c["odom_startup_discard"] == 0.05
    assert c.get("level", "ff1") == "ff1" and c.get("feedforward_order", 1) == 1
    ref, rank, _ = vehicle_reference(res["model"], res["vehicle"], "figure8")
    r0 = ref(0.0, 0)
    C = np.asarray(r0.base_pose) if rank == 6 else None
    s = res["spawn"]
    if C is None:          # rank 4: the flat start state's base pose
        from geodyn_ros.ros.loops.fly_closed_loop import fly_setup
        x, y, z, qx, qy, qz, qw = fly_setup(res["model"], res["vehicle"])["start"]["initial_base_pose"]
        C = np.eye(4)
        C[:3, :3], C[:3, 3] = quat_to_matrix([qx, qy, qz, qw], "xyzw"), (x, y, z)

    def rot(axis, a):
        c_, s_ = np.cos(a), np.sin(a)
        i, j = [(1, 2), (2, 0), (0, 1)][axis]
        m = np.eye(3)
        m[i, i], m[i, j], m[j, i], m[j, j] = c_, -s_, s_, c_
        return m
    np.testing.assert_allclose([s["x"], s["y"], s["z"]], C[:3, 3], atol=1e-12)
    np.testing.assert_allclose(rot(2, s["Y"]) @ rot(1, s["P"]) @ rot(0, s["R"]), C[:3, :3], atol=1e-12)


def test_rotor_joints_pinned_by_zero_limits_are_freed_in_the_gazebo_model_only(written):
    """example-robot-data's iris gives its rotor joints velocity and effort limits of 0, which gz-sim
    enforces (the rotors never turn: test/gazebo found it). The Gazebo model drops those limits and
    says so, one line per joint; the user's file is untouched. Other vehicles: no correction."""
    name, urdf, vehicle, res, err = written
    root = ET.parse(res["model"]).getroot()
    motors = {p.findtext("jointName") for p in root.iter("plugin") if p.get("filename") == MOTOR}
    for j in root.iter("joint"):
        if j.get("name") in motors:
            lim = j.find("limit")
            assert lim is None or all(float(lim.get(k, "1")) != 0.0 for k in ("velocity", "effort")), j.get("name")
    pinned = [j.get("name") for j in _expanded(urdf).iter("joint") if j.get("name") in motors
              and j.find("limit") is not None and float(j.find("limit").get("velocity", "1")) == 0.0]
    freed = [c for c in res["corrections"] if "would stop the rotor in gz-sim" in c]
    assert len(freed) == len(pinned) == (4 if name == "iris" else 0)
    lines = [ln for ln in err.splitlines() if ln]
    assert lines == ["gazebo_vehicle.launch.py: " + c for c in res["corrections"]]


def test_series_elastic_joints_fly_rigid_in_gazebo(written):
    """gz-sim has no series-elastic joint: the nodes' vehicle file makes the file's elastic joints
    rigid (one line says so), so the gains are designed for the rigid link gz simulates (the elastic
    joints' gains, designed on the motor inertia, left hextilt's arm at 6-25 deg RMS in gz-sim 8.14).
    The shipped generator files (``elastic_joints:``, gains in the file, flown by their own Gazebo
    launch files) are left as they are."""
    name, urdf, vehicle, res, _ = written
    cfg, gz_cfg = load_vehicle(vehicle), load_vehicle(res["vehicle"])
    notes = [c for c in res["corrections"] if "series-elastic" in c]
    if cfg.elastic.joints and "joints" in yaml.safe_load(Path(vehicle).read_text()):   # a schema-1 joints: section
        assert gz_cfg.elastic.joints == ()
        assert len(notes) == 1 and all(j in notes[0] for j in cfg.elastic.joints)
        assert set(gz_cfg.joint_actuation) == set(cfg.joint_actuation)
        assert all(d["type"] == "rigid" for d in gz_cfg.joint_actuation.values())
    else:     # no elastic joint, or the shipped generator files (elastic_joints: section, their own gains)
        assert notes == [] and gz_cfg.elastic.joints == cfg.elastic.joints


@pytest.mark.parametrize("args, says", [
    (("", "no_such_vehicle", "figure8", ""), "no_such_vehicle: cannot be read"),
    (("", "hextilt_flying_arm_5", "figure8", "ff2"), "order 2 needs series-elastic joints"),
    (("", "borinot_flying_arm_2", "figure8", "pd"), "level: 'pd' is not a Gazebo level of a rank 4 vehicle"),
    (("", "iris", "loop.yaml", ""), "loop.yaml"),
    (("/nonexistent.urdf", "iris", "figure8", ""), "urdf: /nonexistent.urdf: no such file"),
])
def test_refusals_are_one_line(tmp_path, args, says):
    res = _child(tmp_path, *args, tmp_path / "out")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and res.stdout == "", res.stderr
    assert lines[0].startswith("gazebo_vehicle.launch.py: refused: ") and says in lines[0], lines[0]


def test_weak_vehicle_and_bad_urdf_are_refused_in_one_line(tmp_path):
    """A vehicle that cannot lift itself (the fly loader's check) and a URDF that xacro cannot read."""
    urdf, vehicle = shipped_vehicle_files("borinot_flying_arm_2")
    weak = tmp_path / "weak.yaml"
    weak.write_text(Path(vehicle).read_text().replace("motor_constant: 4.511e-06", "motor_constant: 1.0e-06"))
    res = _child(tmp_path, urdf, weak, "figure8", "", tmp_path / "o1")
    assert res.returncode == 2 and "thrust-to-weight" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'>")
    res = _child(tmp_path, bad, vehicle, "figure8", "", tmp_path / "o2")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("gazebo_vehicle.launch.py: refused: "), \
        res.stderr
    res = _child(tmp_path, "a", "b")
    assert res.returncode == 2 and res.stderr.startswith("usage: python -m geodyn_ros.ros.loops.gazebo_vehicle")


def _launch_actions(stub_launch, **configs):
    path = REPO / "launch" / "gazebo_vehicle.launch.py"
    spec = importlib.util.spec_from_file_location("_gazebo_vehicle_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    desc = module.generate_launch_description()
    opaque = [a for a in desc.arg(0, "initial_entities") if type(a).__name__ == "OpaqueFunction"]
    assert len(opaque) == 1
    ctx = types.SimpleNamespace(launch_configurations=dict(configs))
    return desc, opaque[0].kwargs["function"](ctx)


def test_launch_file_starts_gazebo_and_the_vehicles_nodes(stub_launch):
    """gazebo_vehicle.launch.py vehicle:=hextilt_flying_arm_5 (rank 6): the Gazebo side of the other
    Gazebo launch files with the generated bridge file and the model spawned at the reference's start
    pose; the three nodes of the rank with the child's parameter file and the Gazebo model."""
    desc, actions = _launch_actions(stub_launch, vehicle="hextilt_flying_arm_5", reference="figure8", level="ff1")
    declared = {d.arg(0, "name") for d in desc.arg(0, "initial_entities") if type(d).__name__ == "DeclareLaunchArgument"}
    assert {"urdf", "vehicle", "reference", "level", "world", "headless", "robot_state_publisher",
            "message_types"} <= declared
    nodes = [a for a in actions if type(a).__name__ == "Node"]
    geodyn = [n.kwargs["executable"] for n in nodes if n.kwargs["package"] == "geodyn_ros"]
    assert geodyn == ["geodyn_reference", "geodyn_node", "geodyn_actuated_controller"]
    bridge = next(n for n in nodes if n.kwargs["executable"] == "parameter_bridge")
    bfile = bridge.kwargs["parameters"][0]["config_file"]
    assert yaml.safe_load(Path(bfile).read_text()) == bridge_entries(
        arm_joints(load_vehicle(shipped_vehicle_files("hextilt_flying_arm_5")[1])))
    handler = next(a for a in actions if type(a).__name__ == "RegisterEventHandler")
    robot = handler.arg(0, "event_handler").kwargs["on_exit"][0]
    rp = robot.kwargs["parameters"][0]
    assert rp["name"] == "aerial_manipulator" and rp["string"].startswith("<?xml")
    # plain floats: launch_ros refuses ParameterValue(<str>, value_type=float) ("is not an instance of float",
    # seen in the first real run)
    assert all(isinstance(rp[k], float) for k in ("x", "y", "z", "R", "P", "Y"))
    for node in nodes[-3:]:
        pfile, inline = node.kwargs["parameters"]
        assert Path(pfile).is_file() and inline["robot_description"] == rp["string"]


def test_launch_file_refuses_in_one_line(stub_launch):
    with pytest.raises(ValueError, match=r"^launch argument 'vehicle': required"):
        _launch_actions(stub_launch, vehicle="")
    with pytest.raises(ValueError) as exc:
        _launch_actions(stub_launch, vehicle="hextilt_flying_arm_5", level="ff2")
    assert str(exc.value).startswith("gazebo_vehicle.launch.py: refused: level: 'ff2'") and "\n" not in str(exc.value)


def test_urdf_joint_friction_and_damping_are_reported(written):
    """gz-sim simulates a URDF joint's <dynamics> damping and friction; the package's model does
    not. One line names every such arm joint with its values (read here from the user's URDF)."""
    name, urdf, vehicle, res, _ = written
    lossy = [j.get("name") for j in _expanded(urdf).iter("joint") if j.get("type") != "fixed"
             and j.find("dynamics") is not None and any(float(j.find("dynamics").get(k, "0")) for k in
                                                        ("damping", "friction"))]
    notes = [c for c in res["corrections"] if "<dynamics>" in c]
    assert len(notes) == (1 if lossy else 0)
    assert all(f"{j} (damping" in notes[0] for j in lossy)
    assert bool(lossy) == (name == "hextilt_flying_arm_5")
