"""Dynamics with the base twist / wrench in another representation (``representation=`` keyword of
``inverse_dynamics``, ``forward_dynamics``, ``hybrid_dynamics``).

The four representations (``geodyn_ros.algorithms.representations``, angular first, moment first) are
``spatial`` (the core, CONVENTIONS.md), ``body`` (Pinocchio LOCAL), ``hybrid`` (Pinocchio
LOCAL_WORLD_ALIGNED) and ``mixed`` (MuJoCo free joint). With ``representation=X`` the base twist
and base wrench jets (row k = k-th time derivative of the *represented* vector) are in X; joint
arrays, ``gravity`` and ``ext_wrench`` (spatial, world) are not affected.

1. Same physical motion through every representation, orders 0..5, aerial manipulator and the
   synthetic tree (continuous + prismatic joints): ID / FD / hybrid (both base modes) in X agree
   with the spatial call after converting the base jets with ``convert_twist``/``convert_wrench``.
   Non-default gravity, an ``ext_wrench`` and an ``ext_torque`` are passed to every call, so a
   representation path that touched them would show. Tolerance 1e-10 per row, relative
   (``||a_k - b_k|| / max(1, ||b_k||)``): both sides are exact algebra (the jet conversions are
   closed-form Leibniz sums; the dynamics kernel is the same spatial one), so only rounding
   differs; measured worst 1.2e-12 (rows of orders 4..5 carry binomial sums of large terms,
   FD rows are amplified by the conditioning of M); a missing Leibniz term gives O(1).
   FD's returned ``base_twist`` row 0 is the input converted X -> spatial -> X, so it "echoes"
   the input to rounding (~1e-15), not bit for bit as in the spatial call.
   FD is compared against the spatial FD of the same (converted) inputs, not against a twist jet
   that an ID produced, since that round trip is limited by the conditioning of the random jets.
   Also: the trajectory form (leading T axis) equals per-sample calls for ``mixed``.
2. ``mixed`` vs MuJoCo (``geodyn_ros.sim.MujocoSim``: the same URDF with a free joint). The state
   is written in MuJoCo's own coordinates (``qpos``, ``qvel``, ``qfrc_applied``, ``xfrc_applied``)
   and read by geodyn_ros with nothing but the 3-block swap:
   ``qvel[:6] = (pdot_world, w_body) = linear_first(V_mixed)``, ``qacc[:6] = d/dt qvel[:6]``, and
   the free joint's generalized force ``qfrc[:6] = (f_world, n_body about the base origin)
   = linear_first(W_mixed)``. The force convention is verified here (``test_mujoco_free_joint_
   generalized_force_is_mixed``) with ``mj_applyFT``, and it is the one forced by duality:
   ``qfrc . qvel = f . pdot + n_b . w_b = W_mixed . V_mixed`` (power). Tolerance 1e-9 relative:
   MuJoCo (CRB + sparse LDL^T) and geodyn_ros (recursive) evaluate the same equations with
   different float sequences, so agreement is rounding times cond(M) (~1e4): measured 2e-13 for
   accelerations, 1e-15 for inverse dynamics; a convention slip (a swapped block, a frame, the
   gravity direction) gives O(1).
3. ``body`` vs Pinocchio (free flyer, ``v = (v_lin, w)`` LOCAL, ``a = dv/dt``, ``rnea[:6] =
   (f, n)`` in the base frame): ``pin.rnea`` / ``pin.aba`` evaluated on pin-native random
   ``v``, ``a``, generalized forces, read by geodyn_ros with the swap only. Tolerance 1e-9 relative
   as ``test_vs_pinocchio.py`` (measured 1e-15 ID, 3e-13 FD).
4. Bad input: unknown representation, NaN in used base twist rows (unused rows are not read),
   caller arrays untouched.
"""
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_models as rm  # noqa: E402

import geodyn_ros as gd  # noqa: E402
from geodyn_ros.algorithms.representations import (REPRESENTATIONS, angular_first, convert_twist,  # noqa: E402
                                        convert_wrench, linear_first)
from geodyn_ros.model.resources import shipped_urdf  # noqa: E402

ROBOTS = ["aerial_manipulator", "synthetic"]
ORDERS = list(range(6))
RTOL_SAME = 1e-10      # section 1 (rounding only)
RTOL_REF = 1e-9        # sections 2, 3 (another library)
GRAVITY = np.array([0.7, -1.3, -9.6])   # tilted, not the default: must be the same world vector everywhere


