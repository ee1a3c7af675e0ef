"""``geodyn_node``: feedforward base wrench and joint torques, and their time derivatives.

Every cycle the node runs ``gd.inverse_dynamics`` (H-GRNE-FBS, paper Alg. 1-2) at order ``r``
on the latest inputs and publishes

* ``feedforward/wrench`` (``geometry_msgs/WrenchStamped``): the order-0 base wrench in the
  base-link frame (``frame_id`` = ``frame_prefix`` + base link), moment about the base-link origin:
  ``W_b = Ad_C^T W^(0)`` at the pose ``C`` used for the computation;
* ``feedforward/joint_efforts`` (``sensor_msgs/JointState``): ``name`` = model joints,
  ``effort`` = ``tau^(0)``;
* ``feedforward/jet`` (``geodyn_msgs/FeedforwardJet``): ``base_wrench`` = ``W^(0..r)`` (``r+1``
  ``geometry_msgs/Wrench``) and ``tau`` = ``tau^(0..r)`` (row-major, ``r+1`` rows of the
  ``joint_names`` = the model's joints), ``order`` = ``r``, ``header.frame_id`` =
  ``world_frame``, ``child_frame_id`` = ``frame_prefix`` + base link. The wrench rows are in the
  representation named by the parameter ``output_representation`` (the message's
  ``representation`` field): ``spatial`` (default: moment about the world origin,
  world axes), ``body`` (``W_b = Ad_C^T W``: base-link axes, about the base-link origin; what a
  rotor allocation ``W_b = A omega^2`` needs), ``hybrid`` or ``mixed``
  (:mod:`geodyn_ros.algorithms.representations`); row ``k`` is the exact k-th derivative of the vector in
  that representation (``gd.convert_wrench``, Leibniz terms of the moving base frame included),
  at the pose ``C`` of the computation (the reference pose in reference mode).

Message types: the jet topics (``reference``, ``flat_reference``, ``feedforward/jet``,
``desired/state``, ``feedforward/flat_jet``, ``feedforward/rotor_speeds``, ``~/linearization``)
have the ``geodyn_msgs`` types named here with ``message_types: typed`` (default). With
``message_types: multiarray`` (**deprecated**: logged once at start-up, removed after release
0.2) every one of them is instead the ``std_msgs/Float64MultiArray`` layout of release 0.1
(:mod:`geodyn_ros.ros.wire.jets`; the stamp as ``data[0:2]``), with the same numbers, and a
reference carries no representation or frames (the parameters say what it is). The other topics
do not change (:mod:`geodyn_ros.ros.common.message_types`).

These outputs do not depend on ``reference_representation`` (see Inputs): only the input twist
jet changes representation. All three carry the stamp of the input they were computed from;
``feedforward/wrench`` and ``feedforward/joint_efforts`` are published only while subscribed.
Optionally (``publish_linearization: true``, off by default) also

* ``~/linearization`` (``geodyn_msgs/Linearization``; ``~`` = the node's name, e.g.
  ``/geodyn_node/linearization``): the SE(3) linearization ``dz/dt = A z + B w``
  (``gd.linearize``, Bos et al. Props. 1-2) about the state of the cycle -- ``C``, ``V^(0)``,
  ``q^(0)``, ``q^(1)``, i.e. the measured state in ``measured`` mode, the reference in
  ``reference`` mode -- and the input the cycle just computed, ``(W^(0), tau^(0))``, in
  ``linearization_representation`` (``body``: twist ``Ad_C^-1 V^(0)`` and wrench
  ``Ad_C^T W^(0)``, base axes; ``spatial``: ``V^(0)``, ``W^(0)``, world axes; the message's
  ``representation``). With ``nv = 6 + n`` (``n`` = model joints), ``nx = 2 nv``, ``nu = nv``:
  ``a`` = ``A`` (nx, nx) and ``b`` = ``B`` (nx, nu), row-major; ``state_labels`` (nx) and
  ``input_labels`` (nu) name the rows and columns (below); ``header`` = the stamp of
  ``feedforward/*`` and ``world_frame``, ``child_frame_id`` = ``frame_prefix`` + base link.
  With the deprecated ``multiarray`` the message is exactly::

      layout.data_offset = 2
      layout.dim[0] = {label: "A:rows=<nx>;cols=<nx>", size: nx*nx, stride: nx*nx}
      layout.dim[1] = {label: "B:rows=<nx>;cols=<nu>", size: nx*nu, stride: nx*nu}
      data[0], data[1]  = stamp.sec, stamp.nanosec (same stamp as feedforward/*)
      A[i][j] = data[2 + i*nx + j]            (A row-major, 0 <= i, j < nx)
      B[i][j] = data[2 + nx*nx + i*nu + j]    (B row-major, 0 <= i < nx, 0 <= j < nu)
      len(data) = 2 + nx*nx + nx*nu

  Each dim is one block (not an axis: the usual MultiArrayLayout stride rule does not apply).
  Rows/columns of ``A`` and rows of ``B`` are the state ``z = (delta, dq, dV, dqd)``
  (``gd.state_labels``: ``delta_wx..delta_vz`` -- the pose perturbation
  ``C -> C exp(hat(delta))``, angular first, base axes --, ``q:<joint>``, ``V_wx..V_vz``,
  ``qd:<joint>``); columns of ``B`` are the input ``w = (dW, dtau)`` (``gd.input_labels``:
  ``W_nx..W_fz`` moment first, ``tau:<joint>``); joints in ``model.joint_names`` order.
  Decode with :func:`geodyn_ros.ros.wire.typed.decode_typed_linearization` (the layout:
  :func:`geodyn_ros.ros.wire.jets.decode_linearization`).
* ``~/linearization/labels`` (``std_msgs/String``, reliable, transient local, published once
  at start-up when ``publish_linearization`` is true, with either ``message_types``): JSON object with ``representation``,
  ``state`` (nx names), ``input`` (nu names), ``nx``, ``nu``, ``data_offset``, ``layout`` (the
  rule above in words), ``perturbation`` (the meaning of z and w), ``model``, ``base_link``,
  ``world_frame``, ``gravity``.

A cycle whose linearization fails (``gd.linearize`` raises, or NaN/Inf in ``A`` or ``B``) still
publishes the feedforward but no linearization; the problem is logged (throttled), reported as
WARN on ``/diagnostics`` and the cycle counted in ``cycles_skipped``, like the skipped cycles below.

Flat mode (``input_mode: flat``: a collinear, under-actuated multirotor whose flat outputs
are the system CoM, the base yaw and the joints) runs ``gd.flat_inverse_dynamics`` at order ``r``
on ``flat_reference`` (``geodyn_msgs/FlatReference``: ``com`` = ``c^(0..r+4)`` world axes,
``yaw`` = ``psi^(0..r+2)``, ``q`` = ``q^(0..r+2)`` by ``joint_names``; at least ``r+5`` entries;
frames as for ``reference`` below) and publishes, every cycle, besides the three outputs
above (computed from the desired state and its wrench jet; ``feedforward/wrench`` is then the
body wrench ``(tau_b, 0, 0, T)``):

* ``desired/state`` (``geodyn_msgs/DesiredState``, the fields of ``ReferenceJet``, so any
  ``reference`` consumer reads it; ``representation`` spatial, frames as ``feedforward/jet``):
  the desired base pose, spatial twist jet ``V^(0..r+1)`` and joint jets ``q^(0..r+1)``
  (``r+2`` rows);
* ``feedforward/flat_jet`` (``geodyn_msgs/FeedforwardJet``, ``representation`` body, frames as
  ``feedforward/jet``): the thrust jet ``T^(0..r)`` along the base ``+z`` (``force`` =
  ``(0, 0, T^(k))``), the body torque jet ``tau_b^(0..r)`` (``torque``: base axes, about the
  base-link origin) and the joint torques ``tau^(0..r)``;
* ``feedforward/rotor_speeds`` (``geodyn_msgs/RotorSpeeds``, ``header.frame_id`` = ``frame_prefix``
  + base link; with ``actuation_config`` set): ``omega_d^(0..r)`` per rotor,
  ``omega_d = sqrt(A4^+ (T, tau_b))`` of the vehicle's allocation (rotor links of the URDF,
  rotor joints locked), differentiated exactly. A cycle whose feedforward asks a rotor for a
  negative ``omega^2`` or more than ``max_rot_velocity`` publishes everything else and reports
  the rotor on ``/diagnostics`` (WARN) instead of this message.

Free fall, the yaw singularity and every other refusal of the flat map skip the cycle with a
diagnostic, like the bad inputs below.

Inputs:

* ``reference`` (``geodyn_msgs/ReferenceJet``): ``base_pose`` (in ``world_frame``), base twist
  jet ``base_twist`` = ``V^(0..r+1)`` and joint jets ``q`` = ``q^(0..r+2)`` by ``joint_names``
  (model joints in any order, extra ones ignored; at least ``r+3`` entries, ``order`` + 1 each).
  Frames: a non-empty ``header.frame_id`` must be ``world_frame`` and a non-empty
  ``child_frame_id`` ``frame_prefix`` + base link, else the message is refused (empty ids are
  accepted). Its ``representation`` field must equal the parameter
  ``reference_representation`` (an empty field counts as ``spatial``): a message in another
  representation is refused with a diagnostic naming both (the node does not convert on the
  message's word; the deprecated layout carries no representation). The twist jet is in the
  representation named by the parameter ``reference_representation``: ``spatial`` (default, ``CONVENTIONS.md``),
  ``body``, ``hybrid`` or ``mixed`` (all angular first; definitions in
  :mod:`geodyn_ros.algorithms.representations`; row ``k`` is the k-th time derivative of the vector *in
  that representation*). A non-spatial jet is converted to the spatial jet with
  ``gd.convert_twist`` (Leibniz terms of the moving transform included) at the reference's
  own base pose, once per new reference message (on the first cycle that uses it), before
  the dynamics run; with ``spatial`` the jet is used as received (no conversion, no copy).
  Only ``geodyn_node`` reads this parameter: ``geodyn_reference`` publishes spatial jets and
  ``geodyn_controller`` reads them as spatial.
* in ``input_mode: measured`` also ``odom`` (``nav_msgs/Odometry``, REP 105) and
  ``joint_states`` (``sensor_msgs/JointState``, by name): they replace ``C``, ``V^(0)``,
  ``q^(0)`` and ``q^(1)``; higher derivatives still come from the reference. With a
  non-spatial ``reference_representation`` the reference jet is first converted to spatial
  as a whole, at the *reference* pose and with the reference's own lower twist rows (the
  Leibniz terms of ``V^(k)`` use ``V^(0..k-1)`` of the reference, not the measured ones);
  then the measured spatial ``V^(0)`` (and ``C``) replace the reference's, exactly as for a
  spatial reference. So ``V^(1..r+1)`` are the spatial derivatives of the *reference* motion
  whatever representation carried them, and the same physical reference gives the same
  outputs in every representation. (They are not re-expressed about the measured pose: a
  ``mixed`` reference acceleration applied at a measured pose that differs from the
  reference pose would give a different spatial acceleration.)

Measured mode, ``input_policy: latest`` (default; :mod:`geodyn_ros.ros.inputs.latest_inputs`): a
cycle per accepted ``odom`` at its stamp (``rate_hz > 0``: every tick at the node clock, the odom
propagated too), the newest ``joint_states`` propagated to it within ``joint_states_max_age``, the
reference sampled as below; ``~/inputs_used`` names each cycle's input stamps (only while
subscribed). ``input_policy: exact`` (lock-step simulators) is the stamp pairing that follows.
A cycle runs on every new input set (``rate_hz: 0``) or on a timer (``rate_hz > 0``: the newest
set not yet used). The inputs of a set belong together by stamp (:mod:`geodyn_ros.ros.inputs.input_sync`):
in reference and flat modes a set is one reference message; in measured mode it is an ``odom`` and
a ``joint_states`` whose stamps differ by at most ``sync_tolerance`` (each message used once), with
the newest reference stamped at most ``sync_tolerance`` after the pair and at most
``stale_timeout`` (or ``max_input_skew`` when > 0) before it. A lost or refused message costs only
the cycle it belonged to. Every output carries the stamp of the state it used (the newer stamp of
the pair; the reference's in reference and flat modes; with ``max_input_skew > 0`` the oldest of the
three). A message that is malformed (NaN/Inf, wrong lengths, missing joints, non-unit quaternion,
bad layout, bad bytes, another frame or representation), out of order (stamp earlier than the previous one on that topic) or stamped
in the future is refused; a set that is stale (older than ``stale_timeout`` on the node clock) or
has no matching reference publishes nothing; the problem is logged (throttled) and reported on
``/diagnostics``. The node logs the topics it needs at start, every fifth diagnostics period
those it is still waiting for, and once, when every input has arrived and outputs go out, the
topics it receives and its measured output rate (``receiving ...; publishing at N Hz (...)``).

Robot model: the parameter ``robot_description`` (URDF XML) or ``urdf_path``, loaded at
start-up; with neither set, the ``robot_description`` topic (parameter
``robot_description_topic``; ``std_msgs/String``, reliable, transient local, depth 1, as
robot_state_publisher publishes it). Until a valid description arrives the node publishes
nothing and reports ``waiting for robot_description on <topic>`` on ``/diagnostics``; inputs
that arrive meanwhile are reported as not used. A later description is loaded on a background
thread and, only if valid and of the same robot (same joint names in the same order, same base
link: e.g. recalibrated inertias), replaces the model between cycles; anything else (empty, not
XML, an invalid URDF, another robot) is reported in one line and the model in use stays. Rules
and messages: :mod:`geodyn_ros.ros.common.description`.
"""
from __future__ import annotations

