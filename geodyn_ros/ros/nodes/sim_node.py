"""``geodyn_sim``: MuJoCo simulator in the loop, with Gazebo + ros_gz_bridge-like topics.

Publishes, after every step (stamped with the simulated time):

* ``/clock`` (``rosgraph_msgs/Clock``) — the node itself runs on the wall clock and is the
  time source of every ``use_sim_time`` node;
* ``odom`` (``nav_msgs/Odometry``): base-link pose in ``world_frame``, twist in the base-link
  frame (REP 105: velocity of the base-link origin and angular velocity, base axes);
* ``joint_states`` (``sensor_msgs/JointState``): ``position``, ``velocity`` and the applied
  ``effort`` of every model joint, by name;
* ``/tf`` (``tf2_msgs/TFMessage``, global, at ``tf_rate_hz`` of simulated time, default 100 Hz):
  ``world_frame`` -> base link and every moving joint's parent -> child link, from the exact state;
  ``/tf_static`` once (fixed and locked joints); ``robot_description`` latched when the robot comes
  from a parameter (:mod:`geodyn_ros.ros.nodes.sim_transforms`).

Subscribes ``cmd/wrench`` (``geometry_msgs/WrenchStamped`` in the base-link frame, about its
origin, ``frame_id`` = ``frame_prefix`` + base link, or empty) and ``cmd/joint_efforts``
(``sensor_msgs/JointState`` ``effort`` by name; extra joints ignored). Commands are held between
steps (zero-order hold). ``odom``'s ``child_frame_id`` is ``frame_prefix`` + base link.

Topics are relative (they follow the node's namespace) except ``/clock``, which is global by ROS
convention: every ``use_sim_time`` node of the domain reads ``/clock``, so run one simulator per
ROS domain (or remap ``/clock`` of a second one).

``lockstep: true`` (default): after publishing the state at time ``t`` the simulator waits for
both commands stamped ``t``, then steps — deterministic, and as fast as the loop can run, like
Gazebo with a lock-stepped controller. If no command arrives within ``command_timeout`` wall
seconds it republishes the state (late joiners, lost messages). ``lockstep: false`` steps on a
wall-clock timer at ``real_time_factor`` x real time with the latest commands.

The robot comes from ``robot_description`` / ``urdf_path`` or, with neither set, from the
``robot_description`` topic (:mod:`geodyn_ros.ros.common.description`): the MuJoCo model is built
**once**, from the first valid description, and the simulation starts (time 0, the initial
state of the parameters; nothing, not even ``/clock``, is published before). A later different
description is refused with a report (the simulation keeps its robot; restart the node to
change it). ``initial_joint_*`` that do not fit the description's joints refuse it too.

**Sensor streams** (``sensing``, ``sensors_file``, ``sensor_seed``): with a profile other than
``perfect`` (default: the exact state at every step, as above, bit for bit) ``odom`` and
``joint_states`` are the samples of the seeded streams of :class:`geodyn_ros.sim.sensors.SensorSuite`
(rate, latency, noise, quantization; the same suite and seed as the in-process loops'
:class:`geodyn_ros.loops.sensed.SensedInputs`): each sample is **stamped with its measurement
time** and **published at its delivery time** (the first step at or after measurement + latency),
in simulated time. At ``t = 0`` one exact sample of the start state is published (a vehicle at
rest knows where it is). The IMU stream is not published. Lock-step then waits
(``lockstep_cycles: odom``, the default), after a step at which an odometry sample was
delivered, for the commands stamped with **that sample's stamp** (what a controller under
``input_policy: latest``, ``cycle: odom`` answers); a step delivering no odometry is followed by
the next one at once, with the held commands. With ``lockstep_cycles: steps`` it publishes the
step manifest ``sim/delivered`` after every step (:mod:`geodyn_ros.ros.inputs.step_cycles`) and
waits for the commands stamped with the step (a controller's ``cycle: sim_steps``: the in-process
loops' rule, to rounding).
"""
from __future__ import annotations

import array
import math
import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState

from geodyn_ros.lie import Ad, Ad_inv, matrix_to_quat

