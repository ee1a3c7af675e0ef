"""Self-describing ``std_msgs/Float64MultiArray`` layouts for derivative jets.

Standard messages have no type for "a value and its first k time derivatives", so the jets
travel as row-major 2-D ``Float64MultiArray`` s whose ``MultiArrayLayout`` names every axis and
column, with a small fixed header in the layout's leading padding (``data_offset``):

Reference jet (topic ``reference``, read by ``geodyn_node`` and the controller)
    ``data_offset = 9``: ``data[0:2] = (stamp.sec, stamp.nanosec)`` of the reference sample,
    ``data[2:9] = (p_x, p_y, p_z, q_x, q_y, q_z, q_w)``: base-link pose in the world frame.
    ``dim[0] = ("derivative", K+1, (K+1)(6+m))``: row ``k`` is the k-th time derivative.
    ``dim[1] = ("w_x,w_y,w_z,v_x,v_y,v_z,<joint names>", 6+m, 6+m)``: the spatial base twist
    derivative ``V^(k)`` (angular first, world axes, ``CONVENTIONS.md``) then ``q^(k)`` of the
    ``m`` named joints (matched by name; extra joints are ignored).
    A node computing order ``r`` needs ``K >= r+2`` (``V^(0..r+1)``, ``q^(0..r+2)``).

Feedforward jet (topic ``feedforward/jet``, published by ``geodyn_node``)
    ``data_offset = 2``: ``data[0:2] = (stamp.sec, stamp.nanosec)``, the stamp of the input it
    was computed from (the same stamp as the ``WrenchStamped``/``JointState`` outputs).
    ``dim[0] = ("derivative", r+1, (r+1)(6+n))``;
    ``dim[1] = ("n_x,n_y,n_z,f_x,f_y,f_z,<joint names>", 6+n, 6+n)``: the spatial base wrench
    derivative ``W^(k)`` (moment about the world origin, world axes, moment first) then the
    joint torques ``tau^(k)`` in ``model.joint_names`` order.

Flat reference jet (topic ``flat_reference``, the flat outputs of an under-actuated multirotor;
published by ``geodyn_reference`` with ``trajectory: figure_eight``, read by ``geodyn_node`` in
``input_mode: flat`` and by ``geodyn_flat_controller``)
    ``data_offset = 2``: ``data[0:2] = (stamp.sec, stamp.nanosec)`` of the sample.
    ``dim[0] = ("derivative", K+1, (K+1)(4+m))``;
    ``dim[1] = ("c_x,c_y,c_z,psi,<joint names>", 4+m, 4+m)``: row ``k`` holds ``c^(k)``, the k-th
    derivative of the system centre of mass (world, m), ``psi^(k)`` of the Z-Y-X base yaw
    (``atan2(R[1,0], R[0,0])``, rad) and ``q^(k)`` of the ``m`` named joints (matched by name).
    A node computing order ``r`` needs ``K >= r+4`` (``c^(0..r+4)``; it reads ``psi`` and ``q``
    only to ``r+2``).

Flat feedforward jet (topic ``feedforward/flat_jet``, ``geodyn_node`` in ``input_mode: flat``)
    ``data_offset = 2`` (stamp, as above); ``dim[0] = ("derivative", r+1, ...)``;
    ``dim[1] = ("T,tau_x,tau_y,tau_z,<joint names>", 4+n, 4+n)``: row ``k`` holds ``T^(k)`` [N],
    the thrust along the base link's ``+z``, ``tau_b^(k)`` [N m], the moment the rotors must produce
    about the base-link origin in base axes (derivatives of that base-axes vector), and the joint
    torques ``tau^(k)`` in ``model.joint_names`` order.

Rotor-speed feedforward jet (topic ``feedforward/rotor_speeds``, ``geodyn_node`` in flat mode
with an ``actuation_config``)
    ``data_offset = 2`` (stamp); ``dim[0] = ("derivative", r+1, ...)``;
    ``dim[1] = ("<rotor link names>", n_r, n_r)``: row ``k`` holds ``omega_d^(k)`` [rad/s^(k+1)],
    ``omega_d = sqrt(A4^+ (T, tau_b))`` of the vehicle's allocation, differentiated exactly.

Every element is at ``data[data_offset + k * dim[1].stride + j]`` (the standard
``MultiArrayLayout`` rule). Stamps are exact in float64 (``sec < 2^53``, ``nanosec < 1e9``).

Linearization (topic ``~/linearization``, published by ``geodyn_node`` when
``publish_linearization`` is true)
    Not a jet and not one tensor: two row-major matrices one after the other, ``A`` (nx, nx)
    and ``B`` (nx, nu) of ``dz/dt = A z + B w`` (:func:`geodyn_ros.linearize`), with
    ``nx = 2(6+n)``, ``nu = 6+n``.
    ``data_offset = 2``: ``data[0:2] = (stamp.sec, stamp.nanosec)`` of the state the
    linearization was computed at (the stamp of the feedforward outputs of the same cycle).
    ``dim[0] = ("A:rows=<nx>;cols=<nx>", nx*nx, nx*nx)``,
    ``dim[1] = ("B:rows=<nx>;cols=<nu>", nx*nu, nx*nu)``: each dim is one *block* (``size`` =
    ``stride`` = its element count), so the standard stride rule does not apply. Element
    ``A[i, j] = data[2 + i*nx + j]``, ``B[i, j] = data[2 + nx*nx + i*nu + j]``;
    ``len(data) = 2 + nx*nx + nx*nu``. The row/column names and the representation are the
    JSON of :func:`linearization_labels_json` (topic ``~/linearization/labels``).
"""
from __future__ import annotations

