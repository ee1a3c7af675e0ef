"""YOUR vehicle over ROS 2: the nodes of ``launch/fly.launch.py``, and the same loop in one process.

One vehicle file and a URDF give everything (:func:`fly_setup`, through
:func:`geodyn_ros.loops.fly.prepare`, the code of ``geodyn_fly``): the vehicle is loaded and
checked once (a vehicle that cannot fly is refused in one line), the allocation rank picks the
composition -- rank 4 (collinear): ``geodyn_reference`` (flat outputs), ``geodyn_node``
(``input_mode: flat``) and ``geodyn_flat_controller`` (levels ``rigid, ff0, ff1, ff2``); rank 6
(fully actuated): ``geodyn_reference`` (base reference), ``geodyn_node`` (``output_representation:
body``) and ``geodyn_actuated_controller`` (levels ``pd, ff0, ff1, ff2``) -- with
``geodyn_actuated_sim`` (MuJoCo, gz-sim's rotor lag, the file's rigid or series-elastic joints,
lock-step at the file's ``control_period``, started on the reference at ``t = 0``: state, rotor
speeds ``omega_d(0)``, motors at ``theta_d(0)``, ``theta_d'(0)``). Every node gets the vehicle file
as ``actuation_config``; the controller the gains designed from the model
(:func:`geodyn_ros.control.gain_design.design_gains`, or the file's ``gains:``), per-joint gains as
the arrays ``kp_joints`` / ``kd_joints``; the reference node the reference of ``geodyn_fly``
(``trajectory: vehicle``: figure8, hover or a mission FILE, scaled to the vehicle).

:func:`node_parameters` is what the launch file starts (it calls ``python -m
geodyn_ros.ros.loops.fly_closed_loop launch-parameters ...`` in a child process: a launch file does not
import the dynamics package); :func:`run_ros_fly` starts the same nodes with the same parameters
in one process on an ``EventsExecutor`` (every message through rclpy/DDS) and records the
published states; with ``preroll 0`` the in-process loop (``geodyn_fly``'s
:func:`geodyn_ros.loops.fly.fly`) flies the same trajectory to rounding. Example::

    python -m geodyn_ros.ros.loops.fly_closed_loop --urdf my.urdf --vehicle my.yaml --duration 2 --compare
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["LEVELS", "CONTROLLER", "vehicle_reference", "fly_setup", "start_parameters", "gain_parameters",
           "node_parameters", "run_ros_fly", "main"]

#: the levels per allocation rank (``geodyn_fly``'s rows); the first is the feedback-only baseline
LEVELS = {4: ("rigid", "ff0", "ff1", "ff2"), 6: ("pd", "ff0", "ff1", "ff2")}
#: the controller node per allocation rank
CONTROLLER = {4: "geodyn_flat_controller", 6: "geodyn_actuated_controller"}
#: how to fly a mission beyond the vehicle's limits (these runs have no slow-down option)
_HINT = "geodyn_fly --reference <file> --slow-down flies it slower"
#: derivative order of geodyn_node and the reference (the in-process loops' order)
ORDER = 2


def vehicle_reference(source, vehicle, name: str):
    """``(f(t, order), rank, joint_names)``: ``geodyn_fly``'s reference ``name`` (``figure8``,
    ``hover`` or a mission file) for the vehicle file ``vehicle`` on the robot ``source`` (path or
    URDF XML); ``f`` returns a ``FlatReference`` at rank 4, a ``Reference`` (base) at rank 6.
    ValueError (one line) for a vehicle that cannot fly."""
    from geodyn_ros.loops.fly import prepare
    prep = prepare(source, vehicle, reference=name, hint=_HINT)
    return prep["reference"], prep["rank"], tuple(prep["model"].joint_names)


def fly_setup(urdf, vehicle, reference: str = "figure8", level: str = "ff2") -> dict:
    """Load, check and design once (:func:`geodyn_ros.loops.fly.prepare`); ``{"prep", "rank",
    "level", "start", "gains"}``. ``level``: one of the rank's :data:`LEVELS`. Raises
    :class:`geodyn_ros.loops.fly.Refused` (a ValueError, one line) for a vehicle, reference or
    level that cannot fly."""
    from geodyn_ros.loops.fly import Refused, prepare
    prep = prepare(urdf, vehicle, reference=reference, hint=_HINT)
    rank = prep["rank"]
    if level not in LEVELS[rank]:
        raise Refused(f"level: {level!r} is not a level of a rank {rank} vehicle ({', '.join(LEVELS[rank])})")
    return {"prep": prep, "rank": rank, "level": level, "start": start_parameters(prep, level),
            "gains": gain_parameters(prep["design"].gains)}


def start_parameters(prep: dict, level: str) -> dict:
    """``geodyn_actuated_sim`` parameters that start it on the reference at ``t = 0`` as the
    in-process loop starts with ``preroll 0`` (rank 4:
    :func:`geodyn_ros.loops.underactuated.flat_start_state`; rank 6: the reference's base state,
    ``omega_d(0)`` of the inverse-dynamics wrench, ``theta_d(0)``, ``theta_d'(0)``): base pose
    (x y z qx qy qz qw), REP 105 base twist (linear first, base axes), joints, rotor speeds, motors
    (elastic joints, the file's order)."""
    import geodyn_ros as gd
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    cfg, model, al, gains, ref_f = prep["cfg"], prep["model"], prep["allocation"], prep["design"].gains, \
        prep["reference"]
    ref = ref_f(0.0, ORDER)
    if prep["rank"] == 4:
        from geodyn_ros.control.flatness import FlatnessController
        from geodyn_ros.loops.underactuated import flat_start_state
        ctrl = FlatnessController(model, al, cfg.rotors, cfg.elastic, gains, level)
        st = flat_start_state(ctrl, ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, ORDER))
        C, V, om, th, thd = st["base_pose"], st["base_twist"], st["rotor_speed"], st["motor_angle"], \
            st["motor_velocity"]
    else:
        from geodyn_ros.control.actuated import ActuatedController
        ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, gains, model=model)
        res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, ORDER)
        Wb = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body")
        om = ctrl.rotor_reference(Wb)[0]
        th, thd = ctrl.motor_reference(ref.q, res.tau)
        C, V = ref.base_pose, ref.base_twist[0]
    Vb = Ad_inv(C) @ V
    floats = lambda a: [float(v) for v in np.asarray(a, float).ravel()]  # noqa: E731
    return {"initial_base_pose": floats(np.r_[C[:3, 3], matrix_to_quat(C[:3, :3], "xyzw")]),
            "initial_base_twist": floats(np.r_[Vb[3:], Vb[:3]]),
            "initial_joint_positions": floats(ref.q[0]), "initial_joint_velocities": floats(ref.q[1]),
            "initial_rotor_speeds": floats(om), "initial_motor_positions": floats(th),
            "initial_motor_velocities": floats(thd)}


