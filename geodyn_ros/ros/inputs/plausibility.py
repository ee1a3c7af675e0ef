"""Plausibility limits on ``geodyn_node``'s inputs (ROS-free): finite but absurd values are refused
like NaN, with one line naming the topic, the field, its value and the limit.

The limits are the node parameters ``max_position`` [m], ``max_speed`` [rad/s, m/s],
``max_joint_rate`` [rad/s or m/s] and ``max_input_magnitude`` (every other entry), passed as the
dict ``limits`` (name -> value; ``inf`` = no limit).
"""
from __future__ import annotations

import math

import numpy as np

from ..wire.conversions import InputError

__all__ = ["LIMIT_NAMES", "check_plausible", "check_plausible_flat"]

LIMIT_NAMES = ("max_position", "max_speed", "max_joint_rate", "max_input_magnitude")


def _over(limits, topic, field, value, name, unit="", scale=1.0):
    limit = limits[name] * scale
    if not value <= limit:   # NaN fails too
        raise InputError(f"{topic}: {field} = {value:.6g}{unit} exceeds the plausibility limit "
                         f"{limit:.6g}{unit} (parameter '{name}' = {limits[name]:g})")


def check_plausible(limits: dict, topic: str, C=None, V=None, Q=None, qd=None, q=None) -> None:
    """Refuse absurd state inputs: ``C`` (4, 4) base pose (``|p| <= max_position``), ``V`` (K, 6)
    spatial twist jet (angular speed and the base-origin velocity ``v - p x w`` of row 0 <=
    ``max_speed``; rows 1.. <= ``(1 + |p|) max_input_magnitude``, spatial rows carry ``p x`` terms),
    ``Q`` (K, n) joint jet (row 1 <= ``max_joint_rate``, the others <= ``max_input_magnitude``), or
    ``qd`` / ``q`` (n,) directly. Raises :class:`InputError`."""
    p = np.zeros(3) if C is None else C[:3, 3]
    if C is not None:
        _over(limits, topic, "|base position|", float(np.linalg.norm(p)), "max_position", " m")
    if V is not None:
        w, v = V[0, :3], V[0, 3:]
        _over(limits, topic, "|base angular velocity|", float(np.linalg.norm(w)), "max_speed", " rad/s")
        vo = (v[0] - (p[1] * w[2] - p[2] * w[1]), v[1] - (p[2] * w[0] - p[0] * w[2]),
              v[2] - (p[0] * w[1] - p[1] * w[0]))      # v - p x w, without np.cross's overhead
        _over(limits, topic, "|base origin velocity|", math.sqrt(vo[0] ** 2 + vo[1] ** 2 + vo[2] ** 2),
              "max_speed", " m/s")
        if len(V) > 1:
            _over(limits, topic, "max |base twist derivative|", float(np.abs(V[1:]).max()),
                  "max_input_magnitude", scale=1.0 + float(np.linalg.norm(p)))
    if Q is not None:
        qd, q = Q[1], np.concatenate([Q[:1].ravel(), Q[2:].ravel()])
    if qd is not None:
        _over(limits, topic, "max |qdot|", float(np.abs(qd).max(initial=0.0)), "max_joint_rate")
    if q is not None:
        _over(limits, topic, "max |joint position or derivative|", float(np.abs(q).max(initial=0.0)),
              "max_input_magnitude")


def check_plausible_flat(limits: dict, com, yaw, Q, topic: str = "flat_reference") -> None:
    """Refuse an absurd flat reference: ``com`` (K, 3) CoM jet (``|c|`` max_position, ``|c'|``
    max_speed), ``yaw`` (K,) (``|psi'|`` max_speed), ``Q`` (K, n) (``|q'|`` max_joint_rate), every
    other entry max_input_magnitude. Raises :class:`InputError`."""
    checks = (("|CoM position|", float(np.linalg.norm(com[0])), "max_position", " m"),
              ("|CoM velocity|", float(np.linalg.norm(com[1])), "max_speed", " m/s"),
              ("|yaw rate|", abs(float(yaw[1])), "max_speed", " rad/s"),
              ("max |qdot|", float(np.abs(Q[1]).max(initial=0.0)), "max_joint_rate", ""),
              ("max |higher CoM derivative|", float(np.abs(com[2:]).max()), "max_input_magnitude", ""),
              ("max |yaw or derivative|", float(np.abs(np.r_[yaw[:1], yaw[2:]]).max()), "max_input_magnitude", ""),
              ("max |joint position or derivative|",
               float(np.abs(np.concatenate([Q[:1].ravel(), Q[2:].ravel()])).max(initial=0.0)),
               "max_input_magnitude", ""))
    for field, value, name, unit in checks:
        _over(limits, topic, field, value, name, unit)
