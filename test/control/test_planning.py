"""The waypoint planner (``geodyn_ros.planning``), each behaviour against something independent:

* **optimality:** the banded Hermite solve equals a generic dense equality-constrained QP (scipy's
  dense KKT solve) over a *larger* space (degree 2k+1 per segment, only C^(k-1) imposed): the
  optimum is the degree-(2k-1) spline, so both agree; interior derivative constraints and
  non-rest ends included;
* **continuity:** left and right jets at every knot, evaluated by numpy's own polynomial class from
  the segment coefficients, agree to rounding up to the promised order, and the next order does
  jump (the check can fail);
* **waypoints** met, ends at rest; the FlatReference layout the flat map reads;
* **feasibility:** the check's rotor speeds, lag-compensated commands and motor torques equal the
  ``ff2`` controller's commands at the exact reference state (``FlatnessController.command``: the
  loop's own feedforward) per sample; baseline (b) equals the hand-derived rigid flat map
  (``rigid_flat_map``) with the arm's locked inertia at its mean; baseline (a)'s rates equal it;
  the worst margin is not above a 10x finer sampling, and the sampled minimum minus the stated
  bound is not above it either;
* **time scaling:** ``scaled(alpha)`` equals a re-plan with the times scaled by alpha (the optimum
  scales: an independent solve) and the k-th derivative scales by alpha^-k; the fastest scaling
  is tight (re-checked independently one tolerance faster);
* a short ``ff2`` flight in MuJoCo on a planned mission, used as the loop uses the built-in
  references; the example's comparison (``python -m geodyn_ros.examples.plan_mission``): the
  rigid baselines' timings saturate the rotors in flight, the whole-body timing does not;
* the mission at the limit under sensing (``plan_mission --sensing``): its text against its
  ``--json-out``, the exact order-1 feedforward against the rigid flat map under exact sensing,
  every refusal in one line, a failed or diverged flight kept in its cell while the others fly;
* bad inputs: one ValueError naming the argument.
"""
import json
import math

import numpy as np
import pytest
import scipy.linalg

import geodyn_ros as gd
from geodyn_ros.control.flatness import FlatnessController
from geodyn_ros.control.quadrotor import rigid_flat_map
from geodyn_ros.lie import Ad
from geodyn_ros.planning import (FlatTrajectory, Vehicle, allocate_times, check_feasibility, check_rigid_rates,
                                 fastest_scaling, fastest_segment_times, minimum_derivative, objective_order,
                                 plan_mission)

EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def vehicle():
    return Vehicle.hexarotor()


def mission(n_wp=5, seed=3):
    """A mission whose arm swings: CoM, yaw and the six joints move between every pair of waypoints."""
    rng = np.random.default_rng(seed)
    com = np.c_[rng.uniform(-1.5, 1.5, (n_wp, 2)), rng.uniform(0.8, 1.6, (n_wp, 1))]
    yaw = rng.uniform(-0.8, 0.8, n_wp)
    q = rng.uniform(-0.7, 0.7, (n_wp, 6))
    times = np.concatenate([[0.0], np.cumsum(rng.uniform(1.5, 3.0, n_wp - 1))])
    return com, yaw, q, times


# ----------------------------------------------------------------------------- optimality
def dense_qp(times, w, k, D, start=None, end=None, fixed=None):
    """Generic QP: per segment a degree-D polynomial in physical time (t - t_i), cost
    sum_i int_0^h (p^(k))^2, equality constraints (positions, C^(k-1) at interior knots, end and
    interior derivatives), solved with scipy's dense KKT system. Returns coefficients (N, D+1)."""
    N = len(times) - 1
    h = np.diff(times)
    nv = N * (D + 1)
    Q = np.zeros((nv, nv))
    for i in range(N):
        for m in range(k, D + 1):
            for n in range(k, D + 1):
                e = m + n - 2 * k + 1
                Q[i * (D + 1) + m, i * (D + 1) + n] = (math.perm(m, k) * math.perm(n, k) * h[i] ** e / e)

    def row(i, j, at_end):            # p_i^(j) at the segment's start (0) or end (h)
        r = np.zeros(nv)
        for m in range(j, D + 1):
            r[i * (D + 1) + m] = math.perm(m, j) * (h[i] ** (m - j) if at_end else float(m == j))
        return r

    A, b = [], []
    for i in range(N):
        A += [row(i, 0, False), row(i, 0, True)]
        b += [w[i], w[i + 1]]
    for i in range(1, N):
        for j in range(1, k):
            A.append(row(i - 1, j, True) - row(i, j, False))
            b.append(0.0)
    for j in range(1, k):
        A.append(row(0, j, False))
        b.append(0.0 if start is None else start[j - 1])
        A.append(row(N - 1, j, True))
        b.append(0.0 if end is None else end[j - 1])
    for (knot, j), v in (fixed or {}).items():
        A.append(row(knot, j, False))
        b.append(v)
    A, b = np.array(A), np.array(b)
    S = np.tile([1.0 / math.factorial(m) for m in range(D + 1)], N)   # Taylor scaling, for conditioning only
    Q, A = S[:, None] * Q * S[None, :], A * S[None, :]
    K = np.block([[2 * Q, A.T], [A, np.zeros((len(A), len(A)))]])
    sol = scipy.linalg.solve(K, np.concatenate([np.zeros(nv), b]))
    return (S * sol[:nv]).reshape(N, D + 1)


