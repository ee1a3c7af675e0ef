# geodyn_ros developer entry points. Every target builds .venv from the pinned
# requirements on first use, so a fresh machine needs only Python 3.11 + pip.
PY     ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# steps 1-4 (pip, geodyn_ros, kernels), then step 5 (the interfaces): every target needs the latter
BASE_STAMP := $(VENV)/.installed
STAMP  := $(VENV)/.interfaces
# what step 5 builds from: an edited .msg (or build script) rebuilds the interfaces alone
MSG_SOURCES := $(wildcard geodyn_msgs/msg/*.msg) geodyn_msgs/CMakeLists.txt geodyn_msgs/package.xml \
               $(wildcard tools/tf2_msgs/msg/*.msg) tools/tf2_msgs/CMakeLists.txt tools/tf2_msgs/package.xml \
               $(wildcard tools/actuator_msgs/msg/*.msg) tools/actuator_msgs/CMakeLists.txt tools/actuator_msgs/package.xml \
               $(wildcard tools/px4_msgs/msg/*.msg) tools/px4_msgs/CMakeLists.txt tools/px4_msgs/package.xml \
               tools/build_interfaces.py
OUT    ?= out
SPEED  ?= 1

.PHONY: venv lint docs test test-fresh-clone test-real-launch test-gazebo two-robots demo actuated underactuated sensing-demo sensing budget figures lqr rejection bench-lqr bench-flat demo-ideal demo-actuated-ros demo-underactuated-ros bench-actuated paper bench bench-layouts bench-table4 bench-node bench-soak fd-sweep falling-cat bench-linearize fly clean

# ament_index_python finds the package's share/ files under the venv prefix (pip install .)
export AMENT_PREFIX_PATH := $(abspath $(VENV))

venv: $(STAMP)

$(BASE_STAMP): requirements.txt setup.py
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY) on PATH (or run: make PY=python3 ...)"; exit 1; }
	@echo "venv 1/5: creating $(VENV) with $(PY) (seconds)"
	$(PY) -m venv $(VENV)
	@echo "venv 2/5: pip install of the pinned requirements.txt (about 2 GB installed; 1-3 minutes with a warm pip cache on a quiet machine, about 6 with both cores busy, more on a slow network)"
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	@echo "venv 3/5: geodyn_ros itself, editable (seconds)"
	@# compat mode: the editable install is a path entry (a .pth with the clone root), so a folder named
	@# geodyn_ros in the working directory (the clone itself, seen from its parent) cannot shadow the
	@# package as an empty namespace package (test/package/test_install.py). Built with the venv's own
	@# pinned setuptools (requirements.txt; no isolated build env that would take the newest one, which
	@# may drop compat mode); PYTHONWARNINGS silences setuptools' "compat mode is transitional" banner,
	@# which looks like a failure and is not one (errors still show)
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q --no-deps --no-build-isolation -e . --config-settings editable_mode=compat
	@# an editable install has no share/geodyn_ros: link the launch, URDF and config files (and the ament
	@# index entry) into the venv, as pip install . installs them (tools/link_share.py)
	$(BIN)/python tools/link_share.py
	@echo "venv 4/5: compiling the numba kernels once, cached for every later run (5-8 minutes on a quiet 2-core machine, up to 2 hours when both cores are busy with other jobs; a line every 30 s, then one per family)"
	@# the console script (geodyn_ros_entry): it says what it does before the package's import compiles, and
	@# every 30 s while it does (python -m geodyn_ros.warmup prints nothing until the import is over)
	$(BIN)/geodyn_warmup
	touch $(BASE_STAMP)

$(STAMP): $(BASE_STAMP) $(MSG_SOURCES)
	@echo "venv 5/5: building the ROS interfaces geodyn_msgs (and tf2_msgs/TFMessage, actuator_msgs/Actuators and the px4_msgs fixture where no install has them) into $(VENV) (about 80 s on a quiet 2-core machine, 9-12 minutes when both cores are busy; a line per step and every 20 s while it compiles)"
	$(BIN)/python tools/build_interfaces.py
	touch $(STAMP)
	@echo "venv: ready ($(VENV))"

## Lint every Python file of the repository (pyflakes' rules: undefined names, unused imports and
## variables, redefinitions; ruff.toml). CI runs it before the tests.
lint: $(STAMP)
	$(BIN)/ruff check .

## Run the whole test suite (CI runs this, then test-real-launch). The real-launch and the Gazebo
## tests are skipped here (GEODYN_REAL_LAUNCH=0, GEODYN_GAZEBO=0): they start process trees and run
## alone in test-real-launch and test-gazebo.
test: $(STAMP)
	GEODYN_REAL_LAUNCH=0 GEODYN_GAZEBO=0 $(BIN)/python -m pytest -q -n 2 --durations=20 test

## The test suite in a fresh clone of the committed tree with nothing beside it (CI runs every step
## in such a clone: .ci/run).
test-fresh-clone:
	PY=$(PY) bash .ci/fresh_clone

## The launch files under the real launch/launch_ros, with and without a namespace, alone (no xdist):
## colcon build per launch; the first launch compiles the kernels (minutes, cached afterwards).
test-real-launch: $(STAMP)
	GEODYN_REAL_LAUNCH=1 $(BIN)/python -m pytest -q -rs -p no:xdist test/ros/loops/test_real_launch.py --durations=0

## The tests against a real Gazebo (gz-sim 8, server only), alone: test/gazebo/. They find `gz` on
## PATH, or source GEODYN_GZ_SETUP=<file> first (e.g. /opt/ros/jazzy/setup.bash), and skip in one
## line without it. One gz server per vehicle (about 30 s each on an idle core).
test-gazebo: $(STAMP)
	$(BIN)/python -m pytest -q -rs -p no:xdist test/gazebo --durations=0

## The main job, both vehicles: the actuated (TiltHex) table, then the under-actuated (collinear
## hexarotor, flatness) table with its error budget; figures in $(OUT)/. A line per row as it
## finishes (8 + 10 rows of 35 s simulated each: a few minutes per table on a quiet 2-core machine,
## three times that when it is loaded). DURATION=3: 3 scored seconds per row instead of 30, after
## the same 5 s pre-roll (the short mode CI runs); DURATION is passed only when given. Then the same
## two vehicles under motion-capture sensing, from the ground (sensing-demo: 8 rows).
demo: actuated underactuated sensing-demo

DEMO_DURATION = $(if $(filter command line environment%,$(origin DURATION)),--duration $(DURATION))

## The actuated aerial manipulator (TiltHex rotors with gz-sim's motor lag,
## series-elastic arm joints, the controller consuming the jets) on Table 3, 30 s, rows
## pd/ff0/ff1/ff2 (+ ideal actuators and two diagnostic rows): prints the table and writes
## $(OUT)/actuated_loop.png (errors against time, one curve per row). SPEED=3: 3x faster Table 3.

actuated: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.actuated_loop --speed $(SPEED) --out $(OUT) $(DEMO_DURATION)

## The under-actuated aerial manipulator (collinear hexarotor with gz-sim's X4 rotors, elastic arm
## joints, the flatness-based controller) on the figure-eight reference, 30 s after a 5 s pre-roll,
## rows rigid/ff0/ff1/ff2/ideal + four diagnostic rows; then the small model that explains the
## ratios (the error budget). Writes $(OUT)/underactuated_loop.png. SPEED=2: twice as fast.
underactuated: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.underactuated_loop --speed $(SPEED) --out $(OUT) --json-out $(OUT)/underactuated.json $(DEMO_DURATION)
	$(BIN)/python -m geodyn_ros.examples.underactuated_budget --speed $(SPEED)

## The two demo vehicles under realistic sensing (the mocap profile of config/sensors.yaml: 240 Hz,
## 4.2 ms, fused with the IMU; joints over a servo bus), each row taking off from the ground and
## landing, scored in flight; printed beside the perfect tables of make demo; JSON in $(OUT)/.
sensing-demo: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.sensing_table --vehicles actuated,underactuated --conditions mocap --json-out $(OUT)/sensing_demo.json $(DEMO_DURATION)

## The table that tells the truth (doc/tutorials/sensing_table.md): the two demo vehicles and
## Borinot, every level, sensing perfect / mocap / onboard, and the under-actuated vehicle with
## 5, 10 and 20 ms of odometry latency, and the baselines (PD plus gravity and INDI on the TiltHex,
## INDI on the hexarotor); 60 rows of 10 s scored (about 19 CPU minutes; JOBS rows in parallel,
## default 2). JSON in $(OUT)/sensing.json.
JOBS ?= 2
sensing: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.sensing_table --latency-sweep underactuated --baselines --jobs $(JOBS) --json-out $(OUT)/sensing.json $(DEMO_DURATION)

## Your own aerial manipulator (doc/howto/fly_your_vehicle.md): geodyn_fly on URDF + VEHICLE (a
## vehicle file, or a shipped name: borinot_flying_arm_2, hextilt_flying_arm_5, iris, hexarotor,
## tilthex; URDF may be omitted for those): the report's summary, then every level of the
## vehicle's rank in MuJoCo on REFERENCE (figure8, hover or a mission file), DURATION s each.
URDF ?=
VEHICLE ?= borinot_flying_arm_2
REFERENCE ?= figure8
fly: $(STAMP)
	$(BIN)/python -m geodyn_ros.loops.fly $(if $(URDF),--urdf $(URDF)) --vehicle $(VEHICLE) --reference $(REFERENCE) $(DEMO_DURATION)

## The README's and the docs' figures, doc/_static/actuated_loop.png and underactuated_loop.png
## (committed): the full demo, 30 s per row at speed 1 (about 12 minutes), tables on stdout.
figures: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.actuated_loop --out doc/_static
	$(BIN)/python -m geodyn_ros.examples.underactuated_loop --out doc/_static

## The error budget of the under-actuated table alone (no simulator; seconds).
budget: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.underactuated_budget --speed $(SPEED)

## The linearization in the loop: the geometric controller against the time-varying LQR (gains
## precomputed along the reference, and recomputed online as the node does) on the under-actuated
## vehicle, cases nominal / arm +10 % / gust / 0.3 m + 20 deg offset, 10 s each; JSON in $(OUT)/lqr.json.
lqr: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.lqr_loop --json-out $(OUT)/lqr.json

## A plant that is not the model, the rejection options off and on (doc/howto/model_error.md):
## the collinear, the actuated and the Borinot vehicle, every level, issue 53's cases, +-10 % mass,
## wind (10 seeds) and an end-effector push, 5 s pre-roll + 3 s each; about 750 flights (2 to 3
## CPU hours; JOBS in parallel). JSON in $(OUT)/rejection.json.
rejection: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.rejection_table --jobs $(JOBS) --json $(OUT)/rejection.json

## What the LQR costs online: linearize vs Pinocchio, the gain update vs scipy's DARE, a command,
## and the gain thread's rate, latency and CPU in the ROS loop.
bench-lqr: $(STAMP)
	$(BIN)/python bench/loops/bench_lqr.py --csv $(OUT)/bench_lqr.csv

## The flat map against inverse dynamics of the same order (r = 0..3), and pin.rnea, in one run.
bench-flat: $(STAMP)
	$(BIN)/python bench/core/bench_flat.py --csv $(OUT)/bench_flat.csv

## The ideal-actuator closed loop over ROS 2 (MuJoCo sim + reference + geodyn_node + controller),
## 30 s of Table 3 headless, with and without feedforward: RMS errors, plot and CSV in $(OUT)/.
demo-ideal: $(STAMP)
	$(BIN)/python -m geodyn_ros.ros.loops.closed_loop --out $(OUT)

## The actuated loop over ROS 2 (geodyn_actuated_sim + reference + geodyn_node + actuated controller),
## DURATION s (default 10) of Table 3 from t = 0 per row pd/ff0/ff1/ff2, compared step for step
## with the in-process loop: table on stdout, metrics in $(OUT)/actuated_ros.json.
DURATION ?= 10
demo-actuated-ros: $(STAMP)
	$(BIN)/python -m geodyn_ros.ros.loops.closed_loop --actuated --duration $(DURATION) --compare --json-out $(OUT)/actuated_ros.json

## The under-actuated loop over ROS 2 (geodyn_actuated_sim with the collinear hexarotor + the figure-eight
## flat reference + geodyn_node in flat mode + geodyn_flat_controller), DURATION s (default 10) from t = 0
## per row rigid/ff0/ff1/ff2, compared step for step with the in-process loop: table on stdout, metrics
## in $(OUT)/underactuated_ros.json.
demo-underactuated-ros: $(STAMP)
	$(BIN)/python -m geodyn_ros.ros.loops.closed_loop --underactuated --duration $(DURATION) --compare --json-out $(OUT)/underactuated_ros.json

## Two robots on one ROS domain under /robot1 and /robot2 (aerial manipulator + quadruped), one
## geodyn_node each, fed and checked for crosstalk (names, frames, stamps, values).
two-robots: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.two_robots

## Actuated controller compute per cycle and the in-process actuated loop's real-time factor.
bench-actuated: $(STAMP)
	$(BIN)/python bench/loops/bench_actuated.py

## The paper's Sec. 7 experiment (ID r=0..5 -> FD round trip, Fig. 3 plot).
paper: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.paper_experiment --out $(OUT)

## Benchmarks against Pinocchio in the same run (figures, not assertions).
bench: $(STAMP)
	$(BIN)/python bench/core/bench_core.py

## Input layouts (Fortran, transposed, strided, read-only, float32, lists) vs C float64, and order-0
## parity with pin.rnea / pin.aba (plain functions and gd.Workspace), in one run.
bench-layouts: $(STAMP)
	$(BIN)/python bench/core/bench_layouts.py --csv $(OUT)/bench_layouts.csv $(ARGS)

## The paper's Table 4 / Fig. 4 (scaling in N and r, CasADi baseline, batch); ARGS=--full for N up to 996.
bench-table4: $(STAMP)
	$(BIN)/python bench/core/bench_table4.py --out $(OUT) $(ARGS)

## Derivatives vs central geometric finite differences over step sizes (V-shaped error plot in $(OUT)/).
fd-sweep: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.fd_step_sweep --out $(OUT)

## Mishra et al. Sec. VI-B: falling-cat gait of a free-floating LWR-4+, exact vs cBVI (plot in $(OUT)/).
falling-cat: $(STAMP)
	$(BIN)/python -m geodyn_ros.examples.falling_cat --out $(OUT)

## Derivative / linearization calls vs Pinocchio's derivative calls, and scaling in N.
bench-linearize: $(STAMP)
	$(BIN)/python bench/core/bench_linearize.py --out $(OUT) $(ARGS)

## geodyn_node at 1 kHz input (separate process): rate, drops, latency median/p99.
bench-node: $(STAMP)
	$(BIN)/python bench/ros/bench_node.py --out $(OUT)

## geodyn_node soak: measured mode at 1 kHz for MINUTES (default 10): drops, latency, RSS slope.
MINUTES ?= 10
bench-soak: $(STAMP)
	$(BIN)/python bench/ros/bench_soak.py --minutes $(MINUTES) --csv $(OUT)/soak_rss.csv

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info

## The documentation site (doc/, Sphinx + MyST), warnings as errors; HTML in $(OUT)/docs.
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html doc $(OUT)/docs
