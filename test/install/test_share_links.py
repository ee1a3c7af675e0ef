"""``make venv`` gives the editable install its ``share/geodyn_ros`` (issue 52.3).

After ``make venv`` the venv had no ``share/geodyn_ros`` and no ament index entry (an editable
install does not install ``data_files``), so ``get_package_share_directory("geodyn_ros")`` (and
``ros2 pkg prefix``, ``FindPackageShare`` in a launch file) did not find the package. The
Makefile's step 3 now runs ``tools/link_share.py``; here it runs into an empty prefix, and a
fresh interpreter with only that prefix on ``AMENT_PREFIX_PATH`` finds the package, its launch
files (the clone's own, through the links), its shipped URDFs (``geodyn_ros.model.resources``) and
``python -m geodyn_ros2 pkg prefix geodyn_ros`` prints the prefix.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
from ament_index_python.packages import get_package_share_directory as share
import os, sys
d = share("geodyn_ros")
print(d)
print(os.path.realpath(os.path.join(d, "launch", "px4.launch.py")))
print(os.path.realpath(os.path.join(d, "config", "vehicles", "iris.yaml")))
"""


def _env(prefix):
    env = dict(os.environ, AMENT_PREFIX_PATH=str(prefix))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def test_link_share_makes_the_package_findable(tmp_path):
    tool = [sys.executable, str(ROOT / "tools" / "link_share.py"), "--prefix", str(tmp_path)]
    for _ in range(2):                     # idempotent: the second run keeps the links
        out = subprocess.run(tool, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.count("\n") == 1 and out.stdout.startswith("share: geodyn_ros's launch"), out.stdout
    probe = subprocess.run([sys.executable, "-c", _PROBE], env=_env(tmp_path), capture_output=True, text=True,
                           timeout=120, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr[-2000:]
    share, launch, vehicle = probe.stdout.split()
    assert share == str(tmp_path / "share" / "geodyn_ros")
    assert launch == str(ROOT / "launch" / "px4.launch.py") and vehicle == str(ROOT / "config" / "vehicles" / "iris.yaml")
    prefix = subprocess.run([sys.executable, "-m", "geodyn_ros2", "pkg", "prefix", "geodyn_ros"], env=_env(tmp_path),
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert prefix.returncode == 0 and prefix.stdout.strip() == str(tmp_path), (prefix.stdout, prefix.stderr)


def test_a_pip_installed_share_is_left_alone(tmp_path):
    """A ``share/geodyn_ros`` of real files (``pip install .`` into the same venv) is not replaced."""
    real = tmp_path / "share" / "geodyn_ros"
    real.mkdir(parents=True)
    (real / "package.xml").write_text("<package/>")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "link_share.py"), "--prefix", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "left as installed: share/geodyn_ros" in out.stdout, out.stdout
    assert (real / "package.xml").read_text() == "<package/>" and not (real / "launch").exists()


def test_make_venv_links_the_share_files():
    """The Makefile's step 3 runs the tool right after the editable install."""
    lines = [ln.strip() for ln in (ROOT / "Makefile").read_text().splitlines() if ln.startswith("\t")]
    editable = next(i for i, ln in enumerate(lines) if "editable_mode=compat" in ln and not ln.startswith("@#"))
    after = [ln for ln in lines[editable + 1:] if not ln.startswith("@#")]
    assert after[0] == "$(BIN)/python tools/link_share.py", after[:2]
