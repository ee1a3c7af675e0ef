"""The README's direct commands (the executables without ``ros2``), run exactly as written.

``make demo`` runs in .ci/run (its log is checked by test_examples_text.py), ``make test``/``make
lint``/``make docs`` are .ci/run itself; the ``ros2 launch`` lines need the ``ros2`` CLI, which the
PyPI wheels do not have: their launch files run under the real launch_ros in
test_real_launch.py. The commands below are read from the README, so the README cannot name
a command that this test does not run.

They run as a new user runs them after ``make venv``: by bash from the clone's root, in a shell
whose ``PATH`` does not hold the venv, after the activation line the README's Install section
gives (``source .venv/bin/activate``). A README that never says how the executables get on
``PATH`` fails here (``geodyn_fly: command not found``, as a newcomer met it).
"""
from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
README = (ROOT / "README.md").read_text()


def _activation() -> str:
    """The README's activation line (its Install block), for the venv that runs this test."""
    block = re.search(r"## Install\n.*?```bash\n(.*?)```", README, re.S)
    assert block, "the README has no Install section with a bash block"
    found = re.findall(r"^(source \.venv/bin/activate)\b", block.group(1), re.M)
    assert found, ("the README's Install block never activates the venv: after `make venv` a new user's "
                   "shell has no geodyn_fly or geodyn_node (`command not found`)")
    if BIN.parent != ROOT / ".venv":      # the suite runs from another environment than the clone's .venv
        return f"source {shlex.quote(str(BIN / 'activate'))}"
    return found[0]


def _command(prefix: str) -> list[str]:
    """``bash -c`` running the README's first `prefix...` command as written, after the activation."""
    found = re.findall(rf"`({prefix}[^`]*)`", README)
    assert found, f"the README names no `{prefix}...` command"
    return ["bash", "-c", f"{_activation()} && exec {found[0]}"]


def _env():
    """A user's environment: the venv's scripts not on PATH (the activation puts them there)."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and Path(d).resolve() != BIN.resolve()) or "/usr/bin:/bin"
    return env


def test_the_venv_scripts_are_not_on_the_test_path():
    """The check below can fail: without the activation the executables are not found."""
    out = subprocess.run(["bash", "-c", "command -v geodyn_fly || echo missing"], env=_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "missing", out.stdout


def test_readme_geodyn_node_command_starts_says_what_it_waits_for_and_stops():
    """It loads the URDF (a path relative to the clone, so run from the clone's root), says on
    the console which topic it waits for, and exits 0 on SIGINT (Ctrl-C)."""
    argv = _command("geodyn_node ")
    proc = subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)
    out = []
    try:
        deadline = time.monotonic() + 240      # a warm start takes about a second; a loaded machine more
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                out.append(line)
                if "waiting for reference" in line:
                    break
        assert any("waiting for reference" in line for line in out), "".join(out)
        assert any("model 'aerial_manipulator'" in line for line in out), "".join(out)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_readme_closed_loop_command_prints_its_table():
    argv = _command("geodyn_closed_loop ")
    out = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^(rigid|ff0|ff1|ff2|lqr|lqr_thread)\s+(\S+)", out.stdout, re.M)}
    assert set(rows) == {"rigid", "ff0", "ff1", "ff2", "lqr", "lqr_thread"}, out.stdout
    # the CoM RMS falls with the feedforward order (measured 2.4e-3, 4.7e-4, 1.5e-4, 2.5e-5 m over 2 s)
    rms = {k: float(v) for k, v in rows.items()}
    assert rms["ff2"] < rms["ff1"] < rms["ff0"] < rms["rigid"], rms


def test_readme_geodyn_fly_commands_print_the_report_and_the_ordered_table():
    """The README's two ``geodyn_fly`` lines (a shipped name; the explicit ``--urdf``/``--vehicle``
    form of a user's robot, with the shell substitution as written), run by bash from the clone's
    root after the README's activation line: the report's rank line, every level of the rank, no
    rotor saturation, the error not growing with the level, lines within 100 columns."""
    block = re.search(r"## Your own aerial manipulator\n\n```bash\n(.*?)```", README, re.S)
    assert block, "the README's 'Your own aerial manipulator' section has no bash block"
    lines = [ln for ln in block.group(1).splitlines() if ln.startswith("geodyn_fly ")]
    assert len(lines) == 2, lines
    env = _env()
    for line, rank, levels in ((lines[0], 6, ("pd", "ff0", "ff1", "ff2")),
                               (lines[1], 4, ("rigid", "ff0", "ff1", "ff2"))):
        out = subprocess.run(["bash", "-c", f"{_activation()} && {line}"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=1800, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, (line, out.stderr[-3000:])
        text = out.stdout
        assert f"allocation rank {rank} ->" in text, text
        rows = {m.group(1): m.group(2).split() for m in
                re.finditer(rf"^({'|'.join(levels)})\s+(.*)$", text, re.M)}
        assert set(rows) == set(levels), text
        rms = [float(rows[lv][0]) for lv in levels]
        # each level adds feedforward terms; on these vehicles the measured RMS never grows
        # (equal levels are allowed: ff1 = ff2 without elastic joints)
        assert all(a >= b for a, b in zip(rms, rms[1:])), (line, rms)
        assert all(rows[lv][6].split("/")[0] == "0" for lv in levels), text   # no rotor command clipped
        assert max(len(x) for x in text.splitlines() if not x.startswith("  urdf ")) <= 100, text
