"""The demo model's pretraining recipe and where a pretrained model records it (read without loading torch)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from capsel.errors import CapselError
from capsel_lab.world.facts import WorldSpec

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



def world_spec_of(model_dir: Path | str) -> WorldSpec:
    """The WorldSpec a lab-pretrained model was trained on (from its training.json)."""
    path = Path(model_dir) / TRAINING_LOG
    if not path.is_file():
        raise CapselError(f"{model_dir} has no {TRAINING_LOG}: "
                          "the lab needs a model pretrained by `capsel lab pretrain`")
    log = json.loads(path.read_text(encoding="utf-8"))
    return WorldSpec(**log["config"]["world"])
