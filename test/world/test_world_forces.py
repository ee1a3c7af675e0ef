"""The world's forces on the simulator (geodyn_ros.sim.world.WorldForces): pushes, drag, rotor drag,
and the external wrench they expose.

Independent references:
* a push on a free body at its centre of mass: ``v(t) = F t / m`` (constant force, exact for RK4);
  off it: the angular acceleration ``I_c^-1 ((p - c) x F)`` of a body at rest;
* a push on any link of the whole manipulator in zero gravity: the momentum theorem, the system's
  centre of mass moves by ``F t^2 / (2 M)`` whatever the arm does;
* quadratic drag of a free body in a steady wind: ``u' = -k u^2`` gives ``v(t) = W - W / (1 + k W t)``,
  ``k = rho C_D A / (2 m)``; the force is held over a step, so the error is first order in the step
  (checked: it halves with the step);
* the linear rotor drag: ``v' = -R D R^T (v - W)`` gives ``v(t) = W + expm(-R D R^T t)(v_0 - W)``;
* the external wrench: its body form against ``Ad(C)^T`` of its spatial form (geodyn_ros.lie), its
  joint torques against ``tau_j = a_j . ((p - o_j) x f)`` from MuJoCo's joint axes and anchors.
"""
from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest
from scipy.linalg import expm

import geodyn_ros as gd
from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.lie import Ad, exp_so3
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.sim import ActuatedSim, MujocoSim
from geodyn_ros.sim.wind import Wind
from geodyn_ros.sim.world import (HUMMINGBIRD_CDA, LinkDrag, Push, RotorDrag, World, WorldForces)

