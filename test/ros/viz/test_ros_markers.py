"""``geodyn_markers`` (geodyn_ros.ros.nodes.markers_node): what its markers show, when it publishes,
and its answer to bad bytes.

Oracles and tolerances:
* the CoM sphere against Pinocchio's ``centerOfMass`` of the same URDF (an independent
  library), 1e-9 m (both float64 sums over ~20 bodies: ~1e-15 in practice);
* the rotor arrows against ``motor_constant * omega^2 * thrust_scale`` computed here from the
  actuation file, 1e-12 relative; the force/torque arrows against the published body wrench
  times the scales, 1e-12; the flat reference's CoM exactly (a copy);
* bad bytes: rclpy's own ``deserialize_message`` on the same bytes decides what the node may
  have seen; whatever it saw, the good message that follows gives the right marker (1e-12) and
  the node never raises. The jets are the typed ``geodyn_msgs`` (``FeedforwardJet`` in the
  representation it names, ``ReferenceJet``, ``FlatReference``; attacks of
  ``test/typed_attacks.py``); one in another frame is refused; ``message_types: multiarray``
  (deprecated, one warning) reads the layouts, the feedforward in ``wrench_representation``.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from ros_harness import joint_states_msg, odometry_msg, refused, rosout, said_deprecated  # noqa: I100  (imported first: ROS isolation env)
from typed_attacks import typed_attacks

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

import geodyn_ros as gd
from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.lie import quat_to_matrix
from geodyn_ros.loops.actuated import tilthex_source
from geodyn_ros.model.urdf import _read_source
from geodyn_ros.ros.nodes.markers_node import MarkersNode
from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_TYPE
from geodyn_ros.ros.wire.jets import FeedforwardJetPacker, make_flat_reference_msg
from geodyn_ros.ros.wire.typed import (FeedforwardJet, FlatReference, ReferenceJet, TypedFeedforwardPacker,
                                       make_flat_reference, make_reference_jet)

XACRO = str(tilthex_source())
CFG_PATH = "config/tilthex.yaml"
CFG = load_actuation_config(CFG_PATH)
TOPIC = "/geodyn_markers/markers"
PARAMS = {"urdf_path": XACRO, "actuation_config": CFG_PATH, "wrench_representation": "body", "rate_hz": 50.0}
POSE = [0.3, -0.2, 1.5, 0.1, -0.2, 0.3, 0.9273618495495703]
Q = np.array([0.3, -0.5, 0.7, 0.2, -0.1, 0.4])


def _pin_com(C, q_by_name):
    """Pinocchio's centre of mass of the TiltHex URDF at base pose C and the named joints (rotors at 0)."""
    pm = pin.buildModelFromXML(_read_source(XACRO)[0], pin.JointModelFreeFlyer())
    data = pm.createData()
    x = pin.neutral(pm)
    x[:3] = C[:3, 3]
    x[3:7] = pin.Quaternion(C[:3, :3]).coeffs()          # x, y, z, w
    for name, v in q_by_name.items():
        x[pm.joints[pm.getJointId(name)].idx_q] = v
    return pin.centerOfMass(pm, data, x)


def _rotor_msg(omega):
    if ROTOR_MSG_TYPE is Float64MultiArray:
        m = Float64MultiArray()
        m.layout.dim = [MultiArrayDimension(label="rotor", size=len(omega), stride=len(omega))]
        m.data = [float(v) for v in omega]
        return m
    m = ROTOR_MSG_TYPE()
    m.velocity = [float(v) for v in omega]
    return m


def _latest(arrays, ns):
    for arr in reversed(arrays):
        found = [m for m in arr.markers if m.ns == ns]
        if found:
            return found
    return []


def _jet(names, W, rep="body", multiarray=False, **frames):
    """The feedforward jet of ``W`` (6,) (rows 0 and 1) in ``rep``: typed, or the layout."""
    W2, tau = np.vstack([W, W]), np.zeros((2, len(names)))
    if multiarray:
        return FeedforwardJetPacker(names, 1).pack(0, W2, tau)
    return TypedFeedforwardPacker(names, 1, representation=rep, **frames).pack(0, W2, tau)


def _flat(names, com, multiarray=False, **frames):
    args = (0, np.array([com] * 5), np.zeros(5), np.zeros((5, len(names))), names)
    return make_flat_reference_msg(*args) if multiarray else make_flat_reference(*args, **frames)