def dense_eval(times, coef, t, rows):
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    P = np.polynomial.Polynomial(coef[i])
    return np.array([P.deriv(r)(t - times[i]) if r else P(t - times[i]) for r in range(rows)])


@pytest.mark.parametrize("k, case", [(3, "rest"), (4, "rest"), (4, "constrained"), (5, "rest")])
def test_optimal_equals_dense_kkt(k, case):
    rng = np.random.default_rng(k)
    times = np.concatenate([[0.0], np.cumsum(rng.uniform(0.6, 1.6, 4))])
    w = rng.normal(size=5)
    start = end = fixed = None
    if case == "constrained":
        start = rng.normal(size=k - 1)
        end = rng.normal(size=k - 1)
        fixed = {(2, 1): 0.7, (3, 2): -0.4}
    p = minimum_derivative(times, w[:, None], k, None if start is None else start[:, None],
                           None if end is None else end[:, None], {kk: [v] for kk, v in (fixed or {}).items()})
    coef = dense_qp(times, w, k, 2 * k, start, end, fixed)
    # the larger space's extra coefficient vanishes: the optimum is the degree-(2k-1) spline
    scale = np.abs(coef).max()
    assert np.abs(coef[:, 2 * k:]).max() < 1e-7 * scale   # dense KKT rounding: cond(K) ~1e8 here
    ts = np.linspace(times[0], times[-1], 57)
    got = p.jets(ts, 2 * k - 1)[:, :, 0]
    ref = np.array([dense_eval(times, coef, t, 2 * k - 1) for t in ts])
    # bound: 1e-7 of each derivative's range, the dense KKT's rounding (cond ~1e8 times eps ~ 1e-8)
    # amplified by the derivative factors; the banded solve is far better conditioned
    tol = 1e-7 * np.maximum(1.0, np.abs(ref).max(axis=0))
    assert np.all(np.abs(got - ref) <= tol)


def test_objective_order_rule():
    # minimum snap (k = 4) is C^6 = the CoM's r + 4 at r = 2; minimum jerk C^4 for the yaw and joints
    assert objective_order(6) == 4 and objective_order(4) == 3 and objective_order(5) == 4
    # an interior velocity constraint releases the C^(2k-2) natural condition of order 2k-2: k grows
    assert objective_order(6, 1) == 5 and 2 * 5 - 2 - 1 >= 6


# ----------------------------------------------------------------------------- continuity
def one_sided(poly, i, col, rows):
    """(left, right) jets of column ``col`` at interior knot ``i`` from numpy's Polynomial of the
    segment coefficients in normalised time (d/dt = h^-1 d/ds)."""
    hl, hr = poly.h[i - 1], poly.h[i]
    L = np.polynomial.Polynomial(poly.coef[i - 1, :, col])
    R = np.polynomial.Polynomial(poly.coef[i, :, col])
    left = np.array([L.deriv(r)(1.0) / hl ** r if r else L(1.0) for r in range(rows)])
    right = np.array([R.deriv(r)(0.0) / hr ** r if r else R(0.0) for r in range(rows)])
    return left, right


@pytest.mark.parametrize("order", [0, 1, 2])
def test_continuity_at_every_knot(order):
    com, yaw, q, times = mission(7)
    traj = plan_mission(com, yaw, q, times, order=order)
    for name, poly, need in (("com", traj.com, order + 4), ("yaw", traj.yaw, order + 2), ("q", traj.q, order + 2)):
        m = traj.continuity[name]
        assert m >= need and m == 2 * traj.k[name] - 2
        jumps = np.zeros(m + 2)
        scale = np.zeros(m + 2)
        for i in range(1, traj.com.n_segments):
            for c in range(poly.width):
                left, right = one_sided(poly, i, c, m + 2)
                jumps = np.maximum(jumps, np.abs(left - right))
                scale = np.maximum(scale, np.abs(left))
                # the evaluator used by the loops gives the right jet at the knot
                assert np.allclose(poly.jets(poly.times[i:i + 1], m + 2)[0, :, c], right, rtol=1e-12, atol=1e-12 *
                                   max(1.0, np.abs(right).max()))
        # to rounding: the solve's rounding (eps times cond(H_ff) ~1e5 for these durations) amplified by
        # the monomial sums of the high derivatives; 1e-8 of each derivative's range is that with 10x room
        assert np.all(jumps[:m + 1] <= 1e-8 * np.maximum(scale[:m + 1], 1.0)), (name, jumps / scale)
        # ... and the next order jumps for real (the multiplier of the position constraint)
        assert jumps[m + 1] > 1e-3 * scale[m + 1]


def test_interior_constraint_keeps_the_promise():
    com, yaw, q, times = mission(5)
    traj = plan_mission(com, yaw, q, times, constraints=[(2, "com", 1, (0.3, -0.2, 0.0)), (1, "q", 2, [0.0] * 6)])
    assert traj.k["com"] == objective_order(6, 1) and traj.continuity["com"] >= 6
    assert np.allclose(traj(times[2]).com[1], (0.3, -0.2, 0.0), atol=1e-12)
    assert np.allclose(traj(times[1]).q[2], 0.0, atol=1e-11)
    for i in range(1, 4):
        for c in range(3):
            left, right = one_sided(traj.com, i, c, 7)
            assert np.all(np.abs(left - right) <= 1e-8 * np.maximum(1.0, np.abs(left)))


