"""Rotor frames in the base link and the allocation columns (paper Sec. 7.1, eq. (28)).

Frames are ``(n, 4, 4)`` poses ``C_i = (R_i, p_i)`` of the rotors in the base link (FLU axes,
metres); rotor ``i`` thrusts along ``R_i e_3``. They come from one of:

* a list of positions and thrust axes (:func:`rotation_from_axis`: the minimal rotation taking
  ``e_3`` to the axis) or URDF roll-pitch-yaw angles;
* PX4's ``CA_ROTORn_*`` parameters (FRD body axes, :func:`px4_to_flu`);
* URDF links (:func:`rotor_frames_from_model`, the links' z axes are the thrust axes);
* the TiltHex generator of eq. (28) (:func:`tilthex_rotor_frames`, :func:`multirotor_frames`).

The drag torque about the thrust axis does not depend on the roll of ``R_i`` about that axis, so
any ``R_i`` with ``R_i e_3 = axis`` gives the same allocation column (:func:`rotor_wrench_columns`).
Layer 1: imports only ``model``, ``lie`` and numpy.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from ..lie import rpy_to_matrix

__all__ = ["tilthex_rotor_frames", "multirotor_frames", "rotor_frames_from_model", "rotor_wrench_columns",
           "rotation_from_axis", "rotor_frame", "px4_to_flu", "urdf_joint_table", "natural_key",
           "allocation_rank", "RANK_RTOL", "COLLINEAR_RTOL"]

#: relative threshold of the singular values counted in the rank of ``A``: the same value as
#: ``geodyn_ros.control.rotors.FULL_ACTUATION_RTOL`` (far above rounding, 1e-16, far below any real
#: vehicle: the TiltHex has sigma_min / sigma_max = 0.11)
RANK_RTOL = 1e-9
#: a set is collinear when its lateral-force rows are below this fraction of its largest thrust
#: entry (``geodyn_ros.control.rotors.COLLINEAR_RTOL``: rounding gives 1e-16, a 0.1 deg tilt 2e-3)
COLLINEAR_RTOL = 1e-9

_SPIN = {"ccw": -1.0, "cw": 1.0}


def _pos(name, v, *, allow_zero=False):
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a real number, got {v!r}") from None
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise ValueError(f"{name}: expected a finite {'non-negative' if allow_zero else 'positive'} number, got {v!r}")
    return x


def natural_key(s):
    """Sort key ordering ``rotor_2`` before ``rotor_10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


# ----------------------------------------------------------------------------- rotations
def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rotation_from_axis(axis) -> np.ndarray:
    """(3, 3) the minimal rotation ``R`` with ``R e_3 = axis`` (axis normalised first).

    The rotation about ``k = e_3 x axis / |e_3 x axis|`` by the angle between ``e_3`` and the axis
    (Rodrigues, with the angle from ``atan2`` so that it is accurate near 0 and pi). For
    ``axis = e_3`` it is the identity; for ``axis = -e_3`` (no unique minimal rotation) it is the
    rotation by pi about the base x axis, ``diag(1, -1, -1)``.
    """
    a = np.asarray(axis, float).reshape(-1)
    nrm = np.linalg.norm(a) if a.shape == (3,) else 0.0
    if not np.isfinite(nrm) or nrm == 0.0:
        raise ValueError(f"axis: expected a non-zero finite 3-vector, got {axis!r}")
    a = a / nrm
    v = np.array([-a[1], a[0], 0.0])             # e_3 x a
    s = np.linalg.norm(v)
    if s == 0.0:
        return np.eye(3) if a[2] > 0 else np.diag([1.0, -1.0, -1.0])
    k = v / s
    th = np.arctan2(s, a[2])
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(th) * K + (1.0 - np.cos(th)) * (K @ K)


def rotor_frame(position, *, axis=None, rpy=None) -> np.ndarray:
    """(4, 4) rotor frame in the base link from its position [m] and either its thrust axis
    (:func:`rotation_from_axis`) or URDF roll-pitch-yaw [rad] (thrust along the rotated z)."""
    if (axis is None) == (rpy is None):
        raise ValueError("axis, rpy: give exactly one of them")
    T = np.eye(4)
    T[:3, :3] = rotation_from_axis(axis) if axis is not None else rpy_to_matrix(rpy)
    T[:3, 3] = np.asarray(position, float)
    return T


