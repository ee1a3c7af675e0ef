"""URDF (and xacro) to :class:`~geodyn_ros.model.Model`: spatial screws and inertias.

The parser knows nothing about the algorithms. It

1. reads the XML (file path, ``.xacro`` file expanded with the ``xacro`` package, or
   an XML string) into link and joint records through ``urdf_parser_py`` (PyPI
   ``urdfdom-py``, :mod:`geodyn_ros.model.urdf_dom`), after taking out the elements the
   dynamics ignores (visual, collision, limit, dynamics, safety_controller, calibration,
   gazebo, transmission, material); ``urdf_parser_py``'s console messages are swallowed.
   Where ``urdf_parser_py`` refuses a document this loader accepts, or would lose something
   of it, the package's own ElementTree reader (:mod:`geodyn_ros.model.urdf_etree`, the
   loader before issue 40) reads it, with the same result bit for bit. The cases, each with
   its example (``FALLBACK_EXAMPLES`` in ``bench/core/urdf_bit_identity.py``, checked by
   ``test/model/test_urdf_bit_identity.py``):

   * what ``urdf_parser_py`` requires and this loader defaults: ``<inertia ixx="0.01"
     iyy="0.02" izz="0.02"/>`` (the components left out are 0), ``<robot>`` without
     ``name`` (name ``""``), ``<axis/>`` without ``xyz`` (axis ``1 0 0``);
   * ``<robot name="r" version="2.0">`` (``urdf_parser_py`` knows only 1.0);
   * ``<parent/>``/``<child/>`` without ``link`` (``urdf_parser_py`` reads ``"None"``), so a
     link really named ``None`` too;
   * a ``<!DOCTYPE>`` (``<!ENTITY m "2">`` ... ``value="&m;"``), text that lxml refuses, a lone
     surrogate (``name="p\ud800"``);
   * every document this loader refuses at reading, for its own message: a bad or non-finite
     number (``multiplier="x"``, ``xyz="0.5 0 nan"``), a negative mass, a mass without
     ``<inertia>``, an empty name, an unknown joint type (``screw``, or ``unknown``, which
     ``urdf_parser_py`` lists), a zero axis, ``<mass/>`` without ``value``, a ``<mimic>``
     without master, invalid XML, a root other than ``<robot>``.

   A malformed number in an ignored joint tag (``<limit lower="-1.57."/>``, which
   ``urdf_parser_py`` and urdfdom refuse) needs no fallback: the tag is taken out before
   ``urdf_parser_py`` reads, and the loader warns from its text. White space or a byte-order
   mark before the XML declaration is removed before either reader sees the text.
2. finds the base: the URDF root link, or - when the root is massless and joined by a
   single ``floating``/``fixed`` joint to one child (``world``, ``base_footprint``
   patterns) - that child. A massless root named ``world`` joined by moving joints (the
   arm convention) makes a fixed-base model; ``fixed_base=True`` welds any root;
3. merges every ``fixed`` joint into its parent body (combined spatial inertia) and checks
   each body's merged inertia (positive semi-definite, triangle inequality) to a relative
   tolerance;
4. orders the bodies depth first (children in the order their joints appear in the
   file) and builds, at home (base pose identity, all joints zero), the spatial screws
   ``Y_j = (e, p x e)`` (revolute/continuous) or ``(0, e)`` (prismatic) in world axes
   (paper eq. (3), Appendix D), and each body's mass, centre of mass and rotational
   inertia in world axes.

``<mimic>`` joints load as independent joints (with a warning; Pinocchio's default) or,
with ``mimic=True``, as enforced couplings (see :mod:`geodyn_ros.algorithms.constrained`). Visual,
collision, limit, dynamics (damping/friction), transmission and gazebo tags are ignored.
What is not supported raises ``ValueError`` with the offending element; what is accepted
but suspicious warns with a :class:`URDFWarning` naming the link or joint.
"""
from __future__ import annotations

import difflib
import os
import warnings
from pathlib import Path

import numpy as np

