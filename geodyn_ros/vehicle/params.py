"""Rotor constants, joints and the vehicle's actuation config (issue 33, vehicle file schema 1).

Layer 1 (beside ``model``): imports only ``model``, ``lie``, numpy and yaml. Moved here from
``geodyn_ros.control.rotors``, which re-exports every name (old imports keep working). The file
format is doc/reference/vehicle_file.md; :func:`geodyn_ros.vehicle.load_vehicle` reads it.
"""
from __future__ import annotations

import difflib
import re
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model.validate import as_floats, clip, file_error, format_against, require_positive
from .geometry import _pos  # noqa: F401 (control.rotors imports it from here)
from .geometry import (_SPIN, allocation_rank, joint_table_of, multirotor_frames, natural_key,
                       rotor_frames_from_model, rotor_wrench_columns, urdf_joint_table)

__all__ = ["RotorParams", "ElasticJointParams", "Px4Section", "ActuationConfig", "default_actuation_config_path",
           "ROTOR_SECTIONS", "PER_ROTOR", "MIN_THRUST_TO_WEIGHT", "GRAVITY", "PIN_TOL", "pinned_joints"]

#: the rotor constants that may differ per rotor (scalar when equal for every rotor, else (n,))
PER_ROTOR = ("motor_constant", "moment_constant", "time_constant_up", "time_constant_down", "max_rot_velocity",
             "min_rot_velocity", "rotor_drag_coefficient", "rolling_moment_coefficient")
#: :meth:`ActuationConfig.check` refuses a vehicle whose full thrust is below this multiple of its
#: weight (issue 33): below it the controller has too little margin to tilt and to reject errors
MIN_THRUST_TO_WEIGHT = 1.2
#: [m/s^2] the gravity of every controller of the package (``gravity=(0, 0, -9.81)``)
GRAVITY = 9.81
_ZERO_OK = ("moment_constant", "min_rot_velocity", "rotor_drag_coefficient", "rolling_moment_coefficient")
_MOVING = ("revolute", "continuous", "prismatic")
#: [rad or m] a revolute or prismatic joint whose URDF ``<limit>`` has ``|upper - lower| <= PIN_TOL``
#: is pinned (RotorS mounts its IMU on a revolute joint with lower = upper = 0): far above the
#: rounding of a limit typed or computed by xacro (1e-15 for limits of a few rad or m), far below
#: a range a joint is meant to move through
PIN_TOL = 1e-9


def pinned_joints(joints) -> dict:
    """``{joint: position [rad or m]}`` of the joints of a URDF joint table
    (:func:`~geodyn_ros.vehicle.geometry.urdf_joint_table`) that their limits pin (:data:`PIN_TOL`):
    each is locked there, as ``locked_joints`` are, by every consumer of the vehicle file."""
    return {n: 0.5 * (j["lower"] + j["upper"]) for n, j in joints.items()
            if j["type"] in ("revolute", "prismatic") and j.get("lower") is not None and j.get("upper") is not None
            and abs(j["upper"] - j["lower"]) <= PIN_TOL}


def _scalar_or_array(name, v, n, *, allow_zero):
    """A non-negative (positive unless ``allow_zero``) scalar, or (n,) array; an array whose
    entries are all equal becomes that scalar."""
    a = as_floats(name, v, f"expected a real number or {n} of them (one per rotor)")
    if a.ndim > 1 or (a.ndim == 1 and a.shape != (n,)):
        raise ValueError(f"{name}: expected a real number or {n} of them (one per rotor), got {v!r}")
    a = np.asarray(require_positive(name, v, allow_zero=allow_zero))
    if a.ndim == 0:
        return float(a)
    if np.all(a == a[0]):
        return float(a[0])
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Px4Section:
    """The vehicle file's optional ``px4:`` section: what PX4 is told about the vehicle beyond the
    rotor geometry (doc/reference/vehicle_file.md, "PX4"). PX4 facts: PX4-Autopilot main at
    b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf (doc/reference/px4_allocation.md).

    ``thr_mdl_fac``: PX4's ``THR_MDL_FAC`` in [0, 1] (``src/lib/mixer_module/motor_params.c``):
    relative thrust ``u = f s^2 + (1 - f) s`` of the motor signal ``s``. ``mc_airmode``: PX4's
    ``MC_AIRMODE`` 0, 1 or 2 (``src/lib/mixer_module/params.c``, default 0). ``ct``: the
    ``CA_ROTORn_CT`` [N] PX4 is given, (n,), or None: each rotor's full thrust
    ``motor_constant * max_rot_velocity^2`` (``src/modules/control_allocator/module.yaml``; the
    allocator's mix depends only on the ratios, and on the 0.05 weak-row threshold).
    """

    thr_mdl_fac: float
    mc_airmode: int = 0
    ct: tuple | None = None


