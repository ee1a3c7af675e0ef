"""MuJoCo floating-base simulator with the geodyn_ros conventions (no ROS).

The same URDF that :func:`geodyn_ros.load_urdf` reads is imported into MuJoCo through
``mujoco.MjSpec``; the floating base gets a free joint and every state and command crosses
the boundary in geodyn_ros conventions (``CONVENTIONS.md``):

* base pose ``C`` (4, 4): the base-link frame in world;
* spatial base twist ``V = (w, pdot + p x w)`` (6,), angular first, world axes;
* body base twist ``V_b = Ad_C^-1 V = (R^T w, R^T pdot)`` (6,), base-link axes;
* base command: body wrench ``W_b = (n_b, f_b)`` (6,), moment first, in base-link axes about
  the base-link frame origin, i.e. ``W_b = Ad_C^T W`` for the spatial wrench ``W``;
* joint arrays ``q``, ``qd``, ``tau`` (n,) in ``model.joint_names`` order (mapped by name).

MuJoCo coordinates used internally (verified in ``test/control/test_mujoco_sim.py``)
---------------------------------------------------------------------------
Free joint ``qpos = (p, quat_wxyz)`` of the base-link frame origin, ``qvel = (pdot, w_b)``
with ``pdot`` in world axes and ``w_b = R^T w`` in base axes, ``qacc = d/dt qvel``. Hence::

    pdot = v - p x w,                 w_b = R^T w                       (value)
    v    = pdot + p x w,              w   = R w_b
    qacc_lin = vdot - p x wdot + w x pdot,   qacc_ang = R^T wdot        (first derivative)

with ``(wdot, vdot) = Vdot`` the derivative of the spatial twist (``R^T`` commutes with the
derivative because ``d/dt(R^T) w = -R^T hat(w) w = 0``).

The base wrench is applied by six ``motor`` actuators with a *site* transmission on a site at
the base-link origin (gear unit vectors in the site frame): MuJoCo recomputes their world-axes
effect from the current pose at every integrator stage, so ``W_b`` is held constant *in the
body frame* inside an RK4 step (the mathematically exact zero-order hold of a body-fixed
wrench; ``xfrc_applied``, which is fixed in world axes during a step, would make the hold only
first-order accurate under rotation). Joint torques go to ``qfrc_applied`` at the joint dofs
(not through actuators, so the URDF ``effort`` limits that MuJoCo imports as ``actfrcrange``
do not clamp them).

External forces of a world (:meth:`MujocoSim.attach_world`, :mod:`geodyn_ros.sim.world`: wind,
drag, pushes) go through ``xfrc_applied``, evaluated from the state at the start of every step and
held over it; :meth:`MujocoSim.external_wrench` says what they are. Without a world nothing changes.

Import details (what MuJoCo's URDF importer would otherwise do differently from geodyn_ros):

* ``<visual>``/``<collision>`` are stripped before import: there is no geometry (contacts are
  disabled, unless ``ground=True``) and mesh files such as ``package://`` URIs need not resolve;
* a massless root link (``world``, ``base_footprint``) joined by one ``fixed``/``floating``
  joint to the base is removed with that joint, as :func:`geodyn_ros.load_urdf` does (MuJoCo
  would weld the base to a link named ``world``, or create its own free joint for ``floating``);
* compiler: ``fusestatic=False`` (every URDF link stays a MuJoCo body whose frame is the link
  frame), ``inertiafromgeom=false``, ``balanceinertia=False``, ``boundmass=boundinertia=0``,
  ``alignfree=False`` (the free body's frame stays the base-link frame, not its inertial frame);
* ``<dynamics damping friction>`` (imported by MuJoCo as ``damping``/``frictionloss``) is
  zeroed unless ``joint_dynamics=True``, so the simulated robot is exactly ``sim.model``;
* ``<limit lower upper>`` is imported as the joint ``range`` (enforced unless
  ``joint_limits=False``, which sets ``mjDSBL_LIMIT``).

Ground contact (``ground=True``; off by default, and then the MuJoCo model is unchanged): a
plane (world ``z = 0`` until :meth:`MujocoSim.place_ground` moves it) and four spheres of radius
:data:`FOOT_RADIUS` on the base body, the vehicle's feet (the only geometry that touches the
ground: links have none). MuJoCo's soft contact with its default parameters, stated here:
``solref = (0.02, 1)`` (the contact behaves as a mass-spring-damper with a time constant of 20 ms,
critically damped; at least twice the 1 ms step, as MuJoCo requires for stability),
``solimp = (0.9, 0.95, 0.001, 0.5, 2)`` (the impedance rises from 0.9 to 0.95 over 1 mm of
penetration), friction ``(1, 0.005, 0.0001)`` (sliding, torsional, rolling), ``condim = 3``
(normal and two tangential directions). The feet's geoms carry no mass (``inertiafromgeom`` is
false), so the simulated robot stays ``sim.model``.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NamedTuple

import mujoco
import numpy as np

from ..lie import matrix_to_quat, quat_to_matrix
from ..model.urdf import _read_source, load_urdf, lock_joints_xml

__all__ = ["MujocoSim", "SimState", "INTEGRATORS", "ExternalWrench"]

#: integrator names accepted by :class:`MujocoSim` (case-insensitive)
INTEGRATORS = {
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
}

_RIGID_TOL = 1e-6        # same tolerance as the dynamics API (CONVENTIONS.md "Bad input")
_PREFIX = "geodyn_sim_"  # names of the elements this wrapper adds to the MuJoCo model
#: radius [m] of the four feet spheres of ``ground=True``
FOOT_RADIUS = 0.02
#: MuJoCo's default soft-contact parameters, set explicitly (module docstring)
CONTACT_SOLREF = (0.02, 1.0)
CONTACT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
CONTACT_FRICTION = (1.0, 0.005, 0.0001)

#: a joint's dry friction (URDF ``<dynamics friction>``, MuJoCo ``frictionloss``) with
#: ``joint_dynamics=True``: the constraint's reference time constant, in steps, and its impedance.
#: MuJoCo's defaults (solref 0.02 s, solimp 0.9-0.95) make it a soft viscous force: a 5e-6 kg m^2
#: link under half its 0.1 N m friction crept at 9.9 rad/s after 2 s (measured, MuJoCo 4.0.0; Coulomb
#: friction holds it). With 2 steps and 0.99-0.999 it creeps at 0.09 rad/s, and a torque above the
#: friction still accelerates it by (tau - f) / I, as Coulomb's law and gz-sim's DART do.
FRICTION_SOLREF_STEPS = 2
FRICTION_SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)
_JOINT_KIND = {"revolute": mujoco.mjtJoint.mjJNT_HINGE, "continuous": mujoco.mjtJoint.mjJNT_HINGE,
               "prismatic": mujoco.mjtJoint.mjJNT_SLIDE}


class SimState(NamedTuple):
    """Snapshot of the simulator state (all arrays are copies).

    Attributes
    ----------
    time : float
        Simulation time in seconds.
    base_pose : ndarray, shape (4, 4)
        Pose ``C`` of the base-link frame in world.
    base_twist : ndarray, shape (6,)
        Spatial base twist ``(w, pdot + p x w)``, world axes, angular first.
    q : ndarray, shape (n,)
        Joint positions, ``model.joint_names`` order (rad or m).
    qd : ndarray, shape (n,)
        Joint velocities, same order.
    """

    time: float
    base_pose: np.ndarray
    base_twist: np.ndarray
    q: np.ndarray
    qd: np.ndarray


class ExternalWrench(NamedTuple):
    """The wrench a world applies at ``time`` (held over the next step); every wrench moment first.

    Attributes
    ----------
    time : float
        Simulation time [s].
    spatial : ndarray, shape (6,)
        ``(n, f)``: the total, world axes, moment about the world origin (geodyn_ros's spatial
        wrench, ``CONVENTIONS.md``).
    body : ndarray, shape (6,)
        ``W_b = Ad_C^T W``: the total in base-link axes about the base-link origin (the base
        command's convention, :meth:`MujocoSim.set_command`).
    generalized : ndarray, shape (6 + n,)
        ``(W_b, tau)``: the generalized force conjugate to ``(V_b, qd)`` (base body twist, joint
        rates in ``model.joint_names`` order), what a generalized-momentum observer estimates;
        its first six entries equal ``body``, ``tau`` [N m or N] are the joint torques the forces
        on the links produce (``J^T f``).
    by_link : dict
        ``{link: (6,)}``: the wrench on each pushed or dragged link, world axes, moment about the
        link frame's origin.
    components : dict
        ``{source: (6,)}`` spatial, per source: ``"push"``, ``"wind"`` (body drag), ``"rotor_drag"``.
    """

    time: float
    spatial: np.ndarray
    body: np.ndarray
    generalized: np.ndarray
    by_link: dict
    components: dict


# ----------------------------------------------------------------------------- validation
def _array(x, name, shape):
    """float64 copy of ``x`` with the given shape and finite entries, else ValueError naming ``name``."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:     # ragged nested sequences etc.
        raise ValueError(f"{name}: cannot convert to a float array ({exc})") from None
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name}: expected real numbers, got dtype {a.dtype}")
    a = np.array(a, dtype=float)               # a copy: never alias the caller's array
    if a.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf")
    return a


