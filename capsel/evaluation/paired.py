"""Paired comparisons of evaluated targets: each against one, on the same rows, with a paired bootstrap interval.

A unit is what a comparison names: a base model (`base:MODEL`), or a selection fine-tuned with one recipe, whose
seeds' models count as one target (each row's outcome averaged over the seeds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import duckdb
import numpy as np
import orjson
import pandas as pd

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.evaluation.bootstrap import RESAMPLES, SEED, paired_delta_interval, ratio_of_sums
from capsel.evaluation.method_label import BASE_LABEL, method_label
from capsel.evaluation.row_outcomes import OVERALL
from capsel.finetune.recipe import CAPSEL_OWNED
from capsel.versioning import config_hash

LOWER_IS_BETTER = frozenset({"loss"})
BETTER, WORSE, INDISTINGUISHABLE = "better", "worse", "indistinguishable"
_EVAL_KEY = ["eval_kind", "eval_file_sha256", "eval_config_hash"]
_SELECTED_BY = ["method", "budget", "ppl_guard", "ppl_guard_z", "late"]


@dataclass(frozen=True)
class Comparison:
    """One target against the reference on one metric and domain of one evaluation."""

    target: str
    against: str
    eval: str
    domain: str
    metric: str
    value: float
    against_value: float
    delta: float
    ci95: tuple[float, float] | None
    n: int
    verdict: str
    seeds: int
    against_seeds: int
    # what selected the target's rows: method and budget (None for a base model, or a selection this store lacks),
    # and the label `capsel compare` gives it ("cap 10% (PPL guard z 3.5)", "base model"; empty where unknown)
    method: str | None
    budget: str | None
    label: str
    against_label: str

    def as_dict(self) -> dict:
        """JSON-ready, in the interface's field order."""
        return {"target": self.target, "against": self.against, "eval": self.eval, "domain": self.domain,
                "metric": self.metric, "value": self.value, "against_value": self.against_value,
                "delta": self.delta, "ci95": list(self.ci95) if self.ci95 is not None else None, "n": self.n,
                "verdict": self.verdict, "seeds": self.seeds, "against_seeds": self.against_seeds,
                "method": self.method, "budget": self.budget, "label": self.label, "against_label": self.against_label}

    def reference(self) -> str:
        """The reference as a heading names it: what selected its rows, then its id (a base model by its id)."""
        return self.against if self.against_label in ("", BASE_LABEL) else f"{self.against_label} ({self.against})"


def verdict(metric: str, ci95: tuple[float, float] | None) -> str:
    """better / worse in the metric's own sense (lower loss, higher accuracy), indistinguishable if 0 is inside."""
    if ci95 is None or ci95[0] <= 0 <= ci95[1]:
        return INDISTINGUISHABLE
    improved = ci95[1] < 0 if metric in LOWER_IS_BETTER else ci95[0] > 0
    return BETTER if improved else WORSE


