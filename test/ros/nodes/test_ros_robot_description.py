"""The robot model from the ``robot_description`` topic (issue 18, item 1; rules in
``geodyn_ros/ros/common/description.py``).

robot_state_publisher is not pip-installable: a latched publisher on the probe node stands in
for it (``std_msgs/String`` on ``robot_description``, reliable, transient local, keep last 1:
robot_state_publisher's QoS, written out here rather than taken from the node's code).

Outputs are compared with ``gd.inverse_dynamics`` of ``gd.load_urdf(<the same text>)`` on the
same inputs at 1e-12 relative, as in test_ros_geodyn_node.py: the same double-precision kernel
on inputs that agree to rounding, so anything larger is the wrong model or a bookkeeping bug.
The simulator is compared with a ``MujocoSim`` built from the same text at 1e-14 (one step of
the same MuJoCo model from the same state; test_ros_closed_loop.py uses the same bound).
"""
from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest
from ros_harness import decode_reference, joint_states_msg, odometry_msg, read_feedforward  # noqa: I100  (sets the ROS isolation env first; fixture h: conftest)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet
from std_msgs.msg import String

import geodyn_ros as gd
from geodyn_ros.control import TrackingGains, tracking_command
from geodyn_ros.lie import Ad_inv
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.trajectories import table3_reference

URDF = str(shipped_urdf())
TEXT = open(URDF).read()
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MODEL = gd.load_urdf(TEXT)   # the reference model, loaded here, not by the node
TOL = 1e-12
RSP_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
WAITING = "waiting for robot_description on /robot_description"

#: Another robot: other joints (a pendulum with one continuous joint).
PENDULUM = """<robot name="pendulum">
  <link name="base_link"><inertial><mass value="1.0"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base_link"/><child link="arm"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 1 0"/></joint>
  <link name="arm"><inertial><origin xyz="0 0 0.2"/><mass value="0.3"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""


def _heavier(text=TEXT, link="link7", mass=1.75):
    """The shipped robot with the mass of ``link`` changed (same joints, same base link)."""
    start = text.index(f'<link name="{link}">')
    m = re.compile(r'<mass value="[^"]*"/>').search(text, start)
    return text[:m.start()] + f'<mass value="{mass}"/>' + text[m.end():]


BAD = {
    "empty": ("", "empty message"),
    "blank": ("  \n\t ", "empty message"),
    # a file that exists: a description is never read as a path
    "path_not_xml": ("/etc/hostname", "not XML"),
    "text_not_xml": ("robot_description", "not XML"),
    "broken_urdf": ("<robot name='broken'><link name='a'/><joint name='j' type='revolute'/></robot>",
                    "cannot load the robot model"),
    "not_a_robot": ("<html><body/></html>", "cannot load the robot model"),
    "other_joints": (PENDULUM, "joints differ"),
    "other_base_link": (TEXT.replace('"base_link"', '"body"'), "base link 'body'"),
    "joints_reordered": (None, "another order"),   # built in the test (swap two branches)
    # issue 41: the same robot with every mass and inertia x 1e300 (finite, consistent, absurd)
    "masses_times_1e300": (re.sub(r'(value|i[xyz]{2})="([^"]+)"', lambda m: f'{m.group(1)}="{float(m.group(2)) * 1e300!r}"',
                                  TEXT), "is absurd for a robot"),
}


def _reordered():
    """The shipped robot with its two arm branches swapped in the file: same joint names in
    another depth-first order."""
    model = gd.load_urdf(TEXT)
    lines = TEXT.splitlines(keepends=True)
    # the second branch (J5, J6, J7) starts at the joint whose parent is base_link the 2nd time
    idx = [i for i, ln in enumerate(lines) if '<parent link="base_link"/>' in ln]
    j1 = max(i for i in range(idx[0]) if "<joint" in lines[i])
    j2 = max(i for i in range(idx[1]) if "<joint" in lines[i])
    end = max(i for i, ln in enumerate(lines) if "</robot>" in ln)
    text = "".join(lines[:j1] + lines[j2:end] + lines[j1:j2] + lines[end:])
    other = gd.load_urdf(text)
    assert set(other.joint_names) == set(model.joint_names) and other.joint_names != model.joint_names
    return text


def _rsp(h, topic="robot_description"):
    """The robot_state_publisher stand-in: a latched String publisher on the probe node."""
    return h.probe.create_publisher(String, topic, RSP_QOS)


def _now(node) -> int:
    return node.get_clock().now().nanoseconds


def _ref_msg(t, stamp, order=2):
    ref = table3_reference(t, order + 1)
    return make_reference_jet(stamp, ref.base_pose, ref.base_twist[: order + 3], ref.q[: order + 3], NAMES), ref


def _statuses(diag, name="geodyn_node: feedforward"):
    return [s for a in diag for s in a.status if s.name == name]


def _messages(diag, name="geodyn_node: feedforward"):
    return [s.message for s in _statuses(diag, name)]


def _start(h, **params):
    node = h.make(GeodynNode, {"order": 2, "stale_timeout": 2.0, **params})
    outs = {"jet": h.record(FeedforwardJet, "feedforward/jet"),
            "efforts": h.record(JointState, "feedforward/joint_efforts"),
            "wrench": h.record(WrenchStamped, "feedforward/wrench"),
            "diag": h.record(DiagnosticArray, "/diagnostics")}
    h.publisher(ReferenceJet, "reference")
    h.wait_matched("reference")
    return node, outs


def _cycle_matches(h, node, outs, model, t=5.0):
    """Send one reference; the published feedforward must be ``gd.inverse_dynamics`` of ``model``
    (1e-12 relative, module docstring) with the model's joint names. Returns the result."""
    k = len(outs["jet"])
    msg, _ = _ref_msg(t, _now(node))
    h.publisher(ReferenceJet, "reference").publish(msg)
    assert h.spin_until(lambda: len(outs["jet"]) > k and len(outs["efforts"]) > k and len(outs["wrench"]) > k), \
        _messages(outs["diag"])
    C, V, Q = decode_reference(msg)   # independent decoding (the pose goes through a quaternion)
    want = gd.inverse_dynamics(model, C, V[:4], Q[:5], 2)
    _, W, tau, names, _ = read_feedforward(outs["jet"][-1])
    scale = max(1.0, np.abs(want.base_wrench).max(), np.abs(want.tau).max())
    assert names == tuple(model.joint_names) == NAMES
    assert tuple(outs["efforts"][-1].name) == NAMES
    assert np.abs(W - want.base_wrench).max() <= TOL * scale
    assert np.abs(tau - want.tau).max() <= TOL * scale
    assert np.abs(np.array(outs["efforts"][-1].effort) - want.tau[0]).max() <= TOL * scale
    return want


