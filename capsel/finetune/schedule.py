"""A fine-tune's optimizer steps and their learning rates, known before it trains, and the refusal of one that
cannot learn.

The count is the HF Trainer's (transformers 5.6, `Trainer._inner_training_loop`): a device's batches per epoch,
grouped by the accumulation steps with a short last group kept, at least one step an epoch, times the epochs. Its
warm-up is `warmup_steps` when that is 1 or more, else that share of the steps rounded up (`warmup_ratio` is the
older name of the share). The scheduler multiplies the peak rate at step k (0-based) by k / warm-up while k is in the
warm-up, so with any warm-up the first step runs at a learning rate of 0 and changes nothing. A 4-row selection on
8 rows a step makes one step, and a LoRA adapter trained on it stays exactly zero: that is what this module
refuses. The trainer's own log (trainer_log.jsonl) records the rate each step used; the tests hold this plan to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Union

from capsel.errors import CapselError, OptionError

# Fewer steps than this at a learning rate above zero barely move a LoRA adapter from zero; the paper's smallest
# run (1k rows at an effective batch of 64) makes 16.
MIN_STEPS = 10
AUTO: Literal["auto"] = "auto"
Epochs = Union[int, Literal["auto"], None]  # None: the recipe's own


@dataclass(frozen=True)
class Schedule:
    """What a recipe does with a selection of `rows`: its epochs, optimizer steps, warm-up and each step's rate."""

    rows: int
    rows_per_step: int
    epochs: float
    warmup_steps: int
    learning_rates: tuple[float, ...]

    @property
    def steps(self) -> int:
        """Optimizer steps in all."""
        return len(self.learning_rates)

    @property
    def learning_steps(self) -> int:
        """Steps taken at a learning rate above zero: the ones that change the model."""
        return sum(rate > 0 for rate in self.learning_rates)

    @property
    def peak_learning_rate(self) -> float:
        """The largest rate any step uses."""
        return max(self.learning_rates, default=0.0)

    def as_dict(self) -> dict[str, Any]:
        """What a model's manifest and `--json` carry."""
        return {"rows": self.rows, "rows_per_step": self.rows_per_step, "epochs": self.epochs,
                "optimizer_steps": self.steps, "warmup_steps": self.warmup_steps,
                "learning_steps": self.learning_steps, "peak_learning_rate": self.peak_learning_rate}

    def describe(self) -> str:
        """One line: steps, warm-up, steps that learn, peak rate."""
        return describe_schedule(self.as_dict())


def describe_schedule(planned: dict[str, Any]) -> str:
    """A schedule's `as_dict()` in one line (a model's manifest keeps that dict)."""
    epochs = planned["epochs"]
    return (f"{planned['rows']} rows x {epochs:g} epoch{'s' if epochs != 1 else ''} at {planned['rows_per_step']} "
            f"rows a step: {planned['optimizer_steps']} optimizer step{'s' if planned['optimizer_steps'] != 1 else ''}"
            f" (warm-up {planned['warmup_steps']}), {planned['learning_steps']} at a learning rate above zero, peak "
            f"{planned['peak_learning_rate']:.2e}")


def schedule(args: dict[str, Any], rows: int) -> Schedule:
    """The schedule of LlamaFactory `args` (its profile's keys and the user's) on `rows` training rows."""
    batch = int(args.get("per_device_train_batch_size", 8))
    accumulation = int(args.get("gradient_accumulation_steps", 1))
    epochs = args.get("num_train_epochs", 3.0)
    batches = math.ceil(rows / batch)
    per_epoch = max(batches // accumulation + int(batches % accumulation > 0), 1)
    steps = math.ceil(float(epochs) * per_epoch)
    if int(args.get("max_steps", -1)) > 0:
        steps = int(args["max_steps"])
    warmup = _warmup_steps(args, steps)
    peak = float(args.get("learning_rate", 5e-5))
    kind = str(args.get("lr_scheduler_type", "linear"))
    rates = tuple(peak * _factor(kind, step, warmup, steps) for step in range(steps))
    return Schedule(rows, batch * accumulation, float(epochs), warmup, rates)


def _warmup_steps(args: dict[str, Any], steps: int) -> int:
    given = float(args.get("warmup_steps") or 0)
    if given >= 1:
        return int(given)
    share = given or float(args.get("warmup_ratio") or 0)
    return math.ceil(steps * share)


def _factor(kind: str, step: int, warmup: int, steps: int) -> float:
    """transformers' schedule multipliers (optimization.py) for the kinds capsel's profiles and users name."""
    if kind == "constant":
        return 1.0
    if step < warmup:
        return step / max(1, warmup)
    if kind == "constant_with_warmup":
        return 1.0
    progress = (step - warmup) / max(1, steps - warmup)
    if kind == "linear":
        return max(0.0, (steps - step) / max(1, steps - warmup))
    if kind == "cosine":
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
    # any other decay is still above zero before its last step; only the warm-up's first step is surely at zero
    return 1.0


def epochs_reaching(args: dict[str, Any], rows: int, min_steps: int) -> int:
    """The fewest whole epochs at which `rows` make `min_steps` steps at a learning rate above zero."""
    epochs = 1
    while schedule({**args, "num_train_epochs": float(epochs)}, rows).learning_steps < min_steps:
        epochs += 1
    return epochs


def rows_reaching(args: dict[str, Any], min_steps: int) -> int:
    """The fewest rows that make `min_steps` steps at a learning rate above zero at `args`' own epochs."""
    rows = 1
    while schedule(args, rows).learning_steps < min_steps:
        rows += schedule(args, rows).rows_per_step
    while rows > 1 and schedule(args, rows - 1).learning_steps >= min_steps:
        rows -= 1
    return rows


def check_learns(planned: Schedule, args: dict[str, Any], min_steps: int, what: str) -> None:
    """Refuse in one line a fine-tune of `what` whose steps at a learning rate above zero fall short of
    `min_steps`, saying which options or how many rows would reach it."""
    if planned.learning_steps >= min_steps:
        return
    if int(args.get("max_steps", -1)) > 0:
        raise CapselError(f"{what}: the training config's max_steps {args['max_steps']} gives "
                          f"{planned.learning_steps} steps at a learning rate above zero, fewer than {min_steps}: "
                          "raise max_steps or lower [[min_steps]]")
    raise CapselError(
        f"{what} has {planned.rows} rows: {planned.describe()}; a fine-tune needs {min_steps} steps that learn. "
        f"Pass [[epochs]] {epochs_reaching(args, planned.rows, min_steps)} (or [[epochs]] auto), select at least "
        f"{rows_reaching(args, min_steps)} rows, or lower [[min_steps]]")


def parse_epochs(text: str | None) -> Epochs:
    """`--epochs`: a whole number of epochs, `auto`, or None for the recipe's own."""
    if text is None or text == AUTO:
        return text
    try:
        epochs = int(text)
    except ValueError:
        epochs = 0
    if epochs < 1:
        raise OptionError(f"--epochs {text!r}: give a whole number of epochs (1 or more) or auto")
    return epochs
