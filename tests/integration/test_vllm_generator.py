"""The vLLM backend: a clear error where it cannot run, and agreement with the HF backend on a GPU.

Parity on CPU, through vLLM's CPU build, is in test_vllm_parity.py."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.generation import HFGenerator
from capsel.cap_engine.inputs import CandidateText
from capsel.cap_engine.vllm_generation import VLLMGenerator, VLLMOptions
from capsel.errors import CapselError
from capsel.models.loading import describe_model, load_model
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.vllm import VLLM_RUNS

HAS_VLLM = importlib.util.find_spec("vllm") is not None
HAS_CUDA = torch.cuda.is_available()


@pytest.mark.skipif(VLLM_RUNS, reason="vLLM can start here (its CPU build, or CUDA), so there is no error to see")
def test_missing_vllm_or_cuda_fails_at_construction(tmp_path):
    info = describe_model(str(tiny_model_dir(tmp_path / "m")), dtype="float32", device="cpu")
    with pytest.raises(CapselError, match="vllm|vLLM|CUDA"):
        VLLMGenerator(info, ScoringConfig())


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.skipif(not HAS_VLLM, reason="needs vLLM (pip install 'capsel[gpu]')")
def test_vllm_greedy_matches_hf_greedy_and_frees_the_gpu(tmp_path):
    # 64-dimensional heads: vLLM's attention kernels take no smaller ones.
    info = describe_model(str(tiny_model_dir(tmp_path / "m", hidden=256)), dtype="float32", device="cuda")
    config = ScoringConfig(prompt_format="raw")
    engine = ScoringEngine(load_model(info), config, batch_size=4)
    inputs = [i for i in engine.prepare([CandidateText(**c) for c in mixed_candidates()]) if not i.excluded_reason]
    prompts = [item.prompt_ids for item in inputs]
    hf = HFGenerator(engine.loaded, config.horizon, batch_size=4).generate(prompts)

    torch.cuda.synchronize()
    free_before, total = torch.cuda.mem_get_info()
    vllm = VLLMGenerator(info, config, VLLMOptions(gpu_memory_utilization=0.3, enforce_eager=True))
    try:
        free_during, _ = torch.cuda.mem_get_info()
        generated = vllm.generate(prompts)
    finally:
        vllm.close()
    free_after, _ = torch.cuda.mem_get_info()

    # vLLM took its share for the KV cache, and the worker's exit gave all of it back.
    assert free_before - free_during > 0.2 * total
    assert free_after > free_before - 2**30
    # Different kernels may flip a near-tied argmax late in a sequence; the first tokens must agree.
    assert [g[:4] for g in generated] == [h[:4] for h in hf]
    assert sum(g == h for g, h in zip(generated, hf)) >= 0.8 * len(hf)
    assert all(len(g) <= config.horizon and not set(g) & info.eos_token_ids for g in generated)
