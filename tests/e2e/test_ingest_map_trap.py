"""The wrong-`--map` trap, as a new user falls into it: every row quarantined, a hint, then a fix without
deleting anything (`--reingest`), and `capsel quarantine` to see why rows were set aside."""

from __future__ import annotations

import json

import duckdb
import pytest

from tests.support.capsel_cli import run_capsel

pytestmark = pytest.mark.e2e


def problems(n):
    return [{"problem": f"What is {i} + {i}?", "solution": f"{2 * i}", "source": "gsm"} for i in range(n)]


def write_jsonl(path, rows, extra_lines=()):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + "".join(line + "\n" for line in extra_lines))


def counts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = ("candidates", "duplicates", "quarantine", "quarantine_retried", "sampled_out")
        found = {table: con.execute(f"select count(*) from {table}").fetchone()[0] for table in tables}
        found["sources"] = con.execute(
            "select n_rows_read, n_inserted, n_duplicates, n_quarantined, n_sampled_out from sources"
        ).fetchall()
        return found
    finally:
        con.close()


def test_a_wrong_map_quarantines_everything_exits_3_and_names_the_fields(tmp_path):
    write_jsonl(tmp_path / "gsm.jsonl", problems(12))
    first = run_capsel(tmp_path, "ingest", "gsm.jsonl", "--domain", "math", "--db", "pool.duckdb")
    assert first.returncode == 3, first.stderr
    assert "every row of" in first.stderr and "gsm.jsonl" in first.stderr and "Traceback" not in first.stderr
    hint = " ".join(first.stderr.split())  # the error line names the hint
    assert "12 missing_instruction of 12 rows" in hint
    assert "the file's fields are: problem, solution, source" in hint
    assert "--map instruction=problem,response=solution" in hint and "--reingest" in hint
    # the rows are kept (nothing lost), so the fix needs no deleted database
    assert counts(tmp_path / "pool.duckdb")["quarantine"] == 12

    as_json = run_capsel(tmp_path, "ingest", "gsm.jsonl", "--domain", "math", "--db", "other.duckdb", "--json")
    assert as_json.returncode == 3
    report = json.loads(as_json.stdout)  # one object, even for a failure
    assert report["ok"] is False and report["exit_code"] == 3 and report["files"][0]["all_quarantined"] is True
    assert report["hints"][0]["suggested_map"] == "instruction=problem,response=solution"
    assert report["hints"][0]["fields"] == ["problem", "solution", "source"]


