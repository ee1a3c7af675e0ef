"""Tests of geodyn_ros.trajectories (Table 3 references with exact derivatives).

Independent checks: every derivative row is compared with an 8th-order central finite
difference of the row below, and the spatial twist with the definition V = vee(dC/dt C^-1)
differentiated numerically from the pose alone.
"""
import math

import numpy as np
import pytest

from geodyn_ros.trajectories import (
    TABLE3_ETA,
    TABLE3_Q0,
    Reference,
    spatial_twist_jet,
    table3_reference,
    table3_times,
)

# 8th-order central stencil for the first derivative, offsets -4..4.
_STENCIL = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0.0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
_OFFSETS = np.arange(-4, 5)

# Table 3 plus a faster variant (parameters overridden) whose derivatives do not decay with k,
# so that an error in a high row cannot hide below the finite-difference noise.
FAST = dict(radius=0.7, omega_position=1.3, omega_yaw=1.7, yaw_amplitude=0.9,
            q0=[0.1, -0.2, 0.3], eta=[1.0, -0.5, 2.0], T=1.1)
CASES = [({}, 0.05, 1.0 / 0.3), (FAST, 0.002, 1.0)]  # (params, step h, time scale 1/omega_max)
TIMES = [0.0, 0.37, 4.2, 17.5, 29.99]
ORDER = 6


def _central_diff(fun, t, h):
    return sum(c * fun(t + o * h) for c, o in zip(_STENCIL, _OFFSETS) if c != 0.0) / h


def _vee(m):
    return np.array([m[2, 1], m[0, 2], m[1, 0], m[0, 3], m[1, 3], m[2, 3]])


@pytest.mark.parametrize("params,h,tscale", CASES)
@pytest.mark.parametrize("t", TIMES)
@pytest.mark.parametrize("field", ["base_twist", "q"])
def test_every_row_is_derivative_of_row_below(params, h, tscale, t, field):
    """Row k == d/dt row k-1, checked by an 8th-order central difference.

    Tolerance: the stencil's truncation error is ~ h^8 omega^9 |f| / 630 and its rounding error
    ~ 1.5 eps |f| / h, with |f| the size of row k-1 and omega <= 1/tscale the fastest frequency.
    For both cases both terms are < 1e-12 |f| / tscale, so we require
    |fd - exact| <= 1e-9 * max(|row k|, |row k-1| / tscale) + 1e-15: three orders of magnitude
    of margin, yet a wrong sign, factor or missing Leibniz term (all O(|row k|)) would fail.
    """
    exact = getattr(table3_reference(t, ORDER, **params), field)
    for k in range(1, exact.shape[0]):
        fd = _central_diff(lambda s: getattr(table3_reference(s, ORDER, **params), field)[k - 1], t, h)
        scale = max(np.max(np.abs(exact[k])), np.max(np.abs(exact[k - 1])) / tscale)
        err = np.max(np.abs(fd - exact[k]))
        assert err <= 1e-9 * scale + 1e-15, (field, k, err, scale)


@pytest.mark.parametrize("params,h,tscale", CASES)
@pytest.mark.parametrize("t", TIMES)
def test_twist_is_vee_of_pose_derivative(params, h, tscale, t):
    """base_twist[0] == vee(dC/dt C^-1), with dC/dt by finite differences of base_pose only.

    Same error budget as above with |f| = |C| ~ max(1, radius): tolerance 1e-9 (absolute),
    the pose entries and the twist both being O(1).
    """
    ref = table3_reference(t, 0, **params)
    dC = _central_diff(lambda s: table3_reference(s, 0, **params).base_pose, t, h)
    V = _vee(dC @ np.linalg.inv(ref.base_pose))
    assert np.max(np.abs(V - ref.base_twist[0])) <= 1e-9
    # and the pose is a rigid transform with a pure yaw
    C = ref.base_pose
    np.testing.assert_allclose(C[:3, :3] @ C[:3, :3].T, np.eye(3), atol=1e-15)
    np.testing.assert_array_equal(C[3], [0, 0, 0, 1])
    np.testing.assert_array_equal(C[2, :3], [0, 0, 1])
    assert C[2, 3] == 0.0


