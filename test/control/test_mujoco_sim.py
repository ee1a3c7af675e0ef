"""MuJoCo simulator wrapper (geodyn_ros.sim.MujocoSim) against the independent geodyn_ros dynamics.

MuJoCo free-joint coordinates of the base (verified here, not assumed):
``qpos = (p, quat_wxyz)`` of the base-link frame, ``qvel = (pdot, w_b)`` with ``pdot`` the
world-axes velocity of the base-link origin and ``w_b = R^T w`` the angular velocity in base
axes, and ``qacc = d/dt qvel``. With the spatial twist ``V = (w, v)``, ``v = pdot + p x w``::

    value:       pdot = v - p x w,                  w_b = R^T w
    derivative:  d/dt pdot = vdot - p x wdot - pdot x w   ( = vdot - p x wdot + w x pdot )
                 d/dt w_b  = R^T wdot + (d/dt R^T) w = R^T wdot - R^T hat(w) w = R^T wdot

The commanded body wrench is ``W_b = Ad_C^T W``, so the spatial wrench passed to
``gd.forward_dynamics`` is ``W = Ad_C^-T W_b``.

Tolerances: MuJoCo (CRB + LDL^T) and geodyn_ros (the paper's recursive algorithm) compute the
same accelerations with different float64 operation sequences; the round-off is amplified by
the conditioning of the mass matrix (~1e4 here), so agreement is expected near 1e-16 * 1e4 *
(a few) ~ 1e-12 relative; measured worst case 1e-12 (cond(M) up to 3.5e4 here). Integration tests use the known RK4
error orders (measured values quoted in each test).
"""
from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.lie import Ad, Ad_inv, exp_so3, hat, hat6, inv_se3, quat_to_matrix
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.sim import MujocoSim, SimState

