"""geodyn_ros.ros.wire.raw_outputs (geodyn_node's serialized output templates) against rclpy's own
deserializer and the message builders of geodyn_ros.ros.wire.jets, and its compiled helpers against
closed forms.

* Every template, written with random numbers and a stamp, deserializes (rclpy) to exactly the
  message the ``jets`` packer (or ``make_reference_msg``) builds from the same numbers, bit for
  bit (the quaternion of ``desired/state`` too: both use ``lie.rotation_to_wxyz``).
* ``JetOutput.write_finite`` (the compiled write and NaN/Inf check) gives the packer's message
  bit for bit on finite values (read-only, writable and strided inputs), None with a NaN or an
  Inf anywhere, and a ValueError naming ``W, tau`` for shapes that do not fit the template.
* ``FlatJetOutput.write_ro`` and ``DesiredStateOutput.write_ro`` (the compiled writes of flat
  mode) give the packer's message bit for bit and the same bytes as ``write`` (the same numbers copied; the same quaternion kernel),
  on read-only and writable inputs, and a ValueError naming the arguments for shapes that do not
  fit the template.
* ``RotorSpeedOutput.write_flat`` (the compiled allocation and square-root series) equals
  ``rotor_speed_jet`` written by ``write`` to 4 ulps relative per row (the allocation's product
  summed in a loop instead of numpy's; measured 0-1 ulp), and bit for bit ``sqrt_jet`` of the
  allocation summed in the kernel's order (one square-root series); on an infeasible rotor it
  gives ``rotor_speed_jet``'s own refusal line and no message.
* ``quat_xyzw`` equals ``geodyn_ros.lie.matrix_to_quat`` bit for bit on random rotations and on
  the four branches (trace > 0 and each diagonal entry largest), and rebuilds the rotation
  (closed forms and scipy: ``test/model/test_lie_quat.py``).
* ``sqrt_jet`` of ``u(t) = a + b t + c t^2 + d t^3`` at t = 0 equals the derivatives of
  ``sqrt(u)`` in closed form (sympy-free: written out by hand below) to 1e-13 relative.
"""
import math

import numpy as np
import pytest

pytest.importorskip("rclpy")
from rclpy.serialization import deserialize_message  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from geodyn_ros.lie import matrix_to_quat, quat_to_matrix  # noqa: E402
from geodyn_ros.ros.wire.jets import (FeedforwardJetPacker, FlatFeedforwardPacker, RotorSpeedPacker,  # noqa: E402
                                 make_reference_msg)
from geodyn_ros.ros.wire.raw_outputs import (DesiredStateOutput, FlatJetOutput, JetOutput,  # noqa: E402
                                        RotorSpeedOutput, quat_xyzw, readonly_views,
                                        rotor_speed_jet, sqrt_jet)

RNG = np.random.default_rng(3)
NAMES = ("J2", "J3", "J4")
STAMP = 1_700_000_123_456_789_012


def _same(raw, msg, data_tol=0.0):
    got = deserialize_message(raw, Float64MultiArray)
    assert [(d.label, d.size, d.stride) for d in got.layout.dim] == \
        [(d.label, d.size, d.stride) for d in msg.layout.dim]
    assert got.layout.data_offset == msg.layout.data_offset
    a, b = np.array(got.data), np.array(msg.data)
    assert a.shape == b.shape and np.abs(a - b).max() <= data_tol


@pytest.mark.parametrize("order", [0, 2, 3])
def test_jet_templates_equal_the_packers(order):
    r1 = order + 1
    jet, flat = JetOutput(NAMES, order), FlatJetOutput(NAMES, order)
    rot = RotorSpeedOutput(("r0", "r1", "r2", "r3"), order)
    for _ in range(3):
        W, tau = RNG.normal(size=(r1, 6)), RNG.normal(size=(r1, 3))
        T, tb, om = RNG.normal(size=r1), RNG.normal(size=(r1, 3)), RNG.normal(size=(r1, 4))
        _same(jet.write(STAMP, W, tau), FeedforwardJetPacker(NAMES, order).pack(STAMP, W, tau))
        _same(flat.write(STAMP, T, tb, tau), FlatFeedforwardPacker(NAMES, order).pack(STAMP, T, tb, tau))
        _same(rot.write(STAMP, om), RotorSpeedPacker(("r0", "r1", "r2", "r3"), order).pack(STAMP, om))


