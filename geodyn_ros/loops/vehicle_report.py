"""``geodyn_vehicle``: what a vehicle (a URDF and a vehicle file) can do, before it flies.

Usage::

    geodyn_vehicle                                   # the shipped hexarotor manipulator
    geodyn_vehicle --vehicle tilthex                 # the shipped TiltHex manipulator
    geodyn_vehicle --urdf my.urdf --vehicle my.yaml [--json] [--period 0.001]

``--vehicle`` is a vehicle file (doc/reference/vehicle_file.md) or the name of a shipped vehicle
(``hexarotor``, the default, or ``tilthex``); ``--urdf`` defaults to the shipped vehicle's xacro and
is required with a file of your own. Also ``python -m geodyn_ros.loops.vehicle_report``.

The report (:func:`vehicle_report`; every figure at the home configuration ``q = 0``, level base,
``g = 9.81 m/s^2``):

* mass [kg], CoM [m] in the base link, inertia about the CoM [kg m^2] (base axes);
* the allocation's rank (4: collinear, the flatness controller; 6: fully actuated, the actuated
  controller) and its scaled condition number (:meth:`Allocation.condition_number`);
* hover rotor speeds as % of each rotor's maximum: ``u = A^+ W_hover`` with ``W_hover = (c x f, f)``,
  ``f = (0, 0, m g)`` (the rotors also hold the moment of the weight about the base origin);
* thrust-to-weight ``sum_i c_f,i omega_max,i^2 z_i . e_z / (m g)``;
* collinear: the largest tilt at which full collective thrust still holds altitude,
  ``acos(m g / T_max)``; fully actuated: the largest lateral acceleration at level attitude, the
  smallest over +-x, +-y of the linear program ``max f_x`` s.t. ``A u = (c x f, f)``,
  ``f = (f_x, 0, m g)``, ``omega_min^2 <= u <= omega_max^2`` (``scipy.optimize.linprog``);
* yaw authority: the largest yaw moment at hover (the same program with the hover force and the
  roll/pitch moments held, smaller of the two signs) and the yaw acceleration it gives,
  ``tau_z / I_c,zz``;
* the gains in use (:func:`geodyn_ros.control.gain_design.design_gains`: the file's ``gains:``,
  else designed from the model), with each loop's bandwidth, damping and discrete spectral radius
  at the control period, and any refusal;
* what the vehicle layer changed in the URDF, one line each: a link inertia MuJoCo refuses,
  corrected in the simulator and the model alike (``inertia_corrections``,
  :meth:`ActuationConfig.flight_urdf`), and the joints pinned by their URDF limits, locked there
  (``pinned_joints``, :meth:`ActuationConfig.pinned_joints`).

The text fits 100 columns; ``--json`` prints the same as one JSON object. Exit 0, or 2 with one
line ``geodyn_vehicle: error: ...`` for a vehicle the loader refuses; 2 after the report when
a gain is refused (its ``REFUSED:`` lines name the gain and the bound).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

__all__ = ["vehicle_report", "format_report", "load_vehicle_model", "main", "GRAVITY"]

#: [m/s^2]
GRAVITY = 9.81


def load_vehicle_model(urdf=None, vehicle=None):
    """``(config, model, allocation, urdf_source)`` for a vehicle: ``vehicle`` a file or a shipped
    name (default ``"hexarotor"``; :data:`geodyn_ros.vehicle.shipped.SHIPPED_URDFS`); ``urdf``
    defaults to the shipped vehicle's URDF."""
    from geodyn_ros.control.rotors import Allocation
    from geodyn_ros.vehicle import load_vehicle
    from geodyn_ros.vehicle.shipped import SHIPPED_URDFS, shipped_vehicle_files
    vehicle = "hexarotor" if vehicle is None else vehicle
    if str(vehicle) in SHIPPED_URDFS and not Path(vehicle).is_file():
        s_urdf, vehicle = shipped_vehicle_files(str(vehicle))
        urdf = s_urdf if urdf is None else urdf
    cfg = load_vehicle(vehicle)       # first: a file that cannot be read is refused as by every entry point
    if urdf is None:
        raise ValueError(f"urdf: required with the vehicle file {vehicle} (a URDF is given by default only to the "
                         f"shipped vehicles {', '.join(SHIPPED_URDFS)})")
    model = cfg.load_model(urdf)
    cfg.check(model)                  # before the allocation: its refusals name the file and the key
    _, frames = cfg.rotor_frames(model)
    al = Allocation.from_frames(frames, cfg.rotors)
    return cfg, model, al, urdf


