"""``--record FILE.mcap`` of the ROS fly loop (geodyn_ros.ros.loops.mcap_recorder): the messages as
they travelled, read back, and the same flight recorded in process (``geodyn_fly --record``,
``preroll 0``) looks the same.

Hextilt (rank 6, five series-elastic joints) flies ff2 for 0.2 s over ROS 2 (real rclpy nodes,
lock-step, one process) with a recorder node that writes the CDR bytes it receives; the file is
read with the ``mcap`` reader and every message decoded by rclpy's ``deserialize_message``.
Checked: the ``ros2`` profile and ``ros2msg`` schemas; every state and feedforward stamp
``k dt``, k = 0..200, and every command stamp k = 0..199, each at least once (the lock-step
simulator republishes a state it got no command for: a repeat has the same stamp), log times
non-decreasing per channel and equal to the header stamps; the five kinds; the row's
``/diagnostics`` status. Against the in-process recording of the same flight: every topic of it is
in the ROS file with the same schema (name and text: the typed ``geodyn_msgs`` jets) and the same
jet shapes (representation, joints, frames), and ``odom`` and
``feedforward/jet`` agree at every stamp to 1e-12 (test_ros_fly's bound for the same two loops:
they differ by rounding, ~1e-16; a one-step delay would give 1e-6 and more).
"""
from __future__ import annotations

import importlib
import re

import numpy as np
import pytest
from ros_harness import loop_problems  # noqa: F401,I100  (imported first: it sets the ROS isolation env)

pytest.importorskip("mcap_ros2")

from geodyn_ros.loops.fly import fly, prepare         # noqa: E402
from geodyn_ros.loops.recording import CdrRecording, McapRecording             # noqa: E402
from geodyn_ros.ros.loops.fly_closed_loop import run_ros_fly                   # noqa: E402

#: the five kinds of a recording, by relative topic (as test/loops/test_recording.py)
KINDS = {"state": {"odom", "joint_states", "motor_states"}, "reference": {"reference", "flat_reference"},
         "feedforward": {"feedforward/jet", "feedforward/wrench", "feedforward/joint_efforts", "feedforward/flat_jet"},
         "commands": {"cmd/rotor_speeds", "cmd/motor_efforts"}, "diagnostics": {"/diagnostics"}}

DURATION, DT, LEVEL = 0.2, 1e-3, "ff2"
STEPS = int(round(DURATION / DT))