# ----------------------------------------------------------------------------- models
# A small robot built to catch import mismatches: a massless 'world' root with a floating
# joint (origin must be ignored), rotated inertial frames with off-diagonal inertia, a
# continuous joint with a non-unit axis, a prismatic joint, rotated joint origins, a massless
# moving link whose mass comes from a fixed child ('carriage' + 'pad'), a massless fixed tip,
# <dynamics> damping/friction, limits, and an unresolvable collision mesh (must be stripped).
SYNTH = """<?xml version="1.0"?>
<robot name="synthetic">
  <link name="world"/>
  <joint name="world_to_base" type="floating">
    <parent link="world"/><child link="torso"/>
    <origin xyz="0.3 -0.2 1.0" rpy="0.2 -0.1 0.4"/>
  </joint>
  <link name="torso">
    <inertial>
      <origin xyz="0.05 -0.02 0.03" rpy="0.3 -0.2 0.5"/>
      <mass value="3.0"/>
      <inertia ixx="0.12" ixy="0.011" ixz="-0.007" iyy="0.09" iyz="0.004" izz="0.15"/>
    </inertial>
    <collision><geometry><mesh filename="package://nonexistent_pkg/meshes/torso.stl"/></geometry></collision>
    <visual><geometry><box size="0.2 0.2 0.2"/></geometry></visual>
  </link>
  <joint name="shoulder" type="continuous">
    <parent link="torso"/><child link="upper"/>
    <origin xyz="0.1 0.15 -0.05" rpy="0.4 0.1 -0.3"/>
    <axis xyz="0.3 1 0.2"/>
    <dynamics damping="0.7" friction="0.2"/>
  </joint>
  <link name="upper">
    <inertial>
      <origin xyz="0.02 0.1 -0.01" rpy="-0.2 0.6 0.1"/>
      <mass value="0.8"/>
      <inertia ixx="0.011" ixy="-0.001" ixz="0.0005" iyy="0.006" iyz="0.0008" izz="0.012"/>
    </inertial>
  </link>
  <joint name="slider" type="prismatic">
    <parent link="upper"/><child link="carriage"/>
    <origin xyz="0.0 0.25 0.02" rpy="-0.5 0.3 0.2"/>
    <axis xyz="0 0.6 0.8"/>
    <limit lower="-0.1" upper="0.2" effort="50" velocity="1"/>
  </joint>
  <link name="carriage"/>
  <joint name="carriage_to_pad" type="fixed">
    <parent link="carriage"/><child link="pad"/>
    <origin xyz="0.03 0.01 -0.04" rpy="0.7 -0.4 0.9"/>
  </joint>
  <link name="pad">
    <inertial>
      <origin xyz="0.01 0.0 0.02" rpy="0.1 0.2 0.3"/>
      <mass value="0.4"/>
      <inertia ixx="0.002" ixy="0.0002" ixz="0" iyy="0.003" iyz="-0.0001" izz="0.0025"/>
    </inertial>
  </link>
  <joint name="wrist" type="revolute">
    <parent link="pad"/><child link="hand"/>
    <origin xyz="0.0 0.05 0.1" rpy="1.1 0.2 -0.6"/>
    <axis xyz="1 0 -1"/>
    <limit lower="-1.5" upper="1.2" effort="5" velocity="3"/>
  </joint>
  <link name="hand">
    <inertial>
      <origin xyz="0.0 0.0 0.04" rpy="0 0 0"/>
      <mass value="0.3"/>
      <inertia ixx="0.0009" ixy="0" ixz="0.0001" iyy="0.0011" iyz="0" izz="0.0007"/>
    </inertial>
  </link>
  <joint name="tool_mount" type="fixed">
    <parent link="hand"/><child link="tool_tip"/>
    <origin xyz="0 0 0.12" rpy="0 1.5707963 0"/>
  </joint>
  <link name="tool_tip"/>
  <joint name="elbow" type="revolute">
    <parent link="torso"/><child link="side"/>
    <origin xyz="-0.1 -0.12 0.0" rpy="0 0.8 0"/>
    <axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="5" velocity="3"/>
  </joint>
  <link name="side">
    <inertial>
      <origin xyz="0.0 -0.06 0.0" rpy="0.5 0 0"/>
      <mass value="0.5"/>
      <inertia ixx="0.004" ixy="0.0003" ixz="0" iyy="0.001" iyz="0" izz="0.0045"/>
    </inertial>
  </link>
</robot>
"""
_ROOT = """  <link name="world"/>
  <joint name="world_to_base" type="floating">
    <parent link="world"/><child link="torso"/>
    <origin xyz="0.3 -0.2 1.0" rpy="0.2 -0.1 0.4"/>
  </joint>
"""
assert _ROOT in SYNTH
SOURCES = {
    "aerial_manipulator": shipped_urdf("aerial_manipulator.urdf"),   # a file path
    "synth_world_floating": SYNTH,                                   # XML strings below
    "synth_footprint_fixed": SYNTH.replace(_ROOT, _ROOT.replace('"world"', '"base_footprint"')
                                           .replace('"floating"', '"fixed"')),
    "synth_rootless": SYNTH.replace(_ROOT, ""),
}
SYNTH_LIMITS = {"slider": (-0.1, 0.2), "wrist": (-1.5, 1.2), "elbow": (-2.0, 2.0)}


def _random_state(rng, n, q_scale=1.0):
    C = np.eye(4)
    C[:3, :3] = exp_so3(rng.normal(size=3) * 2.0)     # proper rotation, any angle
    C[:3, 3] = rng.normal(size=3)
    V = rng.normal(size=6)
    q = rng.uniform(-1.0, 1.0, n) * q_scale
    qd = rng.normal(size=n) * 2.0
    return C, V, q, qd


def _mj_acc_from_spatial(C, V, Vdot):
    """MuJoCo free-joint qacc (d/dt pdot, d/dt w_b) from the spatial twist and its derivative
    (formulas in the module docstring)."""
    R, p = C[:3, :3], C[:3, 3]
    w, wdot, vdot = V[:3], Vdot[:3], Vdot[3:]
    pdot = V[3:] - np.cross(p, w)
    return np.concatenate([vdot - np.cross(p, wdot) + np.cross(w, pdot), R.T @ wdot])


def _qvel_map(C, n):
    """J with nu_gd = (V_spatial, qd) = J @ (pdot, w_b, qd) (MuJoCo order, joints by name)."""
    R, p = C[:3, :3], C[:3, 3]
    J = np.zeros((6 + n, 6 + n))
    J[:3, 3:6] = R                   # w = R w_b
    J[3:6, :3] = np.eye(3)           # v = pdot + p x (R w_b)
    J[3:6, 3:6] = hat(p) @ R
    J[6:, 6:] = np.eye(n)
    return J


@pytest.fixture(scope="module")
def sims():
    """One simulator per source, joint limits off (random states may leave the ranges)."""
    return {k: MujocoSim(src, joint_limits=False) for k, src in SOURCES.items()}


