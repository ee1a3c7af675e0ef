"""``geodyn_fly``: fly YOUR aerial manipulator (a URDF + one vehicle file) in MuJoCo, every level.

::

    geodyn_fly --urdf X --vehicle Y [--reference hover|figure8|FILE [--slow-down]] [--levels ...]
               [--duration S] [--preroll S] [--sensing PROFILE [--sensors FILE] [--seed N]
               [--input-rule twist|imu|imu_model]] [--world NAME [--worlds FILE] [--seed N]]
               [--ground] [--json] [--plot PNG] [--record FILE.mcap [--record-every N]]
    geodyn_fly --vehicle borinot_flying_arm_2        # a shipped vehicle: its URDF is found
    python -m geodyn_ros.loops.fly --where iris      # print a shipped vehicle's URDF path

1. loads the vehicle file (:func:`geodyn_ros.vehicle.load_vehicle`) and the URDF with the rotor
   joints locked (``ActuationConfig.load_model``), then ``ActuationConfig.check``: a vehicle that
   cannot fly (allocation rank below 4 or 5, thrust-to-weight below 1.2, hover above the maximum
   rotor speed, a joint or rotor link not in the URDF, a URDF MuJoCo refuses) is refused in ONE
   line on stderr with exit code 2, before any simulation. A link inertia MuJoCo refuses for the
   triangle inequality is corrected instead, in the simulator and the model alike, and the report
   says so (:meth:`~geodyn_ros.vehicle.ActuationConfig.flight_urdf`); a joint pinned by its URDF
   limits (lower = upper) is locked there;
2. designs the gains from the model (:func:`geodyn_ros.control.gain_design.design_gains`; the
   file's ``gains:`` section if any) and refuses, the same way, gains whose discrete loop is
   unstable at the control period;
3. prints the vehicle report (:mod:`geodyn_ros.loops.vehicle_report`, ``geodyn_vehicle``: mass,
   allocation rank and controller, hover speeds, thrust-to-weight, tilt or lateral acceleration,
   yaw authority, gains with bandwidths and the discrete margins);
4. flies the levels in MuJoCo (:class:`~geodyn_ros.sim.ActuatedSim`: gz-sim's rotor lag, the
   file's rigid or series-elastic joints) at the file's control period, on the reference of
   :mod:`geodyn_ros.loops.fly_references` (scaled to the vehicle): allocation rank 4 (a collinear
   multirotor) runs the flatness controller's ``rigid, ff0, ff1, ff2``
   (:func:`~geodyn_ros.loops.underactuated.simulate_underactuated`, the error is the system CoM's),
   rank 6 (fully actuated) the actuated controller's ``pd, ff0, ff1, ff2``
   (:func:`~geodyn_ros.loops.actuated.simulate_actuated`, the error is the base origin's). A line
   per row as it finishes (:class:`~geodyn_ros.loops.report.RowProgress`), then the table
   (<= 100 columns): position RMS and max [m], attitude and joint RMS [deg], peak rotor speed
   against the maximum [rad/s], peak joint torque [N m], clipped commands (rotor/joint).
   A row whose state leaves a physical bound (:class:`~geodyn_ros.loops.sensed.DivergenceGuard`)
   stops there and prints one line (time and quantity) instead of numbers.

``--sensing PROFILE`` (``perfect``, ``mocap``, ``onboard`` of ``config/sensors.yaml``, or of
``--sensors FILE``): the controller reads sensor streams instead of the exact state
(:mod:`geodyn_ros.loops.sensed`; seeded by ``--seed``), brought to the control time by
``--input-rule`` (:mod:`geodyn_ros.control.sensing`: ``imu`` where the profile has an IMU
stream, else ``twist``); ``--ground``: every level starts on the ground, takes off, flies and
lands (scored in flight only).

``--world NAME`` (a world of ``config/world.yaml``, or of ``--worlds FILE``;
:mod:`geodyn_ros.sim.world`): the simulator is not the model: its links, rotors and joints are
perturbed as the world's ``model_error`` draws them with ``--seed`` (the draw is printed, one line
per link, rotor constant and joint constant, before any flight), and wind, drag and pushes act on
it; the controller keeps the URDF and the vehicle file. A line per level then gives the mean
position error (the steady offset a model error leaves); ``--json`` adds it (``mean_error_m``)
and the draw (``world``). A world naming a link the URDF lacks is refused in one line.

A mission file on a rank 4 vehicle is first checked on the whole body
(:func:`~geodyn_ros.loops.fly_references.check_mission`: every limit of the vehicle file, through
:meth:`geodyn_ros.planning.Vehicle.from_files`); a worst margin below 0 is refused in one line
(margin, limit, time) with exit code 2 before any simulation, or with ``--slow-down`` slowed down
uniformly until it keeps every limit (the line says by how much).

``--record FILE.mcap``: the flight as an MCAP file with ROS 2 schemas, every level in it under its
own namespace (``/ff2/odom``, ...; :mod:`geodyn_ros.loops.recording`, doc/howto/record.md): state,
reference, feedforward, commands at every control step (``--record-every N``: one in N) and the
rows' ``/diagnostics``; Foxglove opens it. A path that cannot be written (a FIFO or a device such
as ``/dev/full`` too) is refused before any simulation; a write error while flying (a full disk)
stops the flight with one line and exit code 2, the partial file kept as ``<stem>.partial.mcap``.

``--json``: one JSON object on stdout instead (``vehicle``, ``report``, ``rows``,
``mission_check``). ``--plot PNG``: the position error of every row against time. Exit codes: 0
flown; 2 refused (bad argument, bad vehicle file, a vehicle that cannot fly, unstable gains, a
mission beyond its limits) or a recording that could not be written; 1 a row that diverged
(stopped at a physical bound).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from geodyn_ros.model.joint_losses import JOINT_LOSS_MODES
from geodyn_ros.vehicle.shipped import SHIPPED_URDFS, example_robot_data_dir, shipped_vehicle_files

from .recording import RecordingError

__all__ = ["LEVELS", "SHIPPED_URDFS", "shipped_vehicle", "example_robot_data_dir", "resolve", "prepare",
           "fly", "format_rows", "main"]

#: the levels per allocation rank (the table's rows, in order)
LEVELS = {4: ("rigid", "ff0", "ff1", "ff2"), 6: ("pd", "ff0", "ff1", "ff2")}
class Refused(ValueError):
    """A vehicle, reference or gain that cannot fly: one line, exit code 2."""


def shipped_vehicle(name: str) -> tuple:
    """``(urdf path, vehicle file path)`` of a shipped vehicle ``name`` (:data:`SHIPPED_URDFS`)."""
    try:
        return shipped_vehicle_files(name)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def unreadable_vehicle(vehicle) -> Refused:
    """The loader's refusal of a vehicle file that cannot be read (the same line as every entry point)."""
    from geodyn_ros.vehicle.schema import read_vehicle_yaml
    try:
        read_vehicle_yaml(vehicle)
    except ValueError as exc:
        return Refused(str(exc))
    return Refused(f"{vehicle}: cannot be read (not a file); give the path of an existing vehicle file")


