"""Reference helpers for the cross-check tests (not tests themselves).

Independent of the ``geodyn_ros`` implementation: nothing here imports the package.  Every
conversion between our conventions (``/work/shared/CONVENTIONS.md``) and Pinocchio's is written
out explicitly:

Our state
    base pose ``C = [[R, p], [0, 1]]`` (URDF root link in world), *spatial* twist
    ``V = (w, v) = (w, pdot + p x w)`` (angular first, world axes), joint vector in
    ``model.joint_names`` order, generalised velocity ``nu = (V, qdot)``.
Pinocchio (free flyer)
    ``q = [p, quat(x, y, z, w), joints]`` (a continuous joint is ``(cos, sin)``),
    ``v = [v_lin, w]`` = base-frame velocity of the base origin and base-frame angular
    velocity, ``a = dv/dt``, generalised force ``rnea[:6] = (f, n)`` in the base frame about
    the base origin.

With ``Ad_C = [[R, 0], [hat(p) R, R]]`` and the swap ``S = [[0, I3], [I3, 0]]``:

* body twist ``V_b = Ad_C^-1 V = (R^T w, R^T pdot)``, so ``v_pin[:6] = S Ad_C^-1 V``;
* ``a_pin[:6] = S Ad_C^-1 Vdot``  (``d/dt Ad_C^-1 = -Ad_C^-1 ad_V`` and ``ad_V V = 0``);
* ``v_pin = P nu``, ``a_pin = P nudot`` with ``P = blkdiag(S Ad_C^-1, Pi)`` where ``Pi`` puts
  joint ``j`` of ``model.joint_names`` at Pinocchio's ``idx_v`` of that joint;
* power invariance ``f_ours . nu = f_pin . v_pin`` gives ``f_ours = P^T f_pin``: the base part
  is ``W = Ad_C^-T S rnea[:6] = Ad_C^-T (n_b, f_b)`` with ``Ad_C^-T = [[R, hat(p) R], [0, R]]``,
  i.e. ``W = (R n_b + p x R f_b, R f_b)``; and ``M_ours = P^T M_pin P``,
  ``g_ours = P^T g_pin``, ``C_ours nu = P^T (nle_pin - g_pin)``;
* inversely ``f_pin = P^-T f_ours``: base part ``(f_b, n_b) = S Ad_C^T W``.
"""
from __future__ import annotations

import functools
import glob
import math
import os
import site
import sys
from dataclasses import dataclass

import numpy as np

try:  # Pinocchio is optional for importing this module, required for using PinRef.
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

GRAVITY = np.array([0.0, 0.0, -9.81])
HERE = os.path.dirname(os.path.abspath(__file__))
AERIAL_MANIPULATOR = os.path.join(os.path.dirname(HERE), "urdf", "aerial_manipulator.urdf")

# --------------------------------------------------------------------------- robot files

_ERD_SUFFIX = os.path.join("cmeel.prefix", "share", "example-robot-data", "robots")

EXAMPLE_ROBOTS = {
    "solo12": "solo_description/robots/solo12.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "hextilt_flying_arm_5": "hextilt_description/urdf/hextilt_flying_arm_5.urdf",
}


def example_robot_data_dir():
    """Directory ``.../cmeel.prefix/share/example-robot-data/robots`` or None if not installed."""
    roots = []
    env = os.environ.get("EXAMPLE_ROBOT_DATA_DIR")
    if env:
        roots.append(env)
    try:
        roots.extend(site.getsitepackages())
    except AttributeError:  # pragma: no cover
        pass
    try:
        roots.append(site.getusersitepackages())
    except AttributeError:  # pragma: no cover
        pass
    roots.extend(p for p in sys.path if p)
    for prefix in {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)}:
        roots.extend(glob.glob(os.path.join(prefix, "lib", "python*", "site-packages")))
        roots.append(os.path.join(prefix, "share", "example-robot-data", "robots"))
    if pin is not None:  # cmeel puts pinocchio under <site-packages>/cmeel.prefix/lib/...
        d = os.path.dirname(os.path.abspath(pin.__file__))
        for _ in range(6):
            d = os.path.dirname(d)
            roots.append(d)
    for r in roots:
        for cand in (r, os.path.join(r, _ERD_SUFFIX)):
            if os.path.isdir(cand) and os.path.isdir(os.path.join(cand, "solo_description")):
                return cand
    return None


