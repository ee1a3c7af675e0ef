"""YOUR vehicle on PX4: its configuration from its URDF and vehicle file (issue 52), the code of
``geodyn_vehicle --px4 [--out DIR]``.

:func:`px4_setup` loads and checks the vehicle and its reference as ``geodyn_fly`` does
(:mod:`geodyn_ros.loops.fly_references`), then designs and checks the flatness controller's gains
for PX4's offboard path: a command per PX4 odometry sample (``period``, default 10 ms: EKF2's
``EKF2_PREDICT_US``), the odometry's ``latency`` (10 ms, the stand-in's ``onboard`` profile) and
the link to PX4's allocator (``link_delay``, default :data:`DEFAULT_LINK_DELAY`; measure yours):

* **the discrete check** at ``period``
  (:func:`~geodyn_ros.control.gain_design.design_gains`: zero-order hold, one step of delay, the
  1.5x gain margin; bandwidths capped at 20 steps per period);
* **the delay-margin rule** on the rotor-driven loops (CoM, roll, pitch, yaw) at the path's loop
  delay (:mod:`geodyn_ros.control.delay_margin`: ``latency + period + link_delay + 1.5`` actuator
  steps; margin >= 1.5 x that). Gains designed from the model (no explicit rotation gains in the
  file's ``gains:``) get the rotation bandwidth lowered in steps of 0.05 until it holds (the PX4
  table's design); explicit gains are checked, never changed: a refusal names the gain and the
  bound it found.

Refusals stop the configuration (nothing is written). The arm's loops are commanded once per
odometry sample too; their discrete check at ``period`` is reported, and a refusal there is a
warning (note), not a stop: the arm's samples come from its own driver, not through PX4, and the
shipped hexarotor flies its elastic joints' ``kp_joint`` 40 through the stand-in although this
check (a locked link, one whole step of delay) bounds it at 4.04.

:func:`write_px4_config` writes, in a directory:

* ``px4_params.yaml``: the ROS 2 parameters of the five nodes, keyed by node name
  (``/**/geodyn_px4_sim`` -- the stand-in only: its start state on the reference at ``t = 0`` --,
  ``geodyn_reference``, ``geodyn_node``, ``geodyn_flat_controller`` -- the gains with their
  ``gains_designed_for`` stamp --, ``geodyn_px4_bridge``), for each node's ``--ros-args
  --params-file`` or ``px4.launch.py config:=``;
* ``px4_params.txt``: the PX4 side: ``param set`` lines of the vehicle (``CA_AIRFRAME``,
  ``CA_ROTOR*``, ``THR_MDL_FAC``, ``MC_AIRMODE``:
  :func:`geodyn_ros.px4.parameters.parameter_lines`) and, commented out, the lab's: output
  mapping, offboard and RC failsafes, motion capture into EKF2 and the DDS domain, each with its
  source.

:func:`px4_commands` gives the commands that start the nodes without ``ros2 launch`` (each node's
console script with ``--ros-args``), against the stand-in or a real PX4.
"""
from __future__ import annotations

import math
import os
import shlex
from pathlib import Path

import numpy as np

__all__ = ["DEFAULT_PERIOD", "DEFAULT_LATENCY", "DEFAULT_LINK_DELAY", "STANDIN_REAL_TIME_FACTOR", "NODES",
           "px4_setup", "node_parameters", "write_px4_config", "px4_commands", "report_lines"]

#: [s] PX4's odometry period: EKF2_PREDICT_US 10 ms (src/modules/ekf2/module.yaml), one estimate per
#: filter update; the controller commands once per sample
DEFAULT_PERIOD = 0.01
#: [s] the odometry's latency: one filter update (the stand-in's onboard profile, config/sensors.yaml)
DEFAULT_LATENCY = 0.010
#: [s] the link from the controller to PX4's allocator (uXRCE-DDS), an assumption: the setpoints
#: (about 130 bytes with the XRCE framing) take 1.4 ms on a 921600-baud serial wire; measure yours:
#: half of round_trip_time on /fmu/out/timesync_status (PX4 issues 22286: below 1 ms; 22382: 14-28 ms)
DEFAULT_LINK_DELAY = 0.002
#: the stand-in's real_time_factor: five Python processes and MuJoCo on two cores (config/px4.yaml)
STANDIN_REAL_TIME_FACTOR = 0.1
#: the nodes of the PX4 path, in start order (the stand-in first: it publishes /clock)
NODES = ("geodyn_px4_sim", "geodyn_reference", "geodyn_node", "geodyn_flat_controller", "geodyn_px4_bridge")
#: derivative order of geodyn_node and the reference
ORDER = 2
_EXPLICIT_ROTATION = ("kp_rotation", "kd_rotation")
#: the flatness controller's levels
LEVELS = ("rigid", "ff0", "ff1", "ff2")