def gain_parameters(gains) -> dict:
    """The controller's gain parameters of a ``FlatnessGains`` / ``TrackingGains``: scalars as
    they are, per-axis rotation gains as lists of 3, per-joint gains as the arrays ``kp_joints``
    / ``kd_joints`` (model joint order; an arm with no joints gives none)."""
    out = {}
    for k in ("kp_position", "kd_position", "kp_rotation", "kd_rotation", "kp_joint", "kd_joint"):
        v = np.asarray(getattr(gains, k), float)
        if k.endswith("_joint") and v.ndim == 1:
            if v.size:
                out[k + "s"] = [float(x) for x in v]
        elif v.ndim == 0:
            out[k] = float(v)
        else:
            out[k] = [float(x) for x in v]
    return out


def node_parameters(setup: dict, vehicle, reference: str, model: dict) -> dict:
    """``{node name: parameters}`` of the loop (module docstring); ``model``: how the nodes get the
    robot, ``{"urdf_path": path}`` or ``{"robot_description": xml}``. Every node but the simulator
    runs on simulated time; the simulator is lock-step at the file's control period."""
    rank, prep = setup["rank"], setup["prep"]
    vehicle = os.fspath(Path(vehicle).resolve())
    from .loop_session import LOCKSTEP_INPUTS
    sim_t = {"use_sim_time": True}
    with_model = {**model, "actuation_config": vehicle}
    out = {"geodyn_actuated_sim": {**with_model, "use_sim_time": False, "lockstep": True,
                                   "timestep": float(prep["cfg"].control_period), **setup["start"]},
           "geodyn_reference": {**sim_t, **with_model, "order": ORDER, "trajectory": "vehicle",
                                "vehicle_reference": str(reference)}}
    if rank == 4:
        out["geodyn_node"] = {**sim_t, **LOCKSTEP_INPUTS, **with_model, "order": ORDER, "input_mode": "flat"}
        out[CONTROLLER[4]] = {**sim_t, **LOCKSTEP_INPUTS, **with_model, "order": ORDER, "level": setup["level"],
                              **setup["gains"]}
    else:
        locked = prep["cfg"].locked_joints(prep["urdf"])
        out["geodyn_node"] = {**sim_t, **LOCKSTEP_INPUTS, **model, "order": ORDER, "input_mode": "reference",
                              "output_representation": "body", "locked_joints": ",".join(locked)}
        lv = setup["level"]
        out[CONTROLLER[6]] = {**sim_t, **LOCKSTEP_INPUTS, **with_model, "order": ORDER, "use_feedforward": lv != "pd",
                              "feedforward_order": 2 if lv == "pd" else int(lv[-1]), **setup["gains"]}
    # an empty list has no ROS parameter type (n = 0 joints, no elastic joint): the node's default
    return {name: {k: v for k, v in p.items() if not (isinstance(v, list) and not v)} for name, p in out.items()}


