"""`capsel lab tables`: render the lab's and the benchmarks' tables of the READMEs and docs/lab.md from the
committed result files (docs/lab/, benchmarks/results/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from capsel.cli.common import console
from capsel.errors import CapselError
from capsel_lab.result_tables import DOCUMENTS, stale_documents

REPOSITORY = Path(__file__).resolve().parents[2]


def tables(
    check: Annotated[bool, typer.Option(
        "--check", help="Change nothing; fail (exit 3) when a document's table differs from what its files render.")
    ] = False,
) -> None:
    """Rewrite every table block of README.md, capsel_lab/README.md, docs/lab.md and benchmarks/README.md from the
    result files it names."""
    stale = stale_documents(REPOSITORY, write=not check)
    if check and stale:
        raise CapselError(f"{', '.join(stale)}: tables differ from their result files; run `capsel lab tables`")
    said = "rewrote " + ", ".join(stale) if stale else f"{', '.join(DOCUMENTS)}: every table is as rendered"
    console.print(said, markup=False, highlight=False)
