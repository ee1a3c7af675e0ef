"""Closed-loop tracking of the Table 3 trajectory, without ROS, and its error metrics.

:func:`simulate_tracking` runs exactly the loop that the ROS nodes run in lock-step
(``geodyn_sim`` -> ``geodyn_reference`` -> ``geodyn_node`` -> ``geodyn_controller`` ->
``geodyn_sim``), as plain function calls: at every step ``t_k = k dt`` the state is read, the
reference of :func:`geodyn_ros.trajectories.table3_reference` is evaluated at ``t_k``, the
feedforward is ``gd.inverse_dynamics`` on the reference (reference input mode), the command is
:func:`geodyn_ros.control.feedback.tracking_command`, and MuJoCo advances one step with the command
held. It is the fast, ROS-free twin of ``geodyn_closed_loop`` (tests compare the two).

:class:`TrackingLog` holds the sampled actual and desired trajectories and computes the RMS
errors reported by both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import geodyn_ros as gd

from ..control.feedback import TrackingGains, tracking_command
from ..lie import Ad, Ad_inv, log_so3
from ..model.resources import shipped_urdf
from ..trajectories import TABLE3_JOINT_NAMES, table3_reference

__all__ = ["TrackingLog", "table3_initial_state", "simulate_tracking"]


@dataclass
class TrackingLog:
    """Actual and desired trajectories sampled at the same times.

    Attributes
    ----------
    t : (T,) times [s].
    p, p_d : (T, 3) actual and desired base-link positions [m] (world).
    R, R_d : (T, 3, 3) actual and desired base attitudes.
    q, q_d : (T, n) actual and desired joint positions [rad], columns ``joint_names``.
    joint_names : tuple of str.
    """

    t: np.ndarray
    p: np.ndarray
    p_d: np.ndarray
    R: np.ndarray
    R_d: np.ndarray
    q: np.ndarray
    q_d: np.ndarray
    joint_names: tuple

    @classmethod
    def from_samples(cls, t, poses, q, joint_names, reference=table3_reference) -> "TrackingLog":
        """Build a log from actual samples, evaluating the desired values with ``reference``."""
        t = np.asarray(t, dtype=float)
        poses = np.asarray(poses, dtype=float)
        refs = [reference(ti, 0) for ti in t]
        return cls(t, poses[:, :3, 3].copy(), np.array([r.base_pose[:3, 3] for r in refs]),
                   poses[:, :3, :3].copy(), np.array([r.base_pose[:3, :3] for r in refs]),
                   np.asarray(q, dtype=float), np.array([r.q[0] for r in refs]), tuple(joint_names))

    def position_error(self) -> np.ndarray:
        """(T,) base position error norm ``|p - p_d|`` [m]."""
        return np.linalg.norm(self.p - self.p_d, axis=1)

    def attitude_error(self) -> np.ndarray:
        """(T,) base attitude error angle ``|log(R_d^T R)|`` [rad]."""
        return np.array([np.linalg.norm(log_so3(Rd.T @ R)) for R, Rd in zip(self.R, self.R_d)])

    def joint_error(self) -> np.ndarray:
        """(T, n) joint errors ``q - q_d`` [rad]."""
        return self.q - self.q_d

    def rms(self) -> dict:
        """RMS errors over all samples: ``position_m``, ``attitude_deg``, ``joint_deg`` (over all
        joints and samples; 0 without joints) and the maxima ``max_position_m``, ``max_joint_deg``."""
        if not len(self.t):      # an empty log (a row stopped before its window): nothing measured
            nan = float("nan")
            return {"position_m": nan, "attitude_deg": nan, "joint_deg": nan, "max_position_m": nan,
                    "max_joint_deg": nan}
        ep, eR, eq = self.position_error(), self.attitude_error(), self.joint_error()
        if not eq.size:          # no joints (n = 0): no joint error
            eq = np.zeros(1)
        return {
            "position_m": float(np.sqrt(np.mean(ep ** 2))),
            "attitude_deg": float(np.degrees(np.sqrt(np.mean(eR ** 2)))),
            "joint_deg": float(np.degrees(np.sqrt(np.mean(eq ** 2)))),
            "max_position_m": float(ep.max()),
            "max_joint_deg": float(np.degrees(np.abs(eq).max())),
        }


def table3_initial_state():
    """``(C, V, q, qd)`` of the Table 3 reference at ``t = 0`` (spatial twist ``V``)."""
    ref = table3_reference(0.0, 0)
    return ref.base_pose, ref.base_twist[0].copy(), ref.q[0].copy(), ref.q[1].copy()


def simulate_tracking(duration: float = 30.0, *, use_feedforward: bool = True, order: int = 2,
                      timestep: float = 1e-3, gains: TrackingGains | None = None,
                      integrator: str = "RK4", source=None, gravity=(0.0, 0.0, -9.81)) -> TrackingLog:
    """Track the Table 3 trajectory in MuJoCo with feedforward + PD, without ROS.

    Parameters
    ----------
    duration : float
        Simulated time [s]; ``round(duration / timestep)`` steps.
    use_feedforward : bool
        Add ``gd.inverse_dynamics`` of the reference (order-0 part of an order-``order`` call, as
        ``geodyn_node`` publishes it); False = PD only with the same gains.
    order : int
        Order of the inverse-dynamics call (the order-0 outputs do not depend on it).
    timestep : float
        Simulator and control period [s] (zero-order hold).
    gains : TrackingGains, optional
    integrator : str
        MuJoCo integrator (see :class:`geodyn_ros.sim.MujocoSim`).
    source : URDF source, default the shipped ``aerial_manipulator.urdf``.
    gravity : (3,) gravity [m/s^2] of both the simulator and the feedforward.

    Returns
    -------
    TrackingLog
        Samples at ``t_k = k * timestep`` for ``k = 0..steps`` (the state before each step and
        the final state).
    """
    from ..sim import MujocoSim

    gains = TrackingGains() if gains is None else gains
    sim = MujocoSim(shipped_urdf() if source is None else source, timestep=timestep,
                    gravity=gravity, integrator=integrator)
    model = sim.model
    if tuple(model.joint_names) != TABLE3_JOINT_NAMES:
        raise ValueError(f"source: joints {model.joint_names} are not the Table 3 joints {TABLE3_JOINT_NAMES}")
    C0, V0, q0, qd0 = table3_initial_state()
    sim.reset(C0, V0, q0, qd0)
    steps = int(round(duration / timestep))
    g = np.asarray(gravity, dtype=float)
    t_log = np.empty(steps + 1)
    poses = np.empty((steps + 1, 4, 4))
    q_log = np.empty((steps + 1, model.n_joints))
    for k in range(steps + 1):
        t = k * timestep
        C, Vb, q, qd = sim.base_pose(), sim.base_twist_body(), sim.q(), sim.qd()
        t_log[k], poses[k], q_log[k] = t, C, q
        if k == steps:
            break
        ref = table3_reference(t, order)
        Cd = ref.base_pose
        Vbd = Ad_inv(Cd) @ ref.base_twist[0]
        W_ff = tau_ff = None
        if use_feedforward:
            res = gd.inverse_dynamics(model, Cd, ref.base_twist, ref.q, order, gravity=g)
            W_ff = Ad(Cd).T @ res.base_wrench[0]
            tau_ff = res.tau[0]
        W, tau = tracking_command(gains, C, Vb, q, qd, Cd, Vbd, ref.q[0], ref.q[1], W_ff, tau_ff)
        sim.set_command(W, tau)
        sim.step()
    return TrackingLog.from_samples(t_log, poses, q_log, model.joint_names)
