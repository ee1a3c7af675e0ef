"""The under-actuated aerial manipulator over ROS 2: ``geodyn_closed_loop --underactuated``.

Starts, in one process on an ``EventsExecutor`` (every message through rclpy/DDS), the nodes of
``launch/underactuated_sim.launch.py``: ``geodyn_actuated_sim`` with the collinear hexarotor
(``urdf/hexarotor_manipulator.urdf.xacro``, ``config/hexarotor.yaml``: gz-sim's rotor lag, Spong's
elastic joints; lock-step, publishes ``/clock``), ``geodyn_reference`` (``trajectory:
figure_eight``: the flat outputs on ``flat_reference``), ``geodyn_node`` (``input_mode: flat``,
order 2, the rotor-speed feedforward of the allocation) and ``geodyn_flat_controller`` (one row:
``rigid``, ``ff0``, ``ff1`` or ``ff2``), plus a recorder. It runs the figure eight headless from
``t = 0`` with every row started on the reference (state from the flat map, rotors at
``omega_d(0)``, motors at ``theta_d(0)``, ``theta_d'(0)``) and prints the rows like
:mod:`geodyn_ros.examples.underactuated_loop` with ``--preroll 0``. ``--compare`` also runs the
in-process loop (:mod:`geodyn_ros.loops.underactuated`) and prints how far the two trajectories
are apart. Example::

    geodyn_closed_loop --underactuated --duration 10 --rows rigid,ff0,ff1,ff2 --compare
    geodyn_closed_loop --underactuated --duration 0.5 --rows ff2 --sensing mocap --seed 1 --compare

``--sensing PROFILE --seed N`` flies on the simulator's sensor streams with the controller under
``input_policy: latest``, ``cycle: sim_steps`` (:mod:`geodyn_ros.ros.inputs.step_cycles`): the
in-process loops' rule, so ``--compare`` (the in-process loop on the same streams) agrees to rounding.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["flat_start_parameters", "run_ros_underactuated_loop", "ROWS", "main"]

#: rows this loop runs: the in-process table's rows with lagging rotors and elastic joints (the
#: controller's ``level``), and the time-varying LQR (``feedback: lqr``, level ff2) with its gains
#: recomputed in the executor thread every 10 ms of stamps (``lqr``: deterministic, equal to the
#: in-process ``lqr_online`` of :mod:`geodyn_ros.loops.lqr`) or on the background thread
#: (``lqr_thread``, as deployed)
ROWS = ("rigid", "ff0", "ff1", "ff2", "lqr", "lqr_thread")


def flat_start_parameters(config=None, source=None, *, speed: float = 1.0) -> dict:
    """``geodyn_actuated_sim`` parameters that start it on the figure-eight reference at ``t = 0``
    as the in-process loop starts (:func:`geodyn_ros.loops.underactuated.flat_start_state`): base
    pose (x y z qx qy qz qw), REP 105 base twist (linear first, base axes), joints, rotor speeds
    ``omega_d(0)`` and motors at ``theta_d(0)``, ``theta_d'(0)``.

    config : ActuationConfig (default ``config/hexarotor.yaml``); source : the robot with rotor
    links (default ``urdf/hexarotor_manipulator.urdf.xacro``); speed : time scaling of the reference.
    """
    import geodyn_ros as gd
    from geodyn_ros.control.flatness import FlatnessController
    from geodyn_ros.control.rotors import Allocation, load_actuation_config
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    from geodyn_ros.loops.underactuated import flat_start_state, hexarotor_source
    from geodyn_ros.trajectories import figure_eight_reference

    cfg = load_actuation_config("hexarotor") if config is None else config
    src = hexarotor_source() if source is None else source
    model = cfg.load_model(src)
    al = Allocation.from_frames(cfg.rotor_frames(model)[1], cfg.rotors)
    ctrl = FlatnessController(model, al, cfg.rotors, cfg.elastic)
    ref = figure_eight_reference(0.0, 2, speed=speed)
    st = flat_start_state(ctrl, ref, gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2))
    C = st["base_pose"]
    Vb = Ad_inv(C) @ st["base_twist"]
    floats = lambda a: [float(v) for v in a]  # noqa: E731
    return {"initial_base_pose": floats(np.r_[C[:3, 3], matrix_to_quat(C[:3, :3], "xyzw")]),
            "initial_base_twist": floats(np.r_[Vb[3:], Vb[:3]]),
            "initial_joint_positions": floats(st["q"]),
            "initial_joint_velocities": floats(st["qd"]),
            "initial_rotor_speeds": floats(st["rotor_speed"]),
            "initial_motor_positions": floats(st["motor_angle"]),
            "initial_motor_velocities": floats(st["motor_velocity"])}


def run_ros_underactuated_loop(row: str = "ff2", duration: float = 10.0, *, timestep: float = 1e-3,
                               urdf_path: str | None = None, actuation_config: str | None = None, gains=None,
                               speed: float = 1.0, wall_timeout: float | None = None, progress=None,
                               namespace: str = "", frame_prefix: str = "", info: dict | None = None,
                               lqr_parameters: dict | None = None, command_timeout: float = 0.2, record=None,
                               sensing: str = "perfect", sensor_seed: int = 0, sensors_file: str = ""):
    """Run actuated sim + flat reference + ``geodyn_node`` (flat mode) + flat controller over ROS.

    Parameters
    ----------
    record : geodyn_ros.loops.recording.CdrRecording, optional
        The messages are written into it as they travel, under ``/<row>/``, with the row's
        ``/diagnostics`` status at the end (:mod:`geodyn_ros.ros.loops.mcap_recorder`).
    row : ``"rigid"``, ``"ff0"``, ``"ff1"`` or ``"ff2"`` (the controller's ``level``), ``"lqr"`` or
        ``"lqr_thread"`` (:data:`ROWS`; ``geodyn_node`` then also publishes its linearization).
    duration : simulated time [s] from ``t = 0`` (no pre-roll).
    timestep : simulator step = control period [s].
    urdf_path, actuation_config : the robot and its actuation YAML (default the hexarotor's).
    gains : :class:`~geodyn_ros.control.flatness.FlatnessGains`, optional.
    speed : time scaling of the figure eight.
    wall_timeout : ``RuntimeError`` after this many wall seconds without a step (default ``60 + 20 x duration``).
    command_timeout : wall seconds the lock-step simulator waits for the commands of a state
        before it republishes that state (``geodyn_sim``'s parameter; the result must not depend
        on it: a republished state is answered with the command already sent).
    progress : callable(t_sim), about once per simulated second.
    namespace, frame_prefix : of every node (and the recorder).
    lqr_parameters : extra ``geodyn_flat_controller`` parameters of the LQR rows (e.g. ``gain_rate_hz``).
    sensing, sensor_seed, sensors_file : the simulator's sensor streams, as
        :func:`~geodyn_ros.ros.loops.actuated_closed_loop.run_ros_actuated_loop`: the simulator
        publishes a step manifest (``lockstep_cycles: steps``) and the controller runs
        ``input_policy: latest`` with ``cycle: sim_steps``, the in-process loops' input rule (the
        same samples, the same result to rounding); the log is the simulator's exact state.
    info : dict, optional, filled with ``sim`` (the simulator node, destroyed on return),
        ``lqr_stats`` (the LQR rows' :class:`~geodyn_ros.control.lqr.OnlineGains` ``stats``),
        ``diagnostics`` (every ``DiagnosticStatus`` received), ``rotor_feedforward`` (stamp ->
        ``omega_d^(0..r)`` of ``feedforward/rotor_speeds``, ``geodyn_msgs/RotorSpeeds``) and ``motor_states``; the LQR rows
        also ``lqr_gain_chain`` (the stamp [s] of every gain computed, in order) and
        ``lqr_gains_used`` (step stamp [ns] -> sequence number of the gain that step used): with a
        gain thread they depend on the wall clock, and
        ``simulate_case("lqr_online", ..., gain_record=(chain, used))`` replays exactly them.

    Returns
    -------
    geodyn_ros.loops.underactuated.UnderactuatedRow
        The published states at every step (the CoM computed from them with
        ``gd.center_of_mass``) against the exact reference at the same stamps; peaks of the
        published (clipped) commands; the controller's clip counts.
    """
    from geodyn_msgs.msg import RotorSpeeds

    from geodyn_ros.control.flatness import FlatnessGains
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.underactuated import UnderactuatedRow, hexarotor_source
    from geodyn_ros.trajectories import figure_eight_reference

    from ..nodes.actuated_sim_node import ActuatedSimNode
    from .actuated_closed_loop import step_cycle_inputs
    from .loop_session import LOCKSTEP_INPUTS, LockstepSession
    from ..nodes.flat_controller_node import GAINS, FlatControllerNode
    from ..nodes.geodyn_node import GeodynNode
    from ..wire.typed import decode_typed_rotor_speeds
    from ..nodes.reference_node import ReferenceNode
    from ..common.runtime import control_qos

    if row not in ROWS:
        raise ValueError(f"row: expected one of {ROWS}, got {row!r}")
    urdf = str(urdf_path or hexarotor_source())
    cfg_path = str(actuation_config or _hexarotor_yaml())
    cfg = load_actuation_config(cfg_path)
    gains = FlatnessGains() if gains is None else gains
    with LockstepSession(namespace) as run:
        sim_t, fp = {"use_sim_time": True}, {"frame_prefix": frame_prefix}
        start = flat_start_parameters(cfg, urdf, speed=speed)
        sensed = {"sensing": sensing, "sensor_seed": int(sensor_seed), "sensors_file": sensors_file,
                  "lockstep_cycles": "steps" if sensing != "perfect" else "odom"}
        sim = run.add(ActuatedSimNode, {"urdf_path": urdf, "actuation_config": cfg_path, "timestep": timestep,
                                        "lockstep": True, "command_timeout": float(command_timeout), **fp, **start,
                                        **sensed})
        inputs = LOCKSTEP_INPUTS
        if sim.suite is not None:
            sim.truth = {0: (sim.sim.base_pose(), sim.sim.q().copy())}   # the start state (step 0)
            inputs = {"input_policy": "latest", "sensor_reliability": "reliable", **step_cycle_inputs(sim.profile)}
        run.add(ReferenceNode, {**sim_t, "order": 2, "trajectory": "figure_eight", "speed": float(speed)})
        lqr = row.startswith("lqr")
        run.add(GeodynNode, {**sim_t, **fp, **LOCKSTEP_INPUTS, "urdf_path": urdf, "order": 2, "input_mode": "flat",
                             "actuation_config": cfg_path, "publish_linearization": lqr})
        if lqr:
            law = {"feedback": "lqr", "level": "ff2", "gain_thread": row == "lqr_thread", "control_period": timestep,
                   **(lqr_parameters or {})}
        else:
            law = {"level": row, **{k: (list(getattr(gains, k)) if k in ("kp_rotation", "kd_rotation")
                                        else float(getattr(gains, k))) for k in GAINS}}
        ctrl_node = run.add(FlatControllerNode, {**sim_t, **fp, **inputs, "urdf_path": urdf,
                                                 "actuation_config": cfg_path, "order": 2, **law})
        model = ctrl_node.model
        gain_chain, gains_used = [], {}
        if lqr:   # record which gains were computed and used (the thread's progress is wall clock)
            ctrl_node.online.history, ctrl_node.ctrl.gain_log = gain_chain, gains_used
        rec = run.record(model.joint_names, motor_states=True, commands=True, diagnostics=True)
        tap = None if record is None else run.tap(record, row)
        ffw: dict[int, np.ndarray] = {}

        def on_ffw(msg):
            stamp, om, _ = decode_typed_rotor_speeds(msg)
            ffw[stamp] = om

        rec.node.create_subscription(RotorSpeeds, "feedforward/rotor_speeds", on_ffw, control_qos(100))
        end_steps, last, wall = run.spin(sim, duration, timestep, wall_timeout=wall_timeout, progress=progress,
                                         what="under-actuated loop")
        if info is not None:
            info.update(sim=sim, diagnostics=rec.diagnostics, motor_states=rec.motors, rotor_feedforward=ffw,
                        lqr_stats=dict(ctrl_node.online.stats) if ctrl_node.online is not None else None,
                        lqr_gain_chain=gain_chain, lqr_gains_used=gains_used)
        log = rec.reference_log(model, last, lambda t, order: figure_eight_reference(t, order, speed=speed), 2,
                                flat=True, truth=sim.truth)
        cc = ctrl_node.ctrl
        res = UnderactuatedRow(row, log, rec.peaks["omega"], rec.peaks["u"], cc.rotor_saturations,
                               cc.motor_saturations, wall, end_steps * timestep)
        if tap is not None:
            from geodyn_ros.loops.fly import row_statuses
            tap.write_diagnostics(row_statuses({row: res}, 4, "hexarotor", "geodyn_closed_loop"))
        return res


def _hexarotor_yaml() -> str:
    from geodyn_ros.control.rotors import default_actuation_config_path
    return str(default_actuation_config_path().parent / "hexarotor.yaml")


def main(argv=None) -> int:
    """``geodyn_closed_loop --underactuated``: run the rows, print the table (and the comparison)."""
    ap = argparse.ArgumentParser(prog="geodyn_closed_loop --underactuated", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds from t = 0 (default 10)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)}")
    ap.add_argument("--timestep", type=float, default=1e-3, help="sim/control period [s] (default 1e-3)")
    ap.add_argument("--speed", type=float, default=1.0, help="time scaling of the figure eight (default 1)")
    ap.add_argument("--config", default=None, help="actuation YAML (default config/hexarotor.yaml)")
    ap.add_argument("--compare", action="store_true",
                    help="also run the in-process loop (loops.underactuated, no pre-roll) and print the difference")
    ap.add_argument("--json-out", default=None, help="write the rows' metrics (and comparisons) to this JSON file")
    from .actuated_closed_loop import (add_sensing_options, compare_logs, parse_rows, parse_sensing,
                                       print_comparison, write_json)
    add_sensing_options(ap)
    from .loop_session import (add_record_option, add_ros_options, check_ros_options, close_recording, isolate_unless,
                               loop_failure, loop_failures, open_recording)
    add_ros_options(ap, "frame_prefix of the link frame ids, e.g. robot1/")
    add_record_option(ap)
    args = ap.parse_args(argv)
    check_ros_options(ap, args)
    rows = parse_rows(ap, args.rows, ROWS)
    if not (args.duration > 0 and args.timestep > 0 and args.speed > 0):
        ap.error("--duration, --timestep and --speed must be > 0")
    sensing = parse_sensing(ap, args)
    if sensing is not None and any(r.startswith("lqr") for r in rows):
        ap.error("--sensing: the lqr rows run on the exact state only; choose from rigid, ff0, ff1, ff2")
    isolate_unless(args.no_isolate)
    from geodyn_ros.control.flatness import FlatnessGains
    from geodyn_ros.control.rotors import load_actuation_config
    from geodyn_ros.loops.underactuated import format_table as _table
    from geodyn_ros.loops.lqr import simulate_case
    from geodyn_ros.loops.underactuated import simulate_underactuated
    try:
        cfg = load_actuation_config(args.config or "hexarotor")
    except ValueError as exc:
        ap.error(f"--config: {exc}")
    recording = open_recording(ap, args, {"loop": "geodyn_closed_loop --underactuated", "duration_s": args.duration,
                                          "timestep_s": args.timestep, "speed": args.speed, "rows": ",".join(rows)})
    results, inproc, cmp = {}, {}, {}
    try:
        for r in rows:
            t0 = time.monotonic()
            print(f"running {r} over ROS: {args.duration:g} s simulated ...", flush=True)
            info = {}
            results[r] = run_ros_underactuated_loop(r, args.duration, timestep=args.timestep,
                                                    actuation_config=args.config, speed=args.speed,
                                                    namespace=args.namespace, frame_prefix=args.frame_prefix,
                                                    info=info, record=recording, sensing=args.sensing,
                                                    sensor_seed=args.seed, sensors_file=args.sensors or "")
            print(f"  done in {time.monotonic() - t0:.1f} s wall ({len(results[r].log.t)} samples)", flush=True)
            if args.compare:
                if r.startswith("lqr"):   # "lqr": the node's schedule emulated; "lqr_thread": the gains it used
                    gains = (info["lqr_gain_chain"], info["lqr_gains_used"]) if r == "lqr_thread" else None
                    inproc[r] = simulate_case("lqr_online", "nominal", args.duration, preroll=0.0, speed=args.speed,
                                              timestep=args.timestep, config=cfg, gain_record=gains)
                else:
                    inproc[r] = simulate_underactuated(r, args.duration, speed=args.speed, timestep=args.timestep,
                                                       config=cfg, preroll=0.0, sensing=sensing)
                cmp[r] = compare_logs(results[r].log, inproc[r].log)
    except loop_failures() as exc:      # one line, no traceback: a stalled loop (1), a failed recording (2)
        return loop_failure(ap.prog, exc)
    finally:
        closed = close_recording(recording, ap.prog)
    if closed:
        return closed
    obj = {r: res.metrics() for r, res in results.items()}
    how = "" if sensing is None else f", sensing {args.sensing} (seed {args.seed})"
    print(f"\nFigure eight x{args.speed:g}, {args.duration:g} s from t = 0 (no pre-roll){how}, {1 / args.timestep:g} Hz "
          f"lock-step, MuJoCo RK4 with rotor lag and elastic joints, over ROS 2 (rclpy EventsExecutor), gains "
          f"{FlatnessGains()}")
    print(_table(obj))
    if args.compare:
        print(f"\nthe same rows in-process (geodyn_ros.loops.underactuated, preroll 0, {args.duration:g} s)")
        print(_table({r: m.metrics() for r, m in inproc.items()}))
        print_comparison(cmp, "CoM [m]")
    if args.json_out:
        out = {r: {"ros": obj[r], **({"in_process": inproc[r].metrics(), "difference": cmp[r]} if r in cmp else {})}
               for r in obj}
        write_json(args.json_out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
