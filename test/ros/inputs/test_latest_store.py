"""``geodyn_node``'s compiled latest-input store (:mod:`geodyn_ros.ros.inputs.latest_store`) against the
rules it replaces, run side by side on the same messages.

The oracle is the node's former path, each part tested on its own: the stamp-ordered
:class:`~geodyn_ros.ros.inputs.input_sync.TopicBuffer` (``test/ros/wire/test_input_sync.py``), the held samples of
:class:`~geodyn_ros.control.sensing.LatestSample` and ``propagate_joints``, ``select_reference``, the
freshness rule of ``GeodynNode._fresh``, then ``gd.inverse_dynamics`` (the library's answer) on the
state so formed. The messages are decoded for the oracle by the fast decoders, which
``test/ros/wire/test_fast_inputs.py`` / ``test_typed_fast.py`` check against rclpy's deserializer; the
store's jet is read back by rclpy's deserializer.

A seeded stream of 1,500 steps of ``odom`` / ``joint_states`` / ``reference`` with every perturbation
the rules decide on: duplicates, stamps that go back, stamps far in the future, NaN (declined by
the decoder), joint samples over their maximum age and newer than the cycle, a node clock that
makes a cycle's odom or reference stale, gaps of the reference. For every message the store's
code must be the oracle's decision, and for every cycle that publishes the jet must be the
library's answer for the oracle's inputs, with the stamps of the inputs the oracle used.
"""
import numpy as np
import pytest

pytest.importorskip("rclpy")
from geodyn_msgs.msg import FeedforwardJet  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

import geodyn_ros as gd  # noqa: E402
from geodyn_ros.algorithms.dynamics import DEFAULT_GRAVITY  # noqa: E402
from geodyn_ros.control.sensing import LatestSample, propagate_joints  # noqa: E402
from geodyn_ros.lie import quat_to_matrix  # noqa: E402
from geodyn_ros.model.resources import shipped_urdf  # noqa: E402
from geodyn_ros.ros.inputs import latest_store as LS  # noqa: E402
from geodyn_ros.ros.inputs.input_sync import TopicBuffer, buffer_depth, input_entry, select_reference  # noqa: E402
from geodyn_ros.ros.wire.conversions import InputError, JointNameMatcher  # noqa: E402
from geodyn_ros.ros.wire.fast_inputs import FastJointState, FastOdometry  # noqa: E402
from geodyn_ros.ros.wire.typed import make_reference_jet  # noqa: E402
from geodyn_ros.ros.wire.rcl_counts import publisher_address, rcl_count_function  # noqa: E402
from geodyn_ros.ros.wire.typed_raw import FastTypedReference, TypedJetOutput  # noqa: E402
from ros_harness import joint_states_msg, odometry_msg  # noqa: E402

MS = 1_000_000
R = 2
LIMITS = dict(max_position=100.0, max_speed=50.0, max_joint_rate=50.0, max_input_magnitude=1e4)
STALE, AFTER, MAX_AGE = 100 * MS, 400_000, 20 * MS
# The store's inverse dynamics is the library's kernel called from another compiled function; LLVM
# may then sum in another order (the kernels allow reassociation). Outputs here are <= ~1e3, sums
# of <= ~100 terms: a few hundred ulp at most, so 1e-11 relative to the largest output bounds the
# difference, while a wrong sample (another joint state or reference) changes it by > 1e-4.
TOL = 1e-11


def _model():
    return gd.load_urdf(str(shipped_urdf()))


