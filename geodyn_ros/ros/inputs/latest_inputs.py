"""The input policy of the nodes that read sensor streams: ``latest`` (real sensors) or ``exact``.

``geodyn_node`` (``input_mode: measured``) and the three controllers (``geodyn_controller``,
``geodyn_actuated_controller``, ``geodyn_flat_controller``) read the state as streams with their
own rates and clocks: ``odom`` (``nav_msgs/Odometry``), ``joint_states`` and, for the elastic
joints, ``motor_states`` (``sensor_msgs/JointState``). The parameter ``input_policy`` says how a
cycle combines them:

* ``latest`` (default, for real sensors): **one cycle per accepted odom sample**; the cycle's time
  ``t`` is that odom stamp. Each other sensor stream gives its newest accepted sample, stamped
  ``t_i``, brought to ``t`` by :mod:`geodyn_ros.control.sensing` over its age ``dt = t - t_i``
  (``q + dt qdot`` for joints and motors, the rates held): the rule and its error bound are
  those of that module (at the agile motion of its docstring: 0.08 mm and 0.16 mrad at 4 ms,
  0.5 mm and 1.0 mrad at 10 ms, 2.0 mm and 4.0 mrad at 20 ms, against 8.1 mm and 12.2 mrad ...
  42 mm and 64 mrad for a zero-order hold). A sample with ``|dt|`` over its stream's maximum age
  (parameters ``joint_states_max_age``, ``motor_states_max_age``; a sample newer than the cycle,
  ``dt < 0``, is propagated back and bounded alike) is refused: the cycle is skipped and
  reported. ``geodyn_node`` with ``rate_hz > 0`` runs the cycles on a timer instead: ``t`` is the
  node clock and the odom is propagated too (pose with its twist, :func:`propagate_base`),
  within ``odom_max_age``. The reference and the feedforward inputs are sampled at ``t`` by the
  node's existing rule. Every output carries ``t``.
* ``exact`` (lock-step simulators): the stamp pairing of before (``geodyn_node``:
  :mod:`geodyn_ros.ros.inputs.input_sync`; the controllers: ``sync_stamps``), bit for bit.

**Default maximum age: 20 ms** (:data:`DEFAULT_MAX_AGE`), two periods of a 100 Hz stream (the
slowest joint or estimator stream the defaults are for: one lost sample is bridged) and five to
ten of 250-500 Hz streams; the propagation error there is the 20 ms row above (2.0 mm, 4.0 mrad
at the agile motion), below the feedforward's model errors; a sample twice as old would have four
times the error.

**What a test and a person can check.** Each cycle that publishes can be followed on the
optional topic ``~/inputs_used`` (:class:`InputsUsed`, published only while subscribed): the
cycle's time and the stamp of every input sample the cycle used. ``/diagnostics`` carries, in
every summary, the mean and the largest age of each input per stream over the period
(:class:`AgeStats`, notes ``input_age[<stream>]``).

**QoS** (:data:`POLICY_PARAMETERS`): ``sensor_reliability`` (default ``best_effort``) applies to
the sensor streams, ``input_reliability`` (default ``reliable``) to the inputs geodyn's own nodes
publish (reference, feedforward). A best-effort subscription matches both best-effort publishers
(PX4's uXRCE-DDS topics, most drivers, rclcpp's ``SensorDataQoS``) and reliable ones; a reliable
one matches only reliable publishers.
"""
from __future__ import annotations

import numpy as np

from geodyn_ros.control.sensing import LatestSample, propagate_base, propagate_joints

from ..common.params import ConfigurationError

__all__ = ["POLICIES", "DEFAULT_MAX_AGE", "POLICY_PARAMETERS", "RELIABILITY_PARAMETERS", "AgeStats",
           "HeldJoints", "InputsUsed", "MeasuredLatest", "check_policy_parameters", "decode_inputs_used",
           "inputs_used_msg", "max_age_ns", "max_age_parameter", "refusal_line"]

