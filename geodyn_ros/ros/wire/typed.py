"""The typed messages of ``geodyn_msgs`` <-> the package's arrays (the successors of :mod:`.jets`).

One encoder and one decoder per message, with the semantics of the ``Float64MultiArray`` layout it
replaces (:mod:`geodyn_ros.ros.wire.jets`): the same argument shapes, orderings and frames, the
same refusals (:class:`InputError` ``<topic>: <problem>``), the joints matched by name
(:class:`JointNameMatcher`: extra joints ignored, a missing or repeated model joint refused).

* ``ReferenceJet``, ``DesiredState``: :func:`make_reference_jet` (``make_reference_msg``;
  ``cls=DesiredState``); :class:`TypedReferenceDecoder` (``ReferenceDecoder``) and
  :func:`decode_typed_reference` (``decode_reference_jet``).
* ``FlatReference``: :func:`make_flat_reference` (``make_flat_reference_msg``);
  :class:`TypedFlatReferenceDecoder` (``FlatReferenceDecoder``).
* ``FeedforwardJet``: :class:`TypedFeedforwardPacker` (``FeedforwardJetPacker``; its
  ``pack_flat``: ``FlatFeedforwardPacker``, the ``body`` representation with force ``(0, 0, T)``);
  :func:`decode_typed_feedforward` (``decode_feedforward_jet``) and
  :func:`decode_typed_flat_feedforward` (``decode_flat_feedforward_jet``).
* ``RotorSpeeds``: :class:`TypedRotorSpeedPacker` (``RotorSpeedPacker``);
  :func:`decode_typed_rotor_speeds` (``decode_rotor_speed_jet``).
* ``Linearization``: :class:`TypedLinearizationPacker` (``LinearizationPacker``, with the labels of
  ``linearization_labels_json``); :func:`decode_typed_linearization` (``decode_linearization``).

The arrays are the layouts' (``CONVENTIONS.md``): twists angular first ``(w, v)`` (a
``geometry_msgs/Twist`` is ``(linear, angular)``: swapped here), wrenches moment first ``(n, f)``
(``geometry_msgs/Wrench`` is ``(force, torque)``), row ``k`` of a jet the k-th derivative, joint
columns in the message's ``joint_names`` order (encoders) or the model's (decoders).

What the typed messages carry beyond the layouts, and how the decoders check it:

* ``header.frame_id`` / ``child_frame_id``: when the decoder is given the frame it expects
  (``frame_id=``, ``child_frame_id=``), a message naming another frame is refused
  (``<topic>: header.frame_id 'x' is not the world frame 'world'``); an empty frame id is
  accepted, as :func:`parse_odometry` accepts an empty ``child_frame_id``.
* ``representation``: must be one of the message's constants (empty means ``spatial``); a
  decoder given ``representation=`` refuses another one (``feedforward/jet: representation
  'spatial', this node needs 'body' (geodyn_node's output_representation)``).
* ``order``: the entry counts must agree with it (``K+1`` twists, ``(K+1)·m`` joint values).

Differences from the layouts' decoders, all stricter: every typed decoder refuses NaN/Inf and an
invalid stamp (``decode_feedforward_jet`` and ``decode_linearization`` left those checks to their
callers, who all made them), and the feedforward decoders check the joint names against the
model's when given ``joint_names=`` (the callers did that too). Stamps travel as
``builtin_interfaces/Time`` (``sec`` int32, ``nanosec`` uint32): a decoder accepts
``0 <= sec <= 2^31-1``, ``nanosec < 10^9`` (:func:`checked_stamp_ns`).

The decoders read message objects (rclpy's) and, through :func:`jet_fields`, the same fields of
a raw buffer decoded by :mod:`geodyn_ros.ros.wire.typed_raw`: one set of checks for both.
"""
from __future__ import annotations

import array
from types import SimpleNamespace

import numpy as np
try:
    from geodyn_msgs.msg import DesiredState, FeedforwardJet, FlatReference, Linearization, ReferenceJet, RotorSpeeds
except ImportError:   # a workspace that built this package without geodyn_msgs: only the deprecated
    # layouts work there (message_types multiarray); a node set to typed refuses to start in one
    # line (geodyn_ros.ros.common.message_types.require_geodyn_msgs). No message is ever an
    # instance of the placeholder, and making one says what is missing.
    class _Unavailable:
        def __init__(self, *args, **kwargs):
            raise ImportError("geodyn_msgs is not importable: build it (make venv, or colcon build "
                              "--base-paths src/geodyn_ros src/geodyn_ros/geodyn_msgs)")

    DesiredState = FeedforwardJet = FlatReference = Linearization = ReferenceJet = RotorSpeeds = _Unavailable
