"""The compiled float32 twins of the hot entries (``kernels.common._f32_sigs``, issue 56 item 2).

A float32 input (every array, or ``q`` alone with the others float64), in any layout, goes to a
compiled twin that copies it to float64 inside the call. Independent reference: the float64 call
on the same numbers (float32 to float64 is exact), to the 1e-12 relative of
``test_workspace.py``'s docstring (the twin runs the C-contiguous specialisation, which LLVM may
inline differently from the one the reference ran). The twin is shown to be the path taken by
making the Python-side conversion (``_hot_arg``) raise; errors are the float64 call's errors; no
call compiles a new numba specialisation.
"""
import numpy as np
import pytest
from array_layouts import hot_state, readonly, strided
from numba.core.registry import CPUDispatcher

import geodyn_ros as gd
import geodyn_ros.algorithms.checks as checks
from geodyn_ros.algorithms import kernels


@pytest.fixture(scope="module")
def model(aerial_manipulator):
    return aerial_manipulator


LAYOUTS = {"C": lambda a: a, "fortran": np.asfortranarray, "strided": strided, "readonly": readonly}


def _no_python_conversion(monkeypatch):
    def refuse(x, name):
        raise AssertionError(f"{name} converted in Python: the float32 twin was not taken")
    monkeypatch.setattr(checks, "_hot_arg", refuse)   # the one converter every conversion path calls


def _close(got, want):
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))


def _signatures():
    out = {}
    for mod in (kernels.inverse, kernels.hybrid, kernels.common):
        for k, v in vars(mod).items():
            if isinstance(v, CPUDispatcher):
                out[f"{mod.__name__}.{k}"] = len(v.signatures)
    return out


@pytest.mark.parametrize("r", [0, 3])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("which", ["all", "q"])
def test_float32_takes_the_twin_and_gives_the_float64_answer(model, monkeypatch, r, layout, which):
    ws = gd.Workspace(model, r)
    C, V, q, W, tau = hot_state(model, r, 11 + r)
    f32 = [x.astype(np.float32) for x in (C, V, q, W, tau)]
    ref = [x.astype(np.float64) for x in f32]          # the same numbers in float64
    conv = LAYOUTS[layout]
    args = [conv(x) for x in f32] if which == "all" else [conv(ref[0]), conv(ref[1]), conv(f32[2]),
                                                          conv(ref[3]), conv(ref[4])]
    want_id = gd.inverse_dynamics(model, *ref[:3], r)
    want_fd = gd.forward_dynamics(model, *ref, r)
    before = _signatures()
    _no_python_conversion(monkeypatch)
    _close(gd.inverse_dynamics(model, *args[:3], r), want_id)
    _close(gd.forward_dynamics(model, *args, r), want_fd)
    _close(ws.inverse_dynamics(*args[:3]), want_id)
    _close(ws.forward_dynamics(*args), want_fd)
    assert _signatures() == before


def test_other_mixes_are_converted_and_right(model):
    """A float32 pose with float64 jets is no twin's signature: converted in Python, same answer."""
    C, V, q, W, tau = hot_state(model, 1, 3)
    C32 = C.astype(np.float32)
    want = gd.inverse_dynamics(model, C32.astype(np.float64), V, q, 1)
    _close(gd.inverse_dynamics(model, C32, V, q, 1), want)
    _close(gd.Workspace(model, 1).inverse_dynamics(C32, V, q), want)


@pytest.mark.parametrize("entry", ["plain", "workspace"])
@pytest.mark.parametrize("bad, match", [
    ("nan_q", r"^q: "), ("inf_twist", r"^base_twist: "), ("short_q", r"^q: "), ("q_1d", r"^q: "),
    ("wrench_cols", r"^base_wrench: ")])
def test_float32_errors_are_the_float64_errors(model, entry, bad, match):
    """A float32 input the entry cannot take is refused as the float64 one is, naming it."""
    r = 1
    C, V, q, W, tau = [x.astype(np.float32) for x in hot_state(model, r, 4)]
    if bad == "nan_q":
        q[1, 2] = np.nan
    elif bad == "inf_twist":
        V[0, 0] = np.inf
    elif bad == "short_q":
        q = q[:1]
    elif bad == "q_1d":
        q = q[0]
    elif bad == "wrench_cols":
        W = W[:, :5]
    ws = gd.Workspace(model, r)
    with pytest.raises(ValueError, match=match) as f64_err:
        gd.forward_dynamics(model, *(x.astype(np.float64) for x in (C, V, q, W, tau)), r)
    with pytest.raises(ValueError, match=match) as f32_err:
        if entry == "plain":
            gd.forward_dynamics(model, C, V, q, W, tau, r)
        else:
            ws.forward_dynamics(C, V, q, W, tau)
    assert str(f32_err.value) == str(f64_err.value)
    if bad != "wrench_cols":
        with pytest.raises(ValueError, match=match):
            gd.inverse_dynamics(model, C, V, q, r) if entry == "plain" else ws.inverse_dynamics(C, V, q)
    # the next good call gives the answer
    C, V, q, W, tau = hot_state(model, r, 4)
    _close(ws.inverse_dynamics(C, V, q), gd.inverse_dynamics(model, C, V, q, r))
