"""The ``message_types`` parameter: the typed ``geodyn_msgs`` messages, or the deprecated layouts.

Every node that publishes or subscribes a jet topic declares ``message_types``:

* ``typed`` (default): the ``geodyn_msgs`` messages (``doc/reference/messages.md``), one per
  topic kind below, with a ``std_msgs/Header`` and named fields;
* ``multiarray`` (**deprecated**, kept for release 0.2 and removed after it): the
  ``std_msgs/Float64MultiArray`` layouts of release 0.1 (:mod:`geodyn_ros.ros.wire.jets`), the
  stamp as two doubles in ``data``. A node set to it logs one warning at start-up.

One setting per node covers all of its jet topics: two nodes that talk must use the same one (a
publisher and a subscriber of different types never match in DDS; ``doc/reference/nodes.md``
says how to migrate). The topics that are not jets keep their types (``feedforward/wrench``,
``cmd/*``, ``~/inputs_used``, ``sim/delivered``).

=================  ===============================  ==========================
topic kind         typed                            ``multiarray`` layout
=================  ===============================  ==========================
``reference``      ``geodyn_msgs/ReferenceJet``     reference jet
``flat_reference`` ``geodyn_msgs/FlatReference``    flat reference jet
``jet``            ``geodyn_msgs/FeedforwardJet``   feedforward jet
``desired``        ``geodyn_msgs/DesiredState``     reference jet
``flat_jet``       ``geodyn_msgs/FeedforwardJet``   flat feedforward jet
``rotor_speeds``   ``geodyn_msgs/RotorSpeeds``      rotor-speed jet
``linearization``  ``geodyn_msgs/Linearization``    linearization blocks
=================  ===============================  ==========================
"""
from __future__ import annotations

from .params import ConfigurationError

__all__ = ["MESSAGE_TYPES", "MESSAGE_TYPES_PARAMETER", "KINDS", "MessageTypes", "check_message_types",
           "require_geodyn_msgs", "type_name"]

#: the values of ``message_types``; the first is the default
MESSAGE_TYPES = ("typed", "multiarray")

#: ``{name: (default, description)}`` for a node's ``PARAMETERS`` table
MESSAGE_TYPES_PARAMETER = {
    "message_types": ("typed", "Types of the jet topics (reference, flat_reference, feedforward/jet, "
                      "desired/state, feedforward/flat_jet, feedforward/rotor_speeds, ~/linearization): "
                      "'typed' = geodyn_msgs (ReferenceJet, FlatReference, FeedforwardJet, DesiredState, "
                      "RotorSpeeds, Linearization); 'multiarray' = the std_msgs/Float64MultiArray layouts of "
                      "release 0.1, DEPRECATED (kept for release 0.2, removed after it). Nodes that talk "
                      "must use the same value."),
}

#: topic kind -> the ``geodyn_msgs`` message name
KINDS = {"reference": "ReferenceJet", "flat_reference": "FlatReference", "jet": "FeedforwardJet",
         "desired": "DesiredState", "flat_jet": "FeedforwardJet", "rotor_speeds": "RotorSpeeds",
         "linearization": "Linearization"}

DEPRECATION = ("message_types 'multiarray' is deprecated: the std_msgs/Float64MultiArray layouts are kept "
               "for release 0.2 and removed after it; set message_types 'typed' on every node (the "
               "geodyn_msgs messages, doc/reference/messages.md)")


def check_message_types(value: str) -> str:
    """``value`` if it is one of :data:`MESSAGE_TYPES`, else :class:`ConfigurationError` naming it."""
    if value not in MESSAGE_TYPES:
        raise ConfigurationError(f"message_types: '{value}' is not one of {', '.join(MESSAGE_TYPES)}; "
                                 "use 'typed' (geodyn_msgs; 'multiarray' is deprecated)")
    return value


def type_name(kind: str, typed: bool = True) -> str:
    """The ROS type name of topic ``kind`` (``geodyn_msgs/ReferenceJet`` or
    ``std_msgs/Float64MultiArray``)."""
    if kind not in KINDS:
        raise ValueError(f"kind: '{kind}' is not one of {', '.join(KINDS)}")
    return f"geodyn_msgs/{KINDS[kind]}" if typed else "std_msgs/Float64MultiArray"


def require_geodyn_msgs() -> None:
    """Nothing if ``geodyn_msgs`` is importable, else :class:`ConfigurationError` in one line
    saying how to build it (a colcon workspace that built this package alone lacks it)."""
    try:
        import geodyn_msgs.msg  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            f"message_types: 'typed' needs the geodyn_msgs interface package, which is not importable "
            f"({type(exc).__name__}: {exc}); build it (make venv, or in a colcon workspace: colcon build "
            "--base-paths src/geodyn_ros src/geodyn_ros/geodyn_msgs, doc/howto/colcon.md) and source the "
            "workspace, or set message_types 'multiarray' (deprecated)") from None


class MessageTypes:
    """The checked ``message_types`` of a node: :attr:`typed` and :meth:`type_of`.

    node : the node (its logger gets the deprecation warning, once); value : the parameter's value.
    """

    def __init__(self, node, value: str):
        self.value = check_message_types(value)
        self.typed = self.value == "typed"
        if self.typed:
            require_geodyn_msgs()
        elif node is not None:
            node.get_logger().warning(DEPRECATION)

    def type_of(self, kind: str):
        """The message class of topic ``kind`` (:data:`KINDS`) under this setting."""
        if kind not in KINDS:
            raise ValueError(f"kind: '{kind}' is not one of {', '.join(KINDS)}")
        if not self.typed:
            from std_msgs.msg import Float64MultiArray
            return Float64MultiArray
        import geodyn_msgs.msg
        return getattr(geodyn_msgs.msg, KINDS[kind])

    def name_of(self, kind: str) -> str:
        """:func:`type_name` of ``kind`` under this setting."""
        return type_name(kind, self.typed)
