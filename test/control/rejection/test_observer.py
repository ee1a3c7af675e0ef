"""The external-wrench observers (geodyn_ros.control.rejection.observer) against MuJoCo's applied forces.

Independent references:
* MuJoCo's own force on the robot: a force pushed on a link with ``xfrc_applied`` (at the link's
  CoM plus the moment that moves it to the tool point), its generalized force by ``mj_applyFT``
  (joint rows) and the closed form ``(x x F, F)`` (base rows, spatial), averaged over each step
  and passed through the observer's first-order filter ``r+ = a r + (1 - a) d`` -- the exact
  response of eq. (3) to the true force; the simulator integrates the dynamics (RK4) on its own
  model, so the observer's remaining error is its trapezoid rule on ``C^T nu - g`` and on the
  applied forces, O(h^2);
* a rigid body (one link), where the rigid-body and the whole-body observers must agree;
* free flight (no external force): the true reading is 0; the rigid-body observer reads the
  arm's own motion;
* the rotor model against the simulator's filter (``geodyn_ros.sim.rotor_filter_step``).

Tolerances: the observer's error against the filtered truth was measured at a few 1e-5 N and
N m (pushes of 1-3 N on a robot whose links swing at up to 2 rad/s, h = 1 ms); the bounds are
1e-3 (N, N m), thirty times above, a thousandth of the push, and far below the rigid-body
observer's free-flight reading (> 0.3 N).
"""
from __future__ import annotations

import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.rejection.observer import (MomentumObserver, RigidBodyObserver, RotorSpeedModel, wrench_to_body,
                                         wrench_to_spatial)
from geodyn_ros.control.rotors import RotorParams, load_actuation_config
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.sim import ActuatedSim, MujocoSim, rotor_filter_step

REPO = Path(__file__).resolve().parents[3]
if str(REPO / "bench" / "loops") not in sys.path:
    sys.path.insert(0, str(REPO / "bench" / "loops"))

BOUND = 1e-3          # N and N m (module docstring)
K_O, H = 30.0, 1e-3
TOOL = ("link4", np.array([0.03, 0.0, -0.12]))     # 3 cm off link4's axis, at its end


@pytest.fixture(scope="module")
def cfg():
    return load_actuation_config("hexarotor")


def _tool_point(model, C, q, link, point):
    kin = gd.forward_kinematics(model, C, np.zeros((1, 6)), np.stack([q, q * 0]))
    b = model.body_of_link(link)
    T = kin.poses[b] @ np.linalg.solve(model.link_home[model.link_names[b]], model.link_home[link])
    return T[:3, :3] @ point + T[:3, 3]


def _push(sim, body, x, F):
    """Force F (world) at the point x through MuJoCo's xfrc_applied (at the body's CoM, plus the moment)."""
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_kinematics(m, d)
    d.xfrc_applied[body, :3] = F
    d.xfrc_applied[body, 3:] = np.cross(x - d.xipos[body], F)


def _applied(sim, joint_rows=True):
    """(6+n,) the generalized force MuJoCo's xfrc_applied exerts in the current state: base rows the
    spatial wrench in closed form (force at each body's CoM plus the torque), joint rows by mj_applyFT."""
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    W, qf = np.zeros(6), np.zeros(m.nv)
    for b in range(1, m.nbody):
        f, n = d.xfrc_applied[b, :3], d.xfrc_applied[b, 3:]
        if f.any() or n.any():
            W += np.r_[np.cross(d.xipos[b], f) + n, f]
            mujoco.mj_applyFT(m, d, f, n, d.xipos[b], b, qf)
    return np.r_[W, qf[sim._dadr]] if joint_rows else W


def _resolved(sim, body, x, obs):
    """``(x, P, rank)``: the projector onto the force directions at the point x of body that the
    observer's frame chain resolves, from MuJoCo's point Jacobian of the chain's dofs (mj_jac)."""
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    jacp = np.zeros((3, m.nv))
    mujoco.mj_jac(m, d, jacp, None, x, body)
    Jp = jacp[:, sim._dadr[obs._chain]].T                       # (k, 3)
    _, sv, Vt = np.linalg.svd(Jp)
    keep = sv > obs.frame_rcond * sv[0]
    return x, Vt[keep].T @ Vt[keep], int(keep.sum())


