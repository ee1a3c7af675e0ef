"""What the loops print while they run and when they finish: row progress and text tables.

* :class:`RowProgress`: one line per row as it finishes (its wall time, real-time factor
  ``<f>x``, headline errors and the time left), and a final summary; where stderr is a terminal, a ``tqdm`` progress
  bar over the simulated steps of all rows as well (plain lines otherwise, e.g. in CI logs).
* :func:`text_table`: a fixed-width table whose header is two lines, the column names and their
  units, with two spaces between columns (no header runs into the next); the tables of
  :mod:`geodyn_ros.loops.actuated` and :mod:`geodyn_ros.loops.underactuated` use it and fit 100
  columns.
* :func:`gains_text`: a gains dataclass as ``name=value`` pairs wrapped to 99 columns.

No ROS, no simulator; ``tqdm`` is imported only when a bar is drawn (without it: plain lines).
"""
from __future__ import annotations

import dataclasses
import math
import sys
import textwrap
import time

__all__ = ["RowProgress", "text_table", "table_line", "gains_text", "emit_table", "WIDTH"]

#: the width every printed line of the tables stays within (a terminal's 100 columns, minus one)
WIDTH = 99


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class RowProgress:
    """Progress of a table's rows: ``with RowProgress(rows, steps_per_row) as p:`` then, per row,
    ``res = run(row, progress=p.step)`` and ``p.done(row, simulated_s, headline)``.

    rows : the row names, in run order; steps_per_row : simulator steps of one row (pre-roll
    included), the unit of :meth:`step`; out : where the lines go (default ``sys.stdout``);
    bar : draw a ``tqdm`` bar on stderr (default: when stderr is a terminal and tqdm imports).
    """

    def __init__(self, rows, steps_per_row: int, *, out=None, bar: bool | None = None, what: str = "row"):
        self.rows = list(rows)
        if steps_per_row < 1:
            raise ValueError(f"steps_per_row: expected >= 1, got {steps_per_row!r}")
        self.steps_per_row = int(steps_per_row)
        self.out = sys.stdout if out is None else out
        self.what = what
        self._bar = None
        if bar is None:
            bar = bool(getattr(sys.stderr, "isatty", lambda: False)())
        if bar:
            try:
                from tqdm import tqdm
            except ImportError:       # not installed: plain lines only
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=len(self.rows) * self.steps_per_row, unit="step", unit_scale=True,
                                 file=sys.stderr, leave=False, dynamic_ncols=True,
                                 bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")
        self._row_done = 0          # steps of the rows already finished
        self._last = 0              # steps of the current row reported to the bar
        self.finished = 0
        self.simulated = 0.0
        self.t0 = time.perf_counter()
        self._row_t0 = self.t0
        self._describe()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _describe(self):
        if self._bar is not None and self.finished < len(self.rows):
            self._bar.set_description_str(f"{self.what} {self.finished + 1}/{len(self.rows)} "
                                          f"{self.rows[self.finished]}")

    def _print(self, line: str):
        if self._bar is not None:
            self._bar.write(line, file=self.out)
        else:
            print(line, file=self.out, flush=True)

    def step(self, done: int, total: int | None = None):
        """The current row has run ``done`` of its steps (the loops' ``progress`` callback)."""
        if self._bar is not None:
            done = min(int(done), self.steps_per_row)
            self._bar.update(done - self._last)
            self._last = done

    def done(self, row: str, simulated_s: float, headline: str = ""):
        """Row ``row`` finished after ``simulated_s`` simulated seconds: print its line."""
        now = time.perf_counter()
        wall = now - self._row_t0
        self._row_t0 = now
        self.finished += 1
        self.simulated += simulated_s
        if self._bar is not None:
            self._bar.update(self.steps_per_row - self._last)
            self._last = 0
        left = len(self.rows) - self.finished
        eta = f"  ~{_minutes(left * (now - self.t0) / self.finished)} left" if left else ""
        rt = simulated_s / wall if wall > 0 else math.inf
        width = max(len(r) for r in self.rows)
        n = len(self.rows)
        self._print(f"  [{self.finished:>{len(str(n))}d}/{n}] {row:{width}s} {wall:4.0f} s  {rt:4.1f}x"
                    f"{'  ' + headline if headline else ''}{eta}")
        self._describe()

    def summary(self) -> str:
        """``N rows in T wall (S s simulated, F x real time)``."""
        wall = time.perf_counter() - self.t0
        rt = self.simulated / wall if wall > 0 else math.inf
        return (f"{self.finished} {self.what}s in {_minutes(wall)} wall ({self.simulated:.0f} s simulated, "
                f"{rt:.2f}x real time)")

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _widths(columns, rows=()):
    widths = [max(w, len(n), len(u)) for n, u, w in columns]
    for r in rows:
        if len(r) != len(columns):
            raise ValueError(f"rows: expected {len(columns)} cells per row, got {len(r)}: {r!r}")
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    return widths


