"""The rejection options of the controller nodes as ROS parameters, and the observer's estimate
on ``~/external_wrench`` (issue 53 item 4).

:data:`REJECTION_PARAMETERS` are spliced into the ``PARAMETERS`` of ``geodyn_flat_controller``
(geometric and ``feedback: lqr``) and ``geodyn_actuated_controller``; each is a field of
:class:`~geodyn_ros.control.rejection.RejectionOptions` with ``rejection_`` in front (the law,
its defaults and their sources: :mod:`geodyn_ros.control.rejection.options`). They are read once
at start-up (read-only); a bad value stops the node with one line naming the parameter. Every
switch off (the default): no :class:`~geodyn_ros.control.rejection.Rejection` is made, and the
node computes and publishes exactly what it did before.

The observer's inputs are the node's existing ones: the measured state (``odom``,
``joint_states``, ``motor_states``), the rotor speeds it commanded (through gz-sim's rotor filter,
:class:`~geodyn_ros.control.rejection.RotorSpeedModel`) and the joint torques it commanded (the
elastic joints' spring torques from ``motor_states``). The sample time is the state's stamp.

With any switch on the node publishes, after each command of a measured state,

* ``~/external_wrench`` (``geometry_msgs/WrenchStamped``, stamped with the state, ``frame_id`` the
  base link with ``frame_prefix``): the total external wrench the observer reads
  (:attr:`~geodyn_ros.control.rejection.WrenchEstimate.wrench_body`: base axes, the moment
  about the base origin; ``r`` of the momentum observer, a first-order low-pass at
  ``rejection_observer_bandwidth`` of what the model misses). A thrust-scale estimate takes its
  share out of it (what ``rejection_thrust_estimate`` has learned is in the model then).
* with ``rejection_frame``, also ``~/external_wrench/frame`` (``frame_id`` the named link with
  ``frame_prefix``): the force the joint rows put at ``rejection_frame_point`` (that link's axes),
  in that link's axes, as a wrench about the link's origin (moment ``p x f``); its directions the
  arm cannot resolve are 0 (:attr:`~geodyn_ros.control.rejection.WrenchEstimate.frame_rank`).

Nothing is published before the second measured sample (the observer needs two), nor for a
cycle the failsafe commands from a held or predicted state: its command uses the last estimate
frozen (no update, no integration; :attr:`Rejection.frozen`), and the observer restarts at the
next measured sample keeping the learned thrust scale, CoM offset and integrators
(:meth:`Rejection.restart`; also when the stamps go back, e.g. a simulator reset). A model
replaced on the ``robot_description`` topic starts a new observer.

**When they act** (``rejection_engage``, :mod:`geodyn_ros.control.rejection.options`): a vehicle
on the ground or disarmed is held, and an observer reading the hold as an external wrench winds
the command up (PX4 SITL, issue 53). The nodes' default is ``airborne`` (engaged once the base
rose ``rejection_takeoff_height`` above where it stood, disengaged on landing); ``armed`` also
needs the ``armed`` topic true (``std_msgs/Bool``, reliable, transient local; ``geodyn_px4_bridge``
publishes PX4's armed-and-offboard; no message yet: disengaged), and then the same rise; ``always``
is the library's (a simulator started in flight). Each engagement and disengagement is said in one log line.
"""
from __future__ import annotations

import math

import numpy as np

from geodyn_ros.control.rejection import RejectionOptions

from ..common.params import ConfigurationError

__all__ = ["REJECTION_PARAMETERS", "RejectionInputs", "rejection_options"]

_D = RejectionOptions()
_PREFIX = "rejection_"

