"""Does the URDF loader give bit for bit the model of a previous loader? (issue 40, deliverable 3:
URDF reading through urdf_parser_py must not move a single bit.)

Every source is loaded by this tree's ``load_urdf`` and by the previous loader in the same process,
and compared:

* every field of the ``Model``: arrays by dtype, shape and bytes (stricter than ``np.array_equal``:
  ``-0.0`` differs from ``0.0``), names, tuples and dicts (keys in order) by equality, floats by
  their bits;
* the warnings, in order (category name and text), and the ``ValueError`` text of a refused file;
* the console: the new path may print nothing the previous loader did not (urdf_parser_py's
  "Unknown tag" lines are swallowed).

The previous loader is ``--old REV``, the ``geodyn_ros/model`` and ``lie.py`` of git revision REV
imported under another package name, or ``--old legacy``, this tree's ElementTree reader
(``geodyn_ros.model.urdf._load(..., reader="etree")``, the path the loader falls back to).

Sources: the shipped ``urdf/*.urdf``, ``urdf/*.xacro`` and ``test/data/*.urdf``; every ``.urdf`` and
``.xacro`` of example-robot-data; generated trees (``bench/make_tree_urdf.py``); each with the
options the loader has (``fixed_base``, ``mimic``, ``locked_joints``, string/bytes/Path sources);
and :data:`FALLBACK_EXAMPLES`, one document per case where urdf_parser_py is not used. With
``--suite TEST_FILE ...`` the named test files also run (pytest, in this process) with every
``load_urdf`` call compared the same way: their inline strings and tmp files.

Usage::

    python bench/core/urdf_bit_identity.py --old be931c0 [--suite test/model/test_urdf_loader.py ...]
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import hashlib
import importlib
import io
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "core"))
sys.path.insert(0, str(REPO / "test"))

from make_tree_urdf import branched_tree_urdf  # noqa: E402

_PAIR = ('<robot name="pair"><link name="a"><inertial><mass value="1"/>'
         '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
         '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.5 0 0" rpy="0 0.3 0"/>'
         '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>'
         '<link name="b"><inertial><origin xyz="0.1 0 0"/><mass value="2"/>'
         '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link></robot>')


def _sub(old, new):
    assert old in _PAIR, old
    return _PAIR.replace(old, new)


#: one document per case that urdf_parser_py refuses or reads with a loss: ``name: (xml, the
#: start of the fallback reason)`` (geodyn_ros.model.urdf_dom's docstring lists them)
FALLBACK_EXAMPLES = {
    "<inertia> with components left out": (_sub('ixy="0" ixz="0" iyy="0.02" iyz="0" ', 'iyy="0.02" '),
                                           "urdf_parser_py refused"),
    "<robot> without name": (_sub('<robot name="pair">', "<robot>"), "urdf_parser_py refused"),
    "<robot version=\"2.0\">": (_sub('<robot name="pair">', '<robot name="pair" version="2.0">'),
                                "urdf_parser_py refused"),
    "<axis/> without xyz (the loader's axis: 1 0 0)": (_sub('<axis xyz="0 0 1"/>', "<axis/>"), "urdf_parser_py refused"),
    "<mass> without value (refused)": (_sub('<mass value="2"/>', "<mass/>"), "urdf_parser_py refused"),
    "bad mimic multiplier (refused)": (_sub('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><mimic joint="j" multiplier="x"/>'),
                                       "urdf_parser_py refused"),
    "unknown joint type 'screw' (refused)": (_sub('type="revolute"', 'type="screw"'), "urdf_parser_py refused"),
    "joint type 'unknown' (refused)": (_sub('type="revolute"', 'type="unknown"'), "joint 'j': empty name or type"),
    "non-finite origin (refused)": (_sub('xyz="0.5 0 0"', 'xyz="0.5 0 nan"'), "joint 'j' origin xyz: not finite"),
    "negative mass (refused)": (_sub('<mass value="2"/>', '<mass value="-2"/>'), "link 'b': negative mass"),
    "mass without <inertia> (refused)": (_sub('<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/>', ""),
                                         "link 'b': a mass but no <inertia>"),
    "empty link name (refused)": (_sub('<link name="b">', '<link name="">'), "a <link> with an empty name"),
    "<mimic> with an empty master (refused)": (_sub('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><mimic joint=""/>'),
                                               "joint 'j': <mimic> without a master"),
    "zero joint axis (refused)": (_sub('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'), "joint 'j': zero joint axis"),
    "<child/> without link (refused)": (_sub('<child link="b"/>', "<child/>"), "joint 'j': <parent>/<child> without"),
    "a link named None": (_PAIR.replace('"b"', '"None"'), "joint 'j': <parent>/<child> without"),
    "a <!DOCTYPE> with an entity": ('<!DOCTYPE robot [<!ENTITY m "2">]>' + _sub('<mass value="2"/>', '<mass value="&m;"/>'),
                                    "the document has a <!DOCTYPE>"),
    "a lone surrogate in a name (refused)": (_sub('name="pair"', 'name="p\ud800"'), "not encodable as UTF-8"),
    "not well-formed XML (refused)": ("<robot", "lxml refused the XML"),
    "root element <model> (refused)": ("<model/>", "the root element is <model>"),
}


#: documents urdf_parser_py reads, where its objects need care to give the ElementTree reader's bits:
#: ``name: xml`` (all read through urdf_parser_py)
URDFDOM_EXAMPLES = {
    "rpy absent (identity kept, no -0.0)": _sub(' rpy="0 0.3 0"', ""),
    "rpy=\"0 0 0\" given": _sub('rpy="0 0.3 0"', 'rpy="0 0 0"'),
    "rpy=\"-0 0 -0\" given": _sub('rpy="0 0.3 0"', 'rpy="-0 0 -0"'),
    "origin with rpy only": _sub('<origin xyz="0.5 0 0" rpy="0 0.3 0"/>', '<origin rpy="0.1 0.2 0.3"/>'),
    "no <axis>": _sub('<axis xyz="0 0 1"/>', ""),
    "unnormalised axis": _sub('<axis xyz="0 0 1"/>', '<axis xyz="0 3 4"/>'),
    "malformed number in <limit> (warns: urdfdom refuses it)": _sub('lower="-1"', 'lower="-1.57."'),
    "nan in <limit> (warns)": _sub('lower="-1"', 'lower="nan"'),
    "<limit> without effort/velocity": _sub(' effort="10" velocity="1"', ""),
    "<safety_controller> without k_velocity": _sub('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><safety_controller '
                                                   'soft_lower_limit="-1"/>'),
    "<texture> without filename, <geometry/> empty": _sub('<link name="b">', '<link name="b"><visual><geometry/>'
                                                          '<material name="m"><texture/></material></visual>'),
    "1_0 in <dynamics> (warns)": _sub('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><dynamics damping="1_0"/>'),
    "mimic without multiplier/offset": _sub('</robot>', '<joint name="k" type="continuous"><parent link="b"/>'
                                            '<child link="c"/><mimic joint="j"/></joint><link name="c"/></robot>'),
    "mimic on a fixed joint (ignored)": _sub('</robot>', '<joint name="k" type="fixed"><parent link="b"/>'
                                             '<child link="c"/><mimic joint="nowhere"/></joint><link name="c"/></robot>'),
    "duplicate link (refused)": _sub('</robot>', '<link name="b"/></robot>'),
    "duplicate joint (refused)": _sub('</robot>', '<joint name="j" type="fixed"><parent link="b"/><child link="c"/>'
                                      '</joint><link name="c"/></robot>'),
    "undefined child link (refused)": _sub('<child link="b"/>', '<child link="nowhere"/>'),
    "two <origin> and two <inertial> (the first counts)": _sub('<origin xyz="0.5 0 0" rpy="0 0.3 0"/>',
                                                               '<origin xyz="0.5 0 0" rpy="0 0.3 0"/><origin xyz="9 9 9"/>')
    .replace('</inertial></link></robot>', '</inertial><inertial><mass value="7"/></inertial></link></robot>'),
    "gazebo, transmission, material, visual, unknown tags": _sub(
        '<link name="b">', '<link name="b"><visual><geometry><mesh/></geometry><material name="m"><texture/></material>'
        '</visual><collision><geometry/></collision><sensor/>').replace(
        '</robot>', '<gazebo reference="b"><mu1>0.2</mu1></gazebo><transmission name="t"><type>x</type></transmission>'
        '<material name="bad"/><ros2_control name="c"/></robot>'),
    "comments and a processing instruction": _sub('<link name="b">', '<!-- c --><?pi x?><link name="b"><!-- d -->'),
    "latin-1 declaration, non-ASCII name": '<?xml version="1.0" encoding="ISO-8859-1"?>' + _sub('"b"', '"b\u00e9"')
    .replace('"b"', '"b\u00e9"'),
    "no <link> (refused)": '<robot name="r"/>',
    "two roots (refused)": _sub('</robot>', '<link name="lonely"/></robot>'),
    "a floating joint below the base (refused)": _sub('<joint name="j" type="revolute">', '<joint name="j" type="floating">'),
}


def erd_dir():
    from reference_models import example_robot_data_dir
    return example_robot_data_dir()


def corpus():
    """``[(label, source, kwargs)]``: every document and option this check loads (module docstring)."""
    cases = []
    shipped = sorted(glob.glob(str(REPO / "urdf" / "*.urdf")) + glob.glob(str(REPO / "urdf" / "*.xacro"))
                     + glob.glob(str(REPO / "test" / "data" / "*.urdf")))
    root = erd_dir()
    erd = sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True)
                 + glob.glob(os.path.join(root, "**", "*.xacro"), recursive=True)) if root else []
    for f in shipped + erd:
        label = os.path.relpath(f, REPO if f in shipped else root)
        for kw in ({}, {"fixed_base": True}, {"mimic": True}):
            cases.append((label + (f" {kw}" if kw else ""), Path(f), kw))
    for K, b in ((1, 5), (4, 5), (20, 5), (3, 2)):
        cases.append((f"make_tree_urdf K={K} branches={b}", branched_tree_urdf(K, b), {}))
    am = REPO / "urdf" / "aerial_manipulator.urdf"
    cases += [("aerial_manipulator.urdf as str", am.read_text(), {}),
              ("aerial_manipulator.urdf as bytes", am.read_bytes(), {}),
              ("aerial_manipulator.urdf as str path", str(am), {}),
              ("aerial_manipulator.urdf with BOM and white space", "\ufeff \n\t" + am.read_text(), {}),
              ("aerial_manipulator.urdf locked J2=0.3, J5", am, {"locked_joints": {"J2": 0.3, "J5": 0.0}}),
              ("aerial_manipulator.urdf base_link", am, {"base_link": "base_link"}),
              ("aerial_manipulator.urdf fixed_base=False", am, {"fixed_base": False})]
    for name, (xml, _) in FALLBACK_EXAMPLES.items():
        cases.append((f"fallback: {name}", xml, {}))
    for name, xml in URDFDOM_EXAMPLES.items():
        cases.append((f"urdfdom: {name}", xml, {}))
    return cases


def import_old(rev: str, tmp: str):
    """The module ``model/urdf.py`` of git revision ``rev`` (with its ``lie.py`` and ``model/``), as
    package ``_geodyn_old``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "geodyn_ros/lie.py", "geodyn_ros/model"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
        tf.extractall(tmp, filter="data")
    pkg = Path(tmp) / "_geodyn_old"
    os.rename(Path(tmp) / "geodyn_ros", pkg)
    (pkg / "__init__.py").write_text("")       # the real one imports every algorithm
    sys.path.insert(0, tmp)
    return importlib.import_module("_geodyn_old.model.urdf")


