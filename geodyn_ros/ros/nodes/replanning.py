"""``geodyn_reference``'s missions, planned off the publishing path in a worker process.

Planning a mission (decoding its messages, the minimum-derivative solve, the whole-body check,
the slow-down search, ``planned_path``) takes from milliseconds to seconds (10,000 waypoints:
about 5 s). Done on the thread that publishes the reference, it stopped the reference stream:
100 replans a second gave no ``flat_reference`` at all for 10 s. A worker *thread* does not help:
the planner's compiled kernels and numpy hold the GIL for up to 0.5 s at a time (measured). So
the node hands every mission to one worker **process** (:class:`Replanner`) and keeps
publishing the plan in use; its own work per mission is O(1): the header stamp of the raw
messages, the start state of the plan flying at the switch, and installing the result.

**The switch.** A mission is planned from the running reference at its switch time ``t_s``
(continuous to derivative ``k - 1``, :meth:`geodyn_ros.planning.mission.Mission.plan`) and
installed, only if accepted, as ``(t_s, plan)``: the reference follows it from ``t_s`` on.

* On the wall clock a mission asked for "now" (stamp 0, or a stamp already past) switches at
  ``now + lead``, the **planning lead**: at least :data:`MIN_LEAD_S`, and twice the planning time
  predicted from the last plans (seconds per byte of the messages). A result that comes back
  after its ``t_s`` cannot switch in without a jump; it is planned once more with twice the
  measured time as lead, then refused. Missions that come faster than they are planned are
  **coalesced**: one is planned at a time and the newest waiting one wins; the others are
  counted (``missions_coalesced`` on ``/diagnostics``).
* With ``use_sim_time`` (a lock-step simulator) ``t_s`` is the stamp (or the current simulated
  time), every mission is planned in arrival order, and a ``/clock`` at or after a pending
  ``t_s`` waits for its result: the same plans as planning on the spot, deterministic.

**Bounds**, each refused in one line before any large allocation: a message over
:data:`MAX_MISSION_BYTES` (checked on the node, O(1)), more than :data:`MAX_WAYPOINTS` points, a
mission longer than :data:`MAX_DURATION_S`, a waypoint farther than ``max_position`` from the
origin, a plan whose CoM speed exceeds ``max_speed`` (the node's plausibility limits), and the
worker's address space (:data:`WORKER_MEMORY_BYTES`: a hostile message that makes the decoder
allocate fails there, not on the machine). ``planned_path`` has at most :data:`MAX_PATH_POSES`
poses (its step grows beyond ``path_dt`` for long plans). A worker that dies (crash, memory) is
restarted and the mission it held is refused. A refused mission never replaces the plan in use.
"""
from __future__ import annotations

import signal
import struct
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_MISSION_BYTES", "MAX_WAYPOINTS", "MAX_DURATION_S", "MAX_PATH_POSES", "MIN_LEAD_S",
           "WORKER_MEMORY_BYTES", "WORKER_NICENESS", "PlannerConfig", "Job", "Replanner", "header_stamp_ns", "plan_job",
           "check_bounds"]

#: serialized size of one mission message (10,000 points of either type are under 1.2 MB)
MAX_MISSION_BYTES = 8 * 1024 * 1024
# points of a mission and its length [s]: the bounds of a mission file too (defined there, ROS-free)
from geodyn_ros.planning.mission import MAX_DURATION_S, MAX_WAYPOINTS  # noqa: E402
#: poses of ``planned_path`` (RViz draws it at once; its step is ``max(path_dt, duration / this)``)
MAX_PATH_POSES = 2_000
#: [s] the least planning lead of a mission asked for "now" on the wall clock
MIN_LEAD_S = 0.05
#: the worker process's address space (RLIMIT_AS): the planner of a 10,000-point mission peaks
#: below 1.5 GB with the libraries mapped
WORKER_MEMORY_BYTES = 3 * 1024 ** 3
#: the worker's niceness increment: planning yields the CPU to the publishing node
WORKER_NICENESS = 10


