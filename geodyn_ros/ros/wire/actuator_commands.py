"""The actuator commands of the multirotor controller nodes: rotor speeds and motor torques.

Shared by ``geodyn_actuated_controller`` and ``geodyn_flat_controller``:

* ``cmd/rotor_speeds``: ``actuator_msgs/msg/Actuators``, always (``velocity[i]`` = commanded speed
  of rotor ``i`` [rad/s], the order of ``actuator_number`` 0..n-1; what gz-sim's
  MulticopterMotorModel reads through ros_gz_bridge; stamped with the command's time). One type on
  every install: ``actuator_msgs`` is not on PyPI, so ``make venv`` builds it into the venv
  (``tools/build_interfaces.py``, the same fields and type hash as the published package); a ROS
  install has it with ros_gz (``apt install ros-<distro>-actuator-msgs``). Where it cannot be
  imported, every node that publishes or reads the rotor speeds stops at start in one line saying
  what to install (:func:`require_actuator_msgs`); nothing falls back to another type (release
  0.1's ``std_msgs/Float64MultiArray`` fallback is gone: a bridge entry for ``Actuators`` never
  matched it, and the rotors of a Gazebo vehicle got nothing);
* ``cmd/motor_efforts``: ``sensor_msgs/JointState`` (``name`` = the driven joints, ``effort`` =
  motor torques [N m], stamped); with ``per_joint`` also ``std_msgs/Float64`` on
  ``cmd/joint_effort/<joint>`` (gz-sim's ApplyJointForce).

Rotor speeds go out before the motor torques.
"""
from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from ..common.params import ConfigurationError
from .conversions import set_stamp

try:  # the message gz-sim's MulticopterMotorModel reads through ros_gz_bridge
    from actuator_msgs.msg import Actuators as _Actuators
except ImportError:  # not on PyPI: make venv builds it (tools/build_interfaces.py); ROS installs have it
    _Actuators = None

__all__ = ["HAVE_ACTUATOR_MSGS", "ROTOR_MSG_TYPE", "ROTOR_MSG_NAME", "ActuatorCommandPublisher",
           "require_actuator_msgs", "rotor_speed_values"]

HAVE_ACTUATOR_MSGS = _Actuators is not None
#: the message type of ``cmd/rotor_speeds`` (None where actuator_msgs cannot be imported: see
#: :func:`require_actuator_msgs`)
ROTOR_MSG_TYPE = _Actuators
#: its ROS name
ROTOR_MSG_NAME = "actuator_msgs/msg/Actuators"


def require_actuator_msgs(what: str = "cmd/rotor_speeds"):
    """The ``actuator_msgs/Actuators`` class, or a one-line :class:`ConfigurationError` saying what to
    install (a node calls this at start, before it creates a publisher or subscription of ``what``)."""
    if _Actuators is None:
        raise ConfigurationError(
            f"{what} is {ROTOR_MSG_NAME}, and actuator_msgs cannot be imported; install it: in a ROS "
            "install `apt install ros-$ROS_DISTRO-actuator-msgs` (ros_gz brings it), in this package's "
            "venv `python tools/build_interfaces.py` (make venv runs it), then source/restart")
    return _Actuators


def rotor_speed_values(msg):
    """The speeds a ``cmd/rotor_speeds`` message (``actuator_msgs/Actuators``) carries: its
    ``velocity`` (unchecked values, as the message holds them)."""
    return msg.velocity


class ActuatorCommandPublisher:
    """Publishers of ``cmd/rotor_speeds``, ``cmd/motor_efforts`` (and the per-joint topics).

    node : rclpy Node; joints : names of ``cmd/motor_efforts``; qos : the control QoS;
    per_joint : also ``cmd/joint_effort/<joint>`` (``std_msgs/Float64``).
    """

    def __init__(self, node, joints, qos, per_joint: bool = False):
        self._Actuators = require_actuator_msgs()
        self.rotors = node.create_publisher(self._Actuators, "cmd/rotor_speeds", qos)
        self.motors = node.create_publisher(JointState, "cmd/motor_efforts", qos)
        self.per_joint = [node.create_publisher(Float64, f"cmd/joint_effort/{j}", qos) for j in joints] \
            if per_joint else []
        self._mmsg = JointState()
        self._mmsg.name = list(joints)

    def publish(self, stamp_ns: int, omega, u) -> None:
        """Rotor speeds ``omega`` (n_r,) [rad/s] (skipped when empty), then motor torques ``u`` [N m]."""
        if len(omega):
            rm = self._Actuators()
            set_stamp(rm.header.stamp, stamp_ns)
            rm.velocity = array.array("d", np.ascontiguousarray(omega, dtype=float).tobytes())
            self.rotors.publish(rm)
        m = self._mmsg
        set_stamp(m.header.stamp, stamp_ns)
        m.effort = array.array("d", np.ascontiguousarray(u, dtype=float).tobytes())
        self.motors.publish(m)
        for pub, v in zip(self.per_joint, u):
            pub.publish(Float64(data=float(v)))