def _positive(name, v, zero_ok=False):
    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if zero_ok
                                                                                               else v > 0)):
        raise ValueError(f"{name}: expected a finite time {'>= 0' if zero_ok else '> 0'} [s], got {v!r}")
    return float(v)


def _prepare(urdf, vehicle, reference: str) -> dict:
    """Load and check the vehicle, its allocation (rank 4 only) and the reference ``f(t, order)``
    (``geodyn_fly``'s, :mod:`geodyn_ros.loops.fly_references`: hover, figure8 or a mission file
    checked on the whole body); ValueError (one line) for anything that cannot fly here."""
    from geodyn_ros.control.rotors import Allocation
    from geodyn_ros.vehicle import load_vehicle
    from .fly_references import check_mission, fly_reference, joint_swing, mission_reference, vehicle_size
    cfg = load_vehicle(vehicle)
    model = cfg.load_model(urdf)
    cfg.check(model)
    _, frames = cfg.rotor_frames(model)
    al = Allocation.from_frames(frames, cfg.rotors)
    if not al.collinear:
        raise ValueError(f"{vehicle}: rotors: not collinear (a fully actuated or rank-deficient set); the PX4 path "
                         "flies the flatness controller of a collinear (rank 4) vehicle")
    if reference in ("figure8", "hover"):
        ref = fly_reference(reference, vehicle_size(frames), joint_swing(urdf, model.joint_names), kind="flat")
    else:
        from geodyn_ros.planning import Vehicle
        plan, _, _ = check_mission(reference, model.joint_names, Vehicle.from_files(urdf, vehicle),
                                   hint="fly it slower: geodyn_fly --reference <file> --slow-down")
        ref, _ = mission_reference(reference, model.joint_names, kind="flat", plan=plan)
    return {"cfg": cfg, "model": model, "allocation": al, "reference": ref, "urdf": Path(urdf),
            "vehicle": Path(vehicle)}


