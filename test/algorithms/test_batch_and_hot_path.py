"""Trajectory evaluation (leading time axis) and the allocation-free hot path.

The trajectory entries and the hot path run the same compiled core as the validating single-call
path; they are checked against it sample by sample (which is itself checked against Pinocchio,
finite differences and the paper's vectors in other test files). Tolerance 1e-12 relative: the
same arithmetic compiled in another context may round differently under the kernels' FMA and
reassociation flags (observed differences are 0 to a few ulps).
"""
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.trajectories import table3_reference
from geodyn_ros.lie import exp_se3

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "core"))
from make_tree_urdf import branched_tree_urdf  # noqa: E402

REL = 1e-12


def _close(a, b, rel=REL):
    scale = max(1.0, float(np.abs(b).max()))
    assert np.abs(a - b).max() <= rel * scale, (np.abs(a - b).max(), scale)


@pytest.fixture(scope="module", params=["aerial", "tree"])
def model(request, aerial_manipulator, tmp_path_factory):
    if request.param == "aerial":
        return aerial_manipulator
    path = tmp_path_factory.mktemp("tree") / "tree.urdf"
    path.write_text(branched_tree_urdf(3))
    return gd.load_urdf(path)


def _trajectory(model, T, r, seed=0):
    rng = np.random.default_rng(seed)
    n = model.n_joints
    return dict(C=np.stack([exp_se3(rng.normal(size=6)) for _ in range(T)]),
                V=rng.normal(size=(T, r + 2, 6)), q=rng.normal(size=(T, r + 3, n)),
                W=rng.normal(size=(T, r + 1, 6)) * 10, tau=rng.normal(size=(T, r + 1, n)),
                ew=rng.normal(size=(T, r + 1, 6)), et=rng.normal(size=(T, r + 1, n)))


@pytest.mark.parametrize("r", [0, 3])
def test_inverse_batch_equals_single_calls(model, r):
    T = 41
    s = _trajectory(model, T, r)
    link = model.link_names[-1]
    g = (0.3, -0.2, -9.7)
    res = gd.inverse_dynamics(model, s["C"], s["V"], s["q"], order=r, gravity=g,
                              ext_wrench={link: s["ew"]}, ext_torque=s["et"])
    assert res.base_wrench.shape == (T, r + 1, 6) and res.tau.shape == (T, r + 1, model.n_joints)
    for t in range(T):
        one = gd.inverse_dynamics(model, s["C"][t], s["V"][t], s["q"][t], order=r, gravity=g,
                                  ext_wrench={link: s["ew"][t]}, ext_torque=s["et"][t])
        _close(res.base_wrench[t], one.base_wrench)
        _close(res.tau[t], one.tau)


@pytest.mark.parametrize("r", [0, 3])
def test_forward_batch_equals_single_calls(model, r):
    T = 37
    s = _trajectory(model, T, r, seed=1)
    res = gd.forward_dynamics(model, s["C"], s["V"], s["q"], s["W"], s["tau"], order=r,
                              ext_torque=s["et"])
    assert res.base_twist.shape == (T, r + 2, 6) and res.q.shape == (T, r + 3, model.n_joints)
    for t in range(T):
        one = gd.forward_dynamics(model, s["C"][t], s["V"][t], s["q"][t], s["W"][t], s["tau"][t],
                                  order=r, ext_torque=s["et"][t])
        _close(res.base_twist[t], one.base_twist)
        _close(res.q[t], one.q)


def test_batch_round_trip_on_table3(aerial_manipulator):
    """ID of the Table 3 trajectory, then FD of its wrench and torques, returns the motion."""
    m = aerial_manipulator
    r = 3
    ts = np.linspace(0.0, 3.0, 64)
    refs = [table3_reference(t, r) for t in ts]
    C = np.stack([x.base_pose for x in refs])
    V = np.stack([x.base_twist for x in refs])
    q = np.stack([x.q for x in refs])
    inv = gd.inverse_dynamics(m, C, V, q, order=r)
    fwd = gd.forward_dynamics(m, C, V, q, inv.base_wrench, inv.tau, order=r)
    _close(fwd.base_twist, V[:, :r + 2], rel=1e-9)
    _close(fwd.q, q[:, :r + 3], rel=1e-9)


def test_batch_independent_of_thread_count(aerial_manipulator):
    m = aerial_manipulator
    s = _trajectory(m, 200, 2, seed=2)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = gd.inverse_dynamics(m, s["C"], s["V"], s["q"], order=2)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = gd.inverse_dynamics(m, s["C"], s["V"], s["q"], order=2)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one.tau, many.tau)
    np.testing.assert_array_equal(one.base_wrench, many.base_wrench)