def _pose(x, name="base_pose"):
    C = _array(x, name, (4, 4))
    R = C[:3, :3]
    if (np.max(np.abs(C[3] - (0.0, 0.0, 0.0, 1.0))) > _RIGID_TOL
            or np.max(np.abs(R.T @ R - np.eye(3))) > _RIGID_TOL or np.linalg.det(R) < 0.0):
        raise ValueError(f"{name}: is not a rigid transform (R^T R = I, det R = +1, last row "
                         f"[0, 0, 0, 1], to {_RIGID_TOL:g})")
    return C


def _scalar(x, name, *, positive=False):
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{name}: expected a real number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a real number, got {x!r}") from None
    if not np.isfinite(v) or (positive and v <= 0.0):
        raise ValueError(f"{name}: expected a finite{' positive' if positive else ''} number, got {x!r}")
    return v


# ----------------------------------------------------------------------------- URDF import
def _urdf_for_mujoco(text: str, base_link: str) -> str:
    """URDF text without geometry and without a massless root above ``base_link``."""
    root = ET.fromstring(text)
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for j in root.findall("joint"):
        c = j.find("child")
        if c is not None and c.get("link") == base_link:
            # geodyn_ros.load_urdf chose the child of a massless root as the base: drop the root
            # link and its single joint, so that the base becomes MuJoCo's root body
            parent = j.find("parent").get("link")
            root.remove(j)
            for link in root.findall("link"):
                if link.get("name") == parent:
                    root.remove(link)
            break
    return ET.tostring(root, encoding="unicode")