# ----------------------------------------------------------------------------- 1. dynamics
@pytest.mark.parametrize("name", list(SOURCES))
def test_accelerations_match_forward_dynamics(sims, name):
    """MuJoCo qacc (mj_forward) == gd.forward_dynamics converted to MuJoCo coordinates.

    20 random states (proper rotations of any angle, random spatial twist, q, qd) and random
    commands (W_b, tau) through ``set_command`` (so the site-actuator base wrench and the
    qfrc_applied joint torques are exercised). Tolerance 1e-10 relative to the largest
    acceleration component: 100x above the measured worst case (9.8e-13), far below any modelling
    mismatch (a wrong inertia rotation or axis gives O(1e-2) errors).
    """
    sim = sims[name]
    model, m, d = sim.model, sim.mj_model, sim.mj_data
    n = model.n_joints
    dadr = np.array([m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in sim.joint_names])
    rng = np.random.default_rng(list(SOURCES).index(name))
    worst = 0.0
    for _ in range(20):
        C, V, q, qd = _random_state(rng, n)
        Wb = rng.normal(size=6) * 5.0
        tau = rng.normal(size=n)
        sim.reset(C, V, q, qd)
        sim.set_command(Wb, tau)
        mujoco.mj_forward(m, d)
        assert d.nefc == 0                        # no constraint forces involved
        W = np.linalg.solve(Ad(C).T, Wb)          # W = Ad_C^-T W_b
        fd = gd.forward_dynamics(model, C, V[None], np.vstack([q, qd]), W[None], tau[None], order=0)
        expect = np.concatenate([_mj_acc_from_spatial(C, V, fd.base_twist[1]), fd.q[2]])
        got = np.concatenate([d.qacc[:6], d.qacc[dadr]])
        worst = max(worst, np.max(np.abs(got - expect)) / np.max(np.abs(expect)))
    assert worst < 1e-10, worst


@pytest.mark.parametrize("name", list(SOURCES))
def test_body_frames_and_mass_matrix(sims, name):
    """Every MuJoCo body frame is the URDF link frame (merged links included) and MuJoCo's
    inertia equals gd's: ``M_mj == J^T M_gd J`` with ``nu_gd = J qvel_mj``.

    Frames: 1e-12 absolute (pure kinematics, O(1) magnitudes). Mass matrix: 1e-12 relative to
    its largest entry (a few products of O(1) numbers).
    """
    sim = sims[name]
    model, m, d = sim.model, sim.mj_model, sim.mj_data
    n = model.n_joints
    rng = np.random.default_rng(7)
    for _ in range(5):
        C, V, q, qd = _random_state(rng, n)
        sim.reset(C, V, q, qd)                    # runs mj_forward
        fk = gd.forward_kinematics(model, C, V[None], np.vstack([q, qd]))
        # world pose of body i's moving frame, then of every URDF link (merged ones too)
        F = [fk.poses[i] @ inv_se3(model.link_home[b]) for i, b in enumerate(model.link_names)]
        for link, b in model.link_to_body.items():
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link)
            assert bid > 0, link
            T = np.eye(4)
            T[:3, :3] = d.xmat[bid].reshape(3, 3)
            T[:3, 3] = d.xpos[bid]
            np.testing.assert_allclose(T, F[b] @ model.link_home[link], atol=1e-12, rtol=0, err_msg=link)
        Mmj = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, Mmj)   # MuJoCo >= 3.3 signature (m, d, dst)
        order = np.r_[0:6, [m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in sim.joint_names]]
        Mmj = Mmj[np.ix_(order, order)]
        J = _qvel_map(C, n)
        Mgd = J.T @ gd.mass_matrix(model, C, q) @ J
        np.testing.assert_allclose(Mmj, Mgd, atol=1e-12 * np.max(np.abs(Mgd)), rtol=0)
    assert abs(m.body_subtreemass[sim._base_body] - model.total_mass) < 1e-12


