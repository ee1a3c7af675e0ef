"""``tools/build_interfaces.py`` (make venv's step 5): the path fix-up of the ROS wheels' exported
CMake files, and its one-line error when a build tool is missing. The build itself is exercised by
``make venv`` and checked by ``test/interfaces/test_geodyn_msgs.py`` (the messages import and travel)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "build_interfaces.py"
BUILD_MACHINE = "/opt/python/cp311-cp311"


def _tool():
    spec = importlib.util.spec_from_file_location("build_interfaces", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fake_prefix(tmp_path: Path) -> Path:
    """A prefix laid out like the venv: one exported CMake file as the wheels ship it, one clean."""
    cm = tmp_path / "share" / "std_msgs" / "cmake"
    cm.mkdir(parents=True)
    (cm / "export_std_msgs__rosidl_generator_pyExport.cmake").write_text(
        'set_target_properties(std_msgs::std_msgs__rosidl_generator_py PROPERTIES\n'
        f'  INTERFACE_INCLUDE_DIRECTORIES "{BUILD_MACHINE}/include/python3.11;'
        f'{BUILD_MACHINE}/lib/python3.11/site-packages/numpy/_core/include"\n)\n')
    (cm / "std_msgsConfig.cmake").write_text('set(std_msgs_FOUND TRUE)\n')
    return tmp_path


def test_fixup_rewrites_the_build_machine_paths_once(tmp_path):
    tool = _tool()
    prefix = _fake_prefix(tmp_path)
    f = prefix / "share/std_msgs/cmake/export_std_msgs__rosidl_generator_pyExport.cmake"
    assert [p for p, _ in tool.fix_cmake_paths(prefix, dry_run=True)] == [f]
    assert BUILD_MACHINE in f.read_text()                        # a dry run changes nothing
    changed = tool.fix_cmake_paths(prefix)
    assert [p for p, _ in changed] == [f]
    text = f.read_text()
    assert BUILD_MACHINE not in text
    site = sysconfig.get_paths(vars={"base": str(prefix), "platbase": str(prefix)})["purelib"]
    assert f'"{sysconfig.get_paths()["include"]};{site}/numpy/_core/include"' in text
    assert tool.fix_cmake_paths(prefix) == [] and f.read_text() == text   # idempotent
    assert not list(f.parent.glob(".fixup-*"))                             # no temporary file left


def test_fixup_refuses_a_build_machine_path_it_cannot_map(tmp_path):
    tool = _tool()
    prefix = _fake_prefix(tmp_path)
    (prefix / "share/std_msgs/cmake/other.cmake").write_text(f'set(x "{BUILD_MACHINE}/share/something")\n')
    with pytest.raises(tool.BuildError, match="no rule maps"):
        tool.fix_cmake_paths(prefix)


def test_the_venv_exported_cmake_files_name_no_build_machine_path():
    """make venv ran the fix-up on this venv: nothing left, and running it again changes nothing."""
    tool = _tool()
    prefix = Path(sys.prefix)
    files = tool.exported_cmake_files(prefix)
    assert any(p.parent.parent.name == "std_msgs" for p in files), "the venv has no ROS CMake files"
    left = [str(p.relative_to(prefix)) for p in files if BUILD_MACHINE in p.read_text()]
    assert not left, f"{len(left)} exported CMake files still name {BUILD_MACHINE} (make venv runs the fix-up): {left[:5]}"
    assert tool.fix_cmake_paths(prefix, dry_run=True) == []


def test_a_missing_tool_is_one_line_naming_it(tmp_path):
    """Without cmake on PATH the script stops at step 1 with one line saying what to install."""
    env = dict(os.environ, PATH=str(tmp_path))   # an empty folder: no cmake, no compiler
    out = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [out.stderr.strip()] and "cmake not found on PATH" in out.stderr, out.stderr
    assert out.stderr.startswith("interfaces: error: tools:")


@pytest.mark.parametrize("name", ["tf2_msgs", "px4_msgs"])
def test_stand_ins_are_built_only_where_no_real_one_is_installed(tmp_path, monkeypatch, name):
    """A tf2_msgs (px4_msgs) in the ament index of a prefix is real unless this script's marker is beside it."""
    tool = _tool()
    venv, ros = tmp_path / "venv", tmp_path / "opt_ros"
    for prefix in (venv, ros):
        (prefix / "share/ament_index/resource_index/packages").mkdir(parents=True)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(venv))
    assert name in tool.STAND_INS and tool.own_marker("tf2_msgs") == tool.OWN_TF2_MARKER
    assert tool.real_package(venv, name) is None                          # none at all: build it
    (venv / f"share/ament_index/resource_index/packages/{name}").write_text("")
    (venv / tool.own_marker(name)).parent.mkdir(parents=True)
    (venv / tool.own_marker(name)).write_text("")
    assert tool.real_package(venv, name) is None                          # our own copy: rebuild it
    (ros / f"share/ament_index/resource_index/packages/{name}").write_text("")
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join((str(ros), str(venv))))
    assert tool.real_package(venv, name) == str(ros)                      # a ROS install's, a lab's: skip


