"""Every evaluation keeps each row's outcome, an interval on each metric, and compares targets row for row.

The models are tiny real ones: a base, and two "fine-tunes" of one selection (seeds 0 and 1: the base with its
weights moved) and one of another selection, recorded in the finetunes table as `capsel finetune` records them.
Every figure is checked against a plain transformers recomputation and a plain bootstrap loop.
"""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import orjson
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from capsel.cap_engine.config import ScoringConfig
from capsel.config import load_settings
from capsel.db import open_db, run_sql
from capsel.db.records import fetch_records
from capsel.evaluation.comparison_cells import COLUMNS, comparison_cells
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.evaluation.paired import comparisons_of
from capsel.orchestration.paired_markdown import paired_markdown
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest, evaluate
from tests.fixtures.pool import tiny_model_dir
from tests.reference.naive_bootstrap import naive_paired_interval, naive_ratio_interval
from tests.reference.naive_loss import load_plain, naive_row_nll

DOMAINS = ("math", "code")
ROWS = [{"domain": DOMAINS[i % 2], "instruction": " ".join(f"w{i * 7 + j}" for j in range(2 + i % 5)),
         "response": " ".join(f"w{300 - i * 5 - j}" for j in range(1 + i % 6))} for i in range(24)]
PROMPT_TOKENS = 6
OPTIONS = EvalOptions(scoring=ScoringConfig(prompt_tokens=PROMPT_TOKENS, min_prompt_tokens=1, horizon=6,
                                            min_response_tokens=1), batch_size=4, dtype="float32", device="cpu")
RESAMPLES, SEED = 2000, 0  # what capsel stores with every interval by default


def _moved_copy(base, folder, scale: float, seed: int):
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for weight in model.parameters():
            weight.add_(torch.randn(weight.shape, generator=generator) * scale)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return folder


def _record_finetune(con, finetune_id, selection_id, seed, base, model_dir):
    run_sql(con, "evaluation/finetune_insert", {
        "finetune_id": finetune_id, "selection_id": selection_id, "members_sha256": "m", "base_model": str(base),
        "base_fingerprint": "b", "profile": "cpu-small", "config_hash": f"c{seed}",
        "config": json.dumps({"learning_rate": 2e-4, "seed": seed, "output_dir": str(model_dir)}),
        "seed": seed, "trainer": "llamafactory 0.9.5", "is_adapter": False, "model_dir": str(model_dir),
        "train_loss": None, "train_seconds": None, "n_rows": 10, "run_id": "r"})


