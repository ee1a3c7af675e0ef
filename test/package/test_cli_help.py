"""``<executable> --help`` answers at once: the stored texts (``geodyn_ros/cli_help.json``) are the
executables' own help, and printing one imports neither the package nor rclpy nor numba.

A newcomer waited 6 s for ``geodyn_node --help`` (rclpy, the compiled kernels and the node module
were imported to print a table); on a busy machine it was 6-8 s for every executable. The time is
not asserted (no timing assertions in tests): what makes it slow is, by checking the imports.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from geodyn_ros.ros.common.interfaces import EXECUTABLES

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
HEAVY = ("geodyn_ros", "numba", "rclpy", "numpy", "mujoco")


def test_stored_texts_are_what_the_executables_generate():
    """The check mode of ``python -m geodyn_ros.cli_help`` (fresh process: it imports every node)."""
    out = subprocess.run([sys.executable, "-m", "geodyn_ros.cli_help"], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert json.loads((ROOT / "geodyn_ros" / "cli_help.json").read_text()).keys() == {e.name for e in EXECUTABLES}


def test_the_staleness_check_can_fail(tmp_path, monkeypatch):
    """A stored text that differs from the code is reported with the command that fixes it."""
    import geodyn_ros.cli_help as ch
    stale = json.loads(ch.HELP_FILE.read_text())
    stale["geodyn_fly"] += "\nan option that no longer exists"
    fake = tmp_path / "cli_help.json"
    fake.write_text(json.dumps(stale))
    monkeypatch.setattr(ch, "HELP_FILE", fake)
    monkeypatch.setattr(ch, "generate", lambda: json.loads((ROOT / "geodyn_ros" / "cli_help.json").read_text()))
    assert ch.main([]) == 1


@pytest.mark.parametrize("exe", [e.name for e in EXECUTABLES])
def test_help_imports_nothing_heavy(exe):
    """The entry's ``--help`` path, run under ``-X importtime``: the printed text is the stored one
    and none of the package, numba, rclpy, numpy or MuJoCo is imported."""
    code = (f"import sys; sys.argv = [{exe!r}, '--help']; import geodyn_ros_entry as e; "
            f"sys.exit(e.{exe}())")
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT / "test", stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-2000:]
    stored = json.loads((ROOT / "geodyn_ros" / "cli_help.json").read_text())[exe]
    assert out.stdout.rstrip("\n") == stored
    imported = {ln.split("|")[-1].strip() for ln in out.stderr.splitlines() if ln.startswith("import time:")}
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY)
    assert not heavy, f"{exe} --help imported {heavy[:8]}"


def test_help_into_a_closed_pipe_is_quiet():
    """``geodyn_fly --help | head -1``: the reader stops after one line; the executable exits 0 and
    prints no BrokenPipeError traceback (it did)."""
    res = subprocess.run(f"'{BIN / 'geodyn_fly'}' --help | head -1", shell=True, capture_output=True, text=True,
                         timeout=120, executable="/bin/bash")
    assert res.stdout.startswith("usage: geodyn_fly") and res.stdout.count("\n") == 1
    assert res.stderr == "", res.stderr
