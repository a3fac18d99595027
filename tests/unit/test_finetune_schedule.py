"""A fine-tune's planned steps and learning rates, against transformers' own schedulers and a naive step count.

The real trainer's log is held to the same plan in tests/integration/test_finetune_llamafactory.py.
"""

import math

import pytest
import torch
from transformers import get_scheduler

from capsel.cli.flags import flag
from capsel.errors import CapselError, OptionError
from capsel.finetune.recipe import resolve_recipe
from capsel.finetune.schedule import (
    check_learns,
    epochs_reaching,
    parse_epochs,
    rows_reaching,
    schedule,
)

CPU_SMALL = resolve_recipe("cpu-small", {}, seed=0, template=None).args
PAPER = resolve_recipe("paper", {}, seed=0, template=None).args


def naive_steps(rows: int, batch: int, accumulation: int, epochs: int) -> int:
    """Optimizer steps as a loop over batches counts them: a step every `accumulation` batches and at an epoch's
    end when batches are left over."""
    steps = 0
    for _ in range(epochs):
        pending = 0
        for _ in range(0, rows, batch):
            pending += 1
            if pending == accumulation:
                steps, pending = steps + 1, 0
        steps += pending > 0
    return steps


def scheduler_rates(kind: str, peak: float, warmup: int, steps: int) -> list[float]:
    """The rate transformers' scheduler gives each optimizer step, read before its step() as the trainer does."""
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    scheduler = get_scheduler(kind, optimizer, num_warmup_steps=warmup, num_training_steps=steps)
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


@pytest.mark.parametrize("rows", [1, 4, 7, 8, 9, 21, 40, 200])
@pytest.mark.parametrize(("batch", "accumulation", "epochs"), [(1, 8, 1), (1, 2, 3), (8, 8, 1), (4, 3, 2)])
def test_the_step_count_is_a_loop_over_the_batches(rows, batch, accumulation, epochs):
    args = {**CPU_SMALL, "per_device_train_batch_size": batch, "gradient_accumulation_steps": accumulation,
            "num_train_epochs": float(epochs)}
    planned = schedule(args, rows)
    assert planned.steps == naive_steps(rows, batch, accumulation, epochs)
    assert planned.rows_per_step == batch * accumulation and planned.rows == rows


@pytest.mark.parametrize("kind", ["cosine", "linear", "constant_with_warmup", "constant"])
@pytest.mark.parametrize(("steps", "warmup_ratio"), [(1, 0.03), (2, 0.03), (11, 0.03), (40, 0.1), (12, 0.0)])
def test_each_steps_rate_is_transformers_schedulers(kind, steps, warmup_ratio):
    args = {**CPU_SMALL, "lr_scheduler_type": kind, "warmup_ratio": warmup_ratio,
            "num_train_epochs": float(steps)}  # 1 row a step-group: one step an epoch
    planned = schedule(args, 1)
    assert planned.steps == steps and planned.warmup_steps == math.ceil(steps * warmup_ratio)
    expected = scheduler_rates(kind, CPU_SMALL["learning_rate"], planned.warmup_steps, steps)
    assert planned.learning_rates == pytest.approx(expected, rel=1e-12, abs=0)
    assert planned.learning_steps == sum(rate > 0 for rate in expected)
    assert planned.peak_learning_rate == pytest.approx(max(expected), rel=1e-12)


def test_the_readmes_four_rows_make_one_step_at_a_rate_of_zero_and_are_refused():
    planned = schedule(CPU_SMALL, 4)
    assert (planned.steps, planned.warmup_steps, planned.learning_steps) == (1, 1, 0)
    with pytest.raises(CapselError) as refused:
        check_learns(planned, CPU_SMALL, 10, "the selection sel-x")
    message = refused.value.render(flag)  # as the CLI names the options
    assert "\n" not in message
    assert "the selection sel-x has 4 rows" in message and "0 at a learning rate above zero" in message
    # 11 epochs of one step each, the first at 0; or 81 rows (11 steps of up to 8 rows) at one epoch
    assert "--epochs 11" in message and "at least 81 rows" in message and "--min-steps" in message


def test_enough_rows_pass_the_check():
    check_learns(schedule(CPU_SMALL, 81), CPU_SMALL, 10, "the selection sel-x")
    check_learns(schedule(CPU_SMALL, 4), CPU_SMALL, 0, "the selection sel-x")  # --min-steps 0 allows anything


@pytest.mark.parametrize("rows", [1, 4, 21, 80, 81, 400])
@pytest.mark.parametrize("min_steps", [1, 10, 20])
@pytest.mark.parametrize("args", [CPU_SMALL, PAPER], ids=["cpu-small", "paper"])
def test_epochs_and_rows_reaching_are_the_fewest(rows, min_steps, args):
    def learning(epochs: float, n: int) -> int:
        return schedule({**args, "num_train_epochs": epochs}, n).learning_steps

    epochs = epochs_reaching(args, rows, min_steps)
    assert learning(epochs, rows) >= min_steps and (epochs == 1 or learning(epochs - 1, rows) < min_steps)
    needed = rows_reaching(args, min_steps)
    assert learning(args["num_train_epochs"], needed) >= min_steps
    assert all(learning(args["num_train_epochs"], n) < min_steps for n in range(1, needed))


def test_a_max_steps_too_small_is_refused_naming_it():
    args = {**CPU_SMALL, "max_steps": 3}
    with pytest.raises(CapselError, match="max_steps 3"):
        check_learns(schedule(args, 400), args, 10, "the selection sel-x")


def test_epochs_parse_as_whole_numbers_or_auto():
    assert parse_epochs(None) is None and parse_epochs("auto") == "auto" and parse_epochs("3") == 3
    for bad in ("0", "-1", "1.5", "many"):
        with pytest.raises(OptionError, match="--epochs"):
            parse_epochs(bad)
