"""Every public function's array arguments: NaN, a wrong shape and a wrong dtype raise a
``ValueError`` whose message starts with the name of the argument the caller passed.

One table lists, per public entry (``gd.__all__`` functions, the trajectory forms of inverse and
forward dynamics, the non-spatial representations and ``gd.Workspace``), a valid call by keyword
and the array arguments to spoil. Each case changes exactly one argument of a call that succeeds
(checked first), so the error can only come from that argument.
"""
import inspect
import re

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.lie import exp_se3

R = 2          # derivative order of the jet functions
T = 3          # samples of the trajectory forms


@pytest.fixture(scope="module")
def model(aerial_manipulator):
    return aerial_manipulator


def _state(model):
    rng = np.random.default_rng(11)
    n = model.n_joints
    s = dict(C=exp_se3(rng.normal(size=6) * 0.5), V=rng.normal(size=(R + 2, 6)) * 0.5,
             q=rng.normal(size=(R + 3, n)) * 0.5, W=rng.normal(size=(R + 1, 6)),
             tau=rng.normal(size=(R + 1, n)) * 0.1, v6=rng.normal(size=6) * 0.3,
             vn=rng.normal(size=n) * 0.3, vn2=rng.normal(size=n) * 0.3, v6b=rng.normal(size=6) * 0.3)
    s["ew"] = {model.link_names[2]: rng.normal(size=(R + 1, 6))}
    s["Ct"] = np.stack([exp_se3(rng.normal(size=6) * 0.5) for _ in range(T)])
    s["com"] = rng.normal(size=(R + 5, 3)) * 0.5
    s["yaw"] = rng.normal(size=R + 3) * 0.5
    for k in ("V", "q", "W", "tau", "com", "yaw"):
        s[k + "t"] = np.stack([s[k]] * T)
    return s


