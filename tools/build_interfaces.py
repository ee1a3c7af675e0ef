"""Build geodyn_ros' ROS 2 interfaces into the venv: ``geodyn_msgs`` (and, where no real one is
installed, ``tf2_msgs/TFMessage``, ``actuator_msgs/Actuators`` (the rotor command) and the ``px4_msgs``
test fixture of the PX4 bridge), so that
``import geodyn_msgs.msg`` works with
``AMENT_PREFIX_PATH`` = the venv and rclpy publishes and subscribes the messages.

Run with the venv's Python from the clone's root (``make venv`` does, as its step 5)::

    .venv/bin/python tools/build_interfaces.py            # fix-up, then build what changed
    .venv/bin/python tools/build_interfaces.py --fixup-only --dry-run   # show what the fix-up would change

Steps, a progress line as each starts (and every 20 s while a package compiles: minutes on a
busy 2-core machine, which must not look hung):

1. **tools**: cmake, a C and a C++ compiler, make, and the ROS build wheels in the venv
   (``ament_cmake``, ``rosidl_default_generators``; requirements.txt). A missing one stops the
   build with a one-line error naming it.
2. **path fix-up**: the ROS wheels on PyPI are built in a manylinux image, and the CMake files
   they export (``<venv>/share/<pkg>/cmake/*.cmake``) name that image's Python:
   ``/opt/python/cp311-cp311/include/python3.11`` and
   ``/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include``. A build that links
   against them fails. They are rewritten **in place in the venv** to this interpreter's include
   directory and site-packages: the venv is this clone's own (``make clean`` removes it), so
   nothing outside it changes; a copy would not work, because each exported CMake file finds its
   package's headers and libraries relative to its own location. Each file is written whole
   through a temporary file and a rename; the rewrite is idempotent (a second run changes
   nothing) and every changed file is listed in ``<venv>/.geodyn_interfaces/path_fixup.txt`` (on
   stdout with ``--dry-run``): the fix-up is expected on every new venv, and its console line says
   so in one line, not as a list that reads like a failure. ``pip install --force-reinstall`` of a wheel
   restores its original files. Any other build-machine path left in those files is an error.
3. **tf2_msgs**, **actuator_msgs**, **px4_msgs**: each skipped where a real one is installed (an
   ament index entry under ``AMENT_PREFIX_PATH`` that this script did not write), else built from
   ``tools/tf2_msgs`` (``TFMessage``), ``tools/actuator_msgs`` (``Actuators``, the type of
   ``cmd/rotor_speeds``: not on PyPI) and ``tools/px4_msgs`` (the px4_msgs 1.16.0 messages of the
   PX4 bridge, a test fixture: ``tools/px4_msgs/package.xml``).
4. **geodyn_msgs**: CMake configure, build (2 jobs) and install into the venv prefix. The build
   trees live in ``<venv>/.geodyn_interfaces/``; the files of a previous install are removed first,
   so a renamed or deleted message leaves nothing behind.
5. **check**: ``import geodyn_msgs.msg`` (and every stand-in built) in a fresh interpreter.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the interface packages this script builds, in build order: (name, source folder)
PACKAGES = (("tf2_msgs", ROOT / "tools" / "tf2_msgs"), ("actuator_msgs", ROOT / "tools" / "actuator_msgs"),
            ("px4_msgs", ROOT / "tools" / "px4_msgs"),
            ("geodyn_msgs", ROOT / "geodyn_msgs"))
#: the packages built only where no real one is installed (stand-ins for ROS / PX4 packages)
STAND_INS = ("tf2_msgs", "actuator_msgs", "px4_msgs")
#: the marker this script installs beside its own tf2_msgs (to tell it from a real one)
OWN_TF2_MARKER = "share/tf2_msgs/built_by_geodyn_ros"


def own_marker(name: str) -> str:
    """The marker this script installs beside its own ``name`` (a stand-in, :data:`STAND_INS`)."""
    return f"share/{name}/built_by_geodyn_ros"
#: the Python prefix of the manylinux image the ROS wheels were built in
BUILD_PREFIX = re.compile(r"/opt/python/cp3\d+-cp3\d+[a-z]*")


class BuildError(RuntimeError):
    """A one-line reason the build cannot go on."""


def _progress(step: str, text: str) -> None:
    print(f"interfaces {step}: {text}", flush=True)


def _duration(seconds: float) -> str:
    """``42 s`` or ``3 min 05 s``."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