def _seed(*parts):
    return zlib.crc32("|".join(map(str, parts)).encode())


def _model(name):
    return rm.model_and_pin(name)[0]


def _row_err(a, b):
    """max_k ||a_k - b_k|| / max(1, ||b_k||) over the rows (time derivatives) of b."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (a.shape, b.shape)
    return max(rm.rel_err(a[k], b[k]) for k in range(b.shape[0]))


def _check(a, b, what, tol=RTOL_SAME):
    e = _row_err(a, b)
    assert e <= tol, f"{what}: relative error {e:.3e} > {tol:.0e}"


def _inputs(model, order, rng):
    """Random pose, spatial twist jet (order+2 rows), joint jet (order+3), spatial wrench and
    torque jets (order+1), and the world-side extras that no representation may touch."""
    n = model.n_joints
    C = rm.random_pose(rng, pscale=2.0)
    V = rm.random_jet(rng, order + 2, 6)
    q = rm.random_jet(rng, order + 3, n)
    q[0] = rng.uniform(-np.pi, np.pi, n)
    q[0, np.array(model.joint_types) == "prismatic"] *= 0.1
    W = rm.random_jet(rng, order + 1, 6, scale=10.0)
    tau = rm.random_jet(rng, order + 1, n)
    kw = dict(gravity=GRAVITY,
              ext_wrench={model.link_names[-1]: rm.random_jet(rng, order + 1, 6)},
              ext_torque=0.1 * rm.random_jet(rng, order + 1, n))
    return C, V, q, W, tau, kw


# ============================================================== 1. same motion, every representation
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("robot", ROBOTS)
def test_inverse_and_forward_dynamics_same_motion(robot, order):
    model = _model(robot)
    rng = np.random.default_rng(_seed("idfd", robot, order))
    for _ in range(2):
        C, V, q, W, tau, kw = _inputs(model, order, rng)
        id_s = gd.inverse_dynamics(model, C, V, q, order, **kw)
        fd_s = gd.forward_dynamics(model, C, V[:1], q[:2], W, tau, order, **kw)
        assert fd_s.base_twist.shape == (order + 2, 6)
        for X in REPRESENTATIONS:
            # ID: the X twist jet of the same motion gives the same torques and the X wrench jet
            # of the same spatial wrench
            Vx = convert_twist(C, V, "spatial", X)
            id_x = gd.inverse_dynamics(model, C, Vx, q, order, representation=X, **kw)
            assert id_x.base_wrench.shape == (order + 1, 6) and id_x.tau.shape == (order + 1, model.n_joints)
            _check(id_x.tau, id_s.tau, f"{X} ID tau")
            _check(convert_wrench(C, id_x.base_wrench, V, X, "spatial"), id_s.base_wrench, f"{X} ID base_wrench")
            # FD: fed the X jet of the same spatial wrench (converted along the motion that the
            # spatial FD produces), returns the X jet of the spatial FD's twist and the same q
            Wx = convert_wrench(C, W, fd_s.base_twist, "spatial", X)
            fd_x = gd.forward_dynamics(model, C, convert_twist(C, V[:1], "spatial", X), q[:2], Wx, tau, order,
                                       representation=X, **kw)
            _check(fd_x.base_twist, convert_twist(C, fd_s.base_twist, "spatial", X), f"{X} FD base_twist")
            _check(fd_x.q, fd_s.q, f"{X} FD q")


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("robot", ROBOTS)
def test_hybrid_dynamics_same_motion(robot, order):
    model = _model(robot)
    names = model.joint_names
    rng = np.random.default_rng(_seed("hyb", robot, order))
    C, V, q, W, tau, kw = _inputs(model, order, rng)
    # (a) base motion given (base_wrench=None), joints 0 and 2 prescribed (the prismatic one on the
    #     synthetic tree), the others torque-driven
    pa = [names[0], names[2]]
    hs = gd.hybrid_dynamics(model, C, V, q, tau, order, prescribed=pa, **kw)
    # (b) base wrench given, joints 1, 3, 5 prescribed
    pb = list(names[1::2])
    hs_b = gd.hybrid_dynamics(model, C, V[:1], q, tau, order, prescribed=pb, base_wrench=W, **kw)
    for X in REPRESENTATIONS:
        Vx = convert_twist(C, V, "spatial", X)
        hx = gd.hybrid_dynamics(model, C, Vx, q, tau, order, prescribed=pa, representation=X, **kw)
        _check(hx.base_twist, Vx, f"{X} hybrid(a) base_twist echo")
        _check(convert_wrench(C, hx.base_wrench, V, X, "spatial"), hs.base_wrench, f"{X} hybrid(a) base_wrench")
        _check(hx.q, hs.q, f"{X} hybrid(a) q")
        _check(hx.tau, hs.tau, f"{X} hybrid(a) tau")

        Wx = convert_wrench(C, W, hs_b.base_twist, "spatial", X)
        hx_b = gd.hybrid_dynamics(model, C, Vx[:1], q, tau, order, prescribed=pb, base_wrench=Wx,
                                  representation=X, **kw)
        _check(hx_b.base_twist, convert_twist(C, hs_b.base_twist, "spatial", X), f"{X} hybrid(b) base_twist")
        _check(hx_b.base_wrench, Wx, f"{X} hybrid(b) base_wrench echo")
        _check(hx_b.q, hs_b.q, f"{X} hybrid(b) q")
        _check(hx_b.tau, hs_b.tau, f"{X} hybrid(b) tau")


@pytest.mark.parametrize("robot", ROBOTS)
def test_trajectory_form_mixed_equals_per_sample(robot):
    """(T, ...) arguments with representation="mixed" equal T single calls (1e-12: the same
    arithmetic per sample, at most reordered)."""
    model = _model(robot)
    rng = np.random.default_rng(_seed("traj", robot))
    T, order = 4, 3
    samples = [_inputs(model, order, rng) for _ in range(T)]
    Cs = np.stack([s[0] for s in samples])
    Vm = np.stack([convert_twist(s[0], s[1], "spatial", "mixed") for s in samples])
    qs = np.stack([s[2] for s in samples])
    Wm = np.stack([s[3] for s in samples])   # any jet will do as a mixed wrench
    taus = np.stack([s[4] for s in samples])
    ext = {model.link_names[-1]: np.stack([s[5]["ext_wrench"][model.link_names[-1]] for s in samples])}
    et = np.stack([s[5]["ext_torque"] for s in samples])
    kw = dict(gravity=GRAVITY, ext_wrench=ext, ext_torque=et, representation="mixed")

    idt = gd.inverse_dynamics(model, Cs, Vm, qs, order, **kw)
    fdt = gd.forward_dynamics(model, Cs, Vm[:, :1], qs[:, :2], Wm, taus, order, **kw)
    assert idt.base_wrench.shape == (T, order + 1, 6) and fdt.base_twist.shape == (T, order + 2, 6)
    for t in range(T):
        kt = dict(gravity=GRAVITY, ext_wrench={k: v[t] for k, v in ext.items()}, ext_torque=et[t],
                  representation="mixed")
        id1 = gd.inverse_dynamics(model, Cs[t], Vm[t], qs[t], order, **kt)
        fd1 = gd.forward_dynamics(model, Cs[t], Vm[t, :1], qs[t, :2], Wm[t], taus[t], order, **kt)
        _check(idt.base_wrench[t], id1.base_wrench, f"sample {t} ID base_wrench", 1e-12)
        _check(idt.tau[t], id1.tau, f"sample {t} ID tau", 1e-12)
        _check(fdt.base_twist[t], fd1.base_twist, f"sample {t} FD base_twist", 1e-12)
        _check(fdt.q[t], fd1.q, f"sample {t} FD q", 1e-12)


# ============================================================== 2. mixed vs MuJoCo
@pytest.fixture(scope="module")
def mj():
    mujoco = pytest.importorskip("mujoco")
    from geodyn_ros.sim import MujocoSim
    sim = MujocoSim(shipped_urdf(), gravity=GRAVITY, joint_limits=False)
    m, d, model = sim.mj_model, sim.mj_data, sim.model
    np.testing.assert_array_equal(m.opt.gravity, GRAVITY)          # the same gravity in both
    free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    assert len(free) == 1
    fj = free[0]
    jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in model.joint_names]
    return dict(mujoco=mujoco, sim=sim, m=m, d=d, model=model, base_body=int(m.jnt_bodyid[fj]),
                qa=int(m.jnt_qposadr[fj]), va=int(m.jnt_dofadr[fj]),
                qadr=m.jnt_qposadr[jid].copy(), dadr=m.jnt_dofadr[jid].copy())


def _mj_random_state(env, rng):
    """A random state written in MuJoCo coordinates; returns the base pose C read from MuJoCo."""
    mujoco, m, d = env["mujoco"], env["m"], env["d"]
    mujoco.mj_resetData(m, d)
    qa = env["qa"]
    quat = rng.standard_normal(4)
    d.qpos[qa:qa + 3] = rng.uniform(-2.0, 2.0, 3)
    d.qpos[qa + 3:qa + 7] = quat / np.linalg.norm(quat)            # (w, x, y, z), any rotation
    d.qpos[env["qadr"]] = rng.uniform(-np.pi, np.pi, len(env["qadr"]))
    d.qvel[:] = 1.5 * rng.standard_normal(m.nv)
    d.ctrl[:] = 0.0                                                # the sim's base actuators off
    d.qfrc_applied[:] = 0.0
    d.xfrc_applied[:] = 0.0
    mujoco.mj_forward(m, d)            # kinematics and com-based quantities (mj_applyFT needs them)
    b = env["base_body"]
    C = np.eye(4)
    C[:3, :3] = d.xmat[b].reshape(3, 3)
    C[:3, 3] = d.xpos[b]
    return C


def test_mujoco_free_joint_generalized_force_is_mixed(mj):
    """The free joint's generalized force of a world force f at the base origin plus a torque is
    qfrc[:3] = f (world axes) and qfrc[3:6] = R^T torque (body axes): qfrc[:6] = linear_first of
    the mixed wrench (n_b about the base origin, f world). mj_applyFT is MuJoCo's own J^T map."""
    mujoco, m, d = mj["mujoco"], mj["m"], mj["d"]
    rng = np.random.default_rng(_seed("applyFT"))
    va = mj["va"]
    for _ in range(5):
        C = _mj_random_state(mj, rng)
        R, p = C[:3, :3], C[:3, 3]
        f, n_b = rng.standard_normal(3), rng.standard_normal(3)
        qf = np.zeros(m.nv)
        mujoco.mj_applyFT(m, d, f, R @ n_b, p, mj["base_body"], qf)
        np.testing.assert_allclose(qf[va:va + 6], linear_first(np.r_[n_b, f]), rtol=0, atol=1e-13)
        assert not np.any(qf[mj["dadr"]])                       # a force on the base moves no joint
        # and the power pairing with qvel = linear_first(V_mixed)
        Vm = angular_first(d.qvel[va:va + 6])
        assert abs(qf[va:va + 6] @ d.qvel[va:va + 6] - np.r_[n_b, f] @ Vm) < 1e-12


