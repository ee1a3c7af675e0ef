"""Sensing as it really errs (geodyn_ros.sim.sensors, issue 55): the estimator fed other noises than
it assumes, IMU biases against their Allan variance, the tilt an accelerometer bias causes, vision
drift and scale, latency jitter and dropouts; the realistic profiles of config/sensors.yaml and
every new key's refusal.

Tolerances. Every check is against an independent closed form (the Allan variance of white noise
plus a random walk, IEEE Std 952-1997; a Lyapunov equation and a Monte Carlo of the suite; the
renewal process of the dropouts; geometry), with a statistical tolerance derived from the number of
independent samples the statistic rests on and stated at the check (a few of its standard errors;
the seeds are fixed, so the tests are deterministic).
"""
import math
from dataclasses import replace

import numpy as np
import pytest

from geodyn_ros.sim.sensors import (ActualNoise, EstimatorNoise, ImuSpec, JointSpec, OdometrySpec, SensorProfile,
                                    SensorSuite, estimator_steady_state, estimator_true_covariance,
                                    imu_allan_deviation)

G = np.array([0.0, 0.0, -9.81])


class Rest:
    """A base at rest (or moving on a straight line at ``v``) with a fixed attitude ``R``."""

    def __init__(self, R=np.eye(3), v=(0.0, 0.0, 0.0)):
        self.R, self.v, self.t = np.asarray(R, float), np.asarray(v, float), 0.0
        self.gravity = G

    def base_pose(self):
        C = np.eye(4)
        C[:3, :3], C[:3, 3] = self.R, np.array([0.5, -1.0, 1.5]) + self.v * self.t
        return C

    def base_twist_body(self):
        return np.concatenate([np.zeros(3), self.R.T @ self.v])

    def q(self):
        return np.zeros(2)

    def qd(self):
        return np.zeros(2)


def _imu_only(imu):
    return SensorProfile("imu", None, None, imu)


def _overlapping_allan(y, m):
    """The overlapping Allan variance of the samples ``y`` (N,) at the cluster size ``m`` (IEEE Std
    952-1997, Annex C: from the cumulative sum, ``(theta_(k+2m) - 2 theta_(k+m) + theta_k)^2 / (2 m^2)``)."""
    th = np.concatenate([[0.0], np.cumsum(y)])
    d = th[2 * m:] - 2.0 * th[m:-m] + th[:-2 * m]
    return float(np.mean(d * d) / (2.0 * m * m))


def test_imu_biases_have_the_allan_variance_of_a_random_walk():
    """An IMU at rest with white noise ``sigma`` per sample and a bias random walk of density ``K``:
    the overlapping Allan deviation of 40,000 samples follows ``sqrt(sigma^2 / m + K^2 T (2 m^2 + 1) /
    (6 m))`` (white noise falling as ``m^-1/2``, the walk rising as ``m^1/2``; the exact discrete form,
    derived in the test, not read from the code: a random walk of step ``K sqrt(T)`` averaged over
    clusters of ``m``) at every cluster size from 1 to 2,000 samples, and
    :func:`imu_allan_deviation` is that form. Noise and walk are chosen to cross at ``m`` = 35, so both
    branches are tested. Tolerance: the mean Allan variance of the 3 axes, 25 % at the largest ``m``
    (about 20 independent clusters x 3 axes: a relative standard error of 13 %; 2 of them), 10 % at
    ``m <= 100`` (5 %: 2 of them)."""
    T, sig, K, n = 0.005, 0.01, 0.01 * math.sqrt(3) / 35 / math.sqrt(0.005), 40_000
    imu = ImuSpec(1.0 / T, 0.0, sig, sig, gyro_bias=0.02, accel_bias=0.03, gyro_bias_walk=K, accel_bias_walk=K)
    suite = SensorSuite(_imu_only(imu), seed=11, gravity=G)
    sim = Rest()
    gy, ac = [], []
    for k in range(n + 2):
        sim.t = k * T
        suite.sample(sim.t, sim)
        for _, _, s in suite.delivered(sim.t):
            gy.append(s.gyro)
            ac.append(s.accel - sim.R.T @ (-G))
    gy, ac = np.array(gy), np.array(ac)
    assert len(gy) >= n
    for m in (1, 4, 16, 35, 100, 400, 2000):
        expect = sig * sig / m + K * K * T * (2.0 * m * m + 1.0) / (6.0 * m)
        assert imu_allan_deviation(m, sig, K, T) == pytest.approx(math.sqrt(expect), rel=1e-12)
        for x in (gy, ac):
            got = np.mean([_overlapping_allan(x[:, i], m) for i in range(3)])
            assert got == pytest.approx(expect, rel=0.25 if m > 100 else 0.10), (m, got, expect)
    # the switch-on bias: the samples' mean over the first second is the draw (within the white noise's sigma /
    # sqrt(200) and the walk's K sqrt(1 s), 4 of them)
    b0 = SensorSuite(_imu_only(imu), seed=11, gravity=G).imu_bias()
    assert np.all(np.abs(gy[:200].mean(axis=0) - b0[0]) < 4 * (sig / math.sqrt(200) + K))


