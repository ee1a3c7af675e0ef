"""Every file error is one line ``<file>: <key>: <problem>; <fix>`` (issue 40, newcomer item 5), the
same line from every entry point that reads the file.

A table of bad files (written here, each with the exact line it must give) goes through:

* the Python loaders: ``load_vehicle`` (+ ``ActuationConfig.check`` and ``design_gains`` for the
  refusals that need the model), ``load_mission``, ``load_lqr_weights``;
* ``geodyn_vehicle`` and ``geodyn_fly`` (their ``main``; and once each as the installed console
  script): exit code 2, exactly one line on stderr, no traceback, the loader's line after the
  command's prefix.

``python -m geodyn_ros.ros.nodes.mission start-parameters`` and the nodes' file parameters are
test/ros/nodes/test_ros_mission.py's (the ROS layer).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from geodyn_ros.vehicle.shipped import SHIPPED_URDFS

REPO = Path(__file__).resolve().parents[2]
# a 1.5 kg box: loads in milliseconds; the X quad below hovers at 658 rad/s
URDF = ('<robot name="q"><link name="base"><inertial><mass value="1.5"/>'
        '<inertia ixx="0.03" iyy="0.03" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>\n')
QUAD = """rotors:
  - {position: [0.15, 0.15, 0], axis: [0, 0, 1], turning_direction: ccw}
  - {position: [-0.15, -0.15, 0], axis: [0, 0, 1], turning_direction: ccw}
  - {position: [0.15, -0.15, 0], axis: [0, 0, 1], turning_direction: DIR}
  - {position: [-0.15, 0.15, 0], axis: [0, 0, 1], turning_direction: DIR}
constants: {motor_constant: 8.5e-6, moment_constant: 0.016, time_constant_up: 0.0125,
            time_constant_down: 0.025, max_rot_velocity: MAX}
