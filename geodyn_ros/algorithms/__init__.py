"""The algorithms (layer 2): kinematics, inverse, forward and hybrid dynamics, trajectories
(batch), equations of motion, linearization, representations, constrained models, reduced
dynamics, the flat map of under-actuated multirotors (:mod:`.flat`) and the preallocated
:class:`~geodyn_ros.algorithms.workspace.Workspace`.

Sub-layers, bottom to top (each module imports only from its own row or a lower one):
``kernels`` (numba) < ``checks`` < ``dynamics`` (the spatial single-sample core) <
``batch``, ``eom`` < ``linearization``, ``representations``, ``constrained``, ``reduced``,
``flat`` <
``api`` (the public entry points: hot path, then dispatch) < ``workspace``.
The public names are re-exported by :mod:`geodyn_ros`; this package ``__init__`` imports nothing.
"""