def _wait_model(h, node, timeout=20.0):
    assert h.spin_until(lambda: node.model is not None, timeout), "no model from the topic"
    return node.model


# ------------------------------------------------------------------------------ start from the topic
def test_waits_then_loads_a_description_published_after_start(h):
    node, outs = _start(h)
    assert node.model is None
    # waiting is reported; an input that arrives meanwhile is reported and publishes nothing
    assert h.spin_until(lambda: any(WAITING in m for m in _messages(outs["diag"])), 5.0), _messages(outs["diag"])
    assert all(s.level == DiagnosticStatus.WARN for s in _statuses(outs["diag"]) if WAITING in s.message)
    h.publisher(ReferenceJet, "reference").publish(_ref_msg(1.0, _now(node))[0])
    assert h.spin_until(lambda: any("reference: no robot model yet" in m for m in _messages(outs["diag"])), 5.0)
    h.spin_for(0.2)
    assert not outs["jet"] and not outs["efforts"] and not outs["wrench"]

    _rsp(h).publish(String(data=TEXT))
    model = _wait_model(h, node)
    assert model.joint_names == NAMES and node.model_source.topic == "/robot_description"
    assert h.spin_until(lambda: any("robot model 'aerial_manipulator' (6 joints, base 'base_link') loaded" in m
                                    for m in _messages(outs["diag"])), 5.0), _messages(outs["diag"])
    _cycle_matches(h, node, outs, MODEL)


def test_description_published_before_start_is_delivered(h):
    """Transient local: the description published before the node existed still arrives."""
    pub = _rsp(h)
    pub.publish(String(data=_heavier(mass=0.9)))
    h.spin_for(0.2)
    node, outs = _start(h)
    _wait_model(h, node)
    assert abs(node.model.total_mass - (MODEL.total_mass + 0.65)) < 1e-12   # the heavier one
    _cycle_matches(h, node, outs, gd.load_urdf(_heavier(mass=0.9)))


