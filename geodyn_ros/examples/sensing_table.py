"""What each feedforward order is worth when the controller faces real sensing: the table that tells the truth.

The loop tables (``make demo``) give the controller the exact MuJoCo state at every step. Here
every row reads sensor streams instead (:mod:`geodyn_ros.sim.sensors`, profiles of
``config/sensors.yaml``): the base odometry at its rate, latency and estimator error, the joint
encoders over a servo bus, quantized; and every flight starts on the ground, takes off, flies the
reference, and lands (:mod:`geodyn_ros.loops.sensed`; the scored window is the flight only).

Vehicles: ``actuated`` (the TiltHex demo vehicle on Table 3), ``underactuated`` (the collinear
hexarotor demo vehicle on the figure eight) and ``borinot_flying_arm_2`` (example-robot-data's
Borinot, gains designed from its model by ``geodyn_fly``'s design). Rows: every level of the
vehicle's controller (``pd``/``rigid``, ``ff0``, ``ff1``, ``ff2``; ``pd`` has no gravity
compensation) and, with ``--baselines``, the baselines of :mod:`geodyn_ros.control.baselines`
(:data:`BASELINE_ROWS`: ``pd_g`` PD plus gravity and ``indi`` on the TiltHex, ``indi`` on the
hexarotor), shown beside the levels and compared with ``ff0``; ``--rows`` runs a subset. Conditions: ``perfect`` (exact
state, ground contact on), ``mocap``, ``onboard``; ``--latency-sweep`` adds, for one vehicle, the
motion-capture profile with 5, 10 and 20 ms of odometry latency.

Fairness. For one vehicle every row and condition has the same gains, the same seed (the sensor
errors of a condition are the same draw for every level), the same start on the ground and the
same scored window. The gains are the vehicle's (its file's, or designed from its model); a
vehicle whose rotation loop cannot take the delay of the harshest main condition has that loop's
bandwidth lowered, for every row and condition alike, until its delay margin (the small model
:func:`delay_margin`) is :data:`MARGIN_RATIO` times that delay, and the table says so.

The small model (:func:`sensing_floor`): the sensing errors act on the controller as measurement
errors, equal to torque and force errors of the same loop; pushed through the linearised closed
loop (the error budget's, :func:`geodyn_ros.examples.underactuated_budget.closed_loop_response`,
and the PD axis with the rotor lag for a fully actuated base) they give an error *floor* that no
feedforward removes: the estimator's own error (its Kalman filter's correlated error, simulated)
and the held twist's lag (the ``twist`` input rule propagates the pose at the sample's twist, which
is ``age`` seconds old: a velocity error of the acceleration times the mean age; the ``imu`` rule,
the default where the profile has an IMU stream, holds it only over the newest IMU sample's age,
:func:`rule_ages`; ``--rule twist`` gives the tables of before, bit for bit). A row's predicted
error is then ``sqrt(perfect_row^2 + floor^2)``: the feedforward's gain is bounded by the floor.

Usage::

    python -m geodyn_ros.examples.sensing_table                     # the whole table (tens of minutes)
    python -m geodyn_ros.examples.sensing_table --vehicles underactuated --conditions perfect,mocap --duration 3
    python -m geodyn_ros.examples.sensing_table --json-out out/sensing.json --jobs 2
    python -m geodyn_ros.examples.sensing_table --vehicles underactuated --conditions mocap,mocap_real --rule twist
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

import numpy as np

from geodyn_ros.control.delay_margin import MARGIN_RATIO as _MARGIN_RATIO
from geodyn_ros.control.delay_margin import delay_margin, fit_rotation

__all__ = ["VEHICLES", "MAIN_CONDITIONS", "SWEEP_MS", "MARGIN_RATIO", "condition_profile", "loop_delay",
           "delay_margin", "fit_gains", "sensing_floor", "rule_ages", "run_table", "format_tables", "main"]

VEHICLES = ("actuated", "underactuated", "borinot_flying_arm_2")
MAIN_CONDITIONS = ("perfect", "mocap", "onboard")
#: the odometry latencies [ms] of the latency sweep (the mocap profile otherwise)
SWEEP_MS = (5, 10, 20)
#: a loop's delay margin must be this many times the loop delay of the harshest main condition
#: (the rule and its reason: :mod:`geodyn_ros.control.delay_margin`)
MARGIN_RATIO = _MARGIN_RATIO
_LEVELS = {"actuated": ("pd", "ff0", "ff1", "ff2"), "underactuated": ("rigid", "ff0", "ff1", "ff2")}
#: the baseline rows of ``--baselines`` (geodyn_ros.control.baselines): PD plus gravity, INDI
BASELINE_ROWS = {"actuated": ("pd_g", "indi"), "underactuated": ("indi",)}


def condition_profile(name: str, sensors=None):
    """The :class:`~geodyn_ros.sim.sensors.SensorProfile` of a condition: a profile's name, or
    ``"mocap+<n>ms"`` (the mocap profile with ``n`` ms of odometry latency)."""
    from geodyn_ros.sim.sensor_file import sensor_profile
    if "+" in name:
        base, lat = name.split("+", 1)
        if not lat.endswith("ms"):
            raise ValueError(f"conditions: {name!r}: expected <profile>+<n>ms")
        return sensor_profile(base, sensors).with_latency(float(lat[:-2]) * 1e-3, name=name)
    return sensor_profile(name, sensors)


def loop_delay(profile, dt: float = 1e-3) -> float:
    """The delay [s] the odometry puts in the loop: ``latency + 1 / (2 rate)`` (the mean age of the
    sample in use) plus the loop's own ``1.5 dt`` (a command acts one step later, held over a step)."""
    od = profile.odometry
    return 1.5 * dt + (0.0 if od is None else od.latency + 0.5 / od.rate)


