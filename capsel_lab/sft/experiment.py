"""The SFT comparison: score a lab pool, select CAP-top and random subsets, fine-tune each, test held-out."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import torch

from capsel.db import open_db
from capsel.models.loading import load_causal_lm
from capsel.runner.progress import ProgressSink
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel_lab.evaluate import answer_hits
from capsel_lab.labels import candidate_labels
from capsel_lab.pretrain_config import world_spec_of
from capsel_lab.scored_pool import build_scored_pool, clean_pool_spec
from capsel_lab.sft.examples import sft_example
from capsel_lab.sft.finetune import finetune
from capsel_lab.sft.plot import plot_budget_curve
from capsel_lab.sft.spec import SftSpec
from capsel_lab.sft.stats import summarise_runs
from capsel_lab.world.facts import build_world
from capsel_lab.world.pools import build_pool

SUMMARY_FILE, FIGURE_FILE = "sft.json", "sft.png"
METHODS = ("cap", "random")


@dataclass(frozen=True)
class TrainingSet:
    """One subset to fine-tune on: which row of the table it belongs to and its records."""

    budget: str
    method: str
    seed: int
    records: pd.DataFrame   # instruction, input, response, lab_label


@dataclass
class SftResult:
    """Every run's figures, the table (mean ± std per budget and method) and the files written."""

    runs: list[dict]
    table: list[dict]
    files: dict[str, Path]


def run_sft(model: str | Path, spec: SftSpec, out_dir: Path, sink: ProgressSink | None = None,
            on_run: Callable[[dict], None] | None = None) -> SftResult:
    """Score the pool in `out_dir`, then fine-tune and evaluate the base model, each subset and the full pool."""
    pool = build_pool(build_world(world_spec_of(model)), clean_pool_spec(spec.n_clean, spec.junk_share, spec.pool_seed))
    scored, _ = build_scored_pool(out_dir, pool.candidates, model, spec.scoring_batch_size, sink)
    labels = candidate_labels(pool.candidates)
    heldout = pool.heldout[: spec.max_heldout] if spec.max_heldout else pool.heldout
    sets = training_sets(scored.db_path, scored.key, spec, labels)
    full = pd.DataFrame(pool.candidates).rename(columns={"output": "response"})
    sets += [TrainingSet("full pool", "all", seed, full) for seed in range(spec.n_seeds)]
    base, tokenizer = load_causal_lm(model)
    runs = [_run_row(TrainingSet("none", "base model", 0, full.iloc[:0]), base, tokenizer, heldout, spec, [])]
    _notify(on_run, runs[-1])
    for training in sets:
        examples = [sft_example(tokenizer, r.instruction, r.input, r.response) for r in training.records.itertuples()]
        tuned, losses = finetune(model, examples, spec.finetune, training.seed)
        runs.append(_run_row(training, tuned, tokenizer, heldout, spec, losses))
        _notify(on_run, runs[-1])
    table = summarise_runs(runs)
    files = {"summary": out_dir / SUMMARY_FILE, "figure": out_dir / FIGURE_FILE}
    files["summary"].write_text(json.dumps({
        "model": str(model), "spec": asdict(spec), "n_candidates": len(pool.candidates), "n_heldout": len(heldout),
        "table": table, "runs": runs,
    }, indent=1), encoding="utf-8")
    plot_budget_curve(table, spec.budgets, files["figure"], f"{Path(model).name}: held-out accuracy after SFT")
    return SftResult(runs, table, files)


def training_sets(db_path: Path, key, spec: SftSpec, labels: pd.DataFrame) -> list[TrainingSet]:
    """CAP-top and seeded-random members per budget, read through the selection library."""
    sets = []
    con = open_db(db_path, read_only=True)
    try:
        for budget in spec.budgets:
            for method in METHODS:
                # CAP's members do not depend on the seed; the seed still changes the training order
                for seed in range(spec.n_seeds):
                    request = SelectionParams(budget=budget, method=method, seed=seed,
                                              model=key.model_fingerprint, config_hash=key.config_hash)
                    members = build_selection(con, request, key).members
                    records = members[["candidate_id", "instruction", "input", "response"]].merge(
                        labels[["candidate_id", "lab_label"]], on="candidate_id", how="left")
                    sets.append(TrainingSet(budget, method, seed, records))
    finally:
        con.close()
    return sets


def _run_row(training: TrainingSet, model, tokenizer, heldout: list[dict], spec: SftSpec, losses: list[float]) -> dict:
    with torch.no_grad():
        hits = answer_hits(model, tokenizer, heldout, spec.eval_batch_size)
    by_label = {label: [hit for hit, q in zip(hits, heldout) if q["lab_label"] == label]
                for label in ("known", "learnable")}
    counts = training.records["lab_label"].value_counts() if len(training.records) else pd.Series(dtype=int)
    return {
        "budget": training.budget, "method": training.method, "seed": training.seed,
        "n_train": int(len(training.records)), "n_junk": int(counts.get("junk", 0)),
        "n_known": int(counts.get("known", 0)), "n_learnable": int(counts.get("learnable", 0)),
        "accuracy": sum(hits) / len(hits),
        **{f"accuracy_{label}": (sum(h) / len(h) if h else None) for label, h in by_label.items()},
        "final_loss": losses[-1] if losses else None,
    }


def _notify(on_run: Callable[[dict], None] | None, row: dict) -> None:
    if on_run:
        on_run(row)
