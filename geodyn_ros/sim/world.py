"""The world the simulated vehicle flies in, when it is not the controller's model (issue 53, item 1).

A :class:`World` (one entry of ``config/world.yaml``, :mod:`geodyn_ros.sim.world_file`) states

* a **model error** (:class:`~geodyn_ros.sim.model_error.ModelErrorSpec`): masses, centres of
  mass and inertias per link, rotor constants and lags per rotor, spring stiffness and motor
  inertia per elastic joint;
* **wind** (:class:`WindSpec`): a mean (MIL-F-8785C's logarithmic profile, or a given vector) plus
  Dryden turbulence (:mod:`geodyn_ros.sim.wind`), seeded;
* **drag**: quadratic body drag of the air-relative velocity on the base and on any link
  (:class:`LinkDrag`), and the linear **rotor drag** of Faessler, Franchi and Scaramuzza (RA-L
  2018) on the base (:class:`RotorDrag`): the airspeed term the flat map can carry, so its
  coefficients are public (``World.rotor_drag``) for a controller that models it;
* **pushes** (:class:`Push`): a force given as a function of time on any link, at a stated point.

``World.draw(seed, source, config)`` draws one :class:`Perturbation` for a vehicle (its URDF and
:class:`~geodyn_ros.vehicle.ActuationConfig`): the drawn model error, the perturbed URDF text and
config, the nominal model the controller keeps (:attr:`Perturbation.model`), and the seeded wind.
:meth:`Perturbation.build` makes the plant: an :class:`~geodyn_ros.sim.ActuatedSim` of the
perturbed robot with :class:`WorldForces` attached. :meth:`Perturbation.lines` states what the seed
drew (the report prints them)::

    from geodyn_ros.sim.world_file import world_preset
    pert = world_preset("thrust_stand").draw(3, urdf, cfg)
    print("\\n".join(pert.lines()))
    sim = pert.build(timestep=1e-3)          # the plant; the controller uses pert.model and cfg
    ...
    w = sim.external_wrench()                # the wrench the world applies now (ExternalWrench)

Forces (:class:`WorldForces`, applied through MuJoCo's ``xfrc_applied``: a force and a torque at
each body's centre of mass, world axes, held over one step): evaluated at every simulator step
from the state and time at its start (the zero-order hold of the rotors' airspeed terms in
:mod:`geodyn_ros.sim.actuated`), and after a :meth:`~geodyn_ros.sim.MujocoSim.reset`.
``WorldForces`` owns ``xfrc_applied`` (it writes every entry). Velocities of points come from
MuJoCo's own kinematics of the current state (``mj_kinematics``, ``mj_comPos``, ``mj_comVel``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
import mujoco
import numpy as np

from .model_error import ModelErrorSpec, arm_links
from .mujoco_sim import ExternalWrench
from .wind import (MIN_AIRSPEED, Z0_CATEGORY_C, DrydenTurbulence, Wind, dryden_low_altitude, log_profile, onset_profile,
                   quadratic_drag, rotor_drag)

__all__ = ["World", "WindSpec", "LinkDrag", "RotorDrag", "Push", "Perturbation", "WorldForces", "ExternalWrench",
           "AIR_DENSITY", "HUMMINGBIRD_CDA", "HUMMINGBIRD_RADIUS", "nominal_model", "WORLD_SEED_KEY"]

#: [kg/m^3] ISA sea-level air density (ICAO standard atmosphere, 15 degC, 101325 Pa)
AIR_DENSITY = 1.225
#: [m^2] C_D A of the AscTec Hummingbird's frame along its body x, y, z axes: RotorPy's parasitic drag
#: c_Dx = c_Dy = 0.5e-2, c_Dz = 1e-2 N/(m/s)^2 (spencerfolk/rotorpy, rotorpy/vehicles/hummingbird_params.py)
#: as C_D A = 2 c_D / rho; the ``auto`` body drag of a base scales it by (L / HUMMINGBIRD_RADIUS)^2
HUMMINGBIRD_CDA = (2 * 0.5e-2 / AIR_DENSITY, 2 * 0.5e-2 / AIR_DENSITY, 2 * 1e-2 / AIR_DENSITY)
#: [m] the Hummingbird's rotor distance from its centre (the same file: d = 0.17 m)
HUMMINGBIRD_RADIUS = 0.17
#: [s] the default rise of a world's wind from the flight's start (:class:`WindSpec`)
WIND_ONSET_S = 2.0
#: the second entropy word of a world's seed: its draws are independent of the sensor streams' of the same seed
WORLD_SEED_KEY = 0x574F524C
_G = 9.81


@dataclass(frozen=True)
class WindSpec:
    """The wind of a world (:mod:`geodyn_ros.sim.wind`).

    w20 [m/s]: the wind speed at 20 ft, MIL-F-8785C's intensity parameter (the turbulence's sigmas,
    and the mean of ``mean="log_profile"``); altitude [m] above ground (the scale lengths and the
    profile use it); direction_deg: the horizontal direction the mean wind blows toward, from world
    ``+x`` about ``+z``; mean: ``"log_profile"`` (the mean ``w20 ln(h/z0)/ln(20 ft/z0)`` along
    ``direction_deg``) or a (3,) velocity [m/s] in world axes; turbulence: Dryden on (True) or off;
    airspeed [m/s]: the speed the frozen field passes at (None: the mean's horizontal speed, at least
    :data:`~geodyn_ros.sim.wind.MIN_AIRSPEED`); z0 [m]: the profile's roughness length; onset [s]:
    the whole wind rises from 0 over this time from the flight's first step
    (:func:`~geodyn_ros.sim.wind.onset_profile`, a half cosine). Default :data:`WIND_ONSET_S`: a
    vehicle meets the wind as it climbs through the profile, which is 0 at ``z0``, in about the time
    of a take-off (2 m at 1 m/s); 0 steps the whole mean wind onto a vehicle trimmed in still air,
    a start no field flight has (a 6 m/s step tips the collinear hexarotor 26 degrees).
    """

    w20: float = 0.0
    altitude: float = 2.0
    direction_deg: float = 0.0
    mean: object = "log_profile"
    turbulence: bool = True
    airspeed: float | None = None
    z0: float = Z0_CATEGORY_C
    onset: float = WIND_ONSET_S

    def mean_velocity(self) -> np.ndarray:
        """(3,) the mean wind [m/s], world axes."""
        if isinstance(self.mean, str):
            s = log_profile(self.w20, self.altitude, self.z0)
            a = math.radians(self.direction_deg)
            return np.array([s * math.cos(a), s * math.sin(a), 0.0])
        return np.array(self.mean, dtype=float).reshape(3)

    def passing_speed(self) -> float:
        """``V`` [m/s] of Taylor's frozen field (class docstring)."""
        if self.airspeed is not None:
            return float(self.airspeed)
        m = self.mean_velocity()
        return max(float(math.hypot(m[0], m[1])), MIN_AIRSPEED)

    def make(self, timestep: float, seed_sequence) -> Wind:
        """The :class:`~geodyn_ros.sim.wind.Wind` sampled every ``timestep`` [s], its turbulence
        drawn from ``seed_sequence`` (a ``numpy.random.SeedSequence``)."""
        turb = None
        if self.turbulence and self.w20 > 0:
            turb = DrydenTurbulence(dryden_low_altitude(self.altitude, self.w20), self.passing_speed(), timestep,
                                    seed_sequence)
        return Wind(self.mean_velocity(), turb, onset_steps=int(round(self.onset / timestep)))

    def line(self) -> str:
        m = self.mean_velocity()
        out = f"wind: mean [{', '.join(f'{x:.2f}' for x in m)}] m/s"
        if isinstance(self.mean, str):
            out += f" (W20 {self.w20:.2f} m/s, log profile at {self.altitude:g} m)"
        if self.turbulence and self.w20 > 0:
            s = dryden_low_altitude(self.altitude, self.w20)
            out += (f", Dryden sigma u/v/w {s.sigma_u:.2f}/{s.sigma_v:.2f}/{s.sigma_w:.2f} m/s, L u/v/w "
                    f"{s.L_u:.1f}/{s.L_v:.1f}/{s.L_w:.1f} m, carried at {self.passing_speed():.2f} m/s")
        out += f", rising over {self.onset:g} s" if self.onset > 0 else ", at full strength from the start"
        return out


