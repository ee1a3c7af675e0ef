"""Collinear (under-actuated) rotor sets: ``Allocation``'s 4 x n map to (T, tau_x, tau_y, tau_z),
the refusal of lateral forces, and the collinear hexarotor of ``config/hexarotor.yaml``.

Independent references: a '+' quadrotor's allocation written out by hand (thrust sum, moment arms,
drag torques), the rotor frames of the expanded xacro against the YAML's geometry formula, and
the hover speed ``sqrt(m g / (n c_f))``.
"""
from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.rotors import (Allocation, RotorParams, load_actuation_config, rotor_frames_from_model,
                                       tilthex_rotor_frames)

REPO = Path(__file__).resolve().parents[2]
HEX = REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"


def _plus_quadrotor(l=0.2, cf=8.54858e-06, mc=0.016):
    frames = np.tile(np.eye(4), (4, 1, 1))
    frames[:, :3, 3] = [(l, 0, 0), (0, l, 0), (-l, 0, 0), (0, -l, 0)]
    rp = RotorParams(turning_direction=("ccw", "cw", "ccw", "cw"), motor_constant=cf, moment_constant=mc,
                     max_rot_velocity=800.0)
    cd = mc * cf
    A4 = np.array([[cf, cf, cf, cf], [0, cf * l, 0, -cf * l], [-cf * l, 0, cf * l, 0], [-cd, cd, -cd, cd]])
    return frames, rp, A4


def test_plus_quadrotor_matches_the_hand_written_map():
    frames, rp, A4 = _plus_quadrotor()
    al = Allocation.from_frames(frames, rp)
    assert al.collinear and al.A_pinv is None
    assert np.allclose(al.A4, A4, rtol=0, atol=1e-18)
    assert np.allclose(al.A[3:5], 0.0, atol=1e-20)
    # A4 is square and invertible here: the pseudo-inverse is the inverse
    assert np.allclose(al.A4_pinv @ A4, np.eye(4), atol=1e-9)
    T, tau = 20.0, np.array([0.1, -0.2, 0.03])
    u = al.allocate_thrust_torque(T, tau)
    assert np.allclose(A4 @ u, [T, *tau], rtol=1e-12)
    W = al.wrench(u)
    assert np.allclose(W, [*tau, 0, 0, T], rtol=1e-12, atol=1e-12)
    # the 6-D entry takes a wrench without lateral force and gives the same u
    assert np.allclose(al.allocate(W), u, rtol=1e-12)
    assert np.isfinite(al.condition_number()) and al.condition_number() >= 1


def test_lateral_force_is_refused_with_its_direction():
    frames, rp, _ = _plus_quadrotor()
    al = Allocation.from_frames(frames, rp)
    with pytest.raises(ValueError, match=r"^W_b: a lateral force \(f_x, f_y\) = \(0\.5, -0\.25\) N in base axes"):
        al.allocate([0, 0, 0, 0.5, -0.25, 20.0])
    Wt = np.zeros((4, 6))
    Wt[:, 5] = 20.0
    Wt[2, 3] = 1e-3
    with pytest.raises(ValueError, match=r"^W_b\[2\]: a lateral force"):
        al.allocate(Wt)
    Wt[2, 3] = 1e-14            # rounding-level lateral force: accepted
    assert al.allocate(Wt).shape == (4, 4)
    # the (T, tau) entry never needs the lateral force
    assert al.allocate_thrust_torque(np.full(4, 20.0), np.zeros((4, 3))).shape == (4, 4)
    with pytest.raises(ValueError, match=r"^thrust, torque: expected shapes"):
        al.allocate_thrust_torque([1.0, 2.0], np.zeros(3))


def test_degenerate_collinear_sets_are_refused():
    frames = np.tile(np.eye(4), (4, 1, 1))
    frames[:, :3, 3] = [(0.1, 0, 0), (0.2, 0, 0), (-0.1, 0, 0), (-0.2, 0, 0)]   # all on the x axis
    rp = RotorParams(turning_direction=("ccw", "cw", "ccw", "cw"))
    with pytest.raises(ValueError, match=r"^A: a collinear rotor set of rank 3 < 4"):
        Allocation.from_frames(frames, rp)
    with pytest.raises(ValueError, match=r"^A: a collinear rotor set of rank"):
        Allocation.from_frames(_plus_quadrotor()[0][:3], RotorParams(turning_direction=("ccw", "cw", "ccw")))