# ----------------------------------------------------------------------------- 2. kinematics
@pytest.mark.parametrize("name", ["aerial_manipulator", "synth_world_floating"])
def test_reset_readback(sims, name):
    """reset() then the readers return the inputs (1e-12: one quaternion round trip and a
    cross product), base_twist_body() == Ad_C^-1 V, and state() returns copies."""
    sim = sims[name]
    n = sim.model.n_joints
    rng = np.random.default_rng(3)
    for _ in range(10):
        C, V, q, qd = _random_state(rng, n)
        t0 = float(rng.uniform(0, 10))
        sim.reset(C, V, q, qd, time=t0)
        s = sim.state()
        assert isinstance(s, SimState) and s.time == t0 == sim.time
        np.testing.assert_allclose(s.base_pose, C, atol=1e-12, rtol=0)
        np.testing.assert_allclose(s.base_twist, V, atol=1e-12, rtol=0)
        np.testing.assert_allclose(sim.base_twist_body(), Ad_inv(C) @ V, atol=1e-12, rtol=0)
        np.testing.assert_array_equal(s.q, q)
        np.testing.assert_array_equal(s.qd, qd)
        s.base_pose[:] = 0.0
        s.q[:] = 0.0
        s.qd[:] = 0.0
        np.testing.assert_allclose(sim.base_pose(), C, atol=1e-12, rtol=0)
        np.testing.assert_array_equal(sim.q(), q)
        np.testing.assert_array_equal(sim.qd(), qd)


def test_free_joint_qvel_is_world_pdot_and_body_omega(sims):
    """MuJoCo's own position integrator confirms qvel = (pdot_world, w_body): central differences
    of the pose integrated by ``mj_integratePos`` over +-dt give ``hat6(V) = dC/dt C^-1`` of the
    spatial twist given to reset(). dt = 1e-5: truncation ~ dt^2 |V|^3 ~ 1e-9, round-off
    ~ 1e-16 / dt ~ 1e-11; tolerance 1e-8."""
    sim = sims["synth_world_floating"]
    m, d = sim.mj_model, sim.mj_data
    rng = np.random.default_rng(11)
    dt = 1e-5

    def pose(qpos):
        T = np.eye(4)
        T[:3, :3] = quat_to_matrix(qpos[3:7], order="wxyz")
        T[:3, 3] = qpos[:3]
        return T

    for _ in range(5):
        C, V, q, qd = _random_state(rng, sim.model.n_joints)
        sim.reset(C, V, q, qd)
        qp, qm = d.qpos.copy(), d.qpos.copy()
        mujoco.mj_integratePos(m, qp, d.qvel, dt)
        mujoco.mj_integratePos(m, qm, d.qvel, -dt)
        Cdot = (pose(qp) - pose(qm)) / (2 * dt)
        np.testing.assert_allclose(Cdot @ inv_se3(C), hat6(V), atol=1e-8, rtol=0)


@pytest.mark.parametrize("name", ["aerial_manipulator", "synth_rootless"])
def test_rollout_derivative_matches_forward_dynamics(name):
    """Stepping is consistent with the dynamics in geodyn_ros coordinates: the spatial twist and
    joint velocities read back after 0, 1, 2 RK4 steps of h = 5e-5 give, by the one-sided
    second-order difference (-3 x0 + 4 x1 - x2) / (2h), the derivative V' and q'' of
    gd.forward_dynamics at the start (with the body wrench converted to spatial there).
    Truncation h^2 |x'''| / 3 (measured 1.9e-6 relative at h = 1e-4, so ~5e-7 here; round-off
    ~1e-16 |x| / h ~ 1e-11); tolerance 1e-5 relative;
    a misread twist convention or a wrench held in the wrong frame gives O(1) errors."""
    src = SOURCES[name]
    h = 5e-5
    sim = MujocoSim(src, timestep=h, joint_limits=False)
    model, n = sim.model, sim.model.n_joints
    rng = np.random.default_rng(5)
    for _ in range(3):
        C, V, q, qd = _random_state(rng, n, q_scale=0.5)
        Wb, tau = rng.normal(size=6) * 5.0, rng.normal(size=n)
        sim.set_command(Wb, tau)
        sim.reset(C, V, q, qd)
        xs = []
        for k in range(3):
            xs.append(np.concatenate([sim.base_twist(), sim.qd()]))
            sim.step()
        assert sim.time == pytest.approx(3 * h, abs=1e-15)
        num = (-3 * xs[0] + 4 * xs[1] - xs[2]) / (2 * h)
        W = np.linalg.solve(Ad(C).T, Wb)
        fd = gd.forward_dynamics(model, C, V[None], np.vstack([q, qd]), W[None], tau[None], order=0)
        ana = np.concatenate([fd.base_twist[1], fd.q[2]])
        assert np.max(np.abs(num - ana)) < 1e-5 * np.max(np.abs(ana))