def test_batch_errors_name_argument_and_sample(aerial_manipulator):
    m = aerial_manipulator
    n = m.n_joints
    s = _trajectory(m, 30, 1, seed=3)
    q = s["q"].copy()
    q[17, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^q\[17\]: contains NaN"):
        gd.inverse_dynamics(m, s["C"], s["V"], q, order=1)
    C = s["C"].copy()
    C[4, 0, 0] = 2.0
    with pytest.raises(ValueError, match=r"^base_pose\[4\]: is not a rigid"):
        gd.inverse_dynamics(m, C, s["V"], s["q"], order=1)
    with pytest.raises(ValueError, match=r"^base_twist: expected shape \(30, >= 3, 6\)"):
        gd.inverse_dynamics(m, s["C"], s["V"][:29], s["q"], order=1)
    with pytest.raises(ValueError, match=r"^q: expected shape \(30, >= 4, 6\)"):
        gd.inverse_dynamics(m, s["C"], s["V"], s["q"][:, :3], order=1)
    with pytest.raises(ValueError, match=r"^tau: expected shape"):
        gd.forward_dynamics(m, s["C"], s["V"], s["q"], s["W"], s["tau"][:, :, :n - 1], order=1)
    tau = s["tau"].copy()
    tau[3, 0, 0] = np.inf
    with pytest.raises(ValueError, match=r"^tau\[3\]: contains NaN or Inf"):
        gd.forward_dynamics(m, s["C"], s["V"], s["q"], s["W"], tau, order=1)
    with pytest.raises(ValueError, match=r"^ext_wrench\['nope'\]|^ext_wrench: unknown link"):
        gd.inverse_dynamics(m, s["C"], s["V"], s["q"], order=1, ext_wrench={"nope": s["ew"]})


def test_hot_path_declines_unusual_inputs_and_gives_the_same_answer(aerial_manipulator):
    """After a first call has made the work buffer, inputs the compiled signature does not take
    (Fortran order, strided views, read-only, float32, lists) still give the validated answer,
    and bad shapes still raise the argument's ValueError."""
    m = aerial_manipulator
    r = 2
    s = {k: v[0] for k, v in _trajectory(m, 1, r, seed=4).items()}
    ref = gd.inverse_dynamics(m, s["C"], s["V"], s["q"], order=r)   # makes the work buffer
    again = gd.inverse_dynamics(m, s["C"], s["V"], s["q"], order=r)  # hot path
    np.testing.assert_array_equal(ref.tau, again.tau)
    ro = s["q"].copy()
    ro.setflags(write=False)
    wide = np.zeros((r + 3, 2 * m.n_joints))
    wide[:, ::2] = s["q"]
    variants = [np.asfortranarray(s["q"]), wide[:, ::2], ro, s["q"].astype(np.float32), s["q"].tolist()]
    for qv in variants:
        out = gd.inverse_dynamics(m, s["C"], s["V"], qv, order=r)
        _close(out.tau, ref.tau, rel=1e-5 if getattr(qv, "dtype", None) == np.float32 else REL)
    with pytest.raises(ValueError, match=r"^q: expected shape"):
        gd.inverse_dynamics(m, s["C"], s["V"], s["q"][:r + 2], order=r)
    with pytest.raises(ValueError, match=r"^base_pose: expected shape"):
        gd.inverse_dynamics(m, s["C"][:3], s["V"], s["q"], order=r)
    q = s["q"].copy()
    q[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^q: contains NaN"):
        gd.inverse_dynamics(m, s["C"], s["V"], q, order=r)
    # forward dynamics hot path, same contract
    f1 = gd.forward_dynamics(m, s["C"], s["V"], s["q"], s["W"], s["tau"], order=r)
    f2 = gd.forward_dynamics(m, s["C"], s["V"], s["q"], s["W"], s["tau"], order=r)
    np.testing.assert_array_equal(f1.q, f2.q)
    f3 = gd.forward_dynamics(m, s["C"], s["V"], s["q"], np.asfortranarray(s["W"]), s["tau"].tolist(), order=r)
    _close(f3.q, f1.q)
    with pytest.raises(ValueError, match=r"^base_wrench: expected shape"):
        gd.forward_dynamics(m, s["C"], s["V"], s["q"], s["W"][:r], s["tau"], order=r)
    W = s["W"].copy()
    W[r, 1] = np.nan
    with pytest.raises(ValueError, match=r"^base_wrench: contains NaN"):
        gd.forward_dynamics(m, s["C"], s["V"], s["q"], W, s["tau"], order=r)


def test_results_are_fresh_arrays(aerial_manipulator):
    """The hot path reuses its work buffer, never the caller-visible results."""
    m = aerial_manipulator
    s = {k: v[0] for k, v in _trajectory(m, 1, 1, seed=5).items()}
    a = gd.inverse_dynamics(m, s["C"], s["V"], s["q"], order=1)
    b = gd.inverse_dynamics(m, s["C"], s["V"] * 2, s["q"], order=1)
    assert not np.shares_memory(a.tau, b.tau) and not np.shares_memory(a.base_wrench, b.base_wrench)
    assert not np.array_equal(a.tau, b.tau)
