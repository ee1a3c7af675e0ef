"""``geodyn_closed_loop``: the simulator-in-the-loop demo in one process, without ``ros2 launch``.

Starts the same four nodes as ``launch/sim.launch.py`` — ``geodyn_sim`` (MuJoCo, lock-step,
publishes ``/clock``), ``geodyn_reference`` (Table 3), ``geodyn_node`` (feedforward) and
``geodyn_controller`` (feedforward + PD) — plus a recorder, in one process on an
``EventsExecutor``, runs the 30 s Table 3 trajectory headless **with and without** the
feedforward (same gains), prints the tracking RMS errors and saves a plot and a CSV.

Every message really goes through rclpy/DDS (topics, QoS, serialization); ``--isolate``
(default) sets ``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF`` so the run neither hears nor disturbs other
ROS graphs on the network. ``--namespace robot1`` (and ``--frame-prefix robot1/``) runs the
five nodes under a namespace, as ``sim.launch.py namespace:=robot1`` does: every topic but
``/clock`` and ``/diagnostics`` moves to ``/robot1/...``. ``--record FILE.mcap`` writes both runs'
messages as they travel into one MCAP file, the run with feedforward under ``/ff0/``, the one
without under ``/pd/`` (:mod:`geodyn_ros.ros.loops.mcap_recorder`). Example::

    geodyn_closed_loop --duration 30 --out out

Exit codes (``--actuated`` and ``--underactuated`` alike): 0 done; 1 the acceptance figures
missed (Table 3), or a loop that stopped advancing (one line ``<command>: <loop> stalled at t =
... s of ... s after ... s wall time (last problems: ...); ...``, no traceback); 2 a refused
option, or a recording that could not be written (a full disk: one line, the partial file kept as
``<stem>.partial.mcap``).
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["run_ros_closed_loop", "table3_start_parameters", "main"]

#: Acceptance figures of the closed loop (issue 3): with feedforward, base position RMS below
#: 1 cm and joint RMS below 0.5 deg; without, at least 10x larger.
BASE_RMS_LIMIT_M = 0.01
JOINT_RMS_LIMIT_DEG = 0.5
MIN_RATIO = 10.0


def table3_start_parameters() -> dict:
    """geodyn_sim parameters (initial_base_pose, initial_base_twist [REP 105], initial_joint_*)
    that start the simulator on the Table 3 reference at t = 0."""
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    from geodyn_ros.loops.tracking import table3_initial_state

    C, V, q, qd = table3_initial_state()
    Vb = Ad_inv(C) @ V
    pose = list(C[:3, 3]) + list(matrix_to_quat(C[:3, :3], "xyzw"))
    return {"initial_base_pose": [float(v) for v in pose],
            "initial_base_twist": [float(v) for v in np.r_[Vb[3:], Vb[:3]]],  # REP 105: linear first
            "initial_joint_positions": [float(v) for v in q],
            "initial_joint_velocities": [float(v) for v in qd]}


def run_ros_closed_loop(duration: float = 30.0, *, use_feedforward: bool = True, order: int = 2,
                        timestep: float = 1e-3, urdf_path: str | None = None, gains=None,
                        wall_timeout: float | None = None, progress=None, namespace: str = "",
                        frame_prefix: str = "", info: dict | None = None, command_timeout: float = 0.2,
                        record=None, row: str = "ff0"):
    """Run sim + reference + geodyn_node + controller over ROS for ``duration`` simulated seconds.

    Parameters
    ----------
    duration : float
        Simulated time [s].
    use_feedforward : bool
        Controller parameter ``use_feedforward`` (the other nodes run either way).
    order : int
        ``geodyn_node`` order (outputs ``W^(0..order)``; the controller uses order 0).
    timestep : float
        Simulator step = control period [s].
    urdf_path : str, optional
        Robot (default: the shipped ``aerial_manipulator.urdf``).
    gains : geodyn_ros.control.TrackingGains, optional
    wall_timeout : float, optional
        Abort with ``RuntimeError`` after this many wall seconds without a step (default ``60 + 20 x duration``).
    command_timeout : float
        Wall seconds the lock-step simulator waits for the commands of a state before it
        republishes that state (``geodyn_sim``'s parameter; the result does not depend on it: a
        republished state is answered with the command already sent).
    progress : callable(t_sim), optional
        Called about once per simulated second.
    namespace : str
        Namespace of all five nodes (``""``: the root); relative names are made absolute. A
        namespace ROS refuses raises :class:`~geodyn_ros.ros.common.params.ConfigurationError`.
    frame_prefix : str
        ``frame_prefix`` parameter of the simulator, ``geodyn_node`` and the controller.
    info : dict, optional
        Filled with ``nodes`` (fully qualified node names) and ``topics`` (every topic of the
        graph the recorder sees at the end, sorted).
    record : geodyn_ros.loops.recording.CdrRecording, optional
        The messages are written into it as they travel, under ``/<row>/``, with the run's
        ``/diagnostics`` status (``geodyn_closed_loop/<row>``: the RMS errors) at the end.

    Returns
    -------
    geodyn_ros.loops.tracking.TrackingLog
        The simulator's published states (``odom``, ``joint_states``) at every step, against
        the exact Table 3 reference at the same stamps.
    """
    from geodyn_ros.control.feedback import TrackingGains
    from geodyn_ros.model.resources import shipped_urdf

    from ..nodes.controller_node import ControllerNode
    from ..nodes.geodyn_node import GeodynNode
    from .loop_session import LOCKSTEP_INPUTS, LockstepSession
    from ..nodes.reference_node import ReferenceNode
    from ..nodes.sim_node import SimNode
    from ..inputs.tracking_inputs import GAINS

    urdf = str(urdf_path or shipped_urdf())
    gains = TrackingGains() if gains is None else gains
    with LockstepSession(namespace) as run:
        sim_t, fp = {"use_sim_time": True}, {"frame_prefix": frame_prefix}
        sim = run.add(SimNode, {"urdf_path": urdf, "timestep": timestep, "lockstep": True,
                                "command_timeout": float(command_timeout), **fp, **table3_start_parameters()})
        run.add(ReferenceNode, {**sim_t, "order": order})
        run.add(GeodynNode, {**sim_t, **fp, **LOCKSTEP_INPUTS, "urdf_path": urdf, "order": order,
                             "input_mode": "reference"})
        run.add(ControllerNode, {**sim_t, **fp, **LOCKSTEP_INPUTS, "urdf_path": urdf, "use_feedforward": use_feedforward,
                                 **{k: float(getattr(gains, k)) for k in GAINS}})
        rec = run.record(sim.model.joint_names)
        tap = None if record is None else run.tap(record, row)
        _, last, _ = run.spin(sim, duration, timestep, wall_timeout=wall_timeout, progress=progress,
                              what="closed loop")
        if info is not None:
            info["nodes"] = [nd.get_fully_qualified_name() for nd in run.nodes]
            info["topics"] = sorted(name for name, _ in rec.node.get_topic_names_and_types())
        log = rec.table3_log(last)
        if tap is not None:
            rms = log.rms()
            tap.write_diagnostics([{"level": 0, "name": f"geodyn_closed_loop/{row}", "hardware_id": "table3",
                                    "message": f"base RMS {rms['position_m']:.3e} m",
                                    "values": [{"key": "row", "value": row}, {"key": "diverged", "value": "false"}]
                                    + [{"key": k, "value": f"{v:.9g}"} for k, v in rms.items()]}])
        return log


def _plot(logs: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for label, log in logs.items():
        axes[0].semilogy(log.t, np.maximum(log.position_error(), 1e-12), label=label)
        axes[1].semilogy(log.t, np.maximum(np.degrees(log.attitude_error()), 1e-12), label=label)
        axes[2].semilogy(log.t, np.maximum(np.degrees(np.abs(log.joint_error()).max(axis=1)), 1e-12),
                         label=label)
    axes[0].set_ylabel("base position error [m]")
    axes[1].set_ylabel("attitude error [deg]")
    axes[2].set_ylabel("max joint error [deg]")
    axes[2].set_xlabel("t [s]")
    axes[0].set_title("Table 3 tracking in MuJoCo over ROS 2: feedforward + PD vs PD only")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    """Console script ``geodyn_closed_loop``; exit status 1 if the acceptance figures fail.
    ``--actuated`` runs the actuated loop instead (:mod:`geodyn_ros.ros.loops.actuated_closed_loop`,
    its own options: ``geodyn_closed_loop --actuated --help``), ``--underactuated`` the
    under-actuated one (:mod:`geodyn_ros.ros.loops.underactuated_closed_loop`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--actuated" in argv and "--underactuated" in argv:
        print("geodyn_closed_loop: --actuated and --underactuated are two different loops; choose one",
              file=sys.stderr)
        return 2
    if "--actuated" in argv:
        from .actuated_closed_loop import main as actuated_main
        return actuated_main([a for a in argv if a != "--actuated"])
    if "--underactuated" in argv:
        from .underactuated_closed_loop import main as underactuated_main
        return underactuated_main([a for a in argv if a != "--underactuated"])
    from .loop_session import (add_record_option, add_ros_options, check_ros_options, close_recording, isolate_unless,
                               loop_failure, loop_failures, open_recording)
    ap = argparse.ArgumentParser(prog="geodyn_closed_loop", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=30.0, help="simulated seconds (default 30)")
    ap.add_argument("--order", type=int, default=2, help="geodyn_node order (default 2)")
    ap.add_argument("--timestep", type=float, default=1e-3, help="sim/control period [s] (default 1e-3)")
    ap.add_argument("--out", default="out", help="output directory for the plot and CSV")
    ap.add_argument("--no-plot", action="store_true", help="skip the PNG")
    ap.add_argument("--actuated", action="store_true",
                    help="the actuated loop (rotor lag, elastic joints; own options: --actuated --help)")
    ap.add_argument("--underactuated", action="store_true",
                    help="the under-actuated loop (collinear hexarotor, flat map; own options: --underactuated --help)")
    add_ros_options(ap)
    add_record_option(ap, "both runs' messages (ff0: with feedforward, pd: without)")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.timestep <= 0:
        ap.error("--duration and --timestep must be > 0")
    check_ros_options(ap, args)
    recording = open_recording(ap, args, {"loop": "geodyn_closed_loop (Table 3)", "duration_s": args.duration,
                                          "timestep_s": args.timestep, "row ff0": "with feedforward",
                                          "row pd": "without feedforward"})
    isolate_unless(args.no_isolate)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logs, rms = {}, {}
    try:
        for label, ff in (("with feedforward", True), ("without feedforward", False)):
            t0 = time.monotonic()
            print(f"running {label}: {args.duration:g} s simulated ...", flush=True)
            log = run_ros_closed_loop(args.duration, use_feedforward=ff, order=args.order,
                                      timestep=args.timestep, namespace=args.namespace,
                                      frame_prefix=args.frame_prefix, record=recording, row="ff0" if ff else "pd")
            logs[label], rms[label] = log, log.rms()
            print(f"  done in {time.monotonic() - t0:.1f} s wall ({len(log.t)} samples)", flush=True)
    except loop_failures() as exc:      # one line, no traceback: a stalled loop (1), a failed recording (2)
        return loop_failure(ap.prog, exc)
    finally:
        closed = close_recording(recording, ap.prog)
    if closed:
        return closed
    w, wo = rms["with feedforward"], rms["without feedforward"]
    print(f"\nTable 3 tracking, {args.duration:g} s, {1 / args.timestep:g} Hz lock-step, MuJoCo RK4, "
          f"over ROS 2 (rclpy EventsExecutor)")
    print(f"{'':22s}{'base pos RMS [m]':>18s}{'attitude RMS [deg]':>20s}{'joint RMS [deg]':>17s}"
          f"{'max joint [deg]':>17s}")
    for label in logs:
        r = rms[label]
        print(f"{label:22s}{r['position_m']:18.3e}{r['attitude_deg']:20.3e}{r['joint_deg']:17.3e}"
              f"{r['max_joint_deg']:17.3e}")
    ratio_p = wo["position_m"] / max(w["position_m"], 1e-300)
    ratio_q = wo["joint_deg"] / max(w["joint_deg"], 1e-300)
    print(f"{'ratio without/with':22s}{ratio_p:18.3g}{'':20s}{ratio_q:17.3g}")
    ok_with = w["position_m"] < BASE_RMS_LIMIT_M and w["joint_deg"] < JOINT_RMS_LIMIT_DEG
    ok_ratio = ratio_p >= MIN_RATIO and ratio_q >= MIN_RATIO
    print(f"\nwith feedforward: base RMS < {BASE_RMS_LIMIT_M * 100:g} cm and joint RMS < "
          f"{JOINT_RMS_LIMIT_DEG:g} deg: {'PASS' if ok_with else 'FAIL'}")
    print(f"without feedforward at least {MIN_RATIO:g}x larger (both): {'PASS' if ok_ratio else 'FAIL'}")
    with open(out / "closed_loop_rms.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["run"] + list(w))
        for label in logs:
            wr.writerow([label] + [f"{v:.6e}" for v in rms[label].values()])
    if not args.no_plot:
        _plot(logs, out / "closed_loop_tracking.png")
        print(f"plot: {out / 'closed_loop_tracking.png'}")
    print(f"csv:  {out / 'closed_loop_rms.csv'}")
    return 0 if ok_with and ok_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
