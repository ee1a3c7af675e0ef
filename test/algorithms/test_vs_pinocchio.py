"""Order-0 cross-check of the public geodyn_ros API against Pinocchio (independent reference).

Robots: our 12-DoF aerial manipulator, example-robot-data solo12, ANYmal C (simple) and
hextilt_flying_arm_5 (all loaded by ``gd.load_urdf`` without rejection: no mimic / planar /
floating joints), plus a synthetic tree (``reference_models.SYNTHETIC_URDF``) with continuous
joints, a prismatic joint, non-principal axes, rotated inertias and fixed-joint merging.

Conversions (written out in ``reference_models``; nothing from geodyn_ros internals is used).
With ``C = [[R, p], [0, 1]]``, ``Ad_C = [[R, 0], [hat(p) R, R]]``, ``S = [[0, I3], [I3, 0]]``:

* Pinocchio ``q = [p, quat_xyzw(R), joints]`` (continuous joint -> (cos, sin));
* ``v_pin = P nu`` and ``a_pin = P nudot`` with ``nu = (V_spatial, qdot)`` and the
  (6+n)x(6+n) block transform ``P = blkdiag(S Ad_C^-1, Pi)``, ``Pi`` the permutation from
  ``model.joint_names`` to Pinocchio's ``idx_v``.  (``a_pin = P nudot`` exactly, because
  ``d/dt (Ad_C^-1) V = -Ad_C^-1 ad_V V = 0``.)
* generalised forces ``f_ours = P^T f_pin`` (power invariance), i.e. the base wrench
  ``W = Ad_C^-T S rnea[:6] = (R n_b + p x R f_b, R f_b)`` and ``tau = Pi^T rnea[6:]``;
  inversely ``f_pin = P^-T f_ours`` for ``pin.aba`` inputs; ABA output
  ``Vdot = Ad_C S ddq[:6]``, ``qdd = Pi^T ddq[6:]``.
* ``M_ours = P^T M_crba P`` (crba fills the upper triangle only: symmetrised first),
  ``g_ours = P^T computeGeneralizedGravity``, ``C_ours nu = P^T (nonLinearEffects - g_pin)``.
* gravity: ours ``gravity=g`` <-> ``model.gravity = Motion(linear=g, angular=0)``; both defaults
  are (0, 0, -9.81) (checked below).
* external wrench on link L (spatial, world (n, f)): Pinocchio ``fext[joint of L]`` =
  ``Force(linear=f_l, angular=n_l)`` with ``(n_l, f_l) = Ad_{oMi}^T W``.

Pass criterion: ``||ours - ref|| <= 1e-9 * max(1, ||ref||)`` (2-norm of the vector, Frobenius
for matrices), at 50 random bounded states per robot and gravity case.  Rounding alone is
~1e-15 relative for ID/M/g/C nu (measured <= 1.3e-15, C nu <= 1e-14); forward dynamics loses
cond(M) (<= ~1e6 here, hextilt; measured <= 5e-13), still far
below 1e-9.

Closed-form identities (ours against ours): ``M nudot + C nu + g = (W, tau)`` of ID to 1e-9
relative; ``dM/dt - 2C`` skew, with dM/dt from central differences along the motion
``C(t) = exp(hat(V) t) C``, ``q(t) = q + t qd`` with steps h and h/2 (h = 1e-3) combined by
Richardson extrapolation: truncation O(h^4 |d^5M/dt^5|) ~ 1e-12, rounding ~ eps |M| / h ~ 1e-13,
so ``||S + S^T|| <= 1e-8 * max(1, ||dM/dt||)`` leaves a margin of ~1e3 over both.
"""
import functools
import os
import sys
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_models as rm  # noqa: E402

import pinocchio as pin  # noqa: E402  (pin==4.1.0, pinned in requirements.txt)
import geodyn_ros as gd  # noqa: E402

ROBOTS = ["aerial_manipulator", "solo12", "anymal_c", "hextilt_flying_arm_5", "synthetic"]
N_STATES = 50
RTOL = 1e-9
GRAVITY_CASES = ["zero", "default", "random"]


def _source(name):
    if name == "synthetic":
        return rm.SYNTHETIC_URDF
    path = rm.robot_path(name)
    assert path is not None, (
        f"{name}: example-robot-data URDF not found (example-robot-data is pinned in "
        "requirements.txt; set EXAMPLE_ROBOT_DATA_DIR to its robots/ directory)"
    )
    return path


