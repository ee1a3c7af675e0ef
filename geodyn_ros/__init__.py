"""geodyn_ros: exact higher-order Lie-group dynamics for floating-base robots.

The core is ROS-free (``import geodyn_ros`` never imports rclpy)::

    import geodyn_ros as gd
    model = gd.load_urdf("robot.urdf")
    res = gd.inverse_dynamics(model, base_pose, base_twist, q, order=3)

Layers: :mod:`~geodyn_ros.lie` (SE(3) helpers) -> :mod:`~geodyn_ros.urdf` /
:mod:`~geodyn_ros.model` (URDF to spatial screws) -> :mod:`~geodyn_ros.dynamics` and
:mod:`~geodyn_ros.eom` (algorithms, compiled kernels in ``_kernels``) ->
:mod:`~geodyn_ros.linearization` (derivatives and SE(3) linearization, ``_derivative_kernels``).
Conventions: see the README ("Conventions") and ``CONVENTIONS.md``.
"""
from .dynamics import (DEFAULT_GRAVITY, ForwardDynamicsResult, HybridDynamicsResult,
                       InverseDynamicsResult, KinematicsResult, forward_dynamics, forward_kinematics,
                       hybrid_dynamics, inverse_dynamics)
from .eom import coriolis_matrix, gravity_vector, mass_matrix
from .linearization import (FDDerivatives, IDDerivatives, Linearization, forward_dynamics_derivatives,
                            input_labels, inverse_dynamics_derivatives, inverse_mass_matrix, linearize,
                            state_labels)
from .model import Model
from .representations import angular_first, convert_twist, convert_wrench, linear_first, twist_transform
from .urdf import load_urdf

__version__ = "0.1.0"

__all__ = [
    "load_urdf", "Model",
    "inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "forward_kinematics",
    "mass_matrix", "coriolis_matrix", "gravity_vector",
    "inverse_dynamics_derivatives", "forward_dynamics_derivatives", "inverse_mass_matrix", "linearize",
    "state_labels", "input_labels", "IDDerivatives", "FDDerivatives", "Linearization",
    "convert_twist", "convert_wrench", "twist_transform", "linear_first", "angular_first",
    "InverseDynamicsResult", "ForwardDynamicsResult", "HybridDynamicsResult", "KinematicsResult",
    "DEFAULT_GRAVITY",
]