POLICIES = ("latest", "exact")
#: default maximum age of a sensor sample [s] (module docstring)
DEFAULT_MAX_AGE = 0.02



def max_age_parameter(stream: str) -> tuple:
    """``(default, description)`` of the parameter ``<stream>_max_age``."""
    return (DEFAULT_MAX_AGE, f"Largest |age| [s] of the newest {stream} sample at the cycle time under input_policy "
            "latest (propagated over its age; older or newer is refused). Default 0.02: two periods of a 100 Hz "
            "stream.")


#: the policy parameters every sensor-reading node declares (name -> (default, description))
POLICY_PARAMETERS = {
    "input_policy": ("latest", "'latest' (real sensors): one cycle per accepted odom, stamped with it; the newest "
                     "joint_states (and motor_states) propagated to its time (q + dt qdot) within their maximum "
                     "age. 'exact': the stamp pairing of lock-step simulators (sync_stamps, sync_tolerance)."),
    "joint_states_max_age": max_age_parameter("joint_states"),
}
#: the QoS reliability of the subscriptions
RELIABILITY_PARAMETERS = {
    "sensor_reliability": ("best_effort", "QoS reliability of the sensor subscriptions (odom, joint_states, "
                           "motor_states): 'best_effort' (default: matches sensor-data publishers such as PX4 and "
                           "most drivers, and reliable ones) or 'reliable' (matches reliable publishers only)."),
    "input_reliability": ("reliable", "QoS reliability of the other input subscriptions (reference, feedforward, "
                          "published by geodyn's nodes): 'reliable' or 'best_effort' (matches reliable and "
                          "best-effort publishers alike; a sample lost on the wire is not resent)."),
}


def check_policy_parameters(p: dict) -> None:
    """Raise :class:`ConfigurationError` naming the first of ``p``'s policy, maximum-age and
    reliability parameters (those present) that is out of range."""
    if "input_policy" in p and p["input_policy"] not in POLICIES:
        raise ConfigurationError(f"parameter 'input_policy': must be one of {POLICIES}, got {p['input_policy']!r}")
    for name in ("odom_max_age", "joint_states_max_age", "motor_states_max_age"):
        if name in p and not (np.isfinite(p[name]) and p[name] > 0):
            raise ConfigurationError(f"parameter '{name}': must be a finite number of seconds > 0, got {p[name]}")
    for name in ("sensor_reliability", "input_reliability"):
        if name in p and p[name] not in ("reliable", "best_effort"):
            raise ConfigurationError(f"parameter '{name}': must be 'reliable' or 'best_effort', got {p[name]!r}")


def max_age_ns(p: dict, stream: str) -> int:
    """The parameter ``<stream>_max_age`` [s] of ``p`` in integer nanoseconds."""
    return int(round(p[f"{stream}_max_age"] * 1e9))


def refusal(sample: LatestSample, t_ns: int) -> str:
    """Why ``sample`` gives nothing at the cycle time ``t_ns`` (one line, for ``/diagnostics``)."""
    return refusal_line(sample.name, sample.stamp_ns, sample.max_age_ns, t_ns)


def refusal_line(name: str, stamp_ns, max_age_ns: int, t_ns: int) -> str:
    """:func:`refusal` of a stream ``name`` whose newest sample is stamped ``stamp_ns`` (None: no
    sample yet), over its maximum age ``max_age_ns`` at the cycle time ``t_ns``."""
    if stamp_ns is None:
        return f"{name}: no sample yet at the cycle time {t_ns * 1e-9:.6f} s; cycle skipped"
    age = t_ns - stamp_ns
    return (f"{name}: newest sample {abs(age) * 1e-6:.3f} ms {'older' if age > 0 else 'newer'} than the cycle time "
            f"{t_ns * 1e-9:.6f} s, over {name}_max_age {max_age_ns * 1e-6:g} ms; cycle skipped")


