"""A whole selection over a large pool on one machine: time and peak memory of each stage.

    python benchmarks/pool_scale.py --rows 10000000 --workdir /tmp/pool_scale --memory-limit 3GB

Writes a JSONL pool (4 domains; every fifth row the case variant of the one before it, so dedup drops it; 1% with
an empty response and 1 line in 10,000 not JSON, so quarantine takes them), then runs capsel's stages on it in
this process, each timed with the process's RSS sampled every 20 ms:

- ingest (`capsel.stages.ingest`: dedup per domain, quarantine);
- score: the real writer loop (`run_scorer`: pending pages, batches, atomic commits) with a cheap deterministic
  scorer standing in for the model (D_early and D_late from a hash of the candidate id; one row in 100 excluded);
- residualize (the per-domain OLS in SQL);
- select 10% per domain, gate, publish (members, excluded.parquet, the report, the dataset card).

Prints one JSON line per stage and a summary line. DuckDB gets `--memory-limit` (it spills past it).

`--add-rows N` then runs the nightly increment in a process of its own, as a nightly flow run is: N new rows
ingested and scored, the fit, the selection and its published files redone over the whole pool; the summary gives
its share of the full run's time and whether its peak stayed within the full run's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import zlib
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import duckdb
import psutil

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.results import DivergenceResult, ScoredCandidate
from capsel.config import load_settings
from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions
from capsel.methods.cap.keys import CapKeys
from capsel.runner.job import run_scorer
from capsel.scorers.base import Scorer, ScorerIdentity
from capsel.selection.params import SelectionParams
from capsel.stages.context import RunContext, run_scope
from capsel.stages.ingest import IngestRequest, ingest
from capsel.stages.residualize import ResidualizeRequest, residualize
from capsel.stages.select import SelectRequest, select_and_publish, selection_key

# one JSON object per line; DuckDB writes it from a range, so a 10M-row pool takes seconds, not minutes
POOL_SQL = """
copy (
    select
        'domain' || (base % 4) as domain,
        case when i % 5 = 4 then upper(text) else text end as instruction,
        '' as input,
        case when i % 100 = 7 then '' else 'answer ' || i || ' to ' || text end as response
    from (
        select i, i - (i % 5 = 4)::bigint as base,
               'question ' || (i - (i % 5 = 4)::bigint) || ' about the energy of a molecule in orbit' as text
        from range($first, $first + $rows) t(i)
    )
) to '{path}' (format json)
"""
BAD_LINE = b'{"instruction": "a line cut short'
DB_NAME = "capsel.duckdb"


class StandInScorer(CapKeys, Scorer):
    """CAP's rows (under a real CAP scoring config's keys, so selection finds its layer split) from a hash of each
    candidate id instead of a model: D_late follows D_early with noise, so the per-domain fit is a real regression;
    one candidate in 100 is excluded as too short."""

    table = "divergences"
    run_kind = "score"
    config = ScoringConfig(prompt_format="raw")

    def __init__(self, batch_size: int) -> None:
        super().__init__(ScorerIdentity("pool-scale-stand-in", "pool-scale stand-in", None, {}, "float32",
                                        "StandIn", 12), batch_size)

    def item(self, row: dict) -> Any:
        """Only the id: the stand-in reads nothing else."""
        return row["candidate_id"]

    def batches(self, items: Sequence[Any]) -> list[list[Any]]:
        """Batches in page order (no text to sort by)."""
        return [list(items[start:start + self.batch_size]) for start in range(0, len(items), self.batch_size)]

    def score(self, items: Sequence[str]) -> list[ScoredCandidate]:
        """Deterministic D_early, D_late and PPL per id."""
        return [ScoredCandidate(None, _divergence(candidate_id)) for candidate_id in items]


def _divergence(candidate_id: str) -> DivergenceResult:
    bits = zlib.crc32(candidate_id.encode())
    if bits % 100 == 0:
        return DivergenceResult.excluded(candidate_id, "short_response")
    d_early = 0.05 + (bits % 1000) / 2000.0
    d_late = 0.1 + 0.7 * d_early + ((bits >> 10) % 1000) / 20000.0
    return DivergenceResult(candidate_id, 48, None, d_early, d_late, 1.0 + (bits >> 20) % 50, None)


def measured(stage: str, work: Callable[[], Any]) -> tuple[Any, dict]:
    """Run `work()`; its wall seconds and the process's peak RSS meanwhile."""
    process, peak, done = psutil.Process(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    seconds = time.perf_counter() - started
    line = {"stage": stage, "seconds": round(seconds, 1),
            "peak_rss_gib": round(max(peak[0], process.memory_info().rss) / 2**30, 2)}
    print(json.dumps(line), flush=True)
    return result, line


def write_pool(path: Path, rows: int, first: int = 0) -> None:
    """The pool file of rows `first` .. `first + rows - 1` (later rows are new candidates), its bad lines appended."""
    con = duckdb.connect()
    con.execute(POOL_SQL.replace("{path}", str(path).replace("'", "''")), {"rows": rows, "first": first})
    con.close()
    with path.open("ab") as pool:
        pool.write(b"\n".join([BAD_LINE] * max(1, rows // 10_000)) + b"\n")


def main() -> None:
    """Write the pool, then run and measure each stage; with --add-rows the increment in a process of its own."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the pool file")
    parser.add_argument("--workdir", type=Path, required=True, help="folder for the pool, the DB and the output")
    parser.add_argument("--memory-limit", default="3GB", help="DuckDB's memory_limit")
    parser.add_argument("--page-size", type=int, default=100_000, help="pending candidates per page of scoring")
    parser.add_argument("--batch-size", type=int, default=10_000, help="candidates per stand-in batch")
    parser.add_argument("--add-rows", type=int, default=0,
                        help="then new rows in a second file, run through the same stages (the nightly increment)")
    parser.add_argument("--increment-only", action="store_true",
                        help="(what --add-rows starts) add --add-rows rows after the first --rows to the workdir's "
                             "scored store, and print the increment's stages")
    args = parser.parse_args()
    if args.increment_only:
        print(json.dumps(run_increment(args)))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    pool, db = args.workdir / "pool.jsonl", args.workdir / DB_NAME
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    started = time.perf_counter()
    write_pool(pool, args.rows)
    print(f"pool: {args.rows} rows, {pool.stat().st_size / 2**30:.2f} GiB in {time.perf_counter() - started:.0f} s",
          file=sys.stderr, flush=True)

    with workdir_store(args.workdir, args.memory_limit) as ctx:
        full = run_stages(pool, args, ctx)
    summary = {"rows": args.rows, "memory_limit": args.memory_limit, **full}
    if args.add_rows:
        print("increment:", file=sys.stderr, flush=True)
        increment = incremented(args)
        summary["increment"] = {"rows": args.add_rows, **increment,
                                "share_of_full_time": round(increment["total_seconds"] / full["total_seconds"], 4),
                                "peak_within_full": increment["peak_rss_gib"] <= full["peak_rss_gib"]}
    print(json.dumps(summary))


def incremented(args: argparse.Namespace) -> dict:
    """The increment's stages, run by this script in a fresh process: a nightly flow run is one, and a process
    that ran the full pool first still holds what that left in Python, which its peak would count
    (2026-11-28: 5.24 GiB in the full run's process against the full run's 4.69)."""
    command = [sys.executable, __file__, "--increment-only", "--rows", str(args.rows), "--add-rows",
               str(args.add_rows), "--workdir", str(args.workdir), "--memory-limit", args.memory_limit,
               "--page-size", str(args.page_size), "--batch-size", str(args.batch_size)]
    lines = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout.splitlines()
    for line in lines[:-1]:
        print(line, flush=True)
    return json.loads(lines[-1])


def run_increment(args: argparse.Namespace) -> dict:
    """New rows after the first `args.rows` beside the workdir's scored pool: only they are ingested and scored,
    while the fit, the selection and its published files cover the whole pool again."""
    added = args.workdir / "added.jsonl"
    write_pool(added, args.add_rows, first=args.rows)
    with workdir_store(args.workdir, args.memory_limit) as ctx:
        return run_stages(added, args, ctx)


@contextmanager
def workdir_store(workdir: Path, memory_limit: str) -> Iterator[RunContext]:
    """The workdir's store opened afresh, as a flow run opens it, beside its output folder; closed after."""
    con = open_db(workdir / DB_NAME, memory_limit=memory_limit)
    try:
        yield RunContext(con, load_settings(output_root=workdir / "out"))
    finally:
        con.close()


def tenth_per_domain(workdir: Path) -> SelectRequest:
    """The selection every run makes: 10% per domain, published into the workdir's output folder."""
    return SelectRequest(SelectionParams(budget="10%"), workdir / "out" / "selections")


def last_step(summary: Any, run: ExitStack) -> Any:
    """`summary`, once the run it ended has let go of what its steps held."""
    run.close()
    return summary


def run_stages(pool: Path, args: argparse.Namespace, ctx: RunContext) -> dict:
    """Ingest `pool`, score what is pending, refit and select, each stage timed; the totals and every stage."""
    con = ctx.con
    lines = []
    report, line = measured("ingest", lambda: ingest(IngestRequest([str(pool)], IngestOptions()), ctx))
    totals = report.totals()
    lines.append({**line, "inserted": totals.n_inserted, "duplicates": totals.n_duplicates,
                  "quarantined": totals.n_quarantined})
    scored, line = measured("score", lambda: run_scorer(con, StandInScorer(args.batch_size),
                                                         page_size=args.page_size))
    lines.append({**line, "scored": scored.n_processed})
    request = tenth_per_domain(args.workdir)
    key = selection_key(ctx, request)
    assert key is not None
    with ExitStack() as run:
        # as in a flow's run (capsel.stages.pipeline.run_steps): the select step reads the z its residualize step
        # pinned, and the pin is let go as the run ends with that step, so within its time
        in_run = run.enter_context(run_scope(ctx))
        residuals, line = measured("residualize", lambda: residualize(ResidualizeRequest(key), in_run))
        lines.append(line)
        fits = tuple(residuals.fits)
        selected, line = measured("select, gate, publish", lambda: last_step(
            select_and_publish(replace(request, key=key, fits=fits), in_run), run))
    lines.append({**line, "members": len(selected.selection.members)})
    return {"total_seconds": round(sum(line["seconds"] for line in lines), 1),
            "peak_rss_gib": max(line["peak_rss_gib"] for line in lines), "stages": lines}

if __name__ == "__main__":
    main()
