#!/usr/bin/env python3
"""``geodyn_node``'s per-message compiled helpers against another revision of themselves, in one process.

The four modules that hold them (``geodyn_ros/lie.py``, ``ros/wire/conversions.py``, ``ros/wire/fast_inputs.py``,
``ros/wire/raw_outputs.py``; ``ros/<name>.py`` at revisions before ``ros/`` was split by job) are read from git at ``--base`` and loaded beside the working tree's. Then:

1. **equivalence**: the four input decoders (odom, joint_states, reference, flat_reference) of
   both give the same return value and the same output bytes on 12,000 messages (two in three
   with one word overwritten by NaN, Inf, 1e3, 2.0 or a random byte); ``quat_xyzw``, ``sqrt_jet``
   and ``pose_matrix`` the same bytes; and how many rotations ``lie.matrix_to_quat`` rounds
   differently (an assertion error on any other difference);
2. **per call, from Python**: each decoder and output writer called ``rounds x calls`` times,
   base and current interleaved (alternating which goes first), median and range over rounds;
3. **the compiled kernels alone** (``--kernels``): each called in a numba loop, no Python dispatch.

Figures, not assertions (nothing here fails on a slow machine); ``new/old`` is the ratio to
the base measured in the same run.

    python bench/ros/bench_hot_helpers.py --base 2140c81 [--rounds 10] [--calls 10000] [--kernels]
"""
import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from nav_msgs.msg import Odometry
from numba import njit
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import geodyn_ros.lie as new_lie  # noqa: E402
import geodyn_ros.ros.wire.conversions as new_conv  # noqa: E402
import geodyn_ros.ros.wire.fast_inputs as new_fi  # noqa: E402
import geodyn_ros.ros.wire.raw_outputs as new_ro  # noqa: E402
from geodyn_ros.control.rotors import Allocation  # noqa: E402
from geodyn_ros.ros.wire.jets import make_flat_reference_msg, make_reference_msg  # noqa: E402


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


def load_base(rev: str, tmp: Path):
    """The four modules at ``rev``, as ``geodyn_ros[.ros]._base_<name>`` (their relative imports
    resolve to the working tree's other modules)."""
    mods = []
    for path in ("geodyn_ros/lie.py", "geodyn_ros/ros/wire/conversions.py", "geodyn_ros/ros/wire/fast_inputs.py",
                 "geodyn_ros/ros/wire/raw_outputs.py"):
        got = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], capture_output=True)
        if got.returncode and "/wire/" in path:   # a revision before ros/ was split by job (ros/<name>.py)
            path = path.replace("/wire/", "/")
            got = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True, capture_output=True)
        f = tmp / Path(path).name
        f.write_bytes(got.stdout)
        pkg = "geodyn_ros" if path.count("/") == 1 else path.rsplit("/", 1)[0].replace("/", ".")
        mods.append(load(f"{pkg}._base_{f.stem}", f))
    return mods


old_lie = old_conv = old_fi = old_ro = None   # set by main()

RNG = np.random.default_rng(5)
LIM = dict(max_position=100.0, max_speed=10.0, max_joint_rate=5.0, max_input_magnitude=50.0)
NAMES = ["J2", "J3", "J4"]
R = 2


def rot():
    q = RNG.normal(size=4)
    return new_lie.quat_to_matrix(q / np.linalg.norm(q))


def odom_raw():
    m = Odometry()
    m.header.stamp.sec, m.header.stamp.nanosec = 12, 345
    m.header.frame_id, m.child_frame_id = "world", "base_link"
    q = RNG.normal(size=4)
    q /= np.linalg.norm(q)
    p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
    p.x, p.y, p.z = (float(v) for v in RNG.uniform(-1, 1, 3))
    o.x, o.y, o.z, o.w = (float(v) for v in q)
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (float(v) for v in RNG.uniform(-1, 1, 6))
    return serialize_message(m)


def js_raw():
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = 3, 4
    m.name = ["J4", "J2", "J3"]
    m.position = [float(v) for v in RNG.uniform(-1, 1, 3)]
    m.velocity = [float(v) for v in RNG.uniform(-1, 1, 3)]
    return serialize_message(m)


