"""Analytic derivatives vs central geometric finite differences, over a sweep of step sizes.

For a state ``x = (C, q, V, qd)`` and a unit perturbation direction ``e_k`` of
``z = (delta, dq, dV, dqd)`` the central difference

    (F(x (+) h e_k) - F(x (-) h e_k)) / (2 h),   C (+) delta = C exp(hat(delta)),

approximates column ``k`` of the left-trivialized derivative with error
``h^2 |F'''| / 6`` (truncation) ``+ eps |F| / h`` (rounding): plotted against ``h`` on log
axes the error is V-shaped, slope +2 on the right and -1 on the left, the minimum near
``h ~ eps^(1/3)`` (about 1e-5). ``F`` is the inverse dynamics (``gd.inverse_dynamics``) or the
forward dynamics (``gd.forward_dynamics``), evaluated through the public order-0 functions in
the chosen representation, so the difference quotient shares no code with the derivative kernel.

Run ``python -m geodyn_ros.examples.fd_step_sweep --out out`` (``make fd-sweep``): writes
``fd_step_sweep.csv`` and ``fd_step_sweep.png``.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import geodyn_ros as gd
from geodyn_ros import lie

__all__ = ["perturb", "id_function", "fd_function", "central_difference", "sweep", "main"]


def perturb(model, C, q, V, qd, z):
    """The state ``x (+) z``: ``(C exp(hat(delta)), q + dq, V + dV, qd + dqd)``."""
    n = model.n_joints
    return C @ lie.exp_se3(z[:6]), q + z[6:6 + n], V + z[6 + n:12 + n], qd + z[12 + n:]


def _to_spatial(C, V, rep):
    return lie.Ad(C) @ V if rep == "body" else V


def id_function(model, Vd, qdd, rep, gravity=gd.DEFAULT_GRAVITY, ext_wrench=None, ext_torque=None):
    """``F(C, q, V, qd) = (W, tau)`` of the inverse dynamics at fixed accelerations ``(Vd, qdd)``,
    twist, acceleration and wrench in ``rep`` ("spatial" or "body"); gravity, ``ext_wrench`` and
    ``ext_torque`` as in ``gd.inverse_dynamics`` (held fixed)."""
    def F(C, q, V, qd):
        Vs, Vds = _to_spatial(C, V, rep), _to_spatial(C, Vd, rep)
        r = gd.inverse_dynamics(model, C, np.array([Vs, Vds]), np.array([q, qd, qdd]), gravity=gravity,
                                ext_wrench=ext_wrench, ext_torque=ext_torque)
        W = r.base_wrench[0]
        if rep == "body":
            W = lie.Ad(C).T @ W
        return np.concatenate([W, r.tau[0]])
    return F


def fd_function(model, W, tau, rep, gravity=gd.DEFAULT_GRAVITY):
    """``F(C, q, V, qd) = (Vdot, qdd)`` of the forward dynamics at fixed input ``(W, tau)`` in ``rep``."""
    def F(C, q, V, qd):
        Vs = _to_spatial(C, V, rep)
        Ws = np.linalg.solve(lie.Ad(C).T, W) if rep == "body" else W
        r = gd.forward_dynamics(model, C, Vs[None], np.array([q, qd]), Ws[None], tau[None], gravity=gravity)
        a = r.base_twist[1]
        if rep == "body":
            a = lie.Ad_inv(C) @ a     # d/dt(Ad_C^-1 V) = Ad_C^-1 Vdot (ad_V V = 0)
        return np.concatenate([a, r.q[2]])
    return F


def central_difference(model, F, C, q, V, qd, h):
    """(6+n, 2(6+n)) central geometric difference quotient of ``F`` with step ``h``."""
    nz = 2 * (6 + model.n_joints)
    cols = []
    for k in range(nz):
        e = np.zeros(nz)
        e[k] = h
        cols.append((F(*perturb(model, C, q, V, qd, e)) - F(*perturb(model, C, q, V, qd, -e))) / (2 * h))
    return np.stack(cols, axis=1)


def random_state(model, rng):
    """A bounded random state and accelerations / inputs (rep-independent draws)."""
    n = model.n_joints
    C = lie.exp_se3(np.r_[rng.uniform(-2, 2, 3), rng.uniform(-1, 1, 3)])
    return dict(C=C, q=rng.uniform(-np.pi, np.pi, n), V=rng.standard_normal(6), qd=rng.standard_normal(n),
                Vd=rng.standard_normal(6), qdd=rng.standard_normal(n))


def sweep(model, steps, rep="body", which="id", seed=0):
    """Relative error ``||D_fd(h) - D|| / ||D||`` (Frobenius) for each step in ``steps``.

    ``which`` "id": derivatives of the inverse dynamics; "fd": of the forward dynamics, at an
    input that is the inverse dynamics of the random accelerations (O(1) accelerations)."""
    rng = np.random.default_rng(seed)
    s = random_state(model, rng)
    C, q, V, qd = s["C"], s["q"], s["V"], s["qd"]
    if which == "id":
        F = id_function(model, s["Vd"], s["qdd"], rep)
        D = gd.inverse_dynamics_derivatives(model, C, np.array([V, s["Vd"]]), np.array([q, qd, s["qdd"]]),
                                            representation=rep).d_state
    elif which == "fd":
        u = id_function(model, s["Vd"], s["qdd"], rep)(C, q, V, qd)
        F = fd_function(model, u[:6], u[6:], rep)
        D = gd.forward_dynamics_derivatives(model, C, V[None], np.array([q, qd]), u[None, :6], u[None, 6:],
                                            representation=rep).d_state
    else:
        raise ValueError(f"which: expected 'id' or 'fd', got {which!r}")
    return np.array([np.linalg.norm(central_difference(model, F, C, q, V, qd, h) - D) / np.linalg.norm(D)
                     for h in steps])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out", help="output directory (default: out)")
    ap.add_argument("--urdf", default=None, help="URDF (default: the shipped aerial manipulator)")
    ap.add_argument("--no-plot", action="store_true", help="write the CSV only")
    args = ap.parse_args(argv)
    from geodyn_ros.model.resources import shipped_urdf
    model = gd.load_urdf(args.urdf or shipped_urdf())
    steps = np.logspace(-1, -11, 41)
    os.makedirs(args.out, exist_ok=True)
    curves = {}
    for which in ("id", "fd"):
        for rep in ("body", "spatial"):
            curves[f"{which}-{rep}"] = sweep(model, steps, rep, which)
            e = curves[f"{which}-{rep}"]
            k = int(np.argmin(e))
            print(f"{which.upper()} derivatives, {rep:7s}: min relative error {e[k]:.2e} at h = {steps[k]:.1e}; "
                  f"h = 1e-1: {e[0]:.1e}, h = 1e-11: {e[-1]:.1e}")
    csv = os.path.join(args.out, "fd_step_sweep.csv")
    with open(csv, "w") as f:
        f.write("h," + ",".join(curves) + "\n")
        for i, h in enumerate(steps):
            f.write(f"{h:.6e}," + ",".join(f"{curves[k][i]:.6e}" for k in curves) + "\n")
    print(f"wrote {csv}")
    if not args.no_plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for k, e in curves.items():
            ax.loglog(steps, e, marker=".", label=k)
        ax.loglog(steps, 0.3 * steps ** 2, "k--", lw=0.8, label="h^2")
        ax.loglog(steps, 1e-16 / steps, "k:", lw=0.8, label="eps / h")
        ax.set_xlabel("step h")
        ax.set_ylabel("relative error of central difference")
        ax.set_title(f"{model.name}: analytic derivatives vs central geometric FD")
        ax.set_ylim(1e-13, 10)
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=8)
        png = os.path.join(args.out, "fd_step_sweep.png")
        fig.savefig(png, dpi=120, bbox_inches="tight")
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
