"""``geodyn_ros.examples.gain_sweep``: each level at its own best gains under the delay-margin rule.

Independent references:
* the delay margin of a scaled loop from a brute-force frequency sweep of its open loop
  ``L(jw) = (k_d jw + k_p) / (I (jw)^2 (T jw + 1))`` (the crossover found on a log grid, the
  phase margin over it), not from ``delay_margin``'s own root finding;
* the confidence interval from ``scipy.stats.t.interval`` (the module uses ``t.ppf``);
* the command run as a user runs it, its table against its ``--json`` of the same flights.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from geodyn_ros.control.flatness import FlatnessGains
from geodyn_ros.examples.gain_sweep import admissible, base_gains, mean_ci, run_sweep, scale_gains
from geodyn_ros.examples.sensing_table import _Vehicle, condition_profile, loop_delay


def test_scale_keeps_the_damping_and_the_joints():
    g = FlatnessGains(kp_joint=(1.0, 2.0), kd_joint=0.3)
    h = scale_gains(g, 1.5)
    assert h.kp_position == pytest.approx(64.0 * 2.25) and h.kd_position == pytest.approx(29.0 * 1.5)
    assert h.kp_rotation == pytest.approx((90.0, 90.0, 22.5)) and h.kd_rotation == pytest.approx((4.8, 4.8, 2.4))
    assert h.kp_joint == g.kp_joint and h.kd_joint == g.kd_joint
    # the damping ratio kd / (2 sqrt(kp m)) is unchanged on the CoM loop
    assert h.kd_position / np.sqrt(h.kp_position) == pytest.approx(g.kd_position / np.sqrt(g.kp_position))
    for bad in (0.0, -1.0, float("nan"), float("inf"), True, "2"):
        with pytest.raises(ValueError, match=r"^scale: "):
            scale_gains(g, bad)


def _margin_brute(I, kp, kd, T):
    w = np.logspace(-2, 4, 400001)
    L = (kd * 1j * w + kp) / (I * (1j * w) ** 2 * (T * 1j * w + 1))
    k = int(np.argmin(np.abs(np.abs(L) - 1.0)))
    phase_margin = np.pi + np.unwrap(np.angle(L))[k]
    return phase_margin / w[k]


@pytest.mark.parametrize("s", [0.71, 1.41, 2.0])
def test_admissible_is_the_delay_rule_on_every_loop(s):
    """Under mocap (7.8 ms of loop delay): the smallest margin over the CoM and the three rotation
    axes, from the brute-force sweep, matches the one reported within 0.5 % (the grid's step of
    3.5e-5 decades in w is far finer), and the verdict is margin >= 1.5 x delay. x2 is refused
    (8.6 ms < 11.7 ms), x1.41 admitted (16.2 ms)."""
    v = _Vehicle("underactuated")
    delay = loop_delay(condition_profile("mocap"))
    g = scale_gains(v.gains0, s)
    ok, m, loop = admissible(g, v.inertias, v.lag, delay)
    Ic = np.diag(np.asarray(v.inertias["inertia_com"], float))
    axes = [(float(v.inertias["mass"]), g.kp_position, g.kd_position)] + \
        [(float(Ic[i]), g.kp_rotation[i], g.kd_rotation[i]) for i in range(3)]
    brute = min(_margin_brute(I, kp, kd, v.lag) for I, kp, kd in axes)
    assert m == pytest.approx(brute, rel=5e-3)
    assert ok == (brute >= 1.5 * delay)
    assert ok == (s < 2.0)


def test_mean_ci_is_students_t():
    x = np.array([1.0, 1.3, 0.8, 1.1, 0.95])
    m, h = mean_ci(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert m == pytest.approx(x.mean()) and h == pytest.approx((hi - lo) / 2, rel=1e-12)
    assert np.isnan(mean_ci([2.0])[1])
    for bad in ([], [1.0, np.nan], [[1.0, 2.0]]):
        with pytest.raises(ValueError, match=r"^x: "):
            mean_ci(bad)


@pytest.mark.parametrize("kw, match", [
    (dict(vehicles=["iris"]), r"^vehicles: "), (dict(vehicles="underactuated"), r"^vehicles: "),
    (dict(scales=[0.5, 2.0]), r"^scales: must hold 1"), (dict(scales=[1.0, -1.0]), r"^scales: "),
    (dict(scales=[1.0, True]), r"^scales: "), (dict(seeds=1), r"^seeds: "), (dict(seeds=2.5), r"^seeds: "),
    (dict(duration=0.0), r"^duration: "), (dict(conditions=[]), r"^conditions: ")])
def test_run_sweep_refuses_in_one_line(kw, match):
    with pytest.raises(ValueError, match=match):
        run_sweep(**kw)


def test_the_command_runs_as_written(tmp_path):
    """``python -m geodyn_ros.examples.gain_sweep --quick`` with two scales, one of them refused
    (x2 under mocap): the refused column says so and flies nothing, every level's x1 cell is
    printed as the --json's mean and interval, and the count line is the flights flown."""
    out = tmp_path / "g.json"
    p = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.gain_sweep", "--quick", "--scales", "1", "2",
                        "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(out.read_text())
    d = res["vehicles"]["underactuated"]["mocap"]
    assert d["scales"]["2.0"]["admissible"] is False and d["scales"]["1.0"]["admissible"] is True
    lines = p.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 100
    for lv, L in d["levels"].items():
        c = L["cells"]["1.0"]
        assert len(c["rms_m"]) == 2 and not c["diverged"]
        row = next(ln for ln in lines if ln.startswith(f"| {lv} |"))
        assert f"{c['mean_m'] * 1e3:.3f} ± {c['ci_m'] * 1e3:.3f}" in row and "refused" in row
        assert L["best"] == 1.0
    assert lines[-1].startswith(f"{2 * len(d['levels'])} flights in ")
    assert "[8/8]" in p.stderr


