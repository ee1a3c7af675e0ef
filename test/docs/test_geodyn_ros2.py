"""``python -m geodyn_ros2`` (issue 52.3), the ``ros2`` commands of the docs without the CLI: its
message and value parsing against rclpy's own types, and its one-line failures. The commands
against running nodes are run by test_ros2_equivalents.py, as the docs write them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import geodyn_ros2 as cli  # noqa: E402

#: the message of doc/tutorials/plan_mission.md
GOAL = ("{joint_names: [base_link], points: [{transforms: [{translation: {x: 0.3, y: -0.2, z: 1.3},\n"
        "    rotation: {w: 1.0}}], time_from_start: {sec: 2}}]}")


def test_a_message_is_filled_from_yaml_field_by_field():
    from trajectory_msgs.msg import MultiDOFJointTrajectory
    msg = cli.fill_message(MultiDOFJointTrajectory(), yaml.safe_load(GOAL))
    assert msg.joint_names == ["base_link"] and len(msg.points) == 1
    t = msg.points[0].transforms[0]
    assert (t.translation.x, t.translation.y, t.translation.z) == (0.3, -0.2, 1.3)
    assert (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w) == (0.0, 0.0, 0.0, 1.0)
    assert msg.points[0].time_from_start.sec == 2 and msg.points[0].time_from_start.nanosec == 0
    # serializes as rclpy would send it (the field types are right, not only the attributes)
    from rclpy.serialization import deserialize_message, serialize_message
    assert deserialize_message(serialize_message(msg), MultiDOFJointTrajectory) == msg


@pytest.mark.parametrize("data, words", [
    ({"points": [{"transform": []}]}, "points[0].transform: MultiDOFJointTrajectoryPoint has no field 'transform'"),
    ({"joint_names": "base_link"}, "joint_names: 'base_link' does not fit sequence<string>"),
    ({"points": {"x": 1}}, "points: expected a list of trajectory_msgs/MultiDOFJointTrajectoryPoint"),
])
def test_a_field_the_message_does_not_take_is_named(data, words):
    from trajectory_msgs.msg import MultiDOFJointTrajectory
    with pytest.raises(cli.CommandError) as exc:
        cli.fill_message(MultiDOFJointTrajectory(), data)
    assert str(exc.value).startswith(words), str(exc.value)


def test_parameter_values_as_ros2_reads_them():
    from rcl_interfaces.msg import ParameterType, ParameterValue
    double = ParameterValue(type=ParameterType.PARAMETER_DOUBLE)
    doubles = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY)
    assert cli.parameter_value("36", double) == 36.0 and isinstance(cli.parameter_value("36", double), float)
    assert cli.parameter_value("[30, 30, 8.0]", doubles) == [30.0, 30.0, 8.0]
    assert cli.parameter_value("36", None) == 36 and cli.parameter_value("rigid") == "rigid"
    assert cli.parameter_value("true") is True
    with pytest.raises(cli.CommandError, match="not YAML"):
        cli.parameter_value("[1, 2")


def test_an_unknown_type_and_an_absent_node_are_one_line_and_exit_1():
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="OFF", PYTHONPATH=str(ROOT))
    for args, words in ((["topic", "pub", "--once", "/x", "no_pkg/msg/Nope", "{}"], "no_pkg/msg/Nope: no such msg type"),
                        (["--timeout", "1", "param", "get", "/no_such_node", "kp"], "no parameter services of node /no_such_node")):
        out = subprocess.run([sys.executable, "-m", "geodyn_ros2", *args], env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 1, (out.returncode, out.stderr)
        assert out.stderr.count("\n") == 1 and out.stderr.startswith(f"geodyn_ros2: {words}"), out.stderr
