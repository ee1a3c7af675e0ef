"""PX4's multirotor control allocation and thrust model, ROS-free (issue 44).

What PX4 does between a normalised thrust and torque setpoint and a motor's output, computed
the way PX4 computes it, for the offboard bridge (its inverse) and the simulator's PX4 stand-in.
Everything here follows **PX4-Autopilot main at commit b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf**
(2025-06-10; :data:`PX4_COMMIT`), read in these files (paths relative to the repository):

* ``src/modules/control_allocator/VehicleActuatorEffectiveness/ActuatorEffectivenessRotors.cpp``
  (``computeEffectivenessMatrix``): the effectiveness matrix (:func:`rotor_effectiveness`);
* ``src/modules/control_allocator/VehicleActuatorEffectiveness/ActuatorEffectivenessMultirotor.hpp``:
  a multirotor uses sequential desaturation with roll/pitch/yaw normalisation;
* ``src/modules/control_allocator/ControlAllocator.cpp`` (``update_effectiveness_matrix_if_needed``,
  ``Run``): motor limits ``[0, 1]`` (``[-1, 1]`` for a ``CA_R_REV`` motor), weak rows zeroed
  (:func:`zero_weak_rows`), then allocate, then clip;
* ``src/lib/control_allocation/control_allocation/ControlAllocationPseudoInverse.cpp``: the
  pseudo-inverse and its column scaling (:func:`mix_matrix`);
* ``src/lib/control_allocation/control_allocation/ControlAllocationSequentialDesaturation.cpp`` and
  ``.hpp``: the desaturation order (:meth:`Px4Allocator.allocate`);
* ``src/lib/control_allocation/control_allocation/ControlAllocation.cpp`` / ``.hpp``: clipping and
  the achieved control ``getAllocatedControl`` (:meth:`Px4Allocator.setpoints`);
* ``src/lib/mixer_module/functions/FunctionMotors.hpp`` (``updateValues``) and
  ``src/lib/mixer_module/motor_params.c`` (``THR_MDL_FAC``): the thrust model
  (:func:`thrust_curve`, :func:`thrust_curve_inverse`);
* ``src/modules/control_allocator/module.yaml``: the ``CA_ROTORn_*`` meanings, ranges and defaults.

Later PX4 main replaced ``MC_AIRMODE`` by ``MC_AIRMODE_LIM`` / ``MC_AIRMODE_YAW`` (the version at
commit 00202eb379b7dda712174f6d9b3b0b98666f9267 of the same file); its disabled setting takes the
same steps as ``airmode=0`` here; airmodes 1 and 2 here are those of :data:`PX4_COMMIT`.

Frames and units. PX4's body frame is **FRD** (x forward, y right, z down); the package's base
frame is FLU (:func:`~geodyn_ros.vehicle.geometry.px4_to_flu`; a vector maps as ``(x, -y, -z)``,
both ways). The control vector is PX4's ``ControlAxis`` order ``(roll, pitch, yaw, thrust_x,
thrust_y, thrust_z)``: torque about x, y, z then thrust along x, y, z, FRD, normalised (thrust
up is ``thrust_z < 0``). A motor command ``u`` is PX4's actuator setpoint: the rotor's *relative
thrust*, 0 = none, 1 = full (``ActuatorMotors.control``: "1 means maximum positive thrust").
PX4 computes in float32; this module in float64 (the difference is rounding, ~1e-7 relative).

The package's rotor model is ``T = k_f omega |omega|`` (:mod:`geodyn_ros.control.rotors`). Its
relative thrust is ``u = T / T_max = omega |omega| / omega_max^2`` with ``T_max = k_f
omega_max^2`` (:func:`speed_to_command`). PX4 turns ``u`` into the motor signal ``s`` with the
inverse of its thrust model ``u = THR_MDL_FAC s^2 + (1 - THR_MDL_FAC) s``
(:func:`thrust_curve_inverse`). The motor model assumed here is that the vehicle obeys that
model: its static thrust is ``T_max (fac s^2 + (1 - fac) s)``, so ``omega = omega_max
sqrt(thrust_curve(s))`` (:func:`signal_to_speed`). With ``THR_MDL_FAC = 1`` that is ``omega =
omega_max s``, a speed linear in the signal, thrust quadratic in it; with 0 the thrust is linear in
the signal. Then speed -> command -> signal -> speed is the identity for every ``fac``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["PX4_COMMIT", "Px4Allocator", "rotor_effectiveness", "zero_weak_rows", "mix_matrix",
           "px4_rotor_parameters", "thrust_curve", "thrust_curve_inverse", "speed_to_command",
           "command_to_speed", "signal_to_speed", "speed_to_signal", "ROLL", "PITCH", "YAW", "THRUST_X",
           "THRUST_Y", "THRUST_Z", "MAX_ROTORS"]

#: the PX4-Autopilot commit every rule of this module was read from (upstream main, 2025-06-10)
PX4_COMMIT = "b67c65bfe649bfaaa3a2013f88c0282ed0cb1faf"

#: PX4's ``ControlAllocation::ControlAxis`` (ControlAllocation.hpp)
ROLL, PITCH, YAW, THRUST_X, THRUST_Y, THRUST_Z = range(6)
#: ``ActuatorEffectivenessRotors::NUM_ROTORS_MAX`` (ActuatorEffectivenessRotors.hpp), also
#: ``ActuatorMotors.NUM_CONTROLS`` (msg/versioned/ActuatorMotors.msg)
MAX_ROTORS = 12
#: C's ``FLT_EPSILON``, PX4's threshold for "zero" in the files above
FLT_EPSILON = float(np.finfo(np.float32).eps)
#: ControlAllocator.cpp: a row of the effectiveness whose entries are all at most this (in
#: absolute value) is set to zero (an axis with marginal authority is not controlled)
WEAK_ROW = 0.05
#: ControlAllocationPseudoInverse.cpp: mix entries below this are zeroed after scaling, and a
#: roll/pitch mix entry above it counts as non-zero in the roll/pitch scale
MIX_ZERO = 1e-3
#: ControlAllocationSequentialDesaturation.cpp ``computeDesaturationGain``: an actuator whose entry
#: of the desaturation vector is below this does not set the gain
WEAK_DESATURATION = 0.2
#: ``ControlAllocationSequentialDesaturation::MINIMUM_YAW_MARGIN``: yaw may push the outputs this
#: fraction of their range above the maximum before thrust is reduced for it
MINIMUM_YAW_MARGIN = 0.15
#: module.yaml defaults: ``CA_ROTORn_AX/AY/AZ`` = (0, 0, -1), ``CA_ROTORn_CT`` = 6.5, ``CA_ROTORn_KM`` = 0.05
DEFAULT_AXIS, DEFAULT_CT, DEFAULT_KM = (0.0, 0.0, -1.0), 6.5, 0.05


# ----------------------------------------------------------------------------- input checks
def _finite(name, v, shape=None, *, allow_nan=False):
    """``v`` as a float array (of ``shape`` if given; -1 = any length); ValueError naming ``name``."""
    try:
        a = np.array(v, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers, got {v!r:.80}") from None
    if shape is not None and (a.ndim != len(shape) or any(s not in (-1, d) for s, d in zip(shape, a.shape))):
        raise ValueError(f"{name}: expected shape {tuple('n' if s == -1 else s for s in shape)}, got {a.shape}")
    bad = np.isinf(a) if allow_nan else ~np.isfinite(a)
    if bad.any():
        raise ValueError(f"{name}: expected finite numbers{' (or NaN)' if allow_nan else ''}, got {v!r:.80}")
    return a


def _per_rotor(name, v, n, lo=None, hi=None):
    """A scalar (every rotor) or an (n,) array, within [lo, hi]."""
    a = _finite(name, v)
    if a.ndim > 1 or (a.ndim == 1 and a.shape != (n,)):
        raise ValueError(f"{name}: expected a number or {n} numbers (one per rotor), got shape {a.shape}")
    if (lo is not None and np.any(a < lo)) or (hi is not None and np.any(a > hi)):
        raise ValueError(f"{name}: expected values in [{lo}, {hi}], got {v!r:.80}")
    return np.broadcast_to(a, (n,)).copy()


def _fac(thr_mdl_fac):
    f = _finite("thr_mdl_fac", thr_mdl_fac, ())
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"thr_mdl_fac: expected THR_MDL_FAC in [0, 1] (motor_params.c), got {thr_mdl_fac!r}")
    return float(f)


# ----------------------------------------------------------------------------- effectiveness
def rotor_effectiveness(position, axis=None, ct=DEFAULT_CT, km=DEFAULT_KM) -> np.ndarray:
    """(6, n) PX4's rotor effectiveness ``B`` from ``CA_ROTORn_*``, FRD body, rows ``(roll, pitch,
    yaw, thrust_x, thrust_y, thrust_z)``, column i per unit of motor i's relative thrust.

    As ``ActuatorEffectivenessRotors::computeEffectivenessMatrix`` (PX4 :data:`PX4_COMMIT`):
    the axis is normalised, ``a = A / |A|``; the thrust column is ``ct a``, the moment column
    ``ct p x a - ct km a``. A rotor whose axis has norm at most ``FLT_EPSILON`` or whose ``|ct|``
    is below ``FLT_EPSILON`` is ignored (zero column), as PX4 does. ``km > 0`` is a CCW rotor
    (module.yaml): with the axis up, ``a = (0, 0, -1)``, its yaw moment ``+ct km`` is about +z
    down, the reaction to a rotor spinning counter-clockwise seen from above.

    Parameters
    ----------
    position : (n, 3)
        ``CA_ROTORn_PX/PY/PZ`` [m], FRD, relative to the point the torques are about (PX4: the
        centre of gravity; the package: the base-link origin). 1 <= n <= :data:`MAX_ROTORS`.
    axis : (n, 3), optional
        ``CA_ROTORn_AX/AY/AZ``, FRD, any length (only the direction counts); default (0, 0, -1).
    ct : float or (n,)
        ``CA_ROTORn_CT``, in [0, 100] (module.yaml): the rotor's thrust at ``u = 1`` in whatever
        unit the vehicle's parameters use (PX4's default 6.5; newtons in :func:`px4_rotor_parameters`).
    km : float or (n,)
        ``CA_ROTORn_KM`` [m], in [-1, 1]: drag torque over thrust, signed (positive = CCW).

    Returns
    -------
    numpy.ndarray
    """
    p = _finite("position", position, (-1, 3))
    n = p.shape[0]
    if not 1 <= n <= MAX_ROTORS:
        raise ValueError(f"position: expected 1 to {MAX_ROTORS} rotors (NUM_ROTORS_MAX), got {n}")
    a = np.tile(DEFAULT_AXIS, (n, 1)) if axis is None else _finite("axis", axis, (n, 3))
    ct = _per_rotor("ct", ct, n, 0.0, 100.0)
    km = _per_rotor("km", km, n, -1.0, 1.0)
    B = np.zeros((6, n))
    for i in range(n):
        nrm = np.linalg.norm(a[i])
        if nrm <= FLT_EPSILON or abs(ct[i]) < FLT_EPSILON:
            continue                                   # PX4: "bad axis definition, ignore this rotor" / no thrust
        ai = a[i] / nrm
        B[:3, i] = ct[i] * np.cross(p[i], ai) - ct[i] * km[i] * ai
        B[3:, i] = ct[i] * ai
    return B


def zero_weak_rows(B) -> np.ndarray:
    """``B`` with every row whose entries are all at most :data:`WEAK_ROW` (0.05) in absolute
    value set to zero, as ``ControlAllocator::update_effectiveness_matrix_if_needed`` does before
    handing the matrix to the allocation (PX4 :data:`PX4_COMMIT`). The test is absolute, so it
    depends on the unit of ``CA_ROTORn_CT``: with PX4's default 6.5 and ``KM = 0.05`` the yaw row
    is 0.325, but ``CT = 1`` with ``KM = 0.016`` gives 0.016 and PX4 then drops yaw control."""
    B = _finite("B", B, (6, -1))
    out = B.copy()
    out[np.all(np.abs(B) <= WEAK_ROW, axis=1)] = 0.0
    return out


def mix_matrix(B, *, normalize_rpy=True, update_scale=True) -> tuple:
    """``(mix, scale)``: PX4's normalised pseudo-inverse of the effectiveness ``B`` (6, n).

    As ``ControlAllocationPseudoInverse::updatePseudoInverse`` (PX4 :data:`PX4_COMMIT`):
    ``mix = B^+`` (``matrix::geninv``, the Moore-Penrose inverse by a full-rank Cholesky
    factorisation; numpy's SVD ``pinv`` here), then ``updateControlAllocationMatrixScale``:

    * roll and pitch (``normalize_rpy``, true for a multirotor): ``s_r = sqrt(|mix_r|^2 /
      (n_r / 2))`` with ``n_r`` the entries above :data:`MIX_ZERO`, likewise ``s_p``, and both
      columns get ``max(s_r, s_p)``; yaw gets the largest (signed) entry of its column; without
      ``normalize_rpy`` the three are 1;
    * thrust, for z then y then x: the mean of the absolute entries over those above
      ``FLT_EPSILON``, or, for an axis with none, the z scale (1 if z has none either);

    and ``normalizeControlAllocationMatrix``: columns divided by their scale (roll and pitch if
    the roll scale exceeds ``FLT_EPSILON``, yaw if its own does, the three thrust columns if the
    x scale does), then every entry below :data:`MIX_ZERO` set to 0. ``update_scale=False`` keeps
    the scale at 1 (PX4's unit tests, ``ControlAllocationSequentialDesaturationTest.cpp``, set up
    the allocator so), the zeroing still applies.

    Returns
    -------
    mix : (n, 6)
    scale : (6,)
    """
    B = _finite("B", B, (6, -1))
    mix = np.linalg.pinv(B)
    n = mix.shape[0]
    s = np.ones(6)
    if update_scale:
        if normalize_rpy:
            rp = []
            for ax in (ROLL, PITCH):
                cnt = int(np.sum(np.abs(mix[:, ax]) > MIX_ZERO))
                rp.append(np.sqrt(np.sum(mix[:, ax] ** 2) / (cnt / 2.0)) if cnt else 1.0)
            s[ROLL] = s[PITCH] = max(rp)
            s[YAW] = mix[:, YAW].max() if n else 1.0
        s[THRUST_Z] = 1.0
        for ax in (THRUST_Z, THRUST_Y, THRUST_X):
            col = np.abs(mix[:, ax])
            cnt = int(np.sum(col > FLT_EPSILON))
            s[ax] = col.sum() / cnt if cnt else s[THRUST_Z]
    if s[ROLL] > FLT_EPSILON:
        mix[:, ROLL] /= s[ROLL]
        mix[:, PITCH] /= s[PITCH]
    if s[YAW] > FLT_EPSILON:
        mix[:, YAW] /= s[YAW]
    if s[THRUST_X] > FLT_EPSILON:
        mix[:, THRUST_X:] /= s[THRUST_X:]
    mix[np.abs(mix) < MIX_ZERO] = 0.0
    return mix, s


# ----------------------------------------------------------------------------- the allocator
class Px4Allocator:
    """PX4's multirotor allocation: ``(torque, thrust)`` setpoints, normalised, FRD -> motor
    commands ``u`` (relative thrust), and back.

    The chain of ``ControlAllocator::Run`` for a multirotor (PX4 :data:`PX4_COMMIT`): the
    effectiveness :func:`rotor_effectiveness`, its weak rows zeroed (:func:`zero_weak_rows`), the
    normalised mix (:func:`mix_matrix`), the sequential desaturation (:meth:`allocate`), clipping
    to the motor limits (:meth:`motor_commands`). Not modelled: actuator trim and linearisation
    point (zero for rotors), slew-rate limits (``CA_Rn_SLEW``, 0 = off by default), motor failures,
    tilting rotors, and several allocation matrices (VTOL).

    Parameters
    ----------
    effectiveness : (6, n)
        The effectiveness PX4 allocates with, FRD, rows ``(roll, pitch, yaw, thrust_x, thrust_y,
        thrust_z)``; :meth:`from_parameters` builds it from ``CA_ROTORn_*`` as PX4 does
        (:func:`rotor_effectiveness`, then :func:`zero_weak_rows`).
    airmode : int
        ``MC_AIRMODE`` (mixer_module/params.c): 0 disabled (PX4's default), 1 roll/pitch, 2
        roll/pitch/yaw.
    reversible : sequence of bool, optional
        ``CA_R_REV`` per motor: a reversible motor's lower limit is -1 instead of 0.
    update_scale : bool
        False keeps :func:`mix_matrix`'s scale at 1 (PX4's unit-test setup); True in flight.

    Attributes
    ----------
    effectiveness : (6, n)
    mix : (n, 6)
    scale : (6,)
    u_min, u_max : (n,)
    """

    def __init__(self, effectiveness, *, airmode=0, reversible=None, update_scale=True):
        if airmode not in (0, 1, 2) or isinstance(airmode, bool):
            raise ValueError(f"airmode: expected MC_AIRMODE 0, 1 or 2, got {airmode!r}")
        self.airmode = int(airmode)
        self.effectiveness = _finite("effectiveness", effectiveness, (6, -1))
        self.n = self.effectiveness.shape[1]
        if not 1 <= self.n <= MAX_ROTORS:
            raise ValueError(f"effectiveness: expected 1 to {MAX_ROTORS} columns (motors), got {self.n}")
        self.mix, self.scale = mix_matrix(self.effectiveness, update_scale=update_scale)
        rev = np.zeros(self.n, bool) if reversible is None else np.asarray(reversible)
        if rev.shape != (self.n,) or rev.dtype != bool:
            raise ValueError(f"reversible: expected {self.n} booleans (CA_R_REV per motor), got {reversible!r:.80}")
        self.u_min = np.where(rev, -1.0, 0.0)
        self.u_max = np.ones(self.n)

    @classmethod
    def from_parameters(cls, position, axis=None, ct=DEFAULT_CT, km=DEFAULT_KM, **kw):
        """The allocator PX4 builds from ``CA_ROTORn_*`` (the arguments of
        :func:`rotor_effectiveness`): that effectiveness with its weak rows zeroed
        (:func:`zero_weak_rows`), as ``ControlAllocator`` hands it over; ``kw`` as the class takes."""
        return cls(zero_weak_rows(rotor_effectiveness(position, axis, ct, km)), **kw)

    @classmethod
    def from_frames(cls, frames, rotors, **kw):
        """The allocator of a package vehicle: :meth:`from_parameters` of
        :func:`px4_rotor_parameters` (its rotor frames, FLU, and constants), so ``u = 1`` is the
        rotor's thrust at ``max_rot_velocity``."""
        return cls.from_parameters(**px4_rotor_parameters(frames, rotors), **kw)

    # ---- the desaturation (ControlAllocationSequentialDesaturation.cpp) ------------------------
    def _gain(self, d, u, hi):
        """``computeDesaturationGain``: over the actuators with ``|d_i| >= 0.2`` that are out of
        ``[u_min, hi]``, the gains ``k_i`` that bring each back to its bound; returns
        ``min(0, k) + max(0, k)`` (the most negative plus the most positive)."""
        k_min = k_max = 0.0
        for i in range(self.n):
            if abs(d[i]) < WEAK_DESATURATION:
                continue
            for bound, out in ((self.u_min[i], u[i] < self.u_min[i]), (hi[i], u[i] > hi[i])):
                if out:
                    k = (bound - u[i]) / d[i]
                    k_min, k_max = min(k_min, k), max(k_max, k)
        return k_min + k_max

    def _desaturate(self, u, d, hi=None, increase_only=False):
        """``desaturateActuators``: ``u += g d`` with the gain above, then ``u += g' d / 2`` with the
        gain recomputed; with ``increase_only`` nothing when the first gain is negative (along the
        thrust-z column, whose entries are negative, a positive gain lowers the thrust)."""
        hi = self.u_max if hi is None else hi
        g = self._gain(d, u, hi)
        if increase_only and g < 0.0:
            return u
        u = u + g * d
        return u + 0.5 * self._gain(d, u, hi) * d

    def _mix_yaw(self, u, c):
        """``mixYaw``: add yaw, desaturate along yaw with the maximum raised by
        :data:`MINIMUM_YAW_MARGIN` of the range, then along thrust z (only lowering thrust)."""
        M = self.mix
        u = u + M[:, YAW] * c[YAW]
        u = self._desaturate(u, M[:, YAW], hi=self.u_max + (self.u_max - self.u_min) * MINIMUM_YAW_MARGIN)
        return self._desaturate(u, M[:, THRUST_Z], increase_only=True)

    def allocate(self, torque, thrust) -> np.ndarray:
        """(n,) motor commands before clipping, as ``ControlAllocationSequentialDesaturation::allocate``.

        ``torque``, ``thrust``: (3,) the normalised ``VehicleTorqueSetpoint.xyz`` and
        ``VehicleThrustSetpoint.xyz``, FRD. The order of ``MC_AIRMODE`` 0 (``mixAirmodeDisabled``):

        1. mix roll, pitch and the three thrusts (no yaw);
        2. desaturate along the thrust-z column, only lowering the thrust;
        3. desaturate along roll, then along pitch (they give way before yaw is even added);
        4. add yaw; desaturate along yaw with the maximum raised by 15 % of the range;
        5. desaturate along thrust z again, only lowering the thrust.

        So when the motors cannot give everything, collective thrust is lowered first (never
        raised), then roll and pitch give way to keep the outputs in range, and yaw gives way
        last but only to what fits once roll, pitch and thrust are placed (with the 15 % margin
        then taken from the thrust). Airmode 1 (``mixAirmodeRP``): thrust may also rise in step 2,
        step 3 is skipped; airmode 2 (``mixAirmodeRPY``): full mix, thrust z (both ways), then yaw.
        """
        c = np.concatenate([_finite("torque", torque, (3,)), _finite("thrust", thrust, (3,))])
        M = self.mix
        if self.airmode == 2:
            u = M @ c
            u = self._desaturate(u, M[:, THRUST_Z])
            return self._desaturate(u, M[:, YAW])
        no_yaw = [ROLL, PITCH, THRUST_X, THRUST_Y, THRUST_Z]
        u = M[:, no_yaw] @ c[no_yaw]
        if self.airmode == 1:
            u = self._desaturate(u, M[:, THRUST_Z])
        else:
            u = self._desaturate(u, M[:, THRUST_Z], increase_only=True)
            u = self._desaturate(u, M[:, ROLL])
            u = self._desaturate(u, M[:, PITCH])
        return self._mix_yaw(u, c)

    def unsaturated(self, torque, thrust) -> bool:
        """True when no stage of :meth:`allocate` finds an output out of ``[u_min, u_max]``, so
        that every desaturation gain is 0 and PX4 allocates the plain mix ``mix @ c``.

        The stages matter, not only the result: with ``MC_AIRMODE`` 0 or 1 PX4 first mixes roll,
        pitch and thrust *without yaw* and desaturates that, so commands ``u`` that are themselves
        within bounds are still changed when ``u`` minus its yaw part is not (a strong yaw near
        full or zero thrust). Airmode 2 mixes everything at once."""
        c = np.concatenate([_finite("torque", torque, (3,)), _finite("thrust", thrust, (3,))])
        full = self.mix @ c
        stages = [full] if self.airmode == 2 else [full, full - self.mix[:, YAW] * c[YAW]]
        return bool(all(np.all((x >= self.u_min) & (x <= self.u_max)) for x in stages))

    def motor_commands(self, torque, thrust) -> np.ndarray:
        """(n,) the published ``ActuatorMotors.control``: :meth:`allocate` clipped to ``[u_min,
        u_max]`` (``ControlAllocation::clipActuatorSetpoint``, after ``allocate`` in
        ``ControlAllocator::Run``)."""
        return np.clip(self.allocate(torque, thrust), self.u_min, self.u_max)

    # ---- the inverse (for the bridge) --------------------------------------------------------
    def setpoints(self, u) -> tuple:
        """``(torque, thrust)``, each (3,) FRD normalised: the setpoints that PX4 allocates back to
        the motor commands ``u`` (n,) when nothing saturates.

        It is PX4's own achieved control, ``ControlAllocation::getAllocatedControl``:
        ``c = (B (u - trim)) * scale`` (trim 0 for rotors). Since ``mix = B^+ diag(1 / scale)``,
        :meth:`allocate` gives back ``B^+ B u``: ``u`` itself when ``u`` lies in the row space of
        ``B`` (always for as many rotors as controlled axes: a quadrotor's 4, a fully actuated
        hexarotor's 6), else its projection there, the least-norm commands of the same wrench
        (what the package's own unweighted allocation gives). That holds when the desaturation
        changes nothing, which :meth:`unsaturated` tells (``u`` in bounds is not enough with
        airmode off: PX4 desaturates the mix without yaw first); entries of the mix below
        :data:`MIX_ZERO`, zeroed by PX4, make the round trip approximate to that size. PX4's
        messages state ``[-1, 1]`` for each component; the caller checks that.
        """
        u = _finite("u", u, (self.n,))
        c = (self.effectiveness @ u) * self.scale
        return c[:3], c[3:]


def px4_rotor_parameters(frames, rotors) -> dict:
    """The ``CA_ROTORn_*`` equivalent of a package vehicle: ``{"position", "axis", "ct", "km"}``.

    ``frames``: (n, 4, 4) rotor frames in the base link (FLU, m); ``rotors``: a
    :class:`~geodyn_ros.vehicle.params.RotorParams`. Position and thrust axis ``R_i e_3`` map
    FLU -> FRD as ``(x, -y, -z)``; ``ct = k_f omega_max^2`` [N], the rotor's full thrust, so a
    motor command is ``u = T / T_max``; ``km = -s_i * moment_constant`` (``s_i = -1`` for ccw:
    positive KM is CCW in PX4). Then ``diag(1, -1, -1, 1, -1, -1) B / omega_max^2`` is the
    package's allocation matrix ``A`` (per unit ``omega^2``) with equal ``omega_max``.
    """
    F = _finite("frames", frames, (-1, 4, 4))
    n = F.shape[0]
    if getattr(rotors, "n_rotors", None) != n:
        raise ValueError(f"rotors: expected the RotorParams of the {n} rotors of frames, got {rotors!r:.80}")
    flip = np.array([1.0, -1.0, -1.0])
    return {"position": F[:, :3, 3] * flip, "axis": F[:, :3, 2] * flip,
            "ct": rotors.per_rotor("motor_constant") * rotors.per_rotor("max_rot_velocity") ** 2,
            "km": -rotors.spin * rotors.per_rotor("moment_constant")}


# ----------------------------------------------------------------------------- thrust model
def thrust_curve(signal, thr_mdl_fac) -> np.ndarray:
    """Relative thrust ``u = fac s^2 + (1 - fac) s`` of the motor signal ``s`` in [0, 1]
    (``THR_MDL_FAC``'s model, motor_params.c), odd for a reversible motor's ``s < 0``; NaN
    (disarmed) stays NaN. For ``fac <= FLT_EPSILON`` it is ``u = s``, since PX4 then leaves the
    command as it is (:func:`thrust_curve_inverse`)."""
    s = _finite("signal", signal, allow_nan=True)
    fac = _fac(thr_mdl_fac)
    if fac <= FLT_EPSILON:
        return s.copy()
    return np.sign(s) * (fac * s * s + (1.0 - fac) * np.abs(s))


def thrust_curve_inverse(command, thr_mdl_fac) -> np.ndarray:
    """Motor signal ``s`` of the relative thrust ``u`` (a motor command), as the mixer applies
    ``THR_MDL_FAC`` to ``ActuatorMotors`` (``FunctionMotors::updateValues``, PX4 :data:`PX4_COMMIT`):
    for ``FLT_EPSILON < fac <= 1`` the root of ``fac s^2 + (1 - fac) s = u``,
    ``s = -b/(2a) + sqrt(b^2/(4a^2) + u/a)`` (``a = fac``, ``b = 1 - fac``) for ``u > FLT_EPSILON``,
    ``s = b/(2a) - sqrt(b^2/(4a^2) - u/a)`` for ``u < -FLT_EPSILON``, unchanged otherwise; NaN
    (disarmed) stays NaN. The mixer then maps a non-reversible ``s`` from [0, 1] to the output's
    [-1, 1] (``2 s - 1``; ``s < 0`` to NaN), which this function leaves to the output driver."""
    u = _finite("command", command, allow_nan=True)
    fac = _fac(thr_mdl_fac)
    out = u.copy()
    if not FLT_EPSILON < fac <= 1.0:
        return out
    a, b = fac, 1.0 - fac
    t1, t2 = b / (2.0 * a), b * b / (4.0 * a * a)
    with np.errstate(invalid="ignore"):
        pos, neg = u > FLT_EPSILON, u < -FLT_EPSILON
    out[pos] = -t1 + np.sqrt(t2 + u[pos] / a)
    out[neg] = t1 - np.sqrt(t2 - u[neg] / a)
    return out


def _omega_max(omega_max):
    w = _finite("omega_max", omega_max)
    if w.ndim > 1 or np.any(w <= 0):
        raise ValueError(f"omega_max: expected a positive number or one per rotor [rad/s], got {omega_max!r:.80}")
    return w


def speed_to_command(omega, omega_max) -> np.ndarray:
    """Motor command (relative thrust) of rotor speeds ``omega`` [rad/s]: ``u = omega |omega| /
    omega_max^2``, the thrust ``k_f omega |omega|`` over the full thrust ``k_f omega_max^2``. This
    is what ``direct_actuator`` sends in ``ActuatorMotors.control`` (PX4 applies its thrust curve
    to it) and what :meth:`Px4Allocator.setpoints` takes. ``omega_max``: scalar or (n,)."""
    w = _finite("omega", omega)
    return w * np.abs(w) / _omega_max(omega_max) ** 2


def command_to_speed(command, omega_max) -> np.ndarray:
    """Rotor speeds [rad/s] of motor commands: ``omega = sign(u) omega_max sqrt(|u|)``, the inverse
    of :func:`speed_to_command`."""
    u = _finite("command", command)
    return np.sign(u) * _omega_max(omega_max) * np.sqrt(np.abs(u))


def signal_to_speed(signal, omega_max, thr_mdl_fac) -> np.ndarray:
    """The motor model: rotor speed [rad/s] at motor signal ``s``, ``omega = omega_max
    sqrt(thrust_curve(s))`` (the vehicle obeys PX4's thrust model with this ``THR_MDL_FAC``;
    ``fac = 1``: ``omega = omega_max s``)."""
    return command_to_speed(thrust_curve(signal, thr_mdl_fac), omega_max)


def speed_to_signal(omega, omega_max, thr_mdl_fac) -> np.ndarray:
    """The motor signal PX4 outputs for rotor speeds ``omega``: the thrust curve's inverse of
    :func:`speed_to_command`; :func:`signal_to_speed` maps it back to ``omega``."""
    return thrust_curve_inverse(speed_to_command(omega, omega_max), thr_mdl_fac)