BODY = """<robot name="b"><link name="body"><inertial><origin xyz="{c}" rpy="0 0 0"/><mass value="2.0"/>
<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""


def _free(com="0 0 0", **kw):
    s = MujocoSim(BODY.format(c=com), gravity=(0.0, 0.0, 0.0), **kw)
    return s


def _pdot(s):
    V = s.base_twist()
    return V[3:] - np.cross(s.base_pose()[:3, 3], V[:3])


def test_a_push_at_the_centre_of_mass_accelerates_a_free_body_by_f_over_m():
    s = _free("0.1 0 0")
    F = np.array([1.0, 2.0, -3.0])
    s.attach_world(WorldForces(s, pushes=[Push("body", F, point=(0.1, 0.0, 0.0))]))
    s.reset(np.eye(4), np.zeros(6), np.zeros(0), np.zeros(0))
    s.step(250)
    np.testing.assert_allclose(_pdot(s), F / 2.0 * 0.25, rtol=1e-12)
    np.testing.assert_allclose(s.base_twist()[:3], 0.0, atol=1e-15)        # through the CoM: no rotation
    w = s.external_wrench()
    np.testing.assert_allclose(w.spatial[3:], F)
    np.testing.assert_allclose(w.by_link["body"], np.r_[np.cross([0.1, 0, 0], F), F], atol=1e-12)
    # off the CoM: the angular acceleration of a body at rest, over one short step
    s = _free("0 0 0", timestep=1e-5)
    r = np.array([0.0, 0.2, 0.1])
    s.attach_world(WorldForces(s, pushes=[Push("body", F, point=tuple(r))]))
    s.reset(np.eye(4), np.zeros(6), np.zeros(0), np.zeros(0))
    s.step(1)
    alpha = np.linalg.solve(np.diag([0.02, 0.03, 0.04]), np.cross(r, F))
    # one step of 1e-5 s: w = alpha dt to O(dt^2 |alpha|^2) (gyroscopic terms), ~1e-8 relative here
    np.testing.assert_allclose(s.base_twist()[:3] / 1e-5, alpha, rtol=1e-6)


def test_the_push_profile():
    p = Push("base", [0.0, 10.0, 0.0], start=1.0, duration=2.0, ramp=0.5)
    assert [p.profile(t) for t in (0.99, 1.0, 1.25, 1.5, 2.0, 2.75, 3.0)] == pytest.approx([0, 0, 0.5, 1, 1, 0.5, 0])
    np.testing.assert_allclose(p.force_at(1.25), [0.0, 5.0, 0.0])
    frac = Push("base", [0.0, 0.1, 0.0], weight_fraction=True)
    np.testing.assert_allclose(frac.force_at(0.0, weight=39.5), [0.0, 3.95, 0.0])
    f = Push("base", lambda t: [t, 0.0, 0.0])
    np.testing.assert_allclose(f.force_at(2.5), [2.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="non-finite"):
        Push("base", lambda t: [math.nan, 0, 0]).force_at(0.0)


@pytest.fixture(scope="module")
def cfg():
    return load_actuation_config("hexarotor")


def test_a_push_on_an_arm_link_moves_the_system_com_by_f_t2_over_2m(cfg):
    sim = ActuatedSim(hexarotor_source(), cfg, ideal_rotors=True, ideal_joints=True, gravity=(0.0, 0.0, 0.0))
    F = np.array([3.0, -2.0, 1.5])
    sim.attach_world(WorldForces(sim, pushes=[Push("link7", F, point=(0.01, 0.02, -0.12))]))
    q0 = np.array([0.3, -0.2, 0.1, -0.4, 0.5, 0.2])
    sim.reset(np.eye(4), np.zeros(6), q0, np.zeros(6))
    m = sim.model

    def com():
        C, V = sim.base_pose(), sim.base_twist()
        return gd.center_of_mass(m, C, V[None], sim.q()[None])[0]
    c0, T = com(), 0.3
    sim.step(300)
    # the arm swings under the push (internal forces), the total momentum grows by F t only
    assert np.abs(sim.q() - q0).max() > 0.01
    np.testing.assert_allclose(com() - c0, F * T ** 2 / (2 * m.total_mass), rtol=1e-6, atol=1e-12)


def test_quadratic_drag_in_a_steady_wind_matches_its_closed_form():
    W, cda, rho, m, T = 5.0, 0.2, 1.225, 2.0, 1.0
    k = rho * cda / (2 * m)
    exact = W - W / (1 + k * W * T)
    errs = []
    for dt in (2e-3, 1e-3):
        s = _free("0 0 0", timestep=dt)
        s.attach_world(WorldForces(s, wind=Wind([W, 0.0, 0.0]), drag=[LinkDrag("body", (cda,) * 3)],
                                   air_density=rho))
        s.reset(np.eye(4), np.zeros(6), np.zeros(0), np.zeros(0))
        s.step(int(round(T / dt)))
        v = _pdot(s)
        np.testing.assert_allclose(v[1:], 0.0, atol=1e-15)
        errs.append(v[0] - exact)
    # the held force: the error of a first-order hold, bounded by (dt / 2) int |u''| = (dt / 2) (k W^2 - k u_T^2)
    assert abs(errs[1]) <= 0.5 * 1e-3 * k * (W ** 2 - (W - exact) ** 2)
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.05)               # first order in the step


def test_rotor_drag_matches_the_linear_closed_form():
    d = np.array([0.6, 0.3, 0.1])
    R = exp_so3([0.3, -0.5, 0.8])
    W, v0, dt, T = np.array([4.0, -1.0, 0.5]), np.array([0.0, 1.0, 0.0]), 5e-4, 0.8
    s = _free("0 0 0", timestep=dt)
    s.attach_world(WorldForces(s, wind=Wind(W), rotor_drag=RotorDrag(tuple(d), (0.0, 0.0, 0.0))))
    C = np.eye(4)
    C[:3, :3] = R
    s.reset(C, np.r_[0.0, 0.0, 0.0, v0], np.zeros(0), np.zeros(0))
    s.step(int(round(T / dt)))
    M = R @ np.diag(d) @ R.T
    expect = W + expm(-M * T) @ (v0 - W)
    # first-order hold of a linear force: error ~ (dt / 2) |M| |v' |, below 1e-3 relative here
    np.testing.assert_allclose(_pdot(s), expect, rtol=0, atol=2e-4 * np.abs(W - v0).max())
    np.testing.assert_allclose(s.base_pose()[:3, :3], R, atol=1e-12)         # the force acts at the CoM


def test_the_external_wrench_in_every_form(cfg):
    w = World("t", wind=None, pushes=(Push("link7", (1.0, -2.0, 0.5), point=(0.0, 0.01, -0.1)),
                                       Push("base", (0.0, 3.0, 0.0), point=(0.05, 0.0, 0.02))),
              drag=(LinkDrag("link4", (0.01, 0.01, 0.02)),), rotor_drag=RotorDrag((0.5, 0.4, 0.0)))
    sim = w.draw(0, hexarotor_source(), cfg).build(timestep=1e-3)
    rng = np.random.default_rng(2)
    C = np.eye(4)
    C[:3, :3], C[:3, 3] = exp_so3(rng.normal(size=3) * 0.3), [0.2, -0.1, 1.0]
    V, q, qd = rng.normal(size=6), rng.normal(size=6) * 0.5, rng.normal(size=6)
    sim.reset(C, V, q, qd)
    x = sim.external_wrench()
    np.testing.assert_allclose(x.body, Ad(C).T @ x.spatial, atol=1e-12)     # W_b = Ad_C^T W
    np.testing.assert_allclose(x.generalized[:6], x.body, atol=1e-12)
    assert set(x.components) == {"push", "wind", "rotor_drag"}
    np.testing.assert_allclose(sum(x.components.values()), x.spatial, atol=1e-12)
    # joint torques: each force's moment about each joint axis up its chain (MuJoCo's axes and anchors)
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_forward(m, d)
    tau = np.zeros(6)
    for src, b, p, f in sim.world._last[0]:
        for i, jn in enumerate(sim.model.joint_names):
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, jn)
            jb = m.jnt_bodyid[j]
            bb = b
            while bb and bb != jb:
                bb = m.body_parentid[bb]
            if bb == jb:
                tau[i] += d.xaxis[j] @ np.cross(p - d.xanchor[j], f)
    np.testing.assert_allclose(x.generalized[6:], tau, atol=1e-12)
    assert set(x.by_link) == {"link7", "base_link", "link4"}
    # the base drag 'auto': the Hummingbird's C_D A scaled by (L / 0.17)^2, L the rotors' 0.25 m
    f = WorldForces(sim, drag=[LinkDrag("base", "auto")])
    np.testing.assert_allclose(f._drags[0][2], np.array(HUMMINGBIRD_CDA) * (0.25 / 0.17) ** 2, rtol=1e-12)
    for bad, what in (([LinkDrag("link3", "auto")], "auto"), ([LinkDrag("nolink", 0.1)], "not a link")):
        with pytest.raises(ValueError, match=what):
            WorldForces(sim, drag=bad)
    with pytest.raises(ValueError, match="push: 'geodyn_sim_motor_J2' is not a link"):
        WorldForces(sim, pushes=[Push("geodyn_sim_motor_J2", (1, 0, 0))])
    with pytest.raises(ValueError, match="air_density"):
        WorldForces(sim, air_density=0.0)


def test_without_a_world_nothing_changes(cfg):
    runs = []
    for attach in (None, "empty"):
        sim = ActuatedSim(hexarotor_source(), cfg)
        if attach:
            sim.attach_world(WorldForces(sim))
        sim.reset(np.eye(4), np.zeros(6), np.full(6, 0.1), np.zeros(6), rotor_speed=np.full(6, 700.0))
        sim.set_rotor_command(np.linspace(690, 720, 6))
        sim.set_motor_torque(np.full(6, 0.05))
        sim.step(30)
        runs.append((sim.mj_data.qpos.copy(), sim.mj_data.qvel.copy(), sim.rotor_speed()))
        x = sim.external_wrench()
        assert not np.any(x.spatial) and not np.any(x.generalized) and x.generalized.shape == (12,)
    for a, b in zip(*runs):
        assert np.array_equal(a, b)          # an empty world: bit for bit the simulator without one
    sim.attach_world(None)
    assert sim.world is None and not np.any(sim.mj_data.xfrc_applied)


def test_a_drawn_wind_is_reproducible_in_the_simulator(cfg):
    from geodyn_ros.sim.world_file import world_preset
    w = world_preset("wind_light")
    w = dataclasses.replace(w, wind=dataclasses.replace(w.wind, onset=0.0))     # at full strength at once
    pert = w.draw(3, hexarotor_source(), cfg)
    out = []
    for _ in range(2):
        sim = pert.build(timestep=1e-3, ideal_rotors=True, ideal_joints=True)
        sim.reset(np.eye(4), np.zeros(6), np.zeros(6), np.zeros(6), time=-0.5)
        sim.step(200)
        out.append((sim.mj_data.qvel.copy(), sim.world.wind_velocity(), sim.external_wrench().spatial))
    for a, b in zip(*out):
        assert np.array_equal(a, b)
    assert np.linalg.norm(out[0][1]) > 1.0                                 # light turbulence: ~6 m/s mean wind
    other = w.draw(4, hexarotor_source(), cfg).build(timestep=1e-3)
    other.reset(np.eye(4), np.zeros(6), np.zeros(6), np.zeros(6), time=-0.5)
    other.step(200)
    assert not np.array_equal(other.world.wind_velocity(), out[0][1])
