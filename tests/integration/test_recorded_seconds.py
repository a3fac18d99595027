"""The seconds a database's runs recorded, against the sum of their durations computed here."""

from __future__ import annotations

from datetime import datetime, timedelta

from capsel.db import open_db
from capsel.runs import recorded_seconds


def test_finished_top_level_runs_are_summed_without_children_gaps_or_interrupted_runs(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    assert recorded_seconds(con) == 0.0
    start = datetime(2026, 11, 28, 3, 0, 0)
    runs = [  # (run_id, parent, started after start, seconds, finished)
        ("score", None, 0, 120.25, True),
        ("shard", "score", 10, 50.0, True),  # inside its parent's time: not counted twice
        ("finetune", None, 200, 1586.5, True),
        ("evaluate", None, 86_400, 60.0, True),  # the next day: the night between is not work
        ("killed", None, 90_000, 30.0, False),  # no finish: what the kill interrupted is not known
    ]
    for run_id, parent, after, seconds, finished in runs:
        started = start + timedelta(seconds=after)
        con.execute("insert into runs (run_id, kind, parent_run_id, code_version, status, started_at, finished_at) "
                    "values (?, 'lab', ?, 'test', ?, ?, ?)",
                    [run_id, parent, "completed" if finished else "interrupted", started,
                     started + timedelta(seconds=seconds) if finished else None])
    expected = sum(seconds for _, parent, _, seconds, finished in runs if parent is None and finished)
    assert abs(recorded_seconds(con) - expected) < 1e-6
    con.close()
