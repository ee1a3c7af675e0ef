"""URDF reading through urdf_parser_py gives bit for bit the model of the ElementTree reader (issue 40).

``bench/core/urdf_bit_identity.py`` compares two loaders on every source: every Model field by bytes,
the warnings (category, text) in order, the ValueError text, the console. Here the new path
(``load_urdf``: urdf_parser_py, falling back to the ElementTree reader) is compared against the
committed ElementTree reader (``_load(..., reader="etree")``, the loader before issue 40, which
the bench also checks against the pre-change git revision). Each fallback case of
``geodyn_ros.model.urdf_dom`` is shown to take the ElementTree path, with its reason.
"""
import dataclasses
import io
import os
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "core"))

import urdf_bit_identity as bi  # noqa: E402

from geodyn_ros.model import urdf, urdf_dom  # noqa: E402

NEW, LEGACY = bi.loaders("legacy", "")

#: the shipped and example-robot-data documents that urdf_parser_py refuses: xacro macro files and
#: ur3.urdf without <robot name> (the loader refuses them all too: no <link>)
REFUSED_BY_URDFDOM = {"urdf/multirotor_gazebo_plugins.xacro", "urdf/multirotor_rotors.xacro",
                      "urdf/vehicle_gazebo_macros.xacro", "hector_description/robots/quadrotor_base.urdf.xacro",
                      "ur_description/urdf/ur3.urdf"}


def test_every_source_and_option_is_bit_identical_to_the_elementtree_reader():
    cases = bi.corpus()
    labels = [label for label, _, _ in cases]
    erd = [lb for lb in labels if lb.endswith(".urdf") and not lb.startswith(("urdf/", "test/"))]
    assert len(erd) >= 69, "example-robot-data 6.0.0 has 69 URDFs"
    fell_back, diffs = set(), []
    for label, src, kw in cases:
        diff, how = bi.compare(NEW, LEGACY, src, kw)
        if diff:
            diffs.append((label, diff))
        if how != "urdfdom" and not label.startswith("fallback:"):
            fell_back.add(label.split(" {")[0])
    assert diffs == []
    assert fell_back == REFUSED_BY_URDFDOM


@pytest.mark.parametrize("name", list(bi.FALLBACK_EXAMPLES))
def test_each_fallback_case_takes_the_elementtree_reader_and_gives_the_same_result(name):
    xml, reason = bi.FALLBACK_EXAMPLES[name]
    diff, how = bi.compare(NEW, LEGACY, xml, {})
    assert diff == []
    assert how.startswith("etree: " + reason), how
    m, _, _, _ = bi.run(NEW, xml, {})
    assert (m is None) == name.endswith("(refused)")


@pytest.mark.parametrize("name", list(bi.URDFDOM_EXAMPLES))
def test_the_delicate_documents_are_read_by_urdf_parser_py_with_the_same_result(name):
    diff, how = bi.compare(NEW, LEGACY, bi.URDFDOM_EXAMPLES[name], {})
    assert diff == [] and how == "urdfdom"


def test_a_malformed_number_in_an_ignored_tag_warns_on_the_urdf_parser_py_path():
    """The ignored joint tags are taken out before urdf_parser_py reads (it would refuse the file);
    the warning comes from the taken-out element's text."""
    xml = bi.URDFDOM_EXAMPLES["malformed number in <limit> (warns: urdfdom refuses it)"]
    model, err, ws, console = bi.run(NEW, xml, {})
    assert NEW.how == "urdfdom" and err is None and console == ""
    assert ws == [("URDFWarning", "joint 'j': <limit lower=\"-1.57.\"> is not a number; geodyn_ros ignores <limit>, "
                                  "but the ROS URDF parser (urdfdom, robot_state_publisher) will refuse this file")]
    from urdf_parser_py import urdf as up
    with redirect_stderr(io.StringIO()), pytest.raises(Exception, match="could not convert"):
        up.Robot.from_xml_string(xml.encode())         # what the fallback would otherwise be for


def test_urdf_parser_py_prints_nothing_and_its_hooks_are_restored(capfd):
    xml = bi.URDFDOM_EXAMPLES["gazebo, transmission, material, visual, unknown tags"]
    hooks = urdf_dom._core.on_error, urdf_dom._xmlr.on_error
    model, how = urdf._load(xml)
    assert how == "urdfdom" and model.joint_names == ("j",)
    urdf._load(bi.FALLBACK_EXAMPLES["<robot> without name"][0])          # a refusal inside the hook swap
    assert capfd.readouterr() == ("", "")
    assert (urdf_dom._core.on_error, urdf_dom._xmlr.on_error) == hooks
    from urdf_parser_py import urdf as up
    up.Robot.from_xml_string(bi._PAIR.replace("</robot>", '<ros2_control name="c"/></robot>').encode())
    assert "Unknown tag" in capfd.readouterr().err     # urdf_parser_py alone is chatty: the check above can fail


def test_the_comparison_can_fail():
    m = urdf.load_urdf(REPO / "urdf" / "aerial_manipulator.urdf")
    assert bi.model_diff(m, m) == []
    Y = m.Y.copy()
    Y[1, 0] = np.nextafter(Y[1, 0], 1.0)            # one bit
    assert bi.model_diff(m, dataclasses.replace(m, Y=Y)) == ["Y"]
    com = m.com.copy()
    com.flat[np.flatnonzero(com == 0.0)[0]] = -0.0      # equal for np.array_equal, not in bits
    assert np.array_equal(com, m.com) and bi.model_diff(m, dataclasses.replace(m, com=com)) == ["com"]
    assert bi.model_diff(m, dataclasses.replace(m, joint_names=m.joint_names[::-1])) == ["joint_names"]
    assert not bi._same({"a": 1, "b": 2}, {"b": 2, "a": 1})          # dict order counts
    assert not bi._same(("x", 1.0, 0.0), ("x", 1.0, -0.0))

    class Loud:
        how = "urdfdom"

        def __call__(self, source, **kw):
            print("Unknown tag")
            import warnings
            warnings.warn("extra", UserWarning)
            return LEGACY(source, **kw)
    diff, _ = bi.compare(Loud(), LEGACY, REPO / "urdf" / "aerial_manipulator.urdf", {})
    assert any(d.startswith("warnings") for d in diff) and any(d.startswith("console") for d in diff)

    class Refuses(Loud):
        def __call__(self, source, **kw):
            raise ValueError("no")
    diff, _ = bi.compare(Refuses(), LEGACY, REPO / "urdf" / "aerial_manipulator.urdf", {})
    assert diff[0].startswith("error") and "one loaded, the other did not" in diff


def test_lock_joints_xml_gives_the_locked_model():
    text = (REPO / "urdf" / "aerial_manipulator.urdf").read_text()
    locked = {"J2": 0.3, "J5": 0.0}
    a = urdf.load_urdf(urdf.lock_joints_xml(text, locked))
    b = urdf.load_urdf(text, locked_joints=locked)
    assert bi.model_diff(a, b) == [] and "J2" not in a.joint_names


def test_the_suite_s_inline_urdfs_are_bit_identical(tmp_path):
    """The bench's --suite mode: test_urdf_loader.py's inline strings and tmp files, each load compared."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, str(REPO / "bench" / "core" / "urdf_bit_identity.py"), "--old", "legacy",
                        "--suite", str(REPO / "test" / "model" / "test_urdf_loader.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    n, total = int(last.split()[0]), int(last.split()[2])
    assert n == total and total > len(bi.corpus()) + 20, last       # the corpus plus the suite's loads