def px4_to_flu(PX=0.0, PY=0.0, PZ=0.0, AX=0.0, AY=0.0, AZ=-1.0):
    """``(position, axis)`` in FLU base axes from PX4's ``CA_ROTORn_P*`` / ``CA_ROTORn_A*`` (FRD body
    axes: x forward, y right, z down): ``(x, y, z) -> (x, -y, -z)``. The defaults are PX4's
    parameter defaults (``src/modules/control_allocator/module.yaml``: P* = 0, AX = AY = 0,
    AZ = -1, i.e. thrust up)."""
    return np.array([PX, -PY, -PZ], float), np.array([AX, -AY, -AZ], float)


# ----------------------------------------------------------------------------- generators
def tilthex_rotor_frames(arm_length, alpha, beta) -> np.ndarray:
    """(6, 4, 4) rotor frames in the base link, paper eq. (28):
    ``C_{B,p_i} = Rz((2-i) pi/3) Tx(a) Rx(alpha_i) Ry(beta_i)``, i = 1..6 (a in m, angles in rad)."""
    a = _pos("arm_length", arm_length)
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    if alpha.shape != (6,) or beta.shape != (6,):
        raise ValueError(f"alpha, beta: expected shape (6,), got {alpha.shape} and {beta.shape}")
    out = np.empty((6, 4, 4))
    for i in range(1, 7):
        T = np.eye(4)
        Rz = _rz((2 - i) * np.pi / 3)
        T[:3, :3] = Rz @ _rx(alpha[i - 1]) @ _ry(beta[i - 1])
        T[:3, 3] = Rz @ np.array([a, 0.0, 0.0])
        out[i - 1] = T
    return out


def multirotor_frames(arm_length, alpha, beta) -> np.ndarray:
    """(n, 4, 4) eq. (28) for n rotors: ``Rz((2-i) 2 pi/n) Tx(a) Rx(alpha_i) Ry(beta_i)``, i = 1..n.

    For n = 6 it equals :func:`tilthex_rotor_frames` to the last bit (``(2-i) 2 pi / 6`` and
    ``(2-i) pi / 3`` round identically: scaling by 2 is exact)."""
    a = _pos("arm_length", arm_length)
    alpha, beta = np.asarray(alpha, float).reshape(-1), np.asarray(beta, float).reshape(-1)
    n = alpha.size
    if n == 0 or beta.shape != (n,):
        raise ValueError(f"alpha, beta: expected two (n,) arrays, n >= 1, got {alpha.shape} and {beta.shape}")
    out = np.empty((n, 4, 4))
    for i in range(1, n + 1):
        T = np.eye(4)
        Rz = _rz((2 - i) * (2 * np.pi) / n)
        T[:3, :3] = Rz @ _rx(alpha[i - 1]) @ _ry(beta[i - 1])
        T[:3, 3] = Rz @ np.array([a, 0.0, 0.0])
        out[i - 1] = T
    return out


def rotor_frames_from_model(model, rotor_links=None, *, pattern=r"^rotor_\d+$") -> tuple:
    """Rotor frames in the base link from a loaded model whose rotor joints are locked.

    Parameters
    ----------
    model : geodyn_ros.Model
        Loaded with the rotor joints locked (``load_urdf(..., locked_joints=...)``), so every
        rotor link is merged into the base body.
    rotor_links : sequence of str, optional
        The rotor link names in actuator order; ``None``: every link matching ``pattern``,
        sorted by the number in the name (``rotor_1, rotor_2, ..., rotor_10``).
    pattern : str
        Regular expression for the rotor links when ``rotor_links`` is None.

    Returns
    -------
    (names, frames) : tuple of str, (n, 4, 4) poses of the rotor links in the base-link frame.
    """
    if rotor_links is None:
        rx = re.compile(pattern)
        names = [ln for ln in model.link_home if rx.search(ln)]
        if not names:
            raise ValueError(f"rotor_links: no link of the model matches the pattern {pattern!r}")
        names.sort(key=natural_key)
    else:
        names = list(rotor_links)
        if not names:
            raise ValueError("rotor_links: empty")
    frames = []
    for ln in names:
        if ln not in model.link_home:
            raise ValueError(f"rotor_links: unknown link {ln!r}")
        if model.link_to_body[ln] != 0:
            raise ValueError(f"rotor_links: link {ln!r} is not rigidly attached to the base "
                             f"{model.base_link!r} (lock its joint with load_urdf(..., locked_joints=[...]))")
        frames.append(np.array(model.link_home[ln], dtype=float))   # base at identity: base-link frame
    return tuple(names), np.array(frames)


