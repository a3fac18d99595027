"""Every method at one budget trains the same optimizer steps: the steps of one epoch over the budget's largest
selection, or more until `min_steps` of them run at a learning rate above zero, fixed with LlamaFactory's
`max_steps` (the trainer then runs exactly that many, cycling over a smaller selection's rows)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from capsel.errors import CapselError
from capsel.finetune.recipe import resolve_recipe
from capsel.finetune.schedule import schedule
from capsel.pilot.cells import Selected
from capsel.pilot.spec import PilotSpec


@dataclass(frozen=True)
class BudgetSteps:
    """A budget's optimizer steps, the rows of its smallest and largest selection, and the config that fixes them."""

    budget: str
    steps: int
    learning_steps: int
    rows_per_step: int
    fewest_rows: int
    most_rows: int
    config: Path

    @property
    def epochs_of_fewest(self) -> float:
        """Passes over the smallest selection's rows these steps make."""
        return self.steps * self.rows_per_step / self.fewest_rows


def budget_steps(spec: PilotSpec, selections: list[Selected], folder: Path) -> dict[str, BudgetSteps]:
    """Each budget's steps, refused in one line (before anything trains) where a selection would need more than
    `max_epochs` passes over its rows to reach them."""
    args = resolve_recipe(spec.profile, {}, seed=0, template=None).args
    planned = {}
    for budget in spec.budgets:
        rows = [selected.n_rows for selected in selections if selected.budget == budget]
        steps = schedule(args, max(rows)).steps
        while schedule({**args, "max_steps": steps}, max(rows)).learning_steps < spec.min_steps:
            steps += 1
        config = folder / f"steps-{budget.replace('%', 'pct')}.yaml"
        config.write_text(yaml.safe_dump({"max_steps": steps}))
        planned[budget] = BudgetSteps(budget, steps, schedule({**args, "max_steps": steps}, max(rows)).learning_steps,
                                      schedule(args, 1).rows_per_step, min(rows), max(rows), config)
        if planned[budget].epochs_of_fewest > spec.max_epochs:
            raise CapselError(
                f"budget {budget} selects {min(rows)} rows: {spec.min_steps} steps that learn ({steps} in all, "
                f"{planned[budget].rows_per_step} rows a step) are {planned[budget].epochs_of_fewest:.1f} passes over "
                f"them, more than [[max_epochs]] {spec.max_epochs}; raise the budget, lower [[min_steps]], or raise "
                "[[max_epochs]]; nothing was trained")
    return planned