#: the parameters (name -> (default, description)); the names are stable (PX4 SITL flies them)
REJECTION_PARAMETERS = {
    "rejection_wrench_feedforward": (False, "Cancel the whole-body observer's external wrench (and its joint rows) "
                                     "in the command; publishes ~/external_wrench."),
    "rejection_integral_action": (False, "Integral of the position error (CoM, base pose or the LQR's integral "
                                  "states); anti-windup: clamp rejection_integral_limit, frozen while a rotor clips."),
    "rejection_thrust_estimate": (False, "Estimate the thrust scale k (hover-thrust estimate) and divide the "
                                  "allocation by it."),
    "rejection_com_estimate": (False, "Estimate the plant's CoM offset perpendicular to the thrust (flatness, LQR; "
                               "the actuated controller tracks the base and ignores it)."),
    "rejection_observer": (_D.observer, "'whole_body' (the package's momentum observer on the full model) or "
                           "'rigid_body' (the anchors': arm frozen, no joint rows)."),
    "rejection_observer_bandwidth": (_D.observer_bandwidth, "Observer bandwidth K_O [rad/s]: above the position "
                                     "loop, below the rotors (55 rad/s) and the elastic modes."),
    "rejection_integral_bandwidth": (0.0, "Integral bandwidth omega_i [rad/s], k_i = k_p omega_i; 0 = a tenth of "
                                     "the position loop's sqrt(k_p / m)."),
    "rejection_integral_limit": (_D.integral_limit, "Clamp of the integral force per axis, a fraction of the "
                                 "weight (moments: that force at the rotor arm)."),
    "rejection_thrust_estimate_bandwidth": (_D.thrust_estimate_bandwidth, "Thrust-scale adaptation rate gamma "
                                            "[rad/s] (settles in about 3 / gamma s)."),
    "rejection_thrust_scale_limits": (list(_D.thrust_scale_limits), "Clamp [low, high] of the thrust scale, "
                                      "0 < low < 1 < high."),
    "rejection_com_estimate_bandwidth": (_D.com_estimate_bandwidth, "Low-pass of the CoM-offset estimate [rad/s]."),
    "rejection_com_estimate_limit": (0.0, "Clamp of the CoM-offset estimate's norm [m]; 0 = a quarter of the "
                                     "rotor arm."),
    "rejection_com_estimate_force_point": ("rotors", "Where the CoM estimate takes a horizontal residual force "
                                           "(wind, rotor drag, a push) to act, so that its moment is not read as a CoM "
                                           "offset: 'rotors' (their centroid), 'x, y, z' in base axes [m], or 'com' "
                                           "(the whole moment read as a CoM offset)."),
    "rejection_frame": ("", "A link at which the whole-body observer also estimates the force (the "
                        "end-effector); publishes ~/external_wrench/frame. Empty = none."),
    "rejection_frame_point": ([0.0, 0.0, 0.0], "The point of rejection_frame where that force acts, in the "
                              "link's axes [m] (the tool point)."),
    "rejection_engage": ("airborne", "When the options act: 'airborne' (the default: once the base rose "
                         "rejection_takeoff_height above where it stood, off again on landing; a vehicle on the "
                         "ground or disarmed would wind the observer up), 'armed' (the same rise counted from the 'armed' topic, "
                         "std_msgs/Bool, turning true, and off at once when false: geodyn_px4_bridge publishes PX4's "
                         "armed-and-offboard) or "
                         "'always' (a simulator started in flight)."),
    "rejection_takeoff_height": (0.0, "The rise [m] that engages rejection_engage 'airborne' or 'armed'; 0 = the rotor arm "
                                 "(at least 0.05 m)."),
}


def _force_point(name: str, v: str):
    """``rejection_com_estimate_force_point``'s text as the option: ``"rotors"``, None (``"com"``) or
    three numbers (``"x, y, z"``), else :class:`ConfigurationError` naming ``name``."""
    t = str(v).strip()
    if t in ("rotors", "com"):
        return None if t == "com" else t
    try:
        xyz = tuple(float(x) for x in t.split(","))
    except ValueError:
        xyz = ()
    if len(xyz) != 3 or not all(math.isfinite(x) for x in xyz):
        raise ConfigurationError(f"parameter '{name}': expected 'rotors', 'com' or 'x, y, z' (3 finite numbers "
                                 f"[m] in base axes), got {str(v)[:60]!r}")
    return xyz


