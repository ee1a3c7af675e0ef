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
``interfaces``    the executables and the topics of each node (``--help``, the docs' node list).
``cdr``           strict decoding of the raw (serialized) inputs, equal to rclpy's, with size limits.
``input_sync``    stamp-matched inputs of ``geodyn_node`` (approximate-time pairs, the sampled reference).
``plausibility``, ``geodyn_params``  ``geodyn_node``'s input limits and its parameter table and model loading.
``geodyn_node``   the feedforward dynamics node (console script ``geodyn_node``).
``sim_node``, ``actuated_sim_node``  the MuJoCo simulator nodes (``geodyn_sim``, ``geodyn_actuated_sim``).
``reference_node``  the reference generator (``geodyn_reference``).
``controller_node``, ``actuated_controller_node``, ``flat_controller_node``  the controllers.
``closed_loop``   a whole loop in one process, headless (``geodyn_closed_loop``).
``fly_closed_loop``  a user's vehicle file over ROS: the nodes of ``fly.launch.py``, in one process too.
"""
