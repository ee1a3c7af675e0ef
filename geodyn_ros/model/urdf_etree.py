"""The package's own URDF reader on ``xml.etree.ElementTree``, and what both readers share.

:func:`geodyn_ros.model.urdf.load_urdf` reads a URDF through ``urdf_parser_py``
(:mod:`geodyn_ros.model.urdf_dom`); this module is the reader it falls back to for the documents
``urdf_parser_py`` refuses or reads with a loss (the cases are listed in
:mod:`geodyn_ros.model.urdf_dom`), and the reader of :func:`lock_joints_xml` (the MuJoCo
simulator's reduced tree). Both readers produce the same records:

* :class:`_Link`: ``name``; ``mass`` [kg]; ``com`` (3,) [m] and ``I`` (3, 3) [kg m^2], the centre
  of mass and the rotational inertia about it, both in the **link frame** (the ``<inertial>``
  origin applied); ``has_inertial``;
* :class:`_Joint`: ``name``, ``type``, ``parent``/``child`` link names, ``T`` (4, 4) the joint
  origin (child joint frame in the parent link frame), ``axis`` (3,) in the joint frame (unit for
  moving joints), ``order`` (position among the file's joints) and ``mimic``
  ``(master, multiplier, offset)`` or ``None``;

and hand them to :func:`index_tree`, which checks names and links in file order. Every message
and warning of the loader about the file's elements is written here.
"""
from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..lie import rpy_to_matrix
from .model import PRISMATIC, REVOLUTE

_MOVING = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
_KNOWN = set(_MOVING) | {"fixed", "floating", "planar"}


class URDFWarning(UserWarning):
    """A URDF was accepted with something the user should know (one line, naming the element)."""


def _warn(msg, stacklevel=3):
    warnings.warn(msg, URDFWarning, stacklevel=stacklevel)


#: the numeric attributes of the joint tags this loader ignores, which urdfdom still parses
_IGNORED_NUMERIC = {"limit": ("lower", "upper", "effort", "velocity"), "dynamics": ("damping", "friction"),
                    "safety_controller": ("soft_lower_limit", "soft_upper_limit", "k_position", "k_velocity"),
                    "calibration": ("rising", "falling")}
_NUMBER = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def _check_ignored_numbers(je, name) -> None:
    """Warn (naming the joint, the tag and the attribute) about a malformed number in a joint tag
    this loader ignores: the dynamics do not need it, but urdfdom (robot_state_publisher, the ROS
    URDF parser) refuses the whole file, so the robot would load here and fail in ROS. ``je``: the
    ``<joint>`` element (ElementTree or lxml)."""
    for tag, attrs in _IGNORED_NUMERIC.items():
        for el in je.findall(tag):
            for a in attrs:
                v = el.get(a)
                if v is not None and not _NUMBER.match(v):
                    _warn(f"joint {name!r}: <{tag} {a}=\"{v}\"> is not a number; geodyn_ros ignores <{tag}>, "
                          f"but the ROS URDF parser (urdfdom, robot_state_publisher) will refuse this file")


