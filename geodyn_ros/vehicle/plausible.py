"""The plausibility range of every number of a vehicle file, each with its reason.

A vehicle file's numbers can be finite and of the right sign and still describe no rotor: a
``motor_constant`` of 1e300 gave "hover speeds nan" and "thrust-to-weight inf" and exited 0, a
``time_constant_up`` of 1e-300 or a ``control_period`` of 1e300 overflowed the discrete loop check
(a LinAlgError traceback). :func:`geodyn_ros.vehicle.load_vehicle` refuses a number outside its
:class:`~geodyn_ros.model.validate.Range` in one line ``<file>: <key>: <value> is outside the
plausible range [lo, hi] <unit> (<reason>); <fix>``.

The ranges refuse what no rotor or joint can be, not unusual vehicles: they span rotors of
:data:`ROTOR_DIAMETER_M` (2 cm to 2 m), air from 7,000 m up to cold sea level
(:data:`AIR_DENSITY`) and thrust coefficients of every propeller of the UIUC propeller data base
(:data:`THRUST_COEFFICIENT`), and every shipped and test vehicle is far inside them.
doc/reference/vehicle_file.md lists them.
"""
from __future__ import annotations

import math

from ..model.validate import Range

__all__ = ["ROTOR_DIAMETER_M", "AIR_DENSITY", "THRUST_COEFFICIENT", "SPEED_OF_SOUND", "RANGES"]

#: [m] the rotor diameters a vehicle file may describe: micro drones' 2 cm to 2 m (large cargo drones)
ROTOR_DIAMETER_M = (0.02, 2.0)
#: [kg/m^3] air density: 0.5 at 7,000 m (ISA 0.59) to 1.3 (sea level at -5 degC: 1.32)
AIR_DENSITY = (0.5, 1.35)
#: thrust coefficient ``C_T`` of ``T = C_T rho n^2 D^4`` (``n`` in rev/s): 0.02 to 0.3 brackets the
#: static thrust coefficients of the UIUC propeller data base (about 0.05 to 0.2)
THRUST_COEFFICIENT = (0.02, 0.3)
#: [m/s] a rotor's tip stays below the speed of sound (air at 15 degC)
SPEED_OF_SOUND = 340.0

_D0, _D1 = ROTOR_DIAMETER_M
#: ``k_f = C_T rho D^4 / (4 pi^2)`` [N s^2/rad^2]: ``T = k_f omega^2`` with ``omega = 2 pi n``
_KF = (THRUST_COEFFICIENT[0] * AIR_DENSITY[0] * _D0 ** 4 / (4 * math.pi ** 2),
       THRUST_COEFFICIENT[1] * AIR_DENSITY[1] * _D1 ** 4 / (4 * math.pi ** 2))
_W_MAX = 2 * SPEED_OF_SOUND / _D0              # tip speed omega D / 2 below Mach 1 for the smallest rotor
_TIP = "its tip below the speed of sound for a 2 cm rotor: 2 x 340 m/s / 0.02 m"

#: key (the last part of its key path) -> Range
RANGES = {
    "motor_constant": Range(*_KF, "N s^2/rad^2", "k_f = C_T rho D^4 / (4 pi^2) for rotors of 2 cm to 2 m, C_T "
                            "0.02 to 0.3, air of 0.5 to 1.35 kg/m^3", "give k_f in N s^2/rad^2 (thrust = k_f "
                            "omega^2, omega in rad/s)"),
    # drag torque / thrust = (C_Q / C_T) D: C_Q / C_T below 0.25 for propellers, D below 2 m
    "moment_constant": Range(0.0, 0.5, "m", "drag torque per thrust (C_Q / C_T) D, C_Q / C_T < 0.25, D < 2 m",
                             "give it in m (drag torque = moment_constant x thrust)"),
    "time_constant_up": Range(1e-4, 5.0, "s", "a motor's speed lag: about 1 ms for 2 cm rotors, under 1 s for "
                              "2 m ones"),
    "time_constant_down": Range(1e-4, 5.0, "s", "a motor's speed lag: about 1 ms for 2 cm rotors, under 1 s for "
                                "2 m ones"),
    "max_rot_velocity": Range(10.0, _W_MAX, "rad/s", "a rotor that lifts turns faster than 100 rpm; " + _TIP),
    "min_rot_velocity": Range(0.0, _W_MAX, "rad/s", _TIP),
    # the airspeed terms compare with k_f omega, at most 0.15 x 100 rad/s for the largest rotor
    "rotor_drag_coefficient": Range(0.0, 20.0, "N s/m per rad/s", "the in-plane drag |omega| c v at 1 m/s stays "
                                    "below the largest rotor's thrust k_f omega: 0.16 x 100 rad/s"),
    "rolling_moment_coefficient": Range(0.0, 20.0, "N m s/m per rad/s", "at most the largest rotor's thrust "
                                        "k_f omega times 1 m"),
    "rotor_velocity_slowdown_sim": Range(1e-3, 1e3, "", "gz-sim's visual slowdown of the rotor joint (10 in every "
                                         "gz example)"),
    "rotor_mass": Range(1e-5, 10.0, "kg", "a 2 cm propeller's 0.01 g to a 2 m rotor with its motor"),
    "control_period": Range(1e-4, 0.1, "s", "flight controllers run their rate loop at 10 Hz to 10 kHz"),
    "position": Range(-20.0, 20.0, "m", "the largest multirotors (passenger drones, 11 m across) have their rotors "
                      "within 10 m of the base", "give the position in m in the base link"),
    "arm_length": Range(0.01, 20.0, "m", "the largest multirotors have their rotors within 10 m of the base"),
    "angle_deg": Range(-360.0, 360.0, "deg", "one turn either way", "give degrees in [-360, 360]"),
    "rpy": Range(-2 * math.pi, 2 * math.pi, "rad", "one turn either way", "give radians (degrees x pi / 180)"),
    "direction": Range(-1e3, 1e3, "", "a direction (PX4 normalises CA_ROTORn_A*)", "give a direction such as "
                       "[0, 0, -1]"),
    "KM": Range(-0.5, 0.5, "m", "PX4's CA_ROTORn_KM is the moment constant with the turning direction's sign: "
                "|KM| < 0.5 m as moment_constant"),
    "CT": Range(1e-6, 100.0, "N", "PX4's CA_ROTORn_CT is 0 to 100 (control_allocator/module.yaml, PX4 b67c65bf); "
                "0 would switch the rotor off", "give the CA_ROTORn_CT PX4 is given, in (0, 100]"),
    "stiffness": Range(1e-2, 1e6, "N m/rad", "series-elastic actuators range from about 1 N m/rad (soft springs) to "
                       "1e4 (stiff ones); a harmonic drive's own stiffness is 1e4 to 1e5"),
    "motor_inertia": Range(1e-8, 10.0, "kg m^2", "a micro motor's 1e-9 kg m^2 through a 10:1 gear to a large "
                           "motor's 1e-3 through 100:1 (the reflected inertia grows with the gear ratio squared)"),
    "max_torque": Range(1e-3, 1e4, "N m", "a micro servo's 0.01 N m to an industrial arm's shoulder, 1e4 N m"),
    "bandwidth": Range(1e-2, 1e5, "rad/s", "a loop's natural frequency; the design caps it anyway at 2 pi / (20 "
                       "control periods)"),
    "damping": Range(1e-2, 10.0, "", "a damping ratio (1: critical; 0.7: well damped), not a gain"),
}