def resolve(urdf, vehicle) -> tuple:
    """``(urdf, vehicle file)``: paths as given, or a shipped vehicle's name for either."""
    if vehicle is None:
        raise Refused("vehicle: required (a vehicle file, or one of " + ", ".join(SHIPPED_URDFS) + ")")
    if not Path(vehicle).is_file():
        if vehicle not in SHIPPED_URDFS:
            raise unreadable_vehicle(vehicle)
        s_urdf, vehicle = shipped_vehicle(vehicle)
        urdf = s_urdf if urdf is None else urdf
    if urdf is None:
        raise Refused("urdf: required for a vehicle file that is not shipped (--urdf my_robot.urdf)")
    if not Path(urdf).is_file():
        raise Refused(f"urdf: {urdf}: no such file")
    if not Path(vehicle).is_file():
        raise unreadable_vehicle(vehicle)
    return Path(urdf), Path(vehicle)


def check_reference(reference: str) -> None:
    """Refuse a reference that is neither ``figure8``, ``hover`` nor an existing file: a path (a
    ``.yaml``/``.yml`` name or one with a directory) with the mission loader's line, anything else
    naming the argument."""
    if reference in ("figure8", "hover") or Path(reference).is_file():
        return
    if Path(reference).suffix in (".yaml", ".yml") or os.sep in reference:
        from geodyn_ros.planning.mission import load_mission
        try:
            load_mission(reference)
        except ValueError as exc:
            raise Refused(str(exc)) from None
    raise Refused(f"reference: {reference}: not figure8, hover or an existing mission file")


