"""Whether a controller's gains were designed for the vehicle it flies (issue 52: a lab quadrotor
started with the shipped hexarotor's gains is a crash risk).

ROS-free (layer 3, ``control``). The flatness controller (``geodyn_flat_controller``) calls
:func:`gain_origin` once with its model; the answer is one line, or nothing:

* **designed for this vehicle** (nothing said): the gains equal those the vehicle's model gives at
  its file's ``control_period`` (:func:`~geodyn_ros.control.gain_design.design_gains`: the file's
  ``gains:`` section, else the default bandwidths -- what ``geodyn_fly`` and ``fly.launch.py``
  give), or they carry a *designed-for* stamp (:func:`designed_for`, the ``gains_designed_for``
  parameter that ``geodyn_vehicle --px4 --out`` writes) naming this vehicle;
* **not designed for it**: the gains are the node's defaults (the shipped hexarotor's, stamped
  :data:`DEFAULT_GAINS_FOR`), carry a stamp naming another vehicle, or carry none. The line says
  which, and what the model says of them on this vehicle at the stamp's command period (else at
  the file's ``control_period``). **Refused** (``refuse`` True) when the model says that loop is
  unstable there (:func:`~geodyn_ros.control.gain_design.check_gains`: the discrete loop with one
  step of delay and the 1.5x gain margin); **warned** otherwise, with what a 10 ms command period
  (PX4's odometry) would do to them.

Why refuse only then: a stable loop with another vehicle's gains flies, worse than it could, and a
lab may do that on purpose; a loop the model says is unstable does not fly, and starting it is
the crash. Why not refuse every unstamped gain: hand-tuned gains are a lab's right, and the stamp
is the package's own convention.

The stamp (:func:`designed_for`) is plain text: ``"mass 1.8 kg; inertia 0.0291108 0.0291108
0.0280151 kg m^2; period 0.01 s"`` -- the total mass, the inertia about the CoM at home (base
axes' diagonal: :func:`~geodyn_ros.control.gain_design.model_inertias`) and the command period
the gains were designed for. Two vehicles are the same when mass and inertias agree to
:data:`SAME_VEHICLE_RTOL`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_GAINS_FOR", "SAME_VEHICLE_RTOL", "PX4_PERIOD", "GainOrigin", "designed_for",
           "parse_designed_for", "gain_origin"]

#: the stamp of FlatnessGains()'s defaults: the shipped collinear hexarotor manipulator
#: (config/hexarotor.yaml on urdf/hexarotor_manipulator.urdf.xacro) at its 1 ms control period
#: (test/px4/test_gain_origin.py computes it again from the shipped files)
DEFAULT_GAINS_FOR = "mass 4.03 kg; inertia 0.131178 0.143328 0.070049 kg m^2; period 0.001 s"
#: mass and inertias written with 6 significant digits: equal to 1e-4 is the same vehicle
SAME_VEHICLE_RTOL = 1e-4
#: [s] PX4's odometry period (EKF2_PREDICT_US 10 ms): the command period of PX4's offboard path
PX4_PERIOD = 0.01
_STAMP = re.compile(r"^\s*mass\s+(\S+)\s+kg\s*;\s*inertia\s+(\S+)\s+(\S+)\s+(\S+)\s+kg m\^2\s*;\s*period\s+(\S+)\s+s\s*$")
_GAINS = ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint")


def designed_for(model, period: float) -> str:
    """The designed-for stamp of gains designed for ``model`` at the command period ``period`` [s]
    (module docstring)."""
    from .gain_design import model_inertias
    if not (isinstance(period, (int, float)) and math.isfinite(period) and period > 0):
        raise ValueError(f"period: expected a finite command period > 0 [s], got {period!r}")
    inr = model_inertias(model)
    d = np.diag(inr["inertia_com"])
    return (f"mass {inr['mass']:.6g} kg; inertia {d[0]:.6g} {d[1]:.6g} {d[2]:.6g} kg m^2; "
            f"period {float(period):.6g} s")


def parse_designed_for(stamp: str) -> tuple:
    """``(mass, inertia (3,), period)`` of a stamp; ValueError naming ``gains_designed_for`` and
    the expected form otherwise."""
    m = _STAMP.match(stamp) if isinstance(stamp, str) else None
    vals = None
    if m:
        try:
            vals = [float(x) for x in m.groups()]
        except ValueError:
            vals = None
    if vals is None or not all(math.isfinite(v) and v > 0 for v in vals):
        raise ValueError(f"gains_designed_for: {stamp!r} is not a stamp 'mass <kg> kg; inertia <Ixx> <Iyy> <Izz> "
                         "kg m^2; period <s> s'; write it with geodyn_vehicle --px4 --out DIR, or leave it empty")
    return vals[0], np.array(vals[1:4]), vals[4]


def _same_vehicle(a, b) -> bool:
    return bool(np.allclose(np.r_[a[0], a[1]], np.r_[b[0], b[1]], rtol=SAME_VEHICLE_RTOL, atol=0.0))


def _equal_gains(g, h) -> bool:
    """Every gain of ``g`` equals ``h``'s (a scalar equals a per-axis or per-joint array of it)."""
    for k in _GAINS:
        a, b = np.asarray(getattr(g, k), float), np.asarray(getattr(h, k), float)
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return False
        if not np.allclose(np.broadcast_to(a, shape), np.broadcast_to(b, shape), rtol=1e-9, atol=0.0):
            return False
    return True


