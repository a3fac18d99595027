"""Pretraining is seeded and reproducible; the saved model and tokenizer load back and agree."""

import json

import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.models.loading import load_causal_lm
from capsel_lab.model_card import write_model_card
from capsel_lab.packing import document_ids
from capsel_lab.pretrain import PretrainConfig, pretrain
from capsel_lab.world.corpus import Document
from capsel_lab.world.facts import WorldSpec

TINY = PretrainConfig(
    seed=5, steps=12, batch_size=4, seq_len=32, lr=3e-3, warmup_steps=3, vocab_size=400,
    hidden_size=32, intermediate_size=64, n_layers=2, n_heads=2,
    world=WorldSpec(seed=5, n_minerals=10, n_creatures=10, n_unseen_entities=2, n_arithmetic=40, n_functions=12),
)


def test_same_seed_same_weights_and_card(tmp_path):
    first = pretrain(TINY, tmp_path / "a")
    second = pretrain(TINY, tmp_path / "b")
    assert first.losses == second.losses
    weights_a, weights_b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert weights_a.keys() == weights_b.keys()
    assert all(torch.equal(weights_a[name], weights_b[name]) for name in weights_a)
    assert sum(first.losses[-3:]) < sum(first.losses[:3])  # it learns something in 12 steps
    log = json.loads((tmp_path / "a" / "training.json").read_text())
    assert log["config"]["seed"] == 5 and len(log["losses"]) == TINY.steps

    card = write_model_card(tmp_path / "a", {"science: never seen": 0.0})
    text = card.read_text()
    assert "capsel lab pretrain" in text and f"{first.n_params:,}" in text and "never seen: 0.0%" in text
    assert (tmp_path / "a" / "loss_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_saved_tokenizer_matches_cap_conventions(tmp_path):
    pretrain(TINY, tmp_path / "m")
    model, tokenizer = load_causal_lm(tmp_path / "m")
    ids = tokenizer("What colour is it?").input_ids
    assert ids[0] == tokenizer.bos_token_id and tokenizer.bos_token_id not in ids[1:]
    assert tokenizer.eos_token_id not in tokenizer("x", add_special_tokens=False).input_ids
    doc = Document("qa", prompt="What colour is it?", response="It is red.")
    expected = ids + tokenizer("It is red.", add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    assert document_ids(doc, tokenizer) == expected
    assert model.config.num_hidden_layers == TINY.n_layers


def test_lab_world_cli_writes_consistent_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a typed --out is relative to the working directory
    result = CliRunner().invoke(app, ["lab", "world", "--out", "w", "--n-known", "20", "--n-learnable", "20",
                                      "--junk", "0.1", "--duplicates", "0.1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "w" / "world.json").read_text())
    pool = [json.loads(line) for line in (tmp_path / "w" / "pool.jsonl").read_text().splitlines()]
    heldout = (tmp_path / "w" / "heldout.jsonl").read_text().splitlines()
    corpus = (tmp_path / "w" / "corpus.jsonl").read_text().splitlines()
    assert len(pool) == manifest["n_candidates"] == sum(manifest["labels"].values()) == 3 * (40 + 4 + 4)
    assert len(heldout) == manifest["n_heldout"] == 3 * 40
    assert len(corpus) == manifest["n_documents"]
    assert {"instruction", "input", "output", "domain", "lab_label"} <= pool[0].keys()
