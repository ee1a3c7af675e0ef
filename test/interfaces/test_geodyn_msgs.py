"""The typed messages of ``geodyn_msgs`` (issue 43) as built into the venv by ``make venv``'s step 5
(``tools/build_interfaces.py``), and ``tf2_msgs/TFMessage`` (built there too where no ROS install
has it).

The expected fields are the table below, written from the design of the ``.msg`` files
(``doc/reference/messages.md``), not read from the generated code: a changed field name, type or
order fails here and must be changed in the docs too."""
from __future__ import annotations

import importlib

import ros_harness  # noqa: F401  (first: the process's own ROS_DOMAIN_ID before rclpy starts)

import pytest
import rclpy
from rclpy.serialization import deserialize_message, serialize_message

from geodyn_ros.ros.common.runtime import control_qos

H = "std_msgs/Header"
SEQ_D, SEQ_S = "sequence<double>", "sequence<string>"
#: message -> its fields in order, {name: rosidl type}
FIELDS = {
    "ReferenceJet": {"header": H, "child_frame_id": "string", "order": "uint8", "representation": "string",
                     "base_pose": "geometry_msgs/Pose", "base_twist": "sequence<geometry_msgs/Twist>",
                     "joint_names": SEQ_S, "q": SEQ_D},
    "DesiredState": {"header": H, "child_frame_id": "string", "order": "uint8", "representation": "string",
                     "base_pose": "geometry_msgs/Pose", "base_twist": "sequence<geometry_msgs/Twist>",
                     "joint_names": SEQ_S, "q": SEQ_D},
    "FlatReference": {"header": H, "child_frame_id": "string", "order": "uint8",
                      "com": "sequence<geometry_msgs/Vector3>", "yaw": SEQ_D, "joint_names": SEQ_S, "q": SEQ_D},
    "FeedforwardJet": {"header": H, "child_frame_id": "string", "order": "uint8", "representation": "string",
                       "base_wrench": "sequence<geometry_msgs/Wrench>", "joint_names": SEQ_S, "tau": SEQ_D},
    "RotorSpeeds": {"header": H, "order": "uint8", "rotor_names": SEQ_S, "angular_velocities": SEQ_D},
    "Linearization": {"header": H, "child_frame_id": "string", "representation": "string", "nx": "uint32",
                      "nu": "uint32", "state_labels": SEQ_S, "input_labels": SEQ_S, "a": SEQ_D, "b": SEQ_D},
}
#: the representation constants of the messages that carry a base twist or wrench
CONSTANTS = {"ReferenceJet": ("spatial", "body", "hybrid", "mixed"), "DesiredState": ("spatial", "body", "hybrid", "mixed"),
             "FeedforwardJet": ("spatial", "body", "hybrid", "mixed"), "Linearization": ("spatial", "body")}


def _msgs():
    try:
        return importlib.import_module("geodyn_msgs.msg")
    except ImportError as e:   # fail, never skip: make venv builds it
        pytest.fail(f"geodyn_msgs is not built into this venv ({e}); run: make venv "
                    "(or .venv/bin/python tools/build_interfaces.py)")


def _sample(name: str):
    """A message of every type with every field set to something that is not its default."""
    from geometry_msgs.msg import Twist, Vector3, Wrench
    m = getattr(_msgs(), name)()
    m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id = 1700000000, 123456789, "world"
    if name in ("ReferenceJet", "DesiredState"):
        m.child_frame_id, m.order, m.representation = "r1/base_link", 2, m.REPRESENTATION_SPATIAL
        m.base_pose.position.x, m.base_pose.orientation.w = 0.5, 1.0
        m.base_twist = [Twist() for _ in range(3)]
        m.base_twist[1].angular.z, m.base_twist[2].linear.x = 0.25, -3.0
        m.joint_names, m.q = ["j1", "j2"], [0.1, 0.2, 1.1, 1.2, 2.1, 2.2]
    elif name == "FlatReference":
        m.child_frame_id, m.order = "base_link", 1
        m.com, m.yaw = [Vector3(x=1.0, y=2.0, z=3.0), Vector3(z=-0.5)], [0.3, 0.01]
        m.joint_names, m.q = ["j1"], [0.4, -0.4]
    elif name == "FeedforwardJet":
        m.child_frame_id, m.order, m.representation = "base_link", 1, m.REPRESENTATION_BODY
        m.base_wrench = [Wrench(), Wrench()]
        m.base_wrench[0].force.z, m.base_wrench[1].torque.x = 14.7, 0.02
        m.joint_names, m.tau = ["j1", "j2", "j3"], [1.0, 2.0, 3.0, 0.1, 0.2, 0.3]
    elif name == "RotorSpeeds":
        m.header.frame_id, m.order = "base_link", 1
        m.rotor_names, m.angular_velocities = ["rotor_0", "rotor_1"], [600.0, 610.0, 5.0, -5.0]
    elif name == "Linearization":
        m.child_frame_id, m.representation, m.nx, m.nu = "base_link", m.REPRESENTATION_BODY, 2, 1
        m.state_labels, m.input_labels = ["q:j1", "qd:j1"], ["tau:j1"]
        m.a, m.b = [0.0, 1.0, -2.0, -0.1], [0.0, 3.0]
    return m


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_message_imports_with_the_documented_fields(name):
    cls = getattr(_msgs(), name)
    assert list(cls.get_fields_and_field_types().items()) == list(FIELDS[name].items())
    for value in CONSTANTS.get(name, ()):
        assert getattr(cls, f"REPRESENTATION_{value.upper()}") == value


