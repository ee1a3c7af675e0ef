"""One Gazebo launch file flown for real, shared by test/gazebo/test_gz_fly.py (the flights scored) and
test/gazebo/test_gz_streams.py (the bridge's streams against gz's own): the launch under the real
launch_ros (test/launch_runner.py) in its own gz partition, a probe recording ROS topics, the wait for
the start hold's release, then simulated time.

Import it after the module's skips (it imports rclpy through ``ros_harness``)."""
from __future__ import annotations

import os
import subprocess
import time
from contextlib import contextmanager

from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import String

from gz_world import gz_env
from launch_runner import START_TIMEOUT, _launch, _stop
from ros_harness import Harness

#: gz sim -z (the launch files' update_rate): simulated steps per wall second. 250 = a quarter of
#: real time at the worlds' 1 ms steps: the three Python nodes at 1 kHz, gz, the bridge and this
#: probe share two cores here, and at real time the controller ran at ~300 Hz with gaps of 0.1-0.7 s
#: of simulated time (the vehicle fell). GEODYN_GZ_UPDATE_RATE="" flies at the world's own rate.
UPDATE_RATE = os.environ.get("GEODYN_GZ_UPDATE_RATE", "250")


def stamp_ns(msg) -> int:
    """A ROS message's ``header.stamp`` [ns]."""
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


class Flight:
    """A running launch: ``h`` (the probe's :class:`ros_harness.Harness`), ``proc`` (the launch),
    ``env`` (its environment: ``GZ_PARTITION`` names its gz graph), ``released_ns`` (the simulated
    time the hold was released), ``out`` (the launch's output once stopped)."""

    def __init__(self, h, proc, env, clocks):
        self.h, self.proc, self.env, self._clocks = h, proc, env, clocks
        self.released_ns, self.released_wall, self.out, self.code = 0, 0.0, "", None

    def sim_ns(self) -> int:
        """The newest ``/clock`` [ns] (0 before the first)."""
        c = self._clocks[-1].clock if self._clocks else None
        return c.sec * 10**9 + c.nanosec if c else 0

    def fly_until(self, t_ns: int, wall_timeout: float) -> None:
        """Spin the probe until simulated time ``t_ns``, the launch's exit or ``wall_timeout`` s."""
        end = time.monotonic() + wall_timeout
        while self.proc.poll() is None and self.sim_ns() < t_ns and time.monotonic() < end:
            self.h.spin_for(0.2)

    def gz(self, *args, **kw) -> subprocess.Popen:
        """``gz <args>`` in the flight's gz partition (e.g. ``topic -e``), output to ``stdout=``."""
        return subprocess.Popen(["gz", *args], env=self.env, start_new_session=True, **kw)


@contextmanager
def gz_flight(file: str, args: list, records: dict, robot_state_publisher: bool = False):
    """Launch ``file`` (``headless:=true robot_state_publisher:=<robot_state_publisher>
    update_rate:=UPDATE_RATE`` and ``args``), record ``records`` (topic -> message type, into ``flight.h.received[topic]``), and wait
    until the start hold is released ("detached" on ``gz/start_hold``). Yields the :class:`Flight`;
    stops the launch with SIGINT on exit (``flight.out``, ``flight.code``)."""
    env = dict(gz_env(), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               ROS_DOMAIN_ID=os.environ.get("ROS_DOMAIN_ID", "0"),
               GZ_PARTITION=f"geodyn_fly_{os.getpid()}_{time.monotonic_ns()}")
    # the probe hears the launch's nodes (ros_harness turns discovery OFF for in-process tests)
    before = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    try:
        h = Harness()
    finally:
        if before is None:
            os.environ.pop("ROS_AUTOMATIC_DISCOVERY_RANGE")
        else:
            os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = before
    try:
        clocks = h.record(ClockMsg, "/clock", depth=10)
        for topic, msg_type in records.items():
            h.record(msg_type, topic, depth=100000)
        hold = h.record(String, "gz/start_hold", depth=100)
        rsp = f"robot_state_publisher:={str(robot_state_publisher).lower()}"
        proc = _launch(file, "headless:=true", rsp, f"update_rate:={UPDATE_RATE}", *args,
                       env=env)
        flight = Flight(h, proc, env, clocks)
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None and not any(m.data == "detached" for m in hold):
                h.spin_for(0.2)
            assert any(m.data == "detached" for m in hold), (
                f"{file}: the start hold was never released within {START_TIMEOUT:g} s "
                f"({'running' if proc.poll() is None else 'exited'})\n" + ("" if proc.poll() is None else
                                                                         proc.communicate()[0][-4000:]))
            flight.released_ns, flight.released_wall = flight.sim_ns(), time.monotonic()
            yield flight
        finally:
            flight.code, flight.out = _stop(proc)
    finally:
        h.close()
