"""sim/sensors.py and sim/sensor_file.py: the sensor streams against their stated statistics (seeded),
and the sensors file's refusals.

Tolerances. A sample standard deviation of N independent Gaussian values is checked with the
chi-square distribution: ``(N - 1) s^2 / sigma^2`` lies in ``[chi2.ppf(1e-6 / 2), chi2.ppf(1 - 1e-6 / 2)]``
of ``N - 1`` degrees of freedom (a false failure once in a million seeds; the seeds are fixed, so
the test is deterministic and can fail only if the statistic is wrong). For the estimator's
correlated errors the sample variance has the variance ``(2 / N) sum_j gamma(j)^2`` (Bartlett's
formula for a Gaussian stationary process, gamma its autocovariance, computed here from the
filter's closed-loop matrix), and the check is 5 of those standard deviations.
"""
import math

import numpy as np
import pytest
from scipy.linalg import solve_discrete_are
from scipy.stats import chi2

from geodyn_ros.lie import exp_so3, log_so3
from geodyn_ros.sim.sensors import (EstimatorNoise, ImuSpec, JointSpec, OdometrySpec, SensorProfile, SensorSuite,
                                    WhiteNoise, estimator_steady_state, marker_attitude_sigma)

DT = 1e-3
G = np.array([0.0, 0.0, -9.81])


class FakeSim:
    """A base moving with constant world angular velocity ``w`` and constant acceleration ``a``,
    joints with constant rates (exact closed forms), at time ``t``."""

    def __init__(self, w=(0.0, 0.0, 0.0), a=(0.0, 0.0, 0.0), v0=(0.0, 0.0, 0.0), n=3, qd=0.3):
        self.w, self.a, self.v0 = np.array(w, float), np.array(a, float), np.array(v0, float)
        self.t, self.n, self.qdot = 0.0, n, qd
        self.elastic_joints = ("a",)
        self.gravity = G

    def base_pose(self):
        C = np.eye(4)
        C[:3, :3] = exp_so3(self.t * self.w)
        C[:3, 3] = np.array([1.0, 2.0, 3.0]) + self.v0 * self.t + 0.5 * self.a * self.t ** 2
        return C

    def base_twist_body(self):
        R = exp_so3(self.t * self.w)
        return np.concatenate([R.T @ self.w, R.T @ (self.v0 + self.a * self.t)])

    def q(self):
        return 0.1 + self.qdot * self.t * np.arange(1, self.n + 1)

    def qd(self):
        return self.qdot * np.arange(1, self.n + 1.0)

    def motor_angle(self):
        return self.q()[:1] + 0.01

    def motor_velocity(self):
        return self.qd()[:1]


def _run(profile, sim, seconds, seed=3):
    suite = SensorSuite(profile, seed=seed, size=0.25, gravity=G, start=0.0)
    out = []
    for k in range(int(round(seconds / DT)) + 1):
        sim.t = k * DT
        suite.sample(sim.t, sim)
        out += [(sim.t,) + d for d in suite.delivered(sim.t)]
    return suite, out


def _white(pos=0.0, att=0.0, vel=0.0, ang=0.0):
    return WhiteNoise(pos, att, vel, ang)


def _profile(odo, joints=None, imu=None):
    return SensorProfile("test", odo, joints or JointSpec(200.0, 0.005, 0.0, 0.0), imu)


def _chi2_ok(values, sigma):
    x = np.asarray(values, float).ravel()
    n = x.size
    stat = (n - 1) * np.var(x, ddof=1) / sigma ** 2
    return chi2.ppf(5e-7, n - 1) <= stat <= chi2.ppf(1 - 5e-7, n - 1), stat / (n - 1)


