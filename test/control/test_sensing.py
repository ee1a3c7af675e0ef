"""The input rule (``geodyn_ros.control.sensing``): propagation of a sample over its age, against
closed-form motions, and the error bounds its docstring states.

The motions are chosen so that the error of a constant-velocity prediction has a closed form:
a base point under constant linear acceleration ``a`` (error exactly ``a dt^2 / 2``) while the
attitude turns about a fixed axis with constant angular acceleration ``alpha`` (angle error
exactly ``alpha dt^2 / 2``); joints with constant ``qddot``. Tolerances: 1e-12 relative, the
rounding of a few products of O(1) numbers."""
import math
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


# ----------------------------------------------------------------------------- the IMU rules (issue 55)
G = np.array([0.0, 0.0, -9.81])


class _Motion:
    """The closed-form motion of :func:`_state` with the IMU samples the simulator takes of it
    (``geodyn_ros.sim.sensors``: the mean body rate ``log(R_0^T R_1) / T`` and the mean specific force
    ``R_1^T ((pdot_1 - pdot_0) / T - g)`` over each interval), noise-free unless ``sigma_a``."""

    def __init__(self, a=(3.0, -4.0, 2.0), alpha=15.0, w0=2.0, seed=7):
        rng = np.random.default_rng(seed)
        self.p0, self.v0, self.a = rng.normal(size=3), rng.normal(size=3), np.array(a, float)
        ax = rng.normal(size=3)
        self.axis, self.w0, self.alpha = ax / np.linalg.norm(ax), w0, alpha

    def state(self, t):
        return _state(t, self.p0, self.v0, self.a, self.axis, self.w0, self.alpha)

    def pdot(self, t):
        return self.v0 + self.a * t

    def imu(self, t0, t1, rng=None, sigma_a=0.0):
        (C0, _), (C1, _) = self.state(t0), self.state(t1)
        T = t1 - t0
        gyro = Rotation.from_matrix(C0[:3, :3].T @ C1[:3, :3]).as_rotvec() / T
        f = C1[:3, :3].T @ ((self.pdot(t1) - self.pdot(t0)) / T - G)
        if sigma_a:
            f = f + sigma_a * rng.standard_normal(3)
        return T, gyro, f

    def rate(self, t):
        """The spatial twist rate (6,) at ``t`` (finite-free: w' = alpha axis; v' = a - w' x p - w x pdot)."""
        C, V = self.state(t)
        w, p = V[:3], C[:3, 3]
        wd = self.alpha * self.axis
        return np.r_[wd, self.a - np.cross(wd, p) - np.cross(w, self.pdot(t))]


def _errors(mo, C, V, t):
    """(position [m], attitude [rad], velocity [m/s] of the base origin, angular velocity [rad/s]) errors."""
    Ct, Vt = mo.state(t)
    pdot = V[3:] + np.cross(V[:3], C[:3, 3])
    return (np.linalg.norm(C[:3, 3] - Ct[:3, 3]),
            np.linalg.norm(Rotation.from_matrix(C[:3, :3] @ Ct[:3, :3].T).as_rotvec()),
            np.linalg.norm(pdot - mo.pdot(t)), np.linalg.norm(V[:3] - Vt[:3]))


def _feed(mo, T, s_odo, t, phase, rng=None, sigma_a=0.0):
    """An ImuPropagator reset at the exact odometry sample of ``s_odo`` and fed the IMU samples of
    period ``T`` (instants ``phase + k T``) that end at or before ``t``; returns it and the newest
    IMU stamp after the odometry's (None: none)."""
    ins = S.ImuPropagator(G)
    C, V = mo.state(s_odo)
    ins.reset(s_odo, C, V)
    k0 = int(np.floor((s_odo - phase) / T))
    newest = None
    for k in range(k0, k0 + 100):
        t0, t1 = phase + k * T, phase + (k + 1) * T
        if t1 > t + 1e-12:
            break
        ins.imu(t1, *mo.imu(t0, t1, rng, sigma_a))
        if t1 > s_odo:
            newest = t1
    return ins, newest


