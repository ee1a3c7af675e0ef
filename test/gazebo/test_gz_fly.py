"""Every Gazebo launch file flown for real (issue 54): headless ``gz sim`` under the real launch_ros
(``ros2 launch`` where installed, else the steering folder's ``real_launch.sh``: test/launch_runner.py),
the real ``ros_gz_bridge`` and ``ros_gz_sim create``, ``robot_state_publisher`` where it is installed
(the launch files' default), and the geodyn nodes, as a lab runs them (test/gz_flight.py).

Cases: ``gazebo.launch.py`` (TiltHex, actuated), ``gazebo_underactuated.launch.py`` (collinear
hexarotor with arm, flatness) and ``gazebo_vehicle.launch.py vehicle:=<name>`` for the three vehicles
of ``config/vehicles/``. Each: the model is held on its stand until the controller commands the rotors,
released (``gz/start_hold``: "detached"), then flies its reference: the start ramp (:data:`RAMP_S`, the
reference leaving rest), then :data:`FLY_S` simulated seconds, scored. A probe records ``/clock``, ``odom``, ``joint_states`` and the reference the nodes publish;
the tracked point (the system CoM at rank 4, the base origin at rank 6; the package's model of the
same Gazebo file, rotor joints locked) is paired with the reference of the same stamp.

Checked: the release happens, the flight stays within :data:`MAX_RMS_M` of its reference, the arm
within :data:`MAX_JOINT_RMS_DEG` (except :data:`KNOWN_POOR_TRACKING`), and it never falls (the vehicle's height stays within 0.5 m of its reference), no published state is NaN, and
Ctrl-C (SIGINT to the launch's process group) stops every process cleanly, none SIGTERMed. The figures (RMS, peaks, real-time factor) are printed, one
line per case, and written to ``$GEODYN_GZ_FLY_JSON`` when set (doc/howto/gazebo.md's table).

Skips in one line without Gazebo (``gz_world.NEEDS``) or without a real launch
(``launch_runner.CANNOT_RUN``).
"""
from __future__ import annotations

import json
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from gz_world import flight_skip_reason, ros_gz_executable
from launch_runner import _clean_stop

xacro = pytest.importorskip("xacro")
if flight_skip_reason():
    pytest.skip(flight_skip_reason(), allow_module_level=True)

from nav_msgs.msg import Odometry  # noqa: E402  (after the skips: rclpy)
from sensor_msgs.msg import JointState  # noqa: E402
from geodyn_msgs.msg import FlatReference, ReferenceJet  # noqa: E402
from gz_flight import UPDATE_RATE, gz_flight, stamp_ns as _stamp  # noqa: E402

