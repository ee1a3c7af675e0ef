"""The install-time warm-up (``python -m geodyn_ros.warmup``) runs every algorithm family once
and exits 0; with the kernels already cached (the suite has compiled them) it takes seconds.

``test_no_node_cycle_compiles_a_kernel`` (issue 32): in flat mode the first ``flat_reference``
after ``make venv`` spent 80 s compiling (the node passed a writable gravity array, the warm-up the
library's read-only default: another numba specialization of ``flat_map`` and
``inverse_dynamics``), and the node could not answer a stop meanwhile. Now, in a fresh process,
after ``warm()``, building ``geodyn_node`` in every input mode (flat with the rotor allocation,
measured, reference; linearization on; non-spatial representations; default and other gravity)
and running one cycle of each adds no signature to any numba dispatcher of the package: every
kernel variant a node uses was compiled (or loaded from the cache) by the warm-up itself.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_warmup_runs_and_reports_progress():
    out = subprocess.run([sys.executable, "-m", "geodyn_ros.warmup"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith("importing geodyn_ros (loads or compiles the kernels)")
    assert "done: the kernels are cached for the next start" in lines[-1]


_SCRIPT = textwrap.dedent(r'''
    import os, sys
    os.environ["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 100)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "OFF"
    import numpy as np
    from numba.core.registry import CPUDispatcher

    def signatures():
        """dispatcher -> signatures it holds (compiled in this process or loaded from the cache)."""
        out = {}
        for name, m in list(sys.modules.items()):
            if name.startswith("geodyn_ros"):
                for k, v in list(vars(m).items()):
                    if isinstance(v, CPUDispatcher):
                        out[f"{name}.{k}"] = len(v.signatures)
        return out

    from geodyn_ros.warmup import warm
    warm(verbose=False)
    import rclpy
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.serialization import serialize_message
    from geodyn_ros.lie import Ad_inv
    from geodyn_ros.ros.nodes.geodyn_node import GeodynNode
    from geodyn_ros.ros.wire.jets import make_flat_reference_msg, make_reference_msg
    from geodyn_ros.ros.wire.typed import make_flat_reference, make_reference_jet
    from geodyn_ros.trajectories import figure_eight_reference, table3_reference
    sys.path.insert(0, os.path.join(ROOT, "test"))
    from ros_harness import joint_states_msg, odometry_msg
    before = signatures()
    ctx = Context()
    rclpy.init(context=ctx)
    hexa, am = f"{ROOT}/urdf/hexarotor_manipulator.urdf.xacro", f"{ROOT}/urdf/aerial_manipulator.urdf"
    configs = [
        dict(urdf_path=hexa, input_mode="flat", actuation_config=f"{ROOT}/config/hexarotor.yaml",
             publish_linearization=True, output_representation="body"),
        dict(urdf_path=hexa, input_mode="flat", gravity=[0.0, 0.0, -9.80665], output_representation="mixed"),
        dict(urdf_path=am, input_mode="measured", publish_linearization=True, reference_representation="body",
             linearization_representation="spatial"),
        dict(urdf_path=am, input_mode="reference", output_representation="hybrid", gravity=[0.0, 0.1, -9.8]),
        dict(urdf_path=am, input_mode="reference", message_types="multiarray"),   # the deprecated layouts
        dict(urdf_path=hexa, input_mode="flat", message_types="multiarray"),
    ]
    for p in configs:
        p.update(order=2, stale_timeout=1e6)
        node = GeodynNode(context=ctx, parameter_overrides=[Parameter(k, value=v) for k, v in p.items()])
        names, now = node.model.joint_names, node.get_clock().now().nanoseconds
        legacy = p.get("message_types") == "multiarray"
        if p["input_mode"] == "flat":
            ref = figure_eight_reference(2.0, 6)
            q = np.zeros((7, len(names)))     # rotor joints (not locked without actuation_config) at 0
            q[:, :6] = ref.q[:7]
            make = make_flat_reference_msg if legacy else make_flat_reference
            node._on_flat_reference(serialize_message(make(now, ref.com[:7], ref.yaw[:7], q, names)))
        else:
            ref = table3_reference(2.0, 3)
            rep = {} if legacy else {"representation": p.get("reference_representation", "spatial")}
            make = make_reference_msg if legacy else make_reference_jet
            node._on_reference(serialize_message(make(now, ref.base_pose, ref.base_twist[:5], ref.q[:5], names,
                                                      **rep)))
            if p["input_mode"] == "measured":
                Vb = Ad_inv(ref.base_pose) @ ref.base_twist[0]
                # joint_states first: under input_policy latest each odom makes the cycle
                node._on_joint_states(serialize_message(joint_states_msg(now, names, ref.q[0], ref.q[1])))
                node._on_odom(serialize_message(odometry_msg(now, ref.base_pose, Vb[:3], Vb[3:])))
        assert node.diag.counters["cycles_published"] == 1, (p, node.diag.last_problem)
        node.destroy_node()
    after = signatures()
    new = {k: (before.get(k, 0), v) for k, v in after.items() if v > before.get(k, 0)}
    print("NEW", new)
''').replace("ROOT", repr(str(ROOT)))


def test_no_node_cycle_compiles_a_kernel():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    new = out.stdout.strip().splitlines()[-1]
    # a signature a node's cycle added after warm(): with a fresh cache (after make venv) it is a
    # compilation in that cycle (here it may be a load from a cache that an older run filled)
    assert new == "NEW {}", new
