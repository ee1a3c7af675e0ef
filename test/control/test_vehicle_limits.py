"""Every limit of a vehicle file is checked by the planner (issue 40): ``Vehicle.from_files``.

* **Each limit, one at a time.** The limits are enumerated from the vehicle schema itself
  (:data:`geodyn_ros.vehicle.LIMIT_KEYS`). A copy of the shipped Borinot file (with its elbow made
  series-elastic, so that one file has every kind of limit) gets one limit tightened below what a
  fixed mission needs: the whole-body check on ``Vehicle.from_files`` must then report a negative
  margin, and every negative margin must name that limit. The same limit loosened above what the
  mission needs: the mission passes. What the mission needs is computed here independently: the
  public flat map (``gd.flat_inverse_dynamics``) at dense samples, with an allocation built here
  from the file's rotor positions and constants read with PyYAML.
* **The enumeration is complete.** Every ``max_*``, ``min_*`` or ``time_constant_*`` key of the
  schema is in ``LIMIT_KEYS``, and every entry of ``LIMIT_KEYS`` has a case here: a limit added to
  the schema without a check (or without a case) fails.
* **The third-party finding.** Borinot swinging both joints 1.5 rad in 0.2 s
  (``test/data/borinot_swing.yaml``) is beyond its shoulder servo's 0.9 N m: refused by the check
  on ``Vehicle.from_files``; the vehicle without the file's joint limits (what
  ``geodyn_reference`` checked before) rates it feasible.
"""
from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import yaml

import geodyn_ros as gd
from geodyn_ros.planning import Vehicle, check_feasibility, plan_mission
from geodyn_ros.planning.mission import load_mission

REPO = Path(__file__).resolve().parents[2]
BORINOT = REPO / "config" / "vehicles" / "borinot_flying_arm_2.yaml"
URDF = (Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        / "borinot_description" / "urdf" / "borinot_flying_arm_2.urdf")
SHOULDER, ELBOW = "flying_arm_2__j_bl_link1", "flying_arm_2__j_link1_link2"
#: the elbow made series-elastic (our values: a servo's gear reflects ~1e-4 kg m^2; K/B gives a
#: motor frequency of 316 rad/s, far above the mission's)
ELASTIC = {"type": "elastic", "stiffness": 10.0, "motor_inertia": 1e-4, "max_torque": 0.9}
#: the fixed mission: a 0.5 m climb and back in 1.6 s while the arm swings out and back
MISSION = {"com": [[0.0, 0.0, 1.0], [0.0, 0.0, 1.5], [0.0, 0.0, 1.0]], "yaw": [0.0, 0.0, 0.0],
           "q": [[0.0, 0.0], [0.6, -0.6], [0.0, 0.0]], "times": [0.0, 0.8, 1.6]}
#: samples for the independent peaks: 1601 over 1.6 s (dt = 1 ms). A peak between samples exceeds
#: the sampled one by at most dt^2/8 |x''|, below 1e-3 of the peak here (asserted in ``needs``): the
#: 5 % brackets below (20 % for the time constants, a ratio of two sampled values) are far wider
DENSE = 1601


def _base_doc():
    doc = yaml.safe_load(BORINOT.read_text())
    doc["joints"][ELBOW] = dict(ELASTIC)
    return doc


def _write(tmp_path, doc, name):
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


@pytest.fixture(scope="module")
def plan():
    return plan_mission(MISSION["com"], MISSION["yaw"], MISSION["q"], MISSION["times"], order=2)