@functools.lru_cache(maxsize=None)
def model_and_pin(name):
    """``(gd.Model, PinRef)`` of a reference robot: ``"synthetic"`` (``SYNTHETIC_URDF``), the
    aerial manipulator or a key of ``EXAMPLE_ROBOTS`` (cached; fails if the URDF is missing)."""
    import geodyn_ros as gd
    src = SYNTHETIC_URDF if name == "synthetic" else robot_path(name)
    assert src is not None, f"{name}: example-robot-data URDF not found (pinned in requirements.txt)"
    model = gd.load_urdf(src)
    return model, PinRef(src, model.joint_names)


def robot_path(name):
    """Path of a reference robot URDF ('aerial_manipulator' or a key of EXAMPLE_ROBOTS)."""
    if name == "aerial_manipulator":
        return AERIAL_MANIPULATOR
    d = example_robot_data_dir()
    if d is None:
        return None
    p = os.path.join(d, EXAMPLE_ROBOTS[name])
    return p if os.path.isfile(p) else None


# A deliberately awkward tree: continuous joints (2-dim in Pinocchio q), a prismatic joint,
# non-principal unit axes, rotated joint origins, rotated off-diagonal inertias, massive links
# merged through fixed joints and a joint hanging below a merged link.
SYNTHETIC_URDF = """<?xml version="1.0"?>
<robot name="synthetic_tree">
  <link name="base_link">
    <inertial><origin xyz="0.03 -0.02 0.01" rpy="0.2 -0.1 0.3"/><mass value="3.0"/>
      <inertia ixx="0.05" ixy="0.004" ixz="-0.003" iyy="0.06" iyz="0.002" izz="0.08"/></inertial>
  </link>
  <joint name="j1" type="continuous">
    <parent link="base_link"/><child link="l1"/>
    <origin xyz="0.1 0.05 -0.02" rpy="0.1 -0.2 0.3"/><axis xyz="0 0 1"/>
  </joint>
  <link name="l1">
    <inertial><origin xyz="0.05 0.01 -0.02" rpy="0.3 0.1 -0.2"/><mass value="0.6"/>
      <inertia ixx="0.004" ixy="0.0003" ixz="0.0001" iyy="0.005" iyz="-0.0002" izz="0.003"/></inertial>
  </link>
  <joint name="j2" type="revolute">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0.12 0 0.01" rpy="-0.4 0.2 0.1"/><axis xyz="0.70710678118654752 0.70710678118654752 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="10"/>
  </joint>
  <link name="l2">
    <inertial><origin xyz="0.08 0.0 0.01" rpy="0 0.2 0"/><mass value="0.4"/>
      <inertia ixx="0.002" ixy="-0.0001" ixz="0.0002" iyy="0.003" iyz="0.0001" izz="0.0025"/></inertial>
  </link>
  <joint name="j3" type="prismatic">
    <parent link="l2"/><child link="l3"/>
    <origin xyz="0.15 0.02 0" rpy="0 0 0.5"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-0.3" upper="0.3" effort="10" velocity="1"/>
  </joint>
  <link name="l3">
    <inertial><origin xyz="0.02 0.01 0.03" rpy="0.1 0.2 0.3"/><mass value="0.3"/>
      <inertia ixx="0.001" ixy="0.0001" ixz="0" iyy="0.0012" iyz="0.0001" izz="0.0009"/></inertial>
  </link>
  <joint name="jf_tool" type="fixed">
    <parent link="l3"/><child link="l3_tool"/><origin xyz="0.05 0 0.02" rpy="0.3 0 0"/>
  </joint>
  <link name="l3_tool">
    <inertial><origin xyz="0.01 0 0" rpy="0 0 0"/><mass value="0.1"/>
      <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0003" iyz="0" izz="0.0002"/></inertial>
  </link>
  <joint name="j4" type="revolute">
    <parent link="base_link"/><child link="l4"/>
    <origin xyz="-0.1 0.02 -0.05" rpy="0 0.3 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="10"/>
  </joint>
  <link name="l4">
    <inertial><origin xyz="-0.04 0 -0.06" rpy="0 0 0.4"/><mass value="0.5"/>
      <inertia ixx="0.003" ixy="0" ixz="0.0004" iyy="0.003" iyz="0" izz="0.002"/></inertial>
  </link>
  <joint name="j5" type="continuous">
    <parent link="l4"/><child link="l5"/>
    <origin xyz="0 0 -0.14" rpy="0.2 0 -0.3"/><axis xyz="0.48 0.6 0.64"/>
  </joint>
  <link name="l5">
    <inertial><origin xyz="0 0.01 -0.05" rpy="0 0 0"/><mass value="0.35"/>
      <inertia ixx="0.0015" ixy="0.0001" ixz="0" iyy="0.0014" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="jf_sensor" type="fixed">
    <parent link="base_link"/><child link="sensor"/><origin xyz="0 0.12 0.04" rpy="0.5 0 0.2"/>
  </joint>
  <link name="sensor">
    <inertial><origin xyz="0 0.01 0" rpy="0.1 0 0"/><mass value="0.2"/>
      <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0005" iyz="0" izz="0.0003"/></inertial>
  </link>
  <joint name="j6" type="revolute">
    <parent link="sensor"/><child link="l6"/>
    <origin xyz="0 0.08 0" rpy="0 0 0"/><axis xyz="-1 0 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="10"/>
  </joint>
  <link name="l6">
    <inertial><origin xyz="0 0.05 0.01" rpy="0 0 0"/><mass value="0.25"/>
      <inertia ixx="0.0008" ixy="0" ixz="0" iyy="0.0006" iyz="0" izz="0.0007"/></inertial>
  </link>
</robot>
"""

