"""Baselines as a user types them, on the bundled sample pool: score each method, select, compare."""

from __future__ import annotations

import os
import subprocess
import sys

import duckdb
import orjson
import pandas as pd
import pytest

from capsel.data import sample_pool
from tests.fixtures.tiny_aux_models import save_byte_lm_dir, save_encoder_dir, save_rater_dir

pytestmark = pytest.mark.e2e
BUDGET = 5


def capsel(tmp_path, *args):
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(tmp_path / "out" / "demo" / "capsel.duckdb"),
               CAPSEL_OUTPUT_ROOT=str(tmp_path / "out"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def ok(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def top(frame: pd.DataFrame, column: str) -> set:
    """Reference top-k per domain: highest first, ties by candidate id."""
    ordered = frame.assign(negated=-frame[column]).sort_values(["domain", "negated", "candidate_id"])
    return set(ordered.groupby("domain").head(BUDGET)["candidate_id"])


def ingest_sample_pool(tmp_path):
    """Every file of the bundled sample pool, with the options its manifest names."""
    folder, manifest = sample_pool()
    for entry in manifest["files"]:
        options = [*(("--domain", entry["domain"]) if "domain" in entry else ()),
                   *(("--map", entry["map"]) if "map" in entry else ())]
        ok(capsel(tmp_path, "ingest", str(folder / entry["file"]), *options))


def test_score_every_baseline_select_and_compare_on_the_sample_pool(tmp_path):
    lm = save_byte_lm_dir(tmp_path / "lm")
    encoder = save_encoder_dir(tmp_path / "encoder")
    rater = save_rater_dir(tmp_path / "rater")
    ingest_sample_pool(tmp_path)
    # short limits keep CAP fast on CPU; ppl uses the same ones, so it reuses CAP's PPL
    ok(capsel(tmp_path, "score", "--model", str(lm), "--horizon", "8", "--prompt-tokens", "64"))
    ppl = ok(capsel(tmp_path, "score-baseline", "--method", "ppl", "--model", str(lm), "--horizon", "8",
                    "--prompt-tokens", "64"))
    assert "taken from CAP's stored PPL" in ppl.stdout
    ok(capsel(tmp_path, "score-baseline", "--method", "ifd", "--model", str(lm), "--max-length", "128"))
    ok(capsel(tmp_path, "score-baseline", "--method", "kcenter", "--encoder", str(encoder)))
    missing = capsel(tmp_path, "score-baseline", "--method", "qurating")
    assert missing.returncode == 2 and "--rater is required" in missing.stderr and "Traceback" not in missing.stderr
    ok(capsel(tmp_path, "score-baseline", "--method", "qurating", "--rater", str(rater)))

    selected = ok(capsel(tmp_path, "select", "--method", "qurating", "--budget", str(BUDGET), "--out", "sels"))
    assert "published" in selected.stdout
    compare = ok(capsel(tmp_path, "compare", "--budget", str(BUDGET), "--out", "cmp"))
    assert "Jaccard overlap" in compare.stdout and "Spearman" in compare.stdout

    report = tmp_path / "cmp"  # a typed --out: relative to the working directory
    for name in ("index.html", "compare.json", "jaccard.png", "spearman.png", "response_chars.png", "ppl.png"):
        assert (report / name).is_file(), name
    summary = orjson.loads((report / "compare.json").read_bytes())
    assert summary["methods"] == ["cap", "ppl", "ifd", "qurating", "kcenter", "random"]

    con = duckdb.connect(str(tmp_path / "out" / "demo" / "capsel.duckdb"), read_only=True)
    candidates = con.execute("select candidate_id, domain, response from candidates").df()
    cap = con.execute("select candidate_id, domain, z as score from cap_scores").df()
    baseline = con.execute(
        "select m.method, m.candidate_id, c.domain, m.score from method_scores m "
        "join candidates c using (candidate_id) where m.excluded_reason is null").df()
    divergence_ppl = con.execute("select candidate_id, ppl from divergences where excluded_reason is null").df()
    published = con.execute("select candidate_id from selection_members").df()
    con.close()
    # ppl came from CAP's own forward pass
    ppl_scores = baseline[baseline["method"] == "ppl"].set_index("candidate_id")["score"]
    pd.testing.assert_series_equal(ppl_scores.sort_index(), divergence_ppl.set_index("candidate_id")["ppl"]
                                   .sort_index(), check_names=False)
    members = {"cap": top(cap, "score")}
    for method in ("ppl", "ifd", "qurating"):
        members[method] = top(baseline[baseline["method"] == method], "score")
    assert members["qurating"] == set(published["candidate_id"])
    for a, set_a in members.items():
        for b, set_b in members.items():
            assert summary["jaccard"][a][b] == pytest.approx(len(set_a & set_b) / len(set_a | set_b))
    # Spearman within each domain (pandas' own implementation), averaged over domains
    joined = cap.merge(baseline[baseline["method"] == "ifd"], on=["candidate_id", "domain"], suffixes=("_cap", ""))
    per_domain = joined.groupby("domain").apply(lambda f: f["score_cap"].corr(f["score"], method="spearman"))
    assert summary["spearman"]["all domains (mean)"]["cap"]["ifd"] == pytest.approx(per_domain.mean())
    # median response length of the ppl selection, per domain
    medians = {(row["domain"], row["method"]): row for row in summary["medians"]}
    chosen = candidates[candidates["candidate_id"].isin(members["ppl"])]
    for domain, frame in chosen.groupby("domain"):
        assert medians[(domain, "ppl")]["response_chars"] == frame["response"].str.strip().str.len().median()
        assert medians[(domain, "ppl")]["n_members"] == BUDGET
