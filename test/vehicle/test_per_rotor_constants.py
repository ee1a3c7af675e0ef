"""Per-rotor constants (issue 33): allocation, speed limits, the simulator's rotors, lag compensation.

The vehicle is the hand-written X quadrotor of ``test/data/quad_x_arm.yaml`` (rotor i at
45 + 90 i deg, 0.18 m from the base origin, thrust +z), whose motor and moment constants, time
constants and maximum speeds differ per rotor. Independent references:

* closed forms: the columns of ``A`` of an X quadrotor (``f_z = c_f,i``, ``n = p_i x f + s_i
  km_i c_f,i e_z``); its hover speeds (four equal thrusts ``m g / 4``: ``omega_i = sqrt(m g / (4
  c_f,i))``, and ``sqrt(m g / sum c_f)`` for equal constants); the filter
  ``x_k = r + (x_0 - r) exp(-dt / T_i)^k`` per rotor;
* the scalar code path: column i equals the column of an allocation built with rotor i's
  constants given once (for every rotor); the controllers' ``ff1 - ff0`` speed difference
  equals ``T_i omega_d,i'`` with ``omega_d'`` from a central finite difference of the
  feedforward speeds along the reference;
* MuJoCo's own generalized forces of the thrust actuators against ``A x^2``.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.flatness import FlatnessController
from geodyn_ros.control.rotors import Allocation, RotorParams
from geodyn_ros.sim import ActuatedSim
from geodyn_ros.sim.actuated import rotor_filter_step
from geodyn_ros.trajectories import FlatReference
from geodyn_ros.vehicle import load_vehicle

DATA = Path(__file__).resolve().parents[1] / "data"
URDF, VEHICLE, BODY = DATA / "quad_x_arm.urdf", DATA / "quad_x_arm.yaml", DATA / "quad_x.urdf"


@pytest.fixture(scope="module")
def cfg():
    return load_vehicle(VEHICLE)


@pytest.fixture(scope="module")
def model(cfg):
    return cfg.load_model(URDF)


def _frames(cfg, model):
    return cfg.rotor_frames(model)[1]


def test_the_file_gives_per_rotor_constants(cfg):
    r = cfg.rotors
    # the file's per-rotor overrides (test/data/quad_x_arm.yaml), else its `constants`
    assert np.array_equal(r.per_rotor("motor_constant"), [8.4e-6, 8.7e-6, 8.5e-6, 8.6e-6])
    assert np.array_equal(r.per_rotor("time_constant_up"), [0.012, 0.0125, 0.0125, 0.0125])
    assert np.array_equal(r.per_rotor("max_rot_velocity"), [1100.0, 1100.0, 1150.0, 1100.0])


def test_allocation_columns_closed_form(cfg, model):
    F = _frames(cfg, model)
    al = Allocation.from_frames(F, cfg.rotors)
    r = cfg.rotors
    cf, km, s = r.per_rotor("motor_constant"), r.per_rotor("moment_constant"), r.spin
    p = F[:, :3, 3]
    expect = np.zeros((6, 4))
    expect[5] = cf                                   # thrust along +z
    expect[0], expect[1] = p[:, 1] * cf, -p[:, 0] * cf   # p x (0, 0, c_f)
    expect[2] = s * km * cf                          # drag torque about +z
    # the same products in another order: rounding of 1e-16 relative to the largest entry (1e-5)
    assert np.allclose(al.A, expect, rtol=0, atol=1e-15 * np.abs(expect).max())
    assert al.collinear
    assert np.array_equal(al.max_rot_velocity, [1100.0, 1100.0, 1150.0, 1100.0])


def test_allocation_column_i_equals_scalar_path(cfg, model):
    """Column i of the per-rotor A is the column of A built with rotor i's constants for all rotors."""
    F = _frames(cfg, model)
    A = Allocation.from_frames(F, cfg.rotors).A
    r = cfg.rotors
    for i in range(4):
        one = RotorParams(r.turning_direction, motor_constant=float(r.per_rotor("motor_constant")[i]),
                          moment_constant=float(r.per_rotor("moment_constant")[i]))
        assert np.array_equal(A[:, i], Allocation.from_frames(F, one).A[:, i])   # the same operations: exact