def _inputs(h, node, W_b, omega, com_ref, rep="body", multiarray=False):
    names = node.model.joint_names
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(POSE[3:], "xyzw")
    C[:3, 3] = POSE[:3]
    jet = Float64MultiArray if multiarray else FeedforwardJet
    pubs = {t: h.publisher(type(m), t) for t, m in (("odom", odometry_msg(0, C, np.zeros(3), np.zeros(3))),
                                                     ("joint_states", joint_states_msg(0, names, Q, Q)),
                                                     ("feedforward/jet", jet()),
                                                     ("flat_reference", Float64MultiArray() if multiarray
                                                      else FlatReference()),
                                                     ("reference", Float64MultiArray() if multiarray
                                                      else ReferenceJet()),
                                                     ("cmd/rotor_speeds", _rotor_msg(omega)))}
    for t in pubs:
        h.wait_matched(t)
    pubs["odom"].publish(odometry_msg(0, C, np.zeros(3), np.zeros(3), child=node.base_frame))
    pubs["joint_states"].publish(joint_states_msg(0, names, Q, Q))
    pubs["feedforward/jet"].publish(_jet(names, W_b, rep, multiarray))
    pubs["cmd/rotor_speeds"].publish(_rotor_msg(omega))
    pubs["flat_reference"].publish(_flat(names, com_ref, multiarray))
    return C, pubs


def test_markers_show_the_wrench_thrusts_and_com(h):
    node = h.make(MarkersNode, PARAMS)
    # no subscriber: nothing built, nothing sent. (A previous test's subscriber in this process's
    # ROS domain can still be matched until DDS notices its participant is gone: wait for that.)
    assert h.spin_until(lambda: node.pub.get_subscription_count() == 0, 10.0)
    node.cycles = 0
    h.spin_for(0.5)
    assert node.cycles == 0 or node.pub.get_subscription_count() > 0
    got = []
    h.probe.create_subscription(MarkerArray, TOPIC, got.append, 10)
    W_b = np.array([0.4, -0.3, 0.2, 1.0, -2.0, 39.0])
    omega = np.array([700.0, 710.0, 720.0, 730.0, 740.0, 750.0])
    com_ref = np.array([0.1, 0.2, 1.3])
    C, _ = _inputs(h, node, W_b, omega, com_ref)
    want = set(("feedforward_force", "feedforward_torque", "rotor_thrust", "com", "com_reference"))
    assert h.spin_until(lambda: got and want <= {m.ns for m in got[-1].markers}, 10.0)
    arr = got[-1].markers
    by = {(m.ns, m.id): m for m in arr}
    assert len(by) == len(arr) == 4 + 6                   # ids unique and stable per namespace
    # CoM vs Pinocchio
    com = by[("com", 0)].pose.position
    pc = _pin_com(C, dict(zip(node.model.joint_names, Q)))
    assert np.abs(np.array([com.x, com.y, com.z]) - pc).max() < 1e-9
    assert by[("com", 0)].header.frame_id == "world" and by[("com", 0)].type == Marker.SPHERE
    ref = by[("com_reference", 0)].pose.position
    assert [ref.x, ref.y, ref.z] == list(com_ref)
    # rotor arrows: c_f omega^2 along +z of each rotor frame, thrust_scale m/N
    kf = CFG.rotors.per_rotor("motor_constant")
    for i in range(6):
        m = by[("rotor_thrust", i)]
        assert m.header.frame_id == f"rotor_{i + 1}" and m.type == Marker.ARROW
        a, b = m.points
        assert (a.x, a.y, a.z, b.x, b.y) == (0.0, 0.0, 0.0, 0.0, 0.0)
        assert abs(b.z - 0.05 * kf[i] * omega[i] ** 2) < 1e-12 * b.z
    # feedforward force and torque at the base, body axes
    f, n = by[("feedforward_force", 0)], by[("feedforward_torque", 0)]
    assert f.header.frame_id == n.header.frame_id == "base_link"
    assert np.abs(np.array([f.points[1].x, f.points[1].y, f.points[1].z]) - 0.02 * W_b[3:]).max() < 1e-12
    assert np.abs(np.array([n.points[1].x, n.points[1].y, n.points[1].z]) - 0.5 * W_b[:3]).max() < 1e-12


@pytest.mark.parametrize("types", ["typed", "multiarray"])
def test_spatial_wrench_is_drawn_in_body_axes(h, types):
    """A spatial jet (typed: the representation the message names, whatever
    ``wrench_representation`` says; ``multiarray``: ``wrench_representation spatial``, one
    deprecation warning): the arrows are Ad_C^T W at the odometry pose (the dual map)."""
    from geodyn_ros.lie import Ad
    multiarray = types == "multiarray"
    logs = rosout(h, "geodyn_markers")
    node = h.make(MarkersNode, dict(PARAMS, wrench_representation="spatial" if multiarray else "body",
                                    message_types=types))
    got = []
    h.probe.create_subscription(MarkerArray, TOPIC, got.append, 10)
    W = np.array([0.4, -0.3, 0.2, 1.0, -2.0, 39.0])
    C, _ = _inputs(h, node, W, np.full(6, 700.0), np.zeros(3), "spatial", multiarray)
    assert h.spin_until(lambda: _latest(got, "feedforward_force"), 10.0)
    if multiarray:
        assert said_deprecated(h, logs)
    Wb = Ad(C).T @ W
    f, n = _latest(got, "feedforward_force")[0], _latest(got, "feedforward_torque")[0]
    assert np.abs(np.array([f.points[1].x, f.points[1].y, f.points[1].z]) - 0.02 * Wb[3:]).max() < 1e-12
    assert np.abs(np.array([n.points[1].x, n.points[1].y, n.points[1].z]) - 0.5 * Wb[:3]).max() < 1e-12


