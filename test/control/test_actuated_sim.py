"""ActuatedSim (geodyn_ros.sim.actuated): gz-sim's rotor model and series-elastic joints in MuJoCo.

Independent references:
* the rotor filter against its closed-form solution ``x_k = r + (x_0 - r) a^k``;
* the rotor forces against the ideal-wrench path driven by ``A x^2`` (A verified against
  ``Ad*`` in test_actuation_core.py; the ideal path against gd.forward_dynamics in
  test_mujoco_sim.py);
* the elastic-joint coupling against an independent integration of the whole ODE
  (scipy DOP853, tight tolerances) whose right-hand side is gd.forward_dynamics with the spring
  torque ``K (theta - q)`` and ``theta'' = (u - K (theta - q)) / B``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import geodyn_ros as gd
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.lie import Ad, exp_se3, hat6
from geodyn_ros.sim import ActuatedSim, rotor_filter_step

REPO = Path(__file__).resolve().parents[2]
XACRO = REPO / "urdf" / "tilthex_manipulator.urdf.xacro"


@pytest.fixture(scope="module")
def cfg():
    return load_actuation_config()


def test_filter_matches_closed_form():
    dt, Tu, Td = 1e-3, 0.0125, 0.025
    x = np.array([100.0, 500.0, 0.0])
    cmd = np.array([400.0, 200.0, 5000.0])             # up, down, above the limit (clamped to 800)
    x0 = x.copy()
    for _ in range(37):
        x = rotor_filter_step(x, cmd, dt, Tu, Td, 800.0)
    au, ad = np.exp(-dt / Tu), np.exp(-dt / Td)
    expect = [400 + (100 - 400) * au ** 37, 200 + (500 - 200) * ad ** 37, 800 + (0 - 800) * au ** 37]
    assert np.allclose(x, expect, rtol=1e-13)
    assert np.all(x0 == [100.0, 500.0, 0.0])          # no aliasing


def test_rotor_forces_equal_allocation(cfg):
    sim = ActuatedSim(XACRO, cfg, ideal_joints=True)
    ideal = ActuatedSim(XACRO, cfg, ideal_joints=True, ideal_rotors=True)
    al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
    rng = np.random.default_rng(1)
    C = exp_se3(rng.normal(size=6) * 0.5)
    V, q, qd = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    x = rng.uniform(300, 900, 6)
    sim.reset(C, V, q, qd, rotor_speed=x)
    ideal.reset(C, V, q, qd)
    ideal.set_command(al.A @ x ** 2, np.zeros(6))
    ideal.forward()
    a1, a2 = sim.mj_data.qacc.copy(), ideal.mj_data.qacc.copy()
    # same MuJoCo model and state, the wrench enters through 6 site actuators vs 1 body actuator:
    # round-off of O(10) N sums amplified by cond(M) ~ 1e4 -> 1e-10 relative
    assert np.max(np.abs(a1 - a2)) < 1e-10 * np.abs(a2).max()


def test_one_step_delay_and_filter_in_loop(cfg):
    sim = ActuatedSim(XACRO, cfg, ideal_joints=True)
    C = np.eye(4)
    sim.reset(C, np.zeros(6), np.zeros(6), np.zeros(6), rotor_speed=np.zeros(6))
    sim.set_rotor_command(np.full(6, 700.0))
    dt = sim.timestep
    sim.step(1)
    # step 0 used x(0) = 0: free fall, v_z = -g dt (RK4 is exact for constant acceleration)
    assert abs(sim.base_twist()[5] + 9.81 * dt) < 1e-12
    a = np.exp(-dt / cfg.rotors.time_constant_up)
    assert np.allclose(sim.rotor_speed(), 700.0 * (1 - a), rtol=1e-14)
    sim.step(99)
    assert np.allclose(sim.rotor_speed(), 700.0 * (1 - a ** 100), rtol=1e-12)


def _full_ode(model, K, B, u, W_b, t_end, C0, V0, q0, qd0, th0, thd0):
    n = model.n_joints

    def f(t, y):
        C = y[:16].reshape(4, 4)
        V, q, qd, th, thd = y[16:22], y[22:22 + n], y[22 + n:22 + 2 * n], y[22 + 2 * n:22 + 3 * n], y[22 + 3 * n:]
        tau = K * (th - q)
        W = np.linalg.solve(Ad(C).T, W_b)            # spatial wrench of the body wrench W_b
        # C is re-orthonormalised for the dynamics call (the integrator drifts at 1e-12)
        U, _, Vt = np.linalg.svd(C[:3, :3])
        Cr = C.copy()
        Cr[:3, :3] = U @ Vt
        res = gd.forward_dynamics(model, Cr, V[None], np.stack([q, qd]), W[None], tau[None], 0)
        dC = hat6(V) @ C
        return np.concatenate([dC.ravel(), res.base_twist[1], qd, res.q[2], thd, (u - tau) / B])

    y0 = np.concatenate([C0.ravel(), V0, q0, qd0, th0, thd0])
    sol = solve_ivp(f, (0.0, t_end), y0, method="DOP853", rtol=1e-11, atol=1e-12)
    y = sol.y[:, -1]
    return y[:16].reshape(4, 4), y[22:22 + n], y[22 + 2 * n:22 + 3 * n]


def _run(cfg, dt, ideal_joints, C0, V0, q0, qd0, th0, thd0, u, T):
    sim = ActuatedSim(XACRO, cfg, ideal_rotors=True, ideal_joints=ideal_joints, timestep=dt)
    W_b = np.array([0.0, 0.0, 0.0, 0.0, 0.0, sim.model.total_mass * 9.81])
    el = cfg.elastic
    if not ideal_joints:
        sim.reset(C0, V0, q0, qd0, motor_angle=th0, motor_velocity=thd0)
        sim.set_command(W_b, np.zeros(6))
        sim.set_motor_torque(u)
        sim.step(int(round(T / dt)))
        return sim, W_b, sim.q(), sim.motor_angle()
    # the coupling computed outside MuJoCo once per step (lagged), motor by explicit Euler
    sim.reset(C0, V0, q0, qd0)
    th, thd = th0.copy(), thd0.copy()
    for _ in range(int(round(T / dt))):
        tau = el.stiffness * (th - sim.q())
        sim.set_command(W_b, tau)
        sim.step(1)
        thd = thd + dt * (u - tau) / el.motor_inertia
        th = th + dt * thd
    return sim, W_b, sim.q(), th


def test_elastic_joints_match_independent_ode(cfg):
    """MuJoCo (RK4, motors and springs inside the integrator) vs DOP853 on the full ODE.

    The motion: hover wrench held in the body frame, motor torques that swing the arms, springs
    pre-deflected by 0.02 rad. The fastest mode is the distal link on its spring,
    sqrt(K / J) ~ sqrt(50 / 0.001) ~ 220 rad/s, so RK4 at 1 ms has a global error of order
    (w dt)^4 ~ 2e-3 relative of a 0.01-rad oscillation: measured 2.8e-5 rad at 1 ms, 1.6e-6 at
    0.5 ms (ratio 17: fourth order). The test asserts both the size (< 1e-4 rad at 1 ms, < 1e-5
    at 0.5 ms) and the order (ratio > 8). A coupling lagged by one step (spring torque computed
    outside the integrator, motor by explicit Euler) misses by far more: measured 0.43 rad at 1 ms
