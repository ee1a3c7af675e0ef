"""The rejection options (geodyn_ros.control.rejection) of the flatness, actuated and LQR controllers.

Independent references:
* closed-form steady states in hover on a MuJoCo plant that differs from the controller's model
  (built from a perturbed URDF and rotor constant, ``bench/loops/bench_rejection.perturbed_plant``):
  the integral that carries a thrust deficit ``eps`` is ``k_i z_z = -eps / (1 - eps) m g``; the
  thrust scale that explains a thrust constant ``0.95`` on a plant 10 % heavier is
  ``0.95 / 1.1``; the CoM offset is the plant's CoM minus the model's (both from their URDFs);
* the controllers' own law: with the options off the command is the old one, and with them on the
  first cycle (no estimate yet) gives the same command;
* the anti-windup and the integral model by construction (clamp, hold, ``z+ = z + dt s``).

Tolerances are stated where they are used: each is the residual of the stated exponential
convergence after the simulated time, with a margin of 2 or more.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.flatness import FlatnessController
from geodyn_ros.control.lqr import LqrController, LqrWeights, dare_gain
from geodyn_ros.control.rejection.lqr import integral_model, integral_weights
from geodyn_ros.control.rejection import REJECTION_OPTIONS, Rejection, RejectionOptions
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.trajectories import figure_eight_reference

REPO = Path(__file__).resolve().parents[3]
if str(REPO / "bench" / "loops") not in sys.path:
    sys.path.insert(0, str(REPO / "bench" / "loops"))
import bench_rejection as br  # noqa: E402


def hover(t, order):
    return figure_eight_reference(t, order, amplitude=(0.0, 0.0, 0.0), yaw_amplitude=0.0, q_amplitude=np.zeros(6))


@pytest.fixture(scope="module")
def hexa():
    cfg = load_actuation_config("hexarotor")
    model = cfg.load_model(hexarotor_source())
    return cfg, model, Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)


# ----------------------------------------------------------------------------- options
@pytest.mark.parametrize("kw, name", [
    ({"wrench_feedforward": 1}, "wrench_feedforward"), ({"integral_action": "yes"}, "integral_action"),
    ({"observer": "kalman"}, "observer"), ({"observer_bandwidth": 0.0}, "observer_bandwidth"),
    ({"observer_bandwidth": float("inf")}, "observer_bandwidth"), ({"integral_bandwidth": -1.0}, "integral_bandwidth"),
    ({"integral_limit": True}, "integral_limit"), ({"thrust_estimate_bandwidth": "1"}, "thrust_estimate_bandwidth"),
    ({"thrust_scale_limits": (1.1, 1.5)}, "thrust_scale_limits"), ({"thrust_scale_limits": 0.5}, "thrust_scale_limits"),
    ({"com_estimate_limit": 0.0}, "com_estimate_limit"), ({"timestep": float("nan")}, "timestep"),
    ({"frame_point": (0.0, 0.0)}, "frame_point"), ({"com_estimate_force_point": (0.0, float("nan"), 0.0)},
                                                   "com_estimate_force_point"),
    ({"com_estimate_force_point": "base"}, "com_estimate_force_point"),
    ({"com_estimate_force_point": ("a", 0, 0)}, "com_estimate_force_point"),
])
def test_bad_options_name_the_field(kw, name):
    with pytest.raises(ValueError, match=f"^{name}: "):
        RejectionOptions(**kw)


def test_options_default_off_and_all_on():
    assert not RejectionOptions().active and RejectionOptions().summary() == "off"
    a = RejectionOptions.all(observer_bandwidth=20)
    assert a.active and all(getattr(a, k) for k in REJECTION_OPTIONS) and a.observer_bandwidth == 20.0
    assert a.summary() == "+".join(REJECTION_OPTIONS)


def test_controllers_refuse_bad_rejection(hexa):
    cfg, model, al = hexa
    with pytest.raises(ValueError, match="^rejection: "):
        FlatnessController(model, al, cfg.rotors, cfg.elastic, rejection={"integral_action": True})
    tcfg = load_actuation_config()
    from geodyn_ros.loops.actuated import tilthex_source
    tm = tcfg.load_model(tilthex_source())
    tal = Allocation.from_frames(tcfg.rotor_frames(tm)[1], tcfg.rotors)
    with pytest.raises(ValueError, match="^model: "):
        ActuatedController(tal, tcfg.rotors, tcfg.elastic, tm.joint_names, rejection=RejectionOptions.all())


# ----------------------------------------------------------------------------- off means the old law
def _flat_inputs(model, cfg, t=0.3):
    ref = figure_eight_reference(t, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    rng = np.random.default_rng(5)
    C = flat.base_pose.copy()
    C[:3, 3] += rng.normal(scale=0.01, size=3)
    Vb = gd.lie.Ad_inv(C) @ flat.base_twist[0] + rng.normal(scale=0.05, size=6)
    q, qd = ref.q[0] + rng.normal(scale=0.01, size=6), ref.q[1]
    return C, Vb, q, qd, q + 0.01, qd, ref, flat


@pytest.mark.parametrize("level", ["rigid", "ff0", "ff1", "ff2"])
def test_flatness_off_and_first_cycle_are_the_old_law(hexa, level):
    cfg, model, al = hexa
    C, Vb, q, qd, th, thd, ref, flat = _flat_inputs(model, cfg)
    old = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, level)
    off = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, level, rejection=RejectionOptions())
    on = FlatnessController(model, al, cfg.rotors, cfg.elastic, None, level, rejection=RejectionOptions.all())
    assert off.rejection is None and on.rejection is not None
    a = old.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat)
    for c in (off.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat),
              on.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat, t=0.0)):
        for f in ("omega", "u", "thrust", "torque", "joint_torque"):
            assert np.array_equal(getattr(a, f), getattr(c, f)), f
    with pytest.raises(ValueError, match="^t: "):      # a second cycle needs its time (or options.timestep)
        on.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat)
    for kw, name in (({"rotor_speed": np.full(6, np.nan)}, "rotor_speed"), ({"rotor_speed": np.ones(5)}, "rotor_speed")):
        with pytest.raises(ValueError, match=f"^{name}: "):
            on.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat, t=1e-3, **kw)
    with pytest.raises(ValueError, match="^theta: "):
        on.command(C, Vb, q, qd, th[:3], thd, ref.com, ref.yaw, ref.q, flat, t=2e-3)
    c = on.command(C, Vb, q, qd, th, thd, ref.com, ref.yaw, ref.q, flat, t=3e-3)      # the next good cycle
    assert np.all(np.isfinite(c.omega)) and on.rejection.estimate is not None


def test_lqr_first_cycle_is_the_old_law(hexa):
    from geodyn_ros.loops.lqr import _hover
    cfg, model, al = hexa
    lin, _, (A, B), _, _ = _hover(None, 1e-3)
    w = LqrWeights()
    _, K = dare_gain(A, B, w.Q(lin.n, lin.ne, lin.nr), w.R(lin.nr, lin.ne, lin.nq))
    C, Vb, q, qd, th, thd, ref, flat = _flat_inputs(model, cfg)
    old = LqrController(lin, lambda t: K)
    new = LqrController(lin, lambda t: K, rejection=RejectionOptions(wrench_feedforward=True, thrust_estimate=True))
    a, b = old.command(0.0, C, Vb, q, qd, th, thd, ref.q, flat), new.command(0.0, C, Vb, q, qd, th, thd, ref.q, flat)
    assert np.array_equal(a.omega, b.omega) and np.array_equal(a.u, b.u)
    integ = LqrController(lin, lambda t: K, rejection=RejectionOptions(integral_action=True))
    with pytest.raises(ValueError, match="^gains: integral_action needs"):
        integ.command(0.0, C, Vb, q, qd, th, thd, ref.q, flat)


# ----------------------------------------------------------------------------- the pieces
def test_integral_clamps_and_holds_while_saturated(hexa):
    cfg, model, al = hexa
    rj = Rejection(RejectionOptions(integral_action=True), model, al, cfg.rotors, cfg.elastic,
                   gravity=(0.0, 0.0, -9.81), position_gain=64.0)
    wn = np.sqrt(64.0 / model.total_mass)
    assert np.allclose(rj.ki_position, 64.0 * 0.1 * wn)                 # k_i = k_p omega_n / 10
    f = rj.integral_force([0.01, 0.0, 0.0], 0.5)
    assert np.allclose(f, [rj.ki_position[0] * 0.005, 0.0, 0.0], rtol=1e-12)
    rj.saturated = True
    assert np.array_equal(rj.integral_force([1.0, 1.0, 1.0], 0.5), f)   # held while a rotor clipped
    rj.saturated = False
    big = rj.integral_force([-100.0, 100.0, 0.0], 10.0)
    lim = 0.2 * model.total_mass * 9.81
    assert np.allclose(big[:2], [-lim, lim], rtol=1e-12) and big[2] == 0.0
    ctrl = FlatnessController(model, al, cfg.rotors, cfg.elastic, rejection=RejectionOptions(integral_action=True))
    from geodyn_ros.control.flatness import FlatnessGains
    ctrl.set_gains(FlatnessGains(kp_position=100.0))                  # live tuning reaches the integral gain
    assert np.allclose(ctrl.rejection.ki_position, 100.0 * 0.1 * np.sqrt(100.0 / model.total_mass))


def test_frozen_cycles_change_nothing_and_restart_keeps_what_was_learned(hexa):
    """A failsafe's command of a predicted state (``Rejection.frozen``) reads the last estimate
    and integrates nothing; :meth:`Rejection.restart` then starts the observer afresh (no
    estimate at its first sample, the gap not integrated) and keeps the integrators and the
    thrust scale. Oracle: the integral's own rule, ``z+ = z + dt e`` with the CoM error ``e``."""
    cfg, model, al = hexa
    C, Vb, q, qd, th, thd, ref, flat = _flat_inputs(model, cfg)
    opts = RejectionOptions(wrench_feedforward=True, integral_action=True, thrust_estimate=True)
    a = FlatnessController(model, al, cfg.rotors, cfg.elastic, rejection=opts)
    args = (ref.com, ref.yaw, ref.q, flat)
    for k in range(3):
        Ck = C.copy()
        Ck[2, 3] += 1e-3 * k
        a.command(Ck, Vb, q, qd, th, thd, *args, t=k * 1e-3)
    ra = a.rejection
    est, z, k = ra.estimate, ra.z_position.copy(), ra.thrust_scale
    assert est is not None and np.abs(z).max() > 0
    ra.frozen = True                               # two held cycles, a far-off predicted state
    for t in (5e-3, 4e-3):
        Cp = C.copy()
        Cp[:3, 3] += 0.5
        held = a.command(Cp, Vb * 3, q, qd, th, thd, *args, t=t)
        assert ra.estimate is est and np.array_equal(ra.z_position, z) and ra.thrust_scale == k
    assert np.all(np.isfinite(held.omega))
    ra.frozen = False
    ra.restart()
    assert ra.estimate is None and ra.last_time is None and np.array_equal(ra.z_position, z) and ra.thrust_scale == k
    a.command(C, Vb, q, qd, th, thd, *args, t=0.5)
    assert ra.estimate is None and np.array_equal(ra.z_position, z)       # the restart's first sample
    c = a.command(C, Vb, q, qd, th, thd, *args, t=0.501)
    assert ra.estimate is not None and np.all(np.isfinite(c.omega))
    e = gd.center_of_mass(model, C, None, q)[0] - ref.com[0]       # the CoM error of this sample
    assert np.allclose(ra.z_position - z, 1e-3 * e, rtol=1e-9, atol=0)   # 1 ms integrated, not the 0.5 s gap


