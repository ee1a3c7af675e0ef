"""Two robots on one ROS domain under two namespaces, without crosstalk.

    python -m geodyn_ros.examples.two_robots                 # nodes in this process
    ros2 launch geodyn_ros two_robots.launch.py &             # or: nodes launched for real
    python -m geodyn_ros.examples.two_robots --external       #     and fed from here

Robots (``ROBOTS``): ``/robot1`` runs the paper's aerial manipulator (``urdf/aerial_manipulator.urdf``,
6 joints, base ``base_link``) and ``/robot2`` a quadruped (``urdf/quadruped.urdf``, 12 joints, base
``trunk``), each with ``frame_prefix`` ``<namespace>/``. One ``geodyn_node`` per namespace runs in
``input_mode: measured`` with ``input_policy: exact`` (the feeder below sends odom and joint_states
of one stamp: the answer of a sample is that of its own state).

For every robot a feeder (a node in the robot's namespace, so its topic names are the same
relative names as the node's) publishes

* ``reference`` (``geodyn_msgs/ReferenceJet``, ``child_frame_id`` = ``<frame_prefix><base link>``;
  the nodes' default ``message_types: typed``): the robot's own reference jet. Its higher rows (``V^(1..r+1)``, ``q^(2..r+2)``)
  are fixed per robot, so a reference overtaken by the state of the next sample (two topics, no
  ordering between them) cannot change a result;
* ``odom`` (``child_frame_id`` = ``<frame_prefix><base link>``) and ``joint_states``: a state that
  changes every sample (pose, twist, joint positions and rates),

one sample in flight per robot: the next sample goes out when all three outputs of the previous
one (``feedforward/jet``, ``feedforward/wrench``, ``feedforward/joint_efforts``) have arrived,
or after ``sample_timeout`` seconds (then it counts as lost). Before them, warm-up samples go out
once a second until one is answered (readiness: DDS discovery is not symmetric, so a node may
miss the first messages of a publisher it has not matched yet); they are checked too. Stamps are unique per robot (robot ``k`` uses stamps equal
to ``k`` modulo 1000 ns), so an output with another robot's stamp is crosstalk.

Every output is checked: joint names = the robot's model joints, wrench ``frame_id`` =
``<frame_prefix><base link>``, stamp = one this robot's feeder sent, and values =
``gd.inverse_dynamics`` of the robot's own model on the sample with that stamp (relative
tolerance 1e-12: the node runs the same double-precision kernel on inputs that agree to rounding,
through the odometry quaternion and the body twist). A probe in the root namespace must hear
nothing on ``feedforward/jet``. Exit status 1 if a check fails or a robot got no output.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ROBOTS", "RobotSpec", "RobotRecord", "run_two_robots", "robot_sample", "robot_reference",
           "expected_outputs", "check_record", "main"]

#: relative tolerance of the value check (see the module docstring)
TOL = 1e-12


@dataclass(frozen=True)
class RobotSpec:
    """One robot: its namespace, its URDF (file name in the package's ``urdf/`` or a path) and
    the frame prefix of its link frames."""

    namespace: str
    urdf: str
    frame_prefix: str = ""


ROBOTS = (RobotSpec("robot1", "aerial_manipulator.urdf", "robot1/"),
          RobotSpec("robot2", "quadruped.urdf", "robot2/"))


@dataclass
class RobotRecord:
    """What was sent to and received from one robot's node.

    ``reference``: the (C, V, Q) jets of the reference message (rows used: ``V[1:]``, ``Q[2:]``);
    ``states``: stamp -> (C, V0, q, qd) exactly as sent (C rebuilt from the sent quaternion, V0
    the spatial twist whose body form went on ``odom``); ``jets``/``wrenches``/``efforts``: the
    received messages; ``lost``: samples without all three outputs within the timeout;
    ``warmup``: readiness samples sent before the counted ones (answered: the last one).
    """

    spec: RobotSpec
    model: object
    index: int
    reference: tuple = None
    states: dict = field(default_factory=dict)
    jets: list = field(default_factory=list)
    wrenches: list = field(default_factory=list)
    efforts: list = field(default_factory=list)
    lost: int = 0
    warmup: int = 0

    @property
    def base_frame(self) -> str:
        return self.spec.frame_prefix + self.model.base_link


def _resolve_urdf(urdf: str) -> str:
    from geodyn_ros.model.resources import shipped_urdf
    return urdf if os.sep in urdf or os.path.isfile(urdf) else str(shipped_urdf(urdf))


def robot_reference(model, order: int, index: int):
    """The fixed reference jets of robot ``index``: pose (4, 4), ``V^(0..r+2)`` (r+3, 6; the
    message carries as many twist rows as joint rows, the node uses r+2), ``q^(0..r+2)``
    (r+3, n); deterministic, different per robot."""
    from geodyn_ros.lie import exp_so3
    rng = np.random.default_rng(100 + index)
    C = np.eye(4)
    C[:3, :3] = exp_so3(rng.normal(size=3) * 0.3)
    C[:3, 3] = rng.normal(size=3)
    V = rng.normal(size=(order + 3, 6)) * 0.5
    Q = rng.normal(size=(order + 3, model.n_joints)) * 0.5
    return C, V, Q


def robot_sample(model, k: int, index: int):
    """State ``k`` of robot ``index``: pose ``C`` (rotation rebuilt from its xyzw quaternion, as
    the node reads it), spatial twist ``V0`` (6,), ``q``, ``qd`` (n,)."""
    from geodyn_ros.lie import exp_so3, matrix_to_quat, quat_to_matrix
    t = 0.01 * k
    n = model.n_joints
    j = np.arange(n)
    C = np.eye(4)
    C[:3, :3] = quat_to_matrix(matrix_to_quat(exp_so3(np.array([0.3 * np.sin(t), 0.2 * np.cos(1.3 * t), 0.1 * t])),
                                              "xyzw"), "xyzw")
    C[:3, 3] = (index + np.sin(t), 0.5 * np.cos(t), 1.0 + 0.1 * np.sin(2 * t))
    V0 = 0.3 * np.sin(t + np.arange(6) + index)
    q = 0.4 * np.sin(t * (1.0 + 0.1 * j) + j + index)
    qd = 0.4 * (1.0 + 0.1 * j) * np.cos(t * (1.0 + 0.1 * j) + j + index)
    return C, V0, q, qd


def expected_outputs(model, reference, state, order: int, gravity=(0.0, 0.0, -9.81)):
    """``gd.inverse_dynamics`` of ``model`` on a measured-mode sample: the state's ``C``,
    ``V^(0)``, ``q``, ``qd`` with the reference's higher rows."""
    import geodyn_ros as gd
    _, Vr, Qr = reference
    C, V0, q, qd = state
    V, Q = Vr[: order + 2].copy(), Qr[: order + 3].copy()
    V[0], Q[0], Q[1] = V0, q, qd
    return gd.inverse_dynamics(model, C, V, Q, order, gravity=np.asarray(gravity, dtype=float))


def check_record(rec: RobotRecord, order: int) -> dict:
    """Check every output of one robot (module docstring); returns a summary dict with
    ``outputs`` (complete samples), ``max_rel_error``, ``problems`` (list of strings)."""
    from geodyn_ros.lie import Ad
    from geodyn_ros.ros.wire.conversions import stamp_to_ns
    from geodyn_ros.ros.wire.conversions import InputError
    from geodyn_ros.ros.wire.typed import decode_typed_feedforward
    names = tuple(rec.model.joint_names)
    problems, worst = [], 0.0
    cache = {}

    def want(stamp):
        if stamp not in cache:
            cache[stamp] = expected_outputs(rec.model, rec.reference, rec.states[stamp], order)
        return cache[stamp]

    def rel(a, b):
        return float(np.abs(np.asarray(a) - np.asarray(b)).max()) / max(1.0, float(np.abs(b).max()))

    for m in rec.jets:   # geodyn_msgs/FeedforwardJet, spatial (geodyn_node's default output_representation)
        try:
            st, W, tau, got_names, _ = decode_typed_feedforward(m, representation="spatial",
                                                                child_frame_id=rec.base_frame)
        except InputError as exc:
            problems.append(str(exc))
            continue
        if tuple(got_names) != names:
            problems.append(f"feedforward/jet joint names {got_names} are not the model's {names}")
            continue
        if st not in rec.states:
            problems.append(f"feedforward/jet stamp {st} was not sent to this robot (crosstalk)")
            continue
        w = want(st)
        worst = max(worst, rel(W, w.base_wrench), rel(tau, w.tau))
    for m in rec.wrenches:
        st = stamp_to_ns(m.header.stamp)
        if m.header.frame_id != rec.base_frame:
            problems.append(f"feedforward/wrench frame_id '{m.header.frame_id}' is not '{rec.base_frame}'")
        if st not in rec.states:
            problems.append(f"feedforward/wrench stamp {st} was not sent to this robot (crosstalk)")
            continue
        C = rec.states[st][0]
        Wb = Ad(C).T @ want(st).base_wrench[0]
        got = [m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z, m.wrench.force.x, m.wrench.force.y,
               m.wrench.force.z]
        worst = max(worst, rel(got, Wb))
    for m in rec.efforts:
        st = stamp_to_ns(m.header.stamp)
        if tuple(m.name) != names:
            problems.append(f"feedforward/joint_efforts names {tuple(m.name)} are not the model's {names}")
            continue
        if st not in rec.states:
            problems.append(f"feedforward/joint_efforts stamp {st} was not sent to this robot (crosstalk)")
            continue
        worst = max(worst, rel(m.effort, want(st).tau[0]))
    if worst > TOL:
        problems.append(f"max relative error {worst:.3g} > {TOL:g}")
    complete = len({stamp_to_ns(m.header.stamp) for m in rec.jets} & {stamp_to_ns(m.header.stamp) for m in rec.wrenches}
                   & {stamp_to_ns(m.header.stamp) for m in rec.efforts})
    if complete == 0:
        problems.append("no complete output (jet, wrench and efforts of one sample)")
    return {"outputs": complete, "max_rel_error": worst, "problems": problems}


def run_two_robots(samples: int = 50, *, robots=ROBOTS, order: int = 2, start_nodes: bool = True,
                   node_parameters: dict | None = None, wait_timeout: float = 60.0,
                   sample_timeout: float = 2.0, wall_timeout: float | None = None):
    """Feed ``samples`` samples to each robot's ``geodyn_node`` and record the outputs.

    Parameters
    ----------
    samples : int
        Samples per robot.
    robots : sequence of RobotSpec
    order : int
        ``geodyn_node`` order (in-process nodes) = order of the expected outputs.
    start_nodes : bool
        True: start one ``geodyn_node`` per robot in this process (``input_mode: measured``,
        ``frame_prefix``, ``stale_timeout`` 2 s, plus ``node_parameters``). False: the nodes run
        elsewhere (``two_robots.launch.py``) on the same ROS domain.
    wait_timeout : float
        Seconds to wait for every robot's node to subscribe (a cold launch compiles kernels).
    sample_timeout : float
        A sample whose three outputs are not all back after this long counts as lost.
    wall_timeout : float, optional
        Give up after this long (default ``wait_timeout + samples * sample_timeout * len(robots)``).

    Returns
    -------
    (records, stray) : list of RobotRecord, int
        ``stray``: messages heard on ``feedforward/jet`` in the root namespace.
    """
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from rclpy.context import Context
    from sensor_msgs.msg import JointState
    from geodyn_msgs.msg import FeedforwardJet, ReferenceJet

    import geodyn_ros as gd
    from geodyn_ros.lie import Ad_inv, matrix_to_quat
    from geodyn_ros.ros.wire.conversions import set_stamp, stamp_to_ns
    from geodyn_ros.ros.wire.typed import make_reference_jet
    from geodyn_ros.ros.common.params import parameter_overrides
    from geodyn_ros.ros.common.runtime import control_qos, init_rclpy, make_executor

    wall_timeout = wait_timeout + samples * sample_timeout * len(robots) if wall_timeout is None else wall_timeout
    ctx = Context()
    init_rclpy(context=ctx)
    nodes, records = [], []
    try:
        ex = make_executor(context=ctx)
        root = rclpy.create_node("two_robots_root_probe", context=ctx)
        nodes.append(root)
        stray = []
        root.create_subscription(FeedforwardJet, "feedforward/jet", stray.append, control_qos(10))
        feeders = []
        for i, spec in enumerate(robots, start=1):
            urdf = _resolve_urdf(spec.urdf)
            model = gd.load_urdf(urdf)
            rec = RobotRecord(spec, model, i, reference=robot_reference(model, order, i))
            records.append(rec)
            if start_nodes:
                from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
                params = {"urdf_path": urdf, "order": order, "input_mode": "measured", "input_policy": "exact",
                          "frame_prefix": spec.frame_prefix, "stale_timeout": 2.0, **(node_parameters or {})}
                nodes.append(GeodynNode(namespace=spec.namespace, context=ctx,
                                        parameter_overrides=parameter_overrides(params)))
            fd = rclpy.create_node("two_robots_feeder", namespace=spec.namespace, context=ctx)
            nodes.append(fd)
            qos = control_qos(10)
            pubs = (fd.create_publisher(ReferenceJet, "reference", qos),
                    fd.create_publisher(Odometry, "odom", qos),
                    fd.create_publisher(JointState, "joint_states", qos))
            subs = (fd.create_subscription(FeedforwardJet, "feedforward/jet", rec.jets.append, qos),
                    fd.create_subscription(WrenchStamped, "feedforward/wrench", rec.wrenches.append, qos),
                    fd.create_subscription(JointState, "feedforward/joint_efforts", rec.efforts.append, qos))
            feeders.append((rec, pubs, subs))
        for nd in nodes:
            ex.add_node(nd)

        t0 = time.monotonic()

        def spin(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                ex.spin_once(timeout_sec=min(0.01, max(0.0, end - time.monotonic())))

        def connected():
            return all(p.get_subscription_count() > 0 for _, pubs, _ in feeders for p in pubs) and \
                all(s.get_publisher_count() > 0 for _, _, subs in feeders for s in subs)
        while not connected():
            if time.monotonic() - t0 > wait_timeout:
                missing = [f"/{r.spec.namespace}" for r, pubs, subs in feeders
                           if not (all(p.get_subscription_count() for p in pubs)
                                   and all(s.get_publisher_count() for s in subs))]
                raise RuntimeError(f"no geodyn_node (measured mode) connected in {', '.join(missing)} "
                                   f"within {wait_timeout:g} s")
            spin(0.05)

        def send(rec, pubs, k):
            C, V0, q, qd = robot_sample(rec.model, k, rec.index)
            now = time.time_ns()
            stamp = (now // 1000) * 1000 + rec.index
            last = max(rec.states, default=-1)
            if stamp <= last:
                stamp = last + 1000
            rec.states[stamp] = (C, V0, q, qd)
            Cr, Vr, Qr = rec.reference
            pubs[0].publish(make_reference_jet(stamp, Cr, Vr, Qr, rec.model.joint_names, child_frame_id=rec.base_frame))
            od = Odometry()
            set_stamp(od.header.stamp, stamp)
            od.header.frame_id, od.child_frame_id = "world", rec.base_frame
            p, o = od.pose.pose.position, od.pose.pose.orientation
            p.x, p.y, p.z = (float(v) for v in C[:3, 3])
            o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quat(C[:3, :3], "xyzw"))
            Vb = Ad_inv(C) @ V0
            tw = od.twist.twist
            tw.angular.x, tw.angular.y, tw.angular.z = (float(v) for v in Vb[:3])
            tw.linear.x, tw.linear.y, tw.linear.z = (float(v) for v in Vb[3:])
            js = JointState()
            set_stamp(js.header.stamp, stamp)
            js.name = list(rec.model.joint_names)
            js.position, js.velocity = [float(v) for v in q], [float(v) for v in qd]
            pubs[1].publish(od)
            pubs[2].publish(js)
            return stamp, time.monotonic()

        def done(rec, stamp):
            return (any(stamp_to_ns(m.header.stamp) == stamp for m in rec.jets[-3:])
                    and any(stamp_to_ns(m.header.stamp) == stamp for m in rec.wrenches[-3:])
                    and any(stamp_to_ns(m.header.stamp) == stamp for m in rec.efforts[-3:]))

        # Readiness handshake. DDS matching is not symmetric: our writer may see the node's reader
        # before the node's reader sees our writer, and the node then misses what we send. So
        # warm-up samples (a reference, then a state) go out until one is answered; they are
        # checked like the others (they are in ``states``) but not counted in ``samples``.
        for rec, pubs, _ in feeders:
            while True:
                Cr, Vr, Qr = rec.reference
                pubs[0].publish(make_reference_jet(time.time_ns(), Cr, Vr, Qr, rec.model.joint_names,
                                                   child_frame_id=rec.base_frame))
                spin(0.05)
                rec.warmup += 1
                stamp, when = send(rec, pubs, -rec.warmup)
                while not done(rec, stamp) and time.monotonic() - when < 1.0:
                    spin(0.01)
                if done(rec, stamp):
                    break
                if time.monotonic() - t0 > wait_timeout:
                    raise RuntimeError(f"/{rec.spec.namespace}/geodyn_node did not answer a sample within "
                                       f"{wait_timeout:g} s")
        sent = {id(rec): 0 for rec, _, _ in feeders}
        flight = {}
        while True:
            busy = False
            for rec, pubs, _ in feeders:
                cur = flight.get(id(rec))
                if cur is not None:
                    stamp, when = cur
                    if not done(rec, stamp):
                        if time.monotonic() - when < sample_timeout:
                            busy = True
                            continue
                        rec.lost += 1
                    flight.pop(id(rec))
                if sent[id(rec)] < samples:
                    flight[id(rec)] = send(rec, pubs, sent[id(rec)])
                    sent[id(rec)] += 1
                    busy = True
            if not busy:
                break
            if time.monotonic() - t0 > wall_timeout:
                raise RuntimeError(f"two robots: gave up after {wall_timeout:g} s wall time")
            spin(0.002)
        spin(0.2)   # late or stray messages
        return records, len(stray)
    finally:
        for nd in nodes:
            nd.destroy_node()
        ctx.try_shutdown()


def main(argv=None) -> int:
    """``python -m geodyn_ros.examples.two_robots``; exit status 1 if a check fails."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=50, help="samples per robot (default 50)")
    ap.add_argument("--order", type=int, default=2, help="geodyn_node order (default 2; with --external: "
                    "the launched nodes' order)")
    ap.add_argument("--external", action="store_true",
                    help="do not start the nodes: feed and check nodes started elsewhere (two_robots.launch.py)")
    ap.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the nodes (default 60)")
    ap.add_argument("--no-isolate", action="store_true",
                    help="in-process run: do not set ROS_AUTOMATIC_DISCOVERY_RANGE=OFF")
    args = ap.parse_args(argv)
    if args.samples < 1 or args.order < 0:
        ap.error("--samples must be >= 1 and --order >= 0")
    if not args.external and not args.no_isolate:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "OFF"
    t0 = time.monotonic()
    try:
        records, stray = run_two_robots(args.samples, order=args.order, start_nodes=not args.external,
                                        wait_timeout=args.wait)
    except RuntimeError as exc:
        print(f"two robots: {exc}", file=sys.stderr)
        return 1
    ok = stray == 0
    print(f"{'namespace':10s} {'model':20s} {'joints':>6s} {'base frame':18s} {'sent':>5s} {'outputs':>7s} "
          f"{'lost':>4s} {'max rel err':>11s}  check")
    for rec in records:
        s = check_record(rec, args.order)
        ok = ok and not s["problems"]
        print(f"/{rec.spec.namespace:9s} {rec.model.name:20s} {rec.model.n_joints:6d} {rec.base_frame:18s} "
              f"{len(rec.states):5d} {s['outputs']:7d} {rec.lost:4d} {s['max_rel_error']:11.2e}  "
              f"{'PASS' if not s['problems'] else 'FAIL: ' + '; '.join(s['problems'][:3])}")
    print(f"root namespace feedforward/jet messages: {stray} ({'PASS' if stray == 0 else 'FAIL: crosstalk'})")
    print(f"{'PASS' if ok else 'FAIL'} in {time.monotonic() - t0:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
