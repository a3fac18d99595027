"""`capsel lab real-pool`: rebuild the bundled real pool (GSM8K + HumanEval sample with junk and labels)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from capsel.cli.common import console
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.paths import typed_path
from capsel_lab.real_pool import JUNK_KINDS, RealPoolSpec, write_real_pool
from capsel_lab.real_sources import bundled_real_sources

_DEFAULT = RealPoolSpec()


def real_pool(
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for pool.jsonl, labels.csv, manifest.json, the licences and PROVENANCE.md.")],
    source: Annotated[Optional[Path], typer.Option(
        "--source", help="Folder holding gsm8k_train.jsonl and humaneval.jsonl with the bundled sha256s (default: "
                         "the copies bundled in capsel/data/real).", show_default=False)] = None,
    seed: Annotated[int, typer.Option(
        "--seed", help="Seed of the row draw, the junk and the file order.")] = _DEFAULT.seed,
    n_math: Annotated[int, typer.Option(
        "--n-math", min=0, help="GSM8K train rows drawn for the math domain (all 7,473 at most).")] = _DEFAULT.n_math,
    n_code: Annotated[int, typer.Option(
        "--n-code", min=0, help="HumanEval rows drawn for the code domain (all 164 at most).")] = _DEFAULT.n_code,
    junk_share: Annotated[float, typer.Option(
        "--junk-share", min=0.0, help="Junk records per clean record in each domain (0.05: 5% junk).",
    )] = _DEFAULT.junk_share,
    junk_kinds: Annotated[str, typer.Option(
        "--junk-kinds", help="Junk kinds taken in turn, comma-separated: salad (random pseudo-words), "
                             "shuffled (a clean record's characters in random order).")] = ",".join(JUNK_KINDS),
    no_verify: Annotated[bool, typer.Option(
        "--no-verify", help="Build from source files whose sha256 differs from the bundled ones "
                            "(the manifest records the sha256s read).")] = False,
) -> None:
    """Draw GSM8K and HumanEval rows by seed, inject junk, and write the pool with its labels and provenance."""
    out_dir = typed_path(out)
    spec = RealPoolSpec(seed=seed, n_math=n_math, n_code=n_code, junk_share=junk_share,
                        junk_kinds=tuple(kind.strip() for kind in junk_kinds.split(",") if kind.strip()))
    manifest = write_real_pool(source or bundled_real_sources(), out_dir, spec, verify=not no_verify)
    table = Table(title=f"real pool, seed {seed}: {manifest['n_records']} records")
    for column in ("domain", "clean", *(f"junk: {kind}" for kind in JUNK_KINDS)):
        table.add_column(column, justify="left" if column == "domain" else "right")
    for domain, counts in manifest["counts"].items():
        table.add_row(domain, str(counts.get("clean", 0)), *(str(counts.get(kind, 0)) for kind in JUNK_KINDS))
    print_table(console, table)
    if manifest["n_duplicates"]:
        console.print(f"{manifest['n_duplicates']} records repeat an earlier instruction: "
                      "ingest counts them as duplicates")
    print_unbroken(console, f"wrote {out_dir}")
