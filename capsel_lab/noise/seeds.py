"""The noise experiment over several seeds: one scored pool per seed, then one table of where the junk went."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import orjson
import pandas as pd

from capsel.runner.progress import ProgressSink
from capsel_lab.noise.experiment import NoiseResult, run_noise
from capsel_lab.noise.methods import METHOD_COLUMNS
from capsel_lab.noise.plot import plot_junk_percentiles
from capsel_lab.noise.selections import SELECTION_METHODS
from capsel_lab.noise.spec import NoiseSpec

SUMMARY_FILE, FIGURE_FILE, JUNK_FILE = "noise.json", "junk_percentiles.png", "junk.parquet"
RANK_STATS = ("median", "below_p5", "above_p95")


@dataclass
class SeedsResult:
    """Every seed's result, the aggregate table and the files written."""

    per_seed: dict[int, NoiseResult]
    aggregate: dict
    files: dict[str, Path]


def run_noise_seeds(
    model: str | Path, spec: NoiseSpec, seeds: Sequence[int], out_dir: Path,
    sink_for: Callable[[int], ProgressSink | None] = lambda seed: None,
) -> SeedsResult:
    """Run `spec` once per seed into `out_dir/seed-S`, then aggregate into `out_dir/noise.json` and a figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    per_seed = {seed: run_noise(model, replace(spec, seed=seed), out_dir / f"seed-{seed}", sink_for(seed))
                for seed in seeds}
    junk = pd.concat([result.junk.assign(seed=seed) for seed, result in per_seed.items()], ignore_index=True)
    aggregate = aggregate_seeds({seed: result.summary for seed, result in per_seed.items()})
    files = {
        "summary": out_dir / SUMMARY_FILE,
        "figure": plot_junk_percentiles(junk, out_dir / FIGURE_FILE, f"{Path(str(model)).name}, "
                                        f"{spec.pool} pool, prompt format {aggregate['prompt_format']}, "
                                        f"seeds {', '.join(map(str, seeds))}: {len(junk)} junk"),
        "junk": out_dir / JUNK_FILE,
    }
    junk.to_parquet(files["junk"], index=False)
    body = {"model": str(model), "spec": asdict(spec), "seeds": list(seeds), "aggregate": aggregate,
            "per_seed_files": {seed: str(result.files["summary"]) for seed, result in per_seed.items()}}
    files["summary"].write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return SeedsResult(per_seed, aggregate, files)


def aggregate_seeds(summaries: dict[int, dict]) -> dict:
    """Per method and junk kind: rank statistics per seed and their mean; selections and exclusions summed."""
    first = next(iter(summaries.values()))
    groups = {"all junk": "pooled", **{kind: kind for kind in first["per_junk_kind"]}}
    ranks = {}
    for method in METHOD_COLUMNS:
        for group, source in groups.items():
            rows = [(summary["pooled"] if source == "pooled" else summary["per_junk_kind"].get(source, {}))
                    .get(method) for summary in summaries.values()]
            rows = [row for row in rows if row]
            if rows:
                ranks[f"{method}/{group}"] = {
                    "n_junk": sum(row["n_junk"] for row in rows),
                    **{stat: _per_seed(row[stat] for row in rows) for stat in RANK_STATS},
                }
    return {
        "prompt_format": first["prompt_format"],
        "ranks": ranks,
        "selections": {method: _summed_selection([s["selections"]["methods"][method] for s in summaries.values()])
                       for method in SELECTION_METHODS},
        "clean_excluded": _per_seed(_clean_excluded_share(s) for s in summaries.values()),
        "excluded": _summed_counts(s["excluded"] for s in summaries.values()),
        "guard": {name: _per_seed(s["guard"][name]["share_held_back"] for s in summaries.values())
                  for name in ("clean", "junk")},
        "n_clean": [s["pooled"]["cap"]["n_clean"] for s in summaries.values()],
        "n_candidates": [s["n_candidates"] for s in summaries.values()],
        "notes": [note for s in summaries.values() for note in s["notes"]],
    }


def _per_seed(values) -> dict:
    values = [np.nan if v is None else float(v) for v in values]
    return {"per_seed": values, "mean": float(np.nanmean(values)) if not np.all(np.isnan(values)) else None}


def _summed_selection(rows: list[dict]) -> dict:
    kinds: dict[str, int] = {}
    for row in rows:
        for kind, count in row["junk_by_kind"].items():
            kinds[kind] = kinds.get(kind, 0) + count
    return {"n_members": sum(r["n_members"] for r in rows), "n_junk": sum(r["n_junk"] for r in rows),
            "junk_by_kind": kinds, "n_clean": sum(r["n_clean"] for r in rows)}


def _clean_excluded_share(summary: dict) -> float | None:
    clean = [row for label, row in summary["labels"].items() if label != "junk"]
    n = sum(row["n"] for row in clean)
    return sum(row["n_excluded"] for row in clean) / n if n else None


def _summed_counts(mappings) -> dict[str, int]:
    total: dict[str, int] = {}
    for mapping in mappings:
        for name, count in mapping.items():
            total[name] = total.get(name, 0) + count
    return dict(sorted(total.items()))