def _hover_pd(model, q0):
    """Joint torques holding the arm near q0 (swinging it for the first 0.2 s) and a base wrench near the weight."""
    def law(t, q, qd):
        swing = 0.3 * np.sin(10.0 * t + np.arange(len(q0))) if t < 0.2 else 0.0
        return 20.0 * (q0 + swing - q) - 1.0 * qd
    W = np.array([0.02, -0.01, 0.01, 0.0, 0.0, model.total_mass * 9.81 * 1.01])
    return law, W


def test_push_on_a_link_matches_mujoco_filtered(cfg):
    """Ideal rotors and joints (the applied forces exactly known): a push at the tool point and then
    one on the base; every row of r against MuJoCo's force filtered at K_O; the frame split once
    the estimate settled (the arm held: the split solves J_p(q)^T f = r_q with the Jacobian of
    this sample, so it lags by 1 / K_O where the arm moves)."""
    sim = ActuatedSim(hexarotor_source(), cfg, ideal_rotors=True, ideal_joints=True, joint_limits=False)
    model, n = sim.model, sim.model.n_joints
    obs = MomentumObserver(model, K_O, frame=TOOL[0], frame_point=TOOL[1])
    C0 = np.eye(4)
    C0[:3, 3] = (0.1, -0.2, 1.0)
    q0 = np.array([0.3, -0.2, 0.5, -0.3, 0.2, 0.4])
    sim.reset(C0, np.array([0.1, -0.2, 0.3, 0.2, 0.1, -0.1]), q0, np.zeros(n))
    law, W = _hover_pd(model, q0)
    tool_body = mujoco.mj_name2id(sim.mj_model, mujoco.mjtObj.mjOBJ_BODY, TOOL[0])
    F = np.array([1.2, -2.0, 0.8])
    a = np.exp(-K_O * H)
    truth, worst, start, settled = np.zeros(6 + n), 0.0, np.zeros(6 + n), {}
    tau, f_truth, f_worst, pushed = np.zeros(n), np.zeros(3), 0.0, None
    for k in range(1100):
        t = sim.time
        C, Vb, q, qd = sim.base_pose(), sim.base_twist_body(), sim.q(), sim.qd()
        if k == 0:
            obs.reset(t, C, Vb, q, qd)
        else:
            est = obs.update(t, C, Vb, q, qd, W, tau)
            truth = a * truth + (1 - a) * 0.5 * (start + _applied(sim))   # the last step's push, both ends
            worst = max(worst, float(np.abs(est.generalized - truth).max()))
            # the frame force: the resolved part of the last step's push at the tool, filtered (eq. (3))
            x, P, rank = _resolved(sim, tool_body, _tool_point(model, C, q, *TOOL), obs)
            f_truth = a * f_truth + (1 - a) * (P @ F if pushed == "tool" else 0.0)
            f_worst = max(f_worst, float(np.abs(est.frame_force - f_truth).max()))
            if k in (599, 999):
                settled[k] = (est, C, x, P, rank, f_truth)
        tau = law(t, q, qd)
        sim.set_command(W, tau)
        sim.mj_data.xfrc_applied[:] = 0.0
        pushed = "tool" if 200 <= k < 600 else "base" if 700 <= k < 1000 else None
        if pushed == "tool":
            _push(sim, tool_body, _tool_point(model, C, q, *TOOL), F)
        elif pushed == "base":
            _push(sim, sim._base_body, C[:3, 3] + C[:3, :3] @ np.array([0.01, 0.02, 0.0]), F)
        start = _applied(sim)
        sim.step()
    assert worst < BOUND, f"observer vs MuJoCo's filtered force: {worst:.2e}"
    # the frame split against the force directions MuJoCo's point Jacobian of the chain resolves at
    # each sample (levers >= 5 % of the largest), filtered as the observer filters
    # (its bound: the rows' error, <= 1e-4 N m, over the shortest lever kept, >= 5 % of ~0.36 m)
    assert f_worst < 5 * BOUND, f"frame force vs MuJoCo's resolved push, filtered: {f_worst:.2e}"
    e, C, x, P, rank, f_truth = settled[599]          # 400 steps (12 time constants) into the tool push
    assert e.frame_rank == rank == 2          # the arm's line: the force along it is seen through mm levers only
    assert np.allclose(e.frame_force, f_truth, atol=5 * BOUND)
    assert np.allclose(wrench_to_spatial(C, e.base_wrench_body), e.wrench - np.r_[np.cross(x, e.frame_force),
                                                                                 e.frame_force], atol=1e-12)
    e, C = settled[999][:2]                            # 300 steps into the push on the base
    assert np.abs(e.frame_force).max() < BOUND
    assert np.allclose(wrench_to_spatial(C, e.base_wrench_body), e.wrench, atol=1e-3)


