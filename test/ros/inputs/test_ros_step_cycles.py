"""``cycle: sim_steps`` (:mod:`geodyn_ros.ros.inputs.step_cycles`): a controller cycle per step
manifest ``sim/delivered``, its inputs brought to the step's time by the in-process rule.

* The barrier: a manifest that comes before the samples it names gives no command until they
  have come; then the command stamped with the step equals the library's law
  (:func:`geodyn_ros.control.feedback.tracking_command`) on the state propagated **here** by an
  independent implementation of the rule (scipy's rotation vector exponential, ``p + a (v + w x
  p)``, ``q + a qdot``; a = the sample's age). Tolerance 1e-9 of the command's scale: the inputs
  differ from the node's by the quaternion round trip and two implementations of the same formula
  (~1e-16 relative); a wrong age (one step, 1 ms) moves the command by ~1e-3 relative.
* A manifest for the step already commanded (a simulator's republish) gets the same command again.
* Odometry older than ``odom_timeout`` at the step: the failsafe's hold, stamped with the step.
* The manifest's bytes attacked (truncation at every length, random bytes, huge counts, other
  encapsulations, NaN and out-of-range stamps): no command carries any stamp but a good step's,
  every command equals the library's answer, and the good manifest after each attack is answered.
* A storm of future-dated manifests after each step's own (issue 51): every step is commanded,
  at once, with the library's answer; the manifests beyond the window are counted on
  ``/diagnostics`` (``manifests_refused``).
* The codec and the parameters (one line naming the parameter).
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
import ros_harness  # noqa: F401,I100  (imported first: it sets the ROS isolation env; fixture h: conftest)
from ros_harness import joint_states_msg, odometry_msg

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message, serialize_message
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from geodyn_ros.control.feedback import tracking_command
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.common.runtime import control_qos
from geodyn_ros.ros.inputs.step_cycles import MANIFEST_TOPIC, decode_manifest, manifest_msg, set_manifest
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.sim_node import SimNode
from geodyn_ros.ros.wire.typed import ReferenceJet, make_reference_jet
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MS = 1_000_000
TOL = 1e-9
TIMEOUT = 0.04


# ----------------------------------------------------------------------------- the oracle
def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _ad(C):
    """Adjoint of C for twists ordered (w, v), written here (not the library's)."""
    R, p = C[:3, :3], C[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = R
    A[3:, :3] = _hat(p) @ R
    return A


def _propagated(C, w_b, v_b, age_s):
    """The rule, independently: the pose at its held spatial twist ``age_s`` [s] later, and the
    body twist there."""
    V = _ad(C) @ np.r_[w_b, v_b]
    w, v = V[:3], V[3:]
    C2 = np.eye(4)
    C2[:3, :3] = Rotation.from_rotvec(age_s * w).as_matrix() @ C[:3, :3]
    C2[:3, 3] = C[:3, 3] + age_s * (v + np.cross(w, C[:3, 3]))
    return C2, np.linalg.solve(_ad(C2), V)


class Step:
    """Seeded inputs of one step at ``t`` [ns]: odometry stamped ``t - odom_age``, joints
    ``t - js_age``, the reference (Table 3) stamped ``t``."""

    def __init__(self, i: int, t: int, odom_age: int = 3 * MS, js_age: int = 2 * MS):
        rng = np.random.default_rng(70 + i)
        self.t, self.t_odom, self.t_js = t, t - odom_age, t - js_age
        ref = table3_reference(0.3 * (i % 11), 3)
        self.ref = ref
        self.C = ref.base_pose.copy()
        self.C[:3, 3] += rng.normal(size=3) * 0.02
        self.w_b, self.v_b = rng.normal(size=3) * 0.3, rng.normal(size=3) * 0.3
        self.q, self.qd = ref.q[0] + rng.normal(size=6) * 0.01, rng.normal(size=6) * 0.2

    def messages(self):
        r = self.ref
        return {"odom": odometry_msg(self.t_odom, self.C, self.w_b, self.v_b),
                "joint_states": joint_states_msg(self.t_js, NAMES, self.q, self.qd),
                "reference": make_reference_jet(self.t, r.base_pose, r.base_twist[:5], r.q[:5], NAMES)}

    def manifest(self, t=None):
        m = manifest_msg(("odom", "joint_states"))
        set_manifest(m, self.t if t is None else t, [self.t_odom, self.t_js])
        return m

    def answer(self, gains):
        r = self.ref
        C, Vb = _propagated(self.C, self.w_b, self.v_b, (self.t - self.t_odom) * 1e-9)
        q = self.q + (self.t - self.t_js) * 1e-9 * self.qd   # the joints at their rates
        Vbd = np.linalg.solve(_ad(r.base_pose), r.base_twist[0])
        return tracking_command(gains, C, Vb, q, self.qd, r.base_pose, Vbd, r.q[0], r.q[1], None, None)


def _stamp(m) -> int:
    return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec


def _wrench(m):
    w = m.wrench
    return np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])


