"""A ``ROS_DOMAIN_ID`` of this test process's own, distinct from its sibling xdist workers'.

``base + 1 + index`` with ``index`` in ``[0, 100)``. Under ``pytest -n N`` the workers share the
controller's pid (their parent), so ``index = (ppid % (100 // N)) * N + worker`` differs between
them by construction; a pid-derived id alone let two workers meet on one domain one run in a
hundred, and a process of one could then answer the other's test (CI once saw two stray
subscribers of a root topic). Outside xdist: ``pid % 100``. Another pytest session running
beside this one may still share a domain by chance (1 in 100 // N per worker).
"""
from __future__ import annotations

import os


def worker_domain(base: int = 0) -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if worker.startswith("gw") and worker[2:].isdigit() and 0 < count <= 100:
        index = ((os.getppid() % (100 // count)) * count + int(worker[2:])) % 100
    else:
        index = os.getpid() % 100
    return base + 1 + index