def test_the_realistic_imu_agrees_with_a_measured_allan_minimum():
    """The realistic profiles' IMU (ICM-42688-P white noise, TUM VI's BMI160 walk): the minimum of its
    gyro's Allan deviation is 7.3 deg/h, within 15 % of the 6.5 deg/h J. Pieper measured on a BMI088
    at rest (config/sensors.yaml, [JP]): two sources, one figure. Its angle random walk is the
    datasheet's 2.8 mdps/sqrt(Hz) (sigma sqrt(T))."""
    from geodyn_ros.sim.sensor_file import load_sensor_profiles
    im = load_sensor_profiles()["mocap_real"].imu
    T = 1.0 / im.rate
    m = np.unique(np.logspace(0, 6, 400).astype(int))
    dev = imu_allan_deviation(m, im.gyro_noise, im.gyro_bias_walk, T)
    assert math.degrees(dev.min()) * 3600 == pytest.approx(6.5, rel=0.15)
    assert math.degrees(im.gyro_noise * math.sqrt(T)) == pytest.approx(2.8e-3, rel=0.01)
    assert im.accel_noise * math.sqrt(T) / 9.80665 == pytest.approx(70e-6, rel=0.01)


# ----------------------------------------------------------------------------- assumed versus true noises
def _odometry_errors(profile, seconds, seed, sim=None):
    sim = sim or Rest()
    suite = SensorSuite(profile, seed=seed, size=0.25, gravity=G)
    e = []
    dt = 1.0 / profile.odometry.rate
    for k in range(int(seconds / dt) + 1):
        sim.t = k * dt
        suite.sample(sim.t, sim)
        for name, _, s in suite.delivered(sim.t + 1.0):
            if name == "odometry":
                C = sim.base_pose()
                pdot = s.V[3:] + np.cross(s.V[:3], s.C[:3, 3])
                e.append(np.concatenate([s.C[:3, 3] - C[:3, 3], pdot - sim.v]))
    return suite, np.array(e)


def _bartlett_sd(A, P, row, n):
    """The standard deviation of the mean square of component ``row`` of the stationary AR process
    ``e+ = A e + noise`` (covariance ``P``) over ``n`` samples: Bartlett's ``sqrt(2 / n sum_j gamma_j^2)``
    with the autocovariance ``gamma_j = (A^j P)[row, row]``."""
    M, g = np.array(P, float), []
    for _ in range(5000):
        g.append(M[row, row])
        M = A @ M
    g = np.array(g)
    return math.sqrt(2.0 / n * (g[0] ** 2 + 2.0 * np.sum(g[1:] ** 2)))


