"""Does ingest slow down as the store grows, and is the primary key's index why?

    python benchmarks/ingest_growth.py --files 10 --rows 1000000 --workdir /tmp/ingest_growth

Ingests `--files` pool files of `--rows` rows each (pool_scale's rows: every fifth a case variant of the one before,
1% quarantined; each file's rows new) one after another into one store, so every file costs the same but for the
rows already stored. Prints one JSON line per file: its seconds and rows per second, the candidates stored before
it, and beside it the seconds DuckDB alone takes to insert the same number of new random 64-hex keys with
`on conflict do nothing` into a table keyed like `candidates` (`keyed`) and into one without a key (`unkeyed`),
each table as large as the store was. The last line fits seconds per file against the candidates stored before
it, for the ingest and both controls: a slope near 0 is a stage that costs what it adds.

With `--split-checkpoint` every database's automatic checkpoint is put off (`checkpoint_threshold`) and each file
ends with an explicit `checkpoint`, timed apart (`*_checkpoint_seconds`): the work on the rows, and the writing of
the database's tables and indexes to its file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
from pool_scale import write_pool

from capsel.config import load_settings
from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest, ingest

CONTROL_SQL = "insert into {table} select md5(i::varchar) || md5((i + $salt)::varchar) from range($first, $last) t(i)"


def timed(work) -> float:
    """Wall seconds of `work()`."""
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def control_insert(con: duckdb.DuckDBPyConnection, table: str, first: int, last: int) -> float:
    """Seconds to insert keys `first` .. `last - 1` into `table` (conflicts skipped where it has a key)."""
    conflict = " on conflict do nothing" if table == "keyed" else ""
    sql = CONTROL_SQL.replace("{table}", table) + conflict
    return timed(lambda: con.execute(sql, {"first": first, "last": last, "salt": 7}))


def checkpoint_seconds(con: duckdb.DuckDBPyConnection, split: bool) -> float | None:
    """Seconds of an explicit checkpoint (None when checkpoints are left to DuckDB)."""
    return timed(lambda: con.execute("checkpoint")) if split else None


def slope_per_million(stored: list[int], seconds: list[float]) -> float:
    """Least-squares slope of seconds on stored candidates, in seconds per million stored."""
    return float(np.polyfit(np.array(stored) / 1e6, np.array(seconds), 1)[0])


def main() -> None:
    """Write and ingest each file in turn; time the controls beside it."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10, help="pool files, ingested one after another")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per file")
    parser.add_argument("--workdir", type=Path, required=True, help="folder for the files and the stores")
    parser.add_argument("--memory-limit", default="3GB", help="DuckDB's memory_limit, for the store and controls")
    parser.add_argument("--split-checkpoint", action="store_true",
                        help="put off automatic checkpoints and time an explicit one after each file")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    for stale in ("capsel.duckdb", "capsel.duckdb.wal", "control.duckdb", "control.duckdb.wal"):
        (args.workdir / stale).unlink(missing_ok=True)
    store = open_db(args.workdir / "capsel.duckdb", memory_limit=args.memory_limit)
    ctx = RunContext(store, load_settings(output_root=args.workdir / "out"))
    control = duckdb.connect(str(args.workdir / "control.duckdb"), config={"memory_limit": args.memory_limit})
    control.execute("create table keyed (candidate_id varchar primary key)")
    control.execute("create table unkeyed (candidate_id varchar)")
    if args.split_checkpoint:
        for con in (store, control):
            con.execute("set checkpoint_threshold = '1TB'")
    lines = []
    for index in range(args.files):
        pool = args.workdir / f"pool-{index}.jsonl"
        write_pool(pool, args.rows, first=index * args.rows)
        stored = store.execute("select count(*) from candidates").fetchone()[0]
        seconds = timed(lambda: ingest(IngestRequest([str(pool)], IngestOptions()), ctx))
        store_checkpoint = checkpoint_seconds(store, args.split_checkpoint)
        added = store.execute("select count(*) from candidates").fetchone()[0] - stored
        pool.unlink()
        keyed = control_insert(control, "keyed", stored, stored + added)
        keyed_checkpoint = checkpoint_seconds(control, args.split_checkpoint)
        unkeyed = control_insert(control, "unkeyed", stored, stored + added)
        unkeyed_checkpoint = checkpoint_seconds(control, args.split_checkpoint)
        line = {"file": index, "stored_before": stored, "added": added, "seconds": round(seconds, 2),
                "rows_per_s": round(args.rows / seconds), "keyed_seconds": round(keyed, 2),
                "unkeyed_seconds": round(unkeyed, 2)}
        checkpoints = {"checkpoint_seconds": store_checkpoint, "keyed_checkpoint_seconds": keyed_checkpoint,
                       "unkeyed_checkpoint_seconds": unkeyed_checkpoint}
        line.update({name: round(value, 2) for name, value in checkpoints.items() if value is not None})
        lines.append(line)
        print(json.dumps(line), flush=True)
    store.close()
    control.close()
    stored = [line["stored_before"] for line in lines]
    fit = {name: round(slope_per_million(stored, [line[name] for line in lines]), 3)
           for name in lines[0] if name.endswith("seconds")}
    print(json.dumps({"files": args.files, "rows_per_file": args.rows, "memory_limit": args.memory_limit,
                      "split_checkpoint": args.split_checkpoint,
                      "slope_s_per_million_stored": fit,
                      "first_file_s": lines[0]["seconds"], "last_file_s": lines[-1]["seconds"]}))
    print(f"ingest: {lines[0]['seconds']} s for the first file, {lines[-1]['seconds']} s for the last "
          f"({fit['seconds']:+.3f} s per million stored); keyed control {fit['keyed_seconds']:+.3f}, "
          f"unkeyed {fit['unkeyed_seconds']:+.3f}", file=sys.stderr)


if __name__ == "__main__":
    main()
