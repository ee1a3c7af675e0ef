"""package.xml and setup.py declare what the package imports (issue 43's packaging gaps:
package.xml lacked trajectory_msgs and python3-scipy, setup.py scipy; geodyn_reference and the
LQR import both at module level).

Read independently of the package: every module of ``geodyn_ros`` is parsed with ``ast`` and
its imports at module level (not inside a function, not under ``try``: those are optional or
lazy) are collected."""
from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: third-party module -> (its rosdep key, its PyPI name); the core's and the nodes' hard needs
THIRD_PARTY = {"numpy": ("python3-numpy", "numpy"), "numba": ("python3-numba", "numba"),
               "scipy": ("python3-scipy", "scipy"), "yaml": ("python3-yaml", "pyyaml"),
               "lxml": ("python3-lxml", "lxml"), "urdf_parser_py": ("urdfdom_py", "urdfdom-py")}
#: ROS packages other than messages the nodes import
ROS_PACKAGES = {"rclpy", "rcl_interfaces", "ament_index_python", "launch", "launch_ros"}
#: needed by the simulators only, documented in package.xml's comment (no rosdep key)
SIM_ONLY = {"mujoco"}


def _module_level_imports(path: Path) -> set:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in tree.body:             # module level only: try/if/def bodies are optional or lazy
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _imports() -> set:
    out = set()
    for p in (ROOT / "geodyn_ros").rglob("*.py"):
        out |= _module_level_imports(p)
    return out


def _exec_depends() -> set:
    return {e.text.strip() for e in ET.parse(ROOT / "package.xml").getroot().iter("exec_depend")}


def _install_requires() -> set:
    text = (ROOT / "setup.py").read_text()
    block = re.search(r"install_requires=\[(.*?)\]", text, re.S).group(1)
    return set(re.findall(r"\"([^\"]+)\"", block))


def test_every_message_package_imported_is_an_exec_depend():
    msgs = {m for m in _imports() if m.endswith("_msgs") or m in ROS_PACKAGES}
    assert "trajectory_msgs" in msgs and "std_msgs" in msgs   # the scan sees the nodes
    missing = msgs - _exec_depends()
    assert not missing, f"package.xml lacks <exec_depend> for {sorted(missing)}"


def test_every_third_party_module_imported_is_declared_in_both():
    used = _imports()
    unknown = {m for m in used if m in THIRD_PARTY}
    assert {"numpy", "scipy"} <= unknown
    deps, reqs = _exec_depends(), _install_requires()
    for mod in sorted(unknown):
        rosdep, pypi = THIRD_PARTY[mod]
        assert rosdep in deps, f"package.xml lacks <exec_depend>{rosdep}</exec_depend> ({mod} is imported)"
        assert pypi in reqs, f"setup.py install_requires lacks {pypi!r} ({mod} is imported)"
    assert SIM_ONLY & used and "mujoco" in (ROOT / "package.xml").read_text()


def test_the_recording_writers_are_declared_where_they_are_optional():
    """``mcap``/``mcap_ros2`` are imported only when recording (``geodyn_fly --record``): not at
    module level (the core stays importable without them), pinned in requirements.txt, in setup.py's
    extras ``record`` and named in package.xml's comment (no rosdep key)."""
    assert not {"mcap", "mcap_ros2"} & _imports()
    reqs = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^mcap==\S+$", reqs, re.M) and re.search(r"^mcap-ros2-support==\S+$", reqs, re.M)
    extras = re.search(r"extras_require=\{(.*?)\}", (ROOT / "setup.py").read_text(), re.S).group(1)
    assert '"record": ["mcap", "mcap-ros2-support"]' in extras
    assert "mcap-ros2-support" in (ROOT / "package.xml").read_text()
