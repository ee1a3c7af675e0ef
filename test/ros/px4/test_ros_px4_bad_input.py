"""Every input of ``geodyn_px4_bridge`` under attack, values and bytes, through the running node.

* **Values** (well-formed messages with bad content): NaN/Inf fields, unknown or inconsistent
  frames, a non-unit quaternion, implausible sizes, missing, stale, future-dated (0.3 s, 0.8 s,
  10 s ahead) or inconsistent timestamps (``timestamp_sample`` after ``timestamp``), a
  ``reset_counter`` jump (``/fmu/out/vehicle_odometry``: the good samples are stamped by the
  node's clock, as PX4 with time sync stamps them, px4_bridge_harness.now_us); an unknown arming state (``/fmu/out/vehicle_status_v1``); a
  wrong rotor count, NaN/Inf, negative, too fast or huge speeds and a layout that does not
  describe the data (``cmd/rotor_speeds``). Each is refused (nothing published from it, one
  problem counted on ``/diagnostics``).
* **Bytes**: the good serialization cut at every length, random bytes, a random body behind a
  valid header, the XCDR2 and big-endian encapsulation ids, odd option bytes, and for the
  sequences of ``Float64MultiArray`` huge counts. rclpy's own ``deserialize_message`` on the same
  bytes decides what the node can have seen: bytes it refuses give no output; bytes it decodes
  give either nothing or exactly the output of the decoded message, and the output whenever the
  decoded message is valid by the test's own checks.

After every attack the next good message gives the right output, computed independently: the
odometry with scipy's rotations (``px4_bridge_harness.expected_odom``, 1e-5 relative: float32
fields), the setpoints of the square X quad by hand (1e-6: float32 setpoints), the protocol's
status exactly. Waits are "until the good output arrives" (ordered after the attack on the same
writer), never a timing assertion.
"""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: ROS isolation env)

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from px4_bridge_harness import SQUARE_QUAD, expected_odom, now_us, odom_arrays, odometry, rotor_msg, status, vehicle_file
from px4_msgs.msg import VehicleOdometry, VehicleStatus, VehicleThrustSetpoint, VehicleTorqueSetpoint
from rclpy._rclpy_pybind11 import RCLError
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Float64MultiArray

from geodyn_ros.ros.px4.bridge_node import Px4BridgeNode
from geodyn_ros.ros.px4.px4_wire import AHEAD_NS
from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_TYPE

ODOM, STATUS, CMD = "/fmu/out/vehicle_odometry", "/fmu/out/vehicle_status_v1", "cmd/rotor_speeds"
THRUST, TORQUE = "/fmu/in/vehicle_thrust_setpoint", "/fmu/in/vehicle_torque_setpoint"
S2 = np.sqrt(0.5)


@pytest.fixture
def bridge(h, tmp_path):
    node = h.make(Px4BridgeNode, {"actuation_config": vehicle_file(tmp_path, SQUARE_QUAD)})
    pubs = {t: h.publisher(m, t) for t, m in ((ODOM, VehicleOdometry), (STATUS, VehicleStatus), (CMD, ROTOR_MSG_TYPE))}
    for t in pubs:
        h.wait_matched(t)
    rec = {"odom": h.record(Odometry, "odom"), "thrust": h.record(VehicleThrustSetpoint, THRUST),
           "torque": h.record(VehicleTorqueSetpoint, TORQUE)}
    return node, pubs, rec


def _by_hand(omega):
    """The square X quad's setpoints (test_ros_px4_bridge._square_by_hand) of speeds ``omega``."""
    u = (np.asarray(omega, float) / 1000.0) ** 2
    px, py, km = np.array([1, -1, 1, -1]), np.array([1, -1, -1, 1]), np.array([1, 1, -1, -1])
    return np.array([-py @ u / (2 * np.sqrt(2)), px @ u / (2 * np.sqrt(2)), km @ u / 4, 0, 0, -u.sum() / 4])


def _odom_ok(got, m):
    return all(np.abs(a - b).max() <= 1e-5 * max(1.0, np.abs(b).max()) for a, b in zip(odom_arrays(got), expected_odom(m)))


