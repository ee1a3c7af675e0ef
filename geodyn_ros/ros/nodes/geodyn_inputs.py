"""``geodyn_node``'s inputs: the subscribed types and the parsers of the serialized messages.

:class:`FeedforwardInputs` is a mixin of :class:`~geodyn_ros.ros.nodes.geodyn_node.GeodynNode`
(topics, types and rules in that module's docstring). Every input is subscribed raw (serialized
bytes, no Python message object at 1 kHz) and parsed into a buffer entry in place:

* first by a compiled decoder of the shape of the last accepted message (one call: the stamp
  and the numbers, checked for NaN/Inf and the plausibility limits; it only ever accepts, and
  declines anything else): :mod:`geodyn_ros.ros.wire.fast_inputs` for the
  ``Float64MultiArray`` layouts, ``odom`` and ``joint_states``,
  :class:`~geodyn_ros.ros.wire.typed_raw.FastTypedReference` /
  :class:`~geodyn_ros.ros.wire.typed_raw.FastTypedFlatReference` for the typed messages;
* else by the full path, which accepts or refuses (:class:`InputError`, reported by the node):
  the strict byte decoder (:mod:`geodyn_ros.ros.wire.cdr`, or for the typed messages
  :func:`~geodyn_ros.ros.wire.typed_raw.decode_reference_jet_cdr` /
  :func:`~geodyn_ros.ros.wire.typed_raw.decode_flat_reference_cdr`), the message decoder with
  its checks (:mod:`geodyn_ros.ros.wire.jets`, :mod:`geodyn_ros.ros.wire.typed`: counts, frames,
  representation, joints by name, unit quaternion, NaN/Inf) and the plausibility check; an
  accepted message's shape is then learned by the compiled decoder.

The typed decoders are given the node's frames (``header.frame_id`` = ``world_frame``,
``child_frame_id`` = ``frame_prefix`` + base link; empty ids accepted) and, for ``reference``,
``reference_representation`` (an empty ``representation`` field counts as ``spatial``).

The node sets, before :meth:`~FeedforwardInputs._build_inputs`: ``types`` (its
:class:`~geodyn_ros.ros.common.message_types.MessageTypes`), ``flat``, ``limits``,
``reference_representation``, ``_convert_ref``, ``world_frame``, ``base_frame``, ``order``.
"""
from __future__ import annotations

from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from ..inputs.plausibility import check_plausible, check_plausible_flat
from ..wire.cdr import decode_float64_multiarray, decode_joint_state, decode_odometry, name_cache
from ..wire.conversions import InputError, JointNameMatcher, odometry_from_fields
from ..wire.fast_inputs import FastFlatReference, FastJointState, FastOdometry, FastReference
from ..wire.jets import FlatReferenceDecoder, ReferenceDecoder
from ..wire.typed import TypedFlatReferenceDecoder, TypedReferenceDecoder
from ..wire.typed_raw import (FastTypedFlatReference, FastTypedReference, decode_flat_reference_cdr,
                              decode_reference_jet_cdr, typed_name_cache)

__all__ = ["FeedforwardInputs"]


