"""Sphinx configuration of the geodyn_ros documentation (``make docs``: ``sphinx-build -W``).

Laid out as rosdoc2 expects (``doc/`` with ``conf.py`` and ``index``); MyST Markdown pages;
the Python reference is autodoc of the docstrings; the node parameter reference is generated at
build time from the nodes' own ``PARAMETERS`` tables (``reference/parameters.md``), so the
two cannot disagree.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

project = "geodyn_ros"
author = "geodyn_ros maintainers"
copyright = "2026, geodyn_ros maintainers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "reference/_node_table.md"]   # included by nodes.md
html_theme = "furo"
html_title = "geodyn_ros"
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "none"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
nitpicky = False


def _generate(app):
    from gen_parameters import write_node_table, write_parameter_reference
    write_parameter_reference(Path(app.srcdir) / "reference" / "parameters.md")
    write_node_table(Path(app.srcdir) / "reference" / "_node_table.md")


def setup(app):
    app.connect("builder-inited", _generate)
