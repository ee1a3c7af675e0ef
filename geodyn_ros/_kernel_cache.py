"""Numba's on-disk kernel cache keyed on every source file that goes into a kernel.

Every kernel is compiled with ``cache=True``. Numba stamps a cached kernel with a hash of the one
file that defines it, but the kernel's machine code also contains what it took from *other*
files: the compiled functions it calls (numba compiles callees into the caller; ``inline=
"always"`` makes that explicit) and the module constants it reads (frozen at compile time). After
an edit of, say, ``lie.rotation_to_wxyz``, a kernel of ``ros/raw_outputs.py`` that calls it would
load its cached code with the old callee inside: a silent wrong answer after ``git pull`` in a
source checkout or an editable install (``pip install -e``, ``colcon build --symlink-install``).

:func:`install` (called first thing by ``geodyn_ros/__init__``, before any kernel is defined)
puts three locators in front of numba's own. They claim only the files of this package and stamp
each cached kernel with :func:`sources_digest` of its file: a SHA-256 over the contents of that
file and of every module of the package it imports, transitively (:func:`sources`). A kernel
whose stamp differs is recompiled, and its index rewritten in place; a change in a module that
no kernel module imports (a node, an example) recompiles nothing. Kernels of other packages keep
numba's locators. The cache directories stay numba's: ``NUMBA_CACHE_DIR`` when set, else
``__pycache__`` beside the module when writable, else numba's per-user directory (read-only
installs); :func:`cache_dir` names the one numba uses.

:func:`kernels_cached` answers "will the next start compile?" without importing numba (the
console entry's first-start message): every index of the package's kernels in its cache directory
must carry the current stamp. This module imports nothing of the package and, outside
:func:`install`, nothing of numba.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import warnings

__all__ = ["install", "sources", "sources_digest", "cache_dir", "index_files", "kernels_cached"]

_ROOT = os.path.dirname(os.path.abspath(__file__))
_TAG = "geodyn_ros-sources-v1"    # first element of the stamp: never equal to numba's own (a digest)
_INDEX = re.compile(r"^(?P<mod>[^.]+)\.(?P<qual>.+)-(?P<line>\d+)$")
_scans: dict = {}       # path -> (sha256 of the bytes, their text): each file read once per process
_imported: dict = {}    # (root, path) -> files of the package it imports
_digests: dict = {}     # (root, path) -> sources_digest
_warned = []


def _scan(path: str):
    got = _scans.get(path)
    if got is None:
        with open(path, "rb") as f:
            data = f.read()
        got = _scans[path] = (hashlib.sha256(data).digest(), data.decode("utf-8", "replace"))
    return got


def _module_file(root: str, parts) -> str | None:
    """The file of module ``parts`` (relative to the package at ``root``), or None if not ours."""
    p = os.path.join(root, *parts)
    if os.path.isfile(p + ".py"):
        return p + ".py"
    init = os.path.join(p, "__init__.py")
    return init if os.path.isfile(init) else None


def _patterns(pkg: str):
    name = re.escape(pkg)
    return (re.compile(r"^[ \t]*from[ \t]+(\.+[\w.]*|" + name + r"(?:\.[\w.]+)?)[ \t]+import[ \t]+"
                       r"(\([^)]*\)|[^\n]*(?:\\\n[^\n]*)*)", re.M),
            re.compile(r"^[ \t]*import[ \t]+(" + name + r"\b[^\n]*)", re.M))


def _imports(path: str, root: str) -> set:
    """Files of the package at ``root`` that ``path`` imports (module and function level;
    a line-based scan, checked against ``ast`` in test/package/test_kernel_cache.py)."""
    got = _imported.get((root, path))
    if got is not None:
        return got
    pkg = os.path.basename(root)
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    here = rel[:-1]                      # the package the module is in (for __init__: itself)
    frm, imp = _patterns(pkg)
    text = _scan(path)[1]
    out = set()
    for m in frm.finditer(text):
        mod, names = m.group(1), m.group(2)
        if mod.startswith("."):
            level = len(mod) - len(mod.lstrip("."))
            if level - 1 > len(here):
                continue
            target = here[:len(here) - (level - 1)] + [p for p in mod.lstrip(".").split(".") if p]
        else:
            target = mod.split(".")[1:]
        found = _module_file(root, target)
        if found and not found.endswith("__init__.py"):     # "from .common import f, g": a module
            out.add(found)
            continue
        for item in re.sub(r"#[^\n]*", "", names).strip("()").replace("\\\n", " ").split(","):
            name = item.split(" as ")[0].strip()
            sub = _module_file(root, target + [name]) if name and name != "*" else None
            if sub or found:                                 # "from . import common" or a package's name
                out.add(sub or found)
    for m in imp.finditer(text):
        for item in re.sub(r"#[^\n]*", "", m.group(1)).split(","):
            dotted = item.split(" as ")[0].strip().split(".")
            if dotted[0] == pkg:
                found = _module_file(root, dotted[1:])
                if found:
                    out.add(found)
    _imported[(root, path)] = out
    return out


def sources(path: str, root: str = _ROOT) -> list:
    """``path`` and every file of the package at ``root`` it imports, transitively, sorted."""
    seen, todo = {path}, [path]
    while todo:
        for f in _imports(todo.pop(), root):
            if f not in seen:
                seen.add(f)
                todo.append(f)
    return sorted(seen)


def sources_digest(path: str, root: str = _ROOT) -> bytes:
    """SHA-256 over (path relative to ``root``, SHA-256 of the contents) of :func:`sources`:
    what a kernel defined in ``path`` may have compiled in. Once per file and process."""
    key = (root, path)
    got = _digests.get(key)
    if got is None:
        h = hashlib.sha256()
        for f in sources(path, root):
            h.update(os.path.relpath(f, root).encode() + b"\0" + _scan(f)[0])
        got = _digests[key] = h.digest()
    return got


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), root]) == root
    except ValueError:          # another drive (Windows)
        return False


def _package_locator(base, root: str):
    """A subclass of numba locator ``base`` for the files below ``root``, stamped with
    :func:`sources_digest` instead of the hash of the one file."""

    class PackageLocator(base):
        _geodyn_root = root

        def get_source_stamp(self):
            return (_TAG, sources_digest(self._geodyn_file, root))

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _inside(py_file, root):
                return None
            self = super().from_function(py_func, py_file)
            if self is not None:
                self._geodyn_file = os.path.abspath(py_file)
            return self

    PackageLocator.__name__ = PackageLocator.__qualname__ = f"GeodynPackage{base.__name__}"
    return PackageLocator


def _warn_once(msg: str) -> None:
    if not _warned:
        _warned.append(msg)
        warnings.warn(f"geodyn_ros: {msg}: after updating the sources, delete the package's __pycache__ "
                      "folders (or NUMBA_CACHE_DIR), or a kernel may keep an edited callee's old code",
                      RuntimeWarning, stacklevel=3)


def install(root: str = _ROOT) -> bool:
    """Put the package's locators in front of numba's (once per ``root``); True if they are in
    place. Kernels defined before this call keep numba's locators. The import of numba is not
    guarded (an interrupted import raises to the caller); a numba without this locator API, or
    ``NUMBA_CACHE_LOCATOR_CLASSES`` overriding every package's locators, is said once
    (``RuntimeWarning``) and leaves numba's defaults."""
    from numba.core import caching, config
    try:
        classes = caching.CacheImpl._locator_classes
        bases = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator)
        problem = None if isinstance(classes, list) else f"CacheImpl._locator_classes is a {type(classes).__name__}"
    except AttributeError as exc:
        problem = str(exc)
    if problem:
        _warn_once(f"numba {getattr(sys.modules.get('numba'), '__version__', '?')}'s cache locator API is not the "
                   f"one expected (numba.core.caching: {problem}), so a cached kernel is keyed on its own file only")
        return False
    if getattr(config, "CACHE_LOCATOR_CLASSES", None):
        _warn_once("NUMBA_CACHE_LOCATOR_CLASSES is set, so numba keys a cached kernel with those locators "
                   "only")
        return False
    if any(getattr(c, "_geodyn_root", None) == root for c in classes):
        return True
    classes[:0] = [_package_locator(b, root) for b in bases]
    return True


