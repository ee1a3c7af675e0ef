"""The PX4 stand-in's logic (geodyn_ros.px4.standin), ROS-free: the commander's offboard rules and
failsafe, the allocation to rotor speeds and the desaturation order, checked against expectations
worked by hand from PX4's rules (PX4 commit b67c65bf, files cited in the module), not against the
module's own maths. The offboard-loss figures are those PX4 SITL (SIH, commit 289f3203) gave on
this machine (doc/reference/px4_standin.md, "PX4 SITL against the stand-in")."""
import math

import numpy as np
import pytest

from geodyn_ros.px4.allocation import Px4Allocator
from geodyn_ros.px4.standin import (ARMED, DISARMED, NAV_ALTCTL, NAV_HOLD, NAV_LAND, NAV_OFFBOARD, NAV_POSCTL,
                                    NAV_STAB, NAV_TERMINATION, Commander, HoldController, rotor_speeds)

S = 1_000_000          # one second [µs]
ARM, DISARM = (400, 1.0), (400, 0.0)
OFFBOARD = (176, 1.0, 6.0)


def offboard_armed(cmd, t=0):
    """Proof of life at t, offboard, armed: the bridge's sequence."""
    cmd.proof_of_life(t, thrust_and_torque=True)
    assert cmd.command(t, *OFFBOARD)[0]
    assert cmd.command(t, *ARM)[0]
    assert (cmd.armed, cmd.nav_state) == (True, NAV_OFFBOARD)


# ----------------------------------------------------------------------------- arming and engaging
def test_arming_refused_without_proof_of_life():
    cmd = Commander()
    ok, line = cmd.command(0, *ARM)
    assert not ok and not cmd.armed and "only in offboard" in line       # the start mode is Hold
    assert cmd.command(0, *OFFBOARD)[0]          # disarmed: a mode change is always accepted
    assert cmd.nav_state == NAV_OFFBOARD
    ok, line = cmd.command(10, *ARM)
    assert not ok and not cmd.armed and "No offboard signal" in line
    cmd.proof_of_life(20)                          # no flag set: no proof of life
    assert not cmd.command(30, *ARM)[0]
    cmd.proof_of_life(40, attitude=False, direct_actuator=True)
    ok, line = cmd.command(50, *ARM)
    assert ok and cmd.armed and cmd.arming_state == ARMED


def test_arming_refused_once_the_proof_of_life_is_older_than_com_of_loss_t():
    cmd = Commander()
    cmd.command(0, *OFFBOARD)
    cmd.proof_of_life(0, thrust_and_torque=True)
    # offboardCheck.cpp: recent while now < timestamp + COM_OF_LOSS_T (1 s), strictly
    assert cmd.offboard_available(S - 1) and not cmd.offboard_available(S)
    assert not cmd.command(S, *ARM)[0] and cmd.arming_state == DISARMED
    assert cmd.command(S - 1, *ARM)[0]


def test_engage_needs_only_a_fresh_proof_of_life_when_armed():
    cmd = Commander()
    offboard_armed(cmd)
    cmd.command(10, 176, 1.0, 4.0, 3.0)            # AUTO / LOITER: Hold
    assert cmd.nav_state == NAV_HOLD
    t = 3 * S                                      # the proof of life of t = 0 is stale
    ok, line = cmd.command(t, *OFFBOARD)
    assert not ok and "No offboard signal" in line and cmd.nav_state == NAV_HOLD
    cmd.proof_of_life(t, thrust_and_torque=True)   # one message is enough: no engage delay
    assert cmd.command(t, *OFFBOARD)[0] and cmd.nav_state == NAV_OFFBOARD


def test_commands_for_another_system_and_unknown_commands_are_ignored():
    cmd = Commander()
    cmd.command(0, *OFFBOARD)
    cmd.proof_of_life(0, thrust_and_torque=True)
    assert not cmd.command(0, 400, 1.0, target_system=2)[0] and not cmd.armed
    assert cmd.command(0, 400, 1.0, target_system=1)[0] and cmd.armed
    assert not cmd.command(0, 21, 0.0)[0] and cmd.armed                  # NAV_LAND command: not modelled
    assert not cmd.command(0, 400, float("nan"))[0] and cmd.armed
    assert cmd.command(0, *DISARM)[0] and not cmd.armed


