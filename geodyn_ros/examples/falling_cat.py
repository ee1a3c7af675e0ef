"""Nonholonomic locomotion of a free-floating LWR-4+ (Mishra et al., Sec. VI-B, Fig. 8).

With zero momentum (``mu = 0``) the base of a free-floating robot moves only through its shape:
its body twist is ``V_b = -A_l(q) qd`` and the pose follows ``dC/dt = C hat(V_b)`` (eq. 13, 35),
so a closed shape path (a *gait*) leaves a net displacement of the base (falling-cat problem).
This example

1. builds a free-floating base carrying a 7-joint LWR-4+ arm (URDF string below);
2. runs the paper's gait ``q(t) = q_c + Psi^+ r(t)`` on joints 2, 3, 4 and integrates the
   reconstruction with RKMK4 at the exact ``q(t)`` (ground truth; cross-checked by step halving
   and by a full torque-driven simulation with ``gd.integrate_decoupled``);
3. approximates the net displacement by the corrected body-velocity integral (cBVI, eq. 38): the
   volume of the constraint curvature function ``CCF(q) = DA_l(q, e1) e2``
   (:func:`geodyn_ros.connection_curvature`, Thm. 2) over the gait disk, in the virtual chassis
   frame ``{V}`` and, for comparison, in the base frame ``{1}``;
4. prints exact vs approximate final orientation next to the paper's numbers and plots the
   rotational CCF surfaces with the gait (Fig. 8) and the base orientation over the gait.

Conventions (geodyn_ros): twists angular first, so the paper's components ``k = 4, 5, 6``
(rotational, its ``k = 1, 2, 3`` are translational) are our ``0, 1, 2``. Poses are 4x4 with
``g_ab`` the pose of ``{b}`` in ``{a}``; ``{1}`` is the base frame, ``{V}`` the virtual chassis.

Gait (paper, with ERRATA's ``a = 1/sqrt(2)``): ``e1 = (0, a, a, 0, 0, 0, 0)``, ``e2 = (0, 0, 0, 1,
0, 0, 0)`` (orthonormal, so ``Psi^+ = Psi^T`` and ``q = q_c + r1 e1 + r2 e2``), ``q_c = q(0) = 0``,
``r_dot = (pi/2) (sin(pi t), cos(pi t))``, ``r(0) = 0``, ``t in [0, 2]``:
``r(t) = (1/2) (1 - cos(pi t), sin(pi t))``, the circle of radius 1/2 centred at ``(1/2, 0)``
through ``r = 0``. At ``r = 0`` it moves along ``+r2`` with the centre on its right, so it runs
**clockwise** in the ``(r1, r2)`` plane: signed area ``-pi/4``. (The paper's Fig. 7 draws an
anti-clockwise gait; its commanded ``r_dot`` is clockwise.)

Curvature and cBVI. A small loop of signed area ``s`` in the ``(e1, e2)`` plane displaces the base
by about ``-s CCF`` (``F = connection_curvature``, ``CCF = einsum('kab,a,b', F, e1, e2)``), so the
cBVI over the gait disk ``D`` traversed with orientation ``sigma = +-1`` is
``zeta = -sigma * iint_D CCF dr1 dr2`` (``sigma = -1`` here). The curvature is gauge covariant:
in a shape-dependent frame ``g_1v(q)`` it is ``Ad_{g_v1(q)} CCF(q)``. The estimate of the base
displacement is ``g_1(T) ~ g_1v(q_c) exp(zeta_v) g_v1(q_c)`` (the frame ``{V}`` moves by
``exp(zeta_v)`` in its own axes and returns to the same place on the body at ``q(T) = q_c``); this
composition order is the one that is exact to second order in the gait size (checked in
``test/loops/test_falling_cat_example.py``). The paper's step 9 writes ``exp(zeta) g_v1``, which drops
the left factor ``g_1v(q_c)`` (an O(1) error when the CoM is not at the base origin).

Virtual chassis ``{V}`` (paper, after [33]): origin at the centre of mass, axes along the
principal axes of the centroidal locked inertia (``gd.centroidal_locked_terms``); eigenvectors
are ordered and signed to be closest to the base axes (a proper rotation). At ``q = 0`` two
principal moments differ only by the base's 0.02 kg m^2 (3.133 vs 3.153), yet the frame is smooth
over the gait disk (one ordering throughout); far from it (``r1 > ~1.4``) the ordering switches,
seen as jumps in the plotted x / y maps. In ``{V}`` the translational curvature vanishes (the CoM
does not move when ``mu = 0``); the script prints it.

Quadrature: the cBVI is computed accurately in polar coordinates over the disk (Gauss–Legendre x
trapezoid, converged to ~1e-10 at the defaults) and, like the paper, from a 30 x 30 grid of CCF
values (cell centres over the square ``(1/2, 0) +- 1.25``, the plotted maps), each cell weighted
by its area inside the disk. At the straight arm ``q = 0`` the z component of the CCF vanishes
(mirror symmetry), so the net turn comes from the CCF away from the start point.

Model assumptions (the paper's LWR-4+ parameters [2] are not available, ERRATA): base 3.5 kg with
principal inertia ``(0.12, 0.14, 0.12)`` kg m^2 about its origin (= its CoM), axes = base axes
(paper); the arm is mounted on top of the base, mount frame at ``(0, 0, MOUNT_OFFSET = 0.10 m)``
in base axes, arm axes parallel to the base axes. At ``q = 0`` the arm is straight along the base
``z`` axis; joint axes z, y, z, y, z, y, z at heights 0, 0.31, 0.51, 0.71, 0.91, 1.10, 1.10 m
above the mount (LWR lengths 0.31 / 0.4 / 0.39 / 0.078 m; joints 3, 5 and 7 lie on the arm
line, where exactly only splits the link masses). Link masses 2.7, 2.7, 2.7, 2.7, 1.7, 1.6,
0.3 kg (commonly cited identified values); link CoMs on the arm line at 0.20, 0.10, 0.10, 0.10,
0.10, 0.00, 0.039 m above their joint; link inertias of solid cylinders along the arm, radius
0.06 m and length 0.20 m (links 1-5), a solid sphere of radius 0.06 m (link 6) and a cylinder of
radius 0.04 m and length 0.078 m (link 7). Only rough agreement with the paper is expected.

Run ``python -m geodyn_ros.examples.falling_cat --out out`` (``make falling-cat``): prints the
summary and writes ``falling_cat.png``.
"""
from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np

