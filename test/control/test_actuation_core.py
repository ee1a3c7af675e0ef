"""Rotor geometry and allocation (geodyn_ros.control.rotors) and the loader's ``locked_joints``.

Independent references:
* the rotor frames read from the URDF (xacro -> locked joints -> merged link poses) against the
  closed form of paper eq. (28) built with plain rotation matrices;
* each column of ``A`` against the wrench of one rotor computed as ``Ad*_{C^-1}`` of its local
  wrench with the Lie-group helper ``Ad`` (a different code path from ``rotor_wrench_columns``);
* a model with a locked joint against the unlocked model with that joint held still
  (``q = x``, ``q' = q'' = ... = 0``): every other torque and the base wrench must agree, at
  every derivative order.
Tolerances: all comparisons are float64 evaluations of the same quantities by different
sequences of O(10) operations on O(1) numbers: 1e-12 absolute (A's entries are up to 1e-5, so
A is compared relative to its largest entry).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.rotors import (Allocation, RotorParams, load_actuation_config, rotor_frames_from_model,
                                       rotor_wrench_columns, tilthex_rotor_frames)
from geodyn_ros.lie import Ad, exp_se3, inv_se3
from geodyn_ros.trajectories import table3_reference

REPO = Path(__file__).resolve().parents[2]
XACRO = REPO / "urdf" / "tilthex_manipulator.urdf.xacro"


@pytest.fixture(scope="module")
def cfg():
    return load_actuation_config()


@pytest.fixture(scope="module")
def tilthex(cfg):
    return gd.load_urdf(XACRO, locked_joints=list(cfg.rotor_joints))


def test_config_values_and_sources(cfg):
    r = cfg.rotors
    # gz-sim's X4 constants (ACTUATION.md table) and the documented geometry
    assert (r.motor_constant, r.moment_constant, r.time_constant_up, r.time_constant_down,
            r.max_rot_velocity) == (1.269e-05, 0.016754, 0.0182, 0.0182, 1000.0)
    assert cfg.arm_length == 0.25 and np.allclose(np.degrees(cfg.alpha), [20, -20] * 3)
    assert r.turning_direction == ("ccw", "cw") * 3
    assert np.allclose(r.spin, [-1, 1] * 3)


def test_urdf_rotor_frames_equal_eq28(cfg, tilthex):
    names, F = rotor_frames_from_model(tilthex)
    assert names == tuple(f"rotor_{i}" for i in range(1, 7))
    F28 = tilthex_rotor_frames(cfg.arm_length, cfg.alpha, cfg.beta)
    assert np.max(np.abs(F - F28)) < 1e-12
    # an independent statement of eq. (28) with a non-zero beta: R = Rz(g) Rx(a) Ry(b), p = Rz(g) (a, 0, 0)
    al, be = np.radians([10, -20, 30, -40, 50, -60]), np.radians([5, 15, -25, 35, -45, 55])
    F2 = tilthex_rotor_frames(0.3, al, be)
    for i in range(1, 7):
        g = (2 - i) * np.pi / 3
        Rz = np.array([[np.cos(g), -np.sin(g), 0], [np.sin(g), np.cos(g), 0], [0, 0, 1]])
        a, b = al[i - 1], be[i - 1]
        Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
        Ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
        assert np.allclose(F2[i - 1][:3, :3], Rz @ Rx @ Ry, atol=1e-14)
        assert np.allclose(F2[i - 1][:3, 3], [0.3 * np.cos(g), 0.3 * np.sin(g), 0], atol=1e-14)


def test_allocation_columns_are_coadjoint_of_local_wrench(cfg, tilthex):
    _, F = rotor_frames_from_model(tilthex)
    r = cfg.rotors
    A = rotor_wrench_columns(F, r.motor_constant, r.spin * r.drag_constant)
    for i, C in enumerate(F):
        W_local = np.array([0, 0, r.spin[i] * r.drag_constant, 0, 0, r.motor_constant])
        W_base = Ad(inv_se3(C)).T @ W_local          # Ad*_{C^-1} = Ad_{C^-1}^T
        assert np.max(np.abs(A[:, i] - W_base)) < 1e-12 * np.abs(A).max()


def test_allocation_inverse_hover_and_table3(cfg, tilthex):
    _, F = rotor_frames_from_model(tilthex)
    al = Allocation.from_frames(F, cfg.rotors)
    assert np.allclose(al.A @ al.A_pinv, np.eye(6), atol=1e-9)
    # condition number of the unit-consistent A (documented in the README): finite and moderate
    assert 1.0 < al.condition_number() < 10.0
    hover = np.array([0, 0, 0, 0, 0, tilthex.total_mass * 9.81])
    u = al.allocate(hover)
    al.check_speeds(u)
    # symmetric vehicle: all six rotors equal at hover, thrust cos(20 deg) * 6 * c_f w^2 = m g
    assert np.allclose(u, tilthex.total_mass * 9.81 / (6 * cfg.rotors.motor_constant * np.cos(np.radians(20))),
                       rtol=1e-12)
    us = []
    for t in np.arange(0.0, 30.0, 0.05):
        ref = table3_reference(t, 0)
        res = gd.inverse_dynamics(tilthex, ref.base_pose, ref.base_twist, ref.q, 0)
        us.append(al.allocate(Ad(ref.base_pose).T @ res.base_wrench[0]))
    al.check_speeds(np.array(us))          # 0 < omega < omega_max along the whole Table 3 run


def test_weighted_pseudo_inverse_is_minimum_weighted_norm():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 8))
    w = rng.uniform(0.5, 2.0, 8)
    al = Allocation(A, weights=w)
    W = rng.normal(size=6)
    u = al.allocate(W)
    assert np.allclose(A @ u, W, atol=1e-12)
    # any other solution u + z (z in the null space) has a larger weighted norm
    z = np.linalg.svd(A)[2][6:].T @ rng.normal(size=2)
    assert (u + z) @ (w * (u + z)) > u @ (w * u)
    # KKT: Q u is in the row space of A
    lam = np.linalg.lstsq(A.T, w * u, rcond=None)[0]
    assert np.allclose(A.T @ lam, w * u, atol=1e-12)


def test_refuses_rotor_sets_that_are_neither_fully_actuated_nor_collinear():
    tilted = tilthex_rotor_frames(0.25, np.radians([20.0, -20.0] * 3), np.zeros(6))[:4]   # 4 tilted rotors
    rp = RotorParams(turning_direction=("ccw", "cw") * 2)
    with pytest.raises(ValueError, match=r"A: rank 4 < 6 and the thrusts are not all along the base z axis"):
        Allocation.from_frames(tilted, rp)
    with pytest.raises(ValueError, match=r"A: rank 1 < 6.*f_x"):
        Allocation(np.ones((6, 4)))
    with pytest.raises(ValueError, match="turning_direction"):
        RotorParams(turning_direction=("up",))
    with pytest.raises(ValueError, match="time_constant_up"):
        RotorParams(turning_direction=("cw",), time_constant_up=0.0)
    with pytest.raises(ValueError, match="weights"):
        Allocation(np.eye(6), weights=[1, 1, 1, 1, 1, -1])


def test_speeds_saturate_and_count():
    al = Allocation(np.eye(6), max_rot_velocity=10.0)
    om, n = al.speeds(np.array([-1.0, 0.0, 4.0, 99.0, 100.0, 400.0]))
    assert np.allclose(om, [0, 0, 2, np.sqrt(99), 10, 10]) and n == 2
    with pytest.raises(ValueError, match="u: rotor speeds"):
        al.check_speeds(np.array([1.0, 1, 1, 1, 1, 0]))


# ----------------------------------------------------------------------------- locked joints
@pytest.mark.parametrize("pos", [0.0, 0.7])
def test_locked_joint_equals_held_joint(aerial_manipulator, pos):
    """Locking J3 at ``pos`` = the full model with J3 held at ``pos`` (zero rate): orders 0..2."""
    full = aerial_manipulator
    red = gd.load_urdf(REPO / "urdf" / "aerial_manipulator.urdf", locked_joints={"J3": pos})
    assert "J3" not in red.joint_names and red.n_joints == 5
    assert abs(red.total_mass - full.total_mass) < 1e-12
    rng = np.random.default_rng(7)
    C = exp_se3(rng.normal(size=6))
    V = rng.normal(size=(4, 6))
    qf = rng.normal(size=(5, 6))
    k = full.joint_names.index("J3")
    qf[:, k] = 0.0
    qf[0, k] = pos
    keep = [i for i in range(6) if i != k]
    a = gd.inverse_dynamics(full, C, V, qf, 2)
    b = gd.inverse_dynamics(red, C, V, qf[:, keep], 2)
    assert np.max(np.abs(a.base_wrench - b.base_wrench)) < 1e-11
    assert np.max(np.abs(a.tau[:, keep] - b.tau)) < 1e-11


def test_locked_joints_bad_input():
    src = REPO / "urdf" / "aerial_manipulator.urdf"
    with pytest.raises(ValueError, match="locked_joints: unknown joint 'nope'"):
        gd.load_urdf(src, locked_joints=["nope"])
    with pytest.raises(ValueError, match="locked_joints: expected an iterable"):
        gd.load_urdf(src, locked_joints="J2")
    with pytest.raises(ValueError, match="locked_joints: position of 'J2'"):
        gd.load_urdf(src, locked_joints={"J2": float("nan")})
    m = gd.load_urdf(XACRO)                       # unlocked: the rotors are joints
    assert m.n_joints == 12
    with pytest.raises(ValueError, match="rotor_links: link 'rotor_1' is not rigidly attached"):
        rotor_frames_from_model(m)
