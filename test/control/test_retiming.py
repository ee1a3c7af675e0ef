"""control/retiming.py: the smooth step, the chain rule of every order and the warped references,
each against an independent computation (numpy's polynomial composition, finite differences,
closed forms)."""
import math

import numpy as np
import pytest
from numpy.polynomial import Polynomial as P

from geodyn_ros.control.retiming import SMOOTH_ORDER, Schedule, compose_jet, smoothstep, warp_reference
from geodyn_ros.trajectories import figure_eight_reference, table3_reference


def test_smoothstep_ends_and_symmetry():
    for x in (0.0, 1.0):
        j = smoothstep(x, 8)
        assert j[0] == x
    # the polynomial's derivatives 1..m vanish at both ends, the (m+1)-th does not
    from geodyn_ros.control.retiming import _S_DERIV
    for x in (0.0, 1.0):
        assert [float(_S_DERIV[i](x)) for i in range(1, SMOOTH_ORDER + 1)] == [0.0] * SMOOTH_ORDER
        assert abs(float(_S_DERIV[SMOOTH_ORDER + 1](x))) > 1.0
    xs = np.linspace(0, 1, 101)
    s = np.array([smoothstep(x)[0] for x in xs])
    assert np.all(np.diff(s) >= 0)
    assert np.allclose(s + s[::-1], 1.0, atol=1e-14)          # S(x) + S(1 - x) = 1


def test_compose_jet_against_polynomial_composition():
    """(f o s)^(k) by Faa di Bruno equals the derivatives of numpy's composed polynomial f(s(t))
    (exact up to rounding: relative 1e-12 on values up to ~1e3)."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        f, s = P(rng.normal(size=7)), P(rng.normal(size=5))
        fs = f(s)
        t0, N = rng.uniform(-1, 1), 8
        sv = [s(t0)] + [s.deriv(i)(t0) for i in range(1, N + 1)]
        fv = np.array([f(sv[0])] + [f.deriv(j)(sv[0]) for j in range(1, N + 1)])
        h = compose_jet(fv, sv)
        exact = np.array([fs(t0)] + [fs.deriv(k)(t0) for k in range(1, N + 1)])
        assert np.allclose(h, exact, rtol=1e-12, atol=1e-12 * np.abs(exact).max())


def test_schedule_rate_ramp_value_and_derivatives():
    sch = Schedule(2.0, 0.0, -5.0).ramp_rate(-4.0, 2.0, 1.0)
    assert sch.jets(-4.5, 3).tolist() == [2.0, 0.0, 0.0, 0.0]
    # after the ramp: x = x(end) + (t - t_end), x(end) = 2 + T / 2 (the step's mean is 1/2)
    assert sch.jets(0.0, 2) == pytest.approx([2.0 + 1.0 + 2.0, 1.0, 0.0], abs=1e-12)
    # inside: derivatives against central differences (h = 1e-5: error ~ h^2 x''' ~ 1e-9)
    h = 1e-5
    for t in (-3.7, -3.0, -2.4):
        j = sch.jets(t, 2)
        assert (sch.jets(t + h, 0)[0] - sch.jets(t - h, 0)[0]) / (2 * h) == pytest.approx(j[1], abs=1e-8)
        assert (sch.jets(t + h, 1)[1] - sch.jets(t - h, 1)[1]) / (2 * h) == pytest.approx(j[2], abs=1e-7)
    v = Schedule(-1.0, 0.0, 0.0).ramp_value(1.0, 2.0, 0.5)
    assert v.jets(0.5, 1).tolist() == [-1.0, 0.0] and v.jets(3.5, 1).tolist() == [0.5, 0.0]
    assert v.jets(2.0, 0)[0] == pytest.approx(-0.25, abs=1e-14)   # the midpoint: S(1/2) = 1/2
    with pytest.raises(ValueError, match="rate is not 0"):
        Schedule(0.0, 1.0).ramp_value(1.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="t_start"):
        Schedule(0.0, 0.0).ramp_rate(1.0, 1.0, 1.0).ramp_rate(1.5, 1.0, 0.0)


def test_warp_identity_is_the_reference_itself():
    s = np.zeros(9)
    s[0], s[1] = 1.3, 1.0
    ref = table3_reference(1.3, 2)
    w = warp_reference(table3_reference, 2, s, np.zeros(9))
    for a, b in ((w.base_pose, ref.base_pose), (w.base_twist, ref.base_twist), (w.q, ref.q)):
        assert np.array_equal(a, b)


def test_frozen_reference_is_at_rest():
    s = np.zeros(9)
    s[0] = 0.7
    w = warp_reference(figure_eight_reference, 2, s)
    ref = figure_eight_reference(0.7, 2)
    assert np.array_equal(w.com[0], ref.com[0]) and not np.any(w.com[1:]) and not np.any(w.q[1:])


def _numeric_jets(f, t, h=1e-4):
    """First and second central differences of f (an array function of t)."""
    return (f(t + h) - f(t - h)) / (2 * h), (f(t + h) - 2 * f(t) + f(t - h)) / h ** 2


def test_warped_base_reference_twist_is_the_pose_derivative():
    """A base reference on a ramping clock, raised by a ramping offset: the warped spatial twist
    equals the finite-difference derivative of the warped pose (v = pdot + p x w, w from R'
    R^T), and its next row the derivative of the twist (central differences, h = 1e-4:
    truncation ~ h^2 x''' ~ 1e-7)."""
    clock = Schedule(0.5, 0.2, 0.0).ramp_rate(0.1, 1.0, 1.0)
    off = Schedule(-0.3, 0.0, 0.0).ramp_value(0.0, 1.5, 0.0)

    def ref(t):
        return warp_reference(table3_reference, 1, clock.jets(t, 8), off.jets(t, 8))
    t = 0.55
    r = ref(t)

    def pose(u):
        return ref(u).base_pose
    dC, _ = _numeric_jets(pose, t)
    R, p = r.base_pose[:3, :3], r.base_pose[:3, 3]
    W = dC[:3, :3] @ R.T
    w = np.array([W[2, 1], W[0, 2], W[1, 0]])
    assert np.allclose(r.base_twist[0, :3], w, atol=2e-7)
    assert np.allclose(r.base_twist[0, 3:], dC[:3, 3] + np.cross(p, w), atol=2e-7)
    dV, _ = _numeric_jets(lambda u: ref(u).base_twist[0], t)
    assert np.allclose(r.base_twist[1], dV, atol=2e-6)
    dq, ddq = _numeric_jets(lambda u: ref(u).q[0], t)
    assert np.allclose(r.q[1], dq, atol=2e-7) and np.allclose(r.q[2], ddq, atol=2e-4)


def test_warped_flat_reference_jets_by_differences():
    clock = Schedule(0.0, 1.0, 0.0).ramp_rate(0.2, 1.0, 0.0)
    off = Schedule(0.0, 0.0, 0.0).ramp_rate(0.0, 1.0, -0.7)

    def com(u):
        return warp_reference(figure_eight_reference, 2, clock.jets(u, 8), off.jets(u, 8)).com
    t = 0.63
    c = com(t)
    d1, d2 = _numeric_jets(lambda u: com(u)[0], t)
    assert np.allclose(c[1], d1, atol=1e-7) and np.allclose(c[2], d2, atol=1e-5)
    # the highest rows too (the flat map reads up to c^(6)): differences of the row below
    for k in (3, 5):
        dk, _ = _numeric_jets(lambda u: com(u)[k - 1], t, h=1e-5)
        assert np.allclose(c[k], dk, rtol=1e-5, atol=1e-5 * math.factorial(k))
