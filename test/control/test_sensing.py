"""The input rule (``geodyn_ros.control.sensing``): propagation of a sample over its age, against
closed-form motions, and the error bounds its docstring states.

The motions are chosen so that the error of a constant-velocity prediction has a closed form:
a base point under constant linear acceleration ``a`` (error exactly ``a dt^2 / 2``) while the
attitude turns about a fixed axis with constant angular acceleration ``alpha`` (angle error
exactly ``alpha dt^2 / 2``); joints with constant ``qddot``. Tolerances: 1e-12 relative, the
rounding of a few products of O(1) numbers."""
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from geodyn_ros.control import sensing as S


def _state(t, p0, v0, a, axis, w0, alpha):
    """Pose and spatial twist at ``t`` of the closed-form motion (module docstring)."""
    p = p0 + v0 * t + 0.5 * a * t * t
    ang = w0 * t + 0.5 * alpha * t * t
    R = Rotation.from_rotvec(axis * ang).as_matrix()
    C = np.eye(4)
    C[:3, :3], C[:3, 3] = R, p
    w = axis * (w0 + alpha * t)                  # world axes (fixed axis)
    pdot = v0 + a * t
    V = np.r_[w, pdot - np.cross(w, p)]          # spatial twist: v = pdot - w x p
    return C, V


@pytest.mark.parametrize("dt", [0.004, 0.010, 0.020, -0.003])
def test_base_propagation_error_is_the_acceleration_remainder(dt):
    rng = np.random.default_rng(7)
    p0, v0, a = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3) * 5
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    w0, alpha, t = 2.0, 15.0, 0.3
    C, V = _state(t, p0, v0, a, axis, w0, alpha)
    C_true, _ = _state(t + dt, p0, v0, a, axis, w0, alpha)
    C_prop = S.propagate_base(C, V, dt)
    pos_err = np.linalg.norm(C_prop[:3, 3] - C_true[:3, 3])
    ang_err = np.linalg.norm(Rotation.from_matrix(C_prop[:3, :3] @ C_true[:3, :3].T).as_rotvec())
    assert pos_err == pytest.approx(0.5 * np.linalg.norm(a) * dt * dt, rel=1e-9, abs=1e-15)
    assert ang_err == pytest.approx(0.5 * alpha * dt * dt, rel=1e-9, abs=1e-15)
    # the zero-order hold is off by the motion itself: far larger at these ages
    hold_err = np.linalg.norm(C[:3, 3] - C_true[:3, 3])
    assert hold_err > 10 * pos_err
    # a rigid transform, written in place alike
    out = np.full((4, 4), np.nan)
    assert S.propagate_base(C, V, dt, out=out) is out and np.array_equal(out, C_prop)
    assert np.allclose(out[:3, :3] @ out[:3, :3].T, np.eye(3), atol=1e-14) and np.array_equal(out[3], [0, 0, 0, 1])


def test_joint_propagation_error_is_the_acceleration_remainder():
    rng = np.random.default_rng(8)
    q0, qd0, qdd = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6) * 20
    t, dt = 0.2, 0.01
    q, qd = q0 + qd0 * t + 0.5 * qdd * t * t, qd0 + qdd * t
    q_true = q0 + qd0 * (t + dt) + 0.5 * qdd * (t + dt) ** 2
    err = S.propagate_joints(q, qd, dt) - q_true
    np.testing.assert_allclose(np.abs(err), 0.5 * np.abs(qdd) * dt * dt, rtol=1e-9, atol=1e-15)


def test_the_docstring_table_is_the_bounds():
    """The numbers of the module docstring's table, recomputed here from the motion it names."""
    doc = S.__doc__
    rows = re.findall(r"^(\d+) ms .*?\s{2,}([\d.]+) mm, ([\d.]+) mrad\s{2,}([\d.]+) mm, ([\d.]+) mrad", doc, re.M)
    assert len(rows) == 3, rows
    m = S.AGILE
    for ms, hp, ha, pp, pa in rows:
        dt = int(ms) * 1e-3
        hold_p, hold_a = m.v * dt + m.a * dt * dt / 2, m.w * dt + m.alpha * dt * dt / 2
        prop_p, prop_a = m.a * dt * dt / 2, m.alpha * dt * dt / 2
        for shown, value in ((hp, hold_p * 1e3), (ha, hold_a * 1e3), (pp, prop_p * 1e3), (pa, prop_a * 1e3)):
            assert float(shown) == pytest.approx(value, rel=0.02), (ms, shown, value)
        b = S.ERROR_BOUNDS[dt]
        assert b["hold"][:2] == pytest.approx((hold_p, hold_a)) and b["propagation"][:2] == pytest.approx((prop_p, prop_a))


def test_latest_sample_keeps_the_newest_and_refuses_old_ones():
    s = S.LatestSample("odom", max_age_ns=20_000_000, max_ahead_ns=1_000_000)
    assert s.take(0) is None
    assert s.offer(100, "a") and not s.offer(100, "b") and not s.offer(50, "c")
    assert s.take(100 + 20_000_000) == (100, "a", 20_000_000)
    assert s.take(101 + 20_000_000) is None                  # one ns too old
    assert s.take(100 - 1_000_000) == (100, "a", -1_000_000)  # newer than the cycle, within max_ahead
    assert s.take(99 - 1_000_000) is None
    assert s.offer(200, "d") and s.take(200)[1] == "d"
    s.reset()
    assert s.take(200) is None
    with pytest.raises(ValueError, match="^odom:"):
        S.LatestSample("odom", 0)
