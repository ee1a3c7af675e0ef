"""control.delay_margin: the delay margin against a closed form (no rotor lag) and against the
spectral radius of the delayed loop discretised on a fine grid (an independent construction:
exact zero-order-hold matrices and a delay line, stable just inside the margin, unstable just
beyond it); the path's delay (the PX4 table's 21.5 ms); the rotor lag (the slowest up/down
constant); the bound found by bisection; the tables' design (the shipped hexarotor x 0.85, as
before the rule moved here); bad input."""
import math
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.control.delay_margin import (MARGIN_RATIO, delay_loops, delay_margin, fit_rotation, path_delay,
                                             rotor_lag, scale_rotation)
from geodyn_ros.control.flatness import FlatnessGains
from geodyn_ros.control.gain_design import model_inertias
from geodyn_ros.vehicle import load_vehicle
from reference_models import delayed_radius

DATA = Path(__file__).resolve().parents[1] / "data"


def test_without_lag_the_margin_is_the_closed_form():
    # L = -(kp + j kd w) / (I w^2): |L| = 1 at w^2 = (kd^2 + sqrt(kd^4 + 4 I^2 kp^2)) / (2 I^2); the
    # phase margin atan2(kd w, kp), the delay margin that over w
    for I, kp, kd in ((0.0291, 8.41, 0.693), (4.03, 64.0, 29.0), (0.07, 60.0, 6.0), (1.0, 1.0, 0.0)):
        w = math.sqrt((kd ** 2 + math.sqrt(kd ** 4 + 4 * I ** 2 * kp ** 2)) / (2 * I ** 2))
        assert delay_margin(I, kp, kd, 0.0) == pytest.approx(math.atan2(kd * w, kp) / w, rel=1e-9)


@pytest.mark.parametrize("I, kp, kd, lag", [(0.0291, 8.41, 0.693, 0.03), (0.0291, 4.12, 0.485, 0.03),
                                            (0.131, 28.9, 2.72, 0.0182), (1.8, 28.8, 12.96, 0.03)])
def test_the_margin_is_where_the_delayed_loop_turns_unstable(I, kp, kd, lag):
    # the small model is the continuous loop with a pure delay: its eigenvalues cross the unit
    # circle at the margin (the 0.2 ms grid discretises it; 3 % either side is far beyond that)
    m = delay_margin(I, kp, kd, lag)
    assert 0 < m < 0.5
    assert delayed_radius(I, kp, kd, lag, 0.97 * m) < 1.0
    assert delayed_radius(I, kp, kd, lag, 1.03 * m) > 1.0


def test_the_path_delay_is_the_px4_tables():
    # latency 10 ms + a 10 ms hold + 1.5 simulator steps of 1 ms (doc/tutorials/px4_table.md)
    assert path_delay(0.01, 0.010, 0.0, 1e-3) == pytest.approx(0.0215, abs=1e-15)
    assert path_delay(0.01, 0.010, 0.002, 1e-3) == pytest.approx(0.0235, abs=1e-15)
    for kw, name in ((dict(period=0.0, latency=0.01), "period"), (dict(period=0.01, latency=-1e-3), "latency"),
                     (dict(period=float("nan"), latency=0.0), "period"),
                     (dict(period=0.01, latency=0.01, link_delay=True), "link_delay")):
        with pytest.raises(ValueError, match=name):
            path_delay(**kw)


def test_the_rotor_lag_is_the_slowest_up_or_down_constant():
    cfg = load_vehicle(DATA / "quad_x_arm_px4.yaml")
    # up 12 / 12.5 ms, down 25 ms and rotor 1's 30 ms
    assert rotor_lag(cfg.rotors) == 0.03
    hexa = load_vehicle(DATA.parents[1] / "config" / "hexarotor_px4.yaml")
    assert rotor_lag(hexa.rotors) == 0.0182       # up = down: the tables' lag unchanged


def test_bound_is_where_the_rule_just_holds():
    inr = {"mass": 1.8, "inertia_com": np.diag([0.0291, 0.0291, 0.028])}
    g = FlatnessGains(kp_position=28.8, kd_position=12.96, kp_rotation=(8.41, 8.41, 4.03),
                      kd_rotation=(0.693, 0.693, 0.672))
    delay = 0.0235
    loops = delay_loops(g, inr, 0.03, delay)
    assert [e["axis"] for e in loops] == ["xyz", "roll", "pitch", "yaw"]
    roll = loops[1]
    assert not roll["ok"] and roll["need_s"] == pytest.approx(MARGIN_RATIO * delay)
    b = roll["bound"]
    assert b["gain"] == "kp_rotation[roll]" and "need kp_rotation[roll] <=" in b["refusal"]
    f = b["factor"]
    assert b["kp"] == pytest.approx(8.41 * f * f) and b["kd"] == pytest.approx(0.693 * f)
    # at the bound the margin is the need; a little beyond it the rule refuses again
    assert delay_margin(0.0291, b["kp"], b["kd"], 0.03) == pytest.approx(roll["need_s"], rel=1e-4)
    assert delay_margin(0.0291, 8.41 * (1.01 * f) ** 2, 0.693 * 1.01 * f, 0.03) < roll["need_s"]
    # and the bound really is stable with the path's delay and unstable at 1.5 x (the rule's reason)
    assert delayed_radius(0.0291, b["kp"], b["kd"], 0.03, delay) < 1.0
    assert loops[0]["ok"] and loops[0]["bound"] is None          # the CoM loop: 144 ms of margin


def test_fit_rotation_gives_the_tables_numbers():
    # the shipped hexarotor's demo gains, for a command per odometry sample at 100 Hz (21.5 ms):
    # x 0.85, kp_rotation 28.9 (config/hexarotor_px4.yaml), as the sensing table's rule gave
    from geodyn_ros.loops.underactuated import hexarotor_source
    cfg = load_vehicle(DATA.parents[1] / "config" / "hexarotor_px4.yaml")
    inr = model_inertias(cfg.load_model(hexarotor_source()))
    g, f, m = fit_rotation(FlatnessGains(), inr, rotor_lag(cfg.rotors), 0.0215)
    assert f == 0.85 and m >= 1.5 * 0.0215
    assert np.allclose(g.kp_rotation, (28.9, 28.9, 7.225)) and np.allclose(g.kd_rotation, (2.72, 2.72, 1.36))
    assert scale_rotation(FlatnessGains(), 0.85) == g
    from geodyn_ros.examples.sensing_table import fit_gains       # the tables call the same rule
    assert fit_gains(FlatnessGains(), "flatness", inr, 0.0182, 0.0215) == (g, f, m)


def test_bad_input_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match="inertia"):
        delay_margin(0.0, 1.0, 1.0, 0.01)
    with pytest.raises(ValueError, match="lag"):
        delay_margin(1.0, 1.0, 1.0, float("nan"))
    with pytest.raises(ValueError, match="kp"):
        delay_margin(1.0, -1.0, 1.0, 0.01)
    assert delay_margin(1.0, 0.0, 0.0, 0.01) == math.inf              # no feedback: nothing to lose
    with pytest.raises(ValueError, match="delay"):
        delay_loops(FlatnessGains(), {"mass": 1.0, "inertia_com": np.eye(3)}, 0.01, -1.0)