class Oracle:
    """The former rules (module docstring)."""

    def __init__(self, model, depth):
        n = model.n_joints
        self.model = model
        self.bufs = {t: TopicBuffer(t, depth, lambda t=t: input_entry(t, R, n)) for t in LS.TOPICS}
        self.odom = LatestSample("odom", MAX_AGE, MAX_AGE)
        self.js = LatestSample("joint_states", MAX_AGE, MAX_AGE)

    def message(self, topic, decode, now):
        """(code, answer) for a message: its decoder fills the scratch entry (-1: declined)."""
        buf = self.bufs[topic]
        stamp = decode(buf.scratch)
        if stamp < 0:
            return LS.DECLINED, None
        try:
            entry = buf.accept(stamp, now, STALE)
        except InputError:
            return LS.REFUSED, None
        if topic == "reference":
            return LS.OK, None
        (self.odom if topic == "odom" else self.js).offer(stamp, entry)
        if topic == "joint_states":
            return LS.OK, None
        return self.cycle(stamp, now)

    def cycle(self, t, now):
        e = self.odom.data
        got = self.js.take(t)
        if got is None:
            return (LS.JS_NONE if self.js.stamp_ns is None else LS.JS_AGE), None
        t_js, j, age = got
        if abs(now - t) > STALE:
            return LS.ODOM_FRESH, None
        sel = select_reference(self.bufs["reference"], t, STALE, AFTER)
        if sel is None:
            return LS.NO_REF, None
        t_ref, ref = sel
        if abs(now - t_ref) > STALE:
            return LS.REF_FRESH, None
        V = ref.V.copy()
        V[0] = e.V0
        Q = ref.Q.copy()
        Q[0] = propagate_joints(j.q, j.qd, age * 1e-9)
        Q[1] = j.qd
        res = gd.inverse_dynamics(self.model, e.C, V, Q, R)
        return LS.OK, (t, self.odom.stamp_ns, t_js, t_ref, res.base_wrench, res.tau)


def _learned(model):
    """The three fast decoders, each having learned the shape of the stream's messages."""
    names = model.joint_names
    extra = list(names[::-1]) + ["gripper"]   # joint_states in another order, with a joint the model lacks
    C = np.eye(4)
    fo, fj, fr = FastOdometry(LIMITS), FastJointState(LIMITS), FastTypedReference(LIMITS, R)
    fo.learn(serialize_message(odometry_msg(MS, C, np.zeros(3), np.zeros(3))))
    fj.learn(serialize_message(joint_states_msg(MS, extra, np.zeros(len(extra)), np.zeros(len(extra)))),
             JointNameMatcher(names).indices(extra, "joint_states.name"))
    fr.learn(serialize_message(make_reference_jet(MS, C, np.zeros((R + 3, 6)), np.zeros((R + 3, len(names))), names)),
             np.arange(len(names)))
    return fo, fj, fr, extra


def _stream(model, extra, steps, seed):
    """``[(topic, bytes, now)]`` (module docstring)."""
    rng = np.random.default_rng(seed)
    names, n = model.joint_names, model.n_joints
    out = []
    t = 10_000 * MS
    last = {}
    skip_js, skip_ref = 3, 0   # (odom before any joint_states: JS_NONE)
    for k in range(steps):
        t += MS
        now = t + int(rng.integers(0, 500_000))
        u = rng.random()
        if u < 0.02:
            now += int(rng.choice([-1, 1])) * 150 * MS   # the cycle's odom stale, or every stamp too far ahead
        elif u < 0.03:
            now = t + STALE - 100_000   # the odom just fresh, a reference older than it just stale
        events = []
        bad = rng.random(3) < 0.04   # a NaN in a number the decoder reads: declined (the full path refuses it)
        if skip_ref:
            skip_ref -= 1
        elif rng.random() < 0.008:
            skip_ref = 110   # the reference stops for 110 ms: its last one goes stale, then none is left
        elif k % 5 == 0 and rng.random() < 0.85:
            q = rng.normal(size=(R + 3, n)) * 0.3
            V = rng.normal(size=(R + 3, 6)) * 0.3
            q[0, 0] = np.nan if bad[0] else q[0, 0]
            events.append(("reference", make_reference_jet(0, _pose(rng), V, q, names), t - int(rng.integers(0, 3 * MS))))
        if skip_js:
            skip_js -= 1
        elif k > 3 and rng.random() < 0.9:
            js = rng.normal(size=2 * len(extra)) * 0.5
            js[0] = np.nan if bad[1] else js[0]
            # mostly older than the odom of the step, sometimes newer (propagated back); never back in time
            ahead = int(rng.integers(-300_000, 600_000))
            events.append(("joint_states", joint_states_msg(0, extra, js[:len(extra)], js[len(extra):]), t + ahead))
        if rng.random() < 0.01:
            skip_js = 25   # joint samples over their maximum age
        C = _pose(rng)
        C[0, 3] = np.nan if bad[2] else C[0, 3]
        events.append(("odom", odometry_msg(0, C, rng.normal(size=3), rng.normal(size=3)), t))
        rng.shuffle(events)
        for topic, msg, stamp in events:
            u = rng.random()
            if u < 0.03 and topic in last:
                stamp = last[topic]                     # a duplicate stamp
            elif u < 0.05 and topic in last:
                stamp = last[topic] - 5 * MS            # back in time
            elif u < 0.06:
                stamp = now + 2 * STALE                 # far in the future
            else:
                last[topic] = max(last.get(topic, 0), stamp)
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp), 10**9)
            out.append((topic, serialize_message(msg), now))
    return out


