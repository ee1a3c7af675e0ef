"""One validation vocabulary for arguments and files (layer 1: numpy only, imports nothing of ours).

Every layer above the model (``vehicle``, ``control``, ``planning``) refuses bad input with one
``ValueError`` line, in one of two forms:

* **an argument** (a gain, a rotor constant, a weight, a limit): ``"<name>: <problem>, got <value>"``,
  ``name`` the argument or dataclass field (:func:`require_finite`, :func:`require_positive`);
* **a file** (a vehicle file, a mission file): ``"<file>: <key>: <problem>; <fix>"``, ``key`` the
  path of the offending key inside the file (``waypoints[2].com``, ``rotors[0].axis``), ``fix``
  what to write instead (:func:`file_error`, :class:`FileKeys` for a loader; :func:`read_yaml`
  for the file itself: ``"<file>: cannot be read (<reason>); <fix>"``, or for a YAML syntax error
  ``"<file>: line L, column C[, in <key path>]: <problem>; <fix>"``).

Every value quoted in a refusal is cut with :func:`clip` (one line, bounded); numbers compared
with a bound are printed with :func:`format_against` (never equal-looking or reversed).
doc/reference/vehicle_file.md and doc/tutorials/plan_mission.md list the refusals of each file.
"""
from __future__ import annotations

import difflib
import math
import os
import re
import stat
from pathlib import Path

import numpy as np

__all__ = ["as_floats", "require_finite", "require_positive", "file_error", "FileKeys", "read_yaml", "short_repr",
           "clip", "format_against", "plural", "file_number", "QUOTE_CHARS", "MAX_FILE_BYTES", "MAX_YAML_NODES",
           "MAX_YAML_DEPTH", "Range"]

QUOTE_CHARS = 200        #: quoted input (a value, a name list, a path) is cut to this many characters
#: [bytes] the largest file :func:`read_yaml` reads: the bound of ``geodyn_reference``'s mission
#: messages (``MAX_MISSION_BYTES``). A mission of 10,000 waypoints (the most a mission may have) is
#: 2.7 MB for a 6-joint arm and 6.0 MB for a 20-joint one (``yaml.safe_dump`` of 17-digit floats,
#: block style); a vehicle or LQR file is a few kB.
MAX_FILE_BYTES = 8 * 1024 * 1024
#: the most nodes (scalars, lists, mappings; mapping keys count) a YAML document may have with its
#: aliases expanded, counted while it is composed (before any value is built): a 10,000-waypoint
#: mission of a 6-joint arm has 180,000 (18 a waypoint), so 400,000 leaves room for 28 joints or
#: constraints. Composing costs about 0.7 kB a node (measured: 120 MB for 180,000), so this also
#: bounds the loader's memory (about 300 MB); a "billion laughs" file of 1 kB, whose aliases expand
#: to 10^9 values, is refused after composing a few dozen nodes.
MAX_YAML_NODES = 400_000
#: the deepest nesting of lists and mappings: the deepest key of any file of the package is 4
#: levels down (``rotors[0].px4.KM``); 32 leaves room, and stays far below Python's recursion limit
#: (1000 frames; the YAML composer and constructor recurse a few frames a level)
MAX_YAML_DEPTH = 32
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)}   # control characters, escaped


def as_floats(name, value, problem="expected real numbers") -> np.ndarray:
    """``value`` as a new float array (0-d for a scalar), any shape; ValueError ``"<name>: <problem>,
    got <value>"`` for what is not real numbers: strings, bytes, bools and None too (numpy would
    read ``"1"`` or ``True`` as numbers), and ragged lists."""
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name}: {problem}, got {short_repr(value, QUOTE_CHARS)}")
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {problem}, got {short_repr(value, QUOTE_CHARS)}") from None