def test_the_field_table_matches_the_msg_files_and_the_docs():
    """The .msg files declare these fields in this order, and doc/reference/messages.md names each."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    doc = (root / "doc" / "reference" / "messages.md").read_text()
    for name, fields in FIELDS.items():
        lines = [ln.split("#")[0].split() for ln in (root / "geodyn_msgs" / "msg" / f"{name}.msg").read_text().splitlines()]
        declared = [ln[1] for ln in lines if len(ln) == 2]
        assert declared == list(fields), name
        assert f"## `{name}`" in doc, name
        for field in fields:
            assert f"`{field}`" in doc, (name, field)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_serialize_round_trip(name):
    m = _sample(name)
    assert deserialize_message(serialize_message(m), type(m)) == m


def test_rclpy_publishes_and_receives_every_message_across_two_nodes(h):
    """Each message goes from the probe node to a second node of the same process over the
    DDS transport (reliable, keep-last) and arrives equal."""
    listener = h.add(rclpy.create_node("geodyn_msgs_listener", context=h.ctx))
    got = {name: [] for name in FIELDS}
    sent = {name: _sample(name) for name in FIELDS}
    for name in FIELDS:
        listener.create_subscription(type(sent[name]), f"typed/{name}", got[name].append, control_qos(10))
        h.publisher(type(sent[name]), f"typed/{name}")
    for name in FIELDS:
        h.wait_matched(f"typed/{name}", timeout=10.0)
        h.publisher(type(sent[name]), f"typed/{name}").publish(sent[name])
    assert h.spin_until(lambda: all(got.values()), timeout=10.0), {n: len(v) for n, v in got.items()}
    for name in FIELDS:
        assert got[name][0] == sent[name], name


def test_tf_message_round_trip():
    """tf2_msgs/TFMessage: the published layout (``geometry_msgs/TransformStamped[] transforms``)
    serializes and deserializes with rclpy."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError as e:
        pytest.fail(f"tf2_msgs is not importable ({e}); make venv builds it where no ROS install has it")
    from geometry_msgs.msg import TransformStamped
    assert TFMessage.get_fields_and_field_types() == {"transforms": "sequence<geometry_msgs/TransformStamped>"}
    msg = TFMessage()
    for i, (child, z) in enumerate((("base_link", 1.5), ("link_1", 0.1))):
        t = TransformStamped()
        t.header.stamp.sec, t.header.stamp.nanosec = 12, 345 + i
        t.header.frame_id, t.child_frame_id = ("world", "base_link")[i], child
        t.transform.translation.z = z
        t.transform.rotation.z, t.transform.rotation.w = 0.6, 0.8
        msg.transforms.append(t)
    raw = serialize_message(msg)
    back = deserialize_message(raw, TFMessage)
    assert back == msg and [t.child_frame_id for t in back.transforms] == ["base_link", "link_1"]
    assert serialize_message(back) == raw


#: px4_msgs 1.16.0 (tag v1.16.0, commit 392e831c1f65): the serialized size of each fixture message
#: at its defaults, worked by hand from the release's field list with the CDR rules (4-byte
#: encapsulation header; each field aligned to its size, counted from after the header; fixed
#: arrays without a length; rclpy pads the payload to a multiple of 4):
PX4_SIZES = {
    # 8 + 8 timestamps, float32[3] xyz: 28 -> + 4 = 32
    "VehicleThrustSetpoint": 32, "VehicleTorqueSetpoint": 32,
    # timestamp 8; 7 bools: 15 -> + 4 = 19 -> padded 20
    "OffboardControlMode": 20,
    # 16 timestamps; uint16 reversible_flags: 18; float32[12] control at 20: 68 -> + 4 = 72
    "ActuatorMotors": 72,
    # 16; uint8 pose_frame 17; float32[3] position at 20: 32; q[4]: 48; uint8 velocity_frame 49;
    # velocity at 52: 64; angular_velocity 76; 3 variances: 112; uint8 reset_counter, int8 quality:
    # 114 -> + 4 = 118 -> padded 120
    "VehicleOdometry": 120,
    # timestamp 8; param1-4 float32: 24; param5-6 float64: 40; param7: 44; uint32 command: 48;
    # 3 uint8: 51; uint16 source_component at 52: 54; uint8 confirmation 55; bool from_external 56
    # -> + 4 = 60
    "VehicleCommand": 60,
    # 3 uint64 (timestamp, armed_time, takeoff_time): 24; 3 uint8 (arming): 27; uint64
    # nav_state_timestamp at 32: 40; 3 uint8 (nav_state_user_intention, nav_state,
    # executor_in_charge): 43; 2 uint32 masks at 44: 52; uint16 failure_detector_status: 54;
    # hil_state, vehicle_type: 56; failsafe, failsafe_and_user_took_over, failsafe_defer_state: 59;
    # gcs_connection_lost, its counter, high_latency_data_link_lost: 62; 4 VTOL bools: 66;
    # system_type, system_id, component_id: 69; 11 bools (safety_button_available ..
    # pre_flight_checks_pass): 80 -> + 4 = 84
    "VehicleStatus": 84,
}


@pytest.mark.parametrize("name", sorted(PX4_SIZES))
def test_px4_msgs_fixture_has_the_release_layout(name):
    """The px4_msgs fixture of the PX4 bridge (tools/px4_msgs, built by make venv where no real
    px4_msgs is installed): every field of the release is there, with its type, in order, so its
    bytes are PX4's. The sizes above are worked by hand; a dropped, added, reordered or retyped
    field changes the alignment or the length."""
    mod = importlib.import_module("px4_msgs.msg")
    msg = getattr(mod, name)()
    assert len(serialize_message(msg)) == PX4_SIZES[name]
    assert deserialize_message(serialize_message(msg), type(msg)) == msg
