"""LESS vs CAP scoring cost on the same pool and model: wall time and candidates/s, as the paper's cost table.

    python benchmarks/less_cost.py                       # demo model, lab pool, CPU (a few minutes)
    python benchmarks/less_cost.py --device cuda         # the same on a GPU

Both methods go through their real runners into a fresh DuckDB file: CAP is `run_scorer` with the CAP scorer
(greedy y-hat generation fused with the two forward passes, batch 16), LESS is the score stage that
`capsel score-baseline --method less --target` runs (one forward + backward per candidate, batch 1 as in the
paper, then the target set and the cosine scores). Model loading is timed apart. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import orjson
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capsel.cap_engine.config import ScoringConfig  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.config import load_settings  # noqa: E402
from capsel.db import open_db  # noqa: E402
from capsel.ingest.pipeline import IngestOptions, ingest  # noqa: E402
from capsel.methods.cap.scorer import CapScorer  # noqa: E402
from capsel.methods.less import LessSpec  # noqa: E402
from capsel.methods.less.scorer import LessConfig, LessFeatureScorer  # noqa: E402
from capsel.methods.spec import ModelSpec  # noqa: E402
from capsel.models import demo_model_path  # noqa: E402
from capsel.models.loading import describe_model, load_model  # noqa: E402
from capsel.runner.job import run_scorer  # noqa: E402
from capsel.stages.context import RunContext  # noqa: E402
from capsel.stages.score import ScoreRequest, score  # noqa: E402
from capsel_lab.pretrain_config import world_spec_of  # noqa: E402
from capsel_lab.world.facts import build_world  # noqa: E402
from capsel_lab.world.pools import PoolSpec, build_pool  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(demo_model_path()), help="local causal LM folder (default: demo)")
    parser.add_argument("--per-domain", type=int, default=50, help="known and learnable facts per lab domain")
    parser.add_argument("--target-size", type=int, default=50, help="target examples (held-out math questions)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--batch-size", type=int, default=16, help="CAP scoring batch size")
    return parser.parse_args()


def write_pool(folder: Path, model: str, per_domain: int) -> tuple[Path, list[dict]]:
    world = build_world(world_spec_of(Path(model))) if Path(model) == demo_model_path() else build_world()
    pool = build_pool(world, PoolSpec(seed=3, n_known=per_domain, n_learnable=per_domain, junk_fraction=0.05,
                                      duplicate_fraction=0))
    path = folder / "pool.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(record) for record in pool.candidates))
    return path, [record for record in pool.heldout if record["domain"] == "math"]


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pool, heldout = write_pool(folder, args.model, args.per_domain)
        target_path = folder / "target.jsonl"
        target_path.write_bytes(b"\n".join(
            orjson.dumps({"instruction": r["instruction"], "input": r["input"], "response": r["reference"]})
            for r in heldout[:args.target_size]))
        con = open_db(folder / "capsel.duckdb")
        ingest(con, [pool], IngestOptions())
        n = con.execute("select count(*) from candidates").fetchone()[0]
        info = describe_model(args.model, dtype="auto", device=args.device)

        loaded, cap_load_s = timed(load_model, info)
        engine = ScoringEngine(loaded, ScoringConfig(), args.batch_size)
        cap, _ = timed(run_scorer, con, CapScorer.of(engine))

        scorer = LessFeatureScorer(LessConfig(), info, batch_size=args.batch_size)
        _, less_load_s = timed(lambda: scorer.sketcher)
        spec = LessSpec(model=ModelSpec(path=args.model), target=str(target_path), target_max=args.target_size)
        scored, less_wall_s = timed(score, ScoreRequest(spec, scorer=scorer), RunContext(con, load_settings()))
        less = scored.target
        less.features = scored.scoring
        con.close()
    target_s = less_wall_s - less.features.wall_s
    result = {
        "model": args.model, "device": args.device, "dtype": info.dtype, "torch_threads": args.threads,
        "host": platform.node(), "cpu": platform.processor() or platform.machine(),
        "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
        "pool": {"candidates": n, "source": "lab world pool, per domain: known + learnable facts + 5% junk"},
        "cap": {"wall_s": round(cap.wall_s, 2), "candidates_per_s": round(n / cap.wall_s, 2),
                "scored": cap.n_done, "excluded": dict(cap.excluded), "model_load_s": round(cap_load_s, 2),
                "batch_size": args.batch_size},
        "less": {
            "features_wall_s": round(less.features.wall_s, 2),
            "candidates_per_s": round(n / less.features.wall_s, 2),
            "featured": less.features.n_done, "excluded": dict(less.features.excluded),
            "target_examples": less.target["n_examples"], "target_and_scores_s": round(target_s, 2),
            "wall_s_with_target": round(less_wall_s, 2),
            "candidates_per_s_with_target": round(n / less_wall_s, 2),
            "model_load_s": round(less_load_s, 2), "lora_parameters": scorer.sketcher.n_parameters,
            "sketch_dim": scorer.config.sketch_dim,
        },
        "less_over_cap_wall": round(less_wall_s / cap.wall_s, 2),
    }
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