def test_topic_name_parameter_and_namespace(h):
    """``robot_description_topic`` is relative: in namespace /r1 the node reads /r1/<topic>."""
    node = h.make(GeodynNode, {"robot_description_topic": "my_description"}, namespace="r1")
    assert node.model_source.topic == "/r1/my_description"
    _rsp(h, "robot_description").publish(String(data=TEXT))     # another topic: not read
    h.spin_for(0.5)
    assert node.model is None
    _rsp(h, "/r1/my_description").publish(String(data=TEXT))
    _wait_model(h, node)


# ------------------------------------------------------------------------------ bad descriptions
@pytest.mark.parametrize("case", list(BAD))
def test_bad_description_while_running_keeps_the_model(h, case):
    text, keyword = BAD[case]
    if text is None:
        text = _reordered()
    node, outs = _start(h)
    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    model = _wait_model(h, node)
    _cycle_matches(h, node, outs, MODEL, t=3.0)
    n0 = len(outs["diag"])
    pub.publish(String(data=text))
    assert h.spin_until(lambda: any(keyword in m for m in _messages(outs["diag"][n0:])), 10.0), \
        _messages(outs["diag"][n0:])
    report = next(s for s in _statuses(outs["diag"][n0:]) if keyword in s.message)
    assert report.level == DiagnosticStatus.WARN
    assert "/robot_description: description refused" in report.message
    assert report.message.endswith("keeping the model 'aerial_manipulator' in use")
    assert "\n" not in report.message
    assert node.model is model
    # the node keeps publishing, with the old model and its joint names
    _cycle_matches(h, node, outs, MODEL, t=7.0)
    # the refusal stays visible on later statuses
    assert any(kv.key == "robot_description" and keyword in kv.value
               for s in _statuses(outs["diag"][n0:]) for kv in s.values)


def test_bad_first_description_keeps_waiting(h):
    node, outs = _start(h)
    pub = _rsp(h)
    pub.publish(String(data="<robot name='broken'><link name='a'/><joint name='j' type='revolute'/></robot>"))
    assert h.spin_until(lambda: any("still waiting for a valid robot_description" in m
                                    for m in _messages(outs["diag"])), 10.0)
    assert h.spin_until(lambda: any(WAITING + " (last one refused: cannot load" in m
                                    for m in _messages(outs["diag"])), 5.0)
    assert node.model is None
    pub.publish(String(data=PENDULUM))    # the first valid description may be any robot
    assert h.spin_until(lambda: node.model is not None, 10.0)
    assert node.model.joint_names == ("hinge",)


def test_identical_description_is_not_reloaded(h):
    node, outs = _start(h)
    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    model = _wait_model(h, node)
    loads = node.model_source.loads
    pub.publish(String(data=TEXT))
    h.spin_for(0.5)
    assert node.model is model and node.model_source.loads == loads


def test_burst_of_descriptions_ends_on_the_last_valid_one(h):
    """300 descriptions as fast as they can be sent (bad ones, other robots, heavier variants):
    the node survives, keeps publishing, and ends on the last one sent, a same-joints variant
    (keep-last 1 delivers the last message; the loader always takes the newest)."""
    node, outs = _start(h)
    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    _wait_model(h, node)
    rng = np.random.default_rng(18)
    pool = [t for t, _ in BAD.values() if t is not None] + [_heavier(mass=m) for m in (0.5, 0.75, 2.0)]
    for k in range(300):
        pub.publish(String(data=pool[int(rng.integers(0, len(pool)))]))
        if k % 10 == 0:
            h.ex.spin_once(timeout_sec=0.0)
    last = _heavier(mass=1.25)
    pub.publish(String(data=last))
    assert h.spin_until(lambda: abs(node.model.total_mass - MODEL.total_mass - 1.0) < 1e-12, 20.0)
    h.spin_for(0.3)   # nothing older may arrive after the last one
    assert abs(node.model.total_mass - MODEL.total_mass - 1.0) < 1e-12
    assert node.model.joint_names == NAMES
    _cycle_matches(h, node, outs, gd.load_urdf(last))