def _finite(x):
    """``float(x)``, or None (JSON null; "n/a" in the text) when the program had no solution."""
    return float(x) if math.isfinite(x) else None


def _g(x, spec=".3g"):
    return "n/a (no hover within the speed limits)" if x is None else format(x, spec)


def _lp(c, A_eq, b_eq, lo, hi):
    from scipy.optimize import linprog
    res = linprog(c, A_eq=A_eq, b_eq=b_eq, bounds=list(zip(lo, hi)), method="highs")
    return res.x if res.status == 0 else None


def vehicle_report(urdf=None, vehicle=None, *, period=None) -> dict:
    """The report of the module docstring as a JSON-ready dict (SI units, angles in degrees)."""
    from geodyn_ros.control.gain_design import design_gains, model_inertias
    cfg, model, al, src = load_vehicle_model(urdf, vehicle)
    dt = float(cfg.control_period if period is None else period)
    inr = model_inertias(model)
    m, c, Ic = inr["mass"], inr["com"], inr["inertia_com"]
    W = m * GRAVITY
    rot = cfg.rotors
    cf = rot.per_rotor("motor_constant")
    wmax = rot.per_rotor("max_rot_velocity")
    wmin = rot.per_rotor("min_rot_velocity")
    _, frames = cfg.rotor_frames(model)
    A = al.A
    f_hover = np.array([0.0, 0.0, W])
    n_hover = np.cross(c, f_hover)
    if al.collinear:
        u_hover = al.allocate_thrust_torque(W, n_hover)
    else:
        u_hover = al.allocate(np.concatenate([n_hover, f_hover]))
    om_hover = np.sqrt(np.clip(u_hover, 0.0, None))
    t_max = float(np.sum(cf * wmax ** 2 * frames[:, 2, 2]))
    lo, hi = wmin ** 2, wmax ** 2
    out = {"urdf": str(src), "vehicle": str(cfg.source_path or vehicle), "base_link": model.base_link,
           "n_joints": model.n_joints, "joint_names": list(model.joint_names), "n_rotors": int(rot.n_rotors),
           "mass_kg": m, "com_m": c.tolist(), "inertia_com_kg_m2": Ic.tolist(),
           "rank": 4 if al.collinear else 6, "controller": "flatness" if al.collinear else "actuated",
           "condition_number": al.condition_number(),
           "hover_speed_rad_s": om_hover.tolist(), "hover_speed_pct": (100 * om_hover / wmax).tolist(),
           "hover_feasible": bool(np.all(u_hover >= lo) and np.all(u_hover <= hi)),
           "thrust_to_weight": t_max / W, "control_period_s": dt}
    if al.collinear:
        out["max_tilt_deg"] = math.degrees(math.acos(min(1.0, W / t_max)))
        Aeq_yaw = A[[0, 1, 5]]
        b_yaw = np.array([n_hover[0], n_hover[1], W])
    else:
        acc = []
        for k, s in ((3, 1.0), (3, -1.0), (4, 1.0), (4, -1.0)):
            e = np.zeros(3)
            e[k - 3] = s
            other = 7 - k            # the other lateral row (4 or 3)
            # A_n u - (c x e)(s A_k u) = c x (0, 0, W);  A_other u = 0;  A_fz u = W
            Aeq = np.vstack([A[:3] - np.outer(np.cross(c, e), s * A[k]), A[other], A[5]])
            beq = np.concatenate([np.cross(c, f_hover), [0.0, W]])
            x = _lp(-s * A[k], Aeq, beq, lo, hi)
            acc.append(float(s * A[k] @ x) / m if x is not None else math.nan)   # nan: no hover in the limits
        out["max_lateral_acceleration_m_s2"] = _finite(np.min(acc))
        out["lateral_acceleration_by_direction_m_s2"] = dict(zip(("+x", "-x", "+y", "-y"), map(_finite, acc)))
        Aeq_yaw = A[[0, 1, 3, 4, 5]]
        b_yaw = np.array([n_hover[0], n_hover[1], 0.0, 0.0, W])
    yaw = []
    for s in (1.0, -1.0):
        x = _lp(-s * A[2], Aeq_yaw, b_yaw, lo, hi)
        yaw.append(float(s * A[2] @ x) if x is not None else math.nan)       # nan: no hover in the limits
    out["inertia_corrections"] = [c.as_dict() for c in cfg.flight_urdf(src, warn=False)[1]]
    out["pinned_joints"] = cfg.pinned_joints(src)
    out["yaw_moment_nm"] = _finite(np.min(yaw))
    out["yaw_acceleration_rad_s2"] = _finite(np.min(yaw) / float(Ic[2, 2]))
    d = design_gains(model, al, cfg, period=dt)
    out["gains_source"] = ("the file's gains: section" if getattr(cfg, "gains_spec", None)
                          else "designed from the model, default bandwidths")
    out["gains"] = d.as_dict()
    return out


