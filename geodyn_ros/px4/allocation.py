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
* ``src/lib/matrix/matrix/PseudoInverse.hpp`` (``geninv``, ``fullRankCholesky``) and
  ``SquareMatrix.hpp`` (``inv``): PX4's pseudo-inverse and its rank rule (:func:`geninv`), and
  the vehicles whose float32 allocation depends on rounding (:func:`allocation_problem`: motors
  canted by a few degrees, issue 51); ``ControlAllocation.hpp``: the matrix is 6 x 16;
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

__all__ = ["PX4_COMMIT", "Px4Allocator", "rotor_effectiveness", "zero_weak_rows", "geninv", "mix_matrix",
           "allocation_problem", "float32_accuracy", "AXES",
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
#: the names of PX4's ``ControlAxis`` rows, for messages
AXES = ("roll", "pitch", "yaw", "thrust_x", "thrust_y", "thrust_z")
#: :func:`allocation_problem`: a non-zero row of the effectiveness whose Cholesky residual is less
#: than this multiple of PX4's tolerance has its rank decided by rounding. The float32 Cholesky is
#: backward stable: its residuals are off by about ``N FLT_EPSILON max(diag)``, which is PX4's
#: tolerance itself; 100 leaves a factor 100 for another summation order or fused multiply-adds
PIVOT_MARGIN = 100.0
#: :func:`allocation_problem`: PX4's float32 normalised mix must agree with the float64 one to this
#: (:func:`float32_accuracy`: a motor command's error for controls of at most 1, in units of full
#: thrust): one step of DShot's 2000 (an ESC cannot be told a finer command; PWM's 1 us in 1000 us is
#: 1e-3). The package's vehicles replay to 6e-7, test/data/hex_list.yaml (one rotor's motor
#: constant 2.4 % off the others) to 1.4e-4
MIX_ACCURACY = 5e-4
#: :func:`float32_accuracy`: replays of PX4's float32 steps, the first on ``B`` as it is, the others
#: on ``B`` with each entry perturbed by one float32 rounding (how much the result depends on rounding)
REPLAYS = 8


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


def _full_rank_cholesky(A):
    """``(L (N, N), rank, pivots (N,), tol)``: ``matrix::fullRankCholesky`` of the symmetric ``A``
    (``src/lib/matrix/matrix/PseudoInverse.hpp``, PX4 :data:`PX4_COMMIT`), step for step in the
    dtype of ``A``. Row ``k`` in order: its residual after the columns so far (``pivots[k]``)
    opens a new column when above ``tol = N FLT_EPSILON max(diag A)`` ("loses one ulp accuracy
    per row of diag"), else the row counts as a combination of the rows before it and PX4 moves
    on, leaving that residual in ``L[k, r]`` (it is not cleared: the next rows overwrite only the
    entries below it), as this port does."""
    dt = A.dtype.type
    N = A.shape[0]
    tol = dt(N) * dt(FLT_EPSILON) * A.diagonal().max()
    L = np.zeros_like(A)
    pivots = np.zeros(N, dtype=A.dtype)
    r = 0
    for k in range(N):
        L[k:, r] = A[k:, k] - (L[k:, :r] @ L[k, :r] if r else dt(0))
        pivots[k] = L[k, r]
        if L[k, r] > tol:
            L[k, r] = np.sqrt(L[k, r])
            L[k + 1:, r] /= L[k, r]
            r += 1
    return L, r, pivots, tol


def _px4_inv(A, rank):
    """``matrix::inv(A, inv, rank)`` (``SquareMatrix.hpp``): LU without pivoting of the top-left
    ``rank`` block, a zero diagonal swapped with a row below; ``None`` where PX4 returns false
    (a diagonal below ``FLT_EPSILON``, or a non-finite result). The rest of the result is the
    identity, as PX4 leaves it."""
    dt = A.dtype.type
    M = A.shape[0]
    L, U, P = np.eye(M, dtype=A.dtype), A.copy(), np.eye(M, dtype=A.dtype)
    for n in range(rank):
        if abs(U[n, n]) < FLT_EPSILON:
            for i in range(n + 1, rank):
                if abs(U[i, n]) > FLT_EPSILON:
                    U[[i, n]], P[[i, n]], L[[i, n]] = U[[n, i]], P[[n, i]], L[[n, i]]
                    L[:, [i, n]] = L[:, [n, i]]
                    break
        if abs(U[n, n]) < FLT_EPSILON:
            return None
        for i in range(n + 1, rank):
            L[i, n] = U[i, n] / U[n, n]
            U[i, n:rank] -= L[i, n] * U[n, n:rank]
    for c in range(rank):                  # L y = P e_c, forward (L has a unit diagonal)
        for i in range(rank):
            P[i, c] -= L[i, :i] @ P[:i, c] if i else dt(0)
    for c in range(rank):                  # U x = y, backward
        for i in range(rank - 1, -1, -1):
            P[i, c] = (P[i, c] - U[i, i + 1:rank] @ P[i + 1:rank, c]) / U[i, i]
    return P if np.isfinite(P[:rank, :rank]).all() else None


def geninv(B, dtype=np.float64) -> tuple:
    """``(pinv (n, 6), rank, pivots (6,), tol)``: PX4's pseudo-inverse ``matrix::geninv`` of the
    effectiveness ``B`` (6, n), computed in ``dtype`` (PX4: float32; float64 here by default).

    Courrieu's method (``PseudoInverse.hpp``, PX4 :data:`PX4_COMMIT`): PX4's effectiveness has 6
    rows and ``NUM_ACTUATORS`` = 16 columns (``ControlAllocation.hpp``; the columns beyond the
    motors are zero), so it takes the branch for ``M <= N``: ``A = B B^T`` (6, 6),
    ``L`` its full-rank Cholesky factor (:func:`_full_rank_cholesky`, whose tolerance decides the
    rank), ``X = (L^T L)^{-1}`` on the top-left ``rank`` block (:func:`_px4_inv`), and
    ``B^T L X X L^T``. That is the Moore-Penrose inverse when every row PX4 treats as dependent is
    exactly dependent (a zero row, as the thrust_x and thrust_y rows of upright rotors); a row
    whose residual is small but not zero is dropped all the same, and the result is then not
    ``B^+`` (:func:`allocation_problem`). Where PX4's inverse fails, the result is zero, as PX4's
    (``updatePseudoInverse`` does not check it)."""
    B = np.asarray(B, dtype=dtype)
    A = B @ B.T
    L, rank, pivots, tol = _full_rank_cholesky(A)
    X = _px4_inv(L.T @ L, rank)
    if X is None:
        return np.zeros(B.T.shape), rank, pivots.astype(float), float(tol)
    return (B.T @ (L @ (X @ X @ L.T))).astype(float), rank, pivots.astype(float), float(tol)


def _normalise(mix, normalize_rpy, update_scale) -> tuple:
    """``updateControlAllocationMatrixScale`` then ``normalizeControlAllocationMatrix`` of the
    pseudo-inverse ``mix`` (n, 6): see :func:`mix_matrix`."""
    mix = mix.copy()
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
    return _scaled(mix, s), s


def _scaled(mix, s) -> np.ndarray:
    mix = mix.copy()
    if s[ROLL] > FLT_EPSILON:
        mix[:, ROLL] /= s[ROLL]
        mix[:, PITCH] /= s[PITCH]
    if s[YAW] > FLT_EPSILON:
        mix[:, YAW] /= s[YAW]
    if s[THRUST_X] > FLT_EPSILON:
        mix[:, THRUST_X:] /= s[THRUST_X:]
    mix[np.abs(mix) < MIX_ZERO] = 0.0
    return mix


def mix_matrix(B, *, normalize_rpy=True, update_scale=True) -> tuple:
    """``(mix, scale)``: PX4's normalised pseudo-inverse of the effectiveness ``B`` (6, n).

    As ``ControlAllocationPseudoInverse::updatePseudoInverse`` (PX4 :data:`PX4_COMMIT`):
    ``mix = geninv(B)`` (:func:`geninv`, PX4's own method and rank rule, in float64), then
    ``updateControlAllocationMatrixScale``:

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
    return _normalise(geninv(B)[0], normalize_rpy, update_scale)


def float32_accuracy(B) -> float:
    """How far PX4's normalised mix of the effectiveness ``B`` (6, n) can be from the float64 one
    of :func:`mix_matrix` through float32 rounding alone: the largest row sum of the difference
    (the error of a motor command, in units of full thrust, for controls of at most 1) over
    :data:`REPLAYS` replays of :func:`geninv` in float32, scaled like the float64 mix. PX4's own
    rounding (its summation order, fused multiply-adds on the flight controller) is one more such
    sample: the replays show its size, not its value."""
    B = _finite("B", B, (6, -1))
    mix, s = _normalise(geninv(B)[0], True, True)
    rng = np.random.default_rng(0)
    err = 0.0
    for trial in range(REPLAYS):
        Bt = B if trial == 0 else B * (1.0 + FLT_EPSILON * rng.uniform(-1.0, 1.0, B.shape))
        err = max(err, float(np.abs(_scaled(geninv(Bt, np.float32)[0], s) - mix).sum(axis=1).max()))
    return err


def allocation_problem(B) -> str | None:
    """Why PX4's allocation of the effectiveness ``B`` (6, n, as :func:`rotor_effectiveness` gives
    it: PX4 zeroes its weak rows, :func:`zero_weak_rows`) cannot be known exactly from outside
    PX4, or None when it can.

    PX4 computes its pseudo-inverse in float32 (:func:`geninv`). Two things then depend on
    rounding rather than on the vehicle, and a bridge cannot invert what it cannot know:

    * **the rank.** Each row of ``B`` is kept or dropped by comparing its Cholesky residual with
      PX4's tolerance ``6 FLT_EPSILON max(diag B B^T)``. A zero row is dropped in any arithmetic.
      A row whose residual is within :data:`PIVOT_MARGIN` (100) of the tolerance, or below it
      without being zero, is decided by float32 rounding: the motors of a multirotor canted by a
      few degrees give small thrust_x/thrust_y rows that are combinations of the others (a quad:
      four motors, six non-zero rows), and float32 noise in their residuals can exceed the
      tolerance, which makes PX4's inverse garbage (a replay of PX4's float32 steps gives motor
      commands off by O(1) for one canted x500 in five, doc/reference/px4_allocation.md);
    * **the accuracy.** Courrieu's method squares the condition number of ``B`` twice (``B B^T``,
      then ``X X``): the float32 result (:func:`float32_accuracy`) must agree with the float64 one
      to :data:`MIX_ACCURACY` (5e-4 of full thrust per motor, one DShot step, for controls of at
      most 1), or PX4's motor commands are not the ones the bridge computes. A collinear
      hexarotor whose motors are canted 1-3 deg replays to 0.25 to 10.
    """
    raw = _finite("B", B, (6, -1))
    for k in np.flatnonzero(np.abs(np.abs(raw).max(axis=1) - WEAK_ROW) <= 1e-5 * WEAK_ROW):
        return (f"the {AXES[k]} row's largest entry is {np.abs(raw[k]).max():.7g}, within float32 rounding of PX4's "
                f"weak-row threshold {WEAK_ROW:g} (ControlAllocator.cpp): whether PX4 controls {AXES[k]} is decided "
                "by rounding")
    B = zero_weak_rows(raw)
    nonzero = np.abs(B).max(axis=1) > 0.0
    _, _, pivots, tol = geninv(B)
    for k in np.flatnonzero(nonzero):
        ratio = pivots[k] / tol
        if ratio < PIVOT_MARGIN:
            what = ("within rounding of a combination of the rows before it, so PX4 drops it" if ratio <= 1.0 else
                    "only just independent of the rows before it")
            return (f"the {AXES[k]} row of PX4's effectiveness (largest entry {np.abs(B[k]).max():.3g}) is {what}; "
                    f"its Cholesky residual is {ratio:.3g} x PX4's tolerance (matrix::geninv, PseudoInverse.hpp), "
                    f"less than {PIVOT_MARGIN:g} x, so whether PX4's float32 pseudo-inverse keeps {AXES[k]} "
                    "(and what it returns) depends on rounding")
    err = float32_accuracy(B)
    if not err <= MIX_ACCURACY:
        return (f"PX4's float32 pseudo-inverse of this effectiveness (matrix::geninv: B B^T, then (L^T L)^-2) is "
                f"accurate only to {err:.2g} of full thrust in the motor commands (replayed here in float32; at most "
                f"{MIX_ACCURACY:g}, one DShot step, accepted): the effectiveness is too ill-conditioned (condition "
                f"number {np.linalg.cond(B[nonzero]):.3g}) for PX4's method")
    return None


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
        self._mix_pinv = np.linalg.pinv(self.mix)      # the inverse of PX4's mix (setpoints)
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
        """``(torque, thrust)``, each (3,) FRD normalised: the setpoints that PX4's mix maps back to
        the motor commands ``u`` (n,) when nothing saturates.

        They start from PX4's own achieved control, ``ControlAllocation::getAllocatedControl``:
        ``c0 = (B (u - trim)) * scale`` (trim 0 for rotors), the wrench of ``u`` normalised. Since
        ``mix = B^+ diag(1 / scale)``, ``mix c0 = B^+ B u``. But PX4's mix is not exactly that: it
        zeroes the entries below :data:`MIX_ZERO` (1e-3) after scaling, so ``c0`` comes back off by
        up to that times the controls. So the setpoints invert the mix PX4 actually has:
        ``c = c0 + mix^+ (u - mix c0)``, the smallest change of ``c0`` after which ``mix c = u``
        whenever ``u`` is in the range of the mix (always for as many rotors as controlled axes: a
        quadrotor's 4, a fully actuated hexarotor's 6); otherwise ``mix c`` is the projection of
        ``u`` there, the least-norm commands of the same wrench (what the package's own unweighted
        allocation gives). That holds when the desaturation changes nothing, which
        :meth:`unsaturated` tells (``u`` in bounds is not enough with airmode off: PX4
        desaturates the mix without yaw first). PX4's messages state ``[-1, 1]`` for each
        component; the caller checks that. A vehicle whose mix PX4 computes by rounding rather
        than exactly (:func:`allocation_problem`) has no such inverse.
        """
        u = _finite("u", u, (self.n,))
        c = (self.effectiveness @ u) * self.scale
        c = c + self._mix_pinv @ (u - self.mix @ c)
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
