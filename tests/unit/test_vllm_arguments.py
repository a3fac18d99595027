"""What capsel asks of vLLM: ids in and out, greedy, a context of exactly P + R, EOS as stop ids (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from capsel.models.loading import ModelInfo
from capsel.models.source import ModelSource
from capsel.scoring.config import ScoringConfig
from capsel.scoring.vllm_generation import VLLMOptions, engine_kwargs, sampling_kwargs, strip_eos


def _info(dtype: str = "bfloat16") -> ModelInfo:
    source = ModelSource("org/model", Path("/models/m"), None, {"config.json": "0" * 64}, True)
    return ModelInfo(source=source, dtype=dtype, device="cuda", tokenizer=None, eos_token_ids=frozenset({9, 2}),
                     architecture="LlamaForCausalLM", n_layers=32)


@pytest.mark.parametrize("prompt_tokens,horizon", [(256, 48), (512, 96), (8, 6)])
def test_engine_context_is_prompt_plus_horizon(prompt_tokens, horizon):
    kwargs = engine_kwargs(_info(), ScoringConfig(prompt_tokens=prompt_tokens, horizon=horizon), VLLMOptions())
    assert kwargs["max_model_len"] == prompt_tokens + horizon
    assert kwargs["model"] == "/models/m" and kwargs["dtype"] == "bfloat16"
    assert kwargs["skip_tokenizer_init"] is True, "prompts go in as ids; vLLM must not re-tokenise"
    assert kwargs["trust_remote_code"] is False


def test_engine_options_pass_through_and_max_num_seqs_only_when_set():
    options = VLLMOptions(gpu_memory_utilization=0.5, tensor_parallel_size=2, enforce_eager=True,
                          load_format="dummy", max_num_seqs=512)
    kwargs = engine_kwargs(_info(), ScoringConfig(), options)
    assert (kwargs["gpu_memory_utilization"], kwargs["tensor_parallel_size"]) == (0.5, 2)
    assert (kwargs["enforce_eager"], kwargs["load_format"], kwargs["max_num_seqs"]) == (True, "dummy", 512)
    assert "max_num_seqs" not in engine_kwargs(_info(), ScoringConfig(), VLLMOptions())


def test_sampling_is_greedy_bounded_and_stops_at_every_eos():
    kwargs = sampling_kwargs(48, frozenset({128009, 128001}))
    assert kwargs == {"temperature": 0.0, "max_tokens": 48, "stop_token_ids": [128001, 128009], "detokenize": False}


@pytest.mark.parametrize("tokens,expected", [
    ([5, 6, 2], [5, 6]),     # stopped on an EOS id: it is not part of y-hat
    ([9], []),               # EOS first: an empty generation
    ([5, 2, 6], [5, 2, 6]),  # an EOS id can only end a vLLM output; inside it would be a token like any other
    ([], []),
    ([5, 6], [5, 6]),        # stopped at the horizon
])
def test_strip_eos(tokens, expected):
    assert strip_eos(tokens, frozenset({2, 9})) == expected
