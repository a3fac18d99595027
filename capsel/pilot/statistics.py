"""A pilot's evidence, from its per-row outcomes alone: each cell's value and interval, each method against the
median of the random draws, across replicates by a hierarchical bootstrap and a sign test, Holm over every
comparison shown, and a decision per budget.

Rows are `unit, seed, row, outcome, weight` (a unit is a replicate's selection: `r0|10%|cap|d0`). A unit's value is
sum(outcome) / sum(weight) of its rows, each row's outcome averaged over the training seeds (a loss: NLL sums over
response tokens; an accuracy: correct over 1). Lower is better for a loss.

The hierarchical bootstrap draws, for resample b of B with numpy's `default_rng(seed)`, in this order: R replicate
indices with replacement (`integers(0, R, R)`); then for each drawn replicate, in the order drawn, n row indices
(`integers(0, n, n)`) and, with S >= 2 training seeds, S seed indices for the method and S for its reference
(`integers(0, S, S)` each). A replicate's delta is the method's value minus its reference's on those rows and seeds;
the resample's is the mean over the drawn replicates. The reference is the replicate's median random draw, chosen
once on all rows. The interval is the 2.5th and 97.5th percentile; the two-sided p is
min(1, 2 (min(#delta* <= 0, #delta* >= 0) + 1) / (B + 1)), whose floor is 2 / (B + 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from capsel.evaluation.bootstrap import paired_delta_interval, ratio_interval

RESAMPLES, SEED, ALPHA = 2000, 0, 0.05
NO_METHOD = ("no method is distinguishable from random here: raise the budget or the replicates, or select at "
             "random")


@dataclass(frozen=True)
class Unit:
    """A replicate's selection as the statistics read it: its per-row, per-seed outcomes and the rows' weights."""

    name: str
    outcomes: np.ndarray  # [rows, seeds]
    weights: np.ndarray   # [rows]

    @property
    def value(self) -> float:
        return float(self.outcomes.mean(axis=1).sum() / self.weights.sum())


def units(rows: pd.DataFrame) -> dict[str, Unit]:
    """Each unit's outcomes, rows in row order and seeds in seed order (every unit must have every row)."""
    found = {}
    for name, group in rows.groupby("unit", sort=True):
        table = group.pivot(index="row", columns="seed", values="outcome").sort_index()
        weights = group.drop_duplicates("row").set_index("row")["weight"].sort_index()
        found[str(name)] = Unit(str(name), table.to_numpy(dtype=np.float64), weights.to_numpy(dtype=np.float64))
    return found


def cell_values(rows: pd.DataFrame) -> dict[str, dict]:
    """Each cell's (a unit with one seed) value, its 95% interval over rows, rows and weight."""
    values = {}
    for cell, group in rows.groupby("cell", sort=True):
        group = group.sort_values("row")
        outcome, weight = group["outcome"].to_numpy(dtype=float), group["weight"].to_numpy(dtype=float)
        values[str(cell)] = {"value": float(outcome.sum() / weight.sum()), "ci95": ratio_interval(outcome, weight),
                             "n": len(group)}
    return values