def _rank(allocation) -> int:
    A = np.asarray(allocation.A, float)
    scale = np.linalg.norm(A, axis=1, keepdims=True)
    scale[scale == 0] = 1.0
    return int(np.linalg.matrix_rank(A / scale, tol=1e-9))


def prepare(urdf, vehicle, *, reference: str = "figure8", slow_down: bool = False, hint: str | None = None) -> dict:
    """Load, check and design; everything :func:`fly` needs, as a dict: ``cfg``, ``model``,
    ``allocation``, ``rank`` (4 or 6), ``design`` (GainDesign), ``reference`` (``f(t, order)``),
    ``reference_duration`` (a mission's length, else None), ``report`` (the summary dict),
    ``mission_check`` (a mission on a rank 4 vehicle: the whole-body check's note and summary,
    :func:`~geodyn_ros.loops.fly_references.check_mission`; else None). Raises :class:`Refused`
    (one line) for anything that cannot fly, a mission beyond the vehicle's limits too (unless
    ``slow_down``: then it is slowed down until it keeps them; ``hint`` says how the caller asks for
    that, default geodyn_fly's ``--slow-down``)."""
    from geodyn_ros.control.gain_design import design_gains
    from geodyn_ros.control.rotors import Allocation
    from geodyn_ros.vehicle import load_vehicle
    from .vehicle_report import vehicle_report
    from .fly_references import REFERENCES, check_mission, fly_reference, joint_swing, mission_reference, vehicle_size

    try:
        cfg = load_vehicle(vehicle)
        model = cfg.load_model(urdf)
        cfg.check(model)
        _, frames = cfg.rotor_frames(model)
        al = Allocation.from_frames(frames, cfg.rotors)
    except ValueError as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    try:      # what MuJoCo refuses of the URDF (after the vehicle layer's corrections): one line, no flight
        from geodyn_ros.sim import ActuatedSim
        ActuatedSim(urdf, cfg, timestep=float(cfg.control_period))
    except ValueError as exc:      # MuJoCo's message, then the element it names
        why = "; ".join(ln.strip() for ln in str(exc).splitlines()[:2])
        raise Refused(f"{urdf}: {why}; fix the URDF") from None
    rank = _rank(al)
    if rank not in LEVELS:
        raise Refused(f"{vehicle}: rotors: allocation rank {rank}; geodyn_fly flies rank 4 (collinear) or 6 "
                      "(fully actuated) vehicles")
    kind = "flatness" if rank == 4 else "actuated"
    try:     # a gains: section the design refuses (a misspelt loop or gain): the file's line
        design = design_gains(model, al, cfg, kind=kind, period=cfg.control_period)
    except ValueError as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    if design.refusals:
        raise Refused(f"{vehicle}: gains: {design.refusals[0]}")
    form = "flat" if rank == 4 else "base"
    checked = None
    if reference in REFERENCES:
        ref = fly_reference(reference, vehicle_size(frames), joint_swing(urdf, model.joint_names), kind=form)
        ref_duration = None
    else:
        try:
            plan = None
            if rank == 4:     # the whole-body check through the flat map (of a collinear vehicle)
                from geodyn_ros.planning import Vehicle
                plan, note, summary = check_mission(reference, model.joint_names, Vehicle.from_files(urdf, vehicle),
                                                    slow_down=slow_down, **({"hint": hint} if hint else {}))
                checked = {"note": note, "summary": summary}
            ref, ref_duration = mission_reference(reference, model.joint_names, kind=form, plan=plan)
        except ValueError as exc:
            raise Refused(str(exc).splitlines()[0]) from None
    return {"cfg": cfg, "model": model, "allocation": al, "rank": rank, "design": design, "reference": ref,
            "reference_duration": ref_duration, "report": vehicle_report(urdf, vehicle, period=cfg.control_period),
            "urdf": Path(urdf), "vehicle": Path(vehicle), "mission_check": checked}