def header_stamp_ns(raw: bytes, topic: str) -> int:
    """The ``header.stamp`` [ns] of a serialized message whose first field is a
    ``std_msgs/Header`` (O(1): the 4-byte encapsulation, then ``int32 sec``, ``uint32 nanosec``).
    ValueError (one line, naming ``topic``) for a buffer too short or of an unknown kind, a
    negative time, or one over :data:`MAX_MISSION_BYTES`."""
    n = len(raw)
    if n > MAX_MISSION_BYTES:
        raise ValueError(f"{topic}: {n} bytes, over the limit of {MAX_MISSION_BYTES} bytes (a mission of "
                         f"{MAX_WAYPOINTS} points takes about 1.2 MB)")
    if n < 12 or raw[0] != 0 or raw[1] > 11:
        raise ValueError(f"{topic}: not a serialized message ({n} bytes)")
    sec, nsec = struct.unpack_from("<iI" if raw[1] & 1 else ">iI", raw, 4)
    if sec < 0 or nsec >= 1_000_000_000:
        raise ValueError(f"{topic}: header.stamp {sec} s {nsec} ns is not a time")
    return sec * 1_000_000_000 + nsec


@dataclass(frozen=True)
class PlannerConfig:
    """What the worker needs, fixed for the node's life (picklable)."""
    order: int
    world_frame: str
    path_dt: float
    min_margin: float
    slow_down: bool
    max_position: float
    max_speed: float
    vehicle_source: tuple | None = None       # (urdf path or XML, vehicle file) of the feasibility check


@dataclass
class Job:
    """One mission to plan: ``parts`` ``{"com_yaw"|"joints": serialized message}``, switch time
    ``start_ns``, ``current`` the plan in use at the switch (its jets, ``FlatReference``) or None,
    ``joint_names`` of the plan (None: the mission's), ``serial`` its number."""
    serial: int
    parts: dict
    start_ns: int
    current: object = None
    joint_names: tuple | None = None
    nbytes: int = 0
    arrival_ns: int = 0           # node clock when it was submitted (lock-step: "now" of the mission)
    retried: bool = False
    dispatched: float = 0.0       # monotonic time it went to the worker


def _decode(parts: dict):
    from rclpy.serialization import deserialize_message
    from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory
    types = {"com_yaw": MultiDOFJointTrajectory, "joints": JointTrajectory}
    out = {}
    for kind, raw in parts.items():
        try:
            out[kind] = deserialize_message(raw, types[kind])
        except Exception as exc:  # noqa: BLE001  (rclpy's error types vary by RMW)
            raise ValueError(f"mission/{kind}: not a valid serialized message ({type(exc).__name__})") from None
        n = len(out[kind].points)
        if n > MAX_WAYPOINTS:
            raise ValueError(f"mission/{kind}: {n} points, over the limit of {MAX_WAYPOINTS}")
    return out


def _path_bytes(traj, t_switch: float, cfg: PlannerConfig) -> bytes:
    """``planned_path`` of ``traj`` from ``t_switch``, serialized (at most :data:`MAX_PATH_POSES` poses)."""
    from rclpy.serialization import serialize_message

    from .mission import path_msg
    dt = max(cfg.path_dt, (traj.end_time - t_switch) / (MAX_PATH_POSES - 1))
    return serialize_message(path_msg(traj, t_switch, cfg.world_frame, dt))


def _norms(rows: np.ndarray) -> np.ndarray:
    """Euclidean norms of the rows of ``rows``, without overflow for entries near 1e300."""
    scale = np.max(np.abs(rows), axis=1, keepdims=True)
    safe = np.where(scale > 0, scale, 1.0)
    return np.linalg.norm(rows / safe, axis=1) * safe[:, 0]