class Rig:
    def __init__(self, h, params=None):
        self.h = h
        self.node = h.make(ControllerNode, {"urdf_path": URDF, "use_feedforward": False, "input_policy": "latest",
                                            "cycle": "sim_steps", "odom_timeout": TIMEOUT, "stale_timeout": 60.0,
                                            **(params or {})})
        self.wrenches = h.record(WrenchStamped, "cmd/wrench", depth=1000)
        self.efforts = h.record(JointState, "cmd/joint_efforts", depth=1000)
        self.pubs = {t: h.publisher(m, t) for t, m in (("odom", Odometry), ("joint_states", JointState),
                                                     ("reference", ReferenceJet),
                                                     (MANIFEST_TOPIC, Float64MultiArray))}
        for t in self.pubs:
            h.wait_matched(t)
        self.t = self.node.get_clock().now().nanoseconds - 10**9
        self.good = {}   # step stamp -> (wrench, efforts) of the library

    def step(self, i, *, before=None, manifest_first=False, gap=MS, **ages) -> Step:
        self.t += gap
        s = Step(i, self.t, **ages)
        self.good[s.t] = s.answer(self.node.gains)
        msgs = s.messages()
        if manifest_first:
            self.pubs[MANIFEST_TOPIC].publish(s.manifest())
        for k in ("odom", "joint_states", "reference"):
            self.pubs[k].publish(msgs[k])
        if before is not None:
            self.pubs[MANIFEST_TOPIC].publish(before)
        if not manifest_first:
            self.pubs[MANIFEST_TOPIC].publish(s.manifest())
        return s

    def wait(self, t, n=1):
        assert self.h.spin_until(lambda: sum(_stamp(m) == t for m in self.wrenches) >= n and
                                 sum(_stamp(m) == t for m in self.efforts) >= n, 10.0), \
            f"no command for the step {t}: {self.node.diag.last_problem}"

    def check(self):
        for m in self.wrenches:
            s = _stamp(m)
            assert s in self.good, f"a command stamped {s}: no step of that stamp"
            W, _ = self.good[s]
            assert np.abs(_wrench(m) - W).max() <= TOL * max(1.0, np.abs(W).max()), (s, _wrench(m), W)
        for m in self.efforts:
            _, tau = self.good[_stamp(m)]
            assert np.abs(np.array(m.effort) - tau).max() <= TOL * max(1.0, np.abs(tau).max())