# ------------------------------------------------------------------------------ replacement
def test_same_joints_replacement_takes_effect_between_cycles(h):
    """A description with the same joints and base link but link7 1.5 kg heavier replaces the
    model; the load runs on a background thread (slowed to 1 s here): meanwhile cycles keep
    running on the old model, afterwards on the new one."""
    node, outs = _start(h)
    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    old = _wait_model(h, node)
    old_res = _cycle_matches(h, node, outs, MODEL)
    src = node.model_source
    real_load, loader_threads = src._load, []

    def slow_load(text):
        loader_threads.append(threading.current_thread())
        time.sleep(1.0)
        return real_load(text)
    src._load = slow_load
    new_text = _heavier()
    t0 = time.monotonic()
    pub.publish(String(data=new_text))
    assert h.spin_until(lambda: loader_threads, 5.0)
    during = 0
    while node.model is old and time.monotonic() - t0 < 0.7:
        _cycle_matches(h, node, outs, MODEL, t=5.0)   # the executor is not blocked by the load
        during += 1
    assert during >= 2 and node.model is old
    assert loader_threads[0] is not threading.main_thread()
    assert h.spin_until(lambda: node.model is not old, 10.0)
    new = gd.load_urdf(new_text)
    assert abs(node.model.total_mass - old.total_mass - 1.5) < 1e-12
    assert h.spin_until(lambda: any("replaced (same joints and base link)" in m for m in _messages(outs["diag"])))
    res = _cycle_matches(h, node, outs, new, t=5.0)
    # the change is visible (not within the tolerance): 1.5 kg more at the gripper
    scale = np.abs(old_res.tau).max()
    assert np.abs(res.tau - old_res.tau).max() > 1e-2 * scale
    assert abs(res.base_wrench[0, 5] - old_res.base_wrench[0, 5]) > 1.0   # > 1 N more vertical force


def test_replacement_with_linearization_republishes_the_labels(h):
    labels = []
    h.probe.create_subscription(String, "/geodyn_node/linearization/labels", labels.append, RSP_QOS)
    node, outs = _start(h, publish_linearization=True)
    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    _wait_model(h, node)
    assert h.spin_until(lambda: len(labels) == 1)
    pub.publish(String(data=_heavier().replace('name="aerial_manipulator"', 'name="aerial_manipulator_v2"')))
    assert h.spin_until(lambda: len(labels) == 2, 10.0)
    assert '"model": "aerial_manipulator"' in labels[0].data
    assert '"model": "aerial_manipulator_v2"' in labels[-1].data


# ------------------------------------------------------------------------------ other nodes
def test_controller_from_the_topic(h):
    node = h.make(ControllerNode, {"use_feedforward": False, "input_policy": "exact"})
    diag = h.record(DiagnosticArray, "/diagnostics")
    efforts = h.record(JointState, "cmd/joint_efforts")
    from geodyn_msgs.msg import ReferenceJet

    from geodyn_ros.ros.wire.typed import make_reference_jet
    po, pj, pr = (h.publisher(Odometry, "odom"), h.publisher(JointState, "joint_states"),
                  h.publisher(ReferenceJet, "reference"))
    h.wait_matched("odom")
    h.wait_matched("reference")
    h.wait_matched("joint_states")
    name = "geodyn_controller: tracking"
    assert h.spin_until(lambda: any(WAITING in m for m in _messages(diag, name)), 5.0)
    po.publish(odometry_msg(10**9, np.eye(4), np.zeros(3), np.zeros(3)))
    assert h.spin_until(lambda: any("odom: no robot model yet" in m for m in _messages(diag, name)), 5.0)
    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    _wait_model(h, node)
    ref = table3_reference(2.0, 1)
    stamp = 2 * 10**9
    q = ref.q[0] + 0.05
    pr.publish(make_reference_jet(stamp, ref.base_pose, ref.base_twist[:3], ref.q[:3], NAMES))
    h.spin_for(0.05)
    po.publish(odometry_msg(stamp, ref.base_pose, np.zeros(3), np.zeros(3)))
    pj.publish(joint_states_msg(stamp, NAMES, q, np.zeros(6)))
    assert h.spin_until(lambda: len(efforts) > 0)
    Vbd = Ad_inv(ref.base_pose) @ ref.base_twist[0]
    _, tau = tracking_command(TrackingGains(), ref.base_pose, np.zeros(6), q, np.zeros(6), ref.base_pose, Vbd,
                              ref.q[0], ref.q[1])
    assert tuple(efforts[-1].name) == NAMES
    assert np.abs(np.array(efforts[-1].effort) - tau).max() <= TOL * max(1.0, np.abs(tau).max())
    # another robot is refused, the controller keeps its joints
    model = node.model
    pub.publish(String(data=PENDULUM))
    assert h.spin_until(lambda: any("joints differ" in m for m in _messages(diag, name)), 10.0)
    assert node.model is model


