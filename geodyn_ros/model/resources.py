"""Locate data files shipped with geodyn_ros (URDF models).

The files live in ``urdf/`` at the top of the repository and are installed by ``setup.py`` to
``share/geodyn_ros/urdf``. :func:`shipped_urdf` finds them in, in this order:

1. a source checkout or editable install: ``<repo>/urdf/`` next to the ``geodyn_ros`` package
   directory;
2. the ament index (``ament_index_python``, when importable and the package is installed in a
   sourced ROS 2 workspace): ``<share>/geodyn_ros/urdf/``;
3. a plain ``pip install`` (data_files under the interpreter prefix):
   ``<sys.prefix>/share/geodyn_ros/urdf/``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["shipped_urdf", "urdf_search_dirs"]

PACKAGE = "geodyn_ros"


def urdf_search_dirs() -> list[Path]:
    """Candidate directories of the shipped URDF files, in search order (existing or not)."""
    dirs = [Path(__file__).resolve().parents[2] / "urdf"]   # the source tree: geodyn_ros/model/ -> repo
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError:
        pass
    else:
        try:
            dirs.append(Path(get_package_share_directory(PACKAGE)) / "urdf")
        except Exception:  # PackageNotFoundError or a broken AMENT_PREFIX_PATH: not installed there
            pass
    dirs.append(Path(sys.prefix) / "share" / PACKAGE / "urdf")
    return dirs


def shipped_urdf(name: str = "aerial_manipulator.urdf") -> Path:
    """Absolute path of a URDF (or xacro) model shipped with geodyn_ros.

    Parameters
    ----------
    name : str
        File name inside the package's ``urdf/`` directory, e.g. ``"aerial_manipulator.urdf"``.
        Without a suffix, ``.urdf`` and then ``.urdf.xacro`` / ``.xacro`` are tried.

    Returns
    -------
    pathlib.Path
        The first existing match in :func:`urdf_search_dirs`.

    Raises
    ------
    ValueError
        ``name`` is empty or contains a directory part.
    FileNotFoundError
        No such file in any search directory; the message lists the directories searched.

    Example
    -------
    >>> import geodyn_ros as gd
    >>> model = gd.load_urdf(shipped_urdf("aerial_manipulator.urdf"))  # doctest: +SKIP
    """
    if not isinstance(name, str) or not name or os.path.basename(name) != name or name in (".", ".."):
        raise ValueError(f"name must be a plain file name such as 'aerial_manipulator.urdf', got {name!r}")
    candidates = [name] if Path(name).suffix else [name + ".urdf", name + ".urdf.xacro", name + ".xacro"]
    dirs = urdf_search_dirs()
    for d in dirs:
        for c in candidates:
            path = d / c
            if path.is_file():
                return path
    searched = "\n  ".join(str(d) for d in dirs)
    raise FileNotFoundError(
        f"shipped URDF {name!r} not found; searched:\n  {searched}\n"
        "Run from a source checkout, `pip install -e .`, or source the ROS 2 workspace "
        "where geodyn_ros is installed."
    )
