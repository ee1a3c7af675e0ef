"""The shipped TiltHex as the controller tests fly it (not a test): its actuation file
(``config/tilthex.yaml``), the package's model of ``urdf/tilthex_manipulator.urdf.xacro`` with the
rotor joints locked, and the allocation of its rotor frames. One copy, shared by
test/control/test_actuated_control.py and test/model/test_joint_losses.py."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
XACRO = REPO / "urdf" / "tilthex_manipulator.urdf.xacro"


def tilthex_setup():
    """``(cfg, model, allocation)``: :class:`ActuationConfig`, the rotor-locked model and the
    :class:`Allocation` of its rotor frames, built anew at each call (each test module's fixture
    owns its copy)."""
    import geodyn_ros as gd
    from geodyn_ros.control.rotors import Allocation, load_actuation_config, rotor_frames_from_model
    cfg = load_actuation_config()
    model = gd.load_urdf(XACRO, locked_joints=list(cfg.rotor_joints))
    _, F = rotor_frames_from_model(model)
    return cfg, model, Allocation.from_frames(F, cfg.rotors)
