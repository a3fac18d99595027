"""A pilot's cells: each replicate x budget x method (x random draw) x training seed, named once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from capsel.pilot.spec import CONTROL, PilotSpec


@dataclass(frozen=True)
class Selected:
    """A selection of one replicate: what asked for it and what it holds."""

    replicate: int
    budget: str
    method: str
    draw: int  # the random control's seed; 0 for every other method
    selection_id: str
    n_rows: int
    response_tokens: int

    @property
    def unit(self) -> str:
        """The selection's name in the results: replicate, budget, method and draw."""
        return f"r{self.replicate}|{self.budget}|{self.method}|d{self.draw}"


@dataclass(frozen=True)
class Cell:
    """One fine-tune of a selection with one training seed, and its model."""

    selected: Selected
    seed: int
    finetune_id: str | None = None

    @property
    def name(self) -> str:
        """The cell's id in pilot.json and the per-row outcomes."""
        return f"{self.selected.unit}|s{self.seed}"


def asked(spec: PilotSpec) -> Iterator[tuple[str, str, int]]:
    """(budget, method, draw) of every selection a replicate makes: each method once, the control once per draw."""
    for budget in spec.budgets:
        for name in spec.methods:
            for draw in range(spec.random_draws if name == CONTROL else 1):
                yield budget, name, draw
