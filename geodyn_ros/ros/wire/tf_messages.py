"""``tf2_msgs/TFMessage`` as a serialized template rewritten in place (the simulators' ``/tf``).

A :class:`TFWriter` is built once per robot from its frame pairs (``header.frame_id`` = parent,
``child_frame_id`` = child): the message is serialized once by rclpy, the byte offsets of every
stamp and of every transform's seven doubles are read back from the bytes (with
:class:`geodyn_ros.ros.wire.cdr.CdrReader`), and each publication only writes the stamp and the
numbers into them with two numpy assignments: no Python message, no serialization per step
(``Publisher.publish(bytes)``). ``test/ros/viz/test_ros_tf.py`` reads the bytes back with rclpy's
own deserializer.

Translations are in metres, quaternions ``(x, y, z, w)``; every transform of one message has the
same stamp.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

from .cdr import CdrReader, _serialize

__all__ = ["TFWriter", "tf_qos", "tf_static_qos"]


def tf_qos() -> QoSProfile:
    """tf2's ``/tf`` QoS (``tf2_ros::DynamicBroadcasterQoS``): reliable, volatile, keep last 100."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def tf_static_qos() -> QoSProfile:
    """tf2's ``/tf_static`` QoS (``tf2_ros::StaticBroadcasterQoS``): reliable, transient local, keep
    last 1 (a late subscriber, e.g. RViz started later, still gets the static transforms)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


class TFWriter:
    """A ``TFMessage`` of fixed frame pairs whose stamp and transforms are rewritten in place.

    Parameters
    ----------
    parents, children : sequence of str (same length m)
        ``header.frame_id`` and ``child_frame_id`` of each transform.
    """

    def __init__(self, parents, children):
        parents, children = list(parents), list(children)
        if len(parents) != len(children):
            raise ValueError(f"parents, children: {len(parents)} and {len(children)} names")
        msg = TFMessage()
        for p, c in zip(parents, children):
            ts = TransformStamped()
            ts.header.frame_id, ts.child_frame_id = p, c
            ts.transform.rotation.w = 1.0
            msg.transforms.append(ts)
        raw = _serialize(msg)
        r = CdrReader(raw)
        r.pads = []
        stamps, values = [], []
        m = r.u32("transforms")
        for i in range(m):
            stamps.append(r._take(8, 4, "stamp"))
            r.string("frame_id", "MAX_LABEL_BYTES")
            r.string("child_frame_id", "MAX_LABEL_BYTES")
            values.append(r.f64_block(7, "transform"))
        if any(v % 8 for v in values):   # rclpy writes XCDR1: doubles aligned to 8
            raise ValueError("TFWriter: the serialized transforms are not aligned to 8 bytes")
        self.m = m
        self._buf = bytearray(raw)
        for a, b in r.pads:              # rclpy leaves the alignment padding uninitialized: zero it
            self._buf[4 + a:4 + b] = bytes(b - a)
        e = r._e
        body = memoryview(self._buf)[4:]
        n8 = len(body) // 8
        self._f64 = np.frombuffer(body[:8 * n8], dtype=e + "f8")
        self._u32 = np.frombuffer(body[:4 * (len(body) // 4)], dtype=e + "u4")
        # every transform's 7 doubles (translation xyz, rotation xyzw) and stamp words
        self._vidx = (np.asarray(values, dtype=np.intp)[:, None] // 8 + np.arange(7)).reshape(-1)
        s = np.asarray(stamps, dtype=np.intp) // 4
        self._sec, self._nsec = s, s + 1
        self._vals = np.zeros((m, 7))

    def write(self, stamp_ns: int, translations, quaternions) -> bytes:
        """The serialized message stamped ``stamp_ns`` [ns] with ``translations`` (m, 3) [m] and
        ``quaternions`` (m, 4) (x, y, z, w), in the order of the frame pairs."""
        sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
        self._u32[self._sec] = sec & 0xFFFFFFFF
        self._u32[self._nsec] = nsec
        v = self._vals
        v[:, :3] = translations
        v[:, 3:] = quaternions
        self._f64[self._vidx] = v.reshape(-1)
        return bytes(self._buf)
