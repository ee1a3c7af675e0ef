"""Missions over ROS 2: the trajectory messages to a :class:`~geodyn_ros.planning.mission.Mission`,
the planned CoM as a ``nav_msgs/Path`` and the simulator's start on a mission (``python -m
geodyn_ros.ros.nodes.mission start-parameters FILE``, used by ``launch/underactuated_sim.launch.py
mission:=FILE``). The vehicle of the feasibility check is
:meth:`geodyn_ros.planning.Vehicle.from_files` (ROS-free); ``vehicle_from`` is its deprecated
former home.

**The topic pair** (``geodyn_reference`` in ``trajectory: waypoints``):

* ``mission/com_yaw`` (``trajectory_msgs/MultiDOFJointTrajectory``): one joint (any name); point
  ``i``'s ``transforms[0].translation`` is the CoM waypoint [m] and its ``rotation`` (a unit
  quaternion, normalised here) gives the Z-Y-X yaw ``atan2(R[1,0], R[0,0])``, both in the world
  frame (``header.frame_id`` empty or the node's ``world_frame``; REP 103: x forward, z up);
  ``time_from_start`` is the waypoint's time from the mission's start.
* ``mission/joints`` (``trajectory_msgs/JointTrajectory``): ``positions`` [rad] by
  ``joint_names`` (every joint of the node's plan, any order), ``time_from_start`` as above.
* ``velocities`` and ``accelerations`` of the points are not used: the planner chooses the
  minimum-derivative ones (derivative constraints go in the mission file).

Yaws are unwrapped along the points (each the nearest to the previous one, starting from the
current yaw), so a turn through ``+-pi`` takes the short way. How the node combines the two
messages, times them and replans: :mod:`geodyn_ros.ros.nodes.reference_node`.
"""
from __future__ import annotations

import math

import numpy as np

from geodyn_ros.model.validate import clip, file_error
from geodyn_ros.planning.mission import Mission, load_mission

__all__ = ["mission_from_messages", "path_msg", "vehicle_from", "start_parameters", "main"]


def _seconds(d) -> float:
    return d.sec + d.nanosec * 1e-9


def _yaw(qx, qy, qz, qw, where: str) -> float:
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if not (math.isfinite(n) and n > 1e-9):
        raise ValueError(f"{where}: rotation is not a quaternion (norm {n:g})")
    qx, qy, qz, qw = qx / n, qy / n, qz / n, qw / n
    return math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))


def _unwrap(yaw: np.ndarray, ref: float) -> np.ndarray:
    out = np.empty_like(yaw)
    prev = ref
    for i, y in enumerate(yaw):
        prev = out[i] = prev + math.remainder(y - prev, 2.0 * math.pi)
    return out


