"""In-process rclpy test harness: a private context, an EventsExecutor and a probe node.

Importing this module isolates the test process's ROS traffic: each pytest process gets its
own ``ROS_DOMAIN_ID`` (``ros_domain.worker_domain``: 1-100, distinct between the xdist workers) and ``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF``, so
parallel test workers (``pytest -n 2``) and other ROS graphs on the machine never hear each
other. This must happen before any rclpy context is initialised.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

from ros_domain import worker_domain  # noqa: E402

os.environ["ROS_DOMAIN_ID"] = str(worker_domain(0))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "OFF"

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from geodyn_ros.lie import matrix_to_quat, quat_to_matrix  # noqa: E402
from geodyn_ros.ros.wire.jets import REFERENCE_OFFSET  # noqa: E402
from geodyn_ros.ros.common.runtime import control_qos, make_executor  # noqa: E402


def load_factor() -> float:
    """How many times longer than on an idle machine a wait may take: the 1-minute load average
    per core, between 1 and 8 (measured: at load 18 on 2 cores, a background model load and its
    first cycle took over 5 s, within 1 s when idle)."""
    try:
        return min(8.0, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))
    except OSError:
        return 1.0


class Harness:
    """Nodes under test plus a probe node that publishes inputs and records outputs."""

    def __init__(self):
        self.ctx = Context()
        rclpy.init(context=self.ctx)
        self.ex = make_executor(context=self.ctx)
        self.nodes = []
        self.probe = self.add(rclpy.create_node("probe", context=self.ctx))
        self.received: dict[str, list] = {}
        self._pubs = {}

    def add(self, node):
        self.nodes.append(node)
        self.ex.add_node(node)
        return node

    def make(self, cls, params: dict, **kw):
        """Create ``cls(context=..., parameter_overrides=params)`` and add it."""
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        return self.add(cls(context=self.ctx, parameter_overrides=overrides, **kw))

    def record(self, msg_type, topic: str, depth: int = 100):
        self.received[topic] = []
        self.probe.create_subscription(msg_type, topic, self.received[topic].append, control_qos(depth))
        return self.received[topic]

    def publisher(self, msg_type, topic: str):
        if topic not in self._pubs:
            self._pubs[topic] = self.probe.create_publisher(msg_type, topic, control_qos(10))
        return self._pubs[topic]

    def spin_until(self, cond, timeout: float = 5.0) -> bool:
        """Spin until ``cond()``; False if it is still false after ``timeout`` wall seconds, scaled by
        :func:`load_factor` (a condition that needs the node to do work, such as loading a model,
        takes longer on a loaded machine; the condition itself is unchanged, so a wrong answer still
        fails: only waiting longer for the right one is allowed)."""
        end = time.monotonic() + timeout * load_factor()
        while time.monotonic() < end:
            self.ex.spin_once(timeout_sec=0.01)
            if cond():
                return True
        return cond()

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.ex.spin_once(timeout_sec=0.01)

    def wait_matched(self, topic: str, timeout: float = 5.0) -> None:
        """Spin until the probe's publisher on ``topic`` has a subscriber (DDS matching)."""
        pub = self._pubs[topic]
        assert self.spin_until(lambda: pub.get_subscription_count() > 0, timeout), \
            f"no subscriber matched on {topic}"

    def close(self):
        for nd in self.nodes:
            nd.destroy_node()
        self.ctx.try_shutdown()


def loop_problems(diagnostics) -> list:
    """The messages of the ``DiagnosticStatus`` es above OK of a closed loop's run, except
    ``geodyn_node``'s start-up "waiting for <topic>": a WARN of its wall-clock summary when that
    fires before the topic's first message (on a loaded machine the loop starts more than a
    period after the node); it names topics never received, so never a problem of the running loop."""
    return [s.message for s in diagnostics if s.level != b"\x00" and not s.message.startswith("waiting for ")]


def odometry_msg(stamp_ns, C, w_b, v_b, child="base_link", frame="world"):
    """``nav_msgs/Odometry`` (REP 105): pose ``C`` (4, 4) of ``child`` in ``frame``, twist
    ``(w_b, v_b)`` in the child frame."""
    m = Odometry()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 10**9)
    m.header.frame_id, m.child_frame_id = frame, child
    p = m.pose.pose.position
    p.x, p.y, p.z = (float(v) for v in C[:3, 3])
    o = m.pose.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quat(C[:3, :3], "xyzw"))
    t = m.twist.twist
    t.angular.x, t.angular.y, t.angular.z = (float(v) for v in w_b)
    t.linear.x, t.linear.y, t.linear.z = (float(v) for v in v_b)
    return m


