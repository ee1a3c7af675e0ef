"""A controller under ``input_policy: latest`` driven on a stepped simulated clock, for the failsafe
tests (:mod:`geodyn_ros.ros.inputs.failsafe_inputs`).

The node runs with ``use_sim_time``; the rig sets its ROS clock itself (``set_ros_time_override``,
what the node's time source does with each ``/clock`` message) and calls the node's input
callbacks and its watchdog (``_failsafe_tick``, the timer's callback) directly, in the order a
simulator's step would bring them: no DDS in the loop, so a run is deterministic and independent
of the machine's load, and 20 s of flight take a few seconds. Every command the node publishes is
recorded from its publishing hook (``_fs_publish``) with the node clock, the failsafe's mode and
the total force it asks of the vehicle, computed here independently of the node's bound:

* ``geodyn_controller``: the commanded body wrench's force ``W[3:]``;
* the rotor controllers: ``A omega^2`` of the commanded rotor speeds (the allocation matrix ``A``
  of the vehicle file, rebuilt here from the node's rotor frames), its force rows.

The vehicle hovers at its reference (a hover pose 1.5 m up, arm at ``Q``) with the feedforward of
that hover computed here with the library's inverse dynamics (the flat map for the collinear
vehicle), as ``geodyn_node`` would publish it.
"""
from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg  # noqa: F401  (ROS environment first)
from geometry_msgs.msg import WrenchStamped
from rclpy.time import Time
from ros_harness import joint_states_msg, odometry_msg

import geodyn_ros as gd
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
from geodyn_ros.ros.nodes.controller_node import ControllerNode
from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
from geodyn_ros.ros.wire.typed import (DesiredState, TypedFeedforwardPacker, make_flat_reference,
                                       make_reference_jet)
from geodyn_ros.control.rotors import Allocation
from sensor_msgs.msg import JointState
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
URDF = str(shipped_urdf())
TILT = str(REPO / "urdf" / "tilthex_manipulator.urdf.xacro")
HEXA = str(hexarotor_source())
HEXA_CFG = str(hexarotor_source().parents[1] / "config" / "hexarotor.yaml")
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
KINDS = ("geodyn_controller", "geodyn_actuated_controller", "geodyn_flat_controller")
G = 9.81
Q = np.array([0.0, 0.3, 0.0, -0.5, 0.0, 0.2])
DT = 0.01            # the control period and the sensors' period [s]
T0 = 100 * 10**9     # the simulated time of the first step [ns]


class _Recorder:
    """A logger that keeps the lines (and prints them, for a failing test's output)."""

    def __init__(self, lines):
        self.lines = lines

    def _say(self, level, msg, *_, **__):
        self.lines.append(msg)
        print(f"[{level}] {msg}")

    def debug(self, msg, *a, **k):
        pass

    def info(self, msg, *a, **k):
        self._say("INFO", msg)

    def warning(self, msg, *a, **k):
        self._say("WARN", msg)

    warn = warning

    def error(self, msg, *a, **k):
        self._say("ERROR", msg)


