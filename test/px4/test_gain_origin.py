"""control.gain_origin: whether a controller's gains were designed for the vehicle it flies (issue
52). The defaults' stamp against the shipped hexarotor's model; gains designed for the vehicle
(its file's, its model's at its period, a stamp naming it) pass in silence; the shipped
hexarotor's PX4 gains on a lab quadrotor are refused (the model: unstable at PX4's 10 ms), and
the refusal's bound is the discrete check's; the defaults on a quadrotor without an arm are
warned of (stable at 1 ms, not at 10 ms); a malformed stamp names the parameter."""
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.control.flatness import FlatnessGains
from geodyn_ros.control.gain_design import design_gains, discrete_radius, model_inertias
from geodyn_ros.control.gain_origin import DEFAULT_GAINS_FOR, designed_for, gain_origin, parse_designed_for
from geodyn_ros.control.rotors import Allocation
from geodyn_ros.vehicle import load_vehicle

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = DATA.parents[1]


def _vehicle(urdf, vehicle):
    cfg = load_vehicle(vehicle)
    model = cfg.load_model(urdf)
    return model, Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors), cfg


@pytest.fixture(scope="module")
def quad():
    return _vehicle(DATA / "quad_x_arm.urdf", DATA / "quad_x_arm_px4.yaml")


@pytest.fixture(scope="module")
def hexa():
    from geodyn_ros.loops.underactuated import hexarotor_source
    return _vehicle(hexarotor_source(), ROOT / "config" / "hexarotor_px4.yaml")


def _px4_yaml_controller():
    import yaml
    p = yaml.safe_load((ROOT / "config" / "px4.yaml").read_text())["/**/geodyn_flat_controller"]["ros__parameters"]
    g = FlatnessGains(**{k: tuple(v) if isinstance(v, list) else v for k, v in p.items()
                         if k.startswith(("kp_", "kd_"))})
    return g, p["gains_designed_for"]


def test_the_defaults_stamp_is_the_shipped_hexarotors(hexa):
    model, _, _ = hexa
    assert designed_for(model, 1e-3) == DEFAULT_GAINS_FOR
    # mass and inertia by hand from the stamp's own numbers
    m, I, period = parse_designed_for(DEFAULT_GAINS_FOR)
    inr = model_inertias(model)
    assert m == pytest.approx(inr["mass"], rel=1e-5) and np.allclose(I, np.diag(inr["inertia_com"]), rtol=1e-5)
    assert period == 1e-3


def test_designed_for_this_vehicle_says_nothing(quad, hexa):
    model, al, cfg = quad
    d = design_gains(model, al, cfg)                              # its model's, at its 1 ms
    assert gain_origin(d.gains, "", model, al, cfg).line == ""
    g10 = design_gains(model, al, cfg, period=0.01).gains         # other gains, stamped for it
    assert gain_origin(g10, designed_for(model, 0.01), model, al, cfg).line == ""
    hm, hal, hcfg = hexa
    g, stamp = _px4_yaml_controller()                             # config/px4.yaml on its own vehicle
    assert gain_origin(g, stamp, hm, hal, hcfg).line == ""
    assert gain_origin(g, "", hm, hal, hcfg).line == ""           # = config/hexarotor_px4.yaml's gains:
    from geodyn_ros.control.rotors import load_actuation_config
    shipped = load_actuation_config("hexarotor")
    assert gain_origin(FlatnessGains(), "", hm, hal, shipped).line == ""


def test_the_hexarotors_px4_gains_on_a_quadrotor_are_refused(quad):
    model, al, cfg = quad
    g, stamp = _px4_yaml_controller()
    o = gain_origin(g, stamp, model, al, cfg)
    assert o.refuse and "\n" not in o.line
    assert o.line.startswith("gains: not designed for this vehicle (1.8 kg, inertia 0.0291 0.0291 0.028 kg m^2): "
                             "gains_designed_for names another vehicle (4.03 kg")
    assert "unstable at 10 ms: kp_rotation[roll]: 28.9 N m/rad" in o.line and "geodyn_vehicle" in o.line
    # the claim, checked on the loop itself: roll at 10 ms with one step of delay, the 1.5x margin
    I = model_inertias(model)["inertia_com"][0, 0]
    assert discrete_radius(I, 1.5 * 28.9, 1.5 * 2.72, 0.01, lag=0.0125) > 1.0


def test_the_defaults_on_a_quadrotor_without_an_arm_are_warned_of():
    model, al, cfg = _vehicle(DATA / "quad_x.urdf", DATA / "quad_x_px4.yaml")
    o = gain_origin(FlatnessGains(), "", model, al, cfg)
    assert not o.refuse and "\n" not in o.line
    assert "they are the node's defaults, the shipped hexarotor's (4.03 kg" in o.line
    assert "stable at 1 ms, but at PX4's 10 ms: kp_rotation[roll]" in o.line
    # unstamped hand-tuned gains that are stable everywhere: said, not refused
    mild = FlatnessGains(kp_position=10.0, kd_position=6.0, kp_rotation=(2.0, 2.0, 1.0), kd_rotation=(0.2, 0.2, 0.2))
    o = gain_origin(mild, "", model, al, cfg)
    assert not o.refuse and "carry no gains_designed_for" in o.line and "stable on it at 1 ms and 10 ms" in o.line


@pytest.mark.parametrize("stamp", ["4 kg", "mass x kg; inertia 1 1 1 kg m^2; period 0.01 s",
                                   "mass 1 kg; inertia 1 1 -1 kg m^2; period 0.01 s",
                                   "mass 1 kg; inertia 1 1 1 kg m^2; period nan s"])
def test_a_malformed_stamp_names_the_parameter(quad, stamp):
    model, al, cfg = quad
    with pytest.raises(ValueError, match=r"^gains_designed_for: .* is not a stamp 'mass <kg> kg; .*geodyn_vehicle"):
        gain_origin(FlatnessGains(), stamp, model, al, cfg)
    with pytest.raises(ValueError, match="period"):
        designed_for(model, 0.0)
