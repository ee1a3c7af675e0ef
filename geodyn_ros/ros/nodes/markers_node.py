"""``geodyn_markers``: RViz markers of the feedforward wrench, the rotor thrusts and the CoM.

A thin viewer node (no control role): it publishes ``visualization_msgs/MarkerArray`` on
``~/markers`` (``/geodyn_markers/markers`` at the root) at ``rate_hz`` wall-clock hertz, **only
while that topic has a subscriber** (``get_subscription_count()`` each cycle; nothing is built
otherwise), from the newest of its inputs:

Subscribes
    ``odom`` (``nav_msgs/Odometry``, REP 105), ``joint_states`` (``sensor_msgs/JointState``, by
    name): the state; ``feedforward/jet`` (``geodyn_node``'s wrench jet, ``geodyn_msgs/FeedforwardJet``:
    row 0 used, in the representation the message names); ``cmd/rotor_speeds``
    (``actuator_msgs/Actuators``, :mod:`geodyn_ros.ros.wire.actuator_commands`; only with an
    ``actuation_config``); ``reference``
    (``geodyn_msgs/ReferenceJet``: the CoM of its base pose and joints) and ``flat_reference``
    (``geodyn_msgs/FlatReference``: its CoM ``c``), the newest of the two giving the CoM reference.
    A typed input is refused when its ``header.frame_id`` is not ``world_frame`` or its
    ``child_frame_id`` not ``frame_prefix`` + base link (empty ones are accepted). With
    ``message_types: multiarray`` (deprecated) the three jets are the ``Float64MultiArray`` layouts
    of :mod:`geodyn_ros.ros.wire.jets` and ``feedforward/jet`` is read in ``wrench_representation``
    (which must then be ``geodyn_node``'s ``output_representation``).

Markers (namespace: ids; frame ids with ``frame_prefix``, ``world_frame`` not prefixed; stamp 0,
i.e. RViz draws them with the newest transforms, so a marker never waits for ``/tf``)
    ``feedforward_force`` 0 and ``feedforward_torque`` 0: arrows from the base-link origin in the
    base-link frame, the feedforward force ``f_b`` [N] times ``force_scale`` [m/N] and moment about
    the base origin ``n_b`` [N m] times ``torque_scale`` [m/(N m)], both in base axes: the jet's
    row 0 converted to the body representation (:func:`geodyn_ros.convert_wrench`) at the pose of
    the newest ``odom`` (the jet carries no pose; with ``wrench_representation: body`` no
    conversion and no odometry is needed);
    ``rotor_thrust`` 0..n-1: rotor ``i``'s thrust ``c_f,i omega_i^2`` [N] (``motor_constant`` of the
    actuation file, the commanded speed ``omega_i`` [rad/s]) as an arrow along the rotor's +z axis
    from its origin, in the rotor link frame (the base-link frame when the rotor is not a URDF
    link), ``thrust_scale`` [m/N];
    ``com`` 0: the system centre of mass of the state (:func:`geodyn_ros.center_of_mass`), a sphere
    of diameter ``com_diameter`` [m] in ``world_frame``; ``com_reference`` 0: the reference's CoM.
A marker whose inputs have not arrived yet is left out.

Inputs are subscribed best effort (keep last ``qos_depth``), which matches reliable and best-effort
publishers alike. Bad inputs (a malformed layout, NaN/Inf, unknown joints, a wrong rotor count or a negative speed)
are refused with a one-line problem on ``/diagnostics`` (:mod:`geodyn_ros.ros.common.diagnostics`)
and the previous value is kept; never a traceback. The robot comes from ``robot_description`` /
``urdf_path`` or the ``robot_description`` topic (:mod:`geodyn_ros.ros.common.description`); with
an ``actuation_config`` it is loaded as the actuated nodes load it (rotor joints locked).
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from geometry_msgs.msg import Point
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

import geodyn_ros as gd

from ..common.description import TOPIC_PARAMETER, ModelSource
from ..common.diagnostics import DiagnosticsReporter, guard
from ..common.message_types import MESSAGE_TYPES_PARAMETER, MessageTypes
from ..common.params import FRAME_PREFIX_DESCRIPTION, ConfigurationError, check_frame_prefix, declare_parameters
from ..common.runtime import control_qos, run_nodes
from ..wire.actuator_commands import require_actuator_msgs, rotor_speed_values
from ..wire.conversions import InputError, JointNameMatcher, as_float64, pose_matrix
from ..wire.jets import BASE_WRENCH_COLUMNS, FLAT_REFERENCE_COLUMNS, _decode_stamped_jet, decode_reference_jet
from ..wire.typed import decode_typed_feedforward, decode_typed_reference, jet_fields

__all__ = ["PARAMETERS", "MarkersNode", "main"]

PARAMETERS = {
    "robot_description": ("", "URDF XML string of the robot (CoM, rotor frames)."),
    "urdf_path": ("", "Path of a .urdf/.xacro file; used when robot_description is empty."),
    "robot_description_topic": TOPIC_PARAMETER,
    "base_link": ("", "Floating base link; empty = the URDF root."),
    "actuation_config": ("", "Actuation YAML of the rotors (frames, motor_constant), as the actuated nodes'; "
                         "empty = no rotor markers and cmd/rotor_speeds not subscribed."),
    "world_frame": ("world", "Frame of the CoM markers (not prefixed by frame_prefix)."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: the base-link and rotor frames of the markers."),
    "wrench_representation": ("spatial", "message_types multiarray only (a typed jet names its own): representation "
                              "of feedforward/jet (geodyn_node's output_representation): spatial, body, hybrid or "
                              "mixed."),
    "rate_hz": (30.0, "Marker rate [Hz, wall clock] while ~/markers has a subscriber (RViz draws at 30-60 Hz)."),
    "force_scale": (0.02, "Arrow length per newton of feedforward force [m/N] (a 4 kg vehicle's 39 N: 0.78 m)."),
    "torque_scale": (0.5, "Arrow length per newton metre of feedforward moment [m/(N m)]."),
    "thrust_scale": (0.05, "Arrow length per newton of rotor thrust [m/N] (7 N per rotor at hover: 0.35 m)."),
    "com_diameter": (0.06, "Diameter of the CoM spheres [m]."),
    "qos_depth": (2, "Keep-last depth of the input topics."),
    **MESSAGE_TYPES_PARAMETER,
}

NAMESPACES = ("feedforward_force", "feedforward_torque", "rotor_thrust", "com", "com_reference")
_COLORS = {"feedforward_force": (0.9, 0.1, 0.1), "feedforward_torque": (0.1, 0.3, 0.9),
           "rotor_thrust": (1.0, 0.6, 0.0), "com": (0.1, 0.8, 0.2), "com_reference": (0.8, 0.1, 0.8)}


def _positive(p, name) -> float:
    v = p[name]
    if not (math.isfinite(v) and v > 0):
        raise ConfigurationError(f"parameter '{name}': expected a finite value > 0, got {v!r}")
    return v


def _point(v) -> Point:
    return Point(x=float(v[0]), y=float(v[1]), z=float(v[2]))


class MarkersNode(Node):
    """See the module docstring."""

    def __init__(self, node_name: str = "geodyn_markers", **kwargs):
        super().__init__(node_name, **kwargs)
        p = declare_parameters(self, PARAMETERS)
        self.frame_prefix = check_frame_prefix(p["frame_prefix"])
        for k in ("rate_hz", "force_scale", "torque_scale", "thrust_scale", "com_diameter"):
            _positive(p, k)
        if p["wrench_representation"] not in gd.REPRESENTATIONS:
            raise ConfigurationError(f"parameter 'wrench_representation': must be one of {gd.REPRESENTATIONS}, "
                                     f"got {p['wrench_representation']!r}")
        if p["qos_depth"] < 1:
            raise ConfigurationError(f"parameter 'qos_depth': must be >= 1, got {p['qos_depth']}")
        self.cfg = None
        if p["actuation_config"]:
            from geodyn_ros.control.rotors import load_actuation_config
            try:
                self.cfg = load_actuation_config(p["actuation_config"])
            except ValueError as exc:
                raise ConfigurationError(f"parameter 'actuation_config': {exc}") from None
        self._p = p
        self.types = MessageTypes(self, p["message_types"])
        self.world_frame = p["world_frame"]
        self.base_frame = None   # frame_prefix + base link, with the model
        self.W_rep = p["wrench_representation"]   # of the newest accepted jet (typed: the message's)
        self.model = None
        # the newest accepted inputs (None: not yet)
        self.C = self.q = self.W = self.omega = self.com_ref = None
        self.cycles = 0       # marker arrays published (tests)
        # best effort: matches reliable and best-effort publishers alike (a viewer loses nothing that
        # matters by missing a sample), so real sensors' best-effort odometry is drawn too
        qos = control_qos(p["qos_depth"], "best_effort")
        self.pub = self.create_publisher(MarkerArray, "~/markers", 10)
        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: markers", "")
        for msg_type, topic, fn in ((Odometry, "odom", self._on_odom), (JointState, "joint_states", self._on_joints),
                                    (self.types.type_of("jet"), "feedforward/jet", self._on_jet),
                                    (self.types.type_of("reference"), "reference", self._on_reference),
                                    (self.types.type_of("flat_reference"), "flat_reference",
                                     self._on_flat_reference)):
            self.create_subscription(msg_type, topic, guard(self, self._checked(topic, fn), topic), qos)
        if self.cfg is not None:
            self.create_subscription(require_actuator_msgs(), "cmd/rotor_speeds",
                                     guard(self, self._checked("cmd/rotor_speeds", self._on_rotor_speeds),
                                           "cmd/rotor_speeds"), qos)
        self.create_timer(1.0 / p["rate_hz"], guard(self, self._on_timer, "marker timer"),
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.model_source = ModelSource(self, p, self.diag, load=self._load, apply=self._setup_model,
                                        model_of=lambda loaded: loaded.model)

    # ------------------------------------------------------------------ the model
    def _load(self, source):
        """Model (rotor joints locked with an actuation file) and rotor frames of ``source``;
        touches no node state (for the topic it runs on the loader thread)."""
        base = self._p["base_link"] or None
        if self.cfg is None:
            return SimpleNamespace(model=gd.load_urdf(source, base_link=base), rotors=None)
        model = self.cfg.load_model(source, base_link=base)
        names, frames = self.cfg.rotor_frames(model)
        kf = self.cfg.rotors.per_rotor("motor_constant")
        if len(names) != len(kf):
            raise ConfigurationError(f"parameter 'actuation_config': {len(kf)} rotors, the robot has {len(names)}")
        return SimpleNamespace(model=model, rotors=(tuple(names), np.asarray(frames, float), kf))

    def _setup_model(self, loaded, first: bool = True) -> None:
        if self.model is not None and tuple(loaded.model.joint_names) != tuple(self.model.joint_names):
            raise ValueError("another robot: other joints")
        self.model, self.rotors = loaded.model, loaded.rotors
        self.diag.hardware_id = self.model.name
        self._matcher = JointNameMatcher(self.model.joint_names)
        self.base_frame = self.frame_prefix + self.model.base_link
        if first:
            self.q = None

    # ------------------------------------------------------------------ inputs
    def _checked(self, topic, fn):
        """``fn(msg)`` with its :class:`InputError` reported on ``/diagnostics`` (the value kept)."""
        def callback(msg):
            self.model_source.poll()
            if self.model is None:
                self.model_source.refuse_input(topic)
                return
            try:
                fn(msg)
            except InputError as exc:
                self.diag.problem(topic, str(exc))
        return callback

    def _on_odom(self, msg) -> None:
        C = np.eye(4)
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        pose_matrix(p.x, p.y, p.z, o.x, o.y, o.z, o.w, C, "odom pose")
        self.C = C

    def _on_joints(self, msg) -> None:
        q = np.empty(self.model.n_joints)
        self._matcher.gather(msg.name, msg.position, q, "joint_states position")
        self.q = q

    def _frames(self):
        """The frames a typed input is checked against: ``frame_id=`` world, ``child_frame_id=`` base link."""
        return {"frame_id": self.world_frame, "child_frame_id": self.base_frame}

    def _on_jet(self, msg) -> None:
        if self.types.typed:   # row 0 in the representation the message names
            _, W, _, _, rep = decode_typed_feedforward(msg, joint_names=self.model.joint_names, **self._frames())
            if W.shape[0] < 1:
                raise InputError("feedforward/jet: no derivative row")
            self.W, self.W_rep = W[0].copy(), rep
            return
        _, body, _ = _decode_stamped_jet(msg, "feedforward/jet", BASE_WRENCH_COLUMNS)
        if body.shape[0] < 1:
            raise InputError("feedforward/jet: no derivative row")
        self.W = body[0, :6].copy()

    def _on_rotor_speeds(self, msg) -> None:
        n = len(self.rotors[0])
        values = rotor_speed_values(msg)
        if len(values) != n:
            raise InputError(f"cmd/rotor_speeds: {len(values)} speeds, the robot has {n} rotors")
        om = np.array(as_float64(values))
        if not np.isfinite(om).all():
            raise InputError("cmd/rotor_speeds: NaN or Inf")
        if (om < 0).any():
            raise InputError(f"cmd/rotor_speeds: negative speed {om.min():.6g} rad/s; speeds must be >= 0")
        self.omega = om

    def _on_reference(self, msg) -> None:
        if self.types.typed:   # the pose and joints only: any representation of the twist
            _, C, _, Q, names, _ = decode_typed_reference(msg, "reference", **self._frames())
        else:
            _, C, _, Q, names = decode_reference_jet(msg, "reference")
        if Q.shape[0] < 1:
            raise InputError("reference: no derivative row")
        q = np.empty(self.model.n_joints)
        self._matcher.gather(names, Q[0], q, "reference joint columns")
        self.com_ref = gd.center_of_mass(self.model, C, None, q)[0]

    def _on_flat_reference(self, msg) -> None:
        if self.types.typed:
            self.com_ref = _typed_flat_com(msg, self._frames())
            return
        _, body, _ = _decode_stamped_jet(msg, "flat_reference", FLAT_REFERENCE_COLUMNS)
        if body.shape[0] < 1:
            raise InputError("flat_reference: no derivative row")
        self.com_ref = body[0, :3].copy()

    # ------------------------------------------------------------------ markers
    def _marker(self, ns, i, kind, frame) -> Marker:
        m = Marker()
        m.header.frame_id = frame          # stamp 0: the newest transforms (module docstring)
        m.ns, m.id, m.type, m.action = ns, i, kind, Marker.ADD
        r, g, b = _COLORS[ns]
        m.color.r, m.color.g, m.color.b, m.color.a = r, g, b, 1.0
        m.pose.orientation.w = 1.0
        return m

    def _arrow(self, ns, i, frame, start, end, width) -> Marker:
        m = self._marker(ns, i, Marker.ARROW, frame)
        m.points = [_point(start), _point(end)]
        m.scale.x, m.scale.y, m.scale.z = width, 2.0 * width, 3.0 * width   # shaft and head diameters, head length
        return m

    def _sphere(self, ns, center) -> Marker:
        m = self._marker(ns, 0, Marker.SPHERE, self.world_frame)
        m.pose.position = _point(center)
        d = self._p["com_diameter"]
        m.scale.x = m.scale.y = m.scale.z = d
        return m

    def markers(self) -> MarkerArray:
        """The :class:`MarkerArray` of the newest inputs (module docstring)."""
        p, out = self._p, []
        zero = np.zeros(3)
        Wb = self._body_wrench()
        if Wb is not None:
            out.append(self._arrow("feedforward_force", 0, self.base_frame, zero, p["force_scale"] * Wb[3:], 0.02))
            out.append(self._arrow("feedforward_torque", 0, self.base_frame, zero, p["torque_scale"] * Wb[:3], 0.02))
        if self.rotors is not None and self.omega is not None:
            names, frames, kf = self.rotors
            thrust = kf * self.omega ** 2
            for i, (name, F) in enumerate(zip(names, frames)):
                length = p["thrust_scale"] * thrust[i]
                if name in self.model.link_home:     # the rotor's own frame (on /tf or /tf_static)
                    out.append(self._arrow("rotor_thrust", i, self.frame_prefix + name, zero, (0.0, 0.0, length), 0.01))
                else:                                # a generated rotor frame: drawn in the base frame
                    out.append(self._arrow("rotor_thrust", i, self.base_frame, F[:3, 3], F[:3, 3] + length * F[:3, 2],
                                           0.01))
        if self.C is not None and self.q is not None:
            out.append(self._sphere("com", gd.center_of_mass(self.model, self.C, None, self.q)[0]))
        if self.com_ref is not None:
            out.append(self._sphere("com_reference", self.com_ref))
        return MarkerArray(markers=out)

    def _body_wrench(self):
        """Row 0 of the feedforward jet as a body wrench (n_b, f_b) (6,), or None (module docstring)."""
        if self.W is None:
            return None
        rep = self.W_rep
        if rep == "body":
            return self.W
        if self.C is None:
            return None
        return gd.convert_wrench(self.C, self.W[None], None, rep, "body")[0]

    def _on_timer(self) -> None:
        self.model_source.poll()
        if self.model is None or self.pub.get_subscription_count() == 0:
            return
        arr = self.markers()
        if arr.markers:
            self.pub.publish(arr)
            self.cycles += 1


def _typed_flat_com(msg, frames) -> np.ndarray:
    """The CoM ``c^(0)`` (3,) [m] in the world frame of a ``FlatReference``, checked as
    :class:`~geodyn_ros.ros.wire.typed.TypedFlatReferenceDecoder` checks it (entry counts, frames,
    stamp, finite values) except the row count the dynamics need: one row is enough here."""
    from ..wire.conversions import checked_stamp_ns
    from ..wire.typed import _counts, _frames
    t, f = "flat_reference", jet_fields(msg)
    K1, _ = _counts(f, t, "com", "q")
    if len(f.yaw) != K1:
        raise InputError(f"{t}: order {f.order} but yaw has {len(f.yaw)} entries ({K1} expected)")
    _frames(f, t, frames["frame_id"], frames["child_frame_id"])
    checked_stamp_ns(f.sec, f.nanosec, f"{t} (header.stamp)")
    if not (np.isfinite(f.rows).all() and np.isfinite(f.yaw).all() and np.isfinite(f.values).all()):
        raise InputError(f"{t}: NaN or Inf")
    return f.rows[0].copy()


def main(args=None) -> int:
    """Console script ``geodyn_markers``."""
    return run_nodes([MarkersNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
