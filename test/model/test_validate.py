"""geodyn_ros.model.validate: the argument checks every layer uses, and the classes that use them.

The helpers are checked against a plain-Python predicate (``math.isfinite`` and comparisons on
each entry, written here) over a grid of values and kinds; the classes (gains, LQR weights, rotor
and joint constants) against a hand-written table of bad values, each refusal naming the field.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from geodyn_ros.control.feedback import TrackingGains
from geodyn_ros.control.lqr import LqrWeights
from geodyn_ros.model.validate import as_floats, file_error, require_finite, require_positive
from geodyn_ros.vehicle.params import ElasticJointParams, RotorParams

VALUES = [1.0, 2, 0.0, -0.0, -1.0, 1e-300, math.inf, -math.inf, math.nan]


def _accept(x, allow_zero, allow_inf):
    """The rule, entry by entry, in plain Python."""
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        return False
    return x >= 0 if allow_zero else x > 0


@pytest.mark.parametrize("allow_zero", [False, True])
@pytest.mark.parametrize("allow_inf", [False, True])
def test_require_positive_matches_the_rule_on_scalars_and_arrays(allow_zero, allow_inf):
    for x in VALUES:
        ok = _accept(x, allow_zero, allow_inf)
        if ok:
            got = require_positive("k", x, allow_zero=allow_zero, allow_inf=allow_inf)
            assert type(got) is float and (got == x)
        else:
            with pytest.raises(ValueError, match=r"^k: expected a .*, got "):
                require_positive("k", x, allow_zero=allow_zero, allow_inf=allow_inf)
    for a in ([1.0, 2.0], [1.0, 0.0], [1.0, math.inf], [[1.0, 2.0], [3.0, -1.0]], [math.nan, 1.0]):
        ok = all(_accept(x, allow_zero, allow_inf) for x in np.ravel(a))
        if ok:
            got = require_positive("k", a, allow_zero=allow_zero, allow_inf=allow_inf)
            assert isinstance(got, np.ndarray) and got.dtype == float and np.array_equal(got, a)
        else:
            with pytest.raises(ValueError, match=r"^k: expected .*numbers, got "):
                require_positive("k", a, allow_zero=allow_zero, allow_inf=allow_inf)


def test_require_finite_and_the_kinds_refused():
    assert require_finite("x", -3) == -3.0 and np.array_equal(require_finite("x", [0.0, -1.0]), [0.0, -1.0])
    for bad in (math.nan, math.inf, [1.0, -math.inf]):
        with pytest.raises(ValueError, match=r"^x: expected (a )?finite number"):
            require_finite("x", bad)
    # numpy would read these as numbers (or fail with a message that names nothing)
    for bad in ("1", b"1", True, np.bool_(True), None, [1.0, [2.0, 3.0]], {"a": 1}):
        with pytest.raises(ValueError, match=r"^x: "):
            require_finite("x", bad)
        with pytest.raises(ValueError, match=r"^x: "):
            require_positive("x", bad)
    with pytest.raises(ValueError, match=r"^x: expected a finite number, got array"):
        require_finite("x", np.array([1.0]), scalar=True)
    with pytest.raises(ValueError, match=r"^x: gains are nice, got -1$"):
        require_positive("x", -1, problem="gains are nice")
    a = np.array([1.0, 2.0])
    assert require_positive("x", a) is not a                 # a new array: the caller may freeze it
    assert as_floats("x", [[1, 2]]).shape == (1, 2)


def test_file_error_is_the_one_line_format():
    assert str(file_error("m.yaml", "waypoints[1].com", "missing", "give it")) == "m.yaml: waypoints[1].com: missing; give it"
    assert str(file_error("m.yaml", "", "expected a mapping")) == "m.yaml: expected a mapping"


# (class, keyword arguments, the field the refusal must start with)
BAD = [
    (TrackingGains, {"kp_position": -1.0}, "kp_position: gains must be finite and >= 0"),
    (TrackingGains, {"kd_rotation": math.nan}, "kd_rotation: gains must be finite and >= 0"),
    (TrackingGains, {"kp_rotation": [1.0, 2.0, 3.0]}, "kp_rotation: gains must be finite and >= 0"),
    (TrackingGains, {"kd_position": "fast"}, "kd_position: gains must be finite and >= 0"),
    (TrackingGains, {"kd_joint": -0.5}, "kd_joint: gains must be finite and >= 0"),
    (LqrWeights, {"joint": 0.0}, "joint: expected a finite positive value"),
    (LqrWeights, {"tail": math.inf}, "tail: expected a finite positive value"),
    (LqrWeights, {"motor_rate": [1.0, 2.0]}, "motor_rate: expected a finite positive value"),
    (LqrWeights, {"base_position": (1.0, -1.0, 1.0)}, "base_position: expected finite positive values"),
    (LqrWeights, {"base_velocity": (1.0, 1.0)}, "base_velocity: expected a positive number or 3 (x, y, z)"),
    (LqrWeights, {"base_attitude": "x"}, "base_attitude: expected a positive number or 3 (x, y, z)"),
    (RotorParams, {"turning_direction": ("ccw", "cw"), "motor_constant": 0.0}, "motor_constant: expected a finite "
     "positive number"),
    (RotorParams, {"turning_direction": ("ccw", "cw"), "moment_constant": -1.0}, "moment_constant: expected a finite "
     "non-negative number"),
    (RotorParams, {"turning_direction": ("ccw", "cw"), "max_rot_velocity": [1000.0, math.nan]}, "max_rot_velocity: "
     "expected finite positive numbers"),
    (RotorParams, {"turning_direction": ("ccw", "cw"), "time_constant_up": "slow"}, "time_constant_up: expected a "
     "real number or 2 of them"),
    (ElasticJointParams, {"joints": ("a", "b"), "stiffness": [1.0, 0.0], "motor_inertia": 1.0}, "stiffness: expected "
     "2 finite positive values"),
    (ElasticJointParams, {"joints": ("a", "b"), "stiffness": 1.0, "motor_inertia": [1.0, 1.0, 1.0]},
     "motor_inertia: expected 2 finite positive values"),
    (ElasticJointParams, {"joints": ("a",), "stiffness": 1.0, "motor_inertia": 1.0, "max_motor_torque": math.nan},
     "max_motor_torque: expected a positive number or 1 of them"),
]


@pytest.mark.parametrize("cls, kw, start", BAD, ids=[f"{c.__name__}-{next(iter(k.items()))[0]}-{i}"
                                                      for i, (c, k, _) in enumerate(BAD)])
def test_the_classes_refuse_naming_the_field(cls, kw, start):
    with pytest.raises(ValueError, match="^" + re.escape(start)):
        cls(**kw)


def test_the_classes_keep_their_good_values():
    """What the checks accept is stored as before: floats, per-axis tuples, arrays or inf."""
    g = TrackingGains(kp_position=3, kp_joint=[1.0, 2.0])
    assert type(g.kp_position) is float and g.kp_position == 3.0 and g.kp_joint == (1.0, 2.0)
    w = LqrWeights(base_attitude=0.5, joint=1)
    assert w.base_attitude == (0.5, 0.5, 0.5) and type(w.joint) is float
    r = RotorParams(turning_direction=("ccw", "cw"), max_rot_velocity=[900.0, 1000.0], motor_constant=[1e-5, 1e-5])
    assert np.array_equal(r.max_rot_velocity, [900.0, 1000.0]) and r.motor_constant == 1e-5
    e = ElasticJointParams(joints=("a", "b"), stiffness=50.0, motor_inertia=[0.01, 0.02], max_motor_torque=math.inf)
    assert np.array_equal(e.stiffness, [50.0, 50.0]) and e.max_motor_torque == math.inf


# ---------------------------------------------------------------------- read_yaml, clip, format_against
@pytest.mark.parametrize("text, line", [
    # an unclosed flow mapping: the parser stops at the next item, inside rotors[0]
    ("rotors:\n  - {name: a, axis: [0, 0, 1]\n  - {name: b}\n", "line 3, column 3, in rotors[0]: expected ',' or '}', "
     "but got '-' (while parsing a flow mapping at line 2); close the mapping with '}' or separate its entries with "
     "', '"),
    # a list item after its list closed: in a flow list, the list's own key (not an item index)
    ("a:\n  b: [1, 2\n  c: 3\n", "line 3, column 4, in a.b: expected ',' or ']', but got ':' (while parsing a flow "
     "sequence at line 2); close the list with ']' or separate its items with ', '"),
    # the scanner refuses before the parser has read the key a: no key path (at the top level either way)
    ("a: 1\n b: 2\n", "line 2, column 3: mapping values are not allowed here; a ':' inside a value: quote the "
     "value, or fix the indentation"),
    ("a:\n\t- 1\n", "line 2, column 1, in a: found character '\\t' that cannot start any token; indent with spaces, "
     "not tabs"),
    ("a: *x\n", "line 1, column 4, in a: found undefined alias 'x'; define the anchor (&name) before its alias (*name)"),
    ("a: [1]\nb: \x07\n", "line 2, column 4: unacceptable character #x0007: special characters are not allowed; fix "
     "the YAML syntax there (indentation, ':' after each key, brackets and quotes)"),
], ids=["flow mapping", "flow list", "indentation", "tab", "alias", "control character"])
def test_read_yaml_names_line_column_and_key_of_a_syntax_error(tmp_path, text, line):
    """Line and column 1-based from the parser's mark (counted by hand in each text above)."""
    from geodyn_ros.model.validate import read_yaml
    p = tmp_path / "f.yaml"
    p.write_text(text)
    with pytest.raises(ValueError) as info:
        read_yaml(p, "test file")
    assert str(info.value) == f"{p}: {line}"


