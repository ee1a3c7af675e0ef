"""Model error: the simulated robot differs from the controller's model, seeded (ROS-free).

The controller inverts the URDF and the vehicle file; a real vehicle is not them. A
:class:`ModelErrorSpec` says how far each parameter may be off, a seed draws one
:class:`ModelError` from it, and the simulator is built from the drawn values
(:meth:`ModelError.urdf`, :meth:`ModelError.config`) while the controller keeps the nominal ones.

What may differ (every error is drawn independently: per link, per rotor, per joint)

* per body (a URDF link with an ``<inertial>``): the **mass** ``m (1 + e_m)``; the **centre of
  mass** moved by ``delta`` (3,) [m] in the link frame (the URDF ``<inertial><origin xyz>``);
  the **inertia** about the centre of mass: the second moments of mass along the nominal
  principal axes ``Sigma_k = tr(I)/2 - I_k`` are scaled by ``(1 + e_k)`` (k = 1..3, numpy's
  ``eigh`` order), and the whole by ``(1 + e_m)`` (a heavier part of the same shape is as much
  more inert). ``Sigma_k >= 0`` is exactly the triangle inequality of the principal moments, so
  every drawn inertia is physical (MuJoCo accepts it) whatever the errors;
* per rotor: the thrust constant ``c_f`` (``motor_constant``), the moment constant
  (``moment_constant``, the drag torque per thrust) and the lag (``time_constant``: both
  ``time_constant_up`` and ``time_constant_down`` by the same factor);
* per series-elastic joint: the spring ``stiffness`` K and the reflected ``motor_inertia`` B.

Errors are relative (``0.05`` = +5 %) except the centre of mass [m]. Each is a
:class:`Distribution`: a fixed value, uniform in ``[lo, hi]``, or normal (truncated at 3 sigma).
Which links a body entry covers (:class:`BodyErrorSpec`): ``all`` (every link with an inertial),
``base`` (the base link), ``arm`` (every link a joint moves: the links whose body in the
loaded model is not the base's), or a list of link names; a later entry overrides an earlier one
for the keys it gives (``all`` first, then a named link).

The ranges shipped in ``config/world.yaml`` are cited there (CAD mass and inertia errors,
thrust-stand scatter, datasheet tolerances); :mod:`geodyn_ros.sim.world_file` reads them.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace

import numpy as np

from ..lie import rpy_to_matrix

__all__ = ["Distribution", "BodyErrorSpec", "ModelErrorSpec", "BodyError", "ModelError", "ROTOR_KEYS",
           "ELASTIC_KEYS", "LINK_GROUPS", "inertial_links", "arm_links", "perturbed_inertia"]

#: the rotor constants a model error may perturb (relative errors)
ROTOR_KEYS = ("motor_constant", "moment_constant", "time_constant")
#: the elastic-joint constants a model error may perturb (relative errors)
ELASTIC_KEYS = ("stiffness", "motor_inertia")
#: the link selectors of :class:`BodyErrorSpec` besides explicit names
LINK_GROUPS = ("all", "base", "arm")


@dataclass(frozen=True)
class Distribution:
    """One error's distribution: ``kind`` ``"fixed"`` (``a``), ``"uniform"`` (in ``[a, b]``) or
    ``"normal"`` (mean 0, standard deviation ``a``, truncated at ``+-3 a`` by redrawing)."""

    kind: str
    a: float
    b: float = 0.0

    def __post_init__(self):
        if self.kind not in ("fixed", "uniform", "normal"):
            raise ValueError(f"kind: expected fixed, uniform or normal, got {self.kind!r}")
        for name in ("a", "b"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name}: expected a finite number, got {getattr(self, name)!r}")
        if self.kind == "uniform" and self.b < self.a:
            raise ValueError(f"b: expected the upper bound >= the lower {self.a!r}, got {self.b!r}")
        if self.kind == "normal" and self.a < 0:
            raise ValueError(f"a: expected a standard deviation >= 0, got {self.a!r}")

    @classmethod
    def fixed(cls, v) -> "Distribution":
        return cls("fixed", float(v))

    @classmethod
    def uniform(cls, lo, hi=None) -> "Distribution":
        """Uniform in ``[lo, hi]``; ``uniform(r)``: in ``[-r, r]``."""
        return cls("uniform", -abs(float(lo)), abs(float(lo))) if hi is None else cls("uniform", float(lo), float(hi))

    @classmethod
    def normal(cls, sigma) -> "Distribution":
        return cls("normal", float(sigma))

    @property
    def bounds(self) -> tuple:
        """``(lo, hi)``: the values a draw can take."""
        if self.kind == "fixed":
            return (self.a, self.a)
        if self.kind == "uniform":
            return (self.a, self.b)
        return (-3.0 * self.a, 3.0 * self.a)

    def sample(self, rng, size=None):
        """A draw (``size`` None: a float; else an array of that shape). A fixed value draws no
        random number (adding one to a world does not move the others' draws)."""
        if self.kind == "fixed":
            return self.a if size is None else np.full(size, self.a)
        if self.kind == "uniform":
            return float(rng.uniform(self.a, self.b)) if size is None else rng.uniform(self.a, self.b, size)
        n = 1 if size is None else int(np.prod(size))
        out = np.empty(n)
        for i in range(n):
            x = rng.normal(0.0, self.a)
            while abs(x) > 3.0 * self.a:
                x = rng.normal(0.0, self.a)
            out[i] = x
        return float(out[0]) if size is None else out.reshape(size)

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"{self.a:g}"
        if self.kind == "uniform":
            return f"uniform [{self.a:g}, {self.b:g}]"
        return f"normal sigma {self.a:g} (truncated at 3 sigma)"


@dataclass(frozen=True)
class BodyErrorSpec:
    """The errors of the links ``links`` (``"all"``, ``"base"``, ``"arm"`` or a tuple of link names):
    ``mass`` and ``inertia`` relative, ``com`` [m] one distribution for each of the three link axes
    (a tuple of 3) or None (that key is not perturbed by this entry)."""

    links: object = "all"
    mass: Distribution | None = None
    com: tuple | None = None
    inertia: Distribution | None = None


@dataclass(frozen=True)
class ModelErrorSpec:
    """What may differ between the simulated robot and the model (module docstring): ``bodies``
    (:class:`BodyErrorSpec`, applied in order), ``rotors`` ``{key: Distribution}`` (keys of
    :data:`ROTOR_KEYS`), ``elastic`` ``{key: Distribution}`` (:data:`ELASTIC_KEYS`)."""

    bodies: tuple = ()
    rotors: dict = field(default_factory=dict)
    elastic: dict = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.bodies or self.rotors or self.elastic)

    def draw(self, seed_sequence, urdf_text: str, base_link: str, arm: tuple, n_rotors: int, elastic_joints: tuple,
             where: str = "world") -> "ModelError":
        """The :class:`ModelError` of one seed (a ``numpy.random.SeedSequence``) for a vehicle: its
        URDF text (links with inertials), ``base_link``, ``arm`` (the links a joint moves),
        ``n_rotors`` and ``elastic_joints``. The bodies, the rotors and the joints draw from their
        own streams (``seed_sequence.spawn(3)``): one seed gives the same rotor errors whether or not
        the world perturbs the bodies too. Order within a stream: the body entries in order, their
        links in URDF order, for each mass, CoM x, y, z, inertia 1..3; each rotor key over the
        rotors; each elastic key over the joints. ``where`` names the spec in a refusal (a link it
        names that the URDF does not have, or has without an inertial)."""
        rb, rr, re = (np.random.default_rng(s) for s in seed_sequence.spawn(3))
        have = inertial_links(urdf_text)
        bodies = {}
        for i, spec in enumerate(self.bodies):
            for link in _select(spec.links, have, urdf_links(urdf_text), base_link, arm, f"{where}.bodies[{i}].links"):
                old = bodies.get(link, BodyError())
                e_m = spec.mass.sample(rb) if spec.mass is not None else old.mass
                com = (np.array([d.sample(rb) for d in spec.com]) if spec.com is not None else old.com)
                e_i = spec.inertia.sample(rb, 3) if spec.inertia is not None else old.inertia
                bodies[link] = BodyError(float(e_m), np.asarray(com, float), np.asarray(e_i, float))
        rotors = {k: np.asarray(d.sample(rr, n_rotors), float) for k, d in self.rotors.items()}
        elastic = {k: np.asarray(d.sample(re, len(elastic_joints)), float) for k, d in self.elastic.items()}
        return ModelError(bodies, rotors, elastic, tuple(elastic_joints))


