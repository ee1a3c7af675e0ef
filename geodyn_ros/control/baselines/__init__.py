"""The baselines a lab compares a feedforward controller with (issue 55 item 1), ROS-free.

``pd_gravity``  PD plus gravity compensation of the whole body (:class:`PdGravityController`):
                the base wrench of the whole body's weight and the arm's gravity torques at the
                measured state, with Tomei's motor offset on the elastic joints; its integral
                option (``integral=True``: the lab's PID) is the rejection's integral action
``indi``        incremental nonlinear dynamic inversion (:class:`IndiController`, the core
                :class:`IncrementalInversion`, the IMU's intervals :class:`ImuIntervals`): the
                rotor speeds and the IMU's angular acceleration (filtered gyro derivative) and
                specific force, the same first-order filter on every channel (Smeur, Chu and de
                Croon, JGCD 2016; Tal and Karaman, T-CST 2021)
``indi_flat``   INDI for a collinear vehicle (:class:`IndiFlatController`): the thrust vector's
                and the moment's increments, the attitude from the thrust vector

Both take the feedback gains of the other levels (:class:`~geodyn_ros.control.feedback.TrackingGains`)
and return :class:`~geodyn_ros.control.actuated.ActuatedCommand`.
"""
from .pd_gravity import PdGravityController, joint_pd_gravity
from .indi import (DEFAULT_FILTER_TIME_CONSTANT, ImuIntervals, IncrementalInversion, IndiController, IndiOptions,
                   first_order_gain)
from .indi_flat import IndiFlatController

__all__ = ["PdGravityController", "joint_pd_gravity", "DEFAULT_FILTER_TIME_CONSTANT", "ImuIntervals",
           "IncrementalInversion", "IndiController", "IndiOptions", "first_order_gain", "IndiFlatController"]