from .magnitudes import check_magnitudes
from .model import REVOLUTE, Model
from .singularity import massless_subtree_joints, structural_null_motion
from .urdf_dom import Fallback, read_urdfdom
from .urdf_etree import _MOVING, URDFWarning, _warn, lock_joints_xml, read_etree

__all__ = ["load_urdf", "URDFWarning", "SingularMassMatrixWarning", "INERTIA_RTOL", "lock_joints_xml",
           "massless_subtree_joints"]


class SingularMassMatrixWarning(URDFWarning):
    """The model's mass matrix is singular at every configuration, so its forward dynamics is
    undefined (the message is ``model.singular``, after the source)."""

#: A merged body's rotational inertia may violate positive semi-definiteness or the triangle
#: inequality by at most this fraction of its largest principal moment (rounding of the numbers
#: in the file, e.g. tiago's antenna: -3.5e-8 kg m^2 merged into a 1e-1 kg m^2 base). Larger
#: violations are physically impossible and refused with the eigenvalues.
INERTIA_RTOL = 1e-6


def _read_source(source) -> tuple[str, str]:
    """Return (xml text, description for messages)."""
    if isinstance(source, (bytes, bytearray)):
        source = source.decode()
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip("\ufeff \t\r\n").startswith("<")):
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
            text = f.read()
        if not text.strip():
            raise ValueError(f"source: {path!r} is empty (expected a URDF <robot> document)")
        return text, path
    if isinstance(source, str):
        return source, "<URDF string>"
    raise ValueError(f"source: expected a path or a URDF XML string, got {type(source).__name__}")


def load_urdf(source, *, base_link=None, fixed_base=None, mimic=False, locked_joints=None) -> Model:
    """Build a :class:`Model` from a URDF.

    Parameters
    ----------
    source : str or os.PathLike
        Path to a ``.urdf`` (or ``.xacro``, expanded with the ``xacro`` package, with
        ``$(find pkg)`` resolved through the ament index) file, or the URDF XML string
        itself (the ROS ``robot_description`` convention).
    base_link : str, optional
        Name of the base. ``None`` selects the URDF root link (or, for a floating base, the
        child of a massless root attached by one ``floating``/``fixed`` joint). Naming any
        other link (re-rooting the tree) raises ``ValueError``.
    fixed_base : bool or None
        ``None`` (default): floating base, except for a massless root named ``world`` joined
        to the robot by moving joints (the fixed-base arm convention), which is welded.
        ``True``: the URDF root is welded to the world (Pinocchio's default model): the
        dynamics functions take ``base_twist=None`` (zero motion at every order) and return
        the weld's reaction as the base wrench. ``False``: always a floating base.
    mimic : bool
        ``False`` (default, as Pinocchio's default): a ``<mimic>`` joint is an independent
        joint; one warning is issued and the relation is recorded in ``model.mimic``.
        ``True``: ``q_mimic = multiplier * q_master + offset`` is enforced at every derivative
        order by inverse, forward and hybrid dynamics (:mod:`geodyn_ros.algorithms.constrained`).
    locked_joints : iterable of str, or mapping {str: float}, optional
        Joints to lock, as Pinocchio's ``buildReducedModel``: each named revolute, continuous or
        prismatic joint becomes a ``fixed`` joint at the given position (0 for a plain list of
        names; rad or m), so its child merges into the parent body and the joint disappears from
        ``model.joint_names``. Typical use: the continuous rotor joints of a Gazebo multirotor
        URDF, which the rigid-body model treats as rigid. Unknown names, non-moving joints and a
        joint mimicking a locked one (unless it is locked too) raise ``ValueError``.

    Returns
    -------
    Model
        The tree with the base free on SE(3) (or welded), fixed joints merged, joints in
        depth-first order (``model.joint_names``).

    Notes
    -----
    Inertias are checked per body after fixed-joint merging: a violation of positive
    semi-definiteness or of the triangle inequality up to ``INERTIA_RTOL`` of the body's
    largest principal moment is accepted with a :class:`URDFWarning` naming the link; a larger
    one raises ``ValueError`` with the eigenvalues. Masses and inertias beyond any body of the
    robot's size are refused, implausible ones (placeholders) load with a warning naming the link
    and the values (:mod:`geodyn_ros.model.magnitudes`). Massless links are accepted; a model whose
    mass matrix is singular at every configuration (a joint whose whole subtree has no inertia, a
    robot of zero total mass, a massless floating base that a joint moves against: PyBullet's
    cart-pole) loads with one :class:`SingularMassMatrixWarning` saying why, recorded in
    ``model.singular``, and its forward dynamics refuses with that reason
    (:mod:`geodyn_ros.model.singularity`). A mass matrix that is singular at some configuration
    only is detected by forward/hybrid dynamics at that state.
    """
    return _load(source, base_link=base_link, fixed_base=fixed_base, mimic=mimic, locked_joints=locked_joints)[0]


