"""Bad mission files are refused in the vehicle file's format: one line ``<file>: <key>: <problem>; <fix>``.

The expected lines are written out here in full (not built from the loader's code), so a change of
wording or of format fails. The same format regex is applied to a vehicle file's refusal: the two
loaders speak one vocabulary (:mod:`geodyn_ros.model.validate`).
"""
from __future__ import annotations

import re

import pytest
import yaml

from geodyn_ros.planning.mission import load_mission, mission_from_dict
from geodyn_ros.vehicle import load_vehicle

#: ``<file>: <key>: <problem>; <fix>`` on one line (the key: a dotted path with [i] indices)
LINE = re.compile(r"^(?P<file>[^\n:]+): (?P<key>[A-Za-z_][\w.\[\]]*): (?P<problem>[^\n;]+); (?P<fix>[^\n;]+)$")

GOOD = """\
joint_names: [J2]
waypoints:
  - {com: [0.0, 0.0, 1.0], q: [0.0]}
  - {com: [1.0, 0.0, 1.0], q: [0.5]}
timing: {max_velocity: 1.0, max_acceleration: 1.0}
"""

# (what, the file's text, the refusal after "<file>: ")
BAD = [
    ("missing key", GOOD.replace("  - {com: [1.0, 0.0, 1.0], q: [0.5]}", "  - {q: [0.5]}"),
     "waypoints[1].com: missing; give the system CoM [x, y, z] in m (world)"),
    ("missing key in timing", GOOD.replace(", max_acceleration: 1.0", ""),
     "timing.max_acceleration: missing; give the CoM's limit (> 0)"),
    ("wrong type", GOOD.replace("com: [0.0, 0.0, 1.0]", "com: up"),
     "waypoints[0].com: expected 3 numbers, got 'up'; give a list of 3 numbers"),
    ("wrong length", GOOD.replace("com: [0.0, 0.0, 1.0]", "com: [0.0, 1.0]"),
     "waypoints[0].com: expected 3 numbers, got shape (2,); give a list of 3 numbers"),
    ("q of the wrong length", GOOD.replace("q: [0.5]", "q: [0.5, 0.1]"),
     "waypoints[1].q: expected 1 number, one per joint of joint_names (J2), got shape (2,); give 1 joint position "
     "[rad] in the order of joint_names"),
    ("wrong type of a limit", GOOD.replace("max_velocity: 1.0", "max_velocity: fast"),
     "timing.max_velocity: expected a number, got 'fast'; give a number"),
    ("non-finite number", GOOD.replace("q: [0.5]", "q: [.nan]"),
     "waypoints[1].q: contains NaN or Inf; give finite numbers"),
    ("non-finite time", GOOD.replace("timing: {max_velocity: 1.0, max_acceleration: 1.0}", "")
     .replace("q: [0.0]}", "q: [0.0], time: 0}").replace("q: [0.5]}", "q: [0.5], time: .inf}"),
     "waypoints[1].time: contains NaN or Inf; give finite numbers"),
    ("negative limit", GOOD.replace("max_velocity: 1.0", "max_velocity: -1.0"),
     "timing.max_velocity: expected a number > 0, got -1.0; give a positive limit"),
    ("unknown key", GOOD + "speed: 2\n",
     "speed: unknown key; the keys are joint_names, waypoints, timing, constraints"),
    ("unknown key, near a known one", GOOD.replace("q: [0.5]}", "q: [0.5], yaww: 1}"),
     "waypoints[1].yaww: unknown key; did you mean 'yaw'?"),
    ("unknown key in timing", GOOD.replace("max_velocity", "max_velocty"),
     "timing.max_velocty: unknown key; did you mean 'max_velocity'?"),
]


@pytest.mark.parametrize("text, want", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_mission_file_is_refused_in_one_line_naming_file_and_key(tmp_path, text, want):
    path = tmp_path / "mission.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        load_mission(path)
    assert str(info.value) == f"{path}: {want}"
    m = LINE.match(str(info.value))
    assert m and m["file"] == str(path), str(info.value)
    # a parsed document (no file) is refused with the same line, "mission" standing for the file
    with pytest.raises(ValueError) as info:
        mission_from_dict(yaml.safe_load(text))
    assert str(info.value) == f"mission: {want}"


def test_the_good_file_loads(tmp_path):
    """The base of every bad case is itself valid (each case breaks exactly one thing)."""
    path = tmp_path / "mission.yaml"
    path.write_text(GOOD)
    m = load_mission(path)
    assert m.joint_names == ("J2",) and m.com.shape == (2, 3) and m.q.tolist() == [[0.0], [0.5]]


def test_mission_and_vehicle_files_share_the_format(tmp_path):
    """A vehicle file's refusal has the very same shape as a mission file's."""
    v = tmp_path / "vehicle.yaml"
    v.write_text("rotors:\n  - {position: [0.2, 0.2, 0], axis: [0, 0, 1], turning_direction: ccw, spped: 3}\n"
                 "constants: {motor_constant: 1.0e-5, moment_constant: 0.016, time_constant_up: 0.02,\n"
                 "            time_constant_down: 0.02, max_rot_velocity: 1000}\n")
    with pytest.raises(ValueError) as info:
        load_vehicle(v)
    m = LINE.match(str(info.value))
    assert m and m["file"] == str(v) and m["key"] == "rotors[0].spped" and m["problem"] == "unknown key", \
        str(info.value)


def test_unreadable_files_name_the_file(tmp_path):
    with pytest.raises(ValueError, match=rf"^{re.escape(str(tmp_path))}/nope\.yaml: cannot be read \(No such file "
                                         r"or directory\); give the path of an existing mission file$"):
        load_mission(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("waypoints: [\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(tmp_path))}/bad\.yaml: line 2, column 1, in waypoints: "):
        load_mission(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ValueError) as info:
        load_mission(tmp_path / "list.yaml")
    assert str(info.value) == f"{tmp_path / 'list.yaml'}: expected a mapping, got [1, 2]; write it as key: value lines"