@pytest.fixture(scope="module")
def needs(plan):
    """What the mission needs, computed here (not by the check): rotor speeds ``w`` (T, 6) [rad/s]
    and their rates ``wd`` [rad/s^2], the shoulder's torque (T,) and the elbow's motor torque
    ``u_m = B (q'' + tau''/K) + tau`` (T,) [N m], with the file's values at its base."""
    doc = _base_doc()
    c = doc["constants"]
    model = gd.load_urdf(URDF, base_link=doc["base_link"])
    assert model.joint_names == (SHOULDER, ELBOW)
    # A4 = (thrust; moments about the base origin) per unit omega^2: rotor at p thrusting c_f along +z
    # gives the moment p x (0, 0, c_f) plus its drag s c_d e_z (s = -1 ccw, +1 cw; c_d = k_m c_f)
    cf, km = c["motor_constant"], c["moment_constant"]
    A4 = np.array([[cf, r["position"][1] * cf, -r["position"][0] * cf,
                    (-1.0 if r["turning_direction"] == "ccw" else 1.0) * km * cf] for r in doc["rotors"]]).T
    P = np.linalg.pinv(A4)
    w, wd, tau_s, um = [], [], [], []
    for t in np.linspace(plan.times[0], plan.times[-1], DENSE):
        ref = plan(t, 2)
        f = gd.flat_inverse_dynamics(model, ref.com, ref.yaw, ref.q, 2)
        u = P @ np.r_[f.thrust[0], f.body_torque[0]]
        ud = P @ np.r_[f.thrust[1], f.body_torque[1]]
        assert np.all(u > 0)
        w.append(np.sqrt(u))
        wd.append(ud / (2.0 * np.sqrt(u)))
        tau_s.append(f.tau[0, 0])
        um.append(ELASTIC["motor_inertia"] * (ref.q[2, 1] + f.tau[2, 1] / ELASTIC["stiffness"]) + f.tau[0, 1])
    out = {"w": np.array(w), "wd": np.array(wd), "tau": np.abs(tau_s), "um": np.abs(um)}
    for x in (out["w"], -out["w"], out["tau"], out["um"]):
        # the true peak exceeds the sampled one by at most dt^2/8 |x''| ~ |second difference|/8 there
        i, j = np.unravel_index(np.argmax(x), x.shape) if x.ndim == 2 else (int(np.argmax(x)), None)
        col = x[:, j] if j is not None else x
        assert 0 < i < len(col) - 1 and abs(col[i + 1] - 2 * col[i] + col[i - 1]) / 8 < 1e-3 * abs(col[i])
    return out | {"wmax": c["max_rot_velocity"], "T": c["time_constant_up"]}


def _cases(n):
    """``{limit key: (change(doc, value), tight value, loose value)}`` from what the mission needs."""
    w, wd, T, wmax = n["w"], n["wd"], n["T"], n["wmax"]
    cmd = w + T * wd                                   # the speed the lagging rotor must be commanded
    up, down = wd > 0, wd < 0
    # the time constant at which the first command reaches the speed limit (max / min = 0)
    t_up, t_down = np.min((wmax - w[up]) / wd[up]), np.min(w[down] / -wd[down])

    def const(key):
        def change(doc, v):
            doc["constants"][key] = float(v)
        return change

    def joint(name):
        def change(doc, v):
            doc["joints"][name]["max_torque"] = float(v)
        return change
    return {"constants.max_rot_velocity": (const("max_rot_velocity"), 0.95 * w.max(), 1.05 * max(w.max(), cmd.max())),
            "constants.min_rot_velocity": (const("min_rot_velocity"), 1.05 * w.min(), 0.95 * min(w.min(), cmd.min())),
            "constants.time_constant_up": (const("time_constant_up"), 1.2 * t_up, 0.8 * t_up),
            "constants.time_constant_down": (const("time_constant_down"), 1.2 * t_down, 0.8 * t_down),
            "joints.<rigid>.max_torque": (joint(SHOULDER), 0.95 * n["tau"].max(), 1.05 * n["tau"].max()),
            "joints.<elastic>.max_torque": (joint(ELBOW), 0.95 * n["um"].max(), 1.05 * n["um"].max())}


def test_the_enumeration_of_limits_is_complete(needs):
    """Every limit-like key of the schema is a declared limit, and every declared limit is tried."""
    from geodyn_ros.vehicle import LIMIT_KEYS
    from geodyn_ros.vehicle.schema import _JOINT_KEYS, CONSTANT_KEYS
    like = re.compile(r"^(max|min)_|^time_constant_")
    in_schema = ({f"constants.{k}" for k in CONSTANT_KEYS if like.match(k)}
                 | {f"joints.<{kind}>.{k}" for kind, keys in _JOINT_KEYS.items() for k in keys if like.match(k)})
    assert in_schema == set(LIMIT_KEYS), "a limit of the vehicle schema is not declared in LIMIT_KEYS (or vice versa)"
    assert set(_cases(needs)) == set(LIMIT_KEYS), "a declared limit has no case in this test"


@pytest.mark.parametrize("key", ["constants.max_rot_velocity", "constants.min_rot_velocity",
                                 "constants.time_constant_up", "constants.time_constant_down",
                                 "joints.<rigid>.max_torque", "joints.<elastic>.max_torque"])
