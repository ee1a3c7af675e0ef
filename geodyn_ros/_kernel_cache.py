"""Numba's on-disk kernel cache, invalidated by a change in *any* compiled module of the package.

Every kernel is compiled with ``cache=True``. Numba keys a cached kernel on a hash of the one
source file that defines it, but a kernel's machine code also contains the compiled functions
it calls from *other* files (numba compiles callees into the caller; ``inline="always"`` makes
that explicit). So after an edit of, say, ``lie.rotation_to_wxyz``, a kernel of
``ros/raw_outputs.py`` that calls it would keep loading its cached code, with the old callee
inside: a silent wrong answer after ``git pull`` in a source checkout or an editable install
(``pip install -e``, ``colcon build --symlink-install``). A regular ``pip install`` rewrites every
file and is not affected.

:func:`install` (called first thing by ``geodyn_ros/__init__``, before any kernel is defined)
puts locators in front of numba's own that claim only the files of this package and stamp each
cached kernel with its file's hash **and** :func:`package_stamp`, a SHA-256 of every module of
the package that uses numba. Any change in one of them recompiles every kernel of the package on
next use (about a minute; ``python -m geodyn_ros.warmup`` does it ahead of time); files outside
the package keep numba's behaviour. The cache directories are numba's (``__pycache__`` beside the
module, ``NUMBA_CACHE_DIR`` when set, else numba's per-user directory). If numba's (private)
locator API ever changes, :func:`install` leaves numba's defaults in place and says so once.
"""
from __future__ import annotations

import functools
import hashlib
import os
import warnings

__all__ = ["install", "package_stamp"]

_ROOT = os.path.dirname(os.path.abspath(__file__))
_MARKERS = (b"numba", b"njit")


@functools.lru_cache(maxsize=None)
def package_stamp(root: str = _ROOT) -> bytes:
    """SHA-256 over (relative path, content hash) of every ``.py`` file below ``root`` that
    mentions numba, in path order: computed once per process (the sources this process
    compiles from)."""
    h = hashlib.sha256()
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                data = f.read()
            if any(m in data for m in _MARKERS):
                h.update(os.path.relpath(p, root).encode() + b"\0" + hashlib.sha256(data).digest())
    return h.digest()


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), root]) == root
    except ValueError:          # another drive (Windows)
        return False


def _package_locator(base, root: str):
    """A subclass of numba locator ``base`` for the files below ``root``, stamped with
    :func:`package_stamp` besides the file's own hash."""

    class PackageLocator(base):
        def get_source_stamp(self):
            return (super().get_source_stamp(), package_stamp(root))

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _inside(py_file, root):
                return None
            return super().from_function(py_func, py_file)

    PackageLocator.__name__ = PackageLocator.__qualname__ = f"GeodynPackage{base.__name__}"
    return PackageLocator


def install(root: str = _ROOT) -> bool:
    """Put the package's locators in front of numba's (once per ``root``); True if they are in
    place. Kernels defined before this call keep numba's locators."""
    try:
        from numba.core import caching
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        bases = [getattr(caching, n, None) or getattr(caching, "_" + n)
                 for n in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")]
        classes = impl._locator_classes
    except (ImportError, AttributeError) as exc:      # pragma: no cover (another numba)
        warnings.warn(f"geodyn_ros: numba's cache locators not found ({exc}); after editing a compiled "
                      "module, delete the package's __pycache__ folders", RuntimeWarning, stacklevel=2)
        return False
    if any(getattr(c, "_geodyn_root", None) == root for c in classes):
        return True
    mine = [_package_locator(b, root) for b in bases]
    for c in mine:
        c._geodyn_root = root
    classes[:0] = mine
    return True
