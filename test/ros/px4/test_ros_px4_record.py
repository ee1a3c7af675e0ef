"""``geodyn_px4_bridge``: every command it sends to PX4 is on the record, and its actions exist only as
services (issue 51, items 4 and 5).

* Under a flood of ``vehicle_status`` changes (thousands of distinct states, which on main spent the
  reporter's log budget so that six arm commands left no trace), every arm, disarm and offboard
  command the bridge sends has its own line on ``/rosout`` and its own ``/diagnostics`` status;
  the status lines are summarised: at most two per ``STATUS_PERIOD`` of the flood's duration.
* Where ``std_srvs`` cannot be imported the node stops at start with one line saying what to
  install (in the process: ``ConfigurationError``; as the console script: that line, exit 2).

The oracle is what is on the wire: the ``VehicleCommand``\\ s PX4 would receive, counted, against the
lines and statuses recorded. No timing is asserted; the summary bound scales with the flood's own
duration.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from ros_harness import Harness  # noqa: F401,I100  (imported first: ROS isolation env)

from diagnostic_msgs.msg import DiagnosticArray
from px4_bridge_harness import rotor_msg, status, vehicle_file
from px4_msgs.msg import VehicleCommand, VehicleOdometry, VehicleStatus
from rcl_interfaces.msg import Log
from std_srvs.srv import Trigger

from geodyn_ros.ros.common.params import ConfigurationError
from geodyn_ros.ros.px4 import bridge_node
from geodyn_ros.ros.px4.bridge_node import COMMAND_INTERVAL, STATUS_PERIOD, STD_SRVS_MISSING, Px4BridgeNode
from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_TYPE

ODOM, STATUS, CMD = "/fmu/out/vehicle_odometry", "/fmu/out/vehicle_status_v1", "cmd/rotor_speeds"


def test_every_command_is_on_the_record_under_a_status_flood(h, tmp_path):
    node = h.make(Px4BridgeNode, {"actuation_config": vehicle_file(tmp_path), "offboard_warmup": 0.05,
                                  "command_timeout": 60.0, "action_timeout": 60.0})
    pubs = {t: h.publisher(m, t) for t, m in ((ODOM, VehicleOdometry), (STATUS, VehicleStatus), (CMD, ROTOR_MSG_TYPE))}
    for t in pubs:
        h.wait_matched(t)
    cmds = h.record(VehicleCommand, "/fmu/in/vehicle_command")
    diag = h.record(DiagnosticArray, "/diagnostics", depth=1000)
    logs = h.record(Log, "/rosout", depth=1000)
    clients = {a: h.probe.create_client(Trigger, f"/geodyn_px4_bridge/{a}") for a in ("arm", "disarm", "offboard")}
    for c in clients.values():
        assert c.wait_for_service(timeout_sec=10.0)
    pubs[STATUS].publish(status())
    pubs[CMD].publish(rotor_msg([600.0] * 4))
    assert h.spin_until(lambda: node.protocol.status is not None and node.protocol.streaming, 10.0)

    k = [0]

    def flood(n=200):
        """n status messages, each a new state: nav_state 0..19 x failsafe x arming."""
        for _ in range(n):
            i = k[0] = k[0] + 1
            pubs[STATUS].publish(status(arming=1 + (i // 40) % 2, nav=i % 20, failsafe=bool((i // 20) % 2)))
        h.spin_for(0.01)

    def call(action):
        flood()
        h.spin_for(COMMAND_INTERVAL + 0.05)          # the bridge allows one command per action per interval
        flood()
        fut = clients[action].call_async(Trigger.Request())
        while not fut.done():
            flood(20)
        return fut.result()

    start = time.monotonic()
    plan = ["arm"] * 6 + ["offboard", "disarm"]
    answers = [call(a) for a in plan]
    flood()
    duration = time.monotonic() - start
    assert all(r.success for r in answers), [r.message for r in answers]
    assert h.spin_until(lambda: len(cmds) == len(plan), 10.0)
    assert [(c.command, c.param1) for c in cmds] == [(400, 1.0)] * 6 + [(176, 1.0), (400, 0.0)]
    assert k[0] > 2000                                # the flood: thousands of status changes

    def bridge_lines(text):
        return [m.msg for m in logs if m.name == "geodyn_px4_bridge" and text in m.msg]

    def command_statuses(text):
        return [s.message for a in diag for s in a.status if s.name.endswith(": commands") and text in s.message]

    assert h.spin_until(lambda: len(bridge_lines(": sent ")) == len(plan) and len(command_statuses(": sent ")) == len(plan),
                        10.0), (bridge_lines(": sent "), command_statuses(": sent "))
    arm_lines = bridge_lines("arm: sent VEHICLE_CMD_COMPONENT_ARM_DISARM param1=1")
    assert len(arm_lines) == 6 and len(command_statuses("arm: sent VEHICLE_CMD_COMPONENT_ARM_DISARM param1=1")) == 6
    assert len(bridge_lines("offboard: sent VEHICLE_CMD_DO_SET_MODE")) == 1
    assert len(bridge_lines("disarm: sent VEHICLE_CMD_COMPONENT_ARM_DISARM param1=0")) == 1
    # each line is one answer of a service call, in order
    assert [r.message for r in answers] == bridge_lines(": sent ")
    # the status lines: summarised, at most two per STATUS_PERIOD of the flood (the first change of
    # a period said at once, the summary of the others when it ends), not thousands
    status_lines = bridge_lines("PX4: ")
    assert 1 <= len(status_lines) <= 2 * (duration / STATUS_PERIOD + 2)
    assert any("status changes in" in s for s in status_lines)
    assert node.counts["status_changes"] > 5 * len(status_lines)     # (best effort, depth 5: the bridge takes a part)


def test_a_command_flood_is_bounded(h, tmp_path):
    """A burst of ~/disarm calls (disarm is always sent): at most one command per COMMAND_INTERVAL,
    the others refused with the reason; the commands sent and the lines on the record agree."""
    node = h.make(Px4BridgeNode, {"actuation_config": vehicle_file(tmp_path)})
    cmds = h.record(VehicleCommand, "/fmu/in/vehicle_command")
    client = h.probe.create_client(Trigger, "/geodyn_px4_bridge/disarm")
    assert client.wait_for_service(timeout_sec=10.0)
    start = time.monotonic()
    answers = []
    for _ in range(40):
        fut = client.call_async(Trigger.Request())
        assert h.spin_until(fut.done, 10.0)
        answers.append(fut.result())
    duration = time.monotonic() - start
    sent = [r for r in answers if r.success]
    assert h.spin_until(lambda: len(cmds) == len(sent), 10.0)
    assert 1 <= len(sent) <= duration / COMMAND_INTERVAL + 1
    assert all("at most one every" in r.message for r in answers if not r.success)
    assert node.counts["commands"] == len(sent)


def test_without_std_srvs_the_node_stops_at_start_in_one_line(h, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "std_srvs", None)         # import std_srvs raises ImportError
    monkeypatch.setitem(sys.modules, "std_srvs.srv", None)
    with pytest.raises(ConfigurationError) as e:
        h.make(Px4BridgeNode, {"actuation_config": vehicle_file(tmp_path)})
    assert str(e.value) == STD_SRVS_MISSING and "\n" not in STD_SRVS_MISSING
    assert "install" in STD_SRVS_MISSING and "ros-std-srvs" in STD_SRVS_MISSING
    assert not hasattr(bridge_node, "Empty")                   # no topic fallback left


def test_without_std_srvs_the_console_script_exits_2_with_that_line(tmp_path):
    code = ("import sys; sys.modules['std_srvs'] = None; sys.modules['std_srvs.srv'] = None\n"
            "from geodyn_ros.ros.px4.bridge_node import main\n"
            f"raise SystemExit(main(['geodyn_px4_bridge', '--ros-args', '-p', 'actuation_config:={vehicle_file(tmp_path)}']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert lines == [f"[FATAL] geodyn_ros: {STD_SRVS_MISSING}"], r.stderr
