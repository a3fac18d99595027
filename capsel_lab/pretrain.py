"""Pretrain the demo model: a small Llama on the synthetic world's corpus, on CPU, seeded."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from capsel_lab.optim import scheduled_adamw
from capsel_lab.packing import document_ids, packed_batches
from capsel_lab.pretrain_config import TRAINING_LOG, PretrainConfig
from capsel_lab.tokenizer import train_tokenizer
from capsel_lab.world.corpus import build_corpus
from capsel_lab.world.facts import build_world


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