def rejection_options(p: dict) -> RejectionOptions | None:
    """The :class:`RejectionOptions` of the parameter values ``p`` (None: every switch off), or
    :class:`ConfigurationError` in one line naming the parameter."""
    kw = {}
    for name in REJECTION_PARAMETERS:
        field, v = name[len(_PREFIX):], p[name]
        if field in ("integral_bandwidth", "com_estimate_limit", "takeoff_height"):
            if not (math.isfinite(v) and v >= 0):
                raise ConfigurationError(f"parameter '{name}': expected 0 (the default) or a finite positive "
                                         f"number, got {v}")
            v = v or None
        elif field == "frame":
            if v != v.strip() or any(not c.isprintable() for c in v):
                raise ConfigurationError(f"parameter '{name}': {v!r} is not a link name")
            v = v or None
        elif field == "com_estimate_force_point":
            v = _force_point(name, v)
        elif field in ("thrust_scale_limits", "frame_point"):
            v = tuple(v)
        kw[field] = v
    try:
        opts = RejectionOptions(**kw)
    except ValueError as exc:
        field, _, why = str(exc).partition(": ")
        raise ConfigurationError(f"parameter '{_PREFIX}{field}': {why}") from None
    if opts.frame is not None and opts.observer != "whole_body":
        raise ConfigurationError(f"parameter 'rejection_frame': the force at a frame needs the whole-body "
                                 f"observer's joint rows; set rejection_observer: whole_body (got "
                                 f"'{opts.observer}') or leave rejection_frame empty")
    if any(v != 0.0 for v in opts.frame_point) and opts.frame is None:
        raise ConfigurationError("parameter 'rejection_frame_point': set rejection_frame (the link of this point)")
    return opts if opts.active else None


def _check_frame(opts: RejectionOptions | None, model) -> None:
    """``rejection_frame`` is a link of ``model`` (ConfigurationError naming it otherwise)."""
    if opts is None or opts.frame is None:
        return
    if opts.frame not in model.link_home:
        raise ConfigurationError(f"parameter 'rejection_frame': '{opts.frame}' is not a link of the model "
                                 f"'{model.name}'")


