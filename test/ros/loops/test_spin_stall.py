"""A lock-step loop that steps slowly is not a stalled one (issue 52.6).

``spin_lockstep`` raised "stalled" once ``wall_timeout`` wall seconds had passed in all, whatever
the progress: at load 18 on two cores the documented ``geodyn_closed_loop --underactuated --rows
ff2,lqr --duration 1`` stopped with "stalled at t = 0.6 s after 80 s" while it was stepping. The
window now restarts at every step. A fake executor steps a fake simulator every 0.05 s for 3 s
with a window of 1 s: it completes (the old rule raised after 1 s); a simulator that never steps
still raises, after the window, naming the loop and the time reached. (The gaps of 0.05 s are 20x
below the window: a loaded machine oversleeping a 0.05 s sleep by a whole second is not a risk.)
"""
from __future__ import annotations

import signal
import time

import pytest

from geodyn_ros.ros.common.runtime import interrupt_on_signals, spin_lockstep


class _Sim:
    dt_ns = 1_000_000

    def __init__(self):
        self.steps = 0


class _Executor:
    """spin_once: a step of ``sim`` every ``gap`` seconds (None: never)."""

    def __init__(self, sim, gap):
        self.sim, self.gap, self.next = sim, gap, time.monotonic()

    def spin_once(self, timeout_sec):
        time.sleep(min(timeout_sec, 0.01))
        if self.gap is not None and time.monotonic() >= self.next:
            self.sim.steps += 1
            self.next = time.monotonic() + self.gap


@pytest.fixture(autouse=True)
def _handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    interrupt_on_signals(reset=True)
    for s, h in saved.items():
        signal.signal(s, h)


def test_a_slow_loop_that_steps_completes():
    sim = _Sim()
    t0 = time.monotonic()
    spin_lockstep(_Executor(sim, 0.05), sim, 60, wall_timeout=1.0)
    assert sim.steps >= 60 and time.monotonic() - t0 > 1.0   # longer than the window in all (then 20 spins more)


def test_a_loop_without_a_step_is_stalled():
    sim = _Sim()
    sim.steps = 5
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"closed loop stalled at t = 0\.005 s of 0\.06 s: no step for 1 s of wall time"):
        spin_lockstep(_Executor(sim, None), sim, 60, wall_timeout=1.0)
    assert time.monotonic() - t0 >= 1.0