def _cases(model):
    """(id, callable, valid kwargs, array arguments to spoil)."""
    s = _state(model)
    last = model.joint_names[-1:]      # a prescribed joint that is not column 0 (tau[:, 0] is used)
    ws = gd.Workspace(model, R)
    dyn = dict(base_pose=s["C"], base_twist=s["V"], q=s["q"], order=R)
    fd = dict(dyn, base_wrench=s["W"], tau=s["tau"])
    ext = dict(gravity=(0.0, 0.0, -9.81), ext_wrench=s["ew"], ext_torque=s["tau"])
    lin_id = dict(base_pose=s["C"], base_twist=s["V"][:2], q=s["q"][:3], **ext)
    lin_fd = dict(base_pose=s["C"], base_twist=s["V"][:1], q=s["q"][:2], base_wrench=s["W"][:1],
                  tau=s["tau"][:1], **ext)
    red = dict(q=s["vn"])
    cases = [
        ("inverse_dynamics", gd.inverse_dynamics, dict(dyn, **ext),
         ["base_pose", "base_twist", "q", "gravity", "ext_wrench", "ext_torque"]),
        ("inverse_dynamics/hot", gd.inverse_dynamics, dyn, ["base_pose", "base_twist", "q"]),
        ("inverse_dynamics/mixed", gd.inverse_dynamics, dict(dyn, representation="mixed"),
         ["base_pose", "base_twist", "q"]),
        ("inverse_dynamics/trajectory", gd.inverse_dynamics,
         dict(base_pose=s["Ct"], base_twist=s["Vt"], q=s["qt"], order=R), ["base_pose", "base_twist", "q"]),
        ("forward_dynamics", gd.forward_dynamics, dict(fd, **ext),
         ["base_pose", "base_twist", "q", "base_wrench", "tau", "gravity", "ext_wrench", "ext_torque"]),
        ("forward_dynamics/hot", gd.forward_dynamics, fd, ["base_pose", "base_twist", "q", "base_wrench", "tau"]),
        ("forward_dynamics/body", gd.forward_dynamics, dict(fd, representation="body"),
         ["base_pose", "base_twist", "q", "base_wrench", "tau"]),
        ("forward_dynamics/trajectory", gd.forward_dynamics,
         dict(base_pose=s["Ct"], base_twist=s["Vt"], q=s["qt"], base_wrench=s["Wt"], tau=s["taut"], order=R),
         ["base_pose", "base_twist", "q", "base_wrench", "tau"]),
        ("hybrid_dynamics", gd.hybrid_dynamics, dict(dyn, tau=s["tau"], prescribed=last, **ext),
         ["base_pose", "base_twist", "q", "tau", "gravity", "ext_wrench", "ext_torque"]),
        ("hybrid_dynamics/wrench", gd.hybrid_dynamics,
         dict(dyn, tau=s["tau"], prescribed=last, base_wrench=s["W"], representation="hybrid"),
         ["base_pose", "base_twist", "q", "tau", "base_wrench"]),
        ("forward_kinematics", gd.forward_kinematics, dyn, ["base_pose", "base_twist", "q"]),
        ("Workspace.inverse_dynamics", ws.inverse_dynamics,
         dict(base_pose=s["C"], base_twist=s["V"], q=s["q"]), ["base_pose", "base_twist", "q"]),
        ("Workspace.forward_dynamics", ws.forward_dynamics,
         dict(base_pose=s["C"], base_twist=s["V"], q=s["q"], base_wrench=s["W"], tau=s["tau"]),
         ["base_pose", "base_twist", "q", "base_wrench", "tau"]),
        ("Workspace", gd.Workspace, dict(model=model, order=1, gravity=(0.0, 0.0, -9.81)), ["gravity"]),
        ("mass_matrix", gd.mass_matrix, dict(base_pose=s["C"], q=s["vn"]), ["base_pose", "q"]),
        ("coriolis_matrix", gd.coriolis_matrix, dict(base_pose=s["C"], base_twist=s["v6"], q=s["vn"], qd=s["vn2"]),
         ["base_pose", "base_twist", "q", "qd"]),
        ("gravity_vector", gd.gravity_vector, dict(base_pose=s["C"], q=s["vn"], gravity=(0.0, 0.0, -9.81)),
         ["base_pose", "q", "gravity"]),
        ("inverse_dynamics_derivatives", gd.inverse_dynamics_derivatives, lin_id,
         ["base_pose", "base_twist", "q", "gravity", "ext_wrench", "ext_torque"]),
        ("forward_dynamics_derivatives", gd.forward_dynamics_derivatives, lin_fd,
         ["base_pose", "base_twist", "q", "base_wrench", "tau", "gravity", "ext_wrench", "ext_torque"]),
        ("linearize", gd.linearize, dict(lin_fd, representation="body"),
         ["base_pose", "base_twist", "q", "base_wrench", "tau", "gravity", "ext_wrench", "ext_torque"]),
        ("inverse_mass_matrix", gd.inverse_mass_matrix, dict(base_pose=s["C"], q=s["vn"]), ["base_pose", "q"]),
        ("convert_twist", gd.convert_twist,
         dict(base_pose=s["C"], base_twist=s["V"], from_rep="spatial", to_rep="mixed"), ["base_pose", "base_twist"]),
        ("convert_wrench", gd.convert_wrench,
         dict(base_pose=s["C"], base_wrench=s["W"], base_twist=s["V"], from_rep="body", to_rep="spatial"),
         ["base_pose", "base_wrench", "base_twist"]),
        ("twist_transform", gd.twist_transform, dict(base_pose=s["C"], representation="hybrid"), ["base_pose"]),
        ("linear_first", gd.linear_first, dict(x=s["V"]), ["x"]),
        ("angular_first", gd.angular_first, dict(x=s["V"]), ["x"]),
        ("reduced_terms", gd.reduced_terms, red, ["q"]),
        ("locked_inertia", gd.locked_inertia, red, ["q"]),
        ("local_connection", gd.local_connection, red, ["q"]),
        ("decoupled_inertia", gd.decoupled_inertia, red, ["q"]),
        ("connection_curvature", gd.connection_curvature, red, ["q"]),
        ("locked_velocity", gd.locked_velocity, dict(base_twist=s["v6"], q=s["vn"], qd=s["vn2"]),
         ["base_twist", "q", "qd"]),
        ("base_twist_from_locked", gd.base_twist_from_locked, dict(mu=s["v6"], q=s["vn"], qd=s["vn2"]),
         ["mu", "q", "qd"]),
        ("spatial_momentum", gd.spatial_momentum,
         dict(base_pose=s["C"], base_twist=s["v6"], q=s["vn"], qd=s["vn2"]), ["base_pose", "base_twist", "q", "qd"]),
        ("locked_inertia_velocity", gd.locked_inertia_velocity, dict(q=s["vn"], x=s["vn2"]), ["q", "x"]),
        ("locked_inertia_derivative", gd.locked_inertia_derivative, dict(q=s["vn"], x=s["v6"]), ["q", "x"]),
        ("interaction_matrix", gd.interaction_matrix, dict(q=s["vn"], y=s["v6"]), ["q", "y"]),
        ("coriolis_decomposition", gd.coriolis_decomposition, dict(q=s["vn"], qd=s["vn2"], mu=s["v6"]),
         ["q", "qd", "mu"]),
        ("decoupled_forward_dynamics", gd.decoupled_forward_dynamics,
         dict(base_pose=s["C"], q=s["vn"], qd=s["vn2"], mu=s["v6"], base_wrench=s["v6b"], tau=s["vn2"],
              gravity=(0.0, 0.0, -9.81)),
         ["base_pose", "q", "qd", "mu", "base_wrench", "tau", "gravity"]),
        ("decoupled_inverse_dynamics", gd.decoupled_inverse_dynamics,
         dict(base_pose=s["C"], q=s["vn"], qd=s["vn2"], mu=s["v6"], mu_dot=s["v6b"], qdd=s["vn2"],
              gravity=(0.0, 0.0, -9.81)),
         ["base_pose", "q", "qd", "mu", "mu_dot", "qdd", "gravity"]),
        ("integrate_decoupled", gd.integrate_decoupled,
         dict(base_pose=s["C"], q=s["vn"], qd=s["vn2"], mu=s["v6"], duration=0.01, dt=0.01, tau=s["vn2"],
              base_wrench=s["v6b"], gravity=(0.0, 0.0, -9.81)),
         ["base_pose", "q", "qd", "mu", "tau", "base_wrench", "gravity"]),
        ("centroidal_locked_terms", gd.centroidal_locked_terms, dict(q=s["vn"], mu=s["v6"]), ["q", "mu"]),
        ("center_of_mass", gd.center_of_mass, dict(base_pose=s["C"], base_twist=s["V"], q=s["q"], order=R),
         ["base_pose", "base_twist", "q"]),
        ("flat_inverse_dynamics", gd.flat_inverse_dynamics,
         dict(com=s["com"], yaw=s["yaw"], q=s["q"], order=R, gravity=(0.0, 0.0, -9.81)), ["com", "yaw", "q", "gravity"]),
        ("flat_inverse_dynamics/hot", gd.flat_inverse_dynamics, dict(com=s["com"], yaw=s["yaw"], q=s["q"], order=R),
         ["com", "yaw", "q"]),
        ("flat_inverse_dynamics/trajectory", gd.flat_inverse_dynamics,
         dict(com=s["comt"], yaw=s["yawt"], q=s["qt"], order=R), ["com", "yaw", "q"]),
    ]
    return cases


