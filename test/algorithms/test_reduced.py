"""Inertia-decoupled (reduced Euler–Lagrange) dynamics, Mishra et al., as property tests.

Robots: our aerial manipulator, the synthetic tree of ``reference_models`` (prismatic joint,
rotated inertias, merged links) and a real URDF (solo12, example-robot-data). Random bounded
shapes ``q``, shape velocities ``qd`` and locked velocities ``mu`` (6 per robot and test).

Independent references
----------------------
* Pinocchio: ``crba`` (the blocks ``M_b``, ``M_bq``, ``M_q``, so ``A_l`` and ``Lambda``),
  ``computeCoriolisMatrix`` (the transformed Coriolis matrix ``Gamma = L^T (M Ldot + C L)``),
  ``aba`` / ``rnea`` (decoupled forward / inverse dynamics), ``ccrba`` (centroidal momentum matrix
  and centroidal inertia). Pinocchio's free-flyer velocity is our body twist, linear first
  (``v_pin = Pb nu_b``, ``Pb = blkdiag(SWAP, joint permutation)``), so body-representation
  matrices are ``Pb^T X_pin Pb``.
* Central finite differences in ``q`` (step ``H = 1e-6``): truncation ``O(H^2)`` ~ 1e-12 and
  rounding ~ ``eps/H`` ~ 1e-10 relative, hence the bound ``FD_RTOL = 1e-7``.
* Exact identities (skew-symmetry, block zeros, commutativity): rounding only, bound 1e-10
  relative to the size of the matrices involved.
"""
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_models as rm  # noqa: E402

import pinocchio as pin  # noqa: E402
import geodyn_ros as gd  # noqa: E402
from geodyn_ros.lie import Ad, ad, exp_se3, log_so3  # noqa: E402

ROBOTS = ["aerial_manipulator", "synthetic", "solo12"]
N_STATES = 6
H = 1e-6
FD_RTOL = 1e-7
EXACT_RTOL = 1e-10
PIN_RTOL = 1e-9      # Pinocchio vs ours: both exact in float64; cond(M) eps leaves ~1e-12


_robot = rm.model_and_pin


@pytest.fixture(params=ROBOTS)
def robot(request):
    return _robot(request.param)


def _states(model, tag):
    rng = np.random.default_rng(zlib.crc32(f"{model.name}|{tag}".encode()))
    n = model.n_joints
    for _ in range(N_STATES):
        yield (rng.uniform(-1.2, 1.2, n), rng.uniform(-1.5, 1.5, n), rng.uniform(-1.0, 1.0, 6), rng)


def _rel(a, b, scale=None):
    s = max(1.0, np.abs(b).max()) if scale is None else scale
    return np.abs(np.asarray(a) - np.asarray(b)).max() / s


def _Pb(ref):
    n = ref.n
    P = np.zeros((6 + n, 6 + n))
    P[:6, :6] = rm.SWAP
    P[ref.vidx, 6 + np.arange(n)] = 1.0
    return P


def _pin_body_M(ref, q):
    qp = ref.q_pin(np.eye(4), q)
    Mp = np.array(pin.crba(ref.model, ref.data, qp))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    P = _Pb(ref)
    return P.T @ Mp @ P


def _dq(f, q, j):
    e = np.zeros_like(q)
    e[j] = H
    return (f(q + e) - f(q - e)) / (2 * H)


def _L(A):
    n = A.shape[1]
    L = np.eye(6 + n)
    L[:6, 6:] = -A
    return L


