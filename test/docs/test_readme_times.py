"""The README's times and sizes are the measured ones (issue 52.6, issue 56.4).

A newcomer read "pip 1-3 minutes, kernels 5-8 minutes, messages about 80 s" and waited 23.6
minutes for ``make venv`` (the messages alone 8.8), and ``make demo DURATION=3``, with no time
given, ran 45 minutes on a loaded machine: they thought it hung. The suite's size read "about 1,500
tests" when it held about 2,900. Checked here:

* ``make venv``'s steps in the README's Install section are ranges (``a–b minutes``) whose upper
  ends are the "both cores busy" column of the install page's table (doc/howto/install.md, the
  measured figures), rounded to a whole minute;
* the ``make demo`` row states the time of ``make demo DURATION=3`` as a range of minutes, and
  says with what load it was measured;
* the ``make test`` row states the number of tests, within 10 % of what pytest collects from
  ``test/`` now (``pytest --collect-only``, in a child process: nothing runs), and a time with
  its measurement.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
RANGE = r"(\d+(?:\.\d+)?)–(\d+(?:\.\d+)?) minutes"


def _install_paragraph() -> str:
    section = README.split("## Install", 1)[1].split("```bash", 1)[0]
    return " ".join(section.split())


def _make_row(target: str) -> str:
    rows = [ln for ln in README.splitlines() if ln.startswith(f"| `{target}` |")]
    assert len(rows) == 1, f"the README has no single `{target}` row"
    return rows[0]


def _busy_minutes(step: str) -> float:
    """The 'both cores busy' figure of the install page's row for ``step`` (``2/5`` ...), in minutes."""
    page = (ROOT / "doc" / "howto" / "install.md").read_text()
    row = next(ln for ln in page.splitlines() if ln.startswith(f"| {step} |"))
    busy = row.strip("|").split("|")[3]
    m = re.search(r"(\d+(?:\.\d+)?) (min|s)\b", busy)
    assert m, row
    return float(m.group(1)) / (60.0 if m.group(2) == "s" else 1.0)


def test_make_venv_steps_are_the_measured_ranges():
    text = _install_paragraph()
    for words, step in (("pip", "2/5"), ("the kernels", "4/5"), ("the messages", "5/5")):
        m = re.search(re.escape(words) + " " + RANGE, text)
        assert m, f"the README's Install section gives no range for {words!r}: {text[:900]}"
        low, high = float(m.group(1)), float(m.group(2))
        busy = _busy_minutes(step)
        assert low < high and abs(high - busy) <= 0.5, (words, low, high, busy)
    assert "both cores busy" in text, text[:900]


def test_make_demo_states_the_short_modes_time():
    row = _make_row("make demo")
    after = row.split("`make demo DURATION=3`", 1)
    assert len(after) == 2, row
    m = re.search(RANGE, after[1])
    assert m and float(m.group(1)) < float(m.group(2)), f"no time range for make demo DURATION=3: {after[1]}"
    assert re.search(r"load average \d+", after[1]), "the time does not say under what load it was measured"


def _collected() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist",
                          "-p", "no:cacheprovider", "test"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=3600, stdin=subprocess.DEVNULL)
    m = re.search(r"^(\d+) tests? collected", out.stdout, re.M)
    assert out.returncode == 0 and m, (out.stdout[-2000:], out.stderr[-2000:])
    return int(m.group(1))


def test_make_test_states_the_suite_size_and_its_time():
    row = _make_row("make test")
    m = re.search(r"([\d,]+) tests\b", row)
    assert m, row
    stated = int(m.group(1).replace(",", ""))
    collected = _collected()
    assert abs(stated - collected) <= 0.1 * collected, f"the README says {stated} tests, pytest collects {collected}"
    assert re.search(r"\d+ minutes \(\d+ s\b", row), f"no measured time for make test: {row}"
