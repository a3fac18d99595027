"""The DuckDB tables a flow run read and wrote, derived from its stage counters, named as OpenLineage datasets.

A table counts when its rows fed what the run produced or the run changed it. Look-ups that
only decided there was nothing to do (a file's hash already in `sources`, an empty pending
scope) touch nothing, so a run that ingested, scored and published nothing names no table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from capsel.methods.registry import method as method_named

# what a selection reads besides its scores: the pool and, for excluded.parquet's funnel, every exclusion
SELECT_READS = ("candidates", "sources", "quarantine", "duplicates", "sampled_out")
SCORE_KEY_TABLES = ("models", "scoring_configs")
# ingest counter -> the table those rows went to
INGEST_WRITES = {"n_inserted": "candidates", "n_duplicates": "duplicates", "n_quarantined": "quarantine",
                 "n_sampled_out": "sampled_out"}
DUCKDB_SCHEMA = "main"


@dataclass
class TableUse:
    """Tables read, and tables written with the rows this run wrote to each."""

    read: list[str] = field(default_factory=list)
    written: dict[str, int] = field(default_factory=dict)

    def reads(self, *tables: str) -> None:
        """Add `tables` to those read, once each, in order."""
        self.read.extend(table for table in tables if table not in self.read)

    def writes(self, table: str, rows: int) -> None:
        """Record `rows` written to `table`; no rows is no write."""
        if rows:
            self.written[table] = rows


def table_use(counters: dict, method: str | None, selected: bool) -> TableUse:
    """What a flow run touched, from its counters (FlowReport.counters), its scoring method and whether it selected.

    `selected` says the select stage ran (its reads happened even when the gate then refused the selection);
    the selection tables are written only once counters name a published selection.
    """
    use = TableUse()
    ingest = counters.get("ingest") or {}
    totals = {name: sum(domain.get(name, 0) for domain in ingest.get("domains", {}).values())
              for name in ("n_read", *INGEST_WRITES)}
    if totals["n_read"]:
        use.reads("candidates")  # new rows are deduplicated against the pool
    use.writes("sources", ingest.get("files_ingested", 0))
    for name, table in INGEST_WRITES.items():
        use.writes(table, totals[name])
    use.writes("quarantine_retried", ingest.get("rows_retried", 0))

    score = counters.get("score") or {}
    if score.get("n_processed") and method is not None:
        scored = method_named(method)
        use.reads("candidates", *scored.scoring_reads)
        use.writes("generations", score.get("n_generated", 0))
        use.writes(scored.results_table, score["n_processed"])

    if selected:
        use.reads(*SELECT_READS)
        if method is not None:
            use.reads(method_named(method).selection_table, *SCORE_KEY_TABLES)
    if (selection := counters.get("selection")) is not None:
        use.writes("selections", 1)
        use.writes("selection_members", selection["n_members"])
    return use


def duckdb_dataset(db_path: Path, table: str) -> tuple[str, str]:
    """(namespace, name) of a table in a DuckDB file, as OpenLineage's dbt integration names them.

    The naming table of the spec has no DuckDB row; OpenLineage's dbt-duckdb support uses namespace
    `duckdb://{path}` and name `{database}.{schema}.{table}`, where DuckDB names a file's database by its stem.
    """
    path = db_path.resolve()
    return f"duckdb://{path}", f"{path.stem}.{DUCKDB_SCHEMA}.{table}"
