"""The flat map of the under-actuated aerial manipulator (``gd.flat_inverse_dynamics``) and the
CoM jets (``gd.center_of_mass``), each against something that does not share their code:

* **body force = (0, 0, T)** at every order r = 0..5: the spatial wrench jet converted to the
  body frame by ``gd.convert_wrench`` (the Leibniz sums of :mod:`representations`, another code
  path) has the force ``(0, 0, T^(k))`` with the thrust jet of ``|m (c'' - g)|``; its moment equals
  ``body_torque``. Bound 1e-12 relative to the row's scale (measured ~2e-15: a few hundred flops of
  rounding per coefficient).
* **Pinocchio's ``centerOfMass(q, v, a)``** of the returned state equals ``com`` rows 0..2 (bound
  1e-12 relative; measured ~1e-16), and ``gd.center_of_mass`` equals Pinocchio on random states.
* **Chebyshev differentiation** of the returned pose, joints, thrust, body torque and joint
  torques (order 0, at 26 Chebyshev nodes over +-0.06 s) equals the twist, thrust, torque and tau
  jets. The differentiation error is calibrated in the same test on the input CoM jet, an analytic
  function with known derivatives: each order must match within 100x that calibrated floor (plus
  a 1e-12 relative floor).
* **Forward dynamics** (H-GABI-FBS, paper Alg. 3) driven by the thrust, body torque and tau jets
  (converted to a spatial wrench jet by ``gd.convert_wrench``) recovers the twist and joint jets
  (bound 1e-8 relative: FD is amplified by the conditioning of M, about 1e4, see CONVENTIONS.md).
* **Arm locked:** the map equals the hand-derived closed form of a rigid multirotor
  (:func:`geodyn_ros.control.quadrotor.rigid_flat_map`: omega from the jerk, omega' from the snap)
  to 1e-12.
* **FlatWorkspace** (the preallocated entry of geodyn_node's flat mode) gives
  ``flat_inverse_dynamics``'s results bit for bit (the same kernel; the public function's
  correctness is what the tests above establish), into the same arrays on every call, for the
  default and another gravity, a mimic-enforced model and list inputs, and raises its ValueErrors.
"""
import math
import warnings

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.quadrotor import rigid_flat_map
from geodyn_ros.lie import hat
from geodyn_ros.trajectories import figure_eight_reference
from reference_models import (AERIAL_MANIPULATOR, PinRef, chebyshev_derivatives, chebyshev_nodes,
                              example_robot_data_dir, pin, random_state)

ARM = ("J2", "J3", "J4", "J5", "J6", "J7")


class Sines:
    """Random smooth flat outputs: every coordinate a sum of two sines with exact derivatives."""

    def __init__(self, seed, n, scale=1.0):
        rng = np.random.default_rng(seed)
        self.ca = rng.uniform(-0.5, 0.5, (2, 3)) * scale
        self.cw = rng.uniform(0.8, 2.5, (2, 3))
        self.cp = rng.uniform(0, 2 * np.pi, (2, 3))
        self.ya, self.yw, self.yp = rng.uniform(0.3, 1.0, 2), rng.uniform(0.5, 2.0, 2), rng.uniform(0, 6, 2)
        self.qa = rng.uniform(-0.7, 0.7, (2, n))
        self.qw = rng.uniform(1.5, 4.0, (2, n))
        self.qp = rng.uniform(0, 2 * np.pi, (2, n))

    @staticmethod
    def _jet(t, a, w, p, rows):
        return np.array([np.sum(a * w ** k * np.sin(w * t + p + k * np.pi / 2), axis=0) for k in range(rows)])

    def __call__(self, t, r):
        com = self._jet(t, self.ca, self.cw, self.cp, r + 5)
        com[0, 2] += 1.0
        return com, self._jet(t, self.ya, self.yw, self.yp, r + 3), self._jet(t, self.qa, self.qw, self.qp, r + 3)


@pytest.fixture(scope="module")
def model():
    return gd.load_urdf(AERIAL_MANIPULATOR)


def _scale(x):
    """Per-row scale for relative bounds: max(1, max |row|)."""
    x = np.asarray(x, float).reshape(len(x), -1)
    return np.maximum(1.0, np.abs(x).max(axis=1))


# ------------------------------------------------------------------------- identities