def test_a_filter_fed_other_noises_than_it_assumes():
    """A filter tuned with 1 m/s^2 and 2 mm (assumed) fed 0.2 m/s^2 and 1 cm (actual): the errors'
    covariance is the Lyapunov equation's (:func:`estimator_true_covariance`), not the filter's own
    ``P``. Independently of scipy's solver, the recursion ``P = A P A^T + Q`` iterated here to its fixed
    point gives the same (to 1e-9); a run of the suite (6,000 samples x 3 axes) has that mean square
    within 5 of its Bartlett standard deviations. With the assumed noises fed, the Lyapunov solution is
    the filter's ``P`` (to rounding); fed anything else it is at least the covariance of the filter
    optimal for those noises (Kalman): here EKF2's 0.35 m/s^2 and 0.1 m fed a quiet accelerometer and
    a 5 mm aiding err a twentieth of what the filter believes (standard deviations)."""
    T = 0.01
    assumed = EstimatorNoise(1.0, 0.015, 0.002, 0.01)
    fed = EstimatorNoise(0.2, 0.005, 0.01, 0.002)
    kf = estimator_steady_state(T, assumed)
    same = estimator_true_covariance(T, assumed, assumed)
    np.testing.assert_allclose(same["P"], kf["P"], rtol=1e-9)
    assert same["p_att"] == pytest.approx(kf["p_att"], rel=1e-9)
    cov = estimator_true_covariance(T, assumed, fed)
    IKH = np.eye(2) - np.outer(kf["K"], (1.0, 0.0))
    A = IKH @ kf["F"]
    Q = IKH @ np.outer(kf["G"], kf["G"]) @ IKH.T * fed.accel_noise ** 2 + np.outer(kf["K"], kf["K"]) * fed.aiding_position ** 2
    P = np.zeros((2, 2))
    for _ in range(20000):
        P = A @ P @ A.T + Q
    np.testing.assert_allclose(cov["P"], P, rtol=1e-9)
    opt = estimator_steady_state(T, fed)
    assert np.all(np.linalg.eigvalsh(cov["P"] - opt["P"]) > -1e-18) and cov["p_att"] >= opt["p_att"]
    ekf = EstimatorNoise(0.35, 0.015, 0.1, 0.1)
    quiet = estimator_true_covariance(T, ekf, EstimatorNoise(0.007, 0.0005, 0.005, 0.005))
    assert quiet["P"][0, 0] < estimator_steady_state(T, ekf)["P"][0, 0] / 20 ** 2
    actual = ActualNoise(fed.accel_noise, fed.gyro_noise, fed.aiding_position, fed.aiding_attitude)
    prof = SensorProfile("t", OdometrySpec(1.0 / T, 0.0, replace(assumed, actual=actual)), JointSpec(50.0, 0.0, 0, 0))
    _, e = _odometry_errors(prof, 60.0, 3)
    for k, row in ((slice(0, 3), 0), (slice(3, 6), 1)):
        x = e[:, k].ravel()
        sd = _bartlett_sd(A, cov["P"], row, x.size)
        assert abs(np.mean(x * x) - cov["P"][row, row]) < 5 * sd, (row, np.mean(x * x), cov["P"][row, row], sd)
    assert abs(np.mean(e[:, :3] ** 2) - kf["P"][0, 0]) > 10 * _bartlett_sd(A, cov["P"], 0, e[:, :3].size)


def test_the_tilt_an_accelerometer_bias_causes():
    """``tilt_from_accel_bias``: the odometry's attitude errs by ``(R b) x u / g``; with it, the
    biased specific force the IMU measures at rest, rotated by the estimated attitude, has no
    horizontal part to first order (the estimator cannot tell the bias from a tilt; the rest is second
    order in the tilt, under 2 % of the bias): checked at three attitudes, the estimator's own errors
    1e-6 (far below the 3-8 mrad tilt)."""
    tiny = EstimatorNoise(1e-3, 1e-5, 1e-6, 1e-6, tilt_from_accel_bias=True)
    imu = ImuSpec(200.0, 0.0, 0.0, 0.0, accel_bias=0.03)
    for R in (np.eye(3), np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]),
              np.array([[1, 0, 0], [0, math.cos(0.3), -math.sin(0.3)], [0, math.sin(0.3), math.cos(0.3)]])):
        sim = Rest(R)
        prof = SensorProfile("t", OdometrySpec(100.0, 0.0, tiny), JointSpec(50.0, 0.0, 0, 0), imu)
        suite = SensorSuite(prof, seed=5, size=0.25, gravity=G)
        sample = None
        for k in range(30):
            sim.t = k * 0.005
            suite.sample(sim.t, sim)
            for name, _, s in suite.delivered(sim.t):
                if name == "odometry":
                    sample = s
        b = suite.imu_bias()[1]
        f_meas = R.T @ (-G) + b
        level = sample.C[:3, :3] @ f_meas
        tilt = np.cross(R @ b, np.array([0, 0, 1.0])) / 9.81
        second = 2 * np.linalg.norm(tilt) * np.linalg.norm(b) + 9.81 * np.linalg.norm(tilt) ** 2   # second order
        assert np.hypot(level[0], level[1]) < second + 1e-5 < 0.02 * np.linalg.norm(b), (level, second)
        err = sample.C[:3, :3] @ R.T
        rot = np.array([err[2, 1] - err[1, 2], err[0, 2] - err[2, 0], err[1, 0] - err[0, 1]]) / 2
        np.testing.assert_allclose(rot, tilt, atol=1e-5)
        assert np.linalg.norm(tilt) > 1e-3