def _line(widths, cells, sep):
    first = f"{cells[0]:<{widths[0]}s}"
    return sep.join([first] + [f"{c:>{w}s}" for c, w in zip(cells[1:], widths[1:])]).rstrip()


def text_table(columns, rows, *, sep: str = "  ") -> str:
    """A text table: ``columns`` is a list of ``(name, unit, width)`` (the first column left
    aligned, the others right aligned; ``unit`` is printed as given, e.g. ``"[m]"``, or ""),
    ``rows`` a list of lists of already formatted cells. The header is two lines (names, then
    units), then a rule; columns are ``sep`` apart and as wide as their widest entry. Raises
    ValueError if a row has the wrong number of cells. ``rows=[]``: the header alone (then
    :func:`table_line` prints rows one at a time in the same columns, as long as no cell is wider
    than its column's ``width``)."""
    widths = _widths(columns, rows)
    names = _line(widths, [n for n, _, _ in columns], sep)
    units = _line(widths, [u for _, u, _ in columns], sep)
    rule = "-" * len(_line(widths, ["-" * w for w in widths], sep))
    return "\n".join([names, units, rule] + [_line(widths, r, sep) for r in rows])


def table_line(columns, cells, *, sep: str = "  ") -> str:
    """One row of the table whose header ``text_table(columns, [])`` printed."""
    if len(cells) != len(columns):
        raise ValueError(f"cells: expected {len(columns)} cells, got {len(cells)}: {cells!r}")
    return _line(_widths(columns), list(cells), sep)


def gains_text(gains, prefix: str = "gains: ") -> str:
    """``prefix`` + the fields of a gains dataclass as ``name=value``, wrapped to :data:`WIDTH`."""
    def fmt(v):
        if isinstance(v, (tuple, list)):
            return "(" + ",".join(fmt(x) for x in v) + ")"
        return f"{v:g}" if isinstance(v, float) else str(v)
    parts = [f"{f.name}={fmt(getattr(gains, f.name))}" for f in dataclasses.fields(gains)]
    return textwrap.fill(" ".join(parts), width=WIDTH, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                         break_on_hyphens=False)


def comma_subset(parser, flag: str, text: str, allowed) -> list:
    """The comma-separated names of ``text`` (spaces trimmed, empties dropped), each one of
    ``allowed``; otherwise ``parser.error`` (exit 2) with one line naming ``flag``."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or any(x not in allowed for x in names):
        parser.error(f"{flag}: expected a subset of {','.join(allowed)}, got {text!r}")
    return names


def emit_table(obj: dict, format_text, *, json_only: bool, json_out=None) -> None:
    """The end of a table example's ``main``: ``obj`` (JSON-able) written to ``json_out`` (its
    folder made) when given, then printed as one JSON line (``json_only``) or, after a blank
    line, as ``format_text(obj)``."""
    import json
    from pathlib import Path
    if json_out:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(json.dumps(obj, indent=1, default=float) + "\n")
    if json_only:
        print(json.dumps(obj, default=float))
    else:
        print()
        print(format_text(obj))
