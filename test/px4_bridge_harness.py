"""Shared helpers of the ``geodyn_px4_bridge`` tests (test/ros/px4/): vehicle files with a
``px4:`` section, PX4 messages as PX4 would publish them, and an independent conversion of
``VehicleOdometry`` to REP 103/105 (scipy's rotations and the sign conventions of PX4's ROS 2 user
guide, "ROS, Gazebo and PX4 frame conventions": NED -> ENU ``(x, y, z) -> (y, x, -z)``, FRD -> FLU
``(x, y, z) -> (x, -y, -z)``), not the package's ``geodyn_ros.px4.frames``.

Import ``ros_harness`` first (ROS isolation)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from px4_msgs.msg import VehicleOdometry, VehicleStatus
from scipy.spatial.transform import Rotation

from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_TYPE

DATA = Path(__file__).resolve().parent / "data"
#: a square X quad in PX4's CA_ROTORn_* form (FRD): arms 0.15 m, CT from 8.5e-6 x 1000^2 = 8.5 N
SQUARE_QUAD = """base_link: base_link
rotors:
  - px4: {PX: 0.15, PY: 0.15, KM: 0.05}
  - px4: {PX: -0.15, PY: -0.15, KM: 0.05}
  - px4: {PX: 0.15, PY: -0.15, KM: -0.05}
  - px4: {PX: -0.15, PY: 0.15, KM: -0.05}
constants:
  motor_constant: 8.5e-06
  time_constant_up: 0.0125
  time_constant_down: 0.025
  max_rot_velocity: 1000.0
"""
P = np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, -1]])    # NED -> ENU
D = np.diag([1.0, -1, -1])                             # FRD -> FLU


def vehicle_file(tmp_path, text=None, px4="px4: {thr_mdl_fac: 0.0}", name="vehicle.yaml") -> str:
    """A vehicle file: ``text`` (default test/data/quad_x.yaml) with the ``px4`` section appended."""
    p = Path(tmp_path) / name
    p.write_text((text if text is not None else (DATA / "quad_x.yaml").read_text()) + (px4 + "\n" if px4 else ""))
    return str(p)


def now_us(node, before_us: int = 1000) -> int:
    """A realistic ``timestamp_sample`` [us] for a message published now: ``node``'s clock (the
    bridge's, ROS time) less ``before_us``, as PX4 with time sync stamps a sample taken just before
    (doc/reference/px4_bridge.md, "PX4's timestamps"). The bridge refuses samples dated ahead of
    their arrival, so a test stream must not run ahead of the clock."""
    return node.get_clock().now().nanoseconds // 1000 - before_us


def odometry(sample_us, position=(0.0, 0.0, 0.0), q=(1.0, 0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
             rates=(0.0, 0.0, 0.0), pose_frame=1, velocity_frame=1, timestamp=None, reset_counter=0) -> VehicleOdometry:
    """A VehicleOdometry taken at ``sample_us`` and published at ``timestamp`` (default the same)."""
    m = VehicleOdometry()
    m.timestamp_sample = int(sample_us)
    m.timestamp = int(sample_us if timestamp is None else timestamp)
    m.reset_counter = int(reset_counter)
    m.pose_frame, m.velocity_frame = pose_frame, velocity_frame
    m.position = [float(x) for x in position]
    m.q = [float(x) for x in q]
    m.velocity = [float(x) for x in velocity]
    m.angular_velocity = [float(x) for x in rates]
    return m


def status(arming=1, nav=4, sysid=1, compid=1, failsafe=False) -> VehicleStatus:
    return VehicleStatus(arming_state=arming, nav_state=nav, system_id=sysid, component_id=compid, failsafe=failsafe)


def rotor_msg(omega):
    m = ROTOR_MSG_TYPE()
    m.velocity = [float(v) for v in omega]
    return m


def expected_odom(msg):
    """``(position (3,), R (3, 3), w_b (3,), v_b (3,))`` in ENU / FLU of a VehicleOdometry with a NED
    pose (float32 fields widened), computed with scipy."""
    q = np.array(msg.q, dtype=float)
    R_ned_frd = Rotation.from_quat([q[1], q[2], q[3], q[0]]).as_matrix()   # scipy: scalar last
    R = P @ R_ned_frd @ D
    v = np.array(msg.velocity, dtype=float)
    v_b = D @ v if msg.velocity_frame == 3 else R.T @ (P @ v)
    return P @ np.array(msg.position, dtype=float), R, D @ np.array(msg.angular_velocity, dtype=float), v_b


def odom_arrays(m):
    """``(position, R, w_b, v_b)`` of a nav_msgs/Odometry (scipy for the quaternion)."""
    p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
    return (np.array([p.x, p.y, p.z]), Rotation.from_quat([o.x, o.y, o.z, o.w]).as_matrix(),
            np.array([t.angular.x, t.angular.y, t.angular.z]), np.array([t.linear.x, t.linear.y, t.linear.z]))