def test_vision_drift_and_scale_grow_with_the_distance():
    """A straight line at 1 m/s, an estimator with 1e-6 noises: with ``drift`` alone the position
    error is ``drift x distance`` in a fixed direction (to the filter's 1e-6); with ``scale`` alone it
    is ``s (p - p_0)``, parallel to the displacement, ``s`` one draw per run: over 300 seeds its
    standard deviation is ``scale`` (chi-square, 300 draws: 4 standard errors of 4 %); the velocity
    errs by the rates, ``drift |v| u`` and ``s v``."""
    tiny = EstimatorNoise(1e-3, 1e-5, 1e-6, 1e-6)
    v = np.array([0.6, 0.8, 0.0])
    prof = SensorProfile("t", OdometrySpec(100.0, 0.0, replace(tiny, drift=0.01)), JointSpec(50.0, 0.0, 0, 0))
    _, e = _odometry_errors(prof, 3.0, 1, Rest(v=v))
    dist = np.arange(len(e)) * 0.01 * 1.0
    np.testing.assert_allclose(np.linalg.norm(e[:, :3], axis=1)[1:], 0.01 * dist[1:], atol=1e-5)
    u = e[-1, :3] / np.linalg.norm(e[-1, :3])
    np.testing.assert_allclose(e[1:, 3:], np.outer(np.full(len(e) - 1, 0.01), u), atol=1e-4)
    s = []
    for seed in range(300):
        prof = SensorProfile("t", OdometrySpec(100.0, 0.0, replace(tiny, scale=0.02)), JointSpec(50.0, 0.0, 0, 0))
        _, e = _odometry_errors(prof, 0.12, seed, Rest(v=v))
        k = float(e[-1, 3:] @ v / (v @ v))                 # the velocity errs by s v
        assert np.linalg.norm(e[-1, 3:] - k * v) < 1e-4
        assert np.linalg.norm(e[-1, :3] - e[-9, :3] - k * v * 0.08) < 1e-5    # the position by s (p - p_0)
        s.append(k)
    assert np.std(s) == pytest.approx(0.02, rel=4 / math.sqrt(2 * 300))


