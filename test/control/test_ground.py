"""MujocoSim(ground=True): the ground plane and the feet (MuJoCo's soft contact, stated in the
module docstring of geodyn_ros.sim.mujoco_sim), against statics: a vehicle at rest on its feet
is carried by a normal force equal to its weight."""
import numpy as np
import pytest

from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.sim import ActuatedSim
from geodyn_ros.sim.mujoco_sim import CONTACT_SOLREF, FOOT_RADIUS


@pytest.fixture(scope="module")
def sim():
    return ActuatedSim(hexarotor_source(), load_actuation_config("hexarotor"), ground=True)


def test_resting_vehicle_weighs_its_weight(sim):
    """On its feet, rotors stopped: after 1 s (50 time constants of solref's 20 ms) the normal force
    is m g to 1e-3 (the settling residue), the base sinks less than 1 mm (solimp's width), and it
    does not slide (friction 1, no lateral force)."""
    feet = np.array([[0.18, 0.18, -0.8], [-0.18, 0.18, -0.8], [0.18, -0.18, -0.8], [-0.18, -0.18, -0.8]])
    sim.place_ground(-1.0, feet)
    C = np.eye(4)
    C[2, 3] = -1.0 + FOOT_RADIUS - feet[0, 2]           # the feet touch the plane
    n = sim.model.n_joints
    sim.reset(C, np.zeros(6), np.zeros(n), np.zeros(n))
    sim.step(1000)
    W = sim.model.total_mass * 9.81
    assert sim.ground_force() == pytest.approx(W, rel=1e-3)
    p = sim.base_pose()[:3, 3]
    assert 0.0 < C[2, 3] - p[2] < 1e-3 and np.allclose(p[:2], 0.0, atol=1e-9)
    assert CONTACT_SOLREF[0] >= 2 * sim.timestep          # MuJoCo's stability rule for soft contacts


def test_no_ground_means_no_contact_and_no_geometry():
    import mujoco
    s = ActuatedSim(hexarotor_source(), load_actuation_config("hexarotor"))
    assert s.mj_model.ngeom == 0 and s.mj_model.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    assert s.ground_force() == 0.0
    with pytest.raises(ValueError, match="ground"):
        s.place_ground(0.0, np.zeros((4, 3)))
