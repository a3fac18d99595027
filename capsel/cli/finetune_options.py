"""Options shared by `capsel finetune` and `capsel evaluate` (which fine-tunes a selection it is given)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from capsel.cli.common import checked_model_name
from capsel.cli.model_options import OptionBundle
from capsel.cli.progress import LiveBar
from capsel.cli.scoring_options import PromptFormatOption
from capsel.errors import OptionError
from capsel.finetune.schedule import MIN_STEPS, describe_schedule, parse_epochs
from capsel.safe_text import visible
from capsel.stages.context import TrainProgress

if TYPE_CHECKING:  # the stage describes models: --help does not load it
    from capsel.config import Settings
    from capsel.stages.finetune import FinetuneStageRequest

ProfileOption = Annotated[str, typer.Option(
    "--profile", help="The training recipe: cpu-small (a small model on CPU, docs/closed-loop.md: Fine-tuning) or "
    "paper (the paper's full-parameter SFT: AdamW, lr 1e-5, cosine, warm-up 0.03, 1 epoch, batch 64, bf16, 2048).")]
ConfigFileOption = Annotated[Optional[Path], typer.Option(
    "--config", help="A LlamaFactory YAML whose keys override the profile's (paths, dataset and seed stay "
    "capsel's).", show_default=False, exists=True, dir_okay=False)]
SeedOption = Annotated[int, typer.Option("--seed", help="Training seed (data order, initialisation of adapters).")]
EpochsOption = Annotated[Optional[str], typer.Option(
    "--epochs", help="Whole epochs over the selection, or auto: the fewest that make --min-steps optimizer steps at a "
    "learning rate above zero (default: the profile's, 1).", show_default=False)]
MinStepsOption = Annotated[int, typer.Option(
    "--min-steps", min=0, help="Refuse a fine-tune that makes fewer optimizer steps at a learning rate above zero "
    "(the warm-up's first step runs at 0; a selection of a few rows makes one step and learns nothing).")]
OutOption = Annotated[Optional[Path], typer.Option(
    "--out", help="Output root: models go to <out>/models/<finetune_id>/ (default: $CAPSEL_OUTPUT_ROOT or "
    "capsel_out).", show_default=False)]
FinetuneModelOption = Annotated[Optional[str], typer.Option(
    "--model", help="Base model to fine-tune: an installed model's name or a folder (default: $CAPSEL_MODEL).",
    show_default=False, callback=checked_model_name)]


@dataclass(frozen=True)
class Finetuning:
    """How a selection is fine-tuned: `capsel finetune`'s options, and `capsel evaluate`'s for a selection it is
    given to evaluate."""

    model: FinetuneModelOption = None
    profile: ProfileOption = "cpu-small"
    config: ConfigFileOption = None
    seed: SeedOption = 0
    prompt_format: PromptFormatOption = "auto"
    epochs: EpochsOption = None
    min_steps: MinStepsOption = MIN_STEPS
    out: OutOption = None

    def out_root(self, settings: Settings) -> Path:
        """--out, else the settings' output root."""
        return self.out or settings.output_root

    def request(self, selection_id: str, settings: Settings) -> FinetuneStageRequest:
        """The fine-tune of `selection_id` these options ask for (the base model: --model, else $CAPSEL_MODEL)."""
        from capsel.stages.finetune import FinetuneStageRequest

        base = self.model or settings.model
        if not base:
            raise OptionError(f"to fine-tune on {selection_id}, name the base model with [[model]] (or set "
                              "CAPSEL_MODEL)")
        return FinetuneStageRequest(selection_id, base, self.out_root(settings), self.profile, self.config,
                                    self.seed, self.prompt_format, parse_epochs(self.epochs), self.min_steps)


FINETUNING = OptionBundle(Finetuning)


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


def trained_line(manifest: dict) -> str | None:
    """The steps a model was trained with and its loss at the last step, from its manifest (None for a model made
    before capsel recorded them)."""
    planned, trained = manifest.get("schedule"), manifest.get("trained")
    if not planned:
        return None
    loss = (trained or {}).get("final_loss")
    return "  " + describe_schedule(planned) + (f"; training loss {loss:.4f} at the last step" if loss is not None
                                                 else "")
