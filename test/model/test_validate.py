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