def fly(prep: dict, levels=None, *, duration: float | None = None, preroll: float | None = None,
        progress=None, sensing=None, record=None, world=None, world_seed: int = 0, rejection=None,
        joint_losses: str = "off") -> dict:
    """Fly ``levels`` (default all of the rank's) of a :func:`prepare`-d vehicle; ``{row: result}``
    (:class:`~geodyn_ros.loops.underactuated.UnderactuatedRow` or
    :class:`~geodyn_ros.loops.actuated.RowResult`). duration [s] scored (default: a mission's
    length, else 16 s); preroll [s] on the reference before t = 0 (default the loops' 5 s);
    progress: a :class:`~geodyn_ros.loops.report.RowProgress` or None; sensing: a
    :class:`~geodyn_ros.loops.sensed.Sensing` or None (the exact state); record: a
    :class:`~geodyn_ros.loops.recording.McapRecording` every level is recorded into (its own
    namespace ``/<level>/``), or None; world: a :class:`geodyn_ros.sim.world.World` every level flies
    in, drawn with ``world_seed`` (the same draw for every level), or None (the simulator is the model);
    rejection: the :class:`~geodyn_ros.control.rejection.RejectionOptions` every level's controller
    flies with, or None (the controllers of the tables, bit for bit); joint_losses: ``"off"``
    (default), ``"plant"`` or ``"compensated"`` (the URDF's joint damping and friction in the
    simulator, and in the controller's feedforward: :data:`geodyn_ros.model.joint_losses.JOINT_LOSS_MODES`)."""
    rank = prep["rank"]
    levels = LEVELS[rank] if levels is None else tuple(levels)
    for lv in levels:
        if lv not in LEVELS[rank]:
            raise Refused(f"levels: {lv!r} is not a level of a rank {rank} vehicle ({', '.join(LEVELS[rank])})")
    if duration is None:
        duration = prep["reference_duration"] or 16.0
    kw = dict(config=prep["cfg"], source=prep["urdf"], gains=prep["design"].gains,
              timestep=float(prep["cfg"].control_period), reference=prep["reference"])
    if preroll is not None:
        kw["preroll"] = preroll
    if sensing is not None:
        kw["sensing"] = sensing
    if world is not None:
        kw["world"], kw["world_seed"] = world, world_seed
    if rejection is not None:
        kw["rejection"] = rejection
    if joint_losses != "off":
        kw["joint_losses"] = joint_losses
    if rank == 4:
        from .underactuated import simulate_underactuated as run
    else:
        from .actuated import simulate_actuated as run
    out = {}
    for lv in levels:
        res = run(lv, duration, progress=None if progress is None else progress.step,
                  **kw, **({} if record is None else {"record": record.row(lv)}))
        out[lv] = res
        if progress is not None:
            r = res.log.rms()
            progress.done(lv, res.simulated_s, f"diverged: {res.diverged}" if res.diverged else
                          f"{'CoM' if rank == 4 else 'base'} RMS {r['position_m']:.2e} m")
    return out


def _metrics(res) -> dict:
    if res.diverged:
        return {"diverged": res.diverged}
    r = res.log.rms()
    return {"position_rms_m": r["position_m"], "position_max_m": r["max_position_m"],
            "attitude_rms_deg": r["attitude_deg"], "joint_rms_deg": r["joint_deg"],
            "rotor_speed_peak_rad_s": float(res.rotor_speed_peak), "joint_torque_peak_nm": float(res.motor_torque_peak),
            "rotor_saturations": int(res.rotor_saturations), "joint_saturations": int(res.motor_saturations),
            "real_time_factor": res.simulated_s / res.wall_time_s if res.wall_time_s > 0 else math.inf}


