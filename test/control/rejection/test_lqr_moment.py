"""The LQR's moment feedforward within the rotors' room (``rejection.lqr.limit_moment_feedforward``).

Independent references:
* a generic solver: each scale is the largest ``s`` in [0, 1] keeping every rotor's nominal input
  within the headroom band, which ``scipy.optimize.linprog`` finds on the same allocation (roll and
  pitch first, then yaw on what remains, the stated priority);
* the closed form where nothing binds: ``tb - moment`` exactly, scales (1, 1);
* the flight that diverged before (``doc/howto/model_error.md``): the TVLQR with the table's
  ``on`` options under the 2 N push at the collinear hexarotor's tool.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from geodyn_ros.control.rejection.lqr import FEEDBACK_HEADROOM, limit_moment_feedforward
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.loops.underactuated import hexarotor_source


@pytest.fixture(scope="module")
def alloc():
    cfg = load_actuation_config("hexarotor")
    model = cfg.load_model(hexarotor_source())
    return Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors), model.total_mass * 9.81


def _band(al):
    h = FEEDBACK_HEADROOM * (al.max_rot_velocity - al.min_rot_velocity)
    return (al.min_rot_velocity + h) ** 2, (al.max_rot_velocity - h) ** 2


def _lp_scale(a, b, lo, hi):
    """max s in [0, 1] with lo <= a + s b <= hi (linprog), 0 when even s = 0 is outside."""
    if np.any(a < lo) or np.any(a > hi):
        return 0.0
    r = linprog([-1.0], A_ub=np.r_[b, -b][:, None], b_ub=np.r_[hi - a, a - lo], bounds=[(0.0, 1.0)],
                method="highs")
    assert r.status == 0, r.message
    return float(r.x[0])


def test_nothing_binds_the_whole_moment_is_cancelled(alloc):
    al, W = alloc
    tb = np.array([0.01, -0.02, 0.005])
    m = np.array([0.2, -0.1, 0.1])
    out, s = limit_moment_feedforward(al, 1.0, W, tb, m)
    assert s == (1.0, 1.0)
    assert np.array_equal(out, tb - m)


def test_the_scales_are_a_linear_programs(alloc):
    """200 draws near hover (thrust 0.7-1.4 of the weight, a nominal torque up to 0.2 N m, a
    residual up to 1.2 N m per axis, thrust scale 0.9-1.1): each scale equals linprog's within
    1e-7 (its tolerance on a [0, 1] variable), and the result keeps every rotor in the band
    (1e-6 relative: the band's edges are 8.1e5 and 1e4 rad^2/s^2)."""
    al, W = alloc
    lo, hi = _band(al)
    rng = np.random.default_rng(7)
    bound = 0
    for _ in range(200):
        T = W * rng.uniform(0.7, 1.4)
        k = rng.uniform(0.9, 1.1)
        tb = rng.uniform(-0.2, 0.2, 3)
        m = rng.uniform(-1.2, 1.2, 3)
        out, (s_rp, s_y) = limit_moment_feedforward(al, k, T, tb, m)
        m_rp, m_y = np.r_[m[:2], 0.0], np.r_[0.0, 0.0, m[2]]
        ref_rp = _lp_scale(al.allocate_thrust_torque(T, tb) / k, al.allocate_thrust_torque(0.0, -m_rp) / k, lo, hi)
        tb_rp = tb - ref_rp * m_rp
        ref_y = _lp_scale(al.allocate_thrust_torque(T, tb_rp) / k, al.allocate_thrust_torque(0.0, -m_y) / k, lo, hi)
        assert abs(s_rp - ref_rp) < 1e-7 and abs(s_y - ref_y) < 1e-7, (s_rp, ref_rp, s_y, ref_y)
        np.testing.assert_allclose(out, tb - s_rp * m_rp - s_y * m_y, rtol=0, atol=1e-15)
        u = al.allocate_thrust_torque(T, out) / k
        if s_rp > 0.0 or s_y > 0.0:
            assert np.all(u >= lo * (1 - 1e-6)) and np.all(u <= hi * (1 + 1e-6)), u
        bound += (s_rp, s_y) != (1.0, 1.0)
    assert 20 <= bound <= 180, bound     # the draws exercise both the free and the bound case


def test_yaw_gives_way_before_roll_and_pitch(alloc):
    """A yaw residual past the hexarotor's yaw authority (about 0.61 N m at hover) with a small
    roll residual: roll is cancelled whole, yaw only in part."""
    al, W = alloc
    out, (s_rp, s_y) = limit_moment_feedforward(al, 1.0, W, np.zeros(3), np.array([0.1, 0.0, 0.9]))
    assert s_rp == 1.0 and 0.0 < s_y < 0.6, (s_rp, s_y)
    assert out[0] == -0.1


def test_the_lqr_flies_the_push_at_the_tool():
    """The flight that diverged at 1.3 s before the limit (rotor command 2e9 rad/s): the TVLQR with
    the table's ``on`` options, 2 N at the collinear hexarotor's tool (``rejection_table``'s
    ``push`` case, seed 0, 2 s preroll, 3 s scored). It flies, and its offset (measured 10.3 mm)
    stays under 24 mm, half of the 47 mm it keeps with the options off."""
    from geodyn_ros.examples import rejection_table as rt
    r = rt.fly_one("collinear", "lqr", "push", "on", 0, 2.0, 3.0, 2.0)
    assert r["diverged"] is None, r["diverged"]
    assert r["offset_m"] < 0.024, r["offset_m"]
