"""geodyn_fly (geodyn_ros.loops.fly) and its references (geodyn_ros.loops.fly_references).

References, against independent constructions: the scaled figure eight at the shipped size is
``trajectories.figure_eight_reference`` (a separate implementation); its jets are the finite
differences of its values; the peak acceleration (hence the tilt) does not change with the size;
the arm swing stays inside the URDF limits (dense sampling against limits read here with plain
XML); the base form's spatial twist is ``(w, p' + p x w)`` of finite-differenced poses; a mission
file reorders its joint columns to the model's.

Flights (the third-party vehicles of config/vehicles, URDFs from example-robot-data): every level
of the vehicle's rank flies the default reference (figure8) without a clipped rotor command and
the error falls with the level; the console script runs as doc/howto/fly_your_vehicle.md writes
it; a vehicle that cannot fly is refused in one line with exit code 2, and so is a mission file
beyond the vehicle's limits (issue 40), which ``--slow-down`` slows down instead.
"""
from __future__ import annotations

import math
import re
import sysconfig
import textwrap
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.loops import fly_references as fr
from geodyn_ros.trajectories import FIGURE8_Q_PERIOD, figure_eight_reference

REPO = Path(__file__).resolve().parents[2]
ERD = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
URDFS = {"borinot_flying_arm_2": ERD / "borinot_description/urdf/borinot_flying_arm_2.urdf",
         "hextilt_flying_arm_5": ERD / "hextilt_description/urdf/hextilt_flying_arm_5.urdf",
         "iris": ERD / "iris_description/robots/iris.urdf"}


def _fd(f, t, h=1e-4):
    """Central difference of f at t (O(h^2): the closed forms below are smooth, |f'''| <~ 10)."""
    return (f(t + h) - f(t - h)) / (2 * h)


