"""The package layout is the architecture: every module imports only from its own layer or a
lower one (module-level and function-level imports alike), and the package has no import circle.

Layers, bottom to top (README "Repository layout"):

0. ``_kernel_cache`` (numba's cache keyed on a kernel's sources, installed first), ``lie``,
   ``trajectories``: SE(3) algebra and reference trajectories; import nothing of ours
   (``trajectories`` may use ``lie``).
1. ``model``: the Model, the URDF loader, shipped resources; beside it ``vehicle``: the vehicle
   file (rotors, rotor constants, joints; imports only ``model`` and ``lie``).
2. ``algorithms``, itself layered: ``kernels`` (numba, flat arrays) < ``checks`` (input
   validation shared by every algorithm) < ``dynamics`` (the spatial single-sample core) <
   ``batch``, ``eom`` < ``linearization``, ``representations``, ``constrained``, ``reduced``,
   ``flat`` <
   ``api`` (the public entry points: hot path, then dispatch) < ``workspace``.
3. ``control``, ``px4`` < ``sim``, ``planning`` < ``loops``: controllers and PX4's frames and
   allocation (never the simulator); the MuJoCo
   simulator (which uses the actuation models of ``control``); the waypoint planner (flat map and
   allocation, never the simulator); closed loops run in one process.
4. ``ros`` < ``examples``, ``warmup``: the ROS adapters (never the examples); demonstrations and
   tools. Inside ``ros`` the subpackages are layered by job: ``common`` (parameters, runtime,
   diagnostics, the model source, the executables' table) < ``wire`` (message formats: decoders,
   writers, jet layouts) < ``inputs`` (stamp matching, plausibility, the controllers' inputs) <
   ``nodes`` (the executables) < ``px4`` (PX4's side: the bridge, its wire helpers, and the
   simulator's PX4 stand-in, which extends the actuated simulator node; the nodes never import it)
   < ``loops`` (whole ROS loops in one process).

Layers 0-2 (the core) import strictly downward and never the package ``geodyn_ros`` itself (its
``__init__`` imports every algorithm); layers 3-4 may also use the public API through it. In
layers 3-4 a module imports from a lower layer, or from its own layer at the same or a lower
sub-rank (``sim`` never imports ``loops``, ``ros.wire`` never ``ros.nodes``). The
package ``__init__`` re-exports the public API and is not a layer.
"""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "geodyn_ros"
ROOT = ""   # the package itself: ``import geodyn_ros`` / ``from geodyn_ros import Model``
TOP = 5     # the package root sits above every layer

#: the subpackages of ``ros``, bottom to top (a tuple: side by side, one sub-rank)
ROS = ["common", "wire", "inputs", "nodes", "px4", "loops"]
#: subpackages of one sub-rank that must not import each other
APART = set()

ALG = ["kernels", "checks", "dynamics", ("batch", "eom"),
       ("linearization", "representations", "constrained", "reduced", "flat"), "api", "workspace"]


def rank(mod):
    """(layer, sub-rank) of a module path such as 'algorithms.kernels.inverse'."""
    if mod == ROOT:
        return (TOP, 0)
    parts = mod.split(".")
    top = parts[0]
    if top == "_kernel_cache":                # numba's cache locators and stamps: imports nothing of ours
        return (0, -1)
    if top == "lie":
        return (0, 0)
    if top == "trajectories":
        return (0, 1)
    if top == "model":
        return (1, 0)
    if top == "vehicle":                      # the vehicle file: beside model, imports only model and lie
        return (1, 1)
    if top == "algorithms":
        if len(parts) == 1:
            return (2, len(ALG))   # the package __init__ (imports nothing)
        for i, g in enumerate(ALG):
            if parts[1] in (g if isinstance(g, tuple) else (g,)):
                return (2, i)
        raise AssertionError(f"algorithms.{parts[1]} has no place in the layer table of this test")
    if top in ("control", "px4"):             # controllers; PX4's frames and allocation: never the simulator
        return (3, 0)
    if top == "sim":                          # the simulator may use the actuation models of control
        return (3, 1)
    if top == "planning":                     # waypoint planning above control (never sim or loops)
        return (3, 1)
    if top == "loops":                        # in-process closed loops: control + sim
        return (3, 2)
    if top == "ros":                          # the adapters, layered by job; never the examples
        if len(parts) == 1:
            return (4, 0)                     # the package __init__ (the old-path aliases; imports nothing)
        for i, g in enumerate(ROS):
            if parts[1] in (g if isinstance(g, tuple) else (g,)):
                return (4, i)
        raise AssertionError(f"ros.{parts[1]} has no place in the layer table of this test")
    if top in ("examples", "warmup", "cli_help"):   # demonstrations and tools, on top of everything
        return (4, len(ROS))
    raise AssertionError(f"module {mod} has no layer: add it to the README's layout and to this test")


