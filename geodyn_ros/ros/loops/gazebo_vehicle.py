"""YOUR vehicle in Gazebo: what ``launch/gazebo_vehicle.launch.py`` starts, computed once in a child
process (a launch file does not import the dynamics package)::

    python -m geodyn_ros.ros.loops.gazebo_vehicle URDF VEHICLE REFERENCE LEVEL OUTDIR

writes into ``OUTDIR`` and prints one JSON line ``{"rank", "controller", "parameters", "model",
"bridge", "vehicle", "spawn", "corrections"}``; a vehicle that cannot fly is refused with ONE line on
stderr (``gazebo_vehicle.launch.py: refused: ...``) and exit status 2. ``URDF`` may be empty and
``VEHICLE`` the name of a shipped vehicle (``config/vehicles/``: ``borinot_flying_arm_2``, ...).

What is written, and why:

* ``model.urdf``: ``urdf/vehicle_gazebo.urdf.xacro`` expanded on the two files (the gz plugins, and
  for a rotor list the rotor links ``rotor_<k>`` on ``rotor_<k>_joint``); a ``from_urdf`` file's
  rotor links are given in the package's rotor order (natural name order: ``rotor_10`` after
  ``rotor_9``), which is the ``actuator_number`` order of the motor plugins. A rotor joint whose URDF
  ``<limit>`` pins its speed or torque at 0 (example-robot-data's ``iris.urdf``) would never turn in
  gz-sim, which enforces joint limits: in this model (only) the limit is removed and the correction
  reported. Arm joints with a URDF ``<dynamics>`` damping or friction are reported in one line:
  gz-sim simulates both, the package's dynamics do not, so the controller gets ``joint_losses: true``
  (their torque added to the joint feedforward, :mod:`geodyn_ros.model.joint_losses`), and a second
  line names the joints the reference then asks more than their effort limit of. The spawned model,
  and the model every node loads: the rotor links' mass and inertia
  are in both (``test/gazebo``: gz's lumped model equals the package's).
* ``vehicle.yaml``: the vehicle file with the generated rotor joints added to ``locked_joints``
  (rotor list), so every node locks them as gz's spinning rotor links are locked in the package's
  model, and its series-elastic joints made rigid (gz-sim drives every arm joint with a torque:
  the gains are designed for the rigid link; :func:`gazebo_vehicle_file`). Otherwise unchanged.
* ``bridge.yaml``: the ros_gz_bridge entries of the vehicle (:mod:`geodyn_ros.vehicle.gz_bridge`).
* ``parameters.yaml``: the nodes of ``fly.launch.py`` without the MuJoCo simulator (rank 4:
  ``geodyn_flat_controller``, rank 6: ``geodyn_actuated_controller``; :func:`node_parameters`), on
  simulated time, with the Gazebo loop's settings of the shipped Gazebo launch files: no
  lock-step (``sync_stamps: false``), ``input_policy: exact`` (gz publishes odometry and joint
  states at the same steps), the odometry publisher's first 0.05 s discarded, one effort topic per
  joint, rigid joints (gz-sim has no series-elastic joint), and the reference held at ``t = 0``
  until the start hold releases the base (``start_topic``).
* ``spawn``: the reference's base pose at ``t = 0`` (``x y z`` [m], ``R P Y`` [rad], gz's fixed
  axes x-y-z): the base is held there until the controller commands the rotors, so the loop starts
  on its reference.

Levels: rank 4 ``rigid, ff0, ff1, ff2`` (``ff2`` commands what ``ff1`` does on rigid joints), rank 6
``pd, ff0, ff1`` (order 2 needs series-elastic joints, refused in one line); default ``ff1``.
"""
from __future__ import annotations

import json
import math
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["LEVELS", "DEFAULT_LEVEL", "GZ_SETTINGS", "gazebo_model", "gazebo_vehicle_file", "spawn_pose",
           "gazebo_parameters", "main"]

#: the levels per allocation rank in Gazebo (rigid joints: no order 2 on the actuated vehicle)
LEVELS = {4: ("rigid", "ff0", "ff1", "ff2"), 6: ("pd", "ff0", "ff1")}
DEFAULT_LEVEL = "ff1"
#: what the controllers get in every Gazebo loop (as launch/gazebo.launch.py and gazebo_underactuated.launch.py)
GZ_SETTINGS = {"elastic_joints": False, "per_joint_effort_topics": True, "input_policy": "exact",
               "sync_stamps": False, "odom_startup_discard": 0.05}
#: the start hold's ROS topic (geodyn_ros_launch.GZ_START_TOPIC; config/gz_bridge.yaml)
START_TOPIC = "gz/start_hold"
_PREFIX = "gazebo_vehicle.launch.py: refused: "


def _xacro_file() -> Path:
    from geodyn_ros.model.resources import shipped_urdf
    return shipped_urdf("vehicle_gazebo.urdf.xacro")


