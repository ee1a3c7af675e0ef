"""Wire formats of geodyn_ros: ROS messages <-> numpy (imports only ``common``).

``conversions``        stamps, poses, odometry (REP 105) and joint-name matching.
``cdr``                strict decoding of serialized messages, equal to rclpy's, with size limits.
``jets``               the self-describing ``Float64MultiArray`` layouts of the reference and
                       feedforward jets and of the optional ``~/linearization`` (A, B) output.
``typed``              the typed messages of ``geodyn_msgs`` <-> arrays (the layouts' successors).
``typed_raw``          the typed messages' serialized output templates and strict input decoders.
``fast_inputs``        ``geodyn_node``'s compiled decoders of its inputs (one call per message).
``raw_outputs``        ``geodyn_node``'s compiled writers of its serialized outputs.
``actuator_commands``  the rotor-command messages (``actuator_msgs/Actuators`` or the fallback).
"""
