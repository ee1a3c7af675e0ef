"""Derivatives of the dynamics against Pinocchio's analytical derivatives (independent reference).

Robots: our aerial manipulator, two real URDFs of example-robot-data (solo12, hextilt_flying_arm_5)
and the synthetic tree of ``reference_models`` (prismatic joint, rotated inertias). Pinocchio:
``computeRNEADerivatives``, ``computeABADerivatives``, ``computeMinverse``, ``crba``.

Conversion (stated once, written out in ``_body_from_pin`` / ``_spatial_from_body``)
-----------------------------------------------------------------------------------
Pinocchio's free-flyer tangent vector is ``(v_lin, w)`` of the base in base axes, and its
configuration perturbation is ``integrate(q, dv)`` = ``C exp(dv)`` (right multiplication). Our
``representation="body"`` uses the same body twist and the same right perturbation ``C exp(hat(delta))``
with angular first, so with the constant permutation ``Pb = blkdiag(SWAP, Pi)`` (``SWAP`` exchanges
the 3-blocks, ``Pi`` maps ``model.joint_names`` to Pinocchio's ``idx_v``; ``v_pin = Pb nu_b``,
``f_pin = Pb f_b``)::

    d(ID_b)/d(delta, q) = Pb^T dtau_dq Pb,   d(ID_b)/d(V, qd) = Pb^T dtau_dv Pb,   M_b = Pb^T M Pb
    d(FD_b)/d(delta, q) = Pb^T ddq_dq Pb,    d(FD_b)/d(V, qd) = Pb^T ddq_dv Pb,    M_b^-1 = Pb^T Minv Pb

``representation="spatial"`` (``V_s = Ad_C V_b``, ``Vdot_s = Ad_C Vdot_b``, ``W_s = Ad_C^-T W_b``) is
obtained from the body quantities by the chain rule with ``Ad_exp(delta) = I + ad_delta``
(``_spatial_from_body``, written independently of the library's kernel, which goes the other way)::

    ID_s:  d/d delta = To [D_delta + D_V ad_Vb + M_b[:, :6] ad_Vdotb - (Wbar_b; 0)],
           d/dq = To D_q,  d/dV_s = To D_V Ad_C^-1,  d/dqd = To D_qd,   To = blkdiag(Ad_C^-T, I)
    FD_s:  d/d delta = Ta [F_delta + F_V ad_Vb + Minv_b[:, :6] Wbar_b - (ad_Vdotb; 0)],
           d/dq = Ta F_q,  d/dV_s = Ta F_V Ad_C^-1,  d/dqd = Ta F_qd,   Ta = blkdiag(Ad_C, I)

with ``Wbar = [[hat(n), hat(f)], [hat(f), 0]]`` for ``W = (n, f)`` (``ad_delta^T W = Wbar delta``).
Gravity: ours ``gravity=g`` is Pinocchio's ``model.gravity.linear = g`` (the paper's ``a_grav``
has the opposite sign, ERRATA.md).

Criterion: ``||ours - pin|| <= 1e-9 max(1, ||pin||)`` (Frobenius) per block at 12 random bounded
states per robot, representation and gravity case. Both sides are exact algorithms in float64:
rounding alone is ~1e-14 relative for the ID derivatives and ``cond(M) eps`` (<= ~1e-10 here,
hextilt cond ~1e6) for the forward-dynamics ones; the bound leaves room for that, while any
missing term of the algorithms is O(1). Measured worst cases: ID value/derivatives/M <= 1.6e-14,
FD derivatives <= 1.4e-11, M^-1 <= 1.2e-12, A/B rows <= 1.2e-12.
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

ROBOTS = ["aerial_manipulator", "solo12", "hextilt_flying_arm_5", "synthetic"]
N_STATES = 12
RTOL = 1e-9


_robot = rm.model_and_pin


@pytest.fixture(params=ROBOTS)
def robot(request):
    return _robot(request.param)


def _seed(*parts):
    return zlib.crc32("|".join(map(str, parts)).encode())


def _Pb(ref):
    n = ref.n
    P = np.zeros((6 + n, 6 + n))
    P[:6, :6] = rm.SWAP
    P[ref.vidx, 6 + np.arange(n)] = 1.0     # row: Pinocchio idx_v, column: ours
    return P


def _bar(W):
    n, f = W[:3], W[3:]
    return np.block([[rm.hat3(n), rm.hat3(f)], [rm.hat3(f), np.zeros((3, 3))]])


def _check(ours, ref, what):
    err = rm.rel_err(ours, ref)
    assert err <= RTOL, f"{what}: relative error {err:.3e} > {RTOL:.0e} (|ref| = {np.linalg.norm(ref):.3e})"
    return err


def _pin_id_derivatives(ref, C, Vb, Vdb, q, qd, qdd, g):
    """Pinocchio RNEA derivatives in our body representation: value, D (nv, 2nv), M."""
    ref.set_gravity(g)
    P = _Pb(ref)
    qp = ref.q_pin(C, q)
    vp = P @ np.r_[Vb, qd]
    ap = P @ np.r_[Vdb, qdd]
    dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(ref.model, ref.data, qp, vp, ap))
    M = np.triu(M) + np.triu(M, 1).T
    val = P.T @ np.array(pin.rnea(ref.model, ref.data, qp, vp, ap))
    return val, np.hstack([P.T @ dq @ P, P.T @ dv @ P]), P.T @ M @ P


def _pin_fd_derivatives(ref, C, Vb, q, qd, Wb, tau, g):
    """Pinocchio ABA derivatives in our body representation: nudot, D (nv, 2nv), Minv."""
    ref.set_gravity(g)
    P = _Pb(ref)
    qp = ref.q_pin(C, q)
    vp = P @ np.r_[Vb, qd]
    fp = P @ np.r_[Wb, tau]
    dq, dv, Minv = (np.array(x) for x in pin.computeABADerivatives(ref.model, ref.data, qp, vp, fp))
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    acc = P.T @ np.array(pin.aba(ref.model, ref.data, qp, vp, fp))
    return acc, np.hstack([P.T @ dq @ P, P.T @ dv @ P]), P.T @ Minv @ P


def _spatial_from_body_id(C, Vb, Vdb, val_b, D_b, M_b, n):
    Adi = rm.Ad_inv(C)
    To = np.eye(6 + n)
    To[:6, :6] = Adi.T
    Dd, Dq, DV, Dqd = D_b[:, :6], D_b[:, 6:6 + n], D_b[:, 6 + n:12 + n], D_b[:, 12 + n:]
    corr = np.zeros((6 + n, 6))
    corr[:6] = _bar(val_b[:6])
    pose = To @ (Dd + DV @ rm.ad(Vb) + M_b[:, :6] @ rm.ad(Vdb) - corr)
    D_s = np.hstack([pose, To @ Dq, To @ DV @ Adi, To @ Dqd])
    Ti = np.eye(6 + n)
    Ti[:6, :6] = Adi
    return To @ val_b, D_s, To @ M_b @ Ti


def _spatial_from_body_fd(C, Vb, Wb, acc_b, F_b, Minv_b, n):
    Adc, Adi = rm.Ad(C), rm.Ad_inv(C)
    Ta = np.eye(6 + n)
    Ta[:6, :6] = Adc
    Fd, Fq, FV, Fqd = F_b[:, :6], F_b[:, 6:6 + n], F_b[:, 6 + n:12 + n], F_b[:, 12 + n:]
    corr = np.zeros((6 + n, 6))
    corr[:6] = rm.ad(acc_b[:6])
    pose = Ta @ (Fd + FV @ rm.ad(Vb) + Minv_b[:, :6] @ _bar(Wb) - corr)
    F_s = np.hstack([pose, Ta @ Fq, Ta @ FV @ Adi, Ta @ Fqd])
    Tu = np.eye(6 + n)
    Tu[:6, :6] = Adc.T          # u_b = blkdiag(Ad_C^T, I) u_s
    return Ta @ acc_b, F_s, Ta @ Minv_b @ Tu


def _gravity(case, rng):
    return {"zero": np.zeros(3), "default": rm.GRAVITY.copy()}.get(case, None) if case != "random" \
        else 10.0 * rng.standard_normal(3)


def _blocks(D, n):
    return {"pose": D[:, :6], "q": D[:, 6:6 + n], "twist": D[:, 6 + n:12 + n], "qd": D[:, 12 + n:]}


@pytest.mark.parametrize("gcase", ["zero", "default", "random"])
@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_id_derivatives_vs_pinocchio(robot, rep, gcase):
    model, ref = robot
    n = model.n_joints
    rng = np.random.default_rng(_seed("idd", model.base_link, rep, gcase))
    for i in range(N_STATES):
        s = rm.random_state(rng, n)
        g = _gravity(gcase, rng)
        Vb, Vdb = rm.Ad_inv(s.C) @ s.V, rm.Ad_inv(s.C) @ s.Vd
        val, D, M = _pin_id_derivatives(ref, s.C, Vb, Vdb, s.q, s.qd, s.qdd, g)
        V, Vd = (Vb, Vdb) if rep == "body" else (s.V, s.Vd)
        if rep == "spatial":
            val, D, M = _spatial_from_body_id(s.C, Vb, Vdb, val, D, M, n)
        res = gd.inverse_dynamics_derivatives(model, s.C, np.array([V, Vd]), np.array([s.q, s.qd, s.qdd]),
                                              gravity=g, representation=rep)
        _check(np.r_[res.base_wrench, res.tau], val, f"{rep} ID value, state {i}")
        for name, blk in _blocks(D, n).items():
            _check(getattr(res, {"pose": "d_base_pose", "q": "d_q", "twist": "d_base_twist", "qd": "d_qd"}[name]),
                   blk, f"{rep} dID/d{name}, state {i}")
        _check(res.mass_matrix, M, f"{rep} M, state {i}")


@pytest.mark.parametrize("gcase", ["zero", "default", "random"])
@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_fd_derivatives_vs_pinocchio(robot, rep, gcase):
    model, ref = robot
    n = model.n_joints
    rng = np.random.default_rng(_seed("fdd", model.base_link, rep, gcase))
    for i in range(N_STATES):
        s = rm.random_state(rng, n)
        g = _gravity(gcase, rng)
        Vb = rm.Ad_inv(s.C) @ s.V
        # inputs of the size that gives O(1) accelerations: ID of a random acceleration, perturbed
        val, _, _ = _pin_id_derivatives(ref, s.C, Vb, rm.Ad_inv(s.C) @ s.Vd, s.q, s.qd, s.qdd, g)
        Wb = val[:6] + rng.standard_normal(6)
        tau = val[6:] + 0.1 * rng.standard_normal(n)
        acc, F, Minv = _pin_fd_derivatives(ref, s.C, Vb, s.q, s.qd, Wb, tau, g)
        V, W = Vb, Wb
        if rep == "spatial":
            acc, F, Minv = _spatial_from_body_fd(s.C, Vb, Wb, acc, F, Minv, n)
            V, W = s.V, rm.Ad_inv(s.C).T @ Wb
        res = gd.forward_dynamics_derivatives(model, s.C, V[None], np.array([s.q, s.qd]), W[None], tau[None],
                                              gravity=g, representation=rep)
        _check(np.r_[res.base_accel, res.qdd], acc, f"{rep} FD value, state {i}")
        for name, blk in _blocks(F, n).items():
            _check(getattr(res, {"pose": "d_base_pose", "q": "d_q", "twist": "d_base_twist", "qd": "d_qd"}[name]),
                   blk, f"{rep} dFD/d{name}, state {i}")
        _check(res.d_input, Minv, f"{rep} M^-1, state {i}")
        lin = gd.linearize(model, s.C, V[None], np.array([s.q, s.qd]), W[None], tau[None], gravity=g,
                           representation=rep)
        _check(lin.A[6 + n:], F, f"{rep} A (dynamics rows), state {i}")
        _check(lin.B[6 + n:], Minv, f"{rep} B (dynamics rows), state {i}")


@pytest.mark.parametrize("rep", ["body", "spatial"])
def test_inverse_mass_matrix_vs_pinocchio(robot, rep):
    model, ref = robot
    n = model.n_joints
    rng = np.random.default_rng(_seed("minv", model.base_link, rep))
    P = _Pb(ref)
    for i in range(N_STATES):
        s = rm.random_state(rng, n)
        Minv = np.array(pin.computeMinverse(ref.model, ref.data, ref.q_pin(s.C, s.q)))
        Minv = P.T @ (np.triu(Minv) + np.triu(Minv, 1).T) @ P
        if rep == "spatial":
            Ta = np.eye(6 + n)
            Ta[:6, :6] = rm.Ad(s.C)
            Minv = Ta @ Minv @ Ta.T
        ours = gd.inverse_mass_matrix(model, s.C, s.q, representation=rep)
        _check(ours, Minv, f"{rep} M^-1, state {i}")
        assert np.array_equal(ours, ours.T) or rm.rel_err(ours, ours.T) < 1e-13


def test_large_tree_vs_pinocchio():
    """A 51-body tree (nv = 56): the dense products of the kernel switch to BLAS above nv = 48."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench", "core"))
    from make_tree_urdf import branched_tree_urdf
    src = branched_tree_urdf(10)
    model = gd.load_urdf(src)
    ref = rm.PinRef(src, model.joint_names)
    n = model.n_joints
    assert 6 + n >= 48
    rng = np.random.default_rng(_seed("big"))
    for i in range(3):
        s = rm.random_state(rng, n)
        Vb = rm.Ad_inv(s.C) @ s.V
        val, D, M = _pin_id_derivatives(ref, s.C, Vb, rm.Ad_inv(s.C) @ s.Vd, s.q, s.qd, s.qdd, rm.GRAVITY)
        res = gd.inverse_dynamics_derivatives(model, s.C, np.array([Vb, rm.Ad_inv(s.C) @ s.Vd]),
                                              np.array([s.q, s.qd, s.qdd]), representation="body")
        _check(res.d_state, D, f"big tree dID, state {i}")
        Wb, tau = val[:6] + rng.standard_normal(6), val[6:] + 0.1 * rng.standard_normal(n)
        acc, F, Minv = _pin_fd_derivatives(ref, s.C, Vb, s.q, s.qd, Wb, tau, rm.GRAVITY)
        lin = gd.linearize(model, s.C, Vb[None], np.array([s.q, s.qd]), Wb[None], tau[None], representation="body")
        _check(lin.A[6 + n:], F, f"big tree A, state {i}")
        _check(lin.B[6 + n:], Minv, f"big tree B, state {i}")
        _check(gd.inverse_mass_matrix(model, s.C, s.q, representation="body"), Minv, f"big tree M^-1, state {i}")
