"""The real pool: a seeded sample of GSM8K train (math) and HumanEval (code) with injected junk, labels beside it.

It ships built in `capsel/data/real_pool/`; `write_real_pool` rebuilds it byte for byte from the bundled
sources or any copy with the same sha256s (a test checks).
"""

from __future__ import annotations

import csv
import json
import random
import shutil
from collections import Counter
from dataclasses import asdict, dataclass
from importlib.resources import files
from pathlib import Path

from capsel.errors import CapselError, OptionError
from capsel_lab.labels import record_candidate_id
from capsel_lab.real_sources import (
    PROVENANCE_FILE,
    REAL_SOURCES,
    RealSource,
    bundled_real_sources,
    draw_rows,
    read_source,
    source_sha256s,
)
from capsel_lab.world.export import write_jsonl
from capsel_lab.world.junk import junk_records
from capsel_lab.world.lexicon import lexicon_of

POOL_FILE, LABELS_FILE, MANIFEST_FILE, COPIED_PROVENANCE = "pool.jsonl", "labels.csv", "manifest.json", "PROVENANCE.md"
JUNK_KINDS = ("salad", "shuffled")
RECORD_FIELDS = ("lab_id", "domain", "instruction", "input", "output", "lab_label", "lab_detail", "lab_source")
LABEL_COLUMNS = ("candidate_id", "domain", "lab_label", "lab_detail", "lab_id", "lab_source")


@dataclass(frozen=True)
class RealPoolSpec:
    """Rows drawn per source, the junk injected and the seed of both."""

    seed: int = 0
    n_math: int = 300            # GSM8K train rows (all 7,473 at most)
    n_code: int = 164            # HumanEval rows (all 164 at most)
    junk_share: float = 0.05     # junk records per clean record, in each domain
    junk_kinds: tuple[str, ...] = JUNK_KINDS

    def __post_init__(self) -> None:
        if self.n_math < 0 or self.n_code < 0 or self.junk_share < 0:
            raise CapselError("n_math, n_code and junk_share must not be negative")
        if not self.junk_kinds or set(self.junk_kinds) - set(JUNK_KINDS):
            raise OptionError(f"junk kinds must be some of {', '.join(JUNK_KINDS)}, got {list(self.junk_kinds)}")

    def n_for(self, source: RealSource) -> int:
        """Rows to draw from `source`."""
        return {"math": self.n_math, "code": self.n_code}[source.domain]

    def regenerate_command(self) -> str:
        """The CLI line that builds this pool from the bundled sources."""
        return (f"capsel lab real-pool --out DIR --seed {self.seed} --n-math {self.n_math} --n-code {self.n_code} "
                f"--junk-share {self.junk_share} --junk-kinds {','.join(self.junk_kinds)}")


def real_pool_dir() -> Path:
    """Folder of the bundled built pool (capsel/data/real_pool)."""
    return Path(str(files("capsel.data").joinpath("real_pool")))


def real_pool_records(source_dir: Path, spec: RealPoolSpec = RealPoolSpec(), verify: bool = True) -> list[dict]:
    """The pool's records in file order: drawn clean rows and junk, with `lab_label`, `lab_detail`, `lab_source`."""
    source_sha256s(source_dir, verify)
    return _build(source_dir, spec)[0]


def write_real_pool(source_dir: Path, out_dir: Path, spec: RealPoolSpec = RealPoolSpec(), verify: bool = True) -> dict:
    """Write pool.jsonl, labels.csv, manifest.json, the licences and PROVENANCE.md; returns the manifest."""
    if Path(out_dir).resolve() == Path(source_dir).resolve():
        raise CapselError(f"{out_dir}: write the pool to another folder than its sources")
    sha256s = source_sha256s(source_dir, verify)
    records, n_rows = _build(source_dir, spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(records, out_dir / POOL_FILE)
    with open(out_dir / LABELS_FILE, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(LABEL_COLUMNS)
        writer.writerows([record_candidate_id(r), *(r[c] for c in LABEL_COLUMNS[1:])] for r in records)
    # the licences and provenance of the files the bundled sha256s name, whichever copy was read
    copies = {source.licence: source.licence for source in REAL_SOURCES} | {PROVENANCE_FILE: COPIED_PROVENANCE}
    for name, target in copies.items():
        shutil.copyfile(bundled_real_sources() / name, out_dir / target)
    manifest = _manifest(spec, sha256s, n_rows, records)
    (out_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _build(source_dir: Path, spec: RealPoolSpec) -> tuple[list[dict], dict[str, int]]:
    clean: dict[str, list[dict]] = {}
    n_rows: dict[str, int] = {}
    for source in REAL_SOURCES:
        rows = read_source(source_dir, source)
        n_rows[source.file] = len(rows)
        clean[source.domain] = [_clean_record(source, row, rows[row])
                                for row in draw_rows(spec.seed, source.name, len(rows), spec.n_for(source))]
    # junk must carry no word of the clean pool, whichever domain it joins
    lexicon = lexicon_of(r[key] for records in clean.values() for r in records for key in ("instruction", "output"))
    rng = random.Random(spec.seed)
    records = []
    for domain, domain_clean in clean.items():
        records += domain_clean + junk_records(domain, domain_clean, round(spec.junk_share * len(domain_clean)),
                                               spec.junk_kinds, lexicon, rng, blank={"lab_source": ""})
    rng.shuffle(records)
    return [{field: record[field] for field in RECORD_FIELDS} for record in records], n_rows


def _clean_record(source: RealSource, row: int, fields: dict) -> dict:
    return {
        "lab_id": f"{source.domain}-{source.name}-{row:06d}", "domain": source.domain,
        "instruction": fields[source.instruction_field], "input": "", "output": fields[source.output_field],
        "lab_label": "clean", "lab_detail": "", "lab_source": f"{source.file}:{row}",
    }


def _manifest(spec: RealPoolSpec, sha256s: dict[str, str], n_rows: dict[str, int], records: list[dict]) -> dict:
    counts: dict[str, Counter] = {source.domain: Counter() for source in REAL_SOURCES}
    for record in records:
        counts[record["domain"]][record["lab_detail"].split(":")[0] if record["lab_label"] == "junk" else "clean"] += 1
    as_bundled = all(sha256s[source.file] == source.sha256 for source in REAL_SOURCES)
    n_ids = len({record_candidate_id(record) for record in records})
    return {
        "spec": asdict(spec),
        "sources": [{
            "file": source.file, "domain": source.domain, "rows": n_rows[source.file], "sha256": sha256s[source.file],
            "sha256_as_bundled": sha256s[source.file] == source.sha256, "licence": source.licence,
            "instruction": source.instruction_field, "output": source.output_field,
        } for source in REAL_SOURCES],
        "n_records": len(records),
        "counts": {domain: dict(sorted(kinds.items())) for domain, kinds in counts.items()},
        # records whose domain + normalised instruction repeat an earlier one: ingest counts them as duplicates
        "n_duplicates": len(records) - n_ids,
        "regenerate": spec.regenerate_command() + ("" if as_bundled else " --source DIR --no-verify"),
    }
