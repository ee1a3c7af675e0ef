"""``geodyn_reference`` in ``trajectory: waypoints`` (issue 34 item 5), in process on simulated time.

* the mission file: the published ``flat_reference`` jets equal the plan of the file's waypoints
  (planned here by :func:`plan_mission` from the YAML read with PyYAML, not through the node's
  loader) at every stamp, and ``planned_path`` is that plan's CoM;
* replanning over the topic pair: at the switch the new jets equal the old plan's up to the
  promised order ``k-1`` (to rounding) and the next row jumps; after it they equal an independent
  plan from the old plan's state (quaternion -> yaw done here by the rotation matrix);
* a mission too fast for the rotors is refused (``/diagnostics`` WARN with the worst margin) and
  the old plan keeps flying; a lone message at its stamp is a mission alone;
* the check uses every limit of the vehicle file (issue 40): Borinot's arm swing beyond its
  shoulder servo's torque is refused at start-up, naming that torque;
* the YAML schema and the message decoding refuse bad input with one line naming the key.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from geodyn_ros.planning import plan_mission
from geodyn_ros.planning.mission import load_mission, mission_from_dict

REPO = Path(__file__).resolve().parents[3]
MISSION = REPO / "config" / "mission_example.yaml"
XACRO = str(REPO / "urdf" / "hexarotor_manipulator.urdf.xacro")
CFG = str(REPO / "config" / "hexarotor.yaml")
NAMES = ("J2", "J3", "J4", "J5", "J6", "J7")
ORDER = 2
# Rounding: the node and the test evaluate the same polynomial coefficients at the same float
# time, but the test's plan is a separate solve; jets reach ~1e2 (CoM derivative 6), so 1e-9 of
# max(1, |jet|) is far above the solve's rounding (~1e-13) and far below any modelling difference.
RTOL = 1e-9


def _file_plan(start_time=0.0):
    doc = yaml.safe_load(MISSION.read_text())
    wps = doc["waypoints"]
    return plan_mission([w["com"] for w in wps], [w["yaw"] for w in wps], [w["q"] for w in wps],
                        start_time + np.array([w["time"] for w in wps]), order=ORDER)


def _decode(msg):
    """Independent decoding of a flat-reference message (a ``geodyn_msgs/FlatReference``, or the
    deprecated ``Float64MultiArray`` layout): stamp [s], com, yaw, q, joint labels."""
    if hasattr(msg, "com"):
        K1, st = len(msg.com), msg.header.stamp
        com = np.array([[c.x, c.y, c.z] for c in msg.com])
        return (st.sec + st.nanosec * 1e-9, com, np.array(msg.yaw), np.array(msg.q).reshape(K1, len(msg.joint_names)),
                list(msg.joint_names))
    d = np.array(msg.data)
    rows, cols = msg.layout.dim[0].size, msg.layout.dim[1].size
    body = d[2:].reshape(rows, cols)
    return d[0] + d[1] * 1e-9, body[:, :3], body[:, 3], body[:, 4:], msg.layout.dim[1].label.split(",")[4:]


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.all(np.abs(a - b) <= RTOL * np.maximum(1.0, np.abs(b)))


@pytest.fixture(params=[False])
def ros(h, request):
    from geodyn_msgs.msg import FlatReference
    from rosgraph_msgs.msg import Clock

    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    node = h.make(ReferenceNode, {"use_sim_time": True, "trajectory": "waypoints", "order": ORDER,
                                  "mission": str(MISSION), "urdf_path": XACRO, "actuation_config": CFG,
                                  "slow_down": request.param})
    refs = h.record(FlatReference, "flat_reference")
    pc = h.publisher(Clock, "/clock")
    h.wait_matched("/clock")

    def tick(t):
        """Publish /clock = t and wait for the sample stamped t."""
        c = Clock()
        ns = int(round(t * 1e9))
        c.clock.sec, c.clock.nanosec = divmod(ns, 10**9)
        pc.publish(c)
        assert h.spin_until(lambda: any(round(_decode(m)[0] * 1e9) == ns for m in refs), 20.0), t
        return next(m for m in reversed(refs) if round(_decode(m)[0] * 1e9) == ns)
    return node, tick


def test_file_mission_jets_equal_the_plan_and_the_path(h, ros):
    from nav_msgs.msg import Path as PathMsg

    _, tick = ros
    traj = _file_plan()
    for t in (0.0, 0.001, 0.7, 1.999, 2.0, 3.2, 4.0, 5.0):    # knots, inside segments, after the end
        stamp, com, yaw, q, labels = _decode(tick(t))
        want = traj(t, ORDER)
        assert stamp == pytest.approx(t, abs=1e-9) and tuple(labels) == NAMES
        assert com.shape == (ORDER + 5, 3) and yaw.shape == (ORDER + 5,)
        assert _close(com, want.com) and _close(yaw[:ORDER + 3], want.yaw) and _close(q[:ORDER + 3], want.q), t
    # planned_path: latched (transient local), so a late subscriber gets it
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    got = []
    h.probe.create_subscription(PathMsg, "planned_path", got.append,
                                QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                           durability=DurabilityPolicy.TRANSIENT_LOCAL))
    assert h.spin_until(lambda: got, 10.0)
    path = got[-1]
    assert path.header.frame_id == "world" and len(path.poses) == 81     # 4 s every 0.05 s, and the end
    for ps in path.poses[::10] + [path.poses[-1]]:
        t = ps.header.stamp.sec + ps.header.stamp.nanosec * 1e-9
        p, o = ps.pose.position, ps.pose.orientation
        want = traj(t, 0)
        assert _close([p.x, p.y, p.z], want.com[0])
        assert math.isclose(2 * math.atan2(o.z, o.w), want.yaw[0], abs_tol=1e-12)


def _pair(stamp_s, goal_com, goal_yaw, goal_q, dt):
    """The topic pair: one goal point ``dt`` after the start (MultiDOF: CoM, yaw as a quaternion)."""
    from builtin_interfaces.msg import Duration
    from geometry_msgs.msg import Transform
    from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,
                                     MultiDOFJointTrajectoryPoint)
    sec, nsec = divmod(int(round(stamp_s * 1e9)), 10**9)

    def d():
        return Duration(sec=int(dt), nanosec=int(round((dt - int(dt)) * 1e9)))
    m = MultiDOFJointTrajectory()
    m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id = sec, nsec, "world"
    m.joint_names = ["base_link"]
    tr = Transform()
    tr.translation.x, tr.translation.y, tr.translation.z = (float(v) for v in goal_com)
    tr.rotation.z, tr.rotation.w = math.sin(goal_yaw / 2), math.cos(goal_yaw / 2)
    m.points = [MultiDOFJointTrajectoryPoint(transforms=[tr], time_from_start=d())]
    j = JointTrajectory()
    j.header.stamp.sec, j.header.stamp.nanosec = sec, nsec
    j.joint_names = list(reversed(NAMES))                      # by name, any order
    j.points = [JointTrajectoryPoint(positions=[float(v) for v in reversed(goal_q)], time_from_start=d())]
    return m, j


def _replan_reference(old, t_s, goal_com, goal_yaw, goal_q, dt):
    """The plan from ``old``'s state at ``t_s`` to the goal: plan_mission with the start jets."""
    s = old(t_s, ORDER)
    return plan_mission([s.com[0], goal_com], [s.yaw[0], goal_yaw], [s.q[0], goal_q], [t_s, t_s + dt], order=ORDER,
                        start={"com": s.com[1:4], "yaw": s.yaw[1:3], "q": s.q[1:3]})


