"""The rejection options over ROS 2 (issue 53 item 4): ``rejection_*`` parameters and
``~/external_wrench`` of ``geodyn_flat_controller`` and ``geodyn_actuated_controller``.

* **Bad parameters** stop the node with one line naming the parameter (every field of
  :class:`RejectionOptions` has its check there; here one per kind through the node).
* **The estimate over ROS is the library's.** The flat controller (ff2, whole-body observer with
  the end-effector frame ``link4`` and a tool point) is fed a sequence of input sets at 1 ms
  stamps; a :class:`FlatnessController` with the same options is fed the same values here, with
  ``t`` the stamps. ``~/external_wrench`` at every stamp equals ``rejection.estimate.wrench_body``,
  ``~/external_wrench/frame`` the frame force in ``link4``'s axes (computed here from
  ``gd.forward_kinematics``), and the rotor commands the library's. Tolerance: the node's state
  went through messages (the attitude as a quaternion: 1e-16 relative); the observer divides
  momentum differences by the 1 ms step, so a rounding of 1e-16 in a momentum of ~4 kg m/s is
  4e-13 N: bound 1e-9 N and N m absolute (measured 3.3e-14). Between the good sets come attacks on ``odom``:
  truncated and random bytes, a 2 GB ``frame_id`` length, a NaN pose, and a dropped message (the other inputs of that stamp
  sent, odometry not): no command and no estimate for those stamps, and the next good set gives
  the library's answer of the good sets alone (its observer steps over the gap, as the node's).
* **The failsafe's held cycles freeze the observer** and it restarts after, keeping the
  integrators (:meth:`Rejection.restart`): checked on the library side in
  ``test/control/rejection/test_rejection.py``; here the ROS side: a stamp going back
  restarts it, with one warning, and the node keeps commanding.
* With every switch off no ``~/external_wrench`` publisher exists (``test_interfaces.py`` checks
  the topics of each mode; the outputs of the other node tests are unchanged).
"""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import flat_controller_inputs, joint_states_msg, odometry_msg, rosout  # noqa: I100  (ROS env first; fixture h: conftest)

from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rejection import RejectionOptions
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.trajectories import figure_eight_reference

XACRO = str(hexarotor_source())
CFG = load_actuation_config("hexarotor")
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
MODEL = gd.load_urdf(XACRO, locked_joints=list(CFG.rotor_joints))
ALLOC = Allocation.from_frames(rotor_frames_from_model(MODEL)[1], CFG.rotors)
TOOL = ("link4", (0.03, 0.0, -0.12))
#: the bound of the ROS estimate against the library's (module docstring)
TOL = 1e-9


@pytest.mark.parametrize("node_cls", [FlatControllerNode, ActuatedControllerNode])
@pytest.mark.parametrize("params, match", [
    ({"rejection_observer": "kalman"}, r"^parameter 'rejection_observer': expected 'whole_body' or 'rigid_body'"),
    ({"rejection_thrust_scale_limits": [1.1, 1.5]},
     r"^parameter 'rejection_thrust_scale_limits': expected \(low, high\) with 0 < low < 1 < high"),
    ({"rejection_thrust_scale_limits": [0.5]}, r"^parameter 'rejection_thrust_scale_limits': expected \(low, high\)"),
    ({"rejection_observer_bandwidth": -1.0}, r"^parameter 'rejection_observer_bandwidth': expected a finite positive"),
    ({"rejection_integral_limit": float("inf")}, r"^parameter 'rejection_integral_limit': expected a finite positive"),
    ({"rejection_integral_bandwidth": float("nan")}, r"^parameter 'rejection_integral_bandwidth': expected 0 \(the "),
    ({"rejection_com_estimate_limit": -0.01}, r"^parameter 'rejection_com_estimate_limit': expected 0 \(the "),
    ({"rejection_wrench_feedforward": 1}, r"^parameter 'rejection_wrench_feedforward': expected bool"),
    ({"rejection_frame": "nolink", "rejection_wrench_feedforward": True},
     r"^parameter 'rejection_frame': 'nolink' is not a link of the model"),
    ({"rejection_frame": "link4", "rejection_observer": "rigid_body", "rejection_integral_action": True},
     r"^parameter 'rejection_frame': the force at a frame needs the whole-body observer"),
    ({"rejection_frame_point": [0.1, 0.0, 0.0]}, r"^parameter 'rejection_frame_point': set rejection_frame"),
    ({"rejection_com_estimate_force_point": "0, nan, 0", "rejection_com_estimate": True},
     r"^parameter 'rejection_com_estimate_force_point': expected 'rotors', 'com' or 'x, y, z'"),
    ({"rejection_com_estimate_force_point": "0.1", "rejection_com_estimate": True},
     r"^parameter 'rejection_com_estimate_force_point': expected 'rotors', 'com' or 'x, y, z'"),
    ({"rejection_com_estimate_force_point": "rotor", "rejection_com_estimate": True},
     r"^parameter 'rejection_com_estimate_force_point': expected .* got 'rotor'$"),
    ({"rejection_frame": " link4"}, r"^parameter 'rejection_frame': ' link4' is not a link name"),
    ({"rejection_engage": "sometimes", "rejection_integral_action": True},
     r"^parameter 'rejection_engage': expected one of always, airborne, armed"),
    ({"rejection_takeoff_height": -0.1}, r"^parameter 'rejection_takeoff_height': expected 0 \(the "),
])
def test_bad_rejection_parameters_are_refused_in_one_line(h, node_cls, params, match):
    from geodyn_ros.loops.actuated import tilthex_source
    src = {"urdf_path": XACRO if node_cls is FlatControllerNode else str(tilthex_source())}   # the model at start
    with pytest.raises(ConfigurationError, match=match) as err:
        h.make(node_cls, {**src, **params})
    assert "\n" not in str(err.value)


