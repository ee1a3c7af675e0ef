"""``geodyn_px4_bridge`` (geodyn_ros.ros.px4.bridge_node) through ROS: odometry frames, the
setpoints of both PX4 modes, the layout of what it publishes, the offboard protocol.

Oracles and tolerances:
* odometry: two worked examples of PX4's frame conventions, written by hand, and random states
  against scipy's rotations (``px4_bridge_harness.expected_odom``); 1e-6, the float32 rounding of
  PX4's fields (6e-8 relative) times values of a few units, with margin;
* ``thrust_and_torque`` on a square X quad: the setpoints worked by hand from the closed-form
  normalised mix (roll and pitch columns +-1/sqrt(2), yaw +-1, thrust -1, orthogonal), and the
  round trip through ``Px4Allocator`` (PX4's allocation) back to the commanded relative thrusts;
  on the package's X quad (uneven arms) the hover by hand (torque 0, thrust -u) and the round
  trip. 1e-6: float32 setpoints (6e-8 relative) through mix entries of at most 1, summed over 6;
* ``direct_actuator``: exactly float32(omega^2 / omega_max^2), NaN beyond the rotors;
* layouts: the raw bytes the bridge publishes have the sizes worked by hand for px4_msgs 1.16.0
  (test/interfaces/test_geodyn_msgs.py, PX4_SIZES) and decode with rclpy's deserializer.
No timing is asserted: every wait is "until it happens", with a generous timeout.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: ROS isolation env)

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from px4_bridge_harness import (SQUARE_QUAD, expected_odom, now_us, odom_arrays, odometry, rotor_msg, status,
                                vehicle_file)
from px4_msgs.msg import (ActuatorMotors, OffboardControlMode, VehicleCommand, VehicleOdometry, VehicleStatus,
                          VehicleThrustSetpoint, VehicleTorqueSetpoint)
from rclpy.serialization import deserialize_message, serialize_message
from std_srvs.srv import Trigger

from geodyn_ros.px4.allocation import Px4Allocator
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.px4.bridge_node import Px4BridgeNode
from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_TYPE
from geodyn_ros.vehicle import load_vehicle

ODOM, STATUS = "/fmu/out/vehicle_odometry", "/fmu/out/vehicle_status_v1"
THRUST, TORQUE, MOTORS = "/fmu/in/vehicle_thrust_setpoint", "/fmu/in/vehicle_torque_setpoint", "/fmu/in/actuator_motors"
MODE, COMMAND = "/fmu/in/offboard_control_mode", "/fmu/in/vehicle_command"
#: px4_msgs 1.16.0 serialized sizes, worked by hand in test/interfaces/test_geodyn_msgs.py (PX4_SIZES: what
#: rclpy's serialize_message gives, the buffer padded to a multiple of 4)
SIZES = {VehicleThrustSetpoint: 32, VehicleTorqueSetpoint: 32, OffboardControlMode: 20, ActuatorMotors: 72,
         VehicleCommand: 60}
#: on the wire the payload ends with its last field: OffboardControlMode's 4-byte encapsulation header,
#: uint64 timestamp and 7 bools are 4 + 8 + 7 = 19 bytes, not padded to 20; the others end aligned
WIRE = {**SIZES, OffboardControlMode: 19}
S2 = math.sqrt(0.5)


def _bridge(h, path, **params):
    node = h.make(Px4BridgeNode, dict({"actuation_config": path}, **params))
    pubs = {t: h.publisher(m, t) for t, m in ((ODOM, VehicleOdometry), (STATUS, VehicleStatus),
                                              ("cmd/rotor_speeds", ROTOR_MSG_TYPE))}
    for t in pubs:
        h.wait_matched(t)
    return node, pubs


def _close(a, b, tol=1e-6):
    return np.abs(np.asarray(a, float) - np.asarray(b, float)).max() <= tol


def test_odometry_worked_examples_and_random_states(h, tmp_path):
    node, pubs = _bridge(h, vehicle_file(tmp_path), frame_prefix="robot1/")
    got = h.record(Odometry, "odom")
    # 1. 1 m north, 2 m east, 3 m up, nose east (yaw +90 deg in NED), flying east at 5 m/s,
    #    rates p, q, r = 0.1, 0.2, 0.3 rad/s: ENU (2, 1, 3), heading along ENU x (identity),
    #    forward speed 5 m/s, FLU rates (0.1, -0.2, -0.3)
    pubs[ODOM].publish(odometry(now_us(node), (1, 2, -3), (S2, 0, 0, S2), (0, 5, 0), (0.1, 0.2, 0.3)))
    assert h.spin_until(lambda: len(got) == 1, 10.0)
    p, R, w, v = odom_arrays(got[0])
    assert _close(p, [2, 1, 3]) and _close(R, np.eye(3)) and _close(v, [5, 0, 0]) and _close(w, [0.1, -0.2, -0.3])
    assert (got[0].header.frame_id, got[0].child_frame_id) == ("world", "robot1/base_link")
    # 2. level, nose north (q = 1): ENU heading +90 deg about z; body-FRD velocity (1, 2, 3) -> FLU (1, -2, -3)
    pubs[ODOM].publish(odometry(now_us(node), (0, 0, 0), (1, 0, 0, 0), (1, 2, 3), velocity_frame=3))
    assert h.spin_until(lambda: len(got) == 2, 10.0)
    p, R, w, v = odom_arrays(got[1])
    assert _close(R, [[0, -1, 0], [1, 0, 0], [0, 0, 1]]) and _close(v, [1, -2, -3])
    # random states against scipy
    rng = np.random.default_rng(3)
    for k in range(5):
        q = rng.normal(size=4)
        m = odometry(now_us(node), rng.normal(size=3) * 10, q / np.linalg.norm(q), rng.normal(size=3),
                     rng.normal(size=3), velocity_frame=int(rng.choice([1, 3])))
        pubs[ODOM].publish(m)
        assert h.spin_until(lambda: len(got) == 3 + k, 10.0)
        for a, b in zip(odom_arrays(got[-1]), expected_odom(m)):
            assert _close(a, b, 1e-5 * max(1.0, np.abs(b).max()))
    # the stamps follow the samples and are never after the node's clock
    stamps = [s.header.stamp.sec * 10**9 + s.header.stamp.nanosec for s in got]
    assert all(b > a for a, b in zip(stamps, stamps[1:]))
    assert stamps[-1] <= node.get_clock().now().nanoseconds


def _square_by_hand(u):
    """The setpoints of relative thrusts ``u`` on SQUARE_QUAD, by hand (module docstring):
    c_k = col_k . u / |col_k|^2 with the orthogonal mix columns of PX4's square X quad."""
    px, py, km = np.array([1, -1, 1, -1]), np.array([1, -1, -1, 1]), np.array([1, 1, -1, -1])
    roll = (-py @ u) / (2 * math.sqrt(2))           # a rotor on the right (PY > 0) rolls left when it pushes
    pitch = (px @ u) / (2 * math.sqrt(2))           # a front rotor pitches up
    yaw = (km @ u) / 4                              # KM > 0: ccw rotor, positive yaw reaction
    return np.array([roll, pitch, yaw]), np.array([0.0, 0.0, -u.sum() / 4])


