"""Fixed-base and mimic-enforced models (``load_urdf(fixed_base=..., mimic=...)``) against
Pinocchio and against identities that do not share our code paths.

* **Fixed base** vs Pinocchio's fixed-base model (``buildModelFromUrdf`` without a root joint):
  joint torques of ``pin.rnea`` with gravity expressed in the weld frame (a rigid motion of the
  whole system), the weld's reaction vs the free-flyer ``pin.rnea`` at zero base motion, and
  forward dynamics vs ``pin.aba``. Relative bound 1e-9 (measured ~1e-14).
* **Mimic enforced** vs Pinocchio ``mimic=True``: ``pin.rnea`` (reduced torques: a mimic joint's
  torque carried by its master) and, as Pinocchio's ABA refuses mimic joints, forward dynamics vs
  ``crba``/``nonLinearEffects`` solved in NumPy. Bound 1e-9.
* **Higher orders with mimic joints** (no Pinocchio algorithm gives them): the inverse dynamics
  derivatives vs Chebyshev differentiation of Pinocchio's order-0 ``rnea`` (``mimic=True``)
  along a smooth master trajectory (bound 1e-6 relative: spectral differentiation of 24 samples
  over +-0.05 s is accurate to ~1e-9 for derivatives 1..3), and the forward dynamics (the
  reduced order-by-order solve) inverting the inverse dynamics (the projection) at order 4, and
  hybrid dynamics with some masters prescribed reproducing both.
"""
import os
import warnings

import numpy as np
import pytest

import geodyn_ros as gd
from reference_models import (SWAP, AERIAL_MANIPULATOR, Ad, Ad_inv, SYNTHETIC_URDF, PinRef, chebyshev_derivatives, chebyshev_nodes,
                              example_robot_data_dir, pin, random_pose, random_state, rel_err)

ERD = example_robot_data_dir()
PANDA = os.path.join(ERD, "panda_description/urdf/panda.urdf")
BAXTER = os.path.join(ERD, "baxter_description/urdf/baxter.urdf")
UR5 = os.path.join(ERD, "ur_description/urdf/ur5_robot.urdf")


def _load(src, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gd.URDFWarning)
        return gd.load_urdf(src, **kw)


def _pin_model(src, root=None, mimic=False):
    if src.lstrip().startswith("<"):
        return pin.buildModelFromXML(src, root, mimic=mimic) if root else pin.buildModelFromXML(src, mimic=mimic)
    return pin.buildModelFromUrdf(src, root, mimic=mimic) if root else pin.buildModelFromUrdf(src, mimic=mimic)


class PinJoints:
    """Joint-space maps between our columns (``model.joint_names``) and a Pinocchio model
    (fixed base or free flyer; with mimic=True the mimic joints have no coordinate)."""

    def __init__(self, pm, model, skip=()):
        self.pm, self.pd = pm, pm.createData()
        self.off = 6 if pm.joints[1].shortname() == "JointModelFreeFlyer" else 0
        self.cols = [j for j, nm in enumerate(model.joint_names) if nm not in skip]
        self.jms = [pm.joints[pm.getJointId(model.joint_names[j])] for j in self.cols]

    def q(self, C, q):
        qp = pin.neutral(self.pm)
        if self.off:
            from reference_models import quat_xyzw_from_R
            qp[:3], qp[3:7] = C[:3, 3], quat_xyzw_from_R(C[:3, :3])
        for jm, j in zip(self.jms, self.cols):
            if jm.nq == 2:
                qp[jm.idx_q], qp[jm.idx_q + 1] = np.cos(q[j]), np.sin(q[j])
            else:
                qp[jm.idx_q] = q[j]
        return qp

    def v(self, x, base=None):
        v = np.zeros(self.pm.nv)
        if self.off:
            v[:6] = base
        for jm, j in zip(self.jms, self.cols):
            v[jm.idx_v] = x[j]
        return v

    def unv(self, v, n):
        out = np.zeros(n)
        for jm, j in zip(self.jms, self.cols):
            out[j] = v[jm.idx_v]
        return out


# ------------------------------------------------------------------------- fixed base

