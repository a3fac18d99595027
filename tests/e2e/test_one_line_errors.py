"""Inputs that used to end in a traceback, through the real CLI: each is one `error:` line and a distinct exit code
(3: data or input, 2: usage), and leaves nothing half written (issue 19, findings 9 and 10)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from capsel.db import open_db
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates, tiny_model_dir
from tests.support.capsel_cli import query, run_capsel
from tests.support.scored_pool import make_pool

pytestmark = pytest.mark.e2e


def capsel(tmp_path, *args, max_file_bytes: int | None = None):
    """`capsel ARGS` in tmp_path; with max_file_bytes, every write past that size fails with EFBIG (a full disk)."""

    def limit_file_size() -> None:
        # without the signal ignored, the kernel kills the writer (SIGXFSZ) instead of failing the write
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    return run_capsel(tmp_path, *args, timeout=300, preexec_fn=limit_file_size if max_file_bytes else None)


def one_line_error(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    return " ".join(done.stderr.split())


def test_broken_parquet_files_are_one_line_each_and_commit_nothing(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"instruction": [f"q{i}" for i in range(500)], "output": ["a"] * 500}), good)
    data = good.read_bytes()
    corrupt = bytearray(data)
    corrupt[100:300] = b"x" * 200  # inside the first column chunk
    # (an empty file is skipped in every format: tests/hostile/test_hostile_inputs.py)
    broken = {"truncated.parquet": data[: len(data) // 2], "corrupt.parquet": bytes(corrupt)}
    for name, content in broken.items():
        (tmp_path / name).write_bytes(content)
        message = one_line_error(capsel(tmp_path, "ingest", name, "--domain", "d"), 3)
        assert f"{name}: not a readable Parquet file" in message and "nothing of it was committed" in message
    assert query(tmp_path, "select count(*) from sources") == [(0,)]
    assert capsel(tmp_path, "ingest", "good.parquet", "--domain", "d").returncode == 0  # the good one still reads


def test_a_budget_beyond_any_count_is_a_usage_error_before_anything_is_written(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"math": 30})
    con.close()
    message = one_line_error(capsel(tmp_path, "select", "--budget", "99999999999999999999999", "--out", "sels"), 2)
    assert "the budget must be at most 9,223,372,036,854,775,807 candidates" in message
    assert not (tmp_path / "sels").exists() and query(tmp_path, "select count(*) from selections") == [(0,)]
    assert capsel(tmp_path, "select", "--budget", str(2**63 - 1), "--out", "sels").returncode == 0  # the largest


def test_disk_full_during_ingest_commits_nothing_and_a_rerun_completes(tmp_path):
    rows = [{"instruction": f"question {i} " + "word " * 40, "output": "answer " * 40} for i in range(8000)]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    message = one_line_error(capsel(tmp_path, "ingest", "pool.jsonl", "--domain", "d", max_file_bytes=2_000_000), 3)
    assert "disk full while writing" in message and "capsel.duckdb" in message and "nothing" in message
    assert query(tmp_path, "select count(*) from candidates") == [(0,)]
    rerun = capsel(tmp_path, "ingest", "pool.jsonl", "--domain", "d", "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["totals"]["n_inserted"] == 8000


def test_disk_full_during_publish_publishes_nothing_and_a_rerun_publishes(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"math": 3000})
    con.close()
    full = capsel(tmp_path, "select", "--budget", "50%", "--out", "sels", max_file_bytes=100_000)
    assert "disk full while writing" in one_line_error(full, 3)
    assert query(tmp_path, "select count(*) from selections") == [(0,)]
    assert not list((tmp_path / "sels").glob("sel-*"))
    again = capsel(tmp_path, "select", "--budget", "50%", "--out", "sels", "--json")
    assert again.returncode == 0, again.stderr
    assert query(tmp_path, "select count(*) from selections") == [(1,)]


@pytest.fixture()
def scoring_db(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    append_candidates(con, mixed_candidates()[:2])
    con.close()
    return tmp_path


def score(tmp_path, model, *extra):
    return capsel(tmp_path, "score", "--model", str(model), "--device", "cpu", "--batch-size", "2", *extra)


def test_a_model_that_needs_its_own_code_says_so(scoring_db):
    model = tiny_model_dir(scoring_db / "custom")
    config = json.loads((model / "config.json").read_text())
    config.update(model_type="capsel_custom", architectures=["CustomForCausalLM"], auto_map={
        "AutoConfig": "modeling_custom.CustomConfig", "AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"})
    (model / "config.json").write_text(json.dumps(config))
    (model / "modeling_custom.py").write_text("open('ran', 'w').close()\n")
    message = one_line_error(score(scoring_db, model), 3)
    assert "needs code shipped with it (auto_map in its config.json)" in message and "--trust-remote-code" in message
    assert not (scoring_db / "ran").exists()


def pickle_only(model) -> None:
    """Replace the folder's safetensors weights by the same tensors pickled, as older checkpoints ship them."""
    from safetensors.torch import load_file

    state = load_file(model / "model.safetensors")
    (model / "model.safetensors").unlink()
    torch.save(state, model / "pytorch_model.bin")


class Payload:
    """Unpickling it would run a shell command."""

    def __reduce__(self):
        return os.system, ("touch pwned",)


def test_pickle_weights_need_allow_pickle_and_torch_still_refuses_a_malicious_one(scoring_db):
    model = tiny_model_dir(scoring_db / "pickled")
    pickle_only(model)
    refused = one_line_error(score(scoring_db, model), 3)
    assert "holds only pickle weights (pytorch_model.bin)" in refused and "--allow-pickle" in refused
    allowed = score(scoring_db, model, "--allow-pickle")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stderr.count("warning: loading pickle weights from") == 1  # warned once, not per use
    assert query(scoring_db, "select count(*) from models") == [(1,)]

    evil = tiny_model_dir(scoring_db / "evil")
    pickle_only(evil)
    torch.save({"model.embed_tokens.weight": Payload()}, evil / "pytorch_model.bin")
    assert "holds only pickle weights" in one_line_error(score(scoring_db, evil), 3)
    message = one_line_error(score(scoring_db, evil, "--allow-pickle"), 3)
    assert "cannot load the pickle weights of model" in message and "torch refused them" in message
    assert not (scoring_db / "pwned").exists()


def test_a_file_linking_out_of_the_model_folder_is_refused_before_it_is_hashed(scoring_db):
    secret = scoring_db / "secret.txt"
    secret.write_text("not the model's\n")
    model = tiny_model_dir(scoring_db / "linked")
    (model / "added_tokens.json").symlink_to(secret)
    message = one_line_error(score(scoring_db, model), 3)
    assert "added_tokens.json resolves to" in message and "outside the model folder" in message
    assert query(scoring_db, "select count(*) from models") == [(0,)]