# ------------------------------------------------------------------------------ inertia blocks
def test_blocks_connection_and_lambda_against_pinocchio(robot):
    """``M_b``, ``M_bq``, ``M_q`` are Pinocchio's body-representation blocks (eq. 7);
    ``Lambda = L^T M L`` has a zero off-diagonal block and ``Lambda_q = M_q - A_l^T M_b A_l``
    (eq. 8, 15a), ``A_l = M_b^-1 M_bq``."""
    model, ref = robot
    for q, _, _, _ in _states(model, "blocks"):
        t = gd.reduced_terms(model, q)
        M = _pin_body_M(ref, q)
        assert _rel(t.M_b, M[:6, :6]) < PIN_RTOL
        assert _rel(t.M_bq, M[:6, 6:]) < PIN_RTOL
        assert _rel(t.M_q, M[6:, 6:]) < PIN_RTOL
        A = np.linalg.solve(M[:6, :6], M[:6, 6:])
        assert _rel(t.A_l, A) < PIN_RTOL
        Lam = _L(A).T @ M @ _L(A)
        assert np.abs(Lam[:6, 6:]).max() < EXACT_RTOL * np.abs(M).max()
        assert _rel(t.Lambda_q, Lam[6:, 6:]) < PIN_RTOL
        Lam_ours = gd.decoupled_inertia(model, q)
        assert np.abs(Lam_ours[:6, 6:]).max() == 0.0 and _rel(Lam_ours, Lam) < PIN_RTOL
        assert np.all(np.linalg.eigvalsh(t.Lambda_q) > 0)


def test_shape_derivatives_against_finite_differences(robot):
    """``dM_b/dq_j`` and ``dA_l/dq_j`` (the analytic derivatives under ``P``, ``S`` and the
    curvature) against central differences of the blocks themselves."""
    model, _ = robot
    for q, _, _, _ in _states(model, "dq"):
        t = gd.reduced_terms(model, q)
        for j in range(model.n_joints):
            dMb = _dq(lambda x: gd.reduced_terms(model, x).M_b, q, j)
            dAl = _dq(lambda x: gd.reduced_terms(model, x).A_l, q, j)
            assert _rel(t.dM_b[j], dMb) < FD_RTOL
            assert _rel(t.dA_l[j], dAl) < FD_RTOL


# ------------------------------------------------------------------ P, S, interaction (Defs 5–7)
def test_liv_lid_and_commutativity(robot):
    """Def. 5: ``P(qd) = dM_b/dt`` (symmetric); Def. 6: ``S(mu) mu = d/dq <mu, mu>_{M_b}``;
    Prop. 1: ``S(x) y = S(y) x`` and ``P(z) y = S(y)^T z``; Def. 7: ``adbar(M_b y) A_l x =
    ad_{A_l x}^T M_b y``."""
    model, _ = robot
    n = model.n_joints
    for q, qd, mu, rng in _states(model, "PS"):
        P = gd.locked_inertia_velocity(model, q, qd)
        dMb_dt = sum(qd[j] * _dq(lambda x: gd.locked_inertia(model, x), q, j) for j in range(n))
        assert _rel(P, dMb_dt) < FD_RTOL
        assert np.abs(P - P.T).max() == 0.0 or _rel(P, P.T) < EXACT_RTOL
        S = gd.locked_inertia_derivative(model, q, mu)
        assert S.shape == (n, 6)
        grad = np.array([_dq(lambda x: mu @ gd.locked_inertia(model, x) @ mu, q, j) for j in range(n)])
        assert _rel(S @ mu, grad) < FD_RTOL
        x, y, z = rng.normal(size=6), rng.normal(size=6), rng.normal(size=n)
        Sx, Sy = gd.locked_inertia_derivative(model, q, x), gd.locked_inertia_derivative(model, q, y)
        assert _rel(Sx @ y, Sy @ x) < EXACT_RTOL
        assert _rel(gd.locked_inertia_velocity(model, q, z) @ y, Sy.T @ z) < EXACT_RTOL
        Mb, A = gd.locked_inertia(model, q), gd.local_connection(model, q)
        assert _rel(gd.interaction_matrix(model, q, y) @ z, ad(A @ z).T @ Mb @ y) < EXACT_RTOL


