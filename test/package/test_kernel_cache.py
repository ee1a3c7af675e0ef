"""``geodyn_ros._kernel_cache``: a cached kernel is reused only if nothing it compiled in changed.

The hazard, in fresh processes (numba's cache lives on disk, so each step is a new interpreter):
a throwaway package whose ``b.caller(x) = 2 callee(x)`` calls ``a.callee(x) = x + 1``, both
``cache=True``. Run once (4.0: compiled and cached), again (4.0 from the cache: the mechanism must
not disable caching), then edit only ``a.py`` and run again.

- With numba's own locators the caller loads its stale cached code: 4.0 after ``a.py`` became
  ``x + 2`` (and after ``x + 10``). Checked, so the test shows it can fail, and notices if a numba
  release fixes the hazard.
- With :func:`install` on the throwaway package it recompiles: 6.0, then 22.0, the independent
  answers ``2 (1 + 2)`` and ``2 (1 + 10)``, in the three places numba caches (``__pycache__``,
  ``NUMBA_CACHE_DIR``, the per-user directory of a read-only install); the recompiled kernel is
  cached in turn (loaded, not compiled, on the next run). A kernel of another package keeps
  numba's locator.

Two edits, each presented as ``git pull`` presents one (new contents, the mtime of the
checkout): ``x + 2`` keeps the size of ``x + 1`` (a stamp of size and mtime alone would need the
mtime to move), ``x + 10`` changes it. (An edit that also restores the old mtime is out of reach:
Python itself then runs the old bytecode from ``__pycache__``, which checks mtime and size.)
"""
from __future__ import annotations

import builtins
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KC = ROOT / "geodyn_ros" / "_kernel_cache.py"


def _kc():
    """A fresh copy of the module (its per-process memo of file hashes empty)."""
    spec = importlib.util.spec_from_file_location("_kc_under_test", KC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RUN = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("kc", {kc!r})
kc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kc)       # the module alone: no geodyn_ros import, no other kernels
if {read_only!r}:                 # as a read-only install: numba cannot write beside the module
    from numba.core import caching
    caching.InTreeCacheLocator.from_function = classmethod(lambda cls, f, p: None)
if {mechanism!r}:
    assert kc.install({root!r})
sys.path.insert(0, {tmp!r})
from pkg.b import caller
from other.c import triple
y = caller(1.0)
assert triple(1.0) == 3.0
print(json.dumps({{"y": y, "hits": sum(caller.stats.cache_hits.values()),
                   "misses": sum(caller.stats.cache_misses.values()), "path": caller.stats.cache_path,
                   "locator": type(caller._cache._impl.locator).__name__,
                   "other": type(triple._cache._impl.locator).__name__}}))
