"""The documentation is checked like code.

* Every ```python block in ``doc/`` and in the README runs, page by page in one namespace per page, in the order
  written (a block preceded by ``<!-- not executed: <reason> -->`` is skipped, and the reason is
  required), so no example drifts from the API.
* The parameter reference (``doc/reference/parameters.md``, generated at build time by
  ``doc/gen_parameters.py``) covers every node executable of ``setup.py`` and lists exactly the
  names and defaults of each node's ``PARAMETERS``, the table the node declares from.
* The README is at most 250 lines, and every relative link in it resolves in the repository.
* ``make docs`` (``sphinx-build -W``) itself runs in ``.ci/run``.
"""
from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "doc"
BLOCK = re.compile(r"(<!-- not executed: (?P<why>[^>]*?) -->[ \t]*\n[ \t]*)?```python\n(?P<code>.*?)```", re.S)
PAGES = sorted(p for p in DOC.rglob("*.md") if "```python" in p.read_text()) + [ROOT / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_doc_examples_run(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    ns = {"__name__": "__doc_example__"}
    ran = 0
    for m in BLOCK.finditer(page.read_text()):
        if m.group(1):
            assert m.group("why").strip(), f"{page}: a skipped block needs a reason"
            continue
        exec(compile(textwrap.dedent(m.group("code")), f"{page.relative_to(ROOT)}", "exec"), ns)
        ran += 1
    assert ran or "not executed" in page.read_text()


def test_parameter_reference_matches_the_nodes():
    sys.path.insert(0, str(DOC))
    try:
        from gen_parameters import NODES, render
    finally:
        sys.path.remove(str(DOC))
    import importlib
    setup = (ROOT / "setup.py").read_text()
    from geodyn_ros.ros.common.interfaces import EXECUTABLES
    tools = {e.name for e in EXECUTABLES if not e.is_node}
    scripts = set(re.findall(r'"(geodyn_\w+) = geodyn_ros_entry:', setup)) - tools
    assert scripts == set(NODES), "every node executable has a parameter table in the docs"
    text = render()
    for exe, mod in NODES.items():
        section = text.split(f"## `{exe}`")[1].split("\n## ")[0]
        names = re.findall(r"^\| `(\w+)` \|", section, re.M)
        assert names == list(importlib.import_module(mod).PARAMETERS), exe


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "../shared" not in text and "shared/" not in text
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links, "the README links into the docs"
    for link in links:
        if "://" in link:
            continue
        assert (ROOT / link).exists(), f"README link {link} does not resolve"


# ----------------------------------------------------------------------------- checks of issue 31
def _doc_pages():
    return sorted(DOC.rglob("*.md")) + [ROOT / "README.md"]


def _declared_topics() -> set[str]:
    from geodyn_ros.ros.common import interfaces
    return {t.lstrip("/") for t in interfaces.all_topic_names()}


def _topic_known(token: str, known: set[str]) -> bool:
    t = token.lstrip("/")
    for k in known:
        pattern = re.escape(k).replace(re.escape("<joint>"), r"(<joint>|[A-Za-z0-9_]+)")
        # a namespaced use (/robot1/feedforward/jet) or a remapped private name is the same topic
        if re.fullmatch(rf"([A-Za-z0-9_]+/)*{pattern}", t) or re.fullmatch(pattern.replace("~/", r"[A-Za-z0-9_]+/"), t):
            return True
    return False


def test_topic_names_in_the_docs_exist():
    """Every backticked name in the docs that looks like one of the nodes' topics (same first
    segment, e.g. ``feedforward/...``, ``cmd/...``, ``desired/...``) is a topic of
    :mod:`geodyn_ros.ros.common.interfaces`, which test_interfaces.py checks against the running nodes.
    (It caught ``feedforward/efforts`` in the node tutorial: the topic is
    ``feedforward/joint_efforts``.)"""
    known = _declared_topics()
    from geodyn_ros.ros.common import interfaces
    # first segments of our topics; a node's name (geodyn_node/linearization) is not one
    roots = {k.split("/")[0] for k in known if "/" in k and not k.startswith("~")} - {
        e.name for e in interfaces.EXECUTABLES}
    bad = []
    for page in _doc_pages():
        for token in re.findall(r"`(/?[A-Za-z0-9_~]+(?:/[A-Za-z0-9_<>~]+)+)`", page.read_text()):
            segments = token.lstrip("/").split("/")
            if not (set(segments) & roots) or "." in token:
                continue   # not a topic of ours (file paths, message types, other packages' topics)
            if segments[0] not in roots and not any(s in roots for s in segments[1:2]):
                continue
            if not _topic_known(token, known):
                bad.append(f"{page.relative_to(ROOT)}: `{token}`")
    assert not bad, "topic names that no node has:\n" + "\n".join(bad)


def test_node_count_comes_from_the_code():
    """The node list of the reference is generated from geodyn_ros.ros.common.interfaces (it said "Four
    nodes" and listed six), and no other page spells a count of nodes."""
    sys.path.insert(0, str(DOC))
    try:
        from gen_parameters import render_node_table
    finally:
        sys.path.remove(str(DOC))
    from geodyn_ros.ros.common import interfaces
    table = render_node_table()
    assert table.count("\n| `geodyn_") == len(interfaces.EXECUTABLES)
    assert "```{include} _node_table.md" in (DOC / "reference" / "nodes.md").read_text()
    words = r"(?:two|three|four|five|six|seven|eight|nine|ten)"
    for page in (DOC / "reference" / "nodes.md", DOC / "index.md", ROOT / "README.md"):
        text = page.read_text()
        assert not re.search(rf"\b{words}\s+nodes\b", text, re.I), f"{page}: a hand-written count of nodes"


_SECTIONS = ("Parameters", "Returns", "Yields", "Raises", "Other Parameters", "Attributes")


def _bad_items(doc: str) -> list[str]:
    """Lines of a numpy-style section (Parameters, Returns, ...) at the section's own indentation
    that are not an item header (``name : type`` or a type): napoleon renders each such line as
    one more parameter or return value (``load_urdf``'s Returns showed six bogus bullets made of
    a trailing paragraph)."""
    lines = textwrap.dedent("\n".join(doc.splitlines()[1:])).splitlines() if "\n" in doc else []
    bad, section = [], None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and re.fullmatch(r"-{3,}", nxt.strip()):
            section = line.strip() if line.strip() in _SECTIONS else None
            continue
        if section is None or not line.strip() or re.fullmatch(r"-{3,}", line.strip()) or line[:1].isspace():
            continue
        if " : " in line:
            ok = re.fullmatch(r"[\w*, .()\[\]]+", line.split(" : ")[0].strip()) is not None   # name(s) : type
        elif section in ("Returns", "Yields", "Raises"):
            ok = len(line.split()) <= 6 and not line.rstrip().endswith((".", ";", ","))       # a type alone
        else:
            ok = re.fullmatch(r"[\w*]+(, [\w*]+)*", line.strip()) is not None                  # a name alone
        if not ok:
            bad.append(f"{section}: {line.strip()[:80]}")
    return bad


def test_docstring_sections_render_as_intended():
    """Every docstring of the package: no prose inside a Parameters/Returns/... section (where
    napoleon would make it items). ``make docs`` (-W) catches what Sphinx warns about; this catches
    what it renders silently."""
    import importlib
    import inspect
    import pkgutil

    import geodyn_ros
    bad = []
    for info in pkgutil.walk_packages(geodyn_ros.__path__, "geodyn_ros."):
        mod = importlib.import_module(info.name)
        objs = [mod] + [v for v in vars(mod).values()
                        if (inspect.isfunction(v) or inspect.isclass(v)) and getattr(v, "__module__", "") == info.name]
        objs += [m for c in objs if inspect.isclass(c) for m in vars(c).values() if inspect.isfunction(m)]
        for obj in objs:
            doc = obj.__doc__ or ""
            bad += [f"{info.name}.{getattr(obj, '__qualname__', '')}: {b}" for b in _bad_items(doc)]
    assert not bad, "\n".join(bad)


def _prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def test_every_page_has_one_title_and_opens_with_a_sentence():
    """One H1 per page, not followed at once by another heading (the under-actuated tutorial
    had two titles in a row), and the first paragraph after it starts a sentence (``howto/load_robot`` opened mid-sentence, "or strided views, ...")."""
    bad = []
    for page in sorted(DOC.rglob("*.md")):
        if page.name.startswith("_"):
            continue   # generated fragments, included by other pages
        lines = _prose_lines(page.read_text())
        titles = [line for line in lines if re.match(r"# \S", line)]
        if len(titles) != 1:
            bad.append(f"{page.relative_to(ROOT)}: {len(titles)} H1 titles")
            continue
        after = lines[lines.index(titles[0]) + 1:]
        first = next((line.strip() for line in after if line.strip()), "")
        if first and first[0].islower():
            bad.append(f"{page.relative_to(ROOT)}: opens mid-sentence: {first[:60]!r}")
        if first.startswith("#"):
            bad.append(f"{page.relative_to(ROOT)}: a second title right under the first: {first[:60]!r}")
    assert not bad, "\n".join(bad)


def test_the_site_shows_the_figures():
    """Every image the docs or the README reference exists, and the loop tutorials show their
    figure (the site showed none, not even the README's)."""
    refs = []
    for page in _doc_pages():
        text = page.read_text()
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text) + re.findall(r"```\{(?:figure|image)\}\s+(\S+)", text):
            refs.append((page, target))
            assert (page.parent / target).resolve().is_file(), f"{page}: missing image {target}"
    shown = {Path(t).name for p, t in refs if p.parent.name == "tutorials"}
    assert {"actuated_loop.png", "underactuated_loop.png"} <= shown, shown


def test_vehicle_file_reference_lists_every_gains_key():
    """Issue 40 item 7: the ``gains:`` keys were documented only in explanation/gains.md. Every key the
    gain design accepts (each controller kind's loops, the explicit gains, a loop's sub-keys) has a
    row in the vehicle-file reference's ``gains`` table, and no row names a key the design refuses."""
    import re

    from geodyn_ros.control import gain_design as gdz
    page = (ROOT / "doc" / "reference" / "vehicle_file.md").read_text()
    section = page.split("## `gains`", 1)[1].split("\n## ", 1)[0] if "## `gains`" in page else ""
    assert section, "vehicle_file.md has no `gains` section"
    rows = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    accepted = set(gdz._EXPLICIT).union(*(set(d) for d in gdz.DEFAULTS.values()))
    assert rows == accepted, (sorted(rows - accepted), sorted(accepted - rows))
    assert "bandwidth" in section and "damping" in section


def test_status_page_lists_each_issue_once():
    """Issue 40 item 8: status.md listed "your own vehicle" (issue 33) and "CPU per cycle" (issue 35)
    as open after both had landed. Each issue the page names is either done or open, never both,
    and those two are done."""
    page = (ROOT / "doc" / "explanation" / "status.md").read_text()
    done, _, open_ = page.partition("- **Open**")
    assert open_, "status.md has no Open list"
    n_done = {int(n) for n in re.findall(r"issues? (\d+)", done)}
    n_open = {int(n) for n in re.findall(r"issues? (\d+)", open_)}
    # every filed issue done: the Open list says so ("none of the issues filed so far")
    assert (n_open or open_.lstrip(": ").startswith("none")) and not n_done & n_open, sorted(n_done & n_open)
    assert {33, 35} <= n_done, sorted(n_done)