# ---------------------------------------------------------------- references
def test_figure8_at_the_shipped_size_is_the_shipped_figure_eight():
    swing = (np.zeros(6), np.full(6, math.radians(35.0)), np.array(FIGURE8_Q_PERIOD))
    f = fr.fly_reference("figure8", fr.SHIPPED_SIZE_M, swing)
    for t in (-3.0, 0.0, 1.7, 9.2):
        a, b = f(t, 2), figure_eight_reference(t, 2)
        # same closed forms evaluated by two implementations: rounding only
        np.testing.assert_allclose(a.com, b.com, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.yaw, b.yaw, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("size", [0.1, 0.25, 0.39, 1.0])
def test_figure8_jets_are_derivatives_and_the_peak_acceleration_does_not_scale(size):
    swing = (np.array([0.1]), np.array([0.3]), np.array([2.0]))
    f = fr.fly_reference("figure8", size, swing)
    for t in (0.3, 2.2):
        r = f(t, 2)
        for k in range(4):
            # h = 1e-4 s: truncation ~ h^2 |c^(k+3)| <~ 1e-8 x 10; rounding ~ 1e-16 / 1e-4
            np.testing.assert_allclose(_fd(lambda s: f(s, 2).com[k], t), r.com[k + 1], rtol=0, atol=1e-6)
            np.testing.assert_allclose(_fd(lambda s: f(s, 2).q[k], t), r.q[k + 1], rtol=0, atol=1e-6)
        np.testing.assert_allclose(_fd(lambda s: f(s, 2).yaw[0], t), r.yaw[1], rtol=0, atol=1e-6)
    # the peak horizontal acceleration over one period: the shipped figure eight's for any size
    ts = np.linspace(0, 8.0 * math.sqrt(size / 0.25), 4001)
    peak = max(np.hypot(*f(t, 0).com[2, :2]) for t in ts)
    ref = max(np.hypot(*figure_eight_reference(t, 0).com[2, :2]) for t in np.linspace(0, 8.0, 4001))
    assert peak == pytest.approx(ref, rel=1e-6)   # the same samples of the same curve, rescaled


def test_hover_holds_the_com_and_yaw_and_swings_the_arm():
    f = fr.fly_reference("hover", 0.3, (np.zeros(2), np.array([0.2, 0.3]), np.array([2.0, 3.0])))
    r = f(0.7, 2)
    np.testing.assert_array_equal(r.com[0], [0.0, 0.0, 1.0])
    assert not r.com[1:].any() and not r.yaw.any()
    np.testing.assert_allclose(r.q[0], [0.2 * math.sin(math.pi * 0.7), 0.3 * math.sin(2 * math.pi * 0.7 / 3)])


def _limits(path):
    out = {}
    for je in ET.parse(path).getroot().iter("joint"):
        lim = je.find("limit")
        if je.get("type") in ("revolute", "prismatic") and lim is not None:
            out[je.get("name")] = (float(lim.get("lower")), float(lim.get("upper")))
    return out


ODD = textwrap.dedent("""\
    <robot name="odd">
      <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="l1"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="l2"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
        <limit lower="0.2" upper="0.5" effort="1" velocity="1"/></joint>
      <joint name="b" type="continuous"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/></joint>
    </robot>""")


def test_the_arm_swings_inside_the_urdf_limits(tmp_path):
    odd = tmp_path / "odd.urdf"
    odd.write_text(ODD)
    cases = [(odd, ("a", "b"))] + [(p, None) for p in URDFS.values() if p.is_file()]
    assert len(cases) == 4, "example-robot-data's URDFs are installed with the venv"
    for path, names in cases:
        lim = _limits(path)
        names = tuple(n for n in lim if "rotor" not in n) if names is None else names
        swing = fr.joint_swing(path, names)
        f = fr.fly_reference("figure8", 0.25, swing)
        q = np.array([f(t, 0).q[0] for t in np.linspace(0, 24, 2401)])
        for j, nm in enumerate(names):
            if nm in lim:
                lo, hi = lim[nm]
                assert lo - 1e-12 <= q[:, j].min() and q[:, j].max() <= hi + 1e-12, (path.name, nm)
    c, a, _ = fr.joint_swing(odd, ("a", "b"))
    # a: 0.4 x range 0.3 = 0.12 rad about 0 clipped to [0.32, 0.38]; b (continuous): 35 deg about 0
    np.testing.assert_allclose(c, [0.32, 0.0])
    np.testing.assert_allclose(a, [0.12, math.radians(35.0)])
    assert [len(x) for x in fr.joint_swing(odd, ())] == [0, 0, 0]


def _expanded_limits(path):
    """{joint: (lower, upper)} of a URDF or xacro (expanded here with the xacro package itself)."""
    import xacro
    root = ET.fromstring(xacro.process_file(str(path)).toxml()) if str(path).endswith(".xacro") \
        else ET.parse(path).getroot()
    return {je.get("name"): (float(je.find("limit").get("lower")), float(je.find("limit").get("upper")))
            for je in root.iter("joint") if je.get("type") in ("revolute", "prismatic") and je.find("limit") is not None}


def test_no_shipped_reference_drives_a_joint_outside_its_urdf_limits():
    """hover and figure8, as geodyn_fly builds them (the joints of ActuationConfig.load_model, the
    swing of joint_swing), over the pre-roll and 24 s, for every shipped vehicle and the firefly with
    its arm; a pinned joint (lower = upper), if one reached the swing, would be held at its pin."""
    import warnings
    from geodyn_ros.vehicle import load_vehicle
    from geodyn_ros.vehicle.shipped import SHIPPED_URDFS, shipped_vehicle_files
    cases = [shipped_vehicle_files(n) for n in SHIPPED_URDFS]
    cases.append((REPO / "test" / "data" / "firefly_arm.urdf", REPO / "test" / "data" / "firefly.yaml"))
    checked = 0
    for urdf, vehicle in cases:
        cfg = load_vehicle(vehicle)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names = cfg.load_model(urdf).joint_names
        lim = _expanded_limits(urdf)
        swing = fr.joint_swing(urdf, names)
        for ref in ("hover", "figure8"):
            f = fr.fly_reference(ref, 0.25, swing)
            q = np.array([f(t, 0).q[0] for t in np.linspace(-5.0, 24.0, 2901)])
            for j, nm in enumerate(names):
                if nm in lim:
                    lo, hi = lim[nm]
                    # the swing is c + a sin: inside [lo, hi] up to the rounding of c +- a (1e-12 rad)
                    assert lo - 1e-12 <= q[:, j].min() and q[:, j].max() <= hi + 1e-12, (urdf.name, ref, nm)
                    checked += 1
    assert checked >= 2 * (6 + 6 + 2 + 5 + 2), checked       # hexarotor, tilthex, borinot, hextilt, firefly arm
    c, a, _ = fr.joint_swing(REPO / "test" / "data" / "firefly_arm.urdf", ("firefly/imu_joint", "arm_joint_1"))
    assert c[0] == 0.0 and a[0] == 0.0 and a[1] == pytest.approx(math.radians(35.0))


def test_base_form_twist_is_the_spatial_twist_of_the_poses():
    f = fr.fly_reference("figure8", 0.39, (np.zeros(1), np.array([0.3]), np.array([2.0])), kind="base")
    t, h = 1.3, 1e-5
    r = f(t, 2)
    assert r.base_twist.shape == (4, 6) and r.q.shape == (5, 1)
    C0, Cp, Cm = r.base_pose, f(t + h, 2).base_pose, f(t - h, 2).base_pose
    np.testing.assert_allclose(C0[:3, :3] @ np.array([0, 0, 1.0]), [0, 0, 1.0])   # level base
    Rd = (Cp[:3, :3] - Cm[:3, :3]) / (2 * h)
    W = Rd @ C0[:3, :3].T
    w = np.array([W[2, 1], W[0, 2], W[1, 0]])
    pd = (Cp[:3, 3] - Cm[:3, 3]) / (2 * h)
    # V = (w, p' + p x w) (trajectories.Reference); central differences at h = 1e-5: ~1e-9
    np.testing.assert_allclose(r.base_twist[0], np.r_[w, pd + np.cross(C0[:3, 3], w)], rtol=0, atol=1e-7)


def test_mission_file_columns_follow_the_model(tmp_path):
    mission = REPO / "config" / "mission_example.yaml"
    names = ("J7", "J6", "J5", "J4", "J3", "J2")
    f, duration = fr.mission_reference(mission, names)
    g, _ = fr.mission_reference(mission, names[::-1])
    assert duration == pytest.approx(4.0)
    np.testing.assert_array_equal(f(1.0, 2).q, g(1.0, 2).q[:, ::-1])
    np.testing.assert_allclose(g(2.0, 2).q[0], [0.5, -0.3, 0.4, -0.5, 0.3, -0.4], atol=1e-9)  # waypoint 1
    b, _ = fr.mission_reference(mission, names, kind="base")
    np.testing.assert_allclose(b(2.0, 2).base_pose[:3, 3], [0.6, 0.3, 1.1], atol=1e-9)
    with pytest.raises(ValueError) as info:
        fr.mission_reference(mission, ("J2", "J3"))
    assert str(info.value) == (f"{mission}: joint_names: ['J2', 'J3', 'J4', 'J5', 'J6', 'J7'] are not the model's "
                               "joints ['J2', 'J3']; list the model's joints and give one q value per joint")


def test_bad_reference_arguments_name_the_argument():
    with pytest.raises(ValueError, match="reference"):
        fr.fly_reference("circle", 0.25, fr.joint_swing(None, ()))
    with pytest.raises(ValueError, match="size"):
        fr.fly_reference("hover", 0.0, fr.joint_swing(None, ()))
    with pytest.raises(ValueError, match="rotor_frames"):
        fr.vehicle_size(np.zeros((0, 4, 4)))


# ---------------------------------------------------------------- flights
# Short flights (make test): FLY_S scored seconds after PREROLL_S on the reference, every level.
# Measured with both cores busy (load average 4): 53 s for everything but the console-script
# run (12 levels x 3 s simulated), which takes 14 s more.
# The full-length tables are bench/loops/bench_fly.py's (doc/howto/fly_your_vehicle.md).
FLY_S, PREROLL_S = 2.0, 1.0
ORDER = {4: ("rigid", "ff0", "ff1", "ff2"), 6: ("pd", "ff0", "ff1", "ff2")}
RANK = {"borinot_flying_arm_2": 4, "hextilt_flying_arm_5": 6, "iris": 4}


@pytest.fixture(scope="module", params=sorted(RANK))
def flown(request):
    from geodyn_ros.loops.fly import fly, prepare, shipped_vehicle
    urdf, vehicle = shipped_vehicle(request.param)
    prep = prepare(urdf, vehicle)
    return request.param, prep, fly(prep, duration=FLY_S, preroll=PREROLL_S)


def test_every_level_flies_the_default_reference_without_rotor_saturation(flown):
    name, prep, rows = flown
    assert prep["rank"] == RANK[name]
    assert tuple(rows) == ORDER[RANK[name]]
    n = prep["model"].n_joints
    for level, res in rows.items():
        assert np.all(np.isfinite(res.log.position_error())), (name, level)
        assert res.rotor_saturations == 0, (name, level, res.rotor_speed_peak)
        # the rotor speed stays below the file's maximum with margin (no clipping above)
        assert res.rotor_speed_peak < float(np.min(prep["cfg"].rotors.per_rotor("max_rot_velocity"))), (name, level)
        assert res.log.q.shape[1] == n


def test_the_error_falls_with_the_level(flown):
    name, prep, rows = flown
    rms = [rows[lv].log.rms()["position_m"] for lv in ORDER[prep["rank"]]]
    # rigid|pd >= ff0 >= ff1 >= ff2 (issue 33). Levels that coincide (rigid = ff0 without an arm,
    # ff1 = ff2 without elastic joints) fly the same law through different arithmetic, so they agree
    # to rounding only (the iris: 4e-15 relative, measured): ">=" within 1e-9 relative
    assert all(a >= b * (1 - 1e-9) for a, b in zip(rms, rms[1:])), (name, rms)
    # and the whole-body feedforward is a real gain over the baseline (measured: see the how-to)
    assert rms[3] < 0.5 * rms[0], (name, rms)


def _weak(tmp_path, **override):
    import yaml
    doc = yaml.safe_load((REPO / "config" / "vehicles" / "iris.yaml").read_text())
    doc["constants"].update(override)
    p = tmp_path / "weak_iris.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_a_vehicle_that_cannot_fly_is_refused_in_one_line(tmp_path, capsys):
    from geodyn_ros.loops.fly import main
    # 4 x 8.54858e-6 x 400^2 = 5.5 N against 1.535 kg x 9.81 = 15.1 N: thrust-to-weight 0.36
    weak = _weak(tmp_path, max_rot_velocity=400.0)
    rc = main(["--urdf", str(URDFS["iris"]), "--vehicle", str(weak), "--duration", "1"])
    err = capsys.readouterr()
    assert rc == 2
    lines = err.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("geodyn_fly: refused: "), err.err
    assert "thrust" in lines[0].lower(), lines[0]
    assert "rigid" not in err.out      # refused before any level flew
    # gains whose discrete loop is unstable: refused with the bound (gain_design's check), not flown
    unstable = tmp_path / "unstable_iris.yaml"
    unstable.write_text(_weak(tmp_path).read_text() + "gains: {kd_position: 10000.0}\n")
    assert main(["--urdf", str(URDFS["iris"]), "--vehicle", str(unstable)]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and re.search(r"refused: .*gains: kd_position: .*unstable.*need kd_position < ", line), line
    # a misspelt gains: key: the file's line with its did-you-mean (was a traceback)
    typo = tmp_path / "typo_iris.yaml"
    typo.write_text(_weak(tmp_path).read_text() + "gains: {com: {bandwith: 6.0}}\n")
    assert main(["--urdf", str(URDFS["iris"]), "--vehicle", str(typo)]) == 2
    assert capsys.readouterr().err == (f"geodyn_fly: refused: {typo}: gains.com.bandwith: unknown key; did you mean "
                                       "'bandwidth'?\n")
    for argv, what in ((["--vehicle", "no_such_vehicle"], "no_such_vehicle: cannot be read (No such file"),
                       (["--vehicle", "iris", "--reference", "no_such_mission.yaml"], "no_such_mission.yaml: cannot be "
                        "read (No such file or directory); give the path of an existing mission file"),
                       (["--vehicle", "iris", "--reference", "figure9"], "reference: figure9: not figure8, hover"),
                       (["--vehicle", "iris", "--levels", "pd"], "levels"),
                       (["--vehicle", "iris", "--duration", "-1"], "duration")):
        assert main(argv) == 2, argv
        line = capsys.readouterr().err.strip()
        assert line.startswith(f"geodyn_fly: refused: {what}") and "\n" not in line, (argv, line)


def test_the_command_runs_as_the_howto_writes_it():
    """The how-to's quick run, read from doc/howto/fly_your_vehicle.md and run with the installed
    console script (``pip install -e .`` makes it; ``make`` reinstalls when setup.py changes)."""
    import shlex
    import subprocess
    import sys
    howto = (REPO / "doc" / "howto" / "fly_your_vehicle.md").read_text()
    found = re.findall(r"^(geodyn_fly --vehicle iris --duration [^\n]*)$", howto, re.M)
    assert found, "the how-to gives a quick run of iris"
    argv = shlex.split(found[0])
    exe = Path(sys.executable).parent / argv[0]
    assert exe.is_file(), f"{exe} is not installed: reinstall the package (make venv; setup.py declares it)"
    out = subprocess.run([str(exe)] + argv[1:], cwd=REPO, capture_output=True, text=True, timeout=1800,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "allocation rank 4 -> flatness controller" in text, text
    rows = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(rigid|ff0|ff1|ff2)\s+(\S+)", text, re.M)}
    assert set(rows) == {"rigid", "ff0", "ff1", "ff2"}, text
    assert rows["rigid"] >= rows["ff0"] >= rows["ff1"] >= rows["ff2"], rows
    assert max(len(line) for line in text.splitlines() if not line.startswith("  urdf ")) <= 100


def test_a_mission_file_flies_with_json_and_plot(tmp_path, capsys):
    """--reference FILE (a mission without joints for the arm-less iris), --levels, --json, --plot."""
    import json
    from geodyn_ros.loops.fly import main
    mission = tmp_path / "hop.yaml"
    mission.write_text("waypoints:\n  - {com: [0.0, 0.0, 1.0], yaw: 0.0, time: 0.0}\n"
                       "  - {com: [0.3, -0.2, 1.2], yaw: 0.3, time: 1.5}\n")
    png = tmp_path / "err.png"
    rc = main(["--vehicle", "iris", "--reference", str(mission), "--levels", "ff0,ff2", "--preroll", "0.2",
               "--json", "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0
    doc = json.loads(out)
    assert doc["duration_s"] == 1.5                    # the mission's length by default
    assert list(doc["rows"]) == ["ff0", "ff2"] and doc["report"]["rank"] == 4
    assert all(r["rotor_saturations"] == 0 for r in doc["rows"].values())
    assert doc["rows"]["ff2"]["position_rms_m"] <= doc["rows"]["ff0"]["position_rms_m"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_mission_beyond_the_limits_is_refused_or_slowed_down(capsys):
    """--reference FILE on a rank 4 vehicle: the whole-body check with every limit of the vehicle
    file runs first. Borinot's arm swing beyond its shoulder servo (issue 40) is refused in one line
    (margin, limit with its value, time), exit code 2, before the report or any level; with
    --slow-down it flies, slowed down by alpha, and the mission's length is alpha x its 0.2 s."""
    from geodyn_ros.loops.fly import main
    swing = REPO / "test" / "data" / "borinot_swing.yaml"
    argv = ["--vehicle", "borinot_flying_arm_2", "--reference", str(swing), "--levels", "ff2", "--preroll", "0.2"]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""                  # no report, no table: nothing flew
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        rf"geodyn_fly: refused: reference: {re.escape(str(swing))}: worst margin -0\.\d{{4}} at t = 0\.\d{{3}} s "
        r"\(joint flying_arm_2__j_bl_link1 torque, limit 0\.9 N m\): beyond the vehicle's limits; give --slow-down .*",
        lines[0]), lines
    assert main(argv + ["--slow-down"]) == 0
    text = capsys.readouterr().out
    m = re.search(r"^reference: .*borinot_swing\.yaml: slowed down ([0-9.]+) times \(0\.2 s -> ([0-9.]+) s\) .*\n"
                  r"  as given: worst margin -0\.\d{4} .*\n  slowed down: worst margin \+0\.\d{4} ", text, re.M)
    assert m, text
    alpha, length = float(m.group(1)), float(m.group(2))
    # both printed to 4 significant digits (rounding 5e-4 relative each)
    assert 1 < alpha < 1024 and length == pytest.approx(0.2 * alpha, rel=1e-3)
    assert re.search(r"^ff2\s+\d", text, re.M), text     # the level flew: its row in the table


def test_where_prints_a_shipped_vehicles_urdf(capsys):
    from geodyn_ros.loops.fly import main
    assert main(["--where", "hextilt_flying_arm_5"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == URDFS["hextilt_flying_arm_5"] and path.is_file()
    assert main(["--where", "nothing"]) == 2
    assert capsys.readouterr().err.startswith("geodyn_fly: refused: vehicle: 'nothing' is not a shipped vehicle")


# ---------------------------------------------------------------- a third-party vehicle (issue 40)
FIREFLY = REPO / "test" / "data"


@pytest.mark.parametrize("urdf, joints", [("firefly.urdf", ()), ("firefly_arm.urdf", ("arm_joint_1", "arm_joint_2"))])
def test_the_rotors_firefly_flies_with_its_inertia_corrected_and_its_imu_locked(urdf, joints):
    """RotorS's firefly as a user brings it (test/data): MuJoCo refuses its body inertia and its IMU
    sits on a revolute joint pinned at 0. The installed console script flies every level of the
    hover (1 scored second), says once what it corrected, flies only the arm's joints and prints no
    traceback; the arm's levels still order rigid >= ff0 >= ff1 (the model is the simulator's)."""
    import subprocess
    import sys
    exe = Path(sys.executable).parent / "geodyn_fly"
    out = subprocess.run([str(exe), "--urdf", str(FIREFLY / urdf), "--vehicle", str(FIREFLY / "firefly.yaml"),
                          "--reference", "hover", "--duration", "1", "--preroll", "0.5"], cwd=REPO,
                         capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "inertia corrected" not in out.stderr, out.stderr
    text = " ".join(out.stdout.split())          # the report wraps its lines at 99 columns
    assert text.count("inertia corrected for MuJoCo (A + B >= C): firefly/base_link_inertia (A, B, C) "
                      "(0.03476, 0.04589, 0.0977) -> (0.04328, 0.05442, 0.0977) kg m^2, 10.6 % of the tensor, "
                      "simulator and model alike") == 1, out.stdout
    assert "not arm joints: firefly/imu_joint at 0" in text
    assert f"firefly/base_link, {len(joints)} joints, 6 rotors" in text
    gains = re.findall(r"^  joint\s+(\S+)", out.stdout, re.M)      # the gains table: one row per flown joint
    assert tuple(gains) == joints
    rows = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(rigid|ff0|ff1|ff2)\s+(\S+)", out.stdout, re.M)}
    assert set(rows) == {"rigid", "ff0", "ff1", "ff2"} and all(math.isfinite(v) for v in rows.values())
    if joints:
        assert rows["rigid"] >= rows["ff0"] >= rows["ff1"], rows


def test_a_urdf_whose_inertia_cannot_be_corrected_is_refused_in_one_line(tmp_path, capsys):
    """Not positive semi-definite (the loader refuses it) or MuJoCo refusing another thing of the
    URDF (a negative moment of the IMU, which the loader accepts as rounding after merging):
    exit 2, one line, before any level flew."""
    from geodyn_ros.loops.fly import main
    text = (FIREFLY / "firefly.urdf").read_text()
    cases = {"not_psd": (text.replace('ixx="0.0347563"', 'ixx="-0.01"'), "not positive semi-definite"),
             "mujoco": (text.replace('<inertia ixx="0.00001"', '<inertia ixx="-1e-12"'),
                        "MuJoCo could not compile the URDF.*firefly/imu_link.*; fix the URDF")}
    for name, (doc, why) in cases.items():
        p = tmp_path / f"{name}.urdf"
        p.write_text(doc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = main(["--urdf", str(p), "--vehicle", str(FIREFLY / "firefly.yaml"), "--reference", "hover",
                       "--duration", "1"])
        cap = capsys.readouterr()
        assert rc == 2, (name, cap.err)
        lines = cap.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("geodyn_fly: refused: "), (name, cap.err)
        assert re.search(why, lines[0]), (name, lines[0])
        assert "rigid" not in cap.out, name


# ---------------------------------------------------------------------------------------------- joint losses
@pytest.fixture(scope="module")
def hextilt_gazebo_files(tmp_path_factory):
    """hextilt_flying_arm_5 as Gazebo flies it (its arm rigid, gains designed for the links):
    the files gazebo_vehicle.launch.py writes, so MuJoCo flies what gz-sim does."""
    from geodyn_ros.ros.loops.gazebo_vehicle import gazebo_parameters
    out = tmp_path_factory.mktemp("hextilt_gz")
    res = gazebo_parameters("", "hextilt_flying_arm_5", "figure8", "ff1", out)
    return Path(res["model"]), Path(res["vehicle"])


def _joint_rms_deg(row):
    return np.degrees(np.sqrt(np.mean(row.log.joint_error() ** 2, axis=0)))


def test_joint_losses_stall_the_arm_and_their_feedforward_frees_it(hextilt_gazebo_files):
    """MuJoCo with the URDF's damping 0.1 N m s/rad and friction 0.1 N m per arm joint (what gz-sim
    simulates), 3 s scored at ff1. Measured here (MuJoCo 4.0.0, implicitfast): without the
    feedforward the arm stalls (joints 7-42 deg RMS, as in Gazebo: 24.9 deg); with it, the joints
    within their effort limits track to 0.03-0.15 deg (0.01-0.02 deg without losses); joint 3, whose
    0.3 N m limit is below the 0.38 N m the swing then needs (0.36 of it losses), saturates.
    Bounds: 5 deg (a stall, 50x the tracking figure) and 0.5 deg (3x the worst tracking joint)."""
    from geodyn_ros.loops.fly import fly, prepare
    model, vehicle = hextilt_gazebo_files
    prep = prepare(model, vehicle)
    rows = {m: fly(prep, ["ff1"], duration=3.0, preroll=1.0, joint_losses=m)["ff1"]
            for m in ("off", "plant", "compensated")}
    assert not any(r.diverged for r in rows.values())
    off, plant, comp = (_joint_rms_deg(rows[m]) for m in ("off", "plant", "compensated"))
    names = prep["model"].joint_names
    j3 = names.index("flying_arm_5__j_link_2_link_3")
    free = [k for k in range(len(names)) if k != j3]
    assert np.all(off < 0.1), off
    assert np.min(plant) > 5.0, plant                  # every joint stalls or lags by degrees
    assert np.all(comp[free] < 0.5), comp              # the feedforward frees them
    assert comp[j3] < plant[j3] / 3, (comp[j3], plant[j3])
    assert rows["compensated"].motor_saturations > 0   # joint 3 at its limit
    assert rows["compensated"].log.rms()["position_m"] < rows["plant"].log.rms()["position_m"]


def test_joint_damping_alone_is_compensated_to_the_lossless_figure(hextilt_gazebo_files, tmp_path):
    """Viscous damping is what MuJoCo simulates exactly (a passive force, integrated implicitly):
    with friction removed from the URDF, uncompensated the arm lags by degrees; compensated it tracks
    within 0.1 deg and 20x better on every joint (measured here, rigid ff1: 0.006-0.05 deg against
    the lossless flight's 0.001-0.016 deg, which runs on RK4, not implicitfast)."""
    from geodyn_ros.loops.fly import fly, prepare
    model, vehicle = hextilt_gazebo_files
    damp = tmp_path / "damping_only.urdf"
    damp.write_text(model.read_text().replace('friction="0.1"', 'friction="0"'))
    prep = prepare(damp, vehicle)
    off, plant, comp = (_joint_rms_deg(fly(prep, ["ff1"], duration=3.0, preroll=1.0, joint_losses=m)["ff1"])
                        for m in ("off", "plant", "compensated"))
    print("joint RMS [deg] off", off.round(4), "plant", plant.round(3), "compensated", comp.round(4))
    assert np.max(plant) > 2.0, plant
    assert np.all(comp < plant / 20) and np.max(comp) < 0.1, (comp, plant, off)


def test_joint_losses_cli_line_and_refusal(hextilt_gazebo_files, tmp_path, capsys):
    from geodyn_ros.loops.fly import main
    model, vehicle = hextilt_gazebo_files
    assert main(["--urdf", str(model), "--vehicle", str(vehicle), "--levels", "ff1", "--duration", "0.2",
                 "--preroll", "0", "--joint-losses", "compensated"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("joint losses: "))
    assert "compensated in the feedforward (boundary layer 0.05 rad/s)" in line
    assert "flying_arm_5__j_link_2_link_3 0.378 N m (0.356 of it losses) > 0.3 N m" in line
    bad = tmp_path / "bad.urdf"
    bad.write_text(model.read_text().replace('friction="0.1"', 'friction="-1"', 1))
    assert main(["--urdf", str(bad), "--vehicle", str(vehicle), "--duration", "0.2",
                 "--joint-losses", "compensated"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"geodyn_fly: refused: {bad}: joint flying_arm_5__j_base_link_link_1: dynamics friction: "
                          "'-1' is not a finite number >= 0; give friction=") and "\n" not in err
    with pytest.raises(SystemExit):
        main(["--vehicle", "hextilt_flying_arm_5", "--joint-losses", "on"])
