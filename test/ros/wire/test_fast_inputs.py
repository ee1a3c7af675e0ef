"""geodyn_ros.ros.wire.fast_inputs (geodyn_node's compiled one-call decoding of odom / joint_states / reference)
against rclpy's own (de)serializer and the node's full path (cdr + conversions + plausibility).

* **Same answer:** for randomized messages (frame names of every alignment, shuffled and extra
  joint names) the fast path gives the stamp of rclpy's deserialized header exactly, and the pose
  and spatial twist of ``quat_to_matrix`` / ``Ad_C`` applied to rclpy's deserialized fields to
  8e-15 (the same products summed in another order: a few ulp of values <= 6).
* **Only ever accepts what the full path accepts:** NaN/Inf in every number, a quaternion off
  unit norm by 2e-6 (tolerance 1e-6), each plausibility limit exceeded, another frame or joint
  name of the same length, another length, a negative stamp, big-endian CDR: declined (-1) with
  the output arrays untouched. Differing alignment padding (left uninitialized by serializers)
  does not matter.
* **reference** (``FastReference``): stamp, pose (to 8e-15), twist and joint rows (exactly, in
  model order, for reordered and extra joint columns and extra rows) equal rclpy's deserialized
  data; NaN/Inf in every used number, a non-unit quaternion, each plausibility limit, invalid
  stamps, another label, another row count and big-endian CDR are declined, arrays untouched.
* **flat_reference** (``FastFlatReference``): against the node's full path (cdr decode,
  ``FlatReferenceDecoder``, ``check_plausible_flat``) on 400 messages with one number made NaN,
  Inf, large or a bad stamp: it accepts only what the full path accepts, with its numbers
  exactly, and leaves the arrays untouched when it declines.
"""
import numpy as np
import pytest

pytest.importorskip("rclpy")
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from geodyn_ros.lie import quat_to_matrix  # noqa: E402
from geodyn_ros.ros.wire.fast_inputs import FastJointState, FastOdometry, FastReference  # noqa: E402
from geodyn_ros.ros.wire.jets import make_reference_msg  # noqa: E402

RNG = np.random.default_rng(11)
LIMITS = dict(max_position=100.0, max_speed=10.0, max_joint_rate=5.0, max_input_magnitude=50.0)
MODEL_JOINTS = ["J2", "J3", "J4"]
# The two evaluate the same sums of products in another order. Every entry here is a sum of at
# most 6 products of factors <= 1.8 (|p|, |v|, |w| <= sqrt(3), |R_ij| <= 1), so |entry| <= 6 and
# each evaluation is within ~3 eps * 6 = 4e-15 of the exact value: 8e-15 bounds the difference.
TOL = 8e-15


def _odom(frame="world", child="base_link", stamp=(12, 345), v=None):
    m = Odometry()
    m.header.stamp.sec, m.header.stamp.nanosec = stamp
    m.header.frame_id, m.child_frame_id = frame, child
    if v is None:
        q = RNG.normal(size=4)
        v = np.r_[RNG.uniform(-1, 1, 3), q / np.linalg.norm(q), RNG.uniform(-1, 1, 6)]
    p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(x) for x in v[:7])
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[7:])
    return m, v


def _expected_odom(raw):
    """Pose and spatial twist from rclpy's deserialization, independently of the node's code."""
    m = deserialize_message(raw, Odometry)
    p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(np.array([o.x, o.y, o.z, o.w]), "xyzw")
    C[:3, 3] = p.x, p.y, p.z
    w = C[:3, :3] @ [t.angular.x, t.angular.y, t.angular.z]
    v = np.cross(C[:3, 3], w) + C[:3, :3] @ [t.linear.x, t.linear.y, t.linear.z]
    return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec, C, np.r_[w, v]


