"""Mixed rigid/elastic arm joints, per-joint gains and arms without joints (issue 33).

Vehicles: the hand-written X quadrotor of ``test/data/quad_x_arm.yaml`` (J1 rigid and
torque-controlled, J2 series-elastic; per-rotor constants), the same body without an arm
(n = 0), the shipped TiltHex with only J2..J4 elastic, and a fully actuated hexarotor without an
arm. Independent references:

* the all-rigid (``elastic=None``) and all-elastic code paths, which predate mixed joints: a
  mixed controller's rigid-joint torques equal the all-rigid controller's and its motor torques
  the all-elastic controller's, at every level (the same operations on the same numbers: exact);
* closed forms: ``tau_d + kp (q_d - q) + kd (q_d' - q')``; the gravity torques of the ``pd``
  level against ``gd.inverse_dynamics`` at rest (a recursive Newton-Euler pass, another code path
  than ``gd.gravity_vector``); the motor's ``B theta'' = u`` with the spring at rest;
* the closed loops fly (system CoM or base error small) with every kind of joint set.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.flatness import FLATNESS_LEVELS, FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.lie import Ad_inv
from geodyn_ros.sim import ActuatedSim
from geodyn_ros.trajectories import FlatReference
from geodyn_ros.vehicle import load_vehicle
from geodyn_ros.vehicle.params import ElasticJointParams

DATA = Path(__file__).resolve().parents[1] / "data"
URDF, VEHICLE, BODY = DATA / "quad_x_arm.urdf", DATA / "quad_x_arm.yaml", DATA / "quad_x.urdf"
NO_JOINTS = ElasticJointParams((), [], [])


@pytest.fixture(scope="module")
def cfg():
    return load_vehicle(VEHICLE)


@pytest.fixture(scope="module")
def model(cfg):
    return cfg.load_model(URDF)


def _reference(n):
    """A sinusoid on x (0.2 m, 1 rad/s) at 1 m height, the arm swinging: ``f(t, order) -> FlatReference``."""
    def ref(t, order):
        com = np.zeros((order + 5, 3))
        com[0, 2] = 1.0
        for k in range(order + 5):
            com[k, 0] = 0.2 * np.sin(t + k * np.pi / 2)
        q = np.zeros((order + 3, n))
        for j in range(n):
            w = 1.0 + 0.5 * j
            q[:, j] = [0.3 * w ** k * np.sin(w * t + k * np.pi / 2) for k in range(order + 3)]
            q[0, j] += 0.2
        return FlatReference(com=com, yaw=np.zeros(order + 3), q=q)
    return ref


def _state_off_reference(model, ref, flat, rng):
    """A measured state near the reference sample (so that every feedback term is non-zero)."""
    C = flat.base_pose @ gd.lie.exp_se3(rng.normal(size=6) * 0.02)
    Vb = rng.normal(size=6) * 0.1
    q = ref.q[0] + rng.normal(size=model.n_joints) * 0.05
    qd = ref.q[1] + rng.normal(size=model.n_joints) * 0.1
    return C, Vb, q, qd


def test_flatness_mixed_equals_the_rigid_and_elastic_paths(cfg, model):
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    gains = FlatnessGains(kp_joint=[2.0, 4.0], kd_joint=[0.1, 0.05])
    both = ElasticJointParams(("J1", "J2"), [35.0, 20.0], [0.004, 0.002], 4.0)   # J2 as in the file
    rng = np.random.default_rng(3)
    ref = _reference(2)(0.7, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    C, Vb, q, qd = _state_off_reference(model, ref, flat, rng)
    th = np.array([q[1] + 0.01])
    thd = np.array([qd[1] - 0.02])
    for level in FLATNESS_LEVELS:
        mixed = FlatnessController(model, al, cfg.rotors, cfg.elastic, gains, level).command(
            C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat)
        rigid = FlatnessController(model, al, cfg.rotors, None, gains, level).command(
            C, Vb, q, qd, None, None, ref.com, ref.yaw, ref.q, flat)
        elastic = FlatnessController(model, al, cfg.rotors, both, gains, level).command(
            C, Vb, q, qd, np.array([q[0], th[0]]), np.array([qd[0], thd[0]]), ref.com, ref.yaw, ref.q, flat)
        assert mixed.joint_torque[0] == rigid.u[0] and mixed.joint_torque[1] == 0.0
        assert mixed.u.shape == (1,) and mixed.u[0] == elastic.u[1]
        assert np.array_equal(mixed.omega, rigid.omega)       # the rotors do not depend on the joint set
        assert np.array_equal(rigid.joint_torque, rigid.u)    # elastic=None: u is the joint torque
        if level == "ff0":   # closed form of the rigid joint's law
            expect = flat.tau[0, 0] + 2.0 * (ref.q[0, 0] - q[0]) + 0.1 * (ref.q[1, 0] - qd[0])
            assert abs(mixed.joint_torque[0] - expect) <= 1e-15 * max(1.0, abs(expect))


def test_flatness_per_joint_gains_and_effort_limits(cfg, model):
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    ref = _reference(2)(0.2, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    C, Vb, q, qd = _state_off_reference(model, ref, flat, np.random.default_rng(5))
    args = (C, Vb, q, qd, None, None, ref.com, ref.yaw, ref.q, flat)

    def u(gains, **kw):
        return FlatnessController(model, al, cfg.rotors, None, gains, "ff0", **kw).command(*args)

    per = u(FlatnessGains(kp_joint=[2.0, 4.0], kd_joint=[0.1, 0.05])).u
    assert per[0] == u(FlatnessGains(kp_joint=2.0, kd_joint=0.1)).u[0]
    assert per[1] == u(FlatnessGains(kp_joint=4.0, kd_joint=0.05)).u[1]
    # a uniform array is the scalar, bit for bit
    assert np.array_equal(u(FlatnessGains(kp_joint=[40.0, 40.0], kd_joint=[0.5, 0.5])).u, u(FlatnessGains()).u)
    # effort limits clip the rigid joints and count the clips
    c = u(FlatnessGains(kp_joint=[2.0, 4.0]), effort_limits=[1e-3, np.inf])
    assert abs(c.joint_torque_raw[0]) > 1e-3 and c.joint_torque[0] == np.copysign(1e-3, c.joint_torque_raw[0])
    assert c.joint_torque[1] == c.joint_torque_raw[1] and c.motor_saturations == 1
    with pytest.raises(ValueError, match="kp_joint: 3 values but the model has 2 joints"):
        FlatnessController(model, al, cfg.rotors, None, FlatnessGains(kp_joint=[1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="kd_joint"):
        FlatnessGains(kd_joint=[1.0, -2.0])
    with pytest.raises(ValueError, match="effort_limits"):
        FlatnessController(model, al, cfg.rotors, None, effort_limits=[1.0, 0.0])
    with pytest.raises(ValueError, match="kp_joint"):
        TrackingGains(kp_joint=[[1.0]])


@pytest.fixture(scope="module")
def tilthex():
    base = load_actuation_config()
    model = gd.load_urdf(Path(__file__).resolve().parents[2] / "urdf" / "tilthex_manipulator.urdf.xacro",
                         locked_joints=list(base.rotor_joints))
    return base, model, Allocation.from_frames(base.rotor_frames(model)[1], base.rotors)


def test_actuated_mixed_equals_the_rigid_and_elastic_paths(tilthex):
    base, model, al = tilthex
    el = base.elastic
    sub = ElasticJointParams(el.joints[:3], el.stiffness[:3], el.motor_inertia[:3], el.max_motor_torque)
    names = model.joint_names
    gains = TrackingGains(kp_joint=[40.0, 30.0, 20.0, 10.0, 5.0, 2.0], kd_joint=0.5)
    rng = np.random.default_rng(7)
    from geodyn_ros.loops.actuated import scaled_reference
    ref = scaled_reference(1.0)(4.0, 2)
    res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
    W = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body")
    C = ref.base_pose @ gd.lie.exp_se3(rng.normal(size=6) * 0.02)
    Vb, q, qd = rng.normal(size=6) * 0.1, ref.q[0] + rng.normal(size=6) * 0.05, ref.q[1] + rng.normal(size=6) * 0.1
    th, thd = q + rng.normal(size=6) * 0.01, qd + rng.normal(size=6) * 0.02
    Cd, Vbd = ref.base_pose, Ad_inv(ref.base_pose) @ ref.base_twist[0]
    for level in (None, 0, 1, 2):
        kw = dict(feedforward_order=level, model=model)
        mixed = ActuatedController(al, base.rotors, sub, names, gains, **kw).command(
            C, Vb, q, qd, th[:3], thd[:3], Cd, Vbd, ref.q, W, res.tau)
        rigid = ActuatedController(al, base.rotors, None, names, gains, **kw).command(
            C, Vb, q, qd, th, thd, Cd, Vbd, ref.q, W, res.tau)
        elastic = ActuatedController(al, base.rotors, el, names, gains, **kw).command(
            C, Vb, q, qd, th, thd, Cd, Vbd, ref.q, W, res.tau)
        assert np.array_equal(mixed.u, elastic.u[:3])
        assert np.array_equal(mixed.joint_torque[3:], rigid.u[3:]) and np.all(mixed.joint_torque[:3] == 0)
        assert np.array_equal(elastic.joint_torque, np.zeros(6))       # all elastic: no rigid torque
        assert np.array_equal(mixed.omega, elastic.omega)
        if level is None:    # pd: gravity + PD, the gravity torques from a Newton-Euler pass at rest
            g = gd.inverse_dynamics(model, C, np.zeros((2, 6)), np.stack([q, 0 * q, 0 * q]), 0).tau[0]
            kp = np.array(gains.kp_joint)
            expect = g + kp * (ref.q[0] - q) + 0.5 * (ref.q[1] - qd)
            # RNEA vs the EOM kernel: O(10) N m sums, rounding 1e-13 absolute
            assert np.allclose(rigid.u, expect, rtol=0, atol=1e-12)
        else:
            expect = res.tau[0] + np.array(gains.kp_joint) * (ref.q[0] - q) + 0.5 * (ref.q[1] - qd)
            assert np.allclose(rigid.u, expect, rtol=0, atol=1e-13)    # same sums, another order
    with pytest.raises(ValueError, match="model: the rigid joints"):
        ActuatedController(al, base.rotors, sub, names)


def test_sim_applies_joint_torques_and_motor_torques(cfg, model):
    sim = ActuatedSim(URDF, cfg, gravity=(0.0, 0.0, 0.0))
    assert sim.elastic_joints == ("J2",) and sim.rigid_joints == ("J1",)
    sim.reset(np.eye(4), np.zeros(6), np.array([0.1, 0.2]), np.zeros(2), rotor_speed=np.zeros(4))
    sim.set_command(np.zeros(6), [0.3, 0.0])
    sim.set_motor_torque([0.05])
    sim.forward()
    d = sim.mj_data
    assert d.qfrc_applied[sim._dadr[0]] == 0.3 and d.qfrc_applied[sim._dadr[1]] == 0.0
    # the motor: B theta'' = u - K (theta - q) with the spring at rest (theta = q): 0.05 / 0.002
    # (a 1-dof body hinged to the world; rounding of MuJoCo's solve: 1e-12 relative)
    assert abs(d.qacc[sim._madr_v[0]] - 0.05 / 0.002) < 1e-12 * 25.0
    full = ActuatedSim(URDF, cfg, ideal_joints=True)
    assert full.elastic_joints == () and full.rigid_joints == ("J1", "J2")


# ---------------------------------------------------------------------------- the loops fly
def test_underactuated_loop_flies_mixed_joints(cfg):
    from geodyn_ros.loops.underactuated import simulate_underactuated
    gains = FlatnessGains(**cfg.gains_spec)
    out = {row: simulate_underactuated(row, 1.5, config=cfg, source=URDF, reference=_reference(2), gains=gains,
                                       preroll=0.5).metrics() for row in ("ff2", "rigid")}
    # measured 7e-6 m (ff2) and 4e-4 m (rigid) over 3 s: the bounds are 10x (ff2 must beat rigid)
    assert out["ff2"]["com_rms_m"] < 1e-4 and out["rigid"]["com_rms_m"] < 5e-3
    assert out["ff2"]["com_rms_m"] < out["rigid"]["com_rms_m"]
    assert out["ff2"]["rotor_saturations"] == 0 and out["ff2"]["motor_saturations"] == 0
    assert 0.0 < out["ff2"]["motor_torque_peak_nm"] < 4.0


def test_underactuated_loop_flies_without_joints(cfg):
    from geodyn_ros.loops.underactuated import simulate_underactuated
    quad = replace(cfg, elastic=NO_JOINTS, joint_actuation={})
    gs = {k: v for k, v in cfg.gains_spec.items() if not k.endswith("_joint")}
    for row in ("ff2", "rigid", "ideal", "ff1_rigid_arm"):
        m = simulate_underactuated(row, 1.0, config=quad, source=BODY, reference=_reference(0),
                                   gains=FlatnessGains(**gs), preroll=0.5).metrics()
        # measured 4e-7 (ff2), 1e-6 (rigid), 4e-8 m (ideal) over 2 s: 100x margins
        assert m["com_rms_m"] < 1e-4, row
        assert m["joint_rms_deg"] == 0.0 and m["motor_torque_peak_nm"] == 0.0


def test_actuated_loop_flies_mixed_joints_and_no_joints(tilthex):
    from geodyn_ros.loops.actuated import simulate_actuated
    from geodyn_ros.loops.fly_references import fly_reference
    base, _, _ = tilthex
    el = base.elastic
    mixed = replace(base, elastic=ElasticJointParams(el.joints[:3], el.stiffness[:3], el.motor_inertia[:3], 10.0))
    m = simulate_actuated("ff2", 1.0, config=mixed, preroll=0.5).metrics(1000.0, 10.0)
    # measured 2.2e-7 m over 1 s, as the shipped all-elastic ff2 (2.2e-7 m): 1e-4 m is a 450x bound,
    # which a joint set driven wrongly (e.g. a rigid joint left without torque) misses by far
    assert m["base_rms_m"] < 1e-4 and m["motor_saturations"] == 0
    # a fully actuated hexarotor without an arm: the TiltHex rotors listed on the quadrotor body
    F = base.rotor_frames(gd.load_urdf(Path(__file__).resolve().parents[2] / "urdf" /
                                       "tilthex_manipulator.urdf.xacro", locked_joints=list(base.rotor_joints)))[1]
    hexa = replace(base, elastic=NO_JOINTS, rotor_geometry="list", rotor_poses=F,
                   rotor_names=tuple(f"r{i}" for i in range(6)), rotors=replace(base.rotors, motor_constant=6e-6))
    no_arm = (np.zeros(0), np.zeros(0), np.zeros(0))
    ref = fly_reference("figure8", 0.25, no_arm, kind="base")
    for row in ("ff2", "ideal"):
        m = simulate_actuated(row, 1.0, config=hexa, source=BODY, reference=ref, preroll=0.5).metrics(1000.0, 10.0)
        # measured 3.6e-6 m (ff2) and 1.8e-6 m (ideal) over 1 s: 1e-4 m is a 28x bound; a vehicle
        # that does not fly leaves by metres
        assert m["base_rms_m"] < 1e-4, row
        assert m["rotor_saturations"] == 0 and m["joint_rms_deg"] == 0.0
    # pd (feedback only) hovering: the base sags by m g / kp_position (closed form of the PD loop)
    r = simulate_actuated("pd", 1.0, config=hexa, source=BODY, reference=fly_reference("hover", 0.25, no_arm,
                                                                                        kind="base"), preroll=0.5)
    sag = 1.5 * 9.81 / TrackingGains().kp_position
    # after 0.5 s of pre-roll the PD transient (1/(zeta w) = 0.08 s) is down to e^-6 ~ 0.3 %: 1 % bound
    assert np.allclose(r.log.p[:, 2] - r.log.p_d[:, 2], -sag, rtol=1e-2)
