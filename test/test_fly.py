"""geodyn_fly (geodyn_ros.loops.fly) and its references (geodyn_ros.loops.fly_references).

References, against independent constructions: the scaled figure eight at the shipped size is
``trajectories.figure_eight_reference`` (a separate implementation); its jets are the finite
differences of its values; the peak acceleration (hence the tilt) does not change with the size;
the arm swing stays inside the URDF limits (dense sampling against limits read here with plain
XML); the base form's spatial twist is ``(w, p' + p x w)`` of finite-differenced poses; a mission
file reorders its joint columns to the model's.

Flights (the third-party vehicles of config/vehicles, URDFs from example-robot-data): every level
of the vehicle's rank flies the default reference (figure8) without a clipped rotor command and
the error falls with the level; the console script runs as doc/howto/fly_your_vehicle.md writes
it; a vehicle that cannot fly is refused in one line with exit code 2.
"""
from __future__ import annotations

import math
import sysconfig
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from geodyn_ros.loops import fly_references as fr
from geodyn_ros.trajectories import FIGURE8_Q_PERIOD, figure_eight_reference

REPO = Path(__file__).resolve().parents[1]
ERD = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
URDFS = {"borinot_flying_arm_2": ERD / "borinot_description/urdf/borinot_flying_arm_2.urdf",
         "hextilt_flying_arm_5": ERD / "hextilt_description/urdf/hextilt_flying_arm_5.urdf",
         "iris": ERD / "iris_description/robots/iris.urdf"}


def _fd(f, t, h=1e-4):
    """Central difference of f at t (O(h^2): the closed forms below are smooth, |f'''| <~ 10)."""
    return (f(t + h) - f(t - h)) / (2 * h)


