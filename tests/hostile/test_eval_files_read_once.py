"""Evaluation files are read once, when they are checked: a symlink, FIFO, device or oversized file is refused
then, and a file swapped afterwards (here: while the evaluate flow fine-tunes) changes nothing."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import orjson
import pytest

from capsel.errors import CapselError
from capsel.evaluation import eval_files
from capsel.evaluation.eval_files import stage_file
from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.support.finetune_fixtures import tiny_base_model, tiny_rows


def test_the_copy_is_what_was_read_and_named_by_its_content(tmp_path):
    source = tmp_path / "heldout.jsonl"
    source.write_bytes(b'{"instruction": "q", "output": "a"}\n')
    copy, sha256 = stage_file(source, tmp_path / "staging", "[[eval]]")
    assert sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert copy == tmp_path / "staging" / f"{sha256}.jsonl" and copy.read_bytes() == source.read_bytes()
    source.write_bytes(b"changed later\n")
    assert copy.read_bytes() == b'{"instruction": "q", "output": "a"}\n'
    assert [path.name for path in (tmp_path / "staging").iterdir()] == [copy.name]  # no partial left


def test_a_symlink_fifo_device_or_folder_is_refused_at_once(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(outside)
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    cases = {"link.jsonl": "is a symbolic link", "fifo.jsonl": "not a regular file",
             "folder.jsonl": "not a regular file", "/dev/zero": "not a regular file"}
    for name, problem in cases.items():
        started = time.monotonic()
        with pytest.raises(CapselError, match=problem):
            stage_file(tmp_path / name, tmp_path / "staging", "[[eval]]")
        assert time.monotonic() - started < 5  # a FIFO with no writer never blocks the open
    with pytest.raises(CapselError, match="NUL byte"):
        stage_file(Path("held\x00out.jsonl"), tmp_path / "staging", "[[eval]]")


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(eval_files, "MAX_EVAL_FILE_BYTES", 100)
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 101)
    with pytest.raises(CapselError, match="101 bytes, over the 100-byte bound"):
        stage_file(big, tmp_path / "staging", "[[eval]]")
    assert not (tmp_path / "staging").exists()


@pytest.mark.e2e
@pytest.mark.skipif(FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON})")
def test_swapping_the_file_while_the_flow_fine_tunes_changes_nothing(prefect_server, tmp_path):
    root = tmp_path / "out"
    env = prefect_server.env(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(root),
                             CAPSEL_TRAINER_PYTHON=str(LF_PYTHON), CAPSEL_THREADS="1")
    base = tiny_base_model(tmp_path / "base", layers=4)
    (tmp_path / "pool.jsonl").write_bytes(b"".join(orjson.dumps({**row, "domain": "toy"}) + b"\n"
                                                   for row in tiny_rows(30)))
    for args in (("ingest", "pool.jsonl"), ("score", "--model", str(base)), ("select", "--budget", "50%", "--out", "sels")):
        done = subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    heldout = root / "eval" / "heldout.jsonl"
    heldout.parent.mkdir(parents=True)
    heldout.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in tiny_rows(40)[30:]))
    original = hashlib.sha256(heldout.read_bytes()).hexdigest()
    outside = tmp_path / "secret.jsonl"  # outside the allowed folders, and of another length
    outside.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in tiny_rows(3)))

    swapped = threading.Event()

    def swap_once_training() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list((root / "models").glob(".tmp-ft-*")):
            time.sleep(0.05)
        link = heldout.with_name("swap")
        link.symlink_to(outside)
        os.replace(link, heldout)
        swapped.set()

    swapper = threading.Thread(target=swap_once_training, daemon=True)
    swapper.start()
    done = subprocess.run([sys.executable, "-m", "capsel", "flow", "evaluate", "--eval", f"loss:{heldout}",
                           "--model", str(base), "--epochs", "auto"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    swapper.join(timeout=5)
    assert swapped.is_set() and heldout.is_symlink()  # the swap happened while it trained
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    stored = con.execute("select distinct eval_file_sha256, n from evaluations").fetchall()
    n_rows = con.execute("select count(distinct row_index) from evaluation_rows").fetchone()[0]
    con.close()
    assert stored == [(original, 10)] and n_rows == 10  # the file as it was checked, not the swapped one
