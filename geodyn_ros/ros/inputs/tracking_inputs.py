"""Inputs and live gains shared by the two controller nodes.

``geodyn_controller`` (ideal actuators) and ``geodyn_actuated_controller`` (rotors, elastic
joints) read the same measured state and reference and tune the same gains at run time; this
mixin holds that part once.

Inputs (the node subscribes them with :meth:`TrackingInputs._subscribe_tracking_inputs`)

* ``odom`` (``nav_msgs/Odometry``, REP 105) -> ``_C`` (4, 4) base pose in the world,
  ``_V`` (6,) spatial twist ``(w, v)`` (world axes, about the world origin), ``_Vb`` (6,) body
  twist (base axes);
* ``joint_states`` (``sensor_msgs/JointState``, by name) -> ``_q``, ``_qd`` (n,) in
  ``model.joint_names`` order;
* ``reference`` (``geodyn_msgs/ReferenceJet``; with ``message_types: multiarray``, deprecated, the
  reference-jet ``Float64MultiArray``) -> ``_Cd`` (4, 4) desired base pose in the world,
  ``_Vd`` (2, 6) spatial twist rows 0..1 ``(w, v)``, ``_Qd`` (3, n) joint rows ``q_d^(0..2)``. A
  typed reference must be in the ``spatial`` representation and name the base link
  (``frame_prefix`` + base link) in ``child_frame_id``, or leave it empty; joints by name.

The ``message_types`` parameter (:mod:`geodyn_ros.ros.common.message_types`) is read by
:meth:`TrackingInputs._init_input_policy` into ``self.types``; every jet input of the node
follows it.

Each accepted message stores its stamp in ``_stamps[key]`` and calls the node's
``_try_command()``; a refused one (:class:`~geodyn_ros.ros.wire.conversions.InputError`) clears the
stamp and is reported on ``/diagnostics``. Before the node has a model (robot_description from
the topic) inputs are reported as not used. A state message (``_STATE_KEYS``) stamped like the
last command is a lock-step simulator republishing a state it still waits on (its
``command_timeout`` ran out: the command was lost or only late, e.g. on a loaded machine): the
node answers it again with :meth:`TrackingInputs._answer_again`, which re-sends the command
already computed for that stamp (``_last_cmd``: ``(stamp, omega, u)`` of the command publisher,
set by the nodes that keep it) unchanged. Computing it anew would advance the control law's
state (the LQR's rotor-speed estimate) a second time for one step, and the loop would then
depend on the wall clock. Nodes without ``_last_cmd`` recompute (their law has no state).

Input policy (:mod:`geodyn_ros.ros.inputs.latest_inputs`, parameter ``input_policy``): with
``exact`` the above, unchanged (``sync_stamps``: a command when every input carries one stamp,
else the state of each new ``joint_states`` with inputs at most ``stale_timeout`` older). With
``latest`` (default) a command per accepted ``odom``, stamped with it: ``joint_states`` (and
``motor_states``) are decoded into :class:`~geodyn_ros.ros.inputs.latest_inputs.HeldJoints` and
the newest one is propagated to the odom's stamp within ``<stream>_max_age``
(:meth:`TrackingInputs._due_latest`); every other input is its newest accepted message, used if
at most ``stale_timeout`` older than the cycle. A sample over its maximum age or a stale input
skips the cycle with a ``/diagnostics`` line; an odom not newer than the last cycle's is refused,
and so is a sensor sample stamped more than ``stale_timeout`` ahead of the node clock (it would
otherwise lock its stream out).
``sync_stamps`` then has no effect. Each command is followed on ``~/inputs_used`` (stamps of the
inputs used) and, every second, the ages per stream on ``/diagnostics``
(:meth:`TrackingInputs._record_used`).

Live gains: :meth:`TrackingInputs._on_set_parameters` validates ``kp_* / kd_*`` (finite,
>= 0, :class:`~geodyn_ros.control.feedback.TrackingGains`; every loop they change stable in
discrete time at the control period, :meth:`TrackingInputs._live_gain_refusal`) and
``use_feedforward`` (bool); a bad value is refused with the reason and the old values kept. The node applies accepted values in
``_apply_live(gains, use_feedforward)``, which may still refuse by returning a reason.
"""
from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.sensing import propagate_base
from geodyn_ros.lie import Ad_inv