def test_mixed_forward_dynamics_vs_mujoco(mj):
    """qacc of mj_forward (free joint swapped to angular first, and the joints) == our FD with
    representation="mixed" fed the MuJoCo state and forces with nothing but the block swap.
    An xfrc_applied on link5 enters as ext_wrench in spatial/world form."""
    mujoco, m, d, model = mj["mujoco"], mj["m"], mj["d"], mj["model"]
    va, qadr, dadr = mj["va"], mj["qadr"], mj["dadr"]
    link = "link5"
    bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link)
    rng = np.random.default_rng(_seed("mjfd"))
    worst = 0.0
    for _ in range(20):
        C = _mj_random_state(mj, rng)
        d.qfrc_applied[:] = 5.0 * rng.standard_normal(m.nv)
        f_x, t_x = 2.0 * rng.standard_normal(3), rng.standard_normal(3)
        d.xfrc_applied[bid] = np.r_[f_x, t_x]     # world force at the body CoM, world torque
        mujoco.mj_forward(m, d)
        assert d.nefc == 0
        W_ext = np.r_[t_x + np.cross(d.xipos[bid], f_x), f_x]     # spatial: moment about world origin
        Vm = angular_first(d.qvel[va:va + 6])
        Wm = angular_first(d.qfrc_applied[va:va + 6])
        fd = gd.forward_dynamics(model, C, Vm[None], np.vstack([d.qpos[qadr], d.qvel[dadr]]), Wm[None],
                                 d.qfrc_applied[dadr][None], 0, gravity=GRAVITY,
                                 ext_wrench={link: W_ext[None]}, representation="mixed")
        # row 0 echoes the input to rounding (it is converted mixed -> spatial -> mixed inside)
        np.testing.assert_allclose(linear_first(fd.base_twist[0]), d.qvel[va:va + 6], rtol=0, atol=1e-13)
        got = np.r_[linear_first(fd.base_twist[1]), fd.q[2]]
        ref = np.r_[d.qacc[va:va + 6], d.qacc[dadr]]
        worst = max(worst, rm.rel_err(got, ref))
    d.xfrc_applied[:] = 0.0
    d.qfrc_applied[:] = 0.0
    assert worst <= RTOL_REF, worst


