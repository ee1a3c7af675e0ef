"""Closed loops run in one process, without ROS (layer 3, above :mod:`geodyn_ros.control` and
:mod:`geodyn_ros.sim`, which it combines; below :mod:`geodyn_ros.ros` and
:mod:`geodyn_ros.examples`, which use it):

* :mod:`~geodyn_ros.loops.underactuated`: the collinear hexarotor manipulator under the
  flatness-based controller (the README's under-actuated table, and the twin of the ROS loop).

Importing this package imports neither rclpy nor mujoco (the simulator is imported when a loop
runs).
"""