def test_thrust_and_torque_setpoints_by_hand_and_round_trip(h, tmp_path):
    path = vehicle_file(tmp_path, SQUARE_QUAD)
    node, pubs = _bridge(h, path)
    th, tq = h.record(VehicleThrustSetpoint, THRUST), h.record(VehicleTorqueSetpoint, TORQUE)
    cfg = load_vehicle(path)
    alloc = Px4Allocator.from_frames(cfg.rotor_frames(None)[1], cfg.rotors)   # PX4's allocation of the same file
    for k, omega in enumerate(([700.0, 720.0, 690.0, 705.0], [500.0, 800.0, 650.0, 600.0], [600.0] * 4)):
        omega = np.array(omega)
        pubs["cmd/rotor_speeds"].publish(rotor_msg(omega))
        assert h.spin_until(lambda: len(th) > k and len(tq) > k, 10.0)
        u = (omega / 1000.0) ** 2
        torque, thrust = np.array(tq[k].xyz, float), np.array(th[k].xyz, float)
        want_torque, want_thrust = _square_by_hand(u)
        assert _close(torque, want_torque) and _close(thrust, want_thrust)
        assert alloc.unsaturated(torque, thrust)
        assert _close(alloc.motor_commands(torque, thrust), u)        # PX4 allocates them back to u