@pytest.mark.parametrize("order", [0, 2])
def test_jet_write_finite(order):
    r1 = order + 1
    jet, packer = JetOutput(NAMES, order), FeedforwardJetPacker(NAMES, order)
    for k in range(3):
        W, tau = RNG.normal(size=(r1, 6)), RNG.normal(size=(r1, 3))
        W.flags.writeable = k != 1   # the workspace's outputs are read-only views
        big = RNG.normal(size=(r1, 6))
        tau_in = big[:, ::2] if k == 2 else tau   # a strided view
        if k == 2:
            tau = tau_in.copy()
        _same(jet.write_finite(STAMP + k, W, tau_in), packer.pack(STAMP + k, W, tau))   # exact
    for bad in (np.nan, np.inf, -np.inf):
        for which in ("W", "tau"):
            W, tau = RNG.normal(size=(r1, 6)), RNG.normal(size=(r1, 3))
            (W if which == "W" else tau)[r1 - 1, 1] = bad
            assert jet.write_finite(STAMP, W, tau) is None
    # a sum that overflows counts as not finite, as math.isfinite(W.sum() + tau.sum()) does
    assert jet.write_finite(STAMP, np.full((r1, 6), 1e308), np.zeros((r1, 3))) is None
    with pytest.raises(ValueError, match="W, tau"):
        jet.write_finite(STAMP, np.zeros((r1, 6)), np.zeros((r1, 4)))
    with pytest.raises(ValueError, match="W, tau"):
        jet.write_finite(STAMP, np.zeros((r1 + 1, 6)), np.zeros((r1, 3)))


def test_desired_state_equals_make_reference_msg():
    out = DesiredStateOutput(NAMES, 2)
    for _ in range(5):
        q = RNG.normal(size=4)
        C = np.eye(4)
        C[:3, :3] = quat_to_matrix(q / np.linalg.norm(q), "xyzw")
        C[:3, 3] = RNG.normal(size=3)
        V, Q = RNG.normal(size=(4, 6)), RNG.normal(size=(4, 3))
        _same(out.write(STAMP, C, V, Q), make_reference_msg(STAMP, C, V, Q, NAMES))   # exact: one kernel


@pytest.mark.parametrize("order", [0, 2])
def test_flat_mode_compiled_writes(order):
    r1, K1 = order + 1, order + 2
    flat, packer, des = FlatJetOutput(NAMES, order), FlatFeedforwardPacker(NAMES, order), DesiredStateOutput(NAMES, order)
    for k in range(4):
        T, tb, tau = RNG.normal(size=r1), RNG.normal(size=(r1, 3)), RNG.normal(size=(r1, 3))
        qr = RNG.normal(size=4)
        C = np.eye(4)
        C[:3, :3] = quat_to_matrix(qr / np.linalg.norm(qr), "xyzw")
        C[:3, 3] = RNG.normal(size=3)
        V, Q = RNG.normal(size=(K1, 6)), RNG.normal(size=(K1 + 1, 3))   # q has a row more, as the flat map's
        args = readonly_views((T, tb, tau, C, V, Q)) if k % 2 else (T, tb, tau, C, V, Q)
        got = bytes(flat.write_ro(STAMP + k, args[0], args[1], args[2]))
        _same(got, packer.pack(STAMP + k, T, tb, tau))   # exact
        assert got == bytes(flat.write(STAMP + k, T, tb, tau))
        got = bytes(des.write_ro(STAMP + k, args[3], args[4], args[5]))
        _same(got, make_reference_msg(STAMP + k, C, V, Q[:K1], NAMES))   # exact: one quaternion kernel
        assert got == bytes(des.write(STAMP + k, C, V, Q[:K1]))
    with pytest.raises(ValueError, match="thrust, torque, tau"):
        flat.write_ro(STAMP, np.zeros(r1), np.zeros((r1, 3)), np.zeros((r1, 4)))
    with pytest.raises(ValueError, match="thrust, torque, tau"):
        flat.write_ro(STAMP, np.zeros(r1 + 1), np.zeros((r1, 3)), np.zeros((r1, 3)))
    with pytest.raises(ValueError, match="C, V, q"):
        des.write_ro(STAMP, np.eye(4), np.zeros((K1, 6)), np.zeros((K1 - 1, 3)))
    with pytest.raises(ValueError, match="C, V, q"):
        des.write_ro(STAMP, np.eye(4), np.zeros((K1, 6)), np.zeros((K1, 4)))


def _quad_x_allocation(max_speed):
    from geodyn_ros.control.rotors import Allocation
    kf, km, arm = 8.5e-6, 1.4e-7, 0.18
    A = np.zeros((6, 4))
    for i, (x, y, spin) in enumerate([(arm, -arm, 1), (-arm, arm, 1), (arm, arm, -1), (-arm, -arm, -1)]):
        A[:, i] = (y * kf, -x * kf, spin * km, 0.0, 0.0, kf)   # moment first, body axes, per unit omega^2
    return Allocation(A, max_speed)


