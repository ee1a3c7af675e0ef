"""Smoke test of bench/core/bench_layouts.py (input layouts and order-0 parity with Pinocchio).

No timing assertions (benchmarks never are): with minimal batches it must time every layout of
both functions and every parity entry, report finite positive times and ratios, and write its CSV.
The bench itself checks that every layout gives the C-contiguous answer before timing it.
"""
import csv
import math
import pathlib
import sys

import pinocchio  # noqa: F401  (pinned in requirements.txt: a missing install must fail, not skip)

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT / "bench" / "core") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench" / "core"))
import bench_layouts as bl  # noqa: E402  (bench/core/bench_layouts.py)


def test_main_tiny_writes_every_row(tmp_path, capsys):
    path = tmp_path / "bench_layouts.csv"
    rows = bl.main(["--reps", "3", "--repeats", "1", "--orders", "0", "1", "--csv", str(path)])
    layout = [r for r in rows if r["kind"] == "layout"]
    assert {(r["function"], r["order"], r["variant"]) for r in layout} == {
        (f, r, v) for f in ("inverse_dynamics", "forward_dynamics", "Workspace.inverse_dynamics",
                            "Workspace.forward_dynamics") for r in (0, 1) for v in bl.VARIANTS}
    parity = {r["function"]: r for r in rows if r["kind"] == "parity"}
    assert set(parity) == {"pin.rnea", "pin.aba", "gd.inverse_dynamics", "gd.forward_dynamics",
                           "Workspace.inverse_dynamics", "Workspace.forward_dynamics"}
    assert parity["Workspace.forward_dynamics"]["baseline"] == "pin.aba"
    assert all(math.isfinite(r["us"]) and r["us"] > 0 and math.isfinite(r["ratio"]) and r["ratio"] > 0
               for r in rows)
    with open(path, newline="") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    assert "pin.rnea" in capsys.readouterr().out
