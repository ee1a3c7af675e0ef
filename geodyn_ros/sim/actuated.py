"""MuJoCo simulation of the actuated aerial manipulator: lagging rotors and series-elastic joints.

:class:`ActuatedSim` extends :class:`~geodyn_ros.sim.MujocoSim` (same conventions) with

Rotors (gz-sim ``MulticopterMotorModel``, velocity motor type, mirrored step for step)
    Rotor ``i`` has the speed state ``x_i`` [rad/s]. At every physics step of length ``dt``:

    1. the thrust ``c_f x_i |x_i|`` along the rotor's z axis and the drag torque
       ``s_i c_d x_i |x_i|`` about it (``s_i = -1`` ccw, ``+1`` cw; ``c_d = momentConstant c_f``)
       act at the rotor frame, held in that frame over the step (a MuJoCo site actuator per
       rotor: gear ``(0, 0, c_f, 0, 0, s_i c_d)``, control ``x_i |x_i|``);
       the optional airspeed terms ``-|x_i| rotorDragCoefficient v_perp`` (force at the rotor)
       and ``-|x_i| rollingMomentCoefficient v_perp`` (moment on the base), with ``v_perp`` the
       rotor origin's world velocity without its component along the rotor axis, are evaluated
       at the start of the step and held;
    2. MuJoCo advances one step;
    3. the filter advances: ``r_i = min(command_i, maxRotVelocity)``,
       ``x_i <- a x_i + (1 - a) r_i`` with ``a = exp(-dt / T)``, ``T = timeConstantUp`` if
       ``r_i > x_i`` else ``timeConstantDown``.

    In gz-sim the force of a step comes from the rotor joint's speed, which is the filter output
    of the previous step, so the thrust of step k uses ``x(k)`` and the command of step k first
    acts in step k+1 (one step of delay, reproduced here). ``rotorVelocitySlowdownSim`` cancels
    (the joint turns at ``x / slowdown`` and the force uses ``slowdown * joint speed``).

Series-elastic joints (Spong 1987, the paper's ref. [44], reduced model)
    For each elastic joint ``j`` a motor rotor with angle ``theta_j`` and inertia ``B_j`` (a
    hinge on a body fixed to the world, inertia ``B_j`` about the hinge, so that it has no other
    coupling) is joined to the link joint by a fixed tendon ``L_j = theta_j - q_j`` of stiffness
    ``K_j`` and rest length 0. MuJoCo's passive tendon force ``-K_j L_j`` gives exactly::

        link:  M(q) q'' + h(q, q') = ... + K (theta - q)        (the joint torque of the link)
        motor: B theta'' + K (theta - q) = u                    (u: :meth:`set_motor_torque`)

    Both sides are MuJoCo degrees of freedom, so the coupling is evaluated inside every
    integrator stage (RK4), not lagged a step (verified in ``test/control/test_actuated_sim.py``
    against an independent integration of the whole ODE).

Ideal actuators stay available: ``ideal_rotors=True`` applies the body wrench of
:meth:`set_command` directly (no rotors); ``ideal_joints=True`` applies ``tau`` directly (no
motors).
"""
from __future__ import annotations

import mujoco
import numpy as np

from ..control.rotors import ActuationConfig, load_actuation_config, per_rotor_constant, rotor_frames_from_model
from ..lie import matrix_to_quat
from .mujoco_sim import _PREFIX, MujocoSim, _array

__all__ = ["ActuatedSim", "rotor_filter_step"]


def rotor_filter_step(x, command, dt, time_constant_up, time_constant_down, max_rot_velocity):
    """One step of gz-sim's rotor speed filter (module docstring), vectorised.

    x, command : (n,) speed state and commanded speed [rad/s]; dt [s]; the time constants [s] and
    ``max_rot_velocity`` [rad/s]: one for every rotor or (n,), one per rotor. Returns the new (n,)
    state.
    """
    r = np.minimum(np.asarray(command, float), max_rot_velocity)
    up = r > x
    a = np.where(up, np.exp(-dt / time_constant_up), np.exp(-dt / time_constant_down))
    return a * x + (1.0 - a) * r


