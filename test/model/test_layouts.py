"""The same numbers in any array layout give the same answer (bit for bit in practice).

Layouts: Fortran order, a transposed view (``.T`` of a transposed copy), strided slices of a
larger array, read-only, float32 and Python lists. float32 is compared with the float64 call on
the same float32-rounded values (float32 -> float64 is exact), so every comparison is exact:
float64 arrays of any layout go to a compiled specialisation that only copies them into the
kernels' own contiguous work arrays before any arithmetic, and everything else is converted to
C-contiguous float64 once at the boundary, so the arithmetic is the same instructions on the same
values. (Measured: bitwise equal for every function and layout below.) The comparison allows
1e-13 relative all the same: the C and the any-layout entries are separate compiled
specialisations, and with the kernels' contraction fast-math flags LLVM may contract their
shared recursion differently once inlined (seen between a specialisation compiled in the
process and one loaded from numba's cache), which changes last bits, not answers.
"""
import numpy as np
import pytest
from array_layouts import readonly, strided

import geodyn_ros as gd
from geodyn_ros.lie import exp_se3

R = 2
T = 3


def _fortran(a):
    return np.asfortranarray(a)


def _transposed(a):
    return np.ascontiguousarray(a.T).T


LAYOUTS = {"fortran": _fortran, "transposed": _transposed, "strided": strided, "readonly": readonly,
           "float32": lambda a: a.astype(np.float32), "list": lambda a: a.tolist()}