def _short(stamp_vals) -> str:
    m, I, p = stamp_vals
    return f"{m:.4g} kg, inertia {I[0]:.3g} {I[1]:.3g} {I[2]:.3g} kg m^2"


@dataclass(frozen=True)
class GainOrigin:
    """The answer of :func:`gain_origin`: ``line`` (empty: designed for this vehicle) and
    ``refuse`` (the model says a loop is unstable with them on this vehicle)."""
    line: str = ""
    refuse: bool = False


def _unstable(gains, model, allocation, config, period, rigid_joints):
    """The first refusal of the discrete check (:func:`~geodyn_ros.control.gain_design.check_gains`'s
    rule) of ``gains`` on this vehicle at ``period``, or ''."""
    from .gain_design import design_gains
    spec = {k: np.asarray(getattr(gains, k), float).tolist() for k in _GAINS}
    d = design_gains(model, allocation, config, kind="flatness", spec=spec, period=period, rigid_joints=rigid_joints)
    return d.refusals[0] if d.refusals else ""


def gain_origin(gains, stamp: str, model, allocation, config, *, rigid_joints: bool = False,
                fix: str = "write this vehicle's with geodyn_vehicle --urdf <urdf> --vehicle <file> --px4 --out <dir>"
                ) -> GainOrigin:
    """Whether ``gains`` (a ``FlatnessGains``) with the designed-for ``stamp`` (may be empty) were
    designed for this vehicle (``model``, ``allocation``, ``config``: its ``ActuationConfig``), and
    the one line that says otherwise (module docstring). ``rigid_joints``: the controller treats
    every joint as rigid. ValueError for a malformed stamp."""
    from .flatness import FlatnessGains
    from .gain_design import design_gains
    here = parse_designed_for(designed_for(model, 1.0))
    file_period = float(getattr(config, "control_period", 1e-3))
    given = parse_designed_for(stamp) if stamp else None
    if given is not None and _same_vehicle(given, here):
        return GainOrigin()
    if given is None:
        d = design_gains(model, allocation, config, kind="flatness", period=file_period, rigid_joints=rigid_joints)
        if _equal_gains(gains, d.gains):          # the vehicle file's gains:, or its model's at its period
            return GainOrigin()
        if _equal_gains(gains, FlatnessGains()):
            given = parse_designed_for(DEFAULT_GAINS_FOR)
            if _same_vehicle(given, here):
                return GainOrigin()
            what = f"they are the node's defaults, the shipped hexarotor's ({_short(given)})"
        else:
            what = "they carry no gains_designed_for and are not the vehicle file's"
    else:
        what = f"gains_designed_for names another vehicle ({_short(given)}, period {given[2]:g} s)"
    period = given[2] if given is not None else file_period
    head = f"gains: not designed for this vehicle ({_short(here)}): {what}"
    bad = _unstable(gains, model, allocation, config, period, rigid_joints)
    if bad:
        return GainOrigin(f"{head}; on it the model says unstable at {period * 1e3:g} ms: {bad}; {fix}", True)
    px4 = "" if period == PX4_PERIOD else _unstable(gains, model, allocation, config, PX4_PERIOD, rigid_joints)
    tail = (f"stable at {period * 1e3:g} ms, but at PX4's {PX4_PERIOD * 1e3:g} ms: {px4}" if px4 else
            f"stable on it at {period * 1e3:g} ms" + ("" if period == PX4_PERIOD else f" and {PX4_PERIOD * 1e3:g} ms"))
    return GainOrigin(f"{head}; {tail}; {fix}", False)
