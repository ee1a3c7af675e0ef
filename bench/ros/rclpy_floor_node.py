#!/usr/bin/env python3
"""The floor of rclpy at 1 kHz: a node that does nothing but what geodyn_node's transport does.

Measured mode (default): it subscribes ``odom``, ``joint_states`` and ``reference`` (raw, like
geodyn_node) and publishes three pre-serialized messages: with ``input_policy: latest`` (the
default, as geodyn_node's) on every ``odom`` once a ``joint_states`` has come, with ``exact`` when
both ``odom`` and ``joint_states`` have arrived since the last output; the messages are (``feedforward/wrench``, ``feedforward/joint_efforts``,
``feedforward/jet``, the jet packed with the state's stamp as geodyn_node packs it) on the same
``EventsExecutor`` and QoS. Flat mode (``-p input_mode:=flat``): on every ``flat_reference`` it
publishes what geodyn_node's flat mode publishes: the three above plus ``desired/state``,
``feedforward/flat_jet`` and ``feedforward/rotor_speeds``, pre-serialized at the sizes of the
hexarotor manipulator at the given order. No decoding, no dynamics, no checks.

The jet topics have the types of ``message_types`` (default ``typed``, as geodyn_node's): the
``geodyn_msgs`` messages (``ReferenceJet`` / ``FlatReference`` subscribed; ``FeedforwardJet``,
``DesiredState``, ``FeedforwardJet`` (body), ``RotorSpeeds`` published, at the sizes and with the
frames geodyn_node's carry; ``feedforward/jet`` stamped by one compiled write into its template,
as geodyn_node writes it), or ``multiarray``: the deprecated ``Float64MultiArray`` layouts.

``bench_soak.py --floor`` runs it in place of geodyn_node, ``bench_soak.py --pair`` next to it:
its CPU per cycle is what any rclpy node with this traffic costs on the machine, the part of
geodyn_node's cycle that Python code cannot remove.

Parameters (``--ros-args -p``): ``order`` (2), ``input_mode`` (``measured`` | ``flat``),
``qos_depth`` (2) and ``input_depth`` (10) (the outputs' and the inputs' keep-last depths,
geodyn_node's defaults), ``input_reliability`` and ``output_reliability``
and ``sensor_reliability`` (odom, joint_states; default ``best_effort``) (``reliable`` |
``best_effort``, as geodyn_node's), ``input_policy`` (``latest`` | ``exact``), ``message_types``
(``typed`` | ``multiarray``); other ``-p`` are ignored.
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

from geodyn_ros.ros.wire.jets import FeedforwardJetPacker
from geodyn_ros.ros.common.runtime import control_qos, run_nodes

JOINTS = ["J2", "J3", "J4", "J5", "J6", "J7"]
N_ROTORS = 6   # the hexarotor of urdf/hexarotor_manipulator.urdf.xacro


def _qos(depth: int, reliability: str):
    qos = control_qos(depth)
    if reliability == "best_effort":
        from rclpy.qos import ReliabilityPolicy
        qos.reliability = ReliabilityPolicy.BEST_EFFORT
    return qos


def _array(rows: int, cols: int, offset: int = 2) -> bytes:
    """A serialized Float64MultiArray of ``offset + rows * cols`` doubles with a two-dim layout."""
    m = Float64MultiArray()
    from std_msgs.msg import MultiArrayDimension
    m.layout.dim = [MultiArrayDimension(label="rows", size=rows, stride=rows * cols),
                    MultiArrayDimension(label="c" * (8 * cols), size=cols, stride=cols)]
    m.layout.data_offset = offset
    m.data = [0.0] * (offset + rows * cols)
    return serialize_message(m)


def _typed_flat_outputs(r: int) -> tuple:
    """Serialized ``DesiredState`` (r+2 entries), ``FeedforwardJet`` (body, r+1) and ``RotorSpeeds``
    (r+1 x N_ROTORS): geodyn_node's flat outputs, with its frames."""
    from geodyn_msgs.msg import DesiredState

    from geodyn_ros.ros.wire.typed import TypedFeedforwardPacker, TypedRotorSpeedPacker, make_reference_jet
    n = len(JOINTS)
    desired = make_reference_jet(0, np.eye(4), np.zeros((r + 2, 6)), np.zeros((r + 2, n)), JOINTS, cls=DesiredState)
    flat = TypedFeedforwardPacker(JOINTS, r).pack_flat(0, np.zeros(r + 1), np.zeros((r + 1, 3)), np.zeros((r + 1, n)))
    rotors = TypedRotorSpeedPacker([f"rotor_{i}" for i in range(N_ROTORS)], r).pack(0, np.zeros((r + 1, N_ROTORS)))
    return serialize_message(desired), serialize_message(flat), serialize_message(rotors)