def test_waypoints_met_and_layout():
    com, yaw, q, times = mission(6)
    traj = plan_mission(com, yaw, q, times)
    c, y, qq = traj.jets(times, 2)
    assert c.shape == (6, 7, 3) and y.shape == (6, 5) and qq.shape == (6, 5, 6)
    assert np.allclose(c[:, 0], com, rtol=0, atol=1e-12) and np.allclose(y[:, 0], yaw, atol=1e-12)
    assert np.allclose(qq[:, 0], q, atol=1e-12)
    # rest at both ends: derivatives 1..k-1 zero
    assert np.abs(c[[0, -1], 1:4]).max() < 1e-12 and np.abs(qq[[0, -1], 1:3]).max() < 1e-12
    ref = traj(times[2], 2)
    assert ref.com.shape == (7, 3) and ref.yaw.shape == (5,) and ref.q.shape == (5, 6)
    # outside the mission the end waypoints are held at rest
    before, after = traj(times[0] - 1.0, 1), traj(times[-1] + 1.0, 1)
    assert np.allclose(before.com[0], com[0]) and np.allclose(after.q[0], q[-1]) and not after.com[1:].any()


def test_time_allocation_is_the_trapezoid():
    com = np.array([[0, 0, 1], [2, 0, 1], [2, 0.5, 1]], float)
    t = allocate_times(com, max_velocity=1.0, max_acceleration=1.0)
    # 2 m: accelerate 1 s to 1 m/s (0.5 m), cruise 1 m, decelerate: 3 s; 0.5 m < v^2/a: 2 sqrt(0.5)
    assert np.allclose(np.diff(t), [3.0, 2.0 * math.sqrt(0.5)])
    # the joints' limit binds when their move is the longest
    q = np.array([[0.0], [0.0], [3.0]])
    t2 = allocate_times(com, q=q, max_velocity=1.0, max_acceleration=1.0, max_joint_velocity=1.0,
                        max_joint_acceleration=1.0)
    assert np.allclose(np.diff(t2), [3.0, 4.0])


# ----------------------------------------------------------------------------- feasibility
def body_twist(flat):
    return Ad(np.linalg.inv(flat.base_pose)) @ flat.base_twist[0]


def test_check_equals_the_ff2_controller_at_the_reference(vehicle):
    com, yaw, q, times = mission(4)
    traj = plan_mission(com, yaw, q, times)
    rep = check_feasibility(vehicle, traj, samples=8)
    ctrl = FlatnessController(vehicle.model, vehicle.allocation, vehicle.rotors, vehicle.elastic, level="ff2")
    for j in range(0, len(rep.times), 3):
        ref = traj(rep.times[j], 2)
        flat = gd.flat_inverse_dynamics(vehicle.model, ref.com, ref.yaw, ref.q, 2)
        th, thd = ctrl.motor_reference(ref.q, flat.tau)
        cmd = ctrl.command(flat.base_pose, body_twist(flat), ref.q[0], ref.q[1], th, thd, ref.com, ref.yaw, ref.q,
                           flat)
        u = vehicle.allocation.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0])
        # bounds: 1e-9 relative; the controller recomputes the CoM and attitude from the state (rounding
        # ~1e-14 relative, amplified by the feedback gains only through errors of that size)
        assert np.allclose(rep.omega[j], np.sqrt(u), rtol=1e-9)
        assert np.allclose(rep.omega_command[j], cmd.omega_raw, rtol=1e-9)
        assert np.allclose(rep.motor_torque[j], cmd.u_raw, rtol=1e-9, atol=1e-9)


def test_rigid_joints_torque_limits(vehicle):
    """Rigid, torque-controlled joints with a limit: the margin columns are ``(limit - |tau|)/limit`` of the
    joint torques of gd.flat_inverse_dynamics per sample (the public single-sample path); order 1 suffices."""
    rigid = Vehicle(vehicle.model, vehicle.allocation, vehicle.rotors, None, joint_torque_limit=2.0)
    assert rigid.check_order == 1
    com, yaw, q, times = mission(4)
    traj = plan_mission(com, yaw, q, times)
    rep = check_feasibility(rigid, traj, samples=6, refine=False)
    cols = [i for i, nm in enumerate(rep.names) if nm.startswith("joint ")]
    assert len(cols) == 6 and rep.motor_torque is None
    for j in range(0, len(rep.times), 3):
        ref = traj(rep.times[j], 1)
        tau = gd.flat_inverse_dynamics(vehicle.model, ref.com, ref.yaw, ref.q, 1).tau[0]
        assert np.allclose(2.0 * (1.0 - rep.margins[j, cols]), np.abs(tau), rtol=1e-9, atol=1e-12)