# ---------------------------------------------------------------------- 2. path fix-up
def path_map(prefix: Path) -> list[tuple[re.Pattern, str]]:
    """(pattern, replacement) pairs of the build machine's Python paths -> this interpreter's."""
    include = sysconfig.get_paths()["include"]
    site = sysconfig.get_paths(vars={"base": str(prefix), "platbase": str(prefix)})["purelib"]
    return [(re.compile(BUILD_PREFIX.pattern + r"/include/python3\.\d+"), include),
            (re.compile(BUILD_PREFIX.pattern + r"/lib/python3\.\d+/site-packages"), site)]


def exported_cmake_files(prefix: Path) -> list[Path]:
    """The CMake files the installed ROS packages export: ``<prefix>/share/*/cmake/*.cmake``."""
    return sorted((prefix / "share").glob("*/cmake/*.cmake"))


def fix_cmake_paths(prefix: Path, dry_run: bool = False) -> list[tuple[Path, dict]]:
    """Rewrite the build machine's Python paths in the exported CMake files under ``prefix``
    (module docstring, step 2). Returns ``[(file, {old path: (new path, count)})]`` of the files
    changed (or that would change, with ``dry_run``); raises :class:`BuildError` if a
    build-machine path that no rule maps is left."""
    rules = path_map(prefix)
    changed = []
    for path in exported_cmake_files(prefix):
        text = path.read_text()
        if not BUILD_PREFIX.search(text):
            continue
        new, pairs = text, {}
        for pattern, repl in rules:
            for old in sorted(set(pattern.findall(new))):
                pairs[old] = (repl, new.count(old))
                new = new.replace(old, repl)
        left = BUILD_PREFIX.search(new)
        if left:
            line = new[new.rfind("\n", 0, left.start()) + 1:new.find("\n", left.end())]
            raise BuildError(f"path fix-up: {path} names a build-machine path no rule maps: {line.strip()[:200]}")
        changed.append((path, pairs))
        if not dry_run:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".fixup-", suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(new)
            os.chmod(tmp, path.stat().st_mode & 0o777)
            os.replace(tmp, path)
    return changed


def fixup_report(changed, prefix: Path) -> list[str]:
    """The lines that list a fix-up: each path mapping (``old -> new``), then each file changed
    (relative to ``prefix``) with its count of paths."""
    pairs = {old: new for _, p in changed for old, (new, _) in p.items()}
    return [f"{old} -> {new}" for old, new in pairs.items()] + \
        [f"{path.relative_to(prefix)} ({sum(n for _, n in p.values())})" for path, p in changed]


# ---------------------------------------------------------------------- 1. tools
def check_tools(prefix: Path) -> dict:
    """The build tools, or :class:`BuildError` naming the first one missing."""
    tools = {}
    for name, candidates, hint in (
            ("cmake", ("cmake",), "apt-get install cmake (or pip install cmake)"),
            ("C compiler", ("cc", "gcc", "clang"), "apt-get install gcc"),
            ("C++ compiler", ("c++", "g++", "clang++"), "apt-get install g++"),
            ("make", ("make",), "apt-get install make")):
        found = next((shutil.which(c) for c in candidates if shutil.which(c)), None)
        if found is None:
            raise BuildError(f"tools: {name} not found on PATH (tried {', '.join(candidates)}); {hint}")
        tools[name] = found
    for pkg in ("ament_cmake", "rosidl_default_generators", "std_msgs", "geometry_msgs"):
        if not (prefix / "share" / pkg / "cmake").is_dir():
            raise BuildError(f"tools: {pkg} is not installed in {prefix} (its CMake files are missing); "
                             f"run: {prefix}/bin/python -m pip install -r requirements.txt")
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        raise BuildError(f"tools: the Python headers are missing ({include}/Python.h); install python3-dev")
    return tools


