"""Tests of bench/core/casadi_baseline.py, the CasADi SX + nested-jtimes AD baseline (Table 4 / Fig. 4).

They also serve as an independent check of geodyn_ros: the symbolic order-0 inverse dynamics is
a separate spatial Newton–Euler implementation, and its r-th time derivative is obtained by
automatic differentiation, not by the recursive higher-order algorithm under test.

Error measure: ``rel(a, b) = max|a - b| / max|b|`` over the whole (6 + n) output vector (norm-wise;
single components can be near cancellation).

* Order 0, ``<= 1e-12``: both sides evaluate the same physics in float64 with O(10^2..10^3) flops
  per output on states of moderate magnitude, so they agree to a few units of round-off
  (observed ~1e-16); 1e-12 leaves four decades of margin while any modelling or convention error
  (frame, sign, ordering) would show up at O(1).
* Orders 1..3, ``<= 1e-10``: the AD graph is ~3x larger per order and the derivative rows of
  random states multiply up, so more round-off accumulates (observed ~1e-15); still far below
  any error of the recursion (a missing Leibniz term is O(1)).
"""
import pathlib
import shutil
import sys

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.lie import exp_se3

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT / "bench" / "core") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench" / "core"))
import casadi_baseline as cb  # noqa: E402  (bench/core/casadi_baseline.py)
import make_tree_urdf  # noqa: E402  (bench/core/make_tree_urdf.py)


@pytest.fixture(scope="module")
def small_tree():
    """Branched benchmark tree with 5 branches x 2 bodies (N = 11, n = 10)."""
    return gd.load_urdf(make_tree_urdf.branched_tree_urdf(2, 5))


def _rel(a, b):
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def _state(model, r, rng):
    C = exp_se3(rng.normal(size=6))
    V = rng.normal(size=(r + 2, 6))
    Q = rng.normal(size=(r + 3, model.n_joints))
    return C, V, Q


def _models(request, which):
    return request.getfixturevalue("aerial_manipulator" if which == "am" else "small_tree")


@pytest.mark.parametrize("which", ["am", "tree"])
def test_order0_symbolic_id_matches_geodyn(request, which):
    model = _models(request, which)
    n = model.n_joints
    x_sym, out_sym, h = cb.build_id_sx(model)
    assert x_sym.shape == (12 + 12 + 3 * n, 1) and out_sym.shape == (6 + n, 1)
    f = h["function"]
    rng = np.random.default_rng(11)
    for _ in range(5):
        C, V, Q = _state(model, 0, rng)
        got = np.asarray(f(cb.id0_inputs(model, C, V, Q))).ravel()
        ref = gd.inverse_dynamics(model, C, V, Q, order=0)
        want = np.concatenate([ref.base_wrench[0], ref.tau[0]])
        assert _rel(got, want) <= 1e-12
    # also with a non-default gravity vector
    C, V, Q = _state(model, 0, rng)
    grav = (0.3, -1.2, -9.7)
    _, _, h2 = cb.build_id_sx(model, gravity=grav)
    got = np.asarray(h2["function"](cb.id0_inputs(model, C, V, Q))).ravel()
    ref = gd.inverse_dynamics(model, C, V, Q, order=0, gravity=grav)
    assert _rel(got, np.concatenate([ref.base_wrench[0], ref.tau[0]])) <= 1e-12


def test_hover_needs_weight(aerial_manipulator):
    """At rest at home the base must carry the total weight: W = (c x m g, -m g) up to sign."""
    model = aerial_manipulator
    f = cb.build_id_sx(model)[2]["function"]
    x = cb.id0_inputs(model, np.eye(4), np.zeros((2, 6)), np.zeros((3, model.n_joints)))
    out = np.asarray(f(x)).ravel()
    np.testing.assert_allclose(out[3:6], [0.0, 0.0, 9.81 * model.total_mass], rtol=1e-14)


@pytest.mark.parametrize("which", ["am", "tree"])
@pytest.mark.parametrize("r", [1, 2, 3])
def test_jtimes_derivative_matches_recursive_higher_order(request, which, r):
    model = _models(request, which)
    n = model.n_joints
    f = cb.build_derivative_function(model, r)
    assert f.size1_in(0) == cb.input_size(model, r) == 12 + 6 * (r + 2) + n * (r + 3)
    assert f.size1_out(0) == 6 + n
    assert f.is_a("SXFunction")   # evaluated by the SX virtual machine (jit off)
    rng = np.random.default_rng(100 + r)
    for _ in range(3):
        C, V, Q = _state(model, r, rng)
        got = np.asarray(f(cb.pack_inputs(model, C, V, Q, r))).ravel()
        ref = gd.inverse_dynamics(model, C, V, Q, order=r)
        assert _rel(got[:6], ref.base_wrench[r]) <= 1e-10
        assert _rel(got[6:], ref.tau[r]) <= 1e-10


