"""geodyn_reference's ``start_topic`` (the Gazebo launch files' start: the trajectory waits at its time
0 until gz-sim's DetachableJoint says "detached" on gz/start_hold, then starts ``start_time`` later).
Expected values from ``figure_eight_reference`` (the trajectory module), not from the node."""
import numpy as np
import pytest
from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import String
from geodyn_msgs.msg import FlatReference

from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.nodes.reference_node import ReferenceNode
from geodyn_ros.trajectories import figure_eight_reference


def _com(msg):
    return np.array([[c.x, c.y, c.z] for c in msg.com])


def _at(h, refs, pc, sec):
    n = len(refs)
    c = ClockMsg()
    c.clock.sec = sec
    pc.publish(c)
    assert h.spin_until(lambda: len(refs) > n)
    return _com(refs[-1])


def test_trajectory_waits_for_the_start_message_then_starts_start_time_later(h):
    h.make(ReferenceNode, {"use_sim_time": True, "order": 1, "trajectory": "figure_eight",
                           "start_topic": "gz/start_hold", "start_time": 1.0})
    refs = h.record(FlatReference, "flat_reference")
    pc, ps = h.publisher(ClockMsg, "/clock"), h.publisher(String, "gz/start_hold")
    h.wait_matched("/clock")
    h.wait_matched("gz/start_hold")
    at0 = figure_eight_reference(0.0, 3).com[:6]
    for sec in (5, 9):   # waiting: trajectory time 0 whatever the clock
        assert np.array_equal(_at(h, refs, pc, sec), at0)
    ps.publish(String(data="attached"))   # not the start value: still waiting
    h.spin_for(0.2)
    assert np.array_equal(_at(h, refs, pc, 10), at0)
    ps.publish(String(data="detached"))   # node time 10 s: the trajectory starts at 11 s
    h.spin_for(0.2)
    np.testing.assert_array_equal(_at(h, refs, pc, 13), figure_eight_reference(2.0, 3).com[:6])
    ps.publish(String(data="detached"))   # a repeat does not restart it
    h.spin_for(0.2)
    np.testing.assert_array_equal(_at(h, refs, pc, 14), figure_eight_reference(3.0, 3).com[:6])


def test_start_topic_refused_with_waypoints(h):
    with pytest.raises(ConfigurationError, match=r"parameter 'start_topic': not with trajectory 'waypoints'"):
        h.make(ReferenceNode, {"trajectory": "waypoints", "start_topic": "gz/start_hold"})