from ..wire.conversions import (InputError, JointNameMatcher, parse_body_wrench, pose_matrix, set_stamp,
                          stamp_to_ns)
from ..common.diagnostics import DiagnosticsReporter, guard, guard_time_source
from ..common.description import TOPIC_PARAMETER, ModelSource
from ..common.params import FRAME_PREFIX_DESCRIPTION, ConfigurationError, check_frame_prefix, declare_parameters
from ..common.runtime import control_qos, run_nodes
from . import sim_transforms
from .sim_transforms import SimTransforms

__all__ = ["PARAMETERS", "SimNode", "main"]

PARAMETERS = {
    "robot_description": ("", "URDF XML string of the simulated robot."),
    "urdf_path": ("", "Path of a .urdf/.xacro file; used when robot_description is empty."),
    "robot_description_topic": TOPIC_PARAMETER,
    "base_link": ("", "Floating base link; empty = the URDF root."),
    "timestep": (0.001, "Integration step [s]."),
    "gravity": ([0.0, 0.0, -9.81], "Gravity acceleration in the world frame [m/s^2]."),
    "integrator": ("RK4", "MuJoCo integrator: RK4, euler, implicitfast, implicit."),
    "lockstep": (True, "Step only when the commands for the current time have arrived."),
    "real_time_factor": (1.0, "Without lockstep: simulated seconds per wall second (0 = as fast as possible)."),
    "command_timeout": (0.5, "Lockstep: republish the state after this many wall seconds without commands."),
    "world_frame": ("world", "Odometry header.frame_id (not prefixed by frame_prefix)."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: the odom child_frame_id and the cmd/wrench "
                     "frame_id check."),
    "initial_base_pose": ([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], "x y z qx qy qz qw of the base in the world."),
    "initial_base_twist": ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "REP 105 base twist: vx vy vz wx wy wz in base axes."),
    "initial_joint_positions": ([], "Initial q in model.joint_names order (empty = zeros)."),
    "initial_joint_velocities": ([], "Initial qdot in model.joint_names order (empty = zeros)."),
    "joint_limits": (True, "Enforce URDF joint limits."),
    "qos_depth": (2, "Keep-last depth of the control topics."),
    "max_command": (1e6, "Plausibility limit: every component of cmd/wrench [N, N m] and cmd/joint_efforts; "
                    "larger commands are refused like NaN."),
    "sensing": ("perfect", "Sensor profile of sensors_file: 'perfect' (the exact state at every step) or e.g. "
                "'mocap', 'onboard': odom and joint_states are its seeded streams, stamped with their "
                "measurement time and published at measurement + latency (simulated time)."),
    "sensors_file": ("", "Sensors YAML of the profiles (doc/reference/sensors_file.md); empty = the shipped "
                     "config/sensors.yaml."),
    "sensor_seed": (0, "Seed (integer >= 0) of the sensor streams' noise and phases; the same seed gives the "
                    "same streams as the in-process loops (geodyn_fly --sensing PROFILE --seed N)."),
    "lockstep_cycles": ("odom", "Lock-step with sensor streams: 'odom' (default): wait for the commands stamped "
                        "with each odometry sample delivered (a controller's cycle: odom); 'steps': publish the step "
                        "manifest sim/delivered after every step and wait for the commands stamped with the step "
                        "(a controller's cycle: sim_steps; the in-process loops' rule)."),
    "vehicle_size": (0.0, "Vehicle radius L [m] of the sensors' 'markers' attitude noise; 0 = the rotors' "
                     "radius (geodyn_actuated_sim) or 0.25 m (geodyn_sim)."),
    **sim_transforms.PARAMETERS,
}