import geodyn_ros as gd
from geodyn_ros import lie

__all__ = ["lwr_urdf", "build_model", "gait_basis", "gait", "signed_area", "virtual_chassis",
           "ccf", "reconstruct", "simulate_dynamics", "cbvi_polar", "ccf_grid", "cbvi_grid",
           "estimate_pose", "euler_xyz_deg", "pose_error", "run", "plot", "main",
           "PNG_NAME", "PAPER"]

PNG_NAME = "falling_cat.png"
#: the paper's Sec. VI-B numbers: final XYZ orientation (deg) exact / cBVI, and the pose error
PAPER = {"exact_deg": (0.4228, 0.1682, 13.73), "approx_deg": (0.9623, 0.9873, 13.25), "error": 0.017}

BASE_MASS = 3.5                         # kg (paper)
BASE_INERTIA = (0.12, 0.14, 0.12)       # kg m^2, principal, base axes (paper)
MOUNT_OFFSET = 0.10                     # m, arm mount above the base origin along base z (assumed)


def _cyl(m, r, h):
    """Principal inertia (xx, yy, zz) of a solid cylinder along z."""
    t = m * (3 * r * r + h * h) / 12.0
    return (t, t, 0.5 * m * r * r)


#: assumed LWR-4+ links: (joint axis, joint height above the mount [m], mass [kg], CoM height
#: above the joint [m], principal inertia about the CoM (xx, yy, zz) [kg m^2], arm axes)
LWR_LINKS = (
    ("0 0 1", 0.00, 2.7, 0.20, _cyl(2.7, 0.06, 0.20)),
    ("0 1 0", 0.31, 2.7, 0.10, _cyl(2.7, 0.06, 0.20)),
    ("0 0 1", 0.51, 2.7, 0.10, _cyl(2.7, 0.06, 0.20)),
    ("0 1 0", 0.71, 2.7, 0.10, _cyl(2.7, 0.06, 0.20)),
    ("0 0 1", 0.91, 1.7, 0.10, _cyl(1.7, 0.06, 0.20)),
    ("0 1 0", 1.10, 1.6, 0.00, (0.4 * 1.6 * 0.06 ** 2,) * 3),
    ("0 0 1", 1.10, 0.3, 0.039, _cyl(0.3, 0.04, 0.078)),
)


