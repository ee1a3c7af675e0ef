"""Smoke test of bench/ros/bench_soak.py (a few seconds; the 10-minute figures are in the README):
it runs the node in measured mode at 1 kHz, reports drops, latency percentiles and RSS, and the
node exits 0 on SIGINT."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_soak_bench_runs(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "ros" / "bench_soak.py"), "--minutes", "0.05",
                          "--warmup", "0.5", "--rss-every", "1", "--csv", str(tmp_path / "rss.csv")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "latency ms: median" in text and "RSS MB: start" in text and "exit status on SIGINT: 0" in text
    assert (tmp_path / "rss.csv").read_text().startswith("t_s,rss_mb")
