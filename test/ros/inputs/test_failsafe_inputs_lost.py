"""A failsafe for every input that can stop, and for a clock that jumps (issue 51 item 2;
:mod:`geodyn_ros.ros.inputs.failsafe_inputs`).

Each controller hovers (``failsafe_rig``: a stepped simulated clock, the node's callbacks called
directly, every command recorded) while one input stops for 3 s and comes back:

* ``geodyn_node``'s feedforward (its process dying: ``feedforward/wrench`` and
  ``feedforward/joint_efforts``; ``feedforward/jet``; ``desired/state`` and
  ``feedforward/flat_jet``), which today leaves the controller silent ("cycle skipped" once a
  second) while the odometry flows;
* the reference;
* the joint (and motor) states.

The controller enters its failsafe within the input's stated timeout (``stale_timeout``, or
``joint_states_max_age``) plus one period, says so in one line naming the input, sets
``failsafe_mode`` and its counters, commands at every step (never silent), within the force bound
of item 1, and returns to tracking when the input is back with no jump in its command (the
change between two consecutive commands stays below 1 % of the weight; the hover's held and live
inputs are equal here, so this checks the switches between the laws, not the blend, which
``test_failsafe_bounded`` and ``test_failsafe_fields`` check).

The clock: ``/clock`` goes back 6 s (a simulator reset) or forward 6 s, every stream restamped on
the new time. Today the controller was silent after the reset until simulated time passed its old
maximum (5.98 s); here it commands at every step through the jump, with one line and the counter
``clock_jumps``, and stays in tracking.
"""
from __future__ import annotations

import numpy as np
import pytest
from failsafe_rig import DT, G, KINDS, SimRig  # noqa: I100  (ROS environment first)

STALE = 0.1          # the rig's stale_timeout [s]
JS_MAX_AGE = 0.02    # joint_states_max_age (default) [s]
A_MAX = 3.0


def _every_step(rig, n0: int, steps: int) -> None:
    """A command at every one of the ``steps`` steps after the ``n0``-th command: no silence."""
    ts = [t for t, *_ in rig.cmds[n0:]]
    assert len(ts) == steps, (len(ts), steps)
    assert np.all(np.diff(ts) == round(DT * 1e9))


def _smooth(rig) -> float:
    F = np.array([f for *_, f, _ in rig.cmds])
    jump = float(np.abs(np.diff(F, axis=0)).max())
    assert jump < 0.01 * rig.weight, jump
    lo, hi = rig.mass * (G - A_MAX), rig.mass * (G + A_MAX)
    n = rig.forces()
    assert n.min() >= lo and n.max() <= hi
    return jump


@pytest.mark.parametrize("lost", ["feedforward", "reference", "joints"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_input_stops_then_comes_back(h, kind, lost):
    rig = SimRig(h, kind)
    rig.run(1.0)
    assert rig.node._fs.mode == "tracking" and len(rig.cmds) == 100
    t_stop, n0 = rig.now(), len(rig.cmds)
    rig.run(3.0, **{lost: False})
    node = rig.node
    assert node._fs.mode == "hold"     # 3 s < failsafe_hold
    _every_step(rig, n0, 300)
    holds = [t for t, _, mode, *_ in rig.cmds if mode == "hold"]
    timeout = JS_MAX_AGE if lost == "joints" else STALE
    assert (holds[0] - t_stop) * 1e-9 <= timeout + 2 * DT + 1e-9, (holds[0] - t_stop) * 1e-9
    lines = [x for x in rig.lines if x.startswith("failsafe: hold")]
    assert len(lines) == 1, lines
    topic = {"feedforward": {"geodyn_controller": "ff_", "geodyn_actuated_controller": "jet",
                             "geodyn_flat_controller": "desired/state"}[kind],
             "reference": "flat_reference" if kind == "geodyn_flat_controller" else "reference",
             "joints": "joint_states"}[lost]
    assert topic in lines[0] and "on the measured state" in lines[0], lines[0]
    assert node.diag.notes["failsafe_mode"] == "hold" and node.diag.counters["failsafe_losses"] == 1
    n0 = len(rig.cmds)
    rig.run(3.0)
    assert node._fs.mode == "tracking" and node._blend is None
    _every_step(rig, n0, 300)
    assert len([x for x in rig.lines if x.startswith("failsafe: tracking")]) == 1
    assert node.diag.notes["failsafe_mode"] == "tracking"
    jump = _smooth(rig)
    print(f"{kind}: {lost} lost 3 s: |F| in [{rig.forces().min():.3f}, {rig.forces().max():.3f}] N, "
          f"largest change between commands {jump:.2e} N")


@pytest.mark.parametrize("seconds", [-6.0, 6.0])
@pytest.mark.parametrize("kind", KINDS)
def test_the_clock_jumps(h, kind, seconds):
    rig = SimRig(h, kind)
    rig.run(2.0)
    rig.t += int(seconds * 1e9)       # the next step is on the new time (the simulator's reset)
    t_jump, n0 = rig.t, len(rig.cmds)  # the time the next step follows
    rig.run(3.0)
    node = rig.node
    _every_step(rig, n0, 300)
    assert node.diag.counters["clock_jumps"] == 1
    lines = [x for x in rig.lines if x.startswith("clock:")]
    assert len(lines) == 1 and ("back" if seconds < 0 else "forward") in lines[0], lines
    assert node._fs.mode == "tracking" and [m for _, m in node._fs.events] == []
    _smooth(rig)
    # the commands after the jump carry the new time
    assert all(t_jump < stamp <= t_jump + 3 * 10**9 for _, stamp, *_ in rig.cmds[n0:])
