"""Every ``ros2`` command of the docs has a no-CLI equivalent beside it, and the suite runs it (issue 52.3).

The ROS 2 wheels of ``make venv`` have no ``ros2`` command. A user of the docs met ``ros2 launch``,
``ros2 topic pub`` and ``ros2 service call`` lines with nothing to run instead. Now:

* **The finder.** Every ``ros2`` command in ``doc/`` and the README is found: in a fenced block, a
  line (``\\``-continued lines joined; ``$ `` prompts stripped) holding ``ros2 <verb> ...``; in the
  prose, a code span. A *command* names something: ``ros2 launch``/``run`` with a package, ``ros2
  param|topic|service|pkg|bag <sub>`` with an argument (options and ``<placeholders>`` do not
  count). ``ros2 launch`` or ``ros2 param set`` alone names the tool, not a command.
* **The marker.** Its equivalent is beside it, marked ``without ros2``: in a block, the comment
  ``# without ros2: <command>`` (continued over comment lines while the command ends with ``\\`` or
  leaves a quote open) after the ``ros2`` line, or a command line ending in ``# without ros2``
  (a transcript's ``$`` line, its output below it); in the prose, ``without ros2: `<command>``` or
  ``without ros2: [text](page.md#section)`` in the same paragraph, after it. ``see <page>#<section>``
  (or a link) names a section whose ``bash`` blocks are the commands (several nodes by hand).
* **The runs.** Each distinct equivalent runs here, as a user runs it: by bash from the clone's
  root after the activation of the venv that runs this test, on a ROS domain of its own with
  localhost discovery. A node or a tool that needs a running node (``python -m geodyn_ros2 param
  set``, ``service call``, ``topic pub``, ``topic hz``) gets it started first. What is checked:
  a finite command (the in-process loops, ``xacro``, ``geodyn_warmup``, ``pkg prefix``) exits 0
  with its output; a node starts and says so, and stops on SIGINT with exit 0; a parameter set is
  read back with ``param get``; a group of nodes does its job (the PX4 stand-in is armed in
  offboard, the simulator's ``/clock`` advances, the markers arrive, the model comes from the
  topic), every node still running, none failing, all stopping on SIGINT with exit 0; a transcript
  prints what the page shows.

Placeholders of the docs (``/path/to/robot.urdf``, ``my_robot.urdf``, ``my_vehicle.yaml``) are
given shipped files (:func:`placeholders`), ``/tmp/`` paths a temporary folder. ``my_px4/`` (the
folder ``geodyn_vehicle --px4 --out my_px4`` writes, doc/howto/fly_on_px4.md) is made by that
command, as the page says, for ``test/data/quad_x_arm_px4.yaml`` (a quadrotor with an arm: the
page's own-vehicle example) before a section that uses it runs.
"""
from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ros_domain import worker_domain  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "doc"
BIN = Path(sys.executable).parent
PAGES = sorted(DOC.rglob("*.md")) + [ROOT / "README.md"]
#: ros2 verbs whose first argument is a sub-command
SUBVERBS = {"topic", "param", "service", "bag", "pkg", "node", "interface", "action", "lifecycle", "daemon"}
_ROS2 = re.compile(r"(?:^|\$\(|[\s\"'(])ros2 (\w+)((?: +[^\s)`]+)*)")
_MARK = re.compile(r"without ros2\b[^:`]{0,120}:\s*", re.I)
#: seconds: a node's start on a loaded 2-core machine (kernels cached); a finite command's run (a loop,
#: or geodyn_warmup compiling every kernel: up to 2 hours with both cores busy, doc/howto/install.md;
#: it timed out at 1500 s at load average 27 after the sources changed); a node's stop
START_TIMEOUT, RUN_TIMEOUT, STOP_TIMEOUT = 600.0, 7200.0, 120.0


# ------------------------------------------------------------------------------------- the finder
def is_ros2_command(text: str) -> bool:
    """True if ``text`` holds a ``ros2`` command that names something (module docstring)."""
    for m in _ROS2.finditer(" ".join(text.split())):
        verb, args = m.group(1), m.group(2).split()
        if verb in SUBVERBS:
            args = args[1:]
        args = [a for a in args if not a.startswith("-")]
        if args and not any("<" in a for a in args):
            return True
    return False


