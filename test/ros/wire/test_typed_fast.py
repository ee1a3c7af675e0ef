"""``geodyn_ros.ros.wire.typed_raw``'s compiled input paths (``FastTypedFeedforward``,
``FastTypedReference``, ``FastTypedFlatReference``): they only ever accept what the full typed
path accepts (the strict byte decoder, then the typed decoder), with its values; and the two
reference paths give the answers of the layout's compiled paths (``fast_inputs.FastReference``,
``FastFlatReference``, tested against the node's full path in ``test_fast_inputs.py``) bit for
bit on the same numbers carried both ways (one check kernel each, the same copies).
"""
import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("geodyn_msgs")
from rclpy.serialization import serialize_message  # noqa: E402

from geodyn_ros.ros.wire import typed_raw  # noqa: E402
from geodyn_ros.ros.wire.conversions import InputError  # noqa: E402
from geodyn_ros.ros.wire.typed import (TypedFeedforwardPacker, decode_typed_feedforward,  # noqa: E402
                                       make_flat_reference, make_reference_jet)
from geodyn_ros.ros.wire.typed_raw import (decode_feedforward_jet_cdr, decode_flat_reference_cdr,  # noqa: E402
                                           decode_reference_jet_cdr)

STAMP = 1_700_000_123_456_789_012


# ----------------------------------------------------------------------------- the compiled input path
def _full(raw):
    """The full path: strict bytes, then the typed checks; (stamp, W, tau) or None."""
    try:
        stamp, W, tau, _, _ = decode_typed_feedforward(decode_feedforward_jet_cdr(raw))
    except InputError:          # (a CdrError is one)
        return None
    return stamp, W, tau


def test_fast_feedforward_accepts_only_what_the_full_path_accepts():
    """Learn the shape of a message rclpy serialized (frame_id lengths 0..8, 0..3 joints, orders
    0..2), then decode: the same shape with new numbers (accepted, equal to the full path bit for
    bit; rclpy's uninitialized padding differs from message to message), and mutations of it
    (random bytes anywhere, a NaN, an invalid stamp, cut or extended): every message the compiled
    path accepts, the full path accepts with the same stamp and values; it declines the rest."""
    rng = np.random.default_rng(48)
    fast, declined, accepted = typed_raw.FastTypedFeedforward(), 0, 0
    for flen in range(9):
        n, order = flen % 4, flen % 3
        r1 = order + 1
        packer = TypedFeedforwardPacker([f"j{i}" for i in range(n)], order, frame_id="w" * flen, child_frame_id="b")
        raw = serialize_message(packer.pack(STAMP, rng.normal(size=(r1, 6)), rng.normal(size=(r1, n))))
        assert _full(raw) is not None
        fast.learn(raw)
        assert (fast.rows, fast.n) == (r1, n)
        for i in range(120):
            W, tau = rng.normal(size=(r1, 6)), rng.normal(size=(r1, n))
            b = bytearray(serialize_message(packer.pack(STAMP + i, W, tau)))
            if i % 4 == 1:
                for p in rng.integers(0, len(b), size=int(rng.integers(1, 3))):
                    b[p] = int(rng.integers(0, 256))
            elif i % 4 == 2:
                b = b[:int(rng.integers(0, len(b)))] if rng.integers(0, 2) else b + bytes(int(rng.integers(1, 9)))
            elif i % 4 == 3:                                       # an invalid stamp or a NaN
                if rng.integers(0, 2):
                    b[4:8] = b"\xff\xff\xff\xff"                     # sec = -1
                else:
                    W[int(rng.integers(0, r1)), int(rng.integers(0, 6))] = np.nan
                    b = bytearray(serialize_message(packer.pack(STAMP + i, W, tau)))
            Wo, to = np.full((r1, 6), 7.0), np.full((r1, n), 7.0)
            s = fast.decode(bytes(b), Wo, to)
            full = _full(bytes(b))
            if s < 0:
                declined += 1
                assert (Wo == 7.0).all() and (to == 7.0).all()       # nothing written
                assert i % 4 != 0, "a message of the learned shape was declined"
                assert i % 4 != 3 or full is None
            else:
                accepted += 1
                assert i % 4 != 3
                assert full is not None and full[0] == s
                assert np.array_equal(full[1], Wo) and np.array_equal(full[2], to)
                if i % 4 == 0:
                    assert np.array_equal(Wo, W) and np.array_equal(to, tau)
    assert accepted > 9 * 30 and declined > 9 * 30
    with pytest.raises(ValueError, match="shapes do not fit"):
        fast.decode(raw, np.zeros((r1 + 1, 6)), np.zeros((r1 + 1, n)))
    big = bytearray(raw)
    big[1] = 0                                                   # big endian: never learned
    fast.learn(bytes(big))
    assert fast.decode(raw, np.zeros((r1, 6)), np.zeros((r1, n))) == -1