def test_rk4_is_fourth_order_with_body_fixed_wrench():
    """The body wrench is held constant in the BODY frame inside each RK4 step (site actuators are
    re-evaluated at every stage), so RK4 keeps its order: the global error at T = 0.2 s against an
    h = 1.25e-4 reference falls by 2^4 = 16 per halving of h, approached from above in this
    pre-asymptotic range (measured ratios 20.7 and 18.8 for h = 2, 1, 0.5 ms; error 1.1e-6 at
    1 ms). Bounds (12, 32) exclude orders <= 3 (ratios <= 8). Measured control: the same wrench
    applied through xfrc_applied updated once per step (frozen in world axes within the step)
    converges at first order (ratios 2.1..2.3) with error 5.4e-3 at 1 ms.
    """
    src = SOURCES["synth_rootless"]
    rng = np.random.default_rng(2)
    n = gd.load_urdf(src).n_joints
    C, V, q, qd = _random_state(rng, n, q_scale=0.5)
    Wb, tau = rng.normal(size=6) * 5.0, rng.normal(size=n) * 0.3

    def run(h, T=0.2):
        sim = MujocoSim(src, timestep=h, joint_limits=False)
        sim.set_command(Wb, tau)
        sim.reset(C, V, q, qd)
        sim.step(int(round(T / h)))
        s = sim.state()
        return np.concatenate([s.base_pose.ravel(), s.base_twist, s.q, s.qd])

    ref = run(1.25e-4)
    errs = [np.max(np.abs(run(h) - ref)) for h in (2e-3, 1e-3, 5e-4)]
    ratios = [errs[i] / errs[i + 1] for i in range(2)]
    assert all(12.0 < r < 32.0 for r in ratios), (errs, ratios)


# ----------------------------------------------------------------------------- 3. energy, free fall
@pytest.mark.parametrize("name", ["aerial_manipulator", "synth_world_floating"])
def test_energy_and_momentum_conserved(name):
    """No gravity, zero command, RK4 at 1 ms for 1 s from a fast random state: the kinetic energy
    0.5 nu^T M_gd nu (geodyn_ros mass matrix, nu = (V spatial, qd) read from the sim) and the
    spatial momentum (M_gd nu)[:6] are constant to 1e-9 relative. RK4's local error is
    O((h |omega|)^5) per step; measured drift 1.7e-12 (aerial manipulator) and 1.7e-11 (synthetic)
    in energy and momentum. 1e-9 leaves a 60x margin while catching any wrong twist conversion
    (which breaks conservation at O(1)); for scale, MuJoCo's semi-implicit Euler (and
    implicitfast, identical without damping) drifts 8e-5 and 3e-4 in energy on the same runs."""
    sim = MujocoSim(SOURCES[name], gravity=(0.0, 0.0, 0.0), timestep=1e-3, joint_limits=False)
    model, n = sim.model, sim.model.n_joints
    rng = np.random.default_rng(4)
    C, V, q, qd = _random_state(rng, n, q_scale=0.5)
    sim.reset(C, 3.0 * V, q, 2.0 * qd)

    def energy_momentum():
        s = sim.state()
        nu = np.concatenate([s.base_twist, s.qd])
        M = gd.mass_matrix(model, s.base_pose, s.q)
        return 0.5 * nu @ M @ nu, (M @ nu)[:6]

    E0, h0 = energy_momentum()
    q_start = sim.q()
    for _ in range(10):
        sim.step(100)
        E, hm = energy_momentum()
        assert abs(E - E0) < 1e-9 * E0
        assert np.max(np.abs(hm - h0)) < 1e-9 * np.max(np.abs(h0))
    assert sim.time == pytest.approx(1.0, abs=1e-12)
    assert np.max(np.abs(sim.q() - q_start)) > 0.1          # the robot really moved