def _same(x, y) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                and x.shape == y.shape and x.tobytes() == y.tobytes())
    if isinstance(x, float) or isinstance(y, float):
        return type(x) is type(y) and struct.pack("<d", x) == struct.pack("<d", y)
    if isinstance(x, dict):
        return isinstance(y, dict) and list(x) == list(y) and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and x == y


def model_diff(a, b) -> list:
    """Names of the fields of two models (of any tree's ``Model`` class) that are not bit-identical."""
    fa = [f.name for f in dataclasses.fields(a)]
    fb = [f.name for f in dataclasses.fields(b)]
    if fa != fb:
        return [f"fields {fa} != {fb}"]
    return [f for f in fa if not _same(getattr(a, f), getattr(b, f))]


def document_key(source):
    """The document a source names: the digest of its text (a file's, a string's or bytes')."""
    if isinstance(source, (bytes, bytearray)):
        source = bytes(source).decode(errors="surrogatepass")
    if isinstance(source, str) and source.lstrip("\ufeff \t\r\n")[:1] != "<":
        source = Path(source)
    if isinstance(source, Path):
        if not source.is_file():
            return str(source)
        source = source.read_text(errors="surrogatepass")
    if isinstance(source, str):
        return hashlib.sha256(source.lstrip("\ufeff \t\r\n").encode(errors="surrogatepass")).hexdigest()
    return repr(source)