def test_reingest_retries_only_quarantined_rows_and_counts_add_up(tmp_path):
    # 3 rows that already work, 6 that need --map (one repeats a working row's question, two repeat each
    # other), 1 broken line: the retry must turn 5 of the 6 into candidates plus 2 duplicates... of real rows
    good = [{"instruction": "What is 0 + 0?", "response": "0"}, {"instruction": "Name a prime.", "response": "2"},
            {"instruction": "Spell cat.", "response": "c-a-t"}]
    mapped = problems(5) + [{"problem": "what is 3 +   3?", "solution": "six"}]
    rows = [good[0], mapped[0], mapped[1], good[1], mapped[2], mapped[3], good[2], mapped[4], mapped[5]]
    write_jsonl(tmp_path / "mixed.jsonl", rows, extra_lines=["{broken"])
    db = tmp_path / "pool.duckdb"

    first = run_capsel(tmp_path, "ingest", "mixed.jsonl", "--domain", "math", "--db", "pool.duckdb")
    assert first.returncode == 0, first.stderr  # not every row was quarantined
    assert counts(db)["candidates"] == 3 and counts(db)["quarantine"] == 7
    assert "hint:" in first.stdout  # 6 of 10 rows lack an instruction: more than half

    plain = run_capsel(tmp_path, "ingest", "mixed.jsonl", "--domain", "math", "--map",
                       "instruction=problem,response=solution", "--db", "pool.duckdb")
    assert plain.returncode == 0 and "skipped" in plain.stdout and "--reingest" in plain.stdout
    assert counts(db)["quarantine"] == 7  # a skip changes nothing

    fixed = run_capsel(tmp_path, "ingest", "mixed.jsonl", "--domain", "math", "--map",
                       "instruction=problem,response=solution", "--reingest", "--db", "pool.duckdb", "--json")
    assert fixed.returncode == 0, fixed.stderr
    report = json.loads(fixed.stdout)
    assert report["files"][0]["n_retried"] == 7
    # "What is 0 + 0?" is good[0]'s question: a duplicate of it; "what is 3 + 3?" normalises like problem 3
    assert report["totals"] == {"domain": "total", "n_read": 7, "n_inserted": 4, "n_duplicates": 2,
                                "n_quarantined": 1, "n_sampled_out": 0}
    after = counts(db)
    assert after["candidates"] == 7 and after["duplicates"] == 2 and after["quarantine"] == 1
    assert after["quarantine_retried"] == 7  # history: what was quarantined, and by which run it was retried
    assert after["sources"] == [(10, 7, 2, 1, 0)]  # 10 rows read once: 7 + 2 + 1 + 0
    con = duckdb.connect(str(db), read_only=True)
    orphans = con.execute(
        "select count(*) from duplicates where candidate_id not in (select candidate_id from candidates)"
    ).fetchone()[0]
    retried_by = con.execute("select distinct retried_by_run_id from quarantine_retried").fetchall()
    con.close()
    assert orphans == 0 and retried_by == [(report["run_id"],)]

    again = run_capsel(tmp_path, "ingest", "mixed.jsonl", "--domain", "math", "--map",
                       "instruction=problem,response=solution", "--reingest", "--db", "pool.duckdb")
    assert again.returncode == 0, again.stderr
    assert "retried 1 quarantined rows" in " ".join(again.stdout.split())
    final = counts(db)
    assert {k: final[k] for k in ("candidates", "duplicates", "quarantine")} == {
        "candidates": 7, "duplicates": 2, "quarantine": 1}
    assert final["quarantine_retried"] == 8 and final["sources"] == [(10, 7, 2, 1, 0)]


def test_quarantine_lists_rows_by_reason_and_source(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"instruction": "q", "response": ""}, {"instruction": "", "response": "r"},
                                       {"instruction": "ok?", "response": "ok"}], extra_lines=["[1, 2]", "nope"])
    write_jsonl(tmp_path / "b.jsonl", [{"instruction": "x"}])
    assert run_capsel(tmp_path, "ingest", "a.jsonl", "b.jsonl", "--domain", "d").returncode == 3  # b: all quarantined

    every = run_capsel(tmp_path, "quarantine", "--json")
    assert every.returncode == 0, every.stderr
    listing = json.loads(every.stdout)
    found = [(row["path"].rsplit("/", 1)[-1], row["source_row"], row["reason"]) for row in listing["rows"]]
    assert found == [("a.jsonl", 1, "empty_response"), ("a.jsonl", 2, "empty_instruction"),
                     ("a.jsonl", 4, "not_an_object"), ("a.jsonl", 5, "not_json"), ("b.jsonl", 1, "missing_response")]
    assert listing["n_matching"] == 5 and listing["rows"][3]["raw_text"] == "nope"

    one = json.loads(run_capsel(tmp_path, "quarantine", "--reason", "not_json", "--json").stdout)
    assert [row["source_row"] for row in one["rows"]] == [5]
    of_b = json.loads(run_capsel(tmp_path, "quarantine", "--source", "b.jsonl", "--json").stdout)
    assert [row["reason"] for row in of_b["rows"]] == ["missing_response"]
    cut = run_capsel(tmp_path, "quarantine", "--limit", "2")
    assert cut.returncode == 0 and "2 of 5 quarantined rows" in cut.stdout and "3 more" in cut.stdout
    assert "empty_response: the response is empty" in cut.stdout

    status = run_capsel(tmp_path, "status")
    assert "quarantined by reason:" in status.stdout and "capsel quarantine --reason" in status.stdout
    bogus = run_capsel(tmp_path, "quarantine", "--reason", "bogus")
    assert bogus.returncode == 2 and "not_json" in bogus.stderr