def px4_setup(urdf, vehicle, *, period: float = DEFAULT_PERIOD, latency: float = DEFAULT_LATENCY,
              link_delay: float = DEFAULT_LINK_DELAY, reference: str = "hover", level: str = "ff2") -> dict:
    """The PX4 configuration of a vehicle (module docstring) as a dict: ``prep`` (the loaded
    vehicle: ``cfg``, ``model``, ``allocation``, ``reference`` ``f(t, order)``, ``urdf``, ``vehicle``),
    ``gains`` (the FlatnessGains to fly), ``gains_source`` (``"file"`` or ``"designed"``),
    ``factor`` (the rotation bandwidth factor applied), ``design`` (the GainDesign at ``period``
    of the final gains: loops, radii), ``delay_s`` (the loop delay), ``lag_s`` (the rotor lag of the
    rule), ``delay_loops`` (the rule per axis), ``refusals`` (lines; non-empty: do not fly),
    ``notes``, ``stamp`` (``gains_designed_for``), ``path`` (the path's figures), ``reference``,
    ``level``. ValueError (one line) for a vehicle without a ``px4:`` section or that PX4 cannot
    allocate, or a vehicle that is not collinear (this path flies the flatness controller). The
    vehicle's other checks are ``geodyn_vehicle``'s report's and ``geodyn_fly``'s
    (:func:`geodyn_ros.loops.fly.prepare`), run before."""
    from geodyn_ros.control.delay_margin import (MARGIN_RATIO, delay_loops, fit_rotation, observer_bandwidth, path_delay,
                                                 rotor_lag)
    from geodyn_ros.control.gain_design import design_gains, model_inertias
    from geodyn_ros.control.gain_origin import designed_for
    from geodyn_ros.px4.offboard_path import px4_vehicle

    period, latency = _positive("period", period), _positive("latency", latency, True)
    link_delay = _positive("link_delay", link_delay, True)
    if level not in LEVELS:
        raise ValueError(f"level: {level!r} is not a level of a rank 4 vehicle ({', '.join(LEVELS)})")
    prep = _prepare(urdf, vehicle, reference)
    cfg, model, al = prep["cfg"], prep["model"], prep["allocation"]
    _, frames = cfg.rotor_frames(model)
    px4_vehicle(cfg, frames)            # refuses a file without px4:, or rotors PX4 cannot allocate exactly
    step = float(cfg.control_period)
    delay = path_delay(period, latency, link_delay, step)
    lag = rotor_lag(cfg.rotors)
    inertias = model_inertias(model)
    spec = getattr(cfg, "gains_spec", None) or {}
    explicit = any(k in spec for k in _EXPLICIT_ROTATION)
    d0 = design_gains(model, al, cfg, kind="flatness", period=period)
    notes = list(d0.notes)
    gains, factor = d0.gains, 1.0
    if not explicit:
        gains, factor, _ = fit_rotation(d0.gains, inertias, lag, delay)
        if factor != 1.0:
            notes.append(f"rotation bandwidth x {factor:g} for the delay-margin rule (margin >= {MARGIN_RATIO:g} x "
                         f"{delay * 1e3:.1f} ms)")
    loops = delay_loops(gains, inertias, lag, delay)
    spec_final = {k: np.asarray(getattr(gains, k), float).tolist() for k in
                  ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint")}
    design = design_gains(model, al, cfg, kind="flatness", spec=spec_final, period=period)
    refusals = [e["bound"]["refusal"] for e in loops if e["bound"] is not None]
    arm = []
    for lp in design.loops:
        if lp["bound"] is None:
            continue
        if lp["loop"] == "joint":
            b = lp["bound"]
            arm.append(f"{b['gain']} {b['relation']} {b['value']:.3g}")
        else:
            refusals.append(lp["bound"]["refusal"])
    if arm:
        notes.append(f"arm (a warning, not refused: its samples come from its own driver, and this model, a locked "
                     f"link with a whole step of delay, is conservative there): at {period * 1e3:g} ms the discrete "
                     f"check asks {', '.join(arm)}")
    observer = observer_bandwidth(gains, inertias, lag, delay)     # the rejection options' observer on this path
    return {"prep": prep, "gains": gains, "gains_source": "file" if explicit else "designed", "factor": factor,
            "design": design, "observer": observer, "delay_s": delay, "lag_s": lag, "delay_loops": loops, "refusals": refusals,
            "notes": notes, "stamp": designed_for(model, period), "reference": reference, "level": level,
            "path": {"period_s": period, "latency_s": latency, "link_delay_s": link_delay, "actuator_step_s": step}}


def _floats(a):
    return [float(v) for v in np.asarray(a, float).ravel()]


def _start_state(setup) -> dict:
    """``geodyn_px4_sim``'s start on the reference at ``t = 0`` (as ``fly.launch.py``'s simulator;
    :func:`geodyn_ros.loops.underactuated.flat_start_state`): held on its stand until PX4 arms it."""
    import geodyn_ros as gd
    from geodyn_ros.control.flatness import FlatnessController
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    from .underactuated import flat_start_state
    prep = setup["prep"]
    cfg, model, al = prep["cfg"], prep["model"], prep["allocation"]
    ref = prep["reference"](0.0, ORDER)
    ctrl = FlatnessController(model, al, cfg.rotors, cfg.elastic, setup["gains"], setup["level"])
    st = flat_start_state(ctrl, ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, ORDER))
    C, Vb = st["base_pose"], Ad_inv(st["base_pose"]) @ st["base_twist"]
    return {"initial_base_pose": _floats(np.r_[C[:3, 3], matrix_to_quat(C[:3, :3], "xyzw")]),
            "initial_base_twist": _floats(np.r_[Vb[3:], Vb[:3]]),
            "initial_joint_positions": _floats(ref.q[0]), "initial_joint_velocities": _floats(ref.q[1]),
            "initial_rotor_speeds": _floats(st["rotor_speed"]), "initial_motor_positions": _floats(st["motor_angle"]),
            "initial_motor_velocities": _floats(st["motor_velocity"])}


def _gain_parameters(gains) -> dict:
    """The flat controller's gain parameters: scalars, rotation triples, per-joint gains as the
    arrays ``kp_joints`` / ``kd_joints`` (model joint order), as ``fly.launch.py`` gives them."""
    out = {}
    for k in ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint"):
        v = np.asarray(getattr(gains, k), float)
        if k.endswith("_joint") and v.ndim == 1:
            if v.size:
                out[k + "s"] = _floats(v)
        else:
            out[k] = float(v) if v.ndim == 0 else _floats(v)
    return out


