"""Write the node parameter reference from the nodes' own ``PARAMETERS`` tables.

Each node module declares its parameters once, as ``{name: (default, description)}``; the node
declares exactly these with rclpy (``geodyn_ros.ros.common.params.declare_parameters``) and this page is
generated from the same dict at every docs build, so the reference cannot drift from the code
(``test/package/test_docs.py`` also checks the generated page against the modules).
"""
from __future__ import annotations

import importlib
from pathlib import Path

from geodyn_ros.ros.common import interfaces

#: executable -> module of every node (geodyn_ros.ros.common.interfaces, which setup.py's console scripts follow)
NODES = {e.name: e.module for e in interfaces.NODES}

_NUMBERS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight",
            9: "Nine", 10: "Ten", 11: "Eleven", 12: "Twelve"}


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value) -> str:
    if isinstance(value, str):
        return f'`"{value}"`' if value else '`""`'
    return f"`{value!r}`"


def parameter_tables() -> dict:
    """``{executable: [(name, default, description), ...]}`` from the modules."""
    out = {}
    for exe, mod in NODES.items():
        params = importlib.import_module(mod).PARAMETERS
        out[exe] = [(name, d[0], d[1]) for name, d in params.items()]
    return out


def render() -> str:
    lines = ["# Node parameters", "",
             "Generated at build time from each node's `PARAMETERS` table (the dict the node declares "
             "its ROS parameters from), so this page and the nodes cannot disagree. Units are in the "
             "descriptions; set them with `--ros-args -p name:=value`, a parameter file keyed by node "
             "name (`config/geodyn.yaml`), or a launch file. Topics, message layouts and diagnostics: "
             "[Nodes](nodes.md).", ""]
    for exe, rows in parameter_tables().items():
        lines += [f"## `{exe}`", "", "| parameter | default | description |", "|---|---|---|"]
        lines += [f"| `{n}` | {_cell(_default(d))} | {_cell(desc)} |" for n, d, desc in rows]
        lines.append("")
    return "\n".join(lines)


def render_node_table() -> str:
    """The list of executables with their topics (``reference/_node_table.md``, included by
    ``nodes.md``): the count and the topics come from :mod:`geodyn_ros.ros.common.interfaces`."""
    nodes = [e for e in interfaces.EXECUTABLES if e.is_node]
    tools = [e for e in interfaces.EXECUTABLES if not e.is_node]
    count = _NUMBERS.get(len(nodes), str(len(nodes)))

    def names(ts):
        return ", ".join(f"`{t.name}`" for t in ts) or "-"
    lines = [f"{count} nodes, each a console script and a `ros2 run geodyn_ros <name>` executable "
             f"(`<name> --help` prints its topics and parameters), and {len(tools)} tools:", "",
             "| executable | job | subscribes | publishes |", "|---|---|---|---|"]
    lines += [f"| `{e.name}` | {_cell(e.summary)} | {_cell(names(e.subscribes))} | {_cell(names(e.publishes))} |"
              for e in nodes]
    lines += [f"| `{e.name}` | {_cell(e.summary)} | | |" for e in tools]
    lines.append("")
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_node_table(path: Path) -> None:
    _write(path, render_node_table())


def write_parameter_reference(path: Path) -> None:
    _write(path, render())