@pytest.mark.parametrize("age, h", [(0.0063, 0.0021), (0.012, 0.004), (0.020, 0.0005), (0.003, 0.001)])
def test_imu_rule_errs_by_its_stated_bound(age, h):
    """The ``imu`` rule on the closed-form motion (constant acceleration ``a`` of the base origin, a
    turn about a fixed axis at constant ``alpha``; the jerks are 0), the odometry stamp ``h`` before
    the end of an IMU interval of ``T`` = 5 ms: its errors are the docstring's terms exactly: the held
    velocity ``a r``, the position ``a r^2 / 2``, the angular velocity ``alpha (r + T / 2)`` and the
    attitude ``alpha (h (T - h) / 2 + T r / 2 + r^2 / 2)`` (``h (T - h) / 2 <= T^2 / 8``: the mean rate
    of the interval the stamp falls in), up to the tilt the attitude error gives the specific force
    over the age (``|f| alpha T^2 / 8 dt``, the bound's last term); and within
    :func:`imu_error_bounds` (the test's own motion: its ``a``, ``alpha``, jerks 0)."""
    mo, T, s_odo = _Motion(), 0.005, 0.3
    phase = s_odo + h - T * np.ceil((s_odo + h) / T)        # an IMU interval ends h after the stamp
    t = s_odo + age
    ins, newest = _feed(mo, T, s_odo, t, phase)
    C, V = ins.predict(t)
    ep, ea, ev, ew = _errors(mo, C, V, t)
    a, al = np.linalg.norm(mo.a), mo.alpha
    m = S.Motion(v=0.0, a=a, w=0.0, alpha=al, qd=0.0, qdd=0.0, j=0.0, zeta=0.0)
    if newest is None:                                      # no IMU sample after the odometry's: the twist rule
        assert age <= h
        C2 = S.propagate_base(*mo.state(s_odo), age)
        assert np.array_equal(C, C2)
        return
    r = t - newest
    f_max = max(np.linalg.norm(mo.imu(phase + k * T, phase + (k + 1) * T)[2]) for k in range(-1, 20))
    tilt = f_max * al * T * T / 8 * age                     # (velocity) the attitude error tilting the specific force
    assert ev == pytest.approx(a * r, abs=tilt + 1e-12)
    assert ep == pytest.approx(0.5 * a * r * r, abs=tilt * age + 1e-12)
    assert ew == pytest.approx(al * (r + T / 2), rel=1e-9)
    assert ea == pytest.approx(al * (h * (T - h) / 2 + T * r / 2 + r * r / 2), rel=1e-6)
    b = S.imu_error_bounds(age, T, m, r=r, g=float(f_max) - a)["imu"]
    assert ev <= b[0] + 1e-12 and ew <= b[1] * (1 + 1e-9) and ep <= b[2] + 1e-12 and ea <= b[3] * (1 + 1e-9), (
        (ev, ew, ep, ea), b)
    worst = S.imu_error_bounds(age, T, m, g=float(f_max) - a)["imu"]
    assert all(x <= y * (1 + 1e-9) + 1e-12 for x, y in zip((ev, ew, ep, ea), worst))
    # the twist rule over the same age errs by the whole age instead (its spatial twist held, the base
    # origin's velocity turns by w x pdot too)
    Ct, Vt = S.propagate_base(*mo.state(s_odo), age), mo.state(s_odo)[1]
    assert _errors(mo, Ct, Vt, t)[2] > max(ev, a * r) and _errors(mo, Ct, Vt, t)[2] > 0.5 * a * age


def test_imu_model_rule_is_exact_but_for_the_interval_of_the_stamp():
    """With the model's exact spatial twist rate, ``imu_model`` propagates the closed-form motion
    exactly (second order in a motion whose second derivatives are constant), but for the mean rate
    of the IMU interval the odometry stamp falls in (attitude ``alpha h (T - h) / 2``, and that tilt of
    the specific force over the age): the held twist's error is gone."""
    mo, T, s_odo, h, age = _Motion(), 0.005, 0.3, 0.0021, 0.0159
    phase = s_odo + h - T * np.ceil((s_odo + h) / T)
    t = s_odo + age
    ins, newest = _feed(mo, T, s_odo, t, phase)
    C, V = ins.predict(t, mo.rate(newest))
    ep, ea, ev, ew = _errors(mo, C, V, t)
    part = mo.alpha * h * (T - h) / 2
    f_max = 30.0                                            # |a - g| < 30 m/s^2 along this motion
    assert ea == pytest.approx(part, rel=1e-3)
    assert ew < 1e-9 and ev < f_max * part * age and ep < f_max * part * age * age
    C1, V1 = ins.predict(t)                                 # the imu rule on the same samples
    assert _errors(mo, C1, V1, t)[2] > 1e3 * ev     # (r = 3.8 ms: a r = 20 mm/s)


def test_propagate_base_rate_against_the_closed_form_motion():
    """:func:`propagate_base_rate` from the exact state and twist rate: the closed-form motion to
    rounding (its second derivatives are constant), and the twist rule's error (``a dt``) without it."""
    mo = _Motion()
    C, V = mo.state(0.2)
    for dt in (0.004, 0.02, -0.01):
        C1, V1 = S.propagate_base_rate(C, V, mo.rate(0.2), dt)
        e = _errors(mo, C1, V1, 0.2 + dt)
        assert max(e) < 1e-12, e