def _frame_rotation(C, q, link):
    """World attitude of ``link`` at ``(C, q)`` (independent of the node's helper: the link's
    pose is its body's pose times the home offset between the two)."""
    b = MODEL.body_of_link(link)
    kin = gd.forward_kinematics(MODEL, C, np.zeros((1, 6)), np.stack([q, np.zeros_like(q)]))
    T = kin.poses[b] @ np.linalg.inv(MODEL.link_home[MODEL.link_names[b]]) @ MODEL.link_home[link]
    return T[:3, :3]


def _wrench(msg):
    w = msg.wrench
    return np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])


def _attack_odom(h, kind, stamp, rng):
    """Publish a bad ``odom`` for ``stamp`` (or none: ``dropped``)."""
    pub = h.publisher(Odometry, "odom")
    good = odometry_msg(stamp, np.eye(4), np.zeros(3), np.zeros(3))
    raw = serialize_message(good)
    if kind == "truncated":
        pub.publish(raw[:len(raw) // 2])
    elif kind == "random":
        pub.publish(bytes(raw[:4]) + rng.integers(0, 256, size=len(raw) - 4, dtype=np.uint8).tobytes())
    elif kind == "nan":
        C = np.eye(4)
        C[0, 3] = np.nan
        pub.publish(odometry_msg(stamp, C, np.zeros(3), np.zeros(3)))
    elif kind == "huge":
        pub.publish(raw[:12] + b"\xff\xff\xff\x7f" + raw[16:])     # frame_id's length: 2 GB
    # "dropped": nothing


def test_external_wrench_is_the_library_observers_through_attacks(h):
    opts = {"rejection_wrench_feedforward": True, "rejection_integral_action": True, "rejection_thrust_estimate": True,
            "rejection_frame": TOOL[0], "rejection_frame_point": list(TOOL[1]), "rejection_engage": "always"}
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "level": "ff2", "input_policy": "exact", **opts})
    name = node.get_fully_qualified_name()
    ext = h.record(WrenchStamped, name + "/external_wrench", depth=100)
    ext_f = h.record(WrenchStamped, name + "/external_wrench/frame", depth=100)
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=100)
    lib = FlatnessController(MODEL, ALLOC, CFG.rotors, CFG.elastic, FlatnessGains(), "ff2",
                             rejection=RejectionOptions(wrench_feedforward=True, integral_action=True,
                                                        thrust_estimate=True, frame=TOOL[0], frame_point=TOOL[1]))
    rng = np.random.default_rng(53)
    plan = ["good", "good", "good", "truncated", "good", "random", "good", "nan", "good", "dropped", "good",
            "huge", "good", "good"]
    want, commands = {}, {}
    for k, kind in enumerate(plan):
        stamp = 2_000_000_000 + k * 1_000_000
        t = 0.8 + k * 1e-3
        if kind == "good":
            n = len(rotors)
            _, flat, C, Vb, q, qd, th, thd = flat_controller_inputs(h, MODEL, NAMES, stamp, t)
            assert h.spin_until(lambda: len(rotors) > n, 60.0)   # 60 s: a cold numba cache compiles
            ref = figure_eight_reference(t, 0)
            cmd = lib.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat, t=stamp * 1e-9)
            commands[stamp] = cmd.omega
            est = lib.rejection.estimate
            if est is not None:
                Rf = _frame_rotation(C, q, TOOL[0])
                f = Rf.T @ est.frame_force
                want[stamp] = (est.wrench_body.copy(), np.r_[np.cross(TOOL[1], f), f])
        else:   # the other inputs of the stamp as usual, the odometry attacked
            n = len(rotors)

            def before(pubs, ref, flat, kind=kind, stamp=stamp):
                pubs["motor_states"].publish(joint_states_msg(stamp, NAMES, ref.q[0], ref.q[1]))
                pubs["joint_states"].publish(joint_states_msg(stamp, NAMES, ref.q[0], ref.q[1]))
                _attack_odom(h, kind, stamp, rng)
            _attacked_set(h, stamp, t, before)
            h.spin_until(lambda: False, 0.3)                  # give a wrong answer the time to come
            assert len(rotors) == n, f"{kind}: a command for an attacked set"
    assert h.spin_until(lambda: len(ext) >= len(want) and len(ext_f) >= len(want), 10.0)
    got = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in ext}
    got_f = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in ext_f}
    assert set(got) == set(want) == set(got_f)           # every good set after the first, nothing else
    assert len(want) == plan.count("good") - 1
    err = max(np.abs(_wrench(got[s]) - w[0]).max() for s, w in want.items())
    err_f = max(np.abs(_wrench(got_f[s]) - w[1]).max() for s, w in want.items())
    print(f"ROS vs library: external_wrench {err:.3g}, frame {err_f:.3g}")
    assert err < TOL and err_f < TOL, (err, err_f)
    assert all(m.header.frame_id == "base_link" for m in ext)
    assert all(m.header.frame_id == TOOL[0] for m in ext_f)
    # the estimate is not trivially zero (the perturbed states are not the model's motion)
    assert max(np.abs(w[0][3:]).max() for w in want.values()) > 0.01
    got_om = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: np.array(m.velocity) for m in rotors}
    assert max(np.abs(got_om[s] - om).max() for s, om in commands.items()) < 1e-6


