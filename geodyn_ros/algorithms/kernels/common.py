"""Compiled (numba) kernels of the higher-order recursions: what they share. Internal module.

One module per recursion family sits beside this one: :mod:`.kinematics`, :mod:`.inverse`,
:mod:`.hybrid` (forward and hybrid dynamics), :mod:`.eom`, :mod:`.derivatives`, :mod:`.batch`
and :mod:`.reduced`; this module holds the error codes, input checks, small algebra, work-buffer
helpers and hot-path signatures they all use.

All kernels take the packed model arrays ``bodyi`` (N, 2) = ``[parent, jtype]`` and
``bodyf`` (N, 19) = ``[Y(6), mass, com(3), inertia(9)]`` (see :mod:`geodyn_ros.model`)
and flat state arrays, and run one general-order code path.

Jets are stored internally as **normalised Taylor coefficients** ``x_k = x^(k) / k!``:
the Leibniz sums of the paper, ``sum_j binom(k, j) a^(j) b^(k-j)``, become plain Cauchy
products ``sum_j a_j b_(k-j)`` and a time derivative is ``(xdot)_k = (k+1) x_(k+1)``.
Inputs are scaled by ``1/k!`` on entry and outputs by ``k!`` on exit.

Per body the dynamics are written about the world origin but assembled from the
centre of mass ``c`` (world), the rotational inertia about it ``I`` (world axes) and
the mass ``m``; the spatial momentum is ``Pi = (I w + c x p, p)`` with ``p = m cdot``.
With ``cdot = v + w x c`` and ``Idot = [hat(w), I]``, the Newton–Euler wrench of the
paper, ``W = Pi^(1) - W_grav - W_app`` (Alg. 2 with (E3)–(E5)), is

    f = m (cddot - g) - f_app,
    n = d/dt(I w) + c x m (cddot - g) - n_app,    d/dt(I w) = I wdot + w x (I w),

whose derivatives of any order are Cauchy products of 3-vectors; this replaces the
6x6 matrix derivatives ``M^(k)`` of (E2) by O(r^2) cross products per body.

Error codes returned by the kernels (0 = success) are mapped to ``ValueError``
messages in :mod:`geodyn_ros.algorithms.checks`.
"""
from __future__ import annotations

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

#: LLVM fast-math flags of every kernel: fused multiply-add, reassociation, reciprocal
#: multiplication and signed-zero freedom. Not "nnan"/"ninf": the kernels test isfinite().
_FAST = {"contract", "reassoc", "arcp", "nsz"}

OK = 0
ERR_POSE_NONFINITE = 1
ERR_POSE_NOT_RIGID = 2
ERR_TWIST_NONFINITE = 3
ERR_Q_NONFINITE = 4
ERR_WRENCH_NONFINITE = 5
ERR_TAU_NONFINITE = 6
ERR_EXTW_NONFINITE = 7
ERR_EXTT_NONFINITE = 8
ERR_GRAVITY_NONFINITE = 9
ERR_SINGULAR_JOINT = 10
ERR_SINGULAR_BASE = 11
ERR_RESULT_NONFINITE = 12
ERR_SHAPE = 13   #: hot-path entries only: shapes do not match (caller re-validates)
ERR_COM_NONFINITE = 14     #: flat map: the CoM jet has NaN or Inf in the rows used
ERR_YAW_NONFINITE = 15     #: flat map: the yaw jet has NaN or Inf in the rows used
ERR_FREE_FALL = 16         #: flat map: c'' equals the gravity vector (thrust direction undefined)
ERR_YAW_SINGULAR = 17      #: flat map: thrust axis parallel to y_C (Z-Y-X yaw undefined)

RIGID_TOL = 1e-6
SINGULAR_RTOL = 1e-12   #: articulated joint inertia below this fraction of the largest one: singular


# --------------------------------------------------------------------------- checks
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _all_finite(a, nrows):
    for i in range(nrows):
        for j in range(a.shape[1]):
            if not np.isfinite(a[i, j]):
                return False
    return True


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _check_pose(C):
    """0 if C is a finite rigid transform to RIGID_TOL, else an error code."""
    for i in range(4):
        for j in range(4):
            if not np.isfinite(C[i, j]):
                return ERR_POSE_NONFINITE
    if abs(C[3, 0]) > RIGID_TOL or abs(C[3, 1]) > RIGID_TOL or abs(C[3, 2]) > RIGID_TOL \
            or abs(C[3, 3] - 1.0) > RIGID_TOL:
        return ERR_POSE_NOT_RIGID
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += C[k, i] * C[k, j]
            if abs(s - (1.0 if i == j else 0.0)) > RIGID_TOL:
                return ERR_POSE_NOT_RIGID
    det = (C[0, 0] * (C[1, 1] * C[2, 2] - C[1, 2] * C[2, 1])
           - C[0, 1] * (C[1, 0] * C[2, 2] - C[1, 2] * C[2, 0])
           + C[0, 2] * (C[1, 0] * C[2, 1] - C[1, 1] * C[2, 0]))
    if det < 0.0:
        return ERR_POSE_NOT_RIGID
    return OK


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _check_state0(C, V0, q, qdot, g):
    """Order-0 state checks shared by the closed-form and derivative kernels: a finite rigid
    pose, finite base twist (6,), joint positions and rates (n,) and gravity (3,)."""
    code = _check_pose(C)
    if code != OK:
        return code
    for a in range(6):
        if not np.isfinite(V0[a]):
            return ERR_TWIST_NONFINITE
    for j in range(q.shape[0]):
        if not (np.isfinite(q[j]) and np.isfinite(qdot[j])):
            return ERR_Q_NONFINITE
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    return OK


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _check_common(g, wext, text, order):
    """Finite gravity, applied wrenches and external torques in the rows a call uses."""
    for a in range(3):
        if not np.isfinite(g[a]):
            return ERR_GRAVITY_NONFINITE
    for i in range(wext.shape[0]):
        if not _all_finite(wext[i], order + 1):
            return ERR_EXTW_NONFINITE
    if text.shape[0] > 0 and text.shape[1] > 0 and not _all_finite(text, order + 1):
        return ERR_EXTT_NONFINITE
    return OK


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _factorials(m):
    """k! for k = 0..m-1 (scales derivatives to and from Taylor coefficients)."""
    fact = np.empty(m)
    fact[0] = 1.0
    for k in range(1, m):
        fact[k] = fact[k - 1] * k
    return fact