def test_thrust_and_torque_hover_and_round_trip_on_uneven_arms(h, tmp_path):
    """test/data/quad_x.yaml (arms 0.13 m forward, 0.22/0.20 m sideways): at hover the moments of
    equal thrusts cancel, so PX4's setpoints are torque 0 and thrust -u (the thrust column of the
    normalised mix is -1 on every rotor); off hover the round trip through PX4's allocation."""
    path = vehicle_file(tmp_path)
    node, pubs = _bridge(h, path)
    th, tq = h.record(VehicleThrustSetpoint, THRUST), h.record(VehicleTorqueSetpoint, TORQUE)
    pubs["cmd/rotor_speeds"].publish(rotor_msg([700.0] * 4))
    assert h.spin_until(lambda: th and tq, 10.0)
    assert _close(tq[0].xyz, [0, 0, 0]) and _close(th[0].xyz, [0, 0, -0.49])
    cfg = load_vehicle(path)
    alloc = Px4Allocator.from_frames(cfg.rotor_frames(None)[1], cfg.rotors)
    omega = np.array([730.0, 680.0, 705.0, 712.0])
    pubs["cmd/rotor_speeds"].publish(rotor_msg(omega))
    assert h.spin_until(lambda: len(th) > 1 and len(tq) > 1, 10.0)
    assert _close(alloc.motor_commands(tq[1].xyz, th[1].xyz), (omega / 1000.0) ** 2)


def test_direct_actuator_sends_relative_thrust(h, tmp_path):
    node, pubs = _bridge(h, vehicle_file(tmp_path, px4="px4: {thr_mdl_fac: 0.6}"), px4_mode="direct_actuator")
    got = h.record(ActuatorMotors, MOTORS)
    omega = np.array([700.0, 720.0, 0.0, 1000.0])
    pubs["cmd/rotor_speeds"].publish(rotor_msg(omega))
    assert h.spin_until(lambda: got, 10.0)
    c = np.array(got[0].control, dtype=np.float32)
    # relative thrust, not the motor signal: PX4's mixer applies THR_MDL_FAC (0.6 here) itself
    assert np.array_equal(c[:4], ((omega / 1000.0) ** 2).astype(np.float32))
    assert np.isnan(c[4:]).all()


@pytest.mark.parametrize("mode", ["thrust_and_torque", "direct_actuator"])
def test_published_bytes_have_the_px4_msgs_layout(h, tmp_path, mode):
    """The raw bytes of each message type the bridge publishes: the release's size and rclpy's decode."""
    types = {MODE: OffboardControlMode, COMMAND: VehicleCommand}
    types.update({THRUST: VehicleThrustSetpoint, TORQUE: VehicleTorqueSetpoint} if mode == "thrust_and_torque"
                 else {MOTORS: ActuatorMotors})
    raw = {t: [] for t in types}
    for t, m in types.items():
        h.probe.create_subscription(m, t, raw[t].append, 10, raw=True)
    node, pubs = _bridge(h, vehicle_file(tmp_path), px4_mode=mode)
    pubs[STATUS].publish(status())
    pubs["cmd/rotor_speeds"].publish(rotor_msg([600.0] * 4))
    assert h.spin_until(lambda: raw[MODE] and node.protocol.status is not None, 10.0)
    node.request("disarm", "test")
    assert h.spin_until(lambda: all(raw.values()), 10.0)
    for t, chunks in raw.items():
        for b in chunks:
            assert len(b) == WIRE[types[t]], t
            assert len(serialize_message(deserialize_message(b, types[t]))) == SIZES[types[t]], t
    pol = deserialize_message(raw[MODE][0], OffboardControlMode)
    assert pol.timestamp == 0 and getattr(pol, mode)
    assert [k for k in ("position", "velocity", "acceleration", "attitude", "body_rate", "thrust_and_torque",
                        "direct_actuator") if getattr(pol, k)] == [mode]


def _diag_messages(diag):
    return [s.message for a in diag for s in a.status]


def test_proof_of_life_only_while_commands_are_fresh(h, tmp_path):
    node, pubs = _bridge(h, vehicle_file(tmp_path), command_timeout=0.3, proof_of_life_rate_hz=20.0)
    modes = h.record(OffboardControlMode, MODE)
    diag = h.record(DiagnosticArray, "/diagnostics")
    h.spin_for(0.5)
    assert not modes                                    # no commands yet: no proof of life
    for _ in range(10):
        pubs["cmd/rotor_speeds"].publish(rotor_msg([600.0] * 4))
        h.spin_for(0.05)
    assert h.spin_until(lambda: len(modes) >= 2, 10.0)
    assert all(m.thrust_and_torque and not m.direct_actuator for m in modes)
    assert h.spin_until(lambda: not node.protocol.streaming, 10.0)     # commands stopped: stale
    n = len(modes)
    h.spin_for(1.0)
    assert len(modes) <= n + 1                          # at most one already in flight, then silence
    assert h.spin_until(lambda: any("STOPPED" in s for s in _diag_messages(diag)), 10.0)
    pubs["cmd/rotor_speeds"].publish(rotor_msg([600.0] * 4))         # resumes
    assert h.spin_until(lambda: len(modes) > n + 1, 10.0)


