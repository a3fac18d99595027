"""A real registry model installed through the CLI: checked conversion, name resolution, known greedy output."""

from __future__ import annotations

import json

import pytest
import torch

from capsel.models.installed import MANIFEST_NAME
from capsel.models.loading import describe_model, load_causal_lm
from tests.fixtures.real_models import REAL_MODELS_DIR

pytestmark = pytest.mark.slow


def test_smollm2_installs_from_the_registry_and_resolves_by_name(smollm2_instruct, real_models_env):
    folder = smollm2_instruct.folder
    assert folder == REAL_MODELS_DIR / "smollm2-135m-instruct"
    assert smollm2_instruct.stdout.splitlines()[-1] == str(folder)
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["source_files_sha256"] == {
        "SmolLM2-135M-Instruct.Q4_1.gguf": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    }
    check = manifest["logit_check"]
    assert check["passed"] and check["max_abs_diff"] == 0.0 and check["same_token_ids"]
    assert len(check["prompts"]) == 4 and "<|im_start|>" in check["prompts"][-1]  # one through the chat template

    info = describe_model("smollm2-135m-instruct", dtype="float32", device="cpu")
    assert info.source.local_dir == folder.resolve()
    assert (info.architecture, info.n_layers) == ("LlamaForCausalLM", 30)
    assert "chat_template.jinja" in info.source.files

    model, tokenizer = load_causal_lm("smollm2-135m-instruct")
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.inference_mode():
        out = model.generate(ids, max_new_tokens=2, do_sample=False)
    assert tokenizer.decode(out[0, ids.shape[1]:]) == " Paris."