def _pose(rng):
    q = rng.normal(size=4)
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(q / np.linalg.norm(q), "xyzw")
    C[:3, 3] = rng.normal(size=3)
    return C


@pytest.mark.parametrize("seed", [1, 2])
def test_the_store_decides_as_the_former_rules(seed):
    model = _model()
    depth = buffer_depth(10)
    fo, fj, fr, extra = _learned(model)
    out = TypedJetOutput(model.joint_names, R)
    st = LS.LatestStore(R, model.n_joints, depth, LIMITS, STALE, AFTER, MAX_AGE, MAX_AGE, True, False,
                        out.template())
    st.set_model(model, DEFAULT_GRAVITY)
    assert rcl_count_function() != 0   # (Linux, rclpy loaded: the counts are asked compiled)
    st.set_counts(rcl_count_function(), [])   # no other output: a cycle that publishes is OK
    for t, f in enumerate((fo, fj, fr)):
        st.learn(t, f.spec())
    oracle = Oracle(model, depth)
    decode = {"odom": lambda raw: lambda e: fo.decode(raw, e.C, e.V0),
              "joint_states": lambda raw: lambda e: fj.decode(raw, e.q, e.qd),
              "reference": lambda raw: lambda e: fr.decode(raw, e.C, e.V, e.Q)}
    seen = {}
    published = 0
    for topic, raw, now in _stream(model, extra, 1500, seed):
        want, answer = oracle.message(topic, decode[topic](raw), now)
        I, F, K = st.arrays
        got = {"odom": lambda: LS.odom_message(raw, now, I, F, K, st.T),
               "joint_states": lambda: LS.js_message(raw, now, I, F, K),
               "reference": lambda: LS.ref_message(raw, now, I, F, K)}[topic]()
        assert got == want, f"{topic} at {now}: store {got}, former rules {want}"
        seen[want] = seen.get(want, 0) + 1
        if want != LS.OK or topic != "odom":
            continue
        t, t_odom, t_js, t_ref, W, tau = answer
        assert st.used() == (t, t_odom, t_js, t_ref)
        msg = deserialize_message(bytes(st.T), FeedforwardJet)
        assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == t
        Wm = np.array([[w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z] for w in msg.base_wrench])
        taum = np.array(msg.tau).reshape(R + 1, -1)
        scale = max(1.0, np.abs(W).max(), np.abs(tau).max())
        assert np.abs(Wm - W).max() <= TOL * scale and np.abs(taum - tau).max() <= TOL * scale
        published += 1
    # every decision of the rules occurred (so each was compared), and most cycles published
    for code in (LS.OK, LS.DECLINED, LS.REFUSED, LS.JS_NONE, LS.JS_AGE, LS.ODOM_FRESH, LS.NO_REF, LS.REF_FRESH):
        assert seen.get(code, 0) > 0, f"code {code} never occurred: the stream does not test it"
    assert published > 600
    for t in range(3):   # the counts the node reports
        assert st.topics[LS.TOPICS[t]].accepted == oracle.bufs[LS.TOPICS[t]].accepted