def test_latency_jitter_and_dropouts():
    """Jitter: every delivery is ``latency + [0, jitter]`` after its stamp (to a 1 ms step), in stamp
    order, the mean extra latency ``jitter / 2`` (uniform; 2,400 samples: a standard error of 0.02 ms,
    checked to 0.1 ms); dropouts: the lost fraction is the renewal process's ``E[B] / ((1 - p) / p +
    E[B])`` with ``p = rate / f`` the chance a burst starts at a sample and ``E[B] = 1 / (1 - exp(-1 /
    (f mu)))`` the samples a burst of mean ``mu`` covers (an exponential length, a sample lost when
    stamped inside it), within 4 standard errors of the number of bursts (about 600: 4 %, checked to
    17 %)."""
    f, lat, jit, rate, mu = 240.0, 0.004, 0.002, 10.0, 0.02
    tiny = EstimatorNoise(1e-3, 1e-5, 1e-6, 1e-6)
    prof = SensorProfile("t", OdometrySpec(f, lat, tiny, jitter=jit), JointSpec(50.0, 0.0, 0, 0))
    suite = SensorSuite(prof, seed=2, size=0.25, gravity=G)
    sim = Rest()
    ages, stamps = [], []
    for k in range(10_001):
        sim.t = k * 1e-3
        suite.sample(sim.t, sim)
        for name, stamp, _ in suite.delivered(sim.t):
            if name == "odometry":
                ages.append(sim.t - stamp)
                stamps.append(stamp)
    ages = np.array(ages)
    assert np.all(np.diff(stamps) > 0) and len(stamps) > 2350
    assert ages.min() >= lat - 1e-9 and ages.max() <= lat + jit + 1e-3 + 1e-9
    assert np.mean(ages) - lat - 0.5e-3 == pytest.approx(jit / 2, abs=0.1e-3)   # (a 1 ms step: +0.5 ms on average)
    prof = SensorProfile("t", OdometrySpec(f, lat, tiny, dropout_rate=rate, dropout_duration=mu),
                         JointSpec(50.0, 0.0, 0, 0))
    suite = SensorSuite(prof, seed=2, size=0.25, gravity=G)
    got = 0
    for k in range(int(60 * f) + 1):                      # a call per sample instant (the stream's phase < 1 period)
        sim.t = (k + 0.999) / f
        suite.sample(sim.t, sim)
        got += sum(n == "odometry" for n, _, _ in suite.delivered(sim.t))
    st = suite.streams["odometry"]
    p = rate / f
    eb = 1.0 / (1.0 - math.exp(-1.0 / (f * mu)))
    assert st.lost / st.k == pytest.approx(eb / ((1.0 - p) / p + eb), rel=0.17)
    assert st.k - st.lost - 2 <= got <= st.k - st.lost     # (the last ones may still be in flight)


def test_the_old_streams_are_unmoved_by_the_new_errors():
    """A profile with every new error on draws the same white and estimator noises of its odometry and
    joints as without them (their generators are separate): the joints' samples are identical."""
    base = EstimatorNoise(0.35, 0.015, 0.01, 0.01)
    j = JointSpec(200.0, 0.005, 0.0015, 0.024)
    imu0 = ImuSpec(200.0, 0.0, 0.015, 0.35)
    a = SensorProfile("a", OdometrySpec(240.0, 0.004, base), j, imu0)
    b = SensorProfile("b", OdometrySpec(240.0, 0.004, replace(base, drift=0.01, scale=0.01, tilt_from_accel_bias=True),
                                        jitter=0.001, dropout_rate=1.0, dropout_duration=0.05), j,
                      replace(imu0, accel_bias=0.03, gyro_bias_walk=1e-4))

    class Moving(Rest):
        def q(self):
            return np.array([0.3 * self.t, -0.2 * self.t])

        def qd(self):
            return np.array([0.3, -0.2])

    out = []
    for prof in (a, b):
        suite, sim, js = SensorSuite(prof, seed=4, size=0.25, gravity=G), Moving(), []
        for k in range(500):
            sim.t = k * 1e-3
            suite.sample(sim.t, sim)
            js += [(s, d.q.tobytes()) for n, s, d in suite.delivered(sim.t) if n == "joints"]
        out.append(js)
    assert out[0] == out[1] and len(out[0]) > 50


# ----------------------------------------------------------------------------- the file
def _write(tmp_path, text):
    p = tmp_path / "sensors.yaml"
    p.write_text(text)
    return p


REAL = """profiles:
  lab:
    odometry:
      rate: 240.0
      latency: 0.004
      jitter: 0.001
      dropout_rate: 0.1
      dropout_duration: 0.05
      noise:
        model: estimator
        accel_noise: 0.35
        gyro_noise: 0.015
        aiding_position: 0.01
        aiding_attitude: 0.05
        actual: {accel_noise: 0.0106, gyro_noise: 0.00076, aiding_position: 0.0002, aiding_attitude: markers}
        drift: 0.005
        scale: 0.005
        tilt_from_accel_bias: true
    joints: {rate: 200.0, latency: 0.005, position_step: 0.0015, velocity_step: 0.024}
    imu: {rate: 200.0, latency: 0.0, gyro_noise: 0.00069, accel_noise: 0.0097, gyro_bias: 0.0017, accel_bias: 0.029,
          gyro_bias_walk: 2.2e-5, accel_bias_walk: 8.6e-4}
"""


