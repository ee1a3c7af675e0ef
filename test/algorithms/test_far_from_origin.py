"""Accuracy of the dynamics far from the world origin (README "Accuracy far from the world origin").

Identity: translating the whole motion by d leaves the joint torques and the body-frame base
wrench unchanged (the spatial twist rows change by ``d x w^(k)``, exactly). The measured
relative error grows like eps * d / (robot size): 1e-12 at 1 km, 6e-10 at 1e6 m (UTM scale),
5e-7 at 1e9 m. The bounds below are 10x the measured values, so the test fails if the error
grows faster with d than rounding explains.
"""
import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.lie import exp_se3


@pytest.mark.parametrize("d, bound", [(1e3, 1e-11), (1e6, 1e-8), (1e9, 1e-5)])
def test_translation_invariance_far_away(aerial_manipulator, d, bound):
    m = aerial_manipulator
    r = 2
    rng = np.random.default_rng(1)
    C0 = exp_se3(rng.normal(size=6) * 0.3)
    Vb = rng.normal(size=(r + 2, 6))
    Q = rng.normal(size=(r + 3, m.n_joints))

    def run(p):
        C = C0.copy()
        C[:3, 3] += p
        V = gd.convert_twist(C, Vb, "body", "spatial")
        res = gd.inverse_dynamics(m, C, V, Q, r)
        return res.tau, gd.convert_wrench(C, res.base_wrench, V, "spatial", "body")

    t0, w0 = run(np.zeros(3))
    t, w = run(np.array([d, 0.6 * d, -0.3 * d]) / 1.2)
    assert np.abs(t - t0).max() / np.abs(t0).max() <= bound
    assert np.abs(w - w0).max() / np.abs(w0).max() <= bound