def gazebo_model(urdf, cfg) -> tuple:
    """``(xml, rotor_joints, corrections)``: the Gazebo model of the URDF ``urdf`` (path) and the
    loaded vehicle file ``cfg`` (module docstring), the joints its motor plugins drive (actuator
    order) and the corrections made, one line each."""
    import xacro
    mappings = {"urdf": os.fspath(Path(urdf).resolve()), "vehicle": os.fspath(Path(cfg.source_path).resolve())}
    if cfg.rotor_geometry == "from_urdf":
        from geodyn_ros.vehicle.geometry import urdf_joint_table
        mappings["rotor_links"] = ",".join(cfg._rotor_links_in(urdf_joint_table(os.fspath(urdf))[1]))
    xml = xacro.process_file(os.fspath(_xacro_file()), mappings=mappings).toxml()
    root = ET.fromstring(xml)
    rotor_joints = [p.findtext("jointName") for p in root.iter("plugin")
                    if p.get("filename") == "gz-sim-multicopter-motor-model-system"]
    corrections = []
    for j in root.iter("joint"):
        lim = j.find("limit")
        if j.get("name") in rotor_joints and lim is not None and j.get("type") in ("continuous", "revolute"):
            zero = [k for k in ("velocity", "effort") if lim.get(k) is not None and float(lim.get(k)) == 0.0]
            if zero:
                j.remove(lim)
                j.set("type", "continuous")
                corrections.append(f"{urdf}: joint '{j.get('name')}': <limit> {' and '.join(zero)} 0 would stop the "
                                   "rotor in gz-sim (it enforces joint limits); removed in the Gazebo model only")
    if corrections:
        xml = ET.tostring(root, encoding="unicode")
    lossy = []
    for j in root.iter("joint"):
        dyn = j.find("dynamics")
        if j.get("name") in rotor_joints or j.get("type") == "fixed" or dyn is None:
            continue
        d, f = (float(dyn.get(k, "0") or 0) for k in ("damping", "friction"))
        if d or f:
            lossy.append(f"{j.get('name')} (damping {d:g} N m s/rad, friction {f:g} N m)")
    if lossy:
        corrections.append(f"{urdf}: joints {', '.join(lossy)}: the URDF's <dynamics>, which gz-sim simulates and "
                           "the package's dynamics do not: the controller adds them to the joint feedforward "
                           "(joint_losses: true, geodyn_ros.model.joint_losses)")
    return xml, rotor_joints, corrections


def gazebo_vehicle_file(cfg, rotor_joints, out: Path) -> tuple:
    """``(path, corrections)``: the vehicle file the nodes load (module docstring) and one line per
    change. ``cfg``'s own file, or a copy written to ``out`` where Gazebo flies something else:

    * a rotor list: ``rotor_joints`` (the generated rotor joints) added to ``locked_joints``;
    * series-elastic joints of a schema-1 ``joints:`` section (the shipped generator files'
      ``elastic_joints:`` carry their own gains and are left as they are): gz-sim has no series-elastic joint
      (the xacro drives each arm joint with a torque), so they become ``type: rigid`` (their
      ``max_torque`` kept) and the gains are designed for the rigid link, as gz simulates it. The
      elastic gains act on the motor inertia: on a light link they exceed the discrete loop's
      stability limit (seen: 6-25 deg joint RMS on hextilt_flying_arm_5 in gz-sim 8.14)."""
    import yaml
    doc = yaml.safe_load(Path(cfg.source_path).read_text())
    notes, changed = [], False
    if cfg.rotor_geometry == "list":
        doc["locked_joints"] = list(doc.get("locked_joints") or []) + [j for j in rotor_joints
                                                                        if j not in (doc.get("locked_joints") or [])]
        changed = True
    joints = doc.get("joints") if isinstance(doc.get("joints"), dict) else {}
    elastic = [n for n, spec in joints.items() if isinstance(spec, dict) and spec.get("type") == "elastic"]
    for name in elastic:
        spec = joints[name]
        joints[name] = {"type": "rigid", **({"max_torque": spec["max_torque"]} if "max_torque" in spec else {})}
    if elastic:
        notes.append(f"{cfg.source_path}: joints {', '.join(elastic)}: series-elastic; gz-sim drives them rigid with "
                     "a torque, so the Gazebo loop flies them rigid (gains designed for the links)")
        changed = True
    if not changed:
        return Path(cfg.source_path).resolve(), notes
    out.write_text(f"# {cfg.source_path} as Gazebo flies it (geodyn_ros.ros.loops.gazebo_vehicle): a rotor list's "
                   "generated rotor joints locked, series-elastic joints rigid\n" + yaml.safe_dump(doc, sort_keys=False))
    return out, notes


def spawn_pose(base_pose) -> dict:
    """``{"x", "y", "z", "R", "P", "Y"}`` of a base pose ``(x, y, z, qx, qy, qz, qw)``: position [m]
    and roll-pitch-yaw [rad] about the fixed axes x, y, z (``R = Rz(Y) Ry(P) Rx(R)``, gz's and
    ``ros_gz_sim create``'s convention)."""
    x, y, z, qx, qy, qz, qw = (float(v) for v in base_pose)
    roll = math.atan2(2 * (qw * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (qw * qy - qz * qx))))
    yaw = math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
    return {"x": x, "y": y, "z": z, "R": roll, "P": pitch, "Y": yaw}