@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
def test_body_force_is_thrust_at_every_order(model, r):
    flat = Sines(1, model.n_joints)
    for t in (0.0, 0.7, 2.3):
        com, yaw, q = flat(t, r)
        res = gd.flat_inverse_dynamics(model, com, yaw, q, r)
        assert res.base_twist.shape == (r + 2, 6) and res.base_wrench.shape == (r + 1, 6)
        assert res.tau.shape == (r + 1, 6) and res.thrust.shape == (r + 1,) and res.body_torque.shape == (r + 1, 3)
        Wb = gd.convert_wrench(res.base_pose, res.base_wrench, res.base_twist, "spatial", "body")
        expect = np.zeros((r + 1, 3))
        expect[:, 2] = res.thrust
        s = _scale(Wb)[:, None]
        assert np.all(np.abs(Wb[:, 3:] - expect) <= 1e-12 * s)
        assert np.all(np.abs(Wb[:, :3] - res.body_torque) <= 1e-12 * s)
        # the thrust is |m (c'' - g)| and the yaw of R is psi; q is echoed
        a = com[2] - np.array([0.0, 0.0, -9.81])
        assert res.thrust[0] == pytest.approx(model.total_mass * np.linalg.norm(a), rel=1e-14)
        R = res.base_pose[:3, :3]
        assert math.atan2(R[1, 0], R[0, 0]) == pytest.approx(yaw[0], abs=1e-14)
        assert np.array_equal(res.q, q[:r + 3])
        assert np.allclose(R.T @ R, np.eye(3), atol=1e-14) and np.linalg.det(R) > 0


def test_hover_is_the_weight_with_no_torque(model):
    r = 2
    com, yaw, q = np.zeros((r + 5, 3)), np.zeros(r + 3), np.zeros((r + 3, 6))
    com[0] = (0.3, -0.2, 1.5)
    res = gd.flat_inverse_dynamics(model, com, yaw, q, r)
    assert res.thrust == pytest.approx([model.total_mass * 9.81, 0, 0], abs=1e-12)
    assert np.allclose(res.base_pose[:3, :3], np.eye(3), atol=0)
    assert np.allclose(res.body_torque, 0, atol=1e-13) and np.allclose(res.base_twist, 0, atol=0)
    # the base sits so that the system CoM is at com[0]
    c = gd.center_of_mass(model, res.base_pose, None, q[:1])
    assert np.allclose(c[0], com[0], atol=1e-15)


@pytest.mark.skipif(pin is None, reason="pinocchio is not installed")
def test_state_has_the_requested_centre_of_mass_pinocchio(model):
    pr = PinRef(AERIAL_MANIPULATOR, model.joint_names)
    flat = Sines(2, model.n_joints)
    for t in (0.0, 1.1, 3.7):
        com, yaw, q = flat(t, 1)
        res = gd.flat_inverse_dynamics(model, com, yaw, q, 1)
        C, V = res.base_pose, res.base_twist
        pin.centerOfMass(pr.model, pr.data, pr.q_pin(C, q[0]), pr.v_pin(C, V[0], q[1]), pr.a_pin(C, V[1], q[2]))
        for k, got in enumerate((pr.data.com[0], pr.data.vcom[0], pr.data.acom[0])):
            assert np.allclose(got, com[k], rtol=0, atol=1e-12 * max(1.0, np.abs(com[k]).max())), k


@pytest.mark.skipif(pin is None, reason="pinocchio is not installed")
def test_center_of_mass_matches_pinocchio(model):
    pr = PinRef(AERIAL_MANIPULATOR, model.joint_names)
    rng = np.random.default_rng(5)
    for _ in range(4):
        s = random_state(rng, model.n_joints, pscale=2.0)
        V = np.stack([s.V, s.Vd])
        Q = np.stack([s.q, s.qd, s.qdd])
        c = gd.center_of_mass(model, s.C, V, Q, order=2)
        pin.centerOfMass(pr.model, pr.data, pr.q_pin(s.C, s.q), pr.v_pin(s.C, s.V, s.qd),
                         pr.a_pin(s.C, s.Vd, s.qdd))
        for k, got in enumerate((pr.data.com[0], pr.data.vcom[0], pr.data.acom[0])):
            assert np.allclose(c[k], got, rtol=0, atol=1e-13 * max(1.0, np.abs(got).max())), k
        assert np.array_equal(gd.center_of_mass(model, s.C, None, Q[:1])[0], c[0])


# ------------------------------------------------------------------------- exact jets