# --------------------------------------------------------------------- Theorem 1: D_qdot, D_mu
def _pin_gamma(model, ref, q, qd, mu):
    """``Gamma = L^T (M Ldot + C_b L)`` from Pinocchio's Coriolis matrix and mass matrix, with
    ``Ldot`` from finite differences of ``A_l`` (none of our Coriolis code involved)."""
    n = model.n_joints
    M = _pin_body_M(ref, q)
    A = np.linalg.solve(M[:6, :6], M[:6, 6:])
    A_dot = sum(qd[j] * _dq(lambda x: np.linalg.solve(_pin_body_M(ref, x)[:6, :6], _pin_body_M(ref, x)[:6, 6:]),
                            q, j) for j in range(n))
    L = _L(A)
    Ld = np.zeros_like(L)
    Ld[:6, 6:] = -A_dot
    nu = L @ np.concatenate([mu, qd])
    P = _Pb(ref)
    Cp = pin.computeCoriolisMatrix(ref.model, ref.data, ref.q_pin(np.eye(4), q), P @ nu)
    Cb = P.T @ np.array(Cp) @ P
    return L.T @ (M @ Ld + Cb @ L)


def test_two_part_coriolis_structure(robot):
    """Theorem 1 / Prop. 2: ``Gamma xi = (D_qdot - D_mu) xi`` against Pinocchio's Coriolis matrix;
    ``D_mu`` skew and independent of ``qd``; ``D_qdot`` independent of ``mu`` with top-left
    ``P(qd)/2``; ``dLambda_q/dt - 2 Gamma_q`` skew (FD of ``Lambda_q``); Remark 2:
    ``Gamma_q qd = dLambda_q/dt qd - d/dq (qd^T Lambda_q qd)/2``."""
    model, ref = robot
    n = model.n_joints
    for q, qd, mu, rng in _states(model, "coriolis"):
        D = gd.coriolis_decomposition(model, q, qd, mu)
        xi = np.concatenate([mu, qd])
        Gam = _pin_gamma(model, ref, q, qd, mu)
        scale = max(1.0, np.abs(Gam).max() * np.abs(xi).max())
        assert _rel((D.D_qdot - D.D_mu) @ xi, Gam @ xi, scale) < FD_RTOL
        assert np.abs(D.D_mu + D.D_mu.T).max() <= EXACT_RTOL * max(1.0, np.abs(D.D_mu).max())
        other = gd.coriolis_decomposition(model, q, rng.normal(size=n), mu)
        assert np.array_equal(other.D_mu, D.D_mu)
        other = gd.coriolis_decomposition(model, q, qd, rng.normal(size=6))
        assert np.array_equal(other.D_qdot, D.D_qdot)
        assert _rel(D.D_qdot[:6, :6], 0.5 * gd.locked_inertia_velocity(model, q, qd)) < EXACT_RTOL
        assert np.abs(D.D_qdot[:6, 6:]).max() == 0.0 and np.abs(D.D_qdot[6:, :6]).max() == 0.0
        Gq = D.D_qdot[6:, 6:]
        Lq_dot = sum(qd[j] * _dq(lambda x: gd.reduced_terms(model, x).Lambda_q, q, j) for j in range(n))
        K = Lq_dot - 2 * Gq
        assert np.abs(K + K.T).max() < FD_RTOL * max(1.0, np.abs(Lq_dot).max())
        grad = np.array([_dq(lambda x: qd @ gd.reduced_terms(model, x).Lambda_q @ qd, q, j) for j in range(n)])
        assert _rel(Gq @ qd, Lq_dot @ qd - 0.5 * grad, max(1.0, np.abs(Lq_dot @ qd).max())) < FD_RTOL


