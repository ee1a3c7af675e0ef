"""Derivatives and SE(3) linearization checked without Pinocchio: finite differences, the
propagation of perturbations, physical invariances and input validation.

References used here share no code with the derivative kernel: the difference quotients and the
nonlinear simulations call the public order-0 ``gd.inverse_dynamics`` / ``gd.forward_dynamics``
(the core recursions, themselves checked against Pinocchio and the paper's data elsewhere).

Tolerances
----------
* Central geometric differences (``geodyn_ros.examples.fd_step_sweep``): truncation
  ``h^2 |F'''| / 6`` plus rounding ``eps |F| cond / h``. At ``h = 1e-5`` the measured relative
  error is 1e-11..5e-10 (sweep plot), so ``<= 1e-6`` (the issue's bound) has >= 1e3 margin.
* V-shape of the sweep: slope of log error vs log h in [1.7, 2.3] on the truncation side
  (theory 2), and both ends at least 100x above the minimum.
* Propagation: the mismatch between the nonlinear and the linear prediction of a perturbation of
  size eps is ``O(eps^2)``; halving eps must divide it by 4 (accepted: 3.5..4.5). RK4 with the
  same steps for both trajectories (Munthe-Kaas form for the pose); its error in the *difference*
  is O(eps h^4) ~ 1e-12, far below.
* Invariances are exact identities: ``<= 1e-12`` relative to the size of the blocks involved.
"""
import os
import sys

import numpy as np
import pytest
import scipy.linalg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_models as rm  # noqa: E402

import geodyn_ros as gd  # noqa: E402
from geodyn_ros import lie  # noqa: E402
from geodyn_ros.examples import fd_step_sweep as sw  # noqa: E402

SINGLE_BODY_URDF = """<robot name="box"><link name="box"><inertial><origin xyz="0.1 -0.05 0.02" rpy="0.3 0.2 0.1"/>
<mass value="2.0"/><inertia ixx="0.1" iyy="0.2" izz="0.25" ixy="0.01" ixz="-0.02" iyz="0.015"/>
</inertial></link></robot>"""


@pytest.fixture(scope="module", params=["aerial_manipulator", "synthetic", "single_body"])
def model(request, aerial_manipulator):
    if request.param == "aerial_manipulator":
        return aerial_manipulator
    return gd.load_urdf(rm.SYNTHETIC_URDF if request.param == "synthetic" else SINGLE_BODY_URDF)


def _rel(a, b):
    return np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b))


# --------------------------------------------------------------------------- finite differences
@pytest.mark.parametrize("rep", ["body", "spatial"])
@pytest.mark.parametrize("extras", [False, True])
def test_id_derivatives_vs_central_differences(model, rep, extras):
    rng = np.random.default_rng(11)
    n = model.n_joints
    for _ in range(3):
        s = sw.random_state(model, rng)
        kw = {}
        if extras:   # gravity in another direction, an applied wrench and joint torques, all world-fixed
            kw = dict(gravity=5.0 * rng.standard_normal(3),
                      ext_wrench={model.link_names[-1]: 3.0 * rng.standard_normal((1, 6))},
                      ext_torque=rng.standard_normal((1, n)))
        d = gd.inverse_dynamics_derivatives(model, s["C"], np.array([s["V"], s["Vd"]]),
                                            np.array([s["q"], s["qd"], s["qdd"]]), representation=rep, **kw)
        F = sw.id_function(model, s["Vd"], s["qdd"], rep, **kw)
        np.testing.assert_allclose(np.r_[d.base_wrench, d.tau], F(s["C"], s["q"], s["V"], s["qd"]),
                                   rtol=1e-12, atol=1e-11)
        Dfd = sw.central_difference(model, F, s["C"], s["q"], s["V"], s["qd"], 1e-5)
        err = _rel(d.d_state, Dfd)
        assert err <= 1e-6, f"{rep}: relative error {err:.2e}"


