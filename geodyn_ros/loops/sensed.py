"""What the in-process loops add to face real sensing: sensed inputs, a failsafe, a flight from
the ground and back, and a divergence stop. ROS-free.

:class:`Sensing` (the options of a run) and :class:`Session` (one run's state) are what
:func:`geodyn_ros.loops.actuated.simulate_actuated` and
:func:`geodyn_ros.loops.underactuated.simulate_underactuated` take as ``sensing``. Without it
(or with the ``perfect`` profile, no ground and no drop) the loops run exactly as they always
did: the controller reads the exact state at every step (lock-step), bit for bit.

**Inputs** (:class:`SensedInputs`). The simulator's state goes through the streams of a
:class:`~geodyn_ros.sim.sensors.SensorProfile` (:class:`~geodyn_ros.sim.sensors.SensorSuite`); at
every control step the controller takes the newest delivered sample of each stream and brings
it to the control time with the input rule of :mod:`geodyn_ros.control.sensing` (``Sensing.rule``:
``"twist"``, the base pose propagated at its held spatial twist; ``"imu"``, the default where the
profile has an IMU stream, an output predictor integrating the IMU samples after the odometry
sample; ``"imu_model"``, the same with the model's acceleration jets over the newest IMU sample's
age, :meth:`Session.model_rate`; the joints at their rates; the motors are read by their drives at
every step, :meth:`~geodyn_ros.sim.sensors.SensorSuite.motors`); the body twist is
``Ad(C(t))^-1 V``. The controller starts from one exact sample of the start state (a vehicle at
rest on the ground knows where it is). A stream older than its maximum age (the failsafe's
timeout for odometry; latency + 3 periods for the joints) is not propagated any further: the
joints are then held, and the odometry is replaced by inertial dead reckoning from its last
sample on the IMU stream (:class:`~geodyn_ros.control.failsafe.DeadReckoning`; IMU samples newer
than an odometry sample are re-integrated when it arrives late), or held at rest without an IMU.

**Failsafe.** :class:`~geodyn_ros.control.failsafe.Failsafe` on the odometry's age: it stops
the reference's clock (hold), later lowers it (descend), and resumes it on restore.

**Flight from the ground** (``ground=True``, :class:`FlightPlan`). The simulator gets a ground
plane and four feet (:meth:`~geodyn_ros.sim.MujocoSim.place_ground`): the feet at the vehicle's
radius ``L``, below every link frame by the model's reach (:func:`feet_below`). The vehicle starts
at rest on the ground, ``h`` below the reference's pose of the take-off instant, rotors stopped;
the reference (frozen) rises by ``h`` (climb at most PX4's ``MPC_TKO_SPEED``, 1.5 m/s), then its
clock ramps from 0 to 1 and the vehicle flies it; the scored window ``0 <= t <= duration`` starts
:attr:`FlightPlan.settle` seconds after the ramp. When the window ends the clock ramps back to 0,
the frozen reference sinks at PX4's ``MPC_LAND_SPEED`` (0.7 m/s) until the feet touch the ground
(any normal force: the land detector), and the rotors are then stopped (disarmed) for the rest.

**Divergence** (:class:`DivergenceGuard`). A row stops with one line naming the time and the
quantity when the state leaves a physical bound (:data:`BOUNDS_TEXT`), instead of printing a
diverged number as a result.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from geodyn_ros.control.failsafe import Failsafe, FailsafeConfig
from geodyn_ros.control.retiming import Schedule, warp_reference
from geodyn_ros.control.sensing import RULES, ImuPropagator, LatestSample, propagate_base, propagate_joints
from geodyn_ros.lie import Ad_inv, log_so3

__all__ = ["Sensing", "Session", "SensedInputs", "DivergenceGuard", "Diverged", "FlightPlan", "feet_below",
           "BOUNDS_TEXT", "MPC_TKO_SPEED", "MPC_LAND_SPEED"]

#: PX4's take-off climb rate and landing descent rate [m/s] (mc_pos_control's MPC_TKO_SPEED, MPC_LAND_SPEED)
MPC_TKO_SPEED, MPC_LAND_SPEED = 1.5, 0.7
#: the peak slope of the smooth step (control.retiming): a ramp of height h over T peaks at 2.93 h / T
_SLOPE = 2.9326171875
BOUNDS_TEXT = ("position error beyond max(1 m, 10 L) (L: the vehicle's radius), attitude error beyond 90 deg, a "
               "rotor speed command beyond 10 x max_rot_velocity, a joint error beyond pi rad, a non-finite state")


@dataclass
class Sensing:
    """The options of a run: profile (a :class:`~geodyn_ros.sim.sensors.SensorProfile`), seed of its
    streams, ground (start on the ground, land at the end), drops (``((stream, t_from, t_to), ...)``
    [s]: windows of samples that never arrive), log (``f(line)`` for the failsafe's lines; None:
    silent), height (the take-off height h [m]; None: 2 L), rule (the input rule, one of
    :data:`~geodyn_ros.control.sensing.RULES`; None: ``"imu"`` where the profile has an IMU stream,
    else ``"twist"``)."""
    profile: object
    seed: int = 0
    ground: bool = False
    drops: tuple = ()
    log: object = print
    height: float | None = None
    rule: str | None = None

    def __post_init__(self):
        if self.rule is not None and self.rule not in RULES:
            raise ValueError(f"rule: expected one of {', '.join(RULES)} (or None: imu where the profile has an "
                             f"IMU stream), got {self.rule!r}")
        if self.rule in ("imu", "imu_model") and not self.profile.perfect and self.profile.imu is None:
            raise ValueError(f"rule: {self.rule!r} needs an IMU stream, and profile {self.profile.name!r} has none; "
                             "give rule twist or a profile with imu")

    @property
    def input_rule(self) -> str:
        """The rule in use: :attr:`rule`, or its default for the profile."""
        if self.rule is not None:
            return self.rule
        return "imu" if getattr(self.profile, "imu", None) is not None else "twist"

    @property
    def trivial(self) -> bool:
        """True: the lock-step loop of old (perfect profile, no ground, no drop)."""
        return self.profile.perfect and not self.ground and not self.drops


class Diverged(RuntimeError):
    """A row left a physical bound: ``str(exc)`` is its one line (time and quantity)."""


class DivergenceGuard:
    """The bounds of :data:`BOUNDS_TEXT` for a vehicle of radius ``size`` [m] and rotors of
    ``max_rot_velocity`` [rad/s] (scalar or (n,)). :meth:`check` raises :class:`Diverged`."""

    def __init__(self, size: float, max_rot_velocity):
        self.max_position = max(1.0, 10.0 * float(size))
        self.max_omega = 10.0 * float(np.max(max_rot_velocity))
        self.max_rot = float(np.max(max_rot_velocity))

    def check(self, t, C, C_d, q, q_d, omega=None) -> None:
        ep = float(np.linalg.norm(C[:3, 3] - C_d[:3, 3]))
        if not (np.all(np.isfinite(C)) and np.all(np.isfinite(q))):
            raise Diverged(f"t = {t:.3f} s: non-finite state")
        if ep > self.max_position:
            raise Diverged(f"t = {t:.3f} s: base position error {ep:.3g} m > {self.max_position:g} m")
        ea = float(np.linalg.norm(log_so3(C_d[:3, :3].T @ C[:3, :3])))
        if ea > 0.5 * math.pi:
            raise Diverged(f"t = {t:.3f} s: attitude error {math.degrees(ea):.0f} deg > 90 deg")
        if np.size(q):
            eq = np.abs(np.asarray(q) - np.asarray(q_d))
            j = int(np.argmax(eq))
            if eq[j] > math.pi:
                raise Diverged(f"t = {t:.3f} s: joint {j} error {eq[j]:.3g} rad > pi rad")
        if omega is not None:
            w = float(np.max(omega))
            if not math.isfinite(w) or w > self.max_omega:
                raise Diverged(f"t = {t:.3f} s: rotor speed command {w:.3g} rad/s > 10 x max {self.max_rot:g} rad/s")


def feet_below(model, size: float, margin: float | None = None) -> np.ndarray:
    """(4, 3) feet centres [m] in the base frame: at radius ``size`` on the diagonals, at the depth
    ``reach + margin`` below the base origin, where ``reach`` bounds the distance of every link
    frame origin and link CoM from the base origin over every joint configuration (the sum of the
    constant origin-to-origin distances along its chain, plus its CoM offset) and ``margin`` (default
    ``0.2 L``) stands for the link geometry beyond them (links have no collision geometry)."""
    names = model.link_names
    pos = np.array([model.link_home[nm][:3, 3] for nm in names])
    reach = np.zeros(len(names))
    for i in range(1, len(names)):
        p = int(model.parent[i])
        reach[i] = reach[p] + float(np.linalg.norm(pos[i] - pos[p]))
    com_off = np.linalg.norm(np.asarray(model.com) - pos, axis=1)
    depth = float(np.max(reach + com_off)) + (0.2 * size if margin is None else margin)
    r = size / math.sqrt(2.0)
    return np.array([[r, r, -depth], [-r, r, -depth], [r, -r, -depth], [-r, -r, -depth]])


@dataclass
class FlightPlan:
    """The timing of a flight from the ground (module docstring), for a take-off height ``height``
    [m]: ``rest`` s on the ground, the climb (``height x 2.93 / MPC_TKO_SPEED`` s: its peak speed is
    the take-off rate), the clock's start ramp (``ramp`` s), ``settle`` s of tracking before the
    scored window; after it the stop ramp (``ramp``), the descent's rate ramp (``ramp / 3``), the
    descent (``2 height / MPC_LAND_SPEED`` s: room for the reference's own height changes) and
    ``landed`` s."""
    height: float
    rest: float = 0.5
    ramp: float = 1.5
    settle: float = 1.5
    landed: float = 1.0
    climb: float = field(init=False)
    descent: float = field(init=False)

    def __post_init__(self):
        if not (math.isfinite(self.height) and self.height > 0):
            raise ValueError(f"height: expected a finite take-off height > 0 [m], got {self.height!r}")
        self.climb = self.height * _SLOPE / MPC_TKO_SPEED
        self.descent = 2.0 * self.height / MPC_LAND_SPEED

    @property
    def preroll(self) -> float:
        return self.rest + self.climb + self.ramp + self.settle

    @property
    def postroll(self) -> float:
        return self.ramp * 4.0 / 3.0 + self.descent + self.landed

    def schedules(self, t_start: float) -> tuple:
        """``(clock, offset)`` :class:`Schedule` objects from ``t_start`` (= -preroll) to the
        scored window (the landing is added by :meth:`land`)."""
        t_ramp = t_start + self.rest + self.climb
        s0 = t_ramp + self.ramp - 0.5 * self.ramp      # s = t after the start ramp
        clock = Schedule(s0, 0.0, t_start).ramp_rate(t_ramp, self.ramp, 1.0)
        offset = Schedule(-self.height, 0.0, t_start).ramp_value(t_start + self.rest, self.climb, 0.0)
        return clock, offset

    def land(self, clock: Schedule, offset: Schedule, t: float) -> float:
        """Schedule the landing from ``t`` (the end of the scored window): the clock stops, then the
        reference sinks at ``MPC_LAND_SPEED``; returns when the descent starts."""
        Failsafe._cut(clock, t)
        Failsafe._cut(offset, t)
        clock.ramp_rate(t, self.ramp, 0.0)
        offset.ramp_rate(t + self.ramp, self.ramp / 3.0, -MPC_LAND_SPEED)
        return t + self.ramp


class SensedInputs:
    """The controller's inputs from the streams of ``profile`` on ``sim`` (module docstring).

    seed, size [m], start [s] as for :class:`~geodyn_ros.sim.sensors.SensorSuite`; failsafe: a
    :class:`~geodyn_ros.control.failsafe.Failsafe` (or None: no failsafe); rule: the input rule
    (:data:`~geodyn_ros.control.sensing.RULES`; ``"imu"`` and ``"imu_model"`` need the profile's IMU).
    :meth:`read` returns ``(C, V_body, q, qd, theta, thetad)`` at the control time ``t``;
    :attr:`model_rate` (6,) the model's spatial twist rate for ``"imu_model"`` (None: as ``"imu"``)."""

    def __init__(self, profile, sim, *, seed: int, size: float, start: float, failsafe=None, drops=(),
                 rule: str = "twist"):
        from geodyn_ros.sim.sensors import SensorSuite
        self.sim, self.profile = sim, profile
        self.suite = SensorSuite(profile, seed=seed, size=size, gravity=sim.gravity, start=start)
        for stream, a, b in drops:
            self.suite.drop(stream, a, b)
        od, js = profile.odometry, profile.joints
        cfg = profile.failsafe or FailsafeConfig()
        self.timeout = cfg.timeout_for(od.rate, od.latency)
        self.odo = LatestSample("odometry", int(round(self.timeout * 1e9)))
        self.jts = LatestSample("joints", int(round((js.latency + 3.0 / js.rate) * 1e9)))
        self.failsafe = failsafe
        if rule not in RULES or (rule != "twist" and profile.imu is None):
            raise ValueError(f"rule: expected one of {', '.join(RULES)} (imu, imu_model with an IMU stream), got {rule!r}")
        self.rule = rule
        self.model_rate = None
        self.dr = ImuPropagator(sim.gravity) if profile.imu is not None else None   # the IMU rule; the dead reckoning
        self._imu_buf = deque(maxlen=512)                # the delivered IMU samples, for imu_since (INDI)
        self.elastic = bool(getattr(sim, "elastic_joints", ()))
        # one exact sample of the start state (module docstring)
        t_ns = int(round(start * 1e9))
        C = sim.base_pose()
        V = sim.base_twist()
        self.odo.offer(t_ns, (C, V))      # (the streams' first samples come a seeded phase > 0 later)
        self.jts.offer(t_ns, (sim.q().copy(), sim.qd().copy(), None, None))
        self._last_odo = (start, C, V)
        self._last_jts = self.jts.data
        if self.dr is not None:
            self.dr.reset(start, C, V)

    def imu_since(self, stamp: float) -> list:
        """The IMU samples delivered so far with a stamp after ``stamp`` [s], oldest first: ``(stamp,
        dt, gyro, accel)`` (:class:`~geodyn_ros.sim.sensors.ImuSample`; empty without an IMU stream)."""
        return [s for s in self._imu_buf if s[0] > stamp]

    def _odometry_arrived(self, stamp, data):
        self._last_odo = (stamp, data.C, data.V)
        if self.dr is not None:
            self.dr.reset(stamp, data.C, data.V)         # re-integrates the IMU samples after it

    def read(self, t: float):
        sim = self.sim
        self.suite.sample(t, sim)
        for name, stamp, data in self.suite.delivered(t):
            s_ns = int(round(stamp * 1e9))
            if name == "odometry":
                if self.odo.offer(s_ns, (data.C, data.V)):
                    self._odometry_arrived(stamp, data)
            elif name == "joints":
                if self.jts.offer(s_ns, tuple(data)):
                    self._last_jts = tuple(data)
            elif self.dr is not None:
                self.dr.imu(stamp, data.dt, data.gyro, data.accel)
                self._imu_buf.append((stamp, data.dt, data.gyro, data.accel))
        t_ns = int(round(t * 1e9))
        if self.failsafe is not None:
            age = None if self.odo.stamp_ns is None else (t_ns - self.odo.stamp_ns) * 1e-9
            self.failsafe.update(t, age)
        o = self.odo.take(t_ns) if self.rule == "twist" else None
        if o is not None:
            _, (C0, V), age_ns = o
            C = propagate_base(C0, V, age_ns * 1e-9)
        elif self.rule != "twist":                       # the IMU rules
            C, V = self.dr.predict(t, self.model_rate if self.rule == "imu_model" else None)
        elif self.dr is not None:                        # the twist rule's dead reckoning (its twist held)
            stamp, C0, V = self.dr.state()
            C = propagate_base(C0, V, t - stamp)
        else:                                            # no IMU: the last pose, at rest
            C, V = self._last_odo[1], np.zeros(6)
        Vb = Ad_inv(C) @ V
        j = self.jts.take(t_ns)
        if j is not None:
            _, (q, qd, _, _), age_ns = j
            q = propagate_joints(q, qd, age_ns * 1e-9)
        else:
            q, qd = self._last_jts[:2]
        th, thd = self.suite.motors(sim) if self.elastic else (None, None)
        return C, Vb, q, qd, th, thd


class Session:
    """One run of a loop with :class:`Sensing` (module docstring): built by the loops before the
    start, it warps their reference, reads the controller's inputs, guards against divergence and
    lands the vehicle. ``sim`` the simulator (built with ``ground=sensing.ground``); ``size`` the
    vehicle's radius [m]; ``max_rot_velocity`` [rad/s]; ``preroll``, ``duration`` [s]: the loop's;
    ``timestep`` [s]."""

    def __init__(self, sensing: Sensing, sim, reference, *, size: float, max_rot_velocity, preroll: float,
                 duration: float, timestep: float):
        self.sensing, self.sim, self.size = sensing, sim, float(size)
        self.guard = DivergenceGuard(size, max_rot_velocity)
        self.plan = FlightPlan(2.0 * size if sensing.height is None else sensing.height) if sensing.ground else None
        self.preroll = self.plan.preroll if self.plan else float(preroll)
        self.n_pre = int(round(self.preroll / timestep))
        self.n_post = int(round(self.plan.postroll / timestep)) if self.plan else 0
        t_start = -self.n_pre * timestep
        if self.plan:
            self.clock, self.offset = self.plan.schedules(t_start)
        else:
            self.clock, self.offset = Schedule(0.0, 1.0, 0.0), Schedule(0.0, 0.0, 0.0)
        self.base_reference = reference
        self.duration, self.timestep, self.t_start = duration, timestep, t_start
        self.t_descent = self.t_disarm = None
        self.ground_forces = []            # (t [s], normal force [N]) every 10 steps, with ground
        self.inputs = None
        self.failsafe = None

    def reference(self, t: float, order: int):
        """The warped reference at ``t`` (the loops' ``reference(t, order)``)."""
        n = order + 7
        return warp_reference(self.base_reference, order, self.clock.jets(t, n), self.offset.jets(t, n))

    def start(self, start_pose, model) -> dict:
        """Before :meth:`ActuatedSim.reset`: place the ground under the start pose (4, 4); returns
        the keywords the reset changes (rotors stopped on the ground)."""
        if not self.plan:
            return {}
        feet = feet_below(model, self.size)
        z = min(float((start_pose[:3, :3] @ f + start_pose[:3, 3])[2]) for f in feet)
        from geodyn_ros.sim.mujoco_sim import FOOT_RADIUS
        self.sim.place_ground(z - FOOT_RADIUS, feet)
        return {"rotor_speed": 0.0}

    def begin(self, t: float) -> None:
        """After the reset, at the start time: the streams and the failsafe start here."""
        s = self.sensing
        if s.profile.perfect:
            return
        od = s.profile.odometry
        cfg = s.profile.failsafe or FailsafeConfig()
        self.failsafe = Failsafe(cfg, cfg.timeout_for(od.rate, od.latency), clock=self.clock, offset=self.offset,
                                 log=s.log)
        self.inputs = SensedInputs(s.profile, self.sim, seed=s.seed, size=self.size, start=t, failsafe=self.failsafe,
                                   drops=s.drops, rule=s.input_rule)

    def read(self, t: float):
        """``(C, V_body, q, qd, theta, thetad)`` for the controller at ``t`` (None: read the exact state)."""
        return None if self.inputs is None else self.inputs.read(t)

    def model_rate(self, dV) -> None:
        """The model's spatial twist rate (6,) (the reference's ``base_twist[1]``, world axes) of the
        step just computed: the ``"imu_model"`` rule propagates the next step's inputs with it (one
        step old: its error is the jerk times a step, far below the rule's bound)."""
        if self.inputs is not None and self.inputs.rule == "imu_model":
            self.inputs.model_rate = np.array(dV, float)

    def tick(self, k: int, steps: int, t: float) -> None:
        """Called at every step before the reference is read: the landing at the window's end, the
        touchdown (disarm) and the ground force's record."""
        if not self.plan:
            return
        if k % 10 == 0:
            self.ground_forces.append((t, self.sim.ground_force()))
        if k == steps:
            self.t_descent = self.plan.land(self.clock, self.offset, t)
        if self.t_descent is not None and self.t_disarm is None and t >= self.t_descent \
                and self.sim.ground_force() > 0.0:
            self.t_disarm = t

    @property
    def disarmed(self) -> bool:
        """The rotors are stopped (after touchdown)."""
        return self.t_disarm is not None