def test_read_yaml_refuses_what_cannot_be_read_in_one_wording(tmp_path):
    from geodyn_ros.model.validate import read_yaml
    for path, reason in ((tmp_path / "nope.yaml", "No such file or directory"), (tmp_path, "Is a directory")):
        with pytest.raises(ValueError) as info:
            read_yaml(path, "mission file")
        assert str(info.value) == f"{path}: cannot be read ({reason}); give the path of an existing mission file"
    with pytest.raises(ValueError) as info:
        read_yaml(tmp_path / "nope.yaml", "vehicle file", fix="give a vehicle")
    assert str(info.value).endswith("(No such file or directory); give a vehicle")
    (tmp_path / "bin.yaml").write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(ValueError) as info:
        read_yaml(tmp_path / "bin.yaml", "mission file")
    assert str(info.value) == (f"{tmp_path / 'bin.yaml'}: cannot be read (not UTF-8 text: byte 0xff at offset 8); give "
                               "a mission file (YAML text)")
    (tmp_path / "ok.yaml").write_text("a: [1, 2]\n")
    assert read_yaml(tmp_path / "ok.yaml", "mission file") == {"a": [1, 2]}


def test_format_against_never_prints_the_bound_or_the_other_side():
    from geodyn_ros.model.validate import format_against
    assert f"{1.19995:.3g}" == "1.2"                           # what the refusal used to print
    for value, bound, want in ((1.19995, 1.2, "1.19995"), (1.005, 1.2, "1.005"), (0.24, 1.2, "0.24"),
                               (1000.04, 1000.0, "1000.04"), (1.2, 1.2, "1.2"), (1 - 2 ** -52, 1.0, "0.9999999999999998")):
        assert format_against(value, bound) == want
    rng = np.random.default_rng(5)
    for bound in (1.2, 1000.0, 3e-7):
        for value in bound * (1 + rng.choice([-1, 1], 200) * 10.0 ** rng.uniform(-15, 0, 200)):
            s = format_against(value, bound)
            assert s != f"{bound:g}" and (float(s) < bound) == (value < bound), (value, bound, s)