def test_rate_and_latency_of_every_stream():
    """240 Hz and 200 Hz streams over 10 s: 2400 +- 1 and 2000 +- 1 samples (the seeded phase);
    consecutive stamps 1/rate apart within one simulator step (samples are taken at steps); each
    delivered at the first step at or after stamp + latency."""
    prof = _profile(OdometrySpec(240.0, 0.0042, _white()), JointSpec(200.0, 0.005, 0.0, 0.0),
                    ImuSpec(200.0, 0.0, 0.0, 0.0))
    _, out = _run(prof, FakeSim(), 10.0)
    for name, rate, lat in (("odometry", 240.0, 0.0042), ("joints", 200.0, 0.005), ("imu", 200.0, 0.0)):
        rows = [(t, s) for t, nm, s, _ in out if nm == name]
        stamps = np.array([s for _, s in rows])
        expect = 10.0 * rate - (1 if name == "imu" else 0)     # the IMU's first instant opens its first interval
        assert abs(len(rows) - expect) <= 1.5, (name, len(rows))
        gaps = np.diff(stamps)
        assert np.all(np.abs(gaps - 1.0 / rate) <= DT + 1e-9)
        assert abs(gaps.mean() - 1.0 / rate) < DT / len(gaps) * 2 + 1e-12
        delay = np.array([t - s for t, s in rows])
        assert np.all(delay >= lat - 1e-9) and np.all(delay < lat + DT + 1e-9), name


def test_white_odometry_noise_has_its_standard_deviations():
    sp, sa, sv, sw = 2e-4, 5e-4, 4e-3, 0.015
    prof = _profile(OdometrySpec(240.0, 0.0, _white(sp, sa, sv, sw)))
    sim = FakeSim()
    _, out = _run(prof, sim, 20.0)
    odo = [(t, s, d) for t, nm, s, d in out if nm == "odometry"]
    ep, ea, ev, ew = [], [], [], []
    for t, s, d in odo:
        sim.t = s
        C, Vb = sim.base_pose(), sim.base_twist_body()
        ep.append(d.C[:3, 3] - C[:3, 3])
        ea.append(log_so3(d.C[:3, :3] @ C[:3, :3].T))
        w = d.V[:3]
        pdot = d.V[3:] - np.cross(d.C[:3, 3], w)
        ev.append(pdot - C[:3, :3] @ Vb[3:])
        ew.append(d.C[:3, :3].T @ w - Vb[:3])
    assert len(odo) > 4700
    for vals, sigma in ((ep, sp), (ea, sa), (ev, sv), (ew, sw)):
        ok, ratio = _chi2_ok(vals, sigma)
        assert ok, (sigma, ratio)
        assert abs(np.mean(vals)) < 6 * sigma / math.sqrt(np.size(vals))      # unbiased (6 standard errors)


def test_differenced_velocity_and_marker_attitude():
    """velocity "difference": (p_k - p_(k-1)) / (t_k - t_(k-1)) of the noisy positions, so its error
    has the standard deviation sqrt(2) sigma_p / T (every other sample: independent); attitude
    "markers": sqrt(2) sigma_p / (L sqrt(4))."""
    sp = 2e-4
    prof = _profile(OdometrySpec(250.0, 0.0, _white(sp, "markers", "difference", 0.0)))
    sim = FakeSim(v0=(0.5, 0.0, 0.0))
    _, out = _run(prof, sim, 20.0)
    odo = [(s, d) for _, nm, s, d in out if nm == "odometry"]
    ev, ea = [], []
    for s, d in odo[1:]:
        sim.t = s
        C = sim.base_pose()
        ev.append(d.V[3:] - np.cross(d.C[:3, 3], d.V[:3]) - (sim.v0 + sim.a * s))
        ea.append(log_so3(d.C[:3, :3] @ C[:3, :3].T))
    T = np.diff([s for s, _ in odo])
    assert np.all(np.abs(T - 0.004) < 1e-9)              # 250 Hz on the 1 ms grid: exactly 4 ms
    ok, ratio = _chi2_ok(np.array(ev)[::2], math.sqrt(2) * sp / 0.004)
    assert ok, ratio
    ok, ratio = _chi2_ok(ea, marker_attitude_sigma(sp, 0.25))
    assert ok, ratio
    assert marker_attitude_sigma(sp, 0.25) == pytest.approx(math.sqrt(2) * sp / 0.5)


def _posterior(period, nz):
    """The filter's posterior covariance from scipy's DARE (independent of the module's iteration)."""
    T = period
    F = np.array([[1.0, T], [0.0, 1.0]])
    G_ = np.array([[0.5 * T * T], [T]])
    Q = G_ @ G_.T * nz.accel_noise ** 2
    H = np.array([[1.0, 0.0]])
    Pm = solve_discrete_are(F.T, H.T, Q, np.array([[nz.aiding_position ** 2]]))
    K = Pm @ H.T / (H @ Pm @ H.T + nz.aiding_position ** 2)
    P = Pm - K @ H @ Pm
    return F, K.ravel(), P