def _fmt_vec(v, f="{:.4g}"):
    """``(a, b, c)``; entries below 1e-12 (rounding of a symmetric vehicle) print as 0."""
    return "(" + ", ".join(f.format(0.0 if abs(x) < 1e-12 else x) for x in v) + ")"


#: the gains table: (header, right aligned, cell of a loop entry); columns are two spaces apart
_GAIN_COLUMNS = (("loop", False, lambda lp: lp["loop"]),
                 ("axis", False, lambda lp: lp["axis"] + (" (B)" if lp.get("elastic") else "")),
                 ("inertia", True, lambda lp: f"{lp['inertia']:.3g}"),
                 ("kp", True, lambda lp: f"{lp['kp']:.4g}"),
                 ("kd", True, lambda lp: f"{lp['kd']:.4g}"),
                 ("w rad/s", True, lambda lp: f"{lp['bandwidth']:.3g}"),
                 ("damping", True, lambda lp: "-" if lp["damping"] is None else f"{lp['damping']:.3g}"),
                 ("radius", True, lambda lp: f"{lp['spectral_radius']:.5f}"),
                 ("ok", False, lambda lp: "yes" if lp["ok"] else "NO"))
_SEP, _INDENT, _WIDTH = "  ", "  ", 99


def _gains_table(loops) -> list:
    """The lines of the gains table: every column as wide as its widest cell (header included) and
    two spaces from the next, so no two values run together, whatever their size; the axis (a
    joint name may be long) is cut, from the left with a ``~``, to keep the lines within 99
    columns (at least 12 characters stay)."""
    rows = [[h for h, _, _ in _GAIN_COLUMNS]] + [[f(lp) for _, _, f in _GAIN_COLUMNS] for lp in loops]
    widths = [max(len(r[k]) for r in rows) for k in range(len(_GAIN_COLUMNS))]
    room = _WIDTH - len(_INDENT) - len(_SEP) * (len(widths) - 1) - sum(widths) + widths[1]
    if widths[1] > room:
        widths[1] = max(room, 12)
        for r in rows[1:]:
            r[1] = r[1] if len(r[1]) <= widths[1] else "~" + r[1][-(widths[1] - 1):]
    return [_INDENT + _SEP.join(c.rjust(w) if right else c.ljust(w) for c, w, (_, right, _) in
                                zip(r, widths, _GAIN_COLUMNS)).rstrip() for r in rows]


def format_report(r: dict) -> str:
    """The text form of :func:`vehicle_report` (lines <= 99 columns)."""
    L = [f"vehicle {r['vehicle']}", f"  urdf {r['urdf']}",
         f"  base link {r['base_link']}, {r['n_joints']} joints, {r['n_rotors']} rotors, "
         f"control period {r['control_period_s'] * 1e3:g} ms",
         f"mass {r['mass_kg']:.4g} kg   CoM {_fmt_vec(r['com_m'])} m (base link, home)"]
    Ic = np.array(r["inertia_com_kg_m2"])
    L.append(f"inertia about the CoM [kg m^2]: diag {_fmt_vec(np.diag(Ic))}, "
             f"off-diag (xy, xz, yz) {_fmt_vec((Ic[0, 1], Ic[0, 2], Ic[1, 2]), '{:.2g}')}")
    from geodyn_ros.model.inertia import InertiaCorrection
    L += [InertiaCorrection.from_dict(c).line() for c in r.get("inertia_corrections", ())]
    if r.get("pinned_joints"):
        L.append("pinned by their URDF limits (lower = upper), locked there, not arm joints: "
                 + ", ".join(f"{j} at {x:g}" for j, x in r["pinned_joints"].items()))
    L.append(f"allocation rank {r['rank']} -> {r['controller']} controller; scaled condition number "
             f"{r['condition_number']:.3g}")
    pct = r["hover_speed_pct"]
    L.append(f"hover speeds [% of max]: {' '.join(f'{p:.1f}' for p in pct)}"
             + ("" if r["hover_feasible"] else "  (OUTSIDE the speed limits)"))
    L.append(f"thrust-to-weight {r['thrust_to_weight']:.3f}")
    if "max_tilt_deg" in r:
        L.append(f"max tilt holding altitude {r['max_tilt_deg']:.1f} deg")
    else:
        L.append(f"max lateral acceleration at level attitude {_g(r['max_lateral_acceleration_m_s2'])} m/s^2 "
                 "(smallest of +-x, +-y)")
    L.append(f"yaw authority at hover {_g(r['yaw_moment_nm'])} N m -> {_g(r['yaw_acceleration_rad_s2'])} rad/s^2")
    g = r["gains"]
    L.append(f"gains ({r['gains_source']}), discrete loop at {r['control_period_s'] * 1e3:g} ms:")
    L += _gains_table(g["loops"])
    L.append("  (radius: spectral radius of the PD under zero-order hold with one step of delay; ok: "
             "below 1")
    L.append("   with the gains x1.5; inertia in kg for the CoM, kg m^2 otherwise; (B): elastic joint, the")
    L.append("   motor inertia)")
    for n in g["notes"]:
        L.append(f"  note: {n}")
    for x in g["refusals"]:
        L.append(f"  REFUSED: {x}")
    import textwrap
    return "\n".join(w for line in L for w in (textwrap.wrap(line, 99, subsequent_indent="    ") or [""]))