def test_each_limit_of_the_file_is_checked(key, needs, plan, tmp_path):
    change, tight, loose = _cases(needs)[key]
    base = check_feasibility(Vehicle.from_files(URDF, _write(tmp_path, _base_doc(), "base")), plan)
    assert base.worst >= 0, base.summary()             # the mission is within every limit of the file
    for what, value in (("tight", tight), ("loose", loose)):
        doc = _base_doc()
        change(doc, value)
        rep = check_feasibility(Vehicle.from_files(URDF, _write(tmp_path, doc, what)), plan)
        if what == "tight":
            assert rep.worst < 0 and key in rep.worst_keys(), (key, value, rep.summary())
            negative = [c for c in range(len(rep.names)) if rep.margins[:, c].min() < 0]
            assert negative and all(key in rep.keys[c] for c in negative), [rep.names[c] for c in negative]
            if key.startswith("joints."):
                joint = SHOULDER if "rigid" in key else ELBOW
                assert rep.limit == f"{'joint' if 'rigid' in key else 'motor'} {joint} torque"
                assert rep.worst_bound() == f"{value:.4g} N m"
        else:
            assert rep.worst >= 0, (key, value, rep.summary())


def test_a_rotor_speed_limit_given_per_rotor_is_that_rotors(needs, plan, tmp_path):
    """``rotors[i].max_rot_velocity`` (an (n,) array in RotorParams): the rotor that needs the most
    speed, tightened alone, is the one named; the others keep the file's limit."""
    i = int(np.argmax(needs["w"].max(axis=0)))
    doc = _base_doc()
    doc["rotors"][i]["max_rot_velocity"] = float(0.95 * needs["w"][:, i].max())
    rep = check_feasibility(Vehicle.from_files(URDF, _write(tmp_path, doc, "one")), plan)
    negative = {rep.names[c] for c in range(len(rep.names)) if rep.margins[:, c].min() < 0}
    assert rep.worst < 0 and negative <= {f"rotor {i + 1} speed max", f"rotor {i + 1} lag max"}, negative


def test_omega_min_keeps_its_scalar_form_and_takes_one_per_rotor():
    v = Vehicle.hexarotor()
    assert v.omega_min is None and np.all(v._wmin == 0.0)       # the file's min_rot_velocity: 0
    w = Vehicle(v.model, v.allocation, v.rotors, v.elastic, omega_min=100.0)
    assert w.omega_min == 100.0
    per = Vehicle(v.model, v.allocation, v.rotors, v.elastic, omega_min=np.arange(6) * 10.0)
    assert np.array_equal(per.omega_min, np.arange(6) * 10.0)
    for bad in ([1.0, 2.0], -1.0, 1000.0, "x"):
        with pytest.raises(ValueError, match="^omega_min: "):
            Vehicle(v.model, v.allocation, v.rotors, v.elastic, omega_min=bad)


def test_from_files_refuses_a_joint_the_urdf_does_not_have(tmp_path):
    """A limit on a misspelled joint would go unchecked: refused, naming the file and the key."""
    doc = yaml.safe_load(BORINOT.read_text())
    doc["joints"]["flying_arm_2__j_bl_link"] = doc["joints"].pop(SHOULDER)
    p = _write(tmp_path, doc, "typo")
    with pytest.raises(ValueError, match=re.escape(f"{p}: joints.flying_arm_2__j_bl_link: ")):
        Vehicle.from_files(URDF, p)


# ---------------------------------------------------------------------- the third-party finding
def test_borinot_swing_is_refused_for_the_shoulder_torque():
    """The shipped Borinot, its URDF, 1.5 rad in 0.2 s on both joints: negative at the shoulder's
    0.9 N m (the file's ``max_torque``, not the URDF's 2.5 N m effort). Without the joint limits
    (the vehicle ``geodyn_reference`` built before issue 40) the same plan passed: the rotors alone
    can fly it, so only the file's joint limit refuses it."""
    plan = load_mission(REPO / "test" / "data" / "borinot_swing.yaml").plan(0.0, 2)
    v = Vehicle.from_files(URDF, "borinot_flying_arm_2")            # a shipped name, as geodyn_fly takes
    rep = check_feasibility(v, plan)
    assert rep.worst < 0 and rep.limit == f"joint {SHOULDER} torque" and rep.worst_bound() == "0.9 N m", rep.summary()
    assert rep.worst_keys() == ("joints.<rigid>.max_torque",)
    # the shoulder's torque, recomputed by the public flat map at the worst time, against 0.9 N m
    ref = plan(rep.t_worst, 1)
    tau = gd.flat_inverse_dynamics(v.model, ref.com, ref.yaw, ref.q, 1).tau[0, 0]
    assert rep.worst == pytest.approx((0.9 - abs(tau)) / 0.9, rel=1e-9)
    rotors_only = Vehicle(v.model, v.allocation, v.rotors, v.elastic)
    assert check_feasibility(rotors_only, plan).worst > 0