def fit_gains(gains, kind, inertias, lag, delay, ratio=MARGIN_RATIO):
    """``(gains, factor, margin)``: ``gains`` with the rotation loop's bandwidth times ``factor``
    (``kp x factor^2``, ``kd x factor``: the damping kept) for the largest factor in 1, 0.95, 0.9,
    ... whose smallest axis delay margin is at least ``ratio x delay``; ``margin`` [s] that margin
    (:func:`geodyn_ros.control.delay_margin.fit_rotation`; ``kind`` is not used: both controllers'
    rotation gains are per base axis or one scalar, broadcast)."""
    return fit_rotation(gains, inertias, lag, delay, ratio)


# ----------------------------------------------------------------------------- the vehicles
class _Vehicle:
    """What a row needs: the run function and its keywords, the kind, model and inertias."""

    def __init__(self, name: str):
        from geodyn_ros.control.gain_design import model_inertias
        self.name = name
        if name == "actuated":
            from geodyn_ros.control.feedback import TrackingGains
            from geodyn_ros.control.rotors import load_actuation_config
            from geodyn_ros.loops.actuated import simulate_actuated, tilthex_source
            self.cfg = load_actuation_config()
            self.model = self.cfg.load_model(tilthex_source())
            self.run, self.kind, self.gains, self.kw = simulate_actuated, "actuated", TrackingGains(), {}
            self.what, self.levels = "TiltHex on Table 3, base error", _LEVELS["actuated"]
        elif name == "underactuated":
            from geodyn_ros.control.flatness import FlatnessGains
            from geodyn_ros.control.rotors import load_actuation_config
            from geodyn_ros.loops.underactuated import hexarotor_source, simulate_underactuated
            self.cfg = load_actuation_config("hexarotor")
            self.model = self.cfg.load_model(hexarotor_source())
            self.run, self.kind, self.gains, self.kw = simulate_underactuated, "flatness", FlatnessGains(), {}
            self.what, self.levels = "collinear hexarotor on the figure eight, CoM error", _LEVELS["underactuated"]
        else:
            from geodyn_ros.loops.fly import LEVELS, prepare, resolve
            prep = prepare(*resolve(None, name))
            self.cfg, self.model = prep["cfg"], prep["model"]
            self.kind = "flatness" if prep["rank"] == 4 else "actuated"
            if self.kind == "flatness":
                from geodyn_ros.loops.underactuated import simulate_underactuated as run
            else:
                from geodyn_ros.loops.actuated import simulate_actuated as run
            self.run, self.gains = run, prep["design"].gains
            self.kw = dict(config=prep["cfg"], source=prep["urdf"], timestep=float(prep["cfg"].control_period),
                           reference=prep["reference"])
            self.what = f"{'CoM' if self.kind == 'flatness' else 'base'} error, geodyn_fly's figure eight"
            self.levels = LEVELS[prep["rank"]]
        self.inertias = model_inertias(self.model)
        self.lag = float(np.max(self.cfg.rotors.time_constant_up))
        self.gains0 = self.gains

    def design(self, delay: float) -> str:
        """Lower the rotation loop for ``delay`` [s] if it must (module docstring); the one line saying so."""
        self.gains, f, m = fit_gains(self.gains0, self.kind, self.inertias, self.lag, delay)
        kp = np.atleast_1d(self.gains.kp_rotation)
        if f == 1.0:
            return f"gains: the vehicle's; rotation delay margin {m * 1e3:.1f} ms >= {MARGIN_RATIO:g} x {delay * 1e3:.1f} ms"
        # (within the tables' 100 columns for any value: kp_rotation in N m/rad, the margin and delay in ms)
        return (f"gains: the vehicle's, rotation x {f:g} (kp_rotation {kp.max():.3g}): delay margin "
                f"{m * 1e3:.1f} >= {MARGIN_RATIO:g} x {delay * 1e3:.1f} ms")