from geometry_msgs.msg import Twist, Vector3, Wrench

from .conversions import InputError, JointNameMatcher, checked_stamp_ns, pose_matrix

__all__ = ["REPRESENTATIONS", "LINEARIZATION_REPRESENTATIONS", "MAX_ORDER_FIELD", "jet_fields",
           "make_reference_jet", "TypedReferenceDecoder", "decode_typed_reference",
           "make_flat_reference", "TypedFlatReferenceDecoder",
           "TypedFeedforwardPacker", "decode_typed_feedforward", "decode_typed_flat_feedforward",
           "TypedRotorSpeedPacker", "decode_typed_rotor_speeds",
           "TypedLinearizationPacker", "decode_typed_linearization",
           "ReferenceJet", "DesiredState", "FlatReference", "FeedforwardJet", "RotorSpeeds", "Linearization"]

#: the ``representation`` values of the jets (the messages' constants); "" means "spatial"
REPRESENTATIONS = ("spatial", "body", "hybrid", "mixed")
#: those of ``Linearization``
LINEARIZATION_REPRESENTATIONS = ("spatial", "body")
#: ``order`` is a ``uint8``: at most 255 (K+1 = 256 entries)
MAX_ORDER_FIELD = 255


def _f64(values) -> np.ndarray:
    if getattr(values, "typecode", None) == "d":
        return np.frombuffer(values, dtype=np.float64)
    return np.asarray(values, dtype=np.float64)


def _doubles(a) -> array.array:
    return array.array("d", np.ascontiguousarray(a, dtype=np.float64).tobytes())


def _order(rows: int, what: str) -> int:
    if not 1 <= rows <= MAX_ORDER_FIELD + 1:
        raise ValueError(f"{what}: {rows} derivative rows; the message's uint8 order carries 1..{MAX_ORDER_FIELD + 1}")
    return rows - 1


# ----------------------------------------------------------------------------- fields (messages and raw)
def jet_fields(msg) -> SimpleNamespace:
    """The fields of a typed message as the decoders read them: ``sec``, ``nanosec``, ``frame_id``,
    ``child_frame_id`` (or None for ``RotorSpeeds``), ``order``, ``representation`` (or None),
    ``rows`` ((entries, 6): twists ``(w, v)`` / wrenches ``(n, f)``; (entries, 3) CoM; or None),
    ``pose`` (7,) or None, ``yaw``, ``names`` (tuple), ``values`` (float64 array: ``q``, ``tau``,
    ``angular_velocities``). The raw decoders of :mod:`.typed_raw` return the same namespace."""
    if not isinstance(msg, (ReferenceJet, DesiredState, FeedforwardJet, FlatReference, RotorSpeeds)):
        raise TypeError(f"jet_fields: not a geodyn_msgs jet: {type(msg).__name__}")
    h = msg.header
    f = SimpleNamespace(sec=h.stamp.sec, nanosec=h.stamp.nanosec, frame_id=h.frame_id,
                        child_frame_id=getattr(msg, "child_frame_id", None), order=getattr(msg, "order", None),
                        representation=getattr(msg, "representation", None), rows=None, pose=None, yaw=None)
    if isinstance(msg, (ReferenceJet, DesiredState)):
        p, o = msg.base_pose.position, msg.base_pose.orientation
        f.pose = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])
        f.rows = np.array([(t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z)
                           for t in msg.base_twist], dtype=np.float64).reshape(-1, 6)
        f.names, f.values = tuple(msg.joint_names), _f64(msg.q)
    elif isinstance(msg, FeedforwardJet):
        f.rows = np.array([(w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z)
                           for w in msg.base_wrench], dtype=np.float64).reshape(-1, 6)
        f.names, f.values = tuple(msg.joint_names), _f64(msg.tau)
    elif isinstance(msg, FlatReference):
        f.rows = np.array([(c.x, c.y, c.z) for c in msg.com], dtype=np.float64).reshape(-1, 3)
        f.yaw = _f64(msg.yaw)
        f.names, f.values = tuple(msg.joint_names), _f64(msg.q)
    else:
        f.names, f.values = tuple(msg.rotor_names), _f64(msg.angular_velocities)
    return f