# ------------------------------------------------------------------------------------- model
def _inertial(m, com_z, I):
    return (f'<inertial><origin xyz="0 0 {com_z}"/><mass value="{m}"/>'
            f'<inertia ixx="{I[0]:.8g}" iyy="{I[1]:.8g}" izz="{I[2]:.8g}" ixy="0" ixz="0" iyz="0"/>'
            f'</inertial>')


def lwr_urdf(mount_offset=MOUNT_OFFSET) -> str:
    """URDF string of the free-floating base + LWR-4+ (assumed parameters, module docstring).

    Every link frame sits on its joint axis with the base's orientation at ``q = 0``."""
    parts = ['<robot name="floating_lwr4p">',
             f'<link name="base">{_inertial(BASE_MASS, 0.0, BASE_INERTIA)}</link>']
    parent, z_parent = "base", -mount_offset          # heights are above the mount
    for i, (axis, z, m, cz, I) in enumerate(LWR_LINKS, start=1):
        parts.append(f'<link name="lwr_link_{i}">{_inertial(m, cz, I)}</link>')
        parts.append(f'<joint name="lwr_joint_{i}" type="revolute"><parent link="{parent}"/>'
                     f'<child link="lwr_link_{i}"/><origin xyz="0 0 {z - z_parent:.6g}"/>'
                     f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="100" velocity="2"/></joint>')
        parent, z_parent = f"lwr_link_{i}", z
    parts.append("</robot>")
    return "\n".join(parts)


def build_model(mount_offset=MOUNT_OFFSET):
    """The :class:`geodyn_ros.Model` of :func:`lwr_urdf` (7 joints, base = body 0)."""
    return gd.load_urdf(lwr_urdf(mount_offset))


# -------------------------------------------------------------------------------------- gait
def gait_basis(n=7, a=1.0 / np.sqrt(2.0)):
    """Unit shape vectors ``e1 = (0, a, a, 0, ...)``, ``e2 = (0, 0, 0, 1, 0, ...)`` (n,) of the gait
    plane (joints 2, 3, 4; ERRATA: ``a = 1/sqrt(2)``)."""
    e1, e2 = np.zeros(n), np.zeros(n)
    e1[1] = e1[2] = a
    e2[3] = 1.0
    return e1, e2


def gait(t, e1, e2, radius=0.5, q_c=None):
    """Shape ``q`` (n,) and rate ``qd`` (n,) at time ``t`` of the paper's gait, scaled to ``radius``:
    ``r(t) = radius (1 - cos(pi t), sin(pi t))``, ``r_dot = radius pi (sin(pi t), cos(pi t))``
    (``radius = 1/2`` is the paper's ``r_dot = (pi/2)(sin, cos)``), ``q = q_c + r1 e1 + r2 e2``.
    Period 2 s, clockwise, starts and ends at ``q_c``."""
    q_c = np.zeros_like(e1) if q_c is None else q_c
    s, c = np.sin(np.pi * t), np.cos(np.pi * t)
    r = radius * np.array([1.0 - c, s])
    rd = radius * np.pi * np.array([s, c])
    return q_c + r[0] * e1 + r[1] * e2, rd[0] * e1 + rd[1] * e2


def signed_area(radius=0.5, samples=2001):
    """Signed area ``(1/2) oint (r1 dr2 - r2 dr1)`` of the gait in the ``(r1, r2)`` plane (> 0 for
    anti-clockwise), by the trapezoid rule over one period (exact for this trigonometric path)."""
    t = np.linspace(0.0, 2.0, samples)
    s, c = np.sin(np.pi * t), np.cos(np.pi * t)
    r1, r2 = radius * (1 - c), radius * s
    d1, d2 = radius * np.pi * s, radius * np.pi * c
    f = 0.5 * (r1 * d2 - r2 * d1)
    return float(np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(t)))