import array
import json
import re

import numpy as np
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from .cdr import multiarray_template
from .conversions import InputError, JointNameMatcher, as_float64, checked_stamp_ns, pose_matrix

__all__ = [
    "BASE_TWIST_COLUMNS",
    "BASE_WRENCH_COLUMNS",
    "ROW_LABEL",
    "REFERENCE_OFFSET",
    "FEEDFORWARD_OFFSET",
    "FLAT_REFERENCE_OFFSET",
    "FLAT_REFERENCE_COLUMNS",
    "FLAT_FEEDFORWARD_COLUMNS",
    "StampedJetPacker",
    "make_flat_reference_msg",
    "decode_reference_jet",
    "FlatReferenceDecoder",
    "FlatFeedforwardPacker",
    "decode_flat_feedforward_jet",
    "RotorSpeedPacker",
    "decode_rotor_speed_jet",
    "make_reference_msg",
    "ReferenceDecoder",
    "FeedforwardJetPacker",
    "decode_feedforward_jet",
    "LINEARIZATION_OFFSET",
    "LinearizationPacker",
    "decode_linearization",
    "linearization_labels_json",
]

ROW_LABEL = "derivative"
BASE_TWIST_COLUMNS = ("w_x", "w_y", "w_z", "v_x", "v_y", "v_z")
BASE_WRENCH_COLUMNS = ("n_x", "n_y", "n_z", "f_x", "f_y", "f_z")
REFERENCE_OFFSET = 9
FEEDFORWARD_OFFSET = 2
FLAT_REFERENCE_OFFSET = 2
FLAT_REFERENCE_COLUMNS = ("c_x", "c_y", "c_z", "psi")
FLAT_FEEDFORWARD_COLUMNS = ("T", "tau_x", "tau_y", "tau_z")
LINEARIZATION_OFFSET = 2


def _layout(msg: Float64MultiArray, rows: int, columns, offset: int) -> None:
    cols = len(columns)
    msg.layout.dim = [
        MultiArrayDimension(label=ROW_LABEL, size=rows, stride=rows * cols),
        MultiArrayDimension(label=",".join(columns), size=cols, stride=cols),
    ]
    msg.layout.data_offset = offset


def _as_double_array(a: np.ndarray) -> array.array:
    return array.array("d", np.ascontiguousarray(a, dtype=np.float64).tobytes())


