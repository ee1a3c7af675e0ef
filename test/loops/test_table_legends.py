"""The sensing table's legend explains the rows it prints, and only those (issue 52.4).

``make demo`` prints the sensing table with the ``mocap`` column alone; its legend explained an
``ff2~`` row (the ff2 error predicted from the perfect row and the floor) that needs the
``perfect`` column and was not printed. Here the legend entries (``label: meaning`` in the
table's title lines) are read from the text and compared with the first column of the table
below them, for the column sets ``make demo`` and ``make sensing`` print. The table object is
made by hand (the formatting is under test, not the loops; the loops' text is
test_examples_text.py's).
"""
from __future__ import annotations

import re

import pytest

from geodyn_ros.examples.sensing_table import format_tables

LEVELS = ["rigid", "ff0", "ff1", "ff2"]


def _table_object(conditions):
    def metrics(x):
        return {"position_rms_m": x, "joint_rms_deg": 10 * x, "rotor_saturations": 0, "joint_saturations": 0}
    rows = {c: {lv: metrics(1e-3 * (i + 1)) for i, lv in enumerate(LEVELS)} for c in conditions}
    floors = {c: {"floor": 1e-3, "noise": 1e-3, "lag": 1e-4} for c in conditions}
    return {"duration_s": 3.0, "ground": True, "seed": 0,
            "vehicles": {"collinear": {"what": "a vehicle", "gains": "gains", "conditions": list(conditions),
                                       "levels": LEVELS, "rows": rows, "floors": floors}}}


def legends_and_rows(text: str) -> list[tuple[set, set]]:
    """``[(legend labels, row labels)]`` per table: a title line ``... per level and sensing``,
    optionally ``(label: meaning;`` and indented ``label: meaning`` lines, then the table (a header
    of two lines, a rule of dashes, a row per line until a line that is not a row)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "per level and sensing" not in line:
            continue
        legend, j = set(re.findall(r"\((\S+): ", line)), i + 1
        while lines[j].startswith("  "):
            legend.add(lines[j].split(":")[0].strip())
            j += 1
        assert set(lines[j + 2]) == {"-"}, lines[j:j + 3]
        rows = set()
        for row in lines[j + 3:]:
            cells = row.split()
            if len(cells) < 2 or row.startswith(" ") or not re.match(r"^(-|\d|diverged)", cells[1]):
                break
            rows.add(cells[0])
        out.append((legend, rows))
    return out


@pytest.mark.parametrize("conditions", [["mocap"], ["perfect", "mocap", "onboard"]],
                         ids=["make-demo", "make-sensing"])
def test_the_legend_names_exactly_the_extra_rows_printed(conditions):
    tables = legends_and_rows(format_tables(_table_object(conditions)))
    assert len(tables) == 2, tables     # position and joint RMS
    for legend, rows in tables:
        assert rows >= set(LEVELS), rows
        assert legend == rows - set(LEVELS), (legend, rows)   # every extra row explained, nothing else
    position_rows = tables[0][1]
    assert ("ff2~" in position_rows) == ("perfect" in conditions)