def _read(text, desc, locked_joints, reader):
    """``(robot name, links, joints, by_child, children), how``: the document read through
    ``urdf_parser_py`` (``how == "urdfdom"``), or by the ElementTree reader when ``urdf_parser_py``
    refuses or loses something (``how == "etree: <reason>"``, :mod:`geodyn_ros.model.urdf_dom`) or
    when ``reader == "etree"`` (the previous loader's path, for the bit-identity check)."""
    if reader == "urdfdom":
        try:
            return read_urdfdom(text, desc, locked_joints), "urdfdom"
        except Fallback as exc:
            reason = str(exc)
        # outside the except clause: a refusal's traceback does not show the Fallback
        return read_etree(text, desc, locked_joints), f"etree: {reason}"
    if reader == "etree":
        return read_etree(text, desc, locked_joints), "etree"
    raise ValueError(f"reader: expected 'urdfdom' or 'etree', got {reader!r}")


def _load(source, *, base_link=None, fixed_base=None, mimic=False, locked_joints=None, reader="urdfdom"):
    """``(model, how)``: :func:`load_urdf` and the path that read the document (:func:`_read`)."""
    if fixed_base not in (None, True, False):
        raise ValueError(f"fixed_base: expected None, True or False, got {fixed_base!r}")
    if mimic not in (True, False):
        raise ValueError(f"mimic: expected True or False, got {mimic!r}")
    text, desc = _read_source(source)
    # white space (or a byte-order mark) before the XML declaration is accepted, as by
    # Pinocchio's and ROS's parsers
    text = text.lstrip("\ufeff \t\r\n")
    (robot_name, links, joints, by_child, children), how = _read(text, desc, locked_joints, reader)

    roots = [n for n in links if n not in by_child]
    if len(roots) != 1:
        raise ValueError(f"URDF must have exactly one root link, found {len(roots)}: {roots}"
                         + (" (a kinematic loop?)" if not roots else ""))
    root_link = roots[0]

    # the base: the root, or the child of a massless world/footprint root
    base = root_link
    rt = links[root_link]
    massless_root = rt.mass == 0.0 and not np.any(rt.I)
    single_passive = len(children[root_link]) == 1 and children[root_link][0].type in ("floating", "fixed")
    if fixed_base is None:
        fixed_base = (massless_root and root_link.lower() == "world" and not single_passive
                      and len(children[root_link]) > 0)
    if not fixed_base and massless_root and single_passive:
        base = children[root_link][0].child
    if fixed_base and any(j.type == "floating" for j in children[root_link]):
        raise ValueError(f"fixed_base: the root {root_link!r} is joined by a 'floating' joint; "
                         "load with fixed_base=False for a floating base")
    if base_link is not None and base_link != base:
        if base_link not in links:
            raise ValueError(unknown_link_error("base_link", base_link, desc, list(links)))
        raise ValueError(f"base_link: {base_link!r} is not the root of the tree ({base!r}); "
                         "re-rooting the tree is not supported")

    # depth-first traversal from the base; fixed joints merge into the current body
    home = {base: np.eye(4)}
    if base != root_link:   # the massless root above a floating base: its home pose too
        home[root_link] = np.linalg.inv(children[root_link][0].T)
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
            inertia[b] = 0.5 * (sum(Is) + sum(Is).T)
    # rounding in the file is judged against the body's own scale and, for bodies whose moments
    # are all rounding noise (icub's r_hip_2: -5e-20 kg m^2), against the robot's largest moment
    robot_scale = max([float(np.max(np.abs(np.linalg.eigvalsh(lk.I)))) for lk in links.values()] + [0.0])
    for b, mem in enumerate(members):
        _check_inertia(body_names[b], mem, links, inertia[b], robot_scale)

    mimic_map = _mimic_relations(joints, jnames, mimic)
    model = Model(
        name=robot_name, joint_names=tuple(jnames), base_link=base,
        link_names=tuple(body_names), joint_types=tuple(jtypes),
        parent=np.array(parent_body, dtype=np.int64), jtype=np.array(jtype, dtype=np.int64),
        Y=np.array(Y, dtype=float).reshape(N, 6), mass=mass, com=com, inertia=inertia,
        link_to_body=link_to_body, link_home={k: v for k, v in home.items()},
        fixed_base=bool(fixed_base), mimic=mimic_map, mimic_enforced=bool(mimic and mimic_map),
    )
    for line in check_magnitudes(model, desc, dict(zip(body_names, members))):
        _warn(line, stacklevel=4)    # stacklevel 4: the caller of load_urdf
    why = _singular_reason(model, members, links)
    if why:
        object.__setattr__(model, "singular", why)
        warnings.warn(f"{desc}: forward dynamics is undefined: {why}", SingularMassMatrixWarning, stacklevel=3)
    return model, how