def test_frozen_arm_baseline_is_the_rigid_flat_map(vehicle):
    com, yaw, q, times = mission(4)
    traj = plan_mission(com, yaw, q, times)
    rep = check_feasibility(vehicle, traj, samples=6, frozen_arm=True, refine=False)
    qm = q.mean(axis=0)
    ct = gd.centroidal_locked_terms(vehicle.model, qm)
    m = vehicle.model.total_mass
    wmax = vehicle.rotors.max_rot_velocity
    n = vehicle.allocation.n_rotors
    for j in range(0, len(rep.times), 2):
        ref = traj(rep.times[j], 0)
        rf = rigid_flat_map(m, ct.M_b[:3, :3], ct.com, ref.com[2], ref.com[3], ref.com[4], ref.yaw[0], ref.yaw[1],
                            ref.yaw[2])
        u = vehicle.allocation.allocate_thrust_torque(rf.thrust[0], rf.torque)
        om = np.sign(u) * np.sqrt(np.abs(u))
        # the rotor speed-max margins of the report are (wmax - omega) / wmax; closed form vs jets: 1e-9
        assert np.allclose(wmax * (1 - rep.margins[j, :n]), om, rtol=1e-9)


def test_rigid_rates_baseline(vehicle):
    com, yaw, q, times = mission(4)
    traj = plan_mission(com, yaw, q, times)
    rep = check_rigid_rates(vehicle, traj, samples=6, refine=False)
    lim_xy, lim_z, lim_zd = math.pi / 2, math.pi / 2, 2 * math.pi   # mav_trajectory_generation's defaults
    J = np.eye(3)
    for j in range(0, len(rep.times), 2):
        ref = traj(rep.times[j], 0)
        rf = rigid_flat_map(1.0, J, np.zeros(3), ref.com[2], ref.com[3], ref.com[4], ref.yaw[0], ref.yaw[1],
                            ref.yaw[2])
        got = rep.margins[j]
        assert np.isclose(lim_xy * (1 - got[3]), np.hypot(*rf.omega[:2]), rtol=1e-9, atol=1e-12)
        assert np.isclose(lim_z * (1 - got[4]), abs(rf.omega[2]), rtol=1e-9, atol=1e-12)
        assert np.isclose(lim_zd * (1 - got[5]), abs(rf.alpha[2]), rtol=1e-9, atol=1e-12)


def test_worst_margin_and_its_sampling_bound(vehicle):
    com, yaw, q, times = mission(4, seed=5)
    traj = plan_mission(com, yaw, q, times).scaled(0.6)
    rep = check_feasibility(vehicle, traj, samples=16)
    fine = check_feasibility(vehicle, traj, samples=160, refine=False)
    true_min = fine.margins.min()
    # the refined worst is a local minimum: not above the 10x finer sampling (to its own spacing's
    # quadratic error, bounded by that sampling's stated bound)
    assert rep.worst <= true_min + fine.sample_bound
    # the coarse samples cannot overstate the margin by more than the stated bound
    assert rep.margins.min() - rep.sample_bound <= true_min
    assert rep.limit in rep.names and rep.worst == min(m for m, _ in rep.per_limit.values())


# ----------------------------------------------------------------------------- time scaling
@pytest.mark.parametrize("alpha", [0.5, 1.7])
def test_scaling_equals_replanning_and_scales_derivatives(alpha):
    com, yaw, q, times = mission(5)
    traj = plan_mission(com, yaw, q, times)
    fast = traj.scaled(alpha)
    replan = plan_mission(com, yaw, q, times[0] + alpha * (times - times[0]))
    ts = np.linspace(times[0], times[-1], 41)
    c, y, qq = traj.jets(ts, 2)
    cs, ys, qs = fast.jets(times[0] + alpha * (ts - times[0]), 2)
    cr, yr, qr = replan.jets(times[0] + alpha * (ts - times[0]), 2)
    k = np.arange(7)
    # exact in exact arithmetic; rounding of alpha^-k and of the re-solve: 1e-9 of each row's range
    for got, base, rk in ((cs, c, k), (ys, y, k[:5]), (qs, qq, k[:5])):
        want = base * (alpha ** -rk).reshape((1, -1) + (1,) * (base.ndim - 2))
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    for got, rep in ((cs, cr), (ys, yr), (qs, qr)):
        assert np.all(np.abs(got - rep) <= 1e-9 * np.maximum(1.0, np.abs(rep).max(axis=0)))


@pytest.mark.parametrize("check", ["whole_body", "frozen_arm", "rigid_rates"])
def test_fastest_scaling_is_tight(vehicle, check):
    com, yaw, q, times = mission(4)
    traj = plan_mission(com, yaw, q, times)
    res = fastest_scaling(vehicle, traj, margin=0.1, check=check, tol=1e-3, samples=12)
    assert res.alpha_below < res.alpha <= res.alpha_below / (1 - 1e-3) * (1 + 1e-12)
    # independent re-checks at the result and one tolerance faster
    kw = dict(samples=12)
    if check == "rigid_rates":
        at, below = (check_rigid_rates(vehicle, traj.scaled(a), **kw) for a in (res.alpha, res.alpha_below))
    else:
        fz = check == "frozen_arm"
        at, below = (check_feasibility(vehicle, traj.scaled(a), frozen_arm=fz, **kw) for a in (res.alpha,
                                                                                              res.alpha_below))
    assert at.worst >= 0.1 > below.worst
    assert res.trajectory.duration == pytest.approx(res.alpha * traj.duration, rel=1e-12)


