"""The controllers' failsafe over ROS: a defined, bounded command whenever an input stops, and when
a command cannot be computed.

Shared by ``geodyn_controller``, ``geodyn_actuated_controller`` and ``geodyn_flat_controller``
(mixin :class:`FailsafeInputs`, before :class:`~geodyn_ros.ros.inputs.tracking_inputs.TrackingInputs`
in the node's bases). The state machine is :class:`geodyn_ros.control.failsafe.Failsafe` (the one
the in-process loops use, :mod:`geodyn_ros.loops.sensed`); the predicted state and the command's
bound are :mod:`geodyn_ros.control.failsafe_law`; the reference's clock and vertical offset are
:class:`~geodyn_ros.control.retiming.Schedule` objects this mixin makes at each loss.

**Only under** ``input_policy: latest`` (real sensors). Under ``exact`` (lock-step simulators) the
controllers behave as before: no timer, no failsafe; a command that cannot be computed is counted
(``commands_not_computed``), reported (WARN, throttled log) and its cycle skipped.

**Clocking.** Under ``latest`` a cycle runs per accepted ``odom`` (its stamp is the cycle's time).
A watchdog timer on the node clock at the control period (``geodyn_controller`` and
``geodyn_flat_controller``: ``control_period``; ``geodyn_actuated_controller``: the actuation file's
``control_period``) compares the node clock with the receipt of the newest accepted odometry. When
that age exceeds ``odom_timeout`` the failsafe starts and the timer runs the cycles, one per
period, stamped with the node clock.

**What starts the failsafe** (each within its stated timeout; one log line naming the input, the
status WARN on ``/diagnostics`` with the note ``failsafe_mode``):

* the odometry: none received for ``odom_timeout`` (the watchdog);
* any other input of the cycle (the reference, ``geodyn_node``'s feedforward and desired state, a
  linearization the LQR needs): its newest sample older than ``stale_timeout`` at the cycle's time
  (``geodyn_node`` killed or restarting: the feedforward stops);
* the joint and motor states: the newest sample beyond ``<stream>_max_age``;
* a command that cannot be computed (below).

Before this, such a cycle was skipped and the controller went silent (a vehicle whose controller
is silent falls). An input that has *never* arrived still commands nothing (there is nothing to
hold), said once after 1 s of odometry.

**Modes** (one log line per transition):

``tracking``
    the normal law on the normal inputs.
``hold`` (WARN)
    the reference (pose and twist rows, CoM and yaw jets, joint jets) of the last cycle whose
    command was computed brakes along its last velocity: its clock ``s(t)`` ramps from ``s' = 1``
    to 0 over ``failsafe_ramp`` (the pose moves ``s(t)`` along its last twist, the rates are
    ``s'`` times it, the accelerations ``s''`` times it); it stops about ``failsafe_ramp / 2``
    times the speed ahead of the pose of the loss. The **feedforward** inputs (from
    ``geodyn_node``) are held at their value at the loss, their derivatives zero. The **state**
    is the *estimated* one, never a frozen one: while the odometry flows (another input was lost)
    the measured state; without odometry the **predicted** state
    (:class:`~geodyn_ros.control.failsafe_law.PointMassPredictor`): the base origin propagated from
    the last measured state as a point mass of the model's total mass under the force actually
    commanded (``p'' = F / m + g``), the attitude and angular velocity those of the held reference;
    the joints and motors are their newest samples propagated within their maximum age, beyond it
    held at rest. The feedback closes on the prediction, so the command converges to the
    feedforward of the braking and descending reference instead of growing with time (a frozen
    state made it grow by ``kp_position x failsafe_descent_rate`` every second: 280 N/s).
``descend`` (WARN)
    still in hold ``failsafe_hold`` s after the loss: the reference sinks at
    ``failsafe_descent_rate`` (its vertical offset's rate ramps to ``-failsafe_descent_rate`` over
    ``failsafe_ramp``, a deceleration of at most ``2.93 failsafe_descent_rate / failsafe_ramp``:
    2.05 m/s^2 at the defaults): a velocity command, as PX4's emergency *Descend*, flown from the
    estimated state.

**The bound** (:class:`~geodyn_ros.control.failsafe_law.ForceBound`): every command the failsafe
sends (hold, descend, and the return after a restore) asks the vehicle for a force ``F`` (world
axes) with ``|F - m g_up| <= m failsafe_max_accel``: never more than ``failsafe_max_accel`` of
acceleration in any direction (so a descent never decelerates or sinks faster than that, and the
thrust stays within ``m (g -+ failsafe_max_accel)``: no free fall, no 58 x the weight). The
rotor controllers clip the force of their rotor speeds (``A omega^2``) into it and reallocate (a
collinear vehicle scales its thrust into the interval its attitude allows) and their rotor speeds
stay within ``[min_rot_velocity, max_rot_velocity]``; ``geodyn_controller`` (ideal actuators)
also bounds its torque by ``m (g + failsafe_max_accel) r_g`` (``r_g``: the radius of gyration of
the locked vehicle, :func:`~geodyn_ros.control.failsafe_law.torque_bound`). Tracking commands are
not touched (the normal law, bit for bit).

**Restore.** The first cycle with every input fresh whose command is computed returns to
``tracking``: the reference (and feedforward) inputs go from the segment's start to the live ones
with the smooth step of :mod:`geodyn_ros.control.retiming` over ``max(failsafe_ramp, 2.93 gap /
failsafe_descent_rate)`` s (``gap``: the distance from the start to the live reference position;
the return's peak speed is at most the descent rate), with the blend's derivatives (Leibniz) in
the rate rows: no jump in position or velocity. The start is the held reference (its descent
stopped over ``failsafe_ramp``), unless the vehicle is more than ``failsafe_resume_gap`` from it
or it is more than that from the live reference: then the return is **re-planned from where the
vehicle is** (a new segment starting at the measured pose and velocity, braking along it, to the
live reference) instead of blending a far held reference in (what gave "gap 83 m, resuming over
348 s" and 262,262 N). The rotation is blended on SO(3), its rate rows to first order in the
blend's derivatives. A loss during the return holds from the reference of the last cycle (no
jump either), on a clock and an offset of its own (a second loss starts a hold of its own; the
return's schedules are dropped).

**Clock jumps** (``use_sim_time``: a simulator reset sends ``/clock`` back, or forward): rclpy's
jump callback on the node clock (any jump back, a jump forward beyond ``odom_timeout``) moves the
failsafe's and the watchdog's time bases with the clock (the failsafe's time stays continuous, the
odometry's age stays the time elapsed) and, for a jump back, the stamps the inputs are compared
with (the newest samples, the last cycle's), so the next samples of the reset simulation are taken
at once instead of being refused as "not newer" until simulated time passes its old maximum. One
line per jump, the counter ``clock_jumps`` and a WARN status on ``/diagnostics``; the controller
keeps commanding throughout.

**A command that cannot be computed** (non-finite, or a ``ValueError`` from the law, its gains or
the allocation): counted (``commands_not_computed``), logged at most once per second with the
count since the last line, the status WARN; the cycle then commands the hold above from the last
cycle whose command was computed (the failsafe enters ``hold``); if that is not computable either,
the last command computed is published again with the cycle's stamp; before any command was
computed, nothing is published.

Defaults (:data:`FAILSAFE_PARAMETERS`) and their sources: ``odom_timeout`` 0.04 s = the failsafe
rule of :mod:`geodyn_ros.control.failsafe` (latency + 3 periods) for the onboard-estimator profile
of ``config/sensors.yaml`` (PX4 EKF2 at 100 Hz, 10 ms latency; a 240 Hz motion-capture stream gives
17 ms); ``failsafe_hold`` 5 s = PX4's ``EKF2_NOAID_TOUT``; ``failsafe_descent_rate`` 0.7 m/s = PX4's
``MPC_LAND_SPEED``; ``failsafe_ramp`` 1 s (:class:`~geodyn_ros.control.failsafe.FailsafeConfig`);
``failsafe_max_accel`` 3 m/s^2 = PX4's ``MPC_ACC_DOWN_MAX`` and ``MPC_ACC_HOR`` (the accelerations
its trajectory generator asks of a multirotor; both ``3.f`` in ``src/modules/mc_pos_control/
multicopter_altitude_mode_params.c`` and ``multicopter_autonomous_params.c``, PX4 main 289f3203), above the descent's 2.05 m/s^2 and the hold's
braking (``2.93 v / failsafe_ramp``: 1.8 m/s^2 at 0.6 m/s); ``failsafe_resume_gap`` 1 m: more than
the hold's braking distance at the speeds flown here (0.3 m at 0.6 m/s) and than the prediction's
error over an outage of a second; beyond it the held reference no longer says where the vehicle is.

The node provides ``_fs_fields()`` (the reference and feedforward inputs, below), ``_fs_compute(t_ns)``
(the command of the current inputs; raises :class:`CommandNotComputed`), ``_fs_publish(t_ns, cmd)``
and, unless it commands rotor speeds through ``_alloc`` (:meth:`FailsafeInputs._fs_force_body`,
:meth:`FailsafeInputs._fs_limit`), its own versions of those two.
A field is ``(kind, get, set)``: ``get()`` returns the input's current value and ``set(value)`` writes
one; kinds ``"pose"`` (``(C (4, 4), V (k, 6))``: a pose and its spatial twist rows), ``"jet"``
(rows = derivatives), ``"jet_z"`` (a jet of points (rows, 3): the descent moves column z) and
``"ff"`` (feedforward rows, held, not warped).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time

import numpy as np

from geodyn_ros.control.failsafe import Failsafe, FailsafeConfig
from geodyn_ros.control.failsafe_law import (ForceBound, PointMassPredictor, blend_fields, field_position, hold_fields,
                                             resume_time, torque_bound)
from geodyn_ros.control.retiming import Schedule, smoothstep
from geodyn_ros.lie import Ad_inv

from ..common.params import ConfigurationError

__all__ = ["FAILSAFE_PARAMETERS", "FailsafeInputs", "CommandNotComputed", "hold_fields", "blend_fields"]

FAILSAFE_PARAMETERS = {
    "odom_timeout": (0.04, "input_policy latest: no odometry for this long [s] (node clock minus the newest "
                     "odom's receipt) starts the failsafe (hold). Default: latency + 3 periods of an onboard "
                     "estimator (PX4 EKF2, 100 Hz, 10 ms)."),
    "failsafe_hold": (5.0, "input_policy latest: seconds in hold before the descent (PX4 EKF2_NOAID_TOUT, 5 s)."),
    "failsafe_descent_rate": (0.7, "input_policy latest: descent rate of the failsafe [m/s], and the peak speed of "
                              "the return after a restore (PX4 MPC_LAND_SPEED, 0.7 m/s)."),
    "failsafe_ramp": (1.0, "input_policy latest: the failsafe's reference brakes over this time [s] (and its "
                      "descent rate ramps in over it)."),
    "failsafe_max_accel": (3.0, "input_policy latest: every failsafe command asks a force F with |F - m g_up| <= m "
                           "times this [m/s^2] (PX4 MPC_ACC_DOWN_MAX and MPC_ACC_HOR, 3 m/s^2)."),
    "failsafe_resume_gap": (1.0, "input_policy latest: a restore with the vehicle, or the live reference, farther "
                            "than this [m] from the held reference re-plans the return from where the vehicle is."),
}

_LIMITS = {"failsafe_max_accel": (0.1, 50.0), "failsafe_resume_gap": (1e-3, 1e4)}


class CommandNotComputed(Exception):
    """The command of a cycle cannot be computed; ``str(exc)`` says why."""


# ----------------------------------------------------------------------------- the mixin
class FailsafeInputs:
    """Mixin of the three controllers (module docstring)."""

    _fs = None   # the Failsafe (None: input_policy exact)

    def _init_failsafe(self, p: dict, period: float) -> None:
        """Read and check the failsafe parameters of ``p``; under ``latest`` start the watchdog timer
        at ``period`` [s] (node clock) and the clock-jump callback."""
        self._fs_period = float(period)
        self._not_computed_log = (0.0, 0)   # (monotonic time of the last line, count since)
        self._good = None                   # inputs of the last cycle whose command was computed
        self._fs_last_cmd = None            # (t_ns, cmd) the last command computed
        self._odom_ns = None   # node clock at the receipt of the newest accepted odometry (TrackingInputs._take)
        self._out_ns = 0       # node clock at the last command published
        self._blend = None
        self._blend_vals = None    # the blended field values of the current cycle (None: the live ones)
        self._sched = None         # (clock, offset) Schedules of the current loss
        self._t_loss = None
        self._pred = None          # PointMassPredictor (with the model)
        self._bound = None         # ForceBound of the current loss
        try:
            cfg = FailsafeConfig(timeout=p["odom_timeout"], hold=p["failsafe_hold"],
                                 descent_rate=p["failsafe_descent_rate"], ramp=p["failsafe_ramp"])
        except ValueError as exc:
            name = str(exc).split(":")[0]
            key = {"timeout": "odom_timeout", "hold": "failsafe_hold", "descent_rate": "failsafe_descent_rate",
                   "ramp": "failsafe_ramp"}.get(name, name)
            raise ConfigurationError(f"parameter '{key}': {str(exc).split(':', 1)[-1].strip()}") from None
        for key, (lo, hi) in _LIMITS.items():
            v = p[key]
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise ConfigurationError(f"parameter '{key}': must be a number in [{lo:g}, {hi:g}], got {v!r}")
        self._max_accel, self._resume_gap = float(p["failsafe_max_accel"]), float(p["failsafe_resume_gap"])
        self.diag.counters["commands_not_computed"] = 0
        if not self.latest:
            return
        self._fs_cfg = cfg
        self._fs = Failsafe(cfg, cfg.timeout, log=None)
        # load the compiled kernels of the hold path now, not at the first loss (measured: ~0.1 s)
        blend_fields(["pose"], [(np.eye(4), np.zeros((2, 6)))], [(np.eye(4), np.zeros((2, 6)))],
                     np.array([0.5, 0.1, 0.0]))
        self._fs_t0 = self.get_clock().now().nanoseconds
        self.diag.counters["failsafe_losses"] = 0
        self.diag.counters["clock_jumps"] = 0
        self.diag.notes["failsafe_mode"] = "tracking"
        from rclpy.clock import JumpThreshold
        from rclpy.duration import Duration
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=Duration(nanoseconds=max(1, int(round(cfg.timeout * 1e9)))),
                          min_backward=Duration(nanoseconds=-1), on_clock_change=False),
            post_callback=self._on_clock_jump)
        if getattr(self, "steps", False):
            return   # cycle sim_steps: the step manifests are the clock (step_cycles), no watchdog
        from ..common.diagnostics import guard
        self.create_timer(self._fs_period, guard(self, self._failsafe_tick, "failsafe timer"))

    # ------------------------------------------------------------------ helpers
    def _fs_t(self, t_ns: int) -> float:
        return (t_ns - self._fs_t0) * 1e-9

    def _gravity(self) -> np.ndarray:
        p = getattr(self, "_p", {})
        return np.asarray(p.get("gravity", (0.0, 0.0, -9.81)), float)

    def _predictor(self) -> PointMassPredictor:
        if self._pred is None:
            self._pred = PointMassPredictor(self.model.total_mass, self._gravity())
        return self._pred

    def _snapshot(self, t_ns: int, values=None) -> None:
        """Keep the inputs of a cycle whose command was computed (the hold starts from them), with
        ``t_ns`` the node clock at the receipt of its odometry; ``values``: the field values the
        cycle used, when not the live ones (during the return after a restore: a loss then holds
        from the blended reference, without a jump)."""
        if values is None:
            fields = [(kind, copy.deepcopy(get())) for kind, get, _ in self._fs_fields()]
        else:
            fields = [(kind, copy.deepcopy(v)) for (kind, _, _), v in zip(self._fs_fields(), values)]
        self._good = (t_ns, self._C.copy(), self._V.copy(), self._q.copy(), self._qd.copy(),
                      getattr(self, "_th", np.zeros(0)).copy(), getattr(self, "_thd", np.zeros(0)).copy(), fields)

    def _measured(self, t_ns: int, cmd) -> None:
        """After a cycle on the measured state (odometry received at ``t_ns``, node clock): the
        predictor restarts from it with the force of ``cmd``."""
        C, V = self._C, self._V
        t = self._fs_t(t_ns)
        pred = self._predictor()
        pred.reset(t, C[:3, 3], V[3:] + np.cross(V[:3], C[:3, 3]))
        pred.apply(t, C[:3, :3] @ self._fs_force_body(cmd))

    def _fs_status(self):
        """``(level, message)`` while not tracking, else None (for the periodic summary)."""
        if self._fs is None or self._fs.mode == "tracking":
            return None
        from diagnostic_msgs.msg import DiagnosticStatus
        return DiagnosticStatus.WARN, self._fs_line

    def _transition(self, before: str, t_ns: int, cause: str, measured: bool = False) -> None:
        """One log line and one status per transition of the failsafe."""
        fs = self._fs
        if fs.mode == before:
            return
        from diagnostic_msgs.msg import DiagnosticStatus
        c = self._fs_cfg
        b = self._bound
        limit = (f"commands within |F - m g| <= {b.radius:.3g} N (failsafe_max_accel {self._max_accel:g} m/s^2, "
                 f"m = {b.mass:.3g} kg)") if b is not None else ""
        if fs.mode == "hold":
            self.diag.counters["failsafe_losses"] += 1
            state = ("the measured state" if measured else "the predicted state (no odometry: the model's mass under "
                     "the commanded force, from the last odometry)")
            line = (f"failsafe: hold: {cause}; holding the reference (stops in {c.ramp:g} s) on {state}; {limit}; "
                    f"descent after {c.hold:g} s")
        elif fs.mode == "descend":
            line = (f"failsafe: descend: still no command from fresh inputs {c.hold:g} s after the loss; descending "
                    f"at {c.descent_rate:g} m/s; {limit}")
        else:
            line = f"failsafe: tracking: {cause}; resuming the reference over {self._blend[1]:.2f} s"
        self._fs_line = line
        self.diag.notes["failsafe_mode"] = fs.mode
        if fs.mode == "tracking":
            self.get_logger().info(line)
            self.diag.publish_status(DiagnosticStatus.OK, line)
        else:
            self.get_logger().warning(line)
            self.diag.publish_status(DiagnosticStatus.WARN, line)

    def _not_computed(self, reason: str) -> None:
        """Count a command that cannot be computed; log at most once per second with the count
        (under ``exact``: the throttled line and WARN of a skipped cycle)."""
        c = self.diag.counters
        c["commands_not_computed"] += 1
        if self._fs is None:
            self.diag.problem("command not computable", f"command not computable ({c['commands_not_computed']} in "
                              f"all): {reason}; cycle skipped")
            return
        last, n = self._not_computed_log
        n += 1
        now = time.monotonic()
        msg = (f"command not computable ({n} since the last line, {c['commands_not_computed']} in all): {reason}; "
               "commanding the failsafe hold")
        if now - last >= 1.0:
            self.get_logger().error(msg)
            self._not_computed_log = (now, 0)
        else:
            self._not_computed_log = (last, n)
        self.diag.last_problem = msg
        from diagnostic_msgs.msg import DiagnosticStatus
        self.diag.publish_status(DiagnosticStatus.WARN, msg)

    # ------------------------------------------------------------------ the command's bound
    def _make_bound(self) -> ForceBound:
        """The bound of this loss (module docstring), for the model at the held joint angles."""
        m, g = self.model.total_mass, self._gravity()
        tau = math.inf
        if not hasattr(self, "_alloc"):   # ideal actuators: the torque bound of the locked vehicle
            import geodyn_ros as gd
            q = self._good[3] if self._good is not None else np.zeros(self.model.n_joints)
            tau = torque_bound(m, self._max_accel, gd.locked_inertia(self.model, q)[:3, :3], g)
        return ForceBound(m, self._max_accel, g, tau)

    def _fs_force_body(self, cmd) -> np.ndarray:
        """The force (3,) [N, base axes] a rotor command asks: the force rows of ``A omega^2``."""
        return self._alloc.wrench(np.square(np.asarray(cmd.omega, float)))[3:]

    def _fs_limit(self, cmd, R):
        """A rotor command with its force within the bound (base attitude ``R``): the force of
        ``A omega^2`` clipped into the ball (a collinear vehicle: its thrust into the interval of its
        axis) and the rotor speeds reallocated with the same moment; unchanged when within."""
        al, b = self._alloc, self._bound
        W = al.wrench(np.square(np.asarray(cmd.omega, float)))
        if al.collinear:
            lo, hi = b.thrust_interval(R[:, 2])
            T = float(np.clip(W[5], lo, hi))
            if T == W[5]:
                return cmd
            u = al.allocate_thrust_torque(T, W[:3])
        else:
            F = R @ W[3:]
            Fc = b.clip_force(F)
            if np.array_equal(Fc, F):
                return cmd
            W = W.copy()
            W[3:] = R.T @ Fc
            u = al.allocate(W)
        omega = al.speeds(u)[0]
        return dataclasses.replace(cmd, omega=omega)

    # ------------------------------------------------------------------ cycles
    def _cycle(self, t_ns: int, needed) -> bool:
        """A cycle with fresh inputs at ``t_ns`` (the node's ``_try_command`` after its input check):
        the normal command, or (``latest``) the failsafe's; True if a command was published."""
        try:
            cmd = self._fs_compute(t_ns) if self._blend is None else self._blended_compute(t_ns)
        except CommandNotComputed as exc:
            self._not_computed(str(exc))
            if self._fs is None:
                return False
            return self._hold_cycle(self.get_clock().now().nanoseconds, "a command that cannot be computed",
                                    force=True)
        if self._fs is not None and self._fs.mode != "tracking":
            self._restore(self.get_clock().now().nanoseconds)
            try:
                cmd = self._blended_compute(t_ns)
            except CommandNotComputed as exc:
                self._not_computed(str(exc))
                return self._hold_cycle(self.get_clock().now().nanoseconds, "a command that cannot be computed",
                                        force=True)
        self._fs_publish(t_ns, cmd)
        self._record_used(t_ns, needed)
        if self._fs is not None:
            # the time of the state held: the odometry's receipt, or (sim_steps: propagated) the cycle's
            t_rx = t_ns if self.steps else self._odom_ns
            self._snapshot(t_rx, self._blend_vals)
            self._blend_vals = None
            self._fs_last_cmd = (t_ns, cmd)
            self._measured(t_rx, cmd)
            self._out_ns = self.get_clock().now().nanoseconds
        return True

    def _lost(self, key: str, t: int, why: str):
        """An input of the cycle at ``t`` (the odometry's stamp; the odometry itself is fresh) is
        stale or beyond its maximum age (:meth:`TrackingInputs._due_latest`): the failsafe's hold on
        the measured state (before any command was computed: the cycle is skipped and reported)."""
        if self._fs is None or self._good is None:
            self.diag.problem(key, why)
            return None
        why = why.removesuffix("; cycle skipped")   # it is not: the failsafe commands it
        self.diag.last_problem = why
        self._last_cmd_stamp = t
        self._hold_cycle(self.get_clock().now().nanoseconds, why, stamp=t, measured=True)
        return None

    def _failsafe_tick(self) -> None:
        """The watchdog (timer at the control period): a hold cycle when the odometry is older than
        ``odom_timeout``, or while not tracking and no cycle has published for a period."""
        if self.model is None or self._good is None or self._odom_ns is None:
            return
        now = self.get_clock().now().nanoseconds
        age = (now - self._odom_ns) * 1e-9
        if age <= self._fs.timeout:
            if self._fs.mode == "tracking" or now - self._out_ns < 0.9 * self._fs_period * 1e9:
                return
        self._hold_cycle(now, f"odometry none for {age * 1e3:.0f} ms (odom_timeout {self._fs.timeout * 1e3:.0f} ms)")

    def _start_loss(self, t: float) -> None:
        """A new loss at ``t`` [s]: a clock braking from ``s' = 1`` over the ramp and no offset,
        both of this loss (a loss during a return drops the return's), and its bound."""
        c = self._fs_cfg
        self._blend = None
        self._t_loss = t
        clock = Schedule(0.0, 1.0, t)
        clock.ramp_rate(t, c.ramp, 0.0)
        self._sched = (clock, Schedule(0.0, 0.0, t))
        self._bound = self._make_bound()

    def _hold_cycle(self, t_ns: int, cause: str, force: bool = False, stamp: int | None = None,
                    measured: bool = False) -> bool:
        """One failsafe cycle at ``t_ns`` (node clock; the command's stamp unless ``stamp``): the mode
        updated as lost (only a cycle with fresh inputs whose command is computed restores), the
        hold commanded from the last good inputs on the estimated state (``measured``: the node's
        state inputs, the odometry being fresh; else the predicted state), within the bound; True
        if a command was published. ``force``: a command that could not be computed (counted)."""
        fs = self._fs
        if self._good is None:
            return False
        before = fs.mode
        age = (t_ns - self._odom_ns) * 1e-9 if self._odom_ns is not None else math.inf
        t = self._fs_t(t_ns)
        fs.update(t, age if age > fs.timeout else math.inf)
        if before == "tracking":
            self._start_loss(t)
        elif before == "hold" and fs.mode == "descend":
            self._sched[1].ramp_rate(t, self._fs_cfg.ramp, -self._fs_cfg.descent_rate)
        self._transition(before, t_ns, cause, measured)
        stamp = t_ns if stamp is None else stamp
        R = None
        try:
            values = self._held_at(t, self._good[7], self._sched, self._t_loss)
            cmd, R = self._with_inputs(stamp, values, "measured" if measured else "predicted", t)
            cmd = self._fs_limit(cmd, R)
        except CommandNotComputed as exc:
            if not force:
                self._not_computed(str(exc))
            if self._fs_last_cmd is None:
                return False
            cmd = self._fs_last_cmd[1]   # the last command computed, again
        self._fs_publish(stamp, cmd)
        if measured:
            self._measured(self._odom_ns, cmd)
        elif R is not None:
            self._predictor().apply(t, R @ self._fs_force_body(cmd))
        self._out_ns = self.get_clock().now().nanoseconds
        self.diag.counters["failsafe_commands"] = self.diag.counters.get("failsafe_commands", 0) + 1
        return True

    @staticmethod
    def _held_at(t: float, fields, sched, t_loss: float):
        """The held reference and feedforward values of ``fields`` at ``t`` [s] on the schedules
        ``sched = (clock, offset)`` of a loss at ``t_loss`` (module docstring; both are 0 there:
        the clock's progress and the offset since the loss)."""
        clock, offset = sched
        return hold_fields(fields, clock.jets(t, 4), offset.jets(t, 4))

    def _with_inputs(self, t_ns: int, values, state: str, t: float | None = None):
        """``(command, R)``: the command with the field ``values`` in place of the node's inputs,
        which are restored after, on the ``state`` ``"live"`` (the node's state inputs as they are),
        ``"measured"`` (the base as measured, the joints as held) or ``"predicted"`` (at ``t`` [s]);
        ``R`` the base attitude used."""
        fields = self._fs_fields()
        live = [copy.deepcopy(get()) for _, get, _ in fields]
        saved = (self._C.copy(), self._V.copy(), self._Vb.copy(), self._q.copy(), self._qd.copy(),
                 getattr(self, "_th", np.zeros(0)).copy(), getattr(self, "_thd", np.zeros(0)).copy())
        try:
            for (_, _, put), v in zip(fields, values):
                put(v)
            if state == "predicted":
                pose = next(v for (kind, _, _), v in zip(fields, values) if kind == "pose")
                self._put_predicted_base(t, pose)
            if state != "live":
                self._put_held_joints(self.get_clock().now().nanoseconds)
            return self._fs_compute(t_ns), self._C[:3, :3].copy()
        finally:
            for (_, _, put), v in zip(fields, live):
                put(v)
            self._C[...], self._V[...], self._Vb[...], self._q[...], self._qd[...] = saved[:5]
            if hasattr(self, "_th"):
                self._th[...], self._thd[...] = saved[5:]

    def _put_predicted_base(self, t: float, pose) -> None:
        """The predicted base state at ``t`` [s] into ``_C``, ``_V``, ``_Vb`` (module docstring):
        the predictor's position and velocity, the attitude and angular velocity of the held
        reference ``pose`` (``(C (4, 4), V (k, 6))``, spatial)."""
        p, pdot = self._predictor().at(t)
        Cr, Vr = pose
        w = np.asarray(Vr, float)[0, :3]
        C = np.eye(4)
        C[:3, :3], C[:3, 3] = np.asarray(Cr)[:3, :3], p
        self._C[...] = C
        self._V[:3], self._V[3:] = w, pdot - np.cross(w, p)
        self._Vb[...] = Ad_inv(C) @ self._V

    def _put_held_joints(self, t_ns: int) -> None:
        """The joints and motors: the newest samples propagated to ``t_ns`` within their maximum
        age, beyond it those of the last good cycle at rest."""
        g = self._good
        for stream, q, qd, q0, qd0 in (("joint_states", self._q, self._qd, g[3], g[4]),
                                       ("motor_states", getattr(self, "_th", None), getattr(self, "_thd", None),
                                        g[5], g[6])):
            held = self._held.get(stream)
            if q is None or held is None:
                continue
            if held.sample.data is None or held.take_into(t_ns, q, qd).__class__ is str:
                q[...], qd[...] = q0, 0.0

    def _restore(self, t_ns: int) -> None:
        """Every input fresh and a computable command: back to tracking, returning from the hold
        (or, beyond ``failsafe_resume_gap``, from where the vehicle is: module docstring)."""
        fs, c = self._fs, self._fs_cfg
        t = self._fs_t(t_ns)
        clock, offset = copy.deepcopy(self._sched[0]), copy.deepcopy(self._sched[1])
        if offset.value_rate(t)[1] != 0.0:   # the held side's descent stops over the ramp
            Failsafe._cut(offset, t)
            offset.ramp_rate(t, c.ramp, 0.0)
        fields, t_loss = self._good[7], self._t_loss
        kinds = [k for k, _, _ in self._fs_fields()]
        live = [get() for _, get, _ in self._fs_fields()]
        held = self._held_at(t, fields, (clock, offset), t_loss)
        p_veh = self._C[:3, 3].copy()
        p_hold = next(v[0][:3, 3] for k, v in zip(kinds, held) if k == "pose")
        off = float(np.linalg.norm(p_veh - p_hold))
        gap = self._gap(kinds, held, live)
        end = self._held_at(t + c.ramp, fields, (clock, offset), t_loss)
        gap = max(gap, self._gap(kinds, end, live))
        how = "from the held reference"
        if off > self._resume_gap or gap > self._resume_gap:
            # re-plan: a new segment from the vehicle's measured pose and velocity, braking along it
            shift = p_veh - p_hold
            start = []
            for k, v in zip(kinds, held):
                if k == "pose":
                    V = np.zeros_like(np.asarray(v[1], float))
                    V[0] = self._V
                    start.append((k, (self._C.copy(), V)))
                elif k == "jet_z":   # a point jet (the CoM): moved with the base, at its velocity
                    a = np.array(v, float)
                    a[0] += shift
                    a[1:] = 0.0
                    a[1] = self._V[3:] + np.cross(self._V[:3], p_veh)
                    start.append((k, a))
                else:
                    start.append((k, copy.deepcopy(v)))
            fields, t_loss = start, t
            clock = Schedule(0.0, 1.0, t)
            clock.ramp_rate(t, c.ramp, 0.0)
            offset = Schedule(0.0, 0.0, t)
            gap = max(self._gap(kinds, self._held_at(t + c.ramp, fields, (clock, offset), t), live),
                      self._gap(kinds, [v for _, v in fields], live))
            how = (f"re-planned from the vehicle ({off:.3f} m from the held reference, failsafe_resume_gap "
                   f"{self._resume_gap:g} m)")
        T = resume_time(gap, c.descent_rate, c.ramp)
        self._blend = (t, T, fields, (clock, offset), t_loss)
        out, before = t - self._t_loss, fs.mode
        fs.update(t, 0.0)
        self._transition(before, t_ns, f"inputs restored after {out:.3f} s (gap {gap:.3f} m, {how})")

    @staticmethod
    def _gap(kinds, a, b) -> float:
        gap = 0.0
        for kind, x, y in zip(kinds, a, b):
            px, py = field_position(kind, x), field_position(kind, y)
            if px is not None:
                gap = max(gap, float(np.linalg.norm(px - py)))
        return gap

    def _blended_compute(self, t_ns: int):
        """During the return after a restore: the command (stamped ``t_ns``) with the inputs blended
        from the segment's start (by the node clock), within the bound."""
        self._blend_vals = None
        now = self.get_clock().now().nanoseconds
        t = self._fs_t(now)
        t_r, T, fields, sched, t_loss = self._blend
        u = (t - t_r) / T
        if u >= 1.0:
            self._blend = None
            return self._fs_compute(t_ns)
        S = smoothstep(u, 2)
        w = np.array([S[0], S[1] / T, S[2] / T ** 2])
        held = self._held_at(t, fields, sched, t_loss)
        kinds = [k for k, _, _ in self._fs_fields()]
        live = [get() for _, get, _ in self._fs_fields()]
        vals = blend_fields(kinds, held, live, w)
        cmd, R = self._with_inputs(t_ns, vals, "live")
        self._blend_vals = vals
        return self._fs_limit(cmd, R)

    # ------------------------------------------------------------------ clock jumps
    def _on_clock_jump(self, jump) -> None:
        """A jump of the node clock (module docstring): the time bases move with it."""
        d = int(jump.delta.nanoseconds)
        if d == 0:
            return
        self._fs_t0 += d
        if self._odom_ns is not None:
            self._odom_ns += d
        self._out_ns += d
        if self._good is not None:
            self._good = (self._good[0] + d,) + self._good[1:]
        if d < 0:   # back: the stamps the next samples are compared with (1 ns more: one stamped now is newer)
            d -= 1
            if self._last_cmd_stamp is not None:
                self._last_cmd_stamp += d
            if getattr(self, "_first_odom_ns", None) is not None:
                self._first_odom_ns += d
            for k, s in self._stamps.items():
                if s is not None:
                    self._stamps[k] = s + d
            for held in self._held.values():
                if held.sample.stamp_ns is not None:
                    held.sample.stamp_ns += d
        if self._fs_last_cmd is None:
            return   # nothing commanded yet (e.g. the first /clock of a simulation): nothing to say
        self.diag.counters["clock_jumps"] += 1
        line = (f"clock: the node clock jumped {'back' if d < 0 else 'forward'} {abs(d) * 1e-9:.3f} s (a simulator "
                f"reset?): the failsafe's and the inputs' time bases moved with it; commanding on "
                f"(failsafe {self._fs.mode})")
        self.get_logger().warning(line)
        from diagnostic_msgs.msg import DiagnosticStatus
        self.diag.publish_status(DiagnosticStatus.WARN, line)
