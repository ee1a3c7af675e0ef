"""Every file the documentation points to exists (issue 52.4).

``requirements.txt`` sent a user to ``doc/howto/install.md``, which did not exist (and named
``model/urdf.py`` for ``geodyn_ros/model/urdf.py``). Checked here, over the README, every page of
``doc/`` and the comments of ``requirements.txt``:

* every relative Markdown link ``[text](target)`` resolves from its page (the anchor aside);
* every file of the repository named in backticks (``doc/...``, ``test/...``, ``geodyn_ros/...``,
  ``config/...``, ``urdf/...``, ``launch/...``, ``tools/...``, ``bench/...``, ``geodyn_msgs/...``:
  a name with an extension, or a folder ending in ``/``) exists, from the repository root;
* every path with an extension in ``requirements.txt`` exists, from the repository root.

Placeholders (``<name>``, ``*``, ``...``) are not paths; ``out/`` is made by the commands.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "doc").rglob("*.md")) + [ROOT / "README.md"]
TOP = ("doc", "test", "geodyn_ros", "config", "urdf", "launch", "tools", "bench", "geodyn_msgs", "resource")
_REPO_PATH = re.compile(rf"(?:{'|'.join(TOP)})/[\w./-]*(?:\.\w+|/)")


def _placeholder(token: str) -> bool:
    return any(c in token for c in "<>*$") or "..." in token


def dead_links(text: str, folder: Path, name: str) -> list[str]:
    """The dead links and file names of the Markdown ``text`` of page ``name`` in ``folder``."""
    bad = []
    for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
        if "://" not in target and not target.startswith("mailto:") and not (folder / target).exists():
            bad.append(f"{name}: link {target}")
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.rstrip(".,;:")
        if _REPO_PATH.fullmatch(token) and not _placeholder(token) and not (ROOT / token).exists():
            bad.append(f"{name}: `{token}`")
    return bad


def test_every_link_and_named_file_of_the_docs_exists():
    bad = [b for page in PAGES for b in dead_links(page.read_text(), page.parent, str(page.relative_to(ROOT)))]
    assert not bad, "the docs point to files that do not exist:\n" + "\n".join(bad)


def test_every_path_in_requirements_txt_exists():
    bad = []
    for n, line in enumerate((ROOT / "requirements.txt").read_text().splitlines(), 1):
        comment = line.split("#", 1)[1] if "#" in line else ""
        for token in re.findall(r"[\w.-]+(?:/[\w.-]+)+\.\w+", comment):
            if not (ROOT / token).exists():
                bad.append(f"requirements.txt:{n}: {token}")
    assert not bad, "requirements.txt names files that do not exist:\n" + "\n".join(bad)


def test_the_check_finds_a_dead_link():
    """The check above can fail: a page of doc/howto with a dead link and a dead file name, and
    the same page with the two that exist."""
    howto = ROOT / "doc" / "howto"
    assert len(dead_links("[x](no_such.md) and `doc/howto/no_such.md`.", howto, "probe")) == 2
    assert not dead_links("[x](record.md#time) and `doc/howto/record.md`.", howto, "probe")