def _row(args):
    """One row in a worker: (vehicle, level, condition, duration, seed, sensors, ground, delay, preroll,
    rule) -> metrics."""
    vname, level, cond, duration, seed, sensors, ground, delay, preroll, rule = args
    from geodyn_ros.loops.sensed import Sensing
    v = _VEHICLE_CACHE.get(vname) or _VEHICLE_CACHE.setdefault(vname, _Vehicle(vname))
    v.design(delay)
    prof = condition_profile(cond, sensors)
    s = Sensing(prof, seed=seed, ground=ground, log=None, rule=_rule_for(rule, prof))
    res = v.run(level, duration, gains=v.gains, sensing=s, **v.kw, **({} if preroll is None else {"preroll": preroll}))
    r = res.log.rms()
    m = {"position_rms_m": r["position_m"], "position_max_m": r["max_position_m"], "attitude_rms_deg": r["attitude_deg"],
         "joint_rms_deg": r["joint_deg"], "rotor_speed_peak_rad_s": float(res.rotor_speed_peak),
         "rotor_saturations": int(res.rotor_saturations), "joint_saturations": int(res.motor_saturations)}
    if res.diverged:
        m = {"diverged": res.diverged}
    return vname, level, cond, m


_VEHICLE_CACHE: dict = {}


def _rule_for(rule, profile):
    """The input rule of a condition: ``rule`` (None: the default, ``imu`` where the profile has an IMU
    stream); an IMU rule on a profile without an IMU falls back to ``twist``."""
    if rule is None or profile.perfect:
        return None
    return rule if rule == "twist" or profile.imu is not None else "twist"


def rule_ages(profile, rule, dt: float = 1e-3) -> tuple:
    """The mean ages [s] of the linear and the angular velocity the input ``rule`` holds (the small
    model's held-twist lag): ``twist``: the sample's, ``latency + 1 / (2 rate)`` for both; ``imu``: the
    newest IMU sample's, ``imu latency + T / 2`` (linear) and ``+ T`` (angular: the gyro's mean over its
    interval is half a period older); ``imu_model``: none (the model's acceleration error, not modelled)."""
    od, im = profile.odometry, profile.imu
    rule = rule or ("imu" if im is not None else "twist")
    if rule == "twist" or im is None:
        age = od.latency + 0.5 / od.rate
        return age, age
    if rule == "imu":
        T = 1.0 / im.rate
        return im.latency + 0.5 * T, im.latency + T
    return 0.0, 0.0


