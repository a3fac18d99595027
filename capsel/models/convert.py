"""A plain safetensors copy of a loaded model, kept only if its logits equal the original's."""

from __future__ import annotations

import contextlib
import copy
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from capsel.errors import CapselError
from capsel.models.load_lock import MODEL_LOAD_LOCK

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# Short raw prompts of three kinds (fact, arithmetic, code); chat models also get one through their template.
CHECK_PROMPTS = (
    "The capital of France is",
    "Question: Tom has 3 apples and buys 5 more. How many apples does he have?\nAnswer:",
    "def fibonacci(n):\n",
)
CHAT_CHECK_MESSAGE = "Name three primary colours."
# The copy holds the very same tensors, so anything but bit-identical logits means the copy is wrong.
LOGIT_TOLERANCE = 0.0


@dataclass(frozen=True)
class LogitCheck:
    """How the saved folder's logits compare with the source model's on the check prompts."""

    dtype: str
    prompts: list[str]
    n_tokens: list[int]
    same_token_ids: bool
    max_abs_diff: float
    tolerance: float

    @property
    def passed(self) -> bool:
        """Tokenisation identical and every logit within the tolerance."""
        return self.same_token_ids and self.max_abs_diff <= self.tolerance

    def as_dict(self) -> dict:
        """JSON-ready record for the install manifest."""
        return {**asdict(self), "passed": self.passed}


def load_source(
    folder: Path, gguf_file: str | None = None, dtype: str = "float32"
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The source model in `dtype` (a GGUF file is dequantised) and its tokenizer, from local files only."""
    file_kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        with MODEL_LOAD_LOCK, _one_gguf_parse():
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **file_kwargs)
            model = AutoModelForCausalLM.from_pretrained(
                folder, local_files_only=True, dtype=DTYPES[dtype], **file_kwargs, **_dense_gguf(gguf_file)
            )
    except (OSError, ValueError) as exc:
        raise CapselError(f"cannot load the model in {folder}: {exc}") from exc
    return model.eval(), tokenizer


@contextlib.contextmanager
def _one_gguf_parse() -> Iterator[None]:
    """Within the block, every GGUF reader transformers opens for one file is the same reader.

    transformers reads a GGUF file's metadata anew for the config, the tokenizer and the weights, and each read
    walks every field (Gemma 3's 262k-token vocabulary among them) in Python: three parses of one file, most of
    an install's time. Its loader takes `gguf.GGUFReader` at call time, so sharing one reader per path here
    leaves what it reads unchanged. Held under MODEL_LOAD_LOCK, since the swap is process-wide.

    The shared reader also reads the mapped file through a plain array (`_plain_array_reader`).
    """
    try:
        import gguf
    except ImportError:  # no GGUF support installed: nothing to share
        yield
        return
    original = gguf.GGUFReader
    plain = _plain_array_reader(original)
    readers: dict[str, object] = {}

    def shared(path, *args, **kwargs):
        key = str(Path(path).resolve())
        if args or kwargs:  # another mode than the loader's read-only one
            return original(path, *args, **kwargs)
        if key not in readers:
            readers[key] = plain(path)
        return readers[key]

    setattr(gguf, "GGUFReader", shared)
    try:
        yield
    finally:
        setattr(gguf, "GGUFReader", original)


def _plain_array_reader(reader_class: type) -> type:
    """`reader_class` reading its file through a plain ndarray view of the memory map, not the memmap itself.

    gguf's reader slices the file once per field element (Gemma 3's vocabulary: millions of slices), and every
    slice of a `np.memmap` runs memmap's Python-level `__getitem__` and `__array_finalize__`. A plain view of the
    same mapped bytes reads the same values: measured 3.4 s instead of 12.5 s to open Gemma 3 270M's file, and
    transformers' parse of its fields 1.0 s instead of 1.9 s.
    """

    class PlainArrayReader(reader_class):
        @property
        def data(self) -> np.ndarray:
            return self._plain

        @data.setter
        def data(self, mapped: np.ndarray) -> None:
            # the view keeps the memmap (its base) and so the mapping alive
            self._plain = mapped.view(np.ndarray)

    return PlainArrayReader


def _dense_gguf(gguf_file: str | None) -> dict:
    if not gguf_file:
        return {}
    try:
        from transformers import GgufConfig
    except ImportError:  # transformers before GgufConfig always dequantises GGUF weights
        return {}
    # Newer transformers may keep GGUF blocks packed in kernel-backed layers; the copy needs dense tensors.
    return {"quantization_config": GgufConfig(dequantize=True)}


def save_plain_copy(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out_dir: Path, dtype: str
) -> None:
    """Write the model's weights in `dtype` as safetensors, with its config, generation config and tokenizer.

    transformers refuses to save a GGUF-loaded model, so the tensors go into a fresh model of the
    same config with the quantisation record dropped (the weights are already dequantised).
    """
    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with MODEL_LOAD_LOCK:
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict(), strict=True)
    plain.generation_config = copy.deepcopy(model.generation_config)
    plain.to(DTYPES[dtype])
    plain.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    for name in VERSIONED_FILES:
        _drop_writer_version(out_dir / name)


# transformers stamps its own version into these; the model's fingerprint hashes them
VERSIONED_FILES = ("config.json", "generation_config.json")


def _drop_writer_version(path: Path) -> None:
    # The transformers that wrote a config is no part of the model: without its version, a registry model installs
    # byte for byte alike under every transformers and keeps one fingerprint (it changed with each release).
    if path.is_file():
        written = json.loads(path.read_text())
        written.pop("transformers_version", None)
        path.write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")


def check_prompts(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """The raw check prompts, plus one rendered through the chat template when the tokenizer has one."""
    prompts = list(CHECK_PROMPTS)
    if getattr(tokenizer, "chat_template", None):
        prompts.append(str(tokenizer.apply_chat_template(
            [{"role": "user", "content": CHAT_CHECK_MESSAGE}], tokenize=False, add_generation_prompt=True
        )))
    return prompts


@torch.inference_mode()
def compare_logits(
    reference: PreTrainedModel, reference_tokenizer: PreTrainedTokenizerBase, folder: Path, dtype: str
) -> LogitCheck:
    """Reload `folder` in `dtype` and compare its token ids and logits with `reference` (loaded in `dtype` too).

    The reference must be loaded in `dtype`, not cast to it: `.to()` also casts buffers (rotary
    frequencies) that loading keeps in float32, which moves bf16 logits by ~1e-3.
    """
    with MODEL_LOAD_LOCK:
        saved = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=DTYPES[dtype]).eval()
    saved_tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    prompts = check_prompts(reference_tokenizer)
    n_tokens, same_ids, max_diff = [], True, 0.0
    for prompt in prompts:
        ids = reference_tokenizer(prompt, return_tensors="pt").input_ids
        saved_ids = saved_tokenizer(prompt, return_tensors="pt").input_ids
        same_ids = same_ids and torch.equal(ids, saved_ids)
        n_tokens.append(int(ids.shape[1]))
        diff = (reference(ids).logits.float() - saved(ids).logits.float()).abs().max().item()
        # NaN would slip through max(): count it as infinitely far
        max_diff = max(max_diff, diff if math.isfinite(diff) else math.inf)
    return LogitCheck(dtype, prompts, n_tokens, same_ids, max_diff, LOGIT_TOLERANCE)