def unknown_link_error(key, name, desc, names) -> str:
    """The one line refusing ``name``, not a link of the URDF ``desc`` whose links are ``names``:
    ``"<key>: no link 'base' in <desc>; did you mean 'base_link'? (its links: ...)"``."""
    near = difflib.get_close_matches(str(name), [str(n) for n in names], n=1, cutoff=0.5)
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} links)" if len(names) > 20 else "")
    fix = f"did you mean {near[0]!r}?" if near else "give one of them"
    return f"{key}: no link {str(name)[:100]!r} in {desc}; {fix} (its links: {shown})"


def name_list(names, k=4) -> str:
    """``'a', 'b', 'c', 'd' and 5 more``: at most ``k`` quoted names."""
    names = [str(n)[:100] for n in names]
    head = ", ".join(map(repr, names[:k]))
    return head + (f" and {len(names) - k} more" if len(names) > k else "")


def _singular_reason(model, members, links) -> str:
    """``""``, or the one line ``model.singular``: why the mass matrix is singular at every
    configuration, and what to change (:mod:`geodyn_ros.model.singularity`)."""
    if model.mimic_enforced and model.mimic and not structural_null_motion(model):
        return ""     # the enforced relations can give a massless mimic joint its master's inertia
    empty = massless_subtree_joints(model)
    if empty:
        bodies = [model.joint_names.index(j) + 1 for j in empty]
        top = [b for b in bodies if model.parent[b] not in bodies]
        lk = [ln for b in bodies for ln in members[b]]
        none = [ln for ln in lk if not links[ln].has_inertial]
        what = ("no <inertial>" if len(none) == len(lk) else "no <inertial> or a zero one" if none
                else "zero <mass> and <inertia>")
        joints = name_list([model.joint_names[b - 1] for b in top])
        return (f"{'link' if len(lk) == 1 else 'links'} {name_list(lk)}: {what}, so "
                f"{'joint' if len(top) == 1 else 'joints'} {joints} move{'s' if len(top) == 1 else ''} no mass and "
                "no inertia and the mass matrix is singular at every configuration; "
                f"give {'it' if len(lk) == 1 else 'them'} an <inertial> (mass and inertia), or make "
                f"{'the joint' if len(top) == 1 else 'the joints'} fixed")
    if model.total_mass <= 0.0 and not model.fixed_base:
        return ("the robot has zero total mass (inverse dynamics is zero), so the mass matrix is singular at every "
                "configuration; give the links a <mass> (PyBullet's mass 0 marks a static body), or load with "
                "fixed_base=True")
    motion = structural_null_motion(model)
    if not motion:
        return ""
    hint = (f" (the floating base {model.base_link!r} has no mass)"
            if "the base's" in motion and model.mass[0] <= 0.0 else "")
    return (f"{motion}{hint}, so the mass matrix is singular at every configuration; give the links that move a "
            "mass and inertia, make a joint fixed" + ("" if model.fixed_base else ", or load with fixed_base=True"))