@dataclass
class Equivalent:
    """A command (``text``), or a reference to a section (``page``, ``anchor``) of commands."""
    text: str = ""
    page: Path | None = None
    anchor: str = ""
    expected: list = field(default_factory=list)     # a transcript's output lines

    @property
    def key(self):
        return ("section", str(self.page.relative_to(ROOT)), self.anchor) if self.page else ("command", self.text)


@dataclass
class Occurrence:
    page: Path
    line: int
    command: str
    equivalent: Equivalent | None


def _reference(target: str, page: Path) -> Equivalent:
    path, _, anchor = target.partition("#")
    return Equivalent(page=(page.parent / path).resolve() if path else page, anchor=anchor)


def _equivalent_text(text: str, page: Path) -> Equivalent:
    text = re.split(r"\s{2,}(?=[(#])", text.strip(), maxsplit=1)[0].strip()
    if text.startswith("see "):
        return _reference(text[4:].strip(), page)
    return Equivalent(text=text)


def _block_occurrences(lines: list, first: int, page: Path) -> list:
    """The ros2 commands of one fenced block (``lines``, starting at line ``first`` of ``page``)."""
    transcript = any(ln.lstrip().startswith("$ ") for ln in lines)
    items, i = [], 0            # (kind, line number, text, expected output)
    while i < len(lines):
        raw, n = lines[i], first + i
        stripped = raw.strip()
        mark = re.match(r"#\s*without ros2\b[^:]*:\s*(.*)$", stripped, re.I)
        if mark:
            text = mark.group(1)
            while (text.rstrip().endswith("\\") or text.count('"') % 2) and i + 1 < len(lines) \
                    and lines[i + 1].strip().startswith("#"):
                i += 1
                text = text.rstrip() + "\n" + lines[i].strip()[1:].strip()
            items.append(("equivalent", n, text, []))
            i += 1
            continue
        if transcript and not stripped.startswith("$ "):
            if items and stripped:
                items[-1][3].append(stripped)
            i += 1
            continue
        text = stripped[2:] if stripped.startswith("$ ") else stripped
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if not text or text.startswith("#"):
            continue
        command, _, comment = text.partition("  #")
        if re.search(r"\bwithout ros2\b", comment, re.I):
            items.append(("equivalent", n, command.strip(), []))
        elif is_ros2_command(command):
            items.append(("ros2", n, command.strip(), []))
        else:
            items.append(("other", n, command.strip(), []))
    out = []
    ros2 = [k for k, it in enumerate(items) if it[0] == "ros2"]
    for j, k in enumerate(ros2):
        after = items[k + 1:ros2[j + 1] if j + 1 < len(ros2) else len(items)]
        before = items[ros2[j - 1] + 1 if j else 0:k]
        found = next((it for it in after if it[0] == "equivalent"), None) or \
            next((it for it in reversed(before) if it[0] == "equivalent"), None)
        eq = None
        if found:
            eq = _equivalent_text(found[2], page)
            eq.expected = found[3]
        out.append(Occurrence(page, items[k][1], items[k][2], eq))
    return out


def page_occurrences(page: Path, text: str | None = None) -> list:
    """Every ros2 command of ``page`` (its text, or ``text``) with its equivalent (None: missing)."""
    lines = (page.read_text() if text is None else text).splitlines()
    out, prose, i = [], [], 0
    while i < len(lines):
        if lines[i].lstrip().startswith(("```", "~~~")):
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(("```", "~~~")):
                j += 1
            out += _block_occurrences(lines[i + 1:j], i + 2, page)
            prose += [""] * (j - i + 1)
            i = j + 1
            continue
        prose.append(lines[i])
        i += 1
    n = 0
    for para in "\n".join(prose).split("\n\n"):
        for m in re.finditer(r"`([^`]+)`", para):
            if not is_ros2_command(m.group(1)):
                continue
            rest = para[m.end():]
            mark = _MARK.search(rest)
            eq = None
            if mark:
                nxt = re.search(r"`([^`]+)`|\[[^\]]*\]\(([^)\s]+)\)", rest[mark.end():])
                if nxt and nxt.group(1):
                    eq = Equivalent(text=" ".join(nxt.group(1).split()))
                elif nxt:
                    eq = _reference(nxt.group(2), page)
            line = n + para[:m.start()].count("\n") + 1
            out.append(Occurrence(page, line, " ".join(m.group(1).split()), eq))
        n += para.count("\n") + 2
    return sorted(out, key=lambda o: o.line)