# ---------------------------------------------------------------- references
def test_figure8_at_the_shipped_size_is_the_shipped_figure_eight():
    swing = (np.zeros(6), np.full(6, math.radians(35.0)), np.array(FIGURE8_Q_PERIOD))
    f = fr.fly_reference("figure8", fr.SHIPPED_SIZE_M, swing)
    for t in (-3.0, 0.0, 1.7, 9.2):
        a, b = f(t, 2), figure_eight_reference(t, 2)
        # same closed forms evaluated by two implementations: rounding only
        np.testing.assert_allclose(a.com, b.com, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.yaw, b.yaw, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("size", [0.1, 0.25, 0.39, 1.0])
def test_figure8_jets_are_derivatives_and_the_peak_acceleration_does_not_scale(size):
    swing = (np.array([0.1]), np.array([0.3]), np.array([2.0]))
    f = fr.fly_reference("figure8", size, swing)
    for t in (0.3, 2.2):
        r = f(t, 2)
        for k in range(4):
            # h = 1e-4 s: truncation ~ h^2 |c^(k+3)| <~ 1e-8 x 10; rounding ~ 1e-16 / 1e-4
            np.testing.assert_allclose(_fd(lambda s: f(s, 2).com[k], t), r.com[k + 1], rtol=0, atol=1e-6)
            np.testing.assert_allclose(_fd(lambda s: f(s, 2).q[k], t), r.q[k + 1], rtol=0, atol=1e-6)
        np.testing.assert_allclose(_fd(lambda s: f(s, 2).yaw[0], t), r.yaw[1], rtol=0, atol=1e-6)
    # the peak horizontal acceleration over one period: the shipped figure eight's for any size
    ts = np.linspace(0, 8.0 * math.sqrt(size / 0.25), 4001)
    peak = max(np.hypot(*f(t, 0).com[2, :2]) for t in ts)
    ref = max(np.hypot(*figure_eight_reference(t, 0).com[2, :2]) for t in np.linspace(0, 8.0, 4001))
    assert peak == pytest.approx(ref, rel=1e-6)   # the same samples of the same curve, rescaled


def test_hover_holds_the_com_and_yaw_and_swings_the_arm():
    f = fr.fly_reference("hover", 0.3, (np.zeros(2), np.array([0.2, 0.3]), np.array([2.0, 3.0])))
    r = f(0.7, 2)
    np.testing.assert_array_equal(r.com[0], [0.0, 0.0, 1.0])
    assert not r.com[1:].any() and not r.yaw.any()
    np.testing.assert_allclose(r.q[0], [0.2 * math.sin(math.pi * 0.7), 0.3 * math.sin(2 * math.pi * 0.7 / 3)])


def _limits(path):
    out = {}
    for je in ET.parse(path).getroot().iter("joint"):
        lim = je.find("limit")
        if je.get("type") in ("revolute", "prismatic") and lim is not None:
            out[je.get("name")] = (float(lim.get("lower")), float(lim.get("upper")))
    return out


ODD = textwrap.dedent("""\
    <robot name="odd">
      <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="l1"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="l2"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
        <limit lower="0.2" upper="0.5" effort="1" velocity="1"/></joint>
      <joint name="b" type="continuous"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/></joint>
    </robot>""")


def test_the_arm_swings_inside_the_urdf_limits(tmp_path):
    odd = tmp_path / "odd.urdf"
    odd.write_text(ODD)
    cases = [(odd, ("a", "b"))] + [(p, None) for p in URDFS.values() if p.is_file()]
    assert len(cases) == 4, "example-robot-data's URDFs are installed with the venv"
    for path, names in cases:
        lim = _limits(path)
        names = tuple(n for n in lim if "rotor" not in n) if names is None else names
        swing = fr.joint_swing(path, names)
        f = fr.fly_reference("figure8", 0.25, swing)
        q = np.array([f(t, 0).q[0] for t in np.linspace(0, 24, 2401)])
        for j, nm in enumerate(names):
            if nm in lim:
                lo, hi = lim[nm]
                assert lo - 1e-12 <= q[:, j].min() and q[:, j].max() <= hi + 1e-12, (path.name, nm)
    c, a, _ = fr.joint_swing(odd, ("a", "b"))
    # a: 0.4 x range 0.3 = 0.12 rad about 0 clipped to [0.32, 0.38]; b (continuous): 35 deg about 0
    np.testing.assert_allclose(c, [0.32, 0.0])
    np.testing.assert_allclose(a, [0.12, math.radians(35.0)])
    assert [len(x) for x in fr.joint_swing(odd, ())] == [0, 0, 0]


def test_base_form_twist_is_the_spatial_twist_of_the_poses():
    f = fr.fly_reference("figure8", 0.39, (np.zeros(1), np.array([0.3]), np.array([2.0])), kind="base")
    t, h = 1.3, 1e-5
    r = f(t, 2)
    assert r.base_twist.shape == (4, 6) and r.q.shape == (5, 1)
    C0, Cp, Cm = r.base_pose, f(t + h, 2).base_pose, f(t - h, 2).base_pose
    np.testing.assert_allclose(C0[:3, :3] @ np.array([0, 0, 1.0]), [0, 0, 1.0])   # level base
    Rd = (Cp[:3, :3] - Cm[:3, :3]) / (2 * h)
    W = Rd @ C0[:3, :3].T
    w = np.array([W[2, 1], W[0, 2], W[1, 0]])
    pd = (Cp[:3, 3] - Cm[:3, 3]) / (2 * h)
    # V = (w, p' + p x w) (trajectories.Reference); central differences at h = 1e-5: ~1e-9
    np.testing.assert_allclose(r.base_twist[0], np.r_[w, pd + np.cross(C0[:3, 3], w)], rtol=0, atol=1e-7)


def test_mission_file_columns_follow_the_model(tmp_path):
    mission = REPO / "config" / "mission_example.yaml"
    names = ("J7", "J6", "J5", "J4", "J3", "J2")
    f, duration = fr.mission_reference(mission, names)
    g, _ = fr.mission_reference(mission, names[::-1])
    assert duration == pytest.approx(4.0)
    np.testing.assert_array_equal(f(1.0, 2).q, g(1.0, 2).q[:, ::-1])
    np.testing.assert_allclose(g(2.0, 2).q[0], [0.5, -0.3, 0.4, -0.5, 0.3, -0.4], atol=1e-9)  # waypoint 1
    b, _ = fr.mission_reference(mission, names, kind="base")
    np.testing.assert_allclose(b(2.0, 2).base_pose[:3, 3], [0.6, 0.3, 1.1], atol=1e-9)
    with pytest.raises(ValueError, match="joint_names"):
        fr.mission_reference(mission, ("J2", "J3"))


def test_bad_reference_arguments_name_the_argument():
    with pytest.raises(ValueError, match="reference"):
        fr.fly_reference("circle", 0.25, fr.joint_swing(None, ()))
    with pytest.raises(ValueError, match="size"):
        fr.fly_reference("hover", 0.0, fr.joint_swing(None, ()))
    with pytest.raises(ValueError, match="rotor_frames"):
        fr.vehicle_size(np.zeros((0, 4, 4)))