@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_fd_derivatives_vs_central_differences(model, rep):
    rng = np.random.default_rng(12)
    for _ in range(3):
        s = sw.random_state(model, rng)
        u = sw.id_function(model, s["Vd"], s["qdd"], rep)(s["C"], s["q"], s["V"], s["qd"])
        u = u + 0.5 * rng.standard_normal(u.shape)
        d = gd.forward_dynamics_derivatives(model, s["C"], s["V"][None], np.array([s["q"], s["qd"]]),
                                            u[None, :6], u[None, 6:], representation=rep)
        F = sw.fd_function(model, u[:6], u[6:], rep)
        np.testing.assert_allclose(np.r_[d.base_accel, d.qdd], F(s["C"], s["q"], s["V"], s["qd"]),
                                   rtol=1e-9, atol=1e-9)
        Dfd = sw.central_difference(model, F, s["C"], s["q"], s["V"], s["qd"], 2e-5)
        err = _rel(d.d_state, Dfd)
        assert err <= 1e-6, f"{rep}: relative error {err:.2e}"
        # the input derivative: a linear map, so one central difference per column is exact to rounding
        cols = []
        for k in range(6 + model.n_joints):
            e = np.zeros_like(u)
            e[k] = 1e-3
            fp = sw.fd_function(model, (u + e)[:6], (u + e)[6:], rep)(s["C"], s["q"], s["V"], s["qd"])
            fm = sw.fd_function(model, (u - e)[:6], (u - e)[6:], rep)(s["C"], s["q"], s["V"], s["qd"])
            cols.append((fp - fm) / 2e-3)
        assert _rel(d.d_input, np.stack(cols, 1)) <= 1e-8


def test_step_sweep_is_v_shaped_and_plot_is_saved(aerial_manipulator, tmp_path):
    steps = np.logspace(-1, -11, 21)
    for which in ("id", "fd"):
        for rep in ("body", "spatial"):
            e = sw.sweep(aerial_manipulator, steps, rep, which)
            k = int(np.argmin(e))
            assert 0 < k < len(steps) - 1, f"{which}/{rep}: minimum at the end of the sweep: {e}"
            assert e[0] >= 100 * e[k] and e[-1] >= 100 * e[k], f"{which}/{rep}: not V-shaped: {e}"
            assert e[k] <= 1e-8
            slope = np.polyfit(np.log(steps[:5]), np.log(e[:5]), 1)[0]   # h = 1e-1 .. 1e-3
            assert 1.7 <= slope <= 2.3, f"{which}/{rep}: truncation slope {slope:.2f}, expected 2"
    assert sw.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "fd_step_sweep.png").stat().st_size > 10_000
    assert (tmp_path / "fd_step_sweep.csv").read_text().count("\n") == 42


# --------------------------------------------------------------------------- propagation
def _vector_field(model, C, q, Vs, qd, u, rep):
    """(body twist of the base, qdot, Vdot_s, qddot) of the state (C, q, Vs, qd) with the input u
    held fixed in ``rep``."""
    Ws = np.linalg.solve(lie.Ad(C).T, u[:6]) if rep == "body" else u[:6]
    r = gd.forward_dynamics(model, C, Vs[None], np.array([q, qd]), Ws[None], u[None, 6:])
    return lie.Ad_inv(C) @ Vs, qd, r.base_twist[1], r.q[2]


def _dexpinv(theta, xi):
    """Theta' for C(t) = C0 exp(hat(Theta(t))) with body velocity xi (series to the order RK4 needs)."""
    ad = lie.ad(theta)
    return xi + 0.5 * ad @ xi + ad @ ad @ xi / 12.0


def _rk4(model, x, u, rep, h, steps, z=None):
    """Runge–Kutta–Munthe-Kaas (order 4) of the nonlinear system -- the pose stays on SE(3) -- and,
    if z is given, classical RK4 of the left-trivialized linear system dz/dt = A(x(t)) z along it
    (A evaluated at the same stage states)."""
    def A_at(C, q, Vs, qd):
        V = lie.Ad_inv(C) @ Vs if rep == "body" else Vs
        return gd.linearize(model, C, V[None], np.array([q, qd]), u[None, :6], u[None, 6:], representation=rep).A

    for _ in range(steps):
        C, y = x[0], x[1:]
        ks, kz = [], []
        for c, w in ((0.0, None), (0.5, 0), (0.5, 1), (1.0, 2)):
            theta = np.zeros(6) if w is None else c * h * ks[w][0]
            ys = y if w is None else tuple(yi + c * h * ki for yi, ki in zip(y, ks[w][1:]))
            Cs = C @ lie.exp_se3(theta)
            f = _vector_field(model, Cs, *ys, u, rep)
            ks.append((_dexpinv(theta, f[0]),) + f[1:])
            if z is not None:
                zs = z if w is None else z + c * h * kz[w]
                kz.append(A_at(Cs, *ys) @ zs)
        theta = h / 6 * (ks[0][0] + 2 * ks[1][0] + 2 * ks[2][0] + ks[3][0])
        y = tuple(yi + h / 6 * (a + 2 * b + 2 * c_ + d)
                  for yi, a, b, c_, d in zip(y, *(k[1:] for k in ks)))
        x = (C @ lie.exp_se3(theta),) + y
        if z is not None:
            z = z + h / 6 * (kz[0] + 2 * kz[1] + 2 * kz[2] + kz[3])
    return x, z


