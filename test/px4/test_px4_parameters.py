"""``python -m geodyn_ros.px4.parameters``: the PX4 parameters of a vehicle file, as a user runs it.

Checked against the file itself: test/data/quad_x_px4.yaml gives its rotors in PX4's own
``CA_ROTORn_*`` form, so the printed geometry must be those numbers again, and ``CT`` the full
thrust of its constants (8.5e-6 N s^2 x 1000^2 rad^2/s^2 = 8.5 N)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _run(*args):
    return subprocess.run([sys.executable, "-m", "geodyn_ros.px4.parameters", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def _params(out: str) -> dict:
    return {m[1]: float(m[2]) for m in re.finditer(r"^param set (\w+) (\S+)$", out, re.M)}


def test_the_files_own_ca_rotor_values_come_back():
    r = _run("test/data/quad_x_px4.yaml")
    assert r.returncode == 0, r.stderr
    assert all(len(line) < 100 for line in r.stdout.splitlines())
    got = _params(r.stdout)
    rotors = yaml.safe_load((ROOT / "test/data/quad_x_px4.yaml").read_text())["rotors"]
    assert got["CA_ROTOR_COUNT"] == len(rotors) == 4
    for i, rotor in enumerate(rotors):
        for key, value in rotor["px4"].items():
            assert got[f"CA_ROTOR{i}_{key}"] == value, (i, key)
        assert got[f"CA_ROTOR{i}_CT"] == 8.5
    assert got["THR_MDL_FAC"] == 0.0 and got["MC_AIRMODE"] == 0
    assert len(got) == 1 + 4 * 8 + 2


def test_rotors_from_the_urdf_and_their_spin():
    # the shipped PX4 hexarotor: rotors from the URDF's rotor links, thrust up (FRD z -1), and
    # PX4's sign of KM (positive = CCW) from the file's turning directions
    r = _run("config/hexarotor_px4.yaml", "--urdf", "urdf/hexarotor_manipulator.urdf.xacro")
    assert r.returncode == 0, r.stderr
    got = _params(r.stdout)
    spins = yaml.safe_load((ROOT / "config/hexarotor_px4.yaml").read_text())["rotors"]["turning_direction"]
    assert got["CA_ROTOR_COUNT"] == 6
    for i, spin in enumerate(spins):
        assert (got[f"CA_ROTOR{i}_AX"], got[f"CA_ROTOR{i}_AY"], got[f"CA_ROTOR{i}_AZ"]) == (0.0, 0.0, -1.0)
        assert got[f"CA_ROTOR{i}_KM"] == (0.016754 if spin == "ccw" else -0.016754)
        assert got[f"CA_ROTOR{i}_CT"] == 12.69                    # 1.269e-5 x 1000^2


def test_refusals_in_one_line():
    r = _run("test/data/quad_x.yaml")
    assert r.returncode == 2 and "quad_x.yaml: px4: missing" in r.stderr and "Traceback" not in r.stderr
    r = _run("config/hexarotor_px4.yaml")
    assert r.returncode == 2 and "give --urdf" in r.stderr
    r = _run("nope.yaml")
    assert r.returncode == 2 and "nope.yaml" in r.stderr and "Traceback" not in r.stderr
