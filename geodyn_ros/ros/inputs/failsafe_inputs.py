"""The controllers' failsafe over ROS: a defined command when the odometry stops, and when a command
cannot be computed.

Shared by ``geodyn_controller``, ``geodyn_actuated_controller`` and ``geodyn_flat_controller``
(mixin :class:`FailsafeInputs`, before :class:`~geodyn_ros.ros.inputs.tracking_inputs.TrackingInputs`
in the node's bases). The state machine is :class:`geodyn_ros.control.failsafe.Failsafe` (the one
the in-process loops use, :mod:`geodyn_ros.loops.sensed`) and the reference's clock and vertical
offset are its :class:`~geodyn_ros.control.retiming.Schedule` objects.

**Only under** ``input_policy: latest`` (real sensors). Under ``exact`` (lock-step simulators) the
controllers behave as before: no timer, no failsafe; a command that cannot be computed is counted
(``commands_not_computed``), reported (WARN, throttled log) and its cycle skipped.

**Clocking.** Under ``latest`` a cycle runs per accepted ``odom`` (its stamp is the cycle's time).
A watchdog timer on the node clock at the control period (``geodyn_controller`` and
``geodyn_flat_controller``: ``control_period``; ``geodyn_actuated_controller``: the actuation file's
``control_period``) compares the node clock with the stamp of the newest accepted odometry. When
that age exceeds ``odom_timeout`` the failsafe starts and the timer runs the cycles, one per
period, stamped with the node clock.

**Modes** (the ``failsafe_mode`` note and the status on ``/diagnostics``; one log line per
transition):

``tracking``
    the normal law on the normal inputs.
``hold`` (WARN)
    no odometry for ``odom_timeout``, or a command that could not be computed. The inputs of the
    last cycle whose command was computed are held: the **state** is its base pose propagated with
    its twist over its age, at most ``odom_timeout`` (no IMU is read: no dead reckoning), at rest
    (twist zero); the joints and motors are their newest samples propagated within their maximum
    age, beyond it held at rest. The **reference** (pose and twist rows, CoM and yaw jets, joint
    jets) brakes along its last velocity: its clock ``s(t)`` ramps from ``s' = 1`` to 0 over
    ``failsafe_ramp`` (the pose moves ``s(t) - s(t_loss)`` along its last twist, the rates are
    ``s'`` times it, the accelerations ``s''`` times it); it stops about ``failsafe_ramp / 2`` times the
    speed ahead of the pose of the loss. The **feedforward** inputs (from ``geodyn_node``) are held
    at their value at the loss, their derivatives zero.
``descend`` (WARN)
    still in hold ``failsafe_hold`` s after the loss: the reference sinks at
    ``failsafe_descent_rate`` (its vertical offset's rate ramps to ``-failsafe_descent_rate`` over
    ``failsafe_ramp``).

**Restore.** The first cycle with fresh odometry whose command is computed returns to
``tracking``: the reference (and feedforward) inputs go from the held values to the live ones
with the smooth step of :mod:`geodyn_ros.control.retiming` over ``max(failsafe_ramp, 2.93 gap /
failsafe_descent_rate)`` s (``gap``: the distance between the held and the live reference
positions; the return is flown at a peak speed of at most the descent rate), with the blend's
derivatives (Leibniz) in the rate rows: no jump in position or velocity. The rotation is blended
on SO(3), its rate rows to first order in the blend's derivatives. A loss during the blend holds from
the blended inputs of the last cycle (no jump either).

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
``MPC_LAND_SPEED``; ``failsafe_ramp`` 1 s (:class:`~geodyn_ros.control.failsafe.FailsafeConfig`).

The node provides ``_fs_fields()`` (the reference and feedforward inputs, below), ``_fs_compute(t_ns)``
(the command of the current inputs; raises :class:`CommandNotComputed`) and ``_fs_publish(t_ns, cmd)``.
A field is ``(kind, get, set)``: ``get()`` returns the input's current value and ``set(value)`` writes
one; kinds ``"pose"`` (``(C (4, 4), V (k, 6))``: a pose and its spatial twist rows), ``"jet"``
(rows = derivatives), ``"jet_z"`` (a jet of points (rows, 3): the descent moves column z) and
``"ff"`` (feedforward rows, held, not warped).
"""
from __future__ import annotations

import copy
import math
import time

import numpy as np

