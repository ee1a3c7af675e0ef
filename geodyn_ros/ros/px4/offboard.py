"""PX4's offboard protocol as the bridge runs it (ROS-free: times are integers of the node's
clock in nanoseconds; the node publishes what this decides and logs the lines it returns).

PX4 facts (PX4-Autopilot main at ``b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf``):

* Offboard is available only while a proof of life (``OffboardControlMode`` with one mode flag
  set) is newer than ``COM_OF_LOSS_T`` (``src/modules/commander/HealthAndArmingChecks/checks/
  offboardCheck.cpp``; ``COM_OF_LOSS_T`` default 1.0 s, ``src/modules/commander/commander_params.c``).
  When it gets older PX4 flags ``offboard_control_signal_lost`` and its failsafe
  (``COM_OBL_RC_ACT``) takes over. So the bridge **stops** the proof of life (and the setpoints)
  when the controller's commands go stale, and lets PX4's own failsafe act.
* Arming and the mode switch are ``VehicleCommand``\\ s: ``VEHICLE_CMD_COMPONENT_ARM_DISARM``
  (400) with ``param1`` 1 (arm) or 0 (disarm) (``ARMING_ACTION_ARM/DISARM``,
  ``msg/versioned/VehicleCommand.msg``; ``Commander::handle_command``, ``Commander.cpp``), and
  ``VEHICLE_CMD_DO_SET_MODE`` (176) with ``param1`` 1 (``VEHICLE_MODE_FLAG_CUSTOM_MODE_ENABLED``)
  and ``param2`` 6 (``PX4_CUSTOM_MAIN_MODE_OFFBOARD``, ``src/modules/commander/px4_custom_mode.h``);
  commander handles a command whose ``target_system``/``target_component`` is its own or 0.
* ``VehicleStatus`` (``msg/versioned/VehicleStatus.msg``, MESSAGE_VERSION 1):
  ``arming_state`` 1 DISARMED, 2 ARMED; ``nav_state`` 14 OFFBOARD.

The bridge's rules (doc/reference/px4_bridge.md, "Protocol"):

* **Streaming**: the proof of life is sent while the newest accepted command is younger than
  ``command_timeout``; the bridge reports the change both ways.
* **Actions** are explicit (a service call, a topic message, or ``arm_and_offboard_on_start``),
  each logged in one line, and its result logged from ``vehicle_status`` (confirmed, or not
  within ``action_timeout``). ``offboard`` needs the status known and the proof of life streamed
  for ``warmup`` (PX4 refuses offboard without one); ``arm`` needs the status and fresh commands;
  ``disarm`` is always sent.
"""
from __future__ import annotations

__all__ = ["OffboardProtocol", "ACTIONS", "ARMED", "DISARMED", "NAV_OFFBOARD", "CMD_ARM_DISARM", "CMD_SET_MODE",
           "CUSTOM_MODE_ENABLED", "CUSTOM_MAIN_MODE_OFFBOARD"]

CMD_ARM_DISARM = 400          #: VehicleCommand.VEHICLE_CMD_COMPONENT_ARM_DISARM
CMD_SET_MODE = 176            #: VehicleCommand.VEHICLE_CMD_DO_SET_MODE
CUSTOM_MODE_ENABLED = 1       #: VEHICLE_MODE_FLAG_CUSTOM_MODE_ENABLED (param1 of DO_SET_MODE)
CUSTOM_MAIN_MODE_OFFBOARD = 6  #: PX4_CUSTOM_MAIN_MODE_OFFBOARD (param2 of DO_SET_MODE)
DISARMED, ARMED = 1, 2        #: VehicleStatus.arming_state
NAV_OFFBOARD = 14             #: VehicleStatus.NAVIGATION_STATE_OFFBOARD
#: action -> (command, param1, param2)
ACTIONS = {"arm": (CMD_ARM_DISARM, 1.0, 0.0), "disarm": (CMD_ARM_DISARM, 0.0, 0.0),
           "offboard": (CMD_SET_MODE, float(CUSTOM_MODE_ENABLED), float(CUSTOM_MAIN_MODE_OFFBOARD))}


def _s(ns) -> str:
    return f"{ns * 1e-9:.3g} s"