# ----------------------------------------------------------------------------- frames, CCF
def virtual_chassis(model, q) -> np.ndarray:
    """``g_1v(q)`` (4, 4): pose of the virtual chassis in the base frame: origin at the CoM, axes
    = principal axes of the centroidal locked inertia, ordered and signed closest to the base
    axes (largest ``|diag|`` of the rotation, positive diagonal, determinant +1)."""
    ct = gd.centroidal_locked_terms(model, q)
    _, U = np.linalg.eigh(ct.M_b[:3, :3])
    perm = max(itertools.permutations(range(3)), key=lambda p: sum(abs(U[k, p[k]]) for k in range(3)))
    R = U[:, perm]
    R = R * np.where(np.diag(R) < 0, -1.0, 1.0)
    if np.linalg.det(R) < 0:
        k = int(np.argmin(np.abs(np.diag(R))))
        R[:, k] = -R[:, k]
    g = np.eye(4)
    g[:3, :3] = R
    g[:3, 3] = ct.com
    return g


def ccf(model, q, e1, e2, frame="v"):
    """Constraint curvature function ``DA_l(q, e1) e2`` (6,) (angular first): in the base frame
    (``frame="1"``) or in the virtual chassis (``frame="v"``: ``Ad_{g_v1(q)}`` of it)."""
    F = gd.connection_curvature(model, q)
    k = np.einsum("kab,a,b->k", F, e1, e2)
    if frame == "1":
        return k
    if frame == "v":
        return lie.Ad_inv(virtual_chassis(model, q)) @ k
    raise ValueError(f"frame: expected '1' or 'v', got {frame!r}")


