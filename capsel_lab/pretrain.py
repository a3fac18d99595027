"""Pretrain the demo model: a small Llama on the synthetic world's corpus, on CPU, seeded."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from capsel.errors import CapselError
from capsel_lab.optim import scheduled_adamw
from capsel_lab.packing import document_ids, packed_batches
from capsel_lab.tokenizer import train_tokenizer
from capsel_lab.world.corpus import build_corpus
from capsel_lab.world.facts import WorldSpec, build_world

TRAINING_LOG = "training.json"


@dataclass(frozen=True)
class PretrainConfig:
    """Everything that determines the demo model; the model card records it."""

    seed: int = 0
    steps: int = 1500
    batch_size: int = 8
    seq_len: int = 128
    lr: float = 3e-3
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    vocab_size: int = 2048
    # 128 wide, not 192: the 192-wide probe (5.7M parameters) ranked junk above clean data under CAP,
    # this size ranked it below (capsel_lab/README.md); 12 layers keep the early/late split meaningful
    hidden_size: int = 128
    intermediate_size: int = 344
    n_layers: int = 12
    n_heads: int = 4
    n_passes: int = 3                 # how often the corpus states each known fact
    threads: int = 1                  # one thread: deterministic, and two stall each other on a shared machine
    world: WorldSpec = field(default_factory=WorldSpec)


@dataclass
class PretrainResult:
    """What a pretraining run produced and measured."""

    out_dir: Path
    losses: list[float]
    wall_s: float
    n_params: int
    n_corpus_tokens: int
    n_documents: int


def build_model(config: PretrainConfig, tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    """A freshly initialised Llama of the configured shape (seeded by the caller)."""
    llama = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_heads,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(llama)


def _seed_everything(seed: int, threads: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


def pretrain(
    config: PretrainConfig, out_dir: Path, on_step: Callable[[int, float], None] | None = None
) -> PretrainResult:
    """Generate the world, train tokenizer and model, and save both (safetensors) to `out_dir`."""
    _seed_everything(config.seed, config.threads)
    docs = build_corpus(build_world(config.world), n_passes=config.n_passes)
    tokenizer = train_tokenizer(
        (text for doc in docs for text in (doc.text, doc.prompt, doc.response) if text), config.vocab_size
    )
    ids = [document_ids(doc, tokenizer) for doc in docs]
    model = build_model(config, tokenizer)
    optimizer, schedule = scheduled_adamw(model, config.lr, config.weight_decay, config.steps, config.warmup_steps,
                                          config.min_lr_ratio)
    batches = packed_batches(ids, config.seq_len, config.batch_size, config.seed)
    losses: list[float] = []
    started = time.perf_counter()
    model.train()
    for step in range(config.steps):
        batch = next(batches)
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        if on_step:
            on_step(step, losses[-1])
    wall_s = time.perf_counter() - started
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    result = PretrainResult(out_dir, losses, wall_s, sum(p.numel() for p in model.parameters()),
                            sum(len(doc) for doc in ids), len(ids))
    log = {"config": asdict(config), "losses": losses, "wall_s": wall_s, "n_params": result.n_params,
           "n_corpus_tokens": result.n_corpus_tokens, "n_documents": result.n_documents,
           "torch": torch.__version__}
    (out_dir / TRAINING_LOG).write_text(json.dumps(log, indent=1))
    return result


def world_spec_of(model_dir: Path | str) -> WorldSpec:
    """The WorldSpec a lab-pretrained model was trained on (from its training.json)."""
    path = Path(model_dir) / TRAINING_LOG
    if not path.is_file():
        raise CapselError(f"{model_dir} has no {TRAINING_LOG}: "
                          "the lab needs a model pretrained by `capsel lab pretrain`")
    log = json.loads(path.read_text(encoding="utf-8"))
    return WorldSpec(**log["config"]["world"])
