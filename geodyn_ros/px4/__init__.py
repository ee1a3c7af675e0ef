"""PX4 (ROS-free; layer 3 beside ``control``): :mod:`~geodyn_ros.px4.frames` (PX4's NED/FRD <->
ENU/FLU, ``VehicleOdometry`` <-> the base pose and body twist) and :mod:`~geodyn_ros.px4.allocation`
(PX4's rotor effectiveness from ``CA_ROTORn_*``, its normalised pseudo-inverse and sequential
desaturation, the ``THR_MDL_FAC`` thrust model, and their inverse for the bridge). The ROS side of
PX4's uXRCE-DDS interface builds on these (issue 44)."""