# ----------------------------------------------------------------------------- bad bytes
def _attacks(raw: bytes, seed: int, n_data: int):
    """(name, bytes) of the attacks on the good serialization ``raw`` of a Float64MultiArray of
    ``n_data`` values (or Actuators): truncations, random bytes, huge counts."""
    rng = np.random.default_rng(seed)
    L = len(raw)
    out = [(f"cut to {k}", raw[:k] + b"\0" * ((-k) % 4)) for k in sorted({0, 4, 5, 8, 12, L // 3, L // 2, L - 8, L - 4})]
    out += [("random", bytes(rng.integers(0, 256, 64, dtype=np.uint8))),
            ("random body", raw[:4] + bytes(rng.integers(0, 256, L - 4, dtype=np.uint8)))]
    huge = bytearray(raw)
    huge[4:8] = (0xFFFFFFF0).to_bytes(4, "little")               # layout.dim count
    out.append(("huge dim count", bytes(huge)))
    start = len(raw) - 8 * n_data                                  # the data's count: just before, or 4 earlier
    for at in (start - 4, start - 8):
        if at > 4 and int.from_bytes(raw[at:at + 4], "little") == n_data:
            huge = bytearray(raw)
            huge[at:at + 4] = (0x7FFFFFFF).to_bytes(4, "little")
            out.append(("huge data count", bytes(huge)))
            break
    return out


def _nan_free(a):
    return a is not None and np.isfinite(a).all()


@pytest.mark.parametrize("topic", ["feedforward/jet", "cmd/rotor_speeds", "flat_reference", "reference"])
def test_byte_attacks_then_good_input(h, topic):
    """Each attack: the node keeps running (no exception out of spin), takes at most what rclpy
    decodes from the bytes, and the good message after it gives the right marker."""
    node = h.make(MarkersNode, PARAMS)
    got = []
    h.probe.create_subscription(MarkerArray, TOPIC, got.append, 10)
    diag = h.record(DiagnosticArray, "/diagnostics")
    W_b = np.array([0.4, -0.3, 0.2, 1.0, -2.0, 39.0])
    omega = np.full(6, 700.0)
    C, pubs = _inputs(h, node, W_b, omega, np.array([0.1, 0.2, 1.3]))
    names = node.model.joint_names
    msg_type = {"cmd/rotor_speeds": ROTOR_MSG_TYPE, "feedforward/jet": FeedforwardJet, "flat_reference": FlatReference,
                "reference": ReferenceJet}[topic]
    assert h.spin_until(lambda: node.omega is not None and node.W is not None and node.com_ref is not None, 10.0)
    for i in range(3):
        value = 700.0 + 10 * i + 1
        if topic == "feedforward/jet":
            good = _jet(names, W_b * value)
        elif topic == "cmd/rotor_speeds":
            good = _rotor_msg(np.full(6, value))
        elif topic == "flat_reference":
            good = _flat(names, np.full(3, value))
        else:   # the reference jet: base pose (x = value / 100 m) and joints; its CoM by the library
            Cr = C.copy()
            Cr[0, 3] = value / 100.0
            good = make_reference_jet(0, Cr, np.zeros((4, 6)), np.tile(Q, (4, 1)), names)
            want_ref = gd.center_of_mass(node.model, Cr, None, Q)[0]
        raw = serialize_message(good)
        nan = deserialize_message(raw, msg_type)          # well-formed bytes, a value the node must refuse
        if isinstance(nan, Float64MultiArray):
            nan.data[len(nan.data) - 1] = float("nan")
        elif topic == "cmd/rotor_speeds":
            nan.velocity[len(nan.velocity) - 1] = float("nan")
        elif topic == "feedforward/jet":
            nan.base_wrench[0].force.z = float("nan")
        elif topic == "flat_reference":
            nan.com[0].x = float("nan")
        else:
            nan.q[len(nan.q) - 1] = float("nan")
        skipped = node.diag.counters["cycles_skipped"]
        pubs[topic].publish(nan)
        assert h.spin_until(lambda: node.diag.counters["cycles_skipped"] > skipped, 5.0)
        n_data = len(good.data) if isinstance(good, Float64MultiArray) else 0
        attacks = _attacks(raw, i, n_data) if topic == "cmd/rotor_speeds" else typed_attacks(raw, i, every=False,
                                                                                              flips=4)
        for name, bad in attacks:
            try:
                seen = deserialize_message(bad, msg_type)
            except Exception:  # noqa: BLE001  rclpy refuses the bytes
                seen = None
            pubs[topic].publish(bad)
            h.spin_for(0.02)
            # whatever the node holds is finite (a refused or NaN input never replaces the value)
            assert _nan_free(node.W) and _nan_free(node.omega) and _nan_free(node.com_ref), (name, seen is None)
            pubs[topic].publish(good)
            if topic == "feedforward/jet":
                ok = lambda: node.W is not None and np.abs(node.W - W_b * value).max() < 1e-12 * value  # noqa: E731
            elif topic == "cmd/rotor_speeds":
                ok = lambda: np.abs(node.omega - value).max() == 0.0  # noqa: E731
            elif topic == "flat_reference":
                ok = lambda: np.abs(node.com_ref - value).max() == 0.0  # noqa: E731
            else:
                ok = lambda: np.abs(node.com_ref - want_ref).max() < 1e-12  # noqa: E731
            assert h.spin_until(ok, 5.0), name
    # the marker of the last good message
    n0 = len(got)
    assert h.spin_until(lambda: len(got) > n0 + 1, 5.0)
    last = {(m.ns, m.id): m for m in got[-1].markers}
    if topic == "cmd/rotor_speeds":
        kf = CFG.rotors.per_rotor("motor_constant")
        assert abs(last[("rotor_thrust", 0)].points[1].z - 0.05 * kf[0] * value ** 2) < 1e-12 * value ** 2
    elif topic == "flat_reference":
        assert last[("com_reference", 0)].pose.position.x == value
    elif topic == "reference":
        assert abs(last[("com_reference", 0)].pose.position.x - want_ref[0]) < 1e-12
    else:
        assert abs(last[("feedforward_force", 0)].points[1].z - 0.02 * 39.0 * value) < 1e-12 * value
    statuses = [s for a in diag for s in a.status]
    assert all(s.level in (b"\x00", b"\x01") for s in statuses)        # OK or WARN, never ERROR
    assert not [s.message for s in statuses if "unexpected exception" in s.message]   # refusals, no traceback


@pytest.mark.parametrize("topic", ["feedforward/jet", "flat_reference", "reference"])
def test_a_typed_jet_of_another_frame_or_joints_is_refused(h, topic):
    """A typed input whose ``header.frame_id`` is not ``world_frame``, whose ``child_frame_id`` is
    not the base link, or (the feedforward) whose joints are not the model's, is refused with its
    reason on the node's diagnostics and the value kept; the good one after it is drawn."""
    node = h.make(MarkersNode, PARAMS)
    W_b = np.array([0.4, -0.3, 0.2, 1.0, -2.0, 39.0])
    C, pubs = _inputs(h, node, W_b, np.full(6, 700.0), np.array([0.1, 0.2, 1.3]))
    names = node.model.joint_names
    assert h.spin_until(lambda: node.W is not None and node.com_ref is not None, 10.0)
    W0, com0 = node.W.copy(), node.com_ref.copy()

    def msg(value, **frames):
        if topic == "feedforward/jet":
            return _jet(frames.pop("names", names), W_b * value, **frames)
        if topic == "flat_reference":
            return _flat(names, np.full(3, value), **frames)
        Cr = C.copy()
        Cr[0, 3] = value
        return make_reference_jet(0, Cr, np.zeros((4, 6)), np.tile(Q, (4, 1)), names, **frames)
    bad = [({"frame_id": "map"}, f"{topic}: header.frame_id 'map' is not the world frame 'world'"),
           ({"child_frame_id": "robot2/base_link"},
            f"{topic}: child_frame_id 'robot2/base_link' is not the base link 'base_link'")]
    if topic == "feedforward/jet":
        bad.append(({"names": tuple(reversed(names))}, "feedforward/jet: joints ("))
    for frames, words in bad:
        pubs[topic].publish(msg(3.0, **frames))
        assert refused(h, node, words), (words, node.diag.last_problem)
        assert np.array_equal(node.W, W0) and np.array_equal(node.com_ref, com0)
    pubs[topic].publish(msg(2.0))
    if topic == "feedforward/jet":
        assert h.spin_until(lambda: np.abs(node.W - 2.0 * W_b).max() < 1e-12 * 80, 5.0)
    elif topic == "flat_reference":
        assert h.spin_until(lambda: np.array_equal(node.com_ref, np.full(3, 2.0)), 5.0)
    else:
        Cr = C.copy()
        Cr[0, 3] = 2.0
        want = gd.center_of_mass(node.model, Cr, None, Q)[0]
        assert h.spin_until(lambda: np.abs(node.com_ref - want).max() < 1e-12, 5.0)
