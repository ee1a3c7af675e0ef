"""``geodyn_reference``: publishes a reference trajectory with exact derivatives.

``trajectory: table3`` (default; a fully actuated base): topic ``reference`` (reference-jet
``std_msgs/Float64MultiArray``, layout in :mod:`geodyn_ros.ros.jets`): base pose, spatial twist
jet ``V^(0..order+2)`` and joint jets ``q^(0..order+2)`` of
:func:`geodyn_ros.trajectories.table3_reference` at trajectory time ``t - start_time`` (clamped at
0 before the start), stamped with ``t``.

``trajectory: figure_eight`` (an under-actuated, collinear multirotor): topic ``flat_reference``
(flat-reference jet, :mod:`geodyn_ros.ros.jets`): the flat outputs of
:func:`geodyn_ros.trajectories.figure_eight_reference` -- system CoM, Z-Y-X base yaw and joints --
with rows ``0..order+4`` (what ``geodyn_node`` in ``input_mode: flat`` of order ``order`` reads), at
trajectory time ``speed (t - start_time)`` (not clamped: the formulas hold before the start too).

With ``use_sim_time`` the node publishes one sample for every new simulated time it receives on
``/clock`` (so a lock-step simulator gets a reference for each of its steps); otherwise it
publishes at ``rate_hz`` on the wall clock.
"""
from __future__ import annotations

from rclpy.node import Node
from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import Float64MultiArray

from geodyn_ros.trajectories import TABLE3_JOINT_NAMES, figure_eight_reference, table3_reference

from .conversions import stamp_to_ns
from .diagnostics import guard, guard_time_source
from .jets import make_flat_reference_msg, make_reference_msg
from .params import ConfigurationError, declare_parameters
from .runtime import control_qos, run_nodes

__all__ = ["PARAMETERS", "ReferenceNode", "main"]

TRAJECTORIES = ("table3", "figure_eight")

PARAMETERS = {
    "trajectory": ("table3", "Trajectory to publish: 'table3' (paper Sec. 7, Table 3; topic reference) or "
                   "'figure_eight' (flat outputs of the under-actuated vehicle: CoM figure eight, yaw sweep, "
                   "swinging arms; topic flat_reference)."),
    "order": (2, "Dynamics order r of the consumers: table3 publishes V^(0..r+2), q^(0..r+2); figure_eight "
              "rows 0..r+4 of the CoM, yaw and joints."),
    "speed": (1.0, "figure_eight: time scaling of the reference (2 = twice as fast); table3 ignores it."),
    "rate_hz": (1000.0, "Publication rate on the wall clock (ignored with use_sim_time)."),
    "start_time": (0.0, "Node-clock time [s] at which the trajectory time is 0."),
    "world_frame": ("world", "Frame of the published base pose."),
    "qos_depth": (2, "Keep-last depth of the reference topic."),
}


class ReferenceNode(Node):
    """Reference generator: Table 3 or the flat figure eight (see the module docstring)."""

    def __init__(self, node_name: str = "geodyn_reference", **kwargs):
        super().__init__(node_name, **kwargs)
        p = declare_parameters(self, PARAMETERS)
        if p["trajectory"] not in TRAJECTORIES:
            raise ConfigurationError(f"parameter 'trajectory': must be one of {TRAJECTORIES}, got "
                                     f"'{p['trajectory']}'")
        if not (p["speed"] > 0 and p["speed"] < float("inf")):
            raise ConfigurationError(f"parameter 'speed': must be a finite number > 0, got {p['speed']}")
        self.flat = p["trajectory"] == "figure_eight"
        self.speed = float(p["speed"])
        if p["order"] < 0:
            raise ConfigurationError(f"parameter 'order': must be >= 0, got {p['order']}")
        if not p["rate_hz"] > 0:
            raise ConfigurationError(f"parameter 'rate_hz': must be > 0, got {p['rate_hz']}")
        self.order = p["order"]
        self.start_ns = int(round(p["start_time"] * 1e9))
        self._msg = Float64MultiArray()
        self.pub = self.create_publisher(Float64MultiArray, "flat_reference" if self.flat else "reference",
                                         control_qos(p["qos_depth"]))
        if self.get_parameter("use_sim_time").value:
            self.create_subscription(ClockMsg, "/clock", guard(self, self._on_clock, "/clock"), control_qos(10))
        else:
            self.create_timer(1.0 / p["rate_hz"], guard(self, self._on_timer, "publish timer"))
        guard_time_source(self)

    def sample_msg(self, stamp_ns: int) -> Float64MultiArray:
        """The reference message for node-clock time ``stamp_ns``."""
        if self.flat:
            ref = figure_eight_reference((stamp_ns - self.start_ns) * 1e-9, self.order + 2, speed=self.speed)
            K1 = self.order + 5
            return make_flat_reference_msg(stamp_ns, ref.com[:K1], ref.yaw[:K1], ref.q[:K1], TABLE3_JOINT_NAMES,
                                           self._msg)
        t = max(0.0, (stamp_ns - self.start_ns) * 1e-9)
        ref = table3_reference(t, self.order + 1)
        K1 = self.order + 3
        return make_reference_msg(stamp_ns, ref.base_pose, ref.base_twist[:K1], ref.q[:K1],
                                  TABLE3_JOINT_NAMES, self._msg)

    def _on_clock(self, msg) -> None:
        # A repeated /clock (the lock-step simulator republishing while it waits) is answered
        # again, so a consumer that missed the first sample still gets it.
        self.pub.publish(self.sample_msg(stamp_to_ns(msg.clock)))

    def _on_timer(self) -> None:
        self.pub.publish(self.sample_msg(self.get_clock().now().nanoseconds))


def main(args=None) -> int:
    """Console script ``geodyn_reference``."""
    return run_nodes([ReferenceNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