"""

WHERE = ["in_tree", "numba_cache_dir", "per_user"]


def _env(tmp: Path, where: str) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / "home")}
    if where == "numba_cache_dir":
        env["NUMBA_CACHE_DIR"] = str(tmp / "numba_cache_dir")
    if where == "per_user":
        env["XDG_CACHE_HOME"] = str(tmp / "xdg")
    return env


def _run(tmp: Path, where: str, mechanism: bool) -> dict:
    script = RUN.format(kc=str(KC), mechanism=mechanism, read_only=where == "per_user", root=str(tmp / "pkg"),
                        tmp=str(tmp))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env=_env(tmp, where), cwd=tmp)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _write_callee(tmp: Path, increment: str, same_size: bool = False) -> None:
    """a.py with ``callee(x) = x + increment``; its mtime one second after the previous one (a
    checkout writes the file later; not left to the file system's clock granularity)."""
    a = tmp / "pkg" / "a.py"
    old = a.stat() if a.exists() else None
    a.write_text(f"from numba import njit\n\n\n@njit(cache=True)\ndef callee(x):\n    return x + {increment}\n")
    if old is not None:
        assert (a.stat().st_size == old.st_size) == same_size
        os.utime(a, ns=(old.st_atime_ns, old.st_mtime_ns + 10 ** 9))


def _package(tmp: Path) -> None:
    for d in ("pkg", "other", "home"):
        (tmp / d).mkdir()
    (tmp / "pkg" / "__init__.py").write_text("")
    _write_callee(tmp, "1.0")
    (tmp / "pkg" / "b.py").write_text("from numba import njit\n\nfrom .a import callee\n\n\n@njit(cache=True)\n"
                                      "def caller(x):\n    return 2.0 * callee(x)\n")
    (tmp / "other" / "__init__.py").write_text("")
    (tmp / "other" / "c.py").write_text("from numba import njit\n\n\n@njit(cache=True)\ndef triple(x):\n"
                                        "    return 3.0 * x\n")


def _expected_dir(tmp: Path, where: str) -> Path:
    return {"in_tree": tmp / "pkg" / "__pycache__", "numba_cache_dir": tmp / "numba_cache_dir",
            "per_user": tmp / "xdg" / "numba"}[where]


@pytest.mark.parametrize("where, mechanism", [("in_tree", False)] + [(w, True) for w in WHERE],
                         ids=["numba_locators"] + [f"package_locators-{w}" for w in WHERE])
def test_an_edited_callee_in_another_module_recompiles_its_callers(tmp_path, where, mechanism):
    _package(tmp_path)
    first = _run(tmp_path, where, mechanism)
    assert first["y"] == 4.0 and first["hits"] == 0 and first["misses"] == 1
    assert first["locator"].startswith("GeodynPackage") == mechanism
    assert not first["other"].startswith("GeodynPackage"), "another package's kernel must keep numba's locator"
    assert Path(first["path"]).is_relative_to(_expected_dir(tmp_path, where)), first["path"]
    again = _run(tmp_path, where, mechanism)
    assert again["y"] == 4.0 and again["hits"] == 1 and again["misses"] == 0, "the unchanged kernel did not load"
    _write_callee(tmp_path, "2.0", same_size=True)     # b.py byte for byte the same
    same_size = _run(tmp_path, where, mechanism)
    _write_callee(tmp_path, "10.0")
    edited = _run(tmp_path, where, mechanism)
    reused = _run(tmp_path, where, mechanism)
    if mechanism:
        assert (same_size["y"], edited["y"], reused["y"]) == (6.0, 22.0, 22.0)
        assert same_size["misses"] == edited["misses"] == 1 and reused["hits"] == 1 and reused["misses"] == 0
    else:
        assert (same_size["y"], edited["y"]) == (4.0, 4.0), (
            "numba now recompiles a caller when its callee's module changes: geodyn_ros._kernel_cache may "
            "no longer be needed")


def test_kernels_cached_follows_the_sources(tmp_path, monkeypatch):
    """:func:`kernels_cached` (the console entry's "first start" test) on the throwaway package:
    False before the first run, True after it, False once the callee changed (the caller's index
    is stale), True after the next run; an index left behind by a kernel that moved (its first
    line shifted) is not counted."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    _package(tmp_path)
    root = str(tmp_path / "pkg")
    assert not _kc().kernels_cached(root)
    _run(tmp_path, "in_tree", True)
    assert _kc().kernels_cached(root)
    _write_callee(tmp_path, "2.0", same_size=True)
    assert not _kc().kernels_cached(root)
    assert _run(tmp_path, "in_tree", True)["y"] == 6.0
    assert _kc().kernels_cached(root)
    b = tmp_path / "pkg" / "b.py"
    b.write_text("# a line more\n" + b.read_text())
    assert _run(tmp_path, "in_tree", True)["misses"] == 1
    indexes = sorted(p.name for p in (tmp_path / "pkg" / "__pycache__").glob("b.caller-*.nbi"))
    assert len(indexes) == 2, indexes           # the old one stays (numba never removes it)
    assert _kc().kernels_cached(root)
    # moved up two lines: the first index (decorator at line 6) now names the def line below the
    # decorator (line 6): still a kernel moved away, not one to count (numba names an index by the
    # decorator's line)
    text = b.read_text().replace("# a line more\n", "", 1).replace("\n\n\n@njit", "\n\n@njit", 1)
    b.write_text(text)
    assert text.splitlines()[5].startswith("def caller"), text
    assert _run(tmp_path, "in_tree", True)["misses"] == 1
    assert len(list((tmp_path / "pkg" / "__pycache__").glob("b.caller-*.nbi"))) == 3
    assert _kc().kernels_cached(root)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "empty"))
    assert not _kc().kernels_cached(root)


def test_cache_dir_is_the_one_numba_uses(tmp_path, monkeypatch):
    """:func:`cache_dir` (numba's rule, restated without numba) against numba's locators."""
    from numba.core import caching
    kc = _kc()
    (tmp_path / "m.py").write_text("def f():\n    pass\n")
    spec = importlib.util.spec_from_file_location("m", tmp_path / "m.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    py = str(tmp_path / "m.py")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert kc.cache_dir(str(tmp_path)) == caching.InTreeCacheLocator(m.f, py).get_cache_path()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(os, "access", lambda p, mode: False)    # a read-only install
    assert kc.cache_dir(str(tmp_path)) == caching.UserWideCacheLocator(m.f, py).get_cache_path()
    monkeypatch.setattr(caching.config, "CACHE_DIR", str(tmp_path / "n"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "n"))
    assert kc.cache_dir(str(tmp_path)) == caching.UserProvidedCacheLocator(m.f, py).get_cache_path()


def test_install_says_once_when_numbas_locator_api_is_missing(monkeypatch):
    from numba.core import caching
    kc = _kc()
    monkeypatch.delattr(caching.CacheImpl, "_locator_classes")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert kc.install("/nonexistent/pkg") is False
        assert kc.install("/nonexistent/pkg") is False
    assert len(seen) == 1 and issubclass(seen[0].category, RuntimeWarning)
    assert "_locator_classes" in str(seen[0].message) and "__pycache__" in str(seen[0].message)


@pytest.mark.parametrize("error", [KeyboardInterrupt, ImportError])
def test_an_interrupted_numba_import_reaches_the_caller(monkeypatch, error):
    """A stop during start-up can land in numba's import (test_ros_shutdown): :func:`install`
    must let it through, not warn and go on."""
    kc = _kc()
    real = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name.startswith("numba"):
            raise error("stopped during numba's import")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error):
            kc.install("/nonexistent/pkg")


# ------------------------------------------------------------------------- the real package

def _caching_dispatchers():
    """Every cached numba dispatcher of geodyn_ros, with the modules that define them imported."""
    import importlib

    from numba.core.registry import CPUDispatcher
    for path in sorted((ROOT / "geodyn_ros").rglob("*.py")):
        if "cache=True" in path.read_text() and path.name != "_kernel_cache.py":
            importlib.import_module("geodyn_ros." + ".".join(path.relative_to(ROOT / "geodyn_ros")
                                                              .with_suffix("").parts))
    seen = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("geodyn_ros"):
            for obj in list(vars(mod).values()):
                if isinstance(obj, CPUDispatcher) and obj._cache.__class__.__name__ == "FunctionCache":
                    seen[id(obj)] = obj
    return list(seen.values())


def test_every_kernel_of_the_package_is_stamped_with_its_sources():
    import geodyn_ros  # noqa: F401  (installs the locators)
    kc = sys.modules["geodyn_ros._kernel_cache"]
    ds = _caching_dispatchers()
    assert len(ds) > 50, len(ds)
    for d in ds:
        assert type(d._cache._impl.locator).__name__.startswith("GeodynPackage"), d
        path = os.path.abspath(inspect.getfile(d.py_func))
        assert d._cache._cache_file._source_stamp == (kc._TAG, kc.sources_digest(path)), d


def _ast_imports(path: Path, pkg_root: Path) -> set:
    """Files of the package a module imports, found with ``ast`` (the oracle of the line scan)."""
    import ast
    here = list(path.relative_to(pkg_root).with_suffix("").parts[:-1])
    out = set()

    def module_file(parts):
        p = pkg_root.joinpath(*parts)
        return p.with_suffix(".py") if p.with_suffix(".py").is_file() else (
            p / "__init__.py" if (p / "__init__.py").is_file() else None)

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                target = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == pkg_root.name:
                target = node.module.split(".")[1:]
            else:
                continue
            for a in node.names:
                f = module_file(target + [a.name]) if module_file(target) is None or \
                    module_file(target).name == "__init__.py" else None
                f = f or module_file(target)
                if f:
                    out.add(str(f))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == pkg_root.name and module_file(a.name.split(".")[1:]):
                    out.add(str(module_file(a.name.split(".")[1:])))
    return out


def test_the_import_scan_agrees_with_ast_on_every_module():
    """The line scan finds every import ``ast`` finds, in every module (a miss would leave a
    kernel stale); in the modules kernels compile from, nothing more (an extra, such as an
    ``import geodyn_ros`` in an ``__init__`` docstring, would only recompile more often)."""
    kc, pkg = _kc(), ROOT / "geodyn_ros"
    kernels = {os.path.abspath(inspect.getfile(d.py_func)) for d in _caching_dispatchers()}
    compiled_from = {f for k in kernels for f in kc.sources(k, str(pkg))}
    assert len(compiled_from) > len(kernels) > 10, (len(compiled_from), len(kernels))
    for path in sorted(pkg.rglob("*.py")):
        scan, oracle = kc._imports(str(path), str(pkg)), _ast_imports(path, pkg)
        assert scan >= oracle, (path, oracle - scan)
        if str(path) in compiled_from:
            assert scan == oracle, (path, scan - oracle)


def test_editing_a_module_changes_the_stamp_of_exactly_the_kernels_that_import_it(tmp_path):
    pkg = tmp_path / "geodyn_ros"
    shutil.copytree(ROOT / "geodyn_ros", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    kernels = sorted({str(pkg / Path(inspect.getfile(d.py_func)).relative_to(ROOT / "geodyn_ros"))
                      for d in _caching_dispatchers()})
    before = {k: _kc().sources_digest(k, str(pkg)) for k in kernels}
    for edited in ("algorithms/kernels/kinematics.py", "lie.py", "ros/nodes/geodyn_node.py"):
        f = pkg / edited
        f.write_text(f.read_text().replace("\n", "\n# edited\n", 1))
        kc = _kc()
        after = {k: kc.sources_digest(k, str(pkg)) for k in kernels}
        changed = {k for k in kernels if after[k] != before[k]}
        assert changed == {k for k in kernels if str(f) in kc.sources(k, str(pkg))}, edited
        assert bool(changed) == (edited != "ros/nodes/geodyn_node.py"), (edited, changed)   # no kernel imports the node
        before = after


REUSE = """
import json, sys
import numpy as np
import geodyn_ros as gd
from numba.core.registry import CPUDispatcher
from geodyn_ros.model.resources import shipped_urdf
model = gd.load_urdf(shipped_urdf())
n = model.n_joints
for _ in range(2):
    gd.inverse_dynamics(model, np.eye(4), np.zeros((4, 6)), np.zeros((5, n)), 2)
    gd.flat_inverse_dynamics(model, np.zeros((7, 3)), np.zeros(5), np.zeros((5, n)), 2)
hits = misses = 0
for name, m in list(sys.modules.items()):
    if name.startswith("geodyn_ros"):
        for v in list(vars(m).values()):
            if isinstance(v, CPUDispatcher):
                hits += sum(v.stats.cache_hits.values())
                misses += sum(v.stats.cache_misses.values())
print(json.dumps({"hits": hits, "misses": misses}))
"""


def test_an_unchanged_tree_reuses_the_cache():
    """Two fresh processes on the real package: the second compiles nothing (the first may, if
    the cache was cold or stale)."""
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", REUSE], capture_output=True, text=True, timeout=900, cwd=ROOT)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[1]["misses"] == 0 and runs[1]["hits"] > 0, runs


ENTRY = """
import json, sys
sys.path.insert(0, {root!r})
import geodyn_ros_entry
cached = geodyn_ros_entry._kernels_cached()
print(json.dumps({{"cached": cached, "imported": sorted(m for m in sys.modules
                                                       if m.split(".")[0] in ("numba", "geodyn_ros"))}}))
"""


def test_the_console_entry_counts_a_stale_index_as_not_cached(tmp_path, monkeypatch):
    """``geodyn_ros_entry._kernels_cached`` (whether a start prints "compiling the dynamics kernels,
    first start only") on the real package, in a fresh process with ``NUMBA_CACHE_DIR`` in
    ``tmp_path``: no index, then an index of ``lie.rotation_to_wxyz`` carrying the stamp of other
    sources (as after an update), then one carrying the current stamp; numba and the package are
    never imported (the entry must stay fast)."""
    import pickle

    from geodyn_ros.lie import rotation_to_wxyz
    kc = _kc()
    lie = str(ROOT / "geodyn_ros" / "lie.py")
    line = rotation_to_wxyz.py_func.__code__.co_firstlineno
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    env = dict(os.environ)
    where = Path(kc.cache_dir(str(ROOT / "geodyn_ros")))
    index = where / f"lie.rotation_to_wxyz-{line}.py{sys.version_info[0]}{sys.version_info[1]}{sys.abiflags}.nbi"

    def entry():
        out = subprocess.run([sys.executable, "-c", ENTRY.format(root=str(ROOT))], capture_output=True, text=True,
                             timeout=60, env=env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert got["imported"] == [], got["imported"]
        return got["cached"]

    assert entry() is False
    where.mkdir(parents=True)
    for stamp, cached in ((b"\x01" * 32, False), (kc.sources_digest(lie, str(ROOT / "geodyn_ros")), True)):
        index.write_bytes(pickle.dumps("0.0") + pickle.dumps(((kc._TAG, stamp), {})))
        assert entry() is cached, stamp
