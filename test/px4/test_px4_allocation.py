"""PX4's allocation and thrust model (``geodyn_ros.px4.allocation``, issue 44).

Every expected value comes from outside the module under test:

* **PX4's own unit tests** at the commit the module follows (b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf):
  the effectiveness of ``ActuatorEffectivenessRotorsTest.cpp`` (``AllZeroCase``) and the seven
  airmode-off cases of ``ControlAllocationSequentialDesaturationTest.cpp``, their expected motor
  values typed here from those files' closed forms;
* **hand-worked geometry**: the 500-class X quad of PX4's ``4001_gz_x500`` airframe (CA_ROTORn_PX/PY
  0.13/0.22, -0.13/-0.20, ..., KM +-0.05, CT the module.yaml default 6.5), whose columns are
  ``ct (p x a - km a, a)`` with ``p x (0, 0, -1) = (-p_y, p_x, 0)``; and the square X quad of
  ``10040_sihsim_quadx`` (PX, PY = +-1), whose normalised mix is derived in closed form below;
* **the package's own allocation** (``geometry.rotor_wrench_columns``, gz-sim conventions, FLU),
  which must equal PX4's effectiveness after the FRD -> FLU change of axes;
* **a generic LP solver** (``scipy.optimize.linprog``) for the desaturation rule: the axis that
  gives way is reduced exactly as far as the bounds demand, and no further;
* **root finders** (``scipy.optimize.brentq``) and closed forms for the thrust curve.

Tolerances: the module works in float64; a pseudo-inverse by SVD of a well-conditioned 6 x n matrix
with O(1) to O(10) entries is exact to ~1e-15 relative, the desaturation divides by entries of at
least 0.2 (PX4's own threshold), so 1e-12 absolute on commands in [0, 1] leaves a margin of ~100
over rounding. The LP solver (HiGHS) reports optima to its feasibility tolerance 1e-7: 1e-7 there.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.linalg import null_space
from scipy.optimize import brentq, linprog

from geodyn_ros.control.rotors import Allocation
from geodyn_ros.vehicle import load_vehicle, multirotor_frames, rotor_wrench_columns
from geodyn_ros.px4 import allocation as px

TOL = 1e-12
LP_TOL = 1e-7
R = 1.0 / np.sqrt(2.0)
FRD_TO_FLU = np.diag([1.0, -1.0, -1.0, 1.0, -1.0, -1.0])   # wrench (torque, force): (x, y, z) -> (x, -y, -z)

# PX4's unit-test quad (ControlAllocationSequentialDesaturationTest.cpp make_quad_x_geometry; the same in
# ActuatorEffectivenessRotorsTest.cpp): rotors at (+-1, +-1, 0) in PX4's numbering, axis up, CT 1, KM +-0.05
UNIT_P = [[1, 1, 0], [-1, -1, 0], [1, -1, 0], [-1, 1, 0]]
UNIT_KM = [0.05, 0.05, -0.05, -0.05]
# 4001_gz_x500 (ROMFS/px4fmu_common/init.d-posix/airframes): CA_ROTORn_PX/PY/KM; AX/AY/AZ, PZ, CT defaults
X500_P = [[0.13, 0.22, 0.0], [-0.13, -0.20, 0.0], [0.13, -0.22, 0.0], [-0.13, 0.20, 0.0]]
X500_KM = [0.05, 0.05, -0.05, -0.05]


# ----------------------------------------------------------------------------- effectiveness
def test_effectiveness_of_px4s_unit_test_quad():
    """ActuatorEffectivenessRotorsTest.cpp AllZeroCase: the expected matrix typed from the file."""
    expected = np.array([[-1.0, 1.0, 1.0, -1.0],
                         [1.0, -1.0, 1.0, -1.0],
                         [0.05, 0.05, -0.05, -0.05],
                         [0.0, 0.0, 0.0, 0.0],
                         [0.0, 0.0, 0.0, 0.0],
                         [-1.0, -1.0, -1.0, -1.0]])
    np.testing.assert_allclose(px.rotor_effectiveness(UNIT_P, None, 1.0, UNIT_KM), expected, rtol=0, atol=TOL)


def test_effectiveness_of_the_x500_by_hand():
    """Column i = 6.5 (-p_y, p_x, km, 0, 0, -1) for an upward axis (module.yaml's defaults)."""
    ct = 6.5
    expected = ct * np.array([[-0.22, 0.20, 0.22, -0.20],
                              [0.13, -0.13, 0.13, -0.13],
                              [0.05, 0.05, -0.05, -0.05],
                              [0, 0, 0, 0], [0, 0, 0, 0],
                              [-1, -1, -1, -1]])
    np.testing.assert_allclose(px.rotor_effectiveness(X500_P, km=X500_KM), expected, rtol=0, atol=TOL)


def test_axis_is_normalised_and_bad_rotors_are_ignored_as_px4_does():
    B = px.rotor_effectiveness(X500_P, km=X500_KM)
    scaled = px.rotor_effectiveness(X500_P, axis=np.tile([0.0, 0.0, -3.7], (4, 1)), km=X500_KM)
    np.testing.assert_allclose(scaled, B, rtol=0, atol=TOL)
    # a zero axis ("bad axis definition, ignore this rotor") or CT = 0: a zero column, the others unchanged
    axis = np.tile([0.0, 0.0, -1.0], (4, 1))
    axis[1] = 0.0
    Z = px.rotor_effectiveness(X500_P, axis=axis, ct=[6.5, 6.5, 0.0, 6.5], km=X500_KM)
    assert not Z[:, 1].any() and not Z[:, 2].any()
    np.testing.assert_allclose(Z[:, [0, 3]], B[:, [0, 3]], rtol=0, atol=TOL)


def test_weak_rows_are_zeroed_as_the_control_allocator_does():
    """ControlAllocator.cpp: a row whose entries are all <= 0.05 is zeroed. CT = 1, KM = 0.05: the
    yaw row is exactly 0.05 -> dropped; CT = 6.5: 0.325 -> kept. Lateral thrust rows of a flat
    vehicle are 0 -> zero anyway."""
    weak = px.Px4Allocator.from_parameters(UNIT_P, None, 1.0, UNIT_KM).effectiveness
    assert not weak[2].any() and weak[0].any()
    strong = px.Px4Allocator.from_parameters(UNIT_P, None, 6.5, UNIT_KM).effectiveness
    np.testing.assert_allclose(strong[2], 6.5 * np.array(UNIT_KM), rtol=0, atol=TOL)


@pytest.mark.parametrize("vehicle", ["quad_x", "tilthex"])
def test_effectiveness_equals_the_packages_allocation_in_flu(vehicle):
    """PX4's B from the vehicle's CA_ROTORn_* equivalent (px4_rotor_parameters) is the package's
    allocation matrix A (gz-sim conventions, geometry.rotor_wrench_columns), FRD -> FLU, per unit
    omega^2 = u omega_max^2: one independent rotor model against the other, signs of KM included."""
    from pathlib import Path
    if vehicle == "quad_x":
        cfg = load_vehicle(Path(__file__).resolve().parents[1] / "data" / "quad_x.yaml")
        frames = cfg.rotor_poses
    else:
        cfg = load_vehicle("tilthex")
        frames = multirotor_frames(cfg.arm_length, cfg.alpha, cfg.beta)
    r = cfg.rotors
    A = rotor_wrench_columns(frames, r.motor_constant, r.spin * r.drag_constant)
    B = px.rotor_effectiveness(**px.px4_rotor_parameters(frames, r))
    np.testing.assert_allclose(FRD_TO_FLU @ B / r.max_rot_velocity ** 2, A, rtol=1e-12, atol=1e-18)


# ----------------------------------------------------------------------------- the mix
def test_normalised_mix_of_the_square_quad_in_closed_form():
    """10040_sihsim_quadx (PX, PY = +-1, CT 6.5, KM +-0.05). B^+ has columns proportional to B's rows
    (they are orthogonal): roll (-1, 1, 1, -1)/(4 ct), pitch (1, -1, 1, -1)/(4 ct), yaw (1, 1, -1, -1)
    /(4 ct km), thrust z -(1, 1, 1, 1)/(4 ct). PX4's scales (ControlAllocationPseudoInverse.cpp):
    roll = pitch = sqrt(|col|^2 / (4 / 2)) = sqrt(2)/(4 ct), yaw = the largest entry 1/(4 ct km),
    thrust = the mean |entry| 1/(4 ct). So the normalised mix is +-1/sqrt(2) in roll and pitch,
    +-1 in yaw, -1 in thrust z, whatever CT: full collective thrust is thrust_z = -1."""
    for ct in (1.0, 6.5, 40.0):
        a = px.Px4Allocator(px.rotor_effectiveness(UNIT_P, None, ct, UNIT_KM))
        expected = np.array([[-R, R, 1, 0, 0, -1], [R, -R, 1, 0, 0, -1],
                             [R, R, -1, 0, 0, -1], [-R, -R, -1, 0, 0, -1]])
        np.testing.assert_allclose(a.mix, expected, rtol=0, atol=TOL)
        s = 1.0 / (4 * ct)
        np.testing.assert_allclose(a.scale, [np.sqrt(2) * s, np.sqrt(2) * s, s / 0.05, s, s, s], rtol=1e-12)


@pytest.mark.parametrize("vehicle", ["x500", "tilthex"])
def test_mix_is_a_scaled_moore_penrose_inverse(vehicle):
    """mix * scale satisfies the four Penrose conditions for B (an independent characterisation of
    B^+), and the scaled columns meet PX4's normalisation: max(sqrt(2 mean r^2), sqrt(2 mean p^2))
    = 1 over the non-zero roll/pitch entries, largest yaw entry 1, mean |thrust z| 1."""
    if vehicle == "x500":
        B = px.zero_weak_rows(px.rotor_effectiveness(X500_P, km=X500_KM))
    else:
        cfg = load_vehicle("tilthex")
        B = px.zero_weak_rows(px.rotor_effectiveness(**px.px4_rotor_parameters(
            multirotor_frames(cfg.arm_length, cfg.alpha, cfg.beta), cfg.rotors)))
    mix, scale = px.mix_matrix(B)
    X = mix * scale
    for lhs, rhs in ((B @ X @ B, B), (X @ B @ X, X), ((B @ X).T, B @ X), ((X @ B).T, X @ B)):
        np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-10 * np.abs(rhs).max())
    rp = [np.sqrt(2 * np.mean(mix[np.abs(mix[:, k]) > 1e-3, k] ** 2)) for k in (0, 1)]
    assert max(rp) == pytest.approx(1.0, abs=TOL)
    assert mix[:, 2].max() == pytest.approx(1.0, abs=TOL)
    assert np.mean(np.abs(mix[:, 5])) == pytest.approx(1.0, abs=TOL)