and 0.08 at 0.5 ms; asserted > 100x the consistent error.
    """
    el = cfg.elastic
    C0 = np.eye(4)
    C0[2, 3] = 1.0
    q0 = np.array([0.3, -0.2, 0.1, -0.3, 0.2, 0.4])
    qd0 = np.array([0.5, 0.0, -0.4, 0.2, 0.3, 0.0])
    th0, thd0 = q0 + 0.02, qd0 - 0.3
    V0 = np.array([0.1, -0.2, 0.05, 0.0, 0.1, 0.0])
    u = np.array([0.8, -0.5, 0.1, -0.6, 0.4, 0.2])
    T = 0.3
    args = (C0, V0, q0, qd0, th0, thd0, u, T)
    sim, W_b, q1, th1 = _run(cfg, 1e-3, False, *args)
    _, _, q2, th2 = _run(cfg, 5e-4, False, *args)
    C_ref, q_ref, th_ref = _full_ode(sim.model, el.stiffness, el.motor_inertia, u, W_b, T, C0, V0, q0, qd0,
                                     th0, thd0)
    e1 = max(np.abs(q1 - q_ref).max(), np.abs(th1 - th_ref).max())
    e2 = max(np.abs(q2 - q_ref).max(), np.abs(th2 - th_ref).max())
    assert e1 < 1e-4 and e2 < 1e-5 and e1 / e2 > 8.0, (e1, e2)
    assert np.max(np.abs(sim.base_pose() - C_ref)) < 1e-5

    _, _, lq1, lth1 = _run(cfg, 1e-3, True, *args)
    _, _, lq2, lth2 = _run(cfg, 5e-4, True, *args)
    l1 = max(np.abs(lq1 - q_ref).max(), np.abs(lth1 - th_ref).max())
    l2 = max(np.abs(lq2 - q_ref).max(), np.abs(lth2 - th_ref).max())
    assert l1 > 100 * e1 and l2 > 100 * e2, (l1, l2)


def test_bad_input(cfg):
    sim = ActuatedSim(XACRO, cfg)
    with pytest.raises(ValueError, match="omega"):
        sim.set_rotor_command(np.zeros(5))
    with pytest.raises(ValueError, match="u: contains NaN"):
        sim.set_motor_torque(np.full(6, np.nan))
    with pytest.raises(ValueError, match="config: expected an ActuationConfig"):
        ActuatedSim(XACRO, {"a": 1})
    with pytest.raises(ValueError, match="rotor_links: link 'rotor_1' is not rigidly attached"):
        ActuatedSim(XACRO, cfg, locked_joints=[])
    with pytest.raises(ValueError, match="ideal_rotors"):
        ActuatedSim(XACRO, cfg, ideal_rotors=True).set_rotor_command(np.zeros(6))