def _difference(model, x_nom, x_pert, rep):
    """Left-trivialized difference z with x_pert = x_nom (+) z, in ``rep``."""
    Cn, qn, Vn, qdn = x_nom
    Cp, qp, Vp, qdp = x_pert
    X = np.real(scipy.linalg.logm(np.linalg.solve(Cn, Cp)))
    delta = np.r_[X[2, 1], X[0, 2], X[1, 0], X[:3, 3]]
    if rep == "body":
        Vn, Vp = lie.Ad_inv(Cn) @ Vn, lie.Ad_inv(Cp) @ Vp
    return np.r_[delta, qp - qn, Vp - Vn, qdp - qdn]


@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_linear_prediction_error_shrinks_quadratically(aerial_manipulator, rep):
    model = aerial_manipulator
    n = model.n_joints
    rng = np.random.default_rng(21)
    s = sw.random_state(model, rng)
    C0, q0, qd0 = s["C"], s["q"], 0.5 * s["qd"]
    V0 = 0.5 * s["V"]                                   # in rep
    Vs0 = lie.Ad(C0) @ V0 if rep == "body" else V0
    u = sw.id_function(model, np.zeros(6), np.zeros(n), rep)(C0, q0, V0, qd0)
    u = u + 0.3 * rng.standard_normal(u.shape)          # not an equilibrium: a moving trajectory
    h, steps = 0.005, 60                                 # 0.3 s
    z0 = rng.standard_normal(2 * (6 + n))
    z0 /= np.linalg.norm(z0)
    x_nom, z_lin = _rk4(model, (C0, q0, Vs0, qd0), u, rep, h, steps, z=z0)
    assert np.linalg.norm(z_lin) > 0.1                   # the linear response is not trivially small
    mismatch = []
    epss = [2e-3, 1e-3, 5e-4]
    for eps in epss:
        Cp, qp, Vp, qdp = sw.perturb(model, C0, q0, V0, qd0, eps * z0)
        Vsp = lie.Ad(Cp) @ Vp if rep == "body" else Vp
        x_pert, _ = _rk4(model, (Cp, qp, Vsp, qdp), u, rep, h, steps)
        z_true = _difference(model, x_nom, x_pert, rep)
        mismatch.append(np.linalg.norm(z_true - eps * z_lin))
        assert mismatch[-1] <= 0.05 * eps * np.linalg.norm(z_lin), (eps, mismatch[-1])
    ratios = [mismatch[i] / mismatch[i + 1] for i in range(len(epss) - 1)]
    print(f"{rep}: |z_lin| = {np.linalg.norm(z_lin):.3g}, mismatches {mismatch}, ratios {ratios}")
    for r in ratios:
        assert 3.5 <= r <= 4.5, f"mismatch ratios {ratios} (quadratic: 4); mismatches {mismatch}"