class ActuatedSim(MujocoSim):
    """:class:`MujocoSim` of a multirotor manipulator with rotors and series-elastic joints.

    Rotor constants may differ per rotor (``RotorParams`` fields given as (n,) arrays): each
    thrust actuator's gear uses its rotor's ``c_f,i`` and ``c_d,i``, the filter its time constants
    and maximum speed. Joints not in ``config.elastic`` are rigid (torque-controlled).

    Parameters
    ----------
    source : URDF/xacro with the rotor links (e.g. ``urdf/tilthex_manipulator.urdf.xacro``).
    config : ActuationConfig, optional
        Rotor constants, rotor names and elastic joints; default ``config/tilthex.yaml``.
    rotor_links : sequence of str, optional
        Rotor links in actuator order; default: the frames of ``config.rotor_frames(model)``
        (the vehicle file's rotor list, URDF links or TiltHex links).
    locked_joints : optional
        Joints locked before import; default ``config.locked_positions(source)`` (the rotor joints,
        the file's ``locked_joints`` and the joints the URDF's limits pin).
    ideal_rotors, ideal_joints : bool
        Use the ideal body wrench / ideal joint torques instead of the rotor / motor models.
    **kwargs : passed to :class:`MujocoSim` (timestep, gravity, integrator, joint_limits, ...).

    Attributes
    ----------
    config : ActuationConfig
    inertia_corrections : tuple of InertiaCorrection
        The links whose inertia MuJoCo refuses, corrected as ``config.load_model`` corrects them
        (``ActuationConfig.flight_urdf``); empty for most URDFs.
    rotor_names : tuple of str
    rotor_frames : (n, 4, 4) in the base link
    elastic_joints : tuple of str, empty when ``ideal_joints``
        Driven by their motors (:meth:`set_motor_torque`) through the springs.
    rigid_joints : tuple of str
        The other joints of the model (every joint when ``ideal_joints``): torque-controlled, their
        torques are the ``tau`` of :meth:`set_command` (model joint order; give 0 at the elastic
        joints, whose link side is driven by the spring alone).
    """

    def __init__(self, source, config: ActuationConfig | None = None, *, rotor_links=None,
                 locked_joints=None, ideal_rotors=False, ideal_joints=False, **kwargs):
        self.config = load_actuation_config() if config is None else config
        if not isinstance(self.config, ActuationConfig):
            raise ValueError(f"config: expected an ActuationConfig, got {type(config).__name__}")
        self._rotor_links = None if rotor_links is None else tuple(rotor_links)   # None: config.rotor_frames
        self.ideal_rotors, self.ideal_joints = bool(ideal_rotors), bool(ideal_joints)
        # the URDF the controller's model is loaded from too (ActuationConfig.load_model): a link
        # inertia MuJoCo refuses is corrected, with a warning (self.inertia_corrections)
        source, self.inertia_corrections = self.config.flight_urdf(source)
        if locked_joints is None:
            locked_joints = self.config.locked_positions(source)
        if kwargs.get("base_link") is None and self.config.base_link is not None:
            kwargs["base_link"] = self.config.base_link
        super().__init__(source, locked_joints=locked_joints, **kwargs)

    # ------------------------------------------------------------------ construction
    def _extend_spec(self, spec, base_body):
        rp = self.config.rotors
        self.rotor_names, self.rotor_frames = (self.config.rotor_frames(self.model) if self._rotor_links is None
                                               else rotor_frames_from_model(self.model, self._rotor_links))
        if len(self.rotor_names) != rp.n_rotors:
            raise ValueError(f"rotor_links: {len(self.rotor_names)} rotors but the config has "
                             f"{rp.n_rotors} turning directions")
        extra_nu = 0
        if not self.ideal_rotors:
            spin = rp.spin
            cf = per_rotor_constant(rp, "motor_constant")                 # rotor i's own constants
            cd = per_rotor_constant(rp, "moment_constant") * cf
            for k, (nm, C) in enumerate(zip(self.rotor_names, self.rotor_frames)):
                site = _PREFIX + "rotor_" + nm
                base_body.add_site(name=site, pos=C[:3, 3], quat=matrix_to_quat(C[:3, :3], order="wxyz"))
                spec.add_actuator(name=_PREFIX + "thrust_" + nm, target=site, trntype=mujoco.mjtTrn.mjTRN_SITE,
                                  gear=[0.0, 0.0, cf[k], 0.0, 0.0, spin[k] * cd[k]])
                extra_nu += 1
        extra_nv = 0
        el = self.config.elastic
        self.elastic_joints = () if self.ideal_joints else el.joints
        self.rigid_joints = tuple(j for j in self.model.joint_names if j not in self.elastic_joints)
        if not self.ideal_joints:
            for j, K, B in zip(el.joints, el.stiffness, el.motor_inertia):
                if j not in self.model.joint_names:
                    raise ValueError(f"config: elastic joint {j!r} is not a joint of the model {self.model.joint_names}")
                body = spec.worldbody.add_body(name=_PREFIX + "motor_" + j, pos=[0.0, 0.0, 0.0])
                body.mass = B
                body.inertia = [B, B, B]
                body.ipos = [0.0, 0.0, 0.0]
                body.add_joint(name=_PREFIX + "motor_" + j, type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0.0, 0.0, 1.0])
                t = spec.add_tendon(name=_PREFIX + "spring_" + j, stiffness=float(K), springlength=[0.0, 0.0])
                t.wrap_joint(_PREFIX + "motor_" + j, 1.0)
                t.wrap_joint(j, -1.0)
                extra_nv += 1
        return extra_nv, extra_nu

    def _setup_extension(self):
        m = self.mj_model
        self._x = np.zeros(len(self.rotor_names))
        self._omega_cmd = np.zeros(len(self.rotor_names))
        self._rotor_sites = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, _PREFIX + "rotor_" + nm)
                                      for nm in self.rotor_names], dtype=np.int64) if not self.ideal_rotors else None
        ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, _PREFIX + "motor_" + j) for j in self.elastic_joints]
        self._madr_q = np.array([m.jnt_qposadr[i] for i in ids], dtype=np.int64)
        self._madr_v = np.array([m.jnt_dofadr[i] for i in ids], dtype=np.int64)
        self._el_idx = np.array([self.model.joint_names.index(j) for j in self.elastic_joints], dtype=np.int64)
        self._u = np.zeros(len(self.elastic_joints))
        self._base_dofs = np.arange(self._bv, self._bv + 6)
        rp = self.config.rotors
        self._airspeed = (not self.ideal_rotors) and bool(np.any(np.asarray(rp.rotor_drag_coefficient) > 0)
                                                          or np.any(np.asarray(rp.rolling_moment_coefficient) > 0))
        self._qfrc_air = np.zeros(m.nv)

    # ------------------------------------------------------------------ state
    def reset(self, base_pose, base_twist, q, qd, time=0.0, *, rotor_speed=None, motor_angle=None,
              motor_velocity=None) -> None:
        """Set the state (as :meth:`MujocoSim.reset`) and the actuator states.

        rotor_speed : (n_rotors,) filter states ``x`` [rad/s], default 0.
        motor_angle, motor_velocity : (n_elastic,) ``theta``, ``theta'`` [rad, rad/s], default the
            link's ``q`` and ``qd`` (springs at rest).
        """
        super().reset(base_pose, base_twist, q, qd, time)
        if not hasattr(self, "_x"):
            return                                   # the constructor's reset, before _setup_extension
        nr, ne = len(self.rotor_names), len(self.elastic_joints)
        self._x[:] = 0.0 if rotor_speed is None else _array(rotor_speed, "rotor_speed", (nr,))
        d = self.mj_data
        qv, qdv = np.asarray(q, float), np.asarray(qd, float)
        th = qv[self._el_idx] if motor_angle is None else _array(motor_angle, "motor_angle", (ne,))
        thd = qdv[self._el_idx] if motor_velocity is None else _array(motor_velocity, "motor_velocity", (ne,))
        d.qpos[self._madr_q] = th
        d.qvel[self._madr_v] = thd
        d.qfrc_applied[self._madr_v] = self._u
        self._qfrc_air[:] = 0.0                      # mj_resetData zeroed qfrc_applied
        self._apply_rotor_forces()
        mujoco.mj_forward(self.mj_model, d)

    def set_rotor_command(self, omega) -> None:
        """Commanded rotor speeds [rad/s] (n_rotors,), the gz ``Actuators.velocity`` (held until changed)."""
        if self.ideal_rotors:
            raise ValueError("omega: this simulator has ideal rotors (ideal_rotors=True); use set_command")
        self._omega_cmd[:] = _array(omega, "omega", (len(self.rotor_names),))

    def set_motor_torque(self, u) -> None:
        """Motor torques ``u`` [N m] (n_elastic,) of the elastic joints, ``config.elastic.joints`` order."""
        if self.ideal_joints:
            raise ValueError("u: this simulator has ideal joints (ideal_joints=True); use set_command")
        self._u[:] = _array(u, "u", (len(self.elastic_joints),))
        self.mj_data.qfrc_applied[self._madr_v] = self._u

    def set_command(self, base_wrench_body, tau) -> None:
        """Ideal body wrench and joint torques (added to what rotors and springs produce)."""
        super().set_command(base_wrench_body, tau)
        self.mj_data.qfrc_applied[self._madr_v] = self._u

    def rotor_speed(self) -> np.ndarray:
        """(n_rotors,) rotor speed states ``x`` [rad/s] (copy)."""
        return self._x.copy()

    def motor_angle(self) -> np.ndarray:
        """(n_elastic,) motor angles ``theta`` [rad]."""
        return self.mj_data.qpos[self._madr_q]

    def motor_velocity(self) -> np.ndarray:
        """(n_elastic,) motor velocities ``theta'`` [rad/s]."""
        return self.mj_data.qvel[self._madr_v]

    def spring_torque(self) -> np.ndarray:
        """(n_elastic,) link torques ``K (theta - q)`` [N m]."""
        return self.config.elastic.stiffness * (self.motor_angle() - self.q()[self._el_idx])

    # ------------------------------------------------------------------ stepping
    def _apply_rotor_forces(self):
        if self.ideal_rotors:
            return
        d = self.mj_data
        d.ctrl[6:] = self._x * np.abs(self._x)
        if not self._airspeed:
            return
        m, rp = self.mj_model, self.config.rotors
        d.qfrc_applied[self._base_dofs] -= self._qfrc_air[self._base_dofs]
        self._qfrc_air[:] = 0.0
        mujoco.mj_kinematics(m, d)
        vel = np.zeros(6)
        for k, sid in enumerate(self._rotor_sites):
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, sid, vel, 0)   # (w, v) world axes at the site
            z = d.site_xmat[sid].reshape(3, 3)[:, 2]
            v = vel[3:]
            vp = v - (v @ z) * z
            f = -abs(self._x[k]) * np.broadcast_to(rp.rotor_drag_coefficient, self._x.shape)[k] * vp
            n = -abs(self._x[k]) * np.broadcast_to(rp.rolling_moment_coefficient, self._x.shape)[k] * vp
            mujoco.mj_applyFT(m, d, f, n, d.site_xpos[sid], self._base_body, self._qfrc_air)
        d.qfrc_applied[self._base_dofs] += self._qfrc_air[self._base_dofs]

    def step(self, n=1) -> None:
        """Advance ``n`` steps: per step, rotor forces from ``x(k)``, one MuJoCo step, filter update."""
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n: expected a non-negative integer number of steps, got {n!r}")
        if self.ideal_rotors:
            super().step(n)
            return
        rp, dt = self.config.rotors, self.timestep
        for _ in range(int(n)):
            self._apply_rotor_forces()
            super().step(1)
            self._x = rotor_filter_step(self._x, self._omega_cmd, dt, rp.time_constant_up,
                                        rp.time_constant_down, rp.max_rot_velocity)
        self._apply_rotor_forces()
