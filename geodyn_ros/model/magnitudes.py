"""The masses and inertias a rigid-body model can physically have, for its size.

A URDF whose numbers are finite and consistent (positive masses, positive semi-definite
inertias) can still be absurd: every mass times 1e300, or inertias in g mm^2 read as kg m^2. The
dynamics would then give finite, absurd answers (a ``robot_description`` of the same robot with
every mass x 1e300 was accepted by ``geodyn_node``, which published wrenches of 1e300 N). So a
model is refused when, for its size,

* its total mass exceeds :data:`DENSITY_MARGIN` times the mass of its bounding sphere filled
  with osmium, the densest element (:data:`OSMIUM_DENSITY`); or
* a body's largest principal moment of inertia (about its centre of mass) exceeds
  :data:`DENSITY_MARGIN` times ``M L^2``: the whole robot's mass ``M`` at the robot's
  size ``L`` from the body's centre of mass bounds what any part of it can have.

The size ``L`` is the diameter of the body frames and centres of mass at home (the robot's
extent in its own URDF), at least :data:`MIN_SIZE_M` (a single body has no extent in the file's
frames). The bounds are generous on purpose: they refuse numbers that no robot can have, not
unusual robots; every robot of example-robot-data and of this repository is far inside them.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["OSMIUM_DENSITY", "DENSITY_MARGIN", "MIN_SIZE_M", "robot_size", "check_magnitudes"]

#: [kg/m^3] osmium, the densest element at room temperature (CRC Handbook of Chemistry and Physics,
#: "Density of the elements": 22.59 g/cm^3)
OSMIUM_DENSITY = 22590.0
#: factor over the physical bounds (no robot comes within it)
DENSITY_MARGIN = 10.0
#: [m] the smallest size a robot is judged at
MIN_SIZE_M = 1.0


def robot_size(model) -> float:
    """The diameter [m] of the model's body frames and centres of mass at home, at least
    :data:`MIN_SIZE_M`."""
    pts = [T[:3, 3] for T in model.link_home.values()] + [c for c in np.asarray(model.com, float)]
    P = np.asarray(pts, float).reshape(-1, 3)
    lo, hi = P.min(axis=0), P.max(axis=0)
    return max(float(np.linalg.norm(hi - lo)), MIN_SIZE_M)


def check_magnitudes(model, what: str) -> None:
    """Raise ValueError (one line, naming the link and the bound) if a mass or an inertia of
    ``model`` is absurd for its size (module docstring); ``what`` names the source in the message."""
    L = robot_size(model)
    mass = np.asarray(model.mass, float)
    total = float(mass.sum())
    m_max = DENSITY_MARGIN * OSMIUM_DENSITY * math.pi / 6.0 * L ** 3
    if total > m_max:
        heavy = model.link_names[int(np.argmax(mass))]
        raise ValueError(f"{what}: total mass {total:.4g} kg is absurd for a robot {L:.3g} m across (at most "
                         f"{m_max:.3g} kg: {DENSITY_MARGIN:g} times its bounding sphere in osmium); the heaviest "
                         f"link is {heavy!r} with {float(mass.max()):.4g} kg: check the <mass> values and units")
    I_max = DENSITY_MARGIN * max(total, 0.0) * L ** 2
    for b, name in enumerate(model.link_names):
        lam = float(np.max(np.linalg.eigvalsh(np.asarray(model.inertia[b], float))))
        if lam > I_max:
            raise ValueError(f"{what}: link {name!r}: principal moment of inertia {lam:.4g} kg m^2 is absurd for a "
                             f"robot of {total:.4g} kg and {L:.3g} m (at most {I_max:.3g} kg m^2: {DENSITY_MARGIN:g} "
                             f"times the whole mass at the robot's size); check the <inertia> values and units")
