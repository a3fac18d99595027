"""A selection method from another package: the example plugin (examples/longest_method), pip-installed into a
folder of its own, runs through score-baseline, select, flow select, compare and lineage with no change to capsel.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pandas as pd
import pytest

from tests.support.capsel_cli import DB, capsel_env, query, run_capsel
from tests.support.flow_pool import write_pool_file

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "longest_method"
BUDGET = 3


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> str:
    """PYTHONPATH with the example plugin installed by pip (its entry point included) in a folder of its own."""
    work = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(EXAMPLE, work / "source")
    site = work / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--target", str(site), str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (next(site.glob("capsel_longest-*.dist-info")) / "entry_points.txt").read_text().count("capsel.methods")
    return os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def longest_first(candidates: pd.DataFrame) -> set[str]:
    """Reference: per domain, the BUDGET longest stripped responses, ties by candidate id."""
    ranked = candidates.assign(length=-candidates["response"].str.strip().str.len())
    return set(ranked.sort_values(["domain", "length", "candidate_id"]).groupby("domain").head(BUDGET)["candidate_id"])


def candidates_of(folder: Path) -> pd.DataFrame:
    """The pool in the database of `folder`."""
    return pd.DataFrame(query(folder, "select candidate_id, domain, response from candidates"),
                        columns=["candidate_id", "domain", "response"])


def test_capsel_alone_does_not_know_the_method(tmp_path):
    done = run_capsel(tmp_path, "select", "--method", "longest", "--budget", "3")
    assert done.returncode == 2 and "longest" in done.stderr and "Traceback" not in done.stderr


def test_an_installed_plugin_method_scores_selects_compares_and_traces(tmp_path, plugin_path):
    env = capsel_env(tmp_path, PYTHONPATH=plugin_path)
    write_pool_file(tmp_path / "pool.jsonl", 12, seed=1)
    ok(run_capsel(tmp_path, "ingest", "pool.jsonl", env=env))
    assert "longest reference response first" in ok(run_capsel(tmp_path, "select", "--help", env=env)).stdout

    scored = ok(run_capsel(tmp_path, "score-baseline", "--method", "longest", env=env))
    assert "longest: longest reference response first (Zhao et al., 2024)" in scored.stdout
    assert "longest: no model, fingerprint longest-vchars-1" in scored.stdout and "None" not in scored.stdout
    candidates = candidates_of(tmp_path)
    scores = dict(query(tmp_path, "select candidate_id, score from method_scores where method = 'longest'"))
    assert scores == {row.candidate_id: len(row.response.strip()) for row in candidates.itertuples()}

    published = orjson.loads(ok(run_capsel(tmp_path, "select", "--method", "longest", "--budget", str(BUDGET),
                                           "--out", "sels", "--json", env=env)).stdout)
    selection_id = published["selection_id"]
    members = {row[0] for row in query(tmp_path, "select candidate_id from selection_members")}
    assert members == longest_first(candidates)
    manifest = orjson.loads((tmp_path / "sels" / selection_id / "manifest.json").read_bytes())
    assert manifest["method"] == "longest"
    assert manifest["selection_rule"] == "longest: highest score first per domain; ties by candidate_id"

    ok(run_capsel(tmp_path, "compare", "--budget", str(BUDGET), "--out", "cmp", env=env))
    summary = orjson.loads((tmp_path / "cmp" / "compare.json").read_bytes())
    assert summary["methods"] == ["longest", "random"]
    assert summary["jaccard"]["longest"]["longest"] == 1.0

    lineage = orjson.loads(ok(run_capsel(tmp_path, "lineage", selection_id, "--json", env=env)).stdout)
    assert lineage["selection"]["method"] == "longest"
    assert orjson.loads(lineage["selection"]["scoring_config"])["kind"] == "longest"
    assert {run["kind"] for run in lineage["runs"]} == {"ingest", "score-baseline"}
    assert lineage["selection"]["select_run_status"] == "completed"


def test_flow_select_runs_the_plugin_method(tmp_path, plugin_path, prefect_server):
    write_pool_file(tmp_path / "pool.jsonl", 10, seed=2)
    db = tmp_path / DB
    env = prefect_server.env(PYTHONPATH=plugin_path, COLUMNS="200")
    done = ok(subprocess.run(
        [sys.executable, "-m", "capsel", "flow", "select", "--input", str(tmp_path / "pool.jsonl"), "--method",
         "longest", "--budget", str(BUDGET), "--db", str(db)], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=300))
    assert "Completed" in done.stdout + done.stderr
    assert query(tmp_path, "select distinct method from selections") == [("longest",)]
    members = {row[0] for row in query(tmp_path, "select candidate_id from selection_members")}
    assert members == longest_first(candidates_of(tmp_path))


def test_the_example_plugin_imports_only_the_public_plugin_module():
    tree = ast.parse((EXAMPLE / "capsel_longest.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {name for name in imported if name and name.startswith("capsel")} == {"capsel.plugin"}
