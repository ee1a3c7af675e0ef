"""Every URDF of example-robot-data (pinned in requirements.txt) loads and agrees with Pinocchio,
or is refused with a clear error where the file really is invalid.

For each of the 69 files, with the loader's defaults (mimic joints independent, as Pinocchio's
default; fixed base for a massless ``world`` root joined by moving joints, as Pinocchio's default
model without a root joint; otherwise a free-flyer root):

* inverse dynamics (order 0) at two random states (random pose, twist, joints in [-pi, pi],
  velocities and accelerations) equals ``pin.rnea`` converted to our conventions
  (``reference_models.PinRef``; fixed base: ``pin.rnea`` of the fixed-base model for the joints,
  and the free-flyer model's base wrench at zero base motion for the weld's reaction), relative
  error <= 1e-9 of the reference norm (measured: <= 2e-13; the bound leaves room for the 1e4-1e6
  condition numbers of the humanoids' mass matrices, which do not enter ID at all);
* forward dynamics at the same states equals ``pin.aba``: relative error <= 1e-11 * cond(M)
  (the accelerations are M^-1 f, so rounding is amplified by the condition number; measured
  ratio <= 0.03 of that bound), and FD(ID) recovers the accelerations to the same bound;
* where our forward dynamics refuses (a joint whose articulated inertia vanished), Pinocchio's
  mass matrix at that state must be numerically singular too (smallest eigenvalue <= 1e-12 of
  the largest): the refusal is justified, not a failure to load;
* the refused files are exactly the two invalid ones, with the expected message.
"""
import glob
import os
import warnings

import numpy as np
import pytest

import geodyn_ros as gd
from reference_models import PinRef, example_robot_data_dir, pin, random_state

ROOT = example_robot_data_dir()
FILES = sorted(os.path.relpath(f, ROOT) for f in glob.glob(os.path.join(ROOT, "**", "*.urdf"), recursive=True)) \
    if ROOT else []

REFUSED = {   # file -> the start of the error: these files really are invalid
    "romeo_description/urdf/romeo_laas_small.urdf":
        r"link 'body': inertia tensor is not positive semi-definite \(principal moments \[-0.0213",
    "ur_description/urdf/ur3.urdf": r"source: .* has no <link>",
}
COUNTS = {}


def test_collection_is_the_pinned_one():
    assert ROOT is not None, "example-robot-data not installed (pinned in requirements.txt)"
    assert len(FILES) == 69, FILES
    assert set(REFUSED) <= set(FILES)


def _load(rel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gd.URDFWarning)
        return gd.load_urdf(os.path.join(ROOT, rel))


class FixedPinRef:
    """Pinocchio's fixed-base model (no root joint; its universe is the URDF root link) in our
    conventions, with the weld's reaction from the free-flyer model at zero base motion."""

    def __init__(self, path, joint_names):
        self.model = pin.buildModelFromUrdf(path)
        self.data = self.model.createData()
        self.ff = PinRef(path, joint_names)
        self.slots = [self.model.joints[self.model.getJointId(nm)] for nm in joint_names]

    def q_pin(self, q):
        qp = pin.neutral(self.model)
        for jm, qj in zip(self.slots, q):
            if jm.nq == 2:
                qp[jm.idx_q], qp[jm.idx_q + 1] = np.cos(qj), np.sin(qj)
            else:
                qp[jm.idx_q] = qj
        return qp

    def vec(self, x):
        v = np.zeros(self.model.nv)
        for jm, xj in zip(self.slots, x):
            v[jm.idx_v] = xj
        return v

    def unvec(self, v):
        return np.array([v[jm.idx_v] for jm in self.slots])

    def rnea(self, C, q, qd, qdd):
        # the fixed-base model has its root at the origin: the weld pose C is a rigid motion of
        # the whole system; joint torques are invariant when gravity is rotated with it
        g = C[:3, :3].T @ np.array([0, 0, -9.81])
        self.model.gravity = pin.Motion(g, np.zeros(3))
        tau = self.unvec(pin.rnea(self.model, self.data, self.q_pin(q), self.vec(qd), self.vec(qdd)))
        W, tau_ff = self.ff.rnea(C, np.zeros(6), np.zeros(6), q, qd, qdd)
        return W, tau, tau_ff

    def aba(self, C, q, qd, tau):
        g = C[:3, :3].T @ np.array([0, 0, -9.81])
        self.model.gravity = pin.Motion(g, np.zeros(3))
        return self.unvec(pin.aba(self.model, self.data, self.q_pin(q), self.vec(qd), self.vec(tau)))

    def mass_matrix(self, q):
        M = pin.crba(self.model, self.data, self.q_pin(q))
        M = np.triu(M) + np.triu(M, 1).T
        idx = [jm.idx_v for jm in self.slots]
        return M[np.ix_(idx, idx)]


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1e-300, np.linalg.norm(b)))