def _fields(msg):
    return msg if isinstance(msg, SimpleNamespace) else jet_fields(msg)


def _stamp(f, t: str) -> int:
    return checked_stamp_ns(f.sec, f.nanosec, f"{t} (header.stamp)")


def _frames(f, t: str, frame_id, child_frame_id, frame_what="the world frame") -> None:
    if frame_id and f.frame_id and f.frame_id != frame_id:
        raise InputError(f"{t}: header.frame_id '{f.frame_id}' is not {frame_what} '{frame_id}'")
    if child_frame_id and f.child_frame_id and f.child_frame_id != child_frame_id:
        raise InputError(f"{t}: child_frame_id '{f.child_frame_id}' is not the base link '{child_frame_id}'")


def _representation(f, t: str, expected, allowed=REPRESENTATIONS, who="") -> str:
    rep = f.representation or "spatial"
    if rep not in allowed:
        raise InputError(f"{t}: unknown representation '{rep}' (one of {', '.join(allowed)}; empty means spatial)")
    if expected is not None and rep != expected:
        raise InputError(f"{t}: representation '{rep}', this node needs '{expected}'" + (f" ({who})" if who else ""))
    return rep


def _counts(f, t: str, rows_field: str, values_field: str, names_field: str = "joint_names") -> tuple:
    """``(K+1, m)`` after checking the entry counts against ``order``."""
    K1, m = f.order + 1, len(f.names)
    if rows_field and len(f.rows) != K1:
        raise InputError(f"{t}: order {f.order} but {rows_field} has {len(f.rows)} entries ({K1} expected)")
    if len(f.values) != K1 * m:
        raise InputError(f"{t}: {values_field} has {len(f.values)} values, order {f.order} and {m} "
                         f"{names_field} need {K1 * m}")
    return K1, m


def _check_names(names, joint_names, t: str) -> None:
    if joint_names is not None and tuple(names) != tuple(joint_names):
        raise InputError(f"{t}: joints {tuple(names)} are not {tuple(joint_names)}")


def _finite(t: str, *arrays) -> None:
    if not all(np.isfinite(a).all() for a in arrays):
        raise InputError(f"{t}: NaN or Inf")


# ----------------------------------------------------------------------------- ReferenceJet, DesiredState
def make_reference_jet(stamp_ns: int, base_pose: np.ndarray, base_twist: np.ndarray, q: np.ndarray, joint_names,
                       *, frame_id: str = "world", child_frame_id: str = "base_link",
                       representation: str = "spatial", cls=ReferenceJet, msg=None):
    """A ``ReferenceJet`` (or ``cls=DesiredState``) of one sample: the arguments of
    :func:`geodyn_ros.ros.wire.jets.make_reference_msg` (``base_pose`` (4, 4) in ``frame_id``,
    ``base_twist`` (K+1, 6) ``V^(0..K)`` in ``representation``, ``q`` (K+1, m) columns
    ``joint_names``) with the frames and the representation; ``msg``: one to reuse."""
    from ...lie import matrix_to_quat

    base_twist, q = np.asarray(base_twist, dtype=np.float64), np.asarray(q, dtype=np.float64)
    K1 = base_twist.shape[0]
    if q.shape[0] != K1:
        raise ValueError(f"q: {q.shape[0]} rows but base_twist has {K1}")
    if q.shape[1] != len(joint_names):
        raise ValueError(f"q: {q.shape[1]} columns for {len(joint_names)} joint_names")
    if representation not in REPRESENTATIONS:
        raise ValueError(f"representation: '{representation}' is not one of {REPRESENTATIONS}")
    msg = cls() if msg is None else msg
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
    msg.header.frame_id, msg.child_frame_id = frame_id, child_frame_id
    msg.order, msg.representation = _order(K1, "base_twist"), representation
    p, o = msg.base_pose.position, msg.base_pose.orientation
    p.x, p.y, p.z = (float(v) for v in base_pose[:3, 3])
    o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quat(base_pose[:3, :3], "xyzw"))
    twists = []
    for w in base_twist.tolist():
        t = Twist()
        t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z = w
        twists.append(t)
    msg.base_twist = twists
    msg.joint_names = list(joint_names)
    msg.q = _doubles(q)
    return msg


