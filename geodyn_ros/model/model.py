"""The multibody model: constant data built once from a URDF (Pinocchio's "model").

A :class:`Model` holds the kinematic tree of a floating-base robot after merging
``fixed`` joints, in flat arrays ready for the compiled kernels:

* bodies ``0..N-1`` in depth-first pre-order (``parent[i] < i``), body 0 is the base;
* joint ``j`` (column ``j`` of every joint array) moves body ``j + 1``;
* ``Y[i]``: the constant spatial screw of the joint of body ``i`` at home (base pose
  = identity, ``q = 0``), in world axes, angular first (paper eq. (3));
* ``mass[i]``, ``com[i]`` (home centre of mass in world), ``inertia[i]`` (home 3x3
  rotational inertia about the centre of mass, world axes).

The kernels never read URDF or Python objects; algorithms are free functions of
``(model, state)`` (see :mod:`geodyn_ros.algorithms.dynamics`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

REVOLUTE = 0   #: joint type code: revolute or continuous (one angle)
PRISMATIC = 1  #: joint type code: prismatic


@dataclass(frozen=True, eq=False)
class Model:
    """A floating-base kinematic tree (see module docstring for the layout).

    Public attributes (the API contract of ``CONVENTIONS.md``): ``joint_names``,
    ``n_joints``, ``base_link``, ``link_names``, ``total_mass``.

    Loader options recorded on the model (see :func:`geodyn_ros.load_urdf`):

    * ``fixed_base``: the base body is welded to the world at the ``base_pose`` the dynamics
      functions are given; its twist is zero at every order and the base wrench they return is
      the reaction the weld exerts on the robot.
    * ``mimic``: every URDF ``<mimic>`` relation ``{joint: (master, multiplier, offset)}`` (masters
      resolved through chains), also when the mimic joint is loaded as an independent joint.
    * ``mimic_enforced``: ``q_mimic = multiplier * q_master + offset`` holds at every derivative
      order in inverse, forward and hybrid dynamics (mimic columns of ``q`` are derived from the
      master on input; a mimic joint's torque is projected onto its master).
    * ``singular``: ``""``, or why the mass matrix is singular at every configuration and what to
      change, one line ``"<problem>; <fix>"`` found by the loader
      (:mod:`geodyn_ros.model.singularity`). The forward dynamics of such a model
      (``forward_dynamics``, ``Workspace.forward_dynamics``, ``forward_dynamics_derivatives``,
      ``linearize``, ``inverse_mass_matrix``, ``decoupled_forward_dynamics``) raises ``ValueError``
      with it; inverse dynamics, and hybrid dynamics with enough motion prescribed, stay defined.
    """

    name: str
    joint_names: tuple
    base_link: str
    link_names: tuple            # body names (one URDF link per body, base first)
    joint_types: tuple           # URDF type string per joint ('revolute', 'continuous', 'prismatic')
    parent: np.ndarray           # (N,) int64, parent body index, -1 for the base
    jtype: np.ndarray            # (N,) int64, REVOLUTE / PRISMATIC (entry 0 unused)
    Y: np.ndarray                # (N, 6) home spatial screws (row 0 zero)
    mass: np.ndarray             # (N,)
    com: np.ndarray              # (N, 3) home centre of mass in world
    inertia: np.ndarray          # (N, 3, 3) home rotational inertia about the CoM, world axes
    link_to_body: dict           # every URDF link name (also merged ones) -> body index
    link_home: dict              # every URDF link name -> (4, 4) home pose in world
    fixed_base: bool = False     # base welded to the world at ``base_pose`` (zero base motion)
    mimic: dict = field(default_factory=dict)   # URDF <mimic>: joint -> (master, multiplier, offset)
    mimic_enforced: bool = False  # True: q_mimic = multiplier * q_master + offset at every order
    singular: str = ""           # why M is singular at every configuration ("" if it is not)
    _packed: dict = field(default_factory=dict, repr=False)

    # ---- contract attributes -------------------------------------------------
    @property
    def n_joints(self) -> int:
        """Number of actuated 1-DoF joints ``n``."""
        return len(self.joint_names)

    @property
    def n_bodies(self) -> int:
        """Number of bodies ``N = n + 1`` after merging fixed joints."""
        return len(self.link_names)

    @property
    def nv(self) -> int:
        """Dimension ``6 + n`` of the generalised velocity ``nu = (V_base, qdot)``."""
        return 6 + len(self.joint_names)

    @property
    def total_mass(self) -> float:
        return float(self.mass.sum())

    # ---- packed arrays for the kernels ----------------------------------------
    def __post_init__(self):
        bodyi = np.ascontiguousarray(np.stack([self.parent, self.jtype], axis=1).astype(np.int64))
        bodyf = np.ascontiguousarray(np.concatenate(
            [self.Y, self.mass[:, None], self.com, self.inertia.reshape(-1, 9)], axis=1))
        bodyi.setflags(write=False)
        bodyf.setflags(write=False)
        # plain attributes (not properties): they are read on every call of the hot path
        object.__setattr__(self, "bodyi", bodyi)   # (N, 2) int64 [parent, jtype]
        object.__setattr__(self, "bodyf", bodyf)   # (N, 19) float64 [Y(6), mass, com(3), inertia(9)]
        object.__setattr__(self, "_no_ext_torque", np.zeros((0, len(self.joint_names))))
        object.__setattr__(self, "_no_prescribed", np.zeros(len(self.joint_names), dtype=np.int64))
        object.__setattr__(self, "_n", len(self.joint_names))
        # per-order work buffers of the hot-path kernels (Pinocchio's "data"), made on first use
        object.__setattr__(self, "_id_ws", {})
        object.__setattr__(self, "_fd_ws", {})
        object.__setattr__(self, "_flat_ws", {})   # the flat map's (geodyn_ros.algorithms.flat)
        # True when the dynamics functions must go through geodyn_ros.algorithms.constrained
        object.__setattr__(self, "_constrained", bool(self.fixed_base or (self.mimic_enforced and self.mimic)))
        # the unconstrained floating-base twin (same arrays) that geodyn_ros.algorithms.constrained runs on
        object.__setattr__(self, "_plain", self if not self._constrained else replace(
            self, fixed_base=False, mimic_enforced=False, _packed={}))
        self._packed["joint_index"] = {n: i for i, n in enumerate(self.joint_names)}

    def joint_index(self, name: str) -> int:
        """Column of joint ``name`` in every joint array (``ValueError`` if unknown)."""
        try:
            return self._packed["joint_index"][name]
        except KeyError:
            raise ValueError(f"unknown joint name {name!r}; model joints: {list(self.joint_names)}") from None

    def body_of_link(self, link: str) -> int:
        """Body index that URDF link ``link`` belongs to (merged links map to their body)."""
        try:
            return self.link_to_body[link]
        except KeyError:
            raise ValueError(f"unknown link name {link!r}; known links: {sorted(self.link_to_body)}") from None

    def __repr__(self) -> str:
        extra = ", fixed_base=True" if self.fixed_base else ""
        if self.mimic:
            extra += f", mimic={len(self.mimic)} ({'enforced' if self.mimic_enforced else 'independent'})"
        return (f"Model({self.name!r}, base_link={self.base_link!r}, n_joints={self.n_joints}, "
                f"n_bodies={self.n_bodies}, total_mass={self.total_mass:.6g}{extra})")
