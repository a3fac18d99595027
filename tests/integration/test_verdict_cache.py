"""The rank-profile verdict kept in a real DuckDB file: read back exactly, keyed by the model's files."""

from __future__ import annotations

import math
from pathlib import Path

from capsel.db import open_db
from capsel.models.source import ModelSource
from capsel.profile.verdict import Verdict
from capsel.profile.verdict_cache import KeptVerdict, profile_key, remembered_verdict


def _source(weights_sha: str) -> ModelSource:
    return ModelSource("m", Path("/models/m"), None, {"model.safetensors": weights_sha, "config.json": "c"}, True)


def test_a_kept_verdict_reads_back_field_for_field(tmp_path):
    # a trough at the first block has no left peak: NaN, which JSON cannot hold
    verdict = Verdict(False, 1, 0.25, 0.125, math.nan, 0.5, 0.2, "lowest hidden-state rank is at the first block")
    con = open_db(tmp_path / "capsel.duckdb")
    key = profile_key(_source("a" * 64), "raw")
    surveyed = remembered_verdict(con, key, "m", "raw", lambda: verdict)
    assert surveyed == KeptVerdict(verdict, None)  # surveyed by this call
    con.close()

    con = open_db(tmp_path / "capsel.duckdb", read_only=True)
    kept = remembered_verdict(con, key, "m", "raw", _never)
    assert con.execute("select count(*), any_value(present) from rank_profiles").fetchone() == (1, False)
    con.close()
    assert kept.surveyed_at is not None and math.isnan(kept.verdict.left_peak)
    same = [(name, getattr(kept.verdict, name), getattr(verdict, name)) for name in Verdict.__dataclass_fields__
            if name != "left_peak"]
    assert all(read == wrote for _, read, wrote in same), same


def test_a_verdict_kept_during_a_survey_stays(tmp_path):
    """Two runs surveying one model at once: the first verdict kept is the one every later run reads."""
    first = Verdict(True, 2, 0.5, 0.1, 0.9, 0.9, 0.2, "kept by the other run")
    mine = Verdict(False, 1, 0.25, 0.125, 0.3, 0.5, 0.2, "finished second")
    con = open_db(tmp_path / "capsel.duckdb")
    key = profile_key(_source("a" * 64), "raw")

    def slow_survey() -> Verdict:
        remembered_verdict(con, key, "m", "raw", lambda: first)  # the other run keeps its verdict meanwhile
        return mine

    assert remembered_verdict(con, key, "m", "raw", slow_survey).verdict == mine  # this run goes by its own survey
    assert remembered_verdict(con, key, "m", "raw", _never).verdict == first
    assert con.execute("select count(*) from rank_profiles").fetchone() == (1,)
    con.close()


def _never() -> Verdict:
    raise AssertionError("a kept verdict was surveyed again")


def test_the_key_follows_the_files_and_the_prompt_format():
    base = profile_key(_source("a" * 64), "raw")
    assert profile_key(_source("a" * 64), "raw") == base
    assert profile_key(_source("b" * 64), "raw") != base  # new weights: surveyed again
    assert profile_key(_source("a" * 64), "chat") != base


def test_a_run_surveys_a_model_once_per_database_and_warns_only_without_the_u_shape(tmp_path):
    from capsel.errors import CapselError
    from capsel.profile.run_note import u_shape_notes

    absent = Verdict(False, 1, 0.25, 0.125, 0.3, 0.5, 0.2, "lowest hidden-state rank is at the first block")
    present = Verdict(True, 2, 0.5, 0.1, 0.9, 0.9, 0.2, "a trough in the middle")
    surveys: list[str] = []

    def survey(verdict):
        def run():
            surveys.append("ran")
            return verdict
        return run

    con = open_db(tmp_path / "capsel.duckdb")
    assert u_shape_notes(con, _source("a" * 64), "m", "raw", survey(present)) == []  # fresh, present: nothing to say
    kept = u_shape_notes(con, _source("a" * 64), "m", "raw", survey(absent))  # read, not surveyed again
    assert len(surveys) == 1 and [note.warn for note in kept] == [False]
    assert "U-shape present" in kept[0].text

    fresh = u_shape_notes(con, _source("b" * 64), "m", "raw", survey(absent))
    assert len(surveys) == 2 and [note.warn for note in fresh] == [True]
    assert absent.reason in fresh[0].text
    again = u_shape_notes(con, _source("b" * 64), "m", "raw", survey(present))
    assert len(surveys) == 2 and [note.warn for note in again] == [False, True] and "U-shape absent" in again[0].text

    def cannot_judge():
        raise CapselError("too few blocks to judge")

    failed = u_shape_notes(con, _source("c" * 64), "m", "raw", cannot_judge)
    assert [note.text for note in failed] == ["rank profile not checked: too few blocks to judge"]
    assert u_shape_notes(con, _source("c" * 64), "m", "raw", survey(present)) == []  # nothing was kept for it
    con.close()