def test_fast_reference_equals_the_layouts_compiled_path():
    """``FastTypedReference`` against ``fast_inputs.FastReference`` (tested against the node's full
    path in ``test_fast_inputs.py``) on the same numbers carried both ways: both decline, or both
    accept with the same stamp and the same C, V, Q bit for bit (one check kernel, the same
    copies). Numbers: random, then each entry in turn made NaN / Inf / over a plausibility limit,
    a non-unit quaternion, invalid stamps; shapes: other joint names, another row count, big endian."""
    from geodyn_ros.ros.wire.fast_inputs import FastReference
    from geodyn_ros.ros.wire.jets import make_reference_msg
    from geodyn_ros.lie import quat_to_matrix
    limits = dict(max_position=100.0, max_speed=10.0, max_joint_rate=5.0, max_input_magnitude=50.0)
    order, model = 2, ("J2", "J3", "J4")
    rng = np.random.default_rng(49)
    counts = [0, 0]
    for names in (("J3", "J2", "J4"), ("extra", "J4", "abc", "J2", "J3")):
        m, K1 = len(names), order + 3 + (len(names) > 3)
        idx = np.array([names.index(j) for j in model])

        def pair(V=None, q=None, stamp=(7, 89), quat=None, names=names, K1=K1):
            qq = rng.normal(size=4)
            C = np.eye(4)
            C[:3, :3] = quat_to_matrix(qq / np.linalg.norm(qq), "xyzw")
            C[:3, 3] = rng.uniform(-1, 1, 3)
            V = rng.uniform(-1, 1, (K1, 6)) if V is None else V
            q = rng.uniform(-1, 1, (K1, len(names))) if q is None else q
            lay = make_reference_msg(0, C, V, q, list(names))
            typ = make_reference_jet(0, C, V, q, names, frame_id="world" + "x" * len(names))
            data = list(lay.data)
            data[0], data[1] = stamp
            typ.header.stamp.sec, typ.header.stamp.nanosec = stamp
            if quat is not None:
                data[5:9] = quat
                o = typ.base_pose.orientation
                o.x, o.y, o.z, o.w = quat
            lay.data = data
            return serialize_message(lay), serialize_message(typ)

        a, b = FastReference(limits, order), typed_raw.FastTypedReference(limits, order)
        la, lb = pair()
        a.learn(la, idx + 6)
        b.learn(lb, idx)

        def compare(la, lb):
            outs = []
            for fast, raw in ((a, la), (b, lb)):
                C, V, Q = np.full((4, 4), 7.0), np.full((order + 2, 6), 7.0), np.full((order + 3, 3), 7.0)
                outs.append((fast.decode(raw, C, V, Q), C, V, Q))
            assert outs[0][0] == outs[1][0]
            for x, y in zip(outs[0][1:], outs[1][1:]):
                assert x.tobytes() == y.tobytes()
            counts[outs[0][0] < 0] += 1
            return outs[0][0]

        for _ in range(20):
            assert compare(*pair()) >= 0
        for k in range(K1):
            for j in range(6 + m):
                for bad in (np.nan, np.inf, 60.0, 200.0):
                    V, q = rng.uniform(-1, 1, (K1, 6)), rng.uniform(-1, 1, (K1, m))
                    if j < 6:
                        V[k, j] = bad
                    else:
                        q[k, j - 6] = bad
                    compare(*pair(V, q))
        compare(*pair(quat=[0.0, 0.0, 0.0, 1 + 2e-6]))
        for stamp in ((2 ** 31 - 1, 999_999_999), (0, 0)):
            assert compare(*pair(stamp=stamp)) >= 0
        other = ("J3", "J2", "J5") if m == 3 else ("extra", "J4", "abd", "J2", "J3")
        assert compare(*pair(names=other)) == -1
        assert compare(*pair(K1=K1 + 1)) == -1
        la, lb = (bytearray(x) for x in pair())
        la[1] = lb[1] = 0
        assert compare(bytes(la), bytes(lb)) == -1
    assert counts[0] > 40 and counts[1] > 40
    with pytest.raises(ValueError, match="shapes do not fit"):
        b.decode(lb, np.zeros((4, 4)), np.zeros((order + 1, 6)), np.zeros((order + 3, 3)))