@pytest.mark.parametrize("kw, word", [({"of_loss_t": -1.0}, "of_loss_t"), ({"of_loss_t": 61.0}, "of_loss_t"),
                                      ({"obl_rc_act": 8}, "obl_rc_act"), ({"obl_rc_act": True}, "obl_rc_act"),
                                      ({"system_id": 0}, "system_id")])
def test_bad_parameters(kw, word):
    with pytest.raises(ValueError, match=word):
        Commander(**kw)


def test_bad_times_and_flags():
    cmd = Commander()
    with pytest.raises(ValueError, match="now_us"):
        cmd.proof_of_life(-1, thrust_and_torque=True)
    with pytest.raises(ValueError, match="now_us"):
        cmd.update(1.5)
    with pytest.raises(ValueError, match="flags"):
        cmd.proof_of_life(0, thrust=True)


# ----------------------------------------------------------------------------- offboard loss
def _cycles(cmd, t0, t1):
    """The commander's 10 ms cycles from t0 to t1 [µs]; the time of the first failsafe, or None."""
    for t in range(t0, t1 + 1, 10_000):
        cmd.update(t)
        if cmd.failsafe is not None:
            return t
    return None


def test_offboard_loss_position_default_descends_on_the_health_checks_grid_and_back():
    # COM_OBL_RC_ACT 0: PX4 SITL went to POSCTL (nav_state 2) with the failsafe flag, 1.04-1.13 s
    # after the last proof of life with COM_OF_LOSS_T 1 s; without sticks it flew its emergency
    # Descend (level, down, drifting); back in offboard 18-28 ms after the stream returned
    cmd = Commander()
    offboard_armed(cmd)
    t_fs = _cycles(cmd, 0, 2 * S)
    assert S <= t_fs < S + 100_000                   # the 10 Hz health checks: within 100 ms
    assert cmd.nav_state == NAV_POSCTL and cmd.failsafe == "descend" and cmd.armed
    cmd.changed = False
    cmd.update(t_fs + S)
    assert not cmd.changed                           # nothing new: the 2 Hz status only
    back = t_fs + 2 * S
    cmd.proof_of_life(back, thrust_and_torque=True)
    lines = cmd.update(back)                         # the fallback clears with its condition, at once
    assert cmd.nav_state == NAV_OFFBOARD and cmd.failsafe is None and "back" in lines[0] and cmd.changed


def test_offboard_loss_custom_loss_time():
    # COM_OF_LOSS_T 0.5 s: PX4 SITL changed mode 0.56-0.62 s after the last proof of life
    cmd = Commander(of_loss_t=0.5)
    offboard_armed(cmd)
    t_fs = _cycles(cmd, 0, S)
    assert 500_000 <= t_fs < 600_000 and cmd.nav_state == NAV_POSCTL


def test_offboard_loss_land_at_once():
    # COM_OBL_RC_ACT 4: PX4 SITL went to AUTO_LAND (18) directly, no COM_FAIL_ACT_T of Hold first
    cmd = Commander(obl_rc_act=4)
    offboard_armed(cmd)
    _cycles(cmd, 0, 2 * S)
    assert cmd.nav_state == NAV_LAND and cmd.failsafe == "land"


@pytest.mark.parametrize("act, armed, nav, flight", [
    (7, False, NAV_OFFBOARD, None), (6, True, NAV_TERMINATION, "terminate"), (5, True, NAV_HOLD, "hold"),
    (3, True, NAV_LAND, "land"), (1, True, NAV_ALTCTL, "descend"), (2, True, NAV_STAB, "descend")])
def test_offboard_loss_actions(act, armed, nav, flight):
    cmd = Commander(obl_rc_act=act)
    offboard_armed(cmd)
    _cycles(cmd, 0, 2 * S)
    assert (cmd.armed, cmd.nav_state, cmd.failsafe) == (armed, nav, flight)


def test_disarmed_vehicle_has_no_failsafe():
    cmd = Commander()
    cmd.command(0, *OFFBOARD)
    assert cmd.update(10 * S) == [] and cmd.nav_state == NAV_OFFBOARD and cmd.failsafe is None