def _check_kinematics(traj, cfg: PlannerConfig) -> None:
    """The plan's CoM within ``max_position`` and its speed within ``max_speed`` at the planner's
    sample times (every segment), else ValueError."""
    from geodyn_ros.planning.feasibility import sample_times
    t = sample_times(traj)
    com, _, _ = traj.jets(t, 1)
    if not np.all(np.isfinite(com)):
        raise ValueError("the plan is not finite")
    r, v = _norms(com[:, 0]), _norms(com[:, 1])
    if r.max() > cfg.max_position:
        raise ValueError(f"the plan's CoM reaches {r.max():.4g} m from the origin, over max_position "
                         f"{cfg.max_position:g} m")
    if v.max() > cfg.max_speed:
        raise ValueError(f"the plan's CoM speed reaches {v.max():.4g} m/s, over max_speed {cfg.max_speed:g} m/s")


def check_bounds(mission, cfg: PlannerConfig) -> None:
    """A decoded mission within the bounds (module docstring), else ValueError in one line."""
    n = len(mission.com)
    if n > MAX_WAYPOINTS + 1:
        raise ValueError(f"mission: {n} waypoints, over the limit of {MAX_WAYPOINTS}")
    if mission.times is not None and float(mission.times[-1]) > MAX_DURATION_S:
        raise ValueError(f"mission: {float(mission.times[-1]):.6g} s long, over the limit of {MAX_DURATION_S:g} s")
    far = float(np.max(_norms(np.asarray(mission.com, float))))
    if not far <= cfg.max_position:
        raise ValueError(f"mission: a CoM waypoint {far:.4g} m from the origin, over max_position "
                         f"{cfg.max_position:g} m")


def plan_job(job: Job, cfg: PlannerConfig, vehicle=None) -> tuple:
    """Plan ``job`` (module docstring): ``("ok", serial, start_ns, plan, path bytes, note, notes,
    waypoints, joint names)`` or ``("refused", serial, reason, notes)``; never raises for a bad mission."""
    from .mission import mission_from_messages
    try:
        msgs = _decode(job.parts)
        names = job.joint_names
        if names is None:
            names = tuple(msgs["joints"].joint_names) if "joints" in msgs else ()
        mission = mission_from_messages(msgs.get("com_yaw"), msgs.get("joints"), joint_names=names,
                                        world_frame=cfg.world_frame, current=job.current)
        check_bounds(mission, cfg)
        t_s = job.start_ns * 1e-9
        traj = mission.plan(t_s, cfg.order, job.current)
        _check_kinematics(traj, cfg)
    except (ValueError, MemoryError, OverflowError) as exc:
        return ("refused", job.serial, _line(exc), {})
    note, notes = "", {}
    if vehicle is not None:
        from geodyn_ros.planning import check_feasibility
        try:
            rep = check_feasibility(vehicle, traj)
        except ValueError as exc:
            return ("refused", job.serial, f"the flat map is undefined along it ({_line(exc)})", {})
        notes = {"worst_margin": f"{rep.worst:+.4f}", "worst_limit": f"{rep.limit} at t = {rep.t_worst:.3f} s"}
        if rep.worst < cfg.min_margin:
            why = (f"worst margin {rep.worst:+.4f} < min_margin {cfg.min_margin:g} at t = {rep.t_worst:.3f} s "
                   f"({rep.limit})")
            if not cfg.slow_down:
                return ("refused", job.serial, why, notes)
            from geodyn_ros.planning.mission import slow_down
            found = slow_down(mission, traj, vehicle, cfg.min_margin, job.current)
            if found is None:
                return ("refused", job.serial, f"{why}, and 1024 times slower too", notes)
            alpha, traj, rep = found
            note = f"; slowed down {alpha!r} times ({why})"
        note += f"; worst margin {rep.worst:+.4f} at t = {rep.t_worst:.3f} s ({rep.limit})"
        notes = {"worst_margin": f"{rep.worst:+.4f}", "worst_limit": f"{rep.limit} at t = {rep.t_worst:.3f} s"}
    return ("ok", job.serial, job.start_ns, traj, _path_bytes(traj, t_s, cfg), note, notes, len(traj.times),
            tuple(mission.joint_names))


def _line(exc) -> str:
    from ..common.diagnostics import clip
    return clip(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 300)


