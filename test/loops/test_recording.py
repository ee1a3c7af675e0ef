"""``geodyn_fly --record FILE.mcap`` (geodyn_ros.loops.recording), read back independently.

The files are read with the ``mcap`` reader (not the writer's library) and every message is
decoded by rclpy's own ``deserialize_message`` with the message class the schema names, so a
schema or CDR that rclpy would refuse fails here. Each flight is short (0.2 s scored after 0.05 s
of pre-roll, two levels) and is checked against the arrays the same run logged
(``TrackingLog``): the recorded base position and joint angles bit for bit (the recorder writes
the float64 values the loop logged), the attitude through the quaternion to 1e-15 per matrix
element (the conversion's rounding), the rank 4 CoM recomputed from the recorded state to 1e-12 m.
The jets are the typed ``geodyn_msgs`` messages the nodes publish (``ReferenceJet``,
``FlatReference``, ``FeedforwardJet``: rank 6 body, rank 4 spatial, the flat jet body with force
``(0, 0, T)``), their schemas the installed ``geodyn_msgs`` ``.msg`` files.
"""
from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mcap_ros2")
pytest.importorskip("rclpy")

from geodyn_ros.loops import fly as flymod                                   # noqa: E402
from geodyn_ros.loops.recording import SEPARATOR, TOPICS, message_definition, message_search_dirs  # noqa: E402

DURATION, PREROLL, DT = 0.2, 0.05, 1e-3
STEPS = int(round(DURATION / DT))
#: the five kinds of a recording, by relative topic
KINDS = {"state": {"odom", "joint_states", "motor_states"}, "reference": {"reference", "flat_reference"},
         "feedforward": {"feedforward/jet", "feedforward/wrench", "feedforward/joint_efforts", "feedforward/flat_jet"},
         "commands": {"cmd/rotor_speeds", "cmd/motor_efforts"}, "diagnostics": {"/diagnostics"}}