def mean_error(res) -> np.ndarray:
    """(3,) [m] the mean position error (actual - reference, world axes) over the scored window: the
    steady offset a model error leaves."""
    return (res.log.p - res.log.p_d).mean(axis=0)


def format_offsets(rows: dict, rank: int) -> str:
    """One line per flown row: the mean position error (the steady offset) [mm], world x, y, z."""
    what = "CoM" if rank == 4 else "base"
    return "\n".join(f"{name}: mean {what} error [{', '.join(f'{1e3 * x:+.2f}' for x in mean_error(res))}] mm"
                     for name, res in rows.items() if not res.diverged)


def format_rows(rows: dict, rank: int, max_rot_velocity: float) -> str:
    """The table (<= 100 columns) of ``{row: result}``."""
    from .report import text_table
    what = "CoM" if rank == 4 else "base"
    cols = [("row", "", 3), (f"{what} RMS", "[m]", 9), (f"{what} max", "[m]", 9), ("att RMS", "[deg]", 9),
            ("joint RMS", "[deg]", 9), ("omega pk", "[rad/s]", 5), ("u peak", "[N m]", 6), ("clips", "rot/jnt", 5),
            ("realtime", "[x]", 5)]
    body = []
    for name, res in rows.items():
        if res.diverged:
            continue
        m = _metrics(res)
        body.append([name, f"{m['position_rms_m']:.3e}", f"{m['position_max_m']:.3e}", f"{m['attitude_rms_deg']:.3e}",
                     f"{m['joint_rms_deg']:.3e}" if res.log.q.shape[1] else "-",
                     f"{m['rotor_speed_peak_rad_s']:.0f}", f"{m['joint_torque_peak_nm']:.3f}",
                     f"{m['rotor_saturations']}/{m['joint_saturations']}", f"{m['real_time_factor']:.2f}"])
    return (f"max rotor speed {max_rot_velocity:g} rad/s; clips: commands cut to the rotor speed and joint "
            f"torque limits\n" + text_table(cols, body)
            + "".join(f"\n{n}  diverged: {r.diverged}" for n, r in rows.items() if r.diverged))


