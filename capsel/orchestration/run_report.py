"""What a flow run did, as Markdown and table rows (the flows publish them as Prefect artifacts).

Names and texts from the pool enter the Markdown through markdown_text: shown as typed, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from capsel.ingest.summary import IngestReport
from capsel.orchestration.version_diff import VersionDiff
from capsel.publish.funnel import funnel_rows
from capsel.publish.publish import PublishedSelection
from capsel.runner.progress import RunSummary
from capsel.safe_text import markdown_text
from capsel.selection.residualize import DomainFit
from capsel.selection.scoring_key import ScoringKey

PREVIEW_CHARS = 80


@dataclass
class FlowReport:
    """The stages of one flow run as far as they got; a stage that did not run stays None."""

    flow: str
    run_id: str
    prefect_flow_run_id: str | None = None
    ingest: IngestReport | None = None
    scoring: RunSummary | None = None
    key: ScoringKey | None = None
    fits: list[DomainFit] = field(default_factory=list)
    published: PublishedSelection | None = None
    members: list[dict] = field(default_factory=list)  # selection_rows of the published selection
    examples: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)  # markdown lines of summary_plots
    change: VersionDiff | None = None  # against the previous version of the same selection line

    def counters(self) -> dict:
        """JSON-ready counters of every stage, stored with the flow's run."""
        counters: dict = {}
        if self.ingest is not None:
            counters["ingest"] = {"run_id": self.ingest.run_id, **self.ingest.counters()}
        if self.scoring is not None:
            counters["score"] = {"run_id": self.scoring.run_id, **self.scoring.counters()}
        if self.published is not None:
            counters["selection"] = {
                "selection_id": self.published.selection_id, "path": str(self.published.path),
                "n_members": self.published.manifest["n_members"],
            }
        if self.notes:
            counters["notes"] = list(self.notes)
        return counters


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """Text on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def selection_rows(members: pd.DataFrame) -> list[dict]:
    """The selection as table rows: id, domain, rank, z and an instruction preview."""
    return [
        {
            "candidate_id": row.candidate_id, "domain": row.domain, "rank": int(row.rank),
            "z": None if pd.isna(row.z) else round(float(row.z), 4), "instruction": preview(row.instruction),
        }
        for row in members.itertuples(index=False)
    ]


def summary_markdown(report: FlowReport) -> str:
    """The run summary: counts per stage, exclusions, the per-domain fits, the selection and examples."""
    lines = [f"# capsel {report.flow}: run `{report.run_id}`", ""]
    if report.prefect_flow_run_id:
        lines += [f"Prefect flow run `{report.prefect_flow_run_id}`.", ""]
    lines += [f"- {markdown_text(note)}" for note in report.notes] + ([""] if report.notes else [])
    if report.ingest is not None:
        lines += _ingest_section(report.ingest)
    if report.scoring is not None:
        lines += _scoring_section(report.scoring, report.key)
    if report.fits:
        lines += _fits_section(report.fits, report.published)
    if report.published is not None:
        manifest = report.published.manifest
        lines += [
            "## Selection", "",
            f"`{report.published.selection_id}`: {manifest['n_members']} members ({manifest['method']}, "
            f"budget {manifest['budget']} {manifest['budget_mode']}), published at "
            f"{markdown_text(report.published.path)}; "
            f"gate passed {manifest['gate']['n_expectations']} expectations.", "",
        ]
        funnel = [[markdown_text(cell) for cell in row] for row in funnel_rows(manifest["funnel"])]
        lines += _table("Funnel: rows read to members (each dropped row is in excluded.parquet)",
                        ["stage", "rows", "left", "reasons"], funnel)
    if report.change is not None:
        lines += _change_section(report.change)
    if report.plots:
        lines += ["## Plots", "", *report.plots]
    if report.examples:
        lines += _table(
            "Top and bottom examples by z", ["domain", "side", "candidate", "z", "instruction"],
            [[markdown_text(e["domain"]), e["side"], f"`{e['candidate_id']}`", _num(e["z"]),
              markdown_text(preview(e["instruction"]))]
             for e in report.examples],
        )
    return "\n".join(lines)


def gate_failure_markdown(run_id: str, failures: Sequence[str], report_path: str) -> str:
    """Why the data-quality gate refused the selection, one failing expectation per line."""
    listing = [f"- {markdown_text(failure)}" for failure in failures]
    return "\n".join([
        f"# Data-quality gate failed: run `{run_id}`", "",
        f"{len(failures)} expectation(s) failed; nothing was published. gate report: {markdown_text(report_path)}",
        "",
        *listing,
    ])


# ingest counts in the order people read them: what came in, then where it went
INGEST_COLUMNS = {"domain": "domain", "n_read": "read", "n_inserted": "inserted", "n_duplicates": "duplicates",
                  "n_quarantined": "quarantined", "n_sampled_out": "sampled out"}


def ingest_rows(ingest: IngestReport) -> list[dict]:
    """One row per domain and a 'total' row, keyed by the column titles (the table artifact's rows)."""
    return [{title: getattr(counts, name) for name, title in INGEST_COLUMNS.items()}
            for counts in [*ingest.domains, ingest.totals()]]


def ingest_line(ingest: IngestReport, between: str = "; ") -> str:
    """The ingest in one readable log line: files, `between`, then the row totals (a flow's log puts a line
    break there, so each half fits a terminal)."""
    counters, totals = ingest.counters(), ingest.totals()
    retried = f", {counters['rows_retried']} quarantined row(s) retried" if counters["rows_retried"] else ""
    return (f"ingest: {counters['files_ingested']} file(s) read, {counters['files_skipped']} already ingested"
            f"{retried}{_passed_over(counters)}{between}{totals.n_read} row(s): {totals.n_inserted} inserted, "
            f"{totals.n_duplicates} duplicate(s), {totals.n_quarantined} quarantined, "
            f"{totals.n_sampled_out} sampled out")


def _passed_over(counters: dict) -> str:
    """What was read but is no row, so not in the counts that add up: said, or it would go unseen."""
    parts = [f"{counters[key]} {what}" for key, what in (("files_empty", "empty file(s) skipped"),
                                                         ("blank_lines", "blank line(s) passed over"))
             if counters.get(key)]
    return "".join(f", {part}" for part in parts)


def _ingest_section(ingest: IngestReport) -> list[str]:
    counters = ingest.counters()
    head = [
        "## Ingest", "",
        f"{counters['files_ingested']} file(s) ingested, {counters['files_skipped']} already ingested (skipped)"
        f"{_passed_over(counters)}.", "",
    ]
    rows = [[markdown_text(row["domain"]), *list(row.values())[1:]] for row in ingest_rows(ingest)]
    return head + _table(None, list(INGEST_COLUMNS.values()), rows)


def _change_section(change: VersionDiff, limit: int = 20) -> list[str]:
    lines = ["## Changes since the previous version", "", f"{change.line()}.", ""]
    for label, ids in (("added", change.added), ("dropped", change.dropped)):
        shown = sorted(ids)[:limit]
        if shown:
            more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
            lines += [f"- {label}: " + ", ".join(f"`{i}`" for i in shown) + more]
    return lines + [""]


def _scoring_section(scoring: RunSummary, key: ScoringKey | None) -> list[str]:
    which = f"model `{key.model_fingerprint}`, config `{key.config_hash}`" if key else "no scores"
    rows: list[list[Any]] = [
        ["in scope", scoring.n_in_scope], ["already scored", scoring.n_already_done],
        ["scored this run", scoring.n_processed], ["eligible (measured)", scoring.n_done],
        ["y-hat generated", scoring.n_generated],
        *[[f"excluded: {reason}", count] for reason, count in sorted(scoring.excluded.items())],
        ["candidates/s", f"{scoring.rate:.2f}"],
    ]
    return ["## Scoring", "", f"{which}; score run `{scoring.run_id}`.", ""] + _table(None, ["", "count"], rows)


def _fits_section(fits: Sequence[DomainFit], published: PublishedSelection | None) -> list[str]:
    entries = {e["domain"]: e for e in published.manifest["domains"]} if published else {}
    rows = [
        [markdown_text(fit.domain), fit.n_eligible, _num(fit.alpha), _num(fit.beta), _num(fit.r2),
         entries.get(fit.domain, {}).get("k", ""), _num(entries.get(fit.domain, {}).get("z_cut"))]
        for fit in fits
    ]
    return _table("Per-domain fit: D_late = α + β·D_early", ["domain", "eligible", "α", "β", "r²", "k", "cut z"], rows)


def _table(title: str | None, header: list[str], rows: list[list]) -> list[str]:
    out = [f"## {title}", ""] if title else []
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return out + [""]


def _num(value: float | None) -> str:
    return "" if value is None or value == "" else f"{value:.4g}"
