"""URDF loading: sources, base selection, fixed-joint merging, general frames, and errors.

The general-frame test builds random trees (rotated joint origins, unnormalised axes in
any direction, prismatic/continuous/fixed joints, rotated and offset inertial frames) and
compares order-0 inverse dynamics against Pinocchio (``pin.rnea`` with a free-flyer root),
relative error <= 1e-10 of the reference norm. Conversion: Pinocchio's free-flyer velocity
is the base body twist linear-first, so ``(w_b, v_b) = Ad(C)^-1 V`` and the same map for
the acceleration (first derivative); its base wrench is the body wrench ``(f, n)``, ours
is spatial: ``W = Ad(C)^-T (n, f)``.
"""
import numpy as np
import pytest

import geodyn_ros as gd
from geodyn_ros.lie import Ad_inv, exp_se3, matrix_to_quat

pin = pytest.importorskip("pinocchio")


def _inertial(rng, with_rpy=True):
    m = rng.uniform(0.2, 2.0)
    # a physical inertia: principal moments obeying the triangle inequality, randomly rotated
    a, b = rng.uniform(0.005, 0.03, size=2)
    c = rng.uniform(abs(a - b), a + b)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    I = Q @ np.diag([a, b, c]) @ Q.T
    xyz = rng.normal(scale=0.1, size=3)
    rpy = rng.uniform(-np.pi, np.pi, size=3) if with_rpy else np.zeros(3)
    return (f'<inertial><origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
            f'<mass value="{m}"/><inertia ixx="{I[0,0]}" ixy="{I[0,1]}" ixz="{I[0,2]}" iyy="{I[1,1]}" '
            f'iyz="{I[1,2]}" izz="{I[2,2]}"/></inertial>')


def random_tree_urdf(seed, n_links=9):
    rng = np.random.default_rng(seed)
    parts = ['<robot name="rand">', f'<link name="l0">{_inertial(rng)}</link>']
    types = ["revolute", "continuous", "prismatic", "fixed"]
    for i in range(1, n_links):
        p = int(rng.integers(0, i))
        t = types[i % 4] if i > 3 else types[i - 1]
        xyz, rpy, ax = rng.normal(scale=0.3, size=3), rng.uniform(-np.pi, np.pi, 3), rng.normal(size=3) * 2.0
        lim = '<limit lower="-3" upper="3" effort="10" velocity="10"/>' if t in ("revolute", "prismatic") else ""
        parts.append(f'<joint name="j{i}" type="{t}"><parent link="l{p}"/><child link="l{i}"/>'
                     f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                     f'<axis xyz="{ax[0]} {ax[1]} {ax[2]}"/>{lim}</joint>')
        parts.append(f'<link name="l{i}">{_inertial(rng)}<visual><geometry><box size="1 1 1"/></geometry></visual></link>')
    parts.append("</robot>")
    return "".join(parts)