def test_sim_from_the_topic_builds_once(h):
    from geodyn_ros.ros.nodes.sim_node import SimNode
    from geodyn_ros.sim import MujocoSim

    node = h.make(SimNode, {"timestep": 0.002})
    diag = h.record(DiagnosticArray, "/diagnostics")
    clock = h.record(ClockMsg, "/clock")
    js = h.record(JointState, "joint_states")
    odom = h.record(Odometry, "odom")
    pw, pe = h.publisher(WrenchStamped, "cmd/wrench"), h.publisher(JointState, "cmd/joint_efforts")
    h.wait_matched("cmd/wrench")
    h.wait_matched("cmd/joint_efforts")
    name = "geodyn_sim: simulation"
    assert h.spin_until(lambda: any(WAITING in m for m in _messages(diag, name)), 5.0)
    assert not clock and not js and not odom and node.sim is None   # nothing before the model

    def command(stamp, W, tau):
        w = WrenchStamped()
        w.header.stamp.sec, w.header.stamp.nanosec = divmod(stamp, 10**9)
        w.header.frame_id = "base_link"
        w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = (float(v) for v in W[:3])
        w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in W[3:])
        e = JointState()
        e.header.stamp = w.header.stamp
        e.name = list(NAMES)
        e.effort = [float(v) for v in tau]
        pw.publish(w)
        pe.publish(e)
    command(0, np.zeros(6), np.zeros(6))
    # (the rate limit may merge the two reports into the later one)
    assert h.spin_until(lambda: any(re.match(r"cmd/(wrench|joint_efforts): no robot model yet", m)
                                    for m in _messages(diag, name)), 5.0)

    pub = _rsp(h)
    pub.publish(String(data=TEXT))
    assert h.spin_until(lambda: node.sim is not None and js and clock, 20.0)
    assert tuple(js[-1].name) == NAMES and node.steps == 0
    twin = MujocoSim(TEXT, timestep=0.002)
    C0 = np.eye(4)
    C0[0, 3] = 1.0   # the default initial_base_pose: x = 1 m, identity orientation, at rest
    twin.reset(C0, np.zeros(6), np.zeros(6), np.zeros(6), time=0.0)
    rng = np.random.default_rng(4)
    for k in range(2):
        W, tau = rng.normal(size=6), rng.normal(size=6)
        command(node.stamp_ns, W, tau)
        assert h.spin_until(lambda: node.steps == k + 1)
        twin.set_command(W, tau)
        twin.step()
        assert np.abs(node.sim.base_pose() - twin.base_pose()).max() < 1e-14
        assert np.abs(node.sim.q() - twin.q()).max() < 1e-14
        if k == 0:
            # a different description (even of the same robot) is refused: built once
            sim = node.sim
            pub.publish(String(data=_heavier()))
            assert h.spin_until(lambda: any("description refused" in m and "built once" in m
                                            for m in _messages(diag, name)), 10.0), _messages(diag, name)
            assert node.sim is sim
    assert tuple(js[-1].name) == NAMES


def test_sim_refuses_a_description_that_does_not_fit_its_parameters(h):
    """initial_joint_positions for 6 joints: the pendulum (1 joint) is refused, the node keeps
    waiting, and the aerial manipulator is then accepted."""
    from geodyn_ros.ros.nodes.sim_node import SimNode
    node = h.make(SimNode, {"initial_joint_positions": [0.1] * 6})
    diag = h.record(DiagnosticArray, "/diagnostics")
    pub = _rsp(h)
    pub.publish(String(data=PENDULUM))
    assert h.spin_until(lambda: any("initial_joint_positions" in m and "still waiting" in m
                                    for m in _messages(diag, "geodyn_sim: simulation")), 10.0)
    assert node.sim is None
    pub.publish(String(data=TEXT))
    assert h.spin_until(lambda: node.sim is not None, 20.0)
    assert np.abs(node.sim.q() - 0.1).max() == 0.0