# ----------------------------------------------------------------------------- the small model
def _estimator_errors(profile, seconds, dt, rng):
    """Position, velocity and attitude errors (N, 3) of the odometry's error model, sampled at its
    rate, held to the step ``dt`` (white models: independent draws; estimator: the filter's errors)."""
    from geodyn_ros.sim.sensors import (EstimatorNoise, actual_noise, estimator_steady_state, estimator_true_covariance,
                                        marker_attitude_sigma)
    od = profile.odometry
    n = int(seconds * od.rate)
    nz = od.noise
    if isinstance(nz, EstimatorNoise):
        if nz.aiding_attitude == "markers":
            nz = replace(nz, aiding_attitude=marker_attitude_sigma(nz.aiding_position, 0.25))
        kf = estimator_steady_state(1.0 / od.rate, nz)
        tr, P, p_att = nz, kf["P"], kf["p_att"]
        if nz.actual is not None:                 # the filter tuned with nz, fed its actual noises
            tr = actual_noise(nz, 0.25)
            cov = estimator_true_covariance(1.0 / od.rate, nz, tr)
            P, p_att = cov["P"], cov["p_att"]
        e = np.linalg.cholesky(P) @ rng.standard_normal((2, 3))
        a = math.sqrt(p_att) * rng.standard_normal(3)
        ep, ev, ea = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
        for k in range(n):
            em = kf["F"] @ e + np.outer(kf["G"], tr.accel_noise * rng.standard_normal(3))
            e = em - np.outer(kf["K"], em[0]) + np.outer(kf["K"], tr.aiding_position * rng.standard_normal(3))
            am = a + tr.gyro_noise / od.rate * rng.standard_normal(3)
            a = (1 - kf["k_att"]) * am + kf["k_att"] * tr.aiding_attitude * rng.standard_normal(3)
            ep[k], ev[k], ea[k] = e[0], e[1], a
    else:
        ep = nz.position * rng.standard_normal((n, 3))
        ev = (np.diff(ep, axis=0, prepend=ep[:1]) * od.rate if nz.velocity == "difference"
              else float(nz.velocity) * rng.standard_normal((n, 3)))
        att = marker_attitude_sigma(nz.position, 0.25) if nz.attitude == "markers" else float(nz.attitude)
        ea = att * rng.standard_normal((n, 3))
    hold = np.minimum((np.arange(int(seconds / dt)) * dt * od.rate).astype(int), n - 1)
    return ep[hold], ev[hold], ea[hold]


def _pd_axis(u, dt, m, kp, kd, lag):
    """x (N,) of ``m x'' = f``, ``lag f' = u - kp x - kd x' - f`` (the rotors' lag), for u (N,)."""
    from scipy.signal import StateSpace, lsim
    A = np.array([[0, 1, 0], [0, 0, 1.0 / m], [-kp / lag, -kd / lag, -1.0 / lag]])
    B = np.array([[0], [0], [1.0 / lag]])
    return lsim(StateSpace(A, B, np.array([[1.0, 0, 0]]), np.zeros((1, 1))), u, np.arange(len(u)) * dt)[1]


def sensing_floor(vehicle: _Vehicle, profile, *, seconds=60.0, dt=2e-3, seed=0, reference_accel=None,
                  rule="twist") -> dict:
    """The error floor [m] of the vehicle's position (CoM or base) loop under ``profile`` (module
    docstring): ``{"noise": RMS from the estimator's errors, "lag": RMS from the held twist, "floor":
    both}``. ``reference_accel``: ``(a (N, 3), alpha (N, 3))`` the base's linear and angular
    accelerations along the reference sampled at ``dt`` (the held twist's error is ``-age x`` them,
    ``age`` the input ``rule``'s, :func:`rule_ages`; None: the default rule), or None (no lag part).
    The estimator's errors are its filter's fed the actual noises (the estimator model's ``actual``;
    its drift, scale, tilt, the IMU's own noise and biases, jitter and dropouts are not in this
    model). The measurement errors become force and
    torque errors of the loops:
    ``-(kp n_x + kd n_v)`` on the position, ``-(kR n_th + kW n_w)`` on the attitude, and for a collinear
    vehicle the position's through the commanded tilt (``kR / (m g)``)."""
    if profile.odometry is None:
        return {"noise": 0.0, "lag": 0.0, "floor": 0.0}
    g = vehicle.gains
    m = vehicle.inertias["mass"]
    rng = np.random.default_rng(seed)
    ep, ev, ea = _estimator_errors(profile, seconds, dt, rng)
    age_v, age_w = rule_ages(profile, rule)
    parts = {"noise": _respond(vehicle, g, m, ep, ev, ea, 0.0 * ea, dt), "lag": 0.0}
    if reference_accel is not None:
        a, alpha = reference_accel
        parts["lag"] = _respond(vehicle, g, m, 0.0 * a, -age_v * a, 0.0 * a, -age_w * alpha, dt)
    parts["floor"] = math.hypot(parts["noise"], parts["lag"])
    return parts