def mission_from_messages(com_yaw, joints, *, joint_names, world_frame: str, current=None) -> Mission:
    """A :class:`Mission` (times from its start) from a ``MultiDOFJointTrajectory`` and/or a
    ``JointTrajectory`` (either may be None; module docstring).

    ``joint_names`` the node's joints (the columns of ``current.q`` and of the result);
    ``current`` the running plan's :class:`~geodyn_ros.trajectories.FlatReference` at the switch
    (None: nothing flies yet). A missing half holds its outputs at ``current``. A first point with
    ``time_from_start`` 0 is the start (replaced by ``current`` when planning a switch); with a
    later first point the start is ``current``. Raises ValueError with one line naming the field.
    """
    names = tuple(joint_names)
    parts = []
    if com_yaw is not None:
        if com_yaw.header.frame_id not in ("", world_frame):
            raise ValueError(f"mission/com_yaw: header.frame_id '{com_yaw.header.frame_id[:80]}' is not the world "
                             f"frame '{world_frame}'")
        if len(com_yaw.joint_names) > 1:
            raise ValueError(f"mission/com_yaw: expected one joint (the vehicle), got {len(com_yaw.joint_names)}")
        if not com_yaw.points:
            raise ValueError("mission/com_yaw: no points")
        t, c, y = [], [], []
        for i, p in enumerate(com_yaw.points):
            if len(p.transforms) != 1:
                raise ValueError(f"mission/com_yaw: points[{i}].transforms: expected 1 transform, got "
                                 f"{len(p.transforms)}")
            tr, ro = p.transforms[0].translation, p.transforms[0].rotation
            c.append((tr.x, tr.y, tr.z))
            y.append(_yaw(ro.x, ro.y, ro.z, ro.w, f"mission/com_yaw: points[{i}].transforms[0]"))
            t.append(_seconds(p.time_from_start))
        parts.append(("mission/com_yaw", np.array(t)))
        com, yaw = np.array(c, float), np.array(y, float)
        if not np.all(np.isfinite(com)):
            raise ValueError("mission/com_yaw: a translation contains NaN or Inf")
    if joints is not None:
        if not joints.points:
            raise ValueError("mission/joints: no points")
        got = list(joints.joint_names)
        if sorted(got) != sorted(names) or len(set(got)) != len(got):
            raise ValueError(f"mission/joints: joint_names {str(got)[:120]} are not the plan's joints {list(names)}")
        col = [got.index(j) for j in names]
        t, qs = [], []
        for i, p in enumerate(joints.points):
            if len(p.positions) != len(got):
                raise ValueError(f"mission/joints: points[{i}].positions: expected {len(got)} values, got "
                                 f"{len(p.positions)}")
            qs.append(np.asarray(p.positions, float)[col])
            t.append(_seconds(p.time_from_start))
        parts.append(("mission/joints", np.array(t)))
        q = np.array(qs, float).reshape(len(qs), len(names))
        if not np.all(np.isfinite(q)):
            raise ValueError("mission/joints: a position contains NaN or Inf")
    if not parts:
        raise ValueError("mission: no message")
    times = parts[0][1]
    if len(parts) == 2 and (len(parts[1][1]) != len(times) or np.any(np.abs(parts[1][1] - times) > 1e-9)):
        raise ValueError("mission/joints: time_from_start differs from mission/com_yaw's; a pair has the same points "
                         "at the same times")
    if current is None and (len(parts) < 2 and names or times[0] != 0.0):
        raise ValueError(f"{parts[0][0]}: nothing flies yet, so the first mission needs a start point "
                         "(time_from_start 0)" + (" and both messages" if names else ""))
    n_pts = len(times)
    if com_yaw is None:
        com, yaw = np.tile(current.com[0], (n_pts, 1)), np.full(n_pts, float(current.yaw[0]))
    else:
        yaw = _unwrap(yaw, float(current.yaw[0]) if current is not None else float(yaw[0]))
    if joints is None:
        q = np.tile(current.q[0], (n_pts, 1)) if names else None
    if times[0] != 0.0:      # the start is the current state
        com = np.vstack([current.com[0], com])
        yaw = np.r_[float(current.yaw[0]), yaw]
        q = None if q is None else np.vstack([current.q[0], q])
        times = np.r_[0.0, times]
    if len(times) < 2:
        raise ValueError(f"{parts[0][0]}: a start point alone is no mission (give a point with time_from_start > 0)")
    d = np.diff(times)
    if not np.all(d > 0):
        i = int(np.argmax(~(d > 0)))
        raise ValueError(f"{parts[0][0]}: time_from_start must increase strictly, but point {i + 1} is at "
                         f"{times[i + 1]:g} s after {times[i]:g} s")
    return Mission(com, yaw, q if names else None, names, times)


def path_msg(traj, t_switch: float, world_frame: str, dt: float = 0.05):
    """``nav_msgs/Path`` of the planned CoM from ``t_switch`` [s] to the plan's end, every ``dt``
    [s] and at the end; each pose the CoM (position) with the planned yaw (orientation about z),
    stamped with its time; ``header`` the switch time and ``world_frame``."""
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Path

    from ..wire.conversions import set_stamp
    t = np.arange(t_switch, traj.end_time, dt)
    t = np.r_[t, traj.end_time] if len(t) == 0 or t[-1] < traj.end_time else t
    com, yaw, _ = traj.jets(t, 0)
    msg = Path()
    msg.header.frame_id = world_frame
    set_stamp(msg.header.stamp, int(round(t_switch * 1e9)))
    for ti, c, y in zip(t, com[:, 0], yaw[:, 0]):
        ps = PoseStamped()
        ps.header.frame_id = world_frame
        set_stamp(ps.header.stamp, int(round(ti * 1e9)))
        ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = (float(v) for v in c)
        ps.pose.orientation.z, ps.pose.orientation.w = math.sin(y / 2.0), math.cos(y / 2.0)
        msg.poses.append(ps)
    return msg


