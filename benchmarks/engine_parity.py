"""Dump what the scoring engine computes on every tiny family (both prompt formats, the mixed pool), or compare
two dumps: the ŷ ids must be identical and the divergences equal within a tolerance.

Run it before and after an engine change (same machine, float32 CPU):

    .venv/bin/python benchmarks/engine_parity.py --out /tmp/before.json      # on the old commit
    .venv/bin/python benchmarks/engine_parity.py --out /tmp/after.json
    .venv/bin/python benchmarks/engine_parity.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capsel.models.loading import KV_LAYOUTS  # noqa: E402


def dump(out: Path, batch_sizes: list[int], kv_layout: str) -> None:
    from dataclasses import replace

    from capsel.cap_engine.config import ScoringConfig
    from capsel.cap_engine.engine import ScoringEngine
    from capsel.cap_engine.inputs import CandidateText
    from capsel.models.loading import describe_model, load_model
    from tests.fixtures.candidates import mixed_candidates
    from tests.fixtures.pool import tiny_model_dir
    from tests.fixtures.tiny_models import FAMILIES

    texts = [CandidateText(**candidate) for candidate in mixed_candidates()]
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        for family in FAMILIES:
            for prompt_format in ("raw", "chat"):
                folder = tiny_model_dir(Path(scratch) / f"{family}-{prompt_format}", family, 48,
                                        chat=prompt_format == "chat")
                loaded = replace(load_model(describe_model(str(folder), dtype="float32", device="cpu")),
                                 kv_layout=kv_layout)
                for batch_size in batch_sizes:
                    engine = ScoringEngine(loaded, ScoringConfig(horizon=48), batch_size=batch_size)
                    inputs = engine.prepare(texts)
                    fused = engine.generate_and_score(inputs)
                    stored = engine.score(engine.generate(inputs))
                    for path, results in (("fused", [r.divergence for r in fused]), ("stored", stored)):
                        for item, result in zip(fused, results):
                            key = f"{family}/{prompt_format}/b{batch_size}/{path}/{result.candidate_id}"
                            rows[key] = {"generated": item.generation.generated_ids,
                                         "excluded": result.excluded_reason,
                                         "layers": result.layer_divergence, "ppl": result.ppl}
                print(family, prompt_format, flush=True)
    out.write_text(json.dumps(rows))
    print(f"{len(rows)} rows in {out}")


def compare(before: Path, after: Path) -> int:
    old, new = json.loads(before.read_text()), json.loads(after.read_text())
    if old.keys() != new.keys():
        print("different rows:", sorted(old.keys() ^ new.keys())[:5])
        return 1
    ids_differ = [key for key in old if old[key]["generated"] != new[key]["generated"]
                  or old[key]["excluded"] != new[key]["excluded"]]
    worst_layer = max((abs(a - b) for key in old if old[key]["layers"]
                       for a, b in zip(old[key]["layers"], new[key]["layers"])), default=0.0)
    worst_ppl = max((abs(old[key]["ppl"] - new[key]["ppl"]) / old[key]["ppl"] for key in old if old[key]["ppl"]),
                    default=0.0)
    print(json.dumps({"rows": len(old), "rows_with_other_ids_or_reason": len(ids_differ),
                      "max_abs_layer_divergence_diff": worst_layer, "max_rel_ppl_diff": worst_ppl}))
    return 1 if ids_differ or worst_layer > 1e-6 or worst_ppl > 1e-6 else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--kv-layout", choices=KV_LAYOUTS, default="auto",
                        help="the KV cache the engine builds (auto: the engine's choice for the device; a tree "
                             "from before this option has only auto)")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    dump(args.out, args.batch_sizes, args.kv_layout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