def _bartlett_sd(A, P, row, var, n):
    """Standard deviation of the sample variance of component ``row`` of the AR process e+ = A e
    (+ noise) with stationary covariance P, over n samples (Bartlett)."""
    A, M = np.atleast_2d(A), np.atleast_2d(np.array(P, float))
    g = []
    for _ in range(20000):
        g.append(M[row, row])
        M = A @ M
    g = np.array(g)
    return math.sqrt(2.0 / n * (g[0] ** 2 + 2 * np.sum(g[1:] ** 2)))


@pytest.mark.parametrize("rate, nz", [(240.0, EstimatorNoise(0.35, 0.015, 2e-4, 5e-4)),
                                      (100.0, EstimatorNoise(0.35, 0.015, 0.1, 0.1))])
def test_estimator_errors_have_the_filter_covariance(rate, nz):
    kf = estimator_steady_state(1.0 / rate, nz)
    F, K, P = _posterior(1.0 / rate, nz)
    assert np.allclose(kf["P"], P, rtol=1e-8) and np.allclose(kf["K"], K, rtol=1e-8)
    prof = _profile(OdometrySpec(rate, 0.0, nz))
    sim = FakeSim()
    seconds = 400.0 if rate < 200 else 100.0
    _, out = _run(prof, sim, seconds, seed=11)
    ep, ev, ea = [], [], []
    for _, nm, s, d in out:
        if nm != "odometry":
            continue
        sim.t = s
        C = sim.base_pose()
        ep.append(d.C[:3, 3] - C[:3, 3])
        ev.append(d.V[3:] - np.cross(d.C[:3, 3], d.V[:3]))
        ea.append(log_so3(d.C[:3, :3] @ C[:3, :3].T))
    ep, ev, ea = np.array(ep), np.array(ev), np.array(ea)
    n = ep.size                                                 # three independent axes
    A = (np.eye(2) - np.outer(K, [1.0, 0.0])) @ F
    for vals, row, var in ((ep, 0, P[0, 0]), (ev, 1, P[1, 1])):
        sd = _bartlett_sd(A, P, row, var, n)
        assert abs(np.mean(vals ** 2) - var) < 5 * sd, (row, np.mean(vals ** 2), var, sd)
    a_att, p_att = (1 - kf["k_att"]), kf["p_att"]
    sd = _bartlett_sd(a_att, p_att, 0, p_att, ea.size)
    assert abs(np.mean(ea ** 2) - p_att) < 5 * sd


def test_joint_quantization_motor_encoders_and_drops():
    step, vstep = 2 * math.pi / 4096, 0.229 * 2 * math.pi / 60
    prof = _profile(OdometrySpec(100.0, 0.0, _white()), JointSpec(200.0, 0.005, step, vstep))
    sim = FakeSim()
    suite = SensorSuite(prof, seed=1, size=0.25, gravity=G)
    suite.drop("joints", 0.5, 0.7)
    got = []
    for k in range(1001):
        sim.t = k * DT
        suite.sample(sim.t, sim)
        got += [(s, d) for nm, s, d in suite.delivered(sim.t) if nm == "joints"]
        th, thd = suite.motors(sim)
        assert np.allclose(th / step, np.round(th / step), atol=1e-9) and np.all(np.abs(th - sim.motor_angle()) <= step / 2)
        assert np.allclose(thd / vstep, np.round(thd / vstep), atol=1e-9)
    assert got and not any(0.5 <= s < 0.7 for s, _ in got)
    for s, d in got:
        sim.t = s
        assert np.allclose(d.q / step, np.round(d.q / step), atol=1e-9)
        assert np.all(np.abs(d.q - sim.q()) <= step / 2 + 1e-12)
        assert np.all(np.abs(d.qd - sim.qd()) <= vstep / 2 + 1e-12)
    with pytest.raises(ValueError, match="stream"):
        suite.drop("gps", 0.0, 1.0)


