"""The failsafe's held and blended inputs (:mod:`geodyn_ros.ros.inputs.failsafe_inputs`), checked
against independent computations: the held reference is the last one moved along its velocity by
the clock's progress, the blend starts at the held values and ends at the live ones with
continuous position and rate (finite differences), the predicted state is a point mass under the commanded force (closed form), and the command's
bound is the ball |F - m g_up| <= m a_max (its projection checked against the optimality condition
and brute force); the state machine and its clock are those of the in-process loops."""
from __future__ import annotations

import numpy as np

from geodyn_ros.control.failsafe import Failsafe, FailsafeConfig
from geodyn_ros.control.retiming import Schedule, smoothstep
from geodyn_ros.lie import exp_so3
from geodyn_ros.control.failsafe_law import ForceBound, PointMassPredictor, torque_bound
from geodyn_ros.ros.inputs.failsafe_inputs import blend_fields, hold_fields


def _pose(p, r):
    C = np.eye(4)
    C[:3, :3] = exp_so3(np.asarray(r, float))
    C[:3, 3] = p
    return C


def test_hold_moves_the_reference_along_its_velocity_and_stops():
    C0 = _pose((1.0, 2.0, 3.0), (0.1, 0.0, 0.2))
    V0 = np.array([[0.0, 0.0, 0.0, 0.6, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.3, 0.0]])   # pure translation
    Q = np.array([[0.1, 0.2], [0.5, -0.5], [1.0, 1.0]])
    com = np.zeros((5, 3))
    com[0], com[1], com[2] = (1.0, 2.0, 3.0), (0.6, 0.0, 0.0), (0.0, 0.3, 0.0)
    Wb = np.array([[1.0] * 6, [2.0] * 6])
    fields = [("pose", (C0, V0)), ("jet", Q), ("jet_z", com), ("ff", Wb), ("ff", np.arange(6.0))]
    fs = Failsafe(FailsafeConfig(ramp=1.0), 0.04, log=None)
    for t in np.linspace(0, 2, 21):
        fs.update(t, 0.0)
    fs.update(2.0, 1.0)                                  # lost at t = 2
    assert fs.mode == "hold"
    s_loss = fs.clock.value_rate(2.0)[0]
    for t in (2.0, 2.4, 3.0, 4.0):
        s = fs.clock.jets(t, 4)
        s[0] -= s_loss
        d = np.zeros(5)
        C, V = hold_fields(fields, s, d)[0]
        sig = s[0]
        assert np.allclose(C[:3, 3], C0[:3, 3] + sig * np.array([0.6, 0, 0]), atol=1e-12)
        assert np.allclose(C[:3, :3], C0[:3, :3])
        assert np.allclose(V[0], s[1] * V0[0]) and np.allclose(V[1], s[2] * V0[0])
        q = hold_fields(fields, s, d)[1]
        assert np.allclose(q[0], Q[0] + sig * Q[1]) and np.allclose(q[1], s[1] * Q[1])
        w, tau = hold_fields(fields, s, d)[3:]
        assert np.allclose(w[0], Wb[0]) and not w[1].any() and np.allclose(tau, np.arange(6.0))
    # stopped after the ramp: about ramp / 2 x the speed ahead, at rest
    s = fs.clock.jets(4.0, 4)
    assert abs(s[0] - s_loss - 0.5) < 1e-9 and abs(s[1]) < 1e-12
    # the descent moves the pose and the CoM down with the offset's jet
    d = np.array([-0.2, -0.7, 0.0, 0.0, 0.0])
    C, V = hold_fields(fields, s, d)[0]
    c = hold_fields(fields, s, d)[2]
    assert np.isclose(C[2, 3], 3.0 - 0.2) and np.isclose(V[0, 5], -0.7)
    assert np.isclose(c[0, 2], 3.0 - 0.2) and np.isclose(c[1, 2], -0.7)