def test_a_reset_forgets_the_stamps_and_samples():
    model = _model()
    fo, fj, fr, extra = _learned(model)
    st = LS.LatestStore(R, model.n_joints, buffer_depth(2), LIMITS, STALE, AFTER, MAX_AGE, MAX_AGE, True, False, None)
    st.set_model(model, DEFAULT_GRAVITY)
    for t, f in enumerate((fo, fj, fr)):
        st.learn(t, f.spec())
    t0 = 50_000 * MS
    js = serialize_message(joint_states_msg(t0, extra, np.zeros(len(extra)), np.zeros(len(extra))))
    ref = serialize_message(make_reference_jet(t0, np.eye(4), np.zeros((R + 3, 6)), np.zeros((R + 3, model.n_joints)),
                                               model.joint_names))
    I, F, K = st.arrays
    assert LS.js_message(js, t0, I, F, K) == LS.OK and LS.ref_message(ref, t0, I, F, K) == LS.OK
    early = serialize_message(joint_states_msg(MS, extra, np.zeros(len(extra)), np.zeros(len(extra))))
    assert LS.js_message(early, MS, I, F, K) == LS.REFUSED            # time went backwards
    with pytest.raises(InputError, match="time went backwards"):
        st.topics["joint_states"].check(st.stamp(), MS, STALE)
    for v in st.topics.values():
        v.reset()
    st.reset()
    assert st.held(LS.JS) is None and st.topics["reference"].newest() is None
    assert LS.js_message(early, MS, I, F, K) == LS.OK                 # accepted after the reset
    odom = serialize_message(odometry_msg(MS, np.eye(4), np.zeros(3), np.zeros(3)))
    assert LS.odom_message(odom, MS, I, F, K, st.T) == LS.NO_REF      # the old reference is gone
    assert LS.NOT_WRITTEN == 19 and st.topics["odom"].accepted == 1


def test_a_subscriber_of_another_output_is_seen_by_the_next_cycle():
    """A cycle asks rcl for the subscribers of wrench / efforts / inputs_used (``rcl_counts``,
    :func:`~geodyn_ros.ros.inputs.latest_store.quiet`): OK while there is none, SUBS (the node
    publishes those too) as soon as one has matched, as ``Publisher.get_subscription_count`` says."""
    import time

    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.context import Context

    import ros_harness  # noqa: F401  (its own ROS_DOMAIN_ID, before the context)
    model = _model()
    st = LS.LatestStore(R, model.n_joints, buffer_depth(2), LIMITS, STALE, AFTER, MAX_AGE, MAX_AGE, True, False, None)
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        node = rclpy.create_node("counts", context=ctx)
        pub = node.create_publisher(WrenchStamped, "feedforward/wrench", 2)
        st.set_counts(rcl_count_function(), [0, publisher_address(pub), 0])

        def settle(count):
            end = time.monotonic() + 10.0
            while pub.get_subscription_count() != count and time.monotonic() < end:
                time.sleep(0.01)
            assert pub.get_subscription_count() == count
        assert LS.quiet(st.I) == LS.OK
        sub = node.create_subscription(WrenchStamped, "feedforward/wrench", lambda m: None, 2)
        settle(1)
        assert LS.quiet(st.I) == LS.SUBS and st.I[LS.S_COUNT + 1] == 1
        node.destroy_subscription(sub)
        settle(0)
        assert LS.quiet(st.I) == LS.OK
        st.set_counts(0, [0, publisher_address(pub), 0])
        assert LS.quiet(st.I) == LS.SUBS   # counts not asked compiled: the node asks rclpy
    finally:
        ctx.try_shutdown()
