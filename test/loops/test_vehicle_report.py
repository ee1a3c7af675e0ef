"""geodyn_vehicle as a user runs it (the installed console script), its figures against
independent computations: closed forms from the constants, a hand-built allocation, Pinocchio,
and a bounded least-squares solver for the linear programs."""
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from reference_models import build_pin_model, example_robot_data_dir

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).parent / "geodyn_vehicle"
G = 9.81
#: config/hexarotor.yaml and config/tilthex.yaml (gz X4 constants), and the 4.03 kg mass (the README)
CF, KM, WMAX, MASS = 1.269e-05, 0.016754, 1000.0, 4.03


def run(*args, check=True):
    """The console script; the timeout covers the import (seconds warm) on a loaded machine."""
    out = subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                         cwd=ROOT)
    if check:
        assert out.returncode == 0, out.stderr[-2000:]
    return out


def borinot():
    d = example_robot_data_dir()
    assert d is not None, "example-robot-data not installed (pinned in requirements.txt)"
    return f"{d}/borinot_description/urdf/borinot_flying_arm_2.urdf", str(ROOT / "config/vehicles/borinot_flying_arm_2.yaml")


@pytest.fixture(scope="module")
def hexa_text():
    return run().stdout


@pytest.fixture(scope="module")
def hexa_json():
    return json.loads(run("--json").stdout)


def test_text_fits_100_columns_and_names_every_figure(hexa_text):
    lines = hexa_text.splitlines()
    assert max(map(len, lines)) <= 99
    for s in ("mass 4.03 kg", "allocation rank 4 -> flatness controller", "hover speeds [% of max]",
              "thrust-to-weight", "max tilt holding altitude", "yaw authority at hover", "gains (the file's gains: section)",
              "radius"):
        assert s in hexa_text, s
    assert sum(ln.split()[0] == "joint" for ln in lines if ln.strip()) == 6


def test_shipped_hexarotor_closed_forms(hexa_text, hexa_json):
    """The collinear hexarotor with its CoM on the base z axis (symmetric arms):
    thrust-to-weight 6 c_f w_max^2 / (m g); every rotor hovers at sqrt(m g / (6 c_f)); the tilt
    acos(m g / T_max); yaw: a triple of like-spinning rotors 120 deg apart makes no roll/pitch
    moment, so the largest yaw moment at hover puts one triple at w_max and the other carries the
    rest of the weight: c_d (3 w_max^2 - (m g / c_f - 3 w_max^2)). Tolerances: 1e-9 relative
    (rounding) except where the text prints 3-4 digits."""
    r = hexa_json
    W = MASS * G
    assert r["mass_kg"] == pytest.approx(MASS, rel=1e-12)
    assert r["rank"] == 4 and r["controller"] == "flatness"
    tw = 6 * CF * WMAX ** 2 / W
    assert r["thrust_to_weight"] == pytest.approx(tw, rel=1e-9)
    assert f"thrust-to-weight {tw:.3f}" in hexa_text
    np.testing.assert_allclose(r["hover_speed_rad_s"], math.sqrt(W / (6 * CF)), rtol=1e-9)
    assert r["max_tilt_deg"] == pytest.approx(math.degrees(math.acos(1 / tw)), rel=1e-9)
    cd = KM * CF
    yaw = cd * (3 * WMAX ** 2 - (W / CF - 3 * WMAX ** 2))
    assert r["yaw_moment_nm"] == pytest.approx(yaw, rel=1e-6)    # the LP solver's tolerance (HiGHS, 1e-7)
    assert r["yaw_acceleration_rad_s2"] == pytest.approx(yaw / r["inertia_com_kg_m2"][2][2], rel=1e-6)
    # the file's gains (today's numbers), with their bandwidths
    g = r["gains"]
    assert g["kp_position"] == 64.0 and g["refusals"] == []
    com = g["loops"][0]
    assert com["bandwidth"] == pytest.approx(math.sqrt(64.0 / MASS), rel=1e-9)
    assert com["damping"] == pytest.approx(29.0 / (2 * math.sqrt(64.0 * MASS)), rel=1e-9)


