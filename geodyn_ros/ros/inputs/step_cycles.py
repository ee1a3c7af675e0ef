"""One controller cycle per simulator step on sensor streams (``cycle: sim_steps``): the in-process
loops' input rule over ROS 2, to rounding.

Under ``input_policy: latest`` a controller's default (``cycle: odom``) is one cycle per accepted
odometry sample, at its stamp (:mod:`geodyn_ros.ros.inputs.latest_inputs`). The in-process loops
(:class:`geodyn_ros.loops.sensed.SensedInputs`) instead run a cycle at **every control period**
and bring the newest sample of each stream to the cycle's time. ``cycle: sim_steps`` is that rule
over ROS 2, for a lock-step simulator with sensor streams (``geodyn_sim`` /
``geodyn_actuated_sim`` with ``sensing`` and ``lockstep_cycles: steps``):

**The simulator** publishes, after every step and after the samples delivered at it, the step
manifest ``sim/delivered`` (``std_msgs/Float64MultiArray`` in the layout of ``~/inputs_used``,
:func:`~geodyn_ros.ros.inputs.latest_inputs.inputs_used_msg`: row ``cycle`` = the step's time
``t_k``; then, per sensor topic (``odom``, ``joint_states``, and ``motor_states`` for the actuated
simulator), the stamp of the newest sample of that stream delivered up to ``t_k``, ``sec = -1``
while none was), and waits for the commands stamped ``t_k``.

**The controller**'s cycle for ``t_k`` runs when the manifest of ``t_k`` has come, every sample it
names has arrived (a newer or equal stamp is held), and the other inputs of the cycle (reference,
feedforward) stamped ``t_k`` have. DDS orders nothing across topics: this barrier is what delivers
each sample to the controller at its simulated time. The cycle's inputs, as in process:

* odometry: the newest accepted sample, its pose propagated on SE(3) with its spatial twist over
  its age (:func:`geodyn_ros.control.sensing.propagate_base`), the body twist ``Ad(C)^-1 V``; a
  sample older than ``odom_timeout`` gives no cycle: the failsafe's hold cycle is commanded
  instead, stamped ``t_k`` (:mod:`geodyn_ros.ros.inputs.failsafe_inputs`; the failsafe's age is
  ``t_k`` minus the odometry's stamp, as in process);
* joints and motors: the newest sample propagated with its rates over its age; older than its
  ``<stream>_max_age``: held at its value (the in-process rule).

A manifest for a step already commanded (the simulator republished after its ``command_timeout``)
is answered with the same command again. The failsafe's watchdog timer is off: the manifests are
the clock. Without a manifest (a simulator without ``lockstep_cycles: steps``) a ``sim_steps``
controller never commands: the start-up log line says what it waits for.

**Manifests that are not the simulator's** (another publisher on ``sim/delivered``: a replayed bag,
a second simulator, an attack) must not stall the loop. Before, the newest manifest replaced the
one waiting for its inputs: 100,000 future-dated manifests made nearly every step wait for the
simulator's ``command_timeout`` and republish, and 0.35 to 0.73 s were simulated per 100 s of wall
time. Now (:class:`PendingSteps`):

* the subscription keeps :data:`MANIFEST_DEPTH` manifests (not 2, as the other inputs): the
  simulator's is not pushed out of the queue by the storm before it is read. It takes the bytes
  (``raw``): once a step has been commanded, a manifest of another layout than the simulator's is
  refused, and one of its layout is refused by its step time read at a fixed offset
  (:class:`ManifestPeek`, about 1 us) before anything is decoded;
* a manifest stamped more than the controller's ``stale_timeout`` ahead of its clock is refused
  (the simulator's manifest is at most one step ahead of the ``/clock`` it publishes first; the
  same window as for a sensor sample stamped in the future), counted in the ``/diagnostics``
  value ``manifests_refused``, with at most one WARN line a second;
* the others wait side by side, at most :data:`MAX_PENDING`. The cycle runs for the manifest of
  the step its reference and feedforward are stamped with, once its barrier completes, and forgets
  every manifest up to it; one whose reference or feedforward stamp has been passed can never
  complete and is forgotten. When more than :data:`MAX_PENDING` wait the latest is dropped
  (counted too): a lock-step simulator waits for each step's commands, so its step is an early one.

So a storm of future-dated manifests costs the loop the time to refuse them, no step
(test/ros/inputs/test_ros_step_cycles.py, test/ros/loops/test_manifest_storm.py). Measured
(``python bench/ros/bench_manifest_storm.py --rate R``, the actuated loop on ``mocap``, the storm
from another process, the loaded 2-core development machine): 4.7 s simulated per 100 s of wall
time quiet, 4.8 s under 1,000 forged manifests a second and 5.5 s under 3,000 (before: 0.23 s,
then a stall). Limits: a storm faster than the controller reads (about 5,000 a second there)
fills the queue, which then drops the simulator's manifests too (0.45 s per 100 s under 10,000 a
second); a forger who fills the pending set with 1024 manifests stamped between two steps (within
1 ms at 1 kHz, knowing the timing) can make a step wait for the simulator's republish: no rule on
stamps alone tells those from the simulator's.
"""
from __future__ import annotations