def test_integral_model_appends_the_integrators():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(8, 8)), rng.normal(size=(8, 3))
    Aa, Ba = integral_model(A, B, 0.01)
    s, z, v = rng.normal(size=8), rng.normal(size=3), rng.normal(size=3)
    nxt = Aa @ np.r_[s, z] + Ba @ v
    assert np.allclose(nxt[:8], A @ s + B @ v, atol=1e-14) and np.allclose(nxt[8:], z + 0.01 * s[3:6], atol=1e-15)
    Q = integral_weights(np.eye(8), (0.1, 0.2, 0.4), 0.5)
    assert np.allclose(np.diag(Q)[8:], 1.0 / (np.array([0.1, 0.2, 0.4]) / 0.5) ** 2)


# ----------------------------------------------------------------------------- closed forms in MuJoCo
def test_integral_alone_carries_a_thrust_deficit(hexa):
    """Hover, rotors 5 % weaker than the model, only integral action (omega_i = 1 rad/s: the PID's
    slowest modes -1.3 +- 1.2j rad/s, so after 4 s the integral is within e^-5.2 = 0.6 % of its
    closed form and the 32 mm sag within 0.2 mm; bounds 1 % and 1 mm)."""
    cfg, model, al = hexa
    o = br.fly_flatness("ff2", "thrust-5", RejectionOptions(integral_action=True, integral_bandwidth=1.0),
                        duration=0.3, preroll=4.0, reference=hover)
    rj, log = o["ctrl"].rejection, o["row"].log
    m, g = model.total_mass, 9.81
    expect = -0.05 / 0.95 * m * g
    assert abs(rj.ki_position[2] * rj.z_position[2] / expect - 1.0) < 1e-2
    assert np.abs((log.p - log.p_d).mean(axis=0)).max() < 1e-3


