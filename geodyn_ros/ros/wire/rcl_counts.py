"""Subscription counts of rclpy publishers from compiled code: ``rcl_publisher_get_subscription_count``.

``geodyn_node`` publishes ``feedforward/wrench``, ``feedforward/joint_efforts`` and
``~/inputs_used`` only while they have a subscriber, so every cycle asks Fast DDS how many each
has (a new subscriber gets the very next cycle; counts kept from match events would lag behind
the executor: ``doc/explanation/performance.md``). Through rclpy that is a pybind11 call per
publisher, ten times the cost of the question. :func:`count_into` asks rcl itself, from a numba
kernel: the same function rclpy's ``Publisher.get_subscription_count`` calls, on the same
``rcl_publisher_t`` (``Publisher.handle.pointer``).

:func:`rcl_count_function` finds the address of ``rcl_publisher_get_subscription_count`` in the
``librcl`` the process has loaded (``/proc/self/maps``), or returns 0 where it cannot (another OS, a
static build): the callers then ask rclpy. A publisher must outlive every call, as for rclpy's
bound methods: the node destroys its publishers only after its executor has stopped.
"""
from __future__ import annotations

import ctypes

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["count_into", "rcl_count_function", "publisher_address"]

_ADDR = None


def rcl_count_function() -> int:
    """The address of ``rcl_publisher_get_subscription_count`` in the loaded ``librcl``, or 0."""
    global _ADDR
    if _ADDR is None:
        _ADDR = 0
        try:
            with open("/proc/self/maps") as f:
                paths = sorted({ln.split()[-1] for ln in f if ln.rstrip().endswith(("/librcl.so",))})
            if paths:
                fn = ctypes.CDLL(paths[0]).rcl_publisher_get_subscription_count
                _ADDR = int(ctypes.cast(fn, ctypes.c_void_p).value or 0)
        except (OSError, AttributeError, ValueError):   # not Linux, or no such library or symbol
            _ADDR = 0
    return _ADDR


def publisher_address(publisher) -> int:
    """The ``rcl_publisher_t *`` of an rclpy ``Publisher`` (0 if rclpy does not expose it)."""
    return int(getattr(publisher.handle, "pointer", 0) or 0)


@intrinsic
def count_into(typingctx, fn, publisher, out):
    """``fn(publisher, out)``: ``rcl_ret_t rcl_publisher_get_subscription_count(const rcl_publisher_t *,
    size_t *)`` through its address ``fn``, the count written at the address ``out`` (int64
    addresses, e.g. ``arr.ctypes.data``); returns the ``rcl_ret_t`` (0: ok)."""
    sig = types.int32(types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i8p, i64p = ir.IntType(8).as_pointer(), ir.IntType(64).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p, i64p])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [builder.inttoptr(args[1], i8p), builder.inttoptr(args[2], i64p)])
    return sig, codegen
