"""The URDF joints' transforms, parent link to child link, at a configuration (no ROS).

What ``robot_state_publisher`` publishes on ``/tf`` and ``/tf_static``, computed from a loaded
:class:`~geodyn_ros.model.Model` and the URDF it was loaded from: for every URDF joint below the
base (the joints above it, e.g. a massless ``world`` root's floating joint, are not part of the
floating robot), the pose of the child link frame in the parent link frame,
``T_parent_child(q) = T_origin M_joint(q)``.

* ``T_origin`` is the model's home placement of the child relative to the parent,
  ``inv(link_home[parent]) @ link_home[child]`` (base at identity, ``q = 0``; locked joints
  already at their lock position, as in the model);
* ``M_joint(q)`` is the rotation by ``q`` [rad] about the joint axis (revolute, continuous) or
  the translation by ``q`` [m] along it (prismatic); the axis in the child frame is the model's
  home screw ``Y`` rotated back into the child link, ``R_child_home^T e``.

Fixed joints (and the joints the model locked) have ``M = I``: constant transforms
(:attr:`JointFrames.fixed`). The moving ones are evaluated in one vectorised pass
(:meth:`JointFrames.moving_transforms`: eight numpy operations, about 14 µs for six joints on the
shared 2-core machine) for the
simulator's hot path. Quaternions are ``(x, y, z, w)`` (ROS order), translations in metres.
"""
from __future__ import annotations

import numpy as np

from ..lie import matrix_to_quat
from .model import REVOLUTE

__all__ = ["JointFrames", "joint_frames"]


def _quat_mul(a, b, out):
    """Hamilton product of ``(m, 4)`` quaternion rows ``a b`` in ``(x, y, z, w)`` order, into ``out``."""
    ax, ay, az, aw = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bx, by, bz, bw = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    out[:, 0] = aw * bx + ax * bw + ay * bz - az * by
    out[:, 1] = aw * by - ax * bz + ay * bw + az * bx
    out[:, 2] = aw * bz + ax * by - ay * bx + az * bw
    out[:, 3] = aw * bw - ax * bx - ay * by - az * bz
    return out


class JointFrames:
    """Parent-to-child transforms of a model's URDF joints (module docstring).

    Attributes
    ----------
    fixed : list of (joint, parent, child, translation (3,), quaternion xyzw (4,))
        The constant transforms (fixed and locked joints), URDF order.
    moving_joints, moving_parents, moving_children : tuple of str
        The moving joints (one per model joint, in URDF order) and their parent and child links.
    """

    def __init__(self, fixed, moving, columns, t0, q0, axis, revolute, n_joints):
        self.fixed = fixed
        self.moving_joints = tuple(m[0] for m in moving)
        self.moving_parents = tuple(m[1] for m in moving)
        self.moving_children = tuple(m[2] for m in moving)
        self._cols = np.asarray(columns, dtype=np.intp)
        m = len(moving)
        self._t0, self._q0 = t0, q0
        # q0 (x) (sin(a/2) e, cos(a/2)) = sin(a/2) (q0 (x) (e, 0)) + cos(a/2) q0: two vector operations
        e0 = np.zeros((m, 4))
        e0[:, :3] = axis                      # unit axis in the child frame (= the joint frame at q = 0)
        self._qe = _quat_mul(q0, e0, np.empty((m, 4)))
        self._half = 0.5 * revolute.astype(float)[:, None]   # revolute: half angle per rad; prismatic: 0
        self._slide = (~revolute)[:, None] * np.einsum("mij,mj->mi", _rot_xyzw(q0), axis)   # parent axes
        self._n = n_joints
        self._c = np.empty((m, 1))
        self._tmp = np.empty((m, 4))

    def moving_transforms(self, q, t_out, quat_out) -> None:
        """Fill ``t_out`` (m, 3) [m] and ``quat_out`` (m, 4) (x, y, z, w) with the transforms of the
        moving joints at the joint positions ``q`` (n,) (``model.joint_names`` order, rad or m).
        ``q`` is not checked (the simulator's own state); use :meth:`transforms` otherwise."""
        x = np.asarray(q, dtype=float)[self._cols][:, None]
        half = self._half * x
        np.sin(half, out=self._c)
        np.multiply(self._qe, self._c, out=quat_out)
        np.cos(half, out=self._c)
        np.multiply(self._q0, self._c, out=self._tmp)
        quat_out += self._tmp
        np.multiply(self._slide, x, out=t_out)
        t_out += self._t0

    def transforms(self, q):
        """``(t (m, 3), quat (m, 4))`` of :meth:`moving_transforms`; ``ValueError`` naming ``q``
        if it is not ``n`` finite numbers."""
        x = np.asarray(q, dtype=float)
        if x.shape != (self._n,) or not np.isfinite(x).all():
            raise ValueError(f"q: expected {self._n} finite joint positions, got shape {x.shape}")
        t, quat = np.empty((len(self._cols), 3)), np.empty((len(self._cols), 4))
        self.moving_transforms(x, t, quat)
        return t, quat


def _rot_xyzw(q):
    """(m, 3, 3) rotation matrices of (m, 4) unit quaternions (x, y, z, w)."""
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def joint_frames(model, urdf_text: str) -> JointFrames:
    """:class:`JointFrames` of ``model`` loaded from ``urdf_text`` (the URDF XML it was loaded
    from, with the same joints locked: e.g. ``MujocoSim.urdf_text``).

    The URDF gives the tree (which link is whose parent, the joint names and types); the
    placements and axes come from the model (module docstring). ``ValueError`` if the text is
    not a URDF of this model (a moving joint the model does not have, or the reverse).
    """
    from .urdf import _read

    text = urdf_text.lstrip("\ufeff \t\r\n")
    (_, _links, joints, _by_child, _children), _ = _read(text, "urdf_text", None, "urdfdom")
    home = model.link_home
    below = model.link_to_body     # the links of the floating robot (the base's subtree)
    fixed, moving, cols, t0, q0, axes, rev = [], [], [], [], [], [], []
    for j in joints.values():
        if j.child not in below or j.child == model.base_link or j.parent not in below:
            continue   # above the base (a massless root's joint) or not part of the model
        T = np.linalg.inv(home[j.parent]) @ home[j.child]
        t, quat = T[:3, 3].copy(), matrix_to_quat(T[:3, :3], "xyzw")
        if j.type == "fixed":
            fixed.append((j.name, j.parent, j.child, t, quat))
            continue
        try:
            col = model.joint_index(j.name)
        except ValueError:
            raise ValueError(f"urdf_text: moving joint {j.name!r} is not a joint of the model "
                             f"{model.name!r} (another URDF, or other locked joints)") from None
        body = col + 1
        Y = model.Y[body]
        R_child = home[j.child][:3, :3]
        e = Y[:3] if model.jtype[body] == REVOLUTE else Y[3:]
        moving.append((j.name, j.parent, j.child))
        cols.append(col)
        t0.append(t)
        q0.append(quat)
        axes.append(R_child.T @ e)
        rev.append(model.jtype[body] == REVOLUTE)
    if len(moving) != model.n_joints:
        missing = sorted(set(model.joint_names) - {m[0] for m in moving})
        raise ValueError(f"urdf_text: the model's joints {missing} are not moving joints of the URDF")
    m = len(moving)
    return JointFrames(fixed, moving, cols, np.array(t0, float).reshape(m, 3), np.array(q0, float).reshape(m, 4),
                       np.array(axes, float).reshape(m, 3), np.array(rev, bool), model.n_joints)
