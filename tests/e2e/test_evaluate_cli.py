"""`capsel evaluate` as a user types it: lm-eval's GSM8K through capsel, the number it printed stored as is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest

from tests.integration.test_harness_gsm8k import printed_rows
from tests.reference.naive_bootstrap import naive_ratio_interval
from tests.support.chain_model import save_chain_model
from tests.support.harness_files import gsm8k_files, needs_lmeval

pytestmark = pytest.mark.e2e


def run_capsel(tmp_path, *args) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(tmp_path / "out"),
               OMP_NUM_THREADS="1", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)


@needs_lmeval
def test_gsm8k_through_capsel_stores_the_number_the_harness_printed(tmp_path):
    demos, data = gsm8k_files(tmp_path, n_right=3, n_wrong=3)
    model = save_chain_model(tmp_path / "chain")
    args = ("evaluate", f"base:{model}", "--eval", f"gsm8k:{data}", "--fewshot", str(demos), "--limit", "4",
            "--max-new-tokens", "8")
    done = run_capsel(tmp_path, *args, "--json")
    assert done.returncode == 0, done.stderr
    results = {row["metric"]: row for row in json.loads(done.stdout)["results"]}
    assert results["exact_match_strict"]["value"] == 0.5 and results["exact_match_strict"]["n"] == 4
    assert results["exact_match_strict"]["target"] == f"base:{model}"

    logs = list((tmp_path / "out" / "evaluations").rglob("lm-eval.log"))
    assert len(logs) == 1
    printed = printed_rows(logs[0].read_text())
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    stored = dict(con.execute("select metric, value from evaluations where eval_kind = 'gsm8k'").fetchall())
    questions = con.execute("select row_index, outcome, weight from evaluation_rows "
                            "where metric = 'exact_match_strict' order by row_index").fetchall()
    con.close()
    assert stored["exact_match_strict"] == printed["strict-match"][0] == 0.5
    assert stored["exact_match_flexible"] == printed["flexible-extract"][0]
    # each question's correct from the logged samples: the chain model answers 72, right on rows 0 and 2 of 4
    assert questions == [(0, 1.0, 1.0), (1, 0.0, 1.0), (2, 1.0, 1.0), (3, 0.0, 1.0)]
    strict = results["exact_match_strict"]
    assert strict["ci95"] == pytest.approx(list(naive_ratio_interval([1, 0, 1, 0], [1] * 4, 2000, 0)))
    assert strict["ci_resamples"] == 2000

    again = run_capsel(tmp_path, *args)  # the same weights, file and settings: answered from the store
    assert again.returncode == 0, again.stderr
    assert "stored" in again.stdout and len(list((tmp_path / "out" / "evaluations").rglob("lm-eval.log"))) == 1


def test_humaneval_without_permission_is_refused_in_one_line(tmp_path):
    data = tmp_path / "humaneval.jsonl"
    data.write_text('{"task_id": "t/0", "prompt": "def f():\\n", "canonical_solution": "    return 1\\n", '
                    '"test": "def check(c):\\n    assert c() == 1\\n", "entry_point": "f"}\n')
    model = save_chain_model(tmp_path / "chain")
    done = run_capsel(tmp_path, "evaluate", f"base:{model}", "--eval", f"humaneval:{data}")
    assert done.returncode == 2 or done.returncode == 3, done.stderr
    assert "--allow-code-execution" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