def joint_states_msg(stamp_ns, names, pos, vel):
    """``sensor_msgs/JointState`` with ``position`` and ``velocity`` for ``names``."""
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 10**9)
    m.name = list(names)
    m.position = [float(v) for v in pos]
    m.velocity = [float(v) for v in vel]
    return m


def decode_reference(msg):
    """Independent decoding of a reference jet message (not ``jets``' or ``typed``'s decoder):
    base pose (4, 4), every twist row ``V^(k)`` (K, 6) and joint row ``q^(k)`` (K, n) it carries
    (joint columns in the message's order). ``msg``: a ``geodyn_msgs/ReferenceJet`` or
    ``DesiredState`` (typed) or the deprecated ``Float64MultiArray`` layout."""
    if hasattr(msg, "base_twist"):
        p, o = msg.base_pose.position, msg.base_pose.orientation
        C = np.eye(4)
        C[:3, 3] = p.x, p.y, p.z
        C[:3, :3] = quat_to_matrix(np.array([o.x, o.y, o.z, o.w]), "xyzw")
        V = np.array([[t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z]
                      for t in msg.base_twist]).reshape(-1, 6)
        return C, V, np.array(msg.q).reshape(len(V), len(msg.joint_names))
    d = np.array(msg.data)
    C = np.eye(4)
    C[:3, 3] = d[2:5]
    C[:3, :3] = quat_to_matrix(d[5:9], "xyzw")
    rows, cols = msg.layout.dim[0].size, msg.layout.dim[1].size
    body = d[REFERENCE_OFFSET:].reshape(rows, cols)
    return C, body[:, :6], body[:, 6:]


def read_feedforward(msg):
    """Independent reading of a feedforward jet message (not ``jets``' or ``typed``'s decoder):
    ``(stamp_ns, W (r+1, 6) moment first, tau (r+1, n), joint_names, representation)``.
    ``msg``: a ``geodyn_msgs/FeedforwardJet`` (field by field; ``representation`` as carried) or
    the deprecated ``Float64MultiArray`` layout (``representation`` None: the layout has none)."""
    if hasattr(msg, "base_wrench"):
        st = msg.header.stamp
        W = np.array([[w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z]
                      for w in msg.base_wrench]).reshape(-1, 6)
        tau = np.array(msg.tau).reshape(len(W), len(msg.joint_names))
        return st.sec * 10**9 + st.nanosec, W, tau, tuple(msg.joint_names), msg.representation
    d = np.array(msg.data)
    rows, cols = msg.layout.dim[0].size, msg.layout.dim[1].size
    body = d[msg.layout.data_offset:].reshape(rows, cols)
    names = tuple(msg.layout.dim[1].label.split(",")[6:])
    return int(d[0]) * 10**9 + int(d[1]), body[:, :6], body[:, 6:], names, None


def flat_jet_inputs(model, names, stamp, ref, flat, multiarray: bool = False) -> dict:
    """The three jet inputs of ``geodyn_flat_controller`` stamped ``stamp`` (topic -> message) from
    the flat reference ``ref`` and geodyn_node's result ``flat``: typed ``FlatReference``,
    ``DesiredState`` (spatial) and ``FeedforwardJet`` (body, force ``(0, 0, T)``), frame ``world``
    and child frame ``model.base_link``; ``multiarray``: the deprecated layouts."""
    if multiarray:
        from geodyn_ros.ros.wire.jets import FlatFeedforwardPacker, make_flat_reference_msg, make_reference_msg
        return {"flat_reference": make_flat_reference_msg(stamp, ref.com[:5], ref.yaw[:5], ref.q[:5], names),
                "desired/state": make_reference_msg(stamp, flat.base_pose, flat.base_twist, flat.q[:4], names),
                "feedforward/flat_jet": FlatFeedforwardPacker(names, 2).pack(stamp, flat.thrust, flat.body_torque,
                                                                             flat.tau)}
    from geodyn_ros.ros.wire.typed import DesiredState, TypedFeedforwardPacker, make_flat_reference, make_reference_jet
    base = model.base_link
    return {"flat_reference": make_flat_reference(stamp, ref.com[:5], ref.yaw[:5], ref.q[:5], names,
                                                  child_frame_id=base),
            "desired/state": make_reference_jet(stamp, flat.base_pose, flat.base_twist, flat.q[:4], names,
                                                child_frame_id=base, cls=DesiredState),
            "feedforward/flat_jet": TypedFeedforwardPacker(names, 2, child_frame_id=base).pack_flat(
                stamp, flat.thrust, flat.body_torque, flat.tau)}


