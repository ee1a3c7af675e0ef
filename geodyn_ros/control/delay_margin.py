"""The delay-margin rule: how much loop delay a PD axis through the rotor lag takes, and the check of
a controller's gains against the delay of its command path (PX4's offboard path: issue 52).

ROS-free and simulator-free (layer 3, ``control``: imports ``control`` only).

The small model (the sensing and PX4 tables' rule, doc/tutorials/sensing_table.md): one axis
``I x'' = u`` driven through a first-order rotor lag ``T`` by the PD ``u = -(k_p x + k_d x')`` with
a pure delay ``tau``. Its open loop is ``L(s) = (k_d s + k_p) / (I s^2 (T s + 1)) e^(-s tau)``; the
delay margin is the phase margin over the crossover frequency of the delay-free ``L``
(:func:`delay_margin`). A loop is accepted when its margin is at least :data:`MARGIN_RATIO` times
the loop delay of the path: the model is optimistic by about 30 % (on the TiltHex the loop went
unstable at 7.5 ms of delay against the model's 9.8 ms).

The loop delay of a command per odometry sample (:func:`path_delay`): the odometry's latency
(its measurement to its delivery), a whole command period (a command is computed at a sample and
held until the next), the link from the controller to the allocator, and 1.5 actuator steps (a
command acts one step later and is held over a step): PX4 at 100 Hz with EKF2's 10 ms latency, no
link delay and 1 ms steps gives the PX4 table's 21.5 ms.

The rotor lag ``T`` (:func:`rotor_lag`) is the slowest of every rotor's ``time_constant_up`` and
``time_constant_down``: an attitude command spins half the rotors up and half down, so the down
constant is in the loop as much as the up one. Measured (in-process, the PX4 path at 100 Hz,
``onboard`` sensing, test/data/quad_x_arm_px4.yaml: up 12 ms, down 25-30 ms): the rotation gains
designed from the model have a margin of 32.4 ms with the up constant (1.51 x 21.5 ms: accepted)
and diverged at take-off; with the slowest constant the margin is 21.5 ms (refused), and the
rotation bandwidth lowered x 0.7 (margin 38 ms) flies the figure eight at 4.1 cm RMS. On the
shipped vehicles (hexarotor, TiltHex, Borinot) up and down are equal and nothing changes.

:func:`delay_loops` checks a :class:`~geodyn_ros.control.flatness.FlatnessGains`' CoM and rotation
axes and gives each refused axis its bound (the largest bandwidth factor that keeps the margin,
found by bisection); :func:`fit_rotation` lowers the rotation bandwidth in steps of 0.05 until the
rule holds (the tables' design).

**The observer's loop** (issue 53: PX4 SITL with the rejection options lost two of three
flights). The whole-body observer (:mod:`geodyn_ros.control.rejection`) compares the measured
momentum with the one of the commands it assumes applied (through the modelled rotor lag), and
its estimate ``r = K_O / (s + K_O) (u_a + w - u)`` is subtracted from the next command. A delay
``tau`` the model does not hold (the loop's) puts the observer in the loop: on the same axis, with
the PD ``K(s) = k_d s + k_p``, the open loop at the actuator is

    L(s) = e^(-s tau) [K(s) (s + K_O) / (I s^2) + K_O] / (s (T s + 1 + T K_O))

(``K_O = 0``: the PD's ``L`` above; ``k_p = k_d = 0``, ``T = 0``: ``K_O e^(-s tau) / s``, an integrator
whose delay margin is ``pi / (2 K_O)``). :func:`observer_delay_margin` is its margin (every
crossover), :func:`observer_bandwidth` the largest ``K_O`` (at most the observer's default) whose
margin on every axis keeps the rule ``margin >= MARGIN_RATIO x delay``.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

__all__ = ["MARGIN_RATIO", "ACTUATOR_STEPS", "delay_margin", "rotor_lag", "path_delay", "delay_loops",
           "fit_rotation", "scale_rotation", "observer_delay_margin", "observer_bandwidth"]

#: a loop's delay margin must be this many times the loop delay of its path: the small model is
#: optimistic by about 30 % (module docstring)
MARGIN_RATIO = 1.5
#: actuator steps of the loop delay: a command acts one step later, held over a step
ACTUATOR_STEPS = 1.5


def _open_loop(inertia, kp, kd, lag, w):
    s = 1j * w
    return (kd * s + kp) / (inertia * s * s * (lag * s + 1.0))


def delay_margin(inertia: float, kp: float, kd: float, lag: float) -> float:
    """The delay margin [s] of a PD axis ``I x'' = u`` through a first-order rotor lag ``lag`` [s]:
    the phase margin over the crossover frequency of ``L(s) = (kd s + kp) / (I s^2 (lag s + 1))``
    (continuous time; bisection on ``|L| = 1``, which falls monotonically here). 0 when the loop
    has no phase margin; ``inf`` without feedback (``kp = kd = 0``: nothing to destabilise)."""
    for name, v in (("inertia", inertia), ("kp", kp), ("kd", kd), ("lag", lag)):
        if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{name}: expected a finite value >= 0, got {v!r}")
    if inertia <= 0:
        raise ValueError(f"inertia: expected a finite value > 0, got {inertia!r}")
    if kp == 0 and kd == 0:
        return math.inf
    lo, hi = 1e-6, 1e7
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if abs(_open_loop(inertia, kp, kd, lag, mid)) > 1 else (lo, mid)
    w = math.sqrt(lo * hi)
    L = _open_loop(inertia, kp, kd, lag, w)
    pm = math.pi + math.atan2(L.imag, L.real)
    return max(pm, 0.0) / w


def rotor_lag(rotors) -> float:
    """The rotor lag ``T`` [s] of the rule: the slowest of every rotor's ``time_constant_up`` and
    ``time_constant_down`` (module docstring). ``rotors``: :class:`~geodyn_ros.control.rotors.RotorParams`."""
    from .rotors import per_rotor_constant
    t = max(float(np.max(per_rotor_constant(rotors, "time_constant_up"))),
            float(np.max(per_rotor_constant(rotors, "time_constant_down"))))
    if not (math.isfinite(t) and t >= 0):
        raise ValueError(f"rotors: time constants must be finite and >= 0, got {t!r}")
    return t


def path_delay(period: float, latency: float, link_delay: float = 0.0, step: float = 1e-3) -> float:
    """The loop delay [s] of a command per odometry sample (module docstring): ``latency + period
    + link_delay + 1.5 step``. period: the command (odometry) period [s]; latency: the odometry's
    [s]; link_delay: controller to allocator [s]; step: the actuator's step [s]."""
    for name, v in (("period", period), ("latency", latency), ("link_delay", link_delay), ("step", step)):
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                and (v > 0 or name != "period")):
            raise ValueError(f"{name}: expected a finite time {'> 0' if name == 'period' else '>= 0'} [s], got {v!r}")
    return float(latency) + float(period) + float(link_delay) + ACTUATOR_STEPS * float(step)


