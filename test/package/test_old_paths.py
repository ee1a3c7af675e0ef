"""The module paths users had before ``geodyn_ros/ros/`` was split by job keep working.

``geodyn_ros.ros.<module>`` (e.g. ``geodyn_ros.ros.jets``, ``geodyn_ros.ros.mission.vehicle_from``)
is the same module object as its new path ``geodyn_ros.ros.<job>.<module>``, with a
``DeprecationWarning`` naming the new path; ``python -m geodyn_ros.ros.<module>`` runs the new module.
Checked in fresh processes (an alias already imported by another test would hide a failure)."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROS = ROOT / "geodyn_ros" / "ros"

# the modules of geodyn_ros/ros/ before the split (git show be931c0:geodyn_ros/ros), written out so
# that a later change of the alias table cannot silently drop one
BEFORE_SPLIT = {
    "actuated_closed_loop", "actuated_controller_node", "actuated_sim_node", "actuator_commands", "actuator_inputs",
    "cdr", "closed_loop", "controller_node", "conversions", "description", "diagnostics", "fast_inputs",
    "flat_controller_node", "fly_closed_loop", "geodyn_node", "geodyn_params", "input_sync", "interfaces", "jets",
    "loop_session", "mission", "params", "plausibility", "raw_outputs", "reference_node", "runtime", "sim_node",
    "tracking_inputs", "underactuated_closed_loop",
}


def _run(code: str, *args, timeout=300):
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)] if code else [sys.executable, *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_every_old_module_has_its_new_home():
    from geodyn_ros.ros import MOVED
    assert set(MOVED) == BEFORE_SPLIT
    for old, job in MOVED.items():
        assert (ROS / job / f"{old}.py").is_file(), (old, job)
        assert not (ROS / f"{old}.py").exists(), f"ros/{old}.py is back beside the subpackages"


def test_old_import_paths_give_the_new_modules_with_a_deprecation_warning():
    out = _run("""
        import importlib, json, warnings
        from geodyn_ros.ros import MOVED
        report = {}
        for old, job in sorted(MOVED.items()):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                a = importlib.import_module(f"geodyn_ros.ros.{old}")
            b = importlib.import_module(f"geodyn_ros.ros.{job}.{old}")
            msgs = [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]
            report[old] = [a is b, a.__name__, msgs]
        from geodyn_ros.ros import jets                          # the 'from package import module' form
        from geodyn_ros.ros.mission import vehicle_from          # a name from an old module
        import geodyn_ros.ros.wire.jets as new_jets
        import geodyn_ros.ros.nodes.mission as new_mission
        report["forms"] = [jets is new_jets, vehicle_from is new_mission.vehicle_from]
        print(json.dumps(report))
    """)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    assert report.pop("forms") == [True, True]
    assert set(report) == BEFORE_SPLIT
    for old, (same, name, msgs) in report.items():
        new = name
        assert same and name.endswith(f".{old}") and name != f"geodyn_ros.ros.{old}", (old, name)
        assert msgs == [f"geodyn_ros.ros.{old} moved to {new}; the old path will be removed in a later release"], msgs


def test_python_dash_m_with_an_old_path_runs_the_new_module():
    out = _run("", "-m", "geodyn_ros.ros.mission", "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: python -m geodyn_ros.ros.nodes.mission"), out.stdout
    bad = _run("", "-m", "geodyn_ros.ros.mission", "start-parameters", "/nonexistent.yaml", "u", "a")
    assert bad.returncode == 2 and "/nonexistent.yaml" in bad.stderr, (bad.returncode, bad.stderr)


def test_a_name_that_never_existed_is_still_an_import_error():
    out = _run("""
        try:
            import geodyn_ros.ros.no_such_module
        except ModuleNotFoundError as e:
            print("refused", e.name)
    """)
    assert out.returncode == 0 and out.stdout.strip() == "refused geodyn_ros.ros.no_such_module", (out.stdout, out.stderr)