@functools.lru_cache(maxsize=None)
def _robot(name):
    src = _source(name)
    model = gd.load_urdf(src)
    ref = rm.PinRef(src, model.joint_names)
    return src, model, ref


@pytest.fixture(params=ROBOTS)
def robot(request):
    return _robot(request.param)


def _gravity(case, rng):
    if case == "zero":
        return np.zeros(3)
    if case == "default":
        return rm.GRAVITY.copy()
    return 10.0 * rng.standard_normal(3)


def _seed(*parts):
    """Deterministic seed (independent of PYTHONHASHSEED and of xdist worker)."""
    return zlib.crc32("|".join(map(str, parts)).encode())


def _check(ours, ref, what, tol=RTOL):
    err = rm.rel_err(ours, ref)
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.0e} (|ref| = {np.linalg.norm(ref):.3e})"
    return err


# --------------------------------------------------------------------------- helpers' sanity


def test_pinocchio_default_gravity_matches_ours():
    m = pin.Model()
    np.testing.assert_array_equal(m.gravity.linear, [0.0, 0.0, -9.81])
    np.testing.assert_array_equal(m.gravity.angular, [0.0, 0.0, 0.0])
    model = rm.build_pin_model(rm.AERIAL_MANIPULATOR)
    np.testing.assert_array_equal(model.gravity.linear, rm.GRAVITY)


def test_conversions_single_free_body_newton_euler():
    """The conversions make pin.rnea/crba/gravity/aba agree with a hand-written spatial
    Newton-Euler law W = M_s (Vdot - G0) - ad_V^T M_s V, M_s = Ad^-T M_b Ad^-1, G0 = (0, g)."""
    urdf = """<robot name="b"><link name="body"><inertial>
      <origin xyz="0.1 -0.2 0.05" rpy="0.3 0.2 -0.1"/><mass value="1.7"/>
      <inertia ixx="0.1" ixy="0.01" ixz="-0.02" iyy="0.2" iyz="0.03" izz="0.15"/>
      </inertial></link></robot>"""
    ref = rm.PinRef(urdf, [])
    Y = ref.model.inertias[1]
    m, c, Ic = Y.mass, np.array(Y.lever), np.array(Y.inertia)
    Mb = np.zeros((6, 6))
    Mb[:3, :3] = Ic + m * rm.hat3(c) @ rm.hat3(c).T
    Mb[:3, 3:] = m * rm.hat3(c)
    Mb[3:, :3] = m * rm.hat3(c).T
    Mb[3:, 3:] = m * np.eye(3)
    rng = np.random.default_rng(7)
    for _ in range(20):
        s = rm.random_state(rng, 0)
        g = 5.0 * rng.standard_normal(3)
        Ms = rm.Ad_inv(s.C).T @ Mb @ rm.Ad_inv(s.C)
        G0 = np.r_[0.0, 0.0, 0.0, g]
        W_ne = Ms @ (s.Vd - G0) - rm.ad(s.V).T @ Ms @ s.V
        W, _ = ref.rnea(s.C, s.V, s.Vd, s.q, s.qd, s.qdd, gravity=g)
        _check(W, W_ne, "rnea vs Newton-Euler", 1e-13)
        _check(ref.mass_matrix(s.C, s.q), Ms, "crba vs M_s", 1e-13)
        _check(ref.gravity_vector(s.C, s.q, g), -Ms @ G0, "gravity", 1e-13)
        _check(ref.coriolis_times_nu(s.C, s.V, s.q, s.qd), -rm.ad(s.V).T @ Ms @ s.V, "C nu", 1e-13)
        Vd, _ = ref.aba(s.C, s.V, s.q, s.qd, W_ne, np.zeros(0), gravity=g)
        _check(Vd, s.Vd, "aba", 1e-12)
        # Pinocchio's own integrator moves the base origin with pdot = v - p x w
        qp, vp = ref.q_pin(s.C, s.q), ref.v_pin(s.C, s.V, s.qd)
        h = 1e-6
        pdot = (pin.integrate(ref.model, qp, h * vp)[:3] - pin.integrate(ref.model, qp, -h * vp)[:3]) / (2 * h)
        _check(pdot, s.V[3:] - np.cross(s.C[:3, 3], s.V[:3]), "pdot", 1e-8)