def _axes(gains, inertias):
    """[(loop, axis, gain index or None, I, kp, kd)] of the CoM (one axis, the mass) and the
    rotation per base axis (the inertia about the CoM)."""
    Ic = np.diag(np.asarray(inertias["inertia_com"], float))
    kp = np.broadcast_to(np.asarray(gains.kp_rotation, float), (3,))
    kd = np.broadcast_to(np.asarray(gains.kd_rotation, float), (3,))
    out = [("com", "xyz", None, float(inertias["mass"]), float(gains.kp_position), float(gains.kd_position))]
    loops = ("attitude", "attitude", "yaw")
    return out + [(loops[i], ax, i, float(Ic[i]), float(kp[i]), float(kd[i])) for i, ax in
                  enumerate(("roll", "pitch", "yaw"))]


def _bound_factor(I, kp, kd, lag, need):
    """The largest bandwidth factor f in (0, 1] with ``delay_margin(I, kp f^2, kd f) >= need``."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mid > 0 and delay_margin(I, kp * mid * mid, kd * mid, lag) >= need:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-6:
            break
    return lo


def delay_loops(gains, inertias: dict, lag: float, delay: float, ratio: float = MARGIN_RATIO) -> list:
    """The rule on every rotor-driven axis of ``gains`` (a ``FlatnessGains``; per-axis rotation
    gains): one dict per axis, CoM then roll, pitch, yaw: ``loop``, ``axis``, ``inertia``, ``kp``,
    ``kd``, ``margin_s`` (:func:`delay_margin` with ``lag``), ``need_s`` (``ratio x delay``), ``ok``
    and, when refused, ``bound``: ``{"factor", "kp", "kd", "gain", "refusal"}`` -- the largest
    bandwidth factor ``f`` keeping the margin and the gains it gives (``kp f^2``, ``kd f``: the
    damping kept), with the one-line refusal naming the gain. ``inertias``:
    :func:`~geodyn_ros.control.gain_design.model_inertias`."""
    if not (math.isfinite(delay) and delay >= 0):
        raise ValueError(f"delay: expected a finite time >= 0 [s], got {delay!r}")
    if not (math.isfinite(ratio) and ratio > 0):
        raise ValueError(f"ratio: expected a finite number > 0, got {ratio!r}")
    need = ratio * delay
    out = []
    for loop, axis, idx, I, kp, kd in _axes(gains, inertias):
        m = delay_margin(I, kp, kd, lag)
        entry = {"loop": loop, "axis": axis, "inertia": I, "kp": kp, "kd": kd, "margin_s": m, "need_s": need,
                 "ok": m >= need, "bound": None}
        if not entry["ok"]:
            f = _bound_factor(I, kp, kd, lag, need)
            stem = "position" if idx is None else "rotation"
            name = f"kp_{stem}" + ("" if idx is None else f"[{axis}]")
            dname = f"kd_{stem}" + ("" if idx is None else f"[{axis}]")
            line = (f"{name}: {kp:.4g} with {dname} {kd:.4g} has a delay margin of {m * 1e3:.1f} ms, below "
                    f"{ratio:g} x the path's {delay * 1e3:.1f} ms ({loop} loop, {axis}; rotor lag {lag * 1e3:g} ms); "
                    f"need {name} <= {kp * f * f:.3g} and {dname} <= {kd * f:.3g} (bandwidth x {f:.3f})")
            entry["bound"] = {"factor": f, "kp": kp * f * f, "kd": kd * f, "gain": name, "refusal": line}
        out.append(entry)
    return out


def scale_rotation(gains, f: float):
    """``gains`` with the rotation loop's bandwidth times ``f``: ``kp_rotation x f^2``,
    ``kd_rotation x f`` (the damping kept)."""
    def sc(v, c):
        return tuple(float(x) * c for x in v) if isinstance(v, (tuple, list, np.ndarray)) else float(v) * c
    return replace(gains, kp_rotation=sc(gains.kp_rotation, f * f), kd_rotation=sc(gains.kd_rotation, f))


def fit_rotation(gains, inertias: dict, lag: float, delay: float, ratio: float = MARGIN_RATIO):
    """``(gains, factor, margin)``: ``gains`` with the rotation loop's bandwidth times ``factor``
    for the largest factor in 1, 0.95, 0.9, ... (at least 0.1) whose smallest rotation-axis delay
    margin is at least ``ratio x delay``; ``margin`` [s] that margin (the tables' design: the CoM
    loop is not changed)."""
    f = 1.0
    while True:
        g = gains if f == 1.0 else scale_rotation(gains, f)
        m = min(e["margin_s"] for e in delay_loops(g, inertias, lag, delay, ratio) if e["loop"] != "com")
        if m >= ratio * delay or f <= 0.1:
            return g, f, m
        f = round(f - 0.05, 2)


def _observer_loop(inertia, kp, kd, lag, bw, w):
    s = 1j * w
    return ((kd * s + kp) * (s + bw) / (inertia * s * s) + bw) / (s * (lag * s + 1.0 + lag * bw))


def observer_delay_margin(inertia: float, kp: float, kd: float, lag: float, bandwidth: float) -> float:
    """The delay margin [s] of one axis with the observer's feedforward in the loop (module
    docstring: ``L(s)`` with ``K_O = bandwidth`` [rad/s]): the smallest phase margin over crossover
    frequency of every crossover of ``|L| = 1`` (a log grid of 4000 points over 1e-3..1e6 rad/s,
    each crossing refined by bisection). ``bandwidth = 0`` is :func:`delay_margin`'s loop."""
    for name, v in (("inertia", inertia), ("kp", kp), ("kd", kd), ("lag", lag), ("bandwidth", bandwidth)):
        if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{name}: expected a finite value >= 0, got {v!r}")
    if inertia <= 0:
        raise ValueError(f"inertia: expected a finite value > 0, got {inertia!r}")
    if kp == 0 and kd == 0 and bandwidth == 0:
        return math.inf
    w = np.logspace(-3, 6, 4000)
    mag = np.abs(_observer_loop(inertia, kp, kd, lag, bandwidth, w))
    above = mag > 1.0
    best = math.inf
    for i in np.flatnonzero(above[:-1] != above[1:]):
        lo, hi = float(w[i]), float(w[i + 1])
        up = bool(above[i])
        for _ in range(80):
            mid = math.sqrt(lo * hi)
            if (abs(_observer_loop(inertia, kp, kd, lag, bandwidth, mid)) > 1.0) == up:
                lo = mid
            else:
                hi = mid
        wc = math.sqrt(lo * hi)
        L = _observer_loop(inertia, kp, kd, lag, bandwidth, wc)
        pm = (math.pi + math.atan2(L.imag, L.real)) % (2.0 * math.pi)
        best = min(best, pm / wc)
    return best