def _twist_from_pose_derivatives(D):
    """Spatial twist jet V^(0..K-2) from pose derivatives C^(0..K-1): C' = hat(V) C, so
    C^(k+1) = sum_j binom(k, j) hat(V^(j)) C^(k-j)."""
    C0inv = np.linalg.inv(D[0])
    out = []
    for k in range(len(D) - 1):
        X = D[k + 1].copy()
        for j in range(k):
            Hj = np.zeros((4, 4))
            Hj[:3, :3] = hat(out[j][:3])
            Hj[:3, 3] = out[j][3:]
            X -= math.comb(k, j) * Hj @ D[k - j]
        X = X @ C0inv
        out.append(np.array([X[2, 1], X[0, 2], X[1, 0], X[0, 3], X[1, 3], X[2, 3]]))
    return np.array(out)


@pytest.mark.parametrize("r", [1, 3])
def test_jets_equal_chebyshev_differentiation(model, r):
    flat = Sines(3, model.n_joints)
    t0, h, N = 0.4, 0.06, 26
    ts = chebyshev_nodes(t0, h, N)
    samples = [gd.flat_inverse_dynamics(model, *flat(t, 0), order=0) for t in ts]
    com_s = np.array([flat(t, 0)[0][0] for t in ts])
    com0, yaw0, q0 = flat(t0, r)
    ref = gd.flat_inverse_dynamics(model, com0, yaw0, q0, r)
    # calibrated differentiation floor per order: the same Chebyshev procedure on the analytic CoM
    dcom = chebyshev_derivatives(com_s, h, r + 2)
    floor = [np.abs(dcom[k] - com0[k]).max() / max(1.0, np.abs(com0[k]).max()) for k in range(r + 3)]

    def check(name, got, want):
        for k in range(len(want)):
            scale = max(1.0, np.abs(want[k]).max())
            bound = 100 * floor[k] + 1e-12
            err = np.abs(np.asarray(got[k]) - want[k]).max() / scale
            assert err <= bound, f"{name}^({k}): relative error {err:.3g} > {bound:.3g}"

    D = chebyshev_derivatives(np.array([s.base_pose for s in samples]), h, r + 2)
    check("base_twist", _twist_from_pose_derivatives(D), ref.base_twist)
    check("q", chebyshev_derivatives(np.array([s.q[0] for s in samples]), h, r + 2), ref.q)
    check("thrust", chebyshev_derivatives(np.array([s.thrust[0] for s in samples]), h, r), ref.thrust)
    check("body_torque", chebyshev_derivatives(np.array([s.body_torque[0] for s in samples]), h, r),
          ref.body_torque)
    check("tau", chebyshev_derivatives(np.array([s.tau[0] for s in samples]), h, r), ref.tau)
    check("base_wrench", chebyshev_derivatives(np.array([s.base_wrench[0] for s in samples]), h, r),
          ref.base_wrench)


@pytest.mark.parametrize("r", [0, 2, 3])
def test_forward_dynamics_from_thrust_torques_recovers_the_motion(model, r):
    flat = Sines(4, model.n_joints)
    for t in (0.2, 1.9):
        com, yaw, q = flat(t, r)
        res = gd.flat_inverse_dynamics(model, com, yaw, q, r)
        Wb = np.zeros((r + 1, 6))
        Wb[:, :3] = res.body_torque
        Wb[:, 5] = res.thrust
        Ws = gd.convert_wrench(res.base_pose, Wb, res.base_twist, "body", "spatial")
        fd = gd.forward_dynamics(model, res.base_pose, res.base_twist[:1], q[:2], Ws, res.tau, r)
        for k in range(r + 2):
            assert np.abs(fd.base_twist[k] - res.base_twist[k]).max() <= 1e-8 * _scale(res.base_twist)[k], k
        for k in range(r + 3):
            assert np.abs(fd.q[k] - q[k]).max() <= 1e-8 * _scale(q)[k], k


def _rigid_body(model):
    """Mass, CoM (base axes) and inertia about the CoM (base axes) of a model with the base at the
    identity and q = 0 (here: every joint locked, one body)."""
    m = model.total_mass
    c = (model.mass[:, None] * model.com).sum(axis=0) / m
    J = np.zeros((3, 3))
    for i in range(model.n_bodies):
        d = model.com[i] - c
        J += model.inertia[i] + model.mass[i] * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, J


