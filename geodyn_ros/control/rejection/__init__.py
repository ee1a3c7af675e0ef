"""What the model misses (issue 53): the external-wrench observers and the rejection options of
every controller (ROS-free).

``observer``  the whole-body generalized-momentum observer (:class:`MomentumObserver`) and the
              rigid-body one of the anchors (:class:`RigidBodyObserver`), the rotor speed model
``options``   :class:`RejectionOptions` and :class:`Rejection`: observer feedforward, integral
              action, thrust-scale and CoM estimates, shared by the flatness, actuated and LQR
              controllers
``lqr``       the LQR's integral states and moved nominal (imported by ``control.lqr`` only: it
              needs ``control.flatness``, which imports this package)
"""
from .observer import (DEFAULT_BANDWIDTH, MomentumObserver, RigidBodyObserver, RotorSpeedModel, WrenchEstimate,
                       wrench_to_body, wrench_to_spatial)
from .options import INTEGRAL_FRACTION, REJECTION_OPTIONS, Rejection, RejectionOptions

__all__ = ["DEFAULT_BANDWIDTH", "MomentumObserver", "RigidBodyObserver", "RotorSpeedModel", "WrenchEstimate",
           "wrench_to_body", "wrench_to_spatial", "INTEGRAL_FRACTION", "REJECTION_OPTIONS", "Rejection",
           "RejectionOptions"]
