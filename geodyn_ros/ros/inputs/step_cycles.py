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
"""
from __future__ import annotations

from ..common.params import ConfigurationError

__all__ = ["CYCLES", "CYCLE_PARAMETERS", "MANIFEST_TOPIC", "check_cycle_parameter", "decode_manifest",
           "manifest_msg"]

CYCLES = ("odom", "sim_steps")
#: the step manifest's topic (relative: it follows the namespace)
MANIFEST_TOPIC = "sim/delivered"

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
