"""Write the node parameter reference from the nodes' own ``PARAMETERS`` tables.

Each node module declares its parameters once, as ``{name: (default, description)}``; the node
declares exactly these with rclpy (``geodyn_ros.ros.params.declare_parameters``) and this page is
generated from the same dict at every docs build, so the reference cannot drift from the code
(``test/test_docs.py`` also checks the generated page against the modules).
"""
from __future__ import annotations

import importlib
from pathlib import Path

#: executable -> module (setup.py console_scripts)
NODES = {
    "geodyn_node": "geodyn_ros.ros.geodyn_node",
    "geodyn_reference": "geodyn_ros.ros.reference_node",
    "geodyn_sim": "geodyn_ros.ros.sim_node",
    "geodyn_actuated_sim": "geodyn_ros.ros.actuated_sim_node",
    "geodyn_controller": "geodyn_ros.ros.controller_node",
    "geodyn_actuated_controller": "geodyn_ros.ros.actuated_controller_node",
    "geodyn_flat_controller": "geodyn_ros.ros.flat_controller_node",
}


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


def write_parameter_reference(path: Path) -> None:
    text = render()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