@pytest.mark.parametrize("frame", ["", "w", "wo", "wor", "world", "wörld_13_bytes"])
@pytest.mark.parametrize("child", ["", "b", "base_link", "robot1/base_link"])
def test_odometry_equals_rclpy(frame, child):
    fast = FastOdometry(LIMITS)
    m, _ = _odom(frame, child)
    C, V = np.full((4, 4), 7.0), np.full(6, 7.0)
    assert fast.decode(serialize_message(m), C, V) == -1 and (C == 7.0).all()   # nothing learned yet
    fast.learn(serialize_message(m))
    for k in range(20):
        m, _ = _odom(frame, child, stamp=(1000 + k, 999_999_999 - k))
        raw = serialize_message(m)
        stamp = fast.decode(raw, C, V)
        want_stamp, want_C, want_V = _expected_odom(raw)
        assert stamp == want_stamp
        assert np.abs(C - want_C).max() <= TOL and np.abs(V - want_V).max() <= TOL


def _assert_declined(fast, raw):
    C, V = np.full((4, 4), 7.0), np.full(6, 7.0)
    assert fast.decode(raw, C, V) == -1
    assert (C == 7.0).all() and (V == 7.0).all()


def test_odometry_declines_what_the_full_path_refuses():
    fast = FastOdometry(LIMITS)
    good, v = _odom()
    fast.learn(serialize_message(good))
    for i in range(13):
        for bad in (np.nan, np.inf, -np.inf):
            w = v.copy()
            w[i] = bad
            _assert_declined(fast, serialize_message(_odom(v=w)[0]))
    w = v.copy()
    w[3:7] *= 1 + 2e-6                        # |q| = 1 + 2e-6 > 1 + QUATERNION_TOLERANCE
    _assert_declined(fast, serialize_message(_odom(v=w)[0]))
    for i, big in ((0, 101.0), (10, 11.0), (7, 11.0)):   # position, angular, linear speed over the limits
        w = v.copy()
        w[i] = big
        _assert_declined(fast, serialize_message(_odom(v=w)[0]))
    _assert_declined(fast, serialize_message(_odom(frame="wyrld")[0]))      # same length, other name
    _assert_declined(fast, serialize_message(_odom(child="base_lin_")[0]))
    _assert_declined(fast, serialize_message(_odom(child="base_links")[0]))  # another length
    _assert_declined(fast, serialize_message(_odom(stamp=(-1, 0))[0]))
    raw = bytearray(serialize_message(good))
    raw[1] = 0                                 # big-endian encapsulation
    _assert_declined(fast, bytes(raw))
    other = FastOdometry(LIMITS)
    other.learn(bytes(raw))                    # not learned: always the full path
    _assert_declined(other, bytes(raw))
    assert fast.decode(serialize_message(good), np.eye(4), np.zeros(6)) >= 0   # still accepts the good one


def _js(names, pos, vel, stamp=(5, 6), effort=()):
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = stamp
    m.header.frame_id = "f"
    m.name, m.position, m.velocity, m.effort = list(names), [float(x) for x in pos], [float(x) for x in vel], \
        [float(x) for x in effort]
    return serialize_message(m)


def _learned(names, effort=()):
    fast = FastJointState(LIMITS)
    idx = np.array([names.index(j) for j in MODEL_JOINTS])
    fast.learn(_js(names, np.zeros(len(names)), np.zeros(len(names)), effort=effort), idx)
    return fast


@pytest.mark.parametrize("names", [MODEL_JOINTS, ["J4", "J2", "J3"], ["extra", "J3", "J2", "abcde", "J4"]])
@pytest.mark.parametrize("effort", [(), (1.0, 2.0, 3.0)])
def test_joint_state_equals_rclpy(names, effort):
    if effort:
        effort = effort[:1] * len(names)
    fast = _learned(names, effort)
    q, qd = np.zeros(3), np.zeros(3)
    for k in range(10):
        pos, vel = RNG.uniform(-40, 40, len(names)), RNG.uniform(-4, 4, len(names))
        raw = _js(names, pos, vel, stamp=(k, 10 * k), effort=effort)
        m = deserialize_message(raw, JointState)
        assert fast.decode(raw, q, qd) == k * 1_000_000_000 + 10 * k
        by_name = dict(zip(m.name, zip(m.position, m.velocity)))
        assert np.array_equal(q, [by_name[j][0] for j in MODEL_JOINTS])
        assert np.array_equal(qd, [by_name[j][1] for j in MODEL_JOINTS])