def test_tilthex_lateral_acceleration_against_bounded_least_squares():
    """Fully actuated: the reported lateral acceleration a is the edge of feasibility of
    A u = (c x f, f), f = m (a, 0, g), 0 <= u <= w_max^2: a second solver (scipy's lsq_linear,
    bounded least squares) finds an exact u at 0.999 a along the limiting direction and none
    at 1.01 a (residual above 1e-6 of the wrench). Thrust-to-weight by hand: cos 20 deg."""
    r = json.loads(run("--vehicle", "tilthex", "--json").stdout)
    W = MASS * G
    assert r["rank"] == 6 and r["controller"] == "actuated"
    assert r["thrust_to_weight"] == pytest.approx(6 * CF * WMAX ** 2 * math.cos(math.radians(20)) / W, rel=1e-9)
    np.testing.assert_allclose(r["hover_speed_rad_s"], math.sqrt(W / (6 * CF * math.cos(math.radians(20)))),
                               rtol=1e-9)
    from geodyn_ros.loops.vehicle_report import load_vehicle_model
    cfg, model, al, _ = load_vehicle_model(None, "tilthex")
    c = np.array(r["com_m"])
    by_dir = r["lateral_acceleration_by_direction_m_s2"]
    key = min(by_dir, key=by_dir.get)
    e = {"+x": [1, 0, 0], "-x": [-1, 0, 0], "+y": [0, 1, 0], "-y": [0, -1, 0]}[key]
    a = r["max_lateral_acceleration_m_s2"]
    for scale, feasible in ((0.999, True), (1.01, False)):
        f = MASS * (scale * a * np.array(e, float) + [0, 0, G])
        w = np.concatenate([np.cross(c, f), f])
        sol = lsq_linear(al.A, w, bounds=(0.0, WMAX ** 2), method="bvls", tol=1e-14)
        res = np.linalg.norm(al.A @ sol.x - w) / np.linalg.norm(w)
        assert (res < 1e-6) == feasible, (scale, res)


def test_third_party_figures_against_pinocchio_and_a_hand_allocation():
    """Borinot (example-robot-data URDF, config/vehicles/borinot_flying_arm_2.yaml): mass and
    inertia from Pinocchio; thrust-to-weight from the file's constants; hover speeds from an
    allocation built here from the file's rotor list (thrust c_f along +z at p_i, drag moment
    -/+ k_m c_f for ccw/cw), the least-norm u of (T, tau) = (m g, c x (0, 0, m g))."""
    urdf, veh = borinot()
    r = json.loads(run("--urdf", urdf, "--vehicle", veh, "--json").stdout)
    pm = build_pin_model(urdf)
    data = pm.createData()
    q0 = pin.neutral(pm)
    m = pin.computeTotalMass(pm)
    assert r["mass_kg"] == pytest.approx(m, rel=1e-12)
    pin.ccrba(pm, data, q0, np.zeros(pm.nv))
    np.testing.assert_allclose(r["inertia_com_kg_m2"], data.Ig.inertia, rtol=1e-9, atol=1e-12)
    cf, km, wmax = 4.511e-06, 0.06, 2236.0       # the file's constants
    pos = [(0.0, -0.185), (0.0, 0.185), (0.1602146997, 0.0925), (-0.1602146997, -0.0925),
           (0.1602146997, -0.0925), (-0.1602146997, 0.0925)]
    spin = [1, -1, 1, -1, -1, 1]                 # cw, ccw, cw, ccw, ccw, cw
    A4 = np.array([[cf] * 6, [cf * y for x, y in pos], [-cf * x for x, y in pos], [s * km * cf for s in spin]])
    c = np.array(r["com_m"])
    Wt = m * G
    tau = np.cross(c, [0, 0, Wt])
    u = np.linalg.lstsq(A4, np.array([Wt, *tau]), rcond=None)[0]
    np.testing.assert_allclose(r["hover_speed_rad_s"], np.sqrt(u), rtol=1e-9)
    np.testing.assert_allclose(r["hover_speed_pct"], 100 * np.sqrt(u) / wmax, rtol=1e-9)
    assert r["thrust_to_weight"] == pytest.approx(6 * cf * wmax ** 2 / Wt, rel=1e-9)
    assert r["gains"]["refusals"] == []