def test_mixed_inverse_dynamics_vs_mujoco(mj):
    """Our ID with representation="mixed" on the jet (qvel, qacc) swapped reproduces mj_inverse's
    qfrc_inverse (the total generalized force the robot needs): base wrench = angular_first of the
    free-joint part, tau = the joint part. With an ext_wrench, ours is what remains after the
    environment's share J^T xfrc (mj_applyFT) is subtracted."""
    mujoco, m, d, model = mj["mujoco"], mj["m"], mj["d"], mj["model"]
    va, qadr, dadr = mj["va"], mj["qadr"], mj["dadr"]
    link = "link3"
    bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link)
    rng = np.random.default_rng(_seed("mjid"))
    worst = 0.0
    for i in range(20):
        C = _mj_random_state(mj, rng)
        d.qacc[:] = 3.0 * rng.standard_normal(m.nv)
        mujoco.mj_inverse(m, d)
        need = d.qfrc_inverse.copy()
        Vj = np.vstack([angular_first(d.qvel[va:va + 6]), angular_first(d.qacc[va:va + 6])])
        qj = np.vstack([d.qpos[qadr], d.qvel[dadr], d.qacc[dadr]])
        kw = dict(gravity=GRAVITY, representation="mixed")
        if i % 2:      # every other state with an environment wrench on link3
            f_x, t_x = 2.0 * rng.standard_normal(3), rng.standard_normal(3)
            je = np.zeros(m.nv)
            mujoco.mj_applyFT(m, d, f_x, t_x, d.xipos[bid], bid, je)
            need -= je
            kw["ext_wrench"] = {link: np.r_[t_x + np.cross(d.xipos[bid], f_x), f_x][None]}
        idr = gd.inverse_dynamics(model, C, Vj, qj, 0, **kw)
        got = np.r_[linear_first(idr.base_wrench[0]), idr.tau[0]]
        worst = max(worst, rm.rel_err(got, np.r_[need[va:va + 6], need[dadr]]))
    assert worst <= RTOL_REF, worst