def test_replanning_is_continuous_at_the_switch(h, ros):
    from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory
    _, tick = ros
    old = _file_plan()
    tick(1.0)
    S, dt = 1.5, 2.0
    goal_com, goal_yaw, goal_q = [0.3, -0.2, 1.3], 2.9, np.linspace(-0.3, 0.3, 6)
    m, j = _pair(S, goal_com, goal_yaw, goal_q, dt)
    pm, pj = h.publisher(MultiDOFJointTrajectory, "mission/com_yaw"), h.publisher(JointTrajectory, "mission/joints")
    h.wait_matched("mission/com_yaw")
    h.wait_matched("mission/joints")
    pj.publish(j)
    pm.publish(m)
    node = ros[0]
    assert h.spin_until(lambda: len(node.plans) == 2, 20.0)   # the pair, planned for its stamp
    _, c0, y0, q0, _ = _decode(tick(S - 0.001))
    assert _close(c0, old(S - 0.001, ORDER).com)                  # before the stamp: the old plan
    _, c, y, q, _ = _decode(tick(S))
    before = old(S, ORDER)
    # the promise: continuous to derivative k-1 (CoM k = 4: rows 0..3; yaw and joints k = 3: rows 0..2)
    assert _close(c[:4], before.com[:4]) and _close(y[:3], before.yaw[:3]) and _close(q[:3], before.q[:3])
    # ... and not beyond: the CoM's snap and the yaw's jerk jump (this test can tell)
    assert np.abs(c[4] - before.com[4]).max() > 1e-3 and abs(y[3] - before.yaw[3]) > 1e-3
    new = _replan_reference(old, S, goal_com, goal_yaw, goal_q, dt)
    for t in (S, S + 0.3, S + 1.7, S + dt, S + dt + 1.0):
        _, c, y, q, _ = _decode(tick(t))
        want = new(t, ORDER)
        assert _close(c, want.com) and _close(y[:ORDER + 3], want.yaw) and _close(q[:ORDER + 3], want.q), t
    assert c[0] == pytest.approx(goal_com, abs=1e-12) and y[0] == pytest.approx(goal_yaw, abs=1e-12)