def test_segment_times_beat_the_uniform_scaling_and_stay_tight(vehicle):
    from geodyn_ros.examples.plan_mission import MISSION

    traj = plan_mission(**MISSION)
    com = MISSION["com"]
    res = fastest_segment_times(vehicle, traj, margin=0.1, samples=12)
    # the re-allocation shortens this mission by 8 % (measured: the first segment, arm swinging out,
    # had slack); 3 % guards that it still does something
    assert res.trajectory.duration <= 0.97 * res.uniform.trajectory.duration
    # independent re-checks: the result keeps the margin, and the same plan one tolerance faster does not
    at = check_feasibility(vehicle, res.trajectory, samples=12)
    faster = check_feasibility(vehicle, res.trajectory.scaled(res.scaling.alpha_below / res.scaling.alpha), samples=12)
    assert at.worst >= 0.1 > faster.worst
    assert np.allclose(res.trajectory(res.trajectory.times[2]).com[0], com[2], atol=1e-12)   # waypoints kept
    assert np.isclose(res.segment_margins.min(), at.worst, atol=at.sample_bound + 1e-12)


def test_whole_body_binds_before_the_rigid_baseline(vehicle):
    """The arm's reaction is invisible to baseline (b): on a mission whose arm swings, its fastest
    scaling violates the whole-body margin."""
    com, yaw, q, times = mission(5, seed=1)
    traj = plan_mission(com, yaw, q, times)
    rigid = fastest_scaling(vehicle, traj, margin=0.05, check="frozen_arm", samples=12)
    whole = check_feasibility(vehicle, rigid.trajectory, samples=12)
    assert rigid.report.worst >= 0.05 and whole.worst < rigid.report.worst


# ----------------------------------------------------------------------------- the loop flies it
def test_ff2_loop_flies_a_planned_mission():
    from geodyn_ros.loops.underactuated import simulate_underactuated

    com = np.array([[0.0, 0.0, 1.0], [0.3, 0.1, 1.1], [0.5, -0.1, 1.0]])
    q = np.array([[0.0] * 6, [0.4, -0.3, 0.2, -0.4, 0.3, -0.2], [0.0] * 6])
    traj = plan_mission(com, [0.0, 0.2, 0.1], q, [0.0, 1.0, 2.0])
    row = simulate_underactuated("ff2", duration=2.0, reference=traj, preroll=0.0)
    m = row.metrics()
    # started on the reference (its exact state) with the exact order-2 feedforward, the CoM error
    # stays at the loop's discretisation residual: measured 1.0e-4 m max (ff0 on the same plan: 1.9e-3
    # m); 1e-3 m (10x room) fails if the planned jets or their continuity were wrong
    assert m["com_max_m"] < 1e-3 and m["rotor_saturations"] == 0 and m["motor_saturations"] == 0


def test_plan_mission_example_text(capsys):
    """``python -m geodyn_ros.examples.plan_mission`` (text mode): both rigid baselines accept a timing
    whose whole-body margin is negative, and flying it saturates the rotors; the whole-body timing
    keeps its margin and flies without a saturation. The table is read back from the printed text."""
    from geodyn_ros.examples import plan_mission as ex

    assert ex.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.split() and ln.split()[0] in ex.CHECKS}
    assert set(rows) == set(ex.CHECKS) and all(len(ln) <= 100 for ln in lines)
    wb_margin = {k: float(v[-5]) for k, v in rows.items()}
    saturations = {k: int(v[-4]) for k, v in rows.items()}
    alpha = {k: float(v[1]) for k, v in rows.items()}
    # 0.1 is the example's margin; the scaling's result keeps it (to the report's printed digits)
    assert wb_margin["whole_body"] >= 0.1 - 5e-5 and saturations["whole_body"] == 0
    for rigid in ("rigid_rates", "frozen_arm"):
        assert alpha[rigid] < alpha["whole_body"] and wb_margin[rigid] < 0 and saturations[rigid] > 0


# ----------------------------------------------------------------------------- the mission under sensing
def _mission_tables(text):
    """``{title: {first cell: [other cells]}}`` of the markdown tables :func:`format_mission` printed:
    ``"timings"``, and per profile ``profile`` (the levels) and ``"profile pairs"`` (the speeds)."""
    tables, title, cur = {}, None, None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cur is None:
                key = (title if cells[0] == "level" else "timings" if cells[1].startswith("duration")
                       else f"{title} pairs")
                cur = tables.setdefault(key, {})
            elif not set(cells[0]) <= {"-"}:
                cur[cells[0]] = cells[1:]
        else:
            cur = None
            if line.strip():
                title = line.split(":")[0]
    return tables