@dataclass(frozen=True)
class LinkDrag:
    """Quadratic drag on ``link`` (``"base"``: the base link): ``cda`` (3,) [m^2] C_D A along the
    link's axes, or ``"auto"`` (the base only: :data:`HUMMINGBIRD_CDA` scaled by ``(L /
    HUMMINGBIRD_RADIUS)^2``, ``L`` the largest rotor distance from the base origin); ``point`` (3,)
    [m] in the link frame where it acts and whose air-relative velocity it opposes (None: the
    link's centre of mass)."""

    link: str = "base"
    cda: object = "auto"
    point: tuple | None = None


@dataclass(frozen=True)
class RotorDrag:
    """The linear rotor drag ``f = -m R diag(d) R^T v_r`` (Faessler et al. 2018) on the base: ``d``
    (3,) [1/s] mass-normalised coefficients along the base axes, ``m`` the simulated vehicle's
    mass, ``v_r`` the air-relative velocity of ``point`` ((3,) [m] in the base frame, or
    ``"rotors"``: the centroid of the rotor frames' origins), where the force acts."""

    d: tuple = (0.0, 0.0, 0.0)
    point: object = "rotors"


@dataclass(frozen=True)
class Push:
    """A force on ``link`` (``"base"``: the base link) at ``point`` (3,) [m] in the link frame:
    ``force`` (3,) [N] in world axes (or, with ``weight_fraction``, times the nominal weight
    ``m g``: ``[0, 0.1, 0]`` is 10 % of the weight along ``+y``), or a callable ``f(t) -> (3,)``
    [N] (then ``start``/``duration``/``ramp`` are not used). The profile: 0 before ``start`` [s],
    a half-cosine rise over ``ramp`` [s], held, a half-cosine fall over ``ramp`` ending at
    ``start + duration`` (``inf``: never), 0 after."""

    link: str
    force: object
    point: tuple = (0.0, 0.0, 0.0)
    start: float = 0.0
    duration: float = math.inf
    ramp: float = 0.0
    weight_fraction: bool = False

    def profile(self, t: float) -> float:
        """The factor in [0, 1] of the force at time ``t`` [s]."""
        t0, t1, r = self.start, self.start + self.duration, self.ramp
        if t < t0 or t >= t1:
            return 0.0
        if r > 0.0:
            if t < t0 + r:
                return onset_profile((t - t0) / r)
            if t > t1 - r:
                return onset_profile((t1 - t) / r)
        return 1.0

    def force_at(self, t: float, weight: float = 1.0) -> np.ndarray:
        """(3,) [N] world axes at time ``t`` (``weight`` [N]: the nominal ``m g``, for ``weight_fraction``)."""
        if callable(self.force):
            f = np.asarray(self.force(t), dtype=float).reshape(3)
            if not np.all(np.isfinite(f)):
                raise ValueError(f"force: the push on {self.link} returned a non-finite force at t = {t:g} s: {f}")
            return f
        return np.asarray(self.force, float) * (weight if self.weight_fraction else 1.0) * self.profile(t)


