"""``geodyn_node``: feedforward base wrench and joint torques, and their time derivatives.

Every cycle the node runs ``gd.inverse_dynamics`` (H-GRNE-FBS, paper Alg. 1-2) at order ``r``
on the latest inputs and publishes

* ``feedforward/wrench`` (``geometry_msgs/WrenchStamped``): the order-0 base wrench in the
  base-link frame (``frame_id`` = ``frame_prefix`` + base link), moment about the base-link origin:
  ``W_b = Ad_C^T W^(0)`` at the pose ``C`` used for the computation;
* ``feedforward/joint_efforts`` (``sensor_msgs/JointState``): ``name`` = model joints,
  ``effort`` = ``tau^(0)``;
* ``feedforward/jet`` (``std_msgs/Float64MultiArray``, layout in :mod:`geodyn_ros.ros.jets`):
  ``W^(0..r)`` and ``tau^(0..r)``. The wrench rows are in the representation named by the
  parameter ``output_representation``: ``spatial`` (default: moment about the world origin,
  world axes), ``body`` (``W_b = Ad_C^T W``: base-link axes, about the base-link origin; what a
  rotor allocation ``W_b = A omega^2`` needs), ``hybrid`` or ``mixed``
  (:mod:`geodyn_ros.algorithms.representations`); row ``k`` is the exact k-th derivative of the vector in
  that representation (``gd.convert_wrench``, Leibniz terms of the moving base frame included),
  at the pose ``C`` of the computation (the reference pose in reference mode).

These outputs do not depend on ``reference_representation`` (see Inputs): only the input twist
jet changes representation. All three carry the stamp of the input they were computed from.
Optionally (``publish_linearization: true``, off by default) also

* ``~/linearization`` (``std_msgs/Float64MultiArray``; ``~`` = the node's name, e.g.
  ``/geodyn_node/linearization``): the SE(3) linearization ``dz/dt = A z + B w``
  (``gd.linearize``, Bos et al. Props. 1-2) about the state of the cycle -- ``C``, ``V^(0)``,
  ``q^(0)``, ``q^(1)``, i.e. the measured state in ``measured`` mode, the reference in
  ``reference`` mode -- and the input the cycle just computed, ``(W^(0), tau^(0))``, in
  ``linearization_representation`` (``body``: twist ``Ad_C^-1 V^(0)`` and wrench
  ``Ad_C^T W^(0)``, base axes; ``spatial``: ``V^(0)``, ``W^(0)``, world axes). With
  ``nv = 6 + n`` (``n`` = model joints), ``nx = 2 nv``, ``nu = nv``, the message is exactly::

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
  Decode with :func:`geodyn_ros.ros.jets.decode_linearization`.
* ``~/linearization/labels`` (``std_msgs/String``, reliable, transient local, published once
  at start-up when ``publish_linearization`` is true): JSON object with ``representation``,
  ``state`` (nx names), ``input`` (nu names), ``nx``, ``nu``, ``data_offset``, ``layout`` (the
  rule above in words), ``perturbation`` (the meaning of z and w), ``model``, ``base_link``,
  ``world_frame``, ``gravity``.

A cycle whose linearization fails (``gd.linearize`` raises, or NaN/Inf in ``A`` or ``B``) still
publishes the feedforward but no linearization; the problem is logged (throttled), reported as
WARN on ``/diagnostics`` and the cycle counted in ``cycles_skipped``, like the skipped cycles below.

Flat mode (``input_mode: flat``: a collinear, under-actuated multirotor whose flat outputs
are the system CoM, the base yaw and the joints) runs ``gd.flat_inverse_dynamics`` at order ``r``
on ``flat_reference`` (flat-reference jet: ``c^(0..r+4)``, ``psi^(0..r+2)``, ``q^(0..r+2)``;
layout in :mod:`geodyn_ros.ros.jets`) and publishes, every cycle, besides the three outputs
above (computed from the desired state and its wrench jet; ``feedforward/wrench`` is then the
body wrench ``(tau_b, 0, 0, T)``):

* ``desired/state`` (reference-jet ``Float64MultiArray``, the layout of ``reference``, so any
  ``reference`` consumer reads it): the desired base pose, spatial twist jet ``V^(0..r+1)`` and
  joint jets ``q^(0..r+1)`` (``r+2`` rows);
* ``feedforward/flat_jet``: the thrust jet ``T^(0..r)`` along the base ``+z``, the body torque jet
  ``tau_b^(0..r)`` (base axes, about the base-link origin) and the joint torques ``tau^(0..r)``;
* ``feedforward/rotor_speeds`` (with ``actuation_config`` set): ``omega_d^(0..r)`` per rotor,
  ``omega_d = sqrt(A4^+ (T, tau_b))`` of the vehicle's allocation (rotor links of the URDF,
  rotor joints locked), differentiated exactly. A cycle whose feedforward asks a rotor for a
  negative ``omega^2`` or more than ``max_rot_velocity`` publishes everything else and reports
  the rotor on ``/diagnostics`` (WARN) instead of this message.

Free fall, the yaw singularity and every other refusal of the flat map skip the cycle with a
diagnostic, like the bad inputs below.

Inputs:

* ``reference`` (reference-jet ``Float64MultiArray``): base pose, base twist jet
  ``V^(0..r+1)`` and joint jets ``q^(0..r+2)``. The twist jet is in the representation named
  by the parameter ``reference_representation``: ``spatial`` (default, ``CONVENTIONS.md``),
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

A cycle runs on every new input set (``rate_hz: 0``: every reference message in reference
mode, every refreshed odom + joint_states pair in measured mode) or on a timer. A cycle whose
inputs are missing, malformed (NaN/Inf, wrong lengths, missing joints, non-unit quaternion,
bad layout), out of order (stamp earlier than the previous one on that topic) or stale (older
than ``stale_timeout`` on the node clock) publishes nothing; the problem is logged (throttled)
and reported on ``/diagnostics``.

Robot model: the parameter ``robot_description`` (URDF XML) or ``urdf_path``, loaded at
start-up; with neither set, the ``robot_description`` topic (parameter
``robot_description_topic``; ``std_msgs/String``, reliable, transient local, depth 1, as
robot_state_publisher publishes it). Until a valid description arrives the node publishes
nothing and reports ``waiting for robot_description on <topic>`` on ``/diagnostics``; inputs
that arrive meanwhile are reported as not used. A later description is loaded on a background
thread and, only if valid and of the same robot (same joint names in the same order, same base
link: e.g. recalibrated inertias), replaces the model between cycles; anything else (empty, not
XML, an invalid URDF, another robot) is reported in one line and the model in use stays. Rules
and messages: :mod:`geodyn_ros.ros.description`.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, String

import geodyn_ros as gd
from geodyn_ros.algorithms.checks import MAX_ORDER
from geodyn_ros.lie import Ad_inv
from geodyn_ros.algorithms.representations import REPRESENTATIONS

from .cdr import (decode_float64_multiarray, decode_joint_state, decode_odometry, joint_state_template,
                  name_cache, wrench_stamped_template)
from .conversions import (InputError, JointNameMatcher, odometry_from_fields, spatial_to_body_wrench)
from .diagnostics import DiagnosticsReporter, guard, guard_time_source
from .jets import (FeedforwardJetPacker, FlatFeedforwardPacker, FlatReferenceDecoder, LinearizationPacker,
                   ReferenceDecoder, RotorSpeedPacker, linearization_labels_json, make_reference_msg)
from .description import TOPIC_PARAMETER, ModelSource
from .params import (FRAME_PREFIX_DESCRIPTION, ConfigurationError, check_frame_prefix, declare_parameters,
                     locked_joints_list)
from .runtime import control_qos, run_nodes

__all__ = ["PARAMETERS", "GeodynNode", "main"]

#: name -> (default, description); the YAML in ``config/geodyn.yaml`` uses the same names.
PARAMETERS = {
    "robot_description": ("", "URDF XML string (ROS convention; launch files fill it via xacro)."),
    "urdf_path": ("", "Path of a .urdf/.xacro file; used when robot_description is empty."),
    "robot_description_topic": TOPIC_PARAMETER,
    "base_link": ("", "Base link; empty = the URDF root."),
    "locked_joints": ("", "Comma-separated joints made rigid at 0 (gd.load_urdf(locked_joints=...)), e.g. "
                      "the rotor joints of a Gazebo multirotor URDF; empty = none."),
    "order": (2, "Derivative order r: outputs W^(0..r), tau^(0..r)."),
    "gravity": ([0.0, 0.0, -9.81], "Gravity acceleration in the world frame [m/s^2]."),
    "input_mode": ("reference", "'reference': all inputs from the reference topic; 'measured': "
                   "pose, twist, q, qdot from odom/joint_states, higher derivatives from the reference; "
                   "'flat': a collinear multirotor's flat outputs (CoM, yaw, joints) on flat_reference, "
                   "through gd.flat_inverse_dynamics."),
    "actuation_config": ("", "flat mode: actuation YAML (rotor names and constants, e.g. config/hexarotor.yaml) "
                         "for feedforward/rotor_speeds; its rotor joints are locked in the model. Empty = no "
                         "rotor feedforward."),
    "rate_hz": (0.0, "0: compute on every new input; > 0: compute at this rate (node clock)."),
    "stale_timeout": (0.1, "Inputs older than this [s] on the node clock are not used."),
    "world_frame": ("world", "Frame of the poses; a non-empty odom header.frame_id must equal it "
                    "(not prefixed by frame_prefix)."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: feedforward/wrench header.frame_id and the "
                     "odom child_frame_id check."),
    "qos_depth": (2, "Keep-last depth of the control topics."),
    "publish_jet": (True, "Publish feedforward/jet with all orders 0..r."),
    "diagnostics_period": (1.0, "Period [s, wall clock] of the /diagnostics summary."),
    "diagnostics_rate": (10.0, "At most this many /diagnostics messages per second; each carries the "
                         "skipped cycles per reason since the previous one."),
    "max_position": (1e6, "Plausibility limit: |base position| [m] (UTM-scale coordinates pass)."),
    "max_speed": (1e3, "Plausibility limit: base angular speed [rad/s] and speed of the base origin [m/s]."),
    "max_joint_rate": (1e3, "Plausibility limit: |qdot| of every joint [rad/s or m/s]."),
    "max_input_magnitude": (1e9, "Plausibility limit: every other entry of the input jets (joint "
                            "positions and higher derivatives; spatial twist rows are allowed "
                            "(1 + |p|) times this)."),
    "max_input_skew": (0.0, "measured mode: > 0 combines only inputs (odom, joint_states, reference) "
                       "whose stamps lie within this many seconds of each other, and stamps the "
                       "output with the oldest; 0 = off (newest inputs, newest stamp)."),
    "publish_linearization": (False, "Publish ~/linearization (A, B of gd.linearize about the "
                              "cycle's state and feedforward input, for an MPC) and the latched "
                              "~/linearization/labels JSON."),
    "linearization_representation": ("body", "Base twist and wrench in ~/linearization: 'body' "
                                     "(default; the paper's choice and the MPC-friendly one: base "
                                     "axes, A and B independent of the base position) or "
                                     "'spatial' (world axes, about the world origin)."),
    "reference_representation": ("spatial", "Representation of the base twist jet V^(0..r+1) in "
                                 "the reference message, angular first (geodyn_ros.algorithms.representations): "
                                 "'spatial' (default; world axes, about the world origin), 'body' "
                                 "(base axes), 'hybrid' (world angular velocity, base-origin "
                                 "velocity rdot) or 'mixed' (body angular velocity, world rdot; "
                                 "MuJoCo/iDynTree). Rows are derivatives of the represented vector; "
                                 "a non-spatial jet is converted to spatial (Leibniz terms included) "
                                 "at the reference's base pose before the dynamics. In measured mode "
                                 "the measured V^(0) then replaces the converted row 0. The outputs "
                                 "are unaffected (feedforward/jet stays spatial)."),
    "output_representation": ("spatial", "Representation of the base wrench jet W^(0..r) in "
                              "feedforward/jet, moment first: 'spatial' (default; world axes, about "
                              "the world origin), 'body' (base-link axes and origin; for a rotor "
                              "allocation), 'hybrid' or 'mixed' (geodyn_ros.algorithms.representations). Row k "
                              "is the exact k-th derivative of the represented vector. "
                              "feedforward/wrench (body, order 0) is unaffected."),
}

_MODES = ("reference", "measured", "flat")
_REPRESENTATIONS = ("body", "spatial")


class _Slot:
    """Bookkeeping of one input topic: last good stamp, validity, and 'new since output'."""

    __slots__ = ("topic", "stamp", "valid", "fresh", "received")

    def __init__(self, topic):
        self.topic = topic
        self.stamp = -1
        self.valid = False
        self.fresh = False
        self.received = False

    def accept(self, stamp_ns: int, now_ns: int, stale_ns: int) -> None:
        """Accept a parsed message's stamp; it becomes the topic's last stamp only if the message
        is accepted (a refused message never locks the topic out)."""
        if stamp_ns < self.stamp:
            raise InputError(f"{self.topic}: time went backwards (stamp {stamp_ns * 1e-9:.9f} s "
                             f"< previous {self.stamp * 1e-9:.9f} s)")
        if stamp_ns - now_ns > stale_ns:
            raise InputError(f"{self.topic}: stamp {(stamp_ns - now_ns) * 1e-9:.4f} s in the future of the "
                             f"node clock (more than stale_timeout {stale_ns * 1e-9:g} s; use_sim_time mismatch?)")
        self.stamp = stamp_ns
        self.valid = True
        self.fresh = True


class GeodynNode(Node):
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
        self._check_parameters(p)
        self._p = p
        self.model = None          # set by _setup_model (at start-up, or from the topic)
        self.base_link = None
        self.order = p["order"]
        self.mode = p["input_mode"]
        self.gravity = np.array(p["gravity"], dtype=float)
        self.stale_ns = int(round(p["stale_timeout"] * 1e9))
        self.world_frame = p["world_frame"]
        self.frame_prefix = p["frame_prefix"]   # checked by _check_parameters
        self.base_frame = None                   # frame_prefix + base link, set by _setup_model
        self.publish_jet = p["publish_jet"]
        self.publish_linearization = p["publish_linearization"]
        self.lin_representation = p["linearization_representation"]
        self.reference_representation = p["reference_representation"]
        self.limits = {k: float(p[k]) for k in ("max_position", "max_speed", "max_joint_rate",
                                                 "max_input_magnitude")}
        self.skew_ns = int(round(p["max_input_skew"] * 1e9))
        self.output_representation = p["output_representation"]
        self._convert_ref = self.reference_representation != "spatial"
        self.flat = self.mode == "flat"
        ref_topic = "flat_reference" if self.flat else "reference"
        self._slots = {ref_topic: _Slot(ref_topic)}
        self._last_now = -1

        qos = control_qos(p["qos_depth"])
        if self.flat:
            self.create_subscription(Float64MultiArray, "flat_reference",
                                     guard(self, self._on_flat_reference, "flat_reference"), qos, raw=True)
        else:
            self.create_subscription(Float64MultiArray, "reference", guard(self, self._on_reference, "reference"),
                                     qos, raw=True)
        if self.mode == "measured":
            self._slots["odom"] = _Slot("odom")
            self._slots["joint_states"] = _Slot("joint_states")
            # raw (serialized) subscriptions, decoded with numpy (geodyn_ros.ros.cdr): no Python
            # message objects on the 1 kHz path
            self.create_subscription(Odometry, "odom", guard(self, self._on_odom, "odom"), qos, raw=True)
            self.create_subscription(JointState, "joint_states", guard(self, self._on_joint_states, "joint_states"),
                                     qos, raw=True)
            self._js_names = name_cache()
        self._trigger_slots = [self._slots[ref_topic]] if self.mode != "measured" else \
            [self._slots["odom"], self._slots["joint_states"]]

        self._pub_wrench = self.create_publisher(WrenchStamped, "feedforward/wrench", qos)
        self._pub_efforts = self.create_publisher(JointState, "feedforward/joint_efforts", qos)
        self._pub_jet = self.create_publisher(Float64MultiArray, "feedforward/jet", qos)
        if self.flat:
            self._pub_desired = self.create_publisher(Float64MultiArray, "desired/state", qos)
            self._pub_flat = self.create_publisher(Float64MultiArray, "feedforward/flat_jet", qos)
            self._pub_rotors = (self.create_publisher(Float64MultiArray, "feedforward/rotor_speeds", qos)
                                if p["actuation_config"] else None)
        if self.publish_linearization:
            self._pub_lin = self.create_publisher(Float64MultiArray, "~/linearization", qos)
            latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                                 reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._pub_lin_labels = self.create_publisher(String, "~/linearization/labels", latched)

        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: feedforward", "",
                                        rate=p["diagnostics_rate"])
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(p["diagnostics_period"], guard(self, self._summary, "diagnostics timer"), clock=self._wall)
        self._rate_zero = p["rate_hz"] == 0
        if p["rate_hz"] > 0:
            self.create_timer(1.0 / p["rate_hz"], guard(self, self._on_timer, "cycle timer"))
        # the model: now from robot_description / urdf_path, or later from the topic
        self.model_source = ModelSource(self, p, self.diag, load=self._load_model, apply=self._setup_model,
                                        model_of=lambda loaded: loaded.model, period=p["diagnostics_period"])
        guard_time_source(self)

    # ------------------------------------------------------------------ the model
    def _load_model(self, source):
        """``model`` (:class:`geodyn_ros.Model` of ``source``, path or URDF XML, with the parameters
        ``base_link`` and ``locked_joints``, evaluated once at rest so a model whose dynamics cannot
        be computed is refused) and, in flat mode with ``actuation_config``, its ``allocation``
        (rotor joints locked, rotor frames of the URDF) and ``rotor_names``. Touches no node
        state: for the topic it runs on the loader thread."""
        p = self._p
        base = p["base_link"] or None
        locked = locked_joints_list(p)
        cfg = allocation = rotor_names = None
        if self.flat and p["actuation_config"]:
            from geodyn_ros.control.rotors import load_actuation_config
            try:
                cfg = load_actuation_config(p["actuation_config"])
            except ValueError as exc:
                raise ConfigurationError(f"parameter 'actuation_config': {exc}") from exc
            moving = gd.load_urdf(source, base_link=base).joint_names
            locked = locked + [j for j in cfg.rotor_joints if j in moving and j not in locked]
        model = gd.load_urdf(source, base_link=base, locked_joints=locked or None)
        r, n = self.order, model.n_joints
        res = gd.inverse_dynamics(model, np.eye(4), None if model.fixed_base else np.zeros((r + 2, 6)),
                                  np.zeros((r + 3, n)), r, gravity=self.gravity)
        if not (np.isfinite(res.base_wrench).all() and np.isfinite(res.tau).all()):
            raise ValueError("the inverse dynamics of this model at rest are not finite")
        if self.flat and model.fixed_base:
            raise ConfigurationError("input_mode 'flat': the model has a fixed base; the flat map needs a floating "
                                     "base (a multirotor)")
        if cfg is not None:
            from geodyn_ros.control.rotors import Allocation, rotor_frames_from_model
            try:
                rotor_names, frames = rotor_frames_from_model(model, cfg.rotor_links)
                allocation = Allocation.from_frames(frames, cfg.rotors)
            except ValueError as exc:
                raise ConfigurationError(f"parameter 'actuation_config': {exc}") from exc
        return SimpleNamespace(model=model, allocation=allocation, rotor_names=rotor_names)

    def _setup_model(self, loaded, first: bool = True) -> None:
        """Install a loaded model (and allocation) and build everything that depends on it
        (executor thread, between cycles).

        ``first``: the input buffers, reference decoder, joint-name matcher, output messages and
        packers, linearization packer and labels are built for the model's joints, and the model
        is logged. A replacement (``first`` False) has the same joint names, order and base link
        (:func:`geodyn_ros.ros.description.same_robot`), so all of that stays as it is, and with
        it the inputs already received: only the model (masses, inertias, geometry) changes,
        the linearization labels are republished (they name the model) and the change is logged.
        """
        model = loaded.model
        self.model = model
        self.allocation, self.rotor_names = loaded.allocation, loaded.rotor_names
        self.diag.hardware_id = model.name
        if not first:
            if self.publish_linearization:
                self._publish_linearization_labels()
            return
        r, n = self.order, model.n_joints
        self.base_link = model.base_link
        # Input buffers, filled in place by the parsers.
        self._C_ref = np.eye(4)
        self._V_ref = np.zeros((r + 2, 6))
        self._Q_ref = np.zeros((r + 3, n))
        # Spatial twist jet of the reference: the decoded buffer itself for a spatial reference
        # (default, no conversion), else a buffer filled by _convert_reference once per message.
        self._V_ref_sp = np.zeros((r + 2, 6)) if self._convert_ref else self._V_ref
        self._ref_converted = False
        self._C_meas = np.eye(4)
        self._V0_meas = np.zeros(6)
        self._q_meas = np.zeros(n)
        self._qd_meas = np.zeros(n)
        self._V_in = np.zeros((r + 2, 6))
        self._Q_in = np.zeros((r + 3, n))
        self._ref_decoder = ReferenceDecoder(model.joint_names, r)
        self._matcher = JointNameMatcher(model.joint_names)
        self._wrench_msg = WrenchStamped()
        self.base_frame = self.frame_prefix + self.base_link   # frame id of the base link
        self._wrench_msg.header.frame_id = self.base_frame
        self._efforts_msg = JointState()
        self._efforts_msg.name = list(model.joint_names)
        self._efforts_msg.effort = [0.0] * n
        # the three outputs of every cycle are published serialized: templates serialized once by
        # rclpy, the stamp and values rewritten in place (geodyn_ros.ros.cdr)
        self._raw_wrench = wrench_stamped_template(self._wrench_msg)
        self._raw_efforts = joint_state_template(self._efforts_msg)
        self._jet = FeedforwardJetPacker(model.joint_names, r)
        if self.flat:
            self._com_ref = np.zeros((r + 5, 3))
            self._yaw_ref = np.zeros(r + 3)
            self._flat_decoder = FlatReferenceDecoder(model.joint_names, r)
            self._desired_msg = Float64MultiArray()
            self._flat_jet = FlatFeedforwardPacker(model.joint_names, r)
            if self.allocation is not None:
                self._rotor_jet = RotorSpeedPacker(self.rotor_names, r)
        if self.publish_linearization:
            nv = 6 + n
            self._lin = LinearizationPacker(2 * nv, nv)
            self._publish_linearization_labels()
        p = self._p
        self.get_logger().info(
            f"model '{model.name}' ({n} joints, base '{self.base_link}'), order {r}, "
            + (f"{len(self.rotor_names)} rotors ({'collinear' if self.allocation.collinear else 'fully actuated'}), "
               if self.allocation is not None else "") +
            f"input_mode {self.mode}, rate_hz {p['rate_hz']:g}, "
            f"reference_representation {self.reference_representation}, "
            f"output_representation {self.output_representation}")

    # ------------------------------------------------------------------ parameters
    @staticmethod
    def _check_parameters(p: dict) -> None:
        if not 0 <= p["order"] <= MAX_ORDER:
            raise ConfigurationError(f"parameter 'order': must be an integer in 0..{MAX_ORDER}, "
                                     f"got {p['order']}")
        check_frame_prefix(p["frame_prefix"])
        if p["input_mode"] not in _MODES:
            raise ConfigurationError(f"parameter 'input_mode': must be one of {_MODES}, got "
                                     f"'{p['input_mode']}'")
        if len(p["gravity"]) != 3 or not np.isfinite(p["gravity"]).all():
            raise ConfigurationError(f"parameter 'gravity': must be 3 finite numbers, got {p['gravity']}")
        if not (np.isfinite(p["rate_hz"]) and p["rate_hz"] >= 0):
            raise ConfigurationError(f"parameter 'rate_hz': must be >= 0, got {p['rate_hz']}")
        if not (np.isfinite(p["stale_timeout"]) and p["stale_timeout"] > 0):
            raise ConfigurationError(f"parameter 'stale_timeout': must be > 0 s, got {p['stale_timeout']}")
        if p["qos_depth"] < 1:
            raise ConfigurationError(f"parameter 'qos_depth': must be >= 1, got {p['qos_depth']}")
        if not p["diagnostics_period"] > 0:
            raise ConfigurationError("parameter 'diagnostics_period': must be > 0")
        if p["linearization_representation"] not in _REPRESENTATIONS:
            raise ConfigurationError(f"parameter 'linearization_representation': must be one of "
                                     f"{_REPRESENTATIONS}, got '{p['linearization_representation']}'")
        if not (np.isfinite(p["diagnostics_rate"]) and p["diagnostics_rate"] > 0):
            raise ConfigurationError(f"parameter 'diagnostics_rate': must be > 0 messages/s, got "
                                     f"{p['diagnostics_rate']}")
        for k in ("max_position", "max_speed", "max_joint_rate", "max_input_magnitude"):
            if not (p[k] > 0):   # inf allowed: no limit
                raise ConfigurationError(f"parameter '{k}': must be > 0 (inf = no limit), got {p[k]}")
        if not (np.isfinite(p["max_input_skew"]) and p["max_input_skew"] >= 0):
            raise ConfigurationError(f"parameter 'max_input_skew': must be >= 0 s (0 = off), got "
                                     f"{p['max_input_skew']}")
        if p["reference_representation"] not in REPRESENTATIONS:
            raise ConfigurationError(f"parameter 'reference_representation': must be one of "
                                     f"{REPRESENTATIONS}, got '{p['reference_representation']}'")
        if p["output_representation"] not in REPRESENTATIONS:
            raise ConfigurationError(f"parameter 'output_representation': must be one of "
                                     f"{REPRESENTATIONS}, got '{p['output_representation']}'")

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

    # ------------------------------------------------------------------ callbacks
    def _now_ns(self) -> int:
        now = self.get_clock().now().nanoseconds
        if now < self._last_now:  # simulated time was reset: forget the old stamps
            for s in self._slots.values():
                s.stamp, s.valid, s.fresh = -1, False, False
        self._last_now = now
        return now

    def _receive(self, slot: _Slot, parse):
        slot.received = True
        now = self._now_ns()  # detects a simulated-time reset before the stamp-order check
        try:
            slot.accept(parse(), now, self.stale_ns)
        except InputError as exc:
            slot.valid = False
            slot.fresh = False
            self.diag.problem(slot.topic, str(exc))
            return
        if self._rate_zero and all(s.fresh for s in self._trigger_slots):
            self._cycle(now)

    def _plausible(self, topic: str, C=None, V=None, Q=None, qd=None, q=None) -> None:
        """Refuse finite but absurd inputs (parameters ``max_*``) like NaN: raises
        :class:`InputError` naming the field, its value and the limit."""
        lim = self.limits

        def over(field, value, name, unit="", scale=1.0):
            limit = lim[name] * scale
            if not value <= limit:
                raise InputError(f"{topic}: {field} = {value:.6g}{unit} exceeds the plausibility limit "
                                 f"{limit:.6g}{unit} (parameter '{name}' = {lim[name]:g})")
        p = np.zeros(3) if C is None else C[:3, 3]
        if C is not None:
            over("|base position|", float(np.linalg.norm(p)), "max_position", " m")
        if V is not None:
            w, v = V[0, :3], V[0, 3:]
            over("|base angular velocity|", float(np.linalg.norm(w)), "max_speed", " rad/s")
            vo = (v[0] - (p[1] * w[2] - p[2] * w[1]), v[1] - (p[2] * w[0] - p[0] * w[2]),
                  v[2] - (p[0] * w[1] - p[1] * w[0]))      # v - p x w, without np.cross's overhead
            over("|base origin velocity|", math.sqrt(vo[0] ** 2 + vo[1] ** 2 + vo[2] ** 2), "max_speed", " m/s")
            if len(V) > 1:   # spatial rows carry p x (...) terms: allowed (1 + |p|) times the limit
                over("max |base twist derivative|", float(np.abs(V[1:]).max()), "max_input_magnitude",
                     scale=1.0 + float(np.linalg.norm(p)))
        if Q is not None:
            qd, q = Q[1], np.concatenate([Q[:1].ravel(), Q[2:].ravel()])
        if qd is not None:
            over("max |qdot|", float(np.abs(qd).max(initial=0.0)), "max_joint_rate")
        if q is not None:
            over("max |joint position or derivative|", float(np.abs(q).max(initial=0.0)), "max_input_magnitude")

    def _ready(self, topic: str) -> bool:
        """Start of every input callback: apply a loaded robot_description (between cycles); False
        (input reported as not used) while there is no model yet."""
        self.model_source.poll()
        if self.model is None:
            self.model_source.refuse_input(topic)
            return False
        return True

    def _on_reference(self, msg) -> None:
        if not self._ready("reference"):
            return
        self._ref_converted = False  # the buffers change (even if the message turns out bad)

        def parse():
            ref = decode_float64_multiarray(msg, "reference")
            stamp = self._ref_decoder.decode(ref, self._C_ref, self._V_ref, self._Q_ref)
            V = self._V_ref if self.reference_representation == "spatial" else None
            self._plausible("reference", self._C_ref, V, self._Q_ref)
            return stamp
        self._receive(self._slots["reference"], parse)

    def _on_flat_reference(self, msg) -> None:
        if not self._ready("flat_reference"):
            return

        def parse():
            ref = decode_float64_multiarray(msg, "flat_reference")
            stamp = self._flat_decoder.decode(ref, self._com_ref, self._yaw_ref, self._Q_ref)
            self._plausible_flat(self._com_ref, self._yaw_ref, self._Q_ref)
            return stamp
        self._receive(self._slots["flat_reference"], parse)

    def _plausible_flat(self, com, yaw, Q) -> None:
        """The plausibility limits on a flat reference: |c| (max_position), |c'| and |psi'|
        (max_speed), |q'| (max_joint_rate), every other entry (max_input_magnitude)."""
        lim, t = self.limits, "flat_reference"
        checks = (("|CoM position|", float(np.linalg.norm(com[0])), "max_position", " m"),
                  ("|CoM velocity|", float(np.linalg.norm(com[1])), "max_speed", " m/s"),
                  ("|yaw rate|", abs(float(yaw[1])), "max_speed", " rad/s"),
                  ("max |qdot|", float(np.abs(Q[1]).max(initial=0.0)), "max_joint_rate", ""),
                  ("max |higher CoM derivative|", float(np.abs(com[2:]).max()), "max_input_magnitude", ""),
                  ("max |yaw or derivative|", float(np.abs(np.r_[yaw[:1], yaw[2:]]).max()), "max_input_magnitude", ""),
                  ("max |joint position or derivative|",
                   float(np.abs(np.concatenate([Q[:1].ravel(), Q[2:].ravel()])).max(initial=0.0)),
                   "max_input_magnitude", ""))
        for field, value, name, unit in checks:
            if not value <= lim[name]:
                raise InputError(f"{t}: {field} = {value:.6g}{unit} exceeds the plausibility limit "
                                 f"{lim[name]:.6g}{unit} (parameter '{name}' = {lim[name]:g})")

    def _on_odom(self, msg) -> None:
        if not self._ready("odom"):
            return

        def parse():
            sec, nsec, frame, child, pose, twist = decode_odometry(msg, "odom")
            if frame and frame != self.world_frame:
                raise InputError(f"odom: header.frame_id '{frame}' is not the world frame '{self.world_frame}'")
            odometry_from_fields(child, pose, twist, self._C_meas, self._V0_meas, self.base_frame)
            self._plausible("odom", self._C_meas, self._V0_meas[None, :])
            return sec * 1_000_000_000 + nsec
        self._receive(self._slots["odom"], parse)

    def _on_joint_states(self, msg) -> None:
        if not self._ready("joint_states"):
            return

        def parse():
            sec, nsec, names, position, velocity = decode_joint_state(msg, "joint_states", self._js_names)
            if len(velocity) == 0:
                raise InputError("joint_states: no velocity field (measured mode needs qdot)")
            self._matcher.gather(names, position, self._q_meas, "joint_states.position")
            self._matcher.gather(names, velocity, self._qd_meas, "joint_states.velocity")
            self._plausible("joint_states", qd=self._qd_meas, q=self._q_meas)
            return sec * 1_000_000_000 + nsec
        self._receive(self._slots["joint_states"], parse)

    def _on_timer(self) -> None:
        self.model_source.poll()
        if self.model is not None and any(s.fresh for s in self._slots.values()):
            self._cycle()

    def _summary(self) -> None:
        if self.model is None:
            return   # the model source reports "waiting for robot_description" at the same period
        waiting = [s.topic for s in self._slots.values() if not s.received]
        if waiting and not self.diag.last_problem:
            self.diag.publish_status(DiagnosticStatus.WARN, f"waiting for {', '.join(waiting)}")
        else:
            self.diag.publish_summary()

    # ------------------------------------------------------------------ the cycle
    def _cycle(self, now: int | None = None) -> None:
        """One cycle; ``now``: the node clock [ns] read by the triggering callback (else read here)."""
        for s in self._slots.values():
            s.fresh = False
        if now is None:
            now = self._now_ns()
        for s in self._slots.values():
            if not s.valid:
                if s.received:
                    self.diag.problem(s.topic, f"{s.topic}: no valid message since the last bad one")
                return
            age = now - s.stamp
            if age > self.stale_ns:
                self.diag.problem(f"stale {s.topic}", f"{s.topic}: stale input, {age * 1e-9:.4f} s "
                                  f"old (stale_timeout {self.stale_ns * 1e-9:g} s)")
                return
            if age < -self.stale_ns:
                self.diag.problem(f"future {s.topic}", f"{s.topic}: stamp {-age * 1e-9:.4f} s in "
                                  f"the future of the node clock (use_sim_time mismatch?)")
                return
        if self.flat:
            self._flat_cycle()
            return
        if self._convert_ref and not self._ref_converted and not self._convert_reference():
            return
        if self.mode == "reference":
            C, V, Q = self._C_ref, self._V_ref_sp, self._Q_ref
            stamp = self._slots["reference"].stamp
        else:
            C, V, Q = self._C_meas, self._V_in, self._Q_in
            V[:] = self._V_ref_sp  # the reference's spatial jet (converted at the reference pose)
            Q[:] = self._Q_ref
            V[0] = self._V0_meas
            Q[0] = self._q_meas
            Q[1] = self._qd_meas
            stamps = [self._slots[k].stamp for k in ("odom", "joint_states", "reference")]
            if self.skew_ns:
                if max(stamps) - min(stamps) > self.skew_ns:
                    self.diag.problem("skew", f"inputs not within max_input_skew {self.skew_ns * 1e-9:g} s "
                                      f"(odom, joint_states, reference stamps span "
                                      f"{(max(stamps) - min(stamps)) * 1e-9:.6f} s); set skipped")
                    return
                stamp = min(stamps)
            else:
                stamp = max(stamps[:2])
        try:
            res = gd.inverse_dynamics(self.model, C, V, Q, self.order, gravity=self.gravity)
        except ValueError as exc:  # e.g. a pose that is not rigid
            self.diag.problem("dynamics", f"inverse dynamics rejected the inputs: {exc}")
            return
        W, tau = res.base_wrench, res.tau
        if not (np.isfinite(W).all() and np.isfinite(tau).all()):
            self.diag.problem("nonfinite", "inverse dynamics produced NaN/Inf; not published")
            return
        W0_body = spatial_to_body_wrench(C, W[0])
        W_out = W
        if self.output_representation != "spatial" and self.publish_jet:
            try:
                W_out = gd.convert_wrench(C, W, V, "spatial", self.output_representation)
            except ValueError as exc:  # not expected: C and V were checked by the dynamics
                self.diag.problem("output_representation", f"cannot convert the wrench jet to "
                                  f"{self.output_representation}: {exc}")
                return
        self._publish(stamp, W0_body, W_out, tau)
        if self.publish_linearization and not self._publish_linearization(stamp, C, V, Q, W, W0_body, tau):
            return  # the feedforward went out; the failed linearization counts as a skipped cycle
        self.diag.ok()
        self.diag.clear()

    def _flat_cycle(self) -> None:
        """One cycle of the flat mode (module docstring): the flat map, then every output."""
        stamp = self._slots["flat_reference"].stamp
        try:
            res = gd.flat_inverse_dynamics(self.model, self._com_ref, self._yaw_ref, self._Q_ref, self.order,
                                           gravity=self.gravity)
        except ValueError as exc:   # free fall, yaw singularity, a result that is not finite
            self.diag.problem("flat map", f"flat_reference: the flat map refused the sample: {exc}")
            return
        C, V, W, tau = res.base_pose, res.base_twist, res.base_wrench, res.tau
        W0_body = np.empty(6)
        W0_body[:3] = res.body_torque[0]
        W0_body[3:5] = 0.0
        W0_body[5] = res.thrust[0]
        W_out = W
        if self.output_representation != "spatial" and self.publish_jet:
            W_out = gd.convert_wrench(C, W, V, "spatial", self.output_representation)
        omega = None
        if self.allocation is not None:
            omega = self._rotor_speed_jet(res.thrust, res.body_torque)
        self._publish(stamp, W0_body, W_out, tau)
        self._pub_desired.publish(make_reference_msg(stamp, C, V, res.q[:V.shape[0]], self.model.joint_names,
                                                     self._desired_msg))
        self._pub_flat.publish(self._flat_jet.pack(stamp, res.thrust, res.body_torque, tau))
        if omega is not None:
            self._pub_rotors.publish(self._rotor_jet.pack(stamp, omega))
        if self.publish_linearization and not self._publish_linearization(stamp, C, V, res.q, W, W0_body, tau):
            return
        if self.allocation is not None and omega is None:
            return   # reported by _rotor_speed_jet; the other outputs went out
        self.diag.ok()
        self.diag.clear()

    def _rotor_speed_jet(self, thrust, torque):
        """``omega_d^(0..r)`` (r+1, n_r) of ``u = A4^+ (T, tau_b)`` (u = omega^2; the allocation is
        constant, so ``u^(k) = A4^+ (T^(k), tau_b^(k))``) by the square-root series, or None (reported)
        when a rotor would need ``u <= 0`` or more than ``max_rot_velocity``."""
        al = self.allocation
        u = al.allocate_thrust_torque(thrust, torque)            # (r+1, n_r), row k = u^(k)
        if not (u[0] > 0.0).all() or not (u[0] < al.max_rot_velocity ** 2).all():
            i = int(np.argmin(u[0])) if not (u[0] > 0.0).all() else int(np.argmax(u[0]))
            self.diag.problem("rotor feedforward", f"feedforward/rotor_speeds not published: rotor "
                              f"{self.rotor_names[i]} would need omega^2 = {u[0, i]:.6g} (outside (0, "
                              f"{al.max_rot_velocity:g}^2) rad^2/s^2); the other outputs are published")
            return None
        # Taylor coefficients: u_k = u^(k)/k!, w = sqrt(u): w_0 = sqrt(u_0), w_k = (u_k - sum w_j w_(k-j)) / (2 w_0)
        fact = np.cumprod(np.r_[1.0, np.arange(1, len(u))])
        ut = u / fact[:, None]
        w = np.empty_like(ut)
        w[0] = np.sqrt(ut[0])
        for k in range(1, len(ut)):
            w[k] = (ut[k] - sum(w[j] * w[k - j] for j in range(1, k))) / (2.0 * w[0])
        return w * fact[:, None]

    def _convert_reference(self) -> bool:
        """Fill ``_V_ref_sp`` with the spatial jet of the reference twist jet ``_V_ref`` (in
        ``reference_representation``) at the reference pose ``_C_ref``, the pose the jet belongs
        to; on failure report the problem and return False (the cycle is skipped)."""
        try:
            self._V_ref_sp[:] = gd.convert_twist(self._C_ref, self._V_ref,
                                                 self.reference_representation, "spatial")
            self._plausible("reference", self._C_ref, self._V_ref_sp)
        except InputError as exc:
            self.diag.problem("reference", str(exc))
            return False
        except ValueError as exc:  # not expected: the decoder checks the pose and NaN/Inf
            self.diag.problem("reference_representation", f"reference: cannot convert the "
                              f"{self.reference_representation} twist jet to spatial: {exc}")
            return False
        self._ref_converted = True
        return True

    def _publish(self, stamp_ns: int, W0_body, W, tau) -> None:
        w = self._raw_wrench
        w.set_stamp(stamp_ns)
        w.fields["torque"][:] = W0_body[:3]
        w.fields["force"][:] = W0_body[3:]
        e = self._raw_efforts
        e.set_stamp(stamp_ns)
        if "effort" in e.fields:
            e.fields["effort"][:] = tau[0]
        self._pub_wrench.publish(w.payload())
        self._pub_efforts.publish(e.payload())
        if self.publish_jet:
            self._pub_jet.publish(self._jet.pack_raw(stamp_ns, W, tau))

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


def main(args=None) -> int:
    """Console script ``geodyn_node`` (also ``ros2 run geodyn_ros geodyn_node``)."""
    return run_nodes([GeodynNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