def _integrator(integrator):
    if isinstance(integrator, mujoco.mjtIntegrator):
        return integrator
    if isinstance(integrator, str) and integrator.lower() in INTEGRATORS:
        return INTEGRATORS[integrator.lower()]
    raise ValueError(f"integrator: expected one of {sorted(INTEGRATORS)} (case-insensitive), got {integrator!r}")


class MujocoSim:
    """MuJoCo simulation of a floating-base URDF robot with geodyn_ros conventions.

    Parameters
    ----------
    source : str or os.PathLike
        URDF file path (``.urdf`` or ``.xacro``) or URDF XML string, as for
        :func:`geodyn_ros.load_urdf`.
    base_link : str, optional
        Floating base, as for :func:`geodyn_ros.load_urdf` (``None``: the URDF root, or the
        child of a massless ``world``-like root).
    timestep : float
        Integration step in seconds (> 0). Default 1e-3.
    gravity : array_like, shape (3,)
        Gravity acceleration in world axes (m/s^2). Default ``(0, 0, -9.81)``.
    integrator : str
        ``"RK4"`` (default), ``"euler"`` (MuJoCo's semi-implicit Euler), ``"implicitfast"`` or
        ``"implicit"``; case-insensitive (or a ``mujoco.mjtIntegrator``).
    joint_limits : bool
        ``True`` (default) enforces the URDF ``<limit lower upper>`` of revolute and prismatic
        joints as MuJoCo limit constraints; ``False`` disables them (``mjDSBL_LIMIT``).
    joint_dynamics : bool
        ``False`` (default) zeroes the joint damping and dry friction that MuJoCo imports from
        URDF ``<dynamics>`` (geodyn_ros ignores them, so the simulated robot equals
        ``self.model``); ``True`` keeps them, the dry friction's constraint stiffened
        (:data:`FRICTION_SOLREF_STEPS`, :data:`FRICTION_SOLIMP`). Damping on a light link is stiff:
        RK4 is stable for ``timestep < 2.78 I / d`` only, so use ``integrator="implicitfast"``
        (damping implicit) there.
    ground : bool
        ``True``: a ground plane and four feet on the base, with contact (module docstring);
        place them with :meth:`place_ground` before :meth:`reset`. Default ``False``: no contact.

    Attributes
    ----------
    model : geodyn_ros.Model
        ``geodyn_ros.load_urdf(source, base_link=base_link)``.
    joint_names : tuple of str
        ``model.joint_names``: the column order of every joint array (length n).
    urdf_text : str
        The URDF XML of ``model``, with ``locked_joints`` made fixed (e.g. for
        :func:`geodyn_ros.model.frames.joint_frames`).
    mj_model : mujoco.MjModel
    mj_data : mujoco.MjData
        The underlying MuJoCo objects. Besides the URDF bodies and joints they hold a free joint
        on the base body, a site at the base-link origin and six base-wrench actuators (names
        prefixed ``geodyn_sim_``). Derived quantities (``xpos``, ``subtree_com``, ...) refer to
        the state before the last step; call :meth:`forward` to refresh them.

    Notes
    -----
    The state after construction is ``base_pose = I``, zero twist, ``q = qd = 0``, time 0, and
    zero command. Raises ``ValueError`` naming the argument for bad inputs, and ``ValueError``
    (argument ``source``) if MuJoCo cannot import the URDF.
    """

    def __init__(self, source, *, base_link=None, timestep=1e-3, gravity=(0.0, 0.0, -9.81),
                 integrator="RK4", joint_limits=True, joint_dynamics=False, locked_joints=None, ground=False):
        timestep = _scalar(timestep, "timestep", positive=True)
        gravity = _array(gravity, "gravity", (3,))
        integ = _integrator(integrator)
        self.model = load_urdf(source, base_link=base_link, locked_joints=locked_joints)
        self.joint_names = self.model.joint_names
        base = self.model.base_link
        if base == "world":
            raise ValueError("base_link: MuJoCo reserves the body name 'world'; rename the URDF base link")
        text, _ = _read_source(source)
        if locked_joints:
            text = lock_joints_xml(text, locked_joints)
        self.urdf_text = text   # the URDF of self.model (locked joints fixed): its tree, for /tf
        try:
            spec = mujoco.MjSpec.from_string(_urdf_for_mujoco(text, base))
        except Exception as exc:
            raise ValueError(f"source: MuJoCo could not import the URDF: {exc}") from exc

        c = spec.compiler
        c.fusestatic = False
        c.discardvisual = True
        c.balanceinertia = False
        c.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
        c.boundmass = 0.0
        c.boundinertia = 0.0
        c.settotalmass = -1.0
        c.alignfree = False

        body = spec.body(base)
        if body is None or body.parent.name != spec.worldbody.name:
            raise ValueError(f"source: base link {base!r} is not a root body after MuJoCo's URDF import")
        if len(body.joints):
            raise ValueError(f"source: MuJoCo attached joints to the base body {base!r}; expected none")
        body.pos = [0.0, 0.0, 0.0]
        body.quat = [1.0, 0.0, 0.0, 0.0]
        body.add_freejoint(name=_PREFIX + "base")
        body.add_site(name=_PREFIX + "base_origin", pos=[0.0, 0.0, 0.0], quat=[1.0, 0.0, 0.0, 0.0])
        # actuator k applies component k of W_b = (n_b, f_b); MuJoCo's gear order is (force, torque)
        for k, lab in enumerate(("nx", "ny", "nz", "fx", "fy", "fz")):
            gear = np.zeros(6)
            gear[(k + 3) % 6] = 1.0
            spec.add_actuator(name=_PREFIX + "base_" + lab, target=_PREFIX + "base_origin",
                              trntype=mujoco.mjtTrn.mjTRN_SITE, gear=gear)
        if not joint_dynamics:
            for j in spec.joints:
                j.damping = np.zeros_like(np.atleast_1d(j.damping))
                j.stiffness = np.zeros_like(np.atleast_1d(j.stiffness))
                j.frictionloss = 0.0
                j.armature = 0.0
        else:        # dry friction as close to Coulomb's as the soft constraint gets (FRICTION_SOLREF)
            for j in spec.joints:
                if j.frictionloss > 0:
                    j.solref_friction = [FRICTION_SOLREF_STEPS * float(timestep), 1.0]
                    j.solimp_friction = list(FRICTION_SOLIMP)

        extra_nv, extra_nu = self._extend_spec(spec, body)
        self.ground = bool(ground)
        if self.ground:
            spec.worldbody.add_geom(name=_PREFIX + "ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0],
                                    solref=list(CONTACT_SOLREF), solimp=list(CONTACT_SOLIMP),
                                    friction=list(CONTACT_FRICTION), condim=3)
            for k in range(4):
                body.add_geom(name=_PREFIX + f"foot_{k}", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                              size=[FOOT_RADIUS, 0.0, 0.0], pos=[0.0, 0.0, -1.0], solref=list(CONTACT_SOLREF),
                              solimp=list(CONTACT_SOLIMP), friction=list(CONTACT_FRICTION), condim=3)

        opt = spec.option
        opt.timestep = timestep
        opt.gravity = gravity
        opt.integrator = int(integ)
        flags = int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        if not self.ground:
            flags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        if not joint_limits:
            flags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
        opt.disableflags = flags
        try:
            self.mj_model = spec.compile()
        except Exception as exc:
            raise ValueError(f"source: MuJoCo could not compile the URDF: {exc}") from exc
        self.mj_data = mujoco.MjData(self.mj_model)
        m = self.mj_model

        # ---- name maps, computed once
        n = self.model.n_joints
        if m.nv != 6 + n + extra_nv or m.nu != 6 + extra_nu:
            raise ValueError(f"source: MuJoCo model has nv={m.nv}, nu={m.nu}; expected nv={6 + n + extra_nv}, "
                             f"nu={6 + extra_nu}")
        fj = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, _PREFIX + "base")
        self._base_body = int(m.jnt_bodyid[fj])
        self._bq = int(m.jnt_qposadr[fj])      # qpos[bq:bq+3] = p, qpos[bq+3:bq+7] = quat wxyz
        self._bv = int(m.jnt_dofadr[fj])       # qvel[bv:bv+3] = pdot (world), qvel[bv+3:bv+6] = w_b
        qadr, dadr = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        for i, (name, jt) in enumerate(zip(self.joint_names, self.model.joint_types)):
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0 or m.jnt_type[jid] != _JOINT_KIND[jt]:
                raise ValueError(f"source: joint {name!r} ({jt}) is missing or has another type in MuJoCo")
            qadr[i], dadr[i] = m.jnt_qposadr[jid], m.jnt_dofadr[jid]
        self._qadr, self._dadr = qadr, dadr
        self._wrench = np.zeros(6)
        self._tau = np.zeros(n)
        self._world = None             # WorldForces (attach_world), None: no external force
        self._world_pending = False
        if self.ground:
            self._ground_geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, _PREFIX + "ground")
            self._feet = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, _PREFIX + f"foot_{k}")
                                   for k in range(4)], dtype=np.int64)
        self._setup_extension()
        self.reset(np.eye(4), np.zeros(6), np.zeros(n), np.zeros(n))

    # ------------------------------------------------------------------ extension hooks
    def _extend_spec(self, spec, base_body) -> tuple:
        """Subclass hook: add elements to the ``MjSpec`` before compilation (the six base-wrench
        actuators are already actuators 0..5). Returns ``(extra_nv, extra_nu)`` added."""
        return 0, 0

    def _setup_extension(self) -> None:
        """Subclass hook: called once after compilation, before the first :meth:`reset`."""

    # ------------------------------------------------------------------ ground contact
    def place_ground(self, height: float, feet) -> None:
        """Move the ground plane to world ``z = height`` [m] and the four feet (the sphere centres)
        to ``feet`` (4, 3) [m] in the base-link frame (``ground=True`` only; call before :meth:`reset`)."""
        if not self.ground:
            raise ValueError("ground: this simulator was built without ground contact (ground=False)")
        h = _scalar(height, "height")
        F = _array(np.asarray(feet, float).ravel(), "feet", (12,)).reshape(4, 3)
        self.mj_model.geom_pos[self._ground_geom] = (0.0, 0.0, h)
        self.mj_model.geom_pos[self._feet] = F
        # the world body's geoms are static: their world positions are computed once, at compile
        # time, and again by mj_setConst (MuJoCo 3-4), not by mj_forward
        mujoco.mj_setConst(self.mj_model, self.mj_data)
        mujoco.mj_forward(self.mj_model, self.mj_data)

    def ground_force(self) -> float:
        """Total normal force [N] the ground exerts on the feet in the current state (0 without
        contact, or with ``ground=False``)."""
        if not self.ground:
            return 0.0
        m, d = self.mj_model, self.mj_data
        f = np.zeros(6)
        total = 0.0
        for i in range(d.ncon):
            mujoco.mj_contactForce(m, d, i, f)
            total += f[0]
        return float(total)

    # ------------------------------------------------------------------ properties
    @property
    def time(self) -> float:
        """Simulation time in seconds."""
        return float(self.mj_data.time)

    @property
    def timestep(self) -> float:
        """Integration step in seconds."""
        return float(self.mj_model.opt.timestep)

    @property
    def gravity(self) -> np.ndarray:
        """(3,) gravity acceleration in world axes (copy)."""
        return np.array(self.mj_model.opt.gravity, dtype=float)

    # ------------------------------------------------------------------ state in
    def reset(self, base_pose, base_twist, q, qd, time=0.0) -> None:
        """Set the state (MuJoCo data is reset; the command set by :meth:`set_command` is kept).

        Parameters
        ----------
        base_pose : array_like, shape (4, 4)
            Pose ``C`` of the base-link frame in world (rigid to 1e-6).
        base_twist : array_like, shape (6,)
            Spatial base twist ``(w, pdot + p x w)``, world axes, angular first.
        q, qd : array_like, shape (n,)
            Joint positions and velocities in ``joint_names`` order.
        time : float
            Simulation time in seconds. Default 0.
        """
        C = _pose(base_pose)
        V = _array(base_twist, "base_twist", (6,))
        n = self.model.n_joints
        qv = _array(q, "q", (n,))
        qdv = _array(qd, "qd", (n,))
        t = _scalar(time, "time")
        m, d = self.mj_model, self.mj_data
        mujoco.mj_resetData(m, d)
        R, p = C[:3, :3], C[:3, 3]
        w = V[:3]
        bq, bv = self._bq, self._bv
        d.qpos[bq:bq + 3] = p
        d.qpos[bq + 3:bq + 7] = matrix_to_quat(R, order="wxyz")
        d.qvel[bv:bv + 3] = V[3:] - np.cross(p, w)        # pdot = v - p x w
        d.qvel[bv + 3:bv + 6] = R.T @ w                     # w_b = R^T w
        d.qpos[self._qadr] = qv
        d.qvel[self._dadr] = qdv
        d.time = t
        d.ctrl[:6] = self._wrench
        d.qfrc_applied[self._dadr] = self._tau
        mujoco.mj_forward(m, d)
        if self._world is not None:
            self._world.apply(self)
            self._world_pending = False
            mujoco.mj_forward(m, d)

    # ------------------------------------------------------------------ the world's forces
    def attach_world(self, forces) -> None:
        """Attach the external forces of a world (a :class:`~geodyn_ros.sim.world.WorldForces`:
        wind, drag, pushes), or None to detach them. They are evaluated from the state at the start
        of every step (and at :meth:`reset`) and applied through ``xfrc_applied`` (which they own).
        Without them (the default) the simulator is unchanged, step for step."""
        self._world = forces
        self._world_pending = forces is not None
        if forces is None:
            self.mj_data.xfrc_applied[:] = 0.0

    @property
    def world(self):
        """The attached :class:`~geodyn_ros.sim.world.WorldForces`, or None."""
        return self._world

    def external_wrench(self):
        """The :class:`ExternalWrench` the attached world applies now (at
        :attr:`time`, held over the next step): total spatial and body wrench, the generalized force
        of ``(V_b, qd)``, per link and per source. Zeros without a world."""
        if self._world is None:
            return ExternalWrench(self.time, np.zeros(6), np.zeros(6), np.zeros(6 + self.model.n_joints), {}, {})
        if self._world_pending:
            self._world.apply(self)
            self._world_pending = False
        return self._world.external_wrench(self)

    def set_command(self, base_wrench_body, tau) -> None:
        """Set the command, held constant (zero-order hold) over the following steps until changed.

        Parameters
        ----------
        base_wrench_body : array_like, shape (6,)
            Body wrench ``W_b = (n_b, f_b)``, moment first, in base-link axes about the
            base-link frame origin (``W_b = Ad_C^T W`` for the spatial wrench ``W``). It is held
            constant in the *body* frame (it turns with the base).
        tau : array_like, shape (n,)
            Joint actuation torques (N m) or forces (N) in ``joint_names`` order.
        """
        W = _array(base_wrench_body, "base_wrench_body", (6,))
        t = _array(tau, "tau", (self.model.n_joints,))
        self._wrench[:] = W
        self._tau[:] = t
        self.mj_data.ctrl[:6] = W
        self.mj_data.qfrc_applied[self._dadr] = t

    def step(self, n=1) -> None:
        """Advance ``n`` timesteps (``n >= 0`` integer) with the current command.

        Raises
        ------
        RuntimeError
            The state became non-finite (diverged); :meth:`reset` before stepping again.
        """
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n: expected a non-negative integer number of steps, got {n!r}")
        if n == 0:
            return
        d = self.mj_data
        if self._world is None:
            mujoco.mj_step(self.mj_model, d, int(n))
        else:                       # the world's forces from the state at the start of every step
            if self._world_pending:
                self._world.apply(self)
                self._world_pending = False
            for _ in range(int(n)):
                mujoco.mj_step(self.mj_model, d)
                self._world.apply(self)
        if not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()):
            raise RuntimeError(f"MuJoCo simulation diverged (non-finite state) at t = {d.time:g} s")

    def forward(self) -> None:
        """Recompute MuJoCo's derived quantities (``mj_forward``) for the current state and command."""
        mujoco.mj_forward(self.mj_model, self.mj_data)

    # ------------------------------------------------------------------ state out
    def base_pose(self) -> np.ndarray:
        """(4, 4) pose ``C`` of the base-link frame in world."""
        qp = self.mj_data.qpos
        C = np.eye(4)
        C[:3, :3] = quat_to_matrix(qp[self._bq + 3:self._bq + 7], order="wxyz")
        C[:3, 3] = qp[self._bq:self._bq + 3]
        return C

    def base_position_quaternion(self, out_p, out_quat) -> None:
        """Write the base-link origin [m] into ``out_p`` (3,) and its orientation, MuJoCo's own unit
        quaternion (either sign) in ROS order ``(x, y, z, w)``, into ``out_quat`` (4,): the pose of
        :meth:`base_pose` without a rotation matrix (the simulators' ``/tf``)."""
        qp, b = self.mj_data.qpos, self._bq
        out_p[:] = qp[b:b + 3]
        out_quat[:3] = qp[b + 4:b + 7]
        out_quat[3] = qp[b + 3]

    def base_twist(self) -> np.ndarray:
        """(6,) spatial base twist ``(w, pdot + p x w)``: world axes, angular first."""
        qp, qv = self.mj_data.qpos, self.mj_data.qvel
        R = quat_to_matrix(qp[self._bq + 3:self._bq + 7], order="wxyz")
        p = qp[self._bq:self._bq + 3]
        w = R @ qv[self._bv + 3:self._bv + 6]
        return np.concatenate([w, qv[self._bv:self._bv + 3] + np.cross(p, w)])

    def base_twist_body(self) -> np.ndarray:
        """(6,) body twist ``V_b = Ad_C^-1 V = (w_b, v_b)`` of the base-link frame, base axes, angular first."""
        qp, qv = self.mj_data.qpos, self.mj_data.qvel
        R = quat_to_matrix(qp[self._bq + 3:self._bq + 7], order="wxyz")
        return np.concatenate([qv[self._bv + 3:self._bv + 6], R.T @ qv[self._bv:self._bv + 3]])

    def q(self) -> np.ndarray:
        """(n,) joint positions in ``joint_names`` order (copy)."""
        return self.mj_data.qpos[self._qadr]

    def qd(self) -> np.ndarray:
        """(n,) joint velocities in ``joint_names`` order (copy)."""
        return self.mj_data.qvel[self._dadr]

    def state(self) -> SimState:
        """:class:`SimState` ``(time, base_pose, base_twist, q, qd)`` (copies)."""
        return SimState(self.time, self.base_pose(), self.base_twist(), self.q(), self.qd())

    def __repr__(self) -> str:
        integ = mujoco.mjtIntegrator(self.mj_model.opt.integrator).name
        return (f"MujocoSim({self.model.name!r}, base_link={self.model.base_link!r}, "
                f"n_joints={self.model.n_joints}, timestep={self.timestep:g}, integrator={integ}, "
                f"time={self.time:g})")