def test_bad_command_line_is_one_line():
    p = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.gain_sweep", "--scales", "0.5", "2"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == \
        ["gain_sweep: scales: must hold 1 (the same-gains row), got (0.5, 2.0)"], p.stderr


def test_a_flight_that_raises_is_reported_and_the_others_fly(monkeypatch, capsys, tmp_path):
    """A flight that cannot run (here: ff1 at x1.41, seed 1, raising) is kept in its cell as
    ``failed`` with its one-line error, cut at ERROR_CHARS; its cell wins nothing and prints as
    failed; every other flight is still flown and scored; the count line names the failure and the
    command exits 1 (as ``rejection_table`` does). The flights are stand-ins (RMS = scale x 1 mm +
    seed x 0.1 mm), so the winner is known without flying: the smallest admissible scale."""
    from geodyn_ros.examples import gain_sweep as gs

    flown = []

    def fake(args):
        vname, level, cond, s, seed, _ = args
        flown.append(args)
        if (level, s, seed) == ("ff1", 1.41, 1):
            raise RuntimeError("kernel exploded: " + "x" * 500)
        return (vname, cond, level, s, seed), {"rms_m": 1e-3 * s + 1e-4 * seed}

    monkeypatch.setattr(gs, "_flight", fake)
    out = tmp_path / "g.json"
    rc = gs.main(["--scales", "0.71", "1", "1.41", "--seeds", "2", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 1
    res = json.loads(out.read_text())["vehicles"]["underactuated"]["mocap"]
    levels = res["levels"]
    assert len(flown) == 3 * 2 * len(levels)
    bad = levels["ff1"]["cells"]["1.41"]
    assert [s for s, _ in bad["failed"]] == [1] and bad["rms_m"] == [pytest.approx(1.41e-3)]
    err = bad["failed"][0][1]
    assert err.startswith("RuntimeError: kernel exploded: ") and len(err) == gs.ERROR_CHARS
    assert "mean_m" not in bad
    for lv, L in levels.items():
        assert L["best"] == 0.71                          # the stand-ins' least RMS
        assert L["cells"]["1.0"]["mean_m"] == pytest.approx(1.05e-3)
    row = next(ln for ln in text.splitlines() if ln.startswith("| ff1 |"))
    assert "1/2 failed" in row
    assert text.splitlines()[-1].startswith(f"{3 * 2 * len(levels)} flights in ")
    assert "; 1 failed (first: RuntimeError: kernel exploded: " in text.splitlines()[-1]


def test_x1_is_the_sensing_tables_gains():
    """``x1`` is the gains the sensing table flies under the same condition: the collinear
    hexarotor's own (its rotation margin 27.3 ms clears mocap's 11.7 ms and onboard's 24.8 ms), the
    TiltHex's with its rotation bandwidth x0.85 under mocap (its own 60 N m/rad would leave a
    margin under 1.5 x 7.8 ms). The TiltHex's margin at x1 and x1.41 from the brute-force sweep of
    its open loops: x1 admitted, x1.41 refused."""
    from geodyn_ros.control.feedback import TrackingGains
    u = _Vehicle("underactuated")
    for c in ("mocap", "onboard"):
        assert base_gains(u, loop_delay(condition_profile(c))) == u.gains0
    a = _Vehicle("actuated")
    delay = loop_delay(condition_profile("mocap"))
    g = base_gains(a, delay)
    assert g.kp_rotation == pytest.approx(TrackingGains().kp_rotation * 0.85 ** 2)
    assert g.kd_rotation == pytest.approx(TrackingGains().kd_rotation * 0.85)
    a.design(delay)
    assert g == a.gains                               # the sensing table's own design
    for s, want in ((1.0, True), (1.41, False)):
        h = scale_gains(g, s)
        Ic = np.diag(np.asarray(a.inertias["inertia_com"], float))
        axes = [(float(a.inertias["mass"]), h.kp_position, h.kd_position)] + \
            [(float(Ic[i]), h.kp_rotation, h.kd_rotation) for i in range(3)]
        brute = min(_margin_brute(I, kp, kd, a.lag) for I, kp, kd in axes)
        ok, m, _ = admissible(h, a.inertias, a.lag, delay)
        assert m == pytest.approx(brute, rel=5e-3) and ok == want == (brute >= 1.5 * delay)


def test_baselines_are_swept_beside_the_orders(monkeypatch, capsys):
    """``--baselines`` on the TiltHex adds ``pd_g`` and ``indi`` at every admissible scale; the
    adjacent-order pairs stay among the orders (pd, ff0, ff1, ff2), and each baseline's best is
    set against ff0's best. Stand-in flights (RMS = level's factor x scale), so every figure is
    known: pd_g is 3 x ff0 at x0.71, the smallest admissible scale."""
    from geodyn_ros.examples import gain_sweep as gs
    factor = {"pd": 100.0, "ff0": 1.0, "ff1": 0.9, "ff2": 0.8, "pd_g": 3.0, "indi": 30.0}

    def fake(args):
        vname, level, cond, s, seed, _ = args
        return (vname, cond, level, s, seed), {"rms_m": 1e-3 * factor[level] * s * (1 + 0.01 * seed)}

    monkeypatch.setattr(gs, "_flight", fake)
    assert gs.main(["--vehicles", "actuated", "--baselines", "--scales", "0.71", "1", "1.41", "--seeds", "2"]) == 0
    text = capsys.readouterr().out
    for lv in factor:
        assert any(ln.startswith(f"| {lv} |") for ln in text.splitlines()), lv
    assert "| scale | pd - ff0 | ff0 - ff1 | ff1 - ff2 |" in text
    assert "baseline pd_g at its best (x0.71) against ff0 at its best (x0.71): x3.00" in text
    assert "baseline indi at its best (x0.71) against ff0 at its best (x0.71): x30.00" in text
    assert "x1.41" in text and "refused" in text


def test_worlds_and_speeds_refuse_bad_input_in_one_line():
    for kw, match in ((dict(worlds=()), r"^worlds: expected a non-empty list"),
                      (dict(worlds="exact"), r"^worlds: expected a non-empty list"),
                      (dict(worlds=(3,)), r"^worlds: expected names"),
                      (dict(worlds=("windy",)), r"worlds\.windy: no such world"),
                      (dict(speeds=()), r"^speeds: expected a non-empty list"),
                      (dict(speeds=(0.0,)), r"^speeds: expected finite numbers > 0"),
                      (dict(speeds=(float("nan"),)), r"^speeds: expected finite numbers > 0"),
                      (dict(speeds=(True,)), r"^speeds: expected finite numbers > 0")):
        with pytest.raises(ValueError, match=match) as e:
            run_sweep(("underactuated",), ("perfect",), scales=(1.0,), seeds=2, duration=0.1, **kw)
        assert "\n" not in str(e.value)
    # geodyn_fly's vehicles fly their own scaled reference: no time scaling, said so
    with pytest.raises(ValueError, match=r"^speeds: borinot_flying_arm_2 flies geodyn_fly's scaled reference"):
        run_sweep(("borinot_flying_arm_2",), ("perfect",), scales=(1.0,), seeds=2, duration=0.1, speeds=(1.0, 1.5))


def test_cell_label_keeps_the_old_keys():
    from geodyn_ros.examples.gain_sweep import cell_label
    assert cell_label("mocap") == cell_label("mocap", "exact", 1.0) == "mocap"
    assert cell_label("mocap", "model_error", 1.0) == "mocap | model_error | x1"
    assert cell_label("perfect", "exact", 1.5) == "perfect | exact | x1.5"
    assert cell_label("mocap", "exact", 1.0, "integral") == "mocap | exact | x1 | rejection integral"


def test_rejection_set_is_flown_in_every_world_and_refuses_bad_names():
    """``--rejection``: a bad name is refused in one line (run_sweep and the command line); on the
    exact plant, ``integral`` flies the integral action (other figures than without it: the option
    acts), while ``off`` gives the exact column bit for bit (no options: the controller of the
    sweep without the flag), and ``off`` on a drawn world differs from the same world with the lab's
    set (the rule's default there). One seed, 0.3 s."""
    from geodyn_ros.examples import gain_sweep as gs
    with pytest.raises(ValueError, match=r"^rejection: expected one of integral, lab, off or None, got 'pid'$"):
        run_sweep(("underactuated",), ("perfect",), scales=(1.0,), seeds=2, duration=0.1, rejection="pid")
    with pytest.raises(SystemExit) as e:
        gs.main(["--rejection", "pid", "--quick"])
    assert e.value.code == 2
    base = ("underactuated", "ff0", "mocap", 1.0, 0, 0.3)
    exact = gs._flight(base)
    off = gs._flight(base + ("exact", 1.0, "off"))
    integ = gs._flight(base + ("exact", 1.0, "integral"))
    assert off[0][1] == "mocap | exact | x1 | rejection off" and integ[0][1] == "mocap | exact | x1 | rejection integral"
    assert off[1] == exact[1]
    assert integ[1]["rms_m"] != exact[1]["rms_m"]
    lab = gs._flight(base + ("model_error", 1.0))
    err_off = gs._flight(base + ("model_error", 1.0, "off"))
    assert err_off[1]["rms_m"] != lab[1]["rms_m"]


def test_a_world_and_a_speed_are_flown_and_the_exact_column_is_unchanged():
    """One seed pair, one level, 0.2 s: the exact column equals the sweep without the new axes bit
    for bit; the drawn model error (a seed draws masses, CoM, rotor constants) and the faster
    reference each give other figures (they do fly what they name)."""
    from geodyn_ros.examples import gain_sweep as gs
    old = gs._flight(("underactuated", "ff1", "perfect", 1.0, 0, 0.2))
    new = gs._flight(("underactuated", "ff1", "perfect", 1.0, 0, 0.2, "exact", 1.0))
    assert old == new
    err = gs._flight(("underactuated", "ff1", "perfect", 1.0, 0, 0.2, "model_error", 1.0))
    fast = gs._flight(("underactuated", "ff1", "perfect", 1.0, 0, 0.2, "exact", 1.5))
    assert err[0][1] == "perfect | model_error | x1" and fast[0][1] == "perfect | exact | x1.5"
    assert "rms_m" in err[1] and "rms_m" in fast[1]
    assert err[1]["rms_m"] != old[1]["rms_m"] and fast[1]["rms_m"] != old[1]["rms_m"]


def test_plot_and_replot(monkeypatch, capsys, tmp_path):
    """--plot writes the RMS-against-scale PNG of the sweep; --replot draws the same from the --json
    (scale keys read back as strings) and flies nothing; a file that is not a sweep is one line, exit 2.
    Stand-in flights (RMS = scale x 1 mm + seed x 0.1 mm)."""
    from geodyn_ros.examples import gain_sweep as gs

    def fake(args):
        vname, level, cond, s, seed, _ = args
        return (vname, cond, level, s, seed), {"rms_m": 1e-3 * s + 1e-4 * seed}

    monkeypatch.setattr(gs, "_flight", fake)
    js, png = tmp_path / "g.json", tmp_path / "plots" / "g.png"
    assert gs.main(["--scales", "0.71", "1", "1.41", "--seeds", "2", "--json", str(js), "--plot", str(png)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"plot: {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    def no_flight(args):
        raise AssertionError("--replot flies nothing")
    monkeypatch.setattr(gs, "_flight", no_flight)
    png2 = tmp_path / "g2.png"
    assert gs.main(["--replot", str(js), "--plot", str(png2)]) == 0
    assert capsys.readouterr().out.strip() == f"plot: {png2}" and png2.stat().st_size > 10_000
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert gs.main(["--replot", str(bad), "--plot", str(png2)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gain_sweep: {bad}: KeyError: 'vehicles'; give a --json file of gain_sweep"
    with pytest.raises(SystemExit):
        gs.main(["--replot", str(js)])
