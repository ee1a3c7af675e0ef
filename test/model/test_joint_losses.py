"""geodyn_ros.model.joint_losses: the URDF's joint damping and dry friction as a torque jet.

Independent references: CasADi's automatic differentiation of the loss along a joint trajectory
(the jet's rows 1..3), the closed form ``d q' + f tanh(q'/v_f)`` (row 0), the URDF's own attribute
values (the parser), and the controllers' lossless law (the jet's addition, bit for bit off).
The closed loop against MuJoCo's own joint damping and friction is in test/loops/test_joint_losses_flight.py.

The controllers' ``joint_losses`` (ActuatedController, FlatnessController). On the reference (zero tracking error, so zero feedback), with losses ``L(t) = d q_d' + f tanh(q_d'/v_f)``:

* rigid joints: ``joint_torque`` = lossless + ``L`` (closed form, to 1e-12 N m);
* elastic joints at ff2: the motor reference ``theta_d = q_d + K^-1 (tau_d + L)`` and
  ``u - (tau_d + L) = B theta_d''``, with ``theta_d''`` taken here by central differences in time of
  order-0 values only (as test_actuated_control.py does for the lossless law). Losses of 0.5-2
  N m s/rad and 0.2-1 N m with a 0.01 rad/s layer: Table 3's joint rates (0.005-0.05 rad/s) cross
  it, so the loss's own ``K^-1 L''`` term is 1.6e-5 to 5e-3 rad/s^2 at the times tested, while the
  differences' error (step 1e-3 s) was measured below 1e-9 rad/s^2: the 1e-6 rad/s^2 bound fails
  for a wrong or missing loss row (16x below its smallest value) and passes with 1000x room;
* no losses, or all zero: the command is bit for bit the lossless one.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.control.actuated import ActuatedController
from geodyn_ros.control.rotors import Allocation, load_actuation_config
from geodyn_ros.lie import Ad_inv
from geodyn_ros.model.joint_losses import (DEFAULT_FRICTION_VELOCITY, JOINT_LOSS_MODES, JointLosses, add_loss_jet,
                                           check_joint_losses, joint_losses_from_urdf, loss_torque_jet,
                                           loss_jet_order, check_loss_mode, losses_for_mode)
from geodyn_ros.trajectories import table3_reference
from geodyn_ros.vehicle.shipped import shipped_vehicle_files
from tilthex_rig import tilthex_setup

NAMES = ("a", "b", "c")


def _urdf(dyn_a='damping="0.1" friction="0.2"', dyn_b="", extra=""):
    dyn = (lambda s: f"<dynamics {s}/>" if s else "")
    return f"""<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>{dyn(dyn_a)}</joint>
  <joint name="b" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>{dyn(dyn_b)}</joint>{extra}
</robot>"""


# ---------------------------------------------------------------------------------------------- the jet
def _trajectory():
    """Joint rates through reversals: q'(t) = A sin(w t + p) + B cos(w2 t), and its derivatives (closed form)."""
    A, w, p = np.array([0.8, 0.03, 2.0]), np.array([1.3, 2.1, 0.7]), np.array([0.2, 1.0, -0.4])
    B, w2 = np.array([0.1, 0.02, 0.5]), np.array([3.0, 0.5, 1.9])

    def rates(t):   # rows q', q'', q''', q''''
        out = np.empty((4, 3))
        for k in range(4):
            out[k] = A * w ** k * np.sin(w * t + p + k * np.pi / 2) + B * w2 ** k * np.cos(w2 * t + k * np.pi / 2)
        return out
    return A, w, p, B, w2, rates


def test_jet_row0_is_the_closed_form():
    losses = JointLosses(NAMES, [0.1, 0.0, 0.3], [0.2, 0.05, 0.0], 0.05)
    qd = np.array([0.3, -0.01, 2.0])
    q = np.vstack([np.zeros(3), qd])
    want = losses.damping * qd + losses.friction * np.tanh(qd / 0.05)
    np.testing.assert_allclose(loss_torque_jet(losses, q, 0)[0], want, rtol=0, atol=1e-15)