def gazebo_parameters(urdf, vehicle, reference: str, level: str, out_dir) -> dict:
    """Write the files of the module docstring into ``out_dir`` and return the JSON line's dict.
    Raises :class:`geodyn_ros.loops.fly.Refused` (one line) for what cannot fly."""
    import yaml
    from geodyn_ros.loops.fly import Refused, check_reference, resolve
    from geodyn_ros.vehicle import load_vehicle
    from geodyn_ros.vehicle.gz_bridge import arm_joints, bridge_yaml

    from .fly_closed_loop import CONTROLLER, fly_setup, node_parameters

    urdf, vehicle = resolve(urdf or None, vehicle)
    check_reference(reference)
    reference = reference if reference in ("figure8", "hover") else os.fspath(Path(reference).resolve())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        cfg = load_vehicle(vehicle)
        xml, rotor_joints, corrections = gazebo_model(urdf, cfg)
    except ValueError as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    except Exception as exc:         # xacro's own errors (a URDF it cannot include) are not ValueErrors
        raise Refused(f"{urdf}: xacro: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    model = out / "model.urdf"
    model.write_text(xml)
    veh, notes = gazebo_vehicle_file(cfg, rotor_joints, out / "vehicle.yaml")
    corrections += notes
    setup = fly_setup(model, veh, reference, "ff1")      # the rank first; the level is checked below
    rank = setup["rank"]
    if level not in LEVELS[rank]:
        why = ("order 2 needs series-elastic joints, which gz-sim does not simulate; " if level == "ff2" else "")
        raise Refused(f"level: {level!r} is not a Gazebo level of a rank {rank} vehicle ({why}give one of "
                      f"{', '.join(LEVELS[rank])})")
    setup = dict(setup, level=level)
    params = node_parameters(setup, veh, reference, {})
    params.pop("geodyn_actuated_sim")
    for name, p in params.items():
        for k in ("lockstep", "sensor_reliability"):
            p.pop(k, None)
        p["use_sim_time"] = True
    params["geodyn_reference"]["start_topic"] = START_TOPIC
    params[CONTROLLER[rank]].update(GZ_SETTINGS)
    if rank == 6:      # gz-sim's rigid joints: order 1 at most (LEVELS), and no motor states to feed forward
        params[CONTROLLER[rank]]["feedforward_order"] = min(params[CONTROLLER[rank]]["feedforward_order"], 1)
    short = _joint_losses(setup, model, params[CONTROLLER[rank]])
    if short:
        corrections.append(f"{urdf}: {short}")
    pfile = out / "parameters.yaml"
    pfile.write_text(yaml.safe_dump({k: {"ros__parameters": v} for k, v in params.items()}, sort_keys=False))
    bridge = out / "bridge.yaml"
    bridge.write_text(bridge_yaml(arm_joints(cfg), source=os.fspath(vehicle)))
    return {"rank": rank, "controller": CONTROLLER[rank], "parameters": os.fspath(pfile), "model": os.fspath(model),
            "bridge": os.fspath(bridge), "vehicle": os.fspath(veh), "spawn": spawn_pose(setup["start"]["initial_base_pose"]),
            "corrections": corrections}


def _joint_losses(setup: dict, model_file: Path, controller: dict) -> str | None:
    """Switch the controller's ``joint_losses`` on where the Gazebo model's joints have damping or
    friction (gz-sim simulates both); the effort line of :func:`~geodyn_ros.loops.fly_references.effort_shortfall`
    for the reference with them, or None."""
    from geodyn_ros.loops.fly_references import losses_shortfall
    from geodyn_ros.loops.underactuated import rigid_effort_limits
    from geodyn_ros.model.joint_losses import joint_losses_from_urdf
    prep = setup["prep"]
    model = prep["model"]
    losses = joint_losses_from_urdf(model_file, model.joint_names)
    if not losses.active:
        return None
    controller["joint_losses"] = True
    return losses_shortfall(model, prep["reference"], setup["rank"], losses,
                            rigid_effort_limits(prep["cfg"], model, model_file), duration=prep["reference_duration"])


def main(argv=None) -> int:
    """``python -m geodyn_ros.ros.loops.gazebo_vehicle URDF VEHICLE REFERENCE LEVEL OUTDIR``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) != 5 or argv[0] in ("-h", "--help"):
        print("usage: python -m geodyn_ros.ros.loops.gazebo_vehicle URDF VEHICLE REFERENCE LEVEL OUTDIR\n"
              "  URDF may be '' for a shipped vehicle name; LEVEL '' for the default (ff1)", file=sys.stderr)
        return 2
    urdf, vehicle, reference, level, out = argv
    from geodyn_ros.loops.fly import Refused
    try:
        res = gazebo_parameters(urdf, vehicle, reference or "figure8", level or DEFAULT_LEVEL, out)
    except Refused as exc:
        print(_PREFIX + str(exc).splitlines()[0], file=sys.stderr)
        return 2
    for line in res["corrections"]:
        print("gazebo_vehicle.launch.py: " + line, file=sys.stderr)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