@dataclass(frozen=True)
class RotorParams:
    """Rotor constants, named and defined as in gz-sim's ``MulticopterMotorModel`` (SI units).

    motor_constant c_f [N s^2/rad^2]: thrust ``c_f omega |omega|``; moment_constant [m]: drag torque
    ``moment_constant * thrust``; time_constant_up / time_constant_down [s]: the speed filter's
    time constants when accelerating / decelerating; max_rot_velocity [rad/s]: the reference is
    limited to it; min_rot_velocity [rad/s]: idle speed (0: none); rotor_drag_coefficient [N s/m
    per rad/s], rolling_moment_coefficient [N m s/m per rad/s]: airspeed terms
    ``-|omega| coef v_perp``; turning_direction: ``"ccw"``/``"cw"`` per rotor.

    Every constant of ``PER_ROTOR`` is a float (the same for every rotor) or an (n,) array (it
    differs); :meth:`per_rotor` always gives the (n,) array.
    """

    turning_direction: tuple
    motor_constant: float = 1.269e-05
    moment_constant: float = 0.016754
    time_constant_up: float = 0.0182
    time_constant_down: float = 0.0182
    max_rot_velocity: float = 1000.0
    rotor_drag_coefficient: float = 0.0
    rolling_moment_coefficient: float = 0.0
    min_rot_velocity: float = 0.0

    def __post_init__(self):
        td = self.turning_direction
        td = (td,) if isinstance(td, str) else tuple(td)
        if not td or any(s not in _SPIN for s in td):
            raise ValueError(f"turning_direction: expected a non-empty list of 'ccw'/'cw', got {self.turning_direction!r}")
        object.__setattr__(self, "turning_direction", td)
        for k in PER_ROTOR:
            object.__setattr__(self, k, _scalar_or_array(k, getattr(self, k), len(td), allow_zero=k in _ZERO_OK))
        if np.any(self.per_rotor("min_rot_velocity") >= self.per_rotor("max_rot_velocity")):
            raise ValueError(f"min_rot_velocity: must be below max_rot_velocity, got {self.min_rot_velocity!r} and "
                             f"{self.max_rot_velocity!r}")

    @property
    def n_rotors(self) -> int:
        return len(self.turning_direction)

    def per_rotor(self, name) -> np.ndarray:
        """(n,) the constant ``name`` (one of ``PER_ROTOR``) of every rotor."""
        if name not in PER_ROTOR:
            raise ValueError(f"name: expected one of {', '.join(PER_ROTOR)}, got {name!r}")
        return np.broadcast_to(np.asarray(getattr(self, name), float), (self.n_rotors,)).copy()

    @property
    def spin(self) -> np.ndarray:
        """(n,) ``s_i`` of the drag torque ``s_i c_d omega^2`` about the rotor z axis (ccw -> -1)."""
        return np.array([_SPIN[s] for s in self.turning_direction])

    @property
    def drag_constant(self):
        """``c_d = moment_constant * motor_constant`` [N m s^2/rad^2]: float, or (n,) when they differ."""
        return self.moment_constant * self.motor_constant


