"""Every bad input listed in CONVENTIONS.md raises ValueError naming the argument."""
import re

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.lie import exp_se3

R = 2


@pytest.fixture(scope="module")
def model(aerial_manipulator):
    return aerial_manipulator


@pytest.fixture
def state(model):
    rng = np.random.default_rng(3)
    n = model.n_joints
    return dict(C=exp_se3(rng.normal(size=6)), V=rng.normal(size=(R + 2, 6)), q=rng.normal(size=(R + 3, n)),
                W=rng.normal(size=(R + 1, 6)), tau=rng.normal(size=(R + 1, n)))


def _same(a, b):
    """Equal up to rounding: a call may take the allocation-free hot path or the validating path
    (the same arithmetic compiled in two contexts; with FMA contraction and reassociation they can
    differ in the last bits, measured <= 3e-13 relative on these random order-2 states)."""
    assert np.abs(np.asarray(a) - b).max() <= 1e-12 * max(1.0, np.abs(b).max())


def _raises(arg, fn, *a, **k):
    with pytest.raises(ValueError, match=rf"^{re.escape(arg)}(?![A-Za-z0-9_])"):
        fn(*a, **k)


def test_inverse_shapes_rows_and_order(model, state):
    s = state
    _raises("base_pose", gd.inverse_dynamics, model, np.eye(3), s["V"], s["q"], order=R)
    _raises("base_twist", gd.inverse_dynamics, model, s["C"], s["V"][:R + 1], s["q"], order=R)
    _raises("base_twist", gd.inverse_dynamics, model, s["C"], s["V"][:, :5], s["q"], order=R)
    _raises("q", gd.inverse_dynamics, model, s["C"], s["V"], s["q"][:R + 2], order=R)
    _raises("q", gd.inverse_dynamics, model, s["C"], s["V"], s["q"][:, :-1], order=R)
    _raises("order", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=-1)
    _raises("order", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=1.5)
    _raises("order", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=True)
    _raises("gravity", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=R, gravity=(0, 0))
    _raises("model", gd.inverse_dynamics, "robot.urdf", s["C"], s["V"], s["q"], order=R)
    _raises("q", gd.inverse_dynamics, model, s["C"], s["V"], [["a"] * model.n_joints] * (R + 3), order=R)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_in_used_rows(model, state, bad):
    s = state
    for arg in ("C", "V", "q"):
        x = {k: v.copy() for k, v in s.items()}
        x[arg][min(1, x[arg].shape[0] - 1), 2] = bad
        name = {"C": "base_pose", "V": "base_twist", "q": "q"}[arg]
        _raises(name, gd.inverse_dynamics, model, x["C"], x["V"], x["q"], order=R)
    _raises("gravity", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=R, gravity=(0, bad, -9.81))
    ew = {model.link_names[2]: np.full((R + 1, 6), bad)}
    _raises("ext_wrench", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=R, ext_wrench=ew)
    _raises("ext_torque", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=R,
            ext_torque=np.full((R + 1, model.n_joints), bad))
    W = s["W"].copy()
    W[R, 0] = bad
    _raises("base_wrench", gd.forward_dynamics, model, s["C"], s["V"], s["q"], W, s["tau"], order=R)
    T = s["tau"].copy()
    T[0, 0] = bad
    _raises("tau", gd.forward_dynamics, model, s["C"], s["V"], s["q"], s["W"], T, order=R)


def test_rows_beyond_use_are_not_read(model, state):
    s = state
    V = np.vstack([s["V"], np.full((2, 6), np.nan)])
    q = np.vstack([s["q"], np.full((2, model.n_joints), np.nan)])
    a = gd.inverse_dynamics(model, s["C"], V, q, order=R)
    b = gd.inverse_dynamics(model, s["C"], s["V"], s["q"], order=R)
    _same(a.base_wrench, b.base_wrench)
    # forward dynamics reads only rows 0 of the twist and 0, 1 of q
    V1 = np.vstack([s["V"][:1], np.full((3, 6), np.nan)])
    q1 = np.vstack([s["q"][:2], np.full((3, model.n_joints), np.nan)])
    f = gd.forward_dynamics(model, s["C"], V1, q1, s["W"], s["tau"], order=R)
    assert np.all(np.isfinite(f.base_twist)) and np.all(np.isfinite(f.q))