def make_reference_msg(stamp_ns: int, base_pose: np.ndarray, base_twist: np.ndarray,
                       q: np.ndarray, joint_names, msg: Float64MultiArray | None = None
                       ) -> Float64MultiArray:
    """Pack one reference sample into the reference-jet layout.

    Parameters
    ----------
    stamp_ns : int
        Sample time [ns] (``header.stamp`` equivalent).
    base_pose : (4, 4) base-link pose in the world frame.
    base_twist : (K+1, 6) spatial twist derivatives ``V^(0..K)``.
    q : (K+1, m) joint derivatives ``q^(0..K)``, columns ``joint_names``.
    joint_names : sequence of m str.
    msg : optional message to reuse (its layout is rewritten).
    """
    from ...lie import matrix_to_quat

    K1 = base_twist.shape[0]
    if q.shape[0] != K1:
        raise ValueError(f"q: {q.shape[0]} rows but base_twist has {K1}")
    if q.shape[1] != len(joint_names):
        raise ValueError(f"q: {q.shape[1]} columns for {len(joint_names)} joint_names")
    msg = Float64MultiArray() if msg is None else msg
    _layout(msg, K1, BASE_TWIST_COLUMNS + tuple(joint_names), REFERENCE_OFFSET)
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    head = np.empty(REFERENCE_OFFSET)
    head[0], head[1] = sec, nsec
    head[2:5] = base_pose[:3, 3]
    head[5:9] = matrix_to_quat(base_pose[:3, :3], "xyzw")
    body = np.hstack([base_twist, q])
    msg.data = _as_double_array(np.concatenate([head, body.ravel()]))
    return msg


def _check_layout(msg, offset: int, what: str):
    """Rows, columns (label list) of a 2-D jet layout; raise InputError if malformed."""
    lay = msg.layout
    if len(lay.dim) != 2:
        raise InputError(f"{what}: layout must have 2 dims ('{ROW_LABEL}', columns), has {len(lay.dim)}")
    d0, d1 = lay.dim
    if d0.label != ROW_LABEL:
        raise InputError(f"{what}: layout.dim[0].label must be '{ROW_LABEL}', is '{d0.label}'")
    if lay.data_offset != offset:
        raise InputError(f"{what}: layout.data_offset must be {offset}, is {lay.data_offset}")
    rows, cols = d0.size, d1.size
    if d1.stride != cols or d0.stride != rows * cols:
        raise InputError(f"{what}: layout strides ({d0.stride}, {d1.stride}) are not row-major "
                         f"for sizes ({rows}, {cols})")
    if len(msg.data) != offset + rows * cols:
        raise InputError(f"{what}: data has {len(msg.data)} values, layout says "
                         f"{offset} + {rows} x {cols}")
    return rows, cols, d1.label


class ReferenceDecoder:
    """Decode reference-jet messages into the input buffers of ``gd.inverse_dynamics``.

    Parameters
    ----------
    joint_names : sequence of str
        Model joint names (column order of ``q``).
    order : int
        Dynamics order ``r``: rows ``V^(0..r+1)`` and ``q^(0..r+2)`` are read.
    topic : str
        The topic named in error messages (default ``reference``; ``desired/state`` carries the
        same layout).
    """

    def __init__(self, joint_names, order: int, topic: str = "reference"):
        self.matcher = JointNameMatcher(joint_names)
        self.order = order
        self.topic = topic
        self._label_cache: dict[tuple, np.ndarray] = {}

    def _columns(self, label: str, ncol: int) -> np.ndarray:
        """Column indices of the model joints; the label is parsed and checked once per
        distinct ``(label, ncol)``."""
        key = (label, ncol)
        cols = self._label_cache.get(key)
        if cols is None:
            names = label.split(",")
            t = self.topic
            if ncol != len(names):
                raise InputError(f"{t}: column label count differs from dim[1].size")
            if tuple(names[:6]) != BASE_TWIST_COLUMNS:
                raise InputError(f"{t}: first six columns must be {','.join(BASE_TWIST_COLUMNS)}")
            cols = self.matcher.indices(names[6:], f"{t} joint columns") + 6
            if len(self._label_cache) > 16:
                self._label_cache.clear()
            self._label_cache[key] = cols
        return cols

    def decode(self, msg, C_out: np.ndarray, V_out: np.ndarray, Q_out: np.ndarray) -> int:
        """Fill ``C_out`` (4,4), ``V_out`` (>= r+2, 6), ``Q_out`` (>= r+3, n); return the stamp [ns].

        Raises :class:`InputError` for a malformed layout, too few derivative rows, missing
        joints, NaN/Inf in the rows used, or a non-unit quaternion.
        """
        r, t = self.order, self.topic
        rows, ncol, label = _check_layout(msg, REFERENCE_OFFSET, t)
        if rows < r + 3:
            raise InputError(f"{t}: {rows} derivative rows, order {r} needs {r + 3} "
                             f"(V^(0..{r + 1}), q^(0..{r + 2}))")
        cols = self._columns(label, ncol)
        data = as_float64(msg.data)
        head = data[:REFERENCE_OFFSET]
        stamp_ns = checked_stamp_ns(head[0], head[1], f"{t} (data[0:2])")
        pose_matrix(*head[2:9], C_out, f"{t} base pose")
        body = data[REFERENCE_OFFSET:].reshape(rows, ncol)
        V_out[: r + 2] = body[: r + 2, :6]
        np.take(body[: r + 3], cols, axis=1, out=Q_out[: r + 3])
        if not (np.isfinite(V_out[: r + 2]).all() and np.isfinite(Q_out[: r + 3]).all()):
            raise InputError(f"{t}: NaN or Inf in the derivative rows used")
        return stamp_ns