def test_fast_flat_reference_equals_the_layouts_compiled_path():
    """``FastTypedFlatReference`` against ``fast_inputs.FastFlatReference`` (tested against the
    node's full path in ``test_fast_inputs.py``) on the same numbers carried both ways: both
    decline, or both accept with the same stamp, com, yaw, Q bit for bit. Each entry of every row
    in turn made NaN / Inf / over a plausibility limit; other names, another row count, big endian."""
    from geodyn_ros.ros.wire.fast_inputs import FastFlatReference
    from geodyn_ros.ros.wire.jets import make_flat_reference_msg
    limits = dict(max_position=100.0, max_speed=10.0, max_joint_rate=5.0, max_input_magnitude=50.0)
    order, model = 1, ("J2", "J3", "J4")
    rng = np.random.default_rng(50)
    counts = [0, 0]
    for names in (("J3", "J2", "J4"), ("extra", "J4", "abc", "J2", "J3")):
        m, K1 = len(names), order + 5 + (len(names) > 3)
        idx = np.array([names.index(j) for j in model])

        def pair(com=None, yaw=None, q=None, names=names, K1=K1, stamp=7_000_000_089):
            com = rng.uniform(-1, 1, (K1, 3)) if com is None else com
            yaw = rng.uniform(-1, 1, K1) if yaw is None else yaw
            q = rng.uniform(-1, 1, (K1, len(names))) if q is None else q
            return (serialize_message(make_flat_reference_msg(stamp, com, yaw, q, list(names))),
                    serialize_message(make_flat_reference(stamp, com, yaw, q, names, frame_id="w" * len(names))))

        a, b = FastFlatReference(limits, order), typed_raw.FastTypedFlatReference(limits, order)
        la, lb = pair()
        a.learn(la, idx + 4)
        b.learn(lb, idx)

        def compare(la, lb):
            outs = []
            for fast, raw in ((a, la), (b, lb)):
                bufs = (np.full((order + 5, 3), 7.0), np.full(order + 3, 7.0), np.full((order + 3, 3), 7.0))
                outs.append((fast.decode(raw, *bufs),) + bufs)
            assert outs[0][0] == outs[1][0]
            for x, y in zip(outs[0][1:], outs[1][1:]):
                assert x.tobytes() == y.tobytes()
            counts[outs[0][0] < 0] += 1
            return outs[0][0]

        for _ in range(20):
            assert compare(*pair()) >= 0
        for k in range(K1):
            for j in range(4 + m):
                for bad in (np.nan, -np.inf, 20.0, 200.0):
                    com, yaw, q = rng.uniform(-1, 1, (K1, 3)), rng.uniform(-1, 1, K1), rng.uniform(-1, 1, (K1, m))
                    if j < 3:
                        com[k, j] = bad
                    elif j == 3:
                        yaw[k] = bad
                    else:
                        q[k, j - 4] = bad
                    compare(*pair(com, yaw, q))
        assert compare(*pair(stamp=(2 ** 31 - 1) * 10 ** 9 + 999_999_999)) >= 0
        other = ("J3", "J2", "J5") if m == 3 else ("extra", "J4", "abd", "J2", "J3")
        assert compare(*pair(names=other)) == -1
        assert compare(*pair(K1=K1 + 1)) == -1
        la, lb = (bytearray(x) for x in pair())
        la[1] = lb[1] = 0
        assert compare(bytes(la), bytes(lb)) == -1
    assert counts[0] > 40 and counts[1] > 40
    with pytest.raises(ValueError, match="shapes do not fit"):
        b.decode(lb, np.zeros((order + 5, 3)), np.zeros(order + 3), np.zeros((order + 2, 3)))


