"""The path the real lab evaluates: a LoRA adapter on SmolLM2-135M-Instruct, merged as `capsel evaluate` merges it,
in chat format with the model's own template (its default system turn included), against the adapter left unmerged
in peft and a plain forward per row: the held-out loss agrees within 1e-4."""

from __future__ import annotations

import json
import warnings

import orjson
import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from capsel.cap_engine.config import ScoringConfig
from capsel.config import load_settings
from capsel.db import open_db, run_sql
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest, evaluate
from tests.reference.naive_loss import load_plain, naive_heldout_loss
from tests.support.harness_files import REAL, read_jsonl

pytestmark = pytest.mark.slow
SYSTEM_TURN = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def _adapter(base, folder):
    """A LoRA adapter on every linear layer (rank 16, as the cpu-small profile trains), both factors random so
    that merging it moves every weight it touches."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    tuned = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                             init_lora_weights=False))
    with torch.no_grad():
        for name, weight in tuned.named_parameters():
            if "lora_B" in name:
                weight.mul_(0.1)  # moves the loss by a few hundredths, as training does, without wrecking it
    tuned.save_pretrained(folder)
    return folder


def test_merged_lora_in_chat_format_equals_peft_unmerged(smollm2_instruct_dir, tmp_path):
    base = smollm2_instruct_dir
    adapter = _adapter(base, tmp_path / "adapter")
    rows = [{"instruction": row["question"], "response": row["answer"], "domain": "math"}
            for row in read_jsonl(REAL / "gsm8k_train.jsonl")[:6]]
    heldout = tmp_path / "heldout.jsonl"
    heldout.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    con = open_db(tmp_path / "capsel.duckdb")
    run_sql(con, "evaluation/finetune_insert", {
        "finetune_id": "ft-lora", "selection_id": "sel-x", "members_sha256": "m", "base_model": str(base),
        "base_fingerprint": "b", "profile": "cpu-small", "config_hash": "c", "config": json.dumps({}), "seed": 0,
        "trainer": "llamafactory 0.9.5", "is_adapter": True, "model_dir": str(adapter), "train_loss": None,
        "train_seconds": None, "n_rows": 6, "run_id": "r"})
    options = EvalOptions(scoring=ScoringConfig(prompt_format="auto"), batch_size=3, dtype="float32", device="cpu")
    spec = parse_eval_spec(f"loss:{heldout}", tmp_path / "inputs")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # a user sees no transformers deprecation from the merge
        summary = evaluate(EvaluateRequest(("ft-lora", f"base:{base}"), (spec,), tmp_path / "out", options),
                           RunContext(con, load_settings()))
    stored_format = con.execute("select distinct eval_config ->> 'prompt_format' from evaluations").fetchall()
    con.close()
    assert stored_format == [("chat",)]  # SmolLM2-Instruct's template picked automatically, for both

    tokenizer = AutoTokenizer.from_pretrained(base)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": rows[0]["instruction"]}],
                                           add_generation_prompt=True, tokenize=False)
    assert SYSTEM_TURN in prompt  # the template's default system turn is part of every prompt
    overall = {result.target: result for result in summary.results if result.domain == "*"}
    unmerged = naive_heldout_loss(load_plain(base, adapter), tokenizer, rows, 256, chat=True)["*"]
    plain = naive_heldout_loss(load_plain(base), tokenizer, rows, 256, chat=True)["*"]
    assert overall["ft-lora"].value == pytest.approx(unmerged[0], abs=1e-4)
    assert overall[f"base:{base}"].value == pytest.approx(plain[0], abs=1e-4)
    assert (overall["ft-lora"].n, overall["ft-lora"].tokens) == (unmerged[1], unmerged[2])
    assert abs(unmerged[0] - plain[0]) > 1e-2  # the adapter really changes the model