def test_hover_speeds_closed_form(cfg, model):
    F = _frames(cfg, model)
    m, g = model.total_mass, 9.81
    # per-rotor c_f, equal moment constants: the X symmetry makes the four thrusts equal (m g / 4)
    rot = replace(cfg.rotors, moment_constant=0.016)
    u = Allocation.from_frames(F, rot).allocate_thrust_torque(m * g, np.zeros(3))
    om, nsat = Allocation.from_frames(F, rot).speeds(u)
    cf = rot.per_rotor("motor_constant")
    # a 4 x 4 solve of O(1) entries scaled by 1e-5: 1e-12 relative
    assert np.allclose(om, np.sqrt(m * g / (4 * cf)), rtol=1e-12) and nsat == 0
    # equal constants: sqrt(m g / sum c_f)
    eq = replace(cfg.rotors, motor_constant=8.6e-6, moment_constant=0.016)
    om_eq, _ = Allocation.from_frames(F, eq).speeds(Allocation.from_frames(F, eq).allocate_thrust_torque(
        m * g, np.zeros(3)))
    assert np.allclose(om_eq, np.sqrt(m * g / (4 * 8.6e-6)), rtol=1e-12)


def test_speeds_and_check_speeds_per_rotor_limits(cfg, model):
    al = Allocation.from_frames(_frames(cfg, model), cfg.rotors)     # max 1100, 1100, 1150, 1100
    u = np.array([1120.0, 500.0, 1120.0, -4.0]) ** 2 * np.array([1, 1, 1, -1])
    om, nsat = al.speeds(u)
    assert np.array_equal(om, [1100.0, 500.0, 1120.0, 0.0]) and nsat == 2   # rotor 2 may run at 1120
    with pytest.raises(ValueError, match=r"rotor 0"):
        al.check_speeds(np.array([1120.0, 500.0, 600.0, 600.0]) ** 2)
    al.check_speeds(np.array([600.0, 500.0, 1120.0, 600.0]) ** 2)       # within rotor 2's own limit
    idle = Allocation(al.A, al.max_rot_velocity, min_rot_velocity=np.array([100.0, 100.0, 100.0, 150.0]))
    om, nsat = idle.speeds(np.array([50.0, 200.0, 300.0, 120.0]) ** 2)
    assert np.array_equal(om, [100.0, 200.0, 300.0, 150.0]) and nsat == 2
    with pytest.raises(ValueError, match=r"rotor 3"):
        idle.check_speeds(np.array([200.0, 200.0, 300.0, 120.0]) ** 2)
    with pytest.raises(ValueError, match="max_rot_velocity"):
        Allocation(al.A, [1000.0, 1000.0])
    with pytest.raises(ValueError, match="min_rot_velocity"):
        Allocation(al.A, 1000.0, min_rot_velocity=1000.0)


def test_filter_per_rotor_closed_form():
    dt, k = 1e-3, 23
    Tu, Td, wmax = np.array([0.01, 0.02, 0.03]), np.array([0.04, 0.05, 0.06]), np.array([800.0, 900.0, 300.0])
    x0 = np.array([100.0, 600.0, 0.0])
    cmd = np.array([500.0, 200.0, 1000.0])            # up, down, up and above rotor 2's limit (300)
    x = x0.copy()
    for _ in range(k):
        x = rotor_filter_step(x, cmd, dt, Tu, Td, wmax)
    a = np.exp(-dt / np.array([Tu[0], Td[1], Tu[2]]))
    r = np.array([500.0, 200.0, 300.0])
    assert np.allclose(x, r + (x0 - r) * a ** k, rtol=1e-13)      # 23 steps of O(1) rounding


def test_sim_thrusts_and_filter_per_rotor(cfg):
    sim = ActuatedSim(URDF, cfg, ideal_joints=True, gravity=(0.0, 0.0, 0.0))
    al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
    x = np.array([600.0, 700.0, 650.0, 720.0])
    sim.reset(np.eye(4), np.zeros(6), np.zeros(2), np.zeros(2), rotor_speed=x)
    d = sim.mj_data
    # at the identity pose the free joint's generalized force is (force in world, torque in body
    # axes about the base origin): the body wrench A x^2 moment first; O(10) N sums: 1e-12 relative
    W = al.A @ x ** 2
    assert np.allclose(d.qfrc_actuator[[3, 4, 5, 0, 1, 2]], W, rtol=0, atol=1e-12 * np.abs(W).max())
    # the filter with rotor i's own time constants and limit: up from x toward 1200 rad/s
    sim.set_rotor_command(np.full(4, 1200.0))
    n = 17
    sim.step(n)
    r = cfg.rotors
    a = np.exp(-sim.timestep / r.per_rotor("time_constant_up"))
    target = np.minimum(1200.0, r.per_rotor("max_rot_velocity"))
    assert np.allclose(sim.rotor_speed(), target + (x - target) * a ** n, rtol=1e-13)