def _valid_odom(m, last_sample):
    """The test's own acceptance rule for a decoded VehicleOdometry (doc/reference/px4_bridge.md)."""
    with np.errstate(invalid="ignore"):     # float32 garbage widened
        f = [np.asarray(x, float) for x in (m.position, m.q, m.velocity, m.angular_velocity)]
    sample = m.timestamp_sample or m.timestamp
    if not all(np.isfinite(x).all() for x in f) or sample == 0:
        return False
    if np.abs(f[0]).max() > 1e7 or np.abs(f[2]).max() > 1e3 or np.abs(f[3]).max() > 1e3:
        return False
    if abs(np.linalg.norm(f[1]) - 1) > 1e-3 or m.pose_frame != 1 or m.velocity_frame not in (1, 3):
        return False     # (pose_frame 2 with velocity_frame 2 or 3 is valid too; random bytes never give it)
    return sample > last_sample or last_sample - sample > 1_000_000


# ----------------------------------------------------------------------------- values
def _good_odom(k, sample_us):
    return odometry(sample_us, (k, 2, -3), (S2, 0, 0, S2), (0, 5, 0), (0.1, 0.2, 0.3))


#: [ns] a decoded sample dated within this of the bridge's "ahead" limit is not judged by the test
#: (the limit is relative to the delivery delays, a few ms here): clearly in or clearly out only
AMBIGUOUS_NS = 15_000_000


def _valid_odom(m, last_sample, published_ns):
    """The test's own acceptance rule for a decoded VehicleOdometry published at ``published_ns``
    (doc/reference/px4_bridge.md): True, False, or None where the time rule's "ahead" limit is
    too close to call."""
    with np.errstate(invalid="ignore"):     # float32 garbage widened
        f = [np.asarray(x, float) for x in (m.position, m.q, m.velocity, m.angular_velocity)]
    sample = m.timestamp_sample or m.timestamp
    if not all(np.isfinite(x).all() for x in f) or sample == 0 or sample > m.timestamp:
        return False
    if np.abs(f[0]).max() > 1e7 or np.abs(f[2]).max() > 1e3 or np.abs(f[3]).max() > 1e3:
        return False
    if abs(np.linalg.norm(f[1]) - 1) > 1e-3 or m.pose_frame != 1 or m.velocity_frame not in (1, 3):
        return False     # (pose_frame 2 with velocity_frame 2 or 3 is valid too; random bytes never give it)
    if sample <= last_sample:
        return False
    ahead = 1000 * sample - published_ns
    if abs(ahead - AHEAD_NS) < AMBIGUOUS_NS:
        return None
    return ahead < AHEAD_NS


def _bad_odometry(node, last_us):
    nan, inf = float("nan"), float("inf")
    s = max(now_us(node), last_us + 1)       # newer than the last accepted sample: only the values are bad
    return [
        ("NaN position", odometry(s, (nan, 0, 0))), ("Inf position", odometry(s, (inf, 0, 0))),
        ("NaN q", odometry(s, q=(nan, 0, 0, 1))), ("NaN velocity", odometry(s, velocity=(0, nan, 0))),
        ("NaN rate", odometry(s, rates=(0, 0, nan))),
        ("pose_frame unknown", odometry(s, pose_frame=0)), ("pose_frame 7", odometry(s, pose_frame=7)),
        ("velocity_frame unknown", odometry(s, velocity_frame=0)), ("velocity_frame 9", odometry(s, velocity_frame=9)),
        ("FRD pose with NED velocity", odometry(s, pose_frame=2, velocity_frame=1)),
        ("non-unit q", odometry(s, q=(1.1, 0, 0, 0))), ("zero q", odometry(s, q=(0, 0, 0, 0))),
        ("huge position", odometry(s, (1e30, 0, 0))), ("huge velocity", odometry(s, velocity=(1e5, 0, 0))),
        ("huge rate", odometry(s, rates=(0, 1e4, 0))), ("no timestamp", odometry(0)),
        ("stale sample", odometry(last_us - 500_000)), ("repeated sample", odometry(last_us)),
        ("10 s back", odometry(last_us - 10_000_000)),
        ("0.3 s ahead", odometry(s + 300_000)), ("0.8 s ahead", odometry(s + 800_000)),
        ("10 s ahead", odometry(s + 10_000_000)),
        ("timestamp_sample after timestamp", odometry(s, timestamp=s - 1)),
    ]


