"""The PX4 messages of the bridge: decoding what PX4 publishes, building what it reads, and the
rule that maps PX4's timestamps to ROS time.

PX4 facts are from PX4-Autopilot main at commit ``b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf``
(2025-06-10, :data:`geodyn_ros.px4.allocation.PX4_COMMIT`, the line of release 1.16) and the
message layouts of px4_msgs 1.16.0 (tag v1.16.0, 392e831c1f65; the fixture ``tools/px4_msgs``).

**Timestamps** (``Tools/msg/templates/ucdr/msg.h.em`` and ``src/modules/uxrce_dds_client/
uxrce_dds_client.cpp``, ``on_time``; ``module.yaml`` ``UXRCE_DDS_SYNCT``, default 1): PX4's
``timestamp`` and ``timestamp_sample`` are microseconds of PX4's monotonic clock
(``hrt_absolute_time``, from boot). With ``UXRCE_DDS_SYNCT = 1`` the client measures the offset
between that clock and the agent's clock and **adds it to both fields of every message it
sends**, so they arrive in the agent's clock (its system time); with 0 they arrive in PX4's boot
time. Going in, a field of 0 is replaced by PX4's own receive time, another value has the offset
subtracted and is capped at PX4's now. The bridge therefore sends ``timestamp = 0`` (PX4 stamps
each message on arrival, whatever the clocks: no clock of this side can make PX4's offboard
check, ``offboardCheck.cpp``, see a stale or future proof of life).

**The rule for odometry** (:class:`StampMapper`): whichever clock PX4's stamps are in, the
bridge stamps ``odom`` with ``timestamp_sample + offset``, ``offset`` the smallest
``receive_time - timestamp_sample`` seen over the last one to two ``window`` (the receive time
is the node's clock: ROS time, or simulated time with ``use_sim_time``). If the delivery delay
``d`` of a sample is ``d_min + e`` with ``d_min`` the smallest delay in that window, the stamp is
``true_sample_time + d_min`` (in the node's clock): late by at most the smallest transport delay
seen, never later than the receive time, never earlier than the sample (plus the two clocks'
drift over two windows: 100 ppm x 2 s = 0.2 ms for quartz clocks at the default 1 s window, 0
for one machine's clock; PX4 SITL with SIH runs its clock about 1.2 % slow of the wall clock,
measured here: 24 ms). A sample older than the previous one is refused; a jump back of more
than :data:`RESET_US` (PX4 rebooted without time sync) restarts the estimate.
"""
from __future__ import annotations

import math

import numpy as np
from nav_msgs.msg import Odometry

from ...px4.frames import odometry_to_ros
from ..wire.actuator_commands import rotor_speed_values
from ..wire.conversions import InputError, set_stamp

__all__ = ["StampMapper", "odometry_state", "odometry_msg", "rotor_speeds", "RESET_US", "MAX_POSITION",
           "MAX_SPEED", "MAX_RATE", "MAX_CONTROLS"]

#: [µs] a ``timestamp_sample`` this much before the previous one restarts the offset estimate
#: (PX4 rebooted, or its time sync re-converged): longer than any transport delay
RESET_US = 1_000_000
#: [m] a local NED position beyond this is refused: more than the Earth's radius (6.4e6 m) from
#: PX4's local origin cannot be a local position
MAX_POSITION = 1.0e7
#: [m/s] a speed beyond this is refused: three times the speed of sound
MAX_SPEED = 1.0e3
#: [rad/s] an angular rate beyond this is refused: 160 turns a second, far beyond any airframe
MAX_RATE = 1.0e3
#: ``ActuatorMotors.NUM_CONTROLS`` (px4_msgs 1.16.0 ``msg/ActuatorMotors.msg``)
MAX_CONTROLS = 12


class StampMapper:
    """PX4 microseconds -> the node's nanoseconds by the running-minimum offset (module docstring).

    ``window_ns``: the offset is the minimum over the current and the previous window.
    """

    def __init__(self, window_ns: int):
        if not (isinstance(window_ns, int) and window_ns > 0):
            raise ValueError(f"window_ns: expected a positive integer, got {window_ns!r}")
        self.window_ns = window_ns
        self.reset()

    def reset(self) -> None:
        self.last_us = None           # the previous accepted sample [µs]
        self.start_ns = None          # the current window's start [ns, node clock]
        self.cur = self.prev = math.inf   # the minimum offset of the current / previous window [ns]
        self.resets = 0 if not hasattr(self, "resets") else self.resets

    @property
    def offset_ns(self):
        """The offset in use [ns] (``inf`` before the first sample)."""
        return min(self.cur, self.prev)

    def __call__(self, sample_us: int, receive_ns: int) -> int:
        """The node-clock stamp [ns] of a PX4 sample taken at ``sample_us`` [µs] and received at
        ``receive_ns`` [ns]; :class:`InputError` for a sample older than the previous one."""
        if self.last_us is not None and sample_us <= self.last_us:
            if self.last_us - sample_us > RESET_US:
                self.reset()
                self.resets += 1
            else:
                raise InputError(f"vehicle_odometry: timestamp_sample {sample_us} us is not newer than the "
                                 f"previous {self.last_us} us (stale or repeated sample)")
        if self.start_ns is None or receive_ns < self.start_ns:
            self.start_ns, self.cur, self.prev = receive_ns, math.inf, math.inf
        elif receive_ns - self.start_ns >= self.window_ns:
            self.start_ns, self.prev, self.cur = receive_ns, self.cur, math.inf
        self.cur = min(self.cur, receive_ns - 1000 * sample_us)
        self.last_us = sample_us
        return 1000 * sample_us + self.offset_ns