import math
import os
import sys
from functools import partial

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

import geodyn_ros as gd

from ..common.description import ModelSource
from ..common.diagnostics import DiagnosticsReporter, guard, guard_time_source
from ..common.message_types import MessageTypes
from ..common.params import declare_parameters
from ..common.runtime import control_qos, run_nodes, stop_requested
from ..wire.conversions import InputError, spatial_to_body_wrench
from ..wire.raw_outputs import readonly_views
from ..inputs.input_sync import PairMatcher, TopicBuffer, buffer_depth, input_entry, select_reference
from ..inputs.latest_inputs import AgeStats, InputsUsed, MeasuredLatest, max_age_ns
from ..inputs.plausibility import LIMIT_NAMES, check_plausible
from .geodyn_inputs import FeedforwardInputs
from .geodyn_outputs import FeedforwardOutputs
from .geodyn_params import PARAMETERS, check_parameters, load_model, node_gravity

__all__ = ["PARAMETERS", "GeodynNode", "main"]


class GeodynNode(FeedforwardInputs, FeedforwardOutputs, Node):
    """The feedforward dynamics node (see the module docstring for topics and behaviour).

    Parameters
    ----------
    node_name : str
    **kwargs
        Passed to ``rclpy.node.Node`` (e.g. ``parameter_overrides``, ``context``).

    Raises
    ------
    ConfigurationError
        Bad parameter or URDF (the message names it).
    """

    def __init__(self, node_name: str = "geodyn_node", **kwargs):
        super().__init__(node_name, **kwargs)
        p = declare_parameters(self, PARAMETERS)
        check_parameters(p)
        self._p = p
        self.types = MessageTypes(self, p["message_types"])   # typed geodyn_msgs, or the deprecated layouts
        self.model = None          # set by _setup_model (at start-up, or from the topic)
        self.base_link = None
        self.order = p["order"]
        self.mode = p["input_mode"]
        self.gravity = node_gravity(p["gravity"])
        self.stale_ns = int(round(p["stale_timeout"] * 1e9))
        self.world_frame = p["world_frame"]
        self.frame_prefix = p["frame_prefix"]   # checked by _check_parameters
        self.base_frame = None                   # frame_prefix + base link, set by _setup_model
        self.publish_jet = p["publish_jet"]
        self.publish_linearization = p["publish_linearization"]
        self.lin_representation = p["linearization_representation"]
        self.reference_representation = p["reference_representation"]
        self.limits = {k: float(p[k]) for k in LIMIT_NAMES}
        self.skew_ns = int(round(p["max_input_skew"] * 1e9))
        self.tol_ns = int(round(p["sync_tolerance"] * 1e9))
        self.output_representation = p["output_representation"]
        self._convert_ref = self.reference_representation != "spatial"
        self.flat = self.mode == "flat"
        self._ref_topic = "flat_reference" if self.flat else "reference"
        self._topics = (self._ref_topic, "odom", "joint_states") if self.mode == "measured" else (self._ref_topic,)
        # input_policy latest (measured mode): one cycle per odom, the newest joint_states propagated (latest_inputs)
        self.latest = self.mode == "measured" and p["input_policy"] == "latest"
        self._state = MeasuredLatest(max_age_ns(p, "odom"), max_age_ns(p, "joint_states")) if self.latest else None
        self._bufs = {}            # topic -> TopicBuffer (input_sync), made by _setup_model
        self._set = None           # the input set of the next cycle (None: no new set)
        self._last_now = -1
        self._clock_handle = self.get_clock().handle
        self._summaries = 0
        self._started = None       # (wall time [s], cycles published) at the first summary with an output

        qos_in = control_qos(p["input_depth"], p["input_reliability"])
        qos_sensor = control_qos(p["input_depth"], p["sensor_reliability"])
        qos_out = control_qos(p["qos_depth"], p["output_reliability"])
        self._create_publishers(qos_out, bool(p["actuation_config"]))
        if self.mode == "measured":   # per cycle: the stamps of the inputs used (only while subscribed), their ages
            self._used = InputsUsed(self, ("odom", "joint_states", "reference"), qos_out)
            self._used_subs = self._used.pub.handle.get_subscription_count
            self._ages = AgeStats(("odom", "joint_states", "reference"))

        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: feedforward", "",
                                        rate=p["diagnostics_rate"])
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(p["diagnostics_period"], guard(self, self._summary, "diagnostics timer"), clock=self._wall)
        self._rate_zero = p["rate_hz"] == 0
        if p["rate_hz"] > 0:
            self.create_timer(1.0 / p["rate_hz"], guard(self, self._on_timer, "cycle timer"))
        # the model: now from robot_description / urdf_path (loaded, and every kernel the cycles use
        # compiled or loaded from the cache, before the inputs are subscribed), or later from the topic
        self.model_source = ModelSource(self, p, self.diag, load=self._load_model, apply=self._setup_model,
                                        model_of=lambda loaded: loaded.model, period=p["diagnostics_period"])
        # raw (serialized) subscriptions, decoded compiled (geodyn_ros.ros.wire.fast_inputs) or with numpy
        # (geodyn_ros.ros.wire.cdr): no Python message objects at 1 kHz. _on_<t>(msg) = _receive(t, _parse_<t>, msg)
        # (geodyn_inputs: the parsers of message_types; _on_<t>(msg) = _receive(t, parse, msg))
        parsers, msg_types = self._parsers(), self._input_types()
        for topic, parse in parsers.items():
            setattr(self, f"_on_{topic}", partial(self._receive, topic, parse))
        for topic in self._topics:
            self.create_subscription(msg_types[topic], topic, guard(self, getattr(self, f"_on_{topic}"), topic),
                                     qos_sensor if topic in ("odom", "joint_states") else qos_in, raw=True)
        guard_time_source(self)
        self.get_logger().info(f"input_mode {self.mode}: computes from {', '.join(self._topics)}"
                               + ("" if self.model is not None else f" once the robot model arrives on "
                                  f"{self.model_source.topic}") + f"; waiting for {', '.join(self._waiting())}")

    # ------------------------------------------------------------------ the model
    def _load_model(self, source):
        """The model of ``source`` (path or URDF XML) for this node's parameters, with every kernel
        the cycles use warmed (:func:`geodyn_ros.ros.nodes.geodyn_params.load_model`). Touches no node
        state: for the topic it runs on the loader thread."""
        return load_model(source, self._p)

    def _setup_model(self, loaded, first: bool = True) -> None:
        """Install a loaded model (and allocation) and build everything that depends on it
        (executor thread, between cycles).

        ``first``: the input buffers, reference decoder, joint-name matcher, output messages and
        packers, linearization packer and labels are built for the model's joints, and the model
        is logged. A replacement (``first`` False) has the same joint names, order and base link
        (:func:`geodyn_ros.ros.common.description.same_robot`), so all of that stays as it is, and with
        it the inputs already received: only the model (masses, inertias, geometry) changes,
        the linearization labels are republished (they name the model) and the change is logged.
        """
        model = loaded.model
        self.model = model
        self.allocation, self.rotor_names = loaded.allocation, loaded.rotor_names
        self.diag.hardware_id = model.name
        # measured/reference modes: preallocated order-r inverse dynamics, rebuilt for a new model
        self._ws = None if self.flat else gd.Workspace(model, self.order, gravity=self.gravity)
        # flat mode: the preallocated flat map and read-only views of its result arrays (_flat_cycle)
        self._fws = gd.algorithms.flat.FlatWorkspace(model, self.order, gravity=self.gravity) if self.flat else None
        self._fro = readonly_views(self._fws.result) if self.flat else None
        if not first:
            if self.publish_linearization:
                self._publish_linearization_labels()
            return
        r, n = self.order, model.n_joints
        self.base_link = model.base_link
        # Input buffers (geodyn_ros.ros.inputs.input_sync): per topic a bounded, stamp-ordered deque of
        # entries the parsers fill in place; the cycle's measured inputs are copied out of a matched pair.
        depth = buffer_depth(self._p["input_depth"])
        self._bufs = {t: TopicBuffer(t, depth, partial(input_entry, t, r, n, self._convert_ref))
                      for t in self._topics}
        if self.mode == "measured":
            self._pair = PairMatcher(self._bufs["odom"], self._bufs["joint_states"], self.tol_ns)
        for t in self._topics:   # /diagnostics: the messages of each input accepted so far (this model)
            self.diag.live[f"accepted[{t}]"] = self._bufs[t].accepted_count
        # a measured cycle's inputs: the pair's C, V^(0), q, qdot (copied in at the match), the reference's rows above
        self._C_meas = np.eye(4)
        self._V_in = np.zeros((r + 2, 6))
        self._Q_in = np.zeros((r + 3, n))
        self.base_frame = self.frame_prefix + self.base_link   # frame id of the base link
        # the input decoders (geodyn_inputs: compiled for a message shaped like the last accepted one)
        self._build_inputs(model)
        self._build_outputs(model)
        p = self._p
        self.get_logger().info(
            f"model '{model.name}' ({n} joints, base '{self.base_link}'), order {r}, "
            + (f"{len(self.rotor_names)} rotors ({'collinear' if self.allocation.collinear else 'fully actuated'}), "
               if self.allocation is not None else "") +
            f"input_mode {self.mode}, rate_hz {p['rate_hz']:g}, "
            f"reference_representation {self.reference_representation}, "
            f"output_representation {self.output_representation}")

    # ------------------------------------------------------------------ inputs
    def _now_ns(self) -> int:
        clock = self._clock_handle
        with clock:   # rclpy's Clock.now() without its Time object
            now = clock.get_now().nanoseconds
        if now < self._last_now:  # simulated time was reset: forget the old stamps and messages
            for b in self._bufs.values():
                b.reset()
            if self.mode == "measured" and self._bufs:
                self._pair.reset()
            if self.latest:
                self._state.reset()
            self._set = None
        self._last_now = now
        return now

    def _waiting(self) -> list:
        """What the node still waits for: the robot model, and each needed topic with no accepted message."""
        if self.model is None:
            return [f"robot_description on {self.model_source.topic}"]
        return [t for t in self._topics if not self._bufs[t].accepted]

    def _receive(self, topic: str, parse, msg) -> None:
        """Decode a message into its topic's scratch entry (``parse(entry, msg)`` returns the stamp
        or raises InputError), accept it into the buffer, then form the input set and run the cycle."""
        self.model_source.poll()   # apply a loaded robot_description (between cycles)
        if self.model is None:
            self.model_source.refuse_input(topic)
            return
        buf = self._bufs[topic]
        buf.received = True
        clock = self._clock_handle   # (_now_ns inline: one call less per message)
        with clock:
            now = clock.get_now().nanoseconds
        if now < self._last_now:   # a simulated-time reset, detected before the stamp-order check
            now = self._now_ns()
        self._last_now = now
        try:
            stamp = parse(buf.scratch, msg)
            entry = buf.accept(stamp, now, self.stale_ns)
        except InputError as exc:
            self.diag.problem(topic, str(exc))
            return
        if self.mode != "measured":
            self._set = (stamp, entry)
        elif self.latest:   # a cycle per odom (latest_inputs); the reference is sampled by the cycle
            if topic == "reference":
                return
            self._state.offer(topic, stamp, entry)
            if topic != "odom":
                return
            self._set = stamp
        elif topic != "reference":   # the reference is sampled by the cycle, not matched
            pair = self._pair.match(buf)
            if pair is None:
                return
            t_odom, odom, t_js, js = pair
            self._C_meas[:] = odom.C
            self._V_in[0] = odom.V0
            self._Q_in[0] = js.q
            self._Q_in[1] = js.qd
            self._set = (t_odom, t_js)
        else:
            return
        if self._rate_zero:
            self._cycle(now)

    def _on_timer(self) -> None:
        self.model_source.poll()   # (latest: a cycle every tick once an odom has come, at the node clock)
        if self.model is not None and (self._set is not None or self.latest and self._state.odom.data is not None):
            self._cycle()

    def _summary(self) -> None:
        self._summaries += 1
        self._announce_start()
        waiting = self._waiting()
        if waiting and self._summaries % 5 == 0:   # every fifth period: 5 s at the default 1 s
            got = [t for t in self._topics if self._bufs and self._bufs[t].accepted]
            self.get_logger().info(f"input_mode {self.mode}: still waiting for {', '.join(waiting)}"
                                   + (f" (received {', '.join(got)})" if got else ""))
        if self.model is None:
            return   # the model source reports "waiting for robot_description" at the same period
        unseen = [t for t in self._topics if not self._bufs[t].received]
        if self.mode == "measured":   # the age of each input over the period (latest_inputs.AgeStats)
            self.diag.notes.update(self._ages.notes())
        if unseen and not self.diag.last_problem:
            self.diag.publish_status(DiagnosticStatus.WARN, f"waiting for {', '.join(unseen)}")
        else:
            self.diag.publish_summary()

    def _announce_start(self) -> None:
        """Log once, one line, when every input has arrived and the node publishes: the topics it
        receives and the output rate measured over the first summary period with outputs
        (cycles published between two summaries; no work on the cycle's path)."""
        if self._started is False:
            return
        done = self.diag.counters["cycles_published"]
        now = self._wall.now().nanoseconds * 1e-9
        if self._started is None:
            if done > 0:
                self._started = (now, done)
            return
        t0, n0 = self._started
        if now - t0 <= 0.0:
            return
        rate = (done - n0) / (now - t0)
        outputs = ["feedforward/jet" if self.publish_jet else "", "desired/state, feedforward/flat_jet" if self.flat
                   else "", "~/linearization" if self.publish_linearization else ""]
        self.get_logger().info(f"receiving {', '.join(self._topics)}; publishing at {rate:.0f} Hz "
                               f"({', '.join(o for o in outputs if o) or 'feedforward/wrench, joint_efforts'})")
        self._started = False

    # ------------------------------------------------------------------ the cycle
    def _fresh(self, topic: str, stamp: int, now: int) -> bool:
        """False (reported) if the input of ``topic`` stamped ``stamp`` is stale or in the future."""
        age = now - stamp
        if age > self.stale_ns:
            self.diag.problem(f"stale {topic}", f"{topic}: stale input, {age * 1e-9:.4f} s "
                              f"old (stale_timeout {self.stale_ns * 1e-9:g} s)")
            return False
        if age < -self.stale_ns:
            self.diag.problem(f"future {topic}", f"{topic}: stamp {-age * 1e-9:.4f} s in "
                              f"the future of the node clock (use_sim_time mismatch?)")
            return False
        return True

    def _reference_for(self, t: int):
        """``(stamp, entry)`` of the reference for a state stamped ``t`` (input_sync rule), or None (reported)."""
        buf = self._bufs["reference"]
        after = self.skew_ns if self.skew_ns else self.tol_ns
        sel = select_reference(buf, t, self.stale_ns, after)
        if sel is None and buf.accepted:   # (before the first reference: "waiting for reference", _summary)
            newest = buf.newest()
            self.diag.problem("no reference", f"reference: none stamped in [{(t - self.stale_ns) * 1e-9:.6f}, "
                              f"{(t + after) * 1e-9:.6f}] s for the state stamped {t * 1e-9:.6f} s (newest "
                              + (f"{newest[0] * 1e-9:.6f} s" if newest else "forgotten at a clock reset")
                              + "); set skipped")
        return sel

    def _measured_set(self, inputs, now: int):
        """The measured cycle's ``(stamp, t_odom, t_js, t_ref, reference entry)``, its state written
        into ``_C_meas``, ``_V_in[0]``, ``_Q_in[:2]``; or None (reported). ``input_policy`` exact:
        ``inputs`` = the matched pair's stamps (input_sync); latest: the odom stamp, or (timer) the
        node clock ``now`` as the cycle's time (latest_inputs)."""
        if self.latest:
            timer = not self._rate_zero
            t = now if timer else inputs
            got = self._state.state_at(t, timer, self._C_meas, self._V_in[0], self._Q_in[0], self._Q_in[1])
            if got.__class__ is str:
                self.diag.problem(got[:got.index(":")], got)
                return None
            t_odom, t_js = got
            if not timer and abs(now - t) > self.stale_ns and not self._fresh("odom", t, now):
                return None
            stamp = t
        else:
            t_odom, t_js = inputs
            stamp = max(t_odom, t_js)
            if not (abs(now - t_odom) <= self.stale_ns >= abs(now - t_js)   # both fresh, else _fresh reports
                    or self._fresh("odom", t_odom, now) and self._fresh("joint_states", t_js, now)):
                return None
        sel = self._reference_for(stamp)
        if sel is None:
            return None
        t_ref, e = sel
        if abs(now - t_ref) > self.stale_ns and not self._fresh("reference", t_ref, now):
            return None
        if self._convert_ref and not e.converted and not self._convert_reference(e):
            return None
        if self.skew_ns:   # (input_policy exact only: check_parameters)
            stamps = (t_odom, t_js, t_ref)
            if max(stamps) - min(stamps) > self.skew_ns:
                self.diag.problem("skew", f"inputs not within max_input_skew {self.skew_ns * 1e-9:g} s "
                                  f"(odom, joint_states, reference stamps span "
                                  f"{(max(stamps) - min(stamps)) * 1e-9:.6f} s); set skipped")
                return None
            stamp = min(stamps)
        return stamp, t_odom, t_js, t_ref, e

    def _cycle(self, now: int | None = None) -> None:
        """One cycle on the input set ``_set``; ``now``: the node clock [ns] read by the triggering
        callback (else read here)."""
        inputs, self._set = self._set, None
        if now is None:
            now = self._now_ns()
        if self.mode != "measured":
            stamp, e = inputs
            if not self._fresh(self._ref_topic, stamp, now):
                return
            if self.flat:
                self._flat_cycle(stamp, e)
                return
            if self._convert_ref and not e.converted and not self._convert_reference(e):
                return
            C, V, Q = e.C, e.V_sp, e.Q
        else:
            got = self._measured_set(inputs, now)
            if got is None:
                return
            stamp, t_odom, t_js, t_ref, e = got
            C, V, Q = self._C_meas, self._V_in, self._Q_in
            V[1:] = e.V_sp[1:]  # the reference's spatial jet (converted at the reference pose) above V^(0)
            Q[2:] = e.Q[2:]     # and its joint jet above q, qdot
        try:
            res = self._ws.inverse_dynamics(C, V, Q)   # arrays owned by _ws, valid during this cycle
        except ValueError as exc:  # e.g. a pose that is not rigid
            self.diag.problem("dynamics", f"inverse dynamics rejected the inputs: {exc}")
            return
        W, tau = res.base_wrench, res.tau
        # spatial jet: written and checked for NaN/Inf in one compiled call; else NaN/Inf propagate into the sum
        jet = self._jet_out.write_finite(stamp, W, tau) if self._jet_spatial else None
        if jet is None and (self._jet_spatial or not math.isfinite(W.sum() + tau.sum())):
            self.diag.problem("nonfinite", "inverse dynamics produced NaN/Inf; not published")
            return
        wrench_subs = self._wrench_subs()   # asked once per cycle
        W0_body = (spatial_to_body_wrench(C, W[0]) if self.publish_linearization   # for a subscriber only
                   or wrench_subs else None)
        W_out = W
        if self.output_representation != "spatial" and self.publish_jet:
            try:
                W_out = gd.convert_wrench(C, W, V, "spatial", self.output_representation)
            except ValueError as exc:  # not expected: C and V were checked by the dynamics
                self.diag.problem("output_representation", f"cannot convert the wrench jet to "
                                  f"{self.output_representation}: {exc}")
                return
        self._publish(stamp, W0_body if wrench_subs else None, W_out, tau, jet)
        if C is self._C_meas:   # measured mode: the ages and (if subscribed) the stamps of the inputs used
            ages = self._ages
            ages.add(0, stamp - t_odom)
            ages.add(1, stamp - t_js)
            ages.add(2, stamp - t_ref)
            if self._used_subs():
                self._used.publish((stamp, t_odom, t_js, t_ref))
        if self.publish_linearization and not self._publish_linearization(stamp, C, V, Q, W, W0_body, tau):
            return  # the feedforward went out; the failed linearization counts as a skipped cycle
        self.diag.ok()
        self.diag.clear()

    def _flat_cycle(self, stamp: int, e) -> None:
        """One cycle of the flat mode (module docstring) on the flat reference ``e`` stamped
        ``stamp``: the flat map, then every output."""
        try:   # into the workspace's arrays (valid during this cycle); _fro: read-only views of them
            res = self._fws.compute(e.com, e.yaw, e.Q)
        except ValueError as exc:   # free fall, yaw singularity, a result that is not finite
            self.diag.problem("flat map", f"flat_reference: the flat map refused the sample: {exc}")
            return
        C, V, W, tau = res.base_pose, res.base_twist, res.base_wrench, res.tau
        ro, subs, W0_body = self._fro, self._wrench_subs(), None
        if subs or self.publish_linearization:   # the body wrench (tau_b, 0, 0, T) for a subscriber only
            W0_body = np.zeros(6)
            W0_body[:3], W0_body[5] = res.body_torque[0], res.thrust[0]
        W_out, jet = W, None
        if self.output_representation != "spatial" and self.publish_jet:
            W_out = gd.convert_wrench(C, W, V, "spatial", self.output_representation)
        elif self.publish_jet:   # one compiled write (the map's results are finite; else _publish writes them)
            jet = self._jet_out.write_finite(stamp, ro[3], ro[4])
        rotors, problem = None, ""   # omega_d^(0..r) serialized (raw_outputs.rotor_speed_jet), or its refusal
        if self.allocation is not None:
            rotors, problem = self._rotor_out.write_flat(stamp, self.allocation, self.rotor_names, ro[5], ro[6])
            if problem:
                self.diag.problem("rotor feedforward", problem)
        self._publish(stamp, W0_body if subs else None, W_out, tau, jet)
        self._pub_desired.handle.publish_raw(self._desired_out.write_ro(stamp, ro[0], ro[1], ro[2]))
        self._pub_flat.handle.publish_raw(self._write_flat_jet(stamp, ro[5], ro[6], ro[4]))
        if rotors is not None:
            self._pub_rotors.handle.publish_raw(rotors)
        if self.publish_linearization and not self._publish_linearization(stamp, C, V, res.q, W, W0_body, tau):
            return
        if problem:
            return   # reported above; the other outputs went out
        self.diag.ok()
        self.diag.clear()

    def _convert_reference(self, e) -> bool:
        """Fill ``e.V_sp`` with the spatial jet of the reference twist jet ``e.V`` (in
        ``reference_representation``) at the reference pose ``e.C``, the pose the jet belongs
        to; on failure report the problem and return False (the cycle is skipped)."""
        try:
            e.V_sp[:] = gd.convert_twist(e.C, e.V, self.reference_representation, "spatial")
            check_plausible(self.limits, "reference", e.C, e.V_sp)
        except InputError as exc:
            self.diag.problem("reference", str(exc))
            return False
        except ValueError as exc:  # not expected: the decoder checks the pose and NaN/Inf
            self.diag.problem("reference_representation", f"reference: cannot convert the "
                              f"{self.reference_representation} twist jet to spatial: {exc}")
            return False
        e.converted = True
        return True


def main(args=None) -> int:
    """Console script ``geodyn_node`` (also ``ros2 run geodyn_ros geodyn_node``).

    After a stop (SIGINT/SIGTERM) the process ends as soon as the node is torn down (``os._exit``
    after flushing stdout and stderr): the interpreter's own finalization (numba, LLVM, rclpy
    modules) takes about another second, which would stretch the 2 s answer to a stop."""
    code = run_nodes([GeodynNode], args)
    if stop_requested():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
