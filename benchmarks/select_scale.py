"""Time `select` stages on a synthetic scored pool: python benchmarks/select_scale.py --candidates 1000000.

Writes a throwaway DuckDB file and output folder under a temporary directory and prints seconds per
stage (fit + select, gate, publish with files and report) and the members per second of the whole.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from capsel.db import open_db
from capsel.publish.publish import publish_selection
from capsel.quality.expectations import GateSpec
from capsel.quality.gate import check_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key


def fill(con, n: int, n_domains: int, seed: int) -> None:
    """n candidates over n_domains, all scored by one (model, config), 1% excluded."""
    rng = np.random.default_rng(seed)
    index = np.arange(n)
    ids = np.char.add("c", np.char.zfill(index.astype(str), 9))
    domains = np.char.add("domain", (index % n_domains).astype(str))
    con.append("sources", pd.DataFrame([{
        "source_id": "bench", "path": "/bench.jsonl", "sha256": "0" * 64, "n_bytes": 0, "n_rows_read": n,
        "n_inserted": n, "n_duplicates": 0, "n_quarantined": 0, "ingest_run_id": "bench",
    }]), by_name=True)
    con.append("candidates", pd.DataFrame({
        "candidate_id": ids, "domain": domains, "instruction": np.char.add("question ", ids),
        "input": "", "response": np.char.add("answer ", ids), "dedup_key": ids, "source_id": "bench",
        "source_row": index + 1, "ingest_run_id": "bench",
    }), by_name=True)
    d_early = rng.uniform(0.05, 0.6, n)
    excluded = rng.random(n) < 0.01
    con.append("divergences", pd.DataFrame({
        "candidate_id": ids, "model_fingerprint": "bench-model", "config_hash": "bench-config",
        "d_early": np.where(excluded, np.nan, d_early),
        "d_late": np.where(excluded, np.nan, 0.1 + 0.7 * d_early + rng.normal(0, 0.05, n)),
        "excluded_reason": np.where(excluded, "short_response", None), "run_id": "bench",
    }), by_name=True)


def main() -> None:
    """Build the pool, then time each stage of one selection."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidates", type=int, default=200_000)
    parser.add_argument("--domains", type=int, default=4)
    parser.add_argument("--budget", default="10%")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        con = open_db(Path(scratch) / "bench.duckdb")
        started = time.perf_counter()
        fill(con, args.candidates, args.domains, seed=0)
        print(f"fill {args.candidates} candidates: {time.perf_counter() - started:.1f} s")
        key = resolve_scoring_key(con)
        started = time.perf_counter()
        selection = build_selection(con, SelectionParams(budget=args.budget), key)
        selected = time.perf_counter() - started
        started = time.perf_counter()
        spec = GateSpec({q.domain: q.k for q in selection.quotas}, scored=True)
        gate = check_selection(con, selection.members, spec, key, selection.domain_stats, Path(scratch) / "gate",
                               "select-scale")
        gated = time.perf_counter() - started
        started = time.perf_counter()
        published = publish_selection(con, selection, Path(scratch) / "out")
        total = time.perf_counter() - started
        n = len(selection.members)
        print(f"fit + select {n} members: {selected:.2f} s")
        print(f"gate alone ({gate.n_expectations} expectations, success={gate.success}): {gated:.2f} s")
        print(f"publish (gate + files + report + DB): {total:.2f} s -> {published.path.name}")
        print(f"end to end: {selected + total:.2f} s, {n / (selected + total):.0f} members/s")
        con.close()


if __name__ == "__main__":
    main()