def test_joint_state_declines_what_the_full_path_refuses():
    names = ["J4", "J2", "J3"]
    fast = _learned(names)
    ok = np.array([0.1, 0.2, 0.3])

    def declined(raw):
        q, qd = np.full(3, 7.0), np.full(3, 7.0)
        return fast.decode(raw, q, qd) == -1 and (q == 7.0).all() and (qd == 7.0).all()
    for i in range(3):
        for bad in (np.nan, np.inf):
            p = ok.copy()
            p[i] = bad
            assert declined(_js(names, p, ok)) and declined(_js(names, ok, p))
    assert declined(_js(names, ok, [0.0, 5.5, 0.0]))                 # |qdot| > max_joint_rate
    assert declined(_js(names, [0.0, 0.0, 51.0], ok))                # |q| > max_input_magnitude
    assert declined(_js(["J4", "J2", "J5"], ok, ok))                 # same length, another joint
    assert declined(_js(names, ok, ok[:2]))                          # fewer velocities
    assert declined(_js(names, ok, ok, effort=(1.0,)))               # an effort more: another length
    assert declined(_js(names, ok, ok, stamp=(-3, 0)))
    assert fast.decode(_js(names, ok, ok), np.zeros(3), np.zeros(3)) == 5_000_000_006


def test_alignment_padding_is_not_compared():
    """Serializers leave the padding before an aligned field uninitialized: a learned shape must
    match whatever those bytes hold ("J4xy" and its NUL end 3 bytes before the next 4-aligned count)."""
    names = ["J4xy", "J2", "J3", "J4"]
    fast = _learned(names)
    raw = bytearray(_js(names, np.zeros(4), np.ones(4)))
    key_end = raw.index(b"J4xy\x00") + 5           # the string ends here ...
    raw[key_end:key_end + 3] = b"\xaa\xbb\xcc"     # ... padding up to the next name's count
    q, qd = np.zeros(3), np.zeros(3)
    assert fast.decode(bytes(raw), q, qd) == 5_000_000_006 and np.array_equal(qd, np.ones(3))
    m = Odometry()
    m.header.frame_id, m.child_frame_id = "w", "ab"   # child ends unaligned before the 8-aligned pose
    m.pose.pose.orientation.w = 1.0
    odom = FastOdometry(LIMITS)
    raw = bytearray(serialize_message(m))
    odom.learn(bytes(raw))
    end = raw.index(b"ab\x00") + 3
    pad = (-(end - 4)) % 8
    assert pad > 0
    raw[end:end + pad] = b"\xee" * pad
    assert odom.decode(bytes(raw), np.eye(4), np.zeros(6)) == 0


# ------------------------------------------------------------------ reference (FastReference)
ORDER = 2   # rows used: V^(0..3) (r+2), q^(0..4) (r+3)


def _ref(names=("J3", "J2", "J4"), rows=ORDER + 3, stamp=(7.0, 89.0), edit=None):
    """A reference jet (make_reference_msg's layout) with small random values, serialized by rclpy;
    ``edit(data)`` changes the flat data list before serialization."""
    q = RNG.normal(size=4)
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(q / np.linalg.norm(q), "xyzw")
    C[:3, 3] = RNG.uniform(-1, 1, 3)
    msg = make_reference_msg(0, C, RNG.uniform(-1, 1, (rows, 6)), RNG.uniform(-1, 1, (rows, len(names))),
                             list(names))
    data = list(msg.data)
    data[0], data[1] = stamp
    if edit is not None:
        edit(data)
    msg.data = data
    return serialize_message(msg)