def test_mission_under_sensing_runs_as_written(tmp_path, capsys):
    """``python -m geodyn_ros.examples.plan_mission --sensing`` on a small set (perfect once, mocap on
    two seeds; rigid and ff1; the fastest timing): the timing keeps the whole-body margin, the text
    agrees with ``--json-out``, and the exact order-1 feedforward beats the rigid flat map where
    sensing is exact. Read back from the printed text."""
    from geodyn_ros.examples import plan_mission as ex

    out = tmp_path / "mission.json"
    assert ex.main(["--sensing", "--profiles", "perfect", "mocap", "--levels", "rigid", "ff1", "--speeds", "1",
                    "--seeds", "2", "--jobs", "2", "--json-out", str(out)]) == 0
    cap = capsys.readouterr()
    tabs = _mission_tables(cap.out)
    assert cap.out.rstrip().splitlines()[-1].startswith("6 flights in ")
    assert all(len(line) <= 100 for line in cap.out.splitlines())
    progress = [line for line in cap.err.splitlines() if line.startswith("[")]
    assert len(progress) == 6 and any(line.startswith("[6/6] ") for line in progress)
    # 0.1 is the default margin, kept by the scaling (to the printed digits)
    assert float(tabs["timings"]["1x"][1]) >= 0.1 - 5e-5
    assert set(tabs["mocap pairs"]) == {"1x"} and "(x" in tabs["mocap pairs"]["1x"][0]
    obj = json.loads(out.read_text())
    for prof, n in (("perfect", 1), ("mocap", 2)):
        for lv in ("rigid", "ff1"):
            cell = obj["cells"][prof]["1.0"][lv]
            assert cell["seeds"] == list(range(n)) and not cell["failed"] and not cell["diverged"]
            mean, ci = (float(x) for x in tabs[prof][lv][0].split(" (")[0].split(" ± "))
            # the text rounds to 1 um; the interval is Student's t over the seeds (0 for perfect)
            assert mean == pytest.approx(cell["mean_m"] * 1e3, abs=6e-4) == pytest.approx(
                np.mean(cell["com_rms_m"]) * 1e3, abs=6e-4)
            assert (ci == 0.0) == (n == 1)
    # exact sensing: ff1 adds the jerk's feedforward the rigid flat map lacks on the swinging arm;
    # measured 0.068 mm against 0.882 mm (x13); x3 leaves room for the integrator, and fails if the
    # levels were swapped or flew the same controller
    p = obj["cells"]["perfect"]["1.0"]
    assert p["ff1"]["mean_m"] * 3 < p["rigid"]["mean_m"]


@pytest.mark.parametrize("kw, match", [
    (dict(profiles=["nope"]), "nope"),
    (dict(profiles="mocap"), "profiles"),
    (dict(profiles=[]), "profiles"),
    (dict(levels=["ff3"]), "levels"),
    (dict(speeds=[0.0]), "speeds"),
    (dict(speeds=[1.5]), "speeds"),
    (dict(speeds=[math.nan]), "speeds"),
    (dict(speeds=[True]), "speeds"),
    (dict(seeds=1), "seeds"),
    (dict(seeds=2.0), "seeds"),
    (dict(jobs=0), "jobs"),
    (dict(world="windy"), "worlds.windy: no such world"),
])
def test_mission_under_sensing_refuses_in_one_line(kw, match):
    from geodyn_ros.examples.plan_mission import fly_mission

    with pytest.raises(ValueError, match=match) as e:
        fly_mission(**{"profiles": ["mocap"], **kw})
    assert "\n" not in str(e.value) and len(str(e.value)) < 400     # one line (the world file lists its names)


@pytest.mark.parametrize("argv, match", [
    (["--seeds", "3"], "--seeds: only with --sensing"),
    (["--profiles", "mocap"], "--profiles: only with --sensing"),
    (["--world", "wind_light"], "--world: only with --sensing"),
    (["--rejection"], "--rejection: only with --sensing"),
])
def test_mission_sensing_flags_need_sensing(argv, match, capsys):
    from geodyn_ros.examples import plan_mission as ex

    with pytest.raises(SystemExit) as e:
        ex.main(argv)
    assert e.value.code == 2 and match in capsys.readouterr().err