@pytest.mark.parametrize("order", [0, 1, 3])
def test_rotor_speeds_compiled_equal_rotor_speed_jet(order):
    r1, names = order + 1, ("r0", "r1", "r2", "r3")
    out = RotorSpeedOutput(names, order)
    for max_speed in (1100.0, np.array([1100.0, 1200.0, 1000.0, 1100.0])):
        al = _quad_x_allocation(max_speed)
        for k in range(4):
            T = np.r_[15.0 + RNG.normal(), RNG.normal(size=order)]
            tb = RNG.normal(size=(r1, 3)) * 0.1
            args = readonly_views((T, tb)) if k % 2 else (T, tb)
            got, problem = out.write_flat(STAMP + k, al, names, *args)
            omega, want_problem = rotor_speed_jet(al, names, T, tb)
            assert problem == want_problem == "" and omega is not None
            _same(got, RotorSpeedPacker(names, order).pack(STAMP + k, omega),   # layout, stamp (rows below)
                  data_tol=4 * np.finfo(float).eps * np.abs(omega).max())
            a = np.array(deserialize_message(got, Float64MultiArray).data[2:]).reshape(r1, 4)
            assert np.all(np.abs(a - omega) <= 4 * np.finfo(float).eps * np.abs(omega).max(axis=1, keepdims=True))
            A = al.A4_pinv   # u summed as the kernel sums it (elementwise IEEE, the same order): one series
            u = T[:, None] * A[:, 0] + (tb[:, 0:1] * A[:, 1] + tb[:, 1:2] * A[:, 2] + tb[:, 2:3] * A[:, 3])
            assert a.tobytes() == sqrt_jet(u).tobytes()
        T = np.r_[300.0, np.zeros(order)]   # beyond every rotor's maximum speed
        got, problem = out.write_flat(STAMP, al, names, T, np.zeros((r1, 3)))
        assert got is None and problem == rotor_speed_jet(al, names, T, np.zeros((r1, 3)))[1]
        assert problem.startswith("feedforward/rotor_speeds not published: rotor r")
        T = np.r_[-1.0, np.zeros(order)]    # a negative thrust: omega^2 <= 0
        got, problem = out.write_flat(STAMP, al, names, T, np.zeros((r1, 3)))
        assert got is None and problem == rotor_speed_jet(al, names, T, np.zeros((r1, 3)))[1]
    with pytest.raises(ValueError, match="thrust, torque"):
        out.write_flat(STAMP, al, names, np.ones(r1 + 1), np.zeros((r1, 3)))


@pytest.mark.parametrize("case", ["random", "x", "y", "z"])
def test_quat_xyzw_equals_matrix_to_quat(case):
    for _ in range(20):
        if case == "random":
            q = RNG.normal(size=4)
        else:   # a rotation by more than 120 deg about an axis near x, y or z: trace < 0, that diagonal largest
            axis = {"x": 0, "y": 1, "z": 2}[case]
            v = 0.1 * RNG.normal(size=3)
            v[axis] = 1.0
            ang = RNG.uniform(2.2, 3.1)
            q = np.r_[math.sin(ang / 2) * v / np.linalg.norm(v), math.cos(ang / 2)]
        R = quat_to_matrix(q / np.linalg.norm(q), "xyzw")
        if case != "random":
            assert np.trace(R) < 0 and np.argmax(np.diag(R)) == {"x": 0, "y": 1, "z": 2}[case]
        got = quat_xyzw(R)
        assert got.tobytes() == matrix_to_quat(R, "xyzw").tobytes()   # one kernel: the same bytes
        assert np.abs(quat_to_matrix(got, "xyzw") - R).max() <= 1e-15


def test_sqrt_jet_equals_closed_form():
    """w = sqrt(u): w' = u'/(2w), w'' = (u'' - 2 w'^2)/(2w), w''' = (u''' - 6 w' w'')/(2w) (from
    differentiating w^2 = u three times)."""
    for _ in range(10):
        a = RNG.uniform(0.5, 3.0, 5)
        b, c, d = RNG.normal(size=(3, 5))
        u = np.array([a, b, 2 * c, 6 * d])             # u^(0..3) at t = 0
        w0 = np.sqrt(a)
        w1 = b / (2 * w0)
        w2 = (2 * c - 2 * w1 ** 2) / (2 * w0)
        w3 = (6 * d - 6 * w1 * w2) / (2 * w0)
        want = np.array([w0, w1, w2, w3])
        # a few operations on O(1) numbers: rounding ~1e-15; 1e-13 relative to the largest entry
        assert np.abs(sqrt_jet(u) - want).max() <= 1e-13 * np.abs(want).max()