def pin_rnea_spatial(xml, model, C, V, Vd, q, qd, qdd, gravity):
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    pm.gravity.linear = np.asarray(gravity, float)
    pd = pm.createData()
    qp, vp, ap = pin.neutral(pm), np.zeros(pm.nv), np.zeros(pm.nv)
    qp[:3], qp[3:7] = C[:3, 3], matrix_to_quat(C[:3, :3], "xyzw")
    vb, ab = Ad_inv(C) @ V, Ad_inv(C) @ Vd
    vp[:3], vp[3:6], ap[:3], ap[3:6] = vb[3:], vb[:3], ab[3:], ab[:3]
    for j, name in enumerate(model.joint_names):
        jm = pm.joints[pm.getJointId(name)]
        if jm.nq == 2:   # continuous: (cos, sin)
            qp[jm.idx_q], qp[jm.idx_q + 1] = np.cos(q[j]), np.sin(q[j])
        else:
            qp[jm.idx_q] = q[j]
        vp[jm.idx_v], ap[jm.idx_v] = qd[j], qdd[j]
    tau = pin.rnea(pm, pd, qp, vp, ap)
    Wb = np.concatenate([tau[3:6], tau[:3]])
    W = Ad_inv(C).T @ Wb
    tj = np.array([tau[pm.joints[pm.getJointId(nm)].idx_v] for nm in model.joint_names])
    return W, tj


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_match_pinocchio(seed):
    xml = random_tree_urdf(seed)
    model = gd.load_urdf(xml)
    rng = np.random.default_rng(100 + seed)
    n = model.n_joints
    assert n == sum(1 for t in ("revolute", "continuous", "prismatic") for _ in range(xml.count(f'type="{t}"')))
    for _ in range(5):
        C = exp_se3(rng.normal(size=6))
        V, q = rng.normal(size=(2, 6)), rng.normal(size=(3, n))
        g = rng.normal(size=3) * 5
        res = gd.inverse_dynamics(model, C, V, q, gravity=g)
        W, tau = pin_rnea_spatial(xml, model, C, V[0], V[1], q[0], q[1], q[2], g)
        ref = np.concatenate([W, tau])
        ours = np.concatenate([res.base_wrench[0], res.tau[0]])
        assert np.linalg.norm(ours - ref) <= 1e-10 * max(1.0, np.linalg.norm(ref))


def test_total_mass_and_merging_of_fixed_links():
    xml = random_tree_urdf(7)
    model = gd.load_urdf(xml)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    assert model.total_mass == pytest.approx(sum(I.mass for I in pm.inertias), rel=1e-12)
    # every URDF link is known; merged ones map to their parent body
    assert set(model.link_to_body) == {f"l{i}" for i in range(9)}
    assert len(model.link_names) == model.n_joints + 1


FIXED_PAIR = """<robot name="pair">
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="fx" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0 0 1"/></joint>
  <link name="b"><inertial><mass value="3"/><inertia ixx="0.2" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/></inertial></link>
  <joint name="j" type="revolute"><parent link="b"/><child link="c"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="c"><inertial><origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
</robot>"""


def test_fixed_joint_merge_by_hand():
    model = gd.load_urdf(FIXED_PAIR)
    assert model.link_names == ("a", "c") and model.joint_names == ("j",)
    assert model.body_of_link("b") == 0
    # combined body: masses 1 at z=0 and 3 at z=1 -> CoM z = 0.75; Ixx = 0.1 + 0.2 + 1*0.75^2 + 3*0.25^2
    assert model.mass[0] == 4.0
    np.testing.assert_allclose(model.com[0], [0, 0, 0.75], atol=1e-15)
    np.testing.assert_allclose(np.diag(model.inertia[0]), [0.3 + 0.5625 + 0.1875] * 2 + [0.3], atol=1e-14)
    # a wrench on a merged link acts on its body
    C, V, q = np.eye(4), np.zeros((2, 6)), np.zeros((3, 1))
    w = np.array([[0.1, 0.2, 0.3, 1.0, -2.0, 0.5]])
    r1 = gd.inverse_dynamics(model, C, V, q, ext_wrench={"b": w})
    r2 = gd.inverse_dynamics(model, C, V, q, ext_wrench={"a": w})
    np.testing.assert_array_equal(r1.base_wrench, r2.base_wrench)
    r0 = gd.inverse_dynamics(model, C, V, q)
    np.testing.assert_allclose(r1.base_wrench - r0.base_wrench, -w, atol=1e-14)