# ---------------------------------------------------------------------- 3. tf2_msgs
def real_package(prefix: Path, name: str) -> str | None:
    """The prefix of a ``name`` this script did not build (a ROS install, a lab's px4_msgs), or None."""
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [str(prefix)]
    for p in dict.fromkeys(prefixes):
        if (Path(p) / f"share/ament_index/resource_index/packages/{name}").exists() \
                and not (Path(p) / own_marker(name)).exists():
            return p
    return None


def real_tf2_msgs(prefix: Path) -> str | None:
    """The prefix of a tf2_msgs this script did not build (a ROS install), or None."""
    return real_package(prefix, "tf2_msgs")


# ---------------------------------------------------------------------- 4. build
def _env(prefix: Path) -> dict:
    env = dict(os.environ)
    ament = [str(prefix)] + [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p and p != str(prefix)]
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(ament)
    env["PATH"] = str(prefix / "bin") + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)          # the generators run in the venv's interpreter as installed
    return env


#: seconds between two progress lines of a long build step (the build is silent otherwise: minutes
#: on a loaded 2-core machine, which looked hung)
PROGRESS_EVERY = 20.0
#: CMake's Makefile generator's progress mark, ``[ 42%] Building C object ...``
_PERCENT = re.compile(rb"\[\s*(\d+)%\]")


