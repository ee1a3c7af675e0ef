"""``geodyn_actuated_sim``: ``geodyn_sim`` with rotors and series-elastic joints (MuJoCo).

The simulator node of :mod:`geodyn_ros.ros.nodes.sim_node` (same parameters, topics, time source,
lock-step and watchdog) with :class:`geodyn_ros.sim.ActuatedSim` in place of the ideal-actuator
``MujocoSim``: the base wrench comes from the rotors (gz-sim ``MulticopterMotorModel`` lag, one
step of force delay) and the links of the elastic joints are driven by springs from their motors
(Spong's reduced model). The robot needs rotor links (e.g. ``urdf/tilthex_manipulator.urdf.xacro``);
the rotor joints it has as moving joints are locked (rigid), as in the controller.

Subscribes (commands held between steps, zero-order hold)
    ``cmd/rotor_speeds``: commanded rotor speeds [rad/s] in actuator order (the rotors of
    ``actuation_config``), what ``geodyn_actuated_controller`` publishes: ``actuator_msgs/Actuators``
    (``velocity``, stamped; the one type, :mod:`geodyn_ros.ros.wire.actuator_commands`);
    ``cmd/motor_efforts``: ``sensor_msgs/JointState`` ``effort`` = motor torques ``u`` [N m] of the
    elastic joints and, for a vehicle file with mixed joints, the torques [N m] of the joints it
    leaves rigid (torque-controlled), by name (extra names ignored; lock-step waits for all);
    ``cmd/wrench``, ``cmd/joint_efforts`` (as ``geodyn_sim``): an extra body wrench and extra link
    torques **added** to what the rotors and springs produce (disturbances; zero unless sent, not
    waited for by lock-step).
Publishes after every step, besides ``/clock``, ``odom`` and ``joint_states`` (whose ``effort`` is
the torque acting on each link: the spring torque ``K (theta - q)`` on elastic joints, plus any
``cmd/joint_efforts``)
    ``motor_states`` (``sensor_msgs/JointState``, same stamp): ``name`` = elastic joints,
    ``position`` = motor angles ``theta`` [rad], ``velocity`` = ``theta'`` [rad/s], ``effort`` =
    spring torque ``K (theta - q)`` [N m]. With sensor streams (``sensing``, as ``geodyn_sim``)
    ``odom`` and ``joint_states`` are the streams' samples, while ``motor_states`` stays at every
    step, stamped now: the drives' own encoders, quantized like the joints
    (:meth:`geodyn_ros.sim.sensors.SensorSuite.motors`, as in process).

Lock-step: after publishing the state at ``t`` the node steps when the rotor speeds and the
motor efforts for ``t`` have arrived. Bad commands (NaN/Inf, wrong length or layout, missing
joint names, negative rotor speeds, components above ``max_command``) are refused: reported on
``/diagnostics``, never applied (the held command stays). Speeds above ``max_rot_velocity`` are
accepted and limited by the motor model, as in gz-sim.

Initial state: the ``initial_*`` parameters of ``geodyn_sim``, plus ``initial_rotor_speeds``,
``initial_motor_positions`` and ``initial_motor_velocities``; empty = the static feedforward of
the initial state (inverse dynamics at zero acceleration): rotors at ``sqrt(A^+ W_b)`` (a collinear
vehicle, ``actuation_config: config/hexarotor.yaml``: ``sqrt(A4^+ (T, tau_b))`` of the wrench's
thrust and moment), motors at ``q + K^-1 tau``, ``theta' = q'``. The held commands start there (hover speeds, motor torques
equal to the spring torques). :func:`geodyn_ros.ros.loops.actuated_closed_loop.actuated_start_parameters`
gives the exact start on the Table 3 reference.
"""
from __future__ import annotations

import array

import numpy as np
from sensor_msgs.msg import JointState

from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.lie import Ad

