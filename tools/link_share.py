"""Give an editable install of geodyn_ros its ``share/`` files, as ``pip install .`` does (issue 52.3).

``make venv`` installs the package editable (step 3), and an editable install does not install
``setup.py``'s ``data_files``: the venv had no ``share/geodyn_ros`` and no ament index entry, so
``ament_index_python`` (``get_package_share_directory("geodyn_ros")``, ``FindPackageShare`` of
the launch files, ``python -m geodyn_ros2 pkg prefix geodyn_ros``) could not find the package.
This script makes, under the venv prefix, the layout ``pip install .`` makes, each entry a
symbolic link into the clone (so an edit of a launch, URDF or config file takes effect at once,
as the editable install does for the code):

* ``share/ament_index/resource_index/packages/geodyn_ros`` (the index entry, an empty file as
  ``resource/geodyn_ros``);
* ``share/geodyn_ros/package.xml``, ``share/geodyn_ros/{launch,urdf,config}`` (the folders of
  ``setup.py``'s ``data_files``, which are read from it).

Run with the venv's Python from anywhere (``make venv`` does, in its step 3)::

    .venv/bin/python tools/link_share.py            # into this interpreter's prefix (the venv)

Idempotent. A ``share/geodyn_ros`` that a ``pip install .`` made (real files, not links into
this clone) is left alone, in one line; a link into another clone is replaced. ``make clean``
removes the venv and the links with it.
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "geodyn_ros"


def data_folders() -> list[str]:
    """The top folders of the clone that ``setup.py``'s ``data_files`` install under
    ``share/geodyn_ros`` (``launch``, ``urdf``, ``config``), read from ``setup.py`` itself."""
    import setuptools

    captured = {}
    real = setuptools.setup
    setuptools.setup = lambda **kw: captured.update(kw)
    try:
        runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    finally:
        setuptools.setup = real
    folders = []
    for dest, _files in captured["data_files"]:
        parts = Path(dest).parts
        if parts[:2] == ("share", PACKAGE) and len(parts) >= 3 and parts[2] not in folders:
            folders.append(parts[2])
    return folders


def _link(path: Path, target: Path) -> str:
    """Make ``path`` a link to ``target``; what was done, in a word."""
    if path.is_symlink():
        if Path(os.readlink(path)) == target:
            return "kept"
        path.unlink()
    elif path.exists():
        return "left"          # a real file or folder (pip install .): not ours to replace
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return "linked"


def link_share(prefix: Path) -> list[tuple[str, str]]:
    """Make the links under ``prefix``; ``[(path relative to prefix, "linked" | "kept" | "left")]``."""
    done = []
    index = prefix / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE
    done.append((str(index.relative_to(prefix)), _link(index, ROOT / "resource" / PACKAGE)))
    share = prefix / "share" / PACKAGE
    if share.exists() and not share.is_symlink() and (share / "package.xml").is_file() \
            and not (share / "package.xml").is_symlink():
        return done + [(str(share.relative_to(prefix)), "left")]
    for name in ["package.xml"] + data_folders():
        done.append((f"share/{PACKAGE}/{name}", _link(share / name, ROOT / name)))
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", type=Path, default=Path(sys.prefix),
                    help="the venv (default: this interpreter's, %(default)s)")
    args = ap.parse_args(argv)
    prefix = args.prefix.resolve()
    if prefix == Path(sys.base_prefix).resolve() and args.prefix == Path(sys.prefix):
        print(f"share: {prefix} is not a venv; run this with the venv's python", file=sys.stderr)
        return 1
    done = link_share(prefix)
    left = [p for p, what in done if what == "left"]
    print(f"share: {PACKAGE}'s launch, URDF and config files linked into {prefix}/share "
          f"(the ament index finds the package)" + (f"; left as installed: {', '.join(left)}" if left else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
