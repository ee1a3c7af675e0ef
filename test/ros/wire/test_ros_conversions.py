"""ROS message conversions: REP 105 odometry, body/spatial maps, name matching, jet layouts.

Independent references: the spatial twist is checked against central finite differences of a
pose trajectory, ``V = vee(dC/dt C^-1)`` (h = 1e-5: truncation ~h^2 |d3C| ~ 1e-10, so 1e-8);
the wrench map against power invariance ``W . V = W_b . V_b`` (rounding, 1e-12).
"""
from __future__ import annotations

import ros_harness  # (first: ROS isolation env before any rclpy use)

import numpy as np
import pytest


from geodyn_ros.lie import Ad, exp_se3, inv_se3, vee6
from geodyn_ros.ros.wire.conversions import (InputError, JointNameMatcher, parse_odometry,
                                        spatial_to_body_wrench)
from geodyn_ros.ros.wire.jets import (FeedforwardJetPacker, ReferenceDecoder, decode_feedforward_jet,
                                 make_reference_msg)

RNG = np.random.default_rng(42)


def _pose_traj(t, C0, xi_s, xi_b):
    """C(t) = exp(t xi_s) C0 exp(t^2 xi_b): a non-trivial smooth SE(3) curve."""
    return exp_se3(t * xi_s) @ C0 @ exp_se3(t * t * xi_b)


@pytest.mark.parametrize("seed", range(5))
def test_odometry_twist_is_rep105_child_frame(seed):
    rng = np.random.default_rng(seed)
    C0 = exp_se3(rng.normal(size=6))
    xi_s, xi_b = rng.normal(size=6), rng.normal(size=6)
    t0, h = 0.3, 1e-5
    C = _pose_traj(t0, C0, xi_s, xi_b)
    dC = (_pose_traj(t0 + h, C0, xi_s, xi_b) - _pose_traj(t0 - h, C0, xi_s, xi_b)) / (2 * h)
    V_fd = vee6(dC @ inv_se3(C))           # spatial twist
    Vb_fd = vee6(inv_se3(C) @ dC)          # body twist (w_b, v_b)
    m = ros_harness.odometry_msg(0, C, Vb_fd[:3], Vb_fd[3:])
    Cout, V = np.eye(4), np.zeros(6)
    parse_odometry(m, Cout, V, "base_link")
    assert np.abs(Cout - C).max() < 1e-14
    assert np.abs(V - V_fd).max() < 1e-8 * max(1.0, np.abs(V_fd).max())


def test_body_wrench_preserves_power():
    for _ in range(20):
        C = exp_se3(RNG.normal(size=6))
        W, Vb = RNG.normal(size=6), RNG.normal(size=6)
        V = Ad(C) @ Vb
        assert abs(W @ V - spatial_to_body_wrench(C, W) @ Vb) < 1e-12 * (1 + np.abs(W).sum() * np.abs(V).sum())


def test_joint_name_matcher():
    m = JointNameMatcher(("a", "b", "c"))
    out = np.empty(3)
    m.gather(["x", "c", "a", "b"], [9.0, 3.0, 1.0, 2.0], out, "js")
    assert out.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(InputError, match=r"js: model joints \['b'\] missing"):
        m.gather(["a", "c", "z"], [1.0, 2.0, 3.0], out, "js")
    with pytest.raises(InputError, match="twice"):
        m.gather(["a", "b", "c", "a"], [1.0, 2.0, 3.0, 4.0], out, "js")
    with pytest.raises(InputError, match="4 values for 3 joint names"):
        m.gather(["a", "b", "c"], [1.0, 2.0, 3.0, 4.0], out, "js")
    with pytest.raises(InputError, match="NaN"):
        m.gather(["a", "b", "c"], [1.0, np.inf, 3.0], out, "js")


def test_reference_jet_round_trip_and_row_check():
    names = ("j1", "j2", "j3")
    C = exp_se3(RNG.normal(size=6))
    V, Q = RNG.normal(size=(5, 6)), RNG.normal(size=(5, 3))
    msg = make_reference_msg(12 * 10**9 + 345, C, V, Q, names)
    # a consumer whose model lists the joints in another order, order 2 -> rows 0..4
    dec = ReferenceDecoder(("j3", "j1", "j2"), 2)
    Co, Vo, Qo = np.eye(4), np.zeros((4, 6)), np.zeros((5, 3))
    assert dec.decode(msg, Co, Vo, Qo) == 12 * 10**9 + 345
    assert np.abs(Co - C).max() < 1e-14
    assert np.array_equal(Vo, V[:4]) and np.array_equal(Qo, Q[:, [2, 0, 1]])
    with pytest.raises(InputError, match="derivative rows"):
        ReferenceDecoder(names, 3).decode(msg, Co, np.zeros((5, 6)), np.zeros((6, 3)))


def test_feedforward_jet_round_trip():
    packer = FeedforwardJetPacker(("a", "b"), 3)
    W, tau = RNG.normal(size=(4, 6)), RNG.normal(size=(4, 2))
    stamp, W2, tau2, names = decode_feedforward_jet(packer.pack(1_700_000_000_123_456_789, W, tau))
    assert stamp == 1_700_000_000_123_456_789 and names == ("a", "b")
    assert np.array_equal(W2, W) and np.array_equal(tau2, tau)