@dataclass(frozen=True)
class World:
    """One world (module docstring): ``name``, ``model_error``, ``wind`` (a :class:`WindSpec` or None),
    ``drag`` (tuple of :class:`LinkDrag`), ``rotor_drag`` (a :class:`RotorDrag` or None), ``pushes``
    (tuple of :class:`Push`), ``air_density`` [kg/m^3], ``description``, ``where`` (the file it was read
    from, or ``"world"``)."""

    name: str = "exact"
    model_error: ModelErrorSpec = field(default_factory=ModelErrorSpec)
    wind: WindSpec | None = None
    drag: tuple = ()
    rotor_drag: RotorDrag | None = None
    pushes: tuple = ()
    air_density: float = AIR_DENSITY
    description: str = ""
    where: str = "world"         # the file it was read from (names it in a refusal at draw time)

    @property
    def exact(self) -> bool:
        """True: the simulator is the controller's model (nothing drawn, no force): the loops run as
        without a world, bit for bit."""
        return self.model_error.empty and self.wind is None and not self.drag and self.rotor_drag is None \
            and not self.pushes

    def draw(self, seed: int, source, config) -> "Perturbation":
        """The :class:`Perturbation` of ``seed`` (an integer >= 0) for the vehicle of URDF ``source``
        (path, xacro or XML text) and ``config`` (an ActuationConfig)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
        return Perturbation(self, int(seed), source, config)


def nominal_model(source, config):
    """``(model, flight source)``: the model :class:`~geodyn_ros.sim.ActuatedSim` ``(source, config)``
    loads (the flight URDF of ``config``, its locked joints, its base link): the controller's."""
    from ..model.urdf import load_urdf
    src, _ = config.flight_urdf(source, warn=False)
    return load_urdf(src, base_link=config.base_link, locked_joints=config.locked_positions(src)), src


