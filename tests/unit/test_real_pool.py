"""The real pool's draw, junk and source checks, against computations written here from their definitions."""

from __future__ import annotations

import hashlib
import heapq
import json
import re
import shutil
from collections import Counter

import pytest

from capsel.errors import CapselError
from capsel_lab.real_pool import RealPoolSpec, real_pool_records, write_real_pool
from capsel_lab.real_sources import (
    PROVENANCE_FILE,
    REAL_SOURCES,
    bundled_real_sources,
    draw_rows,
    source_sha256s,
)

SPECS = [RealPoolSpec(), RealPoolSpec(seed=1, n_math=400, n_code=60, junk_share=0.1),
         RealPoolSpec(seed=2, n_math=236, n_code=164, junk_share=0.05, junk_kinds=("shuffled",))]


@pytest.fixture(scope="module")
def pools():
    """The records of each spec in SPECS, from the bundled sources."""
    return [real_pool_records(bundled_real_sources(), spec) for spec in SPECS]


@pytest.fixture(scope="module")
def source_rows():
    """Every source row as JSON, by file name (read here with the json module)."""
    folder = bundled_real_sources()
    return {source.file: [json.loads(line) for line in (folder / source.file).read_text(encoding="utf-8").splitlines()]
            for source in REAL_SOURCES}


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _smallest(seed, name, n_rows, n):
    keys = [(hashlib.sha256(f"{seed}:{name}:{row}".encode()).hexdigest(), row) for row in range(n_rows)]
    return sorted(row for _, row in heapq.nsmallest(n, keys))


@pytest.mark.parametrize("seed, name, n_rows, n", [(0, "gsm8k", 7473, 300), (5, "humaneval", 164, 40),
                                                   (0, "humaneval", 164, 164), (3, "x", 10, 25)])
def test_draw_takes_the_rows_with_the_smallest_sha256(seed, name, n_rows, n):
    assert draw_rows(seed, name, n_rows, n) == _smallest(seed, name, n_rows, n)


def test_draw_is_subset_stable_and_depends_on_seed_and_source():
    assert set(draw_rows(0, "gsm8k", 7473, 100)) < set(draw_rows(0, "gsm8k", 7473, 300))
    assert draw_rows(0, "gsm8k", 7473, 300) != draw_rows(1, "gsm8k", 7473, 300)
    assert draw_rows(0, "gsm8k", 164, 50) != draw_rows(0, "humaneval", 164, 50)
    assert draw_rows(0, "x", 10, 10) == draw_rows(0, "x", 10, 99) == list(range(10))


def test_clean_records_are_the_drawn_source_rows_unchanged(pools, source_rows):
    for spec, records in zip(SPECS, pools):
        clean = [r for r in records if r["lab_label"] == "clean"]
        for source in REAL_SOURCES:
            rows = _smallest(spec.seed, source.name, len(source_rows[source.file]), spec.n_for(source))
            ours = [r for r in clean if r["domain"] == source.domain]
            assert sorted(int(r["lab_source"].split(":")[1]) for r in ours) == rows
            for record in ours:
                file, row = record["lab_source"].split(":")
                original = source_rows[file][int(row)]
                assert record["instruction"] == original[source.instruction_field]
                assert record["output"] == original[source.output_field]
                assert record["input"] == record["lab_detail"] == "" and file == source.file
                assert record["lab_id"] == f"{source.domain}-{source.name}-{int(row):06d}"


def test_junk_counts_and_kinds_per_domain(pools):
    for spec, records in zip(SPECS, pools):
        for domain in ("math", "code"):
            n_clean = sum(r["domain"] == domain and r["lab_label"] == "clean" for r in records)
            junk = [r for r in records if r["domain"] == domain and r["lab_label"] == "junk"]
            assert len(junk) == round(spec.junk_share * n_clean)
            expected = Counter(spec.junk_kinds[i % len(spec.junk_kinds)] for i in range(len(junk)))
            assert Counter(r["lab_detail"].split(":")[0] for r in junk) == expected
            assert sorted(r["lab_id"] for r in junk) == [f"{domain}-junk-{i:04d}" for i in range(len(junk))]
            assert all(r["lab_source"] == "" and r["input"] == "" for r in junk)