def _flat_reference(t, order):
    """A hover with a sinusoid on x (amplitude 0.2 m, 1 rad/s) and yaw: every rotor's speed varies."""
    com = np.zeros((order + 5, 3))
    com[0, 2] = 1.0
    for k in range(order + 5):
        com[k, 0] = 0.2 * np.sin(t + k * np.pi / 2)
    yaw = np.array([0.3 * np.sin(0.7 * t + k * np.pi / 2) * 0.7 ** k for k in range(order + 3)])
    q = np.zeros((order + 3, 2))
    q[0] = [0.2, -0.3]
    return FlatReference(com=com, yaw=yaw, q=q)


@pytest.mark.parametrize("lag_timestep", [None, 1e-3])
def test_flatness_lag_compensation_per_rotor(cfg, model, lag_timestep):
    al = Allocation.from_frames(_frames(cfg, model), cfg.rotors)
    c0 = FlatnessController(model, al, cfg.rotors, cfg.elastic, level="ff0")
    c1 = FlatnessController(model, al, cfg.rotors, cfg.elastic, level="ff1", lag_timestep=lag_timestep)

    def ff(t):
        ref = _flat_reference(t, 2)
        return ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)

    t, h = 0.9, 1e-5
    ref, flat = ff(t)
    # the state on the reference: the feedback is zero up to rounding and the same at both levels
    C, Vs = flat.base_pose, flat.base_twist[0]
    Vb = np.concatenate([C[:3, :3].T @ Vs[:3], C[:3, :3].T @ (Vs[3:] - np.cross(C[:3, 3], Vs[:3]))])
    th, thd = c0.motor_reference(ref.q, flat.tau)
    args = (C, Vb, ref.q[0], ref.q[1], th, thd, ref.com, ref.yaw, ref.q, flat)
    d_om = c1.command(*args).omega_raw - c0.command(*args).omega_raw
    omd = (c0.rotor_reference(ff(t + h)[1])[0] - c0.rotor_reference(ff(t - h)[1])[0]) / (2 * h)
    r = cfg.rotors
    Tu, Td = r.per_rotor("time_constant_up"), r.per_rotor("time_constant_down")
    if lag_timestep is not None:
        Tu, Td = lag_timestep / -np.expm1(-lag_timestep / Tu), lag_timestep / -np.expm1(-lag_timestep / Td)
    T = np.where(omd > 0, Tu, Td)
    assert np.all(np.abs(omd) > 1.0)          # every rotor's speed changes here (so T_i matters)
    # central difference of step 1e-5 s: truncation ~ h^2 omega''' ~ 1e-8 and rounding ~ 1e-16 *
    # 700 / 1e-5 ~ 1e-8 rad/s^2, on omega_d' of O(10) rad/s^2: 1e-6 relative is far above both
    assert np.allclose(d_om, T * omd, rtol=1e-6)


def test_actuated_lag_compensation_per_rotor():
    """The fully actuated TiltHex with per-rotor time constants: ff1 - ff0 = T_i omega_d,i'."""
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.actuated import scaled_reference, tilthex_source
    base = load_actuation_config()
    rot = replace(base.rotors, time_constant_up=np.array([0.01, 0.012, 0.014, 0.016, 0.018, 0.02]),
                  time_constant_down=np.array([0.03, 0.028, 0.026, 0.024, 0.022, 0.02]))
    model = gd.load_urdf(tilthex_source(), locked_joints=list(base.rotor_joints))
    al = Allocation.from_frames(base.rotor_frames(model)[1], rot)
    c0 = ActuatedController(al, rot, base.elastic, model.joint_names, feedforward_order=0)
    c1 = ActuatedController(al, rot, base.elastic, model.joint_names, feedforward_order=1)
    ref_f = scaled_reference(2.0)

    def wb(t):
        ref = ref_f(t, 2)
        res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
        return ref, gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body"), res.tau

    t, h = 3.3, 1e-5
    ref, W, tau = wb(t)
    C = ref.base_pose
    Vb = gd.lie.Ad_inv(C) @ ref.base_twist[0]
    th, thd = c0.motor_reference(ref.q, tau)
    args = (C, Vb, ref.q[0], ref.q[1], th, thd, C, Vb, ref.q, W, tau)
    d_om = c1.command(*args).omega_raw - c0.command(*args).omega_raw
    omd = (c0.rotor_reference(wb(t + h)[1])[0] - c0.rotor_reference(wb(t - h)[1])[0]) / (2 * h)
    T = np.where(omd > 0, rot.time_constant_up, rot.time_constant_down)
    assert np.all(np.abs(omd) > 1.0)
    assert np.any(omd > 0) and np.any(omd < 0)        # both time constants are exercised
    # as in the flatness test: 1e-6 relative is far above the difference's 1e-9 errors
    assert np.allclose(d_om, T * omd, rtol=1e-6)