class FeedforwardInputs:
    """The input side of ``geodyn_node`` (module docstring); mixed into the node class."""

    def _input_types(self) -> dict:
        """``{topic: message class}`` of every input the node may subscribe."""
        return {"reference": self.types.type_of("reference"),
                "flat_reference": self.types.type_of("flat_reference"),
                "odom": Odometry, "joint_states": JointState}

    def _parsers(self) -> dict:
        """``{topic: parse(entry, raw) -> stamp [ns]}`` under the node's ``message_types``."""
        typed = self.types.typed
        return {"reference": self._parse_reference_typed if typed else self._parse_reference_multiarray,
                "flat_reference": self._parse_flat_reference_typed if typed else self._parse_flat_reference_multiarray,
                "odom": self._parse_odom, "joint_states": self._parse_joint_states}

    def _build_inputs(self, model) -> None:
        """The decoders of the model's joints (first model only: a replacement of the same robot
        keeps them)."""
        r, names = self.order, model.joint_names
        self._matcher = JointNameMatcher(names)
        self._js_names = name_cache()
        self._fast_odom = FastOdometry(self.limits)
        self._fast_js = FastJointState(self.limits)
        if self.types.typed:
            self._ref_names = typed_name_cache()
            self._ref_decoder = TypedReferenceDecoder(names, r, representation=self.reference_representation,
                                                      frame_id=self.world_frame, child_frame_id=self.base_frame)
            self._fast_ref = FastTypedReference(self.limits, r)
            if self.flat:
                self._flat_decoder = TypedFlatReferenceDecoder(names, r, frame_id=self.world_frame,
                                                               child_frame_id=self.base_frame)
                self._fast_flat = FastTypedFlatReference(self.limits, r)
        else:
            self._ref_decoder = ReferenceDecoder(names, r)
            self._fast_ref = FastReference(self.limits, r)
            if self.flat:
                self._flat_decoder = FlatReferenceDecoder(names, r)
                self._fast_flat = FastFlatReference(self.limits, r)

    # ------------------------------------------------------------------ reference, flat_reference
    def _parse_reference_typed(self, e, msg) -> int:
        """A serialized ``geodyn_msgs/ReferenceJet`` into ``e.C`` (4, 4) (base pose in
        ``world_frame``), ``e.V`` (rows ``V^(0..r+1)`` in ``reference_representation``), ``e.Q``
        (rows ``q^(0..r+2)``, model joint order); the stamp [ns]."""
        e.converted = False
        stamp = self._fast_ref.decode(msg, e.C, e.V, e.Q)   # -1: not the learned shape, or declined
        if stamp >= 0:
            return stamp
        f = decode_reference_jet_cdr(msg, "reference", self._ref_names)
        stamp = self._ref_decoder.decode(f, e.C, e.V, e.Q)
        check_plausible(self.limits, "reference", e.C, e.V if not self._convert_ref else None, e.Q)
        self._fast_ref.learn(msg, self._matcher.indices(f.names, "reference joint_names"))
        return stamp

    def _parse_flat_reference_typed(self, e, msg) -> int:
        """A serialized ``geodyn_msgs/FlatReference`` into ``e.com`` (rows ``c^(0..r+4)``, world
        axes), ``e.yaw`` (``psi^(0..r+2)``), ``e.Q`` (rows ``q^(0..r+2)``); the stamp [ns]."""
        stamp = self._fast_flat.decode(msg, e.com, e.yaw, e.Q)   # -1: not the learned shape, or declined
        if stamp >= 0:
            return stamp
        f = decode_flat_reference_cdr(msg, "flat_reference", self._ref_names)
        stamp = self._flat_decoder.decode(f, e.com, e.yaw, e.Q)
        check_plausible_flat(self.limits, e.com, e.yaw, e.Q)
        self._fast_flat.learn(msg, self._matcher.indices(f.names, "flat_reference joint_names"))
        return stamp

    def _parse_reference_multiarray(self, e, msg) -> int:
        """The deprecated reference-jet ``Float64MultiArray`` (:mod:`geodyn_ros.ros.wire.jets`);
        as :meth:`_parse_reference_typed`."""
        e.converted = False
        stamp = self._fast_ref.decode(msg, e.C, e.V, e.Q)   # -1: not the learned shape, or declined
        if stamp >= 0:
            return stamp
        ref = decode_float64_multiarray(msg, "reference")
        stamp = self._ref_decoder.decode(ref, e.C, e.V, e.Q)
        check_plausible(self.limits, "reference", e.C, e.V if not self._convert_ref else None, e.Q)
        names = ref.layout.dim[1].label.split(",")[6:]
        self._fast_ref.learn(msg, self._matcher.indices(names, "reference joint columns") + 6)
        return stamp

    def _parse_flat_reference_multiarray(self, e, msg) -> int:
        """The deprecated flat-reference ``Float64MultiArray``; as :meth:`_parse_flat_reference_typed`."""
        stamp = self._fast_flat.decode(msg, e.com, e.yaw, e.Q)   # -1: not the learned shape, or declined
        if stamp >= 0:
            return stamp
        ref = decode_float64_multiarray(msg, "flat_reference")
        stamp = self._flat_decoder.decode(ref, e.com, e.yaw, e.Q)
        check_plausible_flat(self.limits, e.com, e.yaw, e.Q)
        names = ref.layout.dim[1].label.split(",")[4:]
        self._fast_flat.learn(msg, self._matcher.indices(names, "flat_reference joint columns") + 4)
        return stamp

    # ------------------------------------------------------------------ odom, joint_states
    def _parse_odom(self, e, msg) -> int:
        """A serialized ``nav_msgs/Odometry`` (REP 105) into ``e.C`` and the spatial ``e.V0``."""
        stamp = self._fast_odom.decode(msg, e.C, e.V0)   # -1: not the learned shape, or declined
        if stamp >= 0:
            return stamp
        sec, nsec, frame, child, pose, twist = decode_odometry(msg, "odom")
        if frame and frame != self.world_frame:
            raise InputError(f"odom: header.frame_id '{frame}' is not the world frame '{self.world_frame}'")
        odometry_from_fields(child, pose, twist, e.C, e.V0, self.base_frame)
        check_plausible(self.limits, "odom", e.C, e.V0[None, :])
        self._fast_odom.learn(msg)
        return sec * 1_000_000_000 + nsec

    def _parse_joint_states(self, e, msg) -> int:
        """A serialized ``sensor_msgs/JointState`` (by name) into ``e.q``, ``e.qd``."""
        stamp = self._fast_js.decode(msg, e.q, e.qd)
        if stamp >= 0:
            return stamp
        sec, nsec, names, position, velocity = decode_joint_state(msg, "joint_states", self._js_names)
        if len(velocity) == 0:
            raise InputError("joint_states: no velocity field (measured mode needs qdot)")
        self._matcher.gather(names, position, e.q, "joint_states.position")
        self._matcher.gather(names, velocity, e.qd, "joint_states.velocity")
        check_plausible(self.limits, "joint_states", qd=e.qd, q=e.q)
        self._fast_js.learn(msg, self._matcher.indices(names, "joint_states.name"))
        return sec * 1_000_000_000 + nsec
