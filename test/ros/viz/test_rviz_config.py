"""config/geodyn.rviz names only what the nodes really publish, and the launch files bring up
geodyn_markers.

RViz is not installable here, so the file is checked as data: it parses as YAML (RViz2's format),
its fixed frame is the simulators' world frame, and every topic a display subscribes is resolved
against a running graph (the actuated simulator, geodyn_reference and geodyn_markers started in
process with the harness): the topic exists with the message type that display reads, has a
publisher, and where the display asks for transient-local durability (the latched
robot_description and planned_path) the publisher offers it (else RViz would never match it).
"""
from __future__ import annotations

from pathlib import Path

import yaml
from ros_harness import Harness  # noqa: F401,I100  (imported first: it sets the ROS isolation env)

from rclpy.qos import DurabilityPolicy
from visualization_msgs.msg import MarkerArray

from geodyn_ros.loops.actuated import tilthex_source
from geodyn_ros.ros.nodes.actuated_sim_node import PARAMETERS as SIM_PARAMETERS
from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode
from geodyn_ros.ros.nodes.markers_node import NAMESPACES, MarkersNode
from geodyn_ros.ros.nodes.reference_node import ReferenceNode

REPO = Path(__file__).resolve().parents[3]
RVIZ = REPO / "config" / "geodyn.rviz"
#: RViz2 display class -> the message type it subscribes (rviz_default_plugins)
DISPLAY_TYPES = {"rviz_default_plugins/RobotModel": "std_msgs/msg/String",
                 "rviz_default_plugins/MarkerArray": "visualization_msgs/msg/MarkerArray",
                 "rviz_default_plugins/Path": "nav_msgs/msg/Path"}


def _config():
    return yaml.safe_load(RVIZ.read_text())


def _display_topics(cfg):
    """[(display class, topic, durability)] of the displays that subscribe a topic."""
    out = []
    for d in cfg["Visualization Manager"]["Displays"]:
        t = d.get("Description Topic") or d.get("Topic")
        if t is not None:
            out.append((d["Class"], t["Value"], t.get("Durability Policy", "Volatile")))
    return out


def test_rviz_config_parses_and_shows_everything():
    cfg = _config()
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] == SIM_PARAMETERS["world_frame"][0] == "world"
    classes = [d["Class"] for d in vm["Displays"]]
    for c in ("rviz_default_plugins/RobotModel", "rviz_default_plugins/TF", "rviz_default_plugins/MarkerArray",
              "rviz_default_plugins/Path"):
        assert c in classes
    robot = next(d for d in vm["Displays"] if d["Class"].endswith("/RobotModel"))
    assert robot["Description Source"] == "Topic"
    markers = next(d for d in vm["Displays"] if d["Class"].endswith("/MarkerArray"))
    assert set(markers["Namespaces"]) == set(NAMESPACES)
    assert {c for c, _, _ in _display_topics(cfg)} <= set(DISPLAY_TYPES)


def test_rviz_topics_exist_in_the_running_graph(h):
    h.make(ActuatedSimNode, {"urdf_path": str(tilthex_source())})
    h.make(ReferenceNode, {"trajectory": "waypoints"})   # planned_path: the planned missions
    h.make(MarkersNode, {"urdf_path": str(tilthex_source()), "actuation_config": "config/tilthex.yaml"})
    h.probe.create_subscription(MarkerArray, "/geodyn_markers/markers", lambda m: None, 10)   # as RViz
    want = _display_topics(_config()) + [("rviz_default_plugins/TF", "/tf", "Volatile"),
                                         ("rviz_default_plugins/TF", "/tf_static", "Transient Local")]
    types = {"rviz_default_plugins/TF": "tf2_msgs/msg/TFMessage", **DISPLAY_TYPES}

    def graph():
        return dict(h.probe.get_topic_names_and_types())

    assert h.spin_until(lambda: all(t in graph() for _, t, _ in want), 10.0), \
        sorted(set(t for _, t, _ in want) - set(graph()))
    g = graph()
    for cls, topic, durability in want:
        assert g[topic] == [types[cls]], (topic, g[topic])
        pubs = h.probe.get_publishers_info_by_topic(topic)
        assert pubs, f"{topic}: no publisher"
        if durability == "Transient Local":
            assert any(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in pubs), topic


def test_launch_files_bring_up_markers_and_rviz(stub_launch):
    """sim.launch.py, actuated_sim.launch.py and underactuated_sim.launch.py: geodyn_markers under markers:=true (default false),
    rviz2 with config/geodyn.rviz under rviz:=true; the actuated one reads the body jet and the rotors."""
    from launch_stubs import _is_launch_config, _Launch

    for filename in ("sim.launch.py", "actuated_sim.launch.py", "underactuated_sim.launch.py"):
        launch = _Launch(filename)
        assert launch.declared["markers"].kwargs["default_value"] == "false"
        assert launch.declared["rviz"].kwargs["default_value"] == "false"
        node = next(n for n in launch.geodyn_nodes() if n.kwargs["executable"] == "geodyn_markers")
        assert _is_launch_config(node.kwargs["condition"].arg(0, "predicate_expression"), "markers")
        rviz = next(n for n in launch.nodes if n.kwargs.get("package") == "rviz2")
        assert _is_launch_config(rviz.kwargs["condition"].arg(0, "predicate_expression"), "rviz")
        assert rviz.kwargs["arguments"][0] == "-d" and rviz.kwargs["arguments"][1].args[0][-1] == "geodyn.rviz"
        params = _Launch.inline_params(node)
        if filename.startswith("actuated"):
            assert params["wrench_representation"] == "body"
            assert params["actuation_config"].args[0][-1] == "tilthex.yaml"
