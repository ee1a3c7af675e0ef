"""``geodyn_node``'s QoS choices and its subscriber-gated convenience topics, over real rclpy.

* ``input_reliability`` / ``output_reliability``: any other value stops the node at start-up with
  one line naming the parameter. ``best_effort`` inputs still match the probe's reliable
  publisher (a best-effort subscription matches any publisher) and the node computes from them;
  ``best_effort`` outputs reach a best-effort subscriber, while a reliable subscriber on the same
  topic never matches (DDS's request/offer rule) and receives nothing.
* ``feedforward/wrench`` and ``feedforward/joint_efforts`` are not published while nobody
  subscribes (the publisher's ``publish`` is counted), and a subscriber that appears gets the
  very next cycle, with the stamp of that cycle's ``feedforward/jet``.
"""
from __future__ import annotations

import pytest
from ros_harness import Harness, read_feedforward  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from geometry_msgs.msg import WrenchStamped
from rclpy.qos import ReliabilityPolicy
from sensor_msgs.msg import JointState
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet

from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.common.runtime import control_qos
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
REF = table3_reference(1.0, 3)   # rows 0..4: order 2 needs V^(0..3), q^(0..4)


def _send(h, node):
    stamp = node.get_clock().now().nanoseconds
    h.publisher(ReferenceJet, "reference").publish(
        make_reference_jet(stamp, REF.base_pose, REF.base_twist[:5], REF.q[:5], node.model.joint_names))
    return stamp


@pytest.mark.parametrize("name", ["input_reliability", "output_reliability"])
def test_bad_reliability_fails_at_startup(name):
    h = Harness()
    try:
        with pytest.raises(ConfigurationError, match=name):
            h.make(GeodynNode, {"urdf_path": URDF, name: "sometimes"})
    finally:
        h.close()


@pytest.mark.parametrize("name", ["qos_depth", "input_depth"])
def test_a_depth_below_one_fails_at_startup(name):
    h = Harness()
    try:
        with pytest.raises(ConfigurationError, match=rf"^parameter '{name}': must be >= 1, got 0$"):
            h.make(GeodynNode, {"urdf_path": URDF, name: 0})
    finally:
        h.close()


def test_best_effort_inputs_match_a_reliable_publisher(h):
    node = h.make(GeodynNode, {"urdf_path": URDF, "input_reliability": "best_effort", "stale_timeout": 1e6})
    sub = [s for s in node.subscriptions if s.topic_name == "/reference"][0]
    assert sub.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    jets = h.record(FeedforwardJet, "feedforward/jet")
    h.publisher(ReferenceJet, "reference")
    h.wait_matched("reference")                        # the probe's publisher is reliable (control_qos)
    assert h.spin_until(lambda: bool(jets) or (_send(h, node) and False), 10.0)


def test_best_effort_outputs_reach_best_effort_subscribers_only(h):
    node = h.make(GeodynNode, {"urdf_path": URDF, "output_reliability": "best_effort", "stale_timeout": 1e6})
    assert node._pub_jet.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    reliable = h.record(FeedforwardJet, "feedforward/jet")       # control_qos: reliable
    best = []
    qos = control_qos(100, "best_effort")
    h.probe.create_subscription(FeedforwardJet, "feedforward/jet", best.append, qos)
    h.publisher(ReferenceJet, "reference")
    h.wait_matched("reference")
    assert h.spin_until(lambda: len(best) >= 3 or (_send(h, node) and False), 10.0)
    assert reliable == []
    assert node._pub_jet.get_subscription_count() == 1    # only the best-effort one matched