def test_fully_actuated_set_allocates_thrust_and_torque_too():
    cfg = load_actuation_config("tilthex")
    al = Allocation.from_frames(tilthex_rotor_frames(cfg.arm_length, cfg.alpha, cfg.beta), cfg.rotors)
    assert not al.collinear
    tau = np.array([0.2, -0.1, 0.05])
    assert np.allclose(al.allocate_thrust_torque(40.0, tau), al.allocate([*tau, 0, 0, 40.0]), rtol=1e-12)


def test_actuated_controller_refuses_a_collinear_vehicle():
    cfg = load_actuation_config("hexarotor")
    frames = tilthex_rotor_frames(cfg.arm_length, cfg.alpha, cfg.beta)
    al = Allocation.from_frames(frames, cfg.rotors)
    with pytest.raises(ValueError, match=r"^allocation: a collinear \(under-actuated\) rotor set"):
        ActuatedController(al, cfg.rotors, cfg.elastic, ("J2", "J3", "J4", "J5", "J6", "J7"))


def test_hexarotor_xacro_config_and_hover():
    cfg = load_actuation_config(REPO / "config" / "hexarotor.yaml")
    assert cfg.rotors == load_actuation_config("hexarotor").rotors   # the shipped name resolves to the same file
    rp = cfg.rotors
    # gz-sim's X4 constants
    assert (rp.motor_constant, rp.moment_constant, rp.time_constant_up, rp.time_constant_down,
            rp.max_rot_velocity) == (1.269e-05, 0.016754, 0.0182, 0.0182, 1000.0)
    assert rp.turning_direction == ("ccw", "cw") * 3
    model = gd.load_urdf(HEX, locked_joints=list(cfg.rotor_joints))
    assert model.joint_names == ("J2", "J3", "J4", "J5", "J6", "J7")
    names, frames = rotor_frames_from_model(model)
    assert names == cfg.rotor_links
    # the expanded xacro's rotor frames follow the YAML's formula Rz((2-i) pi/3) Tx(a) (alpha = beta = 0)
    assert np.allclose(frames, tilthex_rotor_frames(cfg.arm_length, cfg.alpha, cfg.beta), atol=1e-15)
    assert np.allclose(frames[:, :3, 2], [0.0, 0.0, 1.0], atol=1e-15)   # every rotor axis is base +z
    al = Allocation.from_frames(frames, rp)
    assert al.collinear
    mg = model.total_mass * 9.81
    u = al.allocate_thrust_torque(mg, np.zeros(3))
    om, sat = al.speeds(u)
    assert sat == 0 and np.allclose(om, np.sqrt(mg / (6 * rp.motor_constant)), rtol=1e-12)
    assert 715 < om[0] < 725          # FLATNESS.md: the 4 kg robot hovers at about 720 rad/s


def test_actuation_config_errors(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("elastic_joints: {}\n")
    with pytest.raises(ValueError, match=rf"^{p}: rotors: missing; .* or the multirotor: section of an old actuation"):
        load_actuation_config(p)
    p.write_text("multirotor: [1, 2\n")
    with pytest.raises(ValueError, match=rf"^{p}: line 2, column 1, in multirotor: expected ',' or '\]'"):
        load_actuation_config(p)
    p.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match=rf"^{p}: expected a mapping of keys"):
        load_actuation_config(p)
    with pytest.raises(ValueError, match=rf"^{tmp_path}/missing.yaml: cannot be read \(No such file or directory\)"):
        load_actuation_config(tmp_path / "missing.yaml")
    p.write_text("multirotor: {turning_direction: [ccw, cw]}\nelastic_joints: {joints: []}\n")
    with pytest.raises(ValueError, match=rf"^{p}: multirotor.motor_constant: missing; give it"):
        load_actuation_config(p)