# ------------------------------------------------------------------------------ ground truth
def reconstruct(model, e1, e2, radius=0.5, steps=400, T=2.0, q_c=None):
    """Ground truth: RKMK4 (``steps`` fixed steps over ``[0, T]``) of ``dC/dt = C hat(V_b)``,
    ``V_b = -A_l(q(t)) qd(t)`` at the exactly prescribed gait (:func:`gait` about ``q_c``, default
    0), ``C(0) = I``; global error O(h^4).
    Returns ``(t (steps+1,), C (steps+1, 4, 4))``, the base pose in the initial base frame."""
    def Vb(t):
        q, qd = gait(t, e1, e2, radius, q_c)
        return -gd.local_connection(model, q) @ qd

    h = T / steps
    ts = np.linspace(0.0, T, steps + 1)
    Cs = np.empty((steps + 1, 4, 4))
    C = np.eye(4)
    Cs[0] = C
    v0 = Vb(0.0)
    for i in range(steps):
        vm, v1 = Vb(ts[i] + h / 2), Vb(ts[i + 1])
        k1 = v0
        k2 = lie.dexp_inv_body(h / 2 * k1, vm)
        k3 = lie.dexp_inv_body(h / 2 * k2, vm)
        k4 = lie.dexp_inv_body(h * k3, v1)
        C = C @ lie.exp_se3(h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
        Cs[i + 1] = C
        v0 = v1
    return ts, Cs


def simulate_dynamics(model, e1, e2, radius=0.5, steps=400, T=2.0):
    """Independent check of :func:`reconstruct`: the full zero-gravity dynamics from ``mu = 0``
    (``gd.integrate_decoupled``, Thm. 1) driven by the joint torques of
    ``gd.decoupled_inverse_dynamics`` for the gait's ``qdd(t)`` at ``mu_dot = 0`` (no external
    wrench, so ``mu`` stays 0). Returns the final base pose (4, 4) and the max gait-tracking
    error of ``q`` (open loop: integration error only)."""
    def qdd(t):
        return radius * np.pi ** 2 * (np.cos(np.pi * t) * e1 - np.sin(np.pi * t) * e2)

    def tau(t, state):
        C, q, qd, mu = state
        return gd.decoupled_inverse_dynamics(model, C, q, qd, mu, np.zeros(6), qdd(t),
                                             gravity=(0.0, 0.0, 0.0)).tau

    q0, qd0 = gait(0.0, e1, e2, radius)
    tr = gd.integrate_decoupled(model, np.eye(4), q0, qd0, np.zeros(6), T, T / steps, tau=tau,
                                gravity=(0.0, 0.0, 0.0))
    q_ref = np.array([gait(t, e1, e2, radius)[0] for t in tr.t])
    return tr.base_pose[-1], float(np.abs(tr.q - q_ref).max())


# ------------------------------------------------------------------------------------- cBVI
def _sense(radius):
    return float(np.sign(signed_area(radius)))


def cbvi_polar(model, e1, e2, radius=0.5, n_rad=12, n_ang=24, frame="v", q_c=None):
    """cBVI ``zeta = -sigma iint_D CCF`` (6,) over the gait disk (centre ``(radius, 0)`` in the
    ``(r1, r2)`` plane about ``q_c``, default 0) in ``frame`` ("v" or "1", see :func:`ccf`), polar
    quadrature: Gauss–Legendre in the radius (``n_rad``, weight ``rho``) x periodic trapezoid in
    the angle (``n_ang``); spectrally accurate for the smooth CCF."""
    x, w = np.polynomial.legendre.leggauss(n_rad)
    rho, wr = radius * (x + 1) / 2, radius / 2 * w * radius * (x + 1) / 2
    phi = 2 * np.pi * np.arange(n_ang) / n_ang
    q_c = np.zeros_like(e1) if q_c is None else q_c
    total = np.zeros(6)
    for r_, w_ in zip(rho, wr):
        for p in phi:
            r1, r2 = radius + r_ * np.cos(p), r_ * np.sin(p)
            total += w_ * (2 * np.pi / n_ang) * ccf(model, q_c + r1 * e1 + r2 * e2, e1, e2, frame)
    return -_sense(radius) * total


def ccf_grid(model, e1, e2, centre, half_width, n=30, frame="v"):
    """CCF on an ``n x n`` grid of cell centres over the square ``centre +- half_width`` of the
    ``(r1, r2)`` plane: returns ``(r1 (n,), r2 (n,), K (n, n, 6))`` with ``K[i, j]`` at
    ``(r1[j], r2[i])``."""
    edges = [np.linspace(c - half_width, c + half_width, n + 1) for c in centre]
    r1, r2 = [(e[1:] + e[:-1]) / 2 for e in edges]
    K = np.array([[ccf(model, a * e1 + b * e2, e1, e2, frame) for a in r1] for b in r2])
    return r1, r2, K


def cbvi_grid(r1, r2, K, radius=0.5, sub=16):
    """The paper's mesh volume: ``-sigma sum CCF(cell centre) x (cell area inside the gait disk)``
    (6,), the covered fraction of each cell counted on a ``sub x sub`` sub-grid."""
    d1, d2 = r1[1] - r1[0], r2[1] - r2[0]
    u = (np.arange(sub) + 0.5) / sub - 0.5
    a = r1[None, :, None, None] + d1 * u[None, None, :, None] - radius
    b = r2[:, None, None, None] + d2 * u[None, None, None, :]
    frac = np.mean((a * a + b * b) <= radius * radius, axis=(2, 3))      # (n2, n1)
    return -_sense(radius) * np.einsum("ij,ijk->k", frac * d1 * d2, K)


def estimate_pose(model, zeta, frame="v", q_c=None):
    """Estimated base displacement ``g_1(T)`` (4, 4) from a cBVI: ``exp(zeta)`` in the base frame,
    ``g_1v(q_c) exp(zeta_v) g_v1(q_c)`` in the virtual chassis."""
    if frame == "1":
        return lie.exp_se3(zeta)
    g = virtual_chassis(model, np.zeros(model.n_joints) if q_c is None else q_c)
    return g @ lie.exp_se3(zeta) @ lie.inv_se3(g)


# ---------------------------------------------------------------------------------- helpers
def euler_xyz_deg(R) -> np.ndarray:
    """Intrinsic XYZ Euler angles (deg) with ``R = Rx(a) Ry(b) Rz(c)``."""
    b = np.arcsin(np.clip(R[0, 2], -1.0, 1.0))
    a = np.arctan2(-R[1, 2], R[2, 2])
    c = np.arctan2(-R[0, 1], R[0, 0])
    return np.degrees([a, b, c])


def pose_error(C_true, C_est) -> float:
    """``||log(C_true^-1 C_est)||`` (rad and m mixed, as in the paper)."""
    return float(np.linalg.norm(lie.log_se3(lie.inv_se3(C_true) @ C_est)))


# -------------------------------------------------------------------------------------- run
def run(model=None, *, steps=400, n_rad=12, n_ang=24, grid=30, half_width=1.25, dynamics=True,
        verbose=True):
    """The whole Sec. VI-B computation; returns a dict of results (poses 4x4, zetas 6, grids)."""
    model = build_model() if model is None else model
    e1, e2 = gait_basis(model.n_joints)
    radius = 0.5
    res = {"signed_area": signed_area(radius)}
    t0 = time.perf_counter()
    ts, Cs = reconstruct(model, e1, e2, radius, steps)
    _, Ch = reconstruct(model, e1, e2, radius, steps // 2)
    res.update(t=ts, poses=Cs, C_true=Cs[-1], rk_error=pose_error(Cs[-1], Ch[-1]) / 15.0,
               t_truth=time.perf_counter() - t0)
    if dynamics:
        t0 = time.perf_counter()
        C_dyn, q_err = simulate_dynamics(model, e1, e2, radius, steps)
        res.update(C_dyn=C_dyn, dyn_diff=pose_error(Cs[-1], C_dyn), dyn_q_err=q_err,
                   t_dyn=time.perf_counter() - t0)
    t0 = time.perf_counter()
    res["zeta_v"] = cbvi_polar(model, e1, e2, radius, n_rad, n_ang, "v")
    res["zeta_1"] = cbvi_polar(model, e1, e2, radius, n_rad, n_ang, "1")
    res["t_cbvi"] = time.perf_counter() - t0
    res["C_v"] = estimate_pose(model, res["zeta_v"], "v")
    res["C_1"] = estimate_pose(model, res["zeta_1"], "1")
    t0 = time.perf_counter()
    if grid:
        r1, r2, K = ccf_grid(model, e1, e2, (radius, 0.0), half_width, grid, "v")
        res.update(grid_r1=r1, grid_r2=r2, grid_K=K, zeta_v_grid=cbvi_grid(r1, r2, K, radius))
        res["C_v_grid"] = estimate_pose(model, res["zeta_v_grid"], "v")
    res["t_grid"] = time.perf_counter() - t0
    for key in ("C_v", "C_1", "C_v_grid"):
        if key in res:
            res["err" + key[1:]] = pose_error(res["C_true"], res[key])
    if verbose:
        _summary(res)
    return res


def _fmt(v):
    return "(" + ", ".join(f"{x:8.4f}" for x in v) + ")"


def _summary(res):
    """Print the comparison table."""
    C = res["C_true"]
    print(f"gait: clockwise circle, radius 1/2 in (r1, r2), signed area {res['signed_area']:+.4f} "
          f"(= -pi/4 = {-np.pi / 4:+.4f})")
    print(f"zeta_v (virtual chassis, w | v): {_fmt(res['zeta_v'][:3])} | {_fmt(res['zeta_v'][3:])}")
    print(f"zeta_1 (base frame,      w | v): {_fmt(res['zeta_1'][:3])} | {_fmt(res['zeta_1'][3:])}")
    if "zeta_v_grid" in res:
        g = res["grid_r1"].size
        print(f"zeta_v ({g}x{g} grid,     w | v): {_fmt(res['zeta_v_grid'][:3])} | "
              f"{_fmt(res['zeta_v_grid'][3:])}")
        print(f"max |translational CCF in {{V}}| on the grid: {np.abs(res['grid_K'][..., 3:]).max():.1e}")
    rows = [("exact (RKMK4)", C, None), ("cBVI in {V}, polar quadrature", res["C_v"], res["err_v"])]
    if "C_v_grid" in res:
        rows.append(("cBVI in {V}, grid", res["C_v_grid"], res["err_v_grid"]))
    rows.append(("cBVI in base frame {1}", res["C_1"], res["err_1"]))
    print(f"\n{'final base pose':32s} {'XYZ Euler angles [deg]':>30s} {'position [m]':>30s} {'error':>8s}")
    for name, P, err in rows:
        e = "" if err is None else f"{err:8.4f}"
        print(f"{name:32s} {_fmt(euler_xyz_deg(P[:3, :3])):>30s} {_fmt(P[:3, 3]):>30s} {e:>8s}")
    p = PAPER
    print(f"{'paper: exact':32s} {_fmt(p['exact_deg']):>30s}")
    print(f"{'paper: approximation':32s} {_fmt(p['approx_deg']):>30s} {'':>30s} {p['error']:8.4f}")
    print(f"\nerror = ||log(g_true^-1 g_est)||; RKMK4 error estimate (step halving) {res['rk_error']:.1e}; "
          f"time: truth {res['t_truth']:.1f} s, cBVI {res['t_cbvi']:.1f} s, grid {res['t_grid']:.1f} s")
    if "C_dyn" in res:
        print(f"full dynamics (integrate_decoupled + decoupled_inverse_dynamics torques, same steps): "
              f"||log(g_kin^-1 g_dyn)|| = {res['dyn_diff']:.1e}, max |q - q_gait| = {res['dyn_q_err']:.1e} "
              f"({res['t_dyn']:.1f} s)")
    print("note: the LWR-4+ parameters and the mount are assumed (paper's [2] unavailable), so only "
          "rough agreement with the paper is expected.")


def plot(res, path):
    """Fig. 8-like figure: rotational CCF maps in {V} with the gait, and the base orientation."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2, 2, figsize=(10, 8.4))
    r1, r2, K = res["grid_r1"], res["grid_r2"], res["grid_K"]
    th = np.linspace(0, 2 * np.pi, 200)
    names = ("x", "y", "z")
    for k, ax in enumerate(axs.flat[:3]):
        lim = np.abs(K[..., k]).max() or 1.0
        cs = ax.contourf(r1, r2, K[..., k], levels=np.linspace(-lim, lim, 22), cmap="RdBu_r")
        fig.colorbar(cs, ax=ax, shrink=0.85, format="%.2f")
        ax.plot(0.5 + 0.5 * np.cos(th), 0.5 * np.sin(th), "k-", lw=2)
        for y in (0.5, -0.5):                          # clockwise: +r1 on top, -r1 at the bottom
            ax.annotate("", xy=(0.5 + 0.12 * np.sign(y), y), xytext=(0.5 - 0.12 * np.sign(y), y),
                        arrowprops=dict(arrowstyle="-|>", color="k", lw=2))
        ax.plot(0.0, 0.0, "ko", ms=5)                  # start / end, q = q_c
        ax.set_aspect("equal")
        ax.set_xlabel("$r_1$ (along $e_1$) [rad]")
        ax.set_ylabel("$r_2$ (along $e_2$) [rad]")
        ax.set_title(f"CCF in {{V}}, rotation about {names[k]} (paper k={k + 4})\n"
                     f"cBVI $\\zeta_{k}$ = {res['zeta_v'][k]:+.4f} rad")
    ax = axs.flat[3]
    eul = np.array([euler_xyz_deg(C[:3, :3]) for C in res["poses"]])
    for k in range(3):
        ax.plot(res["t"], eul[:, k], label=f"{names[k]} (exact)")
        ax.plot(res["t"][-1], euler_xyz_deg(res["C_v"][:3, :3])[k], "o", color=f"C{k}",
                label="cBVI in {V} (final)" if k == 0 else None)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("base orientation, XYZ Euler [deg]")
    ax.set_title("base orientation during the gait (dots: cBVI estimate)")
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("Free-floating LWR-4+ (assumed parameters): falling-cat gait on joints 2, 3, 4")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out", help="output directory (default: out)")
    ap.add_argument("--steps", type=int, default=400, help="RKMK4 steps over the gait (default: 400)")
    ap.add_argument("--radial", type=int, default=12, help="Gauss nodes in the radius (default: 12)")
    ap.add_argument("--angular", type=int, default=24, help="trapezoid nodes in the angle (default: 24)")
    ap.add_argument("--grid", type=int, default=30, help="CCF grid size per axis (default: 30, paper)")
    ap.add_argument("--half-width", type=float, default=1.25,
                    help="grid half-width around the gait centre (1/2, 0) [rad] (default: 1.25)")
    ap.add_argument("--no-dynamics", action="store_true",
                    help="skip the full-dynamics cross-check of the ground truth")
    ap.add_argument("--no-plot", action="store_true", help="print the summary only")
    args = ap.parse_args(argv)
    if args.steps < 2 or args.radial < 1 or args.angular < 3 or args.grid < 2:
        ap.error("need --steps >= 2, --radial >= 1, --angular >= 3, --grid >= 2")
    res = run(steps=args.steps, n_rad=args.radial, n_ang=args.angular, grid=args.grid,
              half_width=args.half_width, dynamics=not args.no_dynamics)
    if not args.no_plot:
        os.makedirs(args.out, exist_ok=True)
        png = os.path.join(args.out, PNG_NAME)
        plot(res, png)
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
