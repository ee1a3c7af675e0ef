"""When the rejection options act (``RejectionOptions.engage``), and how fast the observer may be
for the loop's delay (``geodyn_ros.control.delay_margin.observer_delay_margin``, issue 53).

The failure reproduced (PX4 SITL, issue 53): a vehicle held on the ground below its reference,
its commands not applied (disarmed). The observer then reads the ground's hold as an external
wrench and its feedforward, with the integral, winds the command up to the rotors' limit.

Independent references:
* the options-off law: a disengaged controller must command exactly what the controller without
  options commands (bit for bit: no estimate, integrators at zero);
* the delay margin's closed form for the observer alone (``K_O e^(-s tau) / s``: ``pi / (2 K_O)``),
  and the PD's own :func:`delay_margin` at ``K_O = 0``;
* a time-domain simulation of one axis written from the observer's definition (the momentum
  residual of the commands it assumes applied, a delay line in front of the plant): stable, with
  the disturbance rejected, at 0.8 x the margin; growing at 1.25 x (the margin is a boundary, so
  +-20 % of it decides, with the Euler step 1e-4 s three hundred times below the margin).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from geodyn_ros.control.delay_margin import (delay_margin, observer_bandwidth, observer_delay_margin, path_delay,
                                             rotor_lag)
from geodyn_ros.control.flatness import FlatnessController, FlatnessGains
from geodyn_ros.control.rejection import Rejection, RejectionOptions
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.trajectories import figure_eight_reference

import geodyn_ros as gd


@pytest.fixture(scope="module")
def hexa():
    cfg = load_actuation_config("hexarotor")
    model = cfg.load_model(hexarotor_source())
    return cfg, model, Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)


def _hover_inputs(model, drop=0.1):
    """The hover reference, and the vehicle at rest ``drop`` m below it (on the ground)."""
    ref = figure_eight_reference(0.0, 2, amplitude=(0.0, 0.0, 0.0), yaw_amplitude=0.0, q_amplitude=np.zeros(6))
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    C = flat.base_pose.copy()
    C[2, 3] -= drop
    return C, np.zeros(6), ref.q[0].copy(), np.zeros(6), ref, flat


@pytest.mark.parametrize("kw", [{"engage": "sometimes"}, {"engage": 1}, {"takeoff_height": 0.0},
                                {"takeoff_height": float("nan")}])
def test_bad_engage_options_name_the_field(kw):
    with pytest.raises(ValueError, match=f"^{next(iter(kw))}: "):
        RejectionOptions(**kw)


def test_always_is_the_default_and_cannot_be_switched_off(hexa):
    cfg, model, al = hexa
    rj = Rejection(RejectionOptions(integral_action=True), model, al, cfg.rotors, cfg.elastic,
                   gravity=(0.0, 0.0, -9.81), position_gain=64.0)
    assert rj.options.engage == "always" and rj.engaged
    with pytest.raises(ValueError, match="^engage: "):
        rj.set_engaged(False)
    arm = float(np.abs(al.A[:2]).max() / np.abs(al.A[5]).max())
    assert rj.takeoff_height == max(arm, 0.05)          # the default: the rotor arm


def _held(ctrl, model, n, drop=0.1, t0=0.0, rise=None):
    """``n`` cycles at 1 kHz of a vehicle held ``drop`` [m] below its hover reference (``rise(k)``: its
    height above that, or held); returns the commands."""
    C, Vb, q, qd, ref, flat = _hover_inputs(model, drop)
    out = []
    for k in range(n):
        Ck = C.copy()
        if rise is not None:
            Ck[2, 3] += rise(k)
        out.append(ctrl.command(Ck, Vb, q, qd, q, qd, ref.com, ref.yaw, ref.q, flat, t=t0 + 1e-3 * k))
    return out


def test_held_on_the_ground_always_winds_up_and_armed_does_not(hexa):
    """2 s on the ground, 0.1 m below the reference, commands not applied: with ``always`` the
    rotor commands climb to their limit (the SITL failure); with ``armed`` (not yet armed) every
    command is the options-off controller's, bit for bit; armed, it waits for the take-off rise,
    then the estimate starts at the second sample."""
    cfg, model, al = hexa
    opts = dict(wrench_feedforward=True, integral_action=True, thrust_estimate=True, com_estimate=True)
    off = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2")
    always = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2", rejection=RejectionOptions(**opts))
    armed = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2",
                               rejection=RejectionOptions(**opts, engage="armed"))
    base = _held(off, model, 2000)
    wound = _held(always, model, 2000)
    gated = _held(armed, model, 2000)
    wmax = float(np.max(cfg.rotors.max_rot_velocity))
    assert max(base[-1].omega) < 0.9 * wmax                       # the plain law: a steady command
    assert max(wound[-1].omega) >= 0.999 * wmax                   # wound to the limit
    assert all(np.array_equal(a.omega, b.omega) and np.array_equal(a.u, b.u) for a, b in zip(base, gated))
    rj = armed.rejection
    assert not rj.engaged and rj.estimate is None and not np.any(rj.z_position)
    rj.set_engaged(True)                                         # armed, still on the ground
    _held(armed, model, 500, t0=2.0)
    assert not rj.engaged and rj.estimate is None                # armed is not enough (PX4 SITL)
    h = rj.takeoff_height
    _held(armed, model, 1, t0=2.5, rise=lambda k: h)             # the take-off rise: engaged here
    assert rj.engaged and rj.estimate is None                    # the observer starts at this sample
    _held(armed, model, 1, t0=2.501, rise=lambda k: h)
    assert rj.estimate is not None
    rj.set_engaged(False)                                        # disarmed: disengaged at once
    assert not rj.engaged and rj.estimate is None and not np.any(rj.z_position)


def test_airborne_engages_at_the_takeoff_height_and_disengages_on_landing(hexa):
    """``airborne``: 1 s held on the ground (the options-off law, bit for bit), then a climb at
    1.5 m/s (PX4's take-off speed): engaged at the first sample at or above the take-off height,
    disengaged below half of it on the way down (integrators zeroed)."""
    cfg, model, al = hexa
    opts = RejectionOptions(wrench_feedforward=True, integral_action=True, engage="airborne", takeoff_height=0.2)
    off = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2")
    air = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, "ff2", rejection=opts)

    def rise(k):
        return 0.0 if k < 1000 else min(1.5e-3 * (k - 1000), 0.4)
    base, got = _held(off, model, 1000), _held(air, model, 1000)
    assert all(np.array_equal(a.omega, b.omega) for a, b in zip(base, got))
    rj = air.rejection
    assert not rj.engaged
    _held(air, model, 1500, t0=1.0, rise=lambda k: rise(k + 1000))
    assert rj.engaged and rj.estimate is not None and np.any(rj.z_position)
    k_up = next(k for k in range(1000, 3000) if rise(k) >= 0.2)
    assert k_up == 1000 + math.ceil(0.2 / 1.5e-3 - 1e-9)
    _held(air, model, 1, t0=2.5, rise=lambda k: 0.11)             # above half: still flying
    assert rj.engaged
    _held(air, model, 1, t0=2.501, rise=lambda k: 0.09)           # below half: landed
    assert not rj.engaged and rj.estimate is None and not np.any(rj.z_position)


# ----------------------------------------------------------------------------- the observer's delay margin
def test_observer_margin_closed_forms():
    for bw in (1.0, 10.0, 30.0):
        assert observer_delay_margin(1.0, 0.0, 0.0, 0.0, bw) == pytest.approx(math.pi / (2 * bw), rel=1e-9)
    for I, kp, kd, lag in ((2.0, 40.0, 12.0, 0.02), (0.05, 2.0, 0.3, 0.025)):
        assert observer_delay_margin(I, kp, kd, lag, 0.0) == pytest.approx(delay_margin(I, kp, kd, lag), rel=1e-9)
        m = [observer_delay_margin(I, kp, kd, lag, bw) for bw in (1.0, 5.0, 20.0, 60.0)]
        assert all(a > b for a, b in zip(m, m[1:]))               # a faster observer: less margin


def _axis_response(I, kp, kd, lag, bw, tau, T=6.0, h=1e-4, w=1.0):
    """One axis ``I x'' = u_a + w`` (a step disturbance ``w`` at t = 0), ``u_a`` the command through
    a delay ``tau`` and the lag ``lag``; command ``u = -(kp x + kd x') - r`` with the momentum
    observer ``r = K_O (I x' - integral(u_model + r))`` of the commands it assumes applied
    (``u_model``: the lag without the delay). Returns ``(max |x| over the last second,
    the last r)``."""
    nd = int(round(tau / h))
    line = [0.0] * (nd + 1)
    x = v = ua = um = r = integ = 0.0
    xs = []
    for k in range(int(T / h)):
        u = -(kp * x + kd * v) - r
        line.append(u)
        ud = line.pop(0)
        ua += h * (ud - ua) / lag
        um += h * (u - um) / lag
        v += h * (ua + w) / I
        x += h * v
        integ += h * (um + r)
        r = bw * (I * v - integ)
        if k * h > T - 1.0:
            xs.append(abs(x))
        if not math.isfinite(x) or abs(x) > 1e6:
            return math.inf, r
    return max(xs), r


@pytest.mark.parametrize("axis", [(2.0, 40.0, 12.0, 0.02, 30.0), (0.05, 2.0, 0.3, 0.025, 20.0)])
def test_observer_margin_against_a_time_domain_simulation(axis):
    I, kp, kd, lag, bw = axis
    m = observer_delay_margin(I, kp, kd, lag, bw)
    x_in, r_in = _axis_response(I, kp, kd, lag, bw, 0.8 * m)
    x_out, _ = _axis_response(I, kp, kd, lag, bw, 1.25 * m)
    assert x_in < 1e-3 and r_in == pytest.approx(1.0, abs=1e-2)       # rejected: r carries the 1 N push
    assert x_out > 1.0                                                # the delay beyond the margin: diverges


def test_observer_bandwidth_keeps_the_rule_on_the_px4_path(hexa):
    """The PX4 path's delay (100 Hz, EKF2's 10 ms: 21.5 ms) and 1.5 times that, with the gains the
    PX4 setup flies there (rotation bandwidth fitted to the PD's own rule, ``fit_rotation``): the
    bandwidth found keeps ``margin >= 1.5 x delay`` on every axis and is the largest that does
    (1 % above it breaks the rule); at no delay the cap (the observer's default, 30 rad/s) is kept."""
    from geodyn_ros.control.gain_design import model_inertias
    from geodyn_ros.control.delay_margin import _axes, fit_rotation
    cfg, model, al = hexa
    inertias, lag = model_inertias(model), rotor_lag(cfg.rotors)
    assert observer_bandwidth(FlatnessGains(), inertias, lag, 0.0)["bandwidth"] == 30.0
    for delay in (path_delay(0.01, 0.01), 1.5 * path_delay(0.01, 0.01)):
        gains = fit_rotation(FlatnessGains(), inertias, lag, delay)[0]
        b = observer_bandwidth(gains, inertias, lag, delay)
        print(f"delay {delay * 1e3:.1f} ms: K_O <= {b['bandwidth']:.2f} rad/s ({b['limited_by']})")
        assert 0 < b["bandwidth"] < 30.0 and b["limited_by"] is not None
        assert min(b["margins_s"].values()) >= 1.5 * delay
        worse = [observer_delay_margin(I, kp, kd, lag, 1.01 * b["bandwidth"]) for _, _, _, I, kp, kd in
                 _axes(gains, inertias)]
        assert min(worse) < 1.5 * delay