def test_sources_file_string_xacro_and_massless_root(tmp_path, aerial_manipulator):
    text = (tmp_path / "x.urdf")
    text.write_text(FIXED_PAIR)
    assert gd.load_urdf(text).joint_names == ("j",)
    assert gd.load_urdf(str(text)).joint_names == ("j",)
    xa = tmp_path / "r.urdf.xacro"
    xa.write_text('<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                  '<xacro:property name="m" value="2.0"/>'
                  '<link name="base"><inertial><mass value="${m}"/>'
                  '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link></robot>')
    xm = tmp_path / "r.xacro"
    xm.write_text(xa.read_text())
    mx = gd.load_urdf(xm)
    assert mx.total_mass == 2.0 and mx.n_joints == 0
    # massless world root joined by a floating (or fixed) joint: the child is the base
    body = FIXED_PAIR.replace('<robot name="pair">', "")
    for jt in ("floating", "fixed"):
        xml = ('<robot name="w"><link name="world"/>'
               f'<joint name="root_joint" type="{jt}"><parent link="world"/><child link="a"/></joint>' + body)
        m = gd.load_urdf(xml)
        assert m.base_link == "a" and m.joint_names == ("j",)
    assert aerial_manipulator.base_link == "base_link"
    assert gd.load_urdf(FIXED_PAIR, base_link="a").base_link == "a"


