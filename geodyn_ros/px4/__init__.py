"""PX4: the autopilot's frames, its control allocation and thrust model (ROS-free; layer 3 beside
``control``). The ROS side of PX4's uXRCE-DDS interface builds on these (issue 44)."""