def file_number(v):
    """``v`` as a float when it is a number of a parsed file (a YAML int or float), else None: a
    bool (YAML ``true``), a string (``"1.5"``, quoted), None, a list are not numbers. An int too large
    for a float is ``inf`` (then refused as not finite, never an OverflowError)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


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
        raise ValueError(f"{name}: {problem}, got {short_repr(value, QUOTE_CHARS)}")
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
        raise ValueError(f"{name}: {problem}, got {short_repr(value, QUOTE_CHARS)}")
    return _out(a)


def clip(text, n: int = QUOTE_CHARS) -> str:
    """``text`` (``str()`` of any object) cut for quoting in a refusal, a log line or a diagnostic:
    control characters (newlines included: one line stays one line) escaped as ``\\xNN``, then at
    most ``n`` characters, followed by ``... (<total> characters)`` when cut (at most ``n + 32``
    characters in all; ``clip(clip(t, n), n + 32) == clip(t, n)``).

    >>> clip("x" * 1_000_000, 4)
    'xxxx... (1000000 characters)'
    """
    text = text if isinstance(text, str) else str(text)
    out = text[:n].translate(_CONTROL)
    if len(text) <= n and len(out) <= n:
        return out
    return f"{out[:n]}... ({len(text)} characters)"


def short_repr(v, limit=60) -> str:
    """``repr(v)`` on one line (numpy's line breaks as spaces), cut with :func:`clip` to ``limit``
    characters (a refusal stays one readable line)."""
    return clip(re.sub(r"\n\s*", " ", repr(v)), limit)


def plural(n, word, words=None) -> str:
    """``"1 number"``, ``"3 numbers"`` (``words`` the plural, default ``word + "s"``)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def format_against(value, bound, digits=4) -> str:
    """``value`` printed for a comparison with ``bound``: at least ``digits`` significant digits,
    more until the printed value is not the printed bound and lies on the same side of it as
    ``value`` (``1.19995`` against ``1.2`` prints ``1.19995``, not ``1.2``); at most 17 (every
    float is then exact)."""
    value, bound = float(value), float(bound)
    for d in range(digits, 18):
        s = f"{value:.{d}g}"
        shown = float(s)
        if value == bound or (s != f"{bound:g}" and (shown < bound) == (value < bound)
                              and (shown > bound) == (value > bound)):
            return s
    return repr(value)


def file_error(where, key, problem, fix=None) -> ValueError:
    """The refusal of a bad file: ``ValueError("<where>: <key>: <problem>; <fix>")`` (returned, to
    ``raise``). ``where`` the file (or a stand-in such as ``"mission"`` for a parsed document; cut
    with :func:`clip`), ``key`` the key path (empty: the document itself), ``fix`` what to write
    instead (None: the problem says it)."""
    where = clip(where)
    head = f"{where}: {key}: " if key else f"{where}: "
    return ValueError(head + problem + (f"; {fix}" if fix else ""))


class Range:
    """A plausibility range of a file's number: ``lo <= x <= hi`` [``unit``], ``why`` the reason
    (said in the refusal), ``fix`` what to do instead (default: give a value in the range)."""

    __slots__ = ("lo", "hi", "unit", "why", "fix")

    def __init__(self, lo, hi, unit, why, fix=None):
        self.lo, self.hi, self.unit, self.why, self.fix = float(lo), float(hi), unit, why, fix

    def __repr__(self):
        return f"Range({self.lo:g}, {self.hi:g}, {self.unit!r})"


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

    def number(self, key, v, *, allow_zero=False, positive=True, fix="give a number", within=None):
        """A finite real number (a YAML int or float, not a bool or string: :func:`file_number`);
        ``positive``: ``> 0`` (``>= 0`` with ``allow_zero``); ``within``: a :class:`Range` it must
        lie in (zero too when ``allow_zero``)."""
        x = file_number(v)
        if x is None or not math.isfinite(x):
            self.fail(key, f"expected a finite number, got {short_repr(v)}", fix)
        if positive and (x < 0 or (x == 0 and not allow_zero)):
            self.fail(key, f"{v!r} is {'negative' if x < 0 else 'zero'}",
                      f"give a {'non-negative' if allow_zero else 'positive'} value")
        if within is not None and not (x == 0 and allow_zero):
            self.within(key, x, within)
        return x

    def within(self, key, x, r):
        """Refuse the number ``x`` at ``key`` outside the :class:`Range` ``r``, with the range and its
        reason."""
        if not r.lo <= x <= r.hi:
            unit = f" {r.unit}" if r.unit else ""
            self.fail(key, f"{format_against(x, r.lo if x < r.lo else r.hi)}{unit} is outside the plausible range "
                      f"[{r.lo:g}, {r.hi:g}]{unit} ({r.why})", r.fix or "give a value in that range (SI units)")
        return x

    def vec(self, key, v, n, *, what=None, fix=None, within=None):
        """A list of ``n`` finite numbers as an (n,) float array (``what``: how the list reads; the
        length is checked before any entry); ``within``: a :class:`Range` of every entry."""
        what = what or f"{n} numbers"
        if not isinstance(v, (list, tuple)) or len(v) != n:
            self.fail(key, f"expected {what}, got {short_repr(v)}", fix or f"give a list of {n} numbers")
        return np.array([self.number(f"{key}[{i}]", x, positive=False, within=within) for i, x in enumerate(v)])

    def string(self, key, v, fix="give a name"):
        if not isinstance(v, str) or not v:
            self.fail(key, f"expected a non-empty string, got {short_repr(v)}", fix)
        return v


def read_yaml(path, what="YAML file", *, fix=None):
    """The parsed YAML document of the file ``path``: the one place the package reads a YAML file
    (vehicle files and the old actuation configs, mission files, LQR weights), so limits on what
    is read (size, aliases, file type) go here.

    ``what`` names the kind of file in the refusals, ValueErrors of one line:

    * ``"<file>: cannot be read (<reason>); <fix>"`` (no such file, a directory, no permission;
      ``fix`` default ``give the path of an existing <what>``); ``"<file>: cannot be read (not
      UTF-8 text: ...); give a <what> (YAML text)"``;
    * ``"<file>: line L, column C, in <key path>: <problem>; <fix>"`` for a YAML syntax error,
      from the parser's mark (1-based), ``<key path>`` the key being read there when the error is
      inside one (``rotors[2].axis``; left out at the top level), ``<problem>`` the parser's.

    **Bounds**, each refused in that form before anything large is allocated:

    * only a regular file is opened: a FIFO, a device, a socket or a directory is refused from its
      ``stat`` (a FIFO is never opened for reading, which would wait for a writer); the file is
      then opened non-blocking and checked again (one swapped in after the ``stat`` is refused too);
    * at most :data:`MAX_FILE_BYTES` bytes (from the ``stat``, and at most that many are read);
    * at most :data:`MAX_YAML_NODES` nodes with the aliases expanded and at most
      :data:`MAX_YAML_DEPTH` levels of nesting, counted while the document is composed (the
      expanded size of an anchored node is kept, so an alias costs one addition: a 1 kB file of
      nested aliases is refused in microseconds); an alias inside the node it names (a recursive
      structure) is refused. Aliases are kept, not refused: an anchor shared by several rotors or
      waypoints is legitimate YAML, and the expanded count bounds what every consumer walks (a
      refusal's quote, numpy's conversion) as if it were written out;
    * a value the YAML constructor cannot build (an integer of more than 4300 digits) is refused at
      its line.
    """
    p = Path(os.fspath(path))
    text = _read_text(p, what, fix or f"give the path of an existing {what}")
    return _parse_yaml(text, p)


#: what a file that is not a regular file is, by its stat mode
_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO, not a regular file"), (stat.S_ISCHR, "a character device, not a regular file"),
                (stat.S_ISBLK, "a block device, not a regular file"), (stat.S_ISSOCK, "a socket, not a regular file"))


