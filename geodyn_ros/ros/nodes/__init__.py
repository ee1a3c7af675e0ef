"""The geodyn_ros executables (each module has ``main()``; nodes have a ``PARAMETERS`` table).

``geodyn_node``, ``geodyn_params``     the feedforward dynamics node and its parameter table.
``sim_node``, ``actuated_sim_node``    the MuJoCo simulator nodes.
``reference_node``, ``mission``        the reference generator and its mission topics.
``controller_node``, ``actuated_controller_node``, ``flat_controller_node``   the controllers.
"""