def test_table3_values():
    """Spot values straight from Table 3."""
    ref = table3_reference(0.0, 0)
    np.testing.assert_allclose(ref.q[0], np.deg2rad([10, -5, 15, -10, 7, -12]), atol=1e-15)
    np.testing.assert_allclose(ref.q[1], 0.0, atol=1e-15)  # half-cosine starts at rest
    expected_pose = np.eye(4)
    expected_pose[0, 3] = 1.0  # on the circle at (R, 0, 0), zero yaw
    np.testing.assert_allclose(ref.base_pose, expected_pose, atol=1e-15)
    end = table3_reference(30.0, 0)
    np.testing.assert_allclose(end.q[0], TABLE3_Q0 + TABLE3_ETA, atol=1e-14)
    # quarter of the yaw period: psi = 25 deg
    quarter = table3_reference(7.5, 0)
    psi = math.atan2(quarter.base_pose[1, 0], quarter.base_pose[0, 0])
    assert psi == pytest.approx(math.radians(25.0), abs=1e-14)
    # speed along the circle R w1 = 2 pi / 20
    p = table3_reference(3.3, 1)
    pdot = p.base_twist[0, 3:] - np.cross(p.base_pose[:3, 3], p.base_twist[0, :3])
    assert np.linalg.norm(pdot) == pytest.approx(2 * math.pi / 20, rel=1e-14)


@pytest.mark.parametrize("order", [0, 1, 5, 10])
def test_shapes(order):
    ref = table3_reference(1.23, order)
    assert isinstance(ref, Reference)
    assert ref.base_pose.shape == (4, 4)
    assert ref.base_twist.shape == (order + 2, 6)
    assert ref.q.shape == (order + 3, 6)
    fast = table3_reference(1.23, order, **FAST)
    assert fast.q.shape == (order + 3, 3)
    # lower orders are prefixes of higher ones
    big = table3_reference(1.23, order + 2)
    np.testing.assert_array_equal(big.base_twist[: order + 2], ref.base_twist)
    np.testing.assert_array_equal(big.q[: order + 3], ref.q)


def test_times():
    t = table3_times()
    assert t.shape == (3000,)
    assert t[0] == 0.0 and t[-1] == pytest.approx(29.99, abs=1e-12)
    np.testing.assert_allclose(np.diff(t), 0.01, atol=1e-12)
    assert table3_times(0.05, 0.5).shape == (10,)
    assert table3_times(0.3, 1.0).shape == (4,)  # 0, .3, .6, .9


def test_spatial_twist_jet_matches_definition_with_rotating_position():
    """A generic (non-planar) jet against a direct Leibniz expansion written differently:
    v = pdot - w x p, differentiated term by term with polynomial p(t), w(t)."""
    rng = np.random.default_rng(0)
    K = 4
    # p(t) = sum a_i t^i, w(t) = sum b_i t^i; derivatives at t0 from the polynomials
    a = rng.normal(size=(K + 4, 3))
    b = rng.normal(size=(K + 3, 3))
    t0 = 0.3

    def jet(coef, n, t):
        rows = []
        for k in range(n):
            rows.append(sum(math.perm(i, k) * coef[i] * t ** (i - k) for i in range(k, len(coef))))
        return np.array(rows)

    V = spatial_twist_jet(jet(a, K + 2, t0), jet(b, K + 1, t0))
    assert V.shape == (K + 1, 6)
    # v(t) = pdot - w x p is a polynomial; differentiate its coefficients directly
    deg = len(a) + len(b)
    v_coef = np.zeros((deg, 3))
    for i in range(1, len(a)):
        v_coef[i - 1] += i * a[i]
    for i in range(len(b)):
        for j in range(len(a)):
            v_coef[i + j] -= np.cross(b[i], a[j])
    np.testing.assert_allclose(V[:, 3:], jet(v_coef, K + 1, t0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(V[:, :3], jet(b, K + 1, t0), rtol=0, atol=0)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(t=0.0, order=-1), "order"),
        (dict(t=0.0, order=1.5), "order"),
        (dict(t=0.0, order=True), "order"),
        (dict(t=float("nan"), order=1), "t"),
        (dict(t=float("inf"), order=1), "t"),
        (dict(t="x", order=1), "t"),
        (dict(t=0.0, order=1, T=0.0), "T"),
        (dict(t=0.0, order=1, radius=float("nan")), "radius"),
        (dict(t=0.0, order=1, q0=[0.0, 1.0], eta=[1.0]), "q0"),
        (dict(t=0.0, order=1, eta=[[1.0]]), "eta"),
    ],
)
def test_bad_arguments_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        table3_reference(**kwargs)