def _fresh(h, node, after_us):
    """A sample time newer than ``after_us`` and not ahead of the node's clock (spins until it is)."""
    assert h.spin_until(lambda: now_us(node) > after_us, 10.0)
    return now_us(node)


def test_bad_odometry_values_then_good(h, bridge):
    """Each bad sample is refused and changes nothing: the good sample after it is forwarded, stamped
    no earlier than its sample and no later than the node's clock (issue 51: one sample 0.8 s ahead
    was forwarded, and poisoned the stamps of the next 161 good samples)."""
    node, pubs, rec = bridge
    pubs[ODOM].publish(_good_odom(0, now_us(node)))
    assert h.spin_until(lambda: len(rec["odom"]) == 1, 10.0)
    for k in range(1, 4):
        for name, bad in _bad_odometry(node, node.mapper.last_us):
            skipped = node.diag.counters["cycles_skipped"]
            pubs[ODOM].publish(bad)
            good = _good_odom(len(rec["odom"]), _fresh(h, node, node.mapper.last_us))
            pubs[ODOM].publish(good)
            n = len(rec["odom"])
            assert h.spin_until(lambda: len(rec["odom"]) > n, 10.0), name
            assert len(rec["odom"]) == n + 1 and _odom_ok(rec["odom"][-1], good), name    # only the good one
            assert node.diag.counters["cycles_skipped"] == skipped + 1, name               # the bad one counted
            stamp = rec["odom"][-1].header.stamp.sec * 10**9 + rec["odom"][-1].header.stamp.nanosec
            assert 1000 * good.timestamp_sample <= stamp <= node.get_clock().now().nanoseconds, name
    assert node.mapper.resets == 0


def test_a_reset_counter_jump_is_forwarded_and_never_moves_the_time_rule(h, bridge):
    """PX4's estimator reset its state (EKF2Selector: reset_counter + 1) and the sample is dated 10 ms
    ahead of its real time: forwarded (PX4's newest estimate), reported, the reference unchanged."""
    from diagnostic_msgs.msg import DiagnosticStatus
    node, pubs, rec = bridge
    diag = h.record(DiagnosticArray, "/diagnostics")
    for k in range(20):
        pubs[ODOM].publish(_good_odom(k, _fresh(h, node, node.mapper.last_us or 0)))
        assert h.spin_until(lambda: len(rec["odom"]) == k + 1, 10.0)
    before = node.mapper.offset_ns
    jump = odometry(now_us(node) + 10_000, (5, 2, -3), reset_counter=1)
    pubs[ODOM].publish(jump)
    assert h.spin_until(lambda: len(rec["odom"]) == 21, 10.0) and _odom_ok(rec["odom"][-1], jump)
    assert node.mapper.offset_ns == before
    assert h.spin_until(lambda: any(s.level == DiagnosticStatus.WARN and "reset_counter 0 -> 1" in s.message
                                    for a in diag for s in a.status), 10.0)


def test_bad_status_values_then_good(h, bridge):
    node, pubs, rec = bridge
    for k, arming in enumerate((0, 3, 7, 255)):
        skipped = node.diag.counters["cycles_skipped"]
        pubs[STATUS].publish(status(arming=arming, nav=14))
        pubs[STATUS].publish(status(arming=1 + k % 2, nav=k, sysid=k + 1))
        assert h.spin_until(lambda: node.protocol.status is not None and node.protocol.status[3] == k + 1, 10.0)
        assert node.protocol.status == (1 + k % 2, k, False, k + 1, 1)
        assert node.diag.counters["cycles_skipped"] == skipped + 1


def _bad_speeds():
    nan, inf = float("nan"), float("inf")
    out = [("NaN", rotor_msg([600, nan, 600, 600])), ("Inf", rotor_msg([600, 600, inf, 600])),
           ("3 speeds", rotor_msg([600] * 3)), ("5 speeds", rotor_msg([600] * 5)), ("none", rotor_msg([])),
           ("negative", rotor_msg([600, -1, 600, 600])), ("huge", rotor_msg([1e30, 600, 600, 600])),
           ("above max_rot_velocity", rotor_msg([600, 600, 600, 1000.5]))]
    if ROTOR_MSG_TYPE is Float64MultiArray:
        m = rotor_msg([600] * 4)
        m.layout.dim[0].size = 5
        out.append(("dim size 5 for 4 values", m))
        m = rotor_msg([600] * 4)
        m.layout.data_offset = 1
        out.append(("data_offset 1", m))
    return out


