"""Tests of bench/core/make_tree_urdf.py (the Table 4 benchmark tree)."""
import importlib.util
import math
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_tree_urdf", ROOT / "bench" / "core" / "make_tree_urdf.py")
make_tree_urdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_tree_urdf)
branched_tree_urdf = make_tree_urdf.branched_tree_urdf


@pytest.mark.parametrize("K,branches", [(1, 5), (3, 2), (4, 5), (20, 5), (2, 3)])
def test_structure(K, branches):
    root = ET.fromstring(branched_tree_urdf(K, branches))
    links = root.findall("link")
    joints = root.findall("joint")
    assert len(links) == 1 + branches * K
    assert len(joints) == branches * K
    assert all(j.get("type") == "revolute" for j in joints)
    names = [j.get("name") for j in joints]
    assert names == [f"b{i}_j{k}" for i in range(branches) for k in range(K)]
    assert {l.get("name") for l in links} == {"base_link"} | {
        f"b{i}_l{k}" for i in range(branches) for k in range(K)}
    for j in joints:
        i, k = (int(s[1:]) for s in j.get("name").split("_"))
        assert j.find("child").get("link") == f"b{i}_l{k}"
        assert j.find("parent").get("link") == ("base_link" if k == 0 else f"b{i}_l{k - 1}")
        assert j.find("axis").get("xyz") == ["0 1 0", "1 0 0", "0 0 1"][k % 3]
        xyz = np.array([float(v) for v in j.find("origin").get("xyz").split()])
        if k == 0:  # first joint: horizontal distance c/2 at azimuth 2 pi i / branches, z = -b
            theta = 2 * math.pi * i / branches
            np.testing.assert_allclose(xyz, [0.09 * math.cos(theta), 0.09 * math.sin(theta), -0.1],
                                       atol=1e-15)
        else:
            np.testing.assert_array_equal(xyz, [0, 0, -0.12])


def test_bad_arguments():
    for K, br in [(0, 5), (-1, 5), (2, 0), (1.5, 5), (True, 5)]:
        with pytest.raises(ValueError):
            branched_tree_urdf(K, br)


def test_cli_writes_file(tmp_path):
    out = tmp_path / "tree.urdf"
    subprocess.run([sys.executable, str(ROOT / "bench" / "core" / "make_tree_urdf.py"), "3", "-o", str(out)],
                   check=True)
    assert out.read_text() == branched_tree_urdf(3)
    stdout = subprocess.run([sys.executable, str(ROOT / "bench" / "core" / "make_tree_urdf.py"), "2",
                             "--branches", "2"], check=True, capture_output=True, text=True).stdout
    assert stdout == branched_tree_urdf(2, 2)


@pytest.fixture(scope="module")
def pin():
    return pytest.importorskip("pinocchio")


@pytest.mark.parametrize("K", [1, 4, 20])
def test_pinocchio_counts_and_mass(pin, K):
    model = pin.buildModelFromXML(branched_tree_urdf(K), pin.JointModelFreeFlyer())
    assert model.nq == 7 + 5 * K
    assert model.nv == 6 + 5 * K
    assert pin.computeTotalMass(model) == pytest.approx(2.5 + 0.25 * 5 * K, rel=1e-14)


def test_two_branches_three_bodies_is_the_shipped_aerial_manipulator(pin):
    """branches=2, K=3 must reproduce urdf/aerial_manipulator.urdf: same joint placements,
    axes, inertias (joint order b0_j0..b1_j2 == J2..J7), hence the same mass matrix."""
    tree = pin.buildModelFromXML(branched_tree_urdf(3, 2), pin.JointModelFreeFlyer())
    ship = pin.buildModelFromUrdf(str(ROOT / "urdf" / "aerial_manipulator.urdf"),
                                  pin.JointModelFreeFlyer())
    assert list(tree.names)[2:] == [f"b{i}_j{k}" for i in range(2) for k in range(3)]
    assert list(ship.names)[2:] == ["J2", "J3", "J4", "J5", "J6", "J7"]
    assert tree.parents.tolist() == ship.parents.tolist()
    for a, b in zip(tree.jointPlacements, ship.jointPlacements):
        np.testing.assert_allclose(a.homogeneous, b.homogeneous, atol=1e-15)
    for a, b in zip(tree.inertias, ship.inertias):
        np.testing.assert_allclose(a.matrix(), b.matrix(), atol=1e-15)
    for a, b in zip(tree.joints, ship.joints):
        assert a.shortname() == b.shortname()
    rng = np.random.default_rng(1)
    q = pin.randomConfiguration(ship, -np.ones(ship.nq), np.ones(ship.nq))
    v = rng.normal(size=ship.nv)
    np.testing.assert_allclose(pin.crba(tree, tree.createData(), q),
                               pin.crba(ship, ship.createData(), q), atol=1e-14)
    np.testing.assert_allclose(pin.rnea(tree, tree.createData(), q, v, 0 * v),
                               pin.rnea(ship, ship.createData(), q, v, 0 * v), atol=1e-13)