def _call(h, client, timeout=10.0):
    """Call a std_srvs/Trigger service and spin until it answers: (success, message)."""
    assert client.wait_for_service(timeout_sec=timeout)
    fut = client.call_async(Trigger.Request())
    assert h.spin_until(fut.done, timeout)
    r = fut.result()
    return r.success, r.message


def test_actions_are_explicit_logged_and_confirmed(h, tmp_path):
    node, pubs = _bridge(h, vehicle_file(tmp_path), offboard_warmup=0.2, action_timeout=0.5)
    cmds = h.record(VehicleCommand, COMMAND)
    diag = h.record(DiagnosticArray, "/diagnostics")
    act = {a: h.probe.create_client(Trigger, f"/geodyn_px4_bridge/{a}") for a in ("arm", "disarm", "offboard")}
    ok, why = _call(h, act["offboard"])
    assert not ok and "offboard refused: no vehicle_status" in why
    pubs[STATUS].publish(status(sysid=5, compid=1))
    assert h.spin_until(lambda: node.protocol.status is not None, 10.0)
    ok, why = _call(h, act["arm"])
    assert not ok and "arm refused: no fresh" in why
    assert not cmds                                     # nothing implicit, nothing refused was sent

    def feed():
        pubs["cmd/rotor_speeds"].publish(rotor_msg([600.0] * 4))
        return (node.protocol.streamed_for(node.get_clock().now().nanoseconds) or 0) > node.protocol.warmup_ns
    assert h.spin_until(feed, 10.0)
    ok, why = _call(h, act["offboard"])
    assert ok and why.startswith("offboard: sent VEHICLE_CMD_DO_SET_MODE")
    assert h.spin_until(lambda: cmds, 10.0)
    c = cmds[0]
    assert (c.command, c.param1, c.param2, c.target_system, c.target_component, c.from_external) == \
        (176, 1.0, 6.0, 5, 1, True)
    pubs[STATUS].publish(status(nav=14, sysid=5))
    assert h.spin_until(lambda: any("offboard: confirmed" in s for s in _diag_messages(diag)), 10.0)
    feed()
    ok, why = _call(h, act["arm"])
    assert ok and h.spin_until(lambda: len(cmds) == 2, 10.0)
    assert (cmds[1].command, cmds[1].param1) == (400, 1.0)
    # PX4 never reports armed: the result says so
    assert h.spin_until(lambda: feed() is not None and any("arm: NOT confirmed" in s for s in _diag_messages(diag)),
                        10.0)
    ok, why = _call(h, act["disarm"])
    assert ok and h.spin_until(lambda: len(cmds) == 3, 10.0)
    assert (cmds[2].command, cmds[2].param1) == (400, 0.0)


def test_the_actions_are_services_and_nothing_else(h, tmp_path):
    """No install-dependent interface: ~/arm, ~/disarm, ~/offboard are std_srvs/Trigger services, and
    no topic of those names exists (a topic could be replayed by ros2 bag play)."""
    node, pubs = _bridge(h, vehicle_file(tmp_path))
    services = dict(node.get_service_names_and_types())
    topics = dict(node.get_topic_names_and_types())
    for a in ("arm", "disarm", "offboard"):
        assert services[f"/geodyn_px4_bridge/{a}"] == ["std_srvs/srv/Trigger"]
        assert f"/geodyn_px4_bridge/{a}" not in topics


def test_arm_and_offboard_on_start(h, tmp_path):
    node, pubs = _bridge(h, vehicle_file(tmp_path), offboard_warmup=0.2, arm_and_offboard_on_start=True)
    cmds = h.record(VehicleCommand, COMMAND)
    pubs[STATUS].publish(status())

    def feed():
        pubs["cmd/rotor_speeds"].publish(rotor_msg([600.0] * 4))
        return bool(cmds)
    assert h.spin_until(feed, 10.0)
    assert cmds[0].command == 176 and len(cmds) == 1    # offboard first; arming waits for it
    pubs[STATUS].publish(status(nav=14))
    assert h.spin_until(lambda: feed() and len(cmds) == 2, 10.0)
    assert (cmds[1].command, cmds[1].param1) == (400, 1.0)