def run_ros_fly(urdf, vehicle, reference: str = "figure8", level: str = "ff2", duration: float = 2.0, *,
                wall_timeout: float | None = None, progress=None, info: dict | None = None, record=None):
    """Run the loop of :func:`node_parameters` (``urdf_path``) over ROS for ``duration`` simulated
    seconds from ``t = 0`` and return the row: a :class:`~geodyn_ros.loops.underactuated.UnderactuatedRow`
    (rank 4; ``log.p`` = the system CoM of the published states) or a
    :class:`~geodyn_ros.loops.actuated.RowResult` (rank 6; ``log.p`` = the base origin), against the
    reference at the same stamps; peaks of the published commands; the controller's clip counts.
    ``info``: filled with ``setup`` (:func:`fly_setup`) and ``diagnostics``. ``wall_timeout``
    [s]: ``RuntimeError`` after that long without a step (default ``60 + 40 x duration``). ``record``: a
    :class:`~geodyn_ros.loops.recording.CdrRecording` the messages are written into as they travel
    (under ``/<level>/``, :mod:`geodyn_ros.ros.loops.mcap_recorder`), with the row's ``/diagnostics``
    status at the end; None: nothing recorded."""
    from geodyn_ros.loops.actuated import RowResult
    from geodyn_ros.loops.underactuated import UnderactuatedRow

    from ..nodes.actuated_controller_node import ActuatedControllerNode
    from ..nodes.actuated_sim_node import ActuatedSimNode
    from .loop_session import LockstepSession
    from ..nodes.flat_controller_node import FlatControllerNode
    from ..nodes.geodyn_node import GeodynNode
    from ..nodes.reference_node import ReferenceNode

    setup = fly_setup(urdf, vehicle, reference, level)
    prep, rank = setup["prep"], setup["rank"]
    params = node_parameters(setup, vehicle, reference, {"urdf_path": os.fspath(Path(urdf).resolve())})
    classes = {"geodyn_actuated_sim": ActuatedSimNode, "geodyn_reference": ReferenceNode, "geodyn_node": GeodynNode,
               CONTROLLER[4]: FlatControllerNode, CONTROLLER[6]: ActuatedControllerNode}
    dt = float(prep["cfg"].control_period)
    with LockstepSession() as run:
        nodes = [run.add(classes[name], p) for name, p in params.items()]
        sim, ctrl_node = nodes[0], nodes[3]
        rec = run.record(sim.model.joint_names, commands=True, diagnostics=True)
        tap = None if record is None else run.tap(record, level)
        end_steps, last, wall = run.spin(sim, duration, dt, wall_timeout=wall_timeout, progress=progress,
                                         what=f"fly loop ({Path(vehicle).name})", wall_per_second=40.0)
        if info is not None:
            info.update(setup=setup, diagnostics=rec.diagnostics)
        log = rec.reference_log(sim.model, last, prep["reference"], ORDER, flat=rank == 4)
        c = ctrl_node.ctrl
        row = UnderactuatedRow if rank == 4 else RowResult
        res = row(level, log, rec.peaks["omega"], rec.peaks["u"], c.rotor_saturations, c.motor_saturations, wall,
                  end_steps * dt)
        if tap is not None:
            from geodyn_ros.loops.fly import row_statuses
            tap.write_diagnostics(row_statuses({level: res}, rank, Path(vehicle).stem))
        return res