class Perturbation:
    """One draw of a :class:`World` for one vehicle (:meth:`World.draw`).

    Attributes
    ----------
    world : World
    seed : int
    model : geodyn_ros.Model
        The nominal model (what the controller inverts; :func:`nominal_model`).
    config : ActuationConfig
        The nominal config (the controller's).
    model_error : ModelError
        The drawn errors (:mod:`geodyn_ros.sim.model_error`).
    plant_source : str or path
        The URDF the simulator loads: the perturbed text, or the nominal flight source when no
        link is perturbed.
    plant_config : ActuationConfig
        The config the simulator uses (perturbed rotor and joint constants).
    rotor_drag : RotorDrag or None
        The plant's rotor drag (``world.rotor_drag``): what a controller may carry.
    """

    def __init__(self, world: World, seed: int, source, config):
        from ..model.urdf import _read_source
        self.world, self.seed, self.config = world, seed, config
        self.model, src = nominal_model(source, config)
        self._nominal_text = _read_source(src)[0]
        ss = np.random.SeedSequence((seed, WORLD_SEED_KEY)).spawn(2)
        self._wind_seed = ss[1]
        self.model_error = world.model_error.draw(
            ss[0], self._nominal_text, self.model.base_link, arm_links(self.model),
            config.rotors.n_rotors, config.elastic.joints, where=f"{world.where}: worlds.{world.name}.model_error")
        self.plant_source = self.model_error.urdf(self._nominal_text) if self.model_error.bodies else src
        self.plant_config = self.model_error.config(config)
        self.rotor_drag = world.rotor_drag

    @property
    def exact(self) -> bool:
        return self.world.exact

    def build(self, **sim_kwargs):
        """The plant: ``ActuatedSim(plant_source, plant_config, **sim_kwargs)`` with the world's
        :class:`WorldForces` attached (none for a world without forces). ``sim.model`` is the
        perturbed robot (the true centre of mass); the controller keeps :attr:`model`."""
        from .actuated import ActuatedSim
        sim = ActuatedSim(self.plant_source, self.plant_config, **sim_kwargs)
        w = self.world
        if w.wind is not None or w.drag or w.rotor_drag is not None or w.pushes:
            wind = None if w.wind is None else w.wind.make(sim.timestep, self._wind_seed)
            sim.attach_world(WorldForces(sim, wind=wind, drag=w.drag, rotor_drag=w.rotor_drag, pushes=w.pushes,
                                         air_density=w.air_density, weight=self.model.total_mass * _G))
        return sim

    def lines(self, width: int | None = 100) -> list:
        """What this seed drew (model error per link, rotor constant and joint constant; wind, drags,
        pushes), one entry each, headed by the world's name and the seed; an entry longer than
        ``width`` columns is wrapped onto indented continuation lines (None: never)."""
        raw = self._raw_lines()
        return raw if width is None else [w for ln in raw for w in _wrap(ln, width)]

    def _raw_lines(self) -> list:
        w = self.world
        rotor_names = tuple(self.config.rotor_frames(self.model)[0])
        out = [f"world {w.name}, seed {self.seed}" + (f": {w.description}" if w.description else "")]
        out += ["  " + ln for ln in self.model_error.lines(self._nominal_text, rotor_names, self.config)]
        if w.wind is not None:
            out.append("  " + w.wind.line())
        frames = np.asarray(self.config.rotor_frames(self.model)[1], float)
        L = float(np.max(np.linalg.norm(frames[:, :3, 3], axis=1))) if len(frames) else 0.0
        for d in w.drag:
            cda = (f"auto = {_vec(np.round(np.array(HUMMINGBIRD_CDA) * (L / HUMMINGBIRD_RADIUS) ** 2, 5))}"
                   if isinstance(d.cda, str) else _vec(d.cda))
            out.append(f"  drag on {d.link}: C_D A {cda} m^2"
                       f"{'' if d.point is None else ' at ' + _vec(d.point) + ' m'}, air density {w.air_density:g} "
                       "kg/m^3")
        if w.rotor_drag is not None:
            pt = w.rotor_drag.point
            out.append(f"  rotor drag: d = {_vec(w.rotor_drag.d)} 1/s (Faessler et al. 2018) at "
                       f"{pt if isinstance(pt, str) else _vec(pt) + ' m'}")
        for p in w.pushes:
            f = "f(t)" if callable(p.force) else f"{_vec(p.force)}{' x weight' if p.weight_fraction else ' N'}"
            until = "on" if math.isinf(p.duration) else f"for {p.duration:g} s"
            out.append(f"  push on {p.link} at {_vec(p.point)} m: {f} from t = {p.start:g} s {until} "
                       f"(ramp {p.ramp:g} s)")
        if len(out) == 1:
            out.append("  nothing perturbed: the simulator is the model")
        return out

    def as_dict(self) -> dict:
        """The draw as plain JSON types: world, seed, the drawn model error."""
        return {"world": self.world.name, "seed": self.seed, "model_error": self.model_error.as_dict(),
                "lines": self.lines(None)}