def _user_cache_root() -> str:
    """numba's per-user cache directory (``numba.misc.appdirs``, appname ``numba``)."""
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser("~")), "numba", "Cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/numba")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "numba")


def cache_dir(folder: str) -> str:
    """The directory numba caches the kernels of the modules in ``folder`` in (numba's rule:
    ``NUMBA_CACHE_DIR``, else a writable ``__pycache__``, else the per-user directory; the last
    and the first in a subfolder named after ``folder``)."""
    folder = os.path.abspath(folder)
    sub = os.path.basename(folder) + "_" + hashlib.sha1(folder.encode()).hexdigest()
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return os.path.join(env, sub)
    tree = os.path.join(folder, "__pycache__")
    if os.access(tree if os.path.isdir(tree) else folder, os.W_OK):
        return tree
    return os.path.join(_user_cache_root(), sub)


def _first_lines(path: str) -> dict:
    """``{function name: {first line}}`` of every function defined in ``path``: the line numba
    names an index by (``co_firstlineno``: the first decorator's line, else the ``def``)."""
    import ast

    key = ("first", path)
    got = _imported.get(key)
    if got is None:
        got = {}
        try:
            tree = ast.parse(_scan(path)[1])
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                got.setdefault(node.name, set()).add(first)
        _imported[key] = got
    return got


def _defines(path: str, qualname: str, line: int) -> bool:
    """True if line ``line`` of ``path`` starts the definition of function ``qualname``
    (numba names an index by the function's first line, its first decorator): False for the
    index of a kernel since moved or removed, which no run reads again, including one whose old
    first line now falls on the ``def`` line below the decorator."""
    return line in _first_lines(path).get(qualname.rsplit(".", 1)[-1], ())


def index_files(root: str = _ROOT):
    """(index path, module path) of every numba index of a kernel of the package at ``root``
    for this Python, in the cache directory numba would use."""
    suffix = ".py%d%d%s.nbi" % (sys.version_info[0], sys.version_info[1], getattr(sys, "abiflags", ""))
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        modules = {f[:-3] for f in files if f.endswith(".py")}
        if not modules:
            continue
        where = cache_dir(folder)
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        for name in names:
            m = _INDEX.match(name[:-len(suffix)]) if name.endswith(suffix) else None
            if m and m["mod"] in modules:
                path = os.path.join(folder, m["mod"] + ".py")
                if _defines(path, m["qual"], int(m["line"])):
                    yield os.path.join(where, name), path


def kernels_cached(root: str = _ROOT) -> bool:
    """True if numba's cache holds indexes of the package's kernels and every one carries the
    stamp of the current sources (:func:`sources_digest`); False before the first compilation
    and after any change of what a cached kernel compiled in. Reads files only (no numba)."""
    found = False
    for index, path in index_files(root):
        found = True
        try:
            with open(index, "rb") as f:
                if sources_digest(path, root) not in f.read():
                    return False
        except OSError:
            return False
    return found
