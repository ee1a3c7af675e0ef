"""The command path through PX4's offboard interface (geodyn_ros.px4.offboard_path), ROS-free.

Checked against what does not come from the path itself:
* the body wrench of the rotor speeds that come out equals the wrench of the speeds that went in
  (the package's own allocation matrix ``A`` of geodyn_ros.control.rotors, built from the rotor
  frames and constants, not PX4's effectiveness), to float32 rounding, when PX4 does not
  desaturate: the round trip bridge -> PX4 keeps what the controller asked of the rotors;
* where PX4 desaturates (a yaw at full collective), its priorities, read in PX4's source: roll and
  pitch torque kept, thrust lowered (never raised), yaw given up last;
* the command rate and the link delay on a counted fake command function;
* the in-process loop with the identity path (rotor speeds at every step) is bit for bit the loop
  without it, and ``thrust_and_torque`` at every step flies the same row to float32 rounding.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.control.flatness import FlatCommand
from geodyn_ros.control.rotors import Allocation
from geodyn_ros.px4.offboard_path import MODES, OffboardPath, px4_vehicle, torque_thrust_setpoints
from geodyn_ros.vehicle import load_vehicle
from geodyn_ros.vehicle.params import Px4Section

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = DATA.parents[1]


@pytest.fixture(scope="module")
def quad():
    cfg = load_vehicle(DATA / "quad_x_px4.yaml")
    _, frames = cfg.rotor_frames(None)
    return cfg, frames, px4_vehicle(cfg, frames)


def _wrench(cfg, frames, omega):
    """(thrust, torque (3,)) FLU of rotor speeds by the package's allocation matrix (moment first)."""
    W = Allocation.from_frames(frames, cfg.rotors).A @ (np.asarray(omega) * np.abs(omega))
    return W[5], W[:3]


def test_px4_vehicle_needs_the_px4_section_and_bounds_ct(quad):
    cfg, frames, _ = quad
    with pytest.raises(ValueError, match=r"quad_x_px4.yaml: px4: missing; .* add 'px4:"):
        px4_vehicle(replace(cfg, px4=None), frames)
    heavy = replace(cfg, rotors=replace(cfg.rotors, motor_constant=2e-4))    # 200 N per rotor
    with pytest.raises(ValueError, match=r"px4.ct: missing, and a rotor's full thrust 200 N is above PX4's "
                                         r"CA_ROTORn_CT limit 100"):
        px4_vehicle(heavy, frames)
    ok = px4_vehicle(replace(heavy, px4=Px4Section(0.0, ct=(10.0,) * 4)), frames)
    assert ok.omega_max.tolist() == [1000.0] * 4


def test_bad_arguments_name_themselves(quad):
    v = quad[2]
    with pytest.raises(ValueError, match="mode: expected one of"):
        OffboardPath("offboard", v)
    for bad in (-1e-3, float("nan"), "1"):
        with pytest.raises(ValueError, match="delay: expected a finite time >= 0"):
            OffboardPath("rotor_speeds", v, delay=bad)
    for period in (5e-4, 1.5e-3, float("inf")):
        with pytest.raises(ValueError, match="period: expected a whole number >= 1 of timestep"):
            OffboardPath("rotor_speeds", v).wrap(lambda t: None, period=period, timestep=1e-3)


@pytest.mark.parametrize("mode", MODES)
def test_unsaturated_commands_keep_their_wrench(quad, mode):
    # a hover with small roll, pitch and yaw differentials: no desaturation anywhere
    cfg, frames, v = quad
    rng = np.random.default_rng(4)
    for _ in range(20):
        omega = 600.0 + rng.uniform(-80.0, 80.0, 4)
        path = OffboardPath(mode, v)
        out = path(omega)
        T0, tau0 = _wrench(cfg, frames, omega)
        T1, tau1 = _wrench(cfg, frames, out)
        # float32 carries the setpoints and controls: 6e-8 relative per component, on wrench
        # components of up to 0.8 N m and 12 N (the 4 N per rotor)
        assert T1 == pytest.approx(T0, rel=1e-6)
        assert np.allclose(tau1, tau0, atol=1e-6 * T0)
        assert path.counts == {"commands": 1, "desaturated": 0, "clipped": 0}
        if mode == "rotor_speeds":
            assert np.array_equal(out, omega)
        else:    # a quad's four rotors are its four controlled axes: the speeds themselves come back
            assert np.allclose(out, omega, rtol=1e-6)


