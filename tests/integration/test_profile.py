"""The rank survey on a tiny real Llama, checked against numpy; the CLI writes CSV, PNG and verdict."""

import csv
import json

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.profile.survey import rank_profile
from capsel.profile.texts import load_texts
from capsel.profile.verdict import has_u_shape

N_LAYERS = 4


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    texts = load_texts()
    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[UNK]", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", bos_token="<s>", eos_token="</s>")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=N_LAYERS,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path, model.eval(), tokenizer, texts


def numpy_srank_normalised(matrix: np.ndarray) -> float:
    return np.linalg.norm(matrix, "fro") ** 2 / np.linalg.norm(matrix, 2) ** 2 / min(matrix.shape)


def test_profile_matches_numpy(tiny_model_dir):
    _, model, tokenizer, texts = tiny_model_dir
    reports: list[tuple[int, int]] = []
    profile = rank_profile(model, tokenizer, texts, name="tiny", max_tokens=300,
                           on_progress=lambda done, total: reports.append((done, total)))
    assert [layer.layer for layer in profile.layers] == list(range(1, N_LAYERS + 1))
    assert reports == [(done, N_LAYERS) for done in range(N_LAYERS + 1)]  # 0 once the texts ran, then each layer

    captured = {index: [] for index in range(N_LAYERS)}
    hooks = [model.model.layers[i].register_forward_hook(
        lambda _m, _i, out, i=i: captured[i].append((out[0] if isinstance(out, tuple) else out)[0].numpy()))
        for i in range(N_LAYERS)]
    with torch.no_grad():
        for text in texts:
            model(input_ids=tokenizer(text, return_tensors="pt").input_ids)
    for hook in hooks:
        hook.remove()

    for index, layer in enumerate(profile.layers):
        block = model.model.layers[index]
        weights = [p.detach().numpy() for p in block.parameters() if p.ndim == 2]
        assert layer.n_weight_matrices == len(weights) == 7  # q, k, v, o, gate, up, down
        assert layer.weight_srank == pytest.approx(np.mean([numpy_srank_normalised(w) for w in weights]), rel=1e-4)
        # the first position of each text (BOS) is left out; rows stop at max_tokens
        states = np.concatenate([states[1:] for states in captured[index]])[:300]
        assert layer.n_tokens == 300
        assert layer.hidden_srank == pytest.approx(numpy_srank_normalised(states), rel=1e-4)


def test_cli_writes_csv_png_and_verdict(tiny_model_dir, tmp_path, monkeypatch):
    path = tiny_model_dir[0]
    monkeypatch.setenv("CAPSEL_OUTPUT_ROOT", str(tmp_path / "root"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    # a typed --out is taken as typed (relative to the cwd, or absolute); without one it lands in the output root
    for out, extra in ((["--out", "trained"], []), (["--out", str(tmp_path / "abs" / "random")], ["--random-init"]),
                       ([], [])):
        result = runner.invoke(app, ["profile", "--model", str(path), *out, *extra])
        assert result.exit_code == 0, result.output
        assert "hidden-state U-shape" in result.output
        folder = tmp_path / out[1] if out else tmp_path / "root" / "profile"
        rows = list(csv.DictReader(open(folder / "profile.csv")))
        assert [int(row["layer"]) for row in rows] == list(range(1, N_LAYERS + 1))
        assert (folder / "profile.png").read_bytes()[:4] == b"\x89PNG"
        verdict = json.loads((folder / "verdict.json").read_text())
        values = [float(row["hidden_srank"]) for row in rows]
        assert verdict["trough"] == pytest.approx(min(values))
    assert [entry.name for entry in (tmp_path / "root").iterdir()] == ["profile"]


def test_verdict_reads_the_profile(tiny_model_dir):
    _, model, tokenizer, texts = tiny_model_dir
    profile = rank_profile(model, tokenizer, texts[:4])
    verdict = has_u_shape(profile)
    assert verdict.trough == min(profile.hidden())
    assert verdict.trough_layer == int(np.argmin(profile.hidden())) + 1  # 1-based block number
