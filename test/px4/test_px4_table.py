"""``python -m geodyn_ros.examples.px4_table`` (issue 44's table) as a user runs it, briefly: the
text mode's cells are the ``--json-out`` object's (a separate path through the same rows), the
lines fit 100 columns, and bad arguments stop with one line and exit status 2."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from geodyn_ros.examples import px4_table as ex


def _cells(text: str, vehicle: str, title: str) -> dict:
    block = text.split(f"\n{vehicle}: ", 1)[1]
    lines = block.split(f"{title} per level and command path", 1)[1].splitlines()[1:]
    while lines and not lines[0].startswith("level "):
        lines = lines[1:]
    assert lines[0].startswith("level ") and set(lines[2]) == {"-"}, lines[:3]
    rows = {}
    for line in lines[3:]:
        cells = line.split()
        if not cells or cells[0] not in ("rigid", "ff0", "ff1", "ff2"):
            break
        rows[cells[0]] = cells[1:]
    return rows


def test_px4_table_text(tmp_path, capsys):
    out_json = tmp_path / "px4.json"
    args = ["--vehicles", "underactuated", "--levels", "ff2", "--columns", "speeds,thrust_and_torque",
            "--duration", "0.3", "--json-out", str(out_json)]
    assert ex.main(args) == 0
    out = capsys.readouterr().out
    assert all(len(line) < 100 for line in out.splitlines()), [x for x in out.splitlines() if len(x) >= 100]
    obj = json.loads(out_json.read_text())
    v = obj["vehicles"]["underactuated"]
    assert v["columns"] == ["speeds", "thrust_and_torque"] and v["levels"] == ["ff2"]
    assert "rotation x 0.85" in v["gains"] and v["gains"] in out
    for title, key in (("position RMS [m]", "position_rms_m"), ("joint RMS [deg]", "joint_rms_deg")):
        cells = _cells(out, "underactuated", title)
        for cell, col in zip(cells["ff2"], v["columns"]):
            m = v["rows"][col]["ff2"]
            assert "diverged" not in m
            assert float(cell) == pytest.approx(m[key], rel=1e-3)
    # one command per odometry sample (100 Hz) over the whole flight: take-off, the window, landing
    for col in v["columns"]:
        m = v["rows"][col]["ff2"]
        assert 600 < m["commands"] < 1500 and m["position_rms_m"] < 0.2
    assert "  underactuated thrust_and_torque ff2: position RMS " in out


@pytest.mark.parametrize("args, words", [
    (["--vehicles", "tilthex"], "--vehicles: expected a subset of"),
    (["--columns", "speeds,mavlink"], "--columns: expected a subset of"),
    (["--levels", "ff3"], "--levels: expected a subset of"),
    (["--duration", "nan"], "--duration: expected seconds"),
    (["--link-delay-ms", "-1"], "--link-delay-ms: expected milliseconds"),
])
def test_px4_table_bad_arguments_one_line(args, words):
    r = subprocess.run([sys.executable, "-m", "geodyn_ros.examples.px4_table", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""