@pytest.mark.parametrize("name", ["aerial_manipulator", "synth_footprint_fixed"])
def test_free_fall_com(name):
    """Gravity on, zero command, joints swinging: the whole-robot CoM follows
    c(t) = c0 + v0 t + g t^2 / 2 exactly, with c0 and v0 computed from geodyn_ros (body CoMs from
    forward kinematics, v0 = linear momentum (M_gd nu)[3:6] / m). RK4 propagates the linear
    momentum exactly (it is linear in the state with a constant rate m g), the CoM position to
    integrator accuracy: tolerance 1e-9 m over 0.5 s (measured 5.6e-13 m)."""
    g = np.array([0.0, 0.0, -9.81])
    sim = MujocoSim(SOURCES[name], gravity=g, timestep=1e-3, joint_limits=False)
    model, d = sim.model, sim.mj_data
    n = model.n_joints
    rng = np.random.default_rng(8)
    C, V, q, qd = _random_state(rng, n, q_scale=0.5)
    sim.reset(C, V, q, qd)
    fk = gd.forward_kinematics(model, C, V[None], np.vstack([q, qd]))
    mt = model.total_mass
    c0 = sum(model.mass[i] * (fk.poses[i] @ inv_se3(model.link_home[b]) @ np.r_[model.com[i], 1.0])[:3]
             for i, b in enumerate(model.link_names)) / mt
    v0 = (gd.mass_matrix(model, C, q) @ np.concatenate([V, qd]))[3:6] / mt
    np.testing.assert_allclose(d.subtree_com[sim._base_body], c0, atol=1e-12, rtol=0)
    for k in range(5):
        sim.step(100)
        sim.forward()
        t = sim.time
        np.testing.assert_allclose(d.subtree_com[sim._base_body], c0 + v0 * t + 0.5 * g * t * t, atol=1e-9, rtol=0)


# ----------------------------------------------------------------------------- import details
def test_limits_names_and_joint_dynamics():
    """MuJoCo imports URDF limits as ranges (continuous joints unlimited), keeps the URDF names,
    and <dynamics> damping/friction is zeroed unless joint_dynamics=True. joint_limits=False
    sets mjDSBL_LIMIT; with limits on, a violated range produces constraint rows."""
    sim = MujocoSim(SYNTH)
    m, d = sim.mj_model, sim.mj_data
    assert sim.joint_names == sim.model.joint_names == ("shoulder", "slider", "wrist", "elbow")
    for jn in sim.joint_names:
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, jn)
        if jn in SYNTH_LIMITS:
            assert m.jnt_limited[jid]
            np.testing.assert_array_equal(m.jnt_range[jid], SYNTH_LIMITS[jn])
        else:
            assert not m.jnt_limited[jid]
    assert not np.any(m.dof_damping) and not np.any(m.dof_frictionloss) and not np.any(m.dof_armature)
    assert not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_LIMIT
    assert m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    assert m.ngeom == 0                                   # geometry stripped
    q_out = np.array([0.0, 0.3, 0.0, 0.0])                # slider beyond its upper limit 0.2
    sim.reset(np.eye(4), np.zeros(6), q_out, np.zeros(4))
    assert d.nefc > 0
    sim_free = MujocoSim(SYNTH, joint_limits=False)
    assert sim_free.mj_model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_LIMIT
    sim_free.reset(np.eye(4), np.zeros(6), q_out, np.zeros(4))
    assert sim_free.mj_data.nefc == 0

    sim_dyn = MujocoSim(SYNTH, joint_dynamics=True)
    md = sim_dyn.mj_model
    jid = mujoco.mj_name2id(md, mujoco.mjtObj.mjOBJ_JOINT, "shoulder")
    assert md.dof_damping[md.jnt_dofadr[jid]] == pytest.approx(0.7)
    assert md.dof_frictionloss[md.jnt_dofadr[jid]] == pytest.approx(0.2)


@pytest.mark.parametrize("integ, expect", [("RK4", "mjINT_RK4"), ("euler", "mjINT_EULER"),
                                           ("implicitfast", "mjINT_IMPLICITFAST"), ("Implicit", "mjINT_IMPLICIT")])
def test_integrator_and_options(integ, expect):
    sim = MujocoSim(SOURCES["aerial_manipulator"], integrator=integ, timestep=2e-3, gravity=(0.1, 0.2, -3.0))
    assert sim.mj_model.opt.integrator == getattr(mujoco.mjtIntegrator, expect)
    assert sim.timestep == 2e-3
    np.testing.assert_array_equal(sim.gravity, [0.1, 0.2, -3.0])


def test_command_is_held_and_survives_reset():
    """set_command is a zero-order hold: it stays in force over steps and across reset()."""
    sim = MujocoSim(SOURCES["aerial_manipulator"])
    n = sim.model.n_joints
    Wb, tau = np.arange(6.0) + 1.0, np.linspace(-1, 1, n)
    sim.set_command(Wb, tau)
    sim.step(3)
    sim.reset(np.eye(4), np.zeros(6), np.zeros(n), np.zeros(n))
    np.testing.assert_array_equal(sim.mj_data.ctrl, Wb)
    m = sim.mj_model
    dadr = [m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in sim.joint_names]
    np.testing.assert_array_equal(sim.mj_data.qfrc_applied[dadr], tau)
    assert sim.time == 0.0


