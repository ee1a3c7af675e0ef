"""The simulators' /tf, /tf_static and latched robot_description (geodyn_ros.ros.nodes.sim_transforms).

Oracles: MuJoCo's own link poses (``mj_data.xpos`` / ``xquat`` after ``mj_forward``: MuJoCo's
kinematics of the imported URDF, independent of the package's), rclpy's deserializer for the
bytes, integer arithmetic for the decimation grid, the xacro expansion for the description.
Tolerances: 1e-9 m and 1e-9 (rotation-matrix entries, i.e. rad for small angles) between the
composed /tf chain and MuJoCo (both are float64 kinematics of the same tree: ~1e-15 in practice);
stamps exact.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: it sets the ROS isolation env)

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from geodyn_ros.lie import quat_to_matrix
from geodyn_ros.loops.actuated import tilthex_source
from geodyn_ros.model.urdf import _read_source
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode
from geodyn_ros.ros.nodes.sim_node import SimNode
from geodyn_ros.ros.wire.tf_messages import tf_qos

XACRO = str(tilthex_source())
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
# a tilted, displaced, spinning start with bent joints: every transform non-trivial
START = {"initial_base_pose": [0.3, -0.2, 1.5, 0.1, -0.2, 0.3, 0.9273618495495703],
         "initial_base_twist": [0.2, -0.1, 0.3, 0.5, -0.4, 0.8]}


def _sub(h, msg_type, topic, qos):
    out = []
    h.probe.create_subscription(msg_type, topic, out.append, qos)
    return out


def _matrix(tr):
    T = np.eye(4)
    r, t = tr.rotation, tr.translation
    T[:3, :3] = quat_to_matrix([r.x, r.y, r.z, r.w], "xyzw")
    T[:3, 3] = (t.x, t.y, t.z)
    return T


def _compose(world, messages, prefix=""):
    """{link: (4, 4) world pose} of the tree of transforms in ``messages`` (parent -> child)."""
    edges = {ts.child_frame_id: (ts.header.frame_id, _matrix(ts.transform)) for m in messages for ts in m.transforms}
    pose = {world: np.eye(4)}
    while True:
        new = {c: pose[p] @ T for c, (p, T) in edges.items() if c not in pose and p in pose}
        if not new:
            break
        pose.update(new)
    return {k[len(prefix):]: v for k, v in pose.items() if k != world}


def _mujoco_poses(sim):
    """{body name: (4, 4)} of every MuJoCo body, from MuJoCo's own forward kinematics."""
    sim.forward()
    m, d = sim.mj_model, sim.mj_data
    out = {}
    for b in range(1, m.nbody):
        T = np.eye(4)
        T[:3, :3] = quat_to_matrix(d.xquat[b], "wxyz")
        T[:3, 3] = d.xpos[b]
        out[mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)] = T
    return out


def _stamp(msg):
    s = {ts.header.stamp.sec * 10**9 + ts.header.stamp.nanosec for ts in msg.transforms}
    assert len(s) == 1
    return s.pop()


@pytest.mark.parametrize("kind", ["actuated", "plain_sensed"])
def test_tf_equals_mujoco_link_poses(h, kind):
    """/tf (+ /tf_static) composed from the world frame = MuJoCo's pose of every URDF link at
    every published step, 1e-9; the fixed (locked rotor) joints once on /tf_static, each link
    exactly once in the tree; under sensing (odom = noisy samples) /tf is still the exact state."""
    prefix = "r1/"
    if kind == "actuated":
        node = h.make(ActuatedSimNode, {"urdf_path": XACRO, "tf_rate_hz": 1000.0, "frame_prefix": prefix,
                                        "command_timeout": 100.0, **START})
    else:
        node = h.make(SimNode, {"urdf_path": "urdf/aerial_manipulator.urdf", "tf_rate_hz": 1000.0,
                                "frame_prefix": prefix, "command_timeout": 100.0, "sensing": "mocap",
                                "initial_joint_positions": [0.3, -0.5, 0.7, 0.2, -0.1, 0.4], **START})
    tf = _sub(h, TFMessage, "/tf", tf_qos())
    static = _sub(h, TFMessage, "/tf_static", LATCHED)      # subscribed after the node published it
    has_fixed = kind == "actuated"       # the aerial manipulator has no fixed joint: no /tf_static message
    assert h.spin_until(lambda: (static or not has_fixed) and node.tf.pub_tf.get_subscription_count() > 0, 10.0)
    truth = {}
    sent0 = node.tf.published          # the start state, published before the probe listened
    for _ in range(30):
        node.step()
        truth[node.stamp_ns] = _mujoco_poses(node.sim)
        # delivered before the next burst (keep last 100: a burst of more would overwrite)
        assert h.spin_until(lambda: len(tf) == node.tf.published - sent0, 10.0)
    h.spin_for(0.2)
    model = node.sim.model
    assert len(static) == int(has_fixed)
    fixed = [ts.child_frame_id for m in static for ts in m.transforms]
    if kind == "actuated":    # the rotor joints the simulator locks: static, at their lock position
        assert all(prefix + f"rotor_{i}" in fixed for i in range(1, 7))
    stamps = [_stamp(m) for m in tf]
    # each step once, in order (under sensing one step() call makes steps until an odometry sample
    # is delivered: MuJoCo's poses are taken after each call, the last of its steps)
    assert stamps == [k * node.dt_ns for k in range(1, node.steps + 1)]
    assert len(truth) == 30 and set(truth) <= set(stamps)
    for m in tf:
        t = _stamp(m)
        if t not in truth:
            continue
        assert m.transforms[0].header.frame_id == "world" and m.transforms[0].child_frame_id == prefix + model.base_link
        pose = _compose("world", [m, *static], prefix)
        children = [ts.child_frame_id for ts in m.transforms] + fixed
        assert len(children) == len(set(children))             # a tree: one parent per frame
        assert set(pose) == set(model.link_to_body)          # every link of the robot, nothing else
        mj = truth[t]
        for link, T in pose.items():
            assert np.abs(T[:3, 3] - mj[link][:3, 3]).max() < 1e-9, (t, link)
            assert np.abs(T[:3, :3] - mj[link][:3, :3]).max() < 1e-9, (t, link)


