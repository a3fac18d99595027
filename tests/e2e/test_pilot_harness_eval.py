"""A pilot judged by an accuracy through lm-evaluation-harness: HumanEval's pass@1 on three held-out problems, with
the chain model (tests/support/chain_model.py), whose greedy answer solves HumanEval/34 alone, as the base model;
higher is better, and the per-row outcomes are each program's 0/1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.support.chain_model import save_chain_model
from tests.support.harness_files import LMEVAL_PYTHON, REAL, needs_lmeval, read_jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow, needs_lmeval, pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`")]
HELD_OUT = ("HumanEval/0", "HumanEval/2", "HumanEval/34")


def test_a_pilot_by_humaneval_pass_at_1_counts_each_program_and_ranks_higher_as_better(tmp_path):
    rows = read_jsonl(REAL / "humaneval.jsonl")
    (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows
                                                     if row["task_id"] in HELD_OUT))
    pool = [row for row in rows if row["task_id"] not in HELD_OUT][:40]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(row) + "\n" for row in pool))
    model = save_chain_model(tmp_path / "chain")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_TRAINER_PYTHON=str(LF_PYTHON), CAPSEL_HARNESS_PYTHON=str(LMEVAL_PYTHON), CAPSEL_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "capsel", "pilot", "pool.jsonl", "--model", str(model), "--map",
         "instruction=prompt,response=canonical_solution", "--domain", "code", "--methods", "ppl", "--budgets", "50%",
         "--replicates", "1", "--random-draws", "2", "--heldout", "heldout.jsonl", "--eval", "humaneval",
         "--allow-code-execution", "--min-steps", "2", "--allow-dirty", "--out", "pilot", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    pilot = json.loads((tmp_path / "pilot" / "pilot.json").read_text())
    assert pilot["metric"] == "pass@1" and pilot["lower_is_better"] is False
    outcomes = pd.read_parquet(printed["rows"])
    assert list(outcomes.columns) == ["cell", "row", "correct"] and len(outcomes) == 4 * 3  # 3 models + base
    # the held-out file's rows in order: 0, 2, 34; the chain model, fine-tuned or not, solves the last alone
    for cell, group in outcomes.groupby("cell"):
        assert group.sort_values("row")["correct"].tolist() == [0.0, 0.0, 1.0], cell
    assert all(cell["value"] == pytest.approx(1 / 3) for cell in printed["cells"])
    [comparison] = pilot["comparisons"]
    assert comparison["replicates"][0]["rank"] == 1  # no draw is better (higher): ties do not push it down
    assert printed["decisions"][0]["recommended"] is None