# ------------------------------------------------------------------------- curvature (Thm. 2)
def test_curvature_against_finite_differences_of_the_connection(robot):
    """``DA_l(X) Y = (d_X A_l) Y - (d_Y A_l) X - [A_l X, A_l Y]`` with the derivatives of ``A_l``
    taken by central differences of Pinocchio's blocks (independent of our ``dA_l``)."""
    model, ref = robot
    n = model.n_joints

    def A_pin(x):
        M = _pin_body_M(ref, x)
        return np.linalg.solve(M[:6, :6], M[:6, 6:])
    for q, _, _, _ in _states(model, "curvature"):
        F = gd.connection_curvature(model, q)
        assert F.shape == (6, n, n)
        A = A_pin(q)
        dA = [_dq(A_pin, q, j) for j in range(n)]
        ref_F = np.empty((6, n, n))
        for a in range(n):
            for b in range(n):
                ref_F[:, a, b] = dA[a][:, b] - dA[b][:, a] - ad(A[:, a]) @ A[:, b]
        assert _rel(F, ref_F) < FD_RTOL
        assert np.abs(F + np.transpose(F, (0, 2, 1))).max() == 0.0


def test_curvature_predicts_the_holonomy_of_small_shape_loops():
    """With zero momentum the base moves with ``V_b = -A_l qd`` (eq. 35); a shape loop of signed
    area ``a`` in the ``(q_i, q_j)`` plane displaces it by ``-a F[:, i, j] + O(eps^3)`` (eq. 37).
    Measured with a fine midpoint Lie-group integration of the reconstruction at two radii: the
    relative mismatch must drop by ~2x when the radius halves (first order in ``eps``)."""
    model, _ = _robot("aerial_manipulator")
    n = model.n_joints
    rng = np.random.default_rng(7)
    q0 = rng.uniform(-0.8, 0.8, n)
    i, j = 1, 3
    F = gd.connection_curvature(model, q0)[:, i, j]
    errs = []
    for eps in (0.04, 0.02):
        steps = 1200
        g = np.eye(4)
        for k in range(steps):
            s = (k + 0.5) * 2 * np.pi / steps
            q = q0.copy()
            q[i] += eps * (np.cos(s) - 1)
            q[j] += eps * np.sin(s)
            qd = np.zeros(n)
            qd[i], qd[j] = -eps * np.sin(s), eps * np.cos(s)
            g = g @ exp_se3(2 * np.pi / steps * -(gd.local_connection(model, q) @ qd))
        disp = np.concatenate([log_so3(g[:3, :3]), g[:3, 3]])
        pred = -np.pi * eps ** 2 * F
        errs.append(np.linalg.norm(disp - pred) / np.linalg.norm(pred))
    assert errs[0] < 0.2 and 1.6 < errs[0] / errs[1] < 2.5, errs


# --------------------------------------------------------- decoupled forward / inverse dynamics
def test_decoupled_dynamics_against_pinocchio(robot):
    """Decoupled FD (eq. 14 solved for ``(mu_dot, qdd)``) equals Pinocchio's ABA mapped to the
    locked coordinates, ``mu_dot = Vdot_b + Adot_l qd + A_l qdd`` (``Adot_l`` by central
    differences), and decoupled ID equals Pinocchio's RNEA; with gravity and a random base pose."""
    model, ref = robot
    n = model.n_joints
    P = _Pb(ref)
    for q, qd, mu, rng in _states(model, "fd"):
        C = rm.random_pose(rng)
        g = rng.normal(size=3) * 5
        Wb, tau = rng.normal(size=6), rng.normal(size=n)
        A = gd.local_connection(model, q)
        Vb = mu - A @ qd
        ref.set_gravity(g)
        qp = ref.q_pin(C, q)
        a = P.T @ np.array(pin.aba(ref.model, ref.data, qp, P @ np.concatenate([Vb, qd]),
                                   P @ np.concatenate([Wb, tau])))
        A_dot = sum(qd[j] * _dq(lambda x: gd.local_connection(model, x), q, j) for j in range(n))
        res = gd.decoupled_forward_dynamics(model, C, q, qd, mu, Wb, tau, gravity=g)
        mu_dot = a[:6] + A_dot @ qd + A @ a[6:]
        assert _rel(res.mu_dot, mu_dot, max(1.0, np.abs(mu_dot).max())) < FD_RTOL
        assert _rel(res.qdd, a[6:]) < PIN_RTOL * 100
        assert _rel(res.base_twist, Vb) < EXACT_RTOL
        inv = gd.decoupled_inverse_dynamics(model, C, q, qd, mu, res.mu_dot, res.qdd, gravity=g)
        f = P.T @ np.array(pin.rnea(ref.model, ref.data, qp, P @ np.concatenate([Vb, qd]), P @ a))
        assert _rel(inv.base_wrench, f[:6]) < PIN_RTOL * 100 and _rel(inv.tau, f[6:]) < PIN_RTOL * 100
        assert _rel(inv.base_wrench, Wb) < PIN_RTOL * 100 and _rel(inv.tau, tau) < PIN_RTOL * 100