def flat_controller_inputs(h, model, names, stamp, t=0.8, *, extra_topics=(), before_state=None,
                           multiarray: bool = False, lift: float = 0.0):
    """Publish one consistent input set of ``geodyn_flat_controller`` stamped ``stamp``: the flat
    reference and geodyn_node's desired state and flat feedforward at ``t`` of the figure eight,
    then a state perturbed from it (seeded: base 1 cm and 0.02 rad/s or m/s, joints 0.01 rad,
    motors 3 mrad off). ``extra_topics``: more ``(topic, type)`` publishers, handed with the
    reference to ``before_state(pubs, ref, flat)``, which runs before the state is published.
    The jets are the typed messages of :func:`flat_jet_inputs` (``multiarray``: the deprecated
    layouts, for a node with ``message_types: multiarray``); ``lift`` [m] raises the state's base.
    Returns ``(ref, flat, C, Vb, q, qd, th, thd)``."""
    import geodyn_ros as gd
    from geodyn_ros.lie import Ad_inv
    from geodyn_ros.trajectories import figure_eight_reference
    ref = figure_eight_reference(t, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    rng = np.random.default_rng(4)
    C = flat.base_pose.copy()
    C[:3, 3] += rng.normal(size=3) * 0.01
    C[2, 3] += lift
    Vb = Ad_inv(C) @ flat.base_twist[0] + rng.normal(size=6) * 0.02
    q, qd = ref.q[0] + 0.01, ref.q[1] - 0.02
    th, thd = q + 0.003, qd + 0.01
    jets = flat_jet_inputs(model, names, stamp, ref, flat, multiarray)
    topics = (("odom", Odometry), ("joint_states", JointState), ("motor_states", JointState),
              *((k, type(m)) for k, m in jets.items()), *extra_topics)
    pubs = {name: h.publisher(m, name) for name, m in topics}
    for name in pubs:
        h.wait_matched(name)
    for k, m in jets.items():
        pubs[k].publish(m)
    if before_state is not None:
        before_state(pubs, ref, flat)
    pubs["motor_states"].publish(joint_states_msg(stamp, names, th, thd))
    pubs["odom"].publish(odometry_msg(stamp, C, Vb[:3], Vb[3:]))
    pubs["joint_states"].publish(joint_states_msg(stamp, names, q, qd))
    return ref, flat, C, Vb, q, qd, th, thd


def stop_process(proc, what: str, timeout: float = 30.0) -> None:
    """Stop a node process as a user does (SIGINT); kill it and fail the test if it has not exited
    within ``timeout`` s."""
    import pytest
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"{what} did not exit within {timeout:g} s of SIGINT")


def rosout(h, node_name: str) -> list:
    """The log lines (``rcl_interfaces/Log``) of the logger ``node_name`` (a node's name; with a
    namespace ``ns.name``) published on /rosout, collected
    by the probe (transient local: lines logged before this subscription matched come too)."""
    from rcl_interfaces.msg import Log
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    lines = []
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    h.probe.create_subscription(Log, "/rosout", lambda m: lines.append(m) if m.name == node_name else None, qos)
    return lines


def said_deprecated(h, lines, timeout: float = 10.0) -> bool:
    """True once exactly one WARN line saying ``message_types 'multiarray' is deprecated`` is in
    ``lines`` (:func:`rosout`), spinning ``h`` up to ``timeout`` s for it (a second one after it
    came would make this False: the warning is logged once)."""
    def hits():
        return [m for m in lines if m.level == 30 and "message_types 'multiarray' is deprecated" in m.msg]
    h.spin_until(lambda: len(hits()) >= 1, timeout)
    h.spin_for(0.1)
    return len(hits()) == 1


def refused(h, node, words: str, timeout: float = 10.0) -> bool:
    """Spin ``h`` until ``node``'s diagnostics (:class:`~geodyn_ros.ros.common.diagnostics.DiagnosticsReporter`)
    name a refusal containing ``words``: its last problem, or a reason counted since the last
    status (``words`` with its numbers as '#')."""
    from geodyn_ros.ros.common.diagnostics import _reason

    def said():
        d = node.diag
        return words in (d.last_problem or "") or any(_reason(words) in r for r in d.since_last)
    return h.spin_until(said, timeout)
