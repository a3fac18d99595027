"""The bundled demo pool: up to date with its builder, and ingesting it gives what it was built to give."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq

from capsel.data import sample_pool
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.ingest.reasons import IMAGE_REASONS, Reason
from capsel.ingest.records import parse_field_map
from tests.fixtures.sample_pool import build
from tests.integration.pool_files import table


def test_bundled_files_match_the_builder(tmp_path):
    folder, manifest = sample_pool()
    build(tmp_path)
    for name in ["manifest.json"] + [entry["file"] for entry in manifest["files"]]:
        if name.endswith(".parquet"):
            assert pq.read_table(folder / name).equals(pq.read_table(tmp_path / name)), name
        else:
            assert (folder / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_ingesting_the_pool_gives_the_built_outcomes(db, tmp_path):
    folder, manifest = sample_pool()
    expected = build(tmp_path / "rebuilt")
    for entry in manifest["files"]:
        options = IngestOptions(domain=entry.get("domain"), max_field_chars=manifest["max_field_chars"],
                                fields=parse_field_map([entry["map"]] if "map" in entry else []))
        ingest(db, [folder / entry["file"]], options)
    got: dict[str, Counter] = {}
    for row in table(db, "quarantine").itertuples():
        got.setdefault(row.domain if isinstance(row.domain, str) else "(none)", Counter())[row.reason] += 1
    for name, outcome in (("candidates", "unique"), ("duplicates", "duplicate")):
        for domain in table(db, name)["domain"]:
            got.setdefault(domain, Counter())[outcome] += 1
    assert got == expected
    reasons = {reason for counts in expected.values() for reason in counts} - {"unique", "duplicate"}
    # the demo shows every quarantine reason of text rows (the sample pool has no images), but the two size limits:
    # an oversized CSV record would be 4 x max_field_chars bytes a column (50 kB here) and an oversized JSONL line
    # over 1 MiB; test_ingest.py and the hostile tests cover them
    too_big_for_a_demo = {Reason.OVERSIZED_RECORD, Reason.OVERSIZED_LINE}
    assert reasons == {str(reason) for reason in set(Reason) - IMAGE_REASONS - too_big_for_a_demo}
