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

**Measured mode, ``input_policy: latest``** (the default): ``odom``, ``joint_states`` and
``reference`` live in a :class:`~geodyn_ros.ros.inputs.latest_store.LatestStore` and each message is
one compiled call (:meth:`~FeedforwardInputs._on_odom_latest` and its two siblings): decode, accept
and, for ``odom``, the whole cycle up to the written ``feedforward/jet``. The subscription calls
these methods directly (each guards itself as :func:`~geodyn_ros.ros.common.diagnostics.guard`
does). A message or a cycle the kernels do not finish takes :meth:`~FeedforwardInputs._latest_slow`
/ :meth:`~FeedforwardInputs._latest_result`: the parsers above, the same compiled rules, and the
node's own refusal lines.
"""
from __future__ import annotations

from time import time_ns

from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from geodyn_ros.control.sensing import propagate_base

from ..inputs import latest_store as LS
from ..inputs.flat_store import FlatStore, flat_message
from ..inputs.latest_inputs import refusal_line
from ..inputs.plausibility import check_plausible, check_plausible_flat
from ..wire.rcl_counts import publisher_address, rcl_count_function
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

    # ------------------------------------------------------------------ input_policy latest (measured)
    def _build_latest(self, model, depth: int, odom_age_ns: int, js_age_ns: int) -> None:
        """The store of the latest measured inputs (first model only) and the parsers of its full path."""
        jet = self._jet_out.template() if self._jet_spatial else None
        after = self.skew_ns if self.skew_ns else self.tol_ns
        st = LS.LatestStore(self.order, model.n_joints, depth, self.limits, self.stale_ns, after, odom_age_ns,
                            js_age_ns, self._rate_zero, self._convert_ref, jet)
        self._store = st
        self._jet_buf = jet[0] if jet is not None else None
        # the cycle asks rcl whether wrench, efforts, inputs_used have subscribers (rcl_counts); not
        # with the linearization, which the node always finishes itself
        st.set_counts(0 if self.publish_linearization else rcl_count_function(),
                      [publisher_address(p) for p in (self._pub_wrench, self._pub_efforts, self._used.pub)])
        parsers = self._parsers()
        self._latest_parse = (parsers["odom"], parsers["joint_states"], parsers["reference"])
        self._latest_fast = (self._fast_odom, self._fast_js, self._fast_ref)

    def _clock_ns(self) -> int:
        """The node clock [ns], read once per message: the system clock (what rcl reads when ROS
        time is not active) or, under simulated time, rclpy's clock; a clock that went back resets
        the inputs (:meth:`_now_ns`)."""
        ts = self._ts
        if ts is None or ts._ros_time_is_active:
            return self._now_ns()
        now = time_ns()
        if now < self._last_now:
            return self._now_ns()
        self._last_now = now
        return now

    def _on_odom_latest(self, msg) -> None:
        try:
            self.model_source.poll()   # apply a loaded robot_description (between cycles)
            st = self._store
            if st is None:
                self.model_source.refuse_input("odom")
                return
            now = self._clock_ns()
            if msg.__class__ is not bytes:
                msg = bytes(msg)
            I, F, K = st.arrays
            code = LS.odom_message(msg, now, I, F, K, st.T)
            if code == LS.OK:   # the jet the kernel wrote; nobody subscribes the other outputs
                self._jet_raw(self._jet_buf)
                self.diag.ok()
                self.diag.clear()
                return
            if code in (LS.DECLINED, LS.REFUSED):
                code = self._latest_slow(LS.ODOM, msg, now, code)
                if code is None:
                    return
            self._latest_result(code, now, False)
        except Exception as exc:  # noqa: BLE001  no input may kill a node (as diagnostics.guard)
            self.diag.exception("odom", exc)

    def _on_joint_states_latest(self, msg) -> None:
        try:
            self.model_source.poll()
            st = self._store
            if st is None:
                self.model_source.refuse_input("joint_states")
                return
            now = self._clock_ns()
            if msg.__class__ is not bytes:
                msg = bytes(msg)
            I, F, K = st.arrays
            code = LS.js_message(msg, now, I, F, K)
            if code:
                self._latest_slow(LS.JS, msg, now, code)
        except Exception as exc:  # noqa: BLE001
            self.diag.exception("joint_states", exc)

    def _on_reference_latest(self, msg) -> None:
        try:
            self.model_source.poll()
            st = self._store
            if st is None:
                self.model_source.refuse_input("reference")
                return
            now = self._clock_ns()
            if msg.__class__ is not bytes:
                msg = bytes(msg)
            I, F, K = st.arrays
            code = LS.ref_message(msg, now, I, F, K)
            if code:
                self._latest_slow(LS.REF, msg, now, code)
        except Exception as exc:  # noqa: BLE001
            self.diag.exception("reference", exc)

    def _latest_slow(self, t: int, msg, now: int, code: int):
        """A message the kernel did not accept: REFUSED (decoded, its stamp refused: the line of
        :meth:`.input_sync.TopicBuffer.check`) or DECLINED (the full path: decoded into the
        scratch entry, or refused with its line; its shape learned; then the same compiled
        acceptance). Returns the odom's cycle code, or None (refused and reported, or no cycle)."""
        st = self._store
        topic = LS.TOPICS[t]
        try:
            if code == LS.DECLINED:
                e = st.entry(t)
                stamp = self._latest_parse[t](e, msg)   # raises InputError
                st.learn(t, self._latest_fast[t].spec())
                code = LS.accept(st.I, t, stamp, now)
            if code == LS.REFUSED:
                self._bufs[topic].check(st.stamp(), now, self.stale_ns)   # raises InputError
                raise InputError(f"{topic}: stamp refused")   # pragma: no cover (check raised)
        except InputError as exc:
            self.diag.problem(topic, str(exc))
            return None
        if t != LS.ODOM:
            return None
        if not self._rate_zero:
            return LS.NO_CYCLE
        I, F, _ = st.arrays
        return LS.cycle(I, F, st.T, stamp, now, False)

    def _latest_timer_cycle(self, now: int) -> None:
        """The cycle of a timer tick (``rate_hz > 0``) at the node clock ``now``: the held odom
        propagated (:func:`~geodyn_ros.control.sensing.propagate_base`) within ``odom_max_age``."""
        st = self._store
        held = st.held(LS.ODOM)
        if held is None:
            return
        t_odom, e = held
        age = now - t_odom
        if age > st.max_age(LS.ODOM) or age < -st.max_age(LS.ODOM):
            self.diag.problem("odom", refusal_line("odom", t_odom, st.max_age(LS.ODOM), now))
            return
        propagate_base(e.C, e.V0, age * 1e-9, out=st.C)
        st.V[0] = e.V0
        st.I[LS.C_ODOM] = t_odom
        I, F, _ = st.arrays
        self._latest_result(LS.cycle(I, F, st.T, now, now, True), now, True)

    def _latest_result(self, code: int, now: int, timer: bool) -> None:
        """Finish or report a cycle of the store (module docstring; the kernel's codes)."""
        st = self._store
        while code == LS.CONVERT:   # a non-spatial reference, converted once (the node's rule)
            e = st.entry(LS.REF, int(st.I[LS.C_SLOT]))
            if not self._convert_reference(e):
                return
            st.set_converted(e.slot)
            I, F, _ = st.arrays
            code = LS.cycle(I, F, st.T, int(st.I[LS.C_T]), now, timer)
        t, t_odom, t_js, t_ref = st.used()
        if code == LS.NO_CYCLE:
            return
        if code in (LS.JS_NONE, LS.JS_AGE):
            self.diag.problem("joint_states", refusal_line("joint_states", None if code == LS.JS_NONE else t_js,
                                                           st.max_age(LS.JS), t))
            return
        if code == LS.ODOM_FRESH:
            self._fresh("odom", t, now)
            return
        if code == LS.NO_REF:
            self._no_reference(t)
            return
        if code == LS.REF_FRESH:
            self._fresh("reference", t_ref, now)
            return
        C, V, Q, W, tau = st.C, st.V, st.Q, st.W, st.tau
        jet = self._jet_buf if code in (LS.OK, LS.SUBS) else None   # NOT_WRITTEN, ID_DECLINED: _finish writes
        if code == LS.ID_DECLINED:   # the validating path raises the precise ValueError, or answers
            try:
                res = self._ws.inverse_dynamics(C, V, Q)
            except ValueError as exc:
                self.diag.problem("dynamics", f"inverse dynamics rejected the inputs: {exc}")
                return
            W, tau = res.base_wrench, res.tau
        if code == LS.NONFINITE:
            self.diag.problem("nonfinite", "inverse dynamics produced NaN/Inf; not published")
            return
        if not self._finish(t, C, V, Q, W, tau, jet):
            return
        if code not in (LS.OK, LS.SUBS):   # (the kernel counts the ages of the cycles it finished)
            LS.add_ages(st.I, t)
        if self._used_subs():
            self._used.publish((t, t_odom, t_js, t_ref))
        self._finish_linearization(t, C, V, Q, W, tau)

    # ------------------------------------------------------------------ flat mode, typed, rate_hz 0
    def _build_flat(self, model) -> None:
        """The flat store (:mod:`~geodyn_ros.ros.inputs.flat_store`) when the fused path applies:
        typed messages, a cycle per message, a plain model (the flat map's hot kernel); else None."""
        old = self._flat_store
        if old is not None:   # back to the buffer of the full path, with the store's stamp order and counts
            buf = self._bufs["flat_reference"] = self._flat_buf
            buf.last_stamp, buf.accepted = old.topic.last_stamp, old.topic.accepted
            buf.received = buf.received or old.topic.received
        self._flat_store, self._flat_buf = None, self._bufs["flat_reference"]
        if not (self.types.typed and self._rate_zero and model is model._plain):
            return
        outs = ((self._jet_out, self._desired_out, self._flat_out, self._rotor_out)
                if self.publish_jet and self.output_representation == "spatial" else None)
        st = FlatStore(self.order, model.n_joints, self.limits, self.stale_ns, self._rate_zero, outs, self.allocation)
        st.set_model(model, self.gravity, self.allocation)
        st.set_counts(0 if self.publish_linearization else rcl_count_function(),
                      [publisher_address(p) for p in (self._pub_wrench, self._pub_efforts)])
        buf = self._flat_buf   # (the stamps never go back across a model change)
        st.carry(buf.last_stamp, buf.accepted, buf.received)
        self._flat_store = st
        self._bufs["flat_reference"] = st.topic

    def _on_flat_reference_fast(self, msg) -> None:
        """``flat_reference``: one compiled call (:func:`~geodyn_ros.ros.inputs.flat_store.flat_message`)
        from the bytes to the four written outputs; anything else takes the full path."""
        try:
            self.model_source.poll()
            st = self._flat_store
            if st is None:   # no model yet, or not the fused path's: the full path (_receive)
                self._receive_flat(msg)
                return
            now = self._clock_ns()
            if msg.__class__ is not bytes:
                msg = bytes(msg)
            I, F, K = st.arrays
            T1, T2, T3, T4 = st.T
            code = flat_message(msg, now, I, F, K, T1, T2, T3, T4)
            if code == LS.OK:   # every output written; nobody subscribes wrench or efforts
                b = st.bufs
                self._jet_raw(b[0])
                self._desired_raw(b[1])
                self._flat_raw(b[2])
                if self._rotors_raw is not None:
                    self._rotors_raw(b[3])
                self.diag.ok()
                self.diag.clear()
                return
            self._flat_slow(msg, now, code)
        except Exception as exc:  # noqa: BLE001  no input may kill a node (as diagnostics.guard)
            self.diag.exception("flat_reference", exc)

    def _flat_slow(self, msg, now: int, code: int) -> None:
        """A message or cycle :func:`flat_message` did not finish: the full path (decode, refusal,
        freshness, ``GeodynNode._flat_cycle``), as before the store."""
        st = self._flat_store
        try:
            if code == LS.DECLINED:
                stamp = self._parse_flat_reference_typed(st.entry(), msg)   # raises InputError
                st.learn(self._fast_flat.spec())
                st.accept(stamp, now, self.stale_ns)                        # raises InputError
            else:
                stamp = st.stamp()
                if code == LS.REFUSED:
                    st.topic.check(stamp, now, self.stale_ns)               # raises InputError
        except InputError as exc:
            self.diag.problem("flat_reference", str(exc))
            return
        if self._fresh("flat_reference", stamp, now):   # (FRESH: it reports)
            self._flat_cycle(stamp, st.entry())