def stored_rows(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every complete evaluation's row outcomes, each with the unit (`unit`) its target belongs to."""
    rows = pd.DataFrame(fetch_records(con, "evaluation/evaluation_rows_all"))
    if rows.empty:
        return rows
    rows["unit"] = [_unit(row) for row in rows[["target", "selection_id", "base_fingerprint", "profile",
                                                "finetune_config"]].to_dict(orient="records")]
    return rows


def _unit(row: dict) -> str:
    # the seeds of one selection on one base model with one recipe (the trainer's config less what capsel sets per
    # run) are one unit, named by its selection; a recipe of its own gets its hash beside the name
    if row["selection_id"] is None or row["selection_id"] != row["selection_id"]:
        return row["target"]
    config = orjson.loads(row["finetune_config"]) if isinstance(row["finetune_config"], (str, bytes)) else {}
    recipe = {key: value for key, value in config.items() if key not in CAPSEL_OWNED}
    return f"{row['selection_id']}|{row['base_fingerprint']}|{row['profile']}|{config_hash(recipe)}"


def unit_label(unit: str) -> str:
    """What a unit is called in a table: its selection id or base:MODEL (the recipe part stays internal)."""
    return unit.split("|", 1)[0]


def resolve_unit(rows: pd.DataFrame, name: str) -> str:
    """The unit `name` means: base:MODEL or a fine-tune id as evaluated, or a selection id (its one unit)."""
    if rows.empty:
        raise CapselError("no stored evaluation has per-row outcomes yet: `capsel evaluate` stores them")
    by_target = rows.loc[rows["target"] == name, "unit"].unique()
    by_selection = rows.loc[rows["selection_id"] == name, "unit"].unique()
    found = by_target if len(by_target) else by_selection
    if len(found) == 1:
        return str(found[0])
    if len(found) > 1:
        raise CapselError(f"{name} was fine-tuned with {len(found)} recipes or base models; name one of its "
                          "fine-tune ids instead")
    raise CapselError(f"no evaluation of {name!r} with per-row outcomes is stored; `capsel evaluations` lists "
                      "what is (results stored before per-row outcomes were kept need `capsel evaluate` again)")


def compare(rows: pd.DataFrame, against: str, eval_filter: str | None = None, resamples: int = RESAMPLES,
            seed: int = SEED) -> list[Comparison]:
    """Every other unit evaluated on the same file and config as `against`, per domain and overall."""
    reference = resolve_unit(rows, against)
    if eval_filter is not None:
        rows = rows[(rows["eval_spec"] == eval_filter) | (rows["eval_kind"] + ":" + rows["eval_file_sha256"]
                                                          == eval_filter)]
    comparisons = []
    for (*_, metric), evaluation in rows.groupby(_EVAL_KEY + ["metric"], sort=True):
        averaged = _averaged_over_seeds(evaluation)
        if reference not in averaged:
            continue
        eval_text = str(evaluation.loc[evaluation["unit"] == reference, "eval_spec"].iloc[0])
        *_, against_label = _selected_by(evaluation, reference)
        for unit in sorted(averaged):
            if unit != reference:
                comparisons += _compared(averaged[unit], averaged[reference], (unit, reference),
                                         (eval_text, str(metric)), resamples, seed,
                                         (*_selected_by(evaluation, unit), against_label))
    return comparisons


def _selected_by(evaluation: pd.DataFrame, unit: str) -> tuple[str | None, str | None, str]:
    first = evaluation.loc[evaluation["unit"] == unit, ["target", "selection_id", *_SELECTED_BY]].iloc[0]
    row = {key: None if pd.isna(value) else str(value) for key, value in first.items()}
    # a fine-tune of a selection published in another store: its method is not known here
    known = row["method"] is not None or row["selection_id"] is None
    return row["method"], row["budget"], method_label(row) if known else ""


def _averaged_over_seeds(evaluation: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each unit's rows (indexed by row_index): outcome averaged over its seeds' models, weight, domain, seeds."""
    averaged = {}
    for unit, rows in evaluation.groupby("unit", sort=True):
        # a row every seed's model evaluated; the weight (tokens) is the same for each, the tokenizer being one
        per_row = rows.groupby("row_index").agg(outcome=("outcome", "mean"), weight=("weight", "first"),
                                                domain=("domain", "first"), models=("target", "nunique"))
        seeds = rows["target"].nunique()
        averaged[str(unit)] = per_row[per_row["models"] == seeds].assign(seeds=seeds)
    return averaged


def _compared(unit_rows: pd.DataFrame, reference_rows: pd.DataFrame, units: tuple[str, str],
              evaluation: tuple[str, str], resamples: int, seed: int,
              labels: tuple[str | None, str | None, str, str]) -> list[Comparison]:
    (unit, reference), (eval_text, metric) = units, evaluation
    common = unit_rows.index.intersection(reference_rows.index).sort_values()
    ours, theirs = unit_rows.loc[common], reference_rows.loc[common]
    domains = sorted(set(ours["domain"]))
    scopes = [(OVERALL, np.ones(len(common), dtype=bool))]
    scopes += [(domain, (ours["domain"] == domain).to_numpy()) for domain in domains] if len(domains) > 1 else []
    compared = []
    for domain, mask in scopes:
        a_out, a_w = ours["outcome"].to_numpy()[mask], ours["weight"].to_numpy()[mask]
        b_out, b_w = theirs["outcome"].to_numpy()[mask], theirs["weight"].to_numpy()[mask]
        value, against_value = ratio_of_sums(a_out, a_w), ratio_of_sums(b_out, b_w)
        ci95 = paired_delta_interval(a_out, a_w, b_out, b_w, resamples, seed)
        compared.append(Comparison(unit_label(unit), unit_label(reference), eval_text, domain, metric, value,
                                   against_value, value - against_value, ci95, int(mask.sum()),
                                   verdict(metric, ci95), int(ours["seeds"].iloc[0]) if len(ours) else 0,
                                   int(theirs["seeds"].iloc[0]) if len(theirs) else 0, *labels))
    return compared


def comparisons_of(con: duckdb.DuckDBPyConnection, against: str, eval_filter: str | None = None,
                   resamples: int = RESAMPLES, seed: int = SEED) -> list[Comparison]:
    """`compare` over the store: what `capsel evaluations --against` shows."""
    return compare(stored_rows(con), against, eval_filter, resamples, seed)


def comparisons_among(con: duckdb.DuckDBPyConnection, targets: Sequence[str]) -> list[Comparison]:
    """The targets (fine-tune ids, base:MODEL) against the first base model among them, else the first one; each
    fine-tune as its selection's unit. What the evaluate flow and `capsel compare` show."""
    rows = stored_rows(con)
    if rows.empty or not targets:
        return []
    evaluated = [target for target in targets if target in set(rows["target"])]
    if not evaluated:
        return []
    against = next((target for target in evaluated if target.startswith("base:")), evaluated[0])
    wanted = {unit_label(unit) for unit in rows.loc[rows["target"].isin(evaluated), "unit"]}
    return [c for c in compare(rows, against) if c.target in wanted]

