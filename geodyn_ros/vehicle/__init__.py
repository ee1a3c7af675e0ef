"""The vehicle: one YAML file (rotors, rotor constants, joints, gains) next to a URDF (issue 33;
the schema: doc/reference/vehicle_file.md).

Layer 1, beside :mod:`geodyn_ros.model`: imports only ``model``, ``lie``, numpy and yaml.

* :mod:`~geodyn_ros.vehicle.params`: :class:`RotorParams`, :class:`ElasticJointParams`,
  :class:`ActuationConfig` (with ``locked_joints``, ``locked_positions``, ``pinned_joints``,
  ``flight_urdf``, ``load_model``, ``rotor_frames``, ``check``, ``effort_limits``);
* :mod:`~geodyn_ros.vehicle.schema`: :func:`load_vehicle` (= :func:`load_actuation_config`) and
  :data:`LIMIT_KEYS` (the file's limits, which the planner checks);
* :mod:`~geodyn_ros.vehicle.geometry`: rotor frames and the allocation columns (paper eq. (28));
* :mod:`~geodyn_ros.vehicle.shipped`: the shipped vehicles' names -> (URDF, vehicle file).

PX4's own allocation of a vehicle (``CA_ROTORn_*``) is in :mod:`geodyn_ros.px4.allocation`.
"""
from .geometry import (allocation_rank, multirotor_frames, px4_to_flu, rotation_from_axis, rotor_frames_from_model,
                       rotor_wrench_columns, tilthex_rotor_frames, urdf_joint_table)
from .params import (GRAVITY, MIN_THRUST_TO_WEIGHT, PER_ROTOR, ROTOR_SECTIONS, ActuationConfig, ElasticJointParams,
                     RotorParams, default_actuation_config_path)
from .schema import LIMIT_KEYS, load_actuation_config, load_vehicle

__all__ = ["load_vehicle", "load_actuation_config", "LIMIT_KEYS", "ActuationConfig", "RotorParams", "ElasticJointParams",
           "ROTOR_SECTIONS", "PER_ROTOR", "MIN_THRUST_TO_WEIGHT", "GRAVITY", "default_actuation_config_path",
           "tilthex_rotor_frames", "multirotor_frames", "rotor_frames_from_model", "rotor_wrench_columns",
           "rotation_from_axis", "px4_to_flu", "allocation_rank", "urdf_joint_table"]
