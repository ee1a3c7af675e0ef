"""The actuated aerial manipulator over ROS 2: ``geodyn_closed_loop --actuated``.

Starts, in one process on an ``EventsExecutor`` (every message through rclpy/DDS), the nodes of
``launch/actuated_sim.launch.py``: ``geodyn_actuated_sim`` (MuJoCo with the rotors' motor lag
and the series-elastic joints, lock-step, publishes ``/clock``), ``geodyn_reference`` (Table 3),
``geodyn_node`` (order 2, ``output_representation: body``, rotor joints locked) and
``geodyn_actuated_controller`` (one row: ``pd``, ``ff0``, ``ff1`` or ``ff2``), plus a recorder;
runs Table 3 headless from its start (``t = 0``, actuators on the reference: rotors at
``omega_d(0)``, motors at ``theta_d(0)``, ``theta_d'(0)``) and prints the rows like the
in-process table of :mod:`geodyn_ros.examples.actuated_loop` (its ``--preroll 0`` runs).
``--compare`` also runs the in-process loop and prints how far the two trajectories are apart.
``--sensing PROFILE --seed N`` flies on the simulator's sensor streams (each sample published at
its simulated delivery time, :mod:`geodyn_ros.ros.nodes.sim_node`) with the simulator's step
manifest (``lockstep_cycles: steps``) and the controller under ``input_policy: latest``,
``cycle: sim_steps`` (:mod:`geodyn_ros.ros.inputs.step_cycles`): the in-process loops' rule, so
``--compare`` (the in-process loop on the same streams, same seed) agrees to rounding
(``doc/tutorials/sensing_table.md``, "Over ROS 2"). Example::

    geodyn_closed_loop --actuated --duration 10 --rows pd,ff0,ff1,ff2 --compare
    geodyn_closed_loop --actuated --duration 0.5 --rows ff2 --sensing mocap --seed 1 --compare
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

__all__ = ["actuated_start_parameters", "run_ros_actuated_loop", "compare_logs", "ROWS", "main"]

#: rows this loop runs (the in-process table's actuated rows)
ROWS = ("pd", "ff0", "ff1", "ff2")
_LEVEL = {"pd": None, "ff0": 0, "ff1": 1, "ff2": 2}


def actuated_start_parameters(config=None, source=None) -> dict:
    """``geodyn_actuated_sim`` parameters that start it on the Table 3 reference at ``t = 0``:
    the values of :func:`~geodyn_ros.ros.loops.closed_loop.table3_start_parameters` (base pose, REP 105
    twist, joints) plus ``initial_rotor_speeds`` =
    ``omega_d(0)`` (:meth:`ActuatedController.rotor_reference` of the body wrench jet) and
    ``initial_motor_positions`` / ``velocities`` = ``theta_d(0)``, ``theta_d'(0)``
    (:meth:`ActuatedController.motor_reference`), as the in-process loop starts.

    config : ActuationConfig (default ``config/tilthex.yaml``); source : robot with rotor links
    (default ``urdf/tilthex_manipulator.urdf.xacro``).
    """
    import geodyn_ros as gd
    from geodyn_ros.control.actuated import ActuatedController
    from geodyn_ros.control.rotors import Allocation, load_actuation_config
    from geodyn_ros.loops.actuated import tilthex_source
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    from geodyn_ros.trajectories import table3_reference

    cfg = load_actuation_config() if config is None else config
    src = tilthex_source() if source is None else source
    model = cfg.load_model(src)
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names)
    ref = table3_reference(0.0, 2)
    res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
    Wb = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body")
    om0, _ = ctrl.rotor_reference(Wb)
    th0, thd0 = ctrl.motor_reference(ref.q, res.tau)
    C = ref.base_pose
    Vb = Ad_inv(C) @ ref.base_twist[0]
    floats = lambda a: [float(v) for v in a]  # noqa: E731
    return {"initial_base_pose": floats(np.r_[C[:3, 3], matrix_to_quat(C[:3, :3], "xyzw")]),
            "initial_base_twist": floats(np.r_[Vb[3:], Vb[:3]]),   # REP 105: linear first, base axes
            "initial_joint_positions": floats(ref.q[0]),
            "initial_joint_velocities": floats(ref.q[1]),
            "initial_rotor_speeds": [float(v) for v in om0],
            "initial_motor_positions": [float(v) for v in th0],
            "initial_motor_velocities": [float(v) for v in thd0]}


def run_ros_actuated_loop(row: str = "ff2", duration: float = 10.0, *, timestep: float = 1e-3,
                          urdf_path: str | None = None, actuation_config: str | None = None, gains=None,
                          wall_timeout: float | None = None, progress=None, namespace: str = "",
                          frame_prefix: str = "", info: dict | None = None, command_timeout: float = 0.2,
                          sensing: str = "perfect", sensor_seed: int = 0, sensors_file: str = "", record=None):
    """Run actuated sim + reference + geodyn_node + actuated controller over ROS.

    Parameters
    ----------
    record : geodyn_ros.loops.recording.CdrRecording, optional
        The messages are written into it as they travel, under ``/<row>/``, with the row's
        ``/diagnostics`` status at the end (:mod:`geodyn_ros.ros.loops.mcap_recorder`).
    row : ``"pd"``, ``"ff0"``, ``"ff1"`` or ``"ff2"``
        The controller's level (``use_feedforward`` false, ``feedforward_order`` 0, 1, 2).
    duration : float
        Simulated time [s] from ``t = 0`` (no pre-roll).
    timestep : float
        Simulator step = control period [s].
    urdf_path : str, optional
        Robot with rotor links (default ``urdf/tilthex_manipulator.urdf.xacro``).
    actuation_config : str, optional
        Actuation YAML of the simulator and the controller (default ``config/tilthex.yaml``).
    gains : geodyn_ros.control.TrackingGains, optional
    wall_timeout : float, optional
        ``RuntimeError`` after this many wall seconds without a step (default ``60 + 20 x duration``).
    command_timeout : float
        The lock-step simulator's ``command_timeout`` [wall s], as in
        :func:`~geodyn_ros.ros.loops.closed_loop.run_ros_closed_loop` (the result does not depend on it).
    progress : callable(t_sim), optional
        Called about once per simulated second.
    sensing, sensor_seed, sensors_file : str, int, str
        The simulator's sensor streams (:mod:`geodyn_ros.ros.nodes.sim_node`): a profile other
        than ``perfect`` publishes ``odom`` and ``joint_states`` as its seeded streams, each sample
        at its simulated delivery time; the simulator then publishes its step manifest and the
        controller runs ``input_policy: latest`` with ``cycle: sim_steps`` (:func:`step_cycle_inputs`:
        the in-process rule, a command per step), and the log is the simulator's exact state at
        every step (:attr:`SimNode.truth`).
    namespace : str
        Namespace of the five nodes (and the recorder), e.g. ``robot1``; ``""`` = the root. A
        namespace ROS refuses raises :class:`~geodyn_ros.ros.common.params.ConfigurationError`.
    frame_prefix : str
        ``frame_prefix`` parameter of the simulator, ``geodyn_node`` and the controller.
    info : dict, optional
        Filled with ``sim`` (the :class:`~geodyn_ros.ros.nodes.actuated_sim_node.ActuatedSimNode`,
        destroyed on return: read its plain attributes only), ``diagnostics`` (every
        ``DiagnosticStatus`` received) and ``motor_states`` (stamp -> (theta, theta', effort)).

    Returns
    -------
    geodyn_ros.loops.actuated.RowResult
        The simulator's published states at every step against the exact Table 3 reference at
        the same stamps; peaks of the *published* (clipped) commands; the controller's clip counts.
    """
    from geodyn_ros.control.feedback import TrackingGains
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.actuated import RowResult, tilthex_source

    from ..nodes.actuated_controller_node import ActuatedControllerNode
    from ..nodes.actuated_sim_node import ActuatedSimNode
    from .loop_session import LOCKSTEP_INPUTS, LockstepSession
    from ..nodes.geodyn_node import GeodynNode
    from ..nodes.reference_node import ReferenceNode
    from ..inputs.tracking_inputs import GAINS

    if row not in ROWS:
        raise ValueError(f"row: expected one of {ROWS}, got {row!r}")
    level = _LEVEL[row]
    urdf = str(urdf_path or tilthex_source())
    cfg_path = str(actuation_config or "")
    cfg = load_actuation_config(cfg_path or None)
    gains = TrackingGains() if gains is None else gains
    with LockstepSession(namespace) as run:
        sim_t, fp = {"use_sim_time": True}, {"frame_prefix": frame_prefix}
        start = actuated_start_parameters(cfg, urdf)
        sensed = {"sensing": sensing, "sensor_seed": int(sensor_seed), "sensors_file": sensors_file,
                  "lockstep_cycles": "steps" if sensing != "perfect" else "odom"}
        sim = run.add(ActuatedSimNode, {"urdf_path": urdf, "actuation_config": cfg_path, "timestep": timestep,
                                        "lockstep": True, "command_timeout": float(command_timeout), **fp, **start,
                                        **sensed})
        inputs = LOCKSTEP_INPUTS
        if sim.suite is not None:
            sim.truth = {0: (sim.sim.base_pose(), sim.sim.q().copy())}   # the start state (step 0)
            inputs = {"input_policy": "latest", "sensor_reliability": "reliable", **step_cycle_inputs(sim.profile)}
        run.add(ReferenceNode, {**sim_t, "order": 2})
        run.add(GeodynNode, {**sim_t, **fp, **LOCKSTEP_INPUTS, "urdf_path": urdf, "order": 2, "input_mode": "reference",
                             "output_representation": "body", "locked_joints": ",".join(cfg.locked_joints(urdf))})
        ctrl_node = run.add(ActuatedControllerNode, {
            **sim_t, **fp, **inputs, "urdf_path": urdf, "actuation_config": cfg_path, "order": 2,
            "feedforward_order": 2 if level is None else level, "use_feedforward": level is not None,
            **{k: float(getattr(gains, k)) for k in GAINS}})
        rec = run.record(sim.model.joint_names, motor_states=True, commands=True, diagnostics=True)
        tap = None if record is None else run.tap(record, row)
        end_steps, last, wall = run.spin(sim, duration, timestep, wall_timeout=wall_timeout, progress=progress,
                                         what="actuated loop")
        if info is not None:
            info.update(sim=sim, diagnostics=rec.diagnostics, motor_states=rec.motors)
        c = ctrl_node.ctrl
        if sim.truth is not None:
            from geodyn_ros.loops.tracking import TrackingLog
            stamps = sorted(s for s in sim.truth if s <= last)
            log = TrackingLog.from_samples(np.array(stamps, dtype=float) * 1e-9, [sim.truth[s][0] for s in stamps],
                                           [sim.truth[s][1] for s in stamps], sim.model.joint_names)
        else:
            log = rec.table3_log(last)
        res = RowResult(row, log, rec.peaks["omega"], rec.peaks["u"], c.rotor_saturations,
                        c.motor_saturations, wall, simulated_s=end_steps * timestep)
        if tap is not None:
            from pathlib import Path

            from geodyn_ros.loops.fly import row_statuses
            tap.write_diagnostics(row_statuses({row: res}, 6, Path(cfg_path).stem if cfg_path else "tilthex",
                                               "geodyn_closed_loop"))
        return res


def step_cycle_inputs(profile) -> dict:
    """The controller parameters of the in-process input rule (:class:`geodyn_ros.loops.sensed.SensedInputs`)
    for the sensor ``profile``: ``cycle: sim_steps``, the odometry's maximum age = the failsafe's
    timeout (latency + 3 periods unless the profile's failsafe section says otherwise), the joints'
    = latency + 3 periods."""
    from geodyn_ros.control.failsafe import FailsafeConfig
    od, js = profile.odometry, profile.joints
    cfg = profile.failsafe or FailsafeConfig()
    return {"cycle": "sim_steps", "odom_timeout": float(cfg.timeout_for(od.rate, od.latency)),
            "joint_states_max_age": float(js.latency + 3.0 / js.rate)}


def add_sensing_options(ap) -> None:
    """``--sensing``, ``--sensors``, ``--seed`` of the ROS loop runners (:func:`parse_sensing`)."""
    ap.add_argument("--sensing", default="perfect",
                    help="sensor profile of the simulator (perfect, mocap, onboard of the sensors file): odom and "
                         "joint_states become its seeded streams, each sample published at its simulated delivery "
                         "time; the controller runs input_policy latest, cycle sim_steps (default perfect: the "
                         "exact state)")
    ap.add_argument("--sensors", default=None, help="the sensors file of --sensing (default config/sensors.yaml)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sensor streams (default 0)")


def parse_sensing(ap, args):
    """The in-process :class:`~geodyn_ros.loops.sensed.Sensing` of the options of
    :func:`add_sensing_options` (None: perfect); ``ap.error`` (exit 2) for a bad profile or seed."""
    from geodyn_ros.loops.sensed import Sensing
    from geodyn_ros.sim.sensor_file import sensor_profile
    try:
        prof = sensor_profile(args.sensing, args.sensors)
    except ValueError as exc:
        ap.error(f"--sensing: {exc}")
    if args.seed < 0:
        ap.error(f"--seed: expected an integer >= 0, got {args.seed}")
    return None if prof.perfect else Sensing(prof, seed=args.seed, log=None)


def _moving_joints(source) -> tuple:
    import geodyn_ros as gd
    return gd.load_urdf(source).joint_names


def compare_logs(a, b) -> dict:
    """How far two runs' trajectories are apart at their common stamps (1e-9 s grid): max base
    position difference [m], max attitude difference [deg], max joint difference [deg], and the
    number of common samples."""
    from geodyn_ros.lie import log_so3
    ka = {int(round(t * 1e9)): i for i, t in enumerate(a.t)}
    pairs = [(ka[k], j) for j, k in enumerate(int(round(t * 1e9)) for t in b.t) if k in ka]
    if not pairs:
        raise ValueError("the two logs have no common stamp")
    ia, ib = (np.array(v) for v in zip(*pairs))
    dR = [np.linalg.norm(log_so3(Ra.T @ Rb)) for Ra, Rb in zip(a.R[ia], b.R[ib])]
    return {"samples": len(ia),
            "max_position_diff_m": float(np.linalg.norm(a.p[ia] - b.p[ib], axis=1).max()),
            "max_attitude_diff_deg": float(np.degrees(max(dR))),
            "max_joint_diff_deg": float(np.degrees(np.abs(a.q[ia] - b.q[ib]).max(initial=0.0)))}   # 0: no joint


def print_comparison(cmp: dict, position: str) -> None:
    """Print the table of :func:`compare_logs` results ``cmp`` (row -> dict), one line a row;
    ``position``: the heading of the position column (e.g. ``"base pos [m]"``)."""
    print("\nROS loop vs in-process loop, largest difference of the trajectories at the same stamps")
    print(f"{'row':6s} {'samples':>8s} {position:>13s} {'attitude [deg]':>15s} {'joints [deg]':>13s}")
    for r, d in cmp.items():
        print(f"{r:6s} {d['samples']:8d} {d['max_position_diff_m']:13.3e} {d['max_attitude_diff_deg']:15.3e} "
              f"{d['max_joint_diff_deg']:13.3e}")


def parse_rows(ap, text: str, choices, *, allow_none: bool = False) -> list:
    """The rows of the comma-separated option ``--rows`` ``text``; ``ap.error`` (exit status 2)
    for a row not in ``choices`` or, unless ``allow_none``, for no row at all."""
    rows = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in rows if r not in choices]
    if bad or not (rows or allow_none):
        ap.error(f"--rows: unknown rows {bad}; choose from {choices}")
    return rows


def write_json(path: str, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` (making its folder) and print ``json: path``."""
    from pathlib import Path
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=1) + "\n")
    print(f"json: {path}")


def main(argv=None) -> int:
    """``geodyn_closed_loop --actuated``: run the rows, print the table (and the comparison)."""
    ap = argparse.ArgumentParser(prog="geodyn_closed_loop --actuated", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds from t = 0 (default 10)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)}")
    ap.add_argument("--timestep", type=float, default=1e-3, help="sim/control period [s] (default 1e-3)")
    ap.add_argument("--config", default=None, help="actuation YAML (default config/tilthex.yaml)")
    ap.add_argument("--compare", action="store_true",
                    help="also run the in-process loop (examples.actuated_loop, --preroll 0) and print the "
                         "difference of the trajectories")
    ap.add_argument("--json-out", default=None, help="write the rows' metrics (and comparisons) to this JSON file")
    add_sensing_options(ap)
    from .loop_session import (add_record_option, add_ros_options, check_ros_options, close_recording, isolate_unless,
                               loop_failure, loop_failures, open_recording)
    add_ros_options(ap)
    add_record_option(ap)
    args = ap.parse_args(argv)
    check_ros_options(ap, args)
    rows = parse_rows(ap, args.rows, ROWS, allow_none=True)
    if not (args.duration > 0 and args.timestep > 0):
        ap.error("--duration and --timestep must be > 0")
    sensing = parse_sensing(ap, args)
    recording = open_recording(ap, args, {"loop": "geodyn_closed_loop --actuated", "duration_s": args.duration,
                                          "timestep_s": args.timestep, "rows": ",".join(rows)})
    isolate_unless(args.no_isolate)
    from geodyn_ros.control.feedback import TrackingGains
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.actuated import format_table as _table, simulate_actuated

    cfg = load_actuation_config(args.config)
    results, inproc, cmp = {}, {}, {}
    try:
        for r in rows:
            t0 = time.monotonic()
            print(f"running {r} over ROS: {args.duration:g} s simulated ...", flush=True)
            results[r] = run_ros_actuated_loop(r, args.duration, timestep=args.timestep, actuation_config=args.config,
                                               namespace=args.namespace, frame_prefix=args.frame_prefix,
                                               sensing=args.sensing, sensor_seed=args.seed,
                                               sensors_file=args.sensors or "", record=recording)
            print(f"  done in {time.monotonic() - t0:.1f} s wall ({len(results[r].log.t)} samples)", flush=True)
            if args.compare:
                inproc[r] = simulate_actuated(r, args.duration, timestep=args.timestep, config=cfg, preroll=0.0,
                                              sensing=sensing)
                cmp[r] = compare_logs(results[r].log, inproc[r].log)
    except loop_failures() as exc:      # one line, no traceback: a stalled loop (1), a failed recording (2)
        return loop_failure(ap.prog, exc)
    finally:
        closed = close_recording(recording, ap.prog)
    if closed:
        return closed
    how = "" if sensing is None else f", sensing {args.sensing} (seed {args.seed})"
    print(f"\nTable 3 x1, {args.duration:g} s from t = 0 (no pre-roll){how}, {1 / args.timestep:g} Hz lock-step, "
          f"MuJoCo RK4 with rotor lag and elastic joints, over ROS 2 (rclpy EventsExecutor), gains {TrackingGains()}")
    print(_table(results, cfg))
    if args.compare:
        print(f"\nthe same rows in-process (geodyn_ros.examples.actuated_loop --preroll 0 --duration {args.duration:g})")
        print(_table(inproc, cfg))
        print_comparison(cmp, "base pos [m]")
    if args.json_out:
        obj = {r: {"ros": res.metrics(cfg.rotors.max_rot_velocity, cfg.elastic.max_motor_torque),
                   **({"in_process": inproc[r].metrics(cfg.rotors.max_rot_velocity, cfg.elastic.max_motor_torque),
                       "difference": cmp[r]} if r in cmp else {})}
               for r, res in results.items()}
        write_json(args.json_out, obj)
    return 0


if __name__ == "__main__":
    sys.exit(main())