@dataclass(frozen=True)
class BodyError:
    """The drawn errors of one link: ``mass`` relative, ``com`` (3,) [m] link frame, ``inertia``
    (3,) relative, one per nominal principal second moment."""

    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class ModelError:
    """One drawn model error: ``bodies`` ``{link: BodyError}``, ``rotors`` ``{key: (n_rotors,)}``
    and ``elastic`` ``{key: (n_elastic,)}`` relative errors (``elastic_joints`` their order)."""

    bodies: dict
    rotors: dict
    elastic: dict
    elastic_joints: tuple = ()

    @property
    def empty(self) -> bool:
        return not (self.bodies or self.rotors or self.elastic)

    def urdf(self, text: str) -> str:
        """The URDF XML ``text`` with every drawn body error applied (module docstring); the
        text itself when no body is perturbed."""
        if not self.bodies:
            return text
        root = ET.fromstring(text)
        for link in root.iter("link"):
            err = self.bodies.get(link.get("name"))
            if err is None:
                continue
            inertial = link.find("inertial")
            m, xyz, R, I = _read_inertial(inertial)
            origin = inertial.find("origin")
            if origin is None:
                origin = ET.SubElement(inertial, "origin", {"rpy": "0 0 0"})
            origin.set("xyz", " ".join(repr(float(x)) for x in xyz + err.com))
            inertial.find("mass").set("value", repr(float(m * (1.0 + err.mass))))
            Ip = perturbed_inertia(I, err.mass, err.inertia)
            el = inertial.find("inertia")
            for k, (a, b) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                                 ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
                el.set(k, repr(float(Ip[a, b])))
        return ET.tostring(root, encoding="unicode")

    def config(self, cfg):
        """The :class:`~geodyn_ros.vehicle.ActuationConfig` ``cfg`` with the drawn rotor and
        elastic-joint errors applied (per-rotor arrays where they differ); ``cfg`` itself when none."""
        if not (self.rotors or self.elastic):
            return cfg
        rp, el = cfg.rotors, cfg.elastic
        if self.rotors:
            kw = {}
            for key, e in self.rotors.items():
                names = ("time_constant_up", "time_constant_down") if key == "time_constant" else (key,)
                for name in names:
                    kw[name] = rp.per_rotor(name) * (1.0 + e)
            rp = replace(rp, **kw)
        if self.elastic:
            idx = [el.joints.index(j) for j in self.elastic_joints]
            kw = {}
            for key, e in self.elastic.items():
                v = np.array(getattr(el, key), float)
                v[idx] = v[idx] * (1.0 + e)
                kw[key] = v
            el = replace(el, **kw)
        return replace(cfg, rotors=rp, elastic=el)

    def lines(self, text: str, rotor_names=(), cfg=None) -> list:
        """One line per perturbed link, rotor constant and joint constant: the relative error and the
        nominal -> drawn values (``text`` the nominal URDF, ``cfg`` the nominal config)."""
        out = []
        nominal = {ln.get("name"): ln for ln in ET.fromstring(text).iter("link")} if self.bodies else {}
        for link, err in self.bodies.items():
            m = _read_inertial(nominal[link].find("inertial"))[0]
            parts = []
            if err.mass:
                parts.append(f"mass {100 * err.mass:+.2f} % ({m:.4g} -> {m * (1 + err.mass):.4g} kg)")
            if np.any(err.com):
                parts.append(f"CoM [{', '.join(f'{1e3 * c:+.2f}' for c in err.com)}] mm")
            if np.any(err.inertia):
                parts.append(f"second moments [{', '.join(f'{100 * e:+.1f}' for e in err.inertia)}] %")
            out.append(f"link {link}: " + (", ".join(parts) or "unchanged"))
        for key, e in self.rotors.items():
            names = rotor_names or tuple(str(i + 1) for i in range(len(e)))
            out.append(f"rotors {key}: " + ", ".join(f"{n} {100 * x:+.2f} %" for n, x in zip(names, e)))
        for key, e in self.elastic.items():
            out.append(f"elastic {key}: " + (", ".join(f"{j} {100 * x:+.2f} %" for j, x in zip(self.elastic_joints, e))
                                             or "no elastic joint (nothing perturbed)"))
        return out

    def as_dict(self) -> dict:
        """The drawn values as plain JSON types (relative errors; CoM offsets [m])."""
        return {"bodies": {k: {"mass": v.mass, "com_m": [float(c) for c in v.com],
                               "second_moments": [float(x) for x in v.inertia]} for k, v in self.bodies.items()},
                "rotors": {k: [float(x) for x in v] for k, v in self.rotors.items()},
                "elastic": {k: dict(zip(self.elastic_joints, (float(x) for x in v))) for k, v in self.elastic.items()}}