@pytest.mark.parametrize("src", ["panda", "ur5", "aerial", "synthetic"])
def test_fixed_base_matches_pinocchio(src):
    src = {"panda": PANDA, "ur5": UR5, "aerial": AERIAL_MANIPULATOR, "synthetic": SYNTHETIC_URDF}[src]
    model = _load(src, fixed_base=True)
    assert model.fixed_base and model.base_link == (model.link_names[0])
    n = model.n_joints
    pj = PinJoints(_pin_model(src), model)
    ff = PinRef(src, model.joint_names)
    rng = np.random.default_rng(7)
    for _ in range(3):
        s = random_state(rng, n)
        C = random_pose(rng)
        Q = np.stack([s.q, s.qd, s.qdd])
        res = gd.inverse_dynamics(model, C, None, Q)
        pj.pm.gravity = pin.Motion(C[:3, :3].T @ np.array([0, 0, -9.81]), np.zeros(3))
        tau_ref = pj.unv(pin.rnea(pj.pm, pj.pd, pj.q(C, s.q), pj.v(s.qd), pj.v(s.qdd)), n)
        W_ref, _ = ff.rnea(C, np.zeros(6), np.zeros(6), s.q, s.qd, s.qdd)
        assert rel_err(res.tau[0], tau_ref) <= 1e-9
        assert rel_err(res.base_wrench[0], W_ref) <= 1e-9
        fd = gd.forward_dynamics(model, C, None, Q[:2], None, res.tau)
        a_ref = pj.unv(pin.aba(pj.pm, pj.pd, pj.q(C, s.q), pj.v(s.qd), pj.v(res.tau[0])), n)
        assert rel_err(fd.q[2], a_ref) <= 1e-9 and rel_err(fd.q[2], s.qdd) <= 1e-9
        assert np.array_equal(fd.base_twist, np.zeros((2, 6)))
        hy = gd.hybrid_dynamics(model, C, None, Q[:2], res.tau, prescribed=[])
        assert rel_err(hy.base_wrench[0], W_ref) <= 1e-9   # the weld's reaction
    # higher orders: forward dynamics inverts inverse dynamics at order 4. Higher-order FD is
    # ill-conditioned (README "Conditioning of high-order forward dynamics": errors of q^(k)
    # re-enter q^(k+2) through M^-1 dM/dt and binomial factors), so as in
    # test_higher_order_vs_fd the contract is the backward error ID(FD(ID x)) = ID x at 1e-12
    # relative (measured ~1e-15), and the forward error at 1e-8 (measured <= 9e-10).
    r = 4
    Q = rng.standard_normal((r + 3, n))
    res = gd.inverse_dynamics(model, C, None, Q, order=r)
    fd = gd.forward_dynamics(model, C, None, Q[:2], None, res.tau, order=r)
    back = gd.inverse_dynamics(model, C, None, fd.q, order=r)
    assert rel_err(back.tau, res.tau) <= 1e-12
    assert rel_err(fd.q, Q) <= 1e-8


def test_world_root_is_recognised_and_bad_calls():
    xml = ('<robot name="arm"><link name="world"/><joint name="j1" type="revolute"><parent link="world"/>'
           '<child link="l1"/><origin xyz="0 0 0.3"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint><link name="l1"><inertial>'
           '<origin xyz="0.2 0 0"/><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'
           '</inertial></link></robot>')
    m = gd.load_urdf(xml)
    assert m.fixed_base and m.base_link == "world" and m.joint_names == ("j1",)
    assert "fixed_base=True" in repr(m)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    q = np.array([[0.3], [1.2], [-0.7]])
    tau = gd.inverse_dynamics(m, np.eye(4), None, q).tau[0]
    assert rel_err(tau, pin.rnea(pm, pd, q[0], q[1], q[2])) <= 1e-12
    with pytest.raises(ValueError, match="^base_twist: the model's base is welded"):
        gd.inverse_dynamics(m, np.eye(4), np.ones((2, 6)), q)
    with pytest.raises(ValueError, match="^base_wrench: the model's base is welded"):
        gd.forward_dynamics(m, np.eye(4), None, q[:2], np.zeros((1, 6)), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="^representation: 'body' is not supported for fixed-base"):
        gd.inverse_dynamics(m, np.eye(4), None, q, representation="body")
    with pytest.raises(ValueError, match="^model: loaded with fixed_base=True or mimic=True"):
        gd.mass_matrix(m, np.eye(4), q[0])
    with pytest.warns(gd.SingularMassMatrixWarning, match="the base's rotation about z"):
        floating = gd.load_urdf(xml, fixed_base=False)   # explicitly floating: a massless base, FD refuses
    assert not floating.fixed_base
    assert "the base's rotation about z" in floating.singular and "'world' has no mass" in floating.singular
    # the null motion's two parts weigh the same (the massless world turning about z as j1 turns
    # back): a tie is named in the coordinates' order, the base's first, whatever the LAPACK build
    with pytest.raises(ValueError, match="^model: forward dynamics is undefined: the motion of the base's rotation "
                                         "about z with joint 'j1' has zero kinetic energy"):
        gd.forward_dynamics(floating, np.eye(4), np.zeros(6), q[:2], np.zeros((1, 6)), np.zeros((1, 1)))