def _kind(mode) -> str | None:
    if stat.S_ISDIR(mode):
        return os.strerror(21) if os.name == "posix" else "a directory"      # EISDIR: "Is a directory"
    return next((w for test, w in _NOT_REGULAR if test(mode)), None if stat.S_ISREG(mode) else "not a regular file")


def _read_text(p: Path, what: str, fix: str) -> str:
    def refuse(reason, f=fix):
        return file_error(p, "", f"cannot be read ({reason})", f)
    try:
        kind = _kind(os.stat(p).st_mode)
        if kind:
            raise refuse(kind)
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            kind = _kind(st.st_mode)
            if kind:
                raise refuse(kind)
            if st.st_size > MAX_FILE_BYTES:
                raise _too_large(p, st.st_size, what)
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise refuse(exc.strerror or type(exc).__name__) from None
    if len(data) > MAX_FILE_BYTES:           # it grew after the stat
        raise _too_large(p, len(data), what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start}",
                     f"give a {what} (YAML text)") from None


def _too_large(p, n, what) -> ValueError:
    return file_error(p, "", f"cannot be read ({n} bytes, over the limit "
                      f"of {MAX_FILE_BYTES} bytes)", f"give a {what} of at most {MAX_FILE_BYTES // 2 ** 20} MiB (a "
                      "mission of 10,000 waypoints takes about 3 MB)")