def modules():
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts:
            continue   # the package __init__: the public re-exports
        yield ".".join(parts), p


def _is_ours(parts):
    """True if ``parts`` (relative to the package) name one of our modules or packages."""
    return PKG.joinpath(*parts).with_suffix(".py").is_file() or PKG.joinpath(*parts).is_dir()


def imports_of(mod, path):
    """Our modules imported by ``mod``, anywhere in the file (absolute 'geodyn_ros.x', relative
    '.x' / '..x', ``import geodyn_ros``); ``ROOT`` stands for the package itself."""
    tree = ast.parse(path.read_text())
    pkg_parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(pkg_parts):
                    raise AssertionError(f"{mod}: relative import beyond the package")
                base = pkg_parts[:len(pkg_parts) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "geodyn_ros":
                target = node.module.split(".")[1:]
            else:
                continue
            for a in node.names:
                if _is_ours(target + [a.name]):   # "from .kernels import common": a module
                    out.add(".".join(target + [a.name]))
                else:                              # "from .checks import _f64": a name of target
                    out.add(".".join(target))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "geodyn_ros":
                    out.add(".".join(a.name.split(".")[1:]))   # "geodyn_ros" alone -> ROOT
    return out


def upward_imports(mod, deps):
    """The imports of ``mod`` that break the layer rule, as messages."""
    r = rank(mod)
    bad = []
    for dep in sorted(deps):
        if dep == mod:
            continue
        d = rank(dep)
        if r[0] <= 2:
            # the core: strictly downward (or sideways inside one algorithms group); never the package
            if d > r:
                bad.append(f"{mod} (layer {r}) imports {dep or 'geodyn_ros'} (layer {d}): an upward import")
        elif not (d <= r or dep == ROOT):
            bad.append(f"{mod} (layer {r}) imports {dep} (layer {d}): an upward import")
        elif _apart(mod, dep):
            bad.append(f"{mod} imports {dep}: these ros subpackages sit side by side and never import each other")
    return bad


def _apart(mod, dep):
    a, b = mod.split("."), dep.split(".")
    return len(a) > 1 and len(b) > 1 and a[0] == b[0] == "ros" and (a[1], b[1]) in APART


def circles(graph):
    """Strongly connected components of more than one module (import circles), Tarjan."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


ALL = list(modules())
GRAPH = {mod: {d for d in imports_of(mod, path) if d != mod} for mod, path in ALL}


@pytest.mark.parametrize("mod, path", ALL, ids=[m for m, _ in ALL])
def test_imports_go_downward_only(mod, path):
    assert not upward_imports(mod, imports_of(mod, path))


def test_no_import_circle():
    assert circles(GRAPH) == []


def test_layer_table_covers_the_package():
    assert len(ALL) > 30
    for mod, _ in ALL:
        rank(mod)
    for mod in ("algorithms.api", "algorithms.checks", "algorithms.kernels.common", "model.urdf",
                "ros.common.params", "ros.wire.cdr", "ros.inputs.input_sync", "ros.nodes.geodyn_node",
                "ros.loops.closed_loop"):
        assert mod in GRAPH, f"{mod} missing: the layout moved and this test did not follow"


def test_the_checks_can_fail(tmp_path):
    """The rules catch what they are for (on made-up imports)."""
    assert upward_imports("algorithms.dynamics", {"algorithms.api"})             # core dispatching upward
    assert upward_imports("algorithms.dynamics", {"algorithms.constrained"})
    assert upward_imports("algorithms.representations", {"algorithms.api"})
    assert upward_imports("algorithms.kernels.inverse", {"algorithms.checks"})
    assert upward_imports("model.urdf", {"algorithms.checks"})
    assert upward_imports("lie", {"trajectories"})
    assert upward_imports("trajectories", {ROOT})                              # "import geodyn_ros"
    assert upward_imports("algorithms.eom", {ROOT})
    assert upward_imports("sim.mujoco_sim", {"ros.wire.jets"})
    assert upward_imports("sim.mujoco_sim", {"loops.tracking"})                # sideways, one sub-rank up
    assert upward_imports("ros.wire.jets", {"ros.nodes.geodyn_node"})          # inside ros, by job
    assert upward_imports("ros.common.params", {"ros.wire.conversions"})
    assert upward_imports("ros.inputs.input_sync", {"ros.nodes.geodyn_params"})
    assert upward_imports("ros.nodes.geodyn_node", {"ros.loops.closed_loop"})
    assert not upward_imports("ros.loops.closed_loop", {"ros.nodes.geodyn_node", "ros.common.runtime", "loops.fly"})
    assert upward_imports("ros.nodes.geodyn_node", {"ros.px4.bridge_node"})     # px4 sits above nodes
    assert not upward_imports("ros.px4.standin_node", {"ros.nodes.actuated_sim_node"})
    assert upward_imports("ros.px4.px4_wire", {"ros.loops.closed_loop"})
    assert not upward_imports("ros.px4.bridge_node", {"ros.common.params", "ros.wire.conversions", "ros.inputs.plausibility",
                                                      "ros.px4.px4_wire", "px4.allocation", "vehicle"})
    assert not upward_imports("ros.nodes.geodyn_node", {"ros.nodes.geodyn_params", "ros.inputs.input_sync",
                                                        "ros.wire.cdr", "ros.common.params"})
    assert upward_imports("vehicle.schema", {"control.rotors"})                # the vehicle never imports control
    assert upward_imports("vehicle.schema", {"algorithms.api"})
    assert not upward_imports("vehicle.schema", {"model.urdf", "lie"})
    assert not upward_imports("control.rotors", {"vehicle.params"})
    assert not upward_imports("ros.nodes.geodyn_node", {ROOT, "algorithms.checks", "sim"})
    assert not upward_imports("algorithms.reduced", {"algorithms.representations", "algorithms.eom", "lie"})
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    # the parser sees function-level imports and "import geodyn_ros"
    src = tmp_path / "probe.py"   # read as if it were geodyn_ros/algorithms/probe.py
    src.write_text("def f():\n    import geodyn_ros as gd\n    from . import api\n    from ..lie import Ad\n"
                   "    from .checks import _f64\n")
    assert imports_of("algorithms.probe", src) == {ROOT, "algorithms.api", "lie", "algorithms.checks"}


def test_the_two_former_upward_imports_cannot_come_back():
    """control.tracking once imported sim, and ros.actuated_closed_loop the examples: both now rank
    as upward imports (the per-module test above then fails on them)."""
    assert rank("control.tracking") < rank("sim.mujoco_sim")
    assert rank("ros.loops.actuated_closed_loop") < rank("examples.actuated_loop")
    assert rank("loops.tracking") > rank("sim.mujoco_sim") > rank("control.feedback")


# ---------------------------------------------------------------- sizes: rooms people can live in
REPO = PKG.parent
MAX_MODULES, MAX_LINES = 15, 700


def tracked_python_files():
    """Every Python file of the repository (the committed tree and new files), not the venv or caches."""
    skip = {".git", ".venv", "out", "build", "install", "log", "__pycache__"}
    for p in sorted(REPO.rglob("*.py")):
        rel = p.relative_to(REPO)
        if not skip.intersection(rel.parts):
            yield rel


def oversized(files):
    """(folders holding more than MAX_MODULES modules side by side, modules over MAX_LINES lines) of
    ``files`` (paths relative to REPO); ``__init__.py`` and ``conftest.py`` are not counted as modules."""
    per_folder = {}
    for rel in files:
        if rel.name not in ("__init__.py", "conftest.py"):
            per_folder.setdefault(rel.parent, []).append(rel.name)
    folders = {str(d): len(m) for d, m in per_folder.items() if len(m) > MAX_MODULES}
    long = {str(rel): n for rel in files if (n := len((REPO / rel).read_text().splitlines())) > MAX_LINES}
    return folders, long


def test_no_folder_over_15_modules_and_no_module_over_700_lines():
    folders, long = oversized(list(tracked_python_files()))
    assert not folders, f"folders over {MAX_MODULES} modules (split them by job): {folders}"
    assert not long, f"modules over {MAX_LINES} lines (split them): {long}"


def test_the_size_check_can_fail(tmp_path):
    """The rule itself, on a made-up tree: 16 modules in a folder and a 701-line module are caught."""
    (tmp_path / "pkg").mkdir()
    files = []
    for i in range(16):
        (tmp_path / "pkg" / f"m{i}.py").write_text("x = 1\n")
        files.append(Path("pkg") / f"m{i}.py")
    (tmp_path / "big.py").write_text("x = 1\n" * 701)
    files.append(Path("big.py"))
    (tmp_path / "pkg" / "__init__.py").write_text("")
    files.append(Path("pkg") / "__init__.py")
    global REPO
    old, REPO = REPO, tmp_path
    try:
        folders, long = oversized(files)
    finally:
        REPO = old
    assert folders == {"pkg": 16} and long == {"big.py": 701}