def test_arm_locked_equals_the_rigid_closed_form():
    locked = gd.load_urdf(AERIAL_MANIPULATOR, locked_joints=list(ARM))
    assert locked.n_joints == 0
    m, c, J = _rigid_body(locked)
    assert np.linalg.norm(c) > 0.05          # the CoM is well below the base origin: the offset term matters
    for speed in (1.0, 3.0):
        for t in (0.3, 2.1, 5.7, 9.0):
            ref = figure_eight_reference(t, 2, speed=speed)
            res = gd.flat_inverse_dynamics(locked, ref.com, ref.yaw, None, 2)
            rf = rigid_flat_map(m, J, c, ref.com[2], ref.com[3], ref.com[4], *ref.yaw[:3])
            R = res.base_pose[:3, :3]
            assert np.allclose(R, rf.rotation, rtol=0, atol=1e-14)
            assert np.allclose(R.T @ res.base_twist[0, :3], rf.omega, rtol=0, atol=1e-12)
            assert np.allclose(R.T @ res.base_twist[1, :3], rf.alpha, rtol=0, atol=1e-12)
            assert np.allclose(res.thrust, rf.thrust, rtol=1e-13, atol=0)
            assert np.allclose(res.body_torque[0], rf.torque, rtol=0, atol=1e-12)
            assert np.allclose(res.base_pose[:3, 3] + R @ c, ref.com[0], atol=1e-14)


def test_the_popular_yaw_rate_is_only_approximate():
    """FLATNESS.md's pitfall: r = psi' (z_W . z_B) is not the exact body yaw rate when tilted."""
    locked = gd.load_urdf(AERIAL_MANIPULATOR, locked_joints=list(ARM))
    ref = figure_eight_reference(1.3, 0, speed=3.0)
    res = gd.flat_inverse_dynamics(locked, ref.com, ref.yaw, None, 0)
    R = res.base_pose[:3, :3]
    r_exact = (R.T @ res.base_twist[0, :3])[2]
    r_popular = ref.yaw[1] * R[2, 2]
    assert abs(r_exact - r_popular) > 1e-3 * abs(r_exact)


# ------------------------------------------------------------------------- trajectories, layouts

def test_trajectory_axis_equals_single_samples(model):
    flat = Sines(6, model.n_joints)
    r = 2
    ts = np.linspace(0, 3, 40)
    jets = [flat(t, r) for t in ts]
    com = np.array([j[0] for j in jets])
    yaw = np.array([j[1] for j in jets])
    q = np.array([j[2] for j in jets])
    res = gd.flat_inverse_dynamics(model, com, yaw, q, r)
    assert res.base_pose.shape == (40, 4, 4) and res.thrust.shape == (40, r + 1)
    for i in (0, 17, 39):
        one = gd.flat_inverse_dynamics(model, com[i], yaw[i], q[i], r)
        for a, b in zip(res, one):   # the parallel kernel is compiled separately (FMA contraction may differ)
            assert np.allclose(a[i], b, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(b).max()))


def test_input_layouts_give_the_same_result(model):
    flat = Sines(7, model.n_joints)
    com, yaw, q = flat(0.5, 2)
    ref = gd.flat_inverse_dynamics(model, com, yaw, q, 2)
    variants = [
        (com.tolist(), yaw.tolist(), q.tolist()),
        (np.asfortranarray(com), yaw, np.asfortranarray(q)),
        (np.vstack([com, np.full((2, 3), np.nan)]), np.r_[yaw, np.nan], np.vstack([q, np.full((1, 6), np.nan)])),
        (np.ascontiguousarray(com.T).T, yaw[::-1][::-1].copy(), q),
    ]
    ro = [a.copy() for a in (com, yaw, q)]
    for a in ro:
        a.setflags(write=False)
    variants.append(tuple(ro))
    for c, y, qq in variants:
        res = gd.flat_inverse_dynamics(model, c, y, qq, 2)
        for a, b in zip(res, ref):
            assert np.array_equal(a, b)
    f32 = gd.flat_inverse_dynamics(model, com.astype(np.float32), yaw.astype(np.float32), q.astype(np.float32), 2)
    assert np.allclose(f32.thrust, ref.thrust, rtol=1e-5)


