#!/usr/bin/env python3
"""The floor of rclpy at 1 kHz: a node that does nothing but what geodyn_node's transport does.

It subscribes ``odom`` and ``joint_states`` (raw, like geodyn_node) and, when both have arrived,
publishes three pre-serialized messages (``feedforward/wrench``, ``feedforward/efforts``,
``feedforward/jet``) with the state's stamp, on the same ``EventsExecutor`` and QoS. No decoding,
no dynamics. ``bench_soak.py --floor`` runs it in place of geodyn_node: its CPU per cycle is
what any rclpy node with this traffic costs on the machine, the part of geodyn_node's cycle
that Python code cannot remove.
"""
from __future__ import annotations

import struct
import sys

import numpy as np
import rclpy
import rclpy.node
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from geodyn_ros.ros.jets import FeedforwardJetPacker
from geodyn_ros.ros.runtime import control_qos, run_nodes

JOINTS = ["J2", "J3", "J4", "J5", "J6", "J7"]


class FloorNode(rclpy.node.Node):
    def __init__(self, **kwargs):
        super().__init__("geodyn_node", **kwargs)
        qos = control_qos(100)
        self.create_subscription(Odometry, "odom", self._odom, qos, raw=True)
        self.create_subscription(JointState, "joint_states", self._js, qos, raw=True)
        self.create_subscription(Float64MultiArray, "reference", lambda m: None, qos, raw=True)
        self.pw = self.create_publisher(WrenchStamped, "feedforward/wrench", control_qos(2))
        self.pe = self.create_publisher(JointState, "feedforward/efforts", control_qos(2))
        self.pj = self.create_publisher(Float64MultiArray, "feedforward/jet", control_qos(2))
        w = WrenchStamped()
        w.header.frame_id = "base_link"
        e = JointState()
        e.name, e.effort = JOINTS, [0.0] * 6
        self.w, self.e = serialize_message(w), serialize_message(e)
        self.jet = FeedforwardJetPacker(JOINTS, 2)
        self.got = 0

    def _odom(self, raw):
        self.stamp = struct.unpack_from("<iI", raw, 4)
        self.got |= 1
        self._maybe()

    def _js(self, raw):
        self.got |= 2
        self._maybe()

    def _maybe(self):
        if self.got == 3:
            self.got = 0
            sec, nsec = self.stamp
            self.pw.publish(self.w)
            self.pe.publish(self.e)
            self.pj.publish(self.jet.pack_raw(sec * 1_000_000_000 + nsec, np.zeros((3, 6)), np.zeros((3, 6))))


def main() -> int:
    return run_nodes([FloorNode])


if __name__ == "__main__":
    sys.exit(main())