def test_infeasible_mission_is_refused_and_the_old_plan_flies(h, ros):
    from diagnostic_msgs.msg import DiagnosticArray
    from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory
    node, tick = ros
    diags = h.record(DiagnosticArray, "/diagnostics")
    old = _file_plan()
    tick(0.5)
    # 2 m sideways in 0.4 s: about 50 m/s^2 of acceleration, far beyond the rotors
    m, j = _pair(0.0, [2.0, 0.0, 1.0], 0.0, np.zeros(6), 0.4)
    pm, pj = h.publisher(MultiDOFJointTrajectory, "mission/com_yaw"), h.publisher(JointTrajectory, "mission/joints")
    h.wait_matched("mission/com_yaw")
    pm.publish(m)        # stamp 0: a mission alone, at once (the joints hold)
    assert h.spin_until(lambda: any("mission refused" in s.message for a in diags for s in a.status), 20.0)
    st = next(s for a in diags for s in a.status if "mission refused" in s.message)
    assert st.level == b"\x01" and "worst margin -" in st.message and "last feasible plan keeps flying" in st.message
    kv = {v.key: v.value for v in st.values}
    assert float(kv["worst_margin"]) < 0
    # repeated every diagnostics_period (1 s, wall clock) for a late listener (the harness spins on
    # the wall clock; 20 s: a loaded machine)
    assert h.spin_until(lambda: sum("mission refused" in s.message for a in diags for s in a.status) >= 2, 20.0)
    assert node.refused == 1 and len(node.plans) == 1
    for t in (0.6, 1.0, 2.5):
        _, c, y, q, _ = _decode(tick(t))
        assert _close(c, old(t, ORDER).com) and _close(q[:ORDER + 3], old(t, ORDER).q)
    # a lone JointTrajectory with a stamp: held until the clock reaches it, then a mission alone
    # (the CoM and yaw hold the old plan's values at the switch)
    _, j = _pair(3.0, [0, 0, 0], 0.0, np.full(6, 0.2), 1.0)
    h.wait_matched("mission/joints")
    pj.publish(j)
    tick(2.9)
    assert len(node.plans) == 1                  # not yet: its stamp is 3.0
    tick(3.0)
    assert len(node.plans) == 2
    s = old(3.0, ORDER)
    new = plan_mission([s.com[0]] * 2, [s.yaw[0]] * 2, [s.q[0], np.full(6, 0.2)], [3.0, 4.0], order=ORDER,
                       start={"com": s.com[1:4], "yaw": s.yaw[1:3], "q": s.q[1:3]})
    _, c, y, q, _ = _decode(tick(3.5))
    assert _close(c, new(3.5, ORDER).com) and _close(q[:ORDER + 3], new(3.5, ORDER).q)


