"""benchmarks/ingest.py runs end to end on a small pool, so the ingest benchmark script cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_small_pool_is_generated_ingested_twice_and_reported(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ingest.py"), "--rows", "3000", "--repeats", "2",
         "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert report["rows"] == 3000 and len(report["runs"]) == 2
    assert all(run["rows_per_s"] == pytest.approx(3000 / run["wall_s"]) for run in report["runs"])
    assert report["largest_peak_rss_bytes"] == max(run["peak_rss"] for run in report["runs"]) > 0
    generated = next(line for line in lines if line.startswith("generated "))
    counts = {kind: int(generated.split(f"'{kind}': ")[1].split(",")[0].rstrip("}"))
              for kind in ("unique", "duplicate", "bad")}
    with duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True) as con:
        landed = {
            "unique": con.execute("select count(*) from candidates").fetchone()[0],
            "duplicate": con.execute("select count(*) from duplicates").fetchone()[0],
            "bad": con.execute("select count(*) from quarantine").fetchone()[0],
        }
    assert landed == counts
    assert sum(counts.values()) == 3000