"""
SHIPPED = ", ".join(SHIPPED_URDFS)


def quad(direction="cw", max_rot_velocity="1100.0", extra=""):
    return QUAD.replace("DIR", direction).replace("MAX", max_rot_velocity) + extra


def _old_hexarotor(old, new):
    text = (REPO / "config" / "hexarotor.yaml").read_text()
    assert old in text
    return text.replace(old, new)


# (id, the file's text (None: no such file; "DIR": a directory), the exact line with {f} the path)
VEHICLES = [
    ("missing file", None,
     "{f}: cannot be read (No such file or directory); give the path of an existing vehicle file or a shipped "
     f"name ({SHIPPED})"),
    ("a directory", "DIR",
     f"{{f}}: cannot be read (Is a directory); give the path of an existing vehicle file or a shipped name ({SHIPPED})"),
    ("YAML syntax: an unclosed {", quad().replace("turning_direction: ccw}\n  - {position: [-0.15",
                                                  "turning_direction: ccw\n  - {position: [-0.15"),
     "{f}: line 3, column 5, in rotors[0]: expected ',' or '}', but got '{' (while parsing a flow mapping at line 2); "
     "close the mapping with '}' or separate its entries with ', '"),
    ("YAML syntax: indentation", quad().replace("constants: {motor_constant: 8.5e-6,", "constants:\n  motor_constant: "
                                                "8.5e-6\n   moment_constant: 0.016\nfoo: {"),
     "{f}: line 8, column 19, in constants: mapping values are not allowed here; a ':' inside a value: quote the "
     "value, or fix the indentation"),
    ("YAML syntax: a tab", quad().replace("  - {position: [0.15, 0.15", "\t- {position: [0.15, 0.15"),
     "{f}: line 2, column 1, in rotors: found character '\\t' that cannot start any token; indent with spaces, "
     "not tabs"),
    ("not a mapping", "- 1\n- 2\n",
     "{f}: expected a mapping of keys (rotors:, constants:, ...), got [1, 2]; write the vehicle file as key: value "
     "lines (doc/reference/vehicle_file.md)"),
    ("rotors misspelt", "rotor: []\n", "{f}: rotor: unknown key; did you mean 'rotors'?"),
    ("gains key typo", quad(extra="gains:\n  com: {bandwith: 6}\n"),
     "{f}: gains.com.bandwith: unknown key; did you mean 'bandwidth'?"),
    ("gains loop typo", quad(extra="gains:\n  atitude: {bandwidth: 6}\n"),
     "{f}: gains.atitude: unknown key; did you mean 'attitude'?"),
    # 4 x 8.5e-6 x 720.66^2 = 17.66 N against 1.5 kg x 9.81 = 14.715 N: 1.1999951 (printed "1.2" before)
    ("thrust-to-weight just below 1.2", quad(max_rot_velocity="720.66"),
     "{f}: constants.max_rot_velocity: thrust-to-weight 1.199995 < 1.2 (full thrust 17.66 N along base z, weight "
     "14.71 N); raise max_rot_velocity or motor_constant, or lighten the vehicle"),
    ("all ccw", quad(direction="ccw"),
     "{f}: rotors: every rotor turns ccw, so the rotors cannot make a yaw moment (a collinear allocation of rank 3 < "
     "4); give half of them turning_direction cw (neighbours turning opposite ways)"),
    ("old file: a missing constant", _old_hexarotor("  motor_constant: 1.269e-05 ", "  #"),
     "{f}: multirotor.motor_constant: missing; give it (config/hexarotor.yaml has every key)"),
    ("old file: a bad stiffness", _old_hexarotor("stiffness: [50.0, 50.0,", "stiffness: [50.0, -50.0,"),
     "{f}: elastic_joints.stiffness: expected 6 finite positive values, got [50.0, -50.0, 50.0, 50.0, 50.0, 50.0]; "
     "fix the value (config/hexarotor.yaml shows each key)"),
    ("old file: alpha of the wrong length", _old_hexarotor("alpha_deg: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
                                                           "alpha_deg: [0.0, 0.0]"),
     "{f}: multirotor.alpha_deg: expected 6 angles [deg] (one per rotor), got [0.0, 0.0]; give one per "
     "turning_direction entry"),
]
IDS = [c[0] for c in VEHICLES]


def _write(tmp_path, text, name="vehicle.yaml"):
    p = tmp_path / name
    if text == "DIR":
        p.mkdir()
    elif text is not None:
        p.write_text(text)
    return p


@pytest.fixture
def urdf(tmp_path):
    p = tmp_path / "quad.urdf"
    p.write_text(URDF)
    return p


def _loader_line(path, urdf) -> str:
    """The vehicle through the Python API: load, check with the model, design the gains."""
    import geodyn_ros as gd
    from geodyn_ros.control.gain_design import design_gains
    from geodyn_ros.control.rotors import Allocation
    from geodyn_ros.vehicle import load_vehicle
    with pytest.raises(ValueError) as info:
        cfg = load_vehicle(path)
        model = gd.load_urdf(str(urdf)) if cfg.schema else cfg.load_model(
            str(REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"))
        cfg.check(model)
        design_gains(model, Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors), cfg)
    return str(info.value)


def _cli(main, argv, capsys) -> str:
    """``main(argv)`` must exit 2 with one line on stderr and nothing else there; the line."""
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, err
    return err[:-1]


@pytest.mark.parametrize("case, text, line", VEHICLES, ids=IDS)
def test_vehicle_file_errors_are_one_line_from_every_entry_point(case, text, line, tmp_path, urdf, capsys):
    from geodyn_ros.loops.fly import main as fly
    from geodyn_ros.loops.vehicle_report import main as vehicle
    p = _write(tmp_path, text)
    want = line.replace("{f}", str(p))
    assert _loader_line(p, urdf) == want
    # the old files need their own URDF (rotor links); these cases are refused before it is read
    u = str(urdf) if "old file" not in case else str(REPO / "urdf" / "hexarotor_manipulator.urdf.xacro")
    assert _cli(vehicle, ["--urdf", u, "--vehicle", str(p)], capsys) == f"geodyn_vehicle: error: {want}"
    assert _cli(fly, ["--urdf", u, "--vehicle", str(p), "--duration", "1"], capsys) == f"geodyn_fly: refused: {want}"


def test_without_urdf_a_missing_vehicle_file_is_still_the_files_line(tmp_path, capsys):
    """geodyn_vehicle asked for the URDF first (``urdf: required ...``); the file's problem comes first."""
    from geodyn_ros.loops.vehicle_report import main as vehicle
    p = tmp_path / "nope.yaml"
    want = VEHICLES[0][2].replace("{f}", str(p))
    assert _cli(vehicle, ["--vehicle", str(p)], capsys) == f"geodyn_vehicle: error: {want}"


# ---------------------------------------------------------------------- mission files
MISSION = """joint_names: [J2, J3]
waypoints:
  - {com: [0, 0, 1], q: [0, 0]}
  - {com: [1, 0, 1], q: [0.5, 0]}
timing: {max_velocity: 1, max_acceleration: 1}
"""
MISSIONS = [
    ("missing file", None, "{f}: cannot be read (No such file or directory); give the path of an existing mission file"),
    ("YAML syntax", MISSION.replace("q: [0.5, 0]}", "q: [0.5, 0]"),
     "{f}: line 5, column 1, in waypoints[1]: expected ',' or '}', but got '<scalar>' (while parsing a flow mapping at "
     "line 4); close the mapping with '}' or separate its entries with ', '"),
    ("q of the wrong length", MISSION.replace("q: [0.5, 0]", "q: [0.5]"),
     "{f}: waypoints[1].q: expected 2 numbers, one per joint of joint_names (J2, J3), got shape (1,); give 2 joint "
     "positions [rad] in the order of joint_names"),
    ("q of one joint", MISSION.replace("[J2, J3]", "[J2]").replace("q: [0, 0]", "q: [0, 0.1]"),
     "{f}: waypoints[0].q: expected 1 number, one per joint of joint_names (J2), got shape (2,); give 1 joint "
     "position [rad] in the order of joint_names"),
]