def test_bad_rotor_speeds_then_good(h, bridge):
    node, pubs, rec = bridge
    for k in range(2):
        for i, (name, bad) in enumerate(_bad_speeds()):
            skipped = node.diag.counters["cycles_skipped"]
            n = len(rec["thrust"])
            pubs[CMD].publish(bad)
            omega = [600.0 + i, 650.0, 700.0 - k, 620.0]
            pubs[CMD].publish(rotor_msg(omega))
            assert h.spin_until(lambda: len(rec["thrust"]) > n and len(rec["torque"]) > n, 10.0), name
            assert len(rec["thrust"]) == n + 1, name
            got = np.concatenate([rec["torque"][-1].xyz, rec["thrust"][-1].xyz])
            assert np.abs(got - _by_hand(omega)).max() <= 1e-6, name
            assert node.diag.counters["cycles_skipped"] == skipped + 1, name


# ----------------------------------------------------------------------------- bytes
def _attacks(raw: bytes, seed: int, counts=()):
    """(name, bytes): every truncation, random bytes, random body, encapsulation and option bytes,
    huge counts at the byte offsets ``counts`` (of the sequence lengths)."""
    rng = np.random.default_rng(seed)
    out = [(f"cut to {k}", raw[:k]) for k in range(len(raw))]
    out += [(f"random {n}", bytes(rng.integers(0, 256, n, dtype=np.uint8))) for n in (4, len(raw), 3 * len(raw))]
    out += [("random body", raw[:4] + bytes(rng.integers(0, 256, len(raw) - 4, dtype=np.uint8)))]
    for name, head in (("XCDR2 LE", b"\x00\x07"), ("XCDR2 delimited", b"\x00\x09"), ("PL_CDR2", b"\x00\x0b"),
                       ("big endian", b"\x00\x00"), ("unknown encapsulation", b"\x7f\x7f")):
        out.append((name, head + raw[2:]))
    out += [("options 0x0003", raw[:2] + b"\x00\x03" + raw[4:]), ("options 0xffff", raw[:2] + b"\xff\xff" + raw[4:])]
    for at in counts:
        for value in (0x7FFFFFFF, 0xFFFFFFF0, len(raw)):
            b = bytearray(raw)
            b[at:at + 4] = value.to_bytes(4, "little")
            out.append((f"count {value:#x} at {at}", bytes(b)))
    return out


def _send(pub, b) -> bool:
    """Publish raw bytes; False when the rmw refuses to publish them (e.g. shorter than the
    4-byte encapsulation header): then the node cannot see them."""
    try:
        pub.publish(b)
        return True
    except RCLError:
        return False


def _decode(b, t):
    try:
        return deserialize_message(b, t)
    except Exception:  # noqa: BLE001  rclpy refuses the bytes
        return None


def test_odometry_bytes(h, bridge):
    node, pubs, rec = bridge
    last, sent, judged = 0, 0, 0
    for k, (name, bad) in enumerate(_attacks(serialize_message(_good_odom(1, now_us(node))), 1)):
        seen = _decode(bad, VehicleOdometry)
        published = node.get_clock().now().nanoseconds
        valid = seen is not None and _valid_odom(seen, last, published)
        n, skipped = len(rec["odom"]), node.diag.counters["cycles_skipped"]
        sent += _send(pubs[ODOM], bad)
        after = max(last, (seen.timestamp_sample or seen.timestamp) if valid in (True, None) else 0)
        good = _good_odom(10 + k, _fresh(h, node, after))
        pubs[ODOM].publish(good)
        assert h.spin_until(lambda: rec["odom"][n:] and _odom_ok(rec["odom"][-1], good), 10.0), name
        between = rec["odom"][n:-1]
        last = good.timestamp_sample
        if valid is None:
            continue                                                  # too close to the "ahead" limit to call
        judged += 1
        # rclpy refuses the bytes: the node saw nothing; it decodes them: the node refused or took them by the values
        assert node.diag.counters["cycles_skipped"] - skipped == int(seen is not None and not valid), name
        if seen is None or not valid:
            assert not between, name                                   # refused by rclpy or by the values
        else:
            assert len(between) == 1 and _odom_ok(between[0], seen), name
    assert sent > 120 and judged > 120                # the attacks reached the node (all but the shortest cuts)