def test_tf_rate_decimation_is_exact_in_simulated_time(h):
    """tf_rate_hz 300 at 1 ms: the first step at or after each multiple of round(1e9/300) ns (a
    fixed grid: steps 0, 4, 7, 10, 14, ...), nothing else; a republished state is not re-sent."""
    node = h.make(SimNode, {"urdf_path": "urdf/aerial_manipulator.urdf", "tf_rate_hz": 300.0,
                            "command_timeout": 100.0})
    tf = _sub(h, TFMessage, "/tf", tf_qos())
    assert h.spin_until(lambda: node.tf.pub_tf.get_subscription_count() > 0, 10.0)
    assert node.tf.published == 1                 # the start state, before anyone listened
    for _ in range(100):
        node.step()
    node.publish_state()                          # a republished state (the watchdog's): not sent again
    assert h.spin_until(lambda: len(tf) >= node.tf.published - 1, 10.0)
    h.spin_for(0.2)
    P = round(1e9 / 300)
    want = [k * 10**6 for k in range(1, 101) if k * 10**6 // P != (k - 1) * 10**6 // P]
    assert want[:4] == [4 * 10**6, 7 * 10**6, 10 * 10**6, 14 * 10**6]
    assert [_stamp(m) for m in tf] == want


def test_tf_off_and_bad_rate(h):
    """tf_rate_hz 0: no /tf, no /tf_static publisher; a negative or NaN rate refused in one line."""
    node = h.make(SimNode, {"urdf_path": "urdf/aerial_manipulator.urdf", "tf_rate_hz": 0.0})
    names = {n for n, _ in node.get_publisher_names_and_types_by_node(node.get_name(), node.get_namespace())}
    assert "/tf" not in names and "/tf_static" not in names and "/robot_description" in names
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigurationError, match=r"^parameter 'tf_rate_hz': "):
            h.make(SimNode, {"urdf_path": "urdf/aerial_manipulator.urdf", "tf_rate_hz": bad}, node_name="bad")


def test_without_tf2_msgs_the_simulator_runs_with_tf_off(h, monkeypatch):
    """A ROS setup without tf2_msgs (a workspace that built this package alone against a Python
    without it): the simulator starts and steps, /tf is off, and one warning says why."""
    import sys
    monkeypatch.setitem(sys.modules, "tf2_msgs", None)       # import tf2_msgs -> ImportError
    monkeypatch.setitem(sys.modules, "tf2_msgs.msg", None)
    monkeypatch.delitem(sys.modules, "geodyn_ros.ros.wire.tf_messages", raising=False)
    node = h.make(SimNode, {"urdf_path": "urdf/aerial_manipulator.urdf"})
    assert node.tf.period_ns == 0 and node.tf.pub_tf is None
    names = {n for n, _ in node.get_publisher_names_and_types_by_node(node.get_name(), node.get_namespace())}
    assert "/tf" not in names and "/clock" in names and "/robot_description" in names
    node.step()
    assert node.steps == 1


@pytest.mark.parametrize("source", ["urdf_path", "robot_description"])
def test_robot_description_latched(h, source):
    """The simulator publishes its robot_description parameter (urdf_path: the xacro expansion)
    latched: a subscriber that joins later gets it, once."""
    text = _read_source(XACRO)[0]
    h.make(ActuatedSimNode, {source: XACRO if source == "urdf_path" else text}, namespace="robot1")
    got = _sub(h, String, "/robot1/robot_description", LATCHED)
    assert h.spin_until(lambda: got, 10.0)
    h.spin_for(0.3)
    assert [m.data for m in got] == [text]