@pytest.mark.parametrize("ros", [True], indirect=True)
def test_slow_down_makes_an_infeasible_mission_the_fastest_feasible_one(h, ros):
    """slow_down: the 2 m in 0.4 s mission is slowed to alpha; the published jets equal plan_mission
    from the old plan's state with the knots stretched by alpha, whose whole-body margin is >= 0
    there and < 0 at alpha (1 - 1e-3) (checked here: tight), and the switch is continuous to k-1."""
    import re

    from diagnostic_msgs.msg import DiagnosticArray
    from trajectory_msgs.msg import MultiDOFJointTrajectory

    from geodyn_ros.planning import Vehicle, check_feasibility
    node, tick = ros
    diags = h.record(DiagnosticArray, "/diagnostics")
    old = _file_plan()
    tick(0.5)
    m, _ = _pair(0.7, [2.0, 0.0, 1.0], 0.0, np.zeros(6), 0.4)
    pm = h.publisher(MultiDOFJointTrajectory, "mission/com_yaw")
    h.wait_matched("mission/com_yaw")
    pm.publish(m)        # alone: held until the clock reaches 0.7 s
    tick(0.7)
    assert len(node.plans) == 2 and node.refused == 0
    assert h.spin_until(lambda: any("slowed down" in s.message for a in diags for s in a.status), 20.0)
    msg = next(s.message for a in diags for s in a.status if "slowed down" in s.message)
    alpha = float(re.search(r"slowed down ([0-9.e+-]+) times", msg).group(1))     # repr: exact
    s0 = old(0.7, ORDER)
    vehicle = Vehicle.hexarotor()

    def stretched(a):
        return plan_mission([s0.com[0], [2.0, 0.0, 1.0]], [s0.yaw[0], 0.0], [s0.q[0], s0.q[0]], [0.7, 0.7 + 0.4 * a],
                            order=ORDER, start={"com": s0.com[1:4], "yaw": s0.yaw[1:3], "q": s0.q[1:3]})
    new = stretched(alpha)
    assert 1.0 < alpha < 1024.0
    assert check_feasibility(vehicle, new).worst >= 0.0
    assert check_feasibility(vehicle, stretched(alpha * (1 - 1e-3))).worst < 0.0
    _, c, y, q, _ = _decode(tick(0.7))
    assert _close(c[:4], s0.com[:4]) and _close(y[:3], s0.yaw[:3])          # continuous at the switch
    for t in (0.7 + 0.1 * alpha, 0.7 + 0.3 * alpha, 0.7 + 0.4 * alpha):
        _, c, y, q, _ = _decode(tick(t))
        want = new(t, ORDER)
        assert _close(c, want.com) and _close(y[:ORDER + 3], want.yaw) and _close(q[:ORDER + 3], want.q), t
    print(f"slow_down: alpha = {alpha:.4f} ({msg})")


def test_node_refuses_bad_configurations_in_one_line(h, tmp_path):
    """At start-up: a bad mission file, a file mission below min_margin (the example's worst margin
    is +0.2488, so min_margin 0.5 refuses it), actuation_config without a robot, bad min_margin."""
    from geodyn_ros.ros.common.params import ConfigurationError
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    base = {"use_sim_time": True, "trajectory": "waypoints", "urdf_path": XACRO, "actuation_config": CFG}
    bad = tmp_path / "bad.yaml"
    bad.write_text("waypoints: [{com: [0, 0, 1]}, {com: [1, 0]}]\ntiming: {max_velocity: 1, max_acceleration: 1}\n")
    cases = [({"mission": str(bad)}, r"^parameter 'mission': .*bad\.yaml: waypoints\[1\]\.com: expected 3 numbers"),
             ({"mission": str(MISSION), "min_margin": 0.5},
              r"^parameter 'mission': worst margin \+0\.2488 < min_margin 0\.5 at t = 1\.952 s \(rotor 5 lag max\)$"),
             ({"urdf_path": ""}, r"^parameter 'actuation_config': the feasibility check also needs urdf_path"),
             ({"min_margin": float("nan")}, r"^parameter 'min_margin': must be a finite number < 1")]
    for change, message in cases:
        with pytest.raises(ConfigurationError, match=message):
            h.make(ReferenceNode, {**base, **change})
    # the file's exact line (test/loops/test_file_errors.py's table) after "parameter 'mission': "
    for text, line in BAD_MISSIONS:
        m = _bad_file(tmp_path, text)
        with pytest.raises(ConfigurationError) as info:
            h.make(ReferenceNode, {**base, "mission": str(m)})
        assert str(info.value) == f"parameter 'mission': {line.replace('{f}', str(m))}"
    ccw = tmp_path / "ccw.yaml"
    ccw.write_text(Path(CFG).read_text().replace('"cw"', '"ccw"'))
    with pytest.raises(ConfigurationError) as info:
        h.make(ReferenceNode, {**base, "actuation_config": str(ccw)})
    assert str(info.value) == f"parameter 'actuation_config': {CCW_LINE.replace('{f}', str(ccw))}"