def test_status_at_two_hertz_or_on_change():
    cmd = Commander()
    assert cmd.status_due(0, None)
    cmd.changed = False
    assert not cmd.status_due(499_999, 0) and cmd.status_due(500_000, 0)
    cmd.command(1, *OFFBOARD)
    assert cmd.status_due(2, 0)


# ----------------------------------------------------------------------------- allocation and motors
A = 0.2       # [m] square X quad, rotor positions (±A, ±A) FRD
CT = 8.5      # [N] CA_ROTORn_CT
POS = np.array([[A, A, 0.0], [-A, -A, 0.0], [A, -A, 0.0], [-A, A, 0.0]])    # PX4's quad X order
KM = np.array([0.05, 0.05, -0.05, -0.05])


def by_hand(t, r, p, y):
    """PX4's unsaturated mix of a square X quad, from the effectiveness worked by hand: rotor i at
    (x, y) with axis (0, 0, -1) gives roll torque -CT y_i, pitch CT x_i, yaw CT KM_i; the
    normalised pseudo-inverse (roll/pitch scale sqrt(sum m^2 / (n/2)), yaw scale the largest
    entry, thrust the mean) then has entries -sgn(y_i)/sqrt 2, sgn(x_i)/sqrt 2, sgn(KM_i), 1."""
    return t + (-np.sign(POS[:, 1]) * r + np.sign(POS[:, 0]) * p) / math.sqrt(2) + np.sign(KM) * y


def quad(airmode=0):
    return Px4Allocator.from_parameters(POS, ct=CT, km=KM, airmode=airmode)


@pytest.mark.parametrize("trpy", [(0.5, 0, 0, 0), (0.4, 0.1, 0, 0), (0.5, -0.05, 0.08, 0.1), (0.3, 0, 0, -0.2)])
def test_unsaturated_allocation_to_rotor_speeds(trpy):
    t, r, p, y = trpy
    u = quad().motor_commands([r, p, y], [0.0, 0.0, -t])
    assert np.allclose(u, by_hand(t, r, p, y), atol=2e-9)   # float64 rounding of pinv
    w_max = 1000.0
    for fac in (0.0, 0.3, 1.0):   # THR_MDL_FAC: PX4 outputs its inverse, the motor follows it back
        assert np.allclose(rotor_speeds(u, w_max, fac), w_max * np.sqrt(u), rtol=1e-12)


def test_saturated_thrust_gives_way_before_roll():
    # airmode 0 (ControlAllocationSequentialDesaturation.cpp, mixAirmodeDisabled): thrust is lowered
    # until the highest motor is at 1; the roll difference 2 r / sqrt 2 between the sides is kept
    t, r = 0.9, 0.3
    u = quad().motor_commands([r, 0, 0], [0, 0, -t])
    d = r / math.sqrt(2)
    assert np.isclose(u.max(), 1.0) and np.allclose(u, by_hand(1.0 - d, r, 0, 0), atol=1e-9)
    om = rotor_speeds(u, 1000.0, 0.0)
    assert np.isclose(om.max(), 1000.0)           # the saturated rotor at max_rot_velocity


def test_saturated_yaw_gives_way_and_thrust_is_kept():
    # yaw 0.8 on thrust 0.5: the yaw stage may overshoot 1 by 15 % (MINIMUM_YAW_MARGIN), the motor
    # below 0 sets the gain -0.3: yaw is cut to 0.5, thrust stays 0.5: motors at 1 and 0
    u = quad().motor_commands([0, 0, 0.8], [0, 0, -0.5])
    assert np.allclose(u, np.where(KM > 0, 1.0, 0.0), atol=1e-9)


def test_roll_kept_before_yaw():
    # roll 0.4 and yaw 0.4 on thrust 0.5: roll is mixed first and fits (0.5 ± 0.283); yaw then gives
    # way to what fits: the highest motor 0.5 + 0.283 + y_eff may reach 1.15, the lowest not below 0
    r, y = 0.4, 0.4
    u = quad().motor_commands([r, 0, y], [0, 0, -0.5])
    roll_part = -np.sign(POS[:, 1]) * r / math.sqrt(2)
    yaw_part = u - 0.5 - roll_part
    # the roll difference between the two sides is intact, the yaw smaller than asked
    assert np.allclose(np.abs(roll_part), r / math.sqrt(2))
    y_eff = np.abs(yaw_part).max()
    assert y_eff < y - 0.05 and u.min() >= -1e-12 and u.max() <= 1.0 + 1e-12


