"""A 1.1 GB line costs its own row: ingest quarantines it and keeps the rows around it, an evaluation file refuses
it in one line, and no process holds it (peak RSS under 1 GiB). The files are streamed to disk, never built in
memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.fixtures.pool import tiny_model_dir

HUGE = 1_100_000_000
PEAK_LIMIT_KIB = 1 << 20  # 1 GiB
# runs the command given and prints the largest peak RSS of it and of any process it waited for (KiB)
MEASURED = ("import resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stderr.write(done.stderr)\nsys.stdout.write(done.stdout)\n"
            "print(f'\\nPEAK {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss} EXIT {done.returncode}')\n")


def _write_with_huge_row(path: Path, before: bytes, open_row: bytes, after: bytes) -> Path:
    """`before`, then a row that opens with `open_row` and runs on for HUGE bytes, then `after`, 8 MB at a time."""
    block = b"y" * (8 << 20)
    with path.open("wb") as handle:
        handle.write(before + open_row)
        for _ in range(HUGE // len(block)):
            handle.write(block)
        handle.write(b'", "domain": "d"}' + after)
    return path


def _capsel(tmp_path: Path, *args: str) -> tuple[int, int, str, str]:
    """(exit code, peak RSS in KiB, stdout, stderr) of `capsel ARGS`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(tmp_path / "out"),
               COLUMNS="200", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-m", "capsel", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    stdout, _, tail = done.stdout.rpartition("\nPEAK ")
    peak, _, code = tail.split()
    return int(code), int(peak), stdout, done.stderr


GOOD = [{"instruction": "first good row", "output": "kept", "domain": "d"},
        {"instruction": "last good row", "output": "kept too", "domain": "d"}]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_ingest_quarantines_the_huge_row_and_keeps_the_others(tmp_path, suffix):
    first, last = (json.dumps(row).encode() for row in GOOD)
    if suffix == ".jsonl":
        pool = _write_with_huge_row(tmp_path / "pool.jsonl", first + b"\n", b'{"instruction": "huge", "output": "',
                                    b"\n" + last + b"\n")
    else:
        pool = _write_with_huge_row(tmp_path / "pool.json", b"[" + first + b",\n",
                                    b'{"instruction": "huge", "output": "', b",\n" + last + b"]")
    code, peak, stdout, stderr = _capsel(tmp_path, "ingest", str(pool))
    pool.unlink()
    assert code == 0 and "Traceback" not in stderr, stderr[-2000:]
    assert peak < PEAK_LIMIT_KIB, f"peak RSS {peak / 1024:.0f} MiB"
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    kept = sorted(row[0] for row in con.execute("select instruction from candidates").fetchall())
    [(row, reason, raw)] = con.execute("select source_row, reason, raw_text from quarantine").fetchall()
    con.close()
    assert kept == ["first good row", "last good row"]
    assert (row, reason) == (2, "oversized_line") and raw.startswith('{"instruction": "huge"') and len(raw) <= 256


def test_an_evaluation_file_with_a_huge_row_is_refused_in_one_line(tmp_path):
    model = tiny_model_dir(tmp_path / "model")
    first, last = (json.dumps(row).encode() for row in GOOD)
    heldout = _write_with_huge_row(tmp_path / "heldout.jsonl", first + b"\n", b'{"instruction": "huge", "output": "',
                                   b"\n" + last + b"\n")
    code, peak, _, stderr = _capsel(tmp_path, "evaluate", f"base:{model}", "--eval", f"loss:{heldout}")
    heldout.unlink()
    assert code == 3 and "Traceback" not in stderr, stderr[-2000:]
    line = " ".join(stderr.split())  # one message, however the terminal width wrapped it
    assert line.startswith("error:") and line.count("error:") == 1 and "row 2: oversized_line" in line
    assert peak < PEAK_LIMIT_KIB, f"peak RSS {peak / 1024:.0f} MiB"