class AgeStats:
    """Mean and largest age [ns] of each input stream over a summary period.

    ``add(i, age_ns)`` counts one used sample of stream ``i`` (``streams[i]``); the age is the
    cycle time minus the sample's stamp (negative: a sample newer than the cycle). :meth:`notes`
    gives ``{"input_age[<stream>]": "mean <m> ms, max |age| <x> ms over <n> cycles"}`` and starts
    a new period. Plain Python integers: no object per cycle."""

    __slots__ = ("streams", "total", "count", "largest")

    def __init__(self, streams):
        self.streams = tuple(streams)
        self.total = [0] * len(self.streams)
        self.count = [0] * len(self.streams)
        self.largest = [0] * len(self.streams)

    def add(self, i: int, age_ns: int) -> None:
        self.total[i] += age_ns
        self.count[i] += 1
        a = age_ns if age_ns >= 0 else -age_ns
        if a > self.largest[i]:
            self.largest[i] = a

    def notes(self) -> dict:
        out = {}
        for i, s in enumerate(self.streams):
            n = self.count[i]
            out[f"input_age[{s}]"] = (f"mean {self.total[i] / n * 1e-6:.3f} ms, max |age| {self.largest[i] * 1e-6:.3f} "
                                      f"ms over {n} cycles" if n else "no cycle in this period")
            self.total[i] = self.count[i] = self.largest[i] = 0
        return out


class MeasuredLatest:
    """``geodyn_node``'s measured state under ``input_policy: latest`` (module docstring).

    ``offer(topic, stamp_ns, entry)`` keeps the newest accepted ``odom`` / ``joint_states`` entry
    (the input_sync buffers' entries, filled by the parsers: odom ``C`` (4, 4), ``V0`` (6,) spatial
    twist; joint_states ``q``, ``qd`` (n,)); :meth:`state_at` writes the state at a cycle time."""

    def __init__(self, odom_max_age_ns: int, js_max_age_ns: int):
        self.odom = LatestSample("odom", odom_max_age_ns, odom_max_age_ns)
        self.js = LatestSample("joint_states", js_max_age_ns, js_max_age_ns)

    def offer(self, topic: str, stamp_ns: int, entry) -> None:
        (self.odom if topic == "odom" else self.js).offer(stamp_ns, entry)

    def state_at(self, t_ns: int, timer: bool, C, V0, q, qd):
        """Write the state at the cycle time ``t_ns`` into ``C`` (4, 4), ``V0`` (6,), ``q``, ``qd``
        (n,): the newest odom (``timer``: propagated from its stamp, else the odom stamped
        ``t_ns`` itself) and the newest joint_states propagated over its age. Returns
        ``(t_odom, t_js)`` or the reason (str) when a sample is missing or over its maximum age."""
        if timer:
            got = self.odom.take(t_ns)
            if got is None:
                return refusal(self.odom, t_ns)
            t_odom, e, age = got
            propagate_base(e.C, e.V0, age * 1e-9, out=C)
        else:
            t_odom, e = self.odom.stamp_ns, self.odom.data
            C[:] = e.C
        V0[:] = e.V0
        got = self.js.take(t_ns)
        if got is None:
            return refusal(self.js, t_ns)
        t_js, j, age = got
        propagate_joints(j.q, j.qd, age * 1e-9, out=q)
        qd[:] = j.qd
        return t_odom, t_js

    def reset(self) -> None:
        """Forget the samples (simulated time was reset)."""
        self.odom.reset()
        self.js.reset()


