"""The vehicle: one YAML file (rotors, rotor constants, joints, gains) next to a URDF (issue 33).

Layer 1, beside :mod:`geodyn_ros.model`: imports only ``model``, ``lie``, numpy and yaml.

* :mod:`~geodyn_ros.vehicle.params`: :class:`RotorParams`, :class:`ElasticJointParams`,
  :class:`ActuationConfig`;
* :mod:`~geodyn_ros.vehicle.schema`: :func:`load_vehicle` (= :func:`load_actuation_config`);
* :mod:`~geodyn_ros.vehicle.geometry`: rotor frames and the allocation columns (paper eq. (28)).
"""
from .geometry import rotor_frames_from_model, rotor_wrench_columns, tilthex_rotor_frames
from .params import (ROTOR_SECTIONS, ActuationConfig, ElasticJointParams, RotorParams,
                     default_actuation_config_path)
from .schema import load_actuation_config, load_vehicle

__all__ = ["load_vehicle", "load_actuation_config", "ActuationConfig", "RotorParams", "ElasticJointParams",
           "ROTOR_SECTIONS", "default_actuation_config_path", "tilthex_rotor_frames", "rotor_frames_from_model",
           "rotor_wrench_columns"]