def test_estimates_converge_to_the_plant(hexa):
    """Hover on the combined plant (every link 10 % heavier, rotors 5 % weaker, base CoM 5 mm off),
    the observer's feedforward and both estimates on (no integral: its slow unwinding of the
    start-up would hide the estimates' own residual), estimate bandwidths 2 rad/s: after 3 s (e^-6
    of the initial error) the thrust scale is 0.95 / 1.1 within 1e-3 (residual 3e-4) and the CoM
    offset the plant's CoM minus the model's within 0.05 mm (residual 0.008 mm)."""
    cfg, model, al = hexa
    opts = RejectionOptions(wrench_feedforward=True, thrust_estimate=True, com_estimate=True,
                            thrust_estimate_bandwidth=2.0, com_estimate_bandwidth=2.0)
    o = br.fly_flatness("ff2", "combined", opts, duration=0.3, preroll=3.0, reference=hover)
    rj, log, plant = o["ctrl"].rejection, o["row"].log, o["sim"].model
    assert abs(rj.thrust_scale - 0.95 / 1.1) < 1e-3
    q = hover(0.0, 0).q[0]
    com = [gd.center_of_mass(mdl, np.eye(4), None, q)[0] for mdl in (plant, model)]
    assert abs((com[0] - com[1])[0] - 0.0050 * 2.75 / plant.total_mass) < 1e-12     # the closed form, checked
    assert np.allclose(rj.com_offset[:2], (com[0] - com[1])[:2], atol=5e-5)          # 0.05 mm of 3.1 mm
    assert np.abs((log.p - log.p_d).mean(axis=0)).max() < 1e-4                      # the plant's CoM: 0.1 mm


