"""``geodyn_ros._kernel_cache``: a cached kernel is recompiled when a compiled function it calls
from *another* module changes.

The scenario, in fresh processes (numba's cache lives on disk, so each step must be a new
interpreter): a throwaway package whose ``b.caller(x) = 2 callee(x)`` calls ``a.callee(x) = x + 1``,
both ``cache=True``. Run once (4.0, both compiled and cached), run again unchanged (4.0 from the
cache: the locators must not disable caching), then edit only ``a.py`` to ``x + 2`` and run again.
- With numba's own locators the caller loads its stale cached code and prints 4.0: the hazard
  this module exists for (checked, so this test notices if a numba release fixes it).
- With :func:`install` on the package's folder it recompiles and prints 6.0, the independent
  answer (2 (1 + 2)).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

KC = Path(__file__).resolve().parents[1] / "geodyn_ros" / "_kernel_cache.py"

RUN = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("kc", {kc!r})
kc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kc)       # the module alone: no geodyn_ros import, no other kernels
if {package!r}:
    assert kc.install({root!r})
sys.path.insert(0, {tmp!r})
from pkg.b import caller
print(json.dumps({{"y": caller(1.0), "hits": sum(caller.stats.cache_hits.values()),
                   "locator": type(caller._cache._impl.locator).__name__}}))
"""


def _run(tmp: Path, package: bool) -> dict:
    script = RUN.format(kc=str(KC), package=package, root=str(tmp / "pkg"), tmp=str(tmp))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": ""})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _package(tmp: Path, increment: str) -> None:
    pkg = tmp / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(f"from numba import njit\n\n\n@njit(cache=True)\ndef callee(x):\n"
                              f"    return x + {increment}\n")
    (pkg / "b.py").write_text("from numba import njit\n\nfrom .a import callee\n\n\n@njit(cache=True)\n"
                              "def caller(x):\n    return 2.0 * callee(x)\n")


@pytest.mark.parametrize("package", [False, True], ids=["numba_locators", "package_locators"])
def test_an_edited_callee_in_another_module_recompiles_its_callers(tmp_path, package):
    _package(tmp_path, "1.0")
    first = _run(tmp_path, package)
    assert first["y"] == 4.0 and first["hits"] == 0
    assert first["locator"].startswith("GeodynPackage") == package
    again = _run(tmp_path, package)
    assert again["y"] == 4.0 and again["hits"] >= 1, "the unchanged kernel did not load from the cache"
    _package(tmp_path, "2.0")          # only a.py changes; b.py is byte for byte the same
    edited = _run(tmp_path, package)
    if package:
        assert edited["y"] == 6.0 and edited["hits"] == 0
    else:
        assert edited["y"] == 4.0, ("numba now recompiles a caller when its callee's module changes: "
                                    "geodyn_ros._kernel_cache may no longer be needed")


def test_the_package_installs_its_locators_before_its_kernels():
    """Every compiled kernel of geodyn_ros (here: the node's hot path and the dynamics core) is
    cached through the package's locators."""
    from geodyn_ros.algorithms.kernels import inverse
    from geodyn_ros.lie import rotation_to_wxyz
    from geodyn_ros.ros import raw_outputs
    for k in (inverse.inverse_dynamics_ws, rotation_to_wxyz, raw_outputs._fill_rotor):
        assert type(k._cache._impl.locator).__name__.startswith("GeodynPackage"), k
