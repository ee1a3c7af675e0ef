"""The install as a user has it (issue 31: the namespace-package trap).

The README clones into a folder named ``geodyn_ros``. Seen from its parent folder, that clone is a
directory ``geodyn_ros`` without ``__init__.py``: with setuptools' default ("lenient") editable
install, whose import hook comes after the path search, Python imported it as an empty namespace
package and ``gd.load_urdf`` was missing. ``make venv`` installs in ``compat`` mode (a path entry),
so the real package wins over a namespace portion, from ``python -c`` and from a script alike.
"""
from __future__ import annotations

import os
import subprocess
import sys

CHECK = "import geodyn_ros as gd; print(gd.__file__); assert callable(gd.load_urdf), gd"


def _env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)   # the interpreter as a user starts it
    return env


def test_a_folder_named_geodyn_ros_in_the_working_directory_does_not_shadow_the_package(tmp_path):
    clone = tmp_path / "geodyn_ros"          # the README's clone, seen from its parent folder
    (clone / "urdf").mkdir(parents=True)
    (clone / "README.md").write_text("a clone\n")
    (tmp_path / "my_script.py").write_text(CHECK + "\n")
    for argv in ([sys.executable, "-c", CHECK], [sys.executable, "my_script.py"]):
        out = subprocess.run(argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{argv[1:]}: {out.stderr[-2000:]}"
        assert out.stdout.strip().endswith(os.path.join("geodyn_ros", "__init__.py")), out.stdout


def test_make_venv_editable_step_prints_no_setuptools_banner(tmp_path):
    """``make venv``'s editable install (the Makefile's recipe line, as written) prints nothing: setuptools'
    large "compat editable mode is transitional" banner looked like a failure to a new user. Run into a
    throwaway venv with the pinned build requirements of requirements.txt, then the install is checked."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    recipe = [ln.strip() for ln in (root / "Makefile").read_text().splitlines()
              if "editable_mode=compat" in ln and not ln.lstrip().startswith("@#")]
    assert len(recipe) == 1, recipe
    pins = [ln for ln in (root / "requirements.txt").read_text().splitlines() if re.match(r"(setuptools|wheel)==", ln)]
    assert len(pins) == 2, pins
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    # pip from this interpreter installs into the throwaway venv (--python), from pip's cache
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", *pins],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "pip"], check=True,
                   capture_output=True, timeout=600)
    line = recipe[0].replace("$(BIN)", str(venv / "bin"))
    out = subprocess.run(["bash", "-c", line], cwd=root, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    noise = [ln for ln in (out.stdout + out.stderr).splitlines()
             if ln.strip() and not ln.startswith("WARNING: Location")]   # (this machine's pip config)
    assert not noise, "\n".join(noise[:20])
    # the install finds the clone's package (not importing it: its dependencies are not in this venv)
    check = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('geodyn_ros').origin)"],
                           capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert check.stdout.strip() == str(root / "geodyn_ros" / "__init__.py"), (check.stdout, check.stderr[-1000:])
