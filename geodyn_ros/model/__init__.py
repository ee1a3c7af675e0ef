"""The robot model (layer 1): :class:`Model` (spatial screws, packed arrays), the URDF loader and
the shipped resources. Imports only :mod:`geodyn_ros.lie` below it."""
from .model import PRISMATIC, REVOLUTE, Model
from .urdf import INERTIA_RTOL, SingularMassMatrixWarning, URDFWarning, load_urdf

__all__ = ["Model", "REVOLUTE", "PRISMATIC", "load_urdf", "URDFWarning", "SingularMassMatrixWarning", "INERTIA_RTOL"]
