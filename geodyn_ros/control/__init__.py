"""ROS-free control layer (above the algorithms, beside :mod:`geodyn_ros.sim`, below :mod:`geodyn_ros.ros`).

* :mod:`~geodyn_ros.control.feedback`: the feedforward + PD tracking law on SE(3) and joints
  (:class:`TrackingGains`, :func:`tracking_command`);
* :mod:`~geodyn_ros.control.rotors`: rotor geometry, allocation matrix and its pseudo-inverse,
  the actuation config (``config/tilthex.yaml``);
* :mod:`~geodyn_ros.control.actuated`: the controller that consumes the feedforward jets
  (rotor-lag and elastic-joint compensation, orders 0..2);
* :mod:`~geodyn_ros.control.quadrotor`: the closed-form flat map of a rigid multirotor;
* :mod:`~geodyn_ros.control.flatness`: the flatness-based geometric controller of a collinear
  (under-actuated) multirotor manipulator, levels rigid/ff0/ff1/ff2;
* :mod:`~geodyn_ros.control.rejection.observer`: the whole-body and rigid-body external-wrench observers;
* :mod:`~geodyn_ros.control.rejection`: what every controller rejects of what its model misses
  (:class:`RejectionOptions`: observer feedforward, integral action, thrust and CoM estimates).

Importing this package imports neither rclpy nor mujoco. The closed loops that combine a
controller with the simulator live one layer up, in :mod:`geodyn_ros.loops`.
"""
from .feedback import TrackingGains, tracking_command
from .rotors import (ActuationConfig, Allocation, ElasticJointParams, RotorParams, load_actuation_config,
                     rotor_frames_from_model, tilthex_rotor_frames)
from .actuated import ActuatedCommand, ActuatedController
from .quadrotor import RigidFlatState, rigid_flat_map
from .flatness import FLATNESS_LEVELS, FlatCommand, FlatnessController, FlatnessGains
from .rejection import MomentumObserver, RigidBodyObserver, WrenchEstimate
from .rejection import RejectionOptions

__all__ = ["TrackingGains", "tracking_command", "ActuationConfig", "Allocation", "ElasticJointParams", "RotorParams", "load_actuation_config",
           "rotor_frames_from_model", "tilthex_rotor_frames", "ActuatedCommand", "ActuatedController",
           "RigidFlatState", "rigid_flat_map", "FLATNESS_LEVELS", "FlatCommand", "FlatnessController", "FlatnessGains",
           "MomentumObserver", "RigidBodyObserver", "WrenchEstimate", "RejectionOptions"]