#: the fix said for a YAML syntax error, by the start of the parser's problem (else the last one)
_YAML_FIXES = (("found character '\\t'", "indent with spaces, not tabs"),
               ("mapping values are not allowed", "a ':' inside a value: quote the value, or fix the indentation"),
               ("expected ',' or ']'", "close the list with ']' or separate its items with ', '"),
               ("expected ',' or '}'", "close the mapping with '}' or separate its entries with ', '"),
               ("found undefined alias", "define the anchor (&name) before its alias (*name)"),
               ("the aliases expand", f"write the values out, or use fewer aliases (a file expands to at most "
                                      f"{MAX_YAML_NODES} values)"),
               ("the document has more than", f"give a smaller file (at most {MAX_YAML_NODES} values)"),
               ("found a recursive alias", "refer to an anchor outside the node that holds the alias"),
               ("nested deeper than", "flatten it: no file of the package nests deeper than 4 levels"),
               ("cannot build the value", "write a number a float can hold (e.g. 1.0e+30)"),
               ("", "fix the YAML syntax there (indentation, ':' after each key, brackets and quotes)"))


class _Budget:
    """The bounds of one YAML document (:func:`read_yaml`): nodes with the aliases expanded, nesting,
    recursive aliases; fed node by node (from the parser's events, or by the composer), refusing
    with ``error(problem, mark)`` the moment a bound is crossed."""

    def __init__(self, error):
        self.error, self.nodes, self.open, self.sizes = error, 0, [], {}

    def _add(self, n, mark, what):
        self.nodes += n
        if self.nodes > MAX_YAML_NODES:
            raise self.error(f"{what} more than {MAX_YAML_NODES} nodes", mark)

    def node(self, anchor, mark, collection):
        if collection and len(self.open) >= MAX_YAML_DEPTH:
            raise self.error(f"nested deeper than {MAX_YAML_DEPTH} levels", mark)
        self._add(1, mark, "the document has")
        if collection:
            self.open.append((anchor, self.nodes - 1))
        elif anchor is not None:
            self.sizes[anchor] = 1

    def end(self):
        anchor, before = self.open.pop()
        if anchor is not None:
            self.sizes[anchor] = self.nodes - before

    def alias(self, anchor, mark):
        if anchor in self.sizes:
            self._add(self.sizes[anchor], mark, "the aliases expand to")
        elif any(a == anchor for a, _ in self.open):
            raise self.error(f"found a recursive alias *{clip(anchor, 40)} (inside the node it names)", mark)
        # an undefined alias: the composer refuses it


def _yaml_kit():
    """``(yaml, Bound, Loader)``: the module, the error of a crossed bound, and the SafeLoader whose
    composer feeds a :class:`_Budget` and whose constructor refuses a value it cannot build at its
    line (made once: yaml is imported on first use)."""
    global _KIT
    if _KIT is not None:
        return _KIT
    import yaml
    from yaml.composer import ComposerError
    from yaml.constructor import ConstructorError

    class Bound(ComposerError):
        def __init__(self, problem, mark):
            super().__init__(None, None, problem, mark)

    class Loader(yaml.SafeLoader):
        def __init__(self, stream):
            super().__init__(stream)
            self._budget = _Budget(Bound)

        def compose_node(self, parent, index):
            event, b = self.peek_event(), self._budget
            if isinstance(event, yaml.AliasEvent):
                b.alias(event.anchor, event.start_mark)
                return super().compose_node(parent, index)
            collection = not isinstance(event, yaml.ScalarEvent)
            b.node(event.anchor, event.start_mark, collection)
            node = super().compose_node(parent, index)
            if collection:
                b.end()
            return node

        def construct_object(self, node, deep=False):
            try:
                return super().construct_object(node, deep)
            except (ValueError, OverflowError) as exc:       # int() of more than 4300 digits
                raise ConstructorError(None, None, f"cannot build the value ({clip(exc, 80)})",
                                       node.start_mark) from None

    _KIT = (yaml, Bound, Loader)
    return _KIT