@pytest.mark.parametrize("px4, params, says", [
    ("", {}, "px4: missing; the PX4 bridge needs"),
    ("px4: {thr_mdl_fac: 0}", {"px4_mode": "attitude"}, "parameter 'px4_mode'"),
    ("px4: {thr_mdl_fac: 0}", {"proof_of_life_rate_hz": 1.0}, "below the 2 Hz"),
    ("px4: {thr_mdl_fac: 2}", {}, "px4.thr_mdl_fac: 2.0 is above 1"),
])
def test_configuration_refusals_are_one_line(h, tmp_path, px4, params, says):
    path = vehicle_file(tmp_path, px4=px4)
    with pytest.raises(ConfigurationError) as e:
        h.make(Px4BridgeNode, dict({"actuation_config": path}, **params))
    assert says in str(e.value) and "\n" not in str(e.value)
    if not px4:
        assert str(e.value).startswith(f"{path}: px4: missing") and "add 'px4:" in str(e.value)


def test_flat_hexarotor_gets_the_least_norm_commands_of_the_same_wrench(h, tmp_path):
    """test/data/hex_list.yaml: six collinear rotors (rank 4), one with its own motor constant.
    PX4 allocates the setpoints to the least-norm relative thrusts of the commanded wrench. Oracle:
    the package's own allocation matrix A (FLU, per omega^2; geodyn_ros.control.rotors.Allocation),
    scaled to relative thrust M = A diag(omega_max^2): same wrench M u' = M u, and u' = pinv(M) M u
    (numpy). 1e-6: float32 setpoints through the mix."""
    from geodyn_ros.control.rotors import Allocation
    from px4_bridge_harness import DATA
    path = vehicle_file(tmp_path, (DATA / "hex_list.yaml").read_text())
    node, pubs = _bridge(h, path)
    th, tq = h.record(VehicleThrustSetpoint, THRUST), h.record(VehicleTorqueSetpoint, TORQUE)
    cfg = load_vehicle(path)
    wmax = np.broadcast_to(cfg.rotors.per_rotor("max_rot_velocity"), (6,))
    M = Allocation.from_frames(cfg.rotor_poses, cfg.rotors).A * wmax ** 2
    omega = np.array([600.0, 640.0, 610.0, 650.0, 590.0, 630.0])
    pubs["cmd/rotor_speeds"].publish(rotor_msg(omega))
    assert h.spin_until(lambda: th and tq, 10.0)
    alloc = Px4Allocator.from_frames(cfg.rotor_frames(None)[1], cfg.rotors)
    u = (omega / wmax) ** 2
    back = alloc.motor_commands(tq[0].xyz, th[0].xyz)
    assert _close(M @ back, M @ u, 1e-6 * np.abs(M).max() * 6) and _close(back, np.linalg.pinv(M) @ M @ u)


def test_setpoints_that_px4_will_desaturate_are_counted(h, tmp_path):
    """A yaw-heavy command near full thrust on the square X quad: within bounds, but PX4 (airmode
    off) desaturates roll/pitch/thrust without yaw first and returns other motor commands
    (doc/reference/px4_allocation.md: (0.98, 0.5, 0.98, 0.02) comes back changed). Sent, and counted."""
    node, pubs = _bridge(h, vehicle_file(tmp_path, SQUARE_QUAD))
    th = h.record(VehicleThrustSetpoint, THRUST)
    u = np.array([0.98, 0.5, 0.98, 0.02])
    pubs["cmd/rotor_speeds"].publish(rotor_msg(1000.0 * np.sqrt(u)))
    assert h.spin_until(lambda: th, 10.0)
    assert node.counts["desaturated"] == 1 and "desaturate" in node.diag.notes["desaturated"]
    pubs["cmd/rotor_speeds"].publish(rotor_msg([600.0] * 4))
    assert h.spin_until(lambda: len(th) == 2, 10.0)
    assert node.counts["desaturated"] == 1