def observer_bandwidth(gains, inertias: dict, lag: float, delay: float, ratio: float = MARGIN_RATIO,
                       cap: float | None = None) -> dict:
    """The largest observer bandwidth ``K_O`` [rad/s] in (0, ``cap``] (None: the observer's default,
    :data:`~geodyn_ros.control.rejection.observer.DEFAULT_BANDWIDTH`) whose
    :func:`observer_delay_margin` on every axis of ``gains`` (CoM, roll, pitch, yaw) is at least
    ``ratio x delay`` (bisection, 1e-3 relative). Returns ``{"bandwidth", "cap", "need_s",
    "margins_s" (per axis at that bandwidth), "limited_by" (the axis, or None at the cap)}``;
    ``bandwidth`` 0 when even a slow observer breaks the rule (the PD alone does not keep it)."""
    from .rejection.observer import DEFAULT_BANDWIDTH
    if not (math.isfinite(delay) and delay >= 0):
        raise ValueError(f"delay: expected a finite time >= 0 [s], got {delay!r}")
    cap = DEFAULT_BANDWIDTH if cap is None else float(cap)
    need = ratio * delay
    axes = _axes(gains, inertias)

    def margins(bw):
        return {f"{loop} {axis}": observer_delay_margin(I, kp, kd, lag, bw) for loop, axis, _, I, kp, kd in axes}

    def ok(bw):
        return min(margins(bw).values()) >= need

    if ok(cap):
        bw, limited = cap, None
    elif not ok(1e-3 * cap):
        bw, limited = 0.0, min(margins(1e-3 * cap).items(), key=lambda kv: kv[1])[0]
    else:
        lo, hi = 1e-3 * cap, cap
        while hi - lo > 1e-3 * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        bw = lo
        limited = min(margins(hi).items(), key=lambda kv: kv[1])[0]
    return {"bandwidth": bw, "cap": cap, "need_s": need, "margins_s": margins(bw) if bw > 0 else {},
            "limited_by": limited}