# ------------------------------------------------------------------------- mimic joints

def test_mimic_default_is_independent_and_recorded():
    with pytest.warns(gd.URDFWarning, match=r"1 <mimic> joint\(s\) loaded as independent joints \(panda_finger_joint2\)"):
        m = gd.load_urdf(PANDA)
    assert m.mimic == {"panda_finger_joint2": ("panda_finger_joint1", 1.0, 0.0)} and not m.mimic_enforced
    assert not m._constrained


@pytest.mark.parametrize("src, fixed", [("panda", True), ("panda", False), ("baxter", False)])
def test_mimic_enforced_matches_pinocchio(src, fixed):
    path = {"panda": PANDA, "baxter": BAXTER}[src]
    model = _load(path, mimic=True, fixed_base=fixed)
    assert model.mimic_enforced and model.mimic
    n = model.n_joints
    pm = _pin_model(path, None if fixed else pin.JointModelFreeFlyer(), mimic=True)
    pj = PinJoints(pm, model, skip=model.mimic)
    ff = None if fixed else PinRef(path, [nm for nm in model.joint_names])   # independent-joint free flyer
    rng = np.random.default_rng(3)
    for _ in range(3):
        s = random_state(rng, n, pscale=0.5)
        C = s.C
        Q = np.stack([s.q, s.qd, s.qdd])
        # expected full motion: mimic columns follow their masters
        Qf = Q.copy()
        for nm, (master, a, b) in model.mimic.items():
            j, mj = model.joint_index(nm), model.joint_index(master)
            Qf[:, j] = a * Qf[:, mj]
            Qf[0, j] += b
        if fixed:
            res = gd.inverse_dynamics(model, C, None, Q)
            pm.gravity = pin.Motion(C[:3, :3].T @ np.array([0, 0, -9.81]), np.zeros(3))
            vb = ab = None
        else:
            res = gd.inverse_dynamics(model, C, np.stack([s.V, s.Vd]), Q)
            vb, ab = SWAP @ Ad_inv(C) @ s.V, SWAP @ Ad_inv(C) @ s.Vd
        f_pin = pin.rnea(pm, pj.pd, pj.q(C, Qf[0]), pj.v(Qf[1], vb), pj.v(Qf[2], ab))
        tau_ref = pj.unv(f_pin, n)
        assert rel_err(res.tau[0], tau_ref) <= 1e-9
        for nm in model.mimic:
            assert res.tau[0, model.joint_index(nm)] == 0.0
        if not fixed:
            W_ref, _ = ff.force_to_ours(C, np.concatenate([f_pin[:6], np.zeros(ff.model.nv - 6)]))
            assert rel_err(res.base_wrench[0], W_ref) <= 1e-9
        # forward dynamics vs crba / nonLinearEffects (Pinocchio's ABA refuses mimic joints)
        qp = pj.q(C, Qf[0])
        Mp = pin.crba(pm, pj.pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        h = pin.nonLinearEffects(pm, pj.pd, qp, pj.v(Qf[1], vb))
        a_ref = np.linalg.solve(Mp, f_pin - h)
        cols = pj.cols   # independent joints (Pinocchio has no coordinate for a mimic joint)
        if fixed:
            fd = gd.forward_dynamics(model, C, None, Q[:2], None, res.tau)
        else:
            fd = gd.forward_dynamics(model, C, s.V, Q[:2], res.base_wrench, res.tau)
            Vd_ref = Ad(C) @ SWAP @ a_ref[:6]
            assert rel_err(fd.base_twist[1], Vd_ref) <= 1e-9
        assert rel_err(fd.q[2, cols], pj.unv(a_ref, n)[cols]) <= 1e-9
        assert rel_err(fd.q[2], Qf[2]) <= 1e-9   # FD(ID) recovers the constrained motion


def test_mimic_higher_orders_against_differentiated_pinocchio():
    model = _load(PANDA, mimic=True, fixed_base=True)
    n = model.n_joints
    pm = _pin_model(PANDA, mimic=True)
    pj = PinJoints(pm, model, skip=model.mimic)
    rng = np.random.default_rng(11)
    amp, om, ph, c0 = rng.uniform(0.2, 0.6, n), rng.uniform(0.5, 2.0, n), rng.uniform(0, 6, n), rng.uniform(-1, 1, n)
    c0[model.joint_index("panda_finger_joint1")] = 0.02
    amp[model.joint_index("panda_finger_joint1")] = 0.01

    def qk(t, k):
        return amp * om**k * np.sin(om * t + ph + k * np.pi / 2) + (c0 if k == 0 else 0.0)

    r, t0, h = 3, 0.3, 0.05
    Q = np.stack([qk(t0, k) for k in range(r + 3)])
    res = gd.inverse_dynamics(model, np.eye(4), None, Q, order=r)
    nodes = chebyshev_nodes(t0, h, 24)
    samples = []
    for t in nodes:
        Qt = np.stack([qk(t, k) for k in range(3)])
        j, mj = model.joint_index("panda_finger_joint2"), model.joint_index("panda_finger_joint1")
        Qt[:, j] = Qt[:, mj]
        samples.append(pj.unv(pin.rnea(pm, pj.pd, pj.q(np.eye(4), Qt[0]), pj.v(Qt[1]), pj.v(Qt[2])), n))
    d = chebyshev_derivatives(np.array(samples), h, r)
    for k in range(r + 1):
        assert rel_err(res.tau[k], d[k]) <= 1e-6, (k, rel_err(res.tau[k], d[k]))


def test_mimic_forward_and_hybrid_invert_inverse_at_order_4():
    model = _load(BAXTER, mimic=True)
    n, r = model.n_joints, 4
    rng = np.random.default_rng(5)
    C = random_pose(rng)
    V = rng.standard_normal((r + 2, 6)) * 0.5
    Q = rng.standard_normal((r + 3, n)) * 0.5
    res = gd.inverse_dynamics(model, C, V, Q, order=r)
    fd = gd.forward_dynamics(model, C, V[:1], Q[:2], res.base_wrench, res.tau, order=r)
    Qf = fd.q
    # FD solves with M (cond ~7e4 here) at every order, and order k reuses the rounding of orders
    # < k: bound 1e-13 * cond(M) * 2^r (measured 1.4e-9 against a bound of 1.2e-7)
    ev = np.linalg.eigvalsh(gd.mass_matrix(model._plain, C, Q[0]))
    tol = 1e-13 * ev[-1] / ev[0] * 2**r
    assert rel_err(fd.base_twist, V) <= tol
    indep = [j for j, nm in enumerate(model.joint_names) if nm not in model.mimic]
    assert rel_err(Qf[:, indep], Q[:, indep]) <= tol
    for nm, (master, a, b) in model.mimic.items():
        j, mj = model.joint_index(nm), model.joint_index(master)
        assert rel_err(Qf[1:, j], a * Qf[1:, mj]) <= 1e-15 and abs(Qf[0, j] - (a * Qf[0, mj] + b)) <= 1e-15
    # hybrid: half the masters prescribed, base wrench given
    presc = np.zeros(n, bool)
    presc[indep[::2]] = True
    for nm, (master, _, _) in model.mimic.items():
        presc[model.joint_index(nm)] = presc[model.joint_index(master)]
    hy = gd.hybrid_dynamics(model, C, V[:1], Q, res.tau, r, prescribed=presc, base_wrench=res.base_wrench)
    assert rel_err(hy.base_twist, V) <= tol and rel_err(hy.q[:, indep], Q[:, indep]) <= tol
    assert rel_err(hy.tau, res.tau) <= tol
    bad = np.zeros(n, bool)
    bad[model.joint_index(next(iter(model.mimic)))] = True
    with pytest.raises(ValueError, match="^prescribed: mimic joint .* follows its master"):
        gd.hybrid_dynamics(model, C, V[:1], Q, res.tau, r, prescribed=bad, base_wrench=res.base_wrench)


def test_mimic_bad_master_enforced():
    xml = ('<robot name="m"><link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" '
           'iyz="0" izz="0.1"/></inertial></link><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
           '<axis xyz="0 0 1"/><mimic joint="nope"/></joint><link name="b"><inertial><origin xyz="0.1 0 0"/>'
           '<mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link></robot>')
    with pytest.warns(gd.URDFWarning, match="<mimic joint='nope'> is not a joint of the robot; the relation is ignored"):
        assert gd.load_urdf(xml).mimic == {}
    with pytest.raises(ValueError, match="^joint 'j': <mimic joint='nope'> is not a joint of the robot"):
        gd.load_urdf(xml, mimic=True)
