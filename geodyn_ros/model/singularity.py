"""Is the mass matrix singular at every configuration? Found once, when a model is loaded.

A model can be finite and physical in every number and still have no forward dynamics: some
motion moves no mass and no inertia, so ``M nu = 0`` for that ``nu`` at every configuration and the
acceleration along it is arbitrary (Pinocchio's ABA then returns 1e17-sized numbers). The cases:

* a joint whose moving subtree has no mass and no inertia (a link without ``<inertial>``);
* a floating robot of zero total mass (PyBullet's static objects: mass 0);
* any other structural null motion, found numerically: PyBullet's cart-pole, whose massless root
  (mass 0, inertia 1) is the floating base while a prismatic joint slides the cart along the base's
  x axis, so the base's x translation against that joint moves nothing; a chain of point masses
  whose last one sits on its joint's axis.

The numerical test (:func:`structural_null_motion`): the mass matrix ``M`` (base at identity, the
base twist about the base origin) by the composite-rigid-body algorithm in NumPy at two
configurations drawn with a fixed seed, Jacobi-scaled (``D^-1/2 M D^-1/2``, ``D = diag M``, so that
kg, kg m and kg m^2 entries compare); the model is singular when at both configurations a diagonal
entry is below :data:`STRUCTURAL_RTOL` of the largest of its kind or the smallest scaled eigenvalue is
below :data:`STRUCTURAL_RTOL`. Measured: the singular models of PyBullet's collection at 2.5e-16 and
below; every regular robot of example-robot-data at 1.5e-6 and above (icub); the threshold sits
four orders of magnitude from both. A singularity at one configuration only (icub's neck at home)
is not structural: forward dynamics detects it at that state.
"""
from __future__ import annotations

import numpy as np

from ..lie import Ad, exp_se3, inv_se3, spatial_inertia
from .model import PRISMATIC

__all__ = ["STRUCTURAL_RTOL", "mass_matrix_home", "structural_null_motion", "massless_subtree_joints"]

#: a Jacobi-scaled eigenvalue (or a diagonal entry relative to the largest of its kind) below this
#: is singular (module docstring)
STRUCTURAL_RTOL = 1e-10
_SEED = 20240551
_BASE_DOF = ("the base's rotation about x", "the base's rotation about y", "the base's rotation about z",
             "the base's translation along x", "the base's translation along y", "the base's translation along z")


def massless_subtree_joints(model) -> list:
    """Joints whose moving subtree (their body and all descendants) has no mass and no rotational
    inertia: their articulated inertia vanishes at every configuration."""
    N = model.n_bodies
    m = model.mass.copy()
    tr = np.einsum("ijj->i", model.inertia).copy()
    for i in range(N - 1, 0, -1):
        p = model.parent[i]
        m[p] += m[i]
        tr[p] += tr[i]
    return [model.joint_names[i - 1] for i in range(1, N) if m[i] <= 0.0 and tr[i] <= 0.0]


def mass_matrix_home(model, q) -> np.ndarray:
    """The mass matrix (6+n, 6+n) at joint positions ``q`` (n,) with the base at identity (the base
    twist about the base origin, angular first, base axes), by the composite-rigid-body algorithm on
    the home screws (product of exponentials); (n, n) for a fixed-base model. NumPy, for the load
    time check (the kernels' :func:`geodyn_ros.mass_matrix` is the fast one)."""
    N, n = model.n_bodies, model.n_joints
    G = np.zeros((N, 4, 4))
    G[0] = np.eye(4)
    S = np.zeros((N, 6))
    Ic = np.zeros((N, 6, 6))
    for i in range(N):
        if i:
            p = model.parent[i]
            S[i] = Ad(G[p]) @ model.Y[i]
            G[i] = G[p] @ exp_se3(model.Y[i] * q[i - 1])
        A = Ad(inv_se3(G[i]))
        Ic[i] = A.T @ spatial_inertia(model.mass[i], model.com[i], model.inertia[i]) @ A
    for i in range(N - 1, 0, -1):
        Ic[model.parent[i]] += Ic[i]
    M = np.zeros((6 + n, 6 + n))
    M[:6, :6] = Ic[0]
    for i in range(1, N):
        F = Ic[i] @ S[i]
        M[:6, 5 + i] = M[5 + i, :6] = F
        j = i
        while j > 0:
            M[5 + i, 5 + j] = M[5 + j, 5 + i] = S[j] @ F
            j = model.parent[j]
    return M[6:, 6:] if model.fixed_base else M


def _mimic_basis(model, dofs):
    """(len(dofs), k) columns of the independent coordinates of a mimic-enforced model."""
    if not (model.mimic_enforced and model.mimic):
        return None, dofs
    off = len(dofs) - model.n_joints
    idx = {j: off + model.joint_index(j) for j in model.joint_names}
    keep = [k for k in range(len(dofs)) if k < off or model.joint_names[k - off] not in model.mimic]
    G = np.zeros((len(dofs), len(keep)))
    col = {k: c for c, k in enumerate(keep)}
    for k in keep:
        G[k, col[k]] = 1.0
    for j, (master, mult, _) in model.mimic.items():
        G[idx[j], col[idx[master]]] = mult
    return G, [dofs[k] for k in keep]


def _null_motion(model, q):
    """``None`` if ``M(q)`` is regular (module docstring), else the scaled null vector and the names
    of its coordinates."""
    M = mass_matrix_home(model, q)
    dofs = ([] if model.fixed_base else list(_BASE_DOF)) + [f"joint {j!r}" for j in model.joint_names]
    G, dofs = _mimic_basis(model, dofs)
    if G is not None:
        M = G.T @ M @ G
    if M.shape[0] == 0:
        return None
    d = np.diag(M).copy()
    # kinds: kg m^2 (rotations, revolute joints) and kg (translations, prismatic joints)
    lin = np.zeros(len(dofs), bool)
    for k, name in enumerate(dofs):
        if name.startswith("the base's translation"):
            lin[k] = True
        elif name.startswith("joint "):
            lin[k] = model.jtype[1 + model.joint_index(name[7:-1])] == PRISMATIC
    for kind in (lin, ~lin):
        if kind.any():
            ref = float(d[kind].max())
            small = kind & ~(d > STRUCTURAL_RTOL * ref) if ref > 0 else kind
            if small.any():
                v = np.zeros(len(dofs))
                v[int(np.argmax(small))] = 1.0
                return v, dofs
    s = 1.0 / np.sqrt(d)
    ev, V = np.linalg.eigh(M * s[:, None] * s[None, :])
    return (V[:, 0], dofs) if ev[0] <= STRUCTURAL_RTOL else None


def structural_null_motion(model) -> str:
    """``""`` if the mass matrix of ``model`` is regular at a generic configuration, else one line
    naming a motion of zero kinetic energy at every configuration (module docstring):
    ``"the motion of the base's translation along x with joint 'slider_to_cart' has zero kinetic
    energy"``."""
    rng = np.random.default_rng(_SEED)
    found = None
    for _ in range(2):
        r = _null_motion(model, rng.uniform(-np.pi, np.pi, model.n_joints))
        if r is None:
            return ""
        found = found or r
    v, dofs = found
    a = np.abs(v)
    names = [dofs[k] for k in np.argsort(-a) if a[k] > 0.1 * a.max()]
    if len(names) == 1:
        return f"a motion of {names[0]} alone has zero kinetic energy"
    return f"the motion of {', '.join(names[:-1])} with {names[-1]} has zero kinetic energy"
