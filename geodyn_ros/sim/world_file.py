"""The world file (``config/world.yaml``): named worlds the simulator flies in, read and checked.

Why a file of its own: the world is neither the airframe (the vehicle file) nor the sensing (the
sensors file); one vehicle flies in every world, one world serves every vehicle.

Schema (doc/reference/world_file.md lists every key with its unit)::

    worlds:
      <name>:                                  # {} : the exact world (the simulator is the model)
        description: <text>
        model_error:
          bodies:                              # a list, applied in order (a later entry wins)
            - links: all | base | arm | [<link>, ...]
              mass: <error>                    # relative
              com: <error> | [<error>, <error>, <error>]   # [m] along the link's x, y, z
              inertia: <error>                 # relative, per principal second moment
          rotors: {motor_constant: <error>, moment_constant: <error>, time_constant: <error>}
          elastic_joints: {stiffness: <error>, motor_inertia: <error>}
        wind: {w20 | intensity, altitude, direction_deg, mean, turbulence, airspeed, z0, onset}
        drag: {<link> | base: auto | <C_D A> | [x, y, z] | {cda, point}}
        rotor_drag: {d: [dx, dy, dz], point: rotors | [x, y, z]}
        pushes: [{link, force | weight_fraction, point, start, duration, ramp}, ...]
        air_density: <kg/m^3>

    <error>: a number (that error, every seed) | {uniform: r} (in [-r, r]) |
             {uniform: [lo, hi]} | {normal: sigma} (truncated at 3 sigma)

Every refusal is one ``ValueError`` line ``<file>: <key>: <problem>; <fix>``
(:class:`geodyn_ros.model.validate.FileKeys`), with a did-you-mean for a misspelt key. Values are
checked for what they are and for the slips a person makes: a relative error outside
[-50 %, +100 %] (a percentage written as a number: ``5`` for 5 %), a centre-of-mass error of
10 cm or more (millimetres written as metres), a wind speed beyond severe turbulence (knots for
m/s), a link the URDF does not have (when the world is drawn for a vehicle).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from ..model.validate import FileKeys, Range, read_yaml, short_repr
from ..vehicle.params import default_actuation_config_path
from .model_error import ELASTIC_KEYS, LINK_GROUPS, ROTOR_KEYS, BodyErrorSpec, Distribution, ModelErrorSpec
from .wind import INTENSITY_W20_KT, KNOT, Z0_CATEGORY_C
from .world import AIR_DENSITY, WIND_ONSET_S, LinkDrag, Push, RotorDrag, WindSpec, World

__all__ = ["load_worlds", "world_preset", "default_worlds_path", "WORLD_KEYS"]

_TOP = ("worlds",)
WORLD_KEYS = ("description", "model_error", "wind", "drag", "rotor_drag", "pushes", "air_density")
_ME = ("bodies", "rotors", "elastic_joints")
_BODY = ("links", "mass", "com", "inertia")
_WIND = ("w20", "intensity", "altitude", "direction_deg", "mean", "turbulence", "airspeed", "z0", "onset")
_DRAG = ("cda", "point")
_ROTOR_DRAG = ("d", "point")
_PUSH = ("link", "force", "weight_fraction", "point", "start", "duration", "ramp")
_DIST = ("uniform", "normal")

#: the plausible ranges (module docstring): what lies outside is a slip, not a world
RELATIVE = Range(-0.5, 1.0, "", "a relative error: 0.05 is +5 %; beyond -50 % or +100 % it is another vehicle, not "
                 "a model error", "give a fraction, e.g. 0.05 for 5 %")
COM = Range(-0.1, 0.1, "m", "a centre-of-mass error of 10 cm or more is a unit slip (5 mm is 0.005)",
            "give metres, e.g. 0.005 for 5 mm")
W20 = Range(0.0, 30.0, "m/s", "MIL-F-8785C's severe turbulence has W20 = 45 kt = 23.1 m/s; knots given as m/s?",
            "give m/s, or intensity: light | moderate | severe")
ALTITUDE = Range(0.0, 1000 * 0.3048, "m", "the low-altitude Dryden model holds up to 1000 ft", "give metres above ground")
SPEED = Range(-50.0, 50.0, "m/s", "a mean wind beyond 50 m/s (a category 3 hurricane) is a unit slip", "give m/s")
CDA = Range(0.0, 10.0, "m^2", "C_D A of a flying vehicle's part is a few dm^2 at most", "give C_D times area in m^2")
POINT = Range(-10.0, 10.0, "m", "a point 10 m from its link is a unit slip", "give metres in the link frame")
ROTOR_D = Range(0.0, 5.0, "1/s", "Faessler et al.'s identified quadrotor has d = 0.54, 0.39, 0 1/s",
                "give mass-normalised coefficients in 1/s")
FORCE = Range(-1e4, 1e4, "N", "a push beyond 10 kN is a unit slip", "give newtons in world axes")
FRACTION = Range(-10.0, 10.0, "", "a push of more than 10 weights", "give fractions of the weight, e.g. 0.1")
ONSET = Range(0.0, 60.0, "s", "an onset of a minute or more outlasts the flight", "give seconds, e.g. 2")
DENSITY = Range(0.5, 1.5, "kg/m^3", "ISA: 1.225 at sea level, 0.74 at 5000 m", "give kg/m^3, e.g. 1.225")
TIME = Range(-1e6, 1e6, "s", "a time beyond 10^6 s", "give seconds of simulated time")


def default_worlds_path() -> Path:
    """``config/world.yaml`` (source tree or installed share)."""
    return default_actuation_config_path().parent / "world.yaml"


class _Keys(FileKeys):
    def error(self, key, v, r: Range) -> Distribution:
        """An ``<error>`` (module docstring) whose every value lies in ``r``."""
        if isinstance(v, dict):
            self.keys(key, v, _DIST)
            if len(v) != 1:
                self.fail(key, f"expected one of uniform or normal, got {short_repr(v)}",
                          "give {uniform: r}, {uniform: [lo, hi]} or {normal: sigma}")
            (kind, x), = v.items()
            if kind == "normal":
                s = self.number(f"{key}.normal", x, allow_zero=True, fix="give a standard deviation")
                top = min(-r.lo, r.hi)
                if 3.0 * s > top:
                    self.fail(f"{key}.normal", f"3 sigma = {3.0 * s:g}{' ' + r.unit if r.unit else ''} leaves the "
                              f"plausible range [{r.lo:g}, {r.hi:g}] ({r.why})", f"give sigma <= {top / 3.0:.4g}")
                return Distribution.normal(s)
            if isinstance(x, (list, tuple)):
                lo, hi = self.vec(f"{key}.uniform", x, 2, what="two bounds [lo, hi]", within=r)
                if hi < lo:
                    self.fail(f"{key}.uniform", f"the bounds [{lo:g}, {hi:g}] are reversed", "give [lo, hi], lo <= hi")
                return Distribution.uniform(lo, hi)
            half = self.number(f"{key}.uniform", x, allow_zero=True, fix="give a half-width r (uniform in [-r, r])")
            self.within(f"{key}.uniform", -half, r)
            self.within(f"{key}.uniform", half, r)
            return Distribution.uniform(half)
        return Distribution.fixed(self.number(key, v, positive=False, within=r,
                                              fix="give a number, {uniform: ...} or {normal: ...}"))

    def ranged(self, key, v, r: Range, *, allow_zero=True, positive=True, fix=None):
        x = self.number(key, v, allow_zero=allow_zero, positive=positive, fix=fix or f"give {r.unit or 'a number'}")
        return self.within(key, x, r)


def _bodies(c, key, v) -> tuple:
    if not isinstance(v, list) or not v:
        c.fail(key, f"expected a list of body entries, got {short_repr(v)}", "give - links: all ... entries")
    out = []
    for i, e in enumerate(v):
        k = f"{key}[{i}]"
        c.keys(k, e, _BODY)
        links = e.get("links", "all")
        if isinstance(links, str):
            if links not in LINK_GROUPS:
                c.fail(f"{k}.links", f"{short_repr(links)} is not a link group", "give all, base, arm or a list of "
                       "link names")
        elif isinstance(links, list) and links and all(isinstance(n, str) and n for n in links):
            if len(set(links)) != len(links):
                c.fail(f"{k}.links", "names a link twice", "give each link once")
            links = tuple(links)
        else:
            c.fail(f"{k}.links", f"expected all, base, arm or a list of link names, got {short_repr(links)}",
                   "give links: all")
        if not any(x in e for x in ("mass", "com", "inertia")):
            c.fail(k, "perturbs nothing", "give mass, com or inertia")
        com = None
        if "com" in e:
            if isinstance(e["com"], list):
                if len(e["com"]) != 3:
                    c.fail(f"{k}.com", f"expected 3 errors (x, y, z) or one, got {short_repr(e['com'])}",
                           "give [x, y, z] in metres")
                com = tuple(c.error(f"{k}.com[{j}]", x, COM) for j, x in enumerate(e["com"]))
            else:
                d = c.error(f"{k}.com", e["com"], COM)
                com = (d, d, d)
        out.append(BodyErrorSpec(links, c.error(f"{k}.mass", e["mass"], RELATIVE) if "mass" in e else None, com,
                                 c.error(f"{k}.inertia", e["inertia"], RELATIVE) if "inertia" in e else None))
    return tuple(out)


def _model_error(c, key, v) -> ModelErrorSpec:
    c.keys(key, v, _ME)
    bodies = _bodies(c, f"{key}.bodies", v["bodies"]) if "bodies" in v else ()
    rotors, elastic = {}, {}
    if "rotors" in v:
        c.keys(f"{key}.rotors", v["rotors"], ROTOR_KEYS)
        rotors = {k: c.error(f"{key}.rotors.{k}", x, RELATIVE) for k, x in v["rotors"].items()}
    if "elastic_joints" in v:
        c.keys(f"{key}.elastic_joints", v["elastic_joints"], ELASTIC_KEYS)
        elastic = {k: c.error(f"{key}.elastic_joints.{k}", x, RELATIVE) for k, x in v["elastic_joints"].items()}
    spec = ModelErrorSpec(bodies, rotors, elastic)
    if spec.empty:
        c.fail(key, "is empty", "give bodies, rotors or elastic_joints (or remove model_error)")
    return spec


def _wind(c, key, v) -> WindSpec:
    c.keys(key, v, _WIND)
    if ("w20" in v) == ("intensity" in v):
        c.fail(key, "needs exactly one of w20 and intensity", "give w20: <m/s> or intensity: light | moderate | severe")
    if "intensity" in v:
        if v["intensity"] not in INTENSITY_W20_KT:
            c.fail(f"{key}.intensity", f"{short_repr(v['intensity'])} is not a MIL-F-8785C intensity",
                   "give light, moderate or severe")
        w20 = INTENSITY_W20_KT[v["intensity"]] * KNOT
    else:
        w20 = c.ranged(f"{key}.w20", v["w20"], W20)
    alt = c.ranged(f"{key}.altitude", v.get("altitude", 2.0), ALTITUDE, allow_zero=False)
    direction = c.number(f"{key}.direction_deg", v.get("direction_deg", 0.0), positive=False,
                         fix="give degrees from world +x about +z")
    mean = v.get("mean", "log_profile")
    if isinstance(mean, str):
        if mean != "log_profile":
            c.fail(f"{key}.mean", f"{short_repr(mean)} is neither log_profile nor a velocity",
                   "give log_profile or [vx, vy, vz] in m/s")
    else:
        mean = tuple(c.vec(f"{key}.mean", mean, 3, what="log_profile or 3 velocities [m/s]", within=SPEED))
    turb = v.get("turbulence", "dryden")
    if turb not in ("dryden", "none"):
        c.fail(f"{key}.turbulence", f"{short_repr(turb)} is not a turbulence model", "give dryden or none")
    airspeed = v.get("airspeed")
    if airspeed is not None:
        airspeed = c.ranged(f"{key}.airspeed", airspeed, Range(0.0, 100.0, "m/s", "beyond 100 m/s"), allow_zero=False)
    z0 = c.ranged(f"{key}.z0", v.get("z0", Z0_CATEGORY_C), Range(0.0, 6.096, "m", "below the 20 ft reference height"),
                  allow_zero=False)
    onset = c.ranged(f"{key}.onset", v.get("onset", WIND_ONSET_S), ONSET)
    return WindSpec(float(w20), alt, direction, mean, turb == "dryden", airspeed, z0, onset)


def _drag(c, key, v) -> tuple:
    c.mapping(key, v, "give <link>: auto | <C_D A> | [x, y, z] | {cda, point} lines")
    if not v:
        c.fail(key, "is empty", "give base: auto, or remove drag")
    out = []
    for link, spec in v.items():
        k = f"{key}.{link}"
        if not isinstance(link, str) or not link:
            c.fail(k, "is not a link name", "give base or a link of the URDF")
        point = None
        if isinstance(spec, dict):
            c.keys(k, spec, _DRAG)
            c.require(k, spec, ("cda",))
            if "point" in spec and spec["point"] is not None:
                point = tuple(c.vec(f"{k}.point", spec["point"], 3, within=POINT))
            k, spec = f"{k}.cda", spec["cda"]
        if isinstance(spec, str):
            if spec != "auto" or link != "base":
                c.fail(k, f"{short_repr(spec)}: only the base has an automatic C_D A", "give C_D A in m^2 (or [x, y, z])")
            cda = "auto"
        elif isinstance(spec, list):
            cda = tuple(c.vec(k, spec, 3, what="C_D A along the link's x, y, z [m^2]", within=CDA))
            if min(cda) < 0:
                c.fail(k, "has a negative C_D A", "give values >= 0")
        else:
            x = c.ranged(k, spec, CDA, fix="give C_D A in m^2")
            cda = (x, x, x)
        out.append(LinkDrag(link, cda, point))
    return tuple(out)


def _rotor_drag(c, key, v) -> RotorDrag:
    c.keys(key, v, _ROTOR_DRAG)
    c.require(key, v, ("d",), "give d: [dx, dy, dz] in 1/s")
    d = tuple(c.vec(f"{key}.d", v["d"], 3, what="3 coefficients [1/s]", within=ROTOR_D))
    point = v.get("point", "rotors")
    if isinstance(point, str):
        if point != "rotors":
            c.fail(f"{key}.point", f"{short_repr(point)} is neither rotors nor a point", "give rotors or [x, y, z] [m]")
    else:
        point = tuple(c.vec(f"{key}.point", point, 3, within=POINT))
    return RotorDrag(d, point)


def _pushes(c, key, v) -> tuple:
    if not isinstance(v, list) or not v:
        c.fail(key, f"expected a list of pushes, got {short_repr(v)}", "give - link: base ... entries")
    out = []
    for i, p in enumerate(v):
        k = f"{key}[{i}]"
        c.keys(k, p, _PUSH)
        c.require(k, p, ("link",))
        link = c.string(f"{k}.link", p["link"], "give base or a link of the URDF")
        if ("force" in p) == ("weight_fraction" in p):
            c.fail(k, "needs exactly one of force and weight_fraction", "give force: [fx, fy, fz] in N, or "
                   "weight_fraction: [x, y, z]")
        frac = "weight_fraction" in p
        f = tuple(c.vec(f"{k}.{'weight_fraction' if frac else 'force'}", p["weight_fraction" if frac else "force"], 3,
                        within=FRACTION if frac else FORCE))
        point = tuple(c.vec(f"{k}.point", p["point"], 3, within=POINT)) if "point" in p else (0.0, 0.0, 0.0)
        start = c.ranged(f"{k}.start", p.get("start", 0.0), TIME, positive=False)
        dur = p.get("duration")
        dur = math.inf if dur is None else c.ranged(f"{k}.duration", dur, TIME, allow_zero=False)
        ramp = c.ranged(f"{k}.ramp", p.get("ramp", 0.0), TIME)
        if 2.0 * ramp > dur:
            c.fail(f"{k}.ramp", f"{ramp:g} s twice is longer than the duration {dur:g} s", "give ramp <= duration / 2")
        out.append(Push(link, f, point, start, dur, ramp, frac))
    return tuple(out)


def _world(c, name, d, where) -> World:
    key = f"worlds.{name}"
    if d is None:
        d = {}
    c.keys(key, d, WORLD_KEYS)
    desc = d.get("description", "")
    if not isinstance(desc, str):
        c.fail(f"{key}.description", f"expected text, got {short_repr(desc)}", "give a one-line description")
    me = _model_error(c, f"{key}.model_error", d["model_error"]) if "model_error" in d else ModelErrorSpec()
    wind = _wind(c, f"{key}.wind", d["wind"]) if "wind" in d else None
    drag = _drag(c, f"{key}.drag", d["drag"]) if "drag" in d else ()
    rdrag = _rotor_drag(c, f"{key}.rotor_drag", d["rotor_drag"]) if "rotor_drag" in d else None
    pushes = _pushes(c, f"{key}.pushes", d["pushes"]) if "pushes" in d else ()
    rho = c.ranged(f"{key}.air_density", d["air_density"], DENSITY, allow_zero=False) if "air_density" in d \
        else AIR_DENSITY
    if wind is not None and not drag and rdrag is None:
        c.fail(f"{key}.wind", "acts only through drag, and the world has neither drag nor rotor_drag",
               "give drag: {base: auto} and/or rotor_drag: {d: [dx, dy, dz]}")
    return World(str(name), me, wind, drag, rdrag, pushes, rho, desc, where)


def load_worlds(path=None) -> dict:
    """``{name: World}`` of a world file (default ``config/world.yaml``); one-line ValueError for
    anything wrong (module docstring)."""
    p = default_worlds_path() if path is None else Path(os.fspath(path))
    doc = read_yaml(p, "world file")
    c = _Keys(str(p))
    if not isinstance(doc, dict):
        c.fail("", f"expected a mapping with worlds:, got {short_repr(doc)}", "see doc/reference/world_file.md")
    c.keys("", doc, _TOP)
    c.require("", doc, ("worlds",), "give worlds: with at least one named world")
    worlds = c.mapping("worlds", doc["worlds"])
    if not worlds:
        c.fail("worlds", "is empty", "give at least one world (exact: {})")
    return {str(k): _world(c, k, v, str(p)) for k, v in worlds.items()}


def world_preset(name: str, path=None) -> World:
    """The world ``name`` of a world file (default ``config/world.yaml``)."""
    worlds = load_worlds(path)
    if name not in worlds:
        import difflib
        m = difflib.get_close_matches(str(name), list(worlds), n=1)
        where = default_worlds_path() if path is None else path
        raise ValueError(f"{where}: worlds.{name}: no such world; "
                         + (f"did you mean {m[0]!r}?" if m else f"the worlds are {', '.join(worlds)}"))
    return worlds[name]
