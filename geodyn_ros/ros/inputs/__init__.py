"""Input handling of the geodyn_ros nodes (imports ``common`` and ``wire``).

``input_sync``        ``geodyn_node``'s stamp-matched input sets (approximate-time pairs, the sampled reference).
``latest_inputs``     ``input_policy`` latest (a cycle per odom, the other sensors propagated to it), ``~/inputs_used``,
                      the sensor QoS parameters.
``plausibility``      the magnitude limits every input is checked against.
``tracking_inputs``   the controllers' state and feedforward inputs (stamp pairing, start-up window).
``actuator_inputs``   what the two actuated controllers share (motor states, command output, saturation).
"""