@pytest.mark.parametrize("case, text, line", MISSIONS, ids=[c[0] for c in MISSIONS])
def test_mission_file_errors_are_one_line_from_every_entry_point(case, text, line, tmp_path, capsys):
    """load_mission, and geodyn_fly --reference FILE (iris: the refusal comes before any flight)."""
    from geodyn_ros.loops.fly import main as fly
    from geodyn_ros.planning.mission import load_mission
    p = _write(tmp_path, text, "mission.yaml")
    want = line.replace("{f}", str(p))
    with pytest.raises(ValueError) as info:
        load_mission(p)
    assert str(info.value) == want
    if not case.startswith("q of"):       # iris has no joints: refused for that first
        assert _cli(fly, ["--vehicle", "iris", "--reference", str(p)], capsys) == f"geodyn_fly: refused: {want}"


# ---------------------------------------------------------------------- LQR weights
LQRS = [
    ("missing file", None,
     "{f}: cannot be read (No such file or directory); give the path of an existing LQR weights file"),
    ("YAML syntax", "lqr:\n  state:\n    joint_rad: [0.1\n", "{f}: line 4, column 1, in lqr.state.joint_rad: expected "
     "',' or ']', but got '<stream end>' (while parsing a flow sequence at line 3); close the list with ']' or "
     "separate its items with ', '"),
    ("a misspelt key", "lqr:\n  state:\n    joint_rd: 0.1\n",
     "{f}: lqr.state.joint_rd: unknown key; did you mean 'joint_rad'?"),
    ("a misspelt section", "lqr:\n  stat:\n    joint_rad: 0.1\n", "{f}: lqr.stat: unknown key; did you mean 'state'?"),
    ("lqr: missing", "lqrr:\n  state: {}\n", "{f}: lqrr: unknown key; did you mean 'lqr'?"),
    ("a bad value", "lqr:\n  input:\n    motor_torque_nm: -1\n",
     "{f}: lqr.input.motor_torque_nm: expected a finite positive value, got -1; give a positive deviation in the "
     "key's unit (Bryson's rule; config/lqr.yaml)"),
    ("not a mapping", "- 1\n",
     "{f}: expected a mapping, got [1]; give a mapping lqr: {state: ..., input: ...} (config/lqr.yaml)"),
]


@pytest.mark.parametrize("case, text, line", LQRS, ids=[c[0] for c in LQRS])
def test_lqr_weights_file_errors_are_one_line(case, text, line, tmp_path):
    from geodyn_ros.control.lqr import load_lqr_weights
    p = _write(tmp_path, text, "lqr.yaml")
    with pytest.raises(ValueError) as info:
        load_lqr_weights(p)
    assert str(info.value) == line.replace("{f}", str(p))


# ---------------------------------------------------------------------- the console scripts
@pytest.mark.parametrize("command, prefix", [("geodyn_vehicle", "geodyn_vehicle: error: "),
                                             ("geodyn_fly", "geodyn_fly: refused: ")])
def test_the_console_scripts_exit_2_with_the_loaders_line(command, prefix, tmp_path, urdf):
    """The installed commands (not only their ``main``): a YAML syntax error, one line on stderr."""
    exe = Path(sys.executable).parent / command
    assert exe.is_file(), f"{exe} is not installed: reinstall the package (make venv)"
    p = _write(tmp_path, quad().replace("axis: [0, 0, 1], turning_direction: ccw}", "axis: [0, 0, 1}", 1))
    out = subprocess.run([str(exe), "--urdf", str(urdf), "--vehicle", str(p)], capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    want = (f"{prefix}{p}: line 2, column 47, in rotors[0].axis: expected ',' or ']', but got '}}' (while parsing a "
            "flow sequence at line 2); close the list with ']' or separate its items with ', '")
    # (a checkout whose kernels an edit made stale says once that it compiles them: not the refusal)
    err = "".join(ln for ln in out.stderr.splitlines(keepends=True)
                  if not (ln.startswith("[INFO] ") and "compiling the dynamics kernels" in ln))
    assert out.returncode == 2 and err == want + "\n", out.stderr[-3000:]