def _worker_main(fd: int) -> None:   # pragma: no cover (runs in the child process)
    """The worker process (``python -m geodyn_ros.ros.nodes.replanning <fd>``): SIGINT and SIGTERM
    ignored (the node ends it), the address space limited, its niceness raised; then the
    :class:`PlannerConfig`, and one job at a time until the connection closes."""
    import os
    import resource
    from multiprocessing.connection import Connection
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ValueError, OSError):
        pass
    try:   # below the node: on a busy machine the reference stream is served first
        os.nice(WORKER_NICENESS)
    except OSError:
        pass
    conn = Connection(fd)
    try:
        cfg = conn.recv()
        vehicle = None
        if cfg.vehicle_source is not None:
            from geodyn_ros.planning import Vehicle
            vehicle = Vehicle.from_files(*cfg.vehicle_source)
        conn.send(("ready",))
        while True:
            job = conn.recv()
            if job is None:
                return
            try:
                conn.send(plan_job(job, cfg, vehicle))
            except MemoryError:
                conn.send(("refused", job.serial, f"the planner ran out of its {WORKER_MEMORY_BYTES >> 20} MB", {}))
    except (EOFError, OSError, KeyboardInterrupt):
        return


class Replanner:
    """The node's side of the worker process (module docstring). Everything runs on the node's
    executor thread: :meth:`submit` (a mission's raw parts), :meth:`poll` (dispatch and results)."""

    def __init__(self, cfg: PlannerConfig, *, lockstep: bool):
        self.cfg, self.lockstep = cfg, lockstep
        self.coalesced = 0        # missions dropped for a newer one while planning (wall clock)
        self.restarts = 0
        self._serial = 0
        self._queue: list = []    # waiting jobs: the newest only on the wall clock, all in lock-step
        self._busy: Job | None = None
        self._rate = None         # [s/byte] of the last plan (the lead's prediction)
        self._const = 0.0
        self._proc = self._conn = None
        self._ready = False
        self.start()

    # ---------------------------------------------------------------- the process
    def start(self) -> None:
        """Start the worker: ``python -m geodyn_ros.ros.nodes.replanning <fd>`` (no re-import of the
        caller's main module, as multiprocessing's spawn would do), one end of a socket pair as
        its connection, SIGINT and SIGTERM ignored from its first instruction on (inherited across
        exec where this runs in the main thread; a Ctrl-C or launch's stop reaches only the node,
        which ends the worker)."""
        import socket
        import subprocess
        import sys
        from multiprocessing.connection import Connection
        mine, theirs = socket.socketpair()
        old = []
        try:
            old = [(s, signal.signal(s, signal.SIG_IGN)) for s in (signal.SIGINT, signal.SIGTERM)]
        except ValueError:      # not the main thread: the worker ignores them itself, a moment later
            pass
        try:
            proc = subprocess.Popen([sys.executable, "-m", __name__, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                    stdin=subprocess.DEVNULL, close_fds=True)
        finally:
            for sig, handler in old:
                signal.signal(sig, handler)
        theirs.close()
        self._conn = Connection(mine.detach())
        self._conn.send(self.cfg)
        self._proc, self._ready = proc, False

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass
        try:
            self._proc.wait(2.0)
        except Exception:  # noqa: BLE001  (subprocess.TimeoutExpired)
            self._proc.kill()
            try:   # SIGKILL: reaped at once on a quiet machine; a loaded one was seen to take over 1 s
                self._proc.wait(30.0)
            except Exception:  # noqa: BLE001  a node's destruction never raises; the OS reaps it later
                pass
        self._conn.close()
        self._proc = None

    @property
    def busy(self) -> bool:
        return self._busy is not None

    @property
    def pending(self) -> int:
        return len(self._queue) + (self._busy is not None)

    # ---------------------------------------------------------------- jobs
    def lead_ns(self, nbytes: int) -> int:
        """The planning lead [ns] of a mission of ``nbytes`` on the wall clock (module docstring)."""
        pred = self._const + (self._rate or 0.0) * nbytes
        return int(max(MIN_LEAD_S, 2.0 * pred) * 1e9)

    def submit(self, parts: dict, start_ns: int, now_ns: int) -> None:
        """Queue a mission (raw parts) asked to start at ``start_ns`` (node clock; 0: now), arrived
        at ``now_ns``. On the wall clock it replaces the mission waiting, if any (coalesced)."""
        self._serial += 1
        job = Job(self._serial, parts, start_ns, nbytes=sum(len(b) for b in parts.values()), arrival_ns=now_ns)
        if not self.lockstep and self._queue:
            self.coalesced += len(self._queue)
            self._queue.clear()
        self._queue.append(job)

    def due(self, clock_ns: int) -> bool:
        """Lock-step: a mission waiting or being planned whose switch is at or before ``clock_ns``
        (the reference for ``clock_ns`` must wait for it)."""
        jobs = self._queue + ([self._busy] if self._busy is not None else [])
        return any(max(j.start_ns, j.arrival_ns) <= clock_ns for j in jobs)

    def poll(self, now_ns: int, current_at, joint_names, *, wait: float = 0.0) -> list:
        """The results that came back, ``[(job, result)]`` (a late one is planned once more first),
        after dispatching the next waiting mission if the worker is free. ``current_at(t_ns)``: the
        jets of the plan in use at ``t_ns`` (None: none); ``wait`` [s]: wait up to that long for a
        result while a mission is waiting or being planned."""
        out = []
        deadline = time.monotonic() + wait
        while True:
            self._receive(out, now_ns)
            self._dispatch(now_ns, current_at, joint_names)
            left = deadline - time.monotonic()
            if out or left <= 0 or (self._busy is None and not self._queue):
                return out
            self._conn.poll(min(left, 0.05))

    def _receive(self, out: list, now_ns: int) -> None:
        while self._proc is not None:
            try:
                if not self._conn.poll(0):
                    break
                res = self._conn.recv()
            except (EOFError, OSError):
                res = None
            if res is None:
                self._died(out)
                return
            if res[0] == "ready":
                self._ready = True
                continue
            job, self._busy = self._busy, None
            if job is None or job.serial != res[1]:
                continue
            self._learn(job, time.monotonic() - job.dispatched)
            if res[0] == "ok" and not self.lockstep and res[2] <= now_ns:   # too late to switch in without a jump
                if not job.retried:
                    job.retried, job.start_ns = True, 0
                    self._queue.insert(0, job)
                    continue
                res = ("refused", job.serial, "planned after its switch time twice (the machine is too busy for "
                       "this mission's planning lead)", {})
            out.append((job, res))
        if self._proc is not None and self._proc.poll() is not None:
            self._died(out)

    def _dispatch(self, now_ns: int, current_at, joint_names) -> None:
        if self._busy is not None or not self._queue or not self._ready:
            return
        job = self._queue.pop(0)
        if self.lockstep:
            job.start_ns = max(job.start_ns, job.arrival_ns)
        else:
            job.start_ns = max(job.start_ns, now_ns + self.lead_ns(job.nbytes))
        job.current = current_at(job.start_ns)
        job.joint_names = joint_names
        job.dispatched = time.monotonic()
        self._conn.send(job)
        self._busy = job

    def _learn(self, job: Job, seconds: float) -> None:
        """The lead's prediction: a constant and a rate per byte, from the last plan (no averaging:
        the newest mission is the best guess of the next one's size)."""
        if job.nbytes > 4096:
            self._rate = seconds / job.nbytes
        else:
            self._const = seconds

    def _died(self, out: list) -> None:
        """The worker ended (a crash, its memory limit): restart it; the mission it held is refused."""
        job, self._busy = self._busy, None
        self._proc.poll()
        code = self._proc.returncode
        self._conn.close()
        self.restarts += 1
        self.start()
        if job is not None:
            out.append((job, ("refused", job.serial, f"the planner process died while planning it (exit code {code}); "
                              "restarted", {})))


if __name__ == "__main__":   # pragma: no cover (the worker process)
    import sys as _sys
    _worker_main(int(_sys.argv[1]))