def slug(title: str) -> str:
    """MyST's heading anchor (``myst_heading_anchors``): lower case, punctuation dropped, spaces ``-``."""
    t = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
    return re.sub(r"\s", "-", t)


def section_commands(page: Path, anchor: str) -> list:
    """The lines of the ``bash`` blocks of the section ``anchor`` of ``page`` (to its next heading
    of the same or a higher level); AssertionError if the page has no such section."""
    lines = page.read_text().splitlines()
    start = level = None
    fenced = False
    for k, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"(#+) (.*)$", line)
        if m and start is None and slug(m.group(2)) == anchor:
            start, level = k + 1, len(m.group(1))
        elif m and start is not None and len(m.group(1)) <= level:
            lines = lines[start:k]
            break
    else:
        if start is None:
            raise AssertionError(f"{page.relative_to(ROOT)} has no section #{anchor}")
        lines = lines[start:]
    out, block = [], None
    for line in lines:
        if block is None and line.strip() == "```bash":
            block = []
        elif block is not None and line.strip().startswith("```"):
            out += block
            block = None
        elif block is not None:
            block.append(line)
    assert out, f"{page.relative_to(ROOT)}#{anchor}: no bash block"
    return out


OCCURRENCES = [o for page in PAGES for o in page_occurrences(page)]


def test_every_ros2_command_of_the_docs_has_an_equivalent_beside_it():
    missing = [f"{o.page.relative_to(ROOT)}:{o.line}: {o.command}" for o in OCCURRENCES if o.equivalent is None]
    assert not missing, ("ros2 commands without a 'without ros2' equivalent beside them:\n" + "\n".join(missing))
    for o in OCCURRENCES:
        eq = o.equivalent
        assert not is_ros2_command(eq.text), f"{o.page.name}:{o.line}: the equivalent uses ros2: {eq.text}"
        if eq.page is not None:
            section_commands(eq.page, eq.anchor)        # the section exists and has commands
    assert len(OCCURRENCES) >= 30, len(OCCURRENCES)     # (the docs hold about 35: the finder finds them)


def test_the_finder_finds_a_bare_ros2_command_and_not_a_mention():
    """The check above can fail: a ros2 line with nothing beside it is missing; a mention of the
    tool is not a command; each form of the marker is read."""
    page = DOC / "howto" / "probe.md"
    text = ("Run `ros2 launch geodyn_ros sim.launch.py` now, with `ros2 launch` or `ros2 param set`.\n\n"
            "Or `ros2 launch geodyn_ros sim.launch.py` (without ros2: `geodyn_closed_loop`).\n\n"
            "```bash\nros2 param set /geodyn_controller kp_joint 60.0\nros2 topic hz /odom\n"
            "#   without ros2: python -m geodyn_ros2 topic hz /odom\n```\n\n"
            "```\n$ ros2 launch geodyn_ros geodyn.launch.py \"namespace:=robot 1\"\n[ERROR] no\n"
            "$ geodyn_node --namespace \"robot 1\"   # without ros2\n[FATAL] yes\n```\n")
    found = page_occurrences(page, text)
    assert [(o.command, o.equivalent and (o.equivalent.text or o.equivalent.anchor)) for o in found] == [
        ("ros2 launch geodyn_ros sim.launch.py", None),
        ("ros2 launch geodyn_ros sim.launch.py", "geodyn_closed_loop"),
        ("ros2 param set /geodyn_controller kp_joint 60.0", None),
        ("ros2 topic hz /odom", "python -m geodyn_ros2 topic hz /odom"),
        ('ros2 launch geodyn_ros geodyn.launch.py "namespace:=robot 1"', 'geodyn_node --namespace "robot 1"'),
    ], found
    assert found[-1].equivalent.expected == ["[FATAL] yes"]


# ------------------------------------------------------------------------------------- the runs
def _borinot():
    from geodyn_ros.vehicle.shipped import shipped_vehicle_files
    urdf, vehicle = shipped_vehicle_files("borinot_flying_arm_2")
    return str(urdf), str(vehicle)


