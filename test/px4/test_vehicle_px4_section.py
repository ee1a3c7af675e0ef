"""The vehicle file's optional top-level ``px4:`` section (doc/reference/vehicle_file.md, "PX4"):
what it holds, its defaults, and one refusal line per bad key (``<file>: px4.<key>: <problem>;
<fix>``). The references are the values written in the test (no computation to compare)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.vehicle import load_vehicle

QUAD = (Path(__file__).resolve().parents[1] / "data" / "quad_x.yaml").read_text()


def _file(tmp_path, section: str) -> Path:
    p = tmp_path / "quad_px4.yaml"
    p.write_text(QUAD + section)
    return p


def test_a_file_without_the_section_loads_as_before():
    cfg = load_vehicle(str(Path(__file__).resolve().parents[1] / "data" / "quad_x.yaml"))
    assert cfg.px4 is None


def test_the_section_and_its_defaults(tmp_path):
    cfg = load_vehicle(_file(tmp_path, "px4: {thr_mdl_fac: 0.3}\n"))
    assert (cfg.px4.thr_mdl_fac, cfg.px4.mc_airmode, cfg.px4.ct) == (0.3, 0, None)
    cfg = load_vehicle(_file(tmp_path, "px4: {thr_mdl_fac: 0, mc_airmode: 1, ct: 6.5}\n"))
    assert (cfg.px4.thr_mdl_fac, cfg.px4.mc_airmode, cfg.px4.ct) == (0.0, 1, (6.5,) * 4)
    cfg = load_vehicle(_file(tmp_path, "px4: {thr_mdl_fac: 1, ct: [8.5, 8.5, 8.4, 8.6]}\n"))
    assert np.array_equal(cfg.px4.ct, [8.5, 8.5, 8.4, 8.6])


@pytest.mark.parametrize("section, key, problem", [
    ("px4: {mc_airmode: 0}", "px4.thr_mdl_fac", "missing"),
    ("px4: {thr_mdl_fac: 1.5}", "px4.thr_mdl_fac", "above 1"),
    ("px4: {thr_mdl_fac: -0.1}", "px4.thr_mdl_fac", "negative"),
    ("px4: {thr_mdl_fac: .nan}", "px4.thr_mdl_fac", "finite number"),
    ("px4: {thr_mdl_fac: '0.5'}", "px4.thr_mdl_fac", "finite number"),
    ("px4: {thr_mdl_fac: 0, mc_airmode: 3}", "px4.mc_airmode", "not 0, 1 or 2"),
    ("px4: {thr_mdl_fac: 0, mc_airmode: true}", "px4.mc_airmode", "not 0, 1 or 2"),
    ("px4: {thr_mdl_fac: 0, ct: [1, 2]}", "px4.ct", "2 values for 4 rotors"),
    ("px4: {thr_mdl_fac: 0, ct: 0}", "px4.ct", "zero"),
    ("px4: {thr_mdl_fac: 0, ct: [1, 1, 1, 1000]}", "px4.ct[3]", "outside the plausible range"),
    ("px4: {thr_mdl_fac: 0, THR_MDL_FAC: 0}", "px4.THR_MDL_FAC", "unknown key"),
    ("px4: 0.5", "px4", "expected a mapping"),
])
def test_each_bad_key_is_one_line_naming_file_and_key(tmp_path, section, key, problem):
    p = _file(tmp_path, section + "\n")
    with pytest.raises(ValueError) as e:
        load_vehicle(p)
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith(f"{p}: {key}: "), text
    assert problem in text, text
    assert "; " in text   # the fix