def _rigid_body_urdf():
    return """<robot name="brick"><link name="brick"><inertial><origin xyz="0.02 -0.01 0.03" rpy="0.3 -0.2 0.1"/>
      <mass value="1.7"/><inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0015" izz="0.025"/>
      </inertial></link></robot>"""


def test_rigid_body_both_observers_agree_with_mujoco():
    """One rigid body, tumbling under gravity and a body wrench, pushed at a point: both observers
    read the same momentum balance and match MuJoCo's push filtered at K_O -- the whole-body
    observer filters the spatial wrench (world axes), the rigid-body one the body wrench (base
    axes), so each is compared with the truth filtered in its own axes."""
    sim = MujocoSim(_rigid_body_urdf())
    model = sim.model
    wb, rb = MomentumObserver(model, K_O), RigidBodyObserver(model, K_O)
    sim.reset(np.eye(4), np.array([1.5, -2.0, 0.7, 0.1, 0.2, 0.3]), np.zeros(0), np.zeros(0))
    W = np.array([0.05, -0.03, 0.02, 0.5, -0.2, 12.0])
    F, off = np.array([0.7, 0.4, -1.1]), np.array([0.05, 0.04, -0.03])
    a = np.exp(-K_O * H)
    truth, truth_b, worst, start, free, C0 = np.zeros(6), np.zeros(6), 0.0, np.zeros(6), [], None
    none = np.zeros(0)
    for k in range(600):
        t = sim.time
        C, Vb = sim.base_pose(), sim.base_twist_body()
        if k == 0:
            wb.reset(t, C, Vb, none, none)
            rb.reset(t, C, Vb, none, none)
        else:
            e1, e2 = wb.update(t, C, Vb, none, none, W), rb.update(t, C, Vb, none, none, W)
            end = _applied(sim, joint_rows=False)
            truth = a * truth + (1 - a) * 0.5 * (start + end)
            truth_b = a * truth_b + (1 - a) * 0.5 * (wrench_to_body(C0, start) + wrench_to_body(C, end))
            worst = max(worst, float(np.abs(e1.wrench - truth).max()), float(np.abs(e2.wrench_body - truth_b).max()))
            if k < 200:
                free.append(float(np.abs(e2.wrench).max()))
        sim.set_command(W, none)
        sim.mj_data.xfrc_applied[:] = 0.0
        if k >= 200:
            _push(sim, sim._base_body, C[:3, :3] @ off + C[:3, 3], F)
        start, C0 = _applied(sim, joint_rows=False), C
        sim.step()
    assert max(free) < BOUND
    assert worst < BOUND, worst


def test_free_flight_and_push_in_flight(cfg):
    """The hexarotor at ff2 along the figure eight, arm swinging, rotors lagging, joints elastic:
    the observers run on the commanded rotor speeds (rotor model) and the spring torques. Free
    flight: the whole-body reads ~0, the rigid-body reads the arm; then a 2 N push on the tool
    (the total wrench against MuJoCo's; the tool split, whose resolved directions turn with the
    arm's 35 deg swings, is checked against MuJoCo's Jacobian above, with the arm held)."""
    import bench_rejection as br
    from geodyn_ros.control.rejection import Rejection, RejectionOptions
    from geodyn_ros.control.rotors import Allocation
    model = cfg.load_model(hexarotor_source())
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    obs = [Rejection(RejectionOptions(wrench_feedforward=True, observer=kind, frame=TOOL[0],
                                      frame_point=tuple(TOOL[1])), model, al, cfg.rotors, cfg.elastic,
                     gravity=(0.0, 0.0, -9.81)) for kind in ("whole_body", "rigid_body")]
    F = np.array([1.2, -0.96, -1.28])                 # 2 N
    out = br.fly_flatness("ff2", "exact", None, duration=1.2, preroll=0.3, push=(0.5, 1.0, F), observers=obs)
    assert out["row"].diverged is None
    errs, _ = br.filtered_truth_errors(out, 0, (0.8, 1.0), K_O, H)
    worst = float(errs.max())
    free_wb, free_rb = [], []
    for t, (e_wb, e_rb) in out["readings"]:
        if 0.0 <= t < 0.5 and e_wb is not None:
            free_wb.append(float(np.abs(e_wb.wrench_body).max()))
            free_rb.append(float(np.linalg.norm(e_rb.wrench_body[3:])))
    assert worst < BOUND, f"in flight, against MuJoCo's filtered push: {worst:.2e}"
    assert max(free_wb) < BOUND, max(free_wb)
    assert min(free_rb) > 300 * max(free_wb) and max(free_rb) > 0.3, (min(free_rb), max(free_rb))