def node_parameters(setup: dict) -> dict:
    """``{node name: parameters}`` of the PX4 path (module docstring): paths absolute, every node
    on the wall clock (the stand-in's commands add ``use_sim_time:=true`` to the four others)."""
    prep = setup["prep"]
    model = {"urdf_path": os.fspath(Path(prep["urdf"]).resolve()),
             "actuation_config": os.fspath(Path(prep["vehicle"]).resolve())}
    ref = setup["reference"]
    if ref in ("figure8", "hover"):
        reference = {"trajectory": "vehicle", "vehicle_reference": ref}
    else:      # a mission file: planned at the node's start, held at its first waypoint before
        reference = {"trajectory": "waypoints", "mission": os.fspath(Path(ref).resolve())}
    elastic = bool(len(prep["cfg"].elastic.joints))
    out = {"geodyn_px4_sim": {**model, "real_time_factor": STANDIN_REAL_TIME_FACTOR, "sensing": "onboard",
                              **_start_state(setup)},
           # on the wall clock at the odometry's rate: the controller commands once per sample, and
           # the node's default 1 kHz had geodyn_node compute ten times as often for nothing (SITL
           # on two busy cores: commands at 40-60 Hz and the vehicle fell; at 100 Hz it flew).
           # Ignored with use_sim_time (the stand-in).
           "geodyn_reference": {**model, "order": ORDER, "rate_hz": 1.0 / float(setup["path"]["period_s"]),
                                **reference},
           "geodyn_node": {**model, "order": ORDER, "input_mode": "flat"},
           "geodyn_flat_controller": {**model, "order": ORDER, "level": setup["level"], "elastic_joints": elastic,
                                      "joint_states_max_age": 0.05, "motor_states_max_age": 0.05,
                                      **_gain_parameters(setup["gains"]), "gains_designed_for": setup["stamp"],
                                      **_rejection_parameters(setup)},
           "geodyn_px4_bridge": {**model, "px4_mode": "thrust_and_torque", "world_frame": "world"}}
    # an empty list has no ROS parameter type (no joints, no elastic joint): the node's default
    return {name: {k: v for k, v in p.items() if not (isinstance(v, list) and not v)} for name, p in out.items()}


# ----------------------------------------------------------------------------- the files
_HEADER = """# {what} of {vehicle}
# on {urdf}
# written by geodyn_vehicle --px4 --out (geodyn_ros.loops.px4_setup); PX4's path: a command per
# odometry sample every {period:g} ms, odometry latency {latency:g} ms, link delay {link:g} ms
# (loop delay {delay:.1f} ms). Gains: {source}; checked by the discrete check
# at {period:g} ms and the delay-margin rule (geodyn_vehicle --px4 prints the check).
"""


def _lab_lines(n_rotors: int) -> list:
    """The PX4 side a lab sets by hand, commented out, each with its source (PX4-Autopilot
    289f3203: parameter definitions and docs/en)."""
    L = ["",
         "# ---- Outputs: which output drives which rotor (src/lib/mixer_module/output_functions.yaml:",
         "# Motor n = 100 + n; docs/en/config/actuators.md, 'Actuator Outputs'). Rotor i of the vehicle",
         "# file is PX4's Motor i+1, whatever output it is wired to; set the output of each, e.g. wired",
         "# in order to MAIN 1..n (PWM_AUX_FUNCn, UAVCAN_EC_FUNCn alike), then check every motor's place",
         "# and direction with QGroundControl's Actuator Testing before flying:"]
    L += [f"# param set PWM_MAIN_FUNC{i + 1} {101 + i}" for i in range(n_rotors)]
    L += ["",
          "# ---- Offboard and its failsafes (src/modules/commander/commander_params.c; the bridge stops",
          "# the proof of life 0.5 s after the controller's last command):",
          "# param set COM_OF_LOSS_T 1.0      # offboard lost this long after the last proof of life",
          "# param set COM_OBL_RC_ACT 0       # what PX4 does then (0 Position; 4 Land)",
          "# SITL or a bench without RC only (keep your RC and a safety pilot on a vehicle):",
          "# param set COM_RC_IN_MODE 4",
          "# param set COM_RCL_EXCEPT 4",
          "# param set NAV_RCL_ACT 0",
          "# param set NAV_DLL_ACT 0",
          "",
          "# ---- Motion capture into EKF2 (docs/en/ros/external_position_estimation.md;",
          "# src/modules/ekf2/params_external_vision.yaml, module.yaml). Publish the mocap pose as",
          "# px4_msgs/VehicleOdometry on /fmu/in/vehicle_visual_odometry (dds_topics.yaml), pose_frame",
          "# NED (1) or FRD (2), q body FRD to that frame, timestamp_sample its capture time:",
          "# param set EKF2_EV_CTRL 11         # bits: 0 horizontal position, 1 vertical position, 3 yaw",
          "#                                   # (15 adds bit 2, 3D velocity, if your mocap sends it)",
          "# param set EKF2_HGT_REF 3          # Vision: the height reference (reboot)",
          "# param set EKF2_EV_DELAY 0         # [ms] capture to IMU time; tune by the innovations",
          "# param set EKF2_EV_POS_X 0         # markers' centre in the body frame [m] (and _Y, _Z)",
          "# then feed the odometry latency this file assumes; PX4's /fmu/out/vehicle_odometry is the",
          "# controller's (its timestamp_sample: the estimate's time)",
          "",
          "# ---- DDS (src/modules/uxrce_dds_client/module.yaml; docs/en/middleware/uxrce_dds.md):",
          "# param set UXRCE_DDS_CFG 102       # the agent's port: 102 TELEM2 (Tools/serial/generate_config.py),",
          "#                                   # 1000 Ethernet; then SER_TEL2_BAUD 921600",
          "# param set UXRCE_DDS_DOM_ID 0      # the DDS domain: equal to the nodes' ROS_DOMAIN_ID (reboot)",
          "# param set UXRCE_DDS_SYNCT 1       # timestamps synchronised (the default; the bridge needs it)",
          "# The link delay assumed above: measure it as half of round_trip_time [us] on",
          "# /fmu/out/timesync_status and give geodyn_vehicle --px4 --link-delay <s>."]
    return L