# ============================================================== 3. body vs Pinocchio LOCAL
_pin = rm.model_and_pin


@pytest.mark.parametrize("robot", ROBOTS)
def test_body_vs_pinocchio_local(robot):
    pin = pytest.importorskip("pinocchio")
    model, ref = _pin(robot)
    ref.set_gravity(GRAVITY)
    n, vidx = ref.n, ref.vidx
    rng = np.random.default_rng(_seed("pin", robot))
    worst_id = worst_fd = 0.0
    for _ in range(20):
        C = rm.random_pose(rng, pscale=2.0)
        q = rng.uniform(-np.pi, np.pi, n)
        q[np.array(model.joint_types) == "prismatic"] *= 0.1
        qp = ref.q_pin(C, q)
        v, a, f = (rng.standard_normal(ref.model.nv) for _ in range(3))   # pin-native v, a = dv/dt, force

        # pin's free-flyer a[:6] is the derivative of the LOCAL twist, i.e. row 1 of the body jet:
        # (i) our jet conversion of the same motion (spatial (V, Vdot) from the helper's own
        # derivation) agrees, and (ii) Pinocchio's LOCAL spatial acceleration of the base is a[:6].
        # (Its "classical" acceleration, R^T pddot, is the mixed row 1 linear part in base axes.)
        Vs = np.linalg.solve(ref.P(C)[:6, :6], v[:6])
        Vds = np.linalg.solve(ref.P(C)[:6, :6], a[:6])
        Vb = convert_twist(C, np.vstack([Vs, Vds]), "spatial", "body")
        np.testing.assert_allclose(linear_first(Vb), np.vstack([v[:6], a[:6]]), rtol=0, atol=1e-12)
        pin.forwardKinematics(ref.model, ref.data, qp, v, a)
        np.testing.assert_allclose(pin.getAcceleration(ref.model, ref.data, 1, pin.ReferenceFrame.LOCAL).vector,
                                   a[:6], rtol=0, atol=1e-13)
        Vm = convert_twist(C, np.vstack([Vs, Vds]), "spatial", "mixed")
        cls = pin.getClassicalAcceleration(ref.model, ref.data, 1, pin.ReferenceFrame.LOCAL).linear
        np.testing.assert_allclose(cls, C[:3, :3].T @ Vm[1, 3:], rtol=0, atol=1e-12)

        # inverse dynamics: body wrench == linear_first-swapped rnea[:6], tau == rnea[joints]
        rn = np.array(pin.rnea(ref.model, ref.data, qp, v, a))
        idr = gd.inverse_dynamics(model, C, np.vstack([angular_first(v[:6]), angular_first(a[:6])]),
                                  np.vstack([q, v[vidx], a[vidx]]), 0, gravity=GRAVITY, representation="body")
        worst_id = max(worst_id, rm.rel_err(np.r_[linear_first(idr.base_wrench[0]), idr.tau[0]],
                                            np.r_[rn[:6], rn[vidx]]))
        # forward dynamics: body twist row 1 == swapped aba[:6], joint accelerations aba[joints]
        dd = np.array(pin.aba(ref.model, ref.data, qp, v, f))
        fd = gd.forward_dynamics(model, C, angular_first(v[:6])[None], np.vstack([q, v[vidx]]),
                                 angular_first(f[:6])[None], f[vidx][None], 0, gravity=GRAVITY,
                                 representation="body")
        np.testing.assert_allclose(fd.base_twist[0], angular_first(v[:6]), rtol=0, atol=1e-13)   # echo, to rounding
        worst_fd = max(worst_fd, rm.rel_err(np.r_[linear_first(fd.base_twist[1]), fd.q[2]],
                                            np.r_[dd[:6], dd[vidx]]))
    assert worst_id <= RTOL_REF, worst_id
    assert worst_fd <= RTOL_REF, worst_fd


