"""Staging folders: one a live publisher holds is never taken for abandoned; one a SIGKILLed publisher left is."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from capsel.publish.staging import claimed_staging, is_abandoned, staging_dir, staging_owner

HOLD = """
import sys, time
from pathlib import Path
from capsel.publish.staging import claimed_staging
with claimed_staging(Path(sys.argv[1]), "/stores/a.duckdb", "run-1"):
    print("held", flush=True)
    time.sleep(120)
"""
PROBE = "import sys; from pathlib import Path; from capsel.publish.staging import is_abandoned; " \
        "print(is_abandoned(Path(sys.argv[1])))"


def _probe(path: Path) -> str:
    # a fresh process: it started after the folder was made, as the next `capsel select` would
    return subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True,
                          timeout=60, check=True).stdout.strip()


def test_a_held_staging_folder_is_live_and_a_killed_holders_is_abandoned(tmp_path):
    staging = staging_dir(tmp_path, "sel-20260101T000000Z-0123abcd")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(staging)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert _probe(staging) == "False"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert staging.is_dir()  # SIGKILL: no cleanup ran
    assert _probe(staging) == "True"


def test_an_unheld_folder_newer_than_this_process_is_left_alone(tmp_path):
    # the instant between a publisher's mkdir and its lock: too young to be anyone's leftover
    staging = staging_dir(tmp_path, "sel-20260101T000000Z-0123abcd")
    staging.mkdir()
    assert not is_abandoned(staging)


def test_the_claim_names_its_owner_beside_the_folder_and_removes_both_on_the_way_out(tmp_path):
    staging = staging_dir(tmp_path, "sel-20260101T000000Z-0123abcd")
    with claimed_staging(staging, "/stores/a.duckdb", "run-1") as claimed:
        (claimed / "data.jsonl").write_text("{}\n")
        assert staging_owner(staging) == {"made_by": "capsel publish", "database": "/stores/a.duckdb",
                                          "run_id": "run-1", "selection_id": "sel-20260101T000000Z-0123abcd"}
        assert sorted(path.name for path in claimed.iterdir()) == ["data.jsonl"]  # never published with it
    assert sorted(tmp_path.iterdir()) == []
