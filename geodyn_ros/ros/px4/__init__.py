"""The PX4 bridge (issue 44): ``geodyn_px4_bridge``, the ROS side of PX4's uXRCE-DDS interface.

Layered beside :mod:`geodyn_ros.ros.nodes` (it may import ``common``, ``wire`` and ``inputs``;
the nodes never import it): :mod:`.px4_wire` (px4_msgs in and out, the PX4 time rule),
:mod:`.offboard` (the offboard protocol, ROS-free), :mod:`.bridge_node` (the node).
"""
