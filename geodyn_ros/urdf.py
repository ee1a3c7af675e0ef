"""URDF (and xacro) to :class:`~geodyn_ros.model.Model`: spatial screws and inertias.

The parser knows nothing about the algorithms. It

1. reads the XML (file path, ``.xacro`` file expanded with the ``xacro`` package, or
   an XML string);
2. finds the floating base: the URDF root link, or - when the root is massless and
   joined by a single ``floating``/``fixed`` joint to one child (``world``,
   ``base_footprint`` patterns) - that child;
3. merges every ``fixed`` joint into its parent body (combined spatial inertia);
4. orders the bodies depth first (children in the order their joints appear in the
   file) and builds, at home (base pose identity, all joints zero), the spatial screws
   ``Y_j = (e, p x e)`` (revolute/continuous) or ``(0, e)`` (prismatic) in world axes
   (paper eq. (3), Appendix D), and each body's mass, centre of mass and rotational
   inertia in world axes.

Visual, collision, limit, dynamics (damping/friction), transmission and gazebo tags
are ignored. What is not supported raises ``ValueError`` with the offending element.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .lie import rpy_to_matrix
from .model import PRISMATIC, REVOLUTE, Model

__all__ = ["load_urdf"]

_MOVING = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
_KNOWN = set(_MOVING) | {"fixed", "floating", "planar"}


def _floats(text, n, what):
    try:
        vals = [float(x) for x in (text or "").split()]
    except ValueError:
        raise ValueError(f"{what}: cannot parse numbers from {text!r}") from None
    if len(vals) != n or not np.all(np.isfinite(vals)):
        raise ValueError(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def _origin(elem, what):
    """4x4 transform of an ``<origin xyz rpy>`` child (identity if absent)."""
    T = np.eye(4)
    o = elem.find("origin") if elem is not None else None
    if o is not None:
        if o.get("xyz") is not None:
            T[:3, 3] = _floats(o.get("xyz"), 3, f"{what} origin xyz")
        if o.get("rpy") is not None:
            T[:3, :3] = rpy_to_matrix(_floats(o.get("rpy"), 3, f"{what} origin rpy"))
    return T


def _read_source(source) -> tuple[str, str]:
    """Return (xml text, description for messages)."""
    if isinstance(source, (bytes, bytearray)):
        source = source.decode()
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("<")):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise ValueError(f"source: no such URDF file {path!r} (pass a file path or an XML string)")
        if path.endswith(".xacro"):
            try:
                import xacro
            except ImportError as exc:  # pragma: no cover - xacro is a dependency
                raise ValueError("source: .xacro files need the 'xacro' package") from exc
            try:
                return xacro.process_file(path).toxml(), path
            except Exception as exc:
                raise ValueError(f"source: xacro failed on {path!r}: {exc}") from exc
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    if isinstance(source, str):
        return source, "<URDF string>"
    raise ValueError(f"source: expected a path or a URDF XML string, got {type(source).__name__}")


class _Link:
    __slots__ = ("name", "mass", "com", "I", "has_inertial")

    def __init__(self, elem):
        self.name = elem.get("name")
        if not self.name:
            raise ValueError("URDF: a <link> has no name")
        self.mass, self.com, self.I, self.has_inertial = 0.0, np.zeros(3), np.zeros((3, 3)), False
        inertial = elem.find("inertial")
        if inertial is None:
            return
        what = f"link {self.name!r}"
        m = inertial.find("mass")
        if m is None or m.get("value") is None:
            raise ValueError(f"{what}: <inertial> without <mass value=...>")
        self.mass = float(_floats(m.get("value"), 1, f"{what} mass")[0])
        if self.mass < 0:
            raise ValueError(f"{what}: negative mass {self.mass}")
        T = _origin(inertial, f"{what} inertial")
        ine = inertial.find("inertia")
        if ine is None:
            if self.mass > 0:
                raise ValueError(f"{what}: <inertial> has a mass but no <inertia> element")
            Iin = np.zeros((3, 3))
        else:
            keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
            vals = {}
            for k in keys:
                v = ine.get(k, "0")
                vals[k] = float(_floats(v, 1, f"{what} inertia {k}")[0])
            Iin = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                            [vals["ixy"], vals["iyy"], vals["iyz"]],
                            [vals["ixz"], vals["iyz"], vals["izz"]]])
            ev = np.linalg.eigvalsh(Iin)
            if ev[0] < -1e-9 * max(1.0, abs(ev[-1])):
                raise ValueError(f"{what}: inertia tensor is not positive semi-definite (eigenvalues {ev})")
        R = T[:3, :3]
        self.com = T[:3, 3].copy()
        self.I = R @ Iin @ R.T
        self.has_inertial = True


class _Joint:
    __slots__ = ("name", "type", "parent", "child", "T", "axis", "order")

    def __init__(self, elem, order):
        self.name = elem.get("name")
        self.type = elem.get("type")
        what = f"joint {self.name!r}"
        if not self.name:
            raise ValueError("URDF: a <joint> has no name")
        if self.type not in _KNOWN:
            raise ValueError(f"{what}: unknown joint type {self.type!r}")
        if elem.find("mimic") is not None:
            raise ValueError(f"{what}: <mimic> joints are not supported in v1")
        p, c = elem.find("parent"), elem.find("child")
        if p is None or c is None or not p.get("link") or not c.get("link"):
            raise ValueError(f"{what}: needs <parent link=...> and <child link=...>")
        self.parent, self.child = p.get("link"), c.get("link")
        self.T = _origin(elem, what)
        self.order = order
        self.axis = np.array([1.0, 0.0, 0.0])
        a = elem.find("axis")
        if a is not None and a.get("xyz") is not None:
            self.axis = _floats(a.get("xyz"), 3, f"{what} axis")
        if self.type in _MOVING:
            nrm = np.linalg.norm(self.axis)
            if nrm < 1e-12:
                raise ValueError(f"{what}: zero joint axis")
            self.axis = self.axis / nrm


def load_urdf(source, *, base_link=None) -> Model:
    """Build a :class:`Model` from a URDF.

    Parameters
    ----------
    source : str or os.PathLike
        Path to a ``.urdf`` (or ``.xacro``, expanded with the ``xacro`` package, with
        ``$(find pkg)`` resolved through the ament index) file, or the URDF XML string
        itself (the ROS ``robot_description`` convention).
    base_link : str, optional
        Name of the floating base. ``None`` selects the URDF root link (or the child
        of a massless root attached by one ``floating``/``fixed`` joint). Naming any
        other link (re-rooting the tree) raises ``ValueError`` in v1.

    Returns
    -------
    Model
        The tree with the root as a free body on SE(3), fixed joints merged, joints in
        depth-first order (``model.joint_names``).
    """
    text, desc = _read_source(source)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"source: {desc} is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"source: {desc} has root element <{root.tag}>, expected <robot>")

    links = {}
    for le in root.findall("link"):
        lk = _Link(le)
        if lk.name in links:
            raise ValueError(f"URDF: duplicate link name {lk.name!r}")
        links[lk.name] = lk
    if not links:
        raise ValueError(f"source: {desc} has no <link>")
    joints, by_child, children = {}, {}, {n: [] for n in links}
    for k, je in enumerate(root.findall("joint")):
        j = _Joint(je, k)
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

    roots = [n for n in links if n not in by_child]
    if len(roots) != 1:
        raise ValueError(f"URDF must have exactly one root link, found {len(roots)}: {roots}"
                         + (" (a kinematic loop?)" if not roots else ""))
    root_link = roots[0]

    # the floating base: the root, or the child of a massless world/footprint root
    base = root_link
    rt = links[root_link]
    if rt.mass == 0.0 and len(children[root_link]) == 1 and children[root_link][0].type in ("floating", "fixed"):
        base = children[root_link][0].child
    if base_link is not None and base_link != base:
        if base_link not in links:
            raise ValueError(f"base_link: unknown link {base_link!r}")
        raise ValueError(f"base_link: {base_link!r} is not the root of the tree ({base!r}); "
                         "re-rooting the tree is not supported in v1")

    # depth-first traversal from the base; fixed joints merge into the current body
    home = {base: np.eye(4)}
    body_names, parent_body, jtype, jnames, jtypes, Y = [base], [-1], [0], [], [], [np.zeros(6)]
    members = [[base]]           # links merged into each body
    link_to_body = {base: 0}
    visited = {base}

    def _push_children(lname, b):
        # reversed, so that the first joint in the file is popped (visited) first
        for j in sorted(children[lname], key=lambda jj: jj.order, reverse=True):
            stack.append((j, b))

    stack = []
    _push_children(base, 0)
    while stack:                       # DFS pre-order: a body is numbered when it is visited
        j, b = stack.pop()
        c = j.child
        if c in visited:
            raise ValueError(f"joint {j.name!r}: link {c!r} reached twice (kinematic loop)")
        visited.add(c)
        home[c] = home[j.parent] @ j.T
        if j.type == "fixed":
            link_to_body[c] = b
            members[b].append(c)
            _push_children(c, b)
            continue
        if j.type in ("floating", "planar"):
            raise ValueError(f"joint {j.name!r}: type {j.type!r} below the floating base is not supported in v1"
                             " (model multi-DoF joints as chains of 1-DoF joints)")
        R = home[c][:3, :3]
        e = R @ j.axis
        p = home[c][:3, 3]
        Y.append(np.concatenate([e, np.cross(p, e)]) if _MOVING[j.type] == REVOLUTE
                 else np.concatenate([np.zeros(3), e]))
        nb = len(body_names)
        body_names.append(c)
        parent_body.append(b)
        jtype.append(_MOVING[j.type])
        jnames.append(j.name)
        jtypes.append(j.type)
        members.append([c])
        link_to_body[c] = nb
        _push_children(c, nb)

    # merge inertias (home, world axes) per body
    N = len(body_names)
    mass, com, inertia = np.zeros(N), np.zeros((N, 3)), np.zeros((N, 3, 3))
    for b, mem in enumerate(members):
        ms, cs, Is = [], [], []
        for ln in mem:
            lk = links[ln]
            if lk.mass == 0.0 and not np.any(lk.I):
                continue
            T = home[ln]
            ms.append(lk.mass)
            cs.append(T[:3, :3] @ lk.com + T[:3, 3])
            Is.append(T[:3, :3] @ lk.I @ T[:3, :3].T)
        m = float(sum(ms))
        if m > 0:
            c = sum(mi * ci for mi, ci in zip(ms, cs)) / m
            Itot = np.zeros((3, 3))
            for mi, ci, Ii in zip(ms, cs, Is):
                d = ci - c
                Itot += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
            mass[b], com[b], inertia[b] = m, c, 0.5 * (Itot + Itot.T)
        elif Is:
            inertia[b] = sum(Is)
        if b > 0 and mass[b] <= 0.0:
            j = by_child[body_names[b]]
            raise ValueError(f"link {body_names[b]!r} (moved by joint {j.name!r}) has zero mass after merging "
                             "its fixed children: a moving body needs a positive mass (missing <inertial>?)")

    model = Model(
        name=root.get("name", ""), joint_names=tuple(jnames), base_link=base,
        link_names=tuple(body_names), joint_types=tuple(jtypes),
        parent=np.array(parent_body, dtype=np.int64), jtype=np.array(jtype, dtype=np.int64),
        Y=np.array(Y, dtype=float).reshape(N, 6), mass=mass, com=com, inertia=inertia,
        link_to_body=link_to_body, link_home={k: v for k, v in home.items()},
    )
    _check_mass_matrix(model)
    return model


def _check_mass_matrix(model: Model) -> None:
    """Reject models whose joint-space inertia is singular at home (forward dynamics impossible)."""
    if model.total_mass <= 0.0:
        raise ValueError("URDF: the robot has zero total mass")
    from .eom import mass_matrix  # local import: eom depends on the kernels, not on the parser
    M = mass_matrix(model, np.eye(4), np.zeros(model.n_joints))
    scale = max(1.0, float(np.max(np.abs(np.diag(M)))))
    ev = np.linalg.eigvalsh(M)
    if ev[0] <= 1e-12 * scale:
        bad = [model.joint_names[i] for i in range(model.n_joints) if M[6 + i, 6 + i] <= 1e-12 * scale]
        hint = f"joints with no inertia about their axis: {bad}" if bad else "check the base inertia"
        raise ValueError(f"URDF: the mass matrix is singular at the home configuration "
                         f"(smallest eigenvalue {ev[0]:.3g}); {hint}. Each moving body needs inertia "
                         "about its joint axis (missing <inertia>?)")
