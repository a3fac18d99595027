"""Fine-tuning a base model on a published selection with LlamaFactory, in its own environment."""

from capsel.finetune.finetune import finished_finetune, run_finetune
from capsel.finetune.request import FinetunedModel, FinetuneRequest, finetune_id

__all__ = ["FinetuneRequest", "FinetunedModel", "finetune_id", "finished_finetune", "run_finetune"]