def _violations(I):
    """(principal moments, negative-moment violation, triangle-inequality violation) of a
    symmetric 3x3 rotational inertia, in kg m^2."""
    ev = np.linalg.eigvalsh(I)
    return ev, max(0.0, -ev[0]), max(0.0, ev[2] - ev[0] - ev[1])


def _check_inertia(body, members, links, I, robot_scale):
    """Check a body's merged rotational inertia (about its CoM).

    * A negative principal moment beyond ``INERTIA_RTOL`` of the body's largest moment (and beyond
      ``1e-12`` of the robot's largest, for bodies whose moments are all rounding noise) is
      physically impossible (negative kinetic energy; the mass matrix may become indefinite):
      ``ValueError`` with the principal moments.
    * A member link whose own tensor has a negative moment that the merged body absorbs (tiago's
      antenna) is accepted with a warning naming the link.
    * A triangle-inequality violation (I1 + I2 < I3: no mass distribution has these moments, but
      the mass matrix stays positive definite) beyond the same tolerance is accepted with a
      warning, as Pinocchio does (MuJoCo refuses it unless ``balanceinertia`` is set).
    """
    ev, neg, tri = _violations(I)
    tol = max(INERTIA_RTOL * float(np.max(np.abs(ev))), 1e-12 * robot_scale)
    if neg > tol:
        bad = [ln for ln in members if links[ln].has_inertial and _violations(links[ln].I)[1] > 0.0]
        name = bad[0] if bad else body
        raise ValueError(f"link {name!r}: inertia tensor is not positive semi-definite (principal moments {ev} "
                         f"kg m^2, beyond {INERTIA_RTOL:g} relative"
                         + (f" after merging into body {body!r}" if name != body else "") + ")")
    for ln in members:
        lk = links[ln]
        if lk.has_inertial:
            lev, lneg, _ = _violations(lk.I)
            if lneg > max(1e-12 * float(np.max(np.abs(lev))), 1e-12 * robot_scale):
                _warn(f"link {ln!r}: inertia principal moments {lev} kg m^2 include a negative one; accepted "
                      f"as rounding (body {body!r} after merging: {ev})")
    if tri > tol:
        _warn(f"link {body!r}: principal moments {ev} kg m^2 violate the triangle inequality I1 + I2 >= I3 "
              "(no mass distribution has them); loaded as given")


def _mimic_relations(joints, jnames, enforce):
    """``{mimic joint: (master, multiplier, offset)}`` for the moving joints of the model, with
    chains (a mimic of a mimic) resolved to the independent master; warns once when the mimic
    joints are loaded as independent joints."""
    raw = {j.name: j.mimic for j in joints.values() if j.mimic is not None and j.name in jnames}
    if not raw:
        return {}
    moving = set(jnames)
    out = {}
    for name in raw:
        master, mult, off = raw[name]
        seen = {name}
        while master in raw:
            if master in seen:
                raise ValueError(f"joint {name!r}: <mimic> relations form a cycle through {master!r}")
            seen.add(master)
            m2, a2, o2 = raw[master]
            master, mult, off = m2, mult * a2, mult * o2 + off
        if master not in moving:
            what = "is not a joint of the robot" if master not in joints else "is not a moving joint"
            if enforce:
                raise ValueError(f"joint {name!r}: <mimic joint={master!r}> {what}")
            _warn(f"joint {name!r}: <mimic joint={master!r}> {what}; the relation is ignored")
            continue
        out[name] = (master, float(mult), float(off))
    if out and not enforce:
        _warn(f"{len(out)} <mimic> joint(s) loaded as independent joints ({', '.join(sorted(out))}); "
              "the relations are in model.mimic; load_urdf(..., mimic=True) enforces them")
    return out