def test_imu_rule_noise_is_a_random_walk_of_the_samples():
    """White accelerometer noise ``sigma_a`` per sample: the ``imu`` rule's velocity error at an age of
    ``n`` whole IMU periods (the stamp on an interval's start) has the standard deviation ``sigma_a T
    sqrt(n)`` = ``sigma_a sqrt(T dt)`` per axis (the docstring's). 600 seeds x 3 axes: the sample standard
    deviation is within 4 of its standard errors (``1 / sqrt(2 x 1800)``: 1.7 %) of it."""
    mo, T, s_odo, sig, n = _Motion(), 0.005, 0.3, 0.35, 4
    phase = s_odo - T * np.floor(s_odo / T)
    t = s_odo + n * T
    errs = []
    for seed in range(600):
        rng = np.random.default_rng(seed)
        ins, _ = _feed(mo, T, s_odo, t, phase, rng, sig)
        C, V = ins.predict(t)
        errs.append(V[3:] + np.cross(V[:3], C[:3, 3]) - mo.pdot(t))
    s = np.std(np.array(errs).ravel(), ddof=1)
    assert s == pytest.approx(sig * math.sqrt(T * n * T), rel=4 / math.sqrt(2 * 1800))


def test_a_late_odometry_sample_is_brought_forward_on_the_buffered_imu():
    """An odometry sample arriving after the IMU samples that follow it (its latency): the reset
    re-integrates exactly those samples, as a fresh integration from it does."""
    from geodyn_ros.control.failsafe import DeadReckoning
    mo, T = _Motion(), 0.005
    ins = S.ImuPropagator(G)
    ins.reset(0.0, *mo.state(0.0))
    samples = [(k * T,) + mo.imu((k - 1) * T, k * T) for k in range(1, 20)]
    for s in samples:
        ins.imu(*s)
    ins.reset(0.0512, *mo.state(0.0512))                   # stamped between the 10th and the 11th sample's ends
    dr = DeadReckoning(G)
    dr.reset(0.0512, *mo.state(0.0512))
    for s in samples[10:]:
        dr.imu(*s)
    a, b = ins.state(), dr.state()
    assert a[0] == b[0] == samples[-1][0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])


def test_the_held_twist_table_is_the_bounds():
    """The held twist's table of the module docstring, recomputed from :func:`imu_error_bounds`."""
    doc = S.__doc__
    rows = re.findall(r"^(\d+) ms .*?\s{2,}([\d.]+) mm/s, ([\d.]+) mrad/s\s{2,}([\d.]+) mm/s, ([\d.]+) mrad/s"
                      r"\s{2,}([\d.]+) mm/s, ([\d.]+) mrad/s", doc, re.M)
    assert len(rows) == 3, rows
    for row in rows:
        dt = int(row[0]) * 1e-3
        b = S.imu_error_bounds(dt, 0.005)
        assert b == S.TWIST_BOUNDS[dt]
        for k, rule in enumerate(("twist", "imu", "imu_model")):
            v, w = float(row[1 + 2 * k]), float(row[2 + 2 * k])
            assert v == pytest.approx(b[rule][0] * 1e3, rel=0.03) and w == pytest.approx(b[rule][1] * 1e3, rel=0.03), (
                row, rule, b[rule])


@pytest.mark.parametrize("call, line", [
    (lambda: S.ImuPropagator(buffer=0), "buffer: expected a whole number of IMU samples >= 1 (512: 2.5 s at 200 Hz), "
                                      "got 0"),
    (lambda: S.ImuPropagator(buffer=2.5), "buffer: expected a whole number of IMU samples >= 1 (512: 2.5 s at 200 Hz), "
                                        "got 2.5"),
    (lambda: S.ImuPropagator(gravity=(0.0, -9.81)), "gravity: expected 3 finite numbers [m/s^2], got (0.0, -9.81)"),
    (lambda: S.ImuPropagator(gravity=(0.0, 0.0, math.nan)), "gravity: expected 3 finite numbers [m/s^2], got (0.0, 0.0, nan)"),
    (lambda: S.imu_error_bounds(0.004, 0.0), "period: expected a finite number > 0 (SI units), got 0.0"),
    (lambda: S.imu_error_bounds(math.inf, 0.005), "dt: expected a finite number (SI units), got inf"),
    (lambda: S.imu_error_bounds(0.004, 0.005, r=-1e-3), "r: expected a finite number >= 0 (SI units), got -0.001"),
    (lambda: S.imu_error_bounds(0.004, 0.005, da="1"), None),
    (lambda: S.imu_error_bounds(0.004, 0.005, dalpha=None), "dalpha: expected a finite number >= 0 (SI units), got None"),
])
def test_the_imu_rule_refuses_bad_arguments_in_one_line(call, line):
    """The IMU rule's constructor and bounds: a buffer that keeps nothing (the rule would silently stop
    re-integrating), a gravity of the wrong shape, a zero IMU period, an infinite age, a negative age or
    model error are refused with one line naming the argument (a numeric string is a number)."""
    if line is None:
        call()
        return
    with pytest.raises(ValueError) as exc:
        call()
    assert str(exc.value) == line
