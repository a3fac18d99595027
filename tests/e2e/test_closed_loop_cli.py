"""The closed loop as a user types it: select, fine-tune with LlamaFactory, evaluate, and find it all again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import orjson
import pytest
from transformers import AutoTokenizer

from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.reference.naive_bootstrap import naive_paired_interval
from tests.reference.naive_loss import load_plain, naive_heldout_loss, naive_row_nll
from tests.support.finetune_fixtures import tiny_base_model, tiny_rows

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`")]
# a random tiny model learns visibly only with a large step: full fine-tuning, as a user's YAML asks for it
FAST_FULL = "finetuning_type: full\nlearning_rate: 1.0e-2\nnum_train_epochs: 4.0\n"


def capsel(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    # the database and the output root are the defaults, relative to the working folder, as in the README
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_TRAINER_PYTHON=str(LF_PYTHON), CAPSEL_THREADS="1", OMP_NUM_THREADS="1", COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def as_json(done: subprocess.CompletedProcess) -> dict:
    payload = json.loads(done.stdout)
    assert payload["ok"] is True
    return payload


def test_select_finetune_evaluate_and_trace_it(tmp_path):
    base = tiny_base_model(tmp_path / "base", layers=4)
    pool = tmp_path / "pool.jsonl"
    pool.write_bytes(b"".join(orjson.dumps({**row, "domain": "toy"}) + b"\n" for row in tiny_rows(40)))
    capsel(tmp_path, "ingest", str(pool))
    capsel(tmp_path, "score", "--model", str(base), "--threads", "1")
    selected = as_json(capsel(tmp_path, "select", "--budget", "50%", "--out", "sels", "--json"))
    selection_id, folder = selected["selection_id"], Path(selected["path"])

    config = tmp_path / "fast.yaml"
    config.write_text(FAST_FULL)
    args = ("finetune", selection_id, "--model", str(base), "--config", str(config))
    first = as_json(capsel(tmp_path, *args, "--json"))
    model_dir = Path(first["model_dir"])
    assert first["finetune_id"].startswith("ft-") and not first["reused"]
    assert model_dir == tmp_path / "capsel_out" / "models" / first["finetune_id"]
    assert {"model.safetensors", "llamafactory.yaml", "train.log", "manifest.json"} <= {p.name for p in
                                                                                       model_dir.iterdir()}
    manifest = orjson.loads((model_dir / "manifest.json").read_bytes())
    assert manifest["selection_id"] == selection_id
    assert manifest["members_sha256"] == orjson.loads((folder / "manifest.json").read_bytes())["members_sha256"]

    plain = capsel(tmp_path, *args)  # a second identical call: reused, no training run recorded
    assert plain.stdout.strip().splitlines()[-1] == str(model_dir) and "reused" in plain.stdout
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    assert con.execute("select count(*) from runs where kind = 'finetune'").fetchone()[0] == 1
    con.close()

    # the rows it trained on, as an evaluation file
    trained = [orjson.loads(line) for line in (folder / "data.jsonl").read_bytes().splitlines()]
    heldout = tmp_path / "trained.jsonl"
    heldout.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in trained))
    evaluated = as_json(capsel(tmp_path, "evaluate", first["finetune_id"], f"base:{base}", "--eval",
                               f"loss:{heldout}", "--json"))
    overall = {row["target"]: row for row in evaluated["results"] if row["domain"] == "*"}
    tuned, before = overall[first["finetune_id"]], overall[f"base:{base}"]
    assert tuned["metric"] == "loss" and tuned["n"] == len(trained) and tuned["tokens"] > 0
    assert tuned["value"] < before["value"] - 0.5  # training really happened

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    for target, weights in ((tuned, model_dir), (before, base)):
        expected = naive_heldout_loss(load_plain(weights), tokenizer, trained, 256, chat=False)["*"]
        assert target["value"] == pytest.approx(expected[0], abs=1e-4) and target["tokens"] == expected[2]

    lineage = as_json(capsel(tmp_path, "lineage", selection_id, "--json"))
    assert [(row["finetune_id"], row["metric"]) for row in lineage["finetunes"]] == [(first["finetune_id"], "loss")]
    tree = capsel(tmp_path, "lineage", selection_id).stdout
    assert "fine-tuned models (1)" in tree and f"{first['finetune_id']}: " in tree and f"loss:{heldout}" in tree
    listed = as_json(capsel(tmp_path, "evaluations", "--json"))["evaluations"]
    assert {row["target"] for row in listed} == {first["finetune_id"], f"base:{base}"}
    assert {row["method"] for row in listed if row["target"] == first["finetune_id"]} == {"cap"}
    compared = as_json(capsel(tmp_path, "compare", "--budget", "50%", "--json"))
    assert {row["label"] for row in compared["evaluations"]} == {"cap 50%", "base model"}
    # the report links each selection against the base model, row for row, as `capsel evaluations --against` does
    against = as_json(capsel(tmp_path, "evaluations", "--against", f"base:{base}", "--json"))["comparisons"]
    assert compared["paired"] == against and [row["target"] for row in against] == [selection_id]
    [row] = against
    per_row = {name: [naive_row_nll(load_plain(weights), tokenizer, trained_row, 256, chat=False)
                      for trained_row in trained] for name, weights in (("tuned", model_dir), ("base", base))}
    tokens = np.array([n for _, n in per_row["base"]], dtype=float)
    tuned_nll, base_nll = (np.array([nll for nll, _ in per_row[name]]) for name in ("tuned", "base"))
    assert row["delta"] == pytest.approx(tuned_nll.sum() / tokens.sum() - base_nll.sum() / tokens.sum(), abs=1e-4)
    assert row["ci95"] == pytest.approx(naive_paired_interval(tuned_nll, tokens, base_nll, tokens, 2000, 0), abs=1e-4)
    assert row["verdict"] == "better" and row["n"] == len(trained)
    assert (row["method"], row["budget"]) == ("cap", "50%")  # what chose the rows, beside the selection's id
    report = Path(compared["report"]).parent
    assert "href='paired.html'" in (report / "index.html").read_text()
    assert "paired.png" in (report / "paired.html").read_text() and (report / "paired.png").stat().st_size > 0
