"""Base twist / wrench representations and the conversion of their jets (``geodyn_ros.algorithms.representations``).

References independent of the module:
* the definitions applied to values along a smooth SE(3) motion -- spatial twist jet with exactly
  known derivatives (``reference_models.SmoothTrajectory``), pose by a 4th-order Magnus integrator
  -- then differentiated by exact differentiation of a Chebyshev interpolant (the reference of
  ``test_higher_order_vs_fd.py``, whose accuracy per order, ``REF_RTOL``, is measured there);
* power invariance: ``d^k/dt^k (W . V)`` is the same in every representation, at every order.
Round trips A -> B -> A and chains A -> B -> C = A -> C are rounding-level (1e-12).
"""
import os
import sys
from math import comb

import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_models as rm  # noqa: E402

from geodyn_ros import lie  # noqa: E402
from geodyn_ros.algorithms.representations import (REPRESENTATIONS, angular_first, convert_twist,  # noqa: E402
                                        convert_wrench, linear_first, twist_transform)

REF_RTOL = {0: 1e-12, 1: 2e-11, 2: 3e-10, 3: 3e-9, 4: 5e-8, 5: 3e-7}   # test_higher_order_vs_fd.py
N_NODES, HALF_WIDTH, MAGNUS_STEPS = 24, 0.6, 1000   # as test_higher_order_vs_fd.py
PAIRS = [(a, b) for a in REPRESENTATIONS for b in REPRESENTATIONS if a != b]


def _definition(C, V, rep):
    """Twist in ``rep`` from the spatial twist V at pose C, straight from the definitions."""
    R, r = C[:3, :3], C[:3, 3]
    w, vs = V[:3], V[3:]
    rdot = vs - np.cross(r, w)
    return {"spatial": V, "body": lie.Ad_inv(C) @ V, "hybrid": np.r_[w, rdot],
            "mixed": np.r_[R.T @ w, rdot]}[rep]


def _wrench_definition(C, W, rep):
    """Wrench in ``rep`` from the spatial wrench W (moment about the world origin) at pose C."""
    R, r = C[:3, :3], C[:3, 3]
    n, f = W[:3], W[3:]
    n_o = n - np.cross(r, f)                         # moment about the base origin, world axes
    return {"spatial": W, "body": np.r_[R.T @ n_o, R.T @ f], "hybrid": np.r_[n_o, f],
            "mixed": np.r_[R.T @ n_o, f]}[rep]


def _motion(seed):
    rng = np.random.default_rng(seed)
    tr = rm.SmoothTrajectory(rng, 0)
    C0 = rm.random_pose(rng, pscale=2.0)
    t0 = float(rng.uniform(-1, 1))
    Wpoly = rng.standard_normal((6, 6)) / np.array([1, 1, 2, 6, 24, 120])[:, None]
    return rng, tr, C0, t0, Wpoly


def test_twist_jets_against_differentiated_definitions():
    for seed in range(3):
        _, tr, C0, t0, _ = _motion(seed)
        ts = rm.chebyshev_nodes(t0, HALF_WIDTH, N_NODES)
        Cs = rm.integrate_pose(tr.V, C0, t0, ts, steps=MAGNUS_STEPS)
        Vjet = tr.V_jet(t0, 6)
        for rep in REPRESENTATIONS:
            ref = rm.chebyshev_derivatives(np.array([_definition(C, tr.V(t), rep) for C, t in zip(Cs, ts)]),
                                           HALF_WIDTH, 5)
            ours = convert_twist(C0, Vjet, "spatial", rep)
            for k in range(6):
                e = rm.rel_err(ours[k], ref[k])
                assert e <= REF_RTOL[k], f"{rep} row {k}: {e:.2e}"


def test_wrench_jets_against_differentiated_definitions():
    for seed in range(3):
        _, tr, C0, t0, Wp = _motion(seed)
        ts = rm.chebyshev_nodes(t0, HALF_WIDTH, N_NODES)
        Cs = rm.integrate_pose(tr.V, C0, t0, ts, steps=MAGNUS_STEPS)

        def W(t, k=0):   # a polynomial spatial wrench, derivatives exact
            return sum(Wp[i] * np.prod(range(i - k + 1, i + 1)) * t ** (i - k) for i in range(k, 6))
        Wjet = np.array([W(t0, k) for k in range(6)])
        Vjet = tr.V_jet(t0, 5)
        for rep in REPRESENTATIONS:
            ref = rm.chebyshev_derivatives(np.array([_wrench_definition(C, W(t), rep) for C, t in zip(Cs, ts)]),
                                           HALF_WIDTH, 5)
            ours = convert_wrench(C0, Wjet, Vjet, "spatial", rep)
            for k in range(6):
                e = rm.rel_err(ours[k], ref[k])
                assert e <= REF_RTOL[k], f"{rep} row {k}: {e:.2e}"


