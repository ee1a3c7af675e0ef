"""gd.Workspace: the lean entry gives the plain functions' answers in arrays it owns.

The lean kernels call the same recursion as the plain hot path with the same argument types;
only where the outputs live differs. LLVM may inline that recursion differently into the two
entry points (and the plain path with a non-default gravity runs the general kernel), and with
the kernels' contraction/reassociation fast-math flags the last bits can then differ, depending
even on whether a specialisation was compiled in the process or loaded from numba's cache: both
are compared to 1e-12 relative per array (measured up to 1e-13 at order 3 with a non-default
gravity in CI: one rounding step amplified by the order-3 recursion).
"""
import numpy as np
import pytest

import geodyn_ros as gd
from array_layouts import hot_state


@pytest.fixture(scope="module")
def model(aerial_manipulator):
    return aerial_manipulator


@pytest.mark.parametrize("r", [0, 1, 3])
@pytest.mark.parametrize("gravity", [gd.DEFAULT_GRAVITY, (0.3, -1.0, -9.0)])
def test_same_bits_as_the_plain_functions(model, r, gravity):
    ws = gd.Workspace(model, r, gravity=gravity)
    for seed in range(3):
        C, V, q, W, tau = hot_state(model, r, seed)
        a = ws.inverse_dynamics(C, V, q)
        b = gd.inverse_dynamics(model, C, V, q, r, gravity=gravity)
        for x, y in ((a.base_wrench, b.base_wrench), (a.tau, b.tau)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))
        f = ws.forward_dynamics(C, V, q, W, tau)
        g = gd.forward_dynamics(model, C, V, q, W, tau, r, gravity=gravity)
        for x, y in ((f.base_twist, g.base_twist), (f.q, g.q)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))
        assert a.tau.shape == (r + 1, model.n_joints) and f.q.shape == (r + 3, model.n_joints)


def test_gravity_matters(model):
    """The workspace's gravity is used (a non-default gravity changes the answer)."""
    C, V, q, _, _ = hot_state(model, 0, 7)
    a = gd.Workspace(model, 0).inverse_dynamics(C, V, q).tau.copy()
    b = gd.Workspace(model, 0, gravity=(0.0, 0.0, -3.0)).inverse_dynamics(C, V, q).tau
    assert not np.array_equal(a, b)


def test_outputs_are_owned_and_overwritten(model):
    ws = gd.Workspace(model, 1)
    s1, s2 = hot_state(model, 1, 1), hot_state(model, 1, 2)
    a = ws.inverse_dynamics(*s1[:3])
    first = a.tau.copy()
    b = ws.inverse_dynamics(*s2[:3])
    assert b is a                                       # the same result object, same arrays
    assert not np.array_equal(a.tau, first)            # ... overwritten by the next call
    np.testing.assert_array_equal(b.tau, gd.inverse_dynamics(model, *s2[:3], 1).tau)
    with pytest.raises(ValueError):                    # read-only views: the workspace owns them
        a.tau[0, 0] = 1.0
    f = ws.forward_dynamics(*s1)
    assert not np.shares_memory(f.q, a.tau)            # ID and FD have separate outputs
    other = gd.Workspace(model, 1).inverse_dynamics(*s1[:3])
    assert not np.shares_memory(other.tau, a.tau)      # and so do two workspaces


def test_declined_inputs_raise_the_plain_errors_and_recover(model):
    ws = gd.Workspace(model, 2)
    C, V, q, W, tau = hot_state(model, 2, 3)
    ok = ws.inverse_dynamics(C, V, q).tau.copy()
    bad = q.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^q: contains NaN"):
        ws.inverse_dynamics(C, V, bad)
    with pytest.raises(ValueError, match=r"^base_twist: expected shape"):
        ws.inverse_dynamics(C, V[:3], q)
    with pytest.raises(ValueError, match=r"^base_pose: is not a rigid transform"):
        ws.inverse_dynamics(C * 1.1, V, q)
    with pytest.raises(ValueError, match=r"^base_pose: expected shape \(4, 4\)"):
        ws.inverse_dynamics(np.stack([C, C]), np.stack([V, V]), np.stack([q, q]))
    with pytest.raises(ValueError, match=r"^base_wrench: required"):
        ws.forward_dynamics(C, V, q, None, tau)
    np.testing.assert_array_equal(ws.inverse_dynamics(C, V, q).tau, ok)   # usable after errors


def test_constructor_checks(model):
    with pytest.raises(ValueError, match=r"^model"):
        gd.Workspace("robot.urdf")
    with pytest.raises(ValueError, match=r"^order"):
        gd.Workspace(model, -1)
    with pytest.raises(ValueError, match=r"^gravity"):
        gd.Workspace(model, 0, gravity=(0.0, np.inf, -9.81))


@pytest.mark.parametrize("layout", ["float32", "int", "list", "fortran", "readonly"])
def test_every_accepted_layout_gives_the_float64_answer(model, layout):
    """float32, integer, list and other float64 layouts are converted once (checks._hot_args)
    and give the answer of the float64 C-contiguous call on the same numbers: the conversion to
    float64 is exact, so the results are equal bit for bit (to the 1e-12 of the module docstring
    for float64 layouts, which may run the any-layout specialisation). Before, a non-float64
    input went through numba's TypeError for an unmatched signature (~0.5 ms per call)."""
    ws = gd.Workspace(model, 1)
    C, V, q, W, tau = hot_state(model, 1, 5)
    conv = {"float32": lambda a: a.astype(np.float32), "int": lambda a: np.round(a * 3).astype(np.int64),
            "list": lambda a: a.tolist(), "fortran": np.asfortranarray,
            "readonly": lambda a: np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape)}[layout]
    args = [conv(x) for x in (C, V, q, W, tau)]
    ref = [np.asarray(a, dtype=np.float64) for a in args]
    if layout == "int":   # an integer pose is not rigid: only the jets are integers
        args[0], ref[0] = C, C
    want_id = gd.inverse_dynamics(model, *ref[:3], 1)
    want_fd = gd.forward_dynamics(model, *ref, 1)
    got_id = ws.inverse_dynamics(*args[:3])
    for x, y in ((got_id.base_wrench, want_id.base_wrench), (got_id.tau, want_id.tau)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))
    got_fd = ws.forward_dynamics(*args)
    for x, y in ((got_fd.base_twist, want_fd.base_twist), (got_fd.q, want_fd.q)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))