# --------------------------------------------------------------------------- model


def _urdf_root(src):
    root = ET.fromstring(src) if src.lstrip().startswith("<") else ET.parse(src).getroot()
    links = {l.get("name") for l in root.findall("link")}
    children = {j.find("child").get("link") for j in root.findall("joint")}
    (base,) = links - children
    return base


def test_model_matches_pinocchio(robot):
    src, model, ref = robot
    pm = ref.model
    assert model.n_joints == len(model.joint_names) == pm.nv - 6
    assert set(model.joint_names) == set(pm.names[2:])
    assert model.base_link == _urdf_root(src)
    np.testing.assert_allclose(model.total_mass, pin.computeTotalMass(pm), rtol=1e-12)
    # bodies after merging fixed joints: the base and the child link of every movable joint
    bodies = {
        f.name
        for f in pm.frames
        if f.type == pin.FrameType.BODY and pm.frames[f.parentFrame].type == pin.FrameType.JOINT
    }
    assert model.base_link in bodies
    assert set(model.link_names) == bodies


# --------------------------------------------------------------------------- dynamics, order 0


@pytest.mark.parametrize("gcase", GRAVITY_CASES)
def test_inverse_dynamics_vs_rnea(robot, gcase):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("id", model.base_link, gcase))
    for i in range(N_STATES):
        s = rm.random_state(rng, model.n_joints)
        g = _gravity(gcase, rng)
        res = gd.inverse_dynamics(model, s.C, np.array([s.V, s.Vd]), np.array([s.q, s.qd, s.qdd]), order=0, gravity=g)
        assert res.base_wrench.shape == (1, 6) and res.tau.shape == (1, model.n_joints)
        W, tau = ref.rnea(s.C, s.V, s.Vd, s.q, s.qd, s.qdd, gravity=g)
        _check(np.r_[res.base_wrench[0], res.tau[0]], np.r_[W, tau], f"ID state {i}")


def test_inverse_dynamics_default_gravity_argument(robot):
    """Omitting `gravity` is the same as (0, 0, -9.81) in Pinocchio's default model."""
    src, model, ref = robot
    rng = np.random.default_rng(_seed("iddef", model.base_link))
    for i in range(10):
        s = rm.random_state(rng, model.n_joints)
        res = gd.inverse_dynamics(model, s.C, np.array([s.V, s.Vd]), np.array([s.q, s.qd, s.qdd]))
        W, tau = ref.rnea(s.C, s.V, s.Vd, s.q, s.qd, s.qdd)
        _check(np.r_[res.base_wrench[0], res.tau[0]], np.r_[W, tau], f"ID default gravity, state {i}")


def test_inverse_dynamics_external_wrench_and_torque(robot):
    """ext_wrench on several links (incl. the base and links merged by fixed joints) vs
    pin.rnea with fext; ext_torque enters as tau = Q - ext_torque."""
    src, model, ref = robot
    pm = ref.model
    rng = np.random.default_rng(_seed("ext", model.base_link))
    links = sorted({f.name for f in pm.frames if f.type == pin.FrameType.BODY})
    for i in range(10):
        s = rm.random_state(rng, model.n_joints)
        chosen = [model.base_link] + list(rng.choice(links, size=min(3, len(links)), replace=False))
        wr = {}
        for L in chosen:
            wr[L] = wr.get(L, 0.0) + 5.0 * rng.standard_normal(6)
        et = rng.standard_normal((1, model.n_joints))
        res = gd.inverse_dynamics(
            model, s.C, np.array([s.V, s.Vd]), np.array([s.q, s.qd, s.qdd]), order=0,
            ext_wrench={L: W[None, :] for L, W in wr.items()}, ext_torque=et,
        )
        fext = ref.fext_from_spatial(s.C, s.q, wr)
        W, tau = ref.rnea(s.C, s.V, s.Vd, s.q, s.qd, s.qdd, fext=fext)
        _check(np.r_[res.base_wrench[0], res.tau[0]], np.r_[W, tau - et[0]], f"ID with ext, state {i}, links {chosen}")