class TypedReferenceDecoder:
    """Decode ``ReferenceJet`` (or ``DesiredState``) messages into the input buffers of
    ``gd.inverse_dynamics``: :class:`~geodyn_ros.ros.wire.jets.ReferenceDecoder` for the typed message.

    joint_names : the model's joints (column order of ``Q_out``); order : ``r`` (rows ``V^(0..r+1)``
    and ``q^(0..r+2)`` are read); topic : named in the errors; representation : the one the node
    needs (``reference_representation``), None for any; frame_id, child_frame_id : the frames the
    node expects (None: not checked). :attr:`representation` is that of the last decoded message.
    """

    def __init__(self, joint_names, order: int, topic: str = "reference", *, representation: str | None = "spatial",
                 frame_id: str | None = None, child_frame_id: str | None = None):
        self.matcher = JointNameMatcher(joint_names)
        self.order, self.topic = order, topic
        self.expected, self.frame_id, self.child_frame_id = representation, frame_id, child_frame_id
        self.representation = None

    def decode(self, msg, C_out: np.ndarray, V_out: np.ndarray, Q_out: np.ndarray) -> int:
        """Fill ``C_out`` (4,4), ``V_out`` (>= r+2, 6), ``Q_out`` (>= r+3, n); return the stamp [ns].

        :class:`InputError` for too few derivative rows, entry counts that disagree with
        ``order``, missing joints, NaN/Inf in the rows used, a non-unit quaternion, another
        frame or representation."""
        r, t, f = self.order, self.topic, _fields(msg)
        K1, m = _counts(f, t, "base_twist", "q")
        if K1 < r + 3:
            raise InputError(f"{t}: {K1} derivative rows, order {r} needs {r + 3} "
                             f"(V^(0..{r + 1}), q^(0..{r + 2}))")
        _frames(f, t, self.frame_id, self.child_frame_id)
        rep = _representation(f, t, self.expected, who="reference_representation")
        cols = self.matcher.indices(f.names, f"{t} joint_names")
        stamp_ns = _stamp(f, t)
        pose_matrix(*f.pose.tolist(), C_out, f"{t} base pose")
        V_out[: r + 2] = f.rows[: r + 2]
        np.take(f.values.reshape(K1, m)[: r + 3], cols, axis=1, out=Q_out[: r + 3])
        if not (np.isfinite(V_out[: r + 2]).all() and np.isfinite(Q_out[: r + 3]).all()):
            raise InputError(f"{t}: NaN or Inf in the derivative rows used")
        self.representation = rep
        return stamp_ns


def decode_typed_reference(msg, topic: str = "reference", *, representation: str | None = None,
                           frame_id: str | None = None, child_frame_id: str | None = None):
    """``(stamp_ns, C (4, 4), V (K+1, 6), q (K+1, m), joint_names, representation)`` of a
    ``ReferenceJet`` or ``DesiredState`` (all its rows and joints):
    :func:`~geodyn_ros.ros.wire.jets.decode_reference_jet` plus the representation (checked
    against ``representation`` if given) and the frames."""
    f = _fields(msg)
    K1, m = _counts(f, topic, "base_twist", "q")
    _frames(f, topic, frame_id, child_frame_id)
    rep = _representation(f, topic, representation)
    stamp_ns = _stamp(f, topic)
    C = np.eye(4)
    pose_matrix(*f.pose.tolist(), C, f"{topic} base pose")
    q = f.values.reshape(K1, m)
    _finite(topic, f.rows, q)
    return stamp_ns, C, np.array(f.rows, dtype=np.float64), q.copy(), tuple(f.names), rep


# ----------------------------------------------------------------------------- FlatReference
def make_flat_reference(stamp_ns: int, com: np.ndarray, yaw: np.ndarray, q: np.ndarray, joint_names, *,
                        frame_id: str = "world", child_frame_id: str = "base_link", msg=None):
    """A ``FlatReference``: the arguments of :func:`~geodyn_ros.ros.wire.jets.make_flat_reference_msg`
    (``com`` (K+1, 3), ``yaw`` (K+1,), ``q`` (K+1, m) columns ``joint_names``) with the frames."""
    com, yaw, q = np.asarray(com, float), np.asarray(yaw, float), np.asarray(q, float)
    K1 = com.shape[0]
    if com.shape != (K1, 3) or yaw.shape != (K1,) or q.shape != (K1, len(joint_names)):
        raise ValueError(f"com, yaw, q: expected ({K1}, 3), ({K1},), ({K1}, {len(joint_names)}), got "
                         f"{com.shape}, {yaw.shape}, {q.shape}")
    msg = FlatReference() if msg is None else msg
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
    msg.header.frame_id, msg.child_frame_id = frame_id, child_frame_id
    msg.order = _order(K1, "com")
    msg.com = [Vector3(x=x, y=y, z=z) for x, y, z in com.tolist()]
    msg.yaw = _doubles(yaw)
    msg.joint_names = list(joint_names)
    msg.q = _doubles(q)
    return msg