def _expected_ref(raw, names):
    """Stamp, pose, V^(0..r+1), q^(0..r+2) in model order from rclpy's deserialization."""
    d = np.array(deserialize_message(raw, Float64MultiArray).data)
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(d[5:9] / np.linalg.norm(d[5:9]), "xyzw")
    C[:3, 3] = d[2:5]
    body = d[9:].reshape(-1, 6 + len(names))
    cols = [6 + list(names).index(j) for j in MODEL_JOINTS]
    return int(d[0]) * 1_000_000_000 + int(d[1]), C, body[:ORDER + 2, :6], body[:ORDER + 3, cols]


def _learned_ref(names=("J3", "J2", "J4"), rows=ORDER + 3):
    fast = FastReference(LIMITS, ORDER)
    fast.learn(_ref(names, rows), np.array([6 + list(names).index(j) for j in MODEL_JOINTS]))
    return fast


@pytest.mark.parametrize("names", [("J2", "J3", "J4"), ("J3", "J2", "J4"), ("extra", "J4", "abc", "J2", "J3")])
@pytest.mark.parametrize("rows", [ORDER + 3, ORDER + 5])
def test_reference_equals_rclpy(names, rows):
    fast = _learned_ref(names, rows)
    for _ in range(5):
        raw = _ref(names, rows, stamp=(float(RNG.integers(0, 2**31 - 1)), float(RNG.integers(0, 10**9))))
        C, V, Q = np.zeros((4, 4)), np.zeros((ORDER + 2, 6)), np.zeros((ORDER + 3, 3))
        stamp = fast.decode(raw, C, V, Q)
        want = _expected_ref(raw, names)
        assert stamp == want[0]
        # the rotation: the same products as quat_to_matrix in another order (|entries| <= 1): 8e-15
        assert np.abs(C - want[1]).max() <= TOL
        assert (V == want[2]).all() and (Q == want[3]).all()   # copied, not computed: exact


def _assert_ref_declined(fast, raw):
    C, V, Q = np.full((4, 4), 7.0), np.full((ORDER + 2, 6), 7.0), np.full((ORDER + 3, 3), 7.0)
    assert fast.decode(raw, C, V, Q) == -1
    assert (C == 7.0).all() and (V == 7.0).all() and (Q == 7.0).all()


def test_reference_declines_what_the_full_path_refuses():
    names = ("J3", "J2", "J4")
    fast = _learned_ref(names)
    ncol, n_data = 9, 9 + (ORDER + 3) * 9

    def setter(i, value):
        def edit(data):
            data[i] = value
        return edit
    for i in range(2, n_data):
        if i >= 9 and (i - 9) // ncol >= ORDER + 2 and (i - 9) % ncol < 6:
            continue   # V^(r+2): a row the node does not use (nor check)
        for bad in (np.nan, np.inf, -np.inf):
            _assert_ref_declined(fast, _ref(names, edit=setter(i, bad)))
    _assert_ref_declined(fast, _ref(names, edit=lambda d: d.__setitem__(slice(5, 9), [0.0, 0.0, 0.0, 1 + 2e-6])))
    limits = ((2, 101.0),              # |position| > max_position 100
              (9, 11.0),               # |angular velocity| > max_speed 10
              (12, 11.0),              # |origin velocity| > max_speed
              (9 + ncol, 160.0),       # twist derivative > (1 + |p|) 50 with |p| <= sqrt(3) (< 137)
              (9 + ncol + 7, 6.0),     # qdot > max_joint_rate 5
              (9 + 7, 51.0),           # q > max_input_magnitude 50
              (9 + 3 * ncol + 8, 51.0))   # q^(3) > max_input_magnitude
    for i, big in limits:
        _assert_ref_declined(fast, _ref(names, edit=setter(i, big)))
    for stamp in ((-1.0, 0.0), (1.5, 0.0), (0.0, 1e9), (2.0**31, 0.0), (0.0, 0.5)):
        _assert_ref_declined(fast, _ref(names, stamp=stamp))
    _assert_ref_declined(fast, _ref(("J3", "J2", "J5")))          # another label of the same length
    _assert_ref_declined(fast, _ref(names, rows=ORDER + 4))        # another length
    raw = bytearray(_ref(names))
    raw[1] = 0                                                     # big-endian encapsulation
    _assert_ref_declined(fast, bytes(raw))
    assert fast.decode(_ref(names), np.eye(4), np.zeros((ORDER + 2, 6)), np.zeros((ORDER + 3, 3))) >= 0


