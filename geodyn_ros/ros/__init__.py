"""ROS 2 adapters of geodyn_ros: thin nodes over the ROS-free dynamics core.

Importing the nodes needs ``rclpy`` and the standard message packages (``std_msgs``,
``geometry_msgs``, ``sensor_msgs``, ``nav_msgs``, ``diagnostic_msgs``, ``rosgraph_msgs``);
``import geodyn_ros`` itself never does, and neither does ``import geodyn_ros.ros``.

Subpackages, by job, bottom to top (a subpackage imports only from those before it;
``test/package/test_layers.py``):

``common``   what every node shares: parameter declaration (``params``), signals and the spin loop
             (``runtime``), ``/diagnostics`` (``diagnostics``), the robot model from a parameter or
             the ``robot_description`` topic (``description``), the executables and their topics
             (``interfaces``: ``--help`` and the docs).
``wire``     the wire formats, ROS <-> numpy: stamps, poses and odometry (``conversions``), strict
             decoding of serialized messages (``cdr``), the jet layouts (``jets``), the compiled
             decoders and writers of ``geodyn_node``'s hot path (``fast_inputs``, ``raw_outputs``),
             the rotor-command messages (``actuator_commands``).
``inputs``   input handling: stamp-matched sets (``input_sync``), plausibility limits
             (``plausibility``), the controllers' state and feedforward inputs (``tracking_inputs``,
             ``actuator_inputs``).
``nodes``    the executables: ``geodyn_node`` (with its parameter table ``geodyn_params``),
             ``sim_node``, ``actuated_sim_node``, ``reference_node`` (and its ``mission`` topics),
             ``controller_node``, ``actuated_controller_node``, ``flat_controller_node``.
``loops``    whole ROS loops in one process (``closed_loop``, ``actuated_closed_loop``,
             ``underactuated_closed_loop``, ``fly_closed_loop``) and their shared set-up
             (``loop_session``).

The module paths before this split (``geodyn_ros.ros.<module>``, e.g. ``geodyn_ros.ros.jets`` or
``python -m geodyn_ros.ros.closed_loop``) keep working: they name the same module objects as the
new paths (:data:`MOVED`), with a ``DeprecationWarning`` that gives the new path.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED"]

#: old module name (``geodyn_ros.ros.<name>``) -> its subpackage since ``ros/`` was split by job
MOVED = {
    **dict.fromkeys(("params", "runtime", "diagnostics", "description", "interfaces"), "common"),
    **dict.fromkeys(("conversions", "cdr", "jets", "fast_inputs", "raw_outputs", "actuator_commands"), "wire"),
    **dict.fromkeys(("input_sync", "plausibility", "tracking_inputs", "actuator_inputs"), "inputs"),
    **dict.fromkeys(("geodyn_node", "geodyn_params", "sim_node", "actuated_sim_node", "reference_node", "mission",
                     "controller_node", "actuated_controller_node", "flat_controller_node"), "nodes"),
    **dict.fromkeys(("loop_session", "closed_loop", "actuated_closed_loop", "underactuated_closed_loop",
                     "fly_closed_loop"), "loops"),
}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``geodyn_ros.ros.<old>`` -> the module object of ``geodyn_ros.ros.<subpackage>.<old>``.

    An import of the old name imports the new module and binds the same object under both names
    (so ``isinstance`` and module state agree). ``python -m geodyn_ros.ros.<old>`` runs the new
    module as ``__main__`` (:meth:`get_code`)."""

    _PREFIX = __name__ + "."

    @classmethod
    def new_name(cls, fullname: str) -> str | None:
        if not fullname.startswith(cls._PREFIX):
            return None
        old = fullname[len(cls._PREFIX):]
        return f"{cls._PREFIX}{MOVED[old]}.{old}" if old in MOVED else None

    def find_spec(self, fullname, path=None, target=None):
        if self.new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = self.new_name(spec.name)
        warnings.warn(f"{spec.name} moved to {new}; the old path will be removed in a later release",
                      DeprecationWarning, stacklevel=3)
        return importlib.import_module(new)

    def exec_module(self, module):
        """Nothing to run: the new module was executed by its own import."""

    def is_package(self, fullname):
        return False

    def get_code(self, fullname):
        """``python -m <old name>``: run the new module as the main module."""
        new = self.new_name(fullname)
        return compile(f"import runpy\nrunpy.run_module({new!r}, run_name='__main__', alter_sys=True)\n",
                       f"<{fullname} -> {new}>", "exec")

    def get_source(self, fullname):
        return None


if not any(isinstance(f, _MovedModule) for f in sys.meta_path):
    sys.meta_path.append(_MovedModule())