class OffboardProtocol:
    """The state of the protocol; see the module docstring. ``*_ns`` in the node's clock."""

    def __init__(self, command_timeout_ns: int, warmup_ns: int, action_timeout_ns: int):
        for name, v in (("command_timeout_ns", command_timeout_ns), ("warmup_ns", warmup_ns),
                        ("action_timeout_ns", action_timeout_ns)):
            if not (isinstance(v, int) and v > 0):
                raise ValueError(f"{name}: expected a positive integer [ns], got {v!r}")
        self.command_timeout_ns, self.warmup_ns, self.action_timeout_ns = command_timeout_ns, warmup_ns, action_timeout_ns
        self.last_command_ns = None    # the newest accepted command
        self.streaming = False
        self.streaming_since = None
        self.status = None             # (arming_state, nav_state, failsafe, system_id, component_id)
        self.pending = {}              # action -> deadline [ns]

    # ------------------------------------------------------------------ commands and streaming
    def command(self, now_ns: int) -> list:
        """An accepted controller command at ``now_ns``; the lines to log (resumed streaming)."""
        self.last_command_ns = now_ns
        if not self.streaming:
            self.streaming, self.streaming_since = True, now_ns
            return ["cmd/rotor_speeds fresh: proof of life and setpoints streaming to PX4"]
        return []

    def tick(self, now_ns: int) -> list:
        """Check freshness and pending actions at ``now_ns``; the lines to log. After it,
        :attr:`streaming` says whether to send the proof of life now."""
        out = []
        if self.streaming and now_ns - self.last_command_ns > self.command_timeout_ns:
            self.streaming, self.streaming_since = False, None
            out.append(f"cmd/rotor_speeds stale (none for {_s(now_ns - self.last_command_ns)}, command_timeout "
                       f"{_s(self.command_timeout_ns)}): proof of life and setpoints STOPPED; PX4's offboard-loss "
                       "failsafe (COM_OF_LOSS_T, COM_OBL_RC_ACT) takes over")
        for action, deadline in list(self.pending.items()):
            if now_ns > deadline:
                del self.pending[action]
                out.append(f"{action}: NOT confirmed by vehicle_status within {_s(self.action_timeout_ns)} "
                           f"({self.describe()}): PX4 refused it or did not receive it")
        return out

    def streamed_for(self, now_ns: int):
        """How long the proof of life has been streaming [ns] (None: it is not)."""
        return now_ns - self.streaming_since if self.streaming else None

    # ------------------------------------------------------------------ vehicle_status
    def on_status(self, arming_state: int, nav_state: int, failsafe: bool, system_id: int, component_id: int) -> list:
        """A ``vehicle_status``; the lines to log (changes, confirmed actions)."""
        old = self.status
        self.status = (arming_state, nav_state, bool(failsafe), system_id, component_id)
        out = []
        if old is None or old[:3] != self.status[:3]:
            out.append(f"PX4: {self.describe()}")
        confirmed = {"arm": arming_state == ARMED, "disarm": arming_state == DISARMED,
                     "offboard": nav_state == NAV_OFFBOARD}
        for action in list(self.pending):
            if confirmed[action]:
                del self.pending[action]
                out.append(f"{action}: confirmed by vehicle_status ({self.describe()})")
        return out

    @property
    def armed(self) -> bool:
        return self.status is not None and self.status[0] == ARMED

    @property
    def offboard(self) -> bool:
        return self.status is not None and self.status[1] == NAV_OFFBOARD

    def describe(self) -> str:
        if self.status is None:
            return "no vehicle_status yet"
        a, n, f = self.status[:3]
        arm = {ARMED: "armed", DISARMED: "disarmed"}.get(a, f"arming_state {a}")
        nav = "offboard" if n == NAV_OFFBOARD else f"nav_state {n}"
        return f"{arm}, {nav}" + (", FAILSAFE" if f else "")

    # ------------------------------------------------------------------ actions
    def request(self, action: str, now_ns: int):
        """``(command, param1, param2, target_system, target_component)`` to send for ``action``
        (``arm``, ``disarm``, ``offboard``), or a str: why it is refused. An accepted action is
        pending until ``vehicle_status`` confirms it or ``action_timeout`` passes."""
        if action not in ACTIONS:
            raise ValueError(f"action: {action!r} is not one of {', '.join(ACTIONS)}")
        if action != "disarm":
            if self.status is None:
                return f"{action} refused: no vehicle_status from PX4 yet (is the uXRCE-DDS agent running?)"
            if not self.streaming:
                return (f"{action} refused: no fresh cmd/rotor_speeds, so no proof of life (PX4 would refuse "
                        "offboard, and armed it would get no setpoints)")
            if action == "offboard" and self.streamed_for(now_ns) < self.warmup_ns:
                return (f"offboard refused: the proof of life has streamed for {_s(self.streamed_for(now_ns))}, "
                        f"less than offboard_warmup {_s(self.warmup_ns)}; retry")
        self.pending[action] = now_ns + self.action_timeout_ns
        if action == "arm":
            self.pending.pop("disarm", None)
        elif action == "disarm":
            self.pending.pop("arm", None)
        command, p1, p2 = ACTIONS[action]
        sysid, compid = (self.status[3], self.status[4]) if self.status is not None else (0, 0)
        return command, p1, p2, sysid, compid
