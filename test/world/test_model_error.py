"""Model error (geodyn_ros.sim.model_error, geodyn_ros.sim.world): the simulated robot differs from
the controller's model as drawn, and MuJoCo says so.

Independent references:
* the perturbed inertia against a cloud of point masses (its second moments scaled along the
  principal axes by moving the points, its masses scaled: the inertia then follows from its
  definition ``sum m (|r|^2 I - r r^T)``);
* MuJoCo's own compiled model (``body_mass``, ``body_ipos``, ``body_iquat`` + ``body_inertia``,
  actuator gears, tendon stiffness, motor bodies) against the requested values, computed here from
  the nominal URDF read with plain XML;
* each rotor's lag against the filter's closed form ``x_k = r + (x_0 - r) exp(-k dt / T_i)`` with
  its own drawn ``T_i``.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from geodyn_ros.control.rotors import load_actuation_config
from geodyn_ros.lie import quat_to_matrix, rpy_to_matrix
from geodyn_ros.loops.underactuated import hexarotor_source
from geodyn_ros.model.urdf import _read_source
from geodyn_ros.sim import ActuatedSim, MujocoSim
from geodyn_ros.sim.model_error import (BodyErrorSpec, BodyError, Distribution, ModelError, ModelErrorSpec,
                                        perturbed_inertia)
from geodyn_ros.sim.world import World, nominal_model
from geodyn_ros.sim.world_file import world_preset


@pytest.fixture(scope="module")
def cfg():
    return load_actuation_config("hexarotor")


@pytest.fixture(scope="module")
def nominal_text():
    return _read_source(hexarotor_source())[0]


def _nominal_inertials(text):
    """{link: (mass, xyz, R_origin, I_inertial)} read with plain XML."""
    out = {}
    for ln in ET.fromstring(text).iter("link"):
        i = ln.find("inertial")
        if i is None:
            continue
        o = i.find("origin")
        xyz = np.array([float(x) for x in o.get("xyz", "0 0 0").split()]) if o is not None else np.zeros(3)
        rpy = np.array([float(x) for x in o.get("rpy", "0 0 0").split()]) if o is not None else np.zeros(3)
        e = i.find("inertia")
        g = {k: float(e.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
        out[ln.get("name")] = (float(i.find("mass").get("value")), xyz, rpy_to_matrix(rpy), I)
    return out


def _mj_inertia(m, b):
    """The body's rotational inertia about its CoM in the body frame, from MuJoCo's principal form."""
    R = quat_to_matrix(m.body_iquat[b], order="wxyz")
    return R @ np.diag(m.body_inertia[b]) @ R.T


def test_perturbed_inertia_is_a_scaled_cloud_of_point_masses():
    rng = np.random.default_rng(0)
    r = rng.normal(size=(400, 3)) * [0.3, 0.1, 0.05] @ np.linalg.qr(rng.normal(size=(3, 3)))[0]
    mk = rng.uniform(0.1, 1.0, 400)
    r -= (mk[:, None] * r).sum(0) / mk.sum()              # about the CoM

    def inertia(r, mk):
        return sum(m * (r_ @ r_ * np.eye(3) - np.outer(r_, r_)) for r_, m in zip(r, mk))
    I = inertia(r, mk)
    e_m, e = 0.07, np.array([0.2, -0.3, 0.05])
    lam, V = np.linalg.eigh(I)                            # the principal axes of I are those of sum m r r^T
    r2 = (r @ V) * np.sqrt(1.0 + e) @ V.T                 # second moment k scaled by 1 + e_k
    expect = inertia(r2, mk * (1.0 + e_m))
    np.testing.assert_allclose(perturbed_inertia(I, e_m, e), expect, rtol=1e-12, atol=1e-14 * np.abs(I).max())
    # a rod (one moment ~ 0): every draw the validator allows stays physical (triangle inequality)
    rod = np.diag([1.0, 1.0, 1e-9])
    for ee in ([-0.5, 1.0, 1.0], [1.0, -0.5, -0.5], [1.0, 1.0, -0.5]):
        w = np.linalg.eigvalsh(perturbed_inertia(rod, -0.5, ee))
        assert w.min() >= 0 and w[0] + w[1] >= w[2] * (1 - 1e-12), (ee, w)


ROTATED = """<robot name="r">
  <link name="a"><inertial><origin xyz="0.01 -0.02 0.03" rpy="0.3 -0.2 0.5"/><mass value="1.5"/>
    <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0005" izz="0.04"/></inertial></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 -0.2"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <link name="b"><inertial><origin xyz="0 0 -0.1" rpy="0 0.4 0"/><mass value="0.4"/>
    <inertia ixx="0.003" iyy="0.003" izz="0.0004" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""