def test_a_push_is_not_read_as_a_com_offset(hexa):
    """Hover, a steady horizontal push of 20 % of the weight at the base origin (10.4 cm above the
    CoM), every option on, CoM bandwidth 2 rad/s (3 s: e^-6 of the start). Read whole, the push's
    moment about the CoM is taken for a CoM offset (``com_estimate_force_point=None``, the old
    rule): ``|delta| = h F cos(theta) / (m g)`` with ``tan(theta) = F / (m g)`` (the tilt that
    carries it; the moment ``h z_b x F`` is perpendicular to the rotors' force ``m g e_z``), 20.4 mm,
    within 6 % (seen 3.6 % low: the thrust-scale estimate takes the push's component along the
    thrust, ``F sin(theta)``, for a thrust error, k = 0.963, and with it that share of the rotors'
    moment; the arm's pose moves ``h`` by under 0.01 %), and the CoM sits about that far off. With the
    default force point (the rotors' centroid: the base origin, where this push acts) the estimate stays under 0.1 mm
    (seen 1.4 um) and the CoM within 2.5 mm of its reference (seen 1.9 mm after 3 s: the integral,
    a tenth of the position loop's bandwidth, still unwinding the push's onset; MuJoCo is
    deterministic, so the figure does not move with the machine's load)."""
    from geodyn_ros.loops.underactuated import simulate_underactuated
    from geodyn_ros.sim.world import Push, World
    cfg, model, al = hexa
    m, g = model.total_mass, 9.81
    F = 0.2 * m * g
    world = World(name="push", pushes=(Push("base", (F, 0.0, 0.0), start=-3.0, ramp=0.5),))
    q = hover(0.0, 0).q[0]
    h = -gd.center_of_mass(model, np.eye(4), None, q)[0][2]
    theta = np.arctan(F / (m * g))
    expect = h * F * np.cos(theta) / (m * g)
    out = {}
    for point in ("rotors", None):       # the hexarotor's rotors lie in its base's plane: the push's point
        opts = RejectionOptions.all(com_estimate_bandwidth=2.0, com_estimate_force_point=point)
        r = simulate_underactuated("ff2", 0.3, preroll=3.0, world=world, reference=hover, rejection=opts)
        assert r.diverged is None
        out[point] = (np.asarray(r.rejection.com_offset), np.linalg.norm((r.log.p - r.log.p_d).mean(axis=0)))
    old, new = out[None], out["rotors"]
    assert abs(np.linalg.norm(old[0]) / expect - 1.0) < 0.06, (old[0], expect)
    assert old[1] > 0.5 * expect
    assert np.linalg.norm(new[0]) < 1e-4 and new[1] < 2.5e-3, new


