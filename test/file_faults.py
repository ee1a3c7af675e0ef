"""Real file faults for the ``--record`` tests: a FIFO without a reader, a symlink to ``/dev/full``,
and a disk that fills while flying.

The full disk is the kernel's own write error, not a mock: the command runs in a child process
whose file size limit (``RLIMIT_FSIZE``) is set to ``limit`` bytes, with ``SIGXFSZ`` ignored, so
the write that would cross it fails with ``EFBIG`` ("File too large"), as a full disk fails with
``ENOSPC``: the same ``OSError`` from the same ``write`` (root is bound by it too). A FIFO is
tested in a child process as well, with a timeout: a writer that opens it waits for a reader
forever (the defect), and the test must fail, not hang.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["run_module", "fifo", "dev_full_link"]

# the child: ignore SIGXFSZ (else the crossing write kills it), cap the file size, run the module
_CHILD = ("import resource, runpy, signal, sys\n"
          "limit = int(sys.argv[1])\n"
          "if limit:\n"
          "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
          "    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
          "sys.argv = [sys.argv[2]] + sys.argv[3:]\n"
          "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n")


def run_module(module: str, argv, *, cwd, limit: int = 0, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """``python -m module argv...`` in ``cwd`` (files it writes limited to ``limit`` bytes; 0: no
    limit); the completed process (text output). ``subprocess.TimeoutExpired`` after ``timeout``."""
    return subprocess.run([sys.executable, "-c", _CHILD, str(int(limit)), module, *map(str, argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ))


def fifo(directory, name: str = "flight.mcap") -> Path:
    """A FIFO (no reader) at ``directory / name``."""
    p = Path(directory) / name
    os.mkfifo(p)
    return p


def dev_full_link(directory, name: str = "full.mcap") -> Path:
    """A symlink ``directory / name`` to ``/dev/full`` (every write fails with ENOSPC)."""
    p = Path(directory) / name
    p.symlink_to("/dev/full")
    return p