def test_convenience_topics_only_while_subscribed(h):
    node = h.make(GeodynNode, {"urdf_path": URDF, "stale_timeout": 1e6})
    calls = {"wrench": 0, "efforts": 0}
    for key, pub in (("wrench", node._pub_wrench), ("efforts", node._pub_efforts)):
        real = pub.publish

        def counted(raw, key=key, real=real):
            calls[key] += 1
            real(raw)
        pub.publish = counted
    jets = h.record(FeedforwardJet, "feedforward/jet")
    h.publisher(ReferenceJet, "reference")
    h.wait_matched("reference")
    assert h.spin_until(lambda: len(jets) >= 3 or (_send(h, node) and False), 10.0)
    assert calls == {"wrench": 0, "efforts": 0}
    wrenches = h.record(WrenchStamped, "feedforward/wrench")
    efforts = h.record(JointState, "feedforward/joint_efforts")
    assert h.spin_until(lambda: node._pub_wrench.get_subscription_count() > 0
                        and node._pub_efforts.get_subscription_count() > 0, 10.0)
    stamp = _send(h, node)   # the first cycle after the subscribers matched (earlier ones may still be queued)

    def stamps(msgs):
        return {m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in msgs}
    # the three outputs of one cycle reach the probe in any order: wait for all of them
    assert h.spin_until(lambda: stamp in stamps(wrenches) and stamp in stamps(efforts)
                        and stamp in {read_feedforward(j)[0] for j in jets}, 10.0)
    assert calls["wrench"] >= 1 and calls["efforts"] >= 1


def test_sensor_subscriptions_default_to_best_effort(h):
    """``odom`` and ``joint_states`` are subscribed best-effort by default (``sensor_reliability``:
    sensor-data publishers such as PX4's are best-effort, and a reliable subscription never matches
    them), the reference reliable (``input_reliability``). A best-effort publisher matches the
    default node and not one with ``sensor_reliability: reliable`` (discovery done: a reliable
    publisher on the same topic matched it). Data through best-effort publishers:
    ``test/ros/wire/test_ros_async.py``."""
    from nav_msgs.msg import Odometry
    node = h.make(GeodynNode, {"urdf_path": URDF, "input_mode": "measured"}, namespace="be")
    h.make(GeodynNode, {"urdf_path": URDF, "input_mode": "measured", "sensor_reliability": "reliable"},
           namespace="rel")
    rel = {s.topic_name: s.qos_profile.reliability for s in node.subscriptions}
    assert rel["/be/odom"] == rel["/be/joint_states"] == ReliabilityPolicy.BEST_EFFORT
    assert rel["/be/reference"] == ReliabilityPolicy.RELIABLE
    for topic, msg_type in (("odom", Odometry), ("joint_states", JointState)):
        be = h.probe.create_publisher(msg_type, f"/be/{topic}", control_qos(5, "best_effort"))
        assert h.spin_until(lambda: be.get_subscription_count() == 1)
        be_rel = h.probe.create_publisher(msg_type, f"/rel/{topic}", control_qos(5, "best_effort"))
        reliable = h.probe.create_publisher(msg_type, f"/rel/{topic}", control_qos(5))
        assert h.spin_until(lambda: reliable.get_subscription_count() == 1)
        h.spin_for(0.2)
        assert be_rel.get_subscription_count() == 0


@pytest.mark.parametrize("params,match", [
    ({"input_policy": "nearest"}, r"^parameter 'input_policy': must be one of \('latest', 'exact'\), got 'nearest'$"),
    ({"joint_states_max_age": -0.01}, r"^parameter 'joint_states_max_age': must be a finite number of seconds > 0"),
    ({"odom_max_age": float("inf")}, r"^parameter 'odom_max_age': must be a finite number of seconds > 0"),
    ({"sensor_reliability": "often"}, r"^parameter 'sensor_reliability': must be 'reliable' or 'best_effort'"),
    ({"input_mode": "measured", "max_input_skew": 0.002}, r"^parameter 'max_input_skew': 0.002 s needs input_policy"),
])
def test_bad_policy_parameters_fail_at_startup(params, match):
    h = Harness()
    try:
        with pytest.raises(ConfigurationError, match=match):
            h.make(GeodynNode, {"urdf_path": URDF, **params})
    finally:
        h.close()
