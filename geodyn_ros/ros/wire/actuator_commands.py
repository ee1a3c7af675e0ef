"""The actuator commands of the multirotor controller nodes: rotor speeds and motor torques.

Shared by ``geodyn_actuated_controller`` and ``geodyn_flat_controller``:

* ``cmd/rotor_speeds``: ``actuator_msgs/msg/Actuators`` (``velocity[i]`` = commanded speed of rotor
  ``i`` [rad/s], the order of ``actuator_number`` 0..n-1; what gz-sim's MulticopterMotorModel reads
  through ros_gz_bridge; stamped) when the ``actuator_msgs`` package is importable, otherwise
  ``std_msgs/Float64MultiArray`` with the same numbers in ``data`` (one dim labelled ``rotor``; no
  stamp);
* ``cmd/motor_efforts``: ``sensor_msgs/JointState`` (``name`` = the driven joints, ``effort`` =
  motor torques [N m], stamped); with ``per_joint`` also ``std_msgs/Float64`` on
  ``cmd/joint_effort/<joint>`` (gz-sim's ApplyJointForce).

Rotor speeds go out before the motor torques: a lock-step simulator reading the unstamped
``Float64MultiArray`` relies on that order.
"""
from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

from .conversions import InputError, set_stamp

try:  # the message gz-sim's MulticopterMotorModel reads through ros_gz_bridge
    from actuator_msgs.msg import Actuators as _Actuators
except ImportError:  # not on PyPI; every ROS install with ros_gz has it
    _Actuators = None

__all__ = ["HAVE_ACTUATOR_MSGS", "ROTOR_MSG_TYPE", "ActuatorCommandPublisher", "rotor_speed_values"]

HAVE_ACTUATOR_MSGS = _Actuators is not None
#: the message type of ``cmd/rotor_speeds`` on this install
ROTOR_MSG_TYPE = _Actuators or Float64MultiArray


def rotor_speed_values(msg):
    """The speeds a ``cmd/rotor_speeds`` message carries (unchecked values, as the message holds
    them): ``velocity`` of an ``actuator_msgs/Actuators``, or ``data`` of the
    ``std_msgs/Float64MultiArray`` fallback, whose layout must describe them (at most one
    dimension, of their count, and no offset), else :class:`InputError` (the dimensions quoted,
    at most 4)."""
    if not hasattr(msg, "layout"):
        return msg.velocity
    values, dims = msg.data, msg.layout.dim
    if len(dims) > 1 or (dims and dims[0].size != len(values)) or msg.layout.data_offset:
        raise InputError(f"cmd/rotor_speeds: layout {[(d.label, d.size) for d in dims][:4]}, offset "
                         f"{msg.layout.data_offset} does not describe {len(values)} speeds")
    return values


class ActuatorCommandPublisher:
    """Publishers of ``cmd/rotor_speeds``, ``cmd/motor_efforts`` (and the per-joint topics).

    node : rclpy Node; joints : names of ``cmd/motor_efforts``; qos : the control QoS;
    per_joint : also ``cmd/joint_effort/<joint>`` (``std_msgs/Float64``).
    """

    def __init__(self, node, joints, qos, per_joint: bool = False):
        self.rotors = node.create_publisher(ROTOR_MSG_TYPE, "cmd/rotor_speeds", qos)
        self.motors = node.create_publisher(JointState, "cmd/motor_efforts", qos)
        self.per_joint = [node.create_publisher(Float64, f"cmd/joint_effort/{j}", qos) for j in joints] \
            if per_joint else []
        self._mmsg = JointState()
        self._mmsg.name = list(joints)

    def publish(self, stamp_ns: int, omega, u) -> None:
        """Rotor speeds ``omega`` (n_r,) [rad/s] (skipped when empty), then motor torques ``u`` [N m]."""
        if len(omega):
            if ROTOR_MSG_TYPE is Float64MultiArray:
                rm = Float64MultiArray()
                rm.layout.dim = [MultiArrayDimension(label="rotor", size=len(omega), stride=len(omega))]
                rm.data = array.array("d", np.ascontiguousarray(omega, dtype=float).tobytes())
            else:
                rm = _Actuators()
                set_stamp(rm.header.stamp, stamp_ns)
                rm.velocity = [float(v) for v in omega]
            self.rotors.publish(rm)
        m = self._mmsg
        set_stamp(m.header.stamp, stamp_ns)
        m.effort = array.array("d", np.ascontiguousarray(u, dtype=float).tobytes())
        self.motors.publish(m)
        for pub, v in zip(self.per_joint, u):
            pub.publish(Float64(data=float(v)))
