"""The masses and inertias a rigid-body model can physically have, for its size.

A URDF whose numbers are finite and consistent (positive masses, positive semi-definite
inertias) can still be absurd: every mass times 1e300 (a ``robot_description`` of the same robot
with every mass x 1e300 was accepted by ``geodyn_node``, which published wrenches of 1e300 N;
issue 41). Real files also carry *placeholder* values that are implausible but harmless: PyBullet's
20 g block with the common placeholder inertia 1 kg m^2, PyBullet's static objects (mass 0,
inertia 1), a Drake cart whose seven 1 kg parts each carry 100 kg m^2 (issue 51). Pinocchio and
MuJoCo load those, and so does this loader. Two tiers, judged at the robot's size ``L``:

**Refused** (``ValueError``, one line naming the link and the bound): numbers no body of that size
can have, whatever its masses say. The densest element, osmium (:data:`OSMIUM_DENSITY`), filling
the robot's bounding sphere gives the most mass a robot of that size can hold,
``m_Os(L) = rho_Os pi L^3 / 6``, and at most ``m_Os(L) L^2`` of moment about any body's centre of
mass (all of it at the distance ``L``). A model is refused when

* its total mass exceeds :data:`DENSITY_MARGIN` ``m_Os(L)``; or
* a body's largest principal moment exceeds :data:`DENSITY_MARGIN` ``m_Os(L) L^2``.

**Warned** (:class:`~geodyn_ros.model.urdf_etree.URDFWarning`, one line naming the link and the
values, loaded as given): numbers no real robot has, but which are finite and keep the mass matrix
positive definite:

* a total mass above ``m_Os(L)`` (denser than osmium);
* a body's largest principal moment above :data:`PLAUSIBLE_MARGIN` ``M L^2``, ``M`` the robot's
  whole mass: the robot's whole mass at its size from the body bounds what any part can have, so
  this is a placeholder, or a units mistake (kg mm^2 is 1e6 kg m^2);
* a body with rotational inertia but no mass (no mass distribution has it; PyBullet reads mass 0 as
  a static body).

The size ``L`` is the diameter of the body frames and centres of mass at home (the robot's extent
in its own URDF), at least :data:`MIN_SIZE_M` (a single body has no extent in the file's frames).
Measured (``test/model/test_magnitudes.py``): every robot of example-robot-data and of this
repository is at most 3.9e-4 of the mass refusal (b1) and 2.5e-5 of the inertia refusal (hyq), and
warns nowhere (the largest, double_pendulum_simple's unit inertias, at 0.17 of the warning); every
file of PyBullet's and Drake's collections is at most 8.6e-4 and 2.4e-3 of them (the cart of 701 kg
m^2); every mass or inertia x 1e300 is refused.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["OSMIUM_DENSITY", "DENSITY_MARGIN", "PLAUSIBLE_MARGIN", "MIN_SIZE_M", "robot_size", "osmium_mass",
           "magnitude_bounds", "check_magnitudes"]

#: [kg/m^3] osmium, the densest element at room temperature (CRC Handbook of Chemistry and Physics,
#: "Density of the elements": 22.59 g/cm^3)
OSMIUM_DENSITY = 22590.0
#: factor over the physical bounds of the refusals (no robot comes within it: the heaviest robot of
#: example-robot-data for its size holds 3.9e-3 of the osmium sphere, so the refusal is 2,600 times
#: above it)
DENSITY_MARGIN = 10.0
#: factor over ``M L^2`` of the inertia warning (example-robot-data's largest, the unit link
#: inertias of double_pendulum_simple, are 1.7 M L^2; the placeholders of PyBullet's and Drake's
#: collections 20 to 100 M L^2)
PLAUSIBLE_MARGIN = 10.0
#: [m] the smallest size a robot is judged at
MIN_SIZE_M = 1.0


def robot_size(model) -> float:
    """The diameter [m] of the model's body frames and centres of mass at home, at least
    :data:`MIN_SIZE_M`."""
    pts = [T[:3, 3] for T in model.link_home.values()] + [c for c in np.asarray(model.com, float)]
    P = np.asarray(pts, float).reshape(-1, 3)
    lo, hi = P.min(axis=0), P.max(axis=0)
    return max(float(np.linalg.norm(hi - lo)), MIN_SIZE_M)


def osmium_mass(L: float) -> float:
    """[kg] the mass of a sphere of osmium of diameter ``L`` [m]: ``rho_Os pi L^3 / 6``."""
    return OSMIUM_DENSITY * math.pi / 6.0 * L ** 3


def magnitude_bounds(model) -> dict:
    """The bounds that :func:`check_magnitudes` applies to ``model``: ``size`` [m], ``mass_refused``
    and ``mass_warned`` [kg], ``inertia_refused`` and ``inertia_warned`` [kg m^2]."""
    L = robot_size(model)
    m_os = osmium_mass(L)
    total = max(float(np.asarray(model.mass, float).sum()), 0.0)
    return {"size": L, "mass_refused": DENSITY_MARGIN * m_os, "mass_warned": m_os,
            "inertia_refused": DENSITY_MARGIN * m_os * L ** 2, "inertia_warned": PLAUSIBLE_MARGIN * total * L ** 2}


def _moments(I) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in np.linalg.eigvalsh(np.asarray(I, float))) + ")"


def check_magnitudes(model, what: str, members=None) -> list:
    """Raise ValueError (one line, naming the link and the bound) if a mass or an inertia of
    ``model`` is beyond any body of its size (module docstring); return the warnings (one line each,
    naming the link and the values) for the implausible ones. ``what`` names the source in the
    messages; ``members`` ``{body: [merged links]}`` adds the links merged into a body."""
    b = magnitude_bounds(model)
    L = b["size"]
    mass = np.asarray(model.mass, float)
    total = float(mass.sum())
    heavy = model.link_names[int(np.argmax(mass))]
    if total > b["mass_refused"]:
        raise ValueError(f"{what}: total mass {total:.4g} kg is absurd for a robot {L:.3g} m across (at most "
                         f"{b['mass_refused']:.3g} kg: {DENSITY_MARGIN:g} times its bounding sphere in osmium); the "
                         f"heaviest link is {heavy!r} with {float(mass.max()):.4g} kg: check the <mass> values and units")
    out = []
    if total > b["mass_warned"]:
        out.append(f"{what}: total mass {total:.4g} kg is implausible for a robot {L:.3g} m across (denser than "
                   f"osmium: above {b['mass_warned']:.3g} kg, its bounding sphere in osmium; the heaviest link is "
                   f"{heavy!r} with {float(mass.max()):.4g} kg); loaded as given: check the <mass> values and units")
    for i, name in enumerate(model.link_names):
        lam = float(np.max(np.linalg.eigvalsh(np.asarray(model.inertia[i], float))))
        merged = [ln for ln in (members or {}).get(name, [name]) if ln != name]
        where = f"link {name!r}" + (f" ({len(merged)} more links merged into it by fixed joints)" if merged else "")
        if lam > b["inertia_refused"]:
            raise ValueError(f"{what}: {where}: principal moment of inertia {lam:.4g} kg m^2 is absurd for a robot "
                             f"{L:.3g} m across (at most {b['inertia_refused']:.3g} kg m^2: {DENSITY_MARGIN:g} times "
                             "its bounding sphere in osmium at its size); check the <inertia> values and units")
        if lam <= 0.0:
            continue
        if mass[i] <= 0.0:
            out.append(f"{what}: {where}: mass 0 kg with principal moments {_moments(model.inertia[i])} kg m^2 "
                       "(inertia without mass: a placeholder? PyBullet reads mass 0 as a static body); loaded as given")
        elif lam > b["inertia_warned"]:
            out.append(f"{what}: {where}: principal moments {_moments(model.inertia[i])} kg m^2 are implausible "
                       f"for a robot of {total:.4g} kg and {L:.3g} m (above {b['inertia_warned']:.3g} kg m^2, "
                       f"{PLAUSIBLE_MARGIN:g} times its mass at its size: a placeholder, or kg mm^2 given as "
                       "kg m^2?); loaded as given")
    return out