# ----------------------------------------------------------------------------- desaturation
# ControlAllocationSequentialDesaturationTest.cpp, airmode off, setEffectivenessMatrix without the
# normalisation scale (UPDATE_NORMALIZATION_SCALE false); the expected values are the file's closed forms.
PX4_CASES = [
    # (name, (roll, pitch, yaw), thrust_z, expected u before clipping)
    ("AirmodeDisabledOnlyYaw", (0, 0, 1), 0.0, [0, 0, 0, 0]),
    ("AirmodeDisabledThrustZ", (0, 0, 0), -0.75, [0.1875] * 4),
    ("AirmodeDisabledThrustAndYaw", (0, 0, 0.02), -0.75, [0.1875 + 0.1, 0.1875 + 0.1, 0.1875 - 0.1, 0.1875 - 0.1]),
    ("AirmodeDisabledThrustAndSaturatedYaw", (0, 0, 0.25), -0.75, [0.375, 0.375, 0, 0]),
    ("AirmodeDisabledThrustAndPitch", (0, 0.1, 0), -0.75, [0.2125, 0.1625, 0.2125, 0.1625]),
    # 0.8 per motor, yaw 1: yaw diff 1.15 - 0.8, thrust reduced by the 0.15 margin
    ("AirmodeDisabledReducedThrustAndYaw", (0, 0, 1), -3.2, [1.0, 1.0, 0.3, 0.3]),
    # 0.75 per motor, pitch 2: overage 0.75 + 0.5 - 1 = 0.25 taken from the thrust
    ("AirmodeDisabledReducedThrustAndPitch", (0, 2, 0), -3.0, [1.0, 0.0, 1.0, 0.0]),
]