class TypedFlatReferenceDecoder:
    """:class:`~geodyn_ros.ros.wire.jets.FlatReferenceDecoder` for ``FlatReference``: rows
    ``c^(0..r+4)``, ``psi^(0..r+2)``, ``q^(0..r+2)``; frames checked when given."""

    def __init__(self, joint_names, order: int, topic: str = "flat_reference", *, frame_id: str | None = None,
                 child_frame_id: str | None = None):
        self.matcher = JointNameMatcher(joint_names)
        self.order, self.topic = order, topic
        self.frame_id, self.child_frame_id = frame_id, child_frame_id

    def decode(self, msg, com_out: np.ndarray, yaw_out: np.ndarray, Q_out: np.ndarray) -> int:
        """Fill ``com_out`` (>= r+5, 3), ``yaw_out`` (>= r+3,), ``Q_out`` (>= r+3, n); return the stamp [ns]."""
        r, t, f = self.order, self.topic, _fields(msg)
        K1, m = _counts(f, t, "com", "q")
        if len(f.yaw) != K1:
            raise InputError(f"{t}: order {f.order} but yaw has {len(f.yaw)} entries ({K1} expected)")
        if K1 < r + 5:
            raise InputError(f"{t}: {K1} derivative rows, order {r} needs {r + 5} (c^(0..{r + 4}))")
        _frames(f, t, self.frame_id, self.child_frame_id)
        cols = self.matcher.indices(f.names, f"{t} joint_names")
        stamp_ns = _stamp(f, t)
        com_out[: r + 5] = f.rows[: r + 5]
        yaw_out[: r + 3] = f.yaw[: r + 3]
        np.take(f.values.reshape(K1, m)[: r + 3], cols, axis=1, out=Q_out[: r + 3])
        if not (np.isfinite(com_out[: r + 5]).all() and np.isfinite(yaw_out[: r + 3]).all()
                and np.isfinite(Q_out[: r + 3]).all()):
            raise InputError(f"{t}: NaN or Inf in the derivative rows used")
        return stamp_ns


# ----------------------------------------------------------------------------- FeedforwardJet
class TypedFeedforwardPacker:
    """``FeedforwardJet`` messages for a fixed model and order, reusing one message:
    :class:`~geodyn_ros.ros.wire.jets.FeedforwardJetPacker` (:meth:`pack`) and
    :class:`~geodyn_ros.ros.wire.jets.FlatFeedforwardPacker` (:meth:`pack_flat`: representation
    ``body``, force ``(0, 0, T)``, the typed ``feedforward/flat_jet``)."""

    def __init__(self, joint_names, order: int, *, frame_id: str = "world", child_frame_id: str = "base_link",
                 representation: str = "spatial"):
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation: '{representation}' is not one of {REPRESENTATIONS}")
        self.joint_names, self.order, self.n = tuple(joint_names), order, len(joint_names)
        self.msg = FeedforwardJet()
        self.msg.header.frame_id, self.msg.child_frame_id = frame_id, child_frame_id
        self.msg.order, self.msg.representation = _order(order + 1, "order"), representation
        self.msg.joint_names = list(self.joint_names)
        self.msg.base_wrench = [Wrench() for _ in range(order + 1)]
        self._rep = representation

    def pack(self, stamp_ns: int, base_wrench: np.ndarray, tau: np.ndarray):
        """The message of ``W^(0..r)`` (r+1, 6) (moment first, in the packer's representation) and
        ``tau^(0..r)`` (r+1, n), stamped ``stamp_ns``."""
        r1 = self.order + 1
        W, tau = np.asarray(base_wrench, dtype=np.float64), np.asarray(tau, dtype=np.float64)
        if W.shape != (r1, 6) or tau.shape != (r1, self.n):
            raise ValueError(f"base_wrench, tau: expected ({r1}, 6), ({r1}, {self.n}), got {W.shape}, {tau.shape}")
        m = self.msg
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
        m.representation = self._rep
        for w, row in zip(m.base_wrench, W.tolist()):
            w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z = row
        m.tau = _doubles(tau)
        return m

    def pack_flat(self, stamp_ns: int, thrust, body_torque, tau):
        """``T^(0..r)`` (r+1,), ``tau_b^(0..r)`` (r+1, 3), ``tau^(0..r)`` (r+1, n): the message in
        the ``body`` representation with ``force = (0, 0, T^(k))``, ``torque = tau_b^(k)``."""
        r1 = self.order + 1
        T, tb = np.asarray(thrust, dtype=np.float64), np.asarray(body_torque, dtype=np.float64)
        if T.shape != (r1,) or tb.shape != (r1, 3):
            raise ValueError(f"thrust, body_torque: expected ({r1},), ({r1}, 3), got {T.shape}, {tb.shape}")
        W = np.zeros((r1, 6))
        W[:, :3], W[:, 5] = tb, T
        m = self.pack(stamp_ns, W, tau)
        m.representation = "body"
        return m