def perturbed_inertia(I, mass_error: float, moment_errors) -> np.ndarray:
    """(3, 3) the inertia ``I`` (3, 3, about the CoM) with its principal second moments of mass
    ``Sigma_k = tr(I)/2 - I_k`` scaled by ``1 + moment_errors[k]`` and the whole by
    ``1 + mass_error`` (module docstring); same axes as ``I``. The principal axes: ``I``'s own when
    it is diagonal (the moments in x, y, z order), else its eigenvectors (ascending moments). Each
    new moment is the sum of the other two new second moments, so a flat body (``A + B = C``) stays
    exactly flat."""
    I = np.asarray(I, float)
    if not (I[0, 1] or I[0, 2] or I[1, 2] or I[1, 0] or I[2, 0] or I[2, 1]):
        lam, V = np.diag(I).copy(), None        # diagonal (most URDFs): its own axes, exactly
    else:
        lam, V = np.linalg.eigh(0.5 * (I + I.T))
    sig = np.maximum(0.5 * lam.sum() - lam, 0.0)   # >= 0 for a physical body; rounding of a flat one clipped
    s1, s2, s3 = sig * (1.0 + np.asarray(moment_errors, float)) * (1.0 + mass_error)
    # each moment the sum of the other two second moments: A + B = C stays exact for a flat body
    lam_p = np.array([s2 + s3, s1 + s3, s1 + s2])
    if V is None:
        return np.diag(lam_p)
    return (V * lam_p) @ V.T


