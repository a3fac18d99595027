"""What an lm-eval run left behind: its results JSON, its samples file and the table it printed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from capsel.errors import CapselError
from capsel.evaluation.row_outcomes import OVERALL, RowOutcome

# lm-eval's "<metric>,<filter>" keys, named as capsel stores them.
METRIC_NAMES = {
    "exact_match,strict-match": "exact_match_strict",
    "exact_match,flexible-extract": "exact_match_flexible",
    "pass_at_1,create_test": "pass@1",
}


@dataclass(frozen=True)
class HarnessMetric:
    """One metric lm-eval reported: its value, its standard error where it gave one, over n samples."""

    metric: str
    value: float
    stderr: float | None
    n: int
    key: str = ""  # lm-eval's "<metric>,<filter>", which names the metric in each logged sample


@dataclass(frozen=True)
class ParsedResults:
    """The metrics of one task from a results file, and the lm-eval version that wrote it."""

    metrics: list[HarnessMetric]
    harness_version: str
    results_path: Path
    samples_path: Path | None


def metric_name(key: str) -> str:
    """capsel's name for an lm-eval "<metric>,<filter>" key (an unknown one as "<metric>_<filter>")."""
    if key in METRIC_NAMES:
        return METRIC_NAMES[key]
    metric, _, filter_name = key.partition(",")
    return f"{metric}_{filter_name}" if filter_name and filter_name != "none" else metric


def _stderr(value: object) -> float | None:
    # lm-eval writes "N/A" where it has no standard error (a single sample, a non-mean aggregation)
    return float(value) if isinstance(value, (int, float)) else None


def read_results(output_dir: Path, task_name: str, log_path: Path) -> ParsedResults:
    """The task's metrics from the one results_*.json lm-eval wrote under `output_dir` (its samples file beside)."""
    found = sorted(output_dir.glob("**/results_*.json"))
    if len(found) != 1:
        raise CapselError(f"lm-eval left {len(found)} results files under {output_dir}, expected one; "
                          f"its log: {log_path}")
    document = json.loads(found[0].read_text())
    task = document.get("results", {}).get(task_name)
    if not task:
        raise CapselError(f"lm-eval's results {found[0]} hold no {task_name}; its log: {log_path}")
    n = int(document["n-samples"][task_name]["effective"])
    metrics = [
        HarnessMetric(metric_name(key), float(value), _stderr(task.get(key.replace(",", "_stderr,", 1))), n, key)
        for key, value in task.items()
        if "," in key and "_stderr," not in key
    ]
    if not metrics:
        raise CapselError(f"lm-eval's results {found[0]} hold no metric for {task_name}; its log: {log_path}")
    samples = sorted(found[0].parent.glob(f"samples_{task_name}_*.jsonl"))
    return ParsedResults(metrics, str(document.get("lm_eval_version", "unknown")), found[0],
                         samples[0] if samples else None)


def sample_outcomes(samples_path: Path | None, metric: HarnessMetric) -> list[RowOutcome]:
    """Each question's outcome of `metric` (e.g. correct 0/1) from lm-eval's logged samples, by doc_id."""
    if samples_path is None:
        raise CapselError(f"lm-eval logged no samples, so {metric.metric} has no per-question outcomes")
    name, _, filter_name = metric.key.partition(",")
    outcomes = {}
    with samples_path.open("rb") as handle:
        for line in handle:
            sample = json.loads(line)
            if sample.get("filter", "none") == filter_name and name in sample:
                outcomes[int(sample["doc_id"])] = RowOutcome(metric.metric, int(sample["doc_id"]), OVERALL,
                                                             float(sample[name]), 1.0)
    if len(outcomes) != metric.n:
        raise CapselError(f"lm-eval's samples {samples_path} hold {len(outcomes)} outcomes of {metric.key}, "
                          f"its results {metric.n}")
    return [outcomes[doc_id] for doc_id in sorted(outcomes)]


def printed_table(stdout: str) -> str:
    """The summary lm-eval printed: its model line and the results table below it."""
    lines = stdout.splitlines()
    start = next((index for index, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return ""
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    # the line just above the table says which model, gen_kwargs, limit and batch size it ran with
    head = start - 1 if start > 0 and lines[start - 1].strip() else start
    return "\n".join(lines[head:end])