def write_px4_config(setup: dict, out_dir) -> dict:
    """Write ``px4_params.yaml`` and ``px4_params.txt`` into ``out_dir`` (created; module
    docstring); ``{"params": path, "px4": path}``. ValueError when ``setup`` has refusals (nothing
    written) or the directory cannot be written."""
    import yaml
    from geodyn_ros.px4.parameters import parameter_lines
    if setup["refusals"]:
        raise ValueError(f"--out: nothing written: {setup['refusals'][0]}")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{out}: --out: cannot create the directory ({exc.strerror}); give a writable one") from None
    prep, path = setup["prep"], setup["path"]
    head = dict(vehicle=Path(prep["vehicle"]).resolve(), urdf=Path(prep["urdf"]).resolve(),
                period=path["period_s"] * 1e3, latency=path["latency_s"] * 1e3, link=path["link_delay_s"] * 1e3,
                delay=setup["delay_s"] * 1e3,
                source=("of the vehicle file's gains:" if setup["gains_source"] == "file" else
                        f"designed from the model (rotation bandwidth x {setup['factor']:g})"))
    params = node_parameters(setup)
    text = _HEADER.format(what="ROS 2 parameters of the PX4 path", **head) + (
        "# geodyn_px4_sim is the stand-in only (its start: the reference at t = 0, held on its stand\n"
        "# until armed); with the stand-in the four others also get use_sim_time:=true.\n")
    text += yaml.safe_dump({f"/**/{k}": {"ros__parameters": v} for k, v in params.items()}, sort_keys=False,
                           default_flow_style=None, width=10000)
    _, frames = prep["cfg"].rotor_frames(prep["model"])
    lines = parameter_lines(prep["cfg"], frames)
    px4 = _HEADER.format(what="PX4 parameters", **head) + "\n".join(
        ["# Paste the param set lines into PX4's shell (QGroundControl: Analyze Tools > MAVLink",
         "# Console) or an airframe file, then reboot. Rotor i of the file = PX4's Motor i+1.",
         "# CA_AIRFRAME 0: Multirotor (src/modules/control_allocator/module.yaml)",
         "param set CA_AIRFRAME 0"]
        + lines + _lab_lines(len(frames))) + "\n"
    files = {"params": out / "px4_params.yaml", "px4": out / "px4_params.txt"}
    try:
        files["params"].write_text(text)
        files["px4"].write_text(px4)
    except OSError as exc:
        raise ValueError(f"{out}: --out: cannot write ({exc.strerror}); give a writable directory") from None
    return files