def test_pose_not_rigid(model, state):
    s = state
    for C in (np.diag([2.0, 1, 1, 1]), np.diag([1.0, 1, -1, 1]), np.vstack([s["C"][:3], [0.1, 0, 0, 1]])):
        _raises("base_pose", gd.inverse_dynamics, model, C, s["V"], s["q"], order=R)
        _raises("base_pose", gd.forward_dynamics, model, C, s["V"], s["q"], s["W"], s["tau"], order=R)
        _raises("base_pose", gd.mass_matrix, model, C, s["q"][0])
    C = s["C"].copy()
    C[:3, :3] *= 1 + 1e-9          # within the 1e-6 tolerance: accepted
    gd.inverse_dynamics(model, C, s["V"], s["q"], order=R)


def test_unknown_names(model, state):
    s = state
    _raises("ext_wrench", gd.inverse_dynamics, model, s["C"], s["V"], s["q"], order=R,
            ext_wrench={"no_such_link": np.zeros((R + 1, 6))})
    _raises("prescribed", gd.hybrid_dynamics, model, s["C"], s["V"], s["q"], s["tau"], order=R,
            prescribed=["no_such_joint"])
    _raises("prescribed", gd.hybrid_dynamics, model, s["C"], s["V"], s["q"], s["tau"], order=R,
            prescribed=np.ones(model.n_joints + 1, dtype=bool))
    with pytest.raises(ValueError, match="no_such_joint"):
        model.joint_index("no_such_joint")


def test_ext_wrench_rows(model, state):
    s = state
    _raises(f"ext_wrench[{model.link_names[1]!r}]", gd.inverse_dynamics, model, s["C"], s["V"], s["q"],
            order=R, ext_wrench={model.link_names[1]: np.zeros((R, 6))})


def test_hybrid_and_forward_requirements(model, state):
    s = state
    _raises("base_wrench", gd.forward_dynamics, model, s["C"], s["V"], s["q"], None, s["tau"], order=R)
    _raises("base_wrench", gd.forward_dynamics, model, s["C"], s["V"], s["q"], s["W"][:R], s["tau"], order=R)
    _raises("tau", gd.forward_dynamics, model, s["C"], s["V"], s["q"], s["W"], s["tau"][:R], order=R)
    _raises("tau", gd.hybrid_dynamics, model, s["C"], s["V"], s["q"], None, order=R, prescribed=[])
    _raises("prescribed", gd.hybrid_dynamics, model, s["C"], s["V"], s["q"], s["tau"], order=R, prescribed=None)
    # prescribed joints need q rows up to order+2
    _raises("q", gd.hybrid_dynamics, model, s["C"], s["V"], s["q"][:2], s["tau"], order=R,
            prescribed=[model.joint_names[0]])
    # base motion given needs base_twist rows up to order+1
    _raises("base_twist", gd.hybrid_dynamics, model, s["C"], s["V"][:1], s["q"], s["tau"], order=R, prescribed=[])


def test_empty_prescribed_means_forward_dynamics(model, state):
    s = state
    f = gd.forward_dynamics(model, s["C"], s["V"], s["q"], s["W"], s["tau"], order=R)
    for empty in ([], (), np.zeros(model.n_joints, dtype=bool)):
        h = gd.hybrid_dynamics(model, s["C"], s["V"], s["q"], s["tau"], order=R, prescribed=empty,
                               base_wrench=s["W"])
        _same(h.base_twist, f.base_twist)
        _same(h.q, f.q)
        np.testing.assert_array_equal(h.base_wrench, s["W"])   # given entries are echoed


def test_inputs_never_modified(model, state):
    s = state
    copies = {k: v.copy() for k, v in s.items()}
    gd.inverse_dynamics(model, s["C"], s["V"], s["q"], order=R,
                        ext_wrench={model.link_names[1]: s["W"]}, ext_torque=s["tau"])
    gd.forward_dynamics(model, s["C"], s["V"], s["q"], s["W"], s["tau"], order=R)
    gd.hybrid_dynamics(model, s["C"], s["V"], s["q"], s["tau"], order=R, prescribed=model.joint_names[:2])
    gd.coriolis_matrix(model, s["C"], s["V"][0], s["q"][0], s["q"][1])
    for k in s:
        np.testing.assert_array_equal(s[k], copies[k])


def test_lists_and_int_arrays_are_accepted(model, state):
    s = state
    a = gd.inverse_dynamics(model, s["C"].tolist(), s["V"].tolist(), s["q"].tolist(), order=R)
    b = gd.inverse_dynamics(model, s["C"], s["V"], s["q"], order=R)
    _same(a.tau, b.tau)
    z = gd.inverse_dynamics(model, np.eye(4, dtype=int), np.zeros((2, 6), dtype=int),
                            np.zeros((3, model.n_joints), dtype=int))
    assert np.all(np.isfinite(z.base_wrench))