def test_momentum_is_conserved_in_a_torque_free_floating_simulation():
    """No gravity, no base wrench, joint torques that only act internally: the spatial momentum
    ``J = Ad_C^-T M_b mu`` (Def. 2) is constant. RKMK4 (global error O(dt^4)) over 1 s: the
    measured drift is 2.2e-11 at dt = 8 ms and 1.4e-12 at 4 ms (16x: fourth order); the test
    requires < 1e-10 at 4 ms and a ratio > 10 (a second-order slip in the Lie-group update, e.g.
    the sign of the dexp^-1 bracket, gives 4x and ~3e-7, and fails)."""
    model, _ = _robot("aerial_manipulator")
    n = model.n_joints
    rng = np.random.default_rng(11)
    q0, qd0, mu0 = rng.uniform(-0.5, 0.5, n), rng.uniform(-1, 1, n), rng.uniform(-0.5, 0.5, 6)
    C0 = rm.random_pose(rng)

    def tau(t, state):
        return 0.02 * np.sin(3 * t + np.arange(n))      # smooth internal torques (light links)

    drifts = []
    for dt in (8e-3, 4e-3):
        tr = gd.integrate_decoupled(model, C0, q0, qd0, mu0, 1.0, dt, tau=tau, gravity=(0, 0, 0))
        J = np.array([gd.spatial_momentum(model, C, Vb, q, qd)
                      for C, Vb, q, qd in zip(tr.base_pose, tr.base_twist, tr.q, tr.qd)])
        drifts.append(np.abs(J - J[0]).max() / np.abs(J[0]).max())
        assert np.abs(tr.q[-1] - q0).max() > 0.05                       # the robot did move
        R = tr.base_pose[-1][:3, :3]
        assert np.abs(R.T @ R - np.eye(3)).max() < 1e-12                 # pose stays on SE(3)
    assert drifts[1] < 1e-10 and drifts[0] / max(drifts[1], 1e-16) > 10, drifts
    # the momentum really is the robot's: J from the spatial mass matrix of the core
    C, Vb, q, qd = tr.base_pose[-1], tr.base_twist[-1], tr.q[-1], tr.qd[-1]
    Ms = gd.mass_matrix(model, C, q)
    J_core = Ms[:6] @ np.concatenate([Ad(C) @ Vb, qd])
    assert _rel(gd.spatial_momentum(model, C, Vb, q, qd), J_core) < EXACT_RTOL