def decode_reference_jet(msg, topic: str = "reference"):
    """``(stamp_ns, C (4, 4), V (K+1, 6), q (K+1, m), joint_names)`` of a reference-jet message (all
    its rows and joints; :class:`InputError` naming ``topic`` if malformed, not finite or with a
    non-unit quaternion)."""
    rows, ncol, label = _check_layout(msg, REFERENCE_OFFSET, topic)
    names = label.split(",")
    if len(names) != ncol or tuple(names[:6]) != BASE_TWIST_COLUMNS:
        raise InputError(f"{topic}: column labels must be {','.join(BASE_TWIST_COLUMNS)},<joint names>")
    data = as_float64(msg.data)
    stamp_ns = checked_stamp_ns(data[0], data[1], f"{topic} (data[0:2])")
    C = np.eye(4)
    pose_matrix(*data[2:9], C, f"{topic} base pose")
    body = data[REFERENCE_OFFSET:].reshape(rows, ncol)
    if not np.isfinite(body).all():
        raise InputError(f"{topic}: NaN or Inf")
    return stamp_ns, C, body[:, :6].copy(), body[:, 6:].copy(), tuple(names[6:])


class StampedJetPacker:
    """Build stamped 2-D jet messages (``data[0:2]`` = stamp, then ``rows`` x ``columns`` row-major;
    layout as in the module docstring) for fixed columns and rows, reusing one message."""

    def __init__(self, columns, rows: int):
        self.columns = tuple(columns)
        self.rows = rows
        self.msg = Float64MultiArray()
        _layout(self.msg, rows, self.columns, FEEDFORWARD_OFFSET)
        self._buf = np.empty(FEEDFORWARD_OFFSET + rows * len(self.columns))
        self._body = self._buf[FEEDFORWARD_OFFSET:].reshape(rows, len(self.columns))
        self._raw = None

    def pack_blocks(self, stamp_ns: int, *blocks) -> Float64MultiArray:
        """Message with the stamp and the column blocks side by side (each (rows,) or (rows, k))."""
        self._fill(stamp_ns, blocks)
        self.msg.data = array.array("d", self._buf.tobytes())
        return self.msg

    def pack_blocks_raw(self, stamp_ns: int, *blocks) -> bytes:
        """:meth:`pack_blocks`, serialized (for ``Publisher.publish(bytes)``; ``deserialize_message``
        reads it back as that message)."""
        self._fill(stamp_ns, blocks)
        if self._raw is None:
            self.msg.data = array.array("d", self._buf.tobytes())
            self._raw = multiarray_template(self.msg)
        self._raw.fields["data"][:] = self._buf
        return self._raw.payload()

    def _fill(self, stamp_ns: int, blocks) -> None:
        sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
        self._buf[0], self._buf[1] = sec, nsec
        c = 0
        for b in blocks:
            b = np.asarray(b, dtype=np.float64)
            w = 1 if b.ndim == 1 else b.shape[1]
            self._body[:, c:c + w] = b.reshape(self.rows, w)
            c += w


def _decode_stamped_jet(msg, what: str, lead=()):
    """``(stamp_ns, body (rows, cols), names)`` of a stamped jet whose first columns are ``lead``;
    raises :class:`InputError` for a malformed layout, a bad stamp or NaN/Inf."""
    rows, ncol, label = _check_layout(msg, FEEDFORWARD_OFFSET, what)
    names = label.split(",")
    if len(names) != ncol or tuple(names[:len(lead)]) != tuple(lead):
        raise InputError(f"{what}: column labels must be {','.join(lead + ('<names>',))}" if lead else
                         f"{what}: {len(names)} column labels for {ncol} columns")
    data = as_float64(msg.data)
    stamp = checked_stamp_ns(data[0], data[1], f"{what} (data[0:2])")
    body = data[FEEDFORWARD_OFFSET:].reshape(rows, ncol)
    if not np.isfinite(body).all():
        raise InputError(f"{what}: NaN or Inf")
    return stamp, body, tuple(names[len(lead):])


