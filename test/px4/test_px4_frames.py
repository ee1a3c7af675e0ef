"""PX4's frames against independent worked examples (issue 44: "the bridge's frame conversions are
checked against an independent computation ... not the bridge's own functions").

The expected values come from the frame definitions themselves, worked by hand below, and from
scipy's ``Rotation`` (not the package's quaternion code) for PX4's attitudes:

* REP 103: ENU = (east, north, up), FLU = (forward, left, up); PX4: NED = (north, east, down), FRD
  = (forward, right, down). So a vector of north component n, east e, down d is ENU (e, n, -d),
  and a body vector (forward f, right r, down d) is FLU (f, -r, -d) (mavros' convention, the
  same map).
* PX4's yaw psi turns the nose from north toward east (about the down axis); ROS's yaw turns it
  from east toward north (about up): yaw_ros = pi/2 - psi. PX4's pitch theta > 0 is nose up, roll
  phi > 0 is right wing down (Z-Y-X Euler angles of the FRD body in NED).

Tolerances: 1e-12 on unit-size quantities computed in float64 (a few roundings of products of
sines and cosines, ~1e-16 each); 2e-7 where the input went through float32 as on PX4's wire
(float32's relative resolution 6e-8, a few of them).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from geodyn_ros.px4.frames import (R_ENU_NED, R_FLU_FRD, attitude_to_px4, attitude_to_ros, frd_to_flu,
                                   ned_to_enu, odometry_to_px4, odometry_to_ros)


def _px4_q(yaw, pitch, roll):
    """PX4's ``q`` (w, x, y, z) of Z-Y-X Euler angles of the FRD body in NED, by scipy."""
    x, y, z, w = Rotation.from_euler("ZYX", [yaw, pitch, roll]).as_quat()
    return np.array([w, x, y, z])


