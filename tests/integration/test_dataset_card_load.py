"""A published selection loads with Hugging Face `datasets` as one train split, whatever else lies in its folder."""

import pandas as pd
import pytest
from PIL import Image

from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.publish.publish import publish_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.integration.pool_files import write_jsonl
from tests.support.card_tables import card_metadata, card_tables
from tests.support.scored_pool import make_pool

HOSTILE = ["<script>alert(1)</script>", "a|b", "two\nlines"]


@pytest.fixture
def published(tmp_path):
    """A random selection of two ingested files (under tmp_path), published under tmp_path/out."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    paths = [write_jsonl(incoming / f"{domain}.jsonl", [
        {"instruction": f"{domain} question {i}?", "input": "" if i % 2 else f"context {i}",
         "output": f"{domain} answer {i}.", "domain": domain} for i in range(30)
    ]) for domain in ("math", "code")]
    con = open_db(tmp_path / "capsel.duckdb")
    ingest(con, [str(path) for path in paths], IngestOptions())
    request = SelectionParams(budget="10", method="random", seed=7, license="cc-by-4.0")
    selection = build_selection(con, request, resolve_scoring_key(con, required=False))
    yield publish_selection(con, selection, tmp_path / "out")
    con.close()


@pytest.fixture
def offline_datasets(tmp_path, monkeypatch):
    """`datasets` with its caches under tmp_path and the Hub out of reach."""
    for name, value in {"HF_HOME": tmp_path / "hf", "HF_DATASETS_CACHE": tmp_path / "hf" / "datasets",
                        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}.items():
        monkeypatch.setenv(name, str(value))
    import datasets

    # read from the environment at import: set here too in case an earlier test imported it
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf" / "datasets")
    return datasets


def with_images(folder):
    # what made `datasets` infer an ImageFolder (and a validation split) before the card named its files
    images = folder / "gate" / "static" / "images"
    images.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4), "red").save(folder / "gate" / "plot.png")
    Image.new("P", (4, 4)).save(images / "validation_failed_unexpected_values.gif")


def test_load_dataset_reads_data_parquet_as_the_one_train_split(published, offline_datasets, tmp_path):
    folder = published.path
    with_images(folder)
    loaded = offline_datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf" / "datasets"))
    assert list(loaded) == ["train"]
    expected = pd.read_parquet(folder / "data.parquet")
    assert len(expected) == published.manifest["n_members"] == 20
    pd.testing.assert_frame_equal(loaded["train"].to_pandas(), expected)


def test_the_card_declares_the_licence_and_names_no_local_path(published, tmp_path):
    card = (published.path / "README.md").read_text()
    meta = card_metadata(card)
    assert published.manifest["license"] == meta["license"] == "cc-by-4.0"
    assert published.manifest["request"]["license"] == "cc-by-4.0"
    assert sorted(meta["source_datasets"]) == sorted(
        f"{source['path'].rsplit('/', 1)[-1]} (sha256 {source['sha256']})" for source in published.manifest["sources"]
    )
    assert {s["path"].rsplit("/", 1)[-1] for s in published.manifest["sources"]} == {"math.jsonl", "code.jsonl"}
    # the manifest keeps the full paths for audit; the card, which is published, does not
    assert str(tmp_path) in published.manifest["sources"][0]["path"] and str(tmp_path) not in card
    assert meta["size_categories"] == ["n<1K"] and meta["tags"] == ["capsel", "sft", "data-selection", "random"]
    assert "| selected | 20 | 20 |  |" in card


def test_hostile_domain_names_stay_text_in_their_own_rows(tmp_path, offline_datasets):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {name: 30 for name in HOSTILE})
    selection = build_selection(con, SelectionParams(budget="10%"), resolve_scoring_key(con))
    published = publish_selection(con, selection, tmp_path / "out")
    con.close()
    card = (published.path / "README.md").read_text()
    assert "<script>" not in card
    domains = card_tables(card)[0]
    assert [len(row) for row in domains] == [10] * (1 + len(HOSTILE))
    # markdown-it hands each name back, HTML-escaped, as one cell (the newline as a line break)
    assert sorted(row[0] for row in domains[1:]) == sorted(
        ["&lt;script&gt;alert(1)&lt;/script&gt;", "a|b", "two<br>lines"])
    loaded = offline_datasets.load_dataset(str(published.path), cache_dir=str(tmp_path / "hf" / "datasets"))
    assert sorted(set(loaded["train"]["domain"])) == sorted(HOSTILE)