class HeldJoints:
    """The newest accepted sample of a stream of positions and rates (``joint_states`` or
    ``motor_states`` of a controller under ``input_policy: latest``).

    A message is decoded into :attr:`scratch` (``(q, qd)``, (n,) each); :meth:`offer` keeps it if
    it is newer than the sample held (the two arrays swap: no copy); :meth:`take_into` writes the
    held sample propagated to a cycle time."""

    def __init__(self, name: str, n: int, max_age_ns: int, shapes=None):
        self.sample = LatestSample(name, max_age_ns, max_age_ns)
        shapes = ((n,), (n,)) if shapes is None else shapes   # odometry (cycle sim_steps): (4, 4), (6,), (6,)
        self.scratch = tuple(np.zeros(s) for s in shapes)
        self._spare = tuple(np.zeros(s) for s in shapes)

    def offer(self, stamp_ns: int) -> bool:
        if not self.sample.offer(stamp_ns, self.scratch):
            return False
        self.scratch, self._spare = self._spare, self.scratch
        return True

    def take_into(self, t_ns: int, q, qd):
        """The held sample at ``t_ns`` into ``q``, ``qd``: its stamp, or the reason (str) it is refused."""
        got = self.sample.take(t_ns)
        if got is None:
            return refusal(self.sample, t_ns)
        stamp, (q0, qd0), age = got
        propagate_joints(q0, qd0, age * 1e-9, out=q)
        qd[:] = qd0
        return stamp


# ----------------------------------------------------------------------------- ~/inputs_used
def inputs_used_msg(names):
    """The ``~/inputs_used`` message (``std_msgs/Float64MultiArray``) for the inputs ``names``, all
    stamps 0. Layout: ``layout.dim[0] = {label: "cycle,<names...>", size: k, stride: 2k}``,
    ``layout.dim[1] = {label: "sec,nanosec", size: 2, stride: 2}``, ``data_offset = 0``; row ``i``
    (``data[2i]``, ``data[2i + 1]``) is the stamp (sec, nanosec) of input ``i``; row 0 is the
    cycle's time, the stamp of the outputs the cycle published."""
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension
    labels = ("cycle", *names)
    k = len(labels)
    m = Float64MultiArray()
    m.layout.dim = [MultiArrayDimension(label=",".join(labels), size=k, stride=2 * k),
                    MultiArrayDimension(label="sec,nanosec", size=2, stride=2)]
    m.layout.data_offset = 0
    m.data = [0.0] * (2 * k)
    return m


def decode_inputs_used(msg) -> dict:
    """``{"cycle": stamp_ns, <input>: stamp_ns, ...}`` of an ``~/inputs_used`` message (layout:
    :func:`inputs_used_msg`); ``ValueError`` if the layout is not that one."""
    dims = msg.layout.dim
    if len(dims) != 2 or dims[1].label != "sec,nanosec" or dims[0].size * 2 != len(msg.data):
        raise ValueError("not an ~/inputs_used layout")
    names = dims[0].label.split(",")
    if len(names) != dims[0].size or names[0] != "cycle":
        raise ValueError("not an ~/inputs_used layout")
    d = msg.data
    return {n: int(d[2 * i]) * 1_000_000_000 + int(d[2 * i + 1]) for i, n in enumerate(names)}


class InputsUsed:
    """The publisher of ``~/inputs_used`` (:func:`inputs_used_msg`) of a node, for the inputs
    ``names``: :meth:`publish` rewrites the stamps in a serialized template and publishes it, only
    while the topic has a subscriber (one sub-microsecond query per cycle)."""

    def __init__(self, node, names, qos):
        from std_msgs.msg import Float64MultiArray

        from ..wire.cdr import multiarray_template
        self.names = tuple(names)
        self.pub = node.create_publisher(Float64MultiArray, "~/inputs_used", qos)
        self._subs = self.pub.handle.get_subscription_count
        self._raw = multiarray_template(inputs_used_msg(self.names))
        self._data = self._raw.fields["data"]

    def publish(self, stamps) -> None:
        """Publish the stamps [ns] (the cycle's time, then one per name) if anyone subscribes."""
        if not self._subs():
            return
        d = self._data
        for i, s in enumerate(stamps):
            d[2 * i], d[2 * i + 1] = divmod(s, 1_000_000_000)
        self.pub.publish(self._raw.payload())