def test_other_gravity(model):
    flat = Sines(8, model.n_joints)
    com, yaw, q = flat(0.1, 1)
    g = (0.3, -0.2, -3.71)
    res = gd.flat_inverse_dynamics(model, com, yaw, q, 1, gravity=g)
    assert res.thrust[0] == pytest.approx(model.total_mass * np.linalg.norm(com[2] - g), rel=1e-14)
    Wb = gd.convert_wrench(res.base_pose, res.base_wrench, res.base_twist, "spatial", "body")
    assert np.allclose(Wb[:, 3:5], 0, atol=1e-12) and np.allclose(Wb[:, 5], res.thrust, rtol=1e-13)
    idr = gd.inverse_dynamics(model, res.base_pose, res.base_twist, q, 1, gravity=g)
    assert np.allclose(idr.base_wrench, res.base_wrench, rtol=0, atol=1e-12)


def test_mimic_enforced_model():
    path = example_robot_data_dir() + "/panda_description/urdf/panda.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gd.URDFWarning)
        mim = gd.load_urdf(path, mimic=True)
        free = gd.load_urdf(path)
    flat = Sines(9, mim.n_joints, scale=0.5)
    com, yaw, q = flat(0.3, 2)
    res = gd.flat_inverse_dynamics(mim, com, yaw, q, 2)
    from geodyn_ros.algorithms.constrained import expand_mimic, project_mimic
    qf = expand_mimic(mim, q)
    ref = gd.flat_inverse_dynamics(free, com, yaw, qf, 2)
    assert np.allclose(res.base_pose, ref.base_pose, atol=1e-15) and np.allclose(res.base_twist, ref.base_twist)
    assert np.allclose(res.tau, project_mimic(mim, ref.tau), atol=1e-12)
    # the enforced model's own inverse dynamics of the returned motion agrees
    idr = gd.inverse_dynamics(mim, res.base_pose, res.base_twist, q, 2)
    assert np.allclose(idr.base_wrench, res.base_wrench, atol=1e-10) and np.allclose(idr.tau, res.tau, atol=1e-10)


@pytest.mark.parametrize("r", [0, 1, 2])
def test_flat_workspace_equals_flat_inverse_dynamics(model, r):
    ws = gd.algorithms.flat.FlatWorkspace(model, r)
    flat = Sines(11 + r, model.n_joints)
    arrays = [id(a) for a in ws.result]
    for t in (0.0, 0.4, 1.3):
        com, yaw, q = flat(t, r)
        res = ws.compute(com, yaw, q)
        assert res is ws.result and [id(a) for a in res] == arrays   # preallocated, reused
        for a, b in zip(res, gd.flat_inverse_dynamics(model, com, yaw, q, r)):
            assert a.shape == b.shape and np.array_equal(a, b)
    com, yaw, q = flat(2.0, r)   # lists take the general path: the same numbers
    for a, b in zip(ws.compute(com.tolist(), yaw.tolist(), q.tolist()), gd.flat_inverse_dynamics(model, com, yaw, q, r)):
        assert np.array_equal(a, b)
    g = (0.3, -0.2, -3.71)
    wg = gd.algorithms.flat.FlatWorkspace(model, r, gravity=g)
    for a, b in zip(wg.compute(com, yaw, q), gd.flat_inverse_dynamics(model, com, yaw, q, r, gravity=g)):
        assert np.array_equal(a, b)
    com[2] = (0, 0, -9.81)
    with pytest.raises(ValueError, match=r"^com: free fall"):
        ws.compute(com, yaw, q)
    with pytest.raises(ValueError, match="^com: expected shape"):
        ws.compute(com[:r + 4], yaw, q)
    with pytest.raises(ValueError, match="^gravity"):
        gd.algorithms.flat.FlatWorkspace(model, r, gravity=(0, 0, np.nan))


def test_flat_workspace_mimic_enforced_model():
    path = example_robot_data_dir() + "/panda_description/urdf/panda.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gd.URDFWarning)
        mim = gd.load_urdf(path, mimic=True)
    com, yaw, q = Sines(9, mim.n_joints, scale=0.5)(0.3, 2)
    for a, b in zip(gd.algorithms.flat.FlatWorkspace(mim, 2).compute(com, yaw, q),
                    gd.flat_inverse_dynamics(mim, com, yaw, q, 2)):
        assert np.array_equal(a, b)


# ------------------------------------------------------------------------- bad input

