"""Import a test module of another folder of the suite by its name (``test_ros_hostile``,
``test_layers``), whichever folder it lives in and whether or not pytest has collected it yet.

pytest puts only the folder of each collected test file on ``sys.path`` (``prepend`` import
mode), so a plain ``from test_layers import GRAPH`` in another folder works only when that folder
happened to be collected first; run alone, it failed."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["test_module"]

_ROOT = Path(__file__).resolve().parent


def test_module(name: str):
    """The module ``name`` of the suite (the one file ``test/**/<name>.py``), imported once."""
    if name in sys.modules:
        return sys.modules[name]
    found = sorted(_ROOT.rglob(f"{name}.py"))
    if len(found) != 1:
        raise ImportError(f"{name}: expected one test/**/{name}.py, found {[str(p) for p in found]}")
    spec = importlib.util.spec_from_file_location(name, found[0])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


test_module.__test__ = False   # a helper, not a test (its name starts with 'test')
