"""The inertia correction for flight: a link whose principal moments MuJoCo refuses is changed by
the smallest symmetric amount that satisfies the triangle inequality (issue 40).

MuJoCo's compiler refuses a body whose principal moments ``A <= B <= C`` have ``A + B < C``
("inertia must satisfy A + B >= C; use 'balanceinertia' to fix"; the check is exact, with no
tolerance: ``mjCBody::Compile`` in ``src/user/user_objects.cc``). It checks every URDF link as
a body of its own (the simulator imports with ``fusestatic=False``). ``load_urdf`` accepts such a
tensor with a warning (Pinocchio does not check), so a vehicle could be described but never flown.

:func:`balance_link_inertias` takes URDF text and, for each link whose own ``<inertia>`` MuJoCo
would refuse, raises the two smaller principal moments by the same ``delta = (C - A - B) / 2``,
so that ``A + B = C`` (to rounding, see :func:`balanced_moments`), in the link's principal axes,
keeping the axes, the largest moment, the mass and the centre of mass:

    I' = I + delta (1 - u_C u_C^T)     (u_C: the unit principal axis of C)

which is the inertia of the link plus a massless rod's along ``u_C``. The same corrected text then
goes to the simulator and to the controller's model (:meth:`geodyn_ros.vehicle.ActuationConfig.flight_urdf`),
so a flight compares the feedforward levels, not a plant/model mismatch. MuJoCo's own option
``balanceinertia`` sets the three moments to their mean instead: a larger change, which also
lowers ``C`` (doc/howto/fly_your_vehicle.md gives both for the RotorS firefly).

A link with a negative principal moment is not corrected: that is no rounding of a real body,
``load_urdf`` refuses it (beyond :data:`~geodyn_ros.model.urdf.INERTIA_RTOL`) and so does MuJoCo.
Text that needs no correction is returned unchanged (the models of every other URDF stay
bit-identical).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

from .urdf_etree import _INERTIA_KEYS, URDFWarning, inertia_matrix

__all__ = ["InertiaCorrection", "InertiaCorrectionWarning", "balanced_moments", "balance_link_inertias",
           "violates_triangle", "MARGIN_ABS", "MARGIN_EPS"]


class InertiaCorrectionWarning(URDFWarning):
    """A link's inertia was corrected for flight (:func:`balance_link_inertias`); the message is
    :meth:`InertiaCorrection.line`."""


class InertiaCorrection(NamedTuple):
    """One corrected link: ``before`` and ``after`` its principal moments ``(A, B, C)`` ascending
    [kg m^2]; ``delta`` [kg m^2] the amount added to ``A`` and ``B``; ``relative_change``
    ``||I' - I||_F / ||I||_F`` (= ``sqrt(2) delta / |(A, B, C)|``)."""

    link: str
    before: tuple
    after: tuple
    delta: float
    relative_change: float

    def line(self) -> str:
        """The one line geodyn_fly and geodyn_vehicle print."""
        def v(x):
            return "(" + ", ".join(f"{m:.4g}" for m in x) + ")"
        return (f"inertia corrected for MuJoCo (A + B >= C): {self.link} (A, B, C) {v(self.before)} -> "
                f"{v(self.after)} kg m^2, {100 * self.relative_change:.3g} % of the tensor, simulator and model alike")

    def as_dict(self) -> dict:
        """JSON-ready (:meth:`from_dict` reads it back)."""
        return {"link": self.link, "moments_before_kg_m2": list(self.before), "moments_after_kg_m2": list(self.after),
                "delta_kg_m2": self.delta, "relative_change": self.relative_change}

    @classmethod
    def from_dict(cls, d: dict) -> "InertiaCorrection":
        return cls(d["link"], tuple(d["moments_before_kg_m2"]), tuple(d["moments_after_kg_m2"]), d["delta_kg_m2"],
                   d["relative_change"])


#: The margin a corrected tensor keeps above ``A + B = C`` when MuJoCo must rotate it to find its
#: principal moments (products of inertia, or an ``<inertial>`` origin with a rotation):
#: ``mjuu_eig3`` (src/user/user_util.cc) stops its Jacobi iteration once every product left is
#: below 1e-12 kg m^2 (``kEigEPS``), so each moment it finds is within 2e-12 of the true one (two
#: products per row, Weyl's bound) and ``A + B - C`` within 6e-12 [kg m^2]; plus the rounding
#: of its products of 3x3 matrices, ``MARGIN_EPS`` units of ``eps C`` (measured when this was
#: written, MuJoCo 4.0.0, random tensors of moments 1e1..1e4 kg m^2 with no absolute margin: 4 units
#: left 3 of 2000 full tensors refused, 16 none; 64 keeps a factor 4). A diagonal tensor in the
#: link's own axes is read by MuJoCo as written: no margin
#: (test/control/test_mujoco_sim.py compiles corrected tensors of every kind).
MARGIN_ABS, MARGIN_EPS = 6e-12, 64


def violates_triangle(moments, margin: float = 0.0) -> bool:
    """``A + B < C + margin`` for the principal moments sorted ascending (``margin = 0``: MuJoCo's
    test, exact)."""
    a, b, c = sorted(float(m) for m in moments)
    return a + b < c + margin