def vehicle_from(source: str, actuation_config: str):
    """Deprecated: :meth:`geodyn_ros.planning.Vehicle.from_files` ``(source, actuation_config)``,
    which this calls (so it now checks every limit of the file, the rigid joints' torques too)."""
    import warnings

    from geodyn_ros.planning import Vehicle
    warnings.warn("geodyn_ros.ros.nodes.mission.vehicle_from is deprecated; use "
                  "geodyn_ros.planning.Vehicle.from_files(urdf, vehicle_file)", DeprecationWarning, stacklevel=2)
    return Vehicle.from_files(source, actuation_config)


def start_parameters(mission: Mission, source: str, actuation_config: str, order: int = 2, *,
                     where: str = "mission") -> dict:
    """``geodyn_actuated_sim`` parameters that start it on ``mission``'s plan at its first knot, as
    :func:`~geodyn_ros.ros.loops.underactuated_closed_loop.flat_start_parameters` does on the figure
    eight: the flat map's state there (at rest), the rotor speeds and the motors. ``where``: the
    mission's file, named by the refusals."""
    import geodyn_ros as gd
    from geodyn_ros.control.flatness import FlatnessController
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    from geodyn_ros.loops.underactuated import flat_start_state

    from geodyn_ros.planning import Vehicle

    v = Vehicle.from_files(source, actuation_config)
    if tuple(v.model.joint_names) != mission.joint_names:
        raise file_error(where, "joint_names", f"{clip(list(mission.joint_names))} are not the model's joints "
                         f"{clip(list(v.model.joint_names))}", "list the model's joints, in that order")
    ref = mission.plan(0.0, order)(0.0, 2)
    ctrl = FlatnessController(v.model, v.allocation, v.rotors, v.elastic)
    st = flat_start_state(ctrl, ref, gd.flat_inverse_dynamics(v.model, ref.com, ref.yaw, ref.q, 2))
    C = st["base_pose"]
    Vb = Ad_inv(C) @ st["base_twist"]
    floats = lambda a: [float(x) for x in a]  # noqa: E731
    return {"initial_base_pose": floats(np.r_[C[:3, 3], matrix_to_quat(C[:3, :3], "xyzw")]),
            "initial_base_twist": floats(np.r_[Vb[3:], Vb[:3]]),
            "initial_joint_positions": floats(st["q"]), "initial_joint_velocities": floats(st["qd"]),
            "initial_rotor_speeds": floats(st["rotor_speed"]),
            "initial_motor_positions": floats(st["motor_angle"]),
            "initial_motor_velocities": floats(st["motor_velocity"])}


def main(argv=None) -> int:
    """``python -m geodyn_ros.ros.nodes.mission start-parameters MISSION URDF ACTUATION [OUT]``: write
    (or print) the ROS parameter file ``/**/geodyn_actuated_sim: ros__parameters: ...`` that
    starts the simulator on the mission. Exit 2 with one line on a bad mission."""
    import argparse
    import sys

    import yaml
    ap = argparse.ArgumentParser(prog="python -m geodyn_ros.ros.nodes.mission")
    ap.add_argument("command", choices=["start-parameters"])
    ap.add_argument("mission")
    ap.add_argument("urdf")
    ap.add_argument("actuation")
    ap.add_argument("out", nargs="?")
    a = ap.parse_args(argv)
    try:
        params = start_parameters(load_mission(a.mission), a.urdf, a.actuation, where=a.mission)
    except ValueError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    text = yaml.safe_dump({"/**/geodyn_actuated_sim": {"ros__parameters": params}}, default_flow_style=None)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
