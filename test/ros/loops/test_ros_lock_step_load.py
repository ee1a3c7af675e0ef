"""The lock-step loops over ROS 2 give the same trajectories when the machine is loaded.

A lock-step loop (the simulator steps only when the commands of its current state arrived) must
not depend on the wall clock. Two things did (issue 31):

* **A republished state was answered with a new command.** When the commands of a state take
  longer than ``command_timeout`` (wall clock: a loaded machine) the simulator republishes that
  state. The controller answered it by computing its command again, which advanced the LQR's
  rotor-speed estimate (a filter run on the commands sent) a second time for one step: 1e-6 to
  1e-5 m off the in-process loop instead of 2e-11 m, on the runs where a cycle happened to stall.
  Now a republished state is answered with the command already sent for it, unchanged.
* **The gain thread's progress is wall clock.** Which gain each step used (``gain_thread: true``)
  depends on how far the thread got; the run now records it (the chain of gains computed and the
  gain each step used) and the in-process loop replays exactly those gains.

Each test runs while two busy-loop processes (``while True: pass``) keep both cores busy, and the
simulator republishes the state of every step ``3 mod 7`` (70 of the 500) as soon as the first
command of that state arrived -- what its watchdog does when a command is late, made deterministic here so
the path is taken in every run whatever the load (without it, a run under load republishes a few
times, or not at all). The bounds are the quiet tests' (test_ros_lqr.py, test_ros_flat.py).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from ros_harness import loop_problems  # noqa: I100  (sets the ROS isolation env first)

from geodyn_ros.loops.lqr import simulate_case
from geodyn_ros.loops.underactuated import simulate_underactuated
from geodyn_ros.ros.nodes.actuated_sim_node import ActuatedSimNode
from geodyn_ros.ros.loops.underactuated_closed_loop import run_ros_underactuated_loop

DURATION = 0.5                      # simulated seconds per loop: 500 lock-step steps
REPUBLISHED = set(range(3, 490, 7))   # the steps whose state the simulator republishes (70)
N = int(round(DURATION * 1e3)) + 1    # samples of the logs (t = 0 .. DURATION)


@pytest.fixture(scope="module", autouse=True)
def busy_cores():
    """Two processes spinning in Python for the duration of the module (the machine has two cores)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture
def republishing_sim(monkeypatch):
    """The simulator republishes the states of :data:`REPUBLISHED` once, right after their first
    command (the rotor speeds) arrived: the controller has answered them and then sees them again."""
    done = set()
    original = ActuatedSimNode._on_rotor_speeds

    def on_rotor_speeds(self, msg):
        original(self, msg)
        if self.steps in REPUBLISHED and self.steps not in done:
            done.add(self.steps)
            self.publish_state()
    monkeypatch.setattr(ActuatedSimNode, "_on_rotor_speeds", on_rotor_speeds)
    return done


@pytest.mark.parametrize("row", ["lqr", "lqr_thread"])
def test_lqr_loop_under_load_equals_the_in_process_loop(republishing_sim, row):
    info = {}
    ros = run_ros_underactuated_loop(row, DURATION, wall_timeout=300, info=info)
    chain, used = info["lqr_gain_chain"], info["lqr_gains_used"]
    # "lqr": the node's gain schedule in stamps, emulated; "lqr_thread": the gains the thread made
    # and each step used (wall clock: they vary from run to run), replayed
    twin = simulate_case("lqr_online", "nominal", DURATION, preroll=0.0,
                         gain_record=(chain, used) if row == "lqr_thread" else None)
    assert len(ros.log.t) == len(twin.log.t) == N
    assert republishing_sim == REPUBLISHED
    # the quiet test's bounds (test_ros_lqr.py): the first gain is a DARE solution, which amplifies
    # the last-bit differences of its input (a quaternion round trip) about 1e4-fold
    assert np.abs(ros.log.p - twin.log.p).max() < 1e-9
    assert np.degrees(np.abs(ros.log.R - twin.log.R).max()) < 1e-6
    assert np.abs(ros.log.q - twin.log.q).max() < 1e-8
    assert not loop_problems(info["diagnostics"])
    assert all(k * 1_000_000 in used for k in range(N - 1))    # the gain of every step is known
    if row == "lqr":   # every 10 ms of stamps from t = 0 (t = 0.5 s too once its state is answered)
        assert len(chain) == info["lqr_stats"]["updates"] in (50, 51)
        assert chain == pytest.approx([0.01 * k for k in range(len(chain))], abs=1e-12)
    else:
        assert max(used.values()) <= len(chain)    # (the thread may add gains after the run: no ==)


def test_geometric_loop_under_load_equals_the_in_process_loop(republishing_sim):
    info = {}
    ros = run_ros_underactuated_loop("ff2", DURATION, wall_timeout=300, info=info)
    twin = simulate_underactuated("ff2", DURATION, preroll=0.0)
    assert len(ros.log.t) == len(twin.log.t) == N
    assert republishing_sim == REPUBLISHED
    # test_ros_flat.py's bounds: the same arithmetic on both sides, rounding only
    assert np.abs(ros.log.p - twin.log.p).max() < 1e-12
    assert np.abs(ros.log.R - twin.log.R).max() < 1e-12
    assert np.abs(ros.log.q - twin.log.q).max() < 1e-12
    assert not loop_problems(info["diagnostics"])
    assert ros.rotor_saturations == ros.motor_saturations == 0