from . import sim_node
from ..wire.actuator_commands import ROTOR_MSG_NAME, require_actuator_msgs, rotor_speed_values
from ..wire.conversions import InputError, JointNameMatcher, as_float64, set_stamp, stamp_to_ns
from ..common.diagnostics import guard
from ..common.runtime import control_qos, run_nodes
from .sim_node import SimNode


__all__ = ["PARAMETERS", "ActuatedSimNode", "main"]

PARAMETERS = {
    **sim_node.PARAMETERS,
    "actuation_config": ("", "Actuation YAML (rotor constants and names, elastic joints; the same file as the "
                         "controller's, e.g. config/hexarotor.yaml for the collinear vehicle); empty = the "
                         "shipped config/tilthex.yaml."),
    "initial_rotor_speeds": ([], "Initial rotor speed states [rad/s], actuator order (empty = sqrt(A^+ W_b) "
                             "of the initial state at zero acceleration: hover)."),
    "initial_motor_positions": ([], "Initial motor angles theta [rad] of the elastic joints, actuation_config "
                                "order (empty = q + K^-1 tau of the initial state at zero acceleration)."),
    "initial_motor_velocities": ([], "Initial theta' [rad/s], actuation_config order (empty = the links' qd)."),
}
PARAMETERS["max_command"] = (1e6, "Plausibility limit: every component of cmd/rotor_speeds [rad/s], "
                             "cmd/motor_efforts [N m], cmd/wrench and cmd/joint_efforts; larger commands "
                             "are refused like NaN.")


def _actuated_sim_class():
    """:class:`geodyn_ros.sim.ActuatedSim` whose ``reset`` fills the actuator states it is not given
    from the node's start rule (``start(C, V, q, qd) -> dict``), so every reset of the node (at
    start-up, whatever calls it) puts the actuators where the parameters say."""
    from geodyn_ros.sim import ActuatedSim   # MuJoCo is only needed by this node

    class _StartedActuatedSim(ActuatedSim):
        start = None

        def reset(self, base_pose, base_twist, q, qd, time=0.0, **actuators):
            if self.start is not None and hasattr(self, "_x"):   # not the constructor's reset
                for k, v in self.start(base_pose, base_twist, q, qd).items():
                    actuators.setdefault(k, v)
            super().reset(base_pose, base_twist, q, qd, time, **actuators)

    return _StartedActuatedSim