def test_fast_typed_references_accept_only_what_the_full_path_accepts():
    """Random byte mutations of a learned ``ReferenceJet`` / ``FlatReference`` (1..3 bytes anywhere,
    cut or extended): whatever the compiled path accepts, the full path (the strict byte decoder,
    then ``TypedReferenceDecoder`` / ``TypedFlatReferenceDecoder``) accepts with the same stamp and
    values: the jets exactly (copied), the pose to 8e-15 (the same products; the quaternion norm
    summed by ``math.sqrt`` there and ``math.hypot`` here: a few ulps on entries of magnitude <= 1)."""
    from geodyn_ros.ros.wire.typed import TypedFlatReferenceDecoder, TypedReferenceDecoder
    limits = dict(max_position=100.0, max_speed=10.0, max_joint_rate=5.0, max_input_magnitude=50.0)
    order, model, names = 1, ("J2", "J3", "J4"), ("J3", "extra", "J2", "J4")
    idx = np.array([names.index(j) for j in model])
    rng = np.random.default_rng(51)
    ref = make_reference_jet(STAMP, np.eye(4), rng.uniform(-1, 1, (order + 3, 6)), rng.uniform(-1, 1, (order + 3, 4)),
                             names)
    flat = make_flat_reference(STAMP, rng.uniform(-1, 1, (order + 5, 3)), rng.uniform(-1, 1, order + 5),
                               rng.uniform(-1, 1, (order + 5, 4)), names)
    cases = (
        (serialize_message(ref), typed_raw.FastTypedReference(limits, order), decode_reference_jet_cdr,
         TypedReferenceDecoder(model, order), lambda: (np.zeros((4, 4)), np.zeros((order + 2, 6)),
                                                       np.zeros((order + 3, 3)))),
        (serialize_message(flat), typed_raw.FastTypedFlatReference(limits, order), decode_flat_reference_cdr,
         TypedFlatReferenceDecoder(model, order), lambda: (np.zeros((order + 5, 3)), np.zeros(order + 3),
                                                           np.zeros((order + 3, 3)))),
    )
    for raw, fast, cdr_decode, full, bufs in cases:
        fast.learn(raw, idx)
        accepted = 0
        for i in range(1500):
            b = bytearray(raw)
            if i % 3:
                for p in rng.integers(0, len(b), size=int(rng.integers(1, 4))):
                    b[p] = int(rng.integers(0, 256))
            else:
                b = b[:int(rng.integers(0, len(b)))] if rng.integers(0, 2) else b + bytes(int(rng.integers(1, 9)))
            got = bufs()
            s = fast.decode(bytes(b), *got)
            if s < 0:
                continue
            accepted += 1
            want = bufs()
            assert full.decode(cdr_decode(bytes(b)), *want) == s
            for x, y in zip(got, want):
                tol = 8e-15 if x.shape == (4, 4) else 0.0
                assert np.abs(x - y).max() <= tol
        assert accepted > 100