# --------------------------------------------------------------------------- SE(3) algebra


def hat3(w):
    w = np.asarray(w, dtype=float)
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def hat6(V):
    """4x4 se(3) matrix of a twist V = (w, v)."""
    X = np.zeros((4, 4))
    X[:3, :3] = hat3(V[:3])
    X[:3, 3] = V[3:]
    return X


def ad(V):
    """ad_V = [[hat(w), 0], [hat(v), hat(w)]]."""
    A = np.zeros((6, 6))
    A[:3, :3] = hat3(V[:3])
    A[3:, 3:] = hat3(V[:3])
    A[3:, :3] = hat3(V[3:])
    return A


def Ad(C):
    """Ad_C = [[R, 0], [hat(p) R, R]]."""
    R, p = C[:3, :3], C[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[3:, :3] = hat3(p) @ R
    return A


def Ad_inv(C):
    """Ad_C^-1 = [[R^T, 0], [-R^T hat(p), R^T]]."""
    R, p = C[:3, :3], C[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R.T
    A[3:, 3:] = R.T
    A[3:, :3] = -R.T @ hat3(p)
    return A


SWAP = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


def exp_se3(V, t=1.0):
    """exp(hat(V) t) in closed form (Rodrigues + left Jacobian)."""
    w = np.asarray(V[:3], float) * t
    v = np.asarray(V[3:], float) * t
    th = np.linalg.norm(w)
    W = hat3(w)
    W2 = W @ W
    if th < 1e-6:
        a = 1 - th**2 / 6 + th**4 / 120
        b = 0.5 - th**2 / 24 + th**4 / 720
        c = 1 / 6 - th**2 / 120 + th**4 / 5040
    else:
        a = math.sin(th) / th
        b = (1 - math.cos(th)) / th**2
        c = (th - math.sin(th)) / th**3
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + a * W + b * W2
    T[:3, 3] = (np.eye(3) + b * W + c * W2) @ v
    return T


def quat_xyzw_from_R(R):
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method)."""
    tr = np.trace(R)
    k = int(np.argmax([tr, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        s = 2.0 * math.sqrt(1.0 + tr)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    elif k == 1:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s, (R[2, 1] - R[1, 2]) / s]
    elif k == 2:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s, (R[0, 2] - R[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s, (R[1, 0] - R[0, 1]) / s]
    q = np.array(q)
    return q / np.linalg.norm(q)


def R_from_quat_xyzw(q):
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def pose(R, p):
    C = np.eye(4)
    C[:3, :3] = R
    C[:3, 3] = p
    return C


# --------------------------------------------------------------------------- random states


def random_rotation(rng):
    q = rng.standard_normal(4)
    return R_from_quat_xyzw(q / np.linalg.norm(q))


def random_pose(rng, pscale=1.0):
    """Bounded random pose: uniform rotation, position uniform in [-pscale, pscale]^3."""
    return pose(random_rotation(rng), rng.uniform(-pscale, pscale, 3))


@dataclass
class State:
    C: np.ndarray  # (4, 4) base pose
    V: np.ndarray  # (6,) spatial twist
    Vd: np.ndarray  # (6,) its time derivative
    q: np.ndarray  # (n,)
    qd: np.ndarray
    qdd: np.ndarray


def random_state(rng, n, pscale=1.0, vscale=1.0, ascale=2.0):
    """A bounded random state built here (never pin.randomConfiguration: its free-flyer
    translation is unbounded).  Joint angles in [-pi, pi]; velocities N(0, vscale^2);
    accelerations N(0, ascale^2).  The spatial twist's linear part is pdot + p x w."""
    C = random_pose(rng, pscale)
    w = vscale * rng.standard_normal(3)
    pdot = vscale * rng.standard_normal(3)
    V = np.concatenate([w, pdot + np.cross(C[:3, 3], w)])
    return State(
        C=C,
        V=V,
        Vd=ascale * rng.standard_normal(6),
        q=rng.uniform(-np.pi, np.pi, n),
        qd=vscale * rng.standard_normal(n),
        qdd=ascale * rng.standard_normal(n),
    )


def random_jet(rng, rows, dim, scale=1.0, growth=1.0):
    """Random derivative array (rows, dim); row k has standard deviation scale * growth**k."""
    return scale * (growth ** np.arange(rows))[:, None] * rng.standard_normal((rows, dim))


# --------------------------------------------------------------------------- Pinocchio side


def build_pin_model(source):
    """Free-flyer Pinocchio model of a URDF path or URDF XML string."""
    if pin is None:  # pragma: no cover
        raise ImportError("pinocchio is required")
    if source.lstrip().startswith("<"):
        return pin.buildModelFromXML(source, pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(source, pin.JointModelFreeFlyer())


@dataclass
class JointSlot:
    name: str
    jid: int  # Pinocchio joint index
    idx_q: int
    idx_v: int
    nq: int  # 1, or 2 for a continuous (cos, sin) joint


class PinRef:
    """Pinocchio evaluated in *our* conventions (see the module docstring)."""

    def __init__(self, source, joint_names):
        self.model = build_pin_model(source)
        self.data = self.model.createData()
        m = self.model
        assert m.joints[1].shortname() == "JointModelFreeFlyer"
        self.joint_names = tuple(joint_names)
        self.n = len(self.joint_names)
        self.slots = []
        for name in self.joint_names:
            if not m.existJointName(name):
                raise KeyError(f"joint {name!r} unknown to Pinocchio")
            jid = m.getJointId(name)
            jm = m.joints[jid]
            if jm.nv != 1 or jm.nq not in (1, 2):
                raise ValueError(f"joint {name!r}: nq={jm.nq} nv={jm.nv}")
            self.slots.append(JointSlot(name, jid, jm.idx_q, jm.idx_v, jm.nq))
        if m.nv != 6 + self.n:
            raise ValueError(f"Pinocchio has nv={m.nv}, ours 6+{self.n}")
        self.vidx = np.array([s.idx_v for s in self.slots], dtype=int)

    # -- gravity
    def set_gravity(self, g):
        self.model.gravity = pin.Motion(np.asarray(g, float), np.zeros(3))  # (linear, angular)

    # -- configuration / velocity maps
    def q_pin(self, C, q):
        qp = np.zeros(self.model.nq)
        qp[:3] = C[:3, 3]
        qp[3:7] = quat_xyzw_from_R(C[:3, :3])
        for s, qj in zip(self.slots, q):
            if s.nq == 1:
                qp[s.idx_q] = qj
            else:
                qp[s.idx_q] = math.cos(qj)
                qp[s.idx_q + 1] = math.sin(qj)
        return qp

    def P(self, C):
        """v_pin = P nu, with nu = (V_spatial, qdot)."""
        P = np.zeros((self.model.nv, 6 + self.n))
        P[:6, :6] = SWAP @ Ad_inv(C)
        P[self.vidx, 6 + np.arange(self.n)] = 1.0
        return P

    def v_pin(self, C, V, qd):
        return self.P(C) @ np.concatenate([V, qd])

    # a_pin = P nudot (the Leibniz term of P vanishes on nu since ad_V V = 0)
    a_pin = v_pin

    def force_to_ours(self, C, f_pin):
        """Generalised force: (W spatial (n, f), tau in joint_names order) from Pinocchio's."""
        out = self.P(C).T @ f_pin
        return out[:6], out[6:]

    def force_to_pin(self, C, W, tau):
        return np.linalg.solve(self.P(C).T, np.concatenate([W, tau]))

    # -- dynamics in our conventions
    def rnea(self, C, V, Vd, q, qd, qdd, gravity=GRAVITY, fext=None):
        self.set_gravity(gravity)
        args = (self.model, self.data, self.q_pin(C, q), self.v_pin(C, V, qd), self.a_pin(C, Vd, qdd))
        f = pin.rnea(*args) if fext is None else pin.rnea(*args, fext)
        return self.force_to_ours(C, f)

    def aba(self, C, V, q, qd, W, tau, gravity=GRAVITY):
        self.set_gravity(gravity)
        a = pin.aba(self.model, self.data, self.q_pin(C, q), self.v_pin(C, V, qd), self.force_to_pin(C, W, tau))
        a = np.array(a)
        Vd = Ad(C) @ SWAP @ a[:6]
        return Vd, a[self.vidx]

    def mass_matrix(self, C, q):
        Mp = np.array(pin.crba(self.model, self.data, self.q_pin(C, q)))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T  # crba fills the upper triangle only
        P = self.P(C)
        return P.T @ Mp @ P

    def gravity_vector(self, C, q, gravity=GRAVITY):
        self.set_gravity(gravity)
        gp = pin.computeGeneralizedGravity(self.model, self.data, self.q_pin(C, q))
        return self.P(C).T @ gp

    def coriolis_times_nu(self, C, V, q, qd):
        """C(x) nu = P^T (nle - g) (gravity-independent)."""
        self.set_gravity(GRAVITY)
        qp = self.q_pin(C, q)
        h = pin.nonLinearEffects(self.model, self.data, qp, self.v_pin(C, V, qd))
        gp = pin.computeGeneralizedGravity(self.model, self.data, qp)
        return self.P(C).T @ (h - gp)

    # -- external wrenches
    def link_joint(self, link):
        """Pinocchio joint whose body carries URDF link `link` (possibly merged by a fixed joint)."""
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        if fid >= self.model.nframes:
            raise KeyError(link)
        return self.model.frames[fid].parentJoint

    def fext_from_spatial(self, C, q, wrenches):
        """Pinocchio fext (forces in each joint's local frame) from {link: spatial wrench (n, f)}."""
        pin.forwardKinematics(self.model, self.data, self.q_pin(C, q))
        fext = [pin.Force.Zero() for _ in range(self.model.njoints)]
        for link, W in wrenches.items():
            jid = self.link_joint(link)
            M = self.data.oMi[jid]
            Ci = pose(M.rotation, M.translation)
            Wl = Ad(Ci).T @ np.asarray(W, float)  # local (n, f)
            fext[jid] = fext[jid] + pin.Force(Wl[3:], Wl[:3])  # Pinocchio Force(linear, angular)
        return fext


# --------------------------------------------------------------------------- smooth trajectories


class SmoothTrajectory:
    """Smooth jets with exactly known derivatives of any order.

    V(t) (spatial twist) component i: a0 + a1 t + a2 t^2 + a3 t^3 + sum_m b_m sin(om_m t + ph_m);
    q(t)  joint j:                     c0 + c1 t + sum_m d_m sin(nu_m t + ps_m).
    """

    def __init__(self, rng, n, vscale=0.6, qscale=0.6, omega_max=2.0, n_sin=2):
        self.n = n
        self.poly = vscale * rng.uniform(-1, 1, (4, 6)) / np.array([1, 1, 2, 6])[:, None]
        self.vb = vscale * rng.uniform(-1, 1, (n_sin, 6))
        self.vom = rng.uniform(0.5, omega_max, (n_sin, 6))
        self.vph = rng.uniform(0, 2 * np.pi, (n_sin, 6))
        self.qc0 = rng.uniform(-np.pi, np.pi, n)
        self.qc1 = qscale * rng.uniform(-1, 1, n)
        self.qd = qscale * rng.uniform(-1, 1, (n_sin, n))
        self.qom = rng.uniform(0.5, omega_max, (n_sin, n))
        self.qph = rng.uniform(0, 2 * np.pi, (n_sin, n))

    @staticmethod
    def _sin_der(amp, om, ph, t, k):
        t = np.asarray(t, float)[..., None, None]
        return np.sum(amp * om**k * np.sin(om * t + ph + k * np.pi / 2), axis=-2)

    def V(self, t, k=0):
        """k-th derivative of V at time(s) t: shape t.shape + (6,)."""
        t = np.asarray(t, float)
        out = self._sin_der(self.vb, self.vom, self.vph, t, k)
        for i in range(k, 4):
            coef = math.factorial(i) / math.factorial(i - k)
            out = out + coef * self.poly[i] * t[..., None] ** (i - k)
        return out

    def q(self, t, k=0):
        t = np.asarray(t, float)
        out = self._sin_der(self.qd, self.qom, self.qph, t, k)
        if k == 0:
            out = out + self.qc0 + self.qc1 * t[..., None]
        elif k == 1:
            out = out + self.qc1
        return out

    def V_jet(self, t, rows):
        return np.array([self.V(t, k) for k in range(rows)])

    def q_jet(self, t, rows):
        return np.array([self.q(t, k) for k in range(rows)])


def _expm_small_batch(X, terms=14):
    """exp of a batch of small 4x4 matrices by a truncated Taylor series (||X|| < 0.1 asserted,
    so 14 terms are exact to machine precision)."""
    assert np.max(np.abs(X)) < 0.1
    out = np.broadcast_to(np.eye(4), X.shape).copy()
    term = out.copy()
    for k in range(1, terms + 1):
        term = term @ X / k
        out = out + term
    return out


def _hat6_batch(V):
    X = np.zeros(V.shape[:-1] + (4, 4))
    w, v = V[..., :3], V[..., 3:]
    X[..., 0, 1], X[..., 0, 2] = -w[..., 2], w[..., 1]
    X[..., 1, 0], X[..., 1, 2] = w[..., 2], -w[..., 0]
    X[..., 2, 0], X[..., 2, 1] = -w[..., 1], w[..., 0]
    X[..., :3, 3] = v
    return X


def integrate_pose(V_of_t, C0, t0, times, steps=1000):
    """C(t_i) solving dC/dt = hat(V(t)) C, C(t0) = C0, for every t_i in `times`.

    Fourth-order Magnus integrator on SE(3) (two Gauss points), run with `steps` equal steps
    from t0 to each t_i (vectorised over i).  Because the step count is fixed, the numerical
    C(t_i) is an analytic function of t_i whose Taylor expansion at t0 is exact through order 4;
    its error is O((t - t0)^5 / steps^4), so it perturbs a differentiated 5th derivative at t0 by
    O(120 c / steps^4) only and lower derivatives not at all (beyond rounding).
    """
    times = np.asarray(times, float)
    dt = (times - t0) / steps
    C = np.broadcast_to(C0, times.shape + (4, 4)).copy()
    c1, c2 = 0.5 - math.sqrt(3) / 6, 0.5 + math.sqrt(3) / 6
    for k in range(steps):
        ta = t0 + k * dt
        A1 = _hat6_batch(V_of_t(ta + c1 * dt))
        A2 = _hat6_batch(V_of_t(ta + c2 * dt))
        d = dt[:, None, None]
        Om = d / 2 * (A1 + A2) + math.sqrt(3) / 12 * d**2 * (A2 @ A1 - A1 @ A2)
        C = _expm_small_batch(Om) @ C
    return C


# --------------------------------------------------------------------------- differentiation


def chebyshev_nodes(t0, h, N):
    """N Chebyshev points of the first kind on [t0 - h, t0 + h]."""
    k = np.arange(N)
    return t0 + h * np.cos((2 * k + 1) * np.pi / (2 * N))


def chebyshev_derivatives(values, h, kmax):
    """Derivatives 0..kmax at the centre t0 of the data sampled at chebyshev_nodes(t0, h, N).

    values: (N, ...) samples.  Interpolates with the degree N-1 Chebyshev series (discrete
    cosine transform at the first-kind nodes) and differentiates the series exactly.
    Returns (kmax+1, ...)."""
    from numpy.polynomial import chebyshev as ch

    values = np.asarray(values, float)
    N = values.shape[0]
    flat = values.reshape(N, -1)
    k = np.arange(N)
    theta = (2 * k + 1) * np.pi / (2 * N)
    T = np.cos(np.outer(np.arange(N), theta))  # T_j(x_k)
    coef = (2.0 / N) * T @ flat
    coef[0] *= 0.5
    out = np.empty((kmax + 1, flat.shape[1]))
    c = coef
    for r in range(kmax + 1):
        out[r] = ch.chebval(0.0, c) / h**r
        c = ch.chebder(c)
    return out.reshape((kmax + 1,) + values.shape[1:])


def rel_err(a, b, floor=1.0):
    """||a - b|| / max(floor, ||b||)  (Frobenius / 2-norm; b is the reference)."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(floor, np.linalg.norm(b)))


def delayed_radius(I, kp, kd, lag, tau, h=2e-4):
    """Spectral radius of the loop ``I x'' = f``, ``lag f' = u - f``, ``u(t) = -(kp x + kd x')(t - tau)``
    discretised exactly on a grid ``h`` (zero-order hold of u over h, tau rounded to whole steps:
    the state carries the last D commands). Below 1: stable."""
    from scipy.linalg import expm
    Ac = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0 / I], [0.0, 0.0, -1.0 / lag]])
    Bc = np.array([0.0, 0.0, 1.0 / lag])
    E = np.zeros((4, 4))
    E[:3, :3], E[:3, 3] = Ac, Bc
    Ed = expm(E * h)
    Ad, Bd = Ed[:3, :3], Ed[:3, 3]
    D = int(round(tau / h))
    n = 3 + D
    Phi = np.zeros((n, n))
    Phi[:3, :3] = Ad
    Phi[:3, 3 + D - 1] = Bd                 # the oldest command acts now
    Phi[3, :3] = [-kp, -kd, 0.0]            # the newest command, from the current state
    for i in range(1, D):
        Phi[3 + i, 3 + i - 1] = 1.0         # the delay line shifts
    return float(np.max(np.abs(np.linalg.eigvals(Phi))))
