"""Waypoint planning in flat outputs with a whole-body feasibility check (ROS-free).

A layer above :mod:`geodyn_ros.control`: it uses the model, the flat map
(:func:`geodyn_ros.flat_inverse_dynamics`), the rotor allocation and the references' layout
(:class:`~geodyn_ros.trajectories.FlatReference`); nothing below imports it.

* :func:`plan_mission`: minimum-derivative piecewise polynomials through CoM, yaw and joint
  waypoints (:mod:`~geodyn_ros.planning.planner`, :mod:`~geodyn_ros.planning.polynomial`), a
  :class:`FlatTrajectory` the loops fly like the built-in references;
* :func:`check_feasibility`: rotor speeds, rotor lag and joint/motor torques along the plan through
  the exact flat map, and the rigid baselines :func:`check_rigid_rates` (mav_trajectory_generation's
  check) and ``check_feasibility(..., frozen_arm=True)`` (:mod:`~geodyn_ros.planning.feasibility`);
* :func:`fastest_scaling`: the fastest uniform time scaling that keeps a margin, and
  :func:`fastest_segment_times` per segment after it (:mod:`~geodyn_ros.planning.scaling`).
"""
from .feasibility import FeasibilityReport, RateLimits, Vehicle, check_feasibility, check_rigid_rates, sample_times
from .planner import FlatTrajectory, allocate_times, plan_mission
from .polynomial import PiecewisePolynomial, minimum_derivative, objective_order
from .scaling import ScalingResult, SegmentTimesResult, fastest_scaling, fastest_segment_times

__all__ = ["plan_mission", "allocate_times", "FlatTrajectory", "PiecewisePolynomial", "minimum_derivative",
           "objective_order", "Vehicle", "FeasibilityReport", "RateLimits", "check_feasibility", "check_rigid_rates",
           "sample_times", "fastest_scaling", "ScalingResult", "fastest_segment_times", "SegmentTimesResult"]