def test_status_bytes(h, bridge):
    node, pubs, rec = bridge
    diag = h.record(DiagnosticArray, "/diagnostics")
    for k, (name, bad) in enumerate(_attacks(serialize_message(status()), 2)):
        seen = _decode(bad, VehicleStatus)
        skipped = node.diag.counters["cycles_skipped"]
        _send(pubs[STATUS], bad)
        sysid = 1 + k % 250
        pubs[STATUS].publish(status(arming=2, nav=3, sysid=sysid))
        assert h.spin_until(lambda: node.protocol.status == (2, 3, False, sysid, 1), 10.0), name
        # refused by rclpy: unseen; decoded: refused only for an arming state other than 1 or 2
        assert node.diag.counters["cycles_skipped"] - skipped == int(seen is not None and seen.arming_state
                                                                     not in (1, 2)), name
    h.spin_for(0.3)
    assert not [s.message for a in diag for s in a.status if "unexpected exception" in s.message]


def test_rotor_speed_bytes(h, bridge):
    node, pubs, rec = bridge
    good0 = rotor_msg([600.0, 650.0, 700.0, 620.0])
    raw = serialize_message(good0)
    n_data = 4
    counts = [4]                                     # layout.dim's count (Float64MultiArray), or the header's
    if ROTOR_MSG_TYPE is Float64MultiArray:
        counts.append(len(raw) - 8 * n_data - 4)     # data's count, just before the 4 doubles
    for k, (name, bad) in enumerate(_attacks(raw, 3, counts)):
        seen = _decode(bad, ROTOR_MSG_TYPE)
        n, skipped = len(rec["thrust"]), node.diag.counters["cycles_skipped"]
        _send(pubs[CMD], bad)
        omega = [600.0 + k % 50, 650.0, 700.0, 620.0]
        pubs[CMD].publish(rotor_msg(omega))
        want = _by_hand(omega)
        assert h.spin_until(lambda: len(rec["thrust"]) > n and len(rec["torque"]) > n and np.abs(
            np.concatenate([rec["torque"][-1].xyz, rec["thrust"][-1].xyz]) - want).max() <= 1e-6, 10.0), name
        between = len(rec["thrust"]) - n - 1
        if seen is None:
            assert between == 0 and node.diag.counters["cycles_skipped"] == skipped, name
            continue
        values = np.asarray(seen.data if hasattr(seen, "data") else seen.velocity, float)
        ok = (len(values) == 4 and np.isfinite(values).all() and (values >= 0).all() and (values <= 1000).all()
              and (not hasattr(seen, "layout") or (len(seen.layout.dim) <= 1 and not seen.layout.data_offset
                                                   and all(d.size == 4 for d in seen.layout.dim))))
        assert between == int(ok), name
        assert node.diag.counters["cycles_skipped"] - skipped == int(not ok), name
        if ok:
            got = np.concatenate([rec["torque"][n].xyz, rec["thrust"][n].xyz])
            assert np.abs(got - _by_hand(values)).max() <= 1e-6, name


def test_a_replayed_empty_message_on_an_action_name_sends_nothing(h, bridge):
    """The interface before issue 51, where std_srvs was missing: std_msgs/Empty topics ~/arm etc.,
    which ros2 bag play or any publisher could replay. The actions are services now: messages on
    those names, well-formed or attack bytes, reach nothing and send no command."""
    from px4_msgs.msg import VehicleCommand
    from std_msgs.msg import Empty
    node, pubs, rec = bridge
    cmds = h.record(VehicleCommand, "/fmu/in/vehicle_command")
    pubs[STATUS].publish(status())
    assert h.spin_until(lambda: node.protocol.status is not None, 10.0)
    for a in ("arm", "disarm", "offboard"):
        pub = h.publisher(Empty, f"/geodyn_px4_bridge/{a}")
        for _, b in _attacks(serialize_message(Empty()), 4):
            _send(pub, b)
        for _ in range(3):
            pub.publish(Empty())
    h.spin_for(0.5)
    assert not cmds and node.counts["commands"] == 0