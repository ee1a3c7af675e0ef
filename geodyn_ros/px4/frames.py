"""PX4's frames (NED world, FRD body) <-> the package's (z-up world, FLU base link; REP 103/105).

PX4 states every pose and velocity of its uORB / uXRCE-DDS messages in a local **NED** earth frame
(x north, y east, z down) and the **FRD** body frame (x forward, y right, z down); ROS uses ENU
(x east, y north, z up) and FLU (x forward, y left, z up) (REP 103). The maps are fixed
permutations with signs (PX4 user guide, "ROS 2 User Guide: ROS, Gazebo and PX4 frame
conventions", docs.px4.io/main/en/ros2/user_guide; the same rule as mavros' ``frame_tf``:
local NED -> ENU ``(x, y, z) -> (y, x, -z)``, body FRD -> FLU ``(x, y, z) -> (x, -y, -z)``):

* :data:`R_ENU_NED` (3, 3): coordinates in NED -> in ENU; its own inverse;
* :data:`R_FLU_FRD` (3, 3): coordinates in FRD -> in FLU; its own inverse.

The base attitude ``R`` (rotation taking base-link coordinates to world coordinates) is then
``R_enu_flu = R_ENU_NED @ R_ned_frd @ R_FLU_FRD`` (:func:`attitude_to_ros`) and back
(:func:`attitude_to_px4`).

PX4's ``VehicleOdometry`` (px4_msgs release 1.16.0, ``msg/VehicleOdometry.msg``): ``position``
``float32[3]`` in ``pose_frame`` (1 NED, 2 FRD world-fixed with arbitrary heading), ``q``
``float32[4]`` the rotation from the FRD body frame to ``pose_frame`` as ``(w, x, y, z)`` (PX4's
``matrix::Quaternion`` order), ``velocity`` ``float32[3]`` in ``velocity_frame`` (1 NED, 2 FRD
world, 3 FRD body), ``angular_velocity`` ``float32[3]`` in the FRD body frame; NaN marks an
invalid field. :func:`odometry_to_ros` turns one into the package's state: the base pose ``C``
(4, 4) in the z-up world and the body twist ``(w_b, v_b)`` in FLU base axes, the content of a
``nav_msgs/Odometry`` (REP 105: twist in the child frame). A world-fixed FRD frame (arbitrary
heading) is mapped with the same :data:`R_ENU_NED` as NED: the result is a z-up world whose x
axis is the frame's y axis, consistent for poses and velocities.
"""
from __future__ import annotations

import numpy as np

from ..lie import matrix_to_quat, quat_to_matrix

__all__ = ["R_ENU_NED", "R_FLU_FRD", "POSE_FRAMES", "VELOCITY_FRAMES", "ned_to_enu", "frd_to_flu",
           "attitude_to_ros", "attitude_to_px4", "odometry_to_ros", "odometry_to_px4"]

#: coordinates in NED -> in ENU (and back: the matrix is symmetric and orthogonal)
R_ENU_NED = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
#: coordinates in FRD -> in FLU (and back)
R_FLU_FRD = np.diag([1.0, -1.0, -1.0])

#: ``VehicleOdometry.pose_frame`` values this module accepts (px4_msgs 1.16.0 constants POSE_FRAME_NED, _FRD)
POSE_FRAMES = {1: "NED", 2: "FRD"}
#: ``VehicleOdometry.velocity_frame`` values (VELOCITY_FRAME_NED, _FRD, _BODY_FRD)
VELOCITY_FRAMES = {1: "NED", 2: "FRD", 3: "BODY_FRD"}


def _vec(name: str, v, n: int = 3) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    if a.shape[-1:] != (n,):
        raise ValueError(f"{name}: expected a trailing dimension of {n}, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: NaN or Inf (PX4 marks an invalid field with NaN)")
    return a


def ned_to_enu(v) -> np.ndarray:
    """Vectors ``v`` (..., 3) in NED (or a world-fixed FRD frame) -> in ENU (z up); also ENU -> NED."""
    return _vec("v", v) @ R_ENU_NED.T


def frd_to_flu(v) -> np.ndarray:
    """Vectors ``v`` (..., 3) in FRD body axes -> in FLU (REP 103 base link); also FLU -> FRD."""
    return _vec("v", v) @ R_FLU_FRD.T


