"""Whole ROS 2 loops in one process, headless (the top of ``geodyn_ros.ros``).

``loop_session``              the shared set-up (context, nodes, executor, lock-step spin, recorder).
``closed_loop``               ``geodyn_closed_loop``: the ideal-actuator loop, and the dispatcher of the others.
``actuated_closed_loop``      the actuated (tilted-rotor) loop over ROS.
``underactuated_closed_loop`` the flatness loop over ROS.
``fly_closed_loop``           a user's vehicle file over ROS (the nodes of ``fly.launch.py``).
"""