def _respond(vehicle, g, m, nx, nv, nth, nw, dt):
    """RMS [m] (3-D, after the first quarter) of the position error the measurement errors cause."""
    kx = float(np.max(g.kp_position))
    kv = float(np.max(g.kd_position))
    kR = np.broadcast_to(np.asarray(g.kp_rotation, float), (3,))
    kW = np.broadcast_to(np.asarray(g.kd_rotation, float), (3,))
    N = len(nx)
    keep = slice(N // 4, None)
    if vehicle.kind == "flatness":
        from geodyn_ros.examples.underactuated_budget import closed_loop_response
        T0 = m * 9.81
        e = np.zeros((N, 4))
        e[:, 0] = -(kx * nx[:, 2] + kv * nv[:, 2])
        # body x torque moves the CoM along y (and the tilt command from y); body y: along x
        e[:, 1] = -(kR[0] * nth[:, 0] + kW[0] * nw[:, 0]) - kR[0] * (kx * nx[:, 1] + kv * nv[:, 1]) / T0
        e[:, 2] = -(kR[1] * nth[:, 1] + kW[1] * nw[:, 1]) + kR[1] * (kx * nx[:, 0] + kv * nv[:, 0]) / T0
        x = closed_loop_response(e, dt, mass=m, inertia=np.diag(vehicle.inertias["inertia_com"]),
                                 T_lag=vehicle.lag, gains=g)
    else:
        x = np.stack([_pd_axis(-(kx * nx[:, i] + kv * nv[:, i]), dt, m, kx, kv, vehicle.lag) for i in range(3)],
                     axis=1)
    return float(np.sqrt(np.mean(np.sum(x[keep] ** 2, axis=1))))


def _reference_accel(vehicle: _Vehicle, seconds: float, dt: float):
    """``(a, alpha)`` (N, 3): the rates of the base's spatial twist along the vehicle's reference, as the
    velocity of the point the loop controls sees them: ``a = v' + w' x c`` (c the CoM, or the base
    origin for the actuated vehicle) and ``alpha = w'``; a twist held ``age`` seconds errs by ``-age`` them."""
    import geodyn_ros as gd
    ts = np.arange(int(seconds / dt)) * dt
    a, al = np.zeros((len(ts), 3)), np.zeros((len(ts), 3))
    if vehicle.name == "actuated":
        from geodyn_ros.loops.actuated import scaled_reference
        ref = scaled_reference(1.0)
        for i, t in enumerate(ts):
            r = ref(t, 0)
            V, p = r.base_twist, r.base_pose[:3, 3]
            al[i] = V[1, :3]
            a[i] = V[1, 3:] + np.cross(V[1, :3], p)       # the held twist's velocity error at the base origin
        return a, al
    if vehicle.name == "underactuated":
        from geodyn_ros.trajectories import figure_eight_reference as ref
    else:
        ref = vehicle.kw["reference"]
    for i, t in enumerate(ts):
        r = ref(t, 1)
        f = gd.flat_inverse_dynamics(vehicle.model, r.com, r.yaw, r.q, 1)
        V, c = f.base_twist, r.com[0]
        al[i] = V[1, :3]
        a[i] = V[1, 3:] + np.cross(V[1, :3], c)          # the base-fixed point at the CoM (spatial twist rate)
    return a, al


# ----------------------------------------------------------------------------- the table
def run_table(vehicles=VEHICLES, conditions=MAIN_CONDITIONS, *, sweep=None, duration=10.0, seed=0, sensors=None,
              ground=True, jobs=1, progress=None, preroll=None, rule=None, levels=None, baselines=False,
              rows=None) -> dict:
    """``{"vehicles": {name: {"what", "gains", "rows": {condition: {level: metrics}}, "floors":
    {condition: {...}}}}, "duration_s", "seed", "ground", "rule"}``; ``sweep``: the vehicle that also gets
    the latency sweep (``mocap+5ms`` ... of :data:`SWEEP_MS`), or None. progress: ``f(line)`` per row;
    preroll [s]: without ground, the loops' pre-roll (None: theirs, 5 s); rule: the input rule
    (:data:`geodyn_ros.control.sensing.RULES`; None: ``imu`` where the profile has an IMU stream, the
    ``twist`` rule of the tables before it otherwise); levels: a subset of the vehicles' levels (None:
    all). baselines: also the vehicle's baseline rows (:data:`BASELINE_ROWS`: PD plus gravity, INDI),
    shown beside the levels and never in the ratios of consecutive orders; rows: run only these rows
    (None: every one)."""
    from geodyn_ros.control.sensing import RULES
    if rule is not None and rule not in RULES:
        raise ValueError(f"rule: expected one of {', '.join(RULES)}, got {rule!r}")
    out = {"duration_s": duration, "seed": seed, "ground": ground, "rule": rule or "default", "vehicles": {}}
    tasks = []
    for vn in vehicles:
        v = _VEHICLE_CACHE.get(vn) or _VEHICLE_CACHE.setdefault(vn, _Vehicle(vn))
        conds = list(conditions) + ([f"mocap+{ms}ms" for ms in SWEEP_MS] if sweep == vn else [])
        delay = max(loop_delay(condition_profile(c, sensors)) for c in conditions)
        note = v.design(delay)
        acc = _reference_accel(v, 30.0, 2e-3)
        floors = {}
        for c in conds:
            prof = condition_profile(c, sensors)
            fl = sensing_floor(v, prof, seconds=30.0, seed=seed, reference_accel=acc,
                               rule=None if prof.perfect else (_rule_for(rule, prof) or None))
            floors[c] = fl
        lvs = [lv for lv in v.levels if levels is None or lv in levels]
        base = list(BASELINE_ROWS.get(vn, ())) if baselines else []
        out["vehicles"][vn] = {"what": v.what, "gains": note, "levels": lvs, "conditions": conds,
                               "floors": floors, "rows": {c: {} for c in conds}, "baselines": base}
        tasks += [(vn, lv, c, duration, seed, sensors, ground, delay, preroll, rule) for c in conds
                  for lv in lvs + base if rows is None or lv in rows]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(jobs) as pool:
            results = pool.imap_unordered(_row, tasks)
            for vn, lv, c, m in results:
                out["vehicles"][vn]["rows"][c][lv] = m
                if progress:
                    progress(_progress_line(vn, lv, c, m))
    else:
        for t in tasks:
            vn, lv, c, m = _row(t)
            out["vehicles"][vn]["rows"][c][lv] = m
            if progress:
                progress(_progress_line(vn, lv, c, m))
    return out


def _progress_line(vn, lv, c, m):
    if "diverged" in m:
        return f"  {vn} {c} {lv}: diverged: {m['diverged']}"
    return f"  {vn} {c} {lv}: position RMS {m['position_rms_m']:.2e} m, joints {m['joint_rms_deg']:.2e} deg"


def _cell(m, key):
    if m is None:
        return "-"
    if "diverged" in m:
        return "diverged"
    return f"{m[key]:.2e}"


def format_tables(obj: dict) -> str:
    """The text of :func:`run_table`'s object, within 100 columns: per vehicle, position RMS and
    joint RMS per level (rows) and condition (columns), the clip counts, the small model's floor and
    predicted ff2, and what each order is worth (the ratios of consecutive levels)."""
    from geodyn_ros.loops.report import text_table
    start = "a take-off from the ground" if obj["ground"] else "a pre-roll in flight"
    lines = [f"scored {obj['duration_s']:g} s per row after {start}; seed {obj['seed']}; input rule "
             f"{obj.get('rule', 'twist')}",
             "per vehicle: the same gains, seed, start and scored window for every row and condition"]
    for vn, v in obj["vehicles"].items():
        conds, levels, rows = v["conditions"], v["levels"], v["rows"]
        shown = levels + list(v.get("baselines", ()))
        lines += ["", f"{vn}: {v['what']}", v["gains"]]
        for key, title in (("position_rms_m", "position RMS [m]"), ("joint_rms_deg", "joint RMS [deg]")):
            cols = [("level", "", 5)] + [(c, "[m]" if key == "position_rms_m" else "[deg]", 8) for c in conds]
            body = [[lv] + [_cell(rows[c].get(lv), key) for c in conds] for lv in shown]
            legend = []   # one entry per row label the table prints beyond the levels
            if key == "position_rms_m":
                body.append(["floor"] + [f"{v['floors'][c]['floor']:.2e}" for c in conds])
                legend.append("floor: the small model's sensing floor")
                ff2 = levels[-1]
                if "perfect" in conds:   # the predicted row needs the perfect-sensing row
                    pred = []
                    for c in conds:
                        p = rows["perfect"].get(ff2)
                        pred.append("-" if p is None or "diverged" in p else
                                    f"{math.hypot(p['position_rms_m'], v['floors'][c]['floor']):.2e}")
                    body.append([f"{ff2}~"] + pred)
                    legend.append(f"{ff2}~: sqrt(perfect^2 + floor^2), the {ff2} row it predicts")
            heads = [f"{title} per level and sensing" + (f" ({legend[0]}" if legend else "")]
            heads += [f"  {entry}" for entry in legend[1:]]
            lines += [h + (";" if i < len(legend) - 1 else ")" if legend else "") for i, h in enumerate(heads)]
            lines.append(text_table(cols, body))
        clips = [[lv] + [("-" if rows[c].get(lv) is None or "diverged" in rows[c][lv] else
                          f"{rows[c][lv]['rotor_saturations']}/{rows[c][lv]['joint_saturations']}") for c in conds]
                 for lv in shown]
        lines += ["clipped commands (rotor/joint, per rotor and step)",
                  text_table([("level", "", 5)] + [(c, "rot/jnt", 8) for c in conds], clips)]
        parts = ", ".join(f"{c} {v['floors'][c]['noise']:.1e}/{v['floors'][c]['lag']:.1e}" for c in conds
                          if c != "perfect")
        if parts:
            lines.append(f"floor parts, estimator noise / held-twist lag [m]: {parts}")
        worth = []
        for c in conds:
            r = rows[c]
            ok = [lv for lv in levels if lv in r and "diverged" not in r[lv]]
            if len(ok) == len(levels) and len(levels) > 1:       # one level (--levels ff2): no ratio
                ratios = ", ".join(f"{a}/{b} {r[a]['position_rms_m'] / r[b]['position_rms_m']:.3g}"
                                   for a, b in zip(levels, levels[1:]))
                jr = r[levels[-2]]["joint_rms_deg"] / max(r[levels[-1]]["joint_rms_deg"], 1e-300)
                worth.append(f"  {c}: position {ratios}; joints {levels[-2]}/{levels[-1]} {jr:.3g}")
        lines += ["what each order is worth (ratios of consecutive levels):"] + worth
        if v.get("baselines"):
            lines.append("the baselines against ff0 (pd: no gravity compensation; pd_g: PD plus gravity; indi: INDI):")
            for c in conds:
                r = rows[c]
                ok = [b for b in v["baselines"] if b in r and "diverged" not in r[b]]
                if "ff0" in r and "diverged" not in r["ff0"] and ok:
                    lines.append(f"  {c}: " + ", ".join(f"{b}/ff0 {r[b]['position_rms_m'] / r['ff0']['position_rms_m']:.3g}"
                                                        for b in ok))
        for c in conds:
            for lv in shown:
                m = rows[c].get(lv)
                if m and "diverged" in m:
                    lines.append(f"  {c} {lv} diverged: {m['diverged']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vehicles", default=",".join(VEHICLES), help=f"comma-separated subset of {','.join(VEHICLES)}")
    ap.add_argument("--conditions", default=",".join(MAIN_CONDITIONS),
                    help="comma-separated sensor profiles (default perfect,mocap,onboard)")
    ap.add_argument("--latency-sweep", default=None, metavar="VEHICLE",
                    help=f"also fly this vehicle under mocap with {'/'.join(map(str, SWEEP_MS))} ms of odometry latency")
    ap.add_argument("--duration", type=float, default=10.0, help="scored seconds per row (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sensor streams (default 0)")
    ap.add_argument("--sensors", default=None, help="the sensors file (default config/sensors.yaml)")
    ap.add_argument("--no-ground", action="store_true", help="start in flight (the loop tables' pre-roll)")
    ap.add_argument("--preroll", type=float, default=None, help="with --no-ground: seconds flown before the window "
                    "(default the loops' 5)")
    ap.add_argument("--rule", choices=("twist", "imu", "imu_model"), default=None,
                    help="the input rule (default: imu where the profile has an IMU stream; twist: the rule of the "
                    "tables before it)")
    ap.add_argument("--levels", default=None, help="comma-separated subset of the levels (default all)")
    ap.add_argument("--jobs", type=int, default=1, help="rows run in parallel (default 1)")
    ap.add_argument("--baselines", action="store_true",
                    help="also the baseline rows (actuated: pd_g PD plus gravity, indi INDI; underactuated: indi), "
                         "beside the levels")
    ap.add_argument("--rows", default=None, help="run only these comma-separated rows (default: every one)")
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    a = ap.parse_args(argv)
    vehicles = [x.strip() for x in a.vehicles.split(",") if x.strip()]
    bad = [x for x in vehicles if x not in VEHICLES]
    if bad:
        ap.error(f"--vehicles: unknown {bad}; choose from {VEHICLES}")
    if a.latency_sweep is not None and a.latency_sweep not in vehicles:
        ap.error(f"--latency-sweep: {a.latency_sweep!r} is not one of --vehicles")
    if not (math.isfinite(a.duration) and a.duration > 0):
        ap.error("--duration: must be > 0")
    if a.preroll is not None and not (a.no_ground and math.isfinite(a.preroll) and a.preroll >= 0):
        ap.error("--preroll: a time >= 0, with --no-ground only")
    if a.jobs < 1 or a.seed < 0:
        ap.error("--jobs: must be >= 1; --seed: must be >= 0")
    conditions = [x.strip() for x in a.conditions.split(",") if x.strip()]
    rows = None if a.rows is None else [x.strip() for x in a.rows.split(",") if x.strip()]
    known = set(BASELINE_ROWS["actuated"]) | {lv for v in _LEVELS.values() for lv in v}
    if rows is not None and (not rows or [x for x in rows if x not in known]):
        ap.error(f"--rows: unknown {[x for x in rows if x not in known] or rows}; choose from {sorted(known)}")
    try:
        for c in conditions:
            condition_profile(c, a.sensors)
    except ValueError as exc:
        ap.error(str(exc).splitlines()[0])
    if not a.json:
        print(f"sensing table: {len(vehicles)} vehicles x conditions {','.join(conditions)}"
              f"{' + latency sweep' if a.latency_sweep else ''}, {a.duration:g} s scored per row; a line per row",
              flush=True)
    levels = None
    if a.levels is not None:
        levels = [x.strip() for x in a.levels.split(",") if x.strip()]
        known = {lv for vn in vehicles for lv in _LEVELS.get(vn, _LEVELS["underactuated"])}
        bad = [x for x in levels if x not in known]
        if bad or not levels:
            ap.error(f"--levels: unknown {bad or a.levels!r}; choose from {','.join(sorted(known))}")
    obj = run_table(vehicles, conditions, sweep=a.latency_sweep, duration=a.duration, seed=a.seed, sensors=a.sensors,
                    ground=not a.no_ground, jobs=a.jobs, progress=None if a.json else lambda s: print(s, flush=True),
                    preroll=a.preroll, rule=a.rule, levels=levels, baselines=a.baselines, rows=rows)
    from geodyn_ros.loops.report import emit_table
    emit_table(obj, format_tables, json_only=a.json, json_out=a.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