def test_jet_against_casadi_automatic_differentiation():
    """Rows 1..3 against CasADi's derivatives of the same loss along the same trajectory (symbolic,
    exact to rounding): to 1e-9 relative to each row's scale, at 400 times through the reversals
    (the boundary layer's curvature, up to 1/v_f^3 = 8000 s^3/rad^3, is where a wrong term shows)."""
    ca = pytest.importorskip("casadi")
    A, w, p, B, w2, rates = _trajectory()
    losses = JointLosses(NAMES, [0.1, 0.2, 0.0], [0.1, 0.3, 0.4], 0.05)
    t = ca.SX.sym("t")
    jets = []
    for j in range(3):
        qd = A[j] * ca.sin(w[j] * t + p[j]) + B[j] * ca.cos(w2[j] * t)
        e = losses.damping[j] * qd + losses.friction[j] * ca.tanh(qd / losses.friction_velocity)
        rows = [e]
        for _ in range(3):
            rows.append(ca.jacobian(rows[-1], t))
        jets.append(ca.Function(f"j{j}", [t], rows))
    worst = 0.0
    for tk in np.linspace(0.0, 10.0, 400):
        q = np.vstack([np.zeros(3), rates(tk)])
        got = loss_torque_jet(losses, q, 3)
        want = np.array([[float(jets[j](tk)[k]) for j in range(3)] for k in range(4)])
        scale = np.maximum(np.abs(want), 1.0)
        worst = max(worst, float(np.max(np.abs(got - want) / scale)))
    assert worst < 1e-9, worst


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_jet_bounds_of_the_smoothed_sign(order):
    """The friction rows stay bounded through a reversal (module docstring): |row 1| <= d|q''| + f|q''|/v_f."""
    losses = JointLosses(("a",), [0.1], [0.1], 0.05)
    qdd = 2.0
    for v in np.linspace(-0.2, 0.2, 81):
        q = np.array([[0.0], [v], [qdd], [0.0], [0.0]])
        jet = loss_torque_jet(losses, q, order)
        assert jet.shape == (order + 1, 1) and np.all(np.isfinite(jet))
        if order >= 1:
            assert abs(jet[1, 0]) <= 0.1 * qdd + 0.1 * qdd / 0.05 + 1e-12


def test_jet_refusals():
    losses = JointLosses(NAMES, [0.1, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="^order: expected an integer 0..3"):
        loss_torque_jet(losses, np.zeros((6, 3)), 4)
    with pytest.raises(ValueError, match="^order"):
        loss_torque_jet(losses, np.zeros((6, 3)), True)
    with pytest.raises(ValueError, match=r"^q_jet: expected \(>= 4, 3\)"):
        loss_torque_jet(losses, np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="^q_jet: expected"):
        loss_torque_jet(losses, np.zeros((3, 2)), 0)
    bad = np.zeros((3, 3))
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="^q_jet: contains NaN"):
        loss_torque_jet(losses, bad, 0)


def test_joint_losses_refusals():
    with pytest.raises(ValueError, match="^damping: expected 3 values"):
        JointLosses(NAMES, [0.1, 0.2], [0, 0, 0])
    with pytest.raises(ValueError, match="^friction: joint 'b': -0.1 is not a finite value >= 0"):
        JointLosses(NAMES, [0, 0, 0], [0, -0.1, 0])
    with pytest.raises(ValueError, match="^damping: joint 'c': nan"):
        JointLosses(NAMES, [0, 0, np.nan], [0, 0, 0])
    for bad in (0.0, -1.0, float("inf"), True, "0.05"):
        with pytest.raises(ValueError, match="^friction_velocity: expected a finite rate > 0"):
            JointLosses(NAMES, [0, 0, 0], [0, 0, 0], bad)
    assert not JointLosses(NAMES, [0, 0, 0], [0, 0, 0]).active
    assert JointLosses(NAMES, [0, 0, 0], [0, 0, 0]).describe() == "none"
    assert JointLosses(NAMES, [0, 0, 0], [0, 0.2, 0]).describe() == "b (damping 0, friction 0.2)"