class FeedforwardJetPacker(StampedJetPacker):
    """Build feedforward-jet messages for a fixed model and order, reusing one message."""

    def __init__(self, joint_names, order: int):
        super().__init__(BASE_WRENCH_COLUMNS + tuple(joint_names), order + 1)
        self.n = len(joint_names)
        self.order = order

    def pack(self, stamp_ns: int, base_wrench: np.ndarray, tau: np.ndarray) -> Float64MultiArray:
        """Message carrying ``W^(0..r)`` (r+1, 6) and ``tau^(0..r)`` (r+1, n) with the stamp."""
        return self.pack_blocks(stamp_ns, base_wrench, tau)

    def pack_raw(self, stamp_ns: int, base_wrench: np.ndarray, tau: np.ndarray) -> bytes:
        """:meth:`pack`, serialized."""
        return self.pack_blocks_raw(stamp_ns, base_wrench, tau)


def decode_feedforward_jet(msg):
    """``(stamp_ns, W (r+1, 6), tau (r+1, n), joint_names)`` of a feedforward-jet message."""
    rows, ncol, label = _check_layout(msg, FEEDFORWARD_OFFSET, "feedforward jet")
    names = label.split(",")
    if tuple(names[:6]) != BASE_WRENCH_COLUMNS or len(names) != ncol:
        raise InputError("feedforward jet: unexpected column labels")
    data = np.asarray(msg.data, dtype=np.float64)
    body = data[FEEDFORWARD_OFFSET:].reshape(rows, ncol)
    stamp = int(data[0]) * 1_000_000_000 + int(data[1])
    return stamp, body[:, :6].copy(), body[:, 6:].copy(), tuple(names[6:])


# ---------------------------------------------------------------------- flat outputs (under-actuated)
def make_flat_reference_msg(stamp_ns: int, com: np.ndarray, yaw: np.ndarray, q: np.ndarray, joint_names,
                            msg: Float64MultiArray | None = None) -> Float64MultiArray:
    """Pack one flat-output sample into the flat-reference layout (module docstring).

    com : (K+1, 3) CoM derivatives; yaw : (K+1,) yaw derivatives; q : (K+1, m) joint derivatives,
    columns ``joint_names``; msg : optional message to reuse.
    """
    com, yaw, q = np.asarray(com, float), np.asarray(yaw, float), np.asarray(q, float)
    K1 = com.shape[0]
    if com.shape != (K1, 3) or yaw.shape != (K1,) or q.shape != (K1, len(joint_names)):
        raise ValueError(f"com, yaw, q: expected ({K1}, 3), ({K1},), ({K1}, {len(joint_names)}), got "
                         f"{com.shape}, {yaw.shape}, {q.shape}")
    msg = Float64MultiArray() if msg is None else msg
    _layout(msg, K1, FLAT_REFERENCE_COLUMNS + tuple(joint_names), FLAT_REFERENCE_OFFSET)
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    body = np.hstack([com, yaw[:, None], q])
    msg.data = _as_double_array(np.concatenate([[sec, nsec], body.ravel()]))
    return msg


