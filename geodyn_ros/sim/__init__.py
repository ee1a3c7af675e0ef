"""ROS-free simulators of a floating-base robot loaded from the same URDF as :func:`geodyn_ros.load_urdf`.

:class:`MujocoSim` wraps a MuJoCo model built from the URDF (free base, contacts off) behind the
geodyn_ros conventions (spatial twists ``(w, v)``, moment-first wrenches, joint columns in
``model.joint_names`` order)::

    from geodyn_ros.sim import MujocoSim
    sim = MujocoSim("robot.urdf", timestep=1e-3)
    sim.reset(np.eye(4), np.zeros(6), q0, np.zeros(sim.model.n_joints))
    sim.set_command(base_wrench_body, tau)
    sim.step(100)
    state = sim.state()

:class:`ActuatedSim` adds lagging rotors (gz-sim's MulticopterMotorModel) and series-elastic
joints (Spong) to it (:mod:`geodyn_ros.sim.actuated`).

A :class:`World` (:mod:`geodyn_ros.sim.world`, ``config/world.yaml``) makes the simulator differ
from the model: drawn mass, CoM, inertia, rotor and joint errors, wind, drag and pushes.

Importing this subpackage imports ``mujoco``; ``import geodyn_ros`` does not.
"""
from .actuated import ActuatedSim, rotor_filter_step
from .mujoco_sim import INTEGRATORS, MujocoSim, SimState
from .world import ExternalWrench, Perturbation, World
from .world_file import load_worlds, world_preset

__all__ = ["MujocoSim", "SimState", "INTEGRATORS", "ActuatedSim", "rotor_filter_step", "World", "Perturbation",
           "ExternalWrench", "load_worlds", "world_preset"]