def _px4_json(setup: dict) -> dict:
    """The PX4 section of the report as JSON (``--px4``)."""
    def j(v):
        return np.asarray(v, float).tolist()
    g = setup["gains"]
    return {"path": setup["path"], "delay_s": setup["delay_s"], "rotor_lag_s": setup["lag_s"],
            "gains_source": setup["gains_source"], "rotation_factor": setup["factor"],
            "gains": {k: j(getattr(g, k)) for k in ("kp_position", "kd_position", "kp_rotation", "kd_rotation",
                                                     "kp_joint", "kd_joint")},
            "delay_loops": [{k: (v if k != "bound" else v) for k, v in e.items()} for e in setup["delay_loops"]],
            "discrete_loops": setup["design"].as_dict()["loops"], "refusals": list(setup["refusals"]),
            "notes": list(setup["notes"]), "gains_designed_for": setup["stamp"], "reference": setup["reference"],
            "level": setup["level"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="geodyn_vehicle", description="What a vehicle (URDF + vehicle file) can do: "
                                "mass, allocation, hover, thrust-to-weight, tilt, yaw authority, gains and "
                                "their discrete stability; with --px4 the gains for PX4's offboard path, checked "
                                "for its delay, and (--out) the configuration that flies it.")
    p.add_argument("--urdf", help="URDF or xacro (default: the shipped vehicle's)")
    from geodyn_ros.vehicle.shipped import SHIPPED_URDFS
    from .px4_setup import DEFAULT_LATENCY, DEFAULT_LINK_DELAY, DEFAULT_PERIOD
    p.add_argument("--vehicle", default="hexarotor",
                   help="vehicle file, or a shipped vehicle: " + ", ".join(SHIPPED_URDFS) + " (default hexarotor)")
    p.add_argument("--period", type=float, default=None, help="control period [s] (default: the file's, 1 ms)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    g = p.add_argument_group("PX4 (doc/howto/fly_on_px4.md)")
    g.add_argument("--px4", action="store_true", help="also design and check the flatness controller's gains for "
                   "PX4's offboard path: a command per odometry sample, the delay-margin rule at the path's delay")
    g.add_argument("--odometry-rate", type=float, default=1.0 / DEFAULT_PERIOD, metavar="HZ",
                   help=f"PX4's vehicle_odometry rate [Hz] (default {1.0 / DEFAULT_PERIOD:g}: EKF2_PREDICT_US 10 ms)")
    g.add_argument("--odometry-latency", type=float, default=DEFAULT_LATENCY, metavar="S",
                   help=f"its latency, measurement to delivery [s] (default {DEFAULT_LATENCY:g})")
    g.add_argument("--link-delay", type=float, default=DEFAULT_LINK_DELAY, metavar="S",
                   help=f"controller to PX4's allocator [s] (default {DEFAULT_LINK_DELAY:g}; measure: half the "
                   "round_trip_time of /fmu/out/timesync_status)")
    g.add_argument("--reference", default="hover", help="with --out: hover (default), figure8 or a mission file")
    g.add_argument("--level", default="ff2", help="with --out: rigid, ff0, ff1 or ff2 (default ff2)")
    g.add_argument("--out", metavar="DIR", default=None, help="with --px4: write DIR/px4_params.yaml (the nodes' "
                   "parameters) and DIR/px4_params.txt (PX4's), and print the commands that start the nodes")
    g = p.add_argument_group("Gazebo (doc/howto/gazebo.md)")
    g.add_argument("--gz-bridge", metavar="FILE", default=None,
                   help="write the ros_gz_bridge configuration of this vehicle (its arm joints, not J2..J7)")
    g.add_argument("--gz-model", default="aerial_manipulator", help="with --gz-bridge: the spawned model's name")
    g.add_argument("--gz-world", default="empty", help="with --gz-bridge: the world's name")
    a = p.parse_args(argv)
    if a.out is not None and not a.px4:
        p.error("--out: needs --px4")
    if not (math.isfinite(a.odometry_rate) and 0 < a.odometry_rate <= 1e4):
        p.error("--odometry-rate: expected a rate in (0, 10000] Hz")
    from geodyn_ros.model.inertia import InertiaCorrectionWarning
    px4 = None
    try:
        with warnings.catch_warnings():     # the report states an inertia correction in its own line
            warnings.simplefilter("ignore", InertiaCorrectionWarning)
            vehicle = a.vehicle if a.vehicle in SHIPPED_URDFS else Path(a.vehicle)
            r = vehicle_report(a.urdf, vehicle, period=a.period)
            if a.px4:
                from .px4_setup import px4_setup
                px4 = px4_setup(r["urdf"], r["vehicle"], period=1.0 / a.odometry_rate, latency=a.odometry_latency,
                                link_delay=a.link_delay, reference=a.reference, level=a.level)
                r["px4"] = _px4_json(px4)
    except ValueError as exc:
        print(f"geodyn_vehicle: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    if a.gz_bridge is not None:
        err = _write_gz_bridge(r, a)
        if err:
            print(f"geodyn_vehicle: error: {err}", file=sys.stderr)
            return 2
    files = None
    if px4 is not None and a.out is not None and not px4["refusals"]:
        from .px4_setup import px4_commands, write_px4_config
        try:
            files = write_px4_config(px4, a.out)
        except ValueError as exc:
            print(f"geodyn_vehicle: error: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 2
        r["px4"]["files"] = {k: str(v) for k, v in files.items()}
        r["px4"]["commands"] = {"stand_in": px4_commands(files["params"]),
                                "px4": px4_commands(files["params"], stand_in=False)}
    if a.json:
        print(json.dumps(r, indent=1))
    else:
        text = format_report(r)
        if px4 is not None:
            import textwrap
            from .px4_setup import report_lines
            text += "\n" + "\n".join(w for line in report_lines(px4)
                                      for w in (textwrap.wrap(line, 99, subsequent_indent="    ") or [""]))
        if files is not None:
            text += "\n" + _written(files, r["px4"]["commands"])
        print(text)
    if px4 is not None and px4["refusals"] and a.out is not None:
        print(f"geodyn_vehicle: nothing written to {a.out}: the gains are refused for PX4's path", file=sys.stderr)
    return 2 if r["gains"]["refusals"] or (px4 is not None and px4["refusals"]) else 0


def _write_gz_bridge(r: dict, a) -> str:
    """``--gz-bridge FILE``: the vehicle's bridge file (:mod:`geodyn_ros.vehicle.gz_bridge`); the
    error line, or "" once written (said on stderr, so that --json stays one object)."""
    from geodyn_ros.vehicle import load_vehicle
    from geodyn_ros.vehicle.gz_bridge import arm_joints, bridge_yaml
    try:
        joints = arm_joints(load_vehicle(r["vehicle"]))
        text = bridge_yaml(joints, a.gz_model, a.gz_world, source=f"{r['urdf']} and {r['vehicle']}")
    except ValueError as exc:
        return f"--gz-bridge: {exc}"
    try:
        Path(a.gz_bridge).write_text(text)
    except OSError as exc:
        return f"{a.gz_bridge}: --gz-bridge: cannot write ({exc.strerror}); give a writable path"
    print(f"wrote {a.gz_bridge} (ros_gz_bridge: {len(joints)} arm joint(s): {', '.join(joints) or 'none'})",
          file=sys.stderr)
    return ""


def _written(files: dict, commands: dict) -> str:
    """What ``--out`` wrote and the commands that start the nodes (without ``ros2 launch``)."""
    L = [f"wrote {files['params']} (the nodes' parameters) and {files['px4']} (PX4's: paste the param set lines)",
         "the stand-in (each in its own terminal, or end each line with &):"]
    L += [f"  {c}" for c in commands["stand_in"]]
    L += ["a real PX4 (the Micro XRCE-DDS Agent running): the same without geodyn_px4_sim and the -p options,",
          "then call the bridge's ~/offboard and ~/arm services (doc/howto/fly_on_px4.md)"]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