class FloorNode(rclpy.node.Node):
    def __init__(self, **kwargs):
        super().__init__("geodyn_node", allow_undeclared_parameters=True,
                         automatically_declare_parameters_from_overrides=True, **kwargs)

        def param(name, default):
            return self.get_parameter(name).value if self.has_parameter(name) else default
        r = int(param("order", 2))
        self.flat = param("input_mode", "measured") == "flat"
        qin = _qos(int(param("input_depth", 10)), param("input_reliability", "reliable"))
        qsensor = _qos(int(param("input_depth", 10)), param("sensor_reliability", "best_effort"))
        self.latest = param("input_policy", "latest") == "latest"
        qout = _qos(int(param("qos_depth", 2)), param("output_reliability", "reliable"))
        self.typed = param("message_types", "typed") == "typed"
        if self.typed:
            from geodyn_msgs.msg import DesiredState, FeedforwardJet, FlatReference, ReferenceJet, RotorSpeeds
            types = {"reference": ReferenceJet, "flat_reference": FlatReference, "jet": FeedforwardJet,
                     "desired": DesiredState, "flat_jet": FeedforwardJet, "rotor_speeds": RotorSpeeds}
        else:
            types = dict.fromkeys(("reference", "flat_reference", "jet", "desired", "flat_jet", "rotor_speeds"),
                                  Float64MultiArray)
        if self.flat:
            self.create_subscription(types["flat_reference"], "flat_reference", self._flat_ref, qin, raw=True)
        else:
            self.create_subscription(Odometry, "odom", self._odom, qsensor, raw=True)
            self.create_subscription(JointState, "joint_states", self._js, qsensor, raw=True)
            self.create_subscription(types["reference"], "reference", lambda m: None, qin, raw=True)
        self.pw = self.create_publisher(WrenchStamped, "feedforward/wrench", qout)
        self.pe = self.create_publisher(JointState, "feedforward/joint_efforts", qout)
        self.pj = self.create_publisher(types["jet"], "feedforward/jet", qout)
        w = WrenchStamped()
        w.header.frame_id = "base_link"
        e = JointState()
        e.name, e.effort = JOINTS, [0.0] * 6
        self.w, self.e = serialize_message(w), serialize_message(e)
        self.zeros = np.zeros((r + 1, 6))
        if self.typed:   # the template and the one compiled write of geodyn_node's feedforward/jet
            from geodyn_ros.ros.wire.typed_raw import TypedJetOutput
            out = TypedJetOutput(JOINTS, r)
            zeros = self.zeros.copy()
            zeros.flags.writeable = False
            self.jet_raw = lambda stamp: out.write_finite(stamp, zeros, zeros)
        else:
            jet = FeedforwardJetPacker(JOINTS, r)
            self.jet_raw = lambda stamp: jet.pack_raw(stamp, self.zeros, self.zeros)
        if self.flat:
            self.pd = self.create_publisher(types["desired"], "desired/state", qout)
            self.pf = self.create_publisher(types["flat_jet"], "feedforward/flat_jet", qout)
            self.pr = self.create_publisher(types["rotor_speeds"], "feedforward/rotor_speeds", qout)
            if self.typed:   # the typed messages of geodyn_node's sizes, serialized once
                self.desired, self.flat_jet, self.rotors = _typed_flat_outputs(r)
            else:
                # sizes of geodyn_node's flat outputs: reference layout (r+2 rows, 7 + 6 + n columns),
                # flat jet (r+1 rows, T, tau_b, tau), rotor speeds (r+1 rows, one column per rotor)
                self.desired = _array(r + 2, 19, 2 + 0)
                self.flat_jet = _array(r + 1, 4 + len(JOINTS))
                self.rotors = _array(r + 1, N_ROTORS)
        self.got = 0
        self.stamp = (0, 0)

    def _odom(self, raw):
        self.stamp = struct.unpack_from("<iI", raw, 4)
        if self.latest:   # a cycle per odom once a joint_states has come
            if self.got & 2:
                self._publish()
            return
        self.got |= 1
        self._maybe()

    def _js(self, raw):
        if self.latest:
            self.got = 2
            return
        self.got |= 2
        self._maybe()

    def _maybe(self):
        if self.got == 3:
            self.got = 0
            self._publish()

    def _publish(self):
        sec, nsec = self.stamp
        self.pw.publish(self.w)
        self.pe.publish(self.e)
        self.pj.publish(self.jet_raw(sec * 1_000_000_000 + nsec))

    def _flat_ref(self, raw):
        self._publish()
        self.pd.publish(self.desired)
        self.pf.publish(self.flat_jet)
        self.pr.publish(self.rotors)


def main() -> int:
    return run_nodes([FloorNode])


if __name__ == "__main__":
    sys.exit(main())
