"""The simulators' ``/tf``, ``/tf_static`` and latched ``robot_description`` (what
``robot_state_publisher`` and an odometry broadcaster would publish, from the simulator's exact state).

Used by ``geodyn_sim`` and ``geodyn_actuated_sim`` (:mod:`geodyn_ros.ros.nodes.sim_node`):

* ``/tf`` (``tf2_msgs/TFMessage``, global like ``/clock``; tf2's QoS: reliable, volatile, keep
  last 100): one message per publication with ``world_frame`` -> ``frame_prefix`` + base link (the
  base pose) and, for every moving URDF joint below the base, ``frame_prefix`` + parent link ->
  ``frame_prefix`` + child link at the joint position (:mod:`geodyn_ros.model.frames`), all
  stamped with the simulated time of the state. Always the **exact** state, also under
  ``sensing`` (where ``odom`` and ``joint_states`` carry the sensor samples): ``/tf`` is the truth
  a viewer shows.
* ``/tf_static`` (reliable, transient local, keep last 1): the fixed joints (and the joints the
  simulator locks, e.g. the rotor joints of ``geodyn_actuated_sim``, at their lock position), one
  message, once, stamped with the start time.
* ``robot_description`` (``std_msgs/String``, reliable, transient local, keep last 1: what
  robot_state_publisher publishes, so RViz's RobotModel and late nodes get it), the URDF XML of
  the parameter (``robot_description``, or ``urdf_path`` expanded by xacro), published once at
  start-up when the robot comes from a parameter; when it comes from the topic, whoever
  published it there keeps doing so and the simulator publishes nothing on it.

``tf_rate_hz`` [Hz of simulated time] decimates ``/tf``: the state of the first step at or after
each multiple of ``1 / tf_rate_hz`` is published (no drift: the grid is fixed in simulated time;
at a rate at or above ``1 / timestep`` every step). The default 100 Hz is above what a viewer
draws (RViz renders at 30-60 frames a second and tf2 interpolates between stamps) and costs a
1 kHz simulation one step in ten; 0 turns ``/tf`` and ``/tf_static`` off (e.g. when a
robot_state_publisher of the same robot runs).
"""
from __future__ import annotations

import math

import numpy as np
from std_msgs.msg import String

from geodyn_ros.model.frames import joint_frames

from ..common.description import description_qos
from ..common.params import ConfigurationError, model_source

__all__ = ["PARAMETERS", "SimTransforms", "check_tf_rate"]

PARAMETERS = {
    "tf_rate_hz": (100.0, "Rate [Hz of simulated time] of /tf (world_frame -> base and every moving joint, from "
                   "the exact state); a fixed grid in simulated time (>= 1/timestep: every step). 0 = no /tf "
                   "and no /tf_static. 100 Hz: above what RViz draws, one 1 kHz step in ten."),
}


def check_tf_rate(value) -> float:
    """The ``tf_rate_hz`` parameter, checked (finite, >= 0); :class:`ConfigurationError` otherwise."""
    if not (isinstance(value, float) and math.isfinite(value) and value >= 0.0):
        raise ConfigurationError(f"parameter 'tf_rate_hz': expected a finite rate >= 0 [Hz], got {value!r}")
    return value


class SimTransforms:
    """``/tf``, ``/tf_static`` and ``robot_description`` of a simulator node (module docstring).

    node : the simulator node; params : its checked parameters (``tf_rate_hz``, ``world_frame``,
    ``robot_description``, ``urdf_path``, ``robot_description_topic``); frame_prefix : checked.
    """

    def __init__(self, node, params: dict, frame_prefix: str):
        self.node = node
        rate = check_tf_rate(params["tf_rate_hz"])
        self.period_ns = int(round(1e9 / rate)) if rate > 0 else 0
        self.world_frame = params["world_frame"]
        self.prefix = frame_prefix
        self.pub_tf = self.pub_static = self.pub_description = None
        if self.period_ns:
            try:   # tf2_msgs: a ROS 2 install's, or the one make venv builds (not on PyPI)
                from tf2_msgs.msg import TFMessage

                from ..wire.tf_messages import tf_qos, tf_static_qos
            except ImportError as exc:
                node.get_logger().warning(
                    f"tf_rate_hz {rate:g}: tf2_msgs is not importable ({exc}); /tf and /tf_static are off (a ROS 2 "
                    "install has tf2_msgs; in this package's venv, make venv builds it)")
                self.period_ns = 0
            else:
                self.pub_tf = node.create_publisher(TFMessage, "/tf", tf_qos())
                self.pub_static = node.create_publisher(TFMessage, "/tf_static", tf_static_qos())
        self.frames = None
        self._next_ns = 0          # the next grid point [ns] of simulated time to publish at or after
        self._last_ns = None       # the stamp last published (a republished state is not sent again)
        self.published = 0         # /tf messages sent (tests, the bench)
        src = model_source(params)
        self._description = None if src is None else src[0]

    def setup(self, sim, stamp_ns: int) -> None:
        """Build the frames of ``sim`` (a :class:`geodyn_ros.sim.MujocoSim`: ``model``, ``urdf_text``),
        publish ``/tf_static`` once (stamped ``stamp_ns``) and the latched description."""
        if self._description is not None and self.pub_description is None:
            self._publish_description()
        if not self.period_ns:
            return
        from ..wire.tf_messages import TFWriter
        model, p = sim.model, self.prefix
        self.frames = fr = joint_frames(model, sim.urdf_text)
        self._writer = TFWriter([self.world_frame] + [p + n for n in fr.moving_parents],
                                [p + model.base_link] + [p + n for n in fr.moving_children])
        m = len(fr.moving_joints)
        self._t = np.zeros((m + 1, 3))
        self._q = np.zeros((m + 1, 4))
        if fr.fixed:
            static = TFWriter([p + f[1] for f in fr.fixed], [p + f[2] for f in fr.fixed])
            self.pub_static.publish(static.write(stamp_ns, np.array([f[3] for f in fr.fixed]),
                                                 np.array([f[4] for f in fr.fixed])))
        self._next_ns, self._last_ns = 0, None

    def _publish_description(self) -> None:
        from geodyn_ros.model.urdf import _read_source
        text = self._description
        if not text.lstrip("\ufeff \t\r\n").startswith("<"):
            text = _read_source(text)[0]      # urdf_path: the file, a .xacro expanded
        self.pub_description = self.node.create_publisher(
            String, self.node.get_parameter("robot_description_topic").value.strip() or "robot_description",
            description_qos())
        self.pub_description.publish(String(data=text))

    def publish(self, stamp_ns: int, sim) -> None:
        """``/tf`` of the exact state of ``sim`` at ``stamp_ns`` [ns], when the grid says so
        (module docstring); cheap otherwise (two comparisons)."""
        if self.frames is None or stamp_ns < self._next_ns or stamp_ns == self._last_ns:
            return
        sim.base_position_quaternion(self._t[0], self._q[0])
        self.frames.moving_transforms(sim.q(), self._t[1:], self._q[1:])
        self.pub_tf.publish(self._writer.write(stamp_ns, self._t, self._q))
        self._last_ns = stamp_ns
        self._next_ns = (stamp_ns // self.period_ns + 1) * self.period_ns
        self.published += 1