def test_rotor_model_is_the_simulators_filter():
    rp = RotorParams(("ccw", "cw", "ccw"), time_constant_up=0.0125, time_constant_down=0.025, max_rot_velocity=800.0)
    m = RotorSpeedModel(rp)
    m.reset([100.0, 500.0, 0.0])
    x = np.array([100.0, 500.0, 0.0])
    rng = np.random.default_rng(3)
    for _ in range(50):
        cmd = rng.uniform(0, 1000, 3)
        x = rotor_filter_step(x, cmd, 1e-3, 0.0125, 0.025, 800.0)
        assert np.allclose(m.advance(cmd, 1e-3), x, rtol=1e-14, atol=0)


def test_wrench_maps_are_inverse_and_match_Ad():
    from geodyn_ros.lie import Ad, exp_se3
    rng = np.random.default_rng(0)
    C = exp_se3(rng.normal(size=6))
    W = rng.normal(size=6)
    assert np.allclose(wrench_to_body(C, W), Ad(C).T @ W, atol=1e-13)
    assert np.allclose(wrench_to_spatial(C, wrench_to_body(C, W)), W, atol=1e-13)


@pytest.mark.parametrize("call, match", [
    (lambda m: MomentumObserver(m, 0.0), "bandwidth"),
    (lambda m: MomentumObserver(m, float("nan")), "bandwidth"),
    (lambda m: MomentumObserver(m, "fast"), "bandwidth"),
    (lambda m: MomentumObserver(m, gravity=(0, 0)), "gravity"),
    (lambda m: MomentumObserver(m, frame="no_such_link"), "no_such_link"),
    (lambda m: MomentumObserver(m, frame="link4", frame_point=(0, 0)), "frame_point"),
    (lambda m: MomentumObserver(m, frame="link4", frame_rcond=1.0), "frame_rcond"),
    (lambda m: MomentumObserver("model"), "model"),
])
def test_bad_construction_names_the_argument(aerial_manipulator, call, match):
    with pytest.raises(ValueError, match=match):
        call(aerial_manipulator)


def test_bad_samples_name_the_argument(aerial_manipulator):
    m = aerial_manipulator
    n = m.n_joints
    obs = MomentumObserver(m)
    obs.update(0.0, np.eye(4), np.zeros(6), np.zeros(n), np.zeros(n), np.zeros(6))
    good = dict(C=np.eye(4), V_body=np.zeros(6), q=np.zeros(n), qd=np.zeros(n), base_wrench_body=np.zeros(6))
    for name, bad in (("C", np.eye(3)), ("V_body", np.full(6, np.nan)), ("q", np.zeros(n + 1)),
                      ("qd", np.full(n, np.inf)), ("base_wrench_body", np.zeros(5))):
        with pytest.raises(ValueError, match=name):
            obs.update(1e-3, **{**good, name: bad})
    with pytest.raises(ValueError, match="joint_torque"):
        obs.update(1e-3, **good, joint_torque=np.zeros(n - 1))
    with pytest.raises(ValueError, match="t: expected a time after"):
        obs.update(0.0, **good)
    e = obs.update(1e-3, **good)           # after every refusal the next good sample is read
    assert np.all(e.generalized == e.generalized) and e.t == 1e-3