def decode_typed_feedforward(msg, topic: str = "feedforward/jet", *, representation: str | None = None,
                             joint_names=None, frame_id: str | None = None, child_frame_id: str | None = None):
    """``(stamp_ns, W (r+1, 6), tau (r+1, n), joint_names, representation)`` of a ``FeedforwardJet``:
    :func:`~geodyn_ros.ros.wire.jets.decode_feedforward_jet` plus the checks of the typed fields.
    ``representation``: the one the consumer needs (e.g. ``body`` for the actuated controller),
    None for any; ``joint_names``: the model's (the message must carry exactly these, in order)."""
    f = _fields(msg)
    K1, n = _counts(f, topic, "base_wrench", "tau")
    _frames(f, topic, frame_id, child_frame_id)
    rep = _representation(f, topic, representation, who="geodyn_node's output_representation")
    _check_names(f.names, joint_names, topic)
    stamp = _stamp(f, topic)
    tau = f.values.reshape(K1, n)
    _finite(topic, f.rows, tau)
    return stamp, np.array(f.rows, dtype=np.float64), tau.copy(), tuple(f.names), rep


def decode_typed_flat_feedforward(msg, topic: str = "feedforward/flat_jet", *, joint_names=None,
                                  frame_id: str | None = None, child_frame_id: str | None = None):
    """``(stamp_ns, thrust (r+1,), body_torque (r+1, 3), tau (r+1, n), joint_names)`` of the typed
    ``feedforward/flat_jet`` (:func:`~geodyn_ros.ros.wire.jets.decode_flat_feedforward_jet`): a
    ``FeedforwardJet`` in the ``body`` representation whose force is ``(0, 0, T)`` exactly."""
    stamp, W, tau, names, _ = decode_typed_feedforward(msg, topic, representation="body", joint_names=joint_names,
                                                       frame_id=frame_id, child_frame_id=child_frame_id)
    if W[:, 3:5].any():
        raise InputError(f"{topic}: force has x or y components; the flat feedforward is the thrust along "
                         "the base +z, force (0, 0, T)")
    return stamp, W[:, 5].copy(), W[:, :3].copy(), tau, names


# ----------------------------------------------------------------------------- RotorSpeeds
class TypedRotorSpeedPacker:
    """``RotorSpeeds`` messages (``omega_d^(0..r)`` per rotor; ``header.frame_id`` the base link):
    :class:`~geodyn_ros.ros.wire.jets.RotorSpeedPacker`."""

    def __init__(self, rotor_names, order: int, *, frame_id: str = "base_link"):
        self.rotor_names, self.order = tuple(rotor_names), order
        self.msg = RotorSpeeds()
        self.msg.header.frame_id, self.msg.order = frame_id, _order(order + 1, "order")
        self.msg.rotor_names = list(self.rotor_names)

    def pack(self, stamp_ns: int, omega):
        """``omega_d^(0..r)`` (r+1, n_r) with the stamp."""
        omega = np.asarray(omega, dtype=np.float64)
        if omega.shape != (self.order + 1, len(self.rotor_names)):
            raise ValueError(f"omega: expected ({self.order + 1}, {len(self.rotor_names)}), got {omega.shape}")
        m = self.msg
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
        m.angular_velocities = _doubles(omega)
        return m


