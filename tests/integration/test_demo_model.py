"""The shipped demo model: small, loads offline from safetensors, generates, and knows its world."""

import json
import os
import subprocess
import sys

import pytest

from capsel.models import demo_model_path
from capsel.models.loading import load_causal_lm
from capsel_lab.evaluate import answer_accuracy
from capsel_lab.pretrain_config import world_spec_of
from capsel_lab.world.facts import build_world
from capsel_lab.world.pools import PoolSpec, build_pool

OFFLINE_LOAD = """
import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
path = sys.argv[1]
tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, use_safetensors=True)
ids = tokenizer("What is the hardness of", return_tensors="pt").input_ids
out = model.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=tokenizer.pad_token_id)
print(repr(tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)))
print(out.shape[1] - ids.shape[1])
"""


def test_demo_model_is_small_and_safetensors_only():
    path = demo_model_path()
    weights = list(path.glob("*.safetensors"))
    assert weights and not list(path.glob("*.bin"))
    total = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    assert total <= 25 * 1024 * 1024
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] >= 12
    assert (path / "README.md").exists() and (path / "loss_curve.png").exists()


def test_demo_model_loads_offline_and_generates():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", OFFLINE_LOAD, str(demo_model_path())], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text, n_new = done.stdout.strip().splitlines()[-2:]
    assert int(n_new) > 0 and len(eval(text).strip()) > 0


@pytest.mark.slow
def test_demo_model_recalls_known_facts_better_than_unseen_ones():
    world = build_world(world_spec_of(demo_model_path()))
    pool = build_pool(world, PoolSpec(seed=5, n_known=6, n_learnable=6, junk_fraction=0, duplicate_fraction=0))
    model, tokenizer = load_causal_lm(demo_model_path())
    known = [q for q in pool.heldout if q["lab_label"] == "known"]
    unseen = [q for q in pool.heldout if q["lab_label"] == "learnable"]
    known_accuracy, unseen_accuracy = answer_accuracy(model, tokenizer, known), answer_accuracy(model, tokenizer, unseen)
    # facts never in pretraining can only be hit by chance (a common colour, a small number)
    assert known_accuracy >= unseen_accuracy + 0.2, (known_accuracy, unseen_accuracy)