class SimRig:
    """One controller on a stepped clock (module docstring)."""

    def __init__(self, h, kind: str, params=None):
        self.h, self.kind = h, kind
        p = {"use_sim_time": True, "input_policy": "latest", "stale_timeout": 0.1, "odom_timeout": 0.05,
             "control_period": DT, **(params or {})}
        if kind == "geodyn_controller":
            self.node = h.make(ControllerNode, {"urdf_path": URDF, "use_feedforward": True, **p})
        elif kind == "geodyn_actuated_controller":
            p.pop("control_period")   # the vehicle file's
            self.node = h.make(ActuatedControllerNode, {"urdf_path": TILT, "use_feedforward": True, **p})
        else:
            self.node = h.make(FlatControllerNode, {"urdf_path": HEXA, "actuation_config": HEXA_CFG, "level": "ff2",
                                                    **p})
        node = self.node
        self.clock = node.get_clock()
        assert self.clock.ros_time_is_active
        self.t = T0
        self.set_time(self.t)
        self.model = node.model
        self.mass = float(self.model.total_mass)
        self.weight = self.mass * G
        self.elastic = kind != "geodyn_controller"
        self.A = None
        if kind != "geodyn_controller":   # the allocation matrix, rebuilt from the vehicle file
            _, frames = node.cfg.rotor_frames(self.model)
            self.A = Allocation.from_frames(frames, node.cfg.rotors).A
            self.max_speed = np.asarray(node.cfg.rotors.max_rot_velocity, float) * np.ones(self.A.shape[1])
        self.lines = []   # the node's log lines (a recording logger: the node's own, not rclpy's)
        node.get_logger = lambda: _Recorder(self.lines)
        self.cmds = []   # (node clock [ns], stamp [ns], mode, force (3,), raw command)
        publish = node._fs_publish

        def record(stamp, cmd):
            self.cmds.append((self.clock.now().nanoseconds, stamp, node._fs.mode if node._fs else None,
                              self.force(cmd), self.values(cmd)))
            publish(stamp, cmd)
        node._fs_publish = record
        self._hover()

    # ------------------------------------------------------------------ the hover and its feedforward
    def _hover(self):
        m, n = self.model, self.model.n_joints
        self.q = Q[:n].copy()
        if self.kind == "geodyn_flat_controller":
            K = 7
            com = np.zeros((K, 3))
            com[0] = (0.2, -0.1, 1.5)
            yaw = np.zeros(K)
            yaw[0] = 0.3
            qj = np.zeros((K, n))
            qj[0] = self.q
            f = gd.flat_inverse_dynamics(m, com, yaw, qj, 2)
            self.flat, self.com_jet, self.yaw_jet, self.q_jet = f, com, yaw, qj
            self.pose = f.base_pose.copy()
            self.ffpack = TypedFeedforwardPacker(m.joint_names, 2, child_frame_id=m.base_link)
            return
        C = np.eye(4)
        C[:3, :3] = gd.lie.exp_so3(np.array([0.0, 0.0, 0.3]))
        C[:3, 3] = (0.2, -0.1, 1.5)
        self.pose = C
        V = np.zeros((4, 6))
        qj = np.zeros((5, n))
        qj[0] = self.q
        rep = "body" if self.kind == "geodyn_actuated_controller" else "spatial"
        r = gd.inverse_dynamics(m, C, V, qj, 2, representation="body")
        self.W_body, self.tau_ff = r.base_wrench, r.tau     # (3, 6) body wrench jet, (3, n)
        del rep
        self.ffpack = TypedFeedforwardPacker(m.joint_names, 2, child_frame_id=m.base_link, representation="body") \
            if self.kind == "geodyn_actuated_controller" else None

    # ------------------------------------------------------------------ time and inputs
    def set_time(self, t_ns: int) -> None:
        self.clock.set_ros_time_override(Time(nanoseconds=int(t_ns)))

    def now(self) -> int:
        return self.clock.now().nanoseconds

    def send_state(self, t, odom=True, joints=True, offset=(0.0, 0.0, 0.0)):
        node, n = self.node, self.model.n_joints
        if joints:
            node._on_joint_states(joint_states_msg(t, self.model.joint_names, self.q, np.zeros(n)))
            if self.elastic and getattr(node, "elastic", False):
                node._on_motor_states(joint_states_msg(t, node.cfg.elastic.joints,
                                                       self.q[[self.model.joint_names.index(j)
                                                               for j in node.cfg.elastic.joints]],
                                                       np.zeros(len(node.cfg.elastic.joints))))
        if odom:
            C = self.pose.copy()
            C[:3, 3] += offset
            node._on_odom(odometry_msg(t, C, np.zeros(3), np.zeros(3), child=self.model.base_link))

    def send_reference(self, t):
        node, m = self.node, self.model
        if self.kind == "geodyn_flat_controller":
            node._on_flat_reference(make_flat_reference(t, self.com_jet[:5], self.yaw_jet[:5], self.q_jet[:5],
                                                        m.joint_names, child_frame_id=m.base_link))
            return
        V = np.zeros((5, 6))
        qj = np.zeros((5, m.n_joints))
        qj[0] = self.q
        node._on_reference(make_reference_jet(t, self.pose, V, qj, m.joint_names, child_frame_id=m.base_link))

    def send_feedforward(self, t):
        node, m, f = self.node, self.model, getattr(self, "flat", None)
        if self.kind == "geodyn_controller":
            w = WrenchStamped()
            w.header.stamp.sec, w.header.stamp.nanosec = divmod(int(t), 10**9)
            w.header.frame_id = m.base_link
            W = self.W_body[0]
            w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = (float(x) for x in W[:3])
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(x) for x in W[3:])
            node._on_ff_wrench(w)
            e = JointState()
            e.header.stamp = w.header.stamp
            e.name = list(m.joint_names)
            e.effort = [float(x) for x in self.tau_ff[0]]
            node._on_ff_efforts(e)
        elif self.kind == "geodyn_actuated_controller":
            node._on_jet(self.ffpack.pack(t, self.W_body, self.tau_ff))
        else:
            node._on_desired(make_reference_jet(t, f.base_pose, f.base_twist[:2], f.q[:2], m.joint_names,
                                                child_frame_id=m.base_link, cls=DesiredState))
            node._on_flat_jet(self.ffpack.pack_flat(t, f.thrust[:3], f.body_torque[:3], f.tau[:3]))

    def step(self, odom=True, joints=True, reference=True, feedforward=True, offset=(0.0, 0.0, 0.0),
             dt: float = DT) -> None:
        """One step of ``dt``: the clock advances, the streams that flow deliver a sample stamped
        with it (the references first, the state last: the odometry is the cycle), then the
        watchdog's timer fires."""
        self.t += int(round(dt * 1e9))
        self.set_time(self.t)
        if reference:
            self.send_reference(self.t)
        if feedforward:
            self.send_feedforward(self.t)
        self.send_state(self.t, odom=odom, joints=joints, offset=offset)
        self.node._failsafe_tick()

    def run(self, seconds: float, **kw) -> None:
        for _ in range(int(round(seconds / DT))):
            self.step(**kw)

    # ------------------------------------------------------------------ what was commanded
    def values(self, cmd) -> np.ndarray:
        if self.kind == "geodyn_controller":
            return np.r_[cmd[0], cmd[1]]
        return np.array(cmd.omega, float)

    def force(self, cmd) -> np.ndarray:
        """The total force (3,) [N] the command asks, base axes (module docstring)."""
        if self.kind == "geodyn_controller":
            return np.array(cmd[0][3:], float)
        return (self.A @ np.square(np.asarray(cmd.omega, float)))[3:]

    def forces(self, since: int = 0) -> np.ndarray:
        return np.array([np.linalg.norm(f) for t, _, _, f, _ in self.cmds if t >= since])

    def gaps(self) -> float:
        """The longest time [s] between two commands (node clock)."""
        ts = [t for t, *_ in self.cmds]
        return float(np.max(np.diff(ts)) * 1e-9) if len(ts) > 1 else np.inf
