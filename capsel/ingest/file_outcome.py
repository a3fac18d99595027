"""What ingest did with one input file: the counts both the run summary and the field hint read."""

from __future__ import annotations

from dataclasses import dataclass

from capsel.ingest.inputs import InputFile


@dataclass(frozen=True)
class FileOutcome:
    """One input file: ingested now (n_rows_read rows), skipped because its sha256 is known, or (--reingest)
    known and its n_retried quarantined rows read again.

    n_source_rows and n_quarantined are the source's totals after this run (0 for a skipped file);
    n_blank_lines counts the blank lines (JSONL, CSV) read past this time, which are no rows.
    """

    path: InputFile
    source_id: str
    n_rows_read: int
    already_ingested_by: str | None = None
    n_retried: int | None = None
    n_source_rows: int = 0
    n_quarantined: int = 0
    n_blank_lines: int = 0

    @property
    def all_quarantined(self) -> bool:
        """Every row of the file is in quarantine: almost always a wrong --map, --domain or format."""
        return self.n_source_rows > 0 and self.n_quarantined == self.n_source_rows