def test_mujoco_reports_the_drawn_mass_com_and_inertia():
    spec = ModelErrorSpec((BodyErrorSpec("all", Distribution.uniform(-0.3, 0.3), (Distribution.uniform(0.01),) * 3,
                                         Distribution.uniform(0.3)),))
    err = spec.draw(np.random.SeedSequence(3), ROTATED, "a", ("b",), 0, ())
    sim = MujocoSim(err.urdf(ROTATED))
    m = sim.mj_model
    for link, (mass, xyz, Ro, Ii) in _nominal_inertials(ROTATED).items():
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link)
        e = err.bodies[link]
        assert m.body_mass[b] == pytest.approx(mass * (1 + e.mass), rel=1e-12)
        np.testing.assert_allclose(m.body_ipos[b], xyz + e.com, atol=1e-12)
        # requested, in the inertial frame: the principal axes (the frame's own for a diagonal
        # <inertia>, else the eigenvectors, ascending), second moments S_k = tr(I)/2 - I_k scaled by
        # 1 + e_k, moments tr(S) - S_k, times 1 + e_m; then rotated into the link frame by the rpy
        if np.count_nonzero(Ii - np.diag(np.diag(Ii))) == 0:
            lam, V = np.diag(Ii), np.eye(3)
        else:
            lam, V = np.linalg.eigh(Ii)
        S2 = (0.5 * lam.sum() - lam) * (1 + e.inertia)
        expect = Ro @ ((1 + e.mass) * (V * (S2.sum() - S2)) @ V.T) @ Ro.T
        np.testing.assert_allclose(_mj_inertia(m, b), expect, rtol=1e-6, atol=1e-12)   # MuJoCo stores float64
    assert sim.model.total_mass == pytest.approx(float(m.body_mass[1:].sum()), rel=1e-14)


def test_the_world_pipeline_builds_the_drawn_plant(cfg, nominal_text):
    import warnings

    from geodyn_ros.model.inertia import InertiaCorrectionWarning
    pert = world_preset("cad").draw(5, hexarotor_source(), cfg)
    with warnings.catch_warnings():   # the rotors are flat discs (A + B = C): they stay exactly flat, uncorrected
        warnings.simplefilter("error", InertiaCorrectionWarning)
        sim = pert.build(timestep=1e-3)
    m = sim.mj_model
    nom = _nominal_inertials(nominal_text)
    total = 0.0
    for link, (mass, xyz, _, _) in nom.items():
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link)
        e = pert.model_error.bodies[link]
        assert m.body_mass[b] == pytest.approx(mass * (1 + e.mass), rel=1e-12), link
        np.testing.assert_allclose(m.body_ipos[b], xyz + e.com, atol=1e-12)
        total += mass * (1 + e.mass)
    assert sim.model.total_mass == pytest.approx(total, rel=1e-12)     # the plant model is the perturbed one
    assert pert.model.total_mass == pytest.approx(sum(v[0] for v in nom.values()), rel=1e-12)   # the controller's
    assert set(pert.model_error.bodies) == set(nom)                   # "all": every link with an inertial
    # the nominal model is what the exact simulator loads
    exact = ActuatedSim(hexarotor_source(), cfg).model
    for a in ("mass", "com", "inertia", "Y"):
        assert np.array_equal(getattr(pert.model, a), getattr(exact, a)), a
    assert nominal_model(hexarotor_source(), cfg)[0].joint_names == exact.joint_names


def test_rotor_constants_and_lags_reach_the_simulator(cfg):
    pert = world_preset("thrust_stand").draw(2, hexarotor_source(), cfg)
    e = pert.model_error.rotors
    sim = pert.build(timestep=1e-3)
    rp = cfg.rotors
    cf = rp.motor_constant * (1 + e["motor_constant"])
    cd = rp.moment_constant * (1 + e["moment_constant"]) * cf
    gear = sim.mj_model.actuator_gear[6:]
    np.testing.assert_allclose(gear[:, 2], cf, rtol=1e-14)
    np.testing.assert_allclose(gear[:, 5], rp.spin * cd, rtol=1e-14)
    T = rp.time_constant_up * (1 + e["time_constant"])
    assert np.ptp(T) > 0.1 * rp.time_constant_up                       # the draw differs per rotor
    # each rotor lags with its own time constant (up == down in the hexarotor file): closed form
    x0, r, k = np.full(6, 300.0), np.full(6, 700.0), 40
    sim.reset(np.eye(4), np.zeros(6), np.zeros(6), np.zeros(6), rotor_speed=x0)
    sim.set_rotor_command(r)
    sim.step(k)
    np.testing.assert_allclose(sim.rotor_speed(), r + (x0 - r) * np.exp(-k * 1e-3 / T), rtol=1e-12)
    # the controller's config is untouched
    assert pert.config is cfg and float(cfg.rotors.motor_constant) == 1.269e-05


