"""geodyn_ros: exact higher-order Lie-group dynamics for floating-base robots.

The core is ROS-free (``import geodyn_ros`` never imports rclpy)::

    import geodyn_ros as gd
    model = gd.load_urdf("robot.urdf")
    res = gd.inverse_dynamics(model, base_pose, base_twist, q, order=3)

Layers (folders, each importing only from lower ones; README "Repository layout"):
:mod:`~geodyn_ros.lie` (SE(3) helpers) and :mod:`~geodyn_ros.trajectories` -> :mod:`~geodyn_ros.model`
(the Model, the URDF loader, shipped resources) -> :mod:`~geodyn_ros.algorithms` (compiled kernels
in ``algorithms.kernels``, input checks, the spatial dynamics core, batch, EoM, linearization,
representations (body / spatial / hybrid / mixed base twists and wrenches), constrained models,
reduced dynamics, the flat map of under-actuated multirotors; the public entry points in
``algorithms.api``) -> control, ``sim``, ``ros``.
For control loops, :class:`~geodyn_ros.algorithms.workspace.Workspace` evaluates inverse and forward
dynamics of one model and order into preallocated outputs it owns.
Conventions: see the README ("Conventions") and ``CONVENTIONS.md``.
"""
import warnings as _warnings

_format_warning = _warnings.formatwarning


def _one_line_warning(message, category, filename, lineno, line=None):
    """The package's own warnings (``URDFWarning`` and the others its modules define, or a message
    that starts ``geodyn_ros:``) print as one line, ``<Category>: <message>``, with no source path
    or code line; any other warning prints as Python prints it."""
    text = str(message)
    if getattr(category, "__module__", "").startswith("geodyn_ros") or text.startswith("geodyn_ros: "):
        return f"{category.__name__}: {' '.join(text.split())}\n"
    return _format_warning(message, category, filename, lineno, line)


_warnings.formatwarning = _one_line_warning   # before anything of the package can warn

from ._kernel_cache import install as _install_kernel_cache  # noqa: E402

_install_kernel_cache()   # before any kernel is defined: a cached kernel is reused only while nothing it compiled in changed

from .algorithms.api import center_of_mass, forward_dynamics, forward_kinematics, hybrid_dynamics, inverse_dynamics
from .algorithms.dynamics import (DEFAULT_GRAVITY, ForwardDynamicsResult, HybridDynamicsResult,
                                  InverseDynamicsResult, KinematicsResult)
from .algorithms.eom import coriolis_matrix, gravity_vector, mass_matrix
from .algorithms.flat import FlatResult, flat_inverse_dynamics
from .algorithms.linearization import (FDDerivatives, IDDerivatives, Linearization, forward_dynamics_derivatives,
                                       input_labels, inverse_dynamics_derivatives, inverse_mass_matrix, linearize,
                                       state_labels)
from .algorithms.reduced import (CoriolisDecomposition, DecoupledForwardResult, DecoupledInverseResult,
                                 ReducedTerms, base_twist_from_locked, centroidal_locked_terms,
                                 connection_curvature, coriolis_decomposition, decoupled_forward_dynamics,
                                 decoupled_inertia, decoupled_inverse_dynamics, integrate_decoupled,
                                 interaction_matrix, local_connection, locked_inertia, locked_inertia_derivative,
                                 locked_inertia_velocity, locked_velocity, reduced_terms, spatial_momentum)
from .algorithms.representations import (REPRESENTATIONS, angular_first, convert_twist, convert_wrench,
                                         linear_first, twist_transform)
from .algorithms.workspace import Workspace
from .model.model import Model
from .model.urdf import INERTIA_RTOL, SingularMassMatrixWarning, URDFWarning, load_urdf

__version__ = "0.1.0"

__all__ = [
    "load_urdf", "Model", "URDFWarning", "SingularMassMatrixWarning", "INERTIA_RTOL",
    "inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "forward_kinematics", "Workspace",
    "flat_inverse_dynamics", "FlatResult", "center_of_mass",
    "mass_matrix", "coriolis_matrix", "gravity_vector",
    "inverse_dynamics_derivatives", "forward_dynamics_derivatives", "inverse_mass_matrix", "linearize",
    "state_labels", "input_labels", "IDDerivatives", "FDDerivatives", "Linearization",
    "REPRESENTATIONS", "convert_twist", "convert_wrench", "twist_transform", "linear_first", "angular_first",
    "reduced_terms", "locked_inertia", "local_connection", "locked_velocity", "base_twist_from_locked",
    "spatial_momentum", "decoupled_inertia", "locked_inertia_velocity", "locked_inertia_derivative",
    "interaction_matrix", "coriolis_decomposition", "connection_curvature", "decoupled_forward_dynamics",
    "decoupled_inverse_dynamics", "integrate_decoupled", "centroidal_locked_terms",
    "ReducedTerms", "CoriolisDecomposition", "DecoupledForwardResult", "DecoupledInverseResult",
    "InverseDynamicsResult", "ForwardDynamicsResult", "HybridDynamicsResult", "KinematicsResult",
    "DEFAULT_GRAVITY",
]
