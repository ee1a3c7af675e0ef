"""The stages of ``geodyn_node``'s cycle, each run alone on the inputs of a measured run
(``bench_cycle_instructions.py --stages``).

:func:`node_stages` returns ``[(name, run)]``: ``run()`` does one stage's work for every message
(or every cycle) of the measured run, with the node's own objects, in the order and number the
real callbacks did it, so its instruction count divided by the run's outputs is that stage's
share of a cycle. What the sum of the stages does not cover is the Python glue of the callbacks
(the guard, ``_receive``, ``_cycle``, attribute look-ups and branches).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from geodyn_ros.algorithms.kernels.flat import flat_map_ws
from geodyn_ros.algorithms.kernels.inverse import inverse_dynamics_into
from geodyn_ros.ros.inputs.input_sync import TopicBuffer, input_entry


# ----------------------------------------------------------------------------- kernels timed without Python's call around them
@njit(cache=True)
def id_loop(buf, C, V, Q, order, k):  # pragma: no cover (compiled)
    """``inverse_dynamics_into`` ``k`` times (the kernel alone, no dispatch)."""
    code = 0
    for _ in range(k):
        code |= inverse_dynamics_into(buf, C, V, Q, order)
    return code


@njit(cache=True)
def flat_loop(ws, com, yaw, q, order, oC, oV, oq, ow, otau, oT, otb, k):  # pragma: no cover (compiled)
    """``flat_map_ws`` ``k`` times."""
    code = 0
    for _ in range(k):
        code |= flat_map_ws(ws, com, yaw, q, order, oC, oV, oq, ow, otau, oT, otb)
    return code


def _time_of(clock_handle):
    def now():
        with clock_handle:
            return clock_handle.get_now().nanoseconds
    return now


def node_stages(node, mode: str, events, feed):
    """The stages of ``node`` (a :class:`GeodynNode` after a measured run of ``events``
    [(clock, topic, bytes)]; ``feed``: [(callback, bytes)])."""
    if getattr(node, "_store", None) is not None:
        return _store_stages(node, events)
    if getattr(node, "_flat_store", None) is not None:
        return _flat_store_stages(node, events)
    stages = []
    ch = node._clock_handle
    now_of = _time_of(ch)
    stages.append(("clock: read through rclpy", lambda: [now_of() for _ in feed]))
    parsers = node._parsers()
    r, n = node.order, node.model.n_joints
    entries = {t: input_entry(t, r, n, node._convert_ref) for t in ("odom", "joint_states", "reference",
                                                                    "flat_reference")}
    msgs = [(parsers[t], entries[t], raw) for _, t, raw in events]
    stamps = [(t, p(e, raw)) for (p, e, raw), (_, t, _) in zip(msgs, events)]
    stages.append(("decode (parse methods)", lambda: [p(e, raw) for p, e, raw in msgs]))

    if mode == "flat":
        return stages + _flat_stages(node, events, stamps)


    def buffers():
        depth = node._bufs["odom"].depth
        bufs = {t: TopicBuffer(t, depth, lambda t=t: input_entry(t, r, n)) for t in node._topics}
        state = type(node._state)(node._state.odom.max_age_ns, node._state.js.max_age_ns)
        for topic, stamp in stamps:
            e = bufs[topic].accept(stamp, stamp, node.stale_ns)
            if topic != "reference":
                state.offer(topic, stamp, e)
    stages.append(("buffers: accept + offer", buffers))

    odom_stamps = [s for t, s in stamps if t == "odom"]
    C, V, Q = np.eye(4), np.zeros((r + 2, 6)), np.zeros((r + 3, n))
    st = node._state
    t_last = st.odom.stamp_ns
    stages.append(("propagation: state_at", lambda: [st.state_at(t_last, False, C, V[0], Q[0], Q[1])
                                                     for _ in odom_stamps]))
    now = node._last_now
    stages.append(("set: state_at + checks + reference", lambda: [node._measured_set(t_last, now)
                                                                   for _ in odom_stamps]))
    got = node._measured_set(t_last, now)
    e = got[4]

    def rows():
        for _ in odom_stamps:
            V[1:] = e.V_sp[1:]
            Q[2:] = e.Q[2:]
    stages.append(("reference rows copied", rows))
    C[:], V[0], Q[:2] = node._C_meas, node._V_in[0], node._Q_in[:2]
    ws = node._ws
    stages.append(("dynamics: Workspace.inverse_dynamics", lambda: [ws.inverse_dynamics(C, V, Q) for _ in odom_stamps]))
    buf = ws._idb
    k = len(odom_stamps)
    id_loop(buf, C, V, Q, r, 1)
    stages.append(("dynamics: the kernel alone", lambda: id_loop(buf, C, V, Q, r, k)))
    res = ws.inverse_dynamics(C, V, Q)
    W, tau = res.base_wrench, res.tau
    out = node._jet_out
    stages.append(("write: jet + finite check", lambda: [out.write_finite(s, W, tau) for s in odom_stamps]))
    raw = out.write_finite(odom_stamps[-1], W, tau)
    pub = node._jet_raw
    stages.append(("publish: feedforward/jet", lambda: [pub(raw) for _ in odom_stamps]))
    subs = (node._wrench_subs, node._efforts_subs, node._used_subs)
    stages.append(("subscriber counts (3)", lambda: [[f() for f in subs] for _ in odom_stamps]))
    ages, diag = node._ages, node.diag

    def books():
        for s in odom_stamps:
            ages.add(0, 1000)
            ages.add(1, 2000)
            ages.add(2, 3000)
            diag.ok()
            diag.clear()
    stages.append(("ages + diagnostics counters", books))
    return stages


def _flat_stages(node, events, stamps):
    stages = []
    ref_stamps = [s for t, s in stamps if t == "flat_reference"]
    e = input_entry("flat_reference", node.order, node.model.n_joints)
    raw = events[-1][2]
    node._parsers()["flat_reference"](e, raw)
    fws = node._fws
    stages.append(("flat map: FlatWorkspace.compute", lambda: [fws.compute(e.com, e.yaw, e.Q) for _ in ref_stamps]))
    fws.compute(e.com, e.yaw, e.Q)
    ro = node._fro
    jet, des, rot = node._jet_out, node._desired_out, node._rotor_out
    al, names = node.allocation, node.rotor_names
    fl = node._write_flat_jet

    def writes():
        for s in ref_stamps:
            jet.write_finite(s, ro[3], ro[4])
            rot.write_flat(s, al, names, ro[5], ro[6])
            des.write_ro(s, ro[0], ro[1], ro[2])
            fl(s, ro[5], ro[6], ro[4])
    stages.append(("write: jet, rotor speeds, desired, flat jet", writes))
    s = ref_stamps[-1]
    outs = ((node._jet_raw, jet.write_finite(s, ro[3], ro[4])),
            (node._pub_desired.handle.publish_raw, des.write_ro(s, ro[0], ro[1], ro[2])),
            (node._pub_flat.handle.publish_raw, fl(s, ro[5], ro[6], ro[4])),
            (node._pub_rotors.handle.publish_raw, rot.write_flat(s, al, names, ro[5], ro[6])[0]))
    stages.append(("publish: 4 outputs", lambda: [[p(b) for p, b in outs] for _ in ref_stamps]))
    subs = (node._wrench_subs, node._efforts_subs)
    stages.append(("subscriber counts (2)", lambda: [[f() for f in subs] for _ in ref_stamps]))
    return stages


def _store_stages(node, events):
    """The stages of the latest path (``latest_store``): the compiled calls replayed on a copy of the
    store emptied of its stamps, then the cycle, the kernel, the publication and the books alone."""
    from geodyn_ros.ros.inputs import latest_store as LS
    st = node._store
    stages = [("clock: _clock_ns", lambda: [node._clock_ns() for _ in events])]
    now = node._last_now

    def emptied():
        I, F = st.I.copy(), st.F.copy()
        for t in range(3):
            I[8 * t + LS.T_LAST] = I[8 * t + LS.T_HELD] = -1
        d = st.depth
        I[LS.R_COUNT] = I[LS.R_HEAD] = 0
        I[LS.R_SCRATCH] = I[LS.R_NFREE] = d
        I[I[LS.R_FREE]:I[LS.R_FREE] + d] = np.arange(d)
        return I, F
    K, T = st.K, st.T.copy()
    kern = {"odom": lambda raw, I, F: LS.odom_message(raw, now, I, F, K, T),
            "joint_states": lambda raw, I, F: LS.js_message(raw, now, I, F, K),
            "reference": lambda raw, I, F: LS.ref_message(raw, now, I, F, K)}
    I1, F1 = emptied()
    calls = [(kern[t], raw) for _, t, raw in events]
    stages.append(("kernels: every message (decode, accept; odom: the cycle)",
                   lambda: [k(raw, I1, F1) for k, raw in calls]))
    n_odom = sum(1 for _, t, _ in events if t == "odom")
    I2, F2 = st.I.copy(), st.F.copy()
    t_last = int(st.I[LS.T_LAST])
    assert LS.cycle(I2, F2, T, t_last, now, False) == LS.OK
    stages.append(("cycle alone (state, reference, dynamics, jet)",
                   lambda: [LS.cycle(I2, F2, T, t_last, now, False) for _ in range(n_odom)]))
    r, size = st.order, int(st.I[LS.F_ID_SIZE])
    buf = F2[:size]
    id_loop(buf, st.C, st.V, st.Q, r, 1)
    stages.append(("dynamics: the kernel alone", lambda: id_loop(buf, st.C, st.V, st.Q, r, n_odom)))
    pub, b = node._jet_raw, node._jet_buf
    stages.append(("publish: feedforward/jet", lambda: [pub(b) for _ in range(n_odom)]))
    diag = node.diag

    def books():
        for _ in range(n_odom):
            diag.ok()
            diag.clear()
    stages.append(("diagnostics counters", books))
    return stages


def _flat_store_stages(node, events):
    """The stages of the fused flat path (``flat_store``): the one compiled call per message replayed
    on a copy of the store emptied of its stamp, the flat map's kernel alone, the publications."""
    from geodyn_ros.ros.inputs import flat_store as FS
    from geodyn_ros.ros.inputs import latest_store as LS
    st = node._flat_store
    now = node._last_now
    stages = [("clock: _clock_ns", lambda: [node._clock_ns() for _ in events])]
    I, F = st.I.copy(), st.F.copy()
    I[LS.T_LAST] = -1
    K = st.K
    T = tuple(t.copy() for t in st.T)
    raws = [raw for _, _, raw in events]
    assert FS.flat_message(raws[0], now, I, F, K, *T) == LS.OK
    I[LS.T_LAST] = -1
    stages.append(("kernel: every message (decode, accept, flat map, 4 writes, counts)",
                   lambda: [FS.flat_message(raw, now, I, F, K, *T) for raw in raws]))
    args = _flat_args(st)
    flat_loop(*args, 1)
    stages.append(("flat map: the kernel alone", lambda: flat_loop(*args, len(raws))))
    b = st.bufs
    pubs = [(node._jet_raw, b[0]), (node._desired_raw, b[1]), (node._flat_raw, b[2])]
    if node._rotors_raw is not None:
        pubs.append((node._rotors_raw, b[3]))
    stages.append(("publish: 4 outputs", lambda: [[p(x) for p, x in pubs] for _ in raws]))
    diag = node.diag

    def books():
        for _ in raws:
            diag.ok()
            diag.clear()
    stages.append(("diagnostics counters", books))
    return stages


def _flat_args(st):
    """The flat map kernel's arguments on the store's arrays (``flat_store.flat_message``'s views)."""
    from geodyn_ros.ros.inputs import flat_store as FS
    I, F, r, n = st.I, st.F.copy(), st.order, st.n

    def v(k, size, shape=None):
        a = F[int(I[k]):int(I[k]) + size]
        return a.reshape(shape) if shape else a
    return (v(FS.F_WS, int(I[FS.F_WS_SIZE])), v(FS.F_COM, 3 * (r + 5), (r + 5, 3)), v(FS.F_YAW, r + 3),
            v(FS.F_QIN, n * (r + 3), (r + 3, n)), r, v(FS.F_OC, 16, (4, 4)), v(FS.F_OV, 6 * (r + 2), (r + 2, 6)),
            v(FS.F_OQ, n * (r + 3), (r + 3, n)), v(FS.F_OW, 6 * (r + 1), (r + 1, 6)),
            v(FS.F_OTAU, n * (r + 1), (r + 1, n)), v(FS.F_OT, r + 1), v(FS.F_OTB, 3 * (r + 1), (r + 1, 3)))