def balanced_moments(moments, margin: float = 0.0) -> tuple:
    """``((A', B', C), delta)``: the principal moments ``moments`` (any order) with the two smaller
    raised by ``delta``, so that ``A' + B' >= C + margin`` holds in floating point (the sum MuJoCo
    forms): the closed form ``(C + margin - A - B) / 2``, or, when the rounding of the sums leaves
    that a few units in the last place short, the smallest double above it that passes (bisected:
    the sum grows monotonically with ``delta``). ``delta = 0`` when the moments satisfy it already."""
    a, b, c = sorted(float(m) for m in moments)
    if not violates_triangle((a, b, c), margin):
        return (a, b, c), 0.0

    def passes(d):
        return (a + d) + (b + d) >= c + margin

    lo = (c + margin - a - b) / 2.0
    if passes(lo):
        return (a + lo, b + lo, c), lo
    hi, step = lo + math.ulp(c), math.ulp(c)
    while not passes(hi):
        lo, hi, step = hi, hi + step, 2.0 * step
    while math.nextafter(lo, math.inf) < hi:      # lo fails, hi passes
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return (a + hi, b + hi, c), hi


def _read_inertia(elem) -> np.ndarray | None:
    """(3, 3) of an ``<inertia>`` element (absent components 0, as the loader reads them), or None
    when a component is not a finite number (the loader refuses the file with its own message)."""
    try:
        v = {k: float(elem.get(k, "0")) for k in _INERTIA_KEYS}
    except ValueError:
        return None
    if not all(math.isfinite(x) for x in v.values()):
        return None
    return inertia_matrix(v)


def _rotated(inertial) -> bool | None:
    """Whether the ``<inertial>`` origin has a rotation (``rpy`` not absent or zero); None for an
    ``rpy`` that is not three numbers (the loader refuses the file with its own message)."""
    o = inertial.find("origin")
    rpy = None if o is None else o.get("rpy")
    if rpy is None:
        return False
    try:
        v = [float(x) for x in rpy.split()]
    except ValueError:
        return None
    return None if len(v) != 3 else any(v)


def _corrected(I: np.ndarray, rotated: bool):
    """``(I', before, after, delta)`` of one link's tensor ``I`` (in the ``<inertia>`` element's
    axes), or None: nothing to correct, or a negative principal moment."""
    diagonal = not (I[0, 1] or I[0, 2] or I[1, 2])
    if diagonal:          # the principal axes are the element's: the moments are the numbers written
        ev = np.diag(I).copy()
    else:
        ev, U = np.linalg.eigh(I)      # ascending; U's last column: the axis of C
    if np.min(ev) < 0.0:
        return None
    margin = 0.0 if diagonal and not rotated else MARGIN_ABS + MARGIN_EPS * np.finfo(float).eps * float(np.max(ev))
    if not violates_triangle(ev, margin):
        return None
    order = np.argsort(ev, kind="stable")
    before = tuple(float(x) for x in ev[order])
    after, delta = balanced_moments(before, margin)
    Ip = I.copy()
    if diagonal:
        for k in order[:2]:
            Ip[k, k] += delta
    else:
        u = U[:, 2]
        Ip += delta * (np.eye(3) - np.outer(u, u))      # symmetric: u_i u_j = u_j u_i
    return Ip, before, after, float(delta)


def balance_link_inertias(text: str) -> tuple:
    """``(text', corrections)``: URDF ``text`` with every link MuJoCo would refuse corrected (module
    docstring) and the :class:`InertiaCorrection` of each, in file order. No correction: ``text``
    itself is returned (the same object) and ``()``. Text that is not XML is returned as it is
    (the loader refuses it with its own message).

    A diagonal ``<inertia>`` in the link's axes (no ``rpy`` on the ``<inertial>`` origin) is
    corrected exactly: MuJoCo reads its moments as written. Any other tensor is corrected to
    ``A + B >= C + MARGIN_ABS + MARGIN_EPS eps C`` (see :data:`MARGIN_ABS`), and a tensor within
    that margin of the boundary counts as one MuJoCo may refuse."""
    try:
        root = ET.fromstring(text.lstrip("\ufeff \t\r\n"))
    except ET.ParseError:
        return text, ()
    out = []
    for link in root.findall("link"):
        inertial = link.find("inertial")
        elem = None if inertial is None else inertial.find("inertia")
        I = None if elem is None else _read_inertia(elem)
        rotated = None if inertial is None else _rotated(inertial)
        fixed = None if I is None or rotated is None else _corrected(I, rotated)
        if fixed is None:
            continue
        Ip, before, after, delta = fixed
        for k, (i, j) in zip(_INERTIA_KEYS, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
            if Ip[i, j] != I[i, j]:          # repr: the same double when read back
                elem.set(k, repr(float(Ip[i, j])))
        rel = math.sqrt(2.0) * delta / math.sqrt(sum(m * m for m in before))
        out.append(InertiaCorrection(link.get("name"), before, after, delta, rel))
    if not out:
        return text, ()
    return ET.tostring(root, encoding="unicode"), tuple(out)
