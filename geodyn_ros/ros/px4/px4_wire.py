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
bridge stamps ``odom`` with ``min(timestamp_sample + offset, receive_time)``, ``offset`` the
**second smallest** ``receive_time - timestamp_sample`` seen over the current and the previous
``window`` (the receive time is the node's clock: ROS time, or simulated time with
``use_sim_time``). For honest samples, each ``receive - sample`` is the clock offset plus a
delivery delay ``d >= 0``, so the stamp is ``true_sample_time + d_2`` (in the node's clock) with
``d_2`` the second smallest delay of the window, or the sample's own delay if smaller (or a
nanosecond after the previous stamp, where the offset just fell: the stamps increase): never
later than the receive time, never earlier than the sample (plus the two clocks' drift over two
windows: 100 ppm x 2 s = 0.2 ms for quartz clocks at the default 1 s window, 0 for one machine's
clock; PX4 SITL with SIH runs its clock about 1.2 % slow of the wall clock, measured here: 24 ms).

**No sample can poison it** (issue 51). The second smallest, not the smallest: one sample never
moves the reference, however it is dated. A sample dated more than :data:`AHEAD_NS` ahead of the
reference (``receive - sample`` that much below the offset: it would have arrived before it was
taken) is refused and changes nothing: neither the reference nor the "newer than the previous"
rule. So is one not newer than the previous sample (stale or repeated). The caller marks a sample
that must not move the reference (``reference=False``: a ``reset_counter`` change) and refuses one
whose ``timestamp_sample`` is after its ``timestamp`` (:func:`odometry_state`). A real change of
PX4's clock (PX4 rebooted without time sync, its time sync re-converged, the node's clock reset)
shows as :data:`RESYNC_SAMPLES` refused samples in a row that agree with each other (increasing
samples, offsets within :data:`AHEAD_NS`): the reference then restarts from them, and the bridge
says so. Two or more samples future-dated by less than :data:`AHEAD_NS` in one window can move
the reference by at most that much.
"""
from __future__ import annotations

import math

import numpy as np
from nav_msgs.msg import Odometry

from ...px4.frames import odometry_to_ros
from ..wire.actuator_commands import rotor_speed_values
from ..wire.conversions import InputError, set_stamp

__all__ = ["StampMapper", "odometry_state", "odometry_msg", "rotor_speeds", "AHEAD_NS", "RESYNC_SAMPLES", "MAX_POSITION",
           "MAX_SPEED", "MAX_RATE", "MAX_CONTROLS"]

#: [ns] a sample whose ``receive - timestamp_sample`` is more than this below the reference offset
#: is future-dated and refused: several times the delivery jitter of a loaded machine (a few ms),
#: two periods of PX4's 100 Hz odometry; an honest sample is ahead of the second smallest delay by
#: that jitter at most, and a PX4 clock that runs fast by the drift over two samples
AHEAD_NS = 20_000_000
#: refused samples in a row, increasing and agreeing with each other to :data:`AHEAD_NS`, that
#: restart the reference (0.1 s of PX4's 100 Hz odometry): a clock that really changed
RESYNC_SAMPLES = 10
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
    """PX4 microseconds -> the node's nanoseconds by the second-smallest offset (module docstring).

    ``window_ns``: the offset is taken over the current and the previous window. ``resets``: how
    many times the reference restarted from a run of :data:`RESYNC_SAMPLES` refused samples.
    """

    def __init__(self, window_ns: int, *, ahead_ns: int = AHEAD_NS, resync: int = RESYNC_SAMPLES):
        for name, v in (("window_ns", window_ns), ("ahead_ns", ahead_ns), ("resync", resync)):
            if not (isinstance(v, int) and v > 0):
                raise ValueError(f"{name}: expected a positive integer, got {v!r}")
        self.window_ns, self.ahead_ns, self.resync = window_ns, ahead_ns, resync
        self.resets = 0
        self.last_us = None           # the previous accepted sample [µs]
        self.start_ns = None          # the current window's start [ns, node clock]
        self.cur, self.prev = [], []  # the two smallest offsets of the current / previous window [ns]
        self.run = []                 # (sample_us, offset_ns) of the refused samples in a row
        self.last_stamp = None        # the previous stamp [ns]: stamps increase with the samples

    @property
    def offset_ns(self):
        """The offset in use [ns]: the second smallest of the two windows (the smallest while there
        is one value; ``inf`` before the first sample)."""
        both = sorted(self.cur + self.prev)
        return both[1] if len(both) > 1 else (both[0] if both else math.inf)

    def __call__(self, sample_us: int, receive_ns: int, *, reference: bool = True) -> int:
        """The node-clock stamp [ns] of a PX4 sample taken at ``sample_us`` [µs] and received at
        ``receive_ns`` [ns]; :class:`InputError` for a sample not newer than the previous one or
        future-dated (module docstring). ``reference=False``: stamped, but its offset is not used."""
        if self.start_ns is None or receive_ns < self.start_ns:      # first sample, or the node's clock went back
            self.start_ns, self.cur, self.prev, self.last_stamp = receive_ns, [], [], None
        elif receive_ns - self.start_ns >= self.window_ns:
            self.start_ns, self.prev, self.cur = receive_ns, self.cur, []
        x = receive_ns - 1000 * sample_us
        o = self.offset_ns
        problem = None
        if self.last_us is not None and sample_us <= self.last_us:
            problem = (f"timestamp_sample {sample_us} us is not newer than the previous {self.last_us} us (stale or "
                       "repeated sample)")
        elif o != math.inf and o - x > self.ahead_ns:
            problem = (f"timestamp_sample {sample_us} us is {(o - x) / 1e9:.6g} s ahead of the time rule's reference "
                       f"(future-dated: it would have arrived before it was taken; at most {self.ahead_ns / 1e9:g} s "
                       "accepted)")
        if problem is not None:
            if not self._resynced(sample_us, x, receive_ns):
                raise InputError(f"vehicle_odometry: {problem}")
        else:
            self.run = []
            if reference:
                self.cur = sorted(self.cur + [x])[:2]
        self.last_us = sample_us
        o = self.offset_ns
        stamp = receive_ns if o == math.inf else min(1000 * sample_us + o, receive_ns)
        if self.last_stamp is not None and stamp <= self.last_stamp:    # the offset fell: keep the stamps increasing
            stamp = min(self.last_stamp + 1, receive_ns)                # (still within [sample, receive])
        self.last_stamp = stamp
        return stamp

    def _resynced(self, sample_us: int, x: int, receive_ns: int) -> bool:
        """Count a refused sample in the run; True (and the reference restarted from the run) when
        it completes :data:`RESYNC_SAMPLES` samples that agree with each other."""
        if self.run and sample_us > self.run[-1][0] and abs(x - self.run[0][1]) <= self.ahead_ns:
            self.run.append((sample_us, x))
        else:
            self.run = [(sample_us, x)]
        if len(self.run) < self.resync:
            return False
        self.cur, self.prev, self.start_ns = sorted(v for _, v in self.run)[:2], [], receive_ns
        self.run = []
        self.resets += 1
        return True


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
    :data:`MAX_RATE`, no timestamp, or a ``timestamp_sample`` after ``timestamp``: PX4 publishes
    a sample after taking it (``EKF2Selector::PublishVehicleOdometry``, ``EKF2.cpp``:
    ``timestamp = hrt_absolute_time()`` at publication; the uXRCE-DDS client shifts both by the
    same offset), so such a message did not come from PX4 as it is."""
    sample = int(msg.timestamp_sample) or int(msg.timestamp)
    if sample == 0:
        raise InputError("vehicle_odometry: timestamp and timestamp_sample are 0 (no time)")
    if sample > int(msg.timestamp):
        raise InputError(f"vehicle_odometry: timestamp_sample {sample} us is after timestamp {int(msg.timestamp)} us "
                         "(PX4 publishes a sample after taking it): inconsistent sample")
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
    (``actuator_msgs/Actuators`` ``velocity``; :mod:`geodyn_ros.ros.wire.actuator_commands`).
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