def ref_raw():
    C = np.eye(4)
    C[:3, :3] = rot()
    C[:3, 3] = RNG.uniform(-1, 1, 3)
    return serialize_message(make_reference_msg(7_000_000_089, C, RNG.uniform(-1, 1, (R + 3, 6)),
                                                RNG.uniform(-1, 1, (R + 3, 3)), ["J3", "J2", "J4"]))


def flat_raw():
    return serialize_message(make_flat_reference_msg(7_000_000_089, RNG.uniform(-1, 1, (R + 5, 3)),
                                                     RNG.uniform(-1, 1, R + 5), RNG.uniform(-1, 1, (R + 5, 3)),
                                                     ["J3", "J2", "J4"]))


def corrupt(raw, k):
    """raw with one 8-byte word (or one byte) overwritten: NaN, Inf, 1e3, or a random byte."""
    b = bytearray(raw)
    i = int(RNG.integers(4, len(b) - 8))
    v = [np.nan, np.inf, 1e3, 2.0][k % 4]
    if k % 5 == 4:
        b[i] = int(RNG.integers(0, 256))
    else:
        b[i:i + 8] = np.float64(v).tobytes()
    return bytes(b)


def decoders(fi):
    o, j = fi.FastOdometry(LIM), fi.FastJointState(LIM)
    o.learn(odom_raw())
    j.learn(js_raw(), np.array([1, 2, 0]))
    rf, fl = fi.FastReference(LIM, R), fi.FastFlatReference(LIM, R)
    rf.learn(ref_raw(), np.array([7, 6, 8]))
    fl.learn(flat_raw(), np.array([5, 4, 6]))
    return o, j, rf, fl


def out_arrays(kind):
    return {"odom": lambda: (np.full((4, 4), 7.0), np.full(6, 7.0)),
            "js": lambda: (np.full(3, 7.0), np.full(3, 7.0)),
            "ref": lambda: (np.full((4, 4), 7.0), np.full((R + 2, 6), 7.0), np.full((R + 3, 3), 7.0)),
            "flat": lambda: (np.full((R + 5, 3), 7.0), np.full(R + 3, 7.0), np.full((R + 3, 3), 7.0))}[kind]()


def equivalence():
    od, nd = decoders(old_fi), decoders(new_fi)
    makers = {"odom": odom_raw, "js": js_raw, "ref": ref_raw, "flat": flat_raw}
    n_acc = n_dec = 0
    for idx, kind in enumerate(makers):
        for k in range(3000):
            raw = makers[kind]()
            if k % 3:
                raw = corrupt(raw, k)
            a, b = out_arrays(kind), out_arrays(kind)
            ra, rb = od[idx].decode(raw, *a), nd[idx].decode(raw, *b)
            assert ra == rb and all(x.tobytes() == y.tobytes() for x, y in zip(a, b)), (kind, k)
            n_acc += ra >= 0
            n_dec += ra < 0
    for _ in range(20000):
        Rm = rot()
        assert new_ro.quat_xyzw(Rm).tobytes() == old_ro.quat_xyzw(Rm).tobytes()
    diff = sum(new_lie.matrix_to_quat(Rm).tobytes() != old_lie.matrix_to_quat(Rm).tobytes()
               for Rm in (rot() for _ in range(20000)))
    for _ in range(2000):
        u = np.vstack([RNG.uniform(0.5, 3, 4), RNG.normal(size=(3, 4))])
        assert new_ro.sqrt_jet(u).tobytes() == old_ro.sqrt_jet(u).tobytes()
    for _ in range(2000):
        v = RNG.uniform(-1, 1, 7)
        v[3:] /= np.linalg.norm(v[3:])
        assert new_conv.pose_matrix(*v, np.empty((4, 4)), "x").tobytes() == \
            old_conv.pose_matrix(*v, np.empty((4, 4)), "x").tobytes()
    print(f"equivalence: decoders old == new on 12000 messages ({n_acc} accepted, {n_dec} declined), "
          f"quat_xyzw / sqrt_jet / pose_matrix identical bytes; lie.matrix_to_quat differs from the old numpy "
          f"version in {diff}/20000 rotations (<= 1 ulp: norm summed in another order)")