def test_xacro_source(tmp_path):
    """A .xacro path is expanded (as gd.load_urdf does) before the MuJoCo import."""
    pytest.importorskip("xacro")
    body = SOURCES["synth_rootless"].split("\n", 1)[1]              # drop the XML declaration
    body = body.replace('<robot name="synthetic">',
                        '<robot name="synthetic" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                        '  <xacro:property name="m_side" value="0.5"/>')
    body = body.replace('<mass value="0.5"/>', '<mass value="${m_side}"/>')
    path = tmp_path / "synth.urdf.xacro"
    path.write_text(body)
    sim = MujocoSim(path)
    assert sim.joint_names == ("shoulder", "slider", "wrist", "elbow")
    assert sim.mj_model.body("side").mass[0] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- 4. bad inputs
@pytest.fixture(scope="module")
def am_sim():
    return MujocoSim(SOURCES["aerial_manipulator"])


def _good(n):
    return dict(base_pose=np.eye(4), base_twist=np.zeros(6), q=np.zeros(n), qd=np.zeros(n))


_REFLECT = np.diag([1.0, 1.0, -1.0, 1.0])
_SHEAR = np.eye(4)
_SHEAR[0, 1] = 1e-3
_ROW = np.eye(4)
_ROW[3, 0] = 0.5


@pytest.mark.parametrize("arg, value", [
    ("base_pose", np.eye(3)), ("base_pose", _REFLECT), ("base_pose", _SHEAR), ("base_pose", _ROW),
    ("base_pose", np.full((4, 4), np.nan)), ("base_twist", np.zeros(5)), ("base_twist", [0, 0, np.inf, 0, 0, 0]),
    ("base_twist", np.zeros((1, 6))), ("q", np.zeros(5)), ("q", np.full(6, np.nan)), ("qd", np.zeros(7)),
    ("qd", ["a"] * 6), ("time", np.nan), ("time", "now"),
])
def test_reset_bad_inputs(am_sim, arg, value):
    kw = _good(am_sim.model.n_joints)
    kw[arg] = value
    with pytest.raises(ValueError, match=arg):
        am_sim.reset(**kw)


@pytest.mark.parametrize("arg, value", [
    ("base_wrench_body", np.zeros(3)), ("base_wrench_body", [np.nan] * 6), ("tau", np.zeros(5)),
    ("tau", [0, 0, 0, 0, 0, np.inf]), ("tau", np.zeros((6, 1))),
])
def test_set_command_bad_inputs(am_sim, arg, value):
    kw = dict(base_wrench_body=np.zeros(6), tau=np.zeros(am_sim.model.n_joints))
    kw[arg] = value
    with pytest.raises(ValueError, match=arg):
        am_sim.set_command(**kw)


def test_bad_step_and_constructor_args(am_sim):
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="n"):
            am_sim.step(bad)
    src = SOURCES["aerial_manipulator"]
    for kw, arg in [(dict(timestep=0.0), "timestep"), (dict(timestep=np.nan), "timestep"),
                    (dict(gravity=(0, 0)), "gravity"), (dict(gravity=(0, 0, np.nan)), "gravity"),
                    (dict(integrator="leapfrog"), "integrator"), (dict(base_link="link2"), "base_link")]:
        with pytest.raises(ValueError, match=arg):
            MujocoSim(src, **kw)
    with pytest.raises(ValueError, match="source"):
        MujocoSim("/nonexistent/robot.urdf")


def test_inputs_not_modified(am_sim):
    n = am_sim.model.n_joints
    C = np.eye(4)
    C[:3, 3] = (1.0, 2.0, 3.0)
    V, q, qd, Wb, tau = np.ones(6), np.ones(n), np.ones(n), np.ones(6), np.ones(n)
    copies = [a.copy() for a in (C, V, q, qd, Wb, tau)]
    am_sim.reset(C, V, q, qd)
    am_sim.set_command(Wb, tau)
    am_sim.step(2)
    for a, b in zip((C, V, q, qd, Wb, tau), copies):
        np.testing.assert_array_equal(a, b)
    am_sim.set_command(np.zeros(6), np.zeros(n))


# ----------------------------------------------------------------------------- issue 40: third-party inertias
DATA = Path(__file__).resolve().parents[1] / "data"


