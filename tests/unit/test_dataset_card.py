"""The dataset card: Hub metadata, size buckets, no local paths, user strings escaped, the funnel as a table."""

import pytest

from capsel.dataset_license import DEFAULT_LICENSE, check_license
from capsel.errors import OptionError
from capsel.publish.dataset_card import dataset_card, size_category
from capsel.publish.funnel import funnel
from tests.support.card_tables import card_metadata as metadata
from tests.support.card_tables import card_tables as tables

HOSTILE = ["<script>alert(1)</script>", "a|b", "two\nlines", "back\\|slash"]


def manifest(tmp_path, domains=("code", "math"), license_id="mit", n_members=13, notes=()):
    """A manifest as build_manifest writes it, with a model and sources under `tmp_path`."""
    counts = [{"stage": "duplicate", "reason": None, "n_rows": 3},
              {"stage": "quarantined", "reason": "empty_response", "n_rows": 2},
              {"stage": "below_cut", "reason": None, "n_rows": 100}]
    return {
        "selection_id": "sel-20261125T000000Z-0123abcd", "created_at": "2026-11-25T00:00:00+00:00",
        "method": "cap", "selection_rule": "highest z", "budget": "10%", "budget_mode": "per_domain", "seed": 0,
        "license": license_id, "pool": "eligible scored candidates of model f00", "run_id": "run-1",
        "code_version": "0.1.0", "n_members": n_members, "members_sha256": "ab" * 32,
        "model": {"fingerprint": "f00dfeed", "name_or_path": str(tmp_path / "models" / "tiny-llama"),
                  "dtype": "float32"},
        "scoring_config": {"config_hash": "c0ffee", "config": {}},
        "domains": [{"domain": d, "n_candidates": 10, "n_excluded": 1, "size": 9, "k": 1, "n_members": 1,
                     "alpha": 0.1, "beta": 0.5, "r2": 0.9, "z_cut": 1.5} for d in domains],
        "notes": list(notes),
        "funnel": funnel(counts, n_members),
        "sources": [{"source_id": "s1", "path": str(tmp_path / "in" / "pool.jsonl"), "sha256": "12" * 32,
                     "n_members": 7},
                    {"source_id": "s2", "path": "s3://bucket/raw/more.jsonl", "sha256": "34" * 32, "n_members": 6}],
    }


@pytest.mark.parametrize(("n_rows", "bucket"), [
    (0, "n<1K"), (999, "n<1K"), (1_000, "1K<n<10K"), (9_999, "1K<n<10K"), (10_000, "10K<n<100K"),
    (99_999, "10K<n<100K"), (100_000, "100K<n<1M"), (999_999, "100K<n<1M"), (1_000_000, "1M<n<10M"),
    (10**7, "10M<n<100M"), (10**8, "100M<n<1B"), (10**9 - 1, "100M<n<1B"), (10**9, "1B<n<10B"),
    (10**10, "10B<n<100B"), (10**11, "100B<n<1T"), (10**12 - 1, "100B<n<1T"), (10**12, "n>1T"), (10**15, "n>1T"),
])
def test_size_category_buckets_at_their_edges(n_rows, bucket):
    assert size_category(n_rows) == bucket


def test_metadata_names_the_split_licence_and_sources_without_local_paths(tmp_path):
    card = dataset_card(manifest(tmp_path, n_members=1_000))
    meta = metadata(card)
    assert meta["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "data.parquet"}]}]
    assert meta["license"] == "mit" and meta["language"] == ["en"] and meta["size_categories"] == ["1K<n<10K"]
    assert meta["tags"] == ["capsel", "sft", "data-selection", "cap"]
    assert meta["task_categories"] == ["text-generation"] and meta["pretty_name"] == "sel-20261125T000000Z-0123abcd"
    assert meta["source_datasets"] == [f"pool.jsonl (sha256 {'12' * 32})", f"more.jsonl (sha256 {'34' * 32})"]
    assert str(tmp_path) not in card and "s3://" not in card
    assert "tiny-llama, fingerprint `f00dfeed`" in card


def test_a_hub_model_id_is_kept_whole(tmp_path):
    values = manifest(tmp_path)
    values["model"]["name_or_path"] = "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert "HuggingFaceTB/SmolLM2-135M-Instruct, fingerprint `f00dfeed`" in dataset_card(values)


def test_hostile_domain_names_keep_every_row_in_its_columns_and_run_no_markup(tmp_path):
    notes = [f"domain {name!r}: nothing selected from it" for name in HOSTILE] + ["a\nnote <b>"]
    card = dataset_card(manifest(tmp_path, domains=HOSTILE, notes=notes))
    assert "<script>" not in card and "<b>" not in card
    domains = tables(card)[0]
    assert [len(row) for row in domains] == [10] * (1 + len(HOSTILE))
    # the parser gives back each name, HTML-escaped, as one cell
    assert [row[0] for row in domains[1:]] == [
        "&lt;script&gt;alert(1)&lt;/script&gt;", "a|b", "two<br>lines", "back\\|slash"]
    for line in card.splitlines():
        if line.startswith("| ") and "&lt;script" in line:
            assert line.count("|") == 11


def test_the_funnel_is_a_table_of_every_stage(tmp_path):
    values = manifest(tmp_path)
    funnel_table = next(t for t in tables(dataset_card(values)) if t[0][0] == "stage")
    assert funnel_table[0] == ["stage", "rows", "left", "reasons"]
    assert [row[0] for row in funnel_table[1:]] == [entry["stage"] for entry in values["funnel"]]
    stages = {row[0]: row[1:] for row in funnel_table[1:]}
    assert stages["read"] == ["118", "118", ""] and stages["duplicate"] == ["-3", "115", ""]
    assert stages["quarantined"] == ["-2", "113", "empty_response 2"]
    assert stages["below_cut"] == ["-100", "13", ""] and stages["selected"] == ["13", "13", ""]


def test_the_default_licence_claims_none_and_says_how_to_set_one(tmp_path):
    card = dataset_card(manifest(tmp_path, license_id=DEFAULT_LICENSE))
    assert metadata(card)["license"] == "other" and "capsel select --license" in card


@pytest.mark.parametrize("value", ["apache-2.0", "mit", "cc-by-nc-sa-4.0", "openrail++", "other"])
def test_hub_licence_ids_pass(value):
    assert check_license(value) == value


@pytest.mark.parametrize("value", ["", "MIT", "apache 2.0", "mit\n", "-mit", "<script>"])
def test_other_licence_strings_are_refused(value):
    with pytest.raises(OptionError, match="license must be a Hugging Face licence id"):
        check_license(value)
