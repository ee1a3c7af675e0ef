"""Closed loops run in one process, without ROS (layer 3, above :mod:`geodyn_ros.control` and
:mod:`geodyn_ros.sim`, which it combines; below :mod:`geodyn_ros.ros` and
:mod:`geodyn_ros.examples`, which use it):

* :mod:`~geodyn_ros.loops.tracking`: the ideal-actuator loop on the Table 3 trajectory and the
  error metrics every loop logs (:class:`~geodyn_ros.loops.tracking.TrackingLog`);
* :mod:`~geodyn_ros.loops.actuated`: the actuated (tilted-rotor) aerial manipulator, rows
  pd / ff0 / ff1 / ff2 (the twin of the ROS loop);
* :mod:`~geodyn_ros.loops.lqr`: the geometric controller against the time-varying LQR;
* :mod:`~geodyn_ros.loops.underactuated`: the collinear hexarotor manipulator under the
  flatness-based controller (the README's under-actuated table, and the twin of the ROS loop).
* :mod:`~geodyn_ros.loops.report`: what the loops print: a line per row as it finishes (a
  progress bar on a terminal) and the text tables within 100 columns.
* :mod:`~geodyn_ros.loops.recording`: a flight as an MCAP file with ROS 2 schemas
  (``geodyn_fly --record``; the ROS loops write theirs through it too).

Importing this package imports neither rclpy nor mujoco (the simulator is imported when a loop
runs).
"""