def _msg_class(schema_name: str):
    pkg, _, name = schema_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def _read(path):
    """``(header profile, summary, {topic: [(log_time, publish_time, message)]})``, every message
    deserialized by rclpy."""
    from mcap.reader import make_reader
    from rclpy.serialization import deserialize_message
    out: dict = {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        profile, summary = reader.get_header().profile, reader.get_summary()
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            m = deserialize_message(message.data, _msg_class(schema.name))
            out.setdefault(channel.topic, []).append((message.log_time, message.publish_time, m))
    return profile, summary, out


def _fly(tmp_path, monkeypatch, capsys, vehicle, levels, *extra):
    """Run ``geodyn_fly --record`` (in process, ``--json``) and keep the rows ``fly`` returned."""
    flown = {}
    real = flymod.fly

    def keep(*a, **kw):
        flown.update(real(*a, **kw))
        return flown
    monkeypatch.setattr(flymod, "fly", keep)
    path = tmp_path / "flight.mcap"
    rc = flymod.main(["--vehicle", vehicle, "--duration", str(DURATION), "--preroll", str(PREROLL), "--levels",
                      ",".join(levels), "--json", "--record", str(path), *extra])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    return path, doc, flown


def _quat_matrix(o):
    x, y, z, w = o.x, o.y, o.z, o.w
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _check_file(path, doc, flown, rank):
    profile, summary, msgs = _read(path)
    assert profile == "ros2"
    # every schema a ros2msg definition that parses (rclpy decoded every message above; mcap_ros2's
    # own parser too), every channel CDR
    from mcap_ros2.decoder import DecoderFactory
    dec = DecoderFactory()
    for s in summary.schemas.values():
        assert s.encoding == "ros2msg"
        assert dec.decoder_for("cdr", s) is not None
    assert {c.message_encoding for c in summary.channels.values()} == {"cdr"}
    # and every message decodes with mcap_ros2's own decoder (the schema parser Foxglove's mirrors)
    from mcap.reader import make_reader
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            dec.decoder_for("cdr", schema)(message.data)
    assert doc["recording"]["messages"] == {t: len(v) for t, v in msgs.items()}
    for topic, items in msgs.items():
        t = [lt for lt, _, _ in items]
        assert t == sorted(t) and all(lt == pt for lt, pt, _ in items), topic    # monotonic, publish = log
    levels = list(flown)
    kinds = {k for k, names in KINDS.items() for tp in msgs
             if tp.split("/", 2)[-1] in names or tp in names}
    assert kinds == set(KINDS)
    for lv in levels:
        res = flown[lv]
        log = res.log
        assert len(log.t) == STEPS + 1
        mine = {tp[len(lv) + 2:]: v for tp, v in msgs.items() if tp.startswith(f"/{lv}/")}
        for name, items in mine.items():
            # the samples t_k = k dt, k = 0..STEPS (commands: the STEPS held over the steps)
            n = STEPS if name.startswith("cmd/") else STEPS + 1
            assert len(items) == n, (lv, name)
            assert [lt for lt, _, _ in items] == [k * 1_000_000 for k in range(n)], (lv, name)
            if hasattr(items[0][2], "header"):
                assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, _, m in items] == \
                    [lt for lt, _, _ in items]
        assert {"odom", "joint_states", "feedforward/jet", "feedforward/wrench", "cmd/rotor_speeds"} <= set(mine)
        assert ("reference" if rank == 6 else "flat_reference") in mine
        odom = [m for _, _, m in mine["odom"]]
        js = [m for _, _, m in mine["joint_states"]]
        pos = np.array([[m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z] for m in odom])
        R = np.array([_quat_matrix(m.pose.pose.orientation) for m in odom])
        q = np.array([np.asarray(m.position) for m in js]).reshape(len(js), -1)
        np.testing.assert_allclose(R, log.R, rtol=0, atol=1e-15 * 4)     # quaternion round trip
        np.testing.assert_array_equal(q, log.q)                            # bit for bit
        if rank == 6:
            np.testing.assert_array_equal(pos, log.p)                      # the base origin, bit for bit
        else:                                                              # log.p: the system CoM
            import geodyn_ros as gd
            from geodyn_ros.lie import Ad
            from geodyn_ros.vehicle import load_vehicle
            model = load_vehicle(doc["vehicle"]).load_model(doc["urdf"])    # the model the loop logged the CoM of
            for k in (0, STEPS // 2, STEPS):
                C = np.eye(4)
                C[:3, :3], C[:3, 3] = R[k], pos[k]
                tw = odom[k].twist.twist
                Vb = np.array([tw.angular.x, tw.angular.y, tw.angular.z, tw.linear.x, tw.linear.y, tw.linear.z])
                c = gd.center_of_mass(model, C, (Ad(C) @ Vb)[None], q[k][None])[0]
                np.testing.assert_allclose(c, log.p[k], rtol=0, atol=1e-12)
        assert js[0].name == list(log.joint_names)
        jet = mine["feedforward/jet"][0][2]
        assert jet.order == 2 and len(jet.base_wrench) == 3 and len(jet.tau) == 3 * len(log.joint_names)  # W^(0..2)
        assert jet.representation == ("body" if rank == 6 else "spatial")
        assert list(jet.joint_names) == list(log.joint_names) and jet.header.frame_id == "world"
        assert jet.child_frame_id == odom[0].child_frame_id                    # the base link
        ref = mine["reference" if rank == 6 else "flat_reference"][0][2]
        assert ref.header.frame_id == "world" and ref.child_frame_id == odom[0].child_frame_id
        assert list(ref.joint_names) == list(log.joint_names) and len(ref.q) == (ref.order + 1) * len(ref.joint_names)
        if rank == 4:
            flat = mine["feedforward/flat_jet"][0][2]
            assert flat.representation == "body" and all(w.force.x == w.force.y == 0.0 for w in flat.base_wrench)
        else:
            assert ref.representation == "spatial" and len(ref.base_twist) == ref.order + 1
        rot = mine["cmd/rotor_speeds"]   # actuator_msgs/Actuators, stamped with the command's time, as over ROS
        assert all(len(m.velocity) > 0 and not m.position and not m.normalized for _, _, m in rot)
        assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, _, m in rot] == [lt for lt, _, _ in rot]
    (_, _, diag), = msgs["/diagnostics"]
    assert [s.name for s in diag.status] == [f"geodyn_fly/{lv}" for lv in levels]
    for s in diag.status:
        vals = {kv.key: kv.value for kv in s.values}
        row = doc["rows"][vals["row"]]
        assert s.level == b"\x00" and vals["diverged"] == "false"
        assert float(vals["position_rms_m"]) == pytest.approx(row["position_rms_m"], rel=1e-8)   # printed %.9g
    return msgs


def test_a_rank6_flight_with_elastic_joints_is_recorded_as_flown(tmp_path, monkeypatch, capsys):
    path, doc, flown = _fly(tmp_path, monkeypatch, capsys, "hextilt_flying_arm_5", ("pd", "ff2"))
    msgs = _check_file(path, doc, flown, 6)
    # the elastic arm: motor states and motor torques of its five joints
    ms = msgs["/ff2/motor_states"][0][2]
    assert len(ms.name) == 5 and len(ms.position) == 5
    assert list(msgs["/ff2/cmd/motor_efforts"][0][2].name) == list(ms.name)
    assert doc["rows"]["ff2"]["position_rms_m"] <= doc["rows"]["pd"]["position_rms_m"]


