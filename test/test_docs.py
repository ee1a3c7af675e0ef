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

ROOT = Path(__file__).resolve().parents[1]
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
    scripts = set(re.findall(r'"(geodyn_\w+) = geodyn_ros_entry:', setup)) - {"geodyn_closed_loop"}
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