@pytest.mark.parametrize("name, torque, thrust_z, expected", PX4_CASES, ids=[c[0] for c in PX4_CASES])
def test_px4s_own_desaturation_cases(name, torque, thrust_z, expected):
    a = px.Px4Allocator(px.rotor_effectiveness(UNIT_P, None, 1.0, UNIT_KM), update_scale=False)
    np.testing.assert_allclose(a.allocate(torque, (0, 0, thrust_z)), expected, rtol=0, atol=TOL)


def _square_quad(airmode=0):
    return px.Px4Allocator.from_parameters(UNIT_P, None, 6.5, UNIT_KM, airmode=airmode)


#: the closed-form normalised mix of the square quad (test_normalised_mix_of_the_square_quad_in_closed_form)
MIX = np.array([[-R, R, 1, 0, 0, -1], [R, -R, 1, 0, 0, -1], [R, R, -1, 0, 0, -1], [-R, -R, -1, 0, 0, -1]])


def _achieved(u):
    """(roll, pitch, yaw, thrust magnitude) of commands u through the closed-form mix: its columns
    are orthogonal, so each axis is the projection (M_k . u) / |M_k|^2."""
    c = np.array([MIX[:, k] @ u / (MIX[:, k] @ MIX[:, k]) for k in (0, 1, 2, 5)])
    c[3] = -c[3]
    return c


