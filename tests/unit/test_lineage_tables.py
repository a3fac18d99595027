"""Which DuckDB tables a flow run touched, from its counters alone."""

from __future__ import annotations

import importlib
import inspect

import pytest

from capsel.lineage.tables import table_use
from capsel.methods.registry import method, scored_methods
from capsel.scorers.base import Scorer


def _ingest(files_ingested=1, files_skipped=0, rows_retried=0, **counts) -> dict:
    domain = {"n_read": 0, "n_inserted": 0, "n_duplicates": 0, "n_quarantined": 0, "n_sampled_out": 0, **counts}
    return {"files_ingested": files_ingested, "files_skipped": files_skipped, "rows_retried": rows_retried,
            "domains": {"math": domain} if counts else {}}


FULL_RUN = {
    "ingest": _ingest(n_read=12, n_inserted=9, n_duplicates=2, n_quarantined=1),
    "score": {"n_in_scope": 9, "n_processed": 9, "n_generated": 9},
    "selection": {"selection_id": "sel-x", "path": "/x", "n_members": 4},
}


def test_a_run_that_did_nothing_touches_no_table():
    nothing = {"ingest": _ingest(files_ingested=0, files_skipped=2), "score": {"n_in_scope": 21, "n_processed": 0}}
    use = table_use(nothing, "cap", selected=False)
    assert use.read == [] and use.written == {}


def test_a_full_cap_run_reads_the_pool_and_writes_each_table_with_its_row_count():
    use = table_use(FULL_RUN, "cap", selected=True)
    assert use.read == ["candidates", "generations", "sources", "quarantine", "duplicates", "sampled_out",
                        "divergences", "models", "scoring_configs"]
    assert use.written == {"sources": 1, "candidates": 9, "duplicates": 2, "quarantine": 1, "generations": 9,
                           "divergences": 9, "selections": 1, "selection_members": 4}


def test_a_select_only_run_reads_the_scores_and_writes_the_selection_tables():
    use = table_use({"score": {"n_processed": 0}, "selection": {"n_members": 3}}, "ppl", selected=True)
    assert use.read == ["candidates", "sources", "quarantine", "duplicates", "sampled_out", "method_scores",
                        "models", "scoring_configs"]
    assert use.written == {"selections": 1, "selection_members": 3}


def test_a_refused_selection_read_the_pool_but_wrote_nothing():
    use = table_use({}, "kcenter", selected=True)
    assert "embeddings" in use.read and use.written == {}


def test_retried_quarantine_rows_and_sampled_out_rows_count_as_writes():
    use = table_use({"ingest": _ingest(files_ingested=0, rows_retried=3, n_read=3, n_inserted=1,
                                       n_sampled_out=2)}, None, selected=False)
    assert use.read == ["candidates"]
    assert use.written == {"candidates": 1, "sampled_out": 2, "quarantine_retried": 3}


@pytest.mark.parametrize("name", [declared.name for declared in scored_methods()])
def test_results_tables_are_the_scorer_classes_tables(name):
    declared = method(name)
    module = importlib.import_module(declared.scorer.partition(":")[0])
    scorers = [cls for _, cls in inspect.getmembers(module, inspect.isclass)
               if issubclass(cls, Scorer) and cls.__module__ == module.__name__ and not inspect.isabstract(cls)]
    assert scorers, name
    assert {cls.table for cls in scorers} == {declared.results_table}
