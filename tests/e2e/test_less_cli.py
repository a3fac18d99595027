"""LESS as a user types it on the bundled sample pool: features, a target, select toward it, compare."""

from __future__ import annotations

import duckdb
import orjson
import pytest

from tests.e2e.test_baselines_cli import capsel, ingest_sample_pool, ok
from tests.fixtures.tiny_aux_models import save_byte_lm_dir

pytestmark = pytest.mark.e2e
BUDGET = 4
LIMIT = 40  # candidates featured: enough for every domain, few enough for a CPU test


def write_target(path, rows):
    path.write_bytes(b"\n".join(orjson.dumps(row) for row in rows))
    return path


def test_score_select_and_compare_less_toward_a_target(tmp_path):
    lm = save_byte_lm_dir(tmp_path / "lm")
    target = write_target(tmp_path / "target.jsonl", [
        {"instruction": f"Compute {a} + {b}.", "response": f"{a} + {b} = {a + b}."} for a, b in [(3, 4), (12, 30), (7, 8)]
    ])
    bad = write_target(tmp_path / "bad.jsonl", [{"instruction": "fine", "response": "ok"}, {"instruction": "no answer"}])
    ingest_sample_pool(tmp_path)

    refused = capsel(tmp_path, "score-baseline", "--method", "less", "--model", str(lm), "--target", str(bad))
    assert refused.returncode != 0 and "row 2" in refused.stderr and "Traceback" not in refused.stderr
    not_scored = capsel(tmp_path, "select", "--method", "less", "--target", str(target), "--budget", "3", "--out", "s")
    assert not_scored.returncode != 0 and "score-baseline --method less" in not_scored.stderr

    scored = ok(capsel(tmp_path, "score-baseline", "--method", "less", "--model", str(lm), "--max-length", "128",
                       "--limit", str(LIMIT), "--target", str(target)))
    assert "target" in scored.stdout and "computed" in scored.stdout
    again = ok(capsel(tmp_path, "score-baseline", "--method", "less", "--model", str(lm), "--max-length", "128",
                      "--limit", str(LIMIT), "--target", str(target)))
    # the next --limit candidates get features and are scored against the stored target
    assert "reused (stored)" in again.stdout and f"; {LIMIT} candidate scores written" in again.stdout

    ok(capsel(tmp_path, "select", "--method", "less", "--target", str(target), "--budget", str(BUDGET),
              "--out", "sels"))
    compare = ok(capsel(tmp_path, "compare", "--budget", str(BUDGET), "--out", "cmp"))
    assert "less" in compare.stdout
    assert orjson.loads((tmp_path / "cmp" / "compare.json").read_bytes())["methods"] == ["less", "random"]

    con = duckdb.connect(str(tmp_path / "out" / "demo" / "capsel.duckdb"), read_only=True)
    scores = con.execute(
        "select m.candidate_id, c.domain, m.score from method_scores m join candidates c using (candidate_id) "
        "where m.method = 'less' and m.excluded_reason is null").df()
    members = con.execute("select candidate_id from selection_members").df()
    n_features, n_scores = con.execute(
        "select (select count(*) from gradient_features), (select count(*) from method_scores)").fetchone()
    con.close()
    assert n_features == n_scores == 2 * LIMIT  # every featured candidate has a score or an exclusion row
    ordered = scores.assign(negated=-scores["score"]).sort_values(["domain", "negated", "candidate_id"])
    assert set(members["candidate_id"]) == set(ordered.groupby("domain").head(BUDGET)["candidate_id"])