def test_mission_bad_value_is_one_line(capsys):
    from geodyn_ros.examples import plan_mission as ex

    assert ex.main(["--sensing", "--speeds", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("plan_mission: speeds:")


def test_mission_flight_that_raises_is_kept_and_the_others_fly(monkeypatch, capsys):
    """A flight that raises is reported in its cell (one line, at most 200 characters), a diverged
    one is counted as diverged, the others fly on, and the command exits 1 naming the first failure.
    The flights are stubbed: this is the bookkeeping, not the physics."""
    from types import SimpleNamespace

    from geodyn_ros.examples import gain_sweep, sensing_table
    from geodyn_ros.examples import plan_mission as ex

    def run(level, duration, *, gains, sensing, reference):
        assert duration == reference.duration
        if level == "ff0":
            raise RuntimeError("boom " + "x" * 500)
        rms = {"position_m": 1e-3 * (1 + sensing.seed), "max_position_m": 2e-3, "joint_deg": 0.5}
        return SimpleNamespace(diverged="CoM 1 m off" if level == "ff1" else None, rotor_saturations=3,
                               log=SimpleNamespace(rms=lambda: rms))

    monkeypatch.setitem(sensing_table._VEHICLE_CACHE, "underactuated", SimpleNamespace(run=run))
    monkeypatch.setattr(gain_sweep, "base_gains", lambda v, delay: None)
    assert ex.main(["--sensing", "--profiles", "mocap", "--speeds", "1", "--seeds", "2"]) == 1
    out = capsys.readouterr().out
    tab = _mission_tables(out)["mocap"]
    assert tab["rigid"][0] == "1.500 ± 6.353 (6)"        # seeds 0, 1: 1 and 2 mm; t(0.975, 1) = 12.706
    assert tab["ff0"][0] == "2/2 failed" and tab["ff1"][0] == "2/2 diverged" and tab["ff2"][0].startswith("1.500")
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("8 flights in ") and "; 2 failed (first: RuntimeError: boom xx" in last
    assert len(last) < 300


def test_mission_in_a_world_starts_in_a_hover_and_draws_per_seed(monkeypatch, capsys):
    """``--world``: every flight gets the world drawn with its seed, starts in flight with the
    stated pre-roll (not on the ground), and ``perfect`` flies every seed (the draw differs per
    seed); ``--rejection`` passes the rejection table's ``on`` options. Flights stubbed."""
    from types import SimpleNamespace

    from geodyn_ros.control.rejection import RejectionOptions
    from geodyn_ros.examples import gain_sweep, sensing_table
    from geodyn_ros.examples import plan_mission as ex
    from geodyn_ros.sim.world import World

    seen = []

    def run(level, duration, *, gains, sensing, reference, world, world_seed, preroll, rejection):
        assert isinstance(world, World) and world.name == "wind_light" and isinstance(rejection, RejectionOptions)
        seen.append((sensing.profile.name, world_seed, sensing.seed, sensing.ground, preroll))
        return SimpleNamespace(diverged=None, rotor_saturations=0, log=SimpleNamespace(
            rms=lambda: {"position_m": 1e-3, "max_position_m": 1e-3, "joint_deg": 0.1}))

    monkeypatch.setitem(sensing_table._VEHICLE_CACHE, "underactuated", SimpleNamespace(run=run))
    monkeypatch.setattr(gain_sweep, "base_gains", lambda v, delay: None)
    assert ex.main(["--sensing", "--profiles", "perfect", "--levels", "ff1", "--speeds", "1", "--seeds", "3",
                    "--world", "wind_light", "--rejection"]) == 0
    assert sorted(seen) == [("perfect", k, k, False, ex.WORLD_PREROLL_S) for k in range(3)]
    out = capsys.readouterr().out
    assert "in the world 'wind_light' (drawn per seed); every rejection option on" in out
    assert _mission_tables(out)["perfect"]["ff1"][0] == "1.000 ± 0.000 (0)"


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, arg", [
    (dict(com=[[0, 0, 1]], times=[0.0]), "com"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], times=[0.0, 0.0]), "times"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], times=[1.0, 0.5]), "times"),
    (dict(com=[[0, 0, 1], [1, 0, np.nan]], times=[0.0, 1.0]), "com"),
    (dict(com=[[0, 0], [1, 0]], times=[0.0, 1.0]), "com"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], yaw=[0.0, 0.1, 0.2], times=[0.0, 1.0]), "yaw"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], q=[0.0, 0.1], times=[0.0, 1.0]), "q"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], q=[[0.0], [np.inf]], times=[0.0, 1.0]), "q"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], times=[0.0, np.nan]), "times"),
    (dict(com=[[0, 0, 1], [1, 0, 1]]), "max_velocity"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], max_velocity=1.0, max_acceleration=-1.0), "max_acceleration"),
    (dict(com=[[0, 0, 1], [1, 0, 1], [2, 0, 1]], times=[0, 1, 2], constraints=[(0, "com", 1, (0, 0, 0))]),
     "constraints"),
    (dict(com=[[0, 0, 1], [1, 0, 1], [2, 0, 1]], times=[0, 1, 2], constraints=[(1, "com", 1, (0, 0))]),
     "constraints"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], times=[0, 1], order=-1), "order"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], times=[0, 1], start={"com": np.zeros((2, 3))}), "start"),
    (dict(com=[[0, 0, 1], [1, 0, 1]], times=[0, 1], end={"coms": np.zeros((3, 3))}), "end"),
    (dict(com=[[0, 0, 1], [0, 0, 1]], max_velocity=1.0, max_acceleration=1.0), "com"),
])
def test_bad_input_names_the_argument(kwargs, arg):
    with pytest.raises(ValueError) as e:
        plan_mission(**kwargs)
    msg = str(e.value)
    assert msg.startswith(arg + ":") and "\n" not in msg


def test_bad_scaling_and_check_input(vehicle):
    traj = plan_mission([[0, 0, 1], [0.5, 0, 1]], times=[0.0, 2.0], q=np.zeros((2, 6)))
    for kw, arg in ((dict(margin=1.5), "margin"), (dict(margin=0.1, check="nope"), "check"),
                    (dict(margin=0.1, tol=0.0), "tol"), (dict(margin=0.99), "margin")):
        with pytest.raises(ValueError, match=f"^{arg}:"):
            fastest_scaling(vehicle, traj, **kw)
    with pytest.raises(ValueError, match="^traj:"):
        check_feasibility(vehicle, plan_mission([[0, 0, 1], [0.5, 0, 1]], times=[0.0, 2.0]))
    with pytest.raises(ValueError, match="^samples:"):
        check_feasibility(vehicle, traj, samples=1)
    with pytest.raises(ValueError, match="^alpha:"):
        traj.scaled(0.0)
    with pytest.raises(ValueError, match="^t:"):
        traj.jets([0.0, np.nan])
    for kw, arg in ((dict(allocation=None), "allocation"), (dict(omega_min=-1.0), "omega_min"),
                    (dict(joint_torque_limit=[1.0, 2.0]), "joint_torque_limit"), (dict(model="x"), "model")):
        args = dict(model=vehicle.model, allocation=vehicle.allocation, rotors=vehicle.rotors, elastic=None) | kw
        with pytest.raises(ValueError, match=f"^{arg}:"):
            Vehicle(**args)
    with pytest.raises(ValueError, match="^iterations:"):
        fastest_segment_times(vehicle, traj, margin=0.1, iterations=0)
    with pytest.raises(ValueError, match="^traj:"):
        fastest_segment_times(vehicle, FlatTrajectory(traj.com, traj.yaw, traj.q, 2, traj.k, traj.continuity),
                              margin=0.1)
    assert isinstance(traj.scaled(2.0), FlatTrajectory)


