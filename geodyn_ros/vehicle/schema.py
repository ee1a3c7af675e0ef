"""The vehicle file loader (schema 1 of issue 33; the old ``tilthex:``/``multirotor:`` files too)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .params import ROTOR_SECTIONS, ActuationConfig, ElasticJointParams, RotorParams, _pos, default_actuation_config_path

__all__ = ["load_actuation_config", "load_vehicle"]


def load_actuation_config(path=None) -> ActuationConfig:
    """Read an actuation YAML into an :class:`ActuationConfig` (ValueError naming the key).

    ``path`` defaults to ``config/tilthex.yaml`` (``"hexarotor"`` or ``"tilthex"``: the shipped
    ``config/<name>.yaml``). The rotor section is ``multirotor:`` (``config/hexarotor.yaml``) or,
    as in ``config/tilthex.yaml``, ``tilthex:``, with the same keys; ``elastic_joints:`` follows."""
    import yaml
    if path in ("hexarotor", "tilthex"):
        path = default_actuation_config_path().parent / f"{path}.yaml"
    p = default_actuation_config_path() if path is None else Path(os.fspath(path))
    try:
        with open(p, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise ValueError(f"config: cannot read {p}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"config: {p} is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"config: {p} must be a mapping with a rotor section ({' or '.join(ROTOR_SECTIONS)}) and "
                         "elastic_joints")
    section = next((k for k in ROTOR_SECTIONS if k in doc), None)
    if section is None:
        raise ValueError(f"config: {p} misses the rotor section (one of {', '.join(ROTOR_SECTIONS)})")
    try:
        t, e = doc[section], doc["elastic_joints"]
        n = len(t["turning_direction"])
        rot = RotorParams(turning_direction=tuple(t["turning_direction"]),
                          motor_constant=t["motor_constant"], moment_constant=t["moment_constant"],
                          time_constant_up=t["time_constant_up"], time_constant_down=t["time_constant_down"],
                          max_rot_velocity=t["max_rot_velocity"],
                          rotor_drag_coefficient=t.get("rotor_drag_coefficient", 0.0),
                          rolling_moment_coefficient=t.get("rolling_moment_coefficient", 0.0))
        el = ElasticJointParams(joints=tuple(e["joints"]), stiffness=e["stiffness"],
                                motor_inertia=e["motor_inertia"],
                                max_motor_torque=e.get("max_motor_torque", 10.0))
        alpha, beta = np.radians(np.array(t["alpha_deg"], float)), np.radians(np.array(t["beta_deg"], float))
        if alpha.shape != (n,) or beta.shape != (n,):
            raise ValueError(f"alpha_deg, beta_deg: expected {n} values each (one per rotor)")
        return ActuationConfig(rotors=rot, elastic=el, rotor_prefix=str(t.get("rotor_prefix", "rotor_")),
                               arm_length=_pos("arm_length", t["arm_length"]), alpha=alpha, beta=beta,
                               rotor_velocity_slowdown_sim=_pos("rotor_velocity_slowdown_sim",
                                                                t.get("rotor_velocity_slowdown_sim", 10.0)),
                               rotor_mass=_pos("rotor_mass", t.get("rotor_mass", 0.005)))
    except KeyError as exc:
        raise ValueError(f"config: {p} misses the key {exc.args[0]!r}") from None
    except TypeError as exc:
        raise ValueError(f"config: {p} is malformed ({exc})") from None


load_vehicle = load_actuation_config