def _read(path):
    from mcap.reader import make_reader
    from rclpy.serialization import deserialize_message
    out, schemas = {}, {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        assert reader.get_header().profile == "ros2"
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            pkg, _, name = schema.name.split("/")
            cls = getattr(importlib.import_module(f"{pkg}.msg"), name)
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            schemas[channel.topic] = (schema.name, schema.data)
            out.setdefault(channel.topic, []).append((message.log_time, deserialize_message(message.data, cls)))
    return out, schemas


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    d = tmp_path_factory.mktemp("rec")
    from geodyn_ros.vehicle.shipped import shipped_vehicle_files
    urdf, vehicle = shipped_vehicle_files("hextilt_flying_arm_5")
    with CdrRecording(d / "ros.mcap") as rec:
        res = run_ros_fly(urdf, vehicle, "figure8", LEVEL, DURATION, record=rec)
    with McapRecording(d / "inproc.mcap") as rec:
        fly(prepare(urdf, vehicle), [LEVEL], duration=DURATION, preroll=0.0, record=rec)
    return _read(d / "ros.mcap"), _read(d / "inproc.mcap"), res


def test_the_ros_recording_holds_every_step_of_the_five_kinds(recordings):
    (msgs, _), _, res = recordings
    kinds = {k for k, names in KINDS.items() for tp in msgs if tp.split("/", 2)[-1] in names or tp in names}
    assert kinds == set(KINDS)
    for topic, items in msgs.items():
        t = [lt for lt, _ in items]
        assert t == sorted(t), topic
        if topic == "/diagnostics":
            continue
        n = STEPS if "/cmd/" in topic else STEPS + 1
        assert set(t) == {k * 1_000_000 for k in range(n)}, topic
        if hasattr(items[0][1], "header"):
            assert all(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec == lt for lt, m in items), topic
    assert {f"/{LEVEL}/{t}" for t in ("odom", "joint_states", "motor_states", "reference", "feedforward/jet",
                                       "cmd/rotor_speeds", "cmd/motor_efforts")} <= set(msgs)
    mine = [s for _, m in msgs["/diagnostics"] for s in m.status if s.name == f"geodyn_fly/{LEVEL}"]
    assert len(mine) == 1 and mine[0].level == b"\x00"
    rms = {kv.key: kv.value for kv in mine[0].values}["position_rms_m"]
    assert float(rms) == pytest.approx(res.log.rms()["position_m"], rel=1e-8)


def test_the_ros_and_in_process_recordings_look_the_same(recordings):
    (ros, ros_schemas), (ip, ip_schemas), _ = recordings
    for topic in ip:
        if topic == "/diagnostics":
            continue
        assert topic in ros, topic
        assert ros_schemas[topic] == ip_schemas[topic], topic       # the same type, the same schema text
    assert ros_schemas[f"/{LEVEL}/reference"][0] == "geodyn_msgs/msg/ReferenceJet"
    assert ros_schemas[f"/{LEVEL}/feedforward/jet"][0] == "geodyn_msgs/msg/FeedforwardJet"
    for topic in ("reference", "feedforward/jet"):
        a, b = ros[f"/{LEVEL}/{topic}"][0][1], ip[f"/{LEVEL}/{topic}"][0][1]
        # the same joints, frame and representation; the rows: the reference node sends V^(0..4)
        # (order + 3 rows), the in-process loop records the rows it used (its reference(t, 2):
        # V^(0..3)); the reference node knows no base link (child_frame_id empty)
        assert list(a.joint_names) == list(b.joint_names) and a.header.frame_id == b.header.frame_id, topic
        assert a.representation == b.representation, topic
        if topic == "feedforward/jet":
            assert a.order == b.order and a.child_frame_id == b.child_frame_id != ""    # the base link
    a, b = ros[f"/{LEVEL}/cmd/rotor_speeds"][0][1], ip[f"/{LEVEL}/cmd/rotor_speeds"][0][1]
    assert ros_schemas[f"/{LEVEL}/cmd/rotor_speeds"][0] == "actuator_msgs/msg/Actuators"
    assert len(a.velocity) == len(b.velocity) == 6 and not a.position and not b.normalized
    for topic, get in (("odom", lambda m: [m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z,
                                           m.pose.pose.orientation.x, m.pose.pose.orientation.w,
                                           m.twist.twist.linear.x, m.twist.twist.angular.z]),
                       ("feedforward/jet", lambda m: [v for w in m.base_wrench for v in (
                           w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z)] + list(m.tau)),
                       ("joint_states", lambda m: list(m.position))):
        r = {lt: get(m) for lt, m in ros[f"/{LEVEL}/{topic}"]}
        i = {lt: get(m) for lt, m in ip[f"/{LEVEL}/{topic}"]}
        assert set(r) == set(i), topic
        np.testing.assert_allclose(np.array([r[t] for t in sorted(r)]), np.array([i[t] for t in sorted(i)]),
                                   rtol=0, atol=1e-12, err_msg=topic)


def test_geodyn_closed_loop_records_both_runs(tmp_path, capfd):
    """``geodyn_closed_loop --record``: the Table 3 runs with and without feedforward in one file,
    under ``/ff0/`` and ``/pd/``, every step (0.05 s at 1 kHz: 51 states, 50 commands each)."""
    from geodyn_ros.ros.loops.closed_loop import main
    path = tmp_path / "table3.mcap"
    main(["--duration", "0.05", "--out", str(tmp_path), "--no-plot", "--record", str(path)])  # 0.05 s: PASS or not
    assert f"recording: {path}" in capfd.readouterr().out       # capfd: the EventsExecutor needs a real stderr
    msgs, _ = _read(path)
    for row in ("ff0", "pd"):
        for topic, n in (("odom", 51), ("joint_states", 51), ("reference", 51), ("feedforward/jet", 51),
                         ("cmd/wrench", 50), ("cmd/joint_efforts", 50)):
            assert sorted({lt for lt, _ in msgs[f"/{row}/{topic}"]}) == [k * 1_000_000 for k in range(n)], (row, topic)
    names = {s.name for _, m in msgs["/diagnostics"] for s in m.status}
    assert {"geodyn_closed_loop/ff0", "geodyn_closed_loop/pd"} <= names


@pytest.mark.parametrize("bad, why", [("no_dir/x.mcap", "directory .* does not exist"), ("x.bag", "not an .mcap file name")])
def test_geodyn_closed_loop_refuses_a_bad_record_path(tmp_path, capsys, bad, why):
    from geodyn_ros.ros.loops.closed_loop import main
    with pytest.raises(SystemExit) as exc:
        main(["--duration", "0.05", "--out", str(tmp_path), "--record", str(tmp_path / bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("geodyn_closed_loop: error: ") and re.search(f"record: {why}", err[-1])
    assert not list(tmp_path.glob("*.mcap")) and not list(tmp_path.glob("*.csv"))


def test_the_fly_loop_refuses_a_bad_record_path_in_one_line(tmp_path, capsys):
    from geodyn_ros.ros.loops.fly_closed_loop import main
    assert main(["--urdf", "u.urdf", "--vehicle", "v.yaml", "--record", str(tmp_path / "x.txt")]) == 2
    assert capsys.readouterr().err == (f"refused: {tmp_path / 'x.txt'}: record: not an .mcap file name; give a path "
                                       "ending in .mcap\n")


@pytest.mark.parametrize("loop, reference", [("actuated", "reference"), ("underactuated", "flat_reference")])
def test_the_actuated_and_underactuated_loops_record(tmp_path, capfd, loop, reference):
    """``geodyn_closed_loop --actuated|--underactuated --record``: the row ff2 under ``/ff2/``, every
    step (0.05 s at 1 kHz: 51 states, 50 commands), and its status on ``/diagnostics``; a bad path:
    argparse's line, exit 2, before any run."""
    from geodyn_ros.ros.loops.closed_loop import main
    path = tmp_path / f"{loop}.mcap"
    assert main([f"--{loop}", "--rows", "ff2", "--duration", "0.05", "--record", str(path)]) == 0
    assert f"recording: {path}" in capfd.readouterr().out
    msgs, _ = _read(path)
    for topic, n in (("odom", 51), ("motor_states", 51), (reference, 51), ("feedforward/jet", 51),
                     ("cmd/rotor_speeds", 50), ("cmd/motor_efforts", 50)):
        assert sorted({lt for lt, _ in msgs[f"/ff2/{topic}"]}) == [k * 1_000_000 for k in range(n)], topic
    assert "geodyn_closed_loop/ff2" in {s.name for _, m in msgs["/diagnostics"] for s in m.status}
    with pytest.raises(SystemExit) as exc:
        main([f"--{loop}", "--rows", "ff2", "--record", str(tmp_path / "nodir" / "x.mcap")])
    assert exc.value.code == 2 and "record: directory" in capfd.readouterr().err


# ----------------------------------------------------------------------------- file faults (issue 51)
#: every ROS loop command line with --record: (module, arguments before --record, the line's prefix)
ROS_RECORDERS = [
    ("geodyn_ros.ros.loops.closed_loop", ["--duration", "0.05", "--no-plot"], "geodyn_closed_loop: error: "),
    ("geodyn_ros.ros.loops.closed_loop", ["--actuated", "--rows", "ff2", "--duration", "0.05"],
     "geodyn_closed_loop --actuated: error: "),
    ("geodyn_ros.ros.loops.closed_loop", ["--underactuated", "--rows", "ff2", "--duration", "0.05"],
     "geodyn_closed_loop --underactuated: error: "),
    ("geodyn_ros.ros.loops.fly_closed_loop", ["--urdf", "URDF", "--vehicle", "VEHICLE", "--duration", "0.05"],
     "refused: "),
]
_IDS = ["table3", "actuated", "underactuated", "fly"]


def _args(args, tmp_path):
    """``args`` with URDF and VEHICLE the shipped iris's paths, and the Table 3 loop's --out in tmp_path."""
    from geodyn_ros.loops.fly import shipped_vehicle
    urdf, vehicle = shipped_vehicle("iris")
    out = [{"URDF": str(urdf), "VEHICLE": str(vehicle)}.get(a, a) for a in args]
    return out + (["--out", str(tmp_path)] if "--no-plot" in args else [])


@pytest.mark.parametrize("module, args, prefix", ROS_RECORDERS, ids=_IDS)
def test_every_ros_loop_refuses_a_fifo_before_the_run(tmp_path, module, args, prefix):
    """``--record`` to a FIFO with no reader (before: the recording's open waited for a reader,
    forever): one line, exit 2, no run; in a child process with a timeout (the test fails, not hangs)."""
    from file_faults import fifo, run_module
    path = fifo(tmp_path)
    out = run_module(module, _args(args, tmp_path) + ["--record", path], cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith(prefix)]
    assert lines == [f"{prefix}{path}: record: is a FIFO, not a regular file (its writer would wait for a reader); "
                     "give the path of a regular file (or a new one) ending in .mcap"], out.stderr[-2000:]
    assert "running" not in out.stdout


@pytest.mark.parametrize("module, args, prefix", ROS_RECORDERS, ids=_IDS)
def test_every_ros_loop_refuses_a_symlink_to_a_device_before_the_run(tmp_path, capfd, module, args, prefix):
    """``--record`` to a symlink to ``/dev/full`` (before: the run, then an ``OSError`` traceback):
    one line, exit 2, no run."""
    from file_faults import dev_full_link
    main = importlib.import_module(module).main
    path = dev_full_link(tmp_path)
    try:
        rc = main(_args(args, tmp_path) + ["--record", str(path)])
    except SystemExit as exc:      # argparse's error
        rc = exc.code
    out, err = capfd.readouterr()
    assert rc == 2 and "running" not in out, err[-2000:]
    assert [ln for ln in err.splitlines() if ln.startswith(prefix)] == [
        f"{prefix}{path}: record: is a character device, not a regular file; give the path of a regular file (or "
        "a new one) ending in .mcap"], err[-2000:]


@pytest.mark.parametrize("module, args, prog", [
    ("geodyn_ros.ros.loops.closed_loop", ["--duration", "1", "--no-plot"], "geodyn_closed_loop"),
    ("geodyn_ros.ros.loops.fly_closed_loop", ["--urdf", "URDF", "--vehicle", "VEHICLE", "--duration", "1"],
     "python -m geodyn_ros.ros.loops.fly_closed_loop")], ids=["table3", "fly"])
def test_a_disk_that_fills_during_a_ros_loop_ends_in_one_line_and_a_partial_file(tmp_path, module, args, prog):
    """A write error in the recorder node's callback (the file size limit at 300 kB: the kernel's
    EFBIG, as a full disk's ENOSPC; test/file_faults.py): before, the exception escaped the
    executor (a traceback). Now the callback keeps it, the session's spin ends the run with it:
    one line ``<prog>: <file>: record: cannot write (...) ...; the partial recording is
    <stem>.partial.mcap; <fix>``, exit 2, no ``<file>``, the partial file kept."""
    import re

    from file_faults import run_module
    path = tmp_path / "run.mcap"
    out = run_module(module, _args(args, tmp_path) + ["--record", path], cwd=tmp_path, limit=300_000)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    partial = tmp_path / "run.partial.mcap"
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith(f"{prog}: ")]
    assert len(lines) == 1 and re.fullmatch(
        rf"{re.escape(prog)}: {re.escape(str(path))}: record: cannot write \(File too large\) after \d+ messages, "
        rf"at t = \d+\.\d{{3}} s; the partial recording is {re.escape(str(partial))}; free space \(or raise the "
        r"quota or file size limit\), or record elsewhere", lines[0]), out.stderr[-3000:]
    assert not path.exists() and 0 < partial.stat().st_size <= 300_000
    assert partial.read_bytes()[:8] == b"\x89MCAP0\r\n"