class RejectionInputs:
    """Mixin of the controller nodes (module docstring). The node calls :meth:`_init_rejection`
    with its parameters (before its model), :meth:`_check_rejection_model` when it loads one,
    :meth:`_rejection_time` before and :meth:`_rejection_publish` after each law evaluation; the
    failsafe's held cycles freeze the observer (:meth:`_with_inputs`). The node provides ``ctrl``
    (with ``rejection``), ``model``, ``base_frame``, ``frame_prefix`` and ``diag``."""

    def _init_rejection(self, p: dict) -> None:
        self.rejection_options = rejection_options(p)
        self._rj_restart = False
        self._rj_pub = self._rj_frame_pub = None
        if self.rejection_options is None:
            return
        from geometry_msgs.msg import WrenchStamped

        from ..common.runtime import control_qos
        qos = control_qos(p["qos_depth"])
        self._rj_engaged = None         # the engagement last said (a log line at each change)
        self._rj_armed = False          # the last 'armed' message (engage: armed)
        if self.rejection_options.engage == "armed":
            from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
            from std_msgs.msg import Bool

            from ..common.diagnostics import guard
            self.create_subscription(Bool, "armed", guard(self, self._on_armed, "armed"), QoSProfile(
                depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._rj_pub = self.create_publisher(WrenchStamped, "~/external_wrench", qos)
        self._rj_msg = WrenchStamped()
        if self.rejection_options.frame is not None:
            self._rj_frame_pub = self.create_publisher(WrenchStamped, "~/external_wrench/frame", qos)
            self._rj_frame_msg = WrenchStamped()

    def _check_rejection_model(self, model) -> None:
        _check_frame(self.rejection_options, model)

    def _on_armed(self, msg) -> None:
        """``armed`` (std_msgs/Bool): applied at the next cycle."""
        self._rj_armed = bool(msg.data)

    @property
    def _rejection(self):
        ctrl = getattr(self, "ctrl", None)
        return None if ctrl is None else getattr(ctrl, "rejection", None)

    def _rejection_time(self, t_ns: int) -> float:
        """The sample time [s] of the state stamped ``t_ns``; restarts the observer after a held
        cycle or when the stamps went back."""
        t = t_ns * 1e-9
        rj = self._rejection
        if rj is not None and rj.options.engage == "armed" and rj.armed != self._rj_armed:
            rj.set_engaged(self._rj_armed)
        if rj is not None and not rj.frozen:
            last = rj.last_time
            if self._rj_restart or (last is not None and not t > last):
                if last is not None and not t > last:
                    self.get_logger().warning(f"rejection: the state's stamp {t:.9f} s is not after the last one "
                                           f"({last:.9f} s): the observer restarts", throttle_duration_sec=5.0)
                rj.restart()
            self._rj_restart = False
        return t

    def _say_engagement(self, rj) -> None:
        """One log line per change of :attr:`Rejection.engaged` (the first: where it starts)."""
        first, self._rj_engaged = self._rj_engaged is None, rj.engaged
        mode = rj.options.engage
        if rj.engaged:
            why = {"always": "engage: always", "armed": f"armed and airborne (rose {rj.takeoff_height:.3g} m)",
                   "airborne": f"airborne (rose {rj.takeoff_height:.3g} m)"}[mode]
            self.get_logger().info(f"rejection: engaged, {why}")
        elif first:
            why = (f"until the base rises {rj.takeoff_height:.3g} m (rejection_engage: airborne)" if mode == "airborne"
                   else f"until the 'armed' topic says true and the base rises {rj.takeoff_height:.3g} m "
                        "(rejection_engage: armed)")
            self.get_logger().info(f"rejection: waiting, {why}")
        else:
            why = "not armed" if mode == "armed" and not rj.armed else "landed"
            self.get_logger().info(f"rejection: disengaged ({why}): integrators zeroed, estimate dropped")

    def _with_inputs(self, t_ns, values, state, t=None):
        """The failsafe's command on held inputs (:mod:`geodyn_ros.ros.inputs.failsafe_inputs`): with
        the observer frozen unless the state is the live one; it restarts at the next measured sample."""
        rj = self._rejection
        if rj is None or state == "live":
            return super()._with_inputs(t_ns, values, state, t)
        rj.frozen = True
        try:
            return super()._with_inputs(t_ns, values, state, t)
        finally:
            rj.frozen = False
            self._rj_restart = True

    def _rejection_publish(self, t_ns: int) -> None:
        """``~/external_wrench`` (and ``/frame``) of the estimate of the sample ``t_ns``."""
        rj = self._rejection
        if rj is None or rj.frozen or self._rj_pub is None:
            return
        if rj.engaged != self._rj_engaged:
            self._say_engagement(rj)
        est = rj.estimate
        # the estimate of this sample: its time is the float _rejection_time gave (t_ns * 1e-9); the
        # round trip to integer ns is not exact at epoch stamps (2^53 ns is 104 days), so never compare in ns
        if est is None or est.t != t_ns * 1e-9:
            return
        from ..wire.conversions import write_body_wrench
        W = est.wrench_body
        if not np.all(np.isfinite(W)):
            return
        m = self._rj_msg
        m.header.frame_id = self.base_frame
        write_body_wrench(m, t_ns, W)
        self._rj_pub.publish(m)
        if self._rj_frame_pub is not None and est.frame is not None:
            Rf = _link_rotation(self.model, est.frame, self._C, self._q)
            f = Rf.T @ est.frame_force
            pnt = np.asarray(rj.options.frame_point, float)
            fm = self._rj_frame_msg
            fm.header.frame_id = self.frame_prefix + est.frame
            write_body_wrench(fm, t_ns, np.r_[np.cross(pnt, f), f])
            self._rj_frame_pub.publish(fm)


def _link_rotation(model, link: str, C, q) -> np.ndarray:
    """The world attitude (3, 3) of ``link`` at the configuration ``(C, q)``."""
    from geodyn_ros.algorithms.api import forward_kinematics
    b = model.body_of_link(link)
    kin = forward_kinematics(model, C, np.zeros((1, 6)), np.stack([q, np.zeros_like(q)]))
    off = np.linalg.solve(model.link_home[model.link_names[b]], model.link_home[link])
    return (kin.poses[b] @ off)[:3, :3]

