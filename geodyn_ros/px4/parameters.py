"""The PX4 parameters of a vehicle file: what PX4 must be told so that its allocation is the one the
bridge inverts (issue 44; doc/howto/fly_on_px4.md).

    python -m geodyn_ros.px4.parameters config/hexarotor_px4.yaml --urdf urdf/hexarotor_manipulator.urdf.xacro

prints one ``param set NAME VALUE`` line per parameter, for the PX4 shell (``pxh>``, the MAVLink
console of QGroundControl) or an airframe file: ``CA_ROTOR_COUNT``, each rotor's ``CA_ROTORn_PX``,
``PY``, ``PZ`` [m, FRD], ``AX``, ``AY``, ``AZ`` (the thrust axis, FRD), ``CT`` [N] and ``KM`` [m]
(:func:`~geodyn_ros.px4.allocation.px4_rotor_parameters`, ``px4.ct`` where the file gives it),
``THR_MDL_FAC`` and ``MC_AIRMODE`` from the file's ``px4:`` section. Rotors are numbered from 0 in
the file's order, which must be PX4's motor order (``PWM_MAIN_FUNCn`` / ``ActuatorMotors`` index).
A vehicle without a ``px4:`` section, or a file error, stops with one line and exit status 2.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["parameter_lines", "main"]


def _g(x: float) -> str:
    return f"{float(x) + 0.0:.6g}"


def parameter_lines(cfg, frames) -> list:
    """``["param set CA_ROTOR_COUNT 4", ...]`` of a vehicle's config ``cfg`` (with its ``px4:``
    section) and rotor frames ``frames`` (n, 4, 4) FLU (module docstring). ValueError (file-error
    form) without the section or with a rotor beyond PX4's CT range and no ``px4.ct``."""
    from .offboard_path import px4_vehicle
    rp = px4_vehicle(cfg, frames).ca_rotor       # the bridge's view, with its checks
    lines = [f"param set CA_ROTOR_COUNT {len(frames)}"]
    for i in range(len(frames)):
        for axis, k in zip("XYZ", range(3)):
            lines.append(f"param set CA_ROTOR{i}_P{axis} {_g(rp['position'][i][k])}")
        for axis, k in zip("XYZ", range(3)):
            lines.append(f"param set CA_ROTOR{i}_A{axis} {_g(rp['axis'][i][k])}")
        lines.append(f"param set CA_ROTOR{i}_CT {_g(rp['ct'][i])}")
        lines.append(f"param set CA_ROTOR{i}_KM {_g(rp['km'][i])}")
    lines.append(f"param set THR_MDL_FAC {_g(cfg.px4.thr_mdl_fac)}")
    lines.append(f"param set MC_AIRMODE {int(cfg.px4.mc_airmode)}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vehicle", help="the vehicle file (with its px4: section)")
    ap.add_argument("--urdf", default=None, help="the robot's URDF/xacro (needed when the file takes its rotors "
                    "from the URDF)")
    a = ap.parse_args(argv)
    from geodyn_ros.vehicle import load_vehicle
    try:
        cfg = load_vehicle(a.vehicle)
        model = None
        if cfg.rotor_geometry != "list":
            if a.urdf is None:
                ap.error(f"{a.vehicle} takes its rotors from the URDF ({cfg.rotor_geometry}); give --urdf")
            model = cfg.load_model(a.urdf)
        _, frames = cfg.rotor_frames(model)
        lines = parameter_lines(cfg, frames)
    except (ValueError, OSError) as exc:
        ap.error(str(exc).splitlines()[0])
    print(f"# PX4 parameters of {a.vehicle}; rotor n of the file = PX4's motor n + 1")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