#: functions that only reorder their input: NaN is data to them, passed through unchanged
_PERMUTATIONS = {"linear_first", "angular_first"}


def _spoil(value, how):
    """A copy of ``value`` (array, tuple or ``{link: array}``) spoiled ``how``."""
    if isinstance(value, dict):
        return {k: _spoil(v, how) for k, v in value.items()}
    a = np.array(value, dtype=float)
    if how == "nan":
        a.flat[0] = np.nan              # row 0 / sample 0 is used by every call
        return a
    if how == "shape":
        return a[..., :-1].copy()       # one column too few
    if how == "complex":
        return a + 1j
    if how == "str":
        return np.full(a.shape, "x")
    raise AssertionError(how)


HOWS = ("nan", "shape", "complex", "str")


def test_the_table_covers_every_public_function(model):
    """Every function of ``gd.__all__`` (classes with array arguments included) has a row."""
    covered = {c[0].split("/")[0].split(".")[0] for c in _cases(model)}
    public = {name for name in gd.__all__ if callable(getattr(gd, name))
              and not (isinstance(getattr(gd, name), type) and issubclass(getattr(gd, name), tuple))}
    no_arrays = {"load_urdf", "Model", "state_labels", "input_labels", "URDFWarning",
                 "SingularMassMatrixWarning"}
    assert public - no_arrays <= covered, sorted(public - no_arrays - covered)


@pytest.mark.parametrize("how", HOWS)
def test_every_array_argument_is_named(model, how):
    failures = []
    for cid, fn, kwargs, args in _cases(model):
        if "model" in inspect.signature(fn).parameters:
            kwargs = dict(kwargs, model=model)
        fn(**kwargs)                      # the unspoiled call succeeds
        for arg in args:
            bad = dict(kwargs, **{arg: _spoil(kwargs[arg], how)})
            if how == "nan" and cid in _PERMUTATIONS:
                out = fn(**bad)
                assert np.isnan(out).sum() == 1, cid
                continue
            try:
                fn(**bad)
            except ValueError as exc:
                if not re.match(rf"^{re.escape(arg)}(?![A-Za-z0-9_])", str(exc)):
                    failures.append(f"{cid}({arg}={how}): {exc}")
            except Exception as exc:      # noqa: BLE001  (anything but ValueError is a failure)
                failures.append(f"{cid}({arg}={how}): {type(exc).__name__}: {exc}")
            else:
                failures.append(f"{cid}({arg}={how}): no error")
    assert not failures, "\n".join(failures)


def test_coriolis_qd_nan_names_qd(model):
    """The case of the issue: NaN in ``qd`` used to be reported as ``q``."""
    s = _state(model)
    qd = s["vn2"].copy()
    qd[3] = np.nan
    with pytest.raises(ValueError, match=r"^qd: contains NaN"):
        gd.coriolis_matrix(model, s["C"], s["v6"], s["vn"], qd)