def _plot(path, rows: dict, rank: int) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # Okabe-Ito colours (colour-blind safe), the loop figures' order: baseline, ff0, ff1, ff2
    styles = (("#D55E00", "--"), ("#E69F00", "-."), ("#0072B2", ":"), ("#009E73", "-"))
    fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    for (name, res), (c, ls) in zip(rows.items(), styles):
        ax.semilogy(res.log.t, np.maximum(res.log.position_error(), 1e-12), color=c, ls=ls, lw=1.3, label=name)
    ax.set_xlabel("t [s]")
    ax.set_ylabel(f"{'CoM' if rank == 4 else 'base'} error [m]")
    ax.legend(ncols=len(rows), loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _check_record(path, every: int) -> None:
    """Refuse (one line) a ``--record`` path that cannot be written, a ``--record-every`` below 1,
    or a recording without its writer installed, before any simulation."""
    from .recording import check_record_path
    try:
        check_record_path(path)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    if every < 1:
        raise Refused(f"record-every: expected an integer >= 1, got {every}")
    try:
        import mcap_ros2.writer  # noqa: F401
    except ImportError:
        raise Refused(f"{path}: record: the MCAP writer is not installed; pip install mcap-ros2-support") from None


def _start_recording(args, prep: dict, reference: str, duration: float, preroll: float):
    """The :class:`~geodyn_ros.loops.recording.McapRecording` of ``--record`` (its metadata: the flight)."""
    from .recording import McapRecording
    try:
        return McapRecording(args.record, every=args.record_every, summary={
            "vehicle": prep["vehicle"], "urdf": prep["urdf"], "reference": reference, "duration_s": duration,
            "preroll_s": preroll, "control_period_s": prep["cfg"].control_period, "rank": prep["rank"],
            "record_every": args.record_every,
            "time_base": "simulated time, t = 0 at the start of the scored window (pre-roll not recorded)",
            "rows": "each level under its own namespace /<level>/; /diagnostics global"})
    except ValueError as exc:   # not a regular file after all (open_recording_file's line)
        raise Refused(str(exc)) from None
    except OSError as exc:      # FileNotFoundError: a message package's .msg file (its line says which)
        raise Refused(f"{args.record}: record: {exc}") from None


def row_statuses(rows: dict, rank: int, hardware_id: str, tool: str = "geodyn_fly") -> list:
    """The ``diagnostic_msgs/DiagnosticStatus`` (as dicts) of the flown rows: name ``<tool>/<row>``,
    level OK (flown) or ERROR (diverged), the headline in the message, the metrics as values."""
    out = []
    for name, res in rows.items():
        m = _metrics(res)
        what = "CoM" if rank == 4 else "base"
        msg = f"diverged: {res.diverged}" if res.diverged else f"{what} RMS {m['position_rms_m']:.3e} m"
        values = [{"key": "row", "value": name}, {"key": "diverged", "value": str(bool(res.diverged)).lower()}]
        values += [{"key": k, "value": f"{v:.9g}" if isinstance(v, float) else str(v)} for k, v in m.items()
                   if k != "diverged"]
        out.append({"level": 2 if res.diverged else 0, "name": f"{tool}/{name}", "message": msg,
                    "hardware_id": hardware_id, "values": values})
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="geodyn_fly", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--urdf", help="the robot's URDF or xacro (optional for a shipped vehicle name)")
    p.add_argument("--vehicle", help="the vehicle file (YAML, schema 1) or a shipped name: "
                   + ", ".join(SHIPPED_URDFS))
    p.add_argument("--reference", default="figure8", help="figure8 (default), hover, or a mission YAML file")
    p.add_argument("--slow-down", action="store_true", help="a mission file beyond the vehicle's limits (whole-body "
                   "check, rank 4) is slowed down until it keeps them, instead of refused")
    p.add_argument("--levels", help="comma-separated subset of the rank's levels (rigid|pd, ff0, ff1, ff2)")
    p.add_argument("--duration", type=float, help="scored seconds per level (default: the mission's, else 16)")
    p.add_argument("--preroll", type=float, help="seconds flown on the reference before scoring (default 5)")
    p.add_argument("--sensing", help="a sensor profile (perfect, mocap, onboard of config/sensors.yaml): the "
                   "controller reads sensor streams, not the exact state")
    p.add_argument("--sensors", help="the sensors file the --sensing profile is read from (default config/sensors.yaml)")
    p.add_argument("--input-rule", choices=("twist", "imu", "imu_model"), default=None,
                   help="with --sensing: how the sensed samples are brought to the control time: twist (propagated at "
                   "the sample's held twist), imu (an output predictor on the IMU stream; the default where the "
                   "profile has one), imu_model (the same, with the model's acceleration over the newest IMU "
                   "sample's age)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sensor streams and of the --world draw (default 0)")
    p.add_argument("--world", metavar="NAME", help="fly in a world of config/world.yaml (or of --worlds FILE): model "
                   "error, wind, drag, pushes (exact, cad, thrust_stand, sea, model_error, wind_light, wind_moderate, "
                   "rotor_drag, push_base, ...); the simulator is perturbed, the controller keeps the model; the "
                   "draw of --seed is printed")
    p.add_argument("--worlds", metavar="FILE", help="the world file --world is read from (default config/world.yaml)")
    p.add_argument("--ground", action="store_true", help="start on the ground, take off, fly, land (scored in flight)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the text")
    p.add_argument("--plot", help="write the position error of every level to this PNG")
    p.add_argument("--record", metavar="FILE.mcap", help="write the flight (state, reference, feedforward, "
                   "commands, diagnostics of every level) to this MCAP file with ROS 2 schemas (Foxglove opens it)")
    p.add_argument("--record-every", type=int, default=1, metavar="N",
                   help="record one control step in N (default 1: every step)")
    p.add_argument("--joint-losses", choices=JOINT_LOSS_MODES, default="off",
                   help="the URDF's joint <dynamics damping friction>: off (default: ignored, as by the model), plant "
                   "(simulated, as gz-sim does, not compensated) or compensated (simulated, and their torque added "
                   "to the feedforward)")
    p.add_argument("--where", metavar="NAME", help="print the URDF path of a shipped vehicle and exit")
    return p


def joint_losses_line(prep: dict, mode: str) -> str:
    """One line: the URDF's joint losses and what ``--joint-losses MODE`` does with them."""
    from geodyn_ros.model.joint_losses import joint_losses_from_urdf
    try:
        losses = joint_losses_from_urdf(prep["urdf"], prep["model"].joint_names)
    except ValueError as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    if not losses.active:
        return "joint losses: the URDF gives no joint damping or friction (nothing to simulate or compensate)"
    what = ("compensated in the feedforward (boundary layer "
            f"{losses.friction_velocity:g} rad/s)" if mode == "compensated" else "not compensated")
    from .fly_references import losses_shortfall
    from .underactuated import rigid_effort_limits
    short = losses_shortfall(prep["model"], prep["reference"], prep["rank"], losses,
                             rigid_effort_limits(prep["cfg"], prep["model"], prep["urdf"]),
                             duration=prep["reference_duration"])
    return f"joint losses: simulated, {what}: {losses.describe()}" + (f"; {short}" if short else "")


def main(argv=None) -> int:
    from geodyn_ros.model.inertia import InertiaCorrectionWarning
    with warnings.catch_warnings():     # the report states an inertia correction in its own line
        warnings.simplefilter("ignore", InertiaCorrectionWarning)
        return _main(argv)


def _main(argv) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.where:
            print(shipped_vehicle(args.where)[0])
            return 0
        for name in ("duration", "preroll"):
            v = getattr(args, name)
            if v is not None and not (math.isfinite(v) and v >= (0 if name == "preroll" else 1e-3)):
                raise Refused(f"{name}: expected a finite time{' >= 0' if name == 'preroll' else ' > 0'} [s], "
                              f"got {v!r}")
        if args.record is not None:
            _check_record(args.record, args.record_every)
        urdf, vehicle = resolve(args.urdf, args.vehicle)
        reference = args.reference
        check_reference(reference)
        sensing = None
        if args.sensing is not None or args.ground:
            from geodyn_ros.sim.sensor_file import sensor_profile
            from .sensed import Sensing
            try:
                prof = sensor_profile(args.sensing or "perfect", args.sensors)
            except ValueError as exc:
                raise Refused(str(exc).splitlines()[0]) from None
            if args.seed < 0:
                raise Refused(f"seed: expected an integer >= 0, got {args.seed}")
            try:
                sensing = Sensing(prof, seed=args.seed, ground=args.ground, log=None if args.json else print,
                                  rule=args.input_rule)
            except ValueError as exc:
                raise Refused(f"input-rule: {str(exc).splitlines()[0].removeprefix('rule: ')}") from None
        elif args.input_rule is not None:
            raise Refused("input-rule: needs --sensing PROFILE (the exact state needs no rule)")
        world = None
        if args.worlds is not None and args.world is None:
            raise Refused("world: --worlds FILE needs --world NAME (the world of that file to fly in)")
        if args.world is not None:
            from geodyn_ros.sim.world_file import world_preset
            try:
                world = world_preset(args.world, args.worlds)
            except ValueError as exc:
                raise Refused(str(exc).splitlines()[0]) from None
            if args.seed < 0:
                raise Refused(f"seed: expected an integer >= 0, got {args.seed}")
        prep = prepare(urdf, vehicle, reference=reference, slow_down=args.slow_down)
        drawn = None
        if world is not None:
            try:    # a link the world names that the URDF lacks: refused before any flight
                drawn = world.draw(args.seed, prep["urdf"], prep["cfg"])
            except ValueError as exc:
                raise Refused(str(exc).splitlines()[0]) from None
        losses_line = None if args.joint_losses == "off" else joint_losses_line(prep, args.joint_losses)
        levels = None if not args.levels else tuple(s.strip() for s in args.levels.split(",") if s.strip())
        for lv in levels or ():
            if lv not in LEVELS[prep["rank"]]:
                raise Refused(f"levels: {lv!r} is not a level of a rank {prep['rank']} vehicle "
                              f"({', '.join(LEVELS[prep['rank']])})")
        if not args.json:
            from .vehicle_report import format_report
            print(format_report(prep["report"]), flush=True)
            if prep["mission_check"]:
                print(prep["mission_check"]["note"], flush=True)
            if drawn is not None:
                print("\n".join(drawn.lines()), flush=True)
            if losses_line:
                print(losses_line, flush=True)
        from .report import RowProgress
        duration = args.duration if args.duration is not None else (prep["reference_duration"] or 16.0)
        preroll = 5.0 if args.preroll is None else args.preroll
        todo = LEVELS[prep["rank"]] if levels is None else levels
        steps = max(1, int(round((duration + preroll) / prep["cfg"].control_period)))
        recording = None if args.record is None else _start_recording(args, prep, reference, duration, preroll)
        out = open(os.devnull, "w") if args.json else sys.stdout
        try:
            with RowProgress(todo, steps, out=out, what="level") as prog:
                rows = fly(prep, levels, duration=duration, preroll=preroll, progress=prog, sensing=sensing,
                           record=recording, world=world, world_seed=args.seed, joint_losses=args.joint_losses)
                summary = prog.summary()
            if recording is not None:
                recording.diagnostics(row_statuses(rows, prep["rank"], vehicle.stem))
        finally:
            if out is not sys.stdout:
                out.close()
            if recording is not None:
                recording.close()
    except (Refused, FileNotFoundError) as exc:     # FileNotFoundError: example-robot-data not installed
        print(f"geodyn_fly: refused: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except RecordingError as exc:     # a write error while flying: the flight stops there (the file: partial)
        print(f"geodyn_fly: {exc}", file=sys.stderr)
        return 2
    max_w = float(np.max(prep["cfg"].rotors.per_rotor("max_rot_velocity")))
    diverged = [k for k, r in rows.items() if r.diverged or not np.isfinite(r.log.rms()["position_m"])]
    if args.json:
        json.dump({"vehicle": str(vehicle), "urdf": str(urdf), "reference": reference, "duration_s": duration,
                   "preroll_s": preroll, "report": prep["report"], "gains": prep["design"].as_dict(),
                   "mission_check": prep["mission_check"] and prep["mission_check"]["summary"],
                   "rows": {k: {**_metrics(r), **({"mean_error_m": [float(x) for x in mean_error(r)]}
                                                  if drawn is not None and not r.diverged else {})}
                            for k, r in rows.items()},
                   **({} if drawn is None else {"world": drawn.as_dict()}),
                   **({} if recording is None else {"recording": {"path": str(recording.path),
                                                                  "messages": recording.counts}})},
                  sys.stdout, indent=1, default=float)
        print()
    else:
        print(summary)
        print(format_rows(rows, prep["rank"], max_w))
        if drawn is not None:
            print(format_offsets(rows, prep["rank"]))
    if args.record is not None and not args.json:
        n = sum(recording.counts.values())
        print(f"recording: {recording.path} ({n} messages on {len(recording.counts)} topics, "
              f"{recording.path.stat().st_size / 1e6:.1f} MB)")
    if args.plot:
        p = _plot(args.plot, rows, prep["rank"])
        if not args.json:
            print(f"plot: {p}")
    if diverged:
        print(f"geodyn_fly: diverged: {', '.join(diverged)} (stopped at a physical bound; the table says when "
              "and what)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