import geodyn_ros as gd  # noqa: E402
from geodyn_ros.lie import quat_to_matrix  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FLY_S = float(os.environ.get("GEODYN_GZ_FLY_S", "8"))   # simulated seconds scored after the start ramp
#: geodyn_reference's start_ramp (its default): the reference leaves rest over this long after the release
RAMP_S = 3.0
#: a loop that tracks (the MuJoCo loops track these references to 1e-4..1e-3 m; Gazebo's lagging
#: odometry and its unmodelled rotor filter cost more); above this, the loop is not flying its reference
MAX_RMS_M = 0.05
#: the launch files' update_rate: gz_flight.UPDATE_RATE ($GEODYN_GZ_UPDATE_RATE, default 250)
#: more launch arguments for every case, e.g. GEODYN_GZ_FLY_ARGS="level:=ff0" (the measurements of
#: doc/howto/gazebo.md); the JSON rows are keyed "<case> <args>" then
EXTRA_ARGS = os.environ.get("GEODYN_GZ_FLY_ARGS", "").split()
MOTOR = "gz-sim-multicopter-motor-model-system"
#: the launch files' default robot_state_publisher:=true where it is installed (as a lab flies), else false
WITH_RSP = ros_gz_executable("robot_state_publisher", "robot_state_publisher") is not None
#: an arm that tracks: the MuJoCo loops 0.01-0.4 deg, these flights 0.1-2.2 deg over the runs measured
#: here (a run whose nodes fall behind is worse); a stalled arm shows the reference's own RMS, ~25 deg
MAX_JOINT_RMS_DEG = 5.0
#: vehicles known not to track in Gazebo, and why (the test fails once one tracks, base and arm: then
#: remove it here). Measured 2026-12-04 (update_rate 250, ff1, one flight each): before the fix of the
#: node's rigid-joint torques the arm did not move at all (every joint at the reference's own RMS,
#: 24.5-25.2 deg; the base 2.0 mm), because no joint torque was published; after it the arm moves
KNOWN_POOR_TRACKING = {
    "hextilt_flying_arm_5": "its arm moves in gz-sim but tracks poorly: joint RMS 16.4 deg (j1 4.2, j2 5.6, "
                            "j3 21.3, j4 15.1, j5 24.8), the base 57.6 mm; joint 5 (a wrist roll, izz 1.1e-5 "
                            "kg m^2, friction 0.1 N m) never leaves 0 although its command reaches 0.2 N m, and "
                            "joints 1 and 3 saturate 38 % and 30 % of the time. MuJoCo tracks the same files to "
                            "0.03-0.15 deg; the gz cause is not found (doc/howto/gazebo.md)",
}
#: case -> (launch file, arguments)
CASES = {
    "tilthex": ("gazebo.launch.py", []),
    "hexarotor": ("gazebo_underactuated.launch.py", []),
    "borinot_flying_arm_2": ("gazebo_vehicle.launch.py", ["vehicle:=borinot_flying_arm_2"]),
    "hextilt_flying_arm_5": ("gazebo_vehicle.launch.py", ["vehicle:=hextilt_flying_arm_5"]),
    "iris": ("gazebo_vehicle.launch.py", ["vehicle:=iris"]),
}


def _model(case: str, tmp: Path):
    """(rank, the package's model of the spawned Gazebo file with the rotor joints locked)."""
    if case == "tilthex":
        xml, rank = xacro.process_file(str(REPO / "urdf" / "tilthex_manipulator_gazebo.xacro")).toxml(), 6
    elif case == "hexarotor":
        xml, rank = xacro.process_file(str(REPO / "urdf" / "hexarotor_manipulator_gazebo.xacro"), mappings={
            "actuation_config": str(REPO / "config" / "hexarotor.yaml")}).toxml(), 4
    else:
        from geodyn_ros.ros.loops.gazebo_vehicle import gazebo_parameters
        res = gazebo_parameters("", case, "figure8", "ff1", tmp / "files")
        xml, rank = Path(res["model"]).read_text(), res["rank"]
    locked = [p.findtext("jointName") for p in ET.fromstring(xml).iter("plugin") if p.get("filename") == MOTOR]
    return rank, gd.load_urdf(xml, locked_joints=locked)