def test_imu_gives_the_mean_rates_and_specific_force():
    """Noise-free IMU on a constant-rate, constant-acceleration motion: gyro = R^T w (exact, body),
    accel = R_1^T (a - g) (the world acceleration is constant; rounding only)."""
    w, a = np.array([0.3, -0.2, 0.5]), np.array([1.0, 0.5, -2.0])
    prof = _profile(OdometrySpec(100.0, 0.0, _white()), imu=ImuSpec(200.0, 0.0, 0.0, 0.0))
    sim = FakeSim(w=w, a=a)
    _, out = _run(prof, sim, 1.0)
    imu = [(s, d) for _, nm, s, d in out if nm == "imu"]
    assert len(imu) >= 198
    for s, d in imu:
        sim.t = s
        R = sim.base_pose()[:3, :3]
        assert np.allclose(d.gyro, R.T @ w, atol=1e-10)          # R^T w = w for rotation about w
        assert np.allclose(d.accel, R.T @ (a - G), atol=1e-9)


def test_same_seed_same_errors_other_seed_others():
    prof = _profile(OdometrySpec(240.0, 0.0, EstimatorNoise(0.35, 0.015, 2e-4, "markers")))
    a = [d.C for _, nm, _, d in _run(prof, FakeSim(), 0.5, seed=5)[1] if nm == "odometry"]
    b = [d.C for _, nm, _, d in _run(prof, FakeSim(), 0.5, seed=5)[1] if nm == "odometry"]
    c = [d.C for _, nm, _, d in _run(prof, FakeSim(), 0.5, seed=6)[1] if nm == "odometry"]
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and not np.array_equal(a[5], c[5])


# ----------------------------------------------------------------------------- the file
def _write(tmp_path, text):
    p = tmp_path / "sensors.yaml"
    p.write_text(text)
    return p


GOOD = """profiles:
  lab:
    odometry: {rate: 240.0, latency: 0.004, noise: {model: white, position: 0.0002, attitude: markers,
               velocity: difference, angular_velocity: 0.015}}
    joints: {rate: 200.0, latency: 0.005, position_step: 0.0015, velocity_step: 0.024}
"""


def test_shipped_file_profiles():
    from geodyn_ros.sim.sensor_file import load_sensor_profiles
    profs = load_sensor_profiles()
    assert list(profs) == ["perfect", "mocap", "onboard"]
    assert profs["perfect"].perfect and not profs["mocap"].perfect
    assert profs["mocap"].odometry.rate == 240.0 and profs["onboard"].odometry.rate == 100.0
    assert profs["onboard"].failsafe.hold == 5.0 and profs["onboard"].failsafe.descent_rate == 0.7


@pytest.mark.parametrize("old, new, line", [
    ("odometry:", "odometri:", "profiles.lab.odometri: unknown key; did you mean 'odometry'?"),
    ("latency: 0.004", "latency: 4", "profiles.lab.odometry.latency: 4 s is a second or more; give seconds "
                                     "(4 ms is 0.004)"),
    ("rate: 240.0", "rate: -240.0", "profiles.lab.odometry.rate: -240.0 is negative; give a positive value"),
    ("rate: 240.0", "rate: fast", "profiles.lab.odometry.rate: expected a finite number, got 'fast'; give a rate "
                                  "in Hz, e.g. 240.0"),
    ("model: white", "model: kalman", "profiles.lab.odometry.noise.model: 'kalman' is not a noise model; give white "
                                      "or estimator"),
    ("attitude: markers", "attitude: marker", "profiles.lab.odometry.noise.attitude: 'marker' is neither a number "
                                              "nor markers; give a standard deviation in rad, or markers"),
    ("position: 0.0002", "position: 2", "profiles.lab.odometry.noise.position: 2 m is outside the plausible range "
                                        "[1e-06, 1] m (1 um is 20 times below the best motion capture (0.02 mm "
                                        "measured); a metre is millimetres written as metres (motion capture 0.2 mm, "
                                        "vision 0.1 m)); give m, e.g. 0.0002"),
    ("position_step: 0.0015", "positon_step: 0.0015", "profiles.lab.joints.positon_step: unknown key; did you mean "
                                                      "'position_step'?"),
])
def test_file_refusals_one_line_each(tmp_path, old, new, line):
    from geodyn_ros.sim.sensor_file import load_sensor_profiles
    p = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ValueError) as exc:
        load_sensor_profiles(p)
    assert str(exc.value) == f"{p}: {line}"