@dataclass(frozen=True)
class ElasticJointParams:
    """Series-elastic joints (Spong's reduced model): ``B theta'' + K (theta - q) = u``.

    joints: joint names (may be empty: a rigid or absent arm); stiffness K [N m/rad] (> 0);
    motor_inertia B [kg m^2] (> 0); max_motor_torque [N m] (> 0, the saturation of ``u``; a float,
    or an (n_el,) array when the joints differ; ``inf``: not limited here).
    """

    joints: tuple
    stiffness: np.ndarray
    motor_inertia: np.ndarray
    max_motor_torque: float = 10.0

    def __post_init__(self):
        j = tuple(self.joints)
        if len(set(j)) != len(j) or not all(isinstance(x, str) for x in j):
            raise ValueError(f"elastic joints: expected distinct joint names, got {self.joints!r}")
        object.__setattr__(self, "joints", j)
        for name in ("stiffness", "motor_inertia"):
            raw, want = getattr(self, name), f"expected {len(j)} finite positive values"
            v = np.asarray(require_positive(name, raw, problem=want)).reshape(-1)
            if v.size == 1 and len(j) > 1:
                v = np.full(len(j), v[0])
            if v.shape != (len(j),):
                raise ValueError(f"{name}: {want}, got {raw!r}")
            object.__setattr__(self, name, v)
        m, want = self.max_motor_torque, f"expected a positive number or {len(j)} of them"
        a = np.asarray(require_positive("max_motor_torque", m, allow_inf=True, problem=want))
        if a.ndim > 1 or (a.ndim == 1 and a.shape != (len(j),)):
            raise ValueError(f"max_motor_torque: {want}, got {m!r}")
        if a.ndim == 1:
            if a.size and np.all(a == a[0]):
                a = a[0]
            else:
                a.setflags(write=False)
        object.__setattr__(self, "max_motor_torque", float(a) if a.ndim == 0 else a)

    def natural_frequencies(self) -> np.ndarray:
        """(n,) ``sqrt(K/B)`` [rad/s]: the motor's frequency against a locked link."""
        return np.sqrt(self.stiffness / self.motor_inertia)


# the URDF joint tables of the models made by ActuationConfig.load_model (for effort_limits)
_MODEL_JOINTS = weakref.WeakKeyDictionary()


def _did_you_mean(name, options):
    m = difflib.get_close_matches(str(name), [str(o) for o in options], n=1)
    return f" (did you mean {m[0]!r}?)" if m else ""


