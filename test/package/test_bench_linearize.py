"""Smoke test of bench/core/bench_linearize.py (derivative / linearization benchmark).

No timing assertions (benchmarks never are): the 12-DoF section runs with minimal batches and
must return finite positive times, agree with Pinocchio on the benchmarked state, and write its
CSV.
"""
import csv
import math
import pathlib
import sys

import pinocchio  # noqa: F401  (pinned in requirements.txt: a missing install must fail, not skip)

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT / "bench" / "core") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench" / "core"))
import bench_linearize as bl  # noqa: E402  (bench/core/bench_linearize.py)


def test_section_12dof_smoke(tmp_path):
    rows = bl.Rows()
    res = bl.section_12dof(rows, bl.Timing(target_s=1e-4, repeats=1), verbose=False)
    times = {k: v for k, v in res.items() if isinstance(k, tuple)}
    for key in [("gd.linearize", "spatial"), ("gd.linearize", "body"),
                ("gd.inverse_dynamics_derivatives", "spatial"), ("gd.forward_dynamics_derivatives", "body"),
                ("gd.inverse_mass_matrix", "spatial"), ("pin.computeABADerivatives", "-"),
                ("pin.computeRNEADerivatives", "-"), ("pin.computeMinverse", "-")]:
        assert key in times
    assert all(math.isfinite(t) and t > 0 for t in times.values())
    assert all(math.isfinite(r) and r > 0 for _, r in res["ratios"].values())
    # the two sides were timed on the same state (a correctness check, not a timing one)
    e_id, e_A, e_B = res["check"]
    assert e_id < 1e-10 and e_A < 1e-10 and e_B < 1e-10

    path = tmp_path / "bench_linearize.csv"
    rows.write(path)
    with open(path, newline="") as f:
        got = list(csv.DictReader(f))
    assert set(got[0]) == set(bl.Rows.FIELDS)
    timed = [r for r in got if r["us_per_call"]]
    assert {r["impl"] for r in timed} >= {"gd.linearize", "pin.computeABADerivatives"}
    assert all(float(r["us_per_call"]) > 0 for r in timed)


def test_main_quick_12dof_writes_csv(tmp_path, capsys):
    bl.main(["--quick", "--sections", "12dof", "--target-ms", "0.1", "--repeats", "1", "--out", str(tmp_path)])
    assert (tmp_path / "bench_linearize.csv").is_file()
    assert "computeABADerivatives" in capsys.readouterr().out