from ..wire.cdr import decode_float64_multiarray
from ..wire.conversions import InputError, JointNameMatcher, parse_odometry, stamp_to_ns
from ..common.diagnostics import guard
from ..wire.jets import ReferenceDecoder
from ..common.message_types import MessageTypes
from .latest_inputs import AgeStats, HeldJoints, InputsUsed, check_policy_parameters, max_age_ns, refusal
from .step_cycles import MANIFEST_DEPTH, MANIFEST_TOPIC, PendingSteps, check_cycle_parameter, decode_manifest

__all__ = ["GAINS", "TrackingInputs"]

#: the feedback gains (parameter names = TrackingGains fields), dynamic in both controllers
GAINS = ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint")


class TrackingInputs:
    """Mixin of the controller nodes (module docstring). The node provides ``model``, ``base_frame`` (frame_prefix + base link),
    ``model_source``, ``diag``, ``gains``, ``use_ff``, ``_stamps`` and ``_try_command()``."""

    #: keys whose new stamp re-arms a command already given for that stamp
    _STATE_KEYS = ("odom", "joint_states")
    #: input_policy latest (set by _init_input_policy)
    latest = False
    #: cycle sim_steps (set by _init_input_policy; step_cycles)
    steps = False
    #: sim_steps: the simulator's manifest layout (a step_cycles.ManifestPeek), once a step was commanded
    _peek = None

    def _init_input_policy(self, p: dict, used: dict, depth: int) -> tuple:
        """Read and check ``input_policy``, the maximum ages and the reliabilities of ``p``; make the
        ``~/inputs_used`` publisher for ``used`` (``_stamps`` key -> topic name, in the record's
        order after the cycle) and, with ``latest``, the age summary (every second, wall clock).
        ``sync`` becomes ``sync_stamps`` under ``exact``, False under ``latest``. Returns the QoS
        of the sensor subscriptions and of the other inputs (depth ``depth``)."""
        from ..common.runtime import control_qos
        self.types = MessageTypes(self, p.get("message_types", "typed"))
        try:
            check_policy_parameters(p)
        except ValueError as exc:
            from ..common.params import ConfigurationError
            raise ConfigurationError(str(exc)) from None
        check_cycle_parameter(p)
        self.latest = p["input_policy"] == "latest"
        self.steps = p.get("cycle", "odom") == "sim_steps"
        self._steps = None   # sim_steps: the step manifests waiting for their cycle (made with stale_ns)
        self._manifest_said = -1e18   # wall time of the last WARN line on a refused manifest
        self._odom_age_ns = int(round(p.get("odom_timeout", 0.04) * 1e9))
        self.sync = p["sync_stamps"] and not self.latest
        self._max_age = {k: max_age_ns(p, k) for k in ("joint_states", "motor_states") if f"{k}_max_age" in p}
        self._held = {}   # stream -> HeldJoints (latest; made with the model)
        self._first_odom_ns = None   # latest: the first cycle time, for the "never arrived" line
        self._said_waiting = set()
        self._used_keys = tuple(used)
        self._used = InputsUsed(self, tuple(used.values()), control_qos(depth))
        self._used_stamps = [0] * (1 + len(used))
        self._ages = AgeStats(tuple(used.values()))
        if self.latest:
            from rclpy.clock import Clock, ClockType
            self._skipped_at_summary = 0
            self.create_timer(1.0, guard(self, self._age_summary, "diagnostics timer"),
                              clock=Clock(clock_type=ClockType.STEADY_TIME))
        return control_qos(depth, p["sensor_reliability"]), control_qos(depth, p["input_reliability"])

    def _hold(self, stream: str, n: int) -> None:
        """Under ``latest``: hold the newest sample of ``stream`` (n positions and rates)."""
        if self.latest:
            self._held[stream] = HeldJoints(stream, n, self._max_age[stream])
        if self.steps and stream == "joint_states":   # the odometry is held too, propagated to each step's time
            self._held["odom"] = HeldJoints("odom", 0, self._odom_age_ns, shapes=((4, 4), (6,), (6,)))

    def _subscribe_tracking_inputs(self, qos_sensor, qos) -> None:
        self.create_subscription(Odometry, "odom", guard(self, self._on_odom, "odom"), qos_sensor)
        self.create_subscription(JointState, "joint_states", guard(self, self._on_joint_states, "joint_states"),
                                 qos_sensor)
        self.create_subscription(self.types.type_of("reference"), "reference",
                                 guard(self, self._on_reference, "reference"), qos)
        self._subscribe_manifest(qos)

    def _subscribe_manifest(self, qos) -> None:
        """``cycle: sim_steps``: the simulator's step manifest (:mod:`~geodyn_ros.ros.inputs.step_cycles`)."""
        if self.steps:
            import copy
            qos = copy.copy(qos)
            qos.depth = MANIFEST_DEPTH   # a storm must not push the simulator's manifest out of the queue
            self.create_subscription(Float64MultiArray, MANIFEST_TOPIC,
                                     guard(self, self._on_manifest, MANIFEST_TOPIC), qos, raw=True)
            self.get_logger().info(f"cycle sim_steps: one command per {MANIFEST_TOPIC} step manifest of a lock-step "
                                   "simulator (lockstep_cycles: steps)")

    def _setup_tracking_inputs(self, model) -> None:
        """Joint matcher, reference decoder and input buffers for ``model``'s joints (after
        ``base_frame`` is set: a typed reference's ``child_frame_id`` is checked against it)."""
        n, names = model.n_joints, model.joint_names
        self._matcher = JointNameMatcher(names)
        if self.types.typed:
            from ..wire.typed import TypedReferenceDecoder
            self._ref_decoder = TypedReferenceDecoder(names, 0, representation="spatial",
                                                      child_frame_id=self.base_frame)
        else:
            self._ref_decoder = ReferenceDecoder(names, 0)
        self._C, self._V, self._Vb = np.eye(4), np.zeros(6), np.zeros(6)
        self._q, self._qd = np.zeros(n), np.zeros(n)
        self._Cd, self._Vd, self._Qd = np.eye(4), np.zeros((2, 6)), np.zeros((3, n))
        self._hold("joint_states", n)

    # ------------------------------------------------------------------ inputs
    def _take(self, key: str, parse) -> None:
        self.model_source.poll()   # a loaded robot_description takes effect between commands
        if self.model is None:
            self.model_source.refuse_input(key)
            return
        try:
            stamp = parse()
            if self.latest:
                if key == "odom" or key in self._held:   # a sensor stamp far ahead would lock the stream out
                    ahead = stamp - self.get_clock().now().nanoseconds
                    if ahead > self.stale_ns:
                        raise InputError(f"{key}: stamp {ahead * 1e-9:.4f} s in the future of the node clock (more "
                                         f"than stale_timeout {self.stale_ns * 1e-9:g} s; use_sim_time mismatch?)")
                held = self._held.get(key)
                if held is not None:   # joint_states, motor_states: kept if newest, used by the next odom's cycle
                    if not held.offer(stamp):
                        self.diag.problem(key, f"{key}: stamp {stamp * 1e-9:.9f} s is not newer than the newest "
                                          f"accepted {held.sample.stamp_ns * 1e-9:.9f} s; not used")
                    elif self.steps:   # (sim_steps: odom too) it may complete a step's barrier
                        if key == "odom":
                            self._odom_ns = stamp   # the failsafe's age: the cycle time minus this stamp
                        self._try_command()
                    return
                self._stamps[key] = stamp
                if key == "odom":
                    self._odom_ns = self.get_clock().now().nanoseconds   # its receipt: the failsafe's watchdog
                    self._try_command()
                elif self.steps:   # the step's reference or feedforward may complete its barrier
                    self._try_command()
                return
            if key in self._STATE_KEYS and stamp == self._last_cmd_stamp:
                self._stamps[key] = stamp
                self._answer_again(stamp)   # the simulator republished a state it waits on
                return
            self._stamps[key] = stamp
        except InputError as exc:
            self._stamps[key] = None
            self.diag.problem(key, str(exc))
            return
        self._try_command()

    def _answer_again(self, stamp: int) -> None:
        """Answer a republished state stamped ``stamp`` (module docstring): the same command again."""
        last = getattr(self, "_last_cmd", None)
        if last is not None and last[0] == stamp:
            self.commands.publish(*last)
            return
        self._last_cmd_stamp = None
        self._try_command()

    def _on_odom(self, msg) -> None:
        def parse():   # (called once the model is there: the buffers exist)
            C, V, Vb = self._held["odom"].scratch if self.steps else (self._C, self._V, self._Vb)
            parse_odometry(msg, C, V, self.base_frame, Vb)
            return stamp_to_ns(msg.header.stamp)
        self._take("odom", parse)

    def _on_joint_states(self, msg) -> None:
        def parse():
            q, qd = self._held["joint_states"].scratch if self.latest else (self._q, self._qd)
            self._matcher.gather(msg.name, msg.position, q, "joint_states.position")
            self._matcher.gather(msg.name, msg.velocity, qd, "joint_states.velocity")
            return stamp_to_ns(msg.header.stamp)
        self._take("joint_states", parse)

    # ------------------------------------------------------------------ input_policy latest
    def _due_latest(self, needed) -> int | None:
        """Under ``latest``: the cycle's time (the newest odom's stamp) with the held samples of
        ``needed`` propagated to it into ``_q``, ``_qd`` (and ``_th``, ``_thd``), and every other
        input of ``needed`` at most ``stale_timeout`` older; else None (reported, except while an
        input has never arrived). A returned time is marked as commanded (``_last_cmd_stamp``).
        ``cycle: sim_steps``: :meth:`_due_step` instead."""
        if self.steps:
            return self._due_step(needed)
        s = self._stamps
        t = s["odom"]
        if t is None:
            return None
        if self._last_cmd_stamp is not None and t <= self._last_cmd_stamp:
            self.diag.problem("odom", f"odom: stamp {t * 1e-9:.9f} s is not after the last cycle's "
                              f"{self._last_cmd_stamp * 1e-9:.9f} s; no second command")
            return None
        if self._first_odom_ns is None:
            self._first_odom_ns = t
        for k in needed:
            held = self._held.get(k)
            if held is not None:
                if held.sample.data is None:
                    return self._waiting(k, t)
                got = held.take_into(t, *((self._q, self._qd) if k == "joint_states" else (self._th, self._thd)))
                if got.__class__ is str:
                    return self._lost(k, t, got)
                s[k] = got
            elif k != "odom":
                if s[k] is None:
                    return self._waiting(k, t)
                if t - s[k] > self.stale_ns:
                    return self._lost(k, t, f"{k}: newest {(t - s[k]) * 1e-9:.4f} s older than the cycle time "
                                      f"{t * 1e-9:.6f} s (stale_timeout {self.stale_ns * 1e-9:g} s); cycle skipped")
        self._last_cmd_stamp = t
        return t

    def _lost(self, k: str, t: int, why: str) -> None:
        """An input ``k`` of the cycle at ``t`` is stale or beyond its maximum age: the cycle is
        skipped and reported (the controllers' failsafe overrides this: it holds instead,
        :meth:`~geodyn_ros.ros.inputs.failsafe_inputs.FailsafeInputs._lost`)."""
        self.diag.problem(k, why)
        return None

    def _waiting(self, k: str, t: int) -> None:
        """An input that has never arrived while odometry flows: nothing is commanded, and after
        1 s of odometry that is said once (WARN on ``/diagnostics``, naming the input), not at
        every cycle: a node that waits must not wait silently (a vehicle without ``joint_states``
        or ``motor_states`` publishers; PX4 SITL's first flight here)."""
        if k not in self._said_waiting and t - self._first_odom_ns >= 1_000_000_000:
            self._said_waiting.add(k)
            hint = " (a vehicle without elastic joints: elastic_joints false)" if k == "motor_states" else ""
            self.diag.report(DiagnosticStatus.WARN, f"{k}: none received in {(t - self._first_odom_ns) * 1e-9:.1f} s "
                             f"of odometry; nothing is commanded until it arrives{hint}")
        return None

    # ------------------------------------------------------------------ cycle sim_steps (step_cycles)
    def _on_manifest(self, raw: bytes) -> None:
        steps = self._steps
        if steps is None:   # (with the first manifest: the node's diag exists by then)
            steps = self._steps = PendingSteps(self.stale_ns)
            self.diag.counters["manifests_refused"] = 0   # on every status from now on
        peek = self._peek
        if peek is not None:   # a storm is refused here, before anything is decoded (ManifestPeek)
            if not peek.same_layout(raw):
                steps.refused += 1
                self._manifest_refused(None, f"not the layout of the simulator's manifests ({len(raw)} bytes, not "
                                             f"{peek.length})")
                return
            t = peek.step_time(raw)
            if t is not None:
                last = self._last_cmd_stamp
                if last is not None and t < last:
                    return       # a step already commanded: nothing to do (as below)
                why = steps.too_far(t, self.get_clock().now().nanoseconds)
                if why is not None:
                    self._manifest_refused(t, why)
                    return
        self.model_source.poll()
        if self.model is None:
            self.model_source.refuse_input(MANIFEST_TOPIC)
            return
        try:
            msg = decode_float64_multiarray(raw, MANIFEST_TOPIC)   # (rclpy's decoding, with size limits)
            t, stamps = decode_manifest(msg)
        except ValueError as exc:
            self.diag.problem(MANIFEST_TOPIC, f"{MANIFEST_TOPIC}: {exc}; not a step manifest")
            return
        last = self._last_cmd_stamp
        if last is not None and t <= last:
            if t == last:   # the simulator republished the step it waits on: the same command again
                steps.put(t, stamps)   # (recomputed by a node that keeps no command)
                self._answer_again(t)
                steps.forget_through(t)
            return
        why = steps.offer(t, stamps, self.get_clock().now().nanoseconds, raw if self._peek is None else None)
        if why is not None:
            self._manifest_refused(t, why)
            return
        self._try_command()

    def _manifest_refused(self, t: int | None, why: str) -> None:
        """Count a refused step manifest (``/diagnostics`` value ``manifests_refused``) and say it in
        one WARN line at most once a second (a storm of them is one line a second, not a log flood)."""
        import time
        n = self.diag.counters["manifests_refused"] = self._steps.refused
        now = time.monotonic()
        if now - self._manifest_said >= 1.0:
            self._manifest_said = now
            which = "a step manifest" if t is None else f"the step manifest of t = {t * 1e-9:.6f} s"
            self.diag.report(DiagnosticStatus.WARN, f"{MANIFEST_TOPIC}: {which} refused: {why} ({n} refused so far; "
                             f"another publisher on {MANIFEST_TOPIC}?)")

    def _due_step(self, needed) -> int | None:
        """``cycle: sim_steps``: the time of the pending step whose barrier is complete (the one its
        reference and feedforward are stamped with; module docstring of
        :mod:`~geodyn_ros.ros.inputs.step_cycles`), with the odometry, joints
        (and motors) brought to it into ``_C``, ``_V``, ``_Vb``, ``_q``, ``_qd`` (``_th``,
        ``_thd``); else None. Odometry older than ``odom_timeout``: the failsafe's hold cycle, and None."""
        steps = self._steps
        if steps is None or not steps.steps:
            return None
        s, held = self._stamps, self._held
        inputs = [s[k] for k in needed if k not in held]   # reference, feedforward: stamped with the step
        if inputs:
            t = inputs[0]
            if t is None or any(x != t for x in inputs):
                return None
            steps.forget_before(t)   # (a step whose reference has been passed can never complete)
            want = steps.get(t)
            if want is None or not self._barrier_complete(t, want, needed):
                return None
        else:
            t = next((t for t, want in steps.earliest_first() if self._barrier_complete(t, want, needed)), None)
            if t is None:
                return None
        if self._peek is None and t in steps.raw:   # the simulator's layout, from a step it waited on
            from .step_cycles import ManifestPeek
            raw = steps.raw[t]
            self._peek = ManifestPeek.learn(raw, t, len(decode_float64_multiarray(raw, MANIFEST_TOPIC).data))
        steps.forget_through(t)
        self._last_cmd_stamp = t
        odom = held["odom"].sample
        got = odom.take(t)
        if got is None:
            if getattr(self, "_fs", None) is not None:
                self._hold_cycle(t, refusal(odom, t))
            else:
                self.diag.problem("odom", refusal(odom, t))
            return None
        s["odom"], (C0, V0, _), age = got
        propagate_base(C0, V0, age * 1e-9, out=self._C)
        self._V[:] = V0
        self._Vb[:] = Ad_inv(self._C) @ V0
        for k in needed:
            h = held.get(k)
            if h is None or k == "odom":
                continue
            q, qd = (self._q, self._qd) if k == "joint_states" else (self._th, self._thd)
            got = h.take_into(t, q, qd)
            if got.__class__ is str:   # over its maximum age: held at its value (the in-process rule)
                q[:], qd[:] = h.sample.data
                got = h.sample.stamp_ns
            s[k] = got
        return t

    def _barrier_complete(self, t: int, want: dict, needed) -> bool:
        """Every sample the manifest of step ``t`` names (``want``) has arrived, and every other
        input of ``needed`` is stamped ``t``."""
        s, held = self._stamps, self._held
        for k in needed:
            h = held.get(k)
            if h is not None:
                if k in want and (h.sample.stamp_ns is None or h.sample.stamp_ns < want[k]):
                    return False   # a sample the step names has not arrived yet
            elif s[k] != t:
                return False       # the step's reference / feedforward not yet
        return True

    def _record_used(self, t: int, needed) -> None:
        """After a command stamped ``t``: the age of each input of ``needed`` (``t`` minus the stamp
        it used) into the period's statistics, and ``~/inputs_used`` (0 = not used by this cycle)."""
        st, s = self._used_stamps, self._stamps
        st[0] = t
        for i, k in enumerate(self._used_keys):
            if k in needed and s[k] is not None:
                st[i + 1] = s[k]
                self._ages.add(i, t - s[k])
            else:
                st[i + 1] = 0
        self._used.publish(st)

    def _age_summary(self) -> None:
        """Every second under ``latest``: the ages per stream (notes ``input_age[<topic>]``), WARN
        with the last problem if a cycle was skipped in the period, else OK."""
        self.diag.notes.update(self._ages.notes())
        skipped = self.diag.counters["cycles_skipped"]
        bad, self._skipped_at_summary = skipped > self._skipped_at_summary, skipped
        failsafe = getattr(self, "_fs_status", lambda: None)()
        if failsafe is not None:   # hold or descend (failsafe_inputs)
            self.diag.publish_status(*failsafe)
            return
        self.diag.publish_status(DiagnosticStatus.WARN if bad and self.diag.last_problem else DiagnosticStatus.OK,
                                 self.diag.last_problem if bad and self.diag.last_problem
                                 else "publishing (input_policy latest)")

    def _on_reference(self, msg) -> None:
        self._take("reference", lambda: self._ref_decoder.decode(msg, self._Cd, self._Vd, self._Qd))

    # ------------------------------------------------------------------ live tuning
    def _on_set_parameters(self, params):
        """``ros2 param set``: the gains (finite, >= 0) and ``use_feedforward`` (bool) change at
        run time, taking effect at the next command; a bad value is refused with the reason and
        the old one kept. Other parameters are read-only (rclpy refuses them before this)."""
        from rcl_interfaces.msg import SetParametersResult
        gains = {k: getattr(self.gains, k) for k in GAINS}
        use_ff = self.use_ff
        for prm in params:
            if prm.name in GAINS:
                v = prm.value
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    return SetParametersResult(successful=False, reason=f"{prm.name}: expected a number, got {v!r}")
                gains[prm.name] = float(v)
            elif prm.name == "use_feedforward":
                if not isinstance(prm.value, bool):
                    return SetParametersResult(successful=False,
                                               reason=f"use_feedforward: expected true or false, got {prm.value!r}")
                use_ff = prm.value
        try:
            new = TrackingGains(**gains)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        reason = self._live_gain_refusal(new) or self._apply_live(new, use_ff)
        if reason:
            return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _live_gain_refusal(self, new):
        """Why the live gains ``new`` are refused (None: accepted): a loop whose gains change must
        stay stable in discrete time at the control period (the vehicle file's ``control_period``, or
        ``geodyn_controller``'s parameter; :func:`geodyn_ros.control.gain_design.live_gain_refusals`,
        with the node's rotors and elastic joints, none for ``geodyn_controller``). Before the model
        has come there is nothing to check them against: refused."""
        if self.model is None:
            return ("no robot model yet: live gains are checked against its discrete loops; set them once "
                    "robot_description has come")
        from geodyn_ros.control.gain_design import live_gain_refusals
        cfg = getattr(self, "cfg", None)
        period = cfg.control_period if cfg is not None else self._p["control_period"]
        lines = live_gain_refusals(self.gains, new, self.model, None, cfg, period,
                                   rigid_joints=not getattr(self, "elastic", False))
        return "; ".join(lines) or None

    def _apply_live(self, gains: TrackingGains, use_ff: bool):
        """Apply accepted live values; return a reason string to refuse them instead."""
        self.gains, self.use_ff = gains, use_ff
        return None