# ---------------------------------------------------------------------------------------------- the URDF
def test_from_urdf_reads_dynamics(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text(_urdf())
    got = joint_losses_from_urdf(path, ("b", "a"))
    np.testing.assert_array_equal(got.damping, [0.0, 0.1])
    np.testing.assert_array_equal(got.friction, [0.0, 0.2])
    assert got.friction_velocity == DEFAULT_FRICTION_VELOCITY
    assert joint_losses_from_urdf(_urdf(), ("a",), friction_velocity=0.2).friction_velocity == 0.2


def test_from_urdf_hextilt_has_its_losses():
    """example-robot-data's hextilt_flying_arm_5: 0.1 N m s/rad and 0.1 N m on each of its 5 arm joints
    (its URDF's <dynamics damping="0.1" friction="0.1"/>)."""
    urdf, _ = shipped_vehicle_files("hextilt_flying_arm_5")
    model = gd.load_urdf(urdf)
    got = joint_losses_from_urdf(urdf, model.joint_names)
    assert len(model.joint_names) == 5 and got.active
    np.testing.assert_array_equal(got.damping, np.full(5, 0.1))
    np.testing.assert_array_equal(got.friction, np.full(5, 0.1))


@pytest.mark.parametrize("dyn,problem", [('damping="-0.1"', "dynamics damping: '-0.1' is not a finite number >= 0"),
                                         ('friction="abc"', "dynamics friction: 'abc' is not a finite number >= 0"),
                                         ('friction="inf"', "dynamics friction: 'inf' is not a finite number")])
def test_from_urdf_refuses_bad_values(tmp_path, dyn, problem):
    path = tmp_path / "bad.urdf"
    path.write_text(_urdf(dyn_a=dyn))
    with pytest.raises(ValueError) as exc:
        joint_losses_from_urdf(path, ("a", "b"))
    msg = str(exc.value)
    assert msg.startswith(f"{path}: joint a: {problem}") and "; give" in msg and "\n" not in msg


def test_from_urdf_refuses_unknown_joint_and_bad_xml(tmp_path):
    with pytest.raises(ValueError, match="joint zz: not a joint of this URDF; load the model from the same file"):
        joint_losses_from_urdf(_urdf(), ("a", "zz"))
    with pytest.raises(ValueError, match="^source: .* is not valid XML"):
        joint_losses_from_urdf("<robot", ("a",))


def test_modes():
    assert JOINT_LOSS_MODES == ("off", "plant", "compensated")
    assert losses_for_mode("off", "unused", ()) == (False, None)
    assert losses_for_mode("plant", "unused", ()) == (True, None)
    plant, ctl = losses_for_mode("compensated", _urdf(), ("a", "b"))
    assert plant and ctl.friction[0] == 0.2
    with pytest.raises(ValueError, match=r"^joint_losses: expected one of \('off', 'plant', 'compensated'\), got 'on'"):
        losses_for_mode("on", _urdf(), ("a",))


def test_check_and_add():
    on = JointLosses(NAMES, [0.1, 0, 0], [0, 0, 0.2])
    assert check_joint_losses(None, NAMES) is None
    assert check_joint_losses(JointLosses(NAMES, [0, 0, 0], [0, 0, 0]), NAMES) is None    # all zero: the lossless law
    assert check_joint_losses(on, NAMES) is on
    with pytest.raises(ValueError, match="^joint_losses: expected JointLosses or None, got dict"):
        check_joint_losses({}, NAMES)
    with pytest.raises(ValueError, match="^joint_losses: its joints"):
        check_joint_losses(on, ("a", "b", "x"))
    q = np.array([[0, 0, 0], [0.5, 0, -1.0], [1.0, 2.0, 3.0]], float)
    tau = np.ones((3, 3))
    out = add_loss_jet(on, q, tau, 0)
    np.testing.assert_allclose(out[0], 1 + loss_torque_jet(on, q, 0)[0], atol=1e-15)
    np.testing.assert_array_equal(out[1:], tau[1:])
    np.testing.assert_array_equal(tau, np.ones((3, 3)))          # not modified in place
    with pytest.raises(ValueError, match=r"^q_d: the joint losses at this level need the reference rows q_d\^\(0..3\)"):
        add_loss_jet(on, q, tau, 2)
    q4 = np.vstack([q, [np.nan, 0, 0]])
    with pytest.raises(ValueError, match="^q_d: contains NaN"):
        add_loss_jet(on, q4, tau, 2)


def test_loss_mode_check_and_jet_order():
    """check_loss_mode passes the three modes through and refuses anything else naming joint_losses;
    loss_jet_order is 2 only where an elastic joint (the indices given) has damping or friction."""
    for m in JOINT_LOSS_MODES:
        assert check_loss_mode(m) == m
    for bad in ("On", "", None, 1, ["off"]):
        with pytest.raises(ValueError, match="^joint_losses: expected one of"):
            check_loss_mode(bad)
    lossy = JointLosses(NAMES, np.array([0.0, 0.1, 0.0]), np.array([0.0, 0.0, 0.2]), 0.05)
    assert loss_jet_order(None, [0, 1]) == 0
    assert loss_jet_order(lossy, []) == 0            # no elastic joint: tau alone
    assert loss_jet_order(lossy, [0]) == 0           # the elastic joint is lossless
    assert loss_jet_order(lossy, [1]) == 2           # damping
    assert loss_jet_order(lossy, np.array([0, 2])) == 2   # friction


# ---------------------------------------------------------------------------------------------- the controllers
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup():
    cfg, model, al = tilthex_setup()
    n = model.n_joints
    losses = JointLosses(model.joint_names, np.linspace(0.05, 0.2, n), np.linspace(0.1, 0.02, n), 0.05)
    return cfg, model, al, losses


def _closed_form(losses, qd):
    return losses.damping * qd + losses.friction * np.tanh(qd / losses.friction_velocity)


def _jets(model, t):
    ref = table3_reference(t, 2)
    res = gd.inverse_dynamics(model, ref.base_pose, ref.base_twist, ref.q, 2)
    Wb = gd.convert_wrench(ref.base_pose, res.base_wrench, ref.base_twist, "spatial", "body")
    return ref, Wb, res.tau


def _command(ctrl, ref, Wb, tau, q_d=None, state_of=None):
    """The command on the reference; ``state_of``: the controller whose motor reference is the state."""
    C, Vb = ref.base_pose, Ad_inv(ref.base_pose) @ ref.base_twist[0]
    if ctrl.elastic is not None:
        th, thd = (state_of or ctrl).motor_reference(ref.q, tau)
    else:
        th, thd = ref.q[0], ref.q[1]
    return ctrl.command(C, Vb, ref.q[0], ref.q[1], th, thd, C, Vb, ref.q if q_d is None else q_d, Wb, tau)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_rigid_joints_get_the_loss(setup, level):
    cfg, model, al, losses = setup
    base = ActuatedController(al, cfg.rotors, None, model.joint_names, feedforward_order=level, model=model)
    lossy = ActuatedController(al, cfg.rotors, None, model.joint_names, feedforward_order=level, model=model,
                               joint_losses=losses)
    for t in (0.3, 4.1, 11.7):
        ref, Wb, tau = _jets(model, t)
        a, b = _command(base, ref, Wb, tau), _command(lossy, ref, Wb, tau)
        np.testing.assert_allclose(b.joint_torque_raw - a.joint_torque_raw, _closed_form(losses, ref.q[1]),
                                   rtol=0, atol=1e-12)
        np.testing.assert_array_equal(a.omega_raw, b.omega_raw)       # the base is not touched


def test_pd_level_feeds_no_loss_and_zero_losses_are_bit_for_bit(setup):
    cfg, model, al, losses = setup
    zero = JointLosses(model.joint_names, np.zeros(model.n_joints), np.zeros(model.n_joints))
    for level in (None, 0, 2):
        ref, Wb, tau = _jets(model, 2.5)
        base = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=level)
        same = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=level,
                                  joint_losses=zero)
        a, b = _command(base, ref, Wb, tau), _command(same, ref, Wb, tau)
        np.testing.assert_array_equal(a.u_raw, b.u_raw)
        np.testing.assert_array_equal(a.omega_raw, b.omega_raw)
        if level is None:
            lossy = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=None,
                                       joint_losses=losses)
            np.testing.assert_array_equal(_command(lossy, ref, Wb, tau, state_of=base).u_raw, a.u_raw)