def test_the_realistic_profiles_load_beside_the_old_ones():
    from geodyn_ros.sim.sensor_file import load_sensor_profiles
    profs = load_sensor_profiles()
    assert profs["mocap"].odometry.noise.actual is None and not profs["mocap"].imu.biased   # unchanged
    r = profs["mocap_real"]
    assert r.odometry.jitter == 0.001 and r.odometry.dropout_rate == 0.1 and r.imu.biased
    assert r.odometry.noise.actual.aiding_position == 0.0002 and r.failsafe.timeout == 0.25
    o = profs["onboard_real"].odometry.noise
    assert o.tilt_from_accel_bias and o.drift == 0.005 and o.scale == 0.005
    lab = load_sensor_profiles(_write_tmp(REAL))["lab"]
    assert lab.odometry.noise.actual.aiding_attitude == "markers" and lab.imu.accel_bias_walk == 8.6e-4


def _write_tmp(text, _d={}):
    import tempfile
    from pathlib import Path
    d = _d.setdefault("d", tempfile.mkdtemp())
    p = Path(d) / "real.yaml"
    p.write_text(text)
    return p


NEW_RANGES = [("jitter: 0.001", "profiles.lab.odometry.jitter", "jitter"),
              ("dropout_rate: 0.1", "profiles.lab.odometry.dropout_rate", "dropout_rate"),
              ("dropout_duration: 0.05", "profiles.lab.odometry.dropout_duration", "dropout_duration"),
              ("drift: 0.005", "profiles.lab.odometry.noise.drift", "drift"),
              ("scale: 0.005", "profiles.lab.odometry.noise.scale", "scale"),
              ("accel_noise: 0.0106", "profiles.lab.odometry.noise.actual.accel_noise", "accel_noise"),
              ("aiding_position: 0.0002", "profiles.lab.odometry.noise.actual.aiding_position", "aiding_position"),
              ("gyro_bias: 0.0017", "profiles.lab.imu.gyro_bias", "gyro_bias"),
              ("accel_bias: 0.029", "profiles.lab.imu.accel_bias", "accel_bias"),
              ("gyro_bias_walk: 2.2e-5", "profiles.lab.imu.gyro_bias_walk", "gyro_bias_walk"),
              ("accel_bias_walk: 8.6e-4", "profiles.lab.imu.accel_bias_walk", "accel_bias_walk")]


@pytest.mark.parametrize("old, key, rng", NEW_RANGES, ids=[r[1] for r in NEW_RANGES])
def test_every_new_magnitude_has_a_plausible_range(tmp_path, old, key, rng):
    """Each new key: its range's ends load, 1 % outside either end, the attack values 1e-300 and
    1e300, a word and a negative number are refused in one line ``<file>: <key>: <problem>; <fix>``."""
    from geodyn_ros.sim.sensor_file import RANGES, load_sensor_profiles
    r = RANGES[rng]
    name = old.split(":")[0]
    assert old in REAL
    for v in (r.lo, r.hi):
        load_sensor_profiles(_write(tmp_path, REAL.replace(old, f"{name}: {v:.17e}", 1)))
    for v in (f"{r.lo * 0.99:.17e}", f"{r.hi * 1.01:.17e}", "1.0e-300", "1.0e+300", "lots", "-1.0"):
        p = _write(tmp_path, REAL.replace(old, f"{name}: {v}", 1))
        with pytest.raises(ValueError) as exc:
            load_sensor_profiles(p)
        line = str(exc.value)
        assert line.startswith(f"{p}: {key}: ") and "\n" not in line and "; " in line, line