def _attacked_set(h, stamp, t, before):
    """The jets of ``stamp`` (as ``flat_controller_inputs``), then ``before`` (the state topics)."""
    from ros_harness import flat_jet_inputs
    ref = figure_eight_reference(t, 2)
    flat = gd.flat_inverse_dynamics(MODEL, ref.com, ref.yaw, ref.q, 2)
    for k, m in flat_jet_inputs(MODEL, NAMES, stamp, ref, flat).items():
        h.publisher(type(m), k).publish(m)
    before({"motor_states": h.publisher(JointState, "motor_states"),
            "joint_states": h.publisher(JointState, "joint_states")}, ref, flat)


def test_a_stamp_going_back_restarts_the_observer(h):
    logs = rosout(h, "geodyn_flat_controller")
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "level": "ff2", "input_policy": "exact",
                                       "sync_stamps": False, "stale_timeout": 10.0,
                                       "rejection_wrench_feedforward": True, "rejection_engage": "always"})
    ext = h.record(WrenchStamped, node.get_fully_qualified_name() + "/external_wrench", depth=100)
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=100)
    for k, stamp in enumerate((5_000_000_000, 5_001_000_000, 4_000_000_000, 4_001_000_000)):
        n = len(rotors)
        flat_controller_inputs(h, MODEL, NAMES, stamp, 0.8 + 1e-3 * k)
        assert h.spin_until(lambda: len(rotors) > n, 60.0)
    assert h.spin_until(lambda: len(ext) >= 2, 5.0)
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in ext]
    assert stamps == [5_001_000_000, 4_001_000_000]      # the restart's first sample has no estimate
    assert h.spin_until(lambda: any("the observer restarts" in m.msg for m in logs), 5.0)


def test_lqr_node_with_integral_states_commands_what_the_library_commands(h):
    """``feedback: lqr`` with ``rejection_integral_action``: the node's online gains are those of
    the model with three integral states (``integral_model``, ``integral_weights`` at the
    controller's bandwidth); two input sets 1 ms apart (the first gain, a DARE, serves both at
    ``gain_rate_hz`` 100) give the library's commands and estimate (bounds as above)."""
    from sibling import test_module
    lq = test_module("test_ros_lqr")
    from geodyn_ros.control.lqr import LqrController, LqrWeights, dare_gain
    from geodyn_ros.control.rejection.lqr import integral_model, integral_weights
    opts = RejectionOptions(wrench_feedforward=True, integral_action=True)
    node = h.make(FlatControllerNode, {**lq.LQR, "rejection_wrench_feedforward": True,
                                       "rejection_integral_action": True, "rejection_engage": "always"})
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=10)
    ext = h.record(WrenchStamped, node.get_fully_qualified_name() + "/external_wrench", depth=10)
    lib = None
    for k in range(2):
        stamp, n = 1_500_000_000 + k * 1_000_000, len(rotors)
        ref, flat, lin, C, Vb, q, qd, th, thd = lq._inputs(h, stamp, t=0.8 + k * 1e-3)
        assert h.spin_until(lambda: len(rotors) > n, 60.0)
        if lib is None:
            L = lq.LIN
            x = np.sqrt(lq.ALLOC.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0]))
            w = LqrWeights()
            lib = LqrController(L, None, rejection=opts)
            A, B = integral_model(*L.discretize(*L.compose(lin.A, lin.B), x), L.dt)
            _, K = dare_gain(A, B, integral_weights(w.Q(6, 6, 6), w.base_position, lib.integral_bandwidth),
                             w.R(6, 6, 0))
            assert K.shape[1] == L.ns + 3
            lib.gains = lambda t, K=K: K
        want = lib.command(stamp * 1e-9, C, Vb, q, qd, th, thd, ref.q, flat)
        got = np.asarray(rotors[-1].velocity)
        assert np.abs(got - want.omega).max() < 1e-9 * np.abs(want.omega).max(), k
    assert h.spin_until(lambda: len(ext) >= 1, 5.0)
    assert np.abs(_wrench(ext[-1]) - lib.rejection.estimate.wrench_body).max() < TOL
    assert np.abs(lib.z).max() > 0           # the integral states moved (and the commands still agree)


