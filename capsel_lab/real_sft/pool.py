"""The real lab's data: a GSM8K pool with 5% junk, and held-out train rows disjoint from it for evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel_lab.real_pool import RealPoolSpec, write_real_pool
from capsel_lab.real_sources import GSM8K, bundled_real_sources, draw_key, read_source
from capsel_lab.world.export import write_jsonl

N_DEMONSTRATIONS = 5


@dataclass(frozen=True)
class LabFiles:
    """The pool (with its labels), the held-out evaluation rows and the harness's demonstrations."""

    pool: Path
    labels: Path
    heldout: Path
    demos: Path


def write_lab_files(out_dir: Path, n_pool: int, n_heldout: int, junk_share: float, seed: int) -> LabFiles:
    """The pool's rows are the first `n_pool` of the seed's draw of GSM8K train; the held-out rows the next
    `n_heldout` (never in the pool), and the 5 demonstrations the ones after."""
    source_dir = bundled_real_sources()
    spec = RealPoolSpec(seed=seed, n_math=n_pool, n_code=0, junk_share=junk_share)
    pool_dir = out_dir / "pool"
    write_real_pool(source_dir, pool_dir, spec)
    rows = read_source(source_dir, GSM8K)
    ranked = sorted(range(len(rows)), key=lambda row: draw_key(seed, GSM8K.name, row))
    heldout = [rows[row] for row in ranked[n_pool:n_pool + n_heldout]]
    demos = [rows[row] for row in ranked[n_pool + n_heldout:n_pool + n_heldout + N_DEMONSTRATIONS]]
    write_jsonl([{"question": row["question"], "answer": row["answer"], "domain": "math"} for row in heldout],
                out_dir / "heldout.jsonl")
    write_jsonl([{"question": row["question"], "answer": row["answer"]} for row in demos], out_dir / "demos.jsonl")
    return LabFiles(pool_dir / "pool.jsonl", pool_dir / "labels.csv", out_dir / "heldout.jsonl",
                    out_dir / "demos.jsonl")