def attitude_to_ros(q_wxyz) -> np.ndarray:
    """The base attitude ``R_enu_flu`` (3, 3) of PX4's ``q`` ``(w, x, y, z)`` (FRD body -> NED);
    ``q`` must have norm 1 within 1e-3 (float32 from the wire: a few 1e-7) and is normalised."""
    q = _vec("q", q_wxyz, 4)
    n = np.linalg.norm(q)
    if abs(n - 1.0) > 1e-3:
        raise ValueError(f"q: not a unit quaternion (norm {n:.6g})")
    return R_ENU_NED @ quat_to_matrix(q / n, "wxyz") @ R_FLU_FRD


def attitude_to_px4(R_enu_flu) -> np.ndarray:
    """PX4's ``q`` ``(w, x, y, z)``, ``w >= 0``, of a base attitude ``R_enu_flu`` (3, 3)."""
    R = np.asarray(R_enu_flu, dtype=np.float64)
    if R.shape != (3, 3):
        raise ValueError(f"R_enu_flu: a (3, 3) rotation expected, got shape {R.shape}")
    return matrix_to_quat(R_ENU_NED @ R @ R_FLU_FRD, "wxyz")


def odometry_to_ros(position, q_wxyz, velocity, angular_velocity, *, pose_frame: int = 1,
                    velocity_frame: int = 1):
    """``(C (4, 4), w_b (3,), v_b (3,))`` of a PX4 ``VehicleOdometry``: the base pose in the z-up
    world (ENU for NED), the angular and linear velocity of the base in FLU base axes (the twist
    of a ``nav_msgs/Odometry``, REP 105). ``velocity`` in ``velocity_frame`` (1 NED, 2 world FRD:
    taken with ``pose_frame``'s world, 3 body FRD), ``angular_velocity`` in FRD body axes. A
    ``pose_frame`` or ``velocity_frame`` other than those, NaN (PX4's "invalid"), or a non-unit
    ``q`` raise ValueError naming the argument."""
    if pose_frame not in POSE_FRAMES:
        raise ValueError(f"pose_frame: {pose_frame} is not one of {POSE_FRAMES} (0 = unknown: no pose to use)")
    if velocity_frame not in VELOCITY_FRAMES:
        raise ValueError(f"velocity_frame: {velocity_frame} is not one of {VELOCITY_FRAMES} (0 = unknown)")
    if velocity_frame != 3 and POSE_FRAMES[pose_frame] != VELOCITY_FRAMES[velocity_frame]:
        raise ValueError(f"velocity_frame: {VELOCITY_FRAMES[velocity_frame]} world velocity with a "
                         f"{POSE_FRAMES[pose_frame]} pose: the two worlds differ by an unknown heading")
    R = attitude_to_ros(q_wxyz)
    C = np.eye(4)
    C[:3, :3] = R
    C[:3, 3] = R_ENU_NED @ _vec("position", position)
    v = _vec("velocity", velocity)
    v_b = R_FLU_FRD @ v if velocity_frame == 3 else R.T @ (R_ENU_NED @ v)
    w_b = R_FLU_FRD @ _vec("angular_velocity", angular_velocity)
    return C, w_b, v_b


def odometry_to_px4(C, w_b, v_b, *, velocity_frame: int = 1):
    """The inverse of :func:`odometry_to_ros` for ``pose_frame`` NED: ``(position (3,), q (4,)
    (w, x, y, z), velocity (3,) in velocity_frame (1 NED or 3 body FRD), angular_velocity (3,)
    FRD)`` of a base pose ``C`` (4, 4) in ENU and a body twist ``(w_b, v_b)`` in FLU. For the
    simulator's PX4 stand-in (what PX4 publishes) and the tests."""
    C = np.asarray(C, dtype=np.float64)
    if C.shape != (4, 4):
        raise ValueError(f"C: a (4, 4) pose expected, got shape {C.shape}")
    if velocity_frame not in (1, 3):
        raise ValueError(f"velocity_frame: {velocity_frame} is not 1 (NED) or 3 (BODY_FRD)")
    R = C[:3, :3]
    v = _vec("v_b", v_b)
    velocity = R_FLU_FRD @ v if velocity_frame == 3 else R_ENU_NED @ (R @ v)
    return R_ENU_NED @ C[:3, 3], attitude_to_px4(R), velocity, R_FLU_FRD @ _vec("w_b", w_b)