def placeholders(tmp: Path) -> dict:
    """The docs' placeholders -> shipped files (longest first)."""
    urdf, vehicle = _borinot()
    table = {"/path/to/robot.urdf.xacro": "urdf/aerial_manipulator.urdf", "/path/to/robot.urdf": "urdf/aerial_manipulator.urdf",
             "/abs/path/my_robot.urdf": urdf, "/abs/path/my_vehicle.yaml": vehicle,
             "my_robot_gazebo.urdf": str(tmp / "my_robot_gazebo.urdf"),
             "my_robot.urdf": urdf, "my_vehicle.yaml": vehicle, "/tmp/": f"{tmp}/", "my_px4/": f"{tmp}/my_px4/"}
    return dict(sorted(table.items(), key=lambda kv: -len(kv[0])))


def _substitute(text: str, table: dict) -> str:
    """Every placeholder replaced in one pass (a replacement is not searched again: the temporary
    folder is itself under /tmp/)."""
    return re.sub("|".join(map(re.escape, table)), lambda m: table[m.group(0)], text)


def _distinct():
    out = {}
    for o in OCCURRENCES:
        if o.equivalent is not None:
            out.setdefault(o.equivalent.key, (o.equivalent, o))
    return out


EQUIVALENTS = _distinct()


class Processes:
    """The processes of one run: started by bash after the venv's activation, output collected."""

    def __init__(self, tmp: Path, env: dict):
        self.tmp, self.env, self.procs = tmp, env, []

    def activation(self) -> str:
        return f"source {shlex.quote(str(BIN / 'activate'))}"

    def start(self, command: str, prefix: str = "") -> dict:
        script = f"{self.activation()} && {prefix}\nexec {command}"
        p = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        os.set_blocking(p.stdout.fileno(), False)
        entry = {"command": command, "proc": p, "out": []}
        self.procs.append(entry)
        return entry

    def run(self, command: str, prefix: str = "", timeout: float = RUN_TIMEOUT):
        script = f"{self.activation()} && {prefix}\n{command}"
        return subprocess.run(["bash", "-c", script], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def pump(self, seconds: float = 0.5) -> None:
        """Read what the running processes printed for up to ``seconds`` (raw reads: a line left
        in a text buffer would never wake ``select``)."""
        live = {e["proc"].stdout.fileno(): e for e in self.procs if not e.get("closed")}
        end = time.monotonic() + seconds
        while live and time.monotonic() < end:
            ready, _, _ = select.select(list(live), [], [], max(0.0, end - time.monotonic()))
            if not ready:
                break
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if chunk:
                    live[fd]["out"].append(chunk.decode(errors="replace"))
                else:
                    live[fd]["closed"] = True
                    del live[fd]

    def text(self, entry=None) -> str:
        return "".join(line for e in ([entry] if entry else self.procs) for line in e["out"])

    def wait_for(self, pattern: str, entry=None, timeout: float = START_TIMEOUT) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump()
            if re.search(pattern, self.text(entry)):
                return
            dead = [e for e in (self.procs if entry is None else [entry]) if e["proc"].poll() is not None]
            if dead:
                self.pump()
                raise AssertionError(f"{dead[0]['command']} ended (exit {dead[0]['proc'].returncode}) before "
                                     f"{pattern!r}:\n{self.text()[-4000:]}")
        raise AssertionError(f"no {pattern!r} within {timeout:g} s:\n{self.text()[-4000:]}")

    def alive(self) -> None:
        self.pump()
        for e in self.procs:
            assert e["proc"].poll() is None, f"{e['command']} ended (exit {e['proc'].returncode}):\n{self.text(e)[-3000:]}"

    def stop(self) -> None:
        """SIGINT to every process (newest first), each must exit 0; no traceback, no [ERROR]/[FATAL]."""
        for e in reversed(self.procs):
            if e["proc"].poll() is None:
                os.killpg(e["proc"].pid, signal.SIGINT)
        bad = []
        for e in self.procs:
            end = time.monotonic() + STOP_TIMEOUT
            while e["proc"].poll() is None and time.monotonic() < end:
                self.pump(0.2)
            if e["proc"].poll() is None:
                os.killpg(e["proc"].pid, signal.SIGKILL)
                e["proc"].wait()
            self.pump(0.2)
            if e["proc"].returncode != 0:
                bad.append(f"{e['command']}: exit {e['proc'].returncode}")
        text = self.text()
        assert not bad and "Traceback" not in text and not re.search(r"\[(ERROR|FATAL)\]", text), \
            "\n".join(bad) + "\n" + text[-4000:]

    def kill(self) -> None:
        for e in self.procs:
            if e["proc"].poll() is None:
                os.killpg(e["proc"].pid, signal.SIGKILL)
                e["proc"].wait()


@pytest.fixture
def runner(tmp_path):
    """A ROS domain of this test alone, localhost discovery, the venv's scripts not on PATH (the
    activation puts them there), the package's share/ files linked (make venv's step 3)."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and Path(d).resolve() != BIN.resolve()) or "/usr/bin:/bin"
    env["ROS_DOMAIN_ID"] = str(worker_domain(100))     # 101-200: apart from ros_harness's 1-100
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    share = tmp_path / "prefix"
    subprocess.run([sys.executable, str(ROOT / "tools" / "link_share.py"), "--prefix", str(share)], check=True,
                   capture_output=True, timeout=120)
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(p for p in (str(share), env.get("AMENT_PREFIX_PATH", "")) if p)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    procs = Processes(tmp_path, env)
    try:
        yield procs
    finally:
        procs.kill()


#: what a node prints once it runs (geodyn_controller, geodyn_reference and geodyn_markers say nothing
#: at start: a tool addressed to them waits for their services itself, with --timeout)
READY = {"geodyn_node": r"geodyn_node\]: (input_mode|waiting for|model ')", "geodyn_sim": r"geodyn_sim\]: ",
         "geodyn_actuated_sim": r"geodyn_actuated_sim\]: model '", "geodyn_px4_sim": r"PX4 stand-in: ",
         "geodyn_actuated_controller": r"geodyn_actuated_controller\]: ",
         "geodyn_flat_controller": r"geodyn_flat_controller\]: model '", "geodyn_px4_bridge": r"geodyn_px4_bridge\]: "}
NODES = set(READY) | {"geodyn_controller", "geodyn_reference", "geodyn_markers"}
#: a node to start for a tool command addressed to it: executable -> ROS arguments
TARGETS = {
    "geodyn_controller": "-p urdf_path:=urdf/aerial_manipulator.urdf",
    "geodyn_actuated_controller": "-p urdf_path:=urdf/tilthex_manipulator.urdf.xacro -p actuation_config:=config/tilthex.yaml",
    "geodyn_flat_controller": "-p urdf_path:=urdf/hexarotor_manipulator.urdf.xacro -p actuation_config:=config/hexarotor.yaml",
    "geodyn_px4_bridge": "--params-file config/px4.yaml -p urdf_path:=urdf/hexarotor_manipulator.urdf.xacro "
                         "-p actuation_config:=config/hexarotor_px4.yaml",
    "geodyn_px4_sim": "--params-file config/px4.yaml -p urdf_path:=urdf/hexarotor_manipulator.urdf.xacro "
                      "-p actuation_config:=config/hexarotor_px4.yaml",
    "geodyn_reference": "-p trajectory:=waypoints -p mission:=config/mission_example.yaml "
                        "-p urdf_path:=urdf/hexarotor_manipulator.urdf.xacro -p actuation_config:=config/hexarotor.yaml",
}


def _start_target(run: Processes, node_path: str) -> None:
    """Start the node ``/ns/name`` (its executable is its name) and wait until it runs."""
    parts = node_path.strip("/").split("/")
    exe, ns = parts[-1], "/".join(parts[:-1])
    entry = run.start(f"{exe} {'--namespace ' + ns + ' ' if ns else ''}--ros-args {TARGETS[exe]}")
    if exe in READY:
        run.wait_for(READY[exe], entry)
    else:
        run.pump(5.0)
        run.alive()


def _run_tool(run: Processes, command: str) -> None:
    """``python -m geodyn_ros2 ...``: its target started first, then the command as written."""
    argv = shlex.split(command)[3:]
    verb = argv[0:2]
    if verb == ["pkg", "prefix"]:
        out = run.run(command)
        assert out.returncode == 0 and out.stdout.strip() == run.env["AMENT_PREFIX_PATH"].split(os.pathsep)[0], \
            (out.stdout, out.stderr[-2000:])
        return
    if verb[0] == "param":
        node = argv[2]
        _start_target(run, node)
        out = run.run(command.replace("geodyn_ros2 ", "geodyn_ros2 --timeout 120 ", 1))
        assert out.returncode == 0 and out.stdout.strip() == "Set parameter successful", (out.stdout, out.stderr[-2000:])
        import yaml
        want = yaml.safe_load(argv[4])
        got = run.run(f"python -m geodyn_ros2 --timeout 120 param get {node} {argv[3]}")
        value = yaml.safe_load(got.stdout.split(" is: ", 1)[-1].split(" are: ", 1)[-1])
        assert got.returncode == 0 and value == want, (got.stdout, want)
    elif verb == ["service", "call"]:
        _start_target(run, "/" + argv[2].strip("/").split("/")[0])
        out = run.run(command.replace("geodyn_ros2 ", "geodyn_ros2 --timeout 120 ", 1))
        assert out.returncode == 0 and "response:" in out.stdout and "std_srvs.srv.Trigger_Response(" in out.stdout, \
            (out.stdout, out.stderr[-2000:])
    elif verb == ["topic", "pub"]:
        assert argv[3] == "/mission/com_yaw", argv   # the docs' one: geodyn_reference's mission input
        _start_target(run, "/geodyn_reference")
        out = run.run(command.replace("geodyn_ros2 ", "geodyn_ros2 --timeout 120 ", 1))
        assert out.returncode == 0 and out.stdout.startswith("published once on /mission/com_yaw"), \
            (out.stdout, out.stderr[-2000:])
        run.wait_for(r"mission accepted: 2 waypoints", timeout=START_TIMEOUT)
    elif verb == ["topic", "hz"]:
        assert argv[2] == "/fmu/out/vehicle_odometry", argv   # the docs' one: the PX4 stand-in's
        _start_target(run, "/geodyn_px4_sim")
        out = run.run(command.replace("geodyn_ros2 ", "geodyn_ros2 --timeout 120 ", 1))
        assert out.returncode == 0 and re.search(r"average rate: \d+\.\d+", out.stdout), (out.stdout, out.stderr[-2000:])
    else:
        raise AssertionError(f"no runner for {command}")
    run.stop()


def _run_finite(run: Processes, command: str) -> None:
    out = run.run(command)
    assert out.returncode == 0, (command, out.stdout[-3000:], out.stderr[-3000:])
    words = shlex.split(command)
    if words[0] == "geodyn_closed_loop":
        rows = words[words.index("--rows") + 1].split(",") if "--rows" in words else None
        printed = re.findall(r"^(pd|rigid|ff0|ff1|ff2|lqr|lqr_thread|ideal)\s+\d", out.stdout, re.M) or \
            re.findall(r"^(with feedforward|feedback only|ff0|pd)\b", out.stdout, re.M)
        assert printed, out.stdout[-3000:]
        if rows:
            assert set(rows) <= set(printed), (rows, out.stdout[-3000:])
        if "--record" in words:
            assert Path(words[words.index("--record") + 1]).stat().st_size > 0
    elif "fly_closed_loop" in command:
        assert re.search(r"position RMS \d", out.stdout), out.stdout[-3000:]
    elif words[0] == "xacro":
        target = Path(words[-1])
        assert "<robot" in target.read_text() and "MulticopterMotorModel" in target.read_text()
    elif words[0] == "geodyn_warmup":
        assert "done: the kernels are cached" in out.stdout, out.stdout[-2000:]


#: the lines a cold start adds before a node's own output (geodyn_ros_entry: numba compiles the
#: kernels once after an install or an update; a warm start prints none of them)
_COLD_START = re.compile(r"^\[INFO\] \w+: (compiling|still compiling) the dynamics kernels")


def _run_transcript(run: Processes, command: str, expected: list) -> None:
    out = run.run(command)
    text = [ln for ln in (out.stdout + out.stderr).strip().splitlines() if not _COLD_START.match(ln)]
    assert text == expected, (text, expected)
    # a refusal the page shows ([FATAL]) exits non-zero (2: a bad option), anything else 0
    assert out.returncode == (2 if expected and expected[0].startswith("[FATAL]") else 0), out.returncode


def _run_node(run: Processes, command: str) -> None:
    exe = shlex.split(command)[0]
    entry = run.start(command)
    if exe in READY:
        run.wait_for(READY[exe], entry)
    run.pump(3.0)
    run.alive()
    run.stop()


def _run_group(run: Processes, lines: list, text: str) -> None:
    """The commands of a section: assignments kept for the later lines, ``&`` lines and nodes
    started, finite lines run in order; then the group's job checked (module docstring)."""
    prefix, logical, buf = [], [], ""
    for line in lines:
        line = line.split("  #", 1)[0].rstrip() if "  #" in line else line.rstrip()
        buf = buf + " " + line.strip() if buf else line.strip()
        if buf.endswith("\\"):
            buf = buf[:-1].rstrip()
            continue
        if buf:
            logical.append(buf)
        buf = ""
    for cmd in logical:
        if re.match(r"^([A-Z_]+=\S+\s*)+$", cmd) or re.match(r'^[A-Z_]+="[^"]*"$', cmd):
            prefix.append(cmd)
            continue
        background = cmd.endswith("&")
        cmd = cmd.rstrip("&").strip()
        exe = shlex.split(cmd)[0]
        if background or exe in NODES:
            entry = run.start(cmd, "\n".join(prefix))
            if exe in READY:
                run.wait_for(READY[exe], entry)
        else:
            out = run.run(cmd, "\n".join(prefix))
            assert out.returncode == 0, (cmd, out.stdout[-2000:], out.stderr[-2000:])
    if "arm_and_offboard_on_start:=true" in text:              # the PX4 stand-in: armed in offboard
        run.wait_for(r"arm: confirmed by vehicle_status \(armed, offboard\)")
    if "geodyn_markers" in text:                               # the markers arrive
        hz = run.run("python -m geodyn_ros2 --timeout 300 topic hz /geodyn_markers/markers --duration 5")
        assert hz.returncode == 0 and "average rate" in hz.stdout, (hz.stdout, hz.stderr, run.text()[-3000:])
    if "trajectory:=waypoints" in text:                        # the lock-step loop steps on the plan
        hz = run.run("python -m geodyn_ros2 --timeout 300 topic hz /clock --duration 5")
        assert hz.returncode == 0 and "average rate" in hz.stdout, (hz.stdout, hz.stderr, run.text()[-3000:])
    if "geodyn_sim " in text and "robot_description" in text:   # the model from the latched topic
        run.wait_for(r"geodyn_node\]: .*model 'aerial_manipulator'")
    run.pump(3.0)
    run.alive()
    run.stop()
    # issue 52.7: the simulators' start state no longer reaches a controller twice
    assert not re.search(r"skipping cycle: .*stamp 0\.000000000 s", run.text()), run.text()[-3000:]


@pytest.mark.parametrize("key", list(EQUIVALENTS), ids=["|".join(map(str, k))[:90] for k in EQUIVALENTS])
def test_the_equivalent_runs(key, runner, tmp_path):
    eq, where = EQUIVALENTS[key]
    table = placeholders(tmp_path)
    if eq.page is not None:
        raw = section_commands(eq.page, eq.anchor)
        if any("my_px4/" in ln for ln in raw):         # the page's recipe writes it first
            data = ROOT / "test" / "data"
            out = runner.run(f"geodyn_vehicle --urdf {data / 'quad_x_arm.urdf'} --vehicle {data / 'quad_x_arm_px4.yaml'} "
                             f"--px4 --out {tmp_path / 'my_px4'}")
            assert out.returncode == 0 and (tmp_path / "my_px4" / "px4_params.yaml").exists(), out.stderr[-2000:]
        lines = [_substitute(ln, table) for ln in raw]
        _run_group(runner, lines, "\n".join(lines))
        return
    command = _substitute(eq.text, table)
    first = shlex.split(command)[0]
    if eq.expected:
        _run_transcript(runner, command, eq.expected)
    elif command.startswith("python -m geodyn_ros2 "):
        _run_tool(runner, command)
    elif first in NODES:
        _run_node(runner, command)
    else:
        _run_finite(runner, command)