def test_refused_gains_exit_2_with_the_bound(tmp_path):
    """The Borinot file with today's absolute joint gains (kp_joint 40, kd_joint 0.5): the report
    is printed, with a REFUSED line naming the gain and its bound, and the exit status is 2."""
    import yaml
    urdf, veh = borinot()
    doc = yaml.safe_load(Path(veh).read_text())
    doc["gains"] = {"kp_joint": 40.0, "kd_joint": 0.5}
    p = tmp_path / "borinot_old_gains.yaml"
    p.write_text(yaml.safe_dump(doc))
    out = run("--urdf", urdf, "--vehicle", str(p), check=False)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "REFUSED: kd_joint[flying_arm_2__j_link1_link2]: 0.5 N m s/rad" in out.stdout
    assert "need kd_joint[flying_arm_2__j_link1_link2] < 0.1" in " ".join(out.stdout.split())


def test_bad_invocation_one_line():
    out = run("--vehicle", str(ROOT / "config/vehicles/iris.yaml"), check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("geodyn_vehicle: error: urdf: required"), out.stderr


def test_quadrotor_without_arm():
    """n = 0 (example-robot-data's Iris, config/vehicles/iris.yaml, rotors from its URDF links):
    no joint loop, thrust-to-weight 4 c_f w_max^2 / (m g) with the file's constants and
    Pinocchio's mass, and four equal hover speeds sqrt(m g / (4 c_f)) (CoM on the z axis within
    3e-4 m, the rotors symmetric: the moment share of the hover speed is below 1e-3 of it, hence
    the 1e-3 tolerance)."""
    from geodyn_ros.loops.vehicle_report import vehicle_report
    d = example_robot_data_dir()
    urdf = f"{d}/iris_description/robots/iris.urdf"
    r = vehicle_report(urdf, ROOT / "config/vehicles/iris.yaml")
    m = pin.computeTotalMass(build_pin_model(urdf))
    cf, wmax = 8.54858e-06, 1100.0
    assert r["n_joints"] == 0 and r["rank"] == 4
    assert [lp["loop"] for lp in r["gains"]["loops"]] == ["com", "attitude", "attitude", "yaw"]
    assert r["thrust_to_weight"] == pytest.approx(4 * cf * wmax ** 2 / (m * G), rel=1e-9)
    np.testing.assert_allclose(r["hover_speed_rad_s"], math.sqrt(m * G / (4 * cf)), rtol=1e-3)


def test_every_shipped_name_resolves_as_geodyn_fly_resolves_it(capsys):
    """``geodyn_vehicle --vehicle NAME`` takes the same shipped names as ``geodyn_fly`` (one table,
    geodyn_ros.vehicle.shipped) and reports the vehicle ``geodyn_fly --where NAME`` names."""
    import json
    from geodyn_ros.loops.fly import main as fly_main
    from geodyn_ros.loops.vehicle_report import main
    from geodyn_ros.vehicle.shipped import SHIPPED_URDFS
    for name in ("iris", "borinot_flying_arm_2"):
        assert name in SHIPPED_URDFS
        assert fly_main(["--where", name]) == 0
        where = capsys.readouterr().out.strip()
        assert main(["--vehicle", name, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert str(doc["urdf"]) == where, (doc["urdf"], where)
    assert main(["--vehicle", "no_such_vehicle"]) == 2
    assert "no_such_vehicle" in capsys.readouterr().err


def test_gains_columns_never_run_together(hexa_json):
    """The gains table with tiny and huge values (a small vehicle's joint gains ran together:
    ``0.0089970.0004199``): each row splits, at runs of two or more spaces, into the header's nine
    fields, each number reads back as the value it prints (to its printed digits), and every line
    stays within 99 columns even with a long joint name."""
    import copy
    from geodyn_ros.loops.vehicle_report import format_report
    r = copy.deepcopy(hexa_json)
    loops = r["gains"]["loops"]
    values = [(1.234e-7, 0.0004199, 0.008997), (4.03, 9.87654e9, 1.2e-12), (7.31e-05, 0.0658, 0.003071),
              (123456.0, 2.5e-9, 98765.4)]
    for k, lp in enumerate(loops):
        lp["inertia"], lp["kp"], lp["kd"] = values[k % len(values)]
        lp["bandwidth"], lp["damping"] = (1.5e-6, None) if k % 2 else (3.3e5, 1.23e-10)
    loops[-1]["axis"] = "a_very_long_joint_name_of_a_third_party_arm_link_7"
    lines = format_report(r).splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["loop", "axis"])
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in lines[head:head + 1 + len(loops)]]
    assert rows[0] == ["loop", "axis", "inertia", "kp", "kd", "w rad/s", "damping", "radius", "ok"]
    assert max(len(ln) for ln in lines) <= 99
    for lp, row in zip(loops, rows[1:]):
        assert len(row) == 9, row
        assert row[0] == lp["loop"]
        for cell, key, digits in zip(row[2:8], ("inertia", "kp", "kd", "bandwidth", "damping", "spectral_radius"),
                                     (3, 4, 4, 3, 3, None)):
            if lp[key] is None:
                assert cell == "-"
            elif digits is None:
                assert float(cell) == pytest.approx(lp[key], abs=5e-6)
            else:
                assert float(cell) == pytest.approx(lp[key], rel=0.5 * 10.0 ** (1 - digits)), (key, cell)
    assert rows[-1][1].startswith("~") and "arm_link_7" in rows[-1][1]      # cut from the left


def test_the_rotors_firefly_reports_its_correction_and_its_pinned_imu():
    """RotorS's firefly (test/data): the report states the inertia correction and the pinned IMU
    joint once each, in the text and the JSON, and its figures are those of the corrected vehicle,
    computed here by hand from the URDF's numbers: mass 1.5 + 6 x 0.005 + 0.015 kg, and the inertia
    about the CoM by the parallel-axis theorem, with the body's two smaller moments raised by
    (C - A - B) / 2 (the closed form) and the IMU locked into the base."""
    text = " ".join(run("--urdf", "test/data/firefly.urdf", "--vehicle", "test/data/firefly.yaml").stdout.split())
    assert text.count("inertia corrected for MuJoCo (A + B >= C): firefly/base_link_inertia") == 1
    assert text.count("pinned by their URDF limits (lower = upper), locked there, not arm joints: "
                      "firefly/imu_joint at 0") == 1
    r = json.loads(run("--urdf", "test/data/firefly.urdf", "--vehicle", "test/data/firefly.yaml", "--json").stdout)
    assert r["pinned_joints"] == {"firefly/imu_joint": 0.0} and r["joint_names"] == [] and r["n_joints"] == 0
    (c,) = r["inertia_corrections"]
    A, B, C = 0.0347563, 0.0458929, 0.0977
    d = (C - A - B) / 2
    assert c["link"] == "firefly/base_link_inertia" and c["moments_before_kg_m2"] == [A, B, C]
    np.testing.assert_allclose(c["moments_after_kg_m2"], [A + d, B + d, C], rtol=0, atol=1e-17)
    a2, b2, c2 = c["moments_after_kg_m2"]
    assert a2 + b2 >= c2
    # the vehicle by hand: body at the origin, six rotors (box inertia) at (x, y, 0.037), the IMU at 0
    L, x = 0.215, 0.866025403784 * 0.215
    pos = [(x, L / 2, .037), (0, L, .037), (-x, L / 2, .037), (-x, -L / 2, .037), (0, -L, .037), (x, -L / 2, .037)]
    parts = [(1.5, (0, 0, 0), np.diag([A + d, B + d, C]))] + \
            [(0.005, p, np.diag([9.7499961e-07, 4.170415e-05, 4.260415e-05])) for p in pos] + \
            [(0.015, (0, 0, 0), 1e-5 * np.eye(3))]
    m = sum(p[0] for p in parts)
    com = sum(p[0] * np.array(p[1], float) for p in parts) / m
    I = sum(Ii + mi * ((np.array(ci) - com) @ (np.array(ci) - com) * np.eye(3)
                       - np.outer(np.array(ci) - com, np.array(ci) - com)) for mi, ci, Ii in parts)
    assert r["mass_kg"] == pytest.approx(1.545, rel=1e-12)
    np.testing.assert_allclose(r["com_m"], com, rtol=0, atol=1e-15)
    np.testing.assert_allclose(r["inertia_com_kg_m2"], I, rtol=1e-12, atol=1e-15)
