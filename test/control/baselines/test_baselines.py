"""The baselines (geodyn_ros.control.baselines): INDI against a closed form on a rigid body, PD plus
gravity against the static closed form on the exact model, and their bad options refused in one line.

INDI's closed form. A rigid body about one principal axis (inertia ``J``, no gyroscopic term),
torque ``c u_j + tau_d`` held over each step ``j`` (the rotor's ``u = omega^2`` through the
effectiveness ``c``; ``tau_d`` the unknown torque, on from step ``j1``), integrated exactly:
``omega_{j+1} = omega_j + dt (c u_j + tau_d,j) / J``. The IMU's gyro is the interval mean
``g_j = omega_j + dt (c u_j + tau_d,j) / (2 J)``. Then ``J (g_k - g_{k-1}) / dt - c (u_k +
u_{k-1}) / 2 = (tau_d,k + tau_d,k-1) / 2``: the raw estimate is ``tau_d / 2`` at ``k = j1`` and
``tau_d`` after. Through ``y <- a y + (1 - a) x`` (``a = exp(-dt / T_f)``) that is the step
response minus half an impulse::

    y_k = tau_d (1 - a^(k - j1 + 1)) - (tau_d / 2) (1 - a) a^(k - j1)         (k >= j1)

and, against the continuous ``tau_d (1 - exp(-(t - t1) / T_f))``, within ``tau_d dt / T_f``
(the half-step and one-step offsets of the discrete form). Tolerances: the discrete closed form
to 1e-9 relative (rounding of a few thousand recursive updates, ~1e-13 each); the continuous
form to ``tau_d dt / T_f`` (derived above), which a filter time constant off by 10 % misses by
far (``0.1 tau_d / e`` at ``t = T_f``).

PD plus gravity. At rest on a hover reference the total force on the vehicle is the rotors'
``A A^+ W`` (= ``W``: ``A`` has full row rank and no rotor clips) plus the weight. PD alone
commands the world force ``-kp e_p`` (``R R^T``), so its equilibrium sag is exactly ``e_z = -m g
/ kp`` (9.88 cm on the TiltHex), whatever the arm's deflection (internal forces). PD plus gravity
adds the whole body's weight, so its error is 0. After 6 s (the slowest closed-loop mode, the
base axis at ``zeta = 0.5``, ``omega_n = 10 rad/s``, has decayed by ``exp(-30)``; the arm's motor
loops are faster) the residual is the simulator's: asserted within 1e-3 of ``m g / kp``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from geodyn_ros.control.baselines import (ImuIntervals, IncrementalInversion, IndiController, IndiOptions,
                                          PdGravityController, first_order_gain)
from geodyn_ros.control.baselines.indi import filter_time_constant_for
from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config

DT = 1e-3


def _rigid_axis(Tf, tau_d, j1, steps, J=0.05, c=2e-5, k_rate=30.0):
    """The rigid body of the module docstring under INDI's rate loop ``alpha_des = -k omega``:
    returns the estimates ``y_k`` (k = 0..steps-1; nan before the filters start) and the final rate."""
    M = np.diag([J, 0.06, 0.07, 2.0, 2.0, 2.0])
    A = np.zeros((6, 1))
    A[0, 0] = c
    core = IncrementalInversion(M, A, IndiOptions(Tf))
    om, u = 0.0, 0.0
    est = np.full(steps, np.nan)
    for j in range(steps):
        td = tau_d if j >= j1 else 0.0
        torque = c * u + td                     # held over step j
        g = om + DT * torque / (2 * J)          # the gyro's interval mean
        om = om + DT * torque / J               # exact
        core.imu(DT, np.array([g, 0.0, 0.0]), np.zeros(3), np.array([u]))
        if core.ready:
            est[j] = core.disturbance()[0]
        W = core.command(np.array([-k_rate * om, 0, 0, 0, 0, 0]))
        u = W[0] / c                            # the allocation's inverse (one rotor, one axis)
    return est, om


@pytest.mark.parametrize("Tf", [0.005, 0.02, 0.05])
def test_indi_estimate_is_the_filtered_torque_closed_form(Tf):
    tau_d, j1, steps = 0.3, 50, 400
    est, om = _rigid_axis(Tf, tau_d, j1, steps)
    a = math.exp(-DT / Tf)
    k = np.arange(j1, steps)
    closed = tau_d * (1 - a ** (k - j1 + 1)) - 0.5 * tau_d * (1 - a) * a ** (k - j1)
    np.testing.assert_allclose(est[j1:], closed, rtol=1e-9, atol=1e-12 * tau_d)
    assert np.all(np.abs(est[1:j1]) < 1e-12)     # no disturbance, no estimate
    cont = tau_d * (1 - np.exp(-(k - j1) * DT / Tf))
    assert np.max(np.abs(est[j1:] - cont)) <= tau_d * DT / Tf
    # and the loop rejects it with the filter's lag and nothing else: J omega' = -k J omega + tau_d - y,
    # tau_d - y ~ tau_d exp(-t / T_f), so omega(t) = tau_d / J (exp(-t/T_f) - exp(-k t)) / (k - 1/T_f) -> 0
    # (no integral; PD alone would hold tau_d / (J k) = 0.2 rad/s). Within 15 %: the discrete loop's
    # 1.5-step delay (the command held a step, the gyro's mean half a step) against modes of >= 5 ms.
    t, kr, J = (steps - j1) * DT, 30.0, 0.05
    closed_rate = tau_d / J * (math.exp(-t / Tf) - math.exp(-kr * t)) / (kr - 1 / Tf)
    assert om == pytest.approx(closed_rate, rel=0.15)


def test_indi_filter_gain_and_procedure():
    assert first_order_gain(1e-3, 0.02) == pytest.approx(1 - math.exp(-0.05), rel=1e-15)
    cfg = load_actuation_config()
    T = float(np.max(np.atleast_1d(cfg.rotors.time_constant_up)))
    assert filter_time_constant_for(cfg.rotors, 1000.0) == pytest.approx(max(T, 2e-3))
    assert filter_time_constant_for(cfg.rotors, 10.0) == pytest.approx(0.2)


def test_exact_imu_intervals_are_the_means():
    imu = ImuIntervals((0.0, 0.0, -9.81))
    assert imu.sample(0.0, np.eye(3), np.zeros(3)) is None
    th = 0.002
    R = np.array([[1, 0, 0], [0, math.cos(th), -math.sin(th)], [0, math.sin(th), math.cos(th)]])
    dt, gyro, acc = imu.sample(0.001, R, np.array([0.0, 0.0, 0.001]))
    assert dt == pytest.approx(1e-3)
    np.testing.assert_allclose(gyro, [2.0, 0, 0], rtol=1e-12)
    np.testing.assert_allclose(acc, R.T @ np.array([0, 0, 1.0 + 9.81]), rtol=1e-12)


# ----------------------------------------------------------------------------- PD plus gravity
def _hover():
    from geodyn_ros.trajectories import TABLE3_Q0, Reference
    C0 = np.eye(4)
    C0[:3, 3] = (1.0, 0.0, 0.0)
    q0 = np.asarray(TABLE3_Q0, float)

    def ref(t, order):
        q = np.zeros((order + 3, q0.size))
        q[0] = q0
        return Reference(C0.copy(), np.zeros((order + 2, 6)), q)
    return ref, C0


@pytest.fixture(scope="module")
def hover_rows():
    from geodyn_ros.loops.actuated import simulate_actuated
    ref, C0 = _hover()
    return {row: simulate_actuated(row, 0.5, preroll=6.0, reference=ref) for row in ("pd", "pd_g")}, C0


def test_pd_sags_mg_over_kp_and_pd_gravity_does_not(hover_rows):
    rows, C0 = hover_rows
    cfg = load_actuation_config()
    from geodyn_ros.loops.actuated import tilthex_source
    m = cfg.load_model(tilthex_source()).total_mass
    sag = m * 9.81 / TrackingGains().kp_position
    e_pd = rows["pd"].log.p[-1] - C0[:3, 3]
    assert e_pd[2] == pytest.approx(-sag, abs=1e-3 * sag)
    assert np.all(np.abs(e_pd[:2]) < 1e-3 * sag)
    e_g = rows["pd_g"].log.p[-1] - C0[:3, 3]
    assert np.all(np.abs(e_g) < 1e-3 * sag)
    assert rows["pd_g"].rotor_saturations == 0 and rows["pd"].rotor_saturations == 0


# ----------------------------------------------------------------------------- bad input, one line
def _one_line(exc_info, name):
    msg = str(exc_info.value)
    assert "\n" not in msg and msg.startswith(name), msg


@pytest.mark.parametrize("v", [0.0, -0.01, float("nan"), float("inf"), True, "0.02", None])
def test_bad_filter_time_constant_refused(v):
    with pytest.raises(ValueError) as e:
        IndiOptions(v)
    _one_line(e, "filter_time_constant")


@pytest.fixture(scope="module")
def tilthex():
    from geodyn_ros.loops.actuated import tilthex_source
    cfg = load_actuation_config()
    model = cfg.load_model(tilthex_source())
    return cfg, model, Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)


def test_bad_baseline_options_refused(tilthex):
    from geodyn_ros.control.rejection import RejectionOptions
    cfg, model, al = tilthex
    with pytest.raises(ValueError) as e:
        IndiController(al, cfg.rotors, cfg.elastic, model.joint_names, model=model,
                       rejection=RejectionOptions(integral_action=True))
    _one_line(e, "rejection")
    with pytest.raises(ValueError) as e:
        IndiController(al, cfg.rotors, cfg.elastic, model.joint_names, model=None)
    _one_line(e, "model")
    with pytest.raises(ValueError) as e:
        IndiController(al, cfg.rotors, cfg.elastic, model.joint_names, model=model, q_nominal=[0.0])
    _one_line(e, "q_nominal")
    with pytest.raises(ValueError) as e:
        PdGravityController(al, cfg.rotors, cfg.elastic, model.joint_names, model=model, integral="yes")
    _one_line(e, "integral")
    with pytest.raises(ValueError) as e:
        PdGravityController(al, cfg.rotors, cfg.elastic, model.joint_names, model=None)
    _one_line(e, "model")


def test_bad_core_inputs_refused():
    M, A = np.eye(6), np.ones((6, 2))
    for bad, name in ((np.ones((5, 5)), "inertia"), (-np.eye(6), "inertia")):
        with pytest.raises(ValueError) as e:
            IncrementalInversion(bad, A)
        _one_line(e, name)
    with pytest.raises(ValueError) as e:
        IncrementalInversion(M, np.ones((4, 2)))
    _one_line(e, "allocation")
    with pytest.raises(ValueError) as e:
        IncrementalInversion(M, A, options=0.02)
    _one_line(e, "options")
    core = IncrementalInversion(M, A)
    for args, name in (((0.0, np.zeros(3), np.zeros(3), np.zeros(2)), "dt"),
                       ((1e-3, np.full(3, np.nan), np.zeros(3), np.zeros(2)), "gyro"),
                       ((1e-3, np.zeros(3), np.zeros(2), np.zeros(2)), "accel"),
                       ((1e-3, np.zeros(3), np.zeros(3), np.zeros(3)), "u_mean")):
        with pytest.raises(ValueError) as e:
            core.imu(*args)
        _one_line(e, name)
    core.imu(1e-3, np.zeros(3), np.zeros(3), np.zeros(2))     # the next good input is taken
    imu = ImuIntervals()
    imu.sample(0.0, np.eye(3), np.zeros(3))
    with pytest.raises(ValueError) as e:
        imu.sample(0.0, np.eye(3), np.zeros(3))         # no time elapsed: no interval
    _one_line(e, "t")


def test_indi_command_refuses_non_finite_state(tilthex):
    cfg, model, al = tilthex
    ctrl = IndiController(al, cfg.rotors, cfg.elastic, model.joint_names, model=model)
    n, ne = model.n_joints, len(cfg.elastic.joints)
    good = dict(C=np.eye(4), V_body=np.zeros(6), q=np.zeros(n), qd=np.zeros(n), theta=np.zeros(ne),
                thetad=np.zeros(ne), C_d=np.eye(4), V_body_d=np.zeros(6), q_d=np.zeros((3, n)), accel_d=np.zeros(6))
    for name in ("C", "V_body", "q", "accel_d"):
        bad = dict(good)
        bad[name] = np.full_like(good[name], np.nan)
        with pytest.raises(ValueError) as e:
            ctrl.command(**bad)
        _one_line(e, name)
    cmd = ctrl.command(**good)                       # the next good input gives the law's answer
    assert np.all(np.isfinite(cmd.omega)) and cmd.omega.max() > 0
    with pytest.raises(ValueError) as e:
        ctrl.imu(1e-3, np.zeros(3), np.zeros(3))
    _one_line(e, "rotor_speed")
    with pytest.raises(ValueError) as e:
        ctrl.rotor_sample(np.zeros(2))
    _one_line(e, "rotor_speed")


def test_unknown_sensing_table_row_refused(capsys):
    from geodyn_ros.examples.sensing_table import main
    with pytest.raises(SystemExit):
        main(["--vehicles", "actuated", "--rows", "pd,nope"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--rows" in err and "nope" in err


def test_collinear_indi_bad_options_refused(tilthex):
    from geodyn_ros.control.baselines import IndiFlatController
    from geodyn_ros.control.rejection import RejectionOptions
    from geodyn_ros.loops.underactuated import hexarotor_source
    cfg, model, al = tilthex
    with pytest.raises(ValueError) as e:             # a fully actuated allocation
        IndiFlatController(model, al, cfg.rotors, cfg.elastic)
    _one_line(e, "allocation")
    hcfg = load_actuation_config("hexarotor")
    hm = hcfg.load_model(hexarotor_source())
    hal = Allocation.from_frames(hcfg.rotor_frames(hm)[1], hcfg.rotors)
    with pytest.raises(ValueError) as e:
        IndiFlatController(hm, hal, hcfg.rotors, hcfg.elastic, rejection=RejectionOptions(integral_action=True))
    _one_line(e, "rejection")
    with pytest.raises(ValueError) as e:
        IndiFlatController(hm, hal, hcfg.rotors, hcfg.elastic, options=IndiOptions(0.02), gains=TrackingGains())
    _one_line(e, "gains")
    ctrl = IndiFlatController(hm, hal, hcfg.rotors, hcfg.elastic)
    # the cascade's separation: the outer increment's filter is the attitude loop's time constant
    J = ctrl.J
    kR = np.asarray(ctrl.gains.kp_rotation)
    assert ctrl.outer_time_constant == pytest.approx(1 / min(math.sqrt(kR[0] / J[0, 0]), math.sqrt(kR[1] / J[1, 1])))


def test_indi_hold_forgets_the_measurements(tilthex):
    """On the ground the loops hold the increment: the filters restart from the next two intervals."""
    cfg, model, al = tilthex
    ctrl = IndiController(al, cfg.rotors, cfg.elastic, model.joint_names, model=model)
    for _ in range(3):
        ctrl.rotor_sample(np.full(al.n_rotors, 700.0))
        ctrl.imu(1e-3, np.zeros(3), np.array([0.0, 0.0, 9.81]))
    assert ctrl.core.ready
    ctrl.hold()
    assert not ctrl.core.ready and not ctrl.has_rotor_sample
    np.testing.assert_array_equal(ctrl.core.disturbance(), np.zeros(6))
