"""What every geodyn_ros node shares (the bottom of ``geodyn_ros.ros``; imports no other subpackage).

``params``        parameter declaration from a node's ``PARAMETERS`` table, ``ConfigurationError``.
``runtime``       signals, QoS profiles and the spin loop of the executables (``run_nodes``).
``diagnostics``   a small ``/diagnostics`` reporter with throttled warnings, and the callback guard.
``description``   the robot model from a parameter or the ``robot_description`` topic (background
                  load, hand-over between callbacks, same-robot rule).
``interfaces``    the executables and the topics of each node (``--help``, the docs' node list); no rclpy.
"""
