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


def _at(h, refs, pc, sec, nanosec=0):
    n = len(refs)
    c = ClockMsg()
    c.clock.sec, c.clock.nanosec = sec, nanosec
    pc.publish(c)
    assert h.spin_until(lambda: len(refs) > n)
    return _com(refs[-1])


def _at_s(h, refs, pc, t):
    ns = int(round(t * 1e9))
    return _at(h, refs, pc, ns // 10**9, ns % 10**9)


def test_trajectory_waits_for_the_start_message_then_starts_start_time_later(h):
    """start_ramp 0: the trajectory is held at its time 0 with its jets as they are, then starts at
    full speed (the former behaviour, kept as an option)."""
    h.make(ReferenceNode, {"use_sim_time": True, "order": 1, "trajectory": "figure_eight",
                           "start_topic": "gz/start_hold", "start_time": 1.0, "start_ramp": 0.0})
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


def test_start_ramp_leaves_rest_smoothly_then_is_the_trajectory_half_the_ramp_late(h):
    """The default start (start_ramp 2 s here): at rest at the trajectory's start point while waiting
    and until the start (every derivative row 0); during the ramp each published row is the time
    derivative of the row below it (central differences of the published rows over +-1 ms: the warp
    is consistent, not only smooth); after it, the trajectory itself ``start_ramp / 2`` late, to
    1e-12. Expected values from ``figure_eight_reference`` and finite differences, not from the
    warp."""
    T, start = 2.0, 11.0
    h.make(ReferenceNode, {"use_sim_time": True, "order": 1, "trajectory": "figure_eight",
                           "start_topic": "gz/start_hold", "start_time": 1.0, "start_ramp": T})
    refs = h.record(FlatReference, "flat_reference")
    pc, ps = h.publisher(ClockMsg, "/clock"), h.publisher(String, "gz/start_hold")
    h.wait_matched("/clock")
    h.wait_matched("gz/start_hold")
    rest = np.zeros((6, 3))
    rest[0] = figure_eight_reference(0.0, 3).com[0]
    for sec in (5, 10):
        np.testing.assert_array_equal(_at(h, refs, pc, sec), rest)
    ps.publish(String(data="detached"))          # node time 10 s: the ramp starts at 11 s
    h.spin_for(0.2)
    np.testing.assert_array_equal(_at_s(h, refs, pc, 10.5), rest)
    dt = 1e-3
    for t in (start + 0.4, start + 1.0, start + 1.7):
        lo, mid, hi = (_at_s(h, refs, pc, t + d) for d in (-dt, 0.0, dt))
        fd = (hi - lo) / (2 * dt)
        # central-difference error h^2/6 |x^(3)| with |x^(3)| of the ramped rows below ~60 (m/s^k):
        # 1e-5; the rows differ by O(1) if the warp were inconsistent
        np.testing.assert_allclose(mid[1:4], fd[:3], rtol=0, atol=1e-4 * max(1.0, np.abs(mid[1:4]).max()))
        assert np.abs(mid[1]).max() > 1e-3      # moving, not at rest
    for t in (start + T, start + T + 0.75):
        np.testing.assert_allclose(_at_s(h, refs, pc, t), figure_eight_reference(t - start - T / 2, 3).com[:6],
                                   rtol=1e-12, atol=1e-12)


def test_start_ramp_refused_when_negative(h):
    with pytest.raises(ConfigurationError, match=r"^parameter 'start_ramp': must be a finite number >= 0 \[s\]"):
        h.make(ReferenceNode, {"trajectory": "figure_eight", "start_topic": "gz/start_hold", "start_ramp": -1.0})