def _floats(text, n, what):
    try:
        vals = [float(x) for x in (text or "").split()]
    except ValueError:
        raise ValueError(f"{what}: cannot parse numbers from {text!r}") from None
    if len(vals) != n or not np.all(np.isfinite(vals)):
        raise ValueError(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def _transform(xyz, rpy):
    """4x4 transform of an ``<origin>`` whose ``xyz`` [m] and ``rpy`` [rad] (3 numbers each) are given,
    ``None`` for an absent attribute (no translation, no rotation: the identity block is kept as it
    is, not rebuilt from zero angles, which would write ``-0.0`` below the diagonal)."""
    T = np.eye(4)
    if xyz is not None:
        T[:3, 3] = xyz
    if rpy is not None:
        T[:3, :3] = rpy_to_matrix(rpy)
    return T


def _origin(elem, what):
    """4x4 transform of an ``<origin xyz rpy>`` child (identity if absent)."""
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return np.eye(4)
    xyz = _floats(o.get("xyz"), 3, f"{what} origin xyz") if o.get("xyz") is not None else None
    rpy = _floats(o.get("rpy"), 3, f"{what} origin rpy") if o.get("rpy") is not None else None
    return _transform(xyz, rpy)


class _Link:
    """A link's name and inertia in its own frame (module docstring)."""
    __slots__ = ("name", "mass", "com", "I", "has_inertial")

    def __init__(self, name, mass=0.0, T=None, Iin=None):
        """``T``: the ``<inertial>`` origin (4, 4) in the link frame; ``Iin`` (3, 3) the ``<inertia>``
        in that frame [kg m^2]; ``T=None``: no ``<inertial>`` (massless, zero inertia)."""
        self.name, self.mass, self.com, self.I, self.has_inertial = name, mass, np.zeros(3), np.zeros((3, 3)), False
        if T is not None:
            R = T[:3, :3]
            self.com = T[:3, 3].copy()
            self.I = R @ Iin @ R.T
            self.has_inertial = True


class _Joint:
    """A joint as the tree builder needs it (module docstring)."""
    __slots__ = ("name", "type", "parent", "child", "T", "axis", "order", "mimic")

    def __init__(self, name, jtype, parent, child, T, axis, order, mimic):
        self.name, self.type, self.parent, self.child = name, jtype, parent, child
        self.T, self.axis, self.order, self.mimic = T, axis, order, mimic


_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def inertia_matrix(v):
    """(3, 3) symmetric rotational inertia from ``{ixx, ixy, ixz, iyy, iyz, izz}`` [kg m^2]."""
    return np.array([[v["ixx"], v["ixy"], v["ixz"]],
                     [v["ixy"], v["iyy"], v["iyz"]],
                     [v["ixz"], v["iyz"], v["izz"]]])


def link_from_element(elem) -> _Link:
    """:class:`_Link` of a ``<link>`` element, refusing what the loader refuses."""
    name = elem.get("name")
    if not name:
        raise ValueError("URDF: a <link> has no name")
    inertial = elem.find("inertial")
    if inertial is None:
        return _Link(name)
    what = f"link {name!r}"
    m = inertial.find("mass")
    if m is None or m.get("value") is None:
        raise ValueError(f"{what}: <inertial> without <mass value=...>")
    mass = float(_floats(m.get("value"), 1, f"{what} mass")[0])
    if mass < 0:
        raise ValueError(f"{what}: negative mass {mass}")
    T = _origin(inertial, f"{what} inertial")
    ine = inertial.find("inertia")
    if ine is None:
        if mass > 0:
            raise ValueError(f"{what}: <inertial> has a mass but no <inertia> element")
        Iin = np.zeros((3, 3))
    else:
        # an absent component is 0; checked after fixed-joint merging (_check_inertia), to a relative tolerance
        Iin = inertia_matrix({k: float(_floats(ine.get(k, "0"), 1, f"{what} inertia {k}")[0])
                              for k in _INERTIA_KEYS})
    return _Link(name, mass, T, Iin)


def unit_axis(axis, what):
    """The moving joint's axis divided by its norm; a zero axis is refused."""
    nrm = np.linalg.norm(axis)
    if nrm < 1e-12:
        raise ValueError(f"{what}: zero joint axis")
    return axis / nrm


def joint_from_element(elem, order) -> _Joint:
    """:class:`_Joint` of a ``<joint>`` element (the ``order``-th of the file), refusing what the
    loader refuses."""
    name, jtype = elem.get("name"), elem.get("type")
    what = f"joint {name!r}"
    if not name:
        raise ValueError("URDF: a <joint> has no name")
    if jtype not in _KNOWN:
        raise ValueError(f"{what}: unknown joint type {jtype!r}")
    mimic = None
    mim = elem.find("mimic")
    if mim is not None and jtype in _MOVING:
        master = mim.get("joint")
        if not master:
            raise ValueError(f"{what}: <mimic> needs joint=\"master joint name\"")
        mult = float(_floats(mim.get("multiplier", "1"), 1, f"{what} mimic multiplier")[0])
        off = float(_floats(mim.get("offset", "0"), 1, f"{what} mimic offset")[0])
        mimic = (master, mult, off)
    p, c = elem.find("parent"), elem.find("child")
    if p is None or c is None or not p.get("link") or not c.get("link"):
        raise ValueError(f"{what}: needs <parent link=...> and <child link=...>")
    T = _origin(elem, what)
    axis = np.array([1.0, 0.0, 0.0])
    a = elem.find("axis")
    if a is not None and a.get("xyz") is not None:
        axis = _floats(a.get("xyz"), 3, f"{what} axis")
    if jtype in _MOVING:
        axis = unit_axis(axis, what)
    return _Joint(name, jtype, p.get("link"), c.get("link"), T, axis, order, mimic)


def index_tree(links_in, joints_in, desc):
    """``(links, joints, by_child, children)`` from the records in file order: ``links_in`` yields
    :class:`_Link`, ``joints_in`` yields ``(_Joint, its <joint> element)``. Either may be a
    generator that reads as it goes (the ElementTree reader), so that the first error of the file
    is the one raised. Refuses duplicate names, undefined links and a link with two parent joints;
    warns about malformed numbers in the ignored joint tags."""
    links = {}
    for lk in links_in:
        if lk.name in links:
            raise ValueError(f"URDF: duplicate link name {lk.name!r}")
        links[lk.name] = lk
    if not links:
        raise ValueError(f"source: {desc} has no <link>")
    joints, by_child, children = {}, {}, {n: [] for n in links}
    for j, je in joints_in:
        _check_ignored_numbers(je, j.name)
        if j.name in joints:
            raise ValueError(f"URDF: duplicate joint name {j.name!r}")
        for role, ln in (("parent", j.parent), ("child", j.child)):
            if ln not in links:
                raise ValueError(f"joint {j.name!r}: {role} link {ln!r} is not defined")
        if j.child in by_child:
            raise ValueError(f"link {j.child!r} has two parent joints ({by_child[j.child].name!r}, {j.name!r}):"
                             " closed loops are not supported")
        joints[j.name] = j
        by_child[j.child] = j
        children[j.parent].append(j)
    return links, joints, by_child, children


def read_etree(text, desc, locked_joints):
    """``(robot name, links, joints, by_child, children)`` of URDF ``text`` (no white space before
    the XML declaration) read with ElementTree, the joints in ``locked_joints`` locked first."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"source: {desc} is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"source: {desc} has root element <{root.tag}>, expected <robot>")
    locked = locked_map(locked_joints)
    if locked:
        lock_joints(root, locked)
    tree = index_tree((link_from_element(le) for le in root.findall("link")),
                      ((joint_from_element(je, k), je) for k, je in enumerate(root.findall("joint"))), desc)
    return (root.get("name", ""),) + tree


def _matrix_to_rpy(R) -> np.ndarray:
    """URDF roll-pitch-yaw of a rotation matrix (inverse of :func:`geodyn_ros.lie.rpy_to_matrix`)."""
    sp = -R[2, 0]
    if abs(sp) > 1.0 - 1e-12:                 # gimbal lock: roll and yaw share one axis, take roll = 0
        return np.array([0.0, np.copysign(np.pi / 2, sp), np.arctan2(-R[0, 1], R[1, 1])])
    return np.array([np.arctan2(R[2, 1], R[2, 2]), np.arcsin(np.clip(sp, -1.0, 1.0)),
                     np.arctan2(R[1, 0], R[0, 0])])


def locked_map(locked_joints) -> dict:
    """``{joint name: position [rad or m]}`` of ``load_urdf``'s ``locked_joints`` argument, checked."""
    if locked_joints is None:
        return {}
    if isinstance(locked_joints, (str, bytes)):
        raise ValueError("locked_joints: expected an iterable of joint names or a mapping {name: position}, "
                         f"got the string {locked_joints!r}")
    if isinstance(locked_joints, dict):
        items = list(locked_joints.items())
    else:
        try:
            items = [(name, 0.0) for name in locked_joints]
        except TypeError:
            raise ValueError("locked_joints: expected an iterable of joint names or a mapping {name: position}, "
                             f"got {type(locked_joints).__name__}") from None
    out = {}
    for name, pos in items:
        if not isinstance(name, str):
            raise ValueError(f"locked_joints: joint names must be strings, got {name!r}")
        try:
            v = float(pos)
        except (TypeError, ValueError):
            raise ValueError(f"locked_joints: position of {name!r} must be a real number, got {pos!r}") from None
        if not np.isfinite(v):
            raise ValueError(f"locked_joints: position of {name!r} is not finite ({pos!r})")
        out[name] = v
    return out


def lock_joints(root, locked: dict) -> None:
    """Turn the named moving joints of a parsed ``<robot>`` (an ElementTree or lxml element) into
    ``fixed`` joints, in place.

    A joint locked at position ``x`` gets the origin ``T_origin @ T_joint(x)`` (rotation ``x``
    about the unit axis for revolute/continuous, translation ``x`` along it for prismatic), so the
    child link keeps the pose it has at ``q = x`` (Pinocchio's ``buildReducedModel``).
    """
    elems = {je.get("name"): je for je in root.findall("joint")}
    for name, x in locked.items():
        je = elems.get(name)
        if je is None:
            raise ValueError(f"locked_joints: unknown joint {name!r}")
        jt = je.get("type")
        if jt not in _MOVING:
            raise ValueError(f"locked_joints: joint {name!r} has type {jt!r}; only revolute, continuous and "
                             "prismatic joints can be locked")
        for other in root.findall("joint"):
            m = other.find("mimic")
            if m is not None and m.get("joint") == name and other.get("name") not in locked:
                raise ValueError(f"locked_joints: joint {other.get('name')!r} mimics the locked joint {name!r}; "
                                 "lock it too")
        T = _origin(je, f"joint {name!r}")
        a = je.find("axis")
        e = _floats(a.get("xyz"), 3, f"joint {name!r} axis") if a is not None and a.get("xyz") else np.array([1.0, 0, 0])
        e = unit_axis(e, f"joint {name!r}")
        M = np.eye(4)
        if _MOVING[jt] == REVOLUTE:
            K = np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
            M[:3, :3] = np.eye(3) + np.sin(x) * K + (1.0 - np.cos(x)) * (K @ K)    # Rodrigues
        else:
            M[:3, 3] = x * e
        T = T @ M
        for tag in ("origin", "mimic"):
            for el in je.findall(tag):
                je.remove(el)
        o = je.makeelement("origin", {})     # ElementTree and lxml alike
        je.append(o)
        o.set("xyz", " ".join(repr(float(v)) for v in T[:3, 3]))
        o.set("rpy", " ".join(repr(float(v)) for v in _matrix_to_rpy(T[:3, :3])))
        je.set("type", "fixed")


def lock_joints_xml(text: str, locked_joints) -> str:
    """URDF text with the named joints locked (made ``fixed``), as ``load_urdf(..., locked_joints=...)`` does.

    Used by :class:`geodyn_ros.sim.MujocoSim` so that the simulator and the dynamics model see the
    same reduced tree. ``locked_joints``: iterable of names (locked at 0) or mapping
    ``{name: position [rad or m]}``.
    """
    locked = locked_map(locked_joints)
    root = ET.fromstring(text.lstrip("\ufeff \t\r\n"))
    lock_joints(root, locked)
    return ET.tostring(root, encoding="unicode")
