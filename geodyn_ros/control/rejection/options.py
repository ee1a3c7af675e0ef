"""Rejection of what the model misses: the options every controller shares, and their state (ROS-free).

The flatness (:class:`~geodyn_ros.control.flatness.FlatnessController`), actuated
(:class:`~geodyn_ros.control.actuated.ActuatedController`) and LQR
(:class:`~geodyn_ros.control.lqr.LqrController`) controllers take ``rejection=RejectionOptions(...)``.
Every option is off by default, and then the controllers compute exactly what they computed
before (bit-identical rows, ``bench/loops/rows_bit_identity.py``). What each option does
(equations in ``doc/explanation/observer.md``):

``wrench_feedforward``
    The whole-body momentum observer (:class:`~geodyn_ros.control.rejection.observer.MomentumObserver`,
    bandwidth ``observer_bandwidth``) estimates the external wrench from the measured state and
    the applied forces (rotor speeds through the allocation, joint torques); its base wrench is
    subtracted from the wrench the controller asks of the rotors and its joint rows from the
    joint torques. The estimate is held constant over the feedforward horizon (zero derivatives in
    the rotor-lag and elastic-joint jets).
``integral_action``
    Integral of the position error (the CoM for the flatness controller, the base pose for the
    actuated one, the base position of the LQR's error state ``delta``), gain
    ``k_i = k_p omega_i`` with ``omega_i = integral_bandwidth`` (default a tenth of the position
    loop's natural frequency ``sqrt(k_p / m)``, 0.38 rad/s on the hexarotor: a decade below the
    PD, so that it removes what stays constant and leaves the tracking band alone; at a quarter
    the PID's phase hump sits on the figure eight's second harmonic and the rigid level's CoM RMS
    on the exact plant rose from 2.45 to 3.26 mm, at a tenth to 2.72 mm, measured). Alone it
    settles slowly (its slowest pole 0.48 rad/s: a 5 % thrust error still leaves 2.4 mm after
    8 s); with the observer's feedforward it only trims what the observer misses. Anti-windup: the integrator
    stops while a rotor command was clipped on the last cycle (conditional integration), and its
    output is clamped to ``integral_limit`` (default 0.2) times the weight per axis (moments: that
    force at the rotor arm).
``thrust_estimate``
    A thrust-scale (hover-thrust) estimate ``k``: the plant's rotor wrench is ``k A x^2``. The
    observer's body-``z`` force residual updates ``k' = gamma r_z / T_x`` (``T_x`` the thrust of
    the speeds ``x``, ``gamma = thrust_estimate_bandwidth``), and the allocation divides by ``k``,
    so the whole feedforward jet is scaled (ff1's lag term included). A thrust-constant error
    ``k`` and a total-mass error ``s`` (``k = 1/s`` for the base) read alike; ``k`` is clamped to
    ``thrust_scale_limits`` and frozen below 30 % of the model's weight (on the ground, free fall)
    or while rotors clip. PX4's hover-thrust estimator plays this role.
``com_estimate``
    The CoM offset ``delta`` (base axes) of the plant from the model, perpendicular to the thrust:
    the observer's moment about the model's CoM, ``n_c = f x delta`` with ``f`` the total
    non-gravity force (rotors plus residual), gives ``delta = (n_c x f) / |f|^2``, low-passed at
    ``com_estimate_bandwidth`` and clamped to ``com_estimate_limit`` (default a quarter of the
    rotor arm). The flatness controller then regulates the estimated true CoM; the LQR shifts its
    nominal base position. The component along the thrust is unobservable in hover and stays 0.
    A CoM error exerts no residual force, only the moment of the weight at the wrong point; a
    residual force has a moment of its own, and read whole it would be taken for a CoM offset
    (a 15 N push on the collinear hexarotor's base, 10 cm above its CoM: 25 mm off, where 1 mm
    is left without the estimate). So before ``delta`` is read, ``n_c`` loses the moment of the
    residual force: its vertical part (world ``z``: a weight or thrust error) taken at the CoM,
    its horizontal part (wind, rotor drag, a push) at ``com_estimate_force_point``: ``"rotors"``
    (the default: the centroid of the rotors' origins, where rotor drag, the largest force of the
    wind on a multirotor, acts; the base origin when the allocation was not built from rotor
    frames), a point (3,) [m] in base axes, or None (at the CoM too: the whole moment is read as a
    CoM offset). With a ``frame`` (the end-effector), the whole-body observer's joint rows give
    the force there and the remainder on the base (``frame_force`` and
    ``base_wrench_body``): the CoM estimate reads the remainder, so a push at the tool is not
    taken for a CoM error either. Without a frame, a horizontal force applied elsewhere than the
    force point reads its lever arm from that point: a stated limit.

**When the options act** (``engage``). An observer of a vehicle whose commands are not applied
(disarmed, PX4 in another mode) or that is held (the ground, a stand) reads the holding force as
an external wrench, and its feedforward and the integral then wind the command up to full
thrust: PX4 SITL, issue 53, the command at a rotor limit on the ground before arming, two of
three flights lost. ``engage``:

* ``"always"`` (the default of the library: the in-process loops that start in flight): engaged
  from the first sample;
* ``"airborne"``: engaged once the base has risen ``takeoff_height`` (default the rotor arm, at
  least 5 cm: far above any height noise, reached in 0.2 s at PX4's 1.5 m/s take-off speed) above
  the lowest height seen while disengaged, and disengaged again when it comes back within half of
  it (landed: hysteresis). Flies below its take-off height only with ``"always"`` or ``"armed"``;
* ``"armed"``: ``"airborne"`` counted from the arming only: after :meth:`Rejection.set_engaged`
  (True) (the ROS nodes: the ``armed`` topic, true while the autopilot applies the commands: PX4
  armed and in offboard) AND a rise of ``takeoff_height`` since; disarming disengages at once.
  Armed on the ground is not enough: PX4 SITL (SIH, whose ground holds no torque) lost 6 of 9
  flights with the observer engaged at arming, on the ground.

While disengaged the observer restarts at every sample (no estimate, so no feedforward), the
integrators are held at zero and the thrust-scale and CoM estimates do not learn (what was
learned is kept). Engaging starts the observer from that sample.

The state: :class:`Rejection` (one per controller). The controllers call :meth:`Rejection.observe`
at the top of each cycle (the state of this sample, the command of the last one) and
:meth:`Rejection.sent` with the command they return. The sampling period is the difference of
the ``t`` given to ``command`` or, without ``t``, ``timestep``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...algorithms.api import center_of_mass
from ...model.model import Model
from .observer import DEFAULT_BANDWIDTH, MomentumObserver, RigidBodyObserver, RotorSpeedModel, _cross
from ..rotors import Allocation, ElasticJointParams, RotorParams

__all__ = ["RejectionOptions", "Rejection", "REJECTION_OPTIONS", "INTEGRAL_FRACTION", "ENGAGE_MODES"]

#: the four switches (all False by default)
REJECTION_OPTIONS = ("wrench_feedforward", "integral_action", "thrust_estimate", "com_estimate")
#: the default integral bandwidth as a fraction of the position loop's natural frequency (module docstring)
INTEGRAL_FRACTION = 0.1
#: when the options act (module docstring)
ENGAGE_MODES = ("always", "airborne", "armed")
#: the smallest default take-off height [m]
_MIN_TAKEOFF_HEIGHT = 0.05
#: the fraction of the model's weight below which the thrust and CoM estimates freeze
_MIN_THRUST_FRACTION = 0.3


@dataclass(frozen=True)
class RejectionOptions:
    """What each controller rejects (module docstring). SI units, rates in rad/s.

    * ``wrench_feedforward``, ``integral_action``, ``thrust_estimate``, ``com_estimate``: bool
      (default False).
    * ``observer``: ``"whole_body"`` (default) or ``"rigid_body"`` (the anchors' observer, for
      comparison).
    * ``observer_bandwidth``: ``K_O`` [rad/s] (default 30, :mod:`geodyn_ros.control.rejection.observer`).
    * ``integral_bandwidth``: ``omega_i`` [rad/s]; None: a tenth of the position loop's
      ``sqrt(k_p / m)``.
    * ``integral_limit``: the integral's clamp, a fraction of the weight (default 0.2).
    * ``thrust_estimate_bandwidth``: ``gamma`` [rad/s] (default 1: 30 times below the observer,
      so the residual it reads has settled; the thrust scale converges in about 3 s).
    * ``thrust_scale_limits``: ``(low, high)`` clamp of ``k`` (default (0.5, 1.5): a thrust-stand
      scatter of a few percent, a CAD mass error of 10-20 %, with margin).
    * ``com_estimate_bandwidth`` [rad/s] (default 0.5: a model error is constant; 60 times below
      the observer).
    * ``com_estimate_limit`` [m]; None: a quarter of the rotor arm (the allocation's moment per
      thrust).
    * ``com_estimate_force_point``: ``"rotors"`` (default), (3,) [m] base axes, or None: where the
      CoM estimate takes a horizontal residual force to act (module docstring).
    * ``timestep`` [s]: the control period when ``command`` is called without ``t`` (None: ``t``
      required).
    * ``frame``, ``frame_point``: the observer's named frame
      (:class:`~geodyn_ros.control.rejection.observer.WrenchEstimate`).
    * ``engage``: ``"always"`` (default), ``"airborne"`` or ``"armed"`` (module docstring).
    * ``takeoff_height`` [m]: the rise that engages ``"airborne"``; None: the rotor arm, at least 5 cm.
    """

    wrench_feedforward: bool = False
    integral_action: bool = False
    thrust_estimate: bool = False
    com_estimate: bool = False
    observer: str = "whole_body"
    observer_bandwidth: float = DEFAULT_BANDWIDTH
    integral_bandwidth: float | None = None
    integral_limit: float = 0.2
    thrust_estimate_bandwidth: float = 1.0
    thrust_scale_limits: tuple = (0.5, 1.5)
    com_estimate_bandwidth: float = 0.5
    com_estimate_limit: float | None = None
    com_estimate_force_point: object = "rotors"
    timestep: float | None = None
    frame: str | None = None
    frame_point: tuple = (0.0, 0.0, 0.0)
    engage: str = "always"
    takeoff_height: float | None = None

    def __post_init__(self):
        for name in REJECTION_OPTIONS:
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name}: expected True or False, got {getattr(self, name)!r}")
        if self.observer not in ("whole_body", "rigid_body"):
            raise ValueError(f"observer: expected 'whole_body' or 'rigid_body', got {self.observer!r}")
        if not isinstance(self.engage, str) or self.engage not in ENGAGE_MODES:
            raise ValueError(f"engage: expected one of {', '.join(ENGAGE_MODES)}, got {self.engage!r}")
        for name, opt in (("observer_bandwidth", False), ("integral_bandwidth", True), ("integral_limit", False),
                          ("thrust_estimate_bandwidth", False), ("com_estimate_bandwidth", False),
                          ("com_estimate_limit", True), ("timestep", True), ("takeoff_height", True)):
            v = getattr(self, name)
            if v is None and opt:
                continue
            if isinstance(v, (bool, str, bytes)) or not isinstance(v, (int, float, np.floating, np.integer)) \
                    or not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: expected a finite positive number, got {v!r}")
            object.__setattr__(self, name, float(v))
        lim = self.thrust_scale_limits
        try:
            lo, hi = (float(x) for x in lim)
        except (TypeError, ValueError):
            raise ValueError(f"thrust_scale_limits: expected (low, high) with 0 < low < 1 < high, got {lim!r}") from None
        if not (0.0 < lo < 1.0 < hi and math.isfinite(hi)):
            raise ValueError(f"thrust_scale_limits: expected (low, high) with 0 < low < 1 < high, got {lim!r}")
        object.__setattr__(self, "thrust_scale_limits", (lo, hi))
        fp = np.asarray(self.frame_point, float)
        if fp.shape != (3,) or not np.all(np.isfinite(fp)):
            raise ValueError(f"frame_point: expected 3 finite numbers [m], got {self.frame_point!r}")
        object.__setattr__(self, "frame_point", tuple(fp.tolist()))
        fpt = self.com_estimate_force_point
        if fpt is not None and not (isinstance(fpt, str) and fpt == "rotors"):
            try:
                cp = np.zeros(0) if isinstance(fpt, (str, bytes)) else np.asarray(fpt, float)
            except (TypeError, ValueError):
                cp = np.zeros(0)
            if cp.shape != (3,) or not np.all(np.isfinite(cp)):
                raise ValueError(f"com_estimate_force_point: expected 'rotors', 3 finite numbers [m] in base axes, or "
                                 f"None, got {fpt!r}")
            object.__setattr__(self, "com_estimate_force_point", tuple(cp.tolist()))

    @classmethod
    def all(cls, **kw) -> "RejectionOptions":
        """Every switch on (the other fields from ``kw``)."""
        return cls(**{**{k: True for k in REJECTION_OPTIONS}, **kw})

    @property
    def active(self) -> bool:
        """True when any switch is on (the controllers then keep a :class:`Rejection`)."""
        return any(getattr(self, k) for k in REJECTION_OPTIONS)

    def summary(self) -> str:
        """The switches that are on, e.g. ``"wrench_feedforward+integral_action"`` (``"off"``)."""
        on = [k for k in REJECTION_OPTIONS if getattr(self, k)]
        return "+".join(on) if on else "off"


def _finite(x, name, n):
    """(n,) float copy of ``x``, else ValueError naming ``name`` (a wrong shape, NaN or Inf)."""
    a = np.asarray(x if x is not None else np.full(n, np.nan), dtype=float)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected {n} values, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf (or is missing)")
    return a.copy()


class Rejection:
    """The state of :class:`RejectionOptions` for one controller (module docstring).

    model, allocation, rotors, elastic : the controller's; gravity (3,); ideal_rotors : the base
    wrench is applied directly (no rotor speeds); position_gain [N/m] and rotation_gain [N m/rad]
    (scalars or per axis) set the integral gains; rotation_inertia [kg m^2] the attitude loop's
    inertia (None: no attitude integral).
    """

    def __init__(self, options: RejectionOptions, model: Model, allocation: Allocation, rotors: RotorParams,
                 elastic: ElasticJointParams | None, *, gravity, ideal_rotors=False, position_gain=None,
                 rotation_gain=None, rotation_inertia=None):
        if not isinstance(options, RejectionOptions):
            raise ValueError(f"rejection: expected RejectionOptions, got {type(options).__name__}")
        self.options = o = options
        self.model, self.allocation = model, allocation
        self.gravity = np.asarray(gravity, float)
        self.mass = model.total_mass
        self.weight = self.mass * float(np.linalg.norm(self.gravity))
        if o.observer == "whole_body":
            self.observer = MomentumObserver(model, o.observer_bandwidth, gravity=tuple(self.gravity), frame=o.frame,
                                             frame_point=o.frame_point)
        else:
            self.observer = RigidBodyObserver(model, o.observer_bandwidth, gravity=tuple(self.gravity))
        self.ideal_rotors = bool(ideal_rotors)
        self.rotor_model = None if self.ideal_rotors else RotorSpeedModel(rotors)
        names = model.joint_names
        self._el = np.array([] if elastic is None else [names.index(j) for j in elastic.joints], dtype=np.int64)
        self._K = np.zeros(0) if elastic is None else np.asarray(elastic.stiffness, float)
        # the rotor arm: the largest moment per unit thrust of the allocation (about the base origin)
        A = allocation.A
        self.arm = float(np.abs(A[:2]).max() / max(np.abs(A[5]).max(), 1e-300)) if A.size else 0.0
        self.com_limit = o.com_estimate_limit if o.com_estimate_limit is not None else 0.25 * self.arm
        fpt = o.com_estimate_force_point
        if isinstance(fpt, str):         # "rotors": their centroid (the base origin without rotor frames)
            pts = getattr(allocation, "rotor_points", None)
            fpt = np.zeros(3) if pts is None or not len(pts) else np.asarray(pts, float).mean(axis=0)
        self.force_point = None if fpt is None else np.asarray(fpt, float)
        self.takeoff_height = (o.takeoff_height if o.takeoff_height is not None
                               else max(self.arm, _MIN_TAKEOFF_HEIGHT))
        self._rotation_inertia = rotation_inertia
        self.set_gains(position_gain, rotation_gain)
        self.force_limit = o.integral_limit * self.weight
        self.moment_limit = self.force_limit * max(self.arm, 1e-3)
        #: the LQR's last (roll/pitch, yaw) scales of the residual moment it cancelled (1: all;
        #: :func:`geodyn_ros.control.rejection.lqr.limit_moment_feedforward`)
        self.moment_scale = (1.0, 1.0)
        self.reset()

    def set_gains(self, position_gain=None, rotation_gain=None) -> None:
        """The integral gains ``k_i = k_p omega_i`` from the controller's ``k_p`` [N/m] and
        ``k_R`` [N m/rad] (scalars or per axis; None: no such integral), ``omega_i`` the
        ``integral_bandwidth`` or a tenth of the loop's ``sqrt(k_p / m)`` (``sqrt(k_R / J)``). The
        controllers call it from their ``set_gains`` (live tuning); the integrators are kept."""
        o = self.options
        self.ki_position = self.ki_rotation = None
        if position_gain is not None:
            kp = np.broadcast_to(np.asarray(position_gain, float), (3,))
            wi = o.integral_bandwidth if o.integral_bandwidth is not None else INTEGRAL_FRACTION * np.sqrt(kp / self.mass)
            self.ki_position = kp * wi
        if rotation_gain is not None and self._rotation_inertia is not None:
            kr = np.broadcast_to(np.asarray(rotation_gain, float), (3,))
            wi = (o.integral_bandwidth if o.integral_bandwidth is not None
                  else INTEGRAL_FRACTION * np.sqrt(kr / self._rotation_inertia))
            self.ki_rotation = kr * wi

    def reset(self) -> None:
        """Forget every estimate (the next :meth:`observe` starts the observer again)."""
        self.thrust_scale = 1.0
        self.com_offset = np.zeros(3)
        self.z_position = np.zeros(3)
        self.z_rotation = np.zeros(3)
        self.estimate = None
        self._t = None
        self._x = None              # rotor speeds [rad/s] acting from the last sample on
        self._cmd = None            # (omega, joint torques, thrust, torque) sent at the last sample
        self._spring = None
        self.saturated = False
        self._started = False
        self.frozen = False
        #: True while the options act (``engage``, module docstring)
        self.engaged = self.options.engage == "always"
        #: ``engage: "armed"``: the last :meth:`set_engaged` (the autopilot applies the commands)
        self.armed = False
        self._ground = None         # the lowest base height [m] seen while disengaged ("airborne")
        if self.rotor_model is not None:
            self.rotor_model.x = None

    def set_engaged(self, flag: bool) -> None:
        """Arm (True) or disarm (False). ``engage: "armed"``: True arms (the options engage at the
        take-off rise that follows), False disengages at once; ``"airborne"``: engage or disengage
        now (an override of the height rule). Disengaging zeroes the integrators and drops the
        estimate; the observer starts again at the sample after engaging; the thrust-scale and CoM
        estimates are kept. With ``"always"`` a False is refused (ValueError): nothing would engage
        again."""
        flag = bool(flag)
        if not flag and self.options.engage == "always":
            raise ValueError("engage: the options are 'always' engaged; set engage 'armed' to gate them")
        if self.options.engage == "armed":
            self.armed = flag
            self._ground = None          # the take-off is counted from here
            if flag:
                return
        if flag == self.engaged:
            return
        self._set(flag)

    def _set(self, flag: bool) -> None:
        self.engaged = flag
        if not flag:
            self.z_position = np.zeros(3)
            self.z_rotation = np.zeros(3)
        self.estimate = None
        self._started = False       # the observer starts again at the next sample

    def _check_airborne(self, z: float) -> None:
        """``engage: "airborne"`` (and ``"armed"`` while armed): engage at a rise of
        :attr:`takeoff_height` above the lowest height seen while disengaged, disengage back
        within half of it (module docstring)."""
        if self.options.engage == "armed" and not self.armed:
            return
        if not self.engaged:
            self._ground = z if self._ground is None else min(self._ground, z)
            if z - self._ground >= self.takeoff_height:
                self._set(True)
        elif self._ground is not None and z - self._ground < 0.5 * self.takeoff_height:
            ground = self._ground
            self._set(False)
            self._ground = min(ground, z)

    def restart(self) -> None:
        """Start the observer again at the next sample, keeping what was learned (the thrust scale,
        the CoM offset and the integrators): for a gap in the samples (a failsafe hold, a clock
        that jumped back), over which the last command and the rotor model no longer describe
        what acted. The estimate is None until the second sample after."""
        self.estimate = None
        self._t = None
        self._x = None
        self._cmd = None
        self._spring = None
        self._started = False
        if self.rotor_model is not None:
            self.rotor_model.x = None

    @property
    def last_time(self):
        """The time [s] of the last sample observed (None before the first or after :meth:`restart`)."""
        return self._t

    def reset_rotors(self, x) -> None:
        """The rotor speeds [rad/s] at the first sample (default: the first command's)."""
        self.rotor_model.reset(x)
        self._x = self.rotor_model.x.copy()

    # ------------------------------------------------------------------ the cycle
    def step_time(self, t):
        """``(t, dt)`` of this cycle (``t`` given, or the last plus ``timestep``). While
        :attr:`frozen`: ``(the last sample's time, None)``, so that nothing integrates."""
        if self.frozen:
            return (self._t if self._t is not None else 0.0), None
        if t is None:
            if self.options.timestep is None:
                raise ValueError("t: the rejection options need the sample time (pass t=, or set "
                                 "RejectionOptions.timestep to the control period)")
            t = 0.0 if self._t is None else self._t + self.options.timestep
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"t: expected a finite time [s], got {t!r}")
        dt = None if self._t is None else t - self._t
        if dt is not None and not dt > 0:
            raise ValueError(f"t: expected a time after the last cycle's ({self._t!r} s), got {t!r}")
        return t, dt

    def observe(self, t, C, Vb, q, qd, theta=None, rotor_speed=None):
        """Update the estimates with the sample at ``t`` (None: :meth:`step_time`): pose (4, 4), body
        twist (6,), joints (n,), motor angles of the elastic joints (n_el,), measured rotor speeds
        (n_rot,) or None (:class:`~geodyn_ros.control.rejection.observer.RotorSpeedModel` on the commands).
        Returns the :class:`~geodyn_ros.control.rejection.observer.WrenchEstimate` (None at the first sample).
        While :attr:`frozen` (a command of a state that was not measured, e.g. a failsafe's
        predicted one): nothing is updated, the last estimate is returned."""
        if self.frozen:
            return self.estimate
        t, dt = self.step_time(t)
        spring = None
        if self._el.size:
            th = _finite(theta, "theta", self._el.size)
            spring = self._K * (th - np.asarray(q, float)[self._el])
        if rotor_speed is not None and not self.ideal_rotors:
            rotor_speed = _finite(rotor_speed, "rotor_speed", self.allocation.n_rotors)
        if self.options.engage in ("airborne", "armed"):
            self._check_airborne(float(np.asarray(C, float)[2, 3]))
        est = None                  # (disengaged, _started stays False: the observer restarts every sample)
        if self._started and self._cmd is not None:
            om, jt, T, tau = self._cmd
            if self.ideal_rotors:
                Wx = np.array([tau[0], tau[1], tau[2], 0.0, 0.0, T])
            else:
                Wx = self.allocation.wrench(np.square(self._x))
            k = self.thrust_scale
            tj = np.array(jt, float, copy=True)
            if self._el.size:
                tj[self._el] = 0.5 * (self._spring + spring)
            est = self.observer.update(t, C, Vb, q, qd, k * Wx, tj)
            self._learn(est, Wx, dt, np.asarray(C, float), q)
        else:
            self.observer.reset(t, C, Vb, q, qd)
            self._started = self.engaged
        if not self.ideal_rotors:
            if rotor_speed is not None:
                self._x = np.asarray(rotor_speed, float).copy()
                self.rotor_model.reset(self._x)
            elif self._cmd is not None and dt is not None:
                self._x = self.rotor_model.advance(self._cmd[0], dt).copy()
        self._spring = spring
        self._t = t
        self.estimate = est
        return est

    def sent(self, omega, joint_torque, thrust=0.0, torque=(0.0, 0.0, 0.0), saturated=False) -> None:
        """Record this cycle's command: rotor speeds (n_rot,) [rad/s] (ignored with ideal rotors),
        the joint torques (n,) [N m] of the rigid joints (0 at the elastic ones), the ideal
        rotors' thrust [N] and moment (3,) [N m], and whether a rotor was clipped. Ignored while
        :attr:`frozen`."""
        if self.frozen:
            return
        om = np.asarray(omega, float).copy()
        if not self.ideal_rotors and self._x is None:
            self.rotor_model.reset(np.minimum(om, self.rotor_model.wmax))     # steady at the first command
            self._x = self.rotor_model.x.copy()
        self._cmd = (om, np.asarray(joint_torque, float).copy(), float(thrust), np.asarray(torque, float).copy())
        self.saturated = bool(saturated)

    def _learn(self, est, Wx, dt, C, q):
        """The thrust-scale and CoM-offset updates from the new estimate (module docstring)."""
        o = self.options
        Tx = float(Wx[5])
        if not (Tx > _MIN_THRUST_FRACTION * self.weight) or self.saturated:
            return
        Wr = est.wrench_body
        R = C[:3, :3]
        if o.thrust_estimate:
            lo, hi = o.thrust_scale_limits
            k = self.thrust_scale + dt * o.thrust_estimate_bandwidth * Wr[5] / Tx
            self.thrust_scale = min(max(k, lo), hi)
        if o.com_estimate:
            rc = R.T @ (center_of_mass(self.model, C, None, q)[0] - C[:3, 3])   # the model's CoM, base axes
            f = self.thrust_scale * Wx[3:] + Wr[3:]                          # non-gravity force, base axes
            # with a frame, its force (the joint rows' share, at its point) and that force's moment
            # are not a CoM error: the base's remainder is read (module docstring)
            Wc = est.base_wrench_body if est.frame is not None else Wr
            nc = Wc[:3] - _cross(rc, Wc[3:])                                 # residual moment about the CoM
            if self.force_point is not None:             # the horizontal residual force's own moment
                ez = R[2]                                                    # world z in base axes
                fh = Wc[3:] - (Wc[3:] @ ez) * ez
                nc = nc - _cross(self.force_point - rc, fh)
            d = _cross(nc, f) / max(float(f @ f), 1e-300)
            a = -math.expm1(-o.com_estimate_bandwidth * dt)
            c = self.com_offset + a * (d - self.com_offset)
            nrm = float(np.linalg.norm(c))
            self.com_offset = c if nrm <= self.com_limit else c * (self.com_limit / nrm)

    # ------------------------------------------------------------------ what the controllers use
    def wrench_body(self) -> np.ndarray | None:
        """The residual external body wrench (6,) to cancel (None when ``wrench_feedforward`` is off
        or before the first estimate)."""
        if not self.options.wrench_feedforward or self.estimate is None:
            return None
        return self.estimate.wrench_body

    def joint_torque(self) -> np.ndarray | None:
        """The external joint torques (n,) to cancel (None: off, no estimate, or the rigid-body observer)."""
        if not self.options.wrench_feedforward or self.estimate is None or not self.estimate.joint_torque.size:
            return None
        return self.estimate.joint_torque

    def integral_force(self, error, dt) -> np.ndarray:
        """``k_i z`` (3,) [N] after integrating the position error (3,) [m] over ``dt`` [s] (not while
        rotors clipped; clamped to the force limit). Zeros when ``integral_action`` is off."""
        if not self.options.integral_action or self.ki_position is None or not self.engaged:
            return np.zeros(3)
        if dt is not None and not self.saturated:
            self.z_position = self.z_position + dt * np.asarray(error, float)
        ki = self.ki_position
        lim = self.force_limit / np.maximum(ki, 1e-300)
        self.z_position = np.clip(self.z_position, -lim, lim)
        return ki * self.z_position

    def integral_moment(self, error, dt) -> np.ndarray:
        """``k_i,R z_R`` (3,) [N m] of the attitude error (3,) [rad] (as :meth:`integral_force`)."""
        if not self.options.integral_action or self.ki_rotation is None or not self.engaged:
            return np.zeros(3)
        if dt is not None and not self.saturated:
            self.z_rotation = self.z_rotation + dt * np.asarray(error, float)
        ki = self.ki_rotation
        lim = self.moment_limit / np.maximum(ki, 1e-300)
        self.z_rotation = np.clip(self.z_rotation, -lim, lim)
        return ki * self.z_rotation

