"""The install-time warm-up (``python -m geodyn_ros.warmup``) runs every algorithm family once
and exits 0; with the kernels already cached (the suite has compiled them) it takes seconds."""
import subprocess
import sys


def test_warmup_runs_and_reports_progress():
    out = subprocess.run([sys.executable, "-m", "geodyn_ros.warmup"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith("importing geodyn_ros (loads or compiles the kernels)")
    assert "done: the kernels are cached for the next start" in lines[-1]
