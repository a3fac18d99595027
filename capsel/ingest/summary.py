"""What an ingest did, per file and per domain, read back from where the rows landed."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import duckdb

from capsel.db import run_sql
from capsel.ingest.field_hint import FieldHint
from capsel.ingest.file_outcome import FileOutcome
from capsel.ingest.inputs import EMPTY_FILE, Skipped


@dataclass(frozen=True)
class DomainCounts:
    """Outcome counts of one domain in one run; n_read is their sum."""

    domain: str
    n_read: int
    n_inserted: int
    n_duplicates: int
    n_quarantined: int
    n_sampled_out: int


@dataclass(frozen=True)
class IngestReport:
    """Result of one `ingest` call: its run, its files, its per-domain counts and the folder entries not read."""

    run_id: str
    files: list[FileOutcome]
    domains: list[DomainCounts]
    hints: list[FieldHint] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def totals(self) -> DomainCounts:
        """Counts summed over every domain, labelled 'total'."""
        sums = [sum(getattr(d, name) for d in self.domains) for name in _COUNT_FIELDS]
        return DomainCounts("total", *sums)

    def counters(self) -> dict:
        """JSON-ready counters stored with the run."""
        return {
            "files_ingested": sum(f.already_ingested_by is None for f in self.files),
            "files_skipped": sum(f.already_ingested_by is not None and f.n_retried is None for f in self.files),
            "rows_retried": sum(f.n_retried or 0 for f in self.files),
            "blank_lines": sum(f.n_blank_lines for f in self.files),
            "files_empty": sum(1 for skipped in self.skipped if skipped.reason == EMPTY_FILE),
            "domains": {d.domain: {k: v for k, v in asdict(d).items() if k != "domain"} for d in self.domains},
        }


_COUNT_FIELDS = ("n_read", "n_inserted", "n_duplicates", "n_quarantined", "n_sampled_out")


def run_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> list[DomainCounts]:
    """Per-domain counts of one ingest run; quarantined rows without a domain count under '(none)'."""
    rows = run_sql(con, "ingest/ingest_run_summary", {"run_id": run_id}).fetchall()
    return [DomainCounts(*row) for row in rows]