class FlatReferenceDecoder:
    """Decode flat-reference messages into the inputs of ``gd.flat_inverse_dynamics``.

    joint_names : the model's joints (column order of ``q``); order : ``r``: rows ``c^(0..r+4)``,
    ``psi^(0..r+2)`` and ``q^(0..r+2)`` are read; topic : named in the error messages.
    """

    def __init__(self, joint_names, order: int, topic: str = "flat_reference"):
        self.matcher = JointNameMatcher(joint_names)
        self.order = order
        self.topic = topic
        self._label_cache: dict[tuple, np.ndarray] = {}

    def _columns(self, label: str, ncol: int) -> np.ndarray:
        key = (label, ncol)
        cols = self._label_cache.get(key)
        if cols is None:
            names = label.split(",")
            t = self.topic
            if ncol != len(names):
                raise InputError(f"{t}: column label count differs from dim[1].size")
            if tuple(names[:4]) != FLAT_REFERENCE_COLUMNS:
                raise InputError(f"{t}: first four columns must be {','.join(FLAT_REFERENCE_COLUMNS)}")
            cols = self.matcher.indices(names[4:], f"{t} joint columns") + 4
            if len(self._label_cache) > 16:
                self._label_cache.clear()
            self._label_cache[key] = cols
        return cols

    def decode(self, msg, com_out: np.ndarray, yaw_out: np.ndarray, Q_out: np.ndarray) -> int:
        """Fill ``com_out`` (>= r+5, 3), ``yaw_out`` (>= r+3,), ``Q_out`` (>= r+3, n); return the stamp [ns].

        Raises :class:`InputError` for a malformed layout, too few rows, missing joints or NaN/Inf
        in the rows used."""
        r, t = self.order, self.topic
        rows, ncol, label = _check_layout(msg, FLAT_REFERENCE_OFFSET, t)
        if rows < r + 5:
            raise InputError(f"{t}: {rows} derivative rows, order {r} needs {r + 5} (c^(0..{r + 4}))")
        cols = self._columns(label, ncol)
        data = as_float64(msg.data)
        stamp_ns = checked_stamp_ns(data[0], data[1], f"{t} (data[0:2])")
        body = data[FLAT_REFERENCE_OFFSET:].reshape(rows, ncol)
        com_out[: r + 5] = body[: r + 5, :3]
        yaw_out[: r + 3] = body[: r + 3, 3]
        np.take(body[: r + 3], cols, axis=1, out=Q_out[: r + 3])
        if not (np.isfinite(com_out[: r + 5]).all() and np.isfinite(yaw_out[: r + 3]).all()
                and np.isfinite(Q_out[: r + 3]).all()):
            raise InputError(f"{t}: NaN or Inf in the derivative rows used")
        return stamp_ns


class FlatFeedforwardPacker(StampedJetPacker):
    """Build ``feedforward/flat_jet`` messages (thrust, body torque, joint torques) for a model and order."""

    def __init__(self, joint_names, order: int):
        super().__init__(FLAT_FEEDFORWARD_COLUMNS + tuple(joint_names), order + 1)

    def pack(self, stamp_ns: int, thrust, body_torque, tau) -> Float64MultiArray:
        """``T^(0..r)`` (r+1,), ``tau_b^(0..r)`` (r+1, 3), ``tau^(0..r)`` (r+1, n) with the stamp."""
        return self.pack_blocks(stamp_ns, thrust, body_torque, tau)


def decode_flat_feedforward_jet(msg):
    """``(stamp_ns, thrust (r+1,), body_torque (r+1, 3), tau (r+1, n), joint_names)`` of a
    ``feedforward/flat_jet`` message (:class:`InputError` if malformed or not finite)."""
    stamp, body, names = _decode_stamped_jet(msg, "feedforward/flat_jet", FLAT_FEEDFORWARD_COLUMNS)
    return stamp, body[:, 0].copy(), body[:, 1:4].copy(), body[:, 4:].copy(), names


class RotorSpeedPacker(StampedJetPacker):
    """Build ``feedforward/rotor_speeds`` messages (``omega_d^(0..r)`` per rotor)."""

    def __init__(self, rotor_names, order: int):
        super().__init__(tuple(rotor_names), order + 1)

    def pack(self, stamp_ns: int, omega) -> Float64MultiArray:
        """``omega_d^(0..r)`` (r+1, n_r) with the stamp."""
        return self.pack_blocks(stamp_ns, omega)


def decode_rotor_speed_jet(msg):
    """``(stamp_ns, omega (r+1, n_r), rotor_names)`` of a ``feedforward/rotor_speeds`` message."""
    stamp, body, names = _decode_stamped_jet(msg, "feedforward/rotor_speeds")
    return stamp, body.copy(), names


# ---------------------------------------------------------------------- linearization
_BLOCK_LABEL = re.compile(r"^([AB]):rows=(\d+);cols=(\d+)$")


def _block_label(name: str, rows: int, cols: int) -> str:
    return f"{name}:rows={rows};cols={cols}"