def test_free_fall_and_yaw_singularity_name_the_sample(model):
    r = 1
    com, yaw, q = np.zeros((r + 5, 3)), np.zeros(r + 3), np.zeros((r + 3, 6))
    com[2] = (0, 0, -9.81)
    with pytest.raises(ValueError, match=r"^com: free fall"):
        gd.flat_inverse_dynamics(model, com, yaw, q, r)
    T = 5
    coms = np.zeros((T, r + 5, 3))
    coms[3, 2] = (0, 0, -9.81)
    with pytest.raises(ValueError, match=r"^com\[3\]: free fall at sample 3"):
        gd.flat_inverse_dynamics(model, coms, np.zeros((T, r + 3)), np.zeros((T, r + 3, 6)), r)
    # thrust along +y while the yaw is 0: z_B = y_C (a 90 deg roll)
    com2 = np.zeros((r + 5, 3))
    com2[2] = (0, 9.81, -9.81)
    with pytest.raises(ValueError, match=r"^yaw: yaw singularity"):
        gd.flat_inverse_dynamics(model, com2, yaw, q, r)
    coms = np.zeros((T, r + 5, 3))
    coms[4] = com2
    with pytest.raises(ValueError, match=r"^yaw\[4\]: yaw singularity at sample 4"):
        gd.flat_inverse_dynamics(model, coms, np.zeros((T, r + 3)), np.zeros((T, r + 3, 6)), r)
    # near, not at, the singularities: finite and consistent
    com2[2] = (0, 9.81, -9.81 + 1e-3)
    res = gd.flat_inverse_dynamics(model, com2, yaw, q, 0)
    assert np.all(np.isfinite(res.body_torque))


@pytest.mark.parametrize("kw, pattern", [
    (dict(com=np.zeros((4, 3))), r"^com: expected shape \(>= 5, 3\)"),
    (dict(com=np.zeros((6, 2))), r"^com: expected shape"),
    (dict(yaw=np.zeros(2)), r"^yaw: expected shape \(>= 3\)"),
    (dict(yaw=np.zeros((3, 1))), r"^yaw: expected shape"),
    (dict(q=np.zeros((2, 6))), r"^q: expected shape \(>= 3, 6\)"),
    (dict(q=np.zeros((3, 5))), r"^q: expected shape"),
    (dict(q=None), r"^q: required"),
    (dict(com="abc"), r"^com: expected real numbers"),
    (dict(order=-1), r"^order: must be >= 0"),
    (dict(order=1.5), r"^order: expected a non-negative integer"),
    (dict(gravity=(0, 0)), r"^gravity: expected a 3-vector"),
    (dict(model="robot"), r"^model: expected a geodyn_ros Model"),
])
def test_bad_arguments_are_named(model, kw, pattern):
    args = dict(model=model, com=np.zeros((5, 3)), yaw=np.zeros(3), q=np.zeros((3, 6)), order=0)
    args.update(kw)
    with pytest.raises(ValueError, match=pattern):
        gd.flat_inverse_dynamics(args.pop("model"), args.pop("com"), args.pop("yaw"), args.pop("q"), **args)


@pytest.mark.parametrize("which", ["com", "yaw", "q"])
def test_nan_in_the_rows_used_is_named(model, which):
    com, yaw, q = np.zeros((5, 3)), np.zeros(3), np.zeros((3, 6))
    {"com": com, "yaw": yaw, "q": q}[which][1] = np.nan
    with pytest.raises(ValueError, match=rf"^{which}: contains NaN or Inf in the rows used"):
        gd.flat_inverse_dynamics(model, com, yaw, q, 0)
    with pytest.raises(ValueError, match=rf"^{which}\[2\]: contains NaN"):
        T = 3
        coms, yaws, qs = np.zeros((T, 5, 3)), np.zeros((T, 3)), np.zeros((T, 3, 6))
        {"com": coms, "yaw": yaws, "q": qs}[which][2, 1] = np.nan
        gd.flat_inverse_dynamics(model, coms, yaws, qs, 0)


def test_fixed_base_model_is_refused():
    fixed = gd.load_urdf(AERIAL_MANIPULATOR, fixed_base=True)
    with pytest.raises(ValueError, match=r"^model: loaded with fixed_base=True; the flat map needs a floating base"):
        gd.flat_inverse_dynamics(fixed, np.zeros((5, 3)), np.zeros(3), np.zeros((3, 6)), 0)


def test_inputs_are_not_modified(model):
    com, yaw, q = Sines(10, 6)(0.2, 1)
    copies = [a.copy() for a in (com, yaw, q)]
    for _ in range(2):   # validating path, then the hot path
        gd.flat_inverse_dynamics(model, com, yaw, q, 1)
    for a, b in zip((com, yaw, q), copies):
        assert np.array_equal(a, b)