def test_elastic_ff2_motor_carries_the_loss(setup):
    cfg, model, al, _ = setup
    n = model.n_joints
    losses = JointLosses(model.joint_names, np.linspace(0.5, 2.0, n), np.linspace(1.0, 0.2, n), 0.01)
    ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=2,
                              joint_losses=losses)
    i = ctrl.idx
    K, B = cfg.elastic.stiffness, cfg.elastic.motor_inertia

    def theta_d(t):     # order-0 values only
        ref, _, tau = _jets(model, t)
        return ref.q[0, i] + (tau[0, i] + _closed_form(losses, ref.q[1])[i]) / K

    h = 1e-3
    for t in (1.0, 6.3, 13.9):
        ref, Wb, tau = _jets(model, t)
        th, thd = ctrl.motor_reference(ref.q, tau)
        np.testing.assert_allclose(th, theta_d(t), rtol=0, atol=1e-12)
        np.testing.assert_allclose(thd, (theta_d(t + h) - theta_d(t - h)) / (2 * h), rtol=0, atol=1e-6)
        cmd = _command(ctrl, ref, Wb, tau)
        thdd = (theta_d(t + h) - 2 * theta_d(t) + theta_d(t - h)) / h ** 2
        total = tau[0, i] + _closed_form(losses, ref.q[1])[i]
        np.testing.assert_allclose((cmd.u_raw - total) / B, thdd, rtol=0, atol=1e-6)


