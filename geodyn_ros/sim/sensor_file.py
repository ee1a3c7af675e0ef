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
checked for what they are and for the unit slips a person makes: a rate outside (0, 10 kHz], a
latency of a second or more (milliseconds written as seconds), a position noise of a metre or
more, an angle noise or step of half a radian or more.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..control.failsafe import FailsafeConfig
from ..model.validate import FileKeys, read_yaml, short_repr
from ..vehicle.params import default_actuation_config_path
from .sensors import EstimatorNoise, ImuSpec, JointSpec, OdometrySpec, SensorProfile, WhiteNoise

__all__ = ["load_sensor_profiles", "sensor_profile", "default_sensors_path", "PROFILE_KEYS"]

_TOP = ("profiles", "failsafe")
PROFILE_KEYS = ("odometry", "joints", "imu", "failsafe")
_ODO = ("rate", "latency", "noise")
_WHITE = ("model", "position", "attitude", "velocity", "angular_velocity")
_EST = ("model", "accel_noise", "gyro_noise", "aiding_position", "aiding_attitude")
_JOINTS = ("rate", "latency", "position_step", "velocity_step")
_IMU = ("rate", "latency", "gyro_noise", "accel_noise")
_FAILSAFE = ("timeout", "hold", "then", "descent_rate", "ramp")
#: the bounds that catch unit slips (module docstring)
MAX_RATE_HZ, MAX_LATENCY_S, MAX_POSITION_M, MAX_ANGLE_RAD = 1e4, 1.0, 1.0, 0.5


def default_sensors_path() -> Path:
    """``config/sensors.yaml`` (source tree or installed share)."""
    return default_actuation_config_path().parent / "sensors.yaml"


class _Keys(FileKeys):
    def rate(self, key, v):
        x = self.number(key, v, fix="give a rate in Hz, e.g. 240.0")
        if x > MAX_RATE_HZ:
            self.fail(key, f"{x:g} Hz is above {MAX_RATE_HZ:g} Hz", "give the stream's rate in Hz")
        return x

    def latency(self, key, v):
        x = self.number(key, v, allow_zero=True, fix="give a latency in seconds, e.g. 0.005")
        if x >= MAX_LATENCY_S:
            self.fail(key, f"{x:g} s is a second or more", f"give seconds ({x:g} ms is {x / 1e3:g})")
        return x

    def bounded(self, key, v, limit, unit, example, allow_zero=True):
        x = self.number(key, v, allow_zero=allow_zero, fix=f"give a number in {unit}, e.g. {example}")
        if x >= limit:
            self.fail(key, f"{x:g} {unit} is implausibly large (>= {limit:g})", f"give {unit}, e.g. {example}")
        return x


def _noise(c, key, d):
    c.mapping(key, d)
    model = d.get("model")
    if model not in ("white", "estimator"):
        c.fail(f"{key}.model", f"{short_repr(model)} is not a noise model", "give white or estimator")
    c.keys(key, d, _WHITE if model == "white" else _EST)
    c.require(key, d, (_WHITE if model == "white" else _EST)[1:])
    if model == "estimator":
        return EstimatorNoise(c.bounded(f"{key}.accel_noise", d["accel_noise"], 100.0, "m/s^2", 0.35, False),
                              c.bounded(f"{key}.gyro_noise", d["gyro_noise"], MAX_ANGLE_RAD * 10, "rad/s", 0.015,
                                        False),
                              c.bounded(f"{key}.aiding_position", d["aiding_position"], MAX_POSITION_M, "m", 0.1,
                                        False),
                              _markers_or(c, f"{key}.aiding_attitude", d["aiding_attitude"]))
    att, vel = _markers_or(c, f"{key}.attitude", d["attitude"], True), d["velocity"]
    if isinstance(vel, str):
        if vel != "difference":
            c.fail(f"{key}.velocity", f"{short_repr(vel)} is neither a number nor difference",
                   "give a standard deviation in m/s, or difference")
    else:
        vel = c.bounded(f"{key}.velocity", vel, 10.0, "m/s", 0.01)
    return WhiteNoise(c.bounded(f"{key}.position", d["position"], MAX_POSITION_M, "m", 0.0002), att, vel,
                      c.bounded(f"{key}.angular_velocity", d["angular_velocity"], MAX_ANGLE_RAD * 10, "rad/s", 0.015))


def _markers_or(c, key, v, allow_zero=False):
    """An attitude noise: a number [rad] or ``markers``."""
    if isinstance(v, str):
        if v != "markers":
            c.fail(key, f"{short_repr(v)} is neither a number nor markers", "give a standard deviation in rad, or markers")
        return v
    return c.bounded(key, v, MAX_ANGLE_RAD, "rad", 0.001, allow_zero)


def _failsafe(c, key, d) -> FailsafeConfig:
    c.keys(key, d, _FAILSAFE)
    kw = {}
    if d.get("timeout") is not None:
        kw["timeout"] = c.number(f"{key}.timeout", d["timeout"], fix="give seconds, or null for latency + 3 periods")
    for k in ("hold", "descent_rate", "ramp"):
        if k in d:
            kw[k] = c.number(f"{key}.{k}", d[k])
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
                           c.bounded(f"{key}.joints.position_step", j["position_step"], MAX_ANGLE_RAD, "rad", 0.0015),
                           c.bounded(f"{key}.joints.velocity_step", j["velocity_step"], 10.0, "rad/s", 0.024))
    if "imu" in d:
        m = d["imu"]
        c.keys(f"{key}.imu", m, _IMU)
        c.require(f"{key}.imu", m, _IMU)
        imu = ImuSpec(c.rate(f"{key}.imu.rate", m["rate"]), c.latency(f"{key}.imu.latency", m["latency"]),
                      c.bounded(f"{key}.imu.gyro_noise", m["gyro_noise"], MAX_ANGLE_RAD * 10, "rad/s", 0.015),
                      c.bounded(f"{key}.imu.accel_noise", m["accel_noise"], 100.0, "m/s^2", 0.35))
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