def test_elastic_constants_reach_the_simulator(cfg):
    pert = world_preset("sea").draw(4, hexarotor_source(), cfg)
    e = pert.model_error.elastic
    sim = pert.build(timestep=1e-3)
    m = sim.mj_model
    for i, j in enumerate(cfg.elastic.joints):
        t = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_TENDON, "geodyn_sim_spring_" + j)
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "geodyn_sim_motor_" + j)
        assert m.tendon_stiffness[t] == pytest.approx(cfg.elastic.stiffness[i] * (1 + e["stiffness"][i]), rel=1e-14)
        B = cfg.elastic.motor_inertia[i] * (1 + e["motor_inertia"][i])
        np.testing.assert_allclose(m.body_inertia[b], [B, B, B], rtol=1e-14)
    q = np.linspace(-0.2, 0.2, 6)
    sim.reset(np.eye(4), np.zeros(6), q, np.zeros(6), motor_angle=q + 0.01, motor_velocity=np.zeros(6))
    np.testing.assert_allclose(sim.spring_torque(), cfg.elastic.stiffness * (1 + e["stiffness"]) * 0.01, rtol=1e-9)


def test_seeds_are_reproducible_and_the_streams_independent(cfg):
    w = world_preset("model_error")
    a, b, c = (w.draw(s, hexarotor_source(), cfg) for s in (7, 7, 8))
    assert a.as_dict() == b.as_dict() and a.lines() == b.lines()
    assert a.as_dict()["model_error"] != c.as_dict()["model_error"]
    # the rotors draw from their own stream: the same with or without body and joint errors
    alone = world_preset("thrust_stand").draw(7, hexarotor_source(), cfg)
    for k, v in alone.model_error.rotors.items():
        assert np.array_equal(v, a.model_error.rotors[k]), k
    # a fixed error draws nothing random: the same for every seed
    assert world_preset("thrust_minus5").draw(1, hexarotor_source(), cfg).lines()[1:] == \
        world_preset("thrust_minus5").draw(2, hexarotor_source(), cfg).lines()[1:]


def test_link_selectors_and_overrides(cfg, nominal_text):
    arm = ("link2", "link3", "link4", "link5", "link6", "link7")
    spec = ModelErrorSpec((BodyErrorSpec("all", Distribution.fixed(0.1), (Distribution.fixed(0.002),) * 3),
                           BodyErrorSpec(("link3",), Distribution.fixed(-0.2))))
    err = World("t", spec).draw(0, hexarotor_source(), cfg).model_error
    assert err.bodies["link3"].mass == -0.2 and np.all(err.bodies["link3"].com == 0.002)   # com kept from "all"
    assert err.bodies["link2"].mass == 0.1 and err.bodies["base_link"].mass == 0.1
    got = World("t", ModelErrorSpec((BodyErrorSpec("arm", Distribution.fixed(0.1)),))).draw(
        0, hexarotor_source(), cfg).model_error
    assert tuple(got.bodies) == arm
    got = World("t", ModelErrorSpec((BodyErrorSpec("base", None, (Distribution.fixed(0.005),) * 3),))).draw(
        0, hexarotor_source(), cfg).model_error
    assert tuple(got.bodies) == ("base_link",)
    with pytest.raises(ValueError, match=r"^world: worlds\.t\.model_error\.bodies\[0\]\.links: 'lnk3' is not a link "
                                         r"of the URDF; did you mean 'link3'\?$"):
        World("t", ModelErrorSpec((BodyErrorSpec(("lnk3",), Distribution.fixed(0.1)),))).draw(0, hexarotor_source(), cfg)
    with pytest.raises(ValueError, match=r"links: link 'rotor_1_arm' has no inertial"):
        World("t", ModelErrorSpec((BodyErrorSpec(("rotor_1_arm",), Distribution.fixed(0.1)),))).draw(
            0, hexarotor_source(), cfg)
    with pytest.raises(ValueError, match="seed"):
        World().draw(-1, hexarotor_source(), cfg)


def test_distributions():
    rng = np.random.default_rng(0)
    u = Distribution.uniform(-0.05, 0.15).sample(rng, 20000)
    assert u.min() >= -0.05 and u.max() <= 0.15 and u.mean() == pytest.approx(0.05, abs=5 * 0.2 / math.sqrt(12 * 2e4))
    n = Distribution.normal(0.1).sample(rng, 40000)
    assert np.abs(n).max() <= 0.3
    # a normal truncated at 3 sigma has the standard deviation 0.98658 sigma; its estimate's error ~ sigma/sqrt(2N)
    assert n.std() == pytest.approx(0.098658, abs=5 * 0.1 / math.sqrt(2 * 40000))
    state = rng.bit_generator.state
    assert Distribution.fixed(0.2).sample(rng) == 0.2 and rng.bit_generator.state == state   # no draw
    for bad in (("kind", lambda: Distribution("gauss", 0.1)), ("b", lambda: Distribution("uniform", 0.2, 0.1)),
                ("a", lambda: Distribution("normal", -0.1)), ("a", lambda: Distribution("fixed", math.nan))):
        with pytest.raises(ValueError, match=f"^{bad[0]}: "):
            bad[1]()


def test_an_empty_error_leaves_the_urdf_and_config_alone(cfg, nominal_text):
    e = ModelError({}, {}, {})
    assert e.empty and e.urdf(nominal_text) is nominal_text and e.config(cfg) is cfg
    assert World().exact and not world_preset("cad").exact
    assert BodyError().mass == 0.0