def test_blend_starts_held_ends_live_and_is_continuous():
    Ch, Cl = _pose((0.0, 0.0, 1.0), (0.0, 0.0, 0.3)), _pose((1.0, 0.5, 1.5), (0.1, 0.0, 0.9))
    Vh = np.zeros((2, 6))
    Vl = np.array([[0.0, 0.0, 0.2, 0.3, 0.1, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    Vl[0, 3:] -= np.cross(Vl[0, :3], Cl[:3, 3])          # spatial twist of a body moving at pdot
    qh, ql = np.array([[0.0], [0.0], [0.0]]), np.array([[1.0], [0.5], [0.0]])
    kinds = ["pose", "jet"]
    T = 1.5

    def at(t):
        S = smoothstep(t / T, 2)
        w = np.array([S[0], S[1] / T, S[2] / T ** 2])
        # the live reference moves on (constant velocity), the held one stands
        Cl_t = Cl.copy()
        Cl_t[:3, 3] += t * np.array([0.3, 0.1, 0.0]) + np.cross(Vl[0, :3], Cl[:3, 3]) * 0.0
        Cl_t[:3, :3] = exp_so3(t * Vl[0, :3]) @ Cl[:3, :3]
        Vl_t = Vl.copy()
        Vl_t[0, 3:] = np.array([0.3, 0.1, 0.0]) - np.cross(Vl[0, :3], Cl_t[:3, 3])
        ql_t = ql.copy()
        ql_t[0] += t * ql[1]
        return blend_fields(kinds, [(Ch, Vh), qh], [(Cl_t, Vl_t), ql_t], w), (Cl_t, Vl_t, ql_t)

    (C0, V0), q0 = at(0.0)[0]
    assert np.allclose(C0, Ch) and np.allclose(V0, Vh) and np.allclose(q0, qh)
    (C1, V1), q1 = at(T)[0]
    live = at(T)[1]
    assert np.allclose(C1, live[0]) and np.allclose(V1, live[1]) and np.allclose(q1, live[2])
    # position rates: the blended pdot (v + w x p) is the finite difference of the blended position
    h = 1e-6
    for t in (0.1, 0.5, 0.75, 1.2):
        (Ca, _), qa = at(t - h)[0]
        (Cb, _), qb = at(t + h)[0]
        (C, V), q = at(t)[0]
        pdot = V[0, 3:] + np.cross(V[0, :3], C[:3, 3])
        assert np.allclose((Cb[:3, 3] - Ca[:3, 3]) / (2 * h), pdot, atol=1e-6)
        assert np.allclose((qb[0] - qa[0]) / (2 * h), q[1], atol=1e-6)
        # angular rate: first order in the blend (stated); within 5 % of the finite difference here
        Rdot = (Cb[:3, :3] - Ca[:3, :3]) / (2 * h)
        W = Rdot @ C[:3, :3].T
        om = np.array([W[2, 1], W[0, 2], W[1, 0]])
        assert np.linalg.norm(om - V[0, :3]) <= 0.05 * max(1.0, np.linalg.norm(om))


def test_the_predicted_state_is_a_point_mass_under_the_commanded_force():
    """Closed form: a force held constant over [t0, t1] gives ``p0 + v0 dt + (F/m + g) dt^2 / 2``
    whatever the cycles it is applied in; the hover force keeps the point at rest; a time before
    the last one is not integrated (a clock that went back)."""
    g = np.array([0.0, 0.0, -9.81])
    pr = PointMassPredictor(2.0, g)
    p0, v0, F = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, -0.2]), np.array([1.0, -2.0, 30.0])
    pr.reset(10.0, p0, v0)
    pr.apply(10.0, F)
    for t in np.linspace(10.0, 11.0, 7)[1:]:
        pr.apply(t, F)       # the same force, cycle after cycle
    p, v = pr.at(11.5)
    a = F / 2.0 + g
    assert np.allclose(p, p0 + 1.5 * v0 + 0.5 * a * 1.5 ** 2, atol=1e-12)
    assert np.allclose(v, v0 + 1.5 * a, atol=1e-12)
    assert np.allclose(pr.at(11.0)[0], p)          # back in time: not integrated
    pr.reset(0.0, p0, np.zeros(3))
    pr.apply(0.0, -2.0 * g)
    assert np.allclose(pr.at(100.0)[0], p0) and not pr.at(100.0)[1].any()


def test_the_force_bound_is_the_ball_around_the_hover_force():
    """``clip_force`` leaves a force inside unchanged and projects one outside onto the sphere along
    the centre's ray (the nearest point: the optimality condition of the projection onto a ball);
    ``thrust_interval`` is the set of thrusts ``T >= 0`` along an axis with ``T b`` in the ball,
    against a brute-force scan of T."""
    rng = np.random.default_rng(3)
    m, a = 4.0, 3.0
    b = ForceBound(m, a, (0.0, 0.0, -9.81))
    c = np.array([0.0, 0.0, m * 9.81])
    for _ in range(200):
        F = c + rng.normal(size=3) * rng.uniform(0.1, 60.0)
        P = b.clip_force(F)
        if np.linalg.norm(F - c) <= m * a:
            assert np.array_equal(P, F)
        else:
            assert np.isclose(np.linalg.norm(P - c), m * a)
            assert np.allclose(np.cross(F - c, P - c), 0.0, atol=1e-9) and (F - c) @ (P - c) > 0
            # nearest: no point of a fine sample of the sphere is closer to F
            u = rng.normal(size=(4000, 3))
            S = c + m * a * u / np.linalg.norm(u, axis=1, keepdims=True)
            assert np.linalg.norm(F - P) <= np.linalg.norm(F - S, axis=1).min() + 1e-9
    for tilt in (0.0, 0.1, 0.25, 0.3, 0.6):
        axis = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
        lo, hi = b.thrust_interval(axis)
        T = np.linspace(0.0, 80.0, 800001)
        inside = T[np.linalg.norm(T[:, None] * axis - c, axis=1) <= m * a]
        if inside.size:
            assert abs(lo - inside.min()) < 2e-4 and abs(hi - inside.max()) < 2e-4, (tilt, lo, hi)
        else:   # tilted beyond the ball (sin(tilt) > a / g): the single closest thrust
            assert lo == hi and np.isclose(lo, c @ axis)
    tau = b.clip_torque(np.array([3.0, 4.0, 0.0]))
    assert np.array_equal(tau, [3.0, 4.0, 0.0])
    tb = ForceBound(m, a, (0.0, 0.0, -9.81), max_torque=1.0)
    assert np.allclose(tb.clip_torque(np.array([3.0, 4.0, 0.0])), [0.6, 0.8, 0.0])
    # the torque bound: m (g + a) at the radius of gyration sqrt(lambda_max / m)
    assert np.isclose(torque_bound(4.0, 3.0, np.diag([0.16, 0.04, 0.01])), 4.0 * 12.81 * 0.2)


def test_schedule_of_the_failsafe_is_the_loops_schedule():
    """The ROS failsafe drives the same Schedule objects as loops/sensed.py's Session: the clock
    of a fresh Failsafe is ``s = t`` and stops ``ramp / 2`` after the loss."""
    fs = Failsafe(FailsafeConfig(), 0.04, log=None)
    ref = Schedule(0.0, 1.0, 0.0)
    assert np.allclose(fs.clock.jets(0.7, 3), ref.jets(0.7, 3))
    fs.update(1.0, 1.0)
    assert np.isclose(fs.clock.value_rate(5.0)[0], 1.5) and fs.clock.value_rate(5.0)[1] == 0.0