def _run(argv, log: Path, env: dict, what: str, step: str = "") -> None:
    """Run ``argv`` with its output appended to ``log``; every :data:`PROGRESS_EVERY` s a progress
    line (``interfaces <step>: <what>: 42 %, 1 min 20 s so far``, the percentage CMake last
    printed) so that a long compile never looks hung."""
    t0 = time.monotonic()
    with open(log, "a") as f:
        f.write("$ " + " ".join(map(str, argv)) + "\n")
        f.flush()
        start = f.tell()
        proc = subprocess.Popen([str(a) for a in argv], stdout=f, stderr=subprocess.STDOUT, env=env)
        last = t0
        while True:
            try:
                rc = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() - last >= PROGRESS_EVERY:
                last = time.monotonic()
                with open(log, "rb") as r:
                    r.seek(start)
                    marks = _PERCENT.findall(r.read())
                done = f"{int(marks[-1])} %, " if marks else ""
                _progress(step, f"{what}: {done}{_duration(last - t0)} so far")
    if rc != 0:
        tail = log.read_text().splitlines()[-25:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise BuildError(f"{what} failed (exit {rc}); the full log: {log}")


def _remove_previous_install(build: Path, prefix: Path) -> int:
    """Remove the files listed by the previous install of this build tree (inside ``prefix`` only)."""
    manifest = build / "install_manifest.txt"
    if not manifest.exists():
        return 0
    n = 0
    for line in manifest.read_text().splitlines():
        p = Path(line.strip())
        if line.strip() and p.is_relative_to(prefix) and (p.is_file() or p.is_symlink()):
            p.unlink()
            n += 1
    return n


def build_package(name: str, source: Path, prefix: Path, jobs: int, step: str = "") -> None:
    """CMake configure, build and install of one interface package into ``prefix`` (a progress
    line every :data:`PROGRESS_EVERY` s, labelled ``step``)."""
    build = prefix / ".geodyn_interfaces" / "build" / name
    cache = build / "CMakeCache.txt"
    if cache.exists() and f"CMAKE_HOME_DIRECTORY:INTERNAL={Path(source).resolve()}\n" not in cache.read_text():
        # configured from another source tree (the clone moved, or a second clone shares the venv):
        # CMake refuses to reuse it; start this package's build afresh (its install is replaced below)
        shutil.rmtree(build)
    build.mkdir(parents=True, exist_ok=True)
    log = build.parent.parent / f"{name}.log"
    log.write_text("")
    env = _env(prefix)
    _run(["cmake", "-S", source, "-B", build, f"-DCMAKE_INSTALL_PREFIX={prefix}",
          f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPython3_EXECUTABLE={sys.executable}",
          "-DPython3_FIND_VIRTUALENV=ONLY", "-DBUILD_TESTING=OFF", "-DCMAKE_BUILD_TYPE=Release"],
         log, env, f"{name}: cmake configure", step)
    _run(["cmake", "--build", build, "--parallel", str(jobs)], log, env, f"{name}: build", step)
    _remove_previous_install(build, prefix)
    _run(["cmake", "--install", build], log, env, f"{name}: install", step)
    if name in STAND_INS:
        (prefix / own_marker(name)).write_text(f"{name} built by geodyn_ros tools/build_interfaces.py from "
                                               f"{source.relative_to(ROOT)}\n")


def check_import(prefix: Path, names) -> None:
    code = "; ".join(f"import {n}.msg" for n in names)
    out = subprocess.run([sys.executable, "-c", code], env=_env(prefix), capture_output=True, text=True)
    if out.returncode != 0:
        raise BuildError(f"check: `{code}` failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", type=Path, default=Path(sys.prefix),
                    help="the venv to fix up and install into (default: this interpreter's, %(default)s)")
    ap.add_argument("--fixup-only", action="store_true", help="step 2 only")
    ap.add_argument("--dry-run", action="store_true", help="with --fixup-only: list what would change, change nothing")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (default 2)")
    args = ap.parse_args(argv)
    prefix = args.prefix.resolve()
    start = time.monotonic()
    try:
        if prefix == Path(sys.base_prefix).resolve():
            raise BuildError(f"{prefix} is not a venv (this script writes into its prefix); run it with the venv's python")
        if not args.fixup_only:
            tools = check_tools(prefix)
            _progress("1/5", "tools found: " + ", ".join(f"{k} {v}" for k, v in tools.items()))
        changed = fix_cmake_paths(prefix, dry_run=args.dry_run)
        report = fixup_report(changed, prefix)
        if changed and args.dry_run:
            _progress("2/5", f"path fix-up: would point {len(changed)} exported CMake files of {prefix} at this Python:")
            print("\n".join(f"    {line}" for line in report))
        elif changed:
            listing = prefix / ".geodyn_interfaces" / "path_fixup.txt"
            listing.parent.mkdir(parents=True, exist_ok=True)
            listing.write_text("\n".join(report) + "\n")
            n = len(changed)
            _progress("2/5", f"path fix-up done, as on every new venv: {n} CMake file{'s' * (n != 1)} of the ROS "
                             "wheels pointed at this venv's Python, not the wheels' build machine "
                             f"(list: {listing})")
        else:
            _progress("2/5", f"path fix-up: nothing to change (none of the {len(exported_cmake_files(prefix))} "
                             f"exported CMake files of {prefix} names a build-machine path)")
        if args.fixup_only:
            return 0
        built = []
        for step, (name, source) in zip(("3/5",) * (len(PACKAGES) - 1) + ("4/5",), PACKAGES):
            real = real_package(prefix, name) if name in STAND_INS else None
            if real:
                _progress(step, f"{name}: skipped, a real {name} is installed in {real}")
                continue
            t0 = time.monotonic()
            _progress(step, f"{name}: building {source.relative_to(ROOT)} into {prefix} (10-40 s from scratch on "
                            "a quiet 2-core machine, up to 7 minutes when both cores are busy; seconds when unchanged)")
            build_package(name, source, prefix, args.jobs, step)
            built.append(name)
            _progress(step, f"{name}: installed in {time.monotonic() - t0:.0f} s")
        check_import(prefix, built)
        _progress("5/5", f"import {', '.join(n + '.msg' for n in built)}: ok; "
                         f"total {time.monotonic() - start:.0f} s")
    except BuildError as e:
        print(f"interfaces: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
