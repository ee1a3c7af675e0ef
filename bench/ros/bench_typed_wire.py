#!/usr/bin/env python3
"""Cost per message of the typed wire layer (``geodyn_ros.ros.wire.typed_raw``), measured in one run.

Writing (``geodyn_node``'s outputs, one message per cycle): for ``feedforward/jet`` and
``desired/state``, each at a few orders and joint counts,

* ``rclpy``: ``serialize_message`` of a message object already filled (the reference, 1.00);
* ``pack+rclpy``: the typed encoder (:mod:`geodyn_ros.ros.wire.typed`) filling the message, then
  ``serialize_message`` (what a node without the raw path does every cycle);
* ``typed raw``: :class:`TypedJetOutput.write_finite` / :class:`TypedDesiredStateOutput.write_ro`
  (one compiled call into the serialized template, then ``bytes``);
* ``F64MA raw``: the existing ``Float64MultiArray`` templates of ``raw_outputs``
  (``JetOutput.write_finite`` / ``DesiredStateOutput.write_ro``), the path the node uses today.

Reading (a controller's ``feedforward/jet`` / ``reference`` input): ``deserialize_message`` (the
reference), ``deserialize_message`` + the typed decoder, and the strict byte decoder
(``decode_*_cdr``, warm name cache) + the typed decoder; and the
compiled path of a learned shape (``FastTypedFeedforward.decode``, ``FastTypedReference.decode``
with plausibility limits that every value passes).

Timed round-robin (one batch of each in turn, ``--repeats`` times), each figure the median over
batches, so a burst of load on a shared machine hits all of them; ratios are against the
reference of the same row group measured in the same run. Figures, not assertions.

    python bench/ros/bench_typed_wire.py [--repeats 15] [--budget 0.02]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from geodyn_msgs.msg import FeedforwardJet, ReferenceJet  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

from geodyn_ros.ros.wire.raw_outputs import DesiredStateOutput, JetOutput, readonly_views  # noqa: E402
from geodyn_ros.ros.wire.typed import (TypedFeedforwardPacker, TypedReferenceDecoder,  # noqa: E402
                                       decode_typed_feedforward, make_reference_jet)
from geodyn_ros.ros.wire.typed_raw import (FastTypedFeedforward, FastTypedReference, TypedDesiredStateOutput, TypedJetOutput,  # noqa: E402
                                           decode_feedforward_jet_cdr, decode_reference_jet_cdr, typed_name_cache)

STAMP = 1_700_000_123_456_789_012


def run(f, budget):
    """Seconds per call of ``f()`` over a batch of about ``budget`` seconds."""
    t0 = time.perf_counter()
    f()
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(1, int(budget / one))
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n


def groups():
    rng = np.random.default_rng(0)
    for order, n in ((0, 6), (2, 6), (3, 12), (3, 60)):
        names = tuple(f"joint_{i}" for i in range(n))
        r1 = order + 1
        W, tau = readonly_views((rng.normal(size=(r1, 6)), rng.normal(size=(r1, n))))
        packer = TypedFeedforwardPacker(names, order, child_frame_id="base_link")
        msg = packer.pack(STAMP, W, tau)
        typed, f64 = TypedJetOutput(names, order), JetOutput(names, order)
        yield f"feedforward/jet r={order} n={n}", [
            ("rclpy", lambda msg=msg: serialize_message(msg)),
            ("pack+rclpy", lambda p=packer, W=W, tau=tau: serialize_message(p.pack(STAMP, W, tau))),
            ("typed raw", lambda o=typed, W=W, tau=tau: o.write_finite(STAMP, W, tau)),
            ("F64MA raw", lambda o=f64, W=W, tau=tau: o.write_finite(STAMP, W, tau)),
        ]
        K1 = order + 2
        C = np.eye(4)
        C[:3, 3] = 1.0
        C, V, q = readonly_views((C, rng.normal(size=(K1, 6)), rng.normal(size=(K1 + 1, n))))
        dmsg = make_reference_jet(STAMP, C, V, q[:K1], names)
        td, fd = TypedDesiredStateOutput(names, order), DesiredStateOutput(names, order)
        yield f"desired/state r={order} n={n}", [
            ("rclpy", lambda m=dmsg: serialize_message(m)),
            ("pack+rclpy", lambda C=C, V=V, q=q, names=names, K1=K1: serialize_message(
                make_reference_jet(STAMP, C, V, q[:K1], names))),
            ("typed raw", lambda o=td, C=C, V=V, q=q: o.write_ro(STAMP, C, V, q)),
            ("F64MA raw", lambda o=fd, C=C, V=V, q=q: o.write_ro(STAMP, C, V, q)),
        ]
        raw = serialize_message(msg)
        cache = typed_name_cache()
        fast = FastTypedFeedforward()
        fast.learn(raw)
        fbufs = (np.zeros((r1, 6)), np.zeros((r1, n)))
        yield f"read feedforward/jet r={order} n={n}", [
            ("rclpy", lambda raw=raw: deserialize_message(raw, FeedforwardJet)),
            ("rclpy+decode", lambda raw=raw: decode_typed_feedforward(deserialize_message(raw, FeedforwardJet))),
            ("cdr+decode", lambda raw=raw, c=cache: decode_typed_feedforward(decode_feedforward_jet_cdr(raw, cache=c))),
            ("compiled", lambda raw=raw, f=fast, b=fbufs: f.decode(raw, *b)),
        ]
        ref = serialize_message(make_reference_jet(STAMP, C, rng.normal(size=(order + 3, 6)),
                                                   rng.normal(size=(order + 3, n)), names))
        dec = TypedReferenceDecoder(names, order)
        bufs = (np.zeros((4, 4)), np.zeros((order + 2, 6)), np.zeros((order + 3, n)))
        rcache = typed_name_cache()
        fref = FastTypedReference(dict(max_position=1e9, max_speed=1e9, max_joint_rate=1e9, max_input_magnitude=1e9),
                                  order)
        fref.learn(ref, np.arange(n))
        yield f"read reference r={order} n={n}", [
            ("rclpy", lambda raw=ref: deserialize_message(raw, ReferenceJet)),
            ("rclpy+decode", lambda raw=ref, d=dec, b=bufs: d.decode(deserialize_message(raw, ReferenceJet), *b)),
            ("cdr+decode", lambda raw=ref, d=dec, b=bufs, c=rcache:
                d.decode(decode_reference_jet_cdr(raw, cache=c), *b)),
            ("compiled", lambda raw=ref, f=fref, b=bufs: f.decode(raw, *b)),
        ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="round-robin batches (median)")
    ap.add_argument("--budget", type=float, default=0.02, help="seconds per batch")
    a = ap.parse_args(argv)
    print(f"{'message':34s} {'path':14s} {'us/msg':>9s} {'ratio':>7s}")
    for name, cases in groups():
        for _, f in cases:
            f()                                  # compiled kernels loaded before timing
        times = {label: [] for label, _ in cases}
        for _ in range(a.repeats):
            for label, f in cases:
                times[label].append(run(f, a.budget))
        ref = statistics.median(times[cases[0][0]])
        for label, _ in cases:
            t = statistics.median(times[label])
            print(f"{name:34s} {label:14s} {t * 1e6:9.2f} {t / ref:7.2f}", flush=True)


if __name__ == "__main__":
    main()