def _wrap(line: str, width: int) -> list:
    """``line`` cut after its ``", "`` separators (outside brackets) into lines of at most ``width``
    columns (a piece longer than that at a space), continuation lines indented 4 more than the first."""
    import textwrap
    lead = " " * (len(line) - len(line.lstrip()) + 4)
    out, cur = [], ""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(line):          # the ", " outside brackets and parentheses
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if depth == 0 and line.startswith(", ", i):
            pieces.append(line[start:i])
            start = i + 2
    pieces.append(line[start:])
    for piece in pieces:
        cand = piece if not cur else f"{cur}, {piece}"
        if len(cand) <= width or not cur:
            cur = cand
        else:
            out.append(cur + ",")
            cur = lead + piece
    out.append(cur)
    return [w for ln in out for w in (textwrap.wrap(ln, width, subsequent_indent=lead, break_on_hyphens=False)
                                      if len(ln) > width else [ln])]


def _vec(v) -> str:
    return "[" + ", ".join(f"{float(x):g}" for x in v) + "]"


class WorldForces:
    """The forces of a world on a :class:`~geodyn_ros.sim.MujocoSim` (module docstring).

    Parameters
    ----------
    sim : MujocoSim or ActuatedSim
        The simulator (links are its MuJoCo bodies, named as the URDF links).
    wind : geodyn_ros.sim.wind.Wind or None
        The air's velocity (None: still air).
    drag : sequence of LinkDrag
    rotor_drag : RotorDrag or None
    pushes : sequence of Push
    air_density : float [kg/m^3]
    weight : float [N]
        ``m g`` of the nominal vehicle, for a push given as a fraction of the weight (default: the
        simulator's own mass times 9.81).

    Notes
    -----
    Attach with :meth:`~geodyn_ros.sim.MujocoSim.attach_world`; the simulator calls :meth:`apply`
    after every step and reset.
    """

    def __init__(self, sim, *, wind=None, drag=(), rotor_drag=None, pushes=(), air_density=AIR_DENSITY,
                 weight=None):
        m = sim.mj_model
        self.wind = wind
        self.air_density = float(air_density)
        if not (math.isfinite(self.air_density) and self.air_density > 0):
            raise ValueError(f"air_density: expected a finite density > 0 [kg/m^3], got {air_density!r}")
        self.weight = float(sim.model.total_mass * _G if weight is None else weight)
        self.mass = float(sim.model.total_mass)
        self._base = sim.model.base_link
        self._base_body = sim._base_body
        frames = getattr(sim, "rotor_frames", None)
        self._rotor_centroid = (np.zeros(3) if frames is None or not len(frames)
                                else np.asarray(frames, float)[:, :3, 3].mean(axis=0))
        L = 0.0 if frames is None or not len(frames) else float(np.max(np.linalg.norm(
            np.asarray(frames, float)[:, :3, 3], axis=1)))
        self._drags = []
        for dg in drag:
            b = self._body(m, dg.link, "drag")
            if isinstance(dg.cda, str):
                if dg.cda != "auto" or b != self._base_body:
                    raise ValueError(f"drag: cda {dg.cda!r} on {dg.link}: 'auto' is only for the base (give C_D A [m^2])")
                if L <= 0.0:
                    raise ValueError("drag: cda 'auto' needs the rotor frames (an ActuatedSim) to scale the base's size")
                cda = np.array(HUMMINGBIRD_CDA) * (L / HUMMINGBIRD_RADIUS) ** 2
            else:
                cda = np.broadcast_to(np.asarray(dg.cda, float), (3,)).copy()
            pt = np.array(m.body_ipos[b], float) if dg.point is None else np.asarray(dg.point, float).reshape(3)
            self._drags.append((b, pt, cda))
        self._rotor = None
        if rotor_drag is not None:
            pt = self._rotor_centroid if isinstance(rotor_drag.point, str) else np.asarray(rotor_drag.point, float)
            self._rotor = (np.asarray(rotor_drag.d, float).reshape(3), pt.reshape(3))
        self._pushes = [(self._body(m, p.link, "push"), np.asarray(p.point, float).reshape(3), p) for p in pushes]
        self._names = {i: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(m.nbody)}
        self._last = ([], sim.time, np.zeros(3))      # ((source, body, point world, force world), time, wind)
        self._vel = np.zeros(6)
        self._qfrc = np.zeros(m.nv)

    def _body(self, m, link, what) -> int:
        name = self._base if link == "base" else link
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        if b < 0 or name.startswith("geodyn_sim_"):
            raise ValueError(f"{what}: {link!r} is not a link of the simulated robot")
        return b

    def _point_velocity(self, m, d, b, p_world) -> np.ndarray:
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, self._vel, 0)   # (w, v at xpos), world axes
        return self._vel[3:] + np.cross(self._vel[:3], p_world - d.xpos[b])

    def wind_at(self, t: float, timestep: float) -> np.ndarray:
        """(3,) the wind [m/s] at time ``t`` (step ``round(t / timestep)``)."""
        if self.wind is None:
            return np.zeros(3)
        return self.wind.velocity(int(round(t / timestep)))

    def apply(self, sim) -> None:
        """Evaluate every force at the simulator's current time and state and write ``xfrc_applied``."""
        m, d = sim.mj_model, sim.mj_data
        t = float(d.time)
        mujoco.mj_kinematics(m, d)
        moving_air = self._drags or self._rotor is not None
        if moving_air:
            mujoco.mj_comPos(m, d)
            mujoco.mj_comVel(m, d)
        w = self.wind_at(t, sim.timestep) if moving_air else np.zeros(3)
        out = []
        for b, pt, cda in self._drags:
            R = d.xmat[b].reshape(3, 3)
            p = d.xpos[b] + R @ pt
            v_r = self._point_velocity(m, d, b, p) - w
            out.append(("wind", b, p, R @ quadratic_drag(R.T @ v_r, cda, self.air_density)))
        if self._rotor is not None:
            b = self._base_body
            R = d.xmat[b].reshape(3, 3)
            p = d.xpos[b] + R @ self._rotor[1]
            v_r = self._point_velocity(m, d, b, p) - w
            out.append(("rotor_drag", b, p, rotor_drag(R, v_r, self._rotor[0], self.mass)))
        for b, pt, push in self._pushes:
            f = push.force_at(t, self.weight)
            out.append(("push", b, d.xpos[b] + d.xmat[b].reshape(3, 3) @ pt, f))
        x = d.xfrc_applied
        x[:] = 0.0
        for _, b, p, f in out:
            x[b, :3] += f
            x[b, 3:] += np.cross(p - d.xipos[b], f)
        self._last = (out, t, w)

    def external_wrench(self, sim) -> ExternalWrench:
        """The :class:`ExternalWrench` of the forces last applied (at ``sim.time`` unless the state
        was set since)."""
        out, t, _ = self._last
        m, d = sim.mj_model, sim.mj_data
        W = np.zeros(6)
        comps, by_link = {}, {}
        self._qfrc[:] = 0.0
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        for src, b, p, f in out:
            w6 = np.concatenate([np.cross(p, f), f])
            W += w6
            comps[src] = comps.get(src, np.zeros(6)) + w6
            name = self._names[b]
            lw = np.concatenate([np.cross(p - d.xpos[b], f), f])
            by_link[name] = by_link.get(name, np.zeros(6)) + lw
            mujoco.mj_applyFT(m, d, np.asarray(f, float), np.zeros(3), np.asarray(p, float), b, self._qfrc)
        R = d.xmat[self._base_body].reshape(3, 3)
        p0 = d.xpos[self._base_body]
        body = np.concatenate([R.T @ (W[:3] - np.cross(p0, W[3:])), R.T @ W[3:]])
        bv = sim._bv
        gen = np.concatenate([self._qfrc[bv + 3:bv + 6], R.T @ self._qfrc[bv:bv + 3], self._qfrc[sim._dadr]])
        return ExternalWrench(t, W, body, gen, by_link, comps)

    def wind_velocity(self) -> np.ndarray:
        """(3,) [m/s] the wind of the last evaluation (world axes)."""
        return self._last[2].copy()
