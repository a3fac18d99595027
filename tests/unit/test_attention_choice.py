"""Which attention kernel the HF scorer asks for."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from capsel.models.loading import ModelInfo, attention_implementation, cpu_bfloat16_sdpa_runs
from capsel.models.source import ModelSource

HAS_FLASH_ATTN = importlib.util.find_spec("flash_attn") is not None


def _info(device: str, dtype: str) -> ModelInfo:
    source = ModelSource("m", Path("/m"), None, {}, True)
    return ModelInfo(source, dtype, device, None, frozenset(), "LlamaForCausalLM", 2)


@pytest.mark.parametrize("device,dtype", [("cpu", "float32"), ("cuda", "float32")])
def test_sdpa_wherever_flash_attention_cannot_run(device, dtype):
    assert attention_implementation(_info(device, dtype)) == "sdpa"


def test_bf16_on_cpu_takes_sdpa_where_its_bf16_kernel_runs_else_eager():
    # torch 2.13's bf16 SDPA raises on a CPU with AMX when ATEN_CPU_CAPABILITY caps ATen below AVX-512
    expected = "sdpa" if cpu_bfloat16_sdpa_runs() else "eager"
    assert attention_implementation(_info("cpu", "bfloat16")) == expected


def test_bf16_on_cuda_takes_flash_attention_only_when_installed():
    expected = "flash_attention_2" if HAS_FLASH_ATTN else "sdpa"
    assert attention_implementation(_info("cuda", "bfloat16")) == expected


@pytest.mark.parametrize("requested", ["eager", "sdpa", "flash_attention_2"])
def test_an_explicit_choice_is_kept(requested):
    assert attention_implementation(_info("cpu", "float32"), requested) == requested