def test_engage_armed_follows_the_armed_topic(h):
    """``rejection_engage: armed``: the options-off command (and no estimate) until ``armed`` says
    true AND the base has risen ``rejection_takeoff_height`` (armed on the ground is not enough:
    PX4 SITL); then ``~/external_wrench`` from the second sample after the rise; ``armed`` false:
    none again. One log line at each change. The stamps are epoch-scale (2026), where a round trip
    through integer nanoseconds is not exact (the bug SITL found: nothing was published). Oracle:
    the library controller without options."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Bool
    logs = rosout(h, "geodyn_flat_controller")
    node = h.make(FlatControllerNode, {"urdf_path": XACRO, "level": "ff2", "input_policy": "exact",
                                       "rejection_wrench_feedforward": True, "rejection_integral_action": True,
                                       "rejection_engage": "armed", "rejection_takeoff_height": 0.2})
    ext = h.record(WrenchStamped, node.get_fully_qualified_name() + "/external_wrench", depth=100)
    rotors = h.record(node.commands.rotors.msg_type, "cmd/rotor_speeds", depth=100)
    armed = h.probe.create_publisher(Bool, "armed", QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                                               durability=DurabilityPolicy.TRANSIENT_LOCAL))
    off = FlatnessController(MODEL, ALLOC, CFG.rotors, CFG.elastic, FlatnessGains(), "ff2")
    stamps = []

    def cycle(k, lift=0.0):
        n = len(rotors)
        stamp = 1_796_000_000_123_456_789 + k * 1_000_000
        _, flat, C, Vb, q, qd, th, thd = flat_controller_inputs(h, MODEL, NAMES, stamp, 0.8 + k * 1e-3, lift=lift)
        assert h.spin_until(lambda: len(rotors) > n, 60.0)
        stamps.append(stamp)
        ref = figure_eight_reference(0.8 + k * 1e-3, 0)
        return np.array(rotors[-1].velocity), off.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat).omega
    for k in range(3):                                    # not armed: the options-off law
        got, want = cycle(k)
        assert np.abs(got - want).max() < 1e-6
    assert h.spin_until(lambda: any("rejection: waiting" in m.msg for m in logs), 5.0)
    armed.publish(Bool(data=True))
    h.spin_until(lambda: False, 0.3)
    for k in range(3, 5):                                 # armed, still on the ground: nothing yet
        cycle(k)
    h.spin_until(lambda: False, 0.3)
    assert not ext
    for k in range(5, 8):                                 # off the ground: engaged at 5, estimates at 6 and 7
        cycle(k, lift=0.3)
    assert h.spin_until(lambda: len(ext) >= 2, 5.0)
    assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in ext] == stamps[6:8]
    assert h.spin_until(lambda: any("rejection: engaged, armed and airborne" in m.msg for m in logs), 5.0)
    armed.publish(Bool(data=False))
    h.spin_until(lambda: False, 0.3)
    n = len(ext)
    for k in range(8, 10):
        cycle(k, lift=0.3)
    h.spin_until(lambda: False, 0.3)
    assert len(ext) == n
    assert h.spin_until(lambda: any("rejection: disengaged (not armed)" in m.msg for m in logs), 5.0)


def test_the_com_force_point_parameter_reads_its_three_forms():
    """``rejection_com_estimate_force_point`` is text (a ROS parameter has one type): ``rotors``,
    ``com`` (the option's None) or three numbers; the defaults of the others from the table."""
    from geodyn_ros.ros.inputs.rejection_inputs import REJECTION_PARAMETERS, rejection_options
    base = {k: v[0] for k, v in REJECTION_PARAMETERS.items()} | {"rejection_com_estimate": True}
    for text, want in (("rotors", "rotors"), ("com", None), (" 0, 0, 0.05 ", (0.0, 0.0, 0.05))):
        assert rejection_options({**base, "rejection_com_estimate_force_point": text}).com_estimate_force_point == want