from geodyn_ros.control.failsafe import Failsafe, FailsafeConfig
from geodyn_ros.control.retiming import smoothstep
from geodyn_ros.control.sensing import propagate_base
from geodyn_ros.lie import exp_so3, log_so3

from ..common.params import ConfigurationError

__all__ = ["FAILSAFE_PARAMETERS", "FailsafeInputs", "CommandNotComputed", "hold_fields", "blend_fields",
           "held_state"]

#: the peak slope of the smooth step (control.retiming): a ramp of height h over T peaks at 2.93 h / T
_SLOPE = 2.9326171875

FAILSAFE_PARAMETERS = {
    "odom_timeout": (0.04, "input_policy latest: no odometry for this long [s] (node clock minus the newest "
                     "odom stamp) starts the failsafe (hold). Default: latency + 3 periods of an onboard "
                     "estimator (PX4 EKF2, 100 Hz, 10 ms)."),
    "failsafe_hold": (5.0, "input_policy latest: seconds in hold before the descent (PX4 EKF2_NOAID_TOUT, 5 s)."),
    "failsafe_descent_rate": (0.7, "input_policy latest: descent rate of the failsafe [m/s] (PX4 MPC_LAND_SPEED, "
                              "0.7 m/s)."),
    "failsafe_ramp": (1.0, "input_policy latest: the failsafe's reference brakes over this time [s] (and its "
                      "descent rate ramps in over it)."),
}


class CommandNotComputed(Exception):
    """The command of a cycle cannot be computed; ``str(exc)`` says why."""


# ----------------------------------------------------------------------------- ROS-free pieces
def held_state(C, V, age: float, timeout: float):
    """The held base state (module docstring): ``C`` (4, 4) propagated with the spatial twist ``V``
    over ``min(age, timeout)`` [s], at rest: ``(C_hold, zeros(6))``."""
    return propagate_base(C, V, max(0.0, min(float(age), float(timeout)))), np.zeros(6)


def _rows(a, kind: str = "jet"):
    """``a`` as rows of derivatives: a 1-D jet is a column of scalars, a 1-D feedforward one row."""
    a = np.asarray(a, float)
    if a.ndim == 1:
        return a.reshape(1, -1) if kind == "ff" else a.reshape(-1, 1)
    return a


def hold_fields(fields, s, d):
    """The held values of ``fields`` (``[(kind, value)]``, the values at the loss) with the clock's
    progress ``s = (sigma, s', s'', ...)`` since the loss (``sigma = s(t) - s(t_loss)``) and the vertical
    offset's jet ``d = (d, d', d'', ...)`` relative to the loss; returns ``[value]`` (module docstring)."""
    out = []
    for kind, v in fields:
        if kind == "pose":
            C0, V0 = v
            V0 = np.asarray(V0, float)
            C = propagate_base(C0, V0[0], s[0])
            V = np.zeros_like(V0)
            for k in range(V.shape[0]):
                V[k] = (s[k + 1] if k + 1 < len(s) else 0.0) * V0[0]
            p = C[:3, 3]
            C[2, 3] += d[0]
            for k in range(V.shape[0]):   # v = pdot - w x p with p += d e_z, pdot += d' e_z
                dk = d[k + 1] if k + 1 < len(d) else 0.0
                V[k, 5] += dk
                V[k, 3:] -= np.cross(V[k, :3], (0.0, 0.0, d[0])) if k == 0 else 0.0
            del p
            out.append((C, V))
        elif kind in ("jet", "jet_z"):
            a = np.asarray(v, float)
            r = _rows(a)
            h = np.zeros_like(r)
            h[0] = r[0] + (s[0] * r[1] if r.shape[0] > 1 else 0.0)
            for k in range(1, r.shape[0]):
                h[k] = (s[k] if k < len(s) else 0.0) * r[1]
            if kind == "jet_z":
                for k in range(r.shape[0]):
                    h[k, 2] += d[k] if k < len(d) else 0.0
            out.append(h.reshape(a.shape))
        else:   # ff: held, derivatives zero
            a = np.array(v, float)
            r = _rows(a, "ff")
            r[1:] = 0.0
            out.append(r.reshape(a.shape))
    return out