@pytest.mark.parametrize("old, new, line", [
    ("      dropout_duration: 0.05\n", "", "profiles.lab.odometry.dropout_duration: missing or 0 beside dropout_rate; "
     "give both dropout_rate [1/s] and dropout_duration [s] (or neither: no dropouts)"),
    ("      dropout_rate: 0.1\n", "", "profiles.lab.odometry.dropout_rate: missing or 0 beside dropout_duration; "
     "give both dropout_rate [1/s] and dropout_duration [s] (or neither: no dropouts)"),
    ("tilt_from_accel_bias: true", "tilt_from_accel_bias: yes please", "profiles.lab.odometry.noise."
     "tilt_from_accel_bias: expected true or false, got 'yes please'; give true (the attitude errs by the tilt that "
     "levels the accelerometer bias) or false"),
    ("accel_bias: 0.029,", "", "profiles.lab.odometry.noise.tilt_from_accel_bias: true without an accelerometer "
     "bias to level; give imu.accel_bias or imu.accel_bias_walk, or set it false"),
    ("actual: {accel_noise", "actual: {acel_noise", "profiles.lab.odometry.noise.actual.acel_noise: unknown key; did "
     "you mean 'accel_noise'?"),
    ("aiding_attitude: markers}", "aiding_attitude: marker}", "profiles.lab.odometry.noise.actual.aiding_attitude: "
     "'marker' is neither a number nor markers; give a standard deviation in rad, or markers"),
    ("jitter: 0.001", "jiter: 0.001", "profiles.lab.odometry.jiter: unknown key; did you mean 'jitter'?"),
    ("gyro_bias_walk:", "gyro_bias_wlk:", "profiles.lab.imu.gyro_bias_wlk: unknown key; did you mean "
     "'gyro_bias_walk'?"),
    ("actual: {", "actual: [", "profiles.lab.odometry.noise.actual: expected a mapping, got"),
])
def test_new_key_refusals_one_line_each(tmp_path, old, new, line):
    from geodyn_ros.sim.sensor_file import load_sensor_profiles
    text = REAL.replace(old, new, 1)
    if new.startswith("actual: ["):
        text = text.replace("aiding_attitude: markers}", "aiding_attitude: markers]")
    if old.startswith("accel_bias"):
        text = text.replace("accel_bias_walk: 8.6e-4", "accel_bias_walk: 0.0")
    p = _write(tmp_path, text)
    with pytest.raises(ValueError) as exc:
        load_sensor_profiles(p)
    assert str(exc.value).startswith(f"{p}: {line}") and "\n" not in str(exc.value), str(exc.value)


def test_the_input_rule_option_refuses_in_one_line(capsys):
    """``Sensing(rule=...)`` and ``geodyn_fly --input-rule``: an unknown rule, an IMU rule on a profile
    without an IMU, and the option without ``--sensing`` are refused in one line."""
    from geodyn_ros.loops import fly
    from geodyn_ros.loops.sensed import Sensing
    from geodyn_ros.sim.sensor_file import sensor_profile
    with pytest.raises(ValueError, match=r"^rule: expected one of twist, imu, imu_model \(or None: imu where the "
                                         r"profile has an IMU stream\), got 'kalman'$"):
        Sensing(sensor_profile("mocap"), rule="kalman")
    no_imu = replace(sensor_profile("mocap"), imu=None, name="lab")
    with pytest.raises(ValueError, match=r"^rule: 'imu' needs an IMU stream, and profile 'lab' has none; give rule "
                                         r"twist or a profile with imu$"):
        Sensing(no_imu, rule="imu")
    assert Sensing(no_imu).input_rule == "twist" and Sensing(sensor_profile("mocap")).input_rule == "imu"
    assert fly.main(["--vehicle", "iris", "--duration", "0.1", "--input-rule", "imu"]) == 2
    err = capsys.readouterr().err
    assert err == "geodyn_fly: refused: input-rule: needs --sensing PROFILE (the exact state needs no rule)\n", err
    with pytest.raises(SystemExit):
        fly.main(["--vehicle", "iris", "--sensing", "mocap", "--input-rule", "kalman"])
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == ("geodyn_fly: error: argument --input-rule: invalid choice: 'kalman' (choose from "
                                    "'twist', 'imu', 'imu_model')"), err