def test_a_rank4_flight_with_rigid_joints_is_recorded_as_flown(tmp_path, monkeypatch, capsys):
    path, doc, flown = _fly(tmp_path, monkeypatch, capsys, "borinot_flying_arm_2", ("rigid", "ff2"))
    msgs = _check_file(path, doc, flown, 4)
    assert "/ff2/feedforward/flat_jet" in msgs and "/ff2/motor_states" not in msgs
    # the rigid joints' torques go out on cmd/motor_efforts, as the flat controller node sends them
    assert list(msgs["/ff2/cmd/motor_efforts"][0][2].name) == list(flown["ff2"].log.joint_names)


def test_record_every_decimates(tmp_path, monkeypatch, capsys):
    """``--record-every 10``: one control step in ten, at t = 10 k dt (0.2 s: 21 samples, 20 commands / 10 = 2)."""
    path, doc, _ = _fly(tmp_path, monkeypatch, capsys, "iris", ("ff2",), "--record-every", "10")
    _, _, msgs = _read(path)
    assert [lt for lt, _, _ in msgs["/ff2/odom"]] == [k * 10_000_000 for k in range(STEPS // 10 + 1)]
    assert len(msgs["/ff2/cmd/rotor_speeds"]) == STEPS // 10


@pytest.mark.parametrize("make, what", [
    (lambda d: d / "no_such_dir" / "f.mcap", "directory .* does not exist; create it"),
    (lambda d: d / "f.bag", "not an .mcap file name; give a path ending in .mcap"),
    (lambda d: d, "not an .mcap file name"),
    (lambda d: d / "d.mcap", "is a directory"),
])
def test_a_bad_record_path_is_refused_in_one_line_before_any_simulation(tmp_path, capsys, make, what):
    import re
    (tmp_path / "d.mcap").mkdir()
    bad = make(tmp_path)
    assert flymod.main(["--vehicle", "iris", "--duration", "0.1", "--record", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""                             # refused before the vehicle report (before any simulation)
    line = err.strip()
    assert "\n" not in line and line.startswith(f"geodyn_fly: refused: {bad}: record: "), line
    assert re.search(what, line), line
    assert not list(tmp_path.glob("**/*.mcap")) or (tmp_path / "d.mcap").is_dir()


def test_record_every_below_one_is_refused(tmp_path, capsys):
    assert flymod.main(["--vehicle", "iris", "--record", str(tmp_path / "f.mcap"), "--record-every", "0"]) == 2
    assert capsys.readouterr().err == "geodyn_fly: refused: record-every: expected an integer >= 1, got 0\n"
    assert not (tmp_path / "f.mcap").exists()


def test_an_unwritable_directory_is_refused(tmp_path, capsys):
    import os
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):      # root writes anywhere: nothing to refuse
            pytest.skip("running as root: every directory is writable")
        assert flymod.main(["--vehicle", "iris", "--record", str(ro / "f.mcap")]) == 2
        assert "record: not writable" in capsys.readouterr().err
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("datatype", sorted(set(TOPICS.values())))
def test_every_schema_is_the_installed_msg_files_concatenated(datatype):
    """Each section of the schema is one installed ``.msg`` file, unchanged; the first is the type's,
    the others follow ``MSG: pkg/Type``; every field's complex type has its section (checked against
    rclpy's own field table: the message class's ``SLOT_TYPES``)."""
    text = message_definition(datatype)
    sections = text.split(SEPARATOR + "\n")
    share = [d for d in message_search_dirs() if (d / "std_msgs" / "msg" / "Header.msg").is_file()][0]
    pkg, _, name = datatype.split("/")
    assert sections[0].rstrip("\n") == (share / pkg / "msg" / f"{name}.msg").read_text().rstrip("\n")
    names = {f"{pkg}/{name}"}
    for sec in sections[1:]:
        head, body = sec.split("\n", 1)
        assert head.startswith("MSG: ")
        p, n = head[5:].split("/")
        names.add(f"{p}/{n}")
        assert body.rstrip("\n") == (share / p / "msg" / f"{n}.msg").read_text().rstrip("\n")
    assert len(names) == len(sections)              # each type once

    def complex_types(cls, seen):
        from rosidl_parser.definition import AbstractNestedType, NamespacedType
        for t in cls.SLOT_TYPES:
            t = t.value_type if isinstance(t, AbstractNestedType) else t
            if isinstance(t, NamespacedType):
                full = f"{t.namespaces[0]}/{t.name}"
                if full not in seen:
                    seen.add(full)
                    complex_types(getattr(importlib.import_module(f"{t.namespaces[0]}.msg"), t.name), seen)
        return seen
    assert complex_types(_msg_class(datatype), {f"{pkg}/{name}"}) == names


def test_a_missing_message_package_is_said_in_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^nav_msgs/msg/Odometry.msg: not found in .*; install"):
        message_definition("nav_msgs/msg/Odometry", [tmp_path])
    assert Path(tmp_path).is_dir()


def test_geodyn_fly_without_the_message_definitions_is_refused_before_flying(tmp_path, monkeypatch, capsys):
    """No installed ``.msg`` files (no ROS 2 message package found): one line, exit 2, no file, no flight."""
    from geodyn_ros.loops import recording
    monkeypatch.setattr(recording, "message_search_dirs", lambda: [tmp_path])
    path = tmp_path / "f.mcap"
    assert flymod.main(["--vehicle", "iris", "--duration", "0.1", "--record", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "levels in" not in out and not path.exists()
    assert err.startswith(f"geodyn_fly: refused: {path}: record: ") and "msg: not found in" in err
    assert err.count("\n") == 1


# ----------------------------------------------------------------------------- file faults (issue 51)
def test_a_fifo_is_refused_before_the_flight(tmp_path):
    """``--record`` to a FIFO with no reader (before: the writer's open waited for a reader, over
    150 s): refused in one line, exit 2, before the vehicle report; the FIFO untouched."""
    from file_faults import fifo, run_module
    path = fifo(tmp_path)
    out = run_module("geodyn_ros.loops.fly", ["--vehicle", "iris", "--duration", "0.1", "--record", path],
                     cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out.stderr[-2000:]
    assert out.stderr == (f"geodyn_fly: refused: {path}: record: is a FIFO, not a regular file (its writer would wait "
                          "for a reader); give the path of a regular file (or a new one) ending in .mcap\n")
    assert path.is_fifo()


def test_a_symlink_to_a_device_is_refused_before_the_flight(tmp_path, capsys):
    """``--record`` to a symlink to ``/dev/full`` (before: the flight, then an ``OSError`` traceback,
    exit 1): refused in one line, exit 2, before any simulation."""
    from file_faults import dev_full_link
    path = dev_full_link(tmp_path)
    assert flymod.main(["--vehicle", "iris", "--duration", "0.1", "--levels", "ff2", "--record", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"geodyn_fly: refused: {path}: record: is a character device, not a regular file; "
                                 "give the path of a regular file (or a new one) ending in .mcap\n")


def test_a_file_swapped_for_a_fifo_after_the_check_is_refused_without_waiting(tmp_path):
    """The recording opens its file without blocking and checks what it opened: a FIFO put in the
    path's place after the check (no reader) fails at once, in one line (no wait)."""
    from geodyn_ros.loops.recording import open_recording_file
    from file_faults import fifo
    path = fifo(tmp_path)
    with pytest.raises(ValueError) as exc:
        open_recording_file(path)
    assert str(exc.value).startswith(f"{path}: record: cannot be opened (No such device or address)")
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:            # with a reader the open succeeds, and the FIFO is refused for what it is
        with pytest.raises(ValueError, match="record: is a FIFO, not a regular file"):
            open_recording_file(path)
    finally:
        os.close(reader)


def test_a_disk_that_fills_mid_flight_ends_in_one_line_and_a_partial_file(tmp_path):
    """A write error while flying (the file size limit at 300 kB, the kernel's EFBIG, as a full disk's
    ENOSPC; test/file_faults.py): before, an ``OSError`` traceback, exit 1 and a partial
    ``flight.mcap``. Now the flight stops, one line ``geodyn_fly: <file>: record: cannot write (...)
    after N messages, at t = ... s; the partial recording is <stem>.partial.mcap; <fix>``, exit 2;
    ``flight.mcap`` does not exist, the partial file does (an MCAP file's start: its magic)."""
    import re
    from file_faults import run_module
    path = tmp_path / "flight.mcap"
    out = run_module("geodyn_ros.loops.fly", ["--vehicle", "iris", "--duration", "1", "--levels", "ff2", "--record",
                                              path], cwd=tmp_path, limit=300_000)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    partial = tmp_path / "flight.partial.mcap"
    assert out.stderr.count("\n") == 1 and re.fullmatch(
        rf"geodyn_fly: {re.escape(str(path))}: record: cannot write \(File too large\) after \d+ messages, at t = "
        rf"\d+\.\d{{3}} s; the partial recording is {re.escape(str(partial))}; free space \(or raise the quota or "
        r"file size limit\), or record elsewhere\n", out.stderr), out.stderr
    assert not path.exists() and 0 < partial.stat().st_size <= 300_000
    assert partial.read_bytes()[:8] == b"\x89MCAP0\r\n"