def _leibniz(h, l, w, kind: str = "jet"):
    """Rows of ``h + w (l - h)`` (rows = derivatives) with the blend weight's jet ``w``."""
    h, l = _rows(h, kind), _rows(l, kind)
    out = h + w[0] * (l - h)
    for k in range(1, h.shape[0]):
        for j in range(1, k + 1):
            out[k] += math.comb(k, j) * (w[j] if j < len(w) else 0.0) * (l[k - j] - h[k - j])
    return out


def blend_fields(kinds, held, live, w):
    """``held`` -> ``live`` values (lists in the order of ``kinds``) by the weight jet ``w`` (module
    docstring). A pose blends its position jet (``pdot = v + w x p``) by Leibniz and its rotation on
    SO(3) (``R_h exp(w phi)``), its angular rate rows with the first-order terms in ``w'``, ``w''``."""
    out = []
    for kind, h, l in zip(kinds, held, live):
        if kind == "pose":
            (Ch, Vh), (Cl, Vl) = h, l
            Vh, Vl = np.asarray(Vh, float), np.asarray(Vl, float)
            k = Vh.shape[0]

            def pjet(C, V):
                p = C[:3, 3]
                rows = [p, V[0, 3:] + np.cross(V[0, :3], p)]
                if k > 1:
                    rows.append(V[1, 3:] + np.cross(V[1, :3], p) + np.cross(V[0, :3], rows[1]))
                return np.array(rows)
            P = _leibniz(pjet(Ch, Vh), pjet(Cl, Vl), w)
            phi = log_so3(Ch[:3, :3].T @ Cl[:3, :3])
            dphi = Ch[:3, :3] @ phi
            C = np.eye(4)
            C[:3, :3] = Ch[:3, :3] @ exp_so3(w[0] * phi)
            C[:3, 3] = P[0]
            V = np.zeros_like(Vh)
            om = (1 - w[0]) * Vh[0, :3] + w[0] * Vl[0, :3] + (w[1] if len(w) > 1 else 0.0) * dphi
            V[0, :3], V[0, 3:] = om, P[1] - np.cross(om, P[0])
            if k > 1:
                al = (1 - w[0]) * Vh[1, :3] + w[0] * Vl[1, :3] + 2 * w[1] * (Vl[0, :3] - Vh[0, :3]) + w[2] * dphi
                V[1, :3], V[1, 3:] = al, P[2] - np.cross(al, P[0]) - np.cross(om, P[1])
            out.append((C, V))
        else:
            a = np.asarray(h, float)
            out.append(_leibniz(a, l, w, kind).reshape(a.shape))
    return out


def _position(kind, v):
    """The position a field puts the vehicle at (pose origin, or row 0 of a point jet), else None."""
    if kind == "pose":
        return np.asarray(v[0])[:3, 3]
    if kind == "jet_z":
        return _rows(v)[0]
    return None


