"""``geodyn_node`` on asynchronous sensor streams, ``input_policy: latest`` (issue 42 items 1 and 3).

The headline (``test_async_streams_every_odom_answered``, also with both cores busy): the node runs
as its own process (measured mode, defaults: the typed ``geodyn_msgs`` messages), the streams of ``bench/ros/async_sensors.py`` come from
another process (odom 250 Hz, joint_states 500 Hz 1.3 ms later, reference 100 Hz, each on its own
clock: offset, rate error, jitter; 1-5 % of each dropped, seeded; best-effort publishers, as sensor
drivers), and this process records ``feedforward/jet`` and ``~/inputs_used``. Checked:

* the node publishes for at least 99 % of the odom messages sent (those the link dropped and those
  the publisher skipped for being over 20 ms late on a loaded machine were never sent) in the
  run's window, less those that never reached it (the node's ``accepted[odom]`` on
  ``/diagnostics`` below the count sent: best-effort datagrams the OS dropped under load), one output per odom, stamped with it (before issue 42 the stamp pairing answered
  1-22 % of them: it waited for equal stamps);
* every output equals ``gd.inverse_dynamics`` of the inputs its ``~/inputs_used`` record names,
  taken from the publisher's own log of what it sent and propagated here with code of this file
  (scipy's ``Rotation``; not :mod:`geodyn_ros.control.sensing`): the joints by ``q + dt qdot`` over
  ``dt = t_cycle - t_joint_states``, within ``joint_states_max_age`` (20 ms); the reference's rows
  above the state, of a reference sent and admitted by the rule (stamped at most
  ``sync_tolerance`` after the cycle, at most ``stale_timeout`` before);
* each record would catch a wrong sample: the answer with the joints held instead of propagated
  differs from the published one by more than 100 times the tolerance wherever the age is over
  0.5 ms (so the comparison can fail).

``test_timer_cycle_propagates_the_odometry_too`` (``rate_hz > 0``, simulated time): the cycle's time
is the node clock, the odom is propagated with its twist (``R(t) = expm(dt hat(w)) R``,
``p + dt (v + w x p)``, here with scipy's ``expm``), and an odom older than ``odom_max_age`` is
refused with a ``/diagnostics`` line.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ros_harness import Harness, joint_states_msg, odometry_msg, read_feedforward, stop_process  # noqa: I100 (ROS env first)

from diagnostic_msgs.msg import DiagnosticArray
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock as ClockMsg
from scipy.linalg import expm
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import geodyn_ros as gd
from geodyn_ros.model.resources import shipped_urdf
from geodyn_ros.ros.inputs.latest_inputs import decode_inputs_used
from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
from geodyn_ros.ros.wire.typed import make_reference_jet
from geodyn_ros.trajectories import table3_reference

ROOT = Path(__file__).resolve().parents[3]
URDF = str(shipped_urdf())
MODEL = gd.load_urdf(URDF)
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
ORDER = 2
MAX_AGE_NS = 20_000_000       # joint_states_max_age, the default
STALE_NS = 500_000_000        # stale_timeout given to the node
TOL_NS = 400_000              # sync_tolerance, the default
# The node and this file compute the same quantities along different float paths (the quaternion
# to a matrix, Ad, the propagation): ~1e-16 relative on inputs of size <= 10, amplified by the
# dynamics to ~1e-14 of the largest output. 1e-10 is 4 orders above that; a sample of another time,
# or a held instead of a propagated one, changes the outputs by >= 1e-7 relative (checked per record).
TOL = 1e-10


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _pose(vals):
    """The odometry pose (4, 4) of published values ``(p, quat xyzw, w_b, v_b)``, via scipy."""
    C = np.eye(4)
    C[:3, :3] = Rotation.from_quat(vals[3:7]).as_matrix()   # scalar-last, as REP 103's xyzw
    C[:3, 3] = vals[:3]
    return C


def _spatial_twist(C, w_b, v_b):
    """``(w, v)`` in world axes about the world origin of the body twist ``(w_b, v_b)`` at ``C``."""
    R, p = C[:3, :3], C[:3, 3]
    w = R @ w_b
    return np.r_[w, np.cross(p, w) + R @ v_b]


def _expected(odom_vals, js_vals, ref_data, dt_js: float, dt_odom: float = 0.0, hold: bool = False):
    """``gd.inverse_dynamics`` of the state: the odom (propagated over ``dt_odom`` [s] with scipy's
    ``expm``), the joints propagated over ``dt_js`` [s] (held with ``hold``), the reference's rows
    above them (the jet's data decoded here: 9 header values, then 5 rows of 6 + 6)."""
    C = _pose(odom_vals)
    V0 = _spatial_twist(C, odom_vals[7:10], odom_vals[10:13])
    if dt_odom:
        w, v, p = V0[:3], V0[3:], C[:3, 3].copy()
        C[:3, :3] = expm(dt_odom * _hat(w)) @ C[:3, :3]
        C[:3, 3] = p + dt_odom * (v + np.cross(w, p))
    body = np.asarray(ref_data[9:]).reshape(ORDER + 3, 12)
    V, Q = body[: ORDER + 2, :6].copy(), body[: ORDER + 3, 6:].copy()
    V[0] = V0
    q, qd = js_vals[:6], js_vals[6:]
    Q[0] = q if hold else q + dt_js * qd
    Q[1] = qd
    return gd.inverse_dynamics(MODEL, C, V, Q, ORDER)


def _ref_data(ref):
    """The reference's numbers as :func:`_expected` reads them (the layout's doubles: 9 header
    values, then rows ``V^(k)``, ``q^(k)``), from the trajectory itself (not from a message)."""
    K1 = ORDER + 3
    return np.r_[np.zeros(9), np.hstack([ref.base_twist[:K1], ref.q[:K1]]).ravel()]


def _jet(j):
    """``(stamp, W, tau)`` of a ``FeedforwardJet`` read field by field (ros_harness.read_feedforward)."""
    stamp, W, tau, _, _ = read_feedforward(j)
    return stamp, W, tau


def _error(jet_W, jet_tau, want) -> float:
    scale = max(1.0, np.abs(want.base_wrench).max(), np.abs(want.tau).max())
    return max(np.abs(jet_W - want.base_wrench).max(), np.abs(jet_tau - want.tau).max()) / scale


# ----------------------------------------------------------------------------- the headline
def _spawn_node():
    cmd = [sys.executable, "-m", "geodyn_ros.ros.nodes.geodyn_node", "--ros-args", "-p", f"urdf_path:={URDF}",
           "-p", f"order:={ORDER}", "-p", "input_mode:=measured", "-p", f"stale_timeout:={STALE_NS * 1e-9}",
           # deep keep-last queues on both sides (as bench/ros/bench_async.py): on a machine at load
           # 8 a process descheduled for 40 ms loses the samples its queue of 10 (input_depth) or 2
           # (qos_depth) cannot hold. Those are losses of the link to the node or to this recorder,
           # not cycles the node failed to answer, which is what this test measures (seen: 92-96 %
           # "answered" with the defaults while the node skipped 5-17 cycles of ~1,400).
           "-p", "qos_depth:=200", "-p", "input_depth:=200"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])))
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("load", [False, True], ids=["idle", "both_cores_busy"])
def test_async_streams_every_odom_answered(monkeypatch, tmp_path, load):
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)] if load else []
    node = _spawn_node()
    h = Harness()
    log = tmp_path / "sent.npz"
    try:
        jets = h.record(FeedforwardJet, "feedforward/jet", depth=1000)
        used = h.record(Float64MultiArray, "/geodyn_node/inputs_used", depth=1000)
        diags = h.record(DiagnosticArray, "/diagnostics", depth=1000)
        # the node's publishers exist once its model is loaded; its subscriptions, which the
        # publisher process waits for, come right after
        assert h.spin_until(lambda: h.probe.count_publishers("/feedforward/jet") > 0, 120.0), \
            "geodyn_node did not start: " + (node.stderr.read() if node.poll() is not None else "")
        h.spin_for(0.5)   # discovery of the recorder by the node's publishers
        pub = subprocess.Popen([sys.executable, str(ROOT / "bench" / "ros" / "async_sensors.py"), "publish",
                                "--seconds", "6", "--seed", "11" if load else "5", "--log", str(log)],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while pub.poll() is None:
            h.spin_for(0.1)
            assert node.poll() is None, node.stderr.read()
        assert pub.returncode == 0, pub.stderr.read()
        # the node's summary (every diagnostics_period, 1 s) after the last odom carries its final
        # accepted[odom]: wait for one that no longer changes
        accepted = _accepted_odom(diags)
        for _ in range(6):
            h.spin_for(1.0)
            now = _accepted_odom(diags)
            if now == accepted and now is not None:
                break
            accepted = now
        skipped = {}
        for d in diags:   # for a failure message: the node's reasons for skipped cycles
            for st in d.status:
                for kv in st.values:
                    if kv.key.startswith("skipped["):
                        skipped[kv.key] = skipped.get(kv.key, 0) + int(kv.value)
        _check(np.load(log), jets, used, skipped, accepted)
    finally:
        h.close()
        for p in busy:
            p.kill()
            p.wait()
        stop_process(node, "geodyn_node")


def _accepted_odom(diags):
    """The largest ``accepted[odom]`` the node reported on ``/diagnostics`` so far (None: none)."""
    vals = [int(kv.value) for d in list(diags) for st in d.status for kv in st.values if kv.key == "accepted[odom]"]
    return max(vals) if vals else None


def _check(sent, jets, used, skipped, accepted):
    streams = ("odom", "joint_states", "reference")
    values = {s: dict(zip(sent[f"{s}_stamps"].tolist(), sent[f"{s}_values"])) for s in streams}
    dropped = {s: set(sent[f"{s}_dropped"].tolist()) for s in streams}
    outputs = {}
    for j in jets:
        stamp, W, tau = _jet(j)
        assert stamp not in outputs, f"two outputs stamped {stamp}"
        outputs[stamp] = (W, tau)
    # the window: odom sent 0.2 s after the start (the node has a joint_states and a reference by
    # then) to 0.05 s before the end
    t0 = int(sent["t0"])
    lo, hi = t0 + 200_000_000, t0 + int(float(sent["seconds"]) * 1e9) - 50_000_000
    window = [s for s in values["odom"] if lo <= s <= hi]
    answered = sum(1 for s in window if s in outputs)
    # Best-effort sensor streams (as drivers publish) lose datagrams in the OS when a process is
    # descheduled on a loaded machine (seen in CI with the other pytest worker busy: 75 % reached
    # the node). That is loss on the link, which the node reports as accepted[odom] below what was
    # sent; the node is answerable for every odom it accepted. All the link's losses are charged to
    # the window (conservative), and the link must deliver at least half (else the run measured
    # nothing about the node).
    assert accepted is not None, "the node published no accepted[odom] on /diagnostics"
    total = len(values["odom"])
    lost = max(0, total - accepted)
    assert accepted >= total // 2, f"only {accepted} of {total} odom sent reached the node"
    reached = len(window) - lost
    frac = answered / reached
    print(f"\n{len(window)} odom sent in the window (link losses {sent['odom_loss']:.3f} odom, "
          f"{sent['joint_states_loss']:.3f} joint_states, {sent['reference_loss']:.3f} reference), "
          f"{lost} of {total} sent never reached the node, {answered} answered ({100 * frac:.2f} % of those "
          f"that reached it); publisher at most {int(sent['max_late_ns']) * 1e-6:.1f} ms late, "
          f"{len(sent['odom_late_skipped'])} odom not published for being over 20 ms late")
    assert frac >= 0.99, f"the node answered {100 * frac:.2f} % of the odom messages it received; skipped: {skipped}"
    records = [decode_inputs_used(m) for m in used]
    assert sorted(r["cycle"] for r in records) == sorted(outputs), "an output without its record or the reverse"
    caught = 0
    for r in records:
        t = r["cycle"]
        assert r["odom"] == t, f"cycle {t}: not the stamp of its odom ({r['odom']})"
        assert t in values["odom"], f"cycle {t}: no odom of that stamp was sent" + \
            (" (it was dropped by the link)" if t in dropped["odom"] else "")
        t_js, t_ref = r["joint_states"], r["reference"]
        assert t_js in values["joint_states"], f"cycle {t}: joint_states {t_js} was never sent"
        assert abs(t - t_js) <= MAX_AGE_NS, f"cycle {t}: joint_states {(t - t_js) * 1e-6:.3f} ms old"
        assert t_ref in values["reference"], f"cycle {t}: reference {t_ref} was never sent"
        assert t - STALE_NS <= t_ref <= t + TOL_NS, f"cycle {t}: reference {t_ref} is outside the rule's window"
        o, js, ref = values["odom"][t], values["joint_states"][t_js], values["reference"][t_ref]
        want = _expected(o, js, ref, (t - t_js) * 1e-9)
        W, tau = outputs[t]
        err = _error(W, tau, want)
        assert err <= TOL, f"cycle {t}: output off by {err:.2e} (relative) from its named, propagated inputs"
        if abs(t - t_js) > 500_000:   # the check would catch a held sample
            held = _error(W, tau, _expected(o, js, ref, 0.0, hold=True))
            assert held > 100 * TOL, f"cycle {t}: a held joint sample is indistinguishable ({held:.1e})"
            caught += 1
    print(f"{len(records)} records checked, {caught} with a joint age > 0.5 ms")
    assert caught >= len(records) // 2, "too few records where propagation matters for the check to mean anything"


# ----------------------------------------------------------------------------- timer mode
def test_timer_cycle_propagates_the_odometry_too(h):
    """``rate_hz`` > 0 on simulated time (the timer's callback called at the clock times below, so
    the test does not depend on when rclpy's timer fires): odom at 0.0 s, joint_states at 0.0013 s,
    a reference at 0; the clock at 0.007 s: the cycle's output is stamped 0.007 s and equals the library's answer
    for the odom propagated 7 ms and the joints 5.7 ms (scipy here); at 0.05 s the odom is 50 ms old,
    over ``odom_max_age`` (20 ms): nothing published, a line on ``/diagnostics`` names it."""
    node = h.make(GeodynNode, {"urdf_path": URDF, "order": ORDER, "input_mode": "measured", "rate_hz": 0.5,
                               "use_sim_time": True, "stale_timeout": 1.0})
    jets = h.record(FeedforwardJet, "feedforward/jet", depth=100)
    used = h.record(Float64MultiArray, "/geodyn_node/inputs_used", depth=100)
    diags = h.record(DiagnosticArray, "/diagnostics", depth=100)
    clock = h.publisher(ClockMsg, "/clock")
    pubs = {t: h.publisher(m, t) for t, m in (("reference", ReferenceJet), ("odom", Odometry),
                                               ("joint_states", JointState))}
    for t in ("/clock", *pubs):
        h.wait_matched(t)
    t0 = 1000 * 10**9

    def tick(ns):
        c = ClockMsg()
        c.clock.sec, c.clock.nanosec = divmod(ns, 10**9)
        clock.publish(c)
        assert h.spin_until(lambda: node.get_clock().now().nanoseconds == ns)

    tick(t0)
    ref = table3_reference(0.8, ORDER + 1)
    rmsg = make_reference_jet(t0, ref.base_pose, ref.base_twist[: ORDER + 3], ref.q[: ORDER + 3], NAMES)
    rng = np.random.default_rng(2)
    C = ref.base_pose.copy()
    w_b, v_b = rng.normal(size=3), rng.normal(size=3)
    q, qd = rng.normal(size=6), rng.normal(size=6)
    om = odometry_msg(t0, C, w_b, v_b)
    jm = joint_states_msg(t0 + 1_300_000, NAMES, q, qd)
    for t, m in (("reference", rmsg), ("odom", om), ("joint_states", jm)):
        pubs[t].publish(m)
    assert h.spin_until(lambda: node._bufs["joint_states"].accepted and node._bufs["odom"].accepted
                        and node._bufs["reference"].accepted)
    jets.clear()
    tick(t0 + 7_000_000)
    node._on_timer()
    assert h.spin_until(lambda: any(_jet(j)[0] == t0 + 7_000_000 for j in jets), 5.0), \
        node.diag.last_problem
    jet = next(j for j in jets if _jet(j)[0] == t0 + 7_000_000)
    o = om.pose.pose
    vals = np.r_[[o.position.x, o.position.y, o.position.z],
                 [o.orientation.x, o.orientation.y, o.orientation.z, o.orientation.w], w_b, v_b]
    want = _expected(vals, np.r_[q, qd], _ref_data(ref), 0.0057, dt_odom=0.007)
    _, W, tau = _jet(jet)
    assert _error(W, tau, want) <= TOL
    assert _error(W, tau, _expected(vals, np.r_[q, qd], _ref_data(ref), 0.0057)) > 100 * TOL   # the odom mattered
    assert h.spin_until(lambda: any(decode_inputs_used(m)["cycle"] == t0 + 7_000_000 for m in used))
    rec = next(decode_inputs_used(m) for m in used if decode_inputs_used(m)["cycle"] == t0 + 7_000_000)
    assert rec == {"cycle": t0 + 7_000_000, "odom": t0, "joint_states": t0 + 1_300_000, "reference": t0}
    n = len(jets)
    tick(t0 + 50_000_000)
    node._on_timer()
    h.spin_for(0.3)
    assert len(jets) == n, "an output from an odom 50 ms old"
    assert h.spin_until(lambda: any("odom: newest sample 50.000 ms older than the cycle time" in s.message
                                    for d in diags for s in d.status), 3.0), node.diag.last_problem


# ----------------------------------------------------------------------------- bytes, latest
@pytest.mark.parametrize("topic", ["odom", "joint_states"])
def test_latest_survives_byte_attacks(h, topic):
    """Every byte attack of ``test_ros_byte_attack`` (cuts at every length class, random bytes,
    encapsulation and option bytes, huge counts) on ``odom`` or ``joint_states`` under
    ``input_policy: latest``: no output for it, and the next good pair (joint_states 1 ms before
    the odometry) gives exactly the library's answer on the joints propagated 1 ms (this file's code)."""
    from sibling import test_module
    attacks = test_module("test_ros_byte_attack")._attacks
    node = h.make(GeodynNode, {"urdf_path": URDF, "order": ORDER, "input_mode": "measured", "stale_timeout": 1e6})
    assert node.latest
    jets = h.record(FeedforwardJet, "feedforward/jet", depth=1000)
    pubs = {t: h.publisher(m, t) for t, m in (("reference", ReferenceJet), ("odom", Odometry),
                                               ("joint_states", JointState))}
    for t in pubs:
        h.wait_matched(t)
    t = node.get_clock().now().nanoseconds - 10**9
    ref = table3_reference(0.8, ORDER + 1)
    rmsg = make_reference_jet(t, ref.base_pose, ref.base_twist[: ORDER + 3], ref.q[: ORDER + 3], NAMES)
    pubs["reference"].publish(rmsg)
    assert h.spin_until(lambda: node._bufs["reference"].last_stamp == t)
    from rclpy.serialization import serialize_message
    raw = serialize_message(odometry_msg(t, ref.base_pose, np.zeros(3), np.zeros(3)) if topic == "odom" else
                            joint_states_msg(t, NAMES, np.zeros(6), np.zeros(6)))
    rng = np.random.default_rng(9)
    good = set()
    for name, bad, _ in attacks(raw, topic, seed=17):
        pubs[topic].publish(bad)
        t += 4 * MS_
        C = ref.base_pose.copy()
        C[:3, 3] += rng.normal(size=3) * 0.01
        w_b, v_b, q, qd = rng.normal(size=3), rng.normal(size=3), rng.normal(size=6), rng.normal(size=6)
        pubs["joint_states"].publish(joint_states_msg(t - MS_, NAMES, q, qd))
        assert h.spin_until(lambda: node._bufs["joint_states"].last_stamp == t - MS_), f"{name}: joint_states refused"
        om = odometry_msg(t, C, w_b, v_b)
        pubs["odom"].publish(om)
        good.add(t)
        assert h.spin_until(lambda: any(_jet(j)[0] == t for j in jets)), \
            f"{name} on {topic}: no output for the next good odometry ({node.diag.last_problem})"
        o = om.pose.pose
        vals = np.r_[[o.position.x, o.position.y, o.position.z],
                     [o.orientation.x, o.orientation.y, o.orientation.z, o.orientation.w], w_b, v_b]
        _, W, tau = _jet(next(j for j in jets if _jet(j)[0] == t))
        assert _error(W, tau, _expected(vals, np.r_[q, qd], _ref_data(ref), 1e-3)) <= TOL, f"{name} on {topic}"
    assert {_jet(j)[0] for j in jets} == good, "an output for an attacked message"


MS_ = 1_000_000