def _record_selection(con, selection_id, method, budget, request):
    run_sql(con, "publish/selection_insert", {
        "selection_id": selection_id, "method": method, "budget": budget, "budget_mode": "per_domain",
        "domains": list(DOMAINS), "seed": 0, "model_fingerprint": "b", "config_hash": "h", "run_id": "r",
        "out_dir": f"/nowhere/{selection_id}", "n_members": 10, "manifest": json.dumps({"request": request}),
        "created_at": datetime(2026, 1, 1)})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The base and three fine-tunes evaluated on one loss file with two domains."""
    folder = tmp_path_factory.mktemp("evidence")
    base = tiny_model_dir(folder / "base")
    tuned = {
        "ft-a0": ("sel-a", 0, _moved_copy(base, folder / "a0", 0.02, seed=1)),
        "ft-a1": ("sel-a", 1, _moved_copy(base, folder / "a1", 0.02, seed=2)),
        "ft-b0": ("sel-b", 0, _moved_copy(base, folder / "b0", 0.05, seed=3)),
    }
    heldout = folder / "heldout.jsonl"
    heldout.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in ROWS))
    con = open_db(folder / "capsel.duckdb")
    for finetune_id, (selection_id, seed, model_dir) in tuned.items():
        _record_finetune(con, finetune_id, selection_id, seed, base, model_dir)
    _record_selection(con, "sel-a", "cap", "10%", {"ppl_guard_z": 3.5})  # sel-b stays unrecorded, as one from
    # another store would
    ctx = RunContext(con, load_settings(db_path=folder / "capsel.duckdb"))
    spec = parse_eval_spec(f"loss:{heldout}", folder / "inputs")
    request = EvaluateRequest((f"base:{base}", *tuned), (spec,), folder / "out", OPTIONS)
    summary = evaluate(request, ctx)
    tokenizer = AutoTokenizer.from_pretrained(base)
    naive = {target: [naive_row_nll(load_plain(path), tokenizer, row, PROMPT_TOKENS, chat=False) for row in ROWS]
             for target, path in [(f"base:{base}", base)] + [(ft, entry[2]) for ft, entry in tuned.items()]}
    yield con, ctx, request, summary, naive, base
    con.close()


def test_each_rows_nll_and_tokens_are_stored_as_a_plain_recomputation_gives_them(store):
    con, _, _, _, naive, base = store
    stored = pd_rows(con)
    for target, per_row in naive.items():
        rows = stored[target]
        assert [row["row_index"] for row in rows] == list(range(len(ROWS)))
        assert [row["domain"] for row in rows] == [row["domain"] for row in ROWS]
        assert [row["weight"] for row in rows] == [tokens for _, tokens in per_row]
        assert [row["outcome"] for row in rows] == pytest.approx([nll for nll, _ in per_row], rel=1e-5)


def pd_rows(con) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for row in fetch_records(con, "evaluation/evaluation_rows_all"):
        found.setdefault(row["target"], []).append(row)
    return found


def test_every_metric_carries_a_bootstrap_interval_over_its_rows(store):
    _, _, _, summary, naive, _ = store
    assert {result.domain for result in summary.results} == {"*", *DOMAINS}
    for result in summary.results:
        per_row = [(nll, tokens) for (nll, tokens), row in zip(naive[result.target], ROWS)
                   if result.domain in ("*", row["domain"])]
        nll, tokens = np.array([p[0] for p in per_row]), np.array([p[1] for p in per_row], dtype=float)
        assert result.value == pytest.approx(nll.sum() / tokens.sum(), rel=1e-5)
        assert (result.n, result.tokens, result.ci_resamples) == (len(per_row), tokens.sum(), RESAMPLES)
        assert result.ci95 == pytest.approx(naive_ratio_interval(nll, tokens, RESAMPLES, SEED), rel=1e-5)
        assert result.ci95[0] < result.value < result.ci95[1]
        assert result.as_dict()["ci95"] == list(result.ci95)


def test_a_selection_against_the_base_model_equals_an_independent_paired_bootstrap(store):
    con, _, _, _, naive, base = store
    comparisons = comparisons_of(con, f"base:{base}")
    assert {(c.target, c.domain) for c in comparisons} == {(s, d) for s in ("sel-a", "sel-b") for d in ("*", *DOMAINS)}
    for comparison in comparisons:
        members = ["ft-a0", "ft-a1"] if comparison.target == "sel-a" else ["ft-b0"]
        assert (comparison.seeds, comparison.against_seeds, comparison.against) == (len(members), 1, f"base:{base}")
        keep = [i for i, row in enumerate(ROWS) if comparison.domain in ("*", row["domain"])]
        tokens = np.array([naive[f"base:{base}"][i][1] for i in keep], dtype=float)
        ours = np.array([np.mean([naive[member][i][0] for member in members]) for i in keep])  # seeds averaged
        theirs = np.array([naive[f"base:{base}"][i][0] for i in keep])
        assert comparison.n == len(keep)
        assert comparison.value == pytest.approx(ours.sum() / tokens.sum(), rel=1e-5)
        assert comparison.against_value == pytest.approx(theirs.sum() / tokens.sum(), rel=1e-5)
        assert comparison.delta == pytest.approx(comparison.value - comparison.against_value, abs=1e-12)
        expected = naive_paired_interval(ours, tokens, theirs, tokens, RESAMPLES, SEED)
        assert comparison.ci95 == pytest.approx(expected, rel=1e-4, abs=1e-7)
        low, high = expected
        assert comparison.verdict == ("indistinguishable" if low <= 0 <= high else
                                      "better" if high < 0 else "worse")


def test_a_comparison_says_what_selected_its_target_wherever_it_is_shown(store):
    con, _, _, _, _, base = store
    comparisons = comparisons_of(con, f"base:{base}")
    # sel-b's selection is not in this store: its method is not guessed
    assert {(c.target, c.method, c.budget, c.label) for c in comparisons} == {
        ("sel-a", "cap", "10%", "cap 10% (PPL guard z 3.5)"), ("sel-b", None, None, "")}
    against_a = comparisons_of(con, "sel-a")
    assert {c.target: c.label for c in against_a} == {f"base:{base}": "base model", "sel-b": ""}
    # the reference is named the same way: what selected it, then its id; a base model by its id alone
    assert {c.reference() for c in against_a} == {"cap 10% (PPL guard z 3.5) (sel-a)"}
    assert {(c.against_label, c.reference()) for c in comparisons} == {("base model", f"base:{base}")}
    assert "# Against cap 10% (PPL guard z 3.5) (sel-a):" in paired_markdown(against_a)
    row = next(c for c in comparisons if c.target == "sel-a" and c.domain == "*")
    assert {key: row.as_dict()[key] for key in ("method", "budget", "label", "against_label")} == {
        "method": "cap", "budget": "10%", "label": "cap 10% (PPL guard z 3.5)", "against_label": "base model"}
    cells = dict(zip(COLUMNS, comparison_cells(row)))
    assert (cells["target"], cells["method"], cells["seeds"]) == ("sel-a", "cap 10% (PPL guard z 3.5)", "2")
    assert cells["95% CI"] == f"[{row.ci95[0]:+.4f}, {row.ci95[1]:+.4f}]" and cells["delta"] == f"{row.delta:+.4f}"
    # the flow's markdown carries the same cells under the same headers
    markdown = paired_markdown(comparisons)
    assert "| " + " | ".join(COLUMNS) + " |" in markdown and "| sel-a | cap 10% (PPL guard z 3.5) | 2 |" in markdown


def test_against_a_selection_names_it_and_its_seeds(store):
    con, _, _, _, _, base = store
    against_a = comparisons_of(con, "sel-a")
    assert {c.target for c in against_a} == {f"base:{base}", "sel-b"}
    assert {c.against_seeds for c in against_a} == {2}
    # the same unit through one of its fine-tune ids; the sign flips against the other direction
    assert [c.as_dict() for c in comparisons_of(con, "ft-a1")] == [c.as_dict() for c in against_a]
    flipped = {(c.target, c.domain): c.delta for c in comparisons_of(con, f"base:{base}")}
    for comparison in against_a:
        if comparison.target == f"base:{base}":
            assert comparison.delta == pytest.approx(-flipped["sel-a", comparison.domain], abs=1e-12)


def test_only_a_complete_set_is_reused(store):
    con, ctx, request, _, _, base = store
    again = evaluate(request, ctx)
    assert all(result.reused for result in again.results)
    key = {"target": f"base:{base}"}
    fingerprint = con.execute("select model_fingerprint from evaluations where target = $target limit 1",
                              key).fetchone()[0]
    # what a kill between two metric rows of a store written before sets were marked would leave: a metric gone
    con.execute("delete from evaluations where model_fingerprint = $f and domain = 'code'", {"f": fingerprint})
    third = evaluate(request, ctx)
    recomputed = [result for result in third.results if not result.reused]
    assert {result.target for result in recomputed} == {f"base:{base}"} and len(recomputed) == 3
    count = con.execute("select count(*) from evaluations where model_fingerprint = $f", {"f": fingerprint})
    assert count.fetchone()[0] == 3