def test_nothing_below_imports_planning():
    from sibling import test_module
    GRAPH = test_module("test_layers").GRAPH

    below = ("lie", "trajectories", "model", "algorithms", "control", "sim")
    bad = [m for m, deps in GRAPH.items() if m.split(".")[0] in below and any(d.startswith("planning") for d in deps)]
    assert bad == []


def test_per_rotor_constants_of_equal_value_change_nothing(vehicle):
    """A vehicle file may give every rotor its own constants ((n,) arrays, issue 33): with every
    entry equal to the shared scalar, both checks give the scalar vehicle's margins (the sums
    differ from n * c_f by rounding only: 1e-12 relative is far above that, far below any change
    of a constant), and a max speed that differs per rotor moves that rotor's margin alone."""
    import dataclasses
    com, yaw, q, times = mission(3)
    traj = plan_mission(com, yaw, q, times)
    rot = vehicle.rotors
    n = rot.n_rotors
    arr = dataclasses.replace(rot, motor_constant=np.full(n, rot.motor_constant),
                              max_rot_velocity=np.full(n, rot.max_rot_velocity))
    v2 = Vehicle(vehicle.model, vehicle.allocation, arr, vehicle.elastic)
    for check in (check_feasibility, check_rigid_rates):
        a, b = (check(v, traj, samples=4, refine=False) for v in (vehicle, v2))
        assert np.allclose(a.margins, b.margins, rtol=1e-12, atol=1e-12)
    wmax = np.full(n, rot.max_rot_velocity)
    wmax[2] *= 1.1
    v3 = Vehicle(vehicle.model, vehicle.allocation, dataclasses.replace(rot, max_rot_velocity=wmax), vehicle.elastic)
    a, b = (check_feasibility(v, traj, samples=4, refine=False) for v in (vehicle, v3))
    om = rot.max_rot_velocity * (1 - a.margins[:, :n])            # the speeds, from the scalar report
    assert np.allclose(b.margins[:, 2], (wmax[2] - om[:, 2]) / wmax[2], rtol=1e-12, atol=1e-12)
    others = [i for i in range(n) if i != 2]
    assert np.array_equal(a.margins[:, others], b.margins[:, others])


def test_constraint_orders_are_bounded_by_the_planners_accuracy():
    """MAX_CONSTRAINT_ORDER (7) and MAX_OBJECTIVE_ORDER (8): at the bound the plan still meets its
    waypoints (1e-8 m) and the constrained derivative (1e-6 of its value, read back by finite
    differences of the planned position, independent of the polynomial's own derivative); beyond
    it plan_mission refuses in one line (an order of 150 overflowed, 3000 ran for minutes)."""
    from geodyn_ros.planning.planner import MAX_CONSTRAINT_ORDER, MAX_OBJECTIVE_ORDER
    assert (MAX_CONSTRAINT_ORDER, MAX_OBJECTIVE_ORDER) == (7, 8)
    com = [[0, 0, 1], [1, 0.5, 1.2], [2, 0, 1]]
    tr = plan_mission(com, times=[0, 1.5, 3.0], order=2, constraints=[(1, "com", 1, (0.3, np.nan, np.nan))])
    for m in (1, MAX_CONSTRAINT_ORDER):
        tr = plan_mission(com, times=[0, 1.5, 3.0], order=2, constraints=[(1, "com", m, (0.3, np.nan, np.nan))])
        for t, c in zip((0.0, 1.5, 3.0), com):
            assert np.abs(tr(t, 0).com[0] - c).max() < 1e-8, (m, t)
        if m == 1:          # the velocity by a central difference of the positions (h = 1e-5 s: error ~1e-10)
            v = (tr(1.5 + 1e-5, 0).com[0, 0] - tr(1.5 - 1e-5, 0).com[0, 0]) / 2e-5
            assert abs(v - 0.3) < 1e-6
    for m in (MAX_CONSTRAINT_ORDER + 1, 150, 3000):
        with pytest.raises(ValueError, match=rf"^constraints: derivative order {m} must be an integer in 1\.\.7"):
            plan_mission(com, times=[0, 1.5, 3.0], constraints=[(1, "com", m, (0.3, np.nan, np.nan))])
    plan_mission(com, times=[0, 1.5, 3.0], order=10)
    with pytest.raises(ValueError, match=r"^order: 11 asks the com for a minimum-derivative objective of order 9"):
        plan_mission(com, times=[0, 1.5, 3.0], order=11)
