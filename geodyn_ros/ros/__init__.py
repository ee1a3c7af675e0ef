"""ROS 2 adapters of geodyn_ros: thin nodes over the ROS-free dynamics core.

Importing this subpackage needs ``rclpy`` and the standard message packages
(``std_msgs``, ``geometry_msgs``, ``sensor_msgs``, ``nav_msgs``, ``diagnostic_msgs``,
``rosgraph_msgs``); ``import geodyn_ros`` itself never does.

Modules
-------
``conversions``   stamps, poses, odometry (REP 105) and joint-name matching, ROS <-> numpy.
``jets``          the self-describing ``Float64MultiArray`` layouts of the reference and
                  feedforward jets and of the optional ``~/linearization`` (A, B) output
                  (see the README, *ROS interface*).
``diagnostics``   a small ``/diagnostics`` reporter with throttled warnings.
``params``        parameter declaration from a node's ``PARAMETERS`` table.
``description``   the robot model from a parameter or the ``robot_description`` topic
                  (background load, hand-over between callbacks, same-robot rule).
``geodyn_node``   the feedforward dynamics node (console script ``geodyn_node``).
``sim_node``      the MuJoCo simulator node (``geodyn_sim``).
``reference_node``  the Table 3 reference generator (``geodyn_reference``).
``controller_node`` the example tracking controller (``geodyn_controller``).
``closed_loop``   all four nodes in one process, headless (``geodyn_closed_loop``).
"""
