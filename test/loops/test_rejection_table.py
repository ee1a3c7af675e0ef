"""The loops with ``rejection=`` and the table command of issue 53 item 5
(``python -m geodyn_ros.examples.rejection_table``).

Independent references:

* the thrust-scale estimate against the closed form of its own law: with a plant whose thrust
  constant is ``k* = 0.95`` of the model's, the observer's body-z residual is ``(k* - k) T_x``,
  so ``k' = gamma (k* - k)`` and ``k(t) = k* + (1 - k*) e^(-gamma t)`` (``gamma = 1 rad/s``). The
  observer's own 33 ms lag (``1 / K_O``) shifts it by ``(1 - k*) e^-1 / 30 = 6e-4`` at 1 s; bound 3e-3;
* the observers against MuJoCo's applied force (the world's generalized force, filtered at the
  observer's bandwidth), and zero in free flight;
* the 95 % confidence half-width against Student's t quantile from the tables (4.303 for 2
  degrees of freedom);
* the plant's CoM shift of the heavier arm against MuJoCo's own subtree centre of mass.

The bit-identity of the rows with the options off is ``bench/loops/rows_bit_identity.py`` (every
row of both loops, against main); here the identity wrapper of ``wrap_command`` flies bit for bit.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.control.rejection import RejectionOptions
from geodyn_ros.sim.world_file import world_preset
import geodyn_ros.examples.rejection_table as rt

ROOT = Path(__file__).resolve().parents[2]
K_TRUE = 0.95


def _k_closed_form(t_flown):
    return K_TRUE + (1 - K_TRUE) * math.exp(-1.0 * t_flown)


@pytest.mark.parametrize("vehicle,level", [("collinear", "ff1"), ("actuated", "ff2"), ("collinear", "lqr"),
                                           ("borinot", "ff2")])
def test_every_loop_takes_rejection_and_learns_the_thrust(vehicle, level):
    """The four loops (underactuated, actuated, LQR, geodyn_fly's path for Borinot) pass
    ``rejection=`` to their controller and return its state; the thrust scale follows the closed form."""
    pre, dur = 0.5, 0.5
    row = rt._flight(vehicle, level, world_preset("thrust_minus5"), 0, RejectionOptions.all(), dur, pre)
    assert not row.diverged
    assert row.rejection is not None and row.rejection.options == RejectionOptions.all()
    assert row.rejection.thrust_scale == pytest.approx(_k_closed_form(pre + dur), abs=3e-3)
    off = rt._flight(vehicle, level, world_preset("thrust_minus5"), 0, None, dur, pre)
    assert off.rejection is None


def test_wrap_command_identity_flies_bit_for_bit():
    from geodyn_ros.loops.actuated import simulate_actuated
    a = simulate_actuated("ff1", 0.1, preroll=0.1)
    b = simulate_actuated("ff1", 0.1, preroll=0.1, wrap_command=lambda f: f)
    for k in ("p", "p_d", "R", "q"):
        assert np.array_equal(getattr(a.log, k), getattr(b.log, k)), k


def test_observers_in_free_flight_and_during_a_push():
    """The collinear vehicle, arms swinging: the whole-body observer reads ~0 (truth 0), the
    rigid-body one the arm (1.2 N measured over 3 s); during a 2 N push on the tool point the
    whole-body estimate matches the world's force filtered at K_O. Bounds: 1e-3 N in force (the
    bound of test_observer.py; measured 1.5e-5 N), 5e-3 N m in moment (the truth is taken at each
    step's start while the pushed point moves ~1 mm per step: |f| v h ~ 2e-3 N m; measured 6e-4)
    and 2e-3 N m at the joints (measured 1.8e-4)."""
    o = rt.observer_readings("collinear", 0.3, 0.8, 2.0)
    assert o["free_flight/whole_body"]["force_max_n"] < 1e-3
    assert o["free_flight/whole_body"]["moment_max_nm"] < 1e-3
    assert o["free_flight/rigid_body"]["force_max_n"] > 0.1
    p = o["push"]
    assert p["applied_force_max_n"] == pytest.approx(2.0, abs=1e-9)
    assert p["whole_body_force_error_max_n"] < 1e-3
    assert p["whole_body_moment_error_max_nm"] < 5e-3
    assert p["whole_body_joint_error_max_nm"] < 2e-3


def test_ci95_is_students_t():
    assert rt._ci95([1.0, 2.0, 3.0]) == pytest.approx(4.303 / math.sqrt(3), rel=1e-3)
    assert rt._ci95([5.0]) == 0.0
    s = rt.summarize([{"vehicle": "v", "case": "c", "level": "l", "mode": "on", "seed": i, "offset_m": x,
                       "rms_m": 2 * x, "mean_error_m": [x, 0, 0]} for i, x in enumerate((1.0, 2.0, 3.0))]
                     + [{"vehicle": "v", "case": "c", "level": "l", "mode": "on", "seed": 3, "diverged": "z"}])
    c = s["v/c/l/on"]
    assert c["n"] == 3 and c["failed"] == ["z"] and c["offset_mean_m"] == 2.0 and c["rms_mean_m"] == 4.0


def test_com_shift_of_the_heavier_arm_is_mujocos():
    """The small model of the arm+10 case: the plant's CoM minus the model's, at the home pose,
    against MuJoCo's subtree centre of mass of both robots."""
    import mujoco
    from types import SimpleNamespace
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.underactuated import hexarotor_source
    from geodyn_ros.sim.world import nominal_model
    cfg = load_actuation_config("hexarotor")
    pert = world_preset("arm_mass_plus10").draw(0, hexarotor_source(), cfg)
    n = pert.model.n_joints
    row = SimpleNamespace(world=pert, log=SimpleNamespace(R=np.eye(3)[None], q=np.zeros((1, n))))
    shift = rt.com_shift(row)

    def subtree_com(sim):
        m, d = sim.mj_model, sim.mj_data
        mujoco.mj_forward(m, d)
        b = sim._base_body
        return d.subtree_com[b] - d.xpos[b]

    from geodyn_ros.sim import ActuatedSim
    plant = pert.build(timestep=1e-3)
    model = ActuatedSim(nominal_model(hexarotor_source(), cfg)[1], cfg, timestep=1e-3)
    for s in (plant, model):
        s.reset(np.eye(4), np.zeros(6), np.zeros(n), np.zeros(n))
    np.testing.assert_allclose(shift, subtree_com(plant) - subtree_com(model), atol=1e-9)
    assert shift[2] < -5e-3          # the arm hangs below the base: its extra mass pulls the CoM down


def test_the_command_runs_quick(tmp_path):
    """``python -m`` as a user runs it: a tiny run, the JSON and the table."""
    out = tmp_path / "t.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.rejection_table", "--quick", "--vehicles",
                        "collinear", "--levels", "ff2", "--cases", "thrust-5", "wind_light", "--seeds", "2",
                        "--preroll", "0.2", "--duration", "0.1", "--no-observers", "--json", str(out)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| thrust-5 |" in r.stdout and "collinear" in r.stdout
    res = json.loads(out.read_text())
    assert len(res["flights"]) == 2 + 4       # thrust-5 once per mode (fixed), wind 2 seeds x 2 modes
    s = res["summary"]
    assert s["collinear/wind_light/ff2/on"]["n"] == 2 and s["collinear/thrust-5/ff2/off"]["n"] == 1
    assert s["collinear/wind_light/ff2/on"]["offset_ci95_m"] > 0
    assert res["settings"]["seeds"] == 2


@pytest.mark.parametrize("argv,word", [
    (["--seeds", "0"], "--seeds"), (["--jobs", "-1"], "--jobs"), (["--cases", "nope"], "--cases"),
    (["--duration", "nan"], "--duration"), (["--push", "inf"], "--push"), (["--preroll", "-1"], "--preroll"),
    (["--vehicles", "actuated", "--levels", "lqr"], "--levels"), (["--json", "/dev/full"], "--json"),
    (["--json", "/etc/hostname/x.json"], "--json"), (["--modes", "maybe"], "--modes")])
def test_bad_options_are_refused_in_one_line(argv, word, capsys):
    with pytest.raises(SystemExit) as e:
        rt.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and word in err, err


def test_the_combined_world_is_the_three_errors_at_once():
    """``combined_error`` (config/world.yaml): every link +10 % (the plant's total mass 1.1 times
    the model's 4.03 kg), the thrust constant 0.95 times, the base CoM moved 5 mm along x (its mass
    +10 % too: the base entry overrides ``all``)."""
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.underactuated import hexarotor_source
    cfg = load_actuation_config("hexarotor")
    pert = world_preset("combined_error").draw(0, hexarotor_source(), cfg)
    plant = pert.build(timestep=1e-3)
    assert plant.model.total_mass == pytest.approx(1.1 * 4.03, rel=1e-12)
    np.testing.assert_allclose(pert.plant_config.rotors.motor_constant, 0.95 * np.asarray(cfg.rotors.motor_constant))
    assert "  link base_link: mass +10.00 % (2.5 -> 2.75 kg), CoM [+5.00, +0.00, +0.00] mm" in pert.lines(width=None)
