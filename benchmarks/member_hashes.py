"""Member hashes of every method on the bundled sample pool: run before and after a restructuring, compare.

Ingests `capsel/data/sample_pool`, scores CAP and every baseline with the tests' tiny models (a byte-level LM,
encoder and rater, built from configs), selects 5 per domain with each method and random, and prints one JSON
object: method -> sha256 of its members as `domain:rank:candidate_id` lines. Everything runs through the CLI in
a process of its own, so `PYTHONPATH=<tree> python benchmarks/member_hashes.py` measures that tree.

    python benchmarks/member_hashes.py > after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capsel.data import sample_pool  # noqa: E402
from tests.fixtures.tiny_aux_models import save_byte_lm_dir, save_encoder_dir, save_rater_dir  # noqa: E402

BUDGET = "5"


def capsel(work: Path, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(work / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(work / "out"), COLUMNS="200",
               OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "capsel", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=1200)
    if done.returncode != 0:
        raise SystemExit(f"capsel {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def members_hash(work: Path, selection_id: str) -> str:
    con = duckdb.connect(str(work / "capsel.duckdb"), read_only=True)
    try:
        rows = con.execute("select domain, rank, candidate_id from selection_members where selection_id = ? "
                           "order by domain, rank", [selection_id]).fetchall()
    finally:
        con.close()
    return hashlib.sha256("\n".join(f"{d}:{r}:{c}" for d, r, c in rows).encode()).hexdigest()


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        lm, encoder, rater = (save_byte_lm_dir(work / "lm"), save_encoder_dir(work / "encoder"),
                              save_rater_dir(work / "rater"))
        pool, manifest = sample_pool()
        for entry in manifest["files"]:
            capsel(work, "ingest", str(pool / entry["file"]), *(("--domain", entry["domain"]) if "domain" in entry
                                                                 else ()), *(("--map", entry["map"]) if "map" in entry
                                                                             else ()))
        target = work / "target.jsonl"
        con = duckdb.connect(str(work / "capsel.duckdb"), read_only=True)
        rows = con.execute("select instruction, response from candidates order by candidate_id limit 4").fetchall()
        con.close()
        target.write_text("".join(json.dumps({"instruction": i, "response": r}) + "\n" for i, r in rows))
        limits = ("--horizon", "8", "--prompt-tokens", "64")
        capsel(work, "score", "--model", str(lm), *limits)
        capsel(work, "score-baseline", "--method", "ppl", "--model", str(lm), *limits)
        capsel(work, "score-baseline", "--method", "ifd", "--model", str(lm), "--max-length", "128")
        capsel(work, "score-baseline", "--method", "kcenter", "--encoder", str(encoder))
        capsel(work, "score-baseline", "--method", "qurating", "--rater", str(rater))
        capsel(work, "score-baseline", "--method", "less", "--model", str(lm), "--max-length", "128",
               "--target", str(target))
        hashes = {}
        for method in ("cap", "random", "ppl", "ifd", "kcenter", "qurating", "less"):
            extra = ("--target", str(target)) if method == "less" else ()
            selected = json.loads(capsel(work, "select", "--method", method, "--budget", BUDGET, "--out", "sels",
                                         "--seed", "7", "--json", *extra))
            hashes[method] = members_hash(work, selected["selection_id"])
        print(json.dumps(hashes, indent=2))


if __name__ == "__main__":
    main()
