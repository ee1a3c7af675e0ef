"""doc/howto/record.md names fields that the recorded messages have (issue 52.4).

The page told a user to plot ``/ff2/feedforward/jet.data[7]`` and to read ``layout.dim[1].label``:
the layout of the ``std_msgs/Float64MultiArray`` jets of release 0.1, while the file holds typed
``geodyn_msgs/FeedforwardJet`` messages, which have no ``data``. Checked here, independently of
the recorder's code:

* every message path of the page's "Open it in Foxglove" section (``/<level>/<topic>.<field>...``,
  Foxglove's syntax: ``.field``, ``[index]``) resolves, field by field, in the ``.msg`` definition
  of the type recorded on that topic: ``geodyn_msgs/msg/*.msg`` of this repository, the other
  packages' ``.msg`` files from the installed ROS 2 (the ``share/<pkg>/msg`` of the venv or
  ``AMENT_PREFIX_PATH``); a bare field path (``tau[k * n + j]``) resolves in the type of the
  message path before it;
* the table's type column names the type the recorder writes on each topic
  (:data:`geodyn_ros.loops.recording.TOPICS`; over ROS 2 ``cmd/rotor_speeds`` is the type the
  nodes publish).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from geodyn_ros.loops.recording import TOPICS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "doc" / "howto" / "record.md"
PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "string", "wstring"}
#: builtin_interfaces types a .msg may name without a package (the rosidl rule)
BUILTIN = {"time": "builtin_interfaces/Time", "duration": "builtin_interfaces/Duration"}


def _msg_file(pkg: str, name: str) -> Path:
    if pkg == "geodyn_msgs":
        return ROOT / "geodyn_msgs" / "msg" / f"{name}.msg"
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]
    for prefix in prefixes:
        path = Path(prefix) / "share" / pkg / "msg" / f"{name}.msg"
        if path.is_file():
            return path
    pytest.skip(f"{pkg}/msg/{name}.msg is not installed (the ros-* wheels of requirements.txt ship it)")


def fields(datatype: str) -> dict:
    """``{field: (type, is_array)}`` of a ``pkg/Type`` or ``pkg/msg/Type``, read from its .msg file
    (constants skipped; ``T[]``, ``T[N]``, ``T[<=N]`` are arrays; a bare ``Type`` is of ``pkg``)."""
    pkg, name = datatype.split("/")[0], datatype.split("/")[-1]
    out = {}
    for line in _msg_file(pkg, name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if "=" in parts[1] or (len(parts) > 2 and parts[2].startswith("=")):
            continue                          # a constant (NAME = value); a default value has no '='
        typ, field = parts[:2]
        array = "[" in typ
        typ = re.sub(r"\[.*\]$", "", typ)
        typ = re.sub(r"<=\d+$", "", typ)      # bounded strings
        if typ not in PRIMITIVES:
            typ = BUILTIN.get(typ, typ if "/" in typ else "std_msgs/Header" if typ == "Header" else f"{pkg}/{typ}")
        out[field] = (typ, array)
    return out


def resolve(datatype: str, path: str) -> str:
    """The type at ``path`` (``.a.b[0].c`` or ``a[...]``) in ``datatype``; AssertionError naming the
    first field that does not exist, or an index on a field that is not an array."""
    typ, array = datatype, False
    for m in re.finditer(r"\.?([A-Za-z_]\w*)((?:\[[^\]]*\])?)", path):
        assert typ not in PRIMITIVES, f"{path}: {typ} has no field {m.group(1)!r}"
        have = fields(typ)
        assert m.group(1) in have, f"{path}: {typ} has no field {m.group(1)!r} (it has {', '.join(have)})"
        typ, array = have[m.group(1)]
        if m.group(2):
            assert array, f"{path}: {m.group(1)} of {datatype} is not an array"
            array = False
    return typ


def _section(title: str) -> str:
    text = PAGE.read_text()
    assert f"## {title}" in text, f"{PAGE.name} has no section {title!r}"
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _topic_type(topic: str) -> str:
    """The recorded type of ``/<level>/<topic>`` (or a global ``/diagnostics``)."""
    if topic in TOPICS:
        return TOPICS[topic]
    level_free = topic.lstrip("/").split("/", 1)[1] if topic.count("/") >= 2 else None
    assert level_free in TOPICS, f"{topic}: not a recorded topic under /<level>/ ({', '.join(TOPICS)})"
    return TOPICS[level_free]


def test_every_foxglove_field_of_the_page_exists_in_the_recorded_messages():
    tokens = re.findall(r"`([^`]+)`", _section("Open it in Foxglove"))
    paths, context, bad = 0, None, []
    for token in tokens:
        full = re.fullmatch(r"(/[A-Za-z0-9_/]+?)((?:\.[A-Za-z_]\w*(?:\[[^\]]*\])?)+)", token)
        try:
            if full:
                context = _topic_type(full.group(1))
                resolve(context, full.group(2))
                paths += 1
            elif re.fullmatch(r"[A-Za-z_]\w*(?:\[[^\]]*\]|\.[A-Za-z_]\w*)+(?:\[[^\]]*\]|\.[A-Za-z_]\w*)*", token):
                assert context, f"`{token}`: a field path before any message path names its topic"
                resolve(context, token)
                paths += 1
        except AssertionError as exc:
            bad.append(str(exc))
    assert not bad, "record.md names fields the recorded messages do not have:\n" + "\n".join(bad)
    assert paths >= 5, "the Foxglove section names message paths"


def test_the_resolver_refuses_what_a_message_does_not_have():
    """The check above can fail: the stale path, a non-array indexed, a field of a number."""
    for datatype, path in (("geodyn_msgs/msg/FeedforwardJet", ".data[7]"),
                           ("geodyn_msgs/msg/FeedforwardJet", ".order[0]"),
                           ("nav_msgs/msg/Odometry", ".pose.pose.position.z.w")):
        with pytest.raises(AssertionError):
            resolve(datatype, path)
    assert resolve("geodyn_msgs/msg/FeedforwardJet", ".base_wrench[1].force.z") == "float64"
    assert resolve("std_msgs/msg/Float64MultiArray", ".layout.dim[1].label") == "string"


def test_the_table_names_the_recorded_types():
    rows = [ln for ln in _section("What is in the file").splitlines()
            if ln.startswith("| ") and "`" in ln and not ln.startswith("| kind ")]
    seen = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        topics = re.findall(r"`([^`]+)`", cells[1])
        types = [t for t in re.findall(r"`([^`]+)`", cells[2]) if "/" in t]
        assert len(types) >= len(topics), row
        for topic, typ in zip(topics, types):
            recorded = TOPICS[topic]
            assert typ.replace("/", "/msg/") == recorded, f"{topic}: the table says {typ}, the recorder writes {recorded}"
            seen.add(topic)
        if topics == ["cmd/rotor_speeds"]:   # the same type as the nodes publish over ROS 2
            from geodyn_ros.ros.wire.actuator_commands import ROTOR_MSG_NAME
            assert types[0].replace("/", "/msg/") == ROTOR_MSG_NAME, row
    assert seen == set(TOPICS), sorted(set(TOPICS) - seen)