class NewLoader:
    """This tree's loader; after each call, ``how`` says which path read the document: ``"urdfdom"``
    or ``"etree: <reason>"`` (also for a refused document, which ``_load`` cannot return)."""

    def __init__(self):
        from geodyn_ros.model import urdf
        self.urdf, self.how = urdf, None

    def __call__(self, source, **kw):
        urdf, orig = self.urdf, self.urdf.read_urdfdom
        self.how = "urdfdom"

        def spy(*args):
            try:
                return orig(*args)
            except urdf.Fallback as exc:
                self.how = f"etree: {exc}"
                raise
        urdf.read_urdfdom = spy
        try:
            return urdf._load(source, **kw)[0]
        finally:
            urdf.read_urdfdom = orig


def run(load, source, kw):
    """``(model or None, error text or None, [(warning category, text)], console text)`` of
    ``load(source, **kw)``."""
    out, err = io.StringIO(), io.StringIO()
    model = error = None
    with warnings.catch_warnings(record=True) as rec, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        try:
            model = load(source, **kw)
        except ValueError as exc:
            error = f"ValueError: {exc}"
    ws = [(w.category.__name__, str(w.message)) for w in rec]
    return model, error, ws, out.getvalue() + err.getvalue()


def compare(new_load, old_load, source, kw):
    """``(differences, how)``: what differs between the two loaders on one source (empty: bit-identical)
    and which path of the new loader read it."""
    m1, e1, w1, c1 = run(new_load, source, kw)
    how = new_load.how
    m0, e0, w0, c0 = run(old_load, source, kw)
    diff = []
    if e1 != e0:
        diff.append(f"error {e1!r} != {e0!r}")
    if w1 != w0:
        diff.append(f"warnings {w1} != {w0}")
    if c1 != c0:
        diff.append(f"console {c1!r} != {c0!r}")
    if (m1 is None) != (m0 is None):
        diff.append("one loaded, the other did not")
    elif m1 is not None:
        diff += [f"field {f}" for f in model_diff(m1, m0)]
    return diff, how


