"""Hostile pools and wrong-footed commands through the real CLI, on real DuckDB files (issue 32): each ends in a
quarantine row with its reason, a reported skip, or one `error:` line with its exit code; counts always add up."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from capsel.db import open_db
from capsel.faults import FAULT_POINT_ENV
from tests.support.capsel_cli import DB, capsel_env, one_line_error, query, run_capsel

pytestmark = pytest.mark.e2e


def ingested(cwd: Path, *args: str) -> dict:
    done = run_capsel(cwd, "ingest", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def adds_up(totals: dict) -> bool:
    return totals["n_read"] == totals["n_inserted"] + totals["n_duplicates"] + totals["n_quarantined"]


def quarantined(cwd: Path) -> list[tuple]:
    return query(cwd, "select source_row, reason, detail, raw_text from quarantine order by source_row")


def test_an_unterminated_quote_costs_its_line_alone(tmp_path):
    (tmp_path / "pool.csv").write_text('instruction,output\nq1,a1\n"q2 oops,a2\nq3,a3\nq4,a4\n')
    totals = ingested(tmp_path, "pool.csv", "--domain", "d")["totals"]
    assert (totals["n_read"], totals["n_inserted"], totals["n_quarantined"]) == (4, 3, 1) and adds_up(totals)
    assert quarantined(tmp_path) == [(2, "unterminated_quote", "a quoted field opens on line 3 and the file ends "
                                      "before it closes; line 3 alone is quarantined, and the rows from line 4 on "
                                      "are read as usual", '"q2 oops,a2')]
    assert query(tmp_path, "select instruction from candidates order by source_row") == [("q1",), ("q3",), ("q4",)]


# A process's peak RSS starts at the RSS of the process it was forked from (the kernel keeps the high-water mark
# across fork and exec), and a test session grows to hundreds of MB: so capsel is forked by a launcher of a few MB,
# which reports its child's peak.
_LAUNCHER = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "capsel", *sys.argv[1:]])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(done.returncode)
"""


def peak_rss_mib(cwd: Path, *args: str, env: dict) -> tuple[float, str]:
    """Peak resident memory of `capsel ARGS` (and of any process it waited for), and its stdout."""
    done = subprocess.run([sys.executable, "-c", _LAUNCHER, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.splitlines()[-1]) / 1024, done.stdout


def test_a_huge_quoted_field_that_never_closes_is_read_in_bounded_memory(tmp_path):
    # 40 MB after the stray quote, as 10,000 copies of one long record: little for DuckDB to keep, so what the
    # reader holds shows; the old reader held it all in one field (a 41 MB file reached 437 MB)
    record = "Question: " + "why does the quote never close? " * 128 + ",an answer\n"
    for name, head in (("pool.csv", '"a stray quote,a\n'), ("clean.csv", "")):
        with open(tmp_path / name, "w") as handle:
            handle.write("instruction,output\n" + head)
            handle.writelines([record] * 10_000)
    env = capsel_env(tmp_path, CAPSEL_INGEST_WORKERS="0", CAPSEL_INGEST_CHUNK_ROWS="1000")
    clean, _ = peak_rss_mib(tmp_path, "ingest", "clean.csv", "--domain", "d", "--db", "clean.duckdb", env=env)
    peak, stdout = peak_rss_mib(tmp_path, "ingest", "pool.csv", "--domain", "d", "--json", env=env)
    size = (tmp_path / "pool.csv").stat().st_size / 2**20
    print(f"\npeak RSS ingesting {size:.0f} MiB behind an unterminated quote: {peak:.0f} MiB "
          f"(the same records without the quote: {clean:.0f} MiB)")
    totals = json.loads(stdout)["totals"]
    assert (totals["n_read"], totals["n_inserted"], totals["n_duplicates"], totals["n_quarantined"]) == \
        (10_001, 1, 9_999, 1)
    [(row, reason, detail, raw)] = quarantined(tmp_path)
    assert (row, reason, raw) == (1, "unterminated_quote", '"a stray quote,a')
    assert "opens on line 2" in detail and "from line 3 on" in detail
    # the reader holds at most a record's limit (8 MB here) and reads 1 MiB at a time, not the 40 MiB field
    assert peak < clean + 16, (peak, clean)


def test_a_csv_header_naming_a_column_twice_refuses_the_file(tmp_path):
    (tmp_path / "pool.csv").write_text("instruction,output,instruction\nq1,a1,other\nq2,a2,other\n")
    message = one_line_error(run_capsel(tmp_path, "ingest", "pool.csv", "--domain", "d"), 3)
    assert message == (f"error: {tmp_path / 'pool.csv'}: the CSV header names column 'instruction' twice (columns 1 "
                       "and 3); which one holds a row's value cannot be known, so nothing of the file was read: "
                       "rename or drop one")
    assert query(tmp_path, "select count(*) from sources") == [(0,)]
    assert query(tmp_path, "select status from runs") == [("failed",)]


def test_blank_lines_are_no_rows_in_jsonl_and_csv_alike_and_are_reported(tmp_path):
    (tmp_path / "pool.jsonl").write_text('{"instruction": "q1", "output": "a"}\n\n   \n'
                                         '{"instruction": "q2", "output": "a"}\n\n')
    (tmp_path / "pool.csv").write_text("instruction,output\nq3,a\n\n   \nq4,a\n\n")
    done = run_capsel(tmp_path, "ingest", "pool.jsonl", "pool.csv", "--domain", "d")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("2 rows (source") == 2 and done.stdout.count("3 blank lines passed over, no rows") == 2
    assert query(tmp_path, "select n_rows_read, n_inserted, n_quarantined from sources") == [(2, 2, 0)] * 2
    [(counters,)] = query(tmp_path, "select counters from runs")
    assert json.loads(counters)["blank_lines"] == 6


def test_empty_files_are_skipped_alike_in_every_format_on_fresh_and_used_databases(tmp_path):
    empty = ["empty.parquet", "empty.jsonl", "empty.json", "empty.csv"]
    for name in empty:
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "good.jsonl").write_text('{"instruction": "q", "output": "a"}\n')
    reason = "an empty file (0 bytes), no rows to read"
    # a fresh database, Parquet first (it was unreadable, exit 3); then one that holds a source, JSONL first (an
    # empty .jsonl used to be recorded, and every later empty file was "already ingested" as the same sha256)
    fresh = ingested(tmp_path, *empty, "--domain", "d")
    ingested(tmp_path, "good.jsonl", "--domain", "d")
    used = run_capsel(tmp_path, "ingest", *reversed(empty), "--domain", "d", "--json")
    assert used.returncode == 0, used.stderr
    for report, order in ((fresh, empty), (json.loads(used.stdout), list(reversed(empty)))):
        assert report["files"] == [] and report["totals"]["n_read"] == 0
        assert report["skipped"] == [{"path": str(tmp_path / name), "reason": reason} for name in order]
    assert query(tmp_path, "select path from sources") == [(str(tmp_path / "good.jsonl"),)]
    said = run_capsel(tmp_path, "ingest", "empty.parquet", "--domain", "d")
    assert said.returncode == 0 and f"not read {tmp_path / 'empty.parquet'}: {reason}" in said.stdout