@pytest.mark.parametrize("rel_path", FILES)
def test_robot_loads_and_agrees_with_pinocchio(rel_path):
    path = os.path.join(ROOT, rel_path)
    if rel_path in REFUSED:
        with pytest.raises(ValueError, match="^" + REFUSED[rel_path]):
            _load(rel_path)
        return
    model = _load(rel_path)
    n = model.n_joints
    rng = np.random.default_rng(abs(hash(rel_path)) % 2**32)
    ref = FixedPinRef(path, model.joint_names) if model.fixed_base else PinRef(path, model.joint_names)
    # Pinocchio's free flyer moves the URDF root; ours moves model.base_link (the child of a
    # massless world/footprint root): spatial twists and wrenches are the same, the poses differ
    root = next(k for k, v in model.link_home.items() if k not in model.link_to_body) \
        if len(model.link_home) > len(model.link_to_body) else model.base_link
    to_root = model.link_home[root]
    for _ in range(2):
        s = random_state(rng, n)
        if model.fixed_base:
            V0 = None
            Vj = None
        else:
            V0 = s.V
            Vj = np.stack([s.V, s.Vd])
        Q = np.stack([s.q, s.qd, s.qdd])
        res = gd.inverse_dynamics(model, s.C, Vj, Q)
        if model.fixed_base:
            W_ref, tau_ref, tau_ff = ref.rnea(s.C, s.q, s.qd, s.qdd)
            assert rel(tau_ff, tau_ref) <= 1e-9   # the two Pinocchio models agree on the joints
        else:
            W_ref, tau_ref = ref.rnea(s.C @ to_root, s.V, s.Vd, s.q, s.qd, s.qdd)
        err_id = rel(np.concatenate([res.base_wrench[0], res.tau[0]]), np.concatenate([W_ref, tau_ref]))
        assert err_id <= 1e-9, (rel_path, err_id)

        # forward dynamics
        M = ref.mass_matrix(s.q) if model.fixed_base else ref.mass_matrix(s.C @ to_root, s.q)
        ev = np.linalg.eigvalsh(M)
        try:
            if model.fixed_base:
                fd = gd.forward_dynamics(model, s.C, None, Q[:2], None, res.tau)
            else:
                fd = gd.forward_dynamics(model, s.C, V0, Q[:2], res.base_wrench, res.tau)
        except ValueError as exc:
            # at this state, or at every state (flagged at load, model.singular: romeo's massless fingers)
            assert (str(exc).startswith("model: the articulated inertia of joint(s)")
                    or (model.singular and str(exc) == f"model: forward dynamics is undefined: {model.singular}")), exc
            assert ev[0] <= 1e-12 * ev[-1], (rel_path, "refused although Pinocchio's M is regular", ev[0], ev[-1])
            COUNTS["fd_refused_singular"] = COUNTS.get("fd_refused_singular", 0) + 1
            continue
        cond = ev[-1] / ev[0]
        bound = max(1e-11 * cond, 1e-10)
        if model.fixed_base:
            a = fd.q[2]
            a_ref = ref.aba(s.C, s.q, s.qd, res.tau[0])
            got, want = a, a_ref
        else:
            Vd_ref, qdd_ref = ref.aba(s.C @ to_root, s.V, s.q, s.qd, res.base_wrench[0], res.tau[0])
            got = np.concatenate([fd.base_twist[1], fd.q[2]])
            want = np.concatenate([Vd_ref, qdd_ref])
            # FD(ID) recovers the motion
            assert rel(got, np.concatenate([s.Vd, s.qdd])) <= bound, rel_path
        assert rel(got, want) <= bound, (rel_path, rel(got, want), cond)
        if model.fixed_base:
            assert rel(fd.q[2], s.qdd) <= bound, rel_path