def _one_link(I, rpy=None):
    """One link with inertia ``I``; its mass keeps ``I`` a plausible size for the load's magnitude
    check (a moment at most the mass times (1 m)^2: here a tenth of it, at least 1 kg)."""
    o = "" if rpy is None else f'<origin rpy="{" ".join(repr(float(x)) for x in rpy)}"/>'
    c = " ".join(f'{k}="{float(I[i, j])!r}"' for k, (i, j) in
                 zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))))
    m = max(1.0, 10.0 * float(np.max(np.abs(I))))
    return f'<robot name="r"><link name="b"><inertial><mass value="{m!r}"/>{o}<inertia {c}/></inertial></link></robot>'


@pytest.mark.filterwarnings("ignore:.*violate the triangle inequality")
def test_mujoco_compiles_every_corrected_tensor_it_refused():
    """What balance_link_inertias writes passes MuJoCo's own test (its Jacobi eigenvalues for a full
    or rotated tensor, the numbers as written for a diagonal one), at every scale: 3 x 40 random
    tensors that MuJoCo refuses, with deficits from rounding (1e-16 relative) to 100 %."""
    from geodyn_ros.model.inertia import balance_link_inertias
    rng = np.random.default_rng(40)
    for k in range(120):
        kind = k % 3                 # 0: diagonal, 1: full tensor, 2: diagonal in a rotated inertial frame
        A, B = rng.uniform(0.05, 1.0, 2) * 10.0 ** rng.uniform(-9, 2)
        C = (A + B) * (1 + 10.0 ** rng.uniform(-15, 0))
        R = gd.lie.rpy_to_matrix(rng.uniform(-3, 3, 3))
        I = R @ np.diag([A, B, C]) @ R.T if kind == 1 else np.diag(rng.permutation([A, B, C]))
        I = 0.5 * (I + I.T)
        text = _one_link(I, rng.uniform(-3, 3, 3) if kind == 2 else None)
        fixed, corr = balance_link_inertias(text)
        assert len(corr) == 1, (k, text)
        with pytest.raises(ValueError, match="A \\+ B >= C"):
            MujocoSim(text)
        MujocoSim(fixed)             # compiles


@pytest.mark.filterwarnings("ignore:.*violate the triangle inequality")
def test_the_firefly_builds_with_its_correction_and_its_pinned_imu_locked():
    """RotorS's firefly (test/data): MuJoCo refuses the body inertia as written; ActuatedSim builds it
    with the vehicle layer's correction, the IMU joint (lower = upper = 0) locked, and its model is
    the controller's (ActuationConfig.load_model), bit for bit."""
    from geodyn_ros.sim import ActuatedSim
    from geodyn_ros.vehicle import load_vehicle
    cfg = load_vehicle(DATA / "firefly.yaml")
    rotors = [f"firefly/rotor_{i}_joint" for i in range(6)]
    with pytest.raises(ValueError, match="A \\+ B >= C"):
        MujocoSim(DATA / "firefly.urdf", locked_joints=rotors + ["firefly/imu_joint"])
    for urdf, joints in (("firefly.urdf", ()), ("firefly_arm.urdf", ("arm_joint_1", "arm_joint_2"))):
        with pytest.warns(UserWarning, match="inertia corrected for MuJoCo"):
            sim = ActuatedSim(DATA / urdf, cfg)
        with pytest.warns(UserWarning, match="inertia corrected for MuJoCo"):
            model = cfg.load_model(DATA / urdf)
        assert sim.model.joint_names == model.joint_names == joints
        assert [c.link for c in sim.inertia_corrections] == ["firefly/base_link_inertia"]
        for name in ("mass", "com", "inertia", "Y"):
            np.testing.assert_array_equal(getattr(sim.model, name), getattr(model, name))
        # MuJoCo's body of the corrected link: the corrected moments (descending), mass 1.5 kg
        m = sim.mj_model
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "firefly/base_link_inertia")
        assert m.body_mass[bid] == 1.5
        np.testing.assert_allclose(np.sort(m.body_inertia[bid]), sim.inertia_corrections[0].after, rtol=1e-15)
        c, b, a = m.body_inertia[bid]          # MuJoCo sorts descending: its own test, exact
        assert a + b >= c
        sim.reset(np.eye(4), np.zeros(6), np.zeros(len(joints)), np.zeros(len(joints)))
        sim.step(10)