_KIT = None


def _load_bounded(text: str):
    """The document of ``text`` within the bounds: first a pass over libyaml's events (fast, memory
    O(nesting + anchors): a file over a bound is refused in about a second whatever its size), then
    PyYAML's own loader (its words for a syntax error; its composer checks the bounds again, so they
    hold whichever parser reads the file)."""
    yaml, Bound, Loader = _yaml_kit()
    if getattr(yaml, "__with_libyaml__", False):
        b = _Budget(Bound)
        try:
            for ev in yaml.parse(text, Loader=yaml.CSafeLoader):
                if isinstance(ev, yaml.AliasEvent):
                    b.alias(ev.anchor, ev.start_mark)
                elif isinstance(ev, yaml.ScalarEvent):
                    b.node(ev.anchor, ev.start_mark, False)
                elif isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                    b.node(ev.anchor, ev.start_mark, True)
                elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                    b.end()
        except Bound:
            raise
        except yaml.YAMLError:
            pass          # a syntax error: PyYAML's loader below words it
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _parse_yaml(text: str, p: Path):
    import yaml
    try:
        return _load_bounded(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        if mark is not None:
            index, line, column = mark.index, mark.line + 1, mark.column + 1
        elif isinstance(getattr(exc, "position", None), int):     # a ReaderError: a character YAML refuses
            index = exc.position
            line = text.count("\n", 0, index) + 1
            column = index - (text.rfind("\n", 0, index) + 1) + 1
        else:
            index = line = column = None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        if context and getattr(exc, "context_mark", None) is not None and exc.context_mark is not mark:
            problem += f" ({context} at line {exc.context_mark.line + 1})"
        fix = next(f for start, f in _YAML_FIXES if problem.startswith(start))
        if line is None:
            raise file_error(p, "", f"not valid YAML ({clip(problem)})", fix) from None
        key = _key_path_at(text, index)
        where = f"line {line}, column {column}" + (f", in {clip(key)}" if key else "")
        raise file_error(p, where, clip(problem), fix) from None


def _key_path_at(text: str, index: int) -> str:
    """The key path (``rotors[2].axis``) being read at character ``index`` of the YAML ``text``
    that fails to parse there: replays the parser's events up to the error."""
    import yaml
    stack = []        # per open collection: ["map", key or None (a key comes next)], ["seq"|"flow", item index]

    def done():       # a node (scalar, alias or closed collection) finished in the collection on top
        if stack and stack[-1][0] == "map":
            stack[-1][1] = None
        elif stack:
            stack[-1][1] += 1

    try:          # libyaml's events when there (fast: a refusal at the end of an 8 MB file is still immediate)
        for ev in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if ev.start_mark.index >= index:
                break
            if isinstance(ev, (yaml.ScalarEvent, yaml.AliasEvent)):
                if stack and stack[-1][0] == "map" and stack[-1][1] is None:
                    stack[-1][1] = str(getattr(ev, "value", "*")) or '""'     # a key: its value comes next
                else:
                    done()
            elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if stack and stack[-1][0] == "map" and stack[-1][1] is None:
                    stack[-1][1] = "?"        # a complex key
                stack.append(["map", None] if isinstance(ev, yaml.MappingStartEvent) else
                             ["flow" if ev.flow_style else "seq", 0])
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
                done()
    except yaml.YAMLError:
        pass
    path = ""
    for i, (kind, k) in enumerate(stack):
        if kind == "flow" and i == len(stack) - 1:
            break             # between the items of [a, b, ...]: the list's key says where
        if kind != "map":
            path += f"[{k}]"
        elif k is not None:
            path += f".{k}" if path else str(k)
        else:
            break
    return path
