"""``geodyn_node`` parameter ``output_representation`` (isolated rclpy, see ros_harness).

A node with ``output_representation: <rep>`` publishes ``feedforward/jet`` (``FeedforwardJet``,
its ``representation`` field ``rep``) with the wrench rows in ``rep``. Checked against (1) ``gd.convert_wrench`` of ``gd.inverse_dynamics`` on the same
inputs (1e-10 relative: the same float64 operations up to ordering), and (2) for ``body``,
independently of the representation code, against central finite differences in time of the
order-0 body wrench ``Ad_C(t)^T W(t)`` along Table 3 (h = 1e-3 s: truncation h^2/6 |W_b'''|
~ 1e-7 of |W_b| ~ 40 N, round-off eps |W_b| / h ~ 1e-11; bound 1e-5 N).
"""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import Harness, read_feedforward  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from geodyn_msgs.msg import FeedforwardJet, ReferenceJet

import geodyn_ros as gd
from geodyn_ros.lie import Ad
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.geodyn_node import PARAMETERS, GeodynNode
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
ORDER = 2


@pytest.mark.parametrize("rep", ["body", "hybrid", "mixed", "spatial"])
def test_output_representation_jet(h, rep):
    node = h.make(GeodynNode, {"urdf_path": URDF, "order": ORDER, "stale_timeout": 2.0,
                               "output_representation": rep}, namespace=rep)
    assert node.output_representation == rep
    jets = h.record(FeedforwardJet, f"{rep}/feedforward/jet")
    pub = h.publisher(ReferenceJet, f"{rep}/reference")
    h.wait_matched(f"{rep}/reference")
    t = 7.3
    ref = table3_reference(t, ORDER + 1)       # the message needs equal row counts: V, q rows 0..ORDER+2
    pub.publish(make_reference_jet(node.get_clock().now().nanoseconds, ref.base_pose, ref.base_twist[:ORDER + 3],
                                   ref.q[:ORDER + 3], NAMES))
    assert h.spin_until(lambda: len(jets) > 0)
    _, W, tau, names, carried = read_feedforward(jets[0])
    assert carried == rep and names == NAMES   # the typed message names its representation
    assert (jets[0].header.frame_id, jets[0].child_frame_id) == ("world", "base_link")
    res = gd.inverse_dynamics(node.model, ref.base_pose, ref.base_twist, ref.q, ORDER)
    want = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", rep)
    scale = max(1.0, np.abs(want).max())
    assert np.abs(W - want).max() <= 1e-10 * scale
    assert np.abs(tau - res.tau).max() <= 1e-10 * scale
    if rep == "body":
        hh = 1e-3
        Wb = []
        for s in (-1, 0, 1):
            r = table3_reference(t + s * hh, 0)
            Wb.append(Ad(r.base_pose).T @ gd.inverse_dynamics(node.model, r.base_pose, r.base_twist, r.q,
                                                             0).base_wrench[0])
        assert np.abs(W[0] - Wb[1]).max() < 1e-10 * scale
        assert np.abs(W[1] - (Wb[2] - Wb[0]) / (2 * hh)).max() < 1e-5
        # and it is not the spatial derivative (the test can fail)
        assert np.abs(W[1] - Ad(ref.base_pose).T @ res.base_wrench[1]).max() > 1e-3


def test_default_is_spatial():
    assert PARAMETERS["output_representation"][0] == "spatial"


@pytest.mark.parametrize("value", ["Body", "world", ""])
def test_bad_output_representation_fails_at_startup(value):
    hh = Harness()
    try:
        with pytest.raises(ConfigurationError, match="output_representation"):
            hh.make(GeodynNode, {"urdf_path": URDF, "output_representation": value})
    finally:
        hh.close()