def test_a_push_at_the_tool_is_not_read_as_a_com_offset_with_the_frame(hexa):
    """Hover, a steady 4 N horizontal push at the tool point (link4, 12 cm down its axis), every
    option on, CoM bandwidth 2 rad/s, 3 s. Without a frame the CoM estimate reads the push's
    lever arm from the rotors as a CoM offset (seen 45 mm, the CoM 50 mm off its reference). With
    ``frame`` at the tool, the whole-body observer's joint rows put the force there, the CoM
    estimate reads the base's remainder and stays under 3 mm (seen 1.7 mm: the joint rows' split
    is filtered like the observer and lags the onset), and the CoM sits within half the offset
    without (seen 0.6 mm)."""
    from geodyn_ros.examples.rejection_table import END_EFFECTOR
    from geodyn_ros.loops.underactuated import simulate_underactuated
    from geodyn_ros.sim.world import Push, World
    link, point = END_EFFECTOR["collinear"]
    world = World(name="push", pushes=(Push(link, (4.0, 0.0, 0.0), point, start=-3.0, ramp=0.5),))
    out = {}
    for frame in (None, link):
        opts = RejectionOptions.all(com_estimate_bandwidth=2.0, frame=frame,
                                    frame_point=point if frame else (0.0, 0.0, 0.0))
        r = simulate_underactuated("ff2", 0.3, preroll=3.0, world=world, reference=hover, rejection=opts)
        assert r.diverged is None
        out[frame] = (np.linalg.norm(r.rejection.com_offset), np.linalg.norm((r.log.p - r.log.p_d).mean(axis=0)))
    assert out[None][0] > 5e-3, out
    assert out[link][0] < 3e-3 and out[link][1] < 0.5 * out[None][1], out


def test_actuated_rejects_a_thrust_deficit():
    """The TiltHex in hover (Table 3 slowed a millionfold), rotors 5 % weaker, every option on
    (thrust estimate 2 rad/s): after 2.5 s the thrust scale is 0.95 within 1e-3 (residual e^-5 of
    0.05) and the base sits on its reference (without the options: 5.2 mm low, bench_rejection)."""
    from geodyn_ros.loops.actuated import scaled_reference
    (off, ax, mean, rms), ctrl = br.fly_actuated("thrust-5", RejectionOptions.all(thrust_estimate_bandwidth=2.0),
                                                 duration=0.3, preroll=2.5, reference=scaled_reference(1e-6))
    assert abs(ctrl.rejection.thrust_scale - 0.95) < 1e-3
    assert off < 1e-4


def test_lqr_integral_states_remove_the_offset(hexa):
    """The LQR in hover with three integral states (the DARE of the augmented hover model), rotors
    5 % weaker, integral action only: the offset goes (without: 32 mm, bench_rejection). The
    closed loop's integral modes sit at -1.04..-1.06 rad/s for omega_i = 1 (its eigenvalues), so
    after 4 s 32 mm e^-4.2 = 0.5 mm remain; bound 1 mm."""
    from geodyn_ros.loops.lqr import _hover
    lin, _, (A, B), _, _ = _hover(None, 1e-3)
    w = LqrWeights()
    opts = RejectionOptions(integral_action=True, integral_bandwidth=1.0)
    _, K = dare_gain(*integral_model(A, B, 1e-3), integral_weights(w.Q(lin.n, lin.ne, lin.nr), w.base_position, 1.0),
                     w.R(lin.nr, lin.ne, lin.nq))
    (off, ax, mean, rms), ctrl = br.fly_lqr("thrust-5", lambda t: K, opts, duration=0.3, preroll=4.0, reference=hover)
    assert ctrl.integral_bandwidth == 1.0
    assert off < 1e-3, off