import bisect
import struct

from ..common.params import ConfigurationError

__all__ = ["CYCLES", "CYCLE_PARAMETERS", "MANIFEST_TOPIC", "MANIFEST_DEPTH", "MAX_PENDING", "PendingSteps",
           "ManifestPeek", "check_cycle_parameter", "decode_manifest", "manifest_msg"]

CYCLES = ("odom", "sim_steps")
#: the step manifest's topic (relative: it follows the namespace)
MANIFEST_TOPIC = "sim/delivered"
#: the keep-last depth of a controller's ``sim/delivered`` subscription (its other inputs keep 2): a
#: storm on the topic must not push the simulator's manifest out of the reader's queue before the
#: callback takes it. 1000 is 0.1 s of a storm of 10,000 manifests a second (what one Python
#: publisher sends): the loop's longest callback (geodyn_node's cycle, a few ms) is far shorter;
#: refused by their step time (:class:`ManifestPeek`), 1000 queued take about 10 ms to drain
MANIFEST_DEPTH = 1000
#: the most step manifests a controller keeps waiting for their inputs. A lock-step simulator has one
#: step outstanding (and republishes it); the others are strays. A cycle finds its manifest by the
#: stamp of its reference (no search), so the bound only bounds memory (about 0.3 MB) and what a
#: forger must send to push the simulator's step out: 1024 manifests between two steps (1 ms at 1 kHz)
MAX_PENDING = 1024

CYCLE_PARAMETERS = {
    "cycle": ("odom", "input_policy latest: 'odom' (default): one cycle per accepted odom, at its stamp; "
              "'sim_steps': one cycle per step of a lock-step simulator with sensor streams (its sim/delivered "
              "manifest; lockstep_cycles: steps), the odom propagated to the step's time as in the in-process "
              "loops."),
}


def check_cycle_parameter(p: dict) -> None:
    """Raise :class:`ConfigurationError` naming ``cycle`` when it is unknown, or ``sim_steps``
    without ``input_policy: latest``."""
    c = p.get("cycle", "odom")
    if c not in CYCLES:
        raise ConfigurationError(f"parameter 'cycle': must be one of {CYCLES}, got {c!r}")
    if c == "sim_steps" and p.get("input_policy") != "latest":
        raise ConfigurationError("parameter 'cycle': 'sim_steps' needs input_policy 'latest' (under 'exact' the "
                                 "stamps pair lock-step already)")