def test_refusals_quote_input_clipped_on_one_line():
    from geodyn_ros.model.validate import FileKeys, clip, short_repr
    assert clip("x" * 1_000_000, 4) == "xxxx... (1000000 characters)" and clip("a\nb") == "a\\x0ab"
    assert short_repr(np.eye(2)) == "array([[1., 0.], [0., 1.]])"       # numpy's line break: a space
    with pytest.raises(ValueError) as info:
        FileKeys("f.yaml").vec("k", list(range(10_000)), 3)
    assert len(str(info.value)) < 200 and "\n" not in str(info.value) and f"({len(repr(list(range(10_000))))} characters)" in str(info.value)
    with pytest.raises(ValueError) as info:
        require_positive("k", [1.0] * 10_000 + [-1.0])
    assert len(str(info.value)) < 300 and "characters)" in str(info.value)


def test_file_numbers_are_strict_and_never_overflow():
    """A file's number is a YAML int or float: ``true`` (1 to numpy) and ``"1.5"`` (a string) are
    not; an int beyond a float is ``inf`` (refused as not finite) instead of an OverflowError."""
    from geodyn_ros.model.validate import FileKeys, Range, file_number
    assert file_number(3) == 3.0 and file_number(-2.5) == -2.5 and file_number(np.float32(1.5)) == 1.5
    for v in (True, False, "1.5", None, [1.0], {"a": 1}):
        assert file_number(v) is None, v
    assert file_number(10 ** 400) == np.inf and file_number(-(10 ** 400)) == -np.inf
    c = FileKeys("f.yaml")
    for v, problem in ((True, "expected a finite number, got True"), ("2", "expected a finite number, got '2'"),
                       (10 ** 400, "expected a finite number, got 1000"), ([1, True], "expected 2 numbers")):
        with pytest.raises(ValueError) as info:
            c.vec("k", v, 2) if isinstance(v, list) else c.number("k", v)
        assert str(info.value).startswith(f"f.yaml: k{'[1]' if isinstance(v, list) else ''}: "
                                          f"{'expected a finite number, got True' if isinstance(v, list) else problem}")
    r = Range(1e-3, 2.0, "s", "a reason")
    assert c.number("k", 0.5, within=r) == 0.5
    with pytest.raises(ValueError) as info:
        c.number("k", 1e300, within=r)
    assert str(info.value) == ("f.yaml: k: 1e+300 s is outside the plausible range [0.001, 2] s (a reason); give a "
                               "value in that range (SI units)")
    with pytest.raises(ValueError) as info:      # printed apart from the bound (format_against)
        c.number("k", 2.0000001, within=r)
    assert str(info.value).startswith("f.yaml: k: 2.0000001 s is outside")


