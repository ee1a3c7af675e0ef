"""Rotor frames in the base link and the allocation columns (paper Sec. 7.1, eq. (28))."""
from __future__ import annotations

import re

import numpy as np

from .params import _pos

__all__ = ["tilthex_rotor_frames", "rotor_frames_from_model", "rotor_wrench_columns"]


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


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
        names.sort(key=lambda s: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)])
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


def rotor_wrench_columns(frames, motor_constant, drag_constants) -> np.ndarray:
    """(6, n) allocation matrix ``A``: column i is ``Ad*_{C_i^-1} (0, 0, c_d,i, 0, 0, c_f)``.

    frames : (n, 4, 4) rotor frames in the base link; motor_constant c_f [N s^2/rad^2];
    drag_constants (n,) signed ``s_i c_d`` [N m s^2/rad^2].
    """
    F = np.asarray(frames, float)
    cd = np.asarray(drag_constants, float).reshape(-1)
    if F.ndim != 3 or F.shape[1:] != (4, 4) or cd.shape != (F.shape[0],):
        raise ValueError(f"frames, drag_constants: expected (n, 4, 4) and (n,), got {F.shape}, {cd.shape}")
    A = np.empty((6, F.shape[0]))
    for i, (C, c) in enumerate(zip(F, cd)):
        R, p = C[:3, :3], C[:3, 3]
        f = R @ np.array([0.0, 0.0, motor_constant])
        A[:3, i] = R @ np.array([0.0, 0.0, c]) + np.cross(p, f)
        A[3:, i] = f
    return A