# (the mission file's text (None: no such file), its exact refusal with {f} the path)
BAD_MISSIONS = [
    (None, "{f}: cannot be read (No such file or directory); give the path of an existing mission file"),
    (MISSION.read_text().replace("q: [0.5, -0.3, 0.4, -0.5, 0.3, -0.4]", "q: [0.5, -0.3]"),
     "{f}: waypoints[1].q: expected 6 numbers, one per joint of joint_names (J2, J3, J4, J5, J6, J7), got shape "
     "(2,); give 6 joint positions [rad] in the order of joint_names"),
    ("joint_names: [J2]\nwaypoints: [{com: [0, 0, 1], q: [0]}, {com: [1, 0, 1], q: [0]\n",
     "{f}: line 3, column 1, in waypoints[1]: expected ',' or '}', but got '<stream end>' (while parsing a flow "
     "mapping at line 2); close the mapping with '}' or separate its entries with ', '"),
]
# the hexarotor with every rotor ccw (an old actuation file: the key is its turning_direction)
CCW_LINE = ("{f}: turning_direction: every rotor turns ccw, so the rotors cannot make a yaw moment (a collinear "
            "allocation of rank 3 < 4); give half of them turning_direction cw (neighbours turning opposite ways)")


def _bad_file(tmp_path, text, name="bad_mission.yaml"):
    p = tmp_path / name
    p.unlink(missing_ok=True)
    if text is not None:
        p.write_text(text)
    return p


def test_start_parameters_refuse_bad_files_with_the_loaders_line(tmp_path, capsys):
    """``python -m geodyn_ros.ros.nodes.mission start-parameters MISSION URDF ACTUATION``: exit 2, the
    loader's line alone on stderr (the mission's, then the actuation file's)."""
    from geodyn_ros.ros.nodes.mission import main
    cases = [(_bad_file(tmp_path, t, f"bad{i}.yaml"), CFG, line) for i, (t, line) in enumerate(BAD_MISSIONS[1:])]
    ccw = tmp_path / "ccw.yaml"
    ccw.write_text(Path(CFG).read_text().replace('"cw"', '"ccw"'))
    cases.append((MISSION, str(ccw), CCW_LINE.replace("{f}", str(ccw))))
    one = _bad_file(tmp_path, "joint_names: [J2]\nwaypoints: [{com: [0, 0, 1], q: [0]}, {com: [1, 0, 1], q: [0], time: "
                    "1}]\n".replace("q: [0]}, {", "q: [0], time: 0}, {"), "one_joint.yaml")
    cases.append((one, CFG, "{f}: joint_names: ['J2'] are not the model's joints ['J2', 'J3', 'J4', 'J5', 'J6', 'J7']; "
                  "list the model's joints, in that order"))
    for mission, actuation, line in cases:
        assert main(["start-parameters", str(mission), XACRO, actuation]) == 2
        err = capsys.readouterr().err
        assert err == line.replace("{f}", str(mission)) + "\n", err
    # as a command: the missing file, one line, exit 2
    import subprocess
    import sys
    nope = tmp_path / "nope.yaml"
    out = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.nodes.mission", "start-parameters", str(nope), XACRO,
                          CFG], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and out.stderr == BAD_MISSIONS[0][1].replace("{f}", str(nope)) + "\n", out.stderr


def test_the_reference_node_exits_with_the_files_line(tmp_path):
    """``geodyn_reference`` started on a mission file that is not there: exit 2, one line on stderr."""
    import subprocess
    import sys
    nope = tmp_path / "nope.yaml"
    out = subprocess.run([sys.executable, "-m", "geodyn_ros.ros.nodes.reference_node", "--ros-args", "-p",
                          "trajectory:=waypoints", "-p", f"mission:={nope}"], capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    want = f"[FATAL] geodyn_ros: parameter 'mission': {BAD_MISSIONS[0][1].replace('{f}', str(nope))}\n"
    assert out.returncode == 2 and out.stderr == want, out.stderr[-3000:]


def test_borinot_swing_beyond_the_shoulder_servo_is_refused(h):
    """Issue 40's third-party finding, through the node's own check: Borinot (the shipped vehicle
    file, example-robot-data's URDF) swinging both joints 1.5 rad in 0.2 s needs more than the
    shoulder servo's 0.9 N m (the file's max_torque). The node's vehicle now has every limit of the
    file (Vehicle.from_files) and refuses it at start-up; before, it had no joint limits and rated
    it +0.171 (its rotors can fly it), so it flew it."""
    from geodyn_ros.ros.common.params import ConfigurationError
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    from geodyn_ros.vehicle.shipped import shipped_vehicle_files
    urdf, _ = shipped_vehicle_files("borinot_flying_arm_2")
    with pytest.raises(ConfigurationError, match=r"^parameter 'mission': worst margin -0\.\d{4} < min_margin 0 at t = "
                       r"0\.\d{3} s \(joint flying_arm_2__j_bl_link1 torque\)$"):
        h.make(ReferenceNode, {"use_sim_time": True, "trajectory": "waypoints", "urdf_path": str(urdf),
                               "mission": str(REPO / "test" / "data" / "borinot_swing.yaml"),
                               "actuation_config": "borinot_flying_arm_2"})


def test_vehicle_from_is_the_deprecated_name_of_vehicle_from_files():
    import warnings

    from geodyn_ros.planning import Vehicle
    from geodyn_ros.ros.nodes.mission import vehicle_from
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        old = vehicle_from(XACRO, CFG)
    assert [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)] == [
        "geodyn_ros.ros.nodes.mission.vehicle_from is deprecated; use "
        "geodyn_ros.planning.Vehicle.from_files(urdf, vehicle_file)"]
    new = Vehicle.from_files(XACRO, CFG)
    assert old.model.joint_names == new.model.joint_names and np.array_equal(old.allocation.A, new.allocation.A)
    assert np.array_equal(old.joint_torque_limit, new.joint_torque_limit)


