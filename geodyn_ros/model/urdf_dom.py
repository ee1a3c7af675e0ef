"""URDF XML to the loader's link and joint records through ``urdf_parser_py`` (PyPI ``urdfdom-py``).

:func:`read_urdfdom` parses the text with lxml, takes out the elements the dynamics ignores
(``<visual>``, ``<collision>`` of every link; ``<limit>``, ``<dynamics>``, ``<safety_controller>``,
``<calibration>`` of every joint; ``<gazebo>``, ``<transmission>``, ``<material>`` of the robot),
lets ``urdf_parser_py``'s ``Robot`` read the rest (links: name, ``<inertial>`` origin, mass and
inertia; joints: name, type, origin, axis, parent, child, mimic), and turns its ``Link``/``Joint``
objects into the records of :mod:`geodyn_ros.model.urdf_etree`: the same numbers, bit for bit, as
the package's ElementTree reader. Taking the ignored elements out halves the reading time
(``urdf_parser_py``'s reflection costs about 25 us per element; tiago_dual: 26 ms with them, 16
without; ``bench/core/bench_urdf_load.py``) and spares the loader ``urdf_parser_py``'s refusals of whole
files for defects the dynamics never reads (icub's ``<texture>`` without ``filename``, pr2's
``<transmission>``, ``<limit lower="-1" upper="1"/>`` without ``effort``). A malformed number in
an ignored joint tag (``<limit lower="-1.57."/>``) is still warned about, from the text of the
taken-out element, because urdfdom (robot_state_publisher) refuses such a file.
``urdf_parser_py`` prints "Unknown tag"/"Unknown attribute" for every element it has no class for
(gazebo plugins, ``ros2_control``, ...): that output is swallowed, the user sees only the loader's
:class:`~geodyn_ros.model.urdf_etree.URDFWarning`.

Where ``urdf_parser_py`` refuses a document the loader accepts, or reads it with a loss, this
reader raises :class:`Fallback` (with the reason) before it has warned about anything, and the
loader reads the document with the ElementTree reader instead (which also writes the loader's
message for every document the loader refuses):

* an attribute ``urdf_parser_py`` requires and the loader defaults: ``<inertia>`` without some of
  its six components (the loader reads them as 0), ``<robot>`` without ``name`` (the model's name
  is ``""``), ``<axis/>`` without ``xyz`` (the loader's axis is ``1 0 0``, as without ``<axis>``);
* ``<robot version="2.0">`` (``urdf_parser_py`` knows only version 1.0);
* ``<parent/>`` or ``<child/>`` without ``link`` (``urdf_parser_py`` reads the link name as the
  string ``"None"``; a link really named ``None`` takes this path too);
* a document with a ``<!DOCTYPE`` (ElementTree and libxml2 treat entity declarations
  differently), text that lxml refuses (its limits; the loader's message for invalid XML is
  ElementTree's), text that is not UTF-8 encodable (a lone surrogate, which the loader refuses);
* every document the loader refuses at reading, for the loader's own message: what
  ``urdf_parser_py`` refuses too (a bad number, ``<mass/>`` without ``value``, an unknown joint type such as ``screw``, a ``<mimic>`` without ``joint``) and what it
  reads without complaint (a non-finite number, ``xyz="1 0 nan"``; a negative mass; a mass
  without ``<inertia>``; an empty name; the joint type ``unknown``, which ``urdf_parser_py``
  lists; a zero joint axis; a root element other than ``<robot>``).

``Fallback`` carries the reason, which :func:`geodyn_ros.model.urdf._load` reports (the tests
check which path each case takes). ``urdf_parser_py``'s error hook is a module global: it is
replaced while a document is read, under a lock, so another thread reading with
``urdf_parser_py`` at that moment would have its console messages swallowed too.
"""
from __future__ import annotations

import math
import threading

import numpy as np
import urdf_parser_py.xml_reflection as _xmlr
import urdf_parser_py.xml_reflection.core as _core
from lxml import etree
from urdf_parser_py import urdf as _urdf

from .urdf_etree import _IGNORED_NUMERIC, _INERTIA_KEYS, _KNOWN, _MOVING, _Joint, _Link, _transform, index_tree, \
    inertia_matrix, lock_joints, locked_map


class Fallback(Exception):
    """``urdf_parser_py`` refuses the document or would lose something of it: read it with the
    ElementTree reader (``str(exc)``: the reason)."""


_LOCK = threading.Lock()
_LINK_IGNORED = frozenset(("visual", "collision"))
_JOINT_IGNORED = frozenset(_IGNORED_NUMERIC)          # limit, dynamics, safety_controller, calibration
_ROBOT_IGNORED = frozenset(("gazebo", "transmission", "material"))
#: urdf_parser_py's default ``xyz``/``rpy`` of an ``<origin>`` without them: one shared list object
#: each, so an absent attribute is told from an explicit ``"0 0 0"`` by identity
_XYZ_ABSENT = _urdf.Pose.XML_REFL.attribute_map["xyz"].default
_RPY_ABSENT = _urdf.Pose.XML_REFL.attribute_map["rpy"].default


def _ignore(message):
    """urdf_parser_py's console messages ("Unknown tag ...") while the loader reads."""


def _finite(values, what):
    """``values`` (a sequence of floats), or :class:`Fallback` if one is not finite (math, not numpy:
    a numpy call per attribute cost 6 ms of tiago_dual's 55)."""
    for v in values:
        if not math.isfinite(v):
            raise Fallback(f"{what}: not finite (the loader's message)")
    return values


