"""The vehicle file loader: schema 1 of issue 33 (doc/reference/vehicle_file.md), and the old
``tilthex:``/``multirotor:`` actuation YAMLs (``config/tilthex.yaml``, ``config/hexarotor.yaml``),
which load to exactly the values they always gave.

Schema-only validation: every refusal is a ``ValueError`` of one line
``"<file>: <key path>: <what is wrong>; <what to fix>"`` (a file that cannot be read or is not
YAML: :func:`~geodyn_ros.model.validate.read_yaml`'s ``"<file>: cannot be read (...); ..."`` and
``"<file>: line L, column C, in <key>: ..."``, through :func:`read_vehicle_yaml`). The model-aware
checks (joints in the URDF, allocation rank, thrust-to-weight, hover speeds) are
:meth:`ActuationConfig.check`.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..model.validate import FileKeys, clip, read_yaml, short_repr
from .geometry import px4_to_flu, rotor_frame
from .params import (_ZERO_OK, PER_ROTOR, ROTOR_SECTIONS, ActuationConfig, ElasticJointParams, Px4Section,
                     RotorParams, default_actuation_config_path)
from .plausible import RANGES

__all__ = ["load_vehicle", "load_actuation_config", "read_vehicle_yaml", "TOP_KEYS", "CONSTANT_KEYS", "LIMIT_KEYS",
           "UNIT_TOL", "PX4_SECTION_KEYS"]

#: the keys of ``constants:`` (and of per-rotor overrides) with their defaults (gz-sim's defaults
#: are not physical for every vehicle: motor and moment constants, time constants and the max
#: speed are required; the rest default to "absent": 0, or the gz-sim X4 example's values)
CONSTANT_KEYS = {"motor_constant": None, "moment_constant": None, "time_constant_up": None,
                 "time_constant_down": None, "max_rot_velocity": None, "min_rot_velocity": 0.0,
                 "rotor_drag_coefficient": 0.0, "rolling_moment_coefficient": 0.0,
                 "rotor_velocity_slowdown_sim": 10.0, "rotor_mass": 0.005}
TOP_KEYS = ("schema", "base_link", "rotors", "constants", "joints", "gains", "control_period", "locked_joints", "px4")
#: a thrust axis must have norm 1 within this (then it is normalised): a typed axis of 6 digits
UNIT_TOL = 1e-6
_ROTOR_KEYS = ("name", "position", "axis", "rpy", "turning_direction", "px4") + tuple(CONSTANT_KEYS)
_PX4_KEYS = ("PX", "PY", "PZ", "AX", "AY", "AZ", "KM")
#: the keys of the top-level ``px4:`` section (:class:`~geodyn_ros.vehicle.params.Px4Section`)
PX4_SECTION_KEYS = ("thr_mdl_fac", "mc_airmode", "ct")
_JOINT_KEYS = {"rigid": ("type", "max_torque"), "elastic": ("type", "stiffness", "motor_inertia", "max_torque")}
#: The limits a vehicle file gives: the keys (as the refusals spell them) whose values bound what the
#: vehicle can do, so a planned trajectory must keep them. ``constants.<key>`` may also be given per
#: rotor (``rotors[i].<key>``); ``<rigid>`` / ``<elastic>`` stand for a joint of that type (an old
#: file's ``elastic_joints.max_motor_torque`` is the elastic one). The time constants are the rotor
#: lag: with them the speed a rotor must be commanded to follow a plan must stay in
#: ``[min_rot_velocity, max_rot_velocity]``. The planner's whole-body check
#: (:func:`geodyn_ros.planning.check_feasibility`) checks every one;
#: ``test/control/test_vehicle_limits.py`` tightens each in turn and fails on a limit (or a
#: ``max_*``/``min_*``/``time_constant_*`` key of the schema) the check misses.
LIMIT_KEYS = ("constants.max_rot_velocity", "constants.min_rot_velocity", "constants.time_constant_up",
              "constants.time_constant_down", "joints.<rigid>.max_torque", "joints.<elastic>.max_torque")
_OLD_TOP = ROTOR_SECTIONS + ("elastic_joints", "gains", "control_period", "base_link")
_OLD_ROTOR_REQUIRED = ("turning_direction", "motor_constant", "moment_constant", "time_constant_up",
                       "time_constant_down", "max_rot_velocity", "arm_length", "alpha_deg", "beta_deg")


class _Ctx(FileKeys):
    """The key checks of one vehicle file (:class:`~geodyn_ros.model.validate.FileKeys`)."""

    def vec3(self, key, v, within=None):
        return self.vec(key, v, 3, what="3 numbers [x, y, z]", within=within)

    def constant(self, key, v):
        """A rotor constant or another number of the file, within its :data:`RANGES` entry (the
        last part of ``key``)."""
        name = key.rsplit(".", 1)[-1].split("[", 1)[0]
        name = {"max_motor_torque": "max_torque"}.get(name, name)
        return self.number(key, v, allow_zero=name in _ZERO_OK, within=RANGES.get(name))

    def per_rotor(self, key, v, n):
        """A rotor constant of an old actuation file: one number, or a list of ``n`` (one per rotor)."""
        if isinstance(v, (list, tuple)):
            if len(v) != n:
                self.fail(key, f"expected a number or {n} of them (one per rotor), got {_short(v)}",
                          "give one number, or one per turning_direction entry")
            return [self.constant(f"{key}[{i}]", x) for i, x in enumerate(v)]
        return self.constant(key, v)

    def direction(self, key, v):
        if v not in ("ccw", "cw"):
            self.fail(key, f"{_short(v)} is not a turning direction; give ccw or cw")
        return v


_short = short_repr


def _resolve(path):
    if path in ("hexarotor", "tilthex"):
        return default_actuation_config_path().parent / f"{path}.yaml"
    if path is None:
        return default_actuation_config_path()
    p = Path(os.fspath(path))
    if not p.is_file() and isinstance(path, str) and os.sep not in path and not p.suffix:
        q = default_actuation_config_path().parent / "vehicles" / f"{path}.yaml"   # a shipped vehicle by name
        if q.is_file():
            return q
    return p


def read_vehicle_yaml(path):
    """The parsed YAML of the vehicle file ``path`` (:func:`~geodyn_ros.model.validate.read_yaml`):
    the refusal of a file that cannot be read or is not YAML, the same for every entry point."""
    from .shipped import SHIPPED_URDFS
    return read_yaml(path, "vehicle file", fix="give the path of an existing vehicle file or a shipped name ("
                     + ", ".join(SHIPPED_URDFS) + ")")


def load_vehicle(path=None) -> ActuationConfig:
    """Read a vehicle file (schema 1) or an old actuation YAML into an :class:`ActuationConfig`.

    ``path``: a file; ``None``: ``config/tilthex.yaml``; ``"tilthex"``/``"hexarotor"``: the shipped
    ``config/<name>.yaml``; another bare name: ``config/vehicles/<name>.yaml``. A file with a
    ``tilthex:`` or ``multirotor:`` section is read as before schema 1 (rotor frames from the URDF's
    ``rotor_<i>`` links, or eq. (28)); else ``rotors:`` is required. ValueError: one line naming the
    file and the key (doc/reference/vehicle_file.md lists every key and refusal)."""
    p = _resolve(path)
    doc = read_vehicle_yaml(p)
    c = _Ctx(str(p))
    if not isinstance(doc, dict):
        c.fail("", f"expected a mapping of keys (rotors:, constants:, ...), got {_short(doc)}",
               "write the vehicle file as key: value lines (doc/reference/vehicle_file.md)")
    if any(k in doc for k in ROTOR_SECTIONS):
        return _load_old(doc, p)
    if "rotors" not in doc:
        c.keys("", doc, TOP_KEYS + _OLD_TOP)      # a misspelt rotors: (or tilthex:) is named with a did-you-mean
        c.fail("rotors", "missing", "add rotors: (a list, {from_urdf: ...} or {tilthex: ...}; "
               "doc/reference/vehicle_file.md), or the multirotor: section of an old actuation file")
    return _load_new(doc, p)


#: the former name, kept: the same function
load_actuation_config = load_vehicle


def _common(doc, c):
    """base_link, gains, control_period (both schemas)."""
    base = c.string("base_link", doc["base_link"]) if doc.get("base_link") is not None else None
    gains = doc.get("gains")
    if gains is not None and not isinstance(gains, dict):
        c.fail("gains", f"expected a mapping, got {_short(gains)}; see doc/reference/vehicle_file.md")
    period = c.number("control_period", doc.get("control_period", 0.001), within=RANGES["control_period"])
    return base, gains, period


def _load_old(doc, p) -> ActuationConfig:
    c = _Ctx(str(p))
    c.keys("", doc, _OLD_TOP)
    base, gains, period = _common(doc, c)
    section = next(k for k in ROTOR_SECTIONS if k in doc)
    t, e = doc[section], doc.get("elastic_joints")
    c.mapping(section, t)
    c.require(section, t, _OLD_ROTOR_REQUIRED, "give it (config/hexarotor.yaml has every key)")
    c.require("", doc, ("elastic_joints",), "give elastic_joints: {joints, stiffness, motor_inertia}")
    c.mapping("elastic_joints", e)
    c.require("elastic_joints", e, ("joints", "stiffness", "motor_inertia"))
    key = section          # the key the constructors' refusals are about (their argument's name below)
    td = t["turning_direction"]
    if not isinstance(td, (list, tuple)) or not td:
        c.fail(f"{section}.turning_direction", f"expected a list of ccw/cw, got {_short(td)}", "give one per rotor")
    n = len(td)
    for k in PER_ROTOR:                  # strict numbers within their ranges (the constructors take any numbers)
        if k in t:
            c.per_rotor(f"{section}.{k}", t[k], n)
    for k in ("stiffness", "motor_inertia", "max_motor_torque"):
        if k in e:
            c.per_rotor(f"elastic_joints.{k}", e[k], len(e["joints"]) if isinstance(e["joints"], list) else 1)
    try:
        rot = RotorParams(turning_direction=tuple(t["turning_direction"]),
                          motor_constant=t["motor_constant"], moment_constant=t["moment_constant"],
                          time_constant_up=t["time_constant_up"], time_constant_down=t["time_constant_down"],
                          max_rot_velocity=t["max_rot_velocity"],
                          rotor_drag_coefficient=t.get("rotor_drag_coefficient", 0.0),
                          rolling_moment_coefficient=t.get("rolling_moment_coefficient", 0.0),
                          min_rot_velocity=t.get("min_rot_velocity", 0.0))
        key = "elastic_joints"
        el = ElasticJointParams(joints=tuple(e["joints"]), stiffness=e["stiffness"],
                                motor_inertia=e["motor_inertia"],
                                max_motor_torque=e.get("max_motor_torque", 10.0))
        key = section
        for k in ("alpha_deg", "beta_deg"):
            v = t[k]
            if not isinstance(v, (list, tuple)) or len(v) != n:
                c.fail(f"{section}.{k}", f"expected {n} angles [deg] (one per rotor), got {_short(v)}",
                       "give one per turning_direction entry")
        alpha, beta = (np.radians([c.number(f"{section}.{k}[{i}]", x, positive=False, within=RANGES["angle_deg"])
                                   for i, x in enumerate(t[k])]) for k in ("alpha_deg", "beta_deg"))
        ja = {j: {"type": "elastic", "stiffness": float(el.stiffness[k]), "motor_inertia": float(el.motor_inertia[k]),
                  "max_torque": float(np.broadcast_to(el.max_motor_torque, (len(el.joints),))[k])}
              for k, j in enumerate(el.joints)}
        extra = {k: c.constant(f"{section}.{k}", t.get(k, d)) for k, d in
                 (("arm_length", None), ("rotor_velocity_slowdown_sim", 10.0), ("rotor_mass", 0.005))}
        return ActuationConfig(rotors=rot, elastic=el, rotor_prefix=str(t.get("rotor_prefix", "rotor_")),
                               alpha=alpha, beta=beta, **extra,
                               rotor_geometry="tilthex", joint_actuation=ja, gains_spec=gains, control_period=period,
                               base_link=base, source_path=Path(p), schema=0)
    except (TypeError, ValueError) as exc:
        if str(exc).startswith(f"{c.where}: "):
            raise
        arg, _, problem = str(exc).partition(": ")      # an argument refusal "<field>: <problem>"
        fix = "fix the value (config/hexarotor.yaml shows each key)"
        if problem and " " not in arg:
            c.fail(f"{key}.{arg}", problem, fix)
        c.fail(key, clip(str(exc)), fix)


def _constants(c, doc):
    const = doc.get("constants", {})
    c.keys("constants", const, tuple(CONSTANT_KEYS))
    out = {}
    for k, default in CONSTANT_KEYS.items():
        if k in const:
            out[k] = c.constant(f"constants.{k}", const[k])
        elif default is None:
            out[k] = None     # must then be given per rotor
        else:
            out[k] = default
    return out


def _rotor_list(c, rotors, const):
    """(turning directions, poses (n, 4, 4), names, per-rotor constants {key: list})."""
    if not rotors:
        c.fail("rotors", "empty; list at least one rotor")
    dirs, poses, names = [], [], []
    per = {k: [] for k in CONSTANT_KEYS}
    for i, r in enumerate(rotors):
        key = f"rotors[{i}]"
        c.keys(key, r, _ROTOR_KEYS)
        names.append(c.string(f"{key}.name", r["name"]) if "name" in r else f"rotor_{i + 1}")
        if "px4" in r:
            if "position" in r or "axis" in r or "rpy" in r:
                c.fail(key, "px4 together with position/axis/rpy; give either px4 or position and axis (or rpy)")
            c.keys(f"{key}.px4", r["px4"], _PX4_KEYS)
            if "PX" not in r["px4"] or "PY" not in r["px4"]:
                c.fail(f"{key}.px4", "misses PX or PY; give CA_ROTORn_PX and CA_ROTORn_PY [m]")
            v = {k: c.number(f"{key}.px4.{k}", x, positive=False,
                             within=RANGES["position" if k[0] == "P" else "direction" if k[0] == "A" else "KM"])
                 for k, x in r["px4"].items()}
            km = v.pop("KM", 0.05)                         # PX4's default CA_ROTORn_KM (module.yaml)
            pos, ax = px4_to_flu(**v)
            if km == 0:
                c.fail(f"{key}.px4.KM", "0 gives no turning direction; give KM > 0 (ccw) or < 0 (cw)")
            td = "ccw" if km > 0 else "cw"
            if "turning_direction" in r and c.direction(f"{key}.turning_direction", r["turning_direction"]) != td:
                c.fail(f"{key}.turning_direction", f"{r['turning_direction']} contradicts px4.KM = {km} ({td}); "
                       "drop one of them")
            if "moment_constant" not in r:
                r = dict(r, moment_constant=abs(km))
            axis_key = f"{key}.px4.A*"
        else:
            if "position" not in r:
                c.fail(f"{key}.position", "missing; give the rotor position [x, y, z] in m in the base link")
            pos = c.vec3(f"{key}.position", r["position"], within=RANGES["position"])
            if ("axis" in r) == ("rpy" in r):
                c.fail(key, "give exactly one of axis (the thrust direction) or rpy (the rotor orientation)")
            ax = c.vec3(f"{key}.axis", r["axis"]) if "axis" in r else None
            axis_key = f"{key}.axis"
            if "turning_direction" not in r:
                c.fail(f"{key}.turning_direction", "missing; give ccw or cw")
            td = c.direction(f"{key}.turning_direction", r["turning_direction"])
        if ax is not None:
            nrm = float(np.linalg.norm(ax))
            if abs(nrm - 1.0) > UNIT_TOL:
                c.fail(axis_key, f"({', '.join(f'{x:g}' for x in ax)}) is not a unit vector (norm {nrm:.6g}); give "
                       "a unit vector")
            T = rotor_frame(pos, axis=ax)
        else:
            T = rotor_frame(pos, rpy=c.vec3(f"{key}.rpy", r["rpy"], within=RANGES["rpy"]))
        dirs.append(td)
        poses.append(T)
        for k in CONSTANT_KEYS:
            if k in r:
                per[k].append(c.constant(f"{key}.{k}", r[k]))
            elif const[k] is None:
                c.fail(f"constants.{k}", f"missing (and not given for rotor {i}); give it in constants: or per rotor")
            else:
                per[k].append(const[k])
    if len(set(names)) != len(names):
        c.fail("rotors", f"the rotor names {names} are not distinct; give each rotor its own name")
    return dirs, np.array(poses), tuple(names), per


def _from_urdf(c, rotors, const):
    c.keys("rotors", rotors, ("from_urdf", "turning_direction"))
    rx = c.string("rotors.from_urdf", rotors["from_urdf"])
    import re
    try:
        re.compile(rx)
    except re.error as exc:
        c.fail("rotors.from_urdf", f"{rx!r} is not a regular expression ({exc}); fix it")
    td = rotors.get("turning_direction")
    if not isinstance(td, (list, tuple)) or not td:
        c.fail("rotors.turning_direction", f"expected a list of ccw/cw, one per matched link, got {_short(td)}; "
               "give it in the links' natural name order")
    dirs = [c.direction(f"rotors.turning_direction[{i}]", d) for i, d in enumerate(td)]
    for k, v in const.items():
        if v is None:
            c.fail(f"constants.{k}", "missing; give it in constants:")
    return rx, dirs, {k: [v] * len(dirs) for k, v in const.items()}


def _tilthex(c, rotors, const):
    t = rotors["tilthex"]
    c.keys("rotors", rotors, ("tilthex",))
    c.keys("rotors.tilthex", t, ("arm_length", "alpha_deg", "beta_deg", "turning_direction", "rotor_prefix"))
    for k in ("arm_length", "alpha_deg", "beta_deg", "turning_direction"):
        if k not in t:
            c.fail(f"rotors.tilthex.{k}", "missing; see doc/reference/vehicle_file.md")
    td = t["turning_direction"]
    if not isinstance(td, (list, tuple)) or not td:
        c.fail("rotors.tilthex.turning_direction", f"expected a list of ccw/cw, got {_short(td)}; give one per rotor")
    dirs = [c.direction(f"rotors.tilthex.turning_direction[{i}]", d) for i, d in enumerate(td)]
    ang = {}
    for k in ("alpha_deg", "beta_deg"):
        v = t[k]
        if not isinstance(v, (list, tuple)) or len(v) != len(dirs):
            c.fail(f"rotors.tilthex.{k}", f"expected {len(dirs)} angles [deg] (one per rotor), got {_short(v)}")
        ang[k] = np.radians([c.number(f"rotors.tilthex.{k}[{i}]", x, positive=False, within=RANGES["angle_deg"])
                             for i, x in enumerate(v)])
    arm = c.constant("rotors.tilthex.arm_length", t["arm_length"])
    prefix = c.string("rotors.tilthex.rotor_prefix", t.get("rotor_prefix", "rotor_"))
    for k, v in const.items():
        if v is None:
            c.fail(f"constants.{k}", "missing; give it in constants:")
    return dirs, arm, ang["alpha_deg"], ang["beta_deg"], prefix, {k: [v] * len(dirs) for k, v in const.items()}


def _px4_section(c, sec, n) -> Px4Section:
    """The top-level ``px4:`` section of a vehicle with ``n`` rotors (PX4 facts: PX4-Autopilot
    b67c65bf, :class:`~geodyn_ros.vehicle.params.Px4Section`)."""
    c.keys("px4", sec, PX4_SECTION_KEYS)
    if "thr_mdl_fac" not in sec:
        c.fail("px4.thr_mdl_fac", "missing", "give PX4's THR_MDL_FAC of these motors, 0 to 1 (0: thrust linear in "
               "the signal, PX4's default; 1: quadratic)")
    fac = c.number("px4.thr_mdl_fac", sec["thr_mdl_fac"], allow_zero=True)
    if fac > 1:
        c.fail("px4.thr_mdl_fac", f"{fac!r} is above 1", "give PX4's THR_MDL_FAC, 0 to 1 (motor_params.c)")
    air = sec.get("mc_airmode", 0)
    if isinstance(air, bool) or air not in (0, 1, 2):
        c.fail("px4.mc_airmode", f"{_short(air)} is not 0, 1 or 2", "give PX4's MC_AIRMODE (0 disabled, PX4's default)")
    ct = sec.get("ct")
    if ct is not None:
        if isinstance(ct, (list, tuple)):
            if len(ct) != n:
                c.fail("px4.ct", f"{len(ct)} values for {n} rotors", "give one CA_ROTORn_CT [N] per rotor, or one for all")
            ct = tuple(c.number(f"px4.ct[{i}]", x, within=RANGES["CT"]) for i, x in enumerate(ct))
        else:
            ct = (c.number("px4.ct", ct, within=RANGES["CT"]),) * n
    return Px4Section(thr_mdl_fac=fac, mc_airmode=int(air), ct=ct)


def _joints(c, joints):
    c.keys("joints", joints, list(joints) if isinstance(joints, dict) else ())
    ja = {}
    for name, spec in joints.items():
        key = f"joints.{name}"
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str) or spec["type"] not in _JOINT_KEYS:
            c.fail(f"{key}.type", f"expected rigid or elastic, got {_short(spec.get('type') if isinstance(spec, dict) else spec)}"
                   "; give type: rigid or type: elastic")
        c.keys(key, spec, _JOINT_KEYS[spec["type"]])
        d = {"type": spec["type"], "max_torque": (c.constant(f"{key}.max_torque", spec["max_torque"])
                                                  if spec.get("max_torque") is not None else None)}
        if spec["type"] == "elastic":
            for k in ("stiffness", "motor_inertia"):
                if k not in spec:
                    c.fail(f"{key}.{k}", "missing; an elastic joint needs stiffness [N m/rad] and motor_inertia "
                           "[kg m^2]")
                d[k] = c.constant(f"{key}.{k}", spec[k])
        ja[str(name)] = d
    el = [j for j, d in ja.items() if d["type"] == "elastic"]
    mt = [ja[j]["max_torque"] if ja[j]["max_torque"] is not None else np.inf for j in el]
    elastic = ElasticJointParams(joints=tuple(el), stiffness=[ja[j]["stiffness"] for j in el],
                                 motor_inertia=[ja[j]["motor_inertia"] for j in el],
                                 max_motor_torque=mt if el else 10.0)
    return ja, elastic


def _load_new(doc, p) -> ActuationConfig:
    c = _Ctx(str(p))
    c.keys("", doc, TOP_KEYS)
    if "schema" in doc and doc["schema"] != 1:
        c.fail("schema", f"{_short(doc['schema'])} is not a known schema; give 1 (or leave it out)")
    base, gains, period = _common(doc, c)
    const = _constants(c, doc)
    rotors = doc["rotors"]
    kw = {}
    if isinstance(rotors, list):
        dirs, poses, names, per = _rotor_list(c, rotors, const)
        kw.update(rotor_geometry="list", rotor_poses=poses, rotor_names=names)
    elif isinstance(rotors, dict) and "from_urdf" in rotors:
        rx, dirs, per = _from_urdf(c, rotors, const)
        kw.update(rotor_geometry="from_urdf", rotor_regex=rx)
    elif isinstance(rotors, dict) and "tilthex" in rotors:
        dirs, arm, alpha, beta, prefix, per = _tilthex(c, rotors, const)
        kw.update(rotor_geometry="tilthex", arm_length=arm, alpha=alpha, beta=beta, rotor_prefix=prefix)
    else:
        c.fail("rotors", f"expected a list of rotors, {{from_urdf: regex, ...}} or {{tilthex: ...}}, got "
               f"{_short(rotors)}; see doc/reference/vehicle_file.md")
    n = len(dirs)
    for k in ("rotor_velocity_slowdown_sim", "rotor_mass"):
        if len(set(per[k])) > 1:
            c.fail(f"rotors[{[v != per[k][0] for v in per[k]].index(True)}].{k}", "differs between rotors, which "
                   "the Gazebo xacro does not support; give it once in constants:")
    try:        # the combination (min below max) is checked by RotorParams
        rot = RotorParams(turning_direction=tuple(dirs), **{k: np.array(per[k]) for k in PER_ROTOR})
    except ValueError as exc:
        arg, _, problem = str(exc).partition(": ")
        c.fail(f"constants.{arg}" if arg in PER_ROTOR else "constants", problem or str(exc), "fix the constants")
    ja, elastic = _joints(c, doc.get("joints") or {})
    lj = doc.get("locked_joints") or []
    if not isinstance(lj, list):
        c.fail("locked_joints", f"expected a list of joint names, got {_short(lj)}")
    lj = tuple(c.string(f"locked_joints[{i}]", j) for i, j in enumerate(lj))
    kw.setdefault("alpha", np.zeros(n))
    kw.setdefault("beta", np.zeros(n))
    if doc.get("px4") is not None:
        kw["px4"] = _px4_section(c, doc["px4"], n)
    return ActuationConfig(rotors=rot, elastic=elastic, rotor_velocity_slowdown_sim=per["rotor_velocity_slowdown_sim"][0],
                           rotor_mass=per["rotor_mass"][0], joint_actuation=ja, gains_spec=gains,
                           control_period=period, base_link=base, source_path=Path(p), extra_locked_joints=lj, **kw)