def allocation():
    kf, km, arm = 8.5e-6, 1.4e-7, 0.18
    A = np.zeros((6, 4))
    for i, (x, y, spin) in enumerate([(arm, -arm, 1), (-arm, arm, 1), (arm, arm, -1), (-arm, -arm, -1)]):
        A[:, i] = (y * kf, -x * kf, spin * km, 0.0, 0.0, kf)
    return Allocation(A, 1100.0)


def cases(m_fi, m_ro, m_lie, m_conv):
    o, j, rf, fl = decoders(m_fi)
    ro, rj, rr, rfl = odom_raw(), js_raw(), ref_raw(), flat_raw()
    ao, aj, ar, af = out_arrays("odom"), out_arrays("js"), out_arrays("ref"), out_arrays("flat")
    des = m_ro.DesiredStateOutput(NAMES, R)
    C = np.eye(4)
    C[:3, :3] = rot()
    V, Q = RNG.normal(size=(R + 2, 6)), RNG.normal(size=(R + 3, 3))
    Cr, Vr, Qr = m_ro.readonly_views((C, V, Q))
    rot_out = m_ro.RotorSpeedOutput(("a", "b", "c", "d"), R)
    al = allocation()
    T, tb = m_ro.readonly_views((np.r_[15.0, RNG.normal(size=R)], 0.1 * RNG.normal(size=(R + 1, 3))))
    u = np.vstack([RNG.uniform(0.5, 3, 4), RNG.normal(size=(R, 4))])
    Rm = C[:3, :3].copy()
    P = np.empty((4, 4))
    pv = [0.1, 0.2, 0.3, *new_lie.matrix_to_quat(Rm)]
    return {
        "FastOdometry.decode": lambda: o.decode(ro, *ao),
        "FastJointState.decode": lambda: j.decode(rj, *aj),
        "FastReference.decode": lambda: rf.decode(rr, *ar),
        "FastFlatReference.decode": lambda: fl.decode(rfl, *af),
        "DesiredStateOutput.write_ro": lambda: des.write_ro(5, Cr, Vr, Qr),
        "DesiredStateOutput.write": lambda: des.write(5, C, V, Q[:R + 2]),
        "RotorSpeedOutput.write_flat": lambda: rot_out.write_flat(5, al, ("a", "b", "c", "d"), T, tb),
        "sqrt_jet": lambda: m_ro.sqrt_jet(u),
        "lie.matrix_to_quat": lambda: m_lie.matrix_to_quat(Rm),
        "conversions.pose_matrix": lambda: m_conv.pose_matrix(*pv, P, "odom"),
    }


def looper(k):
    @njit
    def run(n, args):
        s = 0
        for _ in range(n):
            s += k(*args)
        return s
    return run


def looper_void(k):
    @njit
    def run(n, args):
        for _ in range(n):
            k(*args)
        return 0
    return run


