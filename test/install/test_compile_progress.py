"""A cold start says what it waits for, and again while it waits (issue 52.6).

``make venv``'s step 4 ran ``python -m geodyn_ros.warmup``, which printed its first line only after
``import geodyn_ros`` was over: numba compiles the kernels during that import, silently, and on a
loaded 2-core machine that took 20 minutes, which looked hung. The console scripts
(``geodyn_ros_entry``) now print a line before the import and a ``still compiling`` line every
``PROGRESS_EVERY`` seconds while it runs, for the warm-up (on stdout, which make shows) and for
every node or tool that has to compile (on stderr, the nodes' log). ``make venv`` runs the console
script.

The import here is a stand-in module whose import sleeps (the mechanism is under test, not numba):
1.5 s of import with a line every 0.2 s gives at least one line, however loaded the machine
(``time.sleep`` never returns early).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_DRIVER = """
import sys
import geodyn_ros_entry as e
e.PROGRESS_EVERY = 0.2
e._kernels_cached = lambda: False     # a cold cache
sys.argv = [sys.argv[1]]
sys.exit(e._run("slow_import", sys.argv[0]))
"""


def _cold_start(tmp_path, executable):
    (tmp_path / "slow_import.py").write_text(
        "import time\ntime.sleep(1.5)\n"
        "def main():\n    print('main ran')\n    return 0\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", ""))))
    return subprocess.run([sys.executable, "-c", _DRIVER, executable], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("executable, stream", [("geodyn_warmup", "stdout"), ("geodyn_node", "stderr")])
def test_a_cold_start_prints_before_and_while_it_compiles(tmp_path, executable, stream):
    out = _cold_start(tmp_path, executable)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = getattr(out, stream).splitlines()
    label = "[geodyn warmup]" if executable == "geodyn_warmup" else "[INFO] slow_import:"
    first = "importing geodyn_ros: numba compiles" if executable == "geodyn_warmup" else "compiling the dynamics kernels"
    assert lines[0].startswith(f"{label} {first}"), lines
    beats = [ln for ln in lines if ln.startswith(f"{label} still compiling the dynamics kernels, ")]
    assert beats, lines
    assert all(re.search(r", \d+ s so far", ln) for ln in beats), beats
    assert "main ran" in out.stdout and out.stdout.rstrip().endswith("main ran")   # no line after the import


def test_make_venv_compiles_through_the_console_script():
    """The warm-up line of make venv's step 4 is the console script, which prints before the import."""
    recipe = [ln.strip() for ln in (ROOT / "Makefile").read_text().splitlines()
              if "warmup" in ln and ln.startswith("\t") and not ln.strip().startswith(("@", "#"))]
    assert recipe == ["$(BIN)/geodyn_warmup"], recipe
