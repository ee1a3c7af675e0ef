"""The flatness-based controller of the collinear hexarotor manipulator and its closed loop.

* **On the reference the law is its feedforward** (state = the flat map's, motors at Spong's
  ``theta_d``): thrust and moment equal the flat map's, rotor speeds ``sqrt(A4^+ (T, tau))`` (plus
  the lag term at ff1/ff2, checked against a central difference of ``omega_d`` along the
  reference: an independent derivative), motor torques ``tau_d`` / ``B theta_d'' + tau_d``.
* **The rigid level equals ff0 when the arm is locked** (the hand-derived closed form and the
  whole-body jets describe the same rigid body).
* **Lee's attitude error**: a small rotation ``theta`` about a body axis gives the restoring
  moment ``-k_R theta`` (to 1e-6 relative), and a constant moment disturbance ``d`` moves the CoM
  by ``m g d / (k_R k_x)`` in the simulator (the static gain of the linear model), to 1e-6.
* **The loop** (8 s scored after a 2 s pre-roll, all rows with the same gains): every row's
  figures against bounds with margins (measured values in the comments), no saturation, and the
  small model of :mod:`geodyn_ros.examples.underactuated_budget` within a factor 1.35 of the
  simulator on the rows it predicts.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.flatness import FLATNESS_LEVELS, FlatnessController, FlatnessGains
from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
from geodyn_ros.examples import underactuated_loop as U
from geodyn_ros.lie import Ad_inv, exp_so3
from geodyn_ros.trajectories import figure_eight_reference

REPO = Path(__file__).resolve().parents[2]
CFG = load_actuation_config("hexarotor")


@pytest.fixture(scope="module")
def vehicle():
    model = gd.load_urdf(U.hexarotor_source(), locked_joints=list(CFG.rotor_joints))
    al = Allocation.from_frames(rotor_frames_from_model(model)[1], CFG.rotors)
    return model, al


def _on_reference(model, t, order=2):
    ref = figure_eight_reference(t, order)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, order)
    C = flat.base_pose
    Vb = Ad_inv(C) @ flat.base_twist[0]
    return ref, flat, C, Vb


@pytest.mark.parametrize("level", FLATNESS_LEVELS[1:])
def test_on_the_reference_the_command_is_the_feedforward(vehicle, level):
    model, al = vehicle
    ctrl = FlatnessController(model, al, CFG.rotors, CFG.elastic, level=level)
    ref, flat, C, Vb = _on_reference(model, 1.7)
    th, thd = ctrl.motor_reference(ref.q, flat.tau)
    if level != "ff2":       # these levels hold the motors at q_d
        th, thd = ref.q[0], ref.q[1]
    cmd = ctrl.command(C, Vb, ref.q[0], ref.q[1], th, thd, ref.com, ref.yaw, ref.q, flat)
    assert cmd.thrust == pytest.approx(flat.thrust[0], rel=1e-12)
    assert np.allclose(cmd.torque, flat.body_torque[0], rtol=0, atol=1e-11)
    u = al.allocate_thrust_torque(flat.thrust[0], flat.body_torque[0])
    om_d = np.sqrt(u)
    if level == "ff0":
        assert np.allclose(cmd.omega, om_d, rtol=1e-12)
        assert np.allclose(cmd.u, flat.tau[0], rtol=0, atol=1e-12)
    else:
        # omega_d' by a central difference of omega_d along the reference (independent of the jets)
        h = 1e-4
        om_p = np.sqrt(al.allocate_thrust_torque(*_tt(model, 1.7 + h)))
        om_m = np.sqrt(al.allocate_thrust_torque(*_tt(model, 1.7 - h)))
        omd = (om_p - om_m) / (2 * h)
        Tl = CFG.rotors.time_constant_up
        assert np.allclose(cmd.omega, om_d + Tl * omd, rtol=0, atol=1e-5)   # h^2 omega''' T ~ 1e-7
        if level == "ff2":
            K, B = CFG.elastic.stiffness, CFG.elastic.motor_inertia
            thdd = ref.q[2] + flat.tau[2] / K
            assert np.allclose(cmd.u, B * thdd + flat.tau[0], rtol=0, atol=1e-12)
    assert cmd.rotor_saturations == 0 and cmd.motor_saturations == 0


def _tt(model, t):
    ref = figure_eight_reference(t, 0)
    f = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 0)
    return f.thrust[0], f.body_torque[0]


def test_rigid_level_equals_ff0_when_the_arm_is_locked():
    locked = gd.load_urdf(U.hexarotor_source(), locked_joints=list(CFG.rotor_joints) + list(CFG.elastic.joints))
    al = Allocation.from_frames(rotor_frames_from_model(locked)[1], CFG.rotors)
    rng = np.random.default_rng(1)
    for t in (0.4, 2.9):
        ref = figure_eight_reference(t, 2, q_amplitude=[], q_period=[], speed=1.5)
        flat = gd.flat_inverse_dynamics(locked, ref.com, ref.yaw, None, 2)
        C = flat.base_pose @ np.block([[exp_so3(rng.normal(size=3) * 0.02), rng.normal(size=(3, 1)) * 0.01],
                                       [np.zeros((1, 3)), np.ones((1, 1))]])
        Vb = Ad_inv(flat.base_pose) @ flat.base_twist[0] + rng.normal(size=6) * 0.05
        z = np.zeros(0)
        cmds = [FlatnessController(locked, al, CFG.rotors, None, level=lv).command(
            C, Vb, z, z, None, None, ref.com, ref.yaw, np.zeros((3, 0)), flat) for lv in ("rigid", "ff0")]
        assert cmds[0].thrust == pytest.approx(cmds[1].thrust, rel=1e-13)
        assert np.allclose(cmds[0].torque, cmds[1].torque, rtol=0, atol=1e-11)
        assert np.allclose(cmds[0].omega, cmds[1].omega, rtol=1e-12)


def test_attitude_error_is_lee_s(vehicle):
    model, al = vehicle
    g = FlatnessGains(kd_rotation=0.0)
    ctrl = FlatnessController(model, al, CFG.rotors, CFG.elastic, g, level="ff0")
    ref, flat, C, Vb = _on_reference(model, 0.0)
    base = ctrl.command(C, Vb, ref.q[0], ref.q[1], ref.q[0], ref.q[1], ref.com, ref.yaw, ref.q, flat)
    th = 1e-4
    for axis in range(3):
        w = np.zeros(3)
        w[axis] = th
        C2 = C.copy()
        C2[:3, :3] = C[:3, :3] @ exp_so3(w)      # rotated about its own axis, CoM left where it was
        c0 = gd.center_of_mass(model, C, None, ref.q[:1])[0]
        c1 = gd.center_of_mass(model, C2, None, ref.q[:1])[0]
        C2[:3, 3] += c0 - c1
        Vb2 = Ad_inv(C2) @ flat.base_twist[0]   # the same spatial twist: the CoM velocity is unchanged
        cmd = ctrl.command(C2, Vb2, ref.q[0], ref.q[1], ref.q[0], ref.q[1], ref.com, ref.yaw, ref.q, flat)
        dtau = cmd.torque - base.torque
        # the restoring moment -k_R theta on that axis (the feedforward's rotation adds O(theta |tau_ff|))
        assert dtau[axis] == pytest.approx(-g.kp_rotation[axis] * th, rel=1e-3)


def test_constant_moment_disturbance_gives_the_linear_model_s_static_offset(monkeypatch):
    d = np.array([0.0, 0.01, 0.0])
    orig = FlatnessController.command

    def disturbed(self, *a, **k):
        c = orig(self, *a, **k)
        c.torque = c.torque + d
        return c

    monkeypatch.setattr(FlatnessController, "command", disturbed)

    def hover(t, order):
        return figure_eight_reference(t, order, amplitude=(0, 0, 0), yaw_amplitude=0.0, q_amplitude=np.zeros(6))

    row = U.simulate_underactuated("ideal", 6.0, preroll=0.0, reference=hover)
    g = FlatnessGains()
    m = 4.03
    e = row.log.p[-1] - row.log.p_d[-1]
    assert e[0] == pytest.approx(m * 9.81 * d[1] / (g.kp_rotation[1] * g.kp_position), rel=1e-6)
    assert abs(e[1]) < 1e-12 and abs(e[2]) < 1e-9


def test_bad_arguments(vehicle):
    model, al = vehicle
    with pytest.raises(ValueError, match=r"^level: expected one of"):
        FlatnessController(model, al, CFG.rotors, CFG.elastic, level="ff3")
    with pytest.raises(ValueError, match=r"^kp_rotation: expected a scalar or 3 values"):
        FlatnessGains(kp_rotation=(1.0, 2.0))
    with pytest.raises(ValueError, match=r"^kd_position: gains must be finite and >= 0"):
        FlatnessGains(kd_position=-1.0)
    with pytest.raises(ValueError, match=r"^gains: expected FlatnessGains"):
        FlatnessController(model, al, CFG.rotors, CFG.elastic, gains={"kp_position": 1})
    ctrl = FlatnessController(model, al, CFG.rotors, CFG.elastic, level="ff2")
    ref, flat, C, Vb = _on_reference(model, 0.5)
    args = [C, Vb, ref.q[0], ref.q[1], ref.q[0], ref.q[1], ref.com, ref.yaw, ref.q, flat]
    low = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 1)
    with pytest.raises(ValueError, match=r"^flat: level 'ff2' needs the flat-map jets of order >= 2, got order 1"):
        ctrl.command(*args[:-1], low)
    for i, name in ((0, "C"), (1, "V_body"), (2, "q"), (4, "theta"), (6, "com_d")):
        bad = list(args)
        bad[i] = np.array(args[i], float).copy()
        bad[i].flat[0] = np.nan
        with pytest.raises(ValueError, match=rf"^{name}: contains NaN"):
            ctrl.command(*bad)


def test_rotor_and_motor_clips_are_counted(vehicle):
    model, al = vehicle
    ctrl = FlatnessController(model, al, CFG.rotors, CFG.elastic, FlatnessGains(kp_position=1e5), level="ff0")
    ref, flat, C, Vb = _on_reference(model, 0.5)
    C2 = C.copy()
    C2[:3, 3] += (0.0, 0.0, -1.0)       # 1 m low: the CoM loop asks for far more than the rotors can give
    cmd = ctrl.command(C2, Vb, ref.q[0], ref.q[1], ref.q[0] + 1.0, ref.q[1], ref.com, ref.yaw, ref.q, flat)
    assert cmd.rotor_saturations == 6 and np.all(cmd.omega == CFG.rotors.max_rot_velocity)
    assert cmd.motor_saturations >= 1 and np.all(np.abs(cmd.u) <= CFG.elastic.max_motor_torque)
    assert ctrl.rotor_saturations == 6


# ------------------------------------------------------------------------- the loop

@pytest.fixture(scope="module")
def table():
    rows = ("rigid", "ff0", "ff1", "ff2", "ideal", "rigid_ideal", "ff0_rigid_arm", "ff1_rigid_arm")
    return {r: U.simulate_underactuated(r, 8.0, preroll=2.0).metrics() for r in rows}


def test_loop_rows(table):
    t = table
    # measured on this 8 s window (30 s in the README): rigid 2.2e-3, ff0 4.2e-4, ff1 1.2e-4,
    # ff2 2.1e-5, ideal 1.0e-5 m; ff0/ff1 rigid arm 4.1e-4 / 2.1e-5
    assert t["ideal"]["com_rms_m"] < 2e-5
    assert t["ff2"]["com_rms_m"] < 3 * t["ideal"]["com_rms_m"]
    assert t["ff2"]["joint_rms_deg"] < 1e-3                                   # 4.7e-4
    assert t["ff0"]["com_rms_m"] < t["rigid"]["com_rms_m"] / 4                # 5.4x
    assert t["ff1"]["com_rms_m"] < t["ff0"]["com_rms_m"] / 2.5                # 3.6x
    assert t["ff2"]["joint_rms_deg"] < t["ff1"]["joint_rms_deg"] / 100        # 596x
    assert t["ff1_rigid_arm"]["com_rms_m"] < t["ff0_rigid_arm"]["com_rms_m"] / 10   # 19x: the lag compensation
    assert t["rigid_ideal"]["com_rms_m"] > 100 * t["ideal"]["com_rms_m"]      # 214x: the whole-body model
    for r, m in t.items():
        assert m["rotor_saturations"] == 0 and m["motor_saturations"] == 0, r
        assert m["rotor_speed_peak_rad_s"] < CFG.rotors.max_rot_velocity or r in ("ideal", "rigid_ideal")
        assert m["real_time_factor"] > 0


def test_small_model_predicts_the_loop(table):
    from geodyn_ros.examples.underactuated_budget import error_sources, predicted_rows
    pred = predicted_rows(error_sources(10.0), settle=2.0)
    for row in ("rigid", "rigid_ideal", "ff0", "ff0_rigid_arm", "ff1"):
        ratio = pred[row]["com_rms_m"] / table[row]["com_rms_m"]
        assert 1 / 1.35 < ratio < 1.35, (row, ratio)
    for row in ("ff0", "ff1"):
        ratio = pred[row]["joint_rms_deg"] / table[row]["joint_rms_deg"]
        assert 1 / 1.35 < ratio < 1.35, (row, ratio)


def test_json_command_prints_the_rows():
    out = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.underactuated_loop", "--json", "--duration", "0.2",
                          "--preroll", "0.1"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert list(obj) == ["rigid", "ff0", "ff1", "ff2", "ideal"]
    keys = {"com_rms_m", "com_max_m", "attitude_rms_deg", "joint_rms_deg", "rotor_speed_peak_rad_s",
            "rotor_saturations", "real_time_factor"}
    for m in obj.values():
        assert keys <= set(m) and all(np.isfinite(m[k]) for k in keys)
    bad = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.underactuated_loop", "--rows", "pd"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert bad.returncode == 2 and "--rows: unknown rows ['pd']" in bad.stderr


def test_lag_compensation_stays_bounded_when_the_feedback_zeroes_a_rotor(vehicle):
    """Found with the LQR table: a large attitude error drove some rotor's u = omega^2 below zero,
    omega clipped to 0, and the lag term u'/(2 omega) became +-1e9 rad/s, which sent every rotor to
    its limit and made the vehicle fall. The term uses the feedforward speed omega_d (ACTUATION.md)."""
    model, al = vehicle
    ctrl = FlatnessController(model, al, CFG.rotors, CFG.elastic, level="ff1")
    ref, flat, C, Vb = _on_reference(model, 0.4)
    C2 = C.copy()
    C2[:3, :3] = exp_so3(np.radians([15.0, 0.0, 0.0])) @ C[:3, :3]
    cmd = ctrl.command(C2, Vb, ref.q[0], ref.q[1], ref.q[0], ref.q[1], ref.com, ref.yaw, ref.q, flat)
    u = al.allocate_thrust_torque(cmd.thrust, cmd.torque)
    assert (u < 0).any()                       # the case of the bug: the feedback zeroes a rotor
    # the lag term T omega_d' is a few rad/s here (|omega_d'| < 100 rad/s^2 along the reference; the
    # bug made it 1e9)
    lag = np.abs(cmd.omega_raw - np.sqrt(np.clip(u, 0, None)))
    assert np.all(lag <= 50.0), lag