# ---------------------------------------------------------------------- ROS-free: the schema
def test_mission_file_loads_and_plans_like_plan_mission():
    m = load_mission(MISSION)
    assert m.joint_names == NAMES and m.times.tolist() == [0.0, 2.0, 4.0]
    a, b = m.plan(0.0, ORDER), _file_plan()
    assert np.array_equal(a.times, b.times) and _close(a(1.3, ORDER).com, b(1.3, ORDER).com)


_GOOD = {"joint_names": ["J2"], "waypoints": [{"com": [0, 0, 1], "q": [0]}, {"com": [1, 0, 1], "q": [0.5]}],
         "timing": {"max_velocity": 1.0, "max_acceleration": 1.0}}


@pytest.mark.parametrize("change, message", [
    ({"waypoints": [{"com": [0, 0, 1], "q": [0]}]}, r"mission: waypoints: expected a list of at least 2"),
    ({"speed": 1}, r"mission: speed: unknown key; "),
    ({"waypoints": [{"com": [0, 0], "q": [0]}, {"com": [1, 0, 1], "q": [0]}]},
     r"mission: waypoints\[0\]\.com: expected 3 numbers, got shape \(2,\)"),
    ({"waypoints": [{"com": [0, 0, 1]}, {"com": [1, 0, 1], "q": [0]}]}, r"mission: waypoints\[0\]\.q: missing"),
    ({"waypoints": [{"com": [0, 0, 1], "q": [0], "yaw": "x"}, {"com": [1, 0, 1], "q": [0]}]},
     r"mission: waypoints\[0\]\.yaw: expected a number"),
    ({"waypoints": [{"com": [0, 0, 1], "q": [0], "time": 0}, {"com": [1, 0, 1], "q": [0], "time": 0}],
      "timing": None}, r"mission: waypoints\[1\]\.time: must be after"),
    ({"waypoints": [{"com": [0, 0, 1], "q": [0], "time": 1}, {"com": [1, 0, 1], "q": [0], "time": 2}],
      "timing": None}, r"mission: waypoints\[0\]\.time: the first waypoint is the start"),
    ({"timing": {"max_velocity": 1.0}}, r"mission: timing\.max_acceleration: missing"),
    ({"timing": {"max_velocity": -1.0, "max_acceleration": 1.0}}, r"mission: timing\.max_velocity: expected a number > 0"),
    ({"timing": None}, r"mission: timing: the waypoints have no 'time'"),
    ({"constraints": [{"waypoint": 0, "output": "com", "order": 1, "values": [0, 0, 0]}]},
     r"mission: constraints: waypoint 0 is not an interior waypoint"),
    ({"waypoints": [{"com": [0, 0, 1], "q": [0]}, {"com": [1, 0, float("nan")], "q": [0]}]},
     r"mission: waypoints\[1\]\.com: contains NaN or Inf"),
])
def test_mission_schema_errors_name_the_key(change, message):
    doc = {**_GOOD, **change}
    doc = {k: v for k, v in doc.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        mission_from_dict(doc)
    mission_from_dict(_GOOD)     # the unchanged document is fine


# ---------------------------------------------------------------------- message decoding
def test_messages_decode_yaw_frames_and_pairing():
    from geodyn_ros.ros.nodes.mission import mission_from_messages
    from geodyn_ros.trajectories import FlatReference
    rng = np.random.default_rng(3)
    cur = FlatReference(com=np.array([[0.0, 0.0, 1.0]] + [[0.0] * 3] * 6), yaw=np.r_[3.0, np.zeros(4)],
                        q=np.zeros((5, 6)))
    m, j = _pair(0.0, [1, 2, 3], 0.0, np.arange(6) * 0.1, 1.5)
    for yaw in rng.uniform(-math.pi, math.pi, 8):
        # a general rotation with that Z-Y-X yaw: R = Rz(yaw) Ry(b) Rx(a); its quaternion by scipy
        from scipy.spatial.transform import Rotation
        a, b = rng.uniform(-0.5, 0.5, 2)
        qx, qy, qz, qw = Rotation.from_euler("ZYX", [yaw, b, a]).as_quat() * 2.0     # not unit: normalised
        r = m.points[0].transforms[0].rotation
        r.x, r.y, r.z, r.w = qx, qy, qz, qw
        ms = mission_from_messages(m, j, joint_names=NAMES, world_frame="world", current=cur)
        # unwrapped next to the current yaw 3.0 rad: within pi of it, equal to yaw mod 2 pi
        assert abs(ms.yaw[1] - 3.0) <= math.pi and math.isclose(math.remainder(ms.yaw[1] - yaw, 2 * math.pi), 0.0,
                                                                abs_tol=1e-12)
    assert ms.times.tolist() == [0.0, 1.5] and np.allclose(ms.q[1], np.arange(6) * 0.1)   # reordered by name
    assert np.array_equal(ms.com[0], cur.com[0])            # the start is the current state
    m.header.frame_id = "map"
    with pytest.raises(ValueError, match=r"mission/com_yaw: header\.frame_id 'map' is not the world frame 'world'"):
        mission_from_messages(m, j, joint_names=NAMES, world_frame="world", current=cur)
    m.header.frame_id = ""
    j.points[0].time_from_start.sec = 2
    with pytest.raises(ValueError, match=r"mission/joints: time_from_start differs"):
        mission_from_messages(m, j, joint_names=NAMES, world_frame="world", current=cur)
    with pytest.raises(ValueError, match=r"nothing flies yet, so the first mission needs a start point"):
        mission_from_messages(m, None, joint_names=NAMES, world_frame="world", current=None)
    j.joint_names = ["J2"] * 6
    with pytest.raises(ValueError, match=r"mission/joints: joint_names .* are not the plan's joints"):
        mission_from_messages(None, j, joint_names=NAMES, world_frame="world", current=cur)


# ---------------------------------------------------------------------- bounded input (issue 41)
def _file_error_tables():
    """test/loops/test_file_errors.py's tables of bad files (loaded by path: one table for every
    entry point)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("file_error_tables", REPO / "test" / "loops" / "test_file_errors.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bad_files_are_the_nodes_and_the_mission_clis_one_line(h, tmp_path, capsys):
    """Every bounded-input case of the file table (aliases, constraint orders, durations, types,
    extreme constants, a FIFO, bad UTF-8): geodyn_reference's ``mission`` and geodyn_node's,
    geodyn_actuated_controller's and geodyn_flat_controller's ``actuation_config`` refuse to start
    with the file's exact line after ``parameter '<name>': `` (never another parameter), and
    ``python -m geodyn_ros.ros.nodes.mission start-parameters`` exits 2 with the line alone."""
    from geodyn_ros.ros.common.params import ConfigurationError
    from geodyn_ros.ros.nodes.actuated_controller_node import ActuatedControllerNode
    from geodyn_ros.ros.nodes.flat_controller_node import FlatControllerNode
    from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
    from geodyn_ros.ros.nodes.mission import main
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    t = _file_error_tables()
    for i, (case, text, line) in enumerate(t.MISSION_BOUNDS):
        d = tmp_path / f"m{i}"
        d.mkdir()
        p = t._write(d, text, "mission.yaml")
        want = line.replace("{f}", str(p))
        with pytest.raises(ConfigurationError) as info:
            h.make(ReferenceNode, {"use_sim_time": True, "trajectory": "waypoints", "mission": str(p)})
        assert str(info.value) == f"parameter 'mission': {want}", case
        assert main(["start-parameters", str(p), XACRO, CFG]) == 2
        assert capsys.readouterr().err == want + "\n", case
    nodes = ((GeodynNode, {"urdf_path": XACRO, "input_mode": "flat"}), (ActuatedControllerNode, {"urdf_path": XACRO}),
             (FlatControllerNode, {"urdf_path": XACRO}))
    for i, (case, text, line) in enumerate(t.BOUNDS):
        if case.startswith("gains:"):       # the nodes take their gains from parameters, not from the file
            continue
        d = tmp_path / f"v{i}"
        d.mkdir()
        p = t._write(d, text, "vehicle.yaml")
        want = line.replace("{f}", str(p))
        for cls, params in nodes:
            with pytest.raises(ConfigurationError) as info:
                h.make(cls, {**params, "actuation_config": str(p)}, namespace=f"n{i}")
            assert str(info.value) == f"parameter 'actuation_config': {want}", (cls.__name__, case)
        assert main(["start-parameters", str(MISSION), XACRO, str(p)]) == 2
        assert capsys.readouterr().err == want + "\n", case


@pytest.mark.parametrize("trajectory", ["table3", "figure_eight"])
def test_message_types_typed_and_the_deprecated_layouts_carry_the_same_jets(h, trajectory):
    """``message_types`` of ``geodyn_reference``: ``typed`` (default) publishes ``ReferenceJet`` /
    ``FlatReference`` with ``header.frame_id`` = ``world_frame``, an empty ``child_frame_id`` (the
    node knows no base link) and the spatial representation; ``multiarray`` the deprecated
    layouts, with one WARN at start-up. Both carry, at the same /clock, the trajectory function's
    jets (``table3_reference`` / ``figure_eight_reference`` evaluated here; 1e-12 relative: the
    only difference is the quaternion round trip of the base pose, ~1e-16)."""
    from geodyn_msgs.msg import FlatReference, ReferenceJet
    from ros_harness import decode_reference, rosout, said_deprecated
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import Float64MultiArray

    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    from geodyn_ros.trajectories import TABLE3_JOINT_NAMES, figure_eight_reference, table3_reference
    flat = trajectory == "figure_eight"
    topic = "flat_reference" if flat else "reference"
    logs = rosout(h, "multi.ref_multi")     # the logger name: namespace.node
    params = {"use_sim_time": True, "trajectory": trajectory, "order": ORDER, "world_frame": "map"}
    h.make(ReferenceNode, params, node_name="ref_typed", namespace="typed")
    h.make(ReferenceNode, {**params, "message_types": "multiarray"}, node_name="ref_multi", namespace="multi")
    typed = h.record(FlatReference if flat else ReferenceJet, f"/typed/{topic}")
    multi = h.record(Float64MultiArray, f"/multi/{topic}")
    assert said_deprecated(h, logs)
    pc = h.publisher(Clock, "/clock")
    h.wait_matched("/clock")
    t = 0.8
    c = Clock()
    c.clock.nanosec = 800_000_000
    pc.publish(c)
    assert h.spin_until(lambda: typed and multi, 20.0)
    a, b = typed[-1], multi[-1]
    assert (a.header.stamp.sec, a.header.stamp.nanosec) == (0, 800_000_000) and b.data[:2].tolist() == [0.0, 8e8]
    assert a.header.frame_id == "map" and a.child_frame_id == ""
    if flat:
        want = figure_eight_reference(t, ORDER + 2)
        for m in (a, b):
            _, com, yaw, q, labels = _decode(m)
            assert tuple(labels) == TABLE3_JOINT_NAMES and com.shape == (ORDER + 5, 3)
            assert _close(com, want.com[:ORDER + 5]) and _close(yaw, want.yaw[:ORDER + 5])
            assert _close(q, want.q[:ORDER + 5])
    else:
        assert a.representation == "spatial" and list(a.joint_names) == list(TABLE3_JOINT_NAMES)
        want = table3_reference(t, ORDER + 1)
        for m in (a, b):
            C, V, Q = decode_reference(m)
            assert np.abs(C - want.base_pose).max() <= 1e-12
            assert _close(V, want.base_twist[:ORDER + 3]) and _close(Q, want.q[:ORDER + 3])


def test_message_types_refuses_an_unknown_value(h):
    from geodyn_ros.ros.common.params import ConfigurationError
    from geodyn_ros.ros.nodes.reference_node import ReferenceNode
    with pytest.raises(ConfigurationError, match=r"^message_types: 'float64' is not one of typed, multiarray"):
        h.make(ReferenceNode, {"message_types": "float64"})