def manifest_msg(streams):
    """The ``sim/delivered`` message for the sensor topics ``streams`` (module docstring), every
    stamp 'none'; fill it with :func:`set_manifest`."""
    from .latest_inputs import inputs_used_msg
    m = inputs_used_msg(tuple(streams))
    m.data = [-1.0, 0.0] * (len(m.data) // 2)
    return m


def set_manifest(msg, t_ns: int, stamps) -> None:
    """Write the step time ``t_ns`` and the newest delivered stamp of each stream (None: none yet)
    into ``msg`` (:func:`manifest_msg`)."""
    d = list(divmod(int(t_ns), 1_000_000_000))
    for s in stamps:
        d += [-1, 0] if s is None else list(divmod(int(s), 1_000_000_000))
    msg.data = [float(v) for v in d]


def decode_manifest(msg):
    """``(t_ns, {topic: stamp_ns})`` of a ``sim/delivered`` message; streams with no sample yet are
    left out. ``ValueError`` for another layout or a negative step time."""
    from .latest_inputs import decode_inputs_used
    if any(v != v or abs(v) > 4e9 for v in msg.data):   # NaN, or beyond the sec/nanosec ranges
        raise ValueError("a stamp field is NaN or out of range")
    d = decode_inputs_used(msg)
    t = d.pop("cycle")
    if t < 0:
        raise ValueError(f"negative step time {t} ns")
    return t, {k: v for k, v in d.items() if v >= 0}


class PendingSteps:
    """The step manifests a ``cycle: sim_steps`` controller holds until their barrier completes
    (module docstring): ``steps`` ``{t_ns: {topic: stamp_ns}}``, at most :data:`MAX_PENDING`, in
    step order; ``refused`` counts the manifests refused or dropped. ``window_ns``: the farthest a
    manifest may be stamped ahead of the node clock (the controller's ``stale_timeout``)."""

    __slots__ = ("window_ns", "steps", "_order", "raw", "refused")

    def __init__(self, window_ns: int):
        self.window_ns = int(window_ns)
        self.steps: dict[int, dict] = {}
        self._order: list[int] = []      # the keys of steps, sorted
        self.raw: dict[int, bytes] = {}  # the serialized manifests given with put (to learn a ManifestPeek)
        self.refused = 0

    def too_far(self, t: int, now_ns: int) -> str | None:
        """Why the manifest of step ``t`` is refused for its stamp (counted), or None."""
        ahead = t - now_ns
        if ahead <= self.window_ns:
            return None
        self.refused += 1
        return f"stamped {ahead * 1e-9:.6g} s ahead of the node clock (more than stale_timeout {self.window_ns * 1e-9:g} s)"

    def offer(self, t: int, stamps: dict, now_ns: int, raw: bytes | None = None) -> str | None:
        """Keep the manifest of step ``t`` [ns] (None), or refuse it: the reason (counted)."""
        why = self.too_far(t, now_ns)
        if why is not None:
            return why
        if t not in self.steps and len(self._order) >= MAX_PENDING:
            self.refused += 1
            if t > self._order[-1]:
                return f"{MAX_PENDING} earlier step manifests are waiting for their inputs"
            late = self._order.pop()   # the simulator's step is an early one: keep the earliest
            del self.steps[late]
            self.raw.pop(late, None)
        self.put(t, stamps, raw)
        return None

    def put(self, t: int, stamps: dict, raw: bytes | None = None) -> None:
        """Hold the manifest of step ``t`` (no check: a republished step already commanded); ``raw``
        its bytes, kept with it."""
        if t not in self.steps:
            bisect.insort(self._order, t)
        self.steps[t] = stamps
        if raw is not None:
            self.raw[t] = raw

    def get(self, t: int):
        """The stamps the manifest of step ``t`` names, or None (no such manifest held)."""
        return self.steps.get(t)

    def forget_through(self, t: int) -> None:
        """Forget every manifest stamped ``t`` or earlier (``t``: a step just commanded)."""
        self._forget(bisect.bisect_right(self._order, t))

    def forget_before(self, t: int) -> None:
        """Forget every manifest stamped before ``t`` (their reference or feedforward has passed)."""
        self._forget(bisect.bisect_left(self._order, t))

    def _forget(self, k: int) -> None:
        for x in self._order[:k]:
            del self.steps[x]
            self.raw.pop(x, None)
        del self._order[:k]

    def earliest_first(self) -> list:
        """``[(t_ns, stamps)]`` by step time."""
        return [(t, self.steps[t]) for t in self._order]


class ManifestPeek:
    """The step time of a serialized ``sim/delivered`` manifest read at a fixed offset, without
    decoding it: for the layout of the simulator's own manifests (its length, encapsulation
    header and where ``data`` starts), learned from one the controller answered
    (:meth:`learn`). A storm costs the controller about 1 us a manifest this way instead of
    about 100 (rclpy's deserialization and the layout check: measured 66 and 25 us on the
    loaded 2-core development machine). :meth:`step_time` is None for any other layout (refused
    by the caller: the simulator's manifests never change layout) or for values the full decode
    must judge (NaN, out of range)."""

    __slots__ = ("length", "head", "offset", "fmt")

    def __init__(self, length: int, head: bytes, offset: int, fmt: str):
        self.length, self.head, self.offset, self.fmt = length, head, offset, fmt

    @classmethod
    def learn(cls, raw: bytes, t_ns: int, n_doubles: int):
        """The peek of the layout of ``raw`` (a manifest of step ``t_ns`` whose ``data`` has
        ``n_doubles`` values and is the message's last field), or None if reading it at the
        computed offset does not give ``t_ns`` back (then the caller decodes every manifest)."""
        n = len(raw)
        if n < 8 or n_doubles < 2:
            return None
        pad = raw[3] & 3 if n % 4 == 0 else 0
        fmt = "<dd" if raw[1] & 1 else ">dd"
        offset = n - pad - 8 * n_doubles
        if offset < 4:
            return None
        peek = cls(n, bytes(raw[:4]), offset, fmt)
        return peek if peek.step_time(raw) == t_ns else None

    def step_time(self, raw) -> int | None:
        """The step time [ns] of ``raw`` if it has the learned layout and a plain stamp; else None."""
        if len(raw) != self.length or raw[:4] != self.head:
            return None
        sec, nsec = struct.unpack_from(self.fmt, raw, self.offset)
        if not (0.0 <= sec <= 4e9 and 0.0 <= nsec < 1e9):      # (NaN fails too)
            return None
        return int(sec) * 1_000_000_000 + int(nsec)

    def same_layout(self, raw) -> bool:
        """True if ``raw`` has the learned length and encapsulation header."""
        return len(raw) == self.length and raw[:4] == self.head