@pytest.mark.parametrize("xml, pattern", [
    ("<robot", "not valid XML"),
    ("<model/>", "expected <robot>"),
    (FIXED_PAIR.replace('type="revolute"', 'type="floating"'), "floating"),
    (FIXED_PAIR.replace('type="revolute"', 'type="planar"'), "planar"),
    (FIXED_PAIR.replace('type="revolute"', 'type="screw"'), "unknown joint type"),
    (FIXED_PAIR.replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><mimic joint="fx" multiplier="x"/>'),
     "mimic multiplier"),
    (FIXED_PAIR.replace("</robot>", '<link name="lonely"/></robot>'), "exactly one root"),
    (FIXED_PAIR.replace('<mass value="2"/>', '<mass value="-2"/>'), "negative mass"),
    (FIXED_PAIR.replace('<mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>',
                        '<mass value="2"/>'), "no <inertia>"),
    (FIXED_PAIR.replace('ixx="0.01"', 'ixx="-5"'), r"link 'c': inertia tensor is not positive semi-definite \(principal moments \[-5"),
    (FIXED_PAIR.replace('<robot name="pair">', '<robot name="pair"><link name="world"/><joint name="w" type="floating">'
                        '<parent link="world"/><child link="a"/></joint>'), "fixed_base"),
    (FIXED_PAIR.replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'), "zero joint axis"),
    (FIXED_PAIR.replace('<child link="c"/>', '<child link="nowhere"/>'), "not defined"),
    (FIXED_PAIR.replace('<origin xyz="1 0 0"/>', '<origin xyz="1 0 nan"/>'), "finite"),
])
def test_bad_urdf(xml, pattern):
    with pytest.raises(ValueError, match=pattern):
        gd.load_urdf(xml, fixed_base=True if pattern == "fixed_base" else None)


def test_empty_file_and_leading_whitespace(tmp_path):
    empty = tmp_path / "empty.urdf"
    empty.write_text("")
    with pytest.raises(ValueError, match="^source: .* is empty"):
        gd.load_urdf(empty)
    # white space (and a BOM) before the XML declaration, as Pinocchio's parser accepts
    padded = "\ufeff \n\t  <?xml version=\"1.0\"?>\n" + FIXED_PAIR
    f = tmp_path / "padded.urdf"
    f.write_text(padded, encoding="utf-8")
    for src in (padded, f):
        assert gd.load_urdf(src).joint_names == ("j",)


def test_inertia_tolerance_after_merging():
    """A link's own non-PSD tensor absorbed by the body it is merged into (tiago's antenna:
    -3.5e-8 kg m^2) loads with a warning naming the link; the same tensor on a body of its own is
    refused with the principal moments; a triangle-inequality violation warns only."""
    bad = '<inertia ixx="-3.5e-8" ixy="0" ixz="0" iyy="3.5e-8" iyz="0" izz="9.1e-8"/>'
    merged = FIXED_PAIR.replace('<inertia ixx="0.2" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/>', bad)
    with pytest.warns(gd.URDFWarning, match="link 'b': inertia principal moments .* include a negative one; "
                                            "accepted as rounding"):
        m = gd.load_urdf(merged)
    assert np.linalg.eigvalsh(m.inertia[0]).min() > 0
    alone = FIXED_PAIR.replace('<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>', bad)
    with pytest.raises(ValueError, match=r"link 'c': inertia tensor is not positive semi-definite \(principal moments"):
        gd.load_urdf(alone)
    tri = FIXED_PAIR.replace('<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>',
                             '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.01"/>')
    with pytest.warns(gd.URDFWarning, match="link 'c': principal moments .* violate the triangle inequality"):
        gd.load_urdf(tri)
    # rounding noise on a body whose moments are all ~0 (icub's r_hip_2: -5e-20) is silent
    noise = FIXED_PAIR.replace('<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>',
                               '<inertia ixx="-5e-20" ixy="0" ixz="0" iyy="-5e-20" iyz="0" izz="0"/>')
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gd.load_urdf(noise)


def test_massless_links_load_and_forward_dynamics_names_the_joint():
    # a massless moving link whose subtree carries inertia is fine (human.urdf's virtual links)
    chain = FIXED_PAIR.replace('</robot>', '<joint name="k" type="revolute"><parent link="c"/><child link="d"/>'
                               '<origin xyz="0.3 0 0"/><axis xyz="0 1 0"/></joint><link name="d"/></robot>')
    why = "link 'd': no <inertial>, so joint 'k' moves no mass and no inertia"
    with pytest.warns(gd.SingularMassMatrixWarning, match=f"forward dynamics is undefined: {why}"):
        m = gd.load_urdf(chain)
    assert m.singular.startswith(why) and m.singular.endswith("give it an <inertial> (mass and inertia), or make the "
                                                              "joint fixed")
    n = m.n_joints
    res = gd.inverse_dynamics(m, np.eye(4), np.zeros((2, 6)), np.zeros((3, n)))   # well defined
    assert np.all(np.isfinite(res.tau)) and res.tau[0, 1] == 0.0
    with pytest.raises(ValueError, match=f"^model: forward dynamics is undefined: {why}"):
        gd.forward_dynamics(m, np.eye(4), np.zeros(6), np.zeros((2, n)), np.zeros((1, 6)), np.zeros((1, n)))
    # a point mass on the joint's axis with no inertia about it: every rotation of the joint keeps it
    # there, so the joint has zero kinetic energy at every configuration (found at load since issue 51)
    onaxis = FIXED_PAIR.replace('<origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>',
                                '<mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0"/>')
    with pytest.warns(gd.SingularMassMatrixWarning, match="a motion of joint 'j' alone has zero kinetic energy"):
        m = gd.load_urdf(onaxis)
    with pytest.raises(ValueError, match="^model: forward dynamics is undefined: a motion of joint 'j' alone"):
        gd.forward_dynamics(m, np.eye(4), np.zeros(6), np.zeros((2, 1)), np.zeros((1, 6)), np.zeros((1, 1)))
    # a singular configuration only: a massless link c carries, through joint k, a point mass that
    # k swings onto the axis of j at q_k = -pi/2 (and nowhere else): loads silently, FD is refused
    # at that state only
    swing = FIXED_PAIR.replace('<link name="c"><inertial><origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01" '
                               'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>', '<link name="c"/>')
    swing = swing.replace('</robot>', '<joint name="k" type="revolute"><parent link="c"/><child link="d"/>'
                          '<origin xyz="0.3 0 0"/><axis xyz="0 1 0"/></joint><link name="d"><inertial>'
                          '<origin xyz="0 0 0.3"/><mass value="1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" '
                          'izz="0"/></inertial></link></robot>')
    assert swing.count('<link name="c"/>') == 1
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = gd.load_urdf(swing)
    assert m.singular == "" and m.joint_names == ("j", "k")
    zero = (np.zeros((1, 6)), np.zeros((1, 6)), np.zeros((1, 2)))
    q = np.zeros((2, 2))
    assert np.all(np.isfinite(gd.forward_dynamics(m, np.eye(4), zero[0], q, zero[1], zero[2]).q))
    q[0, 1] = -np.pi / 2
    with pytest.raises(ValueError, match="^model: the articulated inertia of joint\\(s\\) j vanished at this state"):
        gd.forward_dynamics(m, np.eye(4), zero[0], q, zero[1], zero[2])


def test_zero_total_mass_static_object():
    with pytest.warns(gd.URDFWarning, match="zero total mass"):
        m = gd.load_urdf('<robot name="ghost"><link name="a"/></robot>')
    res = gd.inverse_dynamics(m, np.eye(4), np.ones((2, 6)), np.zeros((3, 0)), order=0)
    assert np.array_equal(res.base_wrench, np.zeros((1, 6)))
    with pytest.raises(ValueError, match="^model: forward dynamics is undefined: the robot has zero total mass"):
        gd.forward_dynamics(m, np.eye(4), np.zeros(6), np.zeros((2, 0)), np.zeros((1, 6)), np.zeros((1, 0)))


def test_bad_source_and_base_link(tmp_path):
    with pytest.raises(ValueError, match="^source"):
        gd.load_urdf(tmp_path / "missing.urdf")
    with pytest.raises(ValueError, match="^source"):
        gd.load_urdf(42)
    with pytest.raises(ValueError, match="^fixed_base: expected"):
        gd.load_urdf(FIXED_PAIR, fixed_base="yes")
    with pytest.raises(ValueError, match="^mimic: expected"):
        gd.load_urdf(FIXED_PAIR, mimic=1.5)
    with pytest.raises(ValueError, match="^base_link.*re-rooting"):
        gd.load_urdf(FIXED_PAIR, base_link="c")
    with pytest.raises(ValueError, match="^base_link: no link 'zzz' in <URDF string>; give one of them \\(its links: "
                                         "a, b, c\\)$"):
        gd.load_urdf(FIXED_PAIR, base_link="zzz")
    with pytest.raises(ValueError, match="^base_link: no link 'cc' in <URDF string>; did you mean 'c'\\?"):
        gd.load_urdf(FIXED_PAIR, base_link="cc")
    two_parents = FIXED_PAIR.replace("</robot>", '<joint name="k" type="fixed"><parent link="a"/><child link="c"/></joint></robot>')
    with pytest.raises(ValueError, match="two parent joints"):
        gd.load_urdf(two_parents)


def test_malformed_number_in_an_ignored_tag_warns_naming_joint_and_attribute():
    """``<limit lower="-1.57."/>`` is ignored by the dynamics but refused by urdfdom (and so by
    robot_state_publisher): loading warns, naming the joint, the tag and the attribute."""
    import warnings as _w

    import geodyn_ros as _gd
    xml = """<robot name="r">
      <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="l1"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
        <limit lower="-1.57." upper="1.57" effort="10" velocity="1e1"/><dynamics damping="0.1"/></joint>
    </robot>"""
    with _w.catch_warnings(record=True) as rec:
        _w.simplefilter("always")
        m = _gd.load_urdf(xml)
    msgs = [str(r.message) for r in rec if issubclass(r.category, _gd.URDFWarning)]
    assert m.n_joints == 1
    assert len(msgs) == 1 and "joint 'j1'" in msgs[0] and 'lower="-1.57."' in msgs[0] and "urdfdom" in msgs[0]
    good = xml.replace('lower="-1.57."', 'lower="-1.57"')
    with _w.catch_warnings(record=True) as rec:
        _w.simplefilter("always")
        _gd.load_urdf(good)
    assert not [r for r in rec if issubclass(r.category, _gd.URDFWarning)]
