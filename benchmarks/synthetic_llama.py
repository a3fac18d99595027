"""A random-initialised Llama (Llama-3-8B shape, or tiny) and a synthetic pool with the paper's length limits.

Nothing is downloaded. The model folder holds only config.json and generation_config.json:
vLLM builds its weights with `load_format="dummy"`, the HF scorer initialises them on the
device, and the word-level tokenizer (one word per id) lives in memory.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass, replace
from pathlib import Path

import orjson
import torch

from capsel.cap_engine.inputs import CandidateText
from capsel.models.loading import KV_LAYOUTS, LoadedModel, ModelInfo, wrap_model
from capsel.models.source import ModelSource
from capsel.versioning import file_sha256

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
PAD_ID, BOS_ID, EOS_ID = 0, 2, 3


def llama_config(tiny: bool):
    """Llama-3-8B's shape (GQA 32/8 heads, 128k vocabulary) or a tiny Llama with vLLM-sized 64-dim heads."""
    import transformers as tf

    common = dict(bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID, tie_word_embeddings=False)
    if tiny:
        return tf.LlamaConfig(vocab_size=4004, hidden_size=128, intermediate_size=344, num_hidden_layers=6,
                              num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512, **common)
    return tf.LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                          num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                          rope_theta=500000.0, **common)


def word_tokenizer(vocab_size: int):
    """Whitespace word-level tokenizer over w0..w{n}, prepending BOS like Llama's."""
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {token: index for index, token in enumerate(SPECIALS + [f"w{i}" for i in range(vocab_size - 4)])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS_ID)])
    return tf.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                      pad_token="<pad>", unk_token="<unk>", model_max_length=1 << 20)


def model_info(folder: Path, tiny: bool, dtype: str, device: str) -> ModelInfo:
    """Write the config-only model folder and describe it the way `describe_model` would a real one."""
    config = llama_config(tiny)
    # Without it config.json names no architecture and vLLM resolves LlamaModel, an embedding model's name.
    config.architectures = ["LlamaForCausalLM"]
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    (folder / "generation_config.json").write_bytes(orjson.dumps({"eos_token_id": EOS_ID, "bos_token_id": BOS_ID}))
    files = {name: file_sha256(folder / name) for name in ("config.json", "generation_config.json")}
    name = "random-llama-tiny" if tiny else "random-llama3-8b"
    return ModelInfo(
        source=ModelSource(name, folder, None, files, uses_safetensors=True), dtype=dtype, device=device,
        tokenizer=word_tokenizer(config.vocab_size), eos_token_ids=frozenset({EOS_ID}),
        architecture="LlamaForCausalLM", n_layers=config.num_hidden_layers,
    )


# An auto/on/off option of the benchmarks as the loaded model's engine setting: None leaves the choice to the engine.
SWITCH = {"auto": None, "on": True, "off": False}


def random_model(info: ModelInfo, attn_implementation: str):
    """The HF model with random weights, initialised directly on the device (no CPU copy, no checkpoint)."""
    import transformers as tf

    config = tf.AutoConfig.from_pretrained(info.source.local_dir)
    torch.manual_seed(0)
    with torch.device(info.device):
        model = tf.AutoModelForCausalLM.from_config(
            config, dtype=getattr(torch, info.dtype), attn_implementation=attn_implementation,
        )
    return wrap_model(info, model)


def add_engine_flags(parser: argparse.ArgumentParser) -> None:
    """The HF engine's settings a benchmark may force, each `auto` (the engine's choice) by default."""
    # --kv is the name decode_profile.py had: gpu_check.sh and the README's recipes still type it
    parser.add_argument("--kv-layout", "--kv", choices=KV_LAYOUTS, default="auto",
                        help="the HF engine's KV cache: auto (its choice for the device), dynamic (transformers' "
                             "growing DynamicCache), buffered (preallocated, attention on the filled part), whole "
                             "(attention on the whole buffer) or graphed (whole, each batch's greedy step captured "
                             "as a CUDA graph)")
    parser.add_argument("--prefill-groups", choices=["auto", "on", "off"], default="auto",
                        help="prefill each batch's prompts in length groups: auto (the engine's choice: on CPU only), "
                             "on or off")
    parser.add_argument("--compile-norms-and-mlps", choices=["auto", "on", "off"], default="auto",
                        help="torch.compile the model's norms and MLPs (their elementwise work fused): auto (the "
                             "engine's choice: on for a text model on CUDA), on or off")


def engine_model(info: ModelInfo, attn_implementation: str, args: argparse.Namespace) -> LoadedModel:
    """The random-weight model, its engine set as the flags of `add_engine_flags` ask."""
    return replace(random_model(info, attn_implementation), kv_layout=args.kv_layout,
                   prefill_groups=SWITCH[args.prefill_groups],
                   compile_norms_and_mlps=SWITCH[args.compile_norms_and_mlps])


@dataclass(frozen=True)
class PoolShape:
    """Word counts drawn log-uniformly, so short items are common and a tail exceeds the limits (P, R)."""

    prompt_words: tuple[int, int] = (19, 320)
    response_words: tuple[int, int] = (6, 96)


MAX_LENGTHS = PoolShape(prompt_words=(300, 300), response_words=(60, 60))


def synthetic_pool(path: Path, n: int, vocab_size: int, shape: PoolShape, seed: int = 0) -> Path:
    """A JSONL pool of n candidates in one domain, ready for `capsel ingest`."""
    rng = random.Random(seed)

    def count(low: int, high: int) -> int:
        return int(math.exp(rng.uniform(math.log(low), math.log(high + 1))))

    def words(k: int) -> str:
        return " ".join(f"w{rng.randrange(vocab_size - 4)}" for _ in range(k))

    with open(path, "wb") as handle:
        for _ in range(n):
            row = {"instruction": words(count(*shape.prompt_words)), "input": "",
                   "response": words(count(*shape.response_words)), "domain": "bench"}
            handle.write(orjson.dumps(row) + b"\n")
    return path


def pool_texts(path: Path, k: int) -> list[CandidateText]:
    """The first k candidates of a synthetic pool file, for scoring outside the database."""
    texts = []
    with open(path, "rb") as handle:
        for index, line in zip(range(k), handle):
            row = orjson.loads(line)
            texts.append(CandidateText(f"p{index}", row["instruction"], row["input"], row["response"]))
    return texts