def test_rotor_speeds_disarmed_and_bad_input():
    om = rotor_speeds([np.nan, 0.25, 1.2, -0.1], 1000.0, 0.5)
    assert np.allclose(om, [0.0, 500.0, 1000.0, 0.0])
    with pytest.raises(ValueError, match="commands"):
        rotor_speeds([np.inf, 0.1], 1000.0, 0.0)
    with pytest.raises(ValueError, match="commands"):
        rotor_speeds([[0.1]], 1000.0, 0.0)
    with pytest.raises(ValueError, match="thr_mdl_fac"):
        rotor_speeds([0.1], 1000.0, 2.0)


# ----------------------------------------------------------------------------- the failsafe flight
def test_hold_controller_at_its_target_gives_hover():
    m, g = 1.5, 9.81
    al = quad()
    hold = HoldController(al, al.effectiveness, m, g)
    C = np.eye(4)
    C[:3, 3] = [1.0, 2.0, 3.0]
    hold.engage(C[:3, 3], 0.0)
    torque, thrust = hold.setpoints(C, np.zeros(3), np.zeros(3))
    assert np.allclose(torque, 0.0, atol=1e-12)
    # by hand: each of the 4 motors gives m g / 4 = CT u, and the normalised thrust is u
    assert np.allclose(thrust, [0.0, 0.0, -m * g / (4 * CT)], atol=1e-9)


def test_hold_controller_pushes_back():
    al = quad()
    hold = HoldController(al, al.effectiveness, 1.5)
    C = np.eye(4)
    hold.engage([0.0, 0.0, 0.0], 0.0)
    C[:3, 3] = [0.0, 0.0, -0.5]                    # below the target: more thrust than hover
    _, thrust = hold.setpoints(C, np.zeros(3), np.zeros(3))
    assert -thrust[2] > 1.5 * 9.81 / (4 * CT)
    w = np.array([0.5, 0.0, 0.0])                  # rolling about +x (FLU = FRD x): the torque opposes it
    torque, _ = hold.setpoints(np.eye(4), w, np.zeros(3))
    assert torque[0] < 0
    with pytest.raises(ValueError, match="mass"):
        HoldController(al, al.effectiveness, -1.0)


def test_descend_is_level_and_sinks_without_position_hold():
    # PX4's emergency Descend (FlightTaskDescend.cpp): zero horizontal acceleration (level),
    # down at MPC_LAND_SPEED; Hold at the same state pushes back to its target
    al, m, g = quad(), 1.5, 9.81
    hold = HoldController(al, al.effectiveness, m, g)
    hold.engage([0.0, 0.0, 2.0], 0.0)
    C = np.eye(4)
    C[:3, 3] = (1.0, -0.5, 2.0)                       # 1.1 m beside the target, at rest, level
    torque_d, thrust_d = hold.setpoints(C, np.zeros(3), np.zeros(3), mode="descend")
    torque_h, _ = hold.setpoints(C, np.zeros(3), np.zeros(3), mode="hold")
    assert np.allclose(torque_d, 0.0, atol=1e-12) and np.abs(torque_h).max() > 1e-3
    # at rest it wants -0.7 m/s: a_z = g - Z_VEL_P 0.7 = 7.01 m/s^2, the collective m a_z over the
    # four rotors' full thrust 4 CT, FRD (thrust up is negative)
    assert thrust_d[2] == pytest.approx(-m * (g - 4.0 * 0.7) / (4 * CT), rel=1e-9)
    # sinking at 0.7 m/s already: hover thrust
    _, thrust = hold.setpoints(C, np.zeros(3), np.array([0.0, 0.0, -0.7]), mode="descend")
    assert thrust[2] == pytest.approx(-m * g / (4 * CT), rel=1e-9)
    with pytest.raises(ValueError, match="mode: expected"):
        hold.setpoints(C, np.zeros(3), np.zeros(3), mode="rtl")