class ActuatedSimNode(SimNode):
    """The actuated MuJoCo simulator node (see the module docstring)."""

    PARAMETERS = PARAMETERS
    COMMAND_TOPICS = "cmd/rotor_speeds and cmd/motor_efforts"
    STEP_STREAMS = ("odom", "joint_states", "motor_states")

    def __init__(self, node_name: str = "geodyn_actuated_sim", **kwargs):
        actuators = require_actuator_msgs()     # cmd/rotor_speeds' type: stop before anything starts
        super().__init__(node_name, **kwargs)   # installs the simulation now, or later from the topic
        qos = control_qos(self._p["qos_depth"])
        self.create_subscription(actuators, "cmd/rotor_speeds",
                                 guard(self, self._on_rotor_speeds, "cmd/rotor_speeds"), qos)
        self.create_subscription(JointState, "cmd/motor_efforts",
                                 guard(self, self._on_motor_efforts, "cmd/motor_efforts"), qos)
        self.pub_motors = self.create_publisher(JointState, "motor_states", qos)
        if self.sim is not None:
            # the start state's motor_states (SimNode's constructor published odom and joint_states
            # before this publisher existed); not the whole state again: a second odom and
            # joint_states stamped 0 made every controller under input_policy latest warn
            # "skipping cycle: joint_states: stamp 0.000000000 s is not newer ..." at each start
            self._publish_motors()

    def _setup_model(self, sim, first: bool = True) -> None:
        """``geodyn_sim``'s set-up, plus the actuators: names, the ``motor_states`` message and the
        held commands of the initial state (hover speeds; motor torques = spring torques)."""
        self.rotor_names = tuple(sim.rotor_names)
        self.elastic_joints = tuple(sim.elastic_joints)
        self._motor_matcher = JointNameMatcher(self.elastic_joints)
        self._ms = JointState()
        self._ms.name = list(self.elastic_joints)
        # the rigid (torque-controlled) joints of a vehicle file with mixed joints (none when every
        # joint is elastic); their torques come on cmd/motor_efforts with the motors'
        self.rigid_joints = tuple(getattr(sim, "rigid_joints", ()))
        self._rigid_matcher = JointNameMatcher(self.rigid_joints)
        self._rigid_idx = np.array([sim.model.joint_names.index(j) for j in self.rigid_joints], dtype=np.intp)
        self._rigid_cmd = np.zeros(len(self.rigid_joints))
        self._rotor_stamp = self._motor_stamp = None
        super()._setup_model(sim, first)   # resets the simulation (actuators by the start rule), publishes
        self._rotor_cmd = sim.rotor_speed()
        self._motor_cmd = sim.spring_torque().copy()
        self.get_logger().info(
            f"model '{self.model.name}', {len(self.rotor_names)} rotors {self.rotor_names}, elastic joints "
            f"{self.elastic_joints}, rotor command type "
            f"{ROTOR_MSG_NAME}")

    # ------------------------------------------------------------------ the simulator
    def _build_sim(self, source):
        import geodyn_ros as gd
        p = self._p
        try:
            cfg = load_actuation_config(p["actuation_config"] or None)
        except ValueError as exc:
            raise ValueError(f"parameter 'actuation_config': {exc}") from exc
        base = p["base_link"] or None
        sim = _actuated_sim_class()(source, cfg, base_link=base, timestep=p["timestep"], gravity=p["gravity"],
                                    integrator=p["integrator"], joint_limits=p["joint_limits"],
                                    locked_joints=cfg.locked_positions(source))
        try:
            al = Allocation.from_frames(sim.rotor_frames, cfg.rotors)
        except ValueError as exc:
            raise ValueError(f"parameter 'actuation_config': {cfg.refusal(sim.model, exc)}") from exc
        nr, ne = len(sim.rotor_names), len(sim.elastic_joints)
        given = {}
        for name, key, size in (("initial_rotor_speeds", "rotor_speed", nr),
                                ("initial_motor_positions", "motor_angle", ne),
                                ("initial_motor_velocities", "motor_velocity", ne)):
            v = p[name]
            if v:
                if len(v) != size or not np.isfinite(v).all():
                    raise ValueError(f"parameter '{name}': need {size} finite numbers, got {len(v)}")
                given[key] = np.array(v, dtype=float)
        if "rotor_speed" in given and (given["rotor_speed"] < 0).any():
            raise ValueError("parameter 'initial_rotor_speeds': speeds must be >= 0")
        g = np.array(p["gravity"], dtype=float)
        el = np.array([sim.model.joint_names.index(j) for j in sim.elastic_joints], dtype=np.intp)
        K = cfg.elastic.stiffness

        def start(C, V, q, qd):
            out = dict(given)
            if len(out) < 3:
                n = sim.model.n_joints
                Vj, qj = np.zeros((2, 6)), np.zeros((3, n))
                Vj[0], qj[0], qj[1] = V, q, qd
                res = gd.inverse_dynamics(sim.model, np.asarray(C, float), Vj, qj, 0, gravity=g)
                Wb = Ad(np.asarray(C, float)).T @ res.base_wrench[0]
                # a collinear vehicle: the thrust and moment of that wrench (its lateral force, which
                # such a vehicle cannot make, is left out; zero when it starts level)
                u = al.allocate_thrust_torque(Wb[5], Wb[:3]) if al.collinear else al.allocate(Wb)
                out.setdefault("rotor_speed", np.sqrt(np.clip(u, 0.0, None)))
                out.setdefault("motor_angle", np.asarray(q, float)[el] + res.tau[0, el] / K)
                out.setdefault("motor_velocity", np.asarray(qd, float)[el])
            return out

        sim.start = start
        return sim

    def _applied_effort(self) -> np.ndarray:
        tau = self._cmd_tau.copy()
        sim = self.sim
        if len(sim.elastic_joints):
            tau[sim._el_idx] += sim.spring_torque()
        return tau

    def publish_state(self) -> None:
        """``geodyn_sim``'s state messages, then ``motor_states`` with the same stamp."""
        super().publish_state()
        self._publish_motors()

    def _publish_motors(self) -> None:
        """``motor_states`` of the current state (motor angles, rates, spring torques)."""
        pub = getattr(self, "pub_motors", None)
        if pub is None:   # SimNode's constructor publishes before this node made its publisher
            return
        sim, m = self.sim, self._ms
        set_stamp(m.header.stamp, self.stamp_ns)
        th, thd = (sim.motor_angle(), sim.motor_velocity()) if self.suite is None else self.suite.motors(sim)
        m.position = array.array("d", np.ascontiguousarray(th).tobytes())
        m.velocity = array.array("d", np.ascontiguousarray(thd).tobytes())
        m.effort = array.array("d", np.ascontiguousarray(sim.spring_torque()).tobytes())
        pub.publish(m)

    def step(self) -> None:
        """Apply the held rotor speeds, motor torques and rigid-joint torques (and the additive
        wrench/torques), step."""
        self.sim.set_rotor_command(self._rotor_cmd)
        self.sim.set_motor_torque(self._motor_cmd)
        if not self._rigid_idx.size:
            super().step()
            return
        extra = self._cmd_tau.copy()   # cmd/joint_efforts (added); joint_states.effort shows the sum
        self._cmd_tau[self._rigid_idx] += self._rigid_cmd
        try:
            super().step()
        finally:
            self._cmd_tau[:] = extra

    # ------------------------------------------------------------------ commands
    def _on_rotor_speeds(self, msg) -> None:
        if not self._ready("cmd/rotor_speeds"):
            return
        n = len(self.rotor_names)
        try:
            values = rotor_speed_values(msg)
            stamp = stamp_to_ns(msg.header.stamp)
            if len(values) != n:
                raise InputError(f"cmd/rotor_speeds: {len(values)} speeds, the simulator has {n} rotors "
                                 f"{self.rotor_names}")
            om = np.array(as_float64(values))   # parsed aside: a bad message never alters the command
            if not np.isfinite(om).all():
                raise InputError("cmd/rotor_speeds: NaN or Inf")
            if (om < 0).any():
                raise InputError(f"cmd/rotor_speeds: negative speed {om.min():.6g} rad/s (rotor "
                                 f"{self.rotor_names[int(np.argmin(om))]}); speeds must be >= 0")
            self._plausible(om, "cmd/rotor_speeds")
        except InputError as exc:
            self.diag.problem("cmd/rotor_speeds", str(exc))
            return
        self._rotor_cmd[:] = om
        self._rotor_stamp = stamp
        self._maybe_step()

    def _on_motor_efforts(self, msg) -> None:
        if not self._ready("cmd/motor_efforts"):
            return
        u = np.empty(len(self.elastic_joints))
        rt = np.empty(len(self.rigid_joints))
        try:
            self._motor_matcher.gather(msg.name, msg.effort, u, "cmd/motor_efforts")
            self._rigid_matcher.gather(msg.name, msg.effort, rt, "cmd/motor_efforts")
            self._plausible(u, "cmd/motor_efforts")
            self._plausible(rt, "cmd/motor_efforts")
            stamp = stamp_to_ns(msg.header.stamp)
        except InputError as exc:
            self.diag.problem("cmd/motor_efforts", str(exc))
            return
        self._motor_cmd[:] = u
        self._rigid_cmd[:] = rt
        self._motor_stamp = stamp
        self._maybe_step()

    def _maybe_step(self) -> None:
        want = self.command_stamp_ns
        if self.lockstep and self._rotor_stamp == want and self._motor_stamp == want:
            self.step()


def main(args=None) -> int:
    """Console script ``geodyn_actuated_sim``."""
    return run_nodes([ActuatedSimNode], args)


if __name__ == "__main__":
    raise SystemExit(main())