def test_bad_times_and_jets_raise():
    with pytest.raises(ValueError, match="dt"):
        table3_times(dt=0.0)
    with pytest.raises(ValueError, match="T"):
        table3_times(T=float("inf"))
    with pytest.raises(ValueError, match="p_jet"):
        spatial_twist_jet(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="w_jet"):
        spatial_twist_jet(np.zeros((2, 3)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="p_jet"):
        spatial_twist_jet(np.full((2, 3), np.nan), np.zeros((1, 3)))


def test_exported_constants_are_read_only():
    with pytest.raises(ValueError):
        TABLE3_Q0[0] = 1.0


# ---- the start ramp (time warp) ---------------------------------------------------------------

def test_start_ramp_derivatives_are_the_derivatives_of_its_polynomial():
    """Inside the ramp tau(t) is a polynomial of t: its derivatives from numpy's Polynomial (built
    here from u^m (1-u)^m, not the module's) equal start_ramp's rows to 1e-10 (relative to the row's
    peak, float cancellation of a degree-15 polynomial); tau(T) = T/2 and the rows match the constant-speed values at both ends (continuity)."""
    from numpy.polynomial import Polynomial
    from geodyn_ros.trajectories import START_RAMP_SMOOTHNESS as m, start_ramp
    T = 3.0
    u = Polynomial([0.0, 1.0 / T])          # u = t / T as a polynomial of t
    P = u ** m * (1 - u) ** m
    P = P / P.integ()(T)                    # tau'(t) = int_0^t P, normalised so that tau'(T) = 1
    tau = (P.integ()).integ()
    ts = np.linspace(0.01, T - 0.01, 37)
    for k in range(0, 8):
        want = np.array([tau.deriv(k)(t) if k else tau(t) for t in ts])
        got = np.array([start_ramp(t, T, 7)[k] for t in ts])
        # 1e-10: both sides evaluate a degree-15 polynomial in the monomial basis; near u = 1 its
        # terms cancel to ~1e-12 of their size (seen: 2.5e-12 on tau')
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * max(1.0, np.abs(want).max()))
    assert start_ramp(T, T, 3).tolist() == [T / 2, 1.0, 0.0, 0.0]
    # 1e-4: the top row evaluates P^(5) next to its root in the monomial basis (seen: 1.2e-5, of a
    # peak near 70 /s^7)
    np.testing.assert_allclose(start_ramp(T * (1 - 1e-9), T, 7), [T / 2, 1, 0, 0, 0, 0, 0, 0], atol=1e-4)
    np.testing.assert_allclose(start_ramp(T * 1e-9, T, 7), np.zeros(8), atol=1e-4)
    assert start_ramp(-1.0, T, 3).tolist() == [0.0] * 4
    assert start_ramp(2.0, 0.0, 2).tolist() == [2.0, 1.0, 0.0]       # no ramp: full speed at once


def test_warp_jet_is_the_chain_rule():
    """x(tau) = tau^3 - 2 tau on a ramped tau(t): x(tau(t)) is a polynomial of t whose exact
    derivatives (numpy composition) equal warp_jet's rows (Faa di Bruno) to 1e-11; a body twist of
    the constant screw xi, C(tau) = exp(tau xi), gives V_t^(k) = tau^(k+1) xi."""
    from numpy.polynomial import Polynomial
    from geodyn_ros.trajectories import start_ramp, warp_jet, warp_twist_jet
    T = 2.0
    x = Polynomial([0.0, -2.0, 0.0, 1.0])
    for t in (0.3, 1.0, 1.6, 2.4):
        tau = start_ramp(t, T, 6)
        jet = np.array([x.deriv(k)(tau[0]) if k else x(tau[0]) for k in range(7)])
        got = warp_jet(jet[:, None] * [1.0, -3.0], tau)
        # the composite's derivatives: numpy composition of x with tau's Taylor polynomial at t
        taylor = Polynomial([tau[k] / math.factorial(k) for k in range(7)])
        comp = x(taylor)
        want = np.array([comp.deriv(k)(0.0) if k else comp(0.0) for k in range(7)])
        np.testing.assert_allclose(got[:, 0], want, rtol=1e-11, atol=1e-11 * (1 + np.abs(want).max()))
        np.testing.assert_allclose(got[:, 1], -3.0 * want, rtol=1e-11, atol=1e-11 * (1 + np.abs(want).max()))
        xi = np.array([0.1, -0.2, 0.3, 1.0, 0.5, -0.4])
        V = np.zeros((5, 6))
        V[0] = xi
        np.testing.assert_allclose(warp_twist_jet(V, tau), tau[1:6, None] * xi, rtol=0, atol=1e-14)


def test_start_ramp_refusals_name_the_argument():
    from geodyn_ros.trajectories import start_ramp, warp_jet
    with pytest.raises(ValueError, match="start_ramp: t and duration must be finite, duration >= 0"):
        start_ramp(1.0, -1.0, 2)
    with pytest.raises(ValueError, match="start_ramp"):
        start_ramp(float("nan"), 1.0, 2)
    with pytest.raises(ValueError, match="^tau: needs 3 rows"):
        warp_jet(np.zeros((3, 2)), np.zeros(2))