def test_vectors_follow_the_frame_definitions():
    north, east, down = 1.0, 2.0, 3.0
    assert np.array_equal(ned_to_enu([north, east, down]), [east, north, -down])
    fwd, right, dn = 4.0, 5.0, 6.0
    assert np.array_equal(frd_to_flu([fwd, right, dn]), [fwd, -right, -dn])
    # both maps are their own inverse and proper rotations (det +1: a reflection would flip handedness)
    for M in (R_ENU_NED, R_FLU_FRD):
        assert np.array_equal(M @ M, np.eye(3))
        assert abs(np.linalg.det(M) - 1.0) < 1e-15   # proper rotations: no handedness flip
    assert np.array_equal(ned_to_enu(ned_to_enu([[1, 2, 3], [4, 5, 6]])), [[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize("psi_deg", [0.0, 30.0, 90.0, -135.0, 180.0])
def test_heading_north_is_ros_yaw_plus_90_degrees(psi_deg):
    """A level vehicle with PX4 heading psi points its nose at (north cos psi, east sin psi): in
    ENU (sin psi, cos psi, 0), i.e. ROS yaw pi/2 - psi; its left side points west of the nose."""
    psi = np.radians(psi_deg)
    R = attitude_to_ros(_px4_q(psi, 0.0, 0.0))
    assert np.abs(R[:, 0] - [np.sin(psi), np.cos(psi), 0.0]).max() < 1e-12      # nose
    assert np.abs(R[:, 2] - [0.0, 0.0, 1.0]).max() < 1e-12                       # up stays up
    yaw_ros = np.arctan2(R[1, 0], R[0, 0])
    assert abs(np.angle(np.exp(1j * (yaw_ros - (np.pi / 2 - psi))))) < 1e-12


def test_pitch_up_and_right_wing_down():
    """Nose up theta (facing north): the nose is (north cos theta, up sin theta) = ENU (0, cos, sin).
    Right wing down phi (facing north, level pitch): the left wing rises: FLU y = ENU (-cos phi, 0, sin phi)."""
    th, ph = np.radians(20.0), np.radians(35.0)
    R = attitude_to_ros(_px4_q(0.0, th, 0.0))
    assert np.abs(R[:, 0] - [0.0, np.cos(th), np.sin(th)]).max() < 1e-12
    R = attitude_to_ros(_px4_q(0.0, 0.0, ph))
    assert np.abs(R[:, 1] - [-np.cos(ph), 0.0, np.sin(ph)]).max() < 1e-12


def test_odometry_worked_example():
    """Facing east (psi = 90 deg), 10 m north, 2 m east, 5 m up, flying north at 3 m/s and
    climbing at 1 m/s, yawing right (clockwise seen from above) at 0.5 rad/s:
    ENU position (2, 10, 5); the nose points east = ENU x, so north is to the LEFT: body velocity
    FLU (0, 3, 1); a right (clockwise) yaw is negative about up: w_b = (0, 0, -0.5)."""
    q = _px4_q(np.pi / 2, 0.0, 0.0)
    C, w_b, v_b = odometry_to_ros([10.0, 2.0, -5.0], q, [3.0, 0.0, -1.0], [0.0, 0.0, 0.5])
    assert np.abs(C[:3, 3] - [2.0, 10.0, 5.0]).max() < 1e-12
    assert np.abs(C[:3, 0] - [1.0, 0.0, 0.0]).max() < 1e-12
    assert np.abs(v_b - [0.0, 3.0, 1.0]).max() < 1e-12
    assert np.abs(w_b - [0.0, 0.0, -0.5]).max() < 1e-12
    # the same velocity given in PX4's body FRD frame: forward 0, right -3 (north is left), down -1
    _, _, v_b2 = odometry_to_ros([10.0, 2.0, -5.0], q, [0.0, -3.0, -1.0], [0.0, 0.0, 0.5], velocity_frame=3)
    assert np.abs(v_b2 - v_b).max() < 1e-12


def test_round_trip_through_float32_like_the_wire():
    rng = np.random.default_rng(3)
    for _ in range(200):
        q = _px4_q(*rng.uniform(-np.pi, np.pi, 3) * [1.0, 0.45, 1.0])
        p, v, w = rng.normal(size=3) * 50.0, rng.normal(size=3) * 5.0, rng.normal(size=3) * 2.0
        for vf in (1, 3):
            C, w_b, v_b = odometry_to_ros(p, q.astype(np.float32), v, w, velocity_frame=vf)
            p2, q2, v2, w2 = odometry_to_px4(C, w_b, v_b, velocity_frame=vf)
            assert np.abs(p2 - p).max() < 1e-12 * 50
            # q and -q are one rotation; float32 q: 2e-7
            assert min(np.abs(q2 - q).max(), np.abs(q2 + q).max()) < 2e-7
            # back through the same (float64) attitude: rounding only
            assert np.abs(v2 - v).max() < 1e-12 * 5
            assert np.abs(w2 - w).max() < 1e-12
    # attitude_to_px4 is the inverse of attitude_to_ros, w >= 0
    R = attitude_to_ros(_px4_q(0.3, -0.2, 1.1))
    assert attitude_to_px4(R)[0] >= 0.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(position=[np.nan, 0, 0]), "position: NaN"),
    (dict(q_wxyz=[np.nan, 0, 0, 0]), "q: NaN"),
    (dict(q_wxyz=[0.5, 0, 0, 0]), "q: not a unit quaternion"),
    (dict(velocity=[0, np.inf, 0]), "velocity: NaN"),
    (dict(angular_velocity=[0, 0]), "angular_velocity: expected"),
    (dict(pose_frame=0), "pose_frame: 0"),
    (dict(velocity_frame=0), "velocity_frame: 0"),
    (dict(velocity_frame=2), "velocity_frame: FRD world velocity with a NED pose"),
])
def test_bad_odometry_is_refused_naming_the_field(kwargs, match):
    args = dict(position=[0.0, 0.0, 0.0], q_wxyz=[1.0, 0.0, 0.0, 0.0], velocity=[0.0, 0.0, 0.0],
                angular_velocity=[0.0, 0.0, 0.0])
    frames = {k: kwargs.pop(k) for k in ("pose_frame", "velocity_frame") if k in kwargs}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        odometry_to_ros(*args.values(), **frames)
