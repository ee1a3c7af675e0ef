"""The inertia correction for flight (geodyn_ros.model.inertia, issue 40), against closed forms.

The URDF text it writes is read back here with plain ElementTree (not the package's readers) and
its principal moments with numpy: the corrected moments satisfy A + B >= C in floating point (the
sum MuJoCo forms), the change is the closed form ``delta = (C - A - B) / 2`` on the two smaller
moments and no smaller symmetric change passes, the axes, the largest moment, the mass and the
origin stay, and a URDF that needs nothing comes back as the same text. That MuJoCo compiles what
it writes is test/control/test_mujoco_sim.py's.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.lie import rpy_to_matrix
from geodyn_ros.model.inertia import MARGIN_ABS, MARGIN_EPS, balance_link_inertias, balanced_moments

DATA = Path(__file__).resolve().parents[1] / "data"
#: rotors_simulator's firefly body inertia (test/data/firefly.urdf cites file and commit)
FIREFLY = (0.0347563, 0.0458929, 0.0977)


def _urdf(I, rpy=None, mass=1.0):
    o = "" if rpy is None else f'<origin xyz="0.1 0.2 0.3" rpy="{" ".join(repr(float(x)) for x in rpy)}"/>'
    comps = " ".join(f'{k}="{float(I[i][j])!r}"' for k, (i, j) in
                     zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))))
    return (f'<robot name="r"><link name="a"><inertial><mass value="{mass!r}"/>{o}<inertia {comps}/></inertial>'
            f'</link><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
            f'<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')


def _read(text, link):
    """(inertia (3, 3), mass, origin element attributes) of ``link``, read with plain ElementTree."""
    le = next(e for e in ET.fromstring(text).iter("link") if e.get("name") == link)
    i = le.find("inertial/inertia")
    g = {k: float(i.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
    o = le.find("inertial/origin")
    return I, float(le.find("inertial/mass").get("value")), (None if o is None else dict(o.attrib))


def test_the_firefly_body_gets_the_minimal_symmetric_change():
    text = (DATA / "firefly.urdf").read_text()
    fixed, corr = balance_link_inertias(text)
    assert [c.link for c in corr] == ["firefly/base_link_inertia"]
    A, B, C = FIREFLY
    delta = (C - A - B) / 2                         # the closed form: A + delta + B + delta = C
    I, mass, origin = _read(fixed, "firefly/base_link_inertia")
    a, b, c = np.diag(I)
    assert not I[0, 1] and not I[0, 2] and not I[1, 2] and mass == 1.5 and c == C   # axes, mass and C kept
    # the two smaller moments raised by the same amount, the closed form's to rounding (a few ulps of C)
    assert a - A == pytest.approx(delta, abs=4 * math.ulp(C)) and b - B == pytest.approx(delta, abs=4 * math.ulp(C))
    assert a + b >= c                                # MuJoCo's exact test passes ...
    assert a + b - c <= 4 * math.ulp(C)              # ... with A + B = C to rounding
    # minimal to rounding: 8 units in the last place of C less on each moment fail the test
    d = corr[0].delta
    assert (A + d) + (B + d) >= C and (A + d - 8 * math.ulp(C)) + (B + d - 8 * math.ulp(C)) < C
    assert corr[0].before == FIREFLY and corr[0].after == (a, b, c)
    # the relative change, from the two tensors as written
    I0 = np.diag(FIREFLY)
    assert corr[0].relative_change == pytest.approx(np.linalg.norm(I - I0) / np.linalg.norm(I0), rel=1e-12)
    assert 0.10 < corr[0].relative_change < 0.11
    # every other link as it was
    for le in ET.fromstring(text).iter("link"):
        if le.get("name") != "firefly/base_link_inertia" and le.find("inertial") is not None:
            assert np.array_equal(_read(text, le.get("name"))[0], _read(fixed, le.get("name"))[0])


def test_mujoco_balanceinertia_would_change_more():
    # MuJoCo's balanceinertia sets A = B = C to their mean (user_objects.cc): the documented comparison
    A, B, C = FIREFLY
    mean = sum(FIREFLY) / 3
    ours = math.sqrt(2) * (C - A - B) / 2 / math.hypot(A, B, C)
    theirs = math.sqrt((mean - A) ** 2 + (mean - B) ** 2 + (mean - C) ** 2) / math.hypot(A, B, C)
    (_, corr) = balance_link_inertias((DATA / "firefly.urdf").read_text())
    assert corr[0].relative_change == pytest.approx(ours, rel=1e-9)
    assert round(100 * ours, 1) == 10.6 and round(100 * theirs, 1) == 41.9


@pytest.mark.parametrize("seed", range(6))
def test_a_full_tensor_keeps_its_axes_and_gets_the_closed_form(seed):
    rng = np.random.default_rng(seed)
    A, B = np.sort(rng.uniform(0.1, 1.0, 2)) * 10.0 ** rng.uniform(-6, 0)
    C = (A + B) * rng.uniform(1.01, 1.5)
    R = rpy_to_matrix(rng.uniform(-3, 3, 3))
    I0 = R @ np.diag([A, B, C]) @ R.T
    I0 = 0.5 * (I0 + I0.T)
    fixed, corr = balance_link_inertias(_urdf(I0, rpy=(0.1, -0.2, 0.3), mass=0.7))
    I, mass, origin = _read(fixed, "a")
    assert mass == 0.7 and origin == {"xyz": "0.1 0.2 0.3", "rpy": "0.1 -0.2 0.3"}
    ev, U = np.linalg.eigh(I)
    margin = MARGIN_ABS + MARGIN_EPS * np.finfo(float).eps * C      # the documented margin (MuJoCo's Jacobi)
    delta = (C + margin - A - B) / 2
    # eigenvalues of the written tensor: (A, B, C) + (delta, delta, 0), to the rounding of forming them
    np.testing.assert_allclose(ev, [A + delta, B + delta, C], rtol=0, atol=1e-14 * C)
    # the margin kept, to the rounding of forming the tensor and of numpy's eigenvalues (16 eps C)
    assert ev[0] + ev[1] >= ev[2] + margin - 16 * np.finfo(float).eps * C
    assert abs(U[:, 2] @ R[:, 2]) == pytest.approx(1.0, abs=1e-9)       # the axis of C kept
    assert corr[0].delta == pytest.approx(delta, rel=1e-9)


def test_what_mujoco_accepts_is_returned_as_the_same_text():
    for text in (_urdf(np.diag([0.01, 0.02, 0.03])),               # a lamina: A + B = C exactly
                 _urdf(np.diag([0.1, 0.1, 0.1]), rpy=(0.3, 0, 0)),
                 (DATA / "quad_x_arm.urdf").read_text(),
                 (Path(__file__).resolve().parents[2] / "urdf" / "aerial_manipulator.urdf").read_text()):
        out, corr = balance_link_inertias(text)
        assert out is text and corr == ()


def test_a_negative_moment_and_unreadable_text_are_left_to_the_loader():
    neg = _urdf(np.diag([-0.01, 0.02, 0.05]))
    assert balance_link_inertias(neg) == (neg, ())
    for bad in ("not xml <", _urdf(np.diag([0.01, 0.01, 0.05])).replace('ixx="0.01"', 'ixx="x"')):
        assert balance_link_inertias(bad) == (bad, ())


def test_balanced_moments_closed_form():
    (a, b, c), d = balanced_moments((0.5, 0.75, 0.25))      # any order: A + B = C, valid
    assert (a, b, c, d) == (0.25, 0.5, 0.75, 0.0)
    (a, b, c), d = balanced_moments((1.0, 0.25, 0.5))      # deficit 0.25: delta 0.125, exact in binary
    assert (a, b, c, d) == (0.375, 0.625, 1.0, 0.125)