# ------------------------------------------------------------------ centroidal terms (Prop. 3)
def test_centroidal_terms_against_pinocchio_ccrba(robot):
    """Pinocchio's centroidal momentum matrix ``A_g`` (about the CoM, world axes, linear first)
    equals ours, ``Xc^T Ad_C^-T [M_b, M_bq]`` moved to the CoM; the locked inertia at the CoM
    (Prop. 3, ``X^T M_b X``) is block diagonal and equals Pinocchio's ``Ig`` rotated to base axes;
    the centroidal locked velocity gives Pinocchio's ``hg``."""
    model, ref = robot
    P = _Pb(ref)
    for q, qd, mu, rng in _states(model, "centroidal"):
        C = rm.random_pose(rng)
        qp = ref.q_pin(C, q)
        t = gd.reduced_terms(model, q)
        Vb = mu - t.A_l @ qd
        Ag = np.array(pin.ccrba(ref.model, ref.data, qp, P @ np.concatenate([Vb, qd])))
        hg = np.array(ref.data.hg.vector)                    # (linear, angular) about the CoM
        Ig = np.array(ref.data.Ig.matrix())                  # linear first, world axes, at the CoM
        ct = gd.centroidal_locked_terms(model, q, mu)
        R, p = C[:3, :3], C[:3, 3]
        com_w = p + R @ ct.com
        assert _rel(com_w, np.array(ref.data.com[0])) < PIN_RTOL
        # ours: spatial momentum about the world origin -> about the CoM, then linear first
        J = gd.spatial_momentum(model, C, Vb, q, qd)
        h_c = np.concatenate([J[3:], J[:3] - np.cross(com_w, J[3:])])
        assert _rel(h_c, hg) < PIN_RTOL
        Tc = np.eye(6)
        Tc[:3, 3:] = -rm.hat3(com_w)
        A_ours = rm.SWAP @ Tc @ np.linalg.solve(Ad(C).T, np.hstack([t.M_b, t.M_bq])) @ P.T
        assert _rel(A_ours, Ag) < PIN_RTOL
        Mc = ct.M_b
        assert np.abs(Mc[:3, 3:]).max() < EXACT_RTOL * np.abs(Mc).max()
        assert _rel(Mc[3:, 3:], model.total_mass * np.eye(3)) < EXACT_RTOL
        assert _rel(R @ Mc[:3, :3] @ R.T, Ig[3:, 3:]) < PIN_RTOL
        # the locked twist at the CoM carries the same momentum: (X^T M_b X) mu_c = X^T M_b mu
        assert _rel(Mc @ ct.mu, ct.X.T @ t.M_b @ mu) < EXACT_RTOL


def test_bad_inputs_name_the_argument():
    model, _ = _robot("synthetic")
    n = model.n_joints
    with pytest.raises(ValueError, match="q"):
        gd.reduced_terms(model, np.zeros(n + 1))
    with pytest.raises(ValueError, match="qd"):
        gd.coriolis_decomposition(model, np.zeros(n), np.full(n, np.nan), np.zeros(6))
    with pytest.raises(ValueError, match="mu"):
        gd.decoupled_forward_dynamics(model, np.eye(4), np.zeros(n), np.zeros(n), np.zeros(5),
                                      np.zeros(6), np.zeros(n))
    with pytest.raises(ValueError, match="base_pose"):
        gd.spatial_momentum(model, np.ones((4, 4)), np.zeros(6), np.zeros(n), np.zeros(n))
    with pytest.raises(ValueError, match="dt"):
        gd.integrate_decoupled(model, np.eye(4), np.zeros(n), np.zeros(n), np.zeros(6), 1.0, 0.0)
    with pytest.raises(ValueError, match="model"):
        gd.reduced_terms("robot.urdf", np.zeros(n))


def test_lie_helpers_of_the_integrators():
    """``lie.log_se3`` inverts ``exp_se3``; ``lie.dexp_inv_body(theta, V)`` recovers
    ``d theta/dt`` of ``C = exp(theta(t))`` from its body twist to the O(|theta|^4) it promises
    (body twist by central differences of the pose, step 1e-6)."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        V = rng.normal(size=6) * np.array([0.8, 0.8, 0.8, 2, 2, 2])
        assert _rel(gd.lie.log_se3(exp_se3(V)), V) < 1e-12
    for s in (0.1, 0.05):
        theta, delta = s * rng.normal(size=6), rng.normal(size=6)
        C = exp_se3(theta)
        dC = (exp_se3(theta + 1e-6 * delta) - exp_se3(theta - 1e-6 * delta)) / 2e-6
        Vb = gd.lie.vee6(np.linalg.inv(C) @ dC)
        err = np.linalg.norm(gd.lie.dexp_inv_body(theta, Vb) - delta) / np.linalg.norm(delta)
        assert err < 2 * np.linalg.norm(theta) ** 4 + 1e-8, (s, err)