def _apply(value, fn):
    if isinstance(value, dict):
        return {k: _apply(v, fn) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return fn(value)
    return value


def _rounded32(value):
    """The float64 values a float32 input stands for."""
    return _apply(value, lambda a: a.astype(np.float32).astype(np.float64))


def _leaves(x):
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return []


@pytest.fixture(scope="module")
def model(aerial_manipulator):
    return aerial_manipulator


def _cases(model):
    rng = np.random.default_rng(21)
    n = model.n_joints
    C = exp_se3(rng.normal(size=6) * 0.5)
    V = rng.normal(size=(R + 2, 6)) * 0.5
    q = rng.normal(size=(R + 3, n)) * 0.5
    W = rng.normal(size=(R + 1, 6))
    tau = rng.normal(size=(R + 1, n)) * 0.1
    ew = {model.link_names[3]: rng.normal(size=(R + 1, 6))}
    v6, vn, vn2 = rng.normal(size=6) * 0.3, rng.normal(size=n) * 0.3, rng.normal(size=n) * 0.3
    Ct = np.stack([exp_se3(rng.normal(size=6) * 0.5) for _ in range(T)])
    Vt, qt = rng.normal(size=(T, R + 2, 6)) * 0.5, rng.normal(size=(T, R + 3, n)) * 0.5
    Wt, taut = rng.normal(size=(T, R + 1, 6)), rng.normal(size=(T, R + 1, n)) * 0.1
    ws = gd.Workspace(model, R)
    return {
        "inverse_dynamics": (gd.inverse_dynamics, dict(base_pose=C, base_twist=V, q=q, order=R)),
        "inverse_dynamics/ext": (gd.inverse_dynamics, dict(base_pose=C, base_twist=V, q=q, order=R,
                                                          ext_wrench=ew, ext_torque=tau)),
        "inverse_dynamics/mixed": (gd.inverse_dynamics, dict(base_pose=C, base_twist=V, q=q, order=R,
                                                            representation="mixed")),
        "forward_dynamics": (gd.forward_dynamics, dict(base_pose=C, base_twist=V, q=q, base_wrench=W,
                                                      tau=tau, order=R)),
        "hybrid_dynamics": (gd.hybrid_dynamics, dict(base_pose=C, base_twist=V, q=q, tau=tau, order=R,
                                                    prescribed=model.joint_names[1:3], base_wrench=W)),
        "inverse_dynamics/trajectory": (gd.inverse_dynamics, dict(base_pose=Ct, base_twist=Vt, q=qt, order=R)),
        "forward_dynamics/trajectory": (gd.forward_dynamics, dict(base_pose=Ct, base_twist=Vt, q=qt,
                                                                 base_wrench=Wt, tau=taut, order=R)),
        "Workspace.inverse_dynamics": (ws.inverse_dynamics, dict(base_pose=C, base_twist=V, q=q)),
        "Workspace.forward_dynamics": (ws.forward_dynamics, dict(base_pose=C, base_twist=V, q=q,
                                                                base_wrench=W, tau=tau)),
        "forward_kinematics": (gd.forward_kinematics, dict(base_pose=C, base_twist=V, q=q, order=R)),
        "coriolis_matrix": (gd.coriolis_matrix, dict(base_pose=C, base_twist=v6, q=vn, qd=vn2)),
        "linearize": (gd.linearize, dict(base_pose=C, base_twist=V[:1], q=q[:2], base_wrench=W[:1],
                                         tau=tau[:1])),
        "inverse_dynamics_derivatives": (gd.inverse_dynamics_derivatives,
                                         dict(base_pose=C, base_twist=V[:2], q=q[:3], representation="body")),
        "convert_wrench": (gd.convert_wrench, dict(base_pose=C, base_wrench=W, base_twist=V,
                                                   from_rep="spatial", to_rep="mixed")),
        "decoupled_forward_dynamics": (gd.decoupled_forward_dynamics,
                                       dict(base_pose=C, q=vn, qd=vn2, mu=v6, base_wrench=W[0], tau=tau[0])),
        "coriolis_decomposition": (gd.coriolis_decomposition, dict(q=vn, qd=vn2, mu=v6)),
    }


CASES = ["inverse_dynamics", "inverse_dynamics/ext", "inverse_dynamics/mixed", "forward_dynamics",
         "hybrid_dynamics", "inverse_dynamics/trajectory", "forward_dynamics/trajectory",
         "Workspace.inverse_dynamics", "Workspace.forward_dynamics", "forward_kinematics", "coriolis_matrix",
         "linearize", "inverse_dynamics_derivatives", "convert_wrench", "decoupled_forward_dynamics",
         "coriolis_decomposition"]


@pytest.mark.parametrize("case", CASES)
def test_every_layout_gives_the_same_bits(model, case):
    fn, kwargs = _cases(model)[case]
    if "model" in fn.__code__.co_varnames[:fn.__code__.co_argcount]:
        kwargs = dict(kwargs, model=model)
    copies = {k: _apply(v, np.copy) for k, v in kwargs.items()}

    def run(kw):
        # copy: a Workspace returns its own arrays, overwritten by the next call
        return [leaf.copy() for leaf in _leaves(fn(**kw))]

    run(kwargs)                                       # makes the hot-path work buffers
    ref = run(kwargs)
    ref32 = run({k: _rounded32(v) for k, v in kwargs.items()})
    checked = 0
    for name, layout in LAYOUTS.items():
        # every array argument in the layout, then only one of them (mixed layouts in one call)
        variants = [{k: _apply(v, layout) for k, v in kwargs.items()}]
        arrays = [k for k, v in kwargs.items() if isinstance(v, (np.ndarray, dict))]
        variants.append(dict(kwargs, **{arrays[-1]: _apply(kwargs[arrays[-1]], layout)}))
        for i, kw in enumerate(variants):
            want = ref32 if name == "float32" and i == 0 else ref
            if name == "float32" and i == 1:
                want = run(dict(kwargs, **{arrays[-1]: _rounded32(kwargs[arrays[-1]])}))
            got = run(kw)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.dtype == np.float64 and g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=0, atol=1e-13 * max(1.0, np.abs(w).max()),
                                           err_msg=f"{case}, {name}, variant {i}")
            checked += 1
    assert checked == 2 * len(LAYOUTS)
    for k, v in kwargs.items():                       # the caller's arrays are never modified
        for a, b in zip(_leaves([v] if not isinstance(v, dict) else list(v.values())),
                        _leaves([copies[k]] if not isinstance(copies[k], dict) else list(copies[k].values()))):
            np.testing.assert_array_equal(a, b)


def test_float32_really_differs_from_float64(model):
    """The float32 comparison above is meaningful: rounding to float32 changes the answer, so a
    call that ignored the dtype (or compared float32 against the unrounded reference) would fail."""
    fn, kwargs = _cases(model)["inverse_dynamics"]
    a = fn(model=model, **kwargs).tau
    b = fn(model=model, **{k: _rounded32(v) for k, v in kwargs.items()}).tau
    assert not np.array_equal(a, b)