def test_file_refusals_structure(tmp_path):
    from geodyn_ros.sim.sensor_file import load_sensor_profiles, sensor_profile
    assert load_sensor_profiles(_write(tmp_path, GOOD))["lab"].odometry.noise.velocity == "difference"
    cases = {GOOD.replace("    joints:", "    #joints:"): "profiles.lab: has odometry but no joints; give both "
                                                         "(or neither: the exact state)",
             "profile: {}\n": ": profile: unknown key; did you mean 'profiles'?",
             "profiles: {}\n": ": profiles: is empty; give at least one profile (perfect: {})",
             GOOD + "failsafe: {then: land}\n": ": failsafe.then: 'land' is not a failsafe action; give descend or hold"}
    for text, line in cases.items():
        p = _write(tmp_path, text)
        with pytest.raises(ValueError) as exc:
            load_sensor_profiles(p)
        msg = str(exc.value)
        assert msg.startswith(str(p)) and msg.endswith(line.split(": ", 1)[1] if line.startswith(":") else line), msg
        assert "\n" not in msg
    with pytest.raises(ValueError, match=r"profiles.mocapp: no such profile; did you mean 'mocap'\?"):
        sensor_profile("mocapp")


# ----------------------------------------------------------------------------- plausible ranges (issue 51)
ESTIMATOR = """profiles:
  lab:
    odometry: {rate: 240.0, latency: 0.004, noise: {model: estimator, accel_noise: 0.35, gyro_noise: 0.015,
               aiding_position: 0.0002, aiding_attitude: 0.0005}}
    joints: {rate: 200.0, latency: 0.005, position_step: 0.0015, velocity_step: 0.024}
    imu: {rate: 200.0, latency: 0.0, gyro_noise: 0.015, accel_noise: 0.35}
failsafe: {timeout: 0.02, hold: 5.0, then: descend, descent_rate: 0.7, ramp: 1.0}
"""
#: every magnitude of the sensors file: (its text in ESTIMATOR or GOOD, its key path, the RANGES key)
MAGNITUDES = [
    (ESTIMATOR, "rate: 240.0", "profiles.lab.odometry.rate", "rate"),
    (ESTIMATOR, "rate: 200.0, latency: 0.005", "profiles.lab.joints.rate", "rate"),
    (ESTIMATOR, "rate: 200.0, latency: 0.0, gyro", "profiles.lab.imu.rate", "rate"),
    (ESTIMATOR, "accel_noise: 0.35, gyro", "profiles.lab.odometry.noise.accel_noise", "accel_noise"),
    (ESTIMATOR, "gyro_noise: 0.015,\n", "profiles.lab.odometry.noise.gyro_noise", "gyro_noise"),
    (ESTIMATOR, "aiding_position: 0.0002", "profiles.lab.odometry.noise.aiding_position", "aiding_position"),
    (ESTIMATOR, "aiding_attitude: 0.0005", "profiles.lab.odometry.noise.aiding_attitude", "aiding_attitude"),
    (ESTIMATOR, "position_step: 0.0015", "profiles.lab.joints.position_step", "position_step"),
    (ESTIMATOR, "velocity_step: 0.024", "profiles.lab.joints.velocity_step", "velocity_step"),
    (ESTIMATOR, "gyro_noise: 0.015, accel", "profiles.lab.imu.gyro_noise", "gyro_noise"),
    (ESTIMATOR, "accel_noise: 0.35}", "profiles.lab.imu.accel_noise", "accel_noise"),
    (ESTIMATOR, "timeout: 0.02", "failsafe.timeout", "timeout"),
    (ESTIMATOR, "hold: 5.0", "failsafe.hold", "hold"),
    (ESTIMATOR, "descent_rate: 0.7", "failsafe.descent_rate", "descent_rate"),
    (ESTIMATOR, "ramp: 1.0", "failsafe.ramp", "ramp"),
    (GOOD, "position: 0.0002", "profiles.lab.odometry.noise.position", "position"),
    (GOOD, "angular_velocity: 0.015", "profiles.lab.odometry.noise.angular_velocity", "angular_velocity"),
    (GOOD.replace("velocity: difference", "velocity: 0.01"), "velocity: 0.01", "profiles.lab.odometry.noise.velocity",
     "velocity"),
    (GOOD.replace("attitude: markers", "attitude: 0.001"), "attitude: 0.001", "profiles.lab.odometry.noise.attitude",
     "attitude"),
]