# ----------------------------------------------------------------------------- the cycle
def test_a_command_per_manifest_at_the_step_time_on_the_propagated_state(h):
    rig = Rig(h)
    for i in range(6):
        s = rig.step(i)
        rig.wait(s.t)
    # the manifest first: nothing until the samples it names have come, then the step's command
    s = rig.step(7, manifest_first=True)
    rig.wait(s.t)
    rig.check()
    assert len(rig.wrenches) == 7
    # a different age of each stream (propagated over 0.5 ms .. 15 ms; steps 20 ms apart: each
    # sample newer than the last, else refused and the last one propagated)
    for i, (ao, aj) in enumerate(((MS // 2, 15 * MS), (15 * MS, MS // 2), (0, 0))):
        s = rig.step(20 + i, odom_age=ao, js_age=aj, gap=20 * MS)
        rig.wait(s.t)
    rig.check()
    # the manifest again (the simulator republished): the same command again
    rig.pubs[MANIFEST_TOPIC].publish(s.manifest())
    rig.wait(s.t, n=2)
    rig.check()
    a, b = [m for m in rig.wrenches if _stamp(m) == s.t]
    assert np.array_equal(_wrench(a), _wrench(b))


def test_a_manifest_naming_a_sample_not_yet_arrived_waits_for_it(h):
    rig = Rig(h)
    s = rig.step(0)
    rig.wait(s.t)
    rig.t += MS
    s = Step(1, rig.t)
    rig.good[s.t] = s.answer(rig.node.gains)
    msgs = s.messages()
    rig.pubs["reference"].publish(msgs["reference"])
    rig.pubs["joint_states"].publish(msgs["joint_states"])
    rig.pubs[MANIFEST_TOPIC].publish(s.manifest())
    rig.h.spin_for(0.3)
    assert not [m for m in rig.wrenches if _stamp(m) == s.t], "a command before the odometry the step names"
    rig.pubs["odom"].publish(msgs["odom"])
    rig.wait(s.t)
    rig.check()


def test_odometry_over_its_timeout_commands_the_failsafe_hold_at_the_step(h):
    rig = Rig(h)
    s = rig.step(0)
    rig.wait(s.t)
    rig.t += 60 * MS   # the next step 60 ms later, no new odometry: over odom_timeout (40 ms)
    s2 = Step(1, rig.t)
    msgs = s2.messages()
    rig.pubs["reference"].publish(msgs["reference"])
    rig.pubs["joint_states"].publish(msgs["joint_states"])
    m = manifest_msg(("odom", "joint_states"))
    set_manifest(m, s2.t, [s.t_odom, s2.t_js])
    rig.pubs[MANIFEST_TOPIC].publish(m)
    assert rig.h.spin_until(lambda: any(_stamp(w) == s2.t for w in rig.wrenches), 10.0)
    assert rig.node._fs.mode == "hold"
    w = [x for x in rig.wrenches if _stamp(x) == s2.t][0]
    assert np.isfinite(_wrench(w)).all()


# ----------------------------------------------------------------------------- a manifest storm
def test_a_storm_of_future_dated_manifests_stalls_no_step(h):
    """Issue 51, item 7: after each step's manifest, 400 forged ones (from another publisher, as an
    attack on the graph would be): 200 stamped 1000 s ahead (beyond the window: the node's
    ``stale_timeout``, 60 s here) and 200 stamped 1 to 399 us after the step (within it). Before,
    the newest manifest replaced the step's and the step was never commanded (the lock-step
    simulator's republish was the only way on). Now each step is commanded once its inputs have
    come, with the library's answer (no command of any other stamp); the refused manifests are
    counted, on ``/diagnostics`` too."""
    rig = Rig(h)
    storm = h.probe.create_publisher(Float64MultiArray, MANIFEST_TOPIC, control_qos(1000))
    diags = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    s = rig.step(0)
    rig.wait(s.t)
    for i in range(1, 6):
        rig.t += MS
        s = Step(i, rig.t)
        rig.good[s.t] = s.answer(rig.node.gains)
        rig.pubs[MANIFEST_TOPIC].publish(s.manifest())
        for k in range(400):      # in bursts of 20 (spun in between, as a node is)
            storm.publish(s.manifest(s.t + (1000 * 10**9 if k % 2 else 1000 * (k + 1))))
            if k % 20 == 19:
                h.spin_for(0.005)
        h.spin_for(0.3)           # the storm in, before the step's inputs
        msgs = s.messages()
        for k in ("odom", "joint_states", "reference"):
            rig.pubs[k].publish(msgs[k])
        rig.wait(s.t)
    rig.check()
    assert sorted({_stamp(m) for m in rig.wrenches}) == sorted(rig.good) and len(rig.wrenches) == len(rig.good)
    from geodyn_ros.ros.inputs.step_cycles import PendingSteps
    steps = rig.node._steps
    assert isinstance(steps, PendingSteps) and steps.refused > 0
    assert rig.node.diag.counters["manifests_refused"] == steps.refused

    def counted():
        return any(kv.key == "manifests_refused" and int(kv.value) > 0 for a in diags for st in a.status
                   for kv in st.values)
    assert h.spin_until(counted, 5.0), "no manifests_refused count on /diagnostics"
    assert any(st.message.startswith("sim/delivered: the step manifest of t = ") and " refused: stamped " in st.message
               for a in diags for st in a.status)


def test_pending_steps_keep_the_earliest_and_refuse_beyond_the_window():
    """The bookkeeping alone: a manifest more than the window ahead of the clock is refused (and
    counted); at most MAX_PENDING wait, the latest dropped; forgetting by step time."""
    from geodyn_ros.ros.inputs.step_cycles import MAX_PENDING, PendingSteps
    p = PendingSteps(100 * MS)
    assert p.offer(101 * MS, {}, 0) is not None and p.refused == 1 and not p.steps
    assert p.offer(100 * MS, {"odom": 1}, 0) is None and p.get(100 * MS) == {"odom": 1}
    for k in range(MAX_PENDING + 10):
        p.offer(k, {}, 0)
    assert len(p.steps) == MAX_PENDING and p.refused == 1 + 11
    assert [t for t, _ in p.earliest_first()] == list(range(MAX_PENDING))   # the earliest kept
    p.forget_before(10)
    assert min(p.steps) == 10
    p.forget_through(20)
    assert min(p.steps) == 21 and len(p.steps) == MAX_PENDING - 21


# ----------------------------------------------------------------------------- bytes
def _attacks(raw: bytes, seed: int):
    rng = np.random.default_rng(seed)
    out = [(f"first {n} bytes", raw[:n]) for n in range(len(raw))]
    for i in range(6):
        out.append((f"random bytes {i}", rng.integers(0, 256, int(rng.integers(1, 2 * len(raw)))).astype(np.uint8)
                    .tobytes()))
        out.append((f"header + random {i}", raw[:4] + rng.integers(0, 256, len(raw) - 4).astype(np.uint8).tobytes()))
    for kind in (0x00, 0x02, 0x03, 0x06, 0x07, 0x0B, 0x11, 0xFF):
        out.append((f"encapsulation kind {kind:#04x}", raw[:1] + bytes([kind]) + raw[2:]))
    out.append(("big endian", b"\x00\x00" + raw[2:]))
    for big in (0xFFFFFFFF, 0x7FFFFFFF, 1 << 20):
        out.append((f"dim count {big:#x}", raw[:4] + struct.pack("<I", big) + raw[8:]))
    return out


def _rclpy(raw: bytes):
    if len(raw) <= 4:   # rclpy reads out of bounds there (test_cdr_attack)
        return None
    try:
        return deserialize_message(raw, Float64MultiArray)
    except Exception:  # noqa: BLE001  any refusal
        return None


def test_the_manifest_survives_byte_attacks(h):
    rig = Rig(h)
    raw = serialize_message(Step(0, 10**9).manifest())
    attacks = _attacks(raw, 5)
    # values rclpy accepts and the decoder must refuse or survive: NaN, huge and negative stamps,
    # a megabyte label, a layout of the wrong size
    for name, fill in (("NaN step", [np.nan, 0.0]), ("huge step", [1e300, 0.0]), ("negative step", [-5.0, 0.0]),
                       ("odom stamp NaN", None)):
        m = Step(0, 10**9).manifest()
        d = list(m.data)
        if fill is None:
            d[2] = np.nan
        else:
            d[0:2] = fill
        m.data = d
        attacks.append((name, serialize_message(m)))
    m = Step(0, 10**9).manifest()
    m.layout.dim[0].label = "x" * (1 << 20)
    attacks.append(("megabyte label", serialize_message(m)))
    m = Step(0, 10**9).manifest()
    m.data = list(m.data) + [0.0, 0.0]
    attacks.append(("one row too many", serialize_message(m)))
    rclpy_took = 0
    for i, (name, bad) in enumerate(attacks):
        rclpy_took += _rclpy(bad) is not None
        s = rig.step(i, before=bad)
        rig.wait(s.t)
    rig.check()
    assert len({_stamp(m) for m in rig.wrenches}) == len(attacks)
    assert rclpy_took >= 6    # the value attacks (and a few byte ones) reach the node's decoder


def test_manifest_codec_round_trip_and_refusals():
    m = manifest_msg(("odom", "joint_states", "motor_states"))
    set_manifest(m, 12_345_678_901, [12_340_000_000, None, 0])
    t, stamps = decode_manifest(deserialize_message(serialize_message(m), Float64MultiArray))
    assert t == 12_345_678_901 and stamps == {"odom": 12_340_000_000, "motor_states": 0}
    for data in ([np.nan] + [0.0] * 7, [1e12] + [0.0] * 7, [-1.0, 0.0] + [0.0] * 6):
        bad = manifest_msg(("odom", "joint_states", "motor_states"))
        bad.data = data
        with pytest.raises(ValueError):
            decode_manifest(bad)
    with pytest.raises(ValueError):
        decode_manifest(Float64MultiArray(data=[0.0, 0.0]))


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("cls, params, name", [
    (ControllerNode, {"cycle": "steps"}, "cycle"),
    (ControllerNode, {"cycle": "sim_steps", "input_policy": "exact"}, "cycle"),
    (SimNode, {"lockstep_cycles": "sim_steps"}, "lockstep_cycles"),
])
def test_bad_cycle_parameters_are_refused_in_one_line(h, cls, params, name):
    with pytest.raises(ConfigurationError) as exc:
        h.make(cls, {"urdf_path": URDF, **params})
    text = str(exc.value)
    assert f"parameter '{name}'" in text and "\n" not in text, text


def test_the_manifest_peek_reads_the_step_time_of_the_simulators_layout_only():
    """:class:`ManifestPeek` against rclpy's own decoding: learned from a serialized manifest, it
    reads every step time of that layout as decode_manifest does (seeded stamps over the whole
    range), refuses another layout (one stream more or less, another encapsulation header), and
    leaves a NaN or out-of-range stamp to the full decode (None)."""
    from geodyn_ros.ros.inputs.step_cycles import ManifestPeek
    streams = ("odom", "joint_states", "motor_states")
    m = manifest_msg(streams)
    set_manifest(m, 5 * 10**9 + 3, [1, None, 7])
    raw = serialize_message(m)
    peek = ManifestPeek.learn(raw, 5 * 10**9 + 3, len(m.data))
    assert peek is not None and ManifestPeek.learn(raw, 5 * 10**9 + 4, len(m.data)) is None
    rng = np.random.default_rng(3)
    for t in [0, 1, 999_999_999, 4 * 10**18 - 1] + [int(x) for x in rng.integers(0, 4 * 10**18, 200)]:
        set_manifest(m, t, [int(x) for x in rng.integers(0, 10**12, 3)])
        b = serialize_message(m)
        assert peek.step_time(b) == decode_manifest(deserialize_message(b, Float64MultiArray))[0] == t
    for other in (("odom", "joint_states"), ("odom", "joint_states", "motor_states", "imu")):
        o = manifest_msg(other)
        set_manifest(o, 10**9, [0] * len(other))
        assert not peek.same_layout(serialize_message(o)) and peek.step_time(serialize_message(o)) is None
    assert peek.step_time(raw[:1] + b"\x00" + raw[2:]) is None          # big-endian header: another layout
    for bad in (np.nan, -1.0, 5e9):
        d = list(m.data)
        d[0] = bad
        m.data = d
        assert peek.step_time(serialize_message(m)) is None
