"""Compiled loops for ``cycle_stages.py``: a kernel timed without Python's call around it."""
from numba import njit

from geodyn_ros.algorithms.kernels.flat import flat_map_ws
from geodyn_ros.algorithms.kernels.inverse import inverse_dynamics_into


@njit(cache=True)
def id_loop(buf, C, V, Q, order, k):  # pragma: no cover (compiled)
    """``inverse_dynamics_into`` ``k`` times (the kernel alone, no dispatch)."""
    code = 0
    for _ in range(k):
        code |= inverse_dynamics_into(buf, C, V, Q, order)
    return code


@njit(cache=True)
def flat_loop(ws, com, yaw, q, order, oC, oV, oq, ow, otau, oT, otb, k):  # pragma: no cover (compiled)
    """``flat_map_ws`` ``k`` times."""
    code = 0
    for _ in range(k):
        code |= flat_map_ws(ws, com, yaw, q, order, oC, oV, oq, ow, otau, oT, otb)
    return code