def _value(text, old, key, v):
    """``text`` with the value of ``old`` (``name: value...``) replaced by ``v`` (YAML repr of a float)."""
    name, rest = old.split(": ", 1)
    tail = rest[len(rest.split(",")[0].split("}")[0]):]
    assert old in text, old
    return text.replace(old, f"{name}: {v:.17e}{tail}", 1)    # a YAML 1.1 float (a dot, a signed exponent)


@pytest.mark.parametrize("text, old, key, rng", MAGNITUDES, ids=[m[2] for m in MAGNITUDES])
def test_every_magnitude_has_a_plausible_range(tmp_path, text, old, key, rng):
    """Each magnitude of the sensors file: its range's ends load, a value 1 % outside either end and
    the extremes the attack used (1e-300, 1e300) are refused in one line naming the key, the range
    and its reason (no OverflowError, no ZeroDivisionError: the loader refuses before any use)."""
    from geodyn_ros.sim.sensor_file import RANGES, load_sensor_profiles
    r = RANGES[rng]
    assert 0 < r.lo < r.hi and r.why
    for v in (r.lo, r.hi):
        load_sensor_profiles(_write(tmp_path, _value(text, old, key, v)))
    for v in (r.lo * 0.99, r.hi * 1.01, 1e-300, 1e300):
        p = _write(tmp_path, _value(text, old, key, v))
        with pytest.raises(ValueError) as exc:
            load_sensor_profiles(p)
        line = str(exc.value)
        assert line.startswith(f"{p}: {key}: ") and "\n" not in line, line
        assert f"is outside the plausible range [{r.lo:g}, {r.hi:g}]" in line and r.why in line, line


@pytest.mark.parametrize("key", ["noise.accel_noise", "noise.gyro_noise", "noise.aiding_position",
                                 "noise.aiding_attitude", "failsafe.hold"])
def test_the_attack_values_are_refused_in_one_line(tmp_path, key):
    """The reproducers of issue 51: estimator noises of 1e-300 (before: a ZeroDivisionError 30 s into
    the flight) and ``failsafe.hold: 1.0e+300`` (before: accepted) are refused by the loader; so is
    the estimator noise 0 (its square divides)."""
    from geodyn_ros.sim.sensor_file import load_sensor_profiles
    name = key.split(".")[1]
    old = next(m[1] for m in MAGNITUDES if m[2].endswith(f"odometry.{key}") or m[2] == key)
    for v in ("1.0e-300", "0.0") if name != "hold" else ("1.0e+300",):
        text = ESTIMATOR.replace(old, f"{name}: {v}" + old[len(old.split(",")[0].split("}")[0]):], 1)
        p = _write(tmp_path, text)
        with pytest.raises(ValueError) as exc:
            load_sensor_profiles(p)
        assert str(exc.value).startswith(f"{p}: ") and f".{name}: " in str(exc.value), str(exc.value)