def _launch_parameters(argv) -> int:
    """``launch-parameters URDF VEHICLE REFERENCE LEVEL OUT``: write the parameter file of
    ``fly.launch.py`` (keyed by node name; ``robot_description`` is the launch file's) to OUT and
    print one JSON line ``{"rank", "controller", "parameters"}``; a refusal: one line on stderr,
    exit status 2."""
    import yaml
    from geodyn_ros.loops.fly import Refused, check_reference, unreadable_vehicle
    urdf, vehicle, reference, level, out = argv
    try:
        if not Path(urdf).is_file():
            raise Refused(f"urdf: {urdf}: no such file")
        if not Path(vehicle).is_file():
            raise unreadable_vehicle(vehicle)     # geodyn_fly's line (the vehicle loader's)
        check_reference(reference)
        reference = reference if reference in ("figure8", "hover") else os.fspath(Path(reference).resolve())
        setup = fly_setup(urdf, vehicle, reference, level or "ff2")
    except ValueError as exc:
        print(f"fly.launch.py: refused: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    params = node_parameters(setup, vehicle, reference, {})
    Path(out).write_text(yaml.safe_dump({k: {"ros__parameters": v} for k, v in params.items()}, sort_keys=False))
    print(json.dumps({"rank": setup["rank"], "controller": CONTROLLER[setup["rank"]], "parameters": out}))
    return 0


def main(argv=None) -> int:
    """``python -m geodyn_ros.ros.loops.fly_closed_loop``: fly a vehicle over ROS (and compare)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["launch-parameters"]:
        if len(argv) != 6:
            print("usage: launch-parameters URDF VEHICLE REFERENCE LEVEL OUT", file=sys.stderr)
            return 2
        return _launch_parameters(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m geodyn_ros.ros.loops.fly_closed_loop", description=__doc__.split("\n")[0])
    ap.add_argument("--urdf", required=True, help="the robot's URDF or xacro")
    ap.add_argument("--vehicle", required=True, help="the vehicle file (YAML, schema 1)")
    ap.add_argument("--reference", default="figure8", help="figure8 (default), hover or a mission file")
    ap.add_argument("--level", default="ff2", help="rigid|pd, ff0, ff1 or ff2 (default ff2)")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds from t = 0 (default 2)")
    ap.add_argument("--record", metavar="FILE.mcap", help="write the messages of the flight, as they travel, to "
                    "this MCAP file (ROS 2 schemas, topics under /<level>/; Foxglove opens it)")
    ap.add_argument("--compare", action="store_true", help="also fly in-process (geodyn_fly, preroll 0) and print "
                    "the largest difference of the two trajectories and both wall times")
    args = ap.parse_args(argv)
    if not (np.isfinite(args.duration) and args.duration > 0):
        ap.error("--duration: must be > 0")
    recording = None
    if args.record is not None:
        from geodyn_ros.loops.recording import CdrRecording, check_record_path
        try:
            check_record_path(args.record)
            import mcap.writer  # noqa: F401
        except ValueError as exc:
            print(f"refused: {exc}", file=sys.stderr)
            return 2
        except ImportError:
            print(f"refused: {args.record}: record: the MCAP writer is not installed; pip install mcap",
                  file=sys.stderr)
            return 2
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")
    from geodyn_ros.loops.fly import fly
    from .actuated_closed_loop import compare_logs
    from .loop_session import close_recording, loop_failure, loop_failures
    info: dict = {}
    try:
        if args.record is not None:
            recording = CdrRecording(args.record, summary={
                "vehicle": args.vehicle, "urdf": args.urdf, "reference": args.reference, "level": args.level,
                "duration_s": args.duration, "preroll_s": 0.0, "source": "ROS 2 loop (fly_closed_loop), as travelled",
                "time_base": "simulated time, t = 0 at the simulator's start",
                "rows": "the level under its namespace /<level>/; /diagnostics global"})
        res = run_ros_fly(args.urdf, args.vehicle, args.reference, args.level, args.duration, info=info,
                          record=recording)
    except (ValueError, FileNotFoundError) as exc:
        print(f"refused: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except loop_failures() as exc:      # one line, no traceback: a stalled loop (1), a failed recording (2)
        return loop_failure(ap.prog, exc)
    finally:
        closed = close_recording(recording, ap.prog)
    if closed:
        return closed
    r = res.log.rms()
    print(f"ROS 2, {args.level}, {args.duration:g} s: position RMS {r['position_m']:.3e} m, "
          f"wall {res.wall_time_s:.1f} s ({len(res.log.t)} samples)")
    if args.compare:
        t0 = time.monotonic()
        ip = fly(info["setup"]["prep"], [args.level], duration=args.duration, preroll=0.0)[args.level]
        wall = time.monotonic() - t0
        d = compare_logs(res.log, ip.log)
        print(f"in-process: position RMS {ip.log.rms()['position_m']:.3e} m, wall {wall:.1f} s")
        print(f"ROS vs in-process over {d['samples']} stamps: position {d['max_position_diff_m']:.3e} m, "
              f"attitude {d['max_attitude_diff_deg']:.3e} deg, joints {d['max_joint_diff_deg']:.3e} deg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
