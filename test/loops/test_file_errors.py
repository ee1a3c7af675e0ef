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

import os
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
     "{f}: elastic_joints.stiffness[1]: -50.0 is negative; give a positive value"),
    ("old file: alpha of the wrong length", _old_hexarotor("alpha_deg: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
                                                           "alpha_deg: [0.0, 0.0]"),
     "{f}: multirotor.alpha_deg: expected 6 angles [deg] (one per rotor), got [0.0, 0.0]; give one per "
     "turning_direction entry"),
]

# ---------------------------------------------------------------------- bounded input (issue 41)
def _laughs(key="lol", depth=9, leaf='"lol"'):
    """A "billion laughs" document of 1 kB: ``depth`` levels of 9 aliases of the level below
    (9^9 = 387 million values expanded), the last level under ``key``."""
    lines = [f"l0: &l0 [{', '.join([leaf] * 9)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, depth)]
    return "\n".join(lines) + f"\n{key}: *l{depth - 1}\n"


def _const(key, value):
    return quad().replace(f"{key}: {QUAD_CONSTANTS[key]}", f"{key}: {value}")


QUAD_CONSTANTS = {"motor_constant": "8.5e-6", "moment_constant": "0.016", "time_constant_up": "0.0125",
                  "time_constant_down": "0.025", "max_rot_velocity": "1100.0"}
_BIG = 8 * 1024 * 1024 + 1          # one byte over validate.MAX_FILE_BYTES
BOUNDS = [
    ("a FIFO", "FIFO", "{f}: cannot be read (a FIFO, not a regular file); give the path of an existing vehicle file "
     f"or a shipped name ({SHIPPED})"),
    ("a character device", "/dev/null", "{f}: cannot be read (a character device, not a regular file); give the path "
     f"of an existing vehicle file or a shipped name ({SHIPPED})"),
    ("bad UTF-8", quad().encode() + b"# \xff\xfe\n", "{f}: cannot be read (not UTF-8 text: byte 0xff at offset 455); give "
     "a vehicle file (YAML text)"),
    ("over 8 MiB", "BIG", f"{{f}}: cannot be read ({_BIG} bytes, over the limit of 8388608 bytes); give a vehicle file "
     "of at most 8 MiB (a mission of 10,000 waypoints takes about 3 MB)"),
    ("billion laughs", quad() + _laughs("x"), '{f}: line 13, column 30, in l5: the aliases expand to more than 400000 nodes; write the values out, '
     'or use fewer aliases (a file expands to at most 400000 values)'),
    ("nested 40 deep", quad() + "x: " + "[" * 40 + "]" * 40 + "\n", '{f}: line 8, column 35, in '
     'x[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested '
     'deeper than 32 levels; flatten it: no file of the package nests deeper than 4 levels'),
    ("a recursive alias", quad() + "x: &x [1, *x]\n", '{f}: line 8, column 11, in x: found a recursive alias *x (inside the node it names); refer to an '
     'anchor outside the node that holds the alias'),
    ("an integer of 5000 digits", _const("max_rot_velocity", "9" * 5000), '{f}: line 7, column 58, in constants.max_rot_velocity: cannot build the value (Exceeds the limit '
     '(4300 digits) for integer string conversion: value has 5000 di... (140 characters)); write a number '
     'a float can hold (e.g. 1.0e+30)'),
    ("joint type a list", quad(extra="joints: {J2: {type: [elastic]}}\n"), "{f}: joints.J2.type: expected rigid or elastic, got ['elastic']; give type: rigid or type: elastic"),
    ("motor_constant 1e300", _const("motor_constant", "1.0e+300"), '{f}: constants.motor_constant: 1e+300 N s^2/rad^2 is outside the plausible range [4.05285e-11, '
     '0.16414] N s^2/rad^2 (k_f = C_T rho D^4 / (4 pi^2) for rotors of 2 cm to 2 m, C_T 0.02 to 0.3, air '
     'of 0.5 to 1.35 kg/m^3); give k_f in N s^2/rad^2 (thrust = k_f omega^2, omega in rad/s)'),
    ("motor_constant a string", _const("motor_constant", "'8.5e-6'"), "{f}: constants.motor_constant: expected a finite number, got '8.5e-6'; give a number"),
    ("time_constant_up 1e-300", _const("time_constant_up", "1.0e-300"), "{f}: constants.time_constant_up: 1e-300 s is outside the plausible range [0.0001, 5] s (a motor's "
     'speed lag: about 1 ms for 2 cm rotors, under 1 s for 2 m ones); give a value in that range (SI '
     'units)'),
    ("max_rot_velocity true", _const("max_rot_velocity", "true"), '{f}: constants.max_rot_velocity: expected a finite number, got True; give a number'),
    ("max_rot_velocity 1e7", _const("max_rot_velocity", "1.0e+7"), '{f}: constants.max_rot_velocity: 1e+07 rad/s is outside the plausible range [10, 34000] rad/s (a '
     'rotor that lifts turns faster than 100 rpm; its tip below the speed of sound for a 2 cm rotor: 2 x '
     '340 m/s / 0.02 m); give a value in that range (SI units)'),
    ("control_period 1e300", quad(extra="control_period: 1.0e+300\n"), '{f}: control_period: 1e+300 s is outside the plausible range [0.0001, 0.1] s (flight controllers '
     'run their rate loop at 10 Hz to 10 kHz); give a value in that range (SI units)'),
    ("a position of 1e300", quad().replace("[0.15, 0.15, 0]", "[1.0e+300, 0.15, 0]"), '{f}: rotors[0].position[0]: 1e+300 m is outside the plausible range [-20, 20] m (the largest '
     'multirotors (passenger drones, 11 m across) have their rotors within 10 m of the base); give the '
     'position in m in the base link'),
    ("an elastic joint's stiffness 1e300", quad(extra="joints: {J2: {type: elastic, stiffness: 1.0e+300, "
                                                 "motor_inertia: 0.001}}\n"), '{f}: joints.J2.stiffness: 1e+300 N m/rad is outside the plausible range [0.01, 1e+06] N m/rad '
     '(series-elastic actuators range from about 1 N m/rad (soft springs) to 1e4 (stiff ones); a harmonic '
     "drive's own stiffness is 1e4 to 1e5); give a value in that range (SI units)"),
    ("gains: unknown loop", quad(extra="gains: {foo: 1}\n"), '{f}: gains.foo: unknown key; the keys are com, attitude, yaw, joints, kp_position, kd_position, '
     'kp_rotation, kd_rotation, kp_joint, kd_joint'),
    ("gains: a list with a string", quad(extra="gains: {kp_position: [1, x]}\n"), "{f}: gains.kp_position: expected a finite non-negative scalar, got [1, 'x']; give gains >= 0"),
    ("gains: a mapping", quad(extra="gains: {kp_position: {a: 1}}\n"), "{f}: gains.kp_position: expected a finite non-negative scalar, got {'a': 1}; give gains >= 0"),
    ("gains: a string bandwidth", quad(extra="gains: {com: {bandwidth: '5'}}\n"), "{f}: gains.com.bandwidth: expected a finite positive number, got '5'; give the natural frequency "
     '[rad/s]'),
    ("gains: a boolean damping", quad(extra="gains: {com: {damping: true}}\n"), '{f}: gains.com.damping: expected a finite positive number, got True; give the damping ratio (0.7: '
     'well damped)'),
    ("old file: a boolean motor constant", _old_hexarotor("  motor_constant: 1.269e-05 ", "  motor_constant: true "),
     '{f}: multirotor.motor_constant: expected a finite number, got True; give a number'),
    ("old file: a stiffness list with a boolean", _old_hexarotor("stiffness: [50.0, 50.0,", "stiffness: [50.0, true,"),
     '{f}: elastic_joints.stiffness[1]: expected a finite number, got True; give a number'),
]
VEHICLES += BOUNDS
IDS = [c[0] for c in VEHICLES]


def _write(tmp_path, text, name="vehicle.yaml"):
    """The bad file: ``text`` written (bytes as they are), or None: no file; "DIR": a directory;
    "FIFO": a named pipe; "BIG": one byte over the size limit; "/dev/...": a link to that device."""
    p = tmp_path / name
    if text == "DIR":
        p.mkdir()
    elif text == "FIFO":
        os.mkfifo(p)
    elif text == "BIG":
        p.write_bytes(b"#" * (_BIG - 1) + b"\n")
    elif isinstance(text, str) and text.startswith("/dev/"):
        p.symlink_to(text)
    elif isinstance(text, bytes):
        p.write_bytes(text)
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


MISSION3 = """waypoints:
  - {com: [0, 0, 1], time: 0}
  - {com: [1, 0, 1], time: T1}
  - {com: [2, 0, 1], time: T2}
constraints:
  - {waypoint: 1, output: com, order: ORDER, values: [0.3, .nan, .nan]}
"""


def mission3(order=1, t1="1.5", t2="3.0"):
    return MISSION3.replace("ORDER", str(order)).replace("T1", t1).replace("T2", t2)


def _many_waypoints(n):
    return "waypoints:\n" + "".join(f"  - {{com: [{i}, 0, 1], time: {i}}}\n" for i in range(n))


MISSION_BOUNDS = [
    ("a FIFO", "FIFO", "{f}: cannot be read (a FIFO, not a regular file); give the path of an existing mission file"),
    ("bad UTF-8", MISSION.encode() + b"# \xc3\n", "{f}: cannot be read (not UTF-8 text: byte 0xc3 at offset 148); give a "
     "mission file (YAML text)"),
    ("billion laughs in joint_names", _laughs("joint_names", leaf="J2") + MISSION.split("\n", 1)[1], '{f}: line 6, column 30, in l5: the aliases expand to more than 400000 nodes; write the values out, '
     'or use fewer aliases (a file expands to at most 400000 values)'),
    ("billion laughs in com", _laughs("c", leaf="0") + MISSION.replace("com: [0, 0, 1]", "com: *l8"), '{f}: line 6, column 30, in l5: the aliases expand to more than 400000 nodes; write the values out, '
     'or use fewer aliases (a file expands to at most 400000 values)'),
    ("com: a boolean", MISSION.replace("com: [0, 0, 1]", "com: [true, 0, 1]"), '{f}: waypoints[0].com[0]: expected a number, got True; give a number'),
    ("com: a string", MISSION.replace("com: [0, 0, 1]", "com: ['0', 0, 1]"), "{f}: waypoints[0].com[0]: expected a number, got '0'; give a number"),
    ("com: 1e300", MISSION.replace("com: [1, 0, 1]", "com: [1.0e+300, 0, 1]"), "{f}: waypoints[1].com[0]: 1e+300 m is beyond +-1e+06 m (geodyn_reference's default max_position: "
     '1000 km); give the value in SI units'),
    ("yaw: a boolean", MISSION.replace("com: [1, 0, 1]", "com: [1, 0, 1], yaw: true"), '{f}: waypoints[1].yaw: expected a number, got True; give a number'),
    ("q: a boolean", MISSION.replace("q: [0.5, 0]", "q: [0.5, false]"), '{f}: waypoints[1].q[1]: expected a number, got False; give a number'),
    ("constraint order 8", mission3(8), '{f}: constraints[0].order: 8 is outside 1..7, the derivative orders the planner supports (its '
     'polynomials lose their digits beyond); give 1 (velocity) to 7'),
    ("constraint order 60", mission3(60), '{f}: constraints[0].order: 60 is outside 1..7, the derivative orders the planner supports (its '
     'polynomials lose their digits beyond); give 1 (velocity) to 7'),
    ("constraint order 150", mission3(150), '{f}: constraints[0].order: 150 is outside 1..7, the derivative orders the planner supports (its '
     'polynomials lose their digits beyond); give 1 (velocity) to 7'),
    ("constraint order 400", mission3(400), '{f}: constraints[0].order: 400 is outside 1..7, the derivative orders the planner supports (its '
     'polynomials lose their digits beyond); give 1 (velocity) to 7'),
    ("constraint order 3000", mission3(3000), '{f}: constraints[0].order: 3000 is outside 1..7, the derivative orders the planner supports (its '
     'polynomials lose their digits beyond); give 1 (velocity) to 7'),
    ("constraint order 100000", mission3(100000), '{f}: constraints[0].order: 100000 is outside 1..7, the derivative orders the planner supports (its '
     'polynomials lose their digits beyond); give 1 (velocity) to 7'),
    ("constraint values: a string", mission3().replace("[0.3, .nan, .nan]", "['0.3', .nan, .nan]"), "{f}: constraints[0].values: expected 3 numbers (.nan: free), got ['0.3', nan, nan]; give numbers or "
     '.nan'),
    ("longer than a day", mission3(t2="86400.5"), "{f}: waypoints[2].time: 86400.5 s, over the limit of 86400 s (a day, as geodyn_reference's topic "
     'missions); split the mission'),
    ("a segment of 1e-300 s", mission3(t1="1.0e-300"), '{f}: waypoints[1].time: 1e-300 s after waypoints[0].time, under the shortest segment of 0.001 s '
     '(one step of the default control period); space the waypoints further'),
    ("timing: 1e300", MISSION.replace("max_velocity: 1,", "max_velocity: 1.0e+300,").replace(
        "max_acceleration: 1}", "max_acceleration: 1.0e+300}"), '{f}: timing: these limits give a segment of 2e-150 s, under the shortest segment of 0.001 s (one '
     'step of the default control period); lower the limits to what the vehicle can fly'),
    ("timing: 1e-300", MISSION.replace("max_velocity: 1,", "max_velocity: 1.0e-300,"), '{f}: timing: these limits make the mission 1e+300 s long, over the limit of 86400 s (a day, as '
     "geodyn_reference's topic missions); raise the limits or split the mission"),
    ("10,002 waypoints", _many_waypoints(10_002), '{f}: waypoints: 10002 waypoints, over the limit of 10001 (the start and 10000 more, as '
     "geodyn_reference's topic missions); split the mission"),
]
MISSIONS += MISSION_BOUNDS


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


LQRS += [
    ("a FIFO", "FIFO", "{f}: cannot be read (a FIFO, not a regular file); give the path of an existing LQR weights file"),
    ("billion laughs", _laughs("lqr"), "{f}: line 6, column 30, in l5: the aliases expand to more than 400000 nodes; "
     "write the values out, or use fewer aliases (a file expands to at most 400000 values)"),
    ("a boolean weight", "lqr:\n  input:\n    motor_torque_nm: true\n",
     "{f}: lqr.input.motor_torque_nm: expected a finite positive value, got True; give a positive deviation in the "
     "key's unit (Bryson's rule; config/lqr.yaml)"),
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


# ---------------------------------------------------------------------- bounded memory
#: [MiB] what loading an attack file may add to the peak resident memory (VmHWM) of a fresh
#: interpreter that loads a good file of the same kind (the baseline, measured in the test: the
#: interpreter, numpy, PyYAML, numba and the package's modules, about 240 MiB). Before the bounds the
#: billion laughs reached 3.5 GB; refused by them every attack stays within 3 MiB of the baseline
#: (measured); 64 MiB is far above that noise (allocator arenas, an 8 MB read buffer) and far below
#: an unbounded attack.
ATTACK_MEMORY_MARGIN_MIB = 64
_CHILD = """
import sys, warnings
warnings.simplefilter("ignore")
from geodyn_ros.planning.mission import load_mission
from geodyn_ros.vehicle import load_vehicle
try:
    (load_vehicle if sys.argv[1] == "vehicle" else load_mission)(sys.argv[2])
except ValueError as exc:
    print(str(exc)[:200])
finally:
    print(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")))
"""
MEMORY_CASES = (["good file"] + [c[0] for c in BOUNDS[:8]] + ["motor_constant 1e300", "control_period 1e300"],
                ["good file"] + [c[0] for c in MISSION_BOUNDS[:4]] + [c[0] for c in MISSION_BOUNDS if "order" in c[0]]
                + ["timing: 1e-300"])


def _peak_rss_mib(kind, path) -> tuple:
    """``(peak RSS [MiB], refusal)`` of a fresh interpreter loading ``path``: the kernel's high-water
    mark ``VmHWM`` of its own address space, read by the child as it ends (``ru_maxrss`` of a
    child counts the forked parent's pages from before the ``exec``: the test process's own size)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(path)], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    *lines, hwm = out.stdout.strip().splitlines()
    assert hwm.split()[2] == "kB", hwm
    return int(hwm.split()[1]) / 1024.0, "\n".join(lines).strip()


@pytest.mark.parametrize("kind", ["vehicle", "mission"])
def test_every_file_attack_is_refused_in_bounded_memory(kind, tmp_path):
    """Each attack file in its own interpreter: refused, and its peak RSS within
    ``ATTACK_MEMORY_MARGIN_MIB`` of the same interpreter loading a good file (measured here)."""
    table = {c[0]: c for c in (BOUNDS if kind == "vehicle" else MISSION_BOUNDS)}
    good = quad() if kind == "vehicle" else MISSION
    peaks = {}
    for case in MEMORY_CASES[kind == "mission"]:
        text = good if case == "good file" else table[case][1]
        d = tmp_path / f"{len(peaks)}"
        d.mkdir()
        p = _write(d, text, f"{kind}.yaml")
        peaks[case], out = _peak_rss_mib(kind, p)
        if case != "good file":
            assert out == table[case][2].replace("{f}", str(p))[:200].strip(), (case, out)
        elif kind == "mission":
            assert out == "", out
    base = peaks["good file"]
    print(f"\npeak RSS of a {kind} load [MiB]: " + ", ".join(f"{k} {v:.1f}" for k, v in peaks.items()))
    over = {k: round(v - base, 1) for k, v in peaks.items() if v > base + ATTACK_MEMORY_MARGIN_MIB}
    assert not over, f"over the baseline {base:.1f} MiB by more than {ATTACK_MEMORY_MARGIN_MIB} MiB: {over}"