def test_cse_variant_same_values(small_tree):
    """The optional stage-wise CSE variant gives the same derivative with a smaller graph."""
    model, r = small_tree, 2
    f = cb.build_derivative_function(model, r)
    g = cb.build_derivative_function(model, r, cse=True)
    assert g.n_instructions() < f.n_instructions()
    x = cb.pack_inputs(model, *_state(model, r, np.random.default_rng(9)), r)
    assert _rel(np.asarray(g(x)), np.asarray(f(x))) <= 1e-12


def test_pack_inputs_layout(aerial_manipulator):
    model = aerial_manipulator
    r = 2
    rng = np.random.default_rng(3)
    C, V, Q = _state(model, r + 1, rng)   # extra rows must be ignored
    x = cb.pack_inputs(model, C, V, Q, r)
    assert x.shape == (cb.input_size(model, r),)
    np.testing.assert_array_equal(x[:9].reshape(3, 3).T, C[:3, :3])   # column-major vec(R)
    np.testing.assert_array_equal(x[9:12], C[:3, 3])
    np.testing.assert_array_equal(x[12:12 + 6 * (r + 2)], V[:r + 2].ravel())
    np.testing.assert_array_equal(x[12 + 6 * (r + 2):], Q[:r + 3].ravel())
    with pytest.raises(ValueError, match="V_rows"):
        cb.pack_inputs(model, C, V[:r + 1], Q, r)
    with pytest.raises(ValueError, match="q_rows"):
        cb.pack_inputs(model, C, V, Q[:r + 2], r)


def test_build_result_and_growth(aerial_manipulator):
    res = [cb.build_derivative(aerial_manipulator, r) for r in range(3)]
    assert all(b.status == "ok" and b.n_nodes > 0 and b.build_s >= 0 for b in res)
    assert res[0].n_nodes < res[1].n_nodes < res[2].n_nodes
    pred = cb.predict_next([b.n_nodes for b in res[:2]])
    assert 0.5 * res[2].n_nodes < pred < 2.0 * res[2].n_nodes
    assert cb.predict_next([1.0]) is None


def test_build_with_budget(aerial_manipulator):
    model = aerial_manipulator
    ok = cb.build_with_budget(model, 1, timeout_s=60)
    assert ok.status == "ok" and ok.n_nodes > 0
    C, V, Q = _state(model, 1, np.random.default_rng(5))
    ref = gd.inverse_dynamics(model, C, V, Q, order=1)
    got = np.asarray(ok.f(cb.pack_inputs(model, C, V, Q, 1))).ravel()
    assert _rel(got, np.concatenate([ref.base_wrench[1], ref.tau[1]])) <= 1e-10
    late = cb.build_with_budget(model, 8, timeout_s=0.05)
    assert late.status == "timeout" and late.f is None and "not built within" in late.message


def test_time_eval(aerial_manipulator):
    model = aerial_manipulator
    f = cb.build_derivative_function(model, 0)
    C, V, Q = _state(model, 0, np.random.default_rng(6))
    us = cb.time_eval(f, cb.pack_inputs(model, C, V, Q, 0), reps=20, repeats=3)
    assert 0.0 < us < 1e5


@pytest.mark.skipif(shutil.which("gcc") is None and not pathlib.Path("/usr/bin/gcc").exists(),
                    reason="gcc not available: compiled-C baseline cannot be built")
def test_compiled_c_equals_sx(aerial_manipulator, tmp_path):
    model = aerial_manipulator
    r = 2
    f = cb.build_derivative_function(model, r)
    fc = cb.compile_c(f, tmp_path)
    assert fc is not None
    rng = np.random.default_rng(7)
    for _ in range(3):
        C, V, Q = _state(model, r, rng)
        x = cb.pack_inputs(model, C, V, Q, r)
        a = np.asarray(f(x)).ravel()
        b = np.asarray(fc(x)).ravel()
        assert _rel(b, a) <= 1e-12
