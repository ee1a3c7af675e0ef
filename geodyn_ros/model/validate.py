"""One validation vocabulary for arguments and files (layer 1: numpy only, imports nothing of ours).

Every layer above the model (``vehicle``, ``control``, ``planning``) refuses bad input with one
``ValueError`` line, in one of two forms:

* **an argument** (a gain, a rotor constant, a weight, a limit): ``"<name>: <problem>, got <value>"``,
  ``name`` the argument or dataclass field (:func:`require_finite`, :func:`require_positive`);
* **a file** (a vehicle file, a mission file): ``"<file>: <key>: <problem>; <fix>"``, ``key`` the
  path of the offending key inside the file (``waypoints[2].com``, ``rotors[0].axis``), ``fix``
  what to write instead (:func:`file_error`, :class:`FileKeys` for a loader; :func:`read_yaml`
  for the file itself).

doc/reference/vehicle_file.md and doc/tutorials/plan_mission.md list the refusals of each file.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np

__all__ = ["as_floats", "require_finite", "require_positive", "file_error", "FileKeys", "read_yaml", "short_repr"]


def as_floats(name, value, problem="expected real numbers") -> np.ndarray:
    """``value`` as a new float array (0-d for a scalar), any shape; ValueError ``"<name>: <problem>,
    got <value>"`` for what is not real numbers: strings, bytes, bools and None too (numpy would
    read ``"1"`` or ``True`` as numbers), and ragged lists."""
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name}: {problem}, got {value!r}")
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {problem}, got {value!r}") from None


def _out(a):
    return float(a) if a.ndim == 0 else a


def _is_scalar(value) -> bool:
    try:
        return isinstance(value, (str, bytes)) or np.ndim(value) == 0
    except ValueError:          # a ragged list: not a scalar (as_floats refuses it)
        return False


def require_finite(name, value, *, scalar=False, problem=None):
    """``value`` (a real number, or an array of them unless ``scalar``) as a float (scalar) or a
    new float array, every entry finite; else ValueError ``"<name>: <problem>, got <value>"``
    (``problem`` default ``expected a finite number`` / ``expected finite numbers``)."""
    one = scalar or _is_scalar(value)
    problem = problem or ("expected a finite number" if one else "expected finite numbers")
    a = as_floats(name, value, problem)
    if (scalar and a.ndim != 0) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: {problem}, got {value!r}")
    return _out(a)


def require_positive(name, value, *, allow_zero=False, allow_inf=False, scalar=False, problem=None):
    """``value`` (a real number, or an array of them unless ``scalar``) as a float (scalar) or a
    new float array, every entry ``> 0`` (``>= 0`` with ``allow_zero``), finite unless
    ``allow_inf`` (``+inf``: "no limit"; NaN is always refused); else ValueError
    ``"<name>: <problem>, got <value>"`` (``problem`` default ``expected a finite positive number``
    and the like)."""
    if problem is None:
        one = scalar or _is_scalar(value)
        sign = "non-negative" if allow_zero else "positive"
        problem = (f"expected {'a ' if one else ''}{'' if allow_inf else 'finite '}{sign} "
                   f"{'number' if one else 'numbers'}")
    a = as_floats(name, value, problem)
    ok = (a >= 0 if allow_zero else a > 0) & (~np.isnan(a) if allow_inf else np.isfinite(a))
    if (scalar and a.ndim != 0) or not np.all(ok):
        raise ValueError(f"{name}: {problem}, got {value!r}")
    return _out(a)


def short_repr(v, limit=60) -> str:
    """``repr(v)`` cut to ``limit`` characters (a refusal stays one readable line)."""
    s = repr(v)
    return s if len(s) <= limit else s[:limit - 3] + "..."


def file_error(where, key, problem, fix=None) -> ValueError:
    """The refusal of a bad file: ``ValueError("<where>: <key>: <problem>; <fix>")`` (returned, to
    ``raise``). ``where`` the file (or a stand-in such as ``"mission"`` for a parsed document),
    ``key`` the key path (empty: the document itself), ``fix`` what to write instead (None: the
    problem says it)."""
    head = f"{where}: {key}: " if key else f"{where}: "
    return ValueError(head + problem + (f"; {fix}" if fix else ""))


class FileKeys:
    """The checks of one file's keys, each refusing with :func:`file_error` naming ``where``.

    ``fail(key, problem, fix)`` raises; ``keys`` refuses unknown keys (with a did-you-mean);
    ``number``, ``vec`` and ``string`` check and convert one value."""

    def __init__(self, where):
        self.where = str(where)

    def fail(self, key, problem, fix=None):
        raise file_error(self.where, key, problem, fix)

    def mapping(self, key, d, fix="write it as key: value lines"):
        if not isinstance(d, dict):
            self.fail(key, f"expected a mapping, got {short_repr(d)}", fix)
        return d

    def keys(self, key, d, allowed):
        """Refuse a ``d`` that is not a mapping or has a key not in ``allowed``."""
        self.mapping(key, d)
        for k in d:
            if k not in allowed:
                m = difflib.get_close_matches(str(k), [str(a) for a in allowed], n=1)
                hint = f"did you mean {m[0]!r}?" if m else f"the keys are {', '.join(map(str, allowed))}"
                self.fail(f"{key}.{k}" if key else str(k), "unknown key", hint)

    def require(self, key, d, names, fix=None):
        """Refuse a mapping ``d`` (at ``key``) that misses one of ``names``."""
        for k in names:
            if k not in d:
                self.fail(f"{key}.{k}" if key else k, "missing", fix or f"give {k}")

    def number(self, key, v, *, allow_zero=False, positive=True, fix="give a number"):
        """A finite real number (a YAML int or float, not a bool or string); ``positive``: ``> 0``
        (``>= 0`` with ``allow_zero``)."""
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            self.fail(key, f"expected a finite number, got {short_repr(v)}", fix)
        if positive and (v < 0 or (v == 0 and not allow_zero)):
            self.fail(key, f"{v!r} is {'negative' if v < 0 else 'zero'}",
                      f"give a {'non-negative' if allow_zero else 'positive'} value")
        return float(v)

    def vec(self, key, v, n, *, what=None, fix=None):
        """A list of ``n`` finite numbers as an (n,) float array (``what``: how the list reads)."""
        what = what or f"{n} numbers"
        if not isinstance(v, (list, tuple)) or len(v) != n:
            self.fail(key, f"expected {what}, got {short_repr(v)}", fix or f"give a list of {n} numbers")
        return np.array([self.number(f"{key}[{i}]", x, positive=False) for i, x in enumerate(v)])

    def string(self, key, v, fix="give a name"):
        if not isinstance(v, str) or not v:
            self.fail(key, f"expected a non-empty string, got {short_repr(v)}", fix)
        return v


def read_yaml(path, what):
    """The parsed YAML of the file ``path``; ValueError ``"<what>: cannot read <path>: <reason>"``
    or ``"<what>: <path> is not valid YAML (<first line of the parser's message>)"``."""
    import yaml
    p = Path(os.fspath(path))
    try:
        with open(p, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {p}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{what}: {p} is not valid YAML ({str(exc).splitlines()[0]})") from None
