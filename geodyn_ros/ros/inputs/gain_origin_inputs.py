"""The flat controller's start-up check of where its gains come from (issue 52): one call with
the loaded model, one parameter (``gains_designed_for``).

The rule is :func:`geodyn_ros.control.gain_origin.gain_origin`: gains designed for this vehicle
(its model's at the file's control period, the file's ``gains:``, or a ``gains_designed_for``
stamp naming it) pass in silence; other gains get one WARN line, or stop the node at start with
that line (exit status 2) when the model says a loop is unstable with them on this vehicle.
"""
from __future__ import annotations

from geodyn_ros.control.gain_origin import gain_origin

from ..common.params import ConfigurationError

__all__ = ["GAIN_ORIGIN_PARAMETERS", "check_gain_origin"]

GAIN_ORIGIN_PARAMETERS = {
    "gains_designed_for": ("", "The vehicle and command period the gains were designed for, as geodyn_vehicle --px4 "
                           "--out writes it ('mass <kg> kg; inertia <Ixx> <Iyy> <Izz> kg m^2; period <s> s'); empty: "
                           "not stated. Gains not designed for the vehicle flown are said in one line at start, and "
                           "refused when the model says they are unstable on it."),
}


def check_gain_origin(node, gains, model, allocation, config, *, rigid_joints: bool) -> None:
    """Say in one line (a WARN of ``node``'s logger) that ``gains`` were not designed for this
    vehicle, or raise :class:`ConfigurationError` with that line when the model says they are
    unstable on it; nothing when they were designed for it, or with ``feedback: lqr`` (the gains are
    not used). Reads ``node._p["gains_designed_for"]`` and ``node._p["feedback"]``."""
    if node._p.get("feedback") == "lqr":
        return
    try:
        origin = gain_origin(gains, node._p["gains_designed_for"], model, allocation, config,
                             rigid_joints=rigid_joints)
    except ValueError as exc:
        raise ConfigurationError(f"parameter {exc}") from None
    if origin.refuse:
        raise ConfigurationError(origin.line)
    if origin.line:
        node.get_logger().warning(origin.line)