def median_draw(draws: list[Unit]) -> tuple[Unit, list[float]]:
    """The random draw at the median of their values (the lower of two middles), and every draw's value."""
    ordered = sorted(draws, key=lambda unit: (unit.value, unit.name))
    return ordered[(len(ordered) - 1) // 2], [unit.value for unit in ordered]


def sign_test(deltas: list[float]) -> dict:
    """Two-sided sign test of the per-replicate deltas (ties left out), and the least p it can reach."""
    below, above = sum(d < 0 for d in deltas), sum(d > 0 for d in deltas)
    p = float(stats.binomtest(below, below + above, 0.5).pvalue) if below + above else 1.0
    return {"n_lower": below, "n_higher": above, "p": p, "p_floor": min(1.0, 2.0 ** (1 - len(deltas)))}


def hierarchical_bootstrap(pairs: list[tuple[Unit, Unit]], resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """Mean delta (method - reference) over replicates, its interval and p, replicates then rows (then seeds)."""
    rng = np.random.default_rng(seed)
    n_replicates = len(pairs)
    deltas = np.empty(resamples)
    for b in range(resamples):
        drawn = []
        for replicate in rng.integers(0, n_replicates, n_replicates):
            method, reference = pairs[replicate]
            rows = rng.integers(0, len(method.weights), len(method.weights))
            n_seeds = method.outcomes.shape[1]
            if n_seeds > 1:
                ours = method.outcomes[rows][:, rng.integers(0, n_seeds, n_seeds)].mean(axis=1)
                theirs = reference.outcomes[rows][:, rng.integers(0, n_seeds, n_seeds)].mean(axis=1)
            else:
                ours, theirs = method.outcomes[rows, 0], reference.outcomes[rows, 0]
            weight = method.weights[rows].sum()
            drawn.append(ours.sum() / weight - theirs.sum() / weight)
        deltas[b] = np.mean(drawn)
    low, high = np.percentile(deltas, [2.5, 97.5])
    tail = min(int((deltas <= 0).sum()), int((deltas >= 0).sum()))
    return {"ci95": [float(low), float(high)], "p": min(1.0, 2 * (tail + 1) / (resamples + 1)),
            "p_floor": 2 / (resamples + 1), "resamples": resamples}


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p, in the order given."""
    order = sorted(range(len(p_values)), key=lambda index: p_values[index])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def compare_with_random(found: dict[str, Unit], replicates: int, budgets: Sequence[str], methods: Sequence[str],
                        control: str, draws: int, lower_is_better: bool = True) -> list[dict]:
    """Per budget and method: each replicate's delta against its median random draw (with the paired interval
    over rows and the method's rank among the draws: 1 is the best), then across replicates; Holm over all of them."""
    comparisons: list[dict] = []
    for budget in budgets:
        for name in methods:
            pairs: list[tuple[Unit, Unit]] = []
            per_replicate: list[dict] = []
            for replicate in range(replicates):
                method = found[f"r{replicate}|{budget}|{name}|d0"]
                reference, draw_values = median_draw([found[f"r{replicate}|{budget}|{control}|d{draw}"]
                                                      for draw in range(draws)])
                pairs.append((method, reference))
                ci = paired_delta_interval(method.outcomes.mean(axis=1), method.weights,
                                           reference.outcomes.mean(axis=1), reference.weights)
                per_replicate.append({
                    "replicate": replicate, "value": method.value, "random_median": reference.value,
                    "random_median_unit": reference.name, "delta": method.value - reference.value, "ci95": ci,
                    "rank": 1 + sum((value < method.value) if lower_is_better else (value > method.value)
                                    for value in draw_values), "of": draws + 1,
                    "random_values": draw_values})
            deltas = [float(entry["delta"]) for entry in per_replicate]
            comparisons.append({"budget": budget, "method": name, "against": f"{control} median of {draws}",
                                "mean_delta": float(np.mean(deltas)), "replicates": per_replicate,
                                "hierarchical": hierarchical_bootstrap(pairs), "sign_test": sign_test(deltas),
                                "seed_sd": _seed_sd(pairs)})
    for comparison, adjusted in zip(comparisons, holm([c["hierarchical"]["p"] for c in comparisons])):
        comparison["p_adjusted"] = adjusted
    return comparisons


def _seed_sd(pairs: list[tuple[Unit, Unit]]) -> float | None:
    """The method's value's standard deviation across training seeds, averaged over replicates (None: one seed)."""
    if pairs[0][0].outcomes.shape[1] < 2:
        return None
    return float(np.mean([np.std([method.outcomes[:, seed].sum() / method.weights.sum()
                                  for seed in range(method.outcomes.shape[1])], ddof=1) for method, _ in pairs]))


def decisions(comparisons: list[dict], lower_is_better: bool = True) -> list[dict]:
    """Per budget: the method whose lead over the random median survives Holm, the best if several, else none."""
    found = []
    for budget in dict.fromkeys(c["budget"] for c in comparisons):
        at = [c for c in comparisons if c["budget"] == budget]
        leads = [c for c in at if c["p_adjusted"] < ALPHA and (c["hierarchical"]["ci95"][1] < 0 if lower_is_better
                                                                 else c["hierarchical"]["ci95"][0] > 0)]
        best = min(leads, key=lambda c: c["mean_delta"] * (1 if lower_is_better else -1)) if leads else None
        shown = best or min(at, key=lambda c: c["hierarchical"]["p"])
        found.append({
            "budget": budget, "recommended": best["method"] if best else None,
            "verdict": (f"{best['method']} beats the random median" if best else NO_METHOD),
            "p": shown["hierarchical"]["p"], "p_adjusted": shown["p_adjusted"],
            "p_floor": shown["hierarchical"]["p_floor"],
            "evidence": {"method": shown["method"], "mean_delta": shown["mean_delta"],
                         "ci95": shown["hierarchical"]["ci95"], "sign_test": shown["sign_test"],
                         "ranks": [entry["rank"] for entry in shown["replicates"]]}})
    return found