def test_desaturation_roll_gives_way_before_pitch_yaw_and_thrust(quad):
    # motor commands within [0, 1] whose mix *without yaw* is not (PX4, airmode 0, mixes roll, pitch
    # and thrust first, desaturates along thrust (lowering only), roll, then pitch, and adds yaw
    # last): here the roll desaturation alone brings it back, so PX4 gives up part of the roll
    # torque and keeps pitch, yaw and thrust exactly (the wrench by the package's own matrix)
    cfg, frames, v = quad
    u = np.array([0.876, 0.059, 0.336, 0.15])
    omega = 1000.0 * np.sqrt(u)
    path = OffboardPath("thrust_and_torque", v)
    out = path(omega)
    assert path.counts["desaturated"] == 1 and path.counts["clipped"] == 0
    T0, tau0 = _wrench(cfg, frames, omega)
    T1, tau1 = _wrench(cfg, frames, out)
    assert T1 == pytest.approx(T0, rel=1e-6) and np.allclose(tau1[1:], tau0[1:], atol=1e-6)
    assert 0.5 < tau1[0] / tau0[0] < 0.9                      # roll kept in sign, cut by 10-50 %
    # a command whose only excess is float32 rounding at a limit is not counted
    for om in ([970.0, 1000.0, 880.0, 880.0], [1000.0, 1000.0, 700.0, 700.0]):
        assert not torque_thrust_setpoints(v.allocator, (np.array(om) / 1000.0) ** 2)[2]
    assert torque_thrust_setpoints(v.allocator, u)[2]


def test_rate_and_delay_on_a_counted_command():
    calls = []

    def command(t, x):
        calls.append(round(t, 9))
        return FlatCommand(np.array([t * 1000.0]), np.array([t]), 0.0, np.zeros(3), np.array([t * 1000.0]),
                           np.array([t]), 0, 0)

    v = px4_vehicle(load_vehicle(DATA / "quad_x_px4.yaml"), load_vehicle(DATA / "quad_x_px4.yaml").rotor_frames(None)[1])
    path = OffboardPath("rotor_speeds", v, delay=0.003)
    f = path.wrap(command, period=0.01, timestep=0.001)
    out = [f(k * 1e-3, None) for k in range(35)]
    got = [float(c.omega[0]) for c in out]
    assert calls == [0.0, 0.01, 0.02, 0.03]                      # once per period, on the grid
    # the rotor speeds of t = 0 at once (nothing older), then each 3 steps after they were computed
    want = [0.0] * 13 + [10.0] * 10 + [20.0] * 10 + [30.0] * 2
    assert got == want
    # the arm's torques (u) go to its own driver, not through PX4: the newest command's, at once
    assert [float(c.u[0]) for c in out] == [0.0] * 10 + [0.01] * 10 + [0.02] * 10 + [0.03] * 5
    assert path.counts["commands"] == 4


@pytest.mark.parametrize("mode, tol", [("rotor_speeds", 0.0), ("thrust_and_torque", 1e-6)])
def test_the_loop_through_the_path_at_every_step(mode, tol):
    """rotor_speeds at every step is the loop without a path, bit for bit; thrust_and_torque flies
    the same 0.2 s (float32 setpoints: each command moves by ~1e-7 relative; the CoM log agrees to
    1e-6 m, far below the row's 1e-4 m error)."""
    from geodyn_ros.loops.underactuated import hexarotor_source, simulate_underactuated
    from geodyn_ros.sim import ActuatedSim
    cfg = load_vehicle(ROOT / "config" / "hexarotor_px4.yaml")
    src = hexarotor_source()
    v = px4_vehicle(cfg, ActuatedSim(src, cfg).rotor_frames)
    path = OffboardPath(mode, v)
    kw = dict(config=cfg, source=src, preroll=0.05)
    base = simulate_underactuated("ff2", 0.2, **kw)
    row = simulate_underactuated("ff2", 0.2, wrap_command=lambda c: path.wrap(c, period=1e-3, timestep=1e-3), **kw)
    assert path.counts["commands"] == 250 and path.counts["desaturated"] == 0
    if tol == 0.0:
        assert np.array_equal(row.log.p, base.log.p) and np.array_equal(row.log.q, base.log.q)
    else:
        assert np.abs(row.log.p - base.log.p).max() < tol and not np.array_equal(row.log.p, base.log.p)