def test_an_out_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "somefile").write_text("not a folder\n")
    for out, expected in (("somefile", f"{tmp_path / 'somefile'} is a file, not a folder"),
                          ("somefile/sub", f"{tmp_path / 'somefile' / 'sub'} cannot be made: "
                                           f"{tmp_path / 'somefile'} is a file")):
        message = one_line_error(run_capsel(tmp_path, "select", "--method", "random", "--budget", "5", "--out", out), 3)
        assert message == f"error: --out {expected}; name a folder (a missing one is made)"


def drop_file_permission_override() -> None:
    """In the child: lose root's right to ignore file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "cannot drop a capability")


def test_a_database_in_a_read_only_folder_is_one_line_naming_the_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    open_db(folder / DB).close()
    (tmp_path / "pool.jsonl").write_text('{"instruction": "q", "output": "a"}\n')
    folder.chmod(0o555)
    try:
        as_root = os.geteuid() == 0
        if as_root:
            try:  # the check itself, in this process's child, before the real run
                subprocess.run(["true"], preexec_fn=drop_file_permission_override, check=True)
            except (OSError, subprocess.SubprocessError) as exc:
                pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE: {exc}")
        done = run_capsel(tmp_path, "ingest", "pool.jsonl", "--domain", "d",
                          env=capsel_env(tmp_path, CAPSEL_DB_PATH=str(folder / DB)),
                          preexec_fn=drop_file_permission_override if as_root else None)
    finally:
        folder.chmod(0o755)
    message = one_line_error(done, 3)
    assert message == (f"error: cannot write {folder / DB}.wal (Permission denied): DuckDB writes its log beside the "
                       f"database, so the folder {folder} must be writable; nothing was committed: make it writable, "
                       "or move the database (--db)")


def test_a_random_selection_of_an_unscored_pool_states_counts_that_add_up(tmp_path):
    rows = [{"instruction": f"{domain} question {i}", "output": "a", "domain": domain}
            for domain, n in (("code", 30), ("math", 50)) for i in range(n)]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    ingested(tmp_path, "pool.jsonl")
    done = run_capsel(tmp_path, "select", "--method", "random", "--budget", "20%", "--out", "sels")
    assert done.returncode == 0, done.stderr
    [folder] = (tmp_path / "sels").glob("sel-*")
    manifest = json.loads((folder / "manifest.json").read_text())
    per_domain = {entry["domain"]: entry["n_members"] for entry in manifest["domains"]}
    assert per_domain == {"code": 6, "math": 10} and manifest["n_members"] == sum(per_domain.values())
    card = (folder / "README.md").read_text()
    assert "| code | 30 | 0 | 30 | 6 | 6 |" in card and "| math | 50 | 0 | 50 | 10 | 10 |" in card
    assert manifest["gate"]["success"]


def test_an_ingest_killed_after_its_commit_is_a_completed_run(tmp_path):
    (tmp_path / "pool.jsonl").write_text('{"instruction": "q", "output": "a"}\n{"instruction": "q2", "output": "a"}\n')
    killed = run_capsel(tmp_path, "ingest", "pool.jsonl", "--domain", "d",
                        env=capsel_env(tmp_path, **{FAULT_POINT_ENV: "ingest.after_commit"}))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = run_capsel(tmp_path, "ingest", "pool.jsonl", "--domain", "d")  # a writer: it marks dead runs
    assert again.returncode == 0 and "interrupted" not in again.stderr, again.stderr
    [(status, counters), _] = query(tmp_path, "select status, counters from runs order by started_at")
    assert status == "completed" and json.loads(counters)["domains"]["d"]["n_inserted"] == 2
    assert query(tmp_path, "select count(*) from candidates") == [(2,)]