# --------------------------------------------------------------------------- small algebra
# Helpers take whole arrays plus indices (no sub-array views: views are refcounted objects
# in numba and dominated the run time of small models) and return scalars/tuples.
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _cross(a0, a1, a2, b0, b1, b2):
    """a x b as a tuple."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@intrinsic
def _f64_ptr(typingctx, addr):
    """Cast an address (uintp) to a float64 pointer (for :func:`_carve`)."""
    sig = types.CPointer(types.float64)(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))
    return sig, codegen


@intrinsic
def _i64_ptr(typingctx, addr):
    """Cast an address (uintp) to an int64 pointer (the model's int table inside a work buffer)."""
    sig = types.CPointer(types.int64)(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.int64)))
    return sig, codegen


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _carve(ws, o, shape):
    """View of ``ws[o:o + prod(shape)]`` with ``shape``, made without a reference-counted owner
    (numba would otherwise count references on every use of every work array; the caller keeps
    ``ws`` alive for the duration of the kernel)."""
    return carray(_f64_ptr(ws.ctypes.data + 8 * o), shape)


# A work buffer starts with a copy of the model: ``[N, bodyi (2N int64 bits), bodyf (19N)]``,
# so the hot-path entries take one array for model and workspace (fewer arguments to dispatch).
@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def work_offset(N):
    """Offset of the work region in a buffer made by :func:`_model_header` (N bodies)."""
    return 1 + 21 * N


@njit(cache=True, error_model="numpy", fastmath=_FAST)
def _model_header(bodyi, bodyf, work):
    """A work buffer holding the model header followed by ``work`` floats; returns (ws, offset)."""
    N = bodyi.shape[0]
    o = work_offset(N)
    ws = np.empty(o + work)
    ws[0] = N
    bi = carray(_i64_ptr(ws.ctypes.data + 8), (N, 2))
    bf = _carve(ws, 1 + 2 * N, (N, 19))
    for i in range(N):
        bi[i, 0] = bodyi[i, 0]
        bi[i, 1] = bodyi[i, 1]
        for a in range(19):
            bf[i, a] = bodyf[i, a]
    return ws, o


@njit(cache=True, inline="always", error_model="numpy", fastmath=_FAST)
def _model_views(ws):
    """(N, bodyi, bodyf, offset of the work region) of a work buffer made by :func:`_model_header`."""
    N = int(ws[0])
    bodyi = carray(_i64_ptr(ws.ctypes.data + 8), (N, 2))
    bodyf = _carve(ws, 1 + 2 * N, (N, 19))
    return N, bodyi, bodyf, work_offset(N)


_NO_WEXT_K = np.zeros((0, 0, 6))   # "no applied wrenches" / "no external torques" (compile-time constants)
_NO_TEXT_K = np.zeros((0, 0))
_F1 = types.float64[::1]
_F2 = types.float64[:, ::1]


#: read-only float64 array of any layout (C, Fortran, strided; writeable arrays convert to it):
#: the second signature of each hot-path entry, so that every float64 array of the right number
#: of dimensions is dispatched by numba's type match, never by a failed dispatch (TypeError).
_A2 = types.Array(types.float64, 2, "A", readonly=True)


def _hot_sigs(n_in, tail):
    """[C-contiguous inputs, any-layout inputs] signatures of a hot-path entry: the work buffer,
    ``n_in`` 2-D float64 inputs, then ``tail`` (order, outputs)."""
    return [types.int64(_F1, *([x] * n_in), *tail) for x in (_F2, _A2)]


#: read-only float32 array of any layout: the float32 entries' inputs (:func:`_f32_sigs`)
_S2 = types.Array(types.float32, 2, "A", readonly=True)


def _f32_sigs(n_in, tail):
    """The two float32 signatures of a hot-path entry's float32 twin: every input float32, or only
    the third (``q``) float32 and the others float64; any layout, read-only or not."""
    q_only = [_A2, _A2, _S2] + [_A2] * (n_in - 3)
    return [types.int64(_F1, *([_S2] * n_in), *tail), types.int64(_F1, *q_only, *tail)]


@njit(cache=True, inline="always", error_model="numpy")
def _as_f64(a):
    """A fresh C-contiguous float64 copy of a 2-D array (float32 to float64 is exact)."""
    out = np.empty((a.shape[0], a.shape[1]))
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]
    return out