class SimNode(Node):
    """The MuJoCo simulator node (see the module docstring)."""

    #: the parameter table this class declares (subclasses extend it)
    PARAMETERS = PARAMETERS
    #: the commands lock-step waits for (the watchdog's log line)
    COMMAND_TOPICS = "cmd/wrench and cmd/joint_efforts"
    #: the sensor topics the step manifest names (lockstep_cycles: steps)
    STEP_STREAMS = ("odom", "joint_states")

    def __init__(self, node_name: str = "geodyn_sim", **kwargs):
        super().__init__(node_name, **kwargs)
        from geodyn_ros.sim import MujocoSim  # noqa: F401  MuJoCo missing: fail at start-up

        p = declare_parameters(self, self.PARAMETERS)
        if self.get_parameter("use_sim_time").value:
            raise ConfigurationError("parameter 'use_sim_time': the simulator is the clock source; "
                                     "it must run on the wall clock (use_sim_time false)")
        self.frame_prefix = check_frame_prefix(p["frame_prefix"])
        if not (p["timestep"] > 0 and math.isfinite(p["timestep"])):
            raise ConfigurationError(f"parameter 'timestep': must be > 0, got {p['timestep']}")
        if not (p["real_time_factor"] >= 0 and p["command_timeout"] > 0):
            raise ConfigurationError("parameters 'real_time_factor' >= 0 and 'command_timeout' > 0 required")
        self._p = p
        if p["lockstep_cycles"] not in ("odom", "steps"):
            raise ConfigurationError(f"parameter 'lockstep_cycles': must be 'odom' or 'steps', got "
                                     f"{p['lockstep_cycles']!r}")
        self.step_cycles = p["lockstep_cycles"] == "steps"
        self._newest = {}   # sensor topic -> stamp [ns] of its newest sample delivered (the step manifest)
        self.profile = self._sensor_profile(p)   # None: the exact state (perfect)
        self.suite = None                        # the SensorSuite, made with the model
        #: with sensor streams, a dict to fill (stamp [ns] -> (C, q) exact state at every step): the
        #: closed-loop runners' record of the truth, which the topics no longer carry (None: not kept)
        self.truth = None
        self._C0, self._V0 = self._initial_base(p)
        self.sim = self.model = None   # set by _setup_model (at start-up, or from the topic)
        self.dt_ns = int(round(p["timestep"] * 1e9))
        self.steps = 0
        self.lockstep = p["lockstep"]
        self.world_frame = p["world_frame"]
        self.base_frame = None   # frame_prefix + base link, set by _setup_model
        self._wrench_stamp = self._tau_stamp = None
        qos = control_qos(p["qos_depth"])
        self.pub_clock = self.create_publisher(ClockMsg, "/clock", control_qos(10))
        self.pub_odom = self.create_publisher(Odometry, "odom", qos)
        self.pub_joints = self.create_publisher(JointState, "joint_states", qos)
        if self.step_cycles:
            from std_msgs.msg import Float64MultiArray

            from ..inputs.step_cycles import MANIFEST_TOPIC, manifest_msg
            self.pub_manifest = self.create_publisher(Float64MultiArray, MANIFEST_TOPIC, qos)
            self._manifest = manifest_msg(self.STEP_STREAMS)
        self.create_subscription(WrenchStamped, "cmd/wrench", guard(self, self._on_wrench, "cmd/wrench"), qos)
        self.create_subscription(JointState, "cmd/joint_efforts",
                                 guard(self, self._on_efforts, "cmd/joint_efforts"), qos)
        self._clock_msg = ClockMsg()
        self.tf = SimTransforms(self, p, self.frame_prefix)   # /tf, /tf_static, latched robot_description
        self.diag = DiagnosticsReporter(self, f"{self.get_name()}: simulation", "")

        wall = Clock(clock_type=ClockType.STEADY_TIME)
        self._last_step_wall = time.monotonic()
        if self.lockstep:
            self.create_timer(p["command_timeout"], guard(self, self._on_watchdog, "watchdog timer"), clock=wall)
        else:
            rtf = p["real_time_factor"]
            period = p["timestep"] / rtf if rtf > 0 else 1e-4
            self.create_timer(period, guard(self, self._on_free_run, "free-run timer"), clock=wall)
        guard_time_source(self)
        # the simulation: now from robot_description / urdf_path, or once from the topic
        self.model_source = ModelSource(self, p, self.diag, load=self._build_sim, apply=self._setup_model,
                                        model_of=lambda sim: sim.model, replace=False)

    # ------------------------------------------------------------------ the model
    def _build_sim(self, source):
        """The :class:`geodyn_ros.sim.MujocoSim` of ``source`` (path or URDF XML); touches no
        node state (for the topic it runs on the loader thread)."""
        from geodyn_ros.sim import MujocoSim  # MuJoCo is only needed by this node
        p = self._p
        return MujocoSim(source, base_link=p["base_link"] or None, timestep=p["timestep"],
                         gravity=p["gravity"], integrator=p["integrator"], joint_limits=p["joint_limits"])

    def _setup_model(self, sim, first: bool = True) -> None:
        """Install ``sim`` (the only one: a later description is refused, ``replace=False``), put
        it in the initial state of the parameters and publish that state. Raises
        :class:`ConfigurationError` (nothing changed) if ``initial_joint_*`` do not fit its joints."""
        n = sim.model.n_joints
        q = self._joint_param(self._p, "initial_joint_positions", n)
        qd = self._joint_param(self._p, "initial_joint_velocities", n)
        sim.reset(self._C0, self._V0, q, qd, time=0.0)
        self.sim, self.model = sim, sim.model
        self.diag.hardware_id = self.model.name
        self._matcher = JointNameMatcher(self.model.joint_names)
        self._cmd_wrench = np.zeros(6)
        self._cmd_tau = np.zeros(n)
        self._odom = Odometry()
        self._odom.header.frame_id = self.world_frame
        self.base_frame = self.frame_prefix + self.model.base_link   # frame id of the base link
        self._odom.child_frame_id = self.base_frame
        self._js = JointState()
        self._js.name = list(self.model.joint_names)
        if self.profile is not None:
            from geodyn_ros.sim.sensors import SensorSuite
            self.suite = SensorSuite(self.profile, seed=self._p["sensor_seed"], size=self._vehicle_size(sim),
                                     gravity=sim.gravity, start=0.0)
            self._sampled_ns = None    # the step whose samples were taken (once per step)
            self._await_ns = None      # lock-step: the stamp of the odometry delivered at this step
            self._last_sent = {}       # stream -> its last published (stamp, sample): republished as is
        self._last_step_wall = time.monotonic()
        self.tf.setup(sim, self.stamp_ns)
        self.publish_state()

    @staticmethod
    def _sensor_profile(p):
        """The sensor profile of ``sensing`` in ``sensors_file`` (None for a perfect one);
        :class:`ConfigurationError` (one line naming the parameter) for a bad value."""
        from geodyn_ros.sim.sensor_file import load_sensor_profiles
        seed = p["sensor_seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigurationError(f"parameter 'sensor_seed': expected an integer >= 0, got {seed!r}")
        size = p["vehicle_size"]
        if not (math.isfinite(size) and size >= 0):
            raise ConfigurationError(f"parameter 'vehicle_size': expected a finite radius >= 0 [m], got {size!r}")
        try:
            profiles = load_sensor_profiles(p["sensors_file"] or None)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'sensors_file': {exc}") from None
        name = p["sensing"]
        if name not in profiles:
            raise ConfigurationError(f"parameter 'sensing': no profile {name!r} in the sensors file; the profiles "
                                     f"are {', '.join(profiles)}")
        prof = profiles[name]
        return None if prof.perfect else prof

    def _vehicle_size(self, sim) -> float:
        """The radius L [m] the sensors' 'markers' noise uses (parameter ``vehicle_size``)."""
        size = self._p["vehicle_size"]
        if size > 0:
            return float(size)
        frames = getattr(sim, "rotor_frames", None)
        if frames is None:
            return 0.25
        from geodyn_ros.loops.fly_references import vehicle_size
        return vehicle_size(frames)

    @staticmethod
    def _initial_base(p):
        """``(C, V)``: the initial base pose and spatial twist of the parameters."""
        pose = p["initial_base_pose"]
        if len(pose) != 7:
            raise ConfigurationError("parameter 'initial_base_pose': need 7 numbers x y z qx qy qz qw")
        C = np.eye(4)
        try:
            pose_matrix(*pose, C, "parameter 'initial_base_pose'")
        except InputError as exc:
            raise ConfigurationError(str(exc)) from exc
        tw = p["initial_base_twist"]
        if len(tw) != 6 or not np.isfinite(tw).all():
            raise ConfigurationError("parameter 'initial_base_twist': need 6 finite numbers vx vy vz wx wy wz")
        return C, Ad(C) @ np.r_[tw[3:], tw[:3]]

    @staticmethod
    def _joint_param(p, name, n):
        v = p[name]
        if not v:
            return np.zeros(n)
        if len(v) != n or not np.isfinite(v).all():
            raise ConfigurationError(f"parameter '{name}': need {n} finite numbers (model.joint_names order)")
        return np.array(v, dtype=float)

    # ------------------------------------------------------------------ time and state
    @property
    def stamp_ns(self) -> int:
        """Simulated time [ns] of the current state (an exact multiple of the timestep)."""
        return self.steps * self.dt_ns

    @property
    def command_stamp_ns(self) -> int | None:
        """The stamp [ns] of the commands lock-step waits for: the current state's, or with sensor
        streams that of the odometry delivered at this step (None: none, the step goes on)."""
        return self.stamp_ns if self.suite is None or self.step_cycles else self._await_ns

    def publish_state(self) -> None:
        """Publish ``/clock``, ``odom`` and ``joint_states`` for the current state (with sensor
        streams: the samples delivered now, module docstring)."""
        stamp = self.stamp_ns
        set_stamp(self._clock_msg.clock, stamp)
        self.pub_clock.publish(self._clock_msg)
        self.tf.publish(stamp, self.sim)   # the exact state, also under sensing (decimated: tf_rate_hz)
        if self.suite is not None:
            self._publish_sensed(stamp)
        else:
            self._publish_odom(stamp, self.sim.base_pose(), self.sim.base_twist_body())
            self._publish_joints(stamp, self.sim.q(), self.sim.qd())
            self._newest.update(odom=stamp, joint_states=stamp)
        if self.step_cycles:
            self._publish_manifest(stamp)

    def _publish_manifest(self, stamp: int) -> None:
        """``sim/delivered`` (:mod:`geodyn_ros.ros.inputs.step_cycles`): the step's time and the
        newest delivered stamp of each of :attr:`STEP_STREAMS` (the motors: every step's)."""
        from ..inputs.step_cycles import set_manifest
        newest = {**self._newest, "motor_states": stamp}
        set_manifest(self._manifest, stamp, [newest.get(k) for k in self.STEP_STREAMS])
        self.pub_manifest.publish(self._manifest)

    def _publish_sensed(self, stamp: int) -> None:
        """The sensor samples delivered at ``stamp`` [ns] (taken once per step; a republished state
        sends the last samples again)."""
        if self._sampled_ns == stamp:
            sent = sorted(self._last_sent.items(), key=lambda kv: kv[0] != "odometry")
        else:
            self._sampled_ns, self._await_ns = stamp, None
            sim, t = self.sim, stamp * 1e-9
            if self.truth is not None:
                self.truth[stamp] = (sim.base_pose(), sim.q().copy())
            sent = []
            if self.steps == 0:       # one exact sample of the start state (module docstring)
                from geodyn_ros.sim.sensors import JointSample, OdometrySample
                sent = [("odometry", (stamp, OdometrySample(sim.base_pose(), sim.base_twist()))),
                        ("joints", (stamp, JointSample(sim.q().copy(), sim.qd().copy(), None, None)))]
            self.suite.sample(t, sim)
            sent += [(name, (int(round(s * 1e9)), data)) for name, s, data in self.suite.delivered(t)
                     if name != "imu"]
            for name, item in sent:
                self._last_sent[name] = item
                self._newest["odom" if name == "odometry" else "joint_states"] = item[0]
                if name == "odometry":
                    self._await_ns = item[0]
        for name, (s, data) in sent:
            if name == "odometry":
                C = data.C
                self._publish_odom(s, C, Ad_inv(C) @ data.V)
            else:
                self._publish_joints(s, data.q, data.qd)

    def _publish_odom(self, stamp: int, C, Vb) -> None:
        quat = matrix_to_quat(C[:3, :3], "xyzw")
        o = self._odom
        set_stamp(o.header.stamp, stamp)
        pp, po = o.pose.pose.position, o.pose.pose.orientation
        pp.x, pp.y, pp.z = float(C[0, 3]), float(C[1, 3]), float(C[2, 3])
        po.x, po.y, po.z, po.w = (float(v) for v in quat)
        lin, ang = o.twist.twist.linear, o.twist.twist.angular
        lin.x, lin.y, lin.z = (float(v) for v in Vb[3:])
        ang.x, ang.y, ang.z = (float(v) for v in Vb[:3])
        self.pub_odom.publish(o)

    def _publish_joints(self, stamp: int, q, qd) -> None:
        js = self._js
        set_stamp(js.header.stamp, stamp)
        js.position = array.array("d", np.ascontiguousarray(q, float).tobytes())
        js.velocity = array.array("d", np.ascontiguousarray(qd, float).tobytes())
        js.effort = array.array("d", self._applied_effort().tobytes())
        self.pub_joints.publish(js)

    def _applied_effort(self) -> np.ndarray:
        """The joint torques acting on the links (``joint_states.effort``): the held command."""
        return self._cmd_tau

    def step(self) -> None:
        """Apply the held commands, advance one timestep and publish the new state (lock-step with
        sensor streams: and on, while no odometry is delivered)."""
        while True:
            self.sim.set_command(self._cmd_wrench, self._cmd_tau)
            self.sim.step()
            self.steps += 1
            self._last_step_wall = time.monotonic()
            self.diag.ok()
            self.publish_state()
            if not (self.lockstep and self.suite is not None and not self.step_cycles and self._await_ns is None):
                return

    # ------------------------------------------------------------------ commands
    def _ready(self, topic: str) -> bool:
        """Start of every callback: apply a loaded robot_description; False (a command is
        reported as not used) while there is no simulation yet."""
        self.model_source.poll()
        if self.sim is None:
            if topic:
                self.model_source.refuse_input(topic)
            return False
        return True

    def _on_wrench(self, msg) -> None:
        if not self._ready("cmd/wrench"):
            return
        W = np.empty(6)   # parsed aside: a bad message never alters the command in use
        try:
            parse_body_wrench(msg, self.base_frame, W, "cmd/wrench")
            self._plausible(W, "cmd/wrench")
            stamp = stamp_to_ns(msg.header.stamp)
        except InputError as exc:
            self.diag.problem("cmd/wrench", str(exc))
            return
        self._cmd_wrench[:] = W
        self._wrench_stamp = stamp
        self._maybe_step()

    def _on_efforts(self, msg) -> None:
        if not self._ready("cmd/joint_efforts"):
            return
        tau = np.empty_like(self._cmd_tau)
        try:
            self._matcher.gather(msg.name, msg.effort, tau, "cmd/joint_efforts")
            self._plausible(tau, "cmd/joint_efforts")
            stamp = stamp_to_ns(msg.header.stamp)
        except InputError as exc:
            self.diag.problem("cmd/joint_efforts", str(exc))
            return
        self._cmd_tau[:] = tau
        self._tau_stamp = stamp
        self._maybe_step()

    def _plausible(self, x, what) -> None:
        limit = self.get_parameter("max_command").value
        big = float(np.abs(x).max(initial=0.0))
        if not big <= limit:
            raise InputError(f"{what}: |component| = {big:.6g} exceeds the plausibility limit {limit:g} "
                             "(parameter 'max_command')")

    def _maybe_step(self) -> None:
        want = self.command_stamp_ns
        if self.lockstep and self._wrench_stamp == want and self._tau_stamp == want:
            self.step()

    def _on_watchdog(self) -> None:
        if not self._ready(""):
            return
        if time.monotonic() - self._last_step_wall >= self.get_parameter("command_timeout").value:
            self.get_logger().info(f"waiting for {self.COMMAND_TOPICS} stamped "
                                   f"{self.stamp_ns * 1e-9:.3f} s; republishing the state",
                                   throttle_duration_sec=5.0)
            self.publish_state()

    def _on_free_run(self) -> None:
        if self._ready(""):
            self.step()


def main(args=None) -> int:
    """Console script ``geodyn_sim``."""
    return run_nodes([SimNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
