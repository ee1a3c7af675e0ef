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


_I3 = np.eye(3)
_I3.setflags(write=False)


def _cross(a, b):
    """``a x b`` of two 3-vectors (np.cross is ten times slower on one pair)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _rotation(w, th):
    """Rodrigues: the rotation by ``th`` about the unit axis ``w``."""
    K = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    return _I3 + np.sin(th) * K + (1.0 - np.cos(th)) * (K @ K)


def _ancestors(model) -> np.ndarray:
    """(N, N) bool: ``[j, i]`` when body ``j`` is body ``i`` or one of its ancestors."""
    N = model.n_bodies
    anc = np.eye(N, dtype=bool)
    for i in range(1, N):
        anc[:, i] |= anc[:, model.parent[i]]
    return anc


def mass_matrix_home(model, q) -> np.ndarray:
    """The mass matrix (6+n, 6+n) at joint positions ``q`` (n,) with the base at identity (the base
    twist about the base origin, angular first, base axes), by the composite-rigid-body algorithm on
    the home screws; (n, n) for a fixed-base model. NumPy, for the load-time check (the kernels'
    :func:`geodyn_ros.mass_matrix` is the fast one).

    Body ``i`` moves from home by ``G_i = G_p exp(Y_i q_i) = exp(S_i q_i) G_p`` with the current screw
    ``S_i = Ad_{G_p} Y_i`` (world axes); its centre of mass goes to ``R_i c_i + p_i`` and its
    rotational inertia to ``R_i I_i R_i^T``; ``M_qq[i, j] = S_i . Ic_i S_j`` (``j`` an ancestor of
    ``i``), ``M_bq[:, i] = Ic_i S_i``, ``M_bb = Ic_0`` (``Ic``: composite spatial inertias)."""
    N, n = model.n_bodies, model.n_joints
    R = np.empty((N, 3, 3))
    P = np.empty((N, 3))
    R[0], P[0] = _I3, 0.0
    S = np.zeros((N, 6))
    for i in range(1, N):
        p = model.parent[i]
        w = R[p] @ model.Y[i, :3]
        v = R[p] @ model.Y[i, 3:] + _cross(P[p], w)
        S[i, :3], S[i, 3:] = w, v
        x = float(q[i - 1])
        nw = float(np.linalg.norm(w))
        if model.jtype[i] == PRISMATIC or nw == 0.0:
            Re, pe = _I3, v * x
        else:       # exp of the twist (w, v) x: (I - Re)(u x v') + u (u . v') th, u = w/|w|, v' = v/|w|
            u, vv, th = w / nw, v / nw, nw * x
            Re = _rotation(u, th)
            pe = (_I3 - Re) @ _cross(u, vv) + u * (u @ vv) * th
        R[i] = Re @ R[p]
        P[i] = Re @ P[p] + pe
    m = np.asarray(model.mass, float)
    c = np.einsum("iab,ib->ia", R, np.asarray(model.com, float)) + P
    Irot = R @ np.asarray(model.inertia, float) @ np.transpose(R, (0, 2, 1))
    H = np.zeros((N, 3, 3))           # hat(c)
    H[:, 0, 1], H[:, 0, 2], H[:, 1, 2] = -c[:, 2], c[:, 1], -c[:, 0]
    H[:, 1, 0], H[:, 2, 0], H[:, 2, 1] = c[:, 2], -c[:, 1], c[:, 0]
    Ic = np.zeros((N, 6, 6))          # spatial inertias about the world origin, angular first
    Ic[:, :3, :3] = Irot + m[:, None, None] * (H @ np.transpose(H, (0, 2, 1)))
    Ic[:, :3, 3:] = m[:, None, None] * H
    Ic[:, 3:, :3] = m[:, None, None] * np.transpose(H, (0, 2, 1))
    Ic[:, 3:, 3:] = m[:, None, None] * np.eye(3)
    for i in range(N - 1, 0, -1):
        Ic[model.parent[i]] += Ic[i]
    F = np.einsum("iab,ib->ia", Ic, S)
    M = np.zeros((6 + n, 6 + n))
    M[:6, :6] = Ic[0]
    M[:6, 6:] = F[1:].T
    M[6:, :6] = F[1:]
    anc = _ancestors(model)[1:, 1:]
    G = S[1:] @ F[1:].T               # G[j, i] = S_j . Ic_i S_i
    Mq = np.where(anc, G, 0.0)        # j ancestor-or-equal of i
    M[6:, 6:] = Mq + Mq.T - np.diag(np.diag(Mq))
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
    Ms = M * s[:, None] * s[None, :]
    try:        # regular: every Cholesky pivot of the scaled matrix (its eigenvalues' bound) above the tolerance
        if np.min(np.diag(np.linalg.cholesky(Ms))) ** 2 > STRUCTURAL_RTOL:
            return None
    except np.linalg.LinAlgError:
        pass
    ev, V = np.linalg.eigh(Ms)
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
    # largest parts first; parts equal to 1e-9 (a tie the LAPACK build breaks either way) in the
    # order of the coordinates (the base's before the joints')
    w = np.round(a / a.max(), 9)
    names = [dofs[k] for k in sorted(range(a.size), key=lambda k: (-w[k], k)) if a[k] > 0.1 * a.max()]
    if len(names) == 1:
        return f"a motion of {names[0]} alone has zero kinetic energy"
    return f"the motion of {', '.join(names[:-1])} with {names[-1]} has zero kinetic energy"