def _rejection_parameters(setup) -> dict:
    """The rejection options' safe settings on this path (they stay off: ``rejection_*`` switches):
    engaged only while PX4 applies the commands (the bridge's ``armed``), and the observer no
    faster than the delay-margin rule allows (:func:`~geodyn_ros.control.delay_margin.observer_bandwidth`;
    none: the observer is left at its default and the report says to keep it off)."""
    bw = setup["observer"]["bandwidth"]
    return {"rejection_engage": "armed", **({"rejection_observer_bandwidth": round(bw, 3)} if bw > 0 else {})}


def px4_commands(params_file, *, stand_in: bool = True, python: str | None = None) -> list:
    """The commands that start the PX4 path's nodes without ``ros2 launch``, one per node, in
    order (the stand-in first): each node's console script (``python``: ``"<python> -m <module>"``
    instead) with ``--ros-args --params-file params_file``; with the stand-in the four others on
    its ``/clock`` (``use_sim_time:=true``) and the bridge switching to offboard and arming by
    itself once the proof of life has streamed; without, a real PX4 through the agent: the bridge
    waits for its ``~/offboard`` and ``~/arm`` services."""
    modules = {"geodyn_px4_sim": "geodyn_ros.ros.px4.standin_node", "geodyn_reference": "geodyn_ros.ros.nodes.reference_node",
               "geodyn_node": "geodyn_ros.ros.nodes.geodyn_node",
               "geodyn_flat_controller": "geodyn_ros.ros.nodes.flat_controller_node",
               "geodyn_px4_bridge": "geodyn_ros.ros.px4.bridge_node"}
    f = shlex.quote(os.fspath(params_file))
    out = []
    for name in NODES:
        if name == "geodyn_px4_sim" and not stand_in:
            continue
        exe = name if python is None else f"{python} -m {modules[name]}"
        extra = ""
        if stand_in and name != "geodyn_px4_sim":
            extra += " -p use_sim_time:=true"
        if stand_in and name == "geodyn_px4_bridge":
            extra += " -p arm_and_offboard_on_start:=true"
        out.append(f"{exe} --ros-args --params-file {f}{extra}")
    return out


def report_lines(setup: dict) -> list:
    """The PX4 section of ``geodyn_vehicle``'s report (lines <= 99 columns once wrapped)."""
    path = setup["path"]
    L = [f"PX4 path: a command per odometry sample every {path['period_s'] * 1e3:g} ms; loop delay "
         f"{setup['delay_s'] * 1e3:.1f} ms = latency {path['latency_s'] * 1e3:g} + period "
         f"{path['period_s'] * 1e3:g} + link {path['link_delay_s'] * 1e3:g} + 1.5 x {path['actuator_step_s'] * 1e3:g} "
         f"ms; rotor lag {setup['lag_s'] * 1e3:g} ms (the slowest up/down)",
         ("gains: the vehicle file's (checked, not changed)" if setup["gains_source"] == "file" else
          f"gains: designed from the model at {path['period_s'] * 1e3:g} ms"
          + ("" if setup["factor"] == 1.0 else f", rotation bandwidth x {setup['factor']:g}")),
         "delay margin (the small model; need >= 1.5 x the loop delay):",
         "  loop      axis   kp        kd        margin ms  need ms  ok"]
    for e in setup["delay_loops"]:
        L.append(f"  {e['loop']:<8}  {e['axis']:<5}  {e['kp']:<8.4g}  {e['kd']:<8.4g}  {e['margin_s'] * 1e3:>9.1f}  "
                 f"{e['need_s'] * 1e3:>7.1f}  {'yes' if e['ok'] else 'NO'}")
    L.append(f"discrete loop at {path['period_s'] * 1e3:g} ms (radius, ok):")
    L += ["  " + ", ".join(f"{lp['axis']} {lp['spectral_radius']:.4f} {'yes' if lp['ok'] else 'NO'}"
                           for lp in setup["design"].loops)]
    ob = setup["observer"]
    if ob["bandwidth"] >= ob["cap"]:
        L.append(f"rejection observer: its default {ob['cap']:g} rad/s keeps the rule on this path")
    elif ob["bandwidth"] > 0:
        L.append(f"rejection observer: at most {ob['bandwidth']:.3g} rad/s on this path (the rule, limited by the "
                 f"{ob['limited_by']} axis); the params file sets it, engaged while armed")
    else:
        L.append(f"rejection observer: no bandwidth keeps the rule on this path ({ob['limited_by']}); keep "
                 "rejection_wrench_feedforward off")
    L += [f"  note: {n}" for n in setup["notes"]]
    L += [f"  REFUSED (PX4): {x}" for x in setup["refusals"]]
    return L
