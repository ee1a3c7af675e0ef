"""The sensors file (``config/sensors.yaml``): named sensor profiles, read and checked.

Why a file of its own, not a ``sensors:`` section of the vehicle file: how a vehicle is sensed
belongs to where it flies (a motion-capture lab) or to its avionics (an onboard estimator), not
to its airframe; one vehicle flies under every profile, and one profile serves every vehicle.

Schema (doc/reference/sensors_file.md lists every key with its unit)::

    profiles:
      <name>:                              # {} : the exact state (perfect)
        odometry: {rate, latency, noise: {model: white, position, attitude, velocity,
                   angular_velocity} | {model: estimator, accel_noise, gyro_noise,
                   aiding_position, aiding_attitude}}
        joints: {rate, latency, position_step, velocity_step}
        imu: {rate, latency, gyro_noise, accel_noise}       # optional
        failsafe: {...}                    # optional, else the top-level failsafe:
    failsafe: {timeout, hold, then, descent_rate, ramp}    # optional

Every refusal is one ``ValueError`` line ``<file>: <key>: <problem>; <fix>``
(:class:`geodyn_ros.model.validate.FileKeys`), with a did-you-mean for a misspelt key. Values are
checked for what they are, then every magnitude against its plausible range (:data:`RANGES`, a
:class:`~geodyn_ros.model.validate.Range` with its reason, as the vehicle file's,
:mod:`geodyn_ros.vehicle.plausible`): ``<value> <unit> is outside the plausible range [lo, hi]
<unit> (<reason>); <fix>``. The ranges refuse what no sensor or failsafe can be and the unit slips
a person makes (milliseconds written as seconds: a latency of a second or more; millimetres as
metres; degrees as radians), never a real sensor: a ``rate`` of 1e-300 Hz, an estimator noise of
1e-300 (a division by its square) or a ``failsafe.hold`` of 1e300 s are refused here. A noise or
an encoder step of exactly 0 (the white model, the joints, the IMU) means exact and is not range
checked; the estimator's noises divide and must be in range.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..control.failsafe import FailsafeConfig
from ..model.validate import FileKeys, Range, read_yaml, short_repr
from ..vehicle.params import default_actuation_config_path
from .sensors import EstimatorNoise, ImuSpec, JointSpec, OdometrySpec, SensorProfile, WhiteNoise

__all__ = ["load_sensor_profiles", "sensor_profile", "default_sensors_path", "PROFILE_KEYS", "RANGES"]

_TOP = ("profiles", "failsafe")
PROFILE_KEYS = ("odometry", "joints", "imu", "failsafe")
_ODO = ("rate", "latency", "noise")
_WHITE = ("model", "position", "attitude", "velocity", "angular_velocity")
_EST = ("model", "accel_noise", "gyro_noise", "aiding_position", "aiding_attitude")
_JOINTS = ("rate", "latency", "position_step", "velocity_step")
_IMU = ("rate", "latency", "gyro_noise", "accel_noise")
_FAILSAFE = ("timeout", "hold", "then", "descent_rate", "ramp")
#: the latency a stream may have [s]: below a second (more is milliseconds written as seconds)
MAX_LATENCY_S = 1.0
_CP = "one control period at 10 kHz, the shortest of a vehicle file (control_period >= 1e-4 s)"
_NOAID = "PX4's longest inertial dead reckoning, EKF2_NOAID_TOUT <= 10 s (ekf2/module.yaml)"
#: key (the last part of its key path) -> the plausible Range of its value, each with its reason.
#: Sources: PX4-Autopilot's parameter ranges (src/modules/ekf2/module.yaml: EKF2_ACC_NOISE 0.01 to
#: 1 m/s^2, EKF2_GYR_NOISE 1e-4 to 0.1 rad/s, EKF2_NOAID_TOUT 0.5 to 10 s; mc_pos_control:
#: MPC_LAND_CRWL >= 0.1 m/s, MPC_Z_VEL_MAX_DN 0.5 to 4 m/s, MPC_XY_VEL_MAX default 12 m/s), the
#: measured motion-capture noise of config/sensors.yaml ([KR]: 0.02 mm) and the finest sensors
#: there are (a star tracker's arcsecond, 4.8 urad; a 24-bit absolute encoder, 2 pi / 2^24 rad).
RANGES = {
    "rate": Range(1.0, 1e4, "Hz", "1 Hz, a GNSS receiver's default navigation rate, is the slowest position source a "
                  "vehicle flies on; 10 kHz is the fastest control loop of a vehicle file (control_period >= 1e-4 s)",
                  "give a rate in Hz, e.g. 240.0"),
    "position": Range(1e-6, 1.0, "m", "1 um is 20 times below the best motion capture (0.02 mm measured); a metre is "
                      "millimetres written as metres (motion capture 0.2 mm, vision 0.1 m)", "give m, e.g. 0.0002"),
    "attitude": Range(1e-6, 0.5, "rad", "1 urad is below a star tracker's arcsecond (4.8 urad); half a radian (29 "
                      "deg) is degrees written as radians", "give rad, e.g. 0.001, or markers"),
    "velocity": Range(1e-6, 10.0, "m/s", "1 um/s is a thousandth of the motion-capture filter's 4 mm/s; 10 m/s is a "
                      "multirotor's top speed (PX4's MPC_XY_VEL_MAX: 12 m/s)", "give m/s, e.g. 0.01, or difference"),
    "angular_velocity": Range(1e-5, 5.0, "rad/s", "a tenth of PX4's smallest gyro noise (EKF2_GYR_NOISE >= 1e-4 "
                              "rad/s) to 5 rad/s (290 deg/s: degrees written as radians)", "give rad/s, e.g. 0.015"),
    "accel_noise": Range(1e-3, 100.0, "m/s^2", "a tenth of PX4's smallest accelerometer noise (EKF2_ACC_NOISE >= "
                         "0.01 m/s^2) to 10 g", "give m/s^2, e.g. 0.35"),
    "position_step": Range(1e-7, 0.5, "rad", "the count of a 24-bit absolute encoder (2 pi / 2^24 = 3.7e-7 rad) to "
                           "half a radian (degrees written as radians)", "give rad, e.g. 0.0015 (2 pi / 4096), or 0"),
    "velocity_step": Range(1e-7, 10.0, "rad/s", "that count read over a second to 10 rad/s", "give rad/s, e.g. "
                           "0.024, or 0"),
    "timeout": Range(1e-4, 10.0, "s", f"{_CP}, to {_NOAID}", "give seconds, or null for latency + 3 periods"),
    "hold": Range(1e-4, 60.0, "s", f"{_CP}, to six times {_NOAID}", "give seconds (to hold until the odometry "
                  "returns: then: hold)"),
    "descent_rate": Range(0.01, 10.0, "m/s", "a tenth of PX4's slowest landing crawl (MPC_LAND_CRWL >= 0.1 m/s) to "
                          "2.5 times its fastest descent (MPC_Z_VEL_MAX_DN <= 4 m/s)", "give m/s, e.g. 0.7"),
    "ramp": Range(0.01, 60.0, "s", "braking 0.6 m/s within 0.01 s peaks at 176 m/s^2 (18 g); a minute is six times "
                  f"{_NOAID}", "give seconds, e.g. 1.0"),
}
RANGES["aiding_position"] = RANGES["position"]
RANGES["aiding_attitude"] = RANGES["attitude"]
RANGES["gyro_noise"] = RANGES["angular_velocity"]


def default_sensors_path() -> Path:
    """``config/sensors.yaml`` (source tree or installed share)."""
    return default_actuation_config_path().parent / "sensors.yaml"


class _Keys(FileKeys):
    def rate(self, key, v):
        return self.number(key, v, fix=RANGES["rate"].fix, within=RANGES["rate"])

    def latency(self, key, v):
        x = self.number(key, v, allow_zero=True, fix="give a latency in seconds, e.g. 0.005")
        if x >= MAX_LATENCY_S:
            self.fail(key, f"{x:g} s is a second or more", f"give seconds ({x:g} ms is {x / 1e3:g})")
        return x

    def bounded(self, key, v, allow_zero=True):
        """A magnitude of :data:`RANGES` (by the key's last part); 0 (exact) with ``allow_zero``."""
        r = RANGES[key.rsplit(".", 1)[-1]]
        return self.number(key, v, allow_zero=allow_zero, fix=r.fix, within=r)


def _noise(c, key, d):
    c.mapping(key, d)
    model = d.get("model")
    if model not in ("white", "estimator"):
        c.fail(f"{key}.model", f"{short_repr(model)} is not a noise model", "give white or estimator")
    c.keys(key, d, _WHITE if model == "white" else _EST)
    c.require(key, d, (_WHITE if model == "white" else _EST)[1:])
    if model == "estimator":
        return EstimatorNoise(c.bounded(f"{key}.accel_noise", d["accel_noise"], False),
                              c.bounded(f"{key}.gyro_noise", d["gyro_noise"], False),
                              c.bounded(f"{key}.aiding_position", d["aiding_position"], False),
                              _markers_or(c, f"{key}.aiding_attitude", d["aiding_attitude"]))
    att, vel = _markers_or(c, f"{key}.attitude", d["attitude"], True), d["velocity"]
    if isinstance(vel, str):
        if vel != "difference":
            c.fail(f"{key}.velocity", f"{short_repr(vel)} is neither a number nor difference",
                   "give a standard deviation in m/s, or difference")
    else:
        vel = c.bounded(f"{key}.velocity", vel)
    return WhiteNoise(c.bounded(f"{key}.position", d["position"]), att, vel,
                      c.bounded(f"{key}.angular_velocity", d["angular_velocity"]))


def _markers_or(c, key, v, allow_zero=False):
    """An attitude noise: a number [rad] or ``markers``."""
    if isinstance(v, str):
        if v != "markers":
            c.fail(key, f"{short_repr(v)} is neither a number nor markers", "give a standard deviation in rad, or markers")
        return v
    return c.bounded(key, v, allow_zero)


def _failsafe(c, key, d) -> FailsafeConfig:
    c.keys(key, d, _FAILSAFE)
    kw = {}
    if d.get("timeout") is not None:
        kw["timeout"] = c.bounded(f"{key}.timeout", d["timeout"], False)
    for k in ("hold", "descent_rate", "ramp"):
        if k in d:
            kw[k] = c.bounded(f"{key}.{k}", d[k], False)
    if "then" in d:
        if d["then"] not in ("descend", "hold"):
            c.fail(f"{key}.then", f"{short_repr(d['then'])} is not a failsafe action", "give descend or hold")
        kw["then"] = d["then"]
    return FailsafeConfig(**kw)


def _profile(c, name, d, failsafe) -> SensorProfile:
    key = f"profiles.{name}"
    if d is None:
        d = {}
    c.keys(key, d, PROFILE_KEYS)
    odo = joints = imu = None
    if "odometry" in d:
        o = d["odometry"]
        c.keys(f"{key}.odometry", o, _ODO)
        c.require(f"{key}.odometry", o, _ODO)
        odo = OdometrySpec(c.rate(f"{key}.odometry.rate", o["rate"]), c.latency(f"{key}.odometry.latency", o["latency"]),
                           _noise(c, f"{key}.odometry.noise", o["noise"]))
    if "joints" in d:
        j = d["joints"]
        c.keys(f"{key}.joints", j, _JOINTS)
        c.require(f"{key}.joints", j, _JOINTS)
        joints = JointSpec(c.rate(f"{key}.joints.rate", j["rate"]), c.latency(f"{key}.joints.latency", j["latency"]),
                           c.bounded(f"{key}.joints.position_step", j["position_step"]),
                           c.bounded(f"{key}.joints.velocity_step", j["velocity_step"]))
    if "imu" in d:
        m = d["imu"]
        c.keys(f"{key}.imu", m, _IMU)
        c.require(f"{key}.imu", m, _IMU)
        imu = ImuSpec(c.rate(f"{key}.imu.rate", m["rate"]), c.latency(f"{key}.imu.latency", m["latency"]),
                      c.bounded(f"{key}.imu.gyro_noise", m["gyro_noise"]),
                      c.bounded(f"{key}.imu.accel_noise", m["accel_noise"]))
    if (odo is None) != (joints is None):
        c.fail(key, "has " + ("odometry but no joints" if joints is None else "joints but no odometry"),
               "give both (or neither: the exact state)")
    if imu is not None and odo is None:
        c.fail(f"{key}.imu", "an IMU without odometry", "give odometry and joints too, or remove imu")
    if "failsafe" in d:
        failsafe = _failsafe(c, f"{key}.failsafe", c.mapping(f"{key}.failsafe", d["failsafe"]))
    return SensorProfile(str(name), odo, joints, imu, failsafe)


def load_sensor_profiles(path=None) -> dict:
    """``{name: SensorProfile}`` of a sensors file (default ``config/sensors.yaml``); one-line
    ValueError for anything wrong (module docstring)."""
    p = default_sensors_path() if path is None else Path(os.fspath(path))
    doc = read_yaml(p, "sensors")
    c = _Keys(str(p))
    if not isinstance(doc, dict):
        c.fail("", f"expected a mapping with profiles:, got {short_repr(doc)}", "see doc/reference/sensors_file.md")
    c.keys("", doc, _TOP)
    c.require("", doc, ("profiles",), "give profiles: with at least one named profile")
    profs = c.mapping("profiles", doc["profiles"])
    if not profs:
        c.fail("profiles", "is empty", "give at least one profile (perfect: {})")
    failsafe = FailsafeConfig()
    if doc.get("failsafe") is not None:
        failsafe = _failsafe(c, "failsafe", c.mapping("failsafe", doc["failsafe"]))
    return {str(k): _profile(c, k, v, failsafe) for k, v in profs.items()}


def sensor_profile(name: str, path=None) -> SensorProfile:
    """The profile ``name`` of a sensors file (default ``config/sensors.yaml``)."""
    profs = load_sensor_profiles(path)
    if name not in profs:
        import difflib
        m = difflib.get_close_matches(str(name), list(profs), n=1)
        where = default_sensors_path() if path is None else path
        raise ValueError(f"{where}: profiles.{name}: no such profile; "
                         + (f"did you mean {m[0]!r}?" if m else f"the profiles are {', '.join(profs)}"))
    return profs[name]