def test_junk_carries_no_word_of_the_clean_pool(pools):
    for records in pools:
        clean = [r for r in records if r["lab_label"] == "clean"]
        lexicon = {w for r in clean for w in re.findall(r"[a-z]+", (r["instruction"] + " " + r["output"]).lower())}
        by_id = {r["lab_id"]: r for r in clean}
        for junk in (r for r in records if r["lab_label"] == "junk"):
            for key in ("instruction", "output"):
                found = [w for w in re.findall(r"[a-z]+", junk[key].lower()) if len(w) >= 3 and w in lexicon]
                assert not found, (junk["lab_id"], found)
            if junk["lab_detail"].startswith("shuffled:"):
                # the same characters as the source's text (the shuffle trims the ends)
                source = by_id[junk["lab_detail"].split(":", 1)[1]]
                for key in ("instruction", "output"):
                    shuffled, original = Counter(junk[key]), Counter(source[key])
                    missing, extra = original - shuffled, shuffled - original
                    assert not extra and all(char.isspace() for char in missing)


def test_pool_is_seeded_and_its_file_order_mixes_junk_in(pools):
    assert real_pool_records(bundled_real_sources(), SPECS[0]) == pools[0]
    assert real_pool_records(bundled_real_sources(), RealPoolSpec(seed=7)) != pools[0]
    labels = [r["lab_label"] for r in pools[0]]
    assert labels[:len(labels) - labels.count("junk")].count("junk") > 0  # junk is not all at the end
    assert len({r["lab_id"] for r in pools[0]}) == len(pools[0])


def test_bundled_provenance_names_the_files_sha256s():
    readme = (bundled_real_sources() / PROVENANCE_FILE).read_text(encoding="utf-8")
    table = {m.group(1): (int(m.group(2).replace(",", "")), m.group(3)) for m in
             re.finditer(r"^\| `([\w.]+)` \| ([\d,]+) \|.*\| ([0-9a-f]{64}) \|$", readme, re.M)}
    for source in REAL_SOURCES:
        actual = _sha256(bundled_real_sources() / source.file)
        assert table[source.file] == (source.rows, source.sha256) and actual == source.sha256
        assert (bundled_real_sources() / source.licence).read_text().startswith(("MIT License", "The MIT License"))
    assert len(table) == len(REAL_SOURCES)


def test_a_source_copy_that_differs_is_refused_unless_not_verified(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(bundled_real_sources(), copy)
    assert source_sha256s(copy) == {source.file: source.sha256 for source in REAL_SOURCES}
    with open(copy / "humaneval.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"prompt": "def f():\\n", "canonical_solution": "    return 1\\n"}\n')
    with pytest.raises(CapselError, match="humaneval.jsonl: sha256 [0-9a-f]{64} is not the bundled file's") as error:
        write_real_pool(copy, tmp_path / "out")
    assert "\n" not in str(error.value) and not (tmp_path / "out").exists()
    manifest = write_real_pool(copy, tmp_path / "out", RealPoolSpec(n_code=200), verify=False)
    code = manifest["sources"][1]
    assert (code["rows"], code["sha256"], code["sha256_as_bundled"]) == (165, _sha256(copy / "humaneval.jsonl"), False)
    assert manifest["counts"]["code"]["clean"] == 165 and manifest["regenerate"].endswith("--source DIR --no-verify")
    (copy / "gsm8k_train.jsonl").unlink()
    with pytest.raises(CapselError, match="no gsm8k_train.jsonl"):
        real_pool_records(copy, verify=False)


@pytest.mark.parametrize("bad", [dict(n_math=-1), dict(junk_share=-0.1), dict(junk_kinds=()),
                                 dict(junk_kinds=("salad", "typos"))])
def test_spec_refuses_impossible_values(bad):
    with pytest.raises(CapselError):
        RealPoolSpec(**bad)
