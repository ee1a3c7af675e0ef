"""``geodyn_px4_sim`` (geodyn_ros.ros.px4.standin_node) through ROS: the PX4 stand-in behind the
/fmu topics, free-running in simulated time.

Oracles and tolerances:
* the protocol: arming refused without a proof of life, accepted with one; offboard lost after
  COM_OF_LOSS_T of simulated time and the Hold failsafe, seen on vehicle_status (PX4's rules,
  commit b67c65bf, as geodyn_ros.px4.standin cites them); times are compared in simulated time,
  to the commander's 10 ms cycle plus one status period, never to the wall clock;
* odometry (sensing perfect): the vehicle's true state converted to NED/FRD by hand (the
  permutations of PX4's ROS 2 user guide, scipy's quaternion), 1e-6: float32 rounding of values
  of a few units;
* the rotors: the commanded speeds are omega_max sqrt(u) of PX4's motor commands of the
  setpoints (Px4Allocator; the allocation itself is checked by hand in test/px4/test_px4_standin.py);
* the Hold failsafe flies: from an open-loop hover (drifting slowly) the vehicle stays within
  0.5 m of where Hold engaged and comes to rest (speed < 0.2 m/s) within 6 s; PX4's default
  gains give a velocity time constant of 1 / MPC_Z_VEL_P_ACC = 0.25 s (vertical) and 0.56 s
  (horizontal), so a drift of a few dm/s is stopped within a few cm (measured: 0.026 m, final
  speed 5e-5 m/s).
No timing is asserted: every wait is "until it happens" in simulated time, with a generous timeout.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: ROS isolation env)

from px4_bridge_harness import DATA, D, P, vehicle_file
from px4_msgs.msg import (ActuatorMotors, OffboardControlMode, VehicleCommand, VehicleOdometry, VehicleStatus,
                          VehicleThrustSetpoint, VehicleTorqueSetpoint)
from scipy.spatial.transform import Rotation

from geodyn_ros.px4.allocation import Px4Allocator
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.px4.standin_node import Px4SimNode

URDF, VEHICLE = str(DATA / "quad_x.urdf"), str(DATA / "quad_x_px4.yaml")
ODOM, STATUS = "/fmu/out/vehicle_odometry", "/fmu/out/vehicle_status_v1"
MODE, COMMAND = "/fmu/in/offboard_control_mode", "/fmu/in/vehicle_command"
THRUST, TORQUE, MOTORS = "/fmu/in/vehicle_thrust_setpoint", "/fmu/in/vehicle_torque_setpoint", "/fmu/in/actuator_motors"
W_MAX = 1000.0          # quad_x_px4.yaml max_rot_velocity


def _sim(h, **params):
    node = h.make(Px4SimNode, dict({"urdf_path": URDF, "actuation_config": VEHICLE, "real_time_factor": 0.0,
                                    "initial_base_pose": [0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0]}, **params))
    rec = {STATUS: h.record(VehicleStatus, STATUS, 1000), ODOM: h.record(VehicleOdometry, ODOM, 5000)}
    pubs = {t: h.publisher(m, t) for t, m in ((MODE, OffboardControlMode), (COMMAND, VehicleCommand),
                                              (THRUST, VehicleThrustSetpoint), (TORQUE, VehicleTorqueSetpoint),
                                              (MOTORS, ActuatorMotors))}
    assert h.spin_until(lambda: rec[STATUS], 30)
    return node, rec, pubs


def _sim_time_until(h, node, cond, seconds=60.0):
    return h.spin_until(cond, seconds)


def _proof(pubs, h, mode="thrust_and_torque"):
    pubs[MODE].publish(OffboardControlMode(**{mode: True}))
    h.spin_for(0.02)


def _arm_offboard(h, node, pubs, rec, mode="thrust_and_torque"):
    _proof(pubs, h, mode)
    assert h.spin_until(lambda: node.commander.proof_us is not None, 10)
    pubs[COMMAND].publish(VehicleCommand(command=176, param1=1.0, param2=6.0))
    assert h.spin_until(lambda: rec[STATUS][-1].nav_state == 14, 10)
    _proof(pubs, h, mode)
    pubs[COMMAND].publish(VehicleCommand(command=400, param1=1.0))
    assert h.spin_until(lambda: rec[STATUS][-1].arming_state == 2, 10)


def test_starts_disarmed_in_hold_on_its_stand(h):
    node, rec, _ = _sim(h)
    s = rec[STATUS][-1]
    assert (s.arming_state, s.nav_state, s.system_id, s.component_id, s.failsafe) == (1, 4, 1, 1, False)
    t0 = node.stamp_ns
    assert h.spin_until(lambda: node.stamp_ns > t0 + 1_500_000_000, 60)
    # held: 1.5 s of simulated time and the vehicle has not fallen (at most one step of fall, 5 µm)
    assert abs(node.sim.base_pose()[2, 3] - 2.0) < 1e-4
    assert np.all(node._rotor_cmd == 0.0)
    # the 2 Hz status: at least two more statuses in 1.5 s of simulated time
    stamps = [m.timestamp for m in rec[STATUS]]
    assert len(stamps) >= 3 and all(b > a for a, b in zip(stamps, stamps[1:]))


def test_arming_refused_without_proof_of_life(h):
    node, rec, pubs = _sim(h)
    pubs[COMMAND].publish(VehicleCommand(command=176, param1=1.0, param2=6.0))
    assert h.spin_until(lambda: rec[STATUS][-1].nav_state == 14, 10)      # disarmed: always accepted
    pubs[COMMAND].publish(VehicleCommand(command=400, param1=1.0))
    assert h.spin_until(lambda: node.counts["commands"] == 2, 10)
    h.spin_for(0.3)
    assert rec[STATUS][-1].arming_state == 1 and not node.commander.armed
    # a proof of life makes it possible; a command for another system is ignored
    _proof(pubs, h)
    pubs[COMMAND].publish(VehicleCommand(command=400, param1=1.0, target_system=7))
    assert h.spin_until(lambda: node.counts["commands"] == 3, 10)
    assert not node.commander.armed
    _proof(pubs, h)
    pubs[COMMAND].publish(VehicleCommand(command=400, param1=1.0, target_system=1))
    assert h.spin_until(lambda: rec[STATUS][-1].arming_state == 2, 10)


def test_thrust_and_torque_drive_the_rotors_through_px4s_allocation(h):
    node, rec, pubs = _sim(h)
    torque, thrust = np.array([0.05, -0.02, 0.03]), np.array([0.0, 0.0, -0.45])
    pubs[TORQUE].publish(VehicleTorqueSetpoint(xyz=[float(x) for x in torque]))
    pubs[THRUST].publish(VehicleThrustSetpoint(xyz=[float(x) for x in thrust]))
    _arm_offboard(h, node, pubs, rec)
    assert h.spin_until(lambda: np.abs(node._thrust - thrust).max() < 1e-6, 10)
    al = node.px4.allocator
    assert isinstance(al, Px4Allocator)
    u = al.motor_commands(np.float32(torque).astype(float), np.float32(thrust).astype(float))
    _proof(pubs, h)
    assert np.allclose(node._rotor_speeds(), W_MAX * np.sqrt(u), rtol=1e-9)
    # a NaN setpoint is refused, reported, never applied
    pubs[TORQUE].publish(VehicleTorqueSetpoint(xyz=[math.nan, 0.0, 0.0]))
    assert h.spin_until(lambda: node.counts["refused"] == 1, 10)
    assert np.isfinite(node._torque).all()


def test_direct_actuator_and_nan_disarmed_motor(h):
    node, rec, pubs = _sim(h)
    _arm_offboard(h, node, pubs, rec, mode="direct_actuator")
    control = [0.36, 0.25, math.nan, 0.49] + [math.nan] * 8
    pubs[MOTORS].publish(ActuatorMotors(control=control))
    assert h.spin_until(lambda: node._motors is not None, 10)
    _proof(pubs, h, "direct_actuator")
    # u -> omega_max sqrt(u) (float32 on the wire), NaN -> motor off
    expect = W_MAX * np.sqrt(np.float32([0.36, 0.25, 0.0, 0.49]).astype(float))
    assert np.allclose(node._rotor_speeds(), expect, rtol=1e-9)


def test_odometry_is_the_state_in_ned_frd(h):
    node, rec, _ = _sim(h, sensing="perfect", initial_base_pose=[0.3, -0.2, 2.0, 0.0, 0.0, 0.258819, 0.965926])
    assert h.spin_until(lambda: len(rec[ODOM]) > 10, 30)
    m = rec[ODOM][-1]
    assert (m.pose_frame, m.velocity_frame) == (1, 1) and m.timestamp >= m.timestamp_sample > 0
    # on its stand the vehicle is at its initial pose: position (0.3, -0.2, 2) ENU is (-0.2, 0.3, -2) NED
    assert np.allclose(m.position, [-0.2, 0.3, -2.0], atol=1e-4)
    # yaw 30 deg about ENU z (left turn) is a heading of 90 - 30 = 60 deg in NED, about NED z (down)
    R_enu_flu = Rotation.from_quat([0.0, 0.0, 0.258819, 0.965926]).as_matrix()
    q = np.array(m.q, dtype=float)
    R_ned_frd = Rotation.from_quat([q[1], q[2], q[3], q[0]]).as_matrix()
    assert np.allclose(R_ned_frd, P @ R_enu_flu @ D, atol=1e-6)
    assert np.isclose(Rotation.from_matrix(R_ned_frd).as_euler("ZYX", degrees=True)[0], 60.0, atol=1e-3)
    assert np.allclose(m.velocity, 0.0, atol=0.02) and np.allclose(m.angular_velocity, 0.0, atol=1e-6)


def test_onboard_profile_rate_and_delay(h):
    node, rec, _ = _sim(h)              # sensing onboard: 100 Hz, delivered 10 ms after measurement
    assert h.spin_until(lambda: len(rec[ODOM]) > 50, 60)
    ms = rec[ODOM][5:50]
    periods = np.diff([m.timestamp_sample for m in ms])
    assert np.all(np.abs(periods - 10_000) <= 1_000)        # the 1 ms step quantizes the 10 ms period
    delays = np.array([m.timestamp - m.timestamp_sample for m in ms])
    assert np.all((delays >= 10_000) & (delays < 11_000))   # first step at or after +10 ms


def test_offboard_loss_hold_failsafe_and_back(h):
    node, rec, pubs = _sim(h, sensing="perfect", com_obl_rc_act=5)     # Hold
    # open-loop hover: each rotor's thrust CT u with the thrust column's mean entry 1 (PX4's
    # normalisation) and torque 0: u = m g / (4 CT) = 1.5 x 9.81 / (4 x 8.5)
    pubs[TORQUE].publish(VehicleTorqueSetpoint(xyz=[0.0, 0.0, 0.0]))
    pubs[THRUST].publish(VehicleThrustSetpoint(xyz=[0.0, 0.0, -1.5 * 9.81 / (4 * 8.5)]))
    _arm_offboard(h, node, pubs, rec)
    # the proof of life stops; the setpoints stay (PX4 holds the last)
    t_last = node.commander.proof_us
    assert h.spin_until(lambda: rec[STATUS][-1].nav_state == 4 and rec[STATUS][-1].failsafe, 60)
    lost = next(m for m in rec[STATUS] if m.failsafe)
    # offboard lost at the first 10 Hz health check at or after proof + COM_OF_LOSS_T (1 s), seen at
    # the next commander cycle (PX4 SITL: 1.04-1.10 s)
    assert 1_000_000 <= lost.timestamp - t_last <= 1_100_000 + 10_000
    C0 = node._est[0].copy()
    t0 = node.stamp_ns
    track = []
    assert h.spin_until(lambda: (track.append((node.sim.base_pose()[:3, 3].copy(),
                                               np.linalg.norm(node.sim.base_twist_body()[3:])))
                                 or node.stamp_ns > t0 + 6_000_000_000), 180)
    p = np.array([t[0] for t in track])
    assert np.linalg.norm(p - C0[:3, 3], axis=1).max() < 0.5
    assert track[-1][1] < 0.2 and rec[STATUS][-1].arming_state == 2
    # the proof of life returns: offboard again (the fallback clears with its condition)
    _proof(pubs, h)
    assert h.spin_until(lambda: rec[STATUS][-1].nav_state == 14 and not rec[STATUS][-1].failsafe, 30)


def test_offboard_loss_default_descends_level(h):
    """COM_OBL_RC_ACT 0 (the default): Position (nav_state 2) with the failsafe flag and PX4's
    emergency Descend without sticks, as PX4 SITL did: level, down at MPC_LAND_SPEED 0.7 m/s."""
    node, rec, pubs = _sim(h, sensing="perfect")
    pubs[TORQUE].publish(VehicleTorqueSetpoint(xyz=[0.0, 0.0, 0.0]))
    pubs[THRUST].publish(VehicleThrustSetpoint(xyz=[0.0, 0.0, -1.5 * 9.81 / (4 * 8.5)]))
    _arm_offboard(h, node, pubs, rec)
    assert h.spin_until(lambda: rec[STATUS][-1].nav_state == 2 and rec[STATUS][-1].failsafe, 60)
    t0 = node.stamp_ns
    z0 = node.sim.base_pose()[2, 3]
    assert h.spin_until(lambda: node.stamp_ns > t0 + 2_000_000_000, 120)
    C = node.sim.base_pose()
    # 2 s of Descend: the vertical speed loop (MPC_Z_VEL_P_ACC 4, behind the rotor lag) reaches
    # 0.7 m/s within about a second (measured: 1.23 m in 2 s)
    assert 1.0 < z0 - C[2, 3] < 1.5, z0 - C[2, 3]
    assert np.degrees(np.arccos(np.clip(C[2, 2], -1.0, 1.0))) < 5.0          # level
    v_z = (C[:3, :3] @ node.sim.base_twist_body()[3:])[2]           # world frame, z up
    assert abs(v_z + 0.7) < 0.1, v_z


def test_offboard_loss_disarm_action(h):
    node, rec, pubs = _sim(h, com_obl_rc_act=7, com_of_loss_t=0.2)
    _arm_offboard(h, node, pubs, rec)
    assert h.spin_until(lambda: rec[STATUS][-1].arming_state == 1, 60)
    assert np.all(node._rotor_speeds() == 0.0)


@pytest.mark.parametrize("params, words", [
    ({"lockstep": True}, "'lockstep'"),
    ({"com_obl_rc_act": 9}, "'com_obl_rc_act'"),
    ({"com_of_loss_t": -1.0}, "'com_of_loss_t'"),
])
def test_bad_parameters_refused_in_one_line(h, params, words):
    with pytest.raises(ConfigurationError, match=words):
        h.make(Px4SimNode, dict({"urdf_path": URDF, "actuation_config": VEHICLE}, **params))


def test_vehicle_without_px4_section_refused(h, tmp_path):
    path = vehicle_file(tmp_path, px4="")
    with pytest.raises(ConfigurationError, match="px4: missing"):
        h.make(Px4SimNode, {"urdf_path": URDF, "actuation_config": path})