# ----------------------------------------------------------------------------- the mixin
class FailsafeInputs:
    """Mixin of the three controllers (module docstring)."""

    _fs = None   # the Failsafe (None: input_policy exact)

    def _init_failsafe(self, p: dict, period: float) -> None:
        """Read and check the failsafe parameters of ``p``; under ``latest`` start the watchdog timer
        at ``period`` [s] (node clock)."""
        self._fs_period = float(period)
        self._not_computed_log = (0.0, 0)   # (monotonic time of the last line, count since)
        self._good = None                   # inputs of the last cycle whose command was computed
        self._fs_last_cmd = None            # (t_ns, cmd) the last command computed
        self._odom_ns = None   # node clock at the receipt of the newest accepted odometry (TrackingInputs._take)
        self._out_ns = 0       # node clock at the last command published
        self._blend = None
        self._blend_vals = None    # the blended field values of the current cycle (None: the live ones)
        try:
            cfg = FailsafeConfig(timeout=p["odom_timeout"], hold=p["failsafe_hold"],
                                 descent_rate=p["failsafe_descent_rate"], ramp=p["failsafe_ramp"])
        except ValueError as exc:
            name = str(exc).split(":")[0]
            key = {"timeout": "odom_timeout", "hold": "failsafe_hold", "descent_rate": "failsafe_descent_rate",
                   "ramp": "failsafe_ramp"}.get(name, name)
            raise ConfigurationError(f"parameter '{key}': {str(exc).split(':', 1)[-1].strip()}") from None
        self.diag.counters["commands_not_computed"] = 0
        if not self.latest:
            return
        self._fs_cfg = cfg
        self._fs = Failsafe(cfg, cfg.timeout, log=None)
        # load the compiled kernels of the hold path now, not at the first loss (measured: ~0.1 s)
        blend_fields(["pose"], [(np.eye(4), np.zeros((2, 6)))], [held_state(np.eye(4), np.zeros(6), 0.01, 0.04)[:1]
                                                                 + (np.zeros((2, 6)),)], np.array([0.5, 0.1, 0.0]))
        self._fs_t0 = self.get_clock().now().nanoseconds
        self.diag.counters["failsafe_losses"] = 0
        self.diag.notes["failsafe_mode"] = "tracking"
        if getattr(self, "steps", False):
            return   # cycle sim_steps: the step manifests are the clock (step_cycles), no watchdog
        from ..common.diagnostics import guard
        self.create_timer(self._fs_period, guard(self, self._failsafe_tick, "failsafe timer"))

    # ------------------------------------------------------------------ helpers
    def _fs_t(self, t_ns: int) -> float:
        return (t_ns - self._fs_t0) * 1e-9

    def _snapshot(self, t_ns: int, values=None) -> None:
        """Keep the inputs of a cycle whose command was computed (the hold starts from them), with
        ``t_ns`` the node clock at the receipt of its odometry; ``values``: the field values the
        cycle used, when not the live ones (during the blend after a restore: a loss then holds
        from the blended reference, without a jump)."""
        if values is None:
            fields = [(kind, copy.deepcopy(get())) for kind, get, _ in self._fs_fields()]
        else:
            fields = [(kind, copy.deepcopy(v)) for (kind, _, _), v in zip(self._fs_fields(), values)]
        self._good = (t_ns, self._C.copy(), self._V.copy(), self._q.copy(), self._qd.copy(),
                      getattr(self, "_th", np.zeros(0)).copy(), getattr(self, "_thd", np.zeros(0)).copy(), fields)

    def _fs_status(self):
        """``(level, message)`` while not tracking, else None (for the periodic summary)."""
        if self._fs is None or self._fs.mode == "tracking":
            return None
        from diagnostic_msgs.msg import DiagnosticStatus
        return DiagnosticStatus.WARN, self._fs_line

    def _transition(self, before: str, t_ns: int, cause: str) -> None:
        """One log line and one status per transition of the failsafe."""
        fs = self._fs
        if fs.mode == before:
            return
        from diagnostic_msgs.msg import DiagnosticStatus
        c = self._fs_cfg
        if fs.mode == "hold":
            self.diag.counters["failsafe_losses"] += 1
            line = (f"failsafe: hold: {cause}; holding the reference (stops in {c.ramp:g} s) on the last good "
                    f"state (no IMU: pose propagated at most {fs.timeout * 1e3:.0f} ms, at rest); descent after "
                    f"{c.hold:g} s")
        elif fs.mode == "descend":
            line = (f"failsafe: descend: still no command from fresh inputs {c.hold:g} s after the loss; descending "
                    f"at {c.descent_rate:g} m/s")
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
            self._snapshot(t_ns if self.steps else self._odom_ns, self._blend_vals)
            self._blend_vals = None
            self._fs_last_cmd = (t_ns, cmd)
            self._out_ns = self.get_clock().now().nanoseconds
        return True

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

    def _hold_cycle(self, t_ns: int, cause: str, force: bool = False) -> bool:
        """One failsafe cycle at ``t_ns`` (node clock; the command's stamp): the mode updated as lost (only a cycle with fresh inputs
        whose command is computed restores), the hold commanded from the last good inputs; True if a
        command was published. ``force``: a command that could not be computed (already counted)."""
        fs = self._fs
        if self._good is None:
            return False
        before = fs.mode
        age = (t_ns - self._odom_ns) * 1e-9 if self._odom_ns is not None else math.inf
        t = self._fs_t(t_ns)
        fs.update(t, age if age > fs.timeout else math.inf)
        if before == "tracking":
            self._blend = None
            self._loss = (t, fs.clock.value_rate(t)[0], fs.offset.value_rate(t)[0])
        self._transition(before, t_ns, cause)
        try:
            cmd = self._with_inputs(t_ns, self._held_inputs(t_ns, fs.clock, fs.offset), held_state=True)
        except CommandNotComputed as exc:
            if not force:
                self._not_computed(str(exc))
            if self._fs_last_cmd is None:
                return False
            cmd = self._fs_last_cmd[1]   # the last command computed, again
        self._fs_publish(t_ns, cmd)
        self._out_ns = self.get_clock().now().nanoseconds
        self.diag.counters["failsafe_commands"] = self.diag.counters.get("failsafe_commands", 0) + 1
        return True

    def _held_inputs(self, t_ns: int, clock, offset):
        """The held reference and feedforward values at ``t_ns`` (module docstring)."""
        t = self._fs_t(t_ns)
        t_loss, s_loss, d_loss = self._loss
        s = clock.jets(t, 4)
        s[0] -= s_loss
        d = offset.jets(t, 4)
        d[0] -= d_loss
        return hold_fields(self._good[7], s, d)

    def _with_inputs(self, t_ns: int, values, held_state: bool):
        """The command with the field ``values`` (and, ``held_state``, the held state) in place of the
        node's inputs, which are restored after."""
        fields = self._fs_fields()
        live = [copy.deepcopy(get()) for _, get, _ in fields]
        saved = (self._C.copy(), self._V.copy(), self._Vb.copy(), self._q.copy(), self._qd.copy(),
                 getattr(self, "_th", np.zeros(0)).copy(), getattr(self, "_thd", np.zeros(0)).copy())
        try:
            for (_, _, put), v in zip(fields, values):
                put(v)
            if held_state:
                self._put_held_state(t_ns)
            return self._fs_compute(t_ns)
        finally:
            for (_, _, put), v in zip(fields, live):
                put(v)
            self._C[...], self._V[...], self._Vb[...], self._q[...], self._qd[...] = saved[:5]
            if hasattr(self, "_th"):
                self._th[...], self._thd[...] = saved[5:]

    def _put_held_state(self, t_ns: int) -> None:
        """The held state (module docstring) into the node's state inputs."""
        g = self._good
        C, V = held_state(g[1], g[2], (t_ns - g[0]) * 1e-9, self._fs.timeout)
        self._C[...], self._V[...], self._Vb[...] = C, V, 0.0
        for stream, q, qd, q0, qd0 in (("joint_states", self._q, self._qd, g[3], g[4]),
                                       ("motor_states", getattr(self, "_th", None), getattr(self, "_thd", None),
                                        g[5], g[6])):
            held = self._held.get(stream)
            if q is None or held is None:
                continue
            if held.sample.data is None or held.take_into(t_ns, q, qd).__class__ is str:
                q[...], qd[...] = q0, 0.0

    def _restore(self, t_ns: int) -> None:
        """Fresh odometry and a computable command: back to tracking, blending from the hold."""
        fs = self._fs
        t = self._fs_t(t_ns)
        clock, offset = copy.deepcopy(fs.clock), copy.deepcopy(fs.offset)
        before = fs.mode
        held = self._held_inputs(t_ns, clock, offset)
        gap = 0.0
        for (kind, get, _), h in zip(self._fs_fields(), held):
            ph, pl = _position(kind, h), _position(kind, get())
            if ph is not None:
                gap = max(gap, float(np.linalg.norm(ph - pl)))
        c = self._fs_cfg
        T = max(c.ramp, _SLOPE * gap / c.descent_rate)
        self._blend = (t, T, clock, offset, self._loss)
        out = t - self._loss[0]
        fs.update(t, 0.0)
        self._transition(before, t_ns, f"odometry restored after {out:.3f} s (gap {gap:.3f} m)")

    def _blended_compute(self, t_ns: int):
        """During the blend after a restore: the command (stamped ``t_ns``) with the inputs blended
        from the hold (by the node clock)."""
        self._blend_vals = None
        now = self.get_clock().now().nanoseconds
        t = self._fs_t(now)
        t_r, T, clock, offset, loss = self._blend
        u = (t - t_r) / T
        if u >= 1.0:
            self._blend = None
            return self._fs_compute(t_ns)
        S = smoothstep(u, 2)
        w = np.array([S[0], S[1] / T, S[2] / T ** 2])
        keep = self._loss
        self._loss = loss
        try:
            held = self._held_inputs(now, clock, offset)
        finally:
            self._loss = keep
        fields = self._fs_fields()
        live = [get() for _, get, _ in fields]
        vals = blend_fields([k for k, _, _ in fields], held, live, w)
        cmd = self._with_inputs(t_ns, vals, held_state=False)
        self._blend_vals = vals
        return cmd