@pytest.mark.parametrize("gcase", GRAVITY_CASES)
def test_forward_dynamics_vs_aba(robot, gcase):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("fd", model.base_link, gcase))
    for i in range(N_STATES):
        s = rm.random_state(rng, model.n_joints)
        g = _gravity(gcase, rng)
        # generalised forces of the order of those that produce O(1) accelerations
        W, tau = ref.rnea(s.C, s.V, s.Vd, s.q, s.qd, s.qdd, gravity=g)
        W = W + rng.standard_normal(6)
        tau = tau + 0.1 * rng.standard_normal(model.n_joints)
        Vd, qdd = ref.aba(s.C, s.V, s.q, s.qd, W, tau, gravity=g)
        res = gd.forward_dynamics(model, s.C, s.V[None, :], np.array([s.q, s.qd]), W[None, :], tau[None, :], order=0, gravity=g)
        assert res.base_twist.shape == (2, 6) and res.q.shape == (3, model.n_joints)
        np.testing.assert_array_equal(res.base_twist[0], s.V)
        np.testing.assert_array_equal(res.q[:2], [s.q, s.qd])
        _check(np.r_[res.base_twist[1], res.q[2]], np.r_[Vd, qdd], f"FD state {i}")


def test_mass_matrix_vs_crba(robot):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("crba", model.base_link))
    for i in range(N_STATES):
        s = rm.random_state(rng, model.n_joints)
        M = gd.mass_matrix(model, s.C, s.q)
        assert M.shape == (6 + model.n_joints,) * 2
        _check(M, ref.mass_matrix(s.C, s.q), f"M state {i}")
        _check(M, M.T, f"M symmetric, state {i}", 1e-14)


def test_gravity_vector_vs_pinocchio(robot):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("grav", model.base_link))
    for i in range(N_STATES):
        s = rm.random_state(rng, model.n_joints)
        g = 10.0 * rng.standard_normal(3)
        _check(gd.gravity_vector(model, s.C, s.q, gravity=g), ref.gravity_vector(s.C, s.q, g), f"g state {i}")
        _check(gd.gravity_vector(model, s.C, s.q), ref.gravity_vector(s.C, s.q), f"g default, state {i}")


def test_coriolis_times_velocity_vs_pinocchio(robot):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("cor", model.base_link))
    for i in range(N_STATES):
        s = rm.random_state(rng, model.n_joints)
        Cm = gd.coriolis_matrix(model, s.C, s.V, s.q, s.qd)
        assert Cm.shape == (6 + model.n_joints,) * 2
        _check(Cm @ np.r_[s.V, s.qd], ref.coriolis_times_nu(s.C, s.V, s.q, s.qd), f"C nu state {i}")


# --------------------------------------------------------------------------- closed-form identities


def test_closed_form_eom_equals_inverse_dynamics(robot):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("eom", model.base_link))
    for i in range(N_STATES):
        s = rm.random_state(rng, model.n_joints)
        g = _gravity(GRAVITY_CASES[i % 3], rng)
        M = gd.mass_matrix(model, s.C, s.q)
        Cm = gd.coriolis_matrix(model, s.C, s.V, s.q, s.qd)
        gv = gd.gravity_vector(model, s.C, s.q, gravity=g)
        res = gd.inverse_dynamics(model, s.C, np.array([s.V, s.Vd]), np.array([s.q, s.qd, s.qdd]), order=0, gravity=g)
        lhs = M @ np.r_[s.Vd, s.qdd] + Cm @ np.r_[s.V, s.qd] + gv
        _check(lhs, np.r_[res.base_wrench[0], res.tau[0]], f"M nudot + C nu + g vs ID, state {i}")


def test_mdot_minus_2c_is_skew(robot):
    src, model, ref = robot
    rng = np.random.default_rng(_seed("skew", model.base_link))
    h = 1e-3
    for i in range(20):
        s = rm.random_state(rng, model.n_joints)

        def M_at(t):
            return gd.mass_matrix(model, rm.exp_se3(s.V, t) @ s.C, s.q + t * s.qd)

        d1 = (M_at(h) - M_at(-h)) / (2 * h)
        d2 = (M_at(h / 2) - M_at(-h / 2)) / h
        Mdot = (4 * d2 - d1) / 3  # Richardson: O(h^4)
        Cm = gd.coriolis_matrix(model, s.C, s.V, s.q, s.qd)
        S = Mdot - 2 * Cm
        err = np.linalg.norm(S + S.T) / max(1.0, np.linalg.norm(Mdot))
        assert err <= 1e-8, f"dM/dt - 2C not skew at state {i}: |S + S^T| / |dM/dt| = {err:.3e}"
