"""``geodyn_node``'s outputs: the publishers, the serialized templates, and the publication of a cycle.

:class:`FeedforwardOutputs` is a mixin of :class:`~geodyn_ros.ros.nodes.geodyn_node.GeodynNode`
(topics and layouts in that module's docstring). It owns

* the publishers: ``feedforward/wrench``, ``feedforward/joint_efforts``, ``feedforward/jet``; in
  flat mode ``desired/state``, ``feedforward/flat_jet`` and (with an allocation)
  ``feedforward/rotor_speeds``; with ``publish_linearization`` ``~/linearization`` and its latched
  ``~/linearization/labels``. The jet topics have the types of the node's ``message_types``
  (:mod:`geodyn_ros.ros.common.message_types`): the ``geodyn_msgs`` messages, or the deprecated
  ``Float64MultiArray`` layouts;
* per model, the messages every cycle rewrites in place (templates serialized once by rclpy, the
  stamp and values written into the bytes: :mod:`geodyn_ros.ros.wire.cdr`,
  :mod:`geodyn_ros.ros.wire.typed_raw`, or for the layouts :mod:`geodyn_ros.ros.wire.raw_outputs`),
  so no Python message object is built at 1 kHz; the typed ones carry ``header.frame_id`` =
  ``world_frame`` and ``child_frame_id`` = ``base_frame`` (``feedforward/rotor_speeds``:
  ``header.frame_id`` = ``base_frame``);
* :meth:`~FeedforwardOutputs._publish` and :meth:`~FeedforwardOutputs._publish_linearization`.

The node sets, before calling these: ``types`` (its ``MessageTypes``), ``flat``, ``publish_jet``, ``publish_linearization``,
``lin_representation``, ``output_representation``, ``world_frame``, ``gravity``, ``base_frame``,
``base_link``, ``model``, ``allocation``, ``rotor_names``, ``order`` and ``diag``.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

import geodyn_ros as gd
from geodyn_ros.lie import Ad_inv

from ..wire.cdr import joint_state_template, wrench_stamped_template
from ..wire.jets import LinearizationPacker, linearization_labels_json
from ..wire.raw_outputs import DesiredStateOutput, FlatJetOutput, JetOutput, RotorSpeedOutput
from ..wire.typed import TypedLinearizationPacker
from ..wire.typed_raw import TypedDesiredStateOutput, TypedJetOutput, TypedRotorSpeedOutput

__all__ = ["FeedforwardOutputs"]


class FeedforwardOutputs:
    """The output side of ``geodyn_node`` (module docstring); mixed into the node class."""

    def _create_publishers(self, qos, rotor_speeds: bool) -> None:
        """Every output publisher (``qos``: the outputs' profile); ``rotor_speeds``: flat mode with an
        ``actuation_config`` publishes ``feedforward/rotor_speeds``."""
        self._pub_wrench = self.create_publisher(WrenchStamped, "feedforward/wrench", qos)
        self._pub_efforts = self.create_publisher(JointState, "feedforward/joint_efforts", qos)
        kind = self.types.type_of
        self._pub_jet = self.create_publisher(kind("jet"), "feedforward/jet", qos)
        # rclpy's Publisher calls without `with handle` (1.1 -> 0.2 us): destroyed only after the executor stops
        self._wrench_subs = self._pub_wrench.handle.get_subscription_count
        self._efforts_subs = self._pub_efforts.handle.get_subscription_count
        self._jet_raw = self._pub_jet.handle.publish_raw
        if self.flat:
            self._pub_desired = self.create_publisher(kind("desired"), "desired/state", qos)
            self._pub_flat = self.create_publisher(kind("flat_jet"), "feedforward/flat_jet", qos)
            self._pub_rotors = (self.create_publisher(kind("rotor_speeds"), "feedforward/rotor_speeds", qos)
                                if rotor_speeds else None)
            self._desired_raw, self._flat_raw = self._pub_desired.handle.publish_raw, self._pub_flat.handle.publish_raw
            self._rotors_raw = self._pub_rotors.handle.publish_raw if rotor_speeds else None
        if self.publish_linearization:
            self._pub_lin = self.create_publisher(kind("linearization"), "~/linearization", qos)
            latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                                 reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._pub_lin_labels = self.create_publisher(String, "~/linearization/labels", latched)

    def _build_outputs(self, model) -> None:
        """The per-model output messages and writers (first model only: a replacement of the same
        robot keeps them), and the linearization labels."""
        r, n, names = self.order, model.n_joints, model.joint_names
        typed = self.types.typed
        frames = {"frame_id": self.world_frame, "child_frame_id": self.base_frame}
        if self.flat and typed:   # (geodyn_ros.ros.wire.typed_raw)
            self._desired_out = TypedDesiredStateOutput(names, r, **frames)
            self._flat_out = TypedJetOutput(names, r, **frames, representation="body")
            self._rotor_out = (None if self.allocation is None
                               else TypedRotorSpeedOutput(self.rotor_names, r, frame_id=self.base_frame))
        elif self.flat:
            self._desired_out = DesiredStateOutput(names, r)
            self._flat_out = FlatJetOutput(names, r)
            self._rotor_out = None if self.allocation is None else RotorSpeedOutput(self.rotor_names, r)
        if self.flat:   # feedforward/flat_jet (T, tau_b, tau) in one compiled call, either type
            self._write_flat_jet = self._flat_out.write_flat if typed else self._flat_out.write_ro
        self._wrench_msg = WrenchStamped()
        self._wrench_msg.header.frame_id = self.base_frame
        self._efforts_msg = JointState()
        self._efforts_msg.name = list(model.joint_names)
        self._efforts_msg.effort = [0.0] * n
        # the three outputs of every cycle are published serialized: templates serialized once by
        # rclpy, the stamp and values rewritten in place (geodyn_ros.ros.wire.cdr)
        self._raw_wrench = wrench_stamped_template(self._wrench_msg)
        self._raw_efforts = joint_state_template(self._efforts_msg)
        self._jet_out = (TypedJetOutput(names, r, **frames, representation=self.output_representation) if typed
                         else JetOutput(names, r))
        self._jet_spatial = self.publish_jet and self.output_representation == "spatial" and not self.flat
        if self.publish_linearization:
            nv = 6 + n
            self._lin = (TypedLinearizationPacker(gd.state_labels(model), gd.input_labels(model),
                                                  self.lin_representation, **frames) if typed
                         else LinearizationPacker(2 * nv, nv))
            self._publish_linearization_labels()

    def _publish_linearization_labels(self) -> None:
        body = self.lin_representation == "body"
        twist = ("body twist Ad_C^-1 V (base axes)" if body else "spatial twist V (world axes)")
        wrench = ("body wrench Ad_C^T W (moment about the base-link origin, base axes)" if body
                  else "spatial wrench W (moment about the world origin, world axes)")
        perturbation = (
            "z = (delta, dq, dV, dqd): C -> C exp(hat(delta)) with delta = (dw, dv) angular first "
            f"in base axes, q -> q + dq, V -> V + dV, qd -> qd + dqd; V is the {twist}, angular "
            f"first. w = (dW, dtau): W is the {wrench}, moment first; tau the joint torques.")
        text = linearization_labels_json(
            self.lin_representation, gd.state_labels(self.model), gd.input_labels(self.model),
            perturbation=perturbation, model=self.model.name, base_link=self.base_link,
            world_frame=self.world_frame, gravity=[float(g) for g in self.gravity])
        self._pub_lin_labels.publish(String(data=text))

    def _publish(self, stamp_ns: int, W0_body, W, tau, jet=None) -> None:
        """Publish the outputs of every cycle; the convenience topics ``feedforward/wrench`` and
        ``feedforward/joint_efforts`` only while they have a subscriber (a sub-microsecond query
        per cycle, asked by the caller: a new subscriber gets the very next cycle; ``W0_body`` None:
        no subscriber). ``jet``: the jet's serialized message, already written (else from ``W``)."""
        if W0_body is not None:
            w = self._raw_wrench
            w.set_stamp(stamp_ns)
            w.fields["torque"][:] = W0_body[:3]
            w.fields["force"][:] = W0_body[3:]
            self._pub_wrench.publish(w.payload())
        if self._efforts_subs():
            e = self._raw_efforts
            e.set_stamp(stamp_ns)
            if "effort" in e.fields:
                e.fields["effort"][:] = tau[0]
            self._pub_efforts.publish(e.payload())
        if jet is not None:
            self._jet_raw(jet)
        elif self.publish_jet:
            self._jet_raw(self._jet_out.write(stamp_ns, W, tau))

    def _publish_linearization(self, stamp_ns: int, C, V, Q, W, W0_body, tau) -> bool:
        """Linearize about ``(C, V^(0), q^(0), q^(1))`` and ``(W^(0), tau^(0))`` and publish;
        on failure report the problem, publish nothing and return False."""
        if self.lin_representation == "body":
            twist = (Ad_inv(C) @ V[0])[None, :]
            wrench = W0_body[None, :]
        else:
            twist, wrench = V[:1], W[:1]
        try:
            lin = gd.linearize(self.model, C, twist, Q[:2], wrench, tau[:1], gravity=self.gravity,
                               representation=self.lin_representation)
        except Exception as exc:  # noqa: BLE001  an optional output must not stop the feedforward
            self.diag.problem("linearization", f"linearization failed ({type(exc).__name__}: "
                              f"{exc}); feedforward published, ~/linearization not")
            return False
        if not (np.isfinite(lin.A).all() and np.isfinite(lin.B).all()):
            self.diag.problem("linearization", "linearization produced NaN/Inf; feedforward "
                              "published, ~/linearization not")
            return False
        self._pub_lin.publish(self._lin.pack(stamp_ns, lin.A, lin.B))
        return True
