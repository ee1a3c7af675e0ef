"""Compile and cache every numba kernel once, so that the first real start is fast.

The kernels are compiled on first use and cached on disk by numba (``cache=True``): next to the
package when it is writable, otherwise in numba's per-user cache directory (or
``NUMBA_CACHE_DIR``). A cold first start spends about a minute compiling; this module does that
work at install time instead::

    python -m geodyn_ros.warmup          # or the console script: geodyn_warmup

It calls every public algorithm once on the shipped robot with the argument types the library
and the nodes use (C-contiguous float64 arrays), prints one progress line per family and the
total time, and exits 0. Running it again is a no-op that takes about a second.
"""
from __future__ import annotations

import sys
import time

import numpy as np


def kernels_are_cached() -> bool:
    """True if the inverse-dynamics hot path loads from numba's cache (no compilation)."""
    from .algorithms.kernels import inverse as K
    return bool(getattr(K.inverse_dynamics_ws, "stats", None) and K.inverse_dynamics_ws.stats.cache_hits)


def warm(verbose: bool = True, orders=(0, 1, 2, 3)) -> float:
    """Compile (or load from the cache) every kernel; returns the seconds spent."""
    t0 = time.perf_counter()

    def say(msg):
        if verbose:
            print(f"[geodyn warmup {time.perf_counter() - t0:5.1f} s] {msg}", flush=True)

    say("importing geodyn_ros (loads or compiles the kernels)")
    import geodyn_ros as gd
    from .model.resources import shipped_urdf

    model = gd.load_urdf(shipped_urdf())
    n = model.n_joints
    rng = np.random.default_rng(0)
    C = np.eye(4)
    say("inverse / forward / hybrid dynamics, kinematics and the flat map")
    for r in orders:
        V = 0.1 * rng.standard_normal((r + 2, 6))
        Q = 0.1 * rng.standard_normal((r + 3, n))
        res = gd.inverse_dynamics(model, C, V, Q, r)
        gd.inverse_dynamics(model, C, V, Q, r)    # the hot path (work buffer made by the first call)
        gd.Workspace(model, r).inverse_dynamics(C, V, Q)   # geodyn_node's cycle (measured/reference modes)
        gd.forward_dynamics(model, C, V[:1], Q[:2], res.base_wrench, res.tau, r)
        gd.forward_dynamics(model, C, V[:1], Q[:2], res.base_wrench, res.tau, r)
        gd.hybrid_dynamics(model, C, V, Q, res.tau, r, prescribed=model.joint_names[:1])
        gd.forward_kinematics(model, C, V, Q, r)
        com = np.zeros((r + 5, 3))
        gd.flat_inverse_dynamics(model, com, np.zeros(r + 3), Q, r)
        gd.flat_inverse_dynamics(model, com, np.zeros(r + 3), Q, r)   # the hot path
    gd.center_of_mass(model, C, V, Q, 2)
    say("the validating paths with a node's gravity (a read-only array other than the default)")
    g = np.array([0.0, 0.0, -9.80665])
    g.setflags(write=False)    # as geodyn_ros.ros.nodes.geodyn_params.node_gravity passes it
    for r in orders:
        V = 0.1 * rng.standard_normal((r + 2, 6))
        Q = 0.1 * rng.standard_normal((r + 3, n))
        res = gd.inverse_dynamics(model, C, V, Q, r, gravity=g)
        gd.Workspace(model, r, gravity=g).inverse_dynamics(C, V, Q)
        gd.flat_inverse_dynamics(model, np.zeros((r + 5, 3)), np.zeros(r + 3), Q, r, gravity=g)
        gd.linearize(model, C, V[:1], Q[:2], res.base_wrench[:1], res.tau[:1], gravity=g)
    say("twist and wrench representations")
    for rep in ("body", "hybrid", "mixed"):
        gd.convert_twist(C, V, rep, "spatial")
        gd.convert_wrench(C, res.base_wrench, V[:r + 1], "spatial", rep)
    say("ROS message decoding and writing (geodyn_ros.ros.wire.cdr, .typed_raw: compiled at their import)")
    from .ros.wire import cdr  # noqa: F401
    try:   # the typed messages' templates and decoders (geodyn_msgs built into the venv by make venv)
        from .ros.wire import typed_raw  # noqa: F401
        from .ros.inputs import flat_store, latest_store  # noqa: F401  (geodyn_node's one call per message)
    except ImportError as exc:
        say(f"typed messages skipped ({exc}): build geodyn_msgs with make venv")
    say("trajectories (leading time axis)")
    T = 4
    Cs = np.broadcast_to(C, (T, 4, 4)).copy()
    gd.inverse_dynamics(model, Cs, np.zeros((T, 3, 6)), np.zeros((T, 4, n)), 1)
    gd.forward_dynamics(model, Cs, np.zeros((T, 1, 6)), np.zeros((T, 2, n)), np.zeros((T, 2, 6)),
                        np.zeros((T, 2, n)), 1)
    gd.flat_inverse_dynamics(model, np.zeros((T, 6, 3)), np.zeros((T, 4)), np.zeros((T, 4, n)), 1)
    say("equations-of-motion terms, derivatives and linearization")
    q, qd, V0 = Q[0], Q[1], V[0]
    gd.mass_matrix(model, C, q)
    gd.coriolis_matrix(model, C, V0, q, qd)
    gd.gravity_vector(model, C, q)
    for rep in ("spatial", "body"):
        gd.linearize(model, C, V[:1], Q[:2], res.base_wrench[:1], res.tau[:1], representation=rep)
        gd.inverse_dynamics_derivatives(model, C, V[:2], Q[:3], representation=rep)
        gd.inverse_mass_matrix(model, C, q, representation=rep)
    say("reduced (inertia-decoupled) dynamics")
    gd.reduced_terms(model, q)
    say("the waypoint planner (geodyn_reference's waypoints mode): plan, whole-body and rigid checks")
    from .loops.underactuated import hexarotor_source
    from .planning import check_feasibility
    from .planning.feasibility import Vehicle, check_rigid_rates
    from .planning.mission import load_mission
    vehicle = Vehicle.hexarotor()
    mission = load_mission(hexarotor_source().parents[1] / "config" / "mission_example.yaml")
    for r in orders:
        traj = mission.plan(0.0, r)
        check_feasibility(vehicle, traj)
        check_rigid_rates(vehicle, traj)
        mission.plan(0.5, r, traj(0.5))   # a replan from the running jets
    seconds = time.perf_counter() - t0
    say(f"done: the kernels are cached for the next start ({seconds:.1f} s)")
    return seconds


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="geodyn_warmup", description="Compile and cache every numba kernel "
                                 "of geodyn_ros ahead of time, so that no node or loop compiles on its first "
                                 "cycle (make venv runs it; about 5-8 minutes on 2 cores, once).")
    ap.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        warm(verbose=not args.quiet)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":   # pragma: no cover
    sys.exit(main())