def decode_typed_rotor_speeds(msg, topic: str = "feedforward/rotor_speeds", *, rotor_names=None,
                              frame_id: str | None = None):
    """``(stamp_ns, omega (r+1, n_r), rotor_names)`` of a ``RotorSpeeds``
    (:func:`~geodyn_ros.ros.wire.jets.decode_rotor_speed_jet`); ``rotor_names``: the ones expected
    (in order), ``frame_id``: the base link expected in ``header.frame_id``."""
    f = _fields(msg)
    K1, n = _counts(f, topic, "", "angular_velocities", "rotor_names")
    _frames(f, topic, frame_id, None, "the base link")
    if rotor_names is not None and tuple(f.names) != tuple(rotor_names):
        raise InputError(f"{topic}: rotors {tuple(f.names)} are not {tuple(rotor_names)}")
    stamp = _stamp(f, topic)
    omega = f.values.reshape(K1, n)
    _finite(topic, omega)
    return stamp, omega.copy(), tuple(f.names)


# ----------------------------------------------------------------------------- Linearization
class TypedLinearizationPacker:
    """``Linearization`` messages (``A`` (nx, nx), ``B`` (nx, nu) row-major, the labels in every
    message): :class:`~geodyn_ros.ros.wire.jets.LinearizationPacker` with the labels of
    :func:`~geodyn_ros.ros.wire.jets.linearization_labels_json`."""

    def __init__(self, state_labels, input_labels, representation: str, *, frame_id: str = "world",
                 child_frame_id: str = "base_link"):
        if representation not in LINEARIZATION_REPRESENTATIONS:
            raise ValueError(f"representation: '{representation}' is not one of {LINEARIZATION_REPRESENTATIONS}")
        self.nx, self.nu = len(state_labels), len(input_labels)
        m = self.msg = Linearization()
        m.header.frame_id, m.child_frame_id, m.representation = frame_id, child_frame_id, representation
        m.nx, m.nu = self.nx, self.nu
        m.state_labels, m.input_labels = list(state_labels), list(input_labels)

    def pack(self, stamp_ns: int, A: np.ndarray, B: np.ndarray):
        """The message carrying ``A``, ``B`` with the stamp."""
        A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
        if A.shape != (self.nx, self.nx) or B.shape != (self.nx, self.nu):
            raise ValueError(f"A, B: expected ({self.nx}, {self.nx}), ({self.nx}, {self.nu}), got {A.shape}, {B.shape}")
        m = self.msg
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
        m.a, m.b = _doubles(A), _doubles(B)
        return m


def decode_typed_linearization(msg, topic: str = "linearization", *, representation: str | None = None,
                               frame_id: str | None = None, child_frame_id: str | None = None):
    """``(stamp_ns, A (nx, nx), B (nx, nu), state_labels, input_labels, representation)`` of a
    ``Linearization`` (:func:`~geodyn_ros.ros.wire.jets.decode_linearization` and the labels JSON):
    ``nx``, ``nu`` must agree with the label counts and the matrix lengths."""
    m, t = msg, topic
    nx, nu = int(m.nx), int(m.nu)
    if len(m.state_labels) != nx or len(m.input_labels) != nu:
        raise InputError(f"{t}: {len(m.state_labels)} state_labels and {len(m.input_labels)} input_labels "
                         f"for nx = {nx}, nu = {nu}")
    if len(m.a) != nx * nx or len(m.b) != nx * nu:
        raise InputError(f"{t}: a has {len(m.a)} values and b {len(m.b)}; nx = {nx}, nu = {nu} need "
                         f"{nx * nx} and {nx * nu}")
    f = SimpleNamespace(frame_id=m.header.frame_id, child_frame_id=m.child_frame_id, representation=m.representation)
    _frames(f, t, frame_id, child_frame_id)
    rep = _representation(f, t, representation, LINEARIZATION_REPRESENTATIONS, "linearization_representation")
    stamp = checked_stamp_ns(m.header.stamp.sec, m.header.stamp.nanosec, f"{t} (header.stamp)")
    A, B = _f64(m.a).reshape(nx, nx).copy(), _f64(m.b).reshape(nx, nu).copy()
    _finite(t, A, B)
    return stamp, A, B, tuple(m.state_labels), tuple(m.input_labels), rep
