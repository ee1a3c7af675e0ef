"""The vehicles that ship: a name -> (URDF, vehicle file), for every command that takes a name.

``hexarotor`` and ``tilthex`` are ours (``urdf/*.urdf.xacro``, ``config/<name>.yaml``); the
third-party vehicles' URDFs come from the installed ``example-robot-data`` (not copied), their
vehicle files from ``config/vehicles/<name>.yaml``. ``geodyn_fly`` and ``geodyn_vehicle`` resolve
names here, so both accept the same names.
"""
from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

__all__ = ["SHIPPED_URDFS", "example_robot_data_dir", "shipped_vehicle_files"]

#: the shipped vehicle files' URDFs: example-robot-data's ("erd", installed with the venv) and ours
SHIPPED_URDFS = {"borinot_flying_arm_2": ("erd", "borinot_description/urdf/borinot_flying_arm_2.urdf"),
                 "hextilt_flying_arm_5": ("erd", "hextilt_description/urdf/hextilt_flying_arm_5.urdf"),
                 "iris": ("erd", "iris_description/robots/iris.urdf"),
                 "hexarotor": ("ours", "hexarotor_manipulator.urdf.xacro"),
                 "tilthex": ("ours", "tilthex_manipulator.urdf.xacro")}


def example_robot_data_dir() -> Path:
    """``share/example-robot-data/robots`` of the installed ``example-robot-data`` (the cmeel wheel
    puts it under ``site-packages/cmeel.prefix``; a ROS install under ``<prefix>/share``).
    FileNotFoundError listing the places searched."""
    tried = []
    for base in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]):
        tried.append(Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) + [sys.prefix]:
        if prefix:
            tried.append(Path(prefix) / "share" / "example-robot-data" / "robots")
    for d in tried:
        if d.is_dir():
            return d
    raise FileNotFoundError("example-robot-data not found (pip install example-robot-data); searched: "
                            + ", ".join(str(d) for d in tried))


def shipped_vehicle_files(name: str) -> tuple:
    """``(urdf path, vehicle file path)`` of the shipped vehicle ``name`` (:data:`SHIPPED_URDFS`);
    ValueError naming the shipped names for any other."""
    from ..model.resources import shipped_urdf
    from .params import default_actuation_config_path
    if name not in SHIPPED_URDFS:
        raise ValueError(f"vehicle: {name!r} is not a shipped vehicle ({', '.join(SHIPPED_URDFS)}); "
                         "give a vehicle file path")
    where, rel = SHIPPED_URDFS[name]
    urdf = example_robot_data_dir() / rel if where == "erd" else shipped_urdf(rel)
    cfg_dir = default_actuation_config_path().parent
    vehicle = cfg_dir / "vehicles" / f"{name}.yaml" if where == "erd" else cfg_dir / f"{name}.yaml"
    return urdf, vehicle