def _read_inertial(inertial):
    """``(mass, xyz (3,) [m] in the link frame, R (3, 3) of the origin's rpy, I (3, 3) in the inertial
    frame (the origin's axes, as the URDF gives it))`` of a URDF ``<inertial>`` element (URDF
    defaults: origin 0, inertia entries 0). :func:`perturbed_inertia` does not depend on the axes,
    so the perturbed inertia is written back in the same frame."""
    m = float(inertial.find("mass").get("value"))
    o = inertial.find("origin")
    xyz = np.array([float(x) for x in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()])
    rpy = np.array([float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()])
    R = rpy_to_matrix(rpy)
    el = inertial.find("inertia")
    g = (lambda k: float(el.get(k, "0"))) if el is not None else (lambda k: 0.0)
    Ii = np.array([[g("ixx"), g("ixy"), g("ixz")], [g("ixy"), g("iyy"), g("iyz")], [g("ixz"), g("iyz"), g("izz")]])
    return m, xyz, R, Ii


def urdf_links(text: str) -> tuple:
    """Every link name of the URDF ``text``, in file order."""
    return tuple(ln.get("name") for ln in ET.fromstring(text).iter("link"))


def inertial_links(text: str) -> tuple:
    """The links of the URDF ``text`` with an ``<inertial>`` of positive mass, in file order."""
    out = []
    for ln in ET.fromstring(text).iter("link"):
        i = ln.find("inertial")
        if i is not None and i.find("mass") is not None and float(i.find("mass").get("value", "0")) > 0.0:
            out.append(ln.get("name"))
    return tuple(out)


def arm_links(model) -> tuple:
    """The links of the loaded ``model`` a joint moves (their body is not the base's)."""
    return tuple(ln for ln, b in model.link_to_body.items() if b != 0)


def _select(links, have, every, base_link, arm, key) -> list:
    """The links (with an inertial, in URDF order) of a body entry's selector ``links``."""
    if links == "all":
        return list(have)
    if links == "base":
        names = [base_link]
    elif links == "arm":
        return [ln for ln in have if ln in set(arm)]
    else:
        names = list(links)
    for n in names:
        if n not in every:
            import difflib
            m = difflib.get_close_matches(str(n), list(every), n=1)
            raise ValueError(f"{key}: {n!r} is not a link of the URDF; "
                             + (f"did you mean {m[0]!r}?" if m else "give link names, all, base or arm"))
        if n not in have:
            raise ValueError(f"{key}: link {n!r} has no inertial (no mass) to perturb; give a link with one")
    order = {n: i for i, n in enumerate(have)}
    return sorted(set(names), key=order.get)
