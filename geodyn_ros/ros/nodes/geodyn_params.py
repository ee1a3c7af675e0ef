"""The parameters of ``geodyn_node`` (:mod:`geodyn_ros.ros.nodes.geodyn_node`): the ``PARAMETERS`` table
the node declares from (``doc/gen_parameters.py`` renders it), their start-up check, and the model
loading (with the warm-up of every kernel a cycle can use) that depends on them."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import geodyn_ros as gd
from geodyn_ros.algorithms.checks import MAX_ORDER
from geodyn_ros.algorithms.dynamics import DEFAULT_GRAVITY
from geodyn_ros.algorithms.representations import REPRESENTATIONS

from ..common.description import TOPIC_PARAMETER
from ..common.message_types import MESSAGE_TYPES_PARAMETER, check_message_types
from ..inputs.input_sync import DEFAULT_TOLERANCE
from ..inputs.latest_inputs import DEFAULT_MAX_AGE, POLICY_PARAMETERS, RELIABILITY_PARAMETERS, check_policy_parameters
from ..common.params import FRAME_PREFIX_DESCRIPTION, ConfigurationError, check_frame_prefix, locked_joints_list

__all__ = ["PARAMETERS", "check_parameters", "load_model", "node_gravity", "warm_cycles"]

#: name -> (default, description); the YAML in ``config/geodyn.yaml`` uses the same names.
PARAMETERS = {
    "robot_description": ("", "URDF XML string (ROS convention; launch files fill it via xacro)."),
    "urdf_path": ("", "Path of a .urdf/.xacro file; used when robot_description is empty."),
    "robot_description_topic": TOPIC_PARAMETER,
    "base_link": ("", "Base link; empty = the URDF root."),
    "locked_joints": ("", "Comma-separated joints made rigid at 0 (gd.load_urdf(locked_joints=...)), e.g. "
                      "the rotor joints of a Gazebo multirotor URDF; empty = none."),
    "order": (2, "Derivative order r: outputs W^(0..r), tau^(0..r)."),
    "gravity": ([0.0, 0.0, -9.81], "Gravity acceleration in the world frame [m/s^2]."),
    "input_mode": ("reference", "'reference': all inputs from the reference topic; 'measured': "
                   "pose, twist, q, qdot from odom/joint_states, higher derivatives from the reference; "
                   "'flat': a collinear multirotor's flat outputs (CoM, yaw, joints) on flat_reference, "
                   "through gd.flat_inverse_dynamics."),
    "actuation_config": ("", "flat mode: actuation YAML (rotor names and constants, e.g. config/hexarotor.yaml) "
                         "for feedforward/rotor_speeds; its rotor joints are locked in the model. Empty = no "
                         "rotor feedforward."),
    "rate_hz": (0.0, "0: compute on every new input; > 0: compute at this rate (node clock)."),
    "stale_timeout": (0.1, "Inputs older than this [s] on the node clock are not used."),
    "world_frame": ("world", "Frame of the poses; a non-empty odom header.frame_id must equal it "
                    "(not prefixed by frame_prefix)."),
    "frame_prefix": ("", FRAME_PREFIX_DESCRIPTION + " Here: feedforward/wrench header.frame_id and the "
                     "odom child_frame_id check."),
    "qos_depth": (2, "Keep-last depth of the outputs."),
    "input_depth": (10, "Keep-last depth of the inputs (odom, joint_states, reference, flat_reference): "
                    "the samples the transport keeps while the node's thread is busy, so a stall of up "
                    "to this many input periods (10 ms at 1 kHz) delays outputs instead of losing them."),
    **RELIABILITY_PARAMETERS,
    "output_reliability": ("reliable", "QoS reliability of the outputs: 'reliable' (a reliable or best-effort "
                           "subscriber receives them) or 'best_effort' (less CPU per cycle, no resending; a "
                           "reliable subscriber does not match and receives nothing)."),
    "publish_jet": (True, "Publish feedforward/jet with all orders 0..r."),
    "diagnostics_period": (1.0, "Period [s, wall clock] of the /diagnostics summary."),
    "diagnostics_rate": (10.0, "At most this many /diagnostics messages per second; each carries the "
                         "skipped cycles per reason since the previous one."),
    "max_position": (1e6, "Plausibility limit: |base position| [m] (UTM-scale coordinates pass)."),
    "max_speed": (1e3, "Plausibility limit: base angular speed [rad/s] and speed of the base origin [m/s]."),
    "max_joint_rate": (1e3, "Plausibility limit: |qdot| of every joint [rad/s or m/s]."),
    "max_input_magnitude": (1e9, "Plausibility limit: every other entry of the input jets (joint "
                            "positions and higher derivatives; spatial twist rows are allowed "
                            "(1 + |p|) times this)."),
    "max_input_skew": (0.0, "measured mode, input_policy exact only: > 0 combines only inputs (odom, joint_states, reference) "
                       "whose stamps lie within this many seconds of each other, and stamps the "
                       "output with the oldest; 0 = off (the reference may be up to stale_timeout older "
                       "than the state; output stamped with the state)."),
    **POLICY_PARAMETERS,
    "odom_max_age": (DEFAULT_MAX_AGE, "measured mode, input_policy latest with rate_hz > 0: largest |age| [s] of "
                     "the newest odom at the timer's cycle time (propagated over its age with its twist; older is "
                     "refused). Default 0.02: two periods of a 100 Hz estimator."),
    "sync_tolerance": (DEFAULT_TOLERANCE, "measured mode: how much later [s] than the cycle a reference may be "
                       "stamped and still be used; with input_policy exact also the largest stamp difference of an "
                       "odom and joint_states pair (approximate-time matching; each message used once). Default "
                       "0.4 ms: below half the period of 1 kHz streams, so neighbour samples never pair."),
    "publish_linearization": (False, "Publish ~/linearization (A, B of gd.linearize about the "
                              "cycle's state and feedforward input, for an MPC) and the latched "
                              "~/linearization/labels JSON."),
    "linearization_representation": ("body", "Base twist and wrench in ~/linearization: 'body' "
                                     "(default; the paper's choice and the MPC-friendly one: base "
                                     "axes, A and B independent of the base position) or "
                                     "'spatial' (world axes, about the world origin)."),
    "reference_representation": ("spatial", "Representation of the base twist jet V^(0..r+1) in "
                                 "the reference message, angular first (geodyn_ros.algorithms.representations): "
                                 "'spatial' (default; world axes, about the world origin), 'body' "
                                 "(base axes), 'hybrid' (world angular velocity, base-origin "
                                 "velocity rdot) or 'mixed' (body angular velocity, world rdot; "
                                 "MuJoCo/iDynTree). Rows are derivatives of the represented vector; "
                                 "a non-spatial jet is converted to spatial (Leibniz terms included) "
                                 "at the reference's base pose before the dynamics. In measured mode "
                                 "the measured V^(0) then replaces the converted row 0. The outputs "
                                 "are unaffected (feedforward/jet stays spatial)."),
    "output_representation": ("spatial", "Representation of the base wrench jet W^(0..r) in "
                              "feedforward/jet, moment first: 'spatial' (default; world axes, about "
                              "the world origin), 'body' (base-link axes and origin; for a rotor "
                              "allocation), 'hybrid' or 'mixed' (geodyn_ros.algorithms.representations). Row k "
                              "is the exact k-th derivative of the represented vector. "
                              "feedforward/wrench (body, order 0) is unaffected."),
    **MESSAGE_TYPES_PARAMETER,
}

_MODES = ("reference", "measured", "flat")
_REPRESENTATIONS = ("body", "spatial")


def check_parameters(p: dict) -> None:
    """Raise :class:`ConfigurationError` naming the first parameter of ``p`` (name -> value) out of range."""
    if not 0 <= p["order"] <= MAX_ORDER:
        raise ConfigurationError(f"parameter 'order': must be an integer in 0..{MAX_ORDER}, "
                                 f"got {p['order']}")
    check_frame_prefix(p["frame_prefix"])
    check_message_types(p["message_types"])
    if p["input_mode"] not in _MODES:
        raise ConfigurationError(f"parameter 'input_mode': must be one of {_MODES}, got "
                                 f"'{p['input_mode']}'")
    if len(p["gravity"]) != 3 or not np.isfinite(p["gravity"]).all():
        raise ConfigurationError(f"parameter 'gravity': must be 3 finite numbers, got {p['gravity']}")
    if not (np.isfinite(p["rate_hz"]) and p["rate_hz"] >= 0):
        raise ConfigurationError(f"parameter 'rate_hz': must be >= 0, got {p['rate_hz']}")
    if not (np.isfinite(p["stale_timeout"]) and p["stale_timeout"] > 0):
        raise ConfigurationError(f"parameter 'stale_timeout': must be > 0 s, got {p['stale_timeout']}")
    check_policy_parameters(p)
    if p["max_input_skew"] > 0 and p["input_policy"] != "exact":
        raise ConfigurationError(f"parameter 'max_input_skew': {p['max_input_skew']:g} s needs input_policy 'exact' "
                                 f"(input_policy '{p['input_policy']}' stamps the outputs with the cycle's time)")
    for name in ("output_reliability",):
        if p[name] not in ("reliable", "best_effort"):
            raise ConfigurationError(f"parameter '{name}': must be 'reliable' or 'best_effort', got {p[name]!r}")
    for name in ("qos_depth", "input_depth"):
        if p[name] < 1:
            raise ConfigurationError(f"parameter '{name}': must be >= 1, got {p[name]}")
    if not p["diagnostics_period"] > 0:
        raise ConfigurationError("parameter 'diagnostics_period': must be > 0")
    if p["linearization_representation"] not in _REPRESENTATIONS:
        raise ConfigurationError(f"parameter 'linearization_representation': must be one of "
                                 f"{_REPRESENTATIONS}, got '{p['linearization_representation']}'")
    if not (np.isfinite(p["diagnostics_rate"]) and p["diagnostics_rate"] > 0):
        raise ConfigurationError(f"parameter 'diagnostics_rate': must be > 0 messages/s, got "
                                 f"{p['diagnostics_rate']}")
    for k in ("max_position", "max_speed", "max_joint_rate", "max_input_magnitude"):
        if not (p[k] > 0):   # inf allowed: no limit
            raise ConfigurationError(f"parameter '{k}': must be > 0 (inf = no limit), got {p[k]}")
    if not (np.isfinite(p["max_input_skew"]) and p["max_input_skew"] >= 0):
        raise ConfigurationError(f"parameter 'max_input_skew': must be >= 0 s (0 = off), got "
                                 f"{p['max_input_skew']}")
    if p["reference_representation"] not in REPRESENTATIONS:
        raise ConfigurationError(f"parameter 'reference_representation': must be one of "
                                 f"{REPRESENTATIONS}, got '{p['reference_representation']}'")
    if p["output_representation"] not in REPRESENTATIONS:
        raise ConfigurationError(f"parameter 'output_representation': must be one of "
                                 f"{REPRESENTATIONS}, got '{p['output_representation']}'")


def node_gravity(values):
    """The ``gravity`` argument of the node's calls: the library's own default object when the
    parameter is the default (its hot paths, with a reused work buffer, apply), else a read-only
    float64 (3,) array (the type the kernels are compiled for by the default and the warm-up, so
    no first-cycle compilation of a writable-array variant)."""
    g = np.array(values, dtype=float)
    if g.shape == (3,) and tuple(g.tolist()) == tuple(DEFAULT_GRAVITY):
        return DEFAULT_GRAVITY
    g.setflags(write=False)
    return g


def load_model(source, p: dict) -> SimpleNamespace:
    """``model`` (:class:`geodyn_ros.Model` of ``source``, path or URDF XML, with the parameters
    ``base_link`` and ``locked_joints``, evaluated once at rest so a model whose dynamics cannot
    be computed is refused) and, in flat mode with ``actuation_config``, its ``allocation``
    (rotor joints locked, rotor frames of the URDF) and ``rotor_names``. Raises ConfigurationError or
    ValueError naming the problem."""
    flat, r, gravity = p["input_mode"] == "flat", p["order"], node_gravity(p["gravity"])
    base = p["base_link"] or None
    locked = locked_joints_list(p)
    cfg = allocation = rotor_names = None
    if flat and p["actuation_config"]:
        from geodyn_ros.control.rotors import load_actuation_config
        try:
            cfg = load_actuation_config(p["actuation_config"])
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {exc}") from exc
        base = base or cfg.base_link
        # as every consumer of the vehicle file: the pinned joints where their limits pin them, the
        # inertia MuJoCo refuses corrected as in the simulator (ActuationConfig.load_model)
        try:
            locked = {**{j: 0.0 for j in locked}, **cfg.locked_positions(source)}
        except ValueError as exc:   # the file's line (locked_joints, from_urdf) blames the file, not the URDF
            if str(exc).startswith(f"{cfg.source_path}: "):
                raise ConfigurationError(f"parameter 'actuation_config': {exc}") from exc
            raise
        source = cfg.flight_urdf(source)[0]
    model = gd.load_urdf(source, base_link=base, locked_joints=locked or None)
    n = model.n_joints
    res = gd.inverse_dynamics(model, np.eye(4), None if model.fixed_base else np.zeros((r + 2, 6)),
                              np.zeros((r + 3, n)), r, gravity=gravity)
    if not (np.isfinite(res.base_wrench).all() and np.isfinite(res.tau).all()):
        raise ValueError("the inverse dynamics of this model at rest are not finite")
    if flat and model.fixed_base:
        raise ConfigurationError("input_mode 'flat': the model has a fixed base; the flat map needs a floating "
                                 "base (a multirotor)")
    if cfg is not None:
        from geodyn_ros.control.rotors import Allocation
        try:
            rotor_names, frames = cfg.rotor_frames(model)
            allocation = Allocation.from_frames(frames, cfg.rotors)
        except ValueError as exc:
            raise ConfigurationError(f"parameter 'actuation_config': {cfg.refusal(model, exc)}") from exc
    warm_cycles(model, allocation, res, p)
    return SimpleNamespace(model=model, allocation=allocation, rotor_names=rotor_names)


def warm_cycles(model, allocation, res, p: dict) -> None:
    """Run, once at rest, every computation a cycle of this configuration can make (the flat map
    at the node's order, the rotor allocation, the representation conversions, the linearization)
    so that no numba kernel is compiled in a cycle: loaded from the cache that ``python -m
    geodyn_ros.warmup`` fills, or compiled here, at start-up, where a stop is answered at once."""
    r, n, gravity = p["order"], model.n_joints, node_gravity(p["gravity"])
    C, V, Q, W, tau = np.eye(4), np.zeros((r + 2, 6)), np.zeros((r + 3, n)), res.base_wrench, res.tau
    try:
        if p["input_mode"] == "flat":   # hovering at rest (a zero gravity would be free fall: nothing more to warm)
            f = gd.flat_inverse_dynamics(model, np.zeros((r + 5, 3)), np.zeros(r + 3), Q, r, gravity=gravity)
            C, V, Q, W, tau = f.base_pose, f.base_twist, f.q, f.base_wrench, f.tau
            if allocation is not None:
                allocation.allocate_thrust_torque(f.thrust, f.body_torque)
        elif p["reference_representation"] != "spatial":
            gd.convert_twist(C, V, p["reference_representation"], "spatial")
        if p["output_representation"] != "spatial" and not model.fixed_base:
            gd.convert_wrench(C, W, V, "spatial", p["output_representation"])
        if p["publish_linearization"]:
            gd.linearize(model, C, V[:1], Q[:2], W[:1], tau[:1], gravity=gravity,
                         representation=p["linearization_representation"])
    except ValueError:
        pass   # a state the map refuses at rest; the cycles report their own refusals