# ============================================================== 4. bad input
def test_bad_representation_and_nan_rows():
    model = _model("aerial_manipulator")
    n = model.n_joints
    rng = np.random.default_rng(_seed("bad"))
    order = 2
    C, V, q, W, tau, _ = _inputs(model, order, rng)
    for bad in ("world", "Spatial", "local"):
        with pytest.raises(ValueError, match="representation"):
            gd.inverse_dynamics(model, C, V, q, order, representation=bad)
        with pytest.raises(ValueError, match="representation"):
            gd.forward_dynamics(model, C, V[:1], q[:2], W, tau, order, representation=bad)
        with pytest.raises(ValueError, match="representation"):
            gd.hybrid_dynamics(model, C, V, q, tau, order, prescribed=[], representation=bad)

    Vm = convert_twist(C, V, "spatial", "mixed")
    # a NaN in a row the call uses
    for row in range(order + 2):                                   # ID uses rows 0..order+1
        Vn = Vm.copy()
        Vn[row, 4] = np.nan
        with pytest.raises(ValueError, match="base_twist"):
            gd.inverse_dynamics(model, C, Vn, q, order, representation="mixed")
        with pytest.raises(ValueError, match="base_twist"):
            gd.hybrid_dynamics(model, C, Vn, q, tau, order, prescribed=[], representation="mixed")
    Vn = Vm.copy()
    Vn[0, 0] = np.inf
    with pytest.raises(ValueError, match="base_twist"):          # FD uses row 0
        gd.forward_dynamics(model, C, Vn, q[:2], W, tau, order, representation="mixed")
    with pytest.raises(ValueError, match="base_twist"):
        gd.hybrid_dynamics(model, C, Vn, q, tau, order, prescribed=[], base_wrench=W, representation="mixed")
    with pytest.raises(ValueError, match="base_twist"):          # too few rows
        gd.inverse_dynamics(model, C, Vm[:order + 1], q, order, representation="mixed")

    # rows beyond the used ones are not read (CONVENTIONS.md), and the caller's arrays are untouched
    Vx = np.vstack([Vm, np.full((2, 6), np.nan)])
    id_ok = gd.inverse_dynamics(model, C, Vx, q, order, representation="mixed")
    np.testing.assert_allclose(id_ok.base_wrench,
                               gd.inverse_dynamics(model, C, Vm, q, order, representation="mixed").base_wrench,
                               rtol=0, atol=0)
    Vf = Vm.copy()
    Vf[1:] = np.nan
    Wm = W.copy()
    args = [a.copy() for a in (C, Vf, q, Wm, tau)]
    fd = gd.forward_dynamics(model, C, Vf, q, Wm, tau, order, representation="mixed")
    assert np.isfinite(fd.base_twist).all() and np.isfinite(fd.q).all() and fd.q.shape == (order + 3, n)
    for a, b in zip((C, Vf, q, Wm, tau), args):
        np.testing.assert_array_equal(a, b)
