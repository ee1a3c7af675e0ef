"""The falling-cat example (geodyn_ros.examples.falling_cat, Mishra et al. Sec. VI-B), cheaply.

(a) the cBVI estimate ``g_1v exp(zeta_v) g_v1`` is exact to second order in the gait size: for a
    small gait of radius eps about a generic shape the displacement is O(eps^2) and the estimate's
    error O(eps^3), so halving eps divides the displacement by ~4 and the relative error by ~2;
    the other composition order ``g_v1 exp(zeta_v) g_1v`` is wrong already at O(eps^2);
(b) ``main`` runs at low resolution and writes the PNG;
(c) the paper-size gait rotates the base by a plausible amount, and the cBVI in the virtual
    chassis approximates it. The band is physical, not taken from the script's output: the
    paper reports ~13.7 deg for its (unavailable) LWR-4+ parameters, so with assumed parameters
    only the order of magnitude is checked (1 deg < |rotation| < 45 deg), and the cBVI error
    bound (< 0.1, the paper has 0.017) is what "an accurate approximation" must at least meet.
"""
import numpy as np
import pytest

from geodyn_ros import lie
from geodyn_ros.examples import falling_cat as fc

# a generic shape, away from the symmetric straight arm (where the z curvature vanishes)
Q_C = np.array([0.3, 0.5, -0.4, 0.8, 0.2, -0.3, 0.1])


@pytest.fixture(scope="module")
def model():
    return fc.build_model()


def _small_gait(model, eps):
    e1, e2 = fc.gait_basis(model.n_joints)
    _, C = fc.reconstruct(model, e1, e2, eps, steps=40, q_c=Q_C)
    zv = fc.cbvi_polar(model, e1, e2, eps, 4, 8, "v", q_c=Q_C)
    g = fc.virtual_chassis(model, Q_C)
    est = fc.estimate_pose(model, zv, "v", q_c=Q_C)
    wrong = lie.inv_se3(g) @ lie.exp_se3(zv) @ g
    size = np.linalg.norm(lie.log_se3(C[-1]))
    return size, fc.pose_error(C[-1], est) / size, fc.pose_error(C[-1], wrong) / size


def test_small_gait_estimate_is_second_order_exact(model):
    s1, rel1, wrong1 = _small_gait(model, 0.04)
    s2, rel2, wrong2 = _small_gait(model, 0.02)
    assert 3.5 < s1 / s2 < 4.5                      # displacement O(eps^2)
    assert 1.7 < rel1 / rel2 < 2.3                  # error O(eps^3): relative error O(eps)
    assert rel2 < 0.01
    assert wrong1 > 0.5 and wrong2 > 0.5            # wrong composition order: O(1) relative error


def test_gait_geometry():
    assert fc.signed_area(0.5) == pytest.approx(-np.pi / 4, rel=1e-9)   # clockwise
    e1, e2 = fc.gait_basis()
    assert np.linalg.norm(e1) == pytest.approx(1.0) and e1 @ e2 == 0.0
    q0, _ = fc.gait(0.0, e1, e2)
    q2, _ = fc.gait(2.0, e1, e2)
    np.testing.assert_allclose([q0, q2], 0.0, atol=1e-12)


def test_main_writes_png(tmp_path, capsys):
    rc = fc.main(["--out", str(tmp_path), "--steps", "40", "--radial", "3", "--angular", "6",
                  "--grid", "6"])
    out = capsys.readouterr().out
    assert rc == 0
    png = tmp_path / fc.PNG_NAME
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "exact (RKMK4)" in out and "paper" in out


def test_paper_gait_plausible(model):
    res = fc.run(model, steps=60, n_rad=6, n_ang=12, grid=0, verbose=False)
    angle = np.degrees(np.linalg.norm(lie.log_so3(res["C_true"][:3, :3])))
    assert 1.0 < angle < 45.0
    assert res["err_v"] < 0.1
    assert res["rk_error"] < 1e-6
    # the CoM stays put (mu = 0): the virtual chassis sees no translational cBVI
    assert np.abs(res["zeta_v"][3:]).max() < 1e-10