def test_the_fixup_says_in_one_line_that_it_is_expected(tmp_path, capsys):
    """Issue 52.7: make venv printed "path fix-up: rewrote the build machine's Python paths in 14
    exported CMake files of ..., in place" and a list of files, which read like a failure. The
    console now has one line saying that this is done on every new venv, the list goes to a file,
    and ``--dry-run`` still prints it."""
    tool = _tool()
    prefix = _fake_prefix(tmp_path)
    assert tool.main(["--fixup-only", "--dry-run", "--prefix", str(prefix)]) == 0
    dry = capsys.readouterr().out
    assert "export_std_msgs__rosidl_generator_pyExport.cmake" in dry and BUILD_MACHINE in dry
    assert tool.main(["--fixup-only", "--prefix", str(prefix)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1, out
    line = out[0]
    assert line.startswith("interfaces 2/5: path fix-up done, as on every new venv: 1 CMake file of the ROS wheels "
                           "pointed at this venv's Python"), line
    assert not any(w in line for w in ("rewrote", "in place", "error", "fail")), line
    listing = prefix / ".geodyn_interfaces" / "path_fixup.txt"
    assert str(listing) in line
    assert "share/std_msgs/cmake/export_std_msgs__rosidl_generator_pyExport.cmake (2)" in listing.read_text()
    assert tool.main(["--fixup-only", "--prefix", str(prefix)]) == 0     # the second run: nothing to change
    assert "nothing to change" in capsys.readouterr().out


def test_a_long_build_step_prints_progress(tmp_path, capsys, monkeypatch):
    """Issue 52.6: the message build was silent for 8.8 minutes on a loaded machine. A step that
    runs longer than PROGRESS_EVERY prints a line with the percentage CMake printed last, and its
    output still goes to the log alone. (A command printing CMake's marks 0.4 s apart, progress
    every 0.2 s: at least one line, whatever the load, since the command takes at least 1.2 s.)"""
    tool = _tool()
    monkeypatch.setattr(tool, "PROGRESS_EVERY", 0.2)
    script = ("import time\nfor p in (10, 42, 77):\n    print(f'[ {p}%] Building C object x.c.o', flush=True)\n"
              "    time.sleep(0.4)\n")
    log = tmp_path / "build.log"
    tool._run([sys.executable, "-c", script], log, dict(os.environ), "geodyn_msgs: build", "4/5")
    lines = capsys.readouterr().out.splitlines()
    assert lines, "no progress line"
    assert all(ln.startswith("interfaces 4/5: geodyn_msgs: build: ") and ln.endswith(" so far") for ln in lines), lines
    assert any(" % " in ln or " %," in ln for ln in lines), lines
    assert "[ 77%]" in log.read_text() and not any("Building C object" in ln for ln in lines)