def _pose(origin, what):
    """4x4 transform of a ``urdf_parser_py`` ``Pose`` (``None``: identity), as the ElementTree reader builds it."""
    if origin is None:
        return np.eye(4)
    xyz = None if origin.xyz is _XYZ_ABSENT else _finite(origin.xyz, f"{what} origin xyz")
    rpy = None if origin.rpy is _RPY_ABSENT else _finite(origin.rpy, f"{what} origin rpy")
    return _transform(xyz, rpy)


def _link(lk) -> _Link:
    name = lk.name
    if not name:
        raise Fallback("a <link> with an empty name (the loader's message)")
    ine = lk.inertial
    if ine is None:
        return _Link(name)
    what = f"link {name!r}"
    mass = _finite((ine.mass,), f"{what} mass")[0]
    if mass < 0:
        raise Fallback(f"{what}: negative mass (the loader's message)")
    T = _pose(ine.origin, f"{what} inertial")
    if ine.inertia is None:
        if mass > 0:
            raise Fallback(f"{what}: a mass but no <inertia> (the loader's message)")
        Iin = np.zeros((3, 3))
    else:
        v = {k: getattr(ine.inertia, k) for k in _INERTIA_KEYS}
        _finite(v.values(), f"{what} inertia")
        Iin = inertia_matrix(v)
    return _Link(name, mass, T, Iin)


def _joint(jo, order) -> _Joint:
    name, jtype = jo.name, jo.type
    what = f"joint {name!r}"
    if not name or jtype not in _KNOWN:
        raise Fallback(f"{what}: empty name or type {jtype!r} (the loader's message)")
    mimic = None
    if jo.mimic is not None and jtype in _MOVING:
        master = jo.mimic.joint
        if not master:
            raise Fallback(f"{what}: <mimic> without a master (the loader's message)")
        mult = 1.0 if jo.mimic.multiplier is None else jo.mimic.multiplier
        off = 0.0 if jo.mimic.offset is None else jo.mimic.offset
        _finite((mult, off), f"{what} mimic")
        mimic = (master, mult, off)
    if not jo.parent or not jo.child or "None" in (jo.parent, jo.child):
        raise Fallback(f"{what}: <parent>/<child> without link (urdf_parser_py reads 'None')")
    T = _pose(jo.origin, what)
    axis = np.array([1.0, 0.0, 0.0]) if jo.axis is None else np.array(_finite(jo.axis, f"{what} axis"))
    if jtype in _MOVING:
        nrm = np.linalg.norm(axis)
        if nrm < 1e-12:
            raise Fallback(f"{what}: zero joint axis (the loader's message)")
        axis = axis / nrm
    return _Joint(name, jtype, jo.parent, jo.child, T, axis, order, mimic)


def _parse(text):
    """The ``<robot>`` element of ``text`` parsed by lxml, comments and processing instructions dropped."""
    if "<!DOCTYPE" in text:
        raise Fallback("the document has a <!DOCTYPE>")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Fallback(f"not encodable as UTF-8: {exc}") from None
    # the declared encoding is overridden: the text is already decoded (ElementTree does the same with str)
    parser = etree.XMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise Fallback(f"lxml refused the XML: {exc}") from None
    if root.tag != "robot":
        raise Fallback(f"the root element is <{root.tag}>")
    return root


def _prune(root) -> list:
    """Remove, in place, the elements the dynamics never reads (module docstring); return, for each
    ``<joint>`` in file order, a stand-in ``<joint>`` element holding its removed children (for the
    malformed-number check of :func:`~geodyn_ros.model.urdf_etree.index_tree`)."""
    held = []
    for el in list(root):
        tag = el.tag
        if tag == "link":
            for sub in list(el):
                if sub.tag in _LINK_IGNORED:
                    el.remove(sub)
        elif tag == "joint":
            holder = etree.Element("joint")
            for sub in list(el):
                if sub.tag in _JOINT_IGNORED:
                    holder.append(sub)          # moved: urdf_parser_py does not see it
            held.append(holder)
        elif tag in _ROBOT_IGNORED:
            root.remove(el)
    return held


def read_urdfdom(text, desc, locked_joints):
    """``(robot name, links, joints, by_child, children)`` of URDF ``text`` (no white space before
    the XML declaration) read through ``urdf_parser_py``, the joints in ``locked_joints`` locked
    first; raises :class:`Fallback` for the cases of the module docstring, ``ValueError`` (the
    loader's message) for a bad ``locked_joints`` and for the tree errors of
    :func:`~geodyn_ros.model.urdf_etree.index_tree`."""
    root = _parse(text)
    locked = locked_map(locked_joints)
    if locked:
        lock_joints(root, locked)
    held = _prune(root)
    with _LOCK:
        saved = _core.on_error, _xmlr.on_error
        _core.on_error = _xmlr.on_error = _ignore
        try:
            robot = _urdf.Robot.from_xml(root, _core.Path("robot"))
        except Exception as exc:            # urdf_parser_py raises ParseError, ValueError, AssertionError, ...
            raise Fallback("urdf_parser_py refused it: " + " ".join(str(exc).split())) from None
        finally:
            _core.on_error, _xmlr.on_error = saved
    links = [_link(lk) for lk in robot.links]
    if len(held) != len(robot.joints):     # urdf_parser_py reads every <joint> child: never seen
        raise Fallback(f"urdf_parser_py read {len(robot.joints)} of {len(held)} joints")
    joints = [(_joint(jo, k), ignored) for k, (jo, ignored) in enumerate(zip(robot.joints, held))]
    return (robot.name,) + index_tree(links, joints, desc)