def test_read_yaml_bounds_refuse_before_building_the_document(tmp_path, monkeypatch):
    """The bounds hold whichever parser reads the file: without libyaml (PyYAML's own composer
    checks them) the same lines; a file that grows past the limit between the stat and the read,
    and a regular file swapped for a FIFO after the stat, are refused too (never blocking)."""
    import os

    import yaml

    from geodyn_ros.model import validate
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    cases = [(laughs, "line 6, column 24, in f: the aliases expand to more than 400000 nodes"),
             ("a: " + "[" * 33 + "]" * 33 + "\n", "line 1, column 35, in a" + "[0]" * 30 + ": nested deeper than 32 "
              "levels"),      # the root mapping is the first level
             ("a: &r {b: *r}\n", "line 1, column 11, in a.b: found a recursive alias *r (inside the node it names)")]
    for libyaml in (True, False):
        monkeypatch.setattr(yaml, "__with_libyaml__", libyaml)
        for text, line in cases:
            p = tmp_path / "f.yaml"
            p.write_text(text)
            with pytest.raises(ValueError) as info:
                validate.read_yaml(p, "vehicle file")
            assert str(info.value).startswith(f"{p}: {line}; "), (libyaml, str(info.value))
    assert validate.read_yaml(_write(tmp_path, "a: " + "[" * 31 + "]" * 31 + "\n")) == {"a": eval("[" * 31 + "]" * 31)}
    # the stat says a small regular file; the open finds a FIFO (swapped in between): refused at once
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    real_stat = os.stat
    monkeypatch.setattr(validate.os, "stat", lambda p, *a, **k: real_stat(tmp_path / "f.yaml"))
    with pytest.raises(ValueError, match=r"cannot be read \(a FIFO, not a regular file\)"):
        validate.read_yaml(fifo)
    monkeypatch.setattr(validate.os, "stat", real_stat)
    monkeypatch.setattr(validate, "MAX_FILE_BYTES", 10)      # the size as read, not only as stat'ed
    p = _write(tmp_path, "a: 1234567890\n")
    monkeypatch.setattr(validate.os, "fstat", lambda fd: os.stat_result((0o100644,) + (0,) * 5 + (1,) + (0,) * 3))
    with pytest.raises(ValueError, match=r"cannot be read \(11 bytes, over the limit of 10 bytes\)"):
        validate.read_yaml(p)


def _write(tmp_path, text):
    p = tmp_path / "w.yaml"
    p.write_text(text)
    return p