class LinearizationPacker:
    """Build linearization messages (``A`` (nx, nx) then ``B`` (nx, nu), row-major, after the
    stamp; module docstring) for fixed sizes, reusing one message."""

    def __init__(self, nx: int, nu: int):
        self.nx, self.nu = nx, nu
        self.msg = Float64MultiArray()
        self.msg.layout.dim = [
            MultiArrayDimension(label=_block_label("A", nx, nx), size=nx * nx, stride=nx * nx),
            MultiArrayDimension(label=_block_label("B", nx, nu), size=nx * nu, stride=nx * nu),
        ]
        self.msg.layout.data_offset = LINEARIZATION_OFFSET
        o = LINEARIZATION_OFFSET
        self._buf = np.empty(o + nx * nx + nx * nu)
        self._A = self._buf[o:o + nx * nx].reshape(nx, nx)
        self._B = self._buf[o + nx * nx:].reshape(nx, nu)

    def pack(self, stamp_ns: int, A: np.ndarray, B: np.ndarray) -> Float64MultiArray:
        """Message carrying ``A``, ``B`` with the stamp."""
        sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
        self._buf[0], self._buf[1] = sec, nsec
        self._A[:] = A
        self._B[:] = B
        self.msg.data = array.array("d", self._buf.tobytes())
        return self.msg


def decode_linearization(msg):
    """``(stamp_ns, A (nx, nx), B (nx, nu))`` of a linearization message.

    Raises :class:`InputError` if the layout is not the one in the module docstring.
    """
    lay = msg.layout
    what = "linearization"
    if len(lay.dim) != 2:
        raise InputError(f"{what}: layout must have 2 dims (blocks A, B), has {len(lay.dim)}")
    if lay.data_offset != LINEARIZATION_OFFSET:
        raise InputError(f"{what}: layout.data_offset must be {LINEARIZATION_OFFSET}, is {lay.data_offset}")
    shapes = []
    for d, name in zip(lay.dim, "AB"):
        m = _BLOCK_LABEL.match(d.label)
        if m is None or m.group(1) != name:
            raise InputError(f"{what}: dim label '{d.label}' is not '{name}:rows=<int>;cols=<int>'")
        rows, cols = int(m.group(2)), int(m.group(3))
        if d.size != rows * cols or d.stride != rows * cols:
            raise InputError(f"{what}: block {name} has size/stride ({d.size}, {d.stride}), "
                             f"label says {rows} x {cols}")
        shapes.append((rows, cols))
    (ra, ca), (rb, cb) = shapes
    if ra != ca or rb != ra:
        raise InputError(f"{what}: A is {ra} x {ca} and B is {rb} x {cb}; need A square and "
                         "B with as many rows")
    o = LINEARIZATION_OFFSET
    if len(msg.data) != o + ra * ca + rb * cb:
        raise InputError(f"{what}: data has {len(msg.data)} values, layout says "
                         f"{o} + {ra} x {ca} + {rb} x {cb}")
    data = np.asarray(msg.data, dtype=np.float64)
    stamp = int(data[0]) * 1_000_000_000 + int(data[1])
    A = data[o:o + ra * ca].reshape(ra, ca).copy()
    B = data[o + ra * ca:].reshape(rb, cb).copy()
    return stamp, A, B


def linearization_labels_json(representation: str, state_labels, input_labels, **extra) -> str:
    """The JSON text of ``~/linearization/labels``: ``representation``, ``state`` (the ``nx``
    names of ``z``: rows and columns of ``A``, rows of ``B``), ``input`` (the ``nu`` names of
    ``w``: columns of ``B``), ``nx``, ``nu``, ``data_offset`` and a ``layout`` sentence, then
    ``extra`` keys (e.g. the model name)."""
    state, inputs = list(state_labels), list(input_labels)
    nx, nu = len(state), len(inputs)
    o = LINEARIZATION_OFFSET
    doc = {
        "representation": representation,
        "state": state,
        "input": inputs,
        "nx": nx,
        "nu": nu,
        "data_offset": o,
        "layout": (f"std_msgs/Float64MultiArray: data[0:2] = (stamp.sec, stamp.nanosec); "
                   f"A ({nx} x {nx}) row-major at data[{o}:{o + nx * nx}], A[i,j] = data[{o} + i*{nx} + j]; "
                   f"B ({nx} x {nu}) row-major at data[{o + nx * nx}:{o + nx * nx + nx * nu}], "
                   f"B[i,j] = data[{o + nx * nx} + i*{nu} + j]; dz/dt = A z + B w, "
                   f"z = state, w = input"),
    }
    doc.update(extra)
    return json.dumps(doc)