@dataclass(frozen=True)
class ActuationConfig:
    """A vehicle file (doc/reference/vehicle_file.md), or an old actuation YAML
    (``config/tilthex.yaml``, ``config/hexarotor.yaml``): rotors, their constants, joints, gains.

    ``rotor_geometry`` says where the rotor frames come from: ``"tilthex"`` (the URDF links
    ``<rotor_prefix><i>`` when the URDF has them, else the generator of eq. (28) from
    ``arm_length``, ``alpha``, ``beta``), ``"list"`` (``rotor_poses``, from the file) or
    ``"from_urdf"`` (the URDF links matching ``rotor_regex``, in natural order).
    """

    rotors: RotorParams
    elastic: ElasticJointParams
    rotor_prefix: str = "rotor_"
    arm_length: float = 0.25
    alpha: np.ndarray = field(default_factory=lambda: np.radians([20.0, -20.0] * 3))
    beta: np.ndarray = field(default_factory=lambda: np.zeros(6))
    rotor_velocity_slowdown_sim: float = 10.0
    rotor_mass: float = 0.005
    rotor_geometry: str = "tilthex"
    rotor_poses: np.ndarray | None = None        # (n, 4, 4) in the base link, rotor_geometry "list"
    rotor_names: tuple | None = None             # names of the listed rotors ("list")
    rotor_regex: str | None = None               # "from_urdf"
    joint_actuation: dict = field(default_factory=dict)
    gains_spec: dict | None = None
    control_period: float = 0.001
    base_link: str | None = None
    source_path: Path | None = None
    extra_locked_joints: tuple = ()
    schema: int = 1                              # 0: an old tilthex:/multirotor: file
    px4: Px4Section | None = None                # the optional px4: section (None: the file has none)

    # ---- names -------------------------------------------------------------------------------
    @property
    def rotor_links(self) -> tuple:
        """The rotor links: ``<rotor_prefix><i>`` (TiltHex form), the listed names ("list"), or
        ``()`` for ``from_urdf`` (known only with the URDF: use :meth:`rotor_frames`)."""
        if self.rotor_geometry == "list":
            return tuple(self.rotor_names)
        if self.rotor_geometry == "from_urdf":
            return ()
        return tuple(f"{self.rotor_prefix}{i}" for i in range(1, self.rotors.n_rotors + 1))

    @property
    def rotor_joints(self) -> tuple:
        """The TiltHex form's rotor joints ``<rotor_prefix><i>_joint``; ``()`` otherwise (see
        :meth:`locked_joints`)."""
        if self.rotor_geometry != "tilthex":
            return ()
        return tuple(f"{self.rotor_prefix}{i}_joint" for i in range(1, self.rotors.n_rotors + 1))

    def _where(self) -> str:
        return str(self.source_path) if self.source_path is not None else "vehicle"

    def _fail(self, key, msg):
        raise file_error(self._where(), key, msg)

    def refusal(self, model, exc) -> ValueError:
        """``exc``, a ValueError of a step built on this file and ``model``, as the refusal to
        report: the allocation's (``Allocation.from_frames``: ``A: ...``, the name of its argument)
        becomes :meth:`check`'s line for this file (``<file>: rotors: ...``, with what to change),
        or ``<file>: rotors: <problem>``; any other is returned as it is."""
        text = str(exc)
        if not text.startswith("A: "):
            return exc
        try:
            self.check(model)
        except ValueError as refused:
            return refused
        return file_error(self._where(), "rotors", text[3:].splitlines()[0])

    # ---- the URDF ----------------------------------------------------------------------------
    def _rotor_links_in(self, links) -> list:
        rx = re.compile(self.rotor_regex)
        names = sorted((ln for ln in links if rx.search(ln)), key=natural_key)
        if not names:
            self._fail("rotors.from_urdf", f"the pattern {self.rotor_regex!r} matches no link of the URDF (links: "
                       f"{', '.join(list(links)[:12])}{', ...' if len(links) > 12 else ''}); fix the regex")
        if len(names) != self.rotors.n_rotors:
            self._fail("rotors.turning_direction", f"{self.rotors.n_rotors} directions but the pattern "
                       f"{self.rotor_regex!r} matches {len(names)} links ({', '.join(names)}); give one per link")
        return names

    def locked_joints(self, urdf_source) -> tuple:
        """The joints to lock when loading ``urdf_source`` (path, xacro or XML string): the moving
        joints above the rotor links (TiltHex form: ``rotor_joints`` present in the URDF;
        ``from_urdf``: the parent joint of each matched link), then ``locked_joints`` of the file,
        then the joints the URDF's limits pin (:func:`pinned_joints`). Their positions:
        :meth:`locked_positions`."""
        return self._locked_in(*urdf_joint_table(urdf_source))

    def locked_positions(self, urdf_source) -> dict:
        """``{joint: position [rad or m]}`` of :meth:`locked_joints`: 0, or the position the URDF's
        limits pin the joint at (``load_urdf``'s and ``MujocoSim``'s ``locked_joints`` argument)."""
        return self._positions(*urdf_joint_table(urdf_source))

    def pinned_joints(self, urdf_source) -> dict:
        """``{joint: position}`` of the URDF's joints pinned by their limits (:func:`pinned_joints`):
        locked by :meth:`load_model` and the simulator, never an arm joint."""
        return pinned_joints(urdf_joint_table(urdf_source)[0])

    def _positions(self, joints, links) -> dict:
        pinned = pinned_joints(joints)
        return {j: pinned.get(j, 0.0) for j in self._locked_in(joints, links)}

    def flight_urdf(self, urdf_source, *, warn: bool = True) -> tuple:
        """``(source, corrections)``: the URDF every consumer of this vehicle file loads, the
        controller's model (:meth:`load_model`) and the simulator (``ActuatedSim``) alike:
        ``urdf_source`` itself, or, when MuJoCo would refuse a link's inertia (``A + B < C``), the
        URDF text with that link corrected (:func:`geodyn_ros.model.inertia.balance_link_inertias`)
        and the :class:`~geodyn_ros.model.inertia.InertiaCorrection` of each link (an
        ``InertiaCorrectionWarning`` each when ``warn``)."""
        from ..model.urdf import _read_source
        return self._flight(urdf_source, _read_source(urdf_source)[0], warn)

    @staticmethod
    def _flight(urdf_source, text, warn):
        import warnings

        from ..model.inertia import InertiaCorrectionWarning, balance_link_inertias
        fixed, corrections = balance_link_inertias(text)
        if warn:
            for c in corrections:     # stacklevel 3: the caller of load_model or flight_urdf
                warnings.warn(c.line(), InertiaCorrectionWarning, stacklevel=3)
        return (fixed if corrections else urdf_source), corrections

    def _locked_in(self, joints, links) -> tuple:
        moving = {n for n, j in joints.items() if j["type"] in _MOVING}
        if self.rotor_geometry == "tilthex":
            out = [j for j in self.rotor_joints if j in moving]
        elif self.rotor_geometry == "from_urdf":
            rl = set(self._rotor_links_in(links))
            out = [n for n, j in joints.items() if j["child"] in rl and n in moving]
        else:
            out = []
        for j in self.extra_locked_joints:
            if j not in moving:
                self._fail(f"locked_joints.{j}", "not a revolute, continuous or prismatic joint of the URDF"
                           f"{_did_you_mean(j, moving)}; fix the name or remove it")
            if j not in out:
                out.append(j)
        out += [j for j in pinned_joints(joints) if j not in out]
        return tuple(out)

    def load_model(self, urdf_source, **kw):
        """``gd.load_urdf(source, base_link=..., locked_joints=...)`` of :meth:`flight_urdf`'s source
        (the URDF, or its text with the inertias MuJoCo refuses corrected, with a warning) with the
        joints of :meth:`locked_joints` locked at :meth:`locked_positions` (added to
        ``kw["locked_joints"]``, a list locked at 0 or a mapping, if given) and the file's
        ``base_link`` (unless ``kw`` names one); remembers the URDF's effort limits for
        :meth:`effort_limits`.

        Refused in one line: the file's ``base_link`` not a link of the URDF
        (``<file>: base_link: no link 'base' in <urdf>; did you mean 'base_link'? (its links: ...)``),
        and a model with no forward dynamics, whose mass matrix is singular at every configuration
        (``<urdf>: link 'arm': no <inertial>, so joint 'J2' moves no mass ...; give it an <inertial>
        ...``: ``model.singular``), which could not be simulated or controlled."""
        import warnings

        from ..model.urdf import SingularMassMatrixWarning, _read_source, load_urdf, unknown_link_error
        text, where = _read_source(urdf_source)     # the URDF (or xacro) is expanded here and in load_urdf
        table = joint_table_of(text, where)
        given = kw.pop("locked_joints", None) or {}
        locked = dict(given) if isinstance(given, dict) else {j: 0.0 for j in given}
        for j, x in self._positions(*table).items():
            if j not in locked or x != 0.0:     # a pinned joint is locked where its limits pin it
                locked[j] = x
        if kw.get("base_link") is None and self.base_link is not None:
            if self.base_link not in table[1]:
                raise file_error(self._where(), "", unknown_link_error("base_link", self.base_link, where,
                                                                        list(table[1])))
            kw["base_link"] = self.base_link
        with warnings.catch_warnings():     # refused below, in the file's form, instead
            warnings.simplefilter("ignore", SingularMassMatrixWarning)
            model = load_urdf(self._flight(urdf_source, text, True)[0], locked_joints=locked, **kw)
        if model.singular:   # "<problem>; <fix>"
            problem, fix = model.singular.split("; ", 1)
            raise ValueError(f"{clip(where)}: {problem}: the vehicle has no forward dynamics to simulate or "
                             f"control; {fix}")
        _MODEL_JOINTS[model] = table[0]
        return model

    def rotor_frames(self, model) -> tuple:
        """``(names, frames)``: the rotor names and their (n, 4, 4) frames in the base link of
        ``model`` (loaded with :meth:`load_model`, or with the rotor joints locked)."""
        if self.rotor_geometry == "list":
            return tuple(self.rotor_names), np.array(self.rotor_poses, dtype=float)
        if self.rotor_geometry == "from_urdf":
            return rotor_frames_from_model(model, self._rotor_links_in(list(model.link_home)))
        links = self.rotor_links
        present = [ln for ln in links if ln in model.link_home]
        if len(present) == len(links):
            return rotor_frames_from_model(model, links)
        if present:
            self._fail("rotor_prefix", f"the URDF has the rotor links {', '.join(present)} but not "
                       f"{', '.join(ln for ln in links if ln not in present)}; give every rotor a link or none")
        return links, multirotor_frames(self.arm_length, self.alpha, self.beta)

    def effort_limits(self, model, urdf_source=None) -> np.ndarray:
        """(n,) per joint of ``model``: the file's ``max_torque`` (``joints:`` or the elastic
        ``max_motor_torque``), else the URDF ``<limit effort>`` (of ``urdf_source``, or of the URDF
        ``model`` was loaded from by :meth:`load_model`), else ``inf`` [N m, or N if prismatic]."""
        table = urdf_joint_table(urdf_source)[0] if urdf_source is not None else _MODEL_JOINTS.get(model, {})
        out = np.full(model.n_joints, np.inf)
        for k, name in enumerate(model.joint_names):
            spec = self.joint_actuation.get(name, {})
            if spec.get("max_torque") is not None:
                out[k] = spec["max_torque"]
            elif table.get(name, {}).get("effort") is not None:
                out[k] = table[name]["effort"]
        return out

    # ---- model-aware validation --------------------------------------------------------------
    def check(self, model) -> None:
        """Refuse (ValueError, one line naming the file and the key) a vehicle that cannot fly:
        a ``joints:`` entry or elastic joint not a joint of ``model``; a rotor link not found;
        a base link other than the file's; an allocation of rank below 4, or not 4 with every thrust
        along base z, or 6 (a rank 5 set is refused with the directions it lacks); thrust-to-weight
        ``sum(c_f,i max_i^2 axis_i.z) / (m g)`` below ``MIN_THRUST_TO_WEIGHT`` (base level); a
        hover (base level, home configuration, the least-squares ``u = A^+ W``) needing a rotor
        speed above its max or a negative ``omega^2``."""
        if self.base_link is not None and model.base_link != self.base_link:
            self._fail("base_link", f"{self.base_link!r} but the model's base is {model.base_link!r}; load it with "
                       "ActuationConfig.load_model or fix the name")
        names = set(model.joint_names)
        pinned = pinned_joints(_MODEL_JOINTS.get(model, {}))
        for j in dict.fromkeys(list(self.joint_actuation) + list(self.elastic.joints)):
            if j in pinned:
                self._fail(f"joints.{j}" if self.schema >= 1 else "elastic_joints.joints",
                           f"{j!r} is pinned by its URDF limits (lower = upper = {pinned[j]:g}) and locked there, "
                           "not an arm joint; remove it")
            if j not in names:
                self._fail(f"joints.{j}" if self.schema >= 1 else "elastic_joints.joints",
                           f"{clip(repr(j), 60)} is not a movable joint of the model{_did_you_mean(j, names)} "
                           f"(joints: {clip(', '.join(model.joint_names) or 'none')}); fix the name or remove it")
        try:
            _, F = self.rotor_frames(model)
        except ValueError as exc:
            if str(exc).startswith(self._where()):
                raise
            self._fail("rotors", f"{exc}; lock the rotor joints (ActuationConfig.load_model) or fix the names")
        rp = self.rotors
        if len(F) != rp.n_rotors:
            self._fail("rotors", f"{len(F)} rotor frames but {rp.n_rotors} turning directions; give one per rotor")
        A = rotor_wrench_columns(F, rp.per_rotor("motor_constant"), rp.spin * rp.per_rotor("moment_constant")
                                 * rp.per_rotor("motor_constant"))
        rank, collinear, missing = allocation_rank(A)
        turning = set(rp.turning_direction)
        if collinear and rank < 4 and len(turning) == 1 and rp.n_rotors >= 4:
            d = turning.pop()
            self._fail("rotors" if self.schema >= 1 else "turning_direction",
                       f"every rotor turns {d}, so the rotors cannot make a yaw moment (a collinear allocation of "
                       f"rank {rank} < 4); give half of them turning_direction {'cw' if d == 'ccw' else 'ccw'} "
                       "(neighbours turning opposite ways)")
        if not ((collinear and rank == 4) or (not collinear and rank == 6)):
            what = (f"a collinear set (every thrust along base z) of rank {rank} < 4" if collinear else
                    f"rank {rank}" + (" < 4" if rank < 4 else " (neither 6 nor a collinear 4)"))
            self._fail("rotors", f"the allocation matrix has {what}: the rotors cannot produce [{missing}]; place and "
                       "orient them so that they produce thrust and three moments (collinear, rank 4) or any wrench "
                       "(rank 6)")
        umax = rp.per_rotor("max_rot_velocity") ** 2
        m = model.total_mass
        weight = m * GRAVITY
        tw = float(np.sum(A[5] * umax)) / weight
        if tw < MIN_THRUST_TO_WEIGHT:
            self._fail("constants.max_rot_velocity", f"thrust-to-weight {format_against(tw, MIN_THRUST_TO_WEIGHT)} < "
                       f"{MIN_THRUST_TO_WEIGHT:g} (full thrust {tw * weight:.4g} N along base z, weight "
                       f"{weight:.4g} N); raise max_rot_velocity or "
                       "motor_constant, or lighten the vehicle")
        c = (model.mass @ model.com) / m                      # home CoM in the base link
        f = np.array([0.0, 0.0, weight])
        W = np.concatenate([np.cross(c, f), f])               # the wrench that holds the weight
        M, w = (A[[5, 0, 1, 2]], W[[5, 0, 1, 2]]) if collinear else (A, W)
        u = np.linalg.pinv(M) @ w
        for i in range(rp.n_rotors):
            if u[i] < 0 or u[i] > umax[i]:
                om = np.sqrt(abs(u[i]))
                self._fail(f"rotors[{i}]", (f"hover needs omega = {format_against(om, np.sqrt(umax[i]))} rad/s > "
                           f"max_rot_velocity {np.sqrt(umax[i]):g}" if u[i] > 0 else f"hover needs a negative thrust "
                           f"(omega^2 = {u[i]:.4g} rad^2/s^2): the CoM {np.round(c, 4).tolist()} m lies outside "
                           "what the rotors can hold") + "; raise max_rot_velocity or motor_constant, or move "
                           "the rotors around the centre of mass")


def default_actuation_config_path() -> Path:
    """``config/tilthex.yaml`` of the source tree, else of the installed share directory."""
    here = Path(__file__).resolve().parents[2] / "config" / "tilthex.yaml"
    if here.is_file():
        return here
    from ..model.resources import urdf_search_dirs
    for d in urdf_search_dirs():
        p = Path(d).parent / "config" / "tilthex.yaml"
        if p.is_file():
            return p
    raise ValueError("config: config/tilthex.yaml not found in the source tree or share/geodyn_ros")


#: top-level keys of the rotor section of an old actuation YAML, in the order they are looked for
ROTOR_SECTIONS = ("multirotor", "tilthex")
