"""control/failsafe.py: the state machine on synthetic odometry ages, and the dead reckoning
against a closed-form motion. The closed loop with a 0.5 s odometry loss is
test/loops/test_sensing_loops.py::test_odometry_loss_holds_then_resumes."""
import numpy as np
import pytest

from geodyn_ros.control.failsafe import DeadReckoning, Failsafe, FailsafeConfig
from geodyn_ros.lie import exp_so3


def _run(fs, ages, dt=0.01):
    modes = []
    for k, age in enumerate(ages):
        modes.append(fs.update(k * dt, age))
    return modes


def test_hold_then_descend_then_resume_one_line_each():
    lines = []
    cfg = FailsafeConfig(hold=0.5, descent_rate=0.7, ramp=0.2)
    fs = Failsafe(cfg, timeout=0.05, log=lines.append)
    ages = [0.01] * 10 + [0.02 + 0.01 * i for i in range(100)] + [0.01] * 200
    modes = _run(fs, ages)
    # the loss is declared at the first age beyond the timeout, the descent hold seconds later
    t_loss = 0.01 * (10 + next(i for i in range(100) if 0.02 + 0.01 * i > 0.05))
    assert modes.index("hold") * 0.01 == pytest.approx(t_loss)
    assert modes.index("descend") * 0.01 == pytest.approx(t_loss + 0.5)
    assert modes[-1] == "tracking" and fs.losses == 1
    assert len(lines) == 3 and all(x.startswith("failsafe: t = ") for x in lines)
    assert "holding the reference" in lines[0] and "descending at 0.7 m/s" in lines[1] and "restored" in lines[2]
    # the clock stopped within the ramp after the loss and resumed at rate 1 after the restore
    assert fs.clock.value_rate(t_loss + 0.3)[1] == 0.0
    assert fs.clock.value_rate(3.0)[1] == 1.0
    # the offset sank at 0.7 m/s during the descent and came back to 0 after the restore
    t_desc = t_loss + 0.5
    assert fs.offset.value_rate(t_desc + 0.3)[1] == pytest.approx(-0.7)
    assert fs.offset.value_rate(3.0 + 5.0) == pytest.approx((0.0, 0.0), abs=1e-12)
    assert fs.status()["mode"] == "tracking"


def test_then_hold_never_descends_and_never_received_is_a_loss():
    fs = Failsafe(FailsafeConfig(hold=0.1, then="hold"), timeout=0.05, log=None)
    assert _run(fs, [None] * 50)[-1] == "hold"
    assert fs.offset.value_rate(10.0) == (0.0, 0.0)


def test_config_refusals_and_default_timeout():
    assert FailsafeConfig().timeout_for(240.0, 0.0042) == pytest.approx(0.0042 + 3 / 240)
    assert FailsafeConfig(timeout=0.2).timeout_for(240.0, 0.0042) == 0.2
    for kw, name in (({"hold": 0.0}, "hold"), ({"then": "land"}, "then"), ({"timeout": -1.0}, "timeout"),
                     ({"descent_rate": float("nan")}, "descent_rate")):
        with pytest.raises(ValueError, match=name):
            FailsafeConfig(**kw)


def test_dead_reckoning_follows_a_constant_acceleration_motion():
    """Noise-free IMU samples of a motion with constant world angular velocity and constant world
    acceleration: the dead-reckoned pose and velocity match the closed form; the trapezoid
    position rule is exact for a constant acceleration, the attitude exact for a constant rate,
    so only rounding remains (1e-9 after 100 samples)."""
    w, a, v0, p0 = np.array([0.2, -0.1, 0.4]), np.array([0.5, -1.0, 0.3]), np.array([1.0, 0.0, 0.5]), np.zeros(3)
    g = np.array([0.0, 0.0, -9.81])

    def state(t):
        C = np.eye(4)
        C[:3, :3] = exp_so3(t * w)
        C[:3, 3] = p0 + v0 * t + 0.5 * a * t * t
        pdot = v0 + a * t
        return C, np.concatenate([w, pdot + np.cross(C[:3, 3], w)])
    dr = DeadReckoning(g)
    C, V = state(0.1)
    dr.reset(0.1, C, V)
    dt = 0.005
    for k in range(1, 101):
        t = 0.1 + k * dt
        R1 = exp_so3(t * w)
        dr.imu(t, dt, R1.T @ w, R1.T @ (a - g))
    stamp, Cd, Vd = dr.state()
    Ce, Ve = state(0.6)
    assert stamp == pytest.approx(0.6)
    assert np.allclose(Cd, Ce, atol=1e-9) and np.allclose(Vd, Ve, atol=1e-9)
