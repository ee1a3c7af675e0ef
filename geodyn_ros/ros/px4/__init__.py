"""PX4 (issue 44): the bridge ``geodyn_px4_bridge``, the ROS side of PX4's uXRCE-DDS interface, and
the simulator's PX4 stand-in ``geodyn_px4_sim``.

Layered above :mod:`geodyn_ros.ros.nodes` (it may import ``common``, ``wire``, ``inputs`` and
``nodes``; the nodes never import it): :mod:`.px4_wire` (px4_msgs in and out, the PX4 time rule),
:mod:`.offboard` (the offboard protocol, ROS-free), :mod:`.bridge_node` (the bridge),
:mod:`.standin_node` (the actuated simulator behind a PX4 stand-in).
"""