def test_linear_prediction_wrong_a_is_detected(aerial_manipulator):
    """The propagation check has teeth: dropping the -ad_V delta term of the body pose rows (a
    plausible mistake) makes the mismatch shrink only linearly."""
    model = aerial_manipulator
    n = model.n_joints
    rng = np.random.default_rng(22)
    s = sw.random_state(model, rng)
    C0, q0, V0, qd0 = s["C"], s["q"], 0.3 * s["V"], s["qd"]
    u = sw.id_function(model, np.zeros(6), np.zeros(n), "body")(C0, q0, V0, qd0)
    z0 = np.zeros(2 * (6 + n))
    z0[:3] = [0.6, -0.5, 0.4]                              # an attitude perturbation
    h, steps = 0.005, 40
    real_linearize = gd.linearize

    def broken(*a, **k):
        lin = real_linearize(*a, **k)
        lin.A[:6, :6] = 0.0
        return lin
    x_nom, _ = _rk4(model, (C0, q0, lie.Ad(C0) @ V0, qd0), u, "body", h, steps)
    gd.linearize = broken
    try:
        _, z_bad = _rk4(model, (C0, q0, lie.Ad(C0) @ V0, qd0), u, "body", h, steps, z=z0)
    finally:
        gd.linearize = real_linearize
    mism = []
    for eps in (4e-3, 2e-3):
        Cp, qp, Vp, qdp = sw.perturb(model, C0, q0, V0, qd0, eps * z0)
        x_pert, _ = _rk4(model, (Cp, qp, lie.Ad(Cp) @ Vp, qdp), u, "body", h, steps)
        mism.append(np.linalg.norm(_difference(model, x_nom, x_pert, "body") - eps * z_bad))
    assert mism[0] / mism[1] < 2.5


# --------------------------------------------------------------------------- invariances
@pytest.mark.parametrize("which", ["id", "fd"])
def test_no_pose_derivative_without_gravity_at_fixed_body_twist(model, which):
    rng = np.random.default_rng(31)
    for _ in range(5):
        s = sw.random_state(model, rng)
        d = _derivs(model, s, which, "body", gravity=(0.0, 0.0, 0.0))
        scale = np.linalg.norm(d.d_state)
        assert np.abs(d.d_base_pose).max() <= 1e-13 * scale


def _derivs(model, s, which, rep, gravity=gd.DEFAULT_GRAVITY):
    if which == "id":
        return gd.inverse_dynamics_derivatives(model, s["C"], np.array([s["V"], s["Vd"]]),
                                               np.array([s["q"], s["qd"], s["qdd"]]), gravity=gravity,
                                               representation=rep)
    n = model.n_joints
    u = np.r_[10.0 * np.ones(6), np.ones(n)] * np.random.default_rng(5).standard_normal(6 + n)
    return gd.forward_dynamics_derivatives(model, s["C"], s["V"][None], np.array([s["q"], s["qd"]]),
                                           u[None, :6], u[None, 6:], gravity=gravity, representation=rep)


@pytest.mark.parametrize("which", ["id", "fd"])
def test_body_pose_derivative_vanishes_for_translations_and_rotation_about_gravity(model, which):
    """Body representation: the pose enters only through the direction of gravity in base axes,
    so translating the base, or rotating it about the (body-frame) vertical, changes nothing."""
    rng = np.random.default_rng(32)
    for _ in range(5):
        s = sw.random_state(model, rng)
        g = 9.81 * rng.standard_normal(3)
        d = _derivs(model, s, which, "body", gravity=g)
        scale = np.linalg.norm(d.d_base_pose)
        assert scale > 1e-3                                   # gravity does act
        assert np.abs(d.d_base_pose[:, 3:]).max() <= 1e-12 * scale
        axis = s["C"][:3, :3].T @ g / np.linalg.norm(g)
        assert np.abs(d.d_base_pose[:, :3] @ axis).max() <= 1e-12 * scale


