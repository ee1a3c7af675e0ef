"""The bridge configuration generated from a vehicle file (geodyn_ros.vehicle.gz_bridge, issue 54).

Independent references: the shipped ``config/gz_bridge.yaml``, whose entries were checked in a
running gz-sim 8.14 (test/gazebo): for the demo vehicles' joints J2..J7 the generated entries must
equal it entry for entry; and the xacro the vehicle is spawned from (``vehicle_gazebo.urdf.xacro``),
whose ``ApplyJointForce`` plugins name exactly the joints that get a bridge entry.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from geodyn_ros.vehicle import load_vehicle
from geodyn_ros.vehicle.gz_bridge import arm_joints, bridge_entries, bridge_yaml

ROOT = Path(__file__).resolve().parents[2]
VEHICLES = ROOT / "config" / "vehicles"


def test_the_demo_vehicles_entries_are_the_shipped_file():
    shipped = yaml.safe_load((ROOT / "config" / "gz_bridge.yaml").read_text())
    assert bridge_entries([f"J{k}" for k in range(2, 8)]) == shipped


@pytest.mark.parametrize("name", sorted(p.stem for p in VEHICLES.glob("*.yaml")))
def test_a_vehicles_joints_are_the_xacros(name):
    """The joints bridged are those the spawned model's xacro gives a torque plugin."""
    xacro = pytest.importorskip("xacro")
    from geodyn_ros.vehicle.shipped import shipped_vehicle_files as shipped_vehicle
    urdf, vfile = shipped_vehicle(name)
    cfg = load_vehicle(vfile)
    extra = {}
    rot = yaml.safe_load(Path(vfile).read_text()).get("rotors")
    if isinstance(rot, dict) and "from_urdf" in rot:      # the xacro's documented rotor_links (its regex)
        import xml.etree.ElementTree as ET
        extra["rotor_links"] = ",".join(sorted(lk.get("name") for lk in ET.parse(urdf).getroot().iter("link")
                                               if re.search(rot["from_urdf"], lk.get("name"))))
    doc = xacro.process_file(str(ROOT / "urdf" / "vehicle_gazebo.urdf.xacro"),
                             mappings={"urdf": str(urdf), "vehicle": str(vfile), **extra}).toxml()
    plugged = re.findall(r'apply-joint-force-system"[^>]*>\s*<joint_name>([^<]+)</joint_name>', doc)
    joints = arm_joints(cfg)
    assert plugged == joints
    entries = bridge_entries(joints)
    efforts = [e["ros_topic_name"].split("/")[-1] for e in entries if e["ros_topic_name"].startswith("cmd/joint_effort/")]
    assert efforts == joints
    assert yaml.safe_load(bridge_yaml(joints)) == entries


@pytest.mark.parametrize("kw, says", [({"joints": ["J 2"]}, "joint: 'J 2' is not a gz/ROS name"),
                                      ({"joints": ["a", "a"]}, "joints: expected distinct names"),
                                      ({"joints": [], "model": "2x"}, "model: '2x' is not"),
                                      ({"joints": [], "world": ""}, "world: '' is not")])
def test_bad_names_are_refused_naming_the_argument(kw, says):
    with pytest.raises(ValueError, match=f"^{re.escape(says)}"):
        bridge_entries(**kw)


def test_geodyn_vehicle_writes_it(tmp_path):
    from geodyn_ros.vehicle.shipped import shipped_vehicle_files as shipped_vehicle
    urdf, vfile = shipped_vehicle("borinot_flying_arm_2")
    out = tmp_path / "bridge.yaml"
    exe = Path(sys.executable).parent / "geodyn_vehicle"
    res = subprocess.run([str(exe), "--urdf", str(urdf), "--vehicle", str(vfile), "--gz-bridge", str(out),
                          "--gz-model", "borinot"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    joints = arm_joints(load_vehicle(vfile))
    assert f"wrote {out} (ros_gz_bridge: {len(joints)} arm joint(s): {', '.join(joints)})" in res.stderr
    assert yaml.safe_load(out.read_text()) == bridge_entries(joints, "borinot")
    bad = subprocess.run([str(exe), "--urdf", str(urdf), "--vehicle", str(vfile), "--gz-bridge",
                          str(tmp_path / "no" / "dir" / "b.yaml")], capture_output=True, text=True, timeout=600,
                         cwd=ROOT)
    assert bad.returncode == 2 and "--gz-bridge: cannot write" in bad.stderr and bad.stderr.count("\n") == 1
