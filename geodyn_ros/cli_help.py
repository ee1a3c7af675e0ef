"""The ``--help`` text of every executable, kept as data so that ``--help`` answers at once.

Importing a node or a loop loads rclpy and the compiled kernels (several seconds, more on a busy
machine), which ``--help`` does not need. So the texts of every executable of
:data:`geodyn_ros.ros.common.interfaces.EXECUTABLES` are generated from the executables
themselves (a node: :func:`~geodyn_ros.ros.common.interfaces.help_text` of its ``PARAMETERS``; a
tool: its argparse help, formatted 100 columns wide) into ``geodyn_ros/cli_help.json``, which the
console-script shims (``geodyn_ros_entry``) print without importing the package.

``test/package/test_cli_help.py`` fails when the committed file differs from what the code
generates; regenerate it with::

    python -m geodyn_ros.cli_help --write
"""
from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
from pathlib import Path

__all__ = ["HELP_FILE", "WIDTH", "generate", "main"]

#: where the shims read the texts (package data, installed with the package)
HELP_FILE = Path(__file__).with_name("cli_help.json")
#: the width argparse formats the tools' help to (``COLUMNS``), whatever the terminal
WIDTH = 100


def _argparse_help(module) -> str:
    """``module.main(["--help"])``'s output, formatted :data:`WIDTH` columns wide."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            try:
                module.main(["--help"])
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise RuntimeError(f"{module.__name__}: --help exited {exc.code}") from None
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue().rstrip("\n")


def generate() -> dict:
    """``{executable: help text}`` of every executable, from the executables' own code."""
    from .ros.common.interfaces import EXECUTABLES, help_text
    texts = {}
    for e in EXECUTABLES:
        module = importlib.import_module(e.module)
        texts[e.name] = help_text(e.name, getattr(module, "PARAMETERS", None)) if e.is_node else _argparse_help(module)
    return texts


def main(argv=None) -> int:
    """``python -m geodyn_ros.cli_help [--write]``: print where the texts differ from the code, or
    (``--write``) rewrite :data:`HELP_FILE`. Exit 1 if they differ and were not written."""
    argv = sys.argv[1:] if argv is None else argv
    texts = generate()
    if "--write" in argv:
        HELP_FILE.write_text(json.dumps(texts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {HELP_FILE} ({len(texts)} executables)")
        return 0
    stored = json.loads(HELP_FILE.read_text(encoding="utf-8")) if HELP_FILE.is_file() else {}
    stale = sorted(n for n in texts.keys() | stored.keys() if texts.get(n) != stored.get(n))
    if stale:
        print(f"{HELP_FILE.name}: stale for {', '.join(stale)}; run python -m geodyn_ros.cli_help --write")
        return 1
    print(f"{HELP_FILE.name}: up to date ({len(texts)} executables)")
    return 0


if __name__ == "__main__":   # pragma: no cover
    raise SystemExit(main())