def test_spatial_rotation_about_gravity_axis_is_a_symmetry(model):
    """Spatial representation: rotating pose, twist and acceleration together about the world
    vertical (through the origin) leaves the joint torques unchanged and rotates the base wrench:
    D_delta Ad_C^-1 sigma + D_V ad_sigma V + M[:, :6] ad_sigma Vdot = (ad*_sigma W, 0)."""
    rng = np.random.default_rng(33)
    sigma = np.r_[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    for _ in range(5):
        s = sw.random_state(model, rng)
        d = gd.inverse_dynamics_derivatives(model, s["C"], np.array([s["V"], s["Vd"]]),
                                            np.array([s["q"], s["qd"], s["qdd"]]), representation="spatial")
        change = (d.d_base_pose @ lie.Ad_inv(s["C"]) @ sigma + d.d_base_twist @ lie.ad(sigma) @ s["V"]
                  + d.mass_matrix[:, :6] @ lie.ad(sigma) @ s["Vd"])
        expect = np.zeros_like(change)
        expect[:6] = -lie.ad(sigma).T @ d.base_wrench
        scale = np.linalg.norm(d.d_state) * (1 + np.linalg.norm(s["C"][:3, 3]))
        assert np.abs(change - expect).max() <= 1e-12 * scale
        # the same for the forward dynamics: accelerations rotate with the state and the input
        u = np.r_[d.base_wrench, d.tau] + rng.standard_normal(6 + model.n_joints)
        f = gd.forward_dynamics_derivatives(model, s["C"], s["V"][None], np.array([s["q"], s["qd"]]),
                                            u[None, :6], u[None, 6:], representation="spatial")
        change = (f.d_base_pose @ lie.Ad_inv(s["C"]) @ sigma + f.d_base_twist @ lie.ad(sigma) @ s["V"]
                  + f.d_input[:, :6] @ (-lie.ad(sigma).T @ u[:6]))
        expect = np.zeros_like(change)
        expect[:6] = lie.ad(sigma) @ f.base_accel
        assert np.abs(change - expect).max() <= 1e-10 * max(1.0, np.linalg.norm(f.d_state))


# --------------------------------------------------------------------------- structure, M^-1
@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_linearization_structure(model, rep):
    rng = np.random.default_rng(41)
    n = model.n_joints
    nv = 6 + n
    s = sw.random_state(model, rng)
    u = rng.standard_normal(nv)
    lin = gd.linearize(model, s["C"], s["V"][None], np.array([s["q"], s["qd"]]), u[None, :6], u[None, 6:],
                       representation=rep)
    assert lin.A.shape == (2 * nv, 2 * nv) and lin.B.shape == (2 * nv, nv) and lin.representation == rep
    assert len(gd.state_labels(model)) == 2 * nv and len(gd.input_labels(model)) == nv
    f = gd.forward_dynamics_derivatives(model, s["C"], s["V"][None], np.array([s["q"], s["qd"]]),
                                        u[None, :6], u[None, 6:], representation=rep)
    np.testing.assert_array_equal(lin.A[nv:], f.d_state)
    np.testing.assert_array_equal(lin.B[nv:], f.d_input)
    np.testing.assert_array_equal(lin.B[:nv], 0.0)
    np.testing.assert_array_equal(lin.A[6:nv], np.hstack([np.zeros((n, nv + 6)), np.eye(n)]))
    top = lin.A[:6]
    expect_dd = -lie.ad(s["V"]) if rep == "body" else np.zeros((6, 6))
    expect_dV = np.eye(6) if rep == "body" else lie.Ad_inv(s["C"])
    np.testing.assert_allclose(top[:, :6], expect_dd, atol=1e-15)
    np.testing.assert_allclose(top[:, nv:nv + 6], expect_dV, atol=1e-14)
    assert not np.any(top[:, 6:nv]) and not np.any(top[:, nv + 6:])


@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_inverse_mass_matrix_is_the_inverse(model, rep):
    rng = np.random.default_rng(42)
    n = model.n_joints
    for _ in range(5):
        s = sw.random_state(model, rng)
        M = gd.mass_matrix(model, s["C"], s["q"])
        if rep == "body":
            T = np.eye(6 + n)
            T[:6, :6] = lie.Ad(s["C"])
            M = T.T @ M @ T
        Minv = gd.inverse_mass_matrix(model, s["C"], s["q"], representation=rep)
        assert np.linalg.norm(Minv @ M - np.eye(6 + n)) <= 1e-10 * np.linalg.cond(M)
        assert _rel(Minv, Minv.T) <= 1e-14
        d = gd.inverse_dynamics_derivatives(model, s["C"], np.array([s["V"], s["Vd"]]),
                                            np.array([s["q"], s["qd"], s["qdd"]]), representation=rep)
        assert _rel(d.mass_matrix, M) <= 1e-13


def test_forward_dynamics_value_matches_core(aerial_manipulator):
    m = aerial_manipulator
    rng = np.random.default_rng(43)
    s = sw.random_state(m, rng)
    u = rng.standard_normal(6 + m.n_joints)
    f = gd.forward_dynamics_derivatives(m, s["C"], s["V"][None], np.array([s["q"], s["qd"]]), u[None, :6], u[None, 6:])
    r = gd.forward_dynamics(m, s["C"], s["V"][None], np.array([s["q"], s["qd"]]), u[None, :6], u[None, 6:])
    assert _rel(np.r_[f.base_accel, f.qdd], np.r_[r.base_twist[1], r.q[2]]) <= 1e-10


# --------------------------------------------------------------------------- bad input
def _args(m):
    n = m.n_joints
    return dict(C=np.eye(4), V2=np.zeros((2, 6)), q3=np.zeros((3, n)), V1=np.zeros((1, 6)), q2=np.zeros((2, n)),
                W=np.zeros((1, 6)), tau=np.zeros((1, n)))


def _calls(m, a, **over):
    a = {**a, **over}
    return {
        "id": lambda: gd.inverse_dynamics_derivatives(m, a["C"], a["V2"], a["q3"], representation=a.get("rep", "spatial")),
        "fd": lambda: gd.forward_dynamics_derivatives(m, a["C"], a["V1"], a["q2"], a["W"], a["tau"],
                                                      representation=a.get("rep", "spatial")),
        "lin": lambda: gd.linearize(m, a["C"], a["V1"], a["q2"], a["W"], a["tau"], representation=a.get("rep", "spatial")),
    }


@pytest.mark.parametrize("case, argname", [
    (dict(rep="world"), "representation"),
    (dict(C=np.eye(3)), "base_pose"),
    (dict(C=np.diag([2.0, 1.0, 1.0, 1.0])), "base_pose"),
    (dict(C=np.full((4, 4), np.nan)), "base_pose"),
])
def test_bad_input_common(aerial_manipulator, case, argname):
    m = aerial_manipulator
    for name, call in _calls(m, _args(m), **case).items():
        with pytest.raises(ValueError, match=argname):
            call()
    if argname != "representation":
        with pytest.raises(ValueError, match=argname):
            gd.inverse_mass_matrix(m, case["C"], np.zeros(m.n_joints))


def test_bad_input_per_argument(aerial_manipulator):
    m = aerial_manipulator
    n = m.n_joints
    a = _args(m)
    nanq = np.zeros((3, n))
    nanq[1, 0] = np.nan
    cases = [
        ("id", dict(V2=np.zeros((1, 6))), "base_twist"),
        ("id", dict(q3=np.zeros((2, n))), "q"),
        ("id", dict(q3=nanq), "q"),
        ("id", dict(V2=np.array([[0, 0, 0, 0, 0, np.inf], [0] * 6])), "base_twist"),
        ("fd", dict(W=np.full((1, 6), np.nan)), "base_wrench"),
        ("fd", dict(tau=np.zeros((1, n + 1))), "tau"),
        ("lin", dict(q2=np.zeros((2, n - 1))), "q"),
        ("lin", dict(tau=np.full((1, n), np.nan)), "tau"),
    ]
    for which, over, argname in cases:
        with pytest.raises(ValueError, match=argname):
            _calls(m, a, **over)[which]()
    with pytest.raises(ValueError, match="ext_wrench"):
        gd.inverse_dynamics_derivatives(m, np.eye(4), a["V2"], a["q3"], ext_wrench={"nope": np.zeros((1, 6))})
    with pytest.raises(ValueError, match="gravity"):
        gd.linearize(m, np.eye(4), a["V1"], a["q2"], a["W"], a["tau"], gravity=(0, np.nan, 0))
    with pytest.raises(ValueError, match="model"):
        gd.linearize("robot.urdf", np.eye(4), a["V1"], a["q2"], a["W"], a["tau"])


def test_inputs_are_not_modified(aerial_manipulator):
    m = aerial_manipulator
    rng = np.random.default_rng(51)
    s = sw.random_state(m, rng)
    args = [s["C"], s["V"][None].copy(), np.array([s["q"], s["qd"]]), rng.standard_normal((1, 6)),
            rng.standard_normal((1, m.n_joints))]
    copies = [x.copy() for x in args]
    gd.linearize(m, *args, representation="body")
    gd.forward_dynamics_derivatives(m, *args)
    for x, c in zip(args, copies):
        np.testing.assert_array_equal(x, c)
