"""``geodyn_ros.lie.matrix_to_quat`` (one compiled kernel, ``rotation_to_wxyz``, also used by
``geodyn_node``'s ``desired/state`` writer) against independent references, and its two callers
against each other.

* On random rotations, on each of Shepperd's four branches (trace > 0; trace <= 0 with the x, y
  or z diagonal entry largest) and on the half-turns where the raw ``w`` comes out negative, the
  quaternion rebuilds the rotation by the closed form ``R(q)`` (``lie.quat_to_matrix``, written
  out independently of the kernel) to 1e-15 and equals scipy's ``Rotation.as_quat`` up to the
  sign convention (``w >= 0`` here) to 1e-15.
* ``matrix_to_quat`` (Python entry), ``raw_outputs.quat_xyzw`` and the quaternion the compiled
  ``DesiredStateOutput.write_ro`` writes into ``desired/state`` are the same bytes (one kernel).
* ``order`` (``xyzw`` default, anything else ``wxyz``) and a ValueError naming ``R`` for a shape
  other than (3, 3).
"""
import math

import numpy as np
import pytest

from geodyn_ros.lie import matrix_to_quat, quat_to_matrix, rotation_to_wxyz

RNG = np.random.default_rng(11)


def _rotations():
    """(case, R): random rotations and rotations built to land in each branch of the kernel."""
    for _ in range(200):
        q = RNG.normal(size=4)
        yield "random", quat_to_matrix(q / np.linalg.norm(q), "xyzw")
    for axis in range(3):   # more than 120 deg about an axis near x, y or z: trace < 0, that diagonal largest
        for _ in range(100):
            v = 0.1 * RNG.normal(size=3)
            v[axis] = 1.0
            ang = RNG.uniform(2.2, math.pi)
            q = np.r_[math.sin(ang / 2) * v / np.linalg.norm(v), math.cos(ang / 2)]
            yield "xyz"[axis], quat_to_matrix(q, "xyzw")
    for _ in range(100):   # beyond a half-turn about a positive axis: the branch's raw w, w sign(q_i), is negative
        v = np.abs(RNG.normal(size=3))
        ang = RNG.uniform(math.pi, 2 * math.pi - 2.2)
        q = np.r_[math.sin(ang / 2) * v / np.linalg.norm(v), math.cos(ang / 2)]
        yield "w<0", quat_to_matrix(q, "xyzw")


def _branch(R):
    if np.trace(R) > 0:
        return "trace"
    return "xyz"[int(np.argmax(np.diag(R)))]


def test_matrix_to_quat_against_closed_form_and_scipy():
    Rotation = pytest.importorskip("scipy.spatial.transform").Rotation
    seen = set()
    flips = 0
    for case, R in _rotations():
        b = _branch(R)
        seen.add(b)
        if case in "xyz":
            assert b == case
        if case == "w<0":   # the raw w of the branch, before the sign is fixed, is negative
            i = "xyz".index(b) if b != "trace" else None
            raw_w = {0: R[2, 1] - R[1, 2], 1: R[0, 2] - R[2, 0], 2: R[1, 0] - R[0, 1]}[i] if i is not None else 1.0
            flips += raw_w < 0
        q = matrix_to_quat(R, "xyzw")
        assert q[3] >= 0.0
        # closed form R(q): a unit quaternion's matrix; a few O(1) products: rounding ~1e-16 per entry
        assert np.abs(quat_to_matrix(q, "xyzw") - R).max() <= 1e-15
        want = Rotation.from_matrix(R).as_quat()   # xyzw, scipy's own algorithm
        want = -want if want[3] < 0 else want
        # both unit to ~1 ulp; scipy's branch may differ from ours: 1e-15 on O(1) numbers
        assert np.abs(q - want).max() <= 1e-15
    assert seen == {"trace", "x", "y", "z"} and flips == 100


def test_every_caller_gives_the_same_bytes():
    pytest.importorskip("rclpy")
    from geodyn_ros.ros.wire.raw_outputs import DesiredStateOutput, quat_xyzw, readonly_views
    out = DesiredStateOutput(("J2",), 0)
    V, q = readonly_views((np.zeros((2, 6)), np.zeros((2, 1))))
    for _, R in _rotations():
        C = np.eye(4)
        C[:3, :3] = R
        a = matrix_to_quat(R, "xyzw")
        assert a.tobytes() == quat_xyzw(C).tobytes() == quat_xyzw(R).tobytes()
        (Cr,) = readonly_views((C,))
        out.write_ro(5, Cr, V, q)
        assert out.data[5:9].tobytes() == a.tobytes()
        w, x, y, z = rotation_to_wxyz(R)
        assert np.array([x, y, z, w]).tobytes() == a.tobytes()


def test_order_and_bad_shape():
    R = quat_to_matrix([0.1, -0.2, 0.3, 0.9], "xyzw")
    xyzw = matrix_to_quat(R)
    assert np.array_equal(matrix_to_quat(R, "wxyz"), xyzw[[3, 0, 1, 2]])
    assert np.array_equal(matrix_to_quat(R.tolist(), "xyzw"), xyzw)          # any array-like
    assert np.array_equal(matrix_to_quat(np.asfortranarray(R)), xyzw)        # any layout
    with pytest.raises(ValueError, match="R: a .3, 3. rotation"):
        matrix_to_quat(np.eye(4))
    with pytest.raises(ValueError, match="R: a .3, 3. rotation"):
        matrix_to_quat(np.eye(2))
