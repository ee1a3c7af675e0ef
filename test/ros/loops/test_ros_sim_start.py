"""The actuated simulators publish their start state once (issue 52.7).

At every ROS start a controller under ``input_policy: latest`` (the default: the PX4 stand-in
path, ``px4.launch.py``) logged ``WARN skipping cycle: joint_states: stamp 0.000000000 s is not
newer than the newest accepted 0.000000000 s; not used``. The cause: ``geodyn_actuated_sim`` (and
the PX4 stand-in, which extends it) published the whole start state twice from its constructor,
once from ``geodyn_sim``'s set-up and once more to add ``motor_states``, whose publisher did not
exist yet. The controller's refusal of a second, not newer sample is right (a real sensor stream
whose stamps stand still is a fault) and stays (test_ros_input_policy.py); the simulator now sends
each stream's start sample once.

What the node hands to its publishers during construction is recorded (``Publisher.publish``
wrapped), so the check does not depend on DDS discovery: odom (the stand-in sends PX4's odometry
instead), joint_states and motor_states once each, stamped 0.
"""
from __future__ import annotations

import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: ROS isolation env)

from px4_bridge_harness import DATA
from rclpy.publisher import Publisher

from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode
from geodyn_ros.ros.px4.standin_node import Px4SimNode

#: node class, parameters, the streams it publishes with a header (the stand-in's odometry is PX4's)
CASES = {
    "geodyn_actuated_sim": (ActuatedSimNode, {"urdf_path": str(hexarotor_source()),
                                              "actuation_config": str(DATA.parents[1] / "config" / "hexarotor.yaml")},
                            ("joint_states", "motor_states", "odom")),
    "geodyn_px4_sim": (Px4SimNode, {"urdf_path": str(DATA / "quad_x.urdf"),
                                    "actuation_config": str(DATA / "quad_x_px4.yaml"), "real_time_factor": 0.0},
                       ("joint_states", "motor_states")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_start_state_is_published_once(h, monkeypatch, name):
    cls, params, streams = CASES[name]
    sent = []
    publish = Publisher.publish

    def recording(self, msg):
        header = getattr(msg, "header", None)
        if header is not None and self.topic_name.rsplit("/", 1)[-1] in ("odom", "joint_states", "motor_states"):
            sent.append((self.topic_name.rsplit("/", 1)[-1], header.stamp.sec, header.stamp.nanosec))
        return publish(self, msg)

    monkeypatch.setattr(Publisher, "publish", recording)
    node = h.make(cls, params)
    monkeypatch.setattr(Publisher, "publish", publish)
    assert node.sim is not None and node.steps == 0
    assert sorted(sent) == [(s, 0, 0) for s in streams], sent