def test_thrust_is_published_before_torque_on_the_wire(h, tmp_path):
    """PX4's allocator runs when a torque setpoint arrives, with the thrust it has then
    (ControlAllocator::Run, "Run allocator on torque changes"), and PX4's own rate controller
    publishes thrust first (MulticopterRateControl::Run): each command's thrust must be on the
    wire before its torque (issue 51: torque went first in 69 of 69 pairs). Each message's DDS source
    timestamp, taken by its writer at publication (rclpy's MessageInfo), orders the two writers."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from geodyn_ros.ros.common.runtime import control_qos
    node, pubs = _bridge(h, vehicle_file(tmp_path, SQUARE_QUAD))
    # the harness's EventsExecutor cannot take a message with its info: a probe of its own
    wire = rclpy.create_node("order_probe", context=h.ctx)
    ex = SingleThreadedExecutor(context=h.ctx)
    ex.add_node(wire)
    got = {THRUST: [], TORQUE: []}
    for topic, msg_type in ((THRUST, VehicleThrustSetpoint), (TORQUE, VehicleTorqueSetpoint)):
        wire.create_subscription(msg_type, topic, lambda m, info, t=topic: got[t].append((info["source_timestamp"], m)),
                                 control_qos(100))

    def spin_until(cond):
        for _ in range(1000):
            h.ex.spin_once(timeout_sec=0.005)
            ex.spin_once(timeout_sec=0.005)
            if cond():
                return True
        return False
    try:
        assert spin_until(lambda: node.count_subscribers(THRUST) and node.count_subscribers(TORQUE))
        for k in range(30):
            omega = np.array([600.0 + 5 * k, 650.0, 700.0, 620.0])
            pubs["cmd/rotor_speeds"].publish(rotor_msg(omega))
            assert spin_until(lambda: len(got[THRUST]) > k and len(got[TORQUE]) > k)
            (t_thrust, thrust), (t_torque, torque) = got[THRUST][k], got[TORQUE][k]
            want_torque, want_thrust = _square_by_hand((omega / 1000.0) ** 2)
            assert _close(thrust.xyz, want_thrust) and _close(torque.xyz, want_torque)     # one command's pair
            assert 0 < t_thrust < t_torque, k
    finally:
        ex.remove_node(wire)
        wire.destroy_node()


def test_a_vehicle_px4_cannot_allocate_exactly_is_refused_at_start(h, tmp_path):
    """An x500 whose motors are canted 1-3 deg (test/px4/test_px4_canted.py): one line, the reason."""
    axis = [np.array(a) / np.linalg.norm(a) for a in ([0.03, 0.01, -1], [-0.02, 0.035, -1], [0.015, -0.04, -1],
                                                      [-0.03, -0.02, -1])]
    rotors = "".join(f"  - px4: {{PX: {p[0]}, PY: {p[1]}, AX: {float(a[0])!r}, AY: {float(a[1])!r}, AZ: {float(a[2])!r}, "
                     f"KM: {k}}}\n" for p, a, k in
                     zip([[0.13, 0.22], [-0.13, -0.2], [0.13, -0.22], [-0.13, 0.2]], axis, [0.05, 0.05, -0.05, -0.05]))
    path = vehicle_file(tmp_path, SQUARE_QUAD.split("rotors:")[0] + "rotors:\n" + rotors + "constants:" +
                        SQUARE_QUAD.split("constants:")[1])
    with pytest.raises(ConfigurationError) as e:
        h.make(Px4BridgeNode, {"actuation_config": path})
    msg = str(e.value)
    assert "\n" not in msg and "PX4 cannot allocate this vehicle exactly" in msg and "rounding" in msg


def test_armed_says_when_px4_applies_the_commands(h, tmp_path):
    """``armed`` (std_msgs/Bool, transient local): false at start (a late subscriber gets it), true
    only while PX4 is armed AND in offboard, false again on disarm or another mode; once per change."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Bool
    node, pubs = _bridge(h, vehicle_file(tmp_path))
    got = []
    h.probe.create_subscription(Bool, "armed", lambda m: got.append(m.data), QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    assert h.spin_until(lambda: got == [False], 10.0)             # the latched start value, to a late reader
    for st, want in ((status(), [False]), (status(arming=2), [False]), (status(arming=2, nav=14), [False, True]),
                     (status(arming=2, nav=14), [False, True]), (status(arming=2, nav=4), [False, True, False]),
                     (status(arming=2, nav=14), [False, True, False, True]),
                     (status(arming=1, nav=14), [False, True, False, True, False])):
        pubs[STATUS].publish(st)
        h.spin_until(lambda: False, 0.2)
        assert h.spin_until(lambda want=want: got == want, 5.0), (got, want)