def kernel_args(m_fi, m_ro, m_lie):
    o, j, rf, fl = decoders(m_fi)
    ro, rj, rr, rfl = odom_raw(), js_raw(), ref_raw(), flat_raw()
    u8 = lambda raw: np.frombuffer(raw, dtype=np.uint8)
    ao, aj, ar, af = out_arrays("odom"), out_arrays("js"), out_arrays("ref"), out_arrays("flat")
    des = m_ro.DesiredStateOutput(NAMES, R)
    C = np.eye(4)
    C[:3, :3] = rot()
    Cr, Vr, Qr = m_ro.readonly_views((C, RNG.normal(size=(R + 2, 6)), RNG.normal(size=(R + 3, 3))))
    rot_out = m_ro.RotorSpeedOutput(("a", "b", "c", "d"), R)
    al = allocation()
    rot_out.write_flat(5, al, ("a", "b", "c", "d"), *m_ro.readonly_views((np.r_[15.0, np.zeros(R)], np.zeros((R + 1, 3)))))
    T, tb = m_ro.readonly_views((np.r_[15.0, RNG.normal(size=R)], 0.1 * RNG.normal(size=(R + 1, 3))))
    return {
        "_odometry": (m_fi._odometry, (u8(ro), o._key, o._start, o._total, o._pose, o._lim, *ao, o._tmp), False),
        "_joint_state": (m_fi._joint_state, (u8(rj), j._key, j._start, j._total, j._lay, j._idx, j._lim, *aj, j._tmp), False),
        "_reference": (m_fi._reference, (u8(rr), rf._key, rf._kend, rf._start, rf._total, rf._ncol, rf._cols, rf._lim,
                                         ar[0], ar[1][:R + 2], ar[2][:R + 3], rf._tmp), False),
        "_flat_reference": (m_fi._flat_reference, (u8(rfl), fl._key, fl._kend, fl._start, fl._total, fl._ncol, fl._cols,
                                                   fl._lim, af[0][:R + 5], af[1][:R + 3], af[2][:R + 3], fl._tmp), False),
        "_fill_desired": (m_ro._fill_desired, (des.data, 5, Cr, Vr, Qr), True),
        "_fill_rotor": (m_ro._fill_rotor, (rot_out.data, 5, rot_out._A, rot_out._umax, T, tb), False),
    }


def kernels(rounds, n):
    old, new = kernel_args(old_fi, old_ro, old_lie), kernel_args(new_fi, new_ro, new_lie)
    runs = {}
    for k in old:
        for tag, (f, a, void) in (("old", old[k]), ("new", new[k])):
            r = (looper_void if void else looper)(f)
            r(10, a)
            runs[k, tag] = (r, a)
    res = {k: ([], []) for k in old}
    for i in range(rounds):
        for k in old:
            for tag in (("old", "new") if i % 2 == 0 else ("new", "old")):
                r, a = runs[k, tag]
                t0 = time.perf_counter()
                r(n, a)
                res[k][tag == "new"].append((time.perf_counter() - t0) / n * 1e9)
    print(f"compiled kernels alone: {rounds} interleaved rounds x {n} calls in one numba loop; ns per call, "
          "median (min)")
    for k, (a, c) in res.items():
        print(f"  {k:16s} old {np.median(a):6.1f} ({min(a):.1f})  new {np.median(c):6.1f} ({min(c):.1f})  "
              f"new/old {np.median(c) / np.median(a):.3f}")


def main():
    global old_lie, old_conv, old_fi, old_ro
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--base", default="HEAD", help="git revision to compare with (default HEAD)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=10000, help="calls per variant per round")
    ap.add_argument("--kernels", action="store_true", help="also time the compiled kernels alone")
    opt = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    old_lie, old_conv, old_fi, old_ro = load_base(opt.base, Path(tmp.name))
    rounds, n = opt.rounds, opt.calls
    print(f"base {opt.base} vs the working tree")
    equivalence()
    old, new = cases(old_fi, old_ro, old_lie, old_conv), cases(new_fi, new_ro, new_lie, new_conv)
    for f in list(old.values()) + list(new.values()):   # warm
        for _ in range(1000):
            f()
    res = {k: ([], []) for k in old}
    for rnd in range(rounds):
        for k in old:
            for tag in ((0, 1) if rnd % 2 == 0 else (1, 0)):   # alternate which goes first
                f = (old[k], new[k])[tag]
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                res[k][tag].append((time.perf_counter() - t0) / n * 1e9)
    print(f"{rounds} interleaved rounds x {n} calls each (= {rounds * n} calls per variant); ns per call, "
          "median (min-max) over rounds")
    for k, (t_old, t_new) in res.items():
        print(f"  {k:30s} old {np.median(t_old):7.0f} ({min(t_old):.0f}-{max(t_old):.0f})  new "
              f"{np.median(t_new):7.0f} ({min(t_new):.0f}-{max(t_new):.0f})  new/old "
              f"{np.median(t_new) / np.median(t_old):.3f}")
    if opt.kernels:
        kernels(rounds, n)


if __name__ == "__main__":
    main()
