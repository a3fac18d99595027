"""Held-out loss as `capsel evaluate` stores it equals a plain transformers computation; a repeat reuses it."""

from __future__ import annotations

import orjson
import pytest
from transformers import AutoTokenizer

from capsel.cap_engine.config import ScoringConfig
from capsel.config import load_settings
from capsel.db.records import fetch_records
from capsel.errors import CapselError, OptionError
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest, evaluate
from tests.fixtures.pool import tiny_model_dir
from tests.reference.naive_loss import load_plain, naive_heldout_loss

ROWS = [
    {"domain": "math", "instruction": "w1 w2 w3 w4 w5 w6 w7", "response": "w8 w9 w10 w11"},
    {"domain": "math", "instruction": "w20 w21", "response": "w22 w23 w24 w25 w26 w27 w28 w29 w30"},
    {"domain": "code", "instruction": "w40 w41 w42 w43 w44 w45 w46 w47 w48 w49 w50", "response": "w51 w52"},
    {"domain": "code", "instruction": "w60", "response": "w61 w62 w63 w64 w65 w66"},
    {"domain": "math", "instruction": "w70 w71 w72", "response": "w73"},
]


def _write(path, rows):
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


@pytest.mark.parametrize("chat", [False, True], ids=["raw", "chat"])
def test_stored_loss_equals_a_plain_recomputation_and_a_repeat_is_reused(tmp_path, chat):
    model_dir = tiny_model_dir(tmp_path / "model", chat=chat)
    spec = parse_eval_spec(f"loss:{_write(tmp_path / 'heldout.jsonl', ROWS)}", tmp_path / "inputs")
    # P = 4 cuts the longer prompts, as the engine cuts them
    options = EvalOptions(scoring=ScoringConfig(prompt_tokens=4, min_prompt_tokens=1, horizon=6,
                                                min_response_tokens=1), batch_size=2, dtype="float32", device="cpu")
    from capsel.db import open_db

    con = open_db(tmp_path / "capsel.duckdb")
    ctx = RunContext(con, load_settings(db_path=tmp_path / "capsel.duckdb"))
    request = EvaluateRequest((f"base:{model_dir}",), (spec,), tmp_path / "out", options)
    first = evaluate(request, ctx)

    expected = naive_heldout_loss(load_plain(model_dir), AutoTokenizer.from_pretrained(model_dir), ROWS, 4, chat)
    got = {result.domain: result for result in first.results}
    assert set(got) == {"*", "math", "code"}
    for domain, (loss, n, tokens) in expected.items():
        assert got[domain].value == pytest.approx(loss, abs=1e-4)
        assert (got[domain].n, got[domain].tokens) == (n, tokens)
    stored = {row["domain"]: row for row in fetch_records(con, "evaluation/evaluations_list")}
    assert stored["*"]["value"] == got["*"].value and stored["*"]["tokens"] == expected["*"][2]

    second = evaluate(request, ctx)
    assert all(result.reused for result in second.results)
    assert [r.value for r in second.results] == [r.value for r in first.results]
    assert len(fetch_records(con, "evaluation/evaluations_list")) == 3
    con.close()


def test_a_bad_eval_spec_or_row_is_one_clear_error(tmp_path):
    with pytest.raises(OptionError, match="KIND:FILE"):
        parse_eval_spec("perplexity:x.jsonl", tmp_path / "inputs")
    with pytest.raises(CapselError, match="no such file"):
        parse_eval_spec(f"loss:{tmp_path / 'missing.jsonl'}", tmp_path / "inputs")
    from capsel.ingest.example_file import read_examples

    bad = _write(tmp_path / "bad.jsonl", [{"instruction": "w1"}])
    with pytest.raises(CapselError, match="row 1: missing_response"):
        read_examples(bad, "eval")
    no_domain = read_examples(_write(tmp_path / "plain.jsonl", [{"instruction": "w1", "output": "w2"}]), "eval")
    assert no_domain[0].domain == "all"
