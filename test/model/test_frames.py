"""geodyn_ros.model.frames: the URDF joints' parent->child transforms, against MuJoCo.

Oracle: MuJoCo's own forward kinematics of the same URDF (``xpos``/``xquat`` after
``mj_forward``; MujocoSim keeps every link a body). A tree with revolute, continuous, prismatic
and fixed joints, tilted origins and unnormalised axes, at random configurations and base poses.
Tolerance 1e-9 m / 1e-9 on rotation-matrix entries (float64 kinematics both: ~1e-15 in practice).
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from geodyn_ros.lie import quat_to_matrix
from geodyn_ros.model.frames import joint_frames
from geodyn_ros.sim import MujocoSim

_INERTIAL = ('<inertial><origin xyz="0.01 0.02 -0.03"/><mass value="{m}"/>'
             '<inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>')
URDF = f"""<robot name="mixed">
  <link name="base">{_INERTIAL.format(m=2.0)}</link>
  <link name="a">{_INERTIAL.format(m=0.5)}</link>
  <link name="b">{_INERTIAL.format(m=0.4)}</link>
  <link name="c">{_INERTIAL.format(m=0.3)}</link>
  <link name="tool">{_INERTIAL.format(m=0.1)}</link>
  <link name="d">{_INERTIAL.format(m=0.2)}</link>
  <joint name="j_rev" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.5"/><axis xyz="1 2 2"/>
    <limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
  <joint name="j_pri" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0 0.4 0" rpy="-0.4 0.1 0.2"/><axis xyz="0 3 4"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <joint name="j_fix" type="fixed"><parent link="b"/><child link="tool"/>
    <origin xyz="0.05 0 0.1" rpy="0.7 0 -0.3"/></joint>
  <joint name="j_cont" type="continuous"><parent link="tool"/><child link="c"/>
    <origin xyz="0 0 0.2" rpy="0 0.9 0"/><axis xyz="0 0 1"/></joint>
  <joint name="j_side" type="revolute"><parent link="base"/><child link="d"/>
    <origin xyz="-0.2 0 0" rpy="0 0 1.2"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
</robot>"""


def _compose(C, frames, q):
    t, quat = frames.transforms(q)
    edges = [(f[1], f[2], f[3], f[4]) for f in frames.fixed]
    edges += [(p, c, t[i], quat[i]) for i, (p, c) in enumerate(zip(frames.moving_parents, frames.moving_children))]
    pose = {"base": C}
    while len(pose) < 1 + len(edges):
        for p, c, tt, qq in edges:
            if p in pose and c not in pose:
                T = np.eye(4)
                T[:3, :3] = quat_to_matrix(qq, "xyzw")
                T[:3, 3] = tt
                pose[c] = pose[p] @ T
    return pose


def test_joint_frames_equal_mujoco_link_poses():
    sim = MujocoSim(URDF, joint_limits=False)
    fr = joint_frames(sim.model, sim.urdf_text)
    assert [f[0] for f in fr.fixed] == ["j_fix"]
    assert set(fr.moving_joints) == set(sim.model.joint_names) == {"j_rev", "j_pri", "j_cont", "j_side"}
    rng = np.random.default_rng(7)
    for _ in range(20):
        v = rng.normal(size=4)
        C = np.eye(4)
        C[:3, :3] = quat_to_matrix(v / np.linalg.norm(v), "xyzw")
        C[:3, 3] = rng.uniform(-5, 5, 3)
        q = rng.uniform(-2.5, 2.5, sim.model.n_joints)
        sim.reset(C, np.zeros(6), q, np.zeros_like(q))
        sim.forward()
        pose = _compose(sim.base_pose(), fr, sim.q())
        for name, T in pose.items():
            b = mujoco.mj_name2id(sim.mj_model, mujoco.mjtObj.mjOBJ_BODY, name)
            assert np.abs(T[:3, 3] - sim.mj_data.xpos[b]).max() < 1e-9, name
            assert np.abs(T[:3, :3] - quat_to_matrix(sim.mj_data.xquat[b], "wxyz")).max() < 1e-9, name
        p, quat = np.empty(3), np.empty(4)
        sim.base_position_quaternion(p, quat)
        assert np.abs(p - C[:3, 3]).max() < 1e-12
        assert np.abs(quat_to_matrix(quat, "xyzw") - C[:3, :3]).max() < 1e-9


def test_bad_inputs_are_refused_naming_the_argument():
    sim = MujocoSim(URDF)
    fr = joint_frames(sim.model, sim.urdf_text)
    for bad in (np.zeros(3), np.full(4, np.nan), np.array([0.0, np.inf, 0.0, 0.0])):
        with pytest.raises(ValueError, match=r"^q: "):
            fr.transforms(bad)
    other = URDF.replace('name="j_side" type="revolute"', 'name="j_side" type="fixed"')
    with pytest.raises(ValueError, match=r"^urdf_text: "):
        joint_frames(sim.model, other)
