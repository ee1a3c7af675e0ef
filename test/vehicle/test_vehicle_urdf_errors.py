"""The URDF's errors reach the user in the file form, and warnings in one line (issue 52 item 5).

As a user met them, through the installed ``geodyn_vehicle`` (a subprocess, the console script):

* a URDF with a link's ``<inertial>`` removed printed a Python warning with a source path, then a
  bare ``error: Singular matrix`` (numpy's, from the gain design's ``inv(M)``); now one line
  ``<urdf>: link 'link2': no <inertial>, ...; give it an <inertial> ...`` and exit 2;
* a ``base_link:`` typo gave ``base_link: unknown link 'base'``, with no file, no list of links and
  no fix; now ``<vehicle file>: base_link: no link 'base' in <urdf>; did you mean 'base_link'? (its
  links: ...)``;
* a warning (an implausible inertia, loaded as given) is one line ``URDFWarning: ...`` on stderr,
  never a source path or the code line, and the report still runs;
* the same one-line form for any script that loads a URDF (``python -c``), not only the console
  scripts.
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).parent / "geodyn_vehicle"
ARM_URDF = ROOT / "test" / "data" / "quad_x_arm.urdf"
ARM_VEHICLE = ROOT / "test" / "data" / "quad_x_arm.yaml"
LINK2_INERTIAL = ('    <inertial><origin xyz="0 0 -0.08"/><mass value="0.1"/>\n'
                  '      <inertia ixx="2.2e-4" ixy="0" ixz="0" iyy="2.2e-4" iyz="0" izz="5e-6"/></inertial>\n')


def run(*args):
    """The console script (the timeout covers a cold start, the kernels compiling, on a loaded
    machine); its ``[INFO]`` line about compiling the kernels on a first start is left out of
    ``stderr``."""
    out = subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL,
                         cwd=ROOT)
    out.stderr = "".join(ln for ln in out.stderr.splitlines(keepends=True)
                         if not ln.startswith("[INFO] vehicle_report: compiling the dynamics kernels"))
    return out


def _no_python_noise(text):
    assert "Traceback" not in text and ".py:" not in text and "Singular matrix" not in text, text


def test_a_link_without_inertial_is_one_file_line_naming_the_link_and_the_fix(tmp_path):
    text = ARM_URDF.read_text()
    assert text.count(LINK2_INERTIAL) == 1
    urdf = tmp_path / "arm_no_inertial.urdf"
    urdf.write_text(text.replace(LINK2_INERTIAL, ""))
    out = run("--urdf", str(urdf), "--vehicle", str(ARM_VEHICLE))
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    _no_python_noise(out.stderr)
    assert out.stderr == (f"geodyn_vehicle: error: {urdf}: link 'link2': no <inertial>, so joint 'J2' moves no mass and "
                          "no inertia and the mass matrix is singular at every configuration: the vehicle has no "
                          "forward dynamics to simulate or control; give it an <inertial> (mass and inertia), or make "
                          "the joint fixed\n"), out.stderr


def test_a_base_link_typo_lists_the_links_and_suggests_the_nearest(tmp_path):
    veh = tmp_path / "arm.yaml"
    veh.write_text("base_link: base\n" + ARM_VEHICLE.read_text())
    out = run("--urdf", str(ARM_URDF), "--vehicle", str(veh))
    assert out.returncode == 2, out.stderr
    _no_python_noise(out.stderr)
    assert out.stderr == (f"geodyn_vehicle: error: {veh}: base_link: no link 'base' in {ARM_URDF}; did you mean "
                          "'base_link'? (its links: base_link, link1, link2)\n"), out.stderr
    # a name near nothing: the list, and no guess
    veh.write_text("base_link: zzz\n" + ARM_VEHICLE.read_text())
    out = run("--urdf", str(ARM_URDF), "--vehicle", str(veh))
    assert out.returncode == 2 and out.stderr.endswith(
        f"{veh}: base_link: no link 'zzz' in {ARM_URDF}; give one of them (its links: base_link, link1, link2)\n"), \
        out.stderr


def test_a_warning_is_one_line_and_the_report_still_runs(tmp_path):
    """link2's inertia x 1e6 (kg mm^2 written as kg m^2): 2.2e2 kg m^2 on a 1.8 kg vehicle is above
    10 M L^2 = 18 kg m^2, below the 1.18e5 no body of 1 m can exceed: loaded as given, one line."""
    urdf = tmp_path / "arm_mm2.urdf"
    urdf.write_text(ARM_URDF.read_text().replace(
        'ixx="2.2e-4" ixy="0" ixz="0" iyy="2.2e-4" iyz="0" izz="5e-6"', 'ixx="220" ixy="0" ixz="0" iyy="220" iyz="0" izz="5"'))
    out = run("--urdf", str(urdf), "--vehicle", str(ARM_VEHICLE), "--json")
    _no_python_noise(out.stderr)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert re.fullmatch(rf"URDFWarning: {re.escape(str(urdf))}: link 'link2': principal moments \(5, 220, 220\) kg m\^2 "
                        r"are implausible for a robot of 1\.8 kg and 1 m \(above 18 kg m\^2, .*\); loaded as given",
                        lines[0]), lines[0]
    assert '"mass_kg"' in out.stdout or '"mass"' in out.stdout, out.stdout[:500]


def test_any_script_prints_the_packages_warnings_in_one_line(tmp_path):
    """``python -c`` loading a URDF with a triangle-inequality violation: one line, no source path;
    a warning that is not the package's keeps Python's own format."""
    code = ("import warnings, geodyn_ros as gd\n"
            "gd.load_urdf('<robot name=\"t\"><link name=\"b\"><inertial><mass value=\"1\"/>"
            "<inertia ixx=\"0.001\" iyy=\"0.001\" izz=\"0.01\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link></robot>')\n"
            "warnings.warn('not ours', UserWarning)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0].startswith("URDFWarning: link 'b': principal moments") and "triangle inequality" in lines[0], lines
    assert ".py:" not in lines[0]
    assert lines[1:] == ["<string>:3: UserWarning: not ours"], lines
