"""An installed registry model keeps one fingerprint whatever transformers release converted it: the version it
stamps into config.json and generation_config.json is dropped from the copy (before, .venv-vllm's transformers gave
SmolLM2 another fingerprint than the main venv's, and the README's walkthrough failed after `make test-vllm`)."""

from __future__ import annotations

import json

import transformers.configuration_utils
import transformers.generation.configuration_utils

from capsel.models.convert import VERSIONED_FILES, save_plain_copy
from capsel.models.source import resolve_model
from tests.fixtures.tiny_models import build_model, build_tokenizer

OTHER_RELEASE = "4.99.0"


def test_two_transformers_releases_write_the_same_folder_and_fingerprint(tmp_path, monkeypatch):
    model, tokenizer = build_model("llama", seed=3), build_tokenizer()
    save_plain_copy(model, tokenizer, tmp_path / "this", "float32")
    for module in (transformers.configuration_utils, transformers.generation.configuration_utils):
        monkeypatch.setattr(module, "__version__", OTHER_RELEASE)
    # what the other release writes without capsel's copy: its own version (so this test can fail)
    assert json.loads(model.config.to_json_string())["transformers_version"] == OTHER_RELEASE
    save_plain_copy(model, tokenizer, tmp_path / "other", "float32")

    for name in VERSIONED_FILES:
        this, other = (tmp_path / "this" / name).read_bytes(), (tmp_path / "other" / name).read_bytes()
        assert this == other and "transformers_version" not in json.loads(this)
    assert (resolve_model(str(tmp_path / "this")).fingerprint("float32")
            == resolve_model(str(tmp_path / "other")).fingerprint("float32"))
    # the copy still loads as the model it was
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "other")
    assert reloaded.config.num_hidden_layers == model.config.num_hidden_layers
