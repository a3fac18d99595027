"""vLLM backend for y-hat: greedy from the same truncated prompt ids (never re-tokenised text). Needs CUDA."""

from __future__ import annotations

import gc
import importlib.util
from typing import Sequence

from capsel.errors import CapselError
from capsel.scoring.model_loading import ModelInfo


def require_vllm() -> None:
    """Fail at construction, with the fix, when vLLM or a CUDA GPU is missing."""
    if importlib.util.find_spec("vllm") is None:
        raise CapselError("--generator vllm needs vLLM: pip install 'capsel[gpu]' (or use --generator hf)")
    import torch

    if not torch.cuda.is_available():
        raise CapselError("--generator vllm needs a CUDA GPU and none is visible; use --generator hf")


class VLLMGenerator:
    """Greedy decoding with vLLM: temperature 0, at most R tokens, stopping before any EOS id."""

    name = "vllm"

    def __init__(
        self, info: ModelInfo, horizon: int, batch_size: int = 256,
        gpu_memory_utilization: float = 0.85, tensor_parallel_size: int = 1,
    ):
        require_vllm()
        from vllm import LLM, SamplingParams

        self.batch_size = batch_size
        self.eos_token_ids = info.eos_token_ids
        # Prompts arrive as ids and outputs leave as ids, so vLLM never needs the tokenizer.
        self.llm = LLM(
            model=str(info.source.local_dir), dtype=info.dtype, trust_remote_code=info.trust_remote_code,
            gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size,
            skip_tokenizer_init=True, seed=0,
        )
        self.params = SamplingParams(
            temperature=0.0, max_tokens=horizon, stop_token_ids=sorted(info.eos_token_ids), detokenize=False,
        )

    def generate(self, prompt_ids_batch: Sequence[Sequence[int]]) -> list[list[int]]:
        """y-hat for each prompt, in the order given."""
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=list(ids)) for ids in prompt_ids_batch]
        outputs = self.llm.generate(prompts, self.params, use_tqdm=False)
        return [strip_eos(list(output.outputs[0].token_ids), self.eos_token_ids) for output in outputs]

    def close(self) -> None:
        """Release the engine and its GPU memory, so the HF scorer can load next."""
        del self.llm
        gc.collect()
        import torch

        torch.cuda.empty_cache()


def strip_eos(tokens: list[int], eos_token_ids: frozenset[int]) -> list[int]:
    """vLLM returns the stop token it stopped on; y-hat ends before it (it can only be the last token)."""
    return tokens[:-1] if tokens and tokens[-1] in eos_token_ids else tokens