def test_elastic_ff2_needs_the_third_rate(setup):
    cfg, model, al, losses = setup
    ctrl = ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, feedforward_order=2,
                              joint_losses=losses)
    ref, Wb, tau = _jets(model, 1.0)
    with pytest.raises(ValueError, match=r"^q_d: the joint losses at this level need the reference rows q_d\^\(0..3\)"):
        _command(ctrl, ref, Wb, tau, q_d=ref.q[:3])
    ctrl.set_level(1)          # ff1 reads tau_d alone: three rows are enough
    _command(ctrl, ref, Wb, tau, q_d=ref.q[:3])


def test_refusals(setup):
    cfg, model, al, losses = setup
    with pytest.raises(ValueError, match="^joint_losses: expected JointLosses or None, got float"):
        ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, joint_losses=0.1)
    other = JointLosses(tuple(reversed(model.joint_names)), losses.damping, losses.friction)
    with pytest.raises(ValueError, match="^joint_losses: its joints"):
        ActuatedController(al, cfg.rotors, cfg.elastic, model.joint_names, joint_losses=other)


def test_flatness_controller_rigid_joints_get_the_loss():
    """The collinear hexarotor's flatness law: the rigid joints' torques move by the closed-form loss,
    the rotors not at all (the loss is internal)."""
    from geodyn_ros.control.flatness import FlatnessController
    from geodyn_ros.trajectories import figure_eight_reference
    cfg = load_actuation_config("hexarotor")
    src = REPO / "urdf" / "hexarotor_manipulator.urdf.xacro"
    model = cfg.load_model(src)
    _, F = cfg.rotor_frames(model)
    al = Allocation.from_frames(F, cfg.rotors)
    n = model.n_joints
    losses = JointLosses(model.joint_names, np.full(n, 0.1), np.full(n, 0.05), 0.05)
    ref = figure_eight_reference(2.0, 2)
    flat = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
    C = flat.base_pose
    Vb = Ad_inv(C) @ flat.base_twist[0]
    for lvl in ("ff0", "ff1"):
        a = FlatnessController(model, al, cfg.rotors, None, level=lvl)
        b = FlatnessController(model, al, cfg.rotors, None, level=lvl, joint_losses=losses)
        ca = a.command(C, Vb, ref.q[0], ref.q[1], None, None, ref.com, ref.yaw, ref.q, flat)
        cb = b.command(C, Vb, ref.q[0], ref.q[1], None, None, ref.com, ref.yaw, ref.q, flat)
        np.testing.assert_allclose(cb.joint_torque_raw - ca.joint_torque_raw, _closed_form(losses, ref.q[1]),
                                   rtol=0, atol=1e-12)
        np.testing.assert_array_equal(ca.omega_raw, cb.omega_raw)