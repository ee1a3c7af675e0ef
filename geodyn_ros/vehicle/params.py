"""Rotor constants, elastic joints and the vehicle's actuation config (issue 33, schema 1).

Layer 1 (beside ``model``): imports only ``model``, numpy and yaml. Moved here from
``geodyn_ros.control.rotors``, which re-exports every name (old imports keep working).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

_SPIN = {"ccw": -1.0, "cw": 1.0}


def _pos(name, v, *, allow_zero=False):
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a real number, got {v!r}") from None
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise ValueError(f"{name}: expected a finite {'non-negative' if allow_zero else 'positive'} number, got {v!r}")
    return x


@dataclass(frozen=True)
class RotorParams:
    """Rotor constants, named and defined as in gz-sim's ``MulticopterMotorModel`` (SI units).

    motor_constant c_f [N s^2/rad^2]: thrust ``c_f omega |omega|``; moment_constant [m]: drag torque
    ``moment_constant * thrust``; time_constant_up / time_constant_down [s]: the speed filter's
    time constants when accelerating / decelerating; max_rot_velocity [rad/s]: the reference is
    limited to it; rotor_drag_coefficient [N s/m per rad/s], rolling_moment_coefficient [N m s/m
    per rad/s]: airspeed terms ``-|omega| coef v_perp``; turning_direction: ``"ccw"``/``"cw"`` per
    rotor.
    """

    turning_direction: tuple
    motor_constant: float = 1.269e-05
    moment_constant: float = 0.016754
    time_constant_up: float = 0.0182
    time_constant_down: float = 0.0182
    max_rot_velocity: float = 1000.0
    rotor_drag_coefficient: float = 0.0
    rolling_moment_coefficient: float = 0.0

    def __post_init__(self):
        for k in ("motor_constant", "moment_constant", "time_constant_up", "time_constant_down",
                  "max_rot_velocity"):
            _pos(k, getattr(self, k), allow_zero=(k == "moment_constant"))
        for k in ("rotor_drag_coefficient", "rolling_moment_coefficient"):
            _pos(k, getattr(self, k), allow_zero=True)
        td = tuple(self.turning_direction)
        if not td or any(s not in _SPIN for s in td):
            raise ValueError(f"turning_direction: expected a non-empty list of 'ccw'/'cw', got {self.turning_direction!r}")
        object.__setattr__(self, "turning_direction", td)

    @property
    def n_rotors(self) -> int:
        return len(self.turning_direction)

    @property
    def spin(self) -> np.ndarray:
        """(n,) ``s_i`` of the drag torque ``s_i c_d omega^2`` about the rotor z axis (ccw -> -1)."""
        return np.array([_SPIN[s] for s in self.turning_direction])

    @property
    def drag_constant(self) -> float:
        """``c_d = moment_constant * motor_constant`` [N m s^2/rad^2]."""
        return self.moment_constant * self.motor_constant


@dataclass(frozen=True)
class ElasticJointParams:
    """Series-elastic joints (Spong's reduced model): ``B theta'' + K (theta - q) = u``.

    joints: joint names; stiffness K [N m/rad] (> 0); motor_inertia B [kg m^2] (> 0);
    max_motor_torque [N m] (> 0, the saturation of ``u``).
    """

    joints: tuple
    stiffness: np.ndarray
    motor_inertia: np.ndarray
    max_motor_torque: float = 10.0

    def __post_init__(self):
        j = tuple(self.joints)
        if len(set(j)) != len(j) or not all(isinstance(x, str) for x in j):
            raise ValueError(f"elastic joints: expected distinct joint names, got {self.joints!r}")
        object.__setattr__(self, "joints", j)
        for name in ("stiffness", "motor_inertia"):
            v = np.array(getattr(self, name), dtype=float).reshape(-1)
            if v.size == 1 and len(j) > 1:
                v = np.full(len(j), v[0])
            if v.shape != (len(j),) or not np.all(np.isfinite(v)) or np.any(v <= 0):
                raise ValueError(f"{name}: expected {len(j)} finite positive values, got {getattr(self, name)!r}")
            object.__setattr__(self, name, v)
        _pos("max_motor_torque", self.max_motor_torque)

    def natural_frequencies(self) -> np.ndarray:
        """(n,) ``sqrt(K/B)`` [rad/s]: the motor's frequency against a locked link."""
        return np.sqrt(self.stiffness / self.motor_inertia)


@dataclass(frozen=True)
class ActuationConfig:
    """Everything of an actuation YAML (``config/tilthex.yaml``, ``config/hexarotor.yaml``): rotor
    constants, geometry and elastic joints."""

    rotors: RotorParams
    elastic: ElasticJointParams
    rotor_prefix: str = "rotor_"
    arm_length: float = 0.25
    alpha: np.ndarray = field(default_factory=lambda: np.radians([20.0, -20.0] * 3))
    beta: np.ndarray = field(default_factory=lambda: np.zeros(6))
    rotor_velocity_slowdown_sim: float = 10.0
    rotor_mass: float = 0.005

    @property
    def rotor_links(self) -> tuple:
        return tuple(f"{self.rotor_prefix}{i}" for i in range(1, self.rotors.n_rotors + 1))

    @property
    def rotor_joints(self) -> tuple:
        return tuple(f"{self.rotor_prefix}{i}_joint" for i in range(1, self.rotors.n_rotors + 1))


def default_actuation_config_path() -> Path:
    """``config/tilthex.yaml`` of the source tree, else of the installed share directory."""
    here = Path(__file__).resolve().parents[2] / "config" / "tilthex.yaml"
    if here.is_file():
        return here
    from ..model.resources import urdf_search_dirs
    for d in urdf_search_dirs():
        p = Path(d).parent / "config" / "tilthex.yaml"
        if p.is_file():
            return p
    raise ValueError("config: config/tilthex.yaml not found in the source tree or share/geodyn_ros")


#: top-level keys of the rotor section of an actuation YAML, in the order they are looked for
ROTOR_SECTIONS = ("multirotor", "tilthex")
