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