def loaders(old: str, tmp: str):
    """``(new, old)`` loader callables (``new``: a :class:`NewLoader`)."""
    from geodyn_ros.model import urdf
    if old == "legacy":
        def old_load(source, **kw):
            return urdf._load(source, reader="etree", **kw)[0]
        return NewLoader(), old_load
    return NewLoader(), import_old(old, tmp).load_urdf


class _SuitePlugin:
    """pytest plugin: every ``load_urdf`` call of the tests is also compared (``_load`` patched)."""

    def __init__(self, old_load):
        self.old_load, self.results = old_load, []

    def pytest_sessionstart(self, session):
        from geodyn_ros.model import urdf
        self.module, self.orig, new_load = urdf, urdf._load, NewLoader()

        def spy(source, **kw):
            if kw.get("reader", "urdfdom") == "urdfdom":
                urdf._load = self.orig
                try:
                    diff, how = compare(new_load, self.old_load, source, kw)
                finally:
                    urdf._load = spy
                text = isinstance(source, bytes) or (isinstance(source, str) and source.lstrip("\ufeff \t\r\n")[:1] == "<")
                label = f"<{type(source).__name__} of {len(source)}>" if text else str(source)
                self.results.append((f"suite: {label} {kw}", diff, how, document_key(source)))
            return self.orig(source, **kw)
        urdf._load = spy

    def pytest_sessionfinish(self, session):
        self.module._load = self.orig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="git revision of the previous loader, or 'legacy'")
    p.add_argument("--suite", nargs="*", default=[], help="test files to run with every load compared")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per source")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        new_load, old_load = loaders(a.old, tmp)
        results = [(label,) + compare(new_load, old_load, src, kw) + (document_key(src),)
                   for label, src, kw in corpus()]
        if a.suite:
            import pytest
            plugin = _SuitePlugin(old_load)
            rc = pytest.main(["-q", "-p", "no:xdist", "-p", "no:cacheprovider", *a.suite], plugins=[plugin])
            results += plugin.results
            if rc != 0:
                print(f"the suite failed (pytest exit {rc})")
    n_diff = 0
    for label, diff, how, _ in results:
        n_diff += bool(diff)
        if diff or a.verbose:
            print(f"{label}: " + ("bit-identical" if not diff else "DIFFERS: " + "; ".join(diff)) + f" [{how[:90]}]")
    n_dom = sum(how == "urdfdom" for _, _, how, _ in results)
    n_docs = len({key for _, _, _, key in results})
    print(f"{len(results) - n_diff} of {len(results)} loads ({n_docs} distinct documents) bit-identical against {a.old} "
          f"({n_dom} read through urdf_parser_py, {len(results) - n_dom} by the ElementTree reader)")
    return 1 if n_diff else 0


if __name__ == "__main__":
    sys.exit(main())