# ------------------------------------------------------------------ flat reference (FastFlatReference)
def _flat(names=("J3", "J2", "J4"), rows=ORDER + 5, scale=1.0, edit=None):
    """A flat reference (make_flat_reference_msg's layout; small random values times ``scale``)
    serialized by rclpy; ``edit(data)`` changes the flat data list before serialization."""
    from geodyn_ros.ros.wire.jets import make_flat_reference_msg
    msg = make_flat_reference_msg(7_000_000_089, scale * RNG.uniform(-1, 1, (rows, 3)), scale * RNG.uniform(-1, 1, rows),
                                  scale * RNG.uniform(-1, 1, (rows, len(names))), list(names))
    if edit is not None:
        data = list(msg.data)
        edit(data)
        msg.data = data
    return serialize_message(msg)


def _full_flat(raw):
    """The node's full path (cdr decode, FlatReferenceDecoder, check_plausible_flat): (stamp, com,
    yaw, Q), or None where it refuses the message."""
    from geodyn_ros.ros.wire.cdr import decode_float64_multiarray
    from geodyn_ros.ros.wire.conversions import InputError
    from geodyn_ros.ros.wire.jets import FlatReferenceDecoder
    from geodyn_ros.ros.inputs.plausibility import check_plausible_flat
    com, yaw, Q = np.zeros((ORDER + 5, 3)), np.zeros(ORDER + 3), np.zeros((ORDER + 3, 3))
    try:
        stamp = FlatReferenceDecoder(MODEL_JOINTS, ORDER).decode(decode_float64_multiarray(raw, "flat_reference"),
                                                                 com, yaw, Q)
        check_plausible_flat(LIMITS, com, yaw, Q)
    except InputError:
        return None
    return stamp, com, yaw, Q


def test_flat_reference_equals_the_full_path_and_declines_what_it_refuses():
    from geodyn_ros.ros.wire.fast_inputs import FastFlatReference
    names = ("J3", "extra", "J2", "J4")
    fast = FastFlatReference(LIMITS, ORDER)
    fast.learn(_flat(names), np.array([4 + names.index(j) for j in MODEL_JOINTS]))
    ncol = 4 + len(names)
    accepted = declined = 0
    for case in range(400):
        if case < 20:
            raw = _flat(names)   # plausible: small values
        else:   # one used or unused number made NaN, Inf, large, or a bad stamp
            i = int(RNG.integers(0, 2 + (ORDER + 5) * ncol))
            v = [np.nan, np.inf, -np.inf, 1e3, 60.0, -1.0, 0.5, 2.0 ** 31][case % 8]

            def edit(data, i=i, v=v):
                data[i] = v
            raw = _flat(names, edit=edit)
        com, yaw, Q = np.full((ORDER + 5, 3), 7.0), np.full(ORDER + 3, 7.0), np.full((ORDER + 3, 3), 7.0)
        stamp = fast.decode(raw, com, yaw, Q)
        want = _full_flat(raw)
        if stamp == -1:
            declined += 1
            assert (com == 7.0).all() and (yaw == 7.0).all() and (Q == 7.0).all()   # untouched
        else:   # only ever accepts what the full path accepts, with its numbers (copied: exact)
            accepted += 1
            assert want is not None and stamp == want[0]
            assert (com == want[1]).all() and (yaw == want[2]).all() and (Q == want[3]).all()
        if case < 20:
            assert stamp >= 0
        elif want is None:
            assert stamp == -1
    assert accepted > 50 and declined > 50   # both sides exercised