@pytest.mark.parametrize("a, b", PAIRS)
def test_round_trips_and_chains(a, b):
    # a fixed seed per pair (hash() of strings changes with PYTHONHASHSEED: the draws were not reproducible)
    rng = np.random.default_rng(zlib.crc32(f"{a}-{b}".encode()))
    for _ in range(5):
        C = rm.random_pose(rng, pscale=3.0)
        V = rm.random_jet(rng, 7, 6, growth=1.5)
        W = rm.random_jet(rng, 7, 6, scale=10.0, growth=1.5)
        # rounding scales with the largest intermediate jet (spatial moments about a far origin,
        # rows growing with binomial factors): the 7-row Leibniz recursion sums up to 2^6
        # binomial-weighted products per row, ~64 K eps ~ 1e-13 per unit of norm growth; the worst
        # of 1200 draws (every pair) was 2.3e-13 for twists, 2.4e-14 for wrenches: bound 1e-12
        Vb = convert_twist(C, V, a, b)
        gv = 1e-12 * (1 + np.linalg.norm(Vb) / np.linalg.norm(V))
        assert rm.rel_err(convert_twist(C, Vb, b, a), V) <= gv
        Wb = convert_wrench(C, W, V, a, b, twist_representation=a)
        gw = 1e-13 * (1 + np.linalg.norm(Wb) / np.linalg.norm(W)) * (1 + np.linalg.norm(V))
        assert rm.rel_err(convert_wrench(C, Wb, Vb, b, a, twist_representation=b), W) <= gw
        for c in REPRESENTATIONS:
            Vc = convert_twist(C, V, a, c)
            assert rm.rel_err(convert_twist(C, Vc, c, b), Vb) <= 1e-13 * (1 + np.linalg.norm(Vc) / np.linalg.norm(Vb)) * 10
        # power invariance, every derivative order: d^k/dt^k (W . V) = sum_j binom(k, j) W^(j) . V^(k-j)
        for k in range(7):
            pa = sum(comb(k, j) * W[j] @ V[k - j] for j in range(k + 1))
            pb = sum(comb(k, j) * Wb[j] @ Vb[k - j] for j in range(k + 1))
            assert abs(pa - pb) <= 1e-11 * max(1.0, np.linalg.norm(W) * np.linalg.norm(V))


def test_values_match_definitions_and_row_by_row_is_wrong():
    rng = np.random.default_rng(3)
    C = rm.random_pose(rng, pscale=2.0)
    V = rm.random_jet(rng, 3, 6)
    for rep in REPRESENTATIONS:
        out = convert_twist(C, V, "spatial", rep)
        np.testing.assert_allclose(out[0], _definition(C, V[0], rep), atol=1e-14)
        np.testing.assert_allclose(twist_transform(C, rep) @ lie.Ad_inv(C) @ V[0], out[0], atol=1e-14)
        naive = twist_transform(C, rep) @ lie.Ad_inv(C) @ V[2]
        if rep != "spatial":
            assert np.linalg.norm(naive - out[2]) > 1e-3     # the Leibniz terms matter
    # the first derivative converts like the value only between spatial and body (ad_V V = 0)
    Vb = convert_twist(C, V, "spatial", "body")
    np.testing.assert_allclose(Vb[1], lie.Ad_inv(C) @ V[1], atol=1e-13)


def test_linear_first_helpers_and_pinocchio_local():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 6))
    np.testing.assert_array_equal(linear_first(x)[:, :3], x[:, 3:])
    np.testing.assert_array_equal(angular_first(linear_first(x)), x)
    # body == Pinocchio's LOCAL velocity: v_pin = linear_first(V_b)
    ref = rm.PinRef(rm.AERIAL_MANIPULATOR, ("J2", "J3", "J4", "J5", "J6", "J7"))
    import pinocchio as pin
    for _ in range(5):
        s = rm.random_state(rng, ref.n)
        v_pin = ref.v_pin(s.C, s.V, s.qd)
        Vb = convert_twist(s.C, s.V, "spatial", "body")[0]
        np.testing.assert_allclose(linear_first(Vb), v_pin[:6], atol=1e-13)
        # and LOCAL_WORLD_ALIGNED is hybrid: (rdot, w) = linear_first(V_hybrid)
        pin.forwardKinematics(ref.model, ref.data, ref.q_pin(s.C, s.q), v_pin)
        jid = 1
        lwa = pin.getVelocity(ref.model, ref.data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        Vh = convert_twist(s.C, s.V, "spatial", "hybrid")[0]
        np.testing.assert_allclose(linear_first(Vh), lwa.vector, atol=1e-13)


def test_bad_input():
    C = np.eye(4)
    with pytest.raises(ValueError, match="from_rep"):
        convert_twist(C, np.zeros(6), "world", "body")
    with pytest.raises(ValueError, match="to_rep"):
        convert_twist(C, np.zeros(6), "body", "local")
    with pytest.raises(ValueError, match="base_twist"):
        convert_twist(C, np.zeros((2, 5)), "body", "spatial")
    with pytest.raises(ValueError, match="base_twist"):
        convert_twist(C, np.full(6, np.nan), "body", "spatial")
    with pytest.raises(ValueError, match="base_pose"):
        convert_twist(np.diag([1, 2, 1, 1.0]), np.zeros(6), "body", "spatial")
    with pytest.raises(ValueError, match="base_twist"):   # too few twist rows for a 3-row wrench jet
        convert_wrench(C, np.zeros((3, 6)), np.zeros((1, 6)), "body", "spatial")
    with pytest.raises(ValueError, match="twist_representation"):
        convert_wrench(C, np.zeros((1, 6)), None, "body", "spatial", twist_representation="x")
    V = np.ones((2, 6))
    V0 = V.copy()
    convert_twist(C, V, "body", "mixed")
    np.testing.assert_array_equal(V, V0)