def _bounded(name: str, v, bound: float) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    if not np.isfinite(a).all():
        raise InputError(f"vehicle_odometry: {name}: NaN or Inf (PX4 marks an invalid field with NaN)")
    if np.abs(a).max() > bound:
        raise InputError(f"vehicle_odometry: {name}: {np.abs(a).max():.6g} is beyond {bound:g}")
    return a


def odometry_state(msg):
    """``(sample_us, C (4, 4), w_b (3,), v_b (3,))`` of a ``px4_msgs/VehicleOdometry`` (fields of
    px4_msgs 1.16.0 ``msg/VehicleOdometry.msg``; frames :func:`geodyn_ros.px4.frames.odometry_to_ros`):
    the base pose in the z-up world (ENU for a NED pose), the body angular and linear velocity in
    FLU base axes [rad/s, m/s]. ``sample_us`` is ``timestamp_sample``, or ``timestamp`` when that
    is 0. :class:`InputError` (one line naming the field) for NaN/Inf fields (PX4's "invalid"),
    unknown frames, a non-unit ``q``, values beyond :data:`MAX_POSITION`, :data:`MAX_SPEED`,
    :data:`MAX_RATE`, or no timestamp."""
    sample = int(msg.timestamp_sample) or int(msg.timestamp)
    if sample == 0:
        raise InputError("vehicle_odometry: timestamp and timestamp_sample are 0 (no time)")
    position = _bounded("position", msg.position, MAX_POSITION)
    velocity = _bounded("velocity", msg.velocity, MAX_SPEED)
    rate = _bounded("angular_velocity", msg.angular_velocity, MAX_RATE)
    try:
        C, w_b, v_b = odometry_to_ros(position, np.asarray(msg.q, dtype=np.float64), velocity, rate,
                                      pose_frame=int(msg.pose_frame), velocity_frame=int(msg.velocity_frame))
    except ValueError as exc:
        raise InputError(f"vehicle_odometry: {exc}") from None
    return sample, C, w_b, v_b


def odometry_msg(stamp_ns: int, C, w_b, v_b, frame_id: str, child_frame_id: str) -> Odometry:
    """``nav_msgs/Odometry`` (REP 105): pose ``C`` (4, 4) of ``child_frame_id`` in ``frame_id``
    [m], twist ``(w_b, v_b)`` [rad/s, m/s] in ``child_frame_id``'s axes; covariances left 0."""
    from ...lie import matrix_to_quat
    m = Odometry()
    set_stamp(m.header.stamp, stamp_ns)
    m.header.frame_id, m.child_frame_id = frame_id, child_frame_id
    p, o = m.pose.pose.position, m.pose.pose.orientation
    p.x, p.y, p.z = (float(x) for x in C[:3, 3])
    o.x, o.y, o.z, o.w = (float(x) for x in matrix_to_quat(C[:3, :3], "xyzw"))
    t = m.twist.twist
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in w_b)
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v_b)
    return m


def rotor_speeds(msg, n: int, omega_max) -> np.ndarray:
    """The (n,) commanded rotor speeds [rad/s] of a ``cmd/rotor_speeds`` message
    (``actuator_msgs/Actuators`` ``velocity``, or the ``std_msgs/Float64MultiArray`` fallback
    ``data`` with at most one dimension describing them; :mod:`geodyn_ros.ros.wire.actuator_commands`).
    :class:`InputError` for a wrong count, NaN/Inf, a negative speed (the bridge drives
    non-reversible motors) or one above the rotor's ``max_rot_velocity`` ``omega_max`` (n,)."""
    values = rotor_speed_values(msg)
    if len(values) != n:
        raise InputError(f"cmd/rotor_speeds: {len(values)} speeds, the vehicle has {n} rotors")
    om = np.array(values, dtype=np.float64)
    if not np.isfinite(om).all():
        raise InputError("cmd/rotor_speeds: NaN or Inf")
    if (om < 0).any():
        raise InputError(f"cmd/rotor_speeds: negative speed {om.min():.6g} rad/s; speeds must be >= 0")
    over = om - np.asarray(omega_max)
    if (over > 0).any():
        i = int(np.argmax(over))
        raise InputError(f"cmd/rotor_speeds: rotor {i} at {om[i]:.6g} rad/s is above its max_rot_velocity "
                         f"{float(np.broadcast_to(omega_max, om.shape)[i]):.6g} rad/s")
    return om