def test_actuated_controller_from_the_topic(h):
    import xacro
    from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
    xacro_path = str(shipped_urdf().parent / "tilthex_manipulator.urdf.xacro")
    text = xacro.process_file(xacro_path).toxml()
    ref_node = h.make(ActuatedControllerNode, {"robot_description": text}, namespace="param")
    node = h.make(ActuatedControllerNode, {}, namespace="topic")
    diag = h.record(DiagnosticArray, "/diagnostics")
    assert node.model is None and node.ctrl is None
    pub = _rsp(h, "/topic/robot_description")
    pub.publish(String(data=text))
    assert h.spin_until(lambda: node.model is not None, 20.0)
    assert node.model.joint_names == ref_node.model.joint_names
    assert np.array_equal(node.ctrl.allocation.A, ref_node.ctrl.allocation.A)
    ctrl = node.ctrl
    # the aerial manipulator has no rotor links: the vehicle file's TiltHex generator (eq. (28))
    # gives the rotor frames, the same as the xacro's links up to the rounding of their origins
    # (the xacro writes them with ~16 digits: 1e-12 relative is far above that, far below any error)
    pub.publish(String(data=TEXT))
    assert h.spin_until(lambda: node.ctrl is not ctrl, 20.0)
    assert np.allclose(node.ctrl.allocation.A, ref_node.ctrl.allocation.A, rtol=0, atol=1e-12 * np.abs(
        ref_node.ctrl.allocation.A).max())
    ctrl = node.ctrl
    pub.publish(String(data="<robot name='broken'><link"))   # not a URDF: refused, the model kept
    assert h.spin_until(lambda: any("description refused" in m for m in
                                    _messages(diag, "topic/geodyn_actuated_controller: actuated")), 10.0)
    assert node.ctrl is ctrl


def test_actuated_sim_from_the_topic_equals_the_parameter_start(h):
    """geodyn_actuated_sim from the topic: nothing before the model, then the same start state
    (hover rotor speeds and motor angles of its start rule) and the same motor_states as a twin
    node given the URDF as a parameter, bit for bit (same code, same inputs)."""
    import xacro
    from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode
    text = xacro.process_file(str(shipped_urdf().parent / "tilthex_manipulator.urdf.xacro")).toxml()
    ref_node = h.make(ActuatedSimNode, {"robot_description": text}, namespace="param")
    node = h.make(ActuatedSimNode, {}, namespace="topic")
    ms = h.record(JointState, "/topic/motor_states")
    diag = h.record(DiagnosticArray, "/diagnostics")
    from actuator_msgs.msg import Actuators
    rot = h.publisher(Actuators, "/topic/cmd/rotor_speeds")
    h.wait_matched("/topic/cmd/rotor_speeds")
    rot.publish(Actuators(velocity=[500.0] * 6))   # before the model: reported, not applied
    assert h.spin_until(lambda: any("cmd/rotor_speeds: no robot model yet" in m for m in
                                    _messages(diag, "topic/geodyn_actuated_sim: simulation")), 5.0), \
        _messages(diag, "topic/geodyn_actuated_sim: simulation")
    assert node.sim is None and not ms
    pub = _rsp(h, "/topic/robot_description")
    pub.publish(String(data=text))
    assert h.spin_until(lambda: node.sim is not None and ms, 20.0)
    assert tuple(ms[-1].name) == tuple(ref_node.elastic_joints) and node.steps == 0
    assert np.array_equal(node.sim.rotor_speed(), ref_node.sim.rotor_speed())
    assert np.array_equal(node.sim.motor_angle(), ref_node.sim.motor_angle())
    assert np.array_equal(np.asarray(ms[-1].position), ref_node.sim.motor_angle())
    assert np.array_equal(node._rotor_cmd, ref_node._rotor_cmd) and node._rotor_cmd.min() > 0


# ------------------------------------------------------------------------------ configuration
def test_parameters_still_win_and_both_set_is_an_error(h):
    node = h.make(GeodynNode, {"urdf_path": URDF, "robot_description_topic": "unused"})
    assert node.model is not None and node.model_source.topic is None
    assert node.model.joint_names == NAMES
    with pytest.raises(ConfigurationError, match="both set"):
        h.make(GeodynNode, {"urdf_path": URDF, "robot_description": TEXT}, node_name="g2")