# ----------------------------------------------------------------------------- allocation
def rotor_wrench_columns(frames, motor_constant, drag_constants) -> np.ndarray:
    """(6, n) allocation matrix ``A``: column i is ``Ad*_{C_i^-1} (0, 0, c_d,i, 0, 0, c_f,i)``.

    frames : (n, 4, 4) rotor frames in the base link; motor_constant c_f [N s^2/rad^2], scalar or
    (n,) per rotor; drag_constants (n,) signed ``s_i c_d,i`` [N m s^2/rad^2].
    """
    F = np.asarray(frames, float)
    cd = np.asarray(drag_constants, float).reshape(-1)
    if F.ndim != 3 or F.shape[1:] != (4, 4) or cd.shape != (F.shape[0],):
        raise ValueError(f"frames, drag_constants: expected (n, 4, 4) and (n,), got {F.shape}, {cd.shape}")
    cf = np.broadcast_to(np.asarray(motor_constant, float), (F.shape[0],)) if np.ndim(motor_constant) else None
    A = np.empty((6, F.shape[0]))
    for i, (C, c) in enumerate(zip(F, cd)):
        R, p = C[:3, :3], C[:3, 3]
        f = R @ np.array([0.0, 0.0, motor_constant if cf is None else cf[i]])
        A[:3, i] = R @ np.array([0.0, 0.0, c]) + np.cross(p, f)
        A[3:, i] = f
    return A


def allocation_rank(A) -> tuple:
    """``(rank, collinear, missing)`` of a (6, n) allocation matrix.

    ``rank``: of ``A`` (singular values above ``RANK_RTOL`` of the largest); ``collinear``: every
    thrust along base z (lateral-force rows below ``COLLINEAR_RTOL``), then ``rank`` is that of the
    4 x n map to ``(f_z, n_x, n_y, n_z)``; ``missing``: the body wrench directions ``A`` cannot
    produce, as text (``"1.00 f_x; 1.00 f_y"``), moment first ``(n_x, n_y, n_z, f_x, f_y, f_z)``.
    """
    A = np.asarray(A, float)
    n = A.shape[1]
    if n == 0:
        return 0, False, "every direction"
    fz = np.abs(A[5]).max()
    collinear = fz > 0 and np.abs(A[3:5]).max() <= COLLINEAR_RTOL * fz
    M = A[[5, 0, 1, 2]] if collinear else A
    U, s, _ = np.linalg.svd(M)
    rank = int(np.sum(s >= RANK_RTOL * s[0])) if s[0] > 0 else 0
    labels = ("f_z", "n_x", "n_y", "n_z") if collinear else ("n_x", "n_y", "n_z", "f_x", "f_y", "f_z")
    missing = "; ".join(" + ".join(f"{c:.2f} {labels[k]}" for k, c in enumerate(col) if abs(c) > 1e-6)
                        for col in U[:, rank:].T)
    return rank, bool(collinear), missing


# ----------------------------------------------------------------------------- URDF joints
def _limit(lim, key):
    """``float(<limit key=...>)``, or None (no ``<limit>``, no such attribute, not a finite number)."""
    v = None if lim is None else lim.get(key)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def urdf_joint_table(source) -> tuple:
    """``(joints, links)`` of a URDF (path, xacro or XML string, as ``load_urdf`` takes):
    ``joints[name] = {"type", "parent", "child", "effort", "lower", "upper"}`` (``effort`` [N m or
    N]: the ``<limit effort>`` if positive, else None: URDF exporters write 0 for "unspecified";
    ``lower``, ``upper`` [rad or m]: the ``<limit>``'s, None when absent or not a finite number)
    and the link names."""
    from ..model.urdf import _read_source
    return joint_table_of(*_read_source(source))


def joint_table_of(text: str, where: str) -> tuple:
    """:func:`urdf_joint_table` of URDF ``text`` already read (``where``: its name in messages)."""
    try:
        root = ET.fromstring(text.lstrip("\ufeff \t\r\n"))
    except ET.ParseError as exc:
        raise ValueError(f"source: {where} is not valid XML ({exc})") from None
    joints = {}
    for je in root.findall("joint"):
        lim = je.find("limit")
        eff = None
        if lim is not None and lim.get("effort") is not None:
            try:
                e = float(lim.get("effort"))
            except ValueError:
                e = 0.0
            eff = e if np.isfinite(e) and e > 0 else None
        p, c = je.find("parent"), je.find("child")
        joints[je.get("name")] = {"type": je.get("type"), "parent": None if p is None else p.get("link"),
                                  "child": None if c is None else c.get("link"), "effort": eff,
                                  **{k: _limit(lim, k) for k in ("lower", "upper")}}
    links = tuple(le.get("name") for le in root.findall("link"))
    return joints, links