def test_a_tiny_rate_is_refused_by_geodyn_fly_in_one_line(tmp_path, capsys):
    """``rate: 1.0e-300`` in a sensors file (before: an OverflowError traceback): ``geodyn_fly
    --sensing`` refuses it in one line, exit 2, before any simulation; the stream itself refuses an
    infinite period too (the API, without the file)."""
    from geodyn_ros.loops import fly
    p = _write(tmp_path, GOOD.replace("rate: 240.0", "rate: 1.0e-300"))
    assert fly.main(["--vehicle", "iris", "--duration", "0.1", "--sensing", "lab", "--sensors", str(p)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"geodyn_fly: refused: {p}: profiles.lab.odometry.rate: 1e-300 Hz is outside the "
                          "plausible range [1, 10000] Hz"), err
    prof = _profile(OdometrySpec(1e-300, 0.0, WhiteNoise(0.0, 0.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match=r"^odometry.rate: expected a finite rate > 0 \[Hz\], got 1e-300$"):
        SensorSuite(prof, seed=0)


def _fixed_point_residual(period, nz, kf):
    """The largest entry of ``P' - P``, relative to ``sqrt(P_ii P_jj)``, where ``P'`` is one predict
    and update of the Kalman recursion from the returned posterior ``P``, computed EXACTLY (rational
    arithmetic on the float inputs): independent of the closed form, and free of the cancellation
    the recursion suffers in floats when the process noise dwarfs the posterior (tracking index
    1e8: Pm ~ 1e16 P)."""
    from fractions import Fraction as Fr
    T, a, R = Fr(period), Fr(nz.accel_noise), Fr(nz.aiding_position) ** 2
    P = [[Fr(float(x)) for x in row] for row in kf["P"]]
    F, G = ((1, T), (0, 1)), (T * T / 2, T)
    FP = [[sum(F[i][k] * P[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
    Pm = [[sum(FP[i][k] * F[j][k] for k in range(2)) + G[i] * G[j] * a * a for j in range(2)] for i in range(2)]
    K = [Pm[i][0] / (Pm[0][0] + R) for i in range(2)]
    Pn = [[Pm[i][j] - K[i] * Pm[0][j] for j in range(2)] for i in range(2)]
    qa, ra, p = Fr(nz.gyro_noise * period) ** 2, Fr(nz.aiding_attitude) ** 2, Fr(kf["p_att"])
    m = p + qa
    att = abs(float((m * ra / (m + ra) - p) / p))
    return max(abs(float(Pn[i][j] - P[i][j])) / math.sqrt(float(P[i][i] * P[j][j]))
               for i in range(2) for j in range(2)), att


def test_estimator_steady_state_at_every_corner_of_the_ranges():
    """The closed-form steady state at the 32 corners of the ranges (rate 1 Hz and 10 kHz, each
    estimator noise at both ends: tracking index 1e-11 to 1e8) is the Riccati recursion's fixed
    point, checked exactly: residual below 1e-14 of the covariance's scale (measured: 2e-16, the
    rounding of P itself). Before, the recursion was iterated (at most 100,000 times): at a tracking
    index of 1e8 the velocity variance it returned was 124 times the steady state's, and 1e-300
    noises divided zero by zero. P is positive definite, the gains in (0, 1] (position) and
    (0, 2 / T] (velocity). Between the corners, the closed form agrees with scipy's DARE
    (:func:`_posterior`) to 1e-8 relative."""
    import itertools
    from geodyn_ros.sim.sensor_file import RANGES
    ends = [(RANGES[k].lo, RANGES[k].hi) for k in ("accel_noise", "gyro_noise", "aiding_position",
                                                   "aiding_attitude")]
    for rate, *noise in itertools.product((RANGES["rate"].lo, RANGES["rate"].hi), *ends):
        nz = EstimatorNoise(*noise)
        kf = estimator_steady_state(1.0 / rate, nz)
        res, att = _fixed_point_residual(1.0 / rate, nz, kf)
        assert res < 1e-14 and att < 1e-14, (rate, nz, res, att)
        assert np.all(np.linalg.eigvalsh(kf["P"]) > 0) and np.isfinite(kf["P"]).all()
        assert 0 < kf["K"][0] <= 1 and 0 < kf["K"][1] <= 2 * rate and 0 < kf["k_att"] <= 1, kf
    for rate, nz in ((240.0, EstimatorNoise(0.35, 0.015, 2e-4, 5e-4)), (100.0, EstimatorNoise(0.35, 0.015, 0.1, 0.1)),
                     (1000.0, EstimatorNoise(3.0, 0.1, 1e-3, 0.01)), (10.0, EstimatorNoise(0.05, 0.001, 0.5, 0.2))):
        kf = estimator_steady_state(1.0 / rate, nz)
        _, K, P = _posterior(1.0 / rate, nz)
        assert np.allclose(kf["P"], P, rtol=1e-8, atol=0) and np.allclose(kf["K"], K, rtol=1e-8, atol=0)
