"""Options shared by `capsel finetune` and `capsel evaluate` (which fine-tunes a selection it is given)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import checked_model_name
from capsel.cli.progress import LiveBar
from capsel.safe_text import visible
from capsel.stages.context import TrainProgress

ProfileOption = Annotated[str, typer.Option(
    "--profile", help="The training recipe: cpu-small (a small model on CPU, docs/closed-loop.md: Fine-tuning) or "
    "paper (the paper's full-parameter SFT: AdamW, lr 1e-5, cosine, warm-up 0.03, 1 epoch, batch 64, bf16, 2048).")]
ConfigFileOption = Annotated[Optional[Path], typer.Option(
    "--config", help="A LlamaFactory YAML whose keys override the profile's (paths, dataset and seed stay "
    "capsel's).", show_default=False, exists=True, dir_okay=False)]
SeedOption = Annotated[int, typer.Option("--seed", help="Training seed (data order, initialisation of adapters).")]
OutOption = Annotated[Optional[Path], typer.Option(
    "--out", help="Output root: models go to <out>/models/<finetune_id>/ (default: $CAPSEL_OUTPUT_ROOT or "
    "capsel_out).", show_default=False)]
FinetuneModelOption = Annotated[Optional[str], typer.Option(
    "--model", help="Base model to fine-tune: an installed model's name or a folder (default: $CAPSEL_MODEL).",
    show_default=False, callback=checked_model_name)]


class TrainingBar(LiveBar):
    """A step bar with loss, rate and ETA while LlamaFactory trains."""

    unit = "step"

    @property
    def callback(self) -> TrainProgress:
        """What the stage calls after each logged step."""
        def update(step: int, total: int, loss: float | None, eta: float | None) -> None:
            text = visible(self.description if loss is None else f"{self.description} (loss {loss:.4f})")
            if self.task is None:
                self.task = self.progress.add_task(text, total=total)
            self.progress.update(self.task, completed=step, total=total, description=text)
        return update
