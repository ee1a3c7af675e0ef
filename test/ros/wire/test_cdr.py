"""geodyn_ros.ros.wire.cdr against rclpy's own serializer (rclpy.serialization.serialize_message):
every field the node reads, for randomized messages including empty strings and sequences,
unicode names and odd string lengths (the alignment cases), and clear errors for bad bytes."""
import numpy as np
import pytest

pytest.importorskip("rclpy")
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402

from geodyn_ros.ros.wire.cdr import (CdrError, decode_float64_multiarray, decode_joint_state,  # noqa: E402
                                decode_odometry, name_cache)

RNG = np.random.default_rng(7)
NAMES = ["", "a", "ab", "abc", "base_link", "wörld", "x" * 13]


@pytest.mark.parametrize("frame", NAMES)
@pytest.mark.parametrize("child", NAMES[:4] + NAMES[5:])
def test_odometry(frame, child):
    m = Odometry()
    m.header.stamp.sec, m.header.stamp.nanosec = -5, 999_999_999
    m.header.frame_id, m.child_frame_id = frame, child
    v = RNG.normal(size=13)
    p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(x) for x in v[:7])
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[7:])
    m.pose.covariance = [float(x) for x in RNG.normal(size=36)]
    m.twist.covariance = [float(x) for x in RNG.normal(size=36)]
    sec, nsec, f, c, pose, twist = decode_odometry(serialize_message(m))
    assert (sec, nsec, f, c) == (-5, 999_999_999, frame, child)
    assert np.array_equal(pose, v[:7]) and np.array_equal(twist, v[7:])


@pytest.mark.parametrize("n_pos, n_vel", [(0, 0), (0, 3), (3, 0), (6, 6), (1, 2)])
def test_joint_state(n_pos, n_vel):
    cache = name_cache()
    for names in (["J2", "J3x", "joint_four", ""], ["J2", "J3x", "joint_four", ""], ["a", "bb"]):
        m = JointState()
        m.header.stamp.sec, m.header.stamp.nanosec = 12, 34
        m.header.frame_id = "odd"
        m.name = names
        m.position = [float(x) for x in RNG.normal(size=n_pos)]
        m.velocity = [float(x) for x in RNG.normal(size=n_vel)]
        m.effort = [1.0, 2.0]
        for c in (None, cache):
            sec, nsec, nm, pos, vel = decode_joint_state(serialize_message(m), cache=c)
            assert (sec, nsec, nm) == (12, 34, tuple(names))
            assert np.array_equal(pos, m.position) and np.array_equal(vel, m.velocity)


def test_float64_multiarray():
    m = Float64MultiArray()
    m.layout.dim = [MultiArrayDimension(label="rows", size=3, stride=12),
                    MultiArrayDimension(label="wx,wy,J2", size=4, stride=4)]
    m.layout.data_offset = 9
    m.data = [float(x) for x in RNG.normal(size=21)]
    d = decode_float64_multiarray(serialize_message(m), "reference")
    assert [(x.label, x.size, x.stride) for x in d.layout.dim] == [("rows", 3, 12), ("wx,wy,J2", 4, 4)]
    assert d.layout.data_offset == 9 and np.array_equal(d.data, m.data)
    e = decode_float64_multiarray(serialize_message(Float64MultiArray()), "reference")
    assert e.layout.dim == [] and len(e.data) == 0


def test_bad_bytes_are_refused_with_the_field():
    m = Odometry()
    m.header.frame_id = "world"
    b = serialize_message(m)
    for k in (0, 3, 10, 30, 400):      # inside the fields read (the twist ends at byte 416)
        with pytest.raises(CdrError, match="odom"):
            decode_odometry(b[:k])
    with pytest.raises(CdrError, match="encapsulation"):
        decode_odometry(b"\x07\x07" + b[2:])
    js = JointState()
    js.name = ["a"] * 3
    b = bytearray(serialize_message(js))
    b[20:24] = (10 ** 6).to_bytes(4, "little")   # the name count (after the 4-byte header, stamp, "" frame_id)
    with pytest.raises(CdrError, match="joint_states.name"):
        decode_joint_state(bytes(b))


def test_templates_write_what_rclpy_serializes():
    """The raw outputs of geodyn_node are rclpy's serialization of the same message: same length,
    and rclpy's own ``deserialize_message`` reads them back as the message (byte equality would be
    wrong: the serializer leaves alignment padding bytes uninitialized)."""
    from rclpy.serialization import deserialize_message

    def same(raw, msg):
        ref = serialize_message(msg)
        return len(raw) == len(ref) and deserialize_message(raw, type(msg)) == msg
    from geometry_msgs.msg import WrenchStamped

    from geodyn_ros.ros.wire.cdr import joint_state_template, multiarray_template, wrench_stamped_template
    from geodyn_ros.ros.wire.conversions import set_stamp, write_body_wrench
    from geodyn_ros.ros.wire.jets import FeedforwardJetPacker
    w = WrenchStamped()
    w.header.frame_id = "robot1/base_link"
    tw = wrench_stamped_template(w)
    e = JointState()
    e.name = ["J2", "J3", "elbow_joint"]
    e.effort = [0.0] * 3
    te = joint_state_template(e)
    for stamp in (0, 1_700_000_000_123_456_789, 2 ** 31 * 10 ** 9 - 1):
        W, tau = RNG.normal(size=6), RNG.normal(size=3)
        tw.set_stamp(stamp)
        tw.fields["torque"][:], tw.fields["force"][:] = W[:3], W[3:]
        write_body_wrench(w, stamp, W)
        assert same(tw.payload(), w)
        te.set_stamp(stamp)
        te.fields["effort"][:] = tau
        set_stamp(e.header.stamp, stamp)
        e.effort = [float(x) for x in tau]
        assert same(te.payload(), e)
        packer = FeedforwardJetPacker(e.name, 2)
        jw, jt = RNG.normal(size=(3, 6)), RNG.normal(size=(3, 3))
        raw = packer.pack_raw(stamp, jw, jt)
        assert same(raw, packer.pack(stamp, jw, jt))
    m = Float64MultiArray()
    m.data = [1.0, 2.0]
    t = multiarray_template(m)
    t.fields["data"][:] = (3.0, 4.0)
    m.data = [3.0, 4.0]
    assert same(t.payload(), m)


def test_template_padding_is_zeroed():
    from geometry_msgs.msg import WrenchStamped

    from geodyn_ros.ros.wire.cdr import wrench_stamped_template
    w = WrenchStamped()
    w.header.frame_id = "robot1/base_link"          # 17 bytes with NUL: 3 bytes of padding follow
    t = wrench_stamped_template(w)
    raw = t.payload()
    assert raw[4 + 12 + 17:4 + 32] == bytes(3)