def _lp_max(direction, A_ub, b_ub, bounds):
    """max direction . x subject to A_ub x <= b_ub and bounds (HiGHS)."""
    res = linprog(-np.asarray(direction, float), A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return res.x


def test_roll_at_full_thrust_costs_thrust_not_roll():
    """Airmode off: roll and pitch are preferred over collective thrust, which only goes down. At
    thrust 0.9 a roll of 0.3 needs 0.9 + 0.3/sqrt(2) > 1: PX4 keeps the roll and lowers the thrust
    to the largest value that fits (LP: max T <= 0.9 with T + |roll mix| <= 1)."""
    roll = 0.3
    u = _square_quad().motor_commands((roll, 0, 0), (0, 0, -0.9))
    assert np.all((u >= 0) & (u <= 1))
    (T,) = _lp_max([1.0], A_ub=np.ones((4, 1)), b_ub=1.0 - MIX[:, 0] * roll, bounds=[(0, 0.9)])
    np.testing.assert_allclose(_achieved(u), [roll, 0, 0, T], rtol=0, atol=LP_TOL)
    assert T < 0.9 - 0.1


def test_yaw_gives_way_first_then_the_margin_comes_from_thrust():
    """Airmode off, thrust 0.75, roll 0.1, yaw 0.5: yaw is added last and reduced to the largest value
    whose outputs stay within [0, 1.15] (the MINIMUM_YAW_MARGIN), roll and pitch untouched; then the
    thrust is lowered by the smallest amount that brings every output to <= 1. Both steps checked
    with the LP solver on the closed-form mix."""
    roll, yaw, T0 = 0.1, 0.5, 0.75
    u = _square_quad().motor_commands((roll, 0, yaw), (0, 0, -T0))
    base = T0 + MIX[:, 0] * roll
    (y,) = _lp_max([1.0], A_ub=np.vstack([MIX[:, [2]], -MIX[:, [2]]]),
                   b_ub=np.concatenate([1.15 - base, base]), bounds=[(0, yaw)])
    (d,) = _lp_max([-1.0], A_ub=-np.ones((4, 1)), b_ub=1.0 - (base + MIX[:, 2] * y), bounds=[(0, None)])
    np.testing.assert_allclose(_achieved(u), [roll, 0, y, T0 - d], rtol=0, atol=LP_TOL)
    assert 0 < y < yaw and d > 0 and np.all((u >= 0) & (u <= 1))


def test_low_thrust_roll_gives_way_without_airmode_and_thrust_rises_with_it():
    """Thrust 0.1 with roll 0.5 drives two motors below 0. Airmode off (PX4's default): the thrust is
    never raised, the roll is cut to the largest that fits (LP); airmode 1 (roll/pitch): the roll is
    kept and the thrust is raised to the smallest that fits (LP)."""
    roll, T0 = 0.5, 0.1
    off = _square_quad(0).motor_commands((roll, 0, 0), (0, 0, -T0))
    (r,) = _lp_max([1.0], A_ub=-MIX[:, [0]], b_ub=np.full(4, T0), bounds=[(0, roll)])
    np.testing.assert_allclose(_achieved(off), [r, 0, 0, T0], rtol=0, atol=LP_TOL)
    on = _square_quad(1).motor_commands((roll, 0, 0), (0, 0, -T0))
    (T,) = _lp_max([-1.0], A_ub=-np.ones((4, 1)), b_ub=MIX[:, 0] * roll, bounds=[(T0, None)])
    np.testing.assert_allclose(_achieved(on), [roll, 0, 0, T], rtol=0, atol=LP_TOL)
    assert r < roll and T > T0


def test_invariants_on_random_setpoints():
    """x500: the published commands are always in [0, 1]. A setpoint for which no stage of PX4's
    allocation is out of bounds (the mix without yaw, then with it: ``unsaturated``) is allocated as
    the plain mix, and the achieved control (B u, independent of the mix, times PX4's scale) equals
    the setpoint on the four controlled axes. The check of ``unsaturated`` is done here by hand."""
    a = px.Px4Allocator.from_parameters(X500_P, km=X500_KM)
    rng = np.random.default_rng(44)
    inside = 0
    for _ in range(400):
        torque, tz = rng.uniform(-0.6, 0.6, 3), -rng.uniform(0, 1)
        u = a.motor_commands(torque, (0, 0, tz))
        assert np.all((u >= 0) & (u <= 1))
        plain = a.mix @ np.r_[torque, 0, 0, tz]
        no_yaw = plain - a.mix[:, 2] * torque[2]
        fits = all(np.all((x >= 0) & (x <= 1)) for x in (plain, no_yaw))
        assert a.unsaturated(torque, (0, 0, tz)) == fits
        if fits:
            inside += 1
            np.testing.assert_allclose(u, plain, rtol=0, atol=TOL)
            np.testing.assert_allclose((a.effectiveness @ u * a.scale)[[0, 1, 2, 5]], np.r_[torque, tz], atol=1e-10)
    assert inside > 40


def test_feasible_commands_are_still_changed_when_the_mix_without_yaw_saturates():
    """Airmode off mixes roll, pitch and thrust first, as if there were no yaw. Square quad, wanted
    u = (0.98, 0.5, 0.98, 0.02), in bounds. By hand from the closed-form mix: yaw = (u0 + u1 - u2 -
    u3) / 4 = 0.12, so the mix without yaw is u - 0.12 (1, 1, -1, -1) = (0.86, 0.38, 1.10, 0.14).
    Step 2 lowers the thrust by 0.10 -> (0.76, 0.28, 1.00, 0.04); roll and pitch fit; adding yaw
    gives (0.88, 0.40, 0.88, -0.08): motor 3 below 0, so yaw is cut by 0.08 -> (0.80, 0.32, 0.96,
    0.00); nothing is above 1, the final thrust step does nothing. PX4 loses 0.1 of thrust and 0.08
    of yaw on a command it could have given; ``unsaturated`` says so."""
    a = _square_quad()
    u = np.array([0.98, 0.5, 0.98, 0.02])
    torque, thrust = a.setpoints(u)
    assert not a.unsaturated(torque, thrust)
    np.testing.assert_allclose(a.motor_commands(torque, thrust), [0.80, 0.32, 0.96, 0.0], rtol=0, atol=TOL)
    # airmode 2 mixes yaw with the rest: in bounds at once, the command comes back
    a2 = _square_quad(2)
    assert a2.unsaturated(torque, thrust)
    np.testing.assert_allclose(a2.motor_commands(torque, thrust), u, rtol=0, atol=TOL)


def test_reversible_motors_take_negative_thrust():
    """CA_R_REV: a reversible motor's lower limit is -1 (ControlAllocator.cpp). A downward thrust
    setpoint +0.5 on the square quad mixes to -0.5 on every motor (closed-form thrust column -1):
    kept with reversible motors, clipped to 0 without (airmode off never raises thrust, and the
    roll/pitch/yaw gains of a uniform offset cancel: +k and -k)."""
    rev = px.Px4Allocator.from_parameters(UNIT_P, None, 6.5, UNIT_KM, reversible=[True] * 4)
    np.testing.assert_allclose(rev.motor_commands((0, 0, 0), (0, 0, 0.5)), [-0.5] * 4, rtol=0, atol=TOL)
    np.testing.assert_allclose(_square_quad().motor_commands((0, 0, 0), (0, 0, 0.5)), [0.0] * 4, rtol=0, atol=TOL)


# ----------------------------------------------------------------------------- the inverse
def test_setpoints_of_the_square_quad_by_hand():
    """For the square quad, c = (B u) * scale is, from the closed-form mix (orthogonal columns):
    thrust_z = -mean(u), roll = (-u0 + u1 + u2 - u3) / (4 / sqrt 2), yaw = (u0 + u1 - u2 - u3) / 4."""
    u = np.array([0.3, 0.55, 0.62, 0.41])
    torque, thrust = _square_quad().setpoints(u)
    np.testing.assert_allclose(thrust, [0, 0, -u.mean()], rtol=0, atol=TOL)
    np.testing.assert_allclose(torque, [(-u[0] + u[1] + u[2] - u[3]) * R / 2, (u[0] - u[1] + u[2] - u[3]) * R / 2,
                                        (u[0] + u[1] - u[2] - u[3]) / 4], rtol=0, atol=TOL)


@pytest.mark.parametrize("vehicle", ["x500", "tilthex"])
def test_round_trip_commands_setpoints_commands(vehicle):
    """As many rotors as controlled axes (x500: 4, the fully actuated TiltHex: 6): commands whose
    setpoints PX4 allocates without desaturating (``unsaturated``) come back exactly; the others
    (yaw-heavy commands near the bounds, see the test above) do not."""
    if vehicle == "x500":
        a = px.Px4Allocator.from_parameters(X500_P, km=X500_KM)
    else:
        cfg = load_vehicle("tilthex")
        a = px.Px4Allocator.from_frames(multirotor_frames(cfg.arm_length, cfg.alpha, cfg.beta), cfg.rotors)
    rng = np.random.default_rng(7)
    exact = changed = 0
    for _ in range(300):
        u = rng.uniform(0.02, 0.98, a.n)
        torque, thrust = a.setpoints(u)
        back = a.motor_commands(torque, thrust)
        if a.unsaturated(torque, thrust):
            exact += 1
            np.testing.assert_allclose(back, u, rtol=0, atol=1e-10)
        else:
            changed += 1
            assert np.abs(back - u).max() > 1e-6     # unsaturated() is not too cautious on these
    assert exact >= 100, (exact, changed)


def test_round_trip_of_a_flat_hexarotor_keeps_the_wrench():
    """Six rotors, four controlled axes: PX4 returns the least-norm commands of the same wrench, u
    minus its component in the null space of B (scipy's null_space, independent of the pinv)."""
    cfg = load_vehicle("hexarotor")
    frames = multirotor_frames(cfg.arm_length, cfg.alpha, cfg.beta)
    a = px.Px4Allocator.from_frames(frames, cfg.rotors)
    N = null_space(a.effectiveness)
    assert N.shape[1] == 2
    rng = np.random.default_rng(3)
    for _ in range(50):
        u = rng.uniform(0.3, 0.7, 6)
        back = a.motor_commands(*a.setpoints(u))
        np.testing.assert_allclose(back, u - N @ (N.T @ u), rtol=0, atol=1e-10)
        np.testing.assert_allclose(a.effectiveness @ back, a.effectiveness @ u, rtol=0, atol=1e-9)


def test_bridge_round_trip_from_the_packages_rotor_speeds():
    """The bridge's path on the vehicle of test/data/quad_x.yaml (given in CA_ROTORn_* form): the
    package's allocation (control.rotors.Allocation, FLU) gives rotor speeds for a thrust and
    torque; speeds -> commands -> PX4 setpoints -> PX4 allocation -> commands -> speeds gives them
    back, and the FLU wrench of the result is the one asked for."""
    from pathlib import Path
    cfg = load_vehicle(Path(__file__).resolve().parents[1] / "data" / "quad_x.yaml")
    alloc = Allocation.from_frames(cfg.rotor_poses, cfg.rotors)
    a = px.Px4Allocator.from_frames(cfg.rotor_poses, cfg.rotors)
    wmax = cfg.rotors.max_rot_velocity
    for T, tau in ((14.7, [0.0, 0.0, 0.0]), (16.0, [0.3, -0.2, 0.05]), (10.0, [-0.1, 0.15, -0.04])):
        omega = np.sqrt(alloc.allocate_thrust_torque(T, np.array(tau)))
        torque, thrust = a.setpoints(px.speed_to_command(omega, wmax))
        assert np.all(np.abs(np.r_[torque, thrust]) <= 1)      # within the messages' stated [-1, 1]
        back = px.command_to_speed(a.motor_commands(torque, thrust), wmax)
        np.testing.assert_allclose(back, omega, rtol=1e-10)
        np.testing.assert_allclose(alloc.wrench(back ** 2)[[5, 0, 1, 2]], np.r_[T, tau], rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- thrust model
@pytest.mark.parametrize("fac", [0.0, 0.1, 0.3, 0.5, 0.9, 1.0])
def test_thrust_curve_inverse_is_the_root_of_px4s_model(fac):
    """motor_params.c: rel_thrust = fac s^2 + (1 - fac) s. The inverse PX4 applies equals the root in
    [0, 1] found by brentq, and the forward curve maps it back."""
    u = np.linspace(0.01, 1.0, 23)
    s = px.thrust_curve_inverse(u, fac)
    ref = [brentq(lambda x, ui=ui: fac * x * x + (1 - fac) * x - ui, 0.0, 1.0, xtol=1e-15) for ui in u]
    np.testing.assert_allclose(s, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(px.thrust_curve(s, fac), u, rtol=0, atol=1e-12)


def test_thrust_curve_closed_forms_and_px4s_edge_cases():
    u = np.array([0.04, 0.25, 0.81, 1.0])
    np.testing.assert_allclose(px.thrust_curve_inverse(u, 1.0), np.sqrt(u), rtol=1e-15)      # pure quadratic
    np.testing.assert_array_equal(px.thrust_curve_inverse(u, 0.0), u)                         # linear: untouched
    np.testing.assert_allclose(px.thrust_curve_inverse(u, 0.5), (-1 + np.sqrt(1 + 8 * u)) / 2, rtol=1e-14)
    # reversible motors: the negative branch is the mirror image; NaN (disarmed) stays NaN; |u| <= FLT_EPSILON as is
    np.testing.assert_allclose(px.thrust_curve_inverse(-u, 0.5), -px.thrust_curve_inverse(u, 0.5), rtol=1e-15)
    out = px.thrust_curve_inverse([np.nan, 1e-9, 0.0], 0.5)
    assert np.isnan(out[0]) and out[1] == 1e-9 and out[2] == 0.0
    assert float(px.thrust_curve_inverse(0.25, 1.0)) == pytest.approx(0.5)


@pytest.mark.parametrize("fac", [0.0, 0.35, 1.0])
def test_motor_model_round_trip_speeds_signal_speeds(fac):
    """speed -> command (relative thrust) -> PX4's signal -> the motor model's speed is the identity;
    with THR_MDL_FAC = 1 the signal is omega / omega_max, with 0 it is (omega / omega_max)^2."""
    wmax = np.array([1000.0, 950.0, 1000.0, 1100.0])
    omega = np.array([0.0, 410.0, 777.0, 1100.0])
    s = px.speed_to_signal(omega, wmax, fac)
    np.testing.assert_allclose(px.signal_to_speed(s, wmax, fac), omega, rtol=1e-12, atol=1e-9)
    if fac == 1.0:
        np.testing.assert_allclose(s, omega / wmax, rtol=1e-15)
    if fac == 0.0:
        np.testing.assert_allclose(s, (omega / wmax) ** 2, rtol=1e-15)
    np.testing.assert_allclose(px.speed_to_command(omega, wmax), (omega / wmax) ** 2, rtol=1e-15)


# ----------------------------------------------------------------------------- bad inputs
BAD = [
    (lambda: px.rotor_effectiveness([[0, 0]]), "position"),
    (lambda: px.rotor_effectiveness(np.zeros((13, 3))), "position"),
    (lambda: px.rotor_effectiveness([[np.nan, 0, 0]]), "position"),
    (lambda: px.rotor_effectiveness([[0, 0, 0]], axis=[[0, 0]]), "axis"),
    (lambda: px.rotor_effectiveness([[0, 0, 0]], ct=-1.0), "ct"),
    (lambda: px.rotor_effectiveness([[0, 0, 0]], ct=[1.0, 2.0]), "ct"),
    (lambda: px.rotor_effectiveness([[0, 0, 0]], km=1.5), "km"),
    (lambda: px.rotor_effectiveness([[0, 0, 0]], km="x"), "km"),
    (lambda: px.zero_weak_rows(np.zeros((5, 4))), "B"),
    (lambda: px.mix_matrix(np.full((6, 4), np.inf)), "B"),
    (lambda: px.Px4Allocator(np.zeros((6, 0))), "effectiveness"),
    (lambda: px.Px4Allocator(np.ones((6, 4)), airmode=3), "airmode"),
    (lambda: px.Px4Allocator(np.ones((6, 4)), airmode=True), "airmode"),
    (lambda: px.Px4Allocator(np.ones((6, 4)), reversible=[1, 0, 0, 0]), "reversible"),
    (lambda: _square_quad().allocate((0, 0), (0, 0, -0.5)), "torque"),
    (lambda: _square_quad().motor_commands((0, 0, 0), (0, 0, np.nan)), "thrust"),
    (lambda: _square_quad().setpoints([0.5] * 3), "u"),
    (lambda: _square_quad().setpoints([0.5, 0.5, np.inf, 0.5]), "u"),
    (lambda: px.px4_rotor_parameters(np.zeros((4, 3, 3)), None), "frames"),
    (lambda: px.px4_rotor_parameters(np.tile(np.eye(4), (3, 1, 1)), load_vehicle("hexarotor").rotors), "rotors"),
    (lambda: px.thrust_curve_inverse(0.5, 1.5), "thr_mdl_fac"),
    (lambda: px.thrust_curve(0.5, np.nan), "thr_mdl_fac"),
    (lambda: px.thrust_curve_inverse(np.inf, 0.5), "command"),
    (lambda: px.thrust_curve([0.5, -np.inf], 0.5), "signal"),
    (lambda: px.speed_to_command([100.0], 0.0), "omega_max"),
    (lambda: px.speed_to_command([np.nan], 1000.0), "omega"),
    (lambda: px.command_to_speed([0.5], -1.0), "omega_max"),
]


@pytest.mark.parametrize("call, name", BAD, ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD)])
def test_bad_inputs_raise_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}: "):
        call()


def test_module_is_ros_free():
    code = ("import sys, geodyn_ros.px4.allocation;"
            "bad = [m for m in ('rclpy', 'mujoco', 'px4_msgs') if m in sys.modules]; assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