def _score(rank, model, odom, js, refs, t0_ns):
    """Errors of the tracked point against the reference of the same stamp (within 0.5 ms), from
    the release ``t0_ns`` on: ``{"position_rms_m", "position_max_m", "joint_rms_deg", "samples",
    "min_height_margin_m"}``."""
    by_js = {_stamp(m): m for m in js}
    ref_t = np.array([_stamp(m) for m in refs])
    err, jerr, dz = [], [], []
    for o in odom:
        t = _stamp(o)
        j = by_js.get(t)
        if t < t0_ns or j is None or not len(ref_t):
            continue
        k = int(np.argmin(np.abs(ref_t - t)))
        if abs(ref_t[k] - t) > 500_000:
            continue
        r = refs[k]
        p, q_ = o.pose.pose.position, o.pose.pose.orientation
        C = np.eye(4)
        C[:3, 3], C[:3, :3] = (p.x, p.y, p.z), quat_to_matrix([q_.x, q_.y, q_.z, q_.w], "xyzw")
        pos = dict(zip(j.name, j.position))
        q = np.array([pos[n] for n in model.joint_names])
        rq = dict(zip(r.joint_names, np.asarray(r.q)[:len(r.joint_names)]))
        if rank == 4:
            x, xd = gd.center_of_mass(model, C, None, q[None])[0], np.array([r.com[0].x, r.com[0].y, r.com[0].z])
        else:
            bp = r.base_pose.position
            x, xd = C[:3, 3], np.array([bp.x, bp.y, bp.z])
        assert np.isfinite(x).all() and np.isfinite(q).all(), "a NaN in the published state"
        err.append(x - xd)
        dz.append(x[2] - xd[2])
        if model.joint_names:
            jerr.append(q - np.array([rq[n] for n in model.joint_names]))
    e = np.array(err)
    assert len(e) > 100, f"only {len(e)} odometry samples paired with a joint state and a reference"
    n = np.linalg.norm(e, axis=1)
    return {"position_rms_m": float(np.sqrt((n ** 2).mean())), "position_max_m": float(n.max()),
            "joint_rms_deg": float(np.degrees(np.sqrt((np.array(jerr) ** 2).mean()))) if jerr else None,
            "joint_rms_deg_each": dict(zip(model.joint_names, np.degrees(np.sqrt((np.array(jerr) ** 2).mean(axis=0)))
                                           .tolist())) if jerr else {},
            "samples": int(len(e)), "min_height_margin_m": float(-np.abs(dz).max())}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gazebo_launch_file_flies(case, tmp_path):
    file, args = CASES[case]
    args = args + EXTRA_ARGS
    rank, model = _model(case, tmp_path)
    ref_topic = "flat_reference" if rank == 4 else "reference"
    with gz_flight(file, args, {"odom": Odometry, "joint_states": JointState,
                                ref_topic: FlatReference if rank == 4 else ReferenceJet},
                   robot_state_publisher=WITH_RSP) as f:
        t0 = f.released_ns + int(RAMP_S * 1e9)        # scored from the end of the start ramp
        f.fly_until(t0 + int(FLY_S * 1e9), 60 * (FLY_S + RAMP_S))
        wall, sim = time.monotonic() - f.released_wall, (f.sim_ns() - f.released_ns) * 1e-9
    out, rec = f.out, f.h.received
    odom, js, refs = rec["odom"], rec["joint_states"], rec[ref_topic]
    assert sim >= 0.9 * (FLY_S + RAMP_S), f"{file}: only {sim:.2f} s simulated in {wall:.0f} s after the release\n{out[-3000:]}"
    m = _score(rank, model, list(odom), list(js), list(refs), t0)
    m.update(case=case, launch=file, args=args, update_rate=UPDATE_RATE, robot_state_publisher=WITH_RSP, simulated_s=sim, wall_s=wall,
             real_time_factor=sim / wall)
    print(f"\n{case}: {file} {' '.join(args)}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                                        for k, v in m.items() if k not in ("case", "launch", "args", "joint_rms_deg_each")))
    if os.environ.get("GEODYN_GZ_FLY_JSON"):
        path = Path(os.environ["GEODYN_GZ_FLY_JSON"])
        rows = json.loads(path.read_text()) if path.exists() else {}
        rows[" ".join([case, *EXTRA_ARGS])] = m
        path.write_text(json.dumps(rows, indent=1))
    _clean_stop(out, ["geodyn_reference", "geodyn_node"])
    assert m["min_height_margin_m"] > -0.5, m
    tracks = m["joint_rms_deg"] is None or m["joint_rms_deg"] < MAX_JOINT_RMS_DEG
    if case in KNOWN_POOR_TRACKING:
        assert not (tracks and m["position_rms_m"] < MAX_RMS_M), (
            f"{case} tracks now (base {m['position_rms_m']:.3g} m, arm {m['joint_rms_deg']:.3g} deg): "
            "remove it from KNOWN_POOR_TRACKING")
        pytest.xfail(f"{KNOWN_POOR_TRACKING[case]}; this flight: base {m['position_rms_m']:.3g} m, "
                     f"arm {m['joint_rms_deg']:.3g} deg")
    assert m["position_rms_m"] < MAX_RMS_M, m
    if EXTRA_ARGS:      # a measurement at another level (the feedback-only rows do not track the arm as closely)
        return
    assert tracks, m
