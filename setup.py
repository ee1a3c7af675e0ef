"""ament_python package definition for geodyn_ros."""
from glob import glob

from setuptools import find_packages, setup

package_name = "geodyn_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "bench", "bench.*"]),
    # console-script shims (clean stop during the heavy imports), the launch files' argument check, and
    # geodyn_ros2 (the docs' ros2 param/service/topic/pkg commands without the ros2 CLI)
    py_modules=["geodyn_ros_entry", "geodyn_ros_launch", "geodyn_ros2"],
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/urdf", glob("urdf/*.urdf") + glob("urdf/*.xacro")),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml") + glob("config/*.rviz")),
        ("share/" + package_name + "/config/vehicles", glob("config/vehicles/*.yaml")),
    ],
    package_data={package_name: ["py.typed", "cli_help.json"]},
    install_requires=["setuptools", "numpy", "numba", "xacro", "urdfdom-py", "lxml", "pyyaml", "scipy"],
    # flight recordings (geodyn_fly --record FILE.mcap): imported only when recording
    extras_require={"record": ["mcap", "mcap-ros2-support"]},
    zip_safe=True,
    maintainer="geodyn_ros developers",
    maintainer_email="geodyn-ros@example.org",
    description="Exact higher-order Lie-group dynamics (inverse, forward, hybrid) for floating-base robots, with ROS 2 adapters.",
    license="BSD-3-Clause",
    entry_points={"console_scripts": [
        "geodyn_node = geodyn_ros_entry:geodyn_node",
        "geodyn_sim = geodyn_ros_entry:geodyn_sim",
        "geodyn_markers = geodyn_ros_entry:geodyn_markers",
        "geodyn_px4_bridge = geodyn_ros_entry:geodyn_px4_bridge",
        "geodyn_px4_sim = geodyn_ros_entry:geodyn_px4_sim",
        "geodyn_actuated_sim = geodyn_ros_entry:geodyn_actuated_sim",
        "geodyn_reference = geodyn_ros_entry:geodyn_reference",
        "geodyn_controller = geodyn_ros_entry:geodyn_controller",
        "geodyn_actuated_controller = geodyn_ros_entry:geodyn_actuated_controller",
        "geodyn_flat_controller = geodyn_ros_entry:geodyn_flat_controller",
        "geodyn_closed_loop = geodyn_ros_entry:geodyn_closed_loop",
        "geodyn_fly = geodyn_ros_entry:geodyn_fly",
        "geodyn_warmup = geodyn_ros_entry:geodyn_warmup",
        "geodyn_vehicle = geodyn_ros_entry:geodyn_vehicle",
    ]},
)
